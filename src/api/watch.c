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
 * The content reader never blocks: the server's poll threads serve every connection (see
 * server.c). When a stream has nothing buffered, its reader parks the watch with the hub and
 * suspends the connection (MHD_suspend_connection, allowed from a content reader). The hub's
 * thread fills the buffers of parked watches from the store (the initial listing a page at a
 * time, then the change feed) and resumes a connection once it has something to send; a second
 * thread turns store_wait into wake-ups of the hub. The hub also resumes a parked watch when its
 * client has gone (POLLRDHUP on the socket, checked every 250 ms; a suspended connection is
 * not polled by libmicrohttpd), and when the server stops (api_watch_hub_stop), so streams end
 * promptly in both cases.
 *
 * Ownership: a watch is either with the connection (its reader runs on a poll thread) or parked
 * with the hub (the connection is suspended); the hub mutex hands it over. A connection is
 * suspended under the hub mutex before the hub can see it, so the hub only ever resumes a
 * suspended connection, and a suspended connection is never completed (freed) by MHD. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "store/store.h"
#include "base/banned.h"

#define WATCH_WAIT_MS 250 /* hub: store_wait slice, client-gone check period */
#define WATCH_BOOKMARK_MS 15000
/* Larger than STORE_MAX_TXN_OPS, so one revision never spans two reads. */
#define WATCH_BATCH (2 * store_max_txn_ops(st)) /* st: the store of the reading function */
#define WATCH_LIST_PAGE 500
#define WATCH_CACHE_MAX 8192 /* rendered lines kept for one hub pass */

struct watch {
	struct api_server *srv;
	struct api_req *r; /* the request; valid while MHD calls the reader */
	char *prefix;
	char *kind;
	api_keep_fn keep;
	void *arg;
	api_render_fn render;
	api_text_fn text; /* NULL, or render's bytes without a tree (never for kube watches) */
	int64_t rev;      /* everything up to rev has been sent */
	int listing;      /* still sending the initial objects */
	char cursor[STORE_MAX_KEY + 1];
	int done;
	int gone;        /* the client closed its end */
	int64_t last_ms; /* monotonic ms of the last line (bookmarks after 15 s idle) */
	int fd;          /* the connection's socket (client-gone checks) */
	struct buf pending;
	size_t off;
	struct watch *next; /* in the hub's parked list */
	/* With a filter (keep): the keys whose last state sent matched it, so that an object
	 * that stops matching is sent as DELETED and one that starts as ADDED (Kubernetes'
	 * watch semantics; issue 13). */
	int track;
	struct hmap matched;
};

