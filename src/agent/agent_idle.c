/* agent_idle.c - the "GPUs idle under a job" detector of the node agent (issue 10 part 6;
 * docs/agent.md "GPUs idle under a job"): a Slurm job that holds the node while every GPU's
 * utilisation sample stays at or below a threshold for --gpu-idle-minutes is one finding
 * slurm:gpu_idle (source agent) attributed to the job, once per episode. The job comes from
 * the node document's status.workload, which the server's Slurm backend writes
 * (docs/slurm.md "Jobs, drains and power"; core/model.h struct node_workload); the samples
 * from the nvidia-smi detector's report (nvsmi_gpu.gpu_util, nvidia-smi(1) "Utilization").
 * Fails closed both ways: an unreadable node document or an unknown utilisation neither
 * starts, ends nor fires anything. Time is agent_now (the injected clock in tests). The
 * episode's finding goes through agent.c's finding episodes like any other (agent_int.h). */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/agent_int.h"
#include "base/jsonx.h"
#include "base/log.h"

#include "base/banned.h"

#define IDLE_MAX_JOBS 64 /* the server keeps at most 16 (docs/slurm.md); more is malformed */

void agent_idle_sample(struct agent *a, const struct nvsmi_report *r)
{
	/* Every GPU of a whole report (its header agrees with its sections, none cut off) with
	 * a known value: only then does "all idle" say something about every GPU. */
	if (r->truncated || r->ngpus == 0 || r->attached_gpus < 0 ||
	    (size_t)r->attached_gpus != r->ngpus)
		return;
	for (size_t i = 0; i < r->ngpus; i++)
		if (r->gpus[i].partial || r->gpus[i].gpu_util < 0)
			return;
	a->util_n = r->ngpus;
	for (size_t i = 0; i < r->ngpus; i++) {
		a->util[i] = r->gpus[i].gpu_util;
		a->util_index[i] = r->gpus[i].index;
	}
	a->util_known = 1;
}

/* What status.workload of doc says: 1 a job holds the node (state busy or draining with at
 * least one job id; sig = hex BLAKE2b-128 of the job list and jobsTotal, job = the first id),
 * 0 no job does (no workload - a server without --slurm -, idle, drained, absent, or busy
 * without an id), -1 unknown (no document, or a workload fleetplane does not understand:
 * an unknown state, jobs not an array of valid ids, more than IDLE_MAX_JOBS). */
static int idle_workload(const json_t *doc, char sig[AG_IDLE_SIG_LEN], char *job, size_t joblen,
			 const char **state)
{
	static const char *const states[] = {"idle", "busy", "draining", "drained", "absent"};
	const json_t *wl, *jobs, *v;
	const char *st;
	char why[128];
	size_t i;
	int known = 0;

	*state = "";
	if (!doc)
		return -1;
	wl = json_object_get(json_object_get(doc, "status"), "workload");
	if (!wl || json_is_null(wl))
		return 0;
	if (!json_is_object(wl) || !(st = jsonx_str(wl, "state")))
		return -1;
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (strcmp(st, states[i]) == 0) {
			*state = states[i];
			known = 1;
		}
	if (!known)
		return -1;
	if (strcmp(st, "busy") != 0 && strcmp(st, "draining") != 0)
		return 0;
	jobs = json_object_get(wl, "jobs");
	if (!jobs || json_is_null(jobs))
		return 0;
	if (!json_is_array(jobs) || json_array_size(jobs) > IDLE_MAX_JOBS)
		return -1;
	if (json_array_size(jobs) == 0)
		return 0;
	crypto_generichash_state h;
	unsigned char d[16];
	crypto_generichash_init(&h, NULL, 0, sizeof(d));
	json_array_foreach(jobs, i, v) {
		const char *id = json_string_value(v);
		if (!id || agent_job_validate(id, why, sizeof(why)) < 0)
			return -1;
		crypto_generichash_update(&h, (const unsigned char *)id, strlen(id) + 1);
	}
	json_int_t total = json_integer_value(json_object_get(wl, "jobsTotal"));
	char t[32];
	snprintf(t, sizeof(t), "%lld", (long long)total);
	crypto_generichash_update(&h, (const unsigned char *)t, strlen(t));
	crypto_generichash_final(&h, d, sizeof(d));
	sodium_bin2hex(sig, AG_IDLE_SIG_LEN, d, sizeof(d));
	snprintf(job, joblen, "%s", json_string_value(json_array_get(jobs, 0)));
	return 1;
}

