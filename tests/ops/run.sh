#!/usr/bin/env bash
# Runs the ops tier (tests/ops/test_*.sh: the Debian package and systemd units, Prometheus rules
# and dashboards, the fleet page in a browser; root) against $FLEETPLANE_BIN. Exit 77 from a test is a skip with its reason (not root, a tool missing) for a user who is not root;
# for root (CI runs as root, with scripts/install-deps.sh --test done) it is a failure, so CI
# cannot pass without having run them. FP_OPS_REQUIRED=0|1 overrides.
set -uo pipefail
cd "$(dirname "$0")"
shopt -s nullglob
pass=0 skipped=() failed=()
required=${FP_OPS_REQUIRED:-$([ "$(id -u)" = 0 ] && echo 1 || echo 0)}
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
echo "ops: $pass passed, ${#skipped[@]} skipped, ${#failed[@]} failed ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
