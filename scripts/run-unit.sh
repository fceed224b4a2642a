#!/usr/bin/env bash
# Runs unit-test binaries one after the other, each under a timeout, and prints a summary.
#   scripts/run-unit.sh BINARY...
# Env: T=REGEX runs only the suites whose name (test_store, ...) matches; F=GLOB runs only the
# test cases matching it inside each suite (FP_TEST_FILTER, tests/unit/support/filter.c);
# UNIT_TIMEOUT=SECONDS per binary (default 300; a suite past it is killed and counted failed,
# exit 124 named in the summary). Exit 0 only when every suite run passed.
set -uo pipefail
timeout_s=${UNIT_TIMEOUT:-300}
pass=0 failed=() ran=0
for t in "$@"; do
	name=$(basename "$t")
	if [ -n "${T:-}" ] && ! [[ $name =~ $T ]]; then
		continue
	fi
	ran=$((ran + 1))
	echo "== $t"
	start=$(date +%s)
	FP_TEST_FILTER=${F:-} timeout --kill-after=10 "$timeout_s" "$t"
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		failed+=("$name(timeout ${timeout_s}s)")
	else
		failed+=("$name(exit $rc)")
	fi
	echo "-- $name $(($(date +%s) - start))s rc=$rc"
done
if [ $ran -eq 0 ]; then
	echo "unit: no suite matches T=${T:-}" >&2
	exit 2
fi
echo "unit: $pass passed, ${#failed[@]} failed ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
