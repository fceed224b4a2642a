#!/usr/bin/env bash
# `fleetplane agent check --fast --mode prolog` as a real Slurm 22.05's Prolog and `fleetplane
# agent epilog` as its Epilog (tests/peers/slurm/slurm.sh with SLURM_PEER_PROLOG/EPILOG), with
# serve --slurm: n2's nvidia-smi output is the real one-GPU Tesla P100 file while its spec says 8
# GPUs (gpu:count_mismatch), n1's is the real healthy 8-GPU H100 file. A job pinned to n2 never
# runs: Slurm requeues it held (launch_failed_requeued_held), fleetplane holds n2 (owner health,
# the finding's decision as reason) and Slurm shows n2 IDLE+DRAIN with "fleetplane: health: ..."
# - the Slurm sync's own drain, so no slurm:* hold is imported. A job on n1 runs, exits 3, and its
# Epilog's JobEnded event is in the API with the job, GPUs and exit code. Each node's check runs
# with its own agent token from a config file (the Prolog's environment holds no
# FLEETPLANE_URL/FLEETPLANE_TOKEN).
. "$(dirname "$0")/lib.sh"
san_skip "agent check and epilog run under them in test_agent and the agent_check unit suite; the rest is waiting on slurmctld requeues"
. "$ROOT/tests/peers/slurm/slurm.sh"
S="$WORK/slurm"
DATA="$ROOT/tests/data"
chmod 711 "$WORK" # munged wants o+x on every directory above its socket
at_exit() { slurm_peer_stop "$S" || true; }

