/* budget.c - disruption budget documents and the pure counting rules (see budget.h; DESIGN.md
 * principle 4). The percentage rule is Kubernetes' PodDisruptionBudget maxUnavailable rounding
 * (intstr.GetScaledValueFromIntOrPercent with roundUp = true). No I/O, no clock. */
#include "core/budget.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "core/codec.h"

static const char *const k_doc[] = {"kind", "apiVersion", "metadata", "spec", "status", NULL};
static const char *const k_meta[] = {"name", "uid", "resourceVersion", "createdAt", NULL};
static const char *const k_spec[] = {"domain", "maxUnavailable", NULL};

/* "rack" | "site" | "pool" | a failure-domain label key racks carry (DESIGN.md vocabulary:
 * "nvlink_domain", "leaf", "pdu") | "label:<key>" with a valid label key. */
static int domain_validate(const char *d, char *err, size_t errlen)
{
	static const char *const bare[] = {"rack", "site", "pool", "nvlink_domain", "leaf", "pdu"};
	for (size_t i = 0; i < sizeof(bare) / sizeof(bare[0]); i++)
		if (strcmp(d, bare[i]) == 0)
			return 0;
	if (strncmp(d, "label:", 6) == 0) {
		char e[160];
		if (label_validate(d + 6, "", e, sizeof(e)) == 0)
			return 0;
	}
	return fp_errf(
		FP_EINVAL, err, errlen,
		"spec.domain: \"%.70s\" is not rack, site, pool, nvlink_domain, leaf, pdu or "
		"label:<key> (key 1-63 "
		"characters of [A-Za-z0-9._/-])",
		d);
}

/* "10%": 0..100 then '%', digits only. */
static int parse_percent(const char *s, int *out)
{
	size_t n = strlen(s);
	if (n < 2 || n > 4 || s[n - 1] != '%')
		return -1;
	int v = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v > 100)
		return -1;
	*out = v;
	return 0;
}

int budget_from_json(const json_t *doc, int64_t rv, struct budget *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	int rc;
	if (!json_is_object(doc))
		return fp_errf(FP_EINVAL, err, errlen, "expected a JSON object");
	if ((rc = jsonx_check_keys(doc, k_doc, "", err, errlen)) < 0)
		return rc;
	json_t *kind = json_object_get(doc, "kind");
	if (kind &&
	    (!json_is_string(kind) || strcmp(json_string_value(kind), "DisruptionBudget") != 0))
		return fp_errf(FP_EINVAL, err, errlen, "kind: expected \"DisruptionBudget\"");
	json_t *meta = json_object_get(doc, "metadata"), *spec = json_object_get(doc, "spec");
	if (!json_is_object(meta))
		return fp_errf(FP_EINVAL, err, errlen, "metadata: expected an object with a name");
	if ((rc = jsonx_check_keys(meta, k_meta, "metadata", err, errlen)) < 0)
		return rc;
	json_t *name = json_object_get(meta, "name");
	if (!json_is_string(name))
		return fp_errf(FP_EINVAL, err, errlen, "metadata.name: required string");
	if ((rc = name_validate("metadata.name", json_string_value(name), err, errlen)) < 0)
		return rc;
	if (!json_is_object(spec))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec: expected an object with domain and maxUnavailable");
	if ((rc = jsonx_check_keys(spec, k_spec, "spec", err, errlen)) < 0)
		return rc;
	json_t *dom = json_object_get(spec, "domain");
	if (!json_is_string(dom) || json_string_length(dom) > 70 ||
	    strlen(json_string_value(dom)) != json_string_length(dom))
		return fp_errf(
			FP_EINVAL, err, errlen,
			"spec.domain: required string: rack, site, pool, nvlink_domain, leaf, pdu "
			"or label:<key>");
	if ((rc = domain_validate(json_string_value(dom), err, errlen)) < 0)
		return rc;
	json_t *mu = json_object_get(spec, "maxUnavailable");
	if (json_is_integer(mu)) {
		json_int_t v = json_integer_value(mu);
		if (v < 0 || v > 100000)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.maxUnavailable: %lld is out of range 0..100000",
				       (long long)v);
		out->max_count = (int)v;
	} else if (json_is_string(mu) && strlen(json_string_value(mu)) == json_string_length(mu) &&
		   parse_percent(json_string_value(mu), &out->percent) == 0) {
		out->is_percent = 1;
	} else {
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.maxUnavailable: expected a count (0..100000) or a percentage "
			       "like \"10%%\" (0%%..100%%)");
	}
	out->name = xstrdup(json_string_value(name));
	out->domain = xstrdup(json_string_value(dom));
	out->resource_version = rv;
	return 0;
}

json_t *budget_to_json(const struct budget *b)
{
	json_t *mu;
	if (b->is_percent) {
		char p[8];
		snprintf(p, sizeof(p), "%d%%", b->percent);
		mu = json_string(p);
	} else {
		mu = json_integer(b->max_count);
	}
	return json_pack("{s:s,s:{s:s},s:{s:s,s:o}}", "kind", "DisruptionBudget", "metadata",
			 "name", b->name, "spec", "domain", b->domain, "maxUnavailable", mu);
}

void budget_release(struct budget *b)
{
	free(b->name);
	free(b->domain);
	memset(b, 0, sizeof(*b));
}

const char *node_domain_value(const struct node *n, const char *domain)
{
	const char *v;
	if (strcmp(domain, "rack") == 0)
		v = n->rack;
	else if (strcmp(domain, "site") == 0)
		v = n->site;
	else if (strcmp(domain, "pool") == 0)
		v = n->pool;
	else if (strncmp(domain, "label:", 6) == 0)
		v = node_label_get(n, domain + 6);
	else
		v = node_label_get(n, domain);
	return v && *v ? v : NULL;
}

const char *budget_domain_value(const struct budget *b, const struct node *n)
{
	return node_domain_value(n, b->domain);
}

int budget_node_unavailable(const struct node *n)
{
	if (!n->served_at)
		return 0;
	switch (n->phase) {
	case PHASE_DRAINING:
	case PHASE_MAINTENANCE:
	case PHASE_REPAIRING:
	case PHASE_VALIDATING:
	case PHASE_FAILED: return 1;
	default: return 0;
	}
}

int budget_max(const struct budget *b, size_t members)
{
	if (!b->is_percent)
		return b->max_count;
	/* ceil(members * percent / 100); members is bounded by the fleet size */
	unsigned long long v = ((unsigned long long)members * (unsigned)b->percent + 99) / 100;
	return v > 1000000 ? 1000000 : (int)v;
}
