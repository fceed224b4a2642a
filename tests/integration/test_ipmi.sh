#!/usr/bin/env bash
# IPMI nodes end to end: three OpenIPMI ipmi_sim BMCs (tests/peers/ipmi_sim/ipmisim.sh), one node
# on each, enrolled with driver "ipmi". Each BMC's chassis_control program plays the machine and,
# powered on with boot=pxe, calls :booted and :validated like a deploy agent (with that node's
# agent token, read from a header file). All three reach available; every machine saw
# "set boot pxe" before its first "set power 1"; the driver learned the open-session-privilege
# quirk (status.bmc.quirks); `node power NAME off|on --wait` changes the machine's power file and
# PoweredOn (off on an available node needs --force); `reset`, `soft` and `cycle` each send
# exactly one Chassis Control action (calls.log: one "set reset 1", one "set shutdown 1", one
# "set power 0" then "set power 1"); a reset of a machine that is off fails at once with nothing
# sent; a SIGSTOPped BMC makes a power cycle end failed (not stuck) with BMCReachable False.
# A fourth BMC, enrolled with a wrong password: one failed inspect, BMCReachable False
# AuthenticationFailed, and no other operation for at least a minute (the node parks instead of
# locking the account); `node retire --skip-power-off` then retires it without a BMC call
# (PoweredOn Unknown NotPoweredOff). The BMC passwords appear in no log, output or argv.
. "$(dirname "$0")/lib.sh"
san_skip "the IPMI driver runs under them in tests/peers test_bmc_ipmi against the same ipmi_sim; 71 s of BMC waits"
SIM="$ROOT/tests/peers/ipmi_sim/ipmisim.sh"
command -v ipmi_sim >/dev/null || { echo "skip test_ipmi: ipmi_sim is not installed"; exit 0; }
D="$WORK/d"
OUT="$WORK/out"
mkdir -p "$OUT"
NODES="ipmi-1 ipmi-2 ipmi-3"
BAD=ipmi-bad
at_exit() { # stops the ipmi_sim BMCs
	local n
	for n in $NODES $BAD; do bash "$SIM" stop "$WORK/$n" 2>/dev/null || true; done
}

for n in $NODES $BAD; do
	bash "$SIM" start "$WORK/$n" 2>&1 | keep "sim-$n"
done

start_serve "$D" --bmc-timeout 3 --bmc-breaker-failures 3

# The callback settings each machine's deploy agent reads; the agent token itself (a header in
# a file, never an argv) is made once the node is enrolled (a token names the node's uid).
for n in $NODES; do
	printf 'FP_URL=%s\nNODE=%s\nFP_AUTH_HEADER_FILE=%s\n' "$FLEETPLANE_URL" "$n" "$WORK/$n.hdr" \
		>"$WORK/$n/callback.env"
done

# Enroll through a file: the passwords are in no argv.
jq -n --arg p1 "$(cat "$WORK/ipmi-1/port")" --arg p2 "$(cat "$WORK/ipmi-2/port")" \
	--arg p3 "$(cat "$WORK/ipmi-3/port")" --rawfile w1 "$WORK/ipmi-1/password" \
	--rawfile w2 "$WORK/ipmi-2/password" --rawfile w3 "$WORK/ipmi-3/password" '
	def node(n; p; w): {metadata: {name: n}, spec: {site: "it-a", bmc: {driver: "ipmi",
		address: ("127.0.0.1:" + p), username: "admin", password: (w | rtrimstr("\n")),
		cipher_suite: 3}}};
	{items: [node("ipmi-1"; $p1; $w1), node("ipmi-2"; $p2; $w2), node("ipmi-3"; $p3; $w3)]}' \
	>"$WORK/enroll.json"
"$FP" node enroll -f "$WORK/enroll.json" 2>&1 | keep enroll
for n in $NODES; do
	tok=$("$FP" token create --name "agent-$n" --role agent --node "$n" 2>&1 | tail -1)
	(umask 077 && printf 'Authorization: Bearer %s\n' "$tok" >"$WORK/$n.hdr.tmp" &&
		mv "$WORK/$n.hdr.tmp" "$WORK/$n.hdr")
done
# The fourth node's password is wrong (the BMC has its own in $WORK/$BAD/password).
printf 'WrongPass-123' >"$WORK/bad-password"
jq -n --arg p "$(cat "$WORK/$BAD/port")" --rawfile w "$WORK/bad-password" '
	{metadata: {name: "ipmi-bad"}, spec: {site: "it-a", bmc: {driver: "ipmi",
		address: ("127.0.0.1:" + $p), username: "admin", password: $w, cipher_suite: 3}}}' \
	>"$WORK/enroll-bad.json"
"$FP" node enroll -f "$WORK/enroll-bad.json" 2>&1 | keep enroll-bad
BAD_T0=$(date +%s)
ps -eo args | keep ps-enrolled
wait_phase available 3 120

