/* layers: base core store driver engine sched */
/* test_slurm_tenant.c - tenants' GPU quotas: the Tenant document codec (core/tenant.h), the
 * running-GPU count from the real `squeue --json` of tests/data/slurm/squeue-quota.json (job 1
 * of ops RUNNING with gres/gpu=3; jobs 2 and 3 PENDING), and the quota loop
 * (sched/slurm_tenant.h) over an in-memory store with a fake sacctmgr that logs its argv and
 * fails for the account "broken": what it runs on create, no change, change, two tenants on one
 * account, delete, and a failing account retried. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "core/tenant.h"
#include "sched/slurm_acct.h"
#include "sched/slurm_tenant.h"
#include "store/store.h"

#include "check.h"

#include "base/banned.h"

static int decode(const char *text, const char *path_name, struct tenant *t, char *err,
		  size_t errlen)
{
	json_t *doc = json_loads(text, 0, NULL);
	assert_non_null(doc);
	int rc = tenant_from_json(doc, path_name, t, err, errlen);
	json_decref(doc);
	return rc;
}

static void test_tenant_codec(void **state)
{
	(void)state;
	struct tenant t;
	char err[256];
	ASSERT_OK(decode("{\"spec\":{\"slurmAccount\":\"ops\",\"gpuQuota\":4}}", "team-ops", &t,
			 err, sizeof(err)));
	ASSERT_EQ_STR(t.name, "team-ops");
	ASSERT_EQ_STR(t.account, "ops");
	assert_int_equal(t.quota, 4);
	ASSERT_OK(decode(
		"{\"kind\":\"Tenant\",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"},"
		"\"spec\":{\"slurmAccount\":\"a.b_c-1\",\"gpuQuota\":null},\"status\":{}}",
		NULL, &t, err, sizeof(err)));
	assert_int_equal(t.quota, -1);
	json_t *doc = tenant_to_json(&t);
	char *s = json_dumps(doc, JSON_COMPACT);
	ASSERT_EQ_STR(
		s, "{\"kind\":\"Tenant\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"slurmAccount\":"
		   "\"a.b_c-1\",\"gpuQuota\":null}}");
	free(s);
	json_decref(doc);

	static const struct {
		const char *doc, *err;
	} bad[] = {
		{"{\"spec\":{\"slurmAccount\":\"Ops\"}}", "spec.slurmAccount: expected"},
		{"{\"spec\":{\"slurmAccount\":\"-x\"}}", "spec.slurmAccount: expected"},
		{"{\"spec\":{\"slurmAccount\":\"\"}}", "spec.slurmAccount: expected"},
		{"{\"spec\":{\"slurmAccount\":\"a b\"}}", "spec.slurmAccount: expected"},
		{"{\"spec\":{\"slurmAccount\":\"ops\",\"gpuQuota\":-1}}",
		 "spec.gpuQuota: expected"},
		{"{\"spec\":{\"slurmAccount\":\"ops\",\"gpuQuota\":1000001}}", "spec.gpuQuota"},
		{"{\"spec\":{\"slurmAccount\":\"ops\",\"gpuQuota\":\"4\"}}", "spec.gpuQuota"},
		{"{\"spec\":{\"slurmAccount\":\"ops\",\"qos\":1}}", "spec.qos: unknown field"},
		{"{\"spec\":{}}", "spec.slurmAccount"},
		{"{}", "spec: required object"},
		{"{\"kind\":\"Node\",\"spec\":{\"slurmAccount\":\"ops\"}}", "kind: expected"},
		{"{\"metadata\":{\"name\":\"other\"},\"spec\":{\"slurmAccount\":\"ops\"}}",
		 "metadata.name: other is not the name in the path (team-ops)"},
		{"{\"extra\":1,\"spec\":{\"slurmAccount\":\"ops\"}}", "extra: unknown field"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ASSERT_EQ_ERR(decode(bad[i].doc, "team-ops", &t, err, sizeof(err)), FP_EINVAL);
		if (!strstr(err, bad[i].err))
			fail_msg("%s: error \"%s\" lacks \"%s\"", bad[i].doc, err, bad[i].err);
	}
	/* 64 bytes of account: accepted; 65: refused */
	char acc[80], text[160];
	memset(acc, 'a', 65);
	acc[64] = '\0';
	snprintf(text, sizeof(text), "{\"spec\":{\"slurmAccount\":\"%s\"}}", acc);
	ASSERT_OK(decode(text, "x", &t, err, sizeof(err)));
	acc[64] = 'a';
	acc[65] = '\0';
	snprintf(text, sizeof(text), "{\"spec\":{\"slurmAccount\":\"%s\"}}", acc);
	ASSERT_EQ_ERR(decode(text, "x", &t, err, sizeof(err)), FP_EINVAL);
}

