/* controller/health.c - the health controller (see health.h; docs/health.md is the policy
 * reference).
 *
 * A report is validated whole, then evaluated under one mutex against in-memory state: the
 * events already seen (dedupe by (node, id)), the count-in-window and distinct-job windows per
 * (node, GPU, code), the job windows per (code, job), the holds decided per node (lemon), the
 * breaker windows per domain value, the open breakers (held by health_breaker.c, which the
 * budget service asks too) and the job faults. Windows are bounded
 * (core/health.h) and pruned by time, so a report costs no store scan: its one store
 * transaction (event documents create-if-absent, the node by CAS, the audit events, breaker
 * documents) is the only I/O besides reading the node. The window entries a report added carry
 * its sequence number and are undone when its transaction fails (CAS conflict: re-read and
 * evaluate again; an event id already stored: a duplicate).
 *
 * Last-report times live in memory only: after a restart every node that was AgentAlive
 * True/Heartbeat gets a fresh grace period from the start (documented in docs/health.md).
 *
 * Memory is bounded per node (docs/health.md "State kept in memory"): the newest
 * SEEN_PER_NODE event ids (the store's create-if-absent write is the authority on duplicates),
 * CWIN_PER_NODE count windows, and windows of bounded entries.
 *
 * Validating and parsing a report into struct rep is health_parse.c's; what the two files
 * share is health_int.h. */
#include "controller/health.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/timefmt.h"
#include "controller/health_breaker.h"
#include "controller/health_int.h"
#include "core/budget.h"
#include "core/codec.h"
#include "core/event.h"
#include "core/health.h"
#include "engine/objects.h"

#define ACTOR "controller:health"
#define SEC 1000LL

#define SEEN_KEEP_MS (24 * 3600 * SEC) /* dedupe horizon in memory (the store is the rest) */
/* Ids remembered per node: the newest this many (the GC's default per-node health event cap,
 * gc.h), so a flood of new ids from one agent costs bounded memory; an older id sent again is
 * still a duplicate while its document exists (the create-if-absent write finds it). */
#define SEEN_PER_NODE 10000
/* Count windows (one per GPU + code) per node: past this many the least recently updated is
 * dropped, so an agent inventing bus ids cannot grow serve's memory. */
#define CWIN_PER_NODE 256
#define JOBFAULT_KEEP_MS (24 * 3600 * SEC)
#define LATENCY_HORIZON_MS (5 * 60 * SEC)
#define HEARTBEAT_MIN_MS (90 * SEC)
#define SWEEP_MAX_MS (10 * SEC)
#define LOAD_MAX_EVENTS 200000 /* recent events replayed at start */
#define COMMIT_ATTEMPTS 8

static const char *const rung_names[RUNG__COUNT] = {"gpu_reset", "reboot", "reimage", "rma"};

struct jobfault {
	int64_t at;   /* last event of this (code, job), wall ms */
	uint64_t seq; /* report that declared it */
	int dry;      /* declared by a dry-run decision: live decisions do not see it */
};

struct alive {
	int64_t last;    /* monotonic ms of the last report */
	int64_t timeout; /* ms */
	int missed;      /* AgentAlive False written since */
};

/* Per-node bookkeeping that bounds the node's share of h->seen and of the count windows. */
struct hnode {
	char **ids; /* ring of this node's keys in h->seen ("node/id"), oldest at head */
	size_t head, n, cap;
	struct {
		char *key;     /* "c|node|gpu|code" in h->windows */
		uint64_t used; /* h->tick of its last update */
	} cw[CWIN_PER_NODE];
	size_t ncw;
};

struct health {
	struct health_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct health_policy *policy;
	uint64_t seq;
	struct hmap seen;      /* "node/id" -> int64_t* wall ms received */
	struct hmap windows;   /* "c|node|gpu|code", "j|code|job", "h|node", "b|dom.val" ->
				* struct health_window* */
	struct hmap jobfaults; /* "code|job" -> struct jobfault* */
	struct health_breakers *breakers; /* the open breakers (health_breaker.h; owned) */
	struct hmap dry_breakers; /* "dom.val" -> int*: would be open (dry-run decisions only) */
	struct hmap alive;        /* node -> struct alive* */
	struct hmap nodes;        /* node -> struct hnode* */
	uint64_t tick;            /* count-window use order */
	uint64_t timer;
	int stopping, timer_pending; /* a sweep timer is scheduled or its callback running */
	struct metric_family *m_latency, *m_events, *m_decisions, *m_breakers;
};

/* ---------------------------------------------------------------- in-memory state */

static struct hnode *hnode_get(struct health *h, const char *node, int create)
{
	struct hnode *x = hmap_get(&h->nodes, node);
	if (!x && create) {
		x = xcalloc(1, sizeof(*x));
		hmap_put(&h->nodes, node, x);
	}
	return x;
}

static void hnode_free(struct hnode *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++)
		free(x->ids[(x->head + i) % x->cap]);
	free(x->ids);
	for (size_t i = 0; i < x->ncw; i++)
		free(x->cw[i].key);
	free(x);
}

/* Under h->mu: remembers (node, id) as seen at wall ms `at`; past SEEN_PER_NODE ids of the node
 * the oldest remembered one is forgotten. */
static void seen_add(struct health *h, const char *node, const char *id, int64_t at)
{
	char key[STORE_MAX_KEY + 1];
	snprintf(key, sizeof(key), "%s/%s", node, id);
	int64_t *v = hmap_get(&h->seen, key);
	if (v) {
		*v = at;
		return;
	}
	struct hnode *x = hnode_get(h, node, 1);
	if (x->n == SEEN_PER_NODE) {
		char *old = x->ids[x->head];
		free(hmap_remove(&h->seen, old));
		free(old);
		x->ids[x->head] = xstrdup(key);
		x->head = (x->head + 1) % x->cap;
	} else {
		if (x->n == x->cap) { /* grow, keeping the ring in order */
			size_t ncap = x->cap ? x->cap * 2 : 16;
			if (ncap > SEEN_PER_NODE)
				ncap = SEEN_PER_NODE;
			char **ids = xcalloc(ncap, sizeof(*ids));
			for (size_t i = 0; i < x->n; i++)
				ids[i] = x->ids[(x->head + i) % x->cap];
			free(x->ids);
			x->ids = ids;
			x->cap = ncap;
			x->head = 0;
		}
		x->ids[(x->head + x->n) % x->cap] = xstrdup(key);
		x->n++;
	}
	v = xmalloc(sizeof(*v));
	*v = at;
	hmap_put(&h->seen, key, v);
}

/* Under h->mu: forgets every remembered id of every node received before cutoff. */
static void seen_prune(struct health *h, int64_t cutoff)
{
	for (struct hmap_iter it = hmap_iter_start(&h->nodes); hmap_iter_next(&it);) {
		struct hnode *x = it.e->value;
		size_t w = 0;
		for (size_t i = 0; i < x->n; i++) {
			char *k = x->ids[(x->head + i) % x->cap];
			int64_t *v = hmap_get(&h->seen, k);
			if (!v || *v < cutoff) {
				free(hmap_remove(&h->seen, k));
				free(k);
			} else {
				x->ids[(x->head + w) % x->cap] = k; /* w <= i: compacts in place */
				w++;
			}
		}
		x->n = w;
	}
}

/* The node of a count window key "c|node|gpu|code" into out; 0 when key is not one. */
static int cwin_node(const char *key, char *out, size_t outlen)
{
	if (strncmp(key, "c|", 2) != 0)
		return 0;
	const char *bar = strchr(key + 2, '|');
	size_t n = bar ? (size_t)(bar - key - 2) : 0;
	if (!bar || n >= outlen)
		return 0;
	memcpy(out, key + 2, n);
	out[n] = 0;
	return 1;
}

/* Under h->mu: the window of key is gone; forget it in its node's count-window list. */
static void cwin_forget(struct health *h, const char *key)
{
	char node[STORE_MAX_KEY + 1];
	struct hnode *x = cwin_node(key, node, sizeof(node)) ? hnode_get(h, node, 0) : NULL;
	for (size_t i = 0; x && i < x->ncw; i++)
		if (strcmp(x->cw[i].key, key) == 0) {
			free(x->cw[i].key);
			x->cw[i] = x->cw[--x->ncw];
			return;
		}
}

static struct health_window *window_get(struct health *h, const char *key, int create)
{
	struct health_window *w = hmap_get(&h->windows, key);
	char node[STORE_MAX_KEY + 1];
	int cwin = create && cwin_node(key, node, sizeof(node));
	if (!w && create) {
		if (cwin) { /* bounded per node: the least recently updated one goes */
			struct hnode *x = hnode_get(h, node, 1);
			if (x->ncw == CWIN_PER_NODE) {
				size_t lru = 0;
				for (size_t i = 1; i < x->ncw; i++)
					if (x->cw[i].used < x->cw[lru].used)
						lru = i;
				struct health_window *old = hmap_remove(&h->windows,
									x->cw[lru].key);
				if (old) {
					health_window_release(old);
					free(old);
				}
				free(x->cw[lru].key);
				x->cw[lru] = x->cw[--x->ncw];
			}
			x->cw[x->ncw].key = xstrdup(key);
			x->cw[x->ncw].used = ++h->tick;
			x->ncw++;
		}
		w = xcalloc(1, sizeof(*w));
		hmap_put(&h->windows, key, w);
	} else if (w && cwin) {
		struct hnode *x = hnode_get(h, node, 0);
		for (size_t i = 0; x && i < x->ncw; i++)
			if (strcmp(x->cw[i].key, key) == 0) {
				x->cw[i].used = ++h->tick;
				break;
			}
	}
	return w;
}

/* The keys a report touched, to undo its window entries when its write fails. */
struct touched {
	char **keys;
	size_t n, cap;
	char **faults; /* job faults it declared */
	size_t nfaults, capf;
	char **opened; /* breakers it opened */
	size_t nopened, capo;
	char **dopened; /* dry-run breakers it marked as would-open */
	size_t ndopened, capd;
};

static void touched_add(char ***arr, size_t *n, size_t *cap, const char *key)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*arr)[i], key) == 0)
			return;
	ALLOC_GROW(*arr, *n + 1, *cap);
	(*arr)[(*n)++] = xstrdup(key);
}

static void touched_release(struct touched *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->keys[i]);
	for (size_t i = 0; i < t->nfaults; i++)
		free(t->faults[i]);
	for (size_t i = 0; i < t->nopened; i++)
		free(t->opened[i]);
	for (size_t i = 0; i < t->ndopened; i++)
		free(t->dopened[i]);
	free(t->keys);
	free(t->faults);
	free(t->opened);
	free(t->dopened);
	memset(t, 0, sizeof(*t));
}

static void window_add(struct health *h, struct touched *t, const char *key, int64_t at,
		       const char *tag, uint64_t seq)
{
	health_window_add(window_get(h, key, 1), at, tag, seq);
	if (t)
		touched_add(&t->keys, &t->n, &t->cap, key);
}

static void breakers_gauge(struct health *h)
{
	metric_set(h->m_breakers, NULL, (double)health_breakers_count(h->breakers));
}

/* Under h->mu: undoes what report seq added. */
static void undo(struct health *h, struct touched *t, uint64_t seq)
{
	for (size_t i = 0; i < t->n; i++) {
		struct health_window *w = window_get(h, t->keys[i], 0);
		if (w)
			health_window_undo(w, seq);
	}
	for (size_t i = 0; i < t->nfaults; i++) {
		struct jobfault *f = hmap_get(&h->jobfaults, t->faults[i]);
		if (f && f->seq == seq)
			free(hmap_remove(&h->jobfaults, t->faults[i]));
	}
	for (size_t i = 0; i < t->nopened; i++)
		health_breakers_remove(h->breakers, t->opened[i]);
	for (size_t i = 0; i < t->ndopened; i++)
		free(hmap_remove(&h->dry_breakers, t->dopened[i]));
	breakers_gauge(h);
	touched_release(t);
}

/* ---------------------------------------------------------------- evaluation */

