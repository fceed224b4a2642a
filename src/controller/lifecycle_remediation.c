/* lifecycle_remediation.c - the health remediation ladder of the lifecycle controller (see
 * lifecycle.h; the private interface with lifecycle.c is lifecycle_int.h).
 *
 * A node the health controller held with status.remediation is drained into repairing; from
 * there lifecycle_remediation_next starts the current rung (an operation of kind gpu_reset,
 * reboot, reimage or rma) once the disruption budget admits it (lifecycle_budget_gate), or,
 * the ladder exhausted, moves the node to failed. A rung that succeeds is followed by
 * validating (lifecycle_finish_rung); a passed validation releases the `health` hold and
 * returns the node to available (lifecycle_finish_remediation_validate); a failed rung or
 * validation moves up the ladder. Here too are the rung-only steps (request_gpu_reset,
 * wait_agent_action, open_rma with its RMA record) and the agent's answer to a GPU reset
 * (lifecycle_agent_remediated). Phase transitions, commits and the step runtime are
 * lifecycle.c's. */
#include <pthread.h>
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
#include "controller/lifecycle.h"
#include "controller/lifecycle_int.h"
#include "core/codec.h"
#include "engine/objects.h"

/* gpu_reset rung, first step: asks the node's agent to reset the GPU named in
 * status.remediation.gpu, once per operation (params.requested is written before the ask).
 * Drivers with a channel to the agent (the sim) get bmc_agent_action "gpu_reset"; for the
 * others nothing is sent: a real agent sees this gpu_reset operation on its node document. */
enum step_result lifecycle_step_request_gpu_reset(struct step_ctx *x)
{
	if (json_is_integer(json_object_get(x->op->params, "requested")))
		return STEP_DONE;
	json_object_set_new(lifecycle_op_params(x->op), "requested", json_integer(now_wall(x->lc)));
	if (lifecycle_save_op(x->lc, x->op) < 0) { /* intent before act */
		json_object_del(x->op->params, "requested");
		snprintf(x->err, sizeof(x->err), "could not record the GPU reset request");
		return STEP_RETRY;
	}
	if (!x->bmc)
		return STEP_DONE;
	x->err[0] = 0;
	int rc = bmc_agent_action(x->bmc, &x->t, "gpu_reset", x->call_deadline, x->err,
				  sizeof(x->err));
	if (rc == 0 || rc == FP_EUNSUPPORTED) {
		x->err[0] = 0;
		return STEP_DONE;
	}
	return STEP_FAIL; /* the agent cannot do it now (machine off, booting): next rung */
}

/* gpu_reset rung: waits for the agent's answer (lifecycle_agent_remediated writes
 * params.remediated) until the step deadline (10 min). */
enum step_result lifecycle_step_wait_agent_action(struct step_ctx *x)
{
	json_t *r = json_object_get(x->op->params, "remediated");
	if (json_is_object(r)) {
		if (json_is_true(json_object_get(r, "succeeded")))
			return STEP_DONE;
		const char *m = jsonx_str(r, "message");
		snprintf(x->err, sizeof(x->err),
			 "the node's agent reports the GPU reset failed%s%.200s",
			 m && *m ? ": " : "", m ? m : "");
		return STEP_FAIL;
	}
	x->wait_ms = lifecycle_step_left(x->lc, x->n->name, x->op);
	snprintf(x->err, sizeof(x->err), "no answer from the node's agent to the GPU reset");
	return STEP_WAIT;
}

#define RMA_MAX_COUNTED 1000 /* health events of the node counted by code in an RMA */
#define RMA_MAX_OPS 16       /* rung and validation operations listed in an RMA */
#define RMA_OPS_SCAN 2000    /* operations of one kind read per RMA (all nodes') */

static int cmp_op_created(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(jsonx_str(x, "createdAt"), jsonx_str(y, "createdAt"));
	return c ? c : strcmp(jsonx_str(x, "id"), jsonx_str(y, "id"));
}

