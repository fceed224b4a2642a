/* ratelimit.c - token buckets and the keyed BMC/site limiter of engine/ratelimit.h (DESIGN.md
 * principle 7). Buckets count micro-tokens in int64_t so refill and wait times are exact. The
 * keyed limiter keeps one base/hmap of BMC keys and one of site keys under a single mutex,
 * never blocks, honours per-site Retry-After pauses, and sweeps out keys whose state is
 * indistinguishable from a new key's once they have been idle for idle_evict_ms. */
#include "engine/ratelimit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/banned.h"

#define UT_PER_TOKEN 1000000LL
#define BUCKET_MAX_BURST 1000000000LL
#define RATELIMIT_MAX_PAUSE_MS (24LL * 3600 * 1000)

/* ---- token bucket ---- */

static int64_t ceil_div(int64_t a, int64_t b)
{
	return a <= 0 ? 0 : (a + b - 1) / b;
}

/* Bring tokens_ut up to now. Called with b->mu held. */
static void bucket_refill(struct ratelimit_bucket *b, int64_t now)
{
	if (now <= b->last_ms)
		return;
	int64_t elapsed = now - b->last_ms;
	b->last_ms = now;
	int64_t need = b->cap_ut - b->tokens_ut;
	if (need <= 0)
		return;
	if (elapsed >= ceil_div(need, b->rate_ut_per_ms))
		b->tokens_ut = b->cap_ut;
	else
		b->tokens_ut += elapsed * b->rate_ut_per_ms;
}

/* Sets the rate and burst as ratelimit_bucket_init says (tokens untouched). */
static void bucket_set(struct ratelimit_bucket *b, double rate_per_s, int64_t burst)
{
	b->rate_ut_per_ms = 0;
	if (rate_per_s > 0) {
		double r = rate_per_s * 1000.0;
		if (r > (double)UT_PER_TOKEN * BUCKET_MAX_BURST)
			r = (double)UT_PER_TOKEN * BUCKET_MAX_BURST;
		b->rate_ut_per_ms = (int64_t)(r + 0.5);
		if (b->rate_ut_per_ms < 1)
			b->rate_ut_per_ms = 1;
	}
	if (burst < 1)
		burst = 1;
	if (burst > BUCKET_MAX_BURST)
		burst = BUCKET_MAX_BURST;
	b->cap_ut = burst * UT_PER_TOKEN;
}

void ratelimit_bucket_init(struct ratelimit_bucket *b, struct fp_clock *clock, double rate_per_s,
			   int64_t burst)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->mu, NULL);
	b->clock = clock;
	bucket_set(b, rate_per_s, burst);
	b->tokens_ut = b->cap_ut;
	b->last_ms = clock_now_ms(clock);
}

void ratelimit_bucket_release(struct ratelimit_bucket *b)
{
	pthread_mutex_destroy(&b->mu);
}

int64_t ratelimit_bucket_try_take(struct ratelimit_bucket *b, int64_t n)
{
	if (n < 0 || n > b->cap_ut / UT_PER_TOKEN)
		return FP_EINVAL;
	if (n == 0 || b->rate_ut_per_ms == 0)
		return 0;
	int64_t need = n * UT_PER_TOKEN, wait = 0;
	pthread_mutex_lock(&b->mu);
	bucket_refill(b, clock_now_ms(b->clock));
	if (b->tokens_ut >= need)
		b->tokens_ut -= need;
	else
		wait = ceil_div(need - b->tokens_ut, b->rate_ut_per_ms);
	pthread_mutex_unlock(&b->mu);
	return wait;
}

int64_t ratelimit_bucket_reserve(struct ratelimit_bucket *b, int64_t n)
{
	if (n <= 0 || b->rate_ut_per_ms == 0)
		return 0;
	if (n > BUCKET_MAX_BURST)
		n = BUCKET_MAX_BURST;
	pthread_mutex_lock(&b->mu);
	bucket_refill(b, clock_now_ms(b->clock));
	b->tokens_ut -= n * UT_PER_TOKEN;
	int64_t wait = ceil_div(-b->tokens_ut, b->rate_ut_per_ms);
	pthread_mutex_unlock(&b->mu);
	return wait;
}

