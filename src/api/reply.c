/* reply.c - what an API handler calls to read its request and write its reply: the request
 * arena (api_own, api_printf), request accessors (query, headers, clock, actor), JSON, raw and
 * RFC 9457 problem replies, body parsing, and the helpers every resource shares
 * (resourceVersion, audit event ops, UUIDs, api_get_doc, the paged api_list). It sits under
 * everything else in src/api/: server.c (the daemon, routing, worker pool), watch.c and the
 * api_<resource>.c files call it, and it calls none of them, only base/, core/event and the
 * store. Declarations: api/reply.h. */
#include "api/reply.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "core/event.h"
#include "store/store.h"
#include "base/banned.h"

#define LIST_DEFAULT_LIMIT 500
#define LIST_MAX_LIMIT 5000
/* A list page ends early, with a continue token, once its stored documents reach this many
 * bytes: the reply (about the same size) then stays well under the 64 MiB a reply buffer may
 * hold (buf.h), where 5,000 nodes with large annotations would not (a Kubernetes API server
 * may also return fewer items than the limit). */
#define LIST_PAGE_BYTES (32u << 20)

/* ---------------------------------------------------------------- arena and accessors */

void *api_own_fn(struct api_req *r, void *p, void (*fn)(void *))
{
	ALLOC_GROW(r->owned, r->nowned + 1, r->aowned);
	r->owned[r->nowned].p = p;
	r->owned[r->nowned].fn = fn;
	r->nowned++;
	return p;
}

void *api_own(struct api_req *r, void *p)
{
	return api_own_fn(r, p, free);
}

static void json_free_cb(void *p)
{
	json_decref(p);
}

json_t *api_own_json(struct api_req *r, json_t *v)
{
	return api_own_fn(r, v, json_free_cb);
}

char *api_strdup(struct api_req *r, const char *s)
{
	return api_own(r, xstrdup(s));
}

char *api_printf(struct api_req *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		BUG_ON("vasprintf failed");
	va_end(ap);
	return api_own(r, s);
}

const char *api_query(struct api_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *api_header(struct api_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, key);
}

static int64_t sys_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t api_wall_ms(const struct api_server *srv)
{
	return srv->cfg.clock ? clock_wall_ms(srv->cfg.clock) : sys_wall_ms();
}

int64_t api_now(struct api_req *r)
{
	return api_wall_ms(r->srv);
}

uint64_t api_rand(struct api_req *r)
{
	return fp_rng_u64(r->srv->rng);
}

uint64_t api_event_seq(struct api_req *r)
{
	return atomic_fetch_add(&r->srv->event_seq, 1u);
}

const char *api_actor(struct api_req *r)
{
	return api_printf(r, "%s:%s", r->who.role == API_ROLE_AGENT ? "agent" : "operator",
			  r->who.name);
}

/* ---------------------------------------------------------------- replies */

void api_reply_reset(struct api_req *r)
{
	buf_reset(&r->out);
	free(r->take);
	r->take = NULL;
	r->take_len = 0;
	for (size_t i = 0; i < r->nhdrs; i++)
		free(r->hdrs[i].value);
	r->nhdrs = 0;
}

void api_add_header(struct api_req *r, const char *key, const char *value)
{
	if (r->nhdrs >= API_MAX_HDRS)
		BUG_ON("too many response headers");
	r->hdrs[r->nhdrs].key = key;
	r->hdrs[r->nhdrs].value = xstrdup(value);
	r->nhdrs++;
}

void api_reply_take(struct api_req *r, int status, const char *ctype, char *data, size_t len)
{
	buf_reset(&r->out);
	free(r->take);
	r->take = data;
	r->take_len = len;
	r->status = status;
	r->ctype = ctype;
}

void api_reply_raw(struct api_req *r, int status, const char *ctype, const char *data, size_t len)
{
	free(r->take);
	r->take = NULL;
	buf_reset(&r->out);
	r->status = status;
	r->ctype = ctype;
	if (buf_append(&r->out, data, len) < 0) {
		buf_reset(&r->out);
		r->status = 500;
		r->ctype = "application/problem+json";
		buf_puts(&r->out, "{\"type\":\"" API_PROBLEM_BASE "internal\",\"title\":"
				  "\"Internal Server Error\",\"status\":500,\"detail\":"
				  "\"response too large\"}\n");
	}
}

