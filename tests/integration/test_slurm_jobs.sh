#!/usr/bin/env bash
# serve --slurm with real jobs on a real Slurm 22.05 (tests/peers/slurm/slurm.sh), fleetplane nodes
# n1 and n2 (sim BMCs):
#  1. a job runs on n1: status.workload says busy with its id, and a power cycle is refused
#     (409 naming the job);
#  2. an operator drains n1 while the job runs: Slurm shows draining, the node stays draining in
#     fleetplane (WorkloadDrained False JobsRunning naming the job) until the job ends, then goes
#     to maintenance with Slurm drained - no power action ran on it;
#  3. slurmctld is killed and restarted: SchedulerInSync goes False and back to True, and no node
#     flaps (no hold imported or released, n1's drain kept, n2 never drained, no Slurm update);
#  4. scontrol answering garbage (a stand-in in PATH) changes nothing but SchedulerInSync
#     (SlurmOutputInvalid): holds, phases and Slurm's states stay.
. "$(dirname "$0")/lib.sh"
san_skip "the Slurm sync and drain code run under them in test_slurm_serve and test_slurm_peer_cli; the rest is waiting on slurmctld"
. "$ROOT/tests/peers/slurm/slurm.sh"
S="$WORK/slurm"
chmod 711 "$WORK" # munged wants o+x on every directory above its socket
at_exit() { slurm_peer_stop "$S" || true; }

wait_for() { # SECONDS WHAT CMD...: polls CMD every 0.2 s
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		"$@" && return 0
		sleep 0.2
	done
	scontrol show node n1 -o >&2 || true
	"$FP" node get n1 -o json >&2 || true
	fail "$what not within $secs s"
}
sc_field() { scontrol show node "$1" -o | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2-; }
sc_reason() { scontrol show node "$1" -o | sed -n 's/.* Reason=\(.*\) \[[^]]*\]$/\1/p'; }
node_json() { "$FP" node get "$1" -o json; }
phase() { node_json "$1" | jq -r '.status.phase'; }
workload() { node_json "$1" | jq -r '(.status.workload // {}) | "\(.state // "none") \((.jobs // []) | join(","))"'; }
cond() { node_json "$1" | jq -r --arg t "$2" '[.status.conditions[]? | select(.type == $t) | "\(.status) \(.reason)"][0] // ""'; }
cond_msg() { node_json "$1" | jq -r --arg t "$2" '[.status.conditions[]? | select(.type == $t) | .message][0] // ""'; }
is() {
	local want=${*: -1}
	[ "$("${@:1:$#-1}")" = "$want" ]
}
slurm_events() { api GET "/v1/events?limit=500" | tail -n +2 | jq '[.items[] | select(.reason | test("^SlurmDrain"))] | length'; }

# serve finds scontrol through PATH: a stand-in that passes through to the real one until
# $WORK/garbage exists, then prints what no scontrol prints.
mkdir -p "$WORK/bin"
real_scontrol=$(command -v scontrol)
cat >"$WORK/bin/scontrol" <<EOS
#!/bin/sh
if [ -e "$WORK/garbage" ]; then echo '<html><body>502 Bad Gateway</body></html>'; exit 0; fi
exec "$real_scontrol" "\$@"
EOS
chmod 755 "$WORK/bin/scontrol"

slurm_peer_start "$S" >/dev/null
export SLURM_CONF="$S/slurm.conf"
PATH="$WORK/bin:$PATH" start_serve "$WORK/d" --slurm --slurm-interval 2 --sim-speed 0
for n in n1 n2; do
	resp=$(api POST /v1/nodes "{\"metadata\":{\"name\":\"$n\"},\"spec\":{\"site\":\"it-a\",\"rack\":\"r1\",\"bmc\":{\"driver\":\"sim\"}}}")
	assert_eq 201 "$(echo "$resp" | head -1)" "enroll $n"
done
wait_phase available 2 60
wait_for 15 "n1 workload idle" is workload n1 "idle "

# 1. a job on n1
cd "$WORK"
job=$(sbatch --parsable -w n1 --gres=gpu:2 --wrap 'sleep 14')
wait_for 15 "job $job running on n1" is workload n1 "busy $job"
if out=$("$FP" node power n1 cycle 2>&1); then fail "power cycle with a job running was accepted: $out"; fi
case $out in
*"node n1 runs slurm jobs $job (status.workload busy): power cycle would kill them"*) ;;
*) fail "power cycle refusal: $out" ;;
esac