static char *data(const char *name, size_t *len)
{
	const char *src = getenv("FP_SRCDIR");
	char *path = xasprintf("%s/tests/data/slurm/%s", src && src[0] ? src : ".", name);
	struct buf b;
	char err[256];
	buf_init(&b, 1u << 20);
	ASSERT_OK(buf_read_file(&b, path, 0, err, sizeof(err)));
	free(path);
	return buf_detach(&b, len);
}

static void test_running_gpus_real(void **state)
{
	(void)state;
	size_t len, jobs;
	int64_t gpus;
	char err[256];
	char *s = data("squeue-quota.json", &len);
	ASSERT_OK(slurm_acct_parse_running_gpus(s, len, "ops", &gpus, &jobs, err, sizeof(err)));
	assert_int_equal(gpus, 3); /* job 1; job 2 (gpu:5) is PENDING AssocGrpGRES */
	assert_int_equal(jobs, 1);
	ASSERT_OK(
		slurm_acct_parse_running_gpus(s, len, "research", &gpus, &jobs, err, sizeof(err)));
	assert_int_equal(gpus, 0);
	assert_int_equal(jobs, 0);
	free(s);
	const char *bad = "{\"jobs\":[{\"account\":\"ops\",\"job_state\":\"RUNNING\","
			  "\"tres_alloc_str\":\"gres/gpu=x\"}]}";
	ASSERT_EQ_ERR(slurm_acct_parse_running_gpus(bad, strlen(bad), "ops", &gpus, &jobs, err,
						    sizeof(err)),
		      FP_EPARSE);
	assert_int_equal(gpus, 0);
	ASSERT_EQ_ERR(slurm_acct_parse_running_gpus("[", 1, "ops", &gpus, &jobs, err, sizeof(err)),
		      FP_EPARSE);
	const char *two = "{\"jobs\":[{\"account\":\"ops\",\"job_state\":\"RUNNING\","
			  "\"tres_alloc_str\":\"cpu=2,gres/gpu=2\"},{\"account\":\"ops\","
			  "\"job_state\":\"RUNNING\",\"tres_alloc_str\":\"cpu=1\"}]}";
	ASSERT_OK(slurm_acct_parse_running_gpus(two, strlen(two), "ops", &gpus, &jobs, err,
						sizeof(err)));
	assert_int_equal(gpus, 2);
	assert_int_equal(jobs, 2);
}

static struct {
	char dir[64], log[96];
	struct store *st;
	struct slurm_acct *acct;
	struct slurm_tenant_sync *sync;
} W;

