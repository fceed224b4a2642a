/* watch.c - `GET /v1/<resource>?watch=1&resourceVersion=N`: a chunked HTTP/1.1 response of
 * newline-delimited JSON events {"type":"ADDED"|"MODIFIED"|"DELETED","object":{...}} read from
 * the store's change feed (store_changes + store_wait), the Kubernetes watch model. Without a
 * resourceVersion (or with 0) the stream starts with the current objects as ADDED, then
 * follows changes after the revision the listing began at. Idle streams get a
 * {"type":"BOOKMARK","object":{"kind","metadata":{"resourceVersion"}}} line every 15 s, which
 * carries progress and lets a vanished client be noticed. A compacted start revision is
 * answered 410 Gone before the stream starts; compaction during the stream ends it with one
 * {"type":"ERROR","object":<problem 410>} line.
 *
 * The content reader blocks in store_wait for at most 250 ms at a time; that is safe only
 * because the server runs a thread per connection (see server.c), and the slices let a stream
 * end promptly when the server stops. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "store/store.h"
#include "base/banned.h"

#define WATCH_WAIT_MS 250
#define WATCH_BOOKMARK_MS 15000
/* Larger than STORE_MAX_TXN_OPS, so one revision never spans two reads. */
#define WATCH_BATCH (2 * STORE_MAX_TXN_OPS)
#define WATCH_LIST_PAGE 500

struct watch {
	struct api_server *srv;
	struct api_req *r; /* the request; valid while MHD calls the reader */
	char *prefix;
	char *kind;
	api_keep_fn keep;
	void *arg;
	api_render_fn render;
	int64_t rev;  /* everything up to rev has been sent */
	int listing;  /* still sending the initial objects */
	char cursor[STORE_MAX_KEY + 1];
	int done;
	int idle_ms;
	struct buf pending;
	size_t off;
};

static void emit(struct watch *w, const char *type, json_t *obj)
{
	json_t *line = json_pack("{s:s,s:o}", "type", type, "object", obj);
	char *s = jsonx_dumps(line);
	if (buf_puts(&w->pending, s) < 0 || buf_puts(&w->pending, "\n") < 0) {
		log_warn("watch line dropped: buffer full prefix=%s", w->prefix);
		w->done = 1;
	}
	free(s);
	json_decref(line);
}

static json_t *minimal_obj(struct watch *w, const char *key, int64_t rev)
{
	json_t *o = json_pack("{s:s,s:{s:s}}", "kind", w->kind, "metadata", "name",
			      key + strlen(w->prefix));
	api_set_rv(o, rev);
	return o;
}

static void emit_doc(struct watch *w, const char *type, const char *key, const char *value,
		     int64_t rev)
{
	json_t *doc = NULL;
	if (jsonx_parse(value, strlen(value), &doc, NULL, 0) < 0) {
		log_warn("watch skips corrupt document key=%s", key);
		return;
	}
	if (!w->keep || w->keep(w->r, doc, w->arg)) {
		json_t *obj = w->render(w->r, doc, rev);
		if (obj)
			emit(w, type, obj);
		else
			log_warn("watch cannot render key=%s", key);
	}
	json_decref(doc);
}

static void fill_list(struct watch *w)
{
	struct store_kv *kvs = NULL;
	size_t n = 0;
	int64_t rev = 0;
	int more = 0;
	int rc = store_list(w->srv->cfg.store, w->prefix, w->cursor, WATCH_LIST_PAGE, &kvs, &n,
			    &rev, &more);
	if (rc < 0) {
		w->done = 1;
		return;
	}
	if (!w->rev)
		w->rev = rev;
	for (size_t i = 0; i < n; i++)
		emit_doc(w, "ADDED", kvs[i].key, kvs[i].value, kvs[i].mod_revision);
	if (n)
		snprintf(w->cursor, sizeof(w->cursor), "%s", kvs[n - 1].key);
	if (!more || !n)
		w->listing = 0;
	store_kv_array_free(kvs, n);
}

