#!/usr/bin/env bash
# Runs every tests/integration/test_*.sh against $FLEETPLANE_BIN; prints a summary and exits
# non-zero if any failed. FP_SAN=1 marks a sanitizer build (tests scale down).
set -uo pipefail
cd "$(dirname "$0")"
pass=0 failed=()
for t in test_*.sh; do
	start=$(date +%s)
	if bash "$t"; then
		pass=$((pass + 1))
		echo "ok   $t ($(($(date +%s) - start))s)"
	else
		failed+=("$t")
		echo "FAIL $t ($(($(date +%s) - start))s)"
	fi
done
echo "integration: $pass passed, ${#failed[@]} failed ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
