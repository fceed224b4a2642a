/* lifecycle_int.h - private interface of the lifecycle controller's three files:
 * lifecycle.c (reconcile, the steps and the step tasks on the executor), lifecycle_remediation.c
 * (the health remediation ladder: the rung steps request_gpu_reset, wait_agent_action and
 * open_rma, disruption budget gating, the choice of the next rung, the end of a rung and of its
 * validation, the agent's answer to a GPU reset) and lifecycle_runtime.c (store reads, the
 * commit of a node with its operations and events, phase transitions, the operation queue).
 * Calls go lifecycle.c -> lifecycle_remediation.c -> lifecycle_runtime.c, never back.
 * Nothing outside src/controller/lifecycle*.c includes it; the public interface is
 * lifecycle.h. Each function's full comment is at its definition. */
#ifndef FP_CONTROLLER_LIFECYCLE_INT_H
#define FP_CONTROLLER_LIFECYCLE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/hmap.h"
#include "base/metrics.h"
#include "controller/lifecycle.h"
#include "core/model.h"

#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

enum step_result {
	STEP_DONE,
	STEP_WAIT,
	STEP_RETRY,
	STEP_FAIL,
	STEP_BUSY
};

#define DELTA_MAX_EVENTS 4

/* Status observations a task's steps made (conditions, inventory, learned BMC quirks, breaker
 * transitions); written to the node in one update, with their events, when the task ends
 * instead of one write per observation. */
struct status_delta {
	const char *types[8]; /* condition types touched; static strings */
	size_t ntypes;
	int inventory;
	unsigned quirks; /* BMC_QUIRK_* a driver reported learning */
	struct {
		const char *type, *reason; /* static strings */
		char msg[256];
	} ev[DELTA_MAX_EVENTS];
	size_t nev;
};

struct step_ctx {
	struct lifecycle *lc;
	struct status_delta *delta;
	struct node *n; /* fresh from the store */
	struct operation *op;
	struct bmc *bmc;
	struct bmc_target t;
	int64_t call_deadline;   /* monotonic ms for BMC calls */
	int64_t wait_ms;         /* STEP_WAIT / STEP_BUSY: when to look again */
	struct bmc_observed obs; /* zeroed before each step; x.t.observed points here */
	int bmc_answered;        /* a BMC call returned (0 or an answer other than timeout/EIO) */
	int bmc_down;            /* a BMC call timed out or could not connect */
	int save_on_busy;        /* STEP_BUSY that must persist the step's deadline */
	char err[256];
};

struct lifecycle {
	struct lifecycle_config cfg;
	struct workqueue *wq;
	pthread_mutex_t mu;
	struct hmap in_flight; /* node name -> (void*)1 while a step task is queued or running */
	/* Set by lifecycle_stop: step tasks still queued in the executor end without running a
	 * step (the operation is durable and resumes at the next start), so a stop waits for the
	 * steps in flight, not for a queue of BMC timeouts. */
	atomic_int stopping;
	struct hmap retry_at;      /* node name -> int64_t* monotonic ms before which a failed
				* phase's operation is not started again (backoff) */
	struct hmap step_retry_at; /* node name -> int64_t* monotonic ms before which the
				    * retry of its operation's failed step is not run (the 1 s,
				    * 2 s, 4 s ... backoff); the save of the retried operation
				    * re-queues the node at once, this holds it back */
	struct hmap bmc_quiet;     /* BMC key -> int64_t* monotonic ms before which the BMC is not
				* called: it answered with Retry-After (at most BMC_QUIET_MAX) */
	pthread_t *threads;
	int nthreads;
	struct hmap waiting; /* node name -> (void*)1 while it waits for a disruption budget */
	/* node name -> struct lifecycle_mono*: the monotonic instant a stored wall-clock instant
	 * (phase_since, the operation's step_deadline) stood for when this process first saw it,
	 * so that a step of the wall clock neither fires nor stretches a deadline (issue 16). */
	struct hmap mono_phase, mono_step;
	/* Read your own writes (lifecycle_node_current, lifecycle_op_current): node name ->
	 * struct node*, operation id -> struct operation*, as this controller last wrote (or read
	 * from the store) them, kept while the informer cache has not reached that revision; a
	 * NULL value: the outcome of a write is unknown, read the store. Under mu. */
	struct hmap ryw_nodes, ryw_ops;
	size_t ryw_sweep_at; /* sweep both maps once they hold this many entries */
	struct metric_family *m_ops, *m_op_dur, *m_reconcile, *m_reconcile_total, *m_phase_changes;
	struct metric_family *m_remediations;
};

