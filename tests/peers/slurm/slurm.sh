#!/usr/bin/env bash
# slurm.sh - a real Slurm 22.05 cluster on one host for tests (recipe:
# ../shared/recipes/services.md section 2): munged, slurmctld and two real slurmd (-N n1, -N n2)
# with eight fake GPUs each, three never-responding nodes ghost[01-03] and two FUTURE nodes
# fut[01-02], everything under DIR and bound to 127.0.0.1.
#
#   slurm.sh start DIR   writes DIR/{slurm.conf,gres.conf,munge/munge.key,dev/nvidia[0-7],
#                        prolog.sh,epilog.sh,healthcheck.sh}, picks four free TCP ports (DIR/ports:
#                        slurmctld, n1, n2, the ghosts' port where nothing listens), starts munged,
#                        slurmctld -D and the two slurmd -D, each in the background with its pid in
#                        DIR/pids/NAME, and waits (bounded: 10 s per step) until `scontrol ping` is
#                        UP and n1 and n2 are idle. On stdout it prints `export SLURM_CONF=...`
#                        (eval it); on failure it prints the failing daemon's log tail on stderr,
#                        stops what it started and exits 1. Starting a DIR that runs is refused.
#   slurm.sh stop DIR    SIGTERM to the slurmds, then slurmctld, then munged; SIGKILL after 5 s;
#                        waits until each pid is gone or a zombie. Idempotent: a DIR that is not
#                        running, partly started or already stopped is fine. Safe to call from a
#                        trap. A pid is only signalled while its argv still names DIR (no stale
#                        pid file can hit another process).
#   slurm.sh env DIR     prints the export lines again.
#
# SLURM_PEER_GHOSTS=HOSTLIST (e.g. "r[01-94]n[01-08]") adds never-responding nodes of those names
# to ghost[01-03] (benchmarks: bench/slurm_drain.sh).
#
# Accounting mode (opt-in: SLURM_PEER_ACCT=1 in the environment of start; recipe
# ../shared/recipes/services.md "Accounting with slurmdbd + MariaDB"): start also creates a
# MariaDB in DIR/mysql (mariadb-install-db, then mariadbd on 127.0.0.1 and DIR/mysql/mysqld.sock)
# and slurmdbd (DIR/slurmdbd.conf, mode 600) on two more free ports (DIR/ports lines 5 and 6),
# before slurmctld; slurm.conf then stores accounting in slurmdbd with AccountingStorageTRES=
# gres/gpu and AccountingStorageEnforce=associations,limits,qos, and the cluster fpci has the
# accounts research and ops (SLURM_PEER_ACCOUNTS, space-separated, overrides them) with the
# user root in each, the first its default. stop then stops slurmdbd and mariadbd too, after
# slurmctld and before munged. The default mode starts neither and writes no accounting lines.
#
# Every daemon's argv names DIR (-f DIR/slurm.conf, munged --socket=DIR/...), so
# `pgrep -f DIR/slurm.conf` finds what is left of a run.
#
# Sourced (`. slurm.sh`), it defines slurm_peer_start DIR and slurm_peer_stop DIR, which do the
# same in the calling shell: the daemons are then that shell's children, so stop reaps them
# (`wait`) and start exports SLURM_CONF itself; a failed start exits that shell (status 1 or 2),
# as `fail` would. Executed, the daemons outlive the script and are reparented when it exits;
# where PID 1 does not reap orphans (this sandbox's does not), a stopped daemon stays a zombie
# until the box's init reaps it, so stop counts a zombie as stopped (it holds no port or file).
# Tests source it.
#
# Prolog, Epilog and HealthCheckProgram are DIR/prolog.sh, epilog.sh and healthcheck.sh: each
# appends "NAME node=N job=J" to DIR/log/hooks.log and exits 0, or, when SLURM_PEER_PROLOG,
# SLURM_PEER_EPILOG or SLURM_PEER_HEALTHCHECK is set, then runs that command line and exits with
# its status (test_slurm_prolog.sh runs `fleetplane agent check` and `agent epilog` so). Slurm runs them with a bare environment (no SLURM_CONF), so each exports
# SLURM_CONF itself.
set -euo pipefail

