#!/usr/bin/env bash
# A BMC password never shows: nodes are enrolled with unique random passwords (inline, and one
# through spec.bmc.password_file in serve's credentials dir), driven through the API and the CLI
# (get/list, events, operations, /metrics, PUT, a refused enroll carrying the password,
# drain/resume, power), and then no password appears in serve's log, in any response or CLI
# output, in any process's argv (ps, sampled during the run), nor as plaintext in the SQLite
# files, where it is sealed ("sb1:" in spec.bmc.password_sealed). The key is read back after a
# restart and the nodes still work; a replaced secret.key leaves the nodes readable but a BMC
# call fails with "cannot decrypt the BMC password"; a missing secret.key while nodes hold
# sealed passwords stops serve from starting (--new-secret-key makes a new key, and is refused
# while one exists); a group-readable secret.key stops serve from starting. password_file outside the credentials dir is refused with a 422 naming
# spec.bmc.password_file. Two Redfish test servers (tests/peers/redfish) check that the password
# reaching a real BMC is the right one, inline and from a file, before and after the restart, and
# that with a replaced key nothing (no garbage, no empty password) is sent: no 401 in their logs.
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
OUT="$WORK/out" # everything the run printed or answered; grepped at the end
mkdir -p "$OUT"
snap_ps() { ps -eo args | keep "ps-$1"; }

# Passwords: 18 random bytes in base64 (24 characters), kept in files, never in an argv.
PW1=$(head -c 18 /dev/urandom | base64)
PW2=$(head -c 18 /dev/urandom | base64)
PW3=$(head -c 18 /dev/urandom | base64)
start_redfish rf1 public-rackmount1
start_redfish rf2 public-bladed
PW4=$(cat "$WORK/rf1.pw")
PW5=$(cat "$WORK/rf2.pw")

start_serve "$D" --sim-speed 0
assert_eq 600 "$(stat -c %a "$D/secret.key")" "mode of the created secret.key"
assert_eq 32 "$(stat -c %s "$D/secret.key")" "size of secret.key"
assert_eq 700 "$(stat -c %a "$D/bmc-credentials")" "mode of the default credentials dir"
KEY_SUM=$(sha256sum <"$D/secret.key")
printf '%s\n' "$PW2" >"$D/bmc-credentials/sp-file.pw"
cp "$WORK/rf2.pw" "$D/bmc-credentials/sp-rf2.pw"
chmod 600 "$D/bmc-credentials/sp-file.pw" "$D/bmc-credentials/sp-rf2.pw"
redfish_control rf1 '{"set_boot": {"BootSourceOverrideEnabled": "Disabled", "BootSourceOverrideTarget": "None"}}'
# The Redfish servers play the deploy agent (its token in a header file).
redfish_callback rf1 sp-rf1
redfish_callback rf2 sp-rf2

# Enroll: three nodes with PW1 inline, one with its password in the credentials dir. The body
# goes through a file (node enroll -f), so no argv holds it.
jq -n --rawfile pw <(printf '%s' "$PW1") --rawfile p4 "$WORK/rf1.pw" --arg u1 "$(redfish_url rf1)" \
	--arg u2 "$(redfish_url rf2)" '{items: ([range(1; 4) as $i |
	{metadata: {name: "sp\($i)"}, spec: {site: "it-a", bmc: {driver: "sim", address: "bmc-sp\($i)",
	 username: "admin", password: $pw}}}] +
	[{metadata: {name: "sp-file"}, spec: {site: "it-a", bmc: {driver: "sim", username: "admin",
	 password_file: "sp-file.pw"}}},
	 {metadata: {name: "sp-rf1"}, spec: {site: "it-a", bmc: {driver: "redfish", address: $u1,
	 username: "admin", password: ($p4 | rtrimstr("\n"))}}},
	 {metadata: {name: "sp-rf2"}, spec: {site: "it-a", bmc: {driver: "redfish", address: $u2,
	 username: "admin", password_file: "sp-rf2.pw", system: "529QB9452R6"}}}])}' >"$WORK/enroll.json"
