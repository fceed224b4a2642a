# lib.sh - helpers for integration tests that run the real fleetplane binary.
# Each test sources this file; FLEETPLANE_BIN names the binary under test.
set -euo pipefail

FP=${FLEETPLANE_BIN:?FLEETPLANE_BIN must name the fleetplane binary}
TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "/tmp/fp-${TEST_NAME}-XXXXXX")
SERVE_PID=""

cleanup() {
	local rc=$?
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
	"$FP" serve --data-dir "$dir" --listen 127.0.0.1:0 "$@" >>"$dir/serve.log" 2>&1 &
	SERVE_PID=$!
	local i
	for i in $(seq 1 300); do
		if [ -s "$dir/serve.url" ] && [ -s "$dir/admin.token" ]; then
			export FLEETPLANE_URL=$(cat "$dir/serve.url")
			export FLEETPLANE_TOKEN=$(cat "$dir/admin.token")
			if [ "$(curl -s -o /dev/null -w '%{http_code}' "$FLEETPLANE_URL/readyz")" = 200 ]; then
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
		code=$(curl -s -o "$out" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $tok" \
			-H 'Content-Type: application/json' --data-binary "$body" "$FLEETPLANE_URL$path")
	else
		code=$(curl -s -o "$out" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $tok" \
			"$FLEETPLANE_URL$path")
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
