/* layers: base core store driver engine controller api agent fleet */
/* test_scenarios.c - issue 4's scenario tests in virtual time: the whole health path run
 * single-threaded on the shared harness (support/harness.h: the fleet assembly run stepped) -
 * an in-memory store, the informer cache, a virtual clock, the inline executor, the sim driver
 * with its simulated agent (boot callbacks, burn-in after every boot and GPU reset, GPU resets
 * asked through the agent_action op), the lifecycle controller with the disruption-budget
 * service, and the health controller (its sweep driven by health_tick after every clock step).
 * A restart is the control plane's: harness_down frees the whole fleet, harness_up builds a
 * new one over the same store, clock and machines. Agent reports reach health_report as the
 * API passes them: a JSON body text parsed, with real kernel lines from tests/data/kernel (the
 * fields of each event written by hand from its line).
 *
 * After every reconcile, every executor task, every report and every timer the invariants are
 * checked: no budget's domain value has more nodes counted unavailable (core/budget.h
 * budget_node_unavailable) than its max; a node leaves repairing only to validating or failed;
 * a node with a `health` hold is never schedulable, and the hold goes only with a validated
 * remediation (validating -> available with a succeeded history record); no health event is
 * accepted twice, and the stored /healthevents/ equal the accepted count. */
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
#include "base/timefmt.h"
#include "controller/budget.h"
#include "controller/health.h"
#include "core/budget.h"
#include "core/codec.h"
#include "driver/bmc_sim.h"
#include "engine/clock.h"
#include "store/store.h"
#include "support/harness.h"

#define START_WALL 1796000000000LL /* 2026-11-30T00:53:20Z */
#define SEC 1000LL
#define MIN (60 * SEC)
#define DAY (86400 * SEC)
#define MAX_NODES 16
#define MAX_ACCEPTED 256

/* What the invariant checker remembers of a node between two looks. */
struct track {
	char name[32];
	enum node_phase phase;
	int health_held; /* had a `health` hold at the last look */
	size_t hist;     /* remediationHistory length at the last look */
	struct buf path; /* phases it went through, "available>draining>..." */
	long left, back; /* check number when it last left available / came back */
};

/* The shared test world (support/harness.h): the whole fleet stepped - cache, budget service,
 * lifecycle and health - over the harness's store, clock and sim machines; the pointers below
 * are the harness's (store, clock, sim) or the running fleet's (budget, h: NULL while down). */
struct world {
	struct harness *hn;
	struct store *store;
	struct fp_clock *clock;
	struct bmc *sim;
	struct budget_svc *budget;
	struct health *h;
	struct track tr[MAX_NODES];
	size_t ntr;
	int max_out; /* most nodes of one budget domain value unavailable at one look */
	char *accepted[MAX_ACCEPTED]; /* "<node>/<id>" of every accepted health event */
	size_t naccepted;
	long checks;
};

/* ------------------------------------------------------------------ the real data */

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

/* Line `no` (1-based) of tests/data/kernel/<file>, without its newline. */
static void kline(const char *file, int no, char *out, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/data/kernel/%s", srcdir(), file);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	for (int k = 0; k < no; k++)
		assert_non_null(fgets(out, (int)len, f));
	fclose(f);
	out[strcspn(out, "\n")] = 0;
}

#define XID_FILE "xid-and-gpu-kernel-lines-from-issues.log"

/* A kernel event as the agent reports it. The fields are written by hand from the line. */
struct kev {
	const char *code, *bus, *process, *message;
	long pid; /* 0 = none */
	const char *file;
	int line;
};

/* line 12: "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus" */
static const struct kev XID79 = {"xid:79", "0000:44:00.0", NULL, "GPU has fallen off the bus",
				 0,        XID_FILE,       12};
/* line 52: "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error" */
static const struct kev XID94 = {"xid:94", "0000:9b:00.0", "python3", "Contained ECC error",
				 1234,     XID_FILE,       52};
/* line 25: "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828,
 * name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005" */
static const struct kev XID109 = {"xid:109",
				  "0000:cb:00.0",
				  "pt_main_thread",
				  "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
				  1797828,
				  XID_FILE,
				  25};
/* dmesg-decode-iso-xid13-xid43.log line 1: "kern  :warn  : 2025-01-21T02:21:33,499870+00:00
 * NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR
 * 0x555f30=0x11f000e ..." (pid unknown: none) */
static const struct kev XID13 = {"xid:13",
				 "0000:38:00.0",
				 NULL,
				 "Graphics Exception: ESR 0x555f30=0x11f000e 0x555f34=0x24 "
				 "0x555f28=0xf81eb60 0x555f2c=0x1174",
				 0,
				 "dmesg-decode-iso-xid13-xid43.log",
				 1};

/* One event object {id, source kernel, code, gpu, pid?, process?, job?, time, message, raw}. */
static json_t *kevent(struct world *w, const char *id, const struct kev *k, const char *job)
{
	char raw[1100], ts[FP_TIME_LEN];
	kline(k->file, k->line, raw, sizeof(raw));
	fp_time_format(clock_wall_ms(w->clock), ts);
	json_t *e = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:s, s:s}", "id", id, "source",
			      "kernel", "code", k->code, "gpu", "pciBusId", k->bus, "time", ts,
			      "message", k->message, "raw", raw);
	if (k->pid)
		json_object_set_new(e, "pid", json_integer(k->pid));
	if (k->process)
		json_object_set_new(e, "process", json_string(k->process));
	if (job)
		json_object_set_new(e, "job", json_string(job));
	return e;
}

/* ------------------------------------------------------------------ invariants */

static struct track *track_of(struct world *w, const char *name)
{
	for (size_t i = 0; i < w->ntr; i++)
		if (strcmp(w->tr[i].name, name) == 0)
			return &w->tr[i];
	assert_true(w->ntr < MAX_NODES);
	struct track *t = &w->tr[w->ntr++];
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->phase = PHASE__COUNT;
	buf_init(&t->path, 0);
	return t;
}

