/* api_bulk.c - POST /v1/nodes:drain, :resume and :power (issue 15): one request for many nodes,
 * named by a label selector or a list of names, with one result per node.
 *
 * The whole request is checked before any node changes (all-or-nothing validation): the body's
 * keys, exactly one of "selector" and "names", every name, no duplicates, at most
 * API_BULK_MAX nodes, the reason. Then each target is decided in name order:
 *   drain   refused when a disruption budget (core/budget.h) would go over its maxUnavailable:
 *           the nodes already out of each domain value plus those this request accepted
 *           before it; a node already out (or never served, or retiring) takes no budget;
 *   resume  refused when the caller holds no hold on the node;
 *   power   {"action","force"?} as POST /v1/nodes/{name}:power (api_node_power_one: its
 *           refusals - an available node powered off without force, jobs running, ... - are
 *           the node's "refused" with the same detail); a forced off/soft/cycle/reset also
 *           answers to the budgets as a drain does, since it takes a node out without one.
 * and the accepted ones get the same change and audit event as POST /v1/nodes/{name}:drain or
 * :resume (hold owned by operator:<token>; DrainRequested / Resumed), each in its own
 * transaction. The budgets are read when the request runs; the lifecycle controller still
 * applies them when it drains (a node then waits with DisruptionBudgetExhausted), so a
 * request racing another disruption cannot take more nodes out than the budgets allow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "core/budget.h"
#include "core/codec.h"
#include "core/model.h"
#include "engine/objects.h"
#include "store/store.h"

#include "base/banned.h"

#define BULK_REASON_MAX 256
#define BULK_CAS_RETRIES 5

/* One target: its node as read (NULL: not found), and the result. */
struct bulk_target {
	const char *name; /* arena */
	struct node *n;   /* owned */
	const char *result, *reason;
};

struct bulk {
	struct api_req *r;
	struct label_selector *sel; /* selector mode */
	struct bulk_target *t;
	size_t nt, cap;
	int too_many;
	char err[256];
};

static int bulk_name_cmp(const void *a, const void *b)
{
	const struct bulk_target *x = a, *y = b;
	return strcmp(x->name, y->name);
}

/* store_foreach over /nodes/: the nodes the selector matches (selector mode) or the named
 * ones (names mode: t already holds the names, sorted). */
static int bulk_collect(void *arg, const struct store_kv *kv)
{
	struct bulk *b = arg;
	json_t *doc = NULL;
	struct node *n = NULL;
	if (jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) < 0)
		return 0;
	int rc = node_from_json(doc, kv->mod_revision, &n, b->err, sizeof(b->err));
	json_decref(doc);
	if (rc < 0)
		return 0; /* a node that does not decode is not a target; GET shows it */
	if (b->sel) {
		if (!label_selector_match(b->sel, n)) {
			node_free(n);
			return 0;
		}
		if (b->nt >= API_BULK_MAX) {
			b->too_many++;
			node_free(n);
			return 0;
		}
		ALLOC_GROW(b->t, b->nt + 1, b->cap);
		memset(&b->t[b->nt], 0, sizeof(b->t[0]));
		b->t[b->nt].name = api_strdup(b->r, n->name);
		b->t[b->nt++].n = n;
		return 0;
	}
	struct bulk_target key = {.name = n->name};
	struct bulk_target *hit = bsearch(&key, b->t, b->nt, sizeof(*b->t), bulk_name_cmp);
	if (hit && !hit->n)
		hit->n = n;
	else
		node_free(n);
	return 0;
}

/* The budgets' counts: for budget i and a domain value, [members, unavailable]. */
struct bulk_budgets {
	struct budget *b;
	size_t nb;
	json_t **count; /* per budget: {"<value>": [members, unavailable]} */
};

static int bulk_budget_read(void *arg, const struct store_kv *kv)
{
	struct bulk_budgets *bb = arg;
	json_t *doc = NULL;
	char err[160];
	if (bb->nb >= BUDGET_MAX || jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) < 0)
		return 0;
	struct budget one;
	memset(&one, 0, sizeof(one));
	if (budget_from_json(doc, kv->mod_revision, &one, err, sizeof(err)) == 0) {
		bb->b = xrealloc(bb->b, (bb->nb + 1) * sizeof(*bb->b));
		bb->b[bb->nb++] = one;
	}
	json_decref(doc);
	return 0;
}

