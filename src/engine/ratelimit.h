/* engine/ratelimit.h - rate limits measured against a struct fp_clock, for DESIGN.md principle 7
 * ("nested rate limits ... over a limit = queued with a reason").
 *
 * struct ratelimit_bucket is a token bucket (rate tokens per second, at most burst tokens,
 * starting full) with two ways to spend: try_take (all-or-nothing, for callers that retry) and
 * reserve (always takes, possibly into debt, and says how long to wait: golang.org/x/time/rate
 * Reserve().Delay(), what client-go's BucketRateLimiter uses). Token arithmetic is exact
 * integer arithmetic in micro-tokens, so waits in virtual time are reproducible.
 *
 * struct ratelimit is the keyed, non-blocking limiter in front of BMC commands: per BMC key a
 * maximum concurrency and a minimum gap between the end of one command and the start of the
 * next; per site key a token bucket. ratelimit_acquire either grants a slot or answers
 * FP_EAGAIN with when to retry and why, so reconcile workers and the virtual-time loop never
 * block. Keys whose state has returned to "fresh" and that have been idle long enough are
 * evicted, so memory follows the working set, with a hard cap on live keys. */
#ifndef FP_ENGINE_RATELIMIT_H
#define FP_ENGINE_RATELIMIT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

struct ratelimit_bucket {
	pthread_mutex_t mu;
	struct fp_clock *clock; /* borrowed */
	int64_t rate_ut_per_ms; /* refill in micro-tokens per ms (= tokens/s * 1000); 0 = unlimited */
	int64_t cap_ut;         /* burst in micro-tokens */
	int64_t tokens_ut;      /* may be negative after reserve() */
	int64_t last_ms;        /* clock time tokens_ut was computed for */
};

/* ratelimit_bucket_init prepares an embedded bucket: rate_per_s tokens per second (rounded to
 * 0.001; <= 0 means unlimited: every take succeeds at once), at most burst tokens (burst < 1 is
 * taken as 1), starting full at clock_now_ms(clock). The clock is borrowed and must outlive the
 * bucket. Release with ratelimit_bucket_release. Thread-safe afterwards. */
void ratelimit_bucket_init(struct ratelimit_bucket *b, struct fp_clock *clock, double rate_per_s,
			   int64_t burst);
void ratelimit_bucket_release(struct ratelimit_bucket *b);

/* ratelimit_bucket_try_take takes n tokens if they are all there now and returns 0; otherwise
 * takes nothing and returns the milliseconds (> 0) until n tokens will be there, assuming
 * nobody else takes. n == 0 returns 0. n < 0 or n > burst (can never succeed) returns FP_EINVAL.
 * Example: rate 10/s, burst 1, just emptied: returns 100. */
int64_t ratelimit_bucket_try_take(struct ratelimit_bucket *b, int64_t n);

/* ratelimit_bucket_reserve always takes n tokens (n >= 0; the balance may go negative) and
 * returns the milliseconds the caller must wait before acting: 0 if the tokens were there,
 * else the time until the balance is back to zero. Unlimited buckets return 0. */
int64_t ratelimit_bucket_reserve(struct ratelimit_bucket *b, int64_t n);

/* ratelimit_bucket_tokens returns the whole tokens available now (after refill), floored; may be
 * negative after reserve. For tests, metrics and "why queued" messages. */
int64_t ratelimit_bucket_tokens(struct ratelimit_bucket *b);

struct ratelimit_config {
	int bmc_max_concurrency;     /* commands in flight per BMC key; <= 0 means 1 */
	int64_t bmc_min_interval_ms; /* gap from a release to the next acquire on that key; >= 0 */
	double site_rate_per_s;      /* per site key token bucket; <= 0 = no site limit */
	int64_t site_burst;          /* < 1 taken as 1 */
	int64_t busy_retry_ms;       /* retry hint when concurrency is full; <= 0 means 100 */
	int64_t idle_evict_ms; /* evict keys idle (and back to fresh) this long; <= 0: 600000 */
	size_t max_keys;       /* hard cap on live BMC + site keys; 0 means 65536 */
};