static size_t load_nodes(struct world *w, struct node **out)
{
	struct store_kv *kvs = NULL;
	size_t n = 0;
	int more = 0;
	char err[256];
	assert_int_equal(store_list(w->store, "/nodes/", NULL, 0, &kvs, &n, NULL, &more), 0);
	assert_true(n <= MAX_NODES);
	for (size_t i = 0; i < n; i++) {
		json_t *doc = NULL;
		assert_int_equal(jsonx_parse(kvs[i].value, strlen(kvs[i].value), &doc, err,
					     sizeof(err)),
				 0);
		assert_int_equal(node_from_json(doc, kvs[i].mod_revision, &out[i], err,
						sizeof(err)),
				 0);
		json_decref(doc);
	}
	store_kv_array_free(kvs, n);
	return n;
}

static void check_budgets(struct world *w, struct node **nodes, size_t n)
{
	struct store_kv *kvs = NULL;
	size_t nb = 0;
	int more = 0;
	char err[256];
	assert_int_equal(store_list(w->store, "/budgets/", NULL, 0, &kvs, &nb, NULL, &more), 0);
	for (size_t b = 0; b < nb; b++) {
		json_t *doc = NULL;
		struct budget bg;
		assert_int_equal(jsonx_parse(kvs[b].value, strlen(kvs[b].value), &doc, err,
					     sizeof(err)),
				 0);
		assert_int_equal(budget_from_json(doc, kvs[b].mod_revision, &bg, err, sizeof(err)),
				 0);
		json_decref(doc);
		for (size_t i = 0; i < n; i++) {
			const char *v = budget_domain_value(&bg, nodes[i]);
			if (!v)
				continue;
			size_t members = 0;
			int out = 0;
			for (size_t j = 0; j < n; j++) {
				const char *u = budget_domain_value(&bg, nodes[j]);
				if (u && strcmp(u, v) == 0) {
					members++;
					out += budget_node_unavailable(nodes[j]);
				}
			}
			if (out > budget_max(&bg, members))
				fail_msg("budget %s: %s %s has %d unavailable, max %d", bg.name,
					 bg.domain, v, out, budget_max(&bg, members));
			w->max_out = out > w->max_out ? out : w->max_out;
		}
		budget_release(&bg);
	}
	store_kv_array_free(kvs, nb);
}

static void check(struct world *w)
{
	struct node *nodes[MAX_NODES];
	size_t n = load_nodes(w, nodes);
	w->checks++;
	for (size_t i = 0; i < n; i++) {
		struct node *nd = nodes[i];
		struct track *t = track_of(w, nd->name);
		const struct node_hold *hold = node_hold_find(nd, "health");
		if (t->phase != nd->phase) {
			if (t->phase == PHASE_REPAIRING && nd->phase != PHASE_VALIDATING &&
			    nd->phase != PHASE_FAILED)
				fail_msg("%s left repairing for %s", nd->name,
					 node_phase_name(nd->phase));
			buf_printf(&t->path, "%s%s", t->path.len ? ">" : "",
				   node_phase_name(nd->phase));
			if (t->phase == PHASE_AVAILABLE)
				t->left = w->checks;
			if (nd->phase == PHASE_AVAILABLE)
				t->back = w->checks;
		}
		if (node_schedulable(nd) && (hold || nd->remediation.active))
			fail_msg("%s is schedulable with a health hold or remediation", nd->name);
		if (t->health_held && !hold) {
			/* Released: only by a validated remediation, in the same commit. */
			if (t->phase != PHASE_VALIDATING || nd->phase != PHASE_AVAILABLE ||
			    nd->nremediation_history != t->hist + 1 ||
			    strcmp(nd->remediation_history[nd->nremediation_history - 1].result,
				   "succeeded") != 0)
				fail_msg("%s lost its health hold going %s -> %s", nd->name,
					 node_phase_name(t->phase), node_phase_name(nd->phase));
		}
		t->health_held = hold != NULL;
		t->phase = nd->phase;
		t->hist = nd->nremediation_history;
	}
	check_budgets(w, nodes, n);
	size_t nev = 0;
	assert_int_equal(store_count(w->store, "/healthevents/", &nev), 0);
	assert_int_equal(nev, w->naccepted);
	for (size_t i = 0; i < n; i++)
		node_free(nodes[i]);
}

/* ------------------------------------------------------------------ the harness */

/* The harness's each hook: the invariants after every unit of work and every timer step. */
static void each_check(void *arg)
{
	check(arg);
}

/* The fleet comes up over the world (harness_up; agent callbacks that waited are delivered). */
static void world_up(struct world *w)
{
	harness_up(w->hn);
	w->h = harness_health(w->hn);
	w->budget = harness_budget(w->hn);
	assert_non_null(w->h);
	assert_non_null(w->budget);
}

/* The control plane restarts (a crash): cache, budget service, lifecycle and health controller
 * freed with their memory and queued steps; the store, the clock and the machines stay. */
static void restart(struct world *w)
{
	harness_down(w->hn);
	w->h = NULL;
	w->budget = NULL;
	world_up(w);
}

static struct world *world_new(void)
{
	struct world *w = xcalloc(1, sizeof(*w));
	struct harness_config hc = {.start_wall_ms = START_WALL, .sim_speed = 1};
	w->hn = harness_new(&hc);
	w->hn->each = each_check;
	w->hn->each_arg = w;
	w->store = w->hn->store;
	w->clock = w->hn->clock;
	w->sim = w->hn->sim;
	world_up(w);
	return w;
}

static void world_free(struct world *w)
{
	harness_free(w->hn);
	for (size_t i = 0; i < w->ntr; i++)
		buf_release(&w->tr[i].path);
	for (size_t i = 0; i < w->naccepted; i++)
		free(w->accepted[i]);
	free(w);
}

/* The node as stored (caller frees). */
static struct node *get_node(struct world *w, const char *name)
{
	return harness_node(w->hn, name);
}

/* harness_run_until's predicate: every node named (NULL-terminated) is available without
 * holds. */
