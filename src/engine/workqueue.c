/* workqueue.c - the controllers' key queue (engine/workqueue.h), after client-go's workqueue.
 * One record per distinct key lives in a base/hmap and carries every state the key is
 * in: dirty (needs processing), processing (handed to a worker), queued (dirty and not
 * processing: linked into the FIFO), waiting (in the delay min-heap ordered by due time, then
 * insertion), and its failure count. A record is freed as soon as it is in none of these states.
 *
 * Delays use at most one armed clock timer, for the heap's earliest due time. The timer
 * callback may run on another thread (real clock) while the queue is being freed, so it reaches
 * the queue only through a small reference-counted anchor whose mutex it holds while it works;
 * workqueue_free clears the anchor's pointer under that mutex before freeing, and clock_cancel
 * is never waited on, so the queue may cancel and re-arm while holding its own lock. */
#include "engine/workqueue.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/metrics.h"
#include "engine/ratelimit.h"
#include "base/banned.h"

#define NOT_WAITING SIZE_MAX

struct wq_item {
	char *key;             /* owned (the map holds its own copy) */
	struct wq_item *qnext; /* FIFO link while queued */
	unsigned dirty : 1, processing : 1;
	int failures;
	size_t heap_idx; /* NOT_WAITING unless in the delay heap */
	int64_t wait_at;
	uint64_t wait_seq;
};

struct wq_anchor {
	pthread_mutex_t mu;
	struct workqueue *wq; /* NULL once the queue is being freed */
	atomic_int refs;      /* the queue's own + one per timer context not yet consumed */
};

struct wq_timer {
	struct wq_anchor *anchor;
};

struct workqueue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *name;
	struct fp_clock *clock;
	struct fp_rng *rng;
	struct workqueue_config cfg;
	struct ratelimit_bucket bucket;

	struct hmap items; /* key -> struct wq_item * */

	struct wq_item *qhead, *qtail;
	size_t qlen;

	struct wq_item **heap;
	size_t nheap, heap_alloc;
	uint64_t next_seq;

	struct wq_anchor *anchor;
	struct wq_timer *armed; /* the timer for heap[0], or NULL */
	uint64_t armed_id;
	int64_t armed_at;

	size_t nwaiting;
	int shutting_down;

	struct metric_family *m_depth, *m_adds, *m_retries;
};

/* ---- key records ---- */

static struct wq_item *item_find(struct workqueue *wq, const char *key)
{
	return hmap_get(&wq->items, key);
}

static struct wq_item *item_get(struct workqueue *wq, const char *key)
{
	struct wq_item *it = hmap_get(&wq->items, key);
	if (it)
		return it;
	it = xcalloc(1, sizeof(*it));
	it->key = xstrdup(key);
	it->heap_idx = NOT_WAITING;
	hmap_put(&wq->items, key, it);
	return it;
}

/* Free the record if no state refers to it any more. */
static void item_maybe_release(struct workqueue *wq, struct wq_item *it)
{
	if (it->dirty || it->processing || it->heap_idx != NOT_WAITING || it->failures)
		return;
	hmap_remove(&wq->items, it->key);
	free(it->key);
	free(it);
}

/* ---- metrics ---- */

static void metric_depth(struct workqueue *wq)
{
	const char *lv[] = {wq->name};
	metric_set(wq->m_depth, lv, (double)wq->qlen);
}

static void metric_inc(struct workqueue *wq, struct metric_family *f)
{
	const char *lv[] = {wq->name};
	metric_add(f, lv, 1);
}

/* ---- FIFO ---- */

static void fifo_push(struct workqueue *wq, struct wq_item *it)
{
	it->qnext = NULL;
	if (wq->qtail)
		wq->qtail->qnext = it;
	else
		wq->qhead = it;
	wq->qtail = it;
	wq->qlen++;
	metric_depth(wq);
	pthread_cond_signal(&wq->cv);
}

static struct wq_item *fifo_pop(struct workqueue *wq)
{
	struct wq_item *it = wq->qhead;
	if (!it)
		return NULL;
	wq->qhead = it->qnext;
	if (!wq->qhead)
		wq->qtail = NULL;
	it->qnext = NULL;
	wq->qlen--;
	metric_depth(wq);
	return it;
}

/* client-go Type.Add: dedup on dirty, defer while processing. Called with wq->mu held. */
static void add_locked(struct workqueue *wq, struct wq_item *it)
{
	if (it->dirty)
		return;
	metric_inc(wq, wq->m_adds);
	it->dirty = 1;
	if (it->processing)
		return;
	fifo_push(wq, it);
}