slurm_peer_usage() {
	echo "usage: slurm.sh start DIR | stop DIR | env DIR" >&2
	exit 2
}

SLURM_PEER_STEP_TIMEOUT=${SLURM_PEER_TIMEOUT:-10} # seconds per readiness step

slurm_peer_free_tcp_ports() { # N: N distinct free TCP ports on 127.0.0.1, one a line
	/usr/bin/python3 -c 'import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])' "$1"
}

slurm_peer_write_conf() { # DIR CTLD_PORT N1_PORT N2_PORT GHOST_PORT [DBD_PORT]
	local d=$1 cp=$2 p1=$3 p2=$4 pg=$5 dbd=${6:-}
	local acct="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
	if [ -n "$dbd" ]; then
		# AccountingStoragePass names the munge socket: without it slurmctld's connection to
		# slurmdbd uses the default socket and fails ("Protocol authentication error").
		acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$dbd
AccountingStoragePass=$d/munge/munge.sock
AccountingStorageTRES=gres/gpu
AccountingStorageEnforce=associations,limits,qos
JobAcctGatherType=jobacct_gather/linux"
	fi
	cat >"$d/slurm.conf" <<EOF
# Written by tests/peers/slurm/slurm.sh (recipe: shared/recipes/services.md section 2).
ClusterName=fpci
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$cp
SlurmdPort=$p1
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.sock
CredType=cred/munge
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pidfile
SlurmdPidFile=$d/run/slurmd-%n.pidfile
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
JobCompType=jobcomp/filetxt
JobCompLoc=$d/jobcomp.txt
$acct
ReturnToService=2
SlurmdTimeout=12
# A never-responding node turns NOT_RESPONDING about 5.5 s + MessageTimeout after slurmctld
# starts, whatever SlurmdTimeout is (measured: 15.5 s at the default 10, 10.5 s at 5, 8.5 s
# at 3); 5 s is ample for messages on loopback.
MessageTimeout=5
Prolog=$d/prolog.sh
Epilog=$d/epilog.sh
HealthCheckProgram=$d/healthcheck.sh
HealthCheckInterval=60
HealthCheckNodeState=ANY
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p1 CPUs=1 RealMemory=500 Gres=gpu:8 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p2 CPUs=1 RealMemory=500 Gres=gpu:8 State=UNKNOWN
NodeName=ghost[01-03]${SLURM_PEER_GHOSTS:+,$SLURM_PEER_GHOSTS} NodeAddr=127.0.0.1 Port=$pg CPUs=1 RealMemory=500 Gres=gpu:8 State=UNKNOWN
NodeName=fut[01-02] CPUs=1 RealMemory=500 Gres=gpu:8 State=FUTURE
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	printf 'AutoDetect=off\nName=gpu File=%s/dev/nvidia[0-7]\n' "$d" >"$d/gres.conf"
	local h
	for h in prolog epilog healthcheck; do
		cat >"$d/$h.sh" <<EOF
#!/bin/sh
# $h for the test cluster in $d (slurm.sh): logs and succeeds.
export SLURM_CONF=$d/slurm.conf
echo "$h node=\${SLURMD_NODENAME:-} job=\${SLURM_JOB_ID:-}" >>$d/log/hooks.log
EOF
		slurm_peer_hook_cmd "$d/$h.sh" "$h"
		echo "exit 0" >>"$d/$h.sh"
		chmod 755 "$d/$h.sh"
	done
}

# Opt-in hook commands (off unless set, so other tests keep the logging hooks):
# SLURM_PEER_PROLOG, SLURM_PEER_EPILOG, SLURM_PEER_HEALTHCHECK each name one shell command line
# that the hook runs after its log line; the hook then exits with that command's status (a
# non-zero Prolog drains the node and requeues the job held, slurm.conf(5) "Prolog").
slurm_peer_hook_cmd() { # SCRIPT HOOK
	local var
	var=SLURM_PEER_$(echo "$2" | tr '[:lower:]' '[:upper:]')
	[ -n "${!var:-}" ] || return 0
	printf '%s\nexit $?\n' "${!var}" >>"$1"
}

