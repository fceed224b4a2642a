#!/bin/bash
# bench/get.sh - GET /v1/nodes/{name} at 10,000 nodes, fleetplane vs nginx-light serving the
# same JSON bytes, with wrk (keep-alive, -t1), interleaved rounds, medians.
# Env: FP (binary), BENCH_WORK, ROUNDS (3), DUR (10s), CONNS ("64 256"), PROFILE=1 (perf record
# one extra fleetplane run at c=64 into $BENCH_WORK/get.perf.txt). FLEETPLANE_API_THREADS=N
# (passed through to serve) runs N poll threads (MHD thread pool) instead of 1.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-10s}
CONNS=${CONNS:-64 256}
D=$BENCH_WORK/get10k
machine

# 1. A data dir with 10,000 sim nodes that have finished onboarding (steady state).
if [ ! -s "$D/fleetplane.db" ]; then
	echo "creating $D: 10,000 sim nodes, waiting for them to settle"
	start_serve "$D" --sim 10000 --sim-speed 0
	wait_url "$D" 600
	for i in $(seq 1 600); do
		a=$(phase_count available); [ "${a:-0}" -ge 9990 ] && break; sleep 1
	done
	echo "available=$a"
	stop_serve
fi

# 2. Serve it (no --sim: the nodes exist; sim-speed 0 so nothing waits). wrk opens every
# connection from 127.0.0.1 and nginx limits none: the connection guard's per-client limit
# (100 by default, issue 16) is lifted, or wrk's 256 connections meet 156 refusals a round.
start_serve "$D" --sim-speed 0 --api-max-connections-per-client 0
wait_url "$D" 120
wait_ready 120
sleep 5 # let the start-up resync of the lifecycle controller pass
export TOKEN
curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/nodes/r01n01" >"$BENCH_WORK/node.json"
echo "node document: $(wc -c <"$BENCH_WORK/node.json") bytes"
curl -s -D - -o /dev/null -H "Authorization: Bearer $TOKEN" "$URL/v1/nodes/r01n01" | tr -d '\r' | sed 's/^/  fp hdr: /'

# 3. nginx-light, 1 worker, serving node.json for every /v1/nodes/* path.
NG=$BENCH_WORK/nginx
mkdir -p "$NG/logs" "$NG/root"
cp "$BENCH_WORK/node.json" "$NG/root/node.json"
NGPORT=${NGPORT:-18089}
cat >"$NG/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $NG/nginx.pid;
error_log $NG/logs/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	keepalive_requests 1000000;
	keepalive_timeout 60s;
	server {
		listen 127.0.0.1:$NGPORT;
		root $NG/root;
		location /v1/nodes/ { default_type application/json; rewrite ^ /node.json break; }
	}
}
NGX
nginx -c "$NG/nginx.conf" -p "$NG" &
NGINX_PID=$!
sleep 0.5
NGURL=http://127.0.0.1:$NGPORT
curl -s -D - -o /dev/null "$NGURL/v1/nodes/r01n01" | tr -d '\r' | sed 's/^/  nginx hdr: /'

# 4. Interleaved rounds. Parse req/s, p99 (ms) and non-2xx/errors from wrk --latency.
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub("us","",v); v/=1000} else if (v ~ /ms$/) {sub("ms","",v)} else if (v ~ /s$/) {sub("s","",v); v*=1000}; printf "%.2f", v}'; }
run_wrk() { # name url conns
	local out
	out=$(wrk -t1 -c"$3" -d"$DUR" --latency -s bench/get.lua "$2" 2>&1)
	local rps p99 errs non2xx
	rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
	p99=$(echo "$out" | awk '$1=="99%"{print $2}' | to_ms)
	errs=$(echo "$out" | awk '/Socket errors/{print $0}' | tr -d ',' | awk '{print $4+$6+$8+$10}')
	non2xx=$(echo "$out" | awk '/Non-2xx/{print $5}')
	echo "$1 c=$3 rps=$rps p99_ms=$p99 sock_errors=${errs:-0} non2xx=${non2xx:-0}" | tee -a "$BENCH_WORK/get.rounds"
}
: >"$BENCH_WORK/get.rounds"
for r in $(seq 1 "$ROUNDS"); do
	for c in $CONNS; do
		if [ $((r % 2)) = 1 ]; then
			run_wrk fleetplane "$URL" "$c"; run_wrk nginx "$NGURL" "$c"
		else
			run_wrk nginx "$NGURL" "$c"; run_wrk fleetplane "$URL" "$c"
		fi
	done
done
echo "== summary (median of $ROUNDS interleaved rounds, wrk -t1 -d$DUR, keep-alive) =="
for c in $CONNS; do
	f=$(awk -v c="c=$c" '$1=="fleetplane" && $2==c {sub("rps=","",$3); print $3}' "$BENCH_WORK/get.rounds")
	n=$(awk -v c="c=$c" '$1=="nginx" && $2==c {sub("rps=","",$3); print $3}' "$BENCH_WORK/get.rounds")
	fp99=$(awk -v c="c=$c" '$1=="fleetplane" && $2==c {sub("p99_ms=","",$4); print $4}' "$BENCH_WORK/get.rounds")
	np99=$(awk -v c="c=$c" '$1=="nginx" && $2==c {sub("p99_ms=","",$4); print $4}' "$BENCH_WORK/get.rounds")
	fm=$(median $f); nm=$(median $n)
	echo "c=$c fleetplane rps=$fm p99_ms=$(median $fp99) | nginx rps=$nm p99_ms=$(median $np99) | ratio fp/nginx=$(awk -v a="$fm" -v b="$nm" 'BEGIN{printf "%.2f", a/b}')"
done

# 5. Optional profile of one more fleetplane run at c=64.
if [ "${PROFILE:-0}" = 1 ]; then
	wrk -t1 -c64 -d12s -s bench/get.lua "$URL" >/dev/null 2>&1 &
	W=$!
	sleep 1
	perf record -F 999 -g -o "$BENCH_WORK/get.perf.data" -p "$SERVE_PID" -- sleep 8 >/dev/null 2>&1 || true
	wait $W || true
	perf report -i "$BENCH_WORK/get.perf.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -40 >"$BENCH_WORK/get.perf.txt" || true
	perf report -i "$BENCH_WORK/get.perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -12 >>"$BENCH_WORK/get.perf.txt" || true
	echo "profile: $BENCH_WORK/get.perf.txt"; head -25 "$BENCH_WORK/get.perf.txt"
fi
cleanup_all
