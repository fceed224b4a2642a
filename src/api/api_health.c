/* api_health.c - the health resources of the API (issue 4; shapes in docs/api.md "Health"):
 * agent reports POST /v1/nodes/{name}:report and gpu_reset results :remediated; health events
 * /v1/healthevents (list with node/code filters, paging, watch; get "<node>.<id>"); the health
 * policy /v1/policies/{name} (only "default"); disruption budgets /v1/budgets (strict documents
 * of core/budget.h, with "status" from the budget service); correlated-failure breakers
 * /v1/breakers (list, :reset); RMA records /v1/rmas. The decisions themselves are the health
 * controller's and the lifecycle controller's: they are reached through struct
 * api_health_hooks and api_agent_hooks (server.h), which serve wires, because the API layer
 * does not include controller headers. Budgets are written here (each write with its audit
 * event in one transaction), then the budget service is told to re-read them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "core/budget.h"
#include "core/codec.h"
#include "core/model.h"
#include "engine/objects.h"
#include "store/store.h"
#include "base/banned.h"

#define REASON_MAX 256
#define MESSAGE_MAX 1024
#define ID_MAX 64
#define BREAKER_NAME_MAX 200
#define CODE_MAX 64

/* ---------------------------------------------------------------- shared */

/* 1 when s is 1..max characters of [A-Za-z0-9._-] (ids chosen by agents and controllers;
 * extra allows one more character, e.g. ':'). */
static int id_ok(const char *s, size_t max, char extra)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || (extra && c == extra)))
			return 0;
	}
	return 1;
}

/* The field an error text names: "unknown field X" -> X; "events[3].code: ..." ->
 * "events[3].code"; NULL when the text names none. Arena string. */
static const char *err_field(struct api_req *r, const char *err)
{
	static const char uf[] = "unknown field ";
	if (strncmp(err, uf, sizeof(uf) - 1) == 0) {
		const char *f = err + sizeof(uf) - 1;
		size_t n = strcspn(f, " :;,");
		return n ? api_printf(r, "%.*s", (int)(n > 128 ? 128 : n), f) : NULL;
	}
	const char *colon = strstr(err, ": ");
	if (!colon || colon == err || colon - err > 128)
		return NULL;
	for (const char *p = err; p < colon; p++)
		if (*p == ' ')
			return NULL;
	return api_printf(r, "%.*s", (int)(colon - err), err);
}

/* Answers a controller error: FP_EINVAL is 422 with "field" when err names one; the rest by
 * fp_err_http with err (or the code's message) as detail. */
static void problem_err(struct api_req *r, int rc, const char *err)
{
	if (rc == FP_EINVAL) {
		const char *f = err_field(r, err);
		api_problem_ext(r, 422, f ? json_pack("{s:s}", "field", f) : NULL, "%s",
				*err ? err : "invalid document");
		return;
	}
	api_problem_rc(r, rc, err);
}

