#!/usr/bin/env bash
# Roles through the CLI: viewer reads but cannot drain; an operator's hold is owned by
# operator:<token name> and another operator cannot resume it; an admin releases it explicitly
# (audited); token list shows no secrets; a revoked token gets 401; no secret reaches serve.log.
. "$(dirname "$0")/lib.sh"
start_serve "$WORK/d" --sim 0 --sim-speed 0
ADMIN=$FLEETPLANE_TOKEN
"$FP" node enroll -f - <<<'{"items":[{"metadata":{"name":"w1"},"spec":{"bmc":{"driver":"sim"}}},
	{"metadata":{"name":"w2"},"spec":{"bmc":{"driver":"sim"}}}]}' >/dev/null
wait_phase available 2 30

cli() { # [TOKEN=...] runs the CLI with FLEETPLANE_TOKEN=$TOK; sets RC, OUT, ERR
	set +e
	FLEETPLANE_TOKEN=$TOK "$FP" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
	set -e
	OUT=$(cat "$WORK/out")
	ERR=$(cat "$WORK/err")
}

# token create prints the secret alone as its last line.
TOK=$ADMIN cli token create --role viewer --name v
assert_eq 0 "$RC" "token create viewer: exit code"
assert_eq "token v created (role viewer); secret follows, shown once:" "$(head -n 1 <<<"$OUT")" "token create: first line"
V=$(tail -n 1 <<<"$OUT")
[[ $V =~ ^fpt_[A-Za-z0-9_-]{20,}$ ]] || fail "token create: last line [$V] is not a secret"
TOK=$ADMIN cli token create --role operator --name o1
O1=$(tail -n 1 <<<"$OUT")
TOK=$ADMIN cli token create --role operator --name o2
O2=$(tail -n 1 <<<"$OUT")
TOK=$ADMIN cli token create --role agent --name w1 --node w1
AG=$(tail -n 1 <<<"$OUT")
assert_eq "token w1 created (role agent, node w1); secret follows, shown once:" "$(head -n 1 <<<"$OUT")" "token create agent: first line"
for s in "$V" "$O1" "$O2" "$AG"; do [[ $s == fpt_* ]] || fail "secret [$s] lacks fpt_"; done

# viewer: reads, cannot drain.
TOK=$V cli node list -o json
assert_eq 0 "$RC" "viewer node list: exit code"
assert_eq "w1 w2" "$(jq -r '[.items[].metadata.name] | join(" ")' <<<"$OUT")" "viewer node list: names"
TOK=$V cli node drain w1 --reason r
assert_eq 1 "$RC" "viewer drain: exit code"
assert_eq "error: Forbidden: token v has role viewer; POST /v1/nodes/{name}:drain needs operator (HTTP 403)" "$ERR" "viewer drain: stderr"

# operator o1 drains: the hold is owned by operator:o1.
TOK=$O1 cli node drain w1 --reason "swap PSU"
assert_eq 0 "$RC" "o1 drain: exit code ($ERR)"
[[ $OUT == "node/w1 drain requested, phase "* ]] || fail "o1 drain: stdout [$OUT]"
TOK=$V cli node get w1 -o json
assert_eq '[{"owner":"operator:o1","reason":"swap PSU"}]' "$(jq -c '[.status.holds[] | {owner, reason}]' <<<"$OUT")" "w1 holds after o1 drain"

# o2 cannot resume o1's hold; the message lists the owners.
TOK=$O2 cli node resume w1
assert_eq 1 "$RC" "o2 resume: exit code"
assert_eq "error: Conflict: operator:o2 holds no hold on node w1; current owners: operator:o1 (HTTP 409)" "$ERR" "o2 resume: stderr"
TOK=$O2 cli node release w1 --owner operator:o1 --reason r
assert_eq 1 "$RC" "o2 release: exit code"
assert_eq "error: Forbidden: token o2 has role operator; POST /v1/nodes/{name}:release needs admin (HTTP 403)" "$ERR" "o2 release: stderr"

