/* sched/slurm_tenant.c - the tenant quota loop (sched/slurm_tenant.h): list /tenants/, fold
 * them into account -> quota (smallest wins), diff against what was applied, run sacctmgr for
 * each difference. */
#include "sched/slurm_tenant.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "core/tenant.h"
#include "sched/slurm_acct.h"
#include "store/store.h"

#include "base/banned.h"

struct quota {
	char account[TENANT_ACCOUNT_MAX + 1];
	long gpus; /* -1 none */
};

struct slurm_tenant_sync {
	struct slurm_tenant_sync_config cfg;
	struct quota *applied; /* what sacctmgr last set, successfully */
	size_t napplied;
	pthread_t thread;
	int running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
};

static struct quota *find(struct quota *q, size_t n, const char *account)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(q[i].account, account) == 0)
			return &q[i];
	return NULL;
}

/* -1 (none) is the largest. */
static long smaller(long a, long b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/* The desired quotas from the store; *out calloc'ed (free it). */
static int desired(struct slurm_tenant_sync *t, struct quota **out, size_t *n)
{
	struct store_kv *kvs = NULL;
	size_t nk = 0;
	*out = NULL;
	*n = 0;
	int rc = store_list(t->cfg.store, "/tenants/", NULL, TENANT_MAX, &kvs, &nk, NULL, NULL);
	if (rc < 0)
		return rc;
	struct quota *q = nk ? xcalloc(nk, sizeof(*q)) : NULL;
	size_t k = 0;
	for (size_t i = 0; i < nk; i++) {
		json_t *doc = json_loads(kvs[i].value, 0, NULL);
		struct tenant tn;
		char err[256];
		if (!doc || tenant_from_json(doc, NULL, &tn, err, sizeof(err)) < 0) {
			log_warn("tenant sync: stored tenant does not decode key=%s err=\"%s\"",
				 kvs[i].key, doc ? err : "invalid JSON");
			json_decref(doc);
			continue;
		}
		json_decref(doc);
		struct quota *have = find(q, k, tn.account);
		if (have) {
			have->gpus = smaller(have->gpus, tn.quota);
			continue;
		}
		memcpy(q[k].account, tn.account, sizeof(q[k].account));
		q[k].gpus = tn.quota;
		k++;
	}
	store_kv_array_free(kvs, nk);
	*out = q;
	*n = k;
	return 0;
}

static int apply(struct slurm_tenant_sync *t, const char *account, long gpus)
{
	char err[512];
	int rc = slurm_acct_set_gpu_quota(t->cfg.acct, account, gpus, err, sizeof(err));
	if (rc < 0) {
		log_warn("tenant sync: quota not set account=%s quota=%ld err=\"%s\"", account,
			 gpus, err);
		return rc;
	}
	log_info("tenant sync: quota set account=%s grp_tres=gres/gpu=%ld", account, gpus);
	return 0;
}

int slurm_tenant_sync_pass(struct slurm_tenant_sync *t)
{
	struct quota *want;
	size_t nwant;
	int rc = desired(t, &want, &nwant);
	if (rc < 0) {
		log_warn("tenant sync: cannot list tenants rc=%s", fp_err_name(rc));
		return rc;
	}
	int done = 0;
	/* the new applied set: what is wanted and took, plus what failed to clear */
	struct quota *next = xcalloc(nwant + t->napplied + 1, sizeof(*next));
	size_t nnext = 0;
	for (size_t i = 0; i < nwant; i++) {
		struct quota *had = find(t->applied, t->napplied, want[i].account);
		if (had && had->gpus == want[i].gpus) {
			next[nnext++] = want[i];
			continue;
		}
		if (apply(t, want[i].account, want[i].gpus) == 0) {
			next[nnext++] = want[i];
			done++;
		} else if (had) {
			next[nnext++] = *had; /* Slurm still has the old one */
		}
	}
	for (size_t i = 0; i < t->napplied; i++) {
		if (find(want, nwant, t->applied[i].account))
			continue;
		if (t->applied[i].gpus < 0 || apply(t, t->applied[i].account, -1) == 0) {
			done += t->applied[i].gpus >= 0;
			continue;
		}
		next[nnext++] = t->applied[i];
	}
	free(t->applied);
	free(want);
	t->applied = next;
	t->napplied = nnext;
	return done;
}

static void *loop(void *arg)
{
	struct slurm_tenant_sync *t = arg;
	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		pthread_mutex_unlock(&t->mu);
		slurm_tenant_sync_pass(t);
		pthread_mutex_lock(&t->mu);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += t->cfg.interval_ms / 1000;
		until.tv_nsec += (t->cfg.interval_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

struct slurm_tenant_sync *slurm_tenant_sync_start(const struct slurm_tenant_sync_config *cfg,
						  char *err, size_t errlen)
{
	if (!cfg || !cfg->store || !cfg->acct) {
		fp_errf(FP_EINVAL, err, errlen, "tenant sync: store and acct are required");
		return NULL;
	}
	if (cfg->interval_ms < 100 || cfg->interval_ms > 3600000) {
		fp_errf(FP_EINVAL, err, errlen, "tenant sync: interval_ms %ld not in 100..3600000",
			cfg->interval_ms);
		return NULL;
	}
	struct slurm_tenant_sync *t = xcalloc(1, sizeof(*t));
	t->cfg = *cfg;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	if (!cfg->threaded)
		return t;
	if (pthread_create(&t->thread, NULL, loop, t) != 0) {
		fp_errf(FP_EIO, err, errlen, "tenant sync: cannot start its thread");
		pthread_mutex_destroy(&t->mu);
		pthread_cond_destroy(&t->cv);
		free(t);
		return NULL;
	}
	t->running = 1;
	return t;
}

void slurm_tenant_sync_free(struct slurm_tenant_sync *t)
{
	if (!t)
		return;
	if (t->running) {
		pthread_mutex_lock(&t->mu);
		t->stop = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thread, NULL);
	}
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t->applied);
	free(t);
}
