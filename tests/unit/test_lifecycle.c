/* layers: base core store driver engine controller api agent fleet */
/* test_lifecycle.c - the lifecycle controller run single-threaded in virtual time
 * (DESIGN.md principle 6) in the shared test world (support/harness.h: the fleet assembly run
 * stepped over an in-memory store, a virtual clock and the sim machines at real-world
 * latencies), its BMC calls going through a spy on the sim and a scripted fake driver.
 * Scenarios: onboarding to available, determinism for a seed, drain/resume, retire, crash of
 * the controller mid-provisioning with exactly-once side effects, BMC faults, and a lost boot
 * callback that must end in PhaseDeadlineExceeded. */
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
#include "controller/budget.h"
#include "controller/health.h"
#include "controller/health_breaker.h"
#include "controller/lifecycle.h"
#include "controller/lifecycle_int.h"
#include "core/budget.h"
#include "core/codec.h"
#include "driver/bmc_sim.h"
#include "engine/breaker.h"
#include "engine/cache.h"
#include "engine/clock.h"
#include "support/harness.h"

#define MIN_MS (60 * 1000LL)

/* A scripted BMC driver (named "redfish": node documents name only real drivers) for what the sim cannot do: power it cannot read, quirks
 * to learn, refused credentials, timeouts. Counts its calls, and the calls that reached it
 * while the breaker had its BMC open (there must be none). */
struct fake_bmc {
	enum bmc_power power;
	int unknown_power;        /* power_get answers UNKNOWN with reason PowerStateMissing */
	unsigned learn;           /* learned_quirks reported on every call */
	int fail_rc;              /* every call fails with this (0 = answer) */
	int64_t retry_after_once; /* the next call answers FP_EAGAIN with this Retry-After */
	int set_lost_rc; /* power_set acts, then answers this error (the answer was lost) */
	long calls, sets, calls_open, calls_probe;
	int64_t set_at;     /* clock ms of the last power_set, 0 once a power_get followed it */
	int64_t min_settle; /* shortest time from a power_set to the power_get after it; 0 = none */
	struct breaker *breaker; /* to look at while called, or NULL */
	int64_t call_at[64];     /* clock ms of the first 64 calls */
	size_t ncall_at;
};

/* The harness's world (the fleet's lifecycle calls the spy and the fake), and what the test
 * looks at. store, clock and sim are the harness's. */
struct world {
	struct harness *hn;
	struct store *store;
	struct fp_clock *clock;
	struct bmc *sim;
	struct bmc *spy; /* the sim, its mutating calls logged in spy_log (driver name "sim") */
	struct buf spy_log;
	struct bmc *fake;
	struct fake_bmc fk;
	struct breaker *breaker; /* NULL unless a test sets one (hn->breaker) before harness_up */
};

/* ---- the spy (sim with a log) and the fake driver ---- */

static struct world *spy_world(struct bmc *b)
{
	return b->impl;
}

static int spy_power_get(struct bmc *b, const struct bmc_target *t, int64_t dl, enum bmc_power *out,
			 char *err, size_t errlen)
{
	struct bmc *s = spy_world(b)->sim;
	return s->ops->power_get(s, t, dl, out, err, errlen);
}

static int spy_power_set(struct bmc *b, const struct bmc_target *t, int64_t dl,
			 enum bmc_power_action a, char *err, size_t errlen)
{
	struct world *w = spy_world(b);
	buf_printf(&w->spy_log, "%s power %s\n", t->node, bmc_action_name(a));
	return w->sim->ops->power_set(w->sim, t, dl, a, err, errlen);
}

static int spy_boot_get(struct bmc *b, const struct bmc_target *t, int64_t dl, struct bmc_boot *out,
			char *err, size_t errlen)
{
	struct bmc *s = spy_world(b)->sim;
	return s->ops->boot_get(s, t, dl, out, err, errlen);
}

static int spy_boot_set(struct bmc *b, const struct bmc_target *t, int64_t dl,
			const struct bmc_boot *want, char *err, size_t errlen)
{
	struct world *w = spy_world(b);
	buf_printf(&w->spy_log, "%s boot %s %s\n", t->node, bmc_boot_name(want->device),
		   want->persistent ? "persistent" : "next-boot");
	return w->sim->ops->boot_set(w->sim, t, dl, want, err, errlen);
}

static int spy_inventory(struct bmc *b, const struct bmc_target *t, int64_t dl, json_t **out,
			 char *err, size_t errlen)
{
	struct bmc *s = spy_world(b)->sim;
	return s->ops->inventory(s, t, dl, out, err, errlen);
}

static int spy_agent_action(struct bmc *b, const struct bmc_target *t, const char *action,
			    int64_t dl, char *err, size_t errlen)
{
	struct world *w = spy_world(b);
	buf_printf(&w->spy_log, "%s agent %s\n", t->node, action);
	return w->sim->ops->agent_action(w->sim, t, action, dl, err, errlen);
}

static void spy_free(struct bmc *b)
{
	free(b);
}

static const struct bmc_driver_ops spy_ops = {.name = "sim",
					      .caps = BMC_CAP_POWER | BMC_CAP_BOOT_DEVICE |
						      BMC_CAP_INVENTORY,
					      .power_get = spy_power_get,
					      .power_set = spy_power_set,
					      .boot_get = spy_boot_get,
					      .boot_set = spy_boot_set,
					      .inventory = spy_inventory,
					      .agent_action = spy_agent_action,
					      .free = spy_free};

/* Common head of every fake call: counts, learns, fails as scripted. */
static int fake_call(struct bmc *b, const struct bmc_target *t, char *err, size_t errlen)
{
	struct world *w = b->impl;
	struct fake_bmc *f = &w->fk;
	f->calls++;
	if (f->ncall_at < sizeof(f->call_at) / sizeof(f->call_at[0]))
		f->call_at[f->ncall_at++] = clock_now_ms(w->clock);
	if (f->breaker) {
		enum breaker_state st = breaker_state(f->breaker, t->address);
		f->calls_open += st == BREAKER_OPEN;
		f->calls_probe += st == BREAKER_HALF_OPEN;
	}
	if (t->observed)
		t->observed->learned_quirks |= f->learn;
	if (f->retry_after_once && t->observed) {
		t->observed->retry_after_ms = f->retry_after_once;
		f->retry_after_once = 0;
		return fp_errf(FP_EAGAIN, err, errlen, "fake BMC: 503 Service Unavailable");
	}
	if (f->fail_rc)
		return fp_errf(f->fail_rc, err, errlen, "fake BMC: %s", fp_err_msg(f->fail_rc));
	return 0;
}

static int fake_power_get(struct bmc *b, const struct bmc_target *t, int64_t dl,
			  enum bmc_power *out, char *err, size_t errlen)
{
	struct world *w = b->impl;
	int rc = fake_call(b, t, err, errlen);
	if (rc < 0)
		return rc;
	if (w->fk.unknown_power) {
		*out = BMC_POWER_UNKNOWN;
		snprintf(t->observed->power_reason, sizeof(t->observed->power_reason),
			 "PowerStateMissing");
		snprintf(err, errlen, "Redfish ComputerSystem has no PowerState");
		return 0;
	}
	*out = w->fk.power;
	if (w->fk.set_at) {
		int64_t gap = clock_now_ms(w->clock) - w->fk.set_at;
		if (!w->fk.min_settle || gap < w->fk.min_settle)
			w->fk.min_settle = gap;
		w->fk.set_at = 0;
	}
	return 0;
}

static int fake_power_set(struct bmc *b, const struct bmc_target *t, int64_t dl,
			  enum bmc_power_action a, char *err, size_t errlen)
{
	struct world *w = b->impl;
	int rc = fake_call(b, t, err, errlen);
	if (rc < 0)
		return rc;
	w->fk.sets++;
	w->fk.set_at = clock_now_ms(w->clock);
	w->fk.power = a == BMC_ACTION_OFF || a == BMC_ACTION_SOFT ? BMC_POWER_OFF : BMC_POWER_ON;
	if (w->fk.set_lost_rc) {
		if (t->observed)
			t->observed->maybe_acted = 1;
		return fp_errf(w->fk.set_lost_rc, err, errlen, "fake BMC: no answer");
	}
	return 0;
}

static int fake_boot_get(struct bmc *b, const struct bmc_target *t, int64_t dl,
			 struct bmc_boot *out, char *err, size_t errlen)
{
	int rc = fake_call(b, t, err, errlen);
	if (rc < 0)
		return rc;
	out->device = BMC_BOOT_DISK;
	out->persistent = 1;
	return 0;
}

static int fake_boot_set(struct bmc *b, const struct bmc_target *t, int64_t dl,
			 const struct bmc_boot *want, char *err, size_t errlen)
{
	return fake_call(b, t, err, errlen);
}

static int fake_inventory(struct bmc *b, const struct bmc_target *t, int64_t dl, json_t **out,
			  char *err, size_t errlen)
{
	int rc = fake_call(b, t, err, errlen);
	if (rc < 0)
		return rc;
	*out = json_pack("{s:[{s:s},{s:s}]}", "gpus", "model", "H100", "model", "H100");
	return 0;
}

static const struct bmc_driver_ops fake_ops = {.name = "redfish",
					       .caps = BMC_CAP_POWER | BMC_CAP_BOOT_DEVICE |
						       BMC_CAP_INVENTORY,
					       .power_get = fake_power_get,
					       .power_set = fake_power_set,
					       .boot_get = fake_boot_get,
					       .boot_set = fake_boot_set,
					       .inventory = fake_inventory,
					       .free = spy_free};

/* A world whose sim runs at `speed` (0: every boot, GPU reset and burn-in happens at once),
 * up. */
static struct world *world_new_speed(double speed, uint64_t fault_seed, double fault_rate,
				     unsigned fault_kinds)
{
	struct world *w = xcalloc(1, sizeof(*w));
	struct harness_config hc = {.sim_speed = speed,
				    .fault_seed = fault_seed,
				    .fault_rate = fault_rate,
				    .fault_kinds = fault_kinds};
	w->hn = harness_new(&hc);
	w->store = w->hn->store;
	w->clock = w->hn->clock;
	w->sim = w->hn->sim;
	buf_init(&w->spy_log, 0);
	w->spy = xcalloc(1, sizeof(*w->spy));
	*w->spy = (struct bmc){.ops = &spy_ops, .clock = w->clock, .impl = w};
	w->fake = xcalloc(1, sizeof(*w->fake));
	*w->fake = (struct bmc){.ops = &fake_ops, .clock = w->clock, .impl = w};
	w->fk.power = BMC_POWER_OFF;
	w->hn->drivers[0] = w->spy;
	w->hn->drivers[1] = w->fake;
	w->hn->ndrivers = 2;
	harness_up(w->hn);
	return w;
}

static struct world *world_new(uint64_t fault_seed, double fault_rate, unsigned fault_kinds)
{
	return world_new_speed(1, fault_seed, fault_rate, fault_kinds);
}

static void world_free(struct world *w)
{
	harness_free(w->hn); /* the fleet first: it borrows the drivers and the breaker */
	bmc_free(w->spy);
	bmc_free(w->fake);
	buf_release(&w->spy_log);
	breaker_free(w->breaker);
	free(w);
}

static void enroll(struct world *w, int n)
{
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "r01n%02d", i + 1);
		harness_put_node(w->hn, name, "site-a", "r01", "sim", PHASE_ENROLLED);
	}
}

static struct node *get_node(struct world *w, const char *name)
{
	return harness_node(w->hn, name);
}

static int count_phase(struct world *w, int n, enum node_phase p)
{
	int c = 0;
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "r01n%02d", i + 1);
		c += harness_phase_is(w->hn, name, p);
	}
	return c;
}

static void dump(struct world *w, int n)
{
	fprintf(stderr, "virtual now=%lld ms\n", (long long)clock_now_ms(w->clock));
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0;
	store_list(w->store, "/nodes/", NULL, 0, &items, &k, NULL, &more);
	for (size_t i = 0; i < k; i++)
		fprintf(stderr, "%s\n", items[i].value);
	store_kv_array_free(items, k);
	store_list(w->store, "/operations/", NULL, 0, &items, &k, NULL, &more);
	for (size_t i = 0; i < k; i++)
		if (!strstr(items[i].value, "succeeded"))
			fprintf(stderr, "%s\n", items[i].value);
	store_kv_array_free(items, k);
}

struct phase_goal {
	struct world *w;
	int n;
	enum node_phase p;
};

static int all_in_phase(struct harness *h, void *arg)
{
	const struct phase_goal *g = arg;
	return count_phase(g->w, g->n, g->p) == g->n;
}

/* Advances virtual time timer by timer until `n` nodes are in phase p or max_ms of virtual time
 * passed. Returns the virtual ms it took, or -1. */
static int64_t run_until_phase(struct world *w, int n, enum node_phase p, int64_t max_ms)
{
	struct phase_goal g = {.w = w, .n = n, .p = p};
	int64_t took = harness_run_until(w->hn, all_in_phase, &g, max_ms);
	if (took < 0 && getenv("FP_TEST_DEBUG"))
		dump(w, n);
	return took;
}

static json_t *sim_state(struct world *w, const char *node)
{
	return bmc_sim_state(w->sim, node);
}

static long counter(struct world *w, const char *node, const char *which)
{
	json_t *s = sim_state(w, node);
	long v = (long)json_integer_value(
		jsonx_path(s, "counters") ? json_object_get(jsonx_path(s, "counters"), which)
					  : NULL);
	json_decref(s);
	return v;
}

