/* core/health.c - the health policy (see health.h): the compiled default derived from the XID
 * catalog plus the contract's non-XID codes, the policy document codec, bounded time windows,
 * and the lemon score / start rung. Pure: no I/O, no clock. docs/health.md is the reference
 * for every default chosen here and why. */
#include "core/health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "core/codec.h"

static const char *const sev_names[SEV__COUNT] = {"info",   "low",  "warning",
						  "medium", "high", "critical"};
/* Rung names as model.h spells them (kept here so the pure policy code needs no model.c). */
static const char *const rung_names[RUNG__COUNT] = {"gpu_reset", "reboot", "reimage", "rma"};

const char *health_severity_name(enum health_severity s)
{
	return (unsigned)s < SEV__COUNT ? sev_names[s] : "?";
}

int health_severity_parse(const char *s, enum health_severity *out)
{
	for (int i = 0; s && i < SEV__COUNT; i++)
		if (strcmp(s, sev_names[i]) == 0) {
			*out = (enum health_severity)i;
			return 0;
		}
	return FP_EINVAL;
}

static int rung_parse(const char *s, enum remediation_rung *out)
{
	for (int i = 0; s && i < RUNG__COUNT; i++)
		if (strcmp(s, rung_names[i]) == 0) {
			*out = (enum remediation_rung)i;
			return 0;
		}
	return FP_EINVAL;
}

const struct xid_catalog_entry *xid_catalog_find(int xid)
{
	size_t lo = 0, hi = xid_catalog_len;
	while (lo < hi) { /* the generator checks the rows are sorted */
		size_t mid = (lo + hi) / 2;
		if (xid_catalog[mid].xid == xid)
			return &xid_catalog[mid];
		if (xid_catalog[mid].xid < xid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int is_code_char(char c, int right)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
	       (right && c == '.');
}

int health_code_validate(const char *code, int allow_wildcard, char *err, size_t errlen)
{
	if (!code || !*code)
		return fp_errf(FP_EINVAL, err, errlen, "empty code");
	size_t len = strlen(code);
	if (len >= HEALTH_CODE_MAX)
		return fp_errf(FP_EINVAL, err, errlen, "code longer than %d bytes",
			       HEALTH_CODE_MAX - 1);
	const char *colon = strchr(code, ':');
	if (!colon || colon == code || !colon[1])
		return fp_errf(FP_EINVAL, err, errlen,
			       "code must be <family>:<detail> ([a-z0-9_-]+:[a-z0-9_.-]+)");
	for (const char *p = code; p < colon; p++)
		if (!is_code_char(*p, 0))
			return fp_errf(FP_EINVAL, err, errlen,
				       "code family may hold only [a-z0-9_-] (byte %zu)",
				       (size_t)(p - code));
	if (allow_wildcard && strcmp(colon + 1, "*") == 0)
		return 0;
	for (const char *p = colon + 1; *p; p++)
		if (!is_code_char(*p, 1))
			return fp_errf(FP_EINVAL, err, errlen,
				       "code detail may hold only [a-z0-9_.-] (byte %zu)",
				       (size_t)(p - code));
	return 0;
}

/* ---------------------------------------------------------------- compiled default */

#define L_FULL 0xfu   /* gpu_reset, reboot, reimage, rma */
#define L_REBOOT 0xeu /* reboot, reimage, rma: a GPU reset cannot help */
#define L_RMA 0x8u    /* replace the part */
#define L_REBOOT_ONLY 0x2u
#define L_NONE 0x0u /* hold, no automatic remediation: a human looks (maintenance) */

#define H 3600LL
#define D (24 * H)

static void set_ladder(struct health_rule *r, unsigned mask)
{
	r->nladder = 0;
	for (int i = 0; i < RUNG__COUNT; i++)
		if (mask & (1u << i))
			r->ladder[r->nladder++] = (enum remediation_rung)i;
}

/* Severity -> default action and thresholds (docs/health.md "Default derivation"). */
static void rule_from_severity(struct health_rule *r, const char *code, enum health_severity s)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->code, sizeof(r->code), "%s", code);
	r->severity = s;
	set_ladder(r, L_FULL);
	switch (s) {
	case SEV_INFO:
	case SEV_LOW:
	case SEV__COUNT:
		r->action = HEALTH_ACTION_NONE;
		r->count = 1;
		r->window_s = H;
		break;
	case SEV_WARNING:
		r->action = HEALTH_ACTION_HOLD;
		r->count = 3;
		r->window_s = D;
		break;
	case SEV_MEDIUM:
		r->action = HEALTH_ACTION_HOLD;
		r->count = 2;
		r->window_s = H;
		r->distinct_jobs = 3;
		break;
	case SEV_HIGH:
	case SEV_CRITICAL:
		r->action = HEALTH_ACTION_HOLD;
		r->count = 1;
		r->window_s = D;
		break;
	}
}

/* XIDs whose default differs from the severity derivation (docs/health.md says why). */
static const struct {
	int xid;
	int action;        /* -1 = derived */
	int distinct_jobs; /* -1 = derived */
	int ladder;        /* -1 = derived (L_FULL) */
} xid_overrides[] = {
	{54, -1, -1, L_NONE},    /* aux power cable/PSU: a human, not a reboot, not an RMA */
	{79, -1, -1, L_REBOOT},  /* fallen off the bus: GPU reset impossible */
	{109, -1, 2, -1},        /* context-switch timeout: often the application */
	{110, -1, -1, L_REBOOT}, /* security fault: cold reset */
	{157, -1, -1, L_RMA},    /* no spare resources left: replace */
	{164, HEALTH_ACTION_NONE, -1, -1}, /* power smoothing near end of life: plan, no hold */
	{165, -1, -1, L_RMA},              /* power smoothing life exhausted: replace */
	{167, -1, -1, L_REBOOT},           /* PCIe fatal timeout: reboot/power cycle */
};

