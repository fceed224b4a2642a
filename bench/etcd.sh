#!/bin/bash
# bench/etcd.sh - the etcd backend's figures (docs/benchmarks.md "etcd store"):
#  1. writes/s: bench/etcd_puts.c, store_put through fleetplane's etcd store vs raw
#     POST /v3/kv/put, same value size (VALUE, 1024 B) and client concurrency (THREADS, 8), on a
#     single-member etcd (tests/peers/etcd/etcd.sh), ROUNDS interleaved rounds.
#  2. N (10000) zero-latency sim nodes to available: serve --sim N --sim-speed 0 on SQLite vs on
#     that etcd, time from exec to all available (phase gauge on /metrics), rounds interleaved.
# Failover time is printed by tests/integration/test_etcd_failover.sh.
# Env: FP, BENCH_WORK, ROUNDS (3), N (10000), THREADS (8), PUTS (500 per thread), VALUE (1024),
# LIMIT_S (600 per run).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-10000}
THREADS=${THREADS:-8}
PUTS=${PUTS:-500}
VALUE=${VALUE:-1024}
LIMIT_S=${LIMIT_S:-600}
machine
E="$BENCH_WORK/etcd"
"tests/peers/etcd/etcd.sh" down "$E" 2>/dev/null || true
rm -rf "$E"
EP=$(tests/peers/etcd/etcd.sh start "$E" 1)
trap 'cleanup_all; tests/peers/etcd/etcd.sh down "$E"' EXIT
echo "etcd $(etcd --version | head -1), one member, endpoint $EP"

cc -std=c11 -D_GNU_SOURCE -O2 -pthread -Isrc -o "$BENCH_WORK/etcd_puts" bench/etcd_puts.c \
	build/store/*.o build/base/*.o build/core/*.o -lcurl -ljansson -lsqlite3 -lsodium -lm -lpthread
"$BENCH_WORK/etcd_puts" "$EP" "$THREADS" "$PUTS" "$VALUE" "$ROUNDS" | tee "$BENCH_WORK/puts.out"
raw=$(awk '$1=="raw"{sub("writes/s=","",$5); print $5}' "$BENCH_WORK/puts.out")
st=$(awk '$1=="store"{sub("writes/s=","",$5); print $5}' "$BENCH_WORK/puts.out")
mr=$(median $raw)
ms=$(median $st)
echo "writes/s median: raw etcd put=$mr fleetplane store_put=$ms ratio=$(awk -v a="$ms" -v b="$mr" 'BEGIN{printf "%.2f", a/b}')"

run_to_available() { # LABEL ARGS...: prints seconds from exec to N available
	local label=$1 dir="$BENCH_WORK/avail-$1"
	shift
	rm -rf "$dir"
	start_serve "$dir" --sim "$N" --sim-speed 0 "$@"
	wait_url "$dir" "$LIMIT_S" || { echo "$label: serve did not start" >&2; return 1; }
	local a=0 i
	for i in $(seq 1 $((LIMIT_S * 4))); do
		a=$(phase_count available)
		[ "${a:-0}" = "$N" ] && break
		sleep 0.25
	done
	local t=$(fsub "$(now)" "$T_EXEC")
	stop_serve
	echo "$label round: $a/$N available after $t s"
	echo "$t" >>"$BENCH_WORK/avail.$label"
}
: >"$BENCH_WORK/avail.sqlite"
: >"$BENCH_WORK/avail.etcd"
for r in $(seq 1 "$ROUNDS"); do
	run_to_available sqlite
	ETCDCTL_API=3 etcdctl --endpoints="$EP" del --prefix "/av$r/" >/dev/null
	run_to_available etcd --store "etcd://$EP/av$r"
done
s=$(median $(cat "$BENCH_WORK/avail.sqlite"))
e=$(median $(cat "$BENCH_WORK/avail.etcd"))
echo "N=$N to available median: sqlite=$s s etcd=$e s ratio etcd/sqlite=$(awk -v a="$e" -v b="$s" 'BEGIN{printf "%.2f", a/b}')"
