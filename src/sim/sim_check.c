/* sim_check.c - the invariant checker of `fleetplane sim` (sim.h). After every unit of work the
 * fleet runs (fleet_step's each hook) and every timer step, it reads the store's change feed
 * from where it stopped, so it sees every committed revision of every node and operation - not
 * a sample - and checks, per revision:
 *   - budgets: no disruption budget's domain value has more nodes counted unavailable
 *     (core/budget.h budget_node_unavailable) than the budget's max;
 *   - single flight: an operation runs only while no other operation of the same node runs;
 *   - phases: every change is a legal transition (core/model.h node_phase_check), and nothing
 *     goes from repairing, failed or draining straight back to available or in_service:
 *     validating comes first;
 *   - holds: a `health` hold goes only with a validated remediation (validating -> available
 *     with a new succeeded history record) or by the technician's audited release; an
 *     operator's hold only when that operator released it.
 * Lost or doubled side effects and convergence are checked by the world (sim_world.c) against
 * the counters of the simulated hardware. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/jsonx.h"
#include "core/codec.h"
#include "sim/sim_int.h"
#include "store/store.h"

void sim_violation(struct sim_checker *c, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->violations++ == 0) {
		double t = (double)c->h.now(c->h.arg) / 1000.0;
		snprintf(c->first, sizeof(c->first),
			 "step %ld t=%.3fs: %s\ntrace (newest last):\n%s", c->h.steps(c->h.arg), t,
			 msg, c->trace.data ? c->trace.data : "");
	}
}

static void trace_line(struct sim_checker *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void trace_line(struct sim_checker *c, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	/* keep about the last 12 lines */
	if (c->trace.len > 1200) {
		const char *cut = strchr(c->trace.data + c->trace.len - 1000, '\n');
		if (cut) {
			size_t keep = c->trace.len - (size_t)(cut + 1 - c->trace.data);
			memmove(c->trace.data, cut + 1, keep);
			c->trace.len = keep;
			c->trace.data[keep] = 0;
		}
	}
	buf_printf(&c->trace, "  %s\n", line);
}

static void load_budgets(struct sim_checker *c)
{
	struct store_kv *kvs = NULL;
	size_t nb = 0;
	int more = 0;
	if (store_list(c->h.store, "/budgets/", NULL, 0, &kvs, &nb, NULL, &more) < 0)
		return;
	c->budgets = xcalloc(nb ? nb : 1, sizeof(*c->budgets));
	c->dom_members = xcalloc(nb ? nb : 1, sizeof(*c->dom_members));
	c->dom_out = xcalloc(nb ? nb : 1, sizeof(*c->dom_out));
	c->out_peak = xcalloc(nb ? nb : 1, sizeof(*c->out_peak));
	for (size_t b = 0; b < nb; b++) {
		json_t *doc = NULL;
		if (jsonx_parse(kvs[b].value, strlen(kvs[b].value), &doc, NULL, 0) == 0 &&
		    budget_from_json(doc, kvs[b].mod_revision, &c->budgets[c->nbudgets], NULL, 0) ==
			    0) {
			hmap_init(&c->dom_members[c->nbudgets]);
			hmap_init(&c->dom_out[c->nbudgets]);
			c->nbudgets++;
		}
		json_decref(doc);
	}
	store_kv_array_free(kvs, nb);
}

void sim_checker_init(struct sim_checker *c, const struct sim_checker_hooks *h)
{
	memset(c, 0, sizeof(*c));
	c->h = *h;
	long n = h->nodes;
	c->tr = xcalloc((size_t)n, sizeof(*c->tr));
	for (long i = 0; i < n; i++) {
		c->tr[i].phase = PHASE__COUNT;
		c->tr[i].rung = -1;
	}
	hmap_init(&c->ops);
	hmap_init(&c->seen_ops);
	buf_init(&c->trace, 0);
	load_budgets(c);
	c->rev = 0;
}

