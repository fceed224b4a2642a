#!/usr/bin/env bash
# tests/sim/simtest.sh BIN [SEEDS [FIRST]] - runs `BIN sim` for seeds FIRST..FIRST+SEEDS-1
# (default 1..100) on a small world with every fault profile, and stops at the first seed
# whose run violates an invariant (exit 1), printing it and the command that reproduces it.
# Env: SIM_NODES (default 64), SIM_DAYS (default 3), SIM_FAULTS (default all).
# `make simtest SEEDS=N` runs it; the integration tier runs a few hundred seeds
# (tests/integration/test_sim.sh).
set -uo pipefail
bin=${1:?usage: simtest.sh BIN [SEEDS [FIRST]]}
seeds=${2:-100}
first=${3:-1}
nodes=${SIM_NODES:-64}
days=${SIM_DAYS:-3}
faults=${SIM_FAULTS:-all}
start=$(date +%s)
for ((s = first; s < first + seeds; s++)); do
	out=$("$bin" sim --nodes "$nodes" --days "$days" --seed "$s" --faults "$faults" -o json 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "simtest: FAILED at seed $s (exit $rc)"
		echo "  reproduce: $bin sim --nodes $nodes --days $days --seed $s --faults $faults"
		echo "$out" | grep -m3 -E 'invariant violated|"violation"|error' | cut -c1-400
		exit 1
	fi
done
echo "simtest: $seeds seeds ($first..$((first + seeds - 1))), $nodes nodes x $days days, faults $faults: no violation ($(($(date +%s) - start)) s)"
