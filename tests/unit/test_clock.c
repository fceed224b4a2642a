/* layers: base core store engine */
/* test_clock.c - the virtual clock's ordering, ties, re-entrancy, cancel and run helpers, and a
 * smoke test of the real clock that waits on events, never on elapsed time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "base/err.h"
#include "engine/clock.h"

struct rec {
	struct fp_clock *c;
	int64_t at[32];
	int who[32];
	int n;
};

struct cb {
	struct rec *r;
	int id;
};

static void record(void *arg)
{
	struct cb *b = arg;
	b->r->at[b->r->n] = clock_now_ms(b->r->c);
	b->r->who[b->r->n] = b->id;
	b->r->n++;
}

static void test_virtual_time(void **state)
{
	struct fp_clock *c = clock_virtual_new(1700000000000LL);
	assert_int_equal(clock_now_ms(c), 0);
	assert_int_equal(clock_wall_ms(c), 1700000000000LL);
	assert_int_equal(clock_virtual_advance(c, 250), 0);
	assert_int_equal(clock_now_ms(c), 250);
	assert_int_equal(clock_wall_ms(c), 1700000000250LL);
	clock_sleep_ms(c, 750); /* sleep == advance */
	assert_int_equal(clock_now_ms(c), 1000);
	clock_virtual_advance(c, -5); /* never backwards */
	assert_int_equal(clock_now_ms(c), 1000);
	clock_free(c);
}

static void test_virtual_order_and_ties(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct rec r = {.c = c};
	struct cb b[5] = {{&r, 1}, {&r, 2}, {&r, 3}, {&r, 4}, {&r, 5}};
	clock_after(c, 30, record, &b[0]);
	clock_after(c, 10, record, &b[1]);
	clock_after(c, 20, record, &b[2]);
	clock_after(c, 10, record, &b[3]); /* tie with 2: fires after it */
	clock_after(c, 40, record, &b[4]);
	assert_int_equal(clock_virtual_pending(c), 5);
	int64_t at = -1;
	assert_int_equal(clock_virtual_next_timer(c, &at), 0);
	assert_int_equal(at, 10);

	assert_int_equal(clock_virtual_advance(c, 30), 4);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.who[0], 2);
	assert_int_equal(r.at[0], 10);
	assert_int_equal(r.who[1], 4);
	assert_int_equal(r.at[1], 10);
	assert_int_equal(r.who[2], 3);
	assert_int_equal(r.at[2], 20);
	assert_int_equal(r.who[3], 1);
	assert_int_equal(r.at[3], 30);
	assert_int_equal(clock_now_ms(c), 30);
	assert_int_equal(clock_virtual_pending(c), 1);

	assert_int_equal(clock_virtual_advance(c, 9), 0);
	assert_int_equal(clock_now_ms(c), 39);
	assert_int_equal(clock_virtual_advance(c, 1), 1);
	assert_int_equal(r.who[4], 5);
	assert_int_equal(r.at[4], 40);
	assert_int_equal(clock_virtual_next_timer(c, &at), FP_ENOTFOUND);
	assert_int_equal(at, 10);
	clock_free(c);
}

static void test_virtual_cancel(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct rec r = {.c = c};
	struct cb b1 = {&r, 1}, b2 = {&r, 2};
	uint64_t id1 = clock_after(c, 5, record, &b1);
	uint64_t id2 = clock_after(c, 5, record, &b2);
	assert_true(id1 > 0);
	assert_true(id2 > id1);
	assert_int_equal(clock_cancel(c, id1), 0);
	assert_int_equal(clock_cancel(c, id1), FP_ENOTFOUND);
	assert_int_equal(clock_virtual_advance(c, 5), 1);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.who[0], 2);
	assert_int_equal(clock_cancel(c, id2), FP_ENOTFOUND); /* already ran */
	clock_free(c);
}

/* A callback that re-arms itself 10 ms later until it has run `left` times. */
struct chain {
	struct fp_clock *c;
	int left;
	int64_t at[8];
	int n;
};

static void chain_fire(void *arg)
{
	struct chain *ch = arg;
	ch->at[ch->n++] = clock_now_ms(ch->c);
	if (--ch->left > 0)
		clock_after(ch->c, 10, chain_fire, ch);
}

