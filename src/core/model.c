/* model.c - node phases, the phase machine, holds and conditions (DESIGN.md "Node phases",
 * "hold", "condition"), and allocation of node and operation records. Pure: no I/O, no clock;
 * callers pass `now` in. */
#include "core/model.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

static const char *const phase_names[] = {
#define X(e, s) s,
	NODE_PHASE_MAP(X)
#undef X
};

const char *node_phase_name(enum node_phase p)
{
	return (unsigned)p < PHASE__COUNT ? phase_names[p] : "unknown";
}

int node_phase_parse(const char *s, enum node_phase *out)
{
	for (int i = 0; s && i < PHASE__COUNT; i++)
		if (strcmp(s, phase_names[i]) == 0) {
			*out = (enum node_phase)i;
			return 0;
		}
	return FP_EINVAL;
}

int node_phase_is_transient(enum node_phase p)
{
	return p == PHASE_INSPECTING || p == PHASE_PROVISIONING || p == PHASE_VALIDATING ||
	       p == PHASE_DRAINING || p == PHASE_REPAIRING || p == PHASE_RETIRING;
}

#define B(p) (1u << (p))
/* allowed[from] = set of phases `from` may go to, exactly the DESIGN.md table; "any →
 * retiring" is handled in node_phase_check. */
static const unsigned allowed[PHASE__COUNT] = {
	[PHASE_ENROLLED] = B(PHASE_INSPECTING),
	[PHASE_INSPECTING] = B(PHASE_PROVISIONING) | B(PHASE_AVAILABLE), /* adopt */
	[PHASE_PROVISIONING] = B(PHASE_VALIDATING),
	[PHASE_VALIDATING] = B(PHASE_AVAILABLE) | B(PHASE_REPAIRING),
	[PHASE_AVAILABLE] = B(PHASE_IN_SERVICE) | B(PHASE_DRAINING),
	[PHASE_IN_SERVICE] = B(PHASE_AVAILABLE) | B(PHASE_DRAINING),
	[PHASE_DRAINING] = B(PHASE_MAINTENANCE) | B(PHASE_REPAIRING),
	[PHASE_MAINTENANCE] = B(PHASE_VALIDATING) | B(PHASE_AVAILABLE),
	[PHASE_REPAIRING] = B(PHASE_VALIDATING) | B(PHASE_FAILED),
	[PHASE_FAILED] = B(PHASE_REPAIRING) | B(PHASE_RETIRING),
	[PHASE_RETIRING] = B(PHASE_RETIRED),
	[PHASE_RETIRED] = 0,
};
#undef B

int node_phase_check(enum node_phase from, enum node_phase to, char *err, size_t errlen)
{
	if ((unsigned)from >= PHASE__COUNT || (unsigned)to >= PHASE__COUNT)
		return fp_errf(FP_ESTATE, err, errlen, "unknown phase");
	if (from == to)
		return fp_errf(FP_ESTATE, err, errlen, "node is already %s", node_phase_name(to));
	if (from == PHASE_RETIRED)
		return fp_errf(FP_ESTATE, err, errlen,
			       "cannot go from retired to %s: a retired node is final",
			       node_phase_name(to));
	if (to == PHASE_RETIRING || (allowed[from] & (1u << to)))
		return 0;
	return fp_errf(FP_ESTATE, err, errlen, "cannot go from %s to %s", node_phase_name(from),
		       node_phase_name(to));
}

const char *cond_status_name(enum cond_status s)
{
	return s == COND_TRUE ? "True" : s == COND_FALSE ? "False" : "Unknown";
}

int cond_status_parse(const char *s, enum cond_status *out)
{
	if (!s)
		return FP_EINVAL;
	if (strcmp(s, "True") == 0)
		*out = COND_TRUE;
	else if (strcmp(s, "False") == 0)
		*out = COND_FALSE;
	else if (strcmp(s, "Unknown") == 0)
		*out = COND_UNKNOWN;
	else
		return FP_EINVAL;
	return 0;
}

