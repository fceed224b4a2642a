/* gc.c - store housekeeping (see gc.h). Every delete is a compare-and-swap on the key's
 * mod_revision, so a document changed since it was read is left alone. */
#include "controller/gc.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/timefmt.h"
#include "engine/objects.h"

#define GC_PAGE 1000

/* 1 once the pass should stop (gc_config.stop). */
static int stopped(const atomic_int *stop)
{
	return stop && atomic_load(stop);
}

/* 1 when the audit event document is a HealthDecision (the health controller's record of one
 * decision, which a node's agent can cause at will): those are trimmed under their own cap. The
 * cheap byte test first; only a candidate is parsed (a message quoting the text is escaped
 * and never matches the raw pattern, the parse settles the rest). */
static int is_health_decision(const char *value)
{
	if (!strstr(value, "\"HealthDecision\""))
		return 0;
	json_t *doc = NULL;
	int yes = 0;
	if (jsonx_parse(value, strlen(value), &doc, NULL, 0) == 0) {
		const char *r = jsonx_str(doc, "reason");
		yes = r && strcmp(r, "HealthDecision") == 0;
	}
	json_decref(doc);
	return yes;
}

struct ev_walk {
	struct store *s;
	size_t n[2];      /* [0] other audit events, [1] HealthDecision ones */
	size_t excess[2]; /* pass 2: how many of each (the oldest) still to delete */
	int deleting;
	size_t *deleted;
	const atomic_int *stop;
	int rc;
};

static int ev_visit(void *arg, const struct store_kv *kv)
{
	struct ev_walk *w = arg;
	int k = is_health_decision(kv->value);
	if (!w->deleting) {
		w->n[k]++;
		return 0;
	}
	if (!w->excess[k])
		return !w->excess[0] && !w->excess[1]; /* both done: stop the walk */
	if (stopped(w->stop))
		return 1;
	w->excess[k]--;
	/* Deleting keys behind the walk's cursor is safe: pages continue after the last key. */
	int drc = store_delete(w->s, kv->key, kv->mod_revision, NULL);
	if (drc == 0)
		(*w->deleted)++;
	else if (drc != FP_ENOTFOUND && drc != FP_ECONFLICT && w->rc == 0)
		w->rc = drc;
	return 0;
}

/* Keeps the newest max_other audit events that are not HealthDecision and the newest max_hd
 * HealthDecision ones: two walks over /events/ (ids sort by time, so the first keys are the
 * oldest), the second deleting the oldest excess of each class. A flood of HealthDecision
 * events thus never pushes out lifecycle, operator, breaker or budget events. */
static int trim_events(struct store *s, size_t max_other, size_t max_hd, size_t *deleted,
		       const atomic_int *stop)
{
	size_t n = 0;
	int rc = store_count(s, "/events/", &n);
	if (rc < 0 || (n <= max_other && n <= max_hd))
		return rc;
	struct ev_walk w = {.s = s, .deleted = deleted, .stop = stop};
	rc = store_foreach(s, "/events/", GC_PAGE, ev_visit, &w, NULL);
	if (rc < 0)
		return rc;
	w.excess[0] = w.n[0] > max_other ? w.n[0] - max_other : 0;
	w.excess[1] = w.n[1] > max_hd ? w.n[1] - max_hd : 0;
	if (!w.excess[0] && !w.excess[1])
		return 0;
	w.deleting = 1;
	rc = store_foreach(s, "/events/", GC_PAGE, ev_visit, &w, NULL);
	return rc < 0 ? rc : w.rc;
}

/* Audit events older than cutoff (Unix ms). Event ids start with the 13-digit wall ms they were
 * made at (core/event.h), so the walk stops at the first newer key. */
