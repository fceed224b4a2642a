/* kube.c - the Kubernetes API served by fleetplane itself (issue 13), so that the real kubectl,
 * client libraries and GitOps tools manage fleetplane's resources with no Kubernetes cluster
 * (as kcp does). Every request kubectl makes, and the shapes that work, are in
 * ../shared/recipes/kubectl.md; the section numbers below refer to it.
 *
 * One resource registry (kinds[] below) names each kind once: its plural, short names, store
 * prefix, the native renderer it shares with /v1 (api_node_render, api_op_render, ...), its
 * table columns and its actions. From it come discovery (/api, /apis plain and aggregated v2 /
 * v2beta1, /apis/fleetplane.io/v1), OpenAPI v3, and the collection and object handlers under
 * /apis/fleetplane.io/v1/. Lists and watches go through the same api_list / api_watch as /v1
 * (reply.c, watch.c) with two hooks on the request (kube_list, kube_obj) that turn native
 * documents into Kubernetes objects, lists and Tables; node writes are translated into the
 * native PUT/POST/DELETE handlers of api_nodes.c, so validation, BMC claims and audit events
 * are the same code. Errors on this surface are Status objects (api_kube_status, called from
 * reply.c's api_problem_ext through r->kube_status). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/api_int.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonpatch.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "core/codec.h"
#include "core/model.h"
#include "engine/objects.h"
#include "store/store.h"
#include "base/banned.h"

#define KUBE_GROUP "fleetplane.io"
#define KUBE_VERSION "v1"
#define KUBE_GV KUBE_GROUP "/" KUBE_VERSION
#define KUBE_MAX_FIELDS 8
#define KUBE_CT_V2 "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
#define KUBE_CT_V2BETA1 "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

/* ---------------------------------------------------------------- the registry */

struct kube_col {
	const char *name; /* as kubectl shows it, upper-cased by kubectl */
	const char *type; /* "string", "integer", "date" */
	const char *path; /* dotted path in the public document; "@age", "@holds" special */
	int priority;     /* 0 always, 1 with -o wide */
	const char *desc;
};

struct kube_action {
	const char *name;   /* subresource: POST .../{name}/<name> */
	api_handler_fn fn;  /* the native handler (params[0] = the object's name) */
	enum api_role role; /* least role */
};

struct kube_kind {
	const char *plural, *singular, *kind, *list_kind;
	const char *short_name; /* NULL = none */
	const char *prefix;     /* store prefix */
	const char *native;     /* the /v1 collection path, for messages */
	api_render_fn render;
	const char *phase_path; /* fieldSelector status.phase=..., or NULL */
	int writable;           /* create, update, patch, delete (nodes) */
	const struct kube_col *cols;
	size_t ncols;
	const struct kube_action *actions;
	size_t nactions;
	const char *spec_desc; /* OpenAPI description of spec */
};

static const struct kube_col node_cols[] = {
	{"Name", "string", "metadata.name", 0, "the node's name"},
	{"Phase", "string", "status.phase", 0, "where the node is in its lifecycle"},
	{"Holds", "string", "@holds", 0, "owners of the holds that keep it from work"},
	{"Site", "string", "spec.site", 0, "site"},
	{"Rack", "string", "spec.rack", 0, "rack (failure domain)"},
	{"GPUs", "integer", "spec.gpus.count", 0, "GPUs expected"},
	{"Age", "string", "@age", 0, "time since the node was enrolled"},
	{"Provider", "string", "spec.provider", 1, "who supplies the hardware"},
	{"BMC", "string", "spec.bmc.driver", 1, "BMC driver"},
	{"Pool", "string", "spec.pool", 1, "scheduler pool"},
	{"Operation", "string", "status.operation", 1, "operation in flight"},
};
static const struct kube_col op_cols[] = {
	{"Name", "string", "metadata.name", 0, "operation id"},
	{"Node", "string", "spec.node", 0, "node"},
	{"Kind", "string", "spec.kind", 0, "what it does"},
	{"State", "string", "status.state", 0, "pending, running, succeeded, failed, cancelled"},
	{"Step", "string", "status.step", 1, "current step"},
	{"Age", "string", "@age", 0, "time since it was created"},
};
static const struct kube_col site_cols[] = {
	{"Name", "string", "metadata.name", 0, "site"},
	{"Age", "string", "@age", 0, "time since it was created"},
};
static const struct kube_col rack_cols[] = {
	{"Name", "string", "metadata.name", 0, "rack"},
	{"Site", "string", "spec.site", 0, "site"},
	{"Age", "string", "@age", 0, "time since it was created"},
};
static const struct kube_col plain_cols[] = {
	{"Name", "string", "metadata.name", 0, "name"},
	{"Age", "string", "@age", 0, "time since it was created"},
};

static const struct kube_action node_actions[] = {
	{"drain", api_node_drain, API_ROLE_OPERATOR},
	{"resume", api_node_resume, API_ROLE_OPERATOR},
	{"retire", api_node_retire, API_ROLE_OPERATOR},
	{"power", api_node_power, API_ROLE_OPERATOR},
	{"release", api_node_release, API_ROLE_ADMIN},
};

#define COLS(c) c, sizeof(c) / sizeof(c[0])
static const struct kube_kind kinds[] = {
	{"baremetalnodes", "baremetalnode", "BareMetalNode", "BareMetalNodeList", "bmn",
	 OBJECTS_PREFIX_NODES, "/v1/nodes", api_node_render, "status.phase", 1, COLS(node_cols),
	 node_actions, sizeof(node_actions) / sizeof(node_actions[0]),
	 "desired state: site, rack, provider, BMC, MACs, GPUs, provisioning"},
	{"operations", "operation", "Operation", "OperationList", "fop", OBJECTS_PREFIX_OPERATIONS,
	 "/v1/operations", api_op_render, NULL, 0, COLS(op_cols), NULL, 0,
	 "what the operation does, to which node"},
	{"sites", "site", "Site", "SiteList", NULL, "/sites/", "/v1/sites", api_plain_render, NULL,
	 0, COLS(site_cols), NULL, 0, "site settings"},
	{"racks", "rack", "Rack", "RackList", NULL, "/racks/", "/v1/racks", api_plain_render, NULL,
	 0, COLS(rack_cols), NULL, 0, "the rack's site"},
	{"disruptionbudgets", "disruptionbudget", "DisruptionBudget", "DisruptionBudgetList", "fdb",
	 "/budgets/", "/v1/budgets", api_budget_render, NULL, 0, COLS(plain_cols), NULL, 0,
	 "how many nodes of a domain or pool may be out at once"},
	{"healthpolicies", "healthpolicy", "HealthPolicy", "HealthPolicyList", NULL, "/policies/",
	 "/v1/policies", api_plain_render, NULL, 0, COLS(plain_cols), NULL, 0,
	 "thresholds and the remediation ladder"},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static const struct kube_kind *kind_find(const char *plural)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (strcmp(kinds[i].plural, plural) == 0)
			return &kinds[i];
	return NULL;
}

int api_kube_path(const char *path)
{
	return strcmp(path, "/api") == 0 || strncmp(path, "/api/", 5) == 0 ||
	       strcmp(path, "/apis") == 0 || strncmp(path, "/apis/", 6) == 0 ||
	       strcmp(path, "/version") == 0 || strncmp(path, "/openapi/", 9) == 0;
}

/* ---------------------------------------------------------------- Status (section 6) */

