/* api_nodes.c - the /v1/nodes resource (DESIGN.md "API" and "Node phases"): list with label
 * selector, phase filter, paging and watch; enroll one node or a bulk {"items":[...]} (all
 * validated before anything is written); get (optionally from the controller's cache through
 * struct api_node_view); replace spec and labels under a resourceVersion precondition; delete
 * enrolled or retired nodes; and the hold actions :drain, :resume, :retire, :release. Every
 * write is a store transaction that carries the node, its audit event (core/event.h) and, when
 * the request has an Idempotency-Key, the idempotency record. Node documents go through the
 * strict codecs of core/codec.h; responses use the public form (no BMC secrets). */
#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsontext.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "core/codec.h"
#include "core/model.h"
#include "core/secret.h"
#include "driver/bmc.h"
#include "engine/objects.h"
#include "store/store.h"
#include "base/banned.h"

#define ENROLL_MAX_ITEMS 10000
/* node + event per item, one op left for the idempotency record */
#define CAS_RETRIES 5
#define REASON_MAX 256

/* ---------------------------------------------------------------- shared */

json_t *api_node_render(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	struct node *n = NULL;
	char err[256];
	if (node_from_json(doc, mod_rev, &n, err, sizeof(err)) < 0) {
		log_warn("stored node does not decode rev=%lld err=\"%s\"", (long long)mod_rev,
			 err);
		return NULL;
	}
	json_t *out = node_to_json(n, NODE_JSON_PUBLIC);
	node_free(n);
	if (out)
		api_set_rv(out, mod_rev);
	return out;
}

/* api_text_fn for node lists: the stored document is node_to_json's NODE_JSON_STORE form,
 * which differs from the public one (api_node_render) only in spec.bmc's credentials and
 * metadata.resourceVersion, put after name and uid (core/codec.c). So a row the cache decoded
 * from this very revision (at or below r->text_trusted_rev, or the cached node's own revision)
 * is the stored text with those members left out and the revision spliced in, its status not
 * read at all (base/jsontext.h "trusted"; the cache's parse already checked this text) - no
 * parse, decode or encode. Any other row (written a moment ago, or put in the store by hand)
 * answers FP_ENOTFOUND: the list decodes and renders it as GET does, or leaves it out when it
 * does not decode - a text no decode accepted is never copied (a password under a spec.bmc
 * that is an array would pass through any member-dropping copy). test_api's
 * test_list_text_matches_get pins the bytes to GET's. */
static int node_list_text(struct api_req *r, const struct store_kv *kv, struct buf *out)
{
	static const char *const drop[] = {"spec.bmc.password", "spec.bmc.password_sealed",
					   "spec.bmc.password_file", "metadata.resourceVersion",
					   NULL};
	const struct api_node_view *view = &r->srv->cfg.node_view;
	int64_t cached = 0;
	int trusted = kv->mod_revision <= r->text_trusted_rev ||
		      (view->get_rev &&
		       strncmp(kv->key, OBJECTS_PREFIX_NODES, strlen(OBJECTS_PREFIX_NODES)) == 0 &&
		       view->get_rev(view->arg, kv->key + strlen(OBJECTS_PREFIX_NODES), &cached) ==
			       0 &&
		       cached == kv->mod_revision);
	if (!trusted)
		return FP_ENOTFOUND;
	static const char *const after[] = {"name", "uid", NULL};
	char rv[48];
	snprintf(rv, sizeof(rv), "\"resourceVersion\":\"%lld\"", (long long)kv->mod_revision);
	const struct jsontext_edit ed = {drop, "metadata", after, rv, NULL, 1};
	char err[96];
	int rc = jsontext_rewrite(kv->value, strlen(kv->value), &ed, out, err, sizeof(err));
	if (rc < 0 && rc != FP_ETOOBIG)
		log_warn("stored node not served as text key=%s err=\"%s\"", kv->key, err);
	return rc;
}

/* Decodes an enroll/replace body (core/codec.h) and refuses a BMC driver this build does not
 * have, so a node can never enter a lifecycle no driver can run. */
static int decode_enroll(const json_t *doc, struct node **out, char *err, size_t errlen)
{
	int rc = node_from_enroll_json(doc, out, err, errlen);
	if (rc < 0)
		return rc;
	if (!bmc_driver_lookup((*out)->bmc.driver)) {
		static const char *const known[] = {"sim", "ipmi", "redfish"};
		char avail[64] = "";
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (bmc_driver_lookup(known[i])) {
				size_t l = strlen(avail);
				snprintf(avail + l, sizeof(avail) - l, "%s%s", l ? ", " : "",
					 known[i]);
			}
		rc = fp_errf(
			FP_EINVAL, err, errlen,
			"spec.bmc.driver: \"%s\" is not available in this build (available: %s)",
			(*out)->bmc.driver, avail);
		node_free(*out);
		*out = NULL;
	}
	return rc;
}

/* The extension members of a 422 for a codec error (core/codec.h): {"field": <path>} when
 * the message starts with a field path ("spec.bmc.password: longer than 256 characters") or
 * is "unknown field <path>"; NULL (no members) when it names none. A new reference. */
static json_t *codec_err_ext(const char *err)
{
	const char *p = err;
	int unknown = strncmp(p, "unknown field ", 14) == 0;
	if (unknown)
		p += 14;
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.[]");
	if (n == 0 || n > 128 || p[n] != (unknown ? '\0' : ':'))
		return NULL;
	char field[129];
	snprintf(field, sizeof(field), "%.*s", (int)n, p);
	return json_pack("{s:s}", "field", field);
}

/* Checks n's spec.bmc with its driver's own rules (bmc_spec_validate, driver/bmc.h), so a spec
 * every BMC call would refuse is never stored. 0, or -1 after answering 422 with "field" (and
 * "index" for item index >= 0 of a bulk enroll, whose whole request is then refused). */
static int bmc_spec_check(struct api_req *r, const struct node *n, long index)
{
	const char *field = NULL;
	char err[512];
	if (bmc_spec_validate(&n->bmc, &field, err, sizeof(err)) == 0)
		return 0;
	if (index >= 0)
		api_problem_ext(r, 422,
				json_pack("{s:I,s:s}", "index", (json_int_t)index, "field",
					  field ? field : "spec.bmc"),
				"items[%ld]: %s; nothing was enrolled", index, err);
	else
		api_problem_ext(r, 422, json_pack("{s:s}", "field", field ? field : "spec.bmc"),
				"%s", err);
	return -1;
}

static json_t *node_public(struct node *n, int64_t rev)
{
	n->resource_version = rev;
	json_t *out = node_to_json(n, NODE_JSON_PUBLIC);
	if (rev)
		api_set_rv(out, rev);
	else
		json_object_del(json_object_get(out, "metadata"), "resourceVersion");
	return out;
}

static const char *node_key(struct api_req *r, const char *name)
{
	return api_own(r, objects_key_node_dup(name));
}

/* Validates the {name} path parameter; answers 400 and returns -1 when it is not a name. */
static int check_name_param(struct api_req *r)
{
	char err[256];
	if (name_validate("name", r->params[0], err, sizeof(err)) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "name"), "%s", err);
		return -1;
	}
	return 0;
}

/* Loads a node. Answers 404/500 and returns -1 on failure. */
static int load_node(struct api_req *r, const char *name, struct node **out, int64_t *mod)
{
	char err[256];
	int rc = objects_store_node(r->srv->cfg.store, name, out, mod, err, sizeof(err));
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "node %s not found", name);
		return -1;
	}
	if (rc < 0 && rc != FP_EPARSE) {
		api_problem_rc(r, rc, "cannot read the node");
		return -1;
	}
	if (rc < 0) {
		api_problem(r, 500, "stored node %s does not decode: %s", name, err);
		return -1;
	}
	return 0;
}

/* Fills op with the node's stored form (arena string). */
static void node_put_op(struct api_req *r, struct store_op *op, struct node *n, int64_t expect)
{
	/* A password the client sent is sealed before the node is written (and wiped from n).
	 * Cannot fail: the codec bounds the password far below SECRET_MAX_PLAIN. */
	BUG_ON(secret_bmc_seal(r->srv->cfg.secret_key, &n->bmc, NULL, 0) < 0);
	op->type = STORE_OP_PUT;
	op->key = node_key(r, n->name);
	op->value = api_own(r, node_to_text(n, NODE_JSON_STORE));
	op->expect = expect;
}

/* ---------------------------------------------------------------- BMC index */

/* One machine, one node (break report N5): two nodes naming the same BMC would let provisioning
 * of one power-cycle the other's machine. The index is a store key per BMC, written in the same
 * transaction as the node with create-if-absent or compare-and-swap expectations, so two
 * concurrent requests can never both claim one BMC:
 *   /bmc/<H(target)>          -> {"node":N}  an ipmi node, or a redfish node without system
 *   /bmc/<H(target)>/<H(sys)> -> {"node":N}  a redfish node with spec.bmc.system sys
 *   /bmc/<H(target)>          -> {"systems":true}  the marker every redfish node with a system
 *                                 also writes (CAS on its mod_revision, or create): a node
 *                                 without system claims the whole service, so it conflicts with
 *                                 every node of that service and they serialise on this key.
 * H is BLAKE2b-128 (libsodium crypto_generichash) in hex; the target text hashed is
 * "<driver>\n<normalised address>". Sim nodes have no entry (their address is not a machine).
 * An entry naming a node that is gone or no longer has that BMC (written by an older binary) is
 * stale and is taken over by CAS. Markers are never removed (harmless: a node without system
 * checks /bmc/<H>/ for live system entries before it replaces one). Entries are created at
 * enroll, moved at PUT, dropped at DELETE, and made for older stores once at serve start
 * (api_bmc_index_backfill). */
#define BMC_PREFIX "/bmc/"
#define BMC_HASH_HEX 32
/* written once the backfill of a store from before the index is done */
#define BMC_INDEX_DONE "/meta/bmc-index"
#define BACKFILL_BATCH 4096

struct bmc_claim {
	char claim[2 * BMC_HASH_HEX + 8]; /* the node's own key; "" = none (sim) */
	char marker[BMC_HASH_HEX + 8];    /* the service marker (redfish with system), or "" */
};

static void hash_hex(const char *s, size_t len, char out[BMC_HASH_HEX + 1])
{
	unsigned char h[BMC_HASH_HEX / 2];
	crypto_generichash(h, sizeof(h), (const unsigned char *)s, len, NULL, 0);
	sodium_bin2hex(out, BMC_HASH_HEX + 1, h, sizeof(h));
}