# 2. drain with the job running: waits for it, never power-cycles
"$FP" node drain n1 --reason "dimm swap" >/dev/null
wait_for 15 "n1 draining in Slurm" is workload n1 "draining $job"
assert_eq "draining" "$(sinfo -h -n n1 -o %T)" "sinfo state of n1"
case $(sc_field n1 State) in ALLOCATED+DRAIN | MIXED+DRAIN) ;; *) fail "n1 Slurm state $(sc_field n1 State)" ;; esac
assert_eq "draining" "$(phase n1)" "n1's phase while the job runs"
assert_eq "False JobsRunning" "$(cond n1 WorkloadDrained)" "WorkloadDrained while the job runs"
assert_eq "slurm jobs $job (state draining)" "$(cond_msg n1 WorkloadDrained)" "the condition names the job"
sleep 4
assert_eq "draining" "$(phase n1)" "n1 still draining"
wait_for 40 "n1 in maintenance after job $job" is phase n1 maintenance
assert_eq "drained " "$(workload n1)" "n1's workload after the job"
assert_eq "IDLE+DRAIN" "$(sc_field n1 State)" "n1 drained in Slurm"
assert_eq "True Drained" "$(cond n1 WorkloadDrained)" "WorkloadDrained after the job"
ops=$(api GET "/v1/operations?node=n1&limit=100" | tail -n +2 | jq -r '[.items[].spec.kind] | sort | unique | join(",")')
case ",$ops," in *",power,"* | *",repair,"* | *",reboot,"*) fail "a power action ran on n1: $ops" ;; esac

# 3. slurmctld killed and restarted: no node flaps
ev0=$(slurm_events)
ctld=$(cat "$S/pids/slurmctld")
kill "$ctld"
wait "$ctld" 2>/dev/null || true
wait_for 20 "SchedulerInSync False on n1" is cond n1 SchedulerInSync "False SlurmUnreachable"
slurm_peer_launch "$S" slurmctld slurmctld -D -f "$S/slurm.conf"
wait_for 20 "slurmctld back" slurm_peer_ctld_ready
wait_for 20 "SchedulerInSync True on n1" is cond n1 SchedulerInSync "True InSync"
wait_for 20 "SchedulerInSync True on n2" is cond n2 SchedulerInSync "True InSync"
sleep 5 # two more passes
assert_eq "$ev0" "$(slurm_events)" "Slurm drain events across the restart"
assert_eq "fleetplane: $(node_json n1 | jq -r '.status.holds[0].owner'): dimm swap" "$(sc_reason n1)" "n1's reason across the restart"
assert_eq "IDLE" "$(sc_field n2 State)" "n2 across the restart"
assert_eq "maintenance available" "$(phase n1) $(phase n2)" "phases across the restart"
grep -q "slurm update" "$WORK/d/serve.log" && fail "an update failed across the restart: $(grep 'slurm update' "$WORK/d/serve.log")"

# 4. garbage from scontrol: only the condition changes
touch "$WORK/garbage"
wait_for 20 "SlurmOutputInvalid on n2" is cond n2 SchedulerInSync "False SlurmOutputInvalid"
"$FP" node resume n1 >/dev/null # fleetplane wants n1 back; Slurm must not be told while it is unreadable
sleep 5
rm -f "$WORK/garbage"
assert_eq "IDLE+DRAIN" "$(sc_field n1 State)" "n1 not resumed while scontrol answered garbage"
assert_eq "0 0" "$(node_json n1 | jq '.status.holds | length') $(node_json n2 | jq '.status.holds | length')" "holds with garbage"
assert_eq "available" "$(phase n2)" "n2 with garbage"
wait_for 20 "n1 resumed once scontrol reads again" is sc_field n1 State IDLE
wait_for 20 "SchedulerInSync True on n2 again" is cond n2 SchedulerInSync "True InSync"
stop_serve
echo "ok"