static const char *status_reason(int status, const char *msg)
{
	switch (status) {
	case 400: return "BadRequest";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "NotFound";
	case 405: return "MethodNotAllowed";
	case 406: return "NotAcceptable";
	case 409: return msg && strstr(msg, "exists") ? "AlreadyExists" : "Conflict";
	case 410: return "Expired";
	case 413: return "RequestEntityTooLarge";
	case 415: return "UnsupportedMediaType";
	case 422: return "Invalid";
	case 428: return "Conflict";
	case 429: return "TooManyRequests";
	case 503: return "ServiceUnavailable";
	case 504: return "Timeout";
	default: return status >= 500 ? "InternalError" : "BadRequest";
	}
}

json_t *api_kube_status(struct api_req *r, int status, const char *message, json_t *ext)
{
	json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:i,s:s}", "kind", "Status", "apiVersion", "v1",
			       "metadata", "status", status < 400 ? "Success" : "Failure", "code",
			       status, "message", message);
	if (status >= 400)
		json_object_set_new(st, "reason", json_string(status_reason(status, message)));
	json_t *details = json_object();
	if (r->kkind) {
		json_object_set_new(details, "group", json_string(KUBE_GROUP));
		json_object_set_new(details, "kind", json_string(r->kkind->plural));
		if (r->params[1])
			json_object_set_new(details, "name", json_string(r->params[1]));
	}
	const char *field = json_string_value(json_object_get(ext, "field"));
	if (!field)
		field = json_string_value(json_object_get(ext, "parameter"));
	if (field)
		json_object_set_new(details, "causes",
				    json_pack("[{s:s,s:s,s:s}]", "reason",
					      status == 422 ? "FieldValueInvalid" : "Invalid",
					      "message", message, "field", field));
	if (json_object_size(details))
		json_object_set_new(st, "details", details);
	else
		json_decref(details);
	json_decref(ext);
	return st;
}