/* The rung and validation operations of node n's current remediation, oldest first: every
 * gpu_reset, reboot, reimage and validate operation of n created at or after
 * status.remediation.since, as {"id","kind","state","createdAt","finishedAt"?,"lastError"?}
 * (new reference; at most RMA_MAX_OPS, the newest kept). Operation ids are
 * "<kind>-<13-digit wall ms>-<random>" (op_make), so each kind is listed from the key of
 * `since` on, at most RMA_OPS_SCAN keys of every node; *truncated is set when a listing was
 * cut, an operation did not decode, or more than RMA_MAX_OPS matched. A store error leaves
 * what was read and sets *truncated. */
static json_t *rma_operations(struct lifecycle *lc, const struct node *n, int *truncated)
{
	static const char *const kinds[] = {"gpu_reset", "reboot", "reimage", "validate"};
	json_t **found = NULL;
	size_t nfound = 0;
	char prefix[64], after[96];
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		snprintf(prefix, sizeof(prefix), "%s%s-", OBJECTS_PREFIX_OPERATIONS, kinds[k]);
		snprintf(after, sizeof(after), "%s%013lld", prefix,
			 (long long)(n->remediation.since > 0 ? n->remediation.since - 1 : 0));
		struct store_kv *kvs = NULL;
		size_t nkv = 0;
		int more = 0;
		if (store_list(lc->cfg.store, prefix, after, RMA_OPS_SCAN, &kvs, &nkv, NULL,
			       &more) < 0) {
			*truncated = 1;
			continue;
		}
		*truncated |= more;
		for (size_t i = 0; i < nkv; i++) {
			json_t *doc = NULL;
			struct operation *op = NULL;
			if (jsonx_parse(kvs[i].value, strlen(kvs[i].value), &doc, NULL, 0) < 0 ||
			    operation_from_json(doc, kvs[i].mod_revision, &op, NULL, 0) < 0) {
				json_decref(doc);
				*truncated = 1;
				continue;
			}
			json_decref(doc);
			if (strcmp(op->node, n->name) == 0 &&
			    op->created_at >= n->remediation.since) {
				char ts[FP_TIME_LEN];
				fp_time_format(op->created_at, ts);
				json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "id", op->id, "kind",
						      op->kind, "state", op_state_name(op->state),
						      "createdAt", ts);
				if (op->finished_at) {
					fp_time_format(op->finished_at, ts);
					json_object_set_new(o, "finishedAt", json_string(ts));
				}
				if (op->last_error && *op->last_error)
					json_object_set_new(o, "lastError",
							    jsonx_string_lossy(op->last_error));
				found = xreallocarray(found, nfound + 1, sizeof(*found));
				found[nfound++] = o;
			}
			operation_free(op);
		}
		store_kv_array_free(kvs, nkv);
	}
	if (nfound)
		qsort(found, nfound, sizeof(*found), cmp_op_created);
	json_t *arr = json_array();
	size_t first = nfound > RMA_MAX_OPS ? nfound - RMA_MAX_OPS : 0;
	if (first)
		*truncated = 1;
	for (size_t i = 0; i < nfound; i++) {
		if (i >= first)
			json_array_append(arr, found[i]);
		json_decref(found[i]);
	}
	free(found);
	return arr;
}

/* The node's conditions that say what its detectors last reported (the agent's detector
 * statuses are not stored; the health controller keeps them as DetectorsLive, GPUHealthy
 * and AgentAlive): {"<type>": {"status","reason","message","since"}} (new reference). */
static json_t *rma_detectors(json_t *conditions)
{
	json_t *out = json_object();
	size_t i;
	json_t *c;
	json_array_foreach(conditions, i, c) {
		const char *type = jsonx_str(c, "type");
		if (type && (strcmp(type, "DetectorsLive") == 0 ||
			     strcmp(type, "GPUHealthy") == 0 || strcmp(type, "AgentAlive") == 0)) {
			json_t *d = json_deep_copy(c);
			json_object_del(d, "type");
			json_object_set_new(out, type, d);
		}
	}
	return out;
}