void api_reply_json(struct api_req *r, int status, json_t *v)
{
	char *s = jsonx_dumps(v);
	size_t n = strlen(s);
	free(r->take);
	r->take = NULL;
	buf_reset(&r->out);
	r->status = status;
	r->ctype = "application/json";
	if (buf_append(&r->out, s, n) < 0 || buf_puts(&r->out, "\n") < 0) {
		free(s);
		json_decref(v);
		api_problem(r, 500, "response too large");
		return;
	}
	free(s);
	json_decref(v);
}

static const char *status_slug(int status, const char **title)
{
	switch (status) {
	case 400: *title = "Bad Request"; return "bad-request";
	case 401: *title = "Unauthorized"; return "unauthorized";
	case 403: *title = "Forbidden"; return "forbidden";
	case 404: *title = "Not Found"; return "not-found";
	case 405: *title = "Method Not Allowed"; return "method-not-allowed";
	case 409: *title = "Conflict"; return "conflict";
	case 410: *title = "Gone"; return "gone";
	case 412: *title = "Precondition Failed"; return "precondition-failed";
	case 408: *title = "Request Timeout"; return "request-timeout";
	case 411: *title = "Length Required"; return "length-required";
	case 413: *title = "Content Too Large"; return "content-too-large";
	case 414: *title = "URI Too Long"; return "uri-too-long";
	case 415: *title = "Unsupported Media Type"; return "unsupported-media-type";
	case 417: *title = "Expectation Failed"; return "expectation-failed";
	case 422: *title = "Unprocessable Content"; return "invalid";
	case 428: *title = "Precondition Required"; return "precondition-required";
	case 429: *title = "Too Many Requests"; return "rate-limited";
	case 431: *title = "Request Header Fields Too Large"; return "headers-too-large";
	case 501: *title = "Not Implemented"; return "not-implemented";
	case 502: *title = "Bad Gateway"; return "bad-gateway";
	case 503: *title = "Service Unavailable"; return "unavailable";
	case 504: *title = "Gateway Timeout"; return "timeout";
	case 505: *title = "HTTP Version Not Supported"; return "http-version-not-supported";
	case 507: *title = "Insufficient Storage"; return "insufficient-storage";
	default: *title = "Internal Server Error"; return "internal";
	}
}

json_t *api_problem_doc(int status, const char *detail, const char *instance)
{
	const char *title;
	const char *slug = status_slug(status, &title);
	char type[128];
	snprintf(type, sizeof(type), "%s%s", API_PROBLEM_BASE, slug);
	/* a client's bytes (a path, a query value) may be any bytes: jansson takes only UTF-8, so
	 * the others are shown as \xNN rather than losing the whole document */
	char *d = jsonx_utf8_escaped(detail ? detail : "");
	json_t *p = json_pack("{s:s,s:s,s:i,s:s}", "type", type, "title", title, "status", status,
			      "detail", d);
	free(d);
	if (instance) {
		char *in = jsonx_utf8_escaped(instance);
		json_object_set_new(p, "instance", json_string(in));
		free(in);
	}
	return p;
}

void api_problem_ext(struct api_req *r, int status, json_t *ext, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (r->kube && r->kube_status) {
		/* the Kubernetes surface answers Status objects (kube.c) */
		char *d = jsonx_utf8_escaped(detail);
		api_reply_json(r, status, r->kube_status(r, status, d, ext));
		free(d);
		return;
	}
	json_t *p = api_problem_doc(status, detail, r->path ? r->path : "");
	if (ext) {
		json_object_update_missing(p, ext);
		json_decref(ext);
	}
	api_reply_json(r, status, p);
	r->ctype = "application/problem+json";
}

void api_problem_rc(struct api_req *r, int rc, const char *detail)
{
	const char *d = detail && *detail ? detail : fp_err_msg(rc);
	if (rc == FP_ENOSPC) /* say so whatever the caller's words (issue 16 item 10) */
		api_problem(r, 507,
			    "%s: the store is out of storage space; nothing was written (free "
			    "space on the data dir's file system)",
			    d);
	else
		api_problem(r, fp_err_http(rc), "%s", d);
}

