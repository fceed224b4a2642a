# pxe.sh - a network-boot test bed (sourced, bash, root only): a private network namespace with a
# bridge, dnsmasq (DHCP + TFTP + IPv6 RA), and qemu VMs (TCG) each behind its own OpenIPMI
# ipmi_sim BMC whose chassis_control program starts and stops the VM. Recipe:
# ../shared/recipes/hardware-peers.md section 3 and "Recipe for tests".
#
#   . tests/peers/pxe/pxe.sh
#   pxe_require || exit 77           # prints why not (not root, a tool missing)
#   pxe_up                           # netns $PXE_NS, bridge 10.77.0.1/24 + fd77::1/64, dnsmasq
#   pxe_spawn NAME CMD...            # CMD in the netns in the background (pid: $PXE_DIR/pids/NAME,
#                                    # output: $PXE_DIR/NAME.log), e.g. fleetplane serve bound to
#                                    # 10.77.0.1 so that the VMs reach it
#   pxe_vm_add NAME MAC              # tap, disk, ipmi_sim + chassis_control; VM stays off
#   pxe_vm_ipmitool NAME ARGS...     # ipmitool -I lanplus -C 3 against NAME's BMC (in the netns)
#   pxe_vm_ctl_log NAME              # prints NAME's chassis_control log
#   pxe_down                         # stops everything by pid, deletes the netns
#
# Environment (defaults): PXE_DIR (a new mktemp -d /tmp/fp-pxe.XXXXXX; every file below is under
# it), PXE_NS (fp-pxe-$$), PXE_BOOT_URL (http://10.77.0.1:7070: where TFTP's boot.ipxe chains to,
# `chain $PXE_BOOT_URL/boot/ipxe?mac=${net0/mac}`), PXE_VM_MEM (256, MiB), PXE_DISK_MB (256),
# PXE_BMC_USER (admin), PXE_BMC_PASSWORD (password).
#
# Network: bridge fpbr0 10.77.0.1/24 and fd77::1/64 in $PXE_NS. dnsmasq: DHCP range
# 10.77.0.100-150 (1 h leases) plus `dhcp-hostsdir=$PXE_DHCP_HOSTSDIR` ($PXE_DIR/dhcp-hosts.d;
# files of lines `MAC,IP[,NAME]`, re-read by inotify as each is written: no signal, since
# dnsmasq 2.90 can segfault on the SIGHUP that re-reads a dhcp-hostsfile once a lease was given
# to a client that sent an FQDN, option 81), iPXE clients
# (option 175) get TFTP boot.ipxe ($PXE_DIR/tftp/boot.ipxe), RA for fd77::/64 (ra-only; without
# it iPXE waits ~13 s), log $PXE_DIR/dnsmasq.log, leases $PXE_DIR/leases.
#
# VM NAME (files under $PXE_DIR/vms/NAME/): disk.img (raw, sparse, PXE_DISK_MB, the guest's
# /dev/vda: virtio-blk), console.log (ttyS0, appended across power-ons; SeaBIOS/iPXE text too,
# through -device sga), qemu.log, qemu.pid, boot (stored boot device), ctl.log, vm.env. Tap
# fptapN. SMBIOS: manufacturer fleetplane-test, product pxe-vm, serial FPVM-NAME, a UUID
# derived from NAME (vm.env), so that inventories are predictable.
# BMC: ipmi_sim on 127.0.0.1:$(cat port) UDP inside the netns (from 9001 up), user
# $PXE_BMC_USER / $PXE_BMC_PASSWORD (files user, password), cipher suite 3 (ipmitool -C 3;
# FreeIPMI/libfreeipmi need the open-session-privilege workaround), `serial 15 ... codec VM` on
# TCP 127.0.0.1:(port+100) (nothing connects; it makes ipmi_sim's VM features available).
# chassis_control (the machine): `set power 1` starts qemu (-accel tcg -m $PXE_VM_MEM
# -display none -device sga, e1000 NIC with MAC on the tap, disk as virtio) with `-boot n`
# when the stored boot device is pxe and `-boot c` otherwise; a pxe setting is consumed by that
# power-on (stored boot becomes "default", like a BIOS one-time override). `set power 0` and
# `set shutdown 1` stop qemu (SIGTERM, SIGKILL after 10 s) and return once it has exited;
# `set reset 1` stops and starts it again when on; `get power` is qemu's liveness (a zombie or a
# reused pid counts as off). Each call is appended to ctl.log as `<UTC time> <call>`, e.g.
# `2026-12-02T10:30:01.123Z set boot pxe`, `... set power 1`, `... get power`.
#
# Safe to source into a `set -euo pipefail` shell; pxe_down is idempotent (call it from a trap).
#
# Gotchas kept in mind (recipe): `ip netns exec NS cmd &` gives no usable pid, so every daemon
# writes its own pid file; busybox wget -T segfaults; poll `get power` after an off before an on.

