/* sched/slurm_sync.c - the Slurm backend of slurm_sync.h: the pass (list, decide, batch,
 * write), the node-change queue and the timers and thread that run passes. */
#include "sched/slurm_sync.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "core/model.h"
#include "engine/objects.h"
#include "sched/hostlist.h"
#include "sched/slurm_project.h"
#include "sched/slurm_render.h"

#include "base/banned.h"

struct slurm_sync {
	struct slurm_ops ops;
	struct slurm_sync_config cfg;
	struct fp_rng rng;
	struct store *store;
	struct cache *cache;
	struct fp_clock *clock;

	pthread_mutex_t mu; /* everything below */
	pthread_cond_t cv;
	int started, stopping;
	uint64_t tick_id, kick_id; /* armed timers (0 = none) */
	int tick_firing, kick_firing;
	char **queue; /* names for the next pass */
	size_t nqueue;
	int want_full, want_queued; /* threaded: work for the thread */
	int thread_started;
	pthread_t thread;
	struct slurm_sync_stats last;
	slurm_sync_report_fn report;
	void *report_arg;

	pthread_mutex_t pass_mu; /* one pass at a time; also guards reported */
	struct hmap reported;    /* "<node>/<event id>" of stuck-job events already reported and
				  * still current (pruned each pass) */
	int need_reconfigure;    /* the files changed and Slurm has not re-read them yet */
	char *conf_names;        /* the NodeNames last written, joined by ',' (NULL: none yet) */
};

struct slurm_sync *slurm_sync_new(const struct slurm_ops *ops, const struct slurm_sync_config *cfg)
{
	struct slurm_sync *s = xcalloc(1, sizeof(*s));
	s->ops = *ops;
	if (cfg)
		s->cfg = *cfg;
	if (s->cfg.interval_ms <= 0)
		s->cfg.interval_ms = 30000;
	if (s->cfg.debounce_ms <= 0)
		s->cfg.debounce_ms = 500;
	if (!s->cfg.queue_max)
		s->cfg.queue_max = 256;
	if (!s->cfg.max_batch)
		s->cfg.max_batch = 512;
	if (s->cfg.stuck_completing_ms == 0)
		s->cfg.stuck_completing_ms = 600000;
	hmap_init(&s->reported);
	fp_rng_init(&s->rng, s->cfg.rng_seed);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_mutex_init(&s->pass_mu, NULL);
	return s;
}

static void clear_queue(struct slurm_sync *s)
{
	for (size_t i = 0; i < s->nqueue; i++)
		free(s->queue[i]);
	s->nqueue = 0;
}

void slurm_sync_free(struct slurm_sync *s)
{
	if (!s)
		return;
	slurm_sync_stop(s);
	clear_queue(s);
	free(s->queue);
	fp_rng_release(&s->rng);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->pass_mu);
	hmap_release(&s->reported);
	free(s->conf_names);
	free(s);
}

void slurm_sync_set_report(struct slurm_sync *s, slurm_sync_report_fn fn, void *arg)
{
	s->report = fn;
	s->report_arg = arg;
}

/* ---------------------------------------------------------------- one pass */

struct fp_nodes {
	struct node **v;
	size_t n, cap;
};

static void nodes_push(struct fp_nodes *l, struct node *n)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	l->v[l->n++] = n;
}