static int all_back(struct harness *h, void *arg)
{
	const char *const *names = arg;
	for (size_t i = 0; names[i]; i++) {
		struct node *n = harness_node(h, names[i]);
		int ok = n->phase == PHASE_AVAILABLE && n->nholds == 0;
		node_free(n);
		if (!ok)
			return 0;
	}
	return 1;
}

/* Runs until the named nodes are all available without holds; fails after max_ms. */
static void run_until_back(struct world *w, const char *const *names, int64_t max_ms)
{
	if (harness_run_until(w->hn, all_back, (void *)names, max_ms) < 0)
		fail_msg("not back within %lld min", (long long)(max_ms / MIN));
}

struct want_phase {
	const char *name;
	enum node_phase phase;
};

static int in_phase(struct harness *h, void *arg)
{
	const struct want_phase *wp = arg;
	return harness_phase_is(h, wp->name, wp->phase);
}

static void run_until_phase(struct world *w, const char *name, enum node_phase p, int64_t max_ms)
{
	struct want_phase wp = {name, p};
	if (harness_run_until(w->hn, in_phase, &wp, max_ms) < 0)
		fail_msg("%s not %s within %lld min", name, node_phase_name(p),
			 (long long)(max_ms / MIN));
}

/* Enrolls r01n01..r01n<count> (rack r01, site site-a, 8 GPUs, sim BMC) and runs them to
 * available as the lifecycle onboards them. */
static void enroll(struct world *w, int count)
{
	const char *names[MAX_NODES + 1] = {0};
	char buf[MAX_NODES][32];
	for (int i = 0; i < count; i++) {
		snprintf(buf[i], sizeof(buf[i]), "r01n%02d", i + 1);
		names[i] = buf[i];
		harness_put_node(w->hn, buf[i], "site-a", "r01", "sim", PHASE_ENROLLED);
	}
	run_until_back(w, names, 120 * MIN);
	/* Onboarding is not what the scenarios look at: start their phase paths here. */
	for (size_t i = 0; i < w->ntr; i++) {
		buf_reset(&w->tr[i].path);
		buf_printf(&w->tr[i].path, "%s", node_phase_name(w->tr[i].phase));
	}
}

/* Sends one agent report for node: body {"agent","detectors","events":[evs...]} (evs stolen)
 * as JSON text parsed like the API does, at the current virtual time. Checks that every
 * decided event is new and returns the result (caller frees). */
static json_t *report(struct world *w, const char *node, json_t *evs)
{
	json_t *body = json_pack("{s:{s:s, s:s, s:i}, s:[{s:s, s:b, s:s}], s:o}", "agent",
				 "version", "0.4.0", "bootId", "b7c2d1e0-boot", "intervalSeconds",
				 30, "detectors", "name", "kernel", "live", 1, "status",
				 json_array_size(evs) ? "unhealthy" : "ok", "events", evs);
	char *text = jsonx_dumps(body);
	json_decref(body);
	json_t *parsed = NULL;
	char err[512] = "", actor[64];
	assert_int_equal(jsonx_parse(text, strlen(text), &parsed, err, sizeof(err)), 0);
	free(text);
	snprintf(actor, sizeof(actor), "agent:%s", node);
	json_t *res = NULL;
	int rc = health_report(w->h, node, actor, parsed, clock_wall_ms(w->clock), &res, err,
			       sizeof(err));
	if (rc)
		fail_msg("health_report %s: %s", node, err);
	json_decref(parsed);
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(res, "decisions"), i, d) {
		char key[160];
		snprintf(key, sizeof(key), "%s/%s", node, jsonx_str(d, "event"));
		for (size_t k = 0; k < w->naccepted; k++)
			if (strcmp(w->accepted[k], key) == 0)
				fail_msg("health event %s decided twice", key);
		assert_true(w->naccepted < MAX_ACCEPTED);
		w->accepted[w->naccepted++] = xstrdup(key);
	}
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")),
			 json_array_size(json_object_get(res, "decisions")));
	check(w);
	return res;
}

/* Reports one kernel event and checks its decision's action ("hold", "count", ...). */
static void expect(struct world *w, const char *node, const char *id, const struct kev *k,
		   const char *job, const char *want)
{
	json_t *res = report(w, node, json_pack("[o]", kevent(w, id, k, job)));
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")), 1);
	const char *got = jsonx_str(json_array_get(json_object_get(res, "decisions"), 0), "action");
	if (strcmp(got, want) != 0)
		fail_msg("%s event %s: action %s, expected %s", node, id, got, want);
	json_decref(res);
}

/* Number of stored documents under prefix whose field at path equals value. */
static int count_docs(struct world *w, const char *prefix, const char *path, const char *value)
{
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0, c = 0;
	assert_int_equal(store_list(w->store, prefix, NULL, 0, &items, &k, NULL, &more), 0);
	for (size_t i = 0; i < k; i++) {
		json_t *d = NULL;
		assert_int_equal(jsonx_parse(items[i].value, strlen(items[i].value), &d, NULL, 0),
				 0);
		const char *v = jsonx_str(d, path);
		c += v && strcmp(v, value) == 0;
		json_decref(d);
	}
	store_kv_array_free(items, k);
	return c;
}

/* The message of the newest audit event with this reason ("" when none). */
static void event_message(struct world *w, const char *reason, char *out, size_t len)
{
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0;
	out[0] = 0;
	assert_int_equal(store_list(w->store, "/events/", NULL, 0, &items, &k, NULL, &more), 0);
	for (size_t i = 0; i < k; i++) {
		json_t *d = NULL;
		assert_int_equal(jsonx_parse(items[i].value, strlen(items[i].value), &d, NULL, 0),
				 0);
		if (strcmp(jsonx_str(d, "reason"), reason) == 0)
			snprintf(out, len, "%s", jsonx_str(d, "message"));
		json_decref(d);
	}
	store_kv_array_free(items, k);
}