. "$(dirname "${BASH_SOURCE[0]}")/../ipmi_sim/bmc-conf.sh"

PXE_BRIDGE=fpbr0
PXE_BRIDGE_IP=10.77.0.1

pxe_log() { echo "pxe: $*" >&2; }

pxe_require() { # prints why the test bed cannot run here, returns 1 then
	local t
	if [ "$(id -u)" -ne 0 ]; then
		echo "not root (netns, bridge and tap need root)"
		return 1
	fi
	for t in ip dnsmasq qemu-system-x86_64 ipmi_sim ipmitool flock; do
		command -v "$t" >/dev/null 2>&1 || { echo "$t missing (scripts/install-deps.sh --test)"; return 1; }
	done
	[ -e /usr/share/qemu/pxe-e1000.rom ] || [ -e /usr/lib/ipxe/qemu/pxe-e1000.rom ] ||
		{ echo "no iPXE ROM for e1000 (ipxe-qemu)"; return 1; }
	return 0
}

pxe_exec() { ip netns exec "$PXE_NS" "$@"; }

pxe_alive() { # PID [MATCH]: running, not a zombie, and (when given) its argv contains MATCH
	local p=$1 st
	[ -n "$p" ] && [ -r "/proc/$p/stat" ] || return 1
	st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ] || return 1
	[ -z "${2:-}" ] || tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$2"
}

pxe_kill() { # PIDFILE [MATCH]: TERM, wait up to 10 s, KILL
	local f=$1 p i
	[ -f "$f" ] || return 0
	p=$(cat "$f" 2>/dev/null) || p=""
	if pxe_alive "$p" "${2:-}"; then
		kill -CONT "$p" 2>/dev/null || true
		kill -TERM "$p" 2>/dev/null || true
		for i in $(seq 1 100); do
			pxe_alive "$p" || break
			sleep 0.1
		done
		if pxe_alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi
		wait "$p" 2>/dev/null || true
	fi
	rm -f "$f"
	return 0
}

