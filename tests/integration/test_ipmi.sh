#!/usr/bin/env bash
# IPMI nodes end to end: three OpenIPMI ipmi_sim BMCs (tests/peers/ipmi_sim/ipmisim.sh), one node
# on each, enrolled with driver "ipmi". Each BMC's chassis_control program plays the machine and,
# powered on with boot=pxe, calls :booted and :validated like a deploy agent (with that node's
# agent token, read from a header file). All three reach available; every machine saw
# "set boot pxe" before its first "set power 1"; the driver learned the open-session-privilege
# quirk (status.bmc.quirks); `node power NAME off|on --wait` changes the machine's power file and
# PoweredOn; a SIGSTOPped BMC makes a power cycle end failed (not stuck) with BMCReachable
# False; the BMC passwords appear in no log, output or argv.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIM="$ROOT/tests/peers/ipmi_sim/ipmisim.sh"
command -v ipmi_sim >/dev/null || { echo "skip test_ipmi: ipmi_sim is not installed"; exit 0; }
D="$WORK/d"
OUT="$WORK/out"
mkdir -p "$OUT"
keep() { cat >"$(mktemp "$OUT/$1.XXXXXX")"; }
NODES="ipmi-1 ipmi-2 ipmi-3"
stop_peers() {
	local n
	for n in $NODES; do bash "$SIM" stop "$WORK/$n" 2>/dev/null || true; done
}
trap 'rc_=$?; stop_peers; (exit $rc_); cleanup' EXIT

for n in $NODES; do
	bash "$SIM" start "$WORK/$n" 2>&1 | keep "sim-$n"
done

start_serve "$D" --bmc-timeout 3 --bmc-breaker-failures 3

# One agent token per node, as a header in a file (never an argv), and the callback settings
# each machine's deploy agent reads.
for n in $NODES; do
	tok=$("$FP" token create --name "agent-$n" --role agent --node "$n" 2>&1 | tail -1)
	(umask 077 && printf 'Authorization: Bearer %s\n' "$tok" >"$WORK/$n.hdr")
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
ps -eo args | keep ps-enrolled
wait_phase available 3 120

cond() { # cond NODE TYPE: "status reason" of a node condition
	"$FP" node get "$1" -o json | jq -r --arg t "$2" '.status.conditions[] | select(.type == $t) | "\(.status) \(.reason)"'
}
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

# node power off / on --wait: the machine's power file follows, and PoweredOn with it.
out=$("$FP" node power ipmi-1 off --wait 2>&1) && st=0 || st=$?
echo "$out" | keep power-off
assert_eq "0 off" "$st $(echo "$out" | tail -1)" "exit status and last line of node power ipmi-1 off --wait"
assert_eq 0 "$(cat "$WORK/ipmi-1/power")" "ipmi-1 machine power after off"
assert_eq False "$(cond ipmi-1 PoweredOn | cut -d' ' -f1)" "ipmi-1 PoweredOn after off"
out=$("$FP" node power ipmi-1 on --wait 2>&1) && st=0 || st=$?
echo "$out" | keep power-on
assert_eq "0 on" "$st $(echo "$out" | tail -1)" "exit status and last line of node power ipmi-1 on --wait"
assert_eq 1 "$(cat "$WORK/ipmi-1/power")" "ipmi-1 machine power after on"
assert_eq True "$(cond ipmi-1 PoweredOn | cut -d' ' -f1)" "ipmi-1 PoweredOn after on"

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

# No password anywhere: serve's log, every output, argv.
for n in $NODES; do "$FP" node get "$n" -o json 2>&1 | keep "get-$n"; done
"$FP" event list -o json 2>&1 | keep events
"$FP" op list -o json 2>&1 | keep ops
ps -eo args | keep ps-end
stop_serve
cp "$D/serve.log" "$OUT/"
for n in $NODES; do cp "$WORK/$n/calls.log" "$OUT/calls-$n.log"; cp "$WORK/$n/agent.log" "$OUT/agent-$n.log"; done
for n in $NODES; do
	pw=$(cat "$WORK/$n/password")
	hits=$(grep -l -r -F -- "$pw" "$OUT" || true)
	[ -z "$hits" ] || fail "the BMC password of $n appears in: $hits"
done
[ -s "$OUT/serve.log" ] || fail "serve.log is empty"
echo "ok test_ipmi"
