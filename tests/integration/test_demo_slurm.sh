#!/usr/bin/env bash
# fleetplane demo --slurm (issue 10): the demo starts a Slurm of its own (munged, slurmctld, two
# slurmd) under DATA_DIR/slurm, runs a job on s01n01 and feeds that node a real XID 79 line; the
# node is held (health), drained in Slurm with fleetplane's reason while the job runs
# (WorkloadDrained False JobsRunning naming the job), then, after the job, remediated (rung
# reboot), validated, available and RESUMEd (IDLE). Asserts the exit code, that the printed steps
# name the job id sbatch printed and the fleetplane reason, and that no process of the data dir
# (daemon or job step) is left afterwards. Without the Slurm tools in PATH, --slurm exits 2 naming
# what is missing and the packages to install; with a slurmctld that dies at start it exits 1
# naming it and leaves no munged behind.
. "$(dirname "$0")/lib.sh"
# Under ASan+UBSan (FP_SAN=1, make san) the Slurm backend's code is run by test_slurm_serve,
# test_slurm_peer and the slurm unit suites; the demo adds only its own steps, run here once.
if [ "${FP_SAN:-0}" = 1 ]; then
	echo "ok (not run under sanitizers: see test_slurm_serve, test_slurm_peer)"
	exit 0
fi
for t in slurmctld slurmd munged sbatch scontrol; do
	command -v "$t" >/dev/null || fail "$t is not in PATH (apt-get install slurmctld slurmd slurm-client munge)"
done
chmod 711 "$WORK" # munged wants o+x on every directory above its socket
D="$WORK/d"

# leftovers DIR: processes of the run in DIR: its daemons (their argv names DIR) and job steps
# (slurmstepd's environment has SLURM_CONF=DIR/slurm/slurm.conf).
leftovers() {
	local pid
	pgrep -f "$1/" || true
	for pid in $(pgrep -x slurmstepd || true); do
		tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "SLURM_CONF=$1/slurm/slurm.conf" &&
			echo "$pid"
	done
	return 0
}
at_exit() { # a failed run must not leave daemons behind for the next test
	local pid
	for pid in $(leftovers "$D"); do kill -KILL "$pid" 2>/dev/null || true; done
}

rc=0
"$FP" demo --slurm --nodes 2 --data-dir "$D" --sim-speed 50 --timeout 300 >"$WORK/demo.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/demo.out" >&2; fail "demo --slurm exited $rc"; }
out=$WORK/demo.out
grep -q "4/4 nodes available" "$out" || fail "summary does not say 4/4 (2 nodes + the 2 Slurm nodes)"
job=$(sed -n "s/.*sbatch --parsable -w s01n01 --gres=gpu:2 --wrap 'sleep 20' -> job \([0-9][0-9]*\)$/\1/p" "$out") || true
[ -n "$job" ] || fail "no job id printed after sbatch"
# The steps, in this order, each naming what it saw.
steps=(
	"s01n01 *status.workload busy, jobs \[$job\]; Slurm State=ALLOCATED"
	"s01n01 *fleetplane agent --once reported; decision: xid:79 hold"
	"s01n01 *hold owner health: xid:79 on GPU 0000:44:00.0"
	"s01n01 *WorkloadDrained False JobsRunning: slurm jobs $job "
	"s01n01 *Slurm State=ALLOCATED+DRAIN Reason=fleetplane: health: xid:79 on GPU 0000:44:00.0"
	"s01n01 *job $job ended; status.workload drained"
	"s01n01 *repairing: rung reboot"
	"s01n01 *available: health hold released, xid:79 succeeded on rung reboot, validated"
	"s01n01 *RESUMEd in Slurm: State=IDLE$"
	"s01n01 *done: held and drained in Slurm under job $job"
)
last=0
for s in "${steps[@]}"; do
	n=$(grep -n -- "$s" "$out" | head -1 | cut -d: -f1) || true
	[ -n "$n" ] || { cat "$out" >&2; fail "step not printed: $s"; }
	# the drain and the JobsRunning line may come in either order (two observers)
	case $s in *"Slurm State=ALLOCATED+DRAIN"*) ;; *)
		[ "$n" -gt "$last" ] || { cat "$out" >&2; fail "step out of order: $s"; }
		last=$n
		;;
	esac
done
left=$(leftovers "$D")
[ -z "$left" ] || fail "left running after the demo: $(for p in $left; do tr '\0' ' ' </proc/$p/cmdline; echo; done)"
grep -q "^  export SLURM_CONF=$D/slurm/slurm.conf" "$out" || fail "summary does not name SLURM_CONF"

# Without the tools: exit 2, naming what is missing and the packages.
rc=0
PATH=/nonexistent "$FP" demo --slurm --data-dir "$WORK/none" >"$WORK/none.out" 2>&1 || rc=$?
assert_eq 2 "$rc" "demo --slurm without the Slurm tools"
grep -q "munged, munge, slurmctld, slurmd, scontrol, sbatch, scancel, squeue are not in PATH" "$WORK/none.out" ||
	fail "missing tools not named: $(cat "$WORK/none.out")"
grep -q "apt-get install slurmctld slurmd slurm-client munge" "$WORK/none.out" || fail "no install hint"
[ ! -e "$WORK/none" ] || fail "demo --slurm without the tools created its data dir"

# A daemon that dies at start (a slurmctld stand-in that exits 1): exit 1 naming it, with the
# tail of its output, and munged, already started, stopped.
mkdir -p "$WORK/shim"
printf '#!/bin/sh\necho "slurmctld: fatal: stand-in for the test" >&2\nexit 1\n' >"$WORK/shim/slurmctld"
chmod 755 "$WORK/shim/slurmctld"
rc=0
PATH="$WORK/shim:$PATH" "$FP" demo --slurm --nodes 1 --data-dir "$WORK/dead" >"$WORK/dead.out" 2>&1 || rc=$?
assert_eq 1 "$rc" "demo --slurm with a slurmctld that exits"
grep -q "starting Slurm: slurmctld ping UP: slurmctld exited" "$WORK/dead.out" ||
	fail "the dead slurmctld is not named: $(cat "$WORK/dead.out")"
grep -q "slurmctld: fatal: stand-in for the test" "$WORK/dead.out" || fail "no tail of its output"
left=$(leftovers "$WORK/dead")
[ -z "$left" ] || fail "left running after a failed start: $left"
echo "ok"
