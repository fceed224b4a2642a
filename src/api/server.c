/* server.c - the API server glue (see server.h): libmicrohttpd set-up, the route table, the
 * per-request context (bounded body, principal), authentication and role checks, the worker
 * pool, request metrics and logging, and the handlers that are not a resource (/healthz,
 * /readyz, /metrics). Resources live in api_nodes.c, api_objects.c, api_tokens.c,
 * api_health.c; the arena, JSON and RFC 9457 problem replies and the helpers they share in
 * reply.c; watch streams in watch.c; Idempotency-Key in idem.c. server.c calls watch.c and
 * reply.c; neither calls back.
 *
 * Threading: MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME: one
 * poll(2) event loop (or cfg.threads of them, MHD_OPTION_THREAD_POOL_SIZE) serves every
 * connection, so a keep-alive request costs no thread switch (thread-per-connection paid a
 * poll() and ~4 context switches per request: 0.73-0.82x nginx, docs/benchmarks.md). Nothing
 * that may block runs on a poll thread:
 *  - routes flagged API_R_FAST (/healthz, /readyz, GET /v1/nodes/{name} from the controller's
 *    cache) run inline; a fast handler that would have to read the store sets r->offload;
 *  - every other request is suspended (MHD_suspend_connection) and run by a small pool of
 *    worker threads (api_pool below), which resume the connection; the access handler, called
 *    again, queues the reply;
 *  - watch streams never wait in the content reader: with nothing to send it parks the
 *    connection (suspended) with the watch hub (watch.c), whose thread reads the store and
 *    resumes the connection when there is something to send.
 * No epoll, no AUTO (0.9.75 loses edge-triggered events). Responses are queued on the 2nd
 * access-handler call so keep-alive works; only a Content-Length over the body limit is
 * answered on the 1st call (MHD then closes, which is what we want for an oversized upload). */
#include "api/server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "api/api_int.h"
#include "api/reply.h"
#include "api/ui.h"
#include "api/watch.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/memtrim.h"
#include "base/metrics.h"
#include "engine/objects.h"
#include "store/store.h"
#include "base/banned.h"

#define API_DEFAULT_MAX_BODY (1u << 20)
/* Worker pool width: API_POOL_MIN at start, one more whenever a request is queued while every
 * worker is busy, up to API_POOL_MAX. A worker blocks while its request's store write commits;
 * writes that wait together share one group commit (store_sqlite.c), so 64 clients need up to
 * 64 workers to share an fsync (64 clients, bench/writes.sh: 4 workers 0.32x etcd's puts, up to
 * 64 workers 0.40x; docs/benchmarks.md "Durable writes"). */
#define API_POOL_MIN 4
#define API_POOL_MAX 64
/* Per-connection MHD memory pool: request line, headers, read buffer. 0.9.75 zeroes the whole
 * pool before each keep-alive request (memset was 10 % of the GET hot path at 64 KiB); 16 KiB
 * still takes 8 KiB+ of headers (nginx's default is 8 KiB) and bodies stream through it. */
#define API_CONN_MEMORY (16 * 1024)
#define API_MAX_POLL_THREADS 16
#define API_BURST_BYTES (256u << 10) /* a reply or body this large counts as a burst */

static void h_healthz(struct api_req *r);
static void h_readyz(struct api_req *r);
static void h_metrics(struct api_req *r);

/* The query parameters of the native collection GETs (each handler's api_query names; list
 * paging: limit, continue; watch: watch, resourceVersion). */
static const char *const p_nodes[] = {"labelSelector", "phase",           "limit", "continue",
				      "watch",         "resourceVersion", NULL};
static const char *const p_ops[] = {"node",  "state",           "limit", "continue",
				    "watch", "resourceVersion", NULL};
static const char *const p_events[] = {"object",   "type",  "reason",          "since", "limit",
				       "continue", "watch", "resourceVersion", NULL};
static const char *const p_paged[] = {"limit", "continue", NULL};
static const char *const p_racks[] = {"site", "limit", "continue", NULL};
static const char *const p_hevents[] = {"node",     "code",  "limit",
					"continue", "watch", "resourceVersion",
					NULL};
static const char *const p_rmas[] = {"node", "limit", "continue", NULL};

