#!/usr/bin/env bash
# The node agent against a real serve: `fleetplane agent --node n1 --kernel-log FILE --once` with
# a real Xid 79 line (NVSentinel #155) exits 0 and the node gets a health hold and a remediation
# for xid:79; AgentAlive True and DetectorsLive False (nothing but
# the kernel configured). With the API down --once exits 3 and keeps the report in the outbox;
# rerun with the API up sends it (5 Xid 119 events of a real gpud log); the same log from a fresh
# state dir is counted as 5 duplicates by the server. Then the agent follows a log that grows by
# 200 copies of that real file, is killed with SIGKILL half-way, and a --once restart leaves
# exactly one stored event per Xid line: 1,000 more. Kernel logs: tests/data/agent (SOURCES.md).
# On n2: a cut-off nvidia-smi -q file is no event and GPUHealthy Unknown (never
# gpu:count_mismatch); the healthy H100 sample sends its 8 power brake notices and gives
# GPUHealthy True; a --once report says intervalSeconds 0; a local write failure counts all
# 300 events not in the outbox (break report 4b #5, #6, #9, #10).
. "$(dirname "$0")/lib.sh"
DATA=$ROOT/tests/data/agent
start_serve "$WORK/d" --sim 0 --sim-speed 0
"$FP" node enroll -f - <<<'{"items":[{"metadata":{"name":"n1"},"spec":{"bmc":{"driver":"sim"},"gpus":{"count":8}}}]}' >/dev/null
wait_phase available 1 30
AG=$("$FP" token create --role agent --name n1 --node n1 | tail -n 1)
[[ $AG == fpt_* ]] || fail "agent token create: [$AG]"

agent() { # runs the agent with the agent token; sets RC, ERR
	set +e
	FLEETPLANE_TOKEN=$AG "$FP" agent --node n1 "$@" >"$WORK/agent.out" 2>"$WORK/agent.err"
	RC=$?
	set -e
	ERR=$(cat "$WORK/agent.err")
}
summary() { grep '^agent: ' <<<"$ERR" || true; }
nevents() { # CODE: health events of n1 with CODE
	nevents_of n1 "$1"
}
nevents_of() { # NODE CODE: health events of NODE with CODE
	"$FP" health events --node "$1" --code "$2" --limit 0 -o json | jq '.items | length'
}

# 1. One real Xid 79 line: accepted, decided "hold", a remediation for xid:79 starts.
agent --kernel-log "$DATA/xid79-nvsentinel-155.log" --once --state-dir "$WORK/s1" --boot-id boot-1
assert_eq 0 "$RC" "agent --once xid79: exit code ($ERR)"
assert_eq "agent: 2 reports sent, 0 rejected, 1 events, 1 accepted, 0 duplicates, 0 events still buffered" \
	"$(summary)" "agent --once xid79: summary"
EV=$("$FP" health events --node n1 -o json)
assert_eq 1 "$(jq '.items | length' <<<"$EV")" "health events after xid79"
assert_eq '{"source":"kernel","code":"xid:79","bus":"0000:44:00.0","action":"hold","raw":"NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"}' \
	"$(jq -c '.items[0] | {source, code, bus: .gpu.pciBusId, action: .decision.action, raw}' <<<"$EV")" \
	"the xid79 health event"
# The hold starts a remediation for xid:79 (status.remediation while it runs, then a history
# entry); how the ladder ends is the lifecycle's business (test_lifecycle, test_health).
for i in $(seq 1 120); do
	R=$("$FP" node get n1 -o json | jq -r '.status.remediation.code // .status.remediationHistory[0].code // ""')
	[ -n "$R" ] && break
	sleep 0.5
done
assert_eq "xid:79" "$R" "n1 remediation started for"
"$FP" event list --object node/n1 -o json >"$WORK/events.json"
jq -e '[.items[] | select(.message | test("health"))] | length > 0' "$WORK/events.json" >/dev/null ||
	fail "no audit event of n1 mentions the health hold"