"$FP" node enroll -f "$WORK/enroll.json" 2>&1 | keep enroll
snap_ps enrolled
wait_phase available 6 120
snap_ps available

# Reads, through the CLI and the API.
for n in sp1 sp-file; do
	"$FP" node get "$n" -o json 2>&1 | keep "get-$n.json"
	"$FP" node get "$n" 2>&1 | keep "get-$n.txt"
done
"$FP" node list -o json 2>&1 | keep list.json
"$FP" node list -o wide 2>&1 | keep list.txt
"$FP" event list -o json 2>&1 | keep events.json
"$FP" op list -o json 2>&1 | keep ops.json
api GET /v1/nodes | keep api-nodes
api GET /v1/nodes/sp1 | keep api-sp1
api GET /v1/events | keep api-events
api GET /v1/operations | keep api-ops
curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics" | keep metrics
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics")" "GET /metrics"

# PUT: the public form back with a new label keeps the sealed password; a PUT with a new
# password (PW3) seals that one.
"$FP" node get sp1 -o json | jq '.metadata.labels.t = "x"' >"$WORK/put1.json"
resp=$(api PUT /v1/nodes/sp1 "$(cat "$WORK/put1.json")")
echo "$resp" | keep put1
assert_eq 200 "$(echo "$resp" | head -1)" "status of PUT sp1"
"$FP" node get sp2 -o json | jq --rawfile pw <(printf '%s' "$PW3") \
	'.spec.bmc.password = $pw' >"$WORK/put3.json"
code=$(curl -s -o "$WORK/put3.out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	-H 'Content-Type: application/json' --data-binary @"$WORK/put3.json" "$FLEETPLANE_URL/v1/nodes/sp2")
keep put3 <"$WORK/put3.out"
assert_eq 200 "$code" "status of PUT sp2 with a new password"

# A refused enroll that carries the password: the 422 does not echo it.
jq -n --rawfile pw <(printf '%s' "$PW1") \
	'{metadata: {name: "Bad_Name"}, spec: {bmc: {driver: "sim", password: $pw}}}' >"$WORK/bad1.json"
code=$(curl -s -o "$WORK/bad1.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	-H 'Content-Type: application/json' --data-binary @"$WORK/bad1.json" "$FLEETPLANE_URL/v1/nodes")
keep bad-name <"$WORK/bad1.out"
assert_eq 422 "$code" "status of an enroll with a bad name and a password"
jq -n --rawfile pw <(printf '%s' "$PW1") \
	'{metadata: {name: "sp9"}, spec: {bmc: {driver: "sim", password: $pw, password_file: "x"}}}' >"$WORK/bad2.json"
code=$(curl -s -o "$WORK/bad2.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $FLEETPLANE_TOKEN" \
	-H 'Content-Type: application/json' --data-binary @"$WORK/bad2.json" "$FLEETPLANE_URL/v1/nodes")
keep bad-both <"$WORK/bad2.out"
assert_eq 422 "$code" "status of an enroll with password and password_file"
assert_eq "spec.bmc.password_file: set either spec.bmc.password or spec.bmc.password_file, not both" \
	"$(jq -r .detail "$WORK/bad2.out")" "detail of an enroll with both"
"$FP" node enroll -f "$WORK/bad1.json" >"$WORK/bad-cli.out" 2>&1 && fail "CLI enroll of Bad_Name succeeded"
keep bad-cli <"$WORK/bad-cli.out"

# password_file outside the credentials dir: refused at enroll and at update, naming the field.
for pf in /etc/shadow ../x a/b .x; do
	body=$(jq -cn --arg pf "$pf" '{metadata: {name: "pf"}, spec: {bmc: {driver: "sim", password_file: $pf}}}')
	resp=$(api POST /v1/nodes "$body")
	echo "$resp" | keep "pf-enroll"
	assert_eq 422 "$(echo "$resp" | head -1)" "status of enroll with password_file $pf"
	detail=$(echo "$resp" | tail -n +2 | jq -r .detail)
	case "$detail" in
	spec.bmc.password_file:*) ;;
	*) fail "detail for password_file $pf does not name spec.bmc.password_file: $detail" ;;
	esac
	body=$(jq -c --arg pf "$pf" '.metadata.resourceVersion = "1" | .spec.bmc.password_file = $pf' "$WORK/put1.json")
	resp=$(api PUT /v1/nodes/sp1 "$body")
	echo "$resp" | keep "pf-put"
	assert_eq 422 "$(echo "$resp" | head -1)" "status of PUT with password_file $pf"