static int visit_collect(void *arg, const struct node *n)
{
	nodes_push(arg, node_dup(n));
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_slurm_node(const void *a, const void *b)
{
	return strcmp(((const struct slurm_node *)a)->name, ((const struct slurm_node *)b)->name);
}

/* The condition a node should carry after this pass. */
struct want_cond {
	enum cond_status status;
	const char *reason;
	char message[320];
};

/* One node's part of the pass. */
struct item {
	struct node *n; /* from the cache */
	const struct slurm_node *sn;
	struct slurm_decision d;
	int update_failed;
	char update_err[200];
	int has_workload;        /* 1: wl is what status.workload should say */
	struct node_workload wl; /* owned */
};

/* What the write of one node does, read again from the store in the mutate. */
struct write_arg {
	const struct slurm_node *sn; /* NULL: not listed (or the list failed) */
	int decide;                  /* 1: re-decide and apply IMPORT/RELEASE */
	const struct want_cond *want;
	const struct node_workload *wl; /* NULL: status.workload is left as it is */
	int64_t now_ms;
	struct objects_update *u;
	char ev_msg[SLURM_PROJECT_REASON_MAX + SLURM_PROJECT_OWNER_MAX + 8];
	int imported, released;
};

static int cond_differs(const struct node *n, const struct want_cond *w)
{
	const struct node_condition *c = node_condition_get(n, SLURM_SYNC_CONDITION);
	return !c || c->status != w->status || !c->reason || strcmp(c->reason, w->reason) != 0;
}

static int release_slurm_holds(struct node *n, const char *keep)
{
	int changed = 0;
	for (size_t i = n->nholds; i-- > 0;) {
		const char *o = n->holds[i].owner;
		if (o && strncmp(o, "slurm:", 6) == 0 && (!keep || strcmp(o, keep) != 0)) {
			char *own = xstrdup(o);
			if (node_hold_release(n, own) == 0)
				changed = 1;
			free(own);
		}
	}
	return changed;
}

static int mutate_node(struct node *n, struct objects_txn *tx, void *arg)
{
	(void)tx;
	struct write_arg *w = arg;
	int changed = 0;
	w->imported = w->released = 0;
	w->u->ev_reason = NULL;
	w->u->ev_msg = NULL;
	if (w->decide && w->sn) {
		struct slurm_decision d;
		slurm_project(n, w->sn, w->now_ms, &d);
		if (d.action == SLURM_ACT_IMPORT_HOLD) {
			release_slurm_holds(n, d.owner);
			int rc = node_hold_add(n, d.owner, d.reason, d.since_ms, 0);
			if (rc < 0)
				return rc;
			changed = w->imported = 1;
			snprintf(w->ev_msg, sizeof(w->ev_msg), "%s: %s", d.owner, d.reason);
			w->u->ev_type = "Normal";
			w->u->ev_reason = "SlurmDrainImported";
			w->u->ev_msg = w->ev_msg;
		} else if (d.action == SLURM_ACT_RELEASE_HOLD) {
			changed = w->released = release_slurm_holds(n, NULL);
			snprintf(w->ev_msg, sizeof(w->ev_msg), "%s: drain ended in Slurm", d.owner);
			w->u->ev_type = "Normal";
			w->u->ev_reason = "SlurmDrainReleased";
			w->u->ev_msg = w->ev_msg;
		}
	}
	if (cond_differs(n, w->want)) {
		node_condition_set(n, SLURM_SYNC_CONDITION, w->want->status, w->want->reason,
				   w->want->message, w->now_ms);
		changed = 1;
	}
	if (w->wl && !node_workload_same(&n->workload, w->wl)) {
		node_workload_release(&n->workload);
		node_workload_copy(&n->workload, w->wl);
		n->workload.since = w->now_ms;
		changed = 1;
	}
	return changed;
}

static int write_node(struct slurm_sync *s, const struct node *cached, const struct slurm_node *sn,
		      int decide, const struct want_cond *want, const struct node_workload *wl,
		      int64_t now_ms, struct slurm_sync_stats *st)
{
	if (!decide && !cond_differs(cached, want) &&
	    (!wl || node_workload_same(&cached->workload, wl)))
		return 0; /* nothing to write: no write storms */
	struct objects_update u = {.actor = SLURM_SYNC_ACTOR, .now_ms = now_ms};
	struct write_arg w =
		{.sn = sn, .decide = decide, .want = want, .wl = wl, .now_ms = now_ms, .u = &u};
	pthread_mutex_lock(&s->mu);
	u.rnd = fp_rng_u64(&s->rng);
	pthread_mutex_unlock(&s->mu);
	char err[256] = "";
	int rc = objects_update_node(s->store, cached->name, mutate_node, &w, &u, NULL, err,
				     sizeof(err));
	if (rc < 0 && rc != FP_ENOTFOUND) {
		log_warn("slurm sync write failed node=%s rc=%s err=\"%s\"", cached->name,
			 fp_err_name(rc), err);
		return rc;
	}
	if (u.revision) {
		st->writes++;
		st->imported += (size_t)w.imported;
		st->released += (size_t)w.released;
		if (w.imported)
			log_info("slurm drain imported node=%s hold=\"%s\"", cached->name,
				 w.ev_msg);
		if (w.released)
			log_info("slurm drain released node=%s hold=\"%s\"", cached->name,
				 w.ev_msg);
	}
	return 0;
}

/* Sends one update for names (n >= 1), max_batch at a time; marks the items on failure. */
static void send_update(struct slurm_sync *s, struct item **items, size_t n, int drain,
			const char *reason, struct slurm_sync_stats *st)
{
	const char **names = xcalloc(n, sizeof(*names));
	for (size_t off = 0; off < n; off += s->cfg.max_batch) {
		size_t k = n - off < s->cfg.max_batch ? n - off : s->cfg.max_batch;
		for (size_t i = 0; i < k; i++)
			names[i] = items[off + i]->n->name;
		char err[200] = "";
		st->update_calls++;
		int rc = s->ops.update(s->ops.arg, names, k, drain, drain ? reason : NULL, err,
				       sizeof(err));
		if (rc < 0) {
			st->update_failures++;
			log_warn("slurm update failed state=%s nodes=%zu first=%s rc=%s err=\"%s\"",
				 drain ? "DRAIN" : "RESUME", k, names[0], fp_err_name(rc), err);
			for (size_t i = 0; i < k; i++) {
				items[off + i]->update_failed = 1;
				snprintf(items[off + i]->update_err,
					 sizeof(items[off + i]->update_err), "%s", err);
			}
		}
	}
	free(names);
}

static void batch_updates(struct slurm_sync *s, struct item *it, size_t n,
			  struct slurm_sync_stats *st)
{
	struct item **sel = xcalloc(n ? n : 1, sizeof(*sel));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (it[i].d.action == SLURM_ACT_RESUME)
			sel[k++] = &it[i];
	if (k)
		send_update(s, sel, k, 0, NULL, st);
	st->resumed = k;
	/* DRAINs grouped by reason, in the order the first of each reason was met */
	char *done = xcalloc(n ? n : 1, 1);
	for (size_t i = 0; i < n; i++) {
		if (it[i].d.action != SLURM_ACT_DRAIN || done[i])
			continue;
		k = 0;
		for (size_t j = i; j < n; j++)
			if (!done[j] && it[j].d.action == SLURM_ACT_DRAIN &&
			    strcmp(it[j].d.reason, it[i].d.reason) == 0) {
				done[j] = 1;
				sel[k++] = &it[j];
			}
		st->drained += k;
		send_update(s, sel, k, 1, it[i].d.reason, st);
	}
	free(done);
	free(sel);
}

static void want_for(const struct item *it, struct want_cond *w)
{
	w->message[0] = '\0';
	if (it->d.why == SLURM_WHY_ABSENT) {
		w->status = COND_FALSE;
		w->reason = "NodeNotInSlurm";
		snprintf(w->message, sizeof(w->message), "Slurm does not list the node");
	} else if (it->d.why == SLURM_WHY_STATE_UNKNOWN) {
		w->status = COND_FALSE;
		w->reason = "SlurmStateUnknown";
		snprintf(w->message, sizeof(w->message), "Slurm state %s not understood",
			 it->sn ? it->sn->state.text : "?");
	} else if (it->update_failed) {
		w->status = COND_FALSE;
		w->reason = "SlurmUpdateFailed";
		snprintf(w->message, sizeof(w->message), "%s", it->update_err);
	} else {
		w->status = COND_TRUE;
		w->reason = "InSync";
	}
}

/* ---------------------------------------------------------------- workload */

/* The job ids seen on one node in this pass's squeue listing. */
struct node_jobs {
	char *ids[NODE_MAX_JOBS]; /* owned, the smallest NODE_MAX_JOBS in job_id_cmp order */
	size_t n, total;
};

/* Numeric ids in numeric order ("9" before "10"), then byte order. */
static int job_id_cmp(const char *a, const char *b)
{
	size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a, b);
}

