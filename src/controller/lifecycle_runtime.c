/* lifecycle_runtime.c - the lifecycle controller's step runtime: what both halves of the
 * controller (lifecycle.c: reconcile, the steps on the executor; lifecycle_remediation.c: the
 * health remediation ladder) build on. Reads of the node and its operations from the store
 * (through the object layer), the one transaction that commits a node with its operations and
 * events, read-modify-write of a node with CAS retries, status deltas, the node's operation
 * queue, phase transitions with the operation they start (objects_op_start) and the wake-up of
 * nodes waiting for a disruption budget. It calls neither half, so the two halves depend on it
 * and lifecycle.c on lifecycle_remediation.c, never back: no include circle. Declarations and
 * the shared types are in lifecycle_int.h. */
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
#include "controller/lifecycle.h"
#include "controller/lifecycle_int.h"
#include "core/codec.h"
#include "core/event.h"
#include "engine/cache.h"
#include "engine/objects.h"
#include "engine/workqueue.h"
#include "store/store.h"

#include "base/banned.h"

static void event_op(struct lifecycle *lc, struct store_op *o, char **key_out, char **val_out,
		     const char *type, const char *node, const char *reason, const char *msg)
{
	char id[EVENT_ID_LEN], object[96];
	int64_t now = now_wall(lc);
	event_id(now, fp_rng_u64(lc->cfg.rng), id);
	snprintf(object, sizeof(object), "node/%s", node);
	json_t *ev = event_new(id, type, LIFECYCLE_ACTOR, object, reason, msg, now);
	*key_out = xasprintf("/events/%s", id);
	*val_out = jsonx_dumps(ev);
	json_decref(ev);
	o->type = STORE_OP_PUT;
	o->key = *key_out;
	o->value = *val_out;
	o->expect = STORE_ABSENT;
}

/* The node and the operation are read straight from the store (not the cache): the object
 * layer's typed reads. */
int lifecycle_load_node(struct lifecycle *lc, const char *name, struct node **out)
{
	int rc = objects_store_node(lc->cfg.store, name, out, NULL, NULL, 0);
	if (rc == 0)
		lifecycle_note_node(lc, *out);
	return rc;
}

int lifecycle_load_op(struct lifecycle *lc, const char *id, struct operation **out)
{
	int rc = objects_store_op(lc->cfg.store, id, out, NULL, NULL, 0);
	if (rc == 0)
		lifecycle_note_op(lc, *out);
	return rc;
}

/* ---------------------------------------------------------------- read your own writes */

/* A step's writes reach the informer cache a few ms after they commit; the step that runs
 * next for the same node (often at once: the task re-queues it) would otherwise find the
 * cache's older copy, lose its compare-and-swap, or read the store again for every node and
 * operation it touches (half of the executor's time at 3,000 nodes, docs/benchmarks.md). The
 * notes keep this controller's last write of each until the cache has applied that revision:
 * the cache's revision (cache_revision) is the store revision it reflects, so a note at or
 * below it is no newer than the cache's copy (or its absence: a delete) and is dropped. */

static char ryw_unknown_mark;
#define RYW_UNKNOWN ((void *)&ryw_unknown_mark)

enum {
	RYW_SWEEP_MIN = 256
};

/* Drops the notes the cache has caught up with. Caller holds mu. */
static void ryw_sweep(struct lifecycle *lc, int64_t crev)
{
	for (struct hmap_iter it = hmap_iter_start(&lc->ryw_nodes); hmap_iter_next(&it);) {
		struct node *n = it.e->value;
		if (n != RYW_UNKNOWN && n->resource_version <= crev)
			node_free(hmap_remove(&lc->ryw_nodes, it.e->key));
	}
	for (struct hmap_iter it = hmap_iter_start(&lc->ryw_ops); hmap_iter_next(&it);) {
		struct operation *op = it.e->value;
		if (op != RYW_UNKNOWN && op->resource_version <= crev)
			operation_free(hmap_remove(&lc->ryw_ops, it.e->key));
	}
	size_t live = lc->ryw_nodes.count + lc->ryw_ops.count;
	lc->ryw_sweep_at = 2 * live > RYW_SWEEP_MIN ? 2 * live : RYW_SWEEP_MIN;
}