/* The normalised BMC target of an already validated spec.bmc, into out ("" for sim or no
 * address). What is trivially equal compares equal, and nothing else:
 *  - ipmi "host[:port]": the host is case-folded (DNS names are case-insensitive, RFC 4343)
 *    and a missing port is IPMI's RMCP+ port 623 (IPMI 2.0 section 13.1.1), so "BMC1" ==
 *    "bmc1:623"; the port is compared as a number ("0623" == "623").
 *  - redfish "scheme://host[:port][/]": scheme and host case-folded (RFC 3986 section 6.2.2.1),
 *    one trailing '/' dropped, a missing port is the scheme's default (http 80, https 443;
 *    RFC 9110 section 4.2), so "HTTPS://Bmc1/" == "https://bmc1:443". http and https stay
 *    different targets, as do a name and an IP address of the same host (not trivially equal).
 *  - another driver: the address as given. */
static void bmc_target_norm(const struct node_bmc *b, char *out, size_t n)
{
	out[0] = '\0';
	const char *a = b->address;
	if (!b->driver || strcmp(b->driver, "sim") == 0 || !a || !a[0])
		return;
	char host[300];
	long port = 0;
	const char *scheme = NULL;
	const char *h = a;
	if (strcmp(b->driver, "redfish") == 0) {
		scheme = strncasecmp(a, "https://", 8) == 0 ? "https" : "http";
		h = strstr(a, "://");
		h = h ? h + 3 : a;
		port = strcmp(scheme, "https") == 0 ? 443 : 80;
	} else if (strcmp(b->driver, "ipmi") == 0) {
		port = 623;
	} else {
		snprintf(out, n, "%s\n%s", b->driver, a);
		return;
	}
	size_t len = strlen(h);
	if (len > 0 && h[len - 1] == '/')
		len--;
	const char *colon = NULL;
	if (h[0] == '[') {
		const char *close = memchr(h, ']', len);
		if (close && (size_t)(close - h) + 1 < len && close[1] == ':')
			colon = close + 1;
	} else {
		colon = memchr(h, ':', len);
	}
	size_t hl = colon ? (size_t)(colon - h) : len;
	if (colon)
		port = strtol(colon + 1, NULL, 10);
	if (hl >= sizeof(host))
		hl = sizeof(host) - 1;
	for (size_t i = 0; i < hl; i++)
		host[i] = (char)tolower((unsigned char)h[i]);
	host[hl] = '\0';
	snprintf(out, n, "%s\n%s%s%s:%ld", b->driver, scheme ? scheme : "", scheme ? "://" : "",
		 host, port);
}

/* The index keys of n (see above); both "" for a sim node. */
static void bmc_claim_of(const struct node *n, struct bmc_claim *c)
{
	char norm[400], svc[BMC_HASH_HEX + 1], sys[BMC_HASH_HEX + 1];
	c->claim[0] = c->marker[0] = '\0';
	bmc_target_norm(&n->bmc, norm, sizeof(norm));
	if (!norm[0])
		return;
	hash_hex(norm, strlen(norm), svc);
	/* A Redfish system Id is compared exactly (Ids are case-sensitive, DSP0266 "Resource
	 * identifier property"). */
	if (strcmp(n->bmc.driver, "redfish") == 0 && n->bmc.system && n->bmc.system[0]) {
		hash_hex(n->bmc.system, strlen(n->bmc.system), sys);
		snprintf(c->claim, sizeof(c->claim), BMC_PREFIX "%s/%s", svc, sys);
		snprintf(c->marker, sizeof(c->marker), BMC_PREFIX "%s", svc);
	} else {
		snprintf(c->claim, sizeof(c->claim), BMC_PREFIX "%s", svc);
	}
}

/* The node an index value names, or NULL for a marker or a value that does not parse. A new
 * string the caller frees. */
static char *claim_owner(const char *value)
{
	json_t *doc = NULL;
	char *out = NULL;
	if (jsonx_parse(value, strlen(value), &doc, NULL, 0) == 0) {
		const char *s = jsonx_str(doc, "node");
		out = s ? xstrdup(s) : NULL;
	}
	json_decref(doc);
	return out;
}

/* 1 when node `owner` exists and still has `key` as its claim (or marker), so its entry is
 * live; 0 when the entry is stale. */
static int claim_live(struct store *s, const char *owner, const char *key)
{
	char nk[STORE_MAX_KEY + 2];
	struct store_kv kv = {0};
	if (objects_key_node(nk, sizeof(nk), owner) < 0 || store_get(s, nk, &kv) < 0)
		return 0;
	json_t *doc = NULL;
	struct node *n = NULL;
	int live = 1; /* when in doubt the entry holds */
	if (jsonx_parse(kv.value, strlen(kv.value), &doc, NULL, 0) == 0 &&
	    node_from_json(doc, kv.mod_revision, &n, NULL, 0) == 0) {
		struct bmc_claim c;
		bmc_claim_of(n, &c);
		live = strcmp(c.claim, key) == 0 || strcmp(c.marker, key) == 0;
	}
	node_free(n);
	json_decref(doc);
	store_kv_release(&kv);
	return live;
}

/* Answers 409 for a BMC that node `other` already uses (index >= 0: item of a bulk enroll, the
 * detail then starts "items[i] (name): "). The address shown passed bmc_spec_validate, which
 * refuses user info, so it carries no credentials. */
static void bmc_taken(struct api_req *r, const struct node *n, const char *other, long index)
{
	json_t *ext = json_pack("{s:s,s:s}", "field", "spec.bmc.address", "node", other);
	if (index >= 0)
		json_object_set_new(ext, "index", json_integer(index));
	const char *sys = n->bmc.system && n->bmc.system[0]
				  ? api_printf(r, ", system %s", n->bmc.system)
				  : "";
	api_problem_ext(
		r, 409, ext,
		"%sspec.bmc.address: node %s already uses this BMC (driver %s, address %s%s); "
		"one node per BMC, or provisioning one would power-cycle the other's "
		"machine%s",
		index >= 0 ? api_printf(r, "items[%ld] (%s): ", index, n->name) : "", other,
		n->bmc.driver, n->bmc.address, sys, index >= 0 ? "; nothing was enrolled" : "");
}

/* Appends to ops (up to 2) the index writes that give n its claim c: the claim (create, or
 * CAS over a marker or a stale entry) and, when with_marker, the service marker. Reads the
 * store to find a live holder. Returns 0, or -1 after answering 409 (or 500). */
static int bmc_claim_plan(struct api_req *r, const struct node *n, const struct bmc_claim *c,
			  int with_marker, long index, struct store_op *ops, size_t *nops)
{
	struct store *s = r->srv->cfg.store;
	if (!c->claim[0])
		return 0;
	json_t *mj = json_pack("{s:s}", "node", n->name);
	const char *mine = api_own(r, jsonx_dumps(mj));
	json_decref(mj);
	struct store_kv kv = {0};
	int rc = store_get(s, c->claim, &kv);
	int64_t expect = STORE_ABSENT;
	if (rc == 0) {
		char *owner = claim_owner(kv.value);
		expect = kv.mod_revision;
		if (owner && strcmp(owner, n->name) != 0 && claim_live(s, owner, c->claim)) {
			bmc_taken(r, n, owner, index);
			free(owner);
			store_kv_release(&kv);
			return -1;
		}
		if (!owner) {
			/* a marker: the service has nodes with a system; any live one (not n) holds */
			struct store_kv *items = NULL;
			size_t got = 0;
			const char *pfx = api_printf(r, "%s/", c->claim);
			const char *after = NULL;
			int more = 1;
			while (more &&
			       store_list(s, pfx, after, 16, &items, &got, NULL, &more) == 0) {
				for (size_t i = 0; i < got; i++) {
					char *o = claim_owner(items[i].value);
					if (o && strcmp(o, n->name) != 0 &&
					    claim_live(s, o, items[i].key)) {
						bmc_taken(r, n, o, index);
						free(o);
						store_kv_array_free(items, got);
						store_kv_release(&kv);
						return -1;
					}
					free(o);
				}
				after = got ? api_strdup(r, items[got - 1].key) : NULL;
				store_kv_array_free(items, got);
				if (!got)
					break;
			}
		}
		free(owner);
	} else if (rc != FP_ENOTFOUND) {
		api_problem_rc(r, rc, "cannot read the BMC index");
		return -1;
	}
	store_kv_release(&kv);
	ops[(*nops)++] = (struct store_op){STORE_OP_PUT, api_strdup(r, c->claim), mine, expect};
	if (!with_marker || !c->marker[0])
		return 0;
	rc = store_get(s, c->marker, &kv);
	expect = STORE_ABSENT;
	if (rc == 0) {
		char *owner = claim_owner(kv.value);
		expect = kv.mod_revision;
		if (owner && strcmp(owner, n->name) != 0 && claim_live(s, owner, c->marker)) {
			bmc_taken(r, n, owner, index);
			free(owner);
			store_kv_release(&kv);
			return -1;
		}
		free(owner);
	} else if (rc != FP_ENOTFOUND) {
		api_problem_rc(r, rc, "cannot read the BMC index");
		return -1;
	}
	store_kv_release(&kv);
	ops[(*nops)++] = (struct store_op){STORE_OP_PUT, api_strdup(r, c->marker),
					   "{\"systems\":true}", expect};
	return 0;
}

/* The op that drops n's claim c when the index holds it for n (0 or 1 op into ops). */
static void bmc_claim_drop(struct api_req *r, const struct node *n, const struct bmc_claim *c,
			   struct store_op *ops, size_t *nops)
{
	if (!c->claim[0])
		return;
	struct store_kv kv = {0};
	if (store_get(r->srv->cfg.store, c->claim, &kv) == 0) {
		char *owner = claim_owner(kv.value);
		if (owner && strcmp(owner, n->name) == 0)
			ops[(*nops)++] = (struct store_op){STORE_OP_DELETE, api_strdup(r, c->claim),
							   NULL, kv.mod_revision};
		free(owner);
	}
	store_kv_release(&kv);
}

struct backfill {
	struct store *s;
	struct hmap seen; /* key -> owner name (owned) */
	struct store_op *ops;
	size_t nops;
	size_t claimed, shared;
	int rc;
};

static int backfill_flush(struct backfill *b)
{
	if (b->nops && b->rc == 0)
		b->rc = store_txn(b->s, b->ops, b->nops, NULL, NULL);
	for (size_t i = 0; i < b->nops; i++) {
		free((char *)b->ops[i].key);
		free((char *)b->ops[i].value);
	}
	b->nops = 0;
	return b->rc;
}

