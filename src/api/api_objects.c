/* api_objects.c - the read-mostly resources beside nodes (DESIGN.md "API"): operations
 * (GET list filtered by node= and state=, GET one, watch), audit events (GET list filtered by
 * object=, oldest first as their ids sort by time, GET one, watch), and sites and racks (GET
 * list/one, POST create for operators, DELETE for admins). Site and rack documents:
 *   {"kind":"Site"|"Rack","metadata":{"name","uid","labels","createdAt","resourceVersion"},
 *    "spec":{...}}
 * where a rack's spec.site names an existing site; failure-domain labels (nvlink_domain, leaf,
 * pdu) go in metadata.labels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "core/codec.h"
#include "core/model.h"
#include "engine/objects.h"
#include "store/store.h"
#include "base/banned.h"

static int check_name_param(struct api_req *r)
{
	char err[256];
	if (name_validate("name", r->params[0], err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"), "%s", err);
		return -1;
	}
	return 0;
}

/* Stored document as it is, plus metadata.resourceVersion. */
static json_t *render_plain(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	return api_plain_render(r, doc, mod_rev);
}

json_t *api_plain_render(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	json_t *out = json_deep_copy(doc);
	api_set_rv(out, mod_rev);
	return out;
}

static void get_one(struct api_req *r, const char *prefix, const char *what, api_render_fn render)
{
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, api_printf(r, "%s%s", prefix, r->params[0]), &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "%s %s not found", what, r->params[0]);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	json_t *out = render(r, doc, mod);
	json_decref(doc);
	if (!out) {
		api_problem(r, 500, "stored %s %s does not decode", what, r->params[0]);
		return;
	}
	api_reply_json(r, 200, out);
	api_add_header(r, MHD_HTTP_HEADER_ETAG, api_printf(r, "\"%lld\"", (long long)mod));
}

/* ---------------------------------------------------------------- operations */

static json_t *render_op(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	return api_op_render(r, doc, mod_rev);
}

json_t *api_op_render(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	struct operation *op = NULL;
	char err[256];
	if (operation_from_json(doc, mod_rev, &op, err, sizeof(err)) < 0) {
		log_warn("stored operation does not decode rev=%lld err=\"%s\"", (long long)mod_rev,
			 err);
		return NULL;
	}
	json_t *out = operation_to_json(op, 1);
	operation_free(op);
	if (out)
		api_set_rv(out, mod_rev);
	return out;
}

struct op_filter {
	const char *node;
	const char *state;
};

static int op_keep(struct api_req *r, const json_t *doc, void *arg)
{
	struct op_filter *f = arg;
	const char *v;
	if (f->node && (!(v = jsonx_str(doc, "spec.node")) || strcmp(v, f->node) != 0))
		return 0;
	if (f->state && (!(v = jsonx_str(doc, "status.state")) || strcmp(v, f->state) != 0))
		return 0;
	return 1;
}

void api_ops_list(struct api_req *r)
{
	struct op_filter *f = api_own(r, xcalloc(1, sizeof(*f)));
	char err[256];
	f->node = api_query(r, "node");
	f->state = api_query(r, "state");
	if (f->node && name_validate("node", f->node, err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "node"), "%s", err);
		return;
	}
	enum op_state st;
	if (f->state && op_state_parse(f->state, &st) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "state"),
				"state: expected pending, running, succeeded, failed or cancelled");
		return;
	}
	api_keep_fn keep = (f->node || f->state) ? op_keep : NULL;
	if (api_is_watch(r))
		api_watch(r, OBJECTS_PREFIX_OPERATIONS, "Operation", keep, f, render_op);
	else
		api_list(r, OBJECTS_PREFIX_OPERATIONS, keep, f, render_op);
}

void api_op_get(struct api_req *r)
{
	if (strlen(r->params[0]) > 128 || strchr(r->params[0], '/')) {
		api_problem(r, 400, "name: not an operation id");
		return;
	}
	get_one(r, OBJECTS_PREFIX_OPERATIONS, "operation", render_op);
}

#define CANCEL_RETRIES 5
#define CANCEL_REASON_MAX 256