done
assert_eq 404 "$(api GET /v1/nodes/pf | head -1)" "node pf after refused enrolls"
# ca_file is confined the same way: a plain name in the credentials dir, else a 422 with the
# field named in "field" and in the detail, at enroll and at update.
for ca in /etc/shadow ../x a/b .x ""; do
	body=$(jq -cn --arg ca "$ca" '{metadata: {name: "ca"}, spec: {bmc: {driver: "sim", ca_file: $ca}}}')
	resp=$(api POST /v1/nodes "$body")
	echo "$resp" | keep "ca-enroll"
	assert_eq 422 "$(echo "$resp" | head -1)" "status of enroll with ca_file [$ca]"
	assert_eq spec.bmc.ca_file "$(echo "$resp" | tail -n +2 | jq -r .field)" "field of enroll with ca_file [$ca]"
	case "$(echo "$resp" | tail -n +2 | jq -r .detail)" in
	spec.bmc.ca_file:*) ;;
	*) fail "detail for ca_file [$ca] does not name spec.bmc.ca_file: $resp" ;;
	esac
	body=$(jq -c --arg ca "$ca" '.metadata.resourceVersion = "1" | .spec.bmc.ca_file = $ca' "$WORK/put1.json")
	resp=$(api PUT /v1/nodes/sp1 "$body")
	echo "$resp" | keep "ca-put"
	assert_eq 422 "$(echo "$resp" | head -1)" "status of PUT with ca_file [$ca]"
	assert_eq spec.bmc.ca_file "$(echo "$resp" | tail -n +2 | jq -r .field)" "field of PUT with ca_file [$ca]"
done
assert_eq 404 "$(api GET /v1/nodes/ca | head -1)" "node ca after refused enrolls"

# Drain, resume and a power operation on each kind of node.
"$FP" node drain sp1 --reason "secrets test" -o json 2>&1 | keep drain
"$FP" node resume sp1 -o json 2>&1 | keep resume
snap_ps drained
wait_phase available 6 120

# power_status NODE: runs a power status operation and prints its final state and lastError.
power_status() {
	local resp id i st
	resp=$(api POST "/v1/nodes/$1:power" '{"action":"status"}')
	echo "$resp" | keep "power-$1"
	assert_eq 202 "$(echo "$resp" | head -1)" "status of power status on $1"
	id=$(echo "$resp" | tail -n +2 | jq -r .metadata.name)
	for i in $(seq 1 200); do
		st=$("$FP" op get "$id" -o json)
		case $(echo "$st" | jq -r .status.state) in
		succeeded | failed | cancelled)
			echo "$st" | keep "op-$1"
			echo "$st" | jq -r '"\(.status.state) \(.status.lastError // "")"'
			return 0
			;;
		esac
		sleep 0.1
	done
	fail "power status on $1 did not end in 20 s"
}
assert_eq "succeeded " "$(power_status sp1)" "power status on sp1"
assert_eq "succeeded " "$(power_status sp-file)" "power status on sp-file"
assert_eq "succeeded " "$(power_status sp-rf1)" "power status on sp-rf1 (inline password)"
assert_eq "succeeded " "$(power_status sp-rf2)" "power status on sp-rf2 (password file)"
"$FP" event list -o json 2>&1 | keep events-after.json
"$FP" op list -o json 2>&1 | keep ops-after.json
curl -s -H "Authorization: Bearer $FLEETPLANE_TOKEN" "$FLEETPLANE_URL/metrics" | keep metrics-after
snap_ps end