pxe_up() {
	local why
	why=$(pxe_require) || { pxe_log "$why"; return 1; }
	: "${PXE_NS:=fp-pxe-$$}"
	: "${PXE_BOOT_URL:=http://$PXE_BRIDGE_IP:7070}"
	: "${PXE_VM_MEM:=256}" "${PXE_DISK_MB:=256}"
	: "${PXE_BMC_USER:=admin}" "${PXE_BMC_PASSWORD:=password}"
	[ -n "${PXE_DIR:-}" ] || PXE_DIR=$(mktemp -d /tmp/fp-pxe.XXXXXX)
	mkdir -p "$PXE_DIR"
	PXE_DIR=$(cd "$PXE_DIR" && pwd)
	case $PXE_DIR in *[[:space:]\"\'\\]*) pxe_log "PXE_DIR must not contain spaces or quotes"; return 1 ;; esac
	export PXE_NS PXE_DIR PXE_BOOT_URL PXE_VM_MEM PXE_DISK_MB PXE_BMC_USER PXE_BMC_PASSWORD
	PXE_DHCP_HOSTSDIR=$PXE_DIR/dhcp-hosts.d
	export PXE_DHCP_HOSTSDIR PXE_BRIDGE PXE_BRIDGE_IP
	mkdir -p "$PXE_DIR/tftp" "$PXE_DIR/vms" "$PXE_DIR/pids" "$PXE_DHCP_HOSTSDIR"
	ip netns add "$PXE_NS" || return 1
	pxe_exec ip link set lo up &&
		pxe_exec ip link add "$PXE_BRIDGE" type bridge &&
		pxe_exec ip addr add "$PXE_BRIDGE_IP/24" dev "$PXE_BRIDGE" &&
		pxe_exec ip addr add fd77::1/64 dev "$PXE_BRIDGE" nodad &&
		pxe_exec ip link set "$PXE_BRIDGE" up || { pxe_down; return 1; }
	printf '#!ipxe\nchain %s/boot/ipxe?mac=${net0/mac}\n' "$PXE_BOOT_URL" >"$PXE_DIR/tftp/boot.ipxe"
	cat >"$PXE_DIR/dnsmasq.conf" <<CONF
port=0
user=root
interface=$PXE_BRIDGE
bind-interfaces
dhcp-range=10.77.0.100,10.77.0.150,255.255.255.0,1h
dhcp-hostsdir=$PXE_DHCP_HOSTSDIR
dhcp-option=option:router,$PXE_BRIDGE_IP
dhcp-match=set:ipxe,175
dhcp-boot=tag:ipxe,boot.ipxe
enable-tftp
tftp-root=$PXE_DIR/tftp
enable-ra
dhcp-range=fd77::,ra-only
log-dhcp
log-facility=$PXE_DIR/dnsmasq.log
dhcp-leasefile=$PXE_DIR/leases
pid-file=$PXE_DIR/pids/dnsmasq
CONF
	pxe_exec dnsmasq -C "$PXE_DIR/dnsmasq.conf" || { pxe_log "dnsmasq failed (see $PXE_DIR/dnsmasq.log)"; pxe_down; return 1; }
	pxe_log "up: netns $PXE_NS, dir $PXE_DIR, boot URL $PXE_BOOT_URL"
}

pxe_dhcp_host() { # FILE LINE...: $PXE_DHCP_HOSTSDIR/FILE holds the lines (written whole)
	local f=$1
	shift
	printf '%s\n' "$@" >"$PXE_DHCP_HOSTSDIR/.$f.tmp" && mv "$PXE_DHCP_HOSTSDIR/.$f.tmp" "$PXE_DHCP_HOSTSDIR/$f"
}

pxe_spawn() { # NAME CMD...: CMD in the netns, in the background; pid in $PXE_DIR/pids/NAME
	local name=$1 i
	shift
	rm -f "$PXE_DIR/pids/$name"
	ip netns exec "$PXE_NS" sh -c 'echo $$ >"$0"; exec "$@"' "$PXE_DIR/pids/$name" "$@" \
		</dev/null >>"$PXE_DIR/$name.log" 2>&1 &
	for i in $(seq 1 50); do
		[ -s "$PXE_DIR/pids/$name" ] && return 0
		sleep 0.1
	done
	pxe_log "$name did not start"
	return 1
}

pxe_unspawn() { # NAME: stop what pxe_spawn NAME started
	pxe_kill "$PXE_DIR/pids/$1"
}

pxe_vm_dir() { echo "$PXE_DIR/vms/$1"; }

pxe_vm_add() { # NAME MAC
	local name=$1 mac=$2 d idx port tap i
	case $name in '' | *[!a-z0-9-]*) pxe_log "VM name must be [a-z0-9-]+"; return 1 ;; esac
	case $mac in ??:??:??:??:??:??) ;; *) pxe_log "bad MAC $mac"; return 1 ;; esac
	d=$PXE_DIR/vms/$name
	[ ! -e "$d" ] || { pxe_log "VM $name exists"; return 1; }
	idx=$(ls "$PXE_DIR/vms" | wc -l)
	mkdir -p "$d/state"
	port=$((9001 + idx)) tap=fptap$idx
	echo "$port" >"$d/port"
	echo "$PXE_BMC_USER" >"$d/user"
	(umask 077 && echo "$PXE_BMC_PASSWORD" >"$d/password")
	echo default >"$d/boot"
	: >"$d/ctl.log"
	truncate -s "${PXE_DISK_MB}M" "$d/disk.img"
	pxe_exec ip tuntap add dev "$tap" mode tap &&
		pxe_exec ip link set "$tap" master "$PXE_BRIDGE" &&
		pxe_exec ip link set "$tap" up || return 1
	cat >"$d/vm.env" <<ENV
NAME=$name
MAC=$mac
TAP=$tap
MEM=$PXE_VM_MEM
UUID=$(printf '%s' "$name" | md5sum | sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)\(.\{12\}\).*/\1-\2-\3-\4-\5/')
SERIAL=FPVM-$name
ENV
	pxe_write_ctl "$d"
	ipmisim_lan_conf "$d" "$name" "$port" "$PXE_BMC_USER" "$PXE_BMC_PASSWORD" \
		"a123456789abcdefa123456789ab$(printf '%04x' "$idx")" "serial 15 127.0.0.1 $((port + 100)) codec VM"
	ipmisim_emu "$d"
	pxe_spawn "bmc-$name" ipmi_sim -c "$d/lan.conf" -f "$d/sim.emu" -s "$d/state" -n || return 1
	for i in $(seq 1 100); do
		pxe_vm_ipmitool "$name" mc info >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	pxe_log "ipmi_sim of $name does not answer on 127.0.0.1:$port (see $PXE_DIR/bmc-$name.log)"
	return 1
}

pxe_vm_ipmitool() { # NAME ARGS...: the password travels in the environment (-E), not argv
	local d=$PXE_DIR/vms/$1
	shift
	IPMI_PASSWORD=$(cat "$d/password") ip netns exec "$PXE_NS" timeout 10 ipmitool -I lanplus -C 3 \
		-H 127.0.0.1 -p "$(cat "$d/port")" -U "$(cat "$d/user")" -E "$@"
}

