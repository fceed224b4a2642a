#!/usr/bin/env bash
# A stop does not wait for a queue of BMC timeouts: 24 IPMI nodes whose BMC never answers (a
# UDP socket that reads and never replies), 4 step executors (--sim-speed 0 derives 4), each
# BMC call given up after --bmc-timeout 3 s. Their step tasks fill the executor's queue; on
# SIGTERM the ones not started yet must end without running a step (their operations are in
# the store and resume at the next start), so the stop takes about one call's timeout - not
# the 24 / 4 x 3 s = 18 s it took when pool_free ran every queued task. The bound (9 s, three
# timeouts) is a count of timeouts, not a measure of speed: before the fix the stop took 18 s
# or more on any machine, after it at most one timeout plus the stop's own ~0.5 s.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 missing (the silent BMC)"; exit 77; }
san_skip "the stop path runs under them in every other integration test; this one waits on BMC timeouts"
D="$WORK/d"
PORT_FILE="$WORK/sink.port"
python3 - "$PORT_FILE" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 0))  # every 127.0.0.N reaches it: one address per node
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    s.recvfrom(65536)  # an IPMI request that is never answered
PY
SINK=$!
at_exit() { kill "$SINK" 2>/dev/null || true; }
for _ in $(seq 1 50); do [ -s "$PORT_FILE" ] && break; sleep 0.1; done
[ -s "$PORT_FILE" ] || fail "the silent BMC did not bind"
PORT=$(cat "$PORT_FILE")

start_serve "$D" --sim-speed 0 --bmc-timeout 3
items=$(jq -cn --argjson port "$PORT" '{items: [range(1; 25) as $i |
	{metadata: {name: ("q\($i)")},
	 spec: {site: "s", rack: "r1",
	        bmc: {driver: "ipmi", address: "127.0.0.\($i + 1):\($port)", username: "u", password: "p"},
	        gpus: {count: 8, model: "NVIDIA H100 80GB HBM3"}}}]}')
out=$(api POST /v1/nodes "$items")
assert_eq 201 "$(echo "$out" | head -1)" "POST of 24 ipmi nodes: $(echo "$out" | tail -1 | head -c 300)"
# the first steps are in their BMC calls and the rest queued behind them
sleep 2
t0=$(date +%s.%N)
stop_serve
t1=$(date +%s.%N)
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}')
awk -v t="$took" 'BEGIN{exit !(t < 9)}' || fail "SIGTERM took ${took} s with 24 unreachable BMCs queued (bound 9 s: three 3 s timeouts)"
echo "ok: SIGTERM with 24 unreachable BMCs queued stopped in ${took} s (--bmc-timeout 3)"