static long sim_counter(struct world *w, const char *node, const char *which)
{
	json_t *s = bmc_sim_state(w->sim, node);
	long v = (long)json_integer_value(json_object_get(json_object_get(s, "counters"), which));
	json_decref(s);
	return v;
}

static const char *path_of(struct world *w, const char *node)
{
	return track_of(w, node)->path.data;
}

static size_t count_prefix(struct world *w, const char *prefix)
{
	size_t n = 0;
	assert_int_equal(store_count(w->store, prefix, &n), 0);
	return n;
}

static void put_doc(struct world *w, const char *key, const char *text)
{
	assert_int_equal(store_put(w->store, key, text, STORE_ANY, NULL), 0);
}

static void policy_put(struct world *w, const char *text)
{
	json_t *doc = NULL, *stored = NULL;
	char err[256];
	assert_int_equal(jsonx_parse(text, strlen(text), &doc, err, sizeof(err)), 0);
	if (health_policy_put(w->h, doc, "operator:alice", &stored, err, sizeof(err)) < 0)
		fail_msg("policy: %s", err);
	json_decref(stored);
	json_decref(doc);
}

/* ------------------------------------------------------------------ scenarios */

/* 1. One XID 79 on r01n01: the `health` hold is committed within 1 s of the agent reading the
 * line, the reboot rung runs, validation passes, the node is back and the hold gone. */
static void test_xid79_hold_reboot_validate_available(void **state)
{
	struct world *w = world_new();
	enroll(w, 1);
	int64_t seen = clock_wall_ms(w->clock); /* the agent reads the line (event time) */
	json_t *e = kevent(w, "k-b7c-000012", &XID79, NULL);
	clock_virtual_advance(w->clock, 250); /* ... and posts it 250 ms later */
	json_t *res = report(w, "r01n01", json_pack("[o]", e));
	json_t *d = json_array_get(json_object_get(res, "decisions"), 0);
	assert_string_equal(jsonx_str(d, "event"), "k-b7c-000012");
	assert_string_equal(jsonx_str(d, "action"), "hold");
	assert_string_equal(jsonx_str(d, "reason"),
			    "critical xid:79 on GPU 0000:44:00.0: 1 of 1 "
			    "within 86400 s; hold, remediation starts at reboot");
	json_decref(res);
	/* Committed by the time health_report returned: no virtual time passed since. */
	struct node *n = get_node(w, "r01n01");
	const struct node_hold *hd = node_hold_find(n, "health");
	assert_non_null(hd);
	assert_int_equal(hd->since - seen, 250);
	assert_string_equal(hd->reason, "xid:79 on GPU 0000:44:00.0: 1 in 86400 s (threshold 1)");
	assert_int_equal(n->phase, PHASE_AVAILABLE);
	assert_int_equal(node_schedulable(n), 0);
	assert_int_equal(n->remediation.active, 1);
	assert_int_equal(n->remediation.ladder[n->remediation.rung], RUNG_REBOOT);
	assert_int_equal(node_condition_get(n, "GPUHealthy")->status, COND_FALSE);
	node_free(n);

	static const char *const names[] = {"r01n01", NULL};
	run_until_back(w, names, 60 * MIN);
	assert_string_equal(path_of(w, "r01n01"),
			    "available>draining>repairing>validating>available");
	n = get_node(w, "r01n01");
	assert_int_equal(n->nholds, 0);
	assert_int_equal(n->remediation.active, 0);
	assert_int_equal(n->nremediation_history, 1);
	assert_string_equal(n->remediation_history[0].code, "xid:79");
	assert_string_equal(n->remediation_history[0].gpu, "0000:44:00.0");
	assert_int_equal(n->remediation_history[0].rung, RUNG_REBOOT);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	assert_int_equal(node_condition_get(n, "GPUHealthy")->status, COND_TRUE);
	assert_int_equal(node_schedulable(n), 1);
	node_free(n);
	/* onboarding powered on once; the reboot rung off and on again */
	assert_int_equal(sim_counter(w, "r01n01", "powerOff"), 1);
	assert_int_equal(sim_counter(w, "r01n01", "powerOn"), 2);
	assert_int_equal(sim_counter(w, "r01n01", "gpuReset"), 0);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 1);
	assert_int_equal(count_docs(w, "/events/", "reason", "RemediationSucceeded"), 1);
	assert_int_equal(count_prefix(w, "/healthevents/"), 1);
	world_free(w);
}

static const char *const RACK[] = {"r01n01", "r01n02", "r01n03", "r01n04", "r01n05", "r01n06",
				   "r01n07", "r01n08", "r01n09", "r01n10", NULL};

/* 2. One job hits the same node-actionable XID on all 10 nodes of a rack: the job's fault.
 * Nodes 1 and 2 only count (job attribution needs minNodes 3 within 600 s), nodes 3..10 are
 * job_fault; no node is held, no operation starts, phases stay; one JobFault event. */
static void job_fault_case(const struct kev *k, const char *job, const char *first_reason,
			   const char *jobfault_msg)
{
	struct world *w = world_new();
	enroll(w, 10);
	size_t ops = count_prefix(w, "/operations/");
	assert_int_equal(ops, 30); /* inspect, provision, validate each */
	for (int i = 0; i < 10; i++) {
		char id[32];
		snprintf(id, sizeof(id), "k-%s-%02d", job, i + 1);
		json_t *res = report(w, RACK[i], json_pack("[o]", kevent(w, id, k, job)));
		json_t *d = json_array_get(json_object_get(res, "decisions"), 0);
		assert_string_equal(jsonx_str(d, "action"), i < 2 ? "count" : "job_fault");
		if (i == 0)
			assert_string_equal(jsonx_str(d, "reason"), first_reason);
		json_decref(res);
		clock_virtual_advance(w->clock, 5 * SEC); /* a job's ranks die within seconds */
	}
	harness_idle(w->hn, 30 * MIN);
	for (int i = 0; i < 10; i++) {
		struct node *n = get_node(w, RACK[i]);
		assert_int_equal(n->phase, PHASE_AVAILABLE);
		assert_int_equal(n->nholds, 0);
		assert_null(n->operation);
		assert_int_equal(n->remediation.active, 0);
		assert_int_equal(node_schedulable(n), 1);
		node_free(n);
		assert_string_equal(path_of(w, RACK[i]), "available");
	}
	assert_int_equal(count_prefix(w, "/operations/"), ops);
	assert_int_equal(count_prefix(w, "/healthevents/"), 10);
	assert_int_equal(count_docs(w, "/events/", "reason", "JobFault"), 1);
	char msg[1024];
	event_message(w, "JobFault", msg, sizeof(msg));
	assert_string_equal(msg, jobfault_msg);
	assert_int_equal(count_docs(w, "/healthevents/", "decision.action", "job_fault"), 8);
	world_free(w);
}

