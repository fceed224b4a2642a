#!/bin/bash
# bench/writes.sh - durable writes per second: fleetplane's API (PUT /v1/nodes/{name} with
# If-Match, on SQLite) against etcd 3.4 puts (single member, v3 JSON gateway), one harness
# (bench/writes.c), same disk (both data dirs under BENCH_WORK), rounds interleaved
# (fp, etcd, etcd, fp, ...). docs/benchmarks.md "Durable writes".
# Env: FP, BENCH_WORK, ROUNDS (3), CLIENTS ("64 1"), SECS (10 per run).
# Prints per run "<kind> clients=C ... writes/s=X" and per client count the medians and ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
CLIENTS=${CLIENTS:-64 1}
SECS=${SECS:-10}
machine
cc -std=c11 -D_GNU_SOURCE -O2 -pthread -o "$BENCH_WORK/writes" bench/writes.c -lcurl -ljansson
E="$BENCH_WORK/writes-etcd"
tests/peers/etcd/etcd.sh down "$E" 2>/dev/null || true
rm -rf "$E"
EP=$(tests/peers/etcd/etcd.sh start "$E" 1)
trap 'cleanup_all; tests/peers/etcd/etcd.sh down "$E"' EXIT
echo "etcd $(etcd --version | head -1), one member, endpoint $EP"

# The nodes bench-001..bench-NNN, on sim machines that reach available at once and then stay
# quiet (no operation in flight to race the benchmark's writes).
d="$BENCH_WORK/writes-fp"
rm -rf "$d"
start_serve "$d" --sim-speed 0
wait_url "$d" 60
wait_ready 60
max=0
for c in $CLIENTS; do [ "$c" -gt "$max" ] && max=$c; done
jq -cn --argjson n "$max" '{items: [range(1; $n + 1) as $i |
	{metadata: {name: ("bench-\($i | tostring | ("00" + .)[-3:])")},
	 spec: {site: "bench", rack: "r1", bmc: {driver: "sim"},
	        gpus: {count: 8, model: "NVIDIA H100 80GB HBM3"}}}]}' >"$BENCH_WORK/writes-nodes.json"
code=$(curl -s -o "$d/post.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
	-H 'Content-Type: application/json' --data-binary @"$BENCH_WORK/writes-nodes.json" "$URL/v1/nodes")
[ "$code" = 201 ] || { echo "POST nodes: HTTP $code: $(head -c 300 "$d/post.out")" >&2; exit 1; }
for i in $(seq 1 600); do
	[ "$(phase_count available)" = "$max" ] && break
	sleep 0.1
done
[ "$(phase_count available)" = "$max" ] || { echo "nodes did not reach available" >&2; exit 1; }
echo "fleetplane: $max nodes available; store $d/fleetplane.db"

RES="$BENCH_WORK/writes.rounds"
: >"$RES"
for c in $CLIENTS; do
	for r in $(seq 1 "$ROUNDS"); do
		if [ $((r % 2)) = 1 ]; then order="fp etcd"; else order="etcd fp"; fi
		for k in $order; do
			if [ "$k" = fp ]; then
				"$BENCH_WORK/writes" fp "$URL" "$TOKEN" "$c" "$SECS" | tee -a "$RES"
			else
				"$BENCH_WORK/writes" etcd "$EP" "$c" "$SECS" | tee -a "$RES"
			fi
		done
	done
	f=$(awk -v c="clients=$c" '$1=="fp" && $2==c {sub("writes/s=","",$5); print $5}' "$RES")
	e=$(awk -v c="clients=$c" '$1=="etcd" && $2==c {sub("writes/s=","",$5); print $5}' "$RES")
	mf=$(median $f)
	me=$(median $e)
	echo "writes clients=$c median: fleetplane=$mf etcd=$me ratio=$(awk -v a="$mf" -v b="$me" 'BEGIN{printf "%.2f", a/b}')"
done
curl -s -H "Authorization: Bearer $TOKEN" "$URL/metrics" |
	grep -E '^fleetplane_store_batch_size_(sum|count)' | tr '\n' ' '
echo
