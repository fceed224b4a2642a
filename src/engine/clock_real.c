/* clock_real.c - the kernel-backed clock of `fleetplane serve` and the only file in the tree that
 * asks the kernel for the time (DESIGN.md principle 6): now_ms from CLOCK_MONOTONIC, wall_ms
 * from CLOCK_REALTIME, sleep through nanosleep(2). Timers live in a binary min-heap ordered by
 * (due time, insertion sequence) served by one thread that waits on a condition variable bound
 * to CLOCK_MONOTONIC and runs each due callback with the lock released. */
#include "engine/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/banned.h"

/* about 292 million years / 1000: keeps now + delay far from INT64_MAX */
#define CLOCK_MAX_DELAY_MS (INT64_MAX / 1024)

struct rtimer {
	int64_t at;
	uint64_t id; /* also insertion order */
	fp_timer_fn fn;
	void *arg;
};

struct clock_real {
	struct fp_clock base; /* first */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int stop;
	uint64_t next_id;
	struct rtimer *heap;
	size_t n, alloc;
};

static const struct fp_clock_ops clock_real_ops;

static struct clock_real *to_real(struct fp_clock *c)
{
	BUG_ON(!c || c->ops != &clock_real_ops);
	return (struct clock_real *)c;
}

static int64_t ts_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rt_less(const struct rtimer *a, const struct rtimer *b)
{
	return a->at < b->at || (a->at == b->at && a->id < b->id);
}

static void heap_swap(struct rtimer *h, size_t i, size_t j)
{
	struct rtimer t = h[i];
	h[i] = h[j];
	h[j] = t;
}

static void sift_up(struct rtimer *h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!rt_less(&h[i], &h[p]))
			break;
		heap_swap(h, i, p);
		i = p;
	}
}

static void sift_down(struct rtimer *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && rt_less(&h[l], &h[m]))
			m = l;
		if (r < n && rt_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
}

static void heap_remove_at(struct clock_real *r, size_t i)
{
	r->n--;
	if (i == r->n)
		return;
	r->heap[i] = r->heap[r->n];
	sift_down(r->heap, r->n, i);
	sift_up(r->heap, i);
}

static int64_t cr_now(struct fp_clock *c)
{
	(void)c;
	return ts_ms(CLOCK_MONOTONIC);
}

static int64_t cr_wall(struct fp_clock *c)
{
	(void)c;
	return ts_ms(CLOCK_REALTIME);
}

static void cr_sleep(struct fp_clock *c, int64_t ms)
{
	(void)c;
	if (ms <= 0)
		return;
	struct timespec req = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}, rem;
	while (nanosleep(&req, &rem) != 0 && errno == EINTR)
		req = rem;
}

static uint64_t cr_after(struct fp_clock *c, int64_t delay_ms, fp_timer_fn fn, void *arg)
{
	struct clock_real *r = to_real(c);
	BUG_ON(!fn);
	if (delay_ms < 0)
		delay_ms = 0;
	if (delay_ms > CLOCK_MAX_DELAY_MS)
		delay_ms = CLOCK_MAX_DELAY_MS;
	int64_t at = ts_ms(CLOCK_MONOTONIC) + delay_ms;
	pthread_mutex_lock(&r->mu);
	ALLOC_GROW(r->heap, r->n + 1, r->alloc);
	uint64_t id = ++r->next_id;
	r->heap[r->n] = (struct rtimer){.at = at, .id = id, .fn = fn, .arg = arg};
	sift_up(r->heap, r->n);
	r->n++;
	if (r->heap[0].id == id) /* new earliest: the thread must re-arm its wait */
		pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return id;
}

static int cr_cancel(struct fp_clock *c, uint64_t id)
{
	struct clock_real *r = to_real(c);
	int rc = FP_ENOTFOUND;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n; i++) {
		if (r->heap[i].id == id) {
			heap_remove_at(r, i);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

static void *timer_main(void *arg)
{
	struct clock_real *r = arg;
	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		if (r->n == 0) {
			pthread_cond_wait(&r->cv, &r->mu);
			continue;
		}
		int64_t now = ts_ms(CLOCK_MONOTONIC);
		if (r->heap[0].at > now) {
			int64_t at = r->heap[0].at;
			struct timespec ts = {.tv_sec = at / 1000,
					      .tv_nsec = (at % 1000) * 1000000L};
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
			continue;
		}
		struct rtimer t = r->heap[0];
		heap_remove_at(r, 0);
		pthread_mutex_unlock(&r->mu);
		t.fn(t.arg);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static void cr_free(struct fp_clock *c)
{
	struct clock_real *r = to_real(c);
	BUG_ON(pthread_equal(pthread_self(), r->thread));
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r->heap);
	free(r);
}

static const struct fp_clock_ops clock_real_ops = {
	.now_ms = cr_now,
	.wall_ms = cr_wall,
	.sleep_ms = cr_sleep,
	.after = cr_after,
	.cancel = cr_cancel,
	.free = cr_free,
};

struct fp_clock *clock_real_new(void)
{
	struct clock_real *r = xcalloc(1, sizeof(*r));
	r->base.ops = &clock_real_ops;
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&r->thread, NULL, timer_main, r);
	BUG_ON(rc != 0);
	pthread_setname_np(r->thread, "fp-timers");
	return &r->base;
}
