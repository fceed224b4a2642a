#!/usr/bin/env bash
# kill -9 of serve in the middle of provisioning; a restart on the same data dir resumes every
# operation, all nodes converge to available, no step that must run once ran twice (the sim
# counts side effects), and no node ever had two operations running at once.
. "$(dirname "$0")/lib.sh"
N=48
[ "${FP_SAN:-0}" = 1 ] && N=24
D="$WORK/d"
start_serve "$D" --sim-speed 40
nodes_json "$N" > "$WORK/nodes.json"
"$FP" node enroll -f "$WORK/nodes.json" >/dev/null
# Wait until some nodes are provisioning (the power-on / PXE boot phase), then kill -9.
for i in $(seq 1 200); do
	prov=$(count_phase provisioning)
	[ "$prov" -ge $((N / 4)) ] && break
	sleep 0.1
done
[ "$prov" -ge 1 ] || fail "no node reached provisioning before the crash"
echo "killing serve with $prov nodes provisioning"
kill9_serve
start_serve "$D" --sim-speed 40
wait_phase available "$N" 180
# The same nodes are listed after restart.
names=$("$FP" node list -o json | jq -r '.items[].metadata.name' | sort | tr '\n' ' ')
want=$(jq -r '.items[].metadata.name' "$WORK/nodes.json" | sort | tr '\n' ' ')
assert_eq "$want" "$names" "node names after restart"
# No two operations of one node overlap in time (single flight per node).
overlaps=$("$FP" op list -o json | jq '[.items | group_by(.spec.node)[] | sort_by(.status.startedAt)
	| . as $ops | range(1; length) | select($ops[.].status.startedAt < $ops[. - 1].status.finishedAt)] | length')
assert_eq 0 "$overlaps" "overlapping operations on one node"
stop_serve
# Side effects: each machine was powered on exactly once and never cycled or powered off, and
# the boot device was set exactly twice (PXE for the deploy, then disk).
"$FP" sim state --data-dir "$D" > "$WORK/state.json"
assert_eq "$N" "$(jq 'length' "$WORK/state.json")" "simulated machines"
bad=$(jq '[to_entries[] | select(.value.counters.powerOn != 1 or .value.counters.powerCycle != 0
	or .value.counters.powerOff != 0 or .value.counters.bootSet != 2)] | length' "$WORK/state.json")
if [ "$bad" != 0 ]; then
	jq -c 'to_entries[] | select(.value.counters.powerOn != 1 or .value.counters.bootSet != 2) | {key, c: .value.counters}' "$WORK/state.json" | head >&2
	fail "$bad machines show a side effect that ran more or less than once"
fi