/* Codes of the design contract other than XIDs. */
static const struct {
	const char *code;
	enum health_severity sev;
	enum health_action action;
	int count;
	int64_t window_s;
	int distinct_jobs;
	unsigned ladder;
} code_defaults[] = {
	{"sxid:*", SEV_MEDIUM, HEALTH_ACTION_HOLD, 2, H, 0, L_REBOOT},
	{"nvlink:error", SEV_MEDIUM, HEALTH_ACTION_HOLD, 2, H, 0, L_FULL},
	{"aer:fatal", SEV_CRITICAL, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT},
	{"aer:nonfatal", SEV_WARNING, HEALTH_ACTION_HOLD, 3, D, 0, L_REBOOT},
	{"aer:correctable", SEV_INFO, HEALTH_ACTION_NONE, 1, H, 0, L_REBOOT},
	{"gpu:fallen_off_bus", SEV_CRITICAL, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT},
	{"gpu:count_mismatch", SEV_CRITICAL, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT},
	/* The GPU's own recovery action (Xid 154, nvidia-smi GPU Recovery Action / GPU Reset
	 * Status, NVML NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, a "[GPU requires reset]" reading):
	 * the driver's word, so it decides the rung at once (the XID catalog: "use as the
	 * authoritative action"). Drain P2P asks only that peer-to-peer traffic stop, after
	 * which the driver names another action: a hold (drain) and a human, no automatic rung. */
	{"gpu:reset_required", SEV_HIGH, HEALTH_ACTION_HOLD, 1, D, 0, L_FULL},
	{"gpu:drain_and_reset", SEV_HIGH, HEALTH_ACTION_HOLD, 1, D, 0, L_FULL},
	{"gpu:reboot_required", SEV_CRITICAL, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT},
	{"gpu:drain_p2p", SEV_HIGH, HEALTH_ACTION_HOLD, 1, D, 0, L_NONE},
	{"ecc:dbe_volatile", SEV_CRITICAL, HEALTH_ACTION_HOLD, 1, D, 0, L_FULL},
	{"ecc:sbe_volatile", SEV_LOW, HEALTH_ACTION_NONE, 1, H, 0, L_FULL},
	{"row_remap:pending", SEV_MEDIUM, HEALTH_ACTION_HOLD, 1, D, 0, L_FULL},
	{"row_remap:failure", SEV_CRITICAL, HEALTH_ACTION_HOLD, 1, D, 0, L_RMA},
	{"retired_pages:pending", SEV_MEDIUM, HEALTH_ACTION_HOLD, 1, D, 0, L_FULL},
	{"thermal:hw_slowdown", SEV_WARNING, HEALTH_ACTION_HOLD, 3, D, 0, L_NONE},
	{"thermal:sw_slowdown", SEV_INFO, HEALTH_ACTION_NONE, 1, H, 0, L_NONE},
	{"power:brake_slowdown", SEV_WARNING, HEALTH_ACTION_NONE, 1, H, 0, L_NONE},
	{"nvlink:link_down", SEV_MEDIUM, HEALTH_ACTION_HOLD, 2, H, 0, L_FULL},
	{"thermal:over_limit", SEV_MEDIUM, HEALTH_ACTION_HOLD, 2, H, 0, L_NONE},
	{"dcgm:memory", SEV_HIGH, HEALTH_ACTION_HOLD, 1, D, 0, L_FULL},
	{"dcgm:pcie", SEV_HIGH, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT},
	{"dcgm:nvlink", SEV_MEDIUM, HEALTH_ACTION_HOLD, 2, H, 0, L_FULL},
	{"dcgm:diag", SEV_HIGH, HEALTH_ACTION_HOLD, 1, D, 0, L_FULL},
	{"dcgm:*", SEV_MEDIUM, HEALTH_ACTION_HOLD, 2, H, 0, L_FULL},
	{"ib:port_down", SEV_HIGH, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT_ONLY},
	/* RoCE: an Ethernet port of an RDMA adapter that is down (ibstat, agent --roce). */
	{"roce:port_down", SEV_HIGH, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT_ONLY},
	{"probe_timeout:nvidia-smi", SEV_MEDIUM, HEALTH_ACTION_HOLD, 2, H, 0, L_REBOOT},
	{"probe_timeout:nvml", SEV_MEDIUM, HEALTH_ACTION_HOLD, 2, H, 0, L_REBOOT},
	{"probe_timeout:*", SEV_WARNING, HEALTH_ACTION_HOLD, 3, D, 0, L_REBOOT},
	/* reported by the Slurm backend (docs/slurm.md "Stuck jobs"): processes that cannot be
	 * killed are most often a hung driver or filesystem on the node; a reboot clears them.
	 * Job attribution still applies: one job stuck on many nodes at once is the job's. */
	{"slurm:completing_stuck", SEV_MEDIUM, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT_ONLY},
	{"slurm:kill_task_failed", SEV_MEDIUM, HEALTH_ACTION_HOLD, 1, D, 0, L_REBOOT_ONLY},
	/* GPUs idle under a Slurm job (agent, issue 10 part 6): one hung job is the job's;
	 * two distinct jobs idle on the same node within a day is the node's. */
	{"slurm:gpu_idle", SEV_WARNING, HEALTH_ACTION_HOLD, 1, D, 2, L_REBOOT},
};

