/* core/health.h - the health policy (docs/health.md): the XID catalog compiled into per-code
 * rules, the policy document's strict JSON codec, and the pure parts of evaluating a health
 * event: count-in-window (N of M) and distinct-job windows, the remediation start rung from
 * the recurrence ("lemon") score, and the code grammar. Pure: no I/O, no store, no clock
 * reads - every time is an argument (Unix epoch ms). The health controller
 * (controller/health.c) keeps the windows in memory and does the store work.
 *
 * Sources of outside facts: NVIDIA "XID Errors" and "Analyzing the XID catalog"
 * (https://docs.nvidia.com/deploy/xid-errors/), summarised in tests/data/xid-catalog.tsv from
 * which scripts/gen-xid-catalog.sh generates src/core/xid_catalog.c. */
#ifndef FP_CORE_HEALTH_H
#define FP_CORE_HEALTH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

/* Severities in increasing order (the catalog's scale). */
enum health_severity {
	SEV_INFO = 0,
	SEV_LOW,
	SEV_WARNING,
	SEV_MEDIUM,
	SEV_HIGH,
	SEV_CRITICAL,
	SEV__COUNT
};
/* "info" | "low" | "warning" | "medium" | "high" | "critical"; parse returns 0 or FP_EINVAL. */
const char *health_severity_name(enum health_severity s);
int health_severity_parse(const char *s, enum health_severity *out);

/* One row of the compiled XID catalog (generated; strings static). */
struct xid_catalog_entry {
	int xid;
	const char *name; /* "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS" */
	const char *typical_cause;
	const char *recommended_action;
	enum health_severity severity;
};
extern const struct xid_catalog_entry xid_catalog[];
extern const size_t xid_catalog_len;
/* The row for xid, or NULL. */
const struct xid_catalog_entry *xid_catalog_find(int xid);

#define HEALTH_CODE_MAX 64 /* bytes of a code, with the NUL */
#define HEALTH_MAX_RULES 512
#define HEALTH_MAX_DOMAINS 8
#define HEALTH_MAX_THRESHOLD 64            /* count, distinctJobs, minNodes, maxNodes, rmaScore */
#define HEALTH_MAX_WINDOW_S (90LL * 86400) /* any windowSeconds */
/* spec.breaker.maxNodesPerDomain values: at most this many nodes, so a breaker window
 * (HEALTH_BREAKER_WINDOW_MAX distinct nodes) always holds the limit + 1 nodes that open it. */
#define HEALTH_MAX_DOMAIN_NODES 10000

/* Checks a health event code against the design grammar [a-z0-9_-]+:[a-z0-9_.-]+ (at most
 * HEALTH_CODE_MAX - 1 bytes). A rule may also name a family fallback "<family>:*". Returns 0
 * or FP_EINVAL with why in err. */
int health_code_validate(const char *code, int allow_wildcard, char *err, size_t errlen);

enum health_action {
	HEALTH_ACTION_NONE = 0,
	HEALTH_ACTION_HOLD
};

/* A per-code rule. code is exact ("xid:79") or a family fallback ("sxid:*"). */
struct health_rule {
	char code[HEALTH_CODE_MAX];
	enum health_severity severity;
	enum health_action action;
	int count;         /* hold at the count-th event of this code on one node+GPU ... */
	int64_t window_s;  /* ... within this many seconds (count 1 = at once) */
	int distinct_jobs; /* events carrying a job: hold only when this many distinct jobs hit
			      * the same node+GPU with this code within window_s; 0 = the job is
			      * ignored (the code is the hardware's). Also turns on job
			      * attribution for the code. */
	enum remediation_rung ladder[RUNG__COUNT]; /* distinct, in escalation order */
	size_t nladder; /* 0 = hold without remediation (a human looks: maintenance) */
};

