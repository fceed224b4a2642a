#!/bin/bash
# bench/bmc_power_cycle.sh - N (50) ipmi_sim BMCs power-cycled three ways, one after the other,
# each on a fresh set of BMCs that start powered on (issue 3, item 9; docs/benchmarks.md,
# "BMC power cycle"):
#   ipmitool    a serial loop of `ipmitool -I lanplus -C 3 ... chassis power cycle` (the password
#               through -f FILE, never on argv); wall time of the loop, and until every machine
#               is back on (ipmi_sim turns it on again ~1 s after the cycle's "off").
#   ironic      OpenStack Ironic's ipmi hardware type (bench/ironic/ironic-peer.sh): enroll N
#               nodes (driver_info ipmi_cipher_suite 3), manage them (-> manageable, power read),
#               then PUT /v1/nodes/X/states/power {"target":"rebooting"} with IRONIC_P concurrent
#               clients, and poll until every node has target_power_state null; wall time from
#               the first PUT. Once per [ipmi] min_command_interval in IRONIC_INTERVALS.
#   fleetplane  ./fleetplane serve (fresh data dir, --site-qps Q --sim-speed 1), N nodes enrolled with
#               an ipmi BMC in one site; once they are available, POST /v1/nodes/X:power
#               {"action":"cycle"} (FP_P concurrent clients) and wait until every operation has
#               ended; wall time from the first POST to the last operation's end. Once per
#               Q in SITE_QPS. The nodes get to available through the peer's deploy agent
#               (DIR/callback.env: it POSTs :booted and :validated with the admin token, which
#               stays in a 0600 header file).
# Usage: bench/bmc_power_cycle.sh [ipmitool] [ironic] [fleetplane]   (default: all three)
#
# The BMCs: one ipmi_sim per node, on its own loopback address SIM_NET.i and UDP port
# SIM_PORT+i (Ironic paces ipmitool commands per BMC *address* only - LAST_CMD_TIME in
# ironic/drivers/modules/ipmitool.py - so BMCs sharing 127.0.0.1 would be paced as one).
# The machine behind each BMC is the chassis_control program of the test peer
# (tests/peers/ipmi_sim/ipmisim.sh: logs every call to DIR/calls.log, calls fleetplane back as a
# deploy agent when powered on with boot=pxe and DIR/callback.env exists); a minimal built-in
# one (no agent) is used when that file is absent. ipmi_sim runs with -d (line-buffered with stdbuf): its debug output
# (DIR/debug.log) has one "Raw LAN receive" per datagram received (lines start with CR), which gives the RMCP/RMCP+
# request counts next to the chassis-control call counts.
#
# BMC requests per node are deltas over the measured window only: chassis_control calls
# (calls.log lines), RMCP datagrams received, RMCP+ sessions opened (Open Session Requests,
# payload type 0x10, IPMI 2.0 section 13.17).
#
# Env: FP (./fleetplane), BENCH_WORK (/tmp/fp-bench), N (50), SIM_NET (127.0.1), SIM_PORT
# (27400), IRONIC_INTERVALS ("5 1"), IRONIC_P (8), IRONIC_API_PORT (26395), IRONIC_RPC_PORT
# (28099), SITE_QPS ("10 100"), FP_P (8), FP_SERVE_ARGS (extra serve flags, e.g.
# "--bmc-concurrency 1 --bmc-min-interval 1000"), LIMIT_S (600: give up waiting), ROUNDS (3:
# every part once per round, in the order given).
# Needs: openipmi (ipmi_sim), ipmitool, curl, jq; for "ironic": bench/ironic/ironic-peer.sh
# install (as root). Results: one line per run in $BENCH_WORK/bmc-cycle/results, one table at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
. bench/lib.sh
N=${N:-50}
SIM_NET=${SIM_NET:-127.0.1}
SIM_PORT=${SIM_PORT:-27400}
IRONIC_INTERVALS=${IRONIC_INTERVALS:-5 1}
IRONIC_P=${IRONIC_P:-8}
IRONIC_API_PORT=${IRONIC_API_PORT:-26395}
IRONIC_RPC_PORT=${IRONIC_RPC_PORT:-28099}
SITE_QPS=${SITE_QPS:-10 100}
FP_P=${FP_P:-8}
FP_SERVE_ARGS=${FP_SERVE_ARGS:-}
LIMIT_S=${LIMIT_S:-600}
W=$BENCH_WORK/bmc-cycle
RES=$W/results
PWF=$W/bmc.password
IH='X-OpenStack-Ironic-API-Version: 1.82'
JH='Content-Type: application/json'

