#!/usr/bin/env bash
# selftest.sh - proves the network-boot pieces on this machine with one VM (root only; exit 77
# with the reason when it cannot run: not root, a tool missing, no fleetplane binary):
#   builds the ramdisk (scripts/build-ramdisk.sh) and os.img (scripts/build-os-image.sh),
#   brings the PXE test bed up (pxe.sh) with stub_server.py as the boot server, then
#   (c)+(a) `ipmitool chassis bootdev pxe` + `power on` through vm1's ipmi_sim: qemu PXE-boots
#       the ramdisk, whose /init runs `fleetplane version` and `fleetplane agent inspect`, then
#       `agent deploy` (os.img streamed to /dev/vda, meta-data written to CIDATA) against the stub;
#   (c) `power off` stops qemu (power status off, no qemu process left);
#   (b) `bootdev disk` + `power on`: os.img boots from the disk the ramdisk wrote; its init
#       POSTs /boot/booted with the token from that meta-data;
#   (b') vm2's disk is os.img with a meta-data put into CIDATA by mtools (no ramdisk): power on
#       (boot device disk), its init POSTs /boot/booted with that token;
#   ctl.log of vm1 holds the BMC calls in order. Prints the timings.
# Environment: FLEETPLANE (./fleetplane), FP_BOOT_CACHE (build/boot-cache: the kernel .deb),
# PXE_KEEP=1 keeps $PXE_DIR after the run.
# Takes ~65 s on 2 cores (TCG), the first run ~2 s more (kernel download).
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
repo=$(pwd)
skip() {
	echo "SKIP: $*"
	exit 77
}
. tests/peers/pxe/pxe.sh
why=$(pxe_require) || skip "$why"
for t in mcopy mkfs.vfat sfdisk syslinux mke2fs cpio apt-get dpkg-deb modinfo /usr/bin/python3; do
	command -v "$t" >/dev/null 2>&1 || skip "$t missing (scripts/install-deps.sh --test)"
done
FLEETPLANE=${FLEETPLANE:-./fleetplane}
[ -x "$FLEETPLANE" ] || skip "no fleetplane binary at $FLEETPLANE (make fleetplane)"
export FP_BOOT_CACHE=${FP_BOOT_CACHE:-$repo/build/boot-cache}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
fails=0
ok() { echo "ok   - $*"; }
bad() {
	echo "FAIL - $*"
	fails=$((fails + 1))
}
check() { # DESCRIPTION CMD...
	local d=$1
	shift
	if "$@"; then ok "$d"; else bad "$d"; fi
}

PXE_DIR=$(mktemp -d /tmp/fp-pxe-selftest.XXXXXX)
export PXE_DIR
cleanup() {
	pxe_down
	if [ "${PXE_KEEP:-0}" = 1 ] || [ "$fails" -ne 0 ]; then
		echo "files kept in $PXE_DIR"
	else
		rm -rf "$PXE_DIR"
	fi
}
trap cleanup EXIT

files=$PXE_DIR/files
mkdir -p "$files"
t=$(now)
scripts/build-ramdisk.sh "$files" --fleetplane "$FLEETPLANE" || { bad "build-ramdisk.sh"; exit 1; }
t_rd_build=$(since "$t")
t=$(now)
scripts/build-os-image.sh "$files" || { bad "build-os-image.sh"; exit 1; }
t_os_build=$(since "$t")

pxe_up || { bad "pxe_up"; exit 1; }
M1=52:54:00:77:00:01 M2=52:54:00:77:00:02
pxe_spawn stub /usr/bin/python3 "$repo/tests/peers/pxe/stub_server.py" --listen "$PXE_BRIDGE_IP:7070" \
	--files "$files" --events "$PXE_DIR/events.log" --node "vm1,$M1,tok-vm1" --node "vm2,$M2,tok-vm2" ||
	{ bad "stub server"; exit 1; }
pxe_vm_add vm1 "$M1" || { bad "pxe_vm_add vm1"; exit 1; }
pxe_vm_add vm2 "$M2" || { bad "pxe_vm_add vm2"; exit 1; }
pxe_dhcp_host vms "$M1,10.77.0.11,vm1" "$M2,10.77.0.12,vm2"