static int check_node_param(struct api_req *r)
{
	char err[256];
	if (name_validate("name", r->params[0], err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"), "%s", err);
		return -1;
	}
	return 0;
}

/* 1 when the health controller is wired; otherwise answers 503. */
static int have_health(struct api_req *r, const void *fn)
{
	if (fn)
		return 1;
	api_problem(r, 503, "no health controller in this server");
	return 0;
}

/* Stored document as it is, plus metadata.resourceVersion. */
static json_t *render_plain(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	json_t *out = json_deep_copy(doc);
	api_set_rv(out, mod_rev);
	return out;
}

/* GET of one stored document at key; what names it in a 404. */
static void get_key(struct api_req *r, const char *key, const char *what, const char *name,
		    api_render_fn render)
{
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, key, &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "%s %s not found", what, name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	json_t *out = render(r, doc, mod);
	json_decref(doc);
	if (!out) {
		api_problem(r, 500, "stored %s %s does not decode", what, name);
		return;
	}
	api_reply_json(r, 200, out);
	api_add_header(r, MHD_HTTP_HEADER_ETAG, api_printf(r, "\"%lld\"", (long long)mod));
}

/* ---------------------------------------------------------------- agent report */

/* The per-node and per-token report limit (report_limit.c): 0 when the report may go on; else
 * answers 429 with Retry-After (whole seconds, rounded up; RFC 9110 section 10.2.3) and a
 * problem naming the limit ("limit": "reports" | "events" | "nodes" | "tokens", "scope":
 * "node" | "token", "retryAfterSeconds"), and returns 1. Counted before the body is validated,
 * so a flood of bad reports is limited too. */
static int report_limited(struct api_req *r, const char *node, size_t nevents)
{
	struct api_report_limiter *l = r->srv->report_limit;
	enum api_report_limit_kind kind;
	int by_token = 0;
	int64_t left = 0;
	const char *tok = r->who.name;
	int64_t wait = api_report_limit_take(l, node, tok, nevents, &kind, &by_token, &left);
	if (wait <= 0)
		return 0;
	long long secs = (wait + 999) / 1000;
	const struct api_report_limit *c = api_report_limit_config(l);
	static const char *const names[] = {"", "reports", "events", "nodes"};
	const char *what = by_token ? "token" : "node", *who = by_token ? tok : node;
	json_t *ext = json_pack("{s:s,s:s,s:I}", "limit",
				kind == API_REPORT_LIMIT_NODES && by_token ? "tokens" : names[kind],
				"scope", what, "retryAfterSeconds", (json_int_t)secs);
	if (kind == API_REPORT_LIMIT_EVENTS)
		api_problem_ext(r, 429, ext,
				"%s %s: report rate limit: events: %ld per minute (at most %lld "
				"at once); this report has %zu events and %lld are left; retry "
				"after %lld s; nothing of this report was recorded",
				what, who, c->events_per_min,
				(long long)api_report_limit_events_burst(l), nevents,
				(long long)left, secs);
	else if (kind == API_REPORT_LIMIT_REPORTS)
		api_problem_ext(r, 429, ext,
				"%s %s: report rate limit: reports: %g per second (at most %ld at "
				"once); retry after %lld s; nothing of this report was recorded",
				what, who, c->reports_per_s, c->burst, secs);
	else
		api_problem_ext(r, 429, ext,
				"report rate limit: %d %ss are tracked and none is idle; retry "
				"after %lld s; nothing of this report was recorded",
				API_REPORT_LIMIT_MAX_NODES, what, secs);
	api_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, api_printf(r, "%lld", secs));
	return 1;
}

/* POST /v1/nodes/{name}:report: the node agent's report (design shape {"agent","detectors",
 * "events"}), validated and applied by the health controller (health_report): 200 {"accepted",
 * "duplicates","decisions"}, 422 with "field" for bad input, 404 for an unknown node, 429 over
 * the node's or the token's report rate limit (report_limited). Each refusal (4xx) is counted
 * in fleetplane_agent_reports_refused_total by reason. Repeats of an event id are duplicates, so a
 * retried report needs no Idempotency-Key. */
static void node_report(struct api_req *r)
{
	const struct api_health_hooks *h = &r->srv->cfg.health;
	if (check_node_param(r) < 0)
		return;
	json_t *body = NULL;
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	if (!have_health(r, (const void *)h->report))
		return;
	const char *name = r->params[0];
	if (report_limited(r, name, json_array_size(json_object_get(body, "events"))))
		return;
	json_t *result = NULL;
	char err[512] = "";
	int rc = h->report(h->arg, name, api_actor(r), body, api_now(r), &result, err, sizeof(err));
	if (rc == FP_ENOTFOUND) {
		json_decref(result);
		api_problem(r, 404, "node %s not found", name);
		return;
	}
	if (rc < 0) {
		json_decref(result);
		problem_err(r, rc, err);
		return;
	}
	if (!result) {
		api_problem(r, 500, "the health controller returned no result");
		return;
	}
	api_reply_json(r, 200, result);
}

void api_node_report(struct api_req *r)
{
	node_report(r);
	/* Refusals after authentication (dispatch counts those before) by what they were; a
	 * 5xx is the server's failure, not a refused report. */
	if (r->status == 429)
		api_report_refused(r, "rate_limited");
	else if (r->status == 404)
		api_report_refused(r, "unknown_node");
	else if (r->status >= 400 && r->status < 500)
		api_report_refused(r, "bad_report");
}

/* ---------------------------------------------------------------- :remediated */

