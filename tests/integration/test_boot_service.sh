#!/usr/bin/env bash
# The network boot service (issue 11, src/boot/) against a real serve with --boot-listen and
# --boot-dhcp-hosts, sim BMCs, and curl acting as the machines' ramdisk and written system:
# - `fleetplane image add/list/rm` exit codes and messages; `serve --boot-url` without
#   --boot-listen exits 2;
# - GET /boot/ipxe: unknown MAC, the ramdisk script while n1 provisions (its token taken from the
#   script), local disk after the deploy; the dhcp hosts file's exact content;
# - 400s for bad bodies and fields, 403 for a wrong token and for another node's token;
# - GET/HEAD /boot/files: 200 with the file's sha256, 206 for a Range, 416, 304 (If-None-Match);
# - n1: inspect -> deploy document (image url/sha256/sizeBytes, meta-data with the token) ->
#   deployed ok -> booted -> validating with NetworkBoot True BootedFromDisk; POST :validated
#   with that bootId -> available; the token is refused (403) afterwards;
# - n2: a deploy that reports another sha256 fails the provisioning: NetworkBoot False
#   DeployFailed naming both sums;
# - n3: no inspection within --boot-timeout: InspectionTimeout, the operation failed;
# - n4: an inventory that does not match spec.hardware: validation fails with
#   InventoryMatchesSpec False InventoryMismatch naming the differences.
# A reimage (a health remediation rung) is not started here: nothing but the health ladder
# starts one, which test_lifecycle covers in virtual time.
# Times: --sim-speed 2 divides the sim's BMC latency and --boot-timeout 16 by 2 (8 s per wait),
# and the sim's own boot/burn-in notices come 45 s or more after a power cycle, after this test
# is done with the node.
. "$(dirname "$0")/lib.sh"

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# ---- fleetplane image: add, list, rm (exit codes and messages)
head -c 300000 /dev/urandom >"$WORK/os.img"
SHA=$(sha256sum "$WORK/os.img" | cut -d' ' -f1)
SIZE=300000
D=$WORK/d
imgcmd() { # runs fleetplane image ...; sets RC, OUT_, ERR_
	set +e
	"$FP" image "$@" >"$WORK/img.out" 2>"$WORK/img.err"
	RC=$?
	set -e
	OUT_=$(cat "$WORK/img.out")
	ERR_=$(cat "$WORK/img.err")
}
imgcmd add --data-dir "$D" os "$WORK/os.img"
assert_eq "0|image os added: $SIZE bytes, sha256 $SHA|" "$RC|$OUT_|$ERR_" "image add os"
imgcmd add --data-dir "$D" os "$WORK/os.img"
assert_eq "1||error: image os already exists (rm it first, or add with --replace)" \
	"$RC|$OUT_|$ERR_" "image add os again"
imgcmd add --data-dir "$D" --replace os "$WORK/os.img"
assert_eq "0|image os added: $SIZE bytes, sha256 $SHA|" "$RC|$OUT_|$ERR_" "image add --replace os"
imgcmd add --data-dir "$D" Bad "$WORK/os.img"
assert_eq "2||error: image name \"Bad\": must start with a lowercase letter or digit" \
	"$RC|$OUT_|$ERR_" "image add Bad"
imgcmd add --data-dir "$D" x "$WORK/absent"
assert_eq "1||error: $WORK/absent: No such file or directory" "$RC|$OUT_|$ERR_" "image add of a missing file"
imgcmd add --data-dir "$D" os
assert_eq 2 "$RC" "image add without FILE"
imgcmd add os "$WORK/os.img"
assert_eq 2 "$RC" "image add without --data-dir"
printf 'tmp\n' >"$WORK/tmp.img"
imgcmd add --data-dir "$D" tmp.img "$WORK/tmp.img"
assert_eq 0 "$RC" "image add tmp.img"
imgcmd list --data-dir "$D" -o json
assert_eq "0|[{\"name\":\"os\",\"sizeBytes\":$SIZE,\"sha256\":\"$SHA\"},{\"name\":\"tmp.img\",\"sizeBytes\":4,\"sha256\":\"$(sha256sum "$WORK/tmp.img" | cut -d' ' -f1)\"}]" \
	"$RC|$(jq -c '[.items[] | {name, sizeBytes, sha256}]' <<<"$OUT_")" "image list -o json"