pxe_vm_ctl_log() { cat "$PXE_DIR/vms/$1/ctl.log"; }

pxe_vm_console() { echo "$PXE_DIR/vms/$1/console.log"; } # prints the path

pxe_vm_wait_console() { # NAME REGEX SECONDS: waits until the console log matches (grep -E)
	local f=$PXE_DIR/vms/$1/console.log n=0
	while [ "$n" -lt $(($3 * 10)) ]; do
		grep -aqE -- "$2" "$f" 2>/dev/null && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}

pxe_write_ctl() {
	local d=$1
	cat >"$d/chassis_control" <<'CTL'
#!/usr/bin/env bash
# chassis_control DEVICE get PARM... | set PARM VALUE... : the machine behind one ipmi_sim BMC
# of the PXE test bed (tests/peers/pxe/pxe.sh says what it does).
set -u
D=$(cd "$(dirname "$0")" && pwd)
. "$D/vm.env"
shift # device
op=${1:-}
shift || true
exec 9>>"$D/.lock"
flock 9
echo "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ) $op $*" >>"$D/ctl.log"

alive() {
	local p st
	p=$(cat "$D/qemu.pid" 2>/dev/null) || return 1
	[ -n "$p" ] && [ -r "/proc/$p/stat" ] || return 1
	st=$(sed 's/.*) //' "/proc/$p/stat" | cut -d' ' -f1)
	[ "$st" != Z ] && [ "$st" != X ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF "$D/disk.img"
}

start() {
	alive && return 0
	local b boot
	boot=$(cat "$D/boot" 2>/dev/null || echo default)
	b=c
	if [ "$boot" = pxe ]; then
		b=n
		echo default >"$D/boot" # a one-time override, consumed by this power-on
	fi
	echo "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ) start qemu -boot $b" >>"$D/qemu.log"
	rm -f "$D/qemu.pid"
	qemu-system-x86_64 -name "$NAME" -accel tcg -m "$MEM" -display none -monitor none \
		-chardev "file,id=con,path=$D/console.log,append=on" -serial chardev:con -device sga \
		-netdev "tap,id=n0,ifname=$TAP,script=no,downscript=no" -device "e1000,netdev=n0,mac=$MAC" \
		-drive "file=$D/disk.img,format=raw,if=virtio" -boot "$b" -uuid "$UUID" \
		-smbios "type=1,manufacturer=fleetplane-test,product=pxe-vm,serial=$SERIAL" \
		-pidfile "$D/qemu.pid" -daemonize </dev/null >>"$D/qemu.log" 2>&1 9>&-
}

stop() {
	local p i
	alive || { rm -f "$D/qemu.pid"; return 0; }
	p=$(cat "$D/qemu.pid")
	kill -TERM "$p" 2>/dev/null
	for i in $(seq 1 100); do
		alive || break
		sleep 0.1
	done
	alive && kill -KILL "$p" 2>/dev/null
	for i in $(seq 1 50); do
		alive || break
		sleep 0.1
	done
	rm -f "$D/qemu.pid"
}

case $op in
get)
	for p in "$@"; do
		case $p in
		power) if alive; then echo "power:1"; else echo "power:0"; fi ;;
		boot) echo "boot:$(cat "$D/boot" 2>/dev/null || echo default)" ;;
		*) exit 1 ;;
		esac
	done
	;;
set)
	while [ $# -ge 2 ]; do
		p=$1 v=$2
		shift 2
		case $p in
		power) if [ "$v" = 1 ]; then start || exit 1; else stop; fi ;;
		boot) echo "$v" >"$D/boot" ;;
		reset) if alive; then stop; start || exit 1; fi ;;
		shutdown) stop ;;
		*) exit 1 ;;
		esac
	done
	;;
*) exit 1 ;;
esac
exit 0
CTL
	chmod 0755 "$d/chassis_control"
}

pxe_down() {
	[ -n "${PXE_DIR:-}" ] && [ -d "$PXE_DIR" ] || return 0
	local d f p
	for d in "$PXE_DIR"/vms/*/; do
		[ -d "$d" ] || continue
		pxe_kill "$d/qemu.pid" "${d}disk.img"
	done
	for f in "$PXE_DIR"/pids/*; do
		[ -f "$f" ] || continue
		pxe_kill "$f"
	done
	if [ -n "${PXE_NS:-}" ] && ip netns list 2>/dev/null | grep -qw "$PXE_NS"; then
		# Anything still in the namespace was started by this test bed.
		for p in $(ip netns pids "$PXE_NS" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null || true
		done
		ip netns del "$PXE_NS" 2>/dev/null || true
	fi
	pxe_log "down: everything stopped, netns ${PXE_NS:-?} deleted"
	return 0
}
