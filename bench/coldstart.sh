#!/bin/bash
# bench/coldstart.sh - cold start and RSS at 100,000 nodes.
#  1. Builds (once) $BENCH_WORK/cold100k: serve --sim 100000 --sim-speed 0, until all are
#     available or BUILD_LIMIT_S (600) passes; logs progress (phase counts, RSS) every 10 s.
#  2. ROUNDS times: drop the page cache if allowed (DROP=1), exec serve --data-dir (no --sim),
#     time exec -> first /readyz 200 (10 ms polling); VmRSS/VmHWM at ready, +1 s and +10 s.
# Env: FP, BENCH_WORK, ROUNDS (3), N (100000), BUILD_LIMIT_S (600), DROP (0).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-100000}
BUILD_LIMIT_S=${BUILD_LIMIT_S:-600}
D=${COLD_DIR:-$BENCH_WORK/cold100k}
machine

if [ ! -s "$D/fleetplane.db" ]; then
	echo "building $D: --sim $N --sim-speed 0 (limit ${BUILD_LIMIT_S} s)"
	start_serve "$D" --sim "$N" --sim-speed 0
	wait_url "$D" 600
	echo "api up after $(fsub "$T_URL" "$T_EXEC") s (site of $N nodes created)"
	while :; do
		el=$(fsub "$(now)" "$T_EXEC")
		ph=$(curl -s -m 10 -H "Authorization: Bearer $TOKEN" "$URL/metrics" | awk '/^fleetplane_nodes\{/{sub(/fleetplane_nodes\{phase="/,"",$1); sub(/"\}/,"",$1); if ($2>0) printf "%s=%s ", $1, $2}')
		echo "t=${el}s rss_mb=$(( $(proc_kb "$SERVE_PID" VmRSS) / 1024 )) $ph" | tee -a "$BENCH_WORK/cold-build.progress"
		case "$ph" in *"available=$N "*) break ;; esac
		awk -v e="$el" -v l="$BUILD_LIMIT_S" 'BEGIN{exit !(e > l)}' && break
		sleep 10
	done
	echo "build: hwm_mb=$(( $(proc_kb "$SERVE_PID" VmHWM) / 1024 )) db_mb=$(du -sm "$D" | cut -f1) cpu_user/sys=$(proc_cpu "$SERVE_PID") $(thread_cpu "$SERVE_PID")"
	stop_serve
fi
echo "data dir: $D ($(du -sm "$D" | cut -f1) MB)"

RES=$BENCH_WORK/cold.rounds
: >"$RES"; : >"$BENCH_WORK/cold.threads"
for r in $(seq 1 "$ROUNDS"); do
	[ "${DROP:-0}" = 1 ] && { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
	start_serve "$D" --sim-speed 0
	wait_url "$D" 600
	wait_ready 600
	ready=$(fsub "$T_READY" "$T_EXEC"); up=$(fsub "$T_URL" "$T_EXEC")
	r0=$(proc_kb "$SERVE_PID" VmRSS); h0=$(proc_kb "$SERVE_PID" VmHWM)
	sleep 1; r1=$(proc_kb "$SERVE_PID" VmRSS)
	sleep 9; r10=$(proc_kb "$SERVE_PID" VmRSS); h10=$(proc_kb "$SERVE_PID" VmHWM)
	echo "cold round=$r cpu_user/sys=$(proc_cpu "$SERVE_PID") $(thread_cpu "$SERVE_PID")" >>"$BENCH_WORK/cold.threads"
	echo "cold round=$r url_s=$up ready_s=$ready rss_ready_mb=$((r0 / 1024)) hwm_ready_mb=$((h0 / 1024)) rss_1s_mb=$((r1 / 1024)) rss_10s_mb=$((r10 / 1024)) hwm_10s_mb=$((h10 / 1024))" | tee -a "$RES"
	stop_serve
done
col() { awk -v k="$1=" '{for(i=2;i<=NF;i++) if(index($i,k)==1) print substr($i,length(k)+1)}' "$RES"; }
echo "== summary (median of $ROUNDS rounds, $N nodes; targets: ready <= 2 s, RSS <= 200 MB) =="
echo "ready_s=$(median $(col ready_s)) url_s=$(median $(col url_s)) rss_ready_mb=$(median $(col rss_ready_mb)) hwm_ready_mb=$(median $(col hwm_ready_mb)) rss_10s_mb=$(median $(col rss_10s_mb)) hwm_10s_mb=$(median $(col hwm_10s_mb))"