/* ---- delay heap ---- */

static int heap_less(const struct wq_item *a, const struct wq_item *b)
{
	return a->wait_at < b->wait_at || (a->wait_at == b->wait_at && a->wait_seq < b->wait_seq);
}

static void heap_set(struct workqueue *wq, size_t i, struct wq_item *it)
{
	wq->heap[i] = it;
	it->heap_idx = i;
}

static void heap_up(struct workqueue *wq, size_t i)
{
	struct wq_item *it = wq->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(it, wq->heap[p]))
			break;
		heap_set(wq, i, wq->heap[p]);
		i = p;
	}
	heap_set(wq, i, it);
}

static void heap_down(struct workqueue *wq, size_t i)
{
	struct wq_item *it = wq->heap[i];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = l;
		if (l >= wq->nheap)
			break;
		if (r < wq->nheap && heap_less(wq->heap[r], wq->heap[l]))
			m = r;
		if (!heap_less(wq->heap[m], it))
			break;
		heap_set(wq, i, wq->heap[m]);
		i = m;
	}
	heap_set(wq, i, it);
}

static void heap_remove(struct workqueue *wq, struct wq_item *it)
{
	size_t i = it->heap_idx;
	it->heap_idx = NOT_WAITING;
	wq->nheap--;
	if (i == wq->nheap)
		return;
	struct wq_item *moved = wq->heap[wq->nheap];
	heap_set(wq, i, moved);
	heap_down(wq, i);
	heap_up(wq, moved->heap_idx);
}

/* ---- the one armed timer ---- */

static void anchor_unref(struct wq_anchor *a)
{
	if (atomic_fetch_sub(&a->refs, 1) == 1) {
		pthread_mutex_destroy(&a->mu);
		free(a);
	}
}

/* Cancel the armed timer; if it is already running, its callback frees its own context. */
static void disarm_locked(struct workqueue *wq)
{
	if (!wq->armed)
		return;
	if (clock_cancel(wq->clock, wq->armed_id) == 0) {
		free(wq->armed);
		anchor_unref(wq->anchor);
	}
	wq->armed = NULL;
}

static void timer_fire(void *arg);

/* Make sure a timer is armed for the earliest waiting key. Called with wq->mu held. */
static void arm_locked(struct workqueue *wq)
{
	if (wq->shutting_down || wq->nheap == 0) {
		disarm_locked(wq);
		return;
	}
	int64_t at = wq->heap[0]->wait_at;
	if (wq->armed && wq->armed_at <= at)
		return;
	disarm_locked(wq);
	struct wq_timer *t = xmalloc(sizeof(*t));
	t->anchor = wq->anchor;
	atomic_fetch_add(&wq->anchor->refs, 1);
	wq->armed = t;
	wq->armed_at = at;
	wq->armed_id = clock_after(wq->clock, at - clock_now_ms(wq->clock), timer_fire, t);
}

/* Move every waiting key whose time has come into the queue. Called with wq->mu held. */
static void promote_due_locked(struct workqueue *wq)
{
	int64_t now = clock_now_ms(wq->clock);
	while (wq->nheap > 0 && wq->heap[0]->wait_at <= now) {
		struct wq_item *it = wq->heap[0];
		heap_remove(wq, it);
		add_locked(wq, it);
	}
}

static void timer_fire(void *arg)
{
	struct wq_timer *t = arg;
	struct wq_anchor *a = t->anchor;
	pthread_mutex_lock(&a->mu);
	struct workqueue *wq = a->wq;
	if (wq) {
		pthread_mutex_lock(&wq->mu);
		if (wq->armed == t)
			wq->armed = NULL;
		if (!wq->shutting_down) {
			promote_due_locked(wq);
			arm_locked(wq);
		}
		pthread_mutex_unlock(&wq->mu);
	}
	pthread_mutex_unlock(&a->mu);
	free(t);
	anchor_unref(a);
}

/* Called with wq->mu held; the queue is not shutting down. */
static void add_after_locked(struct workqueue *wq, struct wq_item *it, int64_t delay_ms)
{
	if (delay_ms <= 0) {
		add_locked(wq, it);
		return;
	}
	int64_t at = clock_now_ms(wq->clock) + delay_ms;
	if (it->heap_idx != NOT_WAITING) {
		if (at >= it->wait_at)
			return; /* keep the earlier time */
		it->wait_at = at;
		it->wait_seq = ++wq->next_seq;
		heap_up(wq, it->heap_idx);
	} else {
		ALLOC_GROW(wq->heap, wq->nheap + 1, wq->heap_alloc);
		it->wait_at = at;
		it->wait_seq = ++wq->next_seq;
		heap_set(wq, wq->nheap, it);
		wq->nheap++;
		heap_up(wq, wq->nheap - 1);
	}
	arm_locked(wq);
}