static void test_one_job_across_ten_nodes(void **state)
{
	job_fault_case(&XID94, "4242",
		       "xid:94 on GPU 0000:9b:00.0: 1 of 3 distinct jobs within 3600 s (4242)",
		       "xid:94 from job 4242 on 3 nodes within 600 s (r01n01, r01n02, r01n03): "
		       "the job's fault, no node action");
	job_fault_case(&XID109, "5151",
		       "xid:109 on GPU 0000:cb:00.0: 1 of 2 distinct jobs within 86400 s (5151)",
		       "xid:109 from job 5151 on 3 nodes within 600 s (r01n01, r01n02, r01n03): "
		       "the job's fault, no node action");
}

/* Scenario 3's story on r01n01: GPU 0000:9b:00.0 fails with XID 94 in jobs 101, 202 and 303,
 * 10 minutes apart; the third distinct job holds it; the ladder starts at gpu_reset, which the
 * sim's agent performs; burn-in passes; back available. */
static void three_jobs_one_gpu(struct world *w)
{
	expect(w, "r01n01", "k-b7c-000101", &XID94, "101", "count");
	clock_virtual_advance(w->clock, 10 * MIN);
	expect(w, "r01n01", "k-b7c-000202", &XID94, "202", "count");
	clock_virtual_advance(w->clock, 10 * MIN);
	expect(w, "r01n01", "k-b7c-000303", &XID94, "303", "hold");
	struct node *n = get_node(w, "r01n01");
	assert_string_equal(node_hold_find(n, "health")->reason,
			    "xid:94 on GPU 0000:9b:00.0: 3 distinct jobs in 3600 s (threshold 3)");
	assert_int_equal(n->remediation.nladder, 4);
	assert_int_equal(n->remediation.rung, 0);
	assert_int_equal(n->remediation.ladder[0], RUNG_GPU_RESET);
	assert_string_equal(n->remediation.gpu, "0000:9b:00.0");
	node_free(n);
	static const char *const names[] = {"r01n01", NULL};
	run_until_back(w, names, 60 * MIN);
	n = get_node(w, "r01n01");
	assert_int_equal(n->nremediation_history, 1);
	assert_string_equal(n->remediation_history[0].code, "xid:94");
	assert_string_equal(n->remediation_history[0].gpu, "0000:9b:00.0");
	assert_int_equal(n->remediation_history[0].rung, RUNG_GPU_RESET);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	node_free(n);
	assert_int_equal(sim_counter(w, "r01n01", "gpuReset"), 1);
	assert_int_equal(sim_counter(w, "r01n01", "powerOff"), 0);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "gpu_reset"), 1);
	assert_int_equal(count_docs(w, "/events/", "reason", "JobFault"), 0);
}

/* 3. The same GPU failing in three unrelated jobs is the hardware's: hold and remediation. */
static void test_same_gpu_three_jobs(void **state)
{
	struct world *w = world_new();
	enroll(w, 1);
	three_jobs_one_gpu(w);
	assert_string_equal(path_of(w, "r01n01"),
			    "available>draining>repairing>validating>available");
	world_free(w);
}

/* The budget service sees a breaker the moment the health controller opens it, and stops
 * seeing it the moment it is reset: it asks the breakers' owner instead of re-reading
 * /breakers/ every 5 s (the old cache answered "closed" here until 5 s of virtual time had
 * passed since its last read). An open breaker also survives a restart of the control plane
 * (loaded from its store document). */
static void test_breaker_seen_by_budget_at_once(void **state)
{
	struct world *w = world_new();
	enroll(w, 10);
	policy_put(w, "{\"spec\":{\"breaker\":{\"maxNodes\":2,\"windowSeconds\":300}}}");
	struct node *n = get_node(w, "r01n05");
	char why[300], name[160];
	assert_int_equal(budget_breaker_open(w->budget, n, why, sizeof(why), name, sizeof(name)),
			 0);
	assert_string_equal(why, "");
	expect(w, "r01n01", "k-79-01", &XID79, NULL, "hold");
	expect(w, "r01n02", "k-79-02", &XID79, NULL, "hold");
	expect(w, "r01n03", "k-79-03", &XID79, NULL, "suppressed");
	/* no clock advance: the breaker rack.r01 applies to every node of r01 now */
	assert_int_equal(budget_breaker_open(w->budget, n, why, sizeof(why), name, sizeof(name)),
			 1);
	assert_string_equal(name, "rack.r01");
	char want[300], ts[FP_TIME_LEN];
	fp_time_format(clock_wall_ms(w->clock), ts);
	snprintf(want, sizeof(want), "correlated-failure breaker rack.r01 is open since %s", ts);
	assert_string_equal(why, want);
	/* the control plane restarts: the breaker is loaded from its document */
	restart(w);
	assert_int_equal(budget_breaker_open(w->budget, n, why, sizeof(why), name, sizeof(name)),
			 1);
	assert_string_equal(name, "rack.r01");
	char err[256];
	assert_int_equal(health_breaker_reset(w->h, "rack.r01", "operator:alice", "PDU replaced",
					      err, sizeof(err)),
			 0);
	assert_int_equal(budget_breaker_open(w->budget, n, why, sizeof(why), name, sizeof(name)),
			 0);
	assert_string_equal(name, "");
	node_free(n);
	world_free(w);
}

