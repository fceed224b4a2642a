/* breaker.c - the keyed circuit breaker of engine/breaker.h. One base/hmap of struct bkey
 * under one mutex; a key exists only while it carries state a fresh key does not (a failure
 * count, or open). Probe timeouts are applied lazily, at the deadline's time, by whichever call
 * looks at the key first, so nothing runs on a timer and virtual-time runs are exact. */
#include "engine/breaker.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/banned.h"

struct bkey {
	int failures;              /* consecutive, while closed */
	int open;                  /* tripped: open or half-open */
	int probing;               /* a probe was granted and not yet reported */
	int64_t open_until_ms;     /* open: no probe before this */
	int64_t probe_deadline_ms; /* probing: counts as failed at this time */
	int64_t backoff_ms;        /* open: the backoff (without jitter) of the last opening */
	int64_t last_use_ms;
};

struct breaker {
	pthread_mutex_t mu;
	struct fp_clock *clock;
	struct fp_rng *rng;
	struct breaker_config cfg;
	struct hmap keys;
	int64_t last_sweep_ms;
};

struct breaker *breaker_new(struct fp_clock *clock, struct fp_rng *rng,
			    const struct breaker_config *cfg)
{
	struct breaker *br = xcalloc(1, sizeof(*br));
	pthread_mutex_init(&br->mu, NULL);
	br->clock = clock;
	br->rng = rng;
	hmap_init(&br->keys);
	if (cfg)
		br->cfg = *cfg;
	struct breaker_config *c = &br->cfg;
	if (c->failure_threshold <= 0)
		c->failure_threshold = 5;
	if (c->probe_min_ms <= 0)
		c->probe_min_ms = 5000;
	if (c->probe_max_ms <= 0)
		c->probe_max_ms = 300000;
	if (c->probe_max_ms < c->probe_min_ms)
		c->probe_max_ms = c->probe_min_ms;
	if (!(c->jitter > 0)) /* also NaN */
		c->jitter = 0;
	if (c->jitter > 1)
		c->jitter = 1;
	if (c->probe_timeout_ms <= 0)
		c->probe_timeout_ms = 120000;
	if (c->max_keys == 0)
		c->max_keys = 65536;
	br->last_sweep_ms = clock_now_ms(clock);
	return br;
}

void breaker_free(struct breaker *br)
{
	if (!br)
		return;
	for (struct hmap_iter it = hmap_iter_start(&br->keys); hmap_iter_next(&it);)
		free(it.e->value);
	hmap_release(&br->keys);
	pthread_mutex_destroy(&br->mu);
	free(br);
}

/* Opens (or re-opens) k at time `from` with backoff b plus jitter. */
static void open_at(struct breaker *br, struct bkey *k, int64_t from, int64_t b)
{
	int64_t j = 0;
	int64_t span = (int64_t)floor((double)b * br->cfg.jitter);
	if (br->rng && span > 0)
		j = (int64_t)fp_rng_below(br->rng, (uint64_t)span + 1);
	k->open = 1;
	k->probing = 0;
	k->failures = 0;
	k->backoff_ms = b;
	k->open_until_ms = from + b + j;
}

static int64_t doubled(const struct breaker *br, int64_t b)
{
	return b > br->cfg.probe_max_ms - b ? br->cfg.probe_max_ms : b * 2;
}

/* A probe past its deadline counts as failed at the deadline. Called with br->mu held. */
static void apply_timeout(struct breaker *br, struct bkey *k, int64_t now)
{
	if (k->open && k->probing && now >= k->probe_deadline_ms)
		open_at(br, k, k->probe_deadline_ms, doubled(br, k->backoff_ms));
}

/* Whether k may be dropped at now: closed with failures and idle for probe_max_ms, or open
 * with its probe due for probe_max_ms and nobody asking. Called with br->mu held. */
static int droppable(const struct breaker *br, const struct bkey *k, int64_t now)
{
	if (!k->open)
		return now - k->last_use_ms >= br->cfg.probe_max_ms;
	return !k->probing && now - k->open_until_ms >= br->cfg.probe_max_ms &&
	       now - k->last_use_ms >= br->cfg.probe_max_ms;
}

static void sweep_locked(struct breaker *br, int64_t now)
{
	br->last_sweep_ms = now;
	for (struct hmap_iter it = hmap_iter_start(&br->keys); hmap_iter_next(&it);) {
		struct bkey *k = it.e->value;
		apply_timeout(br, k, now);
		if (droppable(br, k, now)) {
			hmap_remove(&br->keys, it.e->key);
			free(k);
		}
	}
}

