/* fleet.h - one fleet assembly: the store, informer cache, budget service, lifecycle and health
 * controllers, housekeeping, BMC drivers (sim, ipmi, redfish), rate limiters, executors and the
 * API server, built, started and stopped in one order. It sits between controller/api/agent and
 * cmd: `fleetplane serve` parses its options into a struct fleet_config and runs one fleet;
 * `fleetplane demo` runs one with serve's defaults in its own process (serve_opts.h). */
#ifndef FLEET_FLEET_H
#define FLEET_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "api/server.h"

struct fleet;
struct cache;

/* The site sim_nodes creates (racks r01.., nodes r01n01..). */
#define FLEET_SIM_SITE "sim-a"

struct store;
struct fp_clock;
struct bmc;
struct breaker;
struct secret_key;
struct ratelimit_config;
struct lifecycle;
struct health;
struct budget_svc;

/* What a scheduler backend or a boot service is handed when the fleet starts: the fleet's
 * parts, all borrowed and valid until the backend's stop hook returned. */
struct fleet_ctx {
	struct store *store;
	struct cache *cache; /* synced; NULL when the fleet runs without one (FLEET_CACHE) */
	struct fp_clock *clock;
	struct lifecycle *lc; /* NULL without FLEET_LIFECYCLE */
	struct budget_svc *budget;
	struct health *health;               /* NULL without FLEET_HEALTH */
	const struct secret_key *secret_key; /* <data-dir>/secret.key (boot tokens); may be NULL */
};

/* A scheduler backend (Slurm next): keeps a workload manager in step with the nodes. The
 * fleet calls start once after its controllers run (a non-zero return fails fleet_start with
 * err), node_changed from the informer cache for every node change it applies (on the cache's
 * thread, or inside fleet_step in a stepped fleet; it must not block: queue and return), and
 * stop first in fleet_stop, before any part it was handed goes away. Any hook may be NULL.
 * The struct and arg are borrowed and must outlive the fleet. */
struct fleet_scheduler {
	const char *name; /* "slurm"; static */
	int (*start)(void *arg, const struct fleet_ctx *ctx, char *err, size_t errlen);
	void (*node_changed)(void *arg, const char *node);
	void (*stop)(void *arg);
	void *arg; /* passed back to every hook; owned by the caller */
	/* 1: the backend keeps status.workload (core/model.h) and SchedulerInSync on every node,
	 * so the lifecycle's workload gate is on (controller/lifecycle.h workload_gate) */
	int keeps_workload;
};

/* A network boot service (boot/boot_server.h through fleet/fleet_boot.h, `serve --boot-listen`): started after the lifecycle, so
 * the machines it boots find a controller to report to, and stopped before it, so no boot is
 * served while the controllers are going away. Hooks and ownership as fleet_scheduler. */
struct fleet_boot {
	const char *name; /* "pxe"; static */
	int (*start)(void *arg, const struct fleet_ctx *ctx, char *err, size_t errlen);
	void (*node_changed)(void *arg, const char *node); /* as fleet_scheduler's */
	void (*stop)(void *arg);
	void *arg;
};

/* The parts a fleet runs (fleet_config.parts; 0 = FLEET_PARTS_SERVE). */
enum {
	FLEET_CACHE = 1 << 0,     /* informer cache and disruption-budget service */
	FLEET_LIFECYCLE = 1 << 1, /* lifecycle controller, BMC drivers, limiters (needs cache) */
	FLEET_HEALTH = 1 << 2,    /* health controller and its breakers */
	FLEET_GC = 1 << 3,        /* housekeeping every minute */
	FLEET_API = 1 << 4,       /* the HTTP API and the process metrics collectors */
	FLEET_PARTS_SERVE = FLEET_CACHE | FLEET_LIFECYCLE | FLEET_HEALTH | FLEET_GC | FLEET_API,
};

#define FLEET_MAX_DRIVERS 4

/* What one fleet runs with: the `fleetplane serve` options (serve's usage text names each).
 * The strings are borrowed and must outlive the fleet. */
