#!/usr/bin/env bash
# test_provision_qemu.sh - network-boot provisioning end to end (issue 11), on real peers: qemu
# machines (TCG) behind OpenIPMI ipmi_sim BMCs whose chassis_control starts and stops them,
# dnsmasq for DHCP/TFTP, iPXE chaining to fleetplane's boot service, fleetplane's own ramdisk
# (scripts/build-ramdisk.sh: `fleetplane agent inspect` + `agent deploy`) and a small OS image
# (scripts/build-os-image.sh) whose init reports its boot from disk. All in a network namespace
# (tests/peers/pxe/pxe.sh); root only: exit 77 with the reason elsewhere.
#
#  1. four machines enrolled at once are provisioned in parallel to `available`: the exact order
#     of their BMC calls (ctl.log) and of their boot requests (serve's log), the written image
#     booted from disk (console marker = the node's lastBoot), the inventory from inspection;
#  2. then, two at a time: machine 1 is reimaged through the health ladder (an XID 79 report,
#     policy ladder [reimage]) back to available; machine 5, whose image's bytes no longer match
#     their recorded sha256, fails its deploy with NetworkBoot False DeployFailed naming both
#     sums; and the first attempt's token of machine 1 is refused (403) during its reimage.
# Prints the control plane's CPU seconds per provisioned node beside the wall time.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
FP=${FLEETPLANE_BIN:-$ROOT/fleetplane}
. tests/peers/pxe/pxe.sh
why=$(pxe_require) || { echo "SKIP test_provision_qemu: $why"; exit 77; }
for t in mcopy mkfs.vfat sfdisk syslinux mke2fs cpio dpkg-deb modinfo jq curl; do
	command -v "$t" >/dev/null || { echo "SKIP test_provision_qemu: $t missing"; exit 77; }
