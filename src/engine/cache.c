/* cache.c - the informer (see cache.h). One watch thread reads the store's change feed from the
 * revision of the last list, decodes /nodes/ and /operations/ documents into typed objects and
 * swaps them in under a write lock; readers take copies under the read lock. */
#include "engine/cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsontext.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/metrics.h"
#include "core/codec.h"
#include "engine/objects.h"

#define CACHE_MAX_HANDLERS 8
#define NODES_PREFIX OBJECTS_PREFIX_NODES
#define OPS_PREFIX OBJECTS_PREFIX_OPERATIONS

struct centry {
	struct node *n;
	/* The rendered public document, made on the first read and published with a
	 * compare-and-swap (readers hold only the read lock); NULL until then. */
	_Atomic(char *) json;
};

struct cache {
	struct store *store;
	pthread_rwlock_t lock;
	struct hmap nodes;                  /* name -> struct centry* */
	struct hmap ops;                    /* id -> struct operation* */
	struct hmap idx[2];                 /* site/rack value -> struct hmap* (set of names) */
	struct hmap by_phase[PHASE__COUNT]; /* set of names */
	/* Names whose newest stored document did not decode (the entry, if any, is an older
	 * revision), and 1 while a relist rebuilds the maps: cache_trusted_revision. */
	struct hmap refused;
	int relisting;
	int64_t rev;
	int synced;
	pthread_mutex_t rev_mu;
	pthread_cond_t rev_cv;
	struct {
		cache_node_fn fn;
		void *arg;
	} handlers[CACHE_MAX_HANDLERS];
	size_t nhandlers;
	pthread_t thread;
	int running;
	atomic_int stop; /* set by cache_stop, read by the watch thread */
	/* Threads that decode a node list (relist_nodes): 1 until cache_start, so virtual-time
	 * (stepped) use stays one thread and deterministic. */
	int relist_threads;
};

struct cache *cache_new(struct store *s)
{
	struct cache *c = xcalloc(1, sizeof(*c));
	c->store = s;
	pthread_rwlock_init(&c->lock, NULL);
	hmap_init(&c->nodes);
	hmap_init(&c->ops);
	hmap_init(&c->refused);
	for (int i = 0; i < 2; i++)
		hmap_init(&c->idx[i]);
	for (int i = 0; i < PHASE__COUNT; i++)
		hmap_init(&c->by_phase[i]);
	pthread_mutex_init(&c->rev_mu, NULL);
	pthread_cond_init(&c->rev_cv, NULL);
	c->relist_threads = 1;
	return c;
}

void cache_on_node(struct cache *c, cache_node_fn fn, void *arg)
{
	BUG_ON(c->nhandlers >= CACHE_MAX_HANDLERS);
	c->handlers[c->nhandlers].fn = fn;
	c->handlers[c->nhandlers].arg = arg;
	c->nhandlers++;
}

static void notify(struct cache *c, const char *node)
{
	for (size_t i = 0; i < c->nhandlers; i++)
		c->handlers[i].fn(c->handlers[i].arg, node);
}

/* ---- indexes (caller holds the write lock) ---- */

static void idx_add(struct hmap *idx, const char *value, const char *name)
{
	if (!value)
		return;
	struct hmap *set = hmap_get(idx, value);
	if (!set) {
		set = xmalloc(sizeof(*set));
		hmap_init(set);
		hmap_put(idx, value, set);
	}
	hmap_put(set, name, (void *)1);
}

static void idx_del(struct hmap *idx, const char *value, const char *name)
{
	if (!value)
		return;
	struct hmap *set = hmap_get(idx, value);
	if (!set)
		return;
	hmap_remove(set, name);
	if (set->count == 0) {
		hmap_remove(idx, value);
		hmap_release(set);
		free(set);
	}
}

