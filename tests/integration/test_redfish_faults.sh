#!/usr/bin/env bash
# Redfish fault knobs as an operator sees them on a node. Four Redfish test servers
# (tests/peers/redfish/server.py over the DMTF public-rackmount1 mockup, each log line stamped
# with the server's time), one node on each, onboarded to available; then serve runs with
# --bmc-timeout 2 --bmc-breaker-failures 3 and each server gets one fault:
#   slow   delay_ms 3000 (past the 2 s call deadline): `node power rf-slow cycle --wait` fails
#          after its 3 attempts (not stuck); BMCReachable went False Timeout, then - the third
#          timeout in a row - False CircuitOpen with one Warning event BMCUnreachable; fast
#          again: `node power rf-slow status --wait` is the breaker's probe, which answers:
#          BMCReachable True Answered and one Normal event BMCReachable.
#   busy   503 + Retry-After: 3 (past the deadline, so the driver does not wait itself): the
#          power off waits and then succeeds; its lastError while waiting says Retry-After;
#          the server's next request comes 3 s after the 503 or later.
#   sess   session limit reached (and the live session dropped): the power off still succeeds
#          over basic auth (documented fallback), one warn line in serve's log, BMCReachable
#          True; once the BMC has room again the next operation makes a session.
#   close  Connection: close on every response: power off, on and cycle succeed, on the one
#          session; the cycle is sent exactly once.
# PowerState missing and disagreeing System/Chassis are covered in test_redfish.sh.
# A firmware task that never finishes (task_never_finishes) has no node-level operation yet
# (UpdateService SimpleUpdate is a driver primitive only; staged rollouts come later): it is
# covered by the driver-level test in tests/unit/test_bmc_redfish.c.
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
SYS=/redfish/v1/Systems/437XR1138R2
RESET="POST $SYS/Actions/ComputerSystem.Reset"
BG=() # background CLI runs, stopped on exit like the peers
at_exit() {
	local p
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
}
log_len() { wc -l <"$WORK/$1.log"; }
log_since() { # log_since NAME N: the server's log lines after line N, without the time stamp
	tail -n +$(($2 + 1)) "$WORK/$1.log" | cut -d' ' -f2-
}
count() { grep -c -x -F -- "$1" || true; } # count LINE: exact lines on stdin equal to LINE
events() { # events NODE REASON: "type reason message" of the node's events with that reason
	"$FP" event list --object "node/$1" -o json |
		jq -r --arg r "$2" '.items[] | select(.reason == $r) | "\(.type) \(.reason) \(.message)"'
}
rv() { api GET '/v1/nodes?limit=1' | tail -n +2 | jq -r .metadata.resourceVersion; }
# history PATH-AND-QUERY RV STOP-JQ: every line of a watch from revision RV, up to and including
# the first line for which STOP-JQ is true (the stream itself never ends).
history() {
	local f pid q="((${3})? // false)"
	f=$(mktemp "$WORK/watch.XXXXXX")
	curl -s -N -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
		"$FLEETPLANE_URL$1&watch=1&resourceVersion=$2" >"$f" &
	pid=$!
	for _ in $(seq 1 300); do
		cp "$f" "$f.seen" # what has arrived so far (the stream may be mid-line)
		jq -e -n "[inputs | select($q)] | length > 0" "$f.seen" >/dev/null 2>&1 && break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	jq -e -n "[inputs | select($q)] | length > 0" "$f.seen" >/dev/null || fail "watch $1 from $2: no line with $3"
	jq -c -n "[inputs] | (map($q) | index(true)) as \$i | .[:\$i + 1][]" "$f.seen"
}
ms() { sed -E 's/[0-9]+ ms/N ms/g'; } # numbers of milliseconds vary: compare the words

NODES=(slow busy sess close)
for p in "${NODES[@]}"; do start_redfish "$p" public-rackmount1 stamped; done