/* Loads operation id and, when it names one, its node. Answers 404/500 and returns -1 on
 * failure; *n is NULL when the node is gone (the operation can still be cancelled). */
static int cancel_load(struct api_req *r, const char *id, struct operation **op, int64_t *op_mod,
		       struct node **n, int64_t *n_mod)
{
	char err[256];
	*n = NULL;
	struct store *s = r->srv->cfg.store;
	int rc = objects_store_op(s, id, op, op_mod, err, sizeof(err));
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "operation %s not found", id);
		return -1;
	}
	if (rc < 0 && rc != FP_EPARSE) {
		api_problem_rc(r, rc, "cannot read the store");
		return -1;
	}
	if (rc < 0) {
		api_problem(r, 500, "stored operation %s does not decode: %s", id, err);
		return -1;
	}
	if (!(*op)->node)
		return 0;
	rc = objects_store_node(s, (*op)->node, n, n_mod, err, sizeof(err));
	if (rc == FP_ENOTFOUND)
		return 0;
	if (rc < 0) {
		api_problem(r, 500, "cannot read node %s of operation %s", (*op)->node, id);
		operation_free(*op);
		*op = NULL;
		return -1;
	}
	return 0;
}

/* Removes id from n's queue; returns 1 if it was there. */
static int queue_remove(struct node *n, const char *id)
{
	for (size_t i = 0; i < n->nqueued; i++) {
		if (strcmp(n->queued_ops[i], id) != 0)
			continue;
		free(n->queued_ops[i]);
		memmove(n->queued_ops + i, n->queued_ops + i + 1,
			(n->nqueued - i - 1) * sizeof(char *));
		n->nqueued--;
		return 1;
	}
	return 0;
}

/* POST /v1/operations/{id}:cancel {"reason"?} (no body is {}): cancels an operation that has not started -
 * queued on its node (status.queuedOperations) or pending with no step begun. In one
 * transaction (each document compare-and-swapped on its revision, so the lifecycle controller
 * starting it at the same moment makes one side lose and read again) the operation goes to
 * state cancelled (finishedAt, lastError "cancelled by <actor>: <reason>"), its id leaves the
 * node's queue, and an "OperationCancelled" event names the actor. A pending operation that is
 * the node's current one stays status.operation: the lifecycle controller sees it ended and
 * moves on (the next queued operation, or the phase's own operation again). 200 with the
 * operation; 409 for a running or finished operation (a running BMC step is never
 * interrupted); 404 for an unknown id. Idempotency-Key is honoured. */
