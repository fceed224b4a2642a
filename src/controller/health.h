/* controller/health.h - the health controller: takes agent reports (health events, detector
 * liveness, heartbeats), applies the health policy (core/health.h: the XID catalog compiled into
 * per-code rules, count-in-window thresholds, job attribution, lemon scores), and places or
 * suppresses `health` holds with the remediation ladder the lifecycle controller then runs under
 * the disruption budgets (controller/budget.h). A correlated-failure breaker per failure domain
 * stops automatic holds when too many nodes of one domain turn unhealthy at once (DESIGN.md
 * principle 4); a human resets it.
 *
 * Store documents it writes: /healthevents/<node>/<id>, /breakers/<domain>.<value>,
 * /policies/default, audit /events/<id> (reason HealthDecision, CorrelatedFailureBreakerOpen,
 * BreakerReset, HealthPolicyChanged), and node status (holds, conditions AgentAlive,
 * DetectorsLive, GPUHealthy, HealthActionsSuppressed; status.remediation) by CAS.
 * Shapes: docs/api.md ("Health") and the design contract in docs/health.md.
 *
 * Thread-safe: API worker threads call health_report concurrently. */
#ifndef FP_CONTROLLER_HEALTH_H
#define FP_CONTROLLER_HEALTH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "engine/cache.h"
#include "store/store.h"

struct health_config {
	struct store *store;    /* borrowed */
	struct cache *cache;    /* borrowed; node reads (may be NULL: read the store) */
	struct fp_clock *clock; /* borrowed; wall time for documents, timers for the sweep */
	struct fp_rng *rng;     /* borrowed; event ids */
	/* AgentAlive goes False when no report came for this long; 0 = 3 x the agent's
	 * reported intervalSeconds, at least 90 s. */
	int64_t heartbeat_timeout_ms;
	int sweep; /* 1 = schedule the heartbeat/breaker sweep on the clock's timers
				* (serve); 0 = the caller drives health_tick (tests) */
};

struct health;
struct health_breakers; /* controller/health_breaker.h */

/* Loads the policy (/policies/default, or the compiled default when absent), open breakers
 * and the recent health events (for windows, job attribution and lemon scores). Returns NULL
 * with the reason in err when the store cannot be read or the stored policy is invalid. */
struct health *health_new(const struct health_config *cfg, char *err, size_t errlen);
/* Stops the sweep and frees. NULL is a no-op. */
void health_free(struct health *h);

/* One agent report for node (the caller checked the token may report for it). report is the
 * request body (design shape: {"agent","detectors","events"}); received_ms is wall time.
 * Everything is validated before anything is written; bad input gives FP_EINVAL with err
 * naming the field ("events[3].code: ..."). New events (by (node, id); repeats are counted
 * as duplicates and not evaluated again) are stored with their decision, the node's
 * conditions and any hold in one transaction, retried on CAS conflict. *result (new
 * reference) is {"accepted","duplicates","decisions":[...]}. Returns 0, FP_EINVAL,
 * FP_ENOTFOUND (no such node), or a store error. */
/* actor: "agent:<name>" for the node's agent token (only such a report sets AgentAlive and
 * arms the heartbeat timeout; an operator's report records events only). */
int health_report(struct health *h, const char *node, const char *actor, const json_t *report,
		  int64_t received_ms, json_t **result, char *err, size_t errlen);

/* The policy in force as a document (new reference): {"kind":"HealthPolicy","metadata":
 * {"name":"default","resourceVersion"?},"spec":{...}}. */
json_t *health_policy_get(struct health *h);
/* Validates and stores a new policy (PUT /v1/policies/default; actor for the audit event).
 * Returns 0 with *stored (new reference) the stored document, FP_EINVAL (err names the
 * field), FP_ECONFLICT (metadata.resourceVersion given and stale) or a store error. */
int health_policy_put(struct health *h, const json_t *doc, const char *actor, json_t **stored,
		      char *err, size_t errlen);

/* Breakers: {"items":[{breaker document}...]} (new reference), open ones only. */
json_t *health_breakers(struct health *h);
/* The owner of h's open breakers (borrowed; lives as long as h): what the disruption-budget
 * service asks (budget_svc_set_breakers(b, health_breakers_open_for_cb, owner)). */
struct health_breakers *health_breaker_owner(struct health *h);
/* Closes breaker `name` ("rack.r01"; any open breaker, also one whose domain the policy no
 * longer lists): deletes its document, removes the HealthActionsSuppressed condition naming it
 * from every node and audits who and why, in one transaction. The decisions it suppressed
 * (the breaker document's "suppressed" (node, event) pairs, one per node) are, with replay,
 * evaluated again first: each node gets the health hold the decision would have placed (rule
 * and lemon score in force now; one CAS write with a HealthDecision audit event) unless it is
 * already held, cannot be held in its phase, its rule no longer holds, the policy is in dry run
 * or another breaker of its domains is open. Without replay, or when replay cannot hold, the
 * node is "left unheld" and keeps GPUHealthy False/HoldSuppressed for a human. The
 * BreakerReset audit event lists the held and the unheld nodes. *result (new reference, when
 * result is not NULL) is {"kind":"HealthBreaker","metadata":{"name"},"state":"closed",
 * "replay":bool,"held":[node...],"unheld":[{"node","event","code","reason"}...]}. Returns 0,
 * FP_EINVAL (reason missing or over 1024 bytes), FP_ENOTFOUND (not open) or a store error. */
int health_breaker_reset_ex(struct health *h, const char *name, const char *actor,
			    const char *reason, int replay, json_t **result, char *err,
			    size_t errlen);
/* health_breaker_reset_ex without replay and without the result. */
int health_breaker_reset(struct health *h, const char *name, const char *actor, const char *reason,
			 char *err, size_t errlen);

/* The periodic sweep (AgentAlive timeouts, window expiry). Returns ms until it is next due.
 * serve runs it on the clock's timers when cfg.sweep = 1; tests call it after advancing a
 * virtual clock. */
int64_t health_tick(struct health *h);

/* What the controller keeps in memory, for tests and diagnostics (counts, not bytes). Every one
 * is bounded by the nodes: seen <= 10,000 ids per node (an older repeat is still caught by the
 * store), count windows <= 256 per node (the least recently updated dropped), each window's
 * entries bounded (core/health.h). */
struct health_memory {
	size_t seen;           /* remembered (node, event id) pairs */
	size_t windows;        /* windows of every kind */
	size_t window_entries; /* entries over all windows */
	size_t nodes;          /* nodes with per-node bookkeeping */
};
void health_memory(struct health *h, struct health_memory *out);

#endif