static void node_jobs_add(struct node_jobs *j, const char *id)
{
	j->total++;
	size_t at = j->n;
	while (at > 0 && job_id_cmp(id, j->ids[at - 1]) < 0)
		at--;
	if (at >= NODE_MAX_JOBS)
		return;
	if (j->n == NODE_MAX_JOBS)
		free(j->ids[--j->n]);
	memmove(&j->ids[at + 1], &j->ids[at], (j->n - at) * sizeof(j->ids[0]));
	j->ids[at] = xstrdup(id);
	j->n++;
}

static void jobs_map_release(struct hmap *m)
{
	for (struct hmap_iter it = hmap_iter_start(m); hmap_iter_next(&it);) {
		struct node_jobs *j = it.e->value;
		for (size_t i = 0; i < j->n; i++)
			free(j->ids[i]);
		free(j);
	}
	hmap_release(m);
}

/* Fills m (node name -> struct node_jobs) from jobs: only the names in want (fleetplane's
 * nodes), so a huge job list costs no memory for nodes fleetplane does not manage. A job whose
 * hostlist no longer expands is skipped (squeue's parser already refused malformed ones). */
static void jobs_map_build(struct hmap *m, const struct slurm_job *jobs, size_t njobs,
			   const struct hmap *want)
{
	for (size_t i = 0; i < njobs; i++) {
		struct hostlist hl;
		hostlist_init(&hl);
		if (hostlist_expand(&hl, jobs[i].nodes, strlen(jobs[i].nodes), NULL, 0) == 0)
			for (size_t k = 0; k < hl.n; k++) {
				const char *name = hostlist_name(&hl, k);
				if (!hmap_get(want, name))
					continue;
				struct node_jobs *j = hmap_get(m, name);
				if (!j) {
					j = xcalloc(1, sizeof(*j));
					hmap_put(m, name, j);
				}
				node_jobs_add(j, jobs[i].id);
			}
		hostlist_release(&hl);
	}
}