static void index_node(struct cache *c, const struct node *n, int add)
{
	if (add) {
		idx_add(&c->idx[CACHE_BY_SITE], n->site, n->name);
		idx_add(&c->idx[CACHE_BY_RACK], n->rack, n->name);
		hmap_put(&c->by_phase[n->phase], n->name, (void *)1);
	} else {
		idx_del(&c->idx[CACHE_BY_SITE], n->site, n->name);
		idx_del(&c->idx[CACHE_BY_RACK], n->rack, n->name);
		hmap_remove(&c->by_phase[n->phase], n->name);
	}
}

static void centry_free(struct centry *e)
{
	if (!e)
		return;
	node_free(e->n);
	free(atomic_load(&e->json));
	free(e);
}

/* Drops a terminal operation that its node no longer references. Caller holds the lock. */
static void maybe_drop_op(struct cache *c, const char *id)
{
	if (!id)
		return;
	struct operation *op = hmap_get(&c->ops, id);
	if (!op || !op_state_terminal(op->state))
		return;
	struct centry *e = hmap_get(&c->nodes, op->node);
	if (e && e->n->operation && strcmp(e->n->operation, id) == 0)
		return;
	operation_free(hmap_remove(&c->ops, id));
}

/* Applies one node document (NULL value = deleted). Returns 1 if applied. */
/* Decodes a stored node with its inventory kept as text (node->inventory_text), which is what
 * the cache holds: the inventory is cut out of the text in one pass (base/jsontext.h) and only
 * the rest is parsed and decoded - the inventory was half of every document's parse, a deep
 * copy and a dump back to text (28 % of a 100,000-node start). A text the cut refuses is
 * decoded in full. Returns node_from_json's result; *out as it gives it. */
static int decode_cached(const char *value, int64_t rev, struct node **out, char *err,
			 size_t errlen)
{
	static const char *const drop[] = {"status.inventory", NULL};
	struct jsontext_span inv[1];
	const struct jsontext_edit ed = {.drop = drop, .dropped = inv};
	size_t len = strlen(value);
	struct buf rest;
	buf_init(&rest, 0);
	json_t *doc = NULL;
	int rc;
	/* two inventories: the full parse below refuses the duplicate, as it would any other
	 * (the list copies a decoded node's text trusted, engine/cache.h) */
	if (jsontext_rewrite(value, len, &ed, &rest, NULL, 0) == 0 && inv[0].count <= 1 &&
	    (inv[0].len == 0 || value[inv[0].off] == '{' ||
	     (inv[0].len == 4 && memcmp(value + inv[0].off, "null", 4) == 0))) {
		rc = jsonx_parse(rest.data, rest.len, &doc, err, errlen);
		if (rc == 0)
			rc = node_from_json(doc, rev, out, err, errlen);
		if (rc == 0 && inv[0].len && value[inv[0].off] == '{')
			(*out)->inventory_text = xstrndup(value + inv[0].off, inv[0].len);
	} else {
		/* not an object (node_from_json names the error), or not a text the cut takes */
		rc = jsonx_parse(value, len, &doc, err, errlen);
		if (rc == 0)
			rc = node_from_json(doc, rev, out, err, errlen);
	}
	json_decref(doc);
	buf_release(&rest);
	return rc;
}

static int apply_node(struct cache *c, const char *name, const char *value, int64_t rev)
{
	struct centry *ne = NULL;
	if (value) {
		char err[256];
		struct node *n = NULL;
		if (decode_cached(value, rev, &n, err, sizeof(err)) < 0) {
			log_warn("cache: skipping undecodable node key=%s%s rev=%lld err=%s",
				 NODES_PREFIX, name, (long long)rev, err);
			pthread_rwlock_wrlock(&c->lock);
			hmap_put(&c->refused, name, (void *)1);
			pthread_rwlock_unlock(&c->lock);
			return 0;
		}
		ne = xcalloc(1, sizeof(*ne));
		ne->n = n;
		/* The public document is rendered on the first read (cache_node_json), not on
		 * every change: during onboarding most versions of a node are never read.
		 * Keep the inventory as text: as a JSON tree per node it was most of the cache's
		 * memory. Writers that commit a cached node render it back (node_to_json). */
		if (n->inventory) {
			n->inventory_text = jsonx_dumps(n->inventory);
			json_decref(n->inventory);
			n->inventory = NULL;
		}
	}
	pthread_rwlock_wrlock(&c->lock);
	if (c->refused.count)
		hmap_remove(&c->refused, name);
	struct centry *old = ne ? hmap_put(&c->nodes, name, ne) : hmap_remove(&c->nodes, name);
	char *old_op = NULL;
	if (old) {
		index_node(c, old->n, 0);
		old_op = old->n->operation ? xstrdup(old->n->operation) : NULL;
	}
	if (ne)
		index_node(c, ne->n, 1);
	if (old_op && (!ne || !ne->n->operation || strcmp(old_op, ne->n->operation) != 0))
		maybe_drop_op(c, old_op);
	pthread_rwlock_unlock(&c->lock);
	free(old_op);
	centry_free(old);
	return 1;
}