#define NCODE_DEFAULTS (sizeof(code_defaults) / sizeof(code_defaults[0]))
#define NXID_OVERRIDES (sizeof(xid_overrides) / sizeof(xid_overrides[0]))

static void policy_defaults(struct health_policy *p)
{
	p->name = xstrdup("default");
	p->dry_run = 0;
	p->job_attribution.min_nodes = 3;
	p->job_attribution.window_s = 600;
	p->lemon.window_s = 30 * D;
	p->lemon.rma_score = 3;
	p->lemon.recurrence_s = 7 * D;
	p->breaker.enabled = 1;
	p->breaker.max_nodes = 3;
	p->breaker.window_s = 300;
	/* rack and nvlink_domain only: a few unrelated failures in a site or pool of hundreds
	 * of nodes are normal; an operator adds site/pool with spec.breaker.maxNodesPerDomain. */
	static const char *const doms[] = {"rack", "nvlink_domain"};
	for (size_t i = 0; i < 2; i++)
		p->breaker.domains[p->breaker.ndomains++] = xstrdup(doms[i]);
}

struct health_policy *health_policy_default(void)
{
	struct health_policy *p = xcalloc(1, sizeof(*p));
	policy_defaults(p);
	p->rules = xcalloc(xid_catalog_len + NCODE_DEFAULTS, sizeof(*p->rules));
	for (size_t i = 0; i < xid_catalog_len; i++) {
		char code[HEALTH_CODE_MAX];
		snprintf(code, sizeof(code), "xid:%d", xid_catalog[i].xid);
		struct health_rule *r = &p->rules[p->nrules++];
		rule_from_severity(r, code, xid_catalog[i].severity);
		for (size_t k = 0; k < NXID_OVERRIDES; k++) {
			if (xid_overrides[k].xid != xid_catalog[i].xid)
				continue;
			if (xid_overrides[k].action >= 0)
				r->action = (enum health_action)xid_overrides[k].action;
			if (xid_overrides[k].distinct_jobs >= 0)
				r->distinct_jobs = xid_overrides[k].distinct_jobs;
			if (xid_overrides[k].ladder >= 0)
				set_ladder(r, (unsigned)xid_overrides[k].ladder);
		}
	}
	for (size_t i = 0; i < NCODE_DEFAULTS; i++) {
		struct health_rule *r = &p->rules[p->nrules++];
		memset(r, 0, sizeof(*r));
		snprintf(r->code, sizeof(r->code), "%s", code_defaults[i].code);
		r->severity = code_defaults[i].sev;
		r->action = code_defaults[i].action;
		r->count = code_defaults[i].count;
		r->window_s = code_defaults[i].window_s;
		r->distinct_jobs = code_defaults[i].distinct_jobs;
		set_ladder(r, code_defaults[i].ladder);
	}
	return p;
}

void health_policy_free(struct health_policy *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->rules);
	for (size_t i = 0; i < p->breaker.ndomains; i++)
		free(p->breaker.domains[i]);
	free(p);
}

struct health_policy *health_policy_dup(const struct health_policy *p)
{
	struct health_policy *d = xcalloc(1, sizeof(*d));
	*d = *p;
	d->name = xstrdup(p->name);
	d->rules = xcalloc(p->nrules ? p->nrules : 1, sizeof(*d->rules));
	memcpy(d->rules, p->rules, p->nrules * sizeof(*d->rules));
	for (size_t i = 0; i < p->breaker.ndomains; i++)
		d->breaker.domains[i] = xstrdup(p->breaker.domains[i]);
	return d;
}

const struct health_rule *health_rule_find(const struct health_policy *p, const char *code)
{
	const struct health_rule *fallback = NULL;
	const char *colon = code ? strchr(code, ':') : NULL;
	size_t fam = colon ? (size_t)(colon - code) : 0;
	for (size_t i = 0; code && i < p->nrules; i++) {
		const struct health_rule *r = &p->rules[i];
		if (strcmp(r->code, code) == 0)
			return r;
		if (colon && strncmp(r->code, code, fam + 1) == 0 &&
		    strcmp(r->code + fam + 1, "*") == 0)
			fallback = r;
	}
	return fallback;
}

/* ---------------------------------------------------------------- codec */

static json_t *ladder_json(const enum remediation_rung *l, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(rung_names[l[i]]));
	return a;
}

json_t *health_rule_to_json(const struct health_rule *r)
{
	return json_pack("{s:s, s:s, s:s, s:i, s:I, s:i, s:o}", "code", r->code, "severity",
			 health_severity_name(r->severity), "action",
			 r->action == HEALTH_ACTION_HOLD ? "hold" : "none", "count", r->count,
			 "windowSeconds", (json_int_t)r->window_s, "distinctJobs", r->distinct_jobs,
			 "ladder", ladder_json(r->ladder, r->nladder));
}

