/* layers: base core store engine */
/* test_workqueue.c - client-go workqueue semantics in virtual time: dedup, one worker per key
 * with dirty re-queue, delayed adds in order, per-key backoff (doubling, cap, jitter, forget),
 * the global bucket, metrics, bounded memory, shutdown; plus threaded runs (4 workers) that
 * check a key is never processed twice at once, and a real-clock delayed add. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/metrics.h"
#include "engine/clock.h"
#include "engine/workqueue.h"

static const struct workqueue_config no_bucket = {.base_delay_ms = 10,
						  .max_delay_ms = 100,
						  .qps = -1};

static double metric_of(const char *family, const char *qname)
{
	const char *lv[] = {qname};
	struct metric_family *f = metrics_register(METRIC_COUNTER, family, "", "name", NULL, 0);
	return metric_value(f, lv);
}

/* Pops with try_get and checks the key; marks it done. */
static void expect_key(struct workqueue *wq, const char *want)
{
	const char *k = NULL;
	assert_int_equal(workqueue_try_get(wq, &k), 0);
	assert_string_equal(k, want);
	assert_int_equal(workqueue_done(wq, k), 0);
}

static void test_dedup(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct workqueue *wq = workqueue_new("t_dedup", c, NULL, NULL);
	workqueue_add(wq, "a");
	workqueue_add(wq, "b");
	workqueue_add(wq, "a");
	assert_int_equal(workqueue_len(wq), 2);
	assert_int_equal(metric_of("fleetplane_workqueue_adds_total", "t_dedup"), 2.0);
	assert_int_equal(metric_of("fleetplane_workqueue_depth", "t_dedup"), 2.0);
	expect_key(wq, "a");
	expect_key(wq, "b");
	const char *k = NULL;
	assert_int_equal(workqueue_try_get(wq, &k), FP_EAGAIN);
	assert_null(k);
	assert_int_equal(metric_of("fleetplane_workqueue_depth", "t_dedup"), 0.0);
	assert_int_equal(workqueue_nkeys(wq), 0);
	workqueue_free(wq);
	clock_free(c);
}

static void test_processing_dirty_requeue(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct workqueue *wq = workqueue_new("t_dirty", c, NULL, NULL);
	workqueue_add(wq, "node-1");
	workqueue_add(wq, "node-2");
	const char *k = NULL;
	assert_int_equal(workqueue_try_get(wq, &k), 0);
	assert_string_equal(k, "node-1");
	/* re-added while processing: not handed to another worker */
	workqueue_add(wq, "node-1");
	workqueue_add(wq, "node-1");
	assert_int_equal(workqueue_len(wq), 1);
	const char *k2 = NULL;
	assert_int_equal(workqueue_try_get(wq, &k2), 0);
	assert_string_equal(k2, "node-2");
	const char *k3 = NULL;
	assert_int_equal(workqueue_try_get(wq, &k3), FP_EAGAIN);
	/* done re-queues the dirty key */
	assert_int_equal(workqueue_done(wq, k), 0);
	assert_int_equal(workqueue_len(wq), 1);
	assert_int_equal(workqueue_done(wq, "node-2"), 0);
	assert_int_equal(workqueue_done(wq, "node-2"), FP_ENOTFOUND);
	expect_key(wq, "node-1");
	assert_int_equal(workqueue_len(wq), 0);
	assert_int_equal(workqueue_nkeys(wq), 0);
	/* adds: node-1, node-2, node-1 (dirty while processing) = 3 */
	assert_int_equal(metric_of("fleetplane_workqueue_adds_total", "t_dirty"), 3.0);
	workqueue_free(wq);
	clock_free(c);
}