static size_t count_prefix(struct world *w, const char *prefix)
{
	size_t n = 0;
	assert_int_equal(store_count(w->store, prefix, &n), 0);
	return n;
}

static void test_onboarding_reaches_available(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 8);
	int64_t took = run_until_phase(w, 8, PHASE_AVAILABLE, 60 * MIN_MS);
	/* PXE boot to agent takes 4-6 min and burn-in 2-3 min on real-world sim latencies. */
	assert_true(took >= 6 * MIN_MS);
	assert_true(took <= 20 * MIN_MS);
	for (int i = 1; i <= 8; i++) {
		char name[32];
		snprintf(name, sizeof(name), "r01n%02d", i);
		assert_int_equal(counter(w, name, "powerOn"), 1);
		assert_int_equal(counter(w, name, "powerOff"), 0);
		assert_int_equal(counter(w, name, "bootSet"), 2);
		struct node *n = get_node(w, name);
		assert_null(n->operation);
		assert_int_equal(n->nholds, 0);
		assert_non_null(n->inventory);
		assert_int_equal(json_array_size(json_object_get(n->inventory, "gpus")), 8);
		const struct node_condition *c = node_condition_get(n, "PoweredOn");
		assert_non_null(c);
		assert_int_equal(c->status, COND_TRUE);
		node_free(n);
	}
	/* inspect + provision + validate per node */
	assert_int_equal(count_prefix(w, "/operations/"), 24);
	world_free(w);
}

/* Issue 17 item 2: one node from enrolled to available, on the sim's real-world latencies, costs
 * 15 store writes (each a revision): the phase changes with their operations, the intents of
 * the power step, the waits' deadlines (written with the observations of the same task), the
 * agent's boot and validation callbacks, and the simulated hardware's own state. Before the
 * folding (41971b5) it was 20: the status written before each operation's end, an intent before
 * each idempotent boot-device set, a record of each read-only step's end and each wait's
 * deadline before its first look took writes of their own. */
static void test_onboarding_store_writes(void **state)
{
	(void)state;
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	int64_t before = store_revision(w->store);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	int64_t writes = store_revision(w->store) - before;
	print_message("store writes from enrolled to available: %lld\n", (long long)writes);
	assert_int_equal(writes, 15);
	world_free(w);
}

/* The controller reads its own writes from its notes and the informer's copies, not the store:
 * onboarding one node to available reads the store 4 times - once by the sim (its machine's
 * saved state, when first touched) and 3 times by run_until_phase's own checks; none by the
 * controller (before the notes, at 5bc1ffb: 15). */
static void test_onboarding_store_reads(void **state)
{
	(void)state;
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	uint64_t before = store_get_count(w->store);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	uint64_t reads = store_get_count(w->store) - before;
	print_message("store reads from enrolled to available: %llu\n", (unsigned long long)reads);
	assert_int_equal(reads, 4);
	world_free(w);
}

/* A read-your-writes note the informer has caught up with is dropped when a later write of the
 * same node is noted: the note is freed as a node (under ASan a plain free of it leaked every
 * string it held; make san runs this suite) and the node is read from the cache again. */
static void test_ryw_note_dropped_after_cache_caught_up(void **state)
{
	(void)state;
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	struct cache *c = harness_cache(w->hn);
	struct lifecycle *lc = fleet_lifecycle(w->hn->fleet);
	assert_true(cache_sync_now(c) >= 0);
	struct node *n = cache_node_get(c, "r01n01");
	assert_non_null(n);
	int64_t real_rv = n->resource_version;
	/* a note newer than the cache, told apart by its rack */
	free(n->rack);
	n->rack = xstrdup("noted");
	n->resource_version = cache_revision(c) + 1;
	lifecycle_note_node(lc, n);
	struct node *cur = NULL;
	assert_int_equal(lifecycle_node_current(lc, "r01n01", &cur), 0);
	assert_string_equal(cur->rack, "noted");
	node_free(cur);
	/* the cache moves past the note; then a write at or below its revision is noted */
	int64_t rev = 0;
	assert_int_equal(store_put(w->store, "/test/a", "{}", STORE_ANY, &rev), 0);
	assert_int_equal(store_put(w->store, "/test/b", "{}", STORE_ANY, &rev), 0);
	assert_true(cache_sync_now(c) >= 0);
	assert_true(cache_revision(c) >= n->resource_version + 1);
	n->resource_version++;
	lifecycle_note_node(lc, n);
	assert_int_equal(lifecycle_node_current(lc, "r01n01", &cur), 0);
	assert_string_equal(cur->rack, "r01");
	assert_int_equal(cur->resource_version, real_rv);
	node_free(cur);
	node_free(n);
	world_free(w);
}

/* Runs a faulty fleet to available and returns its whole audit history (every event's time,
 * object and reason, in order) as one string the caller frees. */
static char *run_seeded(int64_t *rev)
{
	struct world *w = world_new(7, 0.1, 0);
	enroll(w, 6);
	assert_true(run_until_phase(w, 6, PHASE_AVAILABLE, 6 * 60 * MIN_MS) > 0);
	*rev = store_revision(w->store);
	struct store_kv *items = NULL;
	size_t n = 0;
	int more = 0;
	struct buf b;
	buf_init(&b, 0);
	assert_int_equal(store_list(w->store, "/events/", NULL, 0, &items, &n, NULL, &more), 0);
	for (size_t i = 0; i < n; i++) {
		json_t *ev = NULL;
		assert_int_equal(jsonx_parse(items[i].value, strlen(items[i].value), &ev, NULL, 0),
				 0);
		buf_printf(&b, "%s %s %s\n", jsonx_str(ev, "time"), jsonx_str(ev, "object"),
			   jsonx_str(ev, "reason"));
		json_decref(ev);
	}
	store_kv_array_free(items, n);
	world_free(w);
	return buf_detach(&b, NULL);
}

static void test_deterministic_for_a_seed(void **state)
{
	/* Same seed, same inputs: the same history, write for write, event for event. */
	int64_t rev_a = 0, rev_b = 0;
	char *a = run_seeded(&rev_a), *b = run_seeded(&rev_b);
	assert_true(rev_a > 0);
	assert_int_equal(rev_a, rev_b);
	assert_true(strlen(a) > 0);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

static int add_hold(struct world *w, const char *name, const char *owner)
{
	struct node *n = get_node(w, name);
	node_hold_add(n, owner, "test maintenance", clock_wall_ms(w->clock), 0);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc), key[64];
	snprintf(key, sizeof(key), "/nodes/%s", name);
	int rc = store_put(w->store, key, val, n->resource_version, NULL);
	free(val);
	json_decref(doc);
	node_free(n);
	return rc;
}

static int release_hold(struct world *w, const char *name, const char *owner)
{
	struct node *n = get_node(w, name);
	int rc = node_hold_release(n, owner);
	if (rc == 0) {
		json_t *doc = node_to_json(n, NODE_JSON_STORE);
		char *val = jsonx_dumps(doc), key[64];
		snprintf(key, sizeof(key), "/nodes/%s", name);
		rc = store_put(w->store, key, val, n->resource_version, NULL);
		free(val);
		json_decref(doc);
	}
	node_free(n);
	return rc;
}

static void test_drain_resume(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	assert_int_equal(add_hold(w, "r01n01", "operator:alice"), 0);
	assert_true(run_until_phase(w, 1, PHASE_MAINTENANCE, 10 * MIN_MS) >= 0);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->phase, PHASE_MAINTENANCE);
	assert_int_equal(n->nholds, 1);
	assert_string_equal(n->holds[0].owner, "operator:alice");
	node_free(n);
	/* Still held: stays in maintenance. */
	harness_pump(w->hn);
	assert_int_equal(count_phase(w, 1, PHASE_MAINTENANCE), 1);
	assert_int_equal(release_hold(w, "r01n01", "operator:alice"), 0);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 10 * MIN_MS) >= 0);
	/* Resumed with no change: no new power action happened. */
	assert_int_equal(counter(w, "r01n01", "powerOn"), 1);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 0);
	world_free(w);
}

static void test_retire(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	struct node *n = get_node(w, "r01n01");
	n->retire = 1;
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc);
	assert_int_equal(store_put(w->store, "/nodes/r01n01", val, n->resource_version, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
	assert_true(run_until_phase(w, 1, PHASE_RETIRED, 30 * MIN_MS) >= 0);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 1);
	json_t *s = sim_state(w, "r01n01");
	assert_string_equal(json_string_value(json_object_get(s, "power")), "off");
	json_decref(s);
	world_free(w);
}

/* spec.adopt (`fleetplane slurm import`): a running node is inspected and then available, with
 * no PXE boot, no power action and no reimage; its neighbour without adopt still provisions. */
static void test_adopted_node_skips_provisioning(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 2);
	struct node *n = get_node(w, "r01n01");
	n->adopt = 1;
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc);
	assert_int_equal(store_put(w->store, "/nodes/r01n01", val, n->resource_version, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
	assert_true(run_until_phase(w, 2, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	assert_int_equal(counter(w, "r01n01", "powerOn"), 0);
	assert_int_equal(counter(w, "r01n01", "powerCycle"), 0);
	assert_int_equal(counter(w, "r01n01", "bootSet"), 0);
	assert_int_equal(counter(w, "r01n02", "powerOn"), 1);
	assert_int_equal(counter(w, "r01n02", "bootSet"), 2);
	n = get_node(w, "r01n01");
	assert_int_equal(n->adopt, 1);
	assert_null(n->operation);
	assert_non_null(n->inventory); /* inspect ran */
	node_free(n);
	n = get_node(w, "r01n02");
	assert_int_equal(n->adopt, 0);
	node_free(n);
	/* inspect for the adopted node; inspect, provision and validate for the other */
	assert_int_equal(count_prefix(w, "/operations/"), 4);
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0, adopted = 0;
	assert_int_equal(store_list(w->store, "/events/", NULL, 0, &items, &k, NULL, &more), 0);
	for (size_t i = 0; i < k; i++)
		if (strstr(items[i].value, "adopted: running node taken over without provisioning"))
			adopted += strstr(items[i].value, "r01n01") != NULL;
	store_kv_array_free(items, k);
	assert_int_equal(adopted, 1);
	world_free(w);
}

static void test_crash_mid_provisioning_exactly_once(void **state)
{
	/* Crash the controller at many different moments of onboarding; after each restart the
	 * nodes converge and every machine was powered on exactly once. */
	for (int crash_after = 1; crash_after <= 40; crash_after += 3) {
		struct world *w = world_new(0, 0, 0);
		enroll(w, 4);
		int steps = 0;
		while (steps < crash_after) {
			harness_pump(w->hn);
			int64_t at = 0;
			if (clock_virtual_next_timer(w->clock, &at) < 0)
				break;
			/* the clock itself, not harness_advance: the crash comes after the
			 * timer fired, before what it queued ran */
			int64_t now = clock_now_ms(w->clock);
			clock_virtual_advance(w->clock, at > now ? at - now : 0);
			steps++;
		}
		harness_down(w->hn);
		clock_virtual_advance(w->clock, 30 * 1000); /* down for 30 s */
		harness_up(w->hn);
		assert_true(run_until_phase(w, 4, PHASE_AVAILABLE, 120 * MIN_MS) >= 0);
		for (int i = 1; i <= 4; i++) {
			char name[32];
			snprintf(name, sizeof(name), "r01n%02d", i);
			assert_int_equal(counter(w, name, "powerOn"), 1);
			assert_int_equal(counter(w, name, "powerCycle"), 0);
			assert_int_equal(counter(w, name, "powerOff"), 0);
		}
		world_free(w);
	}
}

static void test_bmc_faults_still_converge(void **state)
{
	/* BMC timeouts and wrong power reads on 30 % of opportunities: retries get every node to
	 * available. */
	struct world *w = world_new(99, 0.3, BMC_SIM_FAULT_TIMEOUT | BMC_SIM_FAULT_WRONG_POWER);
	enroll(w, 6);
	assert_true(run_until_phase(w, 6, PHASE_AVAILABLE, 6 * 60 * MIN_MS) > 0);
	world_free(w);
}

static void test_lost_callback_deadline(void **state)
{
	/* Every boot callback is lost: the node must not wait silently. Past the provisioning
	 * deadline (45 min) it gets PhaseDeadlineExceeded naming the stuck step, and an event. */
	struct world *w = world_new(5, 1.0, BMC_SIM_FAULT_LOST_CALLBACK);
	enroll(w, 1);
	assert_int_equal(run_until_phase(w, 1, PHASE_AVAILABLE, 50 * MIN_MS), -1);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->phase, PHASE_PROVISIONING);
	const struct node_condition *c = node_condition_get(n, "PhaseDeadlineExceeded");
	assert_non_null(c);
	assert_int_equal(c->status, COND_TRUE);
	assert_non_null(strstr(c->message, "provisioning for"));
	assert_non_null(strstr(c->message, "stuck at step wait_boot_callback"));
	if (getenv("FP_TEST_DEBUG"))
		fprintf(stderr, "condition: %s\n", c->message);
	node_free(n);
	/* The event exists. */
	struct store_kv *items = NULL;
	size_t nitems = 0;
	int more = 0, found = 0;
	assert_int_equal(store_list(w->store, "/events/", NULL, 0, &items, &nitems, NULL, &more),
			 0);
	for (size_t i = 0; i < nitems; i++)
		found += strstr(items[i].value, "\"reason\":\"PhaseDeadlineExceeded\"") != NULL;
	store_kv_array_free(items, nitems);
	assert_int_equal(found, 1);
	world_free(w);
}

static int has_deadline_exceeded(struct world *w, const char *name)
{
	struct node *n = get_node(w, name);
	const struct node_condition *c = node_condition_get(n, "PhaseDeadlineExceeded");
	int yes = c && c->status == COND_TRUE;
	node_free(n);
	return yes;
}

/* Runs the world until its monotonic clock reads at least `mono` ms (the node never becomes
 * available here: run_until_phase stops at the last timer it fires, so loop). */
static void run_to(struct world *w, int64_t mono)
{
	while (clock_now_ms(w->clock) < mono) {
		int64_t before = clock_now_ms(w->clock);
		assert_int_equal(run_until_phase(w, 1, PHASE_AVAILABLE, mono - before), -1);
		if (clock_now_ms(w->clock) == before)
			clock_virtual_advance(w->clock, mono - before);
	}
}

static void test_wall_clock_steps_leave_deadlines(void **state)
{
	/* Deadlines run on the monotonic clock (issue 16): the same stuck node as above, with the
	 * wall clock stepped 8 h forward 10 min into provisioning and 8 h back 10 min later, still
	 * gets PhaseDeadlineExceeded 45 min after provisioning began, and not a minute before. */
	const int64_t H = 60 * MIN_MS;
	struct world *w = world_new(5, 1.0, BMC_SIM_FAULT_LOST_CALLBACK);
	enroll(w, 1);
	assert_int_equal(run_until_phase(w, 1, PHASE_PROVISIONING, 10 * MIN_MS) >= 0, 1);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->phase, PHASE_PROVISIONING);
	/* the monotonic instant provisioning began */
	int64_t began = clock_now_ms(w->clock) - (clock_wall_ms(w->clock) - n->phase_since);
	node_free(n);
	run_to(w, began + 10 * MIN_MS);
	clock_virtual_step_wall(w->clock, 8 * H);
	run_to(w, began + 20 * MIN_MS);
	assert_false(has_deadline_exceeded(w, "r01n01"));
	clock_virtual_step_wall(w->clock, -8 * H);
	run_to(w, began + 44 * MIN_MS);
	assert_false(has_deadline_exceeded(w, "r01n01"));
	run_to(w, began + 46 * MIN_MS);
	assert_true(has_deadline_exceeded(w, "r01n01"));
	n = get_node(w, "r01n01");
	assert_int_equal(n->phase, PHASE_PROVISIONING);
	const struct node_condition *c = node_condition_get(n, "PhaseDeadlineExceeded");
	/* the time in the phase it names is monotonic too: 45 min, not 8 h 45 min */
	assert_non_null(strstr(c->message, "provisioning for 270"));
	node_free(n);
	world_free(w);
}

/* ---- power operations, agent truth, driver observations, breaker ---- */

static void put_node(struct world *w, struct node *n)
{
	char key[64];
	snprintf(key, sizeof(key), "/nodes/%s", n->name);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc);
	assert_int_equal(store_put(w->store, key, val,
				   n->resource_version ? n->resource_version : STORE_ABSENT, NULL),
			 0);
	free(val);
	json_decref(doc);
}