/* Looks key up, first sweeping when a sweep is due. Called with br->mu held. */
static struct bkey *lookup(struct breaker *br, const char *key, int64_t now)
{
	if (now - br->last_sweep_ms >= br->cfg.probe_max_ms)
		sweep_locked(br, now);
	struct bkey *k = hmap_get(&br->keys, key);
	if (k)
		apply_timeout(br, k, now);
	return k;
}

static void drop(struct breaker *br, const char *key, struct bkey *k)
{
	hmap_remove(&br->keys, key);
	free(k);
}

int breaker_allow(struct breaker *br, const char *key, int64_t *wait_ms)
{
	if (wait_ms)
		*wait_ms = 0;
	if (!key || !*key)
		return FP_EINVAL;
	int rc = 0;
	pthread_mutex_lock(&br->mu);
	int64_t now = clock_now_ms(br->clock);
	struct bkey *k = lookup(br, key, now);
	if (!k || !k->open)
		goto out;
	k->last_use_ms = now;
	int64_t w = 0;
	if (k->probing) {
		w = k->probe_deadline_ms - now;
		if (w > br->cfg.probe_min_ms)
			w = br->cfg.probe_min_ms;
	} else if (now < k->open_until_ms) {
		w = k->open_until_ms - now;
	} else {
		k->probing = 1;
		k->probe_deadline_ms = now + br->cfg.probe_timeout_ms;
		goto out;
	}
	rc = FP_EAGAIN;
	if (wait_ms)
		*wait_ms = w;
out:
	pthread_mutex_unlock(&br->mu);
	return rc;
}

/* Room for one more key, dropping what can be dropped, then the closed key idle longest. */
static int make_room(struct breaker *br, int64_t now)
{
	if (br->keys.count < br->cfg.max_keys)
		return 1;
	sweep_locked(br, now);
	if (br->keys.count < br->cfg.max_keys)
		return 1;
	const char *victim = NULL;
	int64_t oldest = 0;
	for (struct hmap_iter it = hmap_iter_start(&br->keys); hmap_iter_next(&it);) {
		struct bkey *k = it.e->value;
		if (!k->open && (!victim || k->last_use_ms < oldest)) {
			victim = it.e->key;
			oldest = k->last_use_ms;
		}
	}
	if (!victim)
		return 0;
	drop(br, victim, hmap_get(&br->keys, victim));
	return 1;
}

int breaker_report(struct breaker *br, const char *key, int ok)
{
	if (!key || !*key)
		return FP_EINVAL;
	int t = BREAKER_T_NONE;
	pthread_mutex_lock(&br->mu);
	int64_t now = clock_now_ms(br->clock);
	struct bkey *k = lookup(br, key, now);
	if (k && k->open) {
		if (!k->probing) /* a straggler, or a probe reported after its timeout */
			goto out;
		if (ok) {
			drop(br, key, k); /* closed with no failures = a fresh key */
			t = BREAKER_T_CLOSED;
		} else {
			k->last_use_ms = now;
			open_at(br, k, now, doubled(br, k->backoff_ms));
		}
		goto out;
	}
	if (ok) {
		if (k)
			drop(br, key, k);
		goto out;
	}
	if (!k) {
		if (!make_room(br, now))
			goto out; /* fail open: cannot track this key */
		k = xcalloc(1, sizeof(*k));
		hmap_put(&br->keys, key, k);
	}
	k->last_use_ms = now;
	if (++k->failures >= br->cfg.failure_threshold) {
		open_at(br, k, now, br->cfg.probe_min_ms);
		t = BREAKER_T_OPENED;
	}
out:
	pthread_mutex_unlock(&br->mu);
	return t;
}

enum breaker_state breaker_state(struct breaker *br, const char *key)
{
	if (!key || !*key)
		return BREAKER_CLOSED;
	enum breaker_state s = BREAKER_CLOSED;
	pthread_mutex_lock(&br->mu);
	int64_t now = clock_now_ms(br->clock);
	struct bkey *k = lookup(br, key, now);
	if (k && k->open)
		s = !k->probing && now < k->open_until_ms ? BREAKER_OPEN : BREAKER_HALF_OPEN;
	pthread_mutex_unlock(&br->mu);
	return s;
}

size_t breaker_nkeys(struct breaker *br)
{
	pthread_mutex_lock(&br->mu);
	size_t n = br->keys.count;
	pthread_mutex_unlock(&br->mu);
	return n;
}
