/* layers: base core store driver engine api */
/* test_api_usage.c - GET /v1/usage (api/api_usage.c) over a real API server on loopback with
 * a fake usage source: the parameters reach the source as unix seconds and the `by` name, the
 * answer carries the source's items with from/to/by added, an unknown token is 401, and the
 * refusals: 400 naming from, to or by (missing, malformed, empty or reversed window, over 366
 * days), 503 naming --slurm without a source, 400/502 for the source's FP_EINVAL/other
 * errors. The real source (sacct) is tests/integration/test_slurm_usage.sh's. */
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
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "store/store.h"

#include "check.h"

#include "base/banned.h"

static struct {
	char dir[64];
	struct store *st;
	struct api_server *srv;
	unsigned port;
	char admin[256];
	/* the fake source */
	int calls;
	int64_t from, to, now;
	char by[32];
	int rc;
} E;

static int fake_usage(void *arg, int64_t from_s, int64_t to_s, int64_t now_s, const char *by,
		      json_t **out, char *err, size_t errlen)
{
	E.calls++;
	E.from = from_s;
	E.to = to_s;
	E.now = now_s;
	snprintf(E.by, sizeof(E.by), "%s", by);
	if (E.rc < 0) {
		*out = NULL;
		return fp_errf(E.rc, err, errlen, "sacct: exit 1: \"slurmdbd down\"");
	}
	*out = json_pack("{s:[{s:s,s:I,s:f,s:i}],s:{s:I,s:f,s:i}}", "items", by, "ops",
			 "gpuSeconds", (json_int_t)56, "gpuHours", 56 / 3600.0, "jobs", 2, "total",
			 "gpuSeconds", (json_int_t)56, "gpuHours", 56 / 3600.0, "jobs", 2);
	return 0;
}

static json_t *fake_tenant_status(void *arg, const char *account, long quota)
{
	return json_pack("{s:s,s:i,s:i}", "account", account, "gpuQuota", (int)quota, "gpusInUse",
			 3);
}

static void start(int with_source)
{
	char err[256] = "";
	struct api_config cfg = {0};
	cfg.listen = "127.0.0.1:0";
	cfg.store = E.st;
	cfg.data_dir = E.dir;
	if (with_source) {
		cfg.usage = (struct api_usage_source){.usage = fake_usage};
		cfg.tenants = (struct api_tenant_hooks){.status = fake_tenant_status};
	}
	E.srv = api_server_new(&cfg, err, sizeof(err));
	if (!E.srv)
		fail_msg("api_server_new: %s", err);
	E.port = api_server_port(E.srv);
	char path[128];
	snprintf(path, sizeof(path), "%s/admin.token", E.dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(E.admin, (int)sizeof(E.admin), f));
	fclose(f);
	E.admin[strcspn(E.admin, "\n")] = 0;
}

static int setup(void **state)
{
	char err[256];
	memset(&E, 0, sizeof(E));
	snprintf(E.dir, sizeof(E.dir), "/tmp/fp-api-usage-XXXXXX");
	assert_non_null(mkdtemp(E.dir));
	assert_int_equal(store_open("mem:", &E.st, err, sizeof(err)), 0);
	return 0;
}

static int teardown(void **state)
{
	api_server_free(E.srv);
	store_close(E.st);
	char path[128];
	snprintf(path, sizeof(path), "%s/admin.token", E.dir);
	unlink(path);
	rmdir(E.dir);
	return 0;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	buf_append(ud, p, sz * n);
	return sz * n;
}

