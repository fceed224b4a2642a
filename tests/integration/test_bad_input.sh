#!/usr/bin/env bash
# Bad input and bad credentials against a running serve: every refusal is the documented 4xx as
# an RFC 9457 problem (application/problem+json with type/title/status/detail, detail naming
# what and where), and nothing is written (node count and list resourceVersion unchanged).
# Then the CLI's exit codes and error lines for bad input.
. "$(dirname "$0")/lib.sh"
start_serve "$WORK/d" --sim 0 --sim-speed 0

# Two quiet nodes to act on: once available the controller leaves them alone, so the store
# revision only moves when the API writes.
"$FP" node enroll -f - <<<'{"items":[{"metadata":{"name":"n1"},"spec":{"bmc":{"driver":"sim"}}},
	{"metadata":{"name":"n2"},"spec":{"bmc":{"driver":"sim"}}}]}' >/dev/null
wait_phase available 2 30

# req METHOD PATH [BODY] [TOKEN] [extra curl args...]: sets CODE, CTYPE, BODY, HDRS.
req() {
	local method=$1 path=$2 body=${3:-} tok=${4-$FLEETPLANE_TOKEN}
	shift $(($# < 4 ? $# : 4))
	local args=(-s -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' -X "$method")
	[ -n "$tok" ] && args+=(-H "Authorization: Bearer $tok")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
	CODE=$(curl "${args[@]}" "$@" "$FLEETPLANE_URL$path")
	HDRS=$(tr -d '\r' <"$WORK/h")
	CTYPE=$(echo "$HDRS" | awk -F': ' 'tolower($1) == "content-type" {print $2}' | tail -n 1)
	BODY=$(cat "$WORK/b")
}

state() { # "<node count> <list resourceVersion>"
	curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/v1/nodes" |
		jq -r '"\(.items | length) \(.metadata.resourceVersion)"'
}

BEFORE=$(state)
# expect_problem WHAT STATUS DETAIL_REGEX: the last req answered STATUS as a problem whose
# detail matches DETAIL_REGEX, and nothing was written.
expect_problem() {
	local what=$1 status=$2 re=$3
	assert_eq "$status" "$CODE" "$what: HTTP status (body $BODY)"
	assert_eq "application/problem+json" "$CTYPE" "$what: Content-Type"
	assert_eq "$status" "$(jq -r .status <<<"$BODY")" "$what: problem status"
	assert_eq "true" "$(jq '(.type | type == "string" and startswith("https://")) and
		(.title | type == "string" and length > 0) and
		(.detail | type == "string" and length > 0)' <<<"$BODY")" "$what: type/title/detail"
	local detail
	detail=$(jq -r .detail <<<"$BODY")
	[[ $detail =~ $re ]] || fail "$what: detail [$detail] does not match [$re]"
	assert_eq "$BEFORE" "$(state)" "$what: node count and resourceVersion after"
}

# --- malformed and invalid documents
req POST /v1/nodes '{"metadata":{"name":"x1"}'
expect_problem "malformed JSON" 400 'malformed JSON at line 1 column 25'
assert_eq "1 25" "$(jq -r '"\(.line) \(.column)"' <<<"$BODY")" "malformed JSON: line/column members"

req POST /v1/nodes $'{\n  "metadata": {"name": "x1"},\n  "spec": [1,}\n}'
expect_problem "malformed JSON (line 3)" 400 'at line 3 column'
assert_eq "3" "$(jq -r .line <<<"$BODY")" "malformed JSON: line member"

req POST /v1/nodes '{"metadata":{"name":"x1"},"colour":"red"}'
expect_problem "unknown top-level field" 422 '^unknown field colour$'
req POST /v1/nodes '{"metadata":{"name":"x1"},"spec":{"bmc":{"driver":"sim","colour":"red"}}}'
expect_problem "unknown nested field" 422 '^unknown field spec\.bmc\.colour$'

req POST /v1/nodes '{"metadata":{"name":"x1"},"spec":{"gpus":{"count":"8"}}}'
expect_problem "gpus.count as string" 422 '^spec\.gpus\.count: expected an integer$'
req POST /v1/nodes '{"metadata":{"name":"x1","labels":["a"]}}'
expect_problem "labels as array" 422 '^metadata\.labels: expected an object$'
req POST /v1/nodes '{"metadata":{"name":7}}'
expect_problem "name as number" 422 '^metadata\.name: required string$'
req POST /v1/nodes '["not", "an", "object"]'
expect_problem "body as array" 400 'expected a JSON object'
req POST /v1/nodes '' "$FLEETPLANE_TOKEN" -H 'Content-Type: text/plain' --data-binary '{"metadata":{"name":"x1"}}'
expect_problem "wrong Content-Type" 415 'text/plain'

bulk=$(jq -cn '{items: [range(1; 6) as $i | {metadata: {name: "b\($i)"}}]} |
	.items[2].spec = {bmc: {driver: "sim", colour: "red"}}')
req POST /v1/nodes "$bulk"
expect_problem "bulk with bad item 3 of 5" 422 '^items\[2\]: unknown field spec\.bmc\.colour; nothing was enrolled$'
assert_eq "2" "$(jq -r .index <<<"$BODY")" "bulk: index member"
req GET /v1/nodes/b1
assert_eq 404 "$CODE" "bulk: b1 (valid item before the bad one) was not written"

# --- oversized bodies (limit 1 MiB), with Content-Length and chunked
{ printf '{"metadata":{"name":"big"},"pad":"'; head -c 1100000 /dev/zero | tr '\0' a; printf '"}'; } >"$WORK/big.json"
req POST /v1/nodes "@$WORK/big.json"
expect_problem "oversized body (Content-Length)" 413 'larger than 1048576'
req POST /v1/nodes "@$WORK/big.json" "$FLEETPLANE_TOKEN" -H 'Transfer-Encoding: chunked'
expect_problem "oversized body (chunked)" 413 'larger than 1048576'

# --- bad names
for bad in Upper "$(printf 'a%.0s' $(seq 64))" -lead ''; do
	req POST /v1/nodes "$(jq -cn --arg n "$bad" '{metadata: {name: $n}}')"
	case $bad in
	Upper) re='^metadata\.name: "Upper" is not a valid name.*position 1' ;;
	-lead) re='^metadata\.name: "-lead" is not a valid name.*position 1' ;;
	'') re='^metadata\.name: must not be empty$' ;;
	*) re='^metadata\.name: "a+\.\.\." is longer than 63 characters$' ;;
	esac
	expect_problem "bad name [$bad]" 422 "$re"
