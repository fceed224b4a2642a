/* server.h - fleetplane's HTTP/JSON API server (DESIGN.md "API"): REST over HTTP/1.1 under
 * /v1/, served by libmicrohttpd 0.9.75 from poll-mode event-loop threads (see
 * ../shared/recipes/libmicrohttpd.md and the comment in server.c on why), JSON by jansson,
 * bearer tokens (auth.h) by libsodium. Errors are RFC 9457 application/problem+json.
 *
 * `fleetplane serve` builds one api_config, calls api_server_new once the store is open, and
 * api_server_free on shutdown. Until cfg->ready(arg) returns nonzero every /v1 request is
 * answered 503 (/healthz, /readyz and /metrics are always served). */
#ifndef FP_API_SERVER_H
#define FP_API_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "api/conns.h"

struct store;
struct fp_clock;
struct fp_rng;
struct api_server;

/* Optional read-through hook for GET /v1/nodes/{name}: the controller's informer cache serves
 * the pre-rendered public JSON (node_to_json(n, NODE_JSON_PUBLIC), secrets removed) so the hot
 * GET path does not touch the store. get_json returns 0, a malloc'd document in *json (*len
 * bytes; the server hands it to libmicrohttpd as the response body, which frees it with free())
 * and the document's metadata.resourceVersion in *rv (the ETag; 0 = unknown, then no ETag is
 * sent); FP_ENOTFOUND when the cache does not hold the node (the server then reads the store,
 * so a node created a moment ago is still found); or another negative fp_err (answered as that
 * error). Called from the server's poll threads concurrently; must be thread-safe and must not
 * block for long (every other connection of that thread waits). */
struct api_node_view {
	int (*get_json)(void *arg, const char *name, char **json, size_t *len, int64_t *rv);
	/* The cached node's metadata.uid copied into uid (len bytes, NUL-terminated): 0, or
	 * FP_ENOTFOUND when the cache does not hold the node. Each agent request checks its
	 * token's nodeUid with it (auth.h); only a match is trusted, anything else is checked
	 * against the store on a worker thread (a cache a moment behind a re-creation must not
	 * refuse the new node's token). Same thread rules as get_json. NULL: the store. */
	int (*get_uid)(void *arg, const char *name, char *uid, size_t len);
	/* The revision the cached node was decoded from in *rev: 0, or FP_ENOTFOUND when the
	 * cache does not hold it. A list copies a stored row whose mod_revision matches as
	 * trusted text (engine/cache.h cache_node_rev, base/jsontext.h). Called from worker
	 * threads inside a store read transaction: must take no lock a store writer or reader
	 * may hold. NULL: every row is checked in full. */
	int (*get_rev)(void *arg, const char *name, int64_t *rev);
	/* A revision T: a node row current in a store read begun after the call, with
	 * mod_revision <= T, was parsed and decoded by the cache from that very text (engine/
	 * cache.h cache_trusted_revision); 0 = none. Called once per list page, before its
	 * scan, from worker threads. NULL: get_rev alone. */
	int64_t (*trusted_rev)(void *arg);
	void *arg;
};

/* Where the agent callbacks POST /v1/nodes/{name}:booted and :validated go (serve wires the
 * lifecycle controller's lifecycle_agent_booted/validated). Called from API worker threads
 * after the body was checked and the node found; must not block (hand the write to a queue).
 * Strings are borrowed for the call. booted NULL: the routes answer 503. */
struct api_agent_hooks {
	void (*booted)(void *arg, const char *node, const char *boot_id);
	void (*validated)(void *arg, const char *node, const char *boot_id, int passed);
	/* POST /v1/nodes/{name}:remediated: the node's agent finished the gpu_reset operation
	 * op_id (the node's status.operation, checked by the API) with succeeded 1/0 and an
	 * optional message (NULL when absent). serve wires lifecycle_agent_remediated. NULL: the
	 * route answers 503. */
	void (*remediated)(void *arg, const char *node, const char *op_id, int succeeded,
			   const char *message);
	void *arg;
};

