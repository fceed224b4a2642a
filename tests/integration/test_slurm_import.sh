#!/usr/bin/env bash
# fleetplane slurm import on real configs (tests/data/slurm/conf, SOURCES.md): a dry run writes
# nothing and prints every unmapped line as file:line; the import enrolls the nodes with
# spec.adopt and they reach available without provisioning; a second import finds them
# enrolled; `slurm config` renders them back into lines that parse with nothing unmapped; a
# broken config names its file and line. serve runs without --slurm (docs/slurm.md: import
# first, then --slurm imports the drains).
. "$(dirname "$0")/lib.sh"
D="$WORK/d"
E="$WORK/etc"
mkdir -p "$E"
C="$ROOT/tests/data/slurm/conf"
cp "$C/tux-slurm.conf" "$C/tux-tux-nodes.conf" "$E/"
cp "$C/gres-man-tux.conf" "$E/gres.conf" # found next to slurm.conf without --gres-conf
start_serve "$D" --sim-speed 200

# Dry run: the plan and the diagnostics, nothing enrolled.
"$FP" slurm import --slurm-conf "$E/tux-slurm.conf" --dry-run >"$WORK/dry.out" 2>"$WORK/dry.err" ||
	fail "dry run exited $? ($(cat "$WORK/dry.err"))"
assert_eq 16 "$(grep -c ' dry-run' "$WORK/dry.out")" "dry-run rows"
assert_eq 2 "$(grep -c ' skipped ' "$WORK/dry.out")" "skipped rows (State=FUTURE)"
grep -qxF "18 nodes in $E/tux-slurm.conf: 0 created, 0 already enrolled, 0 failed, 2 skipped; 7 lines not mapped (dry run: nothing enrolled)" "$WORK/dry.out" ||
	fail "dry-run summary: $(tail -1 "$WORK/dry.out")"
for want in \
	"$E/tux-tux-nodes.conf:10: CPUs=lots is not a number from 0 to 65535: NodeName=bad[1-2] CPUs=lots" \
	"$E/tux-tux-nodes.conf:11: GRES \"gpu:a100:four\": count \"four\" is not a number: NodeName=tux16 Gres=gpu:a100:four" \
	"$E/tux-tux-nodes.conf:12: unknown NodeName key Colour: NodeName=tux17 Colour=blue" \
	"$E/tux-tux-nodes.conf:14: DownNodes is not mapped: fleetplane reads drained and down nodes from the running slurmctld: DownNodes=tux3 State=DOWN Reason=\"nvidia1\"" \
	"$E/tux-slurm.conf:12: 1 name(s) in Nodes= that no NodeName line defines, first nosuch01: PartitionName=big Nodes=tux[12-15],nosuch01" \
	"$E/tux-tux-nodes.conf:9: node login1 State=FUTURE is not a running node: not imported"; do
	grep -qxF "$want" "$WORK/dry.err" || fail "dry run did not print: $want (got: $(cat "$WORK/dry.err"))"
done
grep -q "^$E/tux-slurm.conf:13: Include $E/missing-nodes.conf: open $E/missing-nodes.conf: " "$WORK/dry.err" ||
	fail "missing Include not reported: $(cat "$WORK/dry.err")"
assert_eq 0 "$("$FP" node list -o json | jq '.items | length')" "nodes after the dry run"

# The import.
"$FP" slurm import --slurm-conf "$E/tux-slurm.conf" >"$WORK/imp.out" 2>"$WORK/imp.err" ||
	fail "import exited $? ($(cat "$WORK/imp.err"))"
assert_eq 16 "$(grep -cE ' created +-$' "$WORK/imp.out")" "created rows"
tail -1 "$WORK/imp.out" | grep -qF "16 created, 0 already enrolled, 0 failed, 2 skipped; 7 lines not mapped" ||
	fail "import summary: $(tail -1 "$WORK/imp.out")"
assert_eq 16 "$("$FP" node list -o json | jq '.items | length')" "nodes enrolled"
"$FP" node get tux0 -o json >"$WORK/tux0.json"
assert_eq true "$(jq '.spec.adopt' "$WORK/tux0.json")" "tux0 spec.adopt"
assert_eq '4 "a100" "gpu"' "$(jq -r '"\(.spec.gpus.count) \"\(.spec.gpus.model)\" \"\(.spec.pool)\""' "$WORK/tux0.json")" "tux0 gpus and pool"
assert_eq '64 2 16 2 515000' "$(jq -r '.metadata.labels | "\(."slurm/cpus") \(."slurm/sockets") \(."slurm/cores-per-socket") \(."slurm/threads-per-core") \(."slurm/real-memory-mb")"' "$WORK/tux0.json")" "tux0 labels"
# gpu:4,shard:16: four GPUs of no type, so no model
assert_eq '4 null' "$("$FP" node get tux12 -o json | jq -c -r '"\(.spec.gpus.count) \(.spec.gpus.model)"')" "tux12 gpus"
assert_eq 3 "$("$FP" node get tux3 -o json | jq '.spec.gpus.count')" "tux3 gpus"
wait_phase available 16 60
# adopted: inspect only - no provision, no validate
assert_eq '["inspect"]' "$("$FP" op list -o json | jq -c '[.items[].spec.kind] | unique')" "operation kinds"
assert_eq 16 "$("$FP" op list -o json | jq '.items | length')" "operations"

# Again: every node is already enrolled, which is not an error.
"$FP" slurm import --slurm-conf "$E/tux-slurm.conf" >"$WORK/again.out" 2>/dev/null ||
	fail "second import exited $?"