void api_op_cancel(struct api_req *r)
{
	static const char *const keys[] = {"reason", NULL};
	const char *id = r->params[0];
	if (strlen(id) > 128 || strchr(id, '/')) {
		api_problem(r, 400, "name: not an operation id");
		return;
	}
	if (api_idem_begin(r))
		return;
	json_t *body = NULL;
	if (r->body.len == 0) /* the body is optional: none is {} */
		body = json_object();
	else if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	char err[256];
	if (jsonx_check_keys(body, keys, "", err, sizeof(err)) < 0) {
		api_problem(r, 422, "%s", err);
		return;
	}
	const char *reason = NULL;
	if (api_text_member(r, body, "reason", CANCEL_REASON_MAX, 0, &reason) < 0)
		return;
	const char *me = api_actor(r);
	for (int attempt = 0; attempt < CANCEL_RETRIES; attempt++) {
		struct operation *op = NULL;
		struct node *n = NULL;
		int64_t op_mod = 0, n_mod = 0;
		if (cancel_load(r, id, &op, &op_mod, &n, &n_mod) < 0)
			return;
		if (op->state == OP_RUNNING ||
		    (op->state == OP_PENDING && (op->started_at || op->attempt || op->step))) {
			const char *step = op->step < op->nsteps ? op->steps[op->step] : "-";
			api_problem_ext(r, 409,
					json_pack("{s:s,s:s}", "state", op_state_name(op->state),
						  "step", step),
					"operation %s is running step %s; only queued or pending "
					"operations can be cancelled",
					id, step);
			operation_free(op);
			node_free(n);
			return;
		}
		if (op_state_terminal(op->state)) {
			api_problem_ext(
				r, 409, json_pack("{s:s}", "state", op_state_name(op->state)),
				"operation %s already %s; only queued or pending operations "
				"can be cancelled",
				id, op_state_name(op->state));
			operation_free(op);
			node_free(n);
			return;
		}
		int was_queued = n && queue_remove(n, id);
		int64_t now = api_now(r);
		op->state = OP_CANCELLED;
		op->finished_at = op->updated_at = now;
		free(op->last_error);
		op->last_error = reason ? xasprintf("cancelled by %s: %s", me, reason)
					: xasprintf("cancelled by %s", me);
		struct store_op ops[4];
		size_t nops = 0;
		json_t *oj = operation_to_json(op, 0);
		ops[nops++] = (struct store_op){STORE_OP_PUT, api_own(r, objects_key_op_dup(id)),
						api_own(r, jsonx_dumps(oj)), op_mod};
		json_decref(oj);
		if (was_queued) {
			json_t *nj = node_to_json(n, NODE_JSON_STORE);
			ops[nops++] = (struct store_op){STORE_OP_PUT,
							api_own(r, objects_key_node_dup(n->name)),
							api_own(r, jsonx_dumps(nj)), n_mod};
			json_decref(nj);
		}
		api_event_op(r, &ops[nops++], "Normal",
			     op->node ? api_printf(r, "node/%s", op->node)
				      : api_printf(r, "operation/%s", id),
			     "OperationCancelled",
			     api_printf(r, "operation %s (%s%s%s) cancelled by %s%s%s; it was %s",
					id, op->kind ? op->kind : "?", op->nsteps ? " " : "",
					op->nsteps ? op->steps[0] : "", me, reason ? ": " : "",
					reason ? reason : "",
					was_queued ? "queued" : "pending and not started"));
		json_t *resp = operation_to_json(op, 1);
		size_t idem_at = nops;
		if (api_idem_op(r, &ops[nops], 200, resp))
			nops++;
		int64_t rev = 0;
		size_t failed = 0;
		int rc = store_txn(r->srv->cfg.store, ops, nops, &rev, &failed);
		char *node_name = op->node ? api_strdup(r, op->node) : NULL;
		operation_free(op);
		node_free(n);
		if (rc == FP_ECONFLICT && failed < idem_at) {
			json_decref(resp);
			continue; /* the operation or its node changed (the controller moved on) */
		}
		if (rc == FP_EEXIST && failed == idem_at) {
			json_decref(resp);
			api_problem(r, 409,
				    "a request with this Idempotency-Key was committed "
				    "concurrently; retry to get its result");
			return;
		}
		if (rc < 0) {
			json_decref(resp);
			api_problem_rc(r, rc, "store write failed");
			return;
		}
		api_set_rv(resp, rev);
		api_reply_json(r, 200, resp);
		log_info("operation cancelled op=%s node=%s queued=%d actor=%s", id,
			 node_name ? node_name : "-", was_queued, me);
		return;
	}
	api_problem(r, 409, "operation %s kept changing; gave up after %d attempts, retry", id,
		    CANCEL_RETRIES);
}

/* ---------------------------------------------------------------- events */

/* The filters of GET /v1/events, all optional (NULL / 0: not given). */
struct ev_filter {
	const char *object; /* exact "kind/name" */
	const char *type;   /* "Normal" or "Warning" */
	const char *reason; /* exact CamelCase reason */
	int64_t since_ms;   /* events whose time is at or after this instant; 0: any */
};

static int ev_keep(struct api_req *r, const json_t *doc, void *arg)
{
	const struct ev_filter *f = arg;
	const char *v;
	if (f->object && (!(v = jsonx_str(doc, "object")) || strcmp(v, f->object) != 0))
		return 0;
	if (f->type && (!(v = jsonx_str(doc, "type")) || strcmp(v, f->type) != 0))
		return 0;
	if (f->reason && (!(v = jsonx_str(doc, "reason")) || strcmp(v, f->reason) != 0))
		return 0;
	if (f->since_ms) {
		int64_t t = 0;
		if (!(v = jsonx_str(doc, "time")) || fp_time_parse(v, &t) < 0 || t < f->since_ms)
			return 0;
	}
	return 1;
}

