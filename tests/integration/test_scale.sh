#!/usr/bin/env bash
# 1,000 simulated nodes (200 under ASan+UBSan) enrolled through the API in one bulk request all
# reach available with no holds, and /metrics counts them.
. "$(dirname "$0")/lib.sh"
N=${FP_SCALE_NODES:-1000}
[ "${FP_SAN:-0}" = 1 ] && N=${FP_SCALE_NODES:-200}
start_serve "$WORK/d" --sim-speed 500
nodes_json "$N" > "$WORK/nodes.json"
out=$("$FP" node enroll -f "$WORK/nodes.json")
assert_eq "enrolled $N nodes" "$out" "enroll output"
wait_phase available "$N" 240
# /metrics counts from the controller's cache, which follows the store's change feed: it may
# lag the list above by a moment, so look again for up to 5 s
for i in $(seq 1 50); do
	metrics=$(curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics")
	grep -qx "fleetplane_nodes{phase=\"available\"} $N" <<<"$metrics" && break
	sleep 0.1
done
grep -qx "fleetplane_nodes{phase=\"available\"} $N" <<<"$metrics" ||
	fail "metrics do not show $N available nodes: $(echo "$metrics" | grep '^fleetplane_nodes{' | tr '\n' ' ')"
grep -qx 'fleetplane_nodes{phase="provisioning"} 0' <<<"$metrics" ||
	fail "metrics show nodes still provisioning"
# Every node ran exactly one inspect, provision and validate operation, all succeeded.
ops=$("$FP" op list -o json | jq '[.items[] | select(.status.state == "succeeded")] | length')
assert_eq "$((N * 3))" "$ops" "succeeded operations"
stop_serve
