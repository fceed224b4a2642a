#!/usr/bin/env bash
# test_health.sh - GPU health end to end (issue 4) against the real binary with simulated nodes:
# an agent token reports a real XID 79 kernel line for its node; the health controller holds
# the node and the lifecycle runs the reboot rung, validates and returns it to service with the
# remediation in its history; the same report again is a duplicate; an agent token cannot report
# for another node; bad bodies are 422 naming the field; a rack budget of 1 lets only one of
# three failing nodes of a rack out at a time, and all come back; the policy's dry run records
# decisions and holds nothing; with a small breaker, a correlated failure in one rack opens
# rack.<r> and later decisions are suppressed until `fleetplane health breaker reset`.
#
# The XID line is real: tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log (its
# SOURCES.md names the issue thread), taken into each report's "raw" as it is.
. "$(dirname "$0")/lib.sh"
OUT="$WORK/out"
mkdir -p "$OUT"

XID79=$(grep -m1 -F 'NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus' \
	"$ROOT/tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log")
assert_eq "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus" "$XID79" "XID 79 line in tests/data"

# report_json ID [JOB]: a report with one kernel event (the XID 79 line) of id ID.
report_json() {
	jq -cn --arg id "$1" --arg raw "$XID79" --arg job "${2:-}" '
	{agent: {version: "0.4.0", bootId: "b-test", intervalSeconds: 30},
	 detectors: [{name: "kernel", live: true, status: "unhealthy"},
	             {name: "nvml", live: false, status: "unknown", reason: "NotConfigured",
	              message: "libnvidia-ml.so.1 not found"}],
	 events: [{id: $id, source: "kernel", code: "xid:79",
	           gpu: {pciBusId: "0000:44:00.0"},
	           time: "2026-11-30T10:00:00.123Z", message: "GPU has fallen off the bus",
	           raw: $raw} + (if $job == "" then {} else {job: $job} end)]}'
}

# body_of RESPONSE: the body of an `api` answer (its second line on).
body_of() { sed -n '2,$p' <<<"$1"; }
code_of() { head -n1 <<<"$1"; }

# node_json NAME
node_json() { "$FP" node get "$1" -o json; }

# wait_healed NODE SECONDS: waits until NODE is available with no holds and a remediation
# history entry; prints the phases it saw on the way (one per change) into $OUT/phases.NODE.
wait_healed() {
	local n=$1 secs=$2 i doc ph last=""
	for i in $(seq 1 $((secs * 5))); do
		doc=$(node_json "$n")
		ph=$(jq -r '.status.phase' <<<"$doc")
		[ "$ph" != "$last" ] && echo "$ph" >>"$OUT/phases.$n" && last=$ph
		if [ "$ph" = available ] && [ "$(jq '.status.holds | length' <<<"$doc")" = 0 ] &&
			[ "$(jq '.status.remediationHistory // [] | length' <<<"$doc")" != 0 ]; then
			return 0
		fi
		kill -0 "$SERVE_PID" 2>/dev/null || fail "serve died while $n healed"
		sleep 0.2
	done
	echo "$doc" | keep "stuck-$n"
	fail "$n did not come back to available within $secs s (phase $ph)"
}

start_serve "$WORK/d" --sim 16 --sim-speed 100
wait_phase available 16 120

AGENT=$("$FP" token create --role agent --node r01n01 --name agent-r01n01 | tail -n 1)

# ---- one XID 79: hold, reboot rung, validating, back to available ----------------------------
R=$(api POST /v1/nodes/r01n01:report "$(report_json k-xid79-1)" "$AGENT")
assert_eq 200 "$(code_of "$R")" "report: $(body_of "$R")"
assert_eq "1 0" "$(body_of "$R" | jq -r '"\(.accepted) \(.duplicates)"')" "accepted, duplicates"
assert_eq "k-xid79-1 hold false" "$(body_of "$R" | jq -r '.decisions[0] | "\(.event) \(.action) \(.dryRun)"')" "decision"
# The event is stored once, under <node>.<id>, with its decision and the raw line.
R=$(api GET /v1/healthevents/r01n01.k-xid79-1)
assert_eq 200 "$(code_of "$R")" "health event get"
assert_eq "r01n01 kernel xid:79 hold" "$(body_of "$R" | jq -r '"\(.node) \(.source) \(.code) \(.decision.action)"')" "stored event"
assert_eq "$XID79" "$(body_of "$R" | jq -r .raw)" "stored raw line"
wait_healed r01n01 120
D=$(node_json r01n01)
assert_eq "xid:79 reboot succeeded" "$(jq -r '.status.remediationHistory[0] | "\(.code) \(.rung) \(.result)"' <<<"$D")" "remediation history"
assert_eq "" "$(jq -r '.status.holds[] | select(.owner == "health") | .owner' <<<"$D")" "health hold released"
assert_eq "null" "$(jq -c '.status.remediation' <<<"$D")" "remediation cleared"
assert_eq "True" "$(cond r01n01 GPUHealthy | cut -d' ' -f1)" "GPUHealthy after validation"
# Leaving repairing went through validating: a reboot operation, then a validate operation.
OPS=$("$FP" op list --node r01n01 -o json | jq -r '[.items[] | select(.spec.kind == "reboot" or .spec.kind == "validate") | .spec.kind + " " + .status.state] | join(",")')
case "$OPS" in
*"reboot succeeded"*"validate succeeded"* | *"validate succeeded"*"reboot succeeded"*) ;;
*) fail "r01n01 operations: expected a succeeded reboot and a succeeded validate, got [$OPS]" ;;
esac
grep -qx repairing "$OUT/phases.r01n01" || grep -qx validating "$OUT/phases.r01n01" ||
	echo "note: the remediation finished between two polls" >&2