case $N in '' | *[!0-9]*) echo "N must be a number 1..254" >&2; exit 2 ;; esac
[ "$N" -ge 1 ] && [ "$N" -le 254 ] || { echo "N must be 1..254 (one loopback address each)" >&2; exit 2; }

mkdir -p "$W"
[ -s "$RES" ] && mv "$RES" "$RES.prev"
: >"$RES"
if [ ! -s "$PWF" ]; then
	(umask 077 && od -An -N8 -tx1 /dev/urandom | tr -d ' \n' >"$PWF")
fi
BMC_PW=$(cat "$PWF")

# ------------------------------------------------------------------ the simulated BMCs

sim_dir() { echo "$W/sims/b$1"; }
sim_ip() { echo "$SIM_NET.$1"; }
sim_port() { echo $((SIM_PORT + $1)); }

# The machine program: the test peer's chassis_control, cut out of ipmisim.sh (the text between
# <<'CTL' and CTL), or a minimal one with the same call log and no agent.
write_ctl() {
	local out=$1 peer=$REPO/tests/peers/ipmi_sim/ipmisim.sh
	if [ -f "$peer" ]; then
		sed -n "/<<'CTL'\$/,/^CTL\$/p" "$peer" | sed '1d;$d' >"$out"
	fi
	if [ ! -s "$out" ] || ! head -1 "$out" | grep -q '^#!'; then
		cat >"$out" <<'CTL'
#!/bin/sh
# minimal machine behind an ipmi_sim BMC: DIR/power, DIR/boot, every call logged to DIR/calls.log
D=$(cd "$(dirname "$0")" && pwd); shift; op=$1; shift
echo "$op $*" >>"$D/calls.log"
case $op in
get) for p in "$@"; do case $p in power) echo "power:$(cat "$D/power")" ;; boot) echo "boot:$(cat "$D/boot")" ;; *) exit 1 ;; esac; done ;;
set) while [ $# -ge 2 ]; do case $1 in power) echo "$2" >"$D/power" ;; boot) echo "$2" >"$D/boot" ;; reset | shutdown) ;; *) exit 1 ;; esac; shift 2; done ;;
*) exit 1 ;;
esac
CTL
		CTL_KIND=builtin
	else
		CTL_KIND=peer
	fi
	chmod 0755 "$out"
}

start_sims() {
	rm -rf "$W/sims"
	mkdir -p "$W/sims"
	write_ctl "$W/sims/chassis_control"
	local i d
	for i in $(seq 1 "$N"); do
		d=$(sim_dir "$i")
		mkdir -p "$d/state"
		cp "$W/sims/chassis_control" "$d/chassis_control"
		echo 1 >"$d/power"
		echo default >"$d/boot"
		: >"$d/calls.log"
		(
			umask 077
			cat >"$d/lan.conf" <<CONF
name "b$i"
set_working_mc 0x20
  startlan 1
    addr $(sim_ip "$i") $(sim_port "$i")
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789ab$(printf '%04x' "$i")
  endlan
  user 2 true  "admin" "$BMC_PW" admin 10 none md2 md5 straight
  chassis_control "$d/chassis_control 0x20"
CONF
		)
		cat >"$d/sim.emu" <<'EMU'
mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
sel_enable 0x20 1000 0x0a
mc_enable 0x20
EMU
		# -d (debug: one "Raw LAN receive" per datagram) needs ipmi_sim's console: give it a
		# FIFO opened read-write (/dev/null cannot be polled; -n sends debug to syslog).
		mkfifo "$d/console"
		stdbuf -oL ipmi_sim -c "$d/lan.conf" -f "$d/sim.emu" -s "$d/state" -d 0<>"$d/console" \
			>"$d/debug.log" 2>&1 &
		echo $! >"$d/pid"
	done
	for i in $(seq 1 "$N"); do
		local ok=0
		for _ in $(seq 1 50); do
			if timeout 5 ipmitool -I lanplus -C 3 -H "$(sim_ip "$i")" -p "$(sim_port "$i")" -U admin \
				-f "$PWF" chassis power status >/dev/null 2>&1; then
				ok=1
				break
			fi
			sleep 0.1
		done
		[ $ok = 1 ] || { echo "BMC $i ($(sim_ip "$i"):$(sim_port "$i")) did not answer" >&2; return 1; }
	done
}