/* Keeps the copy d (owned) of a document stored at rev under key in m unless a note at least
 * as new is there; a note at or below the cache's revision is not kept (and clears an older
 * or unknown one). free_fn frees a note. */
static void ryw_put(struct lifecycle *lc, struct hmap *m, const char *key, void *d, int64_t rev,
		    void (*free_fn)(void *), int64_t (*rev_of)(const void *))
{
	int64_t crev = cache_revision(lc->cfg.cache);
	pthread_mutex_lock(&lc->mu);
	void *old = hmap_get(m, key);
	if (rev <= crev) {
		if (old == RYW_UNKNOWN || (old && rev_of(old) <= crev))
			hmap_remove(m, key);
		else
			old = NULL; /* a note newer than the cache stays */
		free_fn(d);
	} else if (old && old != RYW_UNKNOWN && rev_of(old) >= rev) {
		old = NULL;
		free_fn(d);
	} else {
		hmap_put(m, key, d);
	}
	if (old && old != RYW_UNKNOWN)
		free_fn(old);
	if (m->count + (m == &lc->ryw_nodes ? lc->ryw_ops.count : lc->ryw_nodes.count) >=
	    lc->ryw_sweep_at)
		ryw_sweep(lc, crev);
	pthread_mutex_unlock(&lc->mu);
}

static void free_node_v(void *p)
{
	node_free(p);
}

static void free_op_v(void *p)
{
	operation_free(p);
}

static int64_t node_rev_v(const void *p)
{
	return ((const struct node *)p)->resource_version;
}

static int64_t op_rev_v(const void *p)
{
	return ((const struct operation *)p)->resource_version;
}

void lifecycle_note_node(struct lifecycle *lc, const struct node *n)
{
	if (!n || n->resource_version <= 0 || !lc->cfg.cache)
		return;
	if (n->resource_version <= cache_revision(lc->cfg.cache)) {
		ryw_put(lc, &lc->ryw_nodes, n->name, NULL, n->resource_version, free_node_v,
			node_rev_v);
		return;
	}
	struct node *d;
	if (n->inventory) {
		/* kept as text, as the cache keeps it: a copy of the tree per lookup costs more */
		json_t *inv = n->inventory;
		((struct node *)n)->inventory = NULL;
		d = node_dup(n);
		((struct node *)n)->inventory = inv;
		free(d->inventory_text);
		d->inventory_text = jsonx_dumps(inv);
	} else {
		d = node_dup(n);
	}
	ryw_put(lc, &lc->ryw_nodes, d->name, d, d->resource_version, free_node_v, node_rev_v);
}

void lifecycle_note_op(struct lifecycle *lc, const struct operation *op)
{
	if (!op || op->resource_version <= 0 || !lc->cfg.cache)
		return;
	if (op->resource_version <= cache_revision(lc->cfg.cache)) {
		ryw_put(lc, &lc->ryw_ops, op->id, NULL, op->resource_version, free_op_v, op_rev_v);
		return;
	}
	struct operation *d = operation_dup(op);
	ryw_put(lc, &lc->ryw_ops, d->id, d, d->resource_version, free_op_v, op_rev_v);
}

static void ryw_unknown(struct lifecycle *lc, struct hmap *m, const char *key,
			void (*free_fn)(void *))
{
	pthread_mutex_lock(&lc->mu);
	void *old = hmap_put(m, key, RYW_UNKNOWN);
	if (old && old != RYW_UNKNOWN)
		free_fn(old);
	pthread_mutex_unlock(&lc->mu);
}

void lifecycle_node_unknown(struct lifecycle *lc, const char *name)
{
	ryw_unknown(lc, &lc->ryw_nodes, name, free_node_v);
}

void lifecycle_op_unknown(struct lifecycle *lc, const char *id)
{
	ryw_unknown(lc, &lc->ryw_ops, id, free_op_v);
}