/* What one report does to its node and what it writes besides the event documents. */
struct outcome {
	int hold;       /* place the health hold + remediation */
	size_t hold_ev; /* index of the event that did */
	size_t start_rung;
	enum remediation_rung ladder[RUNG__COUNT];
	size_t nladder;
	char hold_reason[256];
	char rem_reason[512];
	int suppressed;       /* a live decision was suppressed by an open breaker */
	size_t suppressed_ev; /* index of the (first) suppressed event */
	char suppressed_by[192];
	int node_remediating;
	/* extra documents and events, built under the lock */
	json_t *extra_events; /* array of {type, reason, object, message} */
	json_t *breaker_docs; /* array of breaker documents to write */
	size_t evidence[REMEDIATION_MAX_EVENTS];
	size_t nevidence;
};

static void extra_event(struct outcome *o, const char *type, const char *reason, const char *object,
			const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void extra_event(struct outcome *o, const char *type, const char *reason, const char *object,
			const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(o->extra_events,
			      json_pack("{s:s, s:s, s:s, s:o}", "type", type, "reason", reason,
					"object", object, "message", jsonx_string_lossy(msg)));
}

/* 1 when a health hold may be placed on n in its phase (never-served and retiring nodes are
 * recorded only). */
static int node_holdable(const struct node *n, char *why, size_t whylen)
{
	switch (n->phase) {
	case PHASE_ENROLLED:
	case PHASE_INSPECTING:
	case PHASE_PROVISIONING:
		snprintf(why, whylen, "node is %s and has never served: recorded, no hold",
			 node_phase_name(n->phase));
		return 0;
	case PHASE_RETIRING:
	case PHASE_RETIRED:
		snprintf(why, whylen, "node is %s: recorded, no hold", node_phase_name(n->phase));
		return 0;
	case PHASE_VALIDATING:
		if (!n->served_at) {
			snprintf(why, whylen,
				 "node is validating and has never served: recorded, no hold");
			return 0;
		}
		return 1;
	default: return 1;
	}
}

static void ladder_text(const enum remediation_rung *l, size_t n, char *out, size_t len)
{
	size_t w = 0;
	out[0] = 0;
	for (size_t i = 0; i < n && w < len; i++) {
		int k = snprintf(out + w, len - w, "%s%s", i ? " > " : "", rung_names[l[i]]);
		if (k < 0)
			break;
		w += (size_t)k;
	}
	if (!n)
		snprintf(out, len, "none (a human looks)");
}

/* skip callback of health_window_distinct_if: a job already declared a job fault for the
 * code (live ones; dry-run ones too while deciding in dry run) is not an unrelated job. */
struct jf_skip {
	struct health *h;
	const char *code;
	int dry;
};

static int jobfault_skip(const char *tag, void *arg)
{
	struct jf_skip *s = arg;
	char fkey[HEALTH_CODE_MAX + 80];
	snprintf(fkey, sizeof(fkey), "%s|%s", s->code, tag);
	const struct jobfault *f = hmap_get(&s->h->jobfaults, fkey);
	return f && (!f->dry || s->dry);
}

/* Replaces (or adds) the breaker document named like doc in o->breaker_docs (a copy). */
static void breaker_doc_out(struct outcome *o, const json_t *doc)
{
	const char *name = jsonx_str(doc, "metadata.name");
	size_t i;
	json_t *x;
	json_array_foreach(o->breaker_docs, i, x)
		if (strcmp(jsonx_str(x, "metadata.name"), name) == 0) {
			json_array_set_new(o->breaker_docs, i, json_deep_copy(doc));
			return;
		}
	json_array_append_new(o->breaker_docs, json_deep_copy(doc));
}

/* Under h->mu: records the suppressed (node, event) in open breaker bname's document
 * ("suppressed", at most BREAKER_MAX_SUPPRESSED; past that "suppressedDropped" counts) and
 * queues the document for the report's transaction. */
static void breaker_note(struct health *h, const char *bname, const char *node,
			 const struct rep_ev *e, int64_t now, struct outcome *o)
{
	json_t *doc = health_breakers_note(h->breakers, bname, node, e->id, e->code,
					   e->bus ? e->bus_lc : NULL, now);
	if (!doc)
		return;
	breaker_doc_out(o, doc);
	json_decref(doc);
}

static int entry_older(const void *a, const void *b)
{
	const struct health_window_entry *x = *(const struct health_window_entry *const *)a,
					 *y = *(const struct health_window_entry *const *)b;
	return x->at < y->at ? -1 : x->at > y->at ? 1 : strcmp(x->tag, y->tag);
}

/* Distinct nodes within bw of the breaker window key (one entry per node by
 * health_window_touch) and, for a dry-run decision, of the dry-run window dkey (nodes not in the
 * live one). When list is not NULL and the count is over limit, the nodes oldest first,
 * comma-separated (truncated to listlen). Linear in the window sizes plus a sort. */
static int breaker_nodes(struct health *h, const char *key, const char *dkey, int64_t now,
			 int64_t bw, int limit, char *list, size_t listlen)
{
	const struct health_window *lw = window_get(h, key, 0);
	const struct health_window *dw = dkey ? window_get(h, dkey, 0) : NULL;
	size_t cap = (lw ? lw->n : 0) + (dw ? dw->n : 0);
	const struct health_window_entry **in = xcalloc(cap ? cap : 1, sizeof(*in));
	size_t n = 0;
	struct hmap live;
	hmap_init(&live);
	for (size_t i = 0; lw && i < lw->n; i++)
		if (lw->e[i].at > now - bw && lw->e[i].at <= now && lw->e[i].tag[0]) {
			in[n++] = &lw->e[i];
			if (dw)
				hmap_put(&live, lw->e[i].tag, (void *)&lw->e[i]);
		}
	for (size_t i = 0; dw && i < dw->n; i++)
		if (dw->e[i].at > now - bw && dw->e[i].at <= now && dw->e[i].tag[0] &&
		    !hmap_get(&live, dw->e[i].tag)) {
			in[n++] = &dw->e[i];
			hmap_put(&live, dw->e[i].tag, (void *)&dw->e[i]);
		}
	hmap_release(&live);
	if (list && listlen)
		list[0] = 0;
	if (list && listlen && (int)n > limit) {
		qsort(in, n, sizeof(*in), entry_older);
		size_t len = 0;
		for (size_t i = 0; i < n && len + 1 < listlen; i++) {
			int k = snprintf(list + len, listlen - len, "%s%s", i ? ", " : "",
					 in[i]->tag);
			if (k < 0)
				break;
			len += (size_t)k;
			if (len >= listlen)
				len = listlen - 1;
		}
	}
	free(in);
	return (int)n;
}

/* Decides every new event of the report, in order, under h->mu. n is the node as read. */
static void evaluate(struct health *h, const char *node, const struct node *n, struct rep *r,
		     int64_t now, uint64_t seq, struct touched *t, struct outcome *o)
{
	const struct health_policy *p = h->policy;
	/* A node already holding a health hold is being remediated (or is in a human's hands
	 * when its rule has no ladder): further events are evidence, never a second ladder. */
	o->node_remediating = node_hold_find(n, "health") != NULL;
	char key[STORE_MAX_KEY + 160];
	for (size_t i = 0; i < r->nev; i++) {
		struct rep_ev *e = &r->ev[i];
		snprintf(key, sizeof(key), "%s/%s", node, e->id);
		if (hmap_get(&h->seen, key)) {
			e->dup = 1;
			continue;
		}
		e->dry = p->dry_run;
		int64_t at = now; /* windows count by receipt: agent clocks may drift */
		const struct health_rule *rule = health_rule_find(p, e->code);
		struct health_rule unknown;
		if (!rule) {
			memset(&unknown, 0, sizeof(unknown));
			snprintf(unknown.code, sizeof(unknown.code), "other");
			unknown.severity = SEV_WARNING;
			unknown.action = HEALTH_ACTION_NONE;
			unknown.count = 1;
			unknown.window_s = 3600;
			rule = &unknown;
		}
		snprintf(e->rule_code, sizeof(e->rule_code), "%s", rule->code);
		e->sev = rule->severity;
		const char *job = e->job;
		int64_t wms = rule->window_s * SEC;
		if (!wms)
			wms = 1;
		char gpu_txt[40];
		snprintf(gpu_txt, sizeof(gpu_txt), "%s", e->gpu[0] ? e->gpu : "-");
		/* The fence: a validated remediation of this node (and GPU) restarts the count. */
		e->fence = health_fence(n, e->bus ? e->bus_lc : NULL);
		char fence_ts[FP_TIME_LEN] = "-";
		if (e->fence)
			fp_time_format(e->fence, fence_ts);
		int64_t cwms = wms;
		if (e->fence && now - e->fence + 1 < cwms)
			cwms = now - e->fence + 1; /* entries received at or after the fence */
		if (cwms < 1)
			cwms = 1;
		int stale = health_stale(e->time, e->fence);
		/* N of M on this node+GPU+code; the tag is the job (for distinctJobs). A stale
		 * event is evidence only and never enters the window. */
		snprintf(key, sizeof(key), "c|%s|%s|%s", node, e->gpu, e->code);
		if (!stale)
			window_add(h, t, key, at, job && rule->distinct_jobs ? job : "", seq);
		struct health_window *cw = window_get(h, key, 0);
		int count = cw ? health_window_count(cw, now, cwms) : 0;
		char joblist[200] = "";
		struct jf_skip js = {h, e->code, e->dry};
		int jobs = cw ? health_window_distinct_if(cw, now, cwms, now - cwms, jobfault_skip,
							  &js, joblist, sizeof(joblist))
			      : 0;
		char inputs[448];
		snprintf(
			inputs, sizeof(inputs),
			"code=%s severity=%s rule=%s gpu=%s job=%s count=%d window=%llds threshold=%d distinctJobs=%d/%d fence=%s",
			e->code, health_severity_name(e->sev), rule->code, gpu_txt, job ? job : "-",
			count, (long long)rule->window_s, rule->count, jobs, rule->distinct_jobs,
			fence_ts);
		/* The decision is health_verdict's (core/health.h); what follows keeps the windows,
		 * job faults and breakers it asks about and renders its answer. */
		char why[160];
		struct health_facts facts = {.policy = p,
					     .rule = rule,
					     .unknown_rule = rule == &unknown,
					     .event_ms = e->time,
					     .fence_ms = e->fence,
					     .job = job != NULL,
					     .count = count,
					     .jobs = jobs,
					     .holdable = node_holdable(n, why, sizeof(why)),
					     .remediating = o->node_remediating || o->hold};
		struct health_verdict v;
		health_verdict(&facts, &v);
		if (v.decision == HEALTH_DECISION_NONE && v.basis != HEALTH_BASIS_NOT_HOLDABLE) {
			e->action = "none";
			snprintf(e->reason, sizeof(e->reason), "%s %s: %s",
				 health_severity_name(e->sev), e->code,
				 v.basis == HEALTH_BASIS_NO_RULE
					 ? "no rule for this code: recorded and counted, never held"
					 : "the rule takes no node action");
			snprintf(e->audit, sizeof(e->audit), "%s -> none%s", inputs,
				 e->dry ? " (dry run)" : "");
			continue;
		}
		if (v.basis == HEALTH_BASIS_STALE) {
			char ets[FP_TIME_LEN];
			fp_time_format(e->time, ets);
			e->action = "count";
			snprintf(
				e->reason, sizeof(e->reason),
				"%s on GPU %s: stale: seen at %s, before the remediation that succeeded at %s; recorded as evidence only",
				e->code, gpu_txt, ets, fence_ts);
			snprintf(e->audit, sizeof(e->audit), "%s time=%s -> count (stale)%s",
				 inputs, ets, e->dry ? " (dry run)" : "");
			continue;
		}
		/* Job attribution: the same (code, job) on many nodes is the job's fault. */
		if (v.decision == HEALTH_DECISION_NEED_JOB) {
			char fkey[HEALTH_CODE_MAX + REPORT_MAX_ID + 2];
			snprintf(fkey, sizeof(fkey), "%s|%s", e->code, job);
			snprintf(key, sizeof(key), "j|%s|%s", e->code, job);
			struct health_window *jw = window_get(h, key, 0);
			if (!jw ||
			    !health_window_has(jw, now, p->job_attribution.window_s * SEC, node))
				window_add(h, t, key, at, node, seq);
			jw = window_get(h, key, 0);
			struct jobfault *f = hmap_get(&h->jobfaults, fkey);
			if (f && f->dry && !e->dry)
				f = NULL; /* a dry-run verdict: decide again */
			int nodes = health_window_distinct(jw, now,
							   p->job_attribution.window_s * SEC);
			if (!f && nodes >= p->job_attribution.min_nodes) {
				f = hmap_get(&h->jobfaults, fkey);
				if (!f) {
					f = xcalloc(1, sizeof(*f));
					f->seq = seq;
					hmap_put(&h->jobfaults, fkey, f);
					touched_add(&t->faults, &t->nfaults, &t->capf, fkey);
				}
				f->dry = e->dry;
				char list[512];
				health_window_tags(jw, now, p->job_attribution.window_s * SEC, list,
						   sizeof(list));
				char object[96];
				snprintf(object, sizeof(object), "job/%s", job);
				extra_event(
					o, "Warning", "JobFault", object,
					"%s from job %s on %d nodes within %lld s (%s): the job's fault, no node action%s",
					e->code, job, nodes, (long long)p->job_attribution.window_s,
					list, e->dry ? " (dry run)" : "");
			}
			facts.job_known = 1;
			facts.job_fault = f != NULL;
			health_verdict(&facts, &v);
			if (v.decision == HEALTH_DECISION_JOB_FAULT) {
				f->at = now;
				e->action = "job_fault";
				snprintf(
					e->reason, sizeof(e->reason),
					"%s from job %s is on %d nodes within %lld s: the job's fault, no node action",
					e->code, job, nodes,
					(long long)p->job_attribution.window_s);
				snprintf(e->audit, sizeof(e->audit), "%s nodes=%d -> job_fault%s",
					 inputs, nodes, e->dry ? " (dry run)" : "");
				continue;
			}
		}
		int by_jobs = v.by_jobs;
		char tally[320];
		if (by_jobs)
			snprintf(tally, sizeof(tally), "%d of %d distinct jobs within %lld s (%s)",
				 jobs, rule->distinct_jobs, (long long)rule->window_s,
				 jobs ? joblist : "none");
		else
			snprintf(tally, sizeof(tally), "%d of %d within %lld s", count, rule->count,
				 (long long)rule->window_s);
		if (v.basis == HEALTH_BASIS_BELOW) {
			e->action = "count";
			snprintf(e->reason, sizeof(e->reason), "%s on GPU %s: %s", e->code, gpu_txt,
				 tally);
			snprintf(e->audit, sizeof(e->audit), "%s -> count%s", inputs,
				 e->dry ? " (dry run)" : "");
			continue;
		}
		if (v.basis == HEALTH_BASIS_NOT_HOLDABLE) {
			e->action = "none";
			snprintf(e->reason, sizeof(e->reason), "%s on GPU %s: %s", e->code, gpu_txt,
				 why);
			snprintf(e->audit, sizeof(e->audit), "%s phase=%s -> none%s", inputs,
				 node_phase_name(n->phase), e->dry ? " (dry run)" : "");
			continue;
		}
		if (v.basis == HEALTH_BASIS_REMEDIATING) {
			e->action = "count";
			snprintf(
				e->reason, sizeof(e->reason),
				"%s on GPU %s: threshold met while a remediation is in progress (%s): recorded as evidence",
				e->code, gpu_txt,
				o->hold ? r->ev[o->hold_ev].code
					: (n->remediation.code ? n->remediation.code : "?"));
			snprintf(e->audit, sizeof(e->audit),
				 "%s remediation=in-progress -> count%s", inputs,
				 e->dry ? " (dry run)" : "");
			if (o->nevidence < REMEDIATION_MAX_EVENTS)
				o->evidence[o->nevidence++] = i;
			continue;
		}
		/* v.decision is HEALTH_DECISION_NEED_BREAKER here (every other answer continued).
		 * Correlated-failure breaker, per domain value of the node. Live decisions use the
		 * live windows and breakers only; a dry-run decision sees them plus its own dry-run
		 * window and would-open breakers, so it reports what the live policy would do
		 * without ever entering what live decisions read. */
		const char *open_by = NULL;
		char bstate[224] = "closed", bname[160] = "";
		for (size_t d = 0; p->breaker.enabled && d < p->breaker.ndomains && !open_by; d++) {
			const char *dom = p->breaker.domains[d];
			const char *val = node_domain_value(n, dom);
			if (!val)
				continue;
			int limit = p->breaker.domain_max[d] > 0 ? p->breaker.domain_max[d]
								 : p->breaker.max_nodes;
			snprintf(bname, sizeof(bname), "%s.%s", dom, val);
			if (health_breakers_has(h->breakers, bname) ||
			    (e->dry && hmap_get(&h->dry_breakers, bname))) {
				open_by = dom;
				snprintf(bstate, sizeof(bstate), "open(%s)", bname);
				break;
			}
			char dkey[STORE_MAX_KEY + 8];
			snprintf(key, sizeof(key), "b|%s", bname);
			snprintf(dkey, sizeof(dkey), "bd|%s", bname);
			int64_t bw = p->breaker.window_s * SEC;
			const char *mine = e->dry ? dkey : key;
			/* One entry per node at its newest hold-worthy decision, and room for
			 * every node a valid limit needs (HEALTH_BREAKER_WINDOW_MAX). */
			health_window_touch(window_get(h, mine, 1), at, node, seq,
					    HEALTH_BREAKER_WINDOW_MAX);
			touched_add(&t->keys, &t->n, &t->cap, mine);
			char list[600];
			int nodes = breaker_nodes(h, key, e->dry ? dkey : NULL, now, bw, limit,
						  list, sizeof(list));
			if (nodes <= limit)
				continue;
			char rsn[900];
			snprintf(
				rsn, sizeof(rsn),
				"%d nodes of %s %s had hold-worthy health events within %lld s (more than %d): %s; suspect the detector or a shared dependency",
				nodes, dom, val, (long long)p->breaker.window_s, limit, list);
			open_by = dom;
			if (e->dry) {
				int *one = xmalloc(sizeof(*one));
				*one = 1;
				free(hmap_put(&h->dry_breakers, bname, one));
				touched_add(&t->dopened, &t->ndopened, &t->capd, bname);
				snprintf(bstate, sizeof(bstate), "would-open(%s)", bname);
				extra_event(
					o, "Normal", "CorrelatedFailureBreakerOpen",
					"policy/default",
					"%s (dry run: the breaker %s would open; nothing is suppressed)",
					rsn, bname);
				break;
			}
			struct health_window *w = window_get(h, key, 0);
			json_t *nodes_arr = json_array();
			for (size_t k = 0; w && k < w->n; k++) /* one entry per node */
				if (w->e[k].at > now - bw && w->e[k].at <= now)
					json_array_append_new(nodes_arr, json_string(w->e[k].tag));
			health_breakers_open(h->breakers, bname, dom, val, nodes_arr, rsn, now);
			touched_add(&t->opened, &t->nopened, &t->capo, bname);
			char object[200];
			snprintf(object, sizeof(object), "breaker/%s", bname);
			extra_event(
				o, "Warning", "CorrelatedFailureBreakerOpen", object,
				"%s; automatic health holds and actions in %s %s are suppressed until POST /v1/breakers/%s:reset",
				rsn, dom, val, bname);
			breakers_gauge(h);
			snprintf(bstate, sizeof(bstate), "opened(%s)", bname);
		}
		/* The lemon score picks the first rung of a hold (reads only). */
		snprintf(key, sizeof(key), "h|%s", node);
		struct health_window *hw = window_get(h, key, 0);
		int64_t newest = 0;
		for (size_t k = 0; k < n->nremediation_history; k++)
			if (n->remediation_history[k].at > newest)
				newest = n->remediation_history[k].at;
		int extra = 0;
		for (size_t k = 0; hw && k < hw->n; k++)
			extra += hw->e[k].at > newest &&
				 hw->e[k].at > now - p->lemon.window_s * SEC && hw->e[k].at <= now;
		struct health_lemon lm;
		health_lemon_score(p, n, e->gpu[0] && e->bus ? e->bus_lc : NULL, extra, now, &lm);
		facts.breaker_known = 1;
		facts.breaker_open = open_by != NULL;
		facts.lemon = &lm;
		health_verdict(&facts, &v);
		if (v.decision == HEALTH_DECISION_SUPPRESSED) {
			e->action = "suppressed";
			if (!e->dry) {
				if (!o->suppressed) {
					o->suppressed_ev = i;
					snprintf(o->suppressed_by, sizeof(o->suppressed_by), "%s",
						 bname);
				}
				o->suppressed = 1;
				breaker_note(h, bname, node, e, now, o);
			}
			snprintf(
				e->reason, sizeof(e->reason),
				e->dry ? "%s on GPU %s: hold suppressed (dry run), correlated-failure breaker %s would be open"
				       : "%s on GPU %s: hold suppressed, correlated-failure breaker %s is open",
				e->code, gpu_txt, bname);
			snprintf(e->audit, sizeof(e->audit), "%s breaker=%s -> suppressed%s",
				 inputs, bstate, e->dry ? " (dry run)" : "");
			continue;
		}
		/* Hold (v.decision is HEALTH_DECISION_HOLD). */
		o->nladder = rule->nladder;
		memcpy(o->ladder, rule->ladder, sizeof(o->ladder));
		o->start_rung = v.start_rung;
		char lad[96];
		ladder_text(rule->ladder, rule->nladder, lad, sizeof(lad));
		e->action = "hold";
		if (!e->dry) {
			o->hold = 1;
			o->hold_ev = i;
			window_add(h, t, key, at, e->gpu, seq);
			if (o->nevidence < REMEDIATION_MAX_EVENTS)
				o->evidence[o->nevidence++] = i;
		}
		const char *start = rule->nladder ? rung_names[rule->ladder[o->start_rung]] : "-";
		if (by_jobs)
			snprintf(o->hold_reason, sizeof(o->hold_reason),
				 "%s on GPU %s: %d distinct jobs in %lld s (threshold %d)", e->code,
				 gpu_txt, jobs, (long long)rule->window_s, rule->distinct_jobs);
		else
			snprintf(o->hold_reason, sizeof(o->hold_reason),
				 "%s on GPU %s: %d in %lld s (threshold %d)", e->code, gpu_txt,
				 count, (long long)rule->window_s, rule->count);
		snprintf(e->reason, sizeof(e->reason), "%s %s on GPU %s: %s; hold, %s%s",
			 health_severity_name(e->sev), e->code, gpu_txt, tally,
			 rule->nladder ? "remediation starts at " : "no automatic remediation",
			 rule->nladder ? start : "");
		snprintf(o->rem_reason, sizeof(o->rem_reason), "%s", e->reason);
		snprintf(e->audit, sizeof(e->audit),
			 "%s lemon=node:%d,gpu:%d%s breaker=%s ladder=%s start=%s -> hold%s",
			 inputs, lm.node_score, lm.gpu_score, lm.recurred ? ",recurred" : "",
			 bstate, lad, start, e->dry ? " (dry run: nothing held)" : "");
	}
}

/* ---------------------------------------------------------------- node changes */

static char *sanitize(const char *s);

/* 1 when n's GPUHealthy is the durable False/HoldSuppressed mark (see apply_node). */
static int hold_suppressed_mark(const struct node *n)
{
	const struct node_condition *g = node_condition_get(n, "GPUHealthy");
	return g && g->status == COND_FALSE && g->reason &&
	       strcmp(g->reason, "HoldSuppressed") == 0;
}

/* DetectorsLive, and GPUHealthy Unknown/True while no health hold is placed (and no
 * suppressed hold is marked). Returns 1 if anything changed. */
static int detectors_conditions(struct node *n, const struct rep *r, int64_t now, int holding)
{
	int changed = 0;
	if (!r->has_detectors)
		return 0;
	char dead[512] = "", unk[256] = "", bad[700] = "";
	size_t wd = 0, wu = 0, wb = 0;
	int live_configured = 0;
	for (size_t i = 0; i < r->ndet; i++) {
		const struct rep_det *d = &r->det[i];
		if (!d->live && wd < sizeof(dead)) {
			int k = snprintf(dead + wd, sizeof(dead) - wd, "%s%s (%s)", wd ? ", " : "",
					 d->name, d->reason ? d->reason : "not live");
			if (k > 0)
				wd += (size_t)k;
		}
		int configured = !(d->reason && strcmp(d->reason, "NotConfigured") == 0);
		live_configured += d->live && configured;
		if (strcmp(d->status, "unhealthy") == 0 && wb < sizeof(bad)) {
			/* The detector's message is the agent's text: at most 200 bytes of it,
			 * sanitized when the node document is rendered like every condition. */
			int k = snprintf(bad + wb, sizeof(bad) - wb, "%s%s%s%.200s%s",
					 wb ? "; " : "", d->name, d->message ? " (" : "",
					 d->message ? d->message : "", d->message ? ")" : "");
			if (k > 0)
				wb += (size_t)k;
			if (wb >= sizeof(bad))
				wb = sizeof(bad) - 1;
		}
		if (strcmp(d->status, "unknown") == 0 && configured && wu < sizeof(unk)) {
			int k = snprintf(unk + wu, sizeof(unk) - wu, "%s%s", wu ? ", " : "",
					 d->name);
			if (k > 0)
				wu += (size_t)k;
		}
	}
	if (wd)
		changed |= node_condition_set(n, "DetectorsLive", COND_FALSE, "DetectorDown", dead,
					      now);
	else
		changed |= node_condition_set(n, "DetectorsLive", COND_TRUE, "AllLive",
					      "every detector the agent runs is live", now);
	if (holding || hold_suppressed_mark(n))
		return changed;
	const struct node_condition *g = node_condition_get(n, "GPUHealthy");
	if (!live_configured) {
		char msg[600];
		snprintf(msg, sizeof(msg), "%s%s",
			 wd ? "no configured detector is live: " : "the agent reports no detector",
			 dead);
		return changed | node_condition_set(n, "GPUHealthy", COND_UNKNOWN, "NoLiveDetector",
						    msg, now);
	}
	if (wb) {
		/* No rule of the findings called for a hold (or they are counting towards one):
		 * the GPUs are not vouched for either. */
		char msg[900];
		snprintf(msg, sizeof(msg),
			 "status unhealthy from: %s; no health hold (see the node's health events)",
			 bad);
		char *clean = sanitize(msg);
		changed |= node_condition_set(n, "GPUHealthy", COND_UNKNOWN, "DetectorUnhealthy",
					      clean, now);
		free(clean);
		return changed;
	}
	if (wu) {
		char msg[320];
		snprintf(msg, sizeof(msg), "status unknown from: %s", unk);
		return changed | node_condition_set(n, "GPUHealthy", COND_UNKNOWN,
						    "DetectorUnknown", msg, now);
	}
	int all_ok = 1;
	for (size_t i = 0; i < r->ndet; i++)
		if (strcmp(r->det[i].status, "ok") != 0 &&
		    !(r->det[i].reason && strcmp(r->det[i].reason, "NotConfigured") == 0))
			all_ok = 0;
	if (all_ok && (!g || g->status == COND_UNKNOWN))
		changed |= node_condition_set(n, "GPUHealthy", COND_TRUE, "DetectorsOk",
					      "every configured detector reports ok", now);
	return changed;
}

static void rem_clear(struct node_remediation *m)
{
	free(m->code);
	free(m->gpu);
	free(m->reason);
	free(m->policy);
	for (size_t i = 0; i < m->nevents; i++)
		free(m->events[i]);
	free(m->rma);
	memset(m, 0, sizeof(*m));
}

/* Places the health hold on n with status.remediation (when the ladder has rungs), GPUHealthy
 * False/HealthHold and no HealthActionsSuppressed. events: "<node>.<id>" evidence names. */
static void place_hold(struct node *n, const char *code, const char *bus,
		       const enum remediation_rung *ladder, size_t nladder, size_t start,
		       const char *hold_reason, const char *rem_reason, const char *policy,
		       char *const *events, size_t nevents, int64_t now)
{
	node_hold_add(n, "health", hold_reason, now, 0);
	if (nladder) {
		rem_clear(&n->remediation);
		struct node_remediation *m = &n->remediation;
		m->active = 1;
		memcpy(m->ladder, ladder, sizeof(m->ladder));
		m->nladder = nladder;
		m->rung = start;
		m->attempts = 0;
		m->code = xstrdup(code);
		m->gpu = bus ? xstrdup(bus) : NULL;
		m->reason = xstrdup(rem_reason);
		m->policy = xstrdup(policy);
		for (size_t i = 0; i < nevents && m->nevents < REMEDIATION_MAX_EVENTS; i++)
			m->events[m->nevents++] = xstrdup(events[i]);
		m->since = now;
	}
	node_condition_set(n, "GPUHealthy", COND_FALSE, "HealthHold", hold_reason, now);
	node_condition_remove(n, "HealthActionsSuppressed");
}

/* Applies the report's outcome to n (a fresh copy of the node). agent: the report was made
 * with the node's agent token (only then is AgentAlive set). watched: a heartbeating agent of
 * the node is being watched (a report with intervalSeconds 0 - an agent run once - then leaves
 * AgentAlive to it). Returns 1 if n changed. */
static int apply_node(struct health *h, struct node *n, const char *node, const struct rep *r,
		      const struct outcome *o, int64_t now, int agent, int watched)
{
	int changed = 0;
	char msg[160];
	if (agent && r->interval > 0) {
		snprintf(msg, sizeof(msg), "agent %s reports every %lld s",
			 r->version ? r->version : "?", (long long)r->interval);
		changed |= node_condition_set(n, "AgentAlive", COND_TRUE, "Heartbeat", msg, now);
	} else if (agent && !watched) {
		snprintf(msg, sizeof(msg),
			 "agent %s reported once (intervalSeconds 0: it does not heartbeat)",
			 r->version ? r->version : "?");
		changed |= node_condition_set(n, "AgentAlive", COND_TRUE, "Report", msg, now);
	}
	int remediating = node_hold_find(n, "health") != NULL;
	if (o->hold && !remediating) {
		const struct rep_ev *e = &r->ev[o->hold_ev];
		char *evs[REMEDIATION_MAX_EVENTS];
		for (size_t i = 0; i < o->nevidence; i++)
			evs[i] = xasprintf("%s.%s", node, r->ev[o->evidence[i]].id);
		place_hold(n, e->code, e->bus ? e->bus_lc : NULL, o->ladder, o->nladder,
			   o->start_rung, o->hold_reason, o->rem_reason,
			   h->policy->name ? h->policy->name : "default", evs, o->nevidence, now);
		for (size_t i = 0; i < o->nevidence; i++)
			free(evs[i]);
		changed = 1;
	} else if (remediating && n->remediation.active && o->nevidence) {
		/* More evidence for the remediation in progress. */
		for (size_t i = 0;
		     i < o->nevidence && n->remediation.nevents < REMEDIATION_MAX_EVENTS; i++) {
			n->remediation.events[n->remediation.nevents++] =
				xasprintf("%s.%s", node, r->ev[o->evidence[i]].id);
			changed = 1;
		}
	}
	if (o->suppressed && !node_hold_find(n, "health")) {
		/* Durable: stays after the breaker reset until a hold is placed or a validated
		 * remediation sets GPUHealthy True, so a suppressed fault is never forgotten. */
		const struct rep_ev *e = &r->ev[o->suppressed_ev];
		char gm[400];
		snprintf(
			gm, sizeof(gm),
			"%s on GPU %s (event %s.%s): hold suppressed by correlated-failure breaker %s",
			e->code, e->gpu[0] ? e->gpu : "-", node, e->id, o->suppressed_by);
		changed |= node_condition_set(n, "GPUHealthy", COND_FALSE, "HoldSuppressed", gm,
					      now);
	}
	changed |= detectors_conditions(n, r, now, node_hold_find(n, "health") != NULL);
	if (o->suppressed) {
		char sm[300];
		snprintf(sm, sizeof(sm),
			 "correlated-failure breaker %s is open: automatic health holds suppressed",
			 o->suppressed_by);
		changed |= node_condition_set(n, "HealthActionsSuppressed", COND_TRUE,
					      "BreakerOpen", sm, now);
	}
	return changed;
}

/* ---------------------------------------------------------------- documents */

/* Unicode General_Category=Cf (format characters: bidi embeddings, overrides and isolates
 * U+202A..U+202E and U+2066..U+2069, the marks U+200E/U+200F/U+061C, zero-width characters,
 * tags): they reorder or hide text on a terminal. Source: the Unicode Character Database,
 * DerivedGeneralCategory.txt, Unicode 15.0 (the 14.0 list as Python's unicodedata gives it, plus
 * U+13439..U+1343F added in 15.0). */
static const struct {
	uint32_t lo, hi;
} format_chars[] = {
	{0xAD, 0xAD},       {0x600, 0x605},     {0x61C, 0x61C},     {0x6DD, 0x6DD},
	{0x70F, 0x70F},     {0x890, 0x891},     {0x8E2, 0x8E2},     {0x180E, 0x180E},
	{0x200B, 0x200F},   {0x202A, 0x202E},   {0x2060, 0x2064},   {0x2066, 0x206F},
	{0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
	{0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
	{0xE0020, 0xE007F},
};

static int is_format_char(uint32_t cp)
{
	for (size_t i = 0; i < sizeof(format_chars) / sizeof(format_chars[0]); i++)
		if (cp >= format_chars[i].lo && cp <= format_chars[i].hi)
			return 1;
	return 0;
}

/* A copy of s (valid UTF-8, checked by jansson) for storing: C0 controls and DEL become '?',
 * and a C1 control (U+0080..U+009F) or a format character (General_Category Cf, above) one
 * '?' each, so no terminal escape sequence or bidi override reaches `fleetplane health events`
 * or a log viewer. Never longer than s. */
static char *sanitize(const char *s)
{
	size_t n = strlen(s), w = 0;
	char *out = xmalloc(n + 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
		if (i + len > n)
			len = n - i; /* not valid UTF-8 after all: copy what is left as it is */
		uint32_t cp = c;
		if (len == 2)
			cp = (uint32_t)(c & 0x1f) << 6 | ((unsigned char)s[i + 1] & 0x3f);
		else if (len == 3)
			cp = (uint32_t)(c & 0x0f) << 12 |
			     (uint32_t)((unsigned char)s[i + 1] & 0x3f) << 6 |
			     ((unsigned char)s[i + 2] & 0x3f);
		else if (len == 4)
			cp = (uint32_t)(c & 0x07) << 18 |
			     (uint32_t)((unsigned char)s[i + 1] & 0x3f) << 12 |
			     (uint32_t)((unsigned char)s[i + 2] & 0x3f) << 6 |
			     ((unsigned char)s[i + 3] & 0x3f);
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || is_format_char(cp)) {
			out[w++] = '?';
		} else {
			memcpy(out + w, s + i, len);
			w += len;
		}
		i += len;
	}
	out[w] = 0;
	return out;
}

static void set_sanitized(json_t *d, const char *key, const char *v)
{
	char *c = sanitize(v);
	json_object_set_new(d, key, jsonx_string_lossy(c));
	free(c);
}

static json_t *event_doc(const char *node, const struct rep_ev *e, int64_t received,
			 const char *policy)
{
	char ts[FP_TIME_LEN], rs[FP_TIME_LEN], name[160];
	fp_time_format(e->time ? e->time : received, ts);
	fp_time_format(received, rs);
	snprintf(name, sizeof(name), "%s.%s", node, e->id);
	json_t *d = json_pack("{s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s}", "kind", "HealthEvent",
			      "metadata", "name", name, "createdAt", rs, "node", node, "id", e->id,
			      "source", e->source, "code", e->code, "severity",
			      health_severity_name(e->sev));
	if (e->has_index || e->bus) {
		json_t *g = json_object();
		if (e->has_index)
			json_object_set_new(g, "index", json_integer(e->gpu_index));
		if (e->bus)
			json_object_set_new(g, "pciBusId", json_string(e->bus_lc));
		json_object_set_new(d, "gpu", g);
	}
	if (e->has_pid)
		json_object_set_new(d, "pid", json_integer(e->pid));
	if (e->process)
		set_sanitized(d, "process", e->process);
	if (e->job)
		json_object_set_new(d, "job", json_string(e->job));
	json_object_set_new(d, "time", json_string(ts));
	json_object_set_new(d, "receivedAt", json_string(rs));
	set_sanitized(d, "message", e->message ? e->message : "");
	if (e->raw)
		set_sanitized(d, "raw", e->raw);
	/* The decision with its inputs: the audit record of decisions that get no separate
	 * HealthDecision event (audited(), docs/health.md). */
	json_object_set_new(d, "decision",
			    json_pack("{s:s, s:b, s:s, s:s, s:s, s:s}", "action", e->action,
				      "dryRun", e->dry, "reason", e->reason, "policy", policy,
				      "rule", e->rule_code, "inputs", e->audit));
	return d;
}

/* 1 when the decision also gets a HealthDecision audit event: "hold", "suppressed" and
 * "job_fault" (each changes or withholds a node action). "none" and "count" are recorded with
 * their inputs on the health event document only: an agent can send them at will, and the
 * audit trail must not be the place where it piles them up (docs/health.md "Where each
 * decision is recorded"). */
static int audited(const struct rep_ev *e)
{
	return strcmp(e->action, "hold") == 0 || strcmp(e->action, "suppressed") == 0 ||
	       strcmp(e->action, "job_fault") == 0;
}

/* An audit event in t (objects_txn_event), its id seeded from the controller's rng. */
static void txn_event(struct health *h, struct objects_txn *t, const char *type, const char *actor,
		      const char *object, const char *reason, const char *msg, int64_t now)
{
	objects_txn_event(t, now, fp_rng_u64(h->cfg.rng), type, actor, object, reason, msg);
}

static int load_node(struct health *h, const char *name, struct node **out, char *err,
		     size_t errlen)
{
	*out = NULL;
	if (name_validate("node", name, err, errlen) < 0)
		return FP_EINVAL;
	return objects_store_node(h->cfg.store, name, out, NULL, err, errlen);
}

/* ---------------------------------------------------------------- report */

int health_report(struct health *h, const char *node, const char *actor, const json_t *report,
		  int64_t received_ms, json_t **result, char *err, size_t errlen)
{
	struct rep r;
	memset(&r, 0, sizeof(r));
	*result = NULL;
	int rc = health_parse_report(report, &r, err, errlen);
	if (rc < 0) {
		free(r.ev);
		return rc;
	}
	struct node *n = NULL;
	int64_t now = received_ms;
	/* Only the node's agent claims an agent is alive; an operator's report records events. */
	int agent = actor && strncmp(actor, "agent:", 6) == 0;
	for (int attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
		node_free(n);
		n = NULL;
		if ((rc = load_node(h, node, &n, err, errlen)) < 0)
			break;
		struct touched t = {0};
		struct outcome o = {0};
		o.extra_events = json_array();
		o.breaker_docs = json_array();
		for (size_t i = 0; i < r.nev; i++) {
			struct rep_ev *e = &r.ev[i];
			e->dup = 0;
			e->holds = 0;
			e->action = "none";
			e->reason[0] = e->audit[0] = 0;
		}
		pthread_mutex_lock(&h->mu);
		uint64_t seq = ++h->seq;
		char policy_name[64];
		snprintf(policy_name, sizeof(policy_name), "%s",
			 h->policy->name ? h->policy->name : "default");
		evaluate(h, node, n, &r, now, seq, &t, &o);
		const struct alive *wa = hmap_get(&h->alive, node);
		int watched = wa && !wa->missed;
		pthread_mutex_unlock(&h->mu);

		/* Build the transaction. */
		struct objects_txn tx;
		objects_txn_init(&tx);
		size_t first_event = 0, nnew = 0;
		for (size_t i = 0; i < r.nev; i++) {
			struct rep_ev *e = &r.ev[i];
			if (e->dup)
				continue;
			if (!nnew)
				first_event = tx.n;
			nnew++;
			json_t *d = event_doc(node, e, received_ms, policy_name);
			objects_txn_put(&tx, xasprintf("/healthevents/%s/%s", node, e->id),
					jsonx_dumps(d), STORE_ABSENT);
			json_decref(d);
		}
		struct node *m = node_dup(n);
		m->resource_version = n->resource_version;
		int changed = apply_node(h, m, node, &r, &o, now, agent, watched);
		size_t node_op = (size_t)-1;
		if (changed) {
			node_op = tx.n;
			json_t *nj = node_to_json(m, NODE_JSON_STORE);
			objects_txn_put(&tx, objects_key_node_dup(node), jsonx_dumps(nj),
					n->resource_version);
			json_decref(nj);
		}
		char object[96];
		snprintf(object, sizeof(object), "node/%s", node);
		for (size_t i = 0; i < r.nev; i++) {
			const struct rep_ev *e = &r.ev[i];
			if (e->dup || !audited(e))
				continue;
			char msg[1300];
			snprintf(msg, sizeof(msg), "health event %s.%s: %s", node, e->id, e->audit);
			txn_event(h, &tx,
				  strcmp(e->action, "hold") == 0 && !e->dry ? "Warning" : "Normal",
				  ACTOR, object, "HealthDecision", msg, now);
		}
		size_t k;
		json_t *x;
		json_array_foreach(o.extra_events, k, x)
			txn_event(h, &tx, jsonx_str(x, "type"), ACTOR, jsonx_str(x, "object"),
				  jsonx_str(x, "reason"), jsonx_str(x, "message"), now);
		json_array_foreach(o.breaker_docs, k, x)
			objects_txn_put(&tx,
					xasprintf("/breakers/%s", jsonx_str(x, "metadata.name")),
					jsonx_dumps(x), STORE_ANY);
		size_t failed = 0;
		rc = tx.n ? store_txn(h->cfg.store, tx.ops, tx.n, NULL, &failed) : 0;
		int64_t committed = clock_wall_ms(h->cfg.clock);
		objects_txn_release(&tx);
		node_free(m);
		json_decref(o.extra_events);
		json_decref(o.breaker_docs);
		pthread_mutex_lock(&h->mu);
		if (rc == 0) {
			for (size_t i = 0; i < r.nev; i++)
				if (!r.ev[i].dup)
					seen_add(h, node, r.ev[i].id, received_ms);
			/* intervalSeconds 0: no heartbeat to watch (an existing watch stays). */
			int beats = agent && r.interval > 0;
			struct alive *al = beats ? hmap_get(&h->alive, node) : NULL;
			if (beats && !al) {
				al = xcalloc(1, sizeof(*al));
				hmap_put(&h->alive, node, al);
			}
			if (al) {
				al->last = clock_now_ms(h->cfg.clock);
				al->timeout = h->cfg.heartbeat_timeout_ms > 0
						      ? h->cfg.heartbeat_timeout_ms
						      : (3 * r.interval * SEC > HEARTBEAT_MIN_MS
								 ? 3 * r.interval * SEC
								 : HEARTBEAT_MIN_MS);
				al->missed = 0;
			}
			touched_release(&t);
			pthread_mutex_unlock(&h->mu);
			/* Metrics and the answer. */
			json_t *decisions = json_array();
			size_t dups = 0;
			for (size_t i = 0; i < r.nev; i++) {
				const struct rep_ev *e = &r.ev[i];
				if (e->dup) {
					dups++;
					continue;
				}
				const char *ml[2] = {e->source, e->rule_code};
				metric_add(h->m_events, ml, 1);
				const char *al2[1] = {e->action};
				metric_add(h->m_decisions, al2, 1);
				if (strcmp(e->action, "hold") == 0 && !e->dry) {
					int64_t basis =
						e->time && e->time <= received_ms &&
								e->time > received_ms -
										  LATENCY_HORIZON_MS
							? e->time
							: received_ms;
					double lat = (double)(committed - basis) / 1000.0;
					metric_observe(h->m_latency, NULL, lat < 0 ? 0 : lat);
				}
				json_array_append_new(decisions,
						      json_pack("{s:s, s:s, s:b, s:s}", "event",
								e->id, "action", e->action,
								"dryRun", e->dry, "reason",
								e->reason));
			}
			*result = json_pack("{s:I, s:I, s:o}", "accepted", (json_int_t)nnew,
					    "duplicates", (json_int_t)dups, "decisions", decisions);
			break;
		}
		undo(h, &t, seq);
		pthread_mutex_unlock(&h->mu);
		if (rc == FP_EEXIST && nnew && failed >= first_event &&
		    failed < first_event + nnew) {
			/* An event stored before but no longer remembered (past the in-memory
			 * horizon: 24 h or the newest SEEN_PER_NODE ids of the node): a duplicate.
			 * Every new event of the report is looked up once, so a report re-sending
			 * many old ids needs one more attempt, not one per id. */
			for (size_t i = 0; i < r.nev; i++) {
				if (r.ev[i].dup)
					continue;
				char hk[STORE_MAX_KEY + 1];
				struct store_kv kv = {0};
				snprintf(hk, sizeof(hk), "/healthevents/%s/%s", node, r.ev[i].id);
				if (store_get(h->cfg.store, hk, &kv) == 0) {
					store_kv_release(&kv);
					pthread_mutex_lock(&h->mu);
					seen_add(h, node, r.ev[i].id, received_ms);
					pthread_mutex_unlock(&h->mu);
				}
			}
			continue;
		}
		if (rc == FP_ECONFLICT && failed == node_op)
			continue;
		rc = fp_errf(rc, err, errlen, "writing the report of node %s: %s", node,
			     fp_err_msg(rc));
		break;
	}
	if (rc == FP_ECONFLICT || (rc == FP_EEXIST && !*result))
		rc = fp_errf(FP_ECONFLICT, err, errlen,
			     "node %s kept changing: report not recorded, retry", node);
	node_free(n);
	free(r.ev);
	return *result ? 0 : rc;
}

/* ---------------------------------------------------------------- policy */

json_t *health_policy_get(struct health *h)
{
	pthread_mutex_lock(&h->mu);
	json_t *d = health_policy_to_json(h->policy, 1);
	pthread_mutex_unlock(&h->mu);
	return d;
}

int health_policy_put(struct health *h, const json_t *doc, const char *actor, json_t **stored,
		      char *err, size_t errlen)
{
	*stored = NULL;
	struct health_policy *p = NULL;
	int rc = health_policy_from_json(doc, 0, &p, err, errlen);
	if (rc < 0)
		return rc;
	int64_t expect = STORE_ANY;
	const char *rvs = jsonx_str(doc, "metadata.resourceVersion");
	if (rvs) {
		char *end = NULL;
		long long v = strtoll(rvs, &end, 10);
		if (!*rvs || *end || v < 0) {
			health_policy_free(p);
			return fp_errf(FP_EINVAL, err, errlen,
				       "metadata.resourceVersion: expected a decimal revision");
		}
		expect = v == 0 ? STORE_ABSENT : v;
	}
	int64_t now = clock_wall_ms(h->cfg.clock);
	json_t *body = health_policy_to_json(p, 0);
	struct objects_txn tx;
	objects_txn_init(&tx);
	objects_txn_put(&tx, xstrdup("/policies/default"), jsonx_dumps(body), expect);
	json_decref(body);
	char msg[256];
	snprintf(msg, sizeof(msg), "health policy default replaced (%zu rules, dryRun %s)",
		 p->nrules, p->dry_run ? "true" : "false");
	txn_event(h, &tx, "Normal", actor ? actor : "?", "policy/default", "HealthPolicyChanged",
		  msg, now);
	int64_t rev = 0;
	size_t failed = 0;
	rc = store_txn(h->cfg.store, tx.ops, tx.n, &rev, &failed);
	objects_txn_release(&tx);
	if (rc == FP_ECONFLICT || rc == FP_EEXIST) {
		health_policy_free(p);
		return fp_errf(FP_ECONFLICT, err, errlen,
			       "metadata.resourceVersion %s is stale: the policy changed since",
			       rvs ? rvs : "?");
	}
	if (rc < 0) {
		health_policy_free(p);
		return fp_errf(rc, err, errlen, "writing /policies/default: %s", fp_err_msg(rc));
	}
	p->resource_version = rev;
	pthread_mutex_lock(&h->mu);
	health_policy_free(h->policy);
	h->policy = p;
	/* Would-open breakers of dry run belong to the policy that simulated them. */
	for (struct hmap_iter it = hmap_iter_start(&h->dry_breakers); hmap_iter_next(&it);)
		free(it.e->value);
	hmap_release(&h->dry_breakers);
	hmap_init(&h->dry_breakers);
	*stored = health_policy_to_json(p, 1);
	pthread_mutex_unlock(&h->mu);
	return 0;
}

/* ---------------------------------------------------------------- breakers */

json_t *health_breakers(struct health *h)
{
	return health_breakers_list(h->breakers);
}

struct health_breakers *health_breaker_owner(struct health *h)
{
	return h->breakers;
}

/* store_foreach callback of health_breaker_reset: a node whose HealthActionsSuppressed names
 * the breaker being closed gets a CAS put without that condition in the reset's transaction. */
struct unsuppress {
	struct objects_txn *t;
	const char
		*want; /* the condition message's start: "correlated-failure breaker X is open:" */
};

static int unsuppress_node(void *arg, const struct store_kv *kv)
{
	struct unsuppress *u = arg;
	if (!strstr(kv->value, "HealthActionsSuppressed"))
		return 0;
	json_t *doc = NULL;
	struct node *n = NULL;
	if (jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) == 0 &&
	    node_from_json(doc, kv->mod_revision, &n, NULL, 0) == 0) {
		const struct node_condition *c = node_condition_get(n, "HealthActionsSuppressed");
		if (c && c->message && strncmp(c->message, u->want, strlen(u->want)) == 0) {
			node_condition_remove(n, "HealthActionsSuppressed");
			json_t *nd = node_to_json(n, NODE_JSON_STORE);
			objects_txn_put(u->t, xstrdup(kv->key), jsonx_dumps(nd), kv->mod_revision);
			json_decref(nd);
		}
	}
	node_free(n);
	json_decref(doc);
	return 0;
}

/* Adds "<node>.<id>" for each of ids to n's status.remediation.healthEvents (when a
 * remediation is in progress; at most REMEDIATION_MAX_EVENTS, no repeats). Returns 1 if n
 * changed. */
static int add_evidence(struct node *n, const char *node, const char *const *ids, size_t nids)
{
	int changed = 0;
	for (size_t i = 0; n->remediation.active && i < nids; i++) {
		char name[STORE_MAX_KEY + 1];
		snprintf(name, sizeof(name), "%s.%s", node, ids[i]);
		int have = 0;
		for (size_t k = 0; k < n->remediation.nevents; k++)
			have |= strcmp(n->remediation.events[k], name) == 0;
		if (!have && n->remediation.nevents < REMEDIATION_MAX_EVENTS) {
			n->remediation.events[n->remediation.nevents++] = xstrdup(name);
			changed = 1;
		}
	}
	return changed;
}

/* Replays one suppressed decision of breaker bname for node: places the health hold the
 * decision would have placed (the rule in force now, the lemon score now), unless the node is
 * already held, cannot be held in its phase, the rule no longer holds, or another breaker of
 * the node's domains is open. evidence (nevidence ids) are the node's other suppressed events:
 * they become evidence of the hold placed (or of the one already there) in
 * status.remediation.healthEvents (bounded). Returns 1 held (of gets the name of the hold's
 * event, "<node>.<id>"), 0 left unheld (why says why), or a store error. The hold,
 * GPUHealthy False/HealthHold and the HealthDecision audit event are one CAS write. */
static int replay_one(struct health *h, const char *node, const char *id, const char *code,
		      const char *bus, const char *bname, const char *actor,
		      const char *const *evidence, size_t nevidence, char *why, size_t whylen,
		      char *of, size_t oflen)
{
	char err[256];
	snprintf(of, oflen, "%s.%s", node, id);
	for (int attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
		struct node *n = NULL;
		int rc = load_node(h, node, &n, err, sizeof(err));
		if (rc == FP_ENOTFOUND) {
			snprintf(why, whylen, "node no longer exists");
			return 0;
		}
		if (rc < 0)
			return rc;
		int64_t now = clock_wall_ms(h->cfg.clock);
		if (node_hold_find(n, "health")) {
			snprintf(why, whylen, "already held");
			if (n->remediation.active && n->remediation.nevents)
				snprintf(of, oflen, "%s", n->remediation.events[0]);
			else
				snprintf(of, oflen, "the health hold of %s", node);
			/* The suppressed events are evidence of the hold in place. */
			const char *all[1 + BREAKER_MAX_SUPPRESSED];
			size_t na = 0;
			all[na++] = id;
			for (size_t i = 0; i < nevidence && na < sizeof(all) / sizeof(all[0]); i++)
				all[na++] = evidence[i];
			if (!add_evidence(n, node, all, na)) {
				node_free(n);
				return 1;
			}
			struct objects_txn tx;
			objects_txn_init(&tx);
			json_t *nj = node_to_json(n, NODE_JSON_STORE);
			objects_txn_put(&tx, objects_key_node_dup(node), jsonx_dumps(nj),
					n->resource_version);
			json_decref(nj);
			rc = store_txn(h->cfg.store, tx.ops, tx.n, NULL, NULL);
			objects_txn_release(&tx);
			node_free(n);
			if (rc == 0)
				return 1;
			if (rc != FP_ECONFLICT)
				return rc;
			continue;
		}
		char w2[160];
		if (!node_holdable(n, w2, sizeof(w2))) {
			snprintf(why, whylen, "%s", w2);
			node_free(n);
			return 0;
		}
		pthread_mutex_lock(&h->mu);
		const struct health_policy *p = h->policy;
		const struct health_rule *rule = health_rule_find(p, code);
		const char *other = NULL;
		char oname[160];
		for (size_t d = 0; p->breaker.enabled && d < p->breaker.ndomains && !other; d++) {
			const char *val = node_domain_value(n, p->breaker.domains[d]);
			if (!val)
				continue;
			snprintf(oname, sizeof(oname), "%s.%s", p->breaker.domains[d], val);
			if (strcmp(oname, bname) != 0 && health_breakers_has(h->breakers, oname))
				other = oname;
		}
		if (!rule || rule->action != HEALTH_ACTION_HOLD || other || p->dry_run) {
			if (other)
				snprintf(why, whylen, "breaker %s is open too", other);
			else if (p->dry_run)
				snprintf(why, whylen, "the policy is in dry run");
			else
				snprintf(why, whylen, "the policy in force no longer holds on %s",
					 code);
			pthread_mutex_unlock(&h->mu);
			node_free(n);
			return 0;
		}
		char key[STORE_MAX_KEY + 16];
		snprintf(key, sizeof(key), "h|%s", node);
		struct health_window *hw = window_get(h, key, 0);
		int64_t newest = 0;
		for (size_t k = 0; k < n->nremediation_history; k++)
			if (n->remediation_history[k].at > newest)
				newest = n->remediation_history[k].at;
		int extra = 0;
		for (size_t k = 0; hw && k < hw->n; k++)
			extra += hw->e[k].at > newest &&
				 hw->e[k].at > now - p->lemon.window_s * SEC && hw->e[k].at <= now;
		struct health_lemon lm;
		health_lemon_score(p, n, bus, extra, now, &lm);
		size_t start = health_start_rung(p, rule, &lm);
		enum remediation_rung ladder[RUNG__COUNT];
		memcpy(ladder, rule->ladder, sizeof(ladder));
		size_t nladder = rule->nladder;
		char lad[96], hold_reason[256], rem_reason[512], policy[64];
		ladder_text(rule->ladder, rule->nladder, lad, sizeof(lad));
		const char *start_txt = nladder ? rung_names[ladder[start]] : "-";
		snprintf(hold_reason, sizeof(hold_reason),
			 "%s on GPU %s: suppressed by breaker %s, replayed at its reset", code,
			 bus ? bus : "-", bname);
		snprintf(rem_reason, sizeof(rem_reason),
			 "%s %s on GPU %s: replayed after breaker %s was reset by %s; hold, %s%s",
			 health_severity_name(rule->severity), code, bus ? bus : "-", bname, actor,
			 nladder ? "remediation starts at " : "no automatic remediation",
			 nladder ? start_txt : "");
		snprintf(policy, sizeof(policy), "%s", p->name ? p->name : "default");
		uint64_t seq = ++h->seq;
		health_window_add(window_get(h, key, 1), now, bus ? bus : "", seq);
		pthread_mutex_unlock(&h->mu);
		char *ev = xasprintf("%s.%s", node, id);
		place_hold(n, code, bus, ladder, nladder, start, hold_reason, rem_reason, policy,
			   &ev, 1, now);
		free(ev);
		add_evidence(n, node, evidence, nevidence);
		struct objects_txn tx;
		objects_txn_init(&tx);
		json_t *nj = node_to_json(n, NODE_JSON_STORE);
		objects_txn_put(&tx, objects_key_node_dup(node), jsonx_dumps(nj),
				n->resource_version);
		json_decref(nj);
		char object[96], msg[1024];
		snprintf(object, sizeof(object), "node/%s", node);
		snprintf(
			msg, sizeof(msg),
			"health event %s.%s: replayed at the reset of breaker %s by %s: code=%s rule=%s gpu=%s lemon=node:%d,gpu:%d%s ladder=%s start=%s -> hold",
			node, id, bname, actor, code, rule->code, bus ? bus : "-", lm.node_score,
			lm.gpu_score, lm.recurred ? ",recurred" : "", lad, start_txt);
		txn_event(h, &tx, "Warning", ACTOR, object, "HealthDecision", msg, now);
		rc = store_txn(h->cfg.store, tx.ops, tx.n, NULL, NULL);
		objects_txn_release(&tx);
		node_free(n);
		if (rc == 0)
			return 1;
		pthread_mutex_lock(&h->mu);
		struct health_window *w = window_get(h, key, 0);
		if (w)
			health_window_undo(w, seq);
		pthread_mutex_unlock(&h->mu);
		if (rc != FP_ECONFLICT)
			return rc;
	}
	snprintf(why, whylen, "node kept changing");
	return 0;
}

int health_breaker_reset(struct health *h, const char *name, const char *actor, const char *reason,
			 char *err, size_t errlen)
{
	return health_breaker_reset_ex(h, name, actor, reason, 0, NULL, err, errlen);
}

int health_breaker_reset_ex(struct health *h, const char *name, const char *actor,
			    const char *reason, int replay, json_t **result, char *err,
			    size_t errlen)
{
	if (result)
		*result = NULL;
	if (!reason || !*reason)
		return fp_errf(FP_EINVAL, err, errlen,
			       "reason: required (why the breaker may close)");
	if (strlen(reason) > REPORT_MAX_STR)
		return fp_errf(FP_EINVAL, err, errlen, "reason: longer than %d bytes",
			       REPORT_MAX_STR);
	if (!actor)
		actor = "?";
	pthread_mutex_lock(&h->mu);
	json_t *open = name ? health_breakers_get(h->breakers, name) : NULL;
	json_t *pairs = open ? json_incref(json_object_get(open, "suppressed")) : NULL;
	json_decref(open);
	pthread_mutex_unlock(&h->mu);
	if (!open)
		return fp_errf(FP_ENOTFOUND, err, errlen, "breaker %s is not open",
			       name ? name : "?");
	/* The suppressed decisions, one per node (its first pair): replayed, or listed as left
	 * unheld (their nodes keep GPUHealthy False/HoldSuppressed). The node's other pairs are
	 * evidence of the hold it gets (or has): listed under "evidence" with the hold's event;
	 * when the node is left unheld they are listed as unheld too. Every pair is accounted for. */
	json_t *held = json_array(), *unheld = json_array(), *evid = json_array();
	size_t i;
	json_t *x;
	int rc = 0;
	size_t npairs = json_array_size(pairs);
	char *done = xcalloc(npairs ? npairs : 1, 1);
	const char **ids = xcalloc(npairs ? npairs : 1, sizeof(*ids));
	json_array_foreach(pairs, i, x) {
		const char *node = jsonx_str(x, "node"), *id = jsonx_str(x, "event"),
			   *code = jsonx_str(x, "code"), *gpu = jsonx_str(x, "gpu");
		if (done[i] || !node || !id || !code)
			continue;
		/* The node's other pairs, in order. */
		size_t nids = 0, k;
		json_t *y;
		json_array_foreach(pairs, k, y) {
			if (k <= i || done[k])
				continue;
			const char *n2 = jsonx_str(y, "node"), *id2 = jsonx_str(y, "event");
			if (n2 && id2 && jsonx_str(y, "code") && strcmp(n2, node) == 0) {
				ids[nids++] = id2;
				done[k] = 1;
			}
		}
		char why[200] = "replay not requested", of[STORE_MAX_KEY + 1] = "";
		int got = 0;
		if (replay) {
			got = replay_one(h, node, id, code, gpu, name, actor, ids, nids, why,
					 sizeof(why), of, sizeof(of));
			if (got < 0) {
				rc = got;
				snprintf(why, sizeof(why), "store error: %s", fp_err_msg(got));
				got = 0;
			}
		}
		if (got)
			json_array_append_new(held, json_string(node));
		else
			json_array_append_new(unheld,
					      json_pack("{s:s, s:s, s:s, s:s}", "node", node,
							"event", id, "code", code, "reason", why));
		json_array_foreach(pairs, k, y) {
			if (k <= i || !done[k] || strcmp(jsonx_str(y, "node"), node) != 0)
				continue;
			done[k] = 2; /* listed */
			if (got)
				json_array_append_new(evid,
						      json_pack("{s:s, s:s, s:s, s:s}", "node",
								node, "event",
								jsonx_str(y, "event"), "code",
								jsonx_str(y, "code"), "of", of));
			else
				json_array_append_new(unheld,
						      json_pack("{s:s, s:s, s:s, s:s}", "node",
								node, "event",
								jsonx_str(y, "event"), "code",
								jsonx_str(y, "code"), "reason",
								why));
		}
	}
	free(done);
	free(ids);
	json_decref(pairs);
	int64_t now = clock_wall_ms(h->cfg.clock);
	char key[STORE_MAX_KEY + 1], object[200], msg[4096], want[240];
	snprintf(key, sizeof(key), "/breakers/%s", name);
	snprintf(object, sizeof(object), "breaker/%s", name);
	int w = snprintf(msg, sizeof(msg), "correlated-failure breaker %s closed by %s: %s", name,
			 actor, reason);
	if (replay && json_array_size(held) && w > 0 && (size_t)w < sizeof(msg)) {
		w += snprintf(msg + w, sizeof(msg) - (size_t)w, "; replayed, held:");
		json_array_foreach(held, i, x)
			if (w > 0 && (size_t)w < sizeof(msg))
				w += snprintf(msg + w, sizeof(msg) - (size_t)w, "%s %s",
					      i ? "," : "", json_string_value(x));
	}
	if (json_array_size(evid) && w > 0 && (size_t)w < sizeof(msg)) {
		w += snprintf(msg + w, sizeof(msg) - (size_t)w, "; evidence:");
		json_array_foreach(evid, i, x)
			if (w > 0 && (size_t)w < sizeof(msg))
				w += snprintf(msg + w, sizeof(msg) - (size_t)w,
					      "%s %s.%s (%s) evidence of %s", i ? "," : "",
					      jsonx_str(x, "node"), jsonx_str(x, "event"),
					      jsonx_str(x, "code"), jsonx_str(x, "of"));
	}
	if (json_array_size(unheld) && w > 0 && (size_t)w < sizeof(msg)) {
		w += snprintf(msg + w, sizeof(msg) - (size_t)w,
			      "; left unheld (GPUHealthy False/HoldSuppressed, a human acts):");
		json_array_foreach(unheld, i, x)
			if (w > 0 && (size_t)w < sizeof(msg))
				w += snprintf(msg + w, sizeof(msg) - (size_t)w, "%s %s (%s %s: %s)",
					      i ? "," : "", jsonx_str(x, "node"),
					      jsonx_str(x, "code"), jsonx_str(x, "event"),
					      jsonx_str(x, "reason"));
	}
	snprintf(want, sizeof(want), "correlated-failure breaker %s is open:", name);
	/* One transaction: the breaker document goes, the audit event and the nodes' cleared
	 * HealthActionsSuppressed conditions (CAS; re-read on conflict) are written. */
	int trc = FP_ECONFLICT, with_delete = 1;
	for (int attempt = 0; attempt < COMMIT_ATTEMPTS && trc < 0; attempt++) {
		struct objects_txn t;
		objects_txn_init(&t);
		txn_event(h, &t, "Normal", actor, object, "BreakerReset", msg, now);
		struct unsuppress u = {&t, want};
		trc = store_foreach(h->cfg.store, OBJECTS_PREFIX_NODES, 0, unsuppress_node, &u,
				    NULL);
		if (trc == 0) {
			if (with_delete) {
				ALLOC_GROW(t.ops, t.n + 1, t.cap);
				t.ops[t.n++] = (struct store_op){STORE_OP_DELETE, key, NULL,
								 STORE_ANY};
			}
			trc = store_txn(h->cfg.store, t.ops, t.n, NULL, NULL);
			if (trc == FP_ENOTFOUND && with_delete) {
				/* the document was gone already: still close it here */
				with_delete = 0;
				trc = FP_ECONFLICT;
			}
		}
		objects_txn_release(&t);
		if (trc < 0 && trc != FP_ECONFLICT)
			break;
	}
	if (trc < 0) {
		json_decref(held);
		json_decref(unheld);
		json_decref(evid);
		return fp_errf(trc, err, errlen, "closing breaker %s: %s", name, fp_err_msg(trc));
	}
	pthread_mutex_lock(&h->mu);
	health_breakers_remove(h->breakers, name);
	free(hmap_remove(&h->dry_breakers, name));
	char wkey[STORE_MAX_KEY + 8];
	snprintf(wkey, sizeof(wkey), "b|%s", name);
	struct health_window *bw = hmap_remove(&h->windows, wkey);
	if (bw) {
		health_window_release(bw);
		free(bw);
	}
	breakers_gauge(h);
	pthread_mutex_unlock(&h->mu);
	log_info(
		"health breaker reset breaker=%s actor=%s replay=%d held=%zu evidence=%zu unheld=%zu rc=%s",
		name, actor, replay, json_array_size(held), json_array_size(evid),
		json_array_size(unheld), fp_err_name(rc));
	if (result)
		*result = json_pack("{s:s, s:{s:s}, s:s, s:b, s:o, s:o, s:o}", "kind",
				    "HealthBreaker", "metadata", "name", name, "state", "closed",
				    "replay", replay, "held", held, "evidence", evid, "unheld",
				    unheld);
	else {
		json_decref(held);
		json_decref(unheld);
		json_decref(evid);
	}
	return 0;
}

/* ---------------------------------------------------------------- sweep */

static void prune(struct health *h, int64_t wall)
{
	const struct health_policy *p = h->policy;
	/* Each kind of window by the longest window that reads it: count windows by the rules',
	 * job windows by job attribution's, breaker windows by the breaker's, hold windows by the
	 * lemon window ("unknown" codes count within 3600 s). */
	int64_t rulew = 3600;
	for (size_t i = 0; i < p->nrules; i++)
		if (p->rules[i].window_s > rulew)
			rulew = p->rules[i].window_s;
	char **drop = NULL;
	size_t nd = 0, cap = 0;
	for (struct hmap_iter it = hmap_iter_start(&h->windows); hmap_iter_next(&it);) {
		struct health_window *w = it.e->value;
		const char *k = it.e->key;
		int64_t ws = k[0] == 'c'   ? rulew
			     : k[0] == 'j' ? p->job_attribution.window_s
			     : k[0] == 'b' ? p->breaker.window_s
					   : p->lemon.window_s;
		health_window_prune(w, wall, ws * SEC);
		if (!w->n) {
			ALLOC_GROW(drop, nd + 1, cap);
			drop[nd++] = xstrdup(it.e->key);
		}
	}
	for (size_t i = 0; i < nd; i++) {
		struct health_window *w = hmap_remove(&h->windows, drop[i]);
		health_window_release(w);
		free(w);
		cwin_forget(h, drop[i]);
		free(drop[i]);
	}
	seen_prune(h, wall - SEEN_KEEP_MS);
	/* Nodes with nothing remembered any more. */
	nd = 0;
	for (struct hmap_iter it = hmap_iter_start(&h->nodes); hmap_iter_next(&it);) {
		const struct hnode *x = it.e->value;
		if (!x->n && !x->ncw) {
			ALLOC_GROW(drop, nd + 1, cap);
			drop[nd++] = xstrdup(it.e->key);
		}
	}
	for (size_t i = 0; i < nd; i++) {
		hnode_free(hmap_remove(&h->nodes, drop[i]));
		free(drop[i]);
	}
	nd = 0;
	for (struct hmap_iter it = hmap_iter_start(&h->jobfaults); hmap_iter_next(&it);)
		if (((struct jobfault *)it.e->value)->at < wall - JOBFAULT_KEEP_MS) {
			ALLOC_GROW(drop, nd + 1, cap);
			drop[nd++] = xstrdup(it.e->key);
		}
	for (size_t i = 0; i < nd; i++) {
		free(hmap_remove(&h->jobfaults, drop[i]));
		free(drop[i]);
	}
	free(drop);
}

/* heartbeat_missed's mutate: AgentAlive False, unless it is already. */
struct missed_arg {
	const char *msg;
	int64_t now;
};

static int missed_mutate(struct node *n, struct objects_txn *tx, void *arg)
{
	const struct missed_arg *a = arg;
	const struct node_condition *c = node_condition_get(n, "AgentAlive");
	if (c && c->status == COND_FALSE)
		return 0;
	node_condition_set(n, "AgentAlive", COND_FALSE, "HeartbeatMissed", a->msg, a->now);
	return 1;
}

static int64_t heartbeat_missed(struct health *h, const char *name, int64_t silent, int64_t timeout)
{
	char err[256];
	if (name_validate("node", name, err, sizeof(err)) < 0)
		return FP_EINVAL;
	char msg[200];
	snprintf(msg, sizeof(msg), "no agent report for %lld s (timeout %lld s)",
		 (long long)(silent / SEC), (long long)(timeout / SEC));
	struct missed_arg a = {.msg = msg, .now = clock_wall_ms(h->cfg.clock)};
	struct objects_update u = {.actor = ACTOR,
				   .ev_type = "Warning",
				   .ev_reason = "AgentHeartbeatMissed",
				   .ev_msg = msg,
				   .now_ms = a.now,
				   .rnd = fp_rng_u64(h->cfg.rng),
				   .max_attempts = COMMIT_ATTEMPTS};
	return objects_update_node(h->cfg.store, name, missed_mutate, &a, &u, NULL, err,
				   sizeof(err));
}

int64_t health_tick(struct health *h)
{
	int64_t mono = clock_now_ms(h->cfg.clock), wall = clock_wall_ms(h->cfg.clock);
	int64_t next = SWEEP_MAX_MS;
	struct {
		char *name;
		int64_t silent, timeout;
	} *due = NULL;
	size_t nd = 0, cap = 0;
	pthread_mutex_lock(&h->mu);
	prune(h, wall);
	for (struct hmap_iter it = hmap_iter_start(&h->alive); hmap_iter_next(&it);) {
		struct alive *a = it.e->value;
		if (a->missed)
			continue;
		int64_t left = a->last + a->timeout - mono;
		if (left <= 0) {
			ALLOC_GROW(due, nd + 1, cap);
			due[nd].name = xstrdup(it.e->key);
			due[nd].silent = mono - a->last;
			due[nd].timeout = a->timeout;
			nd++;
			a->missed = 1;
		} else if (left < next) {
			next = left;
		}
	}
	pthread_mutex_unlock(&h->mu);
	for (size_t i = 0; i < nd; i++) {
		int64_t rc = heartbeat_missed(h, due[i].name, due[i].silent, due[i].timeout);
		if (rc < 0 && rc != FP_ENOTFOUND) {
			log_warn("heartbeat sweep could not mark node node=%s rc=%s", due[i].name,
				 fp_err_name((int)rc));
			pthread_mutex_lock(&h->mu); /* try again at the next sweep */
			struct alive *a = hmap_get(&h->alive, due[i].name);
			if (a)
				a->missed = 0;
			pthread_mutex_unlock(&h->mu);
		} else if (rc == FP_ENOTFOUND) {
			pthread_mutex_lock(&h->mu);
			free(hmap_remove(&h->alive, due[i].name));
			pthread_mutex_unlock(&h->mu);
		}
		free(due[i].name);
	}
	free(due);
	return next < 1 ? 1 : next;
}

static void sweep_cb(void *arg)
{
	struct health *h = arg;
	pthread_mutex_lock(&h->mu);
	int stop = h->stopping;
	pthread_mutex_unlock(&h->mu);
	int64_t next = stop ? 0 : health_tick(h);
	pthread_mutex_lock(&h->mu);
	if (!h->stopping)
		h->timer = clock_after(h->cfg.clock, next, sweep_cb, h);
	else
		h->timer_pending = 0;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu); /* the last touch of h: health_free may free it now */
}