stop_sims() {
	local f p pids=""
	for f in "$W"/sims/b*/pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f")
		kill -TERM "$p" 2>/dev/null || true
		pids="$pids $p"
		rm -f "$f"
	done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
}

# snap FILE: per BMC "calls datagrams sessions" (cumulative) into FILE.
snap() {
	local i d
	for i in $(seq 1 "$N"); do
		d=$(sim_dir "$i")
		echo "$(wc -l <"$d/calls.log") $(grep -c 'Raw LAN receive' "$d/debug.log" || true) $(grep -cE ' 06 00 ff 07 06 10 ' "$d/debug.log" || true)"
	done >"$1"
}

# per_node BEFORE AFTER: "calls datagrams sessions" per node (mean, min-max).
per_node() {
	paste -d' ' "$1" "$2" | awk '{c=$4-$1; d=$5-$2; s=$6-$3; C+=c; D+=d; S+=s;
		if(NR==1||c<cm)cm=c; if(c>cM)cM=c; if(NR==1||d<dm)dm=d; if(d>dM)dM=d; if(NR==1||s<sm)sm=s; if(s>sM)sM=s}
		END{printf "%.1f (%d-%d) %.1f (%d-%d) %.1f (%d-%d)", C/NR,cm,cM, D/NR,dm,dM, S/NR,sm,sM}'
}

# cycled I FROM_LINE: true when the machine's calls after line FROM_LINE contain "set power 0"
# followed later by "set power 1", and the machine is on now.
cycled() {
	local d; d=$(sim_dir "$1")
	[ "$(cat "$d/power")" = 1 ] || return 1
	tail -n +"$(($2 + 1))" "$d/calls.log" | awk '/^set power 0/{off=1} /^set power 1/{if(off)on=1} END{exit !on}'
}

# count_cycled BEFORE: how many machines cycled since the snapshot BEFORE.
count_cycled() {
	local i n=0 from
	for i in $(seq 1 "$N"); do
		from=$(sed -n "${i}p" "$1" | cut -d' ' -f1)
		cycled "$i" "$from" && n=$((n + 1))
	done
	echo "$n"
}

# wait_machines BEFORE T0: until every machine cycled (or LIMIT_S); prints s since T0.
wait_machines() {
	while :; do
		[ "$(count_cycled "$1")" -ge "$N" ] && break
		awk -v e="$(fsub "$(now)" "$2")" -v l="$LIMIT_S" 'BEGIN{exit !(e > l)}' && break
		sleep 0.1
	done
	fsub "$(now)" "$2"
}

result() { # peer setting wall_s success per_node note...
	local line="$1|$2|$3|$4|$5|${6:-}"
	# what the machine program of BMC 1 saw in the window (chassis_control calls, in order)
	echo "b1 calls in the window ($1, $2): $(tail -n +"$(($(head -1 "$W/before" | cut -d' ' -f1) + 1))" "$(sim_dir 1)/calls.log" | paste -sd, -)"
	echo "$line" >>"$RES"
	echo "result: $line"
}

# ------------------------------------------------------------------ (a) serial ipmitool

run_ipmitool() {
	echo "== ipmitool: serial loop over $N BMCs"
	start_sims
	snap "$W/before"
	local t0 i ok=0 loop all
	t0=$(now)
	for i in $(seq 1 "$N"); do
		if ipmitool -I lanplus -C 3 -H "$(sim_ip "$i")" -p "$(sim_port "$i")" -U admin -f "$PWF" \
			chassis power cycle >/dev/null 2>>"$W/ipmitool.err"; then
			ok=$((ok + 1))
		fi
	done
	loop=$(fsub "$(now)" "$t0")
	all=$(wait_machines "$W/before" "$t0")
	snap "$W/after"
	local good; good=$(count_cycled "$W/before")
	result ipmitool "serial, -C 3" "$loop" "$good/$N (rc 0: $ok)" "$(per_node "$W/before" "$W/after")" \
		"every machine back on at ${all} s"
	stop_sims
}

# ------------------------------------------------------------------ (b) Ironic

ironic() { W=$W/ironic API_PORT=$IRONIC_API_PORT RPC_PORT=$IRONIC_RPC_PORT bench/ironic/ironic-peer.sh "$@"; }
IA=http://127.0.0.1:$IRONIC_API_PORT

