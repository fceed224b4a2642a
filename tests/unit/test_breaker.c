/* layers: base core store engine */
/* test_breaker.c - the per-BMC circuit breaker (engine/breaker.h) in virtual time: exact
 * transitions and waits, backoff doubling and its cap, one probe at a time, probe timeout,
 * stragglers ignored, each transition reported once, jitter drawn from the seeded rng, idle
 * keys forgotten and the key cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "engine/breaker.h"
#include "engine/clock.h"

static const struct breaker_config cfg3 = {.failure_threshold = 3,
					   .probe_min_ms = 1000,
					   .probe_max_ms = 5000,
					   .probe_timeout_ms = 2000};

static void test_opens_after_threshold(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct breaker *br = breaker_new(c, NULL, &cfg3);
	int64_t w = -1;
	assert_int_equal(breaker_allow(br, "bmc-a", &w), 0);
	assert_int_equal(w, 0);
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_NONE);
	/* a success resets the count */
	assert_int_equal(breaker_report(br, "bmc-a", 1), BREAKER_T_NONE);
	assert_int_equal(breaker_nkeys(br), 0);
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_state(br, "bmc-a"), BREAKER_CLOSED);
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_OPENED);
	assert_int_equal(breaker_state(br, "bmc-a"), BREAKER_OPEN);
	/* another key is not affected */
	assert_int_equal(breaker_allow(br, "bmc-b", &w), 0);
	assert_int_equal(breaker_state(br, "bmc-b"), BREAKER_CLOSED);
	/* open: wait is the backoff left */
	assert_int_equal(breaker_allow(br, "bmc-a", &w), FP_EAGAIN);
	assert_int_equal(w, 1000);
	clock_virtual_advance(c, 400);
	assert_int_equal(breaker_allow(br, "bmc-a", &w), FP_EAGAIN);
	assert_int_equal(w, 600);
	/* a straggler allowed before the breaker opened reports: ignored, no transition */
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_report(br, "bmc-a", 1), BREAKER_T_NONE);
	assert_int_equal(breaker_state(br, "bmc-a"), BREAKER_OPEN);
	clock_virtual_advance(c, 599);
	assert_int_equal(breaker_allow(br, "bmc-a", &w), FP_EAGAIN);
	assert_int_equal(w, 1);
	clock_virtual_advance(c, 1);
	assert_int_equal(breaker_state(br, "bmc-a"), BREAKER_HALF_OPEN);
	/* the probe goes to one caller only */
	assert_int_equal(breaker_allow(br, "bmc-a", &w), 0);
	assert_int_equal(w, 0);
	assert_int_equal(breaker_state(br, "bmc-a"), BREAKER_HALF_OPEN);
	assert_int_equal(breaker_allow(br, "bmc-a", &w), FP_EAGAIN);
	assert_int_equal(w, 1000); /* probe times out in 2000, waiters look again after min 1000 */
	clock_virtual_advance(c, 1500);
	assert_int_equal(breaker_allow(br, "bmc-a", &w), FP_EAGAIN);
	assert_int_equal(w, 500); /* what is left of the probe's 2000 */
	/* the probe succeeds: closed, reported once */
	assert_int_equal(breaker_report(br, "bmc-a", 1), BREAKER_T_CLOSED);
	assert_int_equal(breaker_state(br, "bmc-a"), BREAKER_CLOSED);
	assert_int_equal(breaker_report(br, "bmc-a", 1), BREAKER_T_NONE);
	assert_int_equal(breaker_allow(br, "bmc-a", &w), 0);
	assert_int_equal(breaker_nkeys(br), 0);
	/* the count starts from zero again */
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_report(br, "bmc-a", 0), BREAKER_T_OPENED);
	assert_int_equal(breaker_allow(br, "bmc-a", &w), FP_EAGAIN);
	assert_int_equal(w, 1000); /* back to probe_min */
	breaker_free(br);
	clock_free(c);
}

/* Opens key, then fails each probe: the backoff doubles 1000, 2000, 4000 and stays at 5000. */
static void test_backoff_doubles_to_cap(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct breaker *br = breaker_new(c, NULL, &cfg3);
	for (int i = 0; i < 3; i++)
		breaker_report(br, "k", 0);
	assert_int_equal(breaker_state(br, "k"), BREAKER_OPEN);
	const int64_t expect[] = {1000, 2000, 4000, 5000, 5000};
	int64_t w = 0;
	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
		assert_int_equal(w, expect[i]);
		clock_virtual_advance(c, expect[i]);
		assert_int_equal(breaker_allow(br, "k", &w), 0);
		clock_virtual_advance(c, 10);
		/* a failed probe re-opens without a new OPENED */
		assert_int_equal(breaker_report(br, "k", 0), BREAKER_T_NONE);
		assert_int_equal(breaker_state(br, "k"), BREAKER_OPEN);
	}
	assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
	assert_int_equal(w, 5000);
	clock_virtual_advance(c, 5000);
	assert_int_equal(breaker_allow(br, "k", &w), 0);
	assert_int_equal(breaker_report(br, "k", 1), BREAKER_T_CLOSED);
	breaker_free(br);
	clock_free(c);
}