/* rma rung: writes /rmas/<operation id> (create-if-absent; a rerun finds it written) with the
 * evidence a vendor ticket needs (docs/api.md "RMAs"): the health event documents named in
 * status.remediation (with their raw lines), the node's health event counts by code (at most
 * RMA_MAX_COUNTED events read: countsTruncated true when there were more),
 * status.remediationHistory, the rung and validation operations of this remediation with their
 * errors (operations; operationsTruncated when cut, rma_operations), the last validation
 * result (validation: {"validatedAt","passed","bootId"}, or null when none is recorded; the
 * rma rung does not clear it), what the detectors last said (detectors, rma_detectors),
 * inventory and conditions. The RMA's name goes to params.rma; finish puts it in
 * status.remediation.rma. */
enum step_result lifecycle_step_open_rma(struct step_ctx *x)
{
	const struct node *n = x->n;
	const struct node_remediation *r = &n->remediation;
	char key[STORE_MAX_KEY + 1], prefix[STORE_MAX_KEY + 1];
	json_t *events = json_array(), *counts = json_object();
	size_t nl = strlen(n->name);
	for (size_t i = 0; i < r->nevents; i++) {
		const char *e = r->events[i];
		if (strncmp(e, n->name, nl) != 0 || e[nl] != '.')
			continue; /* not this node's event */
		snprintf(key, sizeof(key), "/healthevents/%s/%s", n->name, e + nl + 1);
		struct store_kv kv = {0};
		json_t *doc = NULL;
		if (store_get(x->lc->cfg.store, key, &kv) == 0 &&
		    jsonx_parse(kv.value, strlen(kv.value), &doc, NULL, 0) == 0)
			json_array_append_new(events, doc);
		store_kv_release(&kv);
	}
	snprintf(prefix, sizeof(prefix), "/healthevents/%s/", n->name);
	struct store_kv *kvs = NULL;
	size_t nkv = 0;
	int counts_more = 0;
	if (store_list(x->lc->cfg.store, prefix, NULL, RMA_MAX_COUNTED, &kvs, &nkv, NULL,
		       &counts_more) == 0) {
		for (size_t i = 0; i < nkv; i++) {
			json_t *doc = NULL;
			if (jsonx_parse(kvs[i].value, strlen(kvs[i].value), &doc, NULL, 0) < 0)
				continue;
			const char *code = jsonx_str(doc, "code");
			if (code) {
				json_t *c = json_object_get(counts, code);
				json_object_set_new(counts, code,
						    json_integer(c ? json_integer_value(c) + 1
								   : 1));
			}
			json_decref(doc);
		}
		store_kv_array_free(kvs, nkv);
	}
	json_t *pub = node_to_json(n, NODE_JSON_PUBLIC);
	json_t *st = json_object_get(pub, "status");
	json_t *hist = json_object_get(st, "remediationHistory");
	json_t *inv = json_object_get(st, "inventory");
	json_t *evidence = json_object();
	json_object_set_new(evidence, "healthEvents", events);
	json_object_set_new(evidence, "counts", counts);
	json_object_set_new(evidence, "remediationHistory",
			    hist ? json_incref(hist) : json_array());
	json_object_set_new(evidence, "inventory", inv ? json_incref(inv) : json_object());
	json_object_set(evidence, "conditions", json_object_get(st, "conditions"));
	json_object_set_new(evidence, "countsTruncated", json_boolean(counts_more));
	int ops_truncated = 0;
	json_object_set_new(evidence, "operations", rma_operations(x->lc, n, &ops_truncated));
	json_object_set_new(evidence, "operationsTruncated", json_boolean(ops_truncated));
	if (n->validated_at) {
		char vts[FP_TIME_LEN];
		fp_time_format(n->validated_at, vts);
		json_t *v = json_pack("{s:s,s:b}", "validatedAt", vts, "passed",
				      n->validation_passed);
		if (n->validation_boot_id)
			json_object_set_new(v, "bootId", json_string(n->validation_boot_id));
		json_object_set_new(evidence, "validation", v);
	} else {
		json_object_set_new(evidence, "validation", json_null());
	}
	json_object_set_new(evidence, "detectors",
			    rma_detectors(json_object_get(st, "conditions")));
	json_decref(pub);
	char ts[FP_TIME_LEN];
	fp_time_format(now_wall(x->lc), ts);
	json_t *doc = json_pack("{s:s,s:{s:s,s:s},s:s,s:s,s:s,s:o,s:s}", "kind", "RMA", "metadata",
				"name", x->op->id, "createdAt", ts, "node", n->name, "code",
				r->code ? r->code : "", "reason",
				r->reason ? r->reason : "health remediation ladder reached rma",
				"evidence", evidence, "state", "open");
	if (r->gpu)
		json_object_set_new(doc, "gpu", json_string(r->gpu));
	char *val = jsonx_dumps(doc);
	json_decref(doc);
	snprintf(key, sizeof(key), "/rmas/%s", x->op->id);
	int rc = store_put(x->lc->cfg.store, key, val, STORE_ABSENT, NULL);
	free(val);
	if (rc < 0 && rc != FP_EEXIST) {
		snprintf(x->err, sizeof(x->err), "could not write RMA %s: %s", x->op->id,
			 fp_err_msg(rc));
		return STEP_RETRY;
	}
	json_object_set_new(lifecycle_op_params(x->op), "rma", json_string(x->op->id));
	if (lifecycle_save_op(x->lc, x->op) < 0) {
		snprintf(x->err, sizeof(x->err), "could not record RMA %s on the operation",
			 x->op->id);
		return STEP_RETRY;
	}
	return STEP_DONE;
}