# admin releases o1's hold explicitly; audited as a Warning naming both.
TOK=$ADMIN cli node release w1 --owner operator:o1 --reason "o1 is on leave"
assert_eq 0 "$RC" "admin release: exit code ($ERR)"
[[ $OUT == "node/w1 hold released (owner operator:o1), phase "* ]] || fail "admin release: stdout [$OUT]"
TOK=$V cli node get w1 -o json
assert_eq 0 "$(jq '.status.holds | length' <<<"$OUT")" "w1 holds after release"
TOK=$V cli event list --object node/w1 -o json
assert_eq '[{"type":"Warning","actor":"operator:admin","message":"hold of operator:o1 released by operator:admin: o1 is on leave"}]' \
	"$(jq -c '[.items[] | select(.reason == "HoldReleased") | {type, actor, message}]' <<<"$OUT")" "release audit event"

# an operator resumes its own hold, with and without --reason.
TOK=$O2 cli node drain w2 --reason "check cables"
assert_eq 0 "$RC" "o2 drain w2: exit code ($ERR)"
TOK=$O2 cli node resume w2
assert_eq 0 "$RC" "o2 resume w2 without --reason: exit code ($ERR)"
TOK=$O2 cli node get w2 -o json
assert_eq 0 "$(jq '.status.holds | length' <<<"$OUT")" "w2 holds after resume"
TOK=$O2 cli node drain w2 --reason again
TOK=$O2 cli node resume w2 --reason "cables fine"
assert_eq 0 "$RC" "o2 resume w2 with --reason: exit code ($ERR)"

# token list: names and roles, never secrets or hashes.
TOK=$ADMIN cli token list
assert_eq 0 "$RC" "token list: exit code"
assert_eq "NAME ROLE NODE
admin admin -
o1 operator -
o2 operator -
v viewer -
w1 agent w1" "$(awk '{print $1, $2, $3}' <<<"$OUT")" "token list table"
TOK=$ADMIN cli token list -o json
assert_eq "admin o1 o2 v w1" "$(jq -r '[.items[].metadata.name] | join(" ")' <<<"$OUT")" "token list -o json: names"
TOK=$ADMIN cli token list -o wide
cat "$WORK/out" >"$WORK/all-token-lists"
TOK=$ADMIN cli token list -o json
cat "$WORK/out" >>"$WORK/all-token-lists"
curl -s -H "Authorization: Bearer $ADMIN" "$FLEETPLANE_URL/v1/tokens/o1" >>"$WORK/all-token-lists"
grep -qiE 'fpt_|hash|secret|"token" *:' "$WORK/all-token-lists" && fail "token list shows a secret or hash: $(cat "$WORK/all-token-lists")"
for s in "$V" "$O1" "$O2" "$AG" "$ADMIN"; do
	grep -qF "${s#fpt_}" "$WORK/all-token-lists" && fail "token list shows a secret"
done

# revoke: the token then gets 401.
TOK=$ADMIN cli token revoke o2
assert_eq 0 "$RC" "token revoke: exit code"
assert_eq "token o2 revoked" "$OUT" "token revoke: stdout"
TOK=$O2 cli node list
assert_eq 1 "$RC" "revoked token: exit code"
assert_eq "error: Unauthorized: a valid bearer token is required (HTTP 401)" "$ERR" "revoked token: stderr"
assert_eq 401 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $O2" "$FLEETPLANE_URL/v1/nodes")" "revoked token: HTTP status"
TOK=$ADMIN cli token revoke o2
assert_eq 1 "$RC" "second revoke: exit code"
assert_eq "error: Not Found: token o2 not found (HTTP 404)" "$ERR" "second revoke: stderr"

# no secret ever reaches the log (nor the CLI's error output).
stop_serve
for s in "$V" "$O1" "$O2" "$AG" "$ADMIN"; do
	grep -qF "$s" "$WORK/d/serve.log" && fail "serve.log contains a token secret"
done
grep -q 'fpt_' "$WORK/d/serve.log" && fail "serve.log contains an fpt_ string"
if [ "${FP_SAN:-0}" = 1 ] && grep -E 'Sanitizer|runtime error:' "$WORK/d/serve.log"; then
	fail "sanitizer report in serve.log"
fi
echo "PASS $TEST_NAME"
