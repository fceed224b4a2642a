/* layers: base core store driver engine api */
/* test_api_kube.c - the Kubernetes surface of the API (api/kube.c, issue 13) and what it brought
 * to both surfaces, end to end over TLS: a server on 127.0.0.1 with a self-signed certificate
 * made by api_tls_ensure_self_signed in a fresh data dir and a mem: store, driven with libcurl
 * verifying that certificate. Discovery (plain and aggregated, media types), Table and list
 * shapes, Status errors, merge and JSON patch (no-op keeps resourceVersion, stale PUT 409,
 * dryRun), unknown query parameters refused on both surfaces, and base/jsonpatch.c on RFC 6902
 * appendix A and RFC 7386 section 3 examples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/server.h"
#include "api/tls.h"
#include "base/buf.h"
#include "base/jsonpatch.h"
#include "base/jsonx.h"
#include "store/store.h"
#include "check.h"

static struct {
	struct store *st;
	struct api_server *srv;
	char dir[64];
	char admin[128];
	char ca[128];
	unsigned port;
} E;

static int setup(void **state)
{
	char err[256] = "", path[160];
	memset(&E, 0, sizeof(E));
	snprintf(E.dir, sizeof(E.dir), "/tmp/fp-kube-XXXXXX");
	assert_non_null(mkdtemp(E.dir));
	ASSERT_OK(store_open("mem:", &E.st, err, sizeof(err)));
	int made = 0;
	if (api_tls_ensure_self_signed(E.dir, "127.0.0.1:0", &made, err, sizeof(err)) < 0)
		fail_msg("tls: %s", err);
	ASSERT_EQ_INT(made, 1);
	char *cert = NULL, *key = NULL;
	snprintf(path, sizeof(path), "%s/" API_TLS_CERT_FILE, E.dir);
	ASSERT_OK(api_tls_read_pem(path, &cert, err, sizeof(err)));
	snprintf(path, sizeof(path), "%s/" API_TLS_KEY_FILE, E.dir);
	ASSERT_OK(api_tls_read_pem(path, &key, err, sizeof(err)));
	ASSERT_OK(api_tls_check_pair(cert, key, err, sizeof(err)));
	/* a second call keeps the pair: it covers the address */
	ASSERT_OK(api_tls_ensure_self_signed(E.dir, "127.0.0.1:7070", &made, err, sizeof(err)));
	ASSERT_EQ_INT(made, 0);
	struct api_config cfg = {.listen = "127.0.0.1:0",
				 .store = E.st,
				 .data_dir = E.dir,
				 .tls_cert_pem = cert,
				 .tls_key_pem = key};
	E.srv = api_server_new(&cfg, err, sizeof(err));
	free(cert);
	free(key);
	if (!E.srv)
		fail_msg("api_server_new: %s", err);
	E.port = api_server_port(E.srv);
	snprintf(path, sizeof(path), "%s/admin.token", E.dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(E.admin, sizeof(E.admin), f));
	fclose(f);
	E.admin[strcspn(E.admin, "\n")] = 0;
	snprintf(E.ca, sizeof(E.ca), "%s/" API_TLS_CA_FILE, E.dir);
	return 0;
}

static int teardown(void **state)
{
	char path[160];
	api_server_free(E.srv);
	store_close(E.st);
	const char *files[] = {"admin.token", API_TLS_CERT_FILE, API_TLS_KEY_FILE, API_TLS_CA_FILE};
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", E.dir, files[i]);
		unlink(path);
	}
	rmdir(E.dir);
	return 0;
}

struct resp {
	long status;
	struct buf body, hdrs;
	json_t *json;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	buf_append(ud, p, sz * n);
	return sz * n;
}

static void resp_free(struct resp *r)
{
	buf_release(&r->body);
	buf_release(&r->hdrs);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

/* One https request with the admin token; hdr1/hdr2 extra header lines or NULL. */
static void req(const char *method, const char *path, const char *body, const char *hdr1,
		const char *hdr2, struct resp *out)
{
	CURL *h = curl_easy_init();
	memset(out, 0, sizeof(*out));
	buf_init(&out->body, 0);
	buf_init(&out->hdrs, 0);
	char url[512], auth[256];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", E.port, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", E.admin);
	struct curl_slist *hl = curl_slist_append(NULL, auth);
	if (hdr1)
		hl = curl_slist_append(hl, hdr1);
	if (hdr2)
		hl = curl_slist_append(hl, hdr2);
	hl = curl_slist_append(hl, "Expect:");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, E.ca);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &out->body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &out->hdrs);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	CURLcode cc = curl_easy_perform(h);
	if (cc != CURLE_OK)
		fail_msg("%s %s: %s", method, path, curl_easy_strerror(cc));
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
	if (out->body.len)
		out->json = json_loadb(out->body.data, out->body.len, 0, NULL);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
}