done
export FP_BOOT_CACHE=${FP_BOOT_CACHE:-$ROOT/build/boot-cache}
W=$(mktemp -d /tmp/fp-provision-XXXXXX)
export PXE_DIR=$W/pxe PXE_BOOT_URL=http://10.77.0.1:7071
T0=$(date +%s)
fail() {
	echo "FAIL test_provision_qemu: $*" >&2
	exit 1
}
assert_eq() { [ "$1" = "$2" ] || fail "$3: expected [$1], got [$2]"; }
cleanup() {
	local rc=$?
	if [ $rc -ne 0 ]; then
		echo "--- serve log (last 40 lines)" >&2
		tail -n 40 "$PXE_DIR/fp.log" 2>/dev/null >&2 || true
		for c in "$PXE_DIR"/vms/*/console.log; do
			[ -f "$c" ] && { echo "--- $c (last 15 lines)" >&2; tail -n 15 "$c" | tr -d '\r' >&2; }
		done
	fi
	pxe_down || true
	[ $rc -ne 0 ] || rm -rf "$W"
	[ $rc -eq 0 ] || echo "kept $W" >&2
	exit $rc
}
trap cleanup EXIT

# --- the artifacts
scripts/build-ramdisk.sh "$W/rd" --fleetplane "$FP" >"$W/build-ramdisk.log" 2>&1 ||
	{ tail -20 "$W/build-ramdisk.log"; fail "build-ramdisk.sh"; }
scripts/build-os-image.sh "$W/os" >"$W/build-os.log" 2>&1 ||
	{ tail -20 "$W/build-os.log"; fail "build-os-image.sh"; }
D=$W/data
"$FP" image add --data-dir "$D" ramdisk-vmlinuz "$W/rd/vmlinuz" >/dev/null
"$FP" image add --data-dir "$D" ramdisk-initrd "$W/rd/initrd.img" >/dev/null
"$FP" image add --data-dir "$D" os "$W/os/os.img" >/dev/null
"$FP" image add --data-dir "$D" os-bad "$W/os/os.img" >/dev/null
# os-bad's bytes change after its sum was recorded (same size): what a corrupt store serves
printf 'X' | dd of="$D/images/os-bad/image" bs=1 seek=$((5 << 20)) conv=notrunc status=none
OS_SHA=$(sha256sum "$W/os/os.img" | cut -d' ' -f1)
BAD_SHA=$(sha256sum "$D/images/os-bad/image" | cut -d' ' -f1)
echo "artifacts built in $(($(date +%s) - T0)) s"

# --- the test bed and fleetplane inside it
pxe_up
for i in 1 2 3 4 5; do pxe_vm_add "vm$i" "52:54:00:77:00:0$i"; done
pxe_spawn fp "$FP" serve --data-dir "$D" --listen 10.77.0.1:7070 --plain-http --boot-listen 10.77.0.1:7071 \
	--boot-dhcp-hostsdir "$PXE_DHCP_HOSTSDIR" \
	--boot-kernel-args "${FP_RAMDISK_ARGS:-console=ttyS0}" --boot-timeout 420 --sim-speed 1
for i in $(seq 1 100); do [ -s "$D/admin.token" ] && break; sleep 0.1; done
export FLEETPLANE_URL=http://10.77.0.1:7070 FLEETPLANE_TOKEN
FLEETPLANE_TOKEN=$(cat "$D/admin.token")
for i in $(seq 1 100); do
	[ "$(pxe_exec curl -s -o /dev/null -w '%{http_code}' "$FLEETPLANE_URL/readyz")" = 200 ] && break
	sleep 0.1
done
fpc() { pxe_exec "$FP" "$@"; }
api() { # METHOD PATH [BODY]: prints the status, then the body
	pxe_exec curl -s -o "$W/api.out" -w '%{http_code}\n' -X "$1" \
		-H "Authorization: Bearer $FLEETPLANE_TOKEN" -H 'Content-Type: application/json' \
		${3:+--data-binary "$3"} "$FLEETPLANE_URL$2"
	cat "$W/api.out"
}
node_json() { fpc node get "$1" -o json; }
phase() { node_json "$1" | jq -r .status.phase; }
wait_phase() { # PHASE SECONDS NODE...
	local want=$1 secs=$2 n i
	shift 2
	for i in $(seq 1 "$secs"); do
		local all=1
		for n in "$@"; do [ "$(phase "$n")" = "$want" ] || all=0; done
		[ $all = 1 ] && return 0
		sleep 1
	done
	for n in "$@"; do echo "$n: $(phase "$n") $(node_json "$n" | jq -c '[.status.conditions[] | select(.type=="NetworkBoot")]')" >&2; done
	fail "not all of $* $want after $secs s"
}
enroll() { # NAME VM IMAGE IP
	local port pw
	port=$(cat "$PXE_DIR/vms/$2/port")
	jq -n --arg n "$1" --arg p "$port" --rawfile w "$PXE_DIR/vms/$2/password" --arg img "$3" \
		--arg ip "$4" --arg mac "52:54:00:77:00:0${2#vm}" '
		{metadata: {name: $n}, spec: {site: "lab", rack: "r1",
		 bmc: {driver: "ipmi", address: ("127.0.0.1:" + $p), username: "admin",
		       password: ($w | rtrimstr("\n")), cipher_suite: 3},
		 macs: [$mac], hardware: {nics: 1, disks: 1, memoryMiB: 128},
		 provision: {image: $img, ipAddress: $ip,
		             sshAuthorizedKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFp test@fleetplane"]}}}'
}
validated() { # NODE: the node's burn-in passes (what its agent would report for this boot)
	local id
	id=$(node_json "$1" | jq -r .status.lastBoot.bootId)
	api POST "/v1/nodes/$1:validated" "{\"bootId\":\"$id\",\"passed\":true}" >/dev/null
}
fp_cpu() { # utime+stime of serve, in seconds
	awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); split($0, f, " "); printf "%.2f", (f[12] + f[13]) / hz}' \
		"/proc/$(cat "$PXE_DIR/pids/fp")/stat"
}

# --- 1. four machines at once
jq -n --argjson a "$(enroll m1 vm1 os 10.77.0.11)" --argjson b "$(enroll m2 vm2 os 10.77.0.12)" \
	--argjson c "$(enroll m3 vm3 os 10.77.0.13)" --argjson d "$(enroll m4 vm4 os 10.77.0.14)" \
	'{items: [$a, $b, $c, $d]}' >"$W/enroll4.json"
CPU0=$(fp_cpu)
T1=$(date +%s)
fpc node enroll -f "$W/enroll4.json" >/dev/null
# the DHCP reservations reach dnsmasq's hosts file
for i in $(seq 1 50); do grep -qs 10.77.0.14 "$PXE_DHCP_HOSTSDIR/m4.hosts" && break; sleep 0.1; done
assert_eq "52:54:00:77:00:01,set:lab,10.77.0.11,m1" "$(grep 00:01 "$PXE_DHCP_HOSTSDIR/m1.hosts")" "dhcp hosts line of m1"
wait_phase validating 420 m1 m2 m3 m4
for n in m1 m2 m3 m4; do validated "$n"; done
wait_phase available 60 m1 m2 m3 m4
T2=$(date +%s)
CPU1=$(fp_cpu)
echo "4 machines provisioned in $((T2 - T1)) s; serve CPU $(awk -v a="$CPU0" -v b="$CPU1" 'BEGIN{printf "%.2f", b-a}') s"

for i in 1 2 3 4; do
	n=m$i vm=vm$i
	# BMC calls as the machine saw them (ctl.log, reads left out)
	calls=$(pxe_vm_ctl_log "$vm" | awk '$2=="set"{$1=""; sub(/^ /,""); print}' | paste -sd, -)
	assert_eq "set boot pxe,set power 1,set boot default,set power 0,set power 1" "$calls" "$vm BMC calls"
	# boot requests as the boot service saw them
	# (serve logs logfmt: msg="boot: ipxe" mac=..., msg="boot: report accepted" route=...)
	reqs=$( (grep -E "msg=\"boot: ipxe\" mac=52:54:00:77:00:0$i |msg=\"boot: report accepted\" route=[a-z]+ node=$n |msg=\"boot: deploy\" node=$n " "$PXE_DIR/fp.log" || true) |
		sed -E 's/.*msg="boot: ipxe" .*answer=([a-z]+).*/ipxe \1/; s/.*msg="boot: report accepted" route=([a-z]+) .*/\1/; s/.*msg="boot: deploy" .*/deploy/' |
		paste -sd, -)
	assert_eq "ipxe ramdisk,inspect,deploy,deployed,booted" "$reqs" "$n boot requests"
	doc=$(node_json "$n")
	boot=$(jq -r .status.lastBoot.bootId <<<"$doc")
	grep -aq "fleetplane-os: booted from disk $boot" "$PXE_DIR/vms/$vm/console.log" ||
		fail "$vm console has no 'booted from disk $boot'"
	assert_eq "True BootedFromDisk" "$(jq -r '.status.conditions[] | select(.type=="NetworkBoot") | "\(.status) \(.reason)"' <<<"$doc")" "$n NetworkBoot"
	assert_eq "True" "$(jq -r '.status.conditions[] | select(.type=="InventoryMatchesSpec") | .status' <<<"$doc")" "$n InventoryMatchesSpec"
	assert_eq "inspection 52:54:00:77:00:0$i FPVM-$vm" \
		"$(jq -r '.status.inventory | "\(.source) \(.nics[0].mac) \(.system.serialNumber)"' <<<"$doc")" "$n inventory"
	op=$(fpc op list --node "$n" -o json | jq -r '.items[] | select(.spec.kind=="provision") | .metadata.name')
	assert_eq "true $OS_SHA" "$(fpc op get "$op" -o json | jq -r '"\(.spec.params.deploy.ok) \(.spec.params.deploy.sha256)"')" "$n deploy report"
