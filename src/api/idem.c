/* idem.c - the Idempotency-Key request header on POSTs (DESIGN.md "API";
 * draft-ietf-httpapi-idempotency-key-header). The first request with a key commits, in the same
 * store transaction as its effect, a record /idempotency/<hex BLAKE2b(principal, key)>:
 *   {"status":201,"body":{...},"createdAt":"<RFC 3339>","fingerprint":"<hex>"}
 * A later request from the same principal with the same key gets the stored status and body
 * again (header Idempotent-Replayed: true) and changes nothing; the same key with a different
 * method, path or body is refused 422 (draft section 2.7). Records expire 24 h after creation,
 * lazily: an expired record is ignored and overwritten by the next use of its key. The body is
 * stored without resourceVersion; a replay fills in the record's own mod_revision, which is the
 * revision of the transaction that made the effect. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/timefmt.h"
#include "store/store.h"
#include "base/banned.h"

#define IDEM_TTL_MS (24LL * 3600 * 1000)
#define IDEM_KEY_MAX 255
/* A record must fit in one store value; bigger responses are stored as a summary. */
#define IDEM_BODY_MAX (STORE_MAX_VALUE - 4096)

static void hex_hash(const void *parts[], const size_t lens[], size_t n, char out[65])
{
	crypto_generichash_state st;
	unsigned char h[32];
	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		crypto_generichash_update(&st, parts[i], lens[i]);
		crypto_generichash_update(&st, (const unsigned char *)"", 1); /* separator */
	}
	crypto_generichash_final(&st, h, sizeof(h));
	sodium_bin2hex(out, 65, h, sizeof(h));
}

/* Puts rv into body (object with metadata, or {"items":[...]}). */
static void fill_rv(json_t *body, int64_t rv)
{
	json_t *items = json_object_get(body, "items");
	if (json_is_array(items)) {
		size_t i;
		json_t *it;
		json_array_foreach(items, i, it)
			if (json_is_object(json_object_get(it, "metadata")))
				api_set_rv(it, rv);
	} else if (json_is_object(json_object_get(body, "metadata"))) {
		api_set_rv(body, rv);
	}
}

int api_idem_begin(struct api_req *r)
{
	const char *key = api_header(r, "Idempotency-Key");
	if (!key)
		return 0;
	size_t kl = strlen(key);
	int ok = kl >= 1 && kl <= IDEM_KEY_MAX;
	for (size_t i = 0; ok && i < kl; i++)
		ok = key[i] >= 0x20 && key[i] < 0x7f;
	if (!ok) {
		api_problem_ext(r, 400, json_pack("{s:s}", "header", "Idempotency-Key"),
				"Idempotency-Key: expected 1..%d printable ASCII characters",
				IDEM_KEY_MAX);
		return 1;
	}
	char h[65], fp[65];
	const void *kp[] = {r->who.name, key};
	const size_t kls[] = {strlen(r->who.name), kl};
	hex_hash(kp, kls, 2, h);
	const void *fpp[] = {r->method, r->path, r->body.data ? r->body.data : ""};
	const size_t fpl[] = {strlen(r->method), strlen(r->path), r->body.len};
	hex_hash(fpp, fpl, 3, fp);
	free(r->idem_key);
	free(r->idem_fp);
	r->idem_key = xasprintf("/idempotency/%s", h);
	r->idem_fp = xstrdup(fp);
	r->idem_expect = STORE_ABSENT;

	json_t *rec = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, r->idem_key, &rec, &mod);
	if (rc == FP_ENOTFOUND)
		return 0;
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the idempotency record");
		return 1;
	}
	int64_t created = 0;
	const char *cs = jsonx_str(rec, "createdAt");
	if (!cs || fp_time_parse(cs, &created) < 0 || created + IDEM_TTL_MS < api_now(r)) {
		/* expired (or unreadable): forget it, overwrite on commit */
		r->idem_expect = mod;
		json_decref(rec);
		return 0;
	}
	const char *rfp = jsonx_str(rec, "fingerprint");
	if (!rfp || strcmp(rfp, r->idem_fp) != 0) {
		json_decref(rec);
		api_problem_ext(r, 422, json_pack("{s:s}", "header", "Idempotency-Key"),
				"Idempotency-Key was already used for a different request");
		return 1;
	}
	int status = (int)json_integer_value(json_object_get(rec, "status"));
	json_t *body = json_object_get(rec, "body");
	json_incref(body);
	json_decref(rec);
	if (status < 200 || status > 599 || !body) {
		json_decref(body);
		api_problem(r, 500, "unreadable idempotency record");
		return 1;
	}
	fill_rv(body, mod);
	api_reply_json(r, status, body);
	api_add_header(r, "Idempotent-Replayed", "true");
	return 1;
}

int api_idem_op(struct api_req *r, struct store_op *op, int status, const json_t *body)
{
	if (!r->idem_key)
		return 0;
	char ts[FP_TIME_LEN];
	fp_time_format(api_now(r), ts);
	json_t *b = json_deep_copy(body);
	json_t *items = json_object_get(b, "items");
	if (json_is_array(items)) {
		size_t i;
		json_t *it;
		json_array_foreach(items, i, it) {
			json_t *md = json_object_get(it, "metadata");
			if (json_is_object(md))
				json_object_del(md, "resourceVersion");
		}
	} else if (json_is_object(json_object_get(b, "metadata"))) {
		json_object_del(json_object_get(b, "metadata"), "resourceVersion");
	}
	json_t *rec = json_pack("{s:i,s:o,s:s,s:s}", "status", status, "body", b, "createdAt", ts,
				"fingerprint", r->idem_fp);
	char *val = jsonx_dumps(rec);
	json_decref(rec);
	if (strlen(val) > IDEM_BODY_MAX) {
		/* A very large bulk answer: keep a summary so the replay still says 201. */
		free(val);
		json_t *names = json_array();
		size_t i;
		json_t *it;
		json_array_foreach(items, i, it)
			json_array_append(names,
					  json_object_get(json_object_get(it, "metadata"), "name"));
		rec = json_pack("{s:i,s:{s:o,s:b},s:s,s:s}", "status", status, "body", "names",
				names, "truncated", 1, "createdAt", ts, "fingerprint", r->idem_fp);
		val = jsonx_dumps(rec);
		json_decref(rec);
	}
	op->type = STORE_OP_PUT;
	op->key = r->idem_key;
	op->value = api_own(r, val);
	op->expect = r->idem_expect;
	return 1;
}