/* What status.workload should say for it after this pass: from the listed state (nothing when
 * Slurm's state is not understood: fail closed, the old one stays), with the job ids of the
 * squeue listing when there is one (jobs_ok), else the ids the node had. A node fleetplane has
 * just RESUMEd is no longer drained, whatever the listing taken before the resume said: a
 * drain that follows must not find a stale "drained". */
static void workload_for(struct item *it, const struct hmap *jobs, int jobs_ok)
{
	struct node_workload *w = &it->wl;
	memset(w, 0, sizeof(*w));
	if (it->d.action == SLURM_ACT_UNSURE || it->update_failed)
		return;
	it->has_workload = 1;
	w->scheduler = xstrdup("slurm");
	if (!it->sn) {
		w->state = WORKLOAD_ABSENT;
		return;
	}
	const struct slurm_state *st = &it->sn->state;
	int jobs_none = st->jobs == SLURM_JOBS_NONE;
	int drain = (st->flags & SLURM_NF_DRAIN) && it->d.action != SLURM_ACT_RESUME;
	w->state = drain ? (jobs_none ? WORKLOAD_DRAINED : WORKLOAD_DRAINING)
			 : (jobs_none ? WORKLOAD_IDLE : WORKLOAD_BUSY);
	if (jobs_none)
		return;
	if (jobs_ok) {
		const struct node_jobs *j = hmap_get(jobs, it->n->name);
		if (j) {
			w->jobs = xcalloc(j->n ? j->n : 1, sizeof(char *));
			for (size_t i = 0; i < j->n; i++)
				w->jobs[w->njobs++] = xstrdup(j->ids[i]);
			w->jobs_total = j->total;
		}
	} else if (node_workload_has_jobs(&it->n->workload)) {
		struct node_workload keep;
		node_workload_copy(&keep, &it->n->workload);
		w->jobs = keep.jobs;
		w->njobs = keep.njobs;
		w->jobs_total = keep.jobs_total;
		free(keep.scheduler);
	}
}

/* Lists the jobs when some node of the pass may have any; 1 when the map is the truth. The
 * listing itself goes to *jobs_out (*njobs_out; NULL when none was run or it failed; the
 * caller frees it with slurm_jobs_free). */
static int list_jobs(struct slurm_sync *s, struct item *it, size_t n, const struct hmap *mine,
		     struct hmap *map, struct slurm_job **jobs_out, size_t *njobs_out)
{
	*jobs_out = NULL;
	*njobs_out = 0;
	int any = 0;
	for (size_t i = 0; i < n && !any; i++)
		any = it[i].sn && it[i].sn->state.jobs != SLURM_JOBS_NONE;
	if (!any)
		return 1; /* no node holds a job: nothing to ask */
	if (!s->ops.list_jobs)
		return 0;
	struct slurm_job *jobs = NULL;
	size_t njobs = 0;
	char err[256] = "";
	int rc = s->ops.list_jobs(s->ops.arg, &jobs, &njobs, err, sizeof(err));
	if (rc < 0) {
		log_warn("slurm job list failed rc=%s err=\"%s\"", fp_err_name(rc), err);
		return 0;
	}
	jobs_map_build(map, jobs, njobs, mine);
	*jobs_out = jobs;
	*njobs_out = njobs;
	return 1;
}

/* ---------------------------------------------------------------- stuck jobs */

/* Hands one event to the report hook unless "<node>/<id>" was reported before and is still
 * current; marks it current in seen either way. */
static void report_event(struct slurm_sync *s, struct hmap *seen, const char *node, const char *id,
			 const char *code, const char *job, const char *msg, int64_t now_ms,
			 struct slurm_sync_stats *st)
{
	char key[HOSTLIST_MAX_NAME + 96];
	snprintf(key, sizeof(key), "%s/%s", node, id);
	hmap_put(seen, key, (void *)1);
	if (hmap_get(&s->reported, key))
		return;
	char ts[FP_TIME_LEN];
	fp_time_format(now_ms, ts);
	json_t *ev = json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", id, "source", "slurm", "code", code,
			       "time", ts, "message", msg);
	if (job)
		json_object_set_new(ev, "job", json_string(job));
	json_t *rep = json_pack("{s:[o]}", "events", ev);
	char err[256] = "";
	int rc = s->report(s->report_arg, node, rep, now_ms, err, sizeof(err));
	json_decref(rep);
	if (rc < 0) {
		log_warn("slurm stuck-job report failed node=%s code=%s rc=%s err=\"%s\"", node,
			 code, fp_err_name(rc), err);
		hmap_remove(seen, key); /* tried again next pass */
		return;
	}
	st->stuck_reported++;
	log_warn("slurm stuck job node=%s code=%s job=%s detail=\"%s\"", node, code,
		 job ? job : "-", msg);
}

