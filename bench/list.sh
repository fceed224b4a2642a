#!/bin/bash
# bench/list.sh - listing 100,000 nodes through the API vs a raw sqlite3 scan of the same
# documents (issue 17 "list"; docs/benchmarks.md "List 100,000 nodes").
#  1. Builds (once) $BENCH_WORK/list100k: a settled `serve --sim 200 --sim-speed 0` data dir,
#     grown offline to N (100000) available nodes by bench/mk100k.sh.
#  2. Starts serve on it (--sim-speed 0, no --sim) and waits for /readyz; then ROUNDS
#     interleaved rounds of (a) GET /v1/nodes?limit=5000 and every continue page with curl
#     (bodies to files; the time is exec of the first request to the end of the last) and
#     (b) sqlite3 SELECT of every /nodes/ value on the same database (WAL; serve keeps running),
#     output to /dev/null, and (c) the same pages through bench/listc.c: one keep-alive
#     libcurl connection, bodies kept in memory, as a client library lists (curl per page pays
#     ~10 ms of exec per page here). Prints seconds, bytes, the ratios sqlite3/API for (a)
#     and (c) (target >= 0.5) and serve's VmRSS/VmHWM after each full list (target: <= 250 MB
#     after three).
# Env: FP, BENCH_WORK, ROUNDS (3), N (100000), LIMIT (5000 per page).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-100000}
LIMIT=${LIMIT:-5000}
SRC=$BENCH_WORK/list-src
D=$BENCH_WORK/list100k
machine
trap cleanup_all EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -o "$BENCH_WORK/listc" bench/listc.c -lcurl

if [ ! -s "$D/fleetplane.db" ]; then
	rm -rf "$SRC"
	start_serve "$SRC" --sim 200 --sim-speed 0
	wait_url "$SRC" 120
	for _ in $(seq 1 600); do
		[ "$(phase_count available)" = 200 ] && break
		sleep 0.2
	done
	[ "$(phase_count available)" = 200 ] || { echo "list.sh: 200 sim nodes not available" >&2; exit 1; }
	stop_serve
	bench/mk100k.sh "$SRC" "$D" "$N"
fi
DB=$D/fleetplane.db
start_serve "$D" --sim-speed 0
wait_url "$D" 600
wait_ready 600
echo "serve ready on $D ($(du -sm "$D" | cut -f1) MB), rss_mb=$(( $(proc_kb "$SERVE_PID" VmRSS) / 1024 ))"

api_list() { # prints "seconds bytes items"; pages are counted after the clock stops
	local t0 t1 cont="" url i f="$BENCH_WORK/list.page"
	rm -f "$f".*
	t0=$(now)
	for i in $(seq 1 1000); do
		url="$URL/v1/nodes?limit=$LIMIT${cont:+&continue=$cont}"
		curl -sf -o "$f.$i" -H "Authorization: Bearer $TOKEN" "$url"
		cont=$(tail -c 400 "$f.$i" | grep -o '"continue":"[^"]*"' | cut -d'"' -f4 || true)
		[ -n "$cont" ] || break
	done
	t1=$(now)
	echo "$(fsub "$t1" "$t0") $(cat "$f".* | wc -c) $(cat "$f".* | grep -o '"kind":"Node","metadata"' | wc -l)"
	rm -f "$f".*
}
raw_scan() { # prints "seconds bytes"
	local t0 t1 b
	t0=$(now)
	b=$(sqlite3 "$DB" "SELECT value FROM kv WHERE key >= '/nodes/' AND key < '/nodes0'" | wc -c)
	t1=$(now)
	echo "$(fsub "$t1" "$t0") $b"
}
: >"$BENCH_WORK/list.rounds"
for r in $(seq 1 "$ROUNDS"); do
	read -r ta ba ia < <(api_list)
	rss=$(( $(proc_kb "$SERVE_PID" VmRSS) / 1024 )); hwm=$(( $(proc_kb "$SERVE_PID" VmHWM) / 1024 ))
	read -r ts bs < <(raw_scan)
	lc=$("$BENCH_WORK/listc" "$URL" "$TOKEN" "$LIMIT")
	tk=$(echo "$lc" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p'); ik=$(echo "$lc" | sed -n 's/.*items=\([0-9]*\).*/\1/p')
	echo "list round=$r api_s=$ta api_bytes=$ba items=$ia sqlite3_s=$ts sqlite3_bytes=$bs keepalive_s=$tk rss_mb=$rss hwm_mb=$hwm" | tee -a "$BENCH_WORK/list.rounds"
	[ "$ia" = "$N" ] || { echo "list.sh: the API listed $ia nodes, not $N" >&2; exit 1; }
	[ "$ik" = "$N" ] || { echo "list.sh: listc listed $ik nodes, not $N: $lc" >&2; exit 1; }
done
col() { awk -v k="$1=" '{for(i=2;i<=NF;i++) if(index($i,k)==1) print substr($i,length(k)+1)}' "$BENCH_WORK/list.rounds"; }
ma=$(median $(col api_s)); ms=$(median $(col sqlite3_s)); mk=$(median $(col keepalive_s))
echo "== summary (median of $ROUNDS rounds, $N nodes, pages of $LIMIT; target ratio >= 0.5) =="
echo "list api_s=$ma sqlite3_s=$ms ratio=$(awk -v a="$ma" -v b="$ms" 'BEGIN{printf "%.3f", b/a}') keepalive_s=$mk keepalive_ratio=$(awk -v a="$mk" -v b="$ms" 'BEGIN{printf "%.3f", b/a}') rss_after_mb=$(col rss_mb | tail -1) hwm_mb=$(col hwm_mb | tail -1)"
stop_serve
