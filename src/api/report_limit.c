/* report_limit.c - the per-node and per-token rate limit on agent reports, POST
 * /v1/nodes/{name}:report (docs/api.md "Report rate limit"; break report 4b #1 and #3: one
 * agent token could flood the audit trail and serve's memory; issue 16 item 12: one operator
 * token could flood it through many nodes, two tokens of one node could double its rate). Two
 * token buckets per node and the same two per token (engine/ratelimit.h), at the same rates:
 * reports (rate per second, burst) and events (per minute, the bucket holding a minute's worth
 * but at least one full report of 256 events). A report is admitted only when all four have
 * room, and then takes from all four; otherwise nothing is taken and the caller answers 429
 * with the wait of the first limit hit (the node's before the token's).
 *
 * Nodes and tokens live in two base/hmaps under one mutex. An entry whose buckets are both full
 * again is the same as a new one and is swept out (at most once a minute, and whenever a table
 * is full), so memory follows the nodes and tokens that reported in the last minute or so, with
 * a hard cap of API_REPORT_LIMIT_MAX_NODES entries in each table. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/hmap.h"
#include "base/log.h"
#include "engine/clock.h"
#include "engine/ratelimit.h"
#include "base/banned.h"

#define SWEEP_EVERY_MS 60000

struct report_limit_node {
	struct ratelimit_bucket reports, events;
};

struct api_report_limiter {
	pthread_mutex_t mu;
	struct fp_clock *clock;      /* borrowed, or own_clock */
	struct fp_clock *own_clock;  /* when the server was given no clock */
	struct api_report_limit cfg; /* resolved: no zeros, < 0 = off */
	int64_t events_burst;
	struct hmap nodes;  /* node name -> struct report_limit_node */
	struct hmap tokens; /* token name -> struct report_limit_node (same buckets) */
	int64_t last_sweep_ms;
};

void api_report_limit_resolve(const struct api_report_limit *in, struct api_report_limit *out)
{
	*out = in ? *in : (struct api_report_limit){0};
	if (out->reports_per_s == 0)
		out->reports_per_s = API_REPORT_LIMIT_RATE;
	if (out->burst <= 0)
		out->burst = API_REPORT_LIMIT_BURST;
	if (out->events_per_min == 0)
		out->events_per_min = API_REPORT_LIMIT_EVENTS_PER_MIN;
}

struct api_report_limiter *api_report_limiter_new(const struct api_report_limit *cfg,
						  struct fp_clock *clock)
{
	struct api_report_limiter *l = xcalloc(1, sizeof(*l));
	api_report_limit_resolve(cfg, &l->cfg);
	l->events_burst = l->cfg.events_per_min > API_REPORT_MAX_EVENTS ? l->cfg.events_per_min
									: API_REPORT_MAX_EVENTS;
	if (!clock)
		clock = l->own_clock = clock_real_new();
	l->clock = clock;
	l->last_sweep_ms = clock_now_ms(clock);
	pthread_mutex_init(&l->mu, NULL);
	hmap_init(&l->nodes);
	hmap_init(&l->tokens);
	log_info(
		"api report limit per node and per token reports_per_s=%g burst=%ld events_per_min=%ld "
		"events_burst=%lld (negative = off)",
		l->cfg.reports_per_s, l->cfg.burst, l->cfg.events_per_min,
		(long long)l->events_burst);
	return l;
}

static void node_free(struct report_limit_node *n)
{
	ratelimit_bucket_release(&n->reports);
	ratelimit_bucket_release(&n->events);
	free(n);
}

void api_report_limiter_free(struct api_report_limiter *l)
{
	if (!l)
		return;
	for (struct hmap_iter it = hmap_iter_start(&l->nodes); hmap_iter_next(&it);)
		node_free(it.e->value);
	for (struct hmap_iter it = hmap_iter_start(&l->tokens); hmap_iter_next(&it);)
		node_free(it.e->value);
	hmap_release(&l->nodes);
	hmap_release(&l->tokens);
	pthread_mutex_destroy(&l->mu);
	clock_free(l->own_clock);
	free(l);
}

/* 1 when n's buckets are both full: the same state as a new entry. */
static int node_idle(const struct api_report_limiter *l, struct report_limit_node *n)
{
	return ratelimit_bucket_tokens(&n->reports) >= l->cfg.burst &&
	       ratelimit_bucket_tokens(&n->events) >= l->events_burst;
}

