/* layers: base core store engine */
/* test_ratelimit.c - token bucket refill and wait arithmetic, reserve into debt, and the keyed
 * BMC/site limiter (concurrency, minimum interval, site bucket, Retry-After pause, reasons,
 * eviction, key cap), all
 * in virtual time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/err.h"
#include "engine/clock.h"
#include "engine/ratelimit.h"

static void test_bucket_refill_math(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit_bucket b;
	ratelimit_bucket_init(&b, c, 10, 2); /* one token per 100 ms */
	assert_int_equal(ratelimit_bucket_tokens(&b), 2);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 0);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 0);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 100);
	clock_virtual_advance(c, 30);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 70);
	clock_virtual_advance(c, 70);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 0);
	assert_int_equal(ratelimit_bucket_try_take(&b, 2), 200);
	assert_int_equal(ratelimit_bucket_try_take(&b, 3), FP_EINVAL); /* above burst */
	assert_int_equal(ratelimit_bucket_try_take(&b, -1), FP_EINVAL);
	assert_int_equal(ratelimit_bucket_try_take(&b, 0), 0);
	clock_virtual_advance(c, 10000); /* refill caps at burst */
	assert_int_equal(ratelimit_bucket_tokens(&b), 2);
	assert_int_equal(ratelimit_bucket_try_take(&b, 2), 0);
	assert_int_equal(ratelimit_bucket_tokens(&b), 0);
	ratelimit_bucket_release(&b);

	/* 3 tokens/s: 333.33 ms per token, waits round up to whole ms */
	ratelimit_bucket_init(&b, c, 3, 1);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 0);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 334);
	clock_virtual_advance(c, 333);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 1);
	clock_virtual_advance(c, 1);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 0);
	ratelimit_bucket_release(&b);

	/* 0.5 tokens/s */
	ratelimit_bucket_init(&b, c, 0.5, 1);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 0);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 2000);
	clock_virtual_advance(c, 500);
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 1500);
	ratelimit_bucket_release(&b);

	/* rate <= 0: unlimited */
	ratelimit_bucket_init(&b, c, 0, 1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(ratelimit_bucket_try_take(&b, 1), 0);
	assert_int_equal(ratelimit_bucket_reserve(&b, 5), 0);
	ratelimit_bucket_release(&b);
	clock_free(c);
}

static void test_bucket_reserve_debt(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit_bucket b;
	ratelimit_bucket_init(&b, c, 10, 1);
	assert_int_equal(ratelimit_bucket_reserve(&b, 1), 0);
	assert_int_equal(ratelimit_bucket_reserve(&b, 1), 100);
	assert_int_equal(ratelimit_bucket_reserve(&b, 1), 200);
	assert_int_equal(ratelimit_bucket_tokens(&b), -2);
	/* try_take refuses while in debt and says when it will succeed */
	assert_int_equal(ratelimit_bucket_try_take(&b, 1), 300);
	clock_virtual_advance(c, 200);
	assert_int_equal(ratelimit_bucket_tokens(&b), 0);
	assert_int_equal(ratelimit_bucket_reserve(&b, 1), 100);
	ratelimit_bucket_release(&b);
	clock_free(c);
}