assert_eq "True" "$(cond n1 AgentAlive | cut -d' ' -f1)" "AgentAlive after a report"
assert_eq "False" "$(cond n1 DetectorsLive | cut -d' ' -f1)" "DetectorsLive with only the kernel configured"

# 1b. The same line after a reboot (another boot id) is the same event: resuming sends nothing,
# a fresh state sends the same id (a duplicate), so one Xid 79 gives one remediation.
agent --kernel-log "$DATA/xid79-nvsentinel-155.log" --once --state-dir "$WORK/s1" --boot-id boot-1b
assert_eq 0 "$RC" "agent --once xid79 after a reboot: exit code ($ERR)"
assert_eq "agent: 1 reports sent, 0 rejected, 0 events, 0 accepted, 0 duplicates, 0 events still buffered" \
	"$(summary)" "agent --once xid79 after a reboot: summary"
agent --kernel-log "$DATA/xid79-nvsentinel-155.log" --once --state-dir "$WORK/s1c" --boot-id boot-1c
assert_eq "agent: 2 reports sent, 0 rejected, 1 events, 0 accepted, 1 duplicates, 0 events still buffered" \
	"$(summary)" "agent --once xid79, fresh state, third boot: summary"
assert_eq 1 "$(nevents xid:79)" "xid:79 events stored after two more boots"

# 2. API down: exit 3, the report stays in the outbox.
URL=$FLEETPLANE_URL
stop_serve
agent --kernel-log "$DATA/dmesg-xid119-gsp-timeout.log" --once --state-dir "$WORK/s2" --boot-id boot-1
assert_eq 3 "$RC" "agent --once with the API down: exit code ($ERR)"
assert_eq "agent: 0 reports sent, 0 rejected, 5 events, 0 accepted, 0 duplicates, 5 events still buffered" \
	"$(summary)" "agent --once API down: summary"
assert_eq 1 "$(ls "$WORK/s2/outbox" | grep -c '\.json$')" "outbox files while the API is down"
start_serve "$WORK/d" --sim 0 --sim-speed 0
[ "$URL" != "$FLEETPLANE_URL" ] || true
agent --kernel-log "$DATA/dmesg-xid119-gsp-timeout.log" --once --state-dir "$WORK/s2" --boot-id boot-1
assert_eq 0 "$RC" "agent --once rerun with the API up: exit code ($ERR)"
assert_eq "agent: 2 reports sent, 0 rejected, 0 events, 5 accepted, 0 duplicates, 0 events still buffered" \
	"$(summary)" "agent --once rerun: summary (the kept report first, then a heartbeat)"
assert_eq 0 "$(ls "$WORK/s2/outbox" | grep -c '\.json$' || true)" "outbox files after the rerun"
assert_eq 5 "$(nevents xid:119)" "xid:119 events stored"
# The same log, same boot, fresh state: same ids, so 5 duplicates and nothing new.
agent --kernel-log "$DATA/dmesg-xid119-gsp-timeout.log" --once --state-dir "$WORK/s3" --boot-id boot-1
assert_eq 0 "$RC" "agent --once fresh state: exit code ($ERR)"
assert_eq "agent: 2 reports sent, 0 rejected, 5 events, 0 accepted, 5 duplicates, 0 events still buffered" \
	"$(summary)" "agent --once fresh state: summary"
assert_eq 5 "$(nevents xid:119)" "xid:119 events stored after the duplicate run"

# 3. Killed mid-stream: follow a growing log, SIGKILL after half of it, restart with --once.
LOG=$WORK/long.log
: >"$LOG"
FLEETPLANE_TOKEN=$AG "$FP" agent --node n1 --kernel-log "$LOG" --state-dir "$WORK/s4" \
	--boot-id boot-2 --interval 1 >"$WORK/follow.out" 2>"$WORK/follow.err" &
APID=$!
at_exit() { kill -9 "$APID" 2>/dev/null || true; }
for i in $(seq 1 100); do
	cat "$DATA/dmesg-xid119-gsp-timeout.log" >>"$LOG"
	sleep 0.05