struct health_policy {
	char *name;               /* "default" */
	int64_t resource_version; /* store mod_revision; 0 = the compiled default */
	int dry_run;
	struct health_rule *rules; /* exact codes first is not required: lookup prefers exact */
	size_t nrules;
	struct {
		int min_nodes;    /* same (code, job) on >= this many nodes ... */
		int64_t window_s; /* ... within this window: the job's fault */
	} job_attribution;
	struct {
		int64_t window_s; /* score counts remediations/holds within this window */
		int rma_score;    /* score >= this starts at the rma rung (when in the ladder) */
		int64_t recurrence_s; /* last remediation of the same GPU within this: next rung */
	} lemon;
	struct {
		int enabled;
		int max_nodes;    /* more than this many distinct nodes of one domain value ... */
		int64_t window_s; /* ... with hold-worthy decisions within this window: open */
		char *domains[HEALTH_MAX_DOMAINS];  /* "rack","site","pool" or a node label key of
						    * [A-Za-z0-9._-] (it names the breaker) */
		int domain_max[HEALTH_MAX_DOMAINS]; /* spec.breaker.maxNodesPerDomain for
						     * domains[i]; 0 = max_nodes */
		size_t ndomains;
	} breaker;
};

/* The compiled default policy (name "default"): every catalog XID and every code of the design
 * contract (docs/health.md has the table and the reasons). Caller frees with
 * health_policy_free. Never NULL. */
struct health_policy *health_policy_default(void);
void health_policy_free(struct health_policy *p);
struct health_policy *health_policy_dup(const struct health_policy *p);

/* Strict decode of a policy document {"kind"?:"HealthPolicy","metadata"?:{"name"?,
 * "resourceVersion"?},"spec":{"dryRun"?,"rules"?:[rule...],"jobAttribution"?,"lemon"?,
 * "breaker"?}}. spec.breaker is {"enabled"?,"maxNodes"?,"windowSeconds"?,"domains"?,
 * "maxNodesPerDomain"?:{"<domain>":1..HEALTH_MAX_DOMAIN_NODES}}: every key of
 * maxNodesPerDomain must be one of the domains in force, and a domain must be 1..63 characters
 * of [A-Za-z0-9._-] (no '/': the breaker is named "<domain>.<value>" and reset at
 * POST /v1/breakers/{name}:reset, so a label key like example.com/nvl could never be reset). Starts from the compiled default: each given rule replaces the compiled rule
 * of the same code (or is added); omitted sections keep their defaults. Unknown fields, wrong
 * types, out-of-range numbers, a bad code or rung, a rung out of escalation order or repeated,
 * a code given twice: FP_EINVAL with the field in err ("spec.rules[2].ladder[1]: ...").
 * rv becomes resource_version. *out owned by the caller. */
int health_policy_from_json(const json_t *doc, int64_t rv, struct health_policy **out, char *err,
			    size_t errlen);
/* Renders the whole policy, every rule included (new reference). with_rv adds
 * metadata.resourceVersion when resource_version > 0. */
json_t *health_policy_to_json(const struct health_policy *p, int with_rv);
json_t *health_rule_to_json(const struct health_rule *r);

/* The rule for code: the exact one, else the family fallback "<family>:*", else NULL (the
 * caller then treats the code as "warning, none": recorded, counted, never held). Borrowed. */
const struct health_rule *health_rule_find(const struct health_policy *p, const char *code);

/* ---- windows: bounded lists of (time, tag) entries, pruned by time ---- */

#define HEALTH_WINDOW_MAX 128 /* entries kept per window; the oldest is dropped past it */
/* Distinct tags kept by a breaker window (health_window_touch): one more than the largest
 * per-domain limit, so the node that exceeds any valid limit is always seen. */
#define HEALTH_BREAKER_WINDOW_MAX (HEALTH_MAX_DOMAIN_NODES + 1)

struct health_window_entry {
	int64_t at;        /* Unix ms */
	uint64_t seq;      /* the report that added or last touched it (to undo a failed write) */
	int64_t prev_at;   /* health_window_touch: the time before report seq touched it ... */
	uint64_t prev_seq; /* ... and its report; has_prev 0: seq added the entry */
	int has_prev;
	char tag[72]; /* a job id, a node name, a GPU, or "" */
};