json_t *health_policy_to_json(const struct health_policy *p, int with_rv)
{
	json_t *meta = json_pack("{s:s}", "name", p->name ? p->name : "default");
	if (with_rv && p->resource_version > 0) {
		char rv[32];
		snprintf(rv, sizeof(rv), "%lld", (long long)p->resource_version);
		json_object_set_new(meta, "resourceVersion", json_string(rv));
	}
	json_t *rules = json_array();
	for (size_t i = 0; i < p->nrules; i++)
		json_array_append_new(rules, health_rule_to_json(&p->rules[i]));
	json_t *doms = json_array();
	for (size_t i = 0; i < p->breaker.ndomains; i++)
		json_array_append_new(doms, json_string(p->breaker.domains[i]));
	json_t *per = json_object();
	for (size_t i = 0; i < p->breaker.ndomains; i++)
		if (p->breaker.domain_max[i] > 0)
			json_object_set_new(per, p->breaker.domains[i],
					    json_integer(p->breaker.domain_max[i]));
	json_t *spec = json_pack(
		"{s:b, s:o, s:{s:i, s:I}, s:{s:I, s:i, s:I}, s:{s:b, s:i, s:I, s:o, s:o}}",
		"dryRun", p->dry_run, "rules", rules, "jobAttribution", "minNodes",
		p->job_attribution.min_nodes, "windowSeconds",
		(json_int_t)p->job_attribution.window_s, "lemon", "windowSeconds",
		(json_int_t)p->lemon.window_s, "rmaScore", p->lemon.rma_score, "recurrenceSeconds",
		(json_int_t)p->lemon.recurrence_s, "breaker", "enabled", p->breaker.enabled,
		"maxNodes", p->breaker.max_nodes, "windowSeconds", (json_int_t)p->breaker.window_s,
		"domains", doms, "maxNodesPerDomain", per);
	return json_pack("{s:s, s:o, s:o}", "kind", "HealthPolicy", "metadata", meta, "spec", spec);
}

/* Optional integer field in [lo, hi]. */
static int get_int(const json_t *obj, const char *key, const char *where, int64_t lo, int64_t hi,
		   int64_t *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_integer(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: expected an integer", where, key);
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi)
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: %lld is out of range %lld..%lld",
			       where, key, (long long)x, (long long)lo, (long long)hi);
	*out = x;
	return 0;
}

static int get_bool(const json_t *obj, const char *key, const char *where, int *out, char *err,
		    size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: expected true or false", where, key);
	*out = json_is_true(v);
	return 0;
}

static int rule_from_json(const struct health_policy *base, const json_t *o, const char *where,
			  struct health_rule *r, char *err, size_t errlen)
{
	static const char *const keys[] = {"code",          "severity",     "action", "count",
					   "windowSeconds", "distinctJobs", "ladder", NULL};
	int rc = jsonx_check_keys(o, keys, where, err, errlen);
	if (rc < 0)
		return rc;
	const char *code = json_string_value(json_object_get(o, "code"));
	if (!code)
		return fp_errf(FP_EINVAL, err, errlen, "%s.code: required string", where);
	char why[128];
	if (health_code_validate(code, 1, why, sizeof(why)) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "%s.code: %s", where, why);
	/* Start from the compiled rule of this exact code, else "warning, none". */
	const struct health_rule *old = NULL;
	for (size_t i = 0; i < base->nrules; i++)
		if (strcmp(base->rules[i].code, code) == 0)
			old = &base->rules[i];
	if (old) {
		*r = *old;
	} else {
		rule_from_severity(r, code, SEV_WARNING);
		r->action = HEALTH_ACTION_NONE;
		r->count = 1;
		r->window_s = H;
	}
	json_t *v = json_object_get(o, "severity");
	if (v &&
	    (!json_is_string(v) || health_severity_parse(json_string_value(v), &r->severity) < 0))
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.severity: expected info, low, warning, medium, high or critical",
			       where);
	v = json_object_get(o, "action");
	if (v) {
		const char *a = json_string_value(v);
		if (a && strcmp(a, "hold") == 0)
			r->action = HEALTH_ACTION_HOLD;
		else if (a && strcmp(a, "none") == 0)
			r->action = HEALTH_ACTION_NONE;
		else
			return fp_errf(FP_EINVAL, err, errlen, "%s.action: expected hold or none",
				       where);
	}
	int64_t x = r->count;
	if ((rc = get_int(o, "count", where, 1, HEALTH_MAX_THRESHOLD, &x, err, errlen)) < 0)
		return rc;
	r->count = (int)x;
	x = r->window_s;
	if ((rc = get_int(o, "windowSeconds", where, 0, HEALTH_MAX_WINDOW_S, &x, err, errlen)) < 0)
		return rc;
	r->window_s = x;
	x = r->distinct_jobs;
	if ((rc = get_int(o, "distinctJobs", where, 0, HEALTH_MAX_THRESHOLD, &x, err, errlen)) < 0)
		return rc;
	r->distinct_jobs = (int)x;
	if ((r->count > 1 || r->distinct_jobs > 0) && r->window_s == 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.windowSeconds: must be > 0 when count > 1 or distinctJobs > 0",
			       where);
	v = json_object_get(o, "ladder");
	if (v) {
		if (!json_is_array(v) || json_array_size(v) > RUNG__COUNT)
			return fp_errf(FP_EINVAL, err, errlen,
				       "%s.ladder: expected an array of at most %d rungs", where,
				       RUNG__COUNT);
		r->nladder = 0;
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			enum remediation_rung g;
			if (!json_is_string(e) || rung_parse(json_string_value(e), &g) < 0)
				return fp_errf(
					FP_EINVAL, err, errlen,
					"%s.ladder[%zu]: expected gpu_reset, reboot, reimage or rma",
					where, i);
			if (r->nladder && g <= r->ladder[r->nladder - 1])
				return fp_errf(
					FP_EINVAL, err, errlen,
					"%s.ladder[%zu]: rungs must be distinct and in the order gpu_reset, reboot, reimage, rma",
					where, i);
			r->ladder[r->nladder++] = g;
		}
	}
	return 0;
}

