/* layers: base core store driver engine controller api agent fleet */
/* test_fleet.c - the fleet assembly (fleet/fleet.h) as serve runs it: a fleet with N simulated
 * nodes at zero sim latency in a fresh data dir, started with its API on an ephemeral port,
 * brings every node from enrolled to available; a second fleet on the same data dir is refused
 * while the first holds serve.lock; stop and free leave no serve.url behind. Stepped fleets (a
 * mem: store and a virtual clock, as `fleetplane sim` and the test harness build them): the
 * scheduler and boot slots start after the controllers with the parts, hear every node change,
 * stop first; a slot that fails to start fails fleet_start; configs that cannot work are
 * refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "core/model.h"
#include "driver/bmc_sim.h"
#include "engine/cache.h"
#include "engine/clock.h"
#include "fleet/fleet.h"
#include "store/store.h"
#include "support/harness.h"

#define NNODES 12

static struct fleet_config config(const char *dir)
{
	struct fleet_config cfg = {.data_dir = dir,
				   .listen = "127.0.0.1:0",
				   .sim_nodes = NNODES,
				   .sim_speed = 0,
				   .workers = 4,
				   .exec_threads = 4,
				   .site_qps = 100,
				   .bmc_concurrency = 1,
				   .bmc_timeout_s = 30,
				   .bmc_breaker_failures = 5};
	return cfg;
}

/* Counts the sim nodes (r01n01..) in phase want. */
static int count_phase(struct cache *c, enum node_phase want)
{
	int n = 0;
	for (int i = 0; i < NNODES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "r%02dn%02d", i / 8 + 1, i % 8 + 1);
		struct node *nd = cache_node_get(c, name);
		if (nd && nd->phase == want)
			n++;
		node_free(nd);
	}
	return n;
}

static void test_sim_fleet_reaches_available(void **state)
{
	char dir[] = "/tmp/test_fleet.XXXXXX", err[512] = "", path[256];
	assert_non_null(mkdtemp(dir));
	struct fleet_config cfg = config(dir);
	struct fleet *f = fleet_new(&cfg, err, sizeof(err));
	assert_non_null(f);
	struct fleet *second = fleet_new(&cfg, err, sizeof(err));
	assert_null(second);
	assert_non_null(strstr(err, "in use by another fleetplane serve"));
	assert_int_equal(fleet_start(f, err, sizeof(err)), 0);
	struct cache *c = fleet_cache(f);
	assert_int_equal(cache_node_count(c), NNODES);
	snprintf(path, sizeof(path), "%s/serve.url", dir);
	assert_int_equal(access(path, F_OK), 0);
	int avail = 0;
	for (int i = 0; i < 1200 && avail < NNODES; i++) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
		avail = count_phase(c, PHASE_AVAILABLE);
	}
	assert_int_equal(avail, NNODES);
	assert_int_equal(count_phase(c, PHASE_ENROLLED), 0);
	assert_int_equal(count_phase(c, PHASE_FAILED), 0);
	fleet_stop(f);
	assert_int_not_equal(access(path, F_OK), 0);
	fleet_free(f);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_missing_data_dir_refused(void **state)
{
	char err[512] = "";
	struct fleet_config cfg = config(NULL);
	assert_null(fleet_new(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "data dir"));
}

/* ---- stepped fleets and their slots ---- */

struct slot_log {
	struct buf log;         /* "sched.start boot.start ..." in call order */
	struct fleet_ctx ctx;   /* what the scheduler was handed */
	int cache_synced;       /* the cache was synced when the scheduler started */
	int changed_r01n01;     /* node_changed("r01n01") calls */
	int changed_other;      /* node_changed for any other name */
	const char *fail_start; /* scheduler start fails with this reason */
};

static const char *slog(const struct slot_log *sl)
{
	return sl->log.data ? sl->log.data : "";
}

static int sched_start(void *arg, const struct fleet_ctx *ctx, char *err, size_t errlen)
{
	struct slot_log *sl = arg;
	buf_puts(&sl->log, "sched.start ");
	sl->ctx = *ctx;
	sl->cache_synced = ctx->cache && cache_synced(ctx->cache);
	if (sl->fail_start) {
		snprintf(err, errlen, "%s", sl->fail_start);
		return -1;
	}
	return 0;
}

static void sched_changed(void *arg, const char *node)
{
	struct slot_log *sl = arg;
	if (strcmp(node, "r01n01") == 0)
		sl->changed_r01n01++;
	else
		sl->changed_other++;
}

static void sched_stop(void *arg)
{
	buf_puts(&((struct slot_log *)arg)->log, "sched.stop ");
}

static int boot_start(void *arg, const struct fleet_ctx *ctx, char *err, size_t errlen)
{
	buf_puts(&((struct slot_log *)arg)->log, "boot.start ");
	return 0;
}

static void boot_stop(void *arg)
{
	buf_puts(&((struct slot_log *)arg)->log, "boot.stop ");
}

static struct fleet_boot boot_slot(struct slot_log *sl)
{
	return (struct fleet_boot){.name = "pxe",
				   .start = boot_start,
				   .stop = boot_stop,
				   .arg = sl};
}

/* A stepped fleet over the harness's store, clock and sim machines with the two slots. */
static struct fleet_config slot_config(struct harness *h, const struct fleet_scheduler *sched,
				       const struct fleet_boot *boot)
{
	return (struct fleet_config){.store = h->store,
				     .clock = h->clock,
				     .stepped = 1,
				     .parts = FLEET_CACHE | FLEET_LIFECYCLE | FLEET_HEALTH,
				     .drivers = {h->sim},
				     .ndrivers = 1,
				     .scheduler = sched,
				     .boot = boot};
}