/* "GPU 3" or "GPUs 0-7" / "GPUs 0-3, 5" from the sample's indices (in output order). */
static void idle_gpus(const struct agent *a, char *out, size_t outlen)
{
	size_t used = (size_t)snprintf(out, outlen, "%s", a->util_n == 1 ? "GPU " : "GPUs ");
	for (size_t i = 0; i < a->util_n && used < outlen; i++) {
		size_t j = i;
		while (j + 1 < a->util_n && a->util_index[j + 1] == a->util_index[j] + 1)
			j++;
		if (j > i)
			used += (size_t)snprintf(out + used, outlen - used, "%s%d-%d",
						 i ? ", " : "", a->util_index[i], a->util_index[j]);
		else
			used += (size_t)snprintf(out + used, outlen - used, "%s%d", i ? ", " : "",
						 a->util_index[i]);
		i = j;
	}
}

static int idle_reset(struct ag_idle *s)
{
	int changed = s->sig[0] || s->since || s->fired;
	memset(s, 0, sizeof(*s));
	return changed;
}

int agent_idle_round(struct agent *a, const json_t *doc, struct agent_finding *f, int *shown)
{
	struct ag_idle *s = &a->idle;
	char sig[AG_IDLE_SIG_LEN] = "", job[sizeof(s->job)] = "";
	const char *state;
	int changed = 0;

	*shown = 0;
	if (a->cfg.gpu_idle_minutes <= 0)
		return idle_reset(s);
	int wl = idle_workload(doc, sig, job, sizeof(job), &state);
	if (wl == 0) {
		changed = idle_reset(s); /* the workload is no longer busy/draining */
	} else if (wl == 1 && strcmp(sig, s->sig) != 0) {
		changed = idle_reset(s) | 1; /* another job list: another episode */
		snprintf(s->sig, sizeof(s->sig), "%s", sig);
		snprintf(s->job, sizeof(s->job), "%s", job);
	}
	if (wl == 1 && a->util_known) {
		int idle = 1;
		for (size_t i = 0; i < a->util_n; i++)
			idle &= a->util[i] <= a->cfg.gpu_idle_util_pct;
		int64_t now = agent_now(a);
		if (!idle) {
			changed |= s->since != 0 ||
				   s->fired; /* utilisation rose: the episode ends */
			s->since = 0;
			s->fired = 0;
		} else if (!s->since || (!s->fired && now < s->since)) {
			s->since = now; /* a run starts (or the clock went back: it starts again) */
			changed = 1;
		} else if (!s->fired && now - s->since >= a->cfg.gpu_idle_minutes * 60000) {
			char gpus[160];
			idle_gpus(a, gpus, sizeof(gpus));
			s->fired = 1;
			char m[512];
			snprintf(
				m, sizeof(m),
				"job %s: %s at or below %d %% utilisation for %lld min while Slurm "
				"says %s",
				s->job, gpus, a->cfg.gpu_idle_util_pct,
				(long long)((now - s->since) / 60000), state);
			/* bounded: a long job id and GPU list are cut */
			size_t ml = strnlen(m, sizeof(s->message) - 1);
			memcpy(s->message, m, ml);
			s->message[ml] = '\0';
			log_warn("agent gpus idle under a job node=%s job=%s minutes=%lld",
				 a->cfg.node, s->job, (long long)((now - s->since) / 60000));
			changed = 1;
		}
	}
	if (!s->fired)
		return changed;
	memset(f, 0, sizeof(*f));
	snprintf(f->source, sizeof(f->source), "agent");
	snprintf(f->code, sizeof(f->code), "%s", AG_IDLE_CODE);
	f->gpu_index = -1;
	snprintf(f->key, sizeof(f->key), "jobs=%s", s->sig);
	snprintf(f->message, sizeof(f->message), "%s", s->message);
	*shown = 1;
	return changed;
}
