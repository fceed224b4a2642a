/* openapi.c - GET /v1/openapi.json: an OpenAPI 3.0.3 document (https://spec.openapis.org/oas/
 * v3.0.3) describing every route of server.c, built once from the table below with jansson.
 * Every operation has an operationId (method and path) and its 4xx answers (RFC 9457
 * problems); node documents are typed with the schemas the Kubernetes surface serves
 * (kube.c api_kube_node_schemas), other documents are objects; the authoritative shapes are in
 * DESIGN.md and core/codec.h. */
#include <ctype.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/jsonx.h"
#include "base/banned.h"

struct oa_op {
	const char *path, *method, *summary, *role;
	int status; /* success status */
	int body;   /* takes a JSON body */
	int list;   /* limit/continue/watch parameters */
};

static const struct oa_op oa_ops[] = {
	{"/healthz", "get", "Process is alive", "none", 200, 0, 0},
	{"/readyz", "get", "Store open and caches synced (200) or not yet (503)", "none", 200, 0,
	 0},
	{"/metrics", "get", "Prometheus text exposition 0.0.4", "viewer", 200, 0, 0},
	{"/v1/openapi.json", "get", "This document", "viewer", 200, 0, 0},
	{"/v1/nodes", "get", "List or watch nodes (labelSelector, phase)", "viewer", 200, 0, 1},
	{"/v1/nodes", "post", "Enroll a node or {\"items\":[...]} (at most 10000)", "operator", 201,
	 1, 0},
	{"/v1/nodes:drain", "post",
	 "Drain many nodes {\"selector\"|\"names\",\"reason\"} (at most 1000) under the "
	 "disruption budgets; one result per node",
	 "operator", 200, 0, 0},
	{"/v1/nodes:power", "post",
	 "Power many nodes {\"selector\"|\"names\",\"action\",\"force\"?} (at most 1000); "
	 "one result per node",
	 "operator", 200, 0, 0},
	{"/v1/nodes:resume", "post",
	 "Release the caller's hold on many nodes {\"selector\"|\"names\",\"reason\"?}", "operator",
	 200, 0, 0},
	{"/v1/nodes/{name}", "get", "Get a node", "viewer (agent: own node)", 200, 0, 0},
	{"/v1/nodes/{name}", "put", "Replace spec and labels (needs resourceVersion or If-Match)",
	 "operator", 200, 1, 0},
	{"/v1/nodes/{name}", "delete", "Delete an enrolled or retired node", "operator", 200, 0, 0},
	{"/v1/nodes/{name}:drain", "post", "Add the caller's hold {\"reason\"}", "operator", 200, 1,
	 0},
	{"/v1/nodes/{name}:resume", "post", "Release the caller's hold {\"reason\"}", "operator",
	 200, 1, 0},
	{"/v1/nodes/{name}:retire", "post", "Request decommission {\"reason\"}", "operator", 200, 1,
	 0},
	{"/v1/nodes/{name}:release", "post", "Release another owner's hold {\"owner\",\"reason\"}",
	 "admin", 200, 1, 0},
	{"/v1/nodes/{name}:power", "post",
	 "Power operation {\"action\": on|off|cycle|soft|reset|status}; queued behind the node's "
	 "operation in flight (at most 8); 409 while retiring or retired",
	 "operator", 202, 1, 0},
	{"/v1/nodes/{name}:booted", "post", "Agent boot callback {\"bootId\"}",
	 "operator (agent: own node)", 202, 1, 0},
	{"/v1/nodes/{name}:validated", "post", "Agent burn-in report {\"bootId\",\"passed\"}",
	 "operator (agent: own node)", 202, 1, 0},
	{"/v1/nodes/{name}:report", "post",
	 "Agent health report {\"agent\",\"detectors\",\"events\"} (at most 256 events, 16 "
	 "detectors); 200 {\"accepted\",\"duplicates\",\"decisions\"}; 429 with Retry-After "
	 "over the node's report rate limit",
	 "operator (agent: own node)", 200, 1, 0},
	{"/v1/nodes/{name}:remediated", "post",
	 "Agent result of a gpu_reset operation {\"operation\",\"succeeded\",\"message\"?}",
	 "operator (agent: own node)", 202, 1, 0},
	{"/v1/nodes/{name}:jobend", "post",
	 "Epilog: a Slurm job ended on the node {\"job\",\"gpus\"?,\"exitCode\"?,\"signal\"?}; "
	 "audit event JobEnded",
	 "operator (agent: own node)", 202, 1, 0},
	{"/v1/operations", "get", "List or watch operations (node, state)", "viewer", 200, 0, 1},
	{"/v1/operations/{name}", "get", "Get an operation", "viewer", 200, 0, 0},
	{"/v1/operations/{name}:cancel", "post",
	 "Cancel a queued or pending, not started operation {\"reason\"?}; 409 running or ended",
	 "operator", 200, 1, 0},
	{"/v1/events", "get", "List or watch audit events, oldest first (object)", "viewer", 200, 0,
	 1},
	{"/v1/events/{name}", "get", "Get an audit event", "viewer", 200, 0, 0},
	{"/v1/sites", "get", "List sites", "viewer", 200, 0, 1},
	{"/v1/sites", "post", "Create a site", "operator", 201, 1, 0},
	{"/v1/sites/{name}", "get", "Get a site", "viewer", 200, 0, 0},
	{"/v1/sites/{name}", "delete", "Delete a site without racks", "admin", 200, 0, 0},
	{"/v1/racks", "get", "List racks (site)", "viewer", 200, 0, 1},
	{"/v1/racks", "post", "Create a rack (spec.site must exist)", "operator", 201, 1, 0},
	{"/v1/racks/{name}", "get", "Get a rack", "viewer", 200, 0, 0},
	{"/v1/racks/{name}", "delete", "Delete a rack", "admin", 200, 0, 0},
	{"/v1/healthevents", "get", "List or watch health events (node, code)", "viewer", 200, 0,
	 1},
	{"/v1/healthevents/{name}", "get", "Get a health event by <node>.<id>", "viewer", 200, 0,
	 0},
	{"/v1/policies", "get", "List health policies (only default)", "viewer", 200, 0, 0},
	{"/v1/policies/{name}", "get", "Get the health policy (only default)", "viewer", 200, 0, 0},
	{"/v1/policies/{name}", "put",
	 "Replace the health policy (metadata.resourceVersion or If-Match: conditional)", "admin",
	 200, 1, 0},
	{"/v1/budgets", "get", "List disruption budgets with status.domains", "viewer", 200, 0, 1},
	{"/v1/budgets", "post",
	 "Create a disruption budget {\"metadata\":{\"name\"},\"spec\":{\"domain\","
	 "\"maxUnavailable\"}} (at most 256)",
	 "operator", 201, 1, 0},
	{"/v1/budgets/{name}", "get", "Get a disruption budget with status.domains", "viewer", 200,
	 0, 0},
	{"/v1/budgets/{name}", "put",
	 "Create or replace a budget (metadata.resourceVersion or If-Match: conditional)",
	 "operator", 200, 1, 0},
	{"/v1/budgets/{name}", "delete", "Delete a disruption budget", "operator", 200, 0, 0},
	{"/v1/breakers", "get", "List open correlated-failure breakers", "viewer", 200, 0, 0},
	{"/v1/breakers/{name}:reset", "post", "Close an open breaker {\"reason\"} (audited)",
	 "operator", 200, 1, 0},
	{"/v1/rmas", "get", "List RMA records (node)", "viewer", 200, 0, 1},
	{"/v1/rmas/{name}", "get", "Get an RMA record with its evidence", "viewer", 200, 0, 0},
	{"/v1/tenants", "get", "List tenants (Slurm accounts with a GPU quota)", "viewer", 200, 0,
	 1},
	{"/v1/tenants/{name}", "get",
	 "Get a tenant with status {gpuQuota,gpusInUse,runningJobs,gpuHoursThisMonth} (serve "
	 "--slurm)",
	 "viewer", 200, 0, 0},
	{"/v1/tenants/{name}", "put",
	 "Create (201) or replace (200) a tenant {spec:{slurmAccount,gpuQuota}}; serve --slurm sets "
	 "the account's GrpTRES=gres/gpu=<gpuQuota>",
	 "operator", 200, 1, 0},
	{"/v1/tenants/{name}", "delete", "Delete a tenant (its Slurm quota is cleared)", "operator",
	 200, 0, 0},
	{"/v1/usage", "get",
	 "GPU-hours per Slurm account, user or partition over [from, to) from slurmdbd's job "
	 "records (serve --slurm; 503 without): {from,to,by,items:[{<by>,gpuHours,gpuSeconds,"
	 "jobs}],total}; 400 naming a bad parameter, 502 when sacct failed",
	 "viewer", 200, 0, 0},
	{"/v1/tokens", "get", "List tokens (no secrets)", "admin", 200, 0, 1},
	{"/v1/tokens", "post", "Create a token; the secret is in this response only", "admin", 201,
	 1, 0},
	{"/v1/tokens/{name}", "get", "Get a token (no secret)", "admin", 200, 0, 0},
	{"/v1/tokens/{name}", "delete", "Revoke a token", "admin", 200, 0, 0},
};