static int setup(void **state)
{
	char err[256];
	memset(&W, 0, sizeof(W));
	snprintf(W.dir, sizeof(W.dir), "/tmp/fp-tenant-XXXXXX");
	assert_non_null(mkdtemp(W.dir));
	snprintf(W.log, sizeof(W.log), "%s/log", W.dir);
	char *path = xasprintf("%s/sacctmgr", W.dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	/* logs "ACCOUNT SET" per call; the account "broken" fails like an unknown one */
	fprintf(f,
		"#!/bin/sh\necho \"${5#name=} ${7#GrpTRES=}\" >>%s\n"
		"[ \"$5\" = name=broken ] && { echo ' Nothing modified'; exit 1; }\n"
		"echo ' Modified account associations...'\n",
		W.log);
	fclose(f);
	chmod(path, 0755);
	free(path);
	ASSERT_OK(store_open("mem:", &W.st, err, sizeof(err)));
	struct slurm_acct_config ac = {.bindir = W.dir};
	ASSERT_OK(slurm_acct_new(&ac, &W.acct, err, sizeof(err)));
	return 0;
}

static int teardown(void **state)
{
	slurm_tenant_sync_free(W.sync);
	slurm_acct_free(W.acct);
	store_close(W.st);
	char *p = xasprintf("%s/sacctmgr", W.dir);
	unlink(p);
	free(p);
	unlink(W.log);
	rmdir(W.dir);
	return 0;
}

static void put(const char *name, const char *account, long quota)
{
	struct tenant t = {.quota = quota};
	snprintf(t.name, sizeof(t.name), "%s", name);
	snprintf(t.account, sizeof(t.account), "%s", account);
	json_t *doc = tenant_to_json(&t);
	char *s = json_dumps(doc, JSON_COMPACT);
	char key[128];
	snprintf(key, sizeof(key), "/tenants/%s", name);
	ASSERT_OK(store_put(W.st, key, s, STORE_ANY, NULL));
	free(s);
	json_decref(doc);
}

static void del(const char *name)
{
	char key[128];
	snprintf(key, sizeof(key), "/tenants/%s", name);
	ASSERT_OK(store_delete(W.st, key, STORE_ANY, NULL));
}

/* The fake sacctmgr's calls since the last look, one "ACCOUNT GRES" a line, sorted. */
static char *calls(void)
{
	static char out[1024];
	char *cmd = xasprintf("sort %s 2>/dev/null | tr '\\n' ';'; : >%s", W.log, W.log);
	FILE *p = popen(cmd, "r");
	free(cmd);
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

static void test_sync_pass_by_pass(void **state)
{
	(void)state;
	char err[256];
	struct slurm_tenant_sync_config bad = {.store = W.st, .acct = W.acct, .interval_ms = 10};
	assert_null(slurm_tenant_sync_start(&bad, err, sizeof(err)));
	assert_non_null(strstr(err, "interval_ms 10"));
	struct slurm_tenant_sync_config cfg = {.store = W.st, .acct = W.acct, .interval_ms = 1000};
	W.sync = slurm_tenant_sync_start(&cfg, err, sizeof(err));
	assert_non_null(W.sync);

	assert_int_equal(slurm_tenant_sync_pass(W.sync), 0); /* no tenants */
	ASSERT_EQ_STR(calls(), "");
	put("team-ops", "ops", 4);
	put("team-research", "research", -1);
	assert_int_equal(slurm_tenant_sync_pass(W.sync), 2);
	ASSERT_EQ_STR(calls(), "ops gres/gpu=4;research gres/gpu=-1;");
	assert_int_equal(slurm_tenant_sync_pass(W.sync), 0); /* nothing changed: nothing run */
	ASSERT_EQ_STR(calls(), "");
	put("team-ops", "ops", 6);
	assert_int_equal(slurm_tenant_sync_pass(W.sync), 1);
	ASSERT_EQ_STR(calls(), "ops gres/gpu=6;");
	put("team-b", "ops", 3); /* two tenants on ops: the smaller quota */
	slurm_tenant_sync_pass(W.sync);
	ASSERT_EQ_STR(calls(), "ops gres/gpu=3;");
	del("team-b");
	slurm_tenant_sync_pass(W.sync);
	ASSERT_EQ_STR(calls(), "ops gres/gpu=6;");
	/* an account sacctmgr refuses is retried every pass */
	put("team-x", "broken", 2);
	assert_int_equal(slurm_tenant_sync_pass(W.sync), 0);
	ASSERT_EQ_STR(calls(), "broken gres/gpu=2;");
	assert_int_equal(slurm_tenant_sync_pass(W.sync), 0);
	ASSERT_EQ_STR(calls(), "broken gres/gpu=2;");
	del("team-x"); /* never applied: nothing to clear */
	slurm_tenant_sync_pass(W.sync);
	ASSERT_EQ_STR(calls(), "");
	/* a deleted tenant's quota is cleared; research had none: nothing to clear */
	del("team-ops");
	del("team-research");
	assert_int_equal(slurm_tenant_sync_pass(W.sync), 1);
	ASSERT_EQ_STR(calls(), "ops gres/gpu=-1;");
	assert_int_equal(slurm_tenant_sync_pass(W.sync), 0);
	ASSERT_EQ_STR(calls(), "");
	/* a document that does not decode is skipped */
	ASSERT_OK(store_put(W.st, "/tenants/junk", "{\"spec\":{}}", STORE_ANY, NULL));
	assert_int_equal(slurm_tenant_sync_pass(W.sync), 0);
	ASSERT_EQ_STR(calls(), "");
}

static void test_sync_thread(void **state)
{
	(void)state;
	char err[256];
	put("team-ops", "ops", 4);
	struct slurm_tenant_sync_config cfg = {.store = W.st,
					       .acct = W.acct,
					       .interval_ms = 100,
					       .threaded = 1};
	W.sync = slurm_tenant_sync_start(&cfg, err, sizeof(err));
	assert_non_null(W.sync);
	/* bounded wait for the thread's first pass (not a timing assertion) */
	struct stat sb;
	for (int i = 0; i < 500 && (stat(W.log, &sb) != 0 || sb.st_size == 0); i++)
		usleep(10000);
	slurm_tenant_sync_free(W.sync);
	W.sync = NULL;
	ASSERT_EQ_STR(calls(), "ops gres/gpu=4;"); /* once: later passes found nothing new */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tenant_codec),
		cmocka_unit_test(test_running_gpus_real),
		cmocka_unit_test_setup_teardown(test_sync_pass_by_pass, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_thread, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
