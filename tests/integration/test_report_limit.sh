#!/usr/bin/env bash
# test_report_limit.sh - the per-node limit on agent reports (docs/api.md "Report rate limit";
# break report 4b #1/#3) against the real binary: serve --report-rate 0.01 --report-burst 2
# --report-events 1 (one report token per 100 s, so no refill can land inside the test; the
# events bucket holds its minimum, 256 events, and refills one a minute).
# - node r01n01: 2 reports pass, the 3rd is 429 with Retry-After and a problem naming the
#   "reports" limit; another node is not affected.
# - node r01n02: a report of 256 events passes, the next with one event is 429 "events", and
#   nothing of it is stored.
# - node r01n03: its report bucket used up, `fleetplane agent --once` with a real XID 79 line
#   gets 429, exits 1 and keeps the report in its outbox (docs/agent.md "Exit codes"); nothing is stored. Serve restarted
#   with the default limits (the limiter lives in memory), the same command sends the kept
#   report: the event is stored once.
# The XID 79 line is real: tests/data/agent/xid79-nvsentinel-155.log (its SOURCES.md).
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
start_serve "$D" --sim 8 --sim-speed 100 --report-rate 0.01 --report-burst 2 --report-events 1
grep -q "msg=\"api report limit per node and per token (negative = off)\" reports_per_s=0.01 burst=2 events_per_min=1 events_burst=256$" "$D/serve.log" ||
	fail "serve.log does not show the report limit"

body_of() { sed -n '2,$p' <<<"$1"; }
code_of() { head -n1 <<<"$1"; }
# headers_of NODE BODY TOKEN: the response headers and body of one report, with curl -i.
report_i() {
	curl -s -i -X POST -H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
		--data-binary "$2" "$FLEETPLANE_URL/v1/nodes/$1:report"
}
HB='{"agent":{"version":"0.4.0","bootId":"b-test","intervalSeconds":30},"detectors":[],"events":[]}'

# ---- r01n01: reports ---------------------------------------------------------------------
A1=$("$FP" token create --role agent --node r01n01 --name agent-r01n01 | tail -n 1)
assert_eq 200 "$(code_of "$(api POST /v1/nodes/r01n01:report "$HB" "$A1")")" "1st report"
assert_eq 200 "$(code_of "$(api POST /v1/nodes/r01n01:report "$HB" "$A1")")" "2nd report"
OUT=$(report_i r01n01 "$HB" "$A1" | tr -d '\r')
assert_eq "HTTP/1.1 429 Too Many Requests" "$(head -n1 <<<"$OUT")" "3rd report status"
RA=$(sed -n 's/^Retry-After: //Ip' <<<"$OUT")
[ -n "$RA" ] && [ "$RA" -ge 1 ] && [ "$RA" -le 100 ] || fail "Retry-After [$RA] is not 1..100 s"
assert_eq "Content-Type: application/problem+json" "$(grep -i '^Content-Type:' <<<"$OUT")" "content type"
PJ=$(sed -n '/^{/,$p' <<<"$OUT")
assert_eq "429 Too Many Requests rate-limited reports $RA" \
	"$(jq -r '"\(.status) \(.title) \(.type | ltrimstr("https://fleetplane.dev/problems/")) \(.limit) \(.retryAfterSeconds)"' <<<"$PJ")" "problem"
assert_eq "node r01n01: report rate limit: reports: 0.01 per second (at most 2 at once); retry after $RA s; nothing of this report was recorded" \
	"$(jq -r .detail <<<"$PJ")" "problem detail"
# the admin token is limited the same way for that node, and another node is not
assert_eq 429 "$(code_of "$(api POST /v1/nodes/r01n01:report "$HB")")" "admin report for r01n01"
assert_eq 200 "$(code_of "$(api POST /v1/nodes/r01n04:report "$HB")")" "admin report for r01n04"
# ... but the admin token has buckets of its own too (issue 16 item 12): its 2nd report (to
# another node still) fits the burst of 2, the 3rd is over the token's limit
assert_eq 200 "$(code_of "$(api POST /v1/nodes/r01n05:report "$HB")")" "admin report for r01n05"
R=$(api POST /v1/nodes/r01n06:report "$HB")
assert_eq "429 token reports" "$(code_of "$R") $(body_of "$R" | jq -r '"\(.scope) \(.limit)"')" "admin token over its own limit"
S=$(body_of "$R" | jq -r .retryAfterSeconds)
assert_eq "token admin: report rate limit: reports: 0.01 per second (at most 2 at once); retry after $S s; nothing of this report was recorded" \
	"$(body_of "$R" | jq -r .detail)" "token limit detail"