/* POST /v1/nodes/{name}:remediated {"operation","succeeded","message"?}: the node's agent
 * reports the end of the gpu_reset operation it saw on its node document (status.operation,
 * status.remediation.gpu). 409 when operation is not the node's operation in flight (members
 * operation, current); an audit event RemediationReported is written, then the lifecycle hook
 * records it: 202 {"accepted": true}. */
void api_node_remediated(struct api_req *r)
{
	static const char *const keys[] = {"operation", "succeeded", "message", NULL};
	if (check_node_param(r) < 0)
		return;
	const char *name = r->params[0];
	json_t *body;
	if (api_body_keys(r, keys, &body) < 0)
		return;
	json_t *opv = json_object_get(body, "operation");
	const char *op_id = json_string_value(opv);
	if (!op_id || !id_ok(op_id, ID_MAX, 0)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "operation"), "operation: %s",
				!opv     ? "required"
				: !op_id ? "expected a string"
					 : "expected an operation id (1..64 characters of A-Z a-z "
					   "0-9 . _ -)");
		return;
	}
	json_t *sv = json_object_get(body, "succeeded");
	if (!json_is_boolean(sv)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "succeeded"), "succeeded: %s",
				sv ? "expected true or false" : "required");
		return;
	}
	const char *message = NULL;
	if (api_text_member(r, body, "message", MESSAGE_MAX, 0, &message) < 0)
		return;
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, api_own(r, objects_key_node_dup(name)), &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "node %s not found", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the node");
		return;
	}
	api_own_json(r, doc);
	const char *cur = jsonx_str(doc, "status.operation");
	if (!cur || strcmp(cur, op_id) != 0) {
		api_problem_ext(r, 409, json_pack("{s:s,s:s?}", "operation", op_id, "current", cur),
				cur ? "operation %s is not the operation node %s runs now (%s)"
				    : "operation %s: node %s has no operation in flight",
				op_id, name, cur);
		return;
	}
	const struct api_agent_hooks *ah = &r->srv->cfg.agent;
	if (!ah->remediated) {
		api_problem(r, 503, "no lifecycle controller in this server to take agent reports");
		return;
	}
	int ok = json_is_true(sv);
	const char *me = api_actor(r);
	struct store_op ev;
	api_event_op(r, &ev, ok ? "Normal" : "Warning", api_printf(r, "node/%s", name),
		     "RemediationReported",
		     api_printf(r, "operation %s reported %s by %s%s%s", op_id,
				ok ? "succeeded" : "failed", me, message ? ": " : "",
				message ? message : ""));
	rc = store_txn(r->srv->cfg.store, &ev, 1, NULL, NULL);
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	ah->remediated(ah->arg, name, op_id, ok, message);
	log_info("agent remediated node=%s op=%s succeeded=%d actor=%s", name, op_id, ok, me);
	api_reply_json(r, 202, json_pack("{s:b}", "accepted", 1));
}

/* ---------------------------------------------------------------- health events */

static int he_keep(struct api_req *r, const json_t *doc, void *arg)
{
	const char *want = arg, *v = jsonx_str(doc, "code");
	return v && strcmp(v, want) == 0;
}

/* GET /v1/healthevents?node=&code=&limit=&continue=&watch=: health events in key order (node,
 * then id); node narrows the prefix, code filters. */
void api_healthevents_list(struct api_req *r)
{
	const char *node = api_query(r, "node"), *code = api_query(r, "code");
	char err[256];
	if (node && name_validate("node", node, err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "node"), "%s", err);
		return;
	}
	if (code && (!id_ok(code, CODE_MAX, ':') || !strchr(code, ':'))) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "code"),
				"code: expected source:detail such as xid:79");
		return;
	}
	const char *prefix = node ? api_printf(r, "/healthevents/%s/", node) : "/healthevents/";
	api_keep_fn keep = code ? he_keep : NULL;
	void *arg = code ? api_strdup(r, code) : NULL;
	if (api_is_watch(r))
		api_watch(r, prefix, "HealthEvent", keep, arg, render_plain);
	else
		api_list(r, prefix, keep, arg, render_plain);
}

/* GET /v1/healthevents/{node}.{id}: node names and ids may both hold dots, so every split
 * whose halves are a valid node name and a valid id is tried, left to right. */
