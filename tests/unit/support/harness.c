/* harness.c - the shared unit-test world on the stepped fleet assembly (harness.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/jsonx.h"
#include "core/codec.h"
#include "engine/clock.h"
#include "engine/objects.h"
#include "engine/ratelimit.h"
#include "store/store.h"
#include "harness.h"

#define HARNESS_START_WALL 1796000000000LL

static int h_save(void *arg, const char *node, const char *json)
{
	struct harness *h = arg;
	char key[STORE_MAX_KEY + 1];
	snprintf(key, sizeof(key), "/sim/hw/%s", node);
	return store_put(h->store, key, json, STORE_ANY, NULL);
}

static int h_load(void *arg, const char *node, char **json)
{
	struct harness *h = arg;
	char key[STORE_MAX_KEY + 1];
	struct store_kv kv = {0};
	snprintf(key, sizeof(key), "/sim/hw/%s", node);
	*json = NULL;
	if (store_get(h->store, key, &kv) < 0)
		return 0;
	*json = kv.value;
	kv.value = NULL;
	store_kv_release(&kv);
	return 0;
}

static void deliver(struct harness *h, const char *node, enum bmc_sim_notice what,
		    const char *boot_id, int passed)
{
	if (what == BMC_SIM_BOOTED) {
		fleet_agent_booted(h->fleet, node, boot_id);
	} else if (what == BMC_SIM_REMEDIATED) {
		fleet_agent_remediated(h->fleet, node, NULL, passed,
				       passed ? "GPU reset" : "GPU reset failed");
	} else {
		if (h->fail_validations > 0) {
			h->fail_validations--;
			passed = 0;
		}
		fleet_agent_validated(h->fleet, node, boot_id, passed);
	}
}

/* The sim's agent calls back as the real one does through the API; while the fleet is down the
 * callback waits, as a deploy agent retries. */
static void h_notify(void *arg, const char *node, enum bmc_sim_notice what, const char *boot_id,
		     int passed)
{
	struct harness *h = arg;
	if (h->fleet) {
		deliver(h, node, what, boot_id, passed);
		return;
	}
	assert_true(h->npending < HARNESS_MAX_PENDING);
	struct harness_notice *p = &h->pending[h->npending++];
	snprintf(p->node, sizeof(p->node), "%s", node);
	p->what = what;
	snprintf(p->boot_id, sizeof(p->boot_id), "%s", boot_id ? boot_id : "");
	p->passed = passed;
}

struct harness *harness_new(const struct harness_config *cfg)
{
	struct harness *h = xcalloc(1, sizeof(*h));
	if (cfg)
		h->cfg = *cfg;
	if (!h->cfg.start_wall_ms)
		h->cfg.start_wall_ms = HARNESS_START_WALL;
	if (!h->cfg.rng_seed)
		h->cfg.rng_seed = 42;
	if (!h->cfg.parts)
		h->cfg.parts = FLEET_CACHE | FLEET_LIFECYCLE | FLEET_HEALTH;
	char err[256];
	assert_int_equal(store_open("mem:", &h->store, err, sizeof(err)), 0);
	h->clock = clock_virtual_new(h->cfg.start_wall_ms);
	struct bmc_sim_config sc = {.clock = h->clock,
				    .speed = h->cfg.sim_speed,
				    .fault_seed = h->cfg.fault_seed,
				    .fault_rate = h->cfg.fault_rate,
				    .fault_kinds = h->cfg.fault_kinds,
				    .notify = h_notify,
				    .save = h_save,
				    .load = h_load,
				    .arg = h};
	h->sim = bmc_sim_new(&sc);
	return h;
}

