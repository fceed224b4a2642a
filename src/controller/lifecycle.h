/* lifecycle.h - the lifecycle controller (DESIGN.md "Node phases", principles 2, 3 and 4). It
 * brings nodes enrolled → inspecting → provisioning → validating → available, drains held
 * nodes into maintenance, resumes them, repairs failed validations by a reboot, and retires.
 * A held node with status.remediation (placed by the health controller) is drained into
 * repairing and climbs its ladder: each rung (gpu_reset, reboot, reimage, rma) is an
 * operation, followed by validating; success releases the `health` hold and returns the node
 * to available; an exhausted ladder or an opened RMA leaves it failed. Draining a held node
 * and every rung first ask the disruption budget (lifecycle_config.budget); a refused node
 * waits where it is with condition DisruptionAllowed False.
 *
 * Every side effect is an operation written to the store before it starts; each step is
 * check-then-act, and a side-effecting step's attempt is persisted (with its deadline, in wall
 * time) before the BMC is touched, so after a crash a restart resumes the operation at that
 * step: the check sees what already happened and nothing that must run once runs twice. One
 * node is never operated on by two operations at once (the node's status.operation is the
 * single flight token, written in the same transaction as the operation; the in-process
 * in-flight set keeps two workers off the same node).
 *
 * Reconcile is level-triggered on node name keys from the informer; steps run on the executor.
 * With workers = 0 nothing runs on its own threads: a deterministic test drives it with
 * lifecycle_run_once, an inline executor and a virtual clock. */
#ifndef FP_CONTROLLER_LIFECYCLE_H
#define FP_CONTROLLER_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/clock.h"
#include "base/executor.h"
#include "driver/bmc.h"
#include "engine/breaker.h"
#include "engine/cache.h"
#include "engine/ratelimit.h"
#include "engine/workqueue.h"
#include "store/store.h"

struct secret_key; /* core/secret.h */

#define LIFECYCLE_MAX_DRIVERS 4

struct budget_svc; /* controller/budget.h */

struct lifecycle_config {
	struct store *store;
	struct cache *cache;
	struct fp_clock *clock;
	struct fp_rng *rng;
	struct fp_executor *exec;        /* runs operation steps (blocking BMC calls) */
	struct fp_executor *report_exec; /* records agent reports; NULL = exec */
	struct ratelimit *limits;        /* per BMC and per site; may be NULL */
	struct ratelimit *sim_limits;    /* the same for sim-driver nodes; NULL = limits */
	/* Per-BMC circuit breaker (engine/breaker.h), keyed by spec.bmc.address (the node name
	 * for sim nodes without one); may be NULL. Only FP_ETIMEDOUT and FP_EIO count as
	 * failures. While a BMC's circuit is open its steps do not call it: they wait for the
	 * breaker's next probe, and fail once their step deadline passes. Borrowed. */
	struct breaker *breaker;
	int64_t bmc_call_timeout_ms; /* deadline of one BMC call; 0 = 30 s */
	/* serve's --bmc-credentials-dir: spec.bmc.password_file names a file here, read at each
	 * BMC step by secret_bmc_password (core/secret.h); NULL = password files refused. */
	const char *bmc_credentials_dir;
	/* serve's <data-dir>/secret.key (borrowed; outlives the lifecycle): opens the sealed
	 * spec.bmc.password_sealed inside each BMC step; NULL = sealed passwords cannot be opened
	 * (the step fails CredentialsUnavailable). */
	const struct secret_key *secret_key;
	struct bmc *drivers[LIFECYCLE_MAX_DRIVERS]; /* by ops->name */
	size_t ndrivers;
	int workers;           /* reconcile threads; 0 = driven by lifecycle_run_once */
	double sim_time_scale; /* timeouts of sim nodes are divided by this (>= 1) */
	/* The disruption-budget service (controller/budget.h) asked before a node with holds is
	 * drained out of available/in_service and before each health remediation rung; NULL =
	 * no budgets (everything admitted). Borrowed. */
	struct budget_svc *budget;
	/* 1: a scheduler backend runs (the fleet's scheduler slot, `serve --slurm`) and keeps
	 * status.workload (core/model.h). Then the drain operation's workload_drained step waits
	 * until the workload is drained or absent (never on a lookup failure: a node the backend
	 * has not reported on waits), with the condition WorkloadDrained False JobsRunning naming
	 * the jobs, for at most its 4 h deadline; and the steps that disrupt a running machine
	 * (power off, on-or-cycle, cycle, reset, soft, the GPU reset request) wait while
	 * status.workload says jobs are on the node, unless the operation's params say
	 * "force": true - then they run, with a warning log and WorkloadDrained False Forced.
	 * 0: no scheduler; workload_drained is done at once and nothing waits for jobs. */
	int workload_gate;
	/* Deadline of each network-boot wait (wait_inspection, wait_deploy, wait_disk_boot;
	 * lifecycle_boot.c): serve's --boot-timeout; 0 = 15 min, 30 min and 15 min. */
	int64_t boot_wait_ms;
};

