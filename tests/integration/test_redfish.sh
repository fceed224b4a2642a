#!/usr/bin/env bash
# Redfish nodes end to end: two Redfish test servers (tests/peers/redfish/server.py over the DMTF
# public-rackmount1 and public-bladed mockups), one node on each, enrolled with driver
# "redfish". Each server plays the machine behind the BMC: on a power-on with a PXE override it
# calls :booted and :validated like a deploy agent. Both nodes reach available; the server logs
# show the boot PATCH before the power-on Reset; `node power NAME off --wait` powers the System
# off; fault knobs become node conditions (PowerState dropped -> PoweredOn Unknown
# PowerStateMissing; System and Chassis disagree -> PoweredOn Unknown PowerStateDisagrees); the
# BMC passwords appear in no log, output or argv.
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
OUT="$WORK/out"
mkdir -p "$OUT"

start_redfish rack public-rackmount1
start_redfish blade public-bladed
RACK_SYS=/redfish/v1/Systems/437XR1138R2
BLADE_SYS=/redfish/v1/Systems/529QB9452R6

start_serve "$D"
# The rackmount mockup starts with a PXE override already set (Once/Pxe/UEFI); clear it so
# provisioning has to set it.
redfish_control rack '{"set_boot": {"BootSourceOverrideEnabled": "Disabled", "BootSourceOverrideTarget": "None"}}'
# Each server plays its machine's deploy agent (the admin token in a header file, never an argv).
redfish_callback rack rf-rack
redfish_callback blade rf-blade

# Enroll through a file: the passwords are in no argv.
jq -n --arg ru "$(redfish_url rack)" --arg bu "$(redfish_url blade)" \
	--rawfile rp "$WORK/rack.pw" --rawfile bp "$WORK/blade.pw" '{items: [
	{metadata: {name: "rf-rack"}, spec: {site: "it-a", bmc: {driver: "redfish", address: $ru,
	 username: "admin", password: ($rp | rtrimstr("\n"))}}},
	{metadata: {name: "rf-blade"}, spec: {site: "it-a", bmc: {driver: "redfish", address: $bu,
	 username: "admin", password: ($bp | rtrimstr("\n")), system: "529QB9452R6"}}}]}' >"$WORK/enroll.json"
"$FP" node enroll -f "$WORK/enroll.json" 2>&1 | keep enroll
ps -eo args | keep ps-enrolled
wait_phase available 2 90

# Each server saw: boot override PXE (PATCH), then the power-on Reset, then the agent callbacks.
for p in rack blade; do
	sys=$RACK_SYS
	[ $p = blade ] && sys=$BLADE_SYS
	patch=$(grep -n "^PATCH $sys 200 .*\"BootSourceOverrideTarget\": \"Pxe\"" "$WORK/$p.log" | head -1 | cut -d: -f1)
	reset=$(grep -n "^POST $sys/Actions/ComputerSystem.Reset 204 auth=session ResetType=ForceRestart$" "$WORK/$p.log" | head -1 | cut -d: -f1)
	booted=$(grep -n "^CALLBACK .*:booted 202$" "$WORK/$p.log" | head -1 | cut -d: -f1)
	validated=$(grep -n "^CALLBACK .*:validated 202$" "$WORK/$p.log" | head -1 | cut -d: -f1)
	[ -n "$patch" ] || fail "$p: no boot PXE PATCH in the server log"
	[ -n "$reset" ] || fail "$p: no ForceRestart Reset (the System was on: cycle) in the server log"
	[ -n "$booted" ] && [ -n "$validated" ] || fail "$p: no :booted/:validated callbacks"
	[ "$patch" -lt "$reset" ] || fail "$p: the boot PATCH (line $patch) came after the Reset (line $reset)"
	[ "$reset" -lt "$booted" ] && [ "$booted" -lt "$validated" ] || fail "$p: callbacks out of order"
	assert_eq 1 "$(grep -c '^POST /redfish/v1/SessionService/Sessions 201' "$WORK/$p.log")" "$p: sessions made"
done
grep -q ' if-match=W/"' "$WORK/rack.log" || fail "rack: the boot PATCH carried no If-Match"
# public-bladed has no BootSourceOverrideMode: none was sent
grep "^PATCH $BLADE_SYS" "$WORK/blade.log" | grep -q BootSourceOverrideMode && fail "blade: Mode was sent"

# node power off --wait: the System is off at the server.
out=$("$FP" node power rf-rack off --wait --force 2>&1) && st=0 || st=$?
echo "$out" | keep power-off
assert_eq "0 off" "$st $(echo "$out" | tail -1)" "exit status and last line of node power rf-rack off --wait"
assert_eq Off "$(redfish_power rack $RACK_SYS)" "rack System PowerState after power off"
grep -q "^POST $RACK_SYS/Actions/ComputerSystem.Reset 204 auth=session ResetType=ForceOff$" "$WORK/rack.log" ||
	fail "rack: no ForceOff Reset"
assert_eq False "$(cond rf-rack PoweredOn | cut -d' ' -f1)" "rf-rack PoweredOn status after off"

# Fault: PowerState dropped from the System -> PoweredOn Unknown PowerStateMissing.
redfish_control rack '{"drop_power_state": true}'
out=$("$FP" node power rf-rack status --wait 2>&1) && st=0 || st=$?
echo "$out" | keep status-missing
assert_eq "0 unknown (PowerStateMissing: System 437XR1138R2 has no PowerState)" "$st $out" "node power rf-rack status with PowerState dropped"
assert_eq "Unknown PowerStateMissing" "$(cond rf-rack PoweredOn)" "rf-rack PoweredOn with PowerState dropped"
redfish_control rack '{"drop_power_state": false}'

# Fault: System and Chassis disagree -> PoweredOn Unknown PowerStateDisagrees.
redfish_control blade '{"disagree": true}'
out=$("$FP" node power rf-blade status --wait 2>&1) && st=0 || st=$?
echo "$out" | keep status-disagree
assert_eq "0 unknown (PowerStateDisagrees: System 529QB9452R6 PowerState On but Chassis Blade3 PowerState Off)" "$st $out" "node power rf-blade status with System and Chassis disagreeing"
assert_eq "Unknown PowerStateDisagrees" "$(cond rf-blade PoweredOn)" "rf-blade PoweredOn with disagreeing PowerState"
redfish_control blade '{"disagree": false}'
out=$("$FP" node power rf-blade status --wait 2>&1) && st=0 || st=$?
echo "$out" | keep status-agree
assert_eq "0 on" "$st $out" "node power rf-blade status once they agree"
assert_eq "True" "$(cond rf-blade PoweredOn | cut -d' ' -f1)" "rf-blade PoweredOn once they agree"

# No password anywhere: serve's log, every output, the servers' logs, argv.
"$FP" node get rf-rack -o json 2>&1 | keep get-rack
"$FP" node get rf-blade -o json 2>&1 | keep get-blade
"$FP" event list -o json 2>&1 | keep events
"$FP" op list -o json 2>&1 | keep ops
ps -eo args | keep ps-end
stop_serve
cp "$D/serve.log" "$WORK/rack.log" "$WORK/blade.log" "$OUT/"
for pw in "$(cat "$WORK/rack.pw")" "$(cat "$WORK/blade.pw")"; do
	hits=$(grep -l -r -F -- "$pw" "$OUT" || true)
	[ -z "$hits" ] || fail "a BMC password appears in: $hits"
done
[ -s "$OUT/serve.log" ] || fail "serve.log is empty"
echo "ok test_redfish"
