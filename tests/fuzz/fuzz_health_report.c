/* layers: base core store driver engine controller */
/* fuzz_health_report.c - libFuzzer target for the agent report body of
 * POST /v1/nodes/{name}:report (design shape in docs/health.md, "Agent report"), validated and
 * evaluated by health_report (controller/health.c). The input is parsed like the API parses a
 * body (api_body_object in src/api/server.c: no NUL byte, json_loadb with
 * JSON_REJECT_DUPLICATES, an object); an object goes to health_report on an in-memory store, a
 * virtual clock (1 s forward per input) and a health controller without its sweep, for one of
 * NNODES nodes "n1".."n6" of rack r01 (phase available, servedAt set) picked by a hash of the
 * input - one node for most inputs would never reach the correlated-failure breaker (opens past
 * breaker.maxNodes = 3 distinct nodes within 300 s) or job attribution (3 nodes).
 * Properties, each an abort (a crash to libFuzzer):
 *  - rc is 0 or a negative fp_err code; any error leaves a non-empty err and no result;
 *  - FP_EINVAL writes nothing (the store revision is unchanged);
 *  - rc 0 gives {"accepted":A,"duplicates":D,"decisions":[...]} with A + D = the number of
 *    events and A decisions, each naming an event id of the report and an action of the
 *    design ("hold" | "none" | "job_fault" | "suppressed" | "count");
 *  - each accepted event is stored at /healthevents/<node>/<id>;
 *  - the node document the controller leaves decodes (node_from_json);
 *  - a report without events writes at most one revision.
 * The fixture (store, clock, controller, node) is static so the state of earlier inputs (stored
 * events, holds, windows) is exercised too; it is freed and re-created every 1000 inputs to
 * keep memory bounded over a long run, and at exit.
 * Seeds (tests/fuzz/corpus/fuzz_health_report/): the raw text of each event is a line copied
 * verbatim from tests/data/kernel (SOURCES.md there gives its origin) with the event fields
 * written by hand from that line; tools-mixed.json uses codes of the design contract; the
 * bad-*.json files are hand-made malformed reports. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "controller/health.h"
#include "core/codec.h"
#include "core/model.h"
#include "engine/clock.h"
#include "store/store.h"

#include "base/banned.h"

#define START_WALL 1796000000000LL /* 2026-11-30T00:53:20Z */
#define RESET_EVERY 1000
#define MAX_BODY (1u << 20) /* API_DEFAULT_MAX_BODY in src/api/server.c */
#define NNODES 6

static struct store *g_store;
static struct fp_clock *g_clock;
static struct fp_rng g_rng;
static struct health *g_h;
static unsigned g_runs;

static void die(const char *what, const json_t *doc, const json_t *res, int rc, const char *err)
{
	char *sd = doc ? jsonx_dumps(doc) : NULL, *sr = res ? jsonx_dumps(res) : NULL;
	fprintf(stderr, "fuzz_health_report: %s\n  rc: %d\n  err: %s\n  report: %s\n  result: %s\n",
		what, rc, err ? err : "", sd ? sd : "-", sr ? sr : "-");
	free(sd);
	free(sr);
	abort();
}

static void fixture_free(void)
{
	if (!g_store)
		return;
	health_free(g_h);
	clock_free(g_clock);
	store_close(g_store);
	fp_rng_release(&g_rng);
	g_h = NULL;
	g_clock = NULL;
	g_store = NULL;
}

/* Store "mem:", virtual clock at START_WALL, nodes n1..n6 of rack r01 available since
 * START_WALL (servedAt set), controller with sweep 0 - as test_health.c's world_new +
 * put_node. */