void api_healthevent_get(struct api_req *r)
{
	const char *name = r->params[0];
	size_t n = strlen(name);
	char err[256];
	if (n > 64 + 1 + ID_MAX) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"),
				"name: expected <node>.<id>");
		return;
	}
	int tried = 0;
	for (size_t i = 1; i + 1 < n; i++) {
		if (name[i] != '.')
			continue;
		char *node = api_printf(r, "%.*s", (int)i, name);
		const char *id = name + i + 1;
		if (name_validate("node", node, err, sizeof(err)) < 0 || !id_ok(id, ID_MAX, 0))
			continue;
		tried = 1;
		json_t *doc = NULL;
		int64_t mod = 0;
		int rc = api_get_doc(r, api_printf(r, "/healthevents/%s/%s", node, id), &doc, &mod);
		if (rc == FP_ENOTFOUND)
			continue;
		if (rc < 0) {
			api_problem_rc(r, rc, "cannot read the store");
			return;
		}
		json_t *out = render_plain(r, doc, mod);
		json_decref(doc);
		api_reply_json(r, 200, out);
		api_add_header(r, MHD_HTTP_HEADER_ETAG, api_printf(r, "\"%lld\"", (long long)mod));
		return;
	}
	if (!tried) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"),
				"name: expected <node>.<id>, e.g. r01n03.k-3f9a");
		return;
	}
	api_problem(r, 404, "health event %.160s not found", name);
}

/* ---------------------------------------------------------------- policies */

#define POLICY_NAME "default"

static int policy_name_check(struct api_req *r)
{
	if (strcmp(r->params[0], POLICY_NAME) == 0)
		return 0;
	api_problem(r, 404, "policy %.64s not found: only \"default\" exists", r->params[0]);
	return -1;
}

void api_policies_list(struct api_req *r)
{
	const struct api_health_hooks *h = &r->srv->cfg.health;
	if (!have_health(r, (const void *)h->policy_get))
		return;
	json_t *p = h->policy_get(h->arg);
	if (!p) {
		api_problem(r, 500, "the health controller returned no policy");
		return;
	}
	api_reply_json(r, 200, json_pack("{s:[o],s:{}}", "items", p, "metadata"));
}

void api_policy_get(struct api_req *r)
{
	const struct api_health_hooks *h = &r->srv->cfg.health;
	if (policy_name_check(r) < 0 || !have_health(r, (const void *)h->policy_get))
		return;
	json_t *p = h->policy_get(h->arg);
	if (!p) {
		api_problem(r, 500, "the health controller returned no policy");
		return;
	}
	api_reply_json(r, 200, p);
}

/* PUT /v1/policies/default: the whole policy document; metadata.resourceVersion (or If-Match)
 * makes it conditional (409 when stale). */
void api_policy_put(struct api_req *r)
{
	const struct api_health_hooks *h = &r->srv->cfg.health;
	if (policy_name_check(r) < 0)
		return;
	json_t *body = NULL;
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	if (!have_health(r, (const void *)h->policy_put))
		return;
	const char *im = api_header(r, MHD_HTTP_HEADER_IF_MATCH);
	if (im) {
		int64_t rv = 0;
		if (api_rv_parse_str(im, &rv) < 0) {
			api_problem_ext(r, 400, json_pack("{s:s}", "header", "If-Match"),
					"If-Match: expected a resourceVersion entity-tag such as "
					"\"12\"");
			return;
		}
		json_t *md = json_object_get(body, "metadata");
		if (json_is_object(md))
			json_object_set_new(md, "resourceVersion", api_rv_json(rv));
	}
	json_t *name = jsonx_path(body, "metadata.name");
	if (name && (!json_is_string(name) || strcmp(json_string_value(name), POLICY_NAME))) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"),
				"metadata.name: expected \"default\" (the path's name)");
		return;
	}
	json_t *stored = NULL;
	char err[512] = "";
	int rc = h->policy_put(h->arg, body, api_actor(r), &stored, err, sizeof(err));
	if (rc < 0) {
		json_decref(stored);
		problem_err(r, rc, err);
		return;
	}
	if (!stored) {
		api_problem(r, 500, "the health controller returned no policy");
		return;
	}
	log_info("health policy changed actor=%s", api_actor(r));
	api_reply_json(r, 200, stored);
}