done
# Wait until the follower has sent something, so the kill lands mid-stream.
for i in $(seq 1 100); do
	[ "$(nevents xid:119)" -gt 5 ] && break
	sleep 0.2
done
kill -9 "$APID"
wait "$APID" 2>/dev/null || true
for i in $(seq 1 100); do
	cat "$DATA/dmesg-xid119-gsp-timeout.log" >>"$LOG"
done
agent --kernel-log "$LOG" --once --state-dir "$WORK/s4" --boot-id boot-2
assert_eq 0 "$RC" "agent --once after SIGKILL: exit code ($ERR)"
assert_eq 1005 "$(nevents xid:119)" "xid:119 events stored after the kill and restart (5 + 200 x 5)"

# 4. A local write failure is not an unreachable API: exit 4, the events are read again by the
# next run. The outbox's first temporary name is taken by a directory (EISDIR, also as root).
mkdir -p "$WORK/s5/outbox/00000000000000000001.json.tmp"
agent --kernel-log "$DATA/fallen-off-bus-multiline-nvsentinel-155.log" --once --state-dir "$WORK/s5" --boot-id boot-5
assert_eq 4 "$RC" "agent --once with the outbox unwritable: exit code ($ERR)"
grep -q "^error: a local write under $WORK/s5 failed, not the API: outbox write failed: create $WORK/s5/outbox/00000000000000000001.json.tmp: Is a directory; 1 events found are not in the outbox yet" <<<"$ERR" ||
	fail "local write failure message: $ERR"
rmdir "$WORK/s5/outbox/00000000000000000001.json.tmp"
agent --kernel-log "$DATA/fallen-off-bus-multiline-nvsentinel-155.log" --once --state-dir "$WORK/s5" --boot-id boot-5
assert_eq 0 "$RC" "agent --once after the outbox is writable again: exit code ($ERR)"
assert_eq "agent: 2 reports sent, 0 rejected, 1 events, 1 accepted, 0 duplicates, 0 events still buffered" \
	"$(summary)" "agent --once after the local failure: summary"

# 5. Usage errors before anything is sent (exit 2, naming the flag); a missing parent of
# --state-dir is created; a detector file that cannot be read is a warning on stderr.
agent --node 'bad name' --once --state-dir "$WORK/s6" --boot-id b
assert_eq 2 "$RC" "agent --node 'bad name': exit code"
grep -q "^error: flag '--node': node: \"bad name\" is not a valid name" <<<"$ERR" || fail "--node message: $ERR"
agent --job 'a b' --once --state-dir "$WORK/s6" --boot-id b
assert_eq 2 "$RC" "agent --job 'a b': exit code"
SLURM_JOB_ID='a b' agent --once --state-dir "$WORK/s6" --boot-id b
assert_eq 2 "$RC" "agent with SLURM_JOB_ID='a b': exit code"
[ ! -e "$WORK/s6" ] || fail "a usage error created the state dir"
agent --nvidia-smi /nonexistent --once --state-dir "$WORK/new/parent/s7" --boot-id b
assert_eq 0 "$RC" "agent --nvidia-smi /nonexistent, new state dir parents: exit code ($ERR)"
assert_eq "700" "$(stat -c %a "$WORK/new/parent")" "mode of a created state dir parent"
grep -qx "warning: --nvidia-smi /nonexistent: detector nvidia-smi not live (ProbeFailed): open /nonexistent: No such file or directory" <<<"$ERR" ||
	fail "no warning for --nvidia-smi /nonexistent: $ERR"

# 6. The nvidia-smi detector on node n2 (break report 4b #5, #6, #9). A cut-off -q file (the
# real H100 sample's first 3000 bytes, as a reader sees `nvidia-smi -q > file` being rewritten)
# is not a missing GPU: no event, the detector unknown, GPUHealthy Unknown.
"$FP" node enroll -f - <<<'{"items":[{"metadata":{"name":"n2"},"spec":{"bmc":{"driver":"sim"},"gpus":{"count":8}}}]}' >/dev/null
for i in $(seq 1 60); do
	[ "$("$FP" node get n2 -o json | jq -r .status.phase)" = available ] && break
	sleep 0.5
