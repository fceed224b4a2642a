#!/usr/bin/env bash
# test_web.sh - the fleet page (/ui/, docs/operations.md "The fleet page") in headless Chromium
# (Debian's chromium + chromium-driver, driven by python3-selenium) against serve with 64 sim
# nodes: the map shows exactly 64 squares and a rack budget's 8 rows; a drain clicked with an operator token reaches the
# API (hold owned by operator:web-op, node goes maintenance); a drain made with curl shows up in
# the page without a reload; a viewer's drain is refused and the page shows the API's 403.
# Writes $WORK/fleet-page.png (1280x800; docs/img/fleet-page.png is one of these) and keeps it
# when FP_WEB_SHOT names a path to copy it to.
. "$(dirname "$0")/../integration/lib.sh"
PY=/usr/bin/python3
command -v chromium >/dev/null || { echo "test_web: chromium is not installed (scripts/install-deps.sh --test)"; exit 77; }
[ -x /usr/bin/chromedriver ] || { echo "test_web: /usr/bin/chromedriver missing (package chromium-driver)"; exit 77; }
"$PY" -c 'import selenium' 2>/dev/null || { echo "test_web: python3-selenium is not installed"; exit 77; }

start_serve "$WORK/d" --sim-speed 500
nodes_json 64 >"$WORK/nodes.json"
"$FP" node enroll -f "$WORK/nodes.json" >/dev/null
wait_phase available 64 120
tok() { # NAME ROLE: a new token's secret
	api POST /v1/tokens "{\"name\":\"$1\",\"role\":\"$2\"}" | sed -n 2p | jq -r .token
}
assert_eq 201 "$(api POST /v1/budgets '{"metadata":{"name":"per-rack"},"spec":{"domain":"rack","maxUnavailable":1}}' | head -1)" "budget create"
OP=$(tok web-op operator)
VIEW=$(tok web-view viewer)
(umask 077 && printf 'Authorization: Bearer %s\n' "$FLEETPLANE_TOKEN" >"$WORK/admin.hdr")
(umask 077 && printf '%s\n%s\n' "$OP" "$VIEW" >"$WORK/page.tokens")
# Tokens reach the driver in a file, never an argv or the environment of chromium.
FP_URL=$FLEETPLANE_URL FP_TOKENS=$WORK/page.tokens FP_ADMIN_HDR=$WORK/admin.hdr \
	FP_SHOT=$WORK/fleet-page.png timeout 180 "$PY" "$(dirname "$0")/web_driver.py" ||
	fail "the page driver failed"
# what the driver asserted through the page, read back from the API once more
node() { curl -s -H @"$WORK/admin.hdr" "$FLEETPLANE_URL/v1/nodes/$1"; }
assert_eq "operator:web-op|drained from the fleet page" \
	"$(node r01n01 | jq -r '.status.holds[] | "\(.owner)|\(.reason)"')" "r01n01 hold"
assert_eq maintenance "$(node r01n01 | jq -r .status.phase)" "r01n01 phase"
assert_eq 0 "$(node r03n01 | jq '.status.holds | length')" "r03n01 holds after the viewer's drain"
[ -n "${FP_WEB_SHOT:-}" ] && cp "$WORK/fleet-page.png" "$FP_WEB_SHOT"
stop_serve
echo "test_web: ok"