/* After a write that failed with rc: a conflict or a refusal changed nothing; any other
 * failure (an I/O error, a timeout of a remote store) may have landed. */
static int write_outcome_unknown(int rc)
{
	return rc < 0 && rc != FP_ECONFLICT && rc != FP_EEXIST && rc != FP_ENOTFOUND &&
	       rc != FP_EINVAL;
}

int lifecycle_node_current(struct lifecycle *lc, const char *name, struct node **out)
{
	*out = NULL;
	int64_t crev = cache_revision(lc->cfg.cache);
	int unknown = 0;
	pthread_mutex_lock(&lc->mu);
	struct node *r = hmap_get(&lc->ryw_nodes, name);
	if (r == RYW_UNKNOWN)
		unknown = 1;
	else if (r && r->resource_version > crev)
		*out = node_dup(r);
	else if (r)
		node_free(hmap_remove(&lc->ryw_nodes, name));
	pthread_mutex_unlock(&lc->mu);
	if (*out)
		return 0;
	if (!unknown && (*out = cache_node_get(lc->cfg.cache, name)))
		return 0;
	return lifecycle_load_node(lc, name, out);
}

int lifecycle_op_current(struct lifecycle *lc, const char *id, struct operation **out)
{
	*out = NULL;
	int64_t crev = cache_revision(lc->cfg.cache);
	int unknown = 0;
	pthread_mutex_lock(&lc->mu);
	struct operation *r = hmap_get(&lc->ryw_ops, id);
	if (r == RYW_UNKNOWN)
		unknown = 1;
	else if (r && r->resource_version > crev)
		*out = operation_dup(r);
	else if (r)
		operation_free(hmap_remove(&lc->ryw_ops, id));
	pthread_mutex_unlock(&lc->mu);
	if (*out)
		return 0;
	if (!unknown && (*out = cache_operation_get(lc->cfg.cache, id)))
		return 0;
	return lifecycle_load_op(lc, id, out);
}

void lifecycle_ryw_release(struct lifecycle *lc)
{
	for (struct hmap_iter it = hmap_iter_start(&lc->ryw_nodes); hmap_iter_next(&it);)
		if (it.e->value != RYW_UNKNOWN)
			node_free(it.e->value);
	hmap_release(&lc->ryw_nodes);
	for (struct hmap_iter it = hmap_iter_start(&lc->ryw_ops); hmap_iter_next(&it);)
		if (it.e->value != RYW_UNKNOWN)
			operation_free(it.e->value);
	hmap_release(&lc->ryw_ops);
}

/* Notes op as written at rev (a copy: op is the caller's). */
static void note_op_at(struct lifecycle *lc, const struct operation *op, int64_t rev)
{
	struct operation *d = operation_dup(op);
	d->resource_version = rev;
	lifecycle_note_op(lc, d);
	operation_free(d);
}

/* Commits a node (CAS on its resource_version), optionally a finished operation (CAS on its
 * resource_version: the operation's end and what the node does next are one write), a new
 * operation (new_put: its create-if-absent put from objects_op_start), an event, cancelled operations (queued ones dropped by a
 * retire; CAS each) and the events of a status delta, in one transaction. Updates
 * n->resource_version on success. */