static int bulk_budget_count(void *arg, const struct store_kv *kv)
{
	struct bulk_budgets *bb = arg;
	json_t *doc = NULL;
	struct node *n = NULL;
	char err[160];
	if (jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) < 0)
		return 0;
	int rc = node_from_json(doc, kv->mod_revision, &n, err, sizeof(err));
	json_decref(doc);
	if (rc < 0)
		return 0;
	int out = budget_node_unavailable(n);
	for (size_t i = 0; i < bb->nb; i++) {
		const char *v = budget_domain_value(&bb->b[i], n);
		if (!v)
			continue;
		json_t *c = json_object_get(bb->count[i], v);
		if (!c) {
			c = json_pack("[i,i]", 0, 0);
			json_object_set_new(bb->count[i], v, c);
		}
		json_array_set_new(c, 0,
				   json_integer(json_integer_value(json_array_get(c, 0)) + 1));
		if (out)
			json_array_set_new(c, 1,
					   json_integer(json_integer_value(json_array_get(c, 1)) +
							1));
	}
	node_free(n);
	return 0;
}

/* Would draining n take one more node out: it has served, is not out already, and is not on
 * its way out of the fleet. */
static int bulk_takes_budget(const struct node *n)
{
	return n->served_at && !budget_node_unavailable(n) && !n->retire &&
	       n->phase != PHASE_RETIRING && n->phase != PHASE_RETIRED;
}

/* Drain admission of n against every budget; on refusal the reason (arena) names the budget
 * like the lifecycle controller's DisruptionBudgetExhausted. Counts n when admitted. */
static const char *bulk_budget_admit(struct api_req *r, struct bulk_budgets *bb,
				     const struct node *n)
{
	if (!bulk_takes_budget(n))
		return NULL;
	for (size_t i = 0; i < bb->nb; i++) {
		const char *v = budget_domain_value(&bb->b[i], n);
		json_t *c = v ? json_object_get(bb->count[i], v) : NULL;
		if (!c)
			continue;
		long long members = json_integer_value(json_array_get(c, 0));
		long long out = json_integer_value(json_array_get(c, 1));
		int max = budget_max(&bb->b[i], (size_t)members);
		if (out + 1 > max)
			return api_printf(r, "budget %s: %s %s has %lld of max %d unavailable",
					  bb->b[i].name, bb->b[i].domain, v, out, max);
	}
	for (size_t i = 0; i < bb->nb; i++) {
		const char *v = budget_domain_value(&bb->b[i], n);
		json_t *c = v ? json_object_get(bb->count[i], v) : NULL;
		if (c)
			json_array_set_new(c, 1,
					   json_integer(json_integer_value(json_array_get(c, 1)) +
							1));
	}
	return NULL;
}

struct bulk_mut {
	int drain;
	const char *me, *reason;
	struct objects_update *u;
	struct api_req *r;
	const char *why; /* set when the node refuses (resume without the caller's hold) */
};

static int bulk_mutate(struct node *n, struct objects_txn *tx, void *arg)
{
	struct bulk_mut *m = arg;
	m->why = NULL;
	if (m->drain) {
		int rc = node_hold_add(n, m->me, m->reason, m->u->now_ms, 0);
		if (rc < 0) {
			m->why = rc == FP_ETOOBIG ? "the node carries the most holds allowed"
						  : "cannot change the node's holds";
			return 0;
		}
		m->u->ev_reason = "DrainRequested";
		m->u->ev_msg = api_printf(m->r, "hold added: %s", m->reason);
		return 1;
	}
	if (!node_hold_find(n, m->me)) {
		m->why = api_printf(m->r, "%s holds no hold on node %s", m->me, n->name);
		return 0;
	}
	node_hold_release(n, m->me);
	m->u->ev_reason = "Resumed";
	m->u->ev_msg = m->reason ? api_printf(m->r, "hold released: %s", m->reason)
				 : "hold released";
	return 1;
}

/* Parses and checks the body into b (targets named, sorted) and *reason. 0, or -1 with the
 * 422 sent. */
