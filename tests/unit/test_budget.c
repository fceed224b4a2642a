/* layers: base core store driver engine controller */
/* test_budget.c - disruption budgets (DESIGN.md principle 4, core/budget.h,
 * controller/budget.h): strict documents with errors naming the field, the percentage rule
 * (rounded up like Kubernetes' PodDisruptionBudget), who counts as unavailable, and the service
 * over an in-memory store, the informer cache and a virtual clock: rack counts, reservations
 * for 30 s, percentage and label:nvlink_domain budgets, status for the API, the cache of
 * budgets (5 s or invalidate) and fail-closed on a bad stored budget. Expected values are
 * written by hand from the node documents each test stores. */
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
#include "base/err.h"
#include "base/jsonx.h"
#include "base/metrics.h"
#include "controller/budget.h"
#include "core/budget.h"
#include "core/codec.h"
#include "engine/cache.h"
#include "engine/clock.h"

#define START_WALL 1796000000000LL /* 2026-11-29T22:13:20Z */

static json_t *parse(const char *s)
{
	json_t *v = NULL;
	char e[256];
	if (jsonx_parse(s, strlen(s), &v, e, sizeof(e)) < 0)
		fail_msg("test document does not parse: %s: %s", e, s);
	return v;
}

static void expect_budget_err(const char *doc, const char *want)
{
	struct budget b;
	char e[256] = "";
	json_t *j = parse(doc);
	int rc = budget_from_json(j, 1, &b, e, sizeof(e));
	json_decref(j);
	if (rc != FP_EINVAL || strcmp(e, want) != 0)
		fail_msg("document %s\n  rc %d err \"%s\"\n  want \"%s\"", doc, rc, e, want);
}

static void test_budget_documents(void **state)
{
	(void)state;
	struct budget b;
	char e[256];
	json_t *j = parse("{\"kind\":\"DisruptionBudget\",\"metadata\":{\"name\":\"rack-1\"},"
			  "\"spec\":{\"domain\":\"rack\",\"maxUnavailable\":1}}");
	assert_int_equal(budget_from_json(j, 5, &b, e, sizeof(e)), 0);
	assert_string_equal(b.name, "rack-1");
	assert_string_equal(b.domain, "rack");
	assert_int_equal(b.is_percent, 0);
	assert_int_equal(b.max_count, 1);
	assert_int_equal(b.resource_version, 5);
	json_t *back = budget_to_json(&b);
	assert_true(json_equal(back, j));
	json_decref(back);
	json_decref(j);
	budget_release(&b);

	j = parse("{\"metadata\":{\"name\":\"nvl\"},"
		  "\"spec\":{\"domain\":\"label:nvlink_domain\",\"maxUnavailable\":\"10%\"}}");
	assert_int_equal(budget_from_json(j, 1, &b, e, sizeof(e)), 0);
	assert_string_equal(b.domain, "label:nvlink_domain");
	assert_int_equal(b.is_percent, 1);
	assert_int_equal(b.percent, 10);
	back = budget_to_json(&b);
	assert_string_equal(jsonx_str(back, "spec.maxUnavailable"), "10%");
	assert_string_equal(jsonx_str(back, "kind"), "DisruptionBudget");
	json_decref(back);
	json_decref(j);
	budget_release(&b);

	expect_budget_err("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":\"rack\","
			  "\"maxUnavailable\":1,\"minAvailable\":3}}",
			  "unknown field spec.minAvailable");
	expect_budget_err(
		"{\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":\"row\","
		"\"maxUnavailable\":1}}",
		"spec.domain: \"row\" is not rack, site, pool, nvlink_domain, leaf, pdu or "
		"label:<key> (key 1-63 "
		"characters of [A-Za-z0-9._/-])");
	expect_budget_err(
		"{\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":\"label:\","
		"\"maxUnavailable\":1}}",
		"spec.domain: \"label:\" is not rack, site, pool, nvlink_domain, leaf, pdu "
		"or label:<key> (key 1-63 "
		"characters of [A-Za-z0-9._/-])");
	expect_budget_err(
		"{\"metadata\":{\"name\":\"b\"},\"spec\":{\"maxUnavailable\":1}}",
		"spec.domain: required string: rack, site, pool, nvlink_domain, leaf, pdu or "
		"label:<key>");
	const char *mu_err = "spec.maxUnavailable: expected a count (0..100000) or a percentage "
			     "like \"10%\" (0%..100%)";
	expect_budget_err("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":\"rack\","
			  "\"maxUnavailable\":\"101%\"}}",
			  mu_err);
	expect_budget_err("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":\"rack\","
			  "\"maxUnavailable\":\"ten\"}}",
			  mu_err);
	expect_budget_err("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":\"rack\","
			  "\"maxUnavailable\":1.5}}",
			  mu_err);
	expect_budget_err("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":\"rack\"}}", mu_err);
	expect_budget_err("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":\"rack\","
			  "\"maxUnavailable\":-1}}",
			  "spec.maxUnavailable: -1 is out of range 0..100000");
	expect_budget_err("{\"metadata\":{\"name\":\"B_1\"},\"spec\":{\"domain\":\"rack\","
			  "\"maxUnavailable\":1}}",
			  "metadata.name: \"B_1\" is not a valid name: use lower-case letters, "
			  "digits, '-' and '.', starting and ending with a letter or digit (bad "
			  "character at position 1)");
	expect_budget_err("{\"kind\":\"Node\",\"metadata\":{\"name\":\"b\"},\"spec\":{\"domain\":"
			  "\"rack\",\"maxUnavailable\":1}}",
			  "kind: expected \"DisruptionBudget\"");
	expect_budget_err("{\"metadata\":{\"name\":\"b\",\"owner\":\"x\"},\"spec\":{\"domain\":"
			  "\"rack\",\"maxUnavailable\":1}}",
			  "unknown field metadata.owner");
	expect_budget_err("{\"metadata\":{\"name\":\"b\"}}",
			  "spec: expected an object with domain and maxUnavailable");
}