static void fixture_new(void)
{
	char err[256];
	if (store_open("mem:", &g_store, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_health_report: store_open: %s\n", err);
		abort();
	}
	g_clock = clock_virtual_new(START_WALL);
	fp_rng_init(&g_rng, 42);

	for (int i = 1; i <= NNODES; i++) {
		char name[16], key[32];
		snprintf(name, sizeof(name), "n%d", i);
		snprintf(key, sizeof(key), "/nodes/%s", name);
		struct node *nd = node_new();
		nd->name = xstrdup(name);
		nd->uid = xstrdup(name);
		nd->site = xstrdup("site-a");
		nd->rack = xstrdup("r01");
		nd->bmc.driver = xstrdup("sim");
		nd->gpu_count = 8;
		nd->phase = PHASE_AVAILABLE;
		nd->phase_since = nd->created_at = nd->served_at = clock_wall_ms(g_clock);
		json_t *doc = node_to_json(nd, NODE_JSON_STORE);
		char *val = jsonx_dumps(doc);
		if (store_put(g_store, key, val, STORE_ANY, NULL) < 0)
			abort();
		free(val);
		json_decref(doc);
		node_free(nd);
	}

	struct health_config hc = {.store = g_store, .clock = g_clock, .rng = &g_rng, .sweep = 0};
	g_h = health_new(&hc, err, sizeof(err));
	if (!g_h) {
		fprintf(stderr, "fuzz_health_report: health_new: %s\n", err);
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_init(LOG_LVL_ERROR, stderr);
	fixture_new();
	atexit(fixture_free);
	return 0;
}

static int in(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* 1 when events (the report's array) has an object whose id is the string id. */
static int has_event(const json_t *events, const char *id)
{
	size_t i;
	json_t *e;
	json_array_foreach(events, i, e) {
		const json_t *v = json_object_get(e, "id");
		if (json_is_string(v) && strcmp(json_string_value(v), id) == 0)
			return 1;
	}
	return 0;
}

/* The stored document at key decoded, or NULL when absent. */
static json_t *stored(const char *key)
{
	struct store_kv kv = {0};
	if (store_get(g_store, key, &kv) < 0)
		return NULL;
	json_t *d = json_loads(kv.value, 0, NULL);
	store_kv_release(&kv);
	return d;
}

static void check_node_doc(const char *node, const json_t *doc, int rc)
{
	char key[32], err[512] = "";
	snprintf(key, sizeof(key), "/nodes/%s", node);
	json_t *nj = stored(key);
	struct node *n = NULL;
	if (!nj || node_from_json(nj, 1, &n, err, sizeof(err)) < 0)
		die("the node document no longer decodes", doc, nj, rc, err);
	node_free(n);
	json_decref(nj);
}

static void check_result(const char *node, const json_t *doc, const json_t *res, int rc,
			 const char *err)
{
	static const char *const actions[] = {"hold",       "none",  "job_fault",
					      "suppressed", "count", NULL};
	const json_t *events = json_object_get(doc, "events");
	size_t nev = json_is_array(events) ? json_array_size(events) : 0;
	if (!json_is_object(res) || json_object_size(res) != 3)
		die("result is not {accepted, duplicates, decisions}", doc, res, rc, err);
	const json_t *acc = json_object_get(res, "accepted"),
		     *dup = json_object_get(res, "duplicates");
	const json_t *dec = json_object_get(res, "decisions");
	if (!json_is_integer(acc) || !json_is_integer(dup) || !json_is_array(dec))
		die("result fields have wrong types", doc, res, rc, err);
	json_int_t a = json_integer_value(acc), d = json_integer_value(dup);
	if (a < 0 || d < 0 || (size_t)(a + d) != nev)
		die("accepted + duplicates != number of events", doc, res, rc, err);
	if (json_array_size(dec) != (size_t)a)
		die("decisions != accepted", doc, res, rc, err);
	size_t i;
	json_t *x;
	json_array_foreach(dec, i, x) {
		const char *ev = jsonx_str(x, "event"), *act = jsonx_str(x, "action");
		if (!ev || !has_event(events, ev))
			die("a decision names no event of the report", doc, res, rc, err);
		if (!in(act, actions))
			die("a decision has an action outside the design", doc, res, rc, err);
		if (!json_is_boolean(json_object_get(x, "dryRun")) || !jsonx_str(x, "reason"))
			die("a decision lacks dryRun or reason", doc, res, rc, err);
		char key[160];
		snprintf(key, sizeof(key), "/healthevents/%s/%s", node, ev);
		json_t *he = stored(key);
		if (!he || strcmp(jsonx_str(he, "id") ? jsonx_str(he, "id") : "", ev) != 0)
			die("an accepted event is not stored under its id", doc, res, rc, key);
		json_decref(he);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > MAX_BODY || memchr(data, 0, size))
		return 0;
	json_error_t je;
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return 0;
	if (!json_is_object(doc)) {
		json_decref(doc);
		return 0;
	}
	if (++g_runs % RESET_EVERY == 0) {
		fixture_free();
		fixture_new();
	}
	clock_virtual_advance(g_clock, 1000);
	uint32_t hash = 2166136261u; /* FNV-1a: the same input always goes to the same node */
	for (size_t i = 0; i < size; i++)
		hash = (hash ^ data[i]) * 16777619u;
	char node[16];
	snprintf(node, sizeof(node), "n%u", 1 + hash % NNODES);

	json_t *res = NULL;
	char err[512] = "";
	int64_t rev0 = store_revision(g_store);
	int rc = health_report(g_h, node, "fuzz", doc, clock_wall_ms(g_clock), &res, err,
			       sizeof(err));
	if (rc > 0 || (rc < 0 && strcmp(fp_err_name(rc), "FP_UNKNOWN") == 0))
		die("rc is not 0 or a negative fp_err", doc, res, rc, err);
	if (rc < 0) {
		if (res)
			die("an error left a result", doc, res, rc, err);
		if (!err[0])
			die("an error with an empty err", doc, res, rc, err);
		if (!memchr(err, 0, sizeof(err)))
			die("err is not terminated", doc, res, rc, err);
		if (rc == FP_EINVAL && store_revision(g_store) != rev0)
			die("FP_EINVAL wrote to the store", doc, res, rc, err);
	} else {
		check_result(node, doc, res, rc, err);
		check_node_doc(node, doc, rc);
		const json_t *events = json_object_get(doc, "events");
		if ((!events || json_array_size(events) == 0) && store_revision(g_store) > rev0 + 1)
			die("a heartbeat wrote more than one revision", doc, res, rc, err);
	}
	json_decref(res);
	json_decref(doc);
	return 0;
}
