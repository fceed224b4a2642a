/* fleet/fleet_slurm.h - the Slurm backend (sched/slurm_sync.h) in the fleet's scheduler slot.
 * sched sits below fleet and cannot name struct fleet_scheduler, so the wrapping is here: start
 * hands the backend the fleet's store, cache and clock, node_changed queues, stop stops.
 *
 * Header-only on purpose: a fleet_slurm.c would put references to sched into every link of the
 * fleet layer, and the unit tests that link fleet without sched would stop linking. */
#ifndef FLEET_FLEET_SLURM_H
#define FLEET_FLEET_SLURM_H

#include <stddef.h>

#include "fleet/fleet.h"
#include "sched/slurm_sync.h"

static inline int fleet_slurm_start_(void *arg, const struct fleet_ctx *ctx, char *err,
				     size_t errlen)
{
	return slurm_sync_start(arg, ctx->store, ctx->cache, ctx->clock, err, errlen);
}

static inline void fleet_slurm_stop_(void *arg)
{
	slurm_sync_stop(arg);
}

/* Fills *out (name "slurm") with hooks over s (borrowed: s and *out must outlive the fleet
 * that runs them; put out in fleet_config.scheduler). */
static inline void fleet_slurm_scheduler(struct slurm_sync *s, struct fleet_scheduler *out)
{
	*out = (struct fleet_scheduler){.name = "slurm",
					.start = fleet_slurm_start_,
					.node_changed = slurm_sync_node_changed,
					.stop = fleet_slurm_stop_,
					.arg = s};
}

#endif