static void enroll_fake(struct world *w, const char *name)
{
	struct node *nd = node_new();
	nd->name = xstrdup(name);
	nd->uid = xstrdup(name);
	nd->bmc.driver = xstrdup("redfish");
	nd->bmc.address = xasprintf("https://bmc-%s.test", name);
	nd->gpu_count = 2;
	nd->phase = PHASE_ENROLLED;
	nd->phase_since = nd->created_at = clock_wall_ms(w->clock);
	put_node(w, nd);
	node_free(nd);
}

/* What POST /v1/nodes/{name}:power writes (api_nodes.c): the operation and, in the same
 * transaction, the node's operation or its queue. Returns the operation id (caller frees). */
/* Writes n (CAS on its resourceVersion) and the new operation op in one transaction, as the
 * API does; frees both and returns the operation's id (caller frees). */
static char *commit_node_and_op(struct world *w, struct node *n, struct operation *op)
{
	char nkey[64], okey[128];
	snprintf(nkey, sizeof(nkey), "/nodes/%s", n->name);
	snprintf(okey, sizeof(okey), "/operations/%s", op->id);
	json_t *nd = node_to_json(n, NODE_JSON_STORE), *od = operation_to_json(op, 0);
	char *nv = jsonx_dumps(nd), *ov = jsonx_dumps(od);
	struct store_op ops[2] = {{STORE_OP_PUT, nkey, nv, n->resource_version},
				  {STORE_OP_PUT, okey, ov, STORE_ABSENT}};
	assert_int_equal(store_txn(w->store, ops, 2, NULL, NULL), 0);
	free(nv);
	free(ov);
	json_decref(nd);
	json_decref(od);
	char *id = xstrdup(op->id);
	operation_free(op);
	node_free(n);
	return id;
}

static char *request_power(struct world *w, const char *name, const char *action)
{
	struct node *n = get_node(w, name);
	struct operation *op = operation_new();
	static unsigned seq;
	op->id = xasprintf("power-%013lld-%08x", (long long)clock_wall_ms(w->clock), ++seq);
	op->node = xstrdup(name);
	op->kind = xstrdup("power");
	op->steps[op->nsteps++] = xasprintf("power_%s", action);
	op->actor = xstrdup("operator:alice");
	op->reason = xstrdup("test");
	op->params = json_pack("{s:s}", "action", action);
	op->created_at = op->updated_at = clock_wall_ms(w->clock);
	if (n->operation) {
		n->queued_ops = realloc(n->queued_ops, (n->nqueued + 1) * sizeof(char *));
		n->queued_ops[n->nqueued++] = xstrdup(op->id);
	} else {
		n->operation = xstrdup(op->id);
	}
	return commit_node_and_op(w, n, op);
}

static struct operation *get_op(struct world *w, const char *id)
{
	char key[128], err[256];
	struct store_kv kv = {0};
	snprintf(key, sizeof(key), "/operations/%s", id);
	assert_int_equal(store_get(w->store, key, &kv), 0);
	json_t *doc = NULL;
	struct operation *op = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &doc, err, sizeof(err)), 0);
	assert_int_equal(operation_from_json(doc, kv.mod_revision, &op, err, sizeof(err)), 0);
	json_decref(doc);
	store_kv_release(&kv);
	return op;
}

/* The ids of the node's operations of a kind, oldest first, as "id id ..." (caller frees). */
static int count_ops(struct world *w, const char *node, const char *kind)
{
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0, c = 0;
	assert_int_equal(store_list(w->store, "/operations/", NULL, 0, &items, &k, NULL, &more), 0);
	for (size_t i = 0; i < k; i++) {
		json_t *d = json_loads(items[i].value, 0, NULL);
		c += !strcmp(jsonx_str(d, "spec.node"), node) &&
		     !strcmp(jsonx_str(d, "spec.kind"), kind);
		json_decref(d);
	}
	store_kv_array_free(items, k);
	return c;
}

static int count_events(struct world *w, const char *node, const char *reason)
{
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0, c = 0;
	char obj[80];
	snprintf(obj, sizeof(obj), "node/%s", node);
	assert_int_equal(store_list(w->store, "/events/", NULL, 0, &items, &k, NULL, &more), 0);
	for (size_t i = 0; i < k; i++) {
		json_t *d = json_loads(items[i].value, 0, NULL);
		c += !strcmp(jsonx_str(d, "object"), obj) &&
		     !strcmp(jsonx_str(d, "reason"), reason);
		json_decref(d);
	}
	store_kv_array_free(items, k);
	return c;
}

typedef int (*world_pred_fn)(struct world *w, const void *arg);

struct world_goal {
	struct world *w;
	world_pred_fn pred;
	const void *arg;
};

static int world_goal_met(struct harness *h, void *arg)
{
	const struct world_goal *g = arg;
	return g->pred(g->w, g->arg);
}

/* Advances virtual time timer by timer until pred holds; returns 0, or -1 when nothing is
 * left to happen or max_ms of virtual time passed. */
static int run_until(struct world *w, world_pred_fn pred, const void *arg, int64_t max_ms)
{
	struct world_goal g = {.w = w, .pred = pred, .arg = arg};
	return harness_run_until(w->hn, world_goal_met, &g, max_ms) < 0 ? -1 : 0;
}

static int op_ended(struct world *w, const void *id)
{
	struct operation *op = get_op(w, id);
	int done = op_state_terminal(op->state);
	operation_free(op);
	return done;
}

static enum cond_status cond_of(struct world *w, const char *name, const char *type, char *reason,
				size_t rlen)
{
	struct node *n = get_node(w, name);
	const struct node_condition *c = node_condition_get(n, type);
	enum cond_status st = c ? c->status : (enum cond_status) - 1;
	if (reason)
		snprintf(reason, rlen, "%s", c && c->reason ? c->reason : "");
	node_free(n);
	return st;
}

static void test_provision_order_sim(void **state)
{
	/* PXE for the next boot, then power (the machine was off: on), the boot callback, then
	 * disk for every boot - and nothing else mutates the machine. */
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	assert_string_equal(w->spy_log.data, "r01n01 boot pxe next-boot\n"
					     "r01n01 power on\n"
					     "r01n01 boot disk persistent\n");
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0;
	assert_int_equal(store_list(w->store, "/operations/provision-", NULL, 0, &items, &k, NULL,
				    &more),
			 0);
	assert_int_equal(k, 1);
	json_t *d = json_loads(items[0].value, 0, NULL);
	assert_string_equal(jsonx_str(d, "spec.params.powerChoice"), "on");
	assert_string_equal(json_string_value(json_array_get(jsonx_path(d, "spec.steps"), 1)),
			    "power_on_or_cycle");
	json_decref(d);
	store_kv_array_free(items, k);
	world_free(w);
}

/* drain, power off, resume: the machine is off, so the node stays in maintenance instead of
 * becoming schedulable; powering it on brings it back. */
static void test_resume_waits_for_power(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	assert_int_equal(add_hold(w, "r01n01", "operator:alice"), 0);
	assert_true(run_until_phase(w, 1, PHASE_MAINTENANCE, 10 * MIN_MS) >= 0);
	char *off = request_power(w, "r01n01", "off");
	assert_int_equal(run_until(w, op_ended, off, 30 * MIN_MS), 0);
	assert_int_equal(cond_of(w, "r01n01", "PoweredOn", NULL, 0), COND_FALSE);
	assert_int_equal(release_hold(w, "r01n01", "operator:alice"), 0);
	assert_int_equal(run_until_phase(w, 1, PHASE_AVAILABLE, 30 * MIN_MS), -1);
	assert_int_equal(count_phase(w, 1, PHASE_MAINTENANCE), 1);
	char *on = request_power(w, "r01n01", "on");
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 30 * MIN_MS) >= 0);
	assert_int_equal(cond_of(w, "r01n01", "PoweredOn", NULL, 0), COND_TRUE);
	free(off);
	free(on);
	world_free(w);
}

static void test_power_off_then_on(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	char *off = request_power(w, "r01n01", "off");
	assert_int_equal(run_until(w, op_ended, off, 30 * MIN_MS), 0);
	struct operation *op = get_op(w, off);
	assert_int_equal(op->state, OP_SUCCEEDED);
	operation_free(op);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 1);
	assert_int_equal(cond_of(w, "r01n01", "PoweredOn", NULL, 0), COND_FALSE);
	struct node *n = get_node(w, "r01n01");
	assert_null(n->operation);
	assert_int_equal(n->phase, PHASE_AVAILABLE);
	node_free(n);
	char *on = request_power(w, "r01n01", "on");
	assert_int_equal(run_until(w, op_ended, on, 30 * MIN_MS), 0);
	op = get_op(w, on);
	assert_int_equal(op->state, OP_SUCCEEDED);
	operation_free(op);
	assert_int_equal(counter(w, "r01n01", "powerOn"), 2);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 1);
	assert_int_equal(cond_of(w, "r01n01", "PoweredOn", NULL, 0), COND_TRUE);
	assert_int_equal(count_events(w, "r01n01", "PowerSucceeded"), 2);
	/* cycle: act, then poll until the BMC reads on */
	char *cyc = request_power(w, "r01n01", "cycle");
	assert_int_equal(run_until(w, op_ended, cyc, 30 * MIN_MS), 0);
	op = get_op(w, cyc);
	assert_int_equal(op->state, OP_SUCCEEDED);
	assert_int_equal(json_integer_value(json_object_get(op->params, "acted")), 1);
	operation_free(op);
	assert_int_equal(counter(w, "r01n01", "powerCycle"), 1);
	assert_int_equal(cond_of(w, "r01n01", "PoweredOn", NULL, 0), COND_TRUE);
	free(off);
	free(on);
	free(cyc);
	world_free(w);
}

static int phase_is(struct world *w, const void *p)
{
	struct node *n = get_node(w, "r01n01");
	int ok = n->phase == *(const enum node_phase *)p;
	node_free(n);
	return ok;
}