done

# --- 2. reimage m1 through the health ladder, and m5 with a corrupt image, at once
# the token of m1's first attempt, from the meta-data its deploy wrote to the disk (CIDATA, p3)
p3=$(sfdisk -J "$PXE_DIR/vms/vm1/disk.img" | jq '.partitiontable.partitions[2].start')
OLD_TOKEN=$(mcopy -n -i "$PXE_DIR/vms/vm1/disk.img@@$((p3 * 512))" ::meta-data - |
	sed -n 's/^fleetplane-token: "\(.*\)"$/\1/p')
[ ${#OLD_TOKEN} = 43 ] || fail "no token in vm1's CIDATA meta-data (got [$OLD_TOKEN])"
resp=$(api PUT /v1/policies/default '{"spec":{"rules":[{"code":"xid:79","ladder":["reimage"]}]}}')
assert_eq 200 "$(head -1 <<<"$resp")" "policy with ladder [reimage]"
mark=$(wc -l <"$PXE_DIR/vms/vm1/ctl.log")
XID79='NVRM: Xid (PCI:0000:44:00): 79, pid=1234, name=python, GPU has fallen off the bus.'
report=$(jq -cn --arg raw "$XID79" '{agent: {version: "0.4.0", bootId: "b1", intervalSeconds: 30},
	detectors: [{name: "kernel", live: true, status: "unhealthy"}],
	events: [{id: "e-79-1", source: "kernel", code: "xid:79", gpu: {pciBusId: "0000:44:00.0"},
	          time: "2026-12-02T10:00:00.000Z", message: "GPU has fallen off the bus", raw: $raw}]}')
resp=$(api POST /v1/nodes/m1:report "$report")
assert_eq 200 "$(head -1 <<<"$resp")" "xid 79 report"
enroll m5 vm5 os-bad 10.77.0.15 >"$W/m5.json"
fpc node enroll -f "$W/m5.json" >/dev/null
# m1's earlier attempt's token is refused while its reimage runs
for i in $(seq 1 120); do
	op=$(node_json m1 | jq -r '.status.operation // empty')
	[ -n "$op" ] && [ "${op%%-*}" = reimage ] && break
	sleep 1
done
[ "${op%%-*}" = reimage ] || fail "m1 has no reimage operation (phase $(phase m1))"
code=$(pxe_exec curl -s -o "$W/stale.out" -w '%{http_code}' -X POST http://10.77.0.1:7071/boot/inspect \
	-d "{\"node\":\"m1\",\"token\":\"$OLD_TOKEN\",\"inventory\":{}}")
assert_eq 403 "$code" "a callback with m1's first attempt's token"
grep -q "not the token of node m1's provisioning attempt in flight" "$W/stale.out" || fail "stale token answer: $(cat "$W/stale.out")"
# m5: the deploy fails on the sum
# The failed attempt is retried at once, and the retry's WaitingForInspection
# replaces the NetworkBoot condition within moments; the failed operation keeps
# the step's error, so that is what is read.
for i in $(seq 1 400); do
	failed=$(fpc op list --node m5 -o json |
		jq -c '[.items[] | select(.spec.kind=="provision" and .status.state=="failed")][0] // empty')
	msg=$(jq -r '.status.lastError // empty' <<<"${failed:-null}")
	[ -n "$msg" ] && break
	sleep 1
done
[ -n "$msg" ] || fail "m5 has no failed provision operation (phase $(phase m5))"
case $msg in *"wait_deploy"*"the deploy ramdisk failed"*) ;; *) fail "m5 failed provision: not the deploy step: $msg" ;; esac
case $msg in *"$OS_SHA"*"$BAD_SHA"* | *"$BAD_SHA"*"$OS_SHA"*) ;; *) fail "m5 DeployFailed message names neither sum pair: $msg" ;; esac
# The ramdisk's own report of it, in serve's log for that attempt. (Not the VM's console: the
# retry powers vm5 off at once, and the serial lines still in flight are lost with it.)
failed_op=$(jq -r .metadata.name <<<"$failed")
grep -aq "msg=\"boot: report accepted\" route=deployed node=m5 op=$failed_op\$" "$PXE_DIR/fp.log" ||
	fail "serve logged no deployed report of m5's failed attempt $failed_op"
# m1: reimaged, validated, back
wait_phase validating 420 m1
validated m1
wait_phase available 60 m1
calls=$(tail -n +"$((mark + 1))" "$PXE_DIR/vms/vm1/ctl.log" | awk '$2=="set"{$1=""; sub(/^ /,""); print}' | paste -sd, -)
assert_eq "set boot pxe,set power 0,set power 1,set boot default,set power 0,set power 1" "$calls" "vm1 BMC calls of the reimage"
assert_eq 1 "$(fpc op list --node m1 -o json | jq '[.items[] | select(.spec.kind=="reimage" and .status.state=="succeeded")] | length')" "m1 reimage operations succeeded"
echo "ok test_provision_qemu ($(($(date +%s) - T0)) s)"