# The store: sealed, no plaintext (db and -wal while serve runs).
for f in "$D"/fleetplane.db "$D"/fleetplane.db-wal; do
	[ -f "$f" ] || continue
	for pw in "$PW1" "$PW2" "$PW3" "$PW4" "$PW5"; do
		grep -a -q -F -- "$pw" "$f" && fail "a password is in $f in plaintext"
	done
done
grep -a -q -F '"password_sealed":"sb1:' "$D"/fleetplane.db "$D"/fleetplane.db-wal 2>/dev/null ||
	fail "no sealed password in the store"
stop_serve

# Restart: the key is read back (unchanged), the nodes decode and their BMC calls work.
start_serve "$D" --sim-speed 0
assert_eq "$KEY_SUM" "$(sha256sum <"$D/secret.key")" "secret.key after a restart"
assert_eq 6 "$("$FP" node list -o json | jq '.items | length')" "nodes after a restart"
assert_eq "succeeded " "$(power_status sp2)" "power status on sp2 after a restart"
assert_eq "succeeded " "$(power_status sp-rf1)" "power status on sp-rf1 after a restart"
"$FP" node get sp2 -o json 2>&1 | keep get-sp2-restart.json
stop_serve
cp "$D/serve.log" "$OUT/serve-1.log"

# A replaced secret.key: the nodes still list, a BMC call fails clearly.
mv "$D/secret.key" "$WORK/secret.key.orig"
head -c 32 /dev/urandom >"$D/secret.key"
chmod 600 "$D/secret.key"
start_serve "$D" --sim-speed 0
assert_eq 6 "$("$FP" node list -o json | jq '.items | length')" "nodes with a replaced key"
rf1_lines=$(wc -l <"$WORK/rf1.log")
res=$(power_status sp1)
case "$res" in
"failed "*"cannot decrypt the BMC password (was secret.key replaced?)"*) ;;
*) fail "power status on sp1 with a replaced key: expected a failure saying the password cannot be decrypted, got: $res" ;;
esac
res=$(power_status sp-rf1)
case "$res" in
"failed "*"cannot decrypt the BMC password (was secret.key replaced?)"*) ;;
*) fail "power status on sp-rf1 with a replaced key: expected a failure saying the password cannot be decrypted, got: $res" ;;
esac
assert_eq "$rf1_lines" "$(wc -l <"$WORK/rf1.log")" "requests to rf1 while its password cannot be decrypted"
assert_eq "succeeded " "$(power_status sp-rf2)" "power status on sp-rf2 (password file) with a replaced key"
stop_serve
mv "$WORK/secret.key.orig" "$D/secret.key"
start_serve "$D" --sim-speed 0
assert_eq "succeeded " "$(power_status sp1)" "power status on sp1 with the key restored"
assert_eq "succeeded " "$(power_status sp-rf1)" "power status on sp-rf1 with the key restored"
# No Redfish request was ever refused for its credentials.
for i in 1 2; do
	assert_eq 0 "$(grep -c ' 401' "$WORK/rf$i.log" || true)" "requests refused with 401 by rf$i"
done
stop_serve

# A missing secret.key while 4 nodes (sp1-sp3 and sp-rf1; not the two password_file nodes)
# hold sealed passwords: serve refuses to start and makes no key;
# --new-secret-key is refused while a key exists, and makes a new one when it is missing.
mv "$D/secret.key" "$WORK/secret.key.orig"
out=$("$FP" serve --data-dir "$D" --listen 127.0.0.1:0 2>&1) && fail "serve started without secret.key"
assert_eq "error: $D/secret.key is missing but 4 nodes have BMC passwords sealed with it; restore it from backup (see docs/operations.md), or start once with --new-secret-key to make a new key (those nodes then need their passwords set again)" \
	"$out" "refusal of a missing secret.key"
