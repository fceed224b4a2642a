/* lifecycle.c - the lifecycle controller (see lifecycle.h).
 *
 * Two halves. reconcile(name) runs on a worker: it reads the node from the informer cache and
 * decides - start the next operation (one store transaction: the operation document, the
 * node's new phase and status.operation, an audit event), finish a terminal operation (the
 * phase it leads to, maybe the next operation, an event), or hand the operation's current step
 * to the executor. run_op_task runs on the executor: it re-reads the operation and node from the
 * store, persists the attempt and deadline of a side-effecting step before acting, runs steps
 * until one must wait, and re-queues the node.
 *
 * Durations below are real-world; for nodes on the sim driver they are divided by
 * sim_time_scale, so a simulated fleet can be run fast without changing the logic.
 *
 * The health remediation ladder (rung steps, budget gating, the next rung, the end of a rung
 * and of its validation) is in lifecycle_remediation.c; the step runtime both halves build on
 * (store reads, commits, transitions, the operation queue) is in lifecycle_runtime.c; what the
 * three files share is lifecycle_int.h. This file calls the other two; neither calls it. */
#include "controller/lifecycle.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/timefmt.h"
#include "controller/budget.h"
#include "controller/lifecycle_int.h"
#include "core/codec.h"
#include "core/event.h"
#include "core/secret.h"
#include "engine/objects.h"

#define BMC_CALL_TIMEOUT (30 * SEC)

/* Time-in-phase deadlines (DESIGN.md: every transient phase has one). */
static int64_t phase_deadline(enum node_phase p)
{
	switch (p) {
	case PHASE_INSPECTING: return 15 * MIN;
	case PHASE_PROVISIONING: return 45 * MIN;
	case PHASE_VALIDATING: return 2 * HOUR;
	case PHASE_DRAINING: return 4 * HOUR;
	case PHASE_REPAIRING: return 4 * HOUR;
	case PHASE_RETIRING: return 30 * MIN;
	default: return 0;
	}
}

struct step_def {
	const char *name;
	int persist;     /* persist the attempt and its deadline before running: steps with a
			     * side effect (intent before act) and steps that wait on an outside
			     * party (so a restart resumes the same deadline) */
	int waits;       /* only waits (no side effect): the attempt and deadline are written when
			  * it first returns STEP_WAIT, not before it runs, so a wait that is
			  * already over costs no write; its end needs no record of its own */
	int uses_bmc;    /* take a BMC slot from the rate limiter */
	int disrupts;    /* stops or restarts what runs on the machine: waits while jobs run
			  * (lifecycle_config.workload_gate) */
	int64_t timeout; /* per attempt */
	int max_attempts;
	enum step_result (*run)(struct step_ctx *x);
};

static int finish(struct lifecycle *lc, struct node *n, const struct operation *op, int write_op);

struct op_task {
	struct lifecycle *lc;
	char *node;
	char *op_id;
};

/* ---------------------------------------------------------------- helpers */

static int is_sim(const struct node *n)
{
	return n->bmc.driver && strcmp(n->bmc.driver, "sim") == 0;
}

static int64_t scale(struct lifecycle *lc, const struct node *n, int64_t ms)
{
	if (is_sim(n) && lc->cfg.sim_time_scale > 1)
		return (int64_t)((double)ms / lc->cfg.sim_time_scale);
	return ms;
}

/* A scaled timeout never drops below floor_ms: simulated hardware may be fast, but the control
 * plane itself (a busy queue, a sanitizer build) still needs real time to notice an answer. */
static int64_t scale_timeout(struct lifecycle *lc, const struct node *n, int64_t ms,
			     int64_t floor_ms)
{
	int64_t v = scale(lc, n, ms);
	return v < floor_ms && ms > floor_ms ? floor_ms : v;
}

#define FLOOR_CALL (10 * SEC)
#define FLOOR_STEP (30 * SEC)
#define FLOOR_PHASE (2 * MIN)

static struct bmc *driver_for(struct lifecycle *lc, const char *name)
{
	for (size_t i = 0; name && i < lc->cfg.ndrivers; i++)
		if (strcmp(lc->cfg.drivers[i]->ops->name, name) == 0)
			return lc->cfg.drivers[i];
	return NULL;
}

/* ---------------------------------------------------------------- steps */

/* Records an observed condition on the task's copy of the node; flush_status writes it. */
static void set_condition(struct step_ctx *x, const char *type, enum cond_status st,
			  const char *reason, const char *msg)
{
	if (!node_condition_set(x->n, type, st, reason, msg, now_wall(x->lc)))
		return; /* nothing new */
	struct status_delta *d = x->delta;
	for (size_t i = 0; i < d->ntypes; i++)
		if (strcmp(d->types[i], type) == 0)
			return;
	if (d->ntypes < sizeof(d->types) / sizeof(d->types[0]))
		d->types[d->ntypes++] = type;
}

struct delta_arg {
	const struct node *src;
	const struct status_delta *delta;
	struct status_delta evs; /* the events this write carries */
};

static void quirk_names(unsigned bits, char *out, size_t len)
{
	size_t w = 0;
	out[0] = 0;
	for (unsigned b = 1; b && w < len; b <<= 1)
		if ((bits & b) && *bmc_quirk_name(b)) {
			int k = snprintf(out + w, len - w, "%s%s", w ? ", " : "",
					 bmc_quirk_name(b));
			if (k < 0)
				break;
			w += (size_t)k;
		}
}

static int mutate_apply_delta(struct node *n, void *arg)
{
	struct delta_arg *a = arg;
	int changed = 0;
	a->evs = *a->delta; /* breaker transitions: once, as they happened */
	unsigned learned = a->delta->quirks & ~n->bmc_quirks;
	if (learned) {
		char names[200];
		quirk_names(learned, names, sizeof(names));
		n->bmc_quirks |= learned;
		lifecycle_delta_event(
			&a->evs, "Normal", "BMCQuirkLearned",
			"the %s driver found it needs: %s (kept in status.bmc.quirks)",
			n->bmc.driver ? n->bmc.driver : "?", names);
		changed = 1;
	}
	if (a->evs.nev)
		changed = 1;
	for (size_t i = 0; i < a->delta->ntypes; i++) {
		const struct node_condition *c = node_condition_get(a->src, a->delta->types[i]);
		if (c)
			changed |= node_condition_set(n, c->type, c->status, c->reason, c->message,
						      c->since);
	}
	if (a->delta->inventory && a->src->inventory &&
	    !(n->inventory && json_equal(n->inventory, a->src->inventory))) {
		json_decref(n->inventory);
		n->inventory = json_incref(a->src->inventory);
		free(n->inventory_text); /* a copy that kept it as text (the cache's) */
		n->inventory_text = NULL;
		changed = 1;
	}
	return changed;
}

/* Writes the task's observations to the node; *np is replaced by the node as stored, so
 * later compare-and-swap writes of the task start from it. */
static void flush_status(struct lifecycle *lc, struct node **np, struct status_delta *d)
{
	if (!d->ntypes && !d->inventory && !d->quirks && !d->nev)
		return;
	struct delta_arg *a = xcalloc(1, sizeof(*a));
	a->src = *np;
	a->delta = d;
	struct node *stored = NULL;
	int rc = lifecycle_update_node_ev(lc, (*np)->name, mutate_apply_delta, a, &stored, &a->evs);
	free(a);
	if (rc < 0)
		log_warn("lifecycle: could not record node status node=%s rc=%s", (*np)->name,
			 fp_err_name(rc));
	if (stored) {
		node_free(*np);
		*np = stored;
	}
	memset(d, 0, sizeof(*d));
}

struct delta_op_arg {
	struct delta_arg a;
	struct lifecycle *lc;
	const struct operation *op; /* written in the same transaction, CAS on its version */
};

static int mutate_delta_op(struct node *n, struct objects_txn *tx, void *arg)
{
	struct delta_op_arg *x = arg;
	int changed = mutate_apply_delta(n, &x->a);
	if (changed <= 0)
		return changed;
	char object[STORE_MAX_KEY + 8];
	snprintf(object, sizeof(object), "node/%s", n->name);
	for (size_t i = 0; i < x->a.evs.nev; i++)
		objects_txn_event(tx, now_wall(x->lc), fp_rng_u64(x->lc->cfg.rng),
				  x->a.evs.ev[i].type, LIFECYCLE_ACTOR, object,
				  x->a.evs.ev[i].reason, x->a.evs.ev[i].msg);
	objects_txn_put_op(tx, x->op, x->op->resource_version);
	return 1;
}

/* flush_status, and op's changes (op not NULL: a wait's attempt and deadline) in the same
 * transaction when the status changes too; else op alone (lifecycle_save_op). When the
 * transaction loses to a write of op (a boot report, a cancel), the status is written alone
 * and op is left to the next pass, which reads the operation again. */
static void flush_status_op(struct lifecycle *lc, struct node **np, struct status_delta *d,
			    struct operation *op)
{
	if (!op) {
		flush_status(lc, np, d);
		return;
	}
	if (!d->ntypes && !d->inventory && !d->quirks && !d->nev) {
		lifecycle_save_op(lc, op);
		return;
	}
	struct delta_op_arg *x = xcalloc(1, sizeof(*x));
	x->lc = lc;
	x->a.src = *np;
	x->a.delta = d;
	x->op = op;
	op->updated_at = now_wall(lc);
	struct node *start = NULL;
	lifecycle_node_current(lc, (*np)->name, &start);
	struct objects_update u = {.actor = LIFECYCLE_ACTOR, .max_attempts = 2, .start = start};
	struct node *stored = NULL;
	int rc = objects_update_node(lc->cfg.store, (*np)->name, mutate_delta_op, x, &u, &stored,
				     NULL, 0);
	free(x);
	node_free(start);
	if (rc == 0 && u.revision) {
		op->resource_version = u.revision;
		lifecycle_note_node(lc, stored);
		lifecycle_note_op(lc, op);
		if (stored) {
			node_free(*np);
			*np = stored;
		}
		memset(d, 0, sizeof(*d));
		return;
	}
	node_free(stored);
	if (rc < 0 && rc != FP_ECONFLICT && rc != FP_EEXIST) {
		lifecycle_node_unknown(lc, (*np)->name); /* it may have landed */
		lifecycle_op_unknown(lc, op->id);
	}
	if (rc == 0) { /* the status changed nothing after all */
		lifecycle_save_op(lc, op);
		memset(d, 0, sizeof(*d));
		return;
	}
	flush_status(lc, np, d);
}

