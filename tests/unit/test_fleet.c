/* layers: base core store driver engine controller api agent fleet */
/* test_fleet.c - the fleet assembly (fleet/fleet.h) as serve runs it: a fleet with N simulated
 * nodes at zero sim latency in a fresh data dir, started with its API on an ephemeral port,
 * brings every node from enrolled to available; a second fleet on the same data dir is refused
 * while the first holds serve.lock; stop and free leave no serve.url behind. */
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

#include "core/model.h"
#include "engine/cache.h"
#include "fleet/fleet.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sim_fleet_reaches_available),
		cmocka_unit_test(test_missing_data_dir_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
