/* sched/slurm_tenant.h - tenants' GPU quotas into Slurm (issue 10 part 7): a loop that reads
 * every Tenant document (/tenants/, core/tenant.h) and sets each one's Slurm account's
 * GrpTRES=gres/gpu=<gpuQuota> with sacctmgr (sched/slurm_acct.h slurm_acct_set_gpu_quota) when
 * it differs from what the loop last applied, and clears it (-1) on an account no tenant names
 * any more. With AccountingStorageEnforce=limits Slurm then keeps a job that would take the
 * account over its quota PENDING with reason AssocGrpGRES. `fleetplane serve --slurm` runs it.
 *
 * What was applied is remembered in memory only: after a restart the first pass sets every
 * tenant's quota again (idempotent), and the quota of a tenant deleted while serve was down
 * stays in Slurm until cleared by hand (`sacctmgr -i modify account <a> set
 * GrpTRES=gres/gpu=-1`). Two tenants naming one account: the smaller quota wins (a quota of
 * none counts as the largest), and both documents stay as written. */
#ifndef FP_SCHED_SLURM_TENANT_H
#define FP_SCHED_SLURM_TENANT_H

#include <stddef.h>

struct store;
struct slurm_acct;
struct slurm_tenant_sync;

struct slurm_tenant_sync_config {
	struct store *store;     /* borrowed; outlives the sync */
	struct slurm_acct *acct; /* borrowed; runs sacctmgr */
	long interval_ms;        /* between passes, 100 .. 3,600,000 */
	int threaded;            /* 1: passes on a thread of its own; 0: the caller's, by hand */
};

/* Makes the loop and, when threaded, starts its thread (first pass at once). NULL with err on
 * a bad config (FP_EINVAL's message) or a thread that cannot start. Free with
 * slurm_tenant_sync_free, which stops it. */
struct slurm_tenant_sync *slurm_tenant_sync_start(const struct slurm_tenant_sync_config *cfg,
						  char *err, size_t errlen);
/* Stops the thread (waits for a pass in progress) and frees; NULL is a no-op. */
void slurm_tenant_sync_free(struct slurm_tenant_sync *t);

/* One pass on the caller's thread (a sync made with threaded 0): returns the number of
 * sacctmgr commands that succeeded, or a negative fp_err when the store could not be read.
 * Failures of single commands are logged and retried by the next pass. */
int slurm_tenant_sync_pass(struct slurm_tenant_sync *t);

#endif
