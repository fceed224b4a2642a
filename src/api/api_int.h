/* api_int.h - private types of the API server shared by server.c, reply.c, watch.c and the
 * per-resource files (api_nodes.c, api_objects.c, api_tokens.c, api_health.c, idem.c,
 * openapi.c): the server and request structs, the route table entry, the resource handlers,
 * the per-node report limiter. It includes the reply helpers (api/reply.h, reply.c) and the
 * watch streams (api/watch.h, watch.c), so a handler includes this one header; the calls go
 * one way: server.c -> watch.c -> reply.c, handlers -> reply.c and watch.c. Not for use outside
 * src/api/. */
#ifndef FP_API_INT_H
#define FP_API_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "api/auth.h"
#include "api/reply.h"
#include "api/server.h"
#include "api/watch.h"
#include "base/buf.h"
#include "base/clock.h"

struct store;
struct store_op;

#define API_PROBLEM_BASE "https://fleetplane.dev/problems/"
#define API_MAX_PARAMS 3
#define API_MAX_HDRS 6

struct watch_hub;
struct api_pool;
struct api_report_limiter;

struct api_server {
	struct api_config cfg;
	struct MHD_Daemon *mhd;
	struct watch_hub *hub;   /* watch.c: parks idle watch streams off the poll threads */
	struct api_pool *pool;   /* server.c: worker threads for requests that may block */
	atomic_int live_watches; /* watch responses not yet destroyed */
	/* requests handed to a worker or with a reply queued, not yet completed (owed: their
	 * client is waiting for an answer the daemon must send before it stops) */
	atomic_int replies_owed;
	struct api_auth *auth;
	struct fp_rng own_rng;
	struct fp_rng *rng;
	unsigned port;
	atomic_int stopping;
	atomic_uint event_seq; /* event id suffixes: ordered within a millisecond */
	struct metric_family *m_requests;
	struct metric_family *m_duration;
	struct metric_family *m_unary; /* obs (issue 15): the same, streams (watch) left out */
	struct api_report_limiter *report_limit; /* report_limit.c: per-node :report limit */
	struct api_conns *conns;                 /* conns.c: connection limits, request deadlines */
	struct metric_family *m_reports_refused; /* fleetplane_agent_reports_refused_total */
	char *tls_cert, *tls_key; /* copies of cfg's PEM (libmicrohttpd keeps pointers) */
};

struct api_req;
typedef void (*api_handler_fn)(struct api_req *r);

/* Route flags. */
#define API_R_V1 1         /* under /v1: 503 until ready */
#define API_R_AGENT_SELF 2 /* an agent token may call it for its own node (param 0) */
#define API_R_FAST 4       /* tried on the poll thread first (the handler may ask to offload) */
#define API_R_KUBE 8       /* the Kubernetes surface (kube.c): bodies on PATCH and DELETE */

struct api_route {
	const char *method;
	const char *pattern; /* literal path with "{name}" segments; "{name}:verb" for actions */
	enum api_role min_role;
	int flags;
	api_handler_fn fn;
	/* the query parameters the route takes, NULL-terminated; any other is refused with 400
	 * before the handler runs (issue 13). NULL = not checked here (kube routes check their
	 * own; the other native routes are not listed yet). */
	const char *const *params;
};

struct api_owned {
	void *p;
	void (*fn)(void *);
};

struct api_hdr {
	const char *key; /* static string */
	char *value;     /* owned */
};

