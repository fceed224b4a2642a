#!/usr/bin/env bash
# ipmisim.sh - one OpenIPMI ipmi_sim BMC on 127.0.0.1 for tests (recipe:
# ../shared/recipes/hardware-peers.md section 1), with a chassis_control program that plays the
# machine behind the BMC.
#
#   ipmisim.sh start DIR [PORT]   writes DIR/{lan.conf,sim.emu,chassis_control,state/}, picks a
#                                 free UDP port when PORT is not given (DIR/port), starts ipmi_sim
#                                 (DIR/pid) and waits until it answers `mc info` (at most 10 s).
#   ipmisim.sh stop DIR           stops it (SIGCONT first, in case a test SIGSTOPped it).
#
# The BMC user is "admin"; its password is DIR/password (written before start by the caller, or
# a random one written there, mode 0600). The password goes to ipmi_sim through lan.conf and to
# ipmitool through its environment (-E, IPMI_PASSWORD): never on a command line.
#
# The machine (DIR/chassis_control, called by ipmi_sim as `chassis_control 0x20 get|set ...`):
# keeps DIR/power (0|1) and DIR/boot (default|pxe|...), appends every call to DIR/calls.log
# ("get power", "set power 1", "set boot pxe", "set reset 1", "set shutdown 1"), and when the
# machine comes up (power 0 -> 1, or a reset) with boot=pxe, acts as a deploy agent: if
# DIR/callback.env exists (FP_URL=, NODE=, FP_AUTH_HEADER_FILE= lines), it sets boot back to
# "default" (next-boot semantics) and in the background POSTs $FP_URL/v1/nodes/$NODE:booted
# {"bootId":ID} then $FP_URL/v1/nodes/$NODE:validated {"bootId":ID,"passed":true} with
# `curl -H @$FP_AUTH_HEADER_FILE` (the token stays in that file; it waits up to 10 s for that
# file to appear, as the token is made after the node is enrolled). Each agent run is logged to
# DIR/agent.log. `set shutdown 1` (ACPI soft off) powers the machine off 1 s later unless it was
# powered on or off again in between (DIR/gen counts power changes).
set -euo pipefail

usage() {
	echo "usage: ipmisim.sh start DIR [PORT] | stop DIR" >&2
	exit 2
}

free_udp_port() {
	/usr/bin/python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

write_ctl() {
	local dir=$1
	cat >"$dir/chassis_control" <<'CTL'
#!/usr/bin/env bash
# chassis_control DEVICE get PARM... | set PARM VALUE [PARM VALUE...] (ipmi_sim's chassis_control
# protocol): the simulated machine behind one ipmi_sim BMC. See ipmisim.sh for what it does.
set -u
D=$(cd "$(dirname "$0")" && pwd)
shift # device (0x20)
op=${1:-}
shift || true
exec 9>>"$D/.lock"
flock 9
echo "$op $*" >>"$D/calls.log"
rd() { cat "$D/$1" 2>/dev/null || echo "$2"; }
bump_gen() { echo $(($(rd gen 0) + 1)) >"$D/gen"; }

agent() { # the deploy agent of a machine that came up with boot=pxe
	[ "$(rd boot default)" = pxe ] || return 0
	[ -f "$D/callback.env" ] || return 0
	local FP_URL="" NODE="" FP_AUTH_HEADER_FILE="" k v
	while IFS='=' read -r k v; do
		case $k in
		FP_URL) FP_URL=$v ;;
		NODE) NODE=$v ;;
		FP_AUTH_HEADER_FILE) FP_AUTH_HEADER_FILE=$v ;;
		esac
	done <"$D/callback.env"
	echo default >"$D/boot"
	local id
	id="boot-$(date +%s%N)-$$-$RANDOM"
	(
		sleep 0.2
		# an agent token is made once its node is enrolled (issue 16 item 12): the header
		# file may come a moment after the machine powers on
		for _ in $(seq 1 100); do
			[ -s "$FP_AUTH_HEADER_FILE" ] && break
			sleep 0.1
		done
		{
			echo "booted $NODE $id"
			curl -sS -o /dev/null -w '%{http_code}\n' -X POST -H @"$FP_AUTH_HEADER_FILE" \
				-H 'Content-Type: application/json' --data-binary "{\"bootId\":\"$id\"}" \
				"$FP_URL/v1/nodes/$NODE:booted"
			echo "validated $NODE $id"
			curl -sS -o /dev/null -w '%{http_code}\n' -X POST -H @"$FP_AUTH_HEADER_FILE" \
				-H 'Content-Type: application/json' \
				--data-binary "{\"bootId\":\"$id\",\"passed\":true}" \
				"$FP_URL/v1/nodes/$NODE:validated"
		} >>"$D/agent.log" 2>&1
	) 9>&- </dev/null >/dev/null 2>&1 &
}

