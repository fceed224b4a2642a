#!/usr/bin/env bash
# tests/sim/test_sim_bug.sh BIN - proves the invariants can fail: a fleetplane built with a
# deliberately injected bug (controller/budget.c with -DFP_INJECT_BUG_SKIP_BUDGET: every
# disruption is admitted) must be caught by `sim` on a known seed, which must exit 1 and print
# that seed; the real build must pass the same seed. Seed 4 of 512 nodes x 10 days with the
# llama3 and correlated profiles has a leaf switch outage whose held nodes, once the on-call
# engineer resets the breaker, drain five at a time in leaf014 (budget: 4).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: test_sim_bug.sh BIN}
bug=$(mktemp /tmp/fleetplane-bug-XXXXXX)
err=$(mktemp /tmp/fleetplane-bug-err-XXXXXX)
trap 'rm -f "$bug" "$err"' EXIT
tests/sim/build-bug.sh "$bug"
args=(sim --nodes 512 --days 10 --seed 4 --faults llama3,correlated)
rc=0
"$bug" "${args[@]}" >/dev/null 2>"$err" || rc=$?
if [ $rc -ne 1 ]; then
	echo "test_sim_bug: the injected bug was NOT caught (exit $rc, expected 1)" >&2
	exit 1
fi
if ! grep -q "invariant violated with seed 4: .*budget leaf: leaf leaf014 has 5 nodes unavailable, max 4" "$err"; then
	echo "test_sim_bug: caught, but not as expected:" >&2
	head -3 "$err" >&2
	exit 1
fi
"$bin" "${args[@]}" >/dev/null
echo "test_sim_bug: the injected bug (skip budget check) caught with seed 4; the real build passes it"