static int apply_op(struct cache *c, const char *id, const char *value, int64_t rev,
		    char **node_out)
{
	struct operation *op = NULL;
	*node_out = NULL;
	if (value) {
		json_t *doc = NULL;
		char err[256];
		if (jsonx_parse(value, strlen(value), &doc, err, sizeof(err)) < 0 ||
		    operation_from_json(doc, rev, &op, err, sizeof(err)) < 0) {
			log_warn("cache: skipping undecodable operation key=%s%s err=%s",
				 OPS_PREFIX, id, err);
			json_decref(doc);
			return 0;
		}
		json_decref(doc);
		*node_out = xstrdup(op->node);
	}
	pthread_rwlock_wrlock(&c->lock);
	struct operation *old = op ? hmap_put(&c->ops, id, op) : hmap_remove(&c->ops, id);
	if (!*node_out && old)
		*node_out = xstrdup(old->node);
	operation_free(old);
	if (op)
		maybe_drop_op(c, id);
	pthread_rwlock_unlock(&c->lock);
	return 1;
}

static void set_rev(struct cache *c, int64_t rev)
{
	pthread_mutex_lock(&c->rev_mu);
	if (rev > c->rev)
		c->rev = rev;
	pthread_cond_broadcast(&c->rev_cv);
	pthread_mutex_unlock(&c->rev_mu);
}

/* Empties every map; relisting 1 marks a relist under way (relist clears it at its end). */
static void clear_all(struct cache *c, int relisting)
{
	pthread_rwlock_wrlock(&c->lock);
	c->relisting = relisting;
	hmap_release(&c->refused);
	hmap_init(&c->refused);
	for (struct hmap_iter it = hmap_iter_start(&c->nodes); hmap_iter_next(&it);)
		centry_free(it.e->value);
	hmap_release(&c->nodes);
	hmap_init(&c->nodes);
	for (struct hmap_iter it = hmap_iter_start(&c->ops); hmap_iter_next(&it);)
		operation_free(it.e->value);
	hmap_release(&c->ops);
	hmap_init(&c->ops);
	for (int i = 0; i < 2; i++) {
		for (struct hmap_iter it = hmap_iter_start(&c->idx[i]); hmap_iter_next(&it);) {
			hmap_release(it.e->value);
			free(it.e->value);
		}
		hmap_release(&c->idx[i]);
		hmap_init(&c->idx[i]);
	}
	for (int i = 0; i < PHASE__COUNT; i++) {
		hmap_release(&c->by_phase[i]);
		hmap_init(&c->by_phase[i]);
	}
	pthread_rwlock_unlock(&c->lock);
}

static int list_op(void *arg, const struct store_kv *kv)
{
	char *node = NULL;
	apply_op(arg, kv->key + strlen(OPS_PREFIX), kv->value, kv->mod_revision, &node);
	free(node);
	return 0;
}

/* ---- the node list decoded on several threads ----
 * Decoding (parse, node_from_json, the inventory kept as text) is nearly all of a start at
 * 100,000 nodes, and one thread did it while the others idled (docs/benchmarks.md 3c). The
 * store walk stays on the caller's thread: it reads pages with store_list and hands each page's
 * rows, in slices of RELIST_SLICE, to the workers through a bounded queue - the rows' strings
 * change hands, never copied again, and one hand-off (a mutex and a wake-up) serves a slice,
 * not a row. Each worker decodes a row and installs it under the write lock (apply_node). A
 * list holds each name once, so the order of installs does not change the result. */
