#!/bin/bash
# bench/slurm_drain.sh - issue 10's targets against a real slurmctld 22.05 (tests/peers/slurm):
# a drain of N=750 nodes issued in <= 1 s with <= 10 Slurm RPCs, side by side with a plain
# scontrol loop on the same slurmctld, and a real XID line -> Slurm DRAIN p99 <= 1 s.
#
# The Slurm peer gets SEQ+N extra never-responding nodes named as serve --sim names them
# (r01n01 ...), so every fleetplane node is a Slurm NodeName. Then, per round:
#  (a) loop:  before serve runs, `scontrol update NodeName=X State=DRAIN` once per node for the
#             N burst nodes (then one batched RESUME); wall time and update RPCs (sdiag);
#  (b) serve --slurm --sim SEQ+N --sim-speed 0, every node available and in sync, the breaker
#      off and a budget of maxUnavailable 0 (the held nodes stay held in place: nothing but the
#      health path and the Slurm projection acts);
#  (c) seq:   SEQ nodes, one XID 79 report at a time, each timed from the send until
#             `scontrol show node` shows it DRAIN;
#  (d) burst: one XID 79 report to each of the N nodes at once; time until every report was
#             answered and until Slurm shows all N DRAIN, and the RPCs slurmctld served
#             meanwhile that were fleetplane's (sdiag by type, minus the poller's own).
# Results to stdout and $BENCH_WORK/slurm_drain.rounds. Run by hand, never in make check.
# Env: FP (./fleetplane), BENCH_WORK (/tmp/fp-bench), N (750), SEQ (100), ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. bench/lib.sh
. tests/peers/slurm/slurm.sh
set +e +u # slurm.sh sets -eu; the rounds handle their own errors
set -o pipefail
N=${N:-750}
SEQ=${SEQ:-100}
TOTAL=$((SEQ + N))
RACKS=$(((TOTAL + 7) / 8))
PY=/usr/bin/python3
TOOL=$ROOT/bench/slurm_drain.py
RES=$BENCH_WORK/slurm_drain.rounds
TMP=$(mktemp -d /tmp/fp-bench-slurm-XXXXXX)
chmod 711 "$TMP"
cleanup() {
	stop_serve 2>/dev/null
	slurm_peer_stop "$TMP/slurm" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
machine | tee "$RES"

api() { # METHOD PATH [BODY]: prints the body; fails on a non-2xx status
	curl -sS --fail-with-body -X "$1" -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' ${3:+-d "$3"} "$URL$2"
}

# r01n01 .. in serve --sim order
names() {
	local i
	for i in $(seq 0 $((TOTAL - 1))); do printf 'r%02dn%02d\n' $((i / 8 + 1)) $((i % 8 + 1)); done
}

round() {
	local r=$1 d=$TMP/d$1 i a
	rm -rf "$d" "$TMP/slurm"
	SLURM_PEER_GHOSTS="r[01-$(printf %02d $RACKS)]n[01-08]" slurm_peer_start "$TMP/slurm" >/dev/null
	export SLURM_CONF=$TMP/slurm/slurm.conf
	names >"$TMP/all"
	head -n "$SEQ" "$TMP/all" >"$TMP/seq"
	tail -n +$((SEQ + 1)) "$TMP/all" >"$TMP/burst"
	echo "round=$r loop: $("$PY" "$TOOL" loop "$TMP/burst")" | tee -a "$RES"

	# the reports all use one token: the report limit is per token too, so it is off here
	start_serve "$d" --slurm --slurm-interval 30 --sim "$TOTAL" --sim-speed 0 --report-rate 0 \
		--report-events 0
	wait_url "$d" 120
	wait_ready 120
	for i in $(seq 1 1200); do
		a=$(phase_count available)
		[ "${a:-0}" -ge "$TOTAL" ] && break
		sleep 0.25
	done
	[ "${a:-0}" -ge "$TOTAL" ] || { echo "only ${a:-0} of $TOTAL nodes available" >&2; return 1; }
	api PUT /v1/policies/default '{"spec":{"breaker":{"enabled":false}}}' >/dev/null
	api PUT /v1/budgets/bench-freeze '{"spec":{"domain":"rack","maxUnavailable":0}}' >/dev/null
	for i in $(seq 1 600); do
		a=$(FLEETPLANE_URL=$URL FLEETPLANE_TOKEN=$TOKEN "$FP" node list -o json |
			jq '[.items[] | select(any(.status.conditions[]?; .type == "SchedulerInSync" and .status == "True"))] | length')
		[ "${a:-0}" -ge "$TOTAL" ] && break
		sleep 0.5
	done
	echo "round $r: $TOTAL nodes available, $a in sync with Slurm"
	printf '%s\n' "$TOKEN" >"$TMP/token"
	chmod 600 "$TMP/token"
	echo "round=$r seq: $("$PY" "$TOOL" seq "$URL" "$TMP/token" "$TMP/seq" "r$r")" | tee -a "$RES"
	echo "round=$r burst: $("$PY" "$TOOL" burst "$URL" "$TMP/token" "$TMP/burst" "r$r")" | tee -a "$RES"
	stop_serve
	slurm_peer_stop "$TMP/slurm"
}

for r in $(seq 1 "$ROUNDS"); do round "$r" || exit 1; done