static int age_events(struct store *s, int64_t cutoff, size_t *deleted, const atomic_int *stop)
{
	char after[STORE_MAX_KEY + 1] = "";
	for (;;) {
		struct store_kv *items = NULL;
		size_t got = 0, old = 0;
		int more = 0;
		int rc = store_list(s, "/events/", after, GC_PAGE, &items, &got, NULL, &more);
		if (rc == 0 && got)
			snprintf(after, sizeof(after), "%s", items[got - 1].key);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < got; i++) {
			const char *id = items[i].key + strlen("/events/");
			char *end = NULL;
			long long ms = strtoll(id, &end, 10);
			if (end != id + 13 || *end != '-' || ms >= cutoff || stopped(stop))
				break;
			old++;
			int drc = store_delete(s, items[i].key, items[i].mod_revision, NULL);
			if (drc == 0)
				(*deleted)++;
			else if (drc != FP_ENOTFOUND && drc != FP_ECONFLICT)
				rc = drc;
		}
		store_kv_array_free(items, got);
		if (rc < 0 || old < got || !more || old == 0)
			return rc;
	}
}

/* ---- health events: grouped by node (keys /healthevents/<node>/<id> sort by node) ---- */

struct he_item {
	char *key;
	int64_t rev, received;
	int hold; /* decision.action "hold": a remediation's evidence */
};

struct he_walk {
	struct store *s;
	int64_t cutoff;
	size_t per_node;
	char node[160];
	struct he_item *it;
	size_t n, cap;
	const atomic_int *stop;
	size_t *deleted;
	int rc;
};

static int he_newest_first(const void *a, const void *b)
{
	const struct he_item *x = a, *y = b;
	return x->received < y->received   ? 1
	       : x->received > y->received ? -1
					   : strcmp(x->key, y->key);
}

/* Deletes the group's events past the age cutoff, and past per_node newest (holds excepted). */
static void he_flush(struct he_walk *w)
{
	if (w->n > 1) /* qsort(NULL, 0) is UB (UBSan) */
		qsort(w->it, w->n, sizeof(*w->it), he_newest_first);
	for (size_t i = 0; i < w->n; i++) {
		struct he_item *e = &w->it[i];
		int del = e->received < w->cutoff || (i >= w->per_node && !e->hold);
		if (del && !stopped(w->stop)) {
			int drc = store_delete(w->s, e->key, e->rev, NULL);
			if (drc == 0)
				(*w->deleted)++;
			else if (drc != FP_ENOTFOUND && drc != FP_ECONFLICT && w->rc == 0)
				w->rc = drc;
		}
		free(e->key);
	}
	w->n = 0;
}

static int he_visit(void *arg, const struct store_kv *kv)
{
	struct he_walk *w = arg;
	const char *rest = kv->key + strlen("/healthevents/"), *slash = strchr(rest, '/');
	size_t nl = slash ? (size_t)(slash - rest) : strlen(rest);
	if (nl >= sizeof(w->node))
		nl = sizeof(w->node) - 1;
	if (strncmp(w->node, rest, nl) != 0 || w->node[nl] != 0) {
		he_flush(w);
		memcpy(w->node, rest, nl);
		w->node[nl] = 0;
	}
	json_t *doc = NULL;
	int64_t received = 0;
	int hold = 0;
	if (jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) == 0) {
		const char *rs = jsonx_str(doc, "receivedAt"),
			   *a = jsonx_str(doc, "decision.action");
		if (rs)
			fp_time_parse(rs, &received);
		hold = a && strcmp(a, "hold") == 0;
	}
	json_decref(doc);
	ALLOC_GROW(w->it, w->n + 1, w->cap);
	w->it[w->n++] = (struct he_item){xstrdup(kv->key), kv->mod_revision, received, hold};
	return 0;
}

static int trim_healthevents(struct store *s, int64_t cutoff, size_t per_node, size_t *deleted,
			     const atomic_int *stop)
{
	struct he_walk w = {.s = s,
			    .cutoff = cutoff,
			    .per_node = per_node,
			    .deleted = deleted,
			    .stop = stop};
	int rc = store_foreach(s, "/healthevents/", GC_PAGE, he_visit, &w, NULL);
	he_flush(&w);
	free(w.it);
	return rc < 0 ? rc : w.rc;
}

