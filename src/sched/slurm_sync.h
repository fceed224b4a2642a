/* sched/slurm_sync.h - the Slurm backend of the fleet's scheduler slot (issue 10 part 3): keeps
 * Slurm's node states a projection of fleetplane's (DESIGN.md principle 1). Each pass lists
 * Slurm's nodes once, decides every node with slurm_project (sched/slurm_project.h), sends the
 * DRAINs (one call per reason) and RESUMEs (one call) batched, writes imported and released
 * slurm:<user> holds through objects_update_node with their audit events, and keeps the node
 * condition SchedulerInSync. When Slurm cannot be listed (unreachable, or output that does not
 * parse) a pass changes nothing but that condition (False, SlurmUnreachable or
 * SlurmOutputInvalid) and sends nothing.
 *
 * It speaks to Slurm through struct slurm_ops, so the scontrol client (sched/slurm_cli.c) and a
 * test's in-memory Slurm are interchangeable. It is a sched (rank 4) component and cannot name
 * fleet/fleet.h (rank 5): its hooks are plain functions, and fleet/fleet_slurm.h wraps them as
 * a struct fleet_scheduler.
 *
 * When passes run: a full pass every interval_ms, and a pass over the nodes node_changed named
 * debounce_ms after the first of them (a bounded queue; past queue_max names the next pass is a
 * full one). Both are clock timers (base/clock.h), so in a stepped fleet they fire inside
 * fleet_advance, in virtual time, on the caller's thread. A pass blocks on scontrol for seconds,
 * and clock timers must not block, so with cfg.threaded the timers only wake a thread of the
 * backend's own, which runs the passes (`fleetplane serve`); without it the timer runs the pass
 * (stepped fleets and tests, where ops answer at once). */
#ifndef FP_SCHED_SLURM_SYNC_H
#define FP_SCHED_SLURM_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/clock.h"
#include "engine/cache.h"
#include "sched/slurm_job.h"
#include "sched/slurm_node.h"
#include "store/store.h"

/* How the backend speaks to Slurm. Both return 0 or a negative fp_err with a line in err;
 * FP_EPARSE means Slurm answered something that did not parse. */
struct slurm_ops {
	/* Every node Slurm knows, as a new array (*out, *n; caller frees *out with free()). */
	int (*list_nodes)(void *arg, struct slurm_node **out, size_t *n, char *err, size_t errlen);
	/* One `scontrol update NodeName=<names> State=DRAIN|RESUME [Reason=...]` for n >= 1
	 * names: drain 1 = DRAIN with reason, 0 = RESUME (reason NULL). */
	int (*update)(void *arg, const char *const *names, size_t n, int drain, const char *reason,
		      char *err, size_t errlen);
	/* The jobs that hold nodes (sched/slurm_job.h), as a new array (*out, *n; caller frees
	 * with slurm_jobs_free). May be NULL: then status.workload names no jobs. */
	int (*list_jobs)(void *arg, struct slurm_job **out, size_t *n, char *err, size_t errlen);
	/* `scontrol reconfigure`: slurmctld and the slurmds re-read their configuration. May be
	 * NULL (then a changed configuration file is written, not applied). */
	int (*reconfigure)(void *arg, char *err, size_t errlen);
	void *arg;
};

/* The condition a pass keeps on every node, and its reasons. */
#define SLURM_SYNC_CONDITION NODE_COND_SCHEDULER_IN_SYNC
#define SLURM_SYNC_ACTOR "slurm-sync"

/* How the backend reports health events of its own (stuck jobs, below): the fleet wires it to
 * the health controller's report path (controller/health.h health_report, actor
 * SLURM_SYNC_ACTOR) so the health policy decides, with job attribution. report is the report
 * body {"events":[...]} (borrowed); returns 0 or a negative fp_err with err. */
typedef int (*slurm_sync_report_fn)(void *arg, const char *node, const json_t *report,
				    int64_t now_ms, char *err, size_t errlen);

/* Health event codes the backend reports (docs/slurm.md "Stuck jobs"). */
#define SLURM_CODE_COMPLETING_STUCK "slurm:completing_stuck"
#define SLURM_CODE_KILL_TASK_FAILED "slurm:kill_task_failed"

