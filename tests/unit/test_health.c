/* layers: base core store driver engine controller api agent fleet */
/* test_health.c - the health policy (core/health.h) and the health controller
 * (controller/health.h) on an in-memory store and a virtual clock: the compiled XID catalog,
 * the policy codec and its errors, and agent reports carrying real kernel lines
 * (tests/data/health/xid-lines.log, SOURCES.md there) - hold + remediation in one revision,
 * duplicates, N of M, job attribution, distinct jobs, the correlated-failure breaker, dry run,
 * bounds, and the AgentAlive sweep. Every expected value is written by hand from the input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "controller/health.h"
#include "core/codec.h"
#include "core/health.h"
#include "engine/clock.h"
#include "support/harness.h"

#define START_WALL 1796000000000LL /* 2026-11-30T00:53:20Z */
#define SEC 1000LL

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

/* Line i (0-based) of tests/data/health/xid-lines.log, without its newline. */
static void xid_line(int i, char *out, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/data/health/xid-lines.log", srcdir());
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	for (int k = 0; k <= i; k++)
		assert_non_null(fgets(out, (int)len, f));
	fclose(f);
	out[strcspn(out, "\n")] = 0;
}

/* ---------------------------------------------------------------- policy */

static void assert_ladder(const struct health_rule *r, const char *want)
{
	json_t *j = health_rule_to_json(r);
	char *s = jsonx_dumps(json_object_get(j, "ladder"));
	assert_string_equal(s, want);
	free(s);
	json_decref(j);
}

static void test_catalog_rows(void **state)
{
	assert_int_equal(xid_catalog_len, 66);
	const struct xid_catalog_entry *x = xid_catalog_find(79);
	assert_non_null(x);
	assert_string_equal(x->name, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
	assert_int_equal(x->severity, SEV_CRITICAL);
	assert_int_equal(xid_catalog_find(13)->severity, SEV_LOW);
	assert_int_equal(xid_catalog_find(92)->severity, SEV_WARNING);
	assert_null(xid_catalog_find(12));

	struct health_policy *p = health_policy_default();
	const struct health_rule *r = health_rule_find(p, "xid:79");
	assert_non_null(r);
	assert_int_equal(r->severity, SEV_CRITICAL);
	assert_int_equal(r->action, HEALTH_ACTION_HOLD);
	assert_int_equal(r->count, 1);
	assert_int_equal(r->distinct_jobs, 0);
	assert_ladder(r, "[\"reboot\",\"reimage\",\"rma\"]");
	r = health_rule_find(p, "xid:13");
	assert_int_equal(r->severity, SEV_LOW);
	assert_int_equal(r->action, HEALTH_ACTION_NONE);
	r = health_rule_find(p, "xid:94");
	assert_int_equal(r->severity, SEV_MEDIUM);
	assert_int_equal(r->action, HEALTH_ACTION_HOLD);
	assert_int_equal(r->count, 2);
	assert_int_equal(r->window_s, 3600);
	assert_int_equal(r->distinct_jobs, 3);
	assert_ladder(r, "[\"gpu_reset\",\"reboot\",\"reimage\",\"rma\"]");
	r = health_rule_find(p, "xid:109");
	assert_int_equal(r->severity, SEV_HIGH);
	assert_int_equal(r->count, 1);
	assert_int_equal(r->distinct_jobs, 2);
	r = health_rule_find(p, "xid:92");
	assert_int_equal(r->action, HEALTH_ACTION_HOLD);
	assert_int_equal(r->count, 3);
	assert_int_equal(r->window_s, 86400);
	assert_ladder(health_rule_find(p, "xid:54"), "[]");
	assert_ladder(health_rule_find(p, "xid:157"), "[\"rma\"]");
	assert_int_equal(health_rule_find(p, "xid:164")->action, HEALTH_ACTION_NONE);
	assert_string_equal(health_rule_find(p, "sxid:12028")->code, "sxid:*");
	assert_string_equal(health_rule_find(p, "dcgm:thermal")->code, "dcgm:*");
	assert_string_equal(health_rule_find(p, "dcgm:pcie")->code, "dcgm:pcie");
	assert_ladder(health_rule_find(p, "gpu:fallen_off_bus"),
		      "[\"reboot\",\"reimage\",\"rma\"]");
	assert_int_equal(health_rule_find(p, "power:brake_slowdown")->action, HEALTH_ACTION_NONE);
	assert_int_equal(health_rule_find(p, "nvlink:link_down")->action, HEALTH_ACTION_HOLD);
	assert_null(health_rule_find(p, "xid:12"));
	assert_null(health_rule_find(p, "made:up"));
	assert_int_equal(health_rule_find(p, "slurm:completing_stuck")->action, HEALTH_ACTION_HOLD);
	assert_ladder(health_rule_find(p, "slurm:completing_stuck"), "[\"reboot\"]");
	assert_ladder(health_rule_find(p, "slurm:kill_task_failed"), "[\"reboot\"]");
	r = health_rule_find(p, "slurm:gpu_idle");
	assert_string_equal(r->code, "slurm:gpu_idle");
	assert_int_equal(r->severity, SEV_WARNING);
	assert_int_equal(r->action, HEALTH_ACTION_HOLD);
	assert_int_equal(r->count, 1);
	assert_int_equal(r->window_s, 86400);
	assert_int_equal(r->distinct_jobs, 2);
	assert_ladder(r, "[\"reboot\",\"reimage\",\"rma\"]");
	/* The GPU's own recovery action decides the rung (issue 16, "GPU signals" 1). */
	r = health_rule_find(p, "gpu:reset_required");
	assert_string_equal(r->code, "gpu:reset_required");
	assert_int_equal(r->action, HEALTH_ACTION_HOLD);
	assert_int_equal(r->count, 1);
	assert_ladder(r, "[\"gpu_reset\",\"reboot\",\"reimage\",\"rma\"]");
	assert_ladder(health_rule_find(p, "gpu:drain_and_reset"),
		      "[\"gpu_reset\",\"reboot\",\"reimage\",\"rma\"]");
	assert_ladder(health_rule_find(p, "gpu:reboot_required"),
		      "[\"reboot\",\"reimage\",\"rma\"]");
	r = health_rule_find(p, "gpu:drain_p2p");
	assert_int_equal(r->action, HEALTH_ACTION_HOLD);
	assert_ladder(r, "[]");
	r = health_rule_find(p, "roce:port_down");
	assert_int_equal(r->action, HEALTH_ACTION_HOLD);
	assert_ladder(r, "[\"reboot\"]");
	assert_int_equal(p->nrules, 66 + 29 + 5);
	health_policy_free(p);
}

static void test_policy_roundtrip(void **state)
{
	struct health_policy *p = health_policy_default();
	json_t *a = health_policy_to_json(p, 0);
	struct health_policy *q = NULL;
	char err[256];
	assert_int_equal(health_policy_from_json(a, 7, &q, err, sizeof(err)), 0);
	assert_int_equal(q->resource_version, 7);
	json_t *b = health_policy_to_json(q, 0);
	assert_true(json_equal(a, b));
	json_decref(b);
	json_t *c = health_policy_to_json(q, 1);
	assert_string_equal(jsonx_str(c, "metadata.resourceVersion"), "7");
	json_decref(c);
	/* A partial document overlays the compiled default. */
	json_t *part = NULL;
	const char *txt =
		"{\"spec\":{\"dryRun\":true,\"rules\":[{\"code\":\"xid:13\",\"action\":\"hold\","
		"\"count\":5,\"windowSeconds\":60},{\"code\":\"custom:thing\",\"action\":\"hold\"}],"
		"\"breaker\":{\"maxNodes\":10,\"domains\":[\"rack\",\"nvlink_domain\"]}}}";
	assert_int_equal(jsonx_parse(txt, strlen(txt), &part, err, sizeof(err)), 0);
	struct health_policy *r = NULL;
	assert_int_equal(health_policy_from_json(part, 0, &r, err, sizeof(err)), 0);
	assert_int_equal(r->dry_run, 1);
	const struct health_rule *x = health_rule_find(r, "xid:13");
	assert_int_equal(x->action, HEALTH_ACTION_HOLD);
	assert_int_equal(x->count, 5);
	assert_int_equal(x->window_s, 60);
	assert_int_equal(x->severity, SEV_LOW); /* kept from the compiled rule */
	x = health_rule_find(r, "custom:thing");
	assert_int_equal(x->severity, SEV_WARNING);
	assert_int_equal(x->count, 1);
	assert_int_equal(r->nrules, 66 + 29 + 5 + 1);
	assert_int_equal(r->breaker.max_nodes, 10);
	assert_int_equal(r->breaker.ndomains, 2);
	assert_string_equal(r->breaker.domains[1], "nvlink_domain");
	assert_int_equal(r->job_attribution.min_nodes, 3);
	health_policy_free(r);
	json_decref(part);
	json_decref(a);
	health_policy_free(q);
	health_policy_free(p);
}

static void policy_bad(const char *txt, const char *want)
{
	json_t *d = NULL;
	char err[256] = "";
	assert_int_equal(jsonx_parse(txt, strlen(txt), &d, err, sizeof(err)), 0);
	struct health_policy *p = (struct health_policy *)1;
	assert_int_equal(health_policy_from_json(d, 0, &p, err, sizeof(err)), FP_EINVAL);
	assert_null(p);
	assert_string_equal(err, want);
	json_decref(d);
}

static void test_policy_errors(void **state)
{
	policy_bad("{\"spec\":{\"dryrun\":true}}", "unknown field spec.dryrun");
	policy_bad("{\"kind\":\"Node\",\"spec\":{}}", "kind: expected \"HealthPolicy\"");
	policy_bad("{}", "spec: required");
	policy_bad("{\"metadata\":{\"name\":\"other\"},\"spec\":{}}",
		   "metadata.name: only the policy \"default\" exists");
	policy_bad("{\"spec\":{\"rules\":[{\"code\":\"XID:79\"}]}}",
		   "spec.rules[0].code: code family may hold only [a-z0-9_-] (byte 0)");
	policy_bad(
		"{\"spec\":{\"rules\":[{\"code\":\"xid:79\",\"ladder\":[\"reboot\",\"gpu_reset\"]}]}}",
		"spec.rules[0].ladder[1]: rungs must be distinct and in the order gpu_reset, reboot, reimage, rma");
	policy_bad("{\"spec\":{\"rules\":[{\"code\":\"xid:79\",\"ladder\":[\"pray\"]}]}}",
		   "spec.rules[0].ladder[0]: expected gpu_reset, reboot, reimage or rma");
	policy_bad("{\"spec\":{\"rules\":[{\"code\":\"xid:79\",\"count\":0}]}}",
		   "spec.rules[0].count: 0 is out of range 1..64");
	policy_bad("{\"spec\":{\"rules\":[{\"code\":\"xid:79\",\"action\":\"drain\"}]}}",
		   "spec.rules[0].action: expected hold or none");
	policy_bad("{\"spec\":{\"rules\":[{\"code\":\"x:1\",\"count\":2,\"windowSeconds\":0}]}}",
		   "spec.rules[0].windowSeconds: must be > 0 when count > 1 or distinctJobs > 0");
	policy_bad("{\"spec\":{\"rules\":[{\"code\":\"x:1\"},{\"code\":\"x:1\"}]}}",
		   "spec.rules[1].code: x:1 is given twice (also spec.rules[0])");
	policy_bad("{\"spec\":{\"rules\":[{\"code\":\"x:1\",\"colour\":1}]}}",
		   "unknown field spec.rules[0].colour");
	policy_bad("{\"spec\":{\"breaker\":{\"domains\":[\"rack\",\"rack\"]}}}",
		   "spec.breaker.domains[1]: rack is given twice");
	policy_bad("{\"spec\":{\"breaker\":{\"enabled\":1}}}",
		   "spec.breaker.enabled: expected true or false");
	policy_bad("{\"spec\":{\"jobAttribution\":{\"minNodes\":1}}}",
		   "spec.jobAttribution.minNodes: 1 is out of range 2..64");
	policy_bad("{\"spec\":{\"lemon\":{\"rmaScore\":\"3\"}}}",
		   "spec.lemon.rmaScore: expected an integer");
}

static void test_windows_and_lemon(void **state)
{
	struct health_window w = {0};
	health_window_add(&w, 1000, "j1", 1);
	health_window_add(&w, 2000, "j2", 2);
	health_window_add(&w, 3000, "j1", 2);
	assert_int_equal(health_window_count(&w, 3000, 2500), 3);
	assert_int_equal(health_window_count(&w, 3000, 2000), 2); /* (1000, 3000] */
	assert_int_equal(health_window_distinct(&w, 3000, 5000), 2);
	char tags[64];
	health_window_tags(&w, 3000, 5000, tags, sizeof(tags));
	assert_string_equal(tags, "j1, j2");
	health_window_undo(&w, 2);
	assert_int_equal(health_window_count(&w, 3000, 5000), 1);
	health_window_prune(&w, 3000, 1000);
	assert_int_equal(w.n, 0);
	for (int i = 0; i < HEALTH_WINDOW_MAX + 5; i++)
		health_window_add(&w, i, "x", 0);
	assert_int_equal(w.n, HEALTH_WINDOW_MAX);
	assert_int_equal(health_window_count(&w, 200, 200 - 5 + 1),
			 HEALTH_WINDOW_MAX); /* 5.. kept */
	health_window_release(&w);

	struct health_policy *p = health_policy_default();
	const struct health_rule *r94 = health_rule_find(p, "xid:94");
	struct node *n = node_new();
	int64_t now = START_WALL;
	struct health_lemon l;
	health_lemon_score(p, n, "0000:9b:00.0", 0, now, &l);
	assert_int_equal(l.gpu_score, 0);
	assert_int_equal(health_start_rung(p, r94, &l), 0);
	/* Last remediation of this GPU 2 days ago used reboot: start after it (reimage). */
	n->remediation_history = xcalloc(3, sizeof(*n->remediation_history));
	n->remediation_history[0] = (struct node_remediation_record){xstrdup("xid:94"),
								     xstrdup("0000:9b:00.0"),
								     RUNG_REBOOT,
								     xstrdup("succeeded"),
								     now - 2 * 86400 * SEC};
	n->nremediation_history = 1;
	health_lemon_score(p, n, "0000:9b:00.0", 0, now, &l);
	assert_int_equal(l.gpu_score, 1);
	assert_int_equal(l.recurred, 1);
	assert_int_equal(l.last_rung, RUNG_REBOOT);
	assert_int_equal(health_start_rung(p, r94, &l), 2);
	/* Another GPU: no recurrence, node score 1, GPU score 0. */
	health_lemon_score(p, n, "0000:3b:00.0", 0, now, &l);
	assert_int_equal(l.node_score, 1);
	assert_int_equal(l.gpu_score, 0);
	assert_int_equal(l.recurred, 0);
	assert_int_equal(health_start_rung(p, r94, &l), 0);
	/* Score 3 (two finished + one hold in progress) starts at rma. */
	n->remediation_history[1] = (struct node_remediation_record){xstrdup("xid:94"),
								     xstrdup("0000:9b:00.0"),
								     RUNG_GPU_RESET,
								     xstrdup("succeeded"),
								     now - 20 * 86400 * SEC};
	n->nremediation_history = 2;
	health_lemon_score(p, n, "0000:9b:00.0", 1, now, &l);
	assert_int_equal(l.gpu_score, 3);
	assert_int_equal(health_start_rung(p, r94, &l), 3);
	node_free(n);
	health_policy_free(p);
}

/* ---------------------------------------------------------------- controller world */

/* The shared test world (support/harness.h) with just the health controller running: no cache,
 * no lifecycle, so every read is the store's. */
struct world {
	struct harness *hn;
	struct store *store;
	struct fp_clock *clock;
	struct health *h;
};

static void put_node(struct world *w, const char *name, const char *rack, enum node_phase ph)
{
	char key[64];
	snprintf(key, sizeof(key), "/nodes/%s", name);
	struct node *nd = node_new();
	nd->name = xstrdup(name);
	nd->uid = xstrdup(name);
	nd->site = xstrdup("site-a");
	nd->rack = xstrdup(rack);
	nd->bmc.driver = xstrdup("sim");
	nd->gpu_count = 8;
	nd->phase = ph;
	nd->phase_since = nd->created_at = clock_wall_ms(w->clock);
	if (ph == PHASE_AVAILABLE)
		nd->served_at = nd->created_at;
	json_t *doc = node_to_json(nd, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc);
	assert_int_equal(store_put(w->store, key, val, STORE_ANY, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(nd);
}

static void health_up(struct world *w)
{
	harness_up(w->hn);
	w->h = harness_health(w->hn);
	assert_non_null(w->h);
}

/* The control plane restarts: the health controller's memory is gone, the store stays. */
static void health_restart(struct world *w)
{
	harness_down(w->hn);
	w->h = NULL;
	health_up(w);
}

/* Writes n back over its stored document (CAS on n->resource_version). */
static void put_node_doc(struct world *w, const struct node *n)
{
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc), key[64];
	snprintf(key, sizeof(key), "/nodes/%s", n->name);
	assert_int_equal(store_put(w->store, key, val, n->resource_version, NULL), 0);
	free(val);
	json_decref(doc);
}

/* The fleet parts world_new starts: the health controller alone (it reads the store), or
 * with the informer cache (test_agent_alive_sweep_cached: it reads the cache's copies). */
static unsigned world_parts = FLEET_HEALTH;

static struct world *world_new(void)
{
	struct world *w = xcalloc(1, sizeof(*w));
	struct harness_config hc = {.start_wall_ms = START_WALL, .parts = world_parts};
	w->hn = harness_new(&hc);
	w->store = w->hn->store;
	w->clock = w->hn->clock;
	health_up(w);
	return w;
}

static void world_free(struct world *w)
{
	harness_free(w->hn);
	free(w);
}

static struct node *get_node(struct world *w, const char *name)
{
	char key[64], err[256];
	struct store_kv kv = {0};
	snprintf(key, sizeof(key), "/nodes/%s", name);
	assert_int_equal(store_get(w->store, key, &kv), 0);
	json_t *doc = NULL;
	struct node *n = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &doc, err, sizeof(err)), 0);
	assert_int_equal(node_from_json(doc, kv.mod_revision, &n, err, sizeof(err)), 0);
	json_decref(doc);
	store_kv_release(&kv);
	return n;
}

