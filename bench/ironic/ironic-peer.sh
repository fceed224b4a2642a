#!/bin/bash
# bench/ironic/ironic-peer.sh - OpenStack Ironic (Debian 12: 21.4.x) as a side-by-side
# benchmark peer for bench/bmc_power_cycle.sh. A benchmark peer only: never a dependency of
# fleetplane's build, tests or CI (scripts/install-deps.sh does not install it).
# Recipe: ../shared/recipes/ironic-peer.md (sections 2, 3, 7 and 10).
#
#   ironic-peer.sh install     apt-get install --no-install-recommends ironic-common
#                              python3-ironicclient python3-sushy (as root; no service is
#                              started: debconf questions preseeded to false, policy-rc.d)
#   ironic-peer.sh configure   writes $W/ironic.conf from ironic.conf.in and a fresh SQLite schema
#   ironic-peer.sh start       ironic-conductor + ironic-api (json-rpc, noauth) in the background,
#                              PIDs in $W/{conductor,api}.pid; waits until the conductor is alive
#   ironic-peer.sh stop        SIGTERM by recorded PID, SIGKILL after 5 s
#
# Env: W (work dir, default /tmp/fp-bench/ironic), API_PORT (26395), RPC_PORT (28099),
# MIN_INTERVAL ([ipmi] min_command_interval, default 5 = Ironic's default).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${W:-/tmp/fp-bench/ironic}
API_PORT=${API_PORT:-26395}
RPC_PORT=${RPC_PORT:-28099}
MIN_INTERVAL=${MIN_INTERVAL:-5}
H='X-OpenStack-Ironic-API-Version: 1.82'

install_ironic() {
	export DEBIAN_FRONTEND=noninteractive
	printf '%s\n' 'ironic-common ironic/configure_db boolean false' \
		'ironic-common ironic/configure_rabbit boolean false' \
		'ironic-common ironic/configure_ksat boolean false' | debconf-set-selections
	local created=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		created=1
	fi
	apt-get update
	apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends \
		ironic-common python3-ironicclient python3-sushy
	[ $created = 0 ] || rm -f /usr/sbin/policy-rc.d
}

configure() {
	case $MIN_INTERVAL in '' | *[!0-9]*) echo "MIN_INTERVAL must be a whole number of seconds" >&2; exit 2 ;; esac
	mkdir -p "$W"/log "$W"/state "$W"/tmp "$W"/lock "$W"/tftp "$W"/images "$W"/http
	sed -e "s|@W@|$W|g" -e "s|@API_PORT@|$API_PORT|g" -e "s|@RPC_PORT@|$RPC_PORT|g" \
		-e "s|@MIN_INTERVAL@|$MIN_INTERVAL|g" "$HERE/ironic.conf.in" >"$W/ironic.conf"
	rm -f "$W/ironic.sqlite"
	/usr/bin/ironic-dbsync --config-file "$W/ironic.conf" create_schema >"$W/log/dbsync.out" 2>&1
}

wait_alive() {
	for _ in $(seq 1 300); do
		if curl -sf -H "$H" "http://127.0.0.1:$API_PORT/v1/conductors" 2>/dev/null | grep -q '"alive": true'; then
			return 0
		fi
		sleep 0.2
	done
	echo "ironic did not come up in 60 s (see $W/log)" >&2
	return 1
}

start() {
	nohup /usr/bin/ironic-conductor --config-file "$W/ironic.conf" >"$W/log/conductor.stdout" 2>&1 &
	echo $! >"$W/conductor.pid"
	nohup /usr/bin/ironic-api --config-file "$W/ironic.conf" >"$W/log/api.stdout" 2>&1 &
	echo $! >"$W/api.pid"
	wait_alive
}

stop() {
	local f p
	for f in api conductor; do
		[ -f "$W/$f.pid" ] || continue
		p=$(cat "$W/$f.pid")
		kill -TERM "$p" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
		rm -f "$W/$f.pid"
	done
}

case ${1:-} in
install) install_ironic ;;
configure) configure ;;
start) start ;;
stop) stop ;;
*) echo "usage: W=DIR MIN_INTERVAL=5 $0 install|configure|start|stop" >&2; exit 2 ;;
esac