struct fleet_config {
	const char *data_dir; /* required: store (sqlite:<data_dir>/fleetplane.db), secret.key,
			       * serve.lock, serve.url */
	const char *cred_dir; /* --bmc-credentials-dir; NULL = <data_dir>/bmc-credentials */
	int new_secret_key;  /* --new-secret-key: make secret.key although sealed passwords exist */
	const char *listen;  /* API address host:port (port 0 = any) */
	long sim_nodes;      /* --sim: simulated nodes to create (0 = none) */
	double sim_speed;    /* --sim-speed: sim time factor; 0 = zero latency */
	uint64_t sim_faults; /* --sim-faults: fault seed; 0 = no faults */
	int workers;         /* lifecycle workers */
	int exec_threads;    /* executor pool threads */
	double site_qps;     /* BMC commands per second per site */
	long bmc_concurrency;                 /* commands in flight per BMC */
	long bmc_min_interval_ms;             /* gap between commands to one BMC */
	long bmc_timeout_s;                   /* deadline of one BMC call */
	long bmc_breaker_failures;            /* consecutive failures that open a BMC's breaker */
	long heartbeat_timeout_s;             /* 0 = 3 x the agent's interval, >= 90 s */
	struct api_report_limit report_limit; /* agent report limits; 0 = default, -1 = off */
	struct api_conn_limits conn_limits;   /* API connection limits; {0} = defaults */
	long metrics_node_series; /* per-node series (engine/node_metrics.h) while the fleet has at
				   * most this many nodes; 0 = the default (10000), -1 = never */
	const struct fleet_scheduler *scheduler; /* NULL = none */
	const struct fleet_boot *boot;           /* NULL = none */
	long boot_wait_ms; /* --boot-timeout: each network-boot wait; 0 = the steps' own */
	struct api_usage_source usage;   /* GET /v1/usage (serve --slurm); usage NULL = none */
	struct api_tenant_hooks tenants; /* GET /v1/tenants/{name} status (serve --slurm) */
	/* --store: the store URI (store.h); NULL = sqlite:<data_dir>/fleetplane.db. store_opened
	 * (may be NULL) is called right after it opens, before the fleet writes anything (serve
	 * fences an etcd store with its leadership there); a negative return fails fleet_new
	 * with err. */
	const char *store_uri;
	int (*store_opened)(void *arg, struct store *s, char *err, size_t errlen);
	void *store_opened_arg;
	/* kube (issue 13): TLS of the API. plain_http 0 and no files: a self-signed pair in
	 * data_dir (api/tls.h); in-process fleets (store set) are always plain http. */
	const char *tls_cert; /* --tls-cert PEM file, or NULL */
	const char *tls_key;  /* --tls-key PEM file, or NULL */
	int plain_http;       /* --plain-http */

	/* In-process fleets (unit-test worlds, `fleetplane sim`). With store set the fleet does
	 * not touch a data dir (no lock, no secret.key, no serve.url; data_dir may be NULL) and
	 * neither seals passwords nor backfills the BMC index (the caller's store is as it wants
	 * it). All borrowed: they outlive the fleet, so a test can free one fleet and build
	 * another over the same store, clock and machines (a control-plane crash). */
	unsigned parts;                /* FLEET_* bits; 0 = FLEET_PARTS_SERVE */
	struct store *store;           /* NULL = sqlite:<data_dir>/fleetplane.db, owned */
	struct fp_clock *clock;        /* NULL = the real clock, owned */
	int stepped;                   /* 1 = single-threaded in virtual time: clock must be a
					 * clock_virtual_new clock; inline executors, no lifecycle
					 * workers, no cache thread, no timer-driven health sweep;
					 * fleet_step and fleet_advance run the controllers */
	uint64_t rng_seed;             /* 0 = seeded from the OS */
	struct secret_key *secret_key; /* opens sealed BMC passwords when store is set */
	struct bmc *drivers[FLEET_MAX_DRIVERS]; /* ndrivers > 0: these instead of the built-in
						 * sim, ipmi and redfish drivers, chosen by
						 * their ops->name; one rate limiter for all */
	size_t ndrivers;
	struct breaker *breaker;                   /* NULL = one from bmc_breaker_failures (none
						 * when that is 0 and store is set) */
	const struct ratelimit_config *bmc_limits; /* NULL = from site_qps, bmc_concurrency
						    * and bmc_min_interval_ms */
};

/* Builds a fleet from *cfg (copied): checks and locks the data dir (serve.lock, held until the
 * process exits), loads or creates secret.key, opens the store, seals clear-text stored BMC
 * passwords, backfills the BMC index, creates the --sim site, and builds the drivers, limiters,
 * executors, cache, budget service and lifecycle controller (not started); with cfg->store set,
 * only the parts (see fleet_config). Returns the fleet
 * (free with fleet_free), or NULL with a one-line reason in err (no "error: " prefix; empty when
 * the reason was logged already). */