/* A job id as an event id part: the id bytes are [0-9A-Za-z_+.-] (slurm_job.h), all allowed in
 * event ids but '+', which becomes '.'. */
static void id_part(const char *job, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s", job);
	for (char *c = out; *c; c++)
		if (*c == '+')
			*c = '.';
}

/* The stuck-job events of this pass (docs/slurm.md "Stuck jobs"):
 *  - a job COMPLETING for more than stuck_completing_ms after its end, on each of its
 *    fleetplane nodes: SLURM_CODE_COMPLETING_STUCK, event id "slurm-cg-<job>";
 *  - a node Slurm drained with the reason "Kill task failed" (slurmd could not kill a job's
 *    processes, slurm.conf(5) UnkillableStepTimeout): SLURM_CODE_KILL_TASK_FAILED, event id
 *    "slurm-ktf-<Slurm's reason time>", attributed to the node's first job when one is known.
 * Each is reported once while it lasts (s->reported); the health policy decides. */
static void stuck_jobs(struct slurm_sync *s, struct item *it, size_t n, const struct hmap *mine,
		       const struct slurm_job *jobs, size_t njobs, const struct hmap *map,
		       int jobs_ok, int64_t now_ms, struct slurm_sync_stats *st)
{
	if (!s->report)
		return;
	struct hmap seen;
	hmap_init(&seen);
	for (size_t j = 0; s->cfg.stuck_completing_ms > 0 && j < njobs; j++) {
		const struct slurm_job *jb = &jobs[j];
		if (strcmp(jb->state, "COMPLETING") != 0 || jb->end_ms <= 0 ||
		    now_ms - jb->end_ms <= s->cfg.stuck_completing_ms)
			continue;
		struct hostlist hl;
		hostlist_init(&hl);
		if (hostlist_expand(&hl, jb->nodes, strlen(jb->nodes), NULL, 0) == 0)
			for (size_t k = 0; k < hl.n; k++) {
				const char *node = hostlist_name(&hl, k);
				if (!hmap_get(mine, node))
					continue;
				char id[64], part[SLURM_JOB_ID_MAX + 1], msg[300];
				id_part(jb->id, part, sizeof(part));
				snprintf(id, sizeof(id), "slurm-cg-%s", part);
				snprintf(
					msg, sizeof(msg),
					"job %s (user %s, partition %s) COMPLETING for %lld s after "
					"it ended; Slurm could not clean it up",
					jb->id, jb->user, jb->partition,
					(long long)((now_ms - jb->end_ms) / 1000));
				report_event(s, &seen, node, id, SLURM_CODE_COMPLETING_STUCK,
					     jb->id, msg, now_ms, st);
			}
		hostlist_release(&hl);
	}
	for (size_t i = 0; i < n; i++) {
		const struct slurm_node *sn = it[i].sn;
		if (!sn || !(sn->state.flags & SLURM_NF_DRAIN) || !sn->has_reason ||
		    strncmp(sn->reason, "Kill task failed", 16) != 0)
			continue;
		char id[64], msg[300];
		snprintf(id, sizeof(id), "slurm-ktf-%s",
			 sn->reason_time[0] ? sn->reason_time : "0");
		for (char *c = id; *c; c++)
			if (*c == ':')
				*c = '.';
		const struct node_jobs *nj = jobs_ok ? hmap_get(map, it[i].n->name) : NULL;
		const char *job = nj && nj->n ? nj->ids[0]
				  : node_workload_has_jobs(&it[i].n->workload) &&
						  it[i].n->workload.njobs
					  ? it[i].n->workload.jobs[0]
					  : NULL;
		snprintf(msg, sizeof(msg),
			 "Slurm drained the node: \"%.120s\" (%s at %s): a job's processes could "
			 "not be killed",
			 sn->reason, sn->reason_user[0] ? sn->reason_user : "?",
			 sn->reason_time[0] ? sn->reason_time : "?");
		report_event(s, &seen, it[i].n->name, id, SLURM_CODE_KILL_TASK_FAILED, job, msg,
			     now_ms, st);
	}
	/* what was reported and is no longer current is forgotten */
	hmap_release(&s->reported);
	s->reported = seen;
}

/* ---------------------------------------------------------------- generated configuration */

/* 1 when the file at path holds exactly b (an unreadable file differs). */
static int file_differs(const char *path, const struct buf *b)
{
	struct buf cur;
	buf_init(&cur, b->len + 1);
	int differs = buf_read_file(&cur, path, b->len + 1, NULL, 0) < 0 || cur.len != b->len ||
		      (b->len && memcmp(cur.data, b->data, b->len) != 0);
	buf_release(&cur);
	return differs;
}

