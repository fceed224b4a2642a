#!/usr/bin/env bash
# GET /v1/usage and `fleetplane usage` against a real Slurm 22.05 with slurmdbd on MariaDB
# (tests/peers/slurm/slurm.sh accounting mode): three short jobs with --gres=gpu:N in the
# accounts research and ops run to COMPLETED; then usage by account, user and partition equals
# Σ GPUs × elapsed of those jobs exactly, elapsed and GPUs taken from sacct's own ElapsedRaw and
# AllocTRES (not from the sleeps). A serve without --slurm answers 503 naming --slurm; a bad or
# missing from, to or by is a 400 naming the parameter.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/peers/slurm/slurm.sh"
S="$WORK/slurm"
chmod 711 "$WORK" # munged wants o+x on every directory above its socket
at_exit() { slurm_peer_stop "$S" || true; }

for tool in slurmdbd mariadbd mariadb-install-db; do
	command -v "$tool" >/dev/null || fail "$tool not installed (scripts/install-deps.sh --test)"
done

# Without --slurm: 503 naming --slurm (and the parameters are checked first).
start_serve "$WORK/d0" --sim-speed 0
resp=$(api GET "/v1/usage?from=0&to=3600&by=account")
assert_eq 503 "$(echo "$resp" | head -1)" "usage without --slurm"
echo "$resp" | tail -n +2 | jq -r .detail | grep -q -- '--slurm' || fail "503 names --slurm: $resp"
stop_serve

SLURM_PEER_ACCT=1 slurm_peer_start "$S" >/dev/null
export SLURM_CONF="$S/slurm.conf"
start_serve "$WORK/d" --slurm --slurm-interval 2 --sim-speed 0

# 400s naming the parameter
for q in "to=10&by=account:from" "from=x&to=10&by=account:from" "from=0&by=account:to" \
	"from=0&to=10:by" "from=0&to=10&by=qos:by" "from=10&to=5&by=user:to" \
	"from=0&to=40000000&by=user:from"; do
	resp=$(api GET "/v1/usage?${q%:*}")
	assert_eq 400 "$(echo "$resp" | head -1)" "usage?${q%:*}"
	assert_eq "${q##*:}" "$(echo "$resp" | tail -n +2 | jq -r .parameter)" "parameter of ${q%:*}"
done

t0=$(($(date +%s) - 2))
ids=()
ids+=("$(sbatch --parsable -o "$WORK/slurm-%j.out" -A research --gres=gpu:2 -w n1 -J u-r2 --wrap 'sleep 2')")
ids+=("$(sbatch --parsable -o "$WORK/slurm-%j.out" -A ops --gres=gpu:3 -w n2 -J u-o3 --wrap 'sleep 3')")
ids+=("$(sbatch --parsable -o "$WORK/slurm-%j.out" -A research --gres=gpu:1 -w n2 -J u-r1 --wrap 'sleep 1')")
joblist=$(IFS=,; echo "${ids[*]}")

all_completed() {
	[ "$(sacct -X -n -P -j "$joblist" -o State | sort -u)" = COMPLETED ]
}
for _ in $(seq 1 150); do
	all_completed && break
	sleep 0.2
done
all_completed || {
	sacct -X -j "$joblist" -o JobID,Account,State,Reason%30 >&2
	squeue >&2
	fail "jobs ${joblist} not COMPLETED within 30 s"
}
t1=$(($(date +%s) + 2))

# Expected figures from sacct itself: per job GPUs (AllocTRES gres/gpu=N) x ElapsedRaw.
sacct -X -n -P -j "$joblist" -o JobID,Account,User,Partition,ElapsedRaw,AllocTRES >"$WORK/jobs.txt"
cat "$WORK/jobs.txt"
expected() { # FIELD (2 account, 3 user, 4 partition): "key seconds jobs" lines, sorted
	awk -F'|' -v f="$1" '{ g = 0; n = split($6, t, ",");
		for (i = 1; i <= n; i++) if (t[i] ~ /^gres\/gpu=/) { sub(/^gres\/gpu=/, "", t[i]); g = t[i] }
		s[$f] += g * $5; c[$f]++ }
		END { for (k in s) print k, s[k], c[k] }' "$WORK/jobs.txt" | sort
}
[ "$(expected 2 | wc -l)" = 2 ] || fail "expected two accounts: $(expected 2)"
[ "$(awk -F'|' '$5 > 0' "$WORK/jobs.txt" | wc -l)" = 3 ] || fail "every job ran > 0 s"

for by in account user partition; do
	field=$(case $by in account) echo 2 ;; user) echo 3 ;; partition) echo 4 ;; esac)
	got=$("$FP" usage --from "$t0" --to "$t1" --by "$by" -o json) || fail "usage --by $by"
	assert_eq "$by" "$(echo "$got" | jq -r .by)" "by of --by $by"
	assert_eq "$(expected "$field")" \
		"$(echo "$got" | jq -r --arg b "$by" '.items[] | "\(.[$b]) \(.gpuSeconds) \(.jobs)"' | sort)" \
		"usage --by $by equals sum of GPUs x elapsed"
	total=$(expected "$field" | awk '{ s += $2 } END { print s }')
	assert_eq "$total" "$(echo "$got" | jq -r .total.gpuSeconds)" "total of --by $by"
	assert_eq 3 "$(echo "$got" | jq -r .total.jobs)" "jobs of --by $by"
done
# the table: one row per account and a TOTAL row, GPU-hours with three decimals
table=$("$FP" usage --from "$t0" --to "$t1")
echo "$table"
grep -q '^ACCOUNT' <<<"$table" || fail "table header: $table"
ops=$(expected 2 | awk '$1 == "ops" { printf "%.3f", $2 / 3600 }')
echo "$table" | grep -Eq "^ops +$ops " || fail "ops row with $ops GPU-hours: $table"

# RFC 3339 bounds give the same answer as unix seconds
f3339=$(date -u -d "@$t0" +%Y-%m-%dT%H:%M:%SZ)
t3339=$(date -u -d "@$t1" +%Y-%m-%dT%H:%M:%SZ)
assert_eq "$("$FP" usage --from "$t0" --to "$t1" -o json | jq -c .items)" \
	"$("$FP" usage --from "$f3339" --to "$t3339" -o json | jq -c .items)" "RFC 3339 window"

stop_serve
echo "ok"
