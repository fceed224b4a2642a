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

#define GC_PAGE 1000

static int trim_events(struct store *s, size_t max, size_t *deleted)
{
	size_t n = 0;
	int rc = store_count(s, "/events/", &n);
	if (rc < 0 || n <= max)
		return rc;
	size_t excess = n - max;
	/* Event ids sort by time, so the first keys are the oldest. */
	while (excess > 0) {
		struct store_kv *items = NULL;
		size_t got = 0;
		int more = 0;
		rc = store_list(s, "/events/", NULL, excess < GC_PAGE ? excess : GC_PAGE, &items, &got,
				NULL, &more);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < got; i++) {
			int drc = store_delete(s, items[i].key, items[i].mod_revision, NULL);
			if (drc == 0)
				(*deleted)++;
			else if (drc != FP_ENOTFOUND && drc != FP_ECONFLICT)
				rc = drc;
		}
		store_kv_array_free(items, got);
		if (rc < 0 || got == 0)
			return rc;
		excess -= got < excess ? got : excess;
	}
	return 0;
}

static int node_points_at(struct store *s, const char *node, const char *op_id)
{
	char key[STORE_MAX_KEY + 1];
	struct store_kv kv = {0};
	snprintf(key, sizeof(key), "/nodes/%s", node);
	if (store_get(s, key, &kv) < 0)
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
};

static int trim_op(void *arg, const struct store_kv *kv)
{
	struct trim_ops *t = arg;
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

static int trim_operations(struct store *s, int64_t older_than, size_t *deleted)
{
	struct trim_ops t = {s, older_than, deleted};
	return store_foreach(s, "/operations/", GC_PAGE, trim_op, &t, NULL);
}

int gc_run_once(struct store *s, const struct gc_config *cfg, int64_t now_wall_ms,
		struct gc_result *res)
{
	struct gc_config c = *cfg;
	if (c.retain_revisions <= 0)
		c.retain_revisions = 100000;
	if (c.max_events == 0)
		c.max_events = 100000;
	if (c.op_retention_ms <= 0)
		c.op_retention_ms = 7LL * 24 * 3600 * 1000;
	memset(res, 0, sizeof(*res));
	int rc = trim_events(s, c.max_events, &res->events_deleted);
	if (rc == 0)
		rc = trim_operations(s, now_wall_ms - c.op_retention_ms, &res->ops_deleted);
	int64_t target = store_revision(s) - c.retain_revisions;
	if (rc == 0 && target > store_compacted_revision(s)) {
		rc = store_compact(s, target);
		if (rc == 0)
			res->compacted_to = target;
	}
	return rc;
}