static void test_probe_timeout(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct breaker *br = breaker_new(c, NULL, &cfg3);
	int64_t w = 0;
	for (int i = 0; i < 3; i++)
		breaker_report(br, "k", 0);
	clock_virtual_advance(c, 1000);
	assert_int_equal(breaker_allow(br, "k", &w), 0); /* probe granted at t=1000 */
	clock_virtual_advance(c, 1999);
	assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
	assert_int_equal(w, 1);
	assert_int_equal(breaker_state(br, "k"), BREAKER_HALF_OPEN);
	clock_virtual_advance(c, 1);
	/* t=3000: the probe counts as failed at its deadline; backoff 2000 from there */
	assert_int_equal(breaker_state(br, "k"), BREAKER_OPEN);
	clock_virtual_advance(c, 500);
	assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
	assert_int_equal(w, 1500);
	/* the timed-out probe reports late: ignored */
	assert_int_equal(breaker_report(br, "k", 1), BREAKER_T_NONE);
	assert_int_equal(breaker_state(br, "k"), BREAKER_OPEN);
	clock_virtual_advance(c, 1500);
	assert_int_equal(breaker_allow(br, "k", &w), 0); /* next probe at t=5000 */
	/* the deadline is applied at its time even when nobody looks until much later */
	clock_virtual_advance(c, 2000 + 3000);
	/* timed out at t=7000, backoff 4000: due at 11000; now 10000 */
	assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
	assert_int_equal(w, 1000);
	breaker_free(br);
	clock_free(c);
}

/* Every OPENED is followed by exactly one CLOSED, whatever the mix of reports. */
static void test_transitions_alternate(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct breaker_config cfg = {.failure_threshold = 2,
				     .probe_min_ms = 100,
				     .probe_max_ms = 400,
				     .probe_timeout_ms = 50};
	struct breaker *br = breaker_new(c, NULL, &cfg);
	struct fp_rng r;
	fp_rng_init(&r, 7);
	int opened = 0, closed = 0, last = BREAKER_T_CLOSED;
	for (int i = 0; i < 5000; i++) {
		int64_t w = 0;
		int rc = breaker_allow(br, "k", &w);
		uint64_t x = fp_rng_below(&r, 10);
		if (rc == 0 && x < 8) { /* report (sometimes twice, a caller bug) */
			int t = breaker_report(br, "k", x < 3);
			if (x == 0)
				assert_int_equal(breaker_report(br, "k", 1), BREAKER_T_NONE);
			if (t != BREAKER_T_NONE) {
				assert_int_not_equal(t, last);
				last = t;
				opened += t == BREAKER_T_OPENED;
				closed += t == BREAKER_T_CLOSED;
			}
		} else if (rc == FP_EAGAIN) {
			assert_true(w > 0 && w <= 400);
		}
		clock_virtual_advance(c, (int64_t)fp_rng_below(&r, 60));
	}
	assert_true(opened > 10);
	assert_true(closed == opened || closed == opened - 1);
	fp_rng_release(&r);
	breaker_free(br);
	clock_free(c);
}

/* The jitter is floor(backoff * jitter) + 1 values wide, drawn from the given rng: a second rng
 * with the same seed predicts each wait exactly. */
static void test_jitter(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct fp_rng r, expect;
	fp_rng_init(&r, 42);
	fp_rng_init(&expect, 42);
	struct breaker_config cfg = cfg3;
	cfg.jitter = 0.5;
	struct breaker *br = breaker_new(c, &r, &cfg);
	int64_t w = 0, b = 1000;
	for (int i = 0; i < 3; i++)
		breaker_report(br, "k", 0);
	for (int round = 0; round < 4; round++) {
		int64_t j = (int64_t)fp_rng_below(&expect, (uint64_t)(b / 2) + 1);
		assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
		assert_int_equal(w, b + j);
		assert_true(w >= b && w <= b + b / 2);
		clock_virtual_advance(c, w);
		assert_int_equal(breaker_allow(br, "k", &w), 0);
		assert_int_equal(breaker_report(br, "k", 0), BREAKER_T_NONE);
		b = b * 2 > 5000 ? 5000 : b * 2;
	}
	breaker_free(br);
	fp_rng_release(&r);
	fp_rng_release(&expect);
	clock_free(c);
}

