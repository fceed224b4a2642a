#!/usr/bin/env bash
# serve --slurm against a real Slurm 22.05 (tests/peers/slurm/slurm.sh): fleetplane nodes n1 and
# n2 (sim BMCs; the names are Slurm NodeNames) onboard to available; an operator drain of n1
# becomes State=IDLE+DRAIN in Slurm with reason "fleetplane: <owner>: <reason>" and the resume
# RESUMEs it; a drain made in Slurm on n2 (user root, "bad dimm") becomes a hold of slurm:root
# with Slurm's reason, and a fleetplane hold added and released on n2 never resumes it in Slurm;
# SchedulerInSync is True once a pass has run. Then slurmctld stops: serve keeps running and
# n1 turns SchedulerInSync False (SlurmUnreachable) with its holds and phase unchanged.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/peers/slurm/slurm.sh"
S="$WORK/slurm"
chmod 711 "$WORK" # munged wants o+x on every directory above its socket
at_exit() { slurm_peer_stop "$S" || true; }

# wait_for SECONDS WHAT CMD...: polls CMD every 0.2 s.
wait_for() {
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		"$@" && return 0
		sleep 0.2
	done
	scontrol show node n1 -o >&2 || true; scontrol show node n2 -o >&2 || true
	"$FP" node get n1 -o json >&2 || true
	"$FP" node get n2 -o json >&2 || true
	cat "$WORK/fp-nodes.conf" >&2 2>/dev/null; grep -i "slurm conf\|configuration" "$WORK/d/serve.log" >&2; fail "$what not within $secs s"
}
sc_field() { scontrol show node "$1" -o | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2-; }
sc_reason() { scontrol show node "$1" -o | sed -n 's/.* Reason=\(.*\) \[[^]]*\]$/\1/p'; }
node_json() { "$FP" node get "$1" -o json; }
hold_reason() { node_json "$1" | jq -r --arg o "$2" '[.status.holds[]? | select(.owner == $o) | .reason][0] // ""'; }
in_sync() { node_json "$1" | jq -r '[.status.conditions[]? | select(.type == "SchedulerInSync") | "\(.status) \(.reason)"][0] // ""'; }
# Predicates for wait_for (evaluated on every poll): VALUE-FUNCTION ARGS... EXPECTED
is() {
	local want=${*: -1}
	[ "$("${@:1:$#-1}")" = "$want" ]
}

slurm_peer_start "$S" >/dev/null
export SLURM_CONF="$S/slurm.conf"
start_serve "$WORK/d" --slurm --slurm-interval 2 --sim-speed 0 \
	--slurm-nodes-conf "$WORK/fp-nodes.conf" --slurm-gres-conf "$WORK/fp-gres.conf"
for n in n1 n2; do
	resp=$(api POST /v1/nodes "{\"metadata\":{\"name\":\"$n\"},\"spec\":{\"site\":\"it-a\",\"rack\":\"r1\",\"bmc\":{\"driver\":\"sim\"}}}")
	assert_eq 201 "$(echo "$resp" | head -1)" "enroll $n"
done
wait_phase available 2 60

# the generated configuration: both nodes once they passed validation, then a reconfigure
nodes_line() { grep '^NodeName=' "$WORK/fp-nodes.conf" 2>/dev/null | cut -d' ' -f1; }
wait_for 15 "n1 and n2 in the generated nodes.conf" is nodes_line "NodeName=n[1-2]" || { cat "$WORK/fp-nodes.conf" >&2; exit 1; }
assert_eq "2" "$(grep -c '^NodeName=n[12] Name=gpu ' "$WORK/fp-gres.conf")" "gres.conf lines"
wait_for 15 "scontrol reconfigure after the change" grep -q "msg=\"slurm reconfigure done\" nodes=2" "$WORK/d/serve.log"

# fleetplane's drain in Slurm, then its resume
out=$("$FP" node drain n1 --reason "dimm swap")
owner=$(node_json n1 | jq -r '.status.holds[0].owner')
wait_for 15 "n1 DRAIN in Slurm" is sc_field n1 State IDLE+DRAIN
assert_eq "fleetplane: $owner: dimm swap" "$(sc_reason n1)" "n1's Slurm reason"
assert_eq "fleetplane: $owner: dimm swap" "$(sinfo -R -h -n n1 -o %E)" "sinfo -R shows fleetplane's reason"
wait_for 15 "SchedulerInSync on n1" is in_sync n1 "True InSync"
"$FP" node resume n1 >/dev/null
wait_for 15 "n1 RESUMEd in Slurm" is sc_field n1 State IDLE

# a drain made in Slurm is imported as a hold that fleetplane never releases itself
scontrol update NodeName=n2 State=DRAIN Reason="bad dimm"
wait_for 15 "n2's slurm:root hold" is hold_reason n2 slurm:root "bad dimm"
"$FP" node drain n2 --reason "firmware" >/dev/null
sleep 3
"$FP" node resume n2 >/dev/null
sleep 5 # two passes at --slurm-interval 2
assert_eq "IDLE+DRAIN" "$(sc_field n2 State)" "n2 stays drained in Slurm"
assert_eq "bad dimm" "$(sc_reason n2)" "n2's Slurm reason is the operator's"
assert_eq "bad dimm" "$(hold_reason n2 slurm:root)" "n2 keeps its slurm:root hold"

# Slurm gone: a condition, nothing else
rev=$(node_json n1 | jq -r '.metadata.resourceVersion')
phase1=$(node_json n1 | jq -r '.status.phase')
kill "$(cat "$S/pids/slurmctld")"
wait_for 30 "SchedulerInSync False on n1" is in_sync n1 "False SlurmUnreachable"
assert_eq "$phase1" "$(node_json n1 | jq -r '.status.phase')" "n1's phase with Slurm down"
assert_eq 0 "$(node_json n1 | jq '.status.holds | length')" "n1's holds with Slurm down"
kill -0 "$SERVE_PID" || fail "serve died with Slurm down"
stop_serve
echo "ok"