/* A reason as events carry it: 1..64 ASCII letters and digits, starting with an upper-case
 * letter (docs/api.md "Events"). */
static int ev_reason_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64 || s[0] < 'A' || s[0] > 'Z')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* GET /v1/events?object=&type=&reason=&since=&limit=&continue=&watch=: events oldest first
 * (by id), filtered; each bad filter is 400 naming its parameter. */
void api_events_list(struct api_req *r)
{
	const char *obj = api_query(r, "object");
	const char *type = api_query(r, "type");
	const char *reason = api_query(r, "reason");
	const char *since = api_query(r, "since");
	const char *slash = obj ? strchr(obj, '/') : NULL;
	char err[160];
	/* kind/name: a lower-case kind, one slash, a valid object name */
	if (obj &&
	    (!*obj || strlen(obj) > 200 || !slash || slash == obj || strchr(slash + 1, '/') ||
	     name_validate("object", slash + 1, err, sizeof(err)) < 0)) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "object"),
				"object: expected kind/name such as node/r01n03");
		return;
	}
	if (type && strcmp(type, "Normal") != 0 && strcmp(type, "Warning") != 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "type"),
				"type: expected Normal or Warning");
		return;
	}
	if (reason && !ev_reason_ok(reason)) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "reason"),
				"reason: expected a CamelCase word of 1..64 letters and digits "
				"such as DrainRequested");
		return;
	}
	int64_t since_ms = 0;
	if (since && (fp_time_parse_offset(since, &since_ms, NULL) < 0 || since_ms <= 0)) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "since"),
				"since: expected an RFC 3339 date-time after 1970 such as "
				"2026-11-30T05:00:00Z");
		return;
	}
	struct ev_filter *f = NULL;
	if (obj || type || reason || since) {
		f = api_own(r, xcalloc(1, sizeof(*f)));
		f->object = obj ? api_strdup(r, obj) : NULL;
		f->type = type ? api_strdup(r, type) : NULL;
		f->reason = reason ? api_strdup(r, reason) : NULL;
		f->since_ms = since_ms;
	}
	api_keep_fn keep = f ? ev_keep : NULL;
	if (api_is_watch(r))
		api_watch(r, "/events/", "Event", keep, f, render_plain);
	else
		api_list(r, "/events/", keep, f, render_plain);
}

void api_event_get(struct api_req *r)
{
	if (strlen(r->params[0]) > 64) {
		api_problem(r, 400, "name: not an event id");
		return;
	}
	get_one(r, "/events/", "event", render_plain);
}

/* ---------------------------------------------------------------- sites and racks */

struct kind_desc {
	const char *kind;   /* "Site" */
	const char *what;   /* "site" */
	const char *prefix; /* "/sites/" */
	const char *const *spec_keys;
};

static const char *const site_spec_keys[] = {"description", "location", "provider", "rateLimits",
					     NULL};
static const char *const rack_spec_keys[] = {"site", "description", "location", NULL};
static const struct kind_desc site_kind = {"Site", "site", "/sites/", site_spec_keys};
static const struct kind_desc rack_kind = {"Rack", "rack", "/racks/", rack_spec_keys};

/* Validates a create body; returns the document to store (new reference) or NULL after
 * answering the problem. */
