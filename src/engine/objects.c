/* objects.c - the object layer (see objects.h): the key schema, typed reads from the store and
 * the informer cache, transactions that own their strings, the node update with CAS retries
 * and its audit event, and the one function that creates operation documents, with the table
 * of operation kinds and their steps (docs/architecture.md "Operations and steps"). */
#include "engine/objects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "core/codec.h"
#include "core/event.h"

/* ---------------------------------------------------------------- key schema */

static const char *const prefixes[OBJECTS__COUNT] = {
	[OBJECTS_NODE] = OBJECTS_PREFIX_NODES,
	[OBJECTS_OPERATION] = OBJECTS_PREFIX_OPERATIONS,
	[OBJECTS_EVENT] = OBJECTS_PREFIX_EVENTS,
	[OBJECTS_SITE] = "/sites/",
	[OBJECTS_RACK] = "/racks/",
	[OBJECTS_TOKEN] = "/tokens/",
	[OBJECTS_IDEMPOTENCY] = "/idempotency/",
	[OBJECTS_SIM_HW] = "/sim/hw/",
	[OBJECTS_HEALTHEVENT] = OBJECTS_PREFIX_HEALTHEVENTS,
	[OBJECTS_POLICY] = "/policies/",
	[OBJECTS_BUDGET] = "/budgets/",
	[OBJECTS_BREAKER] = "/breakers/",
	[OBJECTS_RMA] = "/rmas/",
};

const char *objects_prefix(enum objects_kind k)
{
	BUG_ON((unsigned)k >= OBJECTS__COUNT);
	return prefixes[k];
}

int objects_key(char *buf, size_t size, enum objects_kind k, const char *name)
{
	int len = snprintf(buf, size, "%s%s", objects_prefix(k), name);
	if (len < 0 || (size_t)len >= size || len > STORE_MAX_KEY) {
		if (size)
			buf[0] = 0;
		return FP_ETOOBIG;
	}
	return 0;
}

char *objects_key_dup(enum objects_kind k, const char *name)
{
	return xasprintf("%s%s", objects_prefix(k), name);
}

int objects_key_node(char *buf, size_t size, const char *name)
{
	return objects_key(buf, size, OBJECTS_NODE, name);
}

char *objects_key_node_dup(const char *name)
{
	return objects_key_dup(OBJECTS_NODE, name);
}

int objects_key_op(char *buf, size_t size, const char *id)
{
	return objects_key(buf, size, OBJECTS_OPERATION, id);
}

char *objects_key_op_dup(const char *id)
{
	return objects_key_dup(OBJECTS_OPERATION, id);
}

char *objects_key_healthevent_dup(const char *node, const char *id)
{
	return xasprintf("%s%s/%s", OBJECTS_PREFIX_HEALTHEVENTS, node, id ? id : "");
}

const char *objects_key_name(enum objects_kind k, const char *key)
{
	const char *p = objects_prefix(k);
	size_t n = strlen(p);
	return key && strncmp(key, p, n) == 0 ? key + n : NULL;
}

/* ---------------------------------------------------------------- typed reads */

typedef int (*decode_fn)(const json_t *doc, int64_t rv, void **out, char *err, size_t errlen);

static int decode_node(const json_t *doc, int64_t rv, void **out, char *err, size_t errlen)
{
	struct node *n = NULL;
	int rc = node_from_json(doc, rv, &n, err, errlen);
	*out = n;
	return rc;
}

static int decode_op(const json_t *doc, int64_t rv, void **out, char *err, size_t errlen)
{
	struct operation *op = NULL;
	int rc = operation_from_json(doc, rv, &op, err, errlen);
	*out = op;
	return rc;
}

static int store_read(struct store *s, enum objects_kind k, const char *what, const char *name,
		      decode_fn decode, void **out, int64_t *mod_rev, char *err, size_t errlen)
{
	char key[STORE_MAX_KEY + 2];
	struct store_kv kv = {0};
	json_t *doc = NULL;
	*out = NULL;
	if (mod_rev)
		*mod_rev = 0;
	if (objects_key(key, sizeof(key), k, name) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "%s name too long", what);
	int rc = store_get(s, key, &kv);
	if (rc == FP_ENOTFOUND)
		return fp_errf(rc, err, errlen, "%s %s not found", what, name);
	if (rc < 0)
		return fp_errf(rc, err, errlen, "reading %s %s: %s", what, name, fp_err_msg(rc));
	rc = jsonx_parse(kv.value, strlen(kv.value), &doc, err, errlen);
	if (rc == 0)
		rc = decode(doc, kv.mod_revision, out, err, errlen);
	if (rc < 0)
		rc = FP_EPARSE;
	else if (mod_rev)
		*mod_rev = kv.mod_revision;
	json_decref(doc);
	store_kv_release(&kv);
	return rc;
}

int objects_store_node(struct store *s, const char *name, struct node **out, int64_t *mod_rev,
		       char *err, size_t errlen)
{
	void *p = NULL;
	int rc = store_read(s, OBJECTS_NODE, "node", name, decode_node, &p, mod_rev, err, errlen);
	*out = p;
	return rc;
}