/* Before an operation's end is written: the task's observations applied to the node as now
 * stored (read again, so the finishing compare-and-swap starts from the store's version) in
 * memory, to go in the same write as the operation's end and the next phase. The delta is
 * kept (the caller clears it once that write succeeded; otherwise the flush at the end of the
 * task writes it). A delta with events (breaker transitions, a learned quirk) is flushed at
 * once, as before. */
static void absorb_status(struct lifecycle *lc, struct node **np, struct status_delta *d)
{
	if (!d->ntypes && !d->inventory && !d->quirks && !d->nev)
		return;
	struct node *fresh = NULL;
	if (d->nev || d->quirks || lifecycle_node_current(lc, (*np)->name, &fresh) < 0) {
		node_free(fresh);
		flush_status(lc, np, d);
		return;
	}
	struct delta_arg a = {.src = *np, .delta = d};
	mutate_apply_delta(fresh, &a);
	node_free(*np);
	*np = fresh;
}

/* A BMC call failed: record reachability and pick retry, wait or fail. */
static enum step_result bmc_failed(struct step_ctx *x, int rc, const char *what)
{
	char msg[sizeof(x->err)];
	int w = snprintf(msg, sizeof(msg), "%s: ", what);
	if (w > 0 && (size_t)w < sizeof(msg))
		snprintf(msg + w, sizeof(msg) - (size_t)w, "%.*s",
			 (int)(sizeof(msg) - (size_t)w - 1), x->err[0] ? x->err : fp_err_msg(rc));
	memcpy(x->err, msg, sizeof(msg));
	if (rc == FP_ETIMEDOUT || rc == FP_EIO) {
		x->bmc_down = 1;
		x->bmc_answered = 0;
		set_condition(x, "BMCReachable", COND_FALSE,
			      rc == FP_ETIMEDOUT ? "Timeout" : "Unreachable", msg);
		return STEP_RETRY;
	}
	x->bmc_answered = 1;
	x->bmc_down = 0;
	if (rc == FP_EAGAIN && x->obs.retry_after_ms > 0) {
		/* The BMC asked to be left alone (Redfish 429/503 with Retry-After, RFC 9110
		 * section 10.2.3): wait as asked, without spending an attempt. */
		x->wait_ms = x->obs.retry_after_ms;
		snprintf(x->err, sizeof(x->err), "%s: the BMC asked to wait %lld ms (Retry-After)",
			 what, (long long)x->obs.retry_after_ms);
		x->save_on_busy = 1;
		return STEP_BUSY;
	}
	if (rc == FP_EAUTH) {
		/* Retrying refused credentials locks BMC accounts: fail at once. */
		set_condition(x, "BMCReachable", COND_FALSE, "AuthenticationFailed", msg);
		return STEP_FAIL;
	}
	if (rc == FP_EINVAL) {
		/* The driver cannot use the node's spec.bmc (bad address, cipher suite ...):
		 * only a new spec helps, so the node parks like on refused credentials. */
		set_condition(x, "BMCReachable", COND_FALSE, "InvalidBMCSpec", msg);
		return STEP_FAIL;
	}
	return rc == FP_EUNSUPPORTED ? STEP_FAIL : STEP_RETRY;
}

static void bmc_ok(struct step_ctx *x)
{
	x->bmc_answered = 1;
	x->bmc_down = 0;
	set_condition(x, "BMCReachable", COND_TRUE, "Answered", "BMC answered");
}

/* The BMC answered a power read with BMC_POWER_UNKNOWN: PoweredOn becomes Unknown with the
 * driver's reason (never False: not knowing is not off). */
static void power_unknown(struct step_ctx *x)
{
	const char *reason = x->obs.power_reason[0] ? x->obs.power_reason : "PowerStateUnknown";
	if (!x->err[0])
		snprintf(x->err, sizeof(x->err), "the BMC did not report a power state");
	set_condition(x, "PoweredOn", COND_UNKNOWN, reason, x->err);
}

/* Reads power; 0 with *out set, or a step result (< 0 cast) from bmc_failed. */
static int read_power(struct step_ctx *x, const char *what, enum bmc_power *out,
		      enum step_result *r)
{
	x->err[0] = 0;
	x->obs.power_reason[0] = 0;
	int rc = bmc_power_get(x->bmc, &x->t, x->call_deadline, out, x->err, sizeof(x->err));
	if (rc < 0) {
		*r = bmc_failed(x, rc, what);
		return -1;
	}
	bmc_ok(x);
	return 0;
}

/* read_power for a step that needs on or off: a BMC_POWER_UNKNOWN reading ("cannot
 * confirm", never taken for off) makes PoweredOn Unknown (power_unknown) and is a retry:
 * -1 with *r STEP_RETRY. */
static int read_power_known(struct step_ctx *x, const char *what, enum bmc_power *out,
			    enum step_result *r)
{
	if (read_power(x, what, out, r) < 0)
		return -1;
	if (*out == BMC_POWER_UNKNOWN) {
		power_unknown(x);
		*r = STEP_RETRY;
		return -1;
	}
	return 0;
}

static void power_confirmed(struct step_ctx *x, enum bmc_power p, const char *msg)
{
	set_condition(x, "PoweredOn", p == BMC_POWER_ON ? COND_TRUE : COND_FALSE,
		      p == BMC_POWER_ON ? "BMCReportsOn" : "BMCReportsOff", msg);
}

static enum step_result step_power_status(struct step_ctx *x)
{
	enum bmc_power p;
	enum step_result r;
	if (read_power(x, "power status", &p, &r) < 0)
		return r;
	if (p == BMC_POWER_UNKNOWN) {
		power_unknown(x);
		x->err[0] = 0;
		return STEP_DONE; /* the reading is the result: power is not known */
	}
	power_confirmed(x, p, "power state as reported by the BMC");
	return STEP_DONE;
}

static enum step_result step_read_inventory(struct step_ctx *x)
{
	json_t *inv = NULL;
	int rc = bmc_inventory(x->bmc, &x->t, x->call_deadline, &inv, x->err, sizeof(x->err));
	if (rc < 0)
		return bmc_failed(x, rc, "read inventory");
	bmc_ok(x);
	json_decref(x->n->inventory);
	x->n->inventory = inv;
	x->delta->inventory = 1;
	return STEP_DONE;
}

static enum step_result set_boot(struct step_ctx *x, enum bmc_boot_device want, int persistent)
{
	struct bmc_boot cur;
	int rc = bmc_boot_get(x->bmc, &x->t, x->call_deadline, &cur, x->err, sizeof(x->err));
	if (rc < 0)
		return bmc_failed(x, rc, "read boot device");
	bmc_ok(x);
	/* Check-then-act: skip the write when the read shows it in place. A next-boot override
	 * can be trusted only from drivers whose read says whether it is still pending
	 * (BMC_CAP_BOOT_READBACK); for the others (IPMI) it is written every time - writing it
	 * twice is harmless, booting from disk instead of PXE is not. */
	if (cur.device == want && cur.persistent == persistent &&
	    (persistent || (bmc_caps(x->bmc) & BMC_CAP_BOOT_READBACK)))
		return STEP_DONE;
	struct bmc_boot w = {want, persistent, BMC_BOOT_MODE_UNKNOWN};
	rc = bmc_boot_set(x->bmc, &x->t, x->call_deadline, &w, x->err, sizeof(x->err));
	if (rc < 0)
		return bmc_failed(x, rc, "set boot device");
	return STEP_DONE;
}

static enum step_result step_set_boot_pxe(struct step_ctx *x)
{
	return set_boot(x, BMC_BOOT_PXE, 0); /* next boot only */
}

static enum step_result step_set_boot_disk(struct step_ctx *x)
{
	return set_boot(x, BMC_BOOT_DISK, 1); /* every boot */
}

/* Check-then-act: read power; act only if it is not already `want`, and trust "already
 * there" only after a second read (truth about power). A reading of BMC_POWER_UNKNOWN is
 * "cannot confirm": retry, never taken for off. */
static enum step_result power_to(struct step_ctx *x, enum bmc_power want)
{
	enum bmc_power cur, again;
	enum step_result r;
	if (read_power_known(x, "power status", &cur, &r) < 0)
		return r;
	if (cur == want) {
		if (read_power_known(x, "power status (second read)", &again, &r) < 0)
			return r;
		if (again != want) {
			snprintf(x->err, sizeof(x->err),
				 "BMC power readings disagree (%s, then %s); reading again",
				 bmc_power_name(cur), bmc_power_name(again));
			set_condition(x, "PoweredOn", COND_UNKNOWN, "PowerStateDisagrees", x->err);
			return STEP_RETRY;
		}
	} else {
		x->err[0] = 0;
		int rc = bmc_power_set(x->bmc, &x->t, x->call_deadline,
				       want == BMC_POWER_ON ? BMC_ACTION_ON : BMC_ACTION_OFF,
				       x->err, sizeof(x->err));
		if (rc < 0)
			return bmc_failed(x, rc, want == BMC_POWER_ON ? "power on" : "power off");
		/* Truth about power: confirm with a second read. */
		if (read_power_known(x, "power status after action", &again, &r) < 0)
			return r;
		if (again != want) {
			snprintf(x->err, sizeof(x->err), "BMC reports power %s after asking for %s",
				 bmc_power_name(again), bmc_power_name(want));
			set_condition(x, "PoweredOn", COND_UNKNOWN, "PowerStateDisagrees", x->err);
			return STEP_RETRY;
		}
	}
	power_confirmed(x, want, "power state confirmed by a second read");
	return STEP_DONE;
}

static enum step_result step_power_off(struct step_ctx *x)
{
	return power_to(x, BMC_POWER_OFF);
}

static enum step_result step_power_on(struct step_ctx *x)
{
	return power_to(x, BMC_POWER_ON);
}

/* Power actions that must reach the BMC at most once per operation: a cycle, reset or soft
 * shutdown sent twice interrupts the boot the first one began (during provisioning the second
 * boot no longer has the next-boot PXE override, so the deploy image never starts).
 *
 * params.sending is written (durably) before the call and params.acted after it. A later look
 * at the step finds one of three states: acted - it was sent, poll; sending without acted - a
 * call began but its outcome was never recorded (serve died during it, the answer did not
 * come in time, or the connection broke after the request left - bmc_observed.maybe_acted) -
 * unknown, never resent; neither - send. A call the BMC refused, or that failed before the
 * request left, clears sending: nothing was done, a retry may send. */
enum send_state {
	SEND_NONE,
	SEND_ACTED,
	SEND_UNKNOWN
};