static void test_add_after_order(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct workqueue *wq = workqueue_new("t_after", c, NULL, NULL);
	workqueue_add_after(wq, "x", 30);
	workqueue_add_after(wq, "y", 10);
	workqueue_add_after(wq, "z", 20);
	workqueue_add_after(wq, "w", 10); /* tie with y: after y */
	workqueue_add_after(wq, "x", 50); /* later: keeps 30 */
	workqueue_add_after(wq, "q", 100);
	workqueue_add_after(wq, "q", 40); /* earlier: moves to 40 */
	workqueue_add_after(wq, "now", 0);
	assert_int_equal(workqueue_len(wq), 1);
	expect_key(wq, "now");
	assert_int_equal(workqueue_nkeys(wq), 5);

	clock_virtual_advance(c, 9);
	assert_int_equal(workqueue_len(wq), 0);
	clock_virtual_advance(c, 1);
	assert_int_equal(workqueue_len(wq), 2);
	expect_key(wq, "y");
	expect_key(wq, "w");
	clock_virtual_advance(c, 10);
	assert_int_equal(workqueue_len(wq), 1);
	expect_key(wq, "z");
	clock_virtual_advance(c, 10);
	assert_int_equal(workqueue_len(wq), 1);
	expect_key(wq, "x");
	clock_virtual_advance(c, 9);
	assert_int_equal(workqueue_len(wq), 0);
	clock_virtual_advance(c, 1);
	expect_key(wq, "q");
	/* x's superseded 50 ms entry does not fire again; nothing left armed */
	clock_virtual_advance(c, 1000);
	assert_int_equal(workqueue_len(wq), 0);
	assert_int_equal(workqueue_nkeys(wq), 0);
	assert_int_equal(clock_virtual_pending(c), 0);
	workqueue_free(wq);
	clock_free(c);
}

static void test_backoff_doubling_cap_forget(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct workqueue *wq = workqueue_new("t_backoff", c, NULL, &no_bucket);
	static const int64_t want[] = {10, 20, 40, 80, 100, 100};
	for (int i = 0; i < 6; i++) {
		assert_int_equal(workqueue_num_requeues(wq, "n1"), i);
		assert_int_equal(workqueue_add_rate_limited(wq, "n1"), want[i]);
		/* it becomes ready exactly want[i] ms later */
		clock_virtual_advance(c, want[i] - 1);
		assert_int_equal(workqueue_len(wq), 0);
		clock_virtual_advance(c, 1);
		expect_key(wq, "n1");
	}
	assert_int_equal(workqueue_num_requeues(wq, "n1"), 6);
	assert_int_equal(metric_of("fleetplane_workqueue_retries_total", "t_backoff"), 6.0);
	/* the failure count keeps the record alive until forget */
	assert_int_equal(workqueue_nkeys(wq), 1);
	workqueue_forget(wq, "n1");
	assert_int_equal(workqueue_num_requeues(wq, "n1"), 0);
	assert_int_equal(workqueue_nkeys(wq), 0);
	assert_int_equal(workqueue_add_rate_limited(wq, "n1"), 10);
	/* another key has its own count */
	assert_int_equal(workqueue_add_rate_limited(wq, "n2"), 10);
	assert_int_equal(workqueue_add_rate_limited(wq, "n1"), 20);
	assert_int_equal(workqueue_num_requeues(wq, "unknown"), 0);
	workqueue_free(wq);
	clock_free(c);
}

static void test_backoff_jitter(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct fp_rng rng, replica;
	fp_rng_init(&rng, 42);
	fp_rng_init(&replica, 42);
	struct workqueue_config cfg = {.base_delay_ms = 100,
				       .max_delay_ms = 1000,
				       .jitter = 0.5,
				       .qps = -1};
	struct workqueue *wq = workqueue_new("t_jitter", c, &rng, &cfg);
	static const int64_t base[] = {100, 200, 400, 800, 1000, 1000, 1000, 1000};
	int64_t prev = -1;
	int all_same = 1;
	for (int i = 0; i < 8; i++) {
		int64_t d = workqueue_add_rate_limited(wq, "n");
		int64_t want = base[i] +
			       (int64_t)fp_rng_below(&replica, (uint64_t)(base[i] / 2) + 1);
		assert_int_equal(d, want);
		assert_in_range(d, base[i], base[i] + base[i] / 2);
		if (i >= 5 && d != prev)
			all_same = 0;
		prev = d;
	}
	/* at the cap the jitter still spreads retries */
	assert_int_equal(all_same, 0);
	workqueue_free(wq);
	fp_rng_release(&rng);
	fp_rng_release(&replica);
	clock_free(c);
}

