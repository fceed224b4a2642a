/* layers: base core store driver engine */
/* test_node_metrics.c - engine/node_metrics.h: the per-site condition counts (every type of the
 * closed set and every status, zeros included), the per-node info and condition series, the
 * node limit (all or none, fleetplane_node_series_limited), conditions outside the closed set
 * left out, sites past NODE_METRICS_MAX_SITES folded into "_other". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/jsonx.h"
#include "core/codec.h"
#include "core/model.h"
#include "engine/cache.h"
#include "engine/node_metrics.h"
#include "store/store.h"

#define NOW 1796000000000LL

struct w {
	struct store *store;
	struct cache *cache;
	struct buf out;
};

static struct w *w_new(void)
{
	struct w *w = xcalloc(1, sizeof(*w));
	char err[128];
	assert_int_equal(store_open("mem:", &w->store, err, sizeof(err)), 0);
	w->cache = cache_new(w->store);
	assert_true(cache_sync_now(w->cache) >= 0);
	buf_init(&w->out, 0);
	return w;
}

static void w_free(struct w *w)
{
	buf_release(&w->out);
	cache_free(w->cache);
	store_close(w->store);
	free(w);
}

/* Stores node name in site/rack with phase; bmc is the BMCReachable status (COND_UNKNOWN:
 * none set); an extra condition "Custom" True is always set, to be left out. */
static void put(struct w *w, const char *name, const char *site, const char *rack,
		enum node_phase phase, int bmc, int bmc_set)
{
	struct node *n = node_new();
	n->name = xstrdup(name);
	n->site = xstrdup(site);
	n->rack = xstrdup(rack);
	n->bmc.driver = xstrdup("sim");
	n->phase = phase;
	if (bmc_set)
		node_condition_set(n, "BMCReachable", (enum cond_status)bmc, "R", "m", NOW);
	node_condition_set(n, "Custom", COND_TRUE, "R", "m", NOW);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc), key[300];
	snprintf(key, sizeof(key), "/nodes/%s", name);
	assert_int_equal(store_put(w->store, key, val, STORE_ANY, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
}

static void render(struct w *w, long max)
{
	assert_true(cache_sync_now(w->cache) >= 0);
	buf_reset(&w->out);
	node_metrics_render(w->cache, max, &w->out);
}

static int has(struct w *w, const char *line)
{
	char want[512];
	snprintf(want, sizeof(want), "\n%s\n", line);
	return strstr(w->out.data, want) != NULL;
}

static size_t count_prefix(struct w *w, const char *prefix)
{
	size_t n = 0, pl = strlen(prefix);
	for (const char *p = w->out.data; p && *p;) {
		if (strncmp(p, prefix, pl) == 0)
			n++;
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return n;
}

static void test_counts_and_series(void **state)
{
	struct w *w = w_new();
	put(w, "a1", "east", "r1", PHASE_AVAILABLE, COND_TRUE, 1);
	put(w, "a2", "east", "r1", PHASE_MAINTENANCE, COND_FALSE, 1);
	put(w, "a3", "east", "r2", PHASE_IN_SERVICE, COND_FALSE, 1);
	put(w, "b1", "west", "r9", PHASE_ENROLLED, 0, 0);
	render(w, 0);
	assert_true(has(w, "fleetplane_site_nodes{site=\"east\"} 3"));
	assert_true(has(w, "fleetplane_site_nodes{site=\"west\"} 1"));
	assert_true(has(w, "fleetplane_nodes_condition{site=\"east\",type=\"BMCReachable\","
			   "status=\"False\"} 2"));
	assert_true(has(w, "fleetplane_nodes_condition{site=\"east\",type=\"BMCReachable\","
			   "status=\"True\"} 1"));
	/* zeros are there: an alert on west's BMCs sees 0, not nothing */
	assert_true(has(w, "fleetplane_nodes_condition{site=\"west\",type=\"BMCReachable\","
			   "status=\"False\"} 0"));
	assert_int_equal(count_prefix(w, "fleetplane_nodes_condition{"),
			 2 * NODE_METRICS_NTYPES * 3);
	assert_true(has(w, "fleetplane_node_info{node=\"a2\",site=\"east\",rack=\"r1\",pool=\"\","
			   "phase=\"maintenance\"} 1"));
	assert_true(has(w, "fleetplane_node_condition{node=\"a3\",type=\"BMCReachable\","
			   "status=\"False\"} 1"));
	assert_int_equal(count_prefix(w, "fleetplane_node_info{"), 4);
	/* three nodes carry BMCReachable; "Custom" is not in the closed set */
	assert_int_equal(count_prefix(w, "fleetplane_node_condition{"), 3);
	assert_null(strstr(w->out.data, "Custom"));
	assert_true(has(w, "fleetplane_node_series_limited 0"));
	assert_int_equal(count_prefix(w, "# TYPE fleetplane_node_info gauge"), 1);
	w_free(w);
}

static void test_limit_all_or_none(void **state)
{
	struct w *w = w_new();
	put(w, "a1", "east", "r1", PHASE_AVAILABLE, COND_TRUE, 1);
	put(w, "a2", "east", "r1", PHASE_AVAILABLE, COND_TRUE, 1);
	put(w, "a3", "east", "r1", PHASE_AVAILABLE, COND_TRUE, 1);
	render(w, 3); /* at the limit: all */
	assert_int_equal(count_prefix(w, "fleetplane_node_info{"), 3);
	assert_true(has(w, "fleetplane_node_series_limited 0"));
	render(w, 2); /* over it: none, and the flag says why; per-site counts stay */
	assert_int_equal(count_prefix(w, "fleetplane_node_info{"), 0);
	assert_int_equal(count_prefix(w, "fleetplane_node_condition{"), 0);
	assert_null(strstr(w->out.data, "# TYPE fleetplane_node_info"));
	assert_true(has(w, "fleetplane_node_series_limited 1"));
	assert_true(has(w, "fleetplane_site_nodes{site=\"east\"} 3"));
	render(w, -1); /* never */
	assert_int_equal(count_prefix(w, "fleetplane_node_info{"), 0);
	assert_true(has(w, "fleetplane_node_series_limited 0"));
	w_free(w);
}

static void test_sites_folded(void **state)
{
	struct w *w = w_new();
	char name[32], site[32];
	for (int i = 0; i < NODE_METRICS_MAX_SITES + 2; i++) {
		snprintf(name, sizeof(name), "n%03d", i);
		snprintf(site, sizeof(site), "s%03d", i);
		put(w, name, site, "r", PHASE_AVAILABLE, COND_TRUE, 1);
	}
	render(w, -1);
	/* NODE_METRICS_MAX_SITES distinct sites, then one "_other" with the rest (2 nodes; site
	 * names are lower-case DNS-style, so "_other" cannot be a real one) */
	assert_int_equal(count_prefix(w, "fleetplane_site_nodes{"), NODE_METRICS_MAX_SITES + 1);
	assert_true(has(w, "fleetplane_site_nodes{site=\"_other\"} 2"));
	assert_true(has(w, "fleetplane_nodes_condition{site=\"_other\",type=\"BMCReachable\","
			   "status=\"True\"} 2"));
	w_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_and_series),
		cmocka_unit_test(test_limit_all_or_none),
		cmocka_unit_test(test_sites_folded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
