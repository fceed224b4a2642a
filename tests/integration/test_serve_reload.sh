#!/usr/bin/env bash
# packaging (issue 15): serve under systemd's protocol. With NOTIFY_SOCKET set, serve sends
# READY=1 once its API answers, RELOADING=1 (with MONOTONIC_USEC) then READY=1 around a SIGHUP,
# STOPPING=1 on SIGTERM. SIGHUP re-reads --config: a new log level and site-qps take effect at
# once, a key that needs a restart is named, a broken file is refused naming FILE:LINE and serve
# keeps answering with the old settings; SIGTERM still exits 0 and removes serve.url and the WAL
# files. The agent sends READY=1 and STOPPING=1 the same way.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 missing (the notify socket listener)"; exit 77; }
D="$WORK/d"
CONF="$WORK/serve.conf"
SOCK="$WORK/notify.sock"
GOT="$WORK/notify.txt"
# The service manager's end: a unix datagram socket; one line per datagram, newlines as spaces.
python3 - "$SOCK" "$GOT" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        f.write(s.recv(4096).decode().replace("\n", " ") + "\n")
PY
LISTENER=$!
at_exit() { kill "$LISTENER" 2>/dev/null || true; }
for _ in $(seq 1 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || fail "notify listener did not bind $SOCK"

# waits until file $1 has a line matching ERE $2 (5 s)
wait_line() {
	local i
	for i in $(seq 1 50); do grep -qE "$2" "$1" && return 0; sleep 0.1; done
	fail "no line matching [$2] in $1 within 5 s: $(tail -n 5 "$1")"
}
# (the log patterns match the plain and the logfmt line: msg="serve: reloaded" config=...)
readyz() { curl -s -o /dev/null -w '%{http_code}' "$FLEETPLANE_URL/readyz"; }

printf 'log-level info\nsite-qps 10\n' >"$CONF"
NOTIFY_SOCKET=$SOCK start_serve "$D" --config "$CONF"
wait_line "$GOT" '^READY=1 STATUS=serving$'
LOG="$D/serve.log"

# info: a request is not logged; after log-level debug and SIGHUP, it is
assert_eq 200 "$(readyz)" "readyz at info"
grep -qE 'debug.*readyz' "$LOG" && fail "a debug line at log-level info"
printf 'log-level debug\nsite-qps 10\n' >"$CONF"
kill -HUP "$SERVE_PID"
wait_line "$LOG" "serve: reloaded\"? config=$CONF applied=log-level restart_needed=none"
wait_line "$GOT" '^RELOADING=1 MONOTONIC_USEC=[0-9]+$'
assert_eq 200 "$(readyz)" "readyz at debug"
wait_line "$LOG" 'debug.*readyz'
assert_eq 2 "$(grep -c '^READY=1' "$GOT")" "READY=1 datagrams after the reload"

# site-qps is applied live (the limiters: test_ratelimit's test_set_limits); a key that needs
# a restart is named, and not applied
printf 'log-level debug\nsite-qps 20\nbmc-timeout 45\n' >"$CONF"
kill -HUP "$SERVE_PID"
wait_line "$LOG" 'serve: reloaded"? .*applied=site-qps restart_needed=bmc-timeout$'
wait_line "$LOG" 'serve: restart needed"? keys=bmc-timeout'

# a broken file: FILE:LINE named, old settings kept (still at debug), serve answers
printf 'log-level info\nsite-qps 20\nbmc-timeout soon\n' >"$CONF"
kill -HUP "$SERVE_PID"
wait_line "$LOG" "serve: reload failed, running settings kept\"? config=$CONF err=\"$CONF:3: bmc-timeout: "
kill -0 "$SERVE_PID" || fail "serve died on a SIGHUP with a broken file"
n=$(grep -cE 'debug.*readyz' "$LOG")
assert_eq 200 "$(readyz)" "readyz after a broken reload"
wait_line "$LOG" 'debug.*readyz'
[ "$(grep -cE 'debug.*readyz' "$LOG")" -gt "$n" ] || fail "log level changed by a broken file"

# the agent (fleetplane-agent.service is Type=notify too): READY=1 once set up, STOPPING=1 at the end
"$FP" node enroll -f - <<<'{"items":[{"metadata":{"name":"n1"},"spec":{"bmc":{"driver":"sim"}}}]}' >/dev/null
AG=$("$FP" token create --role agent --name n1 --node n1 | tail -n 1)
: >"$WORK/kmsg.txt"
NOTIFY_SOCKET=$SOCK FLEETPLANE_TOKEN=$AG "$FP" agent --node n1 --kernel-log "$WORK/kmsg.txt" \
	--state-dir "$WORK/agent" --once >"$WORK/agent.out" 2>&1 || fail "agent --once: $(cat "$WORK/agent.out")"
wait_line "$GOT" '^READY=1 STATUS=reporting$'
wait_line "$GOT" '^STOPPING=1$'
# a running agent has nothing to reload: SIGHUP leaves it running; SIGTERM stops it, exit 0
FLEETPLANE_TOKEN=$AG "$FP" agent --node n1 --kernel-log "$WORK/kmsg.txt" --state-dir "$WORK/agent" \
	--interval 1 >"$WORK/agent2.out" 2>&1 &
APID=$!
sleep 1
kill -HUP "$APID"
sleep 0.5
kill -0 "$APID" 2>/dev/null || fail "the agent died on SIGHUP: $(tail -3 "$WORK/agent2.out")"
kill -TERM "$APID"
wait "$APID" || fail "agent exit status $? on SIGTERM after a SIGHUP"

# SIGTERM: STOPPING=1, exit 0, nothing left behind
stop_serve
for _ in $(seq 1 50); do [ "$(grep -c '^STOPPING=1$' "$GOT")" = 2 ] && break; sleep 0.1; done
assert_eq 2 "$(grep -c '^STOPPING=1$' "$GOT")" "STOPPING=1 datagrams (agent, serve)"
[ -e "$D/serve.url" ] && fail "serve.url left after SIGTERM"
[ -e "$D/fleetplane.db-wal" ] && fail "fleetplane.db-wal left after SIGTERM"
[ -e "$D/fleetplane.db-shm" ] && fail "fleetplane.db-shm left after SIGTERM"
echo "ok: READY/RELOADING/STOPPING sent (serve, agent); SIGHUP applied log-level and site-qps, named bmc-timeout, kept settings on a bad file"
