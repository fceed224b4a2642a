#!/bin/bash
# test_api_conns.sh - slow and idle clients do not deny service (issue 16 item 6): the
# per-client connection limit, header and body deadlines (a client that trickles a byte every
# half second is closed, which libmicrohttpd's inactivity timeout alone never does), eviction of
# half-open connections when the total is reached so /healthz and real clients still get in,
# keep-alive connections that idle between requests kept, and one log line per offender per
# interval. Clients bind 127.0.0.2-5 (the whole of 127/8 is loopback) to be distinct addresses.
. "$(dirname "$0")/lib.sh"

PY=$WORK/conns.py
cat >"$PY" <<'EOF'
import socket, sys, time

def connect(port, src, first=b"GET /healthz HTTP/1.1\r\nHo"):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    if first:
        s.send(first)
    return s

def closed(s, wait):
    """1 when the server closed s (EOF or reset) within wait seconds, else 0."""
    s.settimeout(wait)
    try:
        return 1 if s.recv(100) == b"" else 0
    except socket.timeout:
        return 0
    except OSError:
        return 1

def cmd_half_open(port, src, n, hold):
    """Opens n half-open connections from src; prints how many the server closed at once
    (within 1.5 s) and, after hold more seconds, how many are closed in all."""
    socks = [connect(port, src) for _ in range(n)]
    time.sleep(1.5)
    at_once = sum(closed(s, 0.01) for s in socks)
    end = time.time() + hold
    while time.time() < end:
        time.sleep(0.2)
    print(at_once, sum(closed(s, 0.01) for s in socks))

def cmd_trickle(port, src, secs, body):
    """Sends a request one byte every 0.5 s for at most secs seconds; prints the seconds after
    which the server closed the connection, or 'open'."""
    if body:
        req = b"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"{" * 1000
        s = connect(port, src, req[:60])
        rest = req[60:]
    else:
        s = connect(port, src, None)
        rest = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000
    t0 = time.time()
    for ch in rest:
        if time.time() - t0 > secs:
            print("open")
            return
        try:
            s.send(bytes([ch]))
        except OSError:
            break
        if closed(s, 0.5):
            break
    print("%.0f" % (time.time() - t0))

def cmd_keepalive(port, src, idle):
    """Two requests on one connection with idle seconds between them; prints both statuses."""
    s = connect(port, src, None)
    out = []
    for i in range(2):
        s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        data = s.recv(4096)
        out.append(data.split(b" ")[1].decode() if data else "closed")
        if i == 0:
            time.sleep(idle)
    print(" ".join(out))

def cmd_flood(port, src, n):
    """Opens n connections from src as fast as it can, then drops them all; prints how many
    connected."""
    socks = []
    for _ in range(n):
        try:
            socks.append(connect(port, src))
        except OSError:
            pass
    time.sleep(0.5)
    print(len(socks))

globals()["cmd_" + sys.argv[1]](int(sys.argv[2]), sys.argv[3], *[int(a) for a in sys.argv[4:]])
EOF
py() { python3 "$PY" "$@"; }
metric() { # NAME{LABELS}: its value on /metrics
	curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics" |
		awk -v k="$1" '$1 == k { print $2 }'
}
dropped() { metric "fleetplane_http_connections_dropped_total{reason=\"$1\"}"; }
healthz() { curl -s -m 5 -o /dev/null -w '%{http_code}' "$FLEETPLANE_URL/healthz"; }

# 1. Per-client limit and deadlines.
start_serve "$WORK/a" --api-max-connections-per-client 20 --api-header-timeout 4 \
	--api-body-timeout 4
PORT=${FLEETPLANE_URL##*:}

# 30 half-open from one address: 10 over its limit are closed at once, the 20 by their header
# deadline (4 s) within the 8 s hold; another address's /healthz answers meanwhile.
py half_open "$PORT" 127.0.0.2 30 8 >"$WORK/ho" &
sleep 0.8
assert_eq 200 "$(healthz)" "/healthz while one client holds its 20 connections"
wait $!
read -r at_once total <"$WORK/ho"
assert_eq 10 "$at_once" "connections over the per-client limit closed at once"
assert_eq 30 "$total" "connections closed once the header deadline passed"
assert_eq 10 "$(dropped per_client)" "dropped{per_client}"
assert_eq 20 "$(dropped header_timeout)" "dropped{header_timeout}"

# A client that sends its headers one byte every 0.5 s (never idle for libmicrohttpd's 60 s
# inactivity timeout) is closed by the header deadline, not served for ever (the 1,000 header
# bytes would take 500 s).
t=$(py trickle "$PORT" 127.0.0.3 20 0)
[ "$t" != open ] || fail "trickled headers: still open after 20 s (deadline 4 s)"
# The same for a body: headers whole, 1,000 body bytes at 2 a second.
t=$(py trickle "$PORT" 127.0.0.3 20 1)
[ "$t" != open ] || fail "trickled body: still open after 20 s (deadline 4 s)"
assert_eq 1 "$(dropped body_timeout)" "dropped{body_timeout}"
assert_eq 21 "$(dropped header_timeout)" "dropped{header_timeout} after the trickle"

# A keep-alive connection idle for 6 s (longer than the header deadline) between two requests
# is not a slow client: both requests are answered.
assert_eq "200 200" "$(py keepalive "$PORT" 127.0.0.4 6)" "keep-alive requests 6 s apart"

# One log line per offender per interval: 300 connections opened and dropped by 127.0.0.5
# (280 over its limit) give at most 2 lines naming it (the first at once, the rest after the
# 10 s interval), and libmicrohttpd's per-connection messages stay out of the warnings.
before=$(grep -c 'client=127.0.0.5' "$WORK/a/serve.log" || true)
py flood "$PORT" 127.0.0.5 300 >/dev/null
sleep 11
lines=$(($(grep -c 'client=127.0.0.5' "$WORK/a/serve.log" || true) - before))
[ "$lines" -ge 1 ] && [ "$lines" -le 2 ] ||
	fail "log lines naming the flooding client: $lines, want 1 or 2"
grep 'client=127.0.0.5' "$WORK/a/serve.log" | tail -n 1 | grep -q 'refused_per_client=[1-9]' ||
	fail "the flooding client's log line has no refused_per_client count"
warn=$(grep -c "level=warn msg=\"http server error" "$WORK/a/serve.log" || true)
assert_eq 0 "$warn" "libmicrohttpd connection messages logged as warnings"
stop_serve

# 2. Total exhaustion: no per-client limit, 64 connections in all. 80 half-open connections from
# one address: the newest push out the oldest half-open ones, /healthz and an authenticated
# list still answer, and the server holds no more than its limit.
start_serve "$WORK/b" --api-max-connections 64 --api-max-connections-per-client 0 \
	--api-header-timeout 30
PORT=${FLEETPLANE_URL##*:}
py half_open "$PORT" 127.0.0.2 80 4 >"$WORK/ho" &
sleep 2
assert_eq 200 "$(healthz)" "/healthz with the listener full of half-open connections"
code=$(api GET /v1/nodes | head -n 1)
assert_eq 200 "$code" "GET /v1/nodes with the listener full of half-open connections"
open=$(metric fleetplane_http_connections_open)
[ "$open" -le 64 ] || fail "open connections $open over the limit of 64"
wait $!
read -r at_once total <"$WORK/ho"
[ "$(dropped evicted)" -ge 16 ] || fail "dropped{evicted} $(dropped evicted), want >= 16 (80 - 64)"
assert_eq 0 "$(dropped total)" "dropped{total}: there was always a half-open one to close"
stop_serve
echo "PASS $TEST_NAME"