static void test_global_bucket(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct workqueue_config cfg = {.base_delay_ms = 1,
				       .max_delay_ms = 1,
				       .qps = 10,
				       .burst = 2};
	struct workqueue *wq = workqueue_new("t_bucket", c, NULL, &cfg);
	/* burst 2 then one token per 100 ms, each add reserving the next one */
	assert_int_equal(workqueue_add_rate_limited(wq, "k1"), 1);
	assert_int_equal(workqueue_add_rate_limited(wq, "k2"), 1);
	assert_int_equal(workqueue_add_rate_limited(wq, "k3"), 100);
	assert_int_equal(workqueue_add_rate_limited(wq, "k4"), 200);
	clock_virtual_advance(c, 1);
	assert_int_equal(workqueue_len(wq), 2);
	clock_virtual_advance(c, 99);
	assert_int_equal(workqueue_len(wq), 3);
	clock_virtual_advance(c, 100);
	assert_int_equal(workqueue_len(wq), 4);
	expect_key(wq, "k1");
	expect_key(wq, "k2");
	expect_key(wq, "k3");
	expect_key(wq, "k4");
	/* at t=200 the debt is paid: the bucket refills 1 token per 100 ms */
	clock_virtual_advance(c, 100);
	assert_int_equal(workqueue_add_rate_limited(wq, "k5"), 1);
	assert_int_equal(workqueue_add_rate_limited(wq, "k6"), 100);
	assert_int_equal(metric_of("fleetplane_workqueue_retries_total", "t_bucket"), 6.0);
	workqueue_free(wq);
	clock_free(c);
}

static void test_shutdown_drains(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct workqueue *wq = workqueue_new("t_shutdown", c, NULL, NULL);
	workqueue_add(wq, "a");
	workqueue_add_after(wq, "later", 10);
	workqueue_shutdown(wq);
	assert_int_equal(workqueue_shutting_down(wq), 1);
	workqueue_add(wq, "b"); /* ignored */
	assert_int_equal(workqueue_add_rate_limited(wq, "c"), FP_ECLOSED);
	assert_int_equal(clock_virtual_pending(c), 0); /* its timer was cancelled */
	const char *k = NULL;
	assert_int_equal(workqueue_get(wq, &k), 0);
	assert_string_equal(k, "a");
	assert_int_equal(workqueue_done(wq, k), 0);
	assert_int_equal(workqueue_get(wq, &k), FP_ECLOSED);
	assert_int_equal(workqueue_try_get(wq, &k), FP_ECLOSED);
	assert_int_equal(workqueue_nkeys(wq), 0);
	workqueue_free(wq);
	clock_free(c);
}

struct getter {
	struct workqueue *wq;
	int rc;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;
	const char *k;
	g->rc = workqueue_get(g->wq, &k);
	return NULL;
}

static void test_shutdown_wakes_getters(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct workqueue *wq = workqueue_new("t_wake", c, NULL, NULL);
	struct getter g[3];
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		g[i] = (struct getter){wq, 1};
		assert_int_equal(pthread_create(&th[i], NULL, getter_main, &g[i]), 0);
	}
	while (workqueue_nwaiting(wq) < 3)
		sched_yield();
	workqueue_shutdown(wq);
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(g[i].rc, FP_ECLOSED);
	}
	assert_int_equal(workqueue_nwaiting(wq), 0);
	workqueue_free(wq);
	clock_free(c);
}

static void test_memory_bounded(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct workqueue *wq = workqueue_new("t_mem", c, NULL, &no_bucket);
	char key[32];
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 1000; i++) {
			snprintf(key, sizeof(key), "node-%04d", i);
			workqueue_add(wq, key);
		}
	assert_int_equal(workqueue_nkeys(wq), 1000);
	assert_int_equal(workqueue_len(wq), 1000);
	const char *k;
	while (workqueue_try_get(wq, &k) == 0)
		workqueue_done(wq, k);
	assert_int_equal(workqueue_nkeys(wq), 0);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "node-%04d", i);
		workqueue_add_rate_limited(wq, key);
		workqueue_add_rate_limited(wq, key);
	}
	assert_int_equal(workqueue_nkeys(wq), 100);
	clock_virtual_advance(c, 10);
	assert_int_equal(workqueue_len(wq), 100);
	while (workqueue_try_get(wq, &k) == 0) {
		workqueue_forget(wq, k);
		workqueue_done(wq, k);
	}
	assert_int_equal(workqueue_nkeys(wq), 0);
	assert_int_equal(clock_virtual_pending(c), 0);
	workqueue_free(wq);
	clock_free(c);
}

