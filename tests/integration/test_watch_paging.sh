#!/usr/bin/env bash
# Paging, label selectors and watch over 20 simulated nodes (racks of 8: r01 x8, r02 x8,
# r03 x4; labels rack=rNN, site=sim-a), and node get through the CLI.
. "$(dirname "$0")/lib.sh"
start_serve "$WORK/d" --sim 20 --sim-speed 200

get() { curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL$1"; }
code() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL$1"; }
ALL=$(for r in 01 02; do for n in 01 02 03 04 05 06 07 08; do echo "r${r}n$n"; done; done
	for n in 01 02 03 04; do echo "r03n$n"; done)

# A watch from the first revision sees the simulated nodes move through phases: start it
# now, read it at the end.
rv0=$(get /v1/nodes | jq -r .metadata.resourceVersion)
[[ $rv0 =~ ^[0-9]+$ ]] || fail "list resourceVersion [$rv0] is not a number"
curl -s -N --max-time 8 -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	"$FLEETPLANE_URL/v1/nodes?watch=1&resourceVersion=$rv0" >"$WORK/watch0" 2>/dev/null &
WATCH0=$!

# --- paging: limit=7 then continue returns 7 + 7 + 6, every name once, in order.
names=""
pages=""
path='/v1/nodes?limit=7'
for i in 1 2 3 4 5; do
	page=$(get "$path")
	names+=$(jq -r '.items[].metadata.name' <<<"$page")$'\n'
	pages+="$(jq '.items | length' <<<"$page") "
	cont=$(jq -r '.metadata.continue // empty' <<<"$page")
	[ -z "$cont" ] && break
	path="/v1/nodes?limit=7&continue=$cont"
done
assert_eq "7 7 6 " "$pages" "page sizes"
assert_eq "$ALL" "$(sed '/^$/d' <<<"$names")" "paged names"
assert_eq 400 "$(code '/v1/nodes?limit=7&continue=bm90LWEtdG9rZW4')" "foreign continue token"
assert_eq "continue" "$(jq -r .parameter "$WORK/body")" "foreign continue token: parameter"
assert_eq 400 "$(code '/v1/nodes?limit=0')" "limit=0"
assert_eq 400 "$(code '/v1/nodes?limit=5001')" "limit=5001"

# --- label selectors
assert_eq "$(head -n 8 <<<"$ALL")" "$(get '/v1/nodes?labelSelector=rack%3Dr01' | jq -r '.items[].metadata.name')" "rack=r01"
assert_eq "$(head -n 8 <<<"$ALL")" "$(get '/v1/nodes?labelSelector=rack=r01,site=sim-a' | jq -r '.items[].metadata.name')" "rack=r01,site=sim-a"
assert_eq "12" "$(get '/v1/nodes?labelSelector=rack!%3Dr01' | jq '.items | length')" "rack!=r01"
assert_eq "20" "$(get '/v1/nodes?labelSelector=site' | jq '.items | length')" "site (exists)"
assert_eq "0" "$(get '/v1/nodes?labelSelector=rack=r09' | jq '.items | length')" "rack=r09"
# selector with paging: 8 r01 nodes in pages of 3
sel_names=""
path='/v1/nodes?labelSelector=rack%3Dr01&limit=3'
for i in 1 2 3 4 5; do
	page=$(get "$path")
	sel_names+=$(jq -r '.items[].metadata.name' <<<"$page")$'\n'
	cont=$(jq -r '.metadata.continue // empty' <<<"$page")
	[ -z "$cont" ] && break
	path="/v1/nodes?labelSelector=rack%3Dr01&limit=3&continue=$cont"
done
assert_eq "$(head -n 8 <<<"$ALL")" "$(sed '/^$/d' <<<"$sel_names")" "rack=r01 paged by 3"
assert_eq 400 "$(code '/v1/nodes?labelSelector=')" "empty labelSelector"
assert_eq "application/problem+json" "$(curl -s -o /dev/null -w '%{content_type}' -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/v1/nodes?labelSelector=")" "empty labelSelector: Content-Type"
assert_eq "labelSelector" "$(jq -r .parameter "$WORK/body")" "empty labelSelector: parameter"
assert_eq 400 "$(code '/v1/nodes?labelSelector=rack%3D%3D%3D')" "malformed labelSelector"
assert_eq 400 "$(code '/v1/nodes?phase=bogus')" "unknown phase"

# --- CLI node get
assert_eq '"r01n01"' "$("$FP" node get r01n01 -o json | jq .metadata.name)" "node get r01n01 -o json"
set +e
err=$("$FP" node get r09n09 2>&1 >/dev/null)
rc=$?
set -e
assert_eq 1 "$rc" "node get of a missing node: exit code"
assert_eq "error: Not Found: node r09n09 not found (HTTP 404)" "$err" "node get of a missing node: stderr"

# --- watch: the stream started at rv0 saw nodes change phase.
wait_phase available 20 40
wait "$WATCH0" || true
[ -s "$WORK/watch0" ] || fail "watch from $rv0 received nothing"
jq -e -s 'all(.[]; (.type | IN("ADDED", "MODIFIED", "DELETED", "BOOKMARK")) and .object.kind == "Node")' "$WORK/watch0" >/dev/null ||
	fail "watch lines are not Node events: $(head -c 500 "$WORK/watch0")"
mod=$(jq -r 'select(.type == "MODIFIED") | .object.metadata.name' "$WORK/watch0" | sort -u | wc -l)
[ "$mod" -ge 1 ] || fail "watch from $rv0: no MODIFIED events"
# revisions only go up along the stream
assert_eq "true" "$(jq -s '[.[].object.metadata.resourceVersion | tonumber] | . == sort' "$WORK/watch0")" "watch revisions ascending"

# A drain made after the list is seen by a watch from the list's resourceVersion, and only
# that node (filtered by the selector) appears.
rv=$(get '/v1/nodes?labelSelector=rack%3Dr02' | jq -r .metadata.resourceVersion)
curl -s -N --max-time 3 -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	"$FLEETPLANE_URL/v1/nodes?watch=1&resourceVersion=$rv&labelSelector=rack%3Dr02" >"$WORK/watch1" 2>/dev/null &
WATCH1=$!
sleep 0.5
"$FP" node drain r02n03 --reason "watch test" >/dev/null
"$FP" node drain r01n01 --reason "not in the selector" >/dev/null
wait "$WATCH1" || true
assert_eq "r02n03" "$(jq -r 'select(.type == "MODIFIED") | .object.metadata.name' "$WORK/watch1" | sort -u)" "watch rack=r02: MODIFIED names"
first=$(jq -c 'select(.type == "MODIFIED") | {phase: .object.status.phase, holds: [.object.status.holds[].owner]}' "$WORK/watch1" | head -n 1)
assert_eq '{"phase":"available","holds":["operator:admin"]}' "$first" "watch rack=r02: first MODIFIED (hold added)"
last=$(jq -r 'select(.type == "MODIFIED") | .object.status.phase' "$WORK/watch1" | tail -n 1)
[[ $last =~ ^(draining|maintenance)$ ]] || fail "watch rack=r02: last phase [$last], expected draining or maintenance"
assert_eq 400 "$(code "/v1/nodes?watch=1&resourceVersion=abc")" "watch with a bad resourceVersion"

stop_serve
if [ "${FP_SAN:-0}" = 1 ] && grep -E 'Sanitizer|runtime error:' "$WORK/d/serve.log"; then
	fail "sanitizer report in serve.log"
fi
echo "PASS $TEST_NAME"