static json_t *object_from_body(struct api_req *r, const struct kind_desc *k, json_t *body)
{
	static const char *const top[] = {"kind", "metadata", "spec", NULL};
	static const char *const mdk[] = {"name", "labels", NULL};
	char err[256];
	if (jsonx_check_keys(body, top, "", err, sizeof(err)) < 0) {
		api_problem(r, 422, "%s", err);
		return NULL;
	}
	json_t *kind = json_object_get(body, "kind");
	if (kind && (!json_is_string(kind) || strcmp(json_string_value(kind), k->kind) != 0)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "kind"),
				"kind: expected \"%s\"", k->kind);
		return NULL;
	}
	json_t *md = json_object_get(body, "metadata");
	if (!md) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"),
				"metadata.name: required");
		return NULL;
	}
	if (jsonx_check_keys(md, mdk, "metadata", err, sizeof(err)) < 0) {
		api_problem(r, 422, "%s", err);
		return NULL;
	}
	json_t *name = json_object_get(md, "name");
	if (!json_is_string(name)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"),
				"metadata.name: %s", name ? "expected a string" : "required");
		return NULL;
	}
	if (name_validate("metadata.name", json_string_value(name), err, sizeof(err)) < 0) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"), "%s", err);
		return NULL;
	}
	json_t *labels = json_object_get(md, "labels");
	if (labels) {
		const char *lk;
		json_t *lv;
		if (!json_is_object(labels) || json_object_size(labels) > NODE_MAX_LABELS) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.labels"),
					"metadata.labels: expected an object of at most %d string "
					"values",
					NODE_MAX_LABELS);
			return NULL;
		}
		json_object_foreach(labels, lk, lv) {
			if (!json_is_string(lv) ||
			    label_validate(lk, json_string_value(lv), err, sizeof(err)) < 0) {
				api_problem_ext(r, 422,
						json_pack("{s:s}", "field", "metadata.labels"),
						"metadata.labels.%.64s: %s", lk,
						json_is_string(lv) ? err : "expected a string");
				return NULL;
			}
		}
	}
	json_t *spec = json_object_get(body, "spec");
	if (spec && jsonx_check_keys(spec, k->spec_keys, "spec", err, sizeof(err)) < 0) {
		api_problem(r, 422, "%s", err);
		return NULL;
	}
	const char *sk;
	json_t *sv;
	json_object_foreach(spec, sk, sv) {
		if (strcmp(sk, "rateLimits") == 0 ? !json_is_object(sv) : !json_is_string(sv)) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "spec"),
					"spec.%s: expected %s", sk,
					strcmp(sk, "rateLimits") == 0 ? "an object" : "a string");
			return NULL;
		}
	}
	if (k == &rack_kind) {
		const char *site = jsonx_str(spec, "site");
		if (!site || name_validate("spec.site", site, err, sizeof(err)) < 0) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "spec.site"), "%s",
					site ? err : "spec.site: required");
			return NULL;
		}
		struct store_kv kv = {0};
		int rc = store_get(r->srv->cfg.store, api_printf(r, "/sites/%s", site), &kv);
		store_kv_release(&kv);
		if (rc < 0) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "spec.site"),
					"spec.site: site %s does not exist", site);
			return NULL;
		}
	}
	char ts[FP_TIME_LEN];
	fp_time_format(api_now(r), ts);
	json_t *doc = json_pack("{s:s,s:{s:O,s:s,s:O,s:s},s:O}", "kind", k->kind, "metadata",
				"name", name, "uid", api_uuid(r), "labels",
				labels ? labels : json_object(), "createdAt", ts, "spec",
				spec ? spec : json_object());
	if (!labels)
		json_decref(json_object_get(json_object_get(doc, "metadata"), "labels"));
	if (!spec)
		json_decref(json_object_get(doc, "spec"));
	return doc;
}

