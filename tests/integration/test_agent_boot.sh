#!/usr/bin/env bash
# `fleetplane agent inspect` and `fleetplane agent deploy` (the node side of issue 11's network
# boot) as the ramdisk runs them, against a stand-in for fleetplane's /boot routes (a small
# Python HTTP server written here: the real routes are tested with serve where they live). The
# disk is a regular file, so the seed goes in with mtools (skipped without mformat/mcopy).
# Checks the CLI's exit codes (0 ok, 1 refused or failed, 2 usage, 3 unreachable), the report
# body, the written bytes, the first MiB zeroed on a bad sum, and the seed read back.
. "$(dirname "$0")/lib.sh"
command -v mformat >/dev/null && command -v mcopy >/dev/null && command -v mtype >/dev/null ||
	{ echo "skip $TEST_NAME: no mtools"; exit 0; }
command -v python3 >/dev/null || { echo "skip $TEST_NAME: no python3"; exit 0; }
export MTOOLS_SKIP_CHECK=1

# The image: MBR with one FAT12 partition labelled CIDATA at 1 MiB (4 MiB), 8 MiB in all.
python3 - "$WORK/os.img" <<'PY'
import struct, sys
m = bytearray(8 << 20)
m[446:462] = bytes([0, 0, 0, 0, 0x0c, 0, 0, 0]) + struct.pack('<II', 2048, 8192)
m[510], m[511] = 0x55, 0xAA
for i in range(6 << 20, 8 << 20):
    m[i] = (i * 7 + 3) & 0xff
open(sys.argv[1], 'wb').write(m)
PY
mformat -i "$WORK/os.img@@1048576" -T 8192 -h 1 -s 32 -v CIDATA ::
SHA=$(sha256sum "$WORK/os.img" | cut -d' ' -f1)

cat >"$WORK/srv.py" <<'PY'
import http.server, json, sys, os
work, sha = sys.argv[1], sys.argv[2]
img = open(os.path.join(work, 'os.img'), 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, status, body, ctype='application/json'):
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path.startswith('/boot/deploy?'):
            if 'token=old' in self.path:
                return self.reply(403, b'{"error":"token of an older attempt"}')
            want = open(os.path.join(work, 'sha')).read().strip() if os.path.exists(os.path.join(work, 'sha')) else sha
            doc = {"image": {"name": "os.img", "url": "/boot/files/os.img", "sha256": want,
                             "sizeBytes": len(img)}, "rootDevice": None,
                   "config": {"hostname": "r01n01", "metaData": "instance-id: r01n01-op1\n",
                              "userData": "#cloud-config\n"}}
            return self.reply(200, json.dumps(doc).encode())
        if self.path == '/boot/files/os.img':
            return self.reply(200, img, 'application/octet-stream')
        self.reply(404, b'{"error":"no route"}')
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        name = self.path.strip('/').replace('/', '_')
        open(os.path.join(work, name + '.json'), 'wb').write(body)
        if b'"token":"old"' in body:
            return self.reply(403, b'{"error":"token of an older attempt"}')
        self.reply(200, b'{"accepted":true}' if name == 'boot_inspect' else b'{}')
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(('127.0.0.1', 0), H)
open(os.path.join(work, 'port'), 'w').write(str(s.server_address[1]))
s.serve_forever()
PY
python3 "$WORK/srv.py" "$WORK" "$SHA" &
SRV=$!
at_exit() { kill "$SRV" 2>/dev/null || true; }
for _ in $(seq 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
U="http://127.0.0.1:$(cat "$WORK/port")"

run() { # EXPECTED_RC WHAT CMD...: runs CMD, checks its exit code
	local want=$1 what=$2 rc=0
	shift 2
	"$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$WORK/out" "$WORK/err" >&2; fail "$what: exit $rc, expected $want"; }
}

# usage errors: exit 2
run 2 "no token" "$FP" agent inspect --server "$U" --node r01n01
run 2 "bad token" "$FP" agent deploy --server "$U" --node r01n01 --token 'a b'
run 2 "bad server" "$FP" agent deploy --server ftp://x --node r01n01 --token t
run 2 "deploy has no --sysfs-root" "$FP" agent deploy --server "$U" --node r01n01 --token t --sysfs-root /
run 0 "inspect --help" "$FP" agent inspect --help

