#!/usr/bin/env bash
# The issue's "done when": demo --nodes 64 --data-dir D exits 0; serve restarted on D lists the
# same 64 available nodes; /metrics shows fleetplane_nodes{phase="available"} 64 and passes
# promtool check metrics. The demo's three health events are dated by the demo run, not by the
# published lines' own 2025 stamps (break report 4b #9): each event's time is >= the start.
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
T0=$(date -u +%Y-%m-%dT%H:%M:%S)
"$FP" demo --nodes 64 --data-dir "$D" --sim-speed 50 > "$WORK/demo.out" 2>&1 ||
	{ cat "$WORK/demo.out" >&2; fail "demo exited non-zero"; }
grep -q "64/64 nodes available" "$WORK/demo.out" || fail "demo summary does not say 64/64"
assert_eq "r01n01 xid:79 hold,r01n02 xid:48 hold,r01n03 xid:119 hold" \
	"$(sed -n 's/^ *[0-9.]*s  \(r01n0[0-9]\) *reported; decision: \([a-z0-9:]*\) \([a-z_]*\) .*/\1 \2 \3/p' "$WORK/demo.out" | sort | paste -sd,)" \
	"decisions the demo shows"
start_serve "$D"
assert_eq 64 "$(count_phase available)" "available nodes after restart"
"$FP" health events -o json >"$WORK/hev.json"
assert_eq "xid:119 xid:48 xid:79" "$(jq -r '[.items[].code] | sort | join(" ")' "$WORK/hev.json")" "demo health events"
old=$(jq -r --arg t0 "$T0" '[.items[] | select(.time < $t0) | "\(.code) \(.time)"] | join(", ")' "$WORK/hev.json")
assert_eq "" "$old" "health events dated before the demo started at $T0"
metrics=$(curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics")
grep -qx 'fleetplane_nodes{phase="available"} 64' <<<"$metrics" || fail "metrics: available != 64"
for p in enrolled inspecting provisioning validating in_service draining maintenance repairing failed retiring retired; do
	grep -qx "fleetplane_nodes{phase=\"$p\"} 0" <<<"$metrics" || fail "metrics: no zero series for $p"
done
if command -v promtool >/dev/null; then
	echo "$metrics" | promtool check metrics || fail "promtool check metrics failed"
fi
# /metrics needs a token.
assert_eq 401 "$(curl -s -o /dev/null -w '%{http_code}' "$FLEETPLANE_URL/metrics")" "/metrics without token"
stop_serve