case $op in
get)
	for p in "$@"; do
		case $p in
		power) echo "power:$(rd power 0)" ;;
		boot) echo "boot:$(rd boot default)" ;;
		*) exit 1 ;;
		esac
	done
	;;
set)
	while [ $# -ge 2 ]; do
		p=$1 v=$2
		shift 2
		case $p in
		power)
			was=$(rd power 0)
			echo "$v" >"$D/power"
			bump_gen
			[ "$was" = 0 ] && [ "$v" = 1 ] && agent
			;;
		boot) echo "$v" >"$D/boot" ;;
		reset)
			[ "$(rd power 0)" = 1 ] && agent
			;;
		shutdown)
			bump_gen
			g=$(rd gen 0)
			(
				sleep 1
				exec 9>>"$D/.lock"
				flock 9
				[ "$(rd gen 0)" = "$g" ] && echo 0 >"$D/power" && bump_gen
			) 9>&- </dev/null >/dev/null 2>&1 &
			;;
		*) exit 1 ;;
		esac
	done
	;;
*) exit 1 ;;
esac
exit 0
CTL
	chmod 0755 "$dir/chassis_control"
}

. "$(dirname "${BASH_SOURCE[0]}")/bmc-conf.sh"

write_conf() {
	ipmisim_lan_conf "$1" bmc0 "$2" admin "$3" a123456789abcdefa123456789abcd00
	ipmisim_emu "$1" 1
}

answers() { # dir port: one ipmitool mc info with the password from the environment
	IPMI_PASSWORD=$(cat "$1/password") timeout 5 ipmitool -I lanplus -C 3 -H 127.0.0.1 \
		-p "$2" -U admin -E mc info >/dev/null 2>&1
}

start() {
	local dir=$1 want_port=${2:-}
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	case $dir in *[[:space:]\"]*) echo "ipmisim.sh: DIR must not contain spaces or quotes" >&2; exit 2 ;; esac
	if [ ! -s "$dir/password" ]; then
		(umask 077 && od -An -N8 -tx1 /dev/urandom | tr -d ' \n' >"$dir/password")
	fi
	local pw
	pw=$(cat "$dir/password")
	case $pw in *[\"\\[:space:]]*) echo "ipmisim.sh: the password must not contain quotes, backslashes or spaces" >&2; exit 2 ;; esac
	[ "${#pw}" -le 20 ] || { echo "ipmisim.sh: the password is longer than 20 characters (IPMI 2.0 limit)" >&2; exit 2; }
	rm -rf "$dir/state"
	mkdir -p "$dir/state"
	: >"$dir/calls.log"
	[ -f "$dir/power" ] || echo 0 >"$dir/power"
	[ -f "$dir/boot" ] || echo default >"$dir/boot"
	write_ctl "$dir"
	local try port pid i
	for try in 1 2 3 4 5; do
		port=${want_port:-$(free_udp_port)}
		write_conf "$dir" "$port" "$pw"
		ipmi_sim -c "$dir/lan.conf" -f "$dir/sim.emu" -s "$dir/state" -n \
			</dev/null >>"$dir/ipmi_sim.log" 2>&1 &
		pid=$!
		echo "$pid" >"$dir/pid"
		echo "$port" >"$dir/port"
		for i in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			if answers "$dir" "$port"; then
				return 0
			fi
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		[ -z "$want_port" ] || break
	done
	echo "ipmisim.sh: ipmi_sim did not answer on 127.0.0.1:$port (see $dir/ipmi_sim.log)" >&2
	exit 1
}

stop() {
	local dir=$1 pid
	[ -f "$dir/pid" ] || return 0
	pid=$(cat "$dir/pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill -CONT "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$dir/pid"
}

[ $# -ge 2 ] || usage
case $1 in
start) [ $# -le 3 ] || usage; start "$2" "${3:-}" ;;
stop) [ $# -eq 2 ] || usage; stop "$2" ;;
*) usage ;;
esac