/* 4. Three of ten nodes of rack r01 fail at once. Budget rack maxUnavailable 1, breaker
 * maxNodes 2 in 300 s: r01n01 and r01n02 are held, r01n03's hold is suppressed as the breaker
 * rack.r01 opens (one alert). The breaker stops automatic actions too: the two held before it
 * opened are not drained while it is open (DisruptionAllowed False/BreakerOpen); a later
 * failure while open is suppressed; after the reset the two held heal one at a time, and a
 * new failure is held and healed. */
static void test_rack_burst_budget_and_breaker(void **state)
{
	struct world *w = world_new();
	enroll(w, 10);
	put_doc(w, "/budgets/rack-1",
		"{\"kind\":\"DisruptionBudget\",\"metadata\":{\"name\":\"rack-1\"},"
		"\"spec\":{\"domain\":\"rack\",\"maxUnavailable\":1}}");
	budget_svc_invalidate(w->budget);
	policy_put(w, "{\"spec\":{\"breaker\":{\"maxNodes\":2,\"windowSeconds\":300}}}");
	w->max_out = 0;
	expect(w, "r01n01", "k-79-01", &XID79, NULL, "hold");
	expect(w, "r01n02", "k-79-02", &XID79, NULL, "hold");
	json_t *res = report(w, "r01n03", json_pack("[o]", kevent(w, "k-79-03", &XID79, NULL)));
	json_t *d = json_array_get(json_object_get(res, "decisions"), 0);
	assert_string_equal(jsonx_str(d, "action"), "suppressed");
	assert_string_equal(jsonx_str(d, "reason"), "xid:79 on GPU 0000:44:00.0: hold suppressed, "
						    "correlated-failure breaker rack.r01 is open");
	json_decref(res);
	assert_int_equal(count_docs(w, "/events/", "reason", "CorrelatedFailureBreakerOpen"), 1);
	char msg[1024];
	event_message(w, "CorrelatedFailureBreakerOpen", msg, sizeof(msg));
	assert_string_equal(msg,
			    "3 nodes of rack r01 had hold-worthy health events within 300 s "
			    "(more than 2): r01n01, r01n02, r01n03; suspect the detector or a "
			    "shared dependency; automatic health holds and actions in rack r01 "
			    "are suppressed until POST /v1/breakers/rack.r01:reset");
	json_t *b = health_breakers(w->h);
	assert_int_equal(json_array_size(json_object_get(b, "items")), 1);
	json_t *b0 = json_array_get(json_object_get(b, "items"), 0);
	assert_string_equal(jsonx_str(b0, "metadata.name"), "rack.r01");
	char *nodes = jsonx_dumps(json_object_get(b0, "nodes"));
	assert_string_equal(nodes, "[\"r01n01\",\"r01n02\",\"r01n03\"]");
	free(nodes);
	json_decref(b);

	struct store_kv bkv = {0};
	json_t *bdoc = NULL;
	assert_int_equal(store_get(w->store, "/breakers/rack.r01", &bkv), 0);
	assert_int_equal(jsonx_parse(bkv.value, strlen(bkv.value), &bdoc, NULL, 0), 0);
	store_kv_release(&bkv);
	char opened[FP_TIME_LEN], want[400];
	fp_time_format(clock_wall_ms(w->clock), opened); /* it opened at r01n03's report */
	assert_string_equal(jsonx_str(bdoc, "openedAt"), opened);
	json_decref(bdoc);
	snprintf(want, sizeof(want),
		 "correlated-failure breaker rack.r01 is open since %s; automatic health actions "
		 "wait for its reset (POST /v1/breakers/rack.r01:reset)",
		 opened);

	/* Held before the breaker opened, r01n01 and r01n02 stay held (not schedulable) but are
	 * not drained while it is open: both wait, saying why, one event each. */
	harness_pump(w->hn);
	for (int i = 0; i < 2; i++) {
		struct node *n = get_node(w, RACK[i]);
		assert_int_equal(n->phase, PHASE_AVAILABLE);
		assert_non_null(node_hold_find(n, "health"));
		assert_int_equal(node_schedulable(n), 0);
		const struct node_condition *c = node_condition_get(n, "DisruptionAllowed");
		assert_non_null(c);
		assert_int_equal(c->status, COND_FALSE);
		assert_string_equal(c->reason, "BreakerOpen");
		assert_string_equal(c->message, want);
		node_free(n);
	}
	struct node *n3 = get_node(w, "r01n03");
	assert_int_equal(n3->phase, PHASE_AVAILABLE);
	assert_int_equal(n3->nholds, 0);
	assert_int_equal(n3->remediation.active, 0);
	const struct node_condition *c = node_condition_get(n3, "HealthActionsSuppressed");
	assert_non_null(c);
	assert_int_equal(c->status, COND_TRUE);
	assert_string_equal(c->reason, "BreakerOpen");
	node_free(n3);

	/* While open, another node's failure is suppressed too, and no second alert. */
	clock_virtual_advance(w->clock, 1 * MIN);
	expect(w, "r01n05", "k-79-05", &XID79, NULL, "suppressed");
	assert_int_equal(count_docs(w, "/events/", "reason", "CorrelatedFailureBreakerOpen"), 1);

	/* An hour later the two still wait: no drain, no rung, no event per retry. */
	harness_idle(w->hn, 60 * MIN);
	for (int i = 0; i < 10; i++)
		assert_string_equal(path_of(w, RACK[i]), "available");
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "drain"), 0);
	assert_int_equal(count_docs(w, "/events/", "reason", "RemediationPausedByBreaker"), 2);
	assert_int_equal(count_docs(w, "/events/", "reason", "DisruptionBudgetExhausted"), 0);
	assert_int_equal(w->max_out, 0);

	/* A human resets the breaker; the next failure is held and healed. */
	char err[256];
	assert_int_equal(health_breaker_reset(w->h, "rack.r01", "operator:alice", "PDU replaced",
					      err, sizeof(err)),
			 0);
	assert_int_equal(count_prefix(w, "/breakers/"), 0);
	/* Closed: the suppressed nodes no longer say it is open (design: True only while open). */
	for (int i = 2; i < 5; i += 2) {
		struct node *n = get_node(w, RACK[i]);
		assert_null(node_condition_get(n, "HealthActionsSuppressed"));
		node_free(n);
	}
	assert_int_equal(
		count_docs(w, "/events/", "message",
			   "correlated-failure breaker rack.r01 closed by operator:alice: "
			   "PDU replaced; left unheld (GPUHealthy False/HoldSuppressed, a "
			   "human acts): r01n03 (xid:79 k-79-03: replay not requested), r01n05 "
			   "(xid:79 k-79-05: replay not requested)"),
		1);
	/* Closed: the two held go on by themselves, one at a time (the budget), each through
	 * the ladder's reboot and validation. */
	static const char *const held[] = {"r01n01", "r01n02", NULL};
	run_until_back(w, held, 240 * MIN);
	assert_int_equal(w->max_out, 1);
	struct track *t1 = track_of(w, "r01n01"), *t2 = track_of(w, "r01n02");
	assert_true(t1->back < t2->left || t2->back < t1->left); /* one at a time */
	assert_string_equal(t1->path.data, "available>draining>repairing>validating>available");
	assert_string_equal(t2->path.data, "available>draining>repairing>validating>available");
	for (int i = 2; i < 10; i++)
		assert_string_equal(path_of(w, RACK[i]), "available");
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 2);
	/* the second waited for the budget once */
	assert_int_equal(count_docs(w, "/events/", "reason", "DisruptionBudgetExhausted"), 1);
	assert_int_equal(count_docs(w, "/events/", "reason", "RemediationPausedByBreaker"), 2);

	expect(w, "r01n04", "k-79-04", &XID79, NULL, "hold");
	static const char *const again[] = {"r01n04", NULL};
	run_until_back(w, again, 60 * MIN);
	assert_string_equal(path_of(w, "r01n04"),
			    "available>draining>repairing>validating>available");
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 3);
	assert_int_equal(w->max_out, 1);
	/* the suppressed ones were never touched */
	assert_int_equal(sim_counter(w, "r01n03", "powerOff"), 0);
	assert_int_equal(sim_counter(w, "r01n05", "powerOff"), 0);
	world_free(w);
}

