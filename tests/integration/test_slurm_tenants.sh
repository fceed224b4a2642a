#!/usr/bin/env bash
# Tenants against a real Slurm 22.05 with slurmdbd (tests/peers/slurm/slurm.sh accounting
# mode, AccountingStorageEnforce=associations,limits,qos): PUT /v1/tenants/team-ops {slurmAccount
# ops, gpuQuota 4} makes serve --slurm set the account's GrpTRES=gres/gpu=4; a gpu:3 job runs and
# a gpu:5 job of the account stays PENDING with reason AssocGrpGRES while GET reports quota 4
# against 3 GPUs in use; raising the quota to 8 lets the gpu:5 job run; deleting the tenant clears
# GrpTRES. Bad documents are 422 naming the field; without --slurm GET has no status.
. "$(dirname "$0")/lib.sh"
san_skip "the tenant and sacctmgr code run under them in the slurm_tenant unit suite; the rest is waiting on slurmdbd"
. "$ROOT/tests/peers/slurm/slurm.sh"
S="$WORK/slurm"
chmod 711 "$WORK" # munged wants o+x on every directory above its socket
at_exit() { slurm_peer_stop "$S" || true; }

wait_for() { # SECONDS WHAT CMD...: polls CMD every 0.2 s
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		"$@" && return 0
		sleep 0.2
	done
	squeue -o "%i %a %T %r %b" >&2 || true
	sacctmgr -n -P show assoc account=ops format=account,user,grptres >&2 || true
	fail "$what not within $secs s"
}
grptres() { sacctmgr -n -P show assoc where account=ops user= format=grptres | head -1; }
is() { local want=${*: -1}; [ "$("${@:1:$#-1}")" = "$want" ]; }
job_state() { squeue -h -j "$1" -o "%T %r"; }

SLURM_PEER_ACCT=1 slurm_peer_start "$S" >/dev/null
export SLURM_CONF="$S/slurm.conf"
start_serve "$WORK/d" --slurm --slurm-interval 1 --sim-speed 0

# strict documents
resp=$(api PUT /v1/tenants/team-ops '{"spec":{"slurmAccount":"Ops","gpuQuota":4}}')
assert_eq 422 "$(echo "$resp" | head -1)" "upper-case account"
assert_eq spec.slurmAccount "$(echo "$resp" | tail -n +2 | jq -r .field)" "field of a bad account"
resp=$(api PUT /v1/tenants/team-ops '{"spec":{"slurmAccount":"ops","gpuQuota":-2}}')
assert_eq spec.gpuQuota "$(echo "$resp" | tail -n +2 | jq -r .field)" "field of a bad quota"
resp=$(api PUT /v1/tenants/team-ops '{"spec":{"slurmAccount":"ops","color":1}}')
assert_eq 422 "$(echo "$resp" | head -1)" "unknown spec field"

resp=$(api PUT /v1/tenants/team-ops '{"spec":{"slurmAccount":"ops","gpuQuota":4}}')
assert_eq 201 "$(echo "$resp" | head -1)" "create tenant"
wait_for 15 "GrpTRES=gres/gpu=4 on ops" is grptres gres/gpu=4

a=$(sbatch --parsable -o "$WORK/slurm-%j.out" -A ops --gres=gpu:3 -w n1 --wrap 'sleep 60')
b=$(sbatch --parsable -o "$WORK/slurm-%j.out" -A ops --gres=gpu:5 -w n2 --wrap 'sleep 1')
wait_for 20 "job $a RUNNING" is job_state "$a" "RUNNING None"
wait_for 20 "job $b PENDING AssocGrpGRES" is job_state "$b" "PENDING AssocGrpGRES"

got=$(api GET /v1/tenants/team-ops)
assert_eq 200 "$(echo "$got" | head -1)" "get tenant"
st=$(echo "$got" | tail -n +2 | jq -c '.status | {gpuQuota, gpusInUse, runningJobs, overQuota}')
assert_eq '{"gpuQuota":4,"gpusInUse":3,"runningJobs":1,"overQuota":false}' "$st" "tenant status"
echo "$got" | tail -n +2 | jq -e '.status.gpuHoursThisMonth >= 0 and (.status.monthStart | endswith("-01T00:00:00Z"))' >/dev/null ||
	fail "gpuHoursThisMonth/monthStart: $got"
assert_eq 1 "$(api GET /v1/tenants | tail -n +2 | jq '.items | length')" "tenant list"

# a larger quota lets the pending job run
resp=$(api PUT /v1/tenants/team-ops '{"spec":{"slurmAccount":"ops","gpuQuota":8}}')
assert_eq 200 "$(echo "$resp" | head -1)" "replace tenant"
wait_for 15 "GrpTRES=gres/gpu=8 on ops" is grptres gres/gpu=8
wait_for 30 "job $b ran" is job_state "$b" ""
# slurmdbd records the end a moment after squeue drops the job (CI saw RUNNING here once)
wait_for 15 "sacct: job $b COMPLETED" is sacct -X -n -P -j "$b" -o State COMPLETED
assert_eq COMPLETED "$(sacct -X -n -P -j "$b" -o State)" "job $b after the raise"

# delete clears the limit
assert_eq 200 "$(api DELETE /v1/tenants/team-ops | head -1)" "delete tenant"
wait_for 15 "GrpTRES cleared on ops" is grptres ""
assert_eq 404 "$(api GET /v1/tenants/team-ops | head -1)" "deleted tenant"
scancel "$a"
stop_serve
echo "ok"