/* The NodeNames of the wanted nodes among v, sorted, joined by ','. */
static char *wanted_names(struct node *const *v, size_t n)
{
	const char **names = xcalloc(n + 1, sizeof(*names));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (slurm_render_wanted(v[i]))
			names[k++] = v[i]->name;
	qsort(names, k, sizeof(*names), cmp_str);
	struct buf b;
	buf_init(&b, 0);
	for (size_t i = 0; i < k; i++)
		buf_printf(&b, "%s%s", i ? "," : "", names[i]);
	free(names);
	return buf_detach(&b, NULL);
}

/* Keeps cfg.nodes_conf and cfg.gres_conf equal to the configuration generated from every
 * node (a full pass's), and has Slurm re-read it when it changed. */
static void apply_config(struct slurm_sync *s, struct node *const *v, size_t n,
			 struct slurm_sync_stats *st)
{
	if (!s->cfg.nodes_conf)
		return;
	struct buf nodes, gres;
	buf_init(&nodes, 16u << 20);
	buf_init(&gres, 16u << 20);
	char err[512] = "";
	size_t count = 0;
	if (slurm_render(v, n, "generated by fleetplane serve --slurm: do not edit", &nodes, &gres,
			 &count, err, sizeof(err)) < 0) {
		log_warn("slurm configuration not generated err=\"%s\"", err);
		goto out;
	}
	int changed = 0, failed = 0;
	if (file_differs(s->cfg.nodes_conf, &nodes)) {
		changed = 1;
		if (buf_write_file(&nodes, s->cfg.nodes_conf, err, sizeof(err)) < 0) {
			log_warn("slurm configuration not written err=\"%s\"", err);
			failed = 1;
		}
	}
	if (!failed && s->cfg.gres_conf && file_differs(s->cfg.gres_conf, &gres)) {
		changed = 1;
		if (buf_write_file(&gres, s->cfg.gres_conf, err, sizeof(err)) < 0) {
			log_warn("slurm configuration not written err=\"%s\"", err);
			failed = 1;
		}
	}
	if (failed)
		goto out;
	if (changed) {
		st->config_written = 1;
		s->need_reconfigure = 1;
		char *names = wanted_names(v, n);
		if (!s->conf_names || strcmp(s->conf_names, names) != 0)
			log_warn(
				"slurm configuration written; if nodes were added "
				"or removed, Slurm 22.05 takes them only after slurmctld and every "
				"slurmd restart (scontrol(1) reconfigure) nodes=%zu path=%s",
				count, s->cfg.nodes_conf);
		else
			log_info("slurm configuration written nodes=%zu path=%s", count,
				 s->cfg.nodes_conf);
		free(s->conf_names);
		s->conf_names = names;
	} else if (!s->conf_names) {
		s->conf_names = wanted_names(v, n);
	}
	if (s->need_reconfigure && s->ops.reconfigure) {
		if (s->ops.reconfigure(s->ops.arg, err, sizeof(err)) < 0) {
			log_warn(
				"slurm reconfigure failed (retried by the next full pass) err=\"%s\"",
				err);
		} else {
			s->need_reconfigure = 0;
			st->reconfigured = 1;
			log_info("slurm reconfigure done nodes=%zu", count);
		}
	}
out:
	buf_release(&nodes);
	buf_release(&gres);
}

/* Collects the nodes of the pass: names (n of them) from the cache, or every node. */
static void collect(struct slurm_sync *s, char **names, size_t nnames, int full,
		    struct fp_nodes *out)
{
	if (full) {
		cache_visit_nodes(s->cache, visit_collect, out);
		return;
	}
	for (size_t i = 0; i < nnames; i++) {
		struct node *n = objects_cache_node(s->cache, names[i]);
		if (n)
			nodes_push(out, n);
	}
}