static json_t *param(const char *name, const char *in, const char *type, int required,
		     const char *desc)
{
	return json_pack("{s:s,s:s,s:b,s:s,s:{s:s}}", "name", name, "in", in, "required", required,
			 "description", desc, "schema", "type", type);
}

/* "post" "/v1/nodes/{name}:drain" -> "postV1NodesNameDrain" (unique: method + path). */
static void op_id(const char *method, const char *path, char *out, size_t size)
{
	size_t n = (size_t)snprintf(out, size, "%s", method);
	int up = 1;
	for (const char *p = path; *p && n + 1 < size; p++) {
		if (!isalnum((unsigned char)*p)) {
			up = 1;
			continue;
		}
		out[n++] = up ? (char)toupper((unsigned char)*p) : *p;
		up = 0;
	}
	out[n] = 0;
}

static int is_node_doc(const struct oa_op *o)
{
	return strcmp(o->path, "/v1/nodes/{name}") == 0 ||
	       (strcmp(o->path, "/v1/nodes") == 0 && strcmp(o->method, "post") == 0);
}

static json_t *problem_ref(void)
{
	return json_pack("{s:s}", "$ref", "#/components/responses/Problem");
}

static json_t *build(void)
{
	json_t *paths = json_object();
	for (size_t i = 0; i < sizeof(oa_ops) / sizeof(oa_ops[0]); i++) {
		const struct oa_op *o = &oa_ops[i];
		json_t *item = json_object_get(paths, o->path);
		if (!item) {
			item = json_object();
			json_object_set_new(paths, o->path, item);
		}
		char code[8];
		snprintf(code, sizeof(code), "%d", o->status);
		const char *ctype = strcmp(o->path, "/metrics") == 0 ? "text/plain"
								     : "application/json";
		json_t *schema = is_node_doc(o) && strcmp(o->method, "delete") != 0
					 ? json_pack("{s:s}", "$ref", "#/components/schemas/Node")
				 : strcmp(o->path, "/v1/nodes") == 0
					 ? json_pack("{s:s}", "$ref",
						     "#/components/schemas/NodeList")
					 : json_pack("{s:s}", "type",
						     strcmp(ctype, "text/plain") == 0 ? "string"
										      : "object");
		json_t *ok = json_pack("{s:s,s:{s:{s:o}}}", "description", "success", "content",
				       ctype, "schema", schema);
		char id[128];
		op_id(o->method, o->path, id, sizeof(id));
		json_t *op = json_pack("{s:s,s:s,s:s,s:{s:o,s:o,s:o}}", "operationId", id,
				       "summary", o->summary, "description", o->role, "responses",
				       code, ok, "400", problem_ref(), "default", problem_ref());
		json_t *resps = json_object_get(op, "responses");
		if (strcmp(o->role, "none") != 0) {
			json_object_set_new(resps, "401", problem_ref());
			json_object_set_new(resps, "403", problem_ref());
		}
		if (strstr(o->path, "{name}"))
			json_object_set_new(resps, "404", problem_ref());
		if (o->body || strcmp(o->method, "delete") == 0)
			json_object_set_new(resps, "409", problem_ref());
		json_object_set_new(op, "x-fleetplane-role", json_string(o->role));
		json_t *params = json_array();
		if (strstr(o->path, "{name}"))
			json_array_append_new(params,
					      param("name", "path", "string", 1, "object name"));
		if (o->list) {
			json_array_append_new(params, param("limit", "query", "integer", 0,
							    "page size, 1..5000, default 500"));
			json_array_append_new(params, param("continue", "query", "string", 0,
							    "token from the previous page"));
			json_array_append_new(params, param("watch", "query", "string", 0,
							    "1: stream newline-delimited events"));
			json_array_append_new(params, param("resourceVersion", "query", "string", 0,
							    "watch from after this revision"));
		}
		if (strcmp(o->path, "/v1/usage") == 0) {
			json_array_append_new(
				params, param("from", "query", "string", 1,
					      "window start: RFC 3339 date-time or unix seconds"));
			json_array_append_new(
				params, param("to", "query", "string", 1,
					      "window end (exclusive), after from, at most 366 "
					      "days later"));
			json_array_append_new(params, param("by", "query", "string", 1,
							    "account, user or partition"));
		}
		if (o->body) {
			json_array_append_new(params, param("Idempotency-Key", "header", "string",
							    0, "replay-safe POST (24 h)"));
			json_t *bs = is_node_doc(o) ? json_pack("{s:s}", "$ref",
								"#/components/schemas/Node")
						    : json_pack("{s:s}", "type", "object");
			json_object_set_new(op, "requestBody",
					    json_pack("{s:b,s:{s:{s:o}}}", "required", 1, "content",
						      "application/json", "schema", bs));
			json_object_set_new(resps, "422", problem_ref());
		}
		if (json_array_size(params))
			json_object_set_new(op, "parameters", params);
		else
			json_decref(params);
		if (strcmp(o->role, "none") == 0)
			json_object_set_new(op, "security", json_array());
		json_object_set_new(item, o->method, op);
	}
	json_t *status = NULL;
	json_t *spec = api_kube_node_schemas(&status);
	json_t *strmap = json_pack("{s:s,s:{s:s}}", "type", "object", "additionalProperties",
				   "type", "string");
	json_t *node = json_pack(
		"{s:s,s:s,s:[s],s:{s:{s:s,s:[s]},s:{s:s,s:[s],s:{s:{s:s},s:{s:s},s:{s:s},s:O,s:O,"
		"s:{s:s,s:s}}},s:o,s:o}}",
		"type", "object", "description",
		"a node (DESIGN.md \"API\"); to enroll only metadata.name is required", "required",
		"metadata", "properties", "kind", "type", "string", "enum", "Node", "metadata",
		"type", "object", "required", "name", "properties", "name", "type", "string", "uid",
		"type", "string", "resourceVersion", "type", "string", "labels", strmap,
		"annotations", strmap, "createdAt", "type", "string", "format", "date-time", "spec",
		spec, "status", status);
	json_decref(strmap);
	json_t *list = json_pack("{s:s,s:{s:{s:s,s:{s:s}},s:{s:s,s:{s:{s:s},s:{s:s}}}}}", "type",
				 "object", "properties", "items", "type", "array", "items", "$ref",
				 "#/components/schemas/Node", "metadata", "type", "object",
				 "properties", "resourceVersion", "type", "string", "continue",
				 "type", "string");
	return json_pack(
		"{s:s,s:{s:s,s:s,s:s},s:[{s:s}],s:o,s:{s:{s:{s:s,s:s}},s:{s:{s:s,s:{s:{s:s},s:{s:s},"
		"s:{s:s},s:{s:s},s:{s:s}}},s:o,s:o},s:{s:{s:s,s:{s:{s:{s:s}}}}}},s:[{s:[]}]}",
		"openapi", "3.0.3", "info", "title", "fleetplane API", "version", "v1",
		"description",
		"fleetplane's native REST API (docs/api.md); the Kubernetes API is at /apis "
		"(docs/kubernetes.md)",
		"servers", "url", "/", "paths", paths, "components", "securitySchemes", "bearer",
		"type", "http", "scheme", "bearer", "schemas", "Problem", "type", "object",
		"properties", "type", "type", "string", "title", "type", "string", "status", "type",
		"integer", "detail", "type", "string", "instance", "type", "string", "Node", node,
		"NodeList", list, "responses", "Problem", "description", "RFC 9457 problem",
		"content", "application/problem+json", "schema", "$ref",
		"#/components/schemas/Problem", "security", "bearer");
}

static pthread_once_t oa_once = PTHREAD_ONCE_INIT;
static char *oa_text;

static void oa_init(void)
{
	json_t *doc = build();
	oa_text = jsonx_dumps(doc);
	json_decref(doc);
}

void api_openapi(struct api_req *r)
{
	pthread_once(&oa_once, oa_init);
	api_reply_raw(r, 200, "application/json", oa_text, strlen(oa_text));
}