int64_t ratelimit_bucket_tokens(struct ratelimit_bucket *b)
{
	pthread_mutex_lock(&b->mu);
	if (b->rate_ut_per_ms)
		bucket_refill(b, clock_now_ms(b->clock));
	int64_t t = b->tokens_ut;
	pthread_mutex_unlock(&b->mu);
	/* floor toward -inf */
	return t >= 0 ? t / UT_PER_TOKEN : -ceil_div(-t, UT_PER_TOKEN);
}

/* Whether the bucket is full now (state equal to a fresh bucket). */
static int bucket_full(struct ratelimit_bucket *b)
{
	pthread_mutex_lock(&b->mu);
	if (b->rate_ut_per_ms)
		bucket_refill(b, clock_now_ms(b->clock));
	int full = b->tokens_ut >= b->cap_ut;
	pthread_mutex_unlock(&b->mu);
	return full;
}

/* ---- keyed limiter ---- */

struct bmc_state {
	int inflight;
	int has_end;
	int64_t last_end_ms;
	int64_t last_use_ms;
};

struct site_state {
	struct ratelimit_bucket bucket;
	int64_t last_use_ms;
	int64_t paused_until_ms; /* Retry-After from the site's API; <= now when not paused */
};

struct ratelimit {
	pthread_mutex_t mu;
	struct fp_clock *clock;
	struct ratelimit_config cfg;
	struct hmap bmcs, sites;
	int64_t last_sweep_ms;
};

struct ratelimit *ratelimit_new(struct fp_clock *clock, const struct ratelimit_config *cfg)
{
	struct ratelimit *lim = xcalloc(1, sizeof(*lim));
	pthread_mutex_init(&lim->mu, NULL);
	lim->clock = clock;
	hmap_init(&lim->bmcs);
	hmap_init(&lim->sites);
	if (cfg)
		lim->cfg = *cfg;
	struct ratelimit_config *c = &lim->cfg;
	if (c->bmc_max_concurrency <= 0)
		c->bmc_max_concurrency = 1;
	if (c->bmc_min_interval_ms < 0)
		c->bmc_min_interval_ms = 0;
	if (c->site_burst < 1)
		c->site_burst = 1;
	if (c->busy_retry_ms <= 0)
		c->busy_retry_ms = 100;
	if (c->idle_evict_ms <= 0)
		c->idle_evict_ms = 600000;
	if (c->max_keys == 0)
		c->max_keys = 65536;
	lim->last_sweep_ms = clock_now_ms(clock);
	return lim;
}

static void free_site(struct site_state *s)
{
	ratelimit_bucket_release(&s->bucket);
	free(s);
}

void ratelimit_free(struct ratelimit *lim)
{
	if (!lim)
		return;
	for (struct hmap_iter it = hmap_iter_start(&lim->bmcs); hmap_iter_next(&it);)
		free(it.e->value);
	for (struct hmap_iter it = hmap_iter_start(&lim->sites); hmap_iter_next(&it);)
		free_site(it.e->value);
	hmap_release(&lim->bmcs);
	hmap_release(&lim->sites);
	pthread_mutex_destroy(&lim->mu);
	free(lim);
}

/* Called with lim->mu held. */
static size_t evict_locked(struct ratelimit *lim, int64_t now)
{
	size_t dropped = 0;
	lim->last_sweep_ms = now;
	for (struct hmap_iter it = hmap_iter_start(&lim->bmcs); hmap_iter_next(&it);) {
		struct bmc_state *s = it.e->value;
		int fresh = s->inflight == 0 &&
			    (!s->has_end || now >= s->last_end_ms + lim->cfg.bmc_min_interval_ms);
		if (fresh && now - s->last_use_ms >= lim->cfg.idle_evict_ms) {
			hmap_remove(&lim->bmcs, it.e->key);
			free(s);
			dropped++;
		}
	}
	for (struct hmap_iter it = hmap_iter_start(&lim->sites); hmap_iter_next(&it);) {
		struct site_state *s = it.e->value;
		if (now - s->last_use_ms >= lim->cfg.idle_evict_ms && now >= s->paused_until_ms &&
		    bucket_full(&s->bucket)) {
			hmap_remove(&lim->sites, it.e->key);
			free_site(s);
			dropped++;
		}
	}
	return dropped;
}