void sim_checker_release(struct sim_checker *c)
{
	long n = c->h.nodes;
	for (long i = 0; i < n; i++)
		free(c->tr[i].op);
	free(c->tr);
	for (struct hmap_iter it = hmap_iter_start(&c->ops); hmap_iter_next(&it);)
		free(it.e->value);
	hmap_release(&c->ops);
	hmap_release(&c->seen_ops);
	for (size_t b = 0; b < c->nbudgets; b++) {
		budget_release(&c->budgets[b]);
		hmap_release(&c->dom_members[b]);
		hmap_release(&c->dom_out[b]);
	}
	free(c->budgets);
	free(c->dom_members);
	free(c->dom_out);
	free(c->out_peak);
	buf_release(&c->trace);
}

static intptr_t map_add(struct hmap *m, const char *key, intptr_t d)
{
	intptr_t v = (intptr_t)hmap_get(m, key) + d;
	hmap_put(m, key, (void *)v);
	return v;
}

/* members of each budget domain value, counted once from the first revision of each node */
static void budgets_member(struct sim_checker *c, const struct node *n)
{
	for (size_t b = 0; b < c->nbudgets; b++) {
		const char *v = budget_domain_value(&c->budgets[b], n);
		if (v)
			map_add(&c->dom_members[b], v, 1);
	}
}

static void budgets_update(struct sim_checker *c, const struct node *n, int was, int is)
{
	if (was == is)
		return;
	for (size_t b = 0; b < c->nbudgets; b++) {
		const struct budget *bg = &c->budgets[b];
		const char *v = budget_domain_value(bg, n);
		if (!v)
			continue;
		intptr_t out = map_add(&c->dom_out[b], v, is - was);
		size_t members = (size_t)(intptr_t)hmap_get(&c->dom_members[b], v);
		int max = budget_max(bg, members);
		if (out > c->out_peak[b])
			c->out_peak[b] = (int)out;
		if (is > was && out > max)
			sim_violation(c,
				      "budget %s: %s %s has %ld nodes unavailable, max %d "
				      "(node %s went %s)",
				      bg->name, bg->domain, v, (long)out, max, n->name,
				      node_phase_name(n->phase));
	}
}

/* A new newest remediationHistory record that says succeeded (the history keeps the newest
 * NODE_MAX_REMEDIATION_HISTORY, so its length stops growing: the record's time tells). */
int sim_hist_new_success(const struct node *n, int64_t prev_at)
{
	if (!n->nremediation_history)
		return 0;
	const struct node_remediation_record
		*r = &n->remediation_history[n->nremediation_history - 1];
	return r->at > prev_at && strcmp(r->result, "succeeded") == 0;
}

static int has_operator_hold(const struct node *n)
{
	for (size_t i = 0; i < n->nholds; i++)
		if (strncmp(n->holds[i].owner, "operator:", 9) == 0)
			return 1;
	return 0;
}