int api_body_object(struct api_req *r, json_t **out)
{
	*out = NULL;
	const char *ct = api_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct && !r->kube_native) {
		size_t n = strcspn(ct, "; \t");
		if (!(n == 16 && strncasecmp(ct, "application/json", 16) == 0)) {
			api_problem(r, 415, "Content-Type %.*s: expected application/json",
				    (int)(n > 64 ? 64 : n), ct);
			return -1;
		}
	}
	if (r->body.len == 0) {
		api_problem(r, 400, "empty body: expected a JSON object");
		return -1;
	}
	if (memchr(r->body.data, 0, r->body.len)) {
		api_problem(r, 400, "body contains a NUL byte");
		return -1;
	}
	json_error_t je;
	json_t *v = json_loadb(r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!v) {
		json_t *ext = json_pack("{s:i,s:i}", "line", je.line, "column", je.column);
		api_problem_ext(r, 400, ext, "malformed JSON at line %d column %d: %s", je.line,
				je.column, je.text);
		return -1;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		api_problem(r, 400, "body: expected a JSON object");
		return -1;
	}
	*out = v;
	return 0;
}

int api_body_keys(struct api_req *r, const char *const *keys, json_t **out)
{
	if (api_body_object(r, out) < 0)
		return -1;
	api_own_json(r, *out);
	const char *k;
	json_t *v;
	json_object_foreach(*out, k, v) {
		int ok = 0;
		for (const char *const *a = keys; *a && !ok; a++)
			ok = strcmp(*a, k) == 0;
		if (ok)
			continue;
		size_t n = strlen(k);
		if (n > 128)
			for (n = 128; n > 0 && ((unsigned char)k[n] & 0xc0) == 0x80; n--)
				;
		json_t *ext = json_object();
		json_object_set_new(ext, "field", json_stringn(k, n));
		api_problem_ext(r, 422, ext, "unknown field %.*s%s", (int)n, k,
				n < strlen(k) ? "..." : "");
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- shared helpers */

json_t *api_rv_json(int64_t rv)
{
	char s[24];
	snprintf(s, sizeof(s), "%lld", (long long)rv);
	return json_string(s);
}

void api_set_rv(json_t *doc, int64_t rv)
{
	json_t *md = json_object_get(doc, "metadata");
	if (!json_is_object(md)) {
		md = json_object();
		json_object_set_new(doc, "metadata", md);
	}
	json_object_set_new(md, "resourceVersion", api_rv_json(rv));
}

int api_rv_parse_str(const char *s, int64_t *out)
{
	if (!s)
		return FP_EINVAL;
	size_t n = strlen(s);
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s++;
		n -= 2;
	}
	if (n == 0 || n > 18)
		return FP_EINVAL;
	int64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return FP_EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v <= 0)
		return FP_EINVAL;
	*out = v;
	return 0;
}

int api_rv_parse_json(const json_t *v, int64_t *out)
{
	if (json_is_integer(v) && json_integer_value(v) > 0) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (s[0] == '"')
			return FP_EINVAL;
		return api_rv_parse_str(s, out);
	}
	return FP_EINVAL;
}

void api_event_op(struct api_req *r, struct store_op *op, const char *type, const char *object,
		  const char *reason, const char *message)
{
	char id[EVENT_ID_LEN];
	int64_t now = api_now(r);
	event_id(now, api_event_seq(r), id);
	json_t *ev = event_new(id, type, api_actor(r), object, reason, message, now);
	op->type = STORE_OP_PUT;
	op->key = api_printf(r, "/events/%s", id);
	op->value = api_own(r, jsonx_dumps(ev));
	op->expect = STORE_ABSENT;
	json_decref(ev);
}

char *api_uuid(struct api_req *r)
{
	uint64_t a = api_rand(r), b = api_rand(r);
	a = (a & ~0xf000ULL) | 0x4000ULL;                        /* version 4 */
	b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL; /* variant 10 */
	return api_printf(r, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
			  (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xffff),
			  (unsigned)(b >> 48), (unsigned long long)(b & 0xffffffffffffULL));
}

