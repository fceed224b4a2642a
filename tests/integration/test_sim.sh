#!/usr/bin/env bash
# test_sim.sh - `fleetplane sim` (docs/simulation.md) as CI runs it: 200 small seeds (64 nodes x 7 days) with every
# fault profile and no invariant violated (tests/sim/simtest.sh), the same seed twice gives the
# same bytes (JSON and CSV), and the injected-bug build is caught with its seed
# (tests/sim/test_sim_bug.sh). About a minute on 2 cores; FP_SAN=1 runs 20 seeds.
. "$(dirname "$0")/lib.sh"
seeds=200
[ "${FP_SAN:-0}" = 1 ] && seeds=20
SIM_NODES=64 SIM_DAYS=7 "$ROOT/tests/sim/simtest.sh" "$FP" "$seeds"
"$FP" sim --nodes 64 --days 3 --seed 11 -o json --csv "$WORK/a" >"$WORK/a.json"
"$FP" sim --nodes 64 --days 3 --seed 11 -o json --csv "$WORK/b" >"$WORK/b.json"
cmp "$WORK/a.json" "$WORK/b.json"
cmp "$WORK/a/timeseries.csv" "$WORK/b/timeseries.csv"
cmp "$WORK/a/summary.csv" "$WORK/b/summary.csv"
jq -e '.invariant_violations == 0 and .gpu_availability > 0.9 and .baseline.ettr > 0' "$WORK/a.json" >/dev/null
"$FP" sim --nodes 64 --days 3 --seed 12 -o json >"$WORK/c.json"
! cmp -s "$WORK/a.json" "$WORK/c.json"
"$FP" sim --faults meteor 2>"$WORK/err" && exit 1
grep -q 'unknown profile "meteor"' "$WORK/err"
if [ "${FP_SAN:-0}" != 1 ]; then
	"$ROOT/tests/sim/test_sim_bug.sh" "$FP"
fi
echo "test_sim: ok"