struct lifecycle;

/* Creates the controller; cfg is copied, its pointers borrowed. Registers on the cache. Call
 * before cache_start so the first list enqueues every node. */
struct lifecycle *lifecycle_new(const struct lifecycle_config *cfg);
/* Starts the reconcile workers (if workers > 0). */
int lifecycle_start(struct lifecycle *lc);
/* Stops the queue and joins the workers; steps already on the executor may still finish (their
 * re-queues are ignored). Call before freeing the executor. */
void lifecycle_stop(struct lifecycle *lc);
/* Stops (if not yet) and frees. Free the executor first. NULL is a no-op. */
void lifecycle_free(struct lifecycle *lc);

/* Single-threaded driving: processes one queued key. Returns 1 if a key was processed, 0 if
 * the queue was empty. */
int lifecycle_run_once(struct lifecycle *lc);
/* Number of steps running or queued on the executor right now. */
size_t lifecycle_in_flight(struct lifecycle *lc);
struct workqueue *lifecycle_queue(struct lifecycle *lc);

/* The node's deploy agent called back after booting (boot_id names the boot). Non-blocking:
 * the write runs on the executor. The API's POST /v1/nodes/{name}:booted lands here (and the
 * sim driver's simulated agent). */
void lifecycle_agent_booted(struct lifecycle *lc, const char *node, const char *boot_id);
/* The node's agent reported a burn-in validation result for the boot boot_id. Non-blocking. */
void lifecycle_agent_validated(struct lifecycle *lc, const char *node, const char *boot_id,
			       int passed);

/* What the boot service (boot/boot_server.h) heard from a machine provisioning through the
 * network-boot steps, after it checked the callback's per-attempt token for (node, op_id):
 * LIFECYCLE_BOOT_INSPECTED doc {"inventory": {...}} from the inspection ramdisk;
 * LIFECYCLE_BOOT_DEPLOYED doc {"ok", "sha256", "bytes", "disk", "message"} from the deploy
 * ramdisk; LIFECYCLE_BOOT_DISK_BOOTED doc {"bootId"} from the written system (also recorded as
 * the node's last boot, lifecycle_agent_booted). Each is written once into the operation's
 * params (inspection, deploy, diskBoot) with "at" (wall ms) by a task on the report lane; a
 * repeat, a report for an operation that ended or has gone past the step it is for, or for
 * another node's operation, is ignored (logged). doc is borrowed (copied). Non-blocking. */
enum lifecycle_boot_kind {
	LIFECYCLE_BOOT_INSPECTED = 0,
	LIFECYCLE_BOOT_DEPLOYED = 1,
	LIFECYCLE_BOOT_DISK_BOOTED = 2,
};
void lifecycle_boot_reported(struct lifecycle *lc, const char *node, const char *op_id,
			     enum lifecycle_boot_kind kind, const json_t *doc);

/* The node's agent answered an agent action (today a GPU reset, the gpu_reset remediation
 * rung's wait_agent_action step): op_id names the gpu_reset operation (NULL: the node's
 * current operation, for the sim's agent); succeeded and message (may be NULL; cut to 512
 * bytes) are recorded in the operation's params.remediated, once - a repeat is ignored, as is
 * an answer for an operation that is not a running gpu_reset of this node. Non-blocking: the
 * write runs on the report executor. The API's POST /v1/nodes/{name}:remediated lands here. */
void lifecycle_agent_remediated(struct lifecycle *lc, const char *node, const char *op_id,
				int succeeded, const char *message);

#endif