/* ---------------------------------------------------------------- budgets */

json_t *api_budget_render(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	const struct api_health_hooks *h = &r->srv->cfg.health;
	json_t *out = json_deep_copy(doc);
	api_set_rv(out, mod_rev);
	const char *name = jsonx_str(doc, "metadata.name");
	if (h->budget_status && name) {
		json_t *st = h->budget_status(h->arg, name);
		if (st)
			json_object_set_new(out, "status", st);
	}
	return out;
}

void api_budgets_list(struct api_req *r)
{
	api_list(r, "/budgets/", NULL, NULL, api_budget_render);
}

void api_budget_get(struct api_req *r)
{
	if (check_node_param(r) < 0)
		return;
	get_key(r, api_printf(r, "/budgets/%s", r->params[0]), "budget", r->params[0],
		api_budget_render);
}

/* Validates a budget body: read-only members a client echoes back from a GET (status,
 * metadata.resourceVersion, metadata.createdAt) are taken off (*rv gets the resourceVersion,
 * 0 when absent), the rest goes to budget_from_json (strict). path_name, when set, must match
 * metadata.name (filled in when absent). Returns the document to store (new reference, in the
 * arena) or NULL after answering the problem. */
static json_t *budget_body(struct api_req *r, json_t *body, const char *path_name, int64_t *rv)
{
	char err[512] = "";
	*rv = 0;
	json_t *in = json_deep_copy(body);
	api_own_json(r, in);
	json_object_del(in, "status");
	json_t *md = json_object_get(in, "metadata");
	if (json_is_object(md)) {
		json_t *v = json_object_get(md, "resourceVersion");
		if (v && api_rv_parse_json(v, rv) < 0) {
			api_problem_ext(r, 422,
					json_pack("{s:s}", "field", "metadata.resourceVersion"),
					"metadata.resourceVersion: expected a revision number");
			return NULL;
		}
		json_object_del(md, "resourceVersion");
		json_object_del(md, "createdAt");
		if (path_name && !json_object_get(md, "name"))
			json_object_set_new(md, "name", json_string(path_name));
	} else if (!md && path_name) {
		json_object_set_new(in, "metadata", json_pack("{s:s}", "name", path_name));
	}
	struct budget b;
	memset(&b, 0, sizeof(b));
	if (budget_from_json(in, 0, &b, err, sizeof(err)) < 0) {
		budget_release(&b);
		problem_err(r, FP_EINVAL, err);
		return NULL;
	}
	if (!b.name || name_validate("metadata.name", b.name, err, sizeof(err)) < 0) {
		budget_release(&b);
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"), "%s",
				*err ? err : "metadata.name: required");
		return NULL;
	}
	if (path_name && strcmp(b.name, path_name) != 0) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"),
				"metadata.name: %s is not the name in the path (%s)", b.name,
				path_name);
		budget_release(&b);
		return NULL;
	}
	json_t *doc = budget_to_json(&b);
	budget_release(&b);
	return api_own_json(r, doc);
}

/* Counts stored budgets (at most BUDGET_MAX + 1). */
static int budget_count(struct api_req *r, size_t *n)
{
	return store_count(r->srv->cfg.store, "/budgets/", n);
}

static void budget_invalidate(struct api_req *r)
{
	const struct api_health_hooks *h = &r->srv->cfg.health;
	if (h->budget_invalidate)
		h->budget_invalidate(h->arg);
}

/* Writes doc at /budgets/<name> (expect: STORE_ABSENT, a revision, or STORE_ANY) with an audit
 * event; answers status (201 or 200) with the stored document. */