/* The route table: every method + path the server answers, with the least role it needs.
 * (Routes without a params list leave it NULL: the warning about the omitted initializer is
 * silenced for the table only.) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct api_route routes[] = {
	{"GET", "/healthz", API_ROLE_NONE, API_R_FAST, h_healthz},
	{"GET", "/readyz", API_ROLE_NONE, API_R_FAST, h_readyz},
	{"GET", "/metrics", API_ROLE_VIEWER, 0, h_metrics},
	{"GET", "/v1/openapi.json", API_ROLE_VIEWER, API_R_V1, api_openapi},
	{"GET", "/v1/nodes", API_ROLE_VIEWER, API_R_V1, api_nodes_list, p_nodes},
	{"POST", "/v1/nodes", API_ROLE_OPERATOR, API_R_V1, api_nodes_create},
	{"POST", "/v1/nodes:drain", API_ROLE_OPERATOR, API_R_V1, api_nodes_bulk_drain},
	{"POST", "/v1/nodes:resume", API_ROLE_OPERATOR, API_R_V1, api_nodes_bulk_resume},
	{"POST", "/v1/nodes:power", API_ROLE_OPERATOR, API_R_V1, api_nodes_bulk_power},
	{"GET", "/v1/nodes/{name}", API_ROLE_VIEWER, API_R_V1 | API_R_AGENT_SELF | API_R_FAST,
	 api_node_get},
	{"PUT", "/v1/nodes/{name}", API_ROLE_OPERATOR, API_R_V1, api_node_put},
	{"DELETE", "/v1/nodes/{name}", API_ROLE_OPERATOR, API_R_V1, api_node_delete},
	{"POST", "/v1/nodes/{name}:drain", API_ROLE_OPERATOR, API_R_V1, api_node_drain},
	{"POST", "/v1/nodes/{name}:resume", API_ROLE_OPERATOR, API_R_V1, api_node_resume},
	{"POST", "/v1/nodes/{name}:retire", API_ROLE_OPERATOR, API_R_V1, api_node_retire},
	{"POST", "/v1/nodes/{name}:release", API_ROLE_ADMIN, API_R_V1, api_node_release},
	{"POST", "/v1/nodes/{name}:power", API_ROLE_OPERATOR, API_R_V1, api_node_power},
	{"POST", "/v1/nodes/{name}:booted", API_ROLE_OPERATOR, API_R_V1 | API_R_AGENT_SELF,
	 api_node_booted},
	{"POST", "/v1/nodes/{name}:validated", API_ROLE_OPERATOR, API_R_V1 | API_R_AGENT_SELF,
	 api_node_validated},
	{"POST", "/v1/nodes/{name}:report", API_ROLE_OPERATOR, API_R_V1 | API_R_AGENT_SELF,
	 api_node_report},
	{"POST", "/v1/nodes/{name}:remediated", API_ROLE_OPERATOR, API_R_V1 | API_R_AGENT_SELF,
	 api_node_remediated},
	{"POST", "/v1/nodes/{name}:jobend", API_ROLE_OPERATOR, API_R_V1 | API_R_AGENT_SELF,
	 api_node_jobend},
	{"GET", "/v1/operations", API_ROLE_VIEWER, API_R_V1, api_ops_list, p_ops},
	{"GET", "/v1/operations/{name}", API_ROLE_VIEWER, API_R_V1, api_op_get},
	{"POST", "/v1/operations/{name}:cancel", API_ROLE_OPERATOR, API_R_V1, api_op_cancel},
	{"GET", "/v1/events", API_ROLE_VIEWER, API_R_V1, api_events_list, p_events},
	{"GET", "/v1/events/{name}", API_ROLE_VIEWER, API_R_V1, api_event_get},
	{"GET", "/v1/sites", API_ROLE_VIEWER, API_R_V1, api_sites_list, p_paged},
	{"POST", "/v1/sites", API_ROLE_OPERATOR, API_R_V1, api_sites_create},
	{"GET", "/v1/sites/{name}", API_ROLE_VIEWER, API_R_V1, api_site_get},
	{"DELETE", "/v1/sites/{name}", API_ROLE_ADMIN, API_R_V1, api_site_delete},
	{"GET", "/v1/racks", API_ROLE_VIEWER, API_R_V1, api_racks_list, p_racks},
	{"POST", "/v1/racks", API_ROLE_OPERATOR, API_R_V1, api_racks_create},
	{"GET", "/v1/racks/{name}", API_ROLE_VIEWER, API_R_V1, api_rack_get},
	{"DELETE", "/v1/racks/{name}", API_ROLE_ADMIN, API_R_V1, api_rack_delete},
	{"GET", "/v1/healthevents", API_ROLE_VIEWER, API_R_V1, api_healthevents_list, p_hevents},
	{"GET", "/v1/healthevents/{name}", API_ROLE_VIEWER, API_R_V1, api_healthevent_get},
	{"GET", "/v1/policies", API_ROLE_VIEWER, API_R_V1, api_policies_list},
	{"GET", "/v1/policies/{name}", API_ROLE_VIEWER, API_R_V1, api_policy_get},
	{"PUT", "/v1/policies/{name}", API_ROLE_ADMIN, API_R_V1, api_policy_put},
	{"GET", "/v1/budgets", API_ROLE_VIEWER, API_R_V1, api_budgets_list},
	{"POST", "/v1/budgets", API_ROLE_OPERATOR, API_R_V1, api_budgets_create},
	{"GET", "/v1/budgets/{name}", API_ROLE_VIEWER, API_R_V1, api_budget_get},
	{"PUT", "/v1/budgets/{name}", API_ROLE_OPERATOR, API_R_V1, api_budget_put},
	{"DELETE", "/v1/budgets/{name}", API_ROLE_OPERATOR, API_R_V1, api_budget_delete},
	{"GET", "/v1/breakers", API_ROLE_VIEWER, API_R_V1, api_breakers_list},
	{"POST", "/v1/breakers/{name}:reset", API_ROLE_OPERATOR, API_R_V1, api_breaker_reset},
	{"GET", "/v1/rmas", API_ROLE_VIEWER, API_R_V1, api_rmas_list, p_rmas},
	{"GET", "/v1/rmas/{name}", API_ROLE_VIEWER, API_R_V1, api_rma_get},
	{"GET", "/v1/usage", API_ROLE_VIEWER, API_R_V1, api_usage_get},
	{"GET", "/v1/tenants", API_ROLE_VIEWER, API_R_V1, api_tenants_list},
	{"GET", "/v1/tenants/{name}", API_ROLE_VIEWER, API_R_V1, api_tenant_get},
	{"PUT", "/v1/tenants/{name}", API_ROLE_OPERATOR, API_R_V1, api_tenant_put},
	{"DELETE", "/v1/tenants/{name}", API_ROLE_OPERATOR, API_R_V1, api_tenant_delete},
	/* kube (issue 13): the Kubernetes API (kube.c); /version answers the kubectl dispatcher,
	 * which asks before it has a token */
	{"GET", "/version", API_ROLE_NONE, API_R_KUBE, api_kube_version},
	{"GET", "/api", API_ROLE_VIEWER, API_R_KUBE, api_kube_api},
	{"GET", "/apis", API_ROLE_VIEWER, API_R_KUBE, api_kube_apis},
	{"GET", "/apis/fleetplane.io", API_ROLE_VIEWER, API_R_KUBE, api_kube_group},
	{"GET", "/apis/fleetplane.io/v1", API_ROLE_VIEWER, API_R_KUBE, api_kube_resources},
	{"GET", "/apis/fleetplane.io/v1/{name}", API_ROLE_VIEWER, API_R_V1 | API_R_KUBE,
	 api_kube_collection},
	{"POST", "/apis/fleetplane.io/v1/{name}", API_ROLE_OPERATOR, API_R_V1 | API_R_KUBE,
	 api_kube_create},
	{"GET", "/apis/fleetplane.io/v1/{name}/{name}", API_ROLE_VIEWER, API_R_V1 | API_R_KUBE,
	 api_kube_get},
	{"PUT", "/apis/fleetplane.io/v1/{name}/{name}", API_ROLE_OPERATOR, API_R_V1 | API_R_KUBE,
	 api_kube_put},
	{"PATCH", "/apis/fleetplane.io/v1/{name}/{name}", API_ROLE_OPERATOR, API_R_V1 | API_R_KUBE,
	 api_kube_patch},
	{"DELETE", "/apis/fleetplane.io/v1/{name}/{name}", API_ROLE_OPERATOR, API_R_V1 | API_R_KUBE,
	 api_kube_delete},
	{"GET", "/apis/fleetplane.io/v1/{name}/{name}/{name}", API_ROLE_VIEWER,
	 API_R_V1 | API_R_KUBE, api_kube_subresource},
	{"POST", "/apis/fleetplane.io/v1/{name}/{name}/{name}", API_ROLE_OPERATOR,
	 API_R_V1 | API_R_KUBE, api_kube_action},
	{"GET", "/openapi/v3", API_ROLE_VIEWER, API_R_KUBE, api_kube_openapi},
	{"GET", "/openapi/v3/apis/fleetplane.io/v1", API_ROLE_VIEWER, API_R_KUBE,
	 api_kube_openapi_group},
	{"GET", "/api/v1/events", API_ROLE_VIEWER, API_R_V1 | API_R_KUBE, api_kube_events},
	{"GET", "/v1/tokens", API_ROLE_ADMIN, API_R_V1, api_tokens_list},
	{"POST", "/v1/tokens", API_ROLE_ADMIN, API_R_V1, api_tokens_create},
	{"GET", "/v1/tokens/{name}", API_ROLE_ADMIN, API_R_V1, api_token_get},
	{"DELETE", "/v1/tokens/{name}", API_ROLE_ADMIN, API_R_V1, api_token_delete},
	/* web (issue 15): the fleet page's static assets (ui.c); its data come from the API with
	 * the user's token */
	{"GET", "/", API_ROLE_NONE, API_R_FAST, api_ui_root},
	{"GET", "/ui", API_ROLE_NONE, API_R_FAST, api_ui_slash},
	{"GET", "/ui/", API_ROLE_NONE, API_R_FAST, api_ui_asset},
	{"GET", "/ui/{name}", API_ROLE_NONE, API_R_FAST, api_ui_asset},
};
#pragma GCC diagnostic pop
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---------------------------------------------------------------- simple handlers */