/* Drops the idle entries of m. Caller holds l->mu. */
static void sweep_map(struct api_report_limiter *l, struct hmap *m)
{
	struct hmap_iter it = hmap_iter_start(m);
	while (hmap_iter_next(&it)) {
		struct report_limit_node *n = it.e->value;
		if (node_idle(l, n)) {
			/* the iterator already holds the next entry, so removing this one is safe */
			hmap_remove(m, it.e->key);
			node_free(n);
		}
	}
}

static void sweep(struct api_report_limiter *l, int64_t now)
{
	l->last_sweep_ms = now;
	sweep_map(l, &l->nodes);
	sweep_map(l, &l->tokens);
}

/* The entry of key in m, made when absent; NULL when m holds API_REPORT_LIMIT_MAX_NODES
 * entries, none idle. Caller holds l->mu. */
static struct report_limit_node *entry_get(struct api_report_limiter *l, struct hmap *m,
					   const char *key)
{
	struct report_limit_node *e = hmap_get(m, key);
	if (e)
		return e;
	if (m->count >= API_REPORT_LIMIT_MAX_NODES)
		return NULL;
	e = xcalloc(1, sizeof(*e));
	ratelimit_bucket_init(&e->reports, l->clock,
			      l->cfg.reports_per_s < 0 ? 0 : l->cfg.reports_per_s, l->cfg.burst);
	ratelimit_bucket_init(&e->events, l->clock,
			      l->cfg.events_per_min < 0 ? 0 : l->cfg.events_per_min / 60.0,
			      l->events_burst);
	hmap_put(m, key, e);
	return e;
}

int64_t api_report_limit_take(struct api_report_limiter *l, const char *node, const char *token,
			      size_t nevents, enum api_report_limit_kind *kind, int *by_token,
			      int64_t *left)
{
	*kind = API_REPORT_LIMIT_OK;
	*by_token = 0;
	*left = 0;
	if (l->cfg.reports_per_s < 0 && l->cfg.events_per_min < 0)
		return 0;
	int64_t n = (int64_t)nevents > l->events_burst ? l->events_burst : (int64_t)nevents;
	int64_t wait = 0;
	pthread_mutex_lock(&l->mu);
	int64_t now = clock_now_ms(l->clock);
	if (now - l->last_sweep_ms >= SWEEP_EVERY_MS ||
	    l->nodes.count >= API_REPORT_LIMIT_MAX_NODES ||
	    l->tokens.count >= API_REPORT_LIMIT_MAX_NODES)
		sweep(l, now);
	struct report_limit_node *e[2] = {entry_get(l, &l->nodes, node), NULL};
	if (!e[0]) {
		*kind = API_REPORT_LIMIT_NODES;
		wait = 1000;
		goto out;
	}
	e[1] = entry_get(l, &l->tokens, token);
	if (!e[1]) {
		*kind = API_REPORT_LIMIT_NODES;
		*by_token = 1;
		wait = 1000;
		goto out;
	}
	/* Every check first without taking: the buckets have no refund, and l->mu orders every
	 * take, so the tokens counted here are still there below (time only adds). The node's
	 * limits are looked at before the token's, events before reports. */
	for (int i = 0; i < 2; i++)
		if (l->cfg.events_per_min >= 0 && n > 0 &&
		    ratelimit_bucket_tokens(&e[i]->events) < n) {
			*kind = API_REPORT_LIMIT_EVENTS;
			*by_token = i;
			*left = ratelimit_bucket_tokens(&e[i]->events);
			/* takes nothing: it would not fit */
			wait = ratelimit_bucket_try_take(&e[i]->events, n);
			if (wait <= 0)
				wait = 1;
			goto out;
		}
	for (int i = 0; i < 2; i++)
		if (l->cfg.reports_per_s >= 0 && ratelimit_bucket_tokens(&e[i]->reports) < 1) {
			*kind = API_REPORT_LIMIT_REPORTS;
			*by_token = i;
			wait = ratelimit_bucket_try_take(&e[i]->reports, 1); /* takes nothing */
			if (wait <= 0)
				wait = 1;
			goto out;
		}
	wait = 0;
	for (int i = 0; i < 2; i++) {
		if (l->cfg.reports_per_s >= 0)
			ratelimit_bucket_try_take(&e[i]->reports, 1);
		if (l->cfg.events_per_min >= 0 && n > 0)
			ratelimit_bucket_try_take(&e[i]->events, n);
	}
out:
	pthread_mutex_unlock(&l->mu);
	return wait;
}

const struct api_report_limit *api_report_limit_config(const struct api_report_limiter *l)
{
	return &l->cfg;
}

int64_t api_report_limit_events_burst(const struct api_report_limiter *l)
{
	return l->events_burst;
}