static int bulk_parse(struct api_req *r, int drain, int power, struct bulk *b, const char **reason,
		      json_t **bodyp)
{
	static const char *const keys[] = {"selector", "names", "reason", NULL};
	static const char *const keys_power[] = {"selector", "names", "action", "force", NULL};
	json_t *body;
	char err[256];
	if (api_body_keys(r, power ? keys_power : keys, &body) < 0)
		return -1;
	*bodyp = body;
	json_t *sel = json_object_get(body, "selector"), *names = json_object_get(body, "names");
	if (!sel == !names) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", sel ? "names" : "selector"),
				"give exactly one of selector and names");
		return -1;
	}
	if (sel) {
		if (!json_is_string(sel) ||
		    label_selector_parse(json_string_value(sel), &b->sel, err, sizeof(err)) < 0) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "selector"),
					"selector: %s",
					json_is_string(sel) ? err
							    : "expected a label selector string");
			return -1;
		}
	} else {
		size_t n = json_array_size(names);
		if (!json_is_array(names) || n == 0 || n > API_BULK_MAX) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "names"),
					"names: expected an array of 1..%d node names",
					API_BULK_MAX);
			return -1;
		}
		b->t = xcalloc(n, sizeof(*b->t));
		b->cap = n;
		for (size_t i = 0; i < n; i++) {
			const char *s = json_string_value(json_array_get(names, i));
			if (!s || name_validate("name", s, err, sizeof(err)) < 0) {
				api_problem_ext(r, 422,
						json_pack("{s:s}", "field",
							  api_printf(r, "names[%zu]", i)),
						"names[%zu]: %s", i, s ? err : "expected a string");
				return -1;
			}
			b->t[b->nt++].name = s;
		}
		qsort(b->t, b->nt, sizeof(*b->t), bulk_name_cmp);
		for (size_t i = 1; i < b->nt; i++) {
			if (strcmp(b->t[i - 1].name, b->t[i].name) == 0) {
				api_problem_ext(r, 422, json_pack("{s:s}", "field", "names"),
						"names: %s is given twice", b->t[i].name);
				return -1;
			}
		}
	}
	*reason = NULL;
	if (power) {
		static const char *const acts[] = {"on",    "off",    "cycle", "soft",
						   "reset", "status", NULL};
		const char *a = json_string_value(json_object_get(body, "action"));
		int known = 0;
		for (size_t i = 0; a && acts[i]; i++)
			known |= strcmp(a, acts[i]) == 0;
		if (!known) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "action"),
					"action: expected one of on, off, cycle, soft, reset, "
					"status");
			return -1;
		}
		json_t *f = json_object_get(body, "force");
		if (f && !json_is_boolean(f)) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "force"),
					"force: expected true or false");
			return -1;
		}
		return 0;
	}
	json_t *rv = json_object_get(body, "reason");
	if (!rv && !drain)
		return 0;
	const char *s = json_string_value(rv);
	size_t chars = 0;
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			chars = 0;
			break;
		}
		if ((*p & 0xc0) != 0x80)
			chars++;
	}
	if (!s || chars < 1 || chars > BULK_REASON_MAX) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "reason"), "reason: %s",
				rv ? "expected 1..256 characters, no control characters"
				   : "required");
		return -1;
	}
	*reason = s;
	return 0;
}