static int pass(struct slurm_sync *s, int64_t now_ms, char **names, size_t nnames, int full,
		struct slurm_sync_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&s->pass_mu);
	struct slurm_node *sl = NULL;
	size_t nsl = 0;
	char err[256] = "";
	int rc = s->ops.list_nodes(s->ops.arg, &sl, &nsl, err, sizeof(err));
	struct fp_nodes fl = {0};
	collect(s, names, nnames, full, &fl);
	st->nodes = fl.n;
	if (full)
		apply_config(s, fl.v, fl.n, st);
	int wrc = 0;
	if (rc < 0) {
		/* the rule: a Slurm we cannot read changes nothing but the condition */
		free(sl);
		sl = NULL;
		st->list_rc = rc;
		struct want_cond w = {.status = COND_FALSE,
				      .reason = rc == FP_EPARSE ? "SlurmOutputInvalid"
								: "SlurmUnreachable"};
		snprintf(w.message, sizeof(w.message), "%s", err[0] ? err : fp_err_msg(rc));
		if (s->last.list_rc == 0)
			log_warn("slurm list failed rc=%s err=\"%s\"", fp_err_name(rc), w.message);
		for (size_t i = 0; i < fl.n; i++) {
			int r = write_node(s, fl.v[i], NULL, 0, &w, NULL, now_ms, st);
			if (r < 0 && !wrc)
				wrc = r;
		}
		goto out;
	}
	if (s->last.list_rc < 0)
		log_info("slurm list recovered nodes=%zu", nsl);
	st->listed = nsl;
	qsort(sl, nsl, sizeof(*sl), cmp_slurm_node);
	struct item *it = xcalloc(fl.n ? fl.n : 1, sizeof(*it));
	for (size_t i = 0; i < fl.n; i++) {
		struct slurm_node key;
		snprintf(key.name, sizeof(key.name), "%s", fl.v[i]->name);
		it[i].n = fl.v[i];
		it[i].sn = nsl ? bsearch(&key, sl, nsl, sizeof(*sl), cmp_slurm_node) : NULL;
		slurm_project(it[i].n, it[i].sn, now_ms, &it[i].d);
		st->unsure += it[i].d.action == SLURM_ACT_UNSURE;
		st->absent += it[i].d.why == SLURM_WHY_ABSENT;
	}
	batch_updates(s, it, fl.n, st);
	struct hmap jobs;
	hmap_init(&jobs);
	struct slurm_job *jl = NULL;
	size_t njl = 0;
	struct hmap mine; /* this pass's fleetplane node names */
	hmap_init(&mine);
	for (size_t i = 0; i < fl.n; i++)
		hmap_put(&mine, it[i].n->name, (void *)1);
	int jobs_ok = list_jobs(s, it, fl.n, &mine, &jobs, &jl, &njl);
	if (full)
		stuck_jobs(s, it, fl.n, &mine, jl, njl, &jobs, jobs_ok, now_ms, st);
	hmap_release(&mine);
	slurm_jobs_free(jl, njl);
	for (size_t i = 0; i < fl.n; i++) {
		struct want_cond w;
		want_for(&it[i], &w);
		workload_for(&it[i], &jobs, jobs_ok);
		int decide = it[i].d.action == SLURM_ACT_IMPORT_HOLD ||
			     it[i].d.action == SLURM_ACT_RELEASE_HOLD;
		int r = write_node(s, it[i].n, it[i].sn, decide, &w,
				   it[i].has_workload ? &it[i].wl : NULL, now_ms, st);
		if (r < 0 && !wrc)
			wrc = r;
		/* A DRAIN just sent is confirmed by the listing of a pass debounce_ms from now
		 * (status.workload becomes draining or drained), not one interval_ms away. */
		if (it[i].d.action == SLURM_ACT_DRAIN && !it[i].update_failed)
			slurm_sync_node_changed(s, it[i].n->name);
		node_workload_release(&it[i].wl);
	}
	jobs_map_release(&jobs);
	free(it);
out:
	for (size_t i = 0; i < fl.n; i++)
		node_free(fl.v[i]);
	free(fl.v);
	free(sl);
	pthread_mutex_lock(&s->mu);
	s->last = *st;
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&s->pass_mu);
	return rc < 0 ? rc : wrc;
}