/* One event {id, code, gpu bus, job or NULL, raw or NULL}; source kernel. */
static json_t *ev(const char *id, const char *code, const char *bus, const char *job,
		  const char *raw)
{
	json_t *e = json_pack("{s:s, s:s, s:s}", "id", id, "source", "kernel", "code", code);
	if (bus)
		json_object_set_new(e, "gpu", json_pack("{s:s}", "pciBusId", bus));
	if (job)
		json_object_set_new(e, "job", json_string(job));
	if (raw)
		json_object_set_new(e, "raw", json_string(raw));
	return e;
}

/* Sends {agent, events:[e]} (steals e); returns the result, asserts rc 0. */
static json_t *send1(struct world *w, const char *node, json_t *e)
{
	json_t *rep = json_pack("{s:{s:s, s:i}, s:[o]}", "agent", "version", "0.4.0",
				"intervalSeconds", 30, "events", e);
	json_t *res = NULL;
	char err[256] = "";
	int rc = health_report(w->h, node, "agent:x", rep, clock_wall_ms(w->clock), &res, err,
			       sizeof(err));
	if (rc)
		fprintf(stderr, "health_report: %s\n", err);
	assert_int_equal(rc, 0);
	json_decref(rep);
	return res;
}

static const char *action0(const json_t *res)
{
	return jsonx_str(json_array_get(json_object_get(res, "decisions"), 0), "action");
}