tail -1 "$WORK/again.out" | grep -qF "0 created, 16 already enrolled, 0 failed" ||
	fail "second import summary: $(tail -1 "$WORK/again.out")"

# Generated configuration: what inspect found (the sim's 8 H100) and the labels of the import.
"$FP" slurm config >"$WORK/config.out" || fail "slurm config exited $?"
for want in \
	"NodeName=tux[0-11] CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=515000 Gres=gpu:nvidia_h100_80gb_hbm3:8" \
	"NodeName=tux[12-15] CPUs=128 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=515000 Gres=gpu:nvidia_h100_80gb_hbm3:8"; do
	grep -qxF "$want" "$WORK/config.out" || fail "generated NodeName lines: $(cat "$WORK/config.out")"
done
assert_eq 2 "$(grep -c '^NodeName=tux\[' "$WORK/config.out")" "generated NodeName lines"
grep -qxF "PartitionName=gpu Nodes=tux[0-15]" "$WORK/config.out" || fail "generated partition: $(cat "$WORK/config.out")"
grep -qxF "NodeName=tux7 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia[0-7]" "$WORK/config.out" ||
	fail "generated gres.conf: $(cat "$WORK/config.out")"
mkdir -p "$WORK/gen"
"$FP" slurm config --out "$WORK/gen" >/dev/null || fail "slurm config --out exited $?"
[ -s "$WORK/gen/nodes.conf" ] && [ -s "$WORK/gen/gres.conf" ] || fail "no files in $WORK/gen"
"$FP" slurm import --slurm-conf "$WORK/gen/nodes.conf" --dry-run >"$WORK/gen.out" 2>"$WORK/gen.err" ||
	fail "generated config does not import: $(cat "$WORK/gen.err")"
tail -1 "$WORK/gen.out" | grep -qF "16 nodes in $WORK/gen/nodes.conf: 0 created, 0 already enrolled, 0 failed, 0 skipped; 0 lines not mapped" ||
	fail "generated config: $(tail -1 "$WORK/gen.out") $(cat "$WORK/gen.err")"

# A public cluster's config as it is (giovtorres/docker-centos7-slurm, MIT): two GPU types on
# one node (no single model), Gres= twice on one line, a gres.conf for every node.
"$FP" slurm import --slurm-conf "$C/giovtorres-slurm.conf" --gres-conf "$C/giovtorres-gres.conf" \
	>"$WORK/gt.out" 2>"$WORK/gt.err" || fail "giovtorres import exited $? ($(cat "$WORK/gt.err"))"
tail -1 "$WORK/gt.out" | grep -qF "4 nodes in $C/giovtorres-slurm.conf: 4 created, 0 already enrolled, 0 failed, 0 skipped; 5 lines not mapped" ||
	fail "giovtorres summary: $(tail -1 "$WORK/gt.out")"
assert_eq 5 "$(wc -l <"$WORK/gt.err")" "giovtorres diagnostics"
grep -qxF "$C/giovtorres-slurm.conf:59: Gres given twice on one line: Slurm uses the last: NodeName=c3 NodeAddr=127.0.0.1 RealMemory=549756 Sockets=2 CoresPerSocket=56 Gres=gpu:titanxp:3,gpu:a100:3 Gres=gpu:titanxp:3" "$WORK/gt.err" ||
	fail "giovtorres line 59: $(cat "$WORK/gt.err")"
assert_eq '6 null "normal"' "$("$FP" node get c2 -o json | jq -r '"\(.spec.gpus.count) \(.spec.gpus.model) \"\(.spec.pool)\""')" "c2 gpus"
assert_eq '3 titanxp 112' "$("$FP" node get c3 -o json | jq -r '"\(.spec.gpus.count) \(.spec.gpus.model) \(.metadata.labels."slurm/cpus")"')" "c3 gpus and cpus"
assert_eq null "$("$FP" node get c1 -o json | jq -c '.spec.gpus')" "c1 gpus"
wait_phase available 20 60

# A broken config names the file and the line; a missing one is a usage error.
printf 'ClusterName=b\nNodeName=ok1 CPUs=4\nNodeName=x1 CPUs=abc\nNodeName=y[1- CPUs=2\n' >"$WORK/broken.conf"
"$FP" slurm import --slurm-conf "$WORK/broken.conf" --dry-run >"$WORK/broken.out" 2>"$WORK/broken.err" ||
	fail "broken dry run exited $?"
grep -qxF "$WORK/broken.conf:3: CPUs=abc is not a number from 0 to 65535: NodeName=x1 CPUs=abc" "$WORK/broken.err" ||
	fail "broken line 3 not named: $(cat "$WORK/broken.err")"
grep -q "^$WORK/broken.conf:4: NodeName=y\[1- does not expand: " "$WORK/broken.err" ||
	fail "broken line 4 not named: $(cat "$WORK/broken.err")"
tail -1 "$WORK/broken.out" | grep -qF "1 node in $WORK/broken.conf: " || fail "broken summary: $(tail -1 "$WORK/broken.out")"
set +e
"$FP" slurm import --slurm-conf "$WORK/nothing.conf" --dry-run >/dev/null 2>"$WORK/none.err"
rc=$?
set -e
assert_eq 2 "$rc" "exit status for a missing slurm.conf"
grep -q "nothing.conf" "$WORK/none.err" || fail "missing file not named: $(cat "$WORK/none.err")"
set +e
"$FP" slurm import --bmc-driver ipmi --slurm-conf "$E/tux-slurm.conf" --dry-run >/dev/null 2>"$WORK/usage.err"
rc=$?
set -e
assert_eq 2 "$rc" "exit status for ipmi without --bmc-address"
echo "ok $TEST_NAME"