#define BUDGET_RETRY (2 * SEC)

/* n waits for a disruption: DisruptionAllowed False with `reason` and `why`, an event
 * `ev_reason` ("<what>: <why>") when it starts waiting for this reason (not on every retry),
 * written (with done_op, if any) when that changed anything; looked at again in BUDGET_RETRY
 * or when a node returns to service. *rc receives the store result of that write. */
static void disruption_wait(struct lifecycle *lc, struct node *n, const struct operation *done_op,
			    const char *reason, const char *ev_reason, const char *what,
			    const char *why, int *rc)
{
	const struct node_condition *c = node_condition_get(n, "DisruptionAllowed");
	int starts = !c || c->status != COND_FALSE || !c->reason || strcmp(c->reason, reason) != 0;
	int changed = node_condition_set(n, "DisruptionAllowed", COND_FALSE, reason, why,
					 now_wall(lc));
	pthread_mutex_lock(&lc->mu);
	if (!hmap_get(&lc->waiting, n->name))
		hmap_put(&lc->waiting, n->name, (void *)1);
	pthread_mutex_unlock(&lc->mu);
	if (changed || done_op) {
		char msg[700];
		snprintf(msg, sizeof(msg), "%s: %s", what, why);
		*rc = lifecycle_commit(lc, n, "Warning", starts ? ev_reason : NULL, msg, done_op);
		if (*rc == 0 && starts)
			log_info("lifecycle: %s node=%s why=\"%s\"", what, n->name, why);
	}
	workqueue_add_after(lc->wq, n->name, BUDGET_RETRY);
}

/* Asks the budget service whether n may be disrupted now. 1: admitted (the DisruptionAllowed
 * condition is removed from n, to be written by the caller's transition). 0: refused - n gets
 * DisruptionAllowed False/BudgetExhausted with the reason and an event
 * DisruptionBudgetExhausted when it starts waiting (disruption_wait). *rc receives the store
 * result of that write. */
int lifecycle_budget_gate(struct lifecycle *lc, struct node *n, const struct operation *done_op,
			  int *rc)
{
	char why[512] = "";
	*rc = 0;
	if (!lc->cfg.budget || budget_admit(lc->cfg.budget, n, why, sizeof(why))) {
		node_condition_remove(n, "DisruptionAllowed");
		pthread_mutex_lock(&lc->mu);
		hmap_remove(&lc->waiting, n->name);
		pthread_mutex_unlock(&lc->mu);
		return 1;
	}
	disruption_wait(lc, n, done_op, "BudgetExhausted", "DisruptionBudgetExhausted",
			"waiting for a disruption budget", why, rc);
	return 0;
}