static int backfill_node(void *arg, const struct store_kv *kv)
{
	struct backfill *b = arg;
	json_t *doc = NULL;
	struct node *n = NULL;
	if (jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) < 0 ||
	    node_from_json(doc, kv->mod_revision, &n, NULL, 0) < 0) {
		json_decref(doc);
		return 0;
	}
	json_decref(doc);
	struct bmc_claim c;
	bmc_claim_of(n, &c);
	if (c.claim[0]) {
		const char *other = hmap_get(&b->seen, c.claim);
		if (!other && c.marker[0]) {
			other = hmap_get(&b->seen, c.marker);
			if (other && !other[0])
				other = NULL; /* a marker: systems share it */
		}
		if (other) {
			log_warn(
				"serve: two nodes use the same BMC; the second is not indexed: change "
				"the BMC of one or delete it node=%s other=%s driver=%s%s",
				n->name, other[0] ? other : "(Redfish systems)", n->bmc.driver,
				other[0] ? "" : ", no spec.bmc.system");
			b->shared++;
		} else {
			hmap_put(&b->seen, c.claim, xstrdup(n->name));
			json_t *vj = json_pack("{s:s}", "node", n->name);
			char *v = jsonx_dumps(vj);
			json_decref(vj);
			b->ops[b->nops++] = (struct store_op){STORE_OP_PUT, xstrdup(c.claim), v,
							      STORE_ANY};
			b->claimed++;
			if (c.marker[0] && !hmap_get(&b->seen, c.marker)) {
				hmap_put(&b->seen, c.marker, xstrdup(""));
				b->ops[b->nops++] = (struct store_op){STORE_OP_PUT,
								      xstrdup(c.marker),
								      xstrdup("{\"systems\":true}"),
								      STORE_ANY};
			}
		}
	}
	node_free(n);
	if (b->nops + 2 > BACKFILL_BATCH)
		return backfill_flush(b);
	return 0;
}

int api_bmc_index_backfill(struct store *s, size_t *claimed, size_t *shared)
{
	*claimed = *shared = 0;
	struct store_kv kv = {0};
	int rc = store_get(s, BMC_INDEX_DONE, &kv);
	store_kv_release(&kv);
	if (rc != FP_ENOTFOUND)
		return rc;
	struct backfill b = {.s = s, .ops = xcalloc(BACKFILL_BATCH, sizeof(struct store_op))};
	hmap_init(&b.seen);
	rc = store_foreach(s, OBJECTS_PREFIX_NODES, 1000, backfill_node, &b, NULL);
	if (rc == 0)
		rc = backfill_flush(&b);
	if (rc == 0)
		rc = store_put(s, BMC_INDEX_DONE, "{\"version\":1}", STORE_ABSENT, NULL);
	else
		backfill_flush(&b); /* frees what is left */
	for (struct hmap_iter it = hmap_iter_start(&b.seen); hmap_iter_next(&it);)
		free(it.e->value);
	hmap_release(&b.seen);
	free(b.ops);
	*claimed = b.claimed;
	*shared = b.shared;
	return rc;
}

/* Precondition from If-Match (RFC 9110 section 13.1.1, strong entity-tag "\"<rv>\"") or the
 * resourceVersion query parameter. *rv = 0 when none. Answers 400 and returns -1 when bad. */
static int precondition(struct api_req *r, int64_t *rv)
{
	*rv = 0;
	const char *im = api_header(r, MHD_HTTP_HEADER_IF_MATCH);
	const char *q = api_query(r, "resourceVersion");
	if (im && api_rv_parse_str(im, rv) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "header", "If-Match"),
				"If-Match: expected a resourceVersion entity-tag such as \"12\"");
		return -1;
	}
	if (!im && q && api_rv_parse_str(q, rv) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "resourceVersion"),
				"resourceVersion: expected a revision number");
		return -1;
	}
	return 0;
}

static void stale(struct api_req *r, const char *name, int64_t want, int64_t have)
{
	api_problem_ext(r, 409, json_pack("{s:o}", "resourceVersion", api_rv_json(have)),
			"node %s changed: resourceVersion %lld is stale, current is %lld; read it "
			"again and retry",
			name, (long long)want, (long long)have);
}

/* ---------------------------------------------------------------- list / get */

struct node_filter {
	struct label_selector *sel;
	const char *phase;
};

static int node_keep(struct api_req *r, const json_t *doc, void *arg)
{
	struct node_filter *f = arg;
	if (f->phase) {
		const char *p = jsonx_str(doc, "status.phase");
		if (!p || strcmp(p, f->phase) != 0)
			return 0;
	}
	if (f->sel) {
		json_t *labels = jsonx_path(doc, "metadata.labels");
		json_t *empty = NULL;
		if (!labels)
			labels = empty = json_object();
		int ok = label_selector_match_json(f->sel, labels);
		json_decref(empty);
		if (!ok)
			return 0;
	}
	return 1;
}

static void free_selector(void *p)
{
	label_selector_free(p);
}

void api_nodes_list(struct api_req *r)
{
	struct node_filter *f = api_own(r, xcalloc(1, sizeof(*f)));
	char err[256];
	const char *sel = api_query(r, "labelSelector");
	if (sel) {
		if (label_selector_parse(sel, &f->sel, err, sizeof(err)) < 0) {
			api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "labelSelector"),
					"labelSelector: %s", err);
			return;
		}
		api_own_fn(r, f->sel, free_selector);
	}
	f->phase = api_query(r, "phase");
	if (f->phase) {
		enum node_phase ph;
		if (node_phase_parse(f->phase, &ph) < 0) {
			api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "phase"),
					"phase: unknown phase %.64s", f->phase);
			return;
		}
	}
	api_keep_fn keep = (f->sel || f->phase) ? node_keep : NULL;
	if (api_is_watch(r))
		api_watch_text(r, OBJECTS_PREFIX_NODES, "Node", keep, f, api_node_render,
			       node_list_text);
	else {
		const struct api_node_view *view = &r->srv->cfg.node_view;
		r->text_trusted_rev = view->trusted_rev ? view->trusted_rev(view->arg) : 0;
		api_list_text(r, OBJECTS_PREFIX_NODES, keep, f, api_node_render, node_list_text);
	}
}

void api_node_get(struct api_req *r)
{
	if (check_name_param(r) < 0)
		return;
	const char *name = r->params[0];
	const struct api_node_view *view = &r->srv->cfg.node_view;
	if (view->get_json) {
		char *json = NULL;
		size_t len = 0;
		int64_t rv = 0;
		int rc = view->get_json(view->arg, name, &json, &len, &rv);
		if (rc == 0) {
			/* The document goes out as it is (no copy, no parse); same ETag as the store
			 * path, so If-Match works whichever answered. */
			api_reply_take(r, 200, "application/json", json, len);
			if (rv > 0) {
				char etag[24];
				snprintf(etag, sizeof(etag), "\"%lld\"", (long long)rv);
				api_add_header(r, MHD_HTTP_HEADER_ETAG, etag);
			}
			return;
		}
		if (rc != FP_ENOTFOUND) {
			api_problem_rc(r, rc, "node cache lookup failed");
			return;
		}
	}
	if (r->fast) {
		r->offload = 1; /* the store read runs on a worker thread */
		return;
	}
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, node_key(r, name), &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "node %s not found", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the node");
		return;
	}
	json_t *out = api_node_render(r, doc, mod);
	json_decref(doc);
	if (!out) {
		api_problem(r, 500, "stored node %s does not decode", name);
		return;
	}
	api_reply_json(r, 200, out);
	api_add_header(r, MHD_HTTP_HEADER_ETAG, api_printf(r, "\"%lld\"", (long long)mod));
}

/* ---------------------------------------------------------------- enroll */

static int cmp_names(const void *a, const void *b)
{
	const struct node *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

/* One index key of a bulk enroll's item, for finding two items on one BMC. */
struct bmc_ent {
	const char *key;
	size_t index;
	int marker;
};

static int cmp_bmc_ent(const void *a, const void *b)
{
	const struct bmc_ent *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->index > y->index) - (x->index < y->index);
}

static void free_nodes(struct node **nodes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		node_free(nodes[i]);
	free(nodes);
}