for n in $NODES; do
	boot=$(grep -n '^set boot pxe$' "$WORK/$n/calls.log" | head -1 | cut -d: -f1)
	on=$(grep -n '^set power 1$' "$WORK/$n/calls.log" | head -1 | cut -d: -f1)
	[ -n "$boot" ] || fail "$n: no 'set boot pxe' in calls.log"
	[ -n "$on" ] || fail "$n: no 'set power 1' in calls.log"
	[ "$boot" -lt "$on" ] || fail "$n: 'set boot pxe' (line $boot) after the first 'set power 1' (line $on)"
	assert_eq 2 "$(grep -c '^202$' "$WORK/$n/agent.log")" "$n: agent callbacks answered 202"
	assert_eq default "$(cat "$WORK/$n/boot")" "$n: boot device after the deploy agent ran"
	assert_eq 1 "$(cat "$WORK/$n/power")" "$n: machine power after provisioning"
	assert_eq "True" "$(cond "$n" PoweredOn | cut -d' ' -f1)" "$n PoweredOn after provisioning"
	assert_eq '["ipmi_open_session_privilege"]' \
		"$("$FP" node get "$n" -o json | jq -c '.status.bmc.quirks')" "$n status.bmc.quirks"
done

# off on an available node is refused (drain first) unless forced; nothing is sent.
calls() { wc -l <"$WORK/$1/calls.log"; }
mark=$(calls ipmi-1)
out=$("$FP" node power ipmi-1 off 2>&1) && st=0 || st=$?
assert_eq "1 error: Conflict: node ipmi-1 is available: power off would leave it available with the machine off; drain it first: fleetplane node drain ipmi-1, or pass force (HTTP 409)" \
	"$st $out" "node power ipmi-1 off on an available node"
assert_eq "$mark" "$(calls ipmi-1)" "ipmi-1 calls.log lines after a refused off"

# node power off / on --wait: the machine's power file follows, and PoweredOn with it.
out=$("$FP" node power ipmi-1 off --wait --force 2>&1) && st=0 || st=$?
echo "$out" | keep power-off
assert_eq "0 off" "$st $(echo "$out" | tail -1)" "exit status and last line of node power ipmi-1 off --wait"
assert_eq 0 "$(cat "$WORK/ipmi-1/power")" "ipmi-1 machine power after off"
assert_eq False "$(cond ipmi-1 PoweredOn | cut -d' ' -f1)" "ipmi-1 PoweredOn after off"
out=$("$FP" node power ipmi-1 on --wait 2>&1) && st=0 || st=$?
echo "$out" | keep power-on
assert_eq "0 on" "$st $(echo "$out" | tail -1)" "exit status and last line of node power ipmi-1 on --wait"
assert_eq 1 "$(cat "$WORK/ipmi-1/power")" "ipmi-1 machine power after on"
assert_eq True "$(cond ipmi-1 PoweredOn | cut -d' ' -f1)" "ipmi-1 PoweredOn after on"

# reset, soft, cycle: each sends its Chassis Control action exactly once (the "set" lines
# chassis_control logged while the command ran; "get power" reads are not actions).
sets_since() { tail -n +"$(($2 + 1))" "$WORK/$1/calls.log" | grep '^set ' | paste -sd, || true; }
power_once() { # power_once ACTION WANT_LAST_LINE WANT_SETS [FLAG...]
	local m out st a=$1 want=$2 sets=$3
	shift 3
	m=$(calls ipmi-1)
	out=$("$FP" node power ipmi-1 "$a" --wait "$@" 2>&1) && st=0 || st=$?
	echo "$out" | keep "power-$a"
	assert_eq "0 $want" "$st $(echo "$out" | tail -1)" "exit status and last line of node power ipmi-1 $a --wait"
	assert_eq "$sets" "$(sets_since ipmi-1 "$m")" "ipmi-1 actions sent for one $a"
}
power_once reset on "set reset 1"
power_once soft off "set shutdown 1" --force
assert_eq 0 "$(cat "$WORK/ipmi-1/power")" "ipmi-1 machine power after soft"
# a reset of a machine that is off does nothing (IPMI 2.0 section 28.3): refused, nothing sent
m=$(calls ipmi-1)
out=$("$FP" node power ipmi-1 reset --wait 2>&1) && st=0 || st=$?
echo "$out" | keep power-reset-off
assert_eq 1 "$st" "exit status of node power ipmi-1 reset --wait on a machine that is off"
echo "$out" | tail -1 | grep -q -F "failed: step power_reset attempt 1: the machine is off; a reset does nothing (IPMI 2.0 section 28.3 / Redfish ForceRestart); use on" ||
	fail "reset of an off machine: unexpected answer: $out"
assert_eq "" "$(sets_since ipmi-1 "$m")" "ipmi-1 actions sent for a reset of an off machine"
power_once on on "set power 1"
power_once cycle on "set power 0,set power 1"
assert_eq 1 "$(cat "$WORK/ipmi-1/power")" "ipmi-1 machine power after cycle"

