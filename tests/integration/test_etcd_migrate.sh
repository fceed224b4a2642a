#!/usr/bin/env bash
# `fleetplane store migrate` round-trips a 1,000-node store: SQLite -> etcd -> SQLite with equal
# key counts and SHA-256 at every hop; a serve on the migrated etcd store lists the same nodes;
# a running serve's store and a non-empty destination are refused.
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || {
	[ "$(id -u)" = 0 ] && fail "etcd is not installed (scripts/install-deps.sh --test)"
	echo "skip test_etcd_migrate: etcd is not installed"
	exit 0
}
N=1000
PEER="$ROOT/tests/peers/etcd/etcd.sh"
E="$WORK/etcd"
at_exit() { "$PEER" down "$E"; }
EP=$("$PEER" start "$E" 1) || fail "etcd did not start"
D="$WORK/d"
start_serve "$D"
nodes_json "$N" >"$WORK/nodes.json"
"$FP" node enroll -f "$WORK/nodes.json" >/dev/null
"$FP" node list -o json | jq -r '.items[].metadata.name' | sort >"$WORK/names.before"
assert_eq "$N" "$(wc -l <"$WORK/names.before")" "nodes enrolled"
# a running serve's store is refused
if "$FP" store migrate --from "sqlite:$D/fleetplane.db" --to "etcd://$EP/m" >"$WORK/busy.out" 2>&1; then
	fail "migrate from a running serve's store was not refused"
fi
grep -q "serve.lock is held" "$WORK/busy.out" || fail "no reason given: $(cat "$WORK/busy.out")"
stop_serve

"$FP" store migrate --from "sqlite:$D/fleetplane.db" --to "etcd://$EP/m" >"$WORK/m1.out" ||
	fail "migrate to etcd: $(cat "$WORK/m1.out")"
cat "$WORK/m1.out"
sum1=$(awk '/^source:/ {print $5}' "$WORK/m1.out")
n1=$(awk '/^source:/ {print $2}' "$WORK/m1.out")
[ "$n1" -gt "$N" ] || fail "only $n1 keys for $N nodes"
grep -q "^destination: $n1 keys sha256 $sum1$" "$WORK/m1.out" || fail "etcd copy differs"
keys=$(ETCDCTL_API=3 etcdctl --endpoints="$EP" get --prefix /m/ --keys-only | grep -c .)
assert_eq "$n1" "$keys" "keys under /m/ in etcd"
# back to a new SQLite file: the same keys and values
"$FP" store migrate --from "etcd://$EP/m" --to "sqlite:$WORK/back.db" >"$WORK/m2.out" ||
	fail "migrate back: $(cat "$WORK/m2.out")"
grep -q "^destination: $n1 keys sha256 $sum1$" "$WORK/m2.out" || fail "round trip differs: $(cat "$WORK/m2.out")"
# a non-empty destination is refused
if "$FP" store migrate --from "sqlite:$D/fleetplane.db" --to "etcd://$EP/m" >"$WORK/m3.out" 2>&1; then
	fail "migrate into a non-empty store was not refused"
fi
grep -q "is not empty" "$WORK/m3.out" || fail "no reason given: $(cat "$WORK/m3.out")"
# a serve on the migrated store (its data dir keeps secret.key and admin.token)
start_serve "$D" --store "etcd://$EP/m"
"$FP" node list -o json | jq -r '.items[].metadata.name' | sort >"$WORK/names.after"
cmp -s "$WORK/names.before" "$WORK/names.after" || fail "nodes differ after the migration"
stop_serve
echo "ok test_etcd_migrate"