size_t ratelimit_evict(struct ratelimit *lim)
{
	pthread_mutex_lock(&lim->mu);
	size_t n = evict_locked(lim, clock_now_ms(lim->clock));
	pthread_mutex_unlock(&lim->mu);
	return n;
}

size_t ratelimit_nkeys(struct ratelimit *lim)
{
	pthread_mutex_lock(&lim->mu);
	size_t n = lim->bmcs.count + lim->sites.count;
	pthread_mutex_unlock(&lim->mu);
	return n;
}

/* Room for `need` more keys, sweeping if the cap is reached. Called with lim->mu held. */
static int have_room(struct ratelimit *lim, int64_t now, size_t need)
{
	if (lim->bmcs.count + lim->sites.count + need <= lim->cfg.max_keys)
		return 1;
	evict_locked(lim, now);
	return lim->bmcs.count + lim->sites.count + need <= lim->cfg.max_keys;
}

static int refuse(int rc, int64_t wait, int64_t *wait_ms, char *why, size_t whylen, const char *fmt,
		  ...) __attribute__((format(printf, 6, 7)));

static int refuse(int rc, int64_t wait, int64_t *wait_ms, char *why, size_t whylen, const char *fmt,
		  ...)
{
	if (wait_ms)
		*wait_ms = wait;
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int ratelimit_acquire(struct ratelimit *lim, const char *bmc_key, const char *site_key,
		      int64_t *wait_ms, char *why, size_t whylen)
{
	if (!bmc_key || !*bmc_key)
		return refuse(FP_EINVAL, 0, wait_ms, why, whylen, "empty bmc key");
	int rc = 0;
	pthread_mutex_lock(&lim->mu);
	int64_t now = clock_now_ms(lim->clock);
	const struct ratelimit_config *c = &lim->cfg;
	if (now - lim->last_sweep_ms >= c->idle_evict_ms)
		evict_locked(lim, now);

	struct bmc_state *bs = hmap_get(&lim->bmcs, bmc_key);
	if (bs) {
		if (bs->inflight >= c->bmc_max_concurrency) {
			rc = refuse(FP_EAGAIN, c->busy_retry_ms, wait_ms, why, whylen,
				    "bmc concurrency %d reached", c->bmc_max_concurrency);
			goto out;
		}
		if (bs->has_end && now < bs->last_end_ms + c->bmc_min_interval_ms) {
			rc = refuse(FP_EAGAIN, bs->last_end_ms + c->bmc_min_interval_ms - now,
				    wait_ms, why, whylen, "bmc min interval %lldms not elapsed",
				    (long long)c->bmc_min_interval_ms);
			goto out;
		}
	}

	struct site_state *ss = NULL;
	int has_site = site_key && *site_key;
	if (has_site)
		ss = hmap_get(&lim->sites, site_key);
	if (ss && now < ss->paused_until_ms) {
		rc = refuse(FP_EAGAIN, ss->paused_until_ms - now, wait_ms, why, whylen,
			    "site paused by retry-after site=%s", site_key);
		goto out;
	}
	int use_site = has_site && c->site_rate_per_s > 0;
	size_t need = (bs ? 0 : 1) + (use_site && !ss ? 1 : 0);
	if (need && !have_room(lim, now, need)) {
		/* the sweep may have dropped bs or ss */
		rc = refuse(FP_EBUSY, c->busy_retry_ms, wait_ms, why, whylen,
			    "rate limiter key table full (%zu keys)", c->max_keys);
		goto out;
	}
	bs = hmap_get(&lim->bmcs, bmc_key);
	if (use_site) {
		ss = hmap_get(&lim->sites, site_key);
		if (!ss) {
			/* sweep may have dropped it; it was then fresh */
			ss = xcalloc(1, sizeof(*ss));
			ratelimit_bucket_init(&ss->bucket, lim->clock, c->site_rate_per_s,
					      c->site_burst);
			hmap_put(&lim->sites, site_key, ss);
		}
		ss->last_use_ms = now;
		int64_t w = ratelimit_bucket_try_take(&ss->bucket, 1);
		if (w > 0) {
			rc = refuse(FP_EAGAIN, w, wait_ms, why, whylen,
				    "site token bucket empty site=%s", site_key);
			goto out;
		}
	}
	if (!bs) {
		bs = xcalloc(1, sizeof(*bs));
		hmap_put(&lim->bmcs, bmc_key, bs);
	}
	bs->inflight++;
	bs->last_use_ms = now;
	if (wait_ms)
		*wait_ms = 0;
	if (why && whylen)
		why[0] = '\0';
out:
	pthread_mutex_unlock(&lim->mu);
	return rc;
}

int ratelimit_release(struct ratelimit *lim, const char *bmc_key)
{
	if (!bmc_key)
		return FP_ENOTFOUND;
	int rc = FP_ENOTFOUND;
	pthread_mutex_lock(&lim->mu);
	struct bmc_state *bs = hmap_get(&lim->bmcs, bmc_key);
	if (bs && bs->inflight > 0) {
		int64_t now = clock_now_ms(lim->clock);
		bs->inflight--;
		bs->has_end = 1;
		bs->last_end_ms = now;
		bs->last_use_ms = now;
		rc = 0;
	}
	pthread_mutex_unlock(&lim->mu);
	return rc;
}

int ratelimit_site_pause(struct ratelimit *lim, const char *site_key, int64_t ms)
{
	if (!site_key || !*site_key)
		return FP_EINVAL;
	if (ms <= 0)
		return 0;
	if (ms > RATELIMIT_MAX_PAUSE_MS)
		ms = RATELIMIT_MAX_PAUSE_MS;
	int rc = 0;
	pthread_mutex_lock(&lim->mu);
	int64_t now = clock_now_ms(lim->clock);
	struct site_state *ss = hmap_get(&lim->sites, site_key);
	if (!ss) {
		if (!have_room(lim, now, 1)) {
			rc = FP_EBUSY;
			goto out;
		}
		ss = xcalloc(1, sizeof(*ss));
		ratelimit_bucket_init(&ss->bucket, lim->clock, lim->cfg.site_rate_per_s,
				      lim->cfg.site_burst);
		hmap_put(&lim->sites, site_key, ss);
	}
	ss->last_use_ms = now;
	if (now + ms > ss->paused_until_ms)
		ss->paused_until_ms = now + ms;
out:
	pthread_mutex_unlock(&lim->mu);
	return rc;
}

/* packaging (issue 15): serve's SIGHUP reload (ratelimit.h) */
void ratelimit_set_limits(struct ratelimit *lim, int bmc_max_concurrency,
			  int64_t bmc_min_interval_ms, double site_rate_per_s, int64_t site_burst)
{
	pthread_mutex_lock(&lim->mu);
	struct ratelimit_config *c = &lim->cfg;
	c->bmc_max_concurrency = bmc_max_concurrency <= 0 ? 1 : bmc_max_concurrency;
	c->bmc_min_interval_ms = bmc_min_interval_ms < 0 ? 0 : bmc_min_interval_ms;
	c->site_rate_per_s = site_rate_per_s;
	c->site_burst = site_burst < 1 ? 1 : site_burst;
	int64_t now = clock_now_ms(lim->clock);
	for (struct hmap_iter it = hmap_iter_start(&lim->sites); hmap_iter_next(&it);) {
		struct ratelimit_bucket *b = &((struct site_state *)it.e->value)->bucket;
		pthread_mutex_lock(&b->mu);
		if (b->rate_ut_per_ms) {
			bucket_refill(b, now); /* what accrued at the old rate is kept */
		} else {
			b->tokens_ut = INT64_MAX; /* was unlimited: starts full, as a new key */
			b->last_ms = now;
		}
		bucket_set(b, c->site_rate_per_s, c->site_burst);
		if (b->tokens_ut > b->cap_ut)
			b->tokens_ut = b->cap_ut;
		pthread_mutex_unlock(&b->mu);
	}
	pthread_mutex_unlock(&lim->mu);
}
