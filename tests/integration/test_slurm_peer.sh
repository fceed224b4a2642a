#!/usr/bin/env bash
# The Slurm peer (tests/peers/slurm/slurm.sh) that the Slurm backend's tests stand on: a real
# Slurm 22.05 started and stopped here. n1 and n2 (real slurmd) come up idle; a gpu:1 job pinned
# to n2 makes it allocated (CPUs=1: the job takes the node) and idle again; drain puts n1 in
# IDLE+DRAIN with the reason, resume returns it to IDLE; ghost01-03 (nothing listens on their
# port) show as unknown* once slurmctld's first ping fails; fut01 is only seen with -F. Stop
# leaves no munged, slurmctld or slurmd of the run, and a second stop is a no-op. The states
# asserted are the strings observed with Slurm 22.05.8 (tests/data/slurm/SOURCES.md).
. "$(dirname "$0")/lib.sh"
PEER="$ROOT/tests/peers/slurm/slurm.sh"
. "$PEER" # slurm_peer_start/stop: the daemons are this shell's children, stop reaps them
S="$WORK/slurm"
T0=$(date +%s%N)
chmod 711 "$WORK" # munged wants o+x on every directory above its socket

at_exit() { slurm_peer_stop "$S" || true; }

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
phase() { echo "$1 at $(ms_since "$T0") ms"; } # where the seconds go, in the CI log

# wait_for SECONDS WHAT CMD...: polls CMD every 0.1 s.
wait_for() {
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 $((secs * 10))); do
		"$@" && return 0
		sleep 0.1
	done
	sinfo -N >&2 || true
	fail "$what not within $secs s"
}

node_state() { sinfo -h -N -n "$1" -o %T; }
is_state() { [ "$(node_state "$1")" = "$2" ]; }
scontrol_state() { scontrol show node "$1" -o | grep -o 'State=[^ ]*' | cut -d= -f2; }

t=$(date +%s%N)
slurm_peer_start "$S" >"$WORK/start.out"
echo "peer start: $(ms_since "$t") ms"
assert_eq "export SLURM_CONF=$S/slurm.conf" "$(cat "$WORK/start.out")" "slurm.sh start output"
assert_eq "$S/slurm.conf" "$SLURM_CONF" "SLURM_CONF after start"
assert_eq "export SLURM_CONF=$S/slurm.conf" "$(bash "$PEER" env "$S")" "slurm.sh env"
# Starting a running DIR is refused, and leaves it running.
bash "$PEER" start "$S" 2>/dev/null && fail "a second start of a running DIR succeeded"
assert_eq idle "$(node_state n1)" "n1 after a refused second start"

assert_eq "ghost01 ghost02 ghost03 n1 n2" "$(sinfo -h -N -o %N | tr '\n' ' ' | sed 's/ $//')" \
	"nodes sinfo lists (fut* hidden)"
assert_eq "n1 idle,n2 idle" "$(sinfo -h -N -n n1,n2 -o '%N %T' | paste -sd,)" "real nodes"
assert_eq "Node fut01 not found" "$(scontrol show node fut01 -o || true)" "fut01 without -F"
assert_eq FUTURE "$(scontrol -F show node fut01 -o | grep -o 'State=[^ ]*' | cut -d= -f2)" \
	"fut01 with -F"
# Both real nodes report the eight fake GPUs (gres.conf File= symlinks to /dev/null).
for n in n1 n2; do
	assert_eq "Gres=gpu:8" "$(scontrol show node "$n" -o | grep -o 'Gres=[^ ]*')" "$n GRES"
done