#define RELIST_PAGE 2000
#define RELIST_SLICE 64
#define RELIST_QUEUE 64 /* slices */
#define RELIST_MAX_THREADS 8

struct relist_slice {
	struct store_kv *kv; /* owned: the rows and their strings */
	size_t n;
};

struct relist_q {
	struct cache *c;
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	struct relist_slice ring[RELIST_QUEUE];
	size_t head, count;
	int done;
};

static void apply_slice(struct cache *c, struct relist_slice *sl)
{
	for (size_t i = 0; i < sl->n; i++)
		apply_node(c, sl->kv[i].key + strlen(NODES_PREFIX), sl->kv[i].value,
			   sl->kv[i].mod_revision);
	store_kv_array_free(sl->kv, sl->n);
}

static void *relist_worker(void *arg)
{
	struct relist_q *q = arg;
	for (;;) {
		pthread_mutex_lock(&q->mu);
		while (q->count == 0 && !q->done)
			pthread_cond_wait(&q->not_empty, &q->mu);
		if (q->count == 0) {
			pthread_mutex_unlock(&q->mu);
			return NULL;
		}
		struct relist_slice sl = q->ring[q->head];
		q->head = (q->head + 1) % RELIST_QUEUE;
		q->count--;
		pthread_cond_signal(&q->not_full);
		pthread_mutex_unlock(&q->mu);
		apply_slice(q->c, &sl);
	}
}

static void relist_push(struct relist_q *q, struct relist_slice sl)
{
	pthread_mutex_lock(&q->mu);
	while (q->count == RELIST_QUEUE)
		pthread_cond_wait(&q->not_full, &q->mu);
	q->ring[(q->head + q->count) % RELIST_QUEUE] = sl;
	q->count++;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->mu);
}

/* Reads /nodes/ page by page (store_foreach's order and *rev: the lowest revision a page was
 * read at) and gives each page's rows to q in slices, or applies them on this thread when q is
 * NULL. Returns 0 or store_list's error. */
static int relist_walk(struct cache *c, struct relist_q *q, int64_t *rev)
{
	char *after = NULL;
	int more = 1, rc = 0;
	*rev = 0;
	while (more) {
		struct store_kv *items = NULL;
		size_t n = 0;
		int64_t at = 0;
		rc = store_list(c->store, NODES_PREFIX, after, RELIST_PAGE, &items, &n, &at, &more);
		if (rc < 0)
			break;
		if (*rev == 0 || at < *rev)
			*rev = at;
		free(after);
		after = n ? xstrdup(items[n - 1].key) : NULL;
		for (size_t i = 0; i < n; i += RELIST_SLICE) {
			size_t k = n - i < RELIST_SLICE ? n - i : RELIST_SLICE;
			struct relist_slice sl = {xmalloc(k * sizeof(*sl.kv)), k};
			memcpy(sl.kv, items + i, k * sizeof(*sl.kv)); /* the strings move */
			if (q)
				relist_push(q, sl);
			else
				apply_slice(c, &sl);
		}
		free(items); /* its strings now belong to the slices */
		if (!n)
			break;
	}
	free(after);
	return rc;
}

/* Lists /nodes/ with up to c->relist_threads decoding threads (one: on the caller's thread).
 * Same result and return as store_foreach. */
static int list_nodes(struct cache *c, int64_t *rev)
{
	int want = c->relist_threads < RELIST_MAX_THREADS ? c->relist_threads : RELIST_MAX_THREADS;
	if (want <= 1)
		return relist_walk(c, NULL, rev);
	struct relist_q *q = xcalloc(1, sizeof(*q));
	q->c = c;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	pthread_cond_init(&q->not_full, NULL);
	pthread_t th[RELIST_MAX_THREADS];
	int nth = 0;
	while (nth < want && pthread_create(&th[nth], NULL, relist_worker, q) == 0)
		nth++;
	int rc = relist_walk(c, nth > 0 ? q : NULL, rev);
	pthread_mutex_lock(&q->mu);
	q->done = 1;
	pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->mu);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_cond_destroy(&q->not_full);
	pthread_cond_destroy(&q->not_empty);
	pthread_mutex_destroy(&q->mu);
	free(q);
	return rc;
}