int health_policy_from_json(const json_t *doc, int64_t rv, struct health_policy **out, char *err,
			    size_t errlen)
{
	*out = NULL;
	static const char *const top[] = {"kind", "metadata", "spec", NULL};
	int rc = jsonx_check_keys(doc, top, "", err, errlen);
	if (rc < 0)
		return rc;
	json_t *kind = json_object_get(doc, "kind");
	if (kind && (!json_is_string(kind) || strcmp(json_string_value(kind), "HealthPolicy") != 0))
		return fp_errf(FP_EINVAL, err, errlen, "kind: expected \"HealthPolicy\"");
	json_t *meta = json_object_get(doc, "metadata");
	if (meta) {
		static const char *const mk[] = {"name", "resourceVersion", "createdAt", NULL};
		if ((rc = jsonx_check_keys(meta, mk, "metadata", err, errlen)) < 0)
			return rc;
		json_t *name = json_object_get(meta, "name");
		if (name &&
		    (!json_is_string(name) || strcmp(json_string_value(name), "default") != 0))
			return fp_errf(FP_EINVAL, err, errlen,
				       "metadata.name: only the policy \"default\" exists");
		json_t *mrv = json_object_get(meta, "resourceVersion");
		if (mrv && !json_is_string(mrv))
			return fp_errf(FP_EINVAL, err, errlen,
				       "metadata.resourceVersion: expected a string");
	}
	json_t *spec = json_object_get(doc, "spec");
	if (!spec)
		return fp_errf(FP_EINVAL, err, errlen, "spec: required");
	static const char *const sk[] = {"dryRun", "rules",   "jobAttribution",
					 "lemon",  "breaker", NULL};
	if ((rc = jsonx_check_keys(spec, sk, "spec", err, errlen)) < 0)
		return rc;

	struct health_policy *p = health_policy_default();
	p->resource_version = rv;
	if ((rc = get_bool(spec, "dryRun", "spec", &p->dry_run, err, errlen)) < 0)
		goto out;
	json_t *rules = json_object_get(spec, "rules");
	if (rules) {
		if (!json_is_array(rules) || json_array_size(rules) > HEALTH_MAX_RULES) {
			rc = fp_errf(FP_EINVAL, err, errlen,
				     "spec.rules: expected an array of at most %d rules",
				     HEALTH_MAX_RULES);
			goto out;
		}
		struct health_policy *base = health_policy_default();
		size_t i;
		json_t *e;
		json_array_foreach(rules, i, e) {
			char where[48];
			snprintf(where, sizeof(where), "spec.rules[%zu]", i);
			struct health_rule r;
			if ((rc = rule_from_json(base, e, where, &r, err, errlen)) < 0)
				break;
			for (size_t k = 0; k < i; k++)
				if (strcmp(json_string_value(
						   json_object_get(json_array_get(rules, k),
								   "code")),
					   r.code) == 0) {
					rc = fp_errf(
						FP_EINVAL, err, errlen,
						"%s.code: %s is given twice (also spec.rules[%zu])",
						where, r.code, k);
					break;
				}
			if (rc < 0)
				break;
			size_t k;
			for (k = 0; k < p->nrules; k++)
				if (strcmp(p->rules[k].code, r.code) == 0)
					break;
			if (k == p->nrules) {
				if (p->nrules >= HEALTH_MAX_RULES) {
					rc = fp_errf(FP_EINVAL, err, errlen,
						     "%s: more than %d rules in all", where,
						     HEALTH_MAX_RULES);
					break;
				}
				p->rules = xreallocarray(p->rules, p->nrules + 1,
							 sizeof(*p->rules));
				p->nrules++;
			}
			p->rules[k] = r;
		}
		health_policy_free(base);
		if (rc < 0)
			goto out;
	}
	json_t *ja = json_object_get(spec, "jobAttribution");
	if (ja) {
		static const char *const k[] = {"minNodes", "windowSeconds", NULL};
		if ((rc = jsonx_check_keys(ja, k, "spec.jobAttribution", err, errlen)) < 0)
			goto out;
		int64_t x = p->job_attribution.min_nodes;
		if ((rc = get_int(ja, "minNodes", "spec.jobAttribution", 2, HEALTH_MAX_THRESHOLD,
				  &x, err, errlen)) < 0)
			goto out;
		p->job_attribution.min_nodes = (int)x;
		if ((rc = get_int(ja, "windowSeconds", "spec.jobAttribution", 1,
				  HEALTH_MAX_WINDOW_S, &p->job_attribution.window_s, err, errlen)) <
		    0)
			goto out;
	}
	json_t *lm = json_object_get(spec, "lemon");
	if (lm) {
		static const char *const k[] = {"windowSeconds", "rmaScore", "recurrenceSeconds",
						NULL};
		if ((rc = jsonx_check_keys(lm, k, "spec.lemon", err, errlen)) < 0)
			goto out;
		if ((rc = get_int(lm, "windowSeconds", "spec.lemon", 1, HEALTH_MAX_WINDOW_S,
				  &p->lemon.window_s, err, errlen)) < 0)
			goto out;
		int64_t x = p->lemon.rma_score;
		if ((rc = get_int(lm, "rmaScore", "spec.lemon", 1, HEALTH_MAX_THRESHOLD, &x, err,
				  errlen)) < 0)
			goto out;
		p->lemon.rma_score = (int)x;
		if ((rc = get_int(lm, "recurrenceSeconds", "spec.lemon", 0, HEALTH_MAX_WINDOW_S,
				  &p->lemon.recurrence_s, err, errlen)) < 0)
			goto out;
	}
	json_t *br = json_object_get(spec, "breaker");
	if (br) {
		static const char *const k[] = {"enabled", "maxNodes",          "windowSeconds",
						"domains", "maxNodesPerDomain", NULL};
		if ((rc = jsonx_check_keys(br, k, "spec.breaker", err, errlen)) < 0)
			goto out;
		if ((rc = get_bool(br, "enabled", "spec.breaker", &p->breaker.enabled, err,
				   errlen)) < 0)
			goto out;
		int64_t x = p->breaker.max_nodes;
		if ((rc = get_int(br, "maxNodes", "spec.breaker", 1, HEALTH_MAX_THRESHOLD, &x, err,
				  errlen)) < 0)
			goto out;
		p->breaker.max_nodes = (int)x;
		if ((rc = get_int(br, "windowSeconds", "spec.breaker", 1, HEALTH_MAX_WINDOW_S,
				  &p->breaker.window_s, err, errlen)) < 0)
			goto out;
		json_t *doms = json_object_get(br, "domains");
		if (doms) {
			if (!json_is_array(doms) || json_array_size(doms) > HEALTH_MAX_DOMAINS) {
				rc = fp_errf(
					FP_EINVAL, err, errlen,
					"spec.breaker.domains: expected an array of at most %d domains",
					HEALTH_MAX_DOMAINS);
				goto out;
			}
			for (size_t i = 0; i < p->breaker.ndomains; i++)
				free(p->breaker.domains[i]);
			p->breaker.ndomains = 0;
			size_t i;
			json_t *e;
			json_array_foreach(doms, i, e) {
				const char *d = json_string_value(e);
				char why[128];
				if (!d || label_validate(d, "", why, sizeof(why)) < 0) {
					rc = fp_errf(
						FP_EINVAL, err, errlen,
						"spec.breaker.domains[%zu]: expected rack, site, pool or a node label key%s%s",
						i, d ? ": " : "", d ? why : "");
					goto out;
				}
				if (strchr(d, '/')) {
					rc = fp_errf(
						FP_EINVAL, err, errlen,
						"spec.breaker.domains[%zu]: %s cannot name a breaker (<domain>.<value>, reset at POST /v1/breakers/{name}:reset): use a key of [A-Za-z0-9._-], no '/'",
						i, d);
					goto out;
				}
				for (size_t k2 = 0; k2 < p->breaker.ndomains; k2++)
					if (strcmp(p->breaker.domains[k2], d) == 0) {
						rc = fp_errf(
							FP_EINVAL, err, errlen,
							"spec.breaker.domains[%zu]: %s is given twice",
							i, d);
						goto out;
					}
				p->breaker.domain_max[p->breaker.ndomains] = 0;
				p->breaker.domains[p->breaker.ndomains++] = xstrdup(d);
			}
		}
		json_t *per = json_object_get(br, "maxNodesPerDomain");
		if (per) {
			if (!json_is_object(per)) {
				rc = fp_errf(
					FP_EINVAL, err, errlen,
					"spec.breaker.maxNodesPerDomain: expected an object {\"<domain>\": maxNodes}");
				goto out;
			}
			for (size_t i = 0; i < p->breaker.ndomains; i++)
				p->breaker.domain_max[i] = 0;
			const char *dk;
			json_t *dv;
			json_object_foreach(per, dk, dv) {
				size_t i;
				for (i = 0; i < p->breaker.ndomains; i++)
					if (strcmp(p->breaker.domains[i], dk) == 0)
						break;
				if (i == p->breaker.ndomains) {
					rc = fp_errf(
						FP_EINVAL, err, errlen,
						"spec.breaker.maxNodesPerDomain.%.64s: not one of spec.breaker.domains",
						dk);
					goto out;
				}
				if (!json_is_integer(dv) || json_integer_value(dv) < 1 ||
				    json_integer_value(dv) > HEALTH_MAX_DOMAIN_NODES) {
					rc = fp_errf(
						FP_EINVAL, err, errlen,
						"spec.breaker.maxNodesPerDomain.%s: expected an integer in 1..%d",
						dk, HEALTH_MAX_DOMAIN_NODES);
					goto out;
				}
				p->breaker.domain_max[i] = (int)json_integer_value(dv);
			}
		}
	}
	rc = 0;
out:
	if (rc < 0) {
		health_policy_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* ---------------------------------------------------------------- windows */

void health_window_release(struct health_window *w)
{
	free(w->e);
	memset(w, 0, sizeof(*w));
}

void health_window_add(struct health_window *w, int64_t at, const char *tag, uint64_t seq)
{
	if (w->n >= HEALTH_WINDOW_MAX) {
		size_t oldest = 0;
		for (size_t i = 1; i < w->n; i++)
			if (w->e[i].at < w->e[oldest].at)
				oldest = i;
		w->e[oldest] = w->e[--w->n];
	}
	ALLOC_GROW(w->e, w->n + 1, w->cap);
	struct health_window_entry *e = &w->e[w->n++];
	memset(e, 0, sizeof(*e));
	e->at = at;
	e->seq = seq;
	snprintf(e->tag, sizeof(e->tag), "%s", tag ? tag : "");
}

void health_window_touch(struct health_window *w, int64_t at, const char *tag, uint64_t seq,
			 size_t cap)
{
	char t[sizeof(w->e[0].tag)];
	snprintf(t, sizeof(t), "%s", tag ? tag : "");
	for (size_t i = 0; i < w->n; i++) {
		struct health_window_entry *e = &w->e[i];
		if (strcmp(e->tag, t) != 0)
			continue;
		if (e->seq != seq) { /* the first touch by this report: remember the state */
			e->prev_at = e->at;
			e->prev_seq = e->seq;
			e->has_prev = 1;
			e->seq = seq;
		}
		if (at > e->at)
			e->at = at;
		return;
	}
	if (cap && w->n >= cap) {
		size_t oldest = 0;
		for (size_t i = 1; i < w->n; i++)
			if (w->e[i].at < w->e[oldest].at)
				oldest = i;
		w->e[oldest] = w->e[--w->n];
	}
	ALLOC_GROW(w->e, w->n + 1, w->cap);
	struct health_window_entry *e = &w->e[w->n++];
	memset(e, 0, sizeof(*e));
	e->at = at;
	e->seq = seq;
	memcpy(e->tag, t, sizeof(t));
}

void health_window_prune(struct health_window *w, int64_t now, int64_t window_ms)
{
	for (size_t i = 0; i < w->n;)
		if (w->e[i].at <= now - window_ms)
			w->e[i] = w->e[--w->n];
		else
			i++;
}

void health_window_undo(struct health_window *w, uint64_t seq)
{
	for (size_t i = 0; i < w->n;) {
		struct health_window_entry *e = &w->e[i];
		if (e->seq == seq && e->has_prev) {
			e->at = e->prev_at;
			e->seq = e->prev_seq;
			e->has_prev = 0;
			i++;
		} else if (e->seq == seq) {
			w->e[i] = w->e[--w->n];
		} else {
			i++;
		}
	}
}

static int in_window(const struct health_window_entry *e, int64_t now, int64_t window_ms)
{
	return e->at > now - window_ms && e->at <= now;
}

int health_window_count(const struct health_window *w, int64_t now, int64_t window_ms)
{
	int n = 0;
	for (size_t i = 0; i < w->n; i++)
		n += in_window(&w->e[i], now, window_ms);
	return n;
}

int health_window_distinct(const struct health_window *w, int64_t now, int64_t window_ms)
{
	int n = 0;
	for (size_t i = 0; i < w->n; i++) {
		if (!in_window(&w->e[i], now, window_ms) || !w->e[i].tag[0])
			continue;
		size_t k;
		for (k = 0; k < i; k++)
			if (in_window(&w->e[k], now, window_ms) &&
			    strcmp(w->e[k].tag, w->e[i].tag) == 0)
				break;
		n += k == i;
	}
	return n;
}

int health_window_has(const struct health_window *w, int64_t now, int64_t window_ms,
		      const char *tag)
{
	for (size_t i = 0; i < w->n; i++)
		if (in_window(&w->e[i], now, window_ms) && strcmp(w->e[i].tag, tag) == 0)
			return 1;
	return 0;
}

int health_window_distinct_if(const struct health_window *w, int64_t now, int64_t window_ms,
			      int64_t after, int (*skip)(const char *tag, void *arg), void *arg,
			      char *out, size_t outlen)
{
	int n = 0;
	size_t len = 0;
	if (out && outlen)
		out[0] = 0;
	/* Oldest first: repeatedly take the oldest counted entry after the previous one. */
	int64_t prev = INT64_MIN;
	size_t prev_i = 0;
	for (;;) {
		const struct health_window_entry *next = NULL;
		size_t next_i = 0;
		for (size_t i = 0; i < w->n; i++) {
			const struct health_window_entry *e = &w->e[i];
			if (!in_window(e, now, window_ms) || e->at <= after || !e->tag[0])
				continue;
			if (e->at < prev || (e->at == prev && i <= prev_i))
				continue;
			if (!next || e->at < next->at)
				next = e, next_i = i;
		}
		if (!next)
			break;
		prev = next->at;
		prev_i = next_i;
		if (skip && skip(next->tag, arg))
			continue;
		int seen = 0;
		for (size_t k = 0; k < w->n && !seen; k++) {
			const struct health_window_entry *e = &w->e[k];
			seen = k != next_i && strcmp(e->tag, next->tag) == 0 &&
			       in_window(e, now, window_ms) && e->at > after &&
			       (e->at < next->at || (e->at == next->at && k < next_i));
		}
		if (seen)
			continue;
		n++;
		if (out && len + 1 < outlen) {
			int k = snprintf(out + len, outlen - len, "%s%s", len ? ", " : "",
					 next->tag);
			if (k > 0)
				len += (size_t)k;
			if (len >= outlen)
				len = outlen - 1;
		}
	}
	return n;
}

void health_window_tags(const struct health_window *w, int64_t now, int64_t window_ms, char *out,
			size_t outlen)
{
	size_t len = 0;
	if (outlen)
		out[0] = 0;
	/* Oldest first, so the message reads in the order the nodes failed. */
	int64_t after = INT64_MIN;
	for (;;) {
		const struct health_window_entry *next = NULL;
		for (size_t i = 0; i < w->n; i++) {
			const struct health_window_entry *e = &w->e[i];
			if (!in_window(e, now, window_ms) || !e->tag[0] || e->at <= after)
				continue;
			if (!next || e->at < next->at)
				next = e;
		}
		if (!next)
			break;
		after = next->at;
		/* Every entry at this instant, distinct tags not yet written. */
		for (size_t i = 0; i < w->n; i++) {
			const struct health_window_entry *e = &w->e[i];
			if (e->at != after || !e->tag[0] || !in_window(e, now, window_ms))
				continue;
			int seen = 0;
			for (size_t k = 0; k < w->n; k++)
				if (k != i && strcmp(w->e[k].tag, e->tag) == 0 &&
				    in_window(&w->e[k], now, window_ms) &&
				    (w->e[k].at < e->at || (w->e[k].at == e->at && k < i)))
					seen = 1;
			if (seen || len >= outlen)
				continue;
			int k = snprintf(out + len, outlen - len, "%s%s", len ? ", " : "", e->tag);
			if (k < 0)
				break;
			len += (size_t)k;
			if (len >= outlen)
				len = outlen - 1;
		}
	}
}

/* ---------------------------------------------------------------- lemon */

int64_t health_fence(const struct node *n, const char *gpu)
{
	int64_t fence = 0;
	for (size_t i = 0; i < n->nremediation_history; i++) {
		const struct node_remediation_record *h = &n->remediation_history[i];
		if (!h->result || strcmp(h->result, "succeeded") != 0)
			continue;
		int same = !h->gpu || !*h->gpu || (gpu && strcmp(h->gpu, gpu) == 0);
		if (same && h->at > fence)
			fence = h->at;
	}
	return fence;
}

void health_lemon_score(const struct health_policy *p, const struct node *n, const char *gpu,
			int extra_holds, int64_t now, struct health_lemon *out)
{
	memset(out, 0, sizeof(*out));
	int has_gpu = gpu && *gpu;
	int64_t newest = -1;
	for (size_t i = 0; i < n->nremediation_history; i++) {
		const struct node_remediation_record *h = &n->remediation_history[i];
		int same = has_gpu ? (h->gpu && strcmp(h->gpu, gpu) == 0) : 1;
		if (h->at > now - p->lemon.window_s * 1000 && h->at <= now) {
			out->node_score++;
			out->gpu_score += same;
		}
		if (same && h->at > now - p->lemon.recurrence_s * 1000 && h->at <= now &&
		    h->at >= newest) {
			newest = h->at;
			out->recurred = 1;
			out->last_rung = h->rung;
		}
	}
	out->node_score += extra_holds;
	out->gpu_score += extra_holds;
	if (!has_gpu)
		out->gpu_score = out->node_score;
}

size_t health_start_rung(const struct health_policy *p, const struct health_rule *r,
			 const struct health_lemon *l)
{
	if (r->nladder == 0)
		return 0;
	int score = l->gpu_score > l->node_score ? l->gpu_score : l->node_score;
	if (score >= p->lemon.rma_score && r->ladder[r->nladder - 1] == RUNG_RMA)
		return r->nladder - 1;
	if (l->recurred) {
		for (size_t i = 0; i < r->nladder; i++)
			if (r->ladder[i] > l->last_rung)
				return i;
		return r->nladder - 1;
	}
	return 0;
}

int health_stale(int64_t event_ms, int64_t fence_ms)
{
	return event_ms && fence_ms && event_ms < fence_ms;
}

void health_verdict(const struct health_facts *f, struct health_verdict *out)
{
	const struct health_rule *r = f->rule;
	memset(out, 0, sizeof(*out));
	out->in = *f;
	out->rule = r->code;
	out->stale = health_stale(f->event_ms, f->fence_ms);
	out->by_jobs = f->job && r->distinct_jobs > 0;
	out->met = out->by_jobs ? f->jobs >= r->distinct_jobs : f->count >= r->count;
	enum health_decision d;
	enum health_basis b;
	if (r->action != HEALTH_ACTION_HOLD) {
		d = HEALTH_DECISION_NONE;
		b = f->unknown_rule ? HEALTH_BASIS_NO_RULE : HEALTH_BASIS_NO_ACTION;
	} else if (out->stale) {
		d = HEALTH_DECISION_COUNT;
		b = HEALTH_BASIS_STALE;
	} else if (out->by_jobs && (!f->job_known || f->job_fault)) {
		d = f->job_known ? HEALTH_DECISION_JOB_FAULT : HEALTH_DECISION_NEED_JOB;
		b = HEALTH_BASIS_JOB;
	} else if (!out->met) {
		d = HEALTH_DECISION_COUNT;
		b = HEALTH_BASIS_BELOW;
	} else if (!f->holdable) {
		d = HEALTH_DECISION_NONE;
		b = HEALTH_BASIS_NOT_HOLDABLE;
	} else if (f->remediating) {
		d = HEALTH_DECISION_COUNT;
		b = HEALTH_BASIS_REMEDIATING;
	} else if (!f->breaker_known || f->breaker_open) {
		d = f->breaker_known ? HEALTH_DECISION_SUPPRESSED : HEALTH_DECISION_NEED_BREAKER;
		b = HEALTH_BASIS_BREAKER;
	} else {
		d = HEALTH_DECISION_HOLD;
		b = HEALTH_BASIS_THRESHOLD;
		if (f->lemon && f->policy)
			out->start_rung = health_start_rung(f->policy, r, f->lemon);
	}
	out->decision = d;
	out->basis = b;
}

const char *health_decision_name(enum health_decision d)
{
	switch (d) {
	case HEALTH_DECISION_NONE: return "none";
	case HEALTH_DECISION_COUNT: return "count";
	case HEALTH_DECISION_HOLD: return "hold";
	case HEALTH_DECISION_SUPPRESSED: return "suppressed";
	case HEALTH_DECISION_JOB_FAULT: return "job_fault";
	default: return "?";
	}
}
