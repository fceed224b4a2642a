/* core/budget.h - disruption budgets (DESIGN.md principle 4): documents, and the pure decision
 * "may one more node of this failure domain be taken out of service".
 *
 * A budget applies per value of its domain (node_domain_value): "rack" (spec.rack), "site",
 * "pool", one of the failure-domain label keys racks carry ("nvlink_domain", "leaf", "pdu";
 * DESIGN.md vocabulary), or "label:<key>" (any label key); nodes without the value are not in
 * the domain. maxUnavailable
 * is a count (>= 0) or a percentage of the domain value's nodes ("10%", rounded up like
 * Kubernetes' PodDisruptionBudget maxUnavailable, so any non-zero % allows at least one).
 * A node counts as unavailable iff it has served (status.servedAt set) and its phase is
 * draining, maintenance, repairing, validating or failed (retiring/retired and never-served
 * nodes do not count). Pure: no I/O, no clock. */
#ifndef FP_CORE_BUDGET_H
#define FP_CORE_BUDGET_H

#include <jansson.h>
#include <stddef.h>

#include "core/model.h"

#define BUDGET_MAX 256

struct budget {
	char *name;
	char *domain;  /* "rack" | "site" | "pool" | "nvlink_domain" | "leaf" | "pdu" |
			     * "label:<key>" */
	int max_count; /* when is_percent = 0 */
	int percent;   /* 0..100 when is_percent = 1 */
	int is_percent;
	int64_t resource_version;
};

/* Strict decode of a stored/API document {"kind"?,"metadata":{"name"},"spec":{"domain",
 * "maxUnavailable"}}; unknown fields refused. Returns 0 or FP_EINVAL with the field in err. */
int budget_from_json(const json_t *doc, int64_t rv, struct budget *out, char *err, size_t errlen);
json_t *budget_to_json(const struct budget *b);
void budget_release(struct budget *b);

/* The one meaning of "the value of node n in failure domain `domain`", shared by budgets, the
 * health controller's correlated-failure breaker and the budget service's breaker check:
 *   "rack", "site", "pool"  n's spec.rack, spec.site, spec.pool;
 *   "label:<key>"           n's label <key>;
 *   any other string        a bare label key, n's label of that key: the failure-domain labels
 *                           racks carry ("nvlink_domain", "leaf", "pdu") are bare keys, and so
 *                           are the breaker's policy domains (docs/health.md).
 * Returns a pointer into n (valid while n is), or NULL when n is not in the domain: the field
 * or label is absent or empty. Pure. */
const char *node_domain_value(const struct node *n, const char *domain);
/* node_domain_value(n, b->domain). */
const char *budget_domain_value(const struct budget *b, const struct node *n);
/* 1 when n counts as unavailable (see above). */
int budget_node_unavailable(const struct node *n);
/* Max unavailable for a domain value with `members` nodes. */
int budget_max(const struct budget *b, size_t members);

#endif