struct watch_hub {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct watch *parked; /* suspended connections, the hub's to fill */
	int closed;           /* stopping: park nothing more */
	int kick;             /* a watch was parked, or the store moved */
	int64_t store_rev;    /* latest revision the notifier saw */
	int store_closed;
	pthread_t filler, notifier;
	int started;
	int stopped; /* api_watch_hub_stop ran: threads joined, memory kept until hub_free */
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The event line {"type","object"}\n for obj (stolen; through the request's kube_obj hook
 * when set), malloc'd; NULL when the hook dropped it. */
static char *make_line(struct watch *w, const char *type, json_t *obj)
{
	if (w->r->kube_obj) {
		obj = w->r->kube_obj(w->r, type, obj);
		if (!obj)
			return NULL;
	}
	json_t *line = json_pack("{s:s,s:o}", "type", type, "object", obj);
	char *s = jsonx_dumps(line);
	json_decref(line);
	size_t n = strlen(s);
	char *out = xmalloc(n + 2);
	memcpy(out, s, n);
	memcpy(out + n, "\n", 2);
	free(s);
	return out;
}

static void put_line(struct watch *w, const char *line)
{
	w->last_ms = mono_ms();
	if (buf_puts(&w->pending, line) < 0) {
		log_warn("watch line dropped: buffer full prefix=%s", w->prefix);
		w->done = 1;
	}
}

static void emit(struct watch *w, const char *type, json_t *obj)
{
	char *line = make_line(w, type, obj);
	if (line)
		put_line(w, line);
	free(line);
}

static json_t *minimal_obj(struct watch *w, const char *key, int64_t rev)
{
	json_t *o = json_pack("{s:s,s:{s:s}}", "kind", w->kind, "metadata", "name",
			      key + strlen(w->prefix));
	api_set_rv(o, rev);
	return o;
}

/* Sends the stored document value of key (revision rev) as an event. listing: part of the
 * initial ADDED list; created: the change created the key. With a filter, the matched set
 * decides: a match not yet sent is ADDED, a match sent before MODIFIED, a document that no
 * longer matches DELETED (its new state), one that never matched nothing. */
static void emit_doc(struct watch *w, int listing, int created, const char *key, const char *value,
		     int64_t rev, struct hmap *cache)
{
	json_t *doc = NULL;
	if (w->keep && jsonx_parse(value, strlen(value), &doc, NULL, 0) < 0) {
		log_warn("watch skips corrupt document key=%s", key);
		return;
	}
	int m = !w->keep || w->keep(w->r, doc, w->arg);
	int was = w->track && hmap_get(&w->matched, key) != NULL;
	const char *type = NULL;
	if (listing)
		type = m ? "ADDED" : NULL;
	else if (!w->track)
		type = created ? "ADDED" : "MODIFIED";
	else if (m)
		type = was ? "MODIFIED" : "ADDED";
	else if (was)
		type = "DELETED";
	if (w->track) {
		if (m)
			hmap_put(&w->matched, key, (void *)1);
		else if (was)
			hmap_remove(&w->matched, key);
	}
	if (!type) {
		json_decref(doc);
		return;
	}
	/* The same change goes to every watch of the same shape: rendered once per hub pass. */
	char ck[STORE_MAX_KEY + 160];
	int n = snprintf(ck, sizeof(ck), "%p|%p|%p|%d|%s|%lld|%s", (void *)w->render,
			 (void *)w->r->kube_obj, (const void *)w->r->kkind, w->r->ktable, type,
			 (long long)rev, key);
	int cacheable = cache && n > 0 && (size_t)n < sizeof(ck);
	const char *hit = cacheable ? hmap_get(cache, ck) : NULL;
	if (hit) {
		put_line(w, hit);
		json_decref(doc);
		return;
	}
	if (w->text) {
		/* {"type":"T","object": the text }: what make_line dumps for the tree */
		struct buf b;
		buf_init(&b, 0);
		struct store_kv kv = {(char *)key, (char *)value, 0, rev};
		if (buf_printf(&b, "{\"type\":\"%s\",\"object\":", type) == 0 &&
		    w->text(w->r, &kv, &b) == 0 && buf_puts(&b, "}\n") == 0) {
			json_decref(doc);
			char *line = buf_detach(&b, NULL);
			put_line(w, line);
			if (cacheable && cache->count < WATCH_CACHE_MAX)
				hmap_put(cache, ck, line);
			else
				free(line);
			return;
		}
		buf_release(&b);
	}
	if (!doc && jsonx_parse(value, strlen(value), &doc, NULL, 0) < 0) {
		log_warn("watch skips corrupt document key=%s", key);
		return;
	}
	json_t *obj = w->render(w->r, doc, rev);
	json_decref(doc);
	if (!obj) {
		log_warn("watch cannot render key=%s", key);
		return;
	}
	char *line = make_line(w, type, obj);
	if (!line)
		return;
	put_line(w, line);
	if (cacheable && cache->count < WATCH_CACHE_MAX)
		hmap_put(cache, ck, line);
	else
		free(line);
}

static void fill_list(struct watch *w, struct hmap *cache)
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
		emit_doc(w, 1, 1, kvs[i].key, kvs[i].value, kvs[i].mod_revision, cache);
	if (n)
		snprintf(w->cursor, sizeof(w->cursor), "%s", kvs[n - 1].key);
	if (!more || !n)
		w->listing = 0;
	store_kv_array_free(kvs, n);
}