static void test_keyed_concurrency(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit *lim = ratelimit_new(c, NULL);
	char why[128];
	int64_t wait = -1;
	assert_int_equal(ratelimit_acquire(lim, "10.0.0.1", NULL, &wait, why, sizeof(why)), 0);
	assert_int_equal(wait, 0);
	assert_string_equal(why, "");
	assert_int_equal(ratelimit_acquire(lim, "10.0.0.1", NULL, &wait, why, sizeof(why)),
			 FP_EAGAIN);
	assert_int_equal(wait, 100);
	assert_string_equal(why, "bmc concurrency 1 reached");
	/* another BMC is independent */
	assert_int_equal(ratelimit_acquire(lim, "10.0.0.2", "", &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_release(lim, "10.0.0.1"), 0);
	assert_int_equal(ratelimit_release(lim, "10.0.0.1"), FP_ENOTFOUND);
	assert_int_equal(ratelimit_release(lim, "10.9.9.9"), FP_ENOTFOUND);
	assert_int_equal(ratelimit_acquire(lim, "10.0.0.1", NULL, &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_acquire(lim, "", NULL, &wait, why, sizeof(why)), FP_EINVAL);
	assert_int_equal(ratelimit_acquire(lim, NULL, NULL, NULL, NULL, 0), FP_EINVAL);
	ratelimit_free(lim);
	clock_free(c);
}

static void test_keyed_min_interval(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit_config cfg = {.bmc_max_concurrency = 2,
				       .bmc_min_interval_ms = 500,
				       .busy_retry_ms = 250};
	struct ratelimit *lim = ratelimit_new(c, &cfg);
	char why[128];
	int64_t wait = -1;
	assert_int_equal(ratelimit_acquire(lim, "bmc", NULL, &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_acquire(lim, "bmc", NULL, &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_acquire(lim, "bmc", NULL, &wait, why, sizeof(why)), FP_EAGAIN);
	assert_int_equal(wait, 250);
	assert_string_equal(why, "bmc concurrency 2 reached");
	clock_virtual_advance(c, 100);
	assert_int_equal(ratelimit_release(lim, "bmc"), 0); /* ends at t=100 */
	clock_virtual_advance(c, 20);
	assert_int_equal(ratelimit_acquire(lim, "bmc", NULL, &wait, why, sizeof(why)), FP_EAGAIN);
	assert_int_equal(wait, 480);
	assert_string_equal(why, "bmc min interval 500ms not elapsed");
	clock_virtual_advance(c, 479);
	assert_int_equal(ratelimit_acquire(lim, "bmc", NULL, &wait, NULL, 0), FP_EAGAIN);
	assert_int_equal(wait, 1);
	clock_virtual_advance(c, 1); /* t=600 = end + 500 */
	assert_int_equal(ratelimit_acquire(lim, "bmc", NULL, &wait, why, sizeof(why)), 0);
	assert_int_equal(wait, 0);
	ratelimit_free(lim);
	clock_free(c);
}

static void test_keyed_site_bucket(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit_config cfg = {.site_rate_per_s = 2, .site_burst = 1};
	struct ratelimit *lim = ratelimit_new(c, &cfg);
	char why[128];
	int64_t wait = -1;
	assert_int_equal(ratelimit_acquire(lim, "a", "site-1", &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_acquire(lim, "b", "site-1", &wait, why, sizeof(why)), FP_EAGAIN);
	assert_int_equal(wait, 500);
	assert_string_equal(why, "site token bucket empty site=site-1");
	/* another site has its own bucket; no site means no site limit */
	assert_int_equal(ratelimit_acquire(lim, "c", "site-2", &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_acquire(lim, "d", NULL, &wait, why, sizeof(why)), 0);
	clock_virtual_advance(c, 500); /* site-1 holds one token again */
	/* a refused BMC check does not spend the site token */
	assert_int_equal(ratelimit_acquire(lim, "a", "site-1", &wait, why, sizeof(why)), FP_EAGAIN);
	assert_string_equal(why, "bmc concurrency 1 reached");
	assert_int_equal(ratelimit_acquire(lim, "b", "site-1", &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_nkeys(lim), 6); /* a b c d + site-1 site-2 */
	ratelimit_free(lim);
	clock_free(c);
}

static void test_keyed_eviction(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit_config cfg = {.bmc_min_interval_ms = 100,
				       .idle_evict_ms = 1000,
				       .site_rate_per_s = 1,
				       .site_burst = 1};
	struct ratelimit *lim = ratelimit_new(c, &cfg);
	int64_t wait;
	assert_int_equal(ratelimit_acquire(lim, "idle", "s1", &wait, NULL, 0), 0);
	assert_int_equal(ratelimit_release(lim, "idle"), 0);
	assert_int_equal(ratelimit_acquire(lim, "busy", NULL, &wait, NULL, 0), 0);
	assert_int_equal(ratelimit_nkeys(lim), 3);
	clock_virtual_advance(c, 999);
	assert_int_equal(ratelimit_evict(lim), 0);
	clock_virtual_advance(c, 1);
	/* "idle" and the refilled site go; "busy" holds a slot and stays */
	assert_int_equal(ratelimit_evict(lim), 2);
	assert_int_equal(ratelimit_nkeys(lim), 1);
	clock_virtual_advance(c, 100000);
	assert_int_equal(ratelimit_evict(lim), 0);
	assert_int_equal(ratelimit_release(lim, "busy"), 0);
	ratelimit_free(lim);

	/* a key inside its minimum interval is never evicted, even past idle_evict_ms */
	struct ratelimit_config cfg2 = {.bmc_min_interval_ms = 100, .idle_evict_ms = 10};
	lim = ratelimit_new(c, &cfg2);
	assert_int_equal(ratelimit_acquire(lim, "k", NULL, &wait, NULL, 0), 0);
	assert_int_equal(ratelimit_release(lim, "k"), 0);
	clock_virtual_advance(c, 50);
	assert_int_equal(ratelimit_evict(lim), 0);
	assert_int_equal(ratelimit_acquire(lim, "k", NULL, &wait, NULL, 0), FP_EAGAIN);
	assert_int_equal(wait, 50);
	/* acquire sweeps on its own once idle_evict_ms has passed */
	clock_virtual_advance(c, 50);
	assert_int_equal(ratelimit_acquire(lim, "other", NULL, &wait, NULL, 0), 0);
	assert_int_equal(ratelimit_nkeys(lim), 1);
	ratelimit_free(lim);
	clock_free(c);
}

static void test_keyed_key_cap(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit_config cfg = {.max_keys = 2, .idle_evict_ms = 1000, .busy_retry_ms = 300};
	struct ratelimit *lim = ratelimit_new(c, &cfg);
	char why[128];
	int64_t wait;
	assert_int_equal(ratelimit_acquire(lim, "b1", NULL, &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_acquire(lim, "b2", NULL, &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_acquire(lim, "b3", NULL, &wait, why, sizeof(why)), FP_EBUSY);
	assert_int_equal(wait, 300);
	assert_string_equal(why, "rate limiter key table full (2 keys)");
	assert_int_equal(ratelimit_release(lim, "b1"), 0);
	clock_virtual_advance(c, 999);
	assert_int_equal(ratelimit_acquire(lim, "b3", NULL, &wait, why, sizeof(why)), FP_EBUSY);
	clock_virtual_advance(c, 1);
	assert_int_equal(ratelimit_acquire(lim, "b3", NULL, &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_nkeys(lim), 2);
	ratelimit_free(lim);
	clock_free(c);
}

static void test_site_pause(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit_config cfg = {.idle_evict_ms = 1000};
	struct ratelimit *lim = ratelimit_new(c, &cfg);
	char why[128];
	int64_t wait = -1;
	assert_int_equal(ratelimit_site_pause(lim, "site-1", 3000), 0);
	assert_int_equal(ratelimit_site_pause(lim, "site-1", 1000), 0); /* never shortens */
	assert_int_equal(ratelimit_site_pause(lim, "", 1000), FP_EINVAL);
	assert_int_equal(ratelimit_acquire(lim, "a", "site-1", &wait, why, sizeof(why)), FP_EAGAIN);
	assert_int_equal(wait, 3000);
	assert_string_equal(why, "site paused by retry-after site=site-1");
	assert_int_equal(ratelimit_acquire(lim, "b", "site-2", &wait, why, sizeof(why)), 0);
	clock_virtual_advance(c, 2500);
	assert_int_equal(ratelimit_evict(lim), 0); /* still paused: kept */
	assert_int_equal(ratelimit_acquire(lim, "a", "site-1", &wait, why, sizeof(why)), FP_EAGAIN);
	assert_int_equal(wait, 500);
	clock_virtual_advance(c, 500);
	assert_int_equal(ratelimit_acquire(lim, "a", "site-1", &wait, why, sizeof(why)), 0);
	assert_int_equal(ratelimit_release(lim, "a"), 0);
	assert_int_equal(ratelimit_release(lim, "b"), 0);
	clock_virtual_advance(c, 1000);
	assert_int_equal(ratelimit_evict(lim), 3); /* a, b, site-1 */
	assert_int_equal(ratelimit_nkeys(lim), 0);
	ratelimit_free(lim);
	clock_free(c);
}

/* packaging (issue 15): serve's SIGHUP reload changes a live limiter's site rate, burst and BMC
 * concurrency; a site bucket keeps what it had and refills at the new rate. */
static void test_set_limits(void **state)
{
	struct fp_clock *c = clock_virtual_new(0);
	struct ratelimit_config cfg = {.site_rate_per_s = 10, .site_burst = 1};
	struct ratelimit *lim = ratelimit_new(c, &cfg);
	int64_t w = -1;
	assert_int_equal(ratelimit_acquire(lim, "b1", "s", &w, NULL, 0), 0);
	assert_int_equal(ratelimit_release(lim, "b1"), 0);
	assert_int_equal(ratelimit_acquire(lim, "b2", "s", &w, NULL, 0), FP_EAGAIN);
	assert_int_equal(w, 100); /* 10/s */
	ratelimit_set_limits(lim, 1, 0, 1, 1);
	assert_int_equal(ratelimit_acquire(lim, "b2", "s", &w, NULL, 0), FP_EAGAIN);
	assert_int_equal(w, 1000); /* 1/s from an empty bucket */
	clock_virtual_advance(c, 1000);
	assert_int_equal(ratelimit_acquire(lim, "b2", "s", &w, NULL, 0), 0);
	/* concurrency 1 -> 2 on a BMC holding a slot; no site limit */
	ratelimit_set_limits(lim, 1, 0, 0, 1);
	assert_int_equal(ratelimit_acquire(lim, "b2", "s", &w, NULL, 0), FP_EAGAIN);
	ratelimit_set_limits(lim, 2, 0, 0, 1);
	assert_int_equal(ratelimit_acquire(lim, "b2", "s", &w, NULL, 0), 0);
	assert_int_equal(ratelimit_release(lim, "b2"), 0);
	assert_int_equal(ratelimit_release(lim, "b2"), 0);
	/* a site limit again, 5/s burst 2: the site starts full */
	ratelimit_set_limits(lim, 1, 0, 5, 2);
	assert_int_equal(ratelimit_acquire(lim, "b3", "s", &w, NULL, 0), 0);
	assert_int_equal(ratelimit_acquire(lim, "b4", "s", &w, NULL, 0), 0);
	assert_int_equal(ratelimit_acquire(lim, "b5", "s", &w, NULL, 0), FP_EAGAIN);
	assert_int_equal(w, 200);
	ratelimit_free(lim);
	clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_refill_math),
		cmocka_unit_test(test_bucket_reserve_debt),
		cmocka_unit_test(test_keyed_concurrency),
		cmocka_unit_test(test_keyed_min_interval),
		cmocka_unit_test(test_keyed_site_bucket),
		cmocka_unit_test(test_keyed_eviction),
		cmocka_unit_test(test_keyed_key_cap),
		cmocka_unit_test(test_site_pause),
		cmocka_unit_test(test_set_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