int lifecycle_health_automatic(const struct node *n)
{
	if (!n->remediation.active || n->remediation.rma || !n->nholds)
		return 0;
	for (size_t i = 0; i < n->nholds; i++)
		if (strcmp(n->holds[i].owner, "health") != 0)
			return 0;
	return 1;
}

/* Asks whether an open correlated-failure breaker of one of n's domains stops an automatic
 * health action on n now (budget_breaker_open). 1: none does (n's DisruptionAllowed is left
 * as it is: the budget gate that follows decides it). 0: one is open - n gets
 * DisruptionAllowed False/BreakerOpen naming the breaker ("correlated-failure breaker rack.r01
 * is open since ...; automatic health actions wait for its reset (POST
 * /v1/breakers/rack.r01:reset)") and one Warning event RemediationPausedByBreaker when it
 * starts waiting; it is looked at again every BUDGET_RETRY and goes on by itself once the
 * breaker is reset (the budget service re-reads /breakers/ every 5 s). *rc receives the store
 * result of that write. */
int lifecycle_breaker_gate(struct lifecycle *lc, struct node *n, const struct operation *done_op,
			   int *rc)
{
	char why[400] = "", name[200] = "", full[700];
	*rc = 0;
	if (!lc->cfg.budget ||
	    !budget_breaker_open(lc->cfg.budget, n, why, sizeof(why), name, sizeof(name)))
		return 1;
	if (name[0])
		snprintf(full, sizeof(full),
			 "%s; automatic health actions wait for its reset (POST "
			 "/v1/breakers/%s:reset)",
			 why, name);
	else
		snprintf(full, sizeof(full), "%s; automatic health actions wait", why);
	disruption_wait(lc, n, done_op, "BreakerOpen", "RemediationPausedByBreaker",
			"automatic health action paused", full, rc);
	return 0;
}

static void remediation_metric(struct lifecycle *lc, enum remediation_rung r, const char *result)
{
	metric_add(lc->m_remediations, (const char *[]){remediation_rung_name(r), result}, 1);
}

/* "reboot, reimage, rma" */
static void ladder_names(const struct node_remediation *r, char *out, size_t len)
{
	size_t w = 0;
	out[0] = 0;
	for (size_t i = 0; i < r->nladder && w < len; i++) {
		int k = snprintf(out + w, len - w, "%s%s", i ? ", " : "",
				 remediation_rung_name(r->ladder[i]));
		if (k < 0)
			break;
		w += (size_t)k;
	}
}

/* The current rung failed (its operation, or the validation after it): the next one is
 * chosen by the repairing phase's reconcile. Records why on condition Remediation. */
static void rung_failed(struct lifecycle *lc, struct node *n, const char *err)
{
	struct node_remediation *r = &n->remediation;
	enum remediation_rung cur = r->ladder[r->rung < r->nladder ? r->rung : r->nladder - 1];
	char msg[600];
	snprintf(msg, sizeof(msg), "rung %s failed: %.500s", remediation_rung_name(cur), err);
	node_condition_set(n, "Remediation", COND_FALSE, "RungFailed", msg, now_wall(lc));
	remediation_metric(lc, cur, "failed");
	if (r->rung < r->nladder)
		r->rung++;
}

/* A repairing node with status.remediation and no operation: start the current rung when no
 * correlated-failure breaker of its domains is open and the budget admits it, or - the ladder exhausted - go to failed (Remediation False/
 * LadderExhausted, a Warning event naming the rungs tried and the last error). */