/* One HTTP request, from the first access-handler call to MHD's completion callback. */
struct api_req {
	struct api_server *srv;
	struct MHD_Connection *conn;
	const struct api_route *route;
	const char *method;                 /* MHD's, valid for the request */
	char *path;                         /* owned copy of the (decoded) path, no query */
	const char *params[API_MAX_PARAMS]; /* path parameters, owned by the arena */
	struct api_principal who;
	int64_t start_ns;
	/* body */
	struct buf body;
	int too_big;
	size_t reply_len; /* bytes of the reply body queued (a burst to give back, memtrim.h) */
	int called;       /* 1: first call seen; 2: answered; 3: running on a worker thread; 4: its
		      * access checked on a worker before a 100 Continue (Expect) */
	int preauth; /* the worker job is the access check of an Expect: 100-continue request */
	int no_route_known; /* no route matched: 1 when the path is known with other methods */
	const char *no_route_allow; /* then the methods it takes ("GET, PUT"), owned by r */
	int fast;                   /* the handler runs on a poll thread: it must not block */
	int offload; /* set by a handler running fast: run me again on a worker thread */
	/* A node list's rows with mod_revision <= this are copied trusted (api_node_view
	 * trusted_rev, read before the page's scan); 0 = none. Never set for a watch: its events
	 * are past changes, not rows current in a later read. */
	int64_t text_trusted_rev;
	/* response */
	int status;
	const char *ctype;
	struct buf out;
	char *take; /* a body handed over by api_reply_take (instead of out) */
	size_t take_len;
	struct api_hdr hdrs[API_MAX_HDRS];
	size_t nhdrs;
	struct MHD_Response *stream; /* a prepared response (watch); queued instead of out */
	int streamed;                /* stream was queued: left out of the latency SLO series */
	int owed;                    /* counted in srv->replies_owed */
	/* idempotency (idem.c) */
	char *idem_key; /* store key, or NULL when the request has no Idempotency-Key */
	char *idem_fp;  /* hex fingerprint of method, path and body */
	int64_t idem_expect;
	/* arena: everything registered here is freed when the request ends */
	struct api_owned *owned;
	size_t nowned, aowned;
	struct api_req *next_job; /* worker pool queue (server.c) */
	/* the Kubernetes surface (kube.c; issue 13) */
	int kube;                      /* path under /api, /apis, /openapi, /version: errors
					  * are Status objects */
	const struct kube_kind *kkind; /* the kind a /apis/fleetplane.io/v1 request names */
	int ktable;                    /* the client asked for a meta.k8s.io Table */
	int kbookmarks;                /* watch: allowWatchBookmarks=true */
	int kube_native;               /* a native handler runs for kube.c on a body it made */
	int64_t kdeadline_ms;          /* watch: timeoutSeconds (monotonic ms; 0 = none) */
	/* list: turns {"items","metadata"} into the Kubernetes list or Table (steals, returns
	 * a new reference); watch: turns each event's object (steals; type is the event's) */
	json_t *(*kube_list)(struct api_req *r, json_t *list);
	json_t *(*kube_obj)(struct api_req *r, const char *type, json_t *obj);
	/* set with kube by the router (api_kube_status): the Status object an error on the
	 * Kubernetes surface answers, so reply.c need not call into kube.c */
	json_t *(*kube_status)(struct api_req *r, int status, const char *message, json_t *ext);
};

struct kube_kind;
/* --- kube.c: the Kubernetes API (discovery, /apis/fleetplane.io/v1, Status errors) --- */
void api_kube_version(struct api_req *r);
void api_kube_api(struct api_req *r);
void api_kube_apis(struct api_req *r);
void api_kube_group(struct api_req *r);
void api_kube_resources(struct api_req *r);
void api_kube_collection(struct api_req *r);
void api_kube_create(struct api_req *r);
void api_kube_get(struct api_req *r);
void api_kube_put(struct api_req *r);
void api_kube_patch(struct api_req *r);
void api_kube_delete(struct api_req *r);
void api_kube_subresource(struct api_req *r);
void api_kube_action(struct api_req *r);
void api_kube_openapi(struct api_req *r);
void api_kube_openapi_group(struct api_req *r);
void api_kube_events(struct api_req *r);
/* A Status object (reason from the HTTP status) for a problem: kube replies use it. Steals
 * ext (may carry "field" for 422 causes). */
json_t *api_kube_status(struct api_req *r, int status, const char *message, json_t *ext);
/* Refuses (400, "unknown query parameter NAME", member "parameter") a query parameter of r not
 * in allowed (NULL-terminated). Returns 0, or -1 when the reply is made. reply.c. */