# slurm_peer_owned DIR PID: PID is alive (not a zombie) and its argv names DIR (slurmdbd, which
# has no option naming its configuration: its environment holds SLURM_CONF=DIR/slurm.conf).
slurm_peer_owned() {
	local dir=$1 pid=$2 st
	[ -r "/proc/$pid/stat" ] || return 1
	st=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[ "$st" != Z ] || return 1
	tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$dir/" && return 0
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmdbd ] &&
		tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "SLURM_CONF=$dir/slurm.conf"
}

# slurm_peer_launch DIR NAME CMD...: starts CMD in the background, its pid in DIR/pids/NAME.
slurm_peer_launch() {
	local dir=$1 name=$2
	shift 2
	"$@" </dev/null >>"$dir/log/$name.stdout" 2>&1 &
	echo $! >"$dir/pids/$name"
}

# slurm_peer_await DIR NAMES WHAT CMD...: polls CMD every 0.05 s for SLURM_PEER_STEP_TIMEOUT s
# while the daemons NAMES (comma-separated) live.
slurm_peer_await() {
	local dir=$1 names=$2 what=$3 name
	shift 3
	for _ in $(seq 1 $((SLURM_PEER_STEP_TIMEOUT * 20))); do
		"$@" && return 0
		for name in ${names//,/ }; do
			slurm_peer_owned "$dir" "$(cat "$dir/pids/$name")" ||
				slurm_peer_start_failed "$dir" "$names" "$what: $name exited"
		done
		sleep 0.05
	done
	slurm_peer_start_failed "$dir" "$names" "$what: not within $SLURM_PEER_STEP_TIMEOUT s"
}

# slurm_peer_start_failed DIR NAMES WHY: the daemons' log tails on stderr, stop, exit 1.
slurm_peer_start_failed() {
	local dir=$1 names=$2 name f
	echo "slurm.sh: start failed: $3" >&2
	for name in ${names//,/ }; do
		for f in "$dir/log/$name.stdout" "$dir/log/$name.log"; do
			[ -s "$f" ] || continue
			echo "--- tail $f" >&2
			tail -n 20 "$f" >&2
		done
	done
	slurm_peer_stop "$dir"
	exit 1
}

slurm_peer_munge_ready() { munge -n -S "$1/munge/munge.sock" >/dev/null 2>&1; }
slurm_peer_ctld_ready() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
slurm_peer_nodes_idle() { [ "$(sinfo -h -N -n n1,n2 -o %T 2>/dev/null | sort -u)" = idle ]; }

slurm_peer_mysql_ready() {
	mariadb --no-defaults -S "$1/mysql/mysqld.sock" -uroot -e 'select 1' >/dev/null 2>&1
}
slurm_peer_dbd_ready() { timeout 5 sacctmgr -n show cluster format=cluster >/dev/null 2>&1; }

# slurm_peer_start_acct DIR MYSQL_PORT DBD_PORT: MariaDB, its slurm user, slurmdbd.conf and
# slurmdbd, then the cluster, accounts and user (before slurmctld, which loads them at start).
slurm_peer_start_acct() {
	local dir=$1 mp=$2 dp=$3 a accounts=${SLURM_PEER_ACCOUNTS:-research ops}
	rm -rf "$dir/mysql"
	mkdir -p "$dir/mysql"
	if ! mariadb-install-db --no-defaults --datadir="$dir/mysql/data" --user=root \
		--auth-root-authentication-method=normal --skip-test-db \
		>"$dir/log/mariadb-install-db.stdout" 2>&1; then
		echo "slurm.sh: mariadb-install-db failed:" >&2
		tail -n 20 "$dir/log/mariadb-install-db.stdout" >&2
		slurm_peer_stop "$dir"
		exit 1
	fi
	slurm_peer_launch "$dir" mariadbd mariadbd --no-defaults --datadir="$dir/mysql/data" \
		--socket="$dir/mysql/mysqld.sock" --port="$mp" --bind-address=127.0.0.1 --user=root \
		--pid-file="$dir/run/mysqld.pid" --log-error="$dir/log/mariadbd.log" \
		--skip-name-resolve --innodb-buffer-pool-size=64M
	slurm_peer_await "$dir" mariadbd "mariadbd ready" slurm_peer_mysql_ready "$dir"
	mariadb --no-defaults -S "$dir/mysql/mysqld.sock" -uroot -e \
		"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
		 GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
		slurm_peer_start_failed "$dir" mariadbd "mariadb: creating the slurm user"
	(
		umask 077
		cat >"$dir/slurmdbd.conf" <<EOF
# Written by tests/peers/slurm/slurm.sh (accounting mode). slurmdbd refuses it unless mode 600.
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dp
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$mp
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
LogFile=$dir/log/slurmdbd.log
PidFile=$dir/run/slurmdbd.pid
EOF
	)
	chmod 600 "$dir/slurmdbd.conf"
	# slurmdbd reads slurmdbd.conf next to SLURM_CONF (exported by start).
	slurm_peer_launch "$dir" slurmdbd slurmdbd -D
	slurm_peer_await "$dir" mariadbd,slurmdbd "slurmdbd answers" slurm_peer_dbd_ready
	{
		timeout 10 sacctmgr -i add cluster fpci &&
			for a in $accounts; do
				timeout 10 sacctmgr -i add account "$a" Description=ci Organization=ci \
					Cluster=fpci || exit 1
			done &&
			timeout 10 sacctmgr -i add user root Account="${accounts// /,}" \
				DefaultAccount="${accounts%% *}" Cluster=fpci
	} >>"$dir/log/sacctmgr.stdout" 2>&1 ||
		slurm_peer_start_failed "$dir" mariadbd,slurmdbd,sacctmgr \
			"sacctmgr: adding the cluster, accounts and user"
}

slurm_peer_print_env() {
	echo "export SLURM_CONF=$1/slurm.conf"
}

slurm_peer_start() {
	local dir=$1 name
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	case $dir in *[!A-Za-z0-9_./-]*)
		echo "slurm.sh: DIR must be made of [A-Za-z0-9_./-] (it goes into slurm.conf)" >&2
		exit 2
		;;
	esac
	for name in munged slurmctld slurmd-n1 slurmd-n2 mariadbd slurmdbd; do
		if [ -f "$dir/pids/$name" ] && slurm_peer_owned "$dir" "$(cat "$dir/pids/$name")"; then
			echo "slurm.sh: $dir already runs $name; stop it first" >&2
			exit 1
		fi
	done
	# munged refuses a socket under a directory that others cannot search
	# ("Socket is inaccessible: execute permissions for all required").
	local up=$dir
	while [ "$up" != / ]; do
		up=$(dirname "$up")
		[ $((0$(stat -c %a "$up") & 1)) -eq 1 ] || {
			echo "slurm.sh: munged needs o+x on every directory above DIR; $up is $(stat -c %a "$up")" >&2
			exit 2
		}
	done
	chmod 755 "$dir"
	rm -rf "$dir/state" "$dir/spool" "$dir/run" "$dir/pids" "$dir/slurmdbd.conf"
	mkdir -p "$dir/munge"
	chmod 755 "$dir/munge"
	mkdir -p "$dir/state" "$dir/log" "$dir/run" "$dir/pids" "$dir/spool/n1" "$dir/spool/n2" \
		"$dir/dev" "$dir/jobs"
	if [ ! -s "$dir/munge/munge.key" ]; then
		(umask 077 && head -c 1024 /dev/urandom >"$dir/munge/munge.key")
	fi
	local i
	for i in 0 1 2 3 4 5 6 7; do ln -sfn /dev/null "$dir/dev/nvidia$i"; done
	local ports acct=${SLURM_PEER_ACCT:-0}
	if [ "$acct" = 1 ]; then
		mapfile -t ports < <(slurm_peer_free_tcp_ports 6)
	else
		mapfile -t ports < <(slurm_peer_free_tcp_ports 4)
	fi
	printf '%s\n' "${ports[@]}" >"$dir/ports"
	slurm_peer_write_conf "$dir" "${ports[0]}" "${ports[1]}" "${ports[2]}" "${ports[3]}" \
		"${ports[5]:-}"
	export SLURM_CONF=$dir/slurm.conf

	slurm_peer_launch "$dir" munged munged -F --socket="$dir/munge/munge.sock" \
		--key-file="$dir/munge/munge.key" --pid-file="$dir/run/munged.pidfile" \
		--seed-file="$dir/munge/munged.seed"
	slurm_peer_await "$dir" munged "munged ready" slurm_peer_munge_ready "$dir"
	[ "$acct" != 1 ] || slurm_peer_start_acct "$dir" "${ports[4]}" "${ports[5]}"
	slurm_peer_launch "$dir" slurmctld slurmctld -D -f "$dir/slurm.conf"
	slurm_peer_await "$dir" slurmctld "slurmctld ping UP" slurm_peer_ctld_ready
	for name in n1 n2; do
		slurm_peer_launch "$dir" "slurmd-$name" slurmd -D -f "$dir/slurm.conf" -N "$name"
	done
	slurm_peer_await "$dir" slurmd-n1,slurmd-n2 "n1 and n2 idle" slurm_peer_nodes_idle
	slurm_peer_print_env "$dir"
}

# slurm_peer_stop_one DIR NAME: SIGTERM, up to 5 s, SIGKILL; wait (when our child) or poll
# until gone.
slurm_peer_stop_one() {
	local dir=$1 name=$2 pid i
	[ -f "$dir/pids/$name" ] || return 0
	pid=$(cat "$dir/pids/$name")
	if slurm_peer_owned "$dir" "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 100); do
			slurm_peer_owned "$dir" "$pid" || break
			sleep 0.05
		done
		if slurm_peer_owned "$dir" "$pid"; then
			echo "slurm.sh: $name (pid $pid) ignored SIGTERM for 5 s; SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			for i in $(seq 1 40); do
				slurm_peer_owned "$dir" "$pid" || break
				sleep 0.05
			done
		fi
	fi
	wait "$pid" 2>/dev/null || true
	rm -f "$dir/pids/$name"
}

# slurm_peer_leftovers DIR: pids of processes that belong to the run in DIR: the daemons (their argv names
# DIR/slurm.conf, DIR/munge/ or DIR/mysql/) and slurmstepd and slurmdbd (their environment has SLURM_CONF=DIR/slurm.conf).
slurm_peer_leftovers() {
	local dir=$1 pid
	pgrep -f "$dir/(slurm\.conf|munge/|mysql/)" || true
	for pid in $(pgrep -x slurmstepd || true) $(pgrep -x slurmdbd || true); do
		tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "SLURM_CONF=$dir/slurm.conf" &&
			echo "$pid"
	done
}

slurm_peer_stop() {
	local dir=$1 name pid i
	[ -d "$dir" ] || return 0
	dir=$(cd "$dir" && pwd)
	# slurmd leaves running jobs' slurmstepd behind by design (so it can restart under them):
	# cancel the jobs first while slurmctld still answers.
	if [ -f "$dir/pids/slurmctld" ] && slurm_peer_owned "$dir" "$(cat "$dir/pids/slurmctld")"; then
		local jobs
		jobs=$(SLURM_CONF=$dir/slurm.conf timeout 5 squeue -h -o %i 2>/dev/null || true)
		if [ -n "$jobs" ]; then
			# shellcheck disable=SC2086 # job ids, one a word
			SLURM_CONF=$dir/slurm.conf timeout 5 scancel $jobs 2>/dev/null || true
			for i in $(seq 1 100); do
				[ -z "$(SLURM_CONF=$dir/slurm.conf timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
				sleep 0.05
			done
		fi
	fi
	for name in slurmd-n1 slurmd-n2 slurmctld slurmdbd mariadbd munged; do slurm_peer_stop_one "$dir" "$name"; done
	for pid in $(slurm_peer_leftovers "$dir"); do
		echo "slurm.sh: SIGKILL to leftover $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") (pid $pid)" >&2
		kill -KILL "$pid" 2>/dev/null || true
	done
	sleep 0.1
	for pid in $(slurm_peer_leftovers "$dir"); do
		if [ "$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; then
			echo "slurm.sh: still running after stop: pid $pid" >&2
			return 1
		fi
	done
}

# Executed: the command line above. Sourced: only the functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	[ $# -eq 2 ] || slurm_peer_usage
	case $1 in
	start) slurm_peer_start "$2" ;;
	stop) slurm_peer_stop "$2" ;;
	env) slurm_peer_print_env "$(cd "$2" && pwd)" ;;
	*) slurm_peer_usage ;;
	esac
fi