static void test_power_queued_behind_provision(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, phase_is, &prov, 30 * MIN_MS), 0);
	struct node *n = get_node(w, "r01n01");
	assert_non_null(n->operation);
	assert_memory_equal(n->operation, "provision-", 10);
	char *prov_id = xstrdup(n->operation);
	node_free(n);
	char *st = request_power(w, "r01n01", "status");
	n = get_node(w, "r01n01");
	assert_string_equal(n->operation, prov_id);
	assert_int_equal(n->nqueued, 1);
	assert_string_equal(n->queued_ops[0], st);
	node_free(n);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	/* the power operation ran after provisioning ended and before validation began */
	struct operation *p = get_op(w, prov_id), *s = get_op(w, st);
	assert_int_equal(p->state, OP_SUCCEEDED);
	assert_int_equal(s->state, OP_SUCCEEDED);
	assert_true(s->started_at >= p->finished_at);
	n = get_node(w, "r01n01");
	assert_int_equal(n->nqueued, 0);
	assert_null(n->operation);
	node_free(n);
	assert_int_equal(count_ops(w, "r01n01", "validate"), 1);
	assert_int_equal(count_ops(w, "r01n01", "provision"), 1);
	assert_int_equal(count_events(w, "r01n01", "PowerSucceeded"), 1);
	assert_int_equal(cond_of(w, "r01n01", "PoweredOn", NULL, 0), COND_TRUE);
	/* the machine was powered on once, by provisioning */
	assert_int_equal(counter(w, "r01n01", "powerOn"), 1);
	operation_free(p);
	operation_free(s);
	free(prov_id);
	free(st);
	world_free(w);
}

/* A power operation cancelled while queued behind provisioning (POST /v1/operations/{id}:cancel)
 * never runs: even with its id left in the queue (the harsher case; the API takes it out), the
 * controller pops it, sees it ended and moves on. */
static void test_cancelled_queued_power_never_runs(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, phase_is, &prov, 30 * MIN_MS), 0);
	char *cy = request_power(w, "r01n01", "on");
	struct operation *c = get_op(w, cy);
	c->state = OP_CANCELLED;
	c->finished_at = clock_wall_ms(w->clock);
	c->last_error = xstrdup("cancelled by operator:alice: test");
	char key[128];
	snprintf(key, sizeof(key), "/operations/%s", cy);
	json_t *od = operation_to_json(c, 0);
	char *ov = jsonx_dumps(od);
	assert_int_equal(store_put(w->store, key, ov, c->resource_version, NULL), 0);
	free(ov);
	json_decref(od);
	operation_free(c);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	c = get_op(w, cy);
	assert_int_equal(c->state, OP_CANCELLED);
	assert_int_equal(c->started_at, 0);
	assert_int_equal(c->attempt, 0);
	assert_int_equal(c->step, 0);
	assert_string_equal(c->last_error, "cancelled by operator:alice: test");
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->nqueued, 0);
	assert_null(n->operation);
	node_free(n);
	assert_int_equal(count_events(w, "r01n01", "PowerSucceeded"), 0);
	/* the machine was powered on once, by provisioning, never by the cancelled "on" */
	assert_int_equal(counter(w, "r01n01", "powerOn"), 1);
	operation_free(c);
	free(cy);
	world_free(w);
}

static int f1_phase_is(struct world *w, const void *p)
{
	struct node *n = get_node(w, "f1");
	int ok = n->phase == *(const enum node_phase *)p;
	node_free(n);
	return ok;
}

static int f1_has_event(struct world *w, const void *reason)
{
	return count_events(w, "f1", reason) > 0;
}

static int f1_has_power_cond(struct world *w, const void *arg)
{
	return cond_of(w, "f1", "PoweredOn", NULL, 0) != (enum cond_status) - 1;
}

/* The node's operation in flight is at step `step` (arg). */
static int f1_at_step(struct world *w, const void *step)
{
	struct node *n = get_node(w, "f1");
	int ok = 0;
	if (n->operation) {
		struct operation *op = get_op(w, n->operation);
		ok = op->step < op->nsteps && strcmp(op->steps[op->step], step) == 0;
		operation_free(op);
	}
	node_free(n);
	return ok;
}

/* Enrolls "f1" on the fake BMC with spec.provision (image os1): the network-boot plan. */
static void enroll_fake_network_boot(struct world *w)
{
	struct node *nd = node_new();
	nd->name = xstrdup("f1");
	nd->uid = xstrdup("f1");
	nd->bmc.driver = xstrdup("redfish");
	nd->bmc.address = xstrdup("https://bmc-f1.test");
	nd->provision = json_pack("{s:s}", "image", "os1");
	nd->phase = PHASE_ENROLLED;
	nd->phase_since = nd->created_at = clock_wall_ms(w->clock);
	put_node(w, nd);
	node_free(nd);
}

/* Network-boot provisioning (spec.provision) of a machine that is running: PXE next boot,
 * cycle, the ramdisk's inspection and deploy reports, disk for every boot, a second cycle (the
 * reboot to disk: the first cycle's send-once marker must not stand for it), the disk boot
 * report; inventory recorded from the inspection. */
static void test_network_boot_plan(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.power = BMC_POWER_ON;
	enroll_fake_network_boot(w);
	struct lifecycle *lc = harness_lc(w->hn);
	assert_int_equal(run_until(w, f1_at_step, "wait_inspection", 30 * MIN_MS), 0);
	struct node *n = get_node(w, "f1");
	struct operation *op = get_op(w, n->operation);
	assert_string_equal(op->kind, "provision");
	assert_int_equal(op->nsteps, 7);
	assert_string_equal(op->steps[5], "reboot_to_disk");
	assert_string_equal(jsonx_str(op->params, "networkBoot.image"), "os1");
	assert_string_equal(jsonx_str(op->params, "powerChoice"), "cycle");
	long sets_before = w->fk.sets;
	json_t *inv = json_pack("{s:[],s:[{s:s}],s:I}", "gpus", "nics", "name", "eth0", "memoryMiB",
				(json_int_t)256);
	json_t *doc = json_pack("{s:o}", "inventory", inv);
	lifecycle_boot_reported(lc, "f1", op->id, LIFECYCLE_BOOT_INSPECTED, doc);
	json_decref(doc);
	assert_int_equal(run_until(w, f1_at_step, "wait_deploy", 30 * MIN_MS), 0);
	doc = json_pack("{s:b,s:s,s:I,s:s}", "ok", 1, "sha256", "ab", "bytes", (json_int_t)10,
			"disk", "/dev/vda");
	lifecycle_boot_reported(lc, "f1", op->id, LIFECYCLE_BOOT_DEPLOYED, doc);
	/* a second deploy report for the same attempt is ignored (recorded once) */
	json_object_set_new(doc, "ok", json_false());
	lifecycle_boot_reported(lc, "f1", op->id, LIFECYCLE_BOOT_DEPLOYED, doc);
	json_decref(doc);
	assert_int_equal(run_until(w, f1_at_step, "wait_disk_boot", 30 * MIN_MS), 0);
	assert_int_equal(w->fk.sets, sets_before + 1); /* reboot_to_disk cycled */
	doc = json_pack("{s:s}", "bootId", "boot-on-disk-1");
	lifecycle_boot_reported(lc, "f1", op->id, LIFECYCLE_BOOT_DISK_BOOTED, doc);
	json_decref(doc);
	enum node_phase val = PHASE_VALIDATING;
	assert_int_equal(run_until(w, f1_phase_is, &val, 30 * MIN_MS), 0);
	struct operation *done = get_op(w, op->id);
	assert_int_equal(done->state, OP_SUCCEEDED);
	assert_true(json_is_true(jsonx_path(done->params, "deploy.ok")));
	operation_free(done);
	node_free(n);
	n = get_node(w, "f1");
	assert_string_equal(n->last_boot_id, "boot-on-disk-1");
	assert_int_equal(json_integer_value(json_object_get(n->inventory, "memoryMiB")), 256);
	char reason[64];
	assert_int_equal(cond_of(w, "f1", "NetworkBoot", reason, sizeof(reason)), COND_TRUE);
	assert_string_equal(reason, "BootedFromDisk");
	node_free(n);
	operation_free(op);
	world_free(w);
}

/* A deploy report that says the write failed fails the provisioning with NetworkBoot False
 * DeployFailed and the agent's message; no reboot to disk is attempted. */
static void test_network_boot_deploy_failed(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll_fake_network_boot(w);
	struct lifecycle *lc = harness_lc(w->hn);
	assert_int_equal(run_until(w, f1_at_step, "wait_inspection", 30 * MIN_MS), 0);
	struct node *n = get_node(w, "f1");
	char *id = xstrdup(n->operation);
	node_free(n);
	json_t *doc = json_pack("{s:{}}", "inventory");
	lifecycle_boot_reported(lc, "f1", id, LIFECYCLE_BOOT_INSPECTED, doc);
	json_decref(doc);
	doc = json_pack("{s:b,s:s}", "ok", 0, "message", "sha256 mismatch: expected aa, got bb");
	lifecycle_boot_reported(lc, "f1", id, LIFECYCLE_BOOT_DEPLOYED, doc);
	json_decref(doc);
	long sets = w->fk.sets;
	assert_int_equal(run_until(w, op_ended, id, 30 * MIN_MS), 0);
	struct operation *op = get_op(w, id);
	assert_int_equal(op->state, OP_FAILED);
	assert_string_equal(op->steps[op->step], "wait_deploy");
	assert_non_null(strstr(op->last_error, "sha256 mismatch: expected aa, got bb"));
	operation_free(op);
	assert_int_equal(w->fk.sets, sets);
	char reason[64];
	assert_int_equal(cond_of(w, "f1", "NetworkBoot", reason, sizeof(reason)), COND_FALSE);
	assert_string_equal(reason, "DeployFailed");
	free(id);
	world_free(w);
}

static void test_power_unknown_is_not_off(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.unknown_power = 1;
	enroll_fake(w, "f1");
	char reason[64];
	/* inspection records what the BMC said: not known (checked after every pump: what the
	 * next timer brings, provisioning's retry, is not looked at here) */
	run_until(w, f1_has_power_cond, NULL, 30 * MIN_MS);
	assert_int_equal(cond_of(w, "f1", "PoweredOn", reason, sizeof(reason)), COND_UNKNOWN);
	assert_string_equal(reason, "PowerStateMissing");
	struct node *n = get_node(w, "f1");
	assert_string_equal(node_condition_get(n, "PoweredOn")->message,
			    "Redfish ComputerSystem has no PowerState");
	node_free(n);
	/* provisioning cannot confirm power: it retries, it never acts on "unknown" */
	run_until(w, f1_has_event, "OperationFailed", 60 * MIN_MS);
	assert_int_equal(count_events(w, "f1", "OperationFailed"), 1);
	assert_int_equal(w->fk.sets, 0);
	assert_int_equal(cond_of(w, "f1", "PoweredOn", reason, sizeof(reason)), COND_UNKNOWN);
	assert_string_equal(reason, "PowerStateMissing");
	world_free(w);
}

/* A step that asks to be retried waits 1 s, 2 s, 4 s, 8 s between its attempts (the fake is
 * a Redfish BMC: no sim time scaling). Before the fix, saving the retried operation re-queued
 * the node through the cache and all five attempts ran at the same instant. */
static void test_step_retry_backs_off(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.unknown_power = 1;
	enroll_fake(w, "f1");
	run_until(w, f1_has_event, "OperationFailed", 60 * MIN_MS);
	assert_int_equal(count_events(w, "f1", "OperationFailed"), 1);
	/* inspection's reads (calls 0-3 at 0), then provisioning's five attempts of its power
	 * step, one read each: at 0, +1 s, +2 s, +4 s, +8 s */
	assert_int_equal(w->fk.ncall_at, 9);
	static const int64_t want[] = {0, 1000, 3000, 7000, 15000};
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(w->fk.call_at[4 + i], want[i]);
	world_free(w);
}

static void test_learned_quirks_recorded_once(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.learn = BMC_QUIRK_REDFISH_NO_IF_MATCH;
	enroll_fake(w, "f1");
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, f1_phase_is, &prov, 30 * MIN_MS), 0);
	/* several more calls, each reporting the same quirk */
	char *st = request_power(w, "f1", "status");
	assert_int_equal(run_until(w, op_ended, st, 30 * MIN_MS), 0);
	assert_true(w->fk.calls >= 4);
	struct node *n = get_node(w, "f1");
	assert_int_equal(n->bmc_quirks, BMC_QUIRK_REDFISH_NO_IF_MATCH);
	assert_int_equal(n->bmc.quirks, 0);
	node_free(n);
	assert_int_equal(count_events(w, "f1", "BMCQuirkLearned"), 1);
	free(st);
	world_free(w);
}

/* A BMC may begin a cycle late: the first read comes one poll interval (5 s) after the act,
 * even when the node is looked at again sooner (here: the operation's own writes wake it). */
static void test_cycle_reads_after_settling(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.power = BMC_POWER_ON;
	enroll_fake(w, "f1");
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, f1_phase_is, &prov, 30 * MIN_MS), 0);
	char *cyc = request_power(w, "f1", "cycle");
	assert_int_equal(run_until(w, op_ended, cyc, 60 * MIN_MS), 0);
	struct operation *op = get_op(w, cyc);
	assert_int_equal(op->state, OP_SUCCEEDED);
	operation_free(op);
	/* every power read that followed an act (the cycle's poll, and provisioning's reads
	 * after its own cycle) came at least 5 s later */
	assert_true(w->fk.min_settle >= 5000);
	free(cyc);
	world_free(w);
}

/* A cycle whose answer never came may have happened: a retry of the manual request does not
 * send it again, the operation fails saying so. (Provisioning in the same state waits for the
 * boot callback instead: see step_power_on_or_cycle.) */