/* 5. The agent restarts mid-stream and re-sends what it had sent (same ids) with new events;
 * the control plane restarts too. Every event is stored once; xid:94's 2-of-3600 s count sees
 * each event once: the re-sent one does not trip it, the second real one does. */
static void test_agent_restart_resend(void **state)
{
	struct world *w = world_new();
	enroll(w, 1);
	json_t *res = report(w, "r01n01", json_pack("[o]", kevent(w, "k-b1-000001", &XID94, NULL)));
	assert_int_equal(json_integer_value(json_object_get(res, "duplicates")), 0);
	json_t *d = json_array_get(json_object_get(res, "decisions"), 0);
	assert_string_equal(jsonx_str(d, "action"), "count");
	assert_string_equal(jsonx_str(d, "reason"),
			    "xid:94 on GPU 0000:9b:00.0: 1 of 2 within 3600 s");
	json_decref(res);
	clock_virtual_advance(w->clock, 20 * SEC);
	/* restarted: from its cursor it re-sends the first event, plus one new */
	res = report(w, "r01n01",
		     json_pack("[o, o]", kevent(w, "k-b1-000001", &XID94, NULL),
			       kevent(w, "k-b1-000002", &XID13, NULL)));
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")), 1);
	assert_int_equal(json_integer_value(json_object_get(res, "duplicates")), 1);
	d = json_array_get(json_object_get(res, "decisions"), 0);
	assert_string_equal(jsonx_str(d, "event"), "k-b1-000002");
	assert_string_equal(jsonx_str(d, "action"), "none");
	json_decref(res);
	struct node *n = get_node(w, "r01n01");
	assert_null(node_hold_find(n, "health"));
	node_free(n);
	/* the control plane restarts; the agent retries the same report: nothing new */
	restart(w);
	clock_virtual_advance(w->clock, 20 * SEC);
	int64_t rev = store_revision(w->store);
	res = report(w, "r01n01",
		     json_pack("[o, o]", kevent(w, "k-b1-000001", &XID94, NULL),
			       kevent(w, "k-b1-000002", &XID13, NULL)));
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")), 0);
	assert_int_equal(json_integer_value(json_object_get(res, "duplicates")), 2);
	json_decref(res);
	assert_int_equal(store_revision(w->store), rev);
	/* the GPU really fails again: the second xid:94 within the hour holds */
	clock_virtual_advance(w->clock, 20 * SEC);
	res = report(w, "r01n01",
		     json_pack("[o, o, o]", kevent(w, "k-b1-000001", &XID94, NULL),
			       kevent(w, "k-b1-000002", &XID13, NULL),
			       kevent(w, "k-b2-000001", &XID94, NULL)));
	assert_int_equal(json_integer_value(json_object_get(res, "accepted")), 1);
	assert_int_equal(json_integer_value(json_object_get(res, "duplicates")), 2);
	d = json_array_get(json_object_get(res, "decisions"), 0);
	assert_string_equal(jsonx_str(d, "event"), "k-b2-000001");
	assert_string_equal(jsonx_str(d, "action"), "hold");
	assert_string_equal(jsonx_str(d, "reason"), "medium xid:94 on GPU 0000:9b:00.0: 2 of 2 "
						    "within 3600 s; hold, remediation starts at "
						    "gpu_reset");
	json_decref(res);
	assert_int_equal(count_prefix(w, "/healthevents/"), 3);
	static const char *const names[] = {"r01n01", NULL};
	run_until_back(w, names, 60 * MIN);
	assert_int_equal(sim_counter(w, "r01n01", "gpuReset"), 1);
	world_free(w);
}