static void h_healthz(struct api_req *r)
{
	api_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static int is_ready(struct api_server *srv)
{
	return !srv->cfg.ready || srv->cfg.ready(srv->cfg.ready_arg);
}

/* Ready: the fleet says so, and the store took the last write it was given, or failed it more
 * than 10 s ago (so an idle serve is ready again once space is back; a write then tells). The
 * API keeps taking requests meanwhile: a write is how the store shows it works again. */
static void h_readyz(struct api_req *r)
{
	int wrc = store_write_failing(r->srv->cfg.store, 10000);
	if (is_ready(r->srv) && wrc == 0)
		api_reply_json(r, 200, json_pack("{s:s}", "status", "ready"));
	else if (wrc != 0)
		api_reply_json(r, 503,
			       json_pack("{s:s,s:s}", "status", "not ready", "reason",
					 wrc == FP_ENOSPC ? "store out of space"
							  : "store writes fail"));
	else
		api_reply_json(r, 503, json_pack("{s:s}", "status", "not ready"));
}

static void h_metrics(struct api_req *r)
{
	struct buf b;
	buf_init(&b, 0);
	metrics_render(&b);
	api_reply_raw(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data ? b.data : "",
		      b.len);
	buf_release(&b);
}

/* ---------------------------------------------------------------- routing */

#define API_MAX_PARAM_LEN 253 /* the longest path parameter a handler is given */

/* Matches path against pattern; "{x}" captures a non-empty run without '/' or ':' (of any
 * length: route() refuses one longer than API_MAX_PARAM_LEN with a 400 naming it). */
static int route_match(struct api_req *r, const char *pat, const char *path, int capture)
{
	size_t np = 0;
	while (*pat) {
		if (*pat == '{') {
			pat = strchr(pat, '}');
			BUG_ON(!pat);
			pat++;
			size_t n = strcspn(path, "/:");
			if (n == 0 || np >= API_MAX_PARAMS)
				return 0;
			if (capture)
				r->params[np] = api_own(r, xstrndup(path, n));
			np++;
			path += n;
			continue;
		}
		if (*pat != *path)
			return 0;
		pat++;
		path++;
	}
	return *path == 0;
}

static const struct api_route *route_find(struct api_req *r, char *allow, size_t allowlen,
					  int *path_known)
{
	*path_known = 0;
	allow[0] = 0;
	for (size_t i = 0; i < NROUTES; i++) {
		if (!route_match(r, routes[i].pattern, r->path, 0))
			continue;
		*path_known = 1;
		if (strcmp(routes[i].method, r->method) == 0) {
			route_match(r, routes[i].pattern, r->path, 1);
			return &routes[i];
		}
		size_t l = strlen(allow);
		snprintf(allow + l, allowlen - l, "%s%s", l ? ", " : "", routes[i].method);
	}
	return NULL;
}

/* Bearer token from Authorization (RFC 6750 section 2.1; scheme case-insensitive per RFC 9110
 * section 11.1). Returns 0 and fills r->who, FP_EAUTH, or (fast only) FP_EAGAIN when the
 * answer needs the store. */
static int authenticate(struct api_req *r)
{
	const char *h = api_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return FP_EAUTH;
	h += 7;
	while (*h == ' ')
		h++;
	if (r->fast)
		return api_auth_check_fast(r->srv->auth, h, &r->who);
	return api_auth_check(r->srv->auth, h, &r->who);
}

/* The answer for a method and path no route takes: 405 with Allow when the path takes other
 * methods, else 404. Reached only with a valid token (no_route needs one): without, the answer
 * is 401 whatever the path, so that no one learns the routes without a token. */
static void h_no_route(struct api_req *r)
{
	/* The path (a client's string) is echoed up to 64 characters, then "...". */
	const char *more = strlen(r->path) > 64 ? "..." : "";
	if (r->no_route_known) {
		api_problem(r, 405, "method %.16s is not allowed on %.64s%s; allowed: %s",
			    r->method, r->path, more, r->no_route_allow);
		api_add_header(r, MHD_HTTP_HEADER_ALLOW, r->no_route_allow);
	} else {
		api_problem(r, 404, "no route for %.16s %.64s%s", r->method, r->path, more);
	}
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct api_route no_route = {"", "", API_ROLE_VIEWER, API_R_FAST, h_no_route};
#pragma GCC diagnostic pop

/* Finds r's route (poll thread: cheap): a method and path no route takes get no_route. Answers
 * 413 and 400 (a path parameter too long) itself and returns NULL. */
static const struct api_route *route(struct api_req *r)
{
	char allow[64];
	int known = 0;
	const struct api_route *rt = route_find(r, allow, sizeof(allow), &known);
	if (!rt) {
		r->no_route_known = known;
		r->no_route_allow = api_own(r, xstrdup(allow));
		rt = &no_route;
	}
	if (r->too_big) {
		api_problem(r, 413, "request body larger than %zu bytes", r->srv->cfg.max_body);
		return NULL;
	}
	/* a path parameter longer than any name: 400 naming it (the pattern's "{name}") */
	const char *p = rt->pattern;
	for (size_t i = 0; i < API_MAX_PARAMS && (p = strchr(p, '{')) != NULL; i++) {
		const char *e = strchr(p, '}');
		BUG_ON(!e);
		if (r->params[i] && strlen(r->params[i]) > API_MAX_PARAM_LEN) {
			api_problem_ext(r, 400,
					json_pack("{s:s#}", "parameter", p + 1, (int)(e - p - 1)),
					"%.*s: longer than %d characters", (int)(e - p - 1), p + 1,
					API_MAX_PARAM_LEN);
			return NULL;
		}
		p = e + 1;
	}
	return rt;
}

void api_report_refused(struct api_req *r, const char *reason)
{
	const char *labels[1] = {reason};
	metric_add(r->srv->m_reports_refused, labels, 1);
}

/* Counts a refusal in dispatch when r is an agent report. */
static void refused(struct api_req *r, const char *reason)
{
	if (r->route->fn == api_node_report)
		api_report_refused(r, reason);
}

/* An agent token is bound to its node's uid (auth.h; issue 16 item 12). Returns 0 when node
 * r->params[0] (the token's node: checked before) has the token's nodeUid now; 1 when r was
 * answered 403 (a token stored without nodeUid, the node gone, or a node of that name made
 * since); -1 with r->offload set when the answer needs the store and r runs on a poll thread.
 * A match in the node view (the controller's cache) is trusted, anything else is read from the
 * store: a cache a moment behind a re-creation then refuses nothing it should not. */
static int agent_bound(struct api_req *r)
{
	const char *node = r->params[0], *want = r->who.node_uid;
	if (!want[0]) {
		refused(r, "legacy_token");
		api_problem_ext(r, 403, json_pack("{s:s}", "node", node),
				"token %s names node %s by name only (it was made by an older "
				"fleetplane, before tokens recorded the node's uid); make a new "
				"one: fleetplane token create --role agent --node %s",
				r->who.name, node, node);
		return 1;
	}
	const struct api_node_view *v = &r->srv->cfg.node_view;
	char uid[API_UID_MAX];
	if (v->get_uid && v->get_uid(v->arg, node, uid, sizeof(uid)) == 0 && strcmp(uid, want) == 0)
		return 0;
	if (r->fast) {
		r->offload = 1;
		return -1;
	}
	json_t *doc = NULL;
	int64_t mod = 0;
	int rc = api_get_doc(r, api_own(r, objects_key_node_dup(node)), &doc, &mod);
	if (rc < 0 && rc != FP_ENOTFOUND) {
		api_problem_rc(r, rc, "cannot read the node");
		return 1;
	}
	api_own_json(r, doc);
	const char *cur = rc == 0 ? jsonx_str(doc, "metadata.uid") : NULL;
	if (cur && strcmp(cur, want) == 0)
		return 0;
	refused(r, "stale_token");
	if (!cur)
		api_problem_ext(r, 403, json_pack("{s:s,s:s}", "node", node, "nodeUid", want),
				"token %s was made for node %s (uid %s), which no longer exists",
				r->who.name, node, want);
	else
		api_problem_ext(r, 403,
				json_pack("{s:s,s:s,s:s}", "node", node, "nodeUid", want,
					  "currentUid", cur),
				"token %s was made for an earlier node named %s (uid %s); node %s "
				"now is uid %s: make a new token for it",
				r->who.name, node, want, node, cur);
	return 1;
}

/* Authentication and role check of r for rt: 0 when r may go on; -1 after answering 401 or
 * 403; FP_EAGAIN (r->fast only) when the token check needs the store. */
static int check_access(struct api_req *r, const struct api_route *rt)
{
	if (rt->min_role == API_ROLE_NONE)
		return 0;
	int rc = authenticate(r);
	if (rc == FP_EAGAIN)
		return FP_EAGAIN;
	if (rc < 0) {
		refused(r, "unauthenticated");
		api_problem(r, 401, "a valid bearer token is required");
		api_add_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"fleetplane\"");
		return -1;
	}
	if (rt == &no_route)
		return 0; /* any valid token may learn that a path is not one */
	int ok;
	if (r->who.role == API_ROLE_AGENT)
		ok = (rt->flags & API_R_AGENT_SELF) && r->params[0] &&
		     strcmp(r->params[0], r->who.node) == 0;
	else
		ok = r->who.role >= rt->min_role;
	if (!ok) {
		refused(r, "forbidden");
		api_problem(r, 403, "token %s has role %s; %s %s needs %s%s", r->who.name,
			    api_role_name(r->who.role), r->method, rt->pattern,
			    api_role_name(rt->min_role),
			    r->who.role == API_ROLE_AGENT
				    ? " (agent tokens reach only their own node)"
				    : "");
		return -1;
	}
	return 0;
}

/* Authentication, role and readiness checks, then the handler of r->route. */
static void dispatch(struct api_req *r)
{
	const struct api_route *rt = r->route;
	int rc = check_access(r, rt);
	if (rc == FP_EAGAIN) {
		r->offload = 1;
		return;
	}
	if (rc < 0)
		return;
	if ((rt->flags & API_R_V1) && !is_ready(r->srv)) {
		api_problem(r, 503, "fleetplane is starting: store or caches not ready");
		api_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
		return;
	}
	/* after the readiness check: the node view is the controller's cache */
	if (rt->min_role != API_ROLE_NONE && r->who.role == API_ROLE_AGENT && agent_bound(r) != 0)
		return;
	if (r->body.len && strcmp(r->method, "POST") != 0 && strcmp(r->method, "PUT") != 0 &&
	    !((rt->flags & API_R_KUBE) &&
	      (strcmp(r->method, "PATCH") == 0 || strcmp(r->method, "DELETE") == 0))) {
		api_problem(r, 400, "%s requests take no body", r->method);
		return;
	}
	if (rt->params && api_params_check(r, rt->params) < 0)
		return;
	rt->fn(r);
}

/* ---------------------------------------------------------------- worker pool */

/* Requests that may block (store reads and writes, lists, /metrics) run here, so a poll thread
 * never waits for SQLite: the connection is suspended while a worker runs dispatch(), and the
 * worker resumes it; the access handler, called again, queues the reply. Workers are started
 * as the work needs them (API_POOL_MIN..API_POOL_MAX) and live until pool_free. */
struct api_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct api_req *head, *tail;
	int closing;
	size_t nth;     /* workers started */
	size_t idle;    /* workers waiting for a job */
	size_t nqueued; /* jobs queued, not yet taken */
	struct metric_family *m_workers;
	pthread_t th[API_POOL_MAX];
};