static int commit_x(struct lifecycle *lc, struct node *n, const struct store_op *new_put,
		    const char *ev_type, const char *ev_reason, const char *ev_msg,
		    const struct operation *done_op, struct operation *const *cancel,
		    size_t ncancel, const struct status_delta *d)
{
	enum {
		MAX_OPS = 4 + NODE_MAX_QUEUED + DELTA_MAX_EVENTS
	};
	struct store_op ops[MAX_OPS];
	char *own[2 * MAX_OPS];
	size_t nops = 0, nown = 0;
	char *nkey = own[nown++] = objects_key_node_dup(n->name);
	char *nval = own[nown++] = node_to_text(n, NODE_JSON_STORE);
	ops[nops++] = (struct store_op){STORE_OP_PUT, nkey, nval, n->resource_version};
	if (new_put)
		ops[nops++] = *new_put;
	const struct operation *docs[2 + NODE_MAX_QUEUED];
	int64_t expect[2 + NODE_MAX_QUEUED];
	size_t ndocs = 0;
	if (done_op) {
		docs[ndocs] = done_op;
		expect[ndocs++] = done_op->resource_version;
	}
	for (size_t i = 0; i < ncancel && i < NODE_MAX_QUEUED; i++) {
		docs[ndocs] = cancel[i];
		expect[ndocs++] = cancel[i]->resource_version;
	}
	for (size_t i = 0; i < ndocs; i++) {
		json_t *oj = operation_to_json(docs[i], 0);
		char *k = own[nown++] = objects_key_op_dup(docs[i]->id);
		char *v = own[nown++] = jsonx_dumps(oj);
		json_decref(oj);
		ops[nops++] = (struct store_op){STORE_OP_PUT, k, v, expect[i]};
	}
	if (ev_reason) {
		event_op(lc, &ops[nops], &own[nown], &own[nown + 1], ev_type, n->name, ev_reason,
			 ev_msg);
		nops++;
		nown += 2;
	}
	for (size_t i = 0; d && i < d->nev; i++) {
		event_op(lc, &ops[nops], &own[nown], &own[nown + 1], d->ev[i].type, n->name,
			 d->ev[i].reason, d->ev[i].msg);
		nops++;
		nown += 2;
	}
	int64_t rev = 0;
	int rc = store_txn(lc->cfg.store, ops, nops, &rev, NULL);
	if (rc == 0) {
		n->resource_version = rev;
		lifecycle_note_node(lc, n);
		for (size_t i = 0; i < ndocs; i++)
			note_op_at(lc, docs[i], rev);
	} else if (write_outcome_unknown(rc)) {
		lifecycle_node_unknown(lc, n->name);
		for (size_t i = 0; i < ndocs; i++)
			lifecycle_op_unknown(lc, docs[i]->id);
	}
	for (size_t i = 0; i < nown; i++)
		free(own[i]);
	return rc;
}

int lifecycle_commit(struct lifecycle *lc, struct node *n, const char *ev_type,
		     const char *ev_reason, const char *ev_msg, const struct operation *done_op)
{
	return commit_x(lc, n, NULL, ev_type, ev_reason, ev_msg, done_op, NULL, 0, NULL);
}

struct update_arg {
	struct lifecycle *lc;
	lifecycle_node_mutate_fn mutate;
	void *arg;
	const struct status_delta *evs;
};

/* objects_update_node's mutate: the lifecycle's mutate, then the events it left in evs. */
static int update_mutate(struct node *n, struct objects_txn *tx, void *arg)
{
	struct update_arg *a = arg;
	int rc = a->mutate(n, a->arg);
	if (rc <= 0 || !a->evs)
		return rc;
	char object[STORE_MAX_KEY + 8];
	snprintf(object, sizeof(object), "node/%s", n->name);
	for (size_t i = 0; i < a->evs->nev; i++)
		objects_txn_event(tx, now_wall(a->lc), fp_rng_u64(a->lc->cfg.rng),
				  a->evs->ev[i].type, LIFECYCLE_ACTOR, object, a->evs->ev[i].reason,
				  a->evs->ev[i].msg);
	return rc;
}

/* Read-modify-write of a node from the store with CAS retries: objects_update_node (8
 * attempts). mutate returns 1 to write, 0 to skip, < 0 to abort; it may fill evs (events written
 * in the same transaction; it resets them on each attempt). If out is not NULL it receives the
 * node as now stored (caller frees). */
int lifecycle_update_node_ev(struct lifecycle *lc, const char *name,
			     lifecycle_node_mutate_fn mutate, void *arg, struct node **out,
			     const struct status_delta *evs)
{
	struct update_arg a = {lc, mutate, arg, evs};
	struct node *start = NULL, *stored = NULL;
	lifecycle_node_current(lc, name, &start); /* none: objects_update_node reads the store */
	struct objects_update u = {.actor = LIFECYCLE_ACTOR, .max_attempts = 8, .start = start};
	int rc = objects_update_node(lc->cfg.store, name, update_mutate, &a, &u, &stored, NULL, 0);
	node_free(start);
	if (rc == 0)
		lifecycle_note_node(lc, stored);
	else if (write_outcome_unknown(rc))
		lifecycle_node_unknown(lc, name);
	if (out)
		*out = stored;
	else
		node_free(stored);
	return rc;
}