/* Two xid:94 on GPU 0000:9b:00.0 without a job, a minute apart (2 of 2 within 3600 s):
 * count, then hold; returns the index of the start rung in the ladder. */
static size_t fails_again(struct world *w, const char *id1, const char *id2)
{
	expect(w, "r01n01", id1, &XID94, NULL, "count");
	clock_virtual_advance(w->clock, 1 * MIN);
	expect(w, "r01n01", id2, &XID94, NULL, "hold");
	struct node *n = get_node(w, "r01n01");
	size_t r = n->remediation.rung;
	node_free(n);
	return r;
}

/* 6. Escalation and lemon: the GPU fixed by a GPU reset fails again a day later (within the
 * 7-day recurrence): start at reboot; again: reimage; the fourth time the lemon score (three
 * remediations within 30 days) reaches rmaScore 3: start at rma -> /rmas/ with the evidence,
 * node failed. */
static void test_escalation_and_lemon(void **state)
{
	struct world *w = world_new();
	enroll(w, 1);
	three_jobs_one_gpu(w);
	static const char *const names[] = {"r01n01", NULL};
	harness_idle(w->hn, 1 * DAY);
	assert_int_equal(fails_again(w, "k-c1-000001", "k-c1-000002"), 1); /* reboot */
	run_until_back(w, names, 60 * MIN);
	harness_idle(w->hn, 1 * DAY);
	assert_int_equal(fails_again(w, "k-c2-000001", "k-c2-000002"), 2); /* reimage */
	run_until_back(w, names, 120 * MIN);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->nremediation_history, 3);
	assert_int_equal(n->remediation_history[1].rung, RUNG_REBOOT);
	assert_string_equal(n->remediation_history[1].result, "succeeded");
	assert_int_equal(n->remediation_history[2].rung, RUNG_REIMAGE);
	assert_string_equal(n->remediation_history[2].result, "succeeded");
	/* The count restarts at the validated reimage (the fence): the events before it do not
	 * count, so the new failure is 2 of 2 again, not 6 of 2. */
	char fence[FP_TIME_LEN], want[600];
	fp_time_format(n->remediation_history[2].at, fence);
	node_free(n);
	harness_idle(w->hn, 1 * DAY);
	assert_int_equal(fails_again(w, "k-c3-000001", "k-c3-000002"), 3); /* rma */
	snprintf(want, sizeof(want),
		 "health event r01n01.k-c3-000002: code=xid:94 severity=medium "
		 "rule=xid:94 gpu=0000:9b:00.0 job=- count=2 window=3600s "
		 "threshold=2 distinctJobs=0/3 fence=%s lemon=node:3,gpu:3,recurred "
		 "breaker=closed ladder=gpu_reset > reboot > reimage > rma "
		 "start=rma -> hold",
		 fence);
	assert_int_equal(count_docs(w, "/events/", "message", want), 1);
	run_until_phase(w, "r01n01", PHASE_FAILED, 60 * MIN);
	assert_string_equal(path_of(w, "r01n01"),
			    "available>draining>repairing>validating>available>draining>repairing>"
			    "validating>available>draining>repairing>validating>available>"
			    "draining>repairing>failed");
	n = get_node(w, "r01n01");
	assert_non_null(n->remediation.rma);
	assert_non_null(node_hold_find(n, "health"));
	assert_int_equal(n->nremediation_history, 4);
	assert_int_equal(n->remediation_history[3].rung, RUNG_RMA);
	assert_string_equal(n->remediation_history[3].result, "rma");
	assert_string_equal(node_condition_get(n, "Remediation")->reason, "RMAOpened");
	char key[128];
	snprintf(key, sizeof(key), "/rmas/%s", n->remediation.rma);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, key, &kv), 0);
	json_t *rma = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &rma, NULL, 0), 0);
	store_kv_release(&kv);
	assert_string_equal(jsonx_str(rma, "node"), "r01n01");
	assert_string_equal(jsonx_str(rma, "gpu"), "0000:9b:00.0");
	assert_string_equal(jsonx_str(rma, "code"), "xid:94");
	assert_string_equal(jsonx_str(rma, "state"), "open");
	assert_string_equal(jsonx_str(rma, "reason"),
			    "medium xid:94 on GPU 0000:9b:00.0: 2 of 2 "
			    "within 3600 s; hold, remediation starts at rma");
	json_t *ev = jsonx_path(rma, "evidence.healthEvents");
	assert_int_equal(json_array_size(ev), 1);
	assert_string_equal(jsonx_str(json_array_get(ev, 0), "id"), "k-c3-000002");
	assert_string_equal(
		jsonx_str(json_array_get(ev, 0), "raw"),
		"NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error");
	/* 3 (jobs) + 2 + 2 + 2 xid:94 events of this node */
	assert_int_equal(json_integer_value(jsonx_path(rma, "evidence.counts.xid:94")), 9);
	json_t *hist = jsonx_path(rma, "evidence.remediationHistory");
	assert_int_equal(json_array_size(hist), 3);
	assert_string_equal(jsonx_str(json_array_get(hist, 0), "rung"), "gpu_reset");
	assert_string_equal(jsonx_str(json_array_get(hist, 2), "rung"), "reimage");
	assert_int_equal(json_array_size(jsonx_path(rma, "evidence.inventory.gpus")), 8);
	json_decref(rma);
	node_free(n);
	assert_int_equal(count_prefix(w, "/rmas/"), 1);
	assert_int_equal(count_prefix(w, "/healthevents/"), 9);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xid79_hold_reboot_validate_available),
		cmocka_unit_test(test_one_job_across_ten_nodes),
		cmocka_unit_test(test_same_gpu_three_jobs),
		cmocka_unit_test(test_rack_burst_budget_and_breaker),
		cmocka_unit_test(test_breaker_seen_by_budget_at_once),
		cmocka_unit_test(test_agent_restart_resend),
		cmocka_unit_test(test_escalation_and_lemon),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