static int node_points_at(struct store *s, const char *node, const char *op_id)
{
	char key[STORE_MAX_KEY + 2];
	struct store_kv kv = {0};
	if (objects_key_node(key, sizeof(key), node) < 0 || store_get(s, key, &kv) < 0)
		return 0;
	json_t *doc = NULL;
	int points = 0;
	if (jsonx_parse(kv.value, strlen(kv.value), &doc, NULL, 0) == 0) {
		const char *cur = jsonx_str(doc, "status.operation");
		points = cur && strcmp(cur, op_id) == 0;
	}
	json_decref(doc);
	store_kv_release(&kv);
	return points;
}

struct trim_ops {
	struct store *s;
	int64_t older_than;
	size_t *deleted;
	const atomic_int *stop;
};

static int trim_op(void *arg, const struct store_kv *kv)
{
	struct trim_ops *t = arg;
	if (stopped(t->stop))
		return 1;
	json_t *doc = NULL;
	if (jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) < 0)
		return 0;
	const char *state = jsonx_str(doc, "status.state");
	const char *fin = jsonx_str(doc, "status.finishedAt");
	const char *node = jsonx_str(doc, "spec.node");
	const char *id = jsonx_str(doc, "metadata.name");
	int64_t fin_ms = 0;
	int terminal = state && (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
				 strcmp(state, "cancelled") == 0);
	/* Deleting keys behind the walk's cursor is safe: pages continue after the last key. */
	if (terminal && fin && fp_time_parse(fin, &fin_ms) == 0 && fin_ms < t->older_than && node &&
	    id && !node_points_at(t->s, node, id) &&
	    store_delete(t->s, kv->key, kv->mod_revision, NULL) == 0)
		(*t->deleted)++;
	json_decref(doc);
	return 0;
}

static int trim_operations(struct store *s, int64_t older_than, size_t *deleted,
			   const atomic_int *stop)
{
	struct trim_ops t = {s, older_than, deleted, stop};
	int rc = store_foreach(s, OBJECTS_PREFIX_OPERATIONS, GC_PAGE, trim_op, &t, NULL);
	return rc < 0 ? rc : 0;
}

int gc_run_once(struct store *s, const struct gc_config *cfg, int64_t now_wall_ms,
		struct gc_result *res)
{
	struct gc_config c = *cfg;
	if (c.retain_revisions <= 0)
		c.retain_revisions = 100000;
	if (c.max_events == 0)
		c.max_events = 100000;
	if (c.max_health_decisions == 0)
		c.max_health_decisions = 10000;
	if (c.op_retention_ms <= 0)
		c.op_retention_ms = 7LL * 24 * 3600 * 1000;
	if (c.event_retention_ms == 0)
		c.event_retention_ms = 30LL * 24 * 3600 * 1000;
	if (c.healthevent_retention_ms == 0)
		c.healthevent_retention_ms = 30LL * 24 * 3600 * 1000;
	if (c.healthevents_per_node == 0)
		c.healthevents_per_node = 10000;
	memset(res, 0, sizeof(*res));
	int rc = trim_events(s, c.max_events, c.max_health_decisions, &res->events_deleted, c.stop);
	if (rc == 0 && c.event_retention_ms > 0)
		rc = age_events(s, now_wall_ms - c.event_retention_ms, &res->events_deleted,
				c.stop);
	if (rc == 0)
		rc = trim_healthevents(s,
				       c.healthevent_retention_ms > 0
					       ? now_wall_ms - c.healthevent_retention_ms
					       : INT64_MIN,
				       c.healthevents_per_node, &res->healthevents_deleted, c.stop);
	if (rc == 0)
		rc = trim_operations(s, now_wall_ms - c.op_retention_ms, &res->ops_deleted, c.stop);
	int64_t target = store_revision(s) - c.retain_revisions;
	if (rc == 0 && !stopped(c.stop) && target > store_compacted_revision(s)) {
		rc = store_compact(s, target);
		if (rc == 0)
			res->compacted_to = target;
	}
	return rc;
}