static void *pool_main(void *arg)
{
	struct api_pool *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		p->idle++;
		while (!p->head && !p->closing)
			pthread_cond_wait(&p->cv, &p->mu);
		p->idle--;
		struct api_req *r = p->head;
		if (r) {
			p->head = r->next_job;
			p->nqueued--;
			if (!p->head)
				p->tail = NULL;
			r->next_job = NULL;
		}
		pthread_mutex_unlock(&p->mu);
		if (!r)
			return NULL; /* closing and drained */
		if (r->preauth)
			check_access(r, r->route); /* answers 401/403 into r, or leaves it */
		else
			dispatch(r);
		MHD_resume_connection(r->conn);
	}
}

/* Counts r in srv->replies_owed once (completed_cb takes it out): from the moment a worker
 * takes it or its reply is queued, its client waits for an answer api_server_free lets out. */
static void owe_reply(struct api_req *r)
{
	if (!r->owed) {
		r->owed = 1;
		atomic_fetch_add(&r->srv->replies_owed, 1);
	}
}

/* Suspends r's connection and queues it for a worker; r->called becomes state (3: the
 * handler runs there, 4: the access check of an Expect request). Returns 0 when the pool is
 * closing (the caller answers on the poll thread). */
static int pool_submit(struct api_pool *p, struct api_req *r, int state)
{
	pthread_mutex_lock(&p->mu);
	if (p->closing) {
		pthread_mutex_unlock(&p->mu);
		return 0;
	}
	r->called = state;
	owe_reply(r);
	/* Suspended before any worker can see it: it resumes only a suspended connection. */
	MHD_suspend_connection(r->conn);
	if (p->tail)
		p->tail->next_job = r;
	else
		p->head = r;
	p->tail = r;
	p->nqueued++;
	/* more jobs than idle workers: one more (a failed start leaves the job to those there are) */
	if (p->nqueued > p->idle && p->nth < API_POOL_MAX &&
	    pthread_create(&p->th[p->nth], NULL, pool_main, p) == 0)
		metric_set(p->m_workers, NULL, (double)++p->nth);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 1;
}

