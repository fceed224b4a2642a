#!/bin/bash
# bench/health_hold.sh - issue 4's target: detection -> hold committed p99 <= 50 ms for one
# event, and 750 nodes failing at once all held in <= 3 s with the breaker disabled.
#
# serve (SQLite, --sim SEQ+N zero-latency simulated nodes) on a fresh temp dir; once every node
# is available: PUT the policy with the breaker disabled, PUT a budget "bench-freeze" (domain
# rack, maxUnavailable 0) so no held node is drained or repaired during the measurement (the
# holds stay put and nothing but the health path and the lifecycle's budget waits run), then
#  (a) seq:   one report at a time to each of the first SEQ nodes (one XID 79 event each): the
#             client round trip (serve answers after the hold is committed) and serve's
#             fleetplane_health_hold_latency_seconds histogram over just these reports;
#  (b) burst: one report each to the other N nodes at once (one thread and connection per node,
#             released together): time until every POST was answered (every hold committed),
#             until fleetplane_nodes_held{owner="health"} showed all of them, and the
#             histogram over the burst.
# The reports use the admin token (an operator may report for any node; agent tokens only add a
# token lookup per request), so serve runs with the report rate limit off (--report-rate 0
# --report-events 0): the limit is per token as well as per node, and one token's burst of 20
# would refuse the burst round. Event time = send time, so serve's histogram measures send ->
# commit. Results go to stdout and $BENCH_WORK/health_hold.rounds. Run by hand, never in make check.
# Env: FP (./fleetplane), BENCH_WORK (/tmp/fp-bench), N (750), SEQ (200), ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-750}
SEQ=${SEQ:-200}
PY=/usr/bin/python3
TOOL=$(pwd)/bench/health_report.py
RES=$BENCH_WORK/health_hold.rounds
TMP=$(mktemp -d /tmp/fp-bench-health-XXXXXX)
cleanup() {
	stop_serve
	rm -rf "$TMP"
}
trap cleanup EXIT
machine | tee "$RES"

api() { # METHOD PATH [BODY]: prints the body; fails on a non-2xx status
	curl -sS --fail-with-body -X "$1" -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' ${3:+-d "$3"} "$URL$2"
}

# hist_snapshot: "le count" lines of fleetplane_health_hold_latency_seconds_bucket, then
# "count N" and "sum S".
hist_snapshot() {
	curl -s -H "Authorization: Bearer $TOKEN" "$URL/metrics" | awk '
		/^fleetplane_health_hold_latency_seconds_bucket/ {
			match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); print le, $2 }
		/^fleetplane_health_hold_latency_seconds_count/ { print "count", $2 }
		/^fleetplane_health_hold_latency_seconds_sum/ { print "sum", $2 }'
}

# hist_delta BEFORE AFTER: the histogram of the observations between two snapshots:
# "n=... mean_ms=... p50_le_s=... p99_le_s=..." (pXX_le: the smallest bucket bound holding XX %).
hist_delta() {
	awk 'FILENAME == ARGV[1] { b[$1] = $2; next }
		{ d = $2 - b[$1]; if ($1 == "count") n = d; else if ($1 == "sum") s = d; else { le[++k] = $1; c[k] = d } }
		END {
			if (n <= 0) { print "n=0"; exit }
			p50 = p99 = "";
			for (i = 1; i <= k; i++) {
				if (p50 == "" && c[i] >= 0.50 * n) p50 = le[i];
				if (p99 == "" && c[i] >= 0.99 * n) p99 = le[i];
			}
			printf "n=%d mean_ms=%.2f p50_le_s=%s p99_le_s=%s\n", n, s / n * 1000, p50, p99
		}' "$1" "$2"
}

round() {
	local r=$1 d=$TMP/d$1 t0 i a
	rm -rf "$d"
	start_serve "$d" --sim $((SEQ + N)) --sim-speed 0 --report-rate 0 --report-events 0
	wait_url "$d" 120
	wait_ready 120
	t0=$(now)
	for i in $(seq 1 1200); do
		a=$(phase_count available)
		[ "${a:-0}" -ge $((SEQ + N)) ] && break
		kill -0 "$SERVE_PID" 2>/dev/null || { echo "serve died (see $d/serve.log)" >&2; return 1; }
		sleep 0.25
	done
	[ "${a:-0}" -ge $((SEQ + N)) ] || { echo "only ${a:-0} of $((SEQ + N)) nodes available" >&2; return 1; }
	echo "round $r: $((SEQ + N)) nodes available after $(fsub "$(now)" "$t0") s"
	api PUT /v1/policies/default '{"spec":{"breaker":{"enabled":false}}}' >/dev/null
	api PUT /v1/budgets/bench-freeze '{"spec":{"domain":"rack","maxUnavailable":0}}' >/dev/null
	printf '%s\n' "$TOKEN" >"$TMP/token"
	chmod 600 "$TMP/token"
	FLEETPLANE_URL=$URL FLEETPLANE_TOKEN=$TOKEN "$FP" node list -o json |
		jq -r '.items[].metadata.name' | sort >"$TMP/nodes"
	head -n "$SEQ" "$TMP/nodes" >"$TMP/seq"
	tail -n +$((SEQ + 1)) "$TMP/nodes" >"$TMP/burst"
	[ "$(wc -l <"$TMP/burst")" = "$N" ] || { echo "expected $N burst nodes" >&2; return 1; }

	hist_snapshot >"$TMP/h0"
	local seq_out burst_out
	seq_out=$("$PY" "$TOOL" seq "$URL" "$TMP/token" "$TMP/seq" "r$r")
	hist_snapshot >"$TMP/h1"
	local cpu0; cpu0=$(awk '{print $14 + $15}' "/proc/$SERVE_PID/stat")
	burst_out=$("$PY" "$TOOL" burst "$URL" "$TMP/token" "$TMP/burst" "r$r")
	local cpu1; cpu1=$(awk '{print $14 + $15}' "/proc/$SERVE_PID/stat")
	hist_snapshot >"$TMP/h2"
	local held
	held=$(FLEETPLANE_URL=$URL FLEETPLANE_TOKEN=$TOKEN "$FP" node list -o json |
		jq '[.items[] | select(any(.status.holds[]?; .owner == "health"))] | length')
	echo "round=$r seq client: $seq_out" | tee -a "$RES"
	echo "round=$r seq serve histogram: $(hist_delta "$TMP/h0" "$TMP/h1")" | tee -a "$RES"
	echo "round=$r burst client: $burst_out" | tee -a "$RES"
	echo "round=$r burst serve histogram: $(hist_delta "$TMP/h1" "$TMP/h2")" | tee -a "$RES"
	echo "round=$r burst serve cpu_ticks=$((cpu1 - cpu0)) (1/$(getconf CLK_TCK) s); nodes with a health hold at the end: $held of $((SEQ + N))" | tee -a "$RES"
	stop_serve
	rm -rf "$d"
}

for r in $(seq 1 "$ROUNDS"); do
	round "$r"
done