int lifecycle_update_node(struct lifecycle *lc, const char *name, lifecycle_node_mutate_fn mutate,
			  void *arg, struct node **out)
{
	return lifecycle_update_node_ev(lc, name, mutate, arg, out, NULL);
}

int lifecycle_save_op(struct lifecycle *lc, struct operation *op)
{
	char key[STORE_MAX_KEY + 1];
	objects_key_op(key, sizeof(key), op->id);
	op->updated_at = now_wall(lc);
	json_t *oj = operation_to_json(op, 0);
	char *val = jsonx_dumps(oj);
	json_decref(oj);
	int64_t rev = 0;
	int rc = store_put(lc->cfg.store, key, val, op->resource_version, &rev);
	free(val);
	if (rc == 0) {
		op->resource_version = rev;
		lifecycle_note_op(lc, op);
	} else if (write_outcome_unknown(rc)) {
		lifecycle_op_unknown(lc, op->id);
	}
	return rc;
}

/* Appends an event to a delta (dropped past DELTA_MAX_EVENTS: the condition still says it). */
void lifecycle_delta_event(struct status_delta *d, const char *type, const char *reason,
			   const char *fmt, ...)
{
	if (d->nev >= DELTA_MAX_EVENTS)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->ev[d->nev].msg, sizeof(d->ev[d->nev].msg), fmt, ap);
	va_end(ap);
	d->ev[d->nev].type = type;
	d->ev[d->nev].reason = reason;
	d->nev++;
}

/* op->params members the power steps keep (an object; created when absent). */
json_t *lifecycle_op_params(struct operation *op)
{
	if (!json_is_object(op->params)) {
		json_decref(op->params);
		op->params = json_object();
	}
	return op->params;
}

/* Builds the operation of `kind` the controller starts on n (objects_op_start: the one place
 * that makes operation documents and knows each kind's steps) and appends its create put to
 * tx; params borrowed, may be NULL. */
static struct operation *op_make(struct lifecycle *lc, const struct node *n, const char *kind,
				 const char *reason, const json_t *params, struct objects_txn *tx)
{
	struct operation *op = NULL;
	char err[128];
	json_t *own = NULL;
	/* A node with spec.provision is provisioned and reimaged through the boot service: the
	 * operation records which image it writes (the network-boot steps, engine/objects.h). */
	if (n->provision && (strcmp(kind, "provision") == 0 || strcmp(kind, "reimage") == 0)) {
		own = params ? json_deep_copy(params) : json_object();
		json_object_set_new(own, "networkBoot",
				    json_pack("{s:s?}", "image", jsonx_str(n->provision, "image")));
		params = own;
	}
	struct objects_op_spec spec = {.node = n->name,
				       .kind = kind,
				       .params = params,
				       .actor = LIFECYCLE_ACTOR,
				       .reason = reason,
				       .now_ms = now_wall(lc),
				       .rnd = fp_rng_u64(lc->cfg.rng)};
	int rc = objects_op_start(&spec, tx, &op, err, sizeof(err));
	json_decref(own);
	BUG_ON(rc < 0); /* the controller starts only kinds of the table */
	return op;
}

/* Takes the first queued operation id off n's queue (caller owns it), or NULL. */
char *lifecycle_queue_pop(struct node *n)
{
	if (!n->nqueued)
		return NULL;
	char *id = n->queued_ops[0];
	memmove(n->queued_ops, n->queued_ops + 1, (n->nqueued - 1) * sizeof(char *));
	n->nqueued--;
	return id;
}

/* Empties n's queue; the queued operations that are still pending are returned in cancel[]
 * (state cancelled, with why; caller frees) to be written with the node. With keep_retire,
 * the first pending queued operation of kind "retire" (a retire without power off the API
 * queued) is not cancelled: its id is returned in *kept (caller frees). */