struct health_window {
	struct health_window_entry *e;
	size_t n, cap;
};

void health_window_release(struct health_window *w);
/* Adds an entry (tag truncated to fit); past HEALTH_WINDOW_MAX the oldest entry is dropped. */
void health_window_add(struct health_window *w, int64_t at, const char *tag, uint64_t seq);
/* Sets tag's one entry to time at (a window of distinct tags, each at its newest time, as the
 * breaker keeps nodes), adding it when absent; when the window then holds more than cap
 * entries the oldest is dropped. health_window_undo(seq) restores the time the entry had
 * before report seq touched it, or removes it when seq added it. */
void health_window_touch(struct health_window *w, int64_t at, const char *tag, uint64_t seq,
			 size_t cap);
/* Drops entries older than now - window_ms. */
void health_window_prune(struct health_window *w, int64_t now, int64_t window_ms);
/* Undoes report seq: removes every entry it added, restores those it touched. */
void health_window_undo(struct health_window *w, uint64_t seq);
/* Entries with at > now - window_ms (and at <= now). */
int health_window_count(const struct health_window *w, int64_t now, int64_t window_ms);
/* Distinct non-empty tags among those entries. */
int health_window_distinct(const struct health_window *w, int64_t now, int64_t window_ms);
/* The same, counting only entries with at > after and whose tag skip(tag, arg) does not
 * refuse (skip NULL: none is skipped); when out is not NULL the counted tags are written to it
 * oldest first, comma-separated (truncated to outlen). */
int health_window_distinct_if(const struct health_window *w, int64_t now, int64_t window_ms,
			      int64_t after, int (*skip)(const char *tag, void *arg), void *arg,
			      char *out, size_t outlen);
/* 1 when an entry with this tag lies within the window. */
int health_window_has(const struct health_window *w, int64_t now, int64_t window_ms,
		      const char *tag);
/* Writes the distinct tags within the window, comma-separated, into out (truncated). */
void health_window_tags(const struct health_window *w, int64_t now, int64_t window_ms, char *out,
			size_t outlen);

/* ---- remediation start rung (lemon score and recurrence) ---- */

struct health_lemon {
	int node_score; /* remediations of the node within lemon.window_s + extra holds */
	int gpu_score;  /* the same for this GPU (equal to node_score when gpu is NULL) */
	int recurred;   /* 1: the last remediation of this GPU (or node) within recurrence_s
			   * used rung last_rung */
	enum remediation_rung last_rung;
};

/* The remediation fence of node n for an event on gpu (a lower-case PCI bus id, or NULL/""
 * for an event without one): the time (Unix ms) of the newest status.remediationHistory record
 * with result "succeeded" whose GPU is this gpu, or that names no GPU (a node-wide remediation
 * fences every event of the node); 0 when there is none. Events received at or before the
 * fence do not count toward a new hold; an event whose own time is before it is stale
 * (docs/health.md "Evaluation of one event", steps 0 and 3). */
int64_t health_fence(const struct node *n, const char *gpu);

/* Computes the lemon score of node n for gpu (a PCI bus id, or NULL/"" for the node) at now
 * from status.remediationHistory; extra_holds (holds decided since the newest history record,
 * not yet finished) add to both scores. */
void health_lemon_score(const struct health_policy *p, const struct node *n, const char *gpu,
			int extra_holds, int64_t now, struct health_lemon *out);
/* Index into r->ladder of the rung to start at: score (gpu or node) >= lemon.rma_score starts
 * at rma when the ladder has it; a recurrence starts at the first rung after last_rung (the last
 * rung when none is after); else 0. r->nladder must be > 0. */
size_t health_start_rung(const struct health_policy *p, const struct health_rule *r,
			 const struct health_lemon *l);

/* ---- the decision on one event (docs/health.md "Evaluation of one event") as a pure
 * function: the caller keeps the windows, the job faults and the breakers, renders the reason
 * and audit text and handles dry run; health_verdict only ranks the facts it is given. */