wait_for() { # SECONDS WHAT CMD...: polls CMD every 0.2 s
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		"$@" && return 0
		sleep 0.2
	done
	scontrol show node n2 -o >&2 || true
	squeue >&2 || true
	cat "$WORK"/check-*.log >&2 2>/dev/null || true
	"$FP" node get n2 -o json >&2 || true
	fail "$what not within $secs s"
}
is() {
	local want=${*: -1}
	[ "$("${@:1:$#-1}")" = "$want" ]
}
sc_field() { scontrol show node "$1" -o | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2-; }
sc_reason() { scontrol show node "$1" -o | sed -n 's/.* Reason=\(.*\) \[[^]]*\]$/\1/p'; }
job_state() { scontrol show job "$1" -o | grep -o "JobState=[^ ]*" | cut -d= -f2; }
job_sr() { echo "$(job_state "$1") $(scontrol show job "$1" -o | grep -o " Reason=[^ ]*" | cut -d= -f2)"; }
node_json() { "$FP" node get "$1" -o json; }
hold_reason() { node_json "$1" | jq -r --arg o "$2" '[.status.holds[]? | select(.owner == $o) | .reason][0] // ""'; }
slurm_holds() { node_json "$1" | jq -r '[.status.holds[]? | select(.owner | startswith("slurm:"))] | length'; }
jobend_msg() { api GET "/v1/events?object=node/$1" | tail -n +2 | jq -r '[.items[] | select(.reason == "JobEnded") | "\(.type) \(.message)"] | last // ""'; }

# The hooks: each node's check reads the config named after it (set up below, before any job).
SLURM_PEER_PROLOG="$FP agent check --fast --mode prolog --config $WORK/agent-\$SLURMD_NODENAME.conf >>$WORK/check-\$SLURMD_NODENAME.log 2>&1" \
	SLURM_PEER_EPILOG="$FP agent epilog --config $WORK/agent-\$SLURMD_NODENAME.conf >>$WORK/epilog-\$SLURMD_NODENAME.log 2>&1" \
	slurm_peer_start "$S" >/dev/null
export SLURM_CONF="$S/slurm.conf"
start_serve "$WORK/d" --slurm --slurm-interval 2 --sim-speed 0
for n in n1 n2; do
	resp=$(api POST /v1/nodes "{\"metadata\":{\"name\":\"$n\"},\"spec\":{\"site\":\"it-a\",\"rack\":\"r1\",\"bmc\":{\"driver\":\"sim\"},\"gpus\":{\"count\":8,\"model\":\"NVIDIA H100 80GB HBM3\"}}}")
	assert_eq 201 "$(echo "$resp" | head -1)" "enroll $n"
done
wait_phase available 2 60
# A missing GPU is held for a human (no reboot rung that would end the hold mid-test).
resp=$(api PUT /v1/policies/default '{"spec":{"rules":[{"code":"gpu:count_mismatch","ladder":[]}]}}')
assert_eq 200 "$(echo "$resp" | head -1)" "policy: gpu:count_mismatch held for a human"

for n in n1 n2; do
	"$FP" token create --role agent --name "$n" --node "$n" | tail -n 1 >"$WORK/token-$n"
	grep -q '^fpt_' "$WORK/token-$n" || fail "agent token for $n"
done
nvsmi_n1="$DATA/nvidia-smi/h100-hgx-8gpu-q-535.161.08.txt"
nvsmi_n2="$DATA/nvidia-smi/tesla-p100-q-x-510.47.03.xml"
for n in n1 n2; do
	v=nvsmi_$n
	cat >"$WORK/agent-$n.conf" <<EOF
# agent check / epilog config for $n (docs/slurm.md "Checks Slurm calls")
url $FLEETPLANE_URL
token-file $WORK/token-$n
nvidia-smi ${!v}
ibstat $DATA/ibstat/ibstat-h100-all-active.txt
EOF
done

# The check by hand first: n1 passes, n2 is refused; the timing is recorded (docs/slurm.md).
out=$(SLURMD_NODENAME=n1 "$FP" agent check --fast --config "$WORK/agent-n1.conf") || fail "check n1 by hand: exit $? ($out)"
assert_eq "warning agent:detectors_down: DetectorsLive is not set
check: pass node=n1 mode=manual faults=0 held=0 reported=0 exit=0" "$out" "check n1 by hand (no health agent has reported: DetectorsLive unset)"
wait_for 15 "n1 and n2 in sync" is sc_field n2 State IDLE

# A job pinned to n2 never starts there.
cd "$S/jobs"
j2=$(sbatch --parsable -w n2 --gres=gpu:1 --wrap 'echo ran on $SLURMD_NODENAME')
# (it passes through COMPLETING while the Epilog runs)
wait_for 20 "job $j2 requeued held" is job_sr "$j2" "PENDING launch_failed_requeued_held"
grep -q '^fault gpu:count_mismatch: nvidia-smi: 1 GPUs seen by nvidia-smi, 8 expected$' "$WORK/check-n2.log" ||
	fail "n2's prolog finding: $(cat "$WORK/check-n2.log")"
grep -q '^check: fail node=n2 mode=prolog faults=1 held=1 reported=1 exit=1$' "$WORK/check-n2.log" ||
	fail "n2's prolog verdict: $(cat "$WORK/check-n2.log")"
hr=$(hold_reason n2 health)
case $hr in *gpu:count_mismatch*) ;; *) fail "n2's health hold reason: [$hr]" ;; esac
assert_eq "IDLE+DRAIN" "$(sc_field n2 State)" "n2's Slurm state"
assert_eq "fleetplane: health: $hr" "$(sc_reason n2)" "n2's Slurm reason is fleetplane's"
sleep 5 # two sync passes at --slurm-interval 2: the drain stays fleetplane's
assert_eq 0 "$(slurm_holds n2)" "no slurm:* hold imported on n2"
assert_eq "fleetplane: health: $hr" "$(sc_reason n2)" "n2's Slurm reason after two passes"
# slurmd writes the Prolog's failure into the job's output file; the job's command never ran
assert_eq "Error running slurm prolog: 1" "$(cat "$S/jobs/slurm-$j2.out")" "job $j2's output"
# the health event the check reported
ev=$(api GET "/v1/healthevents?node=n2" | tail -n +2 | jq -r '[.items[] | "\(.code) \(.source) \(.decision.action)"] | join(",")')
assert_eq "gpu:count_mismatch nvidia-smi hold" "$ev" "n2's health events"