/* Lists one prefix at a consistent-enough revision: later changes are replayed from the feed,
 * and applying a document twice is harmless (level-triggered). */
static int list_prefix(struct cache *c, const char *prefix, int64_t *rev_out)
{
	int64_t rev = 0;
	int rc = strcmp(prefix, NODES_PREFIX) == 0
			 ? list_nodes(c, &rev)
			 : store_foreach(c->store, prefix, 2000, list_op, c, &rev);
	if (rc == 0 && rev && (*rev_out == 0 || rev < *rev_out))
		*rev_out = rev;
	return rc;
}

static int relist(struct cache *c)
{
	clear_all(c, 1);
	int64_t rev = 0;
	/* Operations first so that node handlers see their operation. */
	int rc = list_prefix(c, OPS_PREFIX, &rev);
	if (rc == 0)
		rc = list_prefix(c, NODES_PREFIX, &rev);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->rev_mu);
	c->rev = rev;
	c->synced = 1;
	pthread_cond_broadcast(&c->rev_cv);
	pthread_mutex_unlock(&c->rev_mu);
	pthread_rwlock_wrlock(&c->lock);
	c->relisting = 0;
	pthread_rwlock_unlock(&c->lock);
	char **names = NULL;
	size_t n = cache_all_node_names(c, &names);
	for (size_t i = 0; i < n; i++) {
		notify(c, names[i]);
		free(names[i]);
	}
	free(names);
	return 0;
}

/* Applies up to one batch of changes. Returns the number applied, or a negative error. */
static int sync_batch(struct cache *c)
{
	struct store_event *evs = NULL;
	size_t n = 0;
	int64_t from = cache_revision(c);
	int rc = store_changes(c->store, "", from, 1000, &evs, &n);
	if (rc == FP_ECOMPACTED) {
		log_info("cache: change feed compacted, re-listing rev=%lld", (long long)from);
		rc = relist(c);
		return rc < 0 ? rc : 1;
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const char *key = evs[i].key;
		const char *val = evs[i].type == STORE_OP_PUT ? evs[i].value : NULL;
		if (strncmp(key, NODES_PREFIX, strlen(NODES_PREFIX)) == 0) {
			const char *name = key + strlen(NODES_PREFIX);
			if (apply_node(c, name, val, evs[i].revision))
				notify(c, name);
		} else if (strncmp(key, OPS_PREFIX, strlen(OPS_PREFIX)) == 0) {
			char *node = NULL;
			if (apply_op(c, key + strlen(OPS_PREFIX), val, evs[i].revision, &node) &&
			    node)
				notify(c, node);
			free(node);
		}
		set_rev(c, evs[i].revision);
	}
	store_event_array_free(evs, n);
	return (int)n;
}

int cache_sync_now(struct cache *c)
{
	if (!c->synced) {
		int rc = relist(c);
		if (rc < 0)
			return rc;
	}
	int total = 0, n;
	while ((n = sync_batch(c)) > 0)
		total += n;
	if (n < 0)
		return n;
	/* The feed may be behind the store revision only by writes with no change rows. */
	return total;
}

static void *watch_main(void *arg)
{
	struct cache *c = arg;
	while (!c->stop) {
		int n = sync_batch(c);
		if (n < 0) {
			log_warn("cache: change feed read failed rc=%s", fp_err_name(n));
			store_wait(c->store, cache_revision(c), 200);
			continue;
		}
		if (n == 0) {
			int rc = store_wait(c->store, cache_revision(c), 500);
			if (rc == FP_ECLOSED)
				break;
		}
	}
	return NULL;
}

