/* harness.h - the one test world of the unit suites, on top of the fleet assembly
 * (fleet/fleet.h) run stepped: a mem: store, a virtual clock, a simulated machine room
 * (bmc_sim) whose agent calls back into the fleet as the real agent does through the API, and a
 * fleet over them that a test can bring down (a control-plane crash: every in-memory part
 * freed, queued steps dropped) and up again while the store, the clock and the machines stay.
 *
 * Use: harness_new(&cfg), add drivers of your own to h->drivers (built on h->sim if you like),
 * then harness_up(h); harness_pump / harness_advance / harness_run_until move the world;
 * harness_free at the end. Every failure is a cmocka assertion. */
#ifndef TESTS_HARNESS_H
#define TESTS_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "driver/bmc.h"
#include "driver/bmc_sim.h"
#include "fleet/fleet.h"

struct breaker;
struct store;
struct fp_clock;
struct lifecycle;
struct health;
struct budget_svc;
struct cache;

struct harness_config {
	int64_t start_wall_ms; /* the virtual clock's wall time at 0 (0 = 1796000000000, 2026-11-30T00:53:20Z) */
	uint64_t rng_seed; /* the fleet's random numbers (0 = 42) */
	unsigned parts;    /* FLEET_* (0 = FLEET_CACHE|FLEET_LIFECYCLE|FLEET_HEALTH) */
	/* the simulated machines (bmc_sim_config): */
	double sim_speed; /* 0 = every boot, reset and burn-in at once */
	uint64_t fault_seed;
	double fault_rate;
	unsigned fault_kinds;
	/* BMC limits: 0 = one command per BMC, 20 per second per site, burst 20 */
	double site_qps;
	int64_t site_burst;
	int bmc_concurrency;
};

/* An agent callback that arrived while the fleet was down: delivered at the next harness_up, as
 * a deploy agent retries its heartbeat. */
struct harness_notice {
	char node[64];
	enum bmc_sim_notice what;
	char boot_id[64];
	int passed;
};

#define HARNESS_MAX_PENDING 256

struct harness {
	struct harness_config cfg;
	struct store *store;
	struct fp_clock *clock;
	struct bmc *sim; /* the machines; their driver is "sim" */
	/* the drivers the fleet's lifecycle calls (ndrivers 0 at harness_up = just sim); borrowed,
	 * freed by the test */
	struct bmc *drivers[FLEET_MAX_DRIVERS];
	size_t ndrivers;
	struct breaker *breaker; /* borrowed by the fleet when set before harness_up */
	struct fleet *fleet;     /* NULL while down */
	/* burn-in reports delivered as failed while > 0 (then decremented) */
	int fail_validations;
	struct harness_notice pending[HARNESS_MAX_PENDING];
	size_t npending;
	/* called after every unit of work harness_pump runs, and after each timer step */
	void (*each)(void *arg);
	void *each_arg;
	/* the fleet's scheduler slot (fleet_config.scheduler), set before harness_up; borrowed */
	const struct fleet_scheduler *scheduler;
};

/* A world with its machines, not yet up. Free with harness_free. */
struct harness *harness_new(const struct harness_config *cfg);
/* Builds and starts a fleet over the world (asserting), then delivers pending callbacks. */
void harness_up(struct harness *h);
/* Frees the fleet as a kill -9 would: queued steps dropped unrun. No-op when down. */
void harness_down(struct harness *h);
/* harness_down, then the machines, clock and store. */
void harness_free(struct harness *h);

/* The parts of the running fleet (NULL while down or when the part does not run). */
struct lifecycle *harness_lc(struct harness *h);
struct health *harness_health(struct harness *h);
struct budget_svc *harness_budget(struct harness *h);
struct cache *harness_cache(struct harness *h);

/* Runs everything runnable at this instant (fleet_step); returns the units run. */
int harness_pump(struct harness *h);
/* Moves to the next timer, or to until_ms (now_ms scale), then health sweep and pump
 * (fleet_advance). Returns 1 when a timer was reached before until_ms, else 0. */
int harness_advance(struct harness *h, int64_t until_ms);
/* Lets ms of virtual time pass, timer by timer. */
void harness_idle(struct harness *h, int64_t ms);
/* Pumps and steps timer by timer until pred(h, arg) holds (checked after every pump) or max_ms
 * of virtual time passed or nothing is left to happen. Returns the virtual ms it took, or -1. */
int64_t harness_run_until(struct harness *h, int (*pred)(struct harness *h, void *arg), void *arg,
			  int64_t max_ms);

/* Stores an enrolled node: name (also its uid), site, rack, driver, gpu_count 8, phase and
 * phase_since = now; asserting the put. */
void harness_put_node(struct harness *h, const char *name, const char *site, const char *rack,
		      const char *driver, enum node_phase phase);
/* The node as stored (caller frees with node_free); asserts it exists. */
struct node *harness_node(struct harness *h, const char *name);
/* 1 when the stored node is in phase p. */
int harness_phase_is(struct harness *h, const char *name, enum node_phase p);

#endif