/* ---- threaded: 4 workers, keys re-added while processing ---- */

#define TKEYS 16
#define TROUNDS 2000

struct tshared {
	struct workqueue *wq;
	atomic_int busy[TKEYS];
	atomic_int unseen[TKEYS]; /* set before each add, cleared when processing starts */
	atomic_int violations;
	atomic_int processed;
};

static void *worker_main(void *arg)
{
	struct tshared *s = arg;
	const char *k;
	while (workqueue_get(s->wq, &k) == 0) {
		int idx = 0;
		sscanf(k, "k%d", &idx);
		if (atomic_fetch_add(&s->busy[idx], 1) != 0)
			atomic_fetch_add(&s->violations, 1);
		atomic_store(&s->unseen[idx], 0);
		int n = atomic_fetch_add(&s->processed, 1);
		if (n % 7 == 0) {
			atomic_store(&s->unseen[idx], 1);
			workqueue_add(s->wq, k); /* dirty while processing */
		}
		sched_yield();
		atomic_fetch_sub(&s->busy[idx], 1);
		workqueue_done(s->wq, k);
	}
	return NULL;
}

static void test_threaded_one_worker_per_key(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct tshared s = {.wq = workqueue_new("t_threads", c, NULL, NULL)};
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &s), 0);
	char key[16];
	for (int r = 0; r < TROUNDS; r++) {
		snprintf(key, sizeof(key), "k%d", r % TKEYS);
		atomic_store(&s.unseen[r % TKEYS], 1);
		workqueue_add(s.wq, key);
	}
	/* wait until everything is drained and no worker holds a key */
	while (workqueue_len(s.wq) > 0 || workqueue_nwaiting(s.wq) < 4)
		sched_yield();
	workqueue_shutdown(s.wq);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&s.violations), 0);
	/* every add was followed by a processing that started after it: no add was lost */
	int unseen = 0;
	for (int i = 0; i < TKEYS; i++)
		unseen += atomic_load(&s.unseen[i]);
	assert_int_equal(unseen, 0);
	assert_int_equal(workqueue_nkeys(s.wq), 0);
	workqueue_free(s.wq);
	clock_free(c);
}

/* real clock: a delayed add reaches a blocked getter through the timer thread */
static void test_real_clock_add_after(void **state)
{
	struct fp_clock *c = clock_real_new();
	struct workqueue *wq = workqueue_new("t_real", c, NULL, NULL);
	/* added first with the shorter delay, so its due time is strictly earlier */
	workqueue_add_after(wq, "early", 1);
	workqueue_add_after(wq, "late", 2);
	const char *k = NULL;
	assert_int_equal(workqueue_get(wq, &k), 0);
	char first[16];
	snprintf(first, sizeof(first), "%s", k);
	workqueue_done(wq, k);
	assert_int_equal(workqueue_get(wq, &k), 0);
	assert_string_equal(first, "early");
	assert_string_equal(k, "late");
	workqueue_done(wq, k);
	workqueue_add_after(wq, "never", 3600 * 1000); /* freed with a timer pending */
	workqueue_free(wq);
	clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedup),
		cmocka_unit_test(test_processing_dirty_requeue),
		cmocka_unit_test(test_add_after_order),
		cmocka_unit_test(test_backoff_doubling_cap_forget),
		cmocka_unit_test(test_backoff_jitter),
		cmocka_unit_test(test_global_bucket),
		cmocka_unit_test(test_shutdown_drains),
		cmocka_unit_test(test_shutdown_wakes_getters),
		cmocka_unit_test(test_memory_bounded),
		cmocka_unit_test(test_threaded_one_worker_per_key),
		cmocka_unit_test(test_real_clock_add_after),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