/* The health controller (controller/health.h) and the disruption-budget service
 * (controller/budget.h) as the API sees them: the API layer does not include controller
 * headers, so serve passes wrappers. Each member mirrors the controller function of the same
 * name (health_report, health_policy_get, health_policy_put, health_breakers,
 * health_breaker_reset, budget_svc_status, budget_svc_invalidate): same arguments after arg,
 * same return values and ownership (json_t results are new references). Called from API worker
 * threads concurrently. A NULL member makes its routes answer 503 ("no health controller"),
 * except budget_status (budgets are then answered without "status") and budget_invalidate
 * (skipped). */
struct api_health_hooks {
	int (*report)(void *arg, const char *node, const char *actor, const json_t *report,
		      int64_t received_ms, json_t **result, char *err, size_t errlen);
	json_t *(*policy_get)(void *arg);
	int (*policy_put)(void *arg, const json_t *doc, const char *actor, json_t **stored,
			  char *err, size_t errlen);
	json_t *(*breakers)(void *arg);
	int (*breaker_reset)(void *arg, const char *name, const char *actor, const char *reason,
			     char *err, size_t errlen);
	/* health_breaker_reset_ex: with replay and the result document; when set, the reset
	 * route uses it instead of breaker_reset. */
	int (*breaker_reset_ex)(void *arg, const char *name, const char *actor, const char *reason,
				int replay, json_t **result, char *err, size_t errlen);
	json_t *(*budget_status)(void *arg, const char *name);
	void (*budget_invalidate)(void *arg);
	void *arg;
};

/* The per-node limit on agent reports, POST /v1/nodes/{name}:report (docs/api.md "Report
 * rate limit"), whoever sends them (agent, operator or admin token): a token bucket of
 * reports (reports_per_s, burst) and one of events (events_per_min; the bucket holds a
 * minute's worth, at least one full report of 256 events). A report over either limit is
 * answered 429 with Retry-After and nothing of it is recorded. Zero members take the defaults
 * below; reports_per_s < 0 or events_per_min < 0 turns that limit off. */
#define API_REPORT_LIMIT_RATE 5.0            /* reports per second per node */
#define API_REPORT_LIMIT_BURST 20            /* reports at once per node */
#define API_REPORT_LIMIT_EVENTS_PER_MIN 6000 /* events per minute per node */
struct api_report_limit {
	double reports_per_s;
	long burst;
	long events_per_min;
};

/* Where GET /v1/usage reads GPU use (docs/api.md "Usage"): serve sets it with --slurm, over
 * sched/slurm_acct.h (slurm_acct_usage, then slurm_acct_report_json). The window is [from_s,
 * to_s) in unix seconds (checked by the route: from < to, at most 366 days), now_s the wall
 * clock, by "account", "user" or "partition". Returns 0 and *out, a new object {"items": [...],
 * "total": {...}} the route takes, or a negative fp_err with err saying why (FP_EINVAL: 400;
 * others: 502, Slurm's accounting failed). usage NULL: the route answers 503 naming --slurm. It
 * may block (it runs sacct): the route runs on a worker thread. */
struct api_usage_source {
	int (*usage)(void *arg, int64_t from_s, int64_t to_s, int64_t now_s, const char *by,
		     json_t **out, char *err, size_t errlen);
	void *arg;
};

/* GET /v1/tenants/{name}'s "status" (docs/api.md "Tenants"): serve sets it with --slurm.
 * status(arg, account, quota) returns a new object {"gpuQuota", "gpusInUse", "runningJobs",
 * "gpuHoursThisMonth", ...} for the tenant's Slurm account and quota (-1: none), or
 * {"error": "..."} when Slurm could not be asked; it may block (squeue, sacct). NULL: the
 * document has no status. */
struct api_tenant_hooks {
	json_t *(*status)(void *arg, const char *account, long quota);
	void *arg;
};

typedef int (*api_ready_fn)(void *arg);