static int fill_changes(struct watch *w, struct hmap *cache)
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
			if (!w->track || hmap_remove(&w->matched, e->key))
				emit(w, "DELETED", minimal_obj(w, e->key, e->revision));
		} else {
			emit_doc(w, 0, e->create_revision == e->revision, e->key, e->value,
				 e->revision, cache);
		}
		w->rev = e->revision;
	}
	if (n < WATCH_BATCH && cur > w->rev)
		w->rev = cur; /* nothing under the prefix up to cur */
	store_event_array_free(evs, n);
	return 0;
}

/* Hub thread: makes progress on a parked watch. Returns 1 when the connection should be
 * resumed (something to send, or the stream is over). */
static int watch_fill(struct watch *w, int64_t store_rev, int64_t now, struct hmap *cache)
{
	if (w->gone || atomic_load(&w->srv->stopping)) {
		w->done = 1;
		return 1;
	}
	if (w->r->kdeadline_ms && now >= w->r->kdeadline_ms) {
		w->done = 1; /* timeoutSeconds: the client re-watches */
		return 1;
	}
	if (w->listing) {
		fill_list(w, cache);
		return w->pending.len || w->done || !w->listing;
	}
	if (store_rev > w->rev) {
		int rc = fill_changes(w, cache);
		if (rc == FP_ECOMPACTED) {
			/* (kube_obj turns it into a Kubernetes Status, reason Expired) */
			json_t *p = json_pack("{s:s,s:s,s:i,s:s}", "type", API_PROBLEM_BASE "gone",
					      "title", "Gone", "status", 410, "detail",
					      "the watch fell behind the compacted revision; "
					      "list again and watch from its resourceVersion");
			emit(w, "ERROR", p);
			w->done = 1;
		} else if (rc < 0) {
			w->done = 1;
		}
		if (w->pending.len || w->done)
			return 1;
	}
	if (now - w->last_ms >= WATCH_BOOKMARK_MS && w->r->kube && !w->r->kbookmarks) {
		/* Kubernetes clients get bookmarks only when they ask; the others get a blank
		 * line (whitespace between JSON values, which their decoder skips), so the stream
		 * shows life and a vanished client is noticed */
		w->last_ms = now;
		if (buf_puts(&w->pending, "\n") < 0)
			w->done = 1;
		return 1;
	}
	if (now - w->last_ms >= WATCH_BOOKMARK_MS) {
		json_t *o = json_pack("{s:s,s:{}}", "kind", w->kind, "metadata");
		api_set_rv(o, w->rev);
		emit(w, "BOOKMARK", o);
		return 1;
	}
	return 0;
}

/* Marks parked watches whose client closed its end (a suspended socket is not polled by MHD,
 * so without this a vanished client would be noticed only at the next bookmark). */
