#!/usr/bin/env bash
# tests/run-tier.sh DIR NAME: runs DIR/test_*.sh (a root tier: tests/slow, tests/ops) against
# $FLEETPLANE_BIN, one after the other, and prints NAME's summary. Exit 77 from a test is a skip
# with its reason (not root, a tool missing) for a user who is not root; for root (CI runs as
# root, with scripts/install-deps.sh --test done) it is a failure, so CI cannot pass without
# having run them. FP_<NAME>_REQUIRED=0|1 (FP_SLOW_REQUIRED, FP_OPS_REQUIRED) overrides.
set -uo pipefail
dir=$1 name=$2
cd "$dir" || exit 2
shopt -s nullglob
var="FP_${name^^}_REQUIRED"
required=${!var:-$([ "$(id -u)" = 0 ] && echo 1 || echo 0)}
pass=0 skipped=() failed=()
for t in test_*.sh; do
	start=$(date +%s)
	bash "$t"
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "ok   $t ($(($(date +%s) - start))s)"
	elif [ $rc -eq 77 ] && [ "$required" != 1 ]; then
		skipped+=("$t")
		echo "skip $t"
	else
		failed+=("$t")
		echo "FAIL $t ($(($(date +%s) - start))s)"
	fi
done
echo "$name: $pass passed, ${#skipped[@]} skipped, ${#failed[@]} failed ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