imgcmd list --data-dir "$D"
assert_eq "0|NAME SIZE SHA256 ADDED|os $SIZE $SHA" "$RC|$(sed -n 1p <<<"$OUT_" | tr -s ' ')|$(sed -n 2p <<<"$OUT_" | awk '{print $1, $2, $3}')" "image list"
imgcmd rm --data-dir "$D" tmp.img
assert_eq "0|image tmp.img removed|" "$RC|$OUT_|$ERR_" "image rm tmp.img"
imgcmd rm --data-dir "$D" tmp.img
assert_eq "1||error: image tmp.img not found" "$RC|$OUT_|$ERR_" "image rm tmp.img again"
imgcmd frob --data-dir "$D"
assert_eq 2 "$RC" "image frob"

# ---- serve refuses --boot-* without --boot-listen
set +e
"$FP" serve --data-dir "$WORK/x" --listen 127.0.0.1:0 --boot-url http://10.0.0.1:1 >"$WORK/x.out" 2>&1
RC=$?
set -e
assert_eq "2|error: the --boot-* options need --boot-listen" "$RC|$(cat "$WORK/x.out")" "serve --boot-url without --boot-listen"

# ---- serve with the boot service
BPORT=$(free_port)
B=http://127.0.0.1:$BPORT
start_serve "$D" --sim-speed 2 --boot-listen "127.0.0.1:$BPORT" --boot-dhcp-hosts "$WORK/hosts" \
	--boot-timeout 16
INV1='{"system":{"manufacturer":"QEMU","productName":"Standard PC","serialNumber":"s1","uuid":"u1"},"cpu":{"model":"x","count":2},"memoryMiB":2048,"gpus":[],"pciDevices":9,"nics":[{"name":"eth0","mac":"52:54:00:00:01:01","operstate":"up"}],"disks":[{"name":"vda","path":"/dev/vda","sizeBytes":1073741824,"rotational":false,"removable":false}]}'
node_doc() { # NAME MAC PROVISION HARDWARE
	jq -cn --arg n "$1" --arg m "$2" --argjson p "$3" --argjson h "$4" \
		'{metadata: {name: $n}, spec: {site: "lab", bmc: {driver: "sim"}, macs: [$m], provision: $p, hardware: $h}}'
}
{
	echo '{"items":['
	node_doc n1 52:54:00:00:01:01 '{"image":"os","hostname":"gpu-01","ipAddress":"10.77.0.11","sshAuthorizedKeys":["ssh-ed25519 AAAA test@x"]}' '{"nics":1,"disks":1,"memoryMiB":1024}'
	echo ,
	node_doc n2 52:54:00:00:01:02 '{"image":"os"}' null
	echo ,
	node_doc n3 52:54:00:00:01:03 '{"image":"os"}' null
	echo ,
	node_doc n4 52:54:00:00:01:04 '{"image":"os","ipAddress":"10.77.0.14"}' '{"nics":2,"disks":1,"memoryMiB":4096}'
	echo ']}'
} >"$WORK/nodes.json"
"$FP" node enroll -f "$WORK/nodes.json" >/dev/null