# A BMC that stops answering: the cycle ends failed, not stuck, and BMCReachable is False.
kill -STOP "$(cat "$WORK/ipmi-3/pid")"
out=$("$FP" node power ipmi-3 cycle --wait --timeout 300 2>&1) && st=0 || st=$?
echo "$out" | keep power-cycle-stopped
assert_eq 1 "$st" "exit status of node power ipmi-3 cycle --wait against a stopped BMC"
opid=$(echo "$out" | head -1 | sed -n 's/^power cycle requested for ipmi-3: operation \(.*\)$/\1/p')
[ -n "$opid" ] || fail "no operation named in: $out"
state=$("$FP" op get "$opid" -o json | jq -r '.status.state + " " + .spec.node + " " + .spec.kind')
assert_eq "failed ipmi-3 power" "$state" "state, node and kind of operation $opid"
"$FP" op get "$opid" -o json | jq -r .status.lastError | grep -q "did not answer" ||
	fail "$opid: lastError does not say the BMC did not answer"
assert_eq False "$(cond ipmi-3 BMCReachable | cut -d' ' -f1)" "ipmi-3 BMCReachable with its BMC stopped"
kill -CONT "$(cat "$WORK/ipmi-3/pid")"

# The node with the wrong password: one failed login (its inspect), then it parks - no other
# operation for at least a minute after enroll (a BMC that locks an account after 3 to 5
# failures stays usable).
left=$((BAD_T0 + 61 - $(date +%s)))
[ "$left" -le 0 ] || sleep "$left"
assert_eq "False AuthenticationFailed" "$(cond ipmi-bad BMCReachable)" "ipmi-bad BMCReachable"
assert_eq "inspect failed" "$("$FP" op list --node ipmi-bad -o json | jq -r '[.items[] | .spec.kind + " " + .status.state] | join(",")')" \
	"ipmi-bad operations a minute after enroll"
assert_eq 1 "$(api GET "/v1/events?object=node/ipmi-bad" | tail -1 | jq '[.items[] | select(.reason == "OperationFailed")] | length')" \
	"ipmi-bad OperationFailed events"
assert_eq 0 "$(calls ipmi-bad)" "ipmi-bad chassis calls (no session was ever opened)"
# Retire it without its BMC: no BMC call, PoweredOn Unknown NotPoweredOff, the actor audited.
out=$("$FP" node retire ipmi-bad --reason "BMC credentials lost" --skip-power-off 2>&1)
assert_eq "node/ipmi-bad retire requested without powering off, phase retiring" "$out" "node retire ipmi-bad --skip-power-off"
for _ in $(seq 1 60); do
	[ "$("$FP" node get ipmi-bad -o json | jq -r .status.phase)" = retired ] && break
	sleep 0.5
done
assert_eq retired "$("$FP" node get ipmi-bad -o json | jq -r .status.phase)" "ipmi-bad phase after retire --skip-power-off"
assert_eq "Unknown NotPoweredOff" "$(cond ipmi-bad PoweredOn)" "ipmi-bad PoweredOn after retire --skip-power-off"
assert_eq "inspect failed,retire succeeded" "$("$FP" op list --node ipmi-bad -o json | jq -r '[.items[] | .spec.kind + " " + .status.state] | sort | join(",")')" \
	"ipmi-bad operations after retire --skip-power-off"
assert_eq "operator:admin" "$(api GET "/v1/events?object=node/ipmi-bad" | tail -1 | jq -r '[.items[] | select(.reason == "RetireRequested")][0].actor')" \
	"actor of ipmi-bad's RetireRequested event"
assert_eq 0 "$(calls ipmi-bad)" "ipmi-bad chassis calls after retire --skip-power-off"

# No password anywhere: serve's log, every output, argv.
for n in $NODES $BAD; do "$FP" node get "$n" -o json 2>&1 | keep "get-$n"; done
"$FP" event list -o json 2>&1 | keep events
"$FP" op list -o json 2>&1 | keep ops
ps -eo args | keep ps-end
stop_serve
cp "$D/serve.log" "$OUT/"
for n in $NODES; do cp "$WORK/$n/calls.log" "$OUT/calls-$n.log"; cp "$WORK/$n/agent.log" "$OUT/agent-$n.log"; done
for n in $NODES $BAD; do
	pw=$(cat "$WORK/$n/password")
	hits=$(grep -l -r -F -- "$pw" "$OUT" || true)
	[ -z "$hits" ] || fail "the BMC password of $n appears in: $hits"
done
hits=$(grep -l -r -F -- "WrongPass-123" "$OUT" || true)
[ -z "$hits" ] || fail "ipmi-bad's wrong password appears in: $hits"
[ -s "$OUT/serve.log" ] || fail "serve.log is empty"
echo "ok test_ipmi"
