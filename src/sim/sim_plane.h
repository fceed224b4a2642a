/* sim/sim_plane.h - the control plane `fleetplane sim` runs, as the simulation runner sees it: a
 * stepped fleet (fleet/fleet.h) built over the runner's store, virtual clock and simulated
 * machines. The runner (src/sim/) sits beside the fleet assembly in the layers, so it is handed
 * this table by its caller (cmd/cmd_sim.c builds it from fleet_new/fleet_step/fleet_advance);
 * a crash of the control plane is down() then up() over the same store, clock and machines. */
#ifndef FP_SIM_SIM_PLANE_H
#define FP_SIM_SIM_PLANE_H

#include <stddef.h>
#include <stdint.h>

struct store;
struct fp_clock;
struct bmc;
struct health;
struct ratelimit_config;

/* What the plane is built over; all borrowed, they outlive every plane built over them. */
struct sim_plane_config {
	struct store *store;
	struct fp_clock *clock; /* a clock_virtual_new clock */
	struct bmc *driver;     /* the "sim" driver the lifecycle calls */
	uint64_t rng_seed;
	long heartbeat_timeout_s;
	const struct ratelimit_config *bmc_limits;
};

struct sim_plane_ops {
	/* Builds and starts a stepped plane; NULL with err on failure. */
	void *(*up)(const struct sim_plane_config *cfg, char *err, size_t errlen);
	/* Frees it as kill -9 would (queued steps dropped). */
	void (*down)(void *plane);
	/* fleet_step / fleet_advance (fleet.h) */
	int (*step)(void *plane, void (*each)(void *arg), void *arg);
	int (*advance)(void *plane, int64_t until_ms, void (*each)(void *arg), void *arg);
	struct health *(*health)(void *plane);
	/* the agent callbacks (fleet_agent_*) */
	void (*booted)(void *plane, const char *node, const char *boot_id);
	void (*validated)(void *plane, const char *node, const char *boot_id, int passed);
	void (*remediated)(void *plane, const char *node, int succeeded, const char *message);
};

#endif