/* Takes the queued names (and whether a full pass is due) for a pass; s->mu held. */
static char **take_queue(struct slurm_sync *s, size_t *n)
{
	char **names = s->queue;
	*n = s->nqueue;
	s->queue = NULL;
	s->nqueue = 0;
	return names;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void run_pass(struct slurm_sync *s, int full)
{
	pthread_mutex_lock(&s->mu);
	size_t n = 0;
	char **names = take_queue(s, &n);
	if (s->want_full)
		full = 1;
	s->want_full = 0;
	pthread_mutex_unlock(&s->mu);
	if (full || n) {
		struct slurm_sync_stats st;
		pass(s, clock_wall_ms(s->clock), names, n, full, &st);
	}
	free_names(names, n);
}

/* ---------------------------------------------------------------- timers and thread */

static void tick_cb(void *arg);

static void arm_tick(struct slurm_sync *s, int64_t delay)
{
	s->tick_id = clock_after(s->clock, delay, tick_cb, s);
}

static void tick_cb(void *arg)
{
	struct slurm_sync *s = arg;
	pthread_mutex_lock(&s->mu);
	s->tick_id = 0;
	if (s->stopping) {
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		return;
	}
	s->tick_firing = 1;
	if (s->cfg.threaded) {
		s->want_full = 1;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	if (!s->cfg.threaded)
		run_pass(s, 1);
	pthread_mutex_lock(&s->mu);
	s->tick_firing = 0;
	if (!s->stopping)
		arm_tick(s, s->cfg.interval_ms);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void kick_cb(void *arg)
{
	struct slurm_sync *s = arg;
	pthread_mutex_lock(&s->mu);
	s->kick_id = 0;
	if (s->stopping) {
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		return;
	}
	s->kick_firing = 1;
	if (s->cfg.threaded) {
		s->want_queued = 1;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	if (!s->cfg.threaded)
		run_pass(s, 0);
	pthread_mutex_lock(&s->mu);
	s->kick_firing = 0;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void *thread_main(void *arg)
{
	struct slurm_sync *s = arg;
	pthread_mutex_lock(&s->mu);
	while (!s->stopping) {
		if (!s->want_full && !s->want_queued) {
			pthread_cond_wait(&s->cv, &s->mu);
			continue;
		}
		int full = s->want_full;
		s->want_queued = 0;
		pthread_mutex_unlock(&s->mu);
		run_pass(s, full);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int slurm_sync_start(struct slurm_sync *s, struct store *store, struct cache *cache,
		     struct fp_clock *clock, char *err, size_t errlen)
{
	if (!store || !cache || !clock) {
		snprintf(err, errlen,
			 "the Slurm backend needs the store, the informer cache and a "
			 "clock");
		return FP_EINVAL;
	}
	pthread_mutex_lock(&s->mu);
	if (s->started) {
		pthread_mutex_unlock(&s->mu);
		snprintf(err, errlen, "the Slurm backend is started already");
		return FP_EINVAL;
	}
	s->store = store;
	s->cache = cache;
	s->clock = clock;
	s->started = 1;
	if (s->cfg.threaded) {
		if (pthread_create(&s->thread, NULL, thread_main, s) != 0) {
			s->started = 0;
			pthread_mutex_unlock(&s->mu);
			snprintf(err, errlen, "cannot start the Slurm sync thread");
			return FP_EIO;
		}
		s->thread_started = 1;
	}
	arm_tick(s, 0);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

void slurm_sync_node_changed(void *arg, const char *name)
{
	struct slurm_sync *s = arg;
	pthread_mutex_lock(&s->mu);
	if (!s->started || s->stopping || !name) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	size_t i = 0;
	while (i < s->nqueue && strcmp(s->queue[i], name) != 0)
		i++;
	if (i == s->nqueue) {
		if (s->nqueue >= s->cfg.queue_max) {
			/* degrade to a full resync: every node is looked at anyway */
			clear_queue(s);
			s->want_full = 1;
		} else if (!s->want_full) {
			s->queue = xreallocarray(s->queue, s->nqueue + 1, sizeof(*s->queue));
			s->queue[s->nqueue++] = xstrdup(name);
		}
	}
	if (!s->kick_id)
		s->kick_id = clock_after(s->clock, s->cfg.debounce_ms, kick_cb, s);
	pthread_mutex_unlock(&s->mu);
}

/* Cancels timer *id; when it is firing already (cancel says it ran), waits for its callback to
 * be done with s. s->mu held. */
static void cancel_wait(struct slurm_sync *s, uint64_t *id, const int *firing)
{
	if (*id && clock_cancel(s->clock, *id) == 0)
		*id = 0;
	while (*id || *firing)
		pthread_cond_wait(&s->cv, &s->mu);
}

void slurm_sync_stop(struct slurm_sync *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	if (!s->started || s->stopping) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	s->stopping = 1;
	pthread_cond_broadcast(&s->cv);
	cancel_wait(s, &s->tick_id, &s->tick_firing);
	cancel_wait(s, &s->kick_id, &s->kick_firing);
	int join = s->thread_started;
	s->thread_started = 0;
	pthread_mutex_unlock(&s->mu);
	if (join)
		pthread_join(s->thread, NULL);
}

int slurm_sync_run_once(struct slurm_sync *s, int64_t now_ms, struct slurm_sync_stats *st)
{
	struct slurm_sync_stats local;
	pthread_mutex_lock(&s->mu);
	int ok = s->started && !s->stopping;
	pthread_mutex_unlock(&s->mu);
	if (!ok)
		return FP_ESTATE;
	return pass(s, now_ms, NULL, 0, 1, st ? st : &local);
}

void slurm_sync_last_stats(struct slurm_sync *s, struct slurm_sync_stats *st)
{
	pthread_mutex_lock(&s->mu);
	*st = s->last;
	pthread_mutex_unlock(&s->mu);
}
