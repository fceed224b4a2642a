#!/usr/bin/env bash
# Two serves on a real 3-member etcd (tests/peers/etcd/etcd.sh; docs/etcd.md):
#  1. kill -9 of the leader while 200 sim nodes onboard: the standby takes over (figure printed),
#     every node converges to available, each sim machine was powered on exactly once and its
#     boot device set exactly twice (side effects counted at the sim hardware, kept in the store),
#     and every token whose creation was acknowledged before the kill is there afterwards;
#  2. kill -9 of one etcd member: no effect (same leader, writes go on);
#  3. quorum lost (two members stopped): the leader stops acting and says why, resumes after;
#  4. the leader SIGSTOPped past its lease, then SIGCONTed: the standby leads meanwhile, and
#     nothing the paused leader tries lands (etcd's revision does not move, its API write is 503).
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || {
	[ "$(id -u)" = 0 ] && fail "etcd is not installed (scripts/install-deps.sh --test)"
	echo "skip test_etcd_failover: etcd is not installed"
	exit 0
}
N=200
[ "${FP_SAN:-0}" = 1 ] && N=48
PEER="$ROOT/tests/peers/etcd/etcd.sh"
E="$WORK/etcd"
PIDS=()
at_exit() {
	local p
	for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	"$PEER" down "$E"
}
EP=$("$PEER" start "$E" 3) || fail "etcd cluster did not start"
STORE="etcd://$EP/fp-it"
etcdget() { ETCDCTL_API=3 etcdctl --endpoints="$EP" "$@"; }
erev() { etcdget endpoint status -w json | jq -r '[.[].Status.header.revision] | max'; }

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PA=$(port)
PB=$(port)
declare -A PID
serve_on() { # NAME PORT [args]: a serve on a fixed port, data dir $WORK/NAME
	local name=$1 p=$2
	shift 2
	mkdir -p -m 700 "$WORK/$name"
	"$FP" serve --data-dir "$WORK/$name" --listen "127.0.0.1:$p" --plain-http --store "$STORE" \
		--sim "$N" --sim-speed 40 "$@" >>"$WORK/serve-$name.log" 2>&1 &
	PID[$name]=$!
	PIDS+=($!)
}
code() { curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$1/readyz"; }
wait_ready() { # PORT SECONDS
	local i
	for i in $(seq 1 $(($2 * 20))); do
		[ "$(code "$1")" = 200 ] && return 0
		sleep 0.05
	done
	return 1
}

# A leads; B (same secret.key and admin.token, as docs/etcd.md says) stands by.
serve_on a "$PA"
wait_ready "$PA" 30 || fail "serve a did not become ready"
mkdir -p -m 700 "$WORK/b"
cp "$WORK/a/secret.key" "$WORK/a/admin.token" "$WORK/b/"
serve_on b "$PB"
for _ in $(seq 1 100); do [ "$(code "$PB")" = 503 ] && break; sleep 0.1; done
body=$(curl -s "http://127.0.0.1:$PB/readyz")
assert_eq "http://127.0.0.1:$PA" "$(jq -r .leader <<<"$body")" "the standby names the leader"
st=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PB/v1/tokens")
assert_eq 503 "$st" "a write to the standby"
export FLEETPLANE_TOKEN=$(cat "$WORK/a/admin.token")
curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "http://127.0.0.1:$PA/metrics" >"$WORK/metrics"
grep -q '^fleetplane_leader_is_leader 1' "$WORK/metrics" || fail "the leader's metric does not say it leads"
grep -q "^fleetplane_leader{leader=\"http://127.0.0.1:$PA\"} 1" "$WORK/metrics" ||
	fail "the leader's metric does not name it"
export FLEETPLANE_URL="http://127.0.0.1:$PA"

# 1. acknowledged writes (tokens) in the background, then kill -9 of A mid-onboarding
(
	i=0
	while :; do
		i=$((i + 1))
		if "$FP" token create --name "ack$i" --role viewer >/dev/null 2>>"$WORK/writer.err"; then
			echo "ack$i" >>"$WORK/acked"
		fi
	done
) &
WRITER=$!
PIDS+=($WRITER)
for _ in $(seq 1 300); do
	prov=$(count_phase provisioning 2>/dev/null || echo 0)
	[ "$prov" -ge $((N / 4)) ] && break
	sleep 0.1
done
[ "$prov" -ge 1 ] || fail "no node reached provisioning before the kill"
kill -9 "${PID[a]}"
t0=$(date +%s.%N)
wait "${PID[a]}" 2>/dev/null || true
kill "$WRITER" 2>/dev/null
wait "$WRITER" 2>/dev/null || true
wait_ready "$PB" 10 || fail "the standby did not take over within 10 s"
t1=$(date +%s.%N)
dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "failover: standby ready $dt s after kill -9 of the leader, $prov nodes provisioning"
export FLEETPLANE_URL="http://127.0.0.1:$PB"
SERVE_PID=${PID[b]}
wait_phase available "$N" 150
"$FP" token list -o json | jq -r '.items[].metadata.name' | sort >"$WORK/have"
missing=$(sort "$WORK/acked" | comm -23 - "$WORK/have" | wc -l)
assert_eq 0 "$missing" "acknowledged tokens lost in the failover ($(wc -l <"$WORK/acked") acked)"
etcdget get --prefix /fp-it/sim/hw/ --print-value-only >"$WORK/hw.json"
assert_eq "$N" "$(jq -s length "$WORK/hw.json")" "simulated machines in etcd"
bad=$(jq -s '[.[] | select(.counters.powerOn != 1 or .counters.powerCycle != 0 or
	.counters.powerOff != 0 or .counters.bootSet != 2)] | length' "$WORK/hw.json")
