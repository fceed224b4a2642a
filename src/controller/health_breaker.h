/* controller/health_breaker.h - the one owner of the correlated-failure breakers' open state
 * (docs/health.md "Correlated-failure breaker"; not engine/breaker.h, the per-BMC circuit
 * breaker). It holds the open breaker documents by name ("<domain>.<value>", the
 * /breakers/<name> document's content), loaded from the store at start so an open breaker
 * survives a restart. The health controller opens, annotates and closes breakers here (and
 * writes the store documents in its own transactions); the disruption-budget service asks
 * health_breakers_open_for directly, so an opened breaker stops automatic health actions at
 * once, without re-reading the store. Thread-safe: one internal mutex, held only inside these
 * functions (the health controller calls them under its own mutex; nothing here calls out). */
#ifndef FP_CONTROLLER_HEALTH_BREAKER_H
#define FP_CONTROLLER_HEALTH_BREAKER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "store/store.h"

#define BREAKER_MAX_SUPPRESSED 256 /* (node, event) pairs a breaker document keeps */

struct health_breakers;

struct health_breakers *health_breakers_new(void);
void health_breakers_free(struct health_breakers *hb);

/* Replaces the set with the /breakers/ documents of store s (a document that is not JSON is
 * skipped). Returns 0 or a negative store error with err filled. */
int health_breakers_load(struct health_breakers *hb, struct store *s, char *err, size_t errlen);

/* 1 when a document named `name` is held. */
int health_breakers_has(struct health_breakers *hb, const char *name);
/* A deep copy of breaker `name`'s document (new reference), or NULL when none is held. */
json_t *health_breakers_get(struct health_breakers *hb, const char *name);
/* Opens breaker `name` ("<domain>.<value>") at wall ms at_ms: holds its document
 * {"kind":"HealthBreaker","metadata":{"name","createdAt"},"domain","value","state":"open",
 * "openedAt","nodes","reason","suppressed":[]} (docs/api.md), replacing any held one. nodes (a
 * JSON array of node names) is taken over; reason is copied (invalid UTF-8 replaced). The
 * caller writes the document (health_breakers_get) to /breakers/<name>. */
void health_breakers_open(struct health_breakers *hb, const char *name, const char *domain,
			  const char *value, json_t *nodes, const char *reason, int64_t at_ms);
/* Holds doc (a reference is taken over) as breaker `name`, replacing any held one. */
void health_breakers_put(struct health_breakers *hb, const char *name, json_t *doc);
/* Drops breaker `name`; 1 when one was held. */
int health_breakers_remove(struct health_breakers *hb, const char *name);
/* How many are held. */
size_t health_breakers_count(struct health_breakers *hb);
/* The held documents in name order: {"items":[...]} (new reference, deep copies). */
json_t *health_breakers_list(struct health_breakers *hb);

/* Records the suppressed (node, event) in breaker bname's "suppressed" list (at most
 * BREAKER_MAX_SUPPRESSED pairs {"node","event","code","at"[,"gpu"]}; past that
 * "suppressedDropped" counts; a pair already listed is not added again). at_ms: wall ms; gpu may
 * be NULL. Returns a deep copy of the document after the change (new reference; the caller
 * writes it to the store), NULL when the pair was already listed or no such breaker is held. */
json_t *health_breakers_note(struct health_breakers *hb, const char *bname, const char *node,
			     const char *event, const char *code, const char *gpu, int64_t at_ms);

/* Is an automatic health action on node n stopped by an open breaker? A held document applies
 * when its "state" is "open", it names a "domain" and a "value", and node_domain_value(n,
 * domain) equals the value. Returns 1 with why filled ("correlated-failure breaker rack.r01 is
 * open since 2026-11-30T10:00:00.000Z") and name the breaker's name (when non-NULL), or 0 (why
 * and name ""). The first applying breaker in name order answers. */
int health_breakers_open_for(struct health_breakers *hb, const struct node *n, char *why,
			     size_t whylen, char *name, size_t namelen);
/* health_breakers_open_for with hb as void *arg: the budget service's breaker callback
 * (budget_svc_set_breakers). */
int health_breakers_open_for_cb(void *hb, const struct node *n, char *why, size_t whylen,
				char *name, size_t namelen);

#endif