event() { # ROUTE NODE [JSON-FRAGMENT]: the stub logged that route for NODE (status 200)
	grep -F "\"route\": \"$1\", \"node\": \"$2\", \"status\": 200" "$PXE_DIR/events.log" 2>/dev/null |
		grep -qF -- "${3:-}"
}
wait_event() { # ROUTE NODE FRAGMENT SECONDS
	local n=0
	while [ "$n" -lt $(($4 * 10)) ]; do
		event "$1" "$2" "$3" && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
qemu_alive() { pxe_alive "$(cat "$PXE_DIR/vms/$1/qemu.pid" 2>/dev/null)" "$PXE_DIR/vms/$1/disk.img"; }
power_is() { pxe_vm_ipmitool "$1" chassis power status 2>/dev/null | grep -q "is $2"; }

# (c) + (a): BMC -> PXE -> ramdisk -> inspect + deploy
con=$(pxe_vm_console vm1)
check "ipmitool chassis bootdev pxe" pxe_vm_ipmitool vm1 chassis bootdev pxe
t=$(now)
check "ipmitool chassis power on" pxe_vm_ipmitool vm1 chassis power on
check "power status on after power on" power_is vm1 on
check "qemu runs" qemu_alive vm1
check "iPXE fetched /boot/ipxe from the stub" wait_event ipxe vm1 '"phase": "provision"' 60
t_ipxe=$(since "$t")
check "ramdisk /init started" pxe_vm_wait_console vm1 'fleetplane-ramdisk: start' 60
t_init=$(since "$t")
check "fleetplane runs in the ramdisk (dynamic libraries)" pxe_vm_wait_console vm1 'fleetplane-ramdisk: binary ok: fleetplane [0-9]' 30
check "ramdisk finished inspect" pxe_vm_wait_console vm1 'fleetplane-ramdisk: (inspect ok|FAILED)' 60
grep -aq 'fleetplane-ramdisk: inspect ok' "$con" || {
	bad "ramdisk says: $(grep -a 'FAILED' "$con" | tail -n1)"
	exit 1
}
check "the stub accepted the inventory (QEMU, eth0 with vm1's MAC, /dev/vda)" \
	sh -c "grep '\"route\": \"inspect\"' '$PXE_DIR/events.log' | grep -q '\"manufacturer\": \"fleetplane-test\".*\"mac\": \"$M1\".*\"path\": \"/dev/vda\"'"
check "ramdisk finished deploy" pxe_vm_wait_console vm1 'fleetplane-ramdisk: (deploy ok|FAILED)' 120
grep -aq 'fleetplane-ramdisk: deploy ok' "$con" || {
	bad "ramdisk says: $(grep -a 'FAILED' "$con" | tail -n2)"
	exit 1
}
t_deploy=$(since "$t")
sha=$(sha256sum "$files/os.img" | cut -d' ' -f1)
check "POST /boot/deployed ok=true with os.img's sha256" event deployed vm1 "\"ok\": true, \"sha256\": \"$sha\""

# (c) power off stops qemu
t=$(now)
check "ipmitool chassis power off" pxe_vm_ipmitool vm1 chassis power off
check "power status off" power_is vm1 off
if qemu_alive vm1; then bad "qemu of vm1 still runs after power off"; else ok "qemu of vm1 is gone"; fi
t_off=$(since "$t")
check "CIDATA on vm1's disk holds meta-data with the token" \
	sh -c "mtype -i '$PXE_DIR/vms/vm1/disk.img@@$((67584 * 512))' ::/meta-data | grep -q '^fleetplane-token: tok-vm1$'"

# (b) boot from the disk the ramdisk wrote
check "ipmitool chassis bootdev disk" pxe_vm_ipmitool vm1 chassis bootdev disk
t=$(now)
check "ipmitool chassis power on (disk)" pxe_vm_ipmitool vm1 chassis power on
check "OS init POSTed /boot/booted with vm1's token" wait_event booted vm1 '"token": "tok-vm1"' 90
t_os=$(since "$t")
check "OS console: booted from disk" pxe_vm_wait_console vm1 'fleetplane-os: booted from disk [0-9a-f-]{36}' 10
check "OS mounted its ext4 root partition" pxe_vm_wait_console vm1 'fleetplane-os: root /dev/vda2: fleetplane test OS' 1
check "no second PXE boot (one-time override consumed)" \
	test "$(grep -c '"route": "ipxe", "node": "vm1"' "$PXE_DIR/events.log")" = 1
pxe_vm_ipmitool vm1 chassis power off >/dev/null

# (b') os.img + meta-data by mtools, no ramdisk
d2=$PXE_DIR/vms/vm2
cp --sparse=always "$files/os.img" "$d2/disk.img" && truncate -s "${PXE_DISK_MB}M" "$d2/disk.img"
printf 'instance-id: vm2-1\nlocal-hostname: vm2\nfleetplane-node: vm2\nfleetplane-url: %s\nfleetplane-token: tok-vm2\n' \
	"$PXE_BOOT_URL" >"$PXE_DIR/meta-data.vm2"
check "mcopy meta-data into vm2's CIDATA" mcopy -o -i "$d2/disk.img@@$((67584 * 512))" "$PXE_DIR/meta-data.vm2" ::/meta-data
t=$(now)
check "vm2 power on (boot device default = disk)" pxe_vm_ipmitool vm2 chassis power on
check "vm2's OS POSTed /boot/booted with tok-vm2" wait_event booted vm2 '"token": "tok-vm2"' 90
t_os2=$(since "$t")
pxe_vm_ipmitool vm2 chassis power off >/dev/null
code=$(pxe_exec curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	--data '{"node":"vm2","token":"tok-vm1","bootId":"x"}' "$PXE_BOOT_URL/boot/booted")
check "the stub answers 403 to another node's token" test "$code" = 403

# ctl.log order for vm1
calls=$(pxe_vm_ctl_log vm1 | cut -d' ' -f2- | grep '^set ' | tr '\n' ';')
want="set boot pxe;set power 1;set power 0;set boot default;set power 1;set power 0;"
if [ "$calls" = "$want" ]; then ok "vm1 ctl.log: $calls"; else bad "vm1 ctl.log set calls: '$calls', want '$want'"; fi

echo "initrd.img $(stat -c %s "$files/initrd.img") bytes, vmlinuz $(stat -c %s "$files/vmlinuz") bytes, os.img $(stat -c %s "$files/os.img") bytes"
echo "timings (s): build ramdisk $t_rd_build, build os.img $t_os_build; power on -> /boot/ipxe $t_ipxe," \
	"-> /init $t_init, -> deploy ok $t_deploy; power off -> off $t_off; power on (disk) -> booted $t_os;" \
	"mtools disk -> booted $t_os2"
[ "$fails" -eq 0 ] && echo "PASS" || echo "FAILED: $fails"
[ "$fails" -eq 0 ]