static void kube_error(struct api_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void kube_error(struct api_req *r, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	api_reply_json(r, status, api_kube_status(r, status, msg, NULL));
}

/* ---------------------------------------------------------------- query parameters */

/* Refuses a query parameter not in allowed (issue 13: refused, not ignored). */
static int check_params(struct api_req *r, const char *const *allowed)
{
	return api_params_check(r, allowed);
}

static const char *const qp_list[] = {"labelSelector",
				      "fieldSelector",
				      "limit",
				      "continue",
				      "watch",
				      "resourceVersion",
				      "resourceVersionMatch",
				      "timeoutSeconds",
				      "allowWatchBookmarks",
				      "sendInitialEvents",
				      "timeout",
				      "pretty",
				      NULL};
static const char *const qp_get[] = {"resourceVersion", "timeout", "pretty", NULL};
static const char *const qp_write[] = {"fieldManager", "fieldValidation", "dryRun", "timeout",
				       "pretty",       "force",           NULL};
static const char *const qp_delete[] = {"gracePeriodSeconds",
					"propagationPolicy",
					"dryRun",
					"orphanDependents",
					"timeout",
					"pretty",
					NULL};
static const char *const qp_none[] = {"timeout", NULL};

static int boolean_param(struct api_req *r, const char *k)
{
	const char *v = api_query(r, k);
	return v && (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

/* dryRun: "All" or absent; anything else is refused. Returns 1, 0, or -1 (answered). */
static int dry_run(struct api_req *r)
{
	const char *v = api_query(r, "dryRun");
	if (!v)
		return 0;
	if (strcmp(v, "All") == 0)
		return 1;
	kube_error(r, 400, "dryRun: only All is supported, got %.32s", v);
	return -1;
}

static int wants_table(struct api_req *r)
{
	const char *a = api_header(r, MHD_HTTP_HEADER_ACCEPT);
	return a && strstr(a, "as=Table") && strstr(a, "g=meta.k8s.io");
}

/* ---------------------------------------------------------------- objects */

/* "2026-12-02T14:27:31.316Z" -> "2026-12-02T14:27:31Z" (Kubernetes' metav1.Time: seconds). */
static json_t *k8s_time(const char *t)
{
	int64_t ms;
	if (!t || fp_time_parse(t, &ms) < 0)
		return NULL;
	char out[FP_TIME_LEN];
	fp_time_format(ms - ms % 1000, out);
	char *dot = strchr(out, '.');
	if (dot)
		memcpy(dot, "Z", 2);
	return json_string(out);
}

/* A native public document -> a Kubernetes object of kind k (new reference; steals doc). */
static json_t *kubeify(const struct kube_kind *k, json_t *doc)
{
	json_t *out = json_pack("{s:s,s:s}", "apiVersion", KUBE_GV, "kind", k->kind);
	json_t *nmd = json_object_get(doc, "metadata");
	json_t *md = json_object();
	const char *keys[] = {"name", "uid", "resourceVersion"};
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(nmd, keys[i]);
		if (v)
			json_object_set(md, keys[i], v);
	}
	json_object_set_new(md, "generation", json_integer(1));
	json_t *ct = k8s_time(jsonx_str(doc, "metadata.createdAt"));
	if (ct)
		json_object_set_new(md, "creationTimestamp", ct);
	json_t *labels = json_object_get(nmd, "labels");
	if (json_is_object(labels) && json_object_size(labels))
		json_object_set(md, "labels", labels);
	json_t *ann = json_object_get(nmd, "annotations");
	if (json_is_object(ann) && json_object_size(ann))
		json_object_set(md, "annotations", ann);
	json_object_set_new(out, "metadata", md);
	const char *key;
	json_t *v;
	json_object_foreach(doc, key, v) {
		if (strcmp(key, "kind") != 0 && strcmp(key, "metadata") != 0 &&
		    strcmp(key, "apiVersion") != 0)
			json_object_set(out, key, v);
	}
	json_decref(doc);
	return out;
}

static void human_age(int64_t ms, char *out, size_t size)
{
	int64_t s = ms / 1000;
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(out, size, "%llds", (long long)s);
	else if (s < 600)
		snprintf(out, size, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
	else if (s < 3 * 3600)
		snprintf(out, size, "%lldm", (long long)(s / 60));
	else if (s < 8 * 3600)
		snprintf(out, size, "%lldh%lldm", (long long)(s / 3600),
			 (long long)(s % 3600 / 60));
	else if (s < 48 * 3600)
		snprintf(out, size, "%lldh", (long long)(s / 3600));
	else if (s < 8 * 86400)
		snprintf(out, size, "%lldd%lldh", (long long)(s / 86400),
			 (long long)(s % 86400 / 3600));
	else
		snprintf(out, size, "%lldd", (long long)(s / 86400));
}

static json_t *cell(struct api_req *r, const struct kube_col *c, const json_t *obj)
{
	if (strcmp(c->path, "@age") == 0) {
		int64_t t;
		const char *ts = jsonx_str(obj, "metadata.creationTimestamp");
		if (!ts || fp_time_parse(ts, &t) < 0)
			return json_string("<unknown>");
		char age[32];
		human_age(api_now(r) - t, age, sizeof(age));
		return json_string(age);
	}
	if (strcmp(c->path, "@holds") == 0) {
		json_t *holds = jsonx_path(obj, "status.holds");
		if (!json_array_size(holds))
			return json_string("-");
		char buf[256] = "";
		size_t i, n = 0;
		json_t *h;
		json_array_foreach(holds, i, h) {
			const char *o = json_string_value(json_object_get(h, "owner"));
			n += (size_t)snprintf(buf + n, n < sizeof(buf) ? sizeof(buf) - n : 0,
					      "%s%s", i ? "," : "", o ? o : "?");
			if (n >= sizeof(buf))
				break;
		}
		return json_string(buf);
	}
	json_t *v = jsonx_path(obj, c->path);
	if (json_is_string(v) || json_is_integer(v))
		return json_incref(v);
	if (!v || json_is_null(v))
		return strcmp(c->type, "integer") == 0 ? json_integer(0) : json_string("");
	return json_string("");
}

static json_t *table_row(struct api_req *r, const struct kube_kind *k, const json_t *obj)
{
	json_t *cells = json_array();
	for (size_t i = 0; i < k->ncols; i++)
		json_array_append_new(cells, cell(r, &k->cols[i], obj));
	json_t *pmd = json_pack("{s:s,s:s,s:O}", "kind", "PartialObjectMetadata", "apiVersion",
				"meta.k8s.io/v1", "metadata", json_object_get(obj, "metadata"));
	return json_pack("{s:o,s:o}", "cells", cells, "object", pmd);
}

/* A Table (section 4) of objs (an array of Kubernetes objects, borrowed) with list metadata md
 * (stolen). */
static json_t *table(struct api_req *r, const struct kube_kind *k, const json_t *objs, json_t *md)
{
	json_t *cols = json_array();
	for (size_t i = 0; i < k->ncols; i++)
		json_array_append_new(cols,
				      json_pack("{s:s,s:s,s:s,s:s,s:i}", "name", k->cols[i].name,
						"type", k->cols[i].type, "format",
						i == 0 ? "name" : "", "description",
						k->cols[i].desc, "priority", k->cols[i].priority));
	json_t *rows = json_array();
	size_t i;
	json_t *o;
	json_array_foreach(objs, i, o)
		json_array_append_new(rows, table_row(r, k, o));
	return json_pack("{s:s,s:s,s:o,s:o,s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
			 "metadata", md, "columnDefinitions", cols, "rows", rows);
}

/* api_list's hook: {"items","metadata"} of native documents -> the kind's list or a Table. */
static json_t *list_hook(struct api_req *r, json_t *list)
{
	const struct kube_kind *k = r->kkind;
	json_t *items = json_array();
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(list, "items"), i, o)
		json_array_append_new(items, kubeify(k, json_incref(o)));
	json_t *md = json_incref(json_object_get(list, "metadata"));
	json_decref(list);
	if (r->ktable) {
		json_t *t = table(r, k, items, md);
		json_decref(items);
		return t;
	}
	return json_pack("{s:s,s:s,s:o,s:o}", "kind", k->list_kind, "apiVersion", KUBE_GV,
			 "metadata", md, "items", items);
}

/* api_watch's hook: each event's object (section 5). */
static json_t *obj_hook(struct api_req *r, const char *type, json_t *obj)
{
	const struct kube_kind *k = r->kkind;
	if (strcmp(type, "ERROR") == 0) {
		int code = (int)json_integer_value(json_object_get(obj, "status"));
		json_t *st = api_kube_status(r, code ? code : 500,
					     jsonx_str(obj, "detail") ? jsonx_str(obj, "detail")
								      : "watch failed",
					     NULL);
		json_decref(obj);
		return st;
	}
	if (strcmp(type, "BOOKMARK") == 0) {
		json_t *rv = jsonx_path(obj, "metadata.resourceVersion");
		json_t *b = json_pack("{s:s,s:s,s:{s:O}}", "kind", k->kind, "apiVersion", KUBE_GV,
				      "metadata", "resourceVersion", rv ? rv : json_string("0"));
		json_decref(obj);
		return b;
	}
	json_t *ko = kubeify(k, obj);
	if (!r->ktable)
		return ko;
	json_t *arr = json_pack("[o]", ko);
	json_t *t = table(r, k, arr,
			  json_pack("{s:O}", "resourceVersion",
				    jsonx_path(ko, "metadata.resourceVersion")));
	json_decref(arr);
	return t;
}

/* ---------------------------------------------------------------- selectors */

struct kube_filter {
	const struct kube_kind *k;
	struct label_selector *sel;
	size_t nf;
	struct {
		const char *path;
		const char *value;
		int neg;
	} f[KUBE_MAX_FIELDS];
};

static int kube_keep(struct api_req *r, const json_t *doc, void *arg)
{
	struct kube_filter *f = arg;
	for (size_t i = 0; i < f->nf; i++) {
		const char *v = jsonx_str(doc, f->f[i].path);
		int eq = v && strcmp(v, f->f[i].value) == 0;
		if (eq == f->f[i].neg)
			return 0;
	}
	if (f->sel) {
		json_t *labels = jsonx_path(doc, "metadata.labels");
		json_t *empty = NULL;
		if (!labels)
			labels = empty = json_object();
		int ok = label_selector_match_json(f->sel, labels);
		json_decref(empty);
		if (!ok)
			return 0;
	}
	return 1;
}

static void free_sel(void *p)
{
	label_selector_free(p);
}

/* fieldSelector: terms "field=value", "field==value", "field!=value" separated by ','. Fields:
 * metadata.name, metadata.namespace (only ""), and status.phase where the kind has phases.
 * Returns 0 or -1 (answered 400). */
static int parse_fields(struct api_req *r, struct kube_filter *f, const char *s)
{
	char *dup = api_strdup(r, s);
	char *save = NULL;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *op = strstr(t, "!=");
		int neg = op != NULL;
		if (!op)
			op = strchr(t, '=');
		if (!op || op == t) {
			kube_error(r, 400, "fieldSelector: invalid term %.64s", t);
			return -1;
		}
		*op = 0;
		char *v = op + (neg ? 2 : (op[1] == '=' ? 2 : 1));
		const char *path = NULL;
		if (strcmp(t, "metadata.name") == 0)
			path = "metadata.name";
		else if (strcmp(t, "status.phase") == 0 && f->k->phase_path)
			path = f->k->phase_path;
		else if (strcmp(t, "metadata.namespace") == 0 && !*v)
			continue; /* cluster-scoped: every object has namespace "" */
		if (!path) {
			kube_error(r, 400, "field label not supported: %.64s", t);
			return -1;
		}
		if (f->nf == KUBE_MAX_FIELDS) {
			kube_error(r, 400, "fieldSelector: more than %d terms", KUBE_MAX_FIELDS);
			return -1;
		}
		f->f[f->nf].path = path;
		f->f[f->nf].value = v;
		f->f[f->nf].neg = neg;
		f->nf++;
	}
	return 0;
}

/* ---------------------------------------------------------------- discovery (section 2) */

void api_kube_version(struct api_req *r)
{
	if (check_params(r, qp_none) < 0)
		return;
	api_reply_json(r, 200,
		       json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "major", "1", "minor",
				 "33", "gitVersion", "v1.33.0-fleetplane", "gitCommit", "",
				 "gitTreeState", "clean", "buildDate", "2026-12-02T00:00:00Z",
				 "goVersion", "none", "compiler", "c", "platform", "linux/amd64"));
}