void api_nodes_create(struct api_req *r)
{
	if (api_idem_begin(r))
		return;
	json_t *body = NULL;
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	json_t *items = json_object_get(body, "items");
	int bulk = items != NULL;
	size_t n = 1;
	char err[512];
	if (bulk) {
		static const char *const keys[] = {"items", "kind", NULL};
		if (jsonx_check_keys(body, keys, "", err, sizeof(err)) < 0) {
			api_problem(r, 422, "%s", err);
			return;
		}
		if (!json_is_array(items) || json_array_size(items) == 0 ||
		    json_array_size(items) > ENROLL_MAX_ITEMS) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "items"),
					"items: expected an array of 1..%d node documents",
					ENROLL_MAX_ITEMS);
			return;
		}
		const char *kind = jsonx_str(body, "kind");
		if (json_object_get(body, "kind") && (!kind || strcmp(kind, "List") != 0)) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "kind"),
					"kind: expected \"List\" for a bulk enroll");
			return;
		}
		n = json_array_size(items);
	}
	struct node **nodes = xcalloc(n, sizeof(*nodes));
	for (size_t i = 0; i < n; i++) {
		const json_t *it = bulk ? json_array_get(items, i) : body;
		if (decode_enroll(it, &nodes[i], err, sizeof(err)) < 0) {
			if (bulk)
				api_problem_ext(r, 422, json_pack("{s:I}", "index", (json_int_t)i),
						"items[%zu]: %s; nothing was enrolled", i, err);
			else
				api_problem_ext(r, 422, codec_err_ext(err), "%s", err);
			free_nodes(nodes, n);
			return;
		}
		if (bmc_spec_check(r, nodes[i], bulk ? (long)i : -1) < 0) {
			free_nodes(nodes, n);
			return;
		}
	}
	/* Names unique inside the request. */
	struct node **sorted = xmalloc(n * sizeof(*sorted));
	memcpy(sorted, nodes, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_names);
	for (size_t i = 1; i < n; i++)
		if (strcmp(sorted[i]->name, sorted[i - 1]->name) == 0) {
			api_problem_ext(r, 422, json_pack("{s:s}", "name", sorted[i]->name),
					"metadata.name %s appears more than once; nothing was "
					"enrolled",
					sorted[i]->name);
			free(sorted);
			free_nodes(nodes, n);
			return;
		}
	free(sorted);
	/* Existing names: refuse before writing anything. */
	for (size_t i = 0; i < n; i++) {
		struct store_kv kv = {0};
		int rc = store_get(r->srv->cfg.store, node_key(r, nodes[i]->name), &kv);
		store_kv_release(&kv);
		if (rc == 0) {
			json_t *ext = json_pack("{s:s}", "name", nodes[i]->name);
			if (bulk)
				json_object_set_new(ext, "index", json_integer((json_int_t)i));
			api_problem_ext(r, 409, ext, "node %s already exists; nothing was enrolled",
					nodes[i]->name);
			free_nodes(nodes, n);
			return;
		}
	}
	/* One BMC per node: inside the request first (422 naming both items), then against the
	 * index (409 naming the node that has it). */
	struct bmc_claim *cl = xcalloc(n, sizeof(*cl));
	unsigned char *no_marker = xcalloc(n, 1);
	struct bmc_ent *ents = xcalloc(2 * n, sizeof(*ents));
	size_t nents = 0;
	for (size_t i = 0; i < n; i++) {
		bmc_claim_of(nodes[i], &cl[i]);
		if (cl[i].claim[0])
			ents[nents++] = (struct bmc_ent){cl[i].claim, i, 0};
		if (cl[i].marker[0])
			ents[nents++] = (struct bmc_ent){cl[i].marker, i, 1};
	}
	qsort(ents, nents, sizeof(*ents), cmp_bmc_ent);
	int dup = 0;
	for (size_t k = 1; k < nents && !dup; k++) {
		if (strcmp(ents[k].key, ents[k - 1].key) != 0)
			continue;
		if (ents[k].marker && ents[k - 1].marker) {
			no_marker[ents[k].index] = 1; /* written once, by the first item */
			continue;
		}
		size_t a = ents[k - 1].index < ents[k].index ? ents[k - 1].index : ents[k].index;
		size_t b = ents[k - 1].index < ents[k].index ? ents[k].index : ents[k - 1].index;
		api_problem_ext(
			r, 422,
			json_pack("{s:s,s:I,s:[I,I]}", "field", "spec.bmc.address", "index",
				  (json_int_t)b, "indexes", (json_int_t)a, (json_int_t)b),
			"items[%zu] (%s) and items[%zu] (%s) name the same BMC (driver %s, "
			"address %s%s); one node per BMC; nothing was enrolled",
			a, nodes[a]->name, b, nodes[b]->name, nodes[b]->bmc.driver,
			nodes[b]->bmc.address,
			ents[k].marker || ents[k - 1].marker
				? "; a node without spec.bmc.system means the whole Redfish "
				  "service"
				: "");
		dup = 1;
	}
	free(ents);
	struct store_op *bops = xcalloc(2 * n, sizeof(*bops));
	size_t *bfirst = xcalloc(n + 1, sizeof(*bfirst));
	size_t nb = 0;
	for (size_t i = 0; i < n && !dup; i++) {
		bfirst[i] = nb;
		if (bmc_claim_plan(r, nodes[i], &cl[i], !no_marker[i], bulk ? (long)i : -1, bops,
				   &nb) < 0)
			dup = 1;
	}
	bfirst[n] = nb;
	free(cl);
	free(no_marker);
	if (dup) {
		free(bops);
		free(bfirst);
		free_nodes(nodes, n);
		return;
	}
	int64_t now = api_now(r);
	json_t *out_items = json_array();
	for (size_t i = 0; i < n; i++) {
		free(nodes[i]->uid); /* a client-supplied uid is not kept */
		nodes[i]->uid = xstrdup(api_uuid(r));
		nodes[i]->created_at = now;
		nodes[i]->phase = PHASE_ENROLLED;
		nodes[i]->phase_since = now;
		json_array_append_new(out_items, node_public(nodes[i], 0));
	}
	json_t *resp = bulk ? json_pack("{s:o}", "items", out_items)
			    : json_incref(json_array_get(out_items, 0));
	if (!bulk)
		json_decref(out_items);
	/* Write in batches of at most the store's transaction limit (node, event and 0..2 index
	 * entries per item; one op left for the idempotency record, which rides in the last
	 * batch). */
	size_t max_ops = store_max_txn_ops(r->srv->cfg.store);
	struct store_op *ops = xcalloc(max_ops, sizeof(*ops));
	size_t *owner = xcalloc(max_ops, sizeof(*owner));
	size_t done = 0;
	int rc = 0;
	while (done < n) {
		size_t end = done, nops = 0;
		while (end < n && nops + 2 + (bfirst[end + 1] - bfirst[end]) <= max_ops - 1) {
			owner[nops] = end;
			node_put_op(r, &ops[nops++], nodes[end], STORE_ABSENT);
			owner[nops] = end;
			api_event_op(r, &ops[nops++], "Normal",
				     api_printf(r, "node/%s", nodes[end]->name), "Enrolled",
				     "node enrolled");
			for (size_t k = bfirst[end]; k < bfirst[end + 1]; k++) {
				owner[nops] = end;
				ops[nops++] = bops[k];
			}
			end++;
		}
		if (end == done) { /* a backend too small for one node's writes */
			rc = FP_ETOOBIG;
			api_problem(r, 500,
				    "one node's writes exceed the store's transaction limit "
				    "(%zu ops); %zu of %zu items were enrolled",
				    max_ops, done, n);
			break;
		}
		size_t idem_at = nops;
		if (end == n && api_idem_op(r, &ops[nops], 201, resp))
			nops++;
		int64_t rev = 0;
		size_t failed = 0;
		rc = store_txn(r->srv->cfg.store, ops, nops, &rev, &failed);
		if (rc < 0) {
			int is_node = failed < idem_at &&
				      strcmp(ops[failed].key,
					     node_key(r, nodes[owner[failed]]->name)) == 0;
			if (rc == FP_EEXIST && failed == idem_at && nops > idem_at)
				api_problem(r, 409,
					    "a request with this Idempotency-Key was "
					    "committed concurrently; retry to get its result");
			else if (rc == FP_EEXIST && is_node)
				api_problem_ext(
					r, 409,
					json_pack("{s:s}", "name", nodes[owner[failed]]->name),
					"node %s already exists (created concurrently); %zu of %zu "
					"items were enrolled",
					nodes[owner[failed]]->name, done, n);
			else if ((rc == FP_EEXIST || rc == FP_ECONFLICT) && failed < idem_at)
				api_problem_ext(
					r, 409,
					json_pack("{s:s,s:s}", "field", "spec.bmc.address", "name",
						  nodes[owner[failed]]->name),
					"the BMC of node %s was claimed by another node concurrently; %zu "
					"of %zu items were enrolled; read the nodes and retry",
					nodes[owner[failed]]->name, done, n);
			else
				api_problem_rc(r, rc, "store write failed");
			break;
		}
		for (size_t i = done; i < end; i++) {
			json_t *doc = bulk ? json_array_get(json_object_get(resp, "items"), i)
					   : resp;
			api_set_rv(doc, rev);
		}
		done = end;
	}
	free(owner);
	free(bops);
	free(bfirst);
	free(ops);
	if (rc == 0) {
		if (!bulk)
			api_add_header(r, MHD_HTTP_HEADER_LOCATION,
				       api_printf(r, "/v1/nodes/%s", nodes[0]->name));
		api_reply_json(r, 201, resp);
		log_info("nodes enrolled nodes=%zu actor=%s", n, api_actor(r));
	} else {
		json_decref(resp);
	}
	free_nodes(nodes, n);
}

/* ---------------------------------------------------------------- replace */

#define SWAP(a, b)                             \
	do {                                   \
		__typeof__(a) swap_tmp_ = (a); \
		(a) = (b);                     \
		(b) = swap_tmp_;               \
	} while (0)

/* Moves labels and spec from src into dst (src gets dst's old ones, to be freed with it). A
 * spec.bmc without password/passwordFile keeps the stored credentials, because the public form
 * a client read never carries them. */
static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int node_has_credentials(const struct node *n)
{
	return n->bmc.password || n->bmc.password_file || n->bmc.password_sealed;
}

/* Moves the spec (and labels) of src into dst, keeping dst's status; a spec without a password
 * or password_file keeps the stored credentials. */
static void take_spec(struct node *dst, struct node *src)
{
	SWAP(dst->labels, src->labels);
	SWAP(dst->nlabels, src->nlabels);
	SWAP(dst->annotations, src->annotations);
	SWAP(dst->site, src->site);
	SWAP(dst->rack, src->rack);
	SWAP(dst->provider, src->provider);
	SWAP(dst->pool, src->pool);
	SWAP(dst->macs, src->macs);
	SWAP(dst->nmacs, src->nmacs);
	SWAP(dst->gpu_count, src->gpu_count);
	SWAP(dst->gpu_model, src->gpu_model);
	SWAP(dst->retire, src->retire);
	SWAP(dst->adopt, src->adopt);
	int keep_secret = !src->bmc.password && !src->bmc.password_file;
	/* Quirks learned from one BMC say nothing about another: forget them when the node is
	 * pointed at a different driver or address. */
	if (!same_str(dst->bmc.driver, src->bmc.driver) ||
	    !same_str(dst->bmc.address, src->bmc.address))
		dst->bmc_quirks = 0;
	/* New credentials or a new BMC: a refusal of the old ones no longer holds, so the
	 * lifecycle may try again (it waits while BMCReachable is AuthenticationFailed). A
	 * password that could not be resolved (CredentialsUnavailable: the password file may be
	 * back) or a spec the driver refused (InvalidBMCSpec) is tried again after any PUT. */
	const struct node_condition *reach = node_condition_get(dst, "BMCReachable");
	if (reach && reach->reason && strcmp(reach->reason, "AuthenticationFailed") == 0 &&
	    (!keep_secret || !same_str(dst->bmc.username, src->bmc.username) ||
	     !same_str(dst->bmc.driver, src->bmc.driver) ||
	     !same_str(dst->bmc.address, src->bmc.address)))
		node_condition_remove(dst, "BMCReachable");
	else if (reach && reach->status == COND_FALSE && reach->reason &&
		 (strcmp(reach->reason, "CredentialsUnavailable") == 0 ||
		  strcmp(reach->reason, "InvalidBMCSpec") == 0))
		node_condition_remove(dst, "BMCReachable");
	SWAP(dst->bmc.driver, src->bmc.driver);
	SWAP(dst->bmc.cipher_suite, src->bmc.cipher_suite);
	SWAP(dst->bmc.tls_verify, src->bmc.tls_verify);
	SWAP(dst->bmc.ca_file, src->bmc.ca_file);
	SWAP(dst->bmc.system, src->bmc.system);
	SWAP(dst->bmc.quirks, src->bmc.quirks);
	SWAP(dst->bmc.address, src->bmc.address);
	SWAP(dst->bmc.username, src->bmc.username);
	SWAP(dst->bmc.extra, src->bmc.extra);
	if (!keep_secret) {
		SWAP(dst->bmc.password, src->bmc.password);
		SWAP(dst->bmc.password_file, src->bmc.password_file);
		SWAP(dst->bmc.password_sealed, src->bmc.password_sealed); /* the old one goes */
	}
}