[ -e "$D/secret.key" ] && fail "a refused start created secret.key"
cp "$WORK/secret.key.orig" "$D/secret.key"
out=$("$FP" serve --data-dir "$D" --listen 127.0.0.1:0 --new-secret-key 2>&1) && fail "serve started with --new-secret-key and a key"
assert_eq "error: --new-secret-key: $D/secret.key exists; the flag only makes a key when secret.key is missing (start without it)" \
	"$out" "refusal of --new-secret-key with a key"
assert_eq "$KEY_SUM" "$(sha256sum <"$D/secret.key")" "secret.key after a refused --new-secret-key"
rm "$D/secret.key"
start_serve "$D" --sim-speed 0 --new-secret-key
[ "$(sha256sum <"$D/secret.key")" != "$KEY_SUM" ] || fail "--new-secret-key kept the old key"
assert_eq 1 "$(grep -c 'making a new BMC password key; the sealed passwords of 4 nodes cannot be opened' "$D/serve.log")" \
	"warning of --new-secret-key"
res=$(power_status sp1)
case "$res" in
"failed "*"cannot decrypt the BMC password (was secret.key replaced?)"*) ;;
*) fail "power status on sp1 after --new-secret-key: expected a decrypt failure, got: $res" ;;
esac
assert_eq "succeeded " "$(power_status sp-file)" "power status on sp-file (password file) after --new-secret-key"
# A ca_file name is resolved in the credentials dir at each BMC call: a missing one fails the
# step with its absolute path, and no BMC is called (nothing listens on port 1). Only redfish
# nodes resolve a ca_file (the ipmi driver refuses one at enroll).
CRED=$(cd "$D/bmc-credentials" && pwd -P)
resp=$(api POST /v1/nodes '{"metadata":{"name":"ca1"},"spec":{"site":"it-a","bmc":{"driver":"redfish","address":"https://127.0.0.1:1","username":"admin","password_file":"sp-file.pw","ca_file":"ca1.pem"}}}')
assert_eq 201 "$(echo "$resp" | head -1)" "status of enroll with ca_file ca1.pem"
for i in $(seq 1 200); do
	err=$("$FP" op list -o json | jq -r '[.items[] | select(.spec.node == "ca1" and .status.state == "failed")][0].status.lastError // empty')
	[ -n "$err" ] && break
	sleep 0.1
done
assert_eq "step power_status attempt 1: BMC CA file $CRED/ca1.pem does not exist (spec.bmc.ca_file)" "$err" "lastError of ca1's first operation"
stop_serve
mv "$WORK/secret.key.orig" "$D/secret.key"

# A group-readable key stops serve from starting, with the path and the fix.
chmod 644 "$D/secret.key"
out=$("$FP" serve --data-dir "$D" --listen 127.0.0.1:0 2>&1) && fail "serve started with a 0644 secret.key"
assert_eq "error: secret key: $D/secret.key is readable or writable by group or others (mode 0644); the key that encrypts BMC passwords must be private: run chmod 600 $D/secret.key" \
	"$out" "refusal of a 0644 secret.key"
echo "$out" | keep refusal
chmod 600 "$D/secret.key"

# Nothing printed, answered, logged or passed in argv holds a password.
cp "$D/serve.log" "$OUT/serve.log"
for pw in "$PW1" "$PW2" "$PW3" "$PW4" "$PW5"; do
	hits=$(grep -l -r -F -- "$pw" "$OUT" || true)
	[ -z "$hits" ] || fail "a password appears in: $hits"
	for f in "$D"/fleetplane.db "$D"/fleetplane.db-wal; do
		[ -f "$f" ] || continue
		grep -a -q -F -- "$pw" "$f" && fail "a password is in $f in plaintext"
	done
done
# The checks above looked at real output: the files hold the nodes and the metrics.
grep -q -F '"sp-file"' "$OUT"/list.json.* || fail "node list output missing"
[ "$(ls "$OUT" | wc -l)" -ge 40 ] || fail "only $(ls "$OUT" | wc -l) outputs captured"
echo "PASS $TEST_NAME"