/* 2 = aggregated v2, 1 = v2beta1, 0 = plain (the first acceptable media range wins). */
static int discovery_format(struct api_req *r)
{
	const char *a = api_header(r, MHD_HTTP_HEADER_ACCEPT);
	if (!a)
		return 0;
	const char *p = a;
	while (*p) {
		size_t n = strcspn(p, ",");
		char m[256];
		snprintf(m, sizeof(m), "%.*s", (int)(n < 255 ? n : 255), p);
		if (strstr(m, "as=APIGroupDiscoveryList") && strstr(m, "g=apidiscovery.k8s.io")) {
			if (strstr(m, "v=v2beta1"))
				return 1;
			if (strstr(m, "v=v2;") ||
			    (strlen(m) >= 4 && !strcmp(m + strlen(m) - 4, "v=v2")))
				return 2;
		} else if (strstr(m, "application/json") || strstr(m, "*/*")) {
			return 0;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static void reply_discovery(struct api_req *r, int fmt, json_t *items)
{
	json_t *d = json_pack("{s:s,s:s,s:{},s:o}", "kind", "APIGroupDiscoveryList", "apiVersion",
			      fmt == 2 ? "apidiscovery.k8s.io/v2" : "apidiscovery.k8s.io/v2beta1",
			      "metadata", "items", items);
	api_reply_json(r, 200, d);
	r->ctype = fmt == 2 ? KUBE_CT_V2 : KUBE_CT_V2BETA1;
	api_add_header(r, "Vary", "Accept");
}

void api_kube_api(struct api_req *r)
{
	if (check_params(r, qp_none) < 0)
		return;
	int fmt = discovery_format(r);
	if (fmt) {
		reply_discovery(r, fmt, json_array());
		return;
	}
	api_reply_json(r, 200,
		       json_pack("{s:s,s:[],s:[]}", "kind", "APIVersions", "versions",
				 "serverAddressByClientCIDRs"));
}

static json_t *verbs_of(const struct kube_kind *k)
{
	return k->writable ? json_pack("[s,s,s,s,s,s,s]", "create", "delete", "get", "list",
				       "patch", "update", "watch")
			   : json_pack("[s,s,s]", "get", "list", "watch");
}

static json_t *aggregated_group(void)
{
	json_t *res = json_array();
	for (size_t i = 0; i < NKINDS; i++) {
		const struct kube_kind *k = &kinds[i];
		json_t *subs = json_array();
		for (size_t j = 0; j < k->nactions; j++)
			json_array_append_new(subs,
					      json_pack("{s:s,s:{s:s,s:s,s:s},s:[s]}",
							"subresource", k->actions[j].name,
							"responseKind", "group", "", "version",
							"v1", "kind", "Status", "verbs", "create"));
		json_t *o = json_pack("{s:s,s:s,s:s,s:{s:s,s:s,s:s},s:o,s:[s],s:o}", "resource",
				      k->plural, "singularResource", k->singular, "scope",
				      "Cluster", "responseKind", "group", KUBE_GROUP, "version",
				      KUBE_VERSION, "kind", k->kind, "verbs", verbs_of(k),
				      "categories", "fleet", "subresources", subs);
		if (k->short_name)
			json_object_set_new(o, "shortNames", json_pack("[s]", k->short_name));
		json_array_append_new(res, o);
	}
	return json_pack("{s:{s:s},s:[{s:s,s:s,s:o}]}", "metadata", "name", KUBE_GROUP, "versions",
			 "version", KUBE_VERSION, "freshness", "Current", "resources", res);
}

void api_kube_apis(struct api_req *r)
{
	if (check_params(r, qp_none) < 0)
		return;
	int fmt = discovery_format(r);
	if (fmt) {
		reply_discovery(r, fmt, json_pack("[o]", aggregated_group()));
		return;
	}
	api_reply_json(r, 200,
		       json_pack("{s:s,s:s,s:[{s:s,s:[{s:s,s:s}],s:{s:s,s:s}}]}", "kind",
				 "APIGroupList", "apiVersion", "v1", "groups", "name", KUBE_GROUP,
				 "versions", "groupVersion", KUBE_GV, "version", KUBE_VERSION,
				 "preferredVersion", "groupVersion", KUBE_GV, "version",
				 KUBE_VERSION));
}

void api_kube_group(struct api_req *r)
{
	if (check_params(r, qp_none) < 0)
		return;
	api_reply_json(r, 200,
		       json_pack("{s:s,s:s,s:s,s:[{s:s,s:s}],s:{s:s,s:s}}", "kind", "APIGroup",
				 "apiVersion", "v1", "name", KUBE_GROUP, "versions", "groupVersion",
				 KUBE_GV, "version", KUBE_VERSION, "preferredVersion",
				 "groupVersion", KUBE_GV, "version", KUBE_VERSION));
}

void api_kube_resources(struct api_req *r)
{
	if (check_params(r, qp_none) < 0)
		return;
	json_t *res = json_array();
	for (size_t i = 0; i < NKINDS; i++) {
		const struct kube_kind *k = &kinds[i];
		json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:o,s:[s]}", "name", k->plural,
				      "singularName", k->singular, "namespaced", 0, "kind", k->kind,
				      "verbs", verbs_of(k), "categories", "fleet");
		if (k->short_name)
			json_object_set_new(o, "shortNames", json_pack("[s]", k->short_name));
		json_array_append_new(res, o);
		for (size_t j = 0; j < k->nactions; j++)
			json_array_append_new(res, json_pack("{s:s,s:s,s:b,s:s,s:[s]}", "name",
							     api_printf(r, "%s/%s", k->plural,
									k->actions[j].name),
							     "singularName", "", "namespaced", 0,
							     "kind", "Status", "verbs", "create"));
	}
	api_reply_json(r, 200,
		       json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
				 "groupVersion", KUBE_GV, "resources", res));
}

/* ---------------------------------------------------------------- collection and object */

/* Sets r->kkind from params[0]; 404 for an unknown resource. */
static const struct kube_kind *need_kind(struct api_req *r)
{
	const struct kube_kind *k = kind_find(r->params[0]);
	if (!k) {
		kube_error(r, 404, "the server could not find the requested resource (%.64s)",
			   r->params[0]);
		return NULL;
	}
	r->kkind = k;
	r->ktable = wants_table(r);
	return k;
}

void api_kube_collection(struct api_req *r)
{
	const struct kube_kind *k = need_kind(r);
	if (!k || check_params(r, qp_list) < 0)
		return;
	struct kube_filter *f = api_own(r, xcalloc(1, sizeof(*f)));
	f->k = k;
	char err[256];
	const char *sel = api_query(r, "labelSelector");
	if (sel && *sel) {
		if (label_selector_parse(sel, &f->sel, err, sizeof(err)) < 0) {
			api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "labelSelector"),
					"unable to parse requirement: %s", err);
			return;
		}
		api_own_fn(r, f->sel, free_sel);
	}
	const char *fs = api_query(r, "fieldSelector");
	if (fs && *fs && parse_fields(r, f, fs) < 0)
		return;
	api_keep_fn keep = (f->sel || f->nf) ? kube_keep : NULL;
	r->kube_list = list_hook;
	r->kube_obj = obj_hook;
	if (boolean_param(r, "watch")) {
		r->kbookmarks = boolean_param(r, "allowWatchBookmarks");
		const char *ts = api_query(r, "timeoutSeconds");
		if (ts) {
			char *end = NULL;
			long v = strtol(ts, &end, 10);
			if (!*ts || *end || v < 0 || v > 86400) {
				kube_error(r, 400, "timeoutSeconds: expected 0..86400 seconds");
				return;
			}
			if (v > 0) {
				struct timespec now;
				clock_gettime(CLOCK_MONOTONIC, &now);
				r->kdeadline_ms = (int64_t)now.tv_sec * 1000 +
						  now.tv_nsec / 1000000 + v * 1000;
			}
		}
		api_watch(r, k->prefix, k->kind, keep, f, k->render);
		return;
	}
	/* resourceVersion on a list (informers send 0, then N after a 410): the current state
	 * answers both (recipe section 3) */
	api_list(r, k->prefix, keep, f, k->render);
}

/* Reads the object params[1] of kind k as a Kubernetes object (new reference), or answers
 * 404/500 and returns NULL. *mod gets its mod_revision. */