void api_node_put(struct api_req *r)
{
	if (check_name_param(r) < 0)
		return;
	const char *name = r->params[0];
	json_t *body = NULL;
	if (api_body_object(r, &body) < 0)
		return;
	api_own_json(r, body);
	int64_t want = 0;
	if (precondition(r, &want) < 0)
		return;
	json_t *md = json_object_get(body, "metadata");
	json_t *brv = json_object_get(md, "resourceVersion");
	if (brv) {
		int64_t b = 0;
		if (api_rv_parse_json(brv, &b) < 0) {
			api_problem_ext(r, 422,
					json_pack("{s:s}", "field", "metadata.resourceVersion"),
					"metadata.resourceVersion: expected a revision number");
			return;
		}
		if (want && b != want) {
			api_problem(r, 400,
				    "If-Match %lld and metadata.resourceVersion %lld differ",
				    (long long)want, (long long)b);
			return;
		}
		want = b;
	}
	if (!want) {
		api_problem(r, 428,
			    "PUT needs metadata.resourceVersion in the body or an If-Match "
			    "header (read the node first)");
		return;
	}
	/* Fields the server owns may be echoed back from a GET; they are checked or ignored. */
	json_t *in = json_deep_copy(body);
	api_own_json(r, in);
	json_t *imd = json_object_get(in, "metadata");
	const char *uid = jsonx_str(in, "metadata.uid");
	char *given_uid = uid ? api_strdup(r, uid) : NULL;
	if (json_is_object(imd)) {
		json_object_del(imd, "resourceVersion");
		json_object_del(imd, "uid");
		json_object_del(imd, "createdAt");
	}
	json_object_del(in, "status");
	struct node *nn = NULL;
	char err[512];
	if (decode_enroll(in, &nn, err, sizeof(err)) < 0) {
		api_problem_ext(r, 422, codec_err_ext(err), "%s", err);
		return;
	}
	if (strcmp(nn->name, name) != 0) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"),
				"metadata.name %s does not match the path's %s", nn->name, name);
		node_free(nn);
		return;
	}
	struct node *cur = NULL;
	int64_t mod = 0;
	if (load_node(r, name, &cur, &mod) < 0) {
		node_free(nn);
		return;
	}
	if (given_uid && (!cur->uid || strcmp(given_uid, cur->uid) != 0)) {
		api_problem_ext(r, 409, json_pack("{s:s}", "field", "metadata.uid"),
				"metadata.uid %s is not this node's uid (it was deleted and "
				"re-created?)",
				given_uid);
		goto out;
	}
	if (mod != want) {
		stale(r, name, want, mod);
		goto out;
	}
	/* Stored credentials go only to the BMC they were given for: a PUT that points the node
	 * at another driver, address or user must bring its own, or any operator could read
	 * them by pointing the node at a server of theirs. */
	if (!nn->bmc.password && !nn->bmc.password_file && node_has_credentials(cur) &&
	    (!same_str(cur->bmc.driver, nn->bmc.driver) ||
	     !same_str(cur->bmc.address, nn->bmc.address) ||
	     !same_str(cur->bmc.username, nn->bmc.username))) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "spec.bmc.password"),
				"spec.bmc.password or spec.bmc.password_file: required when "
				"spec.bmc.driver, address or username changes (the stored "
				"credentials are never sent to a different BMC)");
		goto out;
	}
	struct bmc_claim oldc, newc;
	bmc_claim_of(cur, &oldc);
	take_spec(cur, nn);
	/* the spec as it will be stored: new fields with, possibly, the kept credentials */
	if (bmc_spec_check(r, cur, -1) < 0)
		goto out;
	struct store_op ops[5];
	size_t nops = 2;
	node_put_op(r, &ops[0], cur, want);
	api_event_op(r, &ops[1], "Normal", api_printf(r, "node/%s", name), "Updated",
		     "spec and labels replaced");
	/* A new BMC: claim it (409 when another node has it) and drop the old claim, in the
	 * node's transaction. */
	bmc_claim_of(cur, &newc);
	if (strcmp(oldc.claim, newc.claim) != 0 || strcmp(oldc.marker, newc.marker) != 0) {
		if (bmc_claim_plan(r, cur, &newc, 1, -1, ops, &nops) < 0)
			goto out;
		if (strcmp(oldc.claim, newc.claim) != 0 && strcmp(oldc.claim, newc.marker) != 0)
			bmc_claim_drop(r, cur, &oldc, ops, &nops);
	}
	int64_t rev = 0;
	size_t failed = 0;
	int rc = store_txn(r->srv->cfg.store, ops, nops, &rev, &failed);
	if ((rc == FP_EEXIST || rc == FP_ECONFLICT || rc == FP_ENOTFOUND) && failed >= 2) {
		api_problem_ext(r, 409,
				json_pack("{s:s,s:s}", "field", "spec.bmc.address", "name", name),
				"the BMC index changed while node %s was being replaced (another "
				"node claimed this BMC concurrently?); read the node and retry",
				name);
		goto out;
	}
	if (rc == FP_ECONFLICT || (rc == FP_ENOTFOUND && failed == 0)) {
		struct store_kv kv = {0};
		int64_t have = store_get(r->srv->cfg.store, node_key(r, name), &kv) == 0
				       ? kv.mod_revision
				       : 0;
		store_kv_release(&kv);
		stale(r, name, want, have);
		goto out;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		goto out;
	}
	api_reply_json(r, 200, node_public(cur, rev));
out:
	node_free(cur);
	node_free(nn);
}

/* ---------------------------------------------------------------- delete */

void api_node_delete(struct api_req *r)
{
	if (check_name_param(r) < 0)
		return;
	const char *name = r->params[0];
	int64_t want = 0;
	if (precondition(r, &want) < 0)
		return;
	struct node *cur = NULL;
	int64_t mod = 0;
	if (load_node(r, name, &cur, &mod) < 0)
		return;
	if (want && want != mod) {
		stale(r, name, want, mod);
		goto out;
	}
	if (cur->phase != PHASE_ENROLLED && cur->phase != PHASE_RETIRED) {
		api_problem_ext(r, 409, json_pack("{s:s}", "phase", node_phase_name(cur->phase)),
				"node %s is %s; only enrolled or retired nodes can be deleted "
				"(retire it first: POST /v1/nodes/%s:retire)",
				name, node_phase_name(cur->phase), name);
		goto out;
	}
	struct store_op ops[3] = {
		{.type = STORE_OP_DELETE, .key = node_key(r, name), .expect = mod},
	};
	api_event_op(r, &ops[1], "Normal", api_printf(r, "node/%s", name), "Deleted",
		     api_printf(r, "node deleted in phase %s", node_phase_name(cur->phase)));
	size_t nops = 2;
	struct bmc_claim c;
	bmc_claim_of(cur, &c);
	bmc_claim_drop(r, cur, &c, ops, &nops); /* the BMC is free for another node */
	int64_t rev = 0;
	int rc = store_txn(r->srv->cfg.store, ops, nops, &rev, NULL);
	if (rc == FP_ECONFLICT || rc == FP_ENOTFOUND) {
		api_problem(r, 409, "node %s changed while it was being deleted; retry", name);
		goto out;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		goto out;
	}
	api_reply_json(r, 200, node_public(cur, mod));
	log_info("node deleted node=%s actor=%s", name, api_actor(r));
out:
	node_free(cur);
}

/* ---------------------------------------------------------------- actions */

enum node_action {
	ACT_DRAIN,
	ACT_RESUME,
	ACT_RETIRE,
	ACT_RELEASE
};

static json_t *owners_json(const struct node *n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n->nholds; i++)
		json_array_append_new(a, json_string(n->holds[i].owner));
	return a;
}

static char *owners_text(struct api_req *r, const struct node *n)
{
	struct buf b;
	buf_init(&b, 4096);
	for (size_t i = 0; i < n->nholds; i++)
		buf_printf(&b, "%s%s", i ? ", " : "", n->holds[i].owner);
	char *s = buf_detach(&b, NULL);
	if (!*s) {
		free(s);
		s = xstrdup("none");
	}
	return api_own(r, s);
}

/* Reads /operations/<id> from the store; NULL when it is missing or does not decode. */
static struct operation *load_op_doc(struct api_req *r, const char *id)
{
	struct store_kv kv = {0};
	if (store_get(r->srv->cfg.store, api_own(r, objects_key_op_dup(id)), &kv) < 0)
		return NULL;
	char err[256];
	json_t *doc = NULL;
	struct operation *op = NULL;
	if (jsonx_parse(kv.value, strlen(kv.value), &doc, err, sizeof(err)) == 0 &&
	    operation_from_json(doc, kv.mod_revision, &op, err, sizeof(err)) < 0)
		op = NULL;
	json_decref(doc);
	store_kv_release(&kv);
	return op;
}

/* A retire without power off ({"skipPowerOff": true}): an operation of kind "retire" with the
 * one step skip_power_off (the lifecycle controller records PoweredOn Unknown/NotPoweredOff and
 * the node ends retired; the BMC is not called). It becomes the node's operation - the node
 * enters retiring now - when none is in flight; it replaces a retire operation in flight on a
 * retiring node (that one is cancelled: a power off that keeps failing ends); otherwise it
 * queues behind the operation in flight and the controller keeps it when the node enters
 * retiring. Fills *op (caller frees) and *cancel (the cancelled operation, or NULL); *what
 * says what happened for the event; the operation's create put is appended to otx. Returns 0, 1 when the node already has one (nothing to
 * add), or -1 after answering 409 (the queue is full). */