start_serve "$D" --bmc-timeout 2 --bmc-breaker-failures 3
items='[]'
for p in "${NODES[@]}"; do
	redfish_callback "$p" "rf-$p"
	items=$(jq -c --arg n "rf-$p" --arg u "$(redfish_url "$p")" --rawfile pw "$WORK/$p.pw" \
		'. + [{metadata: {name: $n}, spec: {site: "it-a", bmc: {driver: "redfish", address: $u,
		 username: "admin", password: ($pw | rtrimstr("\n"))}}}]' <<<"$items")
done
jq -n --argjson i "$items" '{items: $i}' >"$WORK/enroll.json"
"$FP" node enroll -f "$WORK/enroll.json" >/dev/null
wait_phase available 4 60
for p in "${NODES[@]}"; do
	assert_eq "True Answered" "$(cond "rf-$p" BMCReachable)" "rf-$p BMCReachable once available"
done

# ---- slow: every response 3 s, the call deadline 2 s. Runs in the background meanwhile.
RV_SLOW=$(rv)
redfish_control slow '{"delay_ms": 3000}'
("$FP" node power rf-slow cycle --wait >"$WORK/slow.out" 2>&1 && echo 0 >"$WORK/slow.rc" || echo $? >"$WORK/slow.rc") &
BG+=($!)

# ---- busy: the next request gets 503 + Retry-After: 3.
RV_BUSY=$(rv)
redfish_control busy '{"busy": {"count": 1, "retry_after": 3}}'
n0=$(log_len busy)
out=$("$FP" node power rf-busy off --wait --force 2>&1) && st=0 || st=$?
assert_eq "0 off" "$st $(echo "$out" | tail -1)" "node power rf-busy off --wait after a 503 + Retry-After"
op=$(echo "$out" | head -1 | sed -n 's/^power off requested for rf-busy: operation \([^ ]*\)$/\1/p')
[ -n "$op" ] || fail "rf-busy: no operation id in [$out]"
assert_eq Off "$(redfish_power busy "$SYS")" "busy System PowerState after power off"
log_since busy "$n0" >"$WORK/busy.after"
# (the server answers busy before it looks at credentials: auth=none)
assert_eq "GET $SYS 503 auth=none" "$(head -1 "$WORK/busy.after")" "busy: the first request of the power off"
assert_eq 1 "$(count "$RESET 204 auth=session ResetType=ForceOff" <"$WORK/busy.after")" "busy: ForceOff Resets"
# The server's time stamps: the request after the 503 came no sooner than Retry-After allows.
# The 503 is logged before it is sent and the next request after it arrives; the controller
# counts whole milliseconds (CLOCK_MONOTONIC truncated), so "3000 ms after the answer" is
# more than 2.999 s after it on the server's clock.
gap=$(tail -n +$((n0 + 1)) "$WORK/busy.log" | awk 'NR == 1 { t = $1 } NR == 2 { printf "%.6f", $1 - t }')
awk -v g="$gap" 'BEGIN { exit !(g > 2.999) }' ||
	fail "busy: the request after the 503 came ${gap} s later, inside the 3 s Retry-After window"
# The operation's history: while it waited, its lastError said why.
history "/v1/operations?node=rf-busy" "$RV_BUSY" '.object.metadata.name == "'"$op"'" and .object.status.state == "succeeded"' >"$WORK/busy.ops"
assert_eq "power status: the BMC asked to wait 3000 ms (Retry-After)" \
	"$(jq -r 'select(.object.status.lastError != null) | .object.status.lastError' "$WORK/busy.ops" | sort -u)" \
	"rf-busy power off: lastError while waiting"
assert_eq "True Answered" "$(cond rf-busy BMCReachable)" "rf-busy BMCReachable after the Retry-After wait (a 503 is an answer)"
assert_eq "False BMCReportsOff" "$(cond rf-busy PoweredOn)" "rf-busy PoweredOn after power off"

