/* api_int.h - private types of the API server shared by server.c and the per-resource files
 * (api_nodes.c, api_objects.c, api_tokens.c, watch.c, idem.c, openapi.c): the request context,
 * the route table entry, and the reply helpers every handler uses. Not for use outside
 * src/api/. */
#ifndef FP_API_INT_H
#define FP_API_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "api/auth.h"
#include "api/server.h"
#include "base/buf.h"
#include "base/clock.h"

struct store;
struct store_op;

#define API_PROBLEM_BASE "https://fleetplane.dev/problems/"
#define API_MAX_PARAMS 2
#define API_MAX_HDRS 6

struct watch_hub;
struct api_pool;
struct api_report_limiter;

struct api_server {
	struct api_config cfg;
	struct MHD_Daemon *mhd;
	struct watch_hub *hub;  /* watch.c: parks idle watch streams off the poll threads */
	struct api_pool *pool;  /* server.c: worker threads for requests that may block */
	atomic_int live_watches; /* watch responses not yet destroyed */
	struct api_auth *auth;
	struct fp_rng own_rng;
	struct fp_rng *rng;
	unsigned port;
	atomic_int stopping;
	atomic_uint event_seq; /* event id suffixes: ordered within a millisecond */
	struct metric_family *m_requests;
	struct metric_family *m_duration;
	struct api_report_limiter *report_limit; /* report_limit.c: per-node :report limit */
};

struct api_req;
typedef void (*api_handler_fn)(struct api_req *r);

/* Route flags. */
#define API_R_V1 1         /* under /v1: 503 until ready */
#define API_R_AGENT_SELF 2 /* an agent token may call it for its own node (param 0) */
#define API_R_FAST 4       /* tried on the poll thread first (the handler may ask to offload) */

struct api_route {
	const char *method;
	const char *pattern; /* literal path with "{name}" segments; "{name}:verb" for actions */
	enum api_role min_role;
	int flags;
	api_handler_fn fn;
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
	const char *method; /* MHD's, valid for the request */
	char *path;         /* owned copy of the (decoded) path, no query */
	const char *params[API_MAX_PARAMS]; /* path parameters, owned by the arena */
	struct api_principal who;
	int64_t start_ns;
	/* body */
	struct buf body;
	int too_big;
	int called; /* 1: first call seen; 2: answered; 3: running on a worker thread */
	int fast;    /* the handler runs on a poll thread: it must not block */
	int offload; /* set by a handler running fast: run me again on a worker thread */
	/* response */
	int status;
	const char *ctype;
	struct buf out;
	char *take;      /* a body handed over by api_reply_take (instead of out) */
	size_t take_len;
	struct api_hdr hdrs[API_MAX_HDRS];
	size_t nhdrs;
	struct MHD_Response *stream; /* a prepared response (watch); queued instead of out */
	/* idempotency (idem.c) */
	char *idem_key;     /* store key, or NULL when the request has no Idempotency-Key */
	char *idem_fp;      /* hex fingerprint of method, path and body */
	int64_t idem_expect;
	/* arena: everything registered here is freed when the request ends */
	struct api_owned *owned;
	size_t nowned, aowned;
	struct api_req *next_job; /* worker pool queue (server.c) */
};

