/* controller/budget.h - the one disruption-budget service (DESIGN.md principle 4): every
 * disruption (health remediation now; rollouts and manual maintenance later) asks it before it
 * drains work off a node or acts on it. Budgets are the /budgets/<name> documents
 * (core/budget.h); node phases come from the informer cache. An admitted node is reserved for
 * 30 s so two admissions racing before the cache shows the first one cannot both pass.
 * Thread-safe. */
#ifndef FP_CONTROLLER_BUDGET_H
#define FP_CONTROLLER_BUDGET_H

#include <jansson.h>
#include <stddef.h>

#include "base/clock.h"
#include "core/model.h"
#include "engine/cache.h"
#include "store/store.h"

struct budget_svc;

/* store, cache and clock are borrowed. */
struct budget_svc *budget_svc_new(struct store *s, struct cache *c, struct fp_clock *clock);
void budget_svc_free(struct budget_svc *b);

/* May node n be disrupted now? A node already counted as unavailable is admitted when the
 * others out plus itself fit. Returns 1 (admitted; reserved) or 0 with why filled ("budget
 * rack-1: rack r01 has 1 of max 1 unavailable (r01n03)"); no budget that applies = admitted.
 * A store error reading budgets refuses (fail closed) with the error in why. */
int budget_admit(struct budget_svc *b, const struct node *n, char *why, size_t whylen);
/* Budgets changed (the API wrote /budgets/): re-read them on next use. */
void budget_svc_invalidate(struct budget_svc *b);
/* The breakers' owner's answer to "is an automatic health action on n stopped by an open
 * correlated-failure breaker": 1 with why ("correlated-failure breaker rack.r01 is open since
 * ...") and name (when non-NULL) filled, else 0 (health_breakers_open_for_cb,
 * controller/health_breaker.h). arg is the owner. */
typedef int (*budget_breaker_fn)(void *arg, const struct node *n, char *why, size_t whylen,
				 char *name, size_t namelen);
/* Sets who budget_breaker_open asks (fn NULL: nobody, no breaker applies); arg is borrowed and
 * must outlive b's use. Serve wires the health controller's breakers here. */
void budget_svc_set_breakers(struct budget_svc *b, budget_breaker_fn fn, void *arg);
/* Is an automatic health action on node n (draining it for a health remediation, starting a
 * rung) stopped by an open correlated-failure breaker (issue 4 item 4: the breaker "stops
 * automatic holds and actions in that domain")? Asks the breakers' owner set with
 * budget_svc_set_breakers directly, so a breaker the health controller opens applies at once
 * and one it resets stops applying at once (no cached copy, no store read; docs/health.md
 * "Correlated-failure breaker"). A breaker {"domain","value","state":"open"} applies to n when
 * node_domain_value(n, domain) equals its value (core/budget.h). Returns 1 with why filled
 * ("correlated-failure breaker rack.r01 is open since 2026-11-30T10:00:00.000Z") and name the
 * breaker's name (when name is non-NULL), or 0 when none applies or no owner is set (why ""). */
int budget_breaker_open(struct budget_svc *b, const struct node *n, char *why, size_t whylen,
			char *name, size_t namelen);
/* status of budget `name` (NULL: every budget) for the API: {"domains":[{"value","nodes",
 * "unavailable","max","remaining","out":[...],"waiting":[...]}]} (new reference), or NULL when
 * no such budget. "waiting" lists nodes whose DisruptionAllowed condition is False. */
json_t *budget_svc_status(struct budget_svc *b, const char *name);

#endif