static int retire_skip_op(struct api_req *r, struct node *n, const char *me, const char *reason,
			  struct operation **op, struct operation **cancel, const char **what,
			  struct objects_txn *otx)
{
	*op = NULL;
	*cancel = NULL;
	*what = "";
	struct operation *cur = n->operation ? load_op_doc(r, n->operation) : NULL;
	int live = cur && !op_state_terminal(cur->state) && cur->kind &&
		   strcmp(cur->kind, "retire") == 0;
	if (live && json_is_true(json_object_get(cur->params, "skipPowerOff"))) {
		operation_free(cur);
		*what = "; a retire without power off is already running";
		return 1;
	}
	if (n->operation && !(live && n->phase == PHASE_RETIRING) &&
	    n->nqueued >= NODE_MAX_QUEUED) {
		api_problem_ext(r, 409,
				json_pack("{s:s,s:i}", "operation", n->operation, "queued",
					  (int)n->nqueued),
				"node %s already has %d operations queued behind %s; wait for them "
				"to end",
				n->name, NODE_MAX_QUEUED, n->operation);
		operation_free(cur);
		return -1;
	}
	int64_t now = api_now(r);
	struct operation *o = NULL;
	json_t *params = json_pack("{s:b}", "skipPowerOff", 1);
	struct objects_op_spec spec = {.node = n->name,
				       .kind = "retire",
				       .params = params,
				       .actor = me,
				       .reason = reason,
				       .now_ms = now,
				       .rnd = api_rand(r)};
	BUG_ON(objects_op_start(&spec, otx, &o, NULL, 0) < 0);
	json_decref(params);
	if (live && n->phase == PHASE_RETIRING) {
		cur->state = OP_CANCELLED;
		cur->finished_at = cur->updated_at = now;
		free(cur->last_error);
		cur->last_error = xasprintf("cancelled: retire without power off requested by %s",
					    me);
		*cancel = cur;
		cur = NULL;
		free(n->operation);
		n->operation = xstrdup(o->id);
		*what = api_printf(r, "; operation %s (cancelled retire operation %s)", o->id,
				   (*cancel)->id);
	} else if (n->operation) {
		char **q = xcalloc(n->nqueued + 1, sizeof(char *));
		if (n->nqueued)
			memcpy(q, n->queued_ops, n->nqueued * sizeof(char *));
		free(n->queued_ops);
		n->queued_ops = q;
		n->queued_ops[n->nqueued++] = xstrdup(o->id);
		*what = api_printf(r, "; operation %s (queued behind %s)", o->id, n->operation);
	} else {
		/* What the controller's transition does on entering retiring (any phase but
		 * retired may; the caller answered retired nodes already). */
		if (n->phase != PHASE_RETIRING) {
			n->phase = PHASE_RETIRING;
			n->phase_since = now;
			node_condition_remove(n, "PhaseDeadlineExceeded");
		}
		n->operation = xstrdup(o->id);
		*what = api_printf(r, "; operation %s", o->id);
	}
	operation_free(cur);
	*op = o;
	return 0;
}

/* The start of a POST /v1/nodes/{name}:<verb> handler: checks the name parameter, with idem
 * replays or starts an Idempotency-Key request (api_idem_begin), reads the body as a JSON
 * object (owned by r) and refuses (422 "unknown field KEY", member "field": KEY, cut to 128
 * bytes) a key not in the NULL-terminated keys. 0 with *name
 * (r->params[0]) and *body set; -1 when the response is already sent. */
static int node_post_begin(struct api_req *r, int idem, const char *const *keys, const char **name,
			   json_t **body)
{
	if (check_name_param(r) < 0)
		return -1;
	*name = r->params[0];
	if (idem && api_idem_begin(r))
		return -1;
	return api_body_keys(r, keys, body);
}

/* node_action's request, and what its mutate made on the attempt that committed. */
struct action_arg {
	struct api_req *r;
	enum node_action act;
	const char *name, *me, *reason, *owner;
	int skip;
	struct objects_update *u; /* mutate sets the audit event's type, reason and message */
	json_t *resp;             /* the node as written (200 body), without resourceVersion */
	size_t idem_at;           /* the Idempotency-Key record's op, 0 = none */
};

/* node_action's mutate answered the request itself (a 409/422 with detail). */
#define ACTION_REPLIED (-10000)

/* objects_update_node's mutate for drain, resume, release and retire: changes the holds or
 * the retire flag (a retire without power off also starts or queues its operation, and may
 * cancel a running retire), names the audit event and adds the Idempotency-Key record. */
static int action_mutate(struct node *n, struct objects_txn *tx, void *arg)
{
	struct action_arg *a = arg;
	struct api_req *r = a->r;
	int64_t now = a->u->now_ms;
	const char *ev_reason = NULL, *msg = NULL;
	struct operation *sop = NULL, *scancel = NULL; /* retire without power off */
	int rc = 0;
	json_decref(a->resp);
	a->resp = NULL;
	a->idem_at = 0;
	switch (a->act) {
	case ACT_DRAIN:
		rc = node_hold_add(n, a->me, a->reason, now, 0);
		ev_reason = "DrainRequested";
		msg = api_printf(r, "hold added: %s", a->reason);
		break;
	case ACT_RESUME:
	case ACT_RELEASE: {
		const char *who = a->act == ACT_RESUME ? a->me : a->owner;
		if (!node_hold_find(n, who)) {
			api_problem_ext(r, 409, json_pack("{s:o}", "owners", owners_json(n)),
					"%s holds no hold on node %s; current owners: %s", who,
					a->name, owners_text(r, n));
			return ACTION_REPLIED;
		}
		rc = node_hold_release(n, who);
		ev_reason = a->act == ACT_RESUME ? "Resumed" : "HoldReleased";
		msg = a->act == ACT_RESUME
			      ? (a->reason ? api_printf(r, "hold released: %s", a->reason)
					   : "hold released")
			      : api_printf(r, "hold of %s released by %s: %s", a->owner, a->me,
					   a->reason);
		break;
	}
	case ACT_RETIRE:
		n->retire = 1;
		ev_reason = "RetireRequested";
		msg = api_printf(r, "retire requested: %s", a->reason);
		if (a->skip && n->phase != PHASE_RETIRED) {
			const char *what = "";
			if (retire_skip_op(r, n, a->me, a->reason, &sop, &scancel, &what, tx) < 0)
				return ACTION_REPLIED;
			msg = api_printf(r,
					 "retire without powering off (skipPowerOff) requested by "
					 "%s: %s%s",
					 a->me, a->reason, what);
		}
		break;
	}
	if (rc < 0) {
		api_problem_rc(r, rc == FP_ETOOBIG ? FP_ECONFLICT : rc,
			       rc == FP_ETOOBIG ? "the node carries the most holds allowed"
						: "cannot change the node's holds");
		operation_free(sop);
		operation_free(scancel);
		return ACTION_REPLIED;
	}
	if (scancel)
		objects_txn_put_op(tx, scancel, scancel->resource_version);
	operation_free(sop);
	operation_free(scancel);
	a->u->ev_type = a->act == ACT_RELEASE || a->skip ? "Warning" : "Normal";
	a->u->ev_reason = ev_reason;
	a->u->ev_msg = msg;
	a->resp = node_public(n, 0);
	struct store_op idem;
	if (api_idem_op(r, &idem, 200, a->resp))
		a->idem_at = objects_txn_add(tx, &idem);
	return 1;
}

static void node_action(struct api_req *r, enum node_action act)
{
	static const char *const keys_reason[] = {"reason", NULL};
	static const char *const keys_retire[] = {"reason", "skipPowerOff", NULL};
	static const char *const keys_release[] = {"owner", "reason", NULL};
	const char *name;
	json_t *body;
	const char *const *keys = act == ACT_RELEASE  ? keys_release
				  : act == ACT_RETIRE ? keys_retire
						      : keys_reason;
	if (node_post_begin(r, 1, keys, &name, &body) < 0)
		return;
	json_t *skip_j = json_object_get(body, "skipPowerOff");
	if (skip_j && !json_is_boolean(skip_j)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "skipPowerOff"),
				"skipPowerOff: expected true or false");
		return;
	}
	int skip = json_is_true(skip_j);
	const char *reason = NULL, *owner = NULL;
	/* resume's reason is optional (docs/cli.md: node resume NAME [--reason TEXT]) */
	if ((act != ACT_RESUME || json_object_get(body, "reason")) &&
	    api_text_member(r, body, "reason", REASON_MAX, 1, &reason) < 0)
		return;
	const char *me = api_actor(r);
	if (act == ACT_RELEASE) {
		owner = jsonx_str(body, "owner");
		if (!owner || !*owner || strlen(owner) > 128) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", "owner"),
					"owner: expected the owner string of a hold, 1..128 "
					"characters");
			return;
		}
	}
	struct action_arg a = {.r = r,
			       .act = act,
			       .name = name,
			       .me = me,
			       .reason = reason,
			       .owner = owner,
			       .skip = skip};
	struct objects_update u = {.actor = me,
				   .now_ms = api_now(r),
				   .rnd = api_event_seq(r),
				   .max_attempts = CAS_RETRIES};
	a.u = &u;
	char err[256] = "";
	int rc = objects_update_node(r->srv->cfg.store, name, action_mutate, &a, &u, NULL, err,
				     sizeof(err));
	if (rc == ACTION_REPLIED)
		return;
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "node %s not found", name);
	} else if (rc == FP_EPARSE) {
		api_problem(r, 500, "stored node %s does not decode: %s", name, err);
	} else if (rc == FP_ECONFLICT) {
		api_problem(r, 409, "node %s kept changing; gave up after %d attempts, retry", name,
			    CAS_RETRIES);
	} else if (rc == FP_EEXIST && a.idem_at && u.failed_index == a.idem_at) {
		api_problem(r, 409,
			    "a request with this Idempotency-Key was committed concurrently; retry "
			    "to get its result");
	} else if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
	} else {
		api_set_rv(a.resp, u.revision);
		api_reply_json(r, 200, a.resp);
		a.resp = NULL;
		log_info("node action node=%s action=%s actor=%s", name, u.ev_reason, me);
	}
	json_decref(a.resp);
}

void api_node_drain(struct api_req *r)
{
	node_action(r, ACT_DRAIN);
}
void api_node_resume(struct api_req *r)
{
	node_action(r, ACT_RESUME);
}
void api_node_retire(struct api_req *r)
{
	node_action(r, ACT_RETIRE);
}
void api_node_release(struct api_req *r)
{
	node_action(r, ACT_RELEASE);
}

/* ---------------------------------------------------------------- agent callbacks */

#define BOOT_ID_MAX 64

/* bootId: 1..64 characters of [A-Za-z0-9._:-]. Answers 422 naming the field and returns -1
 * when it is not. */
static int boot_id_check(struct api_req *r, const json_t *body, const char **out)
{
	json_t *v = json_object_get(body, "bootId");
	const char *s = json_string_value(v);
	size_t len = s ? strlen(s) : 0;
	int ok = s && len >= 1 && len <= BOOT_ID_MAX && len == json_string_length(v);
	for (size_t i = 0; ok && i < len; i++) {
		char c = s[i];
		ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		     c == '.' || c == '_' || c == ':' || c == '-';
	}
	if (!ok) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "bootId"), "bootId: %s",
				!v   ? "required"
				: !s ? "expected a string"
				     : "expected 1..64 characters of A-Z a-z 0-9 . _ : -");
		return -1;
	}
	*out = s;
	return 0;
}