/* mode: 0 resume, 1 drain, 2 power */
static void bulk_run(struct api_req *r, int mode)
{
	int drain = mode == 1, power = mode == 2;
	json_t *body = NULL;
	struct bulk b;
	struct bulk_budgets bb;
	memset(&b, 0, sizeof(b));
	memset(&bb, 0, sizeof(bb));
	b.r = r;
	const char *reason = NULL;
	struct store *s = r->srv->cfg.store;
	int rc;
	if (bulk_parse(r, drain, power, &b, &reason, &body) < 0)
		goto out;
	const char *action = power ? jsonx_str(body, "action") : NULL;
	int force = power && json_is_true(json_object_get(body, "force"));
	/* a forced off/soft/cycle/reset takes a node that may run work out without a drain:
	 * it answers to the budgets as a drain does */
	int budgeted = drain || (force && action && strcmp(action, "on") != 0 &&
				 strcmp(action, "status") != 0);
	if ((rc = store_foreach(s, OBJECTS_PREFIX_NODES, 0, bulk_collect, &b, NULL)) < 0) {
		api_problem_rc(r, rc, "store list failed");
		goto out;
	}
	if (b.too_many) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "selector"),
				"selector: matches %zu nodes, at most %d at once; nothing was "
				"changed",
				b.nt + (size_t)b.too_many, API_BULK_MAX);
		goto out;
	}
	if (b.sel)
		qsort(b.t, b.nt, sizeof(*b.t), bulk_name_cmp);
	if (budgeted) {
		if ((rc = store_foreach(s, "/budgets/", 0, bulk_budget_read, &bb, NULL)) < 0) {
			api_problem_rc(r, rc, "store list failed");
			goto out;
		}
		bb.count = xcalloc(bb.nb + 1, sizeof(*bb.count));
		for (size_t i = 0; i < bb.nb; i++)
			bb.count[i] = json_object();
		if (bb.nb && (rc = store_foreach(s, OBJECTS_PREFIX_NODES, 0, bulk_budget_count, &bb,
						 NULL)) < 0) {
			api_problem_rc(r, rc, "store list failed");
			goto out;
		}
	}
	const char *me = api_actor(r);
	json_t *items = json_array();
	size_t counts[3] = {0, 0, 0};
	for (size_t i = 0; i < b.nt; i++) {
		struct bulk_target *t = &b.t[i];
		const char *why = NULL, *op_id = NULL;
		if (!t->n) {
			t->result = "not_found";
			why = api_printf(r, "node %s not found", t->name);
		} else if (budgeted && (why = bulk_budget_admit(r, &bb, t->n)) != NULL) {
			t->result = "refused";
		} else if (power) {
			struct api_power_result pr;
			api_node_power_one(r, t->name, action, force, &pr);
			if (pr.status == 202) {
				t->result = "accepted";
				op_id = api_strdup(r, pr.op_id);
			} else {
				t->result = pr.status == 404 ? "not_found" : "refused";
				why = api_strdup(r, pr.why);
			}
		} else {
			struct objects_update u = {.actor = me,
						   .ev_type = "Normal",
						   .now_ms = api_now(r),
						   .rnd = api_event_seq(r),
						   .max_attempts = BULK_CAS_RETRIES};
			struct bulk_mut m = {drain, me, reason, &u, r, NULL};
			char err[256] = "";
			rc = objects_update_node(s, t->name, bulk_mutate, &m, &u, NULL, err,
						 sizeof(err));
			if (rc == FP_ENOTFOUND) {
				t->result = "not_found";
				why = api_printf(r, "node %s not found", t->name);
			} else if (rc < 0) {
				t->result = "refused";
				why = api_printf(r, "%s",
						 rc == FP_ECONFLICT
							 ? "the node kept changing; retry"
							 : fp_err_msg(rc));
			} else if (m.why) {
				t->result = "refused";
				why = m.why;
			} else {
				t->result = "accepted";
				log_info("node action node=%s action=%s actor=%s bulk=1", t->name,
					 u.ev_reason, me);
			}
		}
		counts[t->result[0] == 'a' ? 0 : t->result[0] == 'r' ? 1 : 2]++;
		json_t *it = json_pack("{s:s,s:s}", "name", t->name, "result", t->result);
		if (why)
			json_object_set_new(it, "reason", json_string(why));
		if (op_id)
			json_object_set_new(it, "operation", json_string(op_id));
		json_array_append_new(items, it);
	}
	api_reply_json(r, 200,
		       json_pack("{s:o,s:I,s:I,s:I}", "items", items, "accepted",
				 (json_int_t)counts[0], "refused", (json_int_t)counts[1],
				 "notFound", (json_int_t)counts[2]));
out:
	for (size_t i = 0; i < b.nt; i++)
		node_free(b.t[i].n);
	free(b.t);
	label_selector_free(b.sel);
	for (size_t i = 0; i < bb.nb; i++) {
		budget_release(&bb.b[i]);
		if (bb.count)
			json_decref(bb.count[i]);
	}
	free(bb.b);
	free(bb.count);
}

void api_nodes_bulk_drain(struct api_req *r)
{
	bulk_run(r, 1);
}

void api_nodes_bulk_resume(struct api_req *r)
{
	bulk_run(r, 0);
}

void api_nodes_bulk_power(struct api_req *r)
{
	bulk_run(r, 2);
}