int lifecycle_remediation_next(struct lifecycle *lc, struct node *n)
{
	struct node_remediation *r = &n->remediation;
	int64_t now = now_wall(lc);
	char rungs[64], why[900];
	ladder_names(r, rungs, sizeof(rungs));
	if (r->rung >= r->nladder) {
		const struct node_condition *c = node_condition_get(n, "Remediation");
		snprintf(
			why, sizeof(why),
			"remediation of %s%s%s exhausted its ladder (tried %s); last error: %.500s",
			r->code ? r->code : "?", r->gpu ? " on GPU " : "", r->gpu ? r->gpu : "",
			rungs, c && c->message ? c->message : "none recorded");
		node_remediation_history_append(n, r->code, r->gpu, r->ladder[r->nladder - 1],
						"failed", now);
		node_condition_set(n, "Remediation", COND_FALSE, "LadderExhausted", why, now);
		node_remediation_release(r);
		return lifecycle_transition(lc, n, PHASE_FAILED, NULL, why, NULL);
	}
	int rc = 0;
	if (!lifecycle_breaker_gate(lc, n, NULL, &rc) || !lifecycle_budget_gate(lc, n, NULL, &rc))
		return rc;
	enum remediation_rung cur = r->ladder[r->rung];
	r->attempts++;
	/* The burn-in report of an earlier validation must not end this rung's one: cleared in
	 * the commit that starts the rung, so a report recorded after it (the agent's burn-in
	 * after the GPU reset or boot, even in the same millisecond as the rung's end, even
	 * before the node enters validating) is the new one. */
	if (cur != RUNG_RMA) { /* no validation follows rma: its evidence keeps the last one */
		n->validated_at = 0;
		n->validation_passed = 0;
		free(n->validation_boot_id);
		n->validation_boot_id = NULL;
	}
	snprintf(why, sizeof(why), "remediation of %s%s%s: rung %s (%zu of %zu: %s)",
		 r->code ? r->code : "?", r->gpu ? " on GPU " : "", r->gpu ? r->gpu : "",
		 remediation_rung_name(cur), r->rung + 1, r->nladder, rungs);
	node_condition_set(n, "Remediation", COND_UNKNOWN, "InProgress", why, now);
	return lifecycle_transition(lc, n, PHASE_REPAIRING, remediation_rung_name(cur), why, NULL);
}

/* A rung's operation ended. ok, not rma: validating, where the burn-in report must be one
 * recorded after the rung began (lifecycle_remediation_next cleared the old one). rma ok:
 * failed with the RMA named. Failed: the next rung (reconcile). */
int lifecycle_finish_rung(struct lifecycle *lc, struct node *n, const struct operation *op,
			  const struct operation *w, enum remediation_rung rr, const char *why)
{
	struct node_remediation *r = &n->remediation;
	int64_t now = now_wall(lc);
	if (op->state == OP_SUCCEEDED && rr == RUNG_RMA) {
		const char *id = jsonx_str(op->params, "rma");
		char msg[700];
		snprintf(msg, sizeof(msg), "RMA %s opened%s%.500s", id ? id : op->id,
			 r->reason ? ": " : "", r->reason ? r->reason : "");
		free(r->rma);
		r->rma = xstrdup(id ? id : op->id);
		node_remediation_history_append(n, r->code, r->gpu, RUNG_RMA, "rma", now);
		node_condition_set(n, "Remediation", COND_FALSE, "RMAOpened", msg, now);
		remediation_metric(lc, RUNG_RMA, "succeeded");
		char reason[128];
		snprintf(reason, sizeof(reason), "RMA %s opened", r->rma);
		return lifecycle_transition(lc, n, PHASE_FAILED, NULL, reason, w);
	}
	if (op->state == OP_SUCCEEDED) /* status.validation was cleared when the rung began */
		return lifecycle_transition(lc, n, PHASE_VALIDATING, "validate", why, w);
	rung_failed(lc, n, op->last_error ? op->last_error : op_state_name(op->state));
	free(n->operation);
	n->operation = lifecycle_queue_pop(n);
	char msg[700];
	snprintf(msg, sizeof(msg), "remediation rung %s: %s; %s", op->kind, why,
		 r->rung < r->nladder ? "next rung when the budget allows" : "ladder exhausted");
	return lifecycle_commit(lc, n, "Warning", "RemediationRungFailed", msg, w);
}

/* The validation after a rung ended. Passed: available, and in the same write the `health`
 * hold released, status.remediation cleared, the history appended, GPUHealthy True. Failed:
 * back to repairing for the next rung. */
