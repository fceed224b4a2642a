/* api_tokens.c - /v1/tokens (admin only; DESIGN.md "API"): create a token and show its secret
 * exactly once in the 201 response {"name","role","node"?,"nodeUid"?,"token"}; list and get
 * token documents without secrets or hashes; revoke with DELETE. An agent token is made only
 * for a node that exists now and records its metadata.uid (auth.h; issue 16 item 12). Token creation does not honour
 * Idempotency-Key: a replay would have to store the secret, which is never stored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "core/codec.h"
#include "engine/objects.h"
#include "store/store.h"
#include "base/banned.h"

static json_t *render_token(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	json_t *out = api_auth_token_public(doc);
	api_set_rv(out, mod_rev);
	return out;
}

void api_tokens_list(struct api_req *r)
{
	api_list(r, "/tokens/", NULL, NULL, render_token);
}

void api_token_get(struct api_req *r)
{
	char err[256];
	if (name_validate("name", r->params[0], err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"), "%s", err);
		return;
	}
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, api_printf(r, "/tokens/%s", r->params[0]), &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "token %s not found", r->params[0]);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the store");
		return;
	}
	api_reply_json(r, 200, render_token(r, doc, mod));
	json_decref(doc);
}

void api_tokens_create(struct api_req *r)
{
	static const char *const keys[] = {"name", "role", "node", NULL};
	json_t *body = NULL;
	char err[256];
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	if (jsonx_check_keys(body, keys, "", err, sizeof(err)) < 0) {
		api_problem(r, 422, "%s", err);
		return;
	}
	json_t *jn = json_object_get(body, "name"), *jr = json_object_get(body, "role");
	json_t *jnode = json_object_get(body, "node");
	if (!json_is_string(jn) || !json_is_string(jr) || (jnode && !json_is_string(jnode))) {
		const char *f = !json_is_string(jn)   ? "name"
				: !json_is_string(jr) ? "role"
						      : "node";
		api_problem_ext(r, 422, json_pack("{s:s}", "field", f), "%s: %s", f,
				json_object_get(body, f) ? "expected a string" : "required");
		return;
	}
	enum api_role role;
	if (api_role_parse(json_string_value(jr), &role) < 0) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "role"),
				"role: expected admin, operator, viewer or agent");
		return;
	}
	/* An agent token names the node's uid: the node must exist now (a reference to a
	 * missing object is 422 naming the field, as a rack's spec.site). */
	const char *node = jnode ? json_string_value(jnode) : NULL, *uid = NULL;
	if (role == API_ROLE_AGENT && node) {
		if (name_validate("node", node, err, sizeof(err)) < 0) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "node"), "%s", err);
			return;
		}
		json_t *nd = NULL;
		int64_t mod = 0;
		int grc = api_get_doc(r, api_own(r, objects_key_node_dup(node)), &nd, &mod);
		if (grc == FP_ENOTFOUND) {
			api_problem_ext(r, 422,
					json_pack("{s:s,s:s}", "field", "node", "node", node),
					"node: node %s does not exist; an agent token is made for "
					"a node that is enrolled",
					node);
			return;
		}
		if (grc < 0) {
			api_problem_rc(r, grc, "cannot read the node");
			return;
		}
		api_own_json(r, nd);
		uid = jsonx_str(nd, "metadata.uid");
		if (!uid || !*uid) {
			api_problem(r, 500, "stored node %s has no metadata.uid", node);
			return;
		}
	}
	char *secret = NULL;
	json_t *doc = NULL;
	int rc = api_auth_token_create(r->srv->auth, json_string_value(jn), role, node, uid,
				       api_actor(r), api_now(r), api_event_seq(r), &secret, &doc,
				       err, sizeof(err));
	if (rc == FP_EEXIST) {
		api_problem_ext(r, 409, json_pack("{s:s}", "name", json_string_value(jn)), "%s",
				err);
		return;
	}
	if (rc == FP_EINVAL) {
		api_problem(r, 422, "%s", err);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, err);
		return;
	}
	json_t *out = json_pack("{s:s,s:s}", "name", json_string_value(jn), "role",
				api_role_name(role));
	if (jnode)
		json_object_set(out, "node", jnode);
	if (uid)
		json_object_set_new(out, "nodeUid", json_string(uid));
	json_object_set_new(out, "token", json_string(secret));
	api_reply_json(r, 201, out);
	fp_free_secret(secret);
	json_decref(doc);
	log_info("token created name=%s role=%s actor=%s", json_string_value(jn),
		 api_role_name(role), api_actor(r));
}

void api_token_delete(struct api_req *r)
{
	char err[256];
	if (name_validate("name", r->params[0], err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"), "%s", err);
		return;
	}
	if (strcmp(r->params[0], r->who.name) == 0) {
		/* Revoking the token in hand would lock its admin out for good. */
		api_problem(r, 409,
			    "token %s is the one this request uses; revoke it with another admin "
			    "token",
			    r->params[0]);
		return;
	}
	int rc = api_auth_token_revoke(r->srv->auth, r->params[0], api_actor(r), api_now(r),
				       api_event_seq(r));
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "token %s not found", r->params[0]);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot revoke the token");
		return;
	}
	api_reply_json(r, 200, json_pack("{s:s,s:s}", "name", r->params[0], "status", "revoked"));
	log_info("token revoked name=%s actor=%s", r->params[0], api_actor(r));
}