done
AG2=$("$FP" token create --role agent --name n2 --node n2 | tail -n 1)
SMI=$ROOT/tests/data/nvidia-smi/h100-hgx-8gpu-q-535.161.08.txt
head -c 3000 "$SMI" >"$WORK/cut.txt"
agent2() {
	set +e
	FLEETPLANE_TOKEN=$AG2 "$FP" agent --node n2 "$@" >"$WORK/agent.out" 2>"$WORK/agent.err"
	RC=$?
	set -e
	ERR=$(cat "$WORK/agent.err")
}
agent2 --nvidia-smi "$WORK/cut.txt" --expected-gpus 8 --once --state-dir "$WORK/n2a" --boot-id boot-n2
assert_eq 0 "$RC" "agent --nvidia-smi cut-off file: exit code ($ERR)"
assert_eq "agent: 1 reports sent, 0 rejected, 0 events, 0 accepted, 0 duplicates, 0 events still buffered" \
	"$(summary)" "agent --nvidia-smi cut-off file: summary"
assert_eq 0 "$("$FP" health events --node n2 --limit 0 -o json | jq '.items | length')" \
	"n2 health events after a cut-off nvidia-smi file"
assert_eq "Unknown" "$(cond n2 GPUHealthy | cut -d' ' -f1)" "n2 GPUHealthy after a cut-off nvidia-smi file"
# The whole healthy H100 sample: 8 power:brake_slowdown notices are events, but the detector
# is ok, so GPUHealthy turns True. A --once report says it does not heartbeat.
agent2 --nvidia-smi "$SMI" --expected-gpus 8 --once --state-dir "$WORK/n2a" --boot-id boot-n2
assert_eq 0 "$RC" "agent --nvidia-smi healthy H100: exit code ($ERR)"
assert_eq "agent: 1 reports sent, 0 rejected, 8 events, 8 accepted, 0 duplicates, 0 events still buffered" \
	"$(summary)" "agent --nvidia-smi healthy H100: summary"
assert_eq 8 "$(nevents_of n2 power:brake_slowdown)" "n2 power:brake_slowdown events"
assert_eq "True" "$(cond n2 GPUHealthy | cut -d' ' -f1)" "n2 GPUHealthy with the healthy H100 sample"
assert_eq "True" "$(cond n2 AgentAlive | cut -d' ' -f1)" "n2 AgentAlive after a --once report"
"$FP" node get n2 -o json | jq -r '.status.conditions[] | select(.type == "AgentAlive") | .message' >"$WORK/alive.txt"
grep -q "intervalSeconds 0" "$WORK/alive.txt" || fail "n2 AgentAlive does not say the agent reported once: $(cat "$WORK/alive.txt")"

# 7. A local write failure with more events than one report (break report 4b #10): the real
# gpud log 60 times over holds 300 Xid 119 events; the message counts all 300, not the 256 of
# the report that failed.
for i in $(seq 1 60); do cat "$DATA/dmesg-xid119-gsp-timeout.log"; done >"$WORK/long.log"
mkdir -p "$WORK/n2b/outbox/00000000000000000001.json.tmp"
agent2 --kernel-log "$WORK/long.log" --once --state-dir "$WORK/n2b" --boot-id boot-n2
assert_eq 4 "$RC" "agent --once, 300 events, outbox unwritable: exit code ($ERR)"
grep -q "^error: a local write under $WORK/n2b failed, not the API: outbox write failed: create $WORK/n2b/outbox/00000000000000000001.json.tmp: Is a directory; 300 events found are not in the outbox yet" <<<"$ERR" ||
	fail "local write failure message with 300 events: $ERR"
echo "ok test_agent"