static void check_gone(struct watch *list)
{
	size_t n = 0;
	for (struct watch *w = list; w; w = w->next)
		n++;
	if (!n)
		return;
	struct pollfd *fds = xcalloc(n, sizeof(*fds));
	size_t i = 0;
	for (struct watch *w = list; w; w = w->next, i++) {
		fds[i].fd = w->fd;
		fds[i].events = POLLRDHUP;
	}
	if (poll(fds, n, 0) > 0) {
		i = 0;
		for (struct watch *w = list; w; w = w->next, i++)
			if (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
				w->gone = 1;
	}
	free(fds);
}

static void *hub_filler(void *arg)
{
	struct api_server *srv = arg;
	struct watch_hub *h = srv->hub;
	int64_t last_gone_check = 0;
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->kick && !h->closed && !h->parked)
			pthread_cond_wait(&h->cv, &h->mu);
		if (!h->kick && !h->closed) {
			/* Only parked watches with nothing to do: sleep one slice (bookmarks and
			 * client-gone checks), unless kicked. */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += WATCH_WAIT_MS * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&h->cv, &h->mu, &ts);
		}
		h->kick = 0;
		struct watch *list = h->parked;
		h->parked = NULL;
		int closed = h->closed;
		int64_t store_rev = store_revision(srv->cfg.store);
		pthread_mutex_unlock(&h->mu);

		/* The watches in list are the hub's alone: their connections are suspended. */
		int64_t now = mono_ms();
		if (now - last_gone_check >= WATCH_WAIT_MS) {
			last_gone_check = now;
			check_gone(list);
		}
		struct watch *keep = NULL, *ready = NULL;
		struct hmap cache;
		hmap_init(&cache);
		while (list) {
			struct watch *w = list;
			list = w->next;
			int go = closed ? (w->done = 1) : watch_fill(w, store_rev, now, &cache);
			struct watch **to = go ? &ready : &keep;
			w->next = *to;
			*to = w;
		}
		for (struct hmap_iter it = hmap_iter_start(&cache); hmap_iter_next(&it);)
			free(it.e->value);
		hmap_release(&cache);

		pthread_mutex_lock(&h->mu);
		while (ready) {
			struct watch *w = ready;
			ready = w->next;
			w->next = NULL;
			MHD_resume_connection(w->r->conn); /* w is the connection's again */
		}
		while (keep) {
			struct watch *w = keep;
			keep = w->next;
			w->next = h->parked;
			h->parked = w;
		}
		if (closed && !h->parked)
			break;
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* Turns store revisions into kicks of the filler. */
static void *hub_notifier(void *arg)
{
	struct api_server *srv = arg;
	struct watch_hub *h = srv->hub;
	int64_t seen = store_revision(srv->cfg.store);
	for (;;) {
		pthread_mutex_lock(&h->mu);
		int closed = h->closed;
		pthread_mutex_unlock(&h->mu);
		if (closed)
			break;
		int rc = store_wait(srv->cfg.store, seen, WATCH_WAIT_MS);
		if (rc == FP_ECLOSED) {
			pthread_mutex_lock(&h->mu);
			h->store_closed = 1;
			h->kick = 1;
			pthread_cond_signal(&h->cv);
			pthread_mutex_unlock(&h->mu);
			break;
		}
		if (rc != 0)
			continue;
		seen = store_revision(srv->cfg.store);
		pthread_mutex_lock(&h->mu);
		h->store_rev = seen;
		if (h->parked) {
			h->kick = 1;
			pthread_cond_signal(&h->cv);
		}
		pthread_mutex_unlock(&h->mu);
	}
	return NULL;
}

int api_watch_hub_start(struct api_server *srv, char *err, size_t errlen)
{
	struct watch_hub *h = xcalloc(1, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->store_rev = store_revision(srv->cfg.store);
	srv->hub = h;
	if (pthread_create(&h->filler, NULL, hub_filler, srv) != 0)
		goto fail;
	if (pthread_create(&h->notifier, NULL, hub_notifier, srv) != 0) {
		pthread_mutex_lock(&h->mu);
		h->closed = 1;
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->filler, NULL);
		goto fail;
	}
	h->started = 1;
	return 0;
fail:
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
	srv->hub = NULL;
	return fp_errf(FP_EIO, err, errlen, "api: cannot start the watch threads");
}

void api_watch_hub_stop(struct api_server *srv)
{
	struct watch_hub *h = srv->hub;
	if (!h || h->stopped)
		return;
	pthread_mutex_lock(&h->mu);
	h->closed = 1;
	h->kick = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	/* The filler resumes every parked watch before it returns. A reader that runs after this
	 * sees closed under the mutex and ends its stream: nothing parks again. */
	pthread_join(h->filler, NULL);
	pthread_join(h->notifier, NULL);
	h->stopped = 1;
}

void api_watch_hub_free(struct api_server *srv)
{
	struct watch_hub *h = srv->hub;
	if (!h)
		return;
	api_watch_hub_stop(srv);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
	srv->hub = NULL;
}

/* Content reader (a poll thread): sends what is buffered; with nothing buffered, parks the
 * watch with the hub and suspends the connection. Never blocks. */
static ssize_t watch_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct watch *w = cls;
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
	struct watch_hub *h = w->srv->hub;
	if (w->done || !h || atomic_load(&w->srv->stopping))
		return MHD_CONTENT_READER_END_OF_STREAM;
	pthread_mutex_lock(&h->mu);
	if (h->closed || h->store_closed) {
		pthread_mutex_unlock(&h->mu);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	if (w->fd < 0) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(w->r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		w->fd = ci ? ci->connect_fd : -1;
	}
	/* Suspended before the hub can see it (the hub resumes only suspended connections). */
	MHD_suspend_connection(w->r->conn);
	w->next = h->parked;
	h->parked = w;
	h->kick = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return 0; /* with the connection suspended: no busy loop */
}

