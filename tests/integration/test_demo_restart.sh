#!/usr/bin/env bash
# The issue's "done when": demo --nodes 64 --data-dir D exits 0; serve restarted on D lists the
# same 64 available nodes; /metrics shows fleetplane_nodes{phase="available"} 64 and passes
# promtool check metrics.
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
"$FP" demo --nodes 64 --data-dir "$D" --sim-speed 50 > "$WORK/demo.out" 2>&1 ||
	{ cat "$WORK/demo.out" >&2; fail "demo exited non-zero"; }
grep -q "64/64 nodes available" "$WORK/demo.out" || fail "demo summary does not say 64/64"
start_serve "$D"
assert_eq 64 "$(count_phase available)" "available nodes after restart"
metrics=$(curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics")
echo "$metrics" | grep -qx 'fleetplane_nodes{phase="available"} 64' || fail "metrics: available != 64"
for p in enrolled inspecting provisioning validating in_service draining maintenance repairing failed retiring retired; do
	echo "$metrics" | grep -qx "fleetplane_nodes{phase=\"$p\"} 0" || fail "metrics: no zero series for $p"
done
if command -v promtool >/dev/null; then
	echo "$metrics" | promtool check metrics || fail "promtool check metrics failed"
fi
# /metrics needs a token.
assert_eq 401 "$(curl -s -o /dev/null -w '%{http_code}' "$FLEETPLANE_URL/metrics")" "/metrics without token"
stop_serve
