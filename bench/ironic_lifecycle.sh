#!/bin/bash
# bench/ironic_lifecycle.sh - node lifecycle, fleetplane vs OpenStack Ironic, side by side in one
# run on this machine (docs/benchmarks.md "Node lifecycle: fleetplane vs OpenStack Ironic").
#   Ironic 21.4.x (Debian 12; bench/ironic/ironic-peer.sh install, as root; a benchmark peer only):
#     split ironic-api + ironic-conductor, json-rpc, noauth, SQLite, config bench/ironic/ironic.conf.in
#     ([conductor] automated_clean = false). N nodes POST /v1/nodes {driver: fake-hardware}, then
#     PUT .../states/provision manage (enroll -> manageable), provide (-> available), active
#     (fake deploy -> active); each bulk step waits until every node settled.
#   fleetplane: serve --sim-speed 0 (zero-latency sim driver) on an empty data dir; N nodes POST
#     /v1/nodes (one document each, bmc driver sim); the controller takes each through
#     inspecting -> provisioning -> validating -> available (fleetplane's deployed/serving phase).
#   Both: the same client (bench/ironic/lifecycle.py, CONC threads with keep-alive connections),
#   then wrk (bench/get.lua, -t1 -cCONC -dDUR) on GET one node and on the list of all N, and
#   VmRSS/VmHWM of the side's processes (Ironic: ironic-api parent + workers + ironic-conductor).
# Rounds alternate the order (fleetplane first in odd rounds). Env: FP, BENCH_WORK, ROUNDS (1),
# N (1000), CONC (8), DUR (10s). Needs: wrk, curl, jq, /usr/bin/python3, Ironic installed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-1} # before lib.sh (its default is 3)
. bench/lib.sh
N=${N:-1000}
CONC=${CONC:-8}
DUR=${DUR:-10s}
case $N in '' | *[!0-9]*) echo "N must be 8..1000, a multiple of 8" >&2; exit 2 ;; esac
{ [ "$N" -ge 8 ] && [ "$N" -le 1000 ] && [ $((N % 8)) = 0 ]; } || { echo "N must be 8..1000, a multiple of 8" >&2; exit 2; }
[ -x /usr/bin/ironic-api ] || { echo "Ironic is not installed: run bench/ironic/ironic-peer.sh install (as root)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
export RACKS=$((N / 8))
RES=$BENCH_WORK/ironic_lifecycle.rounds
: >"$RES"
IW=""
machine

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub("us","",v); v/=1000} else if (v ~ /ms$/) {sub("ms","",v)} else if (v ~ /s$/) {sub("s","",v); v*=1000}; printf "%.2f", v}'; }
# wrk_kv TAG URL [LIST_PATH]: "TAG_rps=.. TAG_p50_ms=.. TAG_p99_ms=.. TAG_bad=.." (bad: non-2xx + socket errors)
wrk_kv() {
	local out
	out=$(LIST_PATH=${3:-} wrk -t1 -c"$CONC" -d"$DUR" --latency -s bench/get.lua "$2" 2>&1)
	[ -n "${3:-}" ] || unset LIST_PATH
	local bad
	bad=$(echo "$out" | awk '/Socket errors/{gsub(",",""); s+=$4+$6+$8+$10} /Non-2xx/{s+=$5} END{print s+0}')
	echo "$1_rps=$(echo "$out" | awk '/Requests\/sec/{print $2}') $1_p50_ms=$(echo "$out" | awk '$1=="50%"{print $2}' | to_ms) $1_p99_ms=$(echo "$out" | awk '$1=="99%"{print $2}' | to_ms) $1_bad=$bad"
}
pids_cpu() { # PID... -> user+sys CPU seconds summed
	local hz p; hz=$(getconf CLK_TCK)
	for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null; done | awk -v hz="$hz" '{s=$0; sub(/^[^)]*\) /,"",s); split(s,f," "); t+=f[12]+f[13]} END{printf "%.1f", t/hz}'
}
pids_kb() { # FIELD PID... -> sum in kB
	local f=$1 p s=0 v; shift
	for p in "$@"; do v=$(proc_kb "$p" "$f"); [ "$v" = died ] || s=$((s + v)); done
	echo "$s"
}

