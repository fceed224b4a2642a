#!/usr/bin/env bash
# GPUs idle under a Slurm job, end to end (issue 10 part 6): serve --slurm on a real Slurm 22.05
# (tests/peers/slurm/slurm.sh) writes status.workload of n1; the node agent with the agent token
# reads it, and its nvidia-smi file is the real H100 `nvidia-smi -q` (every GPU "0 %",
# tests/data/nvidia-smi/SOURCES.md). `agent --once --gpu-idle-minutes 1` run twice, the second
# run more than a minute after the first (the run of idle samples is kept in findings.state):
#  1. a job on n1: the first run sends no slurm:gpu_idle; the second sends one, with the job,
#     decided "count" (1 of 2 distinct jobs) - n1 is not held; a third run sends nothing more;
#  2. that job cancelled and another started: the same again, now 2 of 2 distinct jobs - a hold.
. "$(dirname "$0")/lib.sh"
# Two real minutes of waiting: the normal tier runs it; under ASan+UBSan (FP_SAN=1, make san)
# the detector's code is exercised by test_agent's unit cases instead.
if [ "${FP_SAN:-0}" = 1 ]; then
	echo "ok (not run under sanitizers: see test_agent)"
	exit 0
fi
. "$ROOT/tests/peers/slurm/slurm.sh"
S="$WORK/slurm"
chmod 711 "$WORK" # munged wants o+x on every directory above its socket
at_exit() { slurm_peer_stop "$S" || true; }
SMI=$ROOT/tests/data/nvidia-smi/h100-hgx-8gpu-q-535.161.08.txt

wait_for() { # SECONDS WHAT CMD...: polls CMD every 0.2 s
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		"$@" && return 0
		sleep 0.2
	done
	"$FP" node get n1 -o json >&2 || true
	fail "$what not within $secs s"
}
workload() { "$FP" node get "$1" -o json | jq -r '(.status.workload // {}) | "\(.state // "none") \((.jobs // []) | join(","))"'; }
is() {
	local want=${*: -1}
	[ "$("${@:1:$#-1}")" = "$want" ]
}
agent() { # runs the agent once for n1 with the agent token; sets RC, ERR
	set +e
	FLEETPLANE_TOKEN=$AG "$FP" agent --node n1 --nvidia-smi "$SMI" --gpu-idle-minutes 1 \
		--once --state-dir "$WORK/agent" --boot-id boot-1 >"$WORK/agent.out" 2>"$WORK/agent.err"
	RC=$?
	set -e
	ERR=$(cat "$WORK/agent.err")
	assert_eq 0 "$RC" "agent --once exit code ($ERR)"
}
idle_events() { # the slurm:gpu_idle health events of n1, oldest first: job action reason
	"$FP" health events --node n1 --code slurm:gpu_idle --limit 0 -o json |
		jq -r '.items | sort_by(.time) | .[] | "\(.job) \(.decision.action) \(.decision.reason)"'
}
held() { "$FP" node get n1 -o json | jq -r '[.status.holds[]? | select(.owner == "health")] | length'; }

slurm_peer_start "$S" >/dev/null
export SLURM_CONF="$S/slurm.conf"
start_serve "$WORK/d" --slurm --slurm-interval 2 --sim-speed 0
resp=$(api POST /v1/nodes '{"metadata":{"name":"n1"},"spec":{"site":"it-a","rack":"r1","bmc":{"driver":"sim"},"gpus":{"count":8}}}')
assert_eq 201 "$(echo "$resp" | head -1)" "enroll n1"
wait_phase available 1 60
AG=$("$FP" token create --role agent --name n1 --node n1 | tail -n 1)
[[ $AG == fpt_* ]] || fail "agent token create: [$AG]"
cd "$WORK"

# 1. one job: the job's, no hold
job1=$(sbatch --parsable -w n1 --gres=gpu:8 --wrap 'sleep 600')
wait_for 20 "job $job1 running on n1" is workload n1 "busy $job1"
agent
assert_eq "" "$(idle_events)" "slurm:gpu_idle after the first sample"
sleep 61
agent
assert_eq "$job1 count slurm:gpu_idle on GPU -: 1 of 2 distinct jobs within 86400 s ($job1)" \
	"$(idle_events)" "slurm:gpu_idle after a minute of idle samples"
msg=$("$FP" health events --node n1 --code slurm:gpu_idle --limit 0 -o json | jq -r '.items[0].message')
case $msg in
"job $job1: GPUs 0-7 at or below 0 % utilisation for 1 min while Slurm says busy") ;;
*) fail "slurm:gpu_idle message: $msg" ;;
esac
assert_eq 0 "$(held)" "health holds of n1 after one idle job"
agent
assert_eq 1 "$(idle_events | wc -l)" "slurm:gpu_idle events after a third run"

# 2. a second, distinct job idle on the same node: the node's
scancel "$job1"
job2=$(sbatch --parsable -w n1 --gres=gpu:8 --wrap 'sleep 600')
wait_for 40 "job $job2 running on n1" is workload n1 "busy $job2"
agent
assert_eq 1 "$(idle_events | wc -l)" "slurm:gpu_idle events after job $job2's first sample"
sleep 61
agent
assert_eq "$job2 hold" "$(idle_events | tail -1 | cut -d' ' -f1,2)" "the second job's slurm:gpu_idle"
assert_eq 1 "$(held)" "health holds of n1 after two idle jobs"
scancel "$job2"
stop_serve
echo "ok"
