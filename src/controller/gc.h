/* gc.h - housekeeping that keeps the store bounded: compacts the change feed (keeping the last
 * retain_revisions revisions so watchers and the informer can catch up), trims audit events to
 * the newest max_events (HealthDecision events, which a node's agent can cause, under their own
 * cap max_health_decisions, so they never push other audit events out) and drops those older
 * than event_retention_ms, deletes health events
 * (/healthevents/<node>/<id>) received more than healthevent_retention_ms ago and, per node,
 * all but the newest healthevents_per_node (events whose decision placed a hold are kept until
 * their age: they are a remediation's evidence), and deletes terminal operations finished more
 * than op_retention_ms ago that no node points at. Runs on the caller's thread; serve calls it periodically from
 * its executor. */
#ifndef FP_CONTROLLER_GC_H
#define FP_CONTROLLER_GC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct gc_config {
	int64_t retain_revisions; /* change-feed entries kept; <= 0 means 100000 */
	size_t max_events;        /* audit events kept, HealthDecision ones aside; 0 means 100000 */
	size_t max_health_decisions; /* HealthDecision audit events kept; 0 means 10000 */
	int64_t op_retention_ms;     /* finished operations kept this long; <= 0 means 7 days */
	int64_t event_retention_ms; /* audit events kept this long; 0 means 30 days, < 0 no limit */
	int64_t healthevent_retention_ms; /* health events kept this long (by receivedAt);
					   * 0 means 30 days, < 0 no limit */
	size_t healthevents_per_node;     /* newest health events kept per node; 0 means 10000 */
	/* NULL, or a flag read before each delete: once non-zero the pass stops there, rc 0 (a
	 * stopping serve does not wait for thousands of deletes, each its own durable commit; the
	 * next pass goes on where this one stopped). Borrowed. */
	const atomic_int *stop;
};

struct gc_result {
	int64_t compacted_to;  /* revision the feed was compacted to, 0 if not */
	size_t events_deleted; /* audit events, by count and by age */
	size_t healthevents_deleted;
	size_t ops_deleted;
};

/* One pass. now_wall_ms is the current wall time (Unix ms). Returns 0 or the first store error
 * (the pass stops there; nothing is half-deleted: each delete is its own CAS write). */
int gc_run_once(struct store *s, const struct gc_config *cfg, int64_t now_wall_ms,
		struct gc_result *res);

#endif