/* ---- public API ---- */

struct workqueue *workqueue_new(const char *name, struct fp_clock *clock, struct fp_rng *rng,
				const struct workqueue_config *cfg)
{
	BUG_ON(!name || !*name || !clock);
	struct workqueue *wq = xcalloc(1, sizeof(*wq));
	pthread_mutex_init(&wq->mu, NULL);
	pthread_cond_init(&wq->cv, NULL);
	wq->name = xstrdup(name);
	wq->clock = clock;
	wq->rng = rng;
	hmap_init(&wq->items);
	if (cfg)
		wq->cfg = *cfg;
	struct workqueue_config *c = &wq->cfg;
	if (c->base_delay_ms <= 0)
		c->base_delay_ms = 5;
	if (c->max_delay_ms <= 0)
		c->max_delay_ms = 1000000;
	if (c->max_delay_ms < c->base_delay_ms)
		c->max_delay_ms = c->base_delay_ms;
	if (!(c->jitter > 0) || !rng)
		c->jitter = 0;
	if (c->jitter > 1)
		c->jitter = 1;
	if (c->qps == 0)
		c->qps = 10;
	if (c->burst <= 0)
		c->burst = 100;
	ratelimit_bucket_init(&wq->bucket, clock, c->qps > 0 ? c->qps : 0, c->burst);
	wq->anchor = xcalloc(1, sizeof(*wq->anchor));
	pthread_mutex_init(&wq->anchor->mu, NULL);
	wq->anchor->wq = wq;
	atomic_init(&wq->anchor->refs, 1);
	wq->m_depth = metrics_register(METRIC_GAUGE, "fleetplane_workqueue_depth",
				       "Keys queued and not yet handed to a worker.", "name", NULL,
				       0);
	wq->m_adds = metrics_register(METRIC_COUNTER, "fleetplane_workqueue_adds_total",
				      "Keys added to the queue (duplicates excluded).", "name",
				      NULL, 0);
	wq->m_retries = metrics_register(METRIC_COUNTER, "fleetplane_workqueue_retries_total",
					 "Rate-limited re-adds of keys after a failed reconcile.",
					 "name", NULL, 0);
	metric_depth(wq);
	return wq;
}

void workqueue_shutdown(struct workqueue *wq)
{
	pthread_mutex_lock(&wq->mu);
	if (!wq->shutting_down) {
		wq->shutting_down = 1;
		while (wq->nheap > 0) {
			struct wq_item *it = wq->heap[wq->nheap - 1];
			heap_remove(wq, it);
			item_maybe_release(wq, it);
		}
		disarm_locked(wq);
		pthread_cond_broadcast(&wq->cv);
	}
	pthread_mutex_unlock(&wq->mu);
}

int workqueue_shutting_down(struct workqueue *wq)
{
	pthread_mutex_lock(&wq->mu);
	int s = wq->shutting_down;
	pthread_mutex_unlock(&wq->mu);
	return s;
}

void workqueue_free(struct workqueue *wq)
{
	if (!wq)
		return;
	workqueue_shutdown(wq);
	/* After this no timer callback can reach wq; one that was running has finished. */
	pthread_mutex_lock(&wq->anchor->mu);
	wq->anchor->wq = NULL;
	pthread_mutex_unlock(&wq->anchor->mu);
	for (struct hmap_iter i = hmap_iter_start(&wq->items); hmap_iter_next(&i);) {
		struct wq_item *it = i.e->value;
		free(it->key);
		free(it);
	}
	hmap_release(&wq->items);
	free(wq->heap);
	anchor_unref(wq->anchor);
	ratelimit_bucket_release(&wq->bucket);
	pthread_cond_destroy(&wq->cv);
	pthread_mutex_destroy(&wq->mu);
	free(wq->name);
	free(wq);
}

void workqueue_add(struct workqueue *wq, const char *key)
{
	BUG_ON(!key);
	pthread_mutex_lock(&wq->mu);
	if (!wq->shutting_down)
		add_locked(wq, item_get(wq, key));
	pthread_mutex_unlock(&wq->mu);
}

