/* layers: base core */
/* fuzz_health_policy.c - libFuzzer target for the two policy documents an operator PUTs:
 * the health policy (health_policy_from_json, core/health.h; PUT /v1/policies/default) and a
 * disruption budget (budget_from_json, core/budget.h; POST/PUT /v1/budgets). The input is
 * parsed like the API parses a body (api_body_object in src/api/server.c: no NUL byte,
 * json_loadb with JSON_REJECT_DUPLICATES) and given to both decoders. Properties, each an
 * abort (a crash to libFuzzer):
 *  - a decoder returns 0 or FP_EINVAL; on FP_EINVAL err is non-empty and nothing is returned
 *    (*out NULL for the policy, a released budget for the budget);
 *  - whatever decodes renders (to_json), the rendering decodes again and renders identically
 *    (one pass is a fixed point), resource_version is the rv given, and the policy's
 *    with_rv rendering carries metadata.resourceVersion "<rv>";
 *  - health_policy_dup renders like the original, every rule is found by its own code, and
 *    the bounds of core/health.h hold (rules, thresholds, windows, domains). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "core/budget.h"
#include "core/health.h"

#include "base/banned.h"

static void die(const char *what, const json_t *a, const json_t *b, const char *err)
{
	char *sa = a ? jsonx_dumps(a) : NULL, *sb = b ? jsonx_dumps(b) : NULL;
	fprintf(stderr, "fuzz_health_policy: %s\n  err: %s\n  first: %s\n  second: %s\n", what,
		err ? err : "", sa ? sa : "-", sb ? sb : "-");
	free(sa);
	free(sb);
	abort();
}

static void check_bounds(const struct health_policy *p, const json_t *doc)
{
	if (p->nrules > HEALTH_MAX_RULES || p->breaker.ndomains > HEALTH_MAX_DOMAINS)
		die("more rules or domains than the bounds", doc, NULL, NULL);
	for (size_t i = 0; i < p->nrules; i++) {
		const struct health_rule *r = &p->rules[i];
		if (health_rule_find(p, r->code) != r)
			die("a rule is not found by its own code", doc, NULL, r->code);
		if (r->count < 1 || r->count > HEALTH_MAX_THRESHOLD || r->distinct_jobs < 0 ||
		    r->distinct_jobs > HEALTH_MAX_THRESHOLD || r->window_s < 0 ||
		    r->window_s > HEALTH_MAX_WINDOW_S || r->nladder > RUNG__COUNT ||
		    (int)r->severity < 0 || r->severity >= SEV__COUNT)
			die("a rule is out of bounds", doc, NULL, r->code);
		for (size_t k = 1; k < r->nladder; k++)
			if (r->ladder[k] <= r->ladder[k - 1])
				die("a ladder is not in escalation order", doc, NULL, r->code);
	}
}

static void check_policy(const json_t *doc)
{
	char err[512] = "";
	struct health_policy *p = (struct health_policy *)(uintptr_t)1;
	int rc = health_policy_from_json(doc, 9, &p, err, sizeof(err));
	if (rc < 0) {
		if (rc != FP_EINVAL || p || !err[0])
			die("policy decode failed without FP_EINVAL, a NULL *out and err", doc,
			    NULL, err);
		return;
	}
	if (rc != 0 || !p || p->resource_version != 9)
		die("policy decode succeeded without a policy of rv 9", doc, NULL, err);
	check_bounds(p, doc);
	json_t *j1 = health_policy_to_json(p, 0);
	struct health_policy *q = NULL;
	if (health_policy_from_json(j1, 3, &q, err, sizeof(err)) != 0 || !q)
		die("the rendering of a decoded policy does not decode", j1, NULL, err);
	json_t *j2 = health_policy_to_json(q, 0);
	if (!json_equal(j1, j2))
		die("policy round trip is not a fixed point", j1, j2, NULL);
	json_t *jr = health_policy_to_json(q, 1);
	const char *rv = jsonx_str(jr, "metadata.resourceVersion");
	if (!rv || strcmp(rv, "3") != 0)
		die("with_rv rendering lacks resourceVersion \"3\"", jr, NULL, NULL);
	struct health_policy *d = health_policy_dup(p);
	json_t *j3 = health_policy_to_json(d, 0);
	if (!json_equal(j1, j3))
		die("health_policy_dup renders differently", j1, j3, NULL);
	json_decref(j3);
	health_policy_free(d);
	json_decref(jr);
	json_decref(j2);
	health_policy_free(q);
	json_decref(j1);
	health_policy_free(p);
}

static void check_budget(const json_t *doc)
{
	char err[512] = "";
	struct budget b;
	int rc = budget_from_json(doc, 9, &b, err, sizeof(err));
	if (rc < 0) {
		if (rc != FP_EINVAL || b.name || b.domain || !err[0])
			die("budget decode failed without FP_EINVAL, an empty budget and err", doc,
			    NULL, err);
		return;
	}
	if (rc != 0 || !b.name || !b.domain || b.resource_version != 9)
		die("budget decode succeeded without name, domain and rv 9", doc, NULL, err);
	if (b.is_percent ? (b.percent < 0 || b.percent > 100)
			 : (b.max_count < 0 || b.max_count > 100000))
		die("maxUnavailable out of range", doc, NULL, NULL);
	json_t *j1 = budget_to_json(&b);
	struct budget c;
	if (budget_from_json(j1, 4, &c, err, sizeof(err)) != 0)
		die("the rendering of a decoded budget does not decode", j1, NULL, err);
	json_t *j2 = budget_to_json(&c);
	if (!json_equal(j1, j2))
		die("budget round trip is not a fixed point", j1, j2, NULL);
	if (c.resource_version != 4)
		die("budget rv is not 4", j1, NULL, NULL);
	/* the percentage rule: any non-zero maxUnavailable allows at least one of one node */
	if (budget_max(&c, 1) < 0 ||
	    ((c.is_percent ? c.percent : c.max_count) > 0) != (budget_max(&c, 1) > 0))
		die("budget_max of one member disagrees with maxUnavailable", j1, NULL, NULL);
	json_decref(j2);
	budget_release(&c);
	json_decref(j1);
	budget_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || memchr(data, 0, size))
		return 0;
	json_error_t je;
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return 0;
	check_policy(doc);
	check_budget(doc);
	json_decref(doc);
	return 0;
}