int cache_start(struct cache *c, char *err, size_t errlen)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	c->relist_threads = cpus > 1 ? (int)cpus : 1;
	int rc = relist(c);
	if (rc < 0)
		return fp_errf(rc, err, errlen, "initial list failed: %s", fp_err_msg(rc));
	if (pthread_create(&c->thread, NULL, watch_main, c) != 0)
		return fp_errf(FP_EIO, err, errlen, "cannot start the cache watch thread");
	pthread_setname_np(c->thread, "fp-informer");
	c->running = 1;
	return 0;
}

static void collect_nodes(struct buf *out, void *arg);

void cache_stop(struct cache *c)
{
	if (c && c->running) {
		c->stop = 1;
		pthread_join(c->thread, NULL);
		c->running = 0;
	}
}

void cache_free(struct cache *c)
{
	if (!c)
		return;
	/* a scrape after the free must not reach it (a no-op when never registered) */
	metrics_remove_collector(collect_nodes, c);
	cache_stop(c);
	clear_all(c, 0);
	hmap_release(&c->nodes);
	hmap_release(&c->ops);
	hmap_release(&c->refused);
	for (int i = 0; i < 2; i++)
		hmap_release(&c->idx[i]);
	for (int i = 0; i < PHASE__COUNT; i++)
		hmap_release(&c->by_phase[i]);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->rev_mu);
	pthread_cond_destroy(&c->rev_cv);
	free(c);
}

int cache_synced(struct cache *c)
{
	pthread_mutex_lock(&c->rev_mu);
	int s = c->synced;
	pthread_mutex_unlock(&c->rev_mu);
	return s;
}

int64_t cache_revision(struct cache *c)
{
	pthread_mutex_lock(&c->rev_mu);
	int64_t r = c->rev;
	pthread_mutex_unlock(&c->rev_mu);
	return r;
}

int cache_wait_revision(struct cache *c, int64_t rev, int timeout_ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	int rc = 0;
	pthread_mutex_lock(&c->rev_mu);
	while (c->rev < rev && rc == 0)
		rc = pthread_cond_timedwait(&c->rev_cv, &c->rev_mu, &ts);
	int ok = c->rev >= rev;
	pthread_mutex_unlock(&c->rev_mu);
	return ok ? 0 : FP_ETIMEDOUT;
}

struct node *cache_node_get(struct cache *c, const char *name)
{
	pthread_rwlock_rdlock(&c->lock);
	struct centry *e = hmap_get(&c->nodes, name);
	struct node *n = e ? node_dup(e->n) : NULL;
	pthread_rwlock_unlock(&c->lock);
	return n;
}

/* Returns the entry's rendered document, rendering it first if needed. Caller holds at least
 * the read lock. */
static const char *rendered(struct centry *e)
{
	char *j = atomic_load(&e->json);
	if (j)
		return j;
	char *mine = node_to_text(e->n, NODE_JSON_PUBLIC);
	char *expect = NULL;
	if (atomic_compare_exchange_strong(&e->json, &expect, mine))
		return mine;
	free(mine); /* another reader rendered it first */
	return expect;
}

int cache_node_json(struct cache *c, const char *name, char **json, size_t *len)
{
	int64_t rv;
	return cache_node_json_rv(c, name, json, len, &rv);
}

struct operation *cache_operation_get(struct cache *c, const char *id)
{
	pthread_rwlock_rdlock(&c->lock);
	struct operation *op = hmap_get(&c->ops, id);
	struct operation *d = op ? operation_dup(op) : NULL;
	pthread_rwlock_unlock(&c->lock);
	return d;
}

static size_t set_names(const struct hmap *set, char ***names)
{
	*names = NULL;
	if (!set || !set->count)
		return 0;
	char **out = xcalloc(set->count, sizeof(char *));
	size_t n = 0;
	for (struct hmap_iter it = hmap_iter_start(set); hmap_iter_next(&it);)
		out[n++] = xstrdup(it.e->key);
	*names = out;
	return n;
}

