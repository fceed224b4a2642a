#!/bin/bash
# bench/boot_files.sh - image serving by the boot service (GET /boot/files/NAME, sendfile) vs
# nginx-light serving the same file (sendfile on), 4 concurrent clients, wrk (keep-alive, -t2),
# interleaved rounds, medians of bytes/s. Issue 11's target: fleetplane >= 0.8x nginx.
# Env: FP (binary), BENCH_WORK, ROUNDS (3), DUR (10s), CONNS (4), SIZE_MB (256).
# Needs: wrk, nginx-light, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-10s}
CONNS=${CONNS:-4}
SIZE_MB=${SIZE_MB:-256}
D=$BENCH_WORK/bootfiles
rm -rf "$D"
mkdir -p "$D"
machine
head -c $((SIZE_MB << 20)) /dev/urandom >"$D/disk.img"
"$FP" image add --data-dir "$D/data" disk "$D/disk.img" >/dev/null
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
BPORT=$(free_port)
start_serve "$D/data" --boot-listen "127.0.0.1:$BPORT"
wait_url "$D/data" 60
FPURL=http://127.0.0.1:$BPORT/boot/files/disk
for i in $(seq 1 100); do curl -sf -o /dev/null -r 0-0 "$FPURL" && break; sleep 0.1; done

NG=$D/nginx
mkdir -p "$NG/logs" "$NG/root"
ln "$D/disk.img" "$NG/root/disk"
NGPORT=$(free_port)
cat >"$NG/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $NG/nginx.pid;
error_log $NG/logs/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	server { listen 127.0.0.1:$NGPORT; root $NG/root; default_type application/octet-stream; }
}
NGX
nginx -c "$NG/nginx.conf" -p "$NG" &
NGINX_PID=$!
trap 'kill $NGINX_PID 2>/dev/null; stop_serve 2>/dev/null || true' EXIT
sleep 0.5
NGURL=http://127.0.0.1:$NGPORT/disk
[ "$(curl -s "$FPURL" | sha256sum)" = "$(curl -s "$NGURL" | sha256sum)" ] || { echo "the two servers serve different bytes"; exit 1; }

to_mbps() { awk '{v=$1; u=v; gsub(/[0-9.]/,"",u); sub(/[A-Za-z]+$/,"",v); f=1; if(u=="KB")f=1/1024; if(u=="MB")f=1; if(u=="GB")f=1024; printf "%.1f", v*f}'; }
run_wrk() { # name url
	local out
	out=$(wrk -t2 -c"$CONNS" -d"$DUR" "$2" 2>&1)
	local mbps rps
	mbps=$(echo "$out" | awk '/Transfer\/sec/{print $2}' | to_mbps)
	rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
	echo "$1 c=$CONNS MBps=$mbps rps=$rps" | tee -a "$D/rounds"
}
: >"$D/rounds"
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then run_wrk fleetplane "$FPURL"; run_wrk nginx "$NGURL"
	else run_wrk nginx "$NGURL"; run_wrk fleetplane "$FPURL"; fi
done
f=$(awk '$1=="fleetplane"{sub("MBps=","",$3); print $3}' "$D/rounds")
n=$(awk '$1=="nginx"{sub("MBps=","",$3); print $3}' "$D/rounds")
fm=$(median $f); nm=$(median $n)
echo "== summary (median of $ROUNDS interleaved rounds, wrk -t2 -c$CONNS -d$DUR, ${SIZE_MB} MiB file) =="
echo "fleetplane MB/s=$fm | nginx MB/s=$nm | ratio fp/nginx=$(awk -v a="$fm" -v b="$nm" 'BEGIN{printf "%.2f", a/b}')"
