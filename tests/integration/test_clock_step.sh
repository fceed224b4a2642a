#!/usr/bin/env bash
# Wall-clock steps under libfaketime (issue 16): serve's deadlines run on the monotonic clock, so
# a step of +8 h while 8 sim nodes are mid-phase puts no PhaseDeadlineExceeded on them (it did,
# within seconds at --sim-speed 40, when deadlines compared wall time), the step back lets them
# finish, and event ids keep the order the events were made in (resourceVersion order) across
# both steps. FAKETIME_DONT_FAKE_MONOTONIC=1: only the wall clock moves, as with an NTP step.
source "$(dirname "$0")/lib.sh"

# Under ASan (make san) the sanitizer runtime must load first, so no LD_PRELOAD: the logic is
# test_lifecycle's test_wall_clock_steps_leave_deadlines, on the virtual clock.
if [ "${FP_SAN:-0}" = 1 ]; then
	echo "test_clock_step: not under ASan (LD_PRELOAD of libfaketime); see test_lifecycle"
	exit 0
fi
FT_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
[ -r "$FT_LIB" ] || { echo "skip: libfaketime missing (Debian faketime)"; exit 77; }
REAL_FP=$FP
echo "+0" >"$WORK/faketime"
cat >"$WORK/fp-faked" <<EOS
#!/bin/sh
exec env LD_PRELOAD=$FT_LIB FAKETIME_TIMESTAMP_FILE=$WORK/faketime FAKETIME_NO_CACHE=1 \
	FAKETIME_DONT_FAKE_MONOTONIC=1 "$REAL_FP" "\$@"
EOS
chmod +x "$WORK/fp-faked"
FP=$WORK/fp-faked start_serve "$WORK/d" --sim 8 --sim-speed 40
FP=$REAL_FP

late() { # nodes with PhaseDeadlineExceeded True
	"$FP" node list -o json |
		jq '[.items[] | select(any(.status.conditions[]?; .type == "PhaseDeadlineExceeded" and .status == "True"))] | length'
}
busy() { # nodes not yet available
	"$FP" node list -o json | jq '[.items[] | select(.status.phase != "available")] | length'
}

# wait until every node is past enrolled and none is available yet: all mid-phase
for i in $(seq 1 100); do
	ph=$("$FP" node list -o json | jq -r '[.items[].status.phase] | map(select(. == "inspecting" or . == "provisioning")) | length')
	[ "$ph" = 8 ] && break
	sleep 0.1
done
assert_eq 8 "$ph" "nodes mid-phase (inspecting or provisioning) before the step"

echo "+8h" >"$WORK/faketime"
"$FP" token create --name during-step --role viewer >/dev/null # an event made at +8 h, surely
sleep 4 # at --sim-speed 40 every node is reconciled many times meanwhile
assert_eq 0 "$(late)" "nodes with PhaseDeadlineExceeded 4 s after a +8 h wall-clock step"
[ "$(busy)" -gt 0 ] || fail "every node was available before the step back: the test proves nothing"
rv() { curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/v1/events?limit=1" | jq -r .metadata.resourceVersion; }
R0=$(rv) # events up to R0 were made at +8 h
echo "+0" >"$WORK/faketime"
sleep 1
R1=$(rv) # events after R1 were made after the step back (in between: either, by commit order)
"$FP" token create --name after-step --role viewer >/dev/null # and one after it
for i in $(seq 1 240); do
	[ "$(busy)" = 0 ] && break
	kill -0 "$SERVE_PID" || fail "serve died"
	sleep 0.5
done
assert_eq 0 "$(busy)" "nodes not available 120 s after the step back"
assert_eq 0 "$(late)" "nodes with PhaseDeadlineExceeded after the steps"

# events: none PhaseDeadlineExceeded; those made after the step back sort after those before
curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/v1/events?limit=5000" >"$WORK/ev.json"
n=$(jq '.items | length' "$WORK/ev.json")
[ "$n" -gt 40 ] || fail "only $n events"
assert_eq 0 "$(jq '[.items[] | select(.reason == "PhaseDeadlineExceeded")] | length' "$WORK/ev.json")" \
	"PhaseDeadlineExceeded events"
before=$(jq -r --argjson r "$R0" '[.items[] | select((.metadata.resourceVersion | tonumber) <= $r) | .metadata.name] | max' "$WORK/ev.json")
after=$(jq -r --argjson r "$R1" '[.items[] | select((.metadata.resourceVersion | tonumber) > $r) | .metadata.name] | min' "$WORK/ev.json")
[ "$after" != null ] || fail "no event after the step back"
[[ $after > $before ]] || fail "event $after, made after the step back, sorts before $before, made at +8 h"
# the +8 h stretch shows in the events' own time, as the wall clock said then
jq -e '[.items[].time] | any(. > "'"$(date -u -d '+7 hours' +%Y-%m-%dT%H)"'")' "$WORK/ev.json" >/dev/null ||
	fail "no event was stamped during the +8 h stretch: was the clock faked?"
echo "ok test_clock_step ($n events)"