/* Number of audit events with this reason; *last gets the newest one's message. */
static int events_with(struct world *w, const char *reason, char *last, size_t len)
{
	struct store_kv *items = NULL;
	size_t n = 0;
	int c = 0;
	assert_int_equal(store_list(w->store, "/events/", NULL, 0, &items, &n, NULL, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		json_t *d = NULL;
		assert_int_equal(jsonx_parse(items[i].value, strlen(items[i].value), &d, NULL, 0),
				 0);
		if (strcmp(jsonx_str(d, "reason"), reason) == 0) {
			c++;
			if (last)
				snprintf(last, len, "%s", jsonx_str(d, "message"));
		}
		json_decref(d);
	}
	store_kv_array_free(items, n);
	return c;
}

static int held(struct world *w, const char *name)
{
	struct node *n = get_node(w, name);
	int r = node_hold_find(n, "health") != NULL;
	node_free(n);
	return r;
}

static void test_xid79_holds_in_one_revision(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	char line[512];
	xid_line(0, line,
		 sizeof(line)); /* NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus */
	json_t *e = ev("k-79a", "xid:79", "0000:44:00.0", NULL, line);
	json_object_set_new(e, "message", json_string("GPU has fallen off the bus"));
	json_object_set_new(e, "time", json_string("2026-11-30T00:53:19.500Z"));
	json_t *rep = json_pack(
		"{s:{s:s, s:s, s:i}, s:[{s:s, s:b, s:s}, {s:s, s:b, s:s, s:s, s:s}], s:[o]}",
		"agent", "version", "0.4.0", "bootId", "b7c", "intervalSeconds", 30, "detectors",
		"name", "kernel", "live", 1, "status", "unhealthy", "name", "nvml", "live", 0,
		"status", "unknown", "reason", "NotConfigured", "message",
		"libnvidia-ml.so.1 not found", "events", e);
	int64_t rev0 = store_revision(w->store);
	json_t *res = NULL;
	char err[256] = "";
	assert_int_equal(health_report(w->h, "r01n01", "agent:r01n01", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")), 1);
	assert_int_equal(json_integer_value(json_object_get(res, "duplicates")), 0);
	assert_string_equal(action0(res), "hold");
	assert_string_equal(jsonx_str(json_array_get(json_object_get(res, "decisions"), 0),
				      "reason"),
			    "critical xid:79 on GPU 0000:44:00.0: 1 of 1 within 86400 s; hold, "
			    "remediation starts at reboot");
	json_decref(res);
	/* One revision holds everything. */
	assert_int_equal(store_revision(w->store), rev0 + 1);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->resource_version, rev0 + 1);
	const struct node_hold *hd = node_hold_find(n, "health");
	assert_non_null(hd);
	assert_string_equal(hd->reason, "xid:79 on GPU 0000:44:00.0: 1 in 86400 s (threshold 1)");
	assert_int_equal(n->remediation.active, 1);
	assert_int_equal(n->remediation.nladder, 3);
	assert_int_equal(n->remediation.ladder[0], RUNG_REBOOT);
	assert_int_equal(n->remediation.ladder[2], RUNG_RMA);
	assert_int_equal(n->remediation.rung, 0);
	assert_int_equal(n->remediation.attempts, 0);
	assert_string_equal(n->remediation.code, "xid:79");
	assert_string_equal(n->remediation.gpu, "0000:44:00.0");
	assert_string_equal(n->remediation.policy, "default");
	assert_int_equal(n->remediation.nevents, 1);
	assert_string_equal(n->remediation.events[0], "r01n01.k-79a");
	assert_int_equal(n->remediation.since, START_WALL);
	const struct node_condition *c = node_condition_get(n, "GPUHealthy");
	assert_int_equal(c->status, COND_FALSE);
	assert_string_equal(c->reason, "HealthHold");
	c = node_condition_get(n, "AgentAlive");
	assert_int_equal(c->status, COND_TRUE);
	assert_string_equal(c->reason, "Heartbeat");
	c = node_condition_get(n, "DetectorsLive");
	assert_int_equal(c->status, COND_FALSE);
	assert_string_equal(c->message, "nvml (NotConfigured)");
	node_free(n);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, "/healthevents/r01n01/k-79a", &kv), 0);
	assert_int_equal(kv.mod_revision, rev0 + 1);
	json_t *d = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &d, NULL, 0), 0);
	assert_string_equal(jsonx_str(d, "metadata.name"), "r01n01.k-79a");
	assert_string_equal(jsonx_str(d, "severity"), "critical");
	assert_string_equal(jsonx_str(d, "gpu.pciBusId"), "0000:44:00.0");
	assert_string_equal(jsonx_str(d, "time"), "2026-11-30T00:53:19.500Z");
	assert_string_equal(jsonx_str(d, "receivedAt"), "2026-11-30T00:53:20.000Z");
	assert_string_equal(jsonx_str(d, "raw"),
			    "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus");
	assert_string_equal(jsonx_str(d, "decision.action"), "hold");
	assert_string_equal(jsonx_str(d, "decision.rule"), "xid:79");
	assert_string_equal(jsonx_str(d, "decision.policy"), "default");
	assert_true(json_is_false(jsonx_path(d, "decision.dryRun")));
	json_decref(d);
	store_kv_release(&kv);
	char msg[1200];
	assert_int_equal(events_with(w, "HealthDecision", msg, sizeof(msg)), 1);
	assert_string_equal(msg,
			    "health event r01n01.k-79a: code=xid:79 severity=critical rule=xid:79 "
			    "gpu=0000:44:00.0 job=- count=1 window=86400s threshold=1 "
			    "distinctJobs=0/0 fence=- lemon=node:0,gpu:0 breaker=closed "
			    "ladder=reboot > reimage > rma start=reboot -> hold");

	/* The same event again (an agent retry): a duplicate, nothing written. */
	int64_t rev1 = store_revision(w->store);
	res = NULL;
	assert_int_equal(health_report(w->h, "r01n01", "agent:r01n01", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")), 0);
	assert_int_equal(json_integer_value(json_object_get(res, "duplicates")), 1);
	assert_int_equal(json_array_size(json_object_get(res, "decisions")), 0);
	assert_int_equal(store_revision(w->store), rev1);
	json_decref(res);

	/* After a restart the duplicate is still known (replayed from the store). */
	health_restart(w);
	res = NULL;
	assert_int_equal(health_report(w->h, "r01n01", "agent:r01n01", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	assert_int_equal(json_integer_value(json_object_get(res, "duplicates")), 1);
	assert_int_equal(store_revision(w->store), rev1);
	json_decref(res);

	/* Another XID on the held node: evidence, not a second ladder. */
	res = send1(w, "r01n01", ev("k-79b", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "count");
	json_decref(res);
	n = get_node(w, "r01n01");
	assert_int_equal(n->remediation.nevents, 2);
	assert_string_equal(n->remediation.events[1], "r01n01.k-79b");
	node_free(n);

	/* Unknown node. */
	res = NULL;
	assert_int_equal(health_report(w->h, "nope", "agent:x", rep, clock_wall_ms(w->clock), &res,
				       err, sizeof(err)),
			 FP_ENOTFOUND);
	assert_string_equal(err, "node nope not found");
	json_decref(rep);
	world_free(w);
}

static void test_n_of_m(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	put_node(w, "r01n02", "r01", PHASE_AVAILABLE);
	char line[512];
	xid_line(1, line, sizeof(line)); /* ... 94, pid=1234, name=python3, Contained ECC error */
	json_t *res = send1(w, "r01n01", ev("a1", "xid:94", "0000:9b:00.0", NULL, line));
	assert_string_equal(action0(res), "count");
	assert_string_equal(jsonx_str(json_array_get(json_object_get(res, "decisions"), 0),
				      "reason"),
			    "xid:94 on GPU 0000:9b:00.0: 1 of 2 within 3600 s");
	json_decref(res);
	clock_virtual_advance(w->clock, 1800 * SEC);
	/* Another GPU does not count towards this one. */
	res = send1(w, "r01n01", ev("a2", "xid:94", "0000:3b:00.0", NULL, NULL));
	assert_string_equal(action0(res), "count");
	json_decref(res);
	res = send1(w, "r01n01", ev("a3", "xid:94", "0000:9b:00.0", NULL, line));
	assert_string_equal(action0(res), "hold");
	json_decref(res);
	assert_int_equal(held(w, "r01n01"), 1);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->remediation.ladder[0], RUNG_GPU_RESET);
	assert_string_equal(node_hold_find(n, "health")->reason,
			    "xid:94 on GPU 0000:9b:00.0: 2 in 3600 s (threshold 2)");
	node_free(n);
	/* The second one after the window: no hold. */
	res = send1(w, "r01n02", ev("b1", "xid:94", "0000:9b:00.0", NULL, line));
	assert_string_equal(action0(res), "count");
	json_decref(res);
	clock_virtual_advance(w->clock, 3601 * SEC);
	res = send1(w, "r01n02", ev("b2", "xid:94", "0000:9b:00.0", NULL, line));
	assert_string_equal(action0(res), "count");
	json_decref(res);
	assert_int_equal(held(w, "r01n02"), 0);
	/* A low code is recorded and never held; an unknown code too. */
	res = send1(w, "r01n02", ev("b3", "xid:13", "0000:9b:00.0", NULL, NULL));
	assert_string_equal(action0(res), "none");
	json_decref(res);
	res = send1(w, "r01n02", ev("b4", "vendor:odd", NULL, NULL, NULL));
	assert_string_equal(action0(res), "none");
	assert_string_equal(
		jsonx_str(json_array_get(json_object_get(res, "decisions"), 0), "reason"),
		"warning vendor:odd: no rule for this code: recorded and counted, never held");
	json_decref(res);
	assert_int_equal(held(w, "r01n02"), 0);
	world_free(w);
}

static void test_job_fault_across_nodes(void **state)
{
	struct world *w = world_new();
	char name[32], id[32], line[512];
	xid_line(1, line, sizeof(line));
	for (int i = 1; i <= 10; i++) {
		snprintf(name, sizeof(name), "r%02dn01", i);
		put_node(w, name, name, PHASE_AVAILABLE);
	}
	/* Job 4242 hits XID 94 on every GPU 0 of 10 nodes, twice each (would be N of M). */
	for (int round = 0; round < 2; round++)
		for (int i = 1; i <= 10; i++) {
			snprintf(name, sizeof(name), "r%02dn01", i);
			snprintf(id, sizeof(id), "j%d-%d", round, i);
			json_t *res = send1(w, name,
					    ev(id, "xid:94", "0000:9b:00.0", "4242", line));
			const char *want = round == 0 && i < 3 ? "count" : "job_fault";
			assert_string_equal(action0(res), want);
			json_decref(res);
		}
	for (int i = 1; i <= 10; i++) {
		snprintf(name, sizeof(name), "r%02dn01", i);
		assert_int_equal(held(w, name), 0);
	}
	char msg[1200];
	assert_int_equal(events_with(w, "JobFault", msg, sizeof(msg)), 1);
	assert_string_equal(msg, "xid:94 from job 4242 on 3 nodes within 600 s (r01n01, r02n01, "
				 "r03n01): the job's fault, no node action");
	world_free(w);
}

static void test_distinct_jobs_on_one_gpu(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	char line[512];
	xid_line(1, line, sizeof(line));
	const char *jobs[] = {"101", "202", "303"};
	for (int i = 0; i < 3; i++) {
		char id[16];
		snprintf(id, sizeof(id), "e%d", i);
		json_t *res = send1(w, "r01n01", ev(id, "xid:94", "0000:9b:00.0", jobs[i], line));
		assert_string_equal(action0(res), i < 2 ? "count" : "hold");
		if (i == 1)
			assert_string_equal(
				jsonx_str(json_array_get(json_object_get(res, "decisions"), 0),
					  "reason"),
				"xid:94 on GPU 0000:9b:00.0: 2 of 3 distinct jobs within 3600 s (101, 202)");
		json_decref(res);
		clock_virtual_advance(w->clock, 60 * SEC);
	}
	assert_int_equal(held(w, "r01n01"), 1);
	assert_int_equal(events_with(w, "JobFault", NULL, 0), 0);
	world_free(w);
}

static void test_breaker(void **state)
{
	struct world *w = world_new();
	char name[32], id[32];
	for (int i = 1; i <= 5; i++) {
		snprintf(name, sizeof(name), "r05n%02d", i);
		put_node(w, name, "r05", PHASE_AVAILABLE);
	}
	for (int i = 1; i <= 4; i++) {
		snprintf(name, sizeof(name), "r05n%02d", i);
		snprintf(id, sizeof(id), "x%d", i);
		json_t *res = send1(w, name, ev(id, "xid:79", "0000:44:00.0", NULL, NULL));
		assert_string_equal(action0(res), i <= 3 ? "hold" : "suppressed");
		json_decref(res);
		clock_virtual_advance(w->clock, 10 * SEC);
	}
	assert_int_equal(held(w, "r05n04"), 0);
	struct node *n = get_node(w, "r05n04");
	const struct node_condition *c = node_condition_get(n, "HealthActionsSuppressed");
	assert_non_null(c);
	assert_int_equal(c->status, COND_TRUE);
	assert_string_equal(c->reason, "BreakerOpen");
	node_free(n);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, "/breakers/rack.r05", &kv), 0);
	json_t *d = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &d, NULL, 0), 0);
	assert_string_equal(jsonx_str(d, "state"), "open");
	char *nodes = jsonx_dumps(json_object_get(d, "nodes"));
	assert_string_equal(nodes, "[\"r05n01\",\"r05n02\",\"r05n03\",\"r05n04\"]");
	free(nodes);
	json_decref(d);
	store_kv_release(&kv);
	char msg[1200];
	assert_int_equal(events_with(w, "CorrelatedFailureBreakerOpen", msg, sizeof(msg)), 1);
	assert_string_equal(msg,
			    "4 nodes of rack r05 had hold-worthy health events within 300 s "
			    "(more than 3): r05n01, r05n02, r05n03, r05n04; suspect the detector "
			    "or a shared dependency; automatic health holds and actions in rack "
			    "r05 are suppressed until POST /v1/breakers/rack.r05:reset");
	json_t *b = health_breakers(w->h);
	assert_int_equal(json_array_size(json_object_get(b, "items")), 1);
	json_decref(b);
	/* Still open: the 5th node is suppressed too, and no second alert. */
	json_t *res = send1(w, "r05n05", ev("x5", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "suppressed");
	json_decref(res);
	assert_int_equal(events_with(w, "CorrelatedFailureBreakerOpen", NULL, 0), 1);
	/* Reset by a human. */
	char err[256];
	assert_int_equal(health_breaker_reset(w->h, "rack.r05", "operator:alice", "", err,
					      sizeof(err)),
			 FP_EINVAL);
	assert_int_equal(health_breaker_reset(w->h, "rack.r09", "operator:alice", "x", err,
					      sizeof(err)),
			 FP_ENOTFOUND);
	assert_int_equal(health_breaker_reset(w->h, "rack.r05", "operator:alice",
					      "bad PDU replaced", err, sizeof(err)),
			 0);
	assert_int_equal(store_get(w->store, "/breakers/rack.r05", &kv), FP_ENOTFOUND);
	assert_int_equal(events_with(w, "BreakerReset", msg, sizeof(msg)), 1);
	/* Without replay the suppressed nodes are left unheld and keep their durable mark. */
	n = get_node(w, "r05n04");
	assert_null(node_condition_get(n, "HealthActionsSuppressed"));
	assert_string_equal(node_condition_get(n, "GPUHealthy")->reason, "HoldSuppressed");
	assert_null(node_hold_find(n, "health"));
	node_free(n);
	assert_string_equal(msg,
			    "correlated-failure breaker rack.r05 closed by operator:alice: "
			    "bad PDU replaced; left unheld (GPUHealthy False/HoldSuppressed, a "
			    "human acts): r05n04 (xid:79 x4: replay not requested), r05n05 "
			    "(xid:79 x5: replay not requested)");
	/* Later (the site-a window of 300 s has passed too: r05n01..03 and r05n05 would be 4
	 * nodes of site site-a), the next event holds. */
	clock_virtual_advance(w->clock, 300 * SEC);
	res = send1(w, "r05n05", ev("x6", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "hold");
	json_decref(res);
	assert_int_equal(held(w, "r05n05"), 1);
	b = health_breakers(w->h);
	assert_int_equal(json_array_size(json_object_get(b, "items")), 0);
	json_decref(b);
	world_free(w);
}

static void test_dry_run_and_never_served(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	put_node(w, "r01n02", "r01", PHASE_PROVISIONING);
	/* Never served: recorded, no hold. */
	json_t *res = send1(w, "r01n02", ev("p1", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "none");
	assert_string_equal(
		jsonx_str(json_array_get(json_object_get(res, "decisions"), 0), "reason"),
		"xid:79 on GPU 0000:44:00.0: node is provisioning and has never served: "
		"recorded, no hold");
	json_decref(res);
	assert_int_equal(held(w, "r01n02"), 0);

	json_t *doc = NULL, *stored = NULL;
	char err[256];
	const char *txt = "{\"spec\":{\"dryRun\":true}}";
	assert_int_equal(jsonx_parse(txt, strlen(txt), &doc, err, sizeof(err)), 0);
	assert_int_equal(health_policy_put(w->h, doc, "operator:alice", &stored, err, sizeof(err)),
			 0);
	assert_true(json_is_true(jsonx_path(stored, "spec.dryRun")));
	int64_t prv = atoll(jsonx_str(stored, "metadata.resourceVersion"));
	assert_int_equal(prv, store_revision(w->store));
	json_decref(stored);
	json_decref(doc);
	assert_int_equal(events_with(w, "HealthPolicyChanged", NULL, 0), 1);
	/* A stale resourceVersion is a conflict. */
	txt = "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{}}";
	assert_int_equal(jsonx_parse(txt, strlen(txt), &doc, err, sizeof(err)), 0);
	assert_int_equal(health_policy_put(w->h, doc, "operator:alice", &stored, err, sizeof(err)),
			 FP_ECONFLICT);
	assert_null(stored);
	json_decref(doc);

	res = send1(w, "r01n01", ev("d1", "xid:79", "0000:44:00.0", NULL, NULL));
	json_t *dec = json_array_get(json_object_get(res, "decisions"), 0);
	assert_string_equal(jsonx_str(dec, "action"), "hold");
	assert_true(json_is_true(json_object_get(dec, "dryRun")));
	json_decref(res);
	struct node *n = get_node(w, "r01n01");
	assert_null(node_hold_find(n, "health"));
	assert_int_equal(n->remediation.active, 0);
	assert_null(node_condition_get(n, "GPUHealthy"));
	node_free(n);
	char msg[1200];
	/* The dry-run hold only: the "none" on the never-served node is on its health event. */
	assert_int_equal(events_with(w, "HealthDecision", msg, sizeof(msg)), 1);
	assert_non_null(strstr(msg, "-> hold (dry run: nothing held)"));
	/* The policy survives a restart. */
	health_restart(w);
	json_t *pol = health_policy_get(w->h);
	assert_true(json_is_true(jsonx_path(pol, "spec.dryRun")));
	json_decref(pol);
	world_free(w);
}

static void report_bad(struct world *w, json_t *rep, const char *want)
{
	int64_t rev = store_revision(w->store);
	json_t *res = NULL;
	char err[256] = "";
	assert_int_equal(health_report(w->h, "r01n01", "agent:x", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 FP_EINVAL);
	assert_null(res);
	assert_string_equal(err, want);
	assert_int_equal(store_revision(w->store), rev);
	json_decref(rep);
}

static void test_bad_reports(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	json_t *evs = json_array();
	for (int i = 0; i < 257; i++) {
		char id[16];
		snprintf(id, sizeof(id), "e%d", i);
		json_array_append_new(evs, ev(id, "xid:79", NULL, NULL, NULL));
	}
	report_bad(w, json_pack("{s:o}", "events", evs), "events: more than 256 entries");
	json_t *dets = json_array();
	for (int i = 0; i < 17; i++)
		json_array_append_new(dets, json_pack("{s:s, s:b, s:s}", "name", "kernel", "live",
						      1, "status", "ok"));
	report_bad(w, json_pack("{s:o}", "detectors", dets), "detectors: more than 16 entries");
	report_bad(w,
		   json_pack("{s:[{s:s, s:b, s:s},{s:s, s:b, s:s}]}", "detectors", "name", "dcgm",
			     "live", 1, "status", "ok", "name", "dcgm", "live", 1, "status", "ok"),
		   "detectors[1].name: dcgm repeats detectors[0]");
	report_bad(w,
		   json_pack("{s:[{s:s, s:b, s:s}]}", "detectors", "name", "kernel", "live", 1,
			     "status", "fine"),
		   "detectors[0].status: required, ok, unhealthy or unknown");
	json_t *e = ev("ok1", "xid:79", NULL, NULL, NULL);
	json_object_set_new(e, "colour", json_string("red"));
	report_bad(w, json_pack("{s:[o]}", "events", e), "unknown field events[0].colour");
	report_bad(w, json_pack("{s:[o]}", "events", ev("ok1", "XID:79", NULL, NULL, NULL)),
		   "events[0].code: code family may hold only [a-z0-9_-] (byte 0)");
	report_bad(w, json_pack("{s:[o]}", "events", ev("ok1", "xid79", NULL, NULL, NULL)),
		   "events[0].code: code must be <family>:<detail> ([a-z0-9_-]+:[a-z0-9_.-]+)");
	report_bad(w, json_pack("{s:[o]}", "events", ev("../x", "xid:79", NULL, NULL, NULL)),
		   "events[0].id: required, 1..64 characters of [A-Za-z0-9._-]");
	report_bad(w, json_pack("{s:[o]}", "events", ev("ok1", "xid:79", "3b:00.0", NULL, NULL)),
		   "events[0].gpu.pciBusId: expected a PCI address like 0000:3b:00.0");
	char big[1100];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	report_bad(w, json_pack("{s:[o]}", "events", ev("ok1", "xid:79", NULL, NULL, big)),
		   "events[0].raw: longer than 1024 bytes");
	e = ev("ok1", "xid:79", NULL, NULL, NULL);
	json_object_set_new(e, "message", json_string(big));
	report_bad(w, json_pack("{s:[o]}", "events", e),
		   "events[0].message: longer than 1024 bytes");
	e = ev("ok1", "xid:79", NULL, NULL, NULL);
	json_object_set_new(e, "time", json_string("yesterday"));
	report_bad(w, json_pack("{s:[o]}", "events", e),
		   "events[0].time: expected RFC 3339 UTC like 2026-11-30T10:00:00.123Z");
	report_bad(w,
		   json_pack("{s:[o, o]}", "events", ev("ok1", "xid:79", NULL, NULL, NULL),
			     ev("ok1", "xid:79", NULL, NULL, NULL)),
		   "events[1].id: ok1 repeats events[0]");
	report_bad(w, json_pack("{s:{s:i}}", "agent", "intervalSeconds", -1),
		   "agent.intervalSeconds: expected an integer in 0..3600");
	report_bad(w, json_pack("{s:{s:i}}", "agent", "intervalSeconds", 3601),
		   "agent.intervalSeconds: expected an integer in 0..3600");
	report_bad(w,
		   json_pack("{s:[o], s:i}", "events", ev("ok1", "xid:79", NULL, NULL, NULL),
			     "extra", 1),
		   "unknown field extra");
	/* A valid event before a bad one: nothing is written either. */
	report_bad(w,
		   json_pack("{s:[o, o]}", "events", ev("ok1", "xid:79", NULL, NULL, NULL),
			     ev("ok2", "xid:79", NULL, "job 1", NULL)),
		   "events[1].job: 1..64 characters of [A-Za-z0-9._+-]");
	assert_int_equal(held(w, "r01n01"), 0);
	world_free(w);
}

static void test_agent_alive_sweep(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	json_t *rep = json_pack("{s:{s:s, s:i}, s:[{s:s, s:b, s:s}], s:[]}", "agent", "version",
				"0.4.0", "intervalSeconds", 30, "detectors", "name", "kernel",
				"live", 1, "status", "ok", "events");
	json_t *res = NULL;
	char err[256];
	assert_int_equal(health_report(w->h, "r01n01", "agent:x", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")), 0);
	json_decref(res);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(node_condition_get(n, "AgentAlive")->status, COND_TRUE);
	assert_int_equal(node_condition_get(n, "GPUHealthy")->status, COND_TRUE);
	assert_string_equal(node_condition_get(n, "GPUHealthy")->reason, "DetectorsOk");
	node_free(n);
	/* A second identical heartbeat writes nothing. */
	int64_t rev = store_revision(w->store);
	assert_int_equal(health_report(w->h, "r01n01", "agent:x", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	json_decref(res);
	assert_int_equal(store_revision(w->store), rev);
	/* 3 x 30 s = 90 s timeout. */
	clock_virtual_advance(w->clock, 89 * SEC);
	assert_int_equal(health_tick(w->h), 1 * SEC);
	assert_int_equal(store_revision(w->store), rev);
	clock_virtual_advance(w->clock, 2 * SEC);
	health_tick(w->h);
	n = get_node(w, "r01n01");
	const struct node_condition *c = node_condition_get(n, "AgentAlive");
	assert_int_equal(c->status, COND_FALSE);
	assert_string_equal(c->reason, "HeartbeatMissed");
	assert_string_equal(c->message, "no agent report for 91 s (timeout 90 s)");
	node_free(n);
	char msg[256];
	assert_int_equal(events_with(w, "AgentHeartbeatMissed", msg, sizeof(msg)), 1);
	/* Once only. */
	health_tick(w->h);
	assert_int_equal(events_with(w, "AgentHeartbeatMissed", NULL, 0), 1);
	/* The next report makes it True again. */
	assert_int_equal(health_report(w->h, "r01n01", "agent:x", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	json_decref(res);
	n = get_node(w, "r01n01");
	assert_int_equal(node_condition_get(n, "AgentAlive")->status, COND_TRUE);
	node_free(n);
	/* A restart watches only nodes a health agent reports for (AgentAlive True/Heartbeat),
	 * not a node whose AgentAlive True came from a deploy agent's boot callback. */
	put_node(w, "r01n02", "r01", PHASE_AVAILABLE);
	n = get_node(w, "r01n02");
	node_condition_set(n, "AgentAlive", COND_TRUE, "BootCallback", "boot b1 reported",
			   clock_wall_ms(w->clock));
	put_node_doc(w, n);
	node_free(n);
	health_restart(w);
	clock_virtual_advance(w->clock, 91 * SEC);
	health_tick(w->h);
	n = get_node(w, "r01n01");
	assert_string_equal(node_condition_get(n, "AgentAlive")->reason, "HeartbeatMissed");
	node_free(n);
	n = get_node(w, "r01n02");
	assert_int_equal(node_condition_get(n, "AgentAlive")->status, COND_TRUE);
	assert_string_equal(node_condition_get(n, "AgentAlive")->reason, "BootCallback");
	node_free(n);
	assert_int_equal(events_with(w, "AgentHeartbeatMissed", NULL, 0), 2);
	json_decref(rep);
	world_free(w);
}

/* The same with the informer cache: at start the heartbeats to watch come from the cache's
 * copies of the nodes, not a second pass over the store (issue 17's one-pass start). */
static void test_agent_alive_sweep_cached(void **state)
{
	world_parts = FLEET_CACHE | FLEET_HEALTH;
	test_agent_alive_sweep(state);
	world_parts = FLEET_HEALTH;
}

/* ---------------------------------------------------------------- break report 4 */

static void policy_ok(struct world *w, const char *txt)
{
	json_t *doc = NULL, *stored = NULL;
	char err[256] = "";
	assert_int_equal(jsonx_parse(txt, strlen(txt), &doc, err, sizeof(err)), 0);
	int rc = health_policy_put(w->h, doc, "operator:alice", &stored, err, sizeof(err));
	if (rc)
		fprintf(stderr, "policy: %s\n", err);
	assert_int_equal(rc, 0);
	json_decref(stored);
	json_decref(doc);
}

/* Rewrites node name in the store as the lifecycle does after a validated remediation: the
 * health hold and status.remediation gone, a succeeded history record at `at`. */
static void remediated(struct world *w, const char *name, const char *code, const char *gpu,
		       enum remediation_rung rung, int64_t at)
{
	struct node *n = get_node(w, name);
	node_hold_release(n, "health");
	node_remediation_release(&n->remediation);
	node_remediation_history_append(n, code, gpu, rung, "succeeded", at);
	node_condition_set(n, "GPUHealthy", COND_TRUE, "Remediated", "ok", at);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc), key[64];
	snprintf(key, sizeof(key), "/nodes/%s", name);
	assert_int_equal(store_put(w->store, key, val, n->resource_version, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
}

static const char *reason0(const json_t *res)
{
	return jsonx_str(json_array_get(json_object_get(res, "decisions"), 0), "reason");
}

/* #3: after a validated remediation the count restarts; an event seen before it is stale. */
static void test_count_restarts_after_remediation(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n06", "r01", PHASE_AVAILABLE);
	const char *bus = "0000:18:00.0";
	const char *want[] = {"count", "count", "hold"};
	for (int i = 1; i <= 3; i++) {
		char id[16];
		snprintf(id, sizeof(id), "aer-%d", i);
		json_t *res = send1(w, "r01n06", ev(id, "aer:nonfatal", bus, NULL, NULL));
		assert_string_equal(action0(res), want[i - 1]);
		json_decref(res);
		clock_virtual_advance(w->clock, 10 * SEC);
	}
	/* 2026-11-30T00:53:50Z: the reboot was validated. */
	int64_t fence = clock_wall_ms(w->clock);
	remediated(w, "r01n06", "aer:nonfatal", bus, RUNG_REBOOT, fence);
	clock_virtual_advance(w->clock, 60 * SEC);
	json_t *res = send1(w, "r01n06", ev("aer-5", "aer:nonfatal", bus, NULL, NULL));
	assert_string_equal(action0(res), "count");
	assert_string_equal(reason0(res),
			    "aer:nonfatal on GPU 0000:18:00.0: 1 of 3 within 86400 s");
	json_decref(res);
	/* An agent catching up from its outbox: the event's own time is before the fence. */
	json_t *e = ev("aer-4", "aer:nonfatal", bus, NULL, NULL);
	json_object_set_new(e, "time", json_string("2026-11-30T00:53:45.000Z"));
	res = send1(w, "r01n06", e);
	assert_string_equal(action0(res), "count");
	assert_string_equal(
		reason0(res),
		"aer:nonfatal on GPU 0000:18:00.0: stale: seen at 2026-11-30T00:53:45.000Z, "
		"before the remediation that succeeded at 2026-11-30T00:53:50.000Z; "
		"recorded as evidence only");
	json_decref(res);
	/* A stale XID 79 never holds either. */
	e = ev("k79-old", "xid:79", bus, NULL, NULL);
	json_object_set_new(e, "time", json_string("2026-11-30T00:53:21.000Z"));
	res = send1(w, "r01n06", e);
	assert_string_equal(action0(res), "count");
	json_decref(res);
	assert_int_equal(held(w, "r01n06"), 0);
	/* Two more new ones: 3 of 3 since the fence - a genuinely new failure holds, and the
	 * recurrence (reboot within 7 days on this GPU) starts the ladder at reimage. */
	res = send1(w, "r01n06", ev("aer-6", "aer:nonfatal", bus, NULL, NULL));
	assert_string_equal(reason0(res),
			    "aer:nonfatal on GPU 0000:18:00.0: 2 of 3 within 86400 s");
	json_decref(res);
	res = send1(w, "r01n06", ev("aer-7", "aer:nonfatal", bus, NULL, NULL));
	assert_string_equal(action0(res), "hold");
	assert_string_equal(reason0(res), "warning aer:nonfatal on GPU 0000:18:00.0: 3 of 3 within "
					  "86400 s; hold, remediation starts at reimage");
	json_decref(res);
	/* Another GPU of the node is not fenced by a remediation that named this one. */
	struct node *n = get_node(w, "r01n06");
	assert_int_equal(health_fence(n, "0000:18:00.0"), fence);
	assert_int_equal(health_fence(n, "0000:3b:00.0"), 0);
	assert_int_equal(health_fence(n, NULL), 0);
	node_free(n);
	world_free(w);
}

/* #5, #7: breaker domains name resettable breakers; per-domain limits. */
static void test_breaker_domains(void **state)
{
	policy_bad("{\"spec\":{\"breaker\":{\"domains\":[\"rack\",\"example.com/nvl\"]}}}",
		   "spec.breaker.domains[1]: example.com/nvl cannot name a breaker "
		   "(<domain>.<value>, reset at POST /v1/breakers/{name}:reset): use a key of "
		   "[A-Za-z0-9._-], no '/'");
	policy_bad("{\"spec\":{\"breaker\":{\"maxNodesPerDomain\":{\"site\":50}}}}",
		   "spec.breaker.maxNodesPerDomain.site: not one of spec.breaker.domains");
	policy_bad(
		"{\"spec\":{\"breaker\":{\"domains\":[\"site\"],\"maxNodesPerDomain\":{\"site\":0}}}}",
		"spec.breaker.maxNodesPerDomain.site: expected an integer in 1..10000");
	/* More than a breaker window holds: refused rather than a breaker that never opens. */
	policy_bad(
		"{\"spec\":{\"breaker\":{\"domains\":[\"site\"],\"maxNodesPerDomain\":{\"site\":10001}}}}",
		"spec.breaker.maxNodesPerDomain.site: expected an integer in 1..10000");
	struct health_policy *p = health_policy_default();
	json_t *j = health_policy_to_json(p, 0);
	char *s = jsonx_dumps(jsonx_path(j, "spec.breaker"));
	assert_string_equal(s,
			    "{\"enabled\":true,\"maxNodes\":3,\"windowSeconds\":300,"
			    "\"domains\":[\"rack\",\"nvlink_domain\"],\"maxNodesPerDomain\":{}}");
	free(s);
	json_decref(j);
	health_policy_free(p);

	/* Five unrelated racks of one site: the default (rack, nvlink_domain) never trips. */
	struct world *w = world_new();
	char name[32], id[32];
	for (int i = 1; i <= 7; i++) {
		snprintf(name, sizeof(name), "r%02dn01", i);
		put_node(w, name, name, PHASE_AVAILABLE);
	}
	for (int i = 1; i <= 5; i++) {
		snprintf(name, sizeof(name), "r%02dn01", i);
		json_t *res = send1(w, name, ev("x79", "xid:79", "0000:44:00.0", NULL, NULL));
		assert_string_equal(action0(res), "hold");
		json_decref(res);
	}
	/* The operator adds site with its own threshold: more than 5 nodes of site-a. */
	policy_ok(w, "{\"spec\":{\"breaker\":{\"domains\":[\"rack\",\"site\"],"
		     "\"maxNodesPerDomain\":{\"site\":5}}}}");
	json_t *pol = health_policy_get(w->h);
	assert_int_equal(json_integer_value(jsonx_path(pol, "spec.breaker.maxNodesPerDomain.site")),
			 5);
	json_decref(pol);
	json_t *res = send1(w, "r06n01", ev("x79", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "hold"); /* 1 node of site-a in its (new) window */
	json_decref(res);
	world_free(w);

	w = world_new();
	policy_ok(w, "{\"spec\":{\"breaker\":{\"domains\":[\"site\"],\"maxNodes\":1,"
		     "\"maxNodesPerDomain\":{\"site\":2}}}}");
	for (int i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "r%02dn01", i);
		put_node(w, name, name, PHASE_AVAILABLE);
		snprintf(id, sizeof(id), "y%d", i);
		res = send1(w, name, ev(id, "xid:79", "0000:44:00.0", NULL, NULL));
		assert_string_equal(action0(res), i <= 2 ? "hold" : "suppressed");
		json_decref(res);
	}
	/* The domain leaves the policy; its open breaker can still be reset by name. */
	policy_ok(w, "{\"spec\":{\"breaker\":{\"domains\":[\"rack\"]}}}");
	char err[256];
	assert_int_equal(health_breaker_reset(w->h, "site.site-a", "operator:alice", "ok", err,
					      sizeof(err)),
			 0);
	json_t *b = health_breakers(w->h);
	assert_int_equal(json_array_size(json_object_get(b, "items")), 0);
	json_decref(b);
	world_free(w);
}

/* #6: a suppressed decision leaves a durable mark and is replayed at the reset on request. */
static void test_suppressed_replay(void **state)
{
	struct world *w = world_new();
	char name[32], id[32];
	for (int i = 1; i <= 6; i++) {
		snprintf(name, sizeof(name), "r05n%02d", i);
		put_node(w, name, "r05", PHASE_AVAILABLE);
	}
	for (int i = 1; i <= 5; i++) {
		snprintf(name, sizeof(name), "r05n%02d", i);
		snprintf(id, sizeof(id), "x%d", i);
		json_t *res = send1(w, name, ev(id, "xid:79", "0000:44:00.0", NULL, NULL));
		assert_string_equal(action0(res), i <= 3 ? "hold" : "suppressed");
		json_decref(res);
		clock_virtual_advance(w->clock, 10 * SEC);
	}
	struct node *n = get_node(w, "r05n04");
	const struct node_condition *c = node_condition_get(n, "GPUHealthy");
	assert_int_equal(c->status, COND_FALSE);
	assert_string_equal(c->reason, "HoldSuppressed");
	assert_string_equal(c->message, "xid:79 on GPU 0000:44:00.0 (event r05n04.x4): hold "
					"suppressed by correlated-failure breaker rack.r05");
	node_free(n);
	/* A heartbeat with every detector ok does not wash the mark away. */
	json_t *rep = json_pack("{s:{s:s, s:i}, s:[{s:s, s:b, s:s}], s:[]}", "agent", "version",
				"0.4.0", "intervalSeconds", 30, "detectors", "name", "kernel",
				"live", 1, "status", "ok", "events");
	json_t *res = NULL;
	char err[256];
	assert_int_equal(health_report(w->h, "r05n04", "agent:r05n04", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	json_decref(res);
	json_decref(rep);
	n = get_node(w, "r05n04");
	assert_string_equal(node_condition_get(n, "GPUHealthy")->reason, "HoldSuppressed");
	node_free(n);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, "/breakers/rack.r05", &kv), 0);
	json_t *d = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &d, NULL, 0), 0);
	store_kv_release(&kv);
	assert_int_equal(json_array_size(json_object_get(d, "suppressed")), 2);
	assert_string_equal(jsonx_str(json_array_get(json_object_get(d, "suppressed"), 1), "event"),
			    "x5");
	json_decref(d);
	/* Reset with replay: r05n04 and r05n05 get the hold the decision would have placed. */
	assert_int_equal(health_breaker_reset_ex(w->h, "rack.r05", "operator:alice", "PDU fixed", 1,
						 &res, err, sizeof(err)),
			 0);
	char *s = jsonx_dumps(res);
	assert_string_equal(s,
			    "{\"kind\":\"HealthBreaker\",\"metadata\":{\"name\":\"rack.r05\"},"
			    "\"state\":\"closed\",\"replay\":true,\"held\":[\"r05n04\",\"r05n05\"],"
			    "\"evidence\":[],\"unheld\":[]}");
	free(s);
	json_decref(res);
	n = get_node(w, "r05n04");
	assert_non_null(node_hold_find(n, "health"));
	assert_int_equal(n->remediation.ladder[n->remediation.rung], RUNG_REBOOT);
	assert_string_equal(n->remediation.events[0], "r05n04.x4");
	assert_string_equal(node_condition_get(n, "GPUHealthy")->reason, "HealthHold");
	assert_null(node_condition_get(n, "HealthActionsSuppressed"));
	node_free(n);
	char msg[1200];
	assert_int_equal(events_with(w, "BreakerReset", msg, sizeof(msg)), 1);
	assert_string_equal(msg,
			    "correlated-failure breaker rack.r05 closed by operator:alice: PDU "
			    "fixed; replayed, held: r05n04, r05n05");
	/* The breaker window was cleared with the reset: a new fault holds. */
	res = send1(w, "r05n06", ev("z6", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "hold");
	json_decref(res);
	world_free(w);
}

/* #9: no live detector means unknown; a dead detector says why and never reports ok. */
static void test_no_live_detector(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	json_t *rep = json_pack("{s:[{s:s, s:b, s:s, s:s}, {s:s, s:b, s:s, s:s}], s:[]}",
				"detectors", "name", "kernel", "live", 0, "status", "unknown",
				"reason", "NotConfigured", "name", "dcgm", "live", 0, "status",
				"unknown", "reason", "ProbeTimeout", "events");
	json_t *res = NULL;
	char err[256];
	assert_int_equal(health_report(w->h, "r01n01", "agent:r01n01", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	json_decref(res);
	json_decref(rep);
	struct node *n = get_node(w, "r01n01");
	const struct node_condition *c = node_condition_get(n, "GPUHealthy");
	assert_int_equal(c->status, COND_UNKNOWN);
	assert_string_equal(c->reason, "NoLiveDetector");
	assert_string_equal(c->message, "no configured detector is live: kernel (NotConfigured), "
					"dcgm (ProbeTimeout)");
	node_free(n);
	report_bad(w,
		   json_pack("{s:[{s:s, s:b, s:s}]}", "detectors", "name", "kernel", "live", 0,
			     "status", "unknown"),
		   "detectors[0].reason: required when live is false (NotConfigured, ProbeTimeout, "
		   "ProbeFailed or Unparseable)");
	report_bad(w,
		   json_pack("{s:[{s:s, s:b, s:s, s:s}]}", "detectors", "name", "kernel", "live", 0,
			     "status", "ok", "reason", "ProbeFailed"),
		   "detectors[0].status: ok needs live true (a detector that is not live reports "
		   "unknown)");
	world_free(w);
}

/* The agent's slurm:gpu_idle (issue 10 part 6; no GPU, source agent, the idle job): one job
 * idle on a node is the job's - recorded, no hold, the decision names the job, also for a
 * second episode of the same job; a second distinct job within 24 h holds the node and the
 * ladder starts at reboot. A job idle on 3 nodes is a job fault (JobFault) and never counts
 * towards a node's distinct jobs. */
static json_t *idle_ev(const char *id, const char *job)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "source", "agent", "code",
			 "slurm:gpu_idle", "job", job, "message",
			 "job 4242: GPUs 0-7 at or below 0 % utilisation for 30 min while Slurm "
			 "says busy");
}

static void test_gpu_idle_jobs(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	json_t *res = send1(w, "r01n01", idle_ev("f-idle-1", "4242"));
	assert_string_equal(action0(res), "count");
	assert_string_equal(reason0(res),
			    "slurm:gpu_idle on GPU -: 1 of 2 distinct jobs within 86400 s (4242)");
	json_decref(res);
	{
		struct store_kv kv = {0};
		json_t *d = NULL;
		assert_int_equal(store_get(w->store, "/healthevents/r01n01/f-idle-1", &kv), 0);
		assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &d, NULL, 0), 0);
		store_kv_release(&kv);
		assert_string_equal(jsonx_str(d, "job"), "4242");
		assert_string_equal(jsonx_str(d, "decision.action"), "count");
		assert_string_equal(
			jsonx_str(d, "decision.inputs"),
			"code=slurm:gpu_idle severity=warning rule=slurm:gpu_idle gpu=- "
			"job=4242 count=1 window=86400s threshold=1 distinctJobs=1/2 "
			"fence=- -> count");
		json_decref(d);
	}
	clock_virtual_advance(w->clock, 3600 * SEC);
	res = send1(w, "r01n01", idle_ev("f-idle-2", "4242")); /* the same job, again */
	assert_string_equal(action0(res), "count");
	assert_string_equal(reason0(res),
			    "slurm:gpu_idle on GPU -: 1 of 2 distinct jobs within 86400 s (4242)");
	json_decref(res);
	assert_int_equal(held(w, "r01n01"), 0);
	clock_virtual_advance(w->clock, 20 * 3600 * SEC);
	res = send1(w, "r01n01", idle_ev("f-idle-3", "4243"));
	assert_string_equal(action0(res), "hold");
	assert_string_equal(reason0(res),
			    "warning slurm:gpu_idle on GPU -: 2 of 2 distinct jobs within "
			    "86400 s (4242, 4243); hold, remediation starts at reboot");
	json_decref(res);
	assert_int_equal(held(w, "r01n01"), 1);

	/* Job 6000 idle on three nodes: the job's fault; a later job on one of them is 1 of 2. */
	char name[16], id[32];
	for (int i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "r02n%02d", i);
		put_node(w, name, "r02", PHASE_AVAILABLE);
	}
	for (int i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "r02n%02d", i);
		snprintf(id, sizeof(id), "f-j6000-%d", i);
		res = send1(w, name, idle_ev(id, "6000"));
		assert_string_equal(action0(res), i < 3 ? "count" : "job_fault");
		json_decref(res);
	}
	char msg[1200];
	assert_int_equal(events_with(w, "JobFault", msg, sizeof(msg)), 1);
	assert_string_equal(msg, "slurm:gpu_idle from job 6000 on 3 nodes within 600 s (r02n01, "
				 "r02n02, r02n03): the job's fault, no node action");
	res = send1(w, "r02n01", idle_ev("f-j6001", "6001"));
	assert_string_equal(action0(res), "count");
	assert_string_equal(reason0(res),
			    "slurm:gpu_idle on GPU -: 1 of 2 distinct jobs within 86400 s (6001)");
	json_decref(res);
	for (int i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "r02n%02d", i);
		assert_int_equal(held(w, name), 0);
	}
	world_free(w);
}

/* #10: a job declared a job fault is not an unrelated job on a GPU. */
static void test_job_fault_jobs_excluded(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n04", "r01", PHASE_AVAILABLE);
	put_node(w, "r01n05", "r01", PHASE_AVAILABLE);
	put_node(w, "r01n06", "r01", PHASE_AVAILABLE);
	const char *bus = "0000:18:00.0";
	json_t *res = send1(w, "r01n04", ev("a1", "xid:94", bus, "J1", NULL));
	assert_string_equal(action0(res), "count");
	json_decref(res);
	res = send1(w, "r01n05", ev("b1", "xid:94", bus, "J1", NULL));
	json_decref(res);
	res = send1(w, "r01n06", ev("c1", "xid:94", bus, "J1", NULL));
	assert_string_equal(action0(res), "job_fault");
	json_decref(res);
	res = send1(w, "r01n04", ev("a2", "xid:94", bus, "J2", NULL));
	assert_string_equal(action0(res), "count");
	assert_string_equal(reason0(res),
			    "xid:94 on GPU 0000:18:00.0: 1 of 3 distinct jobs within 3600 s (J2)");
	json_decref(res);
	res = send1(w, "r01n04", ev("a3", "xid:94", bus, "J3", NULL));
	assert_string_equal(action0(res), "count");
	assert_string_equal(
		reason0(res),
		"xid:94 on GPU 0000:18:00.0: 2 of 3 distinct jobs within 3600 s (J2, J3)");
	json_decref(res);
	res = send1(w, "r01n04", ev("a4", "xid:94", bus, "J4", NULL));
	assert_string_equal(action0(res), "hold");
	assert_string_equal(reason0(res), "medium xid:94 on GPU 0000:18:00.0: 3 of 3 distinct jobs "
					  "within 3600 s (J2, J3, J4); hold, remediation starts at "
					  "gpu_reset");
	json_decref(res);
	world_free(w);
}

/* #11: dry run simulates the breaker and leaves nothing the live policy reads. */
static void test_dry_run_breaker(void **state)
{
	struct world *w = world_new();
	char name[32];
	for (int i = 1; i <= 6; i++) {
		snprintf(name, sizeof(name), "r03n%02d", i);
		put_node(w, name, "r03", PHASE_AVAILABLE);
	}
	policy_ok(w, "{\"spec\":{\"dryRun\":true}}");
	for (int i = 1; i <= 5; i++) {
		snprintf(name, sizeof(name), "r03n%02d", i);
		json_t *res = send1(w, name, ev("d79", "xid:79", "0000:44:00.0", NULL, NULL));
		json_t *dec = json_array_get(json_object_get(res, "decisions"), 0);
		assert_string_equal(jsonx_str(dec, "action"), i <= 3 ? "hold" : "suppressed");
		assert_true(json_is_true(json_object_get(dec, "dryRun")));
		if (i == 4)
			assert_string_equal(
				jsonx_str(dec, "reason"),
				"xid:79 on GPU 0000:44:00.0: hold suppressed (dry run), "
				"correlated-failure breaker rack.r03 would be open");
		json_decref(res);
	}
	json_t *b = health_breakers(w->h);
	assert_int_equal(json_array_size(json_object_get(b, "items")), 0);
	json_decref(b);
	/* Live again: the first real fault is held; the dry-run decisions filled no window. */
	policy_ok(w, "{\"spec\":{\"dryRun\":false}}");
	json_t *res = send1(w, "r03n06", ev("l79", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "hold");
	json_decref(res);
	world_free(w);
}

/* #12, #14: stored text has no control characters; noisy codes get no audit event of their
 * own (the decision and its inputs are on the health event); only an agent token makes the
 * agent alive. */
static void test_store_hygiene(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	json_t *e = ev("k13", "xid:13", "0000:44:00.0", NULL, "NVRM: Xid\t13 \x1b[31mred\x07");
	/* U+009B (C1 CSI); U+202E (RTL override), U+2066/U+2069 (isolates), U+200F (RLM) and
	 * U+061C (ALM) are format characters (Unicode category Cf); U+00E9 is a letter. */
	json_object_set_new(e, "process", json_string("py\xc2\x9bthon\xe2\x81\xa6x\xe2\x81\xa9"));
	json_object_set_new(e, "message",
			    json_string("\x1b]0;title\x07 caf\xc3\xa9 "
					"\xe2\x80\xae"
					"exe.txt\xe2\x80\x8f\xd8\x9c"));
	json_t *rep = json_pack("{s:[o]}", "events", e);
	json_t *res = NULL;
	char err[256];
	assert_int_equal(health_report(w->h, "r01n01", "operator:alice", rep,
				       clock_wall_ms(w->clock), &res, err, sizeof(err)),
			 0);
	assert_string_equal(action0(res), "none");
	json_decref(res);
	json_decref(rep);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, "/healthevents/r01n01/k13", &kv), 0);
	json_t *d = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &d, NULL, 0), 0);
	store_kv_release(&kv);
	assert_string_equal(jsonx_str(d, "raw"), "NVRM: Xid?13 ?[31mred?");
	assert_string_equal(jsonx_str(d, "process"), "py?thon?x?");
	assert_string_equal(jsonx_str(d, "message"), "?]0;title? caf\xc3\xa9 ?exe.txt??");
	assert_string_equal(jsonx_str(d, "decision.inputs"),
			    "code=xid:13 severity=low rule=xid:13 gpu=0000:44:00.0 job=- count=1 "
			    "window=3600s threshold=1 distinctJobs=0/0 fence=- -> none");
	json_decref(d);
	assert_int_equal(events_with(w, "HealthDecision", NULL, 0), 0);
	struct node *n = get_node(w, "r01n01");
	assert_null(node_condition_get(n, "AgentAlive"));
	node_free(n);
	/* No heartbeat is armed for an operator's report. */
	clock_virtual_advance(w->clock, 600 * SEC);
	health_tick(w->h);
	assert_int_equal(events_with(w, "AgentHeartbeatMissed", NULL, 0), 0);
	/* A hold-worthy one is audited. */
	res = send1(w, "r01n01", ev("k79", "xid:79", "0000:44:00.0", NULL, NULL));
	json_decref(res);
	assert_int_equal(events_with(w, "HealthDecision", NULL, 0), 1);
	world_free(w);
}

/* Report 4b #1: "count" decisions get no audit event of their own (the decision and its inputs
 * are on the health event), so an agent cannot fill the audit trail with them. */
static void test_count_not_audited(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	put_node(w, "r01n02", "r01", PHASE_AVAILABLE);
	json_t *res = send1(w, "r01n01", ev("a79", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "hold");
	json_decref(res);
	assert_int_equal(events_with(w, "HealthDecision", NULL, 0), 1);
	/* The held node: a further XID 79 is evidence ("count"); xid:94 (medium, 2 in 1 h) on
	 * the other node is 1 of 2 ("count"). */
	res = send1(w, "r01n01", ev("b79", "xid:79", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "count");
	json_decref(res);
	res = send1(w, "r01n02", ev("c94", "xid:94", "0000:44:00.0", NULL, NULL));
	assert_string_equal(action0(res), "count");
	json_decref(res);
	assert_int_equal(events_with(w, "HealthDecision", NULL, 0), 1);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, "/healthevents/r01n02/c94", &kv), 0);
	json_t *d = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &d, NULL, 0), 0);
	store_kv_release(&kv);
	assert_string_equal(
		jsonx_str(d, "decision.inputs"),
		"code=xid:94 severity=medium rule=xid:94 gpu=0000:44:00.0 job=- count=1 "
		"window=3600s threshold=2 distinctJobs=0/3 fence=- -> count");
	json_decref(d);
	world_free(w);
}