static json_t *load_obj(struct api_req *r, const struct kube_kind *k, int64_t *mod)
{
	char err[256];
	if (name_validate("name", r->params[1], err, sizeof(err)) < 0 &&
	    (k->render != api_op_render || strlen(r->params[1]) > 128)) {
		kube_error(r, 400, "%s", err);
		return NULL;
	}
	json_t *doc = NULL;
	int rc = api_get_doc(r, api_printf(r, "%s%s", k->prefix, r->params[1]), &doc, mod);
	if (rc == FP_ENOTFOUND) {
		kube_error(r, 404, "%s." KUBE_GROUP " \"%s\" not found", k->plural, r->params[1]);
		return NULL;
	}
	if (rc < 0) {
		kube_error(r, fp_err_http(rc), "cannot read the store");
		return NULL;
	}
	json_t *out = k->render(r, doc, *mod);
	json_decref(doc);
	if (!out) {
		kube_error(r, 500, "stored %s %s does not decode", k->singular, r->params[1]);
		return NULL;
	}
	return kubeify(k, out);
}

static void reply_obj(struct api_req *r, int status, json_t *obj)
{
	if (r->ktable) {
		json_t *arr = json_pack("[o]", obj);
		json_t *t = table(r, r->kkind, arr,
				  json_pack("{s:O}", "resourceVersion",
					    jsonx_path(obj, "metadata.resourceVersion")));
		json_decref(arr);
		api_reply_json(r, status, t);
		return;
	}
	api_reply_json(r, status, obj);
}

void api_kube_get(struct api_req *r)
{
	const struct kube_kind *k = need_kind(r);
	if (!k || check_params(r, qp_get) < 0)
		return;
	int64_t mod = 0;
	json_t *obj = load_obj(r, k, &mod);
	if (obj)
		reply_obj(r, 200, obj);
}

void api_kube_subresource(struct api_req *r)
{
	const struct kube_kind *k = need_kind(r);
	if (!k || check_params(r, qp_get) < 0)
		return;
	if (strcmp(r->params[2], "status") != 0) {
		kube_error(r, 405, "%s/%s: only POST", k->plural, r->params[2]);
		return;
	}
	int64_t mod = 0;
	json_t *obj = load_obj(r, k, &mod);
	if (obj)
		reply_obj(r, 200, obj);
}

/* ---------------------------------------------------------------- writes (nodes) */

static int need_writable(struct api_req *r, const struct kube_kind *k)
{
	if (k->writable)
		return 0;
	kube_error(r, 405, "%s are read-only here; use %s", k->plural, k->native);
	return -1;
}

/* The request body as a JSON value (object or, for json-patch, array). 400 when malformed. */
static json_t *body_json(struct api_req *r)
{
	if (!r->body.len) {
		kube_error(r, 400, "empty body");
		return NULL;
	}
	if (memchr(r->body.data, 0, r->body.len)) {
		kube_error(r, 400, "body contains a NUL byte");
		return NULL;
	}
	json_error_t je;
	json_t *v = json_loadb(r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!v) {
		kube_error(r, 400, "malformed JSON at line %d column %d: %s", je.line, je.column,
			   je.text);
		return NULL;
	}
	return api_own_json(r, v);
}

/* A Kubernetes BareMetalNode -> the native document /v1/nodes takes (new reference):
 * metadata.{name,labels,annotations,resourceVersion,uid} and spec; status is the server's. */
static json_t *to_native(const json_t *obj, int with_rv)
{
	json_t *md = json_object_get(obj, "metadata");
	json_t *nmd = json_object();
	const char *keys[] = {"name", "labels", "annotations", "uid", "resourceVersion"};
	for (size_t i = 0; i < (with_rv ? 5u : 3u); i++) {
		json_t *v = json_object_get(md, keys[i]);
		if (v && !json_is_null(v))
			json_object_set(nmd, keys[i], v);
	}
	json_t *out = json_pack("{s:o}", "metadata", nmd);
	json_t *spec = json_object_get(obj, "spec");
	if (spec)
		json_object_set(out, "spec", spec);
	return out;
}

/* Checks the Kubernetes envelope of a body: apiVersion and kind, when given, are ours. */
static int check_envelope(struct api_req *r, const struct kube_kind *k, const json_t *obj)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kd = json_string_value(json_object_get(obj, "kind"));
	if ((av && strcmp(av, KUBE_GV) != 0) || (kd && strcmp(kd, k->kind) != 0)) {
		kube_error(r, 400, "expected apiVersion " KUBE_GV " and kind %s", k->kind);
		return -1;
	}
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		if (strcmp(key, "apiVersion") && strcmp(key, "kind") && strcmp(key, "metadata") &&
		    strcmp(key, "spec") && strcmp(key, "status")) {
			api_problem_ext(r, 422, json_pack("{s:s}", "field", key),
					"unknown field \"%.64s\"", key);
			return -1;
		}
	}
	return 0;
}

/* Runs the native handler fn with body as the request body, then turns a 2xx JSON answer
 * into a Kubernetes object of r->kkind with status out_status (0 = the handler's). */
static void run_native(struct api_req *r, api_handler_fn fn, const json_t *body, int out_status)
{
	char *s = body ? jsonx_dumps(body) : NULL;
	buf_reset(&r->body);
	if (s && buf_append(&r->body, s, strlen(s)) < 0) {
		free(s);
		kube_error(r, 413, "request body too large");
		return;
	}
	free(s);
	const char *saved = r->params[0];
	r->params[0] = r->params[1]; /* native handlers name the object params[0] */
	r->kube_native = 1;          /* the body is ours now: JSON whatever the Content-Type */
	fn(r);
	r->kube_native = 0;
	r->params[0] = saved;
	if (r->status < 200 || r->status >= 300 || r->stream)
		return;
	json_t *doc = NULL;
	if (!r->out.len || jsonx_parse(r->out.data, r->out.len, &doc, NULL, 0) < 0)
		return;
	reply_obj(r, out_status ? out_status : r->status, kubeify(r->kkind, doc));
}

/* Validates a would-be node the way enrollment does; 422 Invalid when it fails. */
static int validate_node(struct api_req *r, const json_t *native)
{
	struct node *n = NULL;
	char err[512];
	json_t *copy = json_deep_copy(native);
	json_t *md = json_object_get(copy, "metadata");
	json_object_del(md, "uid");
	json_object_del(md, "resourceVersion");
	int rc = node_from_enroll_json(copy, &n, err, sizeof(err));
	json_decref(copy);
	node_free(n);
	if (rc < 0) {
		api_problem_ext(r, 422, NULL, "BareMetalNode is invalid: %s", err);
		return -1;
	}
	return 0;
}

void api_kube_create(struct api_req *r)
{
	const struct kube_kind *k = need_kind(r);
	if (!k || check_params(r, qp_write) < 0 || need_writable(r, k) < 0)
		return;
	int dry = dry_run(r);
	json_t *obj = dry < 0 ? NULL : body_json(r);
	if (!obj || check_envelope(r, k, obj) < 0)
		return;
	const char *name = jsonx_str(obj, "metadata.name");
	if (!name) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"),
				"metadata.name: Required value");
		return;
	}
	json_t *native = api_own_json(r, to_native(obj, 0));
	if (dry) {
		if (validate_node(r, native) < 0)
			return;
		json_t *o = json_deep_copy(obj);
		json_object_set_new(o, "apiVersion", json_string(KUBE_GV));
		json_object_set_new(o, "kind", json_string(k->kind));
		json_object_del(o, "status");
		reply_obj(r, 201, o);
		return;
	}
	r->params[1] = api_strdup(r, name);
	run_native(r, api_nodes_create, native, 201);
}