/* ---------------------------------------------------------------- start */

struct load_ctx {
	struct health *h;
	int64_t now;
	size_t n;
};

/* Replays one stored health event into the windows (recent ones only). */
static int load_event(void *arg, const struct store_kv *kv)
{
	struct load_ctx *c = arg;
	struct health *h = c->h;
	if (c->n >= LOAD_MAX_EVENTS)
		return 1;
	json_t *d = NULL;
	if (jsonx_parse(kv->value, strlen(kv->value), &d, NULL, 0) < 0)
		return 0;
	int64_t at = 0;
	const char *node = jsonx_str(d, "node"), *id = jsonx_str(d, "id"),
		   *code = jsonx_str(d, "code"), *job = jsonx_str(d, "job"),
		   *rs = jsonx_str(d, "receivedAt"), *action = jsonx_str(d, "decision.action");
	const char *bus = jsonx_str(d, "gpu.pciBusId");
	json_t *idx = jsonx_path(d, "gpu.index");
	if (!node || !id || !code || !rs || fp_time_parse(rs, &at) < 0 || at > c->now) {
		json_decref(d);
		return 0;
	}
	const struct health_policy *p = h->policy;
	char key[STORE_MAX_KEY + 160], gpu[32] = "";
	if (bus)
		snprintf(gpu, sizeof(gpu), "%s", bus);
	else if (json_is_integer(idx))
		snprintf(gpu, sizeof(gpu), "index:%d", (int)json_integer_value(idx));
	if (at > c->now - SEEN_KEEP_MS)
		seen_add(h, node, id, at);
	const struct health_rule *r = health_rule_find(p, code);
	const char *dreason = jsonx_str(d, "decision.reason");
	int stale = dreason && strstr(dreason, ": stale: ");
	if (r && !stale && at > c->now - r->window_s * SEC) {
		snprintf(key, sizeof(key), "c|%s|%s|%s", node, gpu, code);
		window_add(h, NULL, key, at, job && r->distinct_jobs ? job : "", 0);
	}
	if (r && job && r->distinct_jobs && at > c->now - p->job_attribution.window_s * SEC) {
		snprintf(key, sizeof(key), "j|%s|%s", code, job);
		struct health_window *w = window_get(h, key, 0);
		if (!w || !health_window_has(w, c->now, p->job_attribution.window_s * SEC, node))
			window_add(h, NULL, key, at, node, 0);
	}
	if (action && strcmp(action, "job_fault") == 0 && job && at > c->now - JOBFAULT_KEEP_MS &&
	    !json_is_true(jsonx_path(d, "decision.dryRun"))) {
		snprintf(key, sizeof(key), "%s|%s", code, job);
		struct jobfault *f = hmap_get(&h->jobfaults, key);
		if (!f) {
			f = xcalloc(1, sizeof(*f));
			hmap_put(&h->jobfaults, key, f);
		}
		if (at > f->at)
			f->at = at;
	}
	if (action && strcmp(action, "hold") == 0 &&
	    !json_is_true(jsonx_path(d, "decision.dryRun")) &&
	    at > c->now - p->lemon.window_s * SEC) {
		snprintf(key, sizeof(key), "h|%s", node);
		window_add(h, NULL, key, at, gpu, 0);
	}
	c->n++;
	json_decref(d);
	return 0;
}

