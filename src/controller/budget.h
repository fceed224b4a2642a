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
/* status of budget `name` (NULL: every budget) for the API: {"domains":[{"value","nodes",
 * "unavailable","max","remaining","out":[...],"waiting":[...]}]} (new reference), or NULL when
 * no such budget. "waiting" lists nodes whose DisruptionAllowed condition is False. */
json_t *budget_svc_status(struct budget_svc *b, const char *name);

#endif