void harness_up(struct harness *h)
{
	assert_null(h->fleet);
	struct ratelimit_config rc = {.bmc_max_concurrency = h->cfg.bmc_concurrency
								     ? h->cfg.bmc_concurrency
								     : 1,
				      .site_rate_per_s = h->cfg.site_qps ? h->cfg.site_qps : 20,
				      .site_burst = h->cfg.site_burst ? h->cfg.site_burst : 20};
	struct fleet_config fc = {.parts = h->cfg.parts,
				  .store = h->store,
				  .clock = h->clock,
				  .stepped = 1,
				  .rng_seed = h->cfg.rng_seed,
				  .breaker = h->breaker,
				  .scheduler = h->scheduler,
				  .bmc_limits = &rc};
	if (h->ndrivers) {
		for (size_t i = 0; i < h->ndrivers; i++)
			fc.drivers[i] = h->drivers[i];
		fc.ndrivers = h->ndrivers;
	} else {
		fc.drivers[0] = h->sim;
		fc.ndrivers = 1;
	}
	char err[512];
	struct fleet *f = fleet_new(&fc, err, sizeof(err));
	if (!f)
		fail_msg("fleet_new: %s", err);
	if (fleet_start(f, err, sizeof(err)) < 0)
		fail_msg("fleet_start: %s", err);
	h->fleet = f;
	for (size_t i = 0; i < h->npending; i++)
		deliver(h, h->pending[i].node, h->pending[i].what, h->pending[i].boot_id,
			h->pending[i].passed);
	h->npending = 0;
}

void harness_down(struct harness *h)
{
	struct fleet *f = h->fleet;
	h->fleet = NULL;
	fleet_free(f);
}

void harness_free(struct harness *h)
{
	if (!h)
		return;
	harness_down(h);
	bmc_free(h->sim);
	clock_free(h->clock);
	store_close(h->store);
	free(h);
}

struct lifecycle *harness_lc(struct harness *h)
{
	return h->fleet ? fleet_lifecycle(h->fleet) : NULL;
}

struct health *harness_health(struct harness *h)
{
	return h->fleet ? fleet_health(h->fleet) : NULL;
}

struct budget_svc *harness_budget(struct harness *h)
{
	return h->fleet ? fleet_budget(h->fleet) : NULL;
}

struct cache *harness_cache(struct harness *h)
{
	return h->fleet ? fleet_cache(h->fleet) : NULL;
}

int harness_pump(struct harness *h)
{
	assert_non_null(h->fleet);
	int n = fleet_step(h->fleet, h->each, h->each_arg);
	assert_true(n >= 0);
	return n;
}

int harness_advance(struct harness *h, int64_t until_ms)
{
	assert_non_null(h->fleet);
	int rc = fleet_advance(h->fleet, until_ms, h->each, h->each_arg);
	assert_true(rc >= 0);
	return rc;
}

void harness_idle(struct harness *h, int64_t ms)
{
	int64_t limit = clock_now_ms(h->clock) + ms;
	harness_pump(h);
	while (harness_advance(h, limit))
		;
}

int64_t harness_run_until(struct harness *h, int (*pred)(struct harness *h, void *arg), void *arg,
			  int64_t max_ms)
{
	int64_t t0 = clock_now_ms(h->clock);
	for (;;) {
		harness_pump(h);
		if (pred(h, arg))
			return clock_now_ms(h->clock) - t0;
		int64_t at = 0;
		if (clock_virtual_next_timer(h->clock, &at) < 0 || at - t0 > max_ms)
			return -1; /* nothing left to happen, or out of time */
		harness_advance(h, at);
	}
}

void harness_put_node(struct harness *h, const char *name, const char *site, const char *rack,
		      const char *driver, enum node_phase phase)
{
	char key[STORE_MAX_KEY + 1];
	objects_key_node(key, sizeof(key), name);
	struct node *nd = node_new();
	nd->name = xstrdup(name);
	nd->uid = xstrdup(name);
	nd->site = xstrdup(site);
	nd->rack = xstrdup(rack);
	nd->bmc.driver = xstrdup(driver);
	nd->gpu_count = 8;
	nd->phase = phase;
	nd->phase_since = nd->created_at = clock_wall_ms(h->clock);
	json_t *doc = node_to_json(nd, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc);
	assert_int_equal(store_put(h->store, key, val, STORE_ABSENT, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(nd);
}

struct node *harness_node(struct harness *h, const char *name)
{
	struct node *n = NULL;
	char err[256] = "";
	int rc = objects_store_node(h->store, name, &n, NULL, err, sizeof(err));
	if (rc < 0)
		fail_msg("node %s: %s", name, err);
	return n;
}

int harness_phase_is(struct harness *h, const char *name, enum node_phase p)
{
	struct node *n = harness_node(h, name);
	int is = n->phase == p;
	node_free(n);
	return is;
}