static void watch_free(void *cls)
{
	struct watch *w = cls;
	atomic_fetch_sub(&w->srv->live_watches, 1);
	buf_release(&w->pending);
	hmap_release(&w->matched);
	free(w->prefix);
	free(w->kind);
	free(w);
}

void api_watch(struct api_req *r, const char *prefix, const char *kind, api_keep_fn keep, void *arg,
	       api_render_fn render)
{
	api_watch_text(r, prefix, kind, keep, arg, render, NULL);
}

void api_watch_text(struct api_req *r, const char *prefix, const char *kind, api_keep_fn keep,
		    void *arg, api_render_fn render, api_text_fn text)
{
	int64_t from = 0;
	const char *rv = api_query(r, "resourceVersion");
	if (rv && strcmp(rv, "0") != 0 && api_rv_parse_str(rv, &from) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "resourceVersion"),
				"resourceVersion: expected a revision number");
		return;
	}
	struct store *st = r->srv->cfg.store;
	/* A revision the store has not reached: a moment's grace for a change feed that lags a
	 * list read from elsewhere (etcd), then an answer - never a watch that waits on nothing
	 * (issue 16 item 8). */
	if (from && from > store_revision(st) && store_wait(st, from - 1, 1000) < 0 &&
	    from > store_revision(st)) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "resourceVersion"),
				"resourceVersion %lld is newer than the store's revision %lld; "
				"watch from a list's resourceVersion",
				(long long)from, (long long)store_revision(st));
		return;
	}
	if (from && from < store_compacted_revision(st) && !r->kube) {
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
	w->text = r->kube_obj ? NULL : text;
	w->rev = from;
	w->listing = from == 0;
	w->fd = -1;
	w->track = keep != NULL;
	hmap_init(&w->matched);
	w->last_ms = mono_ms();
	buf_init(&w->pending, 0);
	if (from && from < store_compacted_revision(st)) {
		/* Kubernetes clients expect the stream to start and carry an ERROR 410 (kube.c
		 * makes the Status); kubectl then lists again */
		json_t *p = json_pack("{s:s,s:s,s:i,s:s}", "type", API_PROBLEM_BASE "gone", "title",
				      "Gone", "status", 410, "detail",
				      api_printf(r, "too old resource version: %lld (%lld)",
						 (long long)from,
						 (long long)store_compacted_revision(st)));
		emit(w, "ERROR", p);
		w->done = 1;
	} else if (from && w->track) {
		/* Replay from N with a filter: what matches now is taken as what the client
		 * holds (it listed at N a moment ago), so leaving the filter is DELETED. */
		char cursor[STORE_MAX_KEY + 1] = "";
		for (;;) {
			struct store_kv *kvs = NULL;
			size_t n = 0;
			int64_t rev = 0;
			int more = 0;
			if (store_list(st, prefix, cursor, WATCH_LIST_PAGE, &kvs, &n, &rev, &more) <
			    0)
				break;
			for (size_t i = 0; i < n; i++) {
				json_t *doc = NULL;
				if (jsonx_parse(kvs[i].value, strlen(kvs[i].value), &doc, NULL,
						0) == 0 &&
				    keep(r, doc, arg))
					hmap_put(&w->matched, kvs[i].key, (void *)1);
				json_decref(doc);
			}
			if (n)
				snprintf(cursor, sizeof(cursor), "%s", kvs[n - 1].key);
			store_kv_array_free(kvs, n);
			if (!more || !n)
				break;
		}
	}
	atomic_fetch_add(&w->srv->live_watches, 1);
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024,
								      watch_read, w, watch_free);
	if (!resp) {
		watch_free(w);
		api_problem(r, 500, "cannot start the watch stream");
		return;
	}
	/* Kubernetes clients want application/json (one event per line, recipe section 5) */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				r->kube ? "application/json" : "application/x-ndjson");
	r->stream = resp;
	r->status = 200;
}
