#!/bin/bash
# bench/slow_clients.sh - a normal client's GET latency and /healthz while 1,000 half-open
# connections (bench/slowloris.py: a partial request, one header byte every 5 s, re-opened when
# closed) hold the API listener (issue 16 item 6; target: GET p99 <= 50 ms, /healthz answers).
# Cases, each on the same 100-node data dir with serve's default limits (1,000 connections,
# 100 per client, 10 s header deadline):
#   quiet    no attacker
#   one      1,000 connections from one address (127.0.0.2)
#   spread   1,000 connections from 1,000 addresses (127.0.x.y): only eviction protects
# A normal client: wrk -t1 -c4 for DUR of GET /v1/nodes/{name} (keep-alive, started after the
# attacker has opened its connections), and 20 fresh-connection /healthz curls (max time 2 s).
# Env: FP (binary), BENCH_WORK, DUR (10s), N (1000). FP_OLD=binary also runs the cases against
# an older build (before the connection guard) for the before/after figures.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-10s}
N=${N:-1000}
D=$BENCH_WORK/slow100
machine
if [ ! -s "$D/fleetplane.db" ]; then
	start_serve "$D" --sim 100 --sim-speed 0
	wait_url "$D" 120
	for i in $(seq 1 120); do a=$(phase_count available); [ "${a:-0}" -ge 100 ] && break; sleep 1; done
	stop_serve
fi
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub("us","",v); v/=1000} else if (v ~ /ms$/) {sub("ms","",v)} else if (v ~ /s$/) {sub("s","",v); v*=1000}; printf "%.2f", v}'; }
healthz_probe() { # 20 fresh connections: "ok/20 max_ms"
	local ok=0 max=0 t c
	for i in $(seq 1 20); do
		read -r c t < <(curl -s -m 2 -o /dev/null -w '%{http_code} %{time_total}\n' "$URL/healthz" || echo "000 2")
		[ "$c" = 200 ] && ok=$((ok + 1))
		max=$(awk -v a="$max" -v b="$t" 'BEGIN{print (b*1000 > a) ? b*1000 : a}')
		sleep 0.1
	done
	printf '%d/20 max_ms=%.1f' "$ok" "$max"
}
run_case() { # binary case
	FP=$1 start_serve "$D"
	wait_url "$D" 60
	wait_ready 60
	local port=${URL##*:} lp=""
	case $2 in
	one) python3 bench/slowloris.py "$port" "$N" --secs 40 >"$BENCH_WORK/loris.out" & lp=$! ;;
	spread) python3 bench/slowloris.py "$port" "$N" --spread --secs 40 >"$BENCH_WORK/loris.out" & lp=$! ;;
	esac
	[ -n "$lp" ] && sleep 8
	local out rps p99 errs hz
	out=$(RACKS=12 TOKEN=$TOKEN wrk -t1 -c4 -d"$DUR" --timeout 5s --latency -s bench/get.lua "$URL" 2>&1) || true
	rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
	p99=$(echo "$out" | awk '$1=="99%"{print $2}' | to_ms)
	errs=$(echo "$out" | awk '/Socket errors/{print $0}' | tr -d ',' | awk '{print $4+$6+$8+$10}')
	hz=$(healthz_probe)
	local open drops
	open=$(curl -s -m 2 -H "Authorization: Bearer $TOKEN" "$URL/metrics" | awk '$1=="fleetplane_http_connections_open"{print $2}')
	drops=$(curl -s -m 2 -H "Authorization: Bearer $TOKEN" "$URL/metrics" | awk '/^fleetplane_http_connections_dropped_total/{sub(/.*reason="/,"",$1); sub(/"}/,"",$1); printf "%s=%s ", $1, $2}')
	[ -n "$lp" ] && { kill "$lp" 2>/dev/null || true; wait "$lp" 2>/dev/null || true; }
	echo "$(basename "$1") case=$2 get_rps=${rps:-0} get_p99_ms=${p99:-n/a} get_sock_errors=${errs:-0} healthz=$hz open=${open:-?} dropped: ${drops:-n/a} | attacker: $(tail -n 1 "$BENCH_WORK/loris.out" 2>/dev/null || echo -)" | tee -a "$BENCH_WORK/slow.rounds"
	: >"$BENCH_WORK/loris.out"
	stop_serve
}
: >"$BENCH_WORK/slow.rounds"
for c in quiet one spread; do
	run_case "$FP" "$c"
	[ -n "${FP_OLD:-}" ] && run_case "$FP_OLD" "$c"
done
