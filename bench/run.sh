#!/bin/bash
# bench/run.sh - runs every benchmark and prints its summary (see docs/benchmarks.md).
#   bench/run.sh [all|get|slow|enroll|cold|list|writes|ironic]...   (default: get enroll cold;
#   all: the issue-17 table's rows - ironic enroll cold list writes get; ironic needs
#   bench/ironic/ironic-peer.sh install first and is run only when named or with all)
# Env passed through: FP, BENCH_WORK, ROUNDS, and each script's own knobs.
# Needs: wrk, nginx-light, curl, jq (apt-get install -y wrk nginx-light curl jq); perf for PROFILE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "${FP:-./fleetplane}" ] || make -j2
mkdir -p "${BENCH_WORK:-/tmp/fp-bench}"
which=${*:-get enroll cold}
[ "$which" = all ] && which="ironic enroll cold list writes get"
for b in $which; do
	case $b in
	get) bench/get.sh ;;
	slow) bench/slow_clients.sh ;;
	enroll) bench/enroll.sh ;;
	cold) bench/coldstart.sh ;;
	list) bench/list.sh ;;
	writes) bench/writes.sh ;;
	ironic) bench/ironic_lifecycle.sh ;;
	*) echo "unknown benchmark $b (get|slow|enroll|cold|list|writes|ironic)" >&2; exit 2 ;;
	esac 2>&1 | tee "${BENCH_WORK:-/tmp/fp-bench}/$b.log" | grep -E '^(machine|binary|==|c=|fleetplane.* case=|sim |bulk|ready_s|cold |profile|node document|list |writes |\| |   \()' || true
done