# ironic_states: one line per node "name power_state target_power_state provision_state last_error?"
ironic_states() {
	curl -s -H "$IH" "$IA/v1/nodes?fields=name,power_state,target_power_state,provision_state,target_provision_state,last_error&limit=1000" |
		jq -r '.nodes[] | "\(.name) \(.power_state|tostring|gsub(" ";"_")) \(.target_power_state|tostring|gsub(" ";"_")) \(.provision_state) \(.target_provision_state|tostring) \(if .last_error then "error" else "ok" end)"'
}

run_ironic_one() {
	local iv=$1
	echo "== ironic: [ipmi] min_command_interval = $iv"
	start_sims
	ironic stop 2>/dev/null || true
	rm -rf "$W/ironic"
	MIN_INTERVAL=$iv ironic configure
	ironic start
	local i body=$W/ironic/body
	mkdir -p "$body"
	chmod 700 "$body"
	for i in $(seq 1 "$N"); do
		(umask 077 && printf '{"name":"b%d","driver":"ipmi","driver_info":{"ipmi_address":"%s","ipmi_port":%d,"ipmi_username":"admin","ipmi_password":"%s","ipmi_cipher_suite":3,"ipmi_protocol_version":"2.0"}}' \
			"$i" "$(sim_ip "$i")" "$(sim_port "$i")" "$BMC_PW" >"$body/b$i.json")
	done
	seq 1 "$N" | xargs -P "$IRONIC_P" -I{} curl -s -o /dev/null -w '%{http_code}\n' -H "$IH" -H "$JH" \
		-X POST "$IA/v1/nodes" --data-binary @"$body/b{}.json" >"$W/ironic/create.codes"
	rm -rf "$body"
	local t0m; t0m=$(now)
	seq 1 "$N" | xargs -P "$IRONIC_P" -I{} curl -s -o /dev/null -w '%{http_code}\n' -H "$IH" -H "$JH" \
		-X PUT "$IA/v1/nodes/b{}/states/provision" -d '{"target":"manage"}' >"$W/ironic/manage.codes"
	while [ "$(ironic_states | awk '$4=="manageable" && $5=="null" && $2=="power_on"' | wc -l)" -lt "$N" ]; do
		awk -v e="$(fsub "$(now)" "$t0m")" -v l="$LIMIT_S" 'BEGIN{exit !(e > l)}' && break
		sleep 0.5
	done
	echo "manage: $(fsub "$(now)" "$t0m") s; $(ironic_states | awk '$4=="manageable" && $2=="power_on"' | wc -l) manageable and on"
	sleep 2 # let the conductor finish its post-manage work before the window opens
	snap "$W/before"
	local t0 t_end="-" codes
	t0=$(now)
	seq 1 "$N" | xargs -P "$IRONIC_P" -I{} curl -s -o /dev/null -w '%{http_code}\n' -H "$IH" -H "$JH" \
		-X PUT "$IA/v1/nodes/b{}/states/power" -d '{"target":"rebooting"}' >"$W/ironic/reboot.codes"
	local put_s; put_s=$(fsub "$(now)" "$t0")
	while :; do
		if [ "$(ironic_states | awk '$3=="null"' | wc -l)" -ge "$N" ]; then
			t_end=$(fsub "$(now)" "$t0")
			break
		fi
		awk -v e="$(fsub "$(now)" "$t0")" -v l="$LIMIT_S" 'BEGIN{exit !(e > l)}' && break
		sleep 0.2
	done
	snap "$W/after"
	codes=$(sort "$W/ironic/reboot.codes" | uniq -c | awk '{printf "%s%sx%s", (NR>1?",":""), $1, $2}')
	local on_ok; on_ok=$(ironic_states | awk '$2=="power_on" && $3=="null" && $6=="ok"' | wc -l)
	local good; good=$(count_cycled "$W/before")
	result ironic "min_command_interval=$iv (P=$IRONIC_P)" "$t_end" \
		"$good/$N (Ironic: $on_ok on, no error)" "$(per_node "$W/before" "$W/after")" \
		"PUTs $codes in ${put_s} s"
	cp "$W/ironic/log/ironic-conductor.log" "$W/ironic-conductor-$iv.log" 2>/dev/null || true
	ironic stop
	stop_sims
}

