#!/usr/bin/env bash
# etcd.sh - a real etcd 3.4 cluster of N members on loopback for tests (recipe:
# ../shared/recipes/services.md section 1), everything under DIR, bound to 127.0.0.1. Raft
# heartbeat 50 ms and election timeout 500 ms (loopback): a lost member is replaced as raft
# leader well inside a serve's lease renewal deadline.
#
#   etcd.sh start DIR [N]   picks 2N free TCP ports, starts N members (s1..sN; default 3) each in
#                           the background with its data in DIR/sI, log DIR/sI.log, pid DIR/sI.pid
#                           and client port in DIR/sI.port, and waits (bounded: 15 s) until every
#                           member answers /health true. Prints the endpoints (h:p,h:p,...) on
#                           stdout (also in DIR/endpoints). On failure: the logs' tails on stderr,
#                           what it started stopped, exit 1.
#   etcd.sh kill DIR I      SIGKILL member I (waits until it is gone).
#   etcd.sh stop DIR I      SIGSTOP member I (it keeps its sockets and answers nothing).
#   etcd.sh cont DIR I      SIGCONT member I.
#   etcd.sh restart DIR I   starts member I again on its ports and data (after kill).
#   etcd.sh down DIR        SIGTERM (SIGKILL after 5 s) to every member; idempotent, trap-safe; a
#                           pid is signalled only while its argv still names DIR.
set -uo pipefail
cmd=${1:?usage: etcd.sh start|kill|stop|cont|restart|down DIR [ARG]}
D=${2:?usage: etcd.sh CMD DIR}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

ours() { # PID: 1 when the pid's argv names DIR
	[ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$D/"
}

run_member() { # I: starts member I from DIR/cluster
	local i=$1 cp pp
	cp=$(cat "$D/s$i.port")
	pp=$(cat "$D/s$i.peer")
	local state=new
	[ -d "$D/s$i/member" ] && state=existing
	etcd --name "s$i" --data-dir "$D/s$i" \
		--listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp" \
		--listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
		--initial-cluster "$(cat "$D/cluster")" --initial-cluster-state "$state" \
		--initial-cluster-token "fp-$(basename "$D")" \
		--heartbeat-interval 50 --election-timeout 500 --log-level warn \
		>>"$D/s$i.log" 2>&1 &
	echo $! >"$D/s$i.pid"
}

healthy() { # I
	curl -sf -m 1 "http://127.0.0.1:$(cat "$D/s$1.port")/health" | grep -q '"health":"true"'
}

down() {
	local f p
	for f in "$D"/s*.pid; do
		[ -e "$f" ] || continue
		p=$(cat "$f")
		if ours "$p"; then kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; fi
	done
	for _ in $(seq 1 50); do
		local alive=0
		for f in "$D"/s*.pid; do
			[ -e "$f" ] || continue
			p=$(cat "$f")
			ours "$p" && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && alive=1
		done
		[ $alive = 0 ] && return 0
		sleep 0.1
	done
	for f in "$D"/s*.pid; do
		[ -e "$f" ] || continue
		p=$(cat "$f")
		ours "$p" && kill -KILL "$p" 2>/dev/null
	done
	return 0
}

case "$cmd" in
start)
	n=${3:-3}
	command -v etcd >/dev/null || { echo "etcd.sh: etcd is not installed (scripts/install-deps.sh --test)" >&2; exit 1; }
	mkdir -p "$D"
	cluster="" eps=""
	for i in $(seq 1 "$n"); do
		free_port >"$D/s$i.port"
		free_port >"$D/s$i.peer"
		cluster="${cluster:+$cluster,}s$i=http://127.0.0.1:$(cat "$D/s$i.peer")"
		eps="${eps:+$eps,}127.0.0.1:$(cat "$D/s$i.port")"
	done
	echo "$cluster" >"$D/cluster"
	echo "$eps" >"$D/endpoints"
	for i in $(seq 1 "$n"); do run_member "$i"; done
	for _ in $(seq 1 150); do
		ok=1
		for i in $(seq 1 "$n"); do healthy "$i" || ok=0; done
		[ $ok = 1 ] && { echo "$eps"; exit 0; }
		sleep 0.1
	done
	for i in $(seq 1 "$n"); do echo "--- s$i.log" >&2; tail -n 20 "$D/s$i.log" >&2; done
	down
	exit 1
	;;
kill)
	p=$(cat "$D/s$3.pid")
	ours "$p" && kill -KILL "$p"
	while ours "$p" && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; do sleep 0.05; done
	;;
stop) p=$(cat "$D/s$3.pid"); ours "$p" && kill -STOP "$p" ;;
cont) p=$(cat "$D/s$3.pid"); ours "$p" && kill -CONT "$p" ;;
restart)
	run_member "$3"
	for _ in $(seq 1 150); do healthy "$3" && exit 0; sleep 0.1; done
	echo "etcd.sh: member s$3 did not come back" >&2
	exit 1
	;;
down) down ;;
*) echo "etcd.sh: unknown command $cmd" >&2; exit 2 ;;
esac