static int has_header(const struct resp *r, const char *line)
{
	return r->hdrs.data && strstr(r->hdrs.data, line) != NULL;
}

static void enroll(const char *name, const char *rack)
{
	char body[256];
	struct resp r;
	snprintf(body, sizeof(body),
		 "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"rack\":\"%s\"}},"
		 "\"spec\":{\"rack\":\"%s\"}}",
		 name, rack, rack);
	req("POST", "/v1/nodes", body, "Content-Type: application/json", NULL, &r);
	ASSERT_EQ_HTTP(r.status, 201);
	resp_free(&r);
}

#define TABLE_ACCEPT                                                                      \
	"Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;" \
	"v=v1beta1;g=meta.k8s.io,application/json"
#define B "/apis/fleetplane.io/v1/baremetalnodes"

static void test_discovery(void **state)
{
	struct resp r;
	req("GET", "/apis", NULL,
	    "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
	    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
	    "application/json",
	    NULL, &r);
	ASSERT_EQ_HTTP(r.status, 200);
	assert_true(has_header(&r, "Content-Type: application/json;g=apidiscovery.k8s.io;v=v2;"
				   "as=APIGroupDiscoveryList\r\n"));
	ASSERT_EQ_STR(jsonx_str(r.json, "apiVersion"), "apidiscovery.k8s.io/v2");
	json_t *res0 = json_array_get(jsonx_path(json_array_get(json_object_get(r.json, "items"),
								0),
						 "versions"),
				      0);
	res0 = json_array_get(json_object_get(res0, "resources"), 0);
	ASSERT_EQ_STR(jsonx_str(res0, "resource"), "baremetalnodes");
	ASSERT_EQ_STR(json_string_value(json_array_get(json_object_get(res0, "shortNames"), 0)),
		      "bmn");
	ASSERT_EQ_STR(jsonx_str(res0, "responseKind.kind"), "BareMetalNode");
	resp_free(&r);
	/* kubectl 1.27-1.29 ask for v2beta1 only */
	req("GET", "/apis", NULL,
	    "Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
	    "application/json",
	    NULL, &r);
	assert_true(has_header(&r, "Content-Type: application/json;g=apidiscovery.k8s.io;"
				   "v=v2beta1;as=APIGroupDiscoveryList\r\n"));
	ASSERT_EQ_STR(jsonx_str(r.json, "apiVersion"), "apidiscovery.k8s.io/v2beta1");
	resp_free(&r);
	req("GET", "/apis", NULL, "Accept: application/json, */*", NULL, &r);
	ASSERT_EQ_STR(jsonx_str(r.json, "kind"), "APIGroupList");
	assert_true(has_header(&r, "Content-Type: application/json\r\n"));
	resp_free(&r);
	req("GET", "/apis/fleetplane.io/v1", NULL, NULL, NULL, &r);
	ASSERT_EQ_STR(jsonx_str(r.json, "kind"), "APIResourceList");
	ASSERT_EQ_STR(jsonx_str(json_array_get(json_object_get(r.json, "resources"), 0), "name"),
		      "baremetalnodes");
	resp_free(&r);
	req("GET", "/version?timeout=5s", NULL, NULL, NULL, &r);
	ASSERT_EQ_STR(jsonx_str(r.json, "major"), "1");
	resp_free(&r);
}