# ---- r01n02: events ----------------------------------------------------------------------
A2=$("$FP" token create --role agent --node r01n02 --name agent-r01n02 | tail -n 1)
XID79=$(grep -m1 -F 'NVRM: Xid' "$ROOT/tests/data/agent/xid79-nvsentinel-155.log")
# 256 AER correctable events (count rule, never a hold) with ids e-0..e-255
B256=$(jq -cn '{agent: {version: "0.4.0", bootId: "b-test", intervalSeconds: 30}, detectors: [],
	events: [range(0; 256) | {id: "e-\(.)", source: "kernel", code: "aer:correctable",
	                          gpu: {pciBusId: "0000:3b:00.0"}, message: "corrected error"}]}')
R=$(api POST /v1/nodes/r01n02:report "$B256" "$A2")
assert_eq "200 256 0" "$(code_of "$R") $(body_of "$R" | jq -r '"\(.accepted) \(.duplicates)"')" "256 events"
B1=$(jq -cn --arg raw "$XID79" '{agent: {version: "0.4.0", bootId: "b-test", intervalSeconds: 30},
	detectors: [], events: [{id: "x-1", source: "kernel", code: "xid:79", message: "GPU has fallen off the bus", raw: $raw}]}')
R=$(api POST /v1/nodes/r01n02:report "$B1" "$A2")
assert_eq 429 "$(code_of "$R")" "report of 1 event after 256"
assert_eq "events" "$(body_of "$R" | jq -r .limit)" "limit named"
S=$(body_of "$R" | jq -r .retryAfterSeconds)
assert_eq "node r01n02: report rate limit: events: 1 per minute (at most 256 at once); this report has 1 events and 0 are left; retry after $S s; nothing of this report was recorded" \
	"$(body_of "$R" | jq -r .detail)" "events problem detail"
R=$(api GET /v1/healthevents/r01n02.x-1)
assert_eq 404 "$(code_of "$R")" "the refused event is not stored"
assert_eq 256 "$("$FP" health events --node r01n02 --limit 0 -o json | jq '.items | length')" "events of r01n02"

# every 429 so far is counted: r01n01 (the agent, then the admin), the admin token, r01n02
assert_eq 4 "$(api GET /metrics | sed -n 's/^fleetplane_agent_reports_refused_total{reason="rate_limited"} //p')" "refused reports counted"

# ---- r01n03: the agent keeps a refused report and sends it later ---------------------------
A3=$("$FP" token create --role agent --node r01n03 --name agent-r01n03 | tail -n 1)
assert_eq 200 "$(code_of "$(api POST /v1/nodes/r01n03:report "$HB" "$A3")")" "r01n03 1st"
assert_eq 200 "$(code_of "$(api POST /v1/nodes/r01n03:report "$HB" "$A3")")" "r01n03 2nd"
agent3() {
	set +e
	FLEETPLANE_TOKEN=$A3 "$FP" agent --node r01n03 --kernel-log "$ROOT/tests/data/agent/xid79-nvsentinel-155.log" \
		--once --state-dir "$WORK/s3" --boot-id boot-1 >"$WORK/agent.out" 2>"$WORK/agent.err"
	RC=$?
	set -e
}
agent3
assert_eq 1 "$RC" "agent --once on 429: exit code ($(tail -n 3 "$WORK/agent.err"))"
grep -q "msg=\"agent report kept for a retry\" node=r01n03 seq=1 status=429" "$WORK/agent.err" ||
	fail "the agent did not log the kept report: $(cat "$WORK/agent.err")"
assert_eq 1 "$(ls "$WORK/s3/outbox" | grep -c '\.json$')" "outbox files after the 429"
assert_eq 0 "$("$FP" health events --node r01n03 --limit 0 -o json | jq '.items | length')" "events of r01n03 after the 429"
stop_serve
start_serve "$D" --sim-speed 100
agent3
assert_eq 0 "$RC" "agent --once after the restart: exit code ($(tail -n 3 "$WORK/agent.err"))"
assert_eq 0 "$(ls "$WORK/s3/outbox" | grep -c '\.json$' || true)" "outbox files after the resend"
assert_eq "xid:79" "$("$FP" health events --node r01n03 --limit 0 -o json | jq -r '[.items[].code] | join(" ")')" "events of r01n03 after the resend"
echo "ok"