"$FP" health events --node r01n01 | keep events-table
assert_eq "xid:79" "$("$FP" health events --node r01n01 -o json | jq -r '.items[0].code')" "health events -o json"

# ---- the same report again: a duplicate, nothing new -----------------------------------------
R=$(api POST /v1/nodes/r01n01:report "$(report_json k-xid79-1)" "$AGENT")
assert_eq 200 "$(code_of "$R")" "repeat report"
assert_eq "0 1" "$(body_of "$R" | jq -r '"\(.accepted) \(.duplicates)"')" "repeat: accepted, duplicates"
assert_eq 1 "$("$FP" health events --node r01n01 -o json | jq '.items | length')" "one stored event"
assert_eq "available 0" "$(node_json r01n01 | jq -r '"\(.status.phase) \(.status.holds | length)"')" "no new hold"

# ---- scoping and bad bodies ------------------------------------------------------------------
R=$(api POST /v1/nodes/r01n02:report "$(report_json k-other)" "$AGENT")
assert_eq 403 "$(code_of "$R")" "agent token of r01n01 reporting for r01n02"
R=$(api POST /v1/nodes/r01n01:report '{"agent":{"version":"0.4.0"},"detectors":[],"events":[],"color":"red"}' "$AGENT")
assert_eq "422 color" "$(code_of "$R") $(body_of "$R" | jq -r .field)" "unknown top-level field"
R=$(api POST /v1/nodes/r01n01:report "$(report_json k-bad | jq -c '.events[0].code = "XID79"')" "$AGENT")
assert_eq "422 events[0].code" "$(code_of "$R") $(body_of "$R" | jq -r .field)" "bad code"
R=$(api POST /v1/nodes/r01n01:report "$(report_json 'k bad' )" "$AGENT")
assert_eq "422 events[0].id" "$(code_of "$R") $(body_of "$R" | jq -r .field)" "bad event id"
R=$(api POST /v1/nodes/r01n01:report "$(report_json k-many | jq -c '.events = [range(0;257) as $i | .events[0] | .id = "k-\($i)"]')" "$AGENT")
assert_eq "422 events" "$(code_of "$R") $(body_of "$R" | jq -r .field)" "257 events"
R=$(api POST /v1/nodes/r01n01:report '[1]' "$AGENT")
assert_eq 400 "$(code_of "$R")" "not an object"
assert_eq 1 "$("$FP" health events --node r01n01 -o json | jq '.items | length')" "bad reports wrote nothing"

# ---- budget: a rack may have one node out; three fail at once ---------------------------------
"$FP" health policy set --breaker=false >/dev/null
"$FP" health budget set rack-1 --domain rack --max-unavailable 1 | keep budget-set
for n in r02n01 r02n02 r02n03; do
	R=$(api POST "/v1/nodes/$n:report" "$(report_json "k-$n")")
	assert_eq "200 hold" "$(code_of "$R") $(body_of "$R" | jq -r '.decisions[0].action')" "report $n"
done
maxout=0
for i in $(seq 1 900); do
	L=$("$FP" node list -o json)
	out=$(jq '[.items[] | select(.spec.rack == "r02" and (.status.phase | IN("draining","maintenance","repairing","validating","failed")))] | length' <<<"$L")
	[ "$out" -gt "$maxout" ] && maxout=$out
	[ "$out" -le 1 ] || { echo "$L" | keep over-budget; fail "rack r02 had $out nodes out (budget 1)"; }
	healed=$(jq '[.items[] | select((.metadata.name | IN("r02n01","r02n02","r02n03")) and .status.phase == "available" and (.status.holds | length) == 0 and ((.status.remediationHistory // []) | length) > 0)] | length' <<<"$L")
	[ "$healed" = 3 ] && break
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve died in the budget scenario"
	sleep 0.2