/* method path [body] with token (NULL: admin); *doc the JSON answer (json_decref it). */
static long call(const char *method, const char *path, const char *body, const char *token,
		 json_t **doc)
{
	CURL *h = curl_easy_init();
	struct buf resp;
	buf_init(&resp, 0);
	char url[512], auth[300];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", E.port, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token ? token : E.admin);
	struct curl_slist *hl = curl_slist_append(NULL, auth);
	if (body) {
		hl = curl_slist_append(hl, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	CURLcode cc = curl_easy_perform(h);
	if (cc != CURLE_OK)
		fail_msg("GET %s: %s", path, curl_easy_strerror(cc));
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	*doc = resp.len ? json_loadb(resp.data, resp.len, 0, NULL) : NULL;
	buf_release(&resp);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return status;
}

static long get(const char *path, const char *token, json_t **doc)
{
	return call("GET", path, NULL, token, doc);
}

static const char *str(const json_t *doc, const char *key)
{
	const char *s = json_string_value(json_object_get(doc, key));
	return s ? s : "(none)";
}

static void expect_400(const char *path, const char *param)
{
	json_t *doc;
	long st = get(path, NULL, &doc);
	if (st != 400)
		fail_msg("%s: status %ld, want 400", path, st);
	ASSERT_EQ_STR(str(doc, "parameter"), param);
	json_decref(doc);
}

static void test_usage_route(void **state)
{
	start(1);
	json_t *doc;
	/* RFC 3339 and unix seconds; by passes through */
	assert_int_equal(get("/v1/usage?from=2026-12-01T00:00:00Z&to=1796186511&by=user", NULL,
			     &doc),
			 200);
	assert_int_equal(E.calls, 1);
	assert_int_equal(E.from, 1796083200); /* 2026-12-01T00:00:00Z */
	assert_int_equal(E.to, 1796186511);
	ASSERT_EQ_STR(E.by, "user");
	assert_true(E.now > 1700000000); /* the server's wall clock, in seconds */
	ASSERT_EQ_STR(str(doc, "from"), "2026-12-01T00:00:00.000Z");
	ASSERT_EQ_STR(str(doc, "to"), "2026-12-02T04:41:51.000Z");
	ASSERT_EQ_STR(str(doc, "by"), "user");
	const json_t *it = json_array_get(json_object_get(doc, "items"), 0);
	ASSERT_EQ_STR(str(it, "user"), "ops");
	assert_int_equal(json_integer_value(json_object_get(it, "gpuSeconds")), 56);
	json_decref(doc);
	/* an offset is read as the instant it names */
	assert_int_equal(get("/v1/usage?from=2026-12-01T02:00:00%2B02:00&to=1796186511&by=account",
			     NULL, &doc),
			 200);
	assert_int_equal(E.from, 1796083200);
	json_decref(doc);

	expect_400("/v1/usage?to=10&by=account", "from");
	expect_400("/v1/usage?from=&to=10&by=account", "from");
	expect_400("/v1/usage?from=yesterday&to=10&by=account", "from");
	expect_400("/v1/usage?from=-5&to=10&by=account", "from");
	expect_400("/v1/usage?from=2026-13-01T00:00:00Z&to=10&by=account", "from");
	expect_400("/v1/usage?from=0&by=account", "to");
	expect_400("/v1/usage?from=0&to=10", "by");
	expect_400("/v1/usage?from=0&to=10&by=qos", "by");
	expect_400("/v1/usage?from=10&to=10&by=user", "to");
	expect_400("/v1/usage?from=0&to=31622401&by=user", "from"); /* 366 days + 1 s */
	assert_int_equal(E.calls, 2);                               /* none reached the source */
	assert_int_equal(get("/v1/usage?from=0&to=31622400&by=user", NULL, &doc), 200);
	json_decref(doc);

	/* the source's errors */
	E.rc = FP_EIO;
	assert_int_equal(get("/v1/usage?from=0&to=10&by=user", NULL, &doc), 502);
	assert_non_null(strstr(str(doc, "detail"), "slurmdbd down"));
	json_decref(doc);
	E.rc = FP_EINVAL;
	assert_int_equal(get("/v1/usage?from=0&to=10&by=user", NULL, &doc), 400);
	json_decref(doc);

	/* an unknown token: 401 before the source */
	E.rc = 0;
	int calls = E.calls;
	assert_int_equal(get("/v1/usage?from=0&to=10&by=user", "nonsense-token", &doc), 401);
	json_decref(doc);
	assert_int_equal(E.calls, calls);
}

static void test_usage_without_source(void **state)
{
	start(0);
	json_t *doc;
	assert_int_equal(get("/v1/usage?from=0&to=10&by=account", NULL, &doc), 503);
	assert_non_null(strstr(str(doc, "detail"), "--slurm"));
	json_decref(doc);
	/* the parameters are checked first */
	expect_400("/v1/usage?from=0&to=10&by=nope", "by");
}

static long status_of(const char *method, const char *path, const char *body, json_t **doc)
{
	return call(method, path, body, NULL, doc);
}

static void test_tenants(void **state)
{
	start(1);
	json_t *doc;
	const char *t4 = "{\"spec\":{\"slurmAccount\":\"ops\",\"gpuQuota\":4}}";
	assert_int_equal(status_of("PUT", "/v1/tenants/team-ops", t4, &doc), 201);
	ASSERT_EQ_STR(str(json_object_get(doc, "metadata"), "name"), "team-ops");
	const char *rv1 = str(json_object_get(doc, "metadata"), "resourceVersion");
	char stale[160];
	snprintf(stale, sizeof(stale),
		 "{\"metadata\":{\"resourceVersion\":\"%s\"},\"spec\":{\"slurmAccount\":"
		 "\"ops\",\"gpuQuota\":6}}",
		 rv1);
	json_decref(doc);
	assert_int_equal(status_of("PUT", "/v1/tenants/team-ops", t4, &doc), 200); /* replace */
	json_decref(doc);
	assert_int_equal(status_of("PUT", "/v1/tenants/team-ops", stale, &doc), 409); /* CAS */
	json_decref(doc);
	/* GET: the hook's status for the tenant's account and quota */
	assert_int_equal(get("/v1/tenants/team-ops", NULL, &doc), 200);
	const json_t *st = json_object_get(doc, "status");
	ASSERT_EQ_STR(str(st, "account"), "ops");
	assert_int_equal(json_integer_value(json_object_get(st, "gpuQuota")), 4);
	json_decref(doc);
	assert_int_equal(get("/v1/tenants", NULL, &doc), 200);
	assert_int_equal(json_array_size(json_object_get(doc, "items")), 1);
	assert_null(json_object_get(json_array_get(json_object_get(doc, "items"), 0), "status"));
	json_decref(doc);
	/* refusals */
	assert_int_equal(status_of("PUT", "/v1/tenants/team-ops",
				   "{\"spec\":{\"slurmAccount\":\"ops\",\"gpuQuota\":-1}}", &doc),
			 422);
	ASSERT_EQ_STR(str(doc, "field"), "spec.gpuQuota");
	json_decref(doc);
	assert_int_equal(status_of("PUT", "/v1/tenants/other",
				   "{\"metadata\":{\"name\":\"team-ops\"},\"spec\":{"
				   "\"slurmAccount\":\"ops\"}}",
				   &doc),
			 422);
	ASSERT_EQ_STR(str(doc, "field"), "metadata.name");
	json_decref(doc);
	assert_int_equal(status_of("PUT", "/v1/tenants/Bad_Name", t4, &doc), 400);
	ASSERT_EQ_STR(str(doc, "parameter"), "name");
	json_decref(doc);
	assert_int_equal(status_of("PUT", "/v1/tenants/x", "[1]", &doc), 400);
	json_decref(doc);
	/* delete, then 404 */
	assert_int_equal(status_of("DELETE", "/v1/tenants/team-ops", NULL, &doc), 200);
	json_decref(doc);
	assert_int_equal(get("/v1/tenants/team-ops", NULL, &doc), 404);
	json_decref(doc);
	assert_int_equal(status_of("DELETE", "/v1/tenants/team-ops", NULL, &doc), 404);
	json_decref(doc);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_usage_route, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_without_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