static void test_slots_start_after_controllers_and_stop_first(void **state)
{
	struct harness *h = harness_new(NULL);
	struct slot_log sl = {0};
	buf_init(&sl.log, 0);
	const struct fleet_scheduler sched = {.name = "slurm",
					      .start = sched_start,
					      .node_changed = sched_changed,
					      .stop = sched_stop,
					      .arg = &sl};
	const struct fleet_boot boot = boot_slot(&sl);
	struct fleet_config cfg = slot_config(h, &sched, &boot);
	char err[512] = "";
	struct fleet *f = fleet_new(&cfg, err, sizeof(err));
	assert_non_null(f);
	assert_string_equal(slog(&sl), "");
	assert_int_equal(fleet_start(f, err, sizeof(err)), 0);
	h->fleet = f; /* the sim's agent reports to this fleet */
	assert_string_equal(slog(&sl), "sched.start boot.start ");
	assert_ptr_equal(sl.ctx.store, h->store);
	assert_ptr_equal(sl.ctx.clock, h->clock);
	assert_ptr_equal(sl.ctx.cache, fleet_cache(f));
	assert_ptr_equal(sl.ctx.lc, fleet_lifecycle(f));
	assert_ptr_equal(sl.ctx.budget, fleet_budget(f));
	assert_non_null(sl.ctx.lc);
	assert_int_equal(sl.cache_synced, 1);

	/* an enrolled node: the scheduler hears of it as the cache applies it, and again as the
	 * lifecycle moves it on (virtual time, sim at zero latency) */
	harness_put_node(h, "r01n01", "site-a", "r01", "sim", PHASE_ENROLLED);
	assert_int_equal(sl.changed_r01n01, 0);
	assert_true(fleet_step(f, NULL, NULL) > 0);
	assert_true(sl.changed_r01n01 >= 2);
	assert_int_equal(sl.changed_other, 0);
	int before = sl.changed_r01n01;
	while (fleet_advance(f, clock_now_ms(h->clock) + 3600 * 1000LL, NULL, NULL) == 1)
		;
	struct node *n = harness_node(h, "r01n01");
	assert_string_equal(node_phase_name(n->phase), "available");
	node_free(n);
	assert_true(sl.changed_r01n01 > before);

	h->fleet = NULL;
	fleet_stop(f);
	assert_string_equal(slog(&sl), "sched.start boot.start boot.stop sched.stop ");
	fleet_stop(f); /* idempotent: no second stop */
	assert_string_equal(slog(&sl), "sched.start boot.start boot.stop sched.stop ");
	fleet_free(f);
	buf_release(&sl.log);
	harness_free(h);
}

static void test_slot_start_failure_fails_the_fleet(void **state)
{
	struct harness *h = harness_new(NULL);
	struct slot_log sl = {.fail_start = "slurmctld at 127.0.0.1:6817 refused the connection"};
	buf_init(&sl.log, 0);
	const struct fleet_scheduler sched = {.name = "slurm",
					      .start = sched_start,
					      .stop = sched_stop,
					      .arg = &sl};
	const struct fleet_boot boot = boot_slot(&sl);
	struct fleet_config cfg = slot_config(h, &sched, &boot);
	char err[512] = "";
	struct fleet *f = fleet_new(&cfg, err, sizeof(err));
	assert_non_null(f);
	assert_int_equal(fleet_start(f, err, sizeof(err)), -1);
	assert_string_equal(err, "cannot start the scheduler backend slurm: slurmctld at "
				 "127.0.0.1:6817 refused the connection");
	/* the boot service never started; the scheduler that failed is not stopped */
	fleet_free(f);
	assert_string_equal(slog(&sl), "sched.start ");
	buf_release(&sl.log);
	harness_free(h);
}

static void test_bad_configs_refused_by_name(void **state)
{
	struct harness *h = harness_new(NULL);
	char err[512] = "";
	/* stepped needs the caller's virtual clock */
	struct fleet_config cfg = {.store = h->store, .stepped = 1, .parts = FLEET_HEALTH};
	assert_null(fleet_new(&cfg, err, sizeof(err)));
	assert_string_equal(err, "fleet: a stepped fleet needs a virtual clock and no API");
	/* the lifecycle reads nodes from the cache */
	cfg = (struct fleet_config){.store = h->store,
				    .clock = h->clock,
				    .stepped = 1,
				    .parts = FLEET_LIFECYCLE | FLEET_HEALTH};
	assert_null(fleet_new(&cfg, err, sizeof(err)));
	assert_string_equal(err, "fleet: the lifecycle needs the cache (FLEET_CACHE)");
	/* fleet_step and fleet_advance are for stepped fleets only */
	cfg = (struct fleet_config){.store = h->store, .clock = h->clock, .parts = FLEET_HEALTH};
	struct fleet *f = fleet_new(&cfg, err, sizeof(err));
	assert_non_null(f);
	assert_int_equal(fleet_step(f, NULL, NULL), FP_EINVAL);
	assert_int_equal(fleet_advance(f, 0, NULL, NULL), FP_EINVAL);
	fleet_free(f);
	harness_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sim_fleet_reaches_available),
		cmocka_unit_test(test_missing_data_dir_refused),
		cmocka_unit_test(test_slots_start_after_controllers_and_stop_first),
		cmocka_unit_test(test_slot_start_failure_fails_the_fleet),
		cmocka_unit_test(test_bad_configs_refused_by_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