int api_get_doc(struct api_req *r, const char *key, json_t **doc, int64_t *mod_rev)
{
	struct store_kv kv = {0};
	*doc = NULL;
	int rc = store_get(r->srv->cfg.store, key, &kv);
	if (rc < 0)
		return rc;
	rc = jsonx_parse(kv.value, strlen(kv.value), doc, NULL, 0);
	if (rc < 0 || !json_is_object(*doc)) {
		log_warn("corrupt stored document key=%s", key);
		json_decref(*doc);
		*doc = NULL;
		rc = FP_EIO;
	} else if (mod_rev) {
		*mod_rev = kv.mod_revision;
	}
	store_kv_release(&kv);
	return rc;
}

/* 1 when raw[0..n) is all printable ASCII: the alphabet of store keys (store.h), so a decoded
 * continue token outside it is refused as the token it is not. */
static int printable_key(const unsigned char *raw, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (raw[i] < 0x20 || raw[i] > 0x7e)
			return 0;
	return 1;
}

static int parse_limit(struct api_req *r, size_t *limit)
{
	const char *s = api_query(r, "limit");
	*limit = LIST_DEFAULT_LIMIT;
	if (!s)
		return 0;
	char *end = NULL;
	long long v = strtoll(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || v < 1 || v > LIST_MAX_LIMIT) { /* no " 1", "+1" */
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "limit"),
				"limit: expected an integer in 1..%d", LIST_MAX_LIMIT);
		return -1;
	}
	*limit = (size_t)v;
	return 0;
}

int api_is_watch(struct api_req *r)
{
	const char *w = api_query(r, "watch");
	return w && (strcmp(w, "1") == 0 || strcmp(w, "true") == 0);
}

/* The list body as text, built in r->out while the pages are read: `{"items":[` each item's
 * text `],"metadata":` the metadata `}` - the bytes api_reply_json would send for the same
 * tree. */
struct list_text {
	struct api_req *r;
	size_t nitems;
	int failed; /* FP_ETOOBIG: the body outgrew r->out */
};

static void list_text_begin(struct list_text *lt, struct api_req *r)
{
	lt->r = r;
	lt->nitems = 0;
	lt->failed = 0;
	free(r->take);
	r->take = NULL;
	buf_reset(&r->out);
	if (buf_puts(&r->out, "{\"items\":[") < 0)
		lt->failed = FP_ETOOBIG;
}

/* Appends one item: text's rendering of kv, or (when text declines) render's tree of doc,
 * parsing kv's value first when doc is NULL. Returns 0, 1 for a document to skip (it does not
 * parse: logged), or -1 when render failed. */
static int list_text_item(struct list_text *lt, const struct store_kv *kv, json_t *doc,
			  api_render_fn render, api_text_fn text)
{
	struct api_req *r = lt->r;
	if (lt->failed)
		return 0;
	size_t mark = r->out.len;
	if (lt->nitems && buf_puts(&r->out, ",") < 0) {
		lt->failed = FP_ETOOBIG;
		return 0;
	}
	if (text(r, kv, &r->out) == 0) {
		lt->nitems++;
		return 0;
	}
	json_t *mine = NULL;
	if (!doc) {
		if (jsonx_parse(kv->value, strlen(kv->value), &mine, NULL, 0) < 0) {
			log_warn("corrupt stored document key=%s", kv->key);
			r->out.len = mark;
			r->out.data[mark] = 0;
			return 1;
		}
		doc = mine;
	}
	json_t *out = render(r, doc, kv->mod_revision);
	json_decref(mine);
	if (!out) { /* render logged why; the list goes on without it, as without bad JSON */
		r->out.len = mark;
		r->out.data[mark] = 0;
		return 1;
	}
	char *s = jsonx_dumps(out);
	json_decref(out);
	if (buf_puts(&r->out, s) < 0)
		lt->failed = FP_ETOOBIG;
	free(s);
	lt->nitems++;
	return 0;
}

static void list_text_end(struct list_text *lt, json_t *md)
{
	struct api_req *r = lt->r;
	char *m = jsonx_dumps(md);
	json_decref(md);
	if (!lt->failed && (buf_puts(&r->out, "],\"metadata\":") < 0 || buf_puts(&r->out, m) < 0 ||
			    buf_puts(&r->out, "}\n") < 0))
		lt->failed = FP_ETOOBIG;
	free(m);
	if (lt->failed) {
		buf_reset(&r->out);
		api_problem(r, 500, "response too large");
		return;
	}
	r->status = 200;
	r->ctype = "application/json";
}