static void test_objects_and_tables(void **state)
{
	enroll("r01n01", "r01");
	enroll("r01n02", "r01");
	enroll("r02n01", "r02");
	struct resp r;
	req("GET", B "?limit=2", NULL, NULL, NULL, &r);
	ASSERT_EQ_HTTP(r.status, 200);
	ASSERT_EQ_STR(jsonx_str(r.json, "kind"), "BareMetalNodeList");
	ASSERT_EQ_STR(jsonx_str(r.json, "apiVersion"), "fleetplane.io/v1");
	ASSERT_EQ_INT(json_array_size(json_object_get(r.json, "items")), 2);
	assert_non_null(jsonx_str(r.json, "metadata.continue"));
	json_t *o = json_array_get(json_object_get(r.json, "items"), 0);
	ASSERT_EQ_STR(jsonx_str(o, "kind"), "BareMetalNode");
	ASSERT_EQ_STR(jsonx_str(o, "metadata.name"), "r01n01");
	ASSERT_EQ_INT(json_integer_value(jsonx_path(o, "metadata.generation")), 1);
	const char *ct = jsonx_str(o, "metadata.creationTimestamp");
	assert_non_null(ct);
	ASSERT_EQ_INT(strlen(ct), 20); /* 2026-12-02T14:27:31Z: seconds, no fraction */
	resp_free(&r);
	/* Table: columns with priorities, a row object for -L */
	req("GET", B "?labelSelector=rack+in+(r02,r09)", NULL, TABLE_ACCEPT, NULL, &r);
	ASSERT_EQ_STR(jsonx_str(r.json, "kind"), "Table");
	json_t *cols = json_object_get(r.json, "columnDefinitions");
	ASSERT_EQ_STR(jsonx_str(json_array_get(cols, 1), "name"), "Phase");
	ASSERT_EQ_INT(json_integer_value(jsonx_path(json_array_get(cols, 1), "priority")), 0);
	ASSERT_EQ_INT(json_integer_value(jsonx_path(json_array_get(cols, 7), "priority")), 1);
	json_t *rows = json_object_get(r.json, "rows");
	ASSERT_EQ_INT(json_array_size(rows), 1);
	ASSERT_EQ_STR(json_string_value(
			      json_array_get(json_object_get(json_array_get(rows, 0), "cells"), 0)),
		      "r02n01");
	ASSERT_EQ_STR(jsonx_str(json_array_get(rows, 0), "object.metadata.labels.rack"), "r02");
	assert_non_null(jsonx_str(r.json, "metadata.resourceVersion"));
	resp_free(&r);
	/* fieldSelector */
	req("GET", B "?fieldSelector=metadata.name%3Dr01n02", NULL, NULL, NULL, &r);
	ASSERT_EQ_INT(json_array_size(json_object_get(r.json, "items")), 1);
	resp_free(&r);
	req("GET", B "?fieldSelector=spec.rack%3Dr01", NULL, NULL, NULL, &r);
	ASSERT_EQ_HTTP(r.status, 400);
	ASSERT_EQ_STR(jsonx_str(r.json, "kind"), "Status");
	ASSERT_EQ_STR(jsonx_str(r.json, "reason"), "BadRequest");
	resp_free(&r);
	/* Status 404 with details */
	req("GET", B "/nosuch", NULL, NULL, NULL, &r);
	ASSERT_EQ_HTTP(r.status, 404);
	ASSERT_EQ_STR(jsonx_str(r.json, "reason"), "NotFound");
	ASSERT_EQ_STR(jsonx_str(r.json, "message"),
		      "baremetalnodes.fleetplane.io \"nosuch\" not found");
	ASSERT_EQ_STR(jsonx_str(r.json, "details.name"), "nosuch");
	resp_free(&r);
}