struct slurm_sync_config {
	int64_t interval_ms; /* full pass period; 0 = 30,000 */
	int64_t debounce_ms; /* from a node change to its pass; 0 = 500 */
	size_t queue_max;    /* names queued for the next pass; 0 = 256 */
	int threaded;        /* 1: passes on the backend's own thread (see above) */
	uint64_t rng_seed;   /* audit event ids; 0 = from the OS */
	unsigned max_batch;  /* names in one update call; 0 = 512 */
	/* A job COMPLETING longer than this after its end (squeue %e) is stuck: an event
	 * SLURM_CODE_COMPLETING_STUCK for each fleetplane node of the job. 0 = 600,000 (10 min;
	 * Slurm's own UnkillableStepTimeout default is 60 s, slurm.conf(5)); < 0 = off. */
	int64_t stuck_completing_ms;
	/* The generated configuration (sched/slurm_render.h), kept by every full pass: the
	 * NodeName=/PartitionName= include at nodes_conf and the cluster-wide gres.conf at
	 * gres_conf (absolute paths, borrowed: they must outlive the backend; NULL = not kept).
	 * A file whose content differs is rewritten whole (base/buf.h buf_write_file) and then
	 * ops.reconfigure runs; a failed reconfigure is retried by the next full pass. Slurm
	 * 22.05 takes added or removed NodeNames only when slurmctld and every slurmd restart
	 * (scontrol(1) "reconfigure"): such a change is logged as needing it. */
	const char *nodes_conf;
	const char *gres_conf;
};

/* What one pass did. */
struct slurm_sync_stats {
	int list_rc;   /* list_nodes' result: 0, or why nothing else was done */
	size_t listed; /* Slurm nodes listed */
	size_t nodes;  /* fleetplane nodes decided */
	size_t drained, resumed, imported, released, unsure, absent; /* nodes, by decision */
	size_t update_calls, update_failures;
	size_t writes;         /* nodes written (holds or the condition) */
	size_t stuck_reported; /* stuck-job events handed to the report hook */
	int config_written;    /* the generated configuration changed and was written */
	int reconfigured;      /* ops.reconfigure ran and succeeded */
};

struct slurm_sync;

/* A backend over ops (copied; ops->arg borrowed, must outlive it) with cfg (copied; NULL = all
 * defaults). Not started. Free with slurm_sync_free. */
/* Sets the hook stuck-job events go to (NULL: none are reported); before start. */
void slurm_sync_set_report(struct slurm_sync *s, slurm_sync_report_fn fn, void *arg);
struct slurm_sync *slurm_sync_new(const struct slurm_ops *ops, const struct slurm_sync_config *cfg);
/* Stops it when running, then frees it. NULL is a no-op. */
void slurm_sync_free(struct slurm_sync *s);

/* Starts the timers (and the thread with cfg.threaded) over store, cache and clock (borrowed
 * until slurm_sync_stop returned). Refuses (FP_EINVAL, err) a NULL store, cache or clock and
 * a second start. The first full pass runs at once (delay 0). */
int slurm_sync_start(struct slurm_sync *s, struct store *store, struct cache *cache,
		     struct fp_clock *clock, char *err, size_t errlen);
/* The fleet's node_changed hook (arg: the struct slurm_sync): queues name for the next pass
 * and never blocks on Slurm. A no-op before start and after stop. */
void slurm_sync_node_changed(void *arg, const char *name);
/* Cancels the timers, stops the thread, and waits for a pass in flight. Idempotent. */
void slurm_sync_stop(struct slurm_sync *s);

/* One full pass now, on the caller's thread, at wall time now_ms (hold and condition times):
 * every node in the cache. Needs a started backend (FP_ESTATE otherwise). Returns 0, or
 * list_nodes' code (then only conditions changed), or the first write error; *st (may be NULL)
 * says what was done. Not to be called concurrently with itself on one backend (the timers'
 * passes and this one are serialised by a lock). */
int slurm_sync_run_once(struct slurm_sync *s, int64_t now_ms, struct slurm_sync_stats *st);

/* The stats of the last pass that ran (zeros before the first). */
void slurm_sync_last_stats(struct slurm_sync *s, struct slurm_sync_stats *st);

#endif