/* Same spec, labels and annotations: a write would change nothing (no new resourceVersion). */
static int same_desired(const json_t *a, const json_t *b)
{
	const char *paths[] = {"spec", "metadata.labels", "metadata.annotations"};
	for (size_t i = 0; i < 3; i++) {
		json_t *x = jsonx_path(a, paths[i]), *y = jsonx_path(b, paths[i]);
		int ex = x && !json_is_null(x) && !(json_is_object(x) && !json_object_size(x));
		int ey = y && !json_is_null(y) && !(json_is_object(y) && !json_object_size(y));
		if (ex != ey || (ex && !json_equal(x, y)))
			return 0;
	}
	return 1;
}

/* Writes want (a Kubernetes object) over cur (as read, revision mod) through the native PUT;
 * a no-op answers cur unchanged; dryRun answers want. */
static void write_obj(struct api_req *r, const json_t *cur, int64_t mod, json_t *want, int dry)
{
	const char *wname = jsonx_str(want, "metadata.name");
	if (!wname || strcmp(wname, r->params[1]) != 0) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.name"),
				"metadata.name: must be %s, the name in the path", r->params[1]);
		return;
	}
	if (same_desired(cur, want)) {
		reply_obj(r, 200, json_deep_copy(cur));
		return;
	}
	json_t *native = api_own_json(r, to_native(want, 1));
	json_t *md = json_object_get(native, "metadata");
	if (!json_object_get(md, "resourceVersion"))
		json_object_set_new(md, "resourceVersion", api_rv_json(mod));
	if (dry) {
		if (validate_node(r, native) < 0)
			return;
		json_t *o = json_deep_copy(want);
		json_object_set(o, "status", json_object_get(cur, "status"));
		reply_obj(r, 200, o);
		return;
	}
	run_native(r, api_node_put, native, 200);
}

void api_kube_put(struct api_req *r)
{
	const struct kube_kind *k = need_kind(r);
	if (!k || check_params(r, qp_write) < 0 || need_writable(r, k) < 0)
		return;
	int dry = dry_run(r);
	json_t *obj = dry < 0 ? NULL : body_json(r);
	if (!obj || check_envelope(r, k, obj) < 0)
		return;
	if (!jsonx_path(obj, "metadata.resourceVersion")) {
		api_problem_ext(r, 422, json_pack("{s:s}", "field", "metadata.resourceVersion"),
				"metadata.resourceVersion: Invalid value: 0x0: must be specified "
				"for an update");
		return;
	}
	int64_t mod = 0;
	json_t *cur = load_obj(r, k, &mod);
	if (!cur)
		return;
	api_own_json(r, cur);
	int64_t want = 0;
	if (api_rv_parse_json(jsonx_path(obj, "metadata.resourceVersion"), &want) < 0 ||
	    want != mod) {
		kube_error(r, 409,
			   "Operation cannot be fulfilled on %s." KUBE_GROUP " \"%s\": the object "
			   "has been modified; please apply your changes to the latest version "
			   "and try again",
			   k->plural, r->params[1]);
		return;
	}
	write_obj(r, cur, mod, obj, dry);
}

void api_kube_patch(struct api_req *r)
{
	const struct kube_kind *k = need_kind(r);
	if (!k || check_params(r, qp_write) < 0 || need_writable(r, k) < 0)
		return;
	const char *ct = api_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	size_t ctn = ct ? strcspn(ct, "; ") : 0;
#define CT_IS(lit) (ct && ctn == strlen(lit) && strncasecmp(ct, lit, ctn) == 0)
	int merge = CT_IS("application/merge-patch+json") ||
		    CT_IS("application/strategic-merge-patch+json");
	int jpatch = CT_IS("application/json-patch+json");
#undef CT_IS
	if (!merge && !jpatch) {
		kube_error(r, 415,
			   "the body of the request was in an unknown format - accepted media "
			   "types include: application/json-patch+json, "
			   "application/merge-patch+json, application/strategic-merge-patch+json");
		return;
	}
	int dry = dry_run(r);
	json_t *patch = dry < 0 ? NULL : body_json(r);
	if (!patch)
		return;
	if (merge && !json_is_object(patch)) {
		kube_error(r, 400, "a merge patch is a JSON object");
		return;
	}
	if (merge && strstr(r->body.data ? r->body.data : "", "\"$")) {
		kube_error(r, 415,
			   "strategic merge patch directives ($patch, $setElementOrder, "
			   "...) are not supported; send a merge patch");
		return;
	}
	int64_t mod = 0;
	json_t *cur = load_obj(r, k, &mod);
	if (!cur)
		return;
	api_own_json(r, cur);
	char err[256];
	int conflict = 0;
	json_t *want = merge ? jsonpatch_merge(cur, patch, err, sizeof(err))
			     : jsonpatch_apply(cur, patch, &conflict, err, sizeof(err));
	if (!want) {
		api_problem_ext(r, 422, NULL, "the patch does not apply: %s", err);
		return;
	}
	api_own_json(r, want);
	/* a patch carrying metadata.resourceVersion is a precondition; else the current one */
	int64_t prv = 0;
	json_t *pv = jsonx_path(merge ? patch : want, "metadata.resourceVersion");
	if (merge && pv && (api_rv_parse_json(pv, &prv) < 0 || prv != mod)) {
		kube_error(r, 409,
			   "Operation cannot be fulfilled on %s." KUBE_GROUP " \"%s\": the object "
			   "has been modified; please apply your changes to the latest version "
			   "and try again",
			   k->plural, r->params[1]);
		return;
	}
	json_t *md = json_object_get(want, "metadata");
	if (json_is_object(md))
		json_object_set_new(md, "resourceVersion", api_rv_json(mod));
	write_obj(r, cur, mod, want, dry);
}

void api_kube_delete(struct api_req *r)
{
	const struct kube_kind *k = need_kind(r);
	if (!k || check_params(r, qp_delete) < 0 || need_writable(r, k) < 0)
		return;
	int dry = dry_run(r);
	if (dry < 0)
		return;
	int64_t mod = 0;
	json_t *cur = load_obj(r, k, &mod);
	if (!cur)
		return;
	api_own_json(r, cur);
	if (dry) {
		reply_obj(r, 200, json_deep_copy(cur));
		return;
	}
	/* the body ({"propagationPolicy":...}) has been read; the native delete takes none */
	run_native(r, api_node_delete, NULL, 200);
	if (r->status == 200)
		reply_obj(r, 200, json_deep_copy(cur));
}

void api_kube_action(struct api_req *r)
{
	const struct kube_kind *k = need_kind(r);
	if (!k || check_params(r, qp_write) < 0)
		return;
	const struct kube_action *a = NULL;
	for (size_t i = 0; i < k->nactions; i++)
		if (strcmp(k->actions[i].name, r->params[2]) == 0)
			a = &k->actions[i];
	if (!a) {
		kube_error(r, 404, "%s has no action %.32s", k->plural, r->params[2]);
		return;
	}
	if (r->who.role < a->role) {
		kube_error(r, 403, "%s/%s needs the %s role", k->plural, a->name,
			   api_role_name(a->role));
		return;
	}
	/* kubectl create --raw sends no Content-Type; an empty body is {} */
	json_t *body = r->body.len ? body_json(r) : api_own_json(r, json_object());
	if (!body)
		return;
	char *s = jsonx_dumps(body);
	buf_reset(&r->body);
	int too_big = buf_append(&r->body, s, strlen(s)) < 0;
	free(s);
	if (too_big) {
		kube_error(r, 413, "request body too large");
		return;
	}
	const char *saved = r->params[0];
	r->params[0] = r->params[1];
	r->kube_native = 1;
	a->fn(r);
	r->kube_native = 0;
	r->params[0] = saved;
	if (r->status >= 200 && r->status < 300) {
		int code = r->status;
		json_t *st = api_kube_status(r, code,
					     api_printf(r, "%s %s: %s accepted", k->singular,
							r->params[1], a->name),
					     NULL);
		api_reply_json(r, code, st);
	}
}

