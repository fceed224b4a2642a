#!/usr/bin/env bash
# serve --config FILE and --check on the real binary: --check says ok and creates nothing; a bad
# file fails with exit 2 naming FILE:LINE: KEY; values from the file are applied (the listen
# address, seen in serve.url and the log); a command-line flag overrides the file.
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
CONF="$WORK/serve.conf"

# --check with a good file: ok, exit 0, the data dir not created, nothing bound.
cat >"$CONF" <<CONF
# fleetplane serve
data-dir $D
listen 127.0.0.1:0

workers 3
sim-speed 200
plain-http
CONF
out=$("$FP" serve --config "$CONF" --check 2>&1) || fail "--check of a good file: exit $? ($out)"
assert_eq "configuration ok" "$out" "--check output"
[ -e "$D" ] && fail "--check created $D"

# --check with a bad value: exit 2, the message names file, line and key.
printf 'data-dir %s\n# c\nworkers 0\n' "$D" >"$WORK/bad.conf"
rc=0
out=$("$FP" serve --config "$WORK/bad.conf" --check 2>&1) || rc=$?
assert_eq 2 "$rc" "--check of a bad file: exit code"
assert_eq "error: $WORK/bad.conf:3: workers: \"0\" is not 1..256" "$out" "bad value message"
# an unknown key, and a flag-only key
printf 'listen :0\nlisten-addr :1\n' >"$WORK/bad2.conf"
rc=0
out=$("$FP" serve --data-dir "$D" --config "$WORK/bad2.conf" 2>&1) || rc=$?
assert_eq 2 "$rc" "unknown key: exit code"
assert_eq "error: $WORK/bad2.conf:2: listen-addr: unknown key" "$out" "unknown key message"
printf 'new-secret-key\n' >"$WORK/bad3.conf"
rc=0
out=$("$FP" serve --data-dir "$D" --config "$WORK/bad3.conf" 2>&1) || rc=$?
assert_eq 2 "$rc" "flag-only key: exit code"
[[ $out == "error: $WORK/bad3.conf:1: new-secret-key: "* ]] || fail "flag-only message: $out"
# --check of a listen address that does not parse, and of a data dir under a missing parent
rc=0
out=$("$FP" serve --config "$CONF" --listen 127.0.0.1:99999 --check 2>&1) || rc=$?
assert_eq 2 "$rc" "--check of a bad port: exit code"
[[ $out == "error: --listen 127.0.0.1:99999: bad port" ]] || fail "bad port message: $out"
rc=0
out=$("$FP" serve --data-dir "$WORK/no/such/dir" --check 2>&1) || rc=$?
assert_eq 2 "$rc" "--check of an unreachable data dir: exit code"

# The file's values are applied: listen and data-dir come from it (serve.url, the log).
mkdir -p "$D"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -i "s/^listen .*/listen 127.0.0.1:$port/" "$CONF"
"$FP" serve --config "$CONF" >>"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
for i in $(seq 1 300); do
	[ -s "$D/serve.url" ] && break
	kill -0 "$SERVE_PID" 2>/dev/null || fail "serve --config exited during start"
	sleep 0.1
done
assert_eq "http://127.0.0.1:$port" "$(cat "$D/serve.url")" "serve.url from the file's listen"
grep -q "msg=\"serve: listening\" url=http://127.0.0.1:$port .*sim_speed=200 " "$WORK/serve.log" ||
	fail "log does not show the file's listen and sim-speed"
stop_serve

# A flag overrides the file, whether it comes before or after --config.
start_serve "$D" --sim-speed 50 --config "$CONF"
grep -q "msg=\"serve: listening\" url=http://127.0.0.1:[0-9]* .*sim_speed=50 " "$D/serve.log" ||
	fail "--sim-speed 50 did not override the file's 200"
[ "$FLEETPLANE_URL" != "http://127.0.0.1:$port" ] || fail "--listen did not override the file"
stop_serve

# docs/operations.md lists every key as serve --help prints it from the table.
"$FP" serve --help >"$WORK/help.txt"
python3 - "$ROOT/docs/operations.md" "$WORK/help.txt" <<'PY' || fail "docs/operations.md lacks the serve --help dump"
import sys
sys.exit(0 if open(sys.argv[2]).read() in open(sys.argv[1]).read() else 1)
PY
echo "ok test_serve_config"