/* Starts watching node's heartbeat (a health agent's AgentAlive, reason Heartbeat). */
static void watch_alive(struct load_ctx *c, const char *node)
{
	struct alive *a = xcalloc(1, sizeof(*a));
	a->last = c->now;
	a->timeout = c->h->cfg.heartbeat_timeout_ms > 0 ? c->h->cfg.heartbeat_timeout_ms
							: HEARTBEAT_MIN_MS;
	free(hmap_put(&c->h->alive, node, a));
}

/* cache_visit_nodes callback: load_alive's test on a cached node (no store read, no parse). */
static int load_alive_cached(void *arg, const struct node *n)
{
	const struct node_condition *cd = node_condition_get(n, "AgentAlive");
	if (cd && cd->status == COND_TRUE && cd->reason && strcmp(cd->reason, "Heartbeat") == 0)
		watch_alive(arg, n->name);
	return 0;
}

static int load_alive(void *arg, const struct store_kv *kv)
{
	struct load_ctx *c = arg;
	/* Most nodes carry AgentAlive from their boot callback only (reason BootCallback): skip
	 * the parse unless a heartbeat can be there (issue 17: this pass was 32 % of a 100k start). */
	if (!strstr(kv->value, "\"AgentAlive\"") || !strstr(kv->value, "\"Heartbeat\""))
		return 0;
	json_t *d = NULL;
	if (jsonx_parse(kv->value, strlen(kv->value), &d, NULL, 0) < 0)
		return 0;
	json_t *conds = jsonx_path(d, "status.conditions");
	size_t i;
	json_t *x;
	json_array_foreach(conds, i, x) {
		const char *type = jsonx_str(x, "type"), *st = jsonx_str(x, "status");
		const char *why = jsonx_str(x, "reason");
		/* Only a health agent's heartbeat (reason Heartbeat) is watched: a deploy agent's
		 * boot callback (BootCallback) sets AgentAlive too, but no health agent runs there
		 * to miss a heartbeat. */
		if (type && st && why && strcmp(type, "AgentAlive") == 0 &&
		    strcmp(st, "True") == 0 && strcmp(why, "Heartbeat") == 0)
			watch_alive(c, objects_key_name(OBJECTS_NODE, kv->key));
	}
	json_decref(d);
	return 0;
}