#define REPORT_WAIT_TRIES 20
#define REPORT_WAIT_MS 50

/* 1 when bootId is the node's status.lastBoot.bootId. */
static int same_boot(const struct node *n, const char *boot_id)
{
	return n->last_boot_at && n->last_boot_id && strcmp(n->last_boot_id, boot_id) == 0;
}

/* Pauses REPORT_WAIT_MS on the server's clock (the system clock when it has none). */
static void report_wait(struct api_req *r)
{
	if (r->srv->cfg.clock) {
		clock_sleep_ms(r->srv->cfg.clock, REPORT_WAIT_MS);
		return;
	}
	struct timespec ts = {0, REPORT_WAIT_MS * 1000000L};
	nanosleep(&ts, NULL);
}

/* POST /v1/nodes/{name}:booted {"bootId"} and :validated {"bootId","passed"}: the node's
 * deploy agent (its own agent token, or an operator) reports a boot or a burn-in result; the
 * lifecycle controller records it (api_agent_hooks). An audit event (BootReported or
 * ValidationReported, the caller as actor, the bootId in its message) is written first. 409
 * while the node is retiring or retired, and for a :validated whose bootId is not the node's
 * status.lastBoot.bootId (members bootId, lastBootId; nothing is written). 202
 * {"accepted": true}. */
static void agent_report(struct api_req *r, int validated)
{
	static const char *const keys_booted[] = {"bootId", NULL};
	static const char *const keys_validated[] = {"bootId", "passed", NULL};
	const char *name;
	json_t *body;
	if (node_post_begin(r, 0, validated ? keys_validated : keys_booted, &name, &body) < 0)
		return;
	const char *boot_id = NULL;
	if (boot_id_check(r, body, &boot_id) < 0)
		return;
	json_t *passed = json_object_get(body, "passed");
	if (validated && !json_is_boolean(passed)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "passed"), "passed: %s",
				passed ? "expected true or false" : "required");
		return;
	}
	struct node *n = NULL;
	int64_t mod = 0;
	if (load_node(r, name, &n, &mod) < 0)
		return;
	/* A validation counts only for the boot the node runs now (docs/api.md). The lifecycle
	 * records a :booted report on its own lane after answering 202, so an agent that sends
	 * :validated right after :booted may read the old lastBoot: read again for up to
	 * REPORT_WAIT_TRIES * REPORT_WAIT_MS before refusing. */
	for (int i = 0; validated && !same_boot(n, boot_id) && i < REPORT_WAIT_TRIES; i++) {
		node_free(n);
		report_wait(r);
		if (load_node(r, name, &n, &mod) < 0)
			return;
	}
	enum node_phase phase = n->phase;
	if (validated && phase != PHASE_RETIRING && phase != PHASE_RETIRED &&
	    !same_boot(n, boot_id)) {
		const char *now_id = n->last_boot_id && n->last_boot_at ? n->last_boot_id : NULL;
		api_problem_ext(
			r, 409, json_pack("{s:s,s:s?}", "bootId", boot_id, "lastBootId", now_id),
			now_id ? "bootId %s is not the boot node %s runs now (status.lastBoot."
				 "bootId %s); a validation counts only for the current boot"
			       : "bootId %s: node %s has reported no boot yet (no status."
				 "lastBoot); send :booted first",
			boot_id, name, now_id);
		node_free(n);
		return;
	}
	node_free(n);
	if (phase == PHASE_RETIRING || phase == PHASE_RETIRED) {
		/* A late or forged report must not touch a node leaving service. */
		api_problem_ext(r, 409, json_pack("{s:s}", "phase", node_phase_name(phase)),
				"node %s is %s; boot and validation reports are refused while a "
				"node retires and once it is retired",
				name, node_phase_name(phase));
		return;
	}
	const struct api_agent_hooks *h = &r->srv->cfg.agent;
	if (!h->booted || !h->validated) {
		api_problem(r, 503, "no lifecycle controller in this server to take agent reports");
		return;
	}
	/* The audit trail says who reported (an agent token or an operator by hand). */
	const char *me = api_actor(r);
	struct store_op ev;
	api_event_op(r, &ev, "Normal", api_printf(r, "node/%s", name),
		     validated ? "ValidationReported" : "BootReported",
		     validated ? api_printf(r, "validation of boot %s reported by %s: %s", boot_id,
					    me, json_is_true(passed) ? "passed" : "failed")
			       : api_printf(r, "boot %s reported by %s", boot_id, me));
	int rc = store_txn(r->srv->cfg.store, &ev, 1, NULL, NULL);
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	if (validated)
		h->validated(h->arg, name, boot_id, json_is_true(passed));
	else
		h->booted(h->arg, name, boot_id);
	log_info("agent report node=%s kind=%s boot_id=%s actor=%s", name,
		 validated ? "validated" : "booted", boot_id, api_actor(r));
	api_reply_json(r, 202, json_pack("{s:b}", "accepted", 1));
}

void api_node_booted(struct api_req *r)
{
	agent_report(r, 0);
}
void api_node_validated(struct api_req *r)
{
	agent_report(r, 1);
}

/* ---------------------------------------------------------------- power */

static const char *const power_actions[] = {"on", "off", "cycle", "soft", "reset", "status", NULL};

/* POST /v1/nodes/{name}:power {"action"}: creates an operation of kind "power" with the one
 * step "power_<action>" (the lifecycle controller runs it). When another operation is in
 * flight on the node the new one is queued behind it (status.queuedOperations, at most
 * NODE_MAX_QUEUED; 409 when full), written in the same transaction as the operation document
 * and its event. Refused (409) while the node is retiring or retired, for "off" and "soft"
 * while it is available or in_service, and for off, soft, cycle and reset while status.workload
 * says jobs run on it (the scheduler backend's report, core/model.h), unless the body has
 * "force": true (drain it first; a forced one is logged as such, and the lifecycle's workload
 * gate lets its step through). 202
 * with the operation
 * document plus "queued" and, when queued, "behind" (the operation directly ahead). */
struct api_power_result;
static void power_exec(struct api_req *r, const char *name, const char *action, int force,
		       int takes_down, int disrupts, struct api_power_result *res);

void api_node_power(struct api_req *r)
{
	static const char *const keys[] = {"action", "force", NULL};
	const char *name;
	json_t *body;
	if (node_post_begin(r, 1, keys, &name, &body) < 0)
		return;
	const char *action = jsonx_str(body, "action");
	int known = 0;
	for (size_t i = 0; action && power_actions[i]; i++)
		known |= strcmp(action, power_actions[i]) == 0;
	if (!known) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "action"), "action: %s",
				!json_object_get(body, "action") ? "required"
				: !action                        ? "expected a string"
					  : "expected one of on, off, cycle, soft, reset, status");
		return;
	}
	json_t *force_j = json_object_get(body, "force");
	if (force_j && !json_is_boolean(force_j)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "force"),
				"force: expected true or false");
		return;
	}
	int force = json_is_true(force_j);
	/* off and soft take the machine away from whatever may run on it: a node a scheduler
	 * may place work on (available, in_service) is drained first, unless forced; cycle and
	 * reset too, and all four are refused on a node the scheduler says runs jobs
	 * (status.workload busy or draining), unless forced. */
	int takes_down = strcmp(action, "off") == 0 || strcmp(action, "soft") == 0;
	int disrupts = takes_down || strcmp(action, "cycle") == 0 || strcmp(action, "reset") == 0;
	if (force && !disrupts) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "force"),
				"force: for off, soft, cycle and reset only (it lets them disrupt "
				"a node that may run work); %s takes no force",
				action);
		return;
	}
	power_exec(r, name, action, force, takes_down, disrupts, NULL);
}

/* api_node_power's work after the body was checked: one power request for node name. With
 * res NULL it answers r itself (202 and Location, or the problem); with res (the bulk route)
 * it answers nothing and fills res: status 202 and op_id, or the status and detail the
 * single route would have answered. */
#define POWER_FAIL(res, r, st, ext, ...)                                       \
	do {                                                                   \
		if (!(res)) {                                                  \
			api_problem_ext((r), (st), (ext), __VA_ARGS__);        \
		} else {                                                       \
			json_decref(ext);                                      \
			(res)->status = (st);                                  \
			snprintf((res)->why, sizeof((res)->why), __VA_ARGS__); \
		}                                                              \
	} while (0)