static void budget_write(struct api_req *r, json_t *doc, int64_t expect, int status,
			 const char *reason)
{
	const char *name = jsonx_str(doc, "metadata.name");
	struct store_op ops[3];
	size_t nops = 0;
	ops[nops++] = (struct store_op){STORE_OP_PUT, api_printf(r, "/budgets/%s", name),
					api_own(r, jsonx_dumps(doc)), expect};
	const char *domain = jsonx_str(doc, "spec.domain");
	json_t *maxu = jsonx_path(doc, "spec.maxUnavailable");
	const char *maxs = maxu ? (const char *)api_own(r, jsonx_dumps(maxu)) : "?";
	api_event_op(r, &ops[nops++], "Normal", api_printf(r, "budget/%s", name), reason,
		     api_printf(r, "disruption budget %s: domain %s, maxUnavailable %s", name,
				domain ? domain : "?", maxs));
	size_t idem_at = nops;
	if (api_idem_op(r, &ops[nops], status, doc))
		nops++;
	int64_t rev = 0;
	size_t failed = 0;
	int rc = store_txn(r->srv->cfg.store, ops, nops, &rev, &failed);
	if (rc == FP_EEXIST && failed == 0) {
		api_problem_ext(r, 409, json_pack("{s:s}", "name", name),
				"budget %s already exists", name);
		return;
	}
	if (rc == FP_EEXIST && failed == idem_at) {
		api_problem(r, 409,
			    "a request with this Idempotency-Key was committed concurrently; "
			    "retry to get its result");
		return;
	}
	if (rc == FP_ECONFLICT || (rc == FP_ENOTFOUND && expect > 0)) {
		api_problem(r, 409,
			    "budget %s changed: resourceVersion %lld is stale; read it "
			    "again and retry",
			    name, (long long)expect);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	budget_invalidate(r);
	log_info("budget written budget=%s reason=\"%s\" actor=%s", name, reason, api_actor(r));
	if (status == 201)
		api_add_header(r, MHD_HTTP_HEADER_LOCATION, api_printf(r, "/v1/budgets/%s", name));
	api_reply_json(r, status, api_budget_render(r, doc, rev));
}

void api_budgets_create(struct api_req *r)
{
	if (api_idem_begin(r))
		return;
	json_t *body = NULL;
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	int64_t rv = 0;
	json_t *doc = budget_body(r, body, NULL, &rv);
	if (!doc)
		return;
	size_t n = 0;
	int rc = budget_count(r, &n);
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	if (n >= BUDGET_MAX) {
		api_problem(r, 409,
			    "there are %zu budgets, the most allowed (%d); delete one first", n,
			    BUDGET_MAX);
		return;
	}
	budget_write(r, doc, STORE_ABSENT, 201, "BudgetCreated");
}

/* PUT /v1/budgets/{name}: with metadata.resourceVersion (or If-Match) replaces that revision
 * (409 when stale); without, creates or replaces. */
void api_budget_put(struct api_req *r)
{
	if (check_node_param(r) < 0)
		return;
	json_t *body = NULL;
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	int64_t rv = 0;
	json_t *doc = budget_body(r, body, r->params[0], &rv);
	if (!doc)
		return;
	const char *im = api_header(r, MHD_HTTP_HEADER_IF_MATCH);
	if (im && api_rv_parse_str(im, &rv) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "header", "If-Match"),
				"If-Match: expected a resourceVersion entity-tag such as \"12\"");
		return;
	}
	if (rv > 0) {
		budget_write(r, doc, rv, 200, "BudgetChanged");
		return;
	}
	struct store_kv kv = {0};
	int rc = store_get(r->srv->cfg.store, api_printf(r, "/budgets/%s", r->params[0]), &kv);
	int64_t cur = rc == 0 ? kv.mod_revision : 0;
	store_kv_release(&kv);
	if (rc < 0 && rc != FP_ENOTFOUND) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	if (!cur) {
		size_t n = 0;
		if ((rc = budget_count(r, &n)) < 0) {
			api_problem_rc(r, rc, "cannot read the store");
			return;
		}
		if (n >= BUDGET_MAX) {
			api_problem(r, 409,
				    "there are %zu budgets, the most allowed (%d); delete "
				    "one first",
				    n, BUDGET_MAX);
			return;
		}
	}
	/* Replace exactly what was read: a concurrent change is a 409, not a lost update. */
	budget_write(r, doc, cur ? cur : STORE_ABSENT, cur ? 200 : 201,
		     cur ? "BudgetChanged" : "BudgetCreated");
}

