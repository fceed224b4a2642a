# bench/lib.sh - helpers shared by the benchmark scripts (sourced, not run).
# FP: the binary under test (default ./fleetplane). BENCH_WORK: scratch dir (default /tmp/fp-bench).
FP=${FP:-$(pwd)/fleetplane}
BENCH_WORK=${BENCH_WORK:-/tmp/fp-bench}
ROUNDS=${ROUNDS:-3}
mkdir -p "$BENCH_WORK"
ulimit -n 20000 2>/dev/null || true
SERVE_PID=""
NGINX_PID=""

now() { date +%s.%N; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a-b}'; }

# median of the arguments (numbers)
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{if(NR==0){print "n/a"} else if(NR%2){print a[(NR+1)/2]} else {printf "%.3f\n",(a[NR/2]+a[NR/2+1])/2}}'; }

machine() {
	echo "machine: nproc=$(nproc) cpu=\"$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)\" mem=$(awk '/MemTotal/{print $2}' /proc/meminfo)kB kernel=$(uname -r) load=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
	echo "binary: $FP (${FP_REV:-$(cd "$(dirname "$FP")" && git rev-parse --short HEAD 2>/dev/null || echo '?')})"
}

# start_serve DIR ARGS...: starts serve in the background; sets SERVE_PID and T_EXEC.
start_serve() {
	local dir=$1
	shift
	mkdir -p "$dir"
	rm -f "$dir/serve.url"
	T_EXEC=$(now)
	# --plain-http: the figures are for the HTTP API as before TLS became serve's default (kube)
	"$FP" serve --data-dir "$dir" --listen 127.0.0.1:0 --log-level error --plain-http "$@" \
		>>"$dir/serve.log" 2>&1 &
	SERVE_PID=$!
}

# wait_url DIR SECS: waits for serve.url; sets URL, TOKEN, T_URL.
wait_url() {
	local dir=$1 secs=${2:-600} i
	for i in $(seq 1 $((secs * 50))); do
		if [ -s "$dir/serve.url" ] && [ -s "$dir/admin.token" ]; then
			T_URL=$(now)
			URL=$(cat "$dir/serve.url")
			TOKEN=$(cat "$dir/admin.token")
			return 0
		fi
		kill -0 "$SERVE_PID" 2>/dev/null || { echo "serve died (see $dir/serve.log)" >&2; return 1; }
		sleep 0.02
	done
	return 1
}

# wait_ready SECS: polls /readyz every 10 ms; sets T_READY.
wait_ready() {
	local secs=${1:-600} i
	for i in $(seq 1 $((secs * 100))); do
		if [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200 ]; then
			T_READY=$(now)
			return 0
		fi
		sleep 0.01
	done
	return 1
}

stop_serve() {
	[ -n "$SERVE_PID" ] || return 0
	kill -TERM "$SERVE_PID" 2>/dev/null || true
	local i
	for i in $(seq 1 300); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$SERVE_PID" 2>/dev/null && kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null || true
	SERVE_PID=""
}

# phase_count PHASE: fleetplane_nodes{phase=PHASE} from /metrics (empty if unreachable).
phase_count() {
	curl -s -m 5 -H "Authorization: Bearer $TOKEN" "$URL/metrics" |
		awk -v p="fleetplane_nodes{phase=\"$1\"}" '$1==p{print $2}'
}

# proc_kb PID FIELD: VmRSS / VmHWM in kB.
proc_kb() { awk -v f="$2:" '$1==f{print $2}' "/proc/$1/status" 2>/dev/null || echo died; }

cleanup_all() {
	stop_serve
	if [ -n "$NGINX_PID" ]; then kill -TERM "$NGINX_PID" 2>/dev/null || true; NGINX_PID=""; fi
}
trap cleanup_all EXIT

# thread_cpu PID: CPU seconds (user+sys) per thread name, summed over /proc/PID/task/*/stat,
# as "name=user/sys ..." (clock ticks converted to s), busiest first.
thread_cpu() {
	local hz; hz=$(getconf CLK_TCK)
	for t in /proc/"$1"/task/*/stat; do cat "$t" 2>/dev/null; done |
		awk -v hz="$hz" '{s=$0; sub(/^[^(]*\(/,"",s); n=s; sub(/\).*/,"",n); sub(/^[^)]*\) /,"",s); split(s,f," ");
			u[n]+=f[12]; k[n]+=f[13]} END{for(n in u) printf "%.2f %s=%.1f/%.1f\n", (u[n]+k[n])/hz, n, u[n]/hz, k[n]/hz}' |
		sort -rg | awk '{printf "%s ", $2}'
}

# proc_cpu PID: process CPU seconds "user/sys" (all threads, exited ones included).
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{s=$0; sub(/^[^)]*\) /,"",s); split(s,f," "); printf "%.1f/%.1f", f[12]/hz, f[13]/hz}' "/proc/$1/stat" 2>/dev/null; }
