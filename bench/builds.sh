#!/bin/bash
# bench/builds.sh - two builds side by side on figures 1 and 2 (GET vs nginx, 10,000-node
# enroll): rounds interleaved A B, B A, ...; each round runs get.sh and enroll.sh once per
# build; prints each build's per-round lines and the medians with the ratio B/A.
#   FP_A=old-binary FP_B=new-binary [ROUNDS=3] bench/builds.sh
# Env passed through to get.sh/enroll.sh: BENCH_WORK, DUR, CONNS, N. GET_ONLY=1 skips enroll.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${FP_A:?FP_A=old binary}" "${FP_B:?FP_B=new binary}"
ROUNDS=${ROUNDS:-3}
W=${BENCH_WORK:-/tmp/fp-bench}
mkdir -p "$W"
OUT=$W/builds.rounds
: >"$OUT"
one() { # label binary round
	FP=$2 ROUNDS=1 bench/get.sh 2>&1 | grep -E '^c=[0-9]+ fleetplane' | sed "s/^/$1 round=$3 get /" | tee -a "$OUT"
	[ "${GET_ONLY:-0}" = 1 ] && return 0
	FP=$2 ROUNDS=1 bench/enroll.sh 2>&1 | grep -E '^(sim|bulk) *:' | sed "s/^/$1 round=$3 enroll /" | tee -a "$OUT"
}
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then one A "$FP_A" "$r"; one B "$FP_B" "$r"
	else one B "$FP_B" "$r"; one A "$FP_A" "$r"; fi
done
med() { sort -g | awk '{a[NR]=$1} END{if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { # label pattern key
	grep "^$1 " "$OUT" | grep -E "$2" | grep -oE "$3=[0-9.]+" | head -100 | cut -d= -f2 | med
}
echo "== builds: A=$FP_A B=$FP_B, median of $ROUNDS interleaved rounds =="
for c in ${CONNS:-64 256}; do
	a=$(field A "get c=$c " "fleetplane rps"); b=$(field B "get c=$c " "fleetplane rps")
	na=$(field A "get c=$c " "nginx rps"); nb=$(field B "get c=$c " "nginx rps")
	echo "get c=$c: A rps=$a (nginx $na) B rps=$b (nginx $nb) ratio B/A=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", b/a}')"
done
[ "${GET_ONLY:-0}" = 1 ] || for p in sim bulk; do
	a=$(field A "enroll $p" t100_s); b=$(field B "enroll $p" t100_s)
	echo "enroll $p t100_s: A=$a B=$b ratio B/A=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", b/a}')"
done
