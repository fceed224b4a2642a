#!/bin/bash
# bench/rss_burst.sh BIN - serve's RSS (VmRSS, VmHWM) after a 5,000-node bulk enroll (5 POSTs of 1,000
# sim nodes, --sim-speed 0, until all are available) and after each of three full paged lists
# (limit=1000) of the 5,000 nodes (issue 17 item 6). Needs curl and jq.
set -u
FP=$1; D=$(mktemp -d /tmp/fp-rss.XXXX)
"$FP" serve --data-dir $D --listen 127.0.0.1:0 --plain-http --sim-speed 0 --log-level warn >$D/log 2>&1 &
P=$!
for i in $(seq 1 100); do [ -s $D/serve.url ] && break; sleep 0.1; done
U=$(cat $D/serve.url); T=$(cat $D/admin.token)
for i in $(seq 1 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' $U/readyz)" = 200 ] && break; sleep 0.1; done
curl -s -X POST -H "Authorization: Bearer $T" -H 'Content-Type: application/json' $U/v1/sites -d '{"metadata":{"name":"it-a"}}' >/dev/null
for r in $(seq 1 625); do echo "{\"metadata\":{\"name\":\"r$r\"},\"spec\":{\"site\":\"it-a\"}}"; done | while read -r b; do curl -s -X POST -H "Authorization: Bearer $T" -H 'Content-Type: application/json' $U/v1/racks -d "$b" >/dev/null; done
for k in 0 1 2 3 4; do jq -n --argjson k $k '{items: [range($k*1000; $k*1000+1000) as $i | {metadata: {name: ("r\(($i/8|floor)+1)n\(($i%8)+1)")}, spec: {site: "it-a", rack: ("r\(($i/8|floor)+1)"), bmc: {driver: "sim"}, gpus: {count: 8}}}]}' > $D/nodes$k.json; done
rss() { awk '/VmRSS|VmHWM/{printf "%s %d MB  ", $1, $2/1024}' /proc/$P/status; }
for k in 0 1 2 3 4; do curl -s -o /dev/null -w 'bulk POST %{http_code} %{time_total}s\n' -X POST -H "Authorization: Bearer $T" -H 'Content-Type: application/json' --data-binary @$D/nodes$k.json $U/v1/nodes; done
echo "after POST: $(rss)"
for i in $(seq 1 180); do a=$(curl -s -H "Authorization: Bearer $T" $U/metrics | awk '$1=="fleetplane_nodes{phase=\"available\"}"{print $2}'); [ "${a:-0}" = 5000 ] && break; sleep 1; done
echo "available=$a after ${i}s: $(rss)"
for l in 1 2 3; do c=""; n=0; while :; do out=$(curl -s -H "Authorization: Bearer $T" "$U/v1/nodes?limit=1000${c:+&continue=$c}"); n=$((n + $(jq '.items|length' <<<"$out"))); c=$(jq -r '.metadata.continue // empty' <<<"$out"); [ -z "$c" ] && break; done; echo "list $l: $n nodes: $(rss)"; done
sleep 3; echo "3 s later: $(rss)"
kill $P; wait $P 2>/dev/null; rm -rf $D