enum health_decision {
	HEALTH_DECISION_NONE = 0,    /* recorded, no node action */
	HEALTH_DECISION_COUNT,       /* recorded and counted, below a hold (or evidence) */
	HEALTH_DECISION_HOLD,        /* place the health hold */
	HEALTH_DECISION_SUPPRESSED,  /* a hold, suppressed by an open breaker */
	HEALTH_DECISION_JOB_FAULT,   /* the job's fault, no node action */
	HEALTH_DECISION_NEED_JOB,    /* needs job_fault: call again with job_known = 1 */
	HEALTH_DECISION_NEED_BREAKER /* needs breaker_open: call again with breaker_known = 1 */
};

/* Why the decision is what it is (the step of the evaluation that decided). */
enum health_basis {
	HEALTH_BASIS_NO_RULE = 0,  /* none: no rule for the code */
	HEALTH_BASIS_NO_ACTION,    /* none: the rule takes no node action */
	HEALTH_BASIS_STALE,        /* count: the event is older than the remediation fence */
	HEALTH_BASIS_JOB,          /* job_fault, or need_job */
	HEALTH_BASIS_BELOW,        /* count: below the rule's count or distinct jobs */
	HEALTH_BASIS_NOT_HOLDABLE, /* none: the node cannot be held in its phase */
	HEALTH_BASIS_REMEDIATING,  /* count: a remediation is in progress (evidence) */
	HEALTH_BASIS_BREAKER,      /* suppressed, or need_breaker */
	HEALTH_BASIS_THRESHOLD     /* hold: the threshold is met */
};

/* The inputs of one decision. The two effectful lookups (has the job been declared at fault,
 * is a breaker of the node open) are asked for only when the steps before them pass: the
 * caller supplies them after a NEED_* answer, so it touches the job and breaker windows exactly
 * when the evaluation reaches them. */
struct health_facts {
	const struct health_policy *policy; /* for the start rung */
	const struct health_rule *rule;     /* the rule of the code (never NULL) */
	int unknown_rule;                   /* rule is the stand-in for a code without one */
	int64_t event_ms;                   /* the event's own time (Unix ms; 0: none given) */
	int64_t fence_ms;                   /* health_fence of the node and GPU (0: none) */
	int job;                            /* the event names a job */
	int count;                          /* events in the count window, this one included */
	int jobs;                           /* distinct jobs in it (job faults skipped) */
	int job_known, job_fault; /* job attribution asked / the (code, job) is at fault */
	int holdable;             /* the node may get a health hold in its phase */
	int remediating;          /* the node (or this report) already has a health hold */
	int breaker_known,
		breaker_open; /* breakers asked / one of the node's is (or would be) open */
	const struct health_lemon *lemon; /* for the start rung of a hold; NULL: rung 0 */
};

struct health_verdict {
	enum health_decision decision;
	enum health_basis basis;
	const char *rule;  /* the rule's code (borrowed from facts.rule) */
	int stale;         /* health_stale(event_ms, fence_ms) */
	int by_jobs;       /* the rule counts distinct jobs for this event (job and distinctJobs) */
	int met;           /* the count (or distinct jobs) reached the rule's threshold */
	size_t start_rung; /* HOLD with a ladder: index into rule->ladder */
	struct health_facts in; /* the inputs it read (a copy; pointers borrowed) */
};

/* 1 when an event of own time event_ms (0: unknown) is older than fence_ms (0: none). */
int health_stale(int64_t event_ms, int64_t fence_ms);
/* Decides one event from f in the documented order: no hold rule -> none; stale -> count; a
 * job's fault -> job_fault; below the threshold -> count; not holdable -> none; remediation in
 * progress -> count; a breaker open -> suppressed; else hold (start rung from the lemon score).
 * Pure: no store, no clock, no allocation. */
void health_verdict(const struct health_facts *f, struct health_verdict *out);
/* "none", "count", "hold", "suppressed", "job_fault" (the API's decision action), or "?" for a
 * NEED_* answer. */
const char *health_decision_name(enum health_decision d);

#endif
