/* engine/objects.h - the object layer: the one place that knows how fleetplane's kinds are laid
 * out in the store (docs/architecture.md "The store") and how a node or an operation is read,
 * changed and started. It sits on the store and the informer cache (engine) and under every
 * writer (controllers, API): a key is spelled here and nowhere else, a typed read says in its
 * name whether it comes from the cache or from the store, a node is changed with
 * objects_update_node (read, mutate, compare-and-swap with its audit event, bounded retries), and
 * an operation document is created only by objects_op_start.
 *
 * Nothing here logs or keeps state; every function is thread-safe as the store and cache are. */
#ifndef FP_ENGINE_OBJECTS_H
#define FP_ENGINE_OBJECTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "engine/cache.h"
#include "store/store.h"

/* ---------------------------------------------------------------- key schema */

/* The kinds stored, each under its own prefix. */
enum objects_kind {
	OBJECTS_NODE = 0,    /* /nodes/<name> */
	OBJECTS_OPERATION,   /* /operations/<id> */
	OBJECTS_EVENT,       /* /events/<id> */
	OBJECTS_SITE,        /* /sites/<name> */
	OBJECTS_RACK,        /* /racks/<name> */
	OBJECTS_TOKEN,       /* /tokens/<name> */
	OBJECTS_IDEMPOTENCY, /* /idempotency/<hash> */
	OBJECTS_SIM_HW,      /* /sim/hw/<node> */
	OBJECTS_HEALTHEVENT, /* /healthevents/<node>/<id> */
	OBJECTS_POLICY,      /* /policies/<name> ("default") */
	OBJECTS_BUDGET,      /* /budgets/<name> */
	OBJECTS_BREAKER,     /* /breakers/<domain>.<value> */
	OBJECTS_RMA,         /* /rmas/<operation id> */
	OBJECTS__COUNT
};

#define OBJECTS_PREFIX_NODES "/nodes/"
#define OBJECTS_PREFIX_OPERATIONS "/operations/"
#define OBJECTS_PREFIX_EVENTS "/events/"
#define OBJECTS_PREFIX_HEALTHEVENTS "/healthevents/"

/* The prefix of kind k, with its trailing '/' ("/nodes/"); static storage. */
const char *objects_prefix(enum objects_kind k);
/* Writes <prefix of k><name> into buf (size bytes). Returns 0, or FP_ETOOBIG when the key does
 * not fit in buf or is longer than STORE_MAX_KEY (buf then holds "" when size > 0). name is not
 * validated: the store refuses a bad key. */
int objects_key(char *buf, size_t size, enum objects_kind k, const char *name);
/* The same key as a new string (caller frees). */
char *objects_key_dup(enum objects_kind k, const char *name);
/* Shorthands for the two kinds most code names: /nodes/<name> and /operations/<id>. */
int objects_key_node(char *buf, size_t size, const char *name);
char *objects_key_node_dup(const char *name);
int objects_key_op(char *buf, size_t size, const char *id);
char *objects_key_op_dup(const char *id);
/* /healthevents/<node>/<id> (id NULL: the node's prefix "/healthevents/<node>/"), new string. */
char *objects_key_healthevent_dup(const char *node, const char *id);
/* The name part of a key of kind k (borrowed from key), or NULL when key is not of that kind. */
const char *objects_key_name(enum objects_kind k, const char *key);

/* ---------------------------------------------------------------- typed reads */

/* Reads node `name` from the store (not the cache). On success returns 0, *out a new node
 * (caller frees with node_free) and *mod_rev (may be NULL) its mod_revision, also in
 * (*out)->resource_version. Errors: store_get's (FP_ENOTFOUND: err "node NAME not found";
 * FP_EINVAL for a name that makes a bad key; FP_EIO: err "reading node NAME: ..."), FP_EPARSE
 * when the stored document is not JSON or does not decode as a node (err says why). *out is
 * NULL on error. err may be NULL. */
int objects_store_node(struct store *s, const char *name, struct node **out, int64_t *mod_rev,
		       char *err, size_t errlen);
/* The same for operation `id` (err "operation ID not found", ...). */
int objects_store_op(struct store *s, const char *id, struct operation **out, int64_t *mod_rev,
		     char *err, size_t errlen);
/* Reads node `name` from the informer cache: a copy (caller frees) or NULL when the cache does
 * not hold it. It may lag the store; its resource_version is the revision it reflects. */
struct node *objects_cache_node(struct cache *c, const char *name);
/* Reads operation `id` from the informer cache: a copy (caller frees) or NULL. */
struct operation *objects_cache_op(struct cache *c, const char *id);

/* ---------------------------------------------------------------- transactions */

/* A growing list of store ops for one transaction, at most STORE_MAX_TXN_OPS. Strings given to
 * objects_txn_put and made by the other adders are owned by the txn; objects_txn_add borrows
 * (the caller keeps them alive until the commit). */
struct objects_txn {
	struct store_op *ops;
	size_t n, cap;
	char **own;
	size_t nown, owncap;
};