int api_params_check(struct api_req *r, const char *const *allowed);
/* The OpenAPI schemas of a node's spec (returned) and status (*status), new references: kube.c
 * builds them for /openapi/v3, openapi.c reuses them for /v1/openapi.json. */
json_t *api_kube_node_schemas(json_t **status);
/* Is path on the Kubernetes surface? */
int api_kube_path(const char *path);
/* Operation documents as the API renders them (api_objects.c). */
json_t *api_op_render(struct api_req *r, const json_t *doc, int64_t mod_rev);
json_t *api_plain_render(struct api_req *r, const json_t *doc, int64_t mod_rev);
/* Budget documents with their live status (api_health.c). */
json_t *api_budget_render(struct api_req *r, const json_t *doc, int64_t mod_rev);

/* --- idem.c: Idempotency-Key (draft-ietf-httpapi-idempotency-key-header) --- */
/* Call first in a POST handler. Returns 1 when the request has been answered (a replay of the
 * stored response, or a problem for a bad/reused key); 0 to go on. */
int api_idem_begin(struct api_req *r);
/* When r->idem_key is set: fills op with the record {"status","body","createdAt"} to commit in
 * the same transaction as the effect. body has no resourceVersion: the replay puts the
 * record's own mod_revision (the same transaction revision) there. Returns 1 if op was filled,
 * 0 when the request has no key. Borrows body. */
int api_idem_op(struct api_req *r, struct store_op *op, int status, const json_t *body);

/* --- resources --- */
void api_nodes_list(struct api_req *r);
void api_nodes_create(struct api_req *r);
void api_node_get(struct api_req *r);
void api_node_put(struct api_req *r);
void api_node_delete(struct api_req *r);
void api_node_drain(struct api_req *r);
void api_node_resume(struct api_req *r);
void api_node_retire(struct api_req *r);
void api_node_release(struct api_req *r);
void api_node_booted(struct api_req *r);
void api_node_validated(struct api_req *r);
void api_node_power(struct api_req *r);
/* api_bulk.c (issue 15): POST /v1/nodes:drain and /v1/nodes:resume for at most API_BULK_MAX
 * nodes by selector or names, one result per node (docs/api.md "Bulk drain and resume"). */
#define API_BULK_MAX 1000
/* One power request for node name with action (on, off, cycle, soft, reset, status; checked
 * by the caller) and force, exactly as POST /v1/nodes/{name}:power does it (api_nodes.c), but
 * answering nothing: status 202 with op_id, or the status (404, 409, 500) and the detail the
 * single route would answer. No Idempotency-Key. */
struct api_power_result {
	int status;
	char why[512];
	char op_id[128];
};
void api_node_power_one(struct api_req *r, const char *name, const char *action, int force,
			struct api_power_result *res);
void api_nodes_bulk_drain(struct api_req *r);
void api_nodes_bulk_resume(struct api_req *r);
void api_nodes_bulk_power(struct api_req *r);
void api_ops_list(struct api_req *r);
void api_op_get(struct api_req *r);
void api_op_cancel(struct api_req *r);
void api_events_list(struct api_req *r);
void api_event_get(struct api_req *r);
void api_sites_list(struct api_req *r);
void api_site_get(struct api_req *r);
void api_sites_create(struct api_req *r);
void api_site_delete(struct api_req *r);
void api_racks_list(struct api_req *r);
void api_rack_get(struct api_req *r);
void api_racks_create(struct api_req *r);
void api_rack_delete(struct api_req *r);
void api_tokens_list(struct api_req *r);
void api_tokens_create(struct api_req *r);
void api_token_get(struct api_req *r);
void api_token_delete(struct api_req *r);
void api_openapi(struct api_req *r);
/* api_health.c (issue 4): agent reports, health events, policies, budgets, breakers, RMAs. */
void api_node_report(struct api_req *r);
void api_node_remediated(struct api_req *r);
void api_node_jobend(struct api_req *r);
void api_healthevents_list(struct api_req *r);
void api_healthevent_get(struct api_req *r);
void api_policies_list(struct api_req *r);
void api_policy_get(struct api_req *r);
void api_policy_put(struct api_req *r);
void api_budgets_list(struct api_req *r);
void api_budgets_create(struct api_req *r);
void api_budget_get(struct api_req *r);
void api_budget_put(struct api_req *r);
void api_budget_delete(struct api_req *r);
void api_breakers_list(struct api_req *r);
void api_breaker_reset(struct api_req *r);
void api_rmas_list(struct api_req *r);
void api_rma_get(struct api_req *r);
/* api_usage.c (issue 10): GPU-hours from Slurm's accounting. */
void api_usage_get(struct api_req *r);
/* api_tenants.c (issue 10): tenants = Slurm accounts with a GPU quota. */
void api_tenants_list(struct api_req *r);
void api_tenant_get(struct api_req *r);
void api_tenant_put(struct api_req *r);
void api_tenant_delete(struct api_req *r);