void workqueue_add_after(struct workqueue *wq, const char *key, int64_t delay_ms)
{
	BUG_ON(!key);
	pthread_mutex_lock(&wq->mu);
	if (!wq->shutting_down)
		add_after_locked(wq, item_get(wq, key), delay_ms);
	pthread_mutex_unlock(&wq->mu);
}

/* min(base * 2^failures, max) without overflow. */
static int64_t backoff_ms(const struct workqueue_config *c, int failures)
{
	int64_t d = c->base_delay_ms;
	for (int i = 0; i < failures && d < c->max_delay_ms; i++)
		d = d > c->max_delay_ms / 2 ? c->max_delay_ms : d * 2;
	return d < c->max_delay_ms ? d : c->max_delay_ms;
}

int64_t workqueue_add_rate_limited(struct workqueue *wq, const char *key)
{
	BUG_ON(!key);
	pthread_mutex_lock(&wq->mu);
	if (wq->shutting_down) {
		pthread_mutex_unlock(&wq->mu);
		return FP_ECLOSED;
	}
	struct wq_item *it = item_get(wq, key);
	int64_t d = backoff_ms(&wq->cfg, it->failures);
	if (it->failures < 1000000)
		it->failures++;
	if (wq->cfg.jitter > 0)
		d += (int64_t)fp_rng_below(wq->rng, (uint64_t)((double)d * wq->cfg.jitter) + 1);
	int64_t w = ratelimit_bucket_reserve(&wq->bucket, 1);
	if (w > d)
		d = w;
	metric_inc(wq, wq->m_retries);
	add_after_locked(wq, it, d);
	pthread_mutex_unlock(&wq->mu);
	return d;
}

void workqueue_forget(struct workqueue *wq, const char *key)
{
	pthread_mutex_lock(&wq->mu);
	struct wq_item *it = item_find(wq, key);
	if (it) {
		it->failures = 0;
		item_maybe_release(wq, it);
	}
	pthread_mutex_unlock(&wq->mu);
}

int workqueue_num_requeues(struct workqueue *wq, const char *key)
{
	pthread_mutex_lock(&wq->mu);
	struct wq_item *it = item_find(wq, key);
	int n = it ? it->failures : 0;
	pthread_mutex_unlock(&wq->mu);
	return n;
}

/* Hand out the head of the FIFO. Called with wq->mu held and the FIFO non-empty. */
static const char *take_locked(struct workqueue *wq)
{
	struct wq_item *it = fifo_pop(wq);
	it->processing = 1;
	it->dirty = 0;
	return it->key;
}

int workqueue_get(struct workqueue *wq, const char **key)
{
	pthread_mutex_lock(&wq->mu);
	while (!wq->qhead && !wq->shutting_down) {
		wq->nwaiting++;
		pthread_cond_wait(&wq->cv, &wq->mu);
		wq->nwaiting--;
	}
	int rc = FP_ECLOSED;
	if (wq->qhead) {
		*key = take_locked(wq);
		rc = 0;
	}
	pthread_mutex_unlock(&wq->mu);
	return rc;
}

int workqueue_try_get(struct workqueue *wq, const char **key)
{
	pthread_mutex_lock(&wq->mu);
	int rc = wq->shutting_down ? FP_ECLOSED : FP_EAGAIN;
	if (wq->qhead) {
		*key = take_locked(wq);
		rc = 0;
	}
	pthread_mutex_unlock(&wq->mu);
	return rc;
}

int workqueue_done(struct workqueue *wq, const char *key)
{
	int rc = FP_ENOTFOUND;
	pthread_mutex_lock(&wq->mu);
	struct wq_item *it = key ? item_find(wq, key) : NULL;
	if (it && it->processing) {
		it->processing = 0;
		if (it->dirty)
			fifo_push(wq, it);
		else
			item_maybe_release(wq, it);
		rc = 0;
	}
	pthread_mutex_unlock(&wq->mu);
	return rc;
}

size_t workqueue_len(struct workqueue *wq)
{
	pthread_mutex_lock(&wq->mu);
	size_t n = wq->qlen;
	pthread_mutex_unlock(&wq->mu);
	return n;
}

size_t workqueue_nkeys(struct workqueue *wq)
{
	pthread_mutex_lock(&wq->mu);
	size_t n = wq->items.count;
	pthread_mutex_unlock(&wq->mu);
	return n;
}

size_t workqueue_nwaiting(struct workqueue *wq)
{
	pthread_mutex_lock(&wq->mu);
	size_t n = wq->nwaiting;
	pthread_mutex_unlock(&wq->mu);
	return n;
}