done
req GET /v1/nodes/Upper
expect_problem "bad name in path" 400 '^name: "Upper" is not a valid name'

# --- conflicts and preconditions
req POST /v1/nodes '{"metadata":{"name":"n1"}}'
expect_problem "duplicate name" 409 '^node n1 already exists; nothing was enrolled$'
assert_eq "n1" "$(jq -r .name <<<"$BODY")" "duplicate: name member"
req POST /v1/nodes '{"items":[{"metadata":{"name":"x1"}},{"metadata":{"name":"n1"}}]}'
expect_problem "bulk with an existing name" 409 '^node n1 already exists; nothing was enrolled$'
req POST /v1/nodes '{"items":[{"metadata":{"name":"x1"}},{"metadata":{"name":"x1"}}]}'
expect_problem "bulk with a repeated name" 422 '^metadata\.name x1 appears more than once'

cur=$(curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/v1/nodes/n1" | jq -r .metadata.resourceVersion)
req PUT /v1/nodes/n1 "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"$((cur - 1))\"},\"spec\":{\"bmc\":{\"driver\":\"sim\"}}}"
expect_problem "stale resourceVersion" 409 "^node n1 changed: resourceVersion $((cur - 1)) is stale, current is $cur"
assert_eq "$cur" "$(jq -r .resourceVersion <<<"$BODY")" "stale: resourceVersion member"
req PUT /v1/nodes/n1 '{"metadata":{"name":"n1"},"spec":{"bmc":{"driver":"sim"}}}'
expect_problem "PUT without resourceVersion" 428 'needs metadata\.resourceVersion'
req PUT /v1/nodes/n1 "{\"metadata\":{\"name\":\"n2\",\"resourceVersion\":\"$cur\"}}"
expect_problem "PUT with another name" 422 '^metadata\.name n2 does not match the path.s n1$'

# --- actions
req POST /v1/nodes/n1:drain '{}'
expect_problem "drain without reason" 422 '^reason: required$'
req POST /v1/nodes/n1:drain '{"reason":""}'
expect_problem "drain with empty reason" 422 '^reason: expected 1\.\.256 characters, got 0$'
req POST /v1/nodes/n1:drain '{"reason":7}'
expect_problem "drain with numeric reason" 422 '^reason: expected a string$'
req POST /v1/nodes/n1:drain '{"reason":"x","colour":1}'
expect_problem "drain with unknown field" 422 '^unknown field colour$'
req POST /v1/nodes/nope:drain '{"reason":"x"}'
expect_problem "drain of a missing node" 404 '^node nope not found$'

# --- routes and methods
req GET /v1/nope
expect_problem "unknown route" 404 '^no route for GET /v1/nope$'
# A name over the 253-character limit is a bad parameter, named, before any lookup.
req GET "/v1/nodes/$(printf 'a%.0s' $(seq 5000))"
expect_problem "a 5000-character node name" 400 '^name: longer than 253 characters$'
# A long unknown path is echoed up to 64 characters, then "...".
req GET "/v1/nope/$(printf 'a%.0s' $(seq 5000))"
expect_problem "unknown route with a 5000-character path" 404 '^no route for GET /v1/nope/a{55}\.\.\.$'
req DELETE /v1/nodes
expect_problem "wrong method" 405 '^method DELETE is not allowed on /v1/nodes; allowed: GET, POST$'
assert_eq "Allow: GET, POST" "$(echo "$HDRS" | grep -i '^allow:')" "405: Allow header"

# --- authentication and roles
req GET /v1/nodes '' ''
expect_problem "no token" 401 'bearer token is required'
assert_eq 'WWW-Authenticate: Bearer realm="fleetplane"' "$(echo "$HDRS" | grep -i '^www-authenticate:')" "401: WWW-Authenticate"
req GET /v1/nodes '' 'fpt_not_a_real_token'
expect_problem "bad token" 401 'bearer token is required'
echo "$HDRS" | grep -qi '^www-authenticate: Bearer' || fail "bad token: no WWW-Authenticate"

mk_token() { # ROLE NAME [NODE]
	jq -cn --arg r "$1" --arg n "$2" --arg node "${3:-}" '{name: $n, role: $r} + (if $node != "" then {node: $node} else {} end)' |
		curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" -H 'Content-Type: application/json' \
			--data-binary @- "$FLEETPLANE_URL/v1/tokens" | jq -r .token
}
VIEWER=$(mk_token viewer v1)
OPER=$(mk_token operator o1)
AGENT=$(mk_token agent ag1 n1)
BEFORE=$(state)

req POST /v1/nodes '{"metadata":{"name":"x1"}}' "$VIEWER"
expect_problem "viewer POST" 403 '^token v1 has role viewer; POST /v1/nodes needs operator$'
req POST /v1/nodes/n1:drain '{"reason":"x"}' "$VIEWER"
expect_problem "viewer drain" 403 '^token v1 has role viewer; POST /v1/nodes/\{name\}:drain needs operator$'
req POST /v1/nodes/n1:release '{"owner":"health","reason":"x"}' "$OPER"
expect_problem "operator release" 403 '^token o1 has role operator; POST /v1/nodes/\{name\}:release needs admin$'
req GET /v1/tokens '' "$OPER"
expect_problem "operator token list" 403 'needs admin'
req GET /v1/nodes/n2 '' "$AGENT"
expect_problem "agent reads another node" 403 '^token ag1 has role agent; GET /v1/nodes/\{name\} needs viewer \(agent tokens reach only their own node\)$'
req GET /v1/nodes '' "$AGENT"
expect_problem "agent lists nodes" 403 'agent tokens reach only their own node'
req GET /v1/nodes/n1 '' "$AGENT"
assert_eq 200 "$CODE" "agent reads its own node"
assert_eq n1 "$(jq -r .metadata.name <<<"$BODY")" "agent reads its own node: name"

# --- CLI
cli() { # runs the CLI; sets RC, OUT, ERR
	set +e
	"$FP" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
	set -e
	OUT=$(cat "$WORK/out")
	ERR=$(cat "$WORK/err")
}
echo '{"metadata":{"name":"x1"},"spec":{"bmc":{"driver":"sim","colour":"red"}}}' >"$WORK/bad.json"
cli node enroll -f "$WORK/bad.json"
assert_eq 1 "$RC" "enroll bad.json: exit code"
assert_eq "error: Unprocessable Content: unknown field spec.bmc.colour (HTTP 422)" "$ERR" "enroll bad.json: stderr"
assert_eq "" "$OUT" "enroll bad.json: stdout"
echo '{"metadata":{"name":"x1"' >"$WORK/bad2.json"
cli node enroll -f "$WORK/bad2.json"
assert_eq 2 "$RC" "enroll of a file that is not JSON: exit code"
[[ $ERR == "error: $WORK/bad2.json: invalid JSON at line "* ]] || fail "enroll not-JSON: stderr [$ERR]"
cli node list --bogus
assert_eq 2 "$RC" "unknown flag: exit code"
assert_eq "error: unknown flag '--bogus'" "$(head -n 1 <<<"$ERR")" "unknown flag: stderr"
(unset FLEETPLANE_TOKEN && cli node list && assert_eq 2 "$RC" "FLEETPLANE_TOKEN unset: exit code" &&
	[[ $ERR == "error: FLEETPLANE_TOKEN is not set"* ]]) || fail "FLEETPLANE_TOKEN unset: [$ERR]"
(FLEETPLANE_URL=http://127.0.0.1:1 && cli node list && assert_eq 3 "$RC" "unreachable URL: exit code" &&
	[[ $ERR == "error: cannot reach fleetplane at http://127.0.0.1:1: "* ]]) || fail "unreachable URL: [$ERR]"
# a server URL is a base URL: no query, fragment or user name (issue 16 item 11)
for u in 'http://127.0.0.1:1/?watch=1|has a query' 'http://127.0.0.1:1#top|has a fragment' \
	'http://me@127.0.0.1:1|has a user name' 'http://:7070|is not a URL with a host'; do
	(FLEETPLANE_URL=${u%%|*} && cli node list && assert_eq 2 "$RC" "URL ${u%%|*}: exit code" &&
		[[ $ERR == "error: FLEETPLANE_URL ${u#*|}"* ]]) || fail "URL ${u%%|*}: [$ERR]"
done
cli node drain n1
assert_eq 2 "$RC" "drain without --reason: exit code"
assert_eq "error: missing --reason TEXT" "$(head -n 1 <<<"$ERR")" "drain without --reason: stderr"
cli node drain '' --reason x
assert_eq 2 "$RC" "drain '': exit code"
assert_eq "error: refusing an empty node name" "$(head -n 1 <<<"$ERR")" "drain '': stderr"
cli node drain 'n*' --reason x
assert_eq 2 "$RC" "drain 'n*': exit code"
assert_eq "$BEFORE" "$(state)" "CLI refusals wrote nothing"

# --- If-Match: the ETag of GET is the precondition of PUT (the only write this test expects)
req GET /v1/nodes/n1
assert_eq 200 "$CODE" "GET n1"
rv=$(jq -r .metadata.resourceVersion <<<"$BODY")
assert_eq "ETag: \"$rv\"" "$(echo "$HDRS" | grep -i '^etag:')" "GET n1: ETag"
doc='{"metadata":{"name":"n1","labels":{"team":"a"}},"spec":{"bmc":{"driver":"sim"}}}'
req PUT /v1/nodes/n1 "$doc" "$FLEETPLANE_TOKEN" -H "If-Match: \"$((rv - 1))\""
expect_problem "PUT with a stale If-Match" 409 "^node n1 changed: resourceVersion $((rv - 1)) is stale, current is $rv"
req PUT /v1/nodes/n1 "$doc" "$FLEETPLANE_TOKEN" -H 'If-Match: nope'
expect_problem "PUT with a malformed If-Match" 400 '^If-Match: expected a resourceVersion entity-tag'
req PUT /v1/nodes/n1 "$doc" "$FLEETPLANE_TOKEN" -H "If-Match: \"$rv\""
assert_eq 200 "$CODE" "PUT with the ETag as If-Match ($BODY)"
assert_eq "a" "$(jq -r .metadata.labels.team <<<"$BODY")" "PUT: labels replaced"

for q in bogus node/ node/a/b; do
	req GET "/v1/events?object=$q" "" "$FLEETPLANE_TOKEN"
	assert_eq 400 "$CODE" "events object=$q status"
	assert_eq "object: expected kind/name such as node/r01n03" "$(jq -r .detail <<<"$BODY")" \
		"events object=$q detail"
done

# query strictness (issue 16 item 8): a watch that is not a boolean, a resourceVersion that is
# not a number, on lists too, and a watch from a revision the store has not reached - answered
# (after at most a second's grace), never a stream that waits on nothing
for path in "/v1/nodes?watch=maybe|watch: expected true or false, got maybe" \
	"/v1/events?watch=yes|watch: expected true or false, got yes" \
	"/v1/nodes?resourceVersion=abc|resourceVersion: expected a revision number" \
	"/v1/operations?resourceVersion=-3|resourceVersion: expected a revision number"; do
	req GET "${path%%|*}" "" "$FLEETPLANE_TOKEN"
	assert_eq 400 "$CODE" "GET ${path%%|*}"
	assert_eq "${path#*|}" "$(jq -r .detail <<<"$BODY")" "GET ${path%%|*}: detail"
done
req GET "/v1/nodes?watch=true&resourceVersion=999999999" "" "$FLEETPLANE_TOKEN" -m 10
assert_eq 400 "$CODE" "watch from a future resourceVersion"
[[ $(jq -r .detail <<<"$BODY") == "resourceVersion 999999999 is newer than the store's revision "* ]] ||
	fail "watch from a future resourceVersion: $BODY"
req GET "/v1/nodes?watch=false&limit=1" "" "$FLEETPLANE_TOKEN"
assert_eq 200 "$CODE" "watch=false is a list"

# a serve that cannot bind says so and makes nothing in its data dir (issue 16 item 11)
port=${FLEETPLANE_URL##*:}
set +e
"$FP" serve --data-dir "$WORK/second" --listen "127.0.0.1:$port" --plain-http >"$WORK/second.out" 2>&1
rc=$?
set -e
assert_eq 1 "$rc" "serve on a port in use: exit code"
grep -q "^error: cannot listen on 127.0.0.1:$port: Address already in use; nothing was created in the data dir$" \
	"$WORK/second.out" || fail "serve on a port in use said: $(cat "$WORK/second.out")"
[ ! -e "$WORK/second" ] || fail "serve on a port in use made $(ls -A "$WORK/second")"

stop_serve
if [ "${FP_SAN:-0}" = 1 ] && grep -E 'Sanitizer|runtime error:' "$WORK/d/serve.log"; then
	fail "sanitizer report in serve.log"
fi
echo "PASS $TEST_NAME"