/* Node rendering for responses and watch: stored document -> public document. */
json_t *api_node_render(struct api_req *r, const json_t *doc, int64_t mod_rev);

/* --- the per-node and per-token report limit (report_limit.c; server.h
 * struct api_report_limit) --- */
#define API_REPORT_MAX_EVENTS 256 /* events in one report (design contract) */
/* nodes tracked at once, and tokens tracked at once; then 429 "nodes" / "tokens" */
#define API_REPORT_LIMIT_MAX_NODES 100000

enum api_report_limit_kind {
	API_REPORT_LIMIT_OK = 0,
	API_REPORT_LIMIT_REPORTS, /* the reports bucket is empty */
	API_REPORT_LIMIT_EVENTS,  /* the events bucket holds fewer than the report's events */
	API_REPORT_LIMIT_NODES,   /* API_REPORT_LIMIT_MAX_NODES nodes (tokens) tracked, none idle */
};

/* Counts one refused POST /v1/nodes/{name}:report in fleetplane_agent_reports_refused_total
 * {reason} (server.c; docs/operations.md "Metrics"). reason: a static string, one of
 * unauthenticated, forbidden, legacy_token, stale_token, rate_limited, unknown_node,
 * bad_report. */
void api_report_refused(struct api_req *r, const char *reason);

/* api_report_limit_resolve fills out from in (NULL = all defaults): zero members become the
 * API_REPORT_LIMIT_* defaults, burst <= 0 becomes the default, negatives stay (= off). */
void api_report_limit_resolve(const struct api_report_limit *in, struct api_report_limit *out);
/* api_report_limiter_new returns a limiter owned by the server (free with
 * api_report_limiter_free; NULL is a no-op). cfg is copied (resolved); clock is borrowed and
 * must outlive the limiter, or NULL to use a real clock of its own. Thread-safe. */
struct api_report_limiter *api_report_limiter_new(const struct api_report_limit *cfg,
						  struct fp_clock *clock);
void api_report_limiter_free(struct api_report_limiter *l);
/* api_report_limit_take admits one report of nevents events for node sent with the token
 * named token (both borrowed, copied when first seen): returns 0 and takes one report token
 * and nevents event tokens from the node's buckets and from the token's (nevents is counted up
 * to the events bucket's size), or returns the milliseconds (> 0) until the report would fit,
 * taking nothing, with *kind naming the limit hit, *by_token 0 when it is the node's, 1 when
 * it is the token's (the node's are looked at first) and, for API_REPORT_LIMIT_EVENTS, *left
 * the whole event tokens there now. */
int64_t api_report_limit_take(struct api_report_limiter *l, const char *node, const char *token,
			      size_t nevents, enum api_report_limit_kind *kind, int *by_token,
			      int64_t *left);
/* The resolved configuration, and the events bucket's size (for messages). */
const struct api_report_limit *api_report_limit_config(const struct api_report_limiter *l);
int64_t api_report_limit_events_burst(const struct api_report_limiter *l);

#endif