struct api_config {
	/* "host:port"; host an IPv4 literal, "[v6]" literal, "localhost", or "" / "*" for all
	 * addresses; port 0 picks a free port (see api_server_port). */
	const char *listen;
	struct store *store;    /* borrowed; required; must outlive the server */
	struct fp_clock *clock; /* borrowed; wall time for documents; NULL = system clock */
	struct fp_rng *rng;     /* borrowed; uids and event ids; NULL = server-owned, seeded */
	const char *data_dir;   /* where admin.token is written on first start; NULL = none */
	/* serve's secret.key (borrowed; core/secret.h): seals spec.bmc.password before a node is
	 * written; NULL = stored in plaintext (unit tests of other modules) */
	const struct secret_key *secret_key;
	size_t max_body;    /* bytes; 0 = 1 MiB. Larger bodies get 413 */
	api_ready_fn ready; /* NULL = always ready */
	void *ready_arg;
	struct api_node_view node_view; /* get_json NULL = read the store */
	struct api_agent_hooks agent;   /* agent callbacks; NULL hooks = 503 */
	struct api_health_hooks health; /* health reports, policies, breakers, budget status */
	struct api_report_limit report_limit; /* per-node limit on :report; {0} = defaults */
	struct api_usage_source usage;        /* GET /v1/usage; usage NULL = 503 */
	struct api_tenant_hooks tenants;      /* GET /v1/tenants/{name} status; NULL = none */
	/* Connection limits and request deadlines (conns.h; {0} = defaults: 1000 connections, 100
	 * per client, headers in 10 s, body in 60 s, 60 s idle). */
	struct api_conn_limits conn_limits;
	/* Poll threads; 0 = 1 (the FLEETPLANE_API_THREADS environment variable overrides it). */
	unsigned threads;
	/* TLS (issue 13): the certificate chain and private key as PEM text (borrowed for
	 * api_server_new, which hands copies to libmicrohttpd/GnuTLS); both NULL = plain http.
	 * api/tls.h makes and reads them. */
	const char *tls_cert_pem;
	const char *tls_key_pem;
};

/* Starts listening and serving on the daemon's own threads. Loads tokens from the store and
 * writes <data_dir>/admin.token on first start (auth.h api_auth_bootstrap). Returns the server
 * (free with api_server_free) or NULL with detail in err (bad listen address, port in use,
 * unreadable store, admin token file not writable). */
struct api_server *api_server_new(const struct api_config *cfg, char *err, size_t errlen);

/* Parses an API listen address "host:port" (port 0..65535; host empty or "*" = every IPv4
 * address, "[v6]" brackets stripped, else resolved with getaddrinfo(3), AI_PASSIVE) into *ss
 * and *sl; *v6 = 1 for an IPv6 address. `serve --check` and api_server_new share it. Returns 0
 * or FP_EINVAL with "listen ADDR: expected host:port" / "listen ADDR: bad port" / "listen ADDR:
 * <resolver error>" / "listen: host too long" in err. */
int api_listen_parse(const char *listen, struct sockaddr_storage *ss, socklen_t *sl, int *v6,
		     char *err, size_t errlen);

/* The TCP port the server listens on (useful with port 0). */
unsigned api_server_port(const struct api_server *srv);

/* Stops accepting, ends watch streams (within about 250 ms), stops the server's threads,
 * and frees. NULL is a no-op. The store is not closed. */
void api_server_free(struct api_server *srv);

/* The BMC index of api_nodes.c (one node per BMC: /bmc/<hash> keys written with each node) for
 * a store written before it existed: once per store (a /meta/bmc-index key records that it ran),
 * claims the BMC of every non-sim node in /nodes/ in name order, in transactions of at most 4096
 * ops. Two stored nodes on one BMC: the first (by name) is indexed, the other is logged at warn
 * with both names and counted in *shared (it stays; a PUT or DELETE of either resolves it).
 * *claimed: the nodes indexed. Call before the API serves. Returns 0 (also when it ran
 * before, with both counts 0), or a store error (FP_EIO ...). */
int api_bmc_index_backfill(struct store *s, size_t *claimed, size_t *shared);

#endif