static void object_create(struct api_req *r, const struct kind_desc *k)
{
	if (api_idem_begin(r))
		return;
	json_t *body = NULL;
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	json_t *doc = object_from_body(r, k, body);
	if (!doc)
		return;
	api_own_json(r, doc);
	const char *name = jsonx_str(doc, "metadata.name");
	struct store_op ops[3];
	size_t nops = 0;
	ops[nops].type = STORE_OP_PUT;
	ops[nops].key = api_printf(r, "%s%s", k->prefix, name);
	ops[nops].value = api_own(r, jsonx_dumps(doc));
	ops[nops++].expect = STORE_ABSENT;
	api_event_op(r, &ops[nops++], "Normal", api_printf(r, "%s/%s", k->what, name), "Created",
		     api_printf(r, "%s created", k->what));
	if (api_idem_op(r, &ops[nops], 201, doc))
		nops++;
	int64_t rev = 0;
	size_t failed = 0;
	int rc = store_txn(r->srv->cfg.store, ops, nops, &rev, &failed);
	if (rc == FP_EEXIST && failed == 0) {
		api_problem_ext(r, 409, json_pack("{s:s}", "name", name), "%s %s already exists",
				k->what, name);
		return;
	}
	if (rc == FP_EEXIST && failed == 2) {
		api_problem(r, 409,
			    "a request with this Idempotency-Key was committed concurrently; "
			    "retry to get its result");
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	json_t *out = json_deep_copy(doc);
	api_set_rv(out, rev);
	api_add_header(r, MHD_HTTP_HEADER_LOCATION, api_printf(r, "/v1/%ss/%s", k->what, name));
	api_reply_json(r, 201, out);
}

static int rack_in_site(struct api_req *r, const json_t *doc, void *arg)
{
	const char *s = jsonx_str(doc, "spec.site");
	return s && strcmp(s, arg) == 0;
}

static void object_delete(struct api_req *r, const struct kind_desc *k)
{
	if (check_name_param(r) < 0)
		return;
	const char *name = r->params[0];
	const char *key = api_printf(r, "%s%s", k->prefix, name);
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, key, &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "%s %s not found", k->what, name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	api_own_json(r, doc);
	if (k == &site_kind) {
		/* A site with racks would leave them dangling. */
		struct store_kv *kvs = NULL;
		size_t n = 0;
		int64_t lrev = 0;
		int more = 0;
		char start[STORE_MAX_KEY + 1] = "";
		do {
			rc = store_list(r->srv->cfg.store, "/racks/", start, 500, &kvs, &n, &lrev,
					&more);
			if (rc < 0) {
				api_problem_rc(r, rc, "cannot read the store");
				return;
			}
			for (size_t i = 0; i < n; i++) {
				json_t *rd = NULL;
				if (jsonx_parse(kvs[i].value, strlen(kvs[i].value), &rd, NULL, 0) ==
					    0 &&
				    rack_in_site(r, rd, (void *)name)) {
					api_problem(r, 409,
						    "site %s still has rack %s; delete its "
						    "racks first",
						    name, kvs[i].key + strlen("/racks/"));
					json_decref(rd);
					store_kv_array_free(kvs, n);
					return;
				}
				json_decref(rd);
			}
			if (n)
				snprintf(start, sizeof(start), "%s", kvs[n - 1].key);
			store_kv_array_free(kvs, n);
		} while (more && n);
	}
	struct store_op ops[2] = {{.type = STORE_OP_DELETE, .key = key, .expect = mod}};
	api_event_op(r, &ops[1], "Normal", api_printf(r, "%s/%s", k->what, name), "Deleted",
		     api_printf(r, "%s deleted", k->what));
	int64_t rev = 0;
	rc = store_txn(r->srv->cfg.store, ops, 2, &rev, NULL);
	if (rc == FP_ECONFLICT || rc == FP_ENOTFOUND) {
		api_problem(r, 409, "%s %s changed while it was being deleted; retry", k->what,
			    name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	api_reply_json(r, 200, render_plain(r, doc, mod));
}

void api_sites_list(struct api_req *r)
{
	api_list(r, "/sites/", NULL, NULL, render_plain);
}

void api_site_get(struct api_req *r)
{
	if (check_name_param(r) == 0)
		get_one(r, "/sites/", "site", render_plain);
}

void api_sites_create(struct api_req *r)
{
	object_create(r, &site_kind);
}
void api_site_delete(struct api_req *r)
{
	object_delete(r, &site_kind);
}

void api_racks_list(struct api_req *r)
{
	const char *site = api_query(r, "site");
	api_list(r, "/racks/", site ? rack_in_site : NULL, (void *)site, render_plain);
}

void api_rack_get(struct api_req *r)
{
	if (check_name_param(r) == 0)
		get_one(r, "/racks/", "rack", render_plain);
}

void api_racks_create(struct api_req *r)
{
	object_create(r, &rack_kind);
}
void api_rack_delete(struct api_req *r)
{
	object_delete(r, &rack_kind);
}