static void test_virtual_reentrant(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct chain ch = {.c = c, .left = 4};
	clock_after(c, 10, chain_fire, &ch);
	/* timers added by callbacks within the window fire in the same advance */
	assert_int_equal(clock_virtual_advance(c, 35), 3);
	assert_int_equal(ch.n, 3);
	assert_int_equal(ch.at[0], 10);
	assert_int_equal(ch.at[1], 20);
	assert_int_equal(ch.at[2], 30);
	assert_int_equal(clock_now_ms(c), 35);
	assert_int_equal(clock_virtual_pending(c), 1);
	clock_free(c);
}

static void test_virtual_run_until_idle(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct chain ch = {.c = c, .left = 5};
	clock_after(c, 10, chain_fire, &ch);
	/* bound 35: timers at 10, 20, 30 fire; 40 is beyond; time stops at the last timer */
	assert_int_equal(clock_virtual_run_until_idle(c, 35), 3);
	assert_int_equal(clock_now_ms(c), 30);
	assert_int_equal(clock_virtual_run_until_idle(c, 1000), 2);
	assert_int_equal(ch.n, 5);
	assert_int_equal(ch.at[4], 50);
	assert_int_equal(clock_now_ms(c), 50);
	assert_int_equal(clock_virtual_pending(c), 0);
	assert_int_equal(clock_virtual_run_until_idle(c, 1000), 0);
	assert_int_equal(clock_now_ms(c), 50);
	clock_free(c);
}

/* zero delay fires on the next advance, even an advance by 0 */
static void test_virtual_zero_delay(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct rec r = {.c = c};
	struct cb b = {&r, 7};
	clock_virtual_advance(c, 100);
	clock_after(c, 0, record, &b);
	clock_after(c, -50, record, &b);
	assert_int_equal(r.n, 0);
	assert_int_equal(clock_virtual_advance(c, 0), 2);
	assert_int_equal(r.at[0], 100);
	assert_int_equal(r.at[1], 100);
	clock_free(c);
}

/* ---- real clock: only ordering facts and event waits ---- */

struct real_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int order[4];
	int n;
};

struct real_cb {
	struct real_wait *w;
	int id;
};

static void real_fire(void *arg)
{
	struct real_cb *b = arg;
	pthread_mutex_lock(&b->w->mu);
	b->w->order[b->w->n++] = b->id;
	pthread_cond_signal(&b->w->cv);
	pthread_mutex_unlock(&b->w->mu);
}

static void test_real_clock(void **state)
{
	struct fp_clock *c = clock_real_new();
	int64_t t0 = clock_now_ms(c);
	int64_t t1 = clock_now_ms(c);
	assert_true(t1 >= t0);
	assert_true(clock_wall_ms(c) > 1577836800000LL); /* after 2020-01-01 */
	clock_sleep_ms(c, 1);
	assert_true(clock_now_ms(c) >= t0 + 1);

	struct real_wait w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	struct real_cb b1 = {&w, 1}, b2 = {&w, 2}, bfar = {&w, 9};
	uint64_t far = clock_after(c, 3600 * 1000, real_fire, &bfar);
	clock_after(c, 20, real_fire, &b2);
	clock_after(c, 1, real_fire, &b1);
	pthread_mutex_lock(&w.mu);
	while (w.n < 2)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	assert_int_equal(w.order[0], 1);
	assert_int_equal(w.order[1], 2);
	assert_int_equal(clock_cancel(c, far), 0);
	assert_int_equal(clock_cancel(c, far), FP_ENOTFOUND);
	clock_after(c, 3600 * 1000, real_fire, &bfar); /* dropped by free, never runs */
	clock_free(c);
	assert_int_equal(w.n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_virtual_time),
		cmocka_unit_test(test_virtual_order_and_ties),
		cmocka_unit_test(test_virtual_cancel),
		cmocka_unit_test(test_virtual_reentrant),
		cmocka_unit_test(test_virtual_run_until_idle),
		cmocka_unit_test(test_virtual_zero_delay),
		cmocka_unit_test(test_real_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