int objects_store_op(struct store *s, const char *id, struct operation **out, int64_t *mod_rev,
		     char *err, size_t errlen)
{
	void *p = NULL;
	int rc = store_read(s, OBJECTS_OPERATION, "operation", id, decode_op, &p, mod_rev, err,
			    errlen);
	*out = p;
	return rc;
}

struct node *objects_cache_node(struct cache *c, const char *name)
{
	return cache_node_get(c, name);
}

struct operation *objects_cache_op(struct cache *c, const char *id)
{
	return cache_operation_get(c, id);
}

/* ---------------------------------------------------------------- transactions */

void objects_txn_init(struct objects_txn *t)
{
	memset(t, 0, sizeof(*t));
}

void objects_txn_release(struct objects_txn *t)
{
	for (size_t i = 0; i < t->nown; i++)
		free(t->own[i]);
	free(t->own);
	free(t->ops);
	memset(t, 0, sizeof(*t));
}

/* Empties t, keeping nothing it owned. */
static void txn_reset(struct objects_txn *t)
{
	objects_txn_release(t);
}

static void txn_own(struct objects_txn *t, char *s)
{
	if (t->nown == t->owncap) {
		t->owncap = t->owncap ? 2 * t->owncap : 8;
		t->own = xreallocarray(t->own, t->owncap, sizeof(*t->own));
	}
	t->own[t->nown++] = s;
}

size_t objects_txn_add(struct objects_txn *t, const struct store_op *op)
{
	BUG_ON(t->n >= STORE_MAX_TXN_OPS);
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->ops = xreallocarray(t->ops, t->cap, sizeof(*t->ops));
	}
	t->ops[t->n] = *op;
	return t->n++;
}

size_t objects_txn_put(struct objects_txn *t, char *key, char *value, int64_t expect)
{
	txn_own(t, key);
	txn_own(t, value);
	return objects_txn_add(t, &(struct store_op){STORE_OP_PUT, key, value, expect});
}

size_t objects_txn_put_node(struct objects_txn *t, const struct node *n, int64_t expect)
{
	return objects_txn_put(t, objects_key_node_dup(n->name), node_to_text(n, NODE_JSON_STORE),
			       expect);
}

size_t objects_txn_put_op(struct objects_txn *t, const struct operation *op, int64_t expect)
{
	json_t *oj = operation_to_json(op, 0);
	size_t i = objects_txn_put(t, objects_key_op_dup(op->id), jsonx_dumps(oj), expect);
	json_decref(oj);
	return i;
}

size_t objects_txn_event(struct objects_txn *t, int64_t now_ms, uint64_t rnd, const char *type,
			 const char *actor, const char *object, const char *reason, const char *msg)
{
	char id[EVENT_ID_LEN];
	event_id(now_ms, rnd, id);
	json_t *ev = event_new(id, type, actor, object, reason, msg, now_ms);
	size_t i = objects_txn_put(t, objects_key_dup(OBJECTS_EVENT, id), jsonx_dumps(ev),
				   STORE_ABSENT);
	json_decref(ev);
	return i;
}

/* ---------------------------------------------------------------- update */

int objects_update_node(struct store *s, const char *name, objects_mutate_fn mutate, void *arg,
			struct objects_update *u, struct node **out, char *err, size_t errlen)
{
	int max = u->max_attempts > 0 ? u->max_attempts : OBJECTS_UPDATE_ATTEMPTS;
	struct objects_txn tx;
	int rc = FP_ECONFLICT;
	objects_txn_init(&tx);
	u->attempts = 0;
	u->revision = 0;
	u->failed_index = 0;
	if (out)
		*out = NULL;
	for (int attempt = 0; attempt < max; attempt++) {
		struct node *n = NULL;
		int64_t mod = 0;
		if (attempt == 0 && u->start && u->start->resource_version > 0) {
			n = node_dup(u->start);
			mod = n->resource_version;
		} else {
			u->attempts++;
			rc = objects_store_node(s, name, &n, &mod, err, errlen);
			if (rc < 0)
				break;
		}
		txn_reset(&tx);
		/* the node's put comes first; its value is made after mutate */
		objects_txn_add(&tx, &(struct store_op){STORE_OP_PUT, NULL, NULL, mod});
		rc = mutate(n, &tx, arg);
		if (rc > 0) {
			char *key = objects_key_node_dup(n->name),
			     *val = node_to_text(n, NODE_JSON_STORE);
			txn_own(&tx, key);
			txn_own(&tx, val);
			tx.ops[0].key = key;
			tx.ops[0].value = val;
			if (u->ev_reason) {
				char object[STORE_MAX_KEY + 8];
				snprintf(object, sizeof(object), "node/%s", n->name);
				objects_txn_event(&tx, u->now_ms, u->rnd,
						  u->ev_type ? u->ev_type : "Normal", u->actor,
						  object, u->ev_reason, u->ev_msg ? u->ev_msg : "");
			}
			int64_t rev = 0;
			rc = store_txn(s, tx.ops, tx.n, &rev, &u->failed_index);
			if (rc == 0) {
				u->revision = rev;
				n->resource_version = rev;
			}
		}
		if (rc >= 0 && out) {
			*out = n;
			n = NULL;
		}
		node_free(n);
		if (rc != FP_ECONFLICT) {
			rc = rc < 0 ? rc : 0;
			break;
		}
	}
	objects_txn_release(&tx);
	return rc;
}