/* ---------------------------------------------------------------- events (describe) */

/* GET /api/v1/events?fieldSelector=involvedObject.name=X,...: the node's audit events as
 * core/v1 Events, so `kubectl describe bmn X` shows them (section 8). */
static int event_keep(struct api_req *r, const json_t *doc, void *arg)
{
	const char *want = arg;
	const char *obj = jsonx_str(doc, "object");
	return !want || (obj && strcmp(obj, want) == 0);
}

static json_t *event_render(struct api_req *r, const json_t *doc, int64_t mod_rev)
{
	const char *obj = jsonx_str(doc, "object");
	const char *slash = obj ? strchr(obj, '/') : NULL;
	json_t *t = k8s_time(jsonx_str(doc, "time"));
	json_t *e = json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:s},s:s,s:s,s:s,s:i,s:{s:s}}",
			      "kind", "Event", "apiVersion", "v1", "metadata", "name",
			      jsonx_str(doc, "id") ? jsonx_str(doc, "id") : "", "namespace", "",
			      "resourceVersion", api_rv_json(mod_rev), "involvedObject", "kind",
			      "BareMetalNode", "name", slash ? slash + 1 : "", "type",
			      jsonx_str(doc, "type") ? jsonx_str(doc, "type") : "Normal", "reason",
			      jsonx_str(doc, "reason") ? jsonx_str(doc, "reason") : "", "message",
			      jsonx_str(doc, "message") ? jsonx_str(doc, "message") : "", "count",
			      1, "source", "component",
			      jsonx_str(doc, "actor") ? jsonx_str(doc, "actor") : "fleetplane");
	if (t) {
		json_object_set(e, "firstTimestamp", t);
		json_object_set_new(e, "lastTimestamp", t);
	}
	return e;
}

static json_t *events_list_hook(struct api_req *r, json_t *list)
{
	json_t *out = json_pack("{s:s,s:s,s:O,s:O}", "kind", "EventList", "apiVersion", "v1",
				"metadata", json_object_get(list, "metadata"), "items",
				json_object_get(list, "items"));
	json_decref(list);
	return out;
}

void api_kube_events(struct api_req *r)
{
	if (check_params(r, qp_list) < 0)
		return;
	const char *fs = api_query(r, "fieldSelector");
	const char *want = NULL;
	if (fs) {
		const char *p = strstr(fs, "involvedObject.name=");
		if (p) {
			p += strlen("involvedObject.name=");
			want = api_printf(r, "node/%.*s", (int)strcspn(p, ","), p);
		}
	}
	r->kube_list = events_list_hook;
	api_list(r, OBJECTS_PREFIX_EVENTS, want ? event_keep : NULL, (void *)want, event_render);
}

/* ---------------------------------------------------------------- OpenAPI v3 (section 7) */

#define OA_META "io.k8s.apimachinery.pkg.apis.meta.v1."
#define OA_REF(name) "#/components/schemas/" name

static json_t *oa_str(const char *desc)
{
	return json_pack("{s:s,s:s}", "type", "string", "description", desc);
}

static json_t *oa_gvk(const struct kube_kind *k)
{
	return json_pack("{s:s,s:s,s:s}", "group", KUBE_GROUP, "version", KUBE_VERSION, "kind",
			 k->kind);
}

static json_t *oa_ref(const char *name)
{
	return json_pack("{s:s}", "$ref", name);
}

/* spec and status of a node, typed from core/model.h (docs/api.md "Nodes"). */
static json_t *oa_node_spec(void)
{
	json_t *bmc = json_pack("{s:s,s:s,s:{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:s,s:s},s:o},s:b}",
				"type", "object", "description",
				"how the BMC is reached; the password is never returned",
				"properties", "driver", oa_str("ipmi, redfish or sim"), "address",
				oa_str("host or URL of the BMC"), "username", oa_str("BMC user"),
				"password", oa_str("BMC password (write only; sealed at rest)"),
				"password_file",
				oa_str("file under the BMC credentials dir holding the password"),
				"ca_file", oa_str("CA file for a Redfish BMC's TLS"), "system",
				oa_str("Redfish System URI"), "tls_verify", "type", "boolean",
				"description", "verify the Redfish BMC's certificate",
				"cipher_suite",
				json_pack("{s:s,s:s}", "type", "integer", "description",
					  "IPMI cipher suite (0..17)"),
				"x-kubernetes-preserve-unknown-fields", 1);
	return json_pack(
		"{s:s,s:s,s:{s:o,s:o,s:o,s:o,s:o,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:{s:{s:s,s:s},"
		"s:o}},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s,s:b},s:{s:s,s:s,s:b}},s:b}",
		"type", "object", "description",
		"desired state: site, rack, provider, BMC, MACs, GPUs, provisioning", "properties",
		"site", oa_str("site the node is in"), "rack", oa_str("rack (failure domain)"),
		"provider", oa_str("who supplies the hardware"), "pool",
		oa_str("scheduler pool (Slurm partition)"), "bmc", bmc, "macs", "type", "array",
		"description", "NIC MACs; the first is the boot MAC", "items", "type", "string",
		"gpus", "type", "object", "description", "GPUs the node must have", "properties",
		"count", "type", "integer", "description", "GPU count expected", "model",
		oa_str("GPU model expected"), "retire", "type", "boolean", "description",
		"decommission requested", "adopt", "type", "boolean", "description",
		"take over a running node as it is", "provision", "type", "object", "description",
		"network-boot provisioning (docs/provisioning.md)",
		"x-kubernetes-preserve-unknown-fields", 1, "hardware", "type", "object",
		"description", "what inspection must find besides the GPUs",
		"x-kubernetes-preserve-unknown-fields", 1, "x-kubernetes-preserve-unknown-fields",
		0);
}

static json_t *oa_status(const struct kube_kind *k)
{
	json_t *s = json_pack("{s:s,s:s,s:b}", "type", "object", "description",
			      "observed state, written by fleetplane only",
			      "x-kubernetes-preserve-unknown-fields", 1);
	if (k->phase_path)
		json_object_set_new(
			s, "properties",
			json_pack("{s:o,s:{s:s,s:s,s:{s:s,s:b}},s:{s:s,s:s,s:{s:s,s:b}}}", "phase",
				  oa_str("enrolled, inspecting, provisioning, validating, "
					 "available, in_service, draining, maintenance, "
					 "repairing, failed, retiring, retired"),
				  "holds", "type", "array", "description",
				  "reasons the node must not take work", "items", "type", "object",
				  "x-kubernetes-preserve-unknown-fields", 1, "conditions", "type",
				  "array", "description", "observed facts", "items", "type",
				  "object", "x-kubernetes-preserve-unknown-fields", 1));
	return s;
}

json_t *api_kube_node_schemas(json_t **status)
{
	*status = oa_status(&kinds[0]);
	return oa_node_spec();
}

static json_t *oa_kind_schema(const struct kube_kind *k)
{
	json_t *spec = k->phase_path
			       ? oa_node_spec()
			       : json_pack("{s:s,s:s,s:b}", "type", "object", "description",
					   k->spec_desc, "x-kubernetes-preserve-unknown-fields", 1);
	return json_pack("{s:s,s:s,s:{s:o,s:o,s:o,s:o,s:o},s:[o]}", "type", "object", "description",
			 k->spec_desc, "properties", "apiVersion", oa_str("fleetplane.io/v1"),
			 "kind", oa_str(k->kind), "metadata", oa_ref(OA_REF(OA_META "ObjectMeta")),
			 "spec", spec, "status", oa_status(k), "x-kubernetes-group-version-kind",
			 oa_gvk(k));
}