# http METHOD URL [BODY] [curl args...]: sets CODE and BODY (and the headers in $WORK/h)
http() {
	local m=$1 u=$2 body=${3:-}
	shift 3 || shift $#
	rm -f "$WORK/b" "$WORK/h"
	if [ -n "$body" ]; then
		CODE=$(curl -s -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' -X "$m" \
			-H 'Content-Type: application/json' --data-binary "$body" "$@" "$u")
	else
		CODE=$(curl -s -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' -X "$m" "$@" "$u")
	fi
	touch "$WORK/b"
	BODY=$(tr -d '\000' <"$WORK/b")
}
hdr() { grep -i "^$1:" "$WORK/h" | head -1 | cut -d' ' -f2- | tr -d '\r'; }

# ipxe_token NODE MAC: waits until the node's script is the ramdisk; prints its token
ipxe_token() {
	local i
	for i in $(seq 1 100); do
		http GET "$B/boot/ipxe?mac=$2"
		if grep -q "fleetplane.token=" <<<"$BODY"; then
			sed -n 's/.*fleetplane.token=\([A-Za-z0-9_-]*\).*/\1/p' <<<"$BODY"
			return 0
		fi
		sleep 0.1
	done
	fail "$1 never got the ramdisk script: $BODY"
}
T1=$(ipxe_token n1 52:54:00:00:01:01)
T2=$(ipxe_token n2 52:54:00:00:01:02)
T4=$(ipxe_token n4 52:54:00:00:01:04)
ipxe_token n3 52:54:00:00:01:03 >/dev/null
OP1=$("$FP" node get n1 -o json | jq -r .status.operation)
[[ $OP1 == provision-* ]] || fail "n1 operation: [$OP1]"

# ---- GET /boot/ipxe
http GET "$B/boot/ipxe?mac=52%3A54%3A00%3A00%3A01%3A01"
assert_eq 200 "$CODE" "ipxe n1"
assert_eq "#!ipxe
echo fleetplane: booting the provisioning ramdisk for node n1
kernel $B/boot/files/ramdisk-vmlinuz initrd=ramdisk-initrd console=ttyS0 console=tty0 panic=30 fleetplane.url=$B fleetplane.node=n1 fleetplane.token=$T1 fleetplane.mac=\${net0/mac} fleetplane.ip=\${net0/ip} fleetplane.netmask=\${net0/netmask} fleetplane.gateway=\${net0/gateway}
initrd $B/boot/files/ramdisk-initrd
boot" "$BODY" "ipxe script of n1"
assert_eq 43 "${#T1}" "token length"
[ "$T1" != "$T2" ] || fail "n1 and n2 have the same token"
http GET "$B/boot/ipxe?mac=52-54-00-00-01-01"
assert_eq "200 $T1" "$CODE $(sed -n 's/.*fleetplane.token=\([A-Za-z0-9_-]*\).*/\1/p' <<<"$BODY")" "ipxe n1 with '-' separators"
http GET "$B/boot/ipxe?mac=52:54:00:99:99:99"
assert_eq "200|#!ipxe
echo fleetplane: MAC 52:54:00:99:99:99 is not enrolled; not booting it
exit 1" "$CODE|$BODY" "ipxe of an unknown MAC"
http GET "$B/boot/ipxe?mac=nope"
assert_eq 400 "$CODE" "ipxe with a bad MAC"
http GET "$B/boot/ipxe"
assert_eq 400 "$CODE" "ipxe without a MAC"

# ---- the dhcp hosts file
for i in $(seq 1 50); do [ -s "$WORK/hosts" ] && grep -q 01:04 "$WORK/hosts" && break; sleep 0.1; done
assert_eq "# generated by fleetplane from spec.macs and spec.provision of each node; do not edit
52:54:00:00:01:01,set:lab,10.77.0.11,gpu-01
52:54:00:00:01:02,set:lab,n2
52:54:00:00:01:03,set:lab,n3
52:54:00:00:01:04,set:lab,10.77.0.14,n4" "$(cat "$WORK/hosts")" "dhcp hosts file"

# ---- 400 and 403
http POST "$B/boot/inspect" 'not json'
assert_eq 400 "$CODE" "inspect with a body that is not JSON"
http POST "$B/boot/inspect" '[1]'
assert_eq "400|body: expected a JSON object" "$CODE|$(jq -r .error <<<"$BODY")" "inspect with an array body"
http POST "$B/boot/inspect" ''
assert_eq "400|body: expected a JSON object (empty body)" "$CODE|$(jq -r .error <<<"$BODY")" "inspect with an empty body"
http POST "$B/boot/inspect" "{\"node\":\"n1\",\"token\":\"$T1\",\"inventory\":{},\"extra\":1}"
assert_eq "400|unknown field body.extra" "$CODE|$(jq -r .error <<<"$BODY")" "inspect with an unknown field"
http POST "$B/boot/inspect" "{\"token\":\"$T1\",\"inventory\":{}}"
assert_eq "400|\"node\": expected a node name" "$CODE|$(jq -r .error <<<"$BODY")" "inspect without node"
http POST "$B/boot/inspect" "{\"node\":\"N 1\",\"token\":\"$T1\",\"inventory\":{}}"
assert_eq 400 "$CODE" "inspect with a bad node name"
http POST "$B/boot/inspect" '{"node":"n1","inventory":{}}'
assert_eq "400|\"token\": expected the token from the kernel command line" "$CODE|$(jq -r .error <<<"$BODY")" "inspect without token"
http POST "$B/boot/inspect" "{\"node\":\"n1\",\"token\":\"$T1\",\"inventory\":[]}"
assert_eq "400|\"inventory\": expected an object" "$CODE|$(jq -r .error <<<"$BODY")" "inspect with an array inventory"
http POST "$B/boot/inspect" "{\"node\":\"n1\",\"token\":\"x$T1\",\"inventory\":{}}"
assert_eq "403|token refused: it is not the token of node n1's provisioning attempt in flight (a callback from an earlier boot, or for another node)" \
	"$CODE|$(jq -r .error <<<"$BODY")" "inspect with a wrong token"
http POST "$B/boot/inspect" "{\"node\":\"n1\",\"token\":\"$T2\",\"inventory\":{}}"
assert_eq 403 "$CODE" "inspect of n1 with n2's token"
http POST "$B/boot/inspect" "{\"node\":\"nx\",\"token\":\"$T1\",\"inventory\":{}}"
assert_eq "403|no node nx" "$CODE|$(jq -r .error <<<"$BODY")" "inspect of a node that does not exist"
http GET "$B/boot/deploy?node=n1&token=$T2"
assert_eq 403 "$CODE" "deploy of n1 with n2's token"
http GET "$B/boot/deploy?node=n1"
assert_eq 400 "$CODE" "deploy without a token"
http POST "$B/boot/deployed" "{\"node\":\"n1\",\"token\":\"$T1\",\"ok\":\"yes\"}"
assert_eq "400|\"ok\": expected true or false" "$CODE|$(jq -r .error <<<"$BODY")" "deployed with a string ok"
http POST "$B/boot/deployed" "{\"node\":\"n1\",\"token\":\"$T1\",\"ok\":true,\"bytes\":-1}"
assert_eq 400 "$CODE" "deployed with negative bytes"
http POST "$B/boot/deployed" "{\"node\":\"n1\",\"token\":\"$T1\",\"ok\":true,\"sha256\":\"a\\nb\"}"
assert_eq 400 "$CODE" "deployed with a control character in sha256"
http POST "$B/boot/deployed" "{\"node\":\"n1\",\"token\":\"$T1\",\"ok\":true,\"disk\":5}"
assert_eq 400 "$CODE" "deployed with a number for disk"
http POST "$B/boot/booted" "{\"node\":\"n1\",\"token\":\"$T1\",\"bootId\":\"\${x}\"}"
assert_eq "400|\"bootId\": expected /proc/sys/kernel/random/boot_id" "$CODE|$(jq -r .error <<<"$BODY")" "booted with a bad bootId"
http POST "$B/boot/booted" "{\"node\":\"n1\",\"token\":\"$T1\",\"bootId\":5}"
assert_eq 400 "$CODE" "booted with a number for bootId"
http POST "$B/boot/booted" "{\"node\":\"n1\",\"token\":\"$T1\"}"
assert_eq 400 "$CODE" "booted without bootId"
head -c 1100000 /dev/zero | tr '\0' ' ' >"$WORK/big.json"
CODE=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$WORK/big.json" "$B/boot/inspect")
assert_eq 413 "$CODE" "inspect with a body over 1 MiB"
http GET "$B/boot/nothing"
assert_eq 404 "$CODE" "an unknown route"

# ---- GET/HEAD /boot/files
http GET "$B/boot/files/os"
assert_eq "200|$SHA|$SIZE|\"$SHA\"|bytes" "$CODE|$(sha256sum "$WORK/b" | cut -d' ' -f1)|$(stat -c %s "$WORK/b")|$(hdr ETag)|$(hdr Accept-Ranges)" "GET the image"
assert_eq "sha-256=:$(xxd -r -p <<<"$SHA" | base64 -w0):" "$(hdr Repr-Digest)" "Repr-Digest"
http GET "$B/boot/files/os" '' -H 'Range: bytes=100-199'
assert_eq "206|bytes 100-199/$SIZE|100" "$CODE|$(hdr Content-Range)|$(stat -c %s "$WORK/b")" "GET a range"
cmp -s "$WORK/b" <(tail -c +101 "$WORK/os.img" | head -c 100) || fail "the range's bytes differ from the file's"
http GET "$B/boot/files/os" '' -H 'Range: bytes=-10'
assert_eq "206|bytes $((SIZE - 10))-$((SIZE - 1))/$SIZE" "$CODE|$(hdr Content-Range)" "GET a suffix range"
http GET "$B/boot/files/os" '' -H "Range: bytes=$SIZE-"
assert_eq "416|bytes */$SIZE" "$CODE|$(hdr Content-Range)" "GET a range past the end"
http GET "$B/boot/files/os" '' -H 'Range: bytes=0-1,5-6'
assert_eq "200|$SIZE" "$CODE|$(stat -c %s "$WORK/b")" "GET with a multi-range (the whole file)"
http GET "$B/boot/files/os" '' -H "If-None-Match: \"$SHA\""
assert_eq "304|0" "$CODE|$(stat -c %s "$WORK/b")" "GET with If-None-Match"
http GET "$B/boot/files/os" '' -H 'Range: bytes=0-9' -H 'If-Range: "other"'
assert_eq "200|$SIZE" "$CODE|$(stat -c %s "$WORK/b")" "GET a range with a stale If-Range"
CODE=$(curl -s -I -o "$WORK/h" -w '%{http_code}' "$B/boot/files/os")
assert_eq "200|$SIZE|\"$SHA\"" "$CODE|$(hdr Content-Length)|$(hdr ETag)" "HEAD the image"
http GET "$B/boot/files/absent"
assert_eq 404 "$CODE" "GET an image that is not there"
http GET "$B/boot/files/..%2Fadmin.token"
assert_eq 404 "$CODE" "GET a path outside the store"

# ---- n1: the whole provisioning, then validation
# a boot from disk before anything was written is refused (the report would pass wait_disk_boot)
http POST "$B/boot/booted" "{\"node\":\"n1\",\"token\":\"$T1\",\"bootId\":\"early\"}"
assert_eq 409 "$CODE" "n1 booted before the deploy ($BODY)"
grep -q "nothing has been written to boot from yet" <<<"$BODY" || fail "n1 early booted: $BODY"
http POST "$B/boot/inspect" "$(jq -cn --arg t "$T1" --argjson i "$INV1" '{node: "n1", token: $t, inventory: $i}')"
assert_eq "200|{\"accepted\":true,\"node\":\"n1\",\"operation\":\"$OP1\"}" "$CODE|$BODY" "n1 inspect"
http GET "$B/boot/deploy?node=n1&token=$T1"
assert_eq 200 "$CODE" "n1 deploy document"
assert_eq "{\"name\":\"os\",\"url\":\"$B/boot/files/os\",\"sha256\":\"$SHA\",\"sizeBytes\":$SIZE}|null|gpu-01" \
	"$(jq -c .image <<<"$BODY")|$(jq -c .rootDevice <<<"$BODY")|$(jq -r .config.hostname <<<"$BODY")" "n1 deploy image"
assert_eq "instance-id: \"n1-$OP1\"
local-hostname: \"gpu-01\"
fleetplane-node: \"n1\"
fleetplane-url: \"$B\"
fleetplane-token: \"$T1\"
public-keys:
  - \"ssh-ed25519 AAAA test@x\"" "$(jq -r .config.metaData <<<"$BODY")" "n1 meta-data"
assert_eq '#cloud-config
ssh_authorized_keys:
  - "ssh-ed25519 AAAA test@x"' "$(jq -r .config.userData <<<"$BODY")" "n1 user-data"
http POST "$B/boot/deployed" "{\"node\":\"n1\",\"token\":\"$T1\",\"ok\":true,\"sha256\":\"$SHA\",\"bytes\":$SIZE,\"disk\":\"/dev/vda\",\"message\":\"written\"}"
assert_eq 200 "$CODE" "n1 deployed"
# after the deploy the machine boots from its disk: the ipxe answer says so
for i in $(seq 1 100); do
	http GET "$B/boot/ipxe?mac=52:54:00:00:01:01"
	grep -q 'local disk' <<<"$BODY" && break
	sleep 0.1
done
grep -q '^echo fleetplane: node n1 boots from its local disk (operation provision-' <<<"$BODY" ||
	fail "n1 ipxe after deploy: $BODY"
# a late inspection report is 409
http POST "$B/boot/inspect" "$(jq -cn --arg t "$T1" '{node: "n1", token: $t, inventory: {}}')"
assert_eq 409 "$CODE" "n1 inspect after the deploy"
for i in $(seq 1 100); do
	[ "$("$FP" op get "$OP1" -o json | jq -r '.spec.steps[.status.step] // ""')" = wait_disk_boot ] && break
	sleep 0.1
done
BOOT1=11111111-2222-3333-4444-555555555555
http POST "$B/boot/booted" "{\"node\":\"n1\",\"token\":\"$T1\",\"bootId\":\"$BOOT1\"}"
assert_eq 200 "$CODE" "n1 booted"
for i in $(seq 1 100); do
	[ "$("$FP" node get n1 -o json | jq -r .status.phase)" = validating ] && break
	sleep 0.1
done
assert_eq "validating|True BootedFromDisk|succeeded" \
	"$("$FP" node get n1 -o json | jq -r .status.phase)|$(cond n1 NetworkBoot)|$("$FP" op get "$OP1" -o json | jq -r .status.state)" \
	"n1 after the boot from disk"
assert_eq "$BOOT1" "$("$FP" node get n1 -o json | jq -r '.status.lastBoot.id // .status.lastBoot.bootId')" "n1 last boot"
assert_eq "$INV1" "$("$FP" node get n1 -o json | jq -c '.status.inventory | del(.source)')" "n1 inventory from the inspection"
R=$(api POST /v1/nodes/n1:validated "{\"bootId\":\"$BOOT1\",\"passed\":true}")
assert_eq 202 "$(head -1 <<<"$R")" "n1 :validated ($R)"
wait_phase available 1 20
assert_eq "True Matches" "$(cond n1 InventoryMatchesSpec)" "n1 InventoryMatchesSpec"
http POST "$B/boot/booted" "{\"node\":\"n1\",\"token\":\"$T1\",\"bootId\":\"$BOOT1\"}"
assert_eq "403|node n1 has no network-boot provisioning in flight (phase available)" \
	"$CODE|$(jq -r .error <<<"$BODY")" "n1's token after provisioning"
http GET "$B/boot/deploy?node=n1&token=$T1"
assert_eq 403 "$CODE" "n1's deploy after provisioning"
http GET "$B/boot/ipxe?mac=52:54:00:00:01:01"
assert_eq "#!ipxe
echo fleetplane: node n1 boots from its local disk (nothing to provision)
sanboot --no-describe --drive 0x80 || exit" "$BODY" "n1 ipxe when available"

# netboot_cond NODE OP WANT: NODE's NetworkBoot condition ("status reason message") is WANT, read
# in the same document as status.operation; once a retry has started another operation, its
# own wait may have replaced it (then only "False Waiting..." is accepted).
netboot_cond() {
	local doc op c
	doc=$("$FP" node get "$1" -o json)
	op=$(jq -r '.status.operation // ""' <<<"$doc")
	c=$(jq -r '.status.conditions[] | select(.type == "NetworkBoot") | "\(.status) \(.reason) \(.message)"' <<<"$doc")
	if [ -z "$op" ] || [ "$op" = "$2" ] || [ "$c" = "$3" ]; then
		assert_eq "$3" "$c" "$1 NetworkBoot"
	else
		[[ $c == "False Waiting"* || $c == "False Inspected"* ]] || fail "$1 NetworkBoot under retry $op: [$c]"
		echo "note: $1 retried as $op before its condition was read" >&2
	fi
}

# ---- n2: the deploy reports another sha256
OP2=$("$FP" node get n2 -o json | jq -r .status.operation)
http POST "$B/boot/inspect" "$(jq -cn --arg t "$T2" --argjson i "$INV1" '{node: "n2", token: $t, inventory: $i}')"
assert_eq 200 "$CODE" "n2 inspect"
BAD=0000000000000000000000000000000000000000000000000000000000000000
http POST "$B/boot/deployed" "{\"node\":\"n2\",\"token\":\"$T2\",\"ok\":true,\"sha256\":\"$BAD\",\"bytes\":$SIZE,\"disk\":\"/dev/vda\"}"
assert_eq 200 "$CODE" "n2 deployed with a wrong sum"
for i in $(seq 1 100); do
	[ "$("$FP" op get "$OP2" -o json | jq -r .status.state)" = failed ] && break
	sleep 0.1
done
assert_eq "failed|step wait_deploy attempt 1: the deploy ramdisk failed: reported sha256 $BAD differs from image os's $SHA" \
	"$("$FP" op get "$OP2" -o json | jq -r '"\(.status.state)|\(.status.lastError)"')" "n2 operation"
# NetworkBoot names both sums - until the retry's own wait_inspection takes the condition over
netboot_cond n2 "$OP2" "False DeployFailed the deploy ramdisk failed: reported sha256 $BAD differs from image os's $SHA"

# ---- n4: the inventory does not match spec.hardware
OP4=$("$FP" node get n4 -o json | jq -r .status.operation)
http POST "$B/boot/inspect" "$(jq -cn --arg t "$T4" --argjson i "$INV1" '{node: "n4", token: $t, inventory: $i}')"
assert_eq 200 "$CODE" "n4 inspect"
http POST "$B/boot/deployed" "{\"node\":\"n4\",\"token\":\"$T4\",\"ok\":true,\"sha256\":\"$SHA\",\"bytes\":$SIZE,\"disk\":\"/dev/vda\"}"
assert_eq 200 "$CODE" "n4 deployed"
for i in $(seq 1 100); do
	[ "$("$FP" op get "$OP4" -o json | jq -r '.spec.steps[.status.step] // ""')" = wait_disk_boot ] && break
	sleep 0.1
done
http POST "$B/boot/booted" "{\"node\":\"n4\",\"token\":\"$T4\",\"bootId\":\"b4\"}"
assert_eq 200 "$CODE" "n4 booted"
for i in $(seq 1 100); do
	[ "$(cond n4 InventoryMatchesSpec)" = "False InventoryMismatch" ] && break
	sleep 0.1
done
assert_eq "False InventoryMismatch expected 2 nics, inventory shows 1; expected at least 4096 MiB of memory, inventory shows 2048" \
	"$("$FP" node get n4 -o json | jq -r '.status.conditions[] | select(.type == "InventoryMatchesSpec") | "\(.status) \(.reason) \(.message)"')" \
	"n4 InventoryMatchesSpec"
assert_eq "failed" "$("$FP" op list --node n4 -o json | jq -r '[.items[] | select(.spec.kind == "validate")][0].status.state')" "n4 validate operation"

# ---- n3: no inspection report within --boot-timeout (8 s at --sim-speed 2)
OP3=$("$FP" node get n3 -o json | jq -r .status.operation)
for i in $(seq 1 300); do
	[ "$("$FP" op get "$OP3" -o json | jq -r .status.state)" = failed ] && break
	sleep 0.1
done
assert_eq "failed|wait_inspection" "$("$FP" op get "$OP3" -o json | jq -r '"\(.status.state)|\(.spec.steps[.status.step])"')" "n3 operation"
assert_eq "step wait_inspection attempt 1: no inspection report from the ramdisk: the machine did not PXE boot fleetplane's ramdisk, or the ramdisk cannot reach the boot service" \
	"$("$FP" op get "$OP3" -o json | jq -r .status.lastError)" "n3 operation error"
netboot_cond n3 "$OP3" "False InspectionTimeout no inspection report from the ramdisk: the machine did not PXE boot fleetplane's ramdisk, or the ramdisk cannot reach the boot service (step wait_inspection of operation $OP3)"
echo "ok $TEST_NAME"