/* Report 4b #2: a per-domain limit above the old 128-entry window still opens the breaker at
 * limit + 1 distinct nodes: 144 nodes of site-a, limit 130. */
static void test_breaker_large_limit(void **state)
{
	struct world *w = world_new();
	policy_ok(w, "{\"spec\":{\"breaker\":{\"domains\":[\"site\"],\"maxNodes\":3,"
		     "\"windowSeconds\":3600,\"maxNodesPerDomain\":{\"site\":130}}}}");
	char name[32], rack[16];
	for (int i = 1; i <= 144; i++) {
		snprintf(name, sizeof(name), "r%02dn%02d", (i - 1) / 12 + 1, (i - 1) % 12 + 1);
		snprintf(rack, sizeof(rack), "r%02d", (i - 1) / 12 + 1);
		put_node(w, name, rack, PHASE_AVAILABLE);
	}
	int holds = 0, suppressed = 0;
	for (int i = 1; i <= 144; i++) {
		snprintf(name, sizeof(name), "r%02dn%02d", (i - 1) / 12 + 1, (i - 1) % 12 + 1);
		json_t *res = send1(w, name, ev("x79", "xid:79", "0000:44:00.0", NULL, NULL));
		const char *a = action0(res);
		if (i <= 130)
			assert_string_equal(a, "hold");
		else
			assert_string_equal(a, "suppressed");
		holds += strcmp(a, "hold") == 0;
		suppressed += strcmp(a, "suppressed") == 0;
		json_decref(res);
		clock_virtual_advance(w->clock, 1 * SEC);
	}
	assert_int_equal(holds, 130);
	assert_int_equal(suppressed, 14);
	json_t *b = health_breakers(w->h);
	json_t *items = json_object_get(b, "items");
	assert_int_equal(json_array_size(items), 1);
	json_t *doc = json_array_get(items, 0);
	assert_string_equal(jsonx_str(doc, "metadata.name"), "site.site-a");
	assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 131);
	/* The nodes oldest first: r01n01 failed first (the list is cut at 600 bytes). */
	assert_int_equal(
		strncmp(jsonx_str(doc, "reason"),
			"131 nodes of site site-a had hold-worthy health events within 3600 s "
			"(more than 130): r01n01, r01n02, r01n03,",
			strlen("131 nodes of site site-a had hold-worthy health events within "
			       "3600 s (more than 130): r01n01, r01n02, r01n03,")),
		0);
	/* 13 later suppressed pairs (the 131st opened it and is noted as well). */
	assert_int_equal(json_array_size(json_object_get(doc, "suppressed")), 14);
	json_decref(b);
	world_free(w);
}