void objects_txn_init(struct objects_txn *t);
/* Frees what the txn owns and empties it (it can be reused). */
void objects_txn_release(struct objects_txn *t);
/* Appends a put of key/value (both new strings, now owned by t). Returns the op's index. */
size_t objects_txn_put(struct objects_txn *t, char *key, char *value, int64_t expect);
/* Appends a copy of op; its strings stay the caller's. Returns the op's index. */
size_t objects_txn_add(struct objects_txn *t, const struct store_op *op);
/* Appends the put of n's stored form (NODE_JSON_STORE) at its key with expect. */
size_t objects_txn_put_node(struct objects_txn *t, const struct node *n, int64_t expect);
/* Appends the put of op's document at its key with expect (a change to an existing operation:
 * its mod_revision; creation is objects_op_start's). */
size_t objects_txn_put_op(struct objects_txn *t, const struct operation *op, int64_t expect);
/* Appends an audit event (core/event.h) made at wall time now_ms, its id seeded with rnd;
 * type "Normal" or "Warning", object "node/<name>" or similar; create-if-absent. */
size_t objects_txn_event(struct objects_txn *t, int64_t now_ms, uint64_t rnd, const char *type,
			 const char *actor, const char *object, const char *reason,
			 const char *msg);

/* ---------------------------------------------------------------- update */

#define OBJECTS_UPDATE_ATTEMPTS 8

/* Changes n (the node as just read from the store) in place. May append ops to tx (after the
 * node's own put, which is tx's op 0): events, an idempotency record, a health event. Returns
 * 1 to write, 0 to leave the node as it is (nothing is written), < 0 to abort with that code.
 * Called once per attempt with a fresh node and an emptied tx. */
typedef int (*objects_mutate_fn)(struct node *n, struct objects_txn *tx, void *arg);

/* How an update is audited and retried, and what it did. */
struct objects_update {
	/* in: the audit event written in the same transaction (none when ev_reason is NULL);
	 * mutate may change ev_msg/ev_reason/ev_type through its arg */
	const char *actor, *ev_type, *ev_reason, *ev_msg;
	int64_t now_ms;   /* the event's time */
	uint64_t rnd;     /* seeds the event id */
	int max_attempts; /* 0: OBJECTS_UPDATE_ATTEMPTS */
	/* in, may be NULL: the node to start from instead of a read of the store (e.g. the
	 * informer's copy, borrowed): the first attempt changes a copy of it with the CAS on its
	 * resource_version, and only when that loses (FP_ECONFLICT) is the store read. A start
	 * with resource_version 0 (never stored) is ignored. */
	const struct node *start;
	/* out */
	int attempts;        /* store reads made (1 when the first CAS held; 0 with a start
			      * whose CAS held) */
	int64_t revision;    /* the revision written, 0 when nothing was */
	size_t failed_index; /* the op that failed the last commit */
};

/* Read-modify-write of node `name`: reads it from the store (or starts from u->start), calls mutate, writes the node with
 * a compare-and-swap on the mod_revision it read, mutate's ops and the audit event in one
 * transaction; on FP_ECONFLICT reads again, at most max_attempts times. Returns 0 (written, or
 * mutate said 0), mutate's code, objects_store_node's errors, the store's (FP_ECONFLICT when
 * every attempt lost; FP_EEXIST for e.g. an idempotency record that exists, with
 * u->failed_index). If out is not NULL it receives the node as now stored (as read when
 * nothing was written; caller frees). err (may be NULL) gets detail of a read error. */
int objects_update_node(struct store *s, const char *name, objects_mutate_fn mutate, void *arg,
			struct objects_update *u, struct node **out, char *err, size_t errlen);

/* ---------------------------------------------------------------- start operation */

/* What to start. */
struct objects_op_spec {
	const char *node;
	const char *kind;     /* a kind of objects_op_kinds, or "power" */
	const json_t *params; /* borrowed, copied; may be NULL. "power" needs {"action": A} with A
			       * one of on, off, cycle, reset, soft; "retire" with
			       * {"skipPowerOff": true} is the retire without power off;
			       * "provision" and "reimage" with {"networkBoot": {...}} take the
			       * network-boot steps (inspection and deploy ramdisk, reboot to
			       * disk, the written system's boot report) */
	const char *actor;
	const char *reason;
	const char *idempotency_key; /* may be NULL */
	int64_t now_ms;              /* created/updated time and the id's time */
	uint64_t rnd;                /* the id's random part */
};

/* The steps of operation kind `kind` (NULL-terminated, static), or NULL for a kind whose steps
 * depend on its params ("power") or an unknown kind. */
const char *const *objects_op_kind_steps(const char *kind);

/* The only code that creates operation documents. Builds a pending operation for spec: id
 * "<kind>-<13-digit wall ms>-<8 hex digits of rnd>", steps from the kind table (power: the one
 * step "power_<action>"; retire with skipPowerOff: "skip_power_off"), and appends its
 * create-if-absent put to tx (when tx is not NULL), to commit in the same transaction as the
 * node change that points at it. *out is the new operation (caller frees). Returns 0 or
 * FP_EINVAL (unknown kind, bad power action; err says which), with *out NULL and tx untouched. */
int objects_op_start(const struct objects_op_spec *spec, struct objects_txn *tx,
		     struct operation **out, char *err, size_t errlen);

#endif