# ---- sess: no room for a session (and the live one dropped): basic auth.
redfish_control sess '{"session_limit": true, "drop_sessions": true}'
n0=$(log_len sess)
out=$("$FP" node power rf-sess off --wait --force 2>&1) && st=0 || st=$?
assert_eq "0 off" "$st $(echo "$out" | tail -1)" "node power rf-sess off --wait with the session limit reached"
assert_eq Off "$(redfish_power sess "$SYS")" "sess System PowerState after power off"
log_since sess "$n0" >"$WORK/sess.after"
assert_eq "GET $SYS 401 auth=badtoken" "$(head -1 "$WORK/sess.after")" "sess: the first request used the dropped session"
assert_eq 1 "$(count "$RESET 204 auth=basic ResetType=ForceOff" <"$WORK/sess.after")" "sess: ForceOff Resets over basic auth"
assert_eq 0 "$(grep -c ' auth=session' "$WORK/sess.after" || true)" "sess: requests with a session while none could be made"
assert_eq 0 "$(grep -c '^POST /redfish/v1/SessionService/Sessions 201 ' "$WORK/sess.after" || true)" "sess: sessions made while the limit was reached"
assert_eq 1 "$(grep -c -F "level=warn msg=\"redfish: session limit reached, using basic auth until a session can be made\" bmc=$(redfish_url sess) user=admin" "$D/serve.log" || true)" \
	"sess: warn lines in serve.log"
assert_eq "True Answered" "$(cond rf-sess BMCReachable)" "rf-sess BMCReachable over basic auth"
assert_eq "False BMCReportsOff" "$(cond rf-sess PoweredOn)" "rf-sess PoweredOn after power off"
redfish_control sess '{"session_limit": false}'
n0=$(log_len sess)
out=$("$FP" node power rf-sess on --wait 2>&1) && st=0 || st=$?
assert_eq "0 on" "$st $(echo "$out" | tail -1)" "node power rf-sess on --wait once the BMC has room"
log_since sess "$n0" >"$WORK/sess.after2"
assert_eq 1 "$(grep -c '^POST /redfish/v1/SessionService/Sessions 201 ' "$WORK/sess.after2" || true)" "sess: sessions made once there is room"
assert_eq 1 "$(count "$RESET 204 auth=session ResetType=On" <"$WORK/sess.after2")" "sess: On Resets with the new session"
assert_eq 0 "$(grep -c ' auth=basic' "$WORK/sess.after2" || true)" "sess: basic-auth requests once a session could be made"

# ---- close: the server closes the connection after every response.
redfish_control close '{"conn_close": true}'
n0=$(log_len close)
out=$("$FP" node power rf-close off --wait --force 2>&1) && st=0 || st=$?
assert_eq "0 off" "$st $(echo "$out" | tail -1)" "node power rf-close off --wait with Connection: close"
out=$("$FP" node power rf-close on --wait 2>&1) && st=0 || st=$?
assert_eq "0 on" "$st $(echo "$out" | tail -1)" "node power rf-close on --wait with Connection: close"
out=$("$FP" node power rf-close cycle --wait 2>&1) && st=0 || st=$?
assert_eq "0 on" "$st $(echo "$out" | tail -1)" "node power rf-close cycle --wait with Connection: close"
log_since close "$n0" >"$WORK/close.after"
assert_eq 1 "$(count "$RESET 204 auth=session ResetType=ForceOff" <"$WORK/close.after")" "close: ForceOff Resets"
assert_eq 1 "$(count "$RESET 204 auth=session ResetType=On" <"$WORK/close.after")" "close: On Resets"
# one cycle sent, once (a re-run from a lagging copy of the operation used to send it again)
assert_eq 1 "$(count "$RESET 204 auth=session ResetType=ForceRestart" <"$WORK/close.after")" "close: ForceRestart Resets of one power cycle"
assert_eq 0 "$(grep -c 'could not record a sent power action' "$D/serve.log" || true)" "serve.log warnings of an unrecorded power action"
assert_eq 0 "$(grep -c '^POST /redfish/v1/SessionService/Sessions ' "$WORK/close.after" || true)" "close: logins (the session outlives the connections)"
assert_eq On "$(redfish_power close "$SYS")" "close System PowerState after power on"
assert_eq "True Answered" "$(cond rf-close BMCReachable)" "rf-close BMCReachable with Connection: close"
assert_eq "True BMCReportsOn" "$(cond rf-close PoweredOn)" "rf-close PoweredOn after power on"