# A GPU job pinned to n2: allocated while it runs, idle after.
mkdir -p "$S/jobs"
# shellcheck disable=SC2016 # expanded by the job's shell
job=$(cd "$S/jobs" && sbatch --parsable -w n2 --gres=gpu:1 --wrap 'echo cuda=$CUDA_VISIBLE_DEVICES; sleep 3')
case $job in '' | *[!0-9]*) fail "sbatch answered [$job]" ;; esac
wait_for 10 "n2 allocated" is_state n2 allocated
phase "n2 allocated"
assert_eq ALLOCATED "$(scontrol_state n2)" "n2 scontrol state with the job"
assert_eq "$job|RUNNING|gres:gpu:1|n2" "$(squeue -h -j "$job" -o '%i|%T|%b|%N')" "squeue of job $job"

# Drain and resume n1 while the job runs on n2.
scontrol update NodeName=n1 State=DRAIN Reason="fleetplane: test" || fail "drain n1: rc $?"
line=$(scontrol show node n1 -o)
assert_eq IDLE+DRAIN "$(grep -o 'State=[^ ]*' <<<"$line" | cut -d= -f2)" "n1 state after drain"
reason=$(sed -n 's/.* Reason=//p' <<<"$line")
case $reason in "fleetplane: test [root@"*"]") ;; *) fail "n1 Reason: got [$reason]" ;; esac
assert_eq drained "$(node_state n1)" "n1 sinfo state after drain"
assert_eq "fleetplane: test" "$(sinfo -h -N -n n1 -o %E)" "n1 sinfo reason"
scontrol update NodeName=n1 State=RESUME || fail "resume n1: rc $?"
# After RESUME the node may read idle* until slurmctld pings it again.
wait_for 15 "n1 idle after resume" is_state n1 idle
phase "n1 idle after resume"
assert_eq IDLE "$(scontrol_state n1)" "n1 scontrol state after resume"
grep -q ' Reason=' <<<"$(scontrol show node n1 -o)" && fail "n1 kept a Reason after resume"

# An error goes to stderr with rc 1.
err=$(scontrol update NodeName=nosuch State=DRAIN Reason=x 2>&1 >/dev/null) && fail "update of nosuch: rc 0"
assert_eq "slurm_update error: Invalid node name specified" "$err" "update of nosuch: stderr"

wait_for 15 "job $job done and n2 idle" is_state n2 idle
phase "n2 idle after the job"
assert_eq "cuda=0" "$(cat "$S/jobs/slurm-$job.out")" "job $job output"
assert_eq IDLE "$(scontrol_state n2)" "n2 scontrol state after the job"
grep -q "^prolog node=n2 job=$job$" "$S/log/hooks.log" || fail "no prolog line for job $job"
grep -q "^epilog node=n2 job=$job$" "$S/log/hooks.log" || fail "no epilog line for job $job"

# The ghosts: not responding after slurmctld's first failed ping (~10.5 s after start with
# MessageTimeout=5, slurm.sh).
ghosts() { [ "$(sinfo -h -N -n 'ghost[01-03]' -o '%N %T' | paste -sd,)" = \
	"ghost01 unknown*,ghost02 unknown*,ghost03 unknown*" ]; }
wait_for 15 "ghost01-03 unknown*" ghosts
phase "ghosts unknown*"
assert_eq UNKNOWN+NOT_RESPONDING "$(scontrol_state ghost02)" "ghost02 scontrol state"

t=$(date +%s%N)
pids=$(cat "$S"/pids/*)
slurm_peer_stop "$S" || fail "slurm.sh stop failed"
echo "peer stop: $(ms_since "$t") ms"
for p in $pids; do # reaped: not even a zombie is left
	[ -e "/proc/$p" ] && fail "pid $p ($(cat "/proc/$p/comm")) still exists after stop"
done
left=$(pgrep -af "$S/(slurm\.conf|munge/)" || true)
[ -z "$left" ] || fail "left after stop: $left"
for f in "$S"/pids/*; do [ -e "$f" ] && fail "pid file $f left after stop"; done
bash "$PEER" stop "$S" || fail "a second stop failed"
scontrol ping 2>/dev/null | grep -q "is UP" && fail "slurmctld still answers after stop"
echo "total: $(ms_since "$T0") ms"