/* One list page read by store_scan: list_scan_item gets each stored kv in order. */
struct list_scan {
	struct api_req *r;
	api_keep_fn keep;
	void *arg;
	api_render_fn render;
	api_text_fn text;
	struct list_text *lt; /* the text path's body, or NULL */
	json_t *items;        /* the tree path's items, or NULL */
	size_t limit, got;
	size_t bytes;                  /* stored bytes of the items listed (LIST_PAGE_BYTES) */
	size_t seen;                   /* kvs given to list_scan_item */
	char start[STORE_MAX_KEY + 1]; /* the last kv seen: where the next scan starts */
	char last[STORE_MAX_KEY + 1];  /* the last kv listed: the continue token's key */
	char bad[STORE_MAX_KEY + 1];   /* the key whose rendering failed */
};

static int list_scan_item(void *arg, const struct store_kv *kv)
{
	struct list_scan *ls = arg;
	struct api_req *r = ls->r;
	if (ls->got >= ls->limit || (ls->got && ls->bytes >= LIST_PAGE_BYTES))
		return STORE_SCAN_STOP;
	size_t kl = strlen(kv->key);
	if (kl > STORE_MAX_KEY) { /* never written through store.c; an etcd key set by hand */
		log_warn("stored key longer than %d bytes skipped: %.64s...", STORE_MAX_KEY,
			 kv->key);
		return 0;
	}
	ls->seen++;
	memcpy(ls->start, kv->key, kl + 1);
	json_t *doc = NULL;
	/* the text path parses only what keep must look at */
	if ((!ls->text || ls->keep) &&
	    jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) < 0) {
		log_warn("corrupt stored document key=%s", kv->key);
		return 0;
	}
	if (ls->keep && !ls->keep(r, doc, ls->arg)) {
		json_decref(doc);
		return 0;
	}
	int bad = 0, skip = 0;
	if (ls->text) {
		int ir = list_text_item(ls->lt, kv, doc, ls->render, ls->text);
		bad = ir < 0;
		skip = ir == 1;
	} else {
		json_t *out = ls->render(r, doc, kv->mod_revision);
		if (out)
			json_array_append_new(ls->items, out);
		bad = !out;
	}
	json_decref(doc);
	if (bad) {
		snprintf(ls->bad, sizeof(ls->bad), "%s", kv->key);
		return FP_EIO;
	}
	if (!skip) {
		ls->got++;
		ls->bytes += strlen(kv->value);
		memcpy(ls->last, kv->key, kl + 1);
	}
	return 0;
}

/* Reads one page into ls. The text path (nodes: a text rewrite, or api_node_render, which only
 * decodes and encodes) runs inside store_scan's read transaction, on the rows where SQLite
 * holds them. The tree path's render and keep functions may call hooks that take controller
 * locks (budget_status, tenant status), and a thread holding such a lock may be waiting for a
 * store connection a scan holds: they run on a copied page (store_scan_copied). */
static int list_page(struct list_scan *ls, const char *prefix, const char *start, size_t n,
		     int64_t *rev, int *more)
{
	struct store *s = ls->r->srv->cfg.store;
	if (ls->text)
		return store_scan(s, prefix, start, n, list_scan_item, ls, rev, more);
	return store_scan_copied(s, prefix, start, n, list_scan_item, ls, rev, more);
}

void api_list(struct api_req *r, const char *prefix, api_keep_fn keep, void *arg,
	      api_render_fn render)
{
	api_list_text(r, prefix, keep, arg, render, NULL);
}