struct ratelimit;

/* ratelimit_new returns a keyed limiter owned by the caller (free with ratelimit_free). cfg is
 * copied; NULL means all defaults (concurrency 1, no interval, no site limit). The clock is
 * borrowed and must outlive the limiter. Thread-safe. */
struct ratelimit *ratelimit_new(struct fp_clock *clock, const struct ratelimit_config *cfg);
/* ratelimit_free frees the limiter; slots still held are forgotten. NULL is a no-op. */
void ratelimit_free(struct ratelimit *lim);

/* ratelimit_acquire asks for one command slot on bmc_key (required, non-empty) within site_key
 * (NULL or "" = no site limit). Checks, in order: BMC concurrency, BMC minimum interval since
 * the last release, a site pause (ratelimit_site_pause), the site token bucket; the site token
 * is taken only when every other check passes.
 * Returns 0 with a slot held (*wait_ms = 0; the caller must call ratelimit_release once the
 * command ends), or FP_EAGAIN with *wait_ms > 0 milliseconds after which to retry (exact for
 * interval and bucket, the busy_retry_ms hint for concurrency) and a reason in why, e.g.
 * "bmc concurrency 1 reached", "bmc min interval 500ms not elapsed", "site paused by retry-after
 * site=s1", "site token bucket empty site=s1".
 * FP_EINVAL for a NULL/empty bmc_key; FP_EBUSY (wait_ms = busy_retry_ms) when max_keys live keys
 * are held and none can be evicted. Keys are copied. why/whylen may be NULL/0; on success
 * why is set to "". wait_ms may be NULL. */
int ratelimit_acquire(struct ratelimit *lim, const char *bmc_key, const char *site_key,
		      int64_t *wait_ms, char *why, size_t whylen);

/* ratelimit_release ends one command on bmc_key, stamping now as its end time (the minimum
 * interval counts from here). Returns 0, or FP_ENOTFOUND if bmc_key holds no slot (the call is
 * then ignored). */
int ratelimit_release(struct ratelimit *lim, const char *bmc_key);

/* ratelimit_site_pause refuses every acquire within site_key for ms from now (capped at 24 h),
 * for a site or provider API that answered 429/503 with Retry-After (RFC 9110 section 10.2.3);
 * acquires answer FP_EAGAIN, the remaining pause as wait_ms, and the reason "site paused by
 * retry-after site=<key>". A shorter pause never shortens a longer one; ms <= 0 is a no-op.
 * Applies whether or not a site rate is configured. Returns 0, FP_EINVAL for an empty key, or
 * FP_EBUSY when the key table is full. */
int ratelimit_site_pause(struct ratelimit *lim, const char *site_key, int64_t ms);

/* ratelimit_nkeys returns the number of live BMC keys plus site keys (for tests and metrics). */
size_t ratelimit_nkeys(struct ratelimit *lim);

/* ratelimit_evict drops every key whose state equals a fresh key's and that has been idle at
 * least idle_evict_ms; acquire also calls it now and then. Returns the number dropped. */
size_t ratelimit_evict(struct ratelimit *lim);

/* packaging (issue 15): ratelimit_set_limits changes a live limiter's BMC concurrency, minimum
 * interval, site rate (tokens per second; <= 0 = no site limit) and site burst, normalised as
 * ratelimit_new does, for serve's SIGHUP reload. Slots held stay held (a lower concurrency
 * refuses until enough are released); a site bucket keeps the tokens it had, cut to the new
 * burst, and refills at the new rate from now. Thread-safe. */
void ratelimit_set_limits(struct ratelimit *lim, int bmc_max_concurrency,
			  int64_t bmc_min_interval_ms, double site_rate_per_s, int64_t site_burst);

#endif