static void test_patch_put(void **state)
{
	enroll("r01n01", "r01");
	struct resp r;
	req("GET", B "/r01n01", NULL, NULL, NULL, &r);
	char rv0[32];
	snprintf(rv0, sizeof(rv0), "%s", jsonx_str(r.json, "metadata.resourceVersion"));
	resp_free(&r);
	/* a merge patch that changes nothing keeps the resourceVersion */
	req("PATCH", B "/r01n01", "{\"metadata\":{\"labels\":{\"rack\":\"r01\"}}}",
	    "Content-Type: application/merge-patch+json", NULL, &r);
	ASSERT_EQ_HTTP(r.status, 200);
	ASSERT_EQ_STR(jsonx_str(r.json, "metadata.resourceVersion"), rv0);
	resp_free(&r);
	/* a label through merge patch, then removed with null */
	req("PATCH", B "/r01n01", "{\"metadata\":{\"labels\":{\"maint\":\"yes\"}}}",
	    "Content-Type: application/merge-patch+json", NULL, &r);
	ASSERT_EQ_HTTP(r.status, 200);
	ASSERT_EQ_STR(jsonx_str(r.json, "metadata.labels.maint"), "yes");
	assert_true(strcmp(jsonx_str(r.json, "metadata.resourceVersion"), rv0) != 0);
	resp_free(&r);
	/* dryRun=All answers the result and stores nothing */
	req("PATCH", B "/r01n01?dryRun=All",
	    "[{\"op\":\"add\",\"path\":\"/spec/pool\",\"value\":\"x\"}]",
	    "Content-Type: application/json-patch+json", NULL, &r);
	ASSERT_EQ_HTTP(r.status, 200);
	ASSERT_EQ_STR(jsonx_str(r.json, "spec.pool"), "x");
	resp_free(&r);
	req("GET", B "/r01n01", NULL, NULL, NULL, &r);
	ASSERT_EQ_STR(jsonx_str(r.json, "spec.pool"), NULL);
	json_t *obj = json_deep_copy(r.json);
	resp_free(&r);
	/* strategic merge directives are refused */
	req("PATCH", B "/r01n01", "{\"metadata\":{\"$patch\":\"replace\"}}",
	    "Content-Type: application/strategic-merge-patch+json", NULL, &r);
	ASSERT_EQ_HTTP(r.status, 415);
	resp_free(&r);
	/* PUT with a stale resourceVersion: 409 Conflict */
	json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string("1"));
	char *s = jsonx_dumps(obj);
	req("PUT", B "/r01n01", s, "Content-Type: application/json", NULL, &r);
	ASSERT_EQ_HTTP(r.status, 409);
	ASSERT_EQ_STR(jsonx_str(r.json, "reason"), "Conflict");
	resp_free(&r);
	free(s);
	json_decref(obj);
	/* a read-only kind */
	req("DELETE", "/apis/fleetplane.io/v1/sites/x", "{\"propagationPolicy\":\"Background\"}",
	    "Content-Type: application/json", NULL, &r);
	ASSERT_EQ_HTTP(r.status, 405);
	resp_free(&r);
}

static void test_unknown_params(void **state)
{
	struct resp r;
	req("GET", B "?labelSelectr=rack", NULL, NULL, NULL, &r);
	ASSERT_EQ_HTTP(r.status, 400);
	ASSERT_EQ_STR(jsonx_str(r.json, "message"), "unknown query parameter labelSelectr");
	resp_free(&r);
	/* the native list refuses fieldSelector (it used to ignore it) */
	req("GET", "/v1/nodes?fieldSelector=metadata.name%3Dx", NULL, NULL, NULL, &r);
	ASSERT_EQ_HTTP(r.status, 400);
	ASSERT_EQ_STR(jsonx_str(r.json, "parameter"), "fieldSelector");
	assert_true(has_header(&r, "Content-Type: application/problem+json"));
	resp_free(&r);
	/* and takes the set-based selector */
	enroll("r01n01", "r01");
	enroll("r02n01", "r02");
	enroll("r03n01", "r03");
	req("GET", "/v1/nodes?labelSelector=rack+in+(r01,r02)", NULL, NULL, NULL, &r);
	ASSERT_EQ_HTTP(r.status, 200);
	ASSERT_EQ_INT(json_array_size(json_object_get(r.json, "items")), 2);
	resp_free(&r);
	req("GET", "/v1/nodes?labelSelector=rack+notin+(r01,r02)", NULL, NULL, NULL, &r);
	ASSERT_EQ_INT(json_array_size(json_object_get(r.json, "items")), 1);
	resp_free(&r);
}

/* A watch from a compacted revision starts and carries one ERROR event with a 410 Expired
 * Status (kubectl then lists again); a watch at 0 starts with ADDED; both end by
 * timeoutSeconds. */