static json_t *oa_params(void)
{
	return json_pack("[{s:s,s:s,s:{s:s}},{s:s,s:s,s:{s:s}},{s:s,s:s,s:{s:s}}]", "name",
			 "dryRun", "in", "query", "schema", "type", "string", "name",
			 "fieldManager", "in", "query", "schema", "type", "string", "name",
			 "fieldValidation", "in", "query", "schema", "type", "string");
}

static json_t *oa_op(const struct kube_kind *k, const char *verb, const char *action,
		     const char *schema, int write)
{
	char id[128];
	snprintf(id, sizeof(id), "%sFleetplaneIoV1%s%s", verb, k->kind,
		 strcmp(action, "list") == 0 ? "" : "");
	char summary[128];
	snprintf(summary, sizeof(summary), "%s %s", verb,
		 strcmp(action, "list") == 0 ? k->list_kind : k->kind);
	json_t *content = json_pack("{s:{s:o}}", "application/json", "schema", oa_ref(schema));
	/* 401 stands for every failure: each answers a meta/v1 Status (section 6), and kubectl's
	 * OpenAPI parser (kube-openapi spec3) takes only numeric codes, not "4XX". */
	json_t *fail = json_pack("{s:s,s:{s:{s:o}}}", "description",
				 "failure: a Status naming the reason (401, 403, 404, 409, 422...)",
				 "content", "application/json", "schema",
				 oa_ref(OA_REF(OA_META "Status")));
	json_t *op = json_pack("{s:s,s:s,s:s,s:o,s:{s:{s:s,s:o},s:o}}", "operationId", id,
			       "summary", summary, "x-kubernetes-action", action,
			       "x-kubernetes-group-version-kind", oa_gvk(k), "responses", "200",
			       "description", "OK", "content", content, "401", fail);
	if (write) {
		json_object_set_new(op, "parameters", oa_params());
		const char *ct = strcmp(action, "patch") == 0 ? "application/merge-patch+json"
							      : "application/json";
		json_t *sch = strcmp(action, "patch") == 0 ? json_pack("{s:s}", "type", "object")
							   : oa_ref(schema);
		json_object_set_new(op, "requestBody",
				    json_pack("{s:{s:{s:o}},s:b}", "content", ct, "schema", sch,
					      "required", 1));
	}
	return op;
}

static char *oa_name(struct api_req *r, const struct kube_kind *k, const char *suffix)
{
	return api_printf(r, "#/components/schemas/io.fleetplane.v1.%s%s", k->kind, suffix);
}

void api_kube_openapi(struct api_req *r)
{
	if (check_params(r, qp_none) < 0)
		return;
	api_reply_json(r, 200,
		       json_pack("{s:{s:{s:s}}}", "paths", "apis/fleetplane.io/v1",
				 "serverRelativeURL",
				 "/openapi/v3/apis/fleetplane.io/v1?hash=fleetplane-1"));
}

static const char *const qp_openapi[] = {"hash", "timeout", NULL};

void api_kube_openapi_group(struct api_req *r)
{
	if (check_params(r, qp_openapi) < 0)
		return;
	json_t *paths = json_object();
	json_t *schemas = json_object();
	for (size_t i = 0; i < NKINDS; i++) {
		const struct kube_kind *k = &kinds[i];
		const char *one = oa_name(r, k, ""), *list = oa_name(r, k, "List");
		json_t *coll = json_pack("{s:o}", "get", oa_op(k, "list", "list", list, 0));
		json_t *item = json_pack("{s:[{s:s,s:s,s:b,s:{s:s}}],s:o}", "parameters", "name",
					 "name", "in", "path", "required", 1, "schema", "type",
					 "string", "get", oa_op(k, "read", "get", one, 0));
		if (k->writable) {
			json_object_set_new(coll, "post", oa_op(k, "create", "post", one, 1));
			json_object_set_new(item, "put", oa_op(k, "replace", "put", one, 1));
			json_object_set_new(item, "patch", oa_op(k, "patch", "patch", one, 1));
			json_object_set_new(item, "delete", oa_op(k, "delete", "delete", one, 0));
		}
		json_object_set_new(paths, api_printf(r, "/apis/" KUBE_GV "/%s", k->plural), coll);
		json_object_set_new(paths, api_printf(r, "/apis/" KUBE_GV "/%s/{name}", k->plural),
				    item);
		json_object_set_new(schemas, api_printf(r, "io.fleetplane.v1.%s", k->kind),
				    oa_kind_schema(k));
		json_object_set_new(schemas, api_printf(r, "io.fleetplane.v1.%sList", k->kind),
				    json_pack("{s:s,s:{s:o,s:o,s:o,s:{s:s,s:o}},s:[{s:s,s:s,s:s}]}",
					      "type", "object", "properties", "apiVersion",
					      oa_str("fleetplane.io/v1"), "kind",
					      oa_str(k->list_kind), "metadata",
					      oa_ref(OA_REF(OA_META "ListMeta")), "items", "type",
					      "array", "items", oa_ref(one),
					      "x-kubernetes-group-version-kind", "group",
					      KUBE_GROUP, "version", KUBE_VERSION, "kind",
					      k->list_kind));
	}
	json_t *strmap = json_pack("{s:s,s:{s:s}}", "type", "object", "additionalProperties",
				   "type", "string");
	json_object_set_new(schemas, OA_META "ObjectMeta",
			    json_pack("{s:s,s:s,s:{s:o,s:o,s:o,s:{s:s},s:{s:s,s:s},s:O,s:o}}",
				      "type", "object", "description", "standard object metadata",
				      "properties", "name", oa_str("unique name"), "uid",
				      oa_str("unique id"), "resourceVersion",
				      oa_str("version for optimistic concurrency"), "generation",
				      "type", "integer", "creationTimestamp", "type", "string",
				      "format", "date-time", "labels", strmap, "annotations",
				      strmap));
	json_decref(strmap);
	json_object_set_new(schemas, OA_META "ListMeta",
			    json_pack("{s:s,s:{s:o,s:o}}", "type", "object", "properties",
				      "resourceVersion", oa_str("list version"), "continue",
				      oa_str("token of the next page")));
	json_object_set_new(schemas, OA_META "Status",
			    json_pack("{s:s,s:s,s:{s:o,s:o,s:o,s:o,s:{s:s}}}", "type", "object",
				      "description", "the answer to a request that failed",
				      "properties", "status", oa_str("Failure"), "message",
				      oa_str("what went wrong"), "reason",
				      oa_str("machine-readable reason (NotFound, Conflict...)"),
				      "details",
				      json_pack("{s:s,s:b}", "type", "object",
						"x-kubernetes-preserve-unknown-fields", 1),
				      "code", "type", "integer"));
	api_reply_json(
		r, 200,
		json_pack("{s:s,s:{s:s,s:s},s:[{s:s}],s:o,s:[{s:[]}],s:{s:o,s:{s:{s:s,s:s}}}}",
			  "openapi", "3.0.0", "info", "title", "fleetplane", "version",
			  KUBE_VERSION, "servers", "url", "/", "paths", paths, "security",
			  "BearerToken", "components", "schemas", schemas, "securitySchemes",
			  "BearerToken", "type", "http", "scheme", "bearer"));
}