/* Wall-clock ms from the controller's clock (virtual in tests). */
static inline int64_t now_wall(struct lifecycle *lc)
{
	return clock_wall_ms(lc->cfg.clock);
}

/* The actor of the lifecycle controller's events and operations. */
#define LIFECYCLE_ACTOR "controller:lifecycle"

/* ---- lifecycle_runtime.c (called by both halves; calls neither) */

/* Deadlines run on the monotonic clock while serve runs; the stored instants stay wall-clock
 * ms (they are shown to people, and a restart re-arms each from what is left of it by the wall
 * clock then). lifecycle_step_left returns the monotonic ms left before op's step deadline
 * (negative once past; op->step_deadline must be set), lifecycle_phase_elapsed the monotonic
 * ms n has spent in its phase (n->phase_since must be set). Each translates a stored instant
 * once, at the first look, with the offset between the two clocks then; it is kept per node
 * until the instant changes. Thread-safe (lc->mu). */
int64_t lifecycle_step_left(struct lifecycle *lc, const char *node, const struct operation *op);
int64_t lifecycle_phase_elapsed(struct lifecycle *lc, const struct node *n);
/* Records that the wall instant `wall` of node's step deadline is the monotonic instant `mono`
 * (both read together when the deadline was made), so no later look translates it with a
 * wall clock that has stepped since. */
void lifecycle_mono_step_note(struct lifecycle *lc, const char *node, int64_t wall, int64_t mono);

/* Node and operation documents read straight from the store (caller frees *out); what was
 * read is noted as the newest known copy (lifecycle_node_current). */
int lifecycle_load_node(struct lifecycle *lc, const char *name, struct node **out);
int lifecycle_load_op(struct lifecycle *lc, const char *id, struct operation **out);
/* The newest copy of node `name` this controller knows (caller frees *out): its own last
 * write of it (or store read) while the informer cache has not caught up with that revision,
 * else the cache's copy, else a read of the store. Every write made from it is a
 * compare-and-swap on its resource_version, so a copy that lags another writer's change costs
 * a conflict, never a lost update. Returns 0, or lifecycle_load_node's errors (FP_ENOTFOUND). */
int lifecycle_node_current(struct lifecycle *lc, const char *name, struct node **out);
/* The same for operation `id`. What a step already did (params.acted, the attempt's intent)
 * is judged on it: after this controller's own write the copy is that write, not the
 * informer's older one (a re-run right after a power cycle must see it was sent). Another
 * writer's change (an API cancel) is seen once the informer has it, as a read of the store
 * would see it a moment later: the step's next write then loses its CAS. */
int lifecycle_op_current(struct lifecycle *lc, const char *id, struct operation **out);
/* Notes n (op) as stored at n->resource_version (op->resource_version) by this controller.
 * lifecycle_node_unknown / lifecycle_op_unknown: a write of it failed in a way that may have
 * landed (the next lookup reads the store). */
void lifecycle_note_node(struct lifecycle *lc, const struct node *n);
void lifecycle_note_op(struct lifecycle *lc, const struct operation *op);
void lifecycle_node_unknown(struct lifecycle *lc, const char *name);
void lifecycle_op_unknown(struct lifecycle *lc, const char *id);
/* Frees the notes (lifecycle_free). */
void lifecycle_ryw_release(struct lifecycle *lc);
/* One transaction: the node (CAS), a finished operation, an event (operations are started by
 * lifecycle_transition, through objects_op_start). */