static void test_eviction_and_cap(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct breaker_config cfg = cfg3;
	cfg.max_keys = 4;
	struct breaker *br = breaker_new(c, NULL, &cfg);
	char key[16];
	/* closed keys with one failure each fill the table */
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "c%d", i);
		assert_int_equal(breaker_report(br, key, 0), BREAKER_T_NONE);
		clock_virtual_advance(c, 1);
	}
	assert_int_equal(breaker_nkeys(br), 4);
	/* a fifth failing key takes the place of the closed key idle longest (c0) */
	assert_int_equal(breaker_report(br, "new", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_nkeys(br), 4);
	/* c0's one failure was forgotten (and c1, now idle longest, makes room): two more failures
	 * leave c0 closed */
	assert_int_equal(breaker_report(br, "c0", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_report(br, "c0", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_state(br, "c0"), BREAKER_CLOSED);
	/* open keys are never pushed out: open all four, then a new key is not tracked */
	for (int i = 0; i < 3; i++) {
		breaker_report(br, "c2", 0);
		breaker_report(br, "c3", 0);
		breaker_report(br, "new", 0);
	}
	assert_int_equal(breaker_state(br, "c2"), BREAKER_OPEN);
	assert_int_equal(breaker_state(br, "new"), BREAKER_OPEN);
	assert_int_equal(breaker_report(br, "c0", 0), BREAKER_T_OPENED);
	assert_int_equal(breaker_nkeys(br), 4);
	for (int i = 0; i < 5; i++)
		assert_int_equal(breaker_report(br, "x", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_state(br, "x"), BREAKER_CLOSED); /* failed open */
	assert_int_equal(breaker_nkeys(br), 4);
	breaker_free(br);

	/* idle closed keys are forgotten after probe_max_ms; open keys once their probe has been
	 * due for probe_max_ms with nobody asking */
	br = breaker_new(c, NULL, &cfg3);
	breaker_report(br, "idle", 0);
	for (int i = 0; i < 3; i++)
		breaker_report(br, "open", 0);
	assert_int_equal(breaker_nkeys(br), 2);
	clock_virtual_advance(c, 5000);
	assert_int_equal(breaker_state(br, "zzz"), BREAKER_CLOSED); /* a sweep runs */
	assert_int_equal(breaker_nkeys(br), 1);                     /* idle gone */
	assert_int_equal(breaker_state(br, "open"), BREAKER_HALF_OPEN);
	clock_virtual_advance(c, 1000);
	assert_int_equal(breaker_state(br, "zzz"), BREAKER_CLOSED);
	assert_int_equal(breaker_nkeys(br), 1); /* no sweep due yet */
	clock_virtual_advance(c, 5000);
	assert_int_equal(breaker_state(br, "zzz"), BREAKER_CLOSED);
	assert_int_equal(breaker_nkeys(br), 0);
	breaker_free(br);
	clock_free(c);
}

static void test_defaults_and_bad_keys(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct breaker *br = breaker_new(c, NULL, NULL);
	int64_t w = 7;
	assert_int_equal(breaker_allow(br, "", &w), FP_EINVAL);
	assert_int_equal(w, 0);
	assert_int_equal(breaker_allow(br, NULL, NULL), FP_EINVAL);
	assert_int_equal(breaker_report(br, "", 0), FP_EINVAL);
	assert_int_equal(breaker_state(br, NULL), BREAKER_CLOSED);
	for (int i = 0; i < 4; i++)
		assert_int_equal(breaker_report(br, "k", 0), BREAKER_T_NONE);
	assert_int_equal(breaker_report(br, "k", 0), BREAKER_T_OPENED); /* default 5 */
	assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
	assert_int_equal(w, 5000);
	clock_virtual_advance(c, 5000);
	assert_int_equal(breaker_allow(br, "k", &w), 0);
	assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
	assert_int_equal(w, 5000);        /* min(probe left 120000, probe_min 5000) */
	clock_virtual_advance(c, 120000); /* default probe timeout */
	assert_int_equal(breaker_allow(br, "k", &w), FP_EAGAIN);
	assert_int_equal(w, 10000); /* doubled, counted from the deadline (now) */
	breaker_free(br);
	breaker_free(NULL);
	clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opens_after_threshold),
		cmocka_unit_test(test_backoff_doubles_to_cap),
		cmocka_unit_test(test_probe_timeout),
		cmocka_unit_test(test_transitions_alternate),
		cmocka_unit_test(test_jitter),
		cmocka_unit_test(test_eviction_and_cap),
		cmocka_unit_test(test_defaults_and_bad_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