assert_eq 0 "$bad" "machines with a side effect that ran more or less than once"

# A comes back as a standby.
serve_on a "$PA"
for _ in $(seq 1 100); do [ "$(code "$PA")" = 503 ] && break; sleep 0.1; done
assert_eq 503 "$(code "$PA")" "the old leader restarted as a standby"

# 2. one etcd member lost: no effect. The member killed is a raft follower: losing etcd's raft
# leader costs a raft election (500 ms here) during which no lease is renewed, and under
# ASan on a loaded machine that alone took the serve's 1.4 s renewal budget (CI: b stepped
# down, and the write in flight got no answer); that case is an etcd re-election, not a lost
# member (docs/etcd.md: raise --leader-ttl where elections are slow).
F=""
for i in 1 2 3; do
	st=$(curl -s -m 2 -X POST -d '{}' "http://127.0.0.1:$(cat "$E/s$i.port")/v3/maintenance/status")
	me=$(jq -r '.header.member_id // empty' <<<"$st")
	lead=$(jq -r '.leader // empty' <<<"$st")
	if [ -n "$me" ] && [ -n "$lead" ] && [ "$me" != "$lead" ]; then F=$i; break; fi
done
[ -n "$F" ] || fail "no etcd member says it is a raft follower"
OTHERS=$(for i in 1 2 3; do [ "$i" = "$F" ] || echo "$i"; done)
"$PEER" kill "$E" "$F"
"$FP" token create --name member-lost --role viewer >/dev/null || fail "write after losing one member"
sleep 3
assert_eq 200 "$(code "$PB")" "the leader after losing one member"
grep -q "not the leader any more" "$WORK/serve-b.log" && fail "b stepped down on one member's loss"

# 3. quorum lost: b stops acting and says why; resumes when quorum is back
for i in $OTHERS; do "$PEER" stop "$E" "$i"; done
for _ in $(seq 1 100); do
	grep -q "not the leader any more" "$WORK/serve-b.log" && break
	sleep 0.1
done
grep "not the leader any more" "$WORK/serve-b.log" | grep -q "quorum" ||
	fail "b did not say it stopped for lost quorum"
sleep 1
[ "$(code "$PB")" = 200 ] && fail "b still ready without quorum"
for i in $OTHERS; do "$PEER" cont "$E" "$i"; done
"$PEER" restart "$E" "$F" || fail "member $F did not restart"
for _ in $(seq 1 300); do
	[ "$(code "$PA")" = 200 ] || [ "$(code "$PB")" = 200 ] && break
	sleep 0.1
done
if [ "$(code "$PA")" = 200 ]; then L=a LP=$PA S=b SP=$PB; else L=b LP=$PB S=a SP=$PA; fi
assert_eq 200 "$(code "$LP")" "a leader after quorum came back"
export FLEETPLANE_URL="http://127.0.0.1:$LP"
"$FP" token create --name quorum-back --role viewer >/dev/null || fail "write after quorum came back"

# 4. the leader paused past its lease: the standby leads; the paused one's writes never land
"$FP" node drain "$(jq -r '.items[0].metadata.name' <("$FP" node list -o json))" --reason pause >/dev/null
kill -STOP "${PID[$L]}"
wait_ready "$SP" 10 || fail "the standby did not take over from the paused leader"
kill -STOP "${PID[$S]}" # freeze the new leader too: any write now is the paused one's
sleep 0.2
r0=$(erev)
kill -CONT "${PID[$L]}"
st=$(curl -s -o /dev/null -m 3 -w '%{http_code}' -X POST -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	-H 'Content-Type: application/json' -d '{"metadata":{"name":"late"},"spec":{"role":"viewer"}}' \
	"http://127.0.0.1:$LP/v1/tokens" || true)
sleep 0.5
r1=$(erev)
kill -CONT "${PID[$S]}"
assert_eq "$r0" "$r1" "etcd revision while only the resumed old leader ran"
[ "$st" = 201 ] || [ "$st" = 200 ] && fail "the resumed old leader acknowledged a write ($st)"
for _ in $(seq 1 50); do
	grep -q "not the leader any more" "$WORK/serve-$L.log" && break
	sleep 0.1
done
grep -q "not the leader any more" "$WORK/serve-$L.log" || fail "the resumed leader did not step down"
wait_ready "$SP" 10 || fail "the new leader is not ready after the old one resumed"
echo "ok test_etcd_failover"
