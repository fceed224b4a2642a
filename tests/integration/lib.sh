# lib.sh - helpers for integration tests that run the real fleetplane binary.
# Each test sources this file; FLEETPLANE_BIN names the binary under test.
set -euo pipefail

FP=${FLEETPLANE_BIN:?FLEETPLANE_BIN must name the fleetplane binary}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) # the repository root
TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "/tmp/fp-${TEST_NAME}-XXXXXX")
SERVE_PID=""
PEERS=() # pids of the test peers (start_redfish); cleanup stops them

# On exit: the test's own at_exit (if it defines one: peers of its own, background jobs), then
# the PEERS, then serve; the work dir is kept when the test failed.
cleanup() {
	local rc=$? p
	if declare -F at_exit >/dev/null; then at_exit || true; fi
	for p in "${PEERS[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
		kill -TERM "$SERVE_PID" 2>/dev/null || true
		wait "$SERVE_PID" 2>/dev/null || true
	fi
	if [ $rc -ne 0 ]; then
		echo "--- $TEST_NAME failed; last serve log lines:" >&2
		tail -n 30 "$WORK"/serve*.log 2>/dev/null >&2 || true
	fi
	[ $rc -eq 0 ] && rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT

fail() {
	echo "FAIL $TEST_NAME: $*" >&2
	exit 1
}

# san_skip WHY: under ASan+UBSan (FP_SAN=1, make san) ends the test as passed, saying why the
# normal tier's run is enough: the sanitizers add value where our code runs, not where a test
# waits on a peer (slurmctld scheduling, a BMC's sleep) while the same code is already run under
# them by the suites WHY names. CI time is the cost (make check stays near 40 minutes).
san_skip() {
	if [ "${FP_SAN:-0}" = 1 ]; then
		echo "ok (not run under sanitizers: $*)"
		exit 0
	fi
}

assert_eq() { # expected actual what
	[ "$1" = "$2" ] || fail "$3: expected [$1], got [$2]"
}

# start_serve DATA_DIR [serve args...]: starts serve on an ephemeral port, waits until /readyz
# answers 200, and exports FLEETPLANE_URL and FLEETPLANE_TOKEN (the admin token).
start_serve() {
	local dir=$1
	shift
	mkdir -p "$dir"
	rm -f "$dir/serve.url"
	# kube (issue 13): serve speaks https by default; tests get --plain-http unless they set
	# SERVE_TLS=1 (then FLEETPLANE_CA is the data dir's ca.crt)
	local plain=(--plain-http) cacert=()
	if [ "${SERVE_TLS:-0}" = 1 ]; then
		plain=()
		cacert=(--cacert "$dir/ca.crt")
		export FLEETPLANE_CA="$dir/ca.crt"
	fi
	"$FP" serve --data-dir "$dir" --listen 127.0.0.1:0 "${plain[@]}" "$@" >>"$dir/serve.log" 2>&1 &
	SERVE_PID=$!
	local i
	for i in $(seq 1 300); do
		if [ -s "$dir/serve.url" ] && [ -s "$dir/admin.token" ]; then
			export FLEETPLANE_URL=$(cat "$dir/serve.url")
			export FLEETPLANE_TOKEN=$(cat "$dir/admin.token")
			if [ "$(curl -s "${cacert[@]}" -o /dev/null -w '%{http_code}' "$FLEETPLANE_URL/readyz")" = 200 ]; then
				return 0
			fi
		fi
		kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited during start (see $dir/serve.log)"
		sleep 0.1
	done
	fail "serve did not become ready in 30 s"
}

stop_serve() {
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID" || fail "serve exited with status $? on SIGTERM"
	SERVE_PID=""
}

kill9_serve() {
	kill -9 "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null || true
	SERVE_PID=""
}

# api METHOD PATH [BODY] [TOKEN]: prints "STATUS BODY" on one line... as two lines:
# line 1 the HTTP status, then the body.
api() {
	local method=$1 path=$2 body=${3:-} tok=${4:-$FLEETPLANE_TOKEN}
	local out
	out=$(mktemp "$WORK/resp-XXXXXX")
	local code
	if [ -n "$body" ]; then
		code=$(curl -s ${FLEETPLANE_CA:+--cacert "$FLEETPLANE_CA"} -o "$out" -w '%{http_code}' \
			-X "$method" -H "Authorization: Bearer $tok" \
			-H 'Content-Type: application/json' --data-binary "$body" "$FLEETPLANE_URL$path")
	else
		code=$(curl -s ${FLEETPLANE_CA:+--cacert "$FLEETPLANE_CA"} -o "$out" -w '%{http_code}' \
			-X "$method" -H "Authorization: Bearer $tok" "$FLEETPLANE_URL$path")
	fi
	echo "$code"
	cat "$out"
	rm -f "$out"
}

# count_phase PHASE: number of nodes in PHASE with no holds.
count_phase() {
	"$FP" node list -o json | jq --arg p "$1" '[.items[] | select(.status.phase == $p and (.status.holds | length) == 0)] | length'
}

# wait_phase PHASE N SECONDS: waits until N nodes are in PHASE with no holds.
wait_phase() {
	local phase=$1 n=$2 secs=$3 got=0 i
	for i in $(seq 1 $((secs * 2))); do
		got=$(count_phase "$phase")
		[ "$got" = "$n" ] && return 0
		kill -0 "$SERVE_PID" 2>/dev/null || fail "serve died while waiting for $phase"
		sleep 0.5
	done
	"$FP" node list | awk '{print $2}' | sort | uniq -c >&2
	fail "only $got of $n nodes reached $phase within $secs s"
}

# nodes_json N [PREFIX]: a {"items":[...]} document of N sim nodes named PREFIXrRRnNN.
nodes_json() {
	local n=$1 prefix=${2:-}
	jq -n --argjson n "$n" --arg p "$prefix" '{items: [range(0; $n) as $i |
		{metadata: {name: ("\($p)r\(($i / 8 | floor) + 1 | tostring | if length < 2 then "0" + . else . end)n\(($i % 8) + 1 | tostring | if length < 2 then "0" + . else . end)"),
		            labels: {rack: ("r" + (($i / 8 | floor) + 1 | tostring))}},
		 spec: {site: "it-a", rack: ("r" + (($i / 8 | floor) + 1 | tostring)), bmc: {driver: "sim"},
		        gpus: {count: 8, model: "NVIDIA H100 80GB HBM3"}}}]}'
}