static struct api_pool *pool_new(void)
{
	struct api_pool *p = xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (; p->nth < API_POOL_MIN; p->nth++)
		if (pthread_create(&p->th[p->nth], NULL, pool_main, p) != 0)
			break;
	p->m_workers = metrics_register(METRIC_GAUGE, "fleetplane_http_workers",
					"API worker threads started (they run the requests that "
					"read or write the store; 4 at start, up to 64).",
					"", NULL, 0);
	metric_set(p->m_workers, NULL, (double)p->nth);
	if (!p->nth) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	return p;
}

/* Refuses new work, runs what is queued, joins the workers. */
static void pool_free(struct api_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->closing = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ---------------------------------------------------------------- MHD callbacks */

static enum MHD_Result queue_reply(struct api_req *r)
{
	owe_reply(r);
	struct MHD_Response *resp = r->stream;
	r->streamed = resp != NULL;
	if (!resp) {
		if (!r->status)
			api_problem(r, 500, "handler produced no response");
		/* The body is handed to MHD, which free()s it: no copy. */
		char *data;
		size_t len;
		if (r->take) {
			data = r->take;
			len = r->take_len;
			r->take = NULL;
		} else {
			data = buf_detach(&r->out, &len);
		}
		r->reply_len = len;
		resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
		if (!resp) {
			free(data);
			return MHD_NO;
		}
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->ctype);
	}
	/* no-store unless the handler chose a Cache-Control (the fleet page's assets, ui.c) */
	int own_cc = 0;
	for (size_t i = 0; i < r->nhdrs; i++)
		own_cc |= strcmp(r->hdrs[i].key, MHD_HTTP_HEADER_CACHE_CONTROL) == 0;
	if (!own_cc)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	for (size_t i = 0; i < r->nhdrs; i++)
		MHD_add_response_header(resp, r->hdrs[i].key, r->hdrs[i].value);
	enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	r->stream = NULL;
	api_reply_reset(r);
	return ret;
}

/* ---------------------------------------------------------------- request framing */

struct hdr_count {
	unsigned content_length, content_length_values, transfer_encoding, idem_key, host;
	unsigned if_match;
	const char *first_cl;
};

static enum MHD_Result hdr_count_cb(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct hdr_count *c = cls;
	(void)kind;
	if (!key)
		return MHD_YES;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
		if (!c->content_length++)
			c->first_cl = value;
		else if (!value || !c->first_cl || strcmp(value, c->first_cl) != 0)
			c->content_length_values++;
	} else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
		c->transfer_encoding++;
	} else if (strcasecmp(key, "Idempotency-Key") == 0) {
		c->idem_key++;
	} else if (strcasecmp(key, MHD_HTTP_HEADER_IF_MATCH) == 0) {
		c->if_match++;
	} else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
		c->host++;
	}
	return MHD_YES;
}

/* The framing checks libmicrohttpd 0.9.75 leaves to the application, on the headers of r
 * before any body is read: Content-Length headers that differ (RFC 9112 section 6.3: the
 * framing is unknown; behind a proxy that reads the other one it is request smuggling), both
 * Content-Length and Transfer-Encoding (section 6.1, the same), a request with no Host or
 * several (section 3.2: HTTP/1.1 needs exactly one), more than one Idempotency-Key (which
 * one would the key be?) and more than one If-Match (several field lines are one list, RFC 9110
 * section 5.3, and a write compares one resourceVersion: the first must not win silently).
 * Returns 0, or -1 after answering 400. */
static int framing_check(struct api_req *r, const char *version)
{
	struct hdr_count c = {0};
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, hdr_count_cb, &c);
	if (c.content_length_values) {
		api_problem(r, 400,
			    "Content-Length given %u times with different values: the length "
			    "of the body is unknown (RFC 9112 section 6.3)",
			    c.content_length);
		return -1;
	}
	if (c.content_length && c.transfer_encoding) {
		api_problem(r, 400,
			    "both Content-Length and Transfer-Encoding: send one of them "
			    "(RFC 9112 section 6.1)");
		return -1;
	}
	if (c.host > 1 || (c.host == 0 && version && strcmp(version, "HTTP/1.1") == 0)) {
		api_problem(r, 400,
			    "%s: an HTTP/1.1 request has exactly one Host header (RFC 9112 "
			    "section 3.2)",
			    c.host ? "several Host headers" : "no Host header");
		return -1;
	}
	if (c.idem_key > 1) {
		api_problem(r, 400, "Idempotency-Key given %u times: a request has one key",
			    c.idem_key);
		return -1;
	}
	if (c.if_match > 1) {
		api_problem_ext(r, 400, json_pack("{s:s}", "header", "If-Match"),
				"If-Match given %u times: send one resourceVersion entity-tag "
				"such as \"12\"",
				c.if_match);
		return -1;
	}
	return 0;
}

/* Expect (RFC 9110 section 10.1.1): "100-continue" is answered with 100 Continue only once r
 * may make its request (route known and access checked), so a client without a valid token is
 * told 401 before it sends a body; any other expectation is 417. Returns 1 when r may go on (a
 * 100 Continue follows), 0 when r was queued for a worker to check the token (state 4), -1
 * after answering. */