struct health *health_new(const struct health_config *cfg, char *err, size_t errlen)
{
	struct health *h = xcalloc(1, sizeof(*h));
	h->cfg = *cfg;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	hmap_init(&h->seen);
	hmap_init(&h->windows);
	hmap_init(&h->jobfaults);
	h->breakers = health_breakers_new();
	hmap_init(&h->dry_breakers);
	hmap_init(&h->alive);
	hmap_init(&h->nodes);
	h->m_latency = metrics_register(
		METRIC_HISTOGRAM, "fleetplane_health_hold_latency_seconds",
		"Detection (the event's time, or its receipt) to the health hold committed", "",
		metrics_buckets_fast, METRICS_BUCKETS_FAST_N);
	h->m_events =
		metrics_register(METRIC_COUNTER, "fleetplane_health_events_total",
				 "Health events accepted, by source and rule code (other: no rule)",
				 "source,code", NULL, 0);
	h->m_decisions = metrics_register(METRIC_COUNTER, "fleetplane_health_decisions_total",
					  "Health decisions, by action", "action", NULL, 0);
	h->m_breakers = metrics_register(METRIC_GAUGE, "fleetplane_health_breakers_open",
					 "Correlated-failure breakers open now", "", NULL, 0);
	struct store_kv kv = {0};
	int rc = store_get(cfg->store, "/policies/default", &kv);
	if (rc == FP_ENOTFOUND) {
		h->policy = health_policy_default();
	} else if (rc < 0) {
		fp_errf(rc, err, errlen, "reading /policies/default: %s", fp_err_msg(rc));
		goto fail;
	} else {
		json_t *d = NULL;
		char why[256];
		rc = jsonx_parse(kv.value, strlen(kv.value), &d, why, sizeof(why));
		if (rc == 0)
			rc = health_policy_from_json(d, kv.mod_revision, &h->policy, why,
						     sizeof(why));
		json_decref(d);
		store_kv_release(&kv);
		if (rc < 0) {
			fp_errf(rc, err, errlen, "stored /policies/default is invalid: %s", why);
			goto fail;
		}
	}
	int64_t wall = clock_wall_ms(cfg->clock);
	if ((rc = health_breakers_load(h->breakers, cfg->store, err, errlen)) < 0)
		goto fail;
	struct load_ctx lc = {.h = h, .now = wall};
	rc = store_foreach(cfg->store, "/healthevents/", 0, load_event, &lc, NULL);
	if (rc < 0) {
		fp_errf(rc, err, errlen, "reading /healthevents/: %s", fp_err_msg(rc));
		goto fail;
	}
	if (lc.n >= LOAD_MAX_EVENTS)
		log_warn("health: replayed only the first %d stored health events",
			 LOAD_MAX_EVENTS);
	/* From the informer's copies when it has them (fleet_start syncs it first: one pass over
	 * the nodes at start, not two); else from the store. */
	struct load_ctx ac = {.h = h, .now = clock_now_ms(cfg->clock)};
	if (cfg->cache && cache_synced(cfg->cache))
		cache_visit_nodes(cfg->cache, load_alive_cached, &ac);
	else if ((rc = store_foreach(cfg->store, OBJECTS_PREFIX_NODES, 0, load_alive, &ac, NULL)) <
		 0) {
		fp_errf(rc, err, errlen, "reading /nodes/: %s", fp_err_msg(rc));
		goto fail;
	}
	breakers_gauge(h);
	if (cfg->sweep) {
		pthread_mutex_lock(&h->mu);
		h->timer_pending = 1;
		h->timer = clock_after(cfg->clock, SWEEP_MAX_MS, sweep_cb, h);
		pthread_mutex_unlock(&h->mu);
	}
	return h;
fail:
	health_free(h);
	return NULL;
}

