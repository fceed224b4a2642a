/* engine/workqueue.h - the queue of keys that controllers reconcile, with client-go workqueue
 * semantics (k8s.io/client-go/util/workqueue: queue.go, delaying_queue.go,
 * default_rate_limiters.go) so DESIGN.md principle 2 holds: a key is queued at most once, and a
 * key being processed is never handed to a second worker; adding it meanwhile marks it dirty and
 * it is queued again when the worker calls workqueue_done.
 *
 * On top: delayed adds through the clock's timers, and rate-limited adds whose delay is the
 * larger of a per-key exponential backoff (base_ms * 2^failures, capped at max_ms, plus jitter)
 * and a global token bucket (client-go's MaxOfRateLimiter(ItemExponentialFailureRateLimiter,
 * BucketRateLimiter)). Works threaded (workqueue_get blocks) and in single-threaded virtual time
 * (workqueue_try_get never blocks; delayed keys appear when the virtual clock is advanced).
 *
 * Keys are NUL-terminated strings, copied on add. Memory is one record per distinct key that is
 * queued, processing, waiting, or has a failure count (workqueue_forget clears the count).
 * Metrics (base/metrics.h), labelled name=<queue name>: fleetplane_workqueue_depth (gauge, keys
 * queued and not yet handed out), fleetplane_workqueue_adds_total (keys actually queued, dedups
 * excluded), fleetplane_workqueue_retries_total (rate-limited adds). All functions are
 * thread-safe. */
#ifndef FP_ENGINE_WORKQUEUE_H
#define FP_ENGINE_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

struct workqueue_config {
	int64_t base_delay_ms; /* first backoff; <= 0 means 5 (client-go default) */
	int64_t max_delay_ms;  /* backoff cap; <= 0 means 1000000 (1000 s, client-go default) */
	double jitter;         /* extra delay uniform in [0, jitter * backoff]; 0..1, 0 = none */
	double qps;            /* global bucket for rate-limited adds; < 0 none, 0 means 10 */
	int64_t burst;         /* global bucket burst; <= 0 means 100 */
};

struct workqueue;

/* workqueue_new returns a queue owned by the caller (free with workqueue_free). name (copied,
 * non-empty) labels its metrics. clock is borrowed and must outlive the queue; rng is borrowed
 * and used only for jitter (may be NULL when cfg->jitter is 0). cfg is copied; NULL means
 * client-go's defaults (5 ms .. 1000 s backoff, no jitter, 10 qps burst 100). */
struct workqueue *workqueue_new(const char *name, struct fp_clock *clock, struct fp_rng *rng,
				const struct workqueue_config *cfg);

/* workqueue_free shuts the queue down, cancels its timer (a timer callback already running is
 * waited for) and frees it with every key record; keys handed out and not done become invalid.
 * The caller first makes sure no other thread is inside or will call into the queue: shut down,
 * join the workers (they get FP_ECLOSED), then free. NULL is a no-op. */
void workqueue_free(struct workqueue *wq);

/* workqueue_add queues key unless it is already queued (dedup) or being processed (then it is
 * marked dirty and queued at done). Ignored after shutdown. */
void workqueue_add(struct workqueue *wq, const char *key);

/* workqueue_add_after adds key once delay_ms has passed on the queue's clock (delay_ms <= 0: at
 * once). A key already waiting keeps the earlier of its two times. Ignored after shutdown. */
void workqueue_add_after(struct workqueue *wq, const char *key, int64_t delay_ms);

/* workqueue_add_rate_limited adds key after max(backoff, global bucket wait): backoff is
 * min(base_ms * 2^failures, max_ms) plus jitter, where failures counts this key's earlier
 * rate-limited adds since the last forget; each call increments it and the retries metric, and
 * takes one token from the global bucket (reserve: the bucket may go into debt). Returns the
 * delay in ms it chose, or FP_ECLOSED after shutdown. */
int64_t workqueue_add_rate_limited(struct workqueue *wq, const char *key);

/* workqueue_forget resets key's failure count (call after a successful reconcile); it does not
 * remove the key from the queue. */
void workqueue_forget(struct workqueue *wq, const char *key);

/* workqueue_num_requeues returns key's failure count (0 for unknown keys). */
int workqueue_num_requeues(struct workqueue *wq, const char *key);

/* workqueue_get blocks until a key is queued, marks it processing and stores it in *key.
 * *key is owned by the queue and valid until workqueue_done(wq, *key) returns; do not free it.
 * Returns 0, or FP_ECLOSED once the queue is shut down and no key is queued (blocked getters
 * wake on shutdown). Keys still queued at shutdown are handed out first. */
int workqueue_get(struct workqueue *wq, const char **key);

/* workqueue_try_get is workqueue_get without blocking: FP_EAGAIN when nothing is queued. */
int workqueue_try_get(struct workqueue *wq, const char **key);

/* workqueue_done ends processing of key (the pointer from get, or an equal string); if key was
 * added meanwhile it is queued again. Returns 0, or FP_ENOTFOUND if key is not processing. */
int workqueue_done(struct workqueue *wq, const char *key);

/* workqueue_len returns the number of keys queued and not yet handed out (waiting, delayed and
 * processing keys are not counted), like client-go's Len. */
size_t workqueue_len(struct workqueue *wq);

/* workqueue_nkeys returns the number of key records held (queued, processing, waiting, or with
 * a failure count): the queue's memory footprint in keys. */
size_t workqueue_nkeys(struct workqueue *wq);

/* workqueue_nwaiting returns the number of threads blocked in workqueue_get. */
size_t workqueue_nwaiting(struct workqueue *wq);

/* workqueue_shutdown stops accepting adds, drops delayed keys, and wakes every blocked getter;
 * getters drain the keys still queued, then get FP_ECLOSED. Idempotent. */
void workqueue_shutdown(struct workqueue *wq);

/* workqueue_shutting_down returns 1 after workqueue_shutdown, else 0. */
int workqueue_shutting_down(struct workqueue *wq);

#endif
