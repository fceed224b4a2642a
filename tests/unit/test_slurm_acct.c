/* layers: base core store driver engine sched */
/* test_slurm_acct.c - sched/slurm_acct.h: the real `sacct --json -X -a` answer of
 * tests/data/slurm/sacct-X-a.json (SOURCES.md "Accounting") parsed field by field, GPU-seconds
 * per account, user and partition over the whole window and clipped ones (figures worked out
 * from sacct-X-a-P.txt: Start, End, AllocTRES gres/gpu), and the refusals of the parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "sched/slurm_acct.h"

#include "check.h"

#include "base/banned.h"

/* The recorded window: 2026-12-02T04:41:38 .. 04:41:51 UTC. */
#define T0 1796186498
#define T1 1796186511

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

static char *data(const char *name, size_t *len)
{
	char *path = xasprintf("%s/tests/data/slurm/%s", srcdir(), name);
	struct buf b;
	char err[256];
	buf_init(&b, 1u << 20);
	int rc = buf_read_file(&b, path, 0, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s\n", err);
	ASSERT_OK(rc);
	free(path);
	return buf_detach(&b, len);
}

static void parse_real(struct slurm_acct_job **jobs, size_t *n)
{
	size_t len;
	char *s = data("sacct-X-a.json", &len);
	char err[256] = "";
	int rc = slurm_acct_parse(s, len, jobs, n, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s\n", err);
	ASSERT_OK(rc);
	free(s);
}

static void test_parse_real(void **state)
{
	(void)state;
	struct slurm_acct_job *j;
	size_t n;
	parse_real(&j, &n);
	assert_int_equal(n, 6);
	/* 1|r2|root|research|gpu|COMPLETED|04:41:41|04:41:44|...|gres/gpu=2 */
	assert_int_equal(j[0].id, 1);
	ASSERT_EQ_STR(j[0].user, "root");
	ASSERT_EQ_STR(j[0].account, "research");
	ASSERT_EQ_STR(j[0].partition, "gpu");
	ASSERT_EQ_STR(j[0].state, "COMPLETED");
	assert_int_equal(j[0].start, 1796186501);
	assert_int_equal(j[0].end, 1796186504);
	assert_int_equal(j[0].gpus, 2);
	ASSERT_EQ_STR(j[1].account, "ops");
	assert_int_equal(j[1].gpus, 4);
	assert_int_equal(j[1].end - j[1].start, 2);
	/* job 3 asked for no GPU */
	assert_int_equal(j[2].gpus, 0);
	assert_int_equal(j[2].end - j[2].start, 1);
	/* job 4 still runs: end 0 */
	ASSERT_EQ_STR(j[3].state, "RUNNING");
	assert_int_equal(j[3].start, 1796186505);
	assert_int_equal(j[3].end, 0);
	assert_int_equal(j[3].gpus, 8);
	/* job 5 pending: never started, nothing allocated */
	ASSERT_EQ_STR(j[4].state, "PENDING");
	assert_int_equal(j[4].start, 0);
	assert_int_equal(j[4].gpus, 0);
	ASSERT_EQ_STR(j[5].state, "CANCELLED");
	assert_int_equal(j[5].gpus, 1);
	assert_int_equal(j[5].end - j[5].start, 1);
	free(j);
}

static const struct slurm_acct_row *row(const struct slurm_acct_report *r, const char *key)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (strcmp(r->rows[i].key, key) == 0)
			return &r->rows[i];
	fail_msg("no row %s", key);
	return NULL;
}

static void test_aggregate_whole_window(void **state)
{
	(void)state;
	struct slurm_acct_job *j;
	size_t n;
	parse_real(&j, &n);
	struct slurm_acct_report r;
	/* now = T1: the running job 4 counts 8 GPUs x (T1 - 04:41:45) = 8 x 6 = 48 GPU-s */
	slurm_acct_aggregate(j, n, SLURM_ACCT_BY_ACCOUNT, T0, T1, T1, &r);
	assert_int_equal(r.nrows, 2);
	ASSERT_EQ_STR(r.rows[0].key, "ops"); /* sorted */
	assert_int_equal(row(&r, "ops")->gpu_seconds, 4 * 2 + 8 * 6);
	assert_int_equal(row(&r, "ops")->jobs, 2);
	assert_int_equal(row(&r, "research")->gpu_seconds, 2 * 3 + 0 * 1 + 1 * 1);
	assert_int_equal(row(&r, "research")->jobs, 3); /* the pending job is not counted */
	assert_int_equal(r.total.gpu_seconds, 63);
	assert_int_equal(r.total.jobs, 5);
	assert_int_equal(r.from, T0);
	assert_int_equal(r.to, T1);
	json_t *doc = slurm_acct_report_json(&r);
	char *txt = json_dumps(doc, JSON_COMPACT);
	ASSERT_EQ_STR(txt, "{\"items\":[{\"gpuHours\":0.015555555555555555,\"gpuSeconds\":56,"
			   "\"jobs\":2,\"account\":\"ops\"},{\"gpuHours\":0.0019444444444444444,"
			   "\"gpuSeconds\":7,\"jobs\":3,\"account\":\"research\"}],\"total\":{"
			   "\"gpuHours\":0.017500000000000002,\"gpuSeconds\":63,\"jobs\":5}}");
	free(txt);
	json_decref(doc);
	slurm_acct_report_release(&r);
	assert_null(r.rows);

	slurm_acct_aggregate(j, n, SLURM_ACCT_BY_USER, T0, T1, T1, &r);
	assert_int_equal(r.nrows, 1);
	assert_int_equal(row(&r, "root")->gpu_seconds, 63);
	assert_int_equal(row(&r, "root")->jobs, 5);
	slurm_acct_report_release(&r);

	slurm_acct_aggregate(j, n, SLURM_ACCT_BY_PARTITION, T0, T1, T1, &r);
	assert_int_equal(r.nrows, 1);
	assert_int_equal(row(&r, "gpu")->gpu_seconds, 63);
	slurm_acct_report_release(&r);

	/* a later now adds only to the running job: 8 GPUs x 100 s more, clipped at to */
	slurm_acct_aggregate(j, n, SLURM_ACCT_BY_ACCOUNT, T0, T1 + 100, T1 + 100, &r);
	assert_int_equal(row(&r, "ops")->gpu_seconds, 8 + 8 * 106);
	slurm_acct_report_release(&r);
	free(j);
}

static void test_aggregate_clipped(void **state)
{
	(void)state;
	struct slurm_acct_job *j;
	size_t n;
	parse_real(&j, &n);
	struct slurm_acct_report r;
	/* [04:41:43, 04:41:46): job 1 (41..44) 1 s x 2; job 2 (44..46) 2 s x 4; job 4 (45..)
	 * 1 s x 8; job 3 starts at 46 = to: out; job 6 (47..48): out. */
	slurm_acct_aggregate(j, n, SLURM_ACCT_BY_ACCOUNT, 1796186503, 1796186506, T1, &r);
	assert_int_equal(r.nrows, 2);
	assert_int_equal(row(&r, "research")->gpu_seconds, 2);
	assert_int_equal(row(&r, "research")->jobs, 1);
	assert_int_equal(row(&r, "ops")->gpu_seconds, 8 + 8);
	assert_int_equal(row(&r, "ops")->jobs, 2);
	slurm_acct_report_release(&r);
	/* [04:41:44, ...): job 1 ended at 44 = from: out */
	slurm_acct_aggregate(j, n, SLURM_ACCT_BY_ACCOUNT, 1796186504, 1796186505, T1, &r);
	assert_int_equal(r.nrows, 1);
	assert_int_equal(row(&r, "ops")->gpu_seconds, 4);
	slurm_acct_report_release(&r);
	/* before every job */
	slurm_acct_aggregate(j, n, SLURM_ACCT_BY_USER, 0, T0, T1, &r);
	assert_int_equal(r.nrows, 0);
	assert_int_equal(r.total.gpu_seconds, 0);
	slurm_acct_report_release(&r);
	free(j);
}

static void test_parse_empty(void **state)
{
	(void)state;
	size_t len;
	char *s = data("sacct-X-a-empty.json", &len);
	struct slurm_acct_job *j = (void *)1;
	size_t n = 9;
	ASSERT_OK(slurm_acct_parse(s, len, &j, &n, NULL, 0));
	assert_null(j);
	assert_int_equal(n, 0);
	struct slurm_acct_report r;
	slurm_acct_aggregate(j, n, SLURM_ACCT_BY_ACCOUNT, 0, 10, 10, &r);
	assert_int_equal(r.nrows, 0);
	free(s);
}

static int parse_str(const char *s, char *err, size_t errlen)
{
	struct slurm_acct_job *j;
	size_t n;
	int rc = slurm_acct_parse(s, strlen(s), &j, &n, err, errlen);
	if (rc < 0) {
		assert_null(j);
		assert_int_equal(n, 0);
	}
	free(j);
	return rc;
}

#define JOB(fields) "{\"errors\":[],\"jobs\":[" fields "]}"
#define OKJOB_HEAD "{\"job_id\":7,\"user\":\"u\",\"account\":\"a\",\"partition\":\"p\","
#define OKJOB_STATE "\"state\":{\"current\":\"COMPLETED\"},"

static void test_parse_refusals(void **state)
{
	(void)state;
	char err[256];
	ASSERT_EQ_ERR(parse_str("{", err, sizeof(err)), FP_EPARSE);
	ASSERT_EQ_ERR(parse_str("[]", err, sizeof(err)), FP_EPARSE);
	ASSERT_EQ_ERR(parse_str("{\"errors\":[]}", err, sizeof(err)), FP_EPARSE);
	assert_non_null(strstr(err, "no \"jobs\""));
	ASSERT_EQ_ERR(parse_str("{\"errors\":[{\"error\":\"Unable to connect to database\"}],"
				"\"jobs\":[]}",
				err, sizeof(err)),
		      FP_EIO);
	assert_non_null(strstr(err, "Unable to connect to database"));
	ASSERT_EQ_ERR(parse_str(JOB("{\"user\":\"u\"}"), err, sizeof(err)), FP_EPARSE);
	ASSERT_EQ_STR(err, "job 0: no \"job_id\"");
	ASSERT_EQ_ERR(parse_str(JOB(OKJOB_HEAD OKJOB_STATE "\"time\":{\"start\":5,\"end\":4}}"),
				err, sizeof(err)),
		      FP_EPARSE);
	assert_non_null(strstr(err, "before start"));
	ASSERT_EQ_ERR(parse_str(JOB(OKJOB_HEAD OKJOB_STATE "\"time\":{\"start\":-1,\"end\":4}}"),
				err, sizeof(err)),
		      FP_EPARSE);
	ASSERT_EQ_STR(err, "job 0: \"time.start\" is not an integer >= 0");
	ASSERT_EQ_ERR(parse_str(JOB(OKJOB_HEAD OKJOB_STATE
				    "\"time\":{\"start\":1,\"end\":4},\"tres\":{\"allocated\":"
				    "[{\"type\":\"gres\",\"name\":\"gpu\",\"count\":-2}]}}"),
				err, sizeof(err)),
		      FP_EPARSE);
	assert_non_null(strstr(err, "gres/gpu count"));
	ASSERT_EQ_ERR(parse_str(JOB(OKJOB_HEAD OKJOB_STATE
				    "\"time\":{\"start\":1,\"end\":4},\"tres\":{\"allocated\":"
				    "[{\"type\":\"gres\",\"name\":\"gpu\",\"count\":1},"
				    "{\"type\":\"gres\",\"name\":\"gpu\",\"count\":1}]}}"),
				err, sizeof(err)),
		      FP_EPARSE);
	ASSERT_EQ_ERR(parse_str(JOB("{\"job_id\":1,\"user\":\"a\\u0001b\"," OKJOB_STATE
				    "\"time\":{\"start\":1,\"end\":4}}"),
				err, sizeof(err)),
		      FP_EPARSE);
	assert_non_null(strstr(err, "control byte"));
	ASSERT_EQ_ERR(parse_str(JOB("{\"job_id\":1,\"user\":\"a\\u0000b\"," OKJOB_STATE
				    "\"time\":{\"start\":1,\"end\":4}}"),
				err, sizeof(err)),
		      FP_EPARSE);
	char *longname = xcalloc(1, SLURM_ACCT_NAME_MAX + 2);
	memset(longname, 'x', SLURM_ACCT_NAME_MAX + 1);
	char *doc = xasprintf(JOB("{\"job_id\":1,\"user\":\"%s\"," OKJOB_STATE
				  "\"time\":{\"start\":1,\"end\":4}}"),
			      longname);
	ASSERT_EQ_ERR(parse_str(doc, err, sizeof(err)), FP_EPARSE);
	assert_non_null(strstr(err, "longer than 128 bytes"));
	free(doc);
	longname[SLURM_ACCT_NAME_MAX] = '\0'; /* exactly the bound: accepted */
	doc = xasprintf(JOB("{\"job_id\":1,\"user\":\"%s\"," OKJOB_STATE
			    "\"time\":{\"start\":1,\"end\":4}}"),
			longname);
	ASSERT_OK(parse_str(doc, err, sizeof(err)));
	free(doc);
	free(longname);
	/* typed GPUs and null names count nothing; account and partition may be null */
	struct slurm_acct_job *j;
	size_t n;
	const char *typed = JOB("{\"job_id\":1,\"user\":\"u\",\"account\":null," OKJOB_STATE
				"\"time\":{\"start\":1,\"end\":4},\"tres\":{\"allocated\":["
				"{\"type\":\"gres\",\"name\":\"gpu:a100\",\"count\":2},"
				"{\"type\":\"gres\",\"name\":\"gpu\",\"count\":3},"
				"{\"type\":\"energy\",\"name\":null,\"count\":null}]}}");
	ASSERT_OK(slurm_acct_parse(typed, strlen(typed), &j, &n, err, sizeof(err)));
	assert_int_equal(n, 1);
	assert_int_equal(j[0].gpus, 3);
	ASSERT_EQ_STR(j[0].account, "");
	ASSERT_EQ_STR(j[0].partition, "");
	free(j);
}

static void test_parse_too_many(void **state)
{
	(void)state;
	struct buf b;
	buf_init(&b, 0);
	buf_append(&b, "{\"jobs\":[", 9);
	for (unsigned i = 0; i <= SLURM_ACCT_MAX_JOBS; i++)
		buf_append(&b, i ? ",{}" : "{}", i ? 3 : 2);
	buf_append(&b, "]}", 2);
	struct slurm_acct_job *j;
	size_t n;
	char err[256];
	ASSERT_EQ_ERR(slurm_acct_parse(b.data, b.len, &j, &n, err, sizeof(err)), FP_ETOOBIG);
	ASSERT_EQ_STR(err, "sacct listed 100001 jobs, over 100000");
	buf_release(&b);
}

static void test_by_names(void **state)
{
	(void)state;
	enum slurm_acct_by by;
	ASSERT_OK(slurm_acct_by_parse("user", &by));
	assert_int_equal(by, SLURM_ACCT_BY_USER);
	ASSERT_OK(slurm_acct_by_parse("partition", &by));
	assert_int_equal(by, SLURM_ACCT_BY_PARTITION);
	ASSERT_OK(slurm_acct_by_parse("account", &by));
	assert_int_equal(by, SLURM_ACCT_BY_ACCOUNT);
	ASSERT_EQ_ERR(slurm_acct_by_parse("Account", &by), FP_EINVAL);
	ASSERT_EQ_ERR(slurm_acct_by_parse(NULL, &by), FP_EINVAL);
	assert_null(slurm_acct_by_name((enum slurm_acct_by)7));
}

static void test_usage_refusals(void **state)
{
	(void)state;
	struct slurm_acct *a;
	char err[256];
	struct slurm_acct_config bad = {.slurm_conf = "relative/slurm.conf"};
	ASSERT_EQ_ERR(slurm_acct_new(&bad, &a, err, sizeof(err)), FP_EINVAL);
	assert_null(a);
	struct slurm_acct_config big = {.max_out = SLURM_ACCT_MAX_OUT + 1};
	ASSERT_EQ_ERR(slurm_acct_new(&big, &a, err, sizeof(err)), FP_EINVAL);
	/* a bindir without sacct: FP_ENOTFOUND from the run */
	struct slurm_acct_config cfg = {.bindir = "/nonexistent-fp-bin", .timeout_ms = 5000};
	ASSERT_OK(slurm_acct_new(&cfg, &a, err, sizeof(err)));
	struct slurm_acct_report r;
	ASSERT_EQ_ERR(slurm_acct_usage(a, 10, 10, 10, SLURM_ACCT_BY_USER, &r, err, sizeof(err)),
		      FP_EINVAL);
	ASSERT_EQ_ERR(slurm_acct_usage(a, 0, SLURM_ACCT_MAX_WINDOW_S + 1, 10, SLURM_ACCT_BY_USER,
				       &r, err, sizeof(err)),
		      FP_EINVAL);
	assert_non_null(strstr(err, "366 days"));
	ASSERT_EQ_ERR(slurm_acct_usage(a, 0, 3600, 10, SLURM_ACCT_BY_USER, &r, err, sizeof(err)),
		      FP_ENOTFOUND);
	assert_null(r.rows);
	slurm_acct_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_real),
		cmocka_unit_test(test_aggregate_whole_window),
		cmocka_unit_test(test_aggregate_clipped),
		cmocka_unit_test(test_parse_empty),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_parse_too_many),
		cmocka_unit_test(test_by_names),
		cmocka_unit_test(test_usage_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