struct node *node_new(void)
{
	struct node *n = xcalloc(1, sizeof(struct node));
	n->bmc.cipher_suite = -1;
	n->bmc.tls_verify = 1;
	return n;
}

static void hold_release(struct node_hold *h)
{
	free(h->owner);
	free(h->reason);
}

static void cond_release(struct node_condition *c)
{
	free(c->type);
	free(c->reason);
	free(c->message);
}

static void bmc_release(struct node_bmc *b)
{
	free(b->driver);
	free(b->address);
	free(b->username);
	fp_free_secret(b->password);
	free(b->password_file);
	free(b->password_sealed);
	free(b->ca_file);
	free(b->system);
	json_decref(b->extra);
}

void node_free(struct node *n)
{
	if (!n)
		return;
	free(n->name);
	free(n->uid);
	for (size_t i = 0; i < n->nlabels; i++) {
		free(n->labels[i].key);
		free(n->labels[i].value);
	}
	free(n->labels);
	free(n->site);
	free(n->rack);
	free(n->provider);
	free(n->pool);
	bmc_release(&n->bmc);
	for (size_t i = 0; i < n->nmacs; i++)
		free(n->macs[i]);
	free(n->macs);
	free(n->gpu_model);
	json_decref(n->provision);
	json_decref(n->hardware);
	json_decref(n->annotations);
	for (size_t i = 0; i < n->nholds; i++)
		hold_release(&n->holds[i]);
	free(n->holds);
	for (size_t i = 0; i < n->nconditions; i++)
		cond_release(&n->conditions[i]);
	free(n->conditions);
	free(n->operation);
	for (size_t i = 0; i < n->nqueued; i++)
		free(n->queued_ops[i]);
	free(n->queued_ops);
	free(n->last_boot_id);
	free(n->validation_boot_id);
	json_decref(n->inventory);
	free(n->inventory_text);
	node_remediation_release(&n->remediation);
	for (size_t i = 0; i < n->nremediation_history; i++)
		node_remediation_record_release(&n->remediation_history[i]);
	free(n->remediation_history);
	node_workload_release(&n->workload);
	free(n);
}