void health_free(struct health *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stopping = 1;
	/* A cancelled timer never runs; one that fired or is firing clears timer_pending as its
	 * last act (it sees stopping and does not re-arm). */
	if (h->timer_pending && clock_cancel(h->cfg.clock, h->timer) == 0)
		h->timer_pending = 0;
	while (h->timer_pending)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
	for (struct hmap_iter it = hmap_iter_start(&h->seen); hmap_iter_next(&it);)
		free(it.e->value);
	for (struct hmap_iter it = hmap_iter_start(&h->windows); hmap_iter_next(&it);) {
		health_window_release(it.e->value);
		free(it.e->value);
	}
	for (struct hmap_iter it = hmap_iter_start(&h->jobfaults); hmap_iter_next(&it);)
		free(it.e->value);
	for (struct hmap_iter it = hmap_iter_start(&h->alive); hmap_iter_next(&it);)
		free(it.e->value);
	for (struct hmap_iter it = hmap_iter_start(&h->dry_breakers); hmap_iter_next(&it);)
		free(it.e->value);
	for (struct hmap_iter it = hmap_iter_start(&h->nodes); hmap_iter_next(&it);)
		hnode_free(it.e->value);
	hmap_release(&h->nodes);
	hmap_release(&h->dry_breakers);
	hmap_release(&h->seen);
	hmap_release(&h->windows);
	hmap_release(&h->jobfaults);
	health_breakers_free(h->breakers);
	hmap_release(&h->alive);
	health_policy_free(h->policy);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

void health_memory(struct health *h, struct health_memory *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&h->mu);
	out->seen = h->seen.count;
	out->windows = h->windows.count;
	out->window_entries = 0;
	for (struct hmap_iter it = hmap_iter_start(&h->windows); hmap_iter_next(&it);)
		out->window_entries += ((const struct health_window *)it.e->value)->n;
	out->nodes = h->nodes.count;
	pthread_mutex_unlock(&h->mu);
}