static size_t queue_cancel(struct lifecycle *lc, struct node *n, const char *why,
			   struct operation **cancel, char **kept)
{
	size_t k = 0;
	for (size_t i = 0; i < n->nqueued; i++) {
		struct operation *q = NULL;
		if (lifecycle_load_op(lc, n->queued_ops[i], &q) == 0 &&
		    !op_state_terminal(q->state) && kept && !*kept && q->kind &&
		    strcmp(q->kind, "retire") == 0) {
			*kept = n->queued_ops[i];
			operation_free(q);
			continue;
		}
		if (q && !op_state_terminal(q->state) && k < NODE_MAX_QUEUED) {
			q->state = OP_CANCELLED;
			q->finished_at = q->updated_at = now_wall(lc);
			free(q->last_error);
			q->last_error = xasprintf("cancelled: %s", why);
			cancel[k++] = q;
		} else {
			operation_free(q);
		}
		free(n->queued_ops[i]);
	}
	n->nqueued = 0;
	return k;
}

static void mono_note(struct lifecycle *lc, struct hmap *m, const char *name, int64_t wall,
		      int64_t mono);

/* Moves n to phase `to` (checked against the phase machine) with an event. The node's next
 * operation is the first queued one (an operation requested through the API waits for the one
 * in flight and goes before the phase's own: a transient phase starts its operation again when
 * the queued one has ended), else a new op_kind if given. Entering retiring cancels the queue.
 * Returns the store result. lifecycle_transition_x is lifecycle_transition with extra events
 * (d, may be NULL) in the same write and parameters (params, borrowed, may be NULL) for the new
 * operation. */
int lifecycle_transition_x(struct lifecycle *lc, struct node *n, enum node_phase to,
			   const char *op_kind, const char *why, const struct operation *done_op,
			   const struct status_delta *d, const json_t *params)
{
	char err[160], msg[512];
	enum node_phase from = n->phase;
	if (from != to && node_phase_check(from, to, err, sizeof(err)) < 0) {
		log_warn("lifecycle: refused transition node=%s err=\"%s\"", n->name, err);
		return FP_ESTATE;
	}
	struct operation *cancel[NODE_MAX_QUEUED];
	size_t ncancel = 0;
	char *queued = NULL;
	if (to == PHASE_RETIRING || to == PHASE_RETIRED)
		ncancel = queue_cancel(lc, n, "the node is retiring", cancel,
				       to == PHASE_RETIRING ? &queued : NULL);
	else
		queued = lifecycle_queue_pop(n);
	struct objects_txn tx;
	objects_txn_init(&tx);
	struct operation *op = op_kind && !queued ? op_make(lc, n, op_kind, why, params, &tx)
						  : NULL;
	const char *next = queued ? queued : op ? op->id : NULL;
	int64_t now = now_wall(lc), now_mono = clock_now_ms(lc->cfg.clock);
	if (from != to) {
		/* status.servedAt: the first time the node became available, kept forever; a
		 * node that served before servedAt existed gets the time it entered service. */
		if (!n->served_at && to == PHASE_AVAILABLE)
			n->served_at = now;
		if (!n->served_at && (from == PHASE_AVAILABLE || from == PHASE_IN_SERVICE))
			n->served_at = n->phase_since ? n->phase_since : now;
		n->phase = to;
		n->phase_since = now;
		node_condition_remove(n, "PhaseDeadlineExceeded");
	}
	free(n->operation);
	n->operation = next ? xstrdup(next) : NULL;
	if (from != to)
		snprintf(msg, sizeof(msg), "%s → %s: %s%s%s%s", node_phase_name(from),
			 node_phase_name(to), why,
			 queued ? "; started queued operation "
			 : next ? "; started operation "
				: "",
			 next ? next : "", ncancel ? "; cancelled queued operations" : "");
	else
		snprintf(msg, sizeof(msg), "%s: %s; started %soperation %s", node_phase_name(to),
			 why, queued ? "queued " : "", next ? next : "-");
	char reason[32];
	const char *pn = node_phase_name(to);
	snprintf(reason, sizeof(reason), "%c%s", pn[0] - 32, pn + 1);
	if (from == to)
		snprintf(reason, sizeof(reason), "OperationStarted");
	int rc = commit_x(lc, n, op ? &tx.ops[0] : NULL, to == PHASE_FAILED ? "Warning" : "Normal",
			  reason, msg, done_op, cancel, ncancel, d);
	if (rc == 0) {
		if (op) /* the finished and cancelled ones: commit_x */
			note_op_at(lc, op, n->resource_version);
	} else if (write_outcome_unknown(rc) && op) {
		lifecycle_op_unknown(lc, op->id);
	}
	if (rc == 0 && from != to) {
		metric_add(lc->m_phase_changes, (const char *[]){pn}, 1);
		/* the phase began at this monotonic instant: a wall-clock step between this write
		 * and the first look at the deadline must not count (issue 16 item 5) */
		mono_note(lc, &lc->mono_phase, n->name, n->phase_since, now_mono);
	}
	if (rc == 0 && from != to && (to == PHASE_AVAILABLE || to == PHASE_RETIRED))
		lifecycle_wake_waiting(lc); /* a node back in service (or gone) frees budget */
	operation_free(op);
	objects_txn_release(&tx);
	free(queued);
	for (size_t i = 0; i < ncancel; i++)
		operation_free(cancel[i]);
	return rc;
}