static char *dupn(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static const char *const rung_names[RUNG__COUNT] = {"gpu_reset", "reboot", "reimage", "rma"};

const char *remediation_rung_name(enum remediation_rung r)
{
	return (unsigned)r < RUNG__COUNT ? rung_names[r] : "unknown";
}

int remediation_rung_parse(const char *s, enum remediation_rung *out)
{
	for (int i = 0; s && i < RUNG__COUNT; i++)
		if (strcmp(s, rung_names[i]) == 0) {
			*out = (enum remediation_rung)i;
			return 0;
		}
	return FP_EINVAL;
}

void node_remediation_release(struct node_remediation *r)
{
	free(r->code);
	free(r->gpu);
	free(r->reason);
	free(r->policy);
	for (size_t i = 0; i < r->nevents; i++)
		free(r->events[i]);
	free(r->rma);
	memset(r, 0, sizeof(*r));
}

void node_remediation_copy(struct node_remediation *dst, const struct node_remediation *src)
{
	*dst = *src;
	dst->code = dupn(src->code);
	dst->gpu = dupn(src->gpu);
	dst->reason = dupn(src->reason);
	dst->policy = dupn(src->policy);
	for (size_t i = 0; i < src->nevents; i++)
		dst->events[i] = xstrdup(src->events[i]);
	dst->rma = dupn(src->rma);
}

void node_remediation_record_release(struct node_remediation_record *r)
{
	free(r->code);
	free(r->gpu);
	free(r->result);
	memset(r, 0, sizeof(*r));
}

void node_remediation_history_append(struct node *n, const char *code, const char *gpu,
				     enum remediation_rung rung, const char *result, int64_t at)
{
	if (n->nremediation_history >= NODE_MAX_REMEDIATION_HISTORY) {
		node_remediation_record_release(&n->remediation_history[0]);
		memmove(&n->remediation_history[0], &n->remediation_history[1],
			(n->nremediation_history - 1) * sizeof(*n->remediation_history));
		n->nremediation_history--;
	} else {
		n->remediation_history = xreallocarray(n->remediation_history,
						       n->nremediation_history + 1,
						       sizeof(*n->remediation_history));
	}
	struct node_remediation_record *r = &n->remediation_history[n->nremediation_history++];
	r->code = xstrdup(code ? code : "");
	r->gpu = dupn(gpu);
	r->rung = rung;
	r->result = xstrdup(result);
	r->at = at;
}

struct node *node_dup(const struct node *n)
{
	struct node *d = node_new();
	*d = *n;
	d->name = dupn(n->name);
	d->uid = dupn(n->uid);
	d->labels = n->nlabels ? xcalloc(n->nlabels, sizeof(*d->labels)) : NULL;
	for (size_t i = 0; i < n->nlabels; i++) {
		d->labels[i].key = xstrdup(n->labels[i].key);
		d->labels[i].value = xstrdup(n->labels[i].value);
	}
	d->site = dupn(n->site);
	d->rack = dupn(n->rack);
	d->provider = dupn(n->provider);
	d->pool = dupn(n->pool);
	d->bmc.driver = dupn(n->bmc.driver);
	d->bmc.address = dupn(n->bmc.address);
	d->bmc.username = dupn(n->bmc.username);
	d->bmc.password = dupn(n->bmc.password);
	d->bmc.password_file = dupn(n->bmc.password_file);
	d->bmc.password_sealed = dupn(n->bmc.password_sealed);
	d->bmc.cipher_suite = n->bmc.cipher_suite;
	d->bmc.tls_verify = n->bmc.tls_verify;
	d->bmc.ca_file = dupn(n->bmc.ca_file);
	d->bmc.system = dupn(n->bmc.system);
	d->bmc.quirks = n->bmc.quirks;
	d->bmc_quirks = n->bmc_quirks;
	d->bmc.extra = n->bmc.extra ? json_deep_copy(n->bmc.extra) : NULL;
	d->macs = n->nmacs ? xcalloc(n->nmacs, sizeof(char *)) : NULL;
	for (size_t i = 0; i < n->nmacs; i++)
		d->macs[i] = xstrdup(n->macs[i]);
	d->gpu_model = dupn(n->gpu_model);
	d->provision = n->provision ? json_deep_copy(n->provision) : NULL;
	d->hardware = n->hardware ? json_deep_copy(n->hardware) : NULL;
	d->annotations = n->annotations ? json_deep_copy(n->annotations) : NULL;
	d->holds = n->nholds ? xcalloc(n->nholds, sizeof(*d->holds)) : NULL;
	for (size_t i = 0; i < n->nholds; i++) {
		d->holds[i] = n->holds[i];
		d->holds[i].owner = xstrdup(n->holds[i].owner);
		d->holds[i].reason = xstrdup(n->holds[i].reason);
	}
	d->conditions = n->nconditions ? xcalloc(n->nconditions, sizeof(*d->conditions)) : NULL;
	for (size_t i = 0; i < n->nconditions; i++) {
		d->conditions[i] = n->conditions[i];
		d->conditions[i].type = xstrdup(n->conditions[i].type);
		d->conditions[i].reason = dupn(n->conditions[i].reason);
		d->conditions[i].message = dupn(n->conditions[i].message);
	}
	d->operation = dupn(n->operation);
	d->queued_ops = n->nqueued ? xcalloc(n->nqueued, sizeof(char *)) : NULL;
	for (size_t i = 0; i < n->nqueued; i++)
		d->queued_ops[i] = xstrdup(n->queued_ops[i]);
	d->last_boot_id = dupn(n->last_boot_id);
	d->validation_boot_id = dupn(n->validation_boot_id);
	d->inventory = n->inventory ? json_deep_copy(n->inventory) : NULL;
	d->inventory_text = dupn(n->inventory_text);
	node_remediation_copy(&d->remediation, &n->remediation);
	node_workload_copy(&d->workload, &n->workload);
	d->remediation_history = n->nremediation_history ? xcalloc(n->nremediation_history,
								   sizeof(*d->remediation_history))
							 : NULL;
	for (size_t i = 0; i < n->nremediation_history; i++) {
		const struct node_remediation_record *r = &n->remediation_history[i];
		d->remediation_history[i] = *r;
		d->remediation_history[i].code = xstrdup(r->code);
		d->remediation_history[i].gpu = dupn(r->gpu);
		d->remediation_history[i].result = xstrdup(r->result);
	}
	return d;
}

int node_schedulable(const struct node *n)
{
	return (n->phase == PHASE_AVAILABLE || n->phase == PHASE_IN_SERVICE) && n->nholds == 0;
}

int node_hold_add(struct node *n, const char *owner, const char *reason, int64_t now,
		  int64_t expires)
{
	if (!owner || !*owner || !reason || !*reason)
		return FP_EINVAL;
	for (size_t i = 0; i < n->nholds; i++)
		if (strcmp(n->holds[i].owner, owner) == 0) {
			free(n->holds[i].reason);
			n->holds[i].reason = xstrdup(reason);
			n->holds[i].expires = expires;
			return 0;
		}
	if (n->nholds >= NODE_MAX_HOLDS)
		return FP_ETOOBIG;
	n->holds = xreallocarray(n->holds, n->nholds + 1, sizeof(*n->holds));
	struct node_hold *h = &n->holds[n->nholds++];
	h->owner = xstrdup(owner);
	h->reason = xstrdup(reason);
	h->since = now;
	h->expires = expires;
	return 0;
}

int node_hold_release(struct node *n, const char *owner)
{
	for (size_t i = 0; i < n->nholds; i++)
		if (strcmp(n->holds[i].owner, owner) == 0) {
			hold_release(&n->holds[i]);
			memmove(&n->holds[i], &n->holds[i + 1],
				(n->nholds - i - 1) * sizeof(*n->holds));
			n->nholds--;
			return 0;
		}
	return FP_ENOTFOUND;
}

const struct node_hold *node_hold_find(const struct node *n, const char *owner)
{
	for (size_t i = 0; i < n->nholds; i++)
		if (strcmp(n->holds[i].owner, owner) == 0)
			return &n->holds[i];
	return NULL;
}

static int streq_null(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int node_condition_set(struct node *n, const char *type, enum cond_status st, const char *reason,
		       const char *message, int64_t now)
{
	struct node_condition *c = NULL;
	for (size_t i = 0; i < n->nconditions; i++)
		if (strcmp(n->conditions[i].type, type) == 0)
			c = &n->conditions[i];
	if (!c) {
		if (n->nconditions >= NODE_MAX_CONDITIONS)
			return 0;
		n->conditions = xreallocarray(n->conditions, n->nconditions + 1,
					      sizeof(*n->conditions));
		c = &n->conditions[n->nconditions++];
		memset(c, 0, sizeof(*c));
		c->type = xstrdup(type);
		c->status = st;
		c->since = now;
		c->reason = dupn(reason);
		c->message = dupn(message);
		return 1;
	}
	int changed = 0;
	if (c->status != st) {
		c->status = st;
		c->since = now;
		changed = 1;
	}
	if (!streq_null(c->reason, reason)) {
		free(c->reason);
		c->reason = dupn(reason);
		changed = 1;
	}
	if (!streq_null(c->message, message)) {
		free(c->message);
		c->message = dupn(message);
		changed = 1;
	}
	return changed;
}

const struct node_condition *node_condition_get(const struct node *n, const char *type)
{
	for (size_t i = 0; i < n->nconditions; i++)
		if (strcmp(n->conditions[i].type, type) == 0)
			return &n->conditions[i];
	return NULL;
}

int node_condition_remove(struct node *n, const char *type)
{
	for (size_t i = 0; i < n->nconditions; i++)
		if (strcmp(n->conditions[i].type, type) == 0) {
			cond_release(&n->conditions[i]);
			memmove(&n->conditions[i], &n->conditions[i + 1],
				(n->nconditions - i - 1) * sizeof(*n->conditions));
			n->nconditions--;
			return 1;
		}
	return 0;
}

const char *node_label_get(const struct node *n, const char *key)
{
	for (size_t i = 0; i < n->nlabels; i++)
		if (strcmp(n->labels[i].key, key) == 0)
			return n->labels[i].value;
	return NULL;
}

static const char *const op_state_names[] = {"pending", "running", "succeeded", "failed",
					     "cancelled"};

const char *op_state_name(enum op_state s)
{
	return (unsigned)s <= OP_CANCELLED ? op_state_names[s] : "unknown";
}

int op_state_parse(const char *s, enum op_state *out)
{
	for (int i = 0; s && i <= OP_CANCELLED; i++)
		if (strcmp(s, op_state_names[i]) == 0) {
			*out = (enum op_state)i;
			return 0;
		}
	return FP_EINVAL;
}

struct operation *operation_new(void)
{
	return xcalloc(1, sizeof(struct operation));
}

void operation_free(struct operation *op)
{
	if (!op)
		return;
	free(op->id);
	free(op->node);
	free(op->kind);
	for (size_t i = 0; i < op->nsteps; i++)
		free(op->steps[i]);
	free(op->idempotency_key);
	free(op->actor);
	free(op->reason);
	json_decref(op->params);
	free(op->last_error);
	free(op);
}

struct operation *operation_dup(const struct operation *op)
{
	struct operation *d = operation_new();
	*d = *op;
	d->id = dupn(op->id);
	d->node = dupn(op->node);
	d->kind = dupn(op->kind);
	for (size_t i = 0; i < op->nsteps; i++)
		d->steps[i] = xstrdup(op->steps[i]);
	d->idempotency_key = dupn(op->idempotency_key);
	d->actor = dupn(op->actor);
	d->reason = dupn(op->reason);
	d->params = op->params ? json_deep_copy(op->params) : NULL;
	d->last_error = dupn(op->last_error);
	return d;
}

static const struct {
	unsigned bit;
	const char *name;
} quirks[] = {
	{BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE, "ipmi_open_session_privilege"},
	{BMC_QUIRK_IPMI_AUTHENTICATION_CAPABILITIES, "ipmi_authentication_capabilities"},
	{BMC_QUIRK_IPMI_INTEL_2_0, "ipmi_intel_2_0"},
	{BMC_QUIRK_IPMI_SUPERMICRO_2_0, "ipmi_supermicro_2_0"},
	{BMC_QUIRK_IPMI_SUN_2_0, "ipmi_sun_2_0"},
	{BMC_QUIRK_IPMI_NON_EMPTY_INTEGRITY_CHECK_VALUE, "ipmi_non_empty_integrity_check_value"},
	{BMC_QUIRK_IPMI_NO_CHECKSUM_CHECK, "ipmi_no_checksum_check"},
	{BMC_QUIRK_REDFISH_NO_IF_MATCH, "redfish_no_if_match"},
	{BMC_QUIRK_REDFISH_BASIC_AUTH, "redfish_basic_auth"},
};

const char *const bmc_quirk_names[] = {
	"ipmi_open_session_privilege",
	"ipmi_authentication_capabilities",
	"ipmi_intel_2_0",
	"ipmi_supermicro_2_0",
	"ipmi_sun_2_0",
	"ipmi_non_empty_integrity_check_value",
	"ipmi_no_checksum_check",
	"redfish_no_if_match",
	"redfish_basic_auth",
	NULL,
};

const char *bmc_quirk_name(unsigned bit)
{
	for (size_t i = 0; i < sizeof(quirks) / sizeof(quirks[0]); i++)
		if (quirks[i].bit == bit)
			return quirks[i].name;
	return "";
}

int bmc_quirk_parse(const char *name, unsigned *bit)
{
	for (size_t i = 0; name && i < sizeof(quirks) / sizeof(quirks[0]); i++)
		if (strcmp(quirks[i].name, name) == 0) {
			*bit = quirks[i].bit;
			return 0;
		}
	return FP_EINVAL;
}

static const char *const workload_names[WORKLOAD__COUNT] = {"none",     "idle",    "busy",
							    "draining", "drained", "absent"};

const char *workload_state_name(enum workload_state s)
{
	return (unsigned)s < WORKLOAD__COUNT ? workload_names[s] : "unknown";
}

int workload_state_parse(const char *s, enum workload_state *out)
{
	for (int i = WORKLOAD_IDLE; s && i < WORKLOAD__COUNT; i++)
		if (strcmp(s, workload_names[i]) == 0) {
			*out = (enum workload_state)i;
			return 0;
		}
	return FP_EINVAL;
}

void node_workload_release(struct node_workload *w)
{
	free(w->scheduler);
	for (size_t i = 0; i < w->njobs; i++)
		free(w->jobs[i]);
	free(w->jobs);
	memset(w, 0, sizeof(*w));
}

void node_workload_copy(struct node_workload *dst, const struct node_workload *src)
{
	*dst = *src;
	dst->scheduler = dupn(src->scheduler);
	dst->jobs = src->njobs ? xcalloc(src->njobs, sizeof(char *)) : NULL;
	for (size_t i = 0; i < src->njobs; i++)
		dst->jobs[i] = xstrdup(src->jobs[i]);
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

int node_workload_same(const struct node_workload *a, const struct node_workload *b)
{
	if (a->state != b->state || !str_eq(a->scheduler, b->scheduler) || a->njobs != b->njobs ||
	    a->jobs_total != b->jobs_total)
		return 0;
	for (size_t i = 0; i < a->njobs; i++)
		if (!str_eq(a->jobs[i], b->jobs[i]))
			return 0;
	return 1;
}

int node_workload_trusted(const struct node *n)
{
	const struct node_condition *c = node_condition_get(n, NODE_COND_SCHEDULER_IN_SYNC);
	if (!c)
		return 0;
	if (c->status == COND_TRUE)
		return 1;
	return c->status == COND_FALSE && c->reason &&
	       (strcmp(c->reason, "NodeNotInSlurm") == 0 ||
		strcmp(c->reason, "SlurmUpdateFailed") == 0);
}

int node_workload_has_jobs(const struct node_workload *w)
{
	return w->state == WORKLOAD_BUSY || w->state == WORKLOAD_DRAINING;
}

char *node_workload_jobs_text(const struct node_workload *w, char *out, size_t outlen)
{
	size_t o = 0;
	if (!outlen)
		return out;
	out[0] = '\0';
	for (size_t i = 0; i < w->njobs && o < outlen; i++) {
		int k = snprintf(out + o, outlen - o, "%s%s", i ? ", " : "", w->jobs[i]);
		if (k < 0)
			break;
		o += (size_t)k;
	}
	if (w->jobs_total > w->njobs && o < outlen)
		snprintf(out + o, outlen - o, "%s%zu more", w->njobs ? " and " : "",
			 w->jobs_total - w->njobs);
	return out;
}

const char *netboot_report_step(int kind)
{
	static const char *const step[] = {"wait_inspection", "wait_deploy", "wait_disk_boot"};
	return kind >= 0 && kind < 3 ? step[kind] : NULL;
}

int operation_at_or_before(const struct operation *op, const char *step)
{
	for (size_t i = op->step; i < op->nsteps; i++)
		if (strcmp(op->steps[i], step) == 0)
			return 1;
	return 0;
}
