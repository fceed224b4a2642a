#!/usr/bin/env bash
# test_sim_reset_restart.sh - kill -9 of serve while a simulated machine's agent is resetting a
# GPU (the gpu_reset rung, step wait_agent_action): after the restart the simulated machine
# finishes the reset it had started (its saved resetDueAt is re-armed like bootDueAt and
# burnInDueAt), burn-in follows, the validate op sees it, and the node comes back with ONE
# history record "xid:119 gpu_reset succeeded" - not a failed validation that climbs the ladder
# to reboot (break report 4b #7).
#
# Speeds: onboarding at --sim-speed 100; the crash run at --sim-speed 2, so the simulated reset
# takes 5-15 s (10-30 s / 2) and the kill lands inside it; the restart at --sim-speed 100 (the
# pending reset keeps its saved wall-clock due time; burn-in after it takes 1.2-1.8 s). Without
# the re-arm the reset never answers and the test fails on the wait for the node.
#
# The XID 119 line is real: tests/data/kernel/dmesg-xid119-gsp-timeout.log line 3 (its
# SOURCES.md names the gpud test file), taken into the report's "raw" as it is.
. "$(dirname "$0")/lib.sh"
san_skip "restart from the store mid-operation runs under them in test_crash_restart and the scenarios unit suite"
D="$WORK/d"
N=r01n02

XID119=$(sed -n 3p "$ROOT/tests/data/kernel/dmesg-xid119-gsp-timeout.log")
case "$XID119" in *"NVRM: Xid (PCI:0000:9b:00): 119, "*) ;; *) fail "XID 119 line in tests/data: $XID119" ;; esac

start_serve "$D" --sim 8 --sim-speed 100
wait_phase available 8 120
stop_serve
start_serve "$D" --sim-speed 2
AGENT=$("$FP" token create --role agent --node "$N" --name "agent-$N" | tail -n 1)

BODY=$(jq -cn --arg raw "$XID119" '
	{agent: {version: "0.4.0", bootId: "b-test", intervalSeconds: 30},
	 detectors: [{name: "kernel", live: true, status: "unhealthy"}],
	 events: [{id: "k-xid119-1", source: "kernel", code: "xid:119",
	           gpu: {pciBusId: "0000:9b:00.0"}, message: "GSP RPC timeout", raw: $raw}]}')
R=$(api POST "/v1/nodes/$N:report" "$BODY" "$AGENT")
assert_eq 200 "$(head -n1 <<<"$R")" "report: $(sed -n '2,$p' <<<"$R")"
assert_eq "hold" "$(sed -n '2,$p' <<<"$R" | jq -r '.decisions[0].action')" "decision"

# Wait for the gpu_reset operation in its step wait_agent_action (1 of request_gpu_reset,
# wait_agent_action): the simulated agent has taken the reset and not answered yet.
OP=""
for i in $(seq 1 300); do
	OP=$("$FP" node get "$N" -o json | jq -r '.status.operation // ""')
	if [ -n "$OP" ]; then
		S=$("$FP" op get "$OP" -o json | jq -r '"\(.spec.kind) \(.status.state) \(.status.step)"')
		[ "$S" = "gpu_reset running 1" ] && break
	fi
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve died before the gpu_reset rung"
	sleep 0.1
done
assert_eq "gpu_reset running 1" "$S" "operation $OP before the kill"
kill9_serve
# The machine's saved state has the reset pending.
"$FP" sim state --data-dir "$D" >"$WORK/state.json"
[ "$(jq --arg n "$N" '.[$n].resetDueAt // 0' "$WORK/state.json")" != 0 ] ||
	{ jq --arg n "$N" '.[$n]' "$WORK/state.json" >&2; fail "no resetDueAt saved for $N"; }
start_serve "$D" --sim-speed 100

for i in $(seq 1 300); do
	DOC=$("$FP" node get "$N" -o json)
	[ "$(jq -r '"\(.status.phase) \(.status.holds | length) \(.status.remediationHistory // [] | length)"' <<<"$DOC")" = "available 0 1" ] && break
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve died while $N healed"
	sleep 0.2
done
assert_eq "available 0" "$(jq -r '"\(.status.phase) \(.status.holds | length)"' <<<"$DOC")" "$N after the restart"
assert_eq '["xid:119 gpu_reset succeeded"]' \
	"$(jq -c '[.status.remediationHistory[] | "\(.code) \(.rung) \(.result)"]' <<<"$DOC")" "remediation history"
assert_eq "succeeded" "$("$FP" op get "$OP" -o json | jq -r '.status.state')" "operation $OP"
assert_eq "True" "$(cond "$N" GPUHealthy | cut -d' ' -f1)" "GPUHealthy"
stop_serve
# The simulated agent reset a GPU once, and nothing is pending any more.
"$FP" sim state --data-dir "$D" >"$WORK/state.json"
assert_eq "1 0 0 0" "$(jq -r --arg n "$N" '.[$n] | "\(.counters.gpuReset) \(.resetDueAt // 0) \(.burnInDueAt // 0) \(.bootDueAt // 0)"' "$WORK/state.json")" \
	"gpu resets, pending reset/burn-in/boot of $N"
echo "ok"
