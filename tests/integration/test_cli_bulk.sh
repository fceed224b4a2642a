#!/usr/bin/env bash
# The CLI's fleet-wide verbs against a sim fleet of 16 (issue 15): bulk drain and resume by
# hostlist and selector, done by the server under a disruption budget with one result per node
# (accepted, refused with the budget's reason, not_found) and exit 1 when any was not accepted;
# the all-or-nothing validation of POST /v1/nodes:drain; event list's server-side filters and
# newest-first order; node list -o reasons; bulk power.
. "$(dirname "$0")/lib.sh"
start_serve "$WORK/d" --sim 16 --sim-speed 0
wait_phase available 16 60
"$FP" health budget set rack-1 --domain rack --max-unavailable 1 >/dev/null

run() { # runs the CLI; sets RC, OUT (stdout), ERR
	set +e
	"$FP" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
	set -e
	OUT=$(cat "$WORK/out")
	ERR=$(cat "$WORK/err")
}

# A hostlist (results in name order): one node of r01 fits the budget, the next two are refused, one does not exist.
run node drain 'r01n[01-03],nosuch' --reason "swap PSU"
assert_eq 1 "$RC" "bulk drain: exit code"
assert_eq "NODE     RESULT      REASON
nosuch   not_found   node nosuch not found
r01n01   accepted    -
r01n02   refused     budget rack-1: rack r01 has 1 of max 1 unavailable
r01n03   refused     budget rack-1: rack r01 has 1 of max 1 unavailable
4 nodes: 1 accepted, 2 refused, 1 not found" "$OUT" "bulk drain: table"

# A selector, -o json: the server's per-node results.
run node drain -l rack=r02 --reason "rack PDU" -o json
assert_eq 1 "$RC" "bulk drain -l: exit code"
assert_eq "r02n01=accepted r02n02=refused r02n03=refused r02n04=refused r02n05=refused r02n06=refused r02n07=refused r02n08=refused" \
	"$(jq -r '[.items[] | "\(.name)=\(.result)"] | join(" ")' <<<"$OUT")" "bulk drain -l: results"
assert_eq "1 7 0" "$(jq -r '"\(.accepted) \(.refused) \(.notFound)"' <<<"$OUT")" "bulk drain -l: counts"
assert_eq "budget rack-1: rack r02 has 1 of max 1 unavailable" "$(jq -r '.items[7].reason' <<<"$OUT")" \
	"bulk drain -l: refusal reason"

# Exactly the accepted nodes carry the hold, as node list -o reasons shows.
run node list -o reasons --no-headers
assert_eq 0 "$RC" "node list -o reasons: exit code"
assert_eq "r01n01 operator:admin swap PSU
r02n01 operator:admin rack PDU" "$(awk '{print $1, $2, $4, $5}' <<<"$OUT")" "node list -o reasons: rows"

# Power by hostlist: each node as one NAME would be (an available node is refused without a
# drain); a forced cycle of available nodes answers to the budget like a drain.
run node power 'r01n[01-02]' off -o json
assert_eq 1 "$RC" "bulk power off: exit code"
assert_eq "r01n01=accepted r01n02=refused" "$(jq -r '[.items[] | "\(.name)=\(.result)"] | join(" ")' <<<"$OUT")" \
	"bulk power off: results"
[[ $(jq -r '.items[0].operation' <<<"$OUT") == power-* ]] || fail "bulk power off: no operation for r01n01: $OUT"
assert_eq "node r01n02 is available: power off would leave it available with the machine off; drain it first: fleetplane node drain r01n02, or pass force" \
	"$(jq -r '.items[1].reason' <<<"$OUT")" "bulk power off: refusal"
run node power -l rack=r02 cycle --force -o json
assert_eq "budget rack-1: rack r02 has 1 of max 1 unavailable" \
	"$(jq -r '[.items[] | select(.result == "refused") | .reason] | unique | join("|")' <<<"$OUT")" \
	"bulk power cycle --force: budget refusals"
assert_eq 7 "$(jq .refused <<<"$OUT")" "bulk power cycle --force: refused count"
assert_eq "r02n01=accepted" "$(jq -r '.items[0] | "\(.name)=\(.result)"' <<<"$OUT")" \
	"bulk power cycle --force: r02n01 (drained, out) is not refused by the budget but powered"

# All-or-nothing: one bad name refuses the request and changes nothing.
R=$(api POST /v1/nodes:drain '{"names":["r02n08","bad name"],"reason":"x"}')
assert_eq 422 "$(head -n 1 <<<"$R")" "bad name: status"
assert_eq "names[1]" "$(tail -n +2 <<<"$R" | jq -r .field)" "bad name: field"
assert_eq "[]" "$("$FP" node get r02n08 -o json | jq -c .status.holds)" "bad name: r02n08 untouched"
R=$(api POST /v1/nodes:drain "$(jq -cn '{names: [range(1001) | "n\(.)"], reason: "x"}')")
assert_eq "422 names: expected an array of 1..1000 node names" \
	"$(head -n 1 <<<"$R") $(tail -n +2 <<<"$R" | jq -r .detail)" "1001 names: refused"
R=$(api POST /v1/nodes:drain '{"selector":"rack=r03","names":["r03n01"],"reason":"x"}')
assert_eq 422 "$(head -n 1 <<<"$R")" "selector and names: status"

# Resume by hostlist: the caller's hold goes, a node without it is refused.
run node resume 'r01n[01-02]'
assert_eq 1 "$RC" "bulk resume: exit code"
assert_eq "r01n01   accepted   -
r01n02   refused    operator:admin holds no hold on node r01n02" "$(sed -n 2,3p <<<"$OUT")" "bulk resume: rows"

# event list: server-side filters, newest first; a bad filter is 400 naming it.
run event list --reason DrainRequested -o name
assert_eq 0 "$RC" "event list --reason: exit code"
assert_eq 2 "$(wc -l <<<"$OUT")" "event list --reason: count"
run event list --reason DrainRequested --since 10m --limit 1 -o json
assert_eq "node/r02n01 hold added: rack PDU" "$(jq -r '.items[] | "\(.object) \(.message)"' <<<"$OUT")" \
	"event list --limit 1: the newest"
run event list --type Warning --reason DrainRequested
assert_eq "No events found." "$ERR" "event list --type Warning --reason DrainRequested: none"
run event list --since 2099-01-01T00:00:00Z
assert_eq "No events found." "$ERR" "event list --since future: none"
R=$(api GET "/v1/events?reason=drain%20requested")
assert_eq 400 "$(head -n 1 <<<"$R")" "reason with a blank: status"
assert_eq reason "$(tail -n +2 <<<"$R" | jq -r .parameter)" "reason with a blank: parameter"
R=$(api GET "/v1/events?since=10m")
assert_eq since "$(tail -n +2 <<<"$R" | jq -r .parameter)" "since=10m on the API: parameter"
echo "ok"