static enum send_state send_state(struct step_ctx *x)
{
	/* The markers belong to the step that sent (params.sendStep; absent in operations
	 * written before it, which had one sending step): the network-boot plan's
	 * reboot_to_disk cycles again after power_on_or_cycle did. */
	json_t *at = json_object_get(x->op->params, "sendStep");
	if (json_is_integer(at) && json_integer_value(at) != (json_int_t)x->op->step)
		return SEND_NONE;
	if (json_is_integer(json_object_get(x->op->params, "acted")))
		return SEND_ACTED;
	if (json_is_integer(json_object_get(x->op->params, "sending")))
		return SEND_UNKNOWN;
	return SEND_NONE;
}

/* Sends a once (see above). Returns STEP_DONE once sent; anything else is the step's result
 * (the intent could not be recorded, or the call failed). */
static enum step_result send_once(struct step_ctx *x, enum bmc_power_action a)
{
	json_object_set_new(lifecycle_op_params(x->op), "sending", json_integer(x->op->attempt));
	json_object_set_new(x->op->params, "sendStep", json_integer((json_int_t)x->op->step));
	json_object_del(x->op->params, "acted"); /* an earlier step's */
	json_object_del(x->op->params, "actedAt");
	if (lifecycle_save_op(x->lc, x->op) < 0) { /* intent before act */
		json_object_del(x->op->params, "sending");
		snprintf(x->err, sizeof(x->err), "could not record the power %s before sending it",
			 bmc_action_name(a));
		return STEP_RETRY;
	}
	x->err[0] = 0;
	x->obs.maybe_acted = 0;
	int rc = bmc_power_set(x->bmc, &x->t, x->call_deadline, a, x->err, sizeof(x->err));
	if (rc < 0) {
		char what[32];
		snprintf(what, sizeof(what), "power %s", bmc_action_name(a));
		enum step_result r = bmc_failed(x, rc, what);
		if (!x->obs.maybe_acted || (rc != FP_ETIMEDOUT && rc != FP_EIO)) {
			/* the request never left, or the BMC answered (refused): nothing done */
			json_object_del(x->op->params, "sending");
			lifecycle_save_op(x->lc, x->op);
		}
		return r;
	}
	bmc_ok(x);
	json_object_set_new(lifecycle_op_params(x->op), "acted", json_integer(x->op->attempt));
	json_object_set_new(lifecycle_op_params(x->op), "actedAt", json_integer(now_wall(x->lc)));
	if (lifecycle_save_op(x->lc, x->op) < 0)
		log_warn("lifecycle: could not record a sent power action node=%s op=%s",
			 x->n->name, x->op->id);
	return STEP_DONE;
}

#define POWER_POLL (5 * SEC)

/* Sends action a at most once per operation, then polls until the BMC reads `want`
 * (STEP_WAIT, bounded by the step deadline; the first read comes one poll interval after the
 * act, so a BMC that has not begun the transition is not taken at its word). An action whose
 * outcome is unknown fails the operation: it is not sent again. */
static enum step_result act_then_poll(struct step_ctx *x, enum bmc_power_action a,
				      enum bmc_power want)
{
	enum send_state st = send_state(x);
	if (st == SEND_UNKNOWN) {
		snprintf(x->err, sizeof(x->err),
			 "the power %s may or may not have reached the BMC (serve stopped, or the "
			 "call got no answer, while it was being sent); not sent again, since a "
			 "second one could interrupt the boot the first began: check the machine "
			 "and ask again if needed",
			 bmc_action_name(a));
		return STEP_FAIL;
	}
	if (st == SEND_NONE) {
		enum step_result r = send_once(x, a);
		if (r != STEP_DONE) {
			if (send_state(x) == SEND_UNKNOWN)
				return act_then_poll(x, a, want); /* no answer: fail as unknown */
			return r;
		}
		x->wait_ms = scale(x->lc, x->n, POWER_POLL);
		snprintf(x->err, sizeof(x->err), "power %s sent; waiting for the BMC to read %s",
			 bmc_action_name(a), bmc_power_name(want));
		return STEP_WAIT;
	}
	/* The step may be looked at again early (the node changed meanwhile); the first read
	 * still waits one poll interval after the act. */
	json_t *at = json_object_get(x->op->params, "actedAt");
	int64_t settle = json_is_integer(at)
				 ? json_integer_value(at) + scale(x->lc, x->n, POWER_POLL) -
					   now_wall(x->lc)
				 : 0;
	if (settle > 0) {
		x->wait_ms = settle;
		snprintf(x->err, sizeof(x->err),
			 "power %s sent; giving the BMC time before reading %s", bmc_action_name(a),
			 bmc_power_name(want));
		return STEP_WAIT;
	}
	enum bmc_power cur;
	enum step_result r;
	if (read_power(x, "power status", &cur, &r) < 0)
		return r;
	if (cur == want) {
		power_confirmed(x, want, "power state read after the action");
		return STEP_DONE;
	}
	if (cur == BMC_POWER_UNKNOWN)
		power_unknown(x);
	x->wait_ms = scale(x->lc, x->n, POWER_POLL);
	snprintf(x->err, sizeof(x->err), "power %s sent; the BMC reads %s, waiting for %s",
		 bmc_action_name(a), bmc_power_name(cur), bmc_power_name(want));
	return STEP_WAIT;
}

static enum step_result step_power_cycle(struct step_ctx *x)
{
	return act_then_poll(x, BMC_ACTION_CYCLE, BMC_POWER_ON);
}

#define RESET_OFF_MSG                                                                \
	"the machine is off; a reset does nothing (IPMI 2.0 section 28.3 / Redfish " \
	"ForceRestart); use on"

/* A hard reset restarts a running machine; on one that is off it does nothing (IPMI 2.0
 * section 28.3, Chassis Control "hard reset"; Redfish ResetType ForceRestart), so the step
 * would poll for "on" until its deadline. Before the act the power is read: off fails the
 * step at once, nothing sent. Unknown is not off: the reset is sent. */
static enum step_result step_power_reset(struct step_ctx *x)
{
	if (send_state(x) == SEND_NONE) {
		enum bmc_power cur;
		enum step_result r;
		if (read_power(x, "power status", &cur, &r) < 0)
			return r;
		if (cur == BMC_POWER_OFF) {
			power_confirmed(x, cur, "power state as reported by the BMC");
			snprintf(x->err, sizeof(x->err), "%s", RESET_OFF_MSG);
			return STEP_FAIL;
		}
	}
	return act_then_poll(x, BMC_ACTION_RESET, BMC_POWER_ON);
}

static enum step_result step_power_soft(struct step_ctx *x)
{
	return act_then_poll(x, BMC_ACTION_SOFT, BMC_POWER_OFF);
}

/* Provisioning's power step: off -> on, on -> cycle, so the machine boots the next-boot PXE
 * override either way. The choice is written to the operation (params.powerChoice) before
 * acting, so after a crash the check knows what was done: chose "on" and power reads on ->
 * done; chose "cycle" and a boot callback arrived after the operation started, or the cycle
 * was recorded as sent -> done. */
static enum step_result step_power_on_or_cycle(struct step_ctx *x)
{
	const char *choice = jsonx_str(x->op->params, "powerChoice");
	if (!choice) {
		enum bmc_power cur;
		enum step_result r;
		if (read_power_known(x, "power status", &cur, &r) < 0)
			return r;
		choice = cur == BMC_POWER_OFF ? "on" : "cycle";
		json_object_set_new(lifecycle_op_params(x->op), "powerChoice", json_string(choice));
		if (lifecycle_save_op(x->lc, x->op) < 0) { /* intent before act */
			snprintf(x->err, sizeof(x->err), "could not record the power choice");
			return STEP_RETRY;
		}
		choice = jsonx_str(x->op->params, "powerChoice");
	}
	if (strcmp(choice, "on") == 0)
		return power_to(x, BMC_POWER_ON);
	if (x->n->last_boot_at && x->n->last_boot_at >= x->op->started_at)
		return STEP_DONE;
	enum send_state st = send_state(x);
	if (st == SEND_ACTED)
		return STEP_DONE;
	if (st == SEND_UNKNOWN) {
		/* Not sent again (see send_once): if it did happen the boot callback comes; if
		 * not, the callback's deadline fails this provisioning and the next one cycles. */
		log_warn("lifecycle: power cycle outcome unknown, not resent; waiting for the "
			 "boot callback node=%s op=%s",
			 x->n->name, x->op->id);
		return STEP_DONE;
	}
	enum step_result r = send_once(x, BMC_ACTION_CYCLE);
	if (r != STEP_DONE && send_state(x) == SEND_UNKNOWN)
		return STEP_DONE; /* no answer: as above */
	return r;
}

/* Waits for the deploy agent's callback from a boot that began in this operation. */
static enum step_result step_wait_boot_callback(struct step_ctx *x)
{
	if (x->n->last_boot_at && x->n->last_boot_at >= x->op->started_at)
		return STEP_DONE;
	x->wait_ms = lifecycle_step_left(x->lc, x->n->name, x->op);
	snprintf(x->err, sizeof(x->err), "no boot callback from the node's agent");
	return STEP_WAIT;
}

