/* clock_virtual.c - the manual clock behind `fleetplane sim` and every timing test (DESIGN.md
 * principle 6). Time is a counter that moves only when someone advances it; timers sit in a
 * binary min-heap ordered by (due time, insertion sequence) and fire on the advancing thread,
 * one at a time, with the clock lock released so a callback may add or cancel timers. Given the
 * same calls, two runs fire the same callbacks at the same virtual times. */
#include "engine/clock.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/banned.h"

/* about 292 million years / 1000: keeps now + delay far from INT64_MAX */
#define CLOCK_MAX_DELAY_MS (INT64_MAX / 1024)

struct vtimer {
	int64_t at;
	uint64_t seq; /* insertion order, breaks ties; also the timer id */
	fp_timer_fn fn;
	void *arg;
};

struct clock_virtual {
	struct fp_clock base; /* first: (struct fp_clock *) casts to and from this */
	pthread_mutex_t mu;
	int64_t now;
	int64_t start_wall;
	uint64_t next_seq;
	struct vtimer *heap;
	size_t n, alloc;
};

static const struct fp_clock_ops clock_virtual_ops;

static struct clock_virtual *to_virtual(struct fp_clock *c)
{
	BUG_ON(!c || c->ops != &clock_virtual_ops);
	return (struct clock_virtual *)c;
}

static int vt_less(const struct vtimer *a, const struct vtimer *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_swap(struct vtimer *h, size_t i, size_t j)
{
	struct vtimer t = h[i];
	h[i] = h[j];
	h[j] = t;
}

static void sift_up(struct vtimer *h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!vt_less(&h[i], &h[p]))
			break;
		heap_swap(h, i, p);
		i = p;
	}
}

static void sift_down(struct vtimer *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && vt_less(&h[l], &h[m]))
			m = l;
		if (r < n && vt_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
}

static void heap_remove_at(struct clock_virtual *v, size_t i)
{
	v->n--;
	if (i == v->n)
		return;
	v->heap[i] = v->heap[v->n];
	sift_down(v->heap, v->n, i);
	sift_up(v->heap, i);
}

static int64_t cv_now(struct fp_clock *c)
{
	struct clock_virtual *v = to_virtual(c);
	pthread_mutex_lock(&v->mu);
	int64_t t = v->now;
	pthread_mutex_unlock(&v->mu);
	return t;
}

static int64_t cv_wall(struct fp_clock *c)
{
	struct clock_virtual *v = to_virtual(c);
	pthread_mutex_lock(&v->mu);
	int64_t t = v->start_wall + v->now;
	pthread_mutex_unlock(&v->mu);
	return t;
}

void clock_virtual_step_wall(struct fp_clock *c, int64_t delta_ms)
{
	struct clock_virtual *v = to_virtual(c);
	pthread_mutex_lock(&v->mu);
	v->start_wall += delta_ms;
	pthread_mutex_unlock(&v->mu);
}

static uint64_t cv_after(struct fp_clock *c, int64_t delay_ms, fp_timer_fn fn, void *arg)
{
	struct clock_virtual *v = to_virtual(c);
	BUG_ON(!fn);
	if (delay_ms < 0)
		delay_ms = 0;
	if (delay_ms > CLOCK_MAX_DELAY_MS)
		delay_ms = CLOCK_MAX_DELAY_MS;
	pthread_mutex_lock(&v->mu);
	ALLOC_GROW(v->heap, v->n + 1, v->alloc);
	uint64_t id = ++v->next_seq;
	v->heap[v->n] = (struct vtimer){.at = v->now + delay_ms, .seq = id, .fn = fn, .arg = arg};
	sift_up(v->heap, v->n);
	v->n++;
	pthread_mutex_unlock(&v->mu);
	return id;
}

static int cv_cancel(struct fp_clock *c, uint64_t id)
{
	struct clock_virtual *v = to_virtual(c);
	int rc = FP_ENOTFOUND;
	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < v->n; i++) {
		if (v->heap[i].seq == id) {
			heap_remove_at(v, i);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

/* Fire the earliest timer if it is due at or before target; returns 1 if one ran. */
static int fire_one(struct clock_virtual *v, int64_t target)
{
	pthread_mutex_lock(&v->mu);
	if (v->n == 0 || v->heap[0].at > target) {
		pthread_mutex_unlock(&v->mu);
		return 0;
	}
	struct vtimer t = v->heap[0];
	heap_remove_at(v, 0);
	if (t.at > v->now)
		v->now = t.at;
	pthread_mutex_unlock(&v->mu);
	t.fn(t.arg);
	return 1;
}

size_t clock_virtual_advance(struct fp_clock *c, int64_t ms)
{
	struct clock_virtual *v = to_virtual(c);
	if (ms < 0)
		ms = 0;
	pthread_mutex_lock(&v->mu);
	int64_t target = v->now + ms;
	pthread_mutex_unlock(&v->mu);
	size_t fired = 0;
	while (fire_one(v, target))
		fired++;
	pthread_mutex_lock(&v->mu);
	if (v->now < target)
		v->now = target;
	pthread_mutex_unlock(&v->mu);
	return fired;
}

static void cv_sleep(struct fp_clock *c, int64_t ms)
{
	clock_virtual_advance(c, ms);
}

int clock_virtual_next_timer(struct fp_clock *c, int64_t *at_ms)
{
	struct clock_virtual *v = to_virtual(c);
	int rc = FP_ENOTFOUND;
	pthread_mutex_lock(&v->mu);
	if (v->n > 0) {
		*at_ms = v->heap[0].at;
		rc = 0;
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

size_t clock_virtual_pending(struct fp_clock *c)
{
	struct clock_virtual *v = to_virtual(c);
	pthread_mutex_lock(&v->mu);
	size_t n = v->n;
	pthread_mutex_unlock(&v->mu);
	return n;
}

size_t clock_virtual_run_until_idle(struct fp_clock *c, int64_t max_ms)
{
	struct clock_virtual *v = to_virtual(c);
	if (max_ms < 0)
		max_ms = 0;
	pthread_mutex_lock(&v->mu);
	int64_t limit = v->now + max_ms;
	pthread_mutex_unlock(&v->mu);
	size_t fired = 0;
	while (fire_one(v, limit))
		fired++;
	return fired;
}

static void cv_free(struct fp_clock *c)
{
	struct clock_virtual *v = to_virtual(c);
	pthread_mutex_destroy(&v->mu);
	free(v->heap);
	free(v);
}

static const struct fp_clock_ops clock_virtual_ops = {
	.now_ms = cv_now,
	.wall_ms = cv_wall,
	.sleep_ms = cv_sleep,
	.after = cv_after,
	.cancel = cv_cancel,
	.free = cv_free,
};

struct fp_clock *clock_virtual_new(int64_t start_wall_ms)
{
	struct clock_virtual *v = xcalloc(1, sizeof(*v));
	v->base.ops = &clock_virtual_ops;
	pthread_mutex_init(&v->mu, NULL);
	v->start_wall = start_wall_ms;
	return &v->base;
}