# inspect: accepted (0), refused (1), unreachable (3)
run 0 "inspect" "$FP" agent inspect --server "$U" --node r01n01 --token tok_1
assert_eq "r01n01 tok_1 inspection" "$(jq -r '"\(.node) \(.token) \(.inventory.source)"' "$WORK/boot_inspect.json")" "inspect body"
run 1 "inspect with an old token" "$FP" agent inspect --server "$U" --node r01n01 --token old
grep -q 'HTTP 403: token of an older attempt' "$WORK/err" || fail "inspect 403 message: $(cat "$WORK/err")"
run 3 "inspect unreachable" "$FP" agent inspect --server http://127.0.0.1:1 --node r01n01 --token t
run 0 "inspect dry run" "$FP" agent inspect --server http://127.0.0.1:1 --node r01n01 --token t --dry-run
assert_eq "inspection" "$(jq -r .source "$WORK/out")" "dry run prints the inventory"

# deploy to a regular file of 16 MiB
python3 -c "open('$WORK/disk.img','wb').write(b'\xaa' * (16 << 20))"
run 0 "deploy" "$FP" agent deploy --server "$U" --node r01n01 --token tok_1 --root-device "$WORK/disk.img"
assert_eq "true $SHA 8388608 $WORK/disk.img" \
	"$(jq -r '"\(.ok) \(.sha256) \(.bytes) \(.disk)"' "$WORK/boot_deployed.json")" "deployed body"
cmp -n 1048576 "$WORK/os.img" "$WORK/disk.img" || fail "the disk's first MiB is not the image's"
mtype -i "$WORK/disk.img@@1048576" ::meta-data >"$WORK/meta"
grep -qx "fleetplane-url: $U" "$WORK/meta" || fail "meta-data: $(cat "$WORK/meta")"
grep -qx "fleetplane-token: tok_1" "$WORK/meta" || fail "meta-data token: $(cat "$WORK/meta")"
assert_eq "#cloud-config" "$(mtype -i "$WORK/disk.img@@1048576" ::user-data)" "user-data"

# a wrong sum in the document: exit 1, ok=false, the first MiB zeroed
printf '%064d\n' 0 >"$WORK/sha"
run 1 "deploy with a bad sum" "$FP" agent deploy --server "$U" --node r01n01 --token tok_1 --root-device "$WORK/disk.img"
assert_eq "false" "$(jq -r .ok "$WORK/boot_deployed.json")" "bad sum reported"
jq -r .message "$WORK/boot_deployed.json" | grep -q "expected 0000000000000000000000000000000000000000000000000000000000000000, seen $SHA" ||
	fail "bad sum message: $(jq -r .message "$WORK/boot_deployed.json")"
assert_eq "1048576" "$(head -c 1048576 "$WORK/disk.img" | tr -d '\0' | wc -c | awk '{print 1048576 - $1}')" "zeroed bytes"
rm "$WORK/sha"

# too small a disk: exit 1, nothing written; refused document: 1; unreachable: 3
python3 -c "open('$WORK/small.img','wb').write(b'\xaa' * (4 << 20))"
run 1 "deploy to a small disk" "$FP" agent deploy --server "$U" --node r01n01 --token tok_1 --root-device "$WORK/small.img"
grep -q 'larger than disk' "$WORK/err" || fail "small disk message: $(cat "$WORK/err")"
assert_eq "0" "$(tr -d '\252' <"$WORK/small.img" | wc -c)" "small disk untouched"
run 1 "deploy with an old token" "$FP" agent deploy --server "$U" --node r01n01 --token old --root-device "$WORK/disk.img"
run 3 "deploy unreachable" "$FP" agent deploy --server http://127.0.0.1:1 --node r01n01 --token t --root-device "$WORK/disk.img"
rm -f "$WORK/boot_deployed.json"
sum_before=$(sha256sum <"$WORK/disk.img")
run 0 "deploy dry run" "$FP" agent deploy --server "$U" --node r01n01 --token tok_1 --root-device "$WORK/disk.img" --dry-run
assert_eq "$sum_before" "$(sha256sum <"$WORK/disk.img")" "dry run writes nothing"
[ ! -e "$WORK/boot_deployed.json" ] || fail "dry run reported"
run 1 "dry run to a small disk" "$FP" agent deploy --server "$U" --node r01n01 --token tok_1 --root-device "$WORK/small.img" --dry-run
echo "ok $TEST_NAME"