void api_list_text(struct api_req *r, const char *prefix, api_keep_fn keep, void *arg,
		   api_render_fn render, api_text_fn text)
{
	size_t limit;
	if (parse_limit(r, &limit) < 0)
		return;
	/* issue 16 item 8: strict where a client's intent is at stake */
	const char *w = api_query(r, "watch");
	if (w && strcmp(w, "false") != 0 && strcmp(w, "0") != 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "watch"),
				"watch: expected true or false, got %.32s", w);
		return;
	}
	const char *qrv = api_query(r, "resourceVersion");
	int64_t rv_ignored;
	if (qrv && strcmp(qrv, "0") != 0 && api_rv_parse_str(qrv, &rv_ignored) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "resourceVersion"),
				"resourceVersion: expected a revision number");
		return;
	}
	char start[STORE_MAX_KEY + 1] = "";
	const char *cont = api_query(r, "continue");
	if (cont) {
		size_t n = 0;
		unsigned char raw[STORE_MAX_KEY + 1];
		if (sodium_base642bin(raw, sizeof(raw) - 1, cont, strlen(cont), NULL, &n, NULL,
				      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
		    n <= strlen(prefix) || memcmp(raw, prefix, strlen(prefix)) != 0 ||
		    !printable_key(raw, n)) {
			api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "continue"),
					"continue: not a token this list returned");
			return;
		}
		memcpy(start, raw, n);
		start[n] = 0;
	}
	/* The Kubernetes API turns the list tree into its own kinds (kube.c): it keeps the tree */
	if (r->kube_list)
		text = NULL;
	struct list_text lt = {0};
	json_t *items = NULL;
	if (text)
		list_text_begin(&lt, r);
	else
		items = json_array();
	struct list_scan ls = {
		.r = r,
		.keep = keep,
		.arg = arg,
		.render = render,
		.text = text,
		.lt = &lt,
		.items = items,
		.limit = limit,
	};
	int64_t list_rev = 0;
	int more = 0;
	for (;;) {
		int64_t rev = 0;
		size_t seen = ls.seen;
		int rc = list_page(&ls, prefix, start, keep ? 500 : limit - ls.got, &rev, &more);
		if (rc < 0) {
			json_decref(items);
			if (text)
				buf_reset(&r->out);
			if (rc == FP_EIO && ls.bad[0])
				api_problem(r, 500, "cannot render %s", ls.bad);
			else
				api_problem_rc(r, rc, "store list failed");
			return;
		}
		if (!list_rev)
			list_rev = rev;
		if (ls.seen > seen)
			snprintf(start, sizeof(start), "%s", ls.start);
		if (!more || ls.seen == seen || ls.got >= limit || ls.bytes >= LIST_PAGE_BYTES)
			break;
	}
	size_t got = ls.got;
	const char *last = ls.last;
	json_t *md = json_pack("{s:o}", "resourceVersion", api_rv_json(list_rev));
	if (more && got > 0) {
		char tok[sodium_base64_ENCODED_LEN(STORE_MAX_KEY + 1,
						   sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
		sodium_bin2base64(tok, sizeof(tok), (const unsigned char *)last, strlen(last),
				  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		json_object_set_new(md, "continue", json_string(tok));
	}
	if (text) {
		list_text_end(&lt, md);
		return;
	}
	json_t *list = json_pack("{s:o,s:o}", "items", items, "metadata", md);
	if (r->kube_list)
		list = r->kube_list(r, list);
	api_reply_json(r, 200, list);
}

/* ---------------------------------------------------------------- query parameters */

struct params_check {
	const char *const *allowed;
	char bad[72];
};

static enum MHD_Result params_iter(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct params_check *c = cls;
	for (const char *const *a = c->allowed; *a; a++)
		if (strcmp(*a, key) == 0)
			return MHD_YES;
	snprintf(c->bad, sizeof(c->bad), "%.64s", key);
	return MHD_NO;
}

int api_params_check(struct api_req *r, const char *const *allowed)
{
	struct params_check c = {allowed, ""};
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, params_iter, &c);
	if (!c.bad[0])
		return 0;
	api_problem_ext(r, 400, json_pack("{s:s}", "parameter", c.bad),
			"unknown query parameter %s", c.bad);
	return -1;
}

int api_text_member(struct api_req *r, const json_t *body, const char *field, size_t max,
		    int required, const char **out)
{
	json_t *v = json_object_get(body, field);
	char why[160];
	*out = NULL;
	if (!v && !required)
		return 0;
	if (!json_is_string(v)) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", field), "%s: %s", field,
				v ? "expected a string" : "required");
		return -1;
	}
	if (jsonx_text_check(json_string_value(v), json_string_length(v), max, why, sizeof(why)) <
	    0) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", field), "%s: %s", field, why);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}
