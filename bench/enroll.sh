#!/bin/bash
# bench/enroll.sh - enroll -> available throughput for 10,000 zero-latency sim nodes.
#  A "sim":  serve --sim 10000 --sim-speed 0 on an empty data dir; time from exec to serve.url
#            (site created, API up) and to N nodes available (polling /metrics).
#  B "bulk": serve --sim-speed 0 on an empty data dir, then POST /v1/nodes {"items": [...]} in
#            batches of BATCH; time for the POSTs and from the first POST to N available.
# Rounds are interleaved A,B,A,B,... Env: FP, BENCH_WORK, ROUNDS (3), N (10000), BATCH (1000),
# LIMIT_S (180: give up waiting and report how many got there), STALL_S (15: stop waiting
# once >= 99% are available and the count has not moved for STALL_S s).
# Per round, process CPU (user/sys s) and CPU per thread name go to $BENCH_WORK/enroll.threads.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-10000}
BATCH=${BATCH:-1000}
LIMIT_S=${LIMIT_S:-180}
STALL_S=${STALL_S:-15}
machine
RES=$BENCH_WORK/enroll.rounds
FIRST_ROUND=${FIRST_ROUND:-1}
[ "$FIRST_ROUND" = 1 ] && : >"$RES" && : >"$BENCH_WORK/enroll.threads" # FIRST_ROUND>1 appends (resume after an interrupted run)

# wait_available T0: polls every 0.25 s; prints "t50 t90 t99 t100 final" (s since T0, "-" if never).
wait_available() {
	local t0=$1 t50=- t90=- t99=- t100=- a=0 last=0 same=0 el
	while :; do
		a=$(phase_count available); a=${a:-0}
		el=$(fsub "$(now)" "$t0")
		[ "$t50" = - ] && [ "$a" -ge $((N / 2)) ] && t50=$el
		[ "$t90" = - ] && [ "$a" -ge $((N * 9 / 10)) ] && t90=$el
		[ "$t99" = - ] && [ "$a" -ge $((N * 99 / 100)) ] && t99=$el
		if [ "$a" -ge "$N" ]; then t100=$el; break; fi
		# stalled: >= 99% there and no progress for STALL_S seconds (stuck nodes)
		if [ "$a" = "$last" ]; then same=$((same + 1)); else same=0; last=$a; fi
		[ "$t99" != - ] && [ "$same" -ge $((STALL_S * 4)) ] && break
		awk -v e="$el" -v l="$LIMIT_S" 'BEGIN{exit !(e > l)}' && break
		sleep 0.25
	done
	echo "$t50 $t90 $t99 $t100 $a"
}

round_sim() {
	local d=$BENCH_WORK/enroll-sim-$1
	rm -rf "$d"
	start_serve "$d" --sim "$N" --sim-speed 0
	wait_url "$d" 600
	local up; up=$(fsub "$T_URL" "$T_EXEC")
	local w; w=$(wait_available "$T_EXEC")
	local hwm; hwm=$(proc_kb "$SERVE_PID" VmHWM 2>/dev/null || echo died)
	echo "sim round=$1 cpu_user/sys=$(proc_cpu "$SERVE_PID") $(thread_cpu "$SERVE_PID")" >>"$BENCH_WORK/enroll.threads"
	echo "sim round=$1 api_up_s=$up t50_s=$(echo $w | cut -d' ' -f1) t90_s=$(echo $w | cut -d' ' -f2) t99_s=$(echo $w | cut -d' ' -f3) t100_s=$(echo $w | cut -d' ' -f4) available=$(echo $w | cut -d' ' -f5) hwm_kb=$hwm db_mb=$(du -sm "$d" | cut -f1)" | tee -a "$RES"
	stop_serve
	rm -rf "$d"
}

mkbatch() { # start count -> {"items":[...]} for node indexes start..start+count-1
	jq -cn --argjson s "$1" --argjson n "$2" '{items: [range($s; $s + $n) as $i |
		{metadata: {name: ("b\(($i / 8 | floor) + 1)n\(($i % 8) + 1)"), labels: {rack: ("b\(($i / 8 | floor) + 1)")}},
		 spec: {site: "bench", rack: ("b\(($i / 8 | floor) + 1)"), bmc: {driver: "sim"},
		        gpus: {count: 8, model: "NVIDIA H100 80GB HBM3"}}}]}'
}

round_bulk() {
	local d=$BENCH_WORK/enroll-bulk-$1 s code
	rm -rf "$d"
	start_serve "$d" --sim-speed 0
	wait_url "$d" 60
	wait_ready 60
	local t0; t0=$(now)
	for s in $(seq 0 "$BATCH" $((N - 1))); do
		code=$(curl -s -o "$d/post.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
			-H 'Content-Type: application/json' --data-binary @"$BENCH_WORK/batch-$s.json" "$URL/v1/nodes")
		[ "$code" = 201 ] || { echo "POST batch $s: HTTP $code: $(head -c 300 "$d/post.out")" >&2; }
	done
	local post; post=$(fsub "$(now)" "$t0")
	local w; w=$(wait_available "$t0")
	local hwm; hwm=$(proc_kb "$SERVE_PID" VmHWM 2>/dev/null || echo died)
	echo "bulk round=$1 cpu_user/sys=$(proc_cpu "$SERVE_PID") $(thread_cpu "$SERVE_PID")" >>"$BENCH_WORK/enroll.threads"
	echo "bulk round=$1 post_s=$post t50_s=$(echo $w | cut -d' ' -f1) t90_s=$(echo $w | cut -d' ' -f2) t99_s=$(echo $w | cut -d' ' -f3) t100_s=$(echo $w | cut -d' ' -f4) available=$(echo $w | cut -d' ' -f5) hwm_kb=$hwm db_mb=$(du -sm "$d" | cut -f1)" | tee -a "$RES"
	stop_serve
	rm -rf "$d"
}

for s in $(seq 0 "$BATCH" $((N - 1))); do
	c=$BATCH; [ $((s + c)) -gt "$N" ] && c=$((N - s))
	mkbatch "$s" "$c" >"$BENCH_WORK/batch-$s.json"
done
for r in $(seq "$FIRST_ROUND" "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then round_sim "$r"; round_bulk "$r"; else round_bulk "$r"; round_sim "$r"; fi
done

col() { awk -v k="$2=" -v m="$1" '$1==m{for(i=2;i<=NF;i++) if(index($i,k)==1){v=substr($i,length(k)+1); if(v!="-") print v}}' "$RES"; }
echo "== summary (median of $ROUNDS interleaved rounds, N=$N, target: all available <= 10 s) =="
echo "sim : api_up_s=$(median $(col sim api_up_s)) t50_s=$(median $(col sim t50_s)) t90_s=$(median $(col sim t90_s)) t99_s=$(median $(col sim t99_s)) t100_s=$(median $(col sim t100_s)) (rounds reaching 100%: $(col sim t100_s | wc -l)/$ROUNDS) hwm_kb=$(median $(col sim hwm_kb))"
echo "bulk: post_s=$(median $(col bulk post_s)) t50_s=$(median $(col bulk t50_s)) t90_s=$(median $(col bulk t90_s)) t99_s=$(median $(col bulk t99_s)) t100_s=$(median $(col bulk t100_s)) (rounds reaching 100%: $(col bulk t100_s | wc -l)/$ROUNDS) hwm_kb=$(median $(col bulk hwm_kb))"