# ---- slow, continued: 3 attempts of 2 s with backoffs of 1 and 2 s, then failed.
wait "${BG[0]}"
BG=()
assert_eq 1 "$(cat "$WORK/slow.rc")" "node power rf-slow cycle --wait exit status with 3 s responses"
slow_op=$(head -1 "$WORK/slow.out" | sed -n 's/^power cycle requested for rf-slow: operation \([^ ]*\)$/\1/p')
[ -n "$slow_op" ] || fail "rf-slow: no operation id in [$(cat "$WORK/slow.out")]"
assert_eq "error: operation $slow_op failed: step power_cycle attempt 3: power cycle: GET $SYS: no answer within N ms (deadline)" \
	"$(tail -1 "$WORK/slow.out" | ms)" "node power rf-slow cycle --wait last line"
assert_eq "False CircuitOpen" "$(cond rf-slow BMCReachable)" "rf-slow BMCReachable after 3 timeouts in a row"
history "/v1/nodes?limit=500" "$RV_SLOW" '.object.metadata.name == "rf-slow" and ([.object.status.conditions[] | select(.type == "BMCReachable" and .reason == "CircuitOpen")] | length > 0)' >"$WORK/slow.nodes"
assert_eq "True Answered,False Timeout,False CircuitOpen" \
	"$(jq -r 'select(.object.metadata.name == "rf-slow") | .object.status.conditions[] | select(.type == "BMCReachable") | "\(.status) \(.reason)"' "$WORK/slow.nodes" | uniq | paste -sd,)" \
	"rf-slow BMCReachable as it changed"
SLOW_URL=$(redfish_url slow)
assert_eq "Warning BMCUnreachable BMC $SLOW_URL: circuit open after repeated timeouts or connection failures (last: power cycle: GET $SYS: no answer within N ms (deadline)); calls paused until a probe answers" \
	"$(events rf-slow BMCUnreachable | ms)" "rf-slow BMCUnreachable events"
assert_eq "" "$(events rf-slow BMCReachable)" "rf-slow BMCReachable events while the circuit is open"

# Fast again: the status read is the breaker's probe (it waits for it, or - when the
# scenarios above took longer than the 5-6 s backoff - the probe is already due), which answers.
redfish_control slow '{"delay_ms": 0}'
out=$("$FP" node power rf-slow status --wait 2>&1) && st=0 || st=$?
assert_eq "0 on" "$st $out" "node power rf-slow status once the BMC is fast again"
assert_eq "True Answered" "$(cond rf-slow BMCReachable)" "rf-slow BMCReachable after the probe answered"
assert_eq "Normal BMCReachable BMC $SLOW_URL answers again; circuit closed" "$(events rf-slow BMCReachable)" "rf-slow BMCReachable events"
assert_eq 1 "$(events rf-slow BMCUnreachable | wc -l)" "rf-slow BMCUnreachable events after the circuit closed"

# No password anywhere: serve's log, the servers' logs, argv.
ps -eo args >"$WORK/ps.end"
stop_serve
for p in "${NODES[@]}"; do
	pw=$(cat "$WORK/$p.pw")
	hits=$(grep -l -F -- "$pw" "$D/serve.log" "$WORK"/*.log "$WORK/ps.end" "$WORK"/watch.* || true)
	[ -z "$hits" ] || fail "the BMC password of $p appears in: $hits"
done
if [ "${FP_SAN:-0}" = 1 ] && grep -E 'Sanitizer|runtime error:' "$D/serve.log"; then
	fail "sanitizer report in serve.log"
fi
echo "ok test_redfish_faults"
