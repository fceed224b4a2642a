/* api_tenants.c - tenants, /v1/tenants (docs/api.md "Tenants"; core/tenant.h): a Slurm
 * account with an optional GPU quota. PUT creates or replaces one (strict document, optional
 * resourceVersion for compare-and-swap) with an audit event in the same transaction; GET of
 * one adds "status" from the tenant hook serve wires with --slurm (quota against the GPUs the
 * account's running jobs hold, and GPU-hours this month); DELETE removes it. The quota itself
 * reaches Slurm through serve's tenant sync (sched/slurm_tenant.h), not through this file. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "core/codec.h"
#include "core/tenant.h"
#include "store/store.h"

#include "base/banned.h"

static int check_name(struct api_req *r, const char *name)
{
	char err[256];
	if (name_validate("name", name, err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"), "%s", err);
		return -1;
	}
	return 0;
}

static json_t *render_tenant(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	json_t *out = json_deep_copy(doc);
	api_set_rv(out, mod_rev);
	return out;
}

/* With the status: the hook's object, or {"error"} when it failed; none without a hook. */
static json_t *render_tenant_status(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	const struct api_tenant_hooks *h = &r->srv->cfg.tenants;
	json_t *out = render_tenant(r, doc, mod_rev);
	struct tenant t;
	char err[256];
	if (h->status && tenant_from_json(doc, NULL, &t, err, sizeof(err)) == 0) {
		json_t *st = h->status(h->arg, t.account, t.quota);
		if (st)
			json_object_set_new(out, "status", st);
	}
	return out;
}

void api_tenants_list(struct api_req *r)
{
	api_list(r, "/tenants/", NULL, NULL, render_tenant);
}

void api_tenant_get(struct api_req *r)
{
	const char *name = r->params[0];
	if (check_name(r, name) < 0)
		return;
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, api_printf(r, "/tenants/%s", name), &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "tenant %s not found", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	api_own_json(r, doc);
	api_reply_json(r, 200, render_tenant_status(r, doc, mod));
}

void api_tenant_put(struct api_req *r)
{
	const char *name = r->params[0];
	if (check_name(r, name) < 0)
		return;
	json_t *body = NULL;
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	struct tenant t;
	char err[512] = "";
	if (tenant_from_json(body, name, &t, err, sizeof(err)) < 0) {
		const char *colon = strchr(err, ':');
		json_t *ext = colon ? json_pack("{s:s%}", "field", err, (size_t)(colon - err))
				    : NULL;
		api_problem_ext(r, 422, ext, "%s", err);
		return;
	}
	int64_t want = 0;
	const json_t *rvj = jsonx_path(body, "metadata.resourceVersion");
	if (rvj && api_rv_parse_json(rvj, &want) < 0) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.resourceVersion"),
				"metadata.resourceVersion: expected a revision number");
		return;
	}
	const char *key = api_printf(r, "/tenants/%s", name);
	json_t *old = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, key, &old, &mod);
	json_decref(old);
	if (rc < 0 && rc != FP_ENOTFOUND) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	int created = rc == FP_ENOTFOUND;
	if (created) {
		size_t n = 0;
		if (store_count(r->srv->cfg.store, "/tenants/", &n) == 0 && n >= TENANT_MAX) {
			api_problem(r, 409, "at most %u tenants", TENANT_MAX);
			return;
		}
	}
	int64_t expect = want ? want : (created ? STORE_ABSENT : mod);
	json_t *doc = api_own_json(r, tenant_to_json(&t));
	char quota[32];
	if (t.quota < 0)
		snprintf(quota, sizeof(quota), "none");
	else
		snprintf(quota, sizeof(quota), "%ld GPUs", t.quota);
	struct store_op ops[2] = {
		{STORE_OP_PUT, key, api_own(r, jsonx_dumps(doc)), expect},
	};
	api_event_op(r, &ops[1], "Normal", api_printf(r, "tenant/%s", name),
		     created ? "TenantCreated" : "TenantUpdated",
		     api_printf(r, "tenant %s: Slurm account %s, GPU quota %s", name, t.account,
				quota));
	int64_t rev = 0;
	rc = store_txn(r->srv->cfg.store, ops, 2, &rev, NULL);
	if (rc == FP_EEXIST || rc == FP_ECONFLICT || (rc == FP_ENOTFOUND && expect > 0)) {
		api_problem(r, 409, "tenant %s changed: read it again and retry", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	log_info("tenant written name=%s account=%s quota=%ld actor=%s", name, t.account, t.quota,
		 api_actor(r));
	if (created)
		api_add_header(r, MHD_HTTP_HEADER_LOCATION, api_printf(r, "/v1/tenants/%s", name));
	api_reply_json(r, created ? 201 : 200, render_tenant(r, doc, rev));
}

void api_tenant_delete(struct api_req *r)
{
	const char *name = r->params[0];
	if (check_name(r, name) < 0)
		return;
	const char *key = api_printf(r, "/tenants/%s", name);
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, key, &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "tenant %s not found", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	api_own_json(r, doc);
	struct store_op ops[2] = {{.type = STORE_OP_DELETE, .key = key, .expect = mod}};
	api_event_op(r, &ops[1], "Normal", api_printf(r, "tenant/%s", name), "TenantDeleted",
		     api_printf(r, "tenant %s deleted", name));
	rc = store_txn(r->srv->cfg.store, ops, 2, NULL, NULL);
	if (rc == FP_ECONFLICT || rc == FP_ENOTFOUND) {
		api_problem(r, 409, "tenant %s changed while it was being deleted; retry", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	log_info("tenant deleted name=%s actor=%s", name, api_actor(r));
	api_reply_json(r, 200, render_tenant(r, doc, mod));
}