/* Appends "; what" to a mismatch list. */
static void mismatch_add(char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void mismatch_add(char *out, size_t outlen, const char *fmt, ...)
{
	size_t len = strlen(out);
	if (len + 3 >= outlen)
		return;
	if (len)
		len += (size_t)snprintf(out + len, outlen - len, "; ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + len, outlen - len, fmt, ap);
	va_end(ap);
}

/* Validation's inventory check: the GPUs the inventory shows against spec.gpus.count, and,
 * when the inventory came from the inspection ramdisk, its NICs, disks and memory against
 * spec.hardware (nics and disks exact, memoryMiB at least). A mismatch fails validation with
 * the condition InventoryMatchesSpec False InventoryMismatch naming every difference. */
static enum step_result step_check_gpu_count(struct step_ctx *x)
{
	json_t *hw = x->n->hardware;
	if (x->n->gpu_count <= 0 && !hw)
		return STEP_DONE; /* nothing expected */
	json_t *inv = x->n->inventory        ? json_incref(x->n->inventory)
		      : x->n->inventory_text ? json_loads(x->n->inventory_text, 0, NULL)
					     : NULL;
	char diff[400] = "";
	json_t *gpus = jsonx_path(inv, "gpus");
	size_t seen = json_is_array(gpus) ? json_array_size(gpus) : 0;
	if (x->n->gpu_count > 0 && (int)seen != x->n->gpu_count)
		mismatch_add(diff, sizeof(diff), "expected %d GPUs, inventory shows %zu",
			     x->n->gpu_count, seen);
	static const char *const counted[] = {"nics", "disks"};
	for (size_t i = 0; hw && i < 2; i++) {
		json_t *want = json_object_get(hw, counted[i]);
		if (!json_is_integer(want))
			continue;
		json_t *have = json_object_get(inv, counted[i]);
		if (!json_is_array(have))
			mismatch_add(diff, sizeof(diff), "expected %lld %s, inventory lists none",
				     (long long)json_integer_value(want), counted[i]);
		else if ((json_int_t)json_array_size(have) != json_integer_value(want))
			mismatch_add(diff, sizeof(diff), "expected %lld %s, inventory shows %zu",
				     (long long)json_integer_value(want), counted[i],
				     json_array_size(have));
	}
	json_t *mem = json_object_get(hw, "memoryMiB");
	if (json_is_integer(mem)) {
		json_t *have = json_object_get(inv, "memoryMiB");
		if (!json_is_integer(have) || json_integer_value(have) < json_integer_value(mem))
			mismatch_add(diff, sizeof(diff),
				     "expected at least %lld MiB of memory, inventory shows %lld",
				     (long long)json_integer_value(mem),
				     json_is_integer(have) ? (long long)json_integer_value(have)
							   : 0LL);
	}
	json_decref(inv);
	if (diff[0]) {
		set_condition(x, "InventoryMatchesSpec", COND_FALSE, "InventoryMismatch", diff);
		snprintf(x->err, sizeof(x->err), "%.250s", diff);
		return STEP_FAIL;
	}
	if (hw)
		set_condition(x, "InventoryMatchesSpec", COND_TRUE, "Matches",
			      "the inventory matches spec.gpus and spec.hardware");
	return STEP_DONE;
}

/* Waits for the burn-in report of the boot this node is running now: reports are matched to a
 * boot by id, so a late report from an earlier boot, or a report that overtakes its boot
 * callback, can never be taken for this one. After a remediation rung the boot may be the same
 * (a GPU reset keeps it): there the store's order decides, not the clock - the commit that
 * started the rung cleared status.validation (lifecycle_remediation_next), so any report
 * present now was recorded after the rung began, even one of the same millisecond as its
 * end. */
static enum step_result step_wait_burn_in(struct step_ctx *x)
{
	const struct node *n = x->n;
	if (n->validated_at && n->validation_boot_id && n->last_boot_id &&
	    strcmp(n->validation_boot_id, n->last_boot_id) == 0) {
		if (n->validation_passed)
			return STEP_DONE;
		snprintf(x->err, sizeof(x->err), "burn-in validation of boot %s reported failure",
			 n->last_boot_id);
		return STEP_FAIL;
	}
	x->wait_ms = lifecycle_step_left(x->lc, x->n->name, x->op);
	snprintf(x->err, sizeof(x->err), "no burn-in report from the node's agent for boot %s",
		 n->last_boot_id ? n->last_boot_id : "(none yet)");
	return STEP_WAIT;
}

/* Retire without the BMC (POST /v1/nodes/{name}:retire {"skipPowerOff": true}, for a machine
 * whose BMC cannot power it off): nothing is sent; PoweredOn becomes Unknown/NotPoweredOff,
 * naming who asked. */
static enum step_result step_skip_power_off(struct step_ctx *x)
{
	char msg[400];
	snprintf(msg, sizeof(msg),
		 "retired without powering off (skipPowerOff requested by %.100s: %.200s); the "
		 "machine may still be on",
		 x->op->actor ? x->op->actor : "?", x->op->reason ? x->op->reason : "");
	set_condition(x, "PoweredOn", COND_UNKNOWN, "NotPoweredOff", msg);
	return STEP_DONE;
}

void lifecycle_step_condition(struct step_ctx *x, const char *type, enum cond_status st,
			      const char *reason, const char *msg)
{
	set_condition(x, type, st, reason, msg);
}

/* The condition the workload gate keeps (lifecycle_config.workload_gate). */
#define WORKLOAD_CONDITION "WorkloadDrained"

/* "Slurm jobs 12, 13 (state draining)" for n's status.workload into out. */
static void workload_text(const struct node *n, char *out, size_t outlen)
{
	const struct node_workload *w = &n->workload;
	char jobs[400];
	node_workload_jobs_text(w, jobs, sizeof(jobs));
	snprintf(out, outlen, "%s jobs %s (state %s)", w->scheduler ? w->scheduler : "scheduler",
		 jobs[0] ? jobs : "(ids not known)", workload_state_name(w->state));
}

/* Waits until the scheduler backend says no job is on the node and none can start there
 * (status.workload drained, or absent from the scheduler); done at once without a scheduler.
 * A node the backend has not reported on, or whose state it could not read, waits: a lookup
 * failure is never "drained". */
static enum step_result step_workload_drained(struct step_ctx *x)
{
	if (!x->lc->cfg.workload_gate)
		return STEP_DONE; /* no scheduler: no work fleetplane must wait for */
	const struct node_workload *w = &x->n->workload;
	char msg[480];
	if (!node_workload_trusted(x->n)) {
		const struct node_condition *c = node_condition_get(x->n,
								    NODE_COND_SCHEDULER_IN_SYNC);
		snprintf(msg, sizeof(msg),
			 "waiting: Slurm cannot be read now (SchedulerInSync %s %.60s), so whether "
			 "jobs run on the node is not known",
			 c ? cond_status_name(c->status) : "absent",
			 c && c->reason ? c->reason : "-");
		set_condition(x, WORKLOAD_CONDITION, COND_FALSE, "DrainPending", msg);
		snprintf(x->err, sizeof(x->err), "%.200s", msg);
		x->wait_ms = lifecycle_step_left(x->lc, x->n->name, x->op);
		return STEP_WAIT;
	}
	if (w->state == WORKLOAD_DRAINED || w->state == WORKLOAD_ABSENT) {
		set_condition(x, WORKLOAD_CONDITION, COND_TRUE,
			      w->state == WORKLOAD_DRAINED ? "Drained" : "NotInScheduler",
			      w->state == WORKLOAD_DRAINED
				      ? "the scheduler has drained the node: no jobs remain"
				      : "the scheduler does not know the node: no jobs can run");
		return STEP_DONE;
	}
	if (node_workload_has_jobs(w)) {
		workload_text(x->n, msg, sizeof(msg));
		set_condition(x, WORKLOAD_CONDITION, COND_FALSE, "JobsRunning", msg);
		snprintf(x->err, sizeof(x->err), "waiting for %.200s to end", msg);
	} else {
		snprintf(msg, sizeof(msg),
			 "waiting for the scheduler to report the node drained "
			 "(status.workload %s)",
			 workload_state_name(w->state));
		set_condition(x, WORKLOAD_CONDITION, COND_FALSE, "DrainPending", msg);
		snprintf(x->err, sizeof(x->err), "%.200s", msg);
	}
	x->wait_ms = lifecycle_step_left(x->lc, x->n->name, x->op);
	return STEP_WAIT;
}

/* The gate in front of a step that disrupts the machine (def->disrupts): 1 = run it, 0 = wait
 * (x->err and x->wait_ms set). With jobs on the node it waits unless the operation says
 * params.force - then it runs, loudly. */
static int workload_gate(struct step_ctx *x, const struct step_def *def)
{
	const struct node_workload *w = &x->n->workload;
	if (!def->disrupts || !x->lc->cfg.workload_gate)
		return 1;
	int trusted = node_workload_trusted(x->n);
	if (trusted && !node_workload_has_jobs(w))
		return 1;
	char msg[720], jobs[480];
	if (trusted) {
		char t[420];
		workload_text(x->n, t, sizeof(t));
		snprintf(jobs, sizeof(jobs), "%s run", t);
	} else {
		const struct node_condition *c = node_condition_get(x->n,
								    NODE_COND_SCHEDULER_IN_SYNC);
		snprintf(jobs, sizeof(jobs),
			 "jobs may run: Slurm cannot be read now (SchedulerInSync %s %.60s)",
			 c ? cond_status_name(c->status) : "absent",
			 c && c->reason ? c->reason : "-");
	}
	if (json_is_true(json_object_get(x->op->params, "force"))) {
		snprintf(msg, sizeof(msg), "%s of operation %s forced by %.100s while %s",
			 def->name, x->op->id, x->op->actor ? x->op->actor : "?", jobs);
		/* once per step attempt, not per look (set_condition writes only changes) */
		const struct node_condition *c = node_condition_get(x->n, WORKLOAD_CONDITION);
		if (!c || !c->message || strcmp(c->message, msg) != 0)
			log_warn("lifecycle: forced with jobs running node=%s op=%s step=%s "
				 "actor=%s jobs=\"%s\"",
				 x->n->name, x->op->id, def->name,
				 x->op->actor ? x->op->actor : "?", jobs);
		set_condition(x, WORKLOAD_CONDITION, COND_FALSE, "Forced", msg);
		return 1;
	}
	snprintf(msg, sizeof(msg), "%s waits: %s; the operation may say force", def->name, jobs);
	set_condition(x, WORKLOAD_CONDITION, COND_FALSE, "JobsRunning", msg);
	snprintf(x->err, sizeof(x->err), "%.250s", msg);
	x->wait_ms = lifecycle_step_left(x->lc, x->n->name, x->op);
	return 0;
}

static const struct step_def steps[] = {
	{"power_status", 0, 0, 1, 0, 2 * MIN, 5, step_power_status},
	{"read_inventory", 0, 0, 1, 0, 2 * MIN, 5, step_read_inventory},
	/* setting the boot device is idempotent (IPMI Set System Boot Options, Redfish
	 * Boot.BootSourceOverrideTarget: a value, not a toggle): sent again after a crash it does
	 * no harm, so no intent is written before it (the next step's intent, or the operation's
	 * end, records it) */
	{"set_boot_pxe", 0, 0, 1, 0, 2 * MIN, 5, step_set_boot_pxe},
	{"set_boot_disk", 0, 0, 1, 0, 2 * MIN, 5, step_set_boot_disk},
	{"power_off", 1, 0, 1, 1, 5 * MIN, 5, step_power_off},
	{"power_on", 1, 0, 1, 0, 5 * MIN, 5, step_power_on},
	{"power_on_or_cycle", 1, 0, 1, 1, 5 * MIN, 5, step_power_on_or_cycle},
	{"power_cycle", 1, 0, 1, 1, 10 * MIN, 3, step_power_cycle},
	{"power_reset", 1, 0, 1, 1, 10 * MIN, 3, step_power_reset},
	{"power_soft", 1, 0, 1, 1, 10 * MIN, 3, step_power_soft},
	{"wait_boot_callback", 1, 1, 0, 0, 15 * MIN, 1, step_wait_boot_callback},
	{"check_gpu_count", 0, 0, 0, 0, 1 * MIN, 1, step_check_gpu_count},
	{"wait_burn_in", 1, 1, 0, 0, 30 * MIN, 1, step_wait_burn_in},
	{"workload_drained", 1, 1, 0, 0, 4 * HOUR, 1, step_workload_drained},
	{"skip_power_off", 0, 0, 0, 0, 1 * MIN, 1, step_skip_power_off},
	{"request_gpu_reset", 1, 0, 0, 1, 2 * MIN, 3, lifecycle_step_request_gpu_reset},
	{"wait_agent_action", 1, 1, 0, 0, 10 * MIN, 1, lifecycle_step_wait_agent_action},
	{"open_rma", 1, 0, 0, 0, 2 * MIN, 5, lifecycle_step_open_rma},
	{"wait_inspection", 1, 1, 0, 0, 15 * MIN, 1, lifecycle_step_wait_inspection},
	{"wait_deploy", 1, 1, 0, 0, 30 * MIN, 1, lifecycle_step_wait_deploy},
	{"reboot_to_disk", 1, 0, 1, 0, 10 * MIN, 3, step_power_cycle},
	{"wait_disk_boot", 1, 1, 0, 0, 15 * MIN, 1, lifecycle_step_wait_disk_boot},
};

static const struct step_def *step_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (strcmp(steps[i].name, name) == 0)
			return &steps[i];
	return NULL;
}

/* ---------------------------------------------------------------- executor side */

#define IN_FLIGHT ((void *)1)
#define IN_FLIGHT_RERUN ((void *)2) /* the node changed while its task ran */

/* Ends a node's single flight. Returns 1 if the node changed while the task ran (its copy may
 * predate e.g. a boot callback), so the caller must look at it again at once. */
static int in_flight_clear(struct lifecycle *lc, const char *node)
{
	pthread_mutex_lock(&lc->mu);
	int rerun = hmap_remove(&lc->in_flight, node) == IN_FLIGHT_RERUN;
	pthread_mutex_unlock(&lc->mu);
	return rerun;
}

static void finish_metrics(struct lifecycle *lc, const struct operation *op)
{
	metric_add(lc->m_ops, (const char *[]){op->kind, op_state_name(op->state)}, 1);
	if (op->started_at && op->finished_at >= op->started_at)
		metric_observe(lc->m_op_dur, (const char *[]){op->kind},
			       (double)(op->finished_at - op->started_at) / 1000.0);
}

#define CIRCUIT_MSG                                                                           \
	"the BMC did not answer repeatedly (timeouts or connection failures); circuit open: " \
	"calls paused until a probe answers"

/* Before a BMC step: asks the breaker whether the BMC may be called. Returns 1 to go on; 0
 * with *r set when the circuit is open: STEP_BUSY until the next probe, or STEP_FAIL once the
 * step's deadline has passed (an operation on a dead BMC ends, it never hangs). */
static int breaker_gate(struct lifecycle *lc, struct step_ctx *x, const char *key,
			enum step_result *r)
{
	int64_t wait = 0;
	if (breaker_allow(lc->cfg.breaker, key, &wait) == 0)
		return 1;
	int64_t left = lifecycle_step_left(lc, x->n->name, x->op);
	set_condition(x, "BMCReachable", COND_FALSE, "CircuitOpen", CIRCUIT_MSG);
	if (left <= 0) {
		snprintf(x->err, sizeof(x->err),
			 "BMC %s circuit open: the step deadline passed without the BMC answering",
			 key);
		*r = STEP_FAIL;
		return 0;
	}
	x->wait_ms = wait > 0 && wait < left ? wait : left;
	snprintf(x->err, sizeof(x->err),
		 "BMC %s circuit open after repeated timeouts; not calling it until the next probe "
		 "in %lld ms",
		 key, (long long)(wait > 0 ? wait : 0));
	x->save_on_busy = 1;
	*r = STEP_BUSY;
	return 0;
}

/* After a step the breaker let through: reports how its last BMC call went (only timeouts and
 * connection failures count against the BMC) and records a transition with one event. */
static void breaker_after(struct lifecycle *lc, struct step_ctx *x, const char *key)
{
	if (!x->bmc_answered && !x->bmc_down)
		return; /* the step did not call the BMC */
	int t = breaker_report(lc->cfg.breaker, key, x->bmc_answered);
	if (t == BREAKER_T_OPENED) {
		set_condition(x, "BMCReachable", COND_FALSE, "CircuitOpen", CIRCUIT_MSG);
		lifecycle_delta_event(
			x->delta, "Warning", "BMCUnreachable",
			"BMC %s: circuit open after repeated timeouts or connection failures "
			"(last: %.120s); calls paused until a probe answers",
			key, x->err);
		log_warn("lifecycle: BMC circuit open node=%s bmc=%s", x->n->name, key);
	} else if (t == BREAKER_T_CLOSED) {
		set_condition(x, "BMCReachable", COND_TRUE, "Answered", "BMC answered");
		lifecycle_delta_event(x->delta, "Normal", "BMCReachable",
				      "BMC %s answers again; circuit closed", key);
		log_info("lifecycle: BMC circuit closed node=%s bmc=%s", x->n->name, key);
	}
}

#define BMC_QUIET_MAX 65536
#define BMC_QUIET_CAP (10 * MIN) /* a longer Retry-After is taken as 10 min */

/* Milliseconds still to run until the instant (int64_t ms, malloc'd) that map m, guarded by
 * lc->mu, holds for key; 0 when there is none or it has passed (then the entry is dropped). */
static int64_t time_left(struct lifecycle *lc, struct hmap *m, const char *key)
{
	int64_t left = 0;
	pthread_mutex_lock(&lc->mu);
	int64_t *until = hmap_get(m, key);
	if (until) {
		left = *until - clock_now_ms(lc->cfg.clock);
		if (left <= 0) {
			free(hmap_remove(m, key));
			left = 0;
		}
	}
	pthread_mutex_unlock(&lc->mu);
	return left;
}

/* Milliseconds the BMC asked to be left alone for that are still to run (0: none). */
static int64_t bmc_quiet_left(struct lifecycle *lc, const char *key)
{
	return time_left(lc, &lc->bmc_quiet, key);
}

static void bmc_quiet_set(struct lifecycle *lc, const char *key, int64_t ms)
{
	if (ms > BMC_QUIET_CAP)
		ms = BMC_QUIET_CAP;
	pthread_mutex_lock(&lc->mu);
	int64_t *until = hmap_get(&lc->bmc_quiet, key);
	if (!until && lc->bmc_quiet.count < BMC_QUIET_MAX) {
		until = xmalloc(sizeof(*until));
		*until = 0;
		hmap_put(&lc->bmc_quiet, key, until);
	}
	if (until && *until < clock_now_ms(lc->cfg.clock) + ms)
		*until = clock_now_ms(lc->cfg.clock) + ms;
	pthread_mutex_unlock(&lc->mu);
}

/* Quirks the driver found necessary on this step and the node does not carry yet: kept for
 * the following steps and written to status.bmc.quirks (with one event) by flush_status. */
static void learn_quirks(struct step_ctx *x)
{
	unsigned nl = x->obs.learned_quirks & ~x->n->bmc_quirks;
	if (!nl)
		return;
	x->delta->quirks |= nl;
	x->n->bmc_quirks |= nl;
}

static void run_op_task(void *arg)
{
	struct op_task *t = arg;
	struct lifecycle *lc = t->lc;
	struct operation *op = NULL;
	struct node *n = NULL;
	struct status_delta delta = {0};
	int64_t requeue_after = 0;
	int save_op = 0; /* op's changes are written at the end, with the status delta */
	/* What a step already did (params.acted, the attempt's intent) must be judged on the
	 * operation as written. The informer's copy can lag this node's own last task - a re-run
	 * right after a step that sent a power cycle saw the copy from before mark_acted, which
	 * already had its intent (so nothing was written before acting), and sent the cycle
	 * again - so the operation and the node are the newest copies this controller knows
	 * (lifecycle_op_current: its own last write while the informer has not caught up, else
	 * the informer's, else the store's). Every write below is a compare-and-swap on their
	 * resourceVersions, so a copy that lags another writer only costs a conflict and a
	 * re-queue. */
	if (atomic_load(&lc->stopping))
		goto out; /* queued before the stop: the operation resumes at the next start */
	int rc = lifecycle_op_current(lc, t->op_id, &op);
	if (rc == 0)
		rc = lifecycle_node_current(lc, t->node, &n);
	if (rc == 0 && op_state_terminal(op->state))
		requeue_after = 5; /* ended: look again once the informer has caught up */
	if (rc < 0 || op_state_terminal(op->state) || !n->operation ||
	    strcmp(n->operation, op->id) != 0)
		goto out;

	while (op->step < op->nsteps) {
		const struct step_def *def = step_lookup(op->steps[op->step]);
		int64_t now = now_wall(lc), now_mono = clock_now_ms(lc->cfg.clock);
		int dirty = 0;
		if (!def) {
			op->state = OP_FAILED;
			free(op->last_error);
			op->last_error = xasprintf("unknown step %s", op->steps[op->step]);
			op->finished_at = now;
			lifecycle_save_op(lc, op);
			finish_metrics(lc, op);
			break;
		}
		if (op->state == OP_PENDING) {
			op->state = OP_RUNNING;
			op->started_at = now;
			dirty = 1;
		}
		if (op->step_deadline == 0) {
			op->attempt++;
			int64_t to = def->timeout;
			if (lc->cfg.boot_wait_ms > 0 && def->run == lifecycle_step_wait_inspection)
				to = lc->cfg.boot_wait_ms;
			if (lc->cfg.boot_wait_ms > 0 && (def->run == lifecycle_step_wait_deploy ||
							 def->run == lifecycle_step_wait_disk_boot))
				to = lc->cfg.boot_wait_ms;
			int64_t span = scale_timeout(lc, n, to, FLOOR_STEP);
			op->step_deadline = now + span;
			/* its monotonic instant from the same moment as the wall one */
			lifecycle_mono_step_note(lc, n->name, op->step_deadline, now_mono + span);
			dirty = 1;
		}
		/* Intent before side effect: the attempt is durable before the BMC is touched. A
		 * wait's deadline is made durable when it starts waiting (below): a wait that is
		 * already over needs no write. */
		if (dirty && def->persist && !def->waits) {
			if ((rc = lifecycle_save_op(lc, op)) < 0)
				goto out;
		}
		struct step_ctx x = {.lc = lc, .delta = &delta, .n = n, .op = op};
		x.bmc = driver_for(lc, n->bmc.driver);
		x.t = (struct bmc_target){.node = n->name,
					  .observed = &x.obs,
					  .address = n->bmc.address,
					  .username = n->bmc.username,
					  .password = NULL, /* BMC steps: opened below */
					  .cipher_suite = n->bmc.cipher_suite,
					  .tls_verify = n->bmc.tls_verify,
					  .ca_file = NULL, /* BMC steps: ca_path below */
					  .system = n->bmc.system,
					  .quirks = n->bmc.quirks | n->bmc_quirks,
					  .extra = n->bmc.extra};
		int64_t call_timeout = lc->cfg.bmc_call_timeout_ms > 0 ? lc->cfg.bmc_call_timeout_ms
								       : BMC_CALL_TIMEOUT;
		x.call_deadline = clock_now_ms(lc->cfg.clock) +
				  scale_timeout(lc, n, call_timeout, FLOOR_CALL);
		const char *bmc_key = n->bmc.address ? n->bmc.address : n->name;
		struct ratelimit *limits = is_sim(n) && lc->cfg.sim_limits ? lc->cfg.sim_limits
									   : lc->cfg.limits;
		enum step_result r;
		int gated = 0; /* the breaker let this step through */
		/* Opened (or read from the password file) for this step only, right before the BMC
		 * call, and wiped with explicit_bzero (fp_free_secret) right after it, on every path. */
		char *password = NULL;
		char ca_path[4400] = ""; /* spec.bmc.ca_file in the credentials dir, absolute */
		if (def->uses_bmc && !x.bmc) {
			snprintf(x.err, sizeof(x.err), "no BMC driver \"%s\" in this build",
				 n->bmc.driver);
			r = STEP_FAIL;
		} else if (def->uses_bmc &&
			   secret_bmc_password(lc->cfg.secret_key, &n->bmc,
					       lc->cfg.bmc_credentials_dir, &password, x.err,
					       sizeof(x.err)) < 0) {
			/* Undecryptable or unreadable: retrying cannot help, the node parks. */
			set_condition(&x, "BMCReachable", COND_FALSE, "CredentialsUnavailable",
				      x.err);
			r = STEP_FAIL;
		} else if (def->uses_bmc && n->bmc.driver &&
			   strcmp(n->bmc.driver, "redfish") == 0 &&
			   secret_bmc_ca_path(&n->bmc, lc->cfg.bmc_credentials_dir, ca_path,
					      sizeof(ca_path), x.err, sizeof(x.err)) < 0) {
			/* A CA file outside the rule, missing or not a file: only a fix helps. Only
			 * the Redfish driver uses one (a ca_file stored on another node is ignored). */
			set_condition(&x, "BMCReachable", COND_FALSE, "CredentialsUnavailable",
				      x.err);
			r = STEP_FAIL;
		} else {
			if (def->uses_bmc) {
				x.t.password = password;
				x.t.ca_file = ca_path[0] ? ca_path : NULL;
			}
			int slot = 0;
			int64_t quiet = def->uses_bmc ? bmc_quiet_left(lc, bmc_key) : 0;
			r = STEP_DONE;
			if (quiet > 0) {
				/* The BMC asked to be left alone (Retry-After): not even a
				 * rerun of this node calls it before the time is up. */
				x.wait_ms = quiet;
				snprintf(x.err, sizeof(x.err),
					 "the BMC asked to wait (Retry-After); %lld ms left",
					 (long long)quiet);
				r = STEP_BUSY;
			} else if (def->uses_bmc && limits) {
				char why[128];
				int64_t wait = 0;
				rc = ratelimit_acquire(limits, bmc_key, n->site, &wait, why,
						       sizeof(why));
				if (rc < 0) {
					x.wait_ms = wait > 0 ? wait : 50;
					r = STEP_BUSY;
				}
				slot = rc == 0;
			}
			/* The breaker is asked with a slot in hand, so a probe it grants is
			 * always made (and reported). */
			if (r != STEP_BUSY && !workload_gate(&x, def))
				r = STEP_WAIT; /* jobs run on the node: it is not disrupted */
			else if (r != STEP_BUSY && def->uses_bmc && lc->cfg.breaker &&
				 !(gated = breaker_gate(lc, &x, bmc_key, &r)))
				; /* circuit open: r says wait or fail */
			else if (r != STEP_BUSY)
				r = def->run(&x);
			if (slot)
				ratelimit_release(limits, bmc_key);
		}
		fp_free_secret(password);
		x.t.password = NULL;
		if (gated)
			breaker_after(lc, &x, bmc_key);
		if (r == STEP_BUSY && x.obs.retry_after_ms > 0)
			bmc_quiet_set(lc, bmc_key, x.obs.retry_after_ms);
		learn_quirks(&x);
		now = now_wall(lc);
		if ((r == STEP_WAIT || r == STEP_BUSY) && lifecycle_step_left(lc, n->name, op) <= 0)
			r = STEP_RETRY; /* waited past the step deadline */
		if (r == STEP_DONE) {
			op->step++;
			op->attempt = 0;
			op->step_deadline = 0;

			free(op->last_error);
			op->last_error = NULL;
			if (op->step == op->nsteps) {
				/* Observations first: whoever acts on the finished operation sees
				 * them - in the same write as the operation's end and the node's
				 * next phase (absorb_status), or just before it. */
				absorb_status(lc, &n, &delta);
				op->state = OP_SUCCEEDED;
				op->finished_at = now;
				op->updated_at = now;
				if (finish(lc, n, op, 1) == 0) {
					memset(&delta, 0, sizeof(delta)); /* written with it */
					finish_metrics(lc, op);
				}
				break;
			}
			/* The next step's intent write also records this step as done; read-only
			 * steps that follow need no write of their own. A step without a side
			 * effect (a read, a wait) needs no record of its end either: after a
			 * crash it runs again and finds what it found (the operation's end, or
			 * the next intent, writes everything). */
			const struct step_def *next = step_lookup(op->steps[op->step]);
			if ((!next || !next->persist) && def->persist && !def->waits) {
				if ((rc = lifecycle_save_op(lc, op)) < 0)
					goto out;
			}
			continue;
		}
		if (r == STEP_WAIT || r == STEP_BUSY) {
			requeue_after = x.wait_ms > 0 ? x.wait_ms : 1;
			if (r == STEP_WAIT || x.save_on_busy) {
				int changed = !op->last_error || strcmp(op->last_error, x.err) != 0;
				free(op->last_error);
				op->last_error = xstrdup(x.err);
				/* A wait the BMC or the breaker imposes keeps the step's deadline
				 * (read-only steps are not persisted otherwise). */
				if (x.save_on_busy && (changed || (dirty && !def->persist)))
					lifecycle_save_op(lc, op);
				/* A wait that starts waiting: its attempt and deadline, written
				 * with the task's observations in one transaction (below). */
				else if (r == STEP_WAIT && def->waits && dirty)
					save_op = 1;
			}
			break;
		}
		/* RETRY or FAIL */
		free(op->last_error);
		op->last_error = xasprintf("step %s attempt %d: %s", def->name, op->attempt,
					   x.err[0] ? x.err : "failed");
		if (r == STEP_RETRY && op->attempt < def->max_attempts) {
			op->step_deadline = 0;
			lifecycle_save_op(lc, op);
			/* Back off before the next attempt: 1 s, 2 s, 4 s ... (scaled). The save
			 * above re-queues the node through the cache at once; reconcile holds the
			 * step back until step_retry_at. */
			requeue_after = scale(lc, n, SEC << (op->attempt - 1));
			if (requeue_after < 1)
				requeue_after = 1;
			int64_t *at = xmalloc(sizeof(*at));
			*at = clock_now_ms(lc->cfg.clock) + requeue_after;
			pthread_mutex_lock(&lc->mu);
			free(hmap_put(&lc->step_retry_at, t->node, at));
			pthread_mutex_unlock(&lc->mu);
			break;
		}
		absorb_status(lc, &n, &delta);
		op->state = OP_FAILED;
		op->finished_at = now;
		op->updated_at = now;
		if (finish(lc, n, op, 1) == 0) {
			memset(&delta, 0, sizeof(delta));
			finish_metrics(lc, op);
		}
		break;
	}
out:
	if (n)
		flush_status_op(lc, &n, &delta, save_op ? op : NULL);
	if (in_flight_clear(lc, t->node))
		requeue_after = 0; /* something happened meanwhile: look now, not at the deadline */
	if (requeue_after > 0)
		workqueue_add_after(lc->wq, t->node, requeue_after);
	else
		workqueue_add(lc->wq, t->node);
	operation_free(op);
	node_free(n);
	free(t->node);
	free(t->op_id);
	free(t);
}

static void submit_step(struct lifecycle *lc, const struct node *n)
{
	pthread_mutex_lock(&lc->mu);
	if (hmap_get(&lc->in_flight, n->name)) {
		/* Single flight: a task for this node is queued or running. It may be working
		 * from a copy older than what woke us, so have it re-queue the node at once. */
		hmap_put(&lc->in_flight, n->name, IN_FLIGHT_RERUN);
		pthread_mutex_unlock(&lc->mu);
		return;
	}
	hmap_put(&lc->in_flight, n->name, IN_FLIGHT);
	pthread_mutex_unlock(&lc->mu);
	struct op_task *t = xmalloc(sizeof(*t));
	t->lc = lc;
	t->node = xstrdup(n->name);
	t->op_id = xstrdup(n->operation);
	if (executor_submit(lc->cfg.exec, run_op_task, t) < 0) {
		in_flight_clear(lc, n->name);
		free(t->node);
		free(t->op_id);
		free(t);
	}
}

/* ---------------------------------------------------------------- reconcile */

static int finish_power(struct lifecycle *lc, struct node *n, const struct operation *op,
			const struct operation *w)
{
	int ok = op->state == OP_SUCCEEDED;
	const char *action = jsonx_str(op->params, "action");
	char msg[512];
	snprintf(msg, sizeof(msg), "power %s requested by %s: operation %s %s%s%s",
		 action ? action : "?", op->actor ? op->actor : "?", op->id,
		 op_state_name(op->state), op->last_error && !ok ? ": " : "",
		 op->last_error && !ok ? op->last_error : "");
	char *queued = lifecycle_queue_pop(n);
	if (queued) {
		size_t l = strlen(msg);
		snprintf(msg + l, sizeof(msg) - l, "; started queued operation %s", queued);
	}
	free(n->operation);
	n->operation = queued;
	return lifecycle_commit(lc, n, ok ? "Normal" : "Warning",
				ok ? "PowerSucceeded" : "PowerFailed", msg, w);
}

/* The node's operation reached a terminal state: decide where the node goes. With write_op
 * the operation's terminal state is written in the same transaction (the step runner's
 * path); otherwise it is already stored. */
static int finish(struct lifecycle *lc, struct node *n, const struct operation *op, int write_op)
{
	const struct operation *w = write_op ? op : NULL;
	int ok = op->state == OP_SUCCEEDED;
	char why[400];
	snprintf(why, sizeof(why), "operation %s %s%s%s", op->id, op_state_name(op->state),
		 op->last_error ? ": " : "", op->last_error ? op->last_error : "");
	const char *k = op->kind;
	if (n->retire && n->phase != PHASE_RETIRING && n->phase != PHASE_RETIRED)
		return lifecycle_transition(lc, n, PHASE_RETIRING, "retire", "retire requested", w);
	if (strcmp(k, "power") == 0)
		return finish_power(lc, n, op, w);
	/* An adopted node (spec.adopt: `fleetplane slurm import`) is running its jobs: no PXE
	 * boot, no reimage, no burn-in; inspect reached its BMC and that is all it needs. */
	if (strcmp(k, "inspect") == 0 && ok && n->adopt)
		return lifecycle_transition(lc, n, PHASE_AVAILABLE, NULL,
					    "adopted: running node taken over without provisioning",
					    w);
	if (strcmp(k, "inspect") == 0 && ok)
		return lifecycle_transition(lc, n, PHASE_PROVISIONING, "provision", why, w);
	if (strcmp(k, "provision") == 0 && ok)
		return lifecycle_transition(lc, n, PHASE_VALIDATING, "validate", why, w);
	enum remediation_rung rr;
	if (remediation_rung_parse(k, &rr) == 0 && n->remediation.active &&
	    n->phase == PHASE_REPAIRING)
		return lifecycle_finish_rung(lc, n, op, w, rr, why);
	if (strcmp(k, "validate") == 0 && n->remediation.active && n->remediation.attempts > 0)
		return lifecycle_finish_remediation_validate(lc, n, op, w, why);
	if (strcmp(k, "validate") == 0)
		return ok ? lifecycle_transition(lc, n, PHASE_AVAILABLE, NULL, why, w)
			  : lifecycle_transition(lc, n, PHASE_REPAIRING, "repair", why, w);
	if (strcmp(k, "repair") == 0)
		return ok ? lifecycle_transition(lc, n, PHASE_VALIDATING, "validate", why, w)
			  : lifecycle_transition(lc, n, PHASE_FAILED, NULL, why, w);
	if (strcmp(k, "drain") == 0 && ok)
		/* a health remediation climbs its ladder from repairing (lifecycle_remediation_next);
		 * anything else (an operator's drain) rests in maintenance */
		return lifecycle_transition(lc, n,
					    n->remediation.active && !n->remediation.rma
						    ? PHASE_REPAIRING
						    : PHASE_MAINTENANCE,
					    NULL, why, w);
	if (strcmp(k, "retire") == 0 && ok)
		return lifecycle_transition(lc, n, PHASE_RETIRED, NULL, why, w);
	/* Failed or cancelled onboarding/drain/retire: clear the operation (a queued one starts
	 * instead) and try again after a per-node backoff (the cache's notification of this very
	 * write must not restart it at once); the phase deadline makes a stuck node visible. */
	free(n->operation);
	n->operation = lifecycle_queue_pop(n);
	if (n->operation) {
		size_t l = strlen(why);
		snprintf(why + l, sizeof(why) - l, "; started queued operation %s", n->operation);
	}
	int rc = lifecycle_commit(lc, n, "Warning", "OperationFailed", why, w);
	if (rc == 0) {
		int64_t delay = workqueue_add_rate_limited(lc->wq, n->name);
		if (delay < 0)
			delay = 0;
		int64_t *at = xmalloc(sizeof(*at));
		*at = clock_now_ms(lc->cfg.clock) + delay;
		pthread_mutex_lock(&lc->mu);
		free(hmap_put(&lc->retry_at, n->name, at));
		pthread_mutex_unlock(&lc->mu);
	}
	return rc;
}

/* Returns ms to wait before a failed phase may start its operation again (0: go now). */
static int64_t backoff_left(struct lifecycle *lc, const char *name)
{
	return time_left(lc, &lc->retry_at, name);
}

static void check_deadline(struct lifecycle *lc, struct node *n, const struct operation *op)
{
	int64_t dl = scale_timeout(lc, n, phase_deadline(n->phase), FLOOR_PHASE);
	if (!dl || !n->phase_since)
		return;
	int64_t now = now_wall(lc), spent = lifecycle_phase_elapsed(lc, n);
	if (spent < dl) {
		workqueue_add_after(lc->wq, n->name, dl - spent + 1);
		return;
	}
	const struct node_condition *c = node_condition_get(n, "PhaseDeadlineExceeded");
	if (c && c->status == COND_TRUE)
		return;
	char msg[600];
	snprintf(msg, sizeof(msg),
		 "%s for %llds, deadline %llds; stuck at step %s (attempt %d)%s%s",
		 node_phase_name(n->phase), (long long)(spent / 1000), (long long)(dl / 1000),
		 op && op->step < op->nsteps ? op->steps[op->step] : "(no operation)",
		 op ? op->attempt : 0, op && op->last_error ? ": " : "",
		 op && op->last_error ? op->last_error : "");
	node_condition_set(n, "PhaseDeadlineExceeded", COND_TRUE, "PhaseDeadlineExceeded", msg,
			   now);
	if (lifecycle_commit(lc, n, "Warning", "PhaseDeadlineExceeded", msg, NULL) == 0)
		log_warn("lifecycle: phase deadline exceeded node=%s phase=%s", n->name,
			 node_phase_name(n->phase));
}

/* True when a BMC step failed for a reason retrying on a timer cannot fix - the BMC refused
 * the credentials (AuthenticationFailed), the password cannot be resolved
 * (CredentialsUnavailable), or the driver cannot use spec.bmc (InvalidBMCSpec) - and the
 * phase's operation would call the BMC. */
static int credentials_refused(const struct node *n)
{
	const struct node_condition *c = node_condition_get(n, "BMCReachable");
	if (!c || c->status != COND_FALSE || !c->reason ||
	    (strcmp(c->reason, "AuthenticationFailed") != 0 &&
	     strcmp(c->reason, "CredentialsUnavailable") != 0 &&
	     strcmp(c->reason, "InvalidBMCSpec") != 0))
		return 0;
	switch (n->phase) {
	case PHASE_ENROLLED:
	case PHASE_INSPECTING:
	case PHASE_PROVISIONING:
	case PHASE_REPAIRING:
	case PHASE_RETIRING: return 1;
	default: return 0;
	}
}

/* True when op is running but only waiting for an outside party (a boot callback, a burn-in
 * report, a drain) and no step task of the node is on the executor: cancelling it then
 * interrupts nothing. A retire does not wait out such a step's deadline. */
static int only_waiting(struct lifecycle *lc, const struct node *n, const struct operation *op)
{
	if (op->state != OP_RUNNING || op->step >= op->nsteps)
		return 0;
	const struct step_def *def = step_lookup(op->steps[op->step]);
	if (!def || def->uses_bmc || strncmp(def->name, "wait_", 5) != 0)
		return 0;
	pthread_mutex_lock(&lc->mu);
	int busy = hmap_get(&lc->in_flight, n->name) != NULL;
	pthread_mutex_unlock(&lc->mu);
	return !busy;
}

static int reconcile(struct lifecycle *lc, const char *name)
{
	struct node *n = NULL;
	int rc = 0;
	if (lifecycle_node_current(lc, name, &n) < 0)
		return 0; /* deleted (or unreadable: the next change looks again) */
	if (n->operation) {
		struct operation *op = NULL;
		/* This controller's own last write, else the cache's copy, else (just created
		 * elsewhere, or lost) the store's. */
		if (lifecycle_op_current(lc, n->operation, &op) == FP_ENOTFOUND) {
			log_warn("lifecycle: node points at a missing operation node=%s op=%s",
				 n->name, n->operation);
			free(n->operation);
			n->operation = lifecycle_queue_pop(n);
			rc = lifecycle_commit(
				lc, n, "Warning", "OperationLost",
				"the node's operation document is missing; restarting "
				"the phase",
				NULL);
			node_free(n);
			return rc;
		}
		if (op && op_state_terminal(op->state)) {
			rc = finish(lc, n, op, 0);
		} else if (op) {
			if (n->retire && n->phase != PHASE_RETIRING &&
			    strcmp(op->kind, "retire") != 0 &&
			    (op->state == OP_PENDING || only_waiting(lc, n, op))) {
				op->state = OP_CANCELLED;
				op->finished_at = now_wall(lc);
				lifecycle_save_op(lc, op);
			} else {
				check_deadline(lc, n, op);
				int64_t left = time_left(lc, &lc->step_retry_at, n->name);
				if (left > 0)
					workqueue_add_after(lc->wq, n->name, left);
				else
					submit_step(lc, n);
			}
		}
		operation_free(op);
		node_free(n);
		return rc;
	}
	check_deadline(lc, n, NULL);
	if (n->retire && n->phase != PHASE_RETIRING && n->phase != PHASE_RETIRED) {
		rc = lifecycle_transition(lc, n, PHASE_RETIRING, "retire", "retire requested",
					  NULL);
		node_free(n);
		return rc;
	}
	if (credentials_refused(n)) {
		/* Wrong BMC credentials: retrying them on a timer locks BMC accounts; a password
		 * that cannot be resolved or a spec the driver refuses stays so. The phase waits
		 * for a human - a PUT of spec.bmc (which clears the condition) or a power request
		 * that gets through (which sets BMCReachable True). */
		node_free(n);
		return 0;
	}
	if (node_phase_is_transient(n->phase)) {
		int64_t left = backoff_left(lc, n->name);
		if (left > 0) {
			workqueue_add_after(lc->wq, n->name, left);
			node_free(n);
			return 0;
		}
	}
	switch (n->phase) {
	case PHASE_ENROLLED:
		rc = lifecycle_transition(lc, n, PHASE_INSPECTING, "inspect", "enrolled", NULL);
		break;
	case PHASE_INSPECTING:
		rc = lifecycle_transition(lc, n, PHASE_INSPECTING, "inspect", "retrying inspection",
					  NULL);
		break;
	case PHASE_PROVISIONING:
		rc = lifecycle_transition(lc, n, PHASE_PROVISIONING, "provision",
					  "retrying provisioning", NULL);
		break;
	case PHASE_VALIDATING:
		rc = lifecycle_transition(lc, n, PHASE_VALIDATING, "validate",
					  "retrying validation", NULL);
		break;
	case PHASE_AVAILABLE:
	case PHASE_IN_SERVICE:
		if (n->nholds) {
			char why[300];
			snprintf(why, sizeof(why), "hold by %s: %s", n->holds[0].owner,
				 n->holds[0].reason);
			/* the hold is in place already; taking the work off waits for budget, and a
			 * drain that only the health controller asked for also waits while a
			 * correlated-failure breaker of the node's domains is open (an operator's
			 * hold is never stopped by it) */
			if ((!lifecycle_health_automatic(n) ||
			     lifecycle_breaker_gate(lc, n, NULL, &rc)) &&
			    lifecycle_budget_gate(lc, n, NULL, &rc))
				rc = lifecycle_transition(lc, n, PHASE_DRAINING, "drain", why,
							  NULL);
		}
		break;
	case PHASE_DRAINING:
		rc = lifecycle_transition(lc, n, PHASE_DRAINING, "drain", "retrying drain", NULL);
		break;
	case PHASE_MAINTENANCE: {
		/* A machine powered off in maintenance does not come back as schedulable: it
		 * stays here until it is powered on (the power operation's PoweredOn True wakes
		 * this node again). */
		const struct node_condition *pw = node_condition_get(n, "PoweredOn");
		if (!n->nholds && !(pw && pw->status == COND_FALSE))
			rc = lifecycle_transition(lc, n, PHASE_AVAILABLE, NULL,
						  "resumed: no holds remain and nothing changed",
						  NULL);
		break;
	}
	case PHASE_REPAIRING:
		if (n->remediation.active && !n->remediation.rma)
			rc = lifecycle_remediation_next(lc, n);
		else
			rc = lifecycle_transition(lc, n, PHASE_REPAIRING, "repair",
						  "retrying repair", NULL);
		break;
	case PHASE_RETIRING:
		rc = lifecycle_transition(lc, n, PHASE_RETIRING, "retire", "retrying retire", NULL);
		break;
	default: break;
	}
	node_free(n);
	return rc;
}

static void process_key(struct lifecycle *lc, const char *key)
{
	int64_t t0 = clock_now_ms(lc->cfg.clock);
	int rc = reconcile(lc, key);
	if (rc == 0) {
		/* Backoff counts keep growing only while a node keeps failing in a transient
		 * phase; a node at rest starts fresh next time. */
		struct node *n = cache_node_get(lc->cfg.cache, key);
		if (!n || !node_phase_is_transient(n->phase))
			workqueue_forget(lc->wq, key);
		node_free(n);
	}
	metric_observe(lc->m_reconcile, NULL, (double)(clock_now_ms(lc->cfg.clock) - t0) / 1000.0);
	metric_add(lc->m_reconcile_total,
		   (const char *[]){rc == 0              ? "success"
				    : rc == FP_ECONFLICT ? "conflict"
							 : "error"},
		   1);
	if (rc == FP_ECONFLICT) {
		/* The cache was behind the store: look again once it has caught up. */
		workqueue_add_after(lc->wq, key, 5);
	} else if (rc < 0 && rc != FP_ESTATE) {
		log_warn("lifecycle: reconcile failed node=%s rc=%s", key, fp_err_name(rc));
		workqueue_add_rate_limited(lc->wq, key);
	}
}

static void *worker_main(void *arg)
{
	struct lifecycle *lc = arg;
	const char *key;
	while (workqueue_get(lc->wq, &key) == 0) {
		process_key(lc, key);
		workqueue_done(lc->wq, key);
	}
	return NULL;
}

int lifecycle_run_once(struct lifecycle *lc)
{
	const char *key;
	if (workqueue_try_get(lc->wq, &key) < 0)
		return 0;
	process_key(lc, key);
	workqueue_done(lc->wq, key);
	return 1;
}

static void on_node(void *arg, const char *node)
{
	struct lifecycle *lc = arg;
	workqueue_add(lc->wq, node);
}

/* ---------------------------------------------------------------- agent reports */

struct report {
	struct lifecycle *lc;
	char *node;
	char *boot_id;
	int kind; /* 1 booted, 2 validated */
	int passed;
};

static int mutate_report(struct node *n, void *arg)
{
	struct report *r = arg;
	int64_t now = now_wall(r->lc);
	if (r->kind == 1) {
		n->last_boot_at = now;
		free(n->last_boot_id);
		n->last_boot_id = xstrdup(r->boot_id);
		node_condition_set(n, "AgentAlive", COND_TRUE, "BootCallback",
				   "the node's agent called back after boot", now);
	} else {
		n->validated_at = now;
		n->validation_passed = r->passed;
		free(n->validation_boot_id);
		n->validation_boot_id = xstrdup(r->boot_id);
	}
	return 1;
}

static void report_task(void *arg)
{
	struct report *r = arg;
	int rc = lifecycle_update_node(r->lc, r->node, mutate_report, r, NULL);
	if (rc < 0)
		log_warn("lifecycle: could not record agent report node=%s rc=%s", r->node,
			 fp_err_name(rc));
	free(r->node);
	free(r->boot_id);
	free(r);
}

static void submit_report(struct lifecycle *lc, const char *node, int kind, const char *boot_id,
			  int passed)
{
	struct report *r = xcalloc(1, sizeof(*r));
	r->lc = lc;
	r->node = xstrdup(node);
	r->boot_id = xstrdup(boot_id ? boot_id : "");
	r->kind = kind;
	r->passed = passed;
	/* Agent reports have their own lane when one is configured: behind thousands of step
	 * tasks a boot callback would otherwise be recorded after the step stopped waiting. */
	struct fp_executor *e = lc->cfg.report_exec ? lc->cfg.report_exec : lc->cfg.exec;
	if (executor_submit(e, report_task, r) < 0) {
		free(r->node);
		free(r->boot_id);
		free(r);
	}
}

void lifecycle_agent_booted(struct lifecycle *lc, const char *node, const char *boot_id)
{
	submit_report(lc, node, 1, boot_id, 1);
}

void lifecycle_agent_validated(struct lifecycle *lc, const char *node, const char *boot_id,
			       int passed)
{
	submit_report(lc, node, 2, boot_id, passed);
}

/* ---------------------------------------------------------------- lifecycle */

struct lifecycle *lifecycle_new(const struct lifecycle_config *cfg)
{
	struct lifecycle *lc = xcalloc(1, sizeof(*lc));
	lc->cfg = *cfg;
	if (lc->cfg.sim_time_scale < 1)
		lc->cfg.sim_time_scale = 1;
	/* Per-node backoff 100 ms .. 60 s with 20 % jitter; rate-limited (failure) re-queues share
	 * a global bucket of 50/s, burst 200, so a fleet-wide failure retries at a bounded pace. */
	struct workqueue_config wc = {.base_delay_ms = 100,
				      .max_delay_ms = 60000,
				      .jitter = 0.2,
				      .qps = 50,
				      .burst = 200};
	lc->wq = workqueue_new("lifecycle", cfg->clock, cfg->rng, &wc);
	pthread_mutex_init(&lc->mu, NULL);
	hmap_init(&lc->in_flight);
	hmap_init(&lc->retry_at);
	hmap_init(&lc->step_retry_at);
	hmap_init(&lc->bmc_quiet);
	hmap_init(&lc->waiting);
	hmap_init(&lc->mono_phase);
	hmap_init(&lc->mono_step);
	hmap_init(&lc->ryw_nodes);
	hmap_init(&lc->ryw_ops);
	lc->ryw_sweep_at = 256;
	lc->m_ops = metrics_register(METRIC_COUNTER, "fleetplane_operations_total",
				     "Operations finished, by kind and result.", "kind,result",
				     NULL, 0);
	lc->m_op_dur = metrics_register(METRIC_HISTOGRAM, "fleetplane_operation_duration_seconds",
					"Operation duration from start to finish, by kind.", "kind",
					metrics_buckets_slow, METRICS_BUCKETS_SLOW_N);
	lc->m_reconcile = metrics_register(METRIC_HISTOGRAM,
					   "fleetplane_reconcile_duration_seconds",
					   "Time spent in one lifecycle reconcile.", "",
					   metrics_buckets_fast, METRICS_BUCKETS_FAST_N);
	lc->m_reconcile_total = metrics_register(METRIC_COUNTER, "fleetplane_reconcile_total",
						 "Lifecycle reconciles by result.", "result", NULL,
						 0);
	lc->m_phase_changes = metrics_register(METRIC_COUNTER, "fleetplane_phase_changes_total",
					       "Node phase transitions, by the phase entered.",
					       "phase", NULL, 0);
	lc->m_remediations = metrics_register(METRIC_COUNTER, "fleetplane_remediations_total",
					      "Health remediation rungs finished, by rung and "
					      "result.",
					      "action,result", NULL, 0);
	cache_on_node(cfg->cache, on_node, lc);
	return lc;
}

int lifecycle_start(struct lifecycle *lc)
{
	if (lc->cfg.workers <= 0)
		return 0;
	lc->threads = xcalloc((size_t)lc->cfg.workers, sizeof(pthread_t));
	for (int i = 0; i < lc->cfg.workers; i++) {
		if (pthread_create(&lc->threads[i], NULL, worker_main, lc) != 0)
			return FP_EIO;
		pthread_setname_np(lc->threads[i], "fp-reconcile");
		lc->nthreads++;
	}
	return 0;
}

void lifecycle_stop(struct lifecycle *lc)
{
	atomic_store(&lc->stopping, 1);
	workqueue_shutdown(lc->wq);
	for (int i = 0; i < lc->nthreads; i++)
		pthread_join(lc->threads[i], NULL);
	lc->nthreads = 0;
}

void lifecycle_free(struct lifecycle *lc)
{
	if (!lc)
		return;
	lifecycle_stop(lc);
	free(lc->threads);
	workqueue_free(lc->wq);
	hmap_release(&lc->in_flight);
	for (struct hmap_iter it = hmap_iter_start(&lc->retry_at); hmap_iter_next(&it);)
		free(it.e->value);
	hmap_release(&lc->retry_at);
	for (struct hmap_iter it = hmap_iter_start(&lc->step_retry_at); hmap_iter_next(&it);)
		free(it.e->value);
	hmap_release(&lc->step_retry_at);
	for (struct hmap_iter it = hmap_iter_start(&lc->bmc_quiet); hmap_iter_next(&it);)
		free(it.e->value);
	hmap_release(&lc->bmc_quiet);
	hmap_release(&lc->waiting);
	for (int i = 0; i < 2; i++) {
		struct hmap *m = i ? &lc->mono_step : &lc->mono_phase;
		for (struct hmap_iter it = hmap_iter_start(m); hmap_iter_next(&it);)
			free(it.e->value);
		hmap_release(m);
	}
	lifecycle_ryw_release(lc);
	pthread_mutex_destroy(&lc->mu);
	free(lc);
}

size_t lifecycle_in_flight(struct lifecycle *lc)
{
	pthread_mutex_lock(&lc->mu);
	size_t n = lc->in_flight.count;
	pthread_mutex_unlock(&lc->mu);
	return n;
}

struct workqueue *lifecycle_queue(struct lifecycle *lc)
{
	return lc->wq;
}