struct fleet *fleet_new(const struct fleet_config *cfg, char *err, size_t errlen);

/* Starts the parts the fleet runs, in this order: the cache (lists the store; a stepped fleet
 * applies it once), sim machine re-arming, housekeeping, the health controller, the lifecycle,
 * the scheduler slot, the boot slot, then the API server (writes <data_dir>/serve.url and logs
 * "serve: listening ..."). Returns 0, or -1 with the reason in err (then fleet_stop and
 * fleet_free it). */
int fleet_start(struct fleet *f, char *err, size_t errlen);

/* The fleet's informer cache: borrowed, valid from fleet_new to fleet_free (synced once
 * fleet_start returned 0). For tests and in-process callers that read nodes. */
struct cache *fleet_cache(struct fleet *f);

/* The TCP port the fleet's API is bound to (the port of serve.url; --listen may ask for 0):
 * valid once fleet_start returned 0; 0 without FLEET_API, before fleet_start or after
 * fleet_stop. For in-process callers that drive the API over HTTP (`fleetplane demo`). */
unsigned fleet_port(struct fleet *f);

/* The fleet's parts, borrowed (NULL where the part does not run): valid from fleet_new (health:
 * fleet_start) to fleet_free. */
struct store *fleet_store(struct fleet *f);
struct fp_clock *fleet_clock(struct fleet *f);
struct lifecycle *fleet_lifecycle(struct fleet *f);
struct health *fleet_health(struct fleet *f);
struct budget_svc *fleet_budget(struct fleet *f);

/* What a node's agent says, as the API's agent routes deliver it (DESIGN.md "agent"): into the
 * lifecycle controller, which queues the write (non-blocking). No-ops once the fleet stops or
 * without FLEET_LIFECYCLE. The strings are borrowed for the call. */
void fleet_agent_booted(struct fleet *f, const char *node, const char *boot_id);
void fleet_agent_validated(struct fleet *f, const char *node, const char *boot_id, int passed);
void fleet_agent_remediated(struct fleet *f, const char *node, const char *op_id, int succeeded,
			    const char *message);

/* A stepped fleet (cfg.stepped): runs everything runnable at this virtual instant, on the
 * caller's thread: cache changes applied, lifecycle queue items, executor tasks, over and over
 * until none is left; each(arg) is called after every lifecycle item and task (NULL = none;
 * the scenario tests check invariants there). Returns the units of work run (0 = idle), or
 * FP_EINVAL when the fleet is not stepped. */
int fleet_step(struct fleet *f, void (*each)(void *arg), void *arg);

/* A stepped fleet: moves virtual time to the earliest pending timer, or to until_ms (now_ms
 * scale, clock.h) when no timer is due by then, firing timers on the way; then runs the health
 * sweep (health_tick) and fleet_step. Returns 1 when a timer was reached before until_ms, 0
 * when until_ms was reached (or nothing is pending and until_ms <= now), FP_EINVAL when not
 * stepped. */
int fleet_advance(struct fleet *f, int64_t until_ms, void (*each)(void *arg), void *arg);

/* Stops the scheduler and boot slots, the API, the lifecycle and the executors (a threaded
 * fleet drains steps in flight; a stepped one drops queued tasks unrun, as a kill -9 would);
 * removes serve.url. Idempotent. */
void fleet_stop(struct fleet *f);

/* Stops the fleet if running, then frees everything it owns. NULL is a no-op. */
void fleet_free(struct fleet *f);

/* packaging (issue 15): fleet_set_bmc_limits applies new --site-qps, --bmc-concurrency and
 * --bmc-min-interval (milliseconds) values to the running fleet's BMC rate limiters, computed
 * as fleet_new does (simulated BMCs' site rate scaled by sim_speed); commands in flight keep
 * their slots. For serve's SIGHUP reload. Returns 0, or FP_EINVAL for a fleet without
 * limiters (no FLEET_LIFECYCLE) or whose limits the caller gave (cfg.bmc_limits). Thread-safe. */
int fleet_set_bmc_limits(struct fleet *f, double site_qps, long bmc_concurrency,
			 long bmc_min_interval_ms);

#endif
