#!/usr/bin/env bash
# Guards found by a break-in test: one serve per data dir, no two serves on one port, "%00"
# cannot cut a path short, an admin cannot revoke its own token, password_file is not shown,
# and a bulk enroll that collides late writes nothing.
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
start_serve "$D" --sim 2 --sim-speed 200
# A second serve on the same data dir is refused.
out=$("$FP" serve --data-dir "$D" --listen 127.0.0.1:0 2>&1) && fail "second serve on $D started"
grep -q "is in use by another fleetplane serve" <<<"$out" || fail "unclear refusal: $out"
# A second serve on the same port (another data dir) is refused.
port=${FLEETPLANE_URL##*:}
out=$("$FP" serve --data-dir "$WORK/d2" --listen "127.0.0.1:$port" 2>&1) &&
	fail "second serve on port $port started"
grep -q "cannot listen" <<<"$out" || fail "unclear port refusal: $out"
wait_phase available 2 60
# "%00" does not act on r01n01.
resp=$(api POST "/v1/nodes/r01n01:drain%00zz" '{"reason":"x"}')
assert_eq 404 "$(echo "$resp" | head -1)" "status of a %00 path"
assert_eq 0 "$("$FP" node get r01n01 -o json | jq '.status.holds | length')" "holds after %00 drain"
# An admin cannot revoke the token it uses.
resp=$(api DELETE /v1/tokens/admin)
assert_eq 409 "$(echo "$resp" | head -1)" "status of self-revoke"
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/v1/nodes?limit=1")" "admin token after refused self-revoke"
# password_file is accepted but never returned.
resp=$(api POST /v1/nodes '{"metadata":{"name":"pf1"},"spec":{"bmc":{"driver":"sim","password_file":"bmc-pw"}}}')
assert_eq 201 "$(echo "$resp" | head -1)" "enroll with password_file"
grep -q "bmc-pw" <<<"$resp" && fail "password_file returned by POST"
# (the file's name may appear in a condition message once a BMC call looks for it; the spec
# never carries it back)
assert_eq false "$("$FP" node get pf1 -o json | jq '.spec.bmc | has("password_file") or has("password") or has("password_sealed")')" "credentials in GET's spec.bmc"
# A 600-item bulk enroll whose last name exists writes nothing (one transaction).
before=$("$FP" node list -o json | jq '.items | length')
nodes_json 600 bk > "$WORK/bulk.json"
jq '.items[599].metadata.name = "r01n01"' "$WORK/bulk.json" > "$WORK/bulk2.json"
code=$(curl -s -o "$WORK/bulk.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	-H 'Content-Type: application/json' --data-binary @"$WORK/bulk2.json" "$FLEETPLANE_URL/v1/nodes")
assert_eq 409 "$code" "status of a colliding bulk enroll"
assert_eq "$before" "$("$FP" node list -o json | jq '.items | length')" "node count after refused bulk"
# One node per BMC (break report N5): a second node naming a BMC another node uses - here the
# same Redfish service written with an upper-case scheme, the default port and a trailing '/' -
# is refused with 409 naming the first, and nothing is stored; a bulk enroll naming one BMC
# twice is a 422 naming both items. Bodies with passwords go through files, never an argv.
start_redfish dup public-rackmount1
DUP_URL=$(redfish_url dup)
DUP_PORT=${DUP_URL##*:}
post_file() { # FILE: POST /v1/nodes with FILE as the body; prints the status, body in $WORK/post.out
	curl -s -o "$WORK/post.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
		-H 'Content-Type: application/json' --data-binary @"$1" "$FLEETPLANE_URL/v1/nodes"
}
jq -n --arg u "$DUP_URL" --rawfile p "$WORK/dup.pw" '{metadata: {name: "rf-first"}, spec: {site: "it-a",
	bmc: {driver: "redfish", address: $u, username: "admin", password: ($p | rtrimstr("\n"))}}}' >"$WORK/dup1.json"
assert_eq 201 "$(post_file "$WORK/dup1.json")" "enroll rf-first"
jq -n --arg u "HTTP://127.0.0.1:$DUP_PORT/" --rawfile p "$WORK/dup.pw" '{metadata: {name: "rf-second"}, spec: {site: "it-a",
	bmc: {driver: "redfish", address: $u, username: "admin", password: ($p | rtrimstr("\n"))}}}' >"$WORK/dup2.json"
assert_eq 409 "$(post_file "$WORK/dup2.json")" "enroll rf-second on rf-first's BMC"
assert_eq '"spec.bmc.address" "rf-first"' "$(jq -c '.field, .node' "$WORK/post.out" | paste -sd' ')" "409 members"
assert_eq 404 "$(api GET /v1/nodes/rf-second | head -1)" "rf-second after the refusal"
# Two items on one IPMI BMC ("BMC-X" and "bmc-x:623" are one target) in one bulk: 422, both indexes.
resp=$(api POST /v1/nodes '{"items":[
	{"metadata":{"name":"ip-a"},"spec":{"bmc":{"driver":"ipmi","address":"BMC-X","username":"u","password_file":"x.pw"}}},
	{"metadata":{"name":"ip-b"},"spec":{"bmc":{"driver":"sim"}}},
	{"metadata":{"name":"ip-c"},"spec":{"bmc":{"driver":"ipmi","address":"bmc-x:623","username":"u","password_file":"x.pw"}}}]}')
assert_eq 422 "$(echo "$resp" | head -1)" "status of a bulk with one BMC twice"
assert_eq '[0,2]' "$(echo "$resp" | tail -n +2 | jq -c .indexes)" "indexes of the bulk refusal"
assert_eq 404 "$(api GET /v1/nodes/ip-b | head -1)" "ip-b after the refused bulk"
stop_serve
echo "PASS $TEST_NAME"