/* ---------------------------------------------------------------- start operation */

/* Operation kinds and their steps (docs/architecture.md "Operations and steps"). "power" is
 * not here: its one step is "power_<action>" from its params. */
static const struct {
	const char *kind;
	const char *const steps[8];
} op_kinds[] = {
	{"inspect", {"power_status", "read_inventory", NULL}},
	{"provision",
	 {"set_boot_pxe", "power_on_or_cycle", "wait_boot_callback", "set_boot_disk", NULL}},
	{"validate", {"check_gpu_count", "wait_burn_in", NULL}},
	{"repair", {"power_off", "power_on", "wait_boot_callback", NULL}},
	{"drain", {"workload_drained", NULL}},
	{"retire", {"power_off", NULL}},
	/* health remediation rungs (op kind = rung name, core/model.h) */
	{"gpu_reset", {"request_gpu_reset", "wait_agent_action", NULL}},
	{"reboot", {"power_off", "power_on", "wait_boot_callback", NULL}},
	{"reimage",
	 {"set_boot_pxe", "power_on_or_cycle", "wait_boot_callback", "set_boot_disk", NULL}},
	{"rma", {"open_rma", NULL}},
};

static const char *const retire_skip_steps[] = {"skip_power_off", NULL};
/* provision and reimage through the boot service (params.networkBoot, spec.provision): the
 * inspection ramdisk reports, the deploy ramdisk writes the image, then the node is set to boot
 * from disk, power cycled, and the written system reports its boot (docs/provisioning.md). */
static const char *const network_boot_steps[] = {"set_boot_pxe",    "power_on_or_cycle",
						 "wait_inspection", "wait_deploy",
						 "set_boot_disk",   "reboot_to_disk",
						 "wait_disk_boot",  NULL};
static const char *const power_actions[] = {"on", "off", "cycle", "soft", "reset", "status", NULL};

const char *const *objects_op_kind_steps(const char *kind)
{
	for (size_t i = 0; kind && i < sizeof(op_kinds) / sizeof(op_kinds[0]); i++)
		if (strcmp(op_kinds[i].kind, kind) == 0)
			return op_kinds[i].steps;
	return NULL;
}

int objects_op_start(const struct objects_op_spec *spec, struct objects_txn *tx,
		     struct operation **out, char *err, size_t errlen)
{
	const char *const *steps = objects_op_kind_steps(spec->kind);
	const char *action = NULL;
	*out = NULL;
	if (spec->kind && strcmp(spec->kind, "power") == 0) {
		action = jsonx_str(spec->params, "action");
		size_t i = 0;
		while (action && power_actions[i] && strcmp(power_actions[i], action) != 0)
			i++;
		if (!action || !power_actions[i])
			return fp_errf(FP_EINVAL, err, errlen, "power: unknown action %s",
				       action ? action : "(none)");
	} else if (!steps) {
		return fp_errf(FP_EINVAL, err, errlen, "unknown operation kind %s",
			       spec->kind ? spec->kind : "(none)");
	} else if (strcmp(spec->kind, "retire") == 0 &&
		   json_is_true(json_object_get(spec->params, "skipPowerOff"))) {
		steps = retire_skip_steps;
	} else if ((strcmp(spec->kind, "provision") == 0 || strcmp(spec->kind, "reimage") == 0) &&
		   json_is_object(json_object_get(spec->params, "networkBoot"))) {
		steps = network_boot_steps;
	}
	struct operation *op = operation_new();
	op->id = xasprintf("%s-%013lld-%08x", spec->kind, (long long)spec->now_ms,
			   (unsigned)(spec->rnd & 0xffffffffu));
	op->node = xstrdup(spec->node);
	op->kind = xstrdup(spec->kind);
	if (action)
		op->steps[op->nsteps++] = xasprintf("power_%s", action);
	for (size_t j = 0; steps && steps[j] && op->nsteps < OP_MAX_STEPS; j++)
		op->steps[op->nsteps++] = xstrdup(steps[j]);
	op->actor = xstrdup(spec->actor);
	op->reason = xstrdup(spec->reason);
	if (spec->params)
		op->params = json_deep_copy(spec->params);
	if (spec->idempotency_key)
		op->idempotency_key = xstrdup(spec->idempotency_key);
	op->state = OP_PENDING;
	op->created_at = op->updated_at = spec->now_ms;
	if (tx)
		objects_txn_put_op(tx, op, STORE_ABSENT);
	*out = op;
	return 0;
}