static void test_cycle_with_lost_answer_not_resent(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.power = BMC_POWER_ON;
	enroll_fake(w, "f1");
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, f1_phase_is, &prov, 30 * MIN_MS), 0);
	/* provisioning: its cycle's answer is lost; it goes on to wait for the callback */
	long sets0 = w->fk.sets;
	w->fk.set_lost_rc = FP_ETIMEDOUT;
	char *cyc = request_power(w, "f1", "cycle");
	assert_int_equal(run_until(w, op_ended, cyc, 60 * MIN_MS), 0);
	struct operation *op = get_op(w, cyc);
	assert_int_equal(op->state, OP_FAILED);
	assert_string_equal(op->last_error,
			    "step power_cycle attempt 1: the power cycle may or may not have "
			    "reached the BMC (serve stopped, or the call got no answer, while it "
			    "was being sent); not sent again, since a second one could interrupt "
			    "the boot the first began: check the machine and ask again if needed");
	operation_free(op);
	/* one send for the request, however long we wait */
	assert_int_equal(w->fk.sets, sets0 + 1);
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0;
	assert_int_equal(store_list(w->store, "/operations/power-", NULL, 0, &items, &k, NULL,
				    &more),
			 0);
	assert_int_equal(k, 1);
	store_kv_array_free(items, k);
	free(cyc);
	world_free(w);
}

static void test_auth_failure_fails_at_once(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.fail_rc = FP_EAUTH;
	enroll_fake(w, "f1");
	assert_int_equal(run_until(w, f1_has_event, "OperationFailed", 30 * MIN_MS), 0);
	/* one call: refused credentials are never retried (that locks BMC accounts) */
	assert_int_equal(w->fk.calls, 1);
	char reason[64];
	assert_int_equal(cond_of(w, "f1", "BMCReachable", reason, sizeof(reason)), COND_FALSE);
	assert_string_equal(reason, "AuthenticationFailed");
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0;
	assert_int_equal(store_list(w->store, "/operations/inspect-", NULL, 0, &items, &k, NULL,
				    &more),
			 0);
	assert_int_equal(k, 1);
	json_t *d = json_loads(items[0].value, 0, NULL);
	assert_string_equal(jsonx_str(d, "status.state"), "failed");
	assert_int_equal(json_integer_value(jsonx_path(d, "status.attempt")), 1);
	assert_string_equal(jsonx_str(d, "status.lastError"),
			    "step power_status attempt 1: power status: fake BMC: "
			    "authentication required");
	json_decref(d);
	store_kv_array_free(items, k);
	/* nor retried later on a timer: an hour on, still the one call and the one operation */
	enum node_phase never = PHASE_AVAILABLE;
	assert_int_equal(run_until(w, f1_phase_is, &never, 60 * MIN_MS), -1);
	assert_int_equal(w->fk.calls, 1);
	assert_int_equal(count_events(w, "f1", "OperationFailed"), 1);
	/* the operator fixed the BMC account and asks for the power state: it gets through,
	 * the refusal is over and onboarding goes on by itself */
	w->fk.fail_rc = 0;
	char *st = request_power(w, "f1", "status");
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, f1_phase_is, &prov, 30 * MIN_MS), 0);
	assert_int_equal(cond_of(w, "f1", "BMCReachable", reason, sizeof(reason)), COND_TRUE);
	free(st);
	world_free(w);
}

static int first_op_failed(struct world *w, const void *arg)
{
	return count_events(w, "f1", "OperationFailed") >= 1;
}

static void test_breaker_opens_waits_closes(void **state)
{
	struct world *w = world_new(0, 0, 0);
	/* Open after 3 timeouts; the first probe only after 3 min, longer than a step's 2 min
	 * deadline, so the step waiting on it must end by its deadline. */
	harness_down(w->hn);
	struct breaker_config bc = {.failure_threshold = 3,
				    .probe_min_ms = 3 * MIN_MS,
				    .probe_max_ms = 3 * MIN_MS,
				    .jitter = 0,
				    .probe_timeout_ms = 10 * MIN_MS};
	w->breaker = breaker_new(w->clock, NULL, &bc);
	w->fk.breaker = w->breaker;
	w->hn->breaker = w->breaker; /* borrowed by the fleet; world_free frees it */
	harness_up(w->hn);
	w->fk.fail_rc = FP_ETIMEDOUT;
	enroll_fake(w, "f1");
	assert_int_equal(run_until(w, first_op_failed, NULL, 30 * MIN_MS), 0);
	/* three timeouts opened it; no call reached the BMC while open */
	assert_int_equal(w->fk.calls, 3);
	assert_int_equal(w->fk.calls_open, 0);
	assert_int_equal(count_events(w, "f1", "BMCUnreachable"), 1);
	char reason[64];
	assert_int_equal(cond_of(w, "f1", "BMCReachable", reason, sizeof(reason)), COND_FALSE);
	assert_string_equal(reason, "CircuitOpen");
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0;
	assert_int_equal(store_list(w->store, "/operations/inspect-", NULL, 0, &items, &k, NULL,
				    &more),
			 0);
	assert_true(k >= 1);
	json_t *d = json_loads(items[0].value, 0, NULL);
	assert_string_equal(jsonx_str(d, "status.state"), "failed");
	assert_string_equal(
		jsonx_str(d, "status.lastError"),
		"step power_status attempt 4: BMC https://bmc-f1.test circuit open: the "
		"step deadline passed without the BMC answering");
	json_decref(d);
	store_kv_array_free(items, k);
	/* the BMC answers again: the probe closes the circuit, with one event */
	w->fk.fail_rc = 0;
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, f1_phase_is, &prov, 30 * MIN_MS), 0);
	assert_int_equal(w->fk.calls_open, 0);
	assert_int_equal(w->fk.calls_probe, 1);
	assert_int_equal(count_events(w, "f1", "BMCUnreachable"), 1);
	assert_int_equal(count_events(w, "f1", "BMCReachable"), 1);
	assert_int_equal(cond_of(w, "f1", "BMCReachable", reason, sizeof(reason)), COND_TRUE);
	assert_int_equal(breaker_state(w->breaker, "https://bmc-f1.test"), BREAKER_CLOSED);
	world_free(w);
}

static void test_retry_after_waits_without_an_attempt(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.retry_after_once = 20000;
	enroll_fake(w, "f1");
	/* the first call is told to come back in 20 s */
	for (int i = 0; i < 50; i++) {
		harness_pump(w->hn);
		if (w->fk.calls)
			break;
		int64_t at = 0;
		if (clock_virtual_next_timer(w->clock, &at) == 0)
			harness_advance(w->hn, at);
	}
	assert_int_equal(w->fk.calls, 1);
	struct node *n = get_node(w, "f1");
	struct operation *op = get_op(w, n->operation);
	assert_int_equal(op->state, OP_RUNNING);
	assert_int_equal(op->attempt, 1);
	assert_string_equal(op->last_error,
			    "power status: the BMC asked to wait 20000 ms (Retry-After)");
	operation_free(op);
	node_free(n);
	/* nothing calls it before the 20 s are up; then the same attempt goes on */
	harness_idle(w->hn, 19000);
	assert_int_equal(w->fk.calls, 1);
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, f1_phase_is, &prov, 30 * MIN_MS), 0);
	struct store_kv *items = NULL;
	size_t k = 0;
	int more = 0;
	assert_int_equal(store_list(w->store, "/operations/inspect-", NULL, 0, &items, &k, NULL,
				    &more),
			 0);
	assert_int_equal(k, 1);
	json_t *d = json_loads(items[0].value, 0, NULL);
	assert_string_equal(jsonx_str(d, "status.state"), "succeeded");
	json_decref(d);
	store_kv_array_free(items, k);
	world_free(w);
}

static void test_retire_cancels_queued_power(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	char *first = request_power(w, "r01n01", "status");
	char *second = request_power(w, "r01n01", "off");
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->nqueued, 1);
	n->retire = 1;
	put_node(w, n);
	node_free(n);
	assert_true(run_until_phase(w, 1, PHASE_RETIRED, 60 * MIN_MS) >= 0);
	struct operation *a = get_op(w, first), *b = get_op(w, second);
	assert_int_equal(a->state, OP_CANCELLED);
	assert_int_equal(b->state, OP_CANCELLED);
	assert_string_equal(b->last_error, "cancelled: the node is retiring");
	n = get_node(w, "r01n01");
	assert_int_equal(n->nqueued, 0);
	node_free(n);
	/* the retire operation's own power off, nothing queued */
	assert_int_equal(counter(w, "r01n01", "powerOff"), 1);
	operation_free(a);
	operation_free(b);
	free(first);
	free(second);
	world_free(w);
}

/* A retire does not wait out a step that only waits (here provisioning's boot callback, which
 * never comes from the fake BMC: 15 minutes): the wait is cancelled and the node retires at
 * once, with its power off. */
static void test_retire_cancels_waiting_step(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.power = BMC_POWER_OFF;
	enroll_fake(w, "f1");
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, f1_phase_is, &prov, 30 * MIN_MS), 0);
	/* let it reach wait_boot_callback */
	struct node *n = NULL;
	for (int i = 0; i < 200; i++) {
		harness_pump(w->hn);
		n = get_node(w, "f1");
		struct operation *op = n->operation ? get_op(w, n->operation) : NULL;
		int waiting = op && op->step < op->nsteps &&
			      strcmp(op->steps[op->step], "wait_boot_callback") == 0;
		operation_free(op);
		if (waiting)
			break;
		node_free(n);
		n = NULL;
		harness_idle(w->hn, 1000);
	}
	assert_non_null(n);
	int64_t t0 = clock_now_ms(w->clock);
	n->retire = 1;
	put_node(w, n);
	node_free(n);
	enum node_phase retired = PHASE_RETIRED;
	assert_int_equal(run_until(w, f1_phase_is, &retired, 60 * MIN_MS), 0);
	/* well inside the callback's 15-minute deadline: the provisioning was cancelled */
	assert_true(clock_now_ms(w->clock) - t0 < 15 * MIN_MS);
	assert_int_equal(count_ops(w, "f1", "retire"), 1);
	assert_int_equal(w->fk.power, BMC_POWER_OFF);
	world_free(w);
}

/* A step that fails for a reason retrying cannot fix parks the node like refused credentials:
 * the driver refuses spec.bmc (FP_EINVAL) -> BMCReachable False/InvalidBMCSpec, one call, no
 * operation on a timer; a power request that gets through resumes onboarding. */
static void test_invalid_spec_parks(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.fail_rc = FP_EINVAL;
	enroll_fake(w, "f1");
	assert_int_equal(run_until(w, f1_has_event, "OperationFailed", 30 * MIN_MS), 0);
	assert_int_equal(w->fk.calls, 1);
	char reason[64], want[256];
	assert_int_equal(cond_of(w, "f1", "BMCReachable", reason, sizeof(reason)), COND_FALSE);
	assert_string_equal(reason, "InvalidBMCSpec");
	snprintf(want, sizeof(want), "power status: fake BMC: %s", fp_err_msg(FP_EINVAL));
	struct node *n = get_node(w, "f1");
	assert_string_equal(node_condition_get(n, "BMCReachable")->message, want);
	assert_null(n->operation);
	node_free(n);
	enum node_phase never = PHASE_AVAILABLE;
	assert_int_equal(run_until(w, f1_phase_is, &never, 60 * MIN_MS), -1);
	assert_int_equal(w->fk.calls, 1);
	assert_int_equal(count_ops(w, "f1", "inspect"), 1);
	assert_int_equal(count_events(w, "f1", "OperationFailed"), 1);
	w->fk.fail_rc = 0;
	char *st = request_power(w, "f1", "status");
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, f1_phase_is, &prov, 30 * MIN_MS), 0);
	assert_int_equal(cond_of(w, "f1", "BMCReachable", reason, sizeof(reason)), COND_TRUE);
	free(st);
	world_free(w);
}

/* The password cannot be resolved (here: spec.bmc.password_file with no credentials
 * directory): BMCReachable False/CredentialsUnavailable with secret_bmc_password's error, the
 * BMC never called, no operation on a timer. */
static void test_credentials_unavailable_parks(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll_fake(w, "f1");
	struct node *n = get_node(w, "f1");
	n->bmc.password_file = xstrdup("f1.pw");
	put_node(w, n);
	node_free(n);
	assert_int_equal(run_until(w, f1_has_event, "OperationFailed", 30 * MIN_MS), 0);
	char reason[64];
	assert_int_equal(cond_of(w, "f1", "BMCReachable", reason, sizeof(reason)), COND_FALSE);
	assert_string_equal(reason, "CredentialsUnavailable");
	n = get_node(w, "f1");
	assert_string_equal(node_condition_get(n, "BMCReachable")->message,
			    "spec.bmc.password_file is set but no BMC credentials directory is "
			    "configured");
	node_free(n);
	enum node_phase never = PHASE_AVAILABLE;
	assert_int_equal(run_until(w, f1_phase_is, &never, 60 * MIN_MS), -1);
	assert_int_equal(w->fk.calls, 0);
	assert_int_equal(count_ops(w, "f1", "inspect"), 1);
	assert_int_equal(count_events(w, "f1", "OperationFailed"), 1);
	world_free(w);
}

/* What POST /v1/nodes/{name}:retire {"skipPowerOff": true} writes (api_nodes.c): spec.retire,
 * and a retire operation with the one step skip_power_off - the node's operation (the node
 * enters retiring) when none is in flight, else queued behind it. Returns its id. */