done
assert_eq 3 "$healed" "r02n01..03 all healed under the budget"
assert_eq 1 "$maxout" "at most (and at some point exactly) one node of r02 out"
# (unavailable may still be 1 here: an admitted node stays reserved for 30 s, docs/api.md)
assert_eq "r02 8 1 []" "$("$FP" health budget get rack-1 -o json | jq -c -r '.status.domains[] | select(.value == "r02") | "\(.value) \(.nodes) \(.max) \(.waiting)"')" "budget status after"
"$FP" health budget list | keep budget-list

# ---- dry run: the decision is recorded, no hold -------------------------------------------------
"$FP" health policy set --dry-run=true | keep policy-dry
R=$(api POST /v1/nodes/r01n03:report "$(report_json k-dry)")
assert_eq "200 hold true" "$(code_of "$R") $(body_of "$R" | jq -r '.decisions[0] | "\(.action) \(.dryRun)"')" "dry-run decision"
assert_eq "available 0" "$(node_json r01n03 | jq -r '"\(.status.phase) \(.status.holds | length)"')" "dry run holds nothing"
assert_eq "true" "$("$FP" health events --node r01n03 -o json | jq -r '.items[0].decision.dryRun')" "dry run recorded"
"$FP" health policy set --dry-run=false >/dev/null
"$FP" health policy | keep policy-table
stop_serve

# ---- breaker: a fresh fleet, at most 2 nodes of a rack within an hour --------------------------
start_serve "$WORK/b" --sim 8 --sim-speed 100
wait_phase available 8 120
printf '%s\n' '{"spec":{"breaker":{"enabled":true,"maxNodes":2,"windowSeconds":3600,"domains":["rack"]}}}' >"$WORK/policy.json"
"$FP" health policy apply -f "$WORK/policy.json" | keep policy-apply
acts=""
for n in r01n01 r01n02 r01n03 r01n04; do
	R=$(api POST "/v1/nodes/$n:report" "$(report_json "k-$n")")
	assert_eq 200 "$(code_of "$R")" "report $n"
	acts="$acts $(body_of "$R" | jq -r '.decisions[0].action')"
done
assert_eq " hold hold suppressed suppressed" "$acts" "decisions before and after the breaker opened"
assert_eq "rack.r01 open" "$("$FP" health breaker list -o json | jq -r '.items[] | "\(.metadata.name) \(.state)"')" "breaker listed"
"$FP" health breaker list | keep breaker-table
for n in r01n03 r01n04; do
	assert_eq "" "$(node_json "$n" | jq -r '.status.holds[] | select(.owner == "health") | .owner')" "$n not held while the breaker is open"
done
assert_eq "True BreakerOpen" "$(cond r01n03 HealthActionsSuppressed)" "HealthActionsSuppressed"
[ "$("$FP" event list -o json | jq '[.items[] | select(.reason == "CorrelatedFailureBreakerOpen")] | length')" = 1 ] ||
	fail "expected one CorrelatedFailureBreakerOpen event"
set +e
"$FP" health breaker reset rack.r01 2>"$OUT/reset-noreason.err"
rc=$?
set -e
assert_eq 2 "$rc" "reset without --reason"
"$FP" health breaker reset rack.r01 --reason "shared PDU replaced" | keep breaker-reset
assert_eq 0 "$("$FP" health breaker list -o json | jq '.items | length')" "breaker closed"
[ "$("$FP" event list -o json | jq '[.items[] | select(.reason == "BreakerReset")] | length')" = 1 ] ||
	fail "expected one BreakerReset audit event"
R=$(api POST /v1/breakers/rack.r01:reset '{"reason":"again"}')
assert_eq 404 "$(code_of "$R")" "reset of a closed breaker"

# ---- metrics and the CLI's usage errors ------------------------------------------------------
curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics" | grep '^fleetplane_nodes_held' | keep metrics
grep -hq '^fleetplane_nodes_held{owner="health"} ' "$OUT"/metrics.* || fail "fleetplane_nodes_held{owner=health} missing"
set +e
"$FP" health budget set x --domain rack --max-unavailable 10x 2>"$OUT/usage.err"
assert_eq 2 "$?" "bad --max-unavailable"
"$FP" health policy set --dry-run=maybe 2>>"$OUT/usage.err"
assert_eq 2 "$?" "bad --dry-run"
set -e
grep -q "flag '--dry-run' needs true or false, got 'maybe'" "$OUT/usage.err" || fail "usage message"
! grep -rq "$AGENT" "$OUT" "$WORK"/d/serve.log "$WORK"/b/serve.log || fail "agent token leaked"
echo "ok $TEST_NAME"