static void test_budget_rules(void **state)
{
	(void)state;
	struct budget b = {.name = "p", .domain = "rack", .is_percent = 1, .percent = 10};
	assert_int_equal(budget_max(&b, 10), 1);
	assert_int_equal(budget_max(&b, 11), 2); /* 1.1 rounds up */
	assert_int_equal(budget_max(&b, 1), 1);
	assert_int_equal(budget_max(&b, 0), 0);
	b.percent = 25;
	assert_int_equal(budget_max(&b, 8), 2);
	assert_int_equal(budget_max(&b, 9), 3);
	b.percent = 0;
	assert_int_equal(budget_max(&b, 100), 0);
	b.is_percent = 0;
	b.max_count = 3;
	assert_int_equal(budget_max(&b, 1), 3);

	struct node *n = node_new();
	n->rack = xstrdup("r01");
	n->site = xstrdup("s1");
	n->pool = xstrdup("train");
	n->labels = xcalloc(1, sizeof(*n->labels));
	n->labels[0].key = xstrdup("nvlink_domain");
	n->labels[0].value = xstrdup("nvl-a");
	n->nlabels = 1;
	struct budget r = {.domain = "rack"}, s = {.domain = "site"}, p = {.domain = "pool"},
		      l = {.domain = "label:nvlink_domain"}, l2 = {.domain = "label:row"};
	assert_string_equal(budget_domain_value(&r, n), "r01");
	assert_string_equal(budget_domain_value(&s, n), "s1");
	assert_string_equal(budget_domain_value(&p, n), "train");
	assert_string_equal(budget_domain_value(&l, n), "nvl-a");
	assert_null(budget_domain_value(&l2, n));
	/* one meaning for every domain form: a bare failure-domain key is the node label of that
	 * key (a budget on bare nvlink_domain matched nothing before), empty = not in it */
	struct budget bare = {.domain = "nvlink_domain"}, leaf = {.domain = "leaf"};
	assert_string_equal(budget_domain_value(&bare, n), "nvl-a");
	assert_null(budget_domain_value(&leaf, n));
	assert_string_equal(node_domain_value(n, "rack"), "r01");
	assert_string_equal(node_domain_value(n, "site"), "s1");
	assert_string_equal(node_domain_value(n, "pool"), "train");
	assert_string_equal(node_domain_value(n, "label:nvlink_domain"), "nvl-a");
	assert_string_equal(node_domain_value(n, "nvlink_domain"), "nvl-a");
	assert_null(node_domain_value(n, "label:pdu"));
	assert_null(node_domain_value(n, "pdu"));
	free(n->site);
	n->site = xstrdup("");
	assert_null(node_domain_value(n, "site"));
	free(n->site);
	n->site = xstrdup("s1");

	/* never served: never counts */
	static const int counts_when_served[PHASE__COUNT] = {[PHASE_DRAINING] = 1,
							     [PHASE_MAINTENANCE] = 1,
							     [PHASE_REPAIRING] = 1,
							     [PHASE_VALIDATING] = 1,
							     [PHASE_FAILED] = 1};
	for (int ph = 0; ph < PHASE__COUNT; ph++) {
		n->phase = (enum node_phase)ph;
		n->served_at = 0;
		assert_int_equal(budget_node_unavailable(n), 0);
		n->served_at = START_WALL;
		assert_int_equal(budget_node_unavailable(n), counts_when_served[ph]);
	}
	node_free(n);
}