round_fp() {
	local d=$BENCH_WORK/lifecycle-fp-$1
	rm -rf "$d"
	start_serve "$d" --sim-speed 0
	wait_url "$d" 60
	wait_ready 60
	local c0 life; c0=$(pids_cpu "$SERVE_PID")
	life=$(TOKEN=$TOKEN /usr/bin/python3 bench/ironic/lifecycle.py fleetplane "$URL" "$N" "$CONC" | tr '\n' ' ')
	local c1; c1=$(pids_cpu "$SERVE_PID")
	sleep 2 # let the last status writes pass before reading
	local g l
	g=$(TOKEN=$TOKEN wrk_kv get "$URL")
	l=$(TOKEN=$TOKEN wrk_kv list "$URL" "/v1/nodes?limit=$N")
	echo "fleetplane round=$1 $life lifecycle_cpu_s=$(awk -v a="$c1" -v b="$c0" 'BEGIN{printf "%.1f", a-b}') $g $l rss_kb=$(proc_kb "$SERVE_PID" VmRSS) hwm_kb=$(proc_kb "$SERVE_PID" VmHWM) list_bytes=$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/nodes?limit=$N" | wc -c) get_bytes=$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/nodes/r01n01" | wc -c)" | tee -a "$RES"
	stop_serve
	rm -rf "$d"
}

ironic_pids() { local a; a=$(cat "$IW/api.pid"); echo "$a $(ps -o pid= --ppid "$a" | tr '\n' ' ') $(cat "$IW/conductor.pid")"; }
stop_ironic() { [ -z "$IW" ] || W=$IW bench/ironic/ironic-peer.sh stop || true; IW=""; }
trap 'stop_ironic; cleanup_all' EXIT

round_ironic() {
	IW=$BENCH_WORK/lifecycle-ironic-$1
	rm -rf "$IW"
	local ap rp; ap=$(free_port); rp=$(free_port)
	W=$IW API_PORT=$ap RPC_PORT=$rp bench/ironic/ironic-peer.sh configure
	W=$IW API_PORT=$ap RPC_PORT=$rp bench/ironic/ironic-peer.sh start
	local u=http://127.0.0.1:$ap
	# shellcheck disable=SC2046
	local c0 life c1; c0=$(pids_cpu $(ironic_pids))
	life=$(/usr/bin/python3 bench/ironic/lifecycle.py ironic "$u" "$N" "$CONC" | tr '\n' ' ')
	# shellcheck disable=SC2046
	c1=$(pids_cpu $(ironic_pids))
	export HDR_NAME=X-OpenStack-Ironic-API-Version HDR_VALUE=1.82
	local g l ld
	g=$(wrk_kv get "$u")
	l=$(wrk_kv list "$u" "/v1/nodes?limit=$N")
	ld=$(wrk_kv detail "$u" "/v1/nodes/detail?limit=$N")
	unset HDR_NAME HDR_VALUE
	local p; p=$(ironic_pids)
	# shellcheck disable=SC2086
	echo "ironic round=$1 $life lifecycle_cpu_s=$(awk -v a="$c1" -v b="$c0" 'BEGIN{printf "%.1f", a-b}') $g $l $ld rss_kb=$(pids_kb VmRSS $p) hwm_kb=$(pids_kb VmHWM $p) procs=$(echo $p | wc -w) list_bytes=$(curl -s -H "$HDRI" "$u/v1/nodes?limit=$N" | wc -c) detail_bytes=$(curl -s -H "$HDRI" "$u/v1/nodes/detail?limit=$N" | wc -c) get_bytes=$(curl -s -H "$HDRI" "$u/v1/nodes/r01n01" | wc -c) log_lines=$(cat "$IW"/log/*.log | wc -l)" | tee -a "$RES"
	stop_ironic
}
HDRI='X-OpenStack-Ironic-API-Version: 1.82'

for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then round_fp "$r"; round_ironic "$r"; else round_ironic "$r"; round_fp "$r"; fi
done