size_t cache_node_names(struct cache *c, enum cache_index idx, const char *value, char ***names)
{
	size_t n = 0;
	*names = NULL;
	pthread_rwlock_rdlock(&c->lock);
	if (idx == CACHE_BY_PHASE) {
		enum node_phase p;
		if (node_phase_parse(value, &p) == 0)
			n = set_names(&c->by_phase[p], names);
	} else if (idx == CACHE_BY_SITE || idx == CACHE_BY_RACK) {
		n = set_names(hmap_get(&c->idx[idx], value), names);
	}
	pthread_rwlock_unlock(&c->lock);
	return n;
}

size_t cache_all_node_names(struct cache *c, char ***names)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = set_names(&c->nodes, names);
	pthread_rwlock_unlock(&c->lock);
	return n;
}

void cache_phase_counts(struct cache *c, size_t counts[PHASE__COUNT])
{
	pthread_rwlock_rdlock(&c->lock);
	for (int i = 0; i < PHASE__COUNT; i++)
		counts[i] = c->by_phase[i].count;
	pthread_rwlock_unlock(&c->lock);
}

int cache_visit_nodes(struct cache *c, cache_visit_fn fn, void *arg)
{
	int rc = 0;
	pthread_rwlock_rdlock(&c->lock);
	for (struct hmap_iter it = hmap_iter_start(&c->nodes); rc == 0 && hmap_iter_next(&it);) {
		const struct centry *e = it.e->value;
		rc = fn(arg, e->n);
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

size_t cache_node_count(struct cache *c)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = c->nodes.count;
	pthread_rwlock_unlock(&c->lock);
	return n;
}

static void collect_nodes(struct buf *out, void *arg)
{
	struct cache *c = arg;
	size_t counts[PHASE__COUNT];
	cache_phase_counts(c, counts);
	buf_puts(out, "# HELP fleetplane_nodes Nodes by lifecycle phase.\n"
		      "# TYPE fleetplane_nodes gauge\n");
	for (int i = 0; i < PHASE__COUNT; i++)
		buf_printf(out, "fleetplane_nodes{phase=\"%s\"} %zu\n",
			   node_phase_name((enum node_phase)i), counts[i]);
}

void cache_register_metrics(struct cache *c)
{
	metrics_add_collector(collect_nodes, c);
}

int cache_node_uid(struct cache *c, const char *name, char *uid, size_t len)
{
	pthread_rwlock_rdlock(&c->lock);
	struct centry *e = hmap_get(&c->nodes, name);
	if (e)
		snprintf(uid, len, "%s", e->n->uid ? e->n->uid : "");
	pthread_rwlock_unlock(&c->lock);
	return e ? 0 : FP_ENOTFOUND;
}

int64_t cache_trusted_revision(struct cache *c)
{
	/* The revision first: a refusal recorded at or below it is in the set read after. */
	pthread_mutex_lock(&c->rev_mu);
	int64_t rev = c->synced ? c->rev : 0;
	pthread_mutex_unlock(&c->rev_mu);
	pthread_rwlock_rdlock(&c->lock);
	int ok = !c->relisting && c->refused.count == 0;
	pthread_rwlock_unlock(&c->lock);
	/* rev - 1: the events of the revision set last may not all be applied yet (one etcd
	 * transaction writes several keys at one revision) */
	return ok && rev > 0 ? rev - 1 : 0;
}

int cache_node_rev(struct cache *c, const char *name, int64_t *rev)
{
	pthread_rwlock_rdlock(&c->lock);
	struct centry *e = hmap_get(&c->nodes, name);
	if (e)
		*rev = e->n->resource_version;
	pthread_rwlock_unlock(&c->lock);
	return e ? 0 : FP_ENOTFOUND;
}

int cache_node_json_rv(struct cache *c, const char *name, char **json, size_t *len, int64_t *rv)
{
	pthread_rwlock_rdlock(&c->lock);
	struct centry *e = hmap_get(&c->nodes, name);
	if (e) {
		const char *j = rendered(e);
		*len = strlen(j);
		*json = xmalloc(*len + 1);
		memcpy(*json, j, *len + 1);
		*rv = e->n->resource_version;
	}
	pthread_rwlock_unlock(&c->lock);
	return e ? 0 : FP_ENOTFOUND;
}