static int expect_check(struct api_req *r, const char *expect)
{
	if (strcasecmp(expect, "100-continue") != 0) {
		api_problem(r, 417, "Expect %.32s: only 100-continue is understood", expect);
		return -1;
	}
	r->route = route(r);
	if (!r->route)
		return -1;
	r->fast = 1;
	int rc = check_access(r, r->route);
	r->fast = 0;
	if (rc == 0)
		return 1;
	if (rc != FP_EAGAIN)
		return -1;
	r->preauth = 1;
	if (r->srv->pool && pool_submit(r->srv->pool, r, 4))
		return 0;
	r->preauth = 0;
	api_problem(r, 503, "fleetplane is stopping");
	return -1;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct api_server *srv = cls;
	struct api_req *r = *con_cls;
	if (!r) {
		r = xcalloc(1, sizeof(*r));
		r->srv = srv;
		r->conn = conn;
		r->method = method;
		r->path = xstrdup(url);
		r->kube = api_kube_path(r->path);
		r->kube_status = r->kube ? api_kube_status : NULL;
		r->start_ns = mono_ns();
		buf_init(&r->body, srv->cfg.max_body);
		buf_init(&r->out, 0);
		*con_cls = r;
		if (framing_check(r, version) < 0) {
			api_conns_phase(srv->conns, conn, API_CONN_BUSY);
			r->called = 2;
			return queue_reply(r);
		}
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl) {
			char *end = NULL;
			unsigned long long v = strtoull(cl, &end, 10);
			if (end != cl && !*end && v > srv->cfg.max_body) {
				/* Answered now without reading the body: MHD closes the
				 * connection after it (recipe: "Bounded request body"). */
				api_problem(r, 413, "request body of %llu bytes is larger than %zu",
					    v, srv->cfg.max_body);
				api_conns_phase(srv->conns, conn, API_CONN_BUSY);
				r->called = 2;
				return queue_reply(r);
			}
		}
		const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								 MHD_HTTP_HEADER_EXPECT);
		if (expect) {
			int ok = expect_check(r, expect);
			if (ok == 0)
				return MHD_YES; /* a worker checks the token (state 4) */
			if (ok < 0) {
				api_conns_phase(srv->conns, conn, API_CONN_BUSY);
				r->called = 2;
				return queue_reply(r);
			}
		}
		r->called = 1;
		/* the headers are in: the body, if any, has body_timeout_s from now */
		api_conns_phase(srv->conns, conn,
				(cl && strcmp(cl, "0") != 0) ||
						MHD_lookup_connection_value(
							conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_TRANSFER_ENCODING)
					? API_CONN_BODY
					: API_CONN_BUSY);
		return MHD_YES;
	}
	if (r->called == 4) {
		/* Resumed by the worker that checked an Expect request's token: libmicrohttpd calls
		 * again as for the headers; with no answer from us it sends 100 Continue. */
		r->preauth = 0;
		if (r->status) {
			api_conns_phase(srv->conns, conn, API_CONN_BUSY);
			r->called = 2;
			return queue_reply(r);
		}
		r->called = 1;
		api_conns_phase(srv->conns, conn, API_CONN_BODY);
		return MHD_YES;
	}
	if (r->called == 3) {
		/* Resumed by the worker that ran the handler. */
		r->called = 2;
		return queue_reply(r);
	}
	if (r->called == 2)
		return MHD_YES;
	if (*upload_data_size) {
		if (!r->too_big && buf_append(&r->body, upload_data, *upload_data_size) < 0) {
			r->too_big = 1;
			buf_release(&r->body);
			buf_init(&r->body, 0);
		}
		*upload_data_size = 0; /* consumed (or discarded once too big) */
		return MHD_YES;
	}
	r->called = 2;
	api_conns_phase(srv->conns, conn, API_CONN_BUSY);
	r->route = route(r);
	if (!r->route)
		return queue_reply(r);
	if (r->route->flags & API_R_FAST) {
		r->fast = 1;
		dispatch(r);
		r->fast = 0;
		if (!r->offload)
			return queue_reply(r);
		r->offload = 0;
		r->status = 0;
		api_reply_reset(r);
	}
	if (srv->pool && pool_submit(srv->pool, r, 3))
		return MHD_YES;
	api_problem(r, 503, "fleetplane is stopping");
	return queue_reply(r);
}

static const char *method_label(const char *m)
{
	static const char *const known[] = {"GET",  "POST",  "PUT",     "DELETE",
					    "HEAD", "PATCH", "OPTIONS", NULL};
	for (const char *const *k = known; *k; k++)
		if (m && strcmp(m, *k) == 0)
			return *k;
	return "other";
}

static void completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct api_server *srv = cls;
	struct api_req *r = *con_cls;
	if (!r)
		return;
	*con_cls = NULL;
	if (r->owed)
		atomic_fetch_sub(&srv->replies_owed, 1);
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		api_conns_phase(srv->conns, conn, API_CONN_IDLE);
	double dur = (double)(mono_ns() - r->start_ns) / 1e9;
	char code[8];
	snprintf(code, sizeof(code), "%d", r->status ? r->status : 0);
	const char *labels[2] = {method_label(r->method), code};
	metric_add(srv->m_requests, labels, 1);
	metric_observe(srv->m_duration, labels, dur);
	if (!r->streamed)
		metric_observe(srv->m_unary, labels, dur);
	/* Never log headers, tokens or bodies: method, path, status, principal, duration. */
	log_debug("http request method=%s path=%s status=%d principal=%s dur_ms=%.3f term=%d",
		  labels[0], r->path, r->status, r->who.name[0] ? r->who.name : "-", dur * 1e3,
		  (int)toe);
	/* A large reply or body was a burst of transient JSON (a list of thousands of nodes is
	 * parsed, decoded and re-encoded: a few times its size): the connection guard's thread
	 * gives the freed heap back (memtrim.h). */
	if (r->reply_len + r->body.len >= API_BURST_BYTES)
		memtrim_note(4 * (r->reply_len + r->body.len));
	if (r->stream)
		MHD_destroy_response(r->stream);
	api_reply_reset(r);
	buf_release(&r->out);
	if (r->body.data)
		sodium_memzero(r->body.data, r->body.len);
	buf_release(&r->body);
	for (size_t i = r->nowned; i-- > 0;)
		r->owned[i].fn(r->owned[i].p);
	free(r->owned);
	free(r->path);
	free(r->idem_key);
	free(r->idem_fp);
	sodium_memzero(&r->who, sizeof(r->who));
	free(r);
}