run_ironic() {
	[ -x /usr/bin/ironic-conductor ] || { echo "ironic: not installed (bench/ironic/ironic-peer.sh install)" >&2; result ironic - "not run" - - "not installed"; return 0; }
	local iv
	for iv in $IRONIC_INTERVALS; do run_ironic_one "$iv"; done
}

# ------------------------------------------------------------------ (c) fleetplane

fp_api() { # METHOD PATH [curl args...]
	local m=$1 p=$2
	shift 2
	curl -s -X "$m" -H "Authorization: Bearer $TOKEN" -H "$JH" "$URL$p" "$@"
}

run_fleetplane_one() {
	local qps=$1
	echo "== fleetplane: --site-qps $qps --sim-speed 1 $FP_SERVE_ARGS"
	[ -x "$FP" ] || { echo "no binary $FP" >&2; return 1; }
	start_sims
	local d=$W/fp
	rm -rf "$d"
	# shellcheck disable=SC2086
	# --sim-speed 1: serve multiplies the site bucket's rate by --sim-speed (default 10) for
	# every driver, not only sim; with 1 the site limit is --site-qps as stated.
	start_serve "$d" --site-qps "$qps" --sim-speed 1 $FP_SERVE_ARGS
	wait_url "$d" 60
	wait_ready 60
	(umask 077 && printf 'Authorization: Bearer %s\n' "$TOKEN" >"$W/fp-auth.header")
	fp_api POST /v1/sites -d '{"kind":"Site","metadata":{"name":"bench"},"spec":{"description":"bmc power-cycle bench"}}' -o /dev/null
	local i
	for i in $(seq 1 "$N"); do
		printf 'FP_URL=%s\nNODE=b%d\nFP_AUTH_HEADER_FILE=%s\n' "$URL" "$i" "$W/fp-auth.header" >"$(sim_dir "$i")/callback.env"
	done
	(
		umask 077
		{
			printf '{"items":['
			for i in $(seq 1 "$N"); do
				[ "$i" = 1 ] || printf ','
				printf '{"metadata":{"name":"b%d"},"spec":{"site":"bench","bmc":{"driver":"ipmi","address":"%s:%d","username":"admin","password":"%s","cipher_suite":3}}}' \
					"$i" "$(sim_ip "$i")" "$(sim_port "$i")" "$BMC_PW"
			done
			printf ']}'
		} >"$W/fp-enroll.json"
	)
	local code
	code=$(fp_api POST /v1/nodes --data-binary @"$W/fp-enroll.json" -o "$W/fp-enroll.out" -w '%{http_code}')
	rm -f "$W/fp-enroll.json"
	[ "$code" = 201 ] || { echo "enroll: HTTP $code: $(head -c 400 "$W/fp-enroll.out")" >&2; stop_serve; stop_sims; result fleetplane "site-qps=$qps" "not run" - - "enroll failed: HTTP $code"; return 0; }
	local t0e; t0e=$(now)
	local a=0
	while :; do
		a=$(phase_count available); a=${a:-0}
		[ "$a" -ge "$N" ] && break
		awk -v e="$(fsub "$(now)" "$t0e")" -v l="$LIMIT_S" 'BEGIN{exit !(e > l)}' && break
		sleep 0.5
	done
	local avail_s; avail_s=$(fsub "$(now)" "$t0e")
	echo "enroll -> available: $a of $N in $avail_s s"
	sleep 2
	snap "$W/before"
	local t0 t0ms
	t0=$(now)
	t0ms=$(awk -v t="$t0" 'BEGIN{printf "%.0f", t*1000}')
	seq 1 "$N" | xargs -P "$FP_P" -I{} curl -s -o "$d/power-{}.out" -w '%{http_code}\n' -X POST \
		-H @"$W/fp-auth.header" -H "$JH" "$URL/v1/nodes/b{}:power" -d '{"action":"cycle"}' >"$d/power.codes"
	local post_s; post_s=$(fsub "$(now)" "$t0")
	# the operation each POST made: .metadata.name of the response (202)
	for i in $(seq 1 "$N"); do jq -r '.metadata.name // empty' "$d/power-$i.out" 2>/dev/null; done >"$d/ops"
	# one list request per poll (power-* ids are the POSTs' operations: fresh data dir)
	local ended=0 t_end="-" nops; nops=$(wc -l <"$d/ops")
	while :; do
		fp_api GET "/v1/operations?limit=1000" >"$d/ops.json"
		ended=$(jq '[.items[] | select(.metadata.name | startswith("power-")) |
			select(.status.state == "succeeded" or .status.state == "failed" or .status.state == "cancelled")] | length' "$d/ops.json" 2>/dev/null || echo 0)
		if [ "$ended" -ge "$nops" ]; then t_end=$(fsub "$(now)" "$t0"); break; fi
		awk -v e="$(fsub "$(now)" "$t0")" -v l="$LIMIT_S" 'BEGIN{exit !(e > l)}' && break
		sleep 0.2
	done
	snap "$W/after"
	# wall time from the first POST to the last operation's finishedAt (server clock, ms)
	local last_ms=0 ok f
	ok=$(jq '[.items[] | select(.metadata.name | startswith("power-")) | select(.status.state == "succeeded")] | length' "$d/ops.json" 2>/dev/null || echo 0)
	for f in $(jq -r '.items[] | select(.metadata.name | startswith("power-")) | .status.finishedAt // empty' "$d/ops.json"); do
		f=$(date -d "$f" +%s%3N)
		[ "$f" -gt "$last_ms" ] && last_ms=$f
	done
	jq -r '.items[] | select(.metadata.name | startswith("power-")) | select(.status.state != "succeeded") |
		"\(.spec.node) \(.status.state) \(.status.lastError // "")"' "$d/ops.json" >"$d/ops.failed"
	local wall="-"
	[ "$last_ms" -gt 0 ] && wall=$(awk -v a="$last_ms" -v b="$t0ms" 'BEGIN{printf "%.3f", (a-b)/1000}')
	local codes; codes=$(sort "$d/power.codes" | uniq -c | awk '{printf "%s%sx%s", (NR>1?",":""), $1, $2}')
	local good; good=$(count_cycled "$W/before")
	result fleetplane "site-qps=$qps${FP_SERVE_ARGS:+ $FP_SERVE_ARGS} (P=$FP_P)" "$wall" \
		"$good/$N (ops succeeded: $ok)" "$(per_node "$W/before" "$W/after")" \
		"POSTs $codes in ${post_s} s; all ended (polled) at ${t_end} s; $a/$N available $avail_s s after enroll"
	stop_serve
	stop_sims
}