/* ---- the service ---- */

struct bw {
	struct store *store;
	struct fp_clock *clock;
	struct cache *cache;
	struct budget_svc *svc;
};

static struct bw *bw_new(void)
{
	struct bw *w = xcalloc(1, sizeof(*w));
	char err[128];
	assert_int_equal(store_open("mem:", &w->store, err, sizeof(err)), 0);
	w->clock = clock_virtual_new(START_WALL);
	w->cache = cache_new(w->store);
	assert_true(cache_sync_now(w->cache) >= 0);
	w->svc = budget_svc_new(w->store, w->cache, w->clock);
	return w;
}

static void bw_free(struct bw *w)
{
	budget_svc_free(w->svc);
	cache_free(w->cache);
	clock_free(w->clock);
	store_close(w->store);
	free(w);
}

/* Stores (or overwrites) node `name` in rack `rack` with phase, servedAt set when served, and
 * an optional nvlink_domain label; then brings the cache up to date. */
static void put_node(struct bw *w, const char *name, const char *rack, const char *nvl,
		     enum node_phase phase, int served, int waiting)
{
	struct node *n = node_new();
	n->name = xstrdup(name);
	n->rack = xstrdup(rack);
	n->site = xstrdup("site-a");
	n->pool = xstrdup("train");
	n->bmc.driver = xstrdup("sim");
	if (nvl) {
		n->labels = xcalloc(1, sizeof(*n->labels));
		n->labels[0].key = xstrdup("nvlink_domain");
		n->labels[0].value = xstrdup(nvl);
		n->nlabels = 1;
	}
	n->phase = phase;
	n->served_at = served ? START_WALL : 0;
	if (waiting)
		node_condition_set(n, "DisruptionAllowed", COND_FALSE, "BudgetExhausted", "x",
				   START_WALL);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc), key[80];
	snprintf(key, sizeof(key), "/nodes/%s", name);
	assert_int_equal(store_put(w->store, key, val, STORE_ANY, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
	assert_true(cache_sync_now(w->cache) >= 0);
}

static void put_budget(struct bw *w, const char *name, const char *domain, const char *mu_json)
{
	char key[80], val[256];
	snprintf(key, sizeof(key), "/budgets/%s", name);
	snprintf(val, sizeof(val),
		 "{\"kind\":\"DisruptionBudget\",\"metadata\":{\"name\":\"%s\"},\"spec\":"
		 "{\"domain\":\"%s\",\"maxUnavailable\":%s}}",
		 name, domain, mu_json);
	assert_int_equal(store_put(w->store, key, val, STORE_ANY, NULL), 0);
	budget_svc_invalidate(w->svc);
}

/* budget_admit for the cached node `name`; why copied to why_out when not NULL. */
static int admit(struct bw *w, const char *name, char *why_out, size_t len)
{
	struct node *n = cache_node_get(w->cache, name);
	assert_non_null(n);
	char why[512] = "";
	int ok = budget_admit(w->svc, n, why, sizeof(why));
	if (why_out)
		snprintf(why_out, len, "%s", why);
	if (ok)
		assert_string_equal(why, "");
	node_free(n);
	return ok;
}

static void rack_of_ten(struct bw *w, const char *rack, const char *nvl)
{
	for (int i = 1; i <= 10; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%sn%02d", rack, i);
		put_node(w, name, rack, nvl, PHASE_AVAILABLE, 1, 0);
	}
}

static void test_svc_rack_count(void **state)
{
	(void)state;
	struct bw *w = bw_new();
	rack_of_ten(w, "r01", NULL);
	rack_of_ten(w, "r02", NULL);
	char why[512];
	/* no budget: admitted */
	assert_int_equal(admit(w, "r01n01", why, sizeof(why)), 1);
	put_budget(w, "rack-1", "rack", "1");
	/* r01n01 holds a reservation from the admission above (30 s) */
	assert_int_equal(admit(w, "r01n02", why, sizeof(why)), 0);
	assert_string_equal(why, "budget rack-1: rack r01 has 1 of max 1 unavailable (r01n01)");
	/* the other rack is not affected */
	assert_int_equal(admit(w, "r02n01", why, sizeof(why)), 1);
	/* the admitted node itself is admitted again (others out + itself fit) */
	assert_int_equal(admit(w, "r01n01", why, sizeof(why)), 1);
	/* the cache shows r01n01 draining: it counts by its phase */
	put_node(w, "r01n01", "r01", NULL, PHASE_DRAINING, 1, 0);
	clock_virtual_advance(w->clock, 31000);
	assert_int_equal(admit(w, "r01n02", why, sizeof(why)), 0);
	assert_string_equal(why, "budget rack-1: rack r01 has 1 of max 1 unavailable (r01n01)");
	/* back in service: the reservation was dropped when the phase showed, so r01n02 passes */
	put_node(w, "r01n01", "r01", NULL, PHASE_AVAILABLE, 1, 0);
	assert_int_equal(admit(w, "r01n02", why, sizeof(why)), 1);
	/* never-served and retiring nodes do not count */
	clock_virtual_advance(w->clock, 31000);
	put_node(w, "r01n02", "r01", NULL, PHASE_AVAILABLE, 1, 0);
	put_node(w, "r01n03", "r01", NULL, PHASE_REPAIRING, 0, 0);
	put_node(w, "r01n04", "r01", NULL, PHASE_RETIRING, 1, 0);
	assert_int_equal(admit(w, "r01n05", why, sizeof(why)), 1);
	/* reservation ends after 30 s without the cache showing the node out */
	clock_virtual_advance(w->clock, 29999);
	assert_int_equal(admit(w, "r01n06", why, sizeof(why)), 0);
	assert_string_equal(why, "budget rack-1: rack r01 has 1 of max 1 unavailable (r01n05)");
	clock_virtual_advance(w->clock, 1);
	assert_int_equal(admit(w, "r01n06", why, sizeof(why)), 1);
	/* a node healed before anyone counted it out (the cache never showed it unavailable):
	 * its reservation ends as soon as the cache shows it available in a version written
	 * after the admission, not 30 s later */
	clock_virtual_advance(w->clock, 30000);
	assert_int_equal(admit(w, "r01n07", why, sizeof(why)), 1);
	assert_int_equal(admit(w, "r01n08", why, sizeof(why)), 0);
	assert_string_equal(why, "budget rack-1: rack r01 has 1 of max 1 unavailable (r01n07)");
	put_node(w, "r01n07", "r01", NULL, PHASE_AVAILABLE, 1, 0);
	json_t *st = budget_svc_status(w->svc, "rack-1");
	json_t *r01 = json_array_get(json_object_get(st, "domains"), 0);
	assert_string_equal(jsonx_str(r01, "value"), "r01");
	assert_int_equal(json_integer_value(json_object_get(r01, "unavailable")), 0);
	assert_int_equal(json_array_size(json_object_get(r01, "out")), 0);
	json_decref(st);
	assert_int_equal(admit(w, "r01n08", why, sizeof(why)), 1);
	/* maxUnavailable 0 admits nothing */
	clock_virtual_advance(w->clock, 30000);
	put_budget(w, "rack-1", "rack", "0");
	assert_int_equal(admit(w, "r01n07", why, sizeof(why)), 0);
	assert_string_equal(why, "budget rack-1: rack r01 has 0 of max 0 unavailable");
	bw_free(w);
}

static void test_svc_percent_and_label(void **state)
{
	(void)state;
	struct bw *w = bw_new();
	rack_of_ten(w, "r01", "nvl-a");
	rack_of_ten(w, "r02", "nvl-a");
	rack_of_ten(w, "r03", "nvl-b");
	char why[512];
	/* 20 nodes in nvl-a: 10% = 2 */
	put_budget(w, "nvl", "label:nvlink_domain", "\"10%\"");
	put_node(w, "r01n01", "r01", "nvl-a", PHASE_REPAIRING, 1, 0);
	assert_int_equal(admit(w, "r02n05", why, sizeof(why)), 1);
	assert_int_equal(admit(w, "r01n02", why, sizeof(why)), 0);
	assert_string_equal(why, "budget nvl: nvlink_domain nvl-a has 2 of max 2 unavailable "
				 "(r01n01, r02n05)");
	/* nvl-b has its own 10% of 10 = 1 */
	assert_int_equal(admit(w, "r03n01", why, sizeof(why)), 1);
	assert_int_equal(admit(w, "r03n02", why, sizeof(why)), 0);
	assert_string_equal(why, "budget nvl: nvlink_domain nvl-b has 1 of max 1 unavailable "
				 "(r03n01)");
	/* a node without the label is outside the domain: admitted */
	put_node(w, "x01", "r09", NULL, PHASE_AVAILABLE, 1, 0);
	assert_int_equal(admit(w, "x01", why, sizeof(why)), 1);
	/* two budgets: both must pass; the rack one refuses first in store order */
	clock_virtual_advance(w->clock, 30000);
	put_budget(w, "a-rack", "rack", "\"0%\"");
	assert_int_equal(admit(w, "r02n06", why, sizeof(why)), 0);
	assert_string_equal(why, "budget a-rack: rack r02 has 0 of max 0 unavailable");
	bw_free(w);
}

/* A budget on the bare failure-domain key nvlink_domain (the breaker's default domain) counts
 * the nodes whose nvlink_domain label has the value, like label:nvlink_domain; before the one
 * node_domain_value such a budget was refused as a domain and matched nothing. */
static void test_svc_bare_label_domain(void **state)
{
	(void)state;
	struct bw *w = bw_new();
	rack_of_ten(w, "r01", "nvl-a");
	rack_of_ten(w, "r02", "nvl-a");
	char why[512];
	put_budget(w, "nvl", "nvlink_domain", "1");
	put_node(w, "r01n01", "r01", "nvl-a", PHASE_REPAIRING, 1, 0);
	assert_int_equal(admit(w, "r02n05", why, sizeof(why)), 0);
	assert_string_equal(why, "budget nvl: nvlink_domain nvl-a has 1 of max 1 unavailable "
				 "(r01n01)");
	json_t *st = budget_svc_status(w->svc, "nvl");
	json_t *d = json_array_get(json_object_get(st, "domains"), 0);
	assert_non_null(d);
	assert_string_equal(jsonx_str(d, "value"), "nvl-a");
	assert_int_equal(json_integer_value(json_object_get(d, "nodes")), 20);
	json_decref(st);
	/* outside the domain (no label): admitted */
	put_node(w, "x01", "r09", NULL, PHASE_AVAILABLE, 1, 0);
	assert_int_equal(admit(w, "x01", why, sizeof(why)), 1);
	bw_free(w);
}

static void test_svc_status_and_cache(void **state)
{
	(void)state;
	struct bw *w = bw_new();
	put_node(w, "a1", "r01", NULL, PHASE_AVAILABLE, 1, 0);
	put_node(w, "a2", "r01", NULL, PHASE_MAINTENANCE, 1, 0);
	put_node(w, "a3", "r01", NULL, PHASE_AVAILABLE, 1, 1);
	put_node(w, "b1", "r02", NULL, PHASE_FAILED, 1, 0);
	put_node(w, "b2", "r02", NULL, PHASE_DRAINING, 1, 0);
	put_budget(w, "rack-1", "rack", "1");
	assert_null(budget_svc_status(w->svc, "nope"));
	json_t *st = budget_svc_status(w->svc, "rack-1");
	json_t *want = parse("{\"domains\":["
			     "{\"value\":\"r01\",\"nodes\":3,\"unavailable\":1,\"max\":1,"
			     "\"remaining\":0,\"out\":[\"a2\"],\"waiting\":[\"a3\"]},"
			     "{\"value\":\"r02\",\"nodes\":2,\"unavailable\":2,\"max\":1,"
			     "\"remaining\":0,\"out\":[\"b1\",\"b2\"],\"waiting\":[]}]}");
	if (!json_equal(st, want))
		fail_msg("status: %s", jsonx_dumps(st));
	json_decref(want);
	json_decref(st);

	/* metrics: remaining per budget and value, and the nodes waiting */
	struct buf m;
	buf_init(&m, 0);
	metrics_render(&m);
	size_t len;
	char *text = buf_detach(&m, &len);
	assert_non_null(
		strstr(text, "fleetplane_budget_remaining{budget=\"rack-1\",value=\"r01\"} 0\n"));
	assert_non_null(
		strstr(text, "fleetplane_budget_remaining{budget=\"rack-1\",value=\"r02\"} 0\n"));
	assert_non_null(strstr(text, "fleetplane_disruptions_waiting 1\n"));
	free(text);

	/* a budget written without invalidate is seen after 5 s */
	char key[] = "/budgets/rack-1";
	assert_int_equal(store_put(w->store, key,
				   "{\"metadata\":{\"name\":\"rack-1\"},\"spec\":{\"domain\":"
				   "\"rack\",\"maxUnavailable\":3}}",
				   STORE_ANY, NULL),
			 0);
	char why[512];
	assert_int_equal(admit(w, "b1", why, sizeof(why)), 0);
	assert_string_equal(why, "budget rack-1: rack r02 has 1 of max 1 unavailable (b2)");
	clock_virtual_advance(w->clock, 5000);
	assert_int_equal(admit(w, "b1", why, sizeof(why)), 1);

	/* a stored budget that does not decode: every disruption is refused, naming it */
	assert_int_equal(store_put(w->store, "/budgets/zz",
				   "{\"metadata\":{\"name\":\"zz\"},\"spec\":{\"domain\":\"row\","
				   "\"maxUnavailable\":3}}",
				   STORE_ANY, NULL),
			 0);
	budget_svc_invalidate(w->svc);
	assert_int_equal(admit(w, "a1", why, sizeof(why)), 0);
	assert_string_equal(why,
			    "stored budget /budgets/zz is invalid: spec.domain: \"row\" is "
			    "not rack, site, pool, nvlink_domain, leaf, pdu or label:<key> (key "
			    "1-63 characters of "
			    "[A-Za-z0-9._/-])");
	bw_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_documents),
		cmocka_unit_test(test_budget_rules),
		cmocka_unit_test(test_svc_rack_count),
		cmocka_unit_test(test_svc_percent_and_label),
		cmocka_unit_test(test_svc_bare_label_domain),
		cmocka_unit_test(test_svc_status_and_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