static char *request_retire_skip(struct world *w, const char *name)
{
	struct node *n = get_node(w, name);
	struct operation *op = operation_new();
	static unsigned seq;
	op->id = xasprintf("retire-%013lld-%08x", (long long)clock_wall_ms(w->clock), ++seq);
	op->node = xstrdup(name);
	op->kind = xstrdup("retire");
	op->steps[op->nsteps++] = xstrdup("skip_power_off");
	op->actor = xstrdup("operator:alice");
	op->reason = xstrdup("BMC dead");
	op->params = json_pack("{s:b}", "skipPowerOff", 1);
	op->created_at = op->updated_at = clock_wall_ms(w->clock);
	n->retire = 1;
	if (n->operation) {
		n->queued_ops = realloc(n->queued_ops, (n->nqueued + 1) * sizeof(char *));
		n->queued_ops[n->nqueued++] = xstrdup(op->id);
	} else {
		n->operation = xstrdup(op->id);
		n->phase = PHASE_RETIRING;
		n->phase_since = clock_wall_ms(w->clock);
	}
	return commit_node_and_op(w, n, op);
}

/* A node whose BMC refuses its credentials is retired: the retire's power off fails once and
 * the node stays parked in retiring (no retries on a timer); a retire without power off then
 * ends it without calling the BMC, PoweredOn Unknown/NotPoweredOff. */
static void test_retire_skip_power_off_parked(void **state)
{
	struct world *w = world_new(0, 0, 0);
	w->fk.fail_rc = FP_EAUTH;
	enroll_fake(w, "f1");
	assert_int_equal(run_until(w, f1_has_event, "OperationFailed", 30 * MIN_MS), 0);
	struct node *n = get_node(w, "f1");
	n->retire = 1;
	put_node(w, n);
	node_free(n);
	enum node_phase retired = PHASE_RETIRED;
	assert_int_equal(run_until(w, f1_phase_is, &retired, 60 * MIN_MS), -1);
	n = get_node(w, "f1");
	assert_int_equal(n->phase, PHASE_RETIRING);
	assert_null(n->operation);
	node_free(n);
	assert_int_equal(w->fk.calls, 2); /* inspect's read, the retire's power off read */
	assert_int_equal(count_ops(w, "f1", "retire"), 1);
	char *id = request_retire_skip(w, "f1");
	assert_int_equal(run_until(w, f1_phase_is, &retired, 30 * MIN_MS), 0);
	assert_int_equal(w->fk.calls, 2);
	struct operation *op = get_op(w, id);
	assert_int_equal(op->state, OP_SUCCEEDED);
	operation_free(op);
	char reason[64];
	assert_int_equal(cond_of(w, "f1", "PoweredOn", reason, sizeof(reason)), COND_UNKNOWN);
	assert_string_equal(reason, "NotPoweredOff");
	n = get_node(w, "f1");
	assert_string_equal(node_condition_get(n, "PoweredOn")->message,
			    "retired without powering off (skipPowerOff requested by "
			    "operator:alice: BMC dead); the machine may still be on");
	node_free(n);
	free(id);
	world_free(w);
}

/* Requested while another operation is in flight, the retire without power off waits for it,
 * is kept when the node enters retiring (the rest of the queue is cancelled), and runs
 * instead of the retire's power off. */
static void test_retire_skip_power_off_queued(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	enum node_phase prov = PHASE_PROVISIONING;
	assert_int_equal(run_until(w, phase_is, &prov, 30 * MIN_MS), 0);
	char *st = request_power(w, "r01n01", "status");
	char *id = request_retire_skip(w, "r01n01");
	assert_true(run_until_phase(w, 1, PHASE_RETIRED, 60 * MIN_MS) >= 0);
	struct operation *s = get_op(w, st), *r = get_op(w, id);
	assert_int_equal(s->state, OP_CANCELLED);
	assert_int_equal(r->state, OP_SUCCEEDED);
	operation_free(s);
	operation_free(r);
	assert_int_equal(count_ops(w, "r01n01", "retire"), 1);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 0);
	assert_int_equal(cond_of(w, "r01n01", "PoweredOn", NULL, 0), COND_UNKNOWN);
	free(st);
	free(id);
	world_free(w);
}

/* A reset of a machine that reads off fails at once, nothing sent. */
static void test_reset_of_an_off_machine_fails(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	char *off = request_power(w, "r01n01", "off");
	assert_int_equal(run_until(w, op_ended, off, 30 * MIN_MS), 0);
	size_t before = w->spy_log.len;
	char *rst = request_power(w, "r01n01", "reset");
	assert_int_equal(run_until(w, op_ended, rst, 30 * MIN_MS), 0);
	struct operation *op = get_op(w, rst);
	assert_int_equal(op->state, OP_FAILED);
	assert_int_equal(op->attempt, 1);
	assert_string_equal(op->last_error,
			    "step power_reset attempt 1: the machine is off; a reset does nothing "
			    "(IPMI 2.0 section 28.3 / Redfish ForceRestart); use on");
	operation_free(op);
	assert_int_equal(w->spy_log.len, before);
	assert_int_equal(cond_of(w, "r01n01", "PoweredOn", NULL, 0), COND_FALSE);
	free(off);
	free(rst);
	world_free(w);
}

/* ---- health remediation ladder and disruption budgets (issue 4) ---- */

/* Places what the health controller places in one write: the `health` hold,
 * status.remediation with `ladder` (first rung first) and GPUHealthy False. */
static void place_remediation(struct world *w, const char *name,
			      const enum remediation_rung *ladder, size_t nladder,
			      const char *event)
{
	struct node *n = get_node(w, name);
	int64_t now = clock_wall_ms(w->clock);
	assert_int_equal(node_hold_add(n, "health", "xid:79 on GPU 0000:3b:00.0 (1 event)", now, 0),
			 0);
	struct node_remediation *r = &n->remediation;
	r->active = 1;
	for (size_t i = 0; i < nladder; i++)
		r->ladder[r->nladder++] = ladder[i];
	r->rung = 0;
	r->code = xstrdup("xid:79");
	r->gpu = xstrdup("0000:3b:00.0");
	r->reason = xstrdup("XID 79: GPU has fallen off the bus");
	r->policy = xstrdup("default");
	if (event)
		r->events[r->nevents++] = xstrdup(event);
	r->since = now;
	node_condition_set(n, "GPUHealthy", COND_FALSE, "xid:79",
			   "GPU 0000:3b:00.0 fell off the bus", now);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc), key[64];
	snprintf(key, sizeof(key), "/nodes/%s", name);
	assert_int_equal(store_put(w->store, key, val, n->resource_version, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
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

static const struct node_condition *cond(const struct node *n, const char *type)
{
	const struct node_condition *c = node_condition_get(n, type);
	if (!c)
		fail_msg("node %s has no condition %s", n->name, type);
	return c;
}

static void test_remediation_reboot_to_available(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	struct node *n = get_node(w, "r01n01");
	int64_t served = n->served_at;
	assert_true(served > 0);
	node_free(n);
	static const enum remediation_rung ladder[] = {RUNG_REBOOT, RUNG_REIMAGE, RUNG_RMA};
	place_remediation(w, "r01n01", ladder, 3, NULL);
	assert_true(run_until_phase(w, 1, PHASE_REPAIRING, 10 * MIN_MS) >= 0);
	assert_true(run_until_phase(w, 1, PHASE_VALIDATING, 30 * MIN_MS) >= 0);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) >= 0);
	n = get_node(w, "r01n01");
	assert_int_equal(n->nholds, 0);
	assert_int_equal(n->remediation.active, 0);
	assert_int_equal(n->nremediation_history, 1);
	assert_string_equal(n->remediation_history[0].code, "xid:79");
	assert_string_equal(n->remediation_history[0].gpu, "0000:3b:00.0");
	assert_int_equal(n->remediation_history[0].rung, RUNG_REBOOT);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	assert_int_equal(cond(n, "GPUHealthy")->status, COND_TRUE);
	assert_string_equal(cond(n, "GPUHealthy")->reason, "Remediated");
	assert_null(node_condition_get(n, "Remediation"));
	assert_null(node_condition_get(n, "DisruptionAllowed"));
	assert_int_equal(n->served_at, served); /* kept from the first time */
	node_free(n);
	/* onboarding powered on once; the reboot rung off then on */
	assert_int_equal(counter(w, "r01n01", "powerOff"), 1);
	assert_int_equal(counter(w, "r01n01", "powerOn"), 2);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "drain"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reimage"), 0);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "validate"), 2);
	assert_int_equal(count_docs(w, "/events/", "reason", "RemediationSucceeded"), 1);
	world_free(w);
}

static void test_remediation_gpu_reset_by_sim_agent(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	static const enum remediation_rung ladder[] = {RUNG_GPU_RESET, RUNG_REBOOT};
	place_remediation(w, "r01n01", ladder, 2, NULL);
	assert_true(run_until_phase(w, 1, PHASE_VALIDATING, 30 * MIN_MS) >= 0);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) >= 0);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->nholds, 0);
	assert_int_equal(n->nremediation_history, 1);
	assert_int_equal(n->remediation_history[0].rung, RUNG_GPU_RESET);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	node_free(n);
	assert_int_equal(counter(w, "r01n01", "gpuReset"), 1);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 0);
	assert_int_equal(counter(w, "r01n01", "powerOn"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "gpu_reset"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 0);
	assert_non_null(strstr(w->spy_log.data, "r01n01 agent gpu_reset\n"));
	world_free(w);
}

/* Sim speed 0: the agent answers the GPU reset and reports its burn-in in the same
 * millisecond as the rung's end (and before the lifecycle has moved the node to validating).
 * That report belongs to the rung and must be taken at once: the validation ends without
 * waiting for its 30-minute step deadline, so the ladder never climbs to reboot. */
static void test_remediation_gpu_reset_sim_speed_zero(void **state)
{
	struct world *w = world_new_speed(0, 0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) >= 0);
	static const enum remediation_rung ladder[] = {RUNG_GPU_RESET, RUNG_REBOOT, RUNG_RMA};
	place_remediation(w, "r01n01", ladder, 3, NULL);
	int64_t t0 = clock_now_ms(w->clock);
	assert_true(run_until_phase(w, 1, PHASE_REPAIRING, 10 * MIN_MS) >= 0);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) >= 0);
	/* no step waited out a deadline: every sim timer is 0 ms, the lifecycle's own retries
	 * are seconds (the validate op's wait_burn_in deadline is 30 min) */
	assert_true(clock_now_ms(w->clock) - t0 < 1 * MIN_MS);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->nholds, 0);
	assert_int_equal(n->remediation.active, 0);
	assert_int_equal(n->nremediation_history, 1);
	assert_int_equal(n->remediation_history[0].rung, RUNG_GPU_RESET);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	assert_int_equal(n->validation_passed, 1);
	assert_string_equal(n->validation_boot_id, "r01n01-1");
	node_free(n);
	assert_int_equal(counter(w, "r01n01", "gpuReset"), 1);
	assert_int_equal(counter(w, "r01n01", "powerOn"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "gpu_reset"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 0);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "validate"), 2);
	world_free(w);
}

/* After a rung the validation needs a burn-in report recorded after the rung began: the one
 * left on the node from onboarding (same boot r01n01-1, passed) must not end a GPU reset's
 * validation, so the commit that starts the rung clears it. */
static void test_remediation_old_burn_in_not_taken(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) >= 0);
	struct node *n = get_node(w, "r01n01");
	assert_true(n->validated_at > 0); /* onboarding's report, boot r01n01-1 */
	assert_string_equal(n->validation_boot_id, "r01n01-1");
	node_free(n);
	static const enum remediation_rung ladder[] = {RUNG_GPU_RESET, RUNG_REBOOT};
	place_remediation(w, "r01n01", ladder, 2, NULL);
	assert_true(run_until_phase(w, 1, PHASE_REPAIRING, 10 * MIN_MS) >= 0);
	n = get_node(w, "r01n01");
	assert_int_equal(n->validated_at, 0); /* cleared in the commit that started the rung */
	assert_null(n->validation_boot_id);
	node_free(n);
	world_free(w);
}

static void test_remediation_validation_fails_once(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	static const enum remediation_rung ladder[] = {RUNG_GPU_RESET, RUNG_REBOOT, RUNG_RMA};
	place_remediation(w, "r01n01", ladder, 3, NULL);
	w->hn->fail_validations = 1; /* the burn-in after the GPU reset fails */
	assert_true(run_until_phase(w, 1, PHASE_REPAIRING, 30 * MIN_MS) >= 0);
	assert_true(run_until_phase(w, 1, PHASE_VALIDATING, 30 * MIN_MS) >= 0);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 120 * MIN_MS) >= 0);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->nholds, 0);
	assert_int_equal(n->nremediation_history, 1);
	assert_int_equal(n->remediation_history[0].rung, RUNG_REBOOT);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	node_free(n);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "gpu_reset"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "rma"), 0);
	assert_int_equal(count_docs(w, "/events/", "reason", "RemediationSucceeded"), 1);
	assert_int_equal(counter(w, "r01n01", "gpuReset"), 1);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 1);
	world_free(w);
}