/* libmicrohttpd's own messages. What one client's connection did (closed, reset, refused,
 * malformed: "Connection socket is closed", "Server reached connection limit", "Error processing
 * request") is the connection guard's to report, once per client per interval (conns.c): those
 * go to debug. The rest (the server's own trouble) are warnings. Either kind is limited to
 * MHD_LOG_BURST lines per MHD_LOG_WINDOW_S seconds and then one line counting what was left
 * out, so that no client can grow the log by opening and dropping connections. */
#define MHD_LOG_BURST 10
#define MHD_LOG_WINDOW_S 10
struct mhd_log_limit {
	int64_t window_ns;
	unsigned lines, left_out;
};
static pthread_mutex_t mhd_log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mhd_log_limit mhd_log_conn, mhd_log_server;

/* 1 when a line may be logged now; *left_out = lines left out in the window that just ended. */
static int mhd_log_take(struct mhd_log_limit *l, int64_t now, unsigned *left_out)
{
	pthread_mutex_lock(&mhd_log_mu);
	*left_out = 0;
	if (!l->window_ns || now - l->window_ns >= MHD_LOG_WINDOW_S * 1000000000LL) {
		*left_out = l->left_out;
		l->window_ns = now;
		l->lines = 0;
		l->left_out = 0;
	}
	int say = l->lines < MHD_LOG_BURST;
	if (say)
		l->lines++;
	else
		l->left_out++;
	pthread_mutex_unlock(&mhd_log_mu);
	return say;
}

__attribute__((format(printf, 2, 0))) static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = 0;
	int conn = strcasestr(msg, "connection") || strstr(msg, "Error processing request");
	unsigned left_out;
	int say = mhd_log_take(conn ? &mhd_log_conn : &mhd_log_server, mono_ns(), &left_out);
	if (conn) {
		if (left_out)
			log_debug("http connection errors left out of the log count=%u window_s=%d",
				  left_out, MHD_LOG_WINDOW_S);
		if (say)
			log_debug("http connection error err=\"%s\"", msg);
		return;
	}
	if (left_out)
		log_warn("http server errors left out of the log count=%u window_s=%d", left_out,
			 MHD_LOG_WINDOW_S);
	if (say)
		log_warn("http server error err=\"%s\"", msg);
}

/* ---------------------------------------------------------------- connection guard hooks */

static enum MHD_Result accept_cb(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct api_server *srv = cls;
	return api_conns_admit(srv->conns, addr, addrlen) ? MHD_YES : MHD_NO;
}

static void notify_conn_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
			   enum MHD_ConnectionNotificationCode code)
{
	struct api_server *srv = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		api_conns_started(srv->conns, conn, socket_context);
	else
		api_conns_closed(srv->conns, socket_context);
}

/* Called when a request line has been read (before its headers): a keep-alive request's
 * header deadline starts here. The request context stays NULL: access_cb makes it. */
static void *uri_log_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct api_server *srv = cls;
	(void)uri;
	api_conns_phase(srv->conns, conn, API_CONN_HEADERS);
	return NULL;
}

/* ---------------------------------------------------------------- lifecycle */

/* Percent-decoding of the path and query (RFC 3986 section 2.1), in place, except that "%00"
 * is left as it is: a decoded NUL would end the C string early, so "/v1/nodes/x:drain%00zz"
 * would act on x:drain. Left encoded, such a path matches no route and no name is valid. */
static size_t unescape_cb(void *cls, struct MHD_Connection *c, char *s)
{
	char *w = s;
	for (const char *r = s; *r; r++) {
		if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2]) &&
		    !(r[1] == '0' && r[2] == '0')) {
			char hex[3] = {r[1], r[2], 0};
			*w++ = (char)strtol(hex, NULL, 16);
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
	return (size_t)(w - s);
}

int api_listen_parse(const char *listen, struct sockaddr_storage *ss, socklen_t *sl, int *v6,
		     char *err, size_t errlen)
{
	const char *colon = strrchr(listen ? listen : "", ':');
	if (!listen || !colon)
		return fp_errf(FP_EINVAL, err, errlen, "listen %s: expected host:port",
			       listen ? listen : "(null)");
	char host[256];
	size_t hl = (size_t)(colon - listen);
	if (hl >= sizeof(host))
		return fp_errf(FP_EINVAL, err, errlen, "listen: host too long");
	memcpy(host, listen, hl);
	host[hl] = 0;
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	char *end = NULL;
	errno = 0;
	long port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port < 0 || port > 65535)
		return fp_errf(FP_EINVAL, err, errlen, "listen %s: bad port", listen);
	memset(ss, 0, sizeof(*ss));
	*v6 = 0;
	if (!host[0] || strcmp(host, "*") == 0) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		sin->sin_port = htons((uint16_t)port);
		*sl = sizeof(*sin);
		return 0;
	}
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	int gai = getaddrinfo(host, NULL, &hints, &res);
	if (gai != 0 || !res)
		return fp_errf(FP_EINVAL, err, errlen, "listen %s: %s", listen, gai_strerror(gai));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sl = res->ai_addrlen;
	freeaddrinfo(res);
	if (ss->ss_family == AF_INET6) {
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		*v6 = 1;
	} else {
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	}
	return 0;
}

