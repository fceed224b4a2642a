#!/usr/bin/env bash
# test_health_events_cli.sh - `fleetplane health events` against the real binary: the API lists
# health events by node and id, and the command shows them newest first by event time, 100 by
# default with a note on stderr naming how many matched, --limit N and --limit 0 (all).
#
# The events are made up for this test (code foo:bar is in no rule: recorded, never held): 105
# events of r01n01 whose ids (e<i*37 mod 105>) are in neither time order.
. "$(dirname "$0")/lib.sh"
OUT="$WORK/out"
mkdir -p "$OUT"

start_serve "$WORK/d" --sim 8 --sim-speed 100

# event i: id e<(i*37) mod 105, 3 digits>, time 10:00:00 + i s
BODY=$(jq -cn '{events: [range(0; 105) as $i |
	{id: ("e" + ((($i * 37) % 105) | tostring | ("00" + .)[-3:])), source: "kernel",
	 code: "foo:bar",
	 time: ("2026-11-30T10:0\($i / 60 | floor):" + (($i % 60) | tostring | ("0" + .)[-2:]) + ".000Z")}]}')
R=$(api POST /v1/nodes/r01n01:report "$BODY")
assert_eq 200 "$(head -n1 <<<"$R")" "report of 105 events"
assert_eq 105 "$(sed -n '2,$p' <<<"$R" | jq '.accepted')" "accepted"

# the API: key order (node, then id)
assert_eq "e000 e001 e002" "$(api GET '/v1/healthevents?node=r01n01&limit=3' | sed -n '2,$p' | jq -r '[.items[].id] | join(" ")')" "API order by id"

# the CLI: default 100, newest first; i=104 is e068 at 10:01:44, i=103 e031, i=102 e099,
# the 100th is i=5: e080 at 10:00:05
"$FP" health events --node r01n01 >"$OUT/table" 2>"$OUT/stderr"
assert_eq 101 "$(wc -l <"$OUT/table" | tr -d ' ')" "header + 100 rows"
assert_eq "2026-11-30T10:01:44.000Z" "$(sed -n 2p "$OUT/table" | awk '{print $1}')" "newest row first"
assert_eq "2026-11-30T10:01:43.000Z" "$(sed -n 3p "$OUT/table" | awk '{print $1}')" "second row"
assert_eq "2026-11-30T10:00:05.000Z" "$(sed -n 101p "$OUT/table" | awk '{print $1}')" "100th row"
assert_eq "note: showing the newest 100 of 105 health events; --limit N for more, --limit 0 for all" \
	"$(cat "$OUT/stderr")" "note on stderr"

J=$("$FP" health events --node r01n01 --limit 3 -o json 2>"$OUT/stderr3")
assert_eq "note: showing the newest 3 of 105 health events; --limit N for more, --limit 0 for all" \
	"$(cat "$OUT/stderr3")" "note with --limit 3"
assert_eq "e068 e031 e099" "$(jq -r '[.items[].id] | join(" ")' <<<"$J")" "--limit 3 -o json"

"$FP" health events --node r01n01 --limit 0 >"$OUT/all" 2>"$OUT/stderr-all"
assert_eq 106 "$(wc -l <"$OUT/all" | tr -d ' ')" "--limit 0: header + 105 rows"
assert_eq "2026-11-30T10:00:00.000Z" "$(sed -n 106p "$OUT/all" | awk '{print $1}')" "oldest last"
assert_eq "" "$(cat "$OUT/stderr-all")" "no note when all are shown"

set +e
"$FP" health events --limit -1 2>"$OUT/usage"
rc=$?
set -e
assert_eq 2 "$rc" "a bad --limit is a usage error"
grep -q "flag '--limit' needs a count from 0 (all) to 100000, got '-1'" "$OUT/usage" ||
	fail "usage error text: $(cat "$OUT/usage")"
echo "ok $TEST_NAME"