int lifecycle_commit(struct lifecycle *lc, struct node *n, const char *ev_type,
		     const char *ev_reason, const char *ev_msg, const struct operation *done_op);
/* Writes op alone (CAS on its resource_version). */
int lifecycle_save_op(struct lifecycle *lc, struct operation *op);
/* op->params as an object (created when absent); borrowed. */
json_t *lifecycle_op_params(struct operation *op);
/* Appends an event to a status delta. */
void lifecycle_delta_event(struct status_delta *d, const char *type, const char *reason,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
typedef int (*lifecycle_node_mutate_fn)(struct node *n, void *arg);
/* Read-modify-write of a node from the store with CAS retries (8 attempts, then
 * FP_ECONFLICT); mutate returns 1 to write, 0 to skip, < 0 to abort. evs: events written in
 * the same transaction (may be NULL). *out (if not NULL) receives the stored node. */
int lifecycle_update_node_ev(struct lifecycle *lc, const char *name,
			     lifecycle_node_mutate_fn mutate, void *arg, struct node **out,
			     const struct status_delta *evs);
int lifecycle_update_node(struct lifecycle *lc, const char *name, lifecycle_node_mutate_fn mutate,
			  void *arg, struct node **out);
/* Takes the first queued operation id off n's queue (caller owns it), or NULL. */
char *lifecycle_queue_pop(struct node *n);
/* Moves n to phase `to` with its next operation, in one write. */
int lifecycle_transition_x(struct lifecycle *lc, struct node *n, enum node_phase to,
			   const char *op_kind, const char *why, const struct operation *done_op,
			   const struct status_delta *d, const json_t *params);
int lifecycle_transition(struct lifecycle *lc, struct node *n, enum node_phase to,
			 const char *op_kind, const char *why, const struct operation *done_op);

/* Re-queues the nodes waiting for a disruption budget. */
void lifecycle_wake_waiting(struct lifecycle *lc);

/* ---- lifecycle_remediation.c (called by lifecycle.c; calls only the runtime) */

/* Rung steps (lifecycle.c's step table). */
enum step_result lifecycle_step_request_gpu_reset(struct step_ctx *x);
enum step_result lifecycle_step_wait_agent_action(struct step_ctx *x);
enum step_result lifecycle_step_open_rma(struct step_ctx *x);
/* Network-boot steps (lifecycle_boot.c). */
enum step_result lifecycle_step_wait_inspection(struct step_ctx *x);
enum step_result lifecycle_step_wait_deploy(struct step_ctx *x);
enum step_result lifecycle_step_wait_disk_boot(struct step_ctx *x);
/* Records an observed condition on the step's copy of the node (written with the step). */
void lifecycle_step_condition(struct step_ctx *x, const char *type, enum cond_status st,
			      const char *reason, const char *msg);
/* 1: n may be disrupted now; 0: refused, n waits (*rc: the store result of that write). */
int lifecycle_budget_gate(struct lifecycle *lc, struct node *n, const struct operation *done_op,
			  int *rc);
/* 1: every hold of n is the health controller's and n has an active remediation without an
 * RMA - draining it is an automatic health action (the breaker gate applies). */
int lifecycle_health_automatic(const struct node *n);
/* 1: no open correlated-failure breaker of n's domains; 0: one is, n waits (*rc as above). */
int lifecycle_breaker_gate(struct lifecycle *lc, struct node *n, const struct operation *done_op,
			   int *rc);
/* A repairing node with status.remediation and no operation: its next rung, or failed. */
int lifecycle_remediation_next(struct lifecycle *lc, struct node *n);
/* A rung's operation ended. */
int lifecycle_finish_rung(struct lifecycle *lc, struct node *n, const struct operation *op,
			  const struct operation *w, enum remediation_rung rr, const char *why);
/* The validation after a rung ended. */
int lifecycle_finish_remediation_validate(struct lifecycle *lc, struct node *n,
					  const struct operation *op, const struct operation *w,
					  const char *why);

#endif