static void test_remediation_ladder_exhausted(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	static const enum remediation_rung ladder[] = {RUNG_GPU_RESET, RUNG_REBOOT, RUNG_REIMAGE};
	place_remediation(w, "r01n01", ladder, 3, NULL);
	w->hn->fail_validations = 100;
	assert_true(run_until_phase(w, 1, PHASE_FAILED, 240 * MIN_MS) >= 0);
	struct node *n = get_node(w, "r01n01");
	const struct node_condition *c = cond(n, "Remediation");
	assert_int_equal(c->status, COND_FALSE);
	assert_string_equal(c->reason, "LadderExhausted");
	/* boots: onboarding (1), reboot rung (2), reimage rung's cycle of a running machine (3) */
	assert_string_equal(c->message,
			    "remediation of xid:79 on GPU 0000:3b:00.0 exhausted its ladder (tried "
			    "gpu_reset, reboot, reimage); last error: rung reimage failed: "
			    "validation failed: step wait_burn_in attempt 1: burn-in validation of "
			    "boot r01n01-3 reported failure");
	assert_int_equal(n->remediation.active, 0);
	assert_non_null(node_hold_find(n, "health")); /* a human decides */
	assert_int_equal(n->nremediation_history, 1);
	assert_int_equal(n->remediation_history[0].rung, RUNG_REIMAGE);
	assert_string_equal(n->remediation_history[0].result, "failed");
	assert_int_equal(cond(n, "GPUHealthy")->status, COND_FALSE);
	node_free(n);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "gpu_reset"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reimage"), 1);
	assert_int_equal(count_docs(w, "/events/", "reason", "RemediationRungFailed"), 0);
	assert_int_equal(count_docs(w, "/events/", "reason", "Failed"), 1);
	/* failed is terminal until a human acts */
	harness_idle(w->hn, 60 * MIN_MS);
	assert_int_equal(count_phase(w, 1, PHASE_FAILED), 1);
	world_free(w);
}

static void test_remediation_rma(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	assert_int_equal(
		store_put(w->store, "/healthevents/r01n01/k-1",
			  "{\"kind\":\"HealthEvent\",\"node\":\"r01n01\",\"id\":\"k-1\","
			  "\"source\":\"kernel\",\"code\":\"xid:79\",\"message\":\"GPU has "
			  "fallen off the bus.\"}",
			  STORE_ABSENT, NULL),
		0);
	assert_int_equal(store_put(w->store, "/healthevents/r01n01/k-2",
				   "{\"kind\":\"HealthEvent\",\"node\":\"r01n01\",\"id\":\"k-2\","
				   "\"source\":\"kernel\",\"code\":\"xid:79\"}",
				   STORE_ABSENT, NULL),
			 0);
	static const enum remediation_rung ladder[] = {RUNG_RMA};
	place_remediation(w, "r01n01", ladder, 1, "r01n01.k-1");
	assert_true(run_until_phase(w, 1, PHASE_FAILED, 30 * MIN_MS) >= 0);
	struct node *n = get_node(w, "r01n01");
	assert_non_null(n->remediation.rma);
	assert_int_equal(n->remediation.active, 1);
	assert_int_equal(strncmp(n->remediation.rma, "rma-", 4), 0);
	const struct node_condition *c = cond(n, "Remediation");
	assert_string_equal(c->reason, "RMAOpened");
	assert_int_equal(n->nremediation_history, 1);
	assert_string_equal(n->remediation_history[0].result, "rma");
	assert_int_equal(n->remediation_history[0].rung, RUNG_RMA);
	char key[128];
	snprintf(key, sizeof(key), "/rmas/%s", n->remediation.rma);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, key, &kv), 0);
	json_t *rma = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &rma, NULL, 0), 0);
	store_kv_release(&kv);
	assert_string_equal(jsonx_str(rma, "kind"), "RMA");
	assert_string_equal(jsonx_str(rma, "metadata.name"), n->remediation.rma);
	assert_string_equal(jsonx_str(rma, "node"), "r01n01");
	assert_string_equal(jsonx_str(rma, "gpu"), "0000:3b:00.0");
	assert_string_equal(jsonx_str(rma, "code"), "xid:79");
	assert_string_equal(jsonx_str(rma, "reason"), "XID 79: GPU has fallen off the bus");
	assert_string_equal(jsonx_str(rma, "state"), "open");
	json_t *ev = jsonx_path(rma, "evidence.healthEvents");
	assert_int_equal(json_array_size(ev), 1);
	assert_string_equal(jsonx_str(json_array_get(ev, 0), "id"), "k-1");
	assert_int_equal(json_integer_value(jsonx_path(rma, "evidence.counts.xid:79")), 2);
	assert_int_equal(json_array_size(jsonx_path(rma, "evidence.inventory.gpus")), 8);
	assert_true(json_is_array(jsonx_path(rma, "evidence.conditions")));
	assert_int_equal(json_array_size(jsonx_path(rma, "evidence.remediationHistory")), 0);
	/* last outputs: no rung ran before rma; onboarding's validation is the last one; what
	 * the detectors said is in GPUHealthy (placed by the health controller) */
	assert_true(json_is_false(jsonx_path(rma, "evidence.countsTruncated")));
	assert_int_equal(json_array_size(jsonx_path(rma, "evidence.operations")), 0);
	assert_true(json_is_false(jsonx_path(rma, "evidence.operationsTruncated")));
	assert_true(json_is_true(jsonx_path(rma, "evidence.validation.passed")));
	assert_string_equal(jsonx_str(rma, "evidence.validation.bootId"), "r01n01-1");
	assert_non_null(jsonx_str(rma, "evidence.validation.validatedAt"));
	assert_string_equal(jsonx_str(rma, "evidence.detectors.GPUHealthy.status"), "False");
	assert_string_equal(jsonx_str(rma, "evidence.detectors.GPUHealthy.reason"), "xid:79");
	assert_string_equal(jsonx_str(rma, "evidence.detectors.GPUHealthy.message"),
			    "GPU 0000:3b:00.0 fell off the bus");
	assert_string_equal(jsonx_str(rma, "evidence.detectors.AgentAlive.reason"), "BootCallback");
	assert_null(jsonx_path(rma, "evidence.detectors.DetectorsLive"));
	json_decref(rma);
	node_free(n);
	assert_int_equal(count_prefix(w, "/rmas/"), 1);
	world_free(w);
}

/* The `health` owner releases only its own hold (DESIGN.md: owners release only their own):
 * a node with an operator hold next to the health hold and status.remediation climbs the
 * ladder, is validated, and loses only the health hold. The phase machine then returns it to
 * available (validating goes nowhere else but repairing), where the remaining hold keeps it
 * unschedulable and drains it into maintenance, where it rests until the operator releases. */
static void test_remediation_keeps_operator_hold(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	static const enum remediation_rung ladder[] = {RUNG_REBOOT, RUNG_RMA};
	place_remediation(w, "r01n01", ladder, 2, NULL);
	assert_int_equal(add_hold(w, "r01n01", "operator:alice"), 0);
	assert_true(run_until_phase(w, 1, PHASE_VALIDATING, 30 * MIN_MS) >= 0);
	assert_true(run_until_phase(w, 1, PHASE_MAINTENANCE, 60 * MIN_MS) >= 0);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->phase, PHASE_MAINTENANCE);
	assert_int_equal(n->nholds, 1);
	assert_string_equal(n->holds[0].owner, "operator:alice");
	assert_string_equal(n->holds[0].reason, "test maintenance");
	assert_null(node_hold_find(n, "health"));
	assert_int_equal(n->remediation.active, 0);
	assert_int_equal(n->nremediation_history, 1);
	assert_int_equal(n->remediation_history[0].rung, RUNG_REBOOT);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	assert_int_equal(cond(n, "GPUHealthy")->status, COND_TRUE);
	node_free(n);
	/* still held: it stays in maintenance, and nothing else runs */
	harness_idle(w->hn, 60 * MIN_MS);
	assert_int_equal(count_phase(w, 1, PHASE_MAINTENANCE), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "drain"), 2);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "rma"), 0);
	assert_int_equal(count_docs(w, "/events/", "reason", "RemediationSucceeded"), 1);
	/* the path: onboarding's available, then validating -> available (hold still set, not
	 * schedulable) -> draining -> maintenance; two drains (health's, then the operator's) */
	assert_int_equal(count_events(w, "r01n01", "Available"), 2);
	assert_int_equal(count_events(w, "r01n01", "Draining"), 2);
	assert_int_equal(count_events(w, "r01n01", "Repairing"), 1);
	assert_int_equal(count_events(w, "r01n01", "Maintenance"), 1);
	/* the operator's release resumes it without another action */
	assert_int_equal(release_hold(w, "r01n01", "operator:alice"), 0);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 10 * MIN_MS) >= 0);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 1);
	assert_int_equal(counter(w, "r01n01", "powerOn"), 2);
	world_free(w);
}

/* The open correlated-failure breakers the fleet's budget service asks: the health
 * controller's. */
static struct health_breakers *breakers(struct world *w)
{
	struct health *h = harness_health(w->hn);
	assert_non_null(h);
	return health_breaker_owner(h);
}

/* Opens a breaker as the health controller does (docs/health.md "Correlated-failure
 * breaker"): its document in the store and in the breakers' owner. */
static void put_breaker(struct world *w, const char *domain, const char *value)
{
	char key[128], doc[512];
	snprintf(key, sizeof(key), "/breakers/%s.%s", domain, value);
	snprintf(
		doc, sizeof(doc),
		"{\"kind\":\"HealthBreaker\",\"metadata\":{\"name\":\"%s.%s\",\"createdAt\":"
		"\"2026-11-30T10:00:00.000Z\"},\"domain\":\"%s\",\"value\":\"%s\",\"state\":\"open\","
		"\"openedAt\":\"2026-11-30T10:00:00.000Z\",\"nodes\":[],\"reason\":\"test\","
		"\"suppressed\":[]}",
		domain, value, domain, value);
	assert_int_equal(store_put(w->store, key, doc, STORE_ANY, NULL), 0);
	json_t *d = json_loads(doc, 0, NULL);
	assert_non_null(d);
	health_breakers_put(breakers(w), key + strlen("/breakers/"), d);
}

/* Closes breaker `name` as a reset does: the document goes from the store and the owner. */
static void reset_breaker(struct world *w, const char *name)
{
	char key[128];
	snprintf(key, sizeof(key), "/breakers/%s", name);
	assert_int_equal(store_delete(w->store, key, STORE_ANY, NULL), 0);
	assert_true(health_breakers_remove(breakers(w), name));
}

/* Adds label key=value to node name in the store. */
static void put_label(struct world *w, const char *name, const char *key, const char *value)
{
	struct node *n = get_node(w, name);
	n->labels = xreallocarray(n->labels, n->nlabels + 1, sizeof(*n->labels));
	n->labels[n->nlabels].key = xstrdup(key);
	n->labels[n->nlabels++].value = xstrdup(value);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc), k[64];
	snprintf(k, sizeof(k), "/nodes/%s", name);
	assert_int_equal(store_put(w->store, k, val, n->resource_version, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
}

/* Issue 4 item 4: an open correlated-failure breaker stops automatic health actions in its
 * domain, not only new holds. r01n01 (health hold + remediation) is not drained while
 * rack.r01 is open and waits with DisruptionAllowed False/BreakerOpen; r01n02 (an operator's
 * hold, same rack) is drained at once; after the reset (the document deleted) r01n01 goes on
 * by itself: the budget service asks the breakers' owner, which no longer holds it. */
static void test_breaker_stops_health_drain(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 2);
	assert_true(run_until_phase(w, 2, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	put_breaker(w, "rack", "r01");
	budget_svc_invalidate(harness_budget(w->hn));
	static const enum remediation_rung ladder[] = {RUNG_REBOOT};
	place_remediation(w, "r01n01", ladder, 1, NULL);
	assert_int_equal(add_hold(w, "r01n02", "operator:alice"), 0);
	harness_pump(w->hn);
	harness_idle(w->hn, 30 * MIN_MS);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->phase, PHASE_AVAILABLE);
	assert_null(n->operation);
	const struct node_condition *c = cond(n, "DisruptionAllowed");
	assert_int_equal(c->status, COND_FALSE);
	assert_string_equal(c->reason, "BreakerOpen");
	assert_string_equal(c->message,
			    "correlated-failure breaker rack.r01 is open since "
			    "2026-11-30T10:00:00.000Z; automatic health actions wait for its reset "
			    "(POST /v1/breakers/rack.r01:reset)");
	node_free(n);
	assert_int_equal(count_phase(w, 1, PHASE_AVAILABLE), 1);
	n = get_node(w, "r01n02");
	assert_int_equal(n->phase, PHASE_MAINTENANCE); /* an operator's drain is not stopped */
	assert_null(node_condition_get(n, "DisruptionAllowed"));
	node_free(n);
	assert_int_equal(count_events(w, "r01n01", "RemediationPausedByBreaker"), 1);
	assert_int_equal(count_events(w, "r01n01", "Draining"), 0);
	assert_int_equal(count_events(w, "r01n02", "RemediationPausedByBreaker"), 0);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 0);
	/* a human resets it: the node goes on by itself */
	reset_breaker(w, "rack.r01");
	assert_true(run_until_phase(w, 1, PHASE_REPAIRING, 1 * MIN_MS) >= 0);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) >= 0);
	n = get_node(w, "r01n01");
	assert_int_equal(n->nholds, 0);
	assert_null(node_condition_get(n, "DisruptionAllowed"));
	assert_int_equal(n->nremediation_history, 1);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	node_free(n);
	assert_int_equal(count_events(w, "r01n01", "RemediationPausedByBreaker"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 1);
	world_free(w);
}

/* The breaker also stops the next rung: r01n01 (label nvlink_domain=nvl-a) is repairing, its
 * gpu_reset validation fails while breaker nvlink_domain.nvl-a is open: it stays in repairing
 * without starting reboot until the breaker is gone. A breaker of another value (nvl-b) or
 * domain value (rack r02) does not apply. */
