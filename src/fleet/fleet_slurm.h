/* fleet/fleet_slurm.h - the Slurm backend (sched/slurm_sync.h) in the fleet's scheduler slot.
 * sched sits below fleet and cannot name struct fleet_scheduler, so the wrapping is here: start
 * hands the backend the fleet's store, cache and clock (and, with the health controller, its
 * report path for stuck-job events), node_changed queues, stop stops.
 *
 * Header-only on purpose: a fleet_slurm.c would put references to sched into every link of the
 * fleet layer, and the unit tests that link fleet without sched would stop linking. */
#ifndef FLEET_FLEET_SLURM_H
#define FLEET_FLEET_SLURM_H

#include <stddef.h>

#include "controller/health.h"
#include "fleet/fleet.h"
#include "sched/slurm_sync.h"

/* The backend's stuck-job events into the health controller's report path. */
static inline int fleet_slurm_report_(void *arg, const char *node, const json_t *report,
				      int64_t now_ms, char *err, size_t errlen)
{
	json_t *res = NULL;
	int rc = health_report(arg, node, SLURM_SYNC_ACTOR, report, now_ms, &res, err, errlen);
	json_decref(res);
	return rc;
}

static inline int fleet_slurm_start_(void *arg, const struct fleet_ctx *ctx, char *err,
				     size_t errlen)
{
	if (ctx->health)
		slurm_sync_set_report(arg, fleet_slurm_report_, ctx->health);
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
					.arg = s,
					.keeps_workload = 1};
}

#endif