static void node_revision(struct sim_checker *c, const char *name, const char *value, int64_t rev)
{
	int i = c->h.node_index(c->h.arg, name);
	if (i < 0 || !value)
		return;
	json_t *doc = NULL;
	struct node *n = NULL;
	char err[256];
	if (jsonx_parse(value, strlen(value), &doc, err, sizeof(err)) < 0 ||
	    node_from_json(doc, rev, &n, err, sizeof(err)) < 0) {
		sim_violation(c, "node %s revision %" PRId64 " does not decode: %s", name, rev,
			      err);
		json_decref(doc);
		return;
	}
	json_decref(doc);
	struct sim_node_track *t = &c->tr[i];
	int first = t->phase == PHASE__COUNT;
	int held = node_hold_find(n, "health") != NULL;
	int oheld = has_operator_hold(n);
	int counted = budget_node_unavailable(n);
	if (first) {
		budgets_member(c, n);
	} else {
		if (t->phase != n->phase) {
			char why[256];
			if (node_phase_check(t->phase, n->phase, why, sizeof(why)) < 0)
				sim_violation(c, "%s: illegal transition %s -> %s: %s", n->name,
					      node_phase_name(t->phase), node_phase_name(n->phase),
					      why);
			if ((t->phase == PHASE_REPAIRING || t->phase == PHASE_FAILED ||
			     t->phase == PHASE_DRAINING) &&
			    (n->phase == PHASE_AVAILABLE || n->phase == PHASE_IN_SERVICE))
				sim_violation(c,
					      "%s returned to service from %s without validating",
					      n->name, node_phase_name(t->phase));
			if (getenv("FP_SIM_TRACE"))
				fprintf(stderr,
					"t=%" PRId64 " rev %" PRId64 " %s %s -> %s holds=%zu\n",
					c->h.now(c->h.arg) / 1000, rev, n->name,
					node_phase_name(t->phase), node_phase_name(n->phase),
					n->nholds);
			if (getenv("FP_SIM_TRACE"))
				for (size_t q = 0; q < n->nholds; q++)
					fprintf(stderr, "    hold %s: %s\n", n->holds[q].owner,
						n->holds[q].reason);
			if (getenv("FP_SIM_TRACE") && n->phase == PHASE_FAILED) {
				for (size_t q = 0; q < n->nconditions; q++)
					fprintf(stderr, "    %s %s %s\n", n->conditions[q].type,
						n->conditions[q].reason ? n->conditions[q].reason
									: "",
						n->conditions[q].message ? n->conditions[q].message
									 : "");
			}
			trace_line(c, "rev %" PRId64 " %s %s -> %s holds=%zu op=%s", rev, n->name,
				   node_phase_name(t->phase), node_phase_name(n->phase), n->nholds,
				   n->operation ? n->operation : "-");
		}
		if (t->health_held && !held) {
			int validated = t->phase == PHASE_VALIDATING &&
					n->phase == PHASE_AVAILABLE &&
					sim_hist_new_success(n, t->hist_at);
			if (!validated && !c->h.release_expected(c->h.arg, i, "health"))
				sim_violation(c, "%s lost its health hold going %s -> %s", n->name,
					      node_phase_name(t->phase), node_phase_name(n->phase));
		}
		if (t->op_held && !oheld && !c->h.release_expected(c->h.arg, i, "operator"))
			sim_violation(c, "%s lost its operator hold without the operator", n->name);
		if (node_schedulable(n) && n->remediation.active)
			sim_violation(c, "%s is schedulable while a remediation is active",
				      n->name);
	}
	const char *watch = getenv("FP_SIM_NODE");
	if (watch && strcmp(watch, n->name) == 0) {
		fprintf(stderr, "rev %" PRId64 " %s %s holds=%zu op=%s\n", rev, n->name,
			node_phase_name(n->phase), n->nholds, n->operation ? n->operation : "-");
		for (size_t q = 0; q < n->nconditions; q++)
			fprintf(stderr, "    %s=%s %s %s\n", n->conditions[q].type,
				cond_status_name(n->conditions[q].status),
				n->conditions[q].reason ? n->conditions[q].reason : "",
				n->conditions[q].message ? n->conditions[q].message : "");
	}
	budgets_update(c, n, first ? 0 : t->counted, counted);
	c->h.node_seen(c->h.arg, i, t, n);
	t->phase = n->phase;
	t->health_held = held;
	t->op_held = oheld;
	t->hist = n->nremediation_history;
	t->hist_at = n->nremediation_history
			     ? n->remediation_history[n->nremediation_history - 1].at
			     : 0;
	t->counted = counted;
	free(t->op);
	t->op = n->operation ? xstrdup(n->operation) : NULL;
	node_free(n);
}