int lifecycle_finish_remediation_validate(struct lifecycle *lc, struct node *n,
					  const struct operation *op, const struct operation *w,
					  const char *why)
{
	struct node_remediation *r = &n->remediation;
	int64_t now = now_wall(lc);
	if (op->state != OP_SUCCEEDED) {
		char err[500];
		snprintf(err, sizeof(err), "validation failed: %.450s",
			 op->last_error ? op->last_error : op_state_name(op->state));
		rung_failed(lc, n, err);
		return lifecycle_transition(lc, n, PHASE_REPAIRING, NULL, why, w);
	}
	enum remediation_rung cur = r->ladder[r->rung < r->nladder ? r->rung : r->nladder - 1];
	struct status_delta d = {0};
	lifecycle_delta_event(
		&d, "Normal", "RemediationSucceeded",
		"remediation of %.64s%s%.64s succeeded with rung %s after %d rung%s; health "
		"hold released",
		r->code ? r->code : "?", r->gpu ? " on GPU " : "", r->gpu ? r->gpu : "",
		remediation_rung_name(cur), r->attempts, r->attempts == 1 ? "" : "s");
	char msg[300];
	snprintf(msg, sizeof(msg), "remediation of %.64s succeeded (rung %s, validated)",
		 r->code ? r->code : "?", remediation_rung_name(cur));
	node_remediation_history_append(n, r->code, r->gpu, cur, "succeeded", now);
	node_hold_release(n, "health"); /* FP_ENOTFOUND: someone already released it */
	node_condition_set(n, "GPUHealthy", COND_TRUE, "Remediated", msg, now);
	node_condition_remove(n, "Remediation");
	remediation_metric(lc, cur, "succeeded");
	node_remediation_release(r);
	return lifecycle_transition_x(lc, n, PHASE_AVAILABLE, NULL, why, w, &d, NULL);
}

/* A power operation ended: the node stays in its phase; the next queued operation starts, or
 * none (a transient phase then starts its own operation again). */
struct remediated {
	struct lifecycle *lc;
	char *node;
	char *op_id; /* or NULL: the node's current operation */
	int succeeded;
	char *message;
};

static void remediated_task(void *arg)
{
	struct remediated *r = arg;
	struct lifecycle *lc = r->lc;
	for (int attempt = 0; attempt < 8; attempt++) {
		struct operation *op = NULL;
		const char *id = r->op_id;
		struct node *n = NULL;
		if (!id && lifecycle_load_node(lc, r->node, &n) == 0)
			id = n->operation;
		int rc = id ? lifecycle_load_op(lc, id, &op) : FP_ENOTFOUND;
		node_free(n);
		if (rc < 0 || strcmp(op->node, r->node) != 0 ||
		    strcmp(op->kind, "gpu_reset") != 0 || op_state_terminal(op->state) ||
		    json_object_get(op->params, "remediated")) {
			log_info("lifecycle: agent action answer ignored (no running gpu_reset "
				 "operation waiting for it) node=%s",
				 r->node);
			operation_free(op);
			break;
		}
		json_object_set_new(lifecycle_op_params(op), "remediated",
				    json_pack("{s:b,s:s,s:I}", "succeeded", r->succeeded, "message",
					      r->message, "at", (json_int_t)now_wall(lc)));
		rc = lifecycle_save_op(lc, op);
		operation_free(op);
		if (rc == 0) {
			workqueue_add(lc->wq, r->node);
			break;
		}
		if (rc != FP_ECONFLICT) {
			log_warn("lifecycle: could not record agent action answer node=%s rc=%s",
				 r->node, fp_err_name(rc));
			break;
		}
	}
	free(r->node);
	free(r->op_id);
	free(r->message);
	free(r);
}

void lifecycle_agent_remediated(struct lifecycle *lc, const char *node, const char *op_id,
				int succeeded, const char *message)
{
	struct remediated *r = xcalloc(1, sizeof(*r));
	r->lc = lc;
	r->node = xstrdup(node);
	r->op_id = op_id ? xstrdup(op_id) : NULL;
	r->succeeded = succeeded;
	r->message = xstrndup(message ? message : "", 512);
	struct fp_executor *e = lc->cfg.report_exec ? lc->cfg.report_exec : lc->cfg.exec;
	if (executor_submit(e, remediated_task, r) < 0) {
		free(r->node);
		free(r->op_id);
		free(r->message);
		free(r);
	}
}