run_fleetplane() {
	local q
	for q in $SITE_QPS; do run_fleetplane_one "$q"; done
}

# ------------------------------------------------------------------ main

cleanup_bmc() {
	cleanup_all
	ironic stop 2>/dev/null || true
	stop_sims
}
trap cleanup_bmc EXIT

machine
echo "bmcs: $N ipmi_sim on $SIM_NET.1-$N, ports $((SIM_PORT + 1))-$((SIM_PORT + N)); ipmi_sim $(dpkg-query -W -f '${Version}' openipmi 2>/dev/null), ipmitool $(dpkg-query -W -f '${Version}' ipmitool 2>/dev/null), ironic $(dpkg-query -W -f '${Version}' ironic-common 2>/dev/null || echo none)"
PARTS=${*:-ipmitool ironic fleetplane}
for what in $PARTS; do
	case $what in ipmitool | ironic | fleetplane) ;; *) echo "unknown part $what (ipmitool|ironic|fleetplane)" >&2; exit 2 ;; esac
done
for ROUND in $(seq 1 "$ROUNDS"); do
	for what in $PARTS; do
		echo "-- round $ROUND"
		run_"$what"
	done
done
echo "machine program: ${CTL_KIND:-?}; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| %s | %s | %s | %s | %s | %s |\n' peer setting "wall s" "success" \
	"per node: chassis calls / RMCP datagrams / RMCP+ sessions (mean (min-max))" notes
printf '|---|---|---|---|---|---|\n'
awk -F'|' '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6}' "$RES"
echo
echo "median wall time per peer and setting ($ROUNDS rounds):"
awk -F'|' '{k=$1" | "$2; n[k]++; v[k,n[k]]=$3; if(!(k in o)){o[k]=++K; ks[K]=k}}
	END{for(i=1;i<=K;i++){k=ks[i]; m=n[k]; for(a=1;a<=m;a++)w[a]=v[k,a];
		for(a=1;a<=m;a++)for(b=a+1;b<=m;b++)if(w[b]+0<w[a]+0){t=w[a];w[a]=w[b];w[b]=t}
		printf "  %s: median %s s (min %s, max %s, n=%d)\n", k, (m%2?w[(m+1)/2]:(w[m/2]+w[m/2+1])/2), w[1], w[m], m}}' "$RES"