static void op_revision(struct sim_checker *c, const char *id, const char *value, int64_t rev)
{
	if (!value) {
		free(hmap_remove(&c->ops, id));
		return;
	}
	json_t *doc = NULL;
	struct operation *op = NULL;
	if (jsonx_parse(value, strlen(value), &doc, NULL, 0) < 0 ||
	    operation_from_json(doc, rev, &op, NULL, 0) < 0) {
		json_decref(doc);
		sim_violation(c, "operation %s revision %" PRId64 " does not decode", id, rev);
		return;
	}
	json_decref(doc);
	if (!hmap_get(&c->seen_ops, id)) {
		hmap_put(&c->seen_ops, id, (void *)1);
		int i = c->h.node_index(c->h.arg, op->node);
		const char *k = op->kind;
		const char *act = jsonx_str(op->params, "action");
		if (i >= 0) {
			struct sim_node_track *t = &c->tr[i];
			int power = strcmp(k, "power") == 0;
			if (strcmp(k, "provision") == 0 || strcmp(k, "repair") == 0 ||
			    strcmp(k, "reboot") == 0 || strcmp(k, "reimage") == 0 ||
			    (power && act && strcmp(act, "off") && strcmp(act, "soft") &&
			     strcmp(act, "status")))
				t->may_power_on++;
			if (strcmp(k, "repair") == 0 || strcmp(k, "reboot") == 0 ||
			    strcmp(k, "retire") == 0 ||
			    (power && act && (!strcmp(act, "off") || !strcmp(act, "soft"))))
				t->may_power_off++;
			if (strcmp(k, "gpu_reset") == 0)
				t->may_gpu_reset++;
		}
	}
	if (op->state == OP_RUNNING) {
		if (!hmap_get(&c->ops, id)) {
			/* a second running operation of the same node */
			for (struct hmap_iter it = hmap_iter_start(&c->ops); hmap_iter_next(&it);)
				if (strcmp(it.e->value, op->node) == 0)
					sim_violation(c,
						      "two operations on %s at once: %s (%s) and "
						      "%s",
						      op->node, op->id, op->kind, it.e->key);
			hmap_put(&c->ops, id, xstrdup(op->node));
		}
	} else if (op_state_terminal(op->state)) {
		free(hmap_remove(&c->ops, id));
	}
	operation_free(op);
}

void sim_checker_step(struct sim_checker *c)
{
	struct store *s = c->h.store;
	for (;;) {
		if (store_revision(s) <= c->rev)
			return;
		struct store_event *evs = NULL;
		size_t n = 0;
		int rc = store_changes(s, "", c->rev, 4096, &evs, &n);
		if (rc < 0) {
			sim_violation(c, "change feed unreadable after %" PRId64 ": %d", c->rev,
				      rc);
			c->rev = store_revision(s);
			return;
		}
		if (n == 0) {
			c->rev = store_revision(s);
			return;
		}
		for (size_t k = 0; k < n; k++) {
			const char *key = evs[k].key;
			if (strncmp(key, "/nodes/", 7) == 0)
				node_revision(c, key + 7, evs[k].value, evs[k].revision);
			else if (strncmp(key, "/operations/", 12) == 0)
				op_revision(c, key + 12, evs[k].value, evs[k].revision);
			c->rev = evs[k].revision;
		}
		c->checks++;
		store_event_array_free(evs, n);
	}
}

size_t sim_checker_running_ops(struct sim_checker *c)
{
	size_t k = 0;
	for (struct hmap_iter it = hmap_iter_start(&c->ops); hmap_iter_next(&it);)
		k++;
	return k;
}

void sim_checker_side_effects(struct sim_checker *c, int i, const char *name, long power_on,
			      long power_cycle, long power_off, long gpu_reset)
{
	const struct sim_node_track *t = &c->tr[i];
	if (power_on + power_cycle > t->may_power_on)
		sim_violation(c,
			      "%s: the machine was powered on %ld times (%ld on, %ld cycles), its "
			      "operations may power it on %ld times: a side effect ran twice",
			      name, power_on + power_cycle, power_on, power_cycle, t->may_power_on);
	if (power_off > t->may_power_off)
		sim_violation(c, "%s: powered off %ld times, its operations may %ld times", name,
			      power_off, t->may_power_off);
	if (gpu_reset > t->may_gpu_reset)
		sim_violation(c, "%s: %ld GPU resets, %ld gpu_reset operations", name, gpu_reset,
			      t->may_gpu_reset);
}