/* Report 4b #3: one agent sending 100,000 events, each on a GPU of its own, leaves bounded
 * state: the newest 10,000 ids of the node and 256 count windows. An id forgotten in memory
 * is still a duplicate while its document is stored. */
static void test_memory_bounded(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	int total = 0;
	while (total < 100000) {
		json_t *evs = json_array();
		for (int k = 0; k < 256 && total < 100000; k++, total++) {
			char id[32], bus[32];
			snprintf(id, sizeof(id), "e%d", total);
			/* domain (i >> 11), bus (i >> 3) & 0xff, function i & 7: all distinct */
			snprintf(bus, sizeof(bus), "%04x:%02x:00.%d", total >> 11,
				 (total >> 3) & 0xff, total & 7);
			json_t *e = ev(id, "aer:correctable", bus, NULL, NULL);
			json_array_append_new(evs, e);
		}
		json_t *rep = json_pack("{s:{s:s, s:i}, s:o}", "agent", "version", "0.4.0",
					"intervalSeconds", 30, "events", evs);
		json_t *res = NULL;
		char err[256] = "";
		assert_int_equal(health_report(w->h, "r01n01", "agent:r01n01", rep,
					       clock_wall_ms(w->clock), &res, err, sizeof(err)),
				 0);
		json_decref(res);
		json_decref(rep);
	}
	struct health_memory m;
	health_memory(w->h, &m);
	assert_int_equal(m.seen, 10000);
	assert_int_equal(m.windows, 256);
	assert_int_equal(m.window_entries, 256);
	assert_int_equal(m.nodes, 1);
	/* e0 was forgotten in memory long ago; its document is still there: a duplicate. */
	json_t *rep = json_pack("{s:[o]}", "events",
				ev("e0", "aer:correctable", "0000:00:00.0", NULL, NULL));
	json_t *res = NULL;
	char err[256] = "";
	assert_int_equal(health_report(w->h, "r01n01", "agent:r01n01", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")), 0);
	assert_int_equal(json_integer_value(json_object_get(res, "duplicates")), 1);
	json_decref(res);
	json_decref(rep);
	health_memory(w->h, &m);
	assert_int_equal(m.seen, 10000);
	/* After 24 h the sweep forgets every id and every window of the node. */
	clock_virtual_advance(w->clock, 31LL * 86400 * SEC);
	health_tick(w->h);
	health_memory(w->h, &m);
	assert_int_equal(m.seen, 0);
	assert_int_equal(m.windows, 0);
	assert_int_equal(m.nodes, 0);
	world_free(w);
}

/* Sends {agent (interval), detectors: dets} as the node's agent (steals dets). */
static void report_dets(struct world *w, const char *node, int interval, json_t *dets)
{
	json_t *rep = json_pack("{s:{s:s, s:i}, s:o, s:[]}", "agent", "version", "0.4.0",
				"intervalSeconds", interval, "detectors", dets, "events");
	json_t *res = NULL;
	char err[256] = "", actor[64];
	snprintf(actor, sizeof(actor), "agent:%s", node);
	assert_int_equal(health_report(w->h, node, actor, rep, clock_wall_ms(w->clock), &res, err,
				       sizeof(err)),
			 0);
	json_decref(res);
	json_decref(rep);
}

static void assert_cond(struct world *w, const char *node, const char *type, enum cond_status st,
			const char *reason, const char *msg)
{
	struct node *n = get_node(w, node);
	const struct node_condition *c = node_condition_get(n, type);
	assert_non_null(c);
	assert_int_equal(c->status, st);
	assert_string_equal(c->reason, reason);
	if (msg)
		assert_string_equal(c->message, msg);
	node_free(n);
}

/* Report 4b #6: a detector reporting unhealthy while nothing is held makes GPUHealthy
 * Unknown/DetectorUnhealthy naming it - never True, never left as it was. */
static void test_detector_unhealthy(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	report_dets(w, "r01n01", 30,
		    json_pack("[{s:s, s:b, s:s}, {s:s, s:b, s:s}]", "name", "kernel", "live", 1,
			      "status", "ok", "name", "nvidia-smi", "live", 1, "status", "ok"));
	assert_cond(w, "r01n01", "GPUHealthy", COND_TRUE, "DetectorsOk", NULL);
	report_dets(w, "r01n01", 30,
		    json_pack("[{s:s, s:b, s:s}, {s:s, s:b, s:s, s:s}]", "name", "kernel", "live",
			      1, "status", "ok", "name", "nvidia-smi", "live", 1, "status",
			      "unhealthy", "message", "1 finding: thermal:hw_slowdown on GPU 3"));
	assert_cond(w, "r01n01", "GPUHealthy", COND_UNKNOWN, "DetectorUnhealthy",
		    "status unhealthy from: nvidia-smi (1 finding: thermal:hw_slowdown on GPU 3); "
		    "no health hold (see the node's health events)");
	report_dets(w, "r01n01", 30,
		    json_pack("[{s:s, s:b, s:s}]", "name", "nvidia-smi", "live", 1, "status",
			      "unhealthy"));
	assert_cond(w, "r01n01", "GPUHealthy", COND_UNKNOWN, "DetectorUnhealthy",
		    "status unhealthy from: nvidia-smi; no health hold (see the node's health "
		    "events)");
	report_dets(w, "r01n01", 30,
		    json_pack("[{s:s, s:b, s:s}]", "name", "nvidia-smi", "live", 1, "status",
			      "ok"));
	assert_cond(w, "r01n01", "GPUHealthy", COND_TRUE, "DetectorsOk", NULL);
	world_free(w);
}

/* Report 4b #8: every suppressed pair of a node replayed at a reset is accounted for: the
 * node's other suppressed events are evidence of the hold it gets. */
static void test_replay_evidence(void **state)
{
	struct world *w = world_new();
	char name[32], id[32];
	for (int i = 1; i <= 4; i++) {
		snprintf(name, sizeof(name), "r06n%02d", i);
		put_node(w, name, "r06", PHASE_AVAILABLE);
		snprintf(id, sizeof(id), "x%d", i);
		json_t *res = send1(w, name, ev(id, "xid:79", "0000:18:00.0", NULL, NULL));
		assert_string_equal(action0(res), i <= 3 ? "hold" : "suppressed");
		json_decref(res);
	}
	json_t *res = send1(w, "r06n04", ev("x4b", "xid:48", "0000:19:00.0", NULL, NULL));
	assert_string_equal(action0(res), "suppressed");
	json_decref(res);
	char err[256];
	assert_int_equal(health_breaker_reset_ex(w->h, "rack.r06", "operator:alice", "PDU fixed", 1,
						 &res, err, sizeof(err)),
			 0);
	char *s = jsonx_dumps(res);
	assert_string_equal(s, "{\"kind\":\"HealthBreaker\",\"metadata\":{\"name\":\"rack.r06\"},"
			       "\"state\":\"closed\",\"replay\":true,\"held\":[\"r06n04\"],"
			       "\"evidence\":[{\"node\":\"r06n04\",\"event\":\"x4b\",\"code\":"
			       "\"xid:48\",\"of\":\"r06n04.x4\"}],\"unheld\":[]}");
	free(s);
	json_decref(res);
	struct node *n = get_node(w, "r06n04");
	assert_int_equal(n->remediation.nevents, 2);
	assert_string_equal(n->remediation.events[0], "r06n04.x4");
	assert_string_equal(n->remediation.events[1], "r06n04.x4b");
	node_free(n);
	char msg[1200];
	assert_int_equal(events_with(w, "BreakerReset", msg, sizeof(msg)), 1);
	assert_string_equal(msg,
			    "correlated-failure breaker rack.r06 closed by operator:alice: PDU "
			    "fixed; replayed, held: r06n04; evidence: r06n04.x4b (xid:48) "
			    "evidence of r06n04.x4");

	/* Without replay both pairs of the node are listed as left unheld. */
	for (int i = 5; i <= 8; i++) {
		snprintf(name, sizeof(name), "r07n%02d", i);
		put_node(w, name, "r07", PHASE_AVAILABLE);
		snprintf(id, sizeof(id), "y%d", i);
		res = send1(w, name, ev(id, "xid:79", "0000:18:00.0", NULL, NULL));
		json_decref(res);
	}
	res = send1(w, "r07n08", ev("y8b", "xid:48", "0000:19:00.0", NULL, NULL));
	assert_string_equal(action0(res), "suppressed");
	json_decref(res);
	assert_int_equal(health_breaker_reset_ex(w->h, "rack.r07", "operator:alice", "checked", 0,
						 &res, err, sizeof(err)),
			 0);
	s = jsonx_dumps(json_object_get(res, "unheld"));
	assert_string_equal(s,
			    "[{\"node\":\"r07n08\",\"event\":\"y8\",\"code\":\"xid:79\","
			    "\"reason\":\"replay not requested\"},{\"node\":\"r07n08\",\"event\":"
			    "\"y8b\",\"code\":\"xid:48\",\"reason\":\"replay not requested\"}]");
	free(s);
	json_decref(res);
	world_free(w);
}

/* An agent run once (intervalSeconds 0) is alive at its report and arms no heartbeat; it
 * leaves a heartbeating agent's watch alone. */
static void test_interval_zero(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	json_t *dets = json_pack("[{s:s, s:b, s:s}]", "name", "kernel", "live", 1, "status", "ok");
	report_dets(w, "r01n01", 0, json_deep_copy(dets));
	assert_cond(w, "r01n01", "AgentAlive", COND_TRUE, "Report",
		    "agent 0.4.0 reported once (intervalSeconds 0: it does not heartbeat)");
	clock_virtual_advance(w->clock, 600 * SEC);
	health_tick(w->h);
	assert_int_equal(events_with(w, "AgentHeartbeatMissed", NULL, 0), 0);
	assert_cond(w, "r01n01", "AgentAlive", COND_TRUE, "Report", NULL);
	/* A heartbeating agent, then a run once: the watch of the first stays and fires. */
	report_dets(w, "r01n01", 30, json_deep_copy(dets));
	assert_cond(w, "r01n01", "AgentAlive", COND_TRUE, "Heartbeat",
		    "agent 0.4.0 reports every 30 s");
	clock_virtual_advance(w->clock, 50 * SEC);
	report_dets(w, "r01n01", 0, json_deep_copy(dets));
	assert_cond(w, "r01n01", "AgentAlive", COND_TRUE, "Heartbeat", NULL);
	clock_virtual_advance(w->clock, 41 * SEC);
	health_tick(w->h);
	assert_int_equal(events_with(w, "AgentHeartbeatMissed", NULL, 0), 1);
	assert_cond(w, "r01n01", "AgentAlive", COND_FALSE, "HeartbeatMissed",
		    "no agent report for 91 s (timeout 90 s)");
	json_decref(dets);
	world_free(w);
}

/* The GPU's own recovery action decides the rung, and a DCGM "Healthy" beside it does not
 * outvote it (issue 16, "GPU signals" 1): Xid 154 to 0x1 (GPU Reset Required) - the agent's
 * kernel detector reports it as gpu:reset_required (tests/data/kernel/
 * xid154-recovery-action-gb200-gpud.log line 3) - with dcgm live and ok holds the node with the
 * ladder starting at gpu_reset; a reboot_required from nvidia-smi's GPU Recovery Action on a
 * second node starts at reboot. Before the fix the 154 line was xid:154 (info, no hold). */
static void test_recovery_action_decides_rung(void **state)
{
	struct world *w = world_new();
	put_node(w, "r01n01", "r01", PHASE_AVAILABLE);
	put_node(w, "r02n01", "r02", PHASE_AVAILABLE);
	json_t *e =
		ev("k-154", "gpu:reset_required", "0019:01:00.0", NULL,
		   "[171167.897562] NVRM: Xid (PCI:0019:01:00): 154, GPU recovery action changed "
		   "from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)");
	json_t *rep = json_pack("{s:{s:s, s:i}, s:[{s:s, s:b, s:s}, {s:s, s:b, s:s}], s:[o]}",
				"agent", "version", "0.4.0", "intervalSeconds", 30, "detectors",
				"name", "dcgm", "live", 1, "status", "ok", "name", "kernel", "live",
				1, "status", "unhealthy", "events", e);
	json_t *res = NULL;
	char err[256] = "";
	assert_int_equal(health_report(w->h, "r01n01", "agent:r01n01", rep, clock_wall_ms(w->clock),
				       &res, err, sizeof(err)),
			 0);
	assert_string_equal(action0(res), "hold");
	json_decref(res);
	json_decref(rep);
	struct node *n = get_node(w, "r01n01");
	assert_non_null(node_hold_find(n, "health"));
	assert_int_equal(n->remediation.active, 1);
	assert_int_equal(n->remediation.ladder[n->remediation.rung], RUNG_GPU_RESET);
	assert_string_equal(n->remediation.code, "gpu:reset_required");
	const struct node_condition *c = node_condition_get(n, "GPUHealthy");
	assert_int_equal(c->status, COND_FALSE);
	node_free(n);

	e = json_pack("{s:s, s:s, s:s, s:{s:s}}", "id", "s-rb", "source", "nvidia-smi", "code",
		      "gpu:reboot_required", "gpu", "pciBusId", "0000:01:00.0");
	res = send1(w, "r02n01", e);
	assert_string_equal(action0(res), "hold");
	json_decref(res);
	n = get_node(w, "r02n01");
	assert_int_equal(n->remediation.ladder[n->remediation.rung], RUNG_REBOOT);
	node_free(n);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_catalog_rows),
		cmocka_unit_test(test_policy_roundtrip),
		cmocka_unit_test(test_policy_errors),
		cmocka_unit_test(test_windows_and_lemon),
		cmocka_unit_test(test_xid79_holds_in_one_revision),
		cmocka_unit_test(test_n_of_m),
		cmocka_unit_test(test_job_fault_across_nodes),
		cmocka_unit_test(test_distinct_jobs_on_one_gpu),
		cmocka_unit_test(test_gpu_idle_jobs),
		cmocka_unit_test(test_breaker),
		cmocka_unit_test(test_dry_run_and_never_served),
		cmocka_unit_test(test_bad_reports),
		cmocka_unit_test(test_agent_alive_sweep),
		cmocka_unit_test(test_agent_alive_sweep_cached),
		cmocka_unit_test(test_count_restarts_after_remediation),
		cmocka_unit_test(test_breaker_domains),
		cmocka_unit_test(test_suppressed_replay),
		cmocka_unit_test(test_no_live_detector),
		cmocka_unit_test(test_job_fault_jobs_excluded),
		cmocka_unit_test(test_dry_run_breaker),
		cmocka_unit_test(test_store_hygiene),
		cmocka_unit_test(test_count_not_audited),
		cmocka_unit_test(test_breaker_large_limit),
		cmocka_unit_test(test_memory_bounded),
		cmocka_unit_test(test_detector_unhealthy),
		cmocka_unit_test(test_replay_evidence),
		cmocka_unit_test(test_interval_zero),
		cmocka_unit_test(test_recovery_action_decides_rung),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