int lifecycle_transition(struct lifecycle *lc, struct node *n, enum node_phase to,
			 const char *op_kind, const char *why, const struct operation *done_op)
{
	return lifecycle_transition_x(lc, n, to, op_kind, why, done_op, NULL, NULL);
}

void lifecycle_wake_waiting(struct lifecycle *lc)
{
	pthread_mutex_lock(&lc->mu);
	for (struct hmap_iter it = hmap_iter_start(&lc->waiting); hmap_iter_next(&it);)
		workqueue_add(lc->wq, it.e->key);
	pthread_mutex_unlock(&lc->mu);
}

/* ---------------------------------------------------------------- monotonic deadlines */

struct lifecycle_mono {
	int64_t wall; /* the stored instant, wall-clock ms */
	int64_t mono; /* the same instant on the monotonic clock */
};

/* The monotonic instant for the stored wall instant `wall` of node `name` in map m. */
static int64_t mono_of(struct lifecycle *lc, struct hmap *m, const char *name, int64_t wall)
{
	pthread_mutex_lock(&lc->mu);
	struct lifecycle_mono *e = hmap_get(m, name);
	if (!e || e->wall != wall) {
		if (!e) {
			e = xmalloc(sizeof(*e));
			hmap_put(m, name, e);
		}
		e->wall = wall;
		e->mono = clock_now_ms(lc->cfg.clock) - (now_wall(lc) - wall);
	}
	int64_t mono = e->mono;
	pthread_mutex_unlock(&lc->mu);
	return mono;
}

/* Sets the translation of node's instant `wall` in m to `mono` (read at the same moment). */
static void mono_note(struct lifecycle *lc, struct hmap *m, const char *name, int64_t wall,
		      int64_t mono)
{
	pthread_mutex_lock(&lc->mu);
	struct lifecycle_mono *e = hmap_get(m, name);
	if (!e) {
		e = xmalloc(sizeof(*e));
		hmap_put(m, name, e);
	}
	e->wall = wall;
	e->mono = mono;
	pthread_mutex_unlock(&lc->mu);
}

void lifecycle_mono_step_note(struct lifecycle *lc, const char *node, int64_t wall, int64_t mono)
{
	mono_note(lc, &lc->mono_step, node, wall, mono);
}

int64_t lifecycle_step_left(struct lifecycle *lc, const char *node, const struct operation *op)
{
	return mono_of(lc, &lc->mono_step, node, op->step_deadline) - clock_now_ms(lc->cfg.clock);
}

int64_t lifecycle_phase_elapsed(struct lifecycle *lc, const struct node *n)
{
	return clock_now_ms(lc->cfg.clock) - mono_of(lc, &lc->mono_phase, n->name, n->phase_since);
}