struct api_server *api_server_new(const struct api_config *cfg, char *err, size_t errlen)
{
	if (!cfg || !cfg->store) {
		fp_errf(FP_EINVAL, err, errlen, "api: a store is required");
		return NULL;
	}
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	int v6 = 0;
	if (api_listen_parse(cfg->listen, &ss, &sl, &v6, err, errlen) < 0)
		return NULL;
	struct api_server *srv = xcalloc(1, sizeof(*srv));
	srv->cfg = *cfg;
	if (!srv->cfg.max_body)
		srv->cfg.max_body = API_DEFAULT_MAX_BODY;
	api_conns_resolve(&cfg->conn_limits, &srv->cfg.conn_limits);
	unsigned mhd_limit = api_conns_fit_fds(api_conns_mhd_limit(&srv->cfg.conn_limits),
					       &srv->cfg.conn_limits.max_connections);
	srv->conns = api_conns_new(&srv->cfg.conn_limits);
	if (!srv->conns) {
		fp_errf(FP_EIO, err, errlen, "api: cannot start the connection guard's thread");
		goto fail;
	}
	fp_rng_init(&srv->own_rng, 0);
	srv->rng = cfg->rng ? cfg->rng : &srv->own_rng;
	atomic_init(&srv->event_seq, (unsigned)(fp_rng_u64(srv->rng) & 0x7fffffffu));
	atomic_init(&srv->replies_owed, 0);
	srv->m_requests = metrics_register(METRIC_COUNTER, "fleetplane_http_requests_total",
					   "HTTP requests answered by the API, by method and "
					   "status code.",
					   "method,code", NULL, 0);
	srv->m_duration =
		metrics_register(METRIC_HISTOGRAM, "fleetplane_http_request_duration_seconds",
				 "Time from the first byte of a request to the end of its "
				 "response, by method and status code.",
				 "method,code", metrics_buckets_fast, METRICS_BUCKETS_FAST_N);
	srv->m_unary = metrics_register(
		METRIC_HISTOGRAM, "fleetplane_http_unary_request_duration_seconds",
		"As fleetplane_http_request_duration_seconds, streamed responses (watch) left out: "
		"the API latency SLO's series.",
		"method,code", metrics_buckets_fast, METRICS_BUCKETS_FAST_N);
	srv->m_reports_refused = metrics_register(
		METRIC_COUNTER, "fleetplane_agent_reports_refused_total",
		"Agent reports (POST /v1/nodes/{name}:report) refused, by reason: "
		"unauthenticated, forbidden, legacy_token, stale_token, rate_limited, "
		"unknown_node, bad_report.",
		"reason", NULL, 0);
	srv->report_limit = api_report_limiter_new(&cfg->report_limit, cfg->clock);
	srv->auth = api_auth_new(cfg->store, err, errlen);
	if (!srv->auth)
		goto fail;
	int64_t now = api_wall_ms(srv);
	if (api_auth_bootstrap(srv->auth, cfg->data_dir, now, fp_rng_u64(srv->rng), err, errlen) <
	    0)
		goto fail;
	if (!srv->cfg.threads) {
		const char *env = getenv("FLEETPLANE_API_THREADS");
		srv->cfg.threads = env ? (unsigned)strtoul(env, NULL, 10) : 1;
	}
	if (srv->cfg.threads < 1)
		srv->cfg.threads = 1;
	if (srv->cfg.threads > API_MAX_POLL_THREADS)
		srv->cfg.threads = API_MAX_POLL_THREADS;
	srv->pool = pool_new();
	if (!srv->pool) {
		fp_errf(FP_EIO, err, errlen, "api: cannot start worker threads");
		goto fail;
	}
	if (api_watch_hub_start(srv, err, errlen) < 0)
		goto fail;
	/* Event loop(s) with poll(2), no thread per connection, suspend/resume for the worker
	 * pool and parked watches (see the comment at the top). */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_USE_ERROR_LOG;
	if (v6)
		flags |= MHD_USE_IPv6;
	if (cfg->tls_cert_pem || cfg->tls_key_pem) {
		if (!cfg->tls_cert_pem || !cfg->tls_key_pem) {
			fp_errf(FP_EINVAL, err, errlen, "api: TLS needs a certificate and a key");
			goto fail;
		}
		if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
			fp_errf(FP_EUNSUPPORTED, err, errlen,
				"api: this libmicrohttpd is built without TLS");
			goto fail;
		}
		flags |= MHD_USE_TLS;
		srv->tls_cert = xstrdup(cfg->tls_cert_pem);
		srv->tls_key = xstrdup(cfg->tls_key_pem);
		srv->cfg.tls_cert_pem = srv->tls_cert;
		srv->cfg.tls_key_pem = srv->tls_key;
	}
	/* THREAD_POOL_SIZE only when > 1 (0.9.75 logs and ignores 1); the TLS pair when set. */
	struct MHD_OptionItem extra[4];
	size_t nx = 0;
	if (srv->cfg.threads > 1)
		extra[nx++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE,
						      (intptr_t)srv->cfg.threads, NULL};
	if (flags & MHD_USE_TLS) {
		extra[nx++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls_cert};
		extra[nx++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key};
	}
	extra[nx] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	srv->mhd = MHD_start_daemon(flags, 0, accept_cb, srv, access_cb, srv,
				    MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, srv,
				    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				    MHD_OPTION_NOTIFY_COMPLETED, completed_cb, srv,
				    MHD_OPTION_CONNECTION_TIMEOUT,
				    srv->cfg.conn_limits.idle_timeout_s,
				    MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
				    MHD_OPTION_NOTIFY_CONNECTION, notify_conn_cb, srv,
				    MHD_OPTION_URI_LOG_CALLBACK, uri_log_cb, srv,
				    MHD_OPTION_UNESCAPE_CALLBACK, unescape_cb, srv,
				    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)API_CONN_MEMORY,
				    MHD_OPTION_ARRAY, extra, MHD_OPTION_END);
	if (!srv->mhd) {
		fp_errf(FP_EIO, err, errlen, "cannot listen on %s (address in use?)", cfg->listen);
		goto fail;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = di ? di->port : 0;
	/* the address bound: --listen's host with the port the kernel gave (":0" picks one) */
	const char *lc = strrchr(cfg->listen, ':');
	int hl = lc ? (int)(lc - cfg->listen) : (int)strlen(cfg->listen);
	log_info("api listening addr=%.*s:%u listen=%s port=%u threads=%u tls=%s", hl, cfg->listen,
		 srv->port, cfg->listen, srv->port, srv->cfg.threads,
		 (flags & MHD_USE_TLS) ? "on" : "off");
	return srv;
fail:
	api_server_free(srv);
	return NULL;
}

unsigned api_server_port(const struct api_server *srv)
{
	return srv->port;
}

void api_server_free(struct api_server *srv)
{
	if (!srv)
		return;
	srv->stopping = 1;
	/* No connection may stay suspended when the daemon stops (microhttpd.h): the hub resumes
	 * every parked watch (which then ends its stream) and parks no more; the pool runs what is
	 * queued (each job resumes its connection) and takes no more. */
	api_watch_hub_stop(srv);
	pool_free(srv->pool);
	srv->pool = NULL;
	/* Let the answers owed go out before the sockets close, at most 2 s: the writes the
	 * workers just committed (a client that saw its connection cut could not tell that its
	 * write landed), the other queued replies, the ended streams' last chunk. A client that
	 * reads too slowly to take its answer in that time is cut off. */
	for (int i = 0;
	     i < 200 && srv->mhd &&
	     (atomic_load(&srv->replies_owed) > 0 || atomic_load(&srv->live_watches) > 0);
	     i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (srv->mhd)
		MHD_stop_daemon(srv->mhd);
	/* Only now: until the daemon stopped, a poll thread could still read a stream and look at
	 * the hub (watch.h, the two phases). */
	api_watch_hub_free(srv);
	api_conns_free(srv->conns);
	api_auth_free(srv->auth);
	api_report_limiter_free(srv->report_limit);
	if (srv->tls_key) {
		explicit_bzero(srv->tls_key, strlen(srv->tls_key));
		free(srv->tls_key);
	}
	free(srv->tls_cert);
	fp_rng_release(&srv->own_rng);
	free(srv);
}