static int fill_changes(struct watch *w)
{
	struct store *st = w->srv->cfg.store;
	int64_t cur = store_revision(st);
	struct store_event *evs = NULL;
	size_t n = 0;
	int rc = store_changes(st, w->prefix, w->rev, WATCH_BATCH, &evs, &n);
	if (rc < 0)
		return rc;
	size_t use = n;
	if (n == WATCH_BATCH) {
		/* Maybe cut inside the last revision: leave it for the next read. */
		int64_t last = evs[n - 1].revision;
		while (use > 0 && evs[use - 1].revision == last)
			use--;
		if (use == 0)
			use = n; /* cannot happen with WATCH_BATCH > STORE_MAX_TXN_OPS */
	}
	for (size_t i = 0; i < use; i++) {
		const struct store_event *e = &evs[i];
		if (e->type == STORE_OP_DELETE || !e->value) {
			emit(w, "DELETED", minimal_obj(w, e->key, e->revision));
		} else {
			emit_doc(w, e->create_revision == e->revision ? "ADDED" : "MODIFIED", e->key,
				 e->value, e->revision);
		}
		w->rev = e->revision;
	}
	if (n < WATCH_BATCH && cur > w->rev)
		w->rev = cur; /* nothing under the prefix up to cur */
	store_event_array_free(evs, n);
	return 0;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct watch *w = cls;
	for (;;) {
		if (w->off < w->pending.len) {
			size_t n = w->pending.len - w->off;
			if (n > max)
				n = max;
			memcpy(out, w->pending.data + w->off, n);
			w->off += n;
			return (ssize_t)n;
		}
		buf_reset(&w->pending);
		w->off = 0;
		if (w->done || atomic_load(&w->srv->stopping))
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (w->listing) {
			fill_list(w);
			continue;
		}
		int rc = fill_changes(w);
		if (rc == FP_ECOMPACTED) {
			json_t *p = json_pack("{s:s,s:s,s:i,s:s}", "type", API_PROBLEM_BASE "gone",
					      "title", "Gone", "status", 410, "detail",
					      "the watch fell behind the compacted revision; "
					      "list again and watch from its resourceVersion");
			emit(w, "ERROR", p);
			w->done = 1;
			continue;
		}
		if (rc < 0) {
			w->done = 1;
			continue;
		}
		if (w->pending.len) {
			w->idle_ms = 0;
			continue;
		}
		rc = store_wait(w->srv->cfg.store, w->rev, WATCH_WAIT_MS);
		if (rc == FP_ECLOSED) {
			w->done = 1;
		} else if (rc == FP_ETIMEDOUT) {
			w->idle_ms += WATCH_WAIT_MS;
			if (w->idle_ms >= WATCH_BOOKMARK_MS) {
				w->idle_ms = 0;
				json_t *o = json_pack("{s:s,s:{}}", "kind", w->kind, "metadata");
				api_set_rv(o, w->rev);
				emit(w, "BOOKMARK", o);
			}
		}
	}
}

static void watch_free(void *cls)
{
	struct watch *w = cls;
	buf_release(&w->pending);
	free(w->prefix);
	free(w->kind);
	free(w);
}

void api_watch(struct api_req *r, const char *prefix, const char *kind, api_keep_fn keep,
	       void *arg, api_render_fn render)
{
	int64_t from = 0;
	const char *rv = api_query(r, "resourceVersion");
	if (rv && strcmp(rv, "0") != 0 && api_rv_parse_str(rv, &from) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "resourceVersion"),
				"resourceVersion: expected a revision number");
		return;
	}
	struct store *st = r->srv->cfg.store;
	if (from && from < store_compacted_revision(st)) {
		api_problem(r, 410,
			    "resourceVersion %lld is older than the compacted revision %lld; list "
			    "again and watch from the list's resourceVersion",
			    (long long)from, (long long)store_compacted_revision(st));
		return;
	}
	struct watch *w = xcalloc(1, sizeof(*w));
	w->srv = r->srv;
	w->r = r;
	w->prefix = xstrdup(prefix);
	w->kind = xstrdup(kind);
	w->keep = keep;
	w->arg = arg;
	w->render = render;
	w->rev = from;
	w->listing = from == 0;
	buf_init(&w->pending, 0);
	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 32 * 1024, watch_read, w, watch_free);
	if (!resp) {
		watch_free(w);
		api_problem(r, 500, "cannot start the watch stream");
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
	r->stream = resp;
	r->status = 200;
}