col() { awk -v k="$2=" -v m="$1" '$1==m{for(i=2;i<=NF;i++) if(index($i,k)==1){v=substr($i,length(k)+1); if(v!="-") print v}}' "$RES"; }
m() { median $(col "$1" "$2"); }
div() { awk -v a="$1" -v b="$2" 'BEGIN{if (b+0 == 0) print "n/a"; else printf "%.1f", a/b}'; }
rate() { awk -v n="$N" -v t="$1" 'BEGIN{if (t+0 == 0) print "n/a"; else printf "%.1f", n/t}'; }
fa=$(m fleetplane to_available_s); ia=$(m ironic to_available_s); iact=$(m ironic to_active_s)
echo "== summary: median of $ROUNDS interleaved round(s), N=$N, CONC=$CONC, wrk -t1 -c$CONC -d$DUR =="
echo "   (throughput ratio = fleetplane / Ironic; latency and memory ratio = Ironic / fleetplane; >1 = fleetplane better)"
printf '| %s | %s | %s | %s |\n' "metric" "fleetplane" "Ironic" "ratio"
printf '| %s | %s | %s | %s |\n' "create $N (POST per node), s" "$(m fleetplane create_requests_s)" "$(m ironic create_requests_s)" "$(div "$(m ironic create_requests_s)" "$(m fleetplane create_requests_s)")×"
printf '| %s | %s | %s | %s |\n' "created -> available (fp: inspected+provisioned+validated; Ironic: manage+provide), nodes/s" "$(rate "$fa")" "$(rate "$ia")" "$(div "$(rate "$fa")" "$(rate "$ia")")×"
printf '| %s | %s | %s | %s |\n' "created -> deployed (fp available; Ironic active = manage+provide+deploy), nodes/s" "$(rate "$fa")" "$(rate "$iact")" "$(div "$(rate "$fa")" "$(rate "$iact")")×"
printf '| %s | %s | %s | %s |\n' "lifecycle server CPU, ms/node" "$(awk -v c="$(m fleetplane lifecycle_cpu_s)" -v n="$N" 'BEGIN{printf "%.1f", c*1000/n}')" "$(awk -v c="$(m ironic lifecycle_cpu_s)" -v n="$N" 'BEGIN{printf "%.1f", c*1000/n}')" "$(div "$(m ironic lifecycle_cpu_s)" "$(m fleetplane lifecycle_cpu_s)")×"
printf '| %s | %s | %s | %s |\n' "GET one node, req/s" "$(m fleetplane get_rps)" "$(m ironic get_rps)" "$(div "$(m fleetplane get_rps)" "$(m ironic get_rps)")×"
printf '| %s | %s | %s | %s |\n' "GET one node p50 / p99, ms" "$(m fleetplane get_p50_ms) / $(m fleetplane get_p99_ms)" "$(m ironic get_p50_ms) / $(m ironic get_p99_ms)" "$(div "$(m ironic get_p50_ms)" "$(m fleetplane get_p50_ms)")× / $(div "$(m ironic get_p99_ms)" "$(m fleetplane get_p99_ms)")×"
printf '| %s | %s | %s | %s |\n' "list $N, req/s (Ironic /v1/nodes/detail = full documents)" "$(m fleetplane list_rps)" "$(m ironic detail_rps)" "$(div "$(m fleetplane list_rps)" "$(m ironic detail_rps)")×"
printf '| %s | %s | %s | %s |\n' "list $N p50 / p99, ms (Ironic detail)" "$(m fleetplane list_p50_ms) / $(m fleetplane list_p99_ms)" "$(m ironic detail_p50_ms) / $(m ironic detail_p99_ms)" "$(div "$(m ironic detail_p50_ms)" "$(m fleetplane list_p50_ms)")× / $(div "$(m ironic detail_p99_ms)" "$(m fleetplane list_p99_ms)")×"
printf '| %s | %s | %s | %s |\n' "list $N, req/s (Ironic /v1/nodes = 5 fields)" "$(m fleetplane list_rps)" "$(m ironic list_rps)" "$(div "$(m fleetplane list_rps)" "$(m ironic list_rps)")×"
printf '| %s | %s | %s | %s |\n' "list $N p50 / p99, ms (Ironic 5 fields)" "$(m fleetplane list_p50_ms) / $(m fleetplane list_p99_ms)" "$(m ironic list_p50_ms) / $(m ironic list_p99_ms)" "$(div "$(m ironic list_p50_ms)" "$(m fleetplane list_p50_ms)")× / $(div "$(m ironic list_p99_ms)" "$(m fleetplane list_p99_ms)")×"
printf '| %s | %s | %s | %s |\n' "RSS after the run, MiB (Ironic: api + workers + conductor)" "$(awk -v k="$(m fleetplane rss_kb)" 'BEGIN{printf "%.0f", k/1024}')" "$(awk -v k="$(m ironic rss_kb)" 'BEGIN{printf "%.0f", k/1024}')" "$(div "$(m ironic rss_kb)" "$(m fleetplane rss_kb)")×"
printf '| %s | %s | %s | %s |\n' "peak RSS (VmHWM), MiB" "$(awk -v k="$(m fleetplane hwm_kb)" 'BEGIN{printf "%.0f", k/1024}')" "$(awk -v k="$(m ironic hwm_kb)" 'BEGIN{printf "%.0f", k/1024}')" "$(div "$(m ironic hwm_kb)" "$(m fleetplane hwm_kb)")×"
echo "rounds: $RES"
