/* fleet.h - one fleet assembly: the store, informer cache, budget service, lifecycle and health
 * controllers, housekeeping, BMC drivers (sim, ipmi, redfish), rate limiters, executors and the
 * API server, built, started and stopped in one order. It sits between controller/api/agent and
 * cmd: `fleetplane serve` parses its options into a struct fleet_config and runs one fleet. */
#ifndef FLEET_FLEET_H
#define FLEET_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "api/server.h"

struct fleet;
struct cache;

/* The site sim_nodes creates (racks r01.., nodes r01n01..). */
#define FLEET_SIM_SITE "sim-a"

/* A scheduler backend (Slurm next): hooks the fleet calls; NULL in fleet_config = none.
 * Not called by this version of the fleet; the slot fixes where a backend plugs in. */
struct fleet_scheduler {
	const char *name; /* "slurm"; static */
	void *arg;        /* passed back to every hook; owned by the caller */
};

/* A network boot service (PXE/iPXE next): as fleet_scheduler; NULL = none. */
struct fleet_boot {
	const char *name; /* "pxe"; static */
	void *arg;
};

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
	const struct fleet_scheduler *scheduler; /* NULL = none */
	const struct fleet_boot *boot;           /* NULL = none */
};

/* Builds a fleet from *cfg (copied): checks and locks the data dir (serve.lock, held until the
 * process exits), loads or creates secret.key, opens the store, seals clear-text stored BMC
 * passwords, backfills the BMC index, creates the --sim site, and builds the drivers, limiters,
 * executors, cache, budget service and lifecycle controller (not started). Returns the fleet
 * (free with fleet_free), or NULL with a one-line reason in err (no "error: " prefix; empty when
 * the reason was logged already). */
struct fleet *fleet_new(const struct fleet_config *cfg, char *err, size_t errlen);

/* Starts the fleet: the cache (lists the store), sim machine re-arming, housekeeping, the health
 * controller, the lifecycle, then the API server; writes <data_dir>/serve.url and logs
 * "serve: listening ...". Returns 0, or -1 with the reason in err (then fleet_stop and
 * fleet_free it). */
int fleet_start(struct fleet *f, char *err, size_t errlen);

/* The fleet's informer cache: borrowed, valid from fleet_new to fleet_free (synced once
 * fleet_start returned 0). For tests and in-process callers that read nodes. */
struct cache *fleet_cache(struct fleet *f);

/* Stops the API, the lifecycle and the executors (draining steps in flight); removes serve.url.
 * Idempotent. */
void fleet_stop(struct fleet *f);

/* Stops the fleet if running, then frees everything it owns. NULL is a no-op. */
void fleet_free(struct fleet *f);

#endif