static void test_breaker_stops_next_rung(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	put_label(w, "r01n01", "nvlink_domain", "nvl-a");
	put_breaker(w, "nvlink_domain", "nvl-b");
	put_breaker(w, "rack", "r02");
	budget_svc_invalidate(harness_budget(w->hn));
	static const enum remediation_rung ladder[] = {RUNG_GPU_RESET, RUNG_REBOOT};
	place_remediation(w, "r01n01", ladder, 2, NULL);
	w->hn->fail_validations = 1;
	assert_true(run_until_phase(w, 1, PHASE_VALIDATING, 30 * MIN_MS) >= 0);
	put_breaker(w, "nvlink_domain", "nvl-a");
	budget_svc_invalidate(harness_budget(w->hn));
	assert_true(run_until_phase(w, 1, PHASE_REPAIRING, 60 * MIN_MS) >= 0);
	harness_idle(w->hn, 30 * MIN_MS);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(n->phase, PHASE_REPAIRING);
	assert_null(n->operation);
	assert_int_equal(n->remediation.rung, 1);
	const struct node_condition *c = cond(n, "DisruptionAllowed");
	assert_string_equal(c->reason, "BreakerOpen");
	assert_string_equal(c->message,
			    "correlated-failure breaker nvlink_domain.nvl-a is open since "
			    "2026-11-30T10:00:00.000Z; automatic health actions wait for its reset "
			    "(POST /v1/breakers/nvlink_domain.nvl-a:reset)");
	node_free(n);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 0);
	assert_int_equal(count_events(w, "r01n01", "RemediationPausedByBreaker"), 1);
	reset_breaker(w, "nvlink_domain.nvl-a");
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) >= 0);
	n = get_node(w, "r01n01");
	assert_int_equal(n->nholds, 0);
	assert_int_equal(n->remediation_history[0].rung, RUNG_REBOOT);
	assert_string_equal(n->remediation_history[0].result, "succeeded");
	node_free(n);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "gpu_reset"), 1);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 1);
	world_free(w);
}

/* Reads /rmas/<the node's remediation.rma> (caller frees). */
static json_t *get_rma(struct world *w, const char *name)
{
	struct node *n = get_node(w, name);
	assert_non_null(n->remediation.rma);
	char key[128];
	snprintf(key, sizeof(key), "/rmas/%s", n->remediation.rma);
	node_free(n);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, key, &kv), 0);
	json_t *rma = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &rma, NULL, 0), 0);
	store_kv_release(&kv);
	return rma;
}

/* An RMA reached after failed rungs carries their last outputs: ladder gpu_reset, reboot, rma
 * with every burn-in failing. The evidence lists the four operations of this remediation
 * (oldest first: gpu_reset succeeded and its validation failed, reboot succeeded and its
 * validation failed) with the errors, the last validation (boot r01n01-2, the reboot's, failed),
 * and - 1001 health events stored for the node - counts capped at 1000 with countsTruncated. */
static void test_remediation_rma_last_outputs(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	for (int i = 0; i < 1001; i++) {
		char key[64];
		snprintf(key, sizeof(key), "/healthevents/r01n01/k-%04d", i);
		assert_int_equal(store_put(w->store, key,
					   "{\"kind\":\"HealthEvent\",\"node\":\"r01n01\","
					   "\"source\":\"kernel\",\"code\":\"xid:79\"}",
					   STORE_ABSENT, NULL),
				 0);
	}
	static const enum remediation_rung ladder[] = {RUNG_GPU_RESET, RUNG_REBOOT, RUNG_RMA};
	place_remediation(w, "r01n01", ladder, 3, "r01n01.k-0000");
	w->hn->fail_validations = 100;
	assert_true(run_until_phase(w, 1, PHASE_FAILED, 240 * MIN_MS) >= 0);
	json_t *rma = get_rma(w, "r01n01");
	assert_int_equal(json_integer_value(jsonx_path(rma, "evidence.counts.xid:79")), 1000);
	assert_true(json_is_true(jsonx_path(rma, "evidence.countsTruncated")));
	json_t *ops = jsonx_path(rma, "evidence.operations");
	assert_int_equal(json_array_size(ops), 4);
	static const char *const kinds[] = {"gpu_reset", "validate", "reboot", "validate"};
	static const char *const states[] = {"succeeded", "failed", "succeeded", "failed"};
	static const char *const errors[] = {
		NULL,
		"step wait_burn_in attempt 1: burn-in validation of boot r01n01-1 reported failure",
		NULL,
		"step wait_burn_in attempt 1: burn-in validation of boot r01n01-2 reported failure"};
	for (size_t i = 0; i < 4; i++) {
		json_t *o = json_array_get(ops, i);
		assert_string_equal(jsonx_str(o, "kind"), kinds[i]);
		assert_string_equal(jsonx_str(o, "state"), states[i]);
		assert_int_equal(strncmp(jsonx_str(o, "id"), kinds[i], strlen(kinds[i])), 0);
		if (errors[i])
			assert_string_equal(jsonx_str(o, "lastError"), errors[i]);
		else
			assert_null(jsonx_str(o, "lastError"));
		assert_non_null(jsonx_str(o, "finishedAt"));
	}
	assert_true(json_is_false(jsonx_path(rma, "evidence.operationsTruncated")));
	assert_true(json_is_false(jsonx_path(rma, "evidence.validation.passed")));
	assert_string_equal(jsonx_str(rma, "evidence.validation.bootId"), "r01n01-2");
	/* the validation was recorded when the last validate operation ended */
	assert_string_equal(jsonx_str(rma, "evidence.validation.validatedAt"),
			    jsonx_str(json_array_get(ops, 3), "finishedAt"));
	json_t *hist = jsonx_path(rma, "evidence.remediationHistory");
	assert_int_equal(json_array_size(hist), 0); /* history is appended when the ladder ends */
	json_decref(rma);
	world_free(w);
}

/* nodes of r01 counted unavailable now (core/budget.h rule), from the store */
static int rack_out(struct world *w, int n)
{
	int c = 0;
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "r01n%02d", i + 1);
		struct node *nd = get_node(w, name);
		c += budget_node_unavailable(nd);
		node_free(nd);
	}
	return c;
}

static int max_out, checked_nodes;

/* The harness's `each`: the budget invariant checked after every reconcile and every step task
 * (and every timer step). */
static void check_budget(void *arg)
{
	int o = rack_out(arg, checked_nodes);
	max_out = o > max_out ? o : max_out;
}

static void test_budget_rack_one_at_a_time(void **state)
{
	struct world *w = world_new(0, 0, 0);
	enroll(w, 10);
	assert_true(run_until_phase(w, 10, PHASE_AVAILABLE, 120 * MIN_MS) > 0);
	assert_int_equal(
		store_put(w->store, "/budgets/rack-1",
			  "{\"kind\":\"DisruptionBudget\",\"metadata\":{\"name\":\"rack-1\"},"
			  "\"spec\":{\"domain\":\"rack\",\"maxUnavailable\":1}}",
			  STORE_ABSENT, NULL),
		0);
	budget_svc_invalidate(harness_budget(w->hn));
	static const enum remediation_rung ladder[] = {RUNG_REBOOT};
	static const char *const held[] = {"r01n02", "r01n04", "r01n06", "r01n08"};
	for (int i = 0; i < 4; i++)
		place_remediation(w, held[i], ladder, 1, NULL);
	max_out = 0;
	checked_nodes = 10;
	w->hn->each = check_budget;
	w->hn->each_arg = w;
	harness_pump(w->hn);
	/* one admitted, three waiting with the reason */
	int waiting = 0;
	for (int i = 0; i < 4; i++) {
		struct node *n = get_node(w, held[i]);
		const struct node_condition *c = node_condition_get(n, "DisruptionAllowed");
		if (c) {
			assert_int_equal(c->status, COND_FALSE);
			assert_string_equal(c->reason, "BudgetExhausted");
			assert_non_null(strstr(c->message, "budget rack-1: rack r01 has 1 of max 1 "
							   "unavailable ("));
			assert_int_equal(n->phase, PHASE_AVAILABLE);
			waiting++;
		}
		node_free(n);
	}
	assert_int_equal(waiting, 3);
	assert_int_equal(count_docs(w, "/events/", "reason", "DisruptionBudgetExhausted"), 3);
	json_t *st = budget_svc_status(harness_budget(w->hn), "rack-1");
	assert_int_equal(json_integer_value(
				 jsonx_path(st, "domains")
					 ? json_object_get(json_array_get(jsonx_path(st, "domains"),
									  0),
							   "remaining")
					 : NULL),
			 0);
	json_decref(st);
	/* run to the end, one timer at a time, checking after every reconcile and step */
	int64_t t0 = clock_now_ms(w->clock);
	for (;;) {
		harness_pump(w->hn);
		int done = 0;
		for (int i = 0; i < 4; i++) {
			struct node *n = get_node(w, held[i]);
			done += n->phase == PHASE_AVAILABLE && n->nholds == 0;
			node_free(n);
		}
		if (done == 4)
			break;
		int64_t at = 0;
		assert_int_equal(clock_virtual_next_timer(w->clock, &at), 0);
		assert_true(at - t0 < 600 * MIN_MS);
		harness_advance(w->hn, at);
	}
	assert_int_equal(max_out, 1);
	for (int i = 0; i < 4; i++) {
		struct node *n = get_node(w, held[i]);
		assert_null(node_condition_get(n, "DisruptionAllowed"));
		assert_int_equal(n->nremediation_history, 1);
		node_free(n);
	}
	/* each waited once: no event per retry */
	assert_int_equal(count_docs(w, "/events/", "reason", "DisruptionBudgetExhausted"), 3);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 4);
	world_free(w);
}

static void test_operator_drain_not_budget_remediation(void **state)
{
	/* an operator hold without status.remediation rests in maintenance (no rung runs) */
	struct world *w = world_new(0, 0, 0);
	enroll(w, 1);
	assert_true(run_until_phase(w, 1, PHASE_AVAILABLE, 60 * MIN_MS) > 0);
	struct node *n = get_node(w, "r01n01");
	assert_int_equal(node_hold_add(n, "operator:alice", "kernel upgrade",
				       clock_wall_ms(w->clock), 0),
			 0);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc);
	assert_int_equal(store_put(w->store, "/nodes/r01n01", val, n->resource_version, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
	assert_true(run_until_phase(w, 1, PHASE_MAINTENANCE, 30 * MIN_MS) >= 0);
	assert_int_equal(count_docs(w, "/operations/", "spec.kind", "reboot"), 0);
	assert_int_equal(counter(w, "r01n01", "powerOff"), 0);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_onboarding_reaches_available),
		cmocka_unit_test(test_onboarding_store_writes),
		cmocka_unit_test(test_onboarding_store_reads),
		cmocka_unit_test(test_ryw_note_dropped_after_cache_caught_up),
		cmocka_unit_test(test_deterministic_for_a_seed),
		cmocka_unit_test(test_drain_resume),
		cmocka_unit_test(test_retire),
		cmocka_unit_test(test_adopted_node_skips_provisioning),
		cmocka_unit_test(test_crash_mid_provisioning_exactly_once),
		cmocka_unit_test(test_bmc_faults_still_converge),
		cmocka_unit_test(test_lost_callback_deadline),
		cmocka_unit_test(test_wall_clock_steps_leave_deadlines),
		cmocka_unit_test(test_provision_order_sim),
		cmocka_unit_test(test_power_off_then_on),
		cmocka_unit_test(test_power_queued_behind_provision),
		cmocka_unit_test(test_cancelled_queued_power_never_runs),
		cmocka_unit_test(test_power_unknown_is_not_off),
		cmocka_unit_test(test_step_retry_backs_off),
		cmocka_unit_test(test_learned_quirks_recorded_once),
		cmocka_unit_test(test_auth_failure_fails_at_once),
		cmocka_unit_test(test_cycle_reads_after_settling),
		cmocka_unit_test(test_cycle_with_lost_answer_not_resent),
		cmocka_unit_test(test_retire_cancels_waiting_step),
		cmocka_unit_test(test_resume_waits_for_power),
		cmocka_unit_test(test_breaker_opens_waits_closes),
		cmocka_unit_test(test_retry_after_waits_without_an_attempt),
		cmocka_unit_test(test_retire_cancels_queued_power),
		cmocka_unit_test(test_invalid_spec_parks),
		cmocka_unit_test(test_credentials_unavailable_parks),
		cmocka_unit_test(test_retire_skip_power_off_parked),
		cmocka_unit_test(test_retire_skip_power_off_queued),
		cmocka_unit_test(test_reset_of_an_off_machine_fails),
		cmocka_unit_test(test_remediation_reboot_to_available),
		cmocka_unit_test(test_network_boot_plan),
		cmocka_unit_test(test_network_boot_deploy_failed),
		cmocka_unit_test(test_remediation_gpu_reset_by_sim_agent),
		cmocka_unit_test(test_remediation_gpu_reset_sim_speed_zero),
		cmocka_unit_test(test_remediation_old_burn_in_not_taken),
		cmocka_unit_test(test_remediation_validation_fails_once),
		cmocka_unit_test(test_remediation_ladder_exhausted),
		cmocka_unit_test(test_remediation_rma),
		cmocka_unit_test(test_remediation_rma_last_outputs),
		cmocka_unit_test(test_remediation_keeps_operator_hold),
		cmocka_unit_test(test_breaker_stops_health_drain),
		cmocka_unit_test(test_breaker_stops_next_rung),
		cmocka_unit_test(test_budget_rack_one_at_a_time),
		cmocka_unit_test(test_operator_drain_not_budget_remediation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