void api_budget_delete(struct api_req *r)
{
	if (check_node_param(r) < 0)
		return;
	const char *name = r->params[0];
	const char *key = api_printf(r, "/budgets/%s", name);
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, key, &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "budget %s not found", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	api_own_json(r, doc);
	struct store_op ops[2] = {{.type = STORE_OP_DELETE, .key = key, .expect = mod}};
	api_event_op(r, &ops[1], "Normal", api_printf(r, "budget/%s", name), "BudgetDeleted",
		     api_printf(r, "disruption budget %s deleted", name));
	rc = store_txn(r->srv->cfg.store, ops, 2, NULL, NULL);
	if (rc == FP_ECONFLICT || rc == FP_ENOTFOUND) {
		api_problem(r, 409, "budget %s changed while it was being deleted; retry", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	budget_invalidate(r);
	log_info("budget deleted budget=%s actor=%s", name, api_actor(r));
	api_reply_json(r, 200, render_plain(r, doc, mod));
}

/* ---------------------------------------------------------------- breakers */

void api_breakers_list(struct api_req *r)
{
	const struct api_health_hooks *h = &r->srv->cfg.health;
	if (!have_health(r, (const void *)h->breakers))
		return;
	json_t *items = h->breakers(h->arg);
	if (!items) {
		api_problem(r, 500, "the health controller returned no breakers");
		return;
	}
	api_reply_json(r, 200, items);
}

/* POST /v1/breakers/{name}:reset {"reason","replay"?}: closes an open breaker ("rack.r01",
 * "nvlink_domain.nvl-r01"; '/' is accepted, percent-encoded, so a breaker named from an old
 * policy's label key with '/' can still be closed); the controller audits who and why and,
 * with "replay": true, evaluates the decisions it suppressed again. 404 when it is not open. */
void api_breaker_reset(struct api_req *r)
{
	static const char *const keys[] = {"reason", "replay", NULL};
	const struct api_health_hooks *h = &r->srv->cfg.health;
	const char *name = r->params[0];
	if (!id_ok(name, BREAKER_NAME_MAX, '/') || !strchr(name, '.')) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"),
				"name: expected <domain>.<value> such as rack.r01");
		return;
	}
	if (api_idem_begin(r))
		return;
	json_t *body;
	if (api_body_keys(r, keys, &body) < 0)
		return;
	const char *reason;
	if (api_text_member(r, body, "reason", REASON_MAX, 1, &reason) < 0)
		return;
	json_t *rv = json_object_get(body, "replay");
	if (rv && !json_is_boolean(rv)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "replay"),
				"replay: expected true or false");
		return;
	}
	if (!have_health(r, (const void *)h->breaker_reset))
		return;
	char err[512] = "";
	json_t *result = NULL;
	int rc = h->breaker_reset_ex
			 ? h->breaker_reset_ex(h->arg, name, api_actor(r), reason, json_is_true(rv),
					       &result, err, sizeof(err))
			 : h->breaker_reset(h->arg, name, api_actor(r), reason, err, sizeof(err));
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "breaker %s is not open", name);
		return;
	}
	if (rc < 0) {
		problem_err(r, rc, err);
		return;
	}
	log_info("breaker reset breaker=%s actor=%s", name, api_actor(r));
	api_reply_json(r, 200,
		       result ? result
			      : json_pack("{s:s,s:{s:s},s:s}", "kind", "HealthBreaker", "metadata",
					  "name", name, "state", "closed"));
}

/* ---------------------------------------------------------------- RMAs */

static int rma_keep(struct api_req *r, const json_t *doc, void *arg)
{
	const char *want = arg, *v = jsonx_str(doc, "node");
	return v && strcmp(v, want) == 0;
}

/* GET /v1/rmas?node=: RMA records in id order. */
void api_rmas_list(struct api_req *r)
{
	const char *node = api_query(r, "node");
	char err[256];
	if (node && name_validate("node", node, err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "node"), "%s", err);
		return;
	}
	api_list(r, "/rmas/", node ? rma_keep : NULL, node ? api_strdup(r, node) : NULL,
		 render_plain);
}

void api_rma_get(struct api_req *r)
{
	const char *name = r->params[0];
	if (!id_ok(name, ID_MAX, 0)) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"),
				"name: expected an RMA id (1..64 characters of A-Z a-z 0-9 . _ -)");
		return;
	}
	get_key(r, api_printf(r, "/rmas/%s", name), "RMA", name, render_plain);
}