# keep NAME: stdin to a new file $OUT/NAME.XXXXXX (works inside pipelines too); the test sets
# OUT to the folder of everything it printed or was answered, which it greps at the end.
keep() { cat >"$(mktemp "${OUT:?OUT must name the folder keep writes to}/$1.XXXXXX")"; }

# cond NODE TYPE: "status reason" of a node condition.
cond() {
	"$FP" node get "$1" -o json | jq -r --arg t "$2" '.status.conditions[] | select(.type == $t) | "\(.status) \(.reason)"'
}

# The Redfish test server as it is, with a time.time() stamp in front of every log line.
REDFISH_STAMPED_PY='import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("rfpeer", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
log = m.State.log
m.State.log = lambda self, line: log(self, "%.6f %s" % (time.time(), line))
sys.argv = sys.argv[1:]
sys.exit(m.main())'

# start_redfish NAME BUNDLE [stamped]: starts a Redfish test server (tests/peers/redfish/server.py)
# over the DMTF mockup tests/data/redfish/BUNDLE with user admin and a random password (18 bytes
# in base64) in $WORK/NAME.pw - a file, never an argv - and waits up to 10 s for its port in
# $WORK/NAME.port. Its request log is $WORK/NAME.log (with "stamped", each line starts with the
# server's time in seconds and a space), its stderr $WORK/NAME.err; cleanup stops it.
start_redfish() {
	local name=$1 bundle=$2 i
	local py=(/usr/bin/python3)
	[ "${3:-}" = stamped ] && py=(/usr/bin/python3 -B -c "$REDFISH_STAMPED_PY")
	head -c 18 /dev/urandom | base64 >"$WORK/$name.pw"
	"${py[@]}" "$ROOT/tests/peers/redfish/server.py" --bundle "$ROOT/tests/data/redfish/$bundle" \
		--port-file "$WORK/$name.port" --log "$WORK/$name.log" --user admin \
		--password-file "$WORK/$name.pw" 2>"$WORK/$name.err" &
	PEERS+=($!)
	for i in $(seq 1 100); do
		[ -s "$WORK/$name.port" ] && return 0
		sleep 0.1
	done
	fail "Redfish server $name did not start (see $WORK/$name.err)"
}

# redfish_url NAME: the base URL of the Redfish test server NAME.
redfish_url() { echo "http://127.0.0.1:$(cat "$WORK/$1.port")"; }

# redfish_control NAME JSON: POSTs JSON to the server's /__control (fault knobs, callbacks,
# boot settings; tests/peers/redfish/server.py) and fails the test unless it answers 200.
redfish_control() {
	local code
	code=$(curl -s -o "$WORK/control.out" -w '%{http_code}' -X POST --data-binary "$2" "$(redfish_url "$1")/__control")
	assert_eq 200 "$code" "control $1 $2"
}

# redfish_power NAME SYSTEM-URI: the System's PowerState as the server NAME holds it.
redfish_power() { curl -s "$(redfish_url "$1")/__control" | jq -r --arg s "$2" '.power[$s]'; }

# redfish_callback NAME NODE: the server NAME plays NODE's deploy agent: on a power-on with a PXE
# override it calls :booted and :validated with the admin token, read from the header file
# $WORK/agent.hdr (mode 0600, never an argv; written on first use). Needs start_serve first.
redfish_callback() {
	[ -s "$WORK/agent.hdr" ] ||
		(umask 077 && printf 'Authorization: Bearer %s\n' "$FLEETPLANE_TOKEN" >"$WORK/agent.hdr")
	redfish_control "$1" "$(jq -cn --arg u "$FLEETPLANE_URL" --arg f "$WORK/agent.hdr" --arg n "$2" \
		'{callback: {fp_url: $u, node: $n, auth_header_file: $f}}')"
}