static void test_watch_expired(void **state)
{
	enroll("r01n01", "r01");
	enroll("r01n02", "r01");
	int64_t rev = store_revision(E.st);
	ASSERT_OK(store_compact(E.st, rev));
	struct resp r;
	req("GET", B "?watch=true&resourceVersion=1&timeoutSeconds=1", NULL, NULL, NULL, &r);
	ASSERT_EQ_HTTP(r.status, 200);
	assert_true(has_header(&r, "Content-Type: application/json\r\n"));
	json_t *ev = r.json; /* one line: the whole body parses */
	if (!ev)
		fail_msg("body: %.*s", (int)r.body.len, r.body.data ? r.body.data : "");
	assert_non_null(ev);
	ASSERT_EQ_STR(jsonx_str(ev, "type"), "ERROR");
	ASSERT_EQ_STR(jsonx_str(ev, "object.kind"), "Status");
	ASSERT_EQ_STR(jsonx_str(ev, "object.reason"), "Expired");
	ASSERT_EQ_INT(json_integer_value(jsonx_path(ev, "object.code")), 410);
	resp_free(&r);
	req("GET", B "?watch=1&resourceVersion=0&timeoutSeconds=1&labelSelector=rack%3Dr01", NULL,
	    TABLE_ACCEPT, NULL, &r);
	ASSERT_EQ_HTTP(r.status, 200);
	/* two lines, each a one-row Table of an ADDED node */
	char *nl = r.body.data ? strchr(r.body.data, '\n') : NULL;
	assert_non_null(nl);
	json_t *first = json_loadb(r.body.data, (size_t)(nl - r.body.data), 0, NULL);
	ASSERT_EQ_STR(jsonx_str(first, "type"), "ADDED");
	ASSERT_EQ_STR(jsonx_str(first, "object.kind"), "Table");
	ASSERT_EQ_INT(json_array_size(jsonx_path(first, "object.rows")), 1);
	json_decref(first);
	size_t lines = 0;
	for (size_t i = 0; i < r.body.len; i++)
		lines += r.body.data[i] == '\n';
	ASSERT_EQ_INT(lines, 2);
	resp_free(&r);
}

static json_t *J(const char *s)
{
	json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
	assert_non_null(v);
	return v;
}

static void expect_patch(const char *doc, const char *patch, const char *want)
{
	json_t *d = J(doc), *p = J(patch);
	char err[256] = "";
	json_t *got = jsonpatch_apply(d, p, NULL, err, sizeof(err));
	if (!want) {
		assert_null(got);
		assert_true(err[0] != 0);
	} else {
		json_t *w = J(want);
		if (!got || !json_equal(got, w)) {
			char *g = got ? jsonx_dumps(got) : NULL;
			fail_msg("patch %s on %s: got %s (%s), want %s", patch, doc, g ? g : "NULL",
				 err, want);
		}
		json_decref(w);
	}
	json_decref(got);
	json_decref(d);
	json_decref(p);
}

static void test_jsonpatch(void **state)
{
	/* RFC 6902 appendix A */
	expect_patch("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
		     "{\"baz\":\"qux\",\"foo\":\"bar\"}");
	expect_patch("{\"foo\":[\"bar\",\"baz\"]}",
		     "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
		     "{\"foo\":[\"bar\",\"qux\",\"baz\"]}");
	expect_patch("{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
		     "{\"foo\":\"bar\"}");
	expect_patch(
		"{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
		"[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
		"{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}");
	expect_patch("{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]",
		     NULL);
	expect_patch("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":1}]",
		     NULL);
	expect_patch("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
		     "{\"/\":9,\"~1\":10}");
	expect_patch("{\"foo\":[\"bar\"]}",
		     "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"x\"]}]",
		     "{\"foo\":[\"bar\",[\"x\"]]}");
	expect_patch("{\"foo\":1}", "[{\"op\":\"frob\",\"path\":\"/foo\"}]", NULL);
	/* RFC 7386 section 3 example */
	json_t *t = J("{\"title\":\"Goodbye!\",\"author\":{\"givenName\":\"John\",\"familyName\":"
		      "\"Doe\"},\"tags\":[\"example\",\"sample\"],\"content\":\"This will be "
		      "unchanged\"}");
	json_t *p = J("{\"title\":\"Hello!\",\"phoneNumber\":\"+01-123-456-7890\",\"author\":{"
		      "\"familyName\":null},\"tags\":[\"example\"]}");
	json_t *w = J("{\"title\":\"Hello!\",\"author\":{\"givenName\":\"John\"},\"tags\":["
		      "\"example\"],\"content\":\"This will be unchanged\",\"phoneNumber\":\"+01-"
		      "123-456-7890\"}");
	json_t *got = jsonpatch_merge(t, p, NULL, 0);
	assert_true(json_equal(got, w));
	json_decref(got);
	json_decref(t);
	json_decref(p);
	json_decref(w);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_discovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_objects_and_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_patch_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch_expired, setup, teardown),
		cmocka_unit_test(test_jsonpatch),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