# A job on n1 runs; its Epilog reports the end.
j1=$(sbatch --parsable -w n1 --gres=gpu:2 --wrap 'echo ran on $SLURMD_NODENAME; exit 3')
wait_for 30 "job $j1 ended" is job_state "$j1" FAILED
assert_eq "ran on n1" "$(cat "$S/jobs/slurm-$j1.out")" "job $j1's output"
grep -q '^check: pass node=n1 mode=prolog faults=0 held=0 reported=0 exit=0$' "$WORK/check-n1.log" ||
	fail "n1's prolog verdict: $(cat "$WORK/check-n1.log")"
wait_for 15 "n1's JobEnded event" is jobend_msg n1 "Warning job $j1 ended on n1, gpus 0,1, exit 3 signal 0"

# The route's checks (docs/api.md "POST /v1/nodes/{name}:jobend"), with n1's agent token.
T1=$(cat "$WORK/token-n1")
field() { tail -n +2 | jq -r '"\(.status) \(.field // "")"'; }
assert_eq "422 job" "$(api POST /v1/nodes/n1:jobend '{"job":"bad id!"}' "$T1" | field)" "jobend: bad job"
assert_eq "422 exitCode" "$(api POST /v1/nodes/n1:jobend '{"job":"7","exitCode":300}' "$T1" | field)" "jobend: exit code range"
assert_eq "422 gpus" "$(api POST /v1/nodes/n1:jobend '{"job":"7","gpus":"0;1"}' "$T1" | field)" "jobend: gpus"
assert_eq "422 color" "$(api POST /v1/nodes/n1:jobend '{"job":"7","color":1}' "$T1" | field)" "jobend: unknown member"
assert_eq "403 " "$(api POST /v1/nodes/n2:jobend '{"job":"7"}' "$T1" | field)" "jobend: another node's agent"
assert_eq "404 " "$(api POST /v1/nodes/n9:jobend '{"job":"7"}' | field)" "jobend: unknown node"
assert_eq 202 "$(api POST /v1/nodes/n1:jobend '{"job":"7.1","gpus":"0-3,5"}' "$T1" | head -1)" "jobend: minimal"
assert_eq "Normal job 7.1 ended on n1, gpus 0-3,5" "$(jobend_msg n1)" "jobend: without an exit code"
# A person's drain is never drained over by a failing check: n1 drained by hand in Slurm,
# then its check finds the missing GPU and fails; Slurm keeps the person's reason, and
# fleetplane keeps its slurm:root hold.
scontrol update NodeName=n1 State=DRAIN Reason="human: dimm B2"
wait_for 15 "n1's slurm:root hold" is hold_reason n1 slurm:root "human: dimm B2"
sed -i "s|^nvidia-smi .*|nvidia-smi $nvsmi_n2|" "$WORK/agent-n1.conf"
if SLURMD_NODENAME=n1 "$FP" agent check --fast --mode prolog --config "$WORK/agent-n1.conf" >"$WORK/check-n1-human.log" 2>&1; then
	fail "n1's check passed with one GPU: $(cat "$WORK/check-n1-human.log")"
fi
assert_eq "human: dimm B2" "$(sc_reason n1)" "n1's Slurm reason after its failing check"
sleep 5 # two passes
assert_eq "human: dimm B2" "$(hold_reason n1 slurm:root)" "n1 keeps the person's hold"
assert_eq "human: dimm B2" "$(sc_reason n1)" "n1's Slurm reason after two passes"

kill -0 "$SERVE_PID" || fail "serve died"
stop_serve
echo "ok"