static void power_exec(struct api_req *r, const char *name, const char *action, int force,
		       int takes_down, int disrupts, struct api_power_result *res)
{
	const char *me = api_actor(r);
	for (int attempt = 0; attempt < CAS_RETRIES; attempt++) {
		struct node *n = NULL;
		int64_t mod = 0;
		if (!res) {
			if (load_node(r, name, &n, &mod) < 0)
				return;
		} else {
			char lerr[256];
			int lrc = objects_store_node(r->srv->cfg.store, name, &n, &mod, lerr,
						     sizeof(lerr));
			if (lrc < 0) {
				res->status = lrc == FP_ENOTFOUND ? 404 : 500;
				snprintf(res->why, sizeof(res->why), "%s",
					 lrc == FP_ENOTFOUND
						 ? api_printf(r, "node %s not found", name)
						 : api_printf(r, "cannot read node %s: %s", name,
							      lrc == FP_EPARSE ? lerr
									       : fp_err_msg(lrc)));
				return;
			}
		}
		if (n->phase == PHASE_RETIRING || n->phase == PHASE_RETIRED) {
			POWER_FAIL(res, r, 409,
				   json_pack("{s:s}", "phase", node_phase_name(n->phase)),
				   "node %s is %s; power operations are refused while a node "
				   "retires and once it is retired",
				   name, node_phase_name(n->phase));
			node_free(n);
			return;
		}
		if (takes_down && !force &&
		    (n->phase == PHASE_AVAILABLE || n->phase == PHASE_IN_SERVICE)) {
			POWER_FAIL(res, r, 409,
				   json_pack("{s:s}", "phase", node_phase_name(n->phase)),
				   "node %s is %s: power %s would leave it %s with the machine "
				   "off; drain it first: fleetplane node drain %s, or pass force",
				   name, node_phase_name(n->phase), action,
				   node_phase_name(n->phase), name);
			node_free(n);
			return;
		}
		if (disrupts && !force && n->workload.state != WORKLOAD_NONE &&
		    !node_workload_trusted(n)) {
			/* the scheduler reports on this node but cannot be read now: what it said
			 * last may be stale, and jobs may have started since */
			const struct node_condition
				*c = node_condition_get(n, NODE_COND_SCHEDULER_IN_SYNC);
			POWER_FAIL(res, r, 409,
				   json_pack("{s:s,s:s}", "workload", "unknown", "reason",
					     c && c->reason ? c->reason : "absent"),
				   "node %s: Slurm cannot be read now (SchedulerInSync %s), so "
				   "whether jobs run on it is not known: power %s could kill "
				   "them; wait for Slurm, or pass force",
				   name, c && c->reason ? c->reason : "absent", action);
			node_free(n);
			return;
		}
		if (disrupts && !force && node_workload_has_jobs(&n->workload)) {
			char jobs[400];
			node_workload_jobs_text(&n->workload, jobs, sizeof(jobs));
			json_t *ids = json_array();
			for (size_t i = 0; i < n->workload.njobs; i++)
				json_array_append_new(ids, json_string(n->workload.jobs[i]));
			POWER_FAIL(
				res, r, 409,
				json_pack("{s:s,s:o,s:i}", "workload",
					  workload_state_name(n->workload.state), "jobs", ids,
					  "jobsTotal", (int)n->workload.jobs_total),
				"node %s runs %s jobs %s (status.workload %s): power %s would kill "
				"them; drain it and wait, or pass force",
				name, n->workload.scheduler ? n->workload.scheduler : "scheduler",
				jobs[0] ? jobs : "(ids not known)",
				workload_state_name(n->workload.state), action);
			node_free(n);
			return;
		}
		if (force && node_workload_has_jobs(&n->workload))
			log_warn("power forced with jobs running node=%s action=%s actor=%s", name,
				 action, me);
		if (n->operation && n->nqueued >= NODE_MAX_QUEUED) {
			POWER_FAIL(res, r, 409,
				   json_pack("{s:s,s:i}", "operation", n->operation, "queued",
					     (int)n->nqueued),
				   "node %s already has %d operations queued behind %s; wait "
				   "for them to end",
				   name, NODE_MAX_QUEUED, n->operation);
			node_free(n);
			return;
		}
		struct operation *op = NULL;
		struct objects_txn otx; /* the operation's create put */
		objects_txn_init(&otx);
		json_t *params = json_pack("{s:s}", "action", action);
		if (force)
			json_object_set_new(params, "force", json_true());
		struct objects_op_spec spec =
			{.node = name,
			 .kind = "power",
			 .params = params,
			 .actor = me,
			 .reason = api_printf(r, "power %s requested by %s", action, me),
			 .idempotency_key = res ? NULL : api_header(r, "Idempotency-Key"),
			 .now_ms = api_now(r),
			 .rnd = api_rand(r)};
		BUG_ON(objects_op_start(&spec, &otx, &op, NULL, 0) < 0); /* action checked above */
		json_decref(params);
		const char *behind = NULL;
		if (n->operation) {
			behind = api_strdup(r, n->nqueued ? n->queued_ops[n->nqueued - 1]
							  : n->operation);
			char **q = xcalloc(n->nqueued + 1, sizeof(char *));
			if (n->nqueued)
				memcpy(q, n->queued_ops, n->nqueued * sizeof(char *));
			free(n->queued_ops);
			n->queued_ops = q;
			n->queued_ops[n->nqueued++] = xstrdup(op->id);
		} else {
			n->operation = xstrdup(op->id);
		}
		json_t *resp = operation_to_json(op, 0);
		json_object_set_new(resp, "queued", json_boolean(behind != NULL));
		if (behind)
			json_object_set_new(resp, "behind", json_string(behind));
		struct store_op ops[4];
		size_t nops = 0;
		node_put_op(r, &ops[nops++], n, mod);
		ops[nops++] = otx.ops[0];
		api_event_op(r, &ops[nops++], "Normal", api_printf(r, "node/%s", name),
			     "PowerRequested",
			     api_printf(r, "power %s requested by %s: operation %s%s%s", action, me,
					op->id, behind ? " (queued behind " : "",
					behind ? api_printf(r, "%s)", behind) : ""));
		if (api_idem_op(r, &ops[nops], 202, resp))
			nops++;
		int64_t rev = 0;
		size_t failed = 0;
		int rc = store_txn(r->srv->cfg.store, ops, nops, &rev, &failed);
		objects_txn_release(&otx);
		node_free(n);
		if (rc == FP_ECONFLICT && failed == 0) {
			json_decref(resp);
			operation_free(op);
			continue; /* the node changed (the controller moved on): read again */
		}
		if (rc == FP_EEXIST && failed == 3) {
			json_decref(resp);
			operation_free(op);
			POWER_FAIL(res, r, 409, NULL,
				   "a request with this Idempotency-Key was committed "
				   "concurrently; retry to get its result");
			return;
		}
		if (rc < 0) {
			json_decref(resp);
			operation_free(op);
			POWER_FAIL(res, r, 500, NULL, "store write failed: %s", fp_err_msg(rc));
			return;
		}
		if (res) {
			res->status = 202;
			snprintf(res->op_id, sizeof(res->op_id), "%s", op->id);
			json_decref(resp);
		} else {
			api_set_rv(resp, rev);
			api_reply_json(r, 202, resp);
			api_add_header(r, MHD_HTTP_HEADER_LOCATION,
				       api_printf(r, "/v1/operations/%s", op->id));
		}
		log_info("power requested node=%s action=%s op=%s queued=%d actor=%s", name, action,
			 op->id, behind != NULL, me);
		operation_free(op);
		return;
	}
	POWER_FAIL(res, r, 409, NULL, "node %s kept changing; gave up after %d attempts, retry",
		   name, CAS_RETRIES);
}

void api_node_power_one(struct api_req *r, const char *name, const char *action, int force,
			struct api_power_result *res)
{
	int takes_down = strcmp(action, "off") == 0 || strcmp(action, "soft") == 0;
	int disrupts = takes_down || strcmp(action, "cycle") == 0 || strcmp(action, "reset") == 0;
	memset(res, 0, sizeof(*res));
	power_exec(r, name, action, force && disrupts, takes_down, disrupts, res);
}

/* ---------------------------------------------------------------- :jobend */

/* A string member of body within 1..max bytes of the characters accepted by ok (NULL: any
 * printable ASCII). Absent and not required: 0 with *out NULL. Answers 422 naming it. */
static int jobend_str(struct api_req *r, const json_t *body, const char *field, size_t max,
		      int required, int (*ok)(int), const char *what, const char **out)
{
	json_t *v = json_object_get(body, field);
	*out = NULL;
	if (!v && !required)
		return 0;
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	int good = s && n >= 1 && n <= max;
	for (size_t i = 0; good && i < n; i++)
		good = ok ? ok((unsigned char)s[i]) : (s[i] > 0x20 && s[i] < 0x7f);
	if (!good) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", field), "%s: %s", field,
				!v   ? "required"
				: !s ? "expected a string"
				     : what);
		return -1;
	}
	*out = s;
	return 0;
}

static int jobend_job_char(int c)
{
	return isalnum(c) || c == '.' || c == '_' || c == '+' || c == '-';
}

static int jobend_gpus_char(int c)
{
	return isdigit(c) || c == ',' || c == '-';
}

/* An integer member within lo..hi; absent: 0 and *present 0. Answers 422 naming it. */
static int jobend_int(struct api_req *r, const json_t *body, const char *field, long lo, long hi,
		      long *out, int *present)
{
	json_t *v = json_object_get(body, field);
	*present = v != NULL;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", field),
				"%s: expected an integer from %ld to %ld", field, lo, hi);
		return -1;
	}
	*out = (long)json_integer_value(v);
	return 0;
}

/* POST /v1/nodes/{name}:jobend {"job","gpus"?,"exitCode"?,"signal"?}: the node's Epilog
 * (`fleetplane agent epilog`) says a Slurm job ended on the node. job: 1..64 of
 * [A-Za-z0-9._+-] (the report's agent.job rule); gpus: SLURM_JOB_GPUS, 1..256 of [0-9,-];
 * exitCode 0..255 and signal 0..127 from SLURM_JOB_EXIT_CODE2 "<exit>:<sig>" (slurm.conf(5)
 * "Prolog and Epilog Scripts"). Writes the audit event JobEnded on node/<name> (Warning when
 * the job failed or was signalled) and answers 202 {"accepted":true}; 404 unknown node; 422
 * naming a bad or unknown member. */
void api_node_jobend(struct api_req *r)
{
	static const char *const keys[] = {"job", "gpus", "exitCode", "signal", NULL};
	if (check_name_param(r) < 0)
		return;
	const char *name = r->params[0];
	json_t *body;
	if (api_body_keys(r, keys, &body) < 0)
		return;
	const char *job = NULL, *gpus = NULL;
	long code = 0, sig = 0;
	int have_code = 0, have_sig = 0;
	if (jobend_str(r, body, "job", 64, 1, jobend_job_char,
		       "expected a job id (1..64 characters of A-Z a-z 0-9 . _ + -)", &job) < 0 ||
	    jobend_str(r, body, "gpus", 256, 0, jobend_gpus_char,
		       "expected GPU indices as Slurm lists them (1..256 characters of 0-9 , -)",
		       &gpus) < 0 ||
	    jobend_int(r, body, "exitCode", 0, 255, &code, &have_code) < 0 ||
	    jobend_int(r, body, "signal", 0, 127, &sig, &have_sig) < 0)
		return;
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, node_key(r, name), &doc, &mod);
	if (rc == FP_ENOTFOUND) {
		api_problem(r, 404, "node %s not found", name);
		return;
	}
	if (rc < 0) {
		api_problem_rc(r, rc, "cannot read the node");
		return;
	}
	json_decref(doc);
	const char *exit_text = have_code || have_sig
					? api_printf(r, ", exit %ld%s", code,
						     have_sig ? api_printf(r, " signal %ld", sig)
							      : "")
					: "";
	struct store_op ev;
	api_event_op(r, &ev, (code || sig) ? "Warning" : "Normal", api_printf(r, "node/%s", name),
		     "JobEnded",
		     api_printf(r, "job %s ended on %s%s%s%s", job, name, gpus ? ", gpus " : "",
				gpus ? gpus : "", exit_text));
	rc = store_txn(r->srv->cfg.store, &ev, 1, NULL, NULL);
	if (rc < 0) {
		api_problem_rc(r, rc, "store write failed");
		return;
	}
	log_info("job ended node=%s job=%s actor=%s", name, job, api_actor(r));
	api_reply_json(r, 202, json_pack("{s:b}", "accepted", 1));
}