/* --- arena (server.c) --- */
/* Registers p (malloc'd) to be freed at request end; returns p. */
void *api_own(struct api_req *r, void *p);
/* Registers p to be released with fn(p) at request end; returns p. */
void *api_own_fn(struct api_req *r, void *p, void (*fn)(void *));
char *api_strdup(struct api_req *r, const char *s);
/* Registers a jansson reference to be released at request end; returns v. */
json_t *api_own_json(struct api_req *r, json_t *v);
char *api_printf(struct api_req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- request accessors (server.c) --- */
/* Query argument (percent-decoded by MHD) or NULL. Borrowed for the request. */
const char *api_query(struct api_req *r, const char *key);
/* Request header (case-insensitive name) or NULL. Borrowed for the request. */
const char *api_header(struct api_req *r, const char *key);
int64_t api_now(struct api_req *r);
uint64_t api_rand(struct api_req *r);
/* Suffix for event_id: a per-server counter (random start), so the events one server writes in
 * the same millisecond still list in the order they were made. */
uint64_t api_event_seq(struct api_req *r);
/* "operator:<token name>" (or "agent:<name>"), arena string: actor of audit events and owner
 * of holds made through the API. */
const char *api_actor(struct api_req *r);

/* --- replies (server.c); each sets the whole response, a later call replaces it --- */
/* 2xx/any JSON document; steals v. */
void api_reply_json(struct api_req *r, int status, json_t *v);
/* Takes data (malloc'd, len bytes) as the body: handed to MHD without a copy. */
void api_reply_take(struct api_req *r, int status, const char *ctype, char *data, size_t len);
/* Raw bytes with a content type (copied). */
void api_reply_raw(struct api_req *r, int status, const char *ctype, const char *data,
		   size_t len);
/* RFC 9457 problem: {"type","title","status","detail","instance"} plus the members of ext
 * (stolen, may be NULL). */
void api_problem_ext(struct api_req *r, int status, json_t *ext, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define api_problem(r, status, ...) api_problem_ext((r), (status), NULL, __VA_ARGS__)
/* Problem for an fp_err, status from fp_err_http. */
void api_problem_rc(struct api_req *r, int rc, const char *detail);
/* Adds a response header; value copied. */
void api_add_header(struct api_req *r, const char *key, const char *value);

/* Parses the request body as a JSON object. On error answers 400 (with "line" and "column"
 * members for malformed JSON), 415 for a non-JSON Content-Type, and returns -1. */
int api_body_object(struct api_req *r, json_t **out);
/* api_body_object, the object owned by r, and 422 "unknown field KEY" (member "field": KEY cut to
 * 128 bytes on a UTF-8 boundary) for a key not in the NULL-terminated keys. Returns 0 with *out
 * set, or -1 when the response is already sent. */
int api_body_keys(struct api_req *r, const char *const *keys, json_t **out);

/* --- helpers shared by resources --- */
/* metadata.resourceVersion in the documented form (decimal string, as Kubernetes). */
json_t *api_rv_json(int64_t rv);
/* Sets doc.metadata.resourceVersion (creating metadata if absent). */
void api_set_rv(json_t *doc, int64_t rv);
/* Reads a resourceVersion given as JSON string or integer (> 0). Returns 0 or FP_EINVAL. */
int api_rv_parse_json(const json_t *v, int64_t *out);
/* Reads a decimal revision from text; also accepts an RFC 9110 section 8.8.3 entity-tag
 * ("\"12\""). Returns 0 or FP_EINVAL. */
int api_rv_parse_str(const char *s, int64_t *out);
/* New audit event op for a transaction: fills op (strings in the arena). */
void api_event_op(struct api_req *r, struct store_op *op, const char *type, const char *object,
		  const char *reason, const char *message);
/* A random UUIDv4 in the arena (RFC 9562 section 5.4). */
char *api_uuid(struct api_req *r);

/* Generic list with paging (limit default 500, max 5000; continue = base64url of the last
 * key). keep (may be NULL) returns 1 to include a stored document; render returns a new
 * reference for the response or NULL to answer 500. */
typedef int (*api_keep_fn)(struct api_req *r, const json_t *doc, void *arg);
typedef json_t *(*api_render_fn)(struct api_req *r, const json_t *doc, int64_t mod_rev);
void api_list(struct api_req *r, const char *prefix, api_keep_fn keep, void *arg,
	      api_render_fn render);
/* Reads and parses one stored document. Returns 0, FP_ENOTFOUND, FP_EIO (corrupt). */
int api_get_doc(struct api_req *r, const char *key, json_t **doc, int64_t *mod_rev);

/* --- watch.c --- */
/* The watch hub: one thread fills the streams of idle (suspended) watch connections from the
 * store and resumes them; one thread turns store_wait into wake-ups. Start before the daemon;
 * stop (ends every stream: each returns end-of-stream when next read) before it stops. */
int api_watch_hub_start(struct api_server *srv, char *err, size_t errlen);
void api_watch_hub_stop(struct api_server *srv);
/* Answers a ?watch=1 request: streams {"type","object"} lines for keys under prefix from
 * resourceVersion (query) on, or the current objects as ADDED first when it is absent/0. */
void api_watch(struct api_req *r, const char *prefix, const char *kind, api_keep_fn keep,
	       void *arg, api_render_fn render);

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
/* The BMC index of api_nodes.c (one node per BMC: /bmc/<hash> keys written with each node) for
 * a store written before it existed: once per store (a /meta/bmc-index key records that it ran),
 * claims the BMC of every non-sim node in /nodes/ in name order, in transactions of at most 4096
 * ops. Two stored nodes on one BMC: the first (by name) is indexed, the other is logged at warn
 * with both names and counted in *shared (it stays; a PUT or DELETE of either resolves it).
 * *claimed: the nodes indexed. Call before the API serves. Returns 0 (also when it ran
 * before, with both counts 0), or a store error (FP_EIO ...). */
struct store;
int api_bmc_index_backfill(struct store *s, size_t *claimed, size_t *shared);
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

/* Node rendering for responses and watch: stored document -> public document. */
json_t *api_node_render(struct api_req *r, const json_t *doc, int64_t mod_rev);

/* --- the per-node report limit (report_limit.c; server.h struct api_report_limit) --- */
#define API_REPORT_MAX_EVENTS 256            /* events in one report (design contract) */
#define API_REPORT_LIMIT_MAX_NODES 100000    /* nodes tracked at once; then 429 "nodes" */

enum api_report_limit_kind {
	API_REPORT_LIMIT_OK = 0,
	API_REPORT_LIMIT_REPORTS, /* the reports bucket is empty */
	API_REPORT_LIMIT_EVENTS,  /* the events bucket holds fewer than the report's events */
	API_REPORT_LIMIT_NODES,   /* API_REPORT_LIMIT_MAX_NODES nodes tracked, none idle */
};

/* api_report_limit_resolve fills out from in (NULL = all defaults): zero members become the
 * API_REPORT_LIMIT_* defaults, burst <= 0 becomes the default, negatives stay (= off). */
void api_report_limit_resolve(const struct api_report_limit *in, struct api_report_limit *out);
/* api_report_limiter_new returns a limiter owned by the server (free with
 * api_report_limiter_free; NULL is a no-op). cfg is copied (resolved); clock is borrowed and
 * must outlive the limiter, or NULL to use a real clock of its own. Thread-safe. */
struct api_report_limiter *api_report_limiter_new(const struct api_report_limit *cfg,
						  struct fp_clock *clock);
void api_report_limiter_free(struct api_report_limiter *l);
/* api_report_limit_take admits one report of nevents events for node (borrowed, copied when
 * first seen): returns 0 and takes one report token and nevents event tokens (nevents is
 * counted up to the events bucket's size), or returns the milliseconds (> 0) until the
 * report would fit, taking nothing, with *kind naming the limit hit and, for
 * API_REPORT_LIMIT_EVENTS, *left the whole event tokens there now. */
int64_t api_report_limit_take(struct api_report_limiter *l, const char *node, size_t nevents,
			      enum api_report_limit_kind *kind, int64_t *left);
/* The resolved configuration, and the events bucket's size (for messages). */
const struct api_report_limit *api_report_limit_config(const struct api_report_limiter *l);
int64_t api_report_limit_events_burst(const struct api_report_limiter *l);

#endif
