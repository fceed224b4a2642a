/* sched/slurm_acct.c - GPU metering from sacct (sched/slurm_acct.h): the job records parsed
 * with jansson, the window sum (sort by key, then fold), and the sacct run by argv with the
 * environment built once. */
#include "sched/slurm_acct.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/proc.h"

#include "sched/slurm_tool.h"

#include "base/banned.h"

#define QUOTE_MAX 200 /* bytes of a tool's message quoted into err */

static int has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* The string field key of o (null or absent -> "" when optional) into dst. */
static int get_name(const json_t *o, const char *key, int optional, char *dst, size_t cap,
		    size_t idx, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, key);
	dst[0] = '\0';
	if (!v || json_is_null(v)) {
		if (optional)
			return 0;
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: no \"%s\"", idx, key);
	}
	if (!json_is_string(v))
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: \"%s\" is not a string", idx, key);
	const char *s = json_string_value(v);
	size_t l = json_string_length(v);
	if (l >= cap)
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: \"%s\" longer than %zu bytes", idx,
			       key, cap - 1);
	if (strlen(s) != l || has_ctl(s))
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: \"%s\" holds a control byte", idx,
			       key);
	memcpy(dst, s, l + 1);
	return 0;
}

static int get_int(const json_t *o, const char *where, const char *key, int64_t *v, size_t idx,
		   char *err, size_t errlen)
{
	const json_t *j = o ? json_object_get(o, key) : NULL;
	if (!j)
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: no \"%s%s\"", idx, where, key);
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: \"%s%s\" is not an integer >= 0",
			       idx, where, key);
	*v = (int64_t)json_integer_value(j);
	return 0;
}

static int parse_gpus(const json_t *job, int64_t *gpus, size_t idx, char *err, size_t errlen)
{
	*gpus = 0;
	const json_t *tres = json_object_get(job, "tres");
	if (!tres || json_is_null(tres))
		return 0;
	if (!json_is_object(tres))
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: \"tres\" is not an object", idx);
	const json_t *alloc = json_object_get(tres, "allocated");
	if (!alloc || json_is_null(alloc))
		return 0;
	if (!json_is_array(alloc))
		return fp_errf(FP_EPARSE, err, errlen,
			       "job %zu: \"tres.allocated\" is not an array", idx);
	size_t i;
	const json_t *t;
	int seen = 0;
	json_array_foreach(alloc, i, t) {
		if (!json_is_object(t))
			return fp_errf(FP_EPARSE, err, errlen,
				       "job %zu: tres.allocated[%zu] is not an object", idx, i);
		const json_t *type = json_object_get(t, "type");
		const json_t *name = json_object_get(t, "name");
		if (!json_is_string(type) || strcmp(json_string_value(type), "gres") != 0 ||
		    !json_is_string(name) || strcmp(json_string_value(name), "gpu") != 0)
			continue;
		const json_t *count = json_object_get(t, "count");
		if (!json_is_integer(count) || json_integer_value(count) < 0 ||
		    json_integer_value(count) > SLURM_ACCT_MAX_GPUS)
			return fp_errf(FP_EPARSE, err, errlen,
				       "job %zu: tres.allocated[%zu] gres/gpu count is not an "
				       "integer in 0..%ld",
				       idx, i, SLURM_ACCT_MAX_GPUS);
		if (seen++)
			return fp_errf(FP_EPARSE, err, errlen, "job %zu: gres/gpu allocated twice",
				       idx);
		*gpus = (int64_t)json_integer_value(count);
	}
	return 0;
}

static int parse_job(const json_t *j, struct slurm_acct_job *job, size_t idx, char *err,
		     size_t errlen)
{
	int rc;
	int64_t id;
	if (!json_is_object(j))
		return fp_errf(FP_EPARSE, err, errlen, "job %zu is not an object", idx);
	if ((rc = get_int(j, "", "job_id", &id, idx, err, errlen)) < 0)
		return rc;
	job->id = (uint64_t)id;
	if ((rc = get_name(j, "user", 0, job->user, sizeof(job->user), idx, err, errlen)) < 0 ||
	    (rc = get_name(j, "account", 1, job->account, sizeof(job->account), idx, err, errlen)) <
		    0 ||
	    (rc = get_name(j, "partition", 1, job->partition, sizeof(job->partition), idx, err,
			   errlen)) < 0)
		return rc;
	const json_t *state = json_object_get(j, "state");
	if (!json_is_object(state))
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: \"state\" is not an object", idx);
	if ((rc = get_name(state, "current", 0, job->state, sizeof(job->state), idx, err, errlen)) <
	    0)
		return rc;
	const json_t *tm = json_object_get(j, "time");
	if (!json_is_object(tm))
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: \"time\" is not an object", idx);
	if ((rc = get_int(tm, "time.", "start", &job->start, idx, err, errlen)) < 0 ||
	    (rc = get_int(tm, "time.", "end", &job->end, idx, err, errlen)) < 0)
		return rc;
	if (job->end && job->end < job->start)
		return fp_errf(FP_EPARSE, err, errlen, "job %zu: time.end %lld before start %lld",
			       idx, (long long)job->end, (long long)job->start);
	return parse_gpus(j, &job->gpus, idx, err, errlen);
}

/* ESLURM_REST_EMPTY_RESULT: sacct --json lists {"error_number": 9003, "error": "Nothing found
 * with query"} when no job matched, and exits 0 (tests/data/slurm/sacct-X-a-empty.json). */
#define SLURM_NOTHING_FOUND 9003

/* The first entry of errs that is not "nothing found", or NULL. */
static const json_t *first_error(const json_t *errs)
{
	size_t i;
	const json_t *e;
	json_array_foreach(errs, i, e) {
		const json_t *num = json_is_object(e) ? json_object_get(e, "error_number") : NULL;
		if (!json_is_integer(num) || json_integer_value(num) != SLURM_NOTHING_FOUND)
			return e;
	}
	return NULL;
}

/* The message of the error e, quoted into q. */
static void errors_quote(const json_t *e, char *q, size_t qlen)
{
	const char *msg = NULL;
	if (json_is_object(e)) {
		const json_t *m = json_object_get(e, "error");
		if (!json_is_string(m))
			m = json_object_get(e, "description");
		if (json_is_string(m))
			msg = json_string_value(m);
	}
	snprintf(q, qlen, "%.*s", QUOTE_MAX, msg ? msg : "(no message)");
	for (char *p = q; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

int slurm_acct_parse(const char *s, size_t len, struct slurm_acct_job **out, size_t *n, char *err,
		     size_t errlen)
{
	*out = NULL;
	*n = 0;
	json_error_t je;
	json_t *root = json_loadb(s, len, 0, &je);
	if (!root)
		return fp_errf(FP_EPARSE, err, errlen, "sacct JSON: line %d: %s", je.line, je.text);
	int rc = 0;
	struct slurm_acct_job *jobs = NULL;
	const json_t *errs = json_object_get(root, "errors");
	const json_t *arr = json_object_get(root, "jobs");
	if (!json_is_object(root)) {
		rc = fp_errf(FP_EPARSE, err, errlen, "sacct JSON is not an object");
		goto out;
	}
	if (errs && !json_is_array(errs)) {
		rc = fp_errf(FP_EPARSE, err, errlen, "sacct JSON: \"errors\" is not an array");
		goto out;
	}
	const json_t *e1 = errs ? first_error(errs) : NULL;
	if (e1) {
		char q[QUOTE_MAX + 1];
		errors_quote(e1, q, sizeof(q));
		rc = fp_errf(FP_EIO, err, errlen, "sacct reported an error: \"%s\"", q);
		goto out;
	}
	if (!json_is_array(arr)) {
		rc = fp_errf(FP_EPARSE, err, errlen, "sacct JSON: no \"jobs\" array");
		goto out;
	}
	size_t cnt = json_array_size(arr);
	if (cnt > SLURM_ACCT_MAX_JOBS) {
		rc = fp_errf(FP_ETOOBIG, err, errlen, "sacct listed %zu jobs, over %u", cnt,
			     SLURM_ACCT_MAX_JOBS);
		goto out;
	}
	if (cnt)
		jobs = xcalloc(cnt, sizeof(*jobs));
	for (size_t i = 0; i < cnt; i++)
		if ((rc = parse_job(json_array_get(arr, i), &jobs[i], i, err, errlen)) < 0)
			goto out;
	*out = jobs;
	*n = cnt;
	jobs = NULL;
out:
	free(jobs);
	json_decref(root);
	return rc;
}

const char *slurm_acct_by_name(enum slurm_acct_by by)
{
	switch (by) {
	case SLURM_ACCT_BY_ACCOUNT: return "account";
	case SLURM_ACCT_BY_USER: return "user";
	case SLURM_ACCT_BY_PARTITION: return "partition";
	}
	return NULL;
}

int slurm_acct_by_parse(const char *s, enum slurm_acct_by *by)
{
	for (int b = SLURM_ACCT_BY_ACCOUNT; b <= SLURM_ACCT_BY_PARTITION; b++)
		if (s && strcmp(s, slurm_acct_by_name((enum slurm_acct_by)b)) == 0) {
			*by = (enum slurm_acct_by)b;
			return 0;
		}
	return FP_EINVAL;
}

struct share {
	const char *key;
	int64_t gpu_seconds;
};

static int cmp_share(const void *a, const void *b)
{
	return strcmp(((const struct share *)a)->key, ((const struct share *)b)->key);
}

static const char *job_key(const struct slurm_acct_job *j, enum slurm_acct_by by)
{
	switch (by) {
	case SLURM_ACCT_BY_USER: return j->user;
	case SLURM_ACCT_BY_PARTITION: return j->partition;
	case SLURM_ACCT_BY_ACCOUNT: break;
	}
	return j->account;
}

void slurm_acct_aggregate(const struct slurm_acct_job *jobs, size_t n, enum slurm_acct_by by,
			  int64_t from, int64_t to, int64_t now, struct slurm_acct_report *out)
{
	memset(out, 0, sizeof(*out));
	out->from = from;
	out->to = to;
	out->by = by;
	struct share *sh = n ? xcalloc(n, sizeof(*sh)) : NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct slurm_acct_job *j = &jobs[i];
		if (j->start <= 0)
			continue;
		int64_t end = j->end ? j->end : now;
		if (j->start >= to || end < from || (end == from && end > j->start))
			continue;
		int64_t lo = j->start > from ? j->start : from;
		int64_t hi = end < to ? end : to;
		sh[k].key = job_key(j, by);
		sh[k].gpu_seconds = hi > lo ? j->gpus * (hi - lo) : 0;
		k++;
	}
	if (k)
		qsort(sh, k, sizeof(*sh), cmp_share);
	for (size_t i = 0; i < k; i++) {
		if (!out->nrows || strcmp(out->rows[out->nrows - 1].key, sh[i].key) != 0) {
			out->rows = xreallocarray(out->rows, out->nrows + 1, sizeof(*out->rows));
			struct slurm_acct_row *r = &out->rows[out->nrows++];
			memset(r, 0, sizeof(*r));
			snprintf(r->key, sizeof(r->key), "%s", sh[i].key);
		}
		struct slurm_acct_row *r = &out->rows[out->nrows - 1];
		r->gpu_seconds += sh[i].gpu_seconds;
		r->jobs++;
		out->total.gpu_seconds += sh[i].gpu_seconds;
		out->total.jobs++;
	}
	free(sh);
}

static json_t *row_json(const char *by, const struct slurm_acct_row *row)
{
	json_t *o = json_pack("{s:f,s:I,s:I}", "gpuHours", (double)row->gpu_seconds / 3600.0,
			      "gpuSeconds", (json_int_t)row->gpu_seconds, "jobs",
			      (json_int_t)row->jobs);
	if (by)
		json_object_set_new(o, by, json_string(row->key));
	return o;
}

json_t *slurm_acct_report_json(const struct slurm_acct_report *r)
{
	const char *by = slurm_acct_by_name(r->by);
	json_t *items = json_array();
	for (size_t i = 0; i < r->nrows; i++)
		json_array_append_new(items, row_json(by ? by : "name", &r->rows[i]));
	return json_pack("{s:o,s:o}", "items", items, "total", row_json(NULL, &r->total));
}

void slurm_acct_report_release(struct slurm_acct_report *r)
{
	if (!r)
		return;
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

struct slurm_acct {
	char *sacct;    /* argv[0] of each tool: "sacct" or "<bindir>/sacct" */
	char *sacctmgr; /* sacctmgr */
	char *squeue;   /* squeue */
	char **envp;    /* NULL-terminated, owned */
	long timeout_ms;
	size_t max_out;
};

static int check_path(const char *what, const char *p, char *err, size_t errlen)
{
	return slurm_tool_check_path(what, p, SLURM_ACCT_MAX_PATH, err, errlen);
}

int slurm_acct_new(const struct slurm_acct_config *cfg, struct slurm_acct **out, char *err,
		   size_t errlen)
{
	int rc;
	*out = NULL;
	if (!cfg)
		return fp_errf(FP_EINVAL, err, errlen, "no configuration");
	long timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : SLURM_ACCT_TIMEOUT_MS;
	size_t max_out = cfg->max_out ? cfg->max_out : SLURM_ACCT_MAX_OUT;
	if (timeout_ms < 1 || timeout_ms > 3600000)
		return fp_errf(FP_EINVAL, err, errlen, "timeout_ms %ld not in 1..3600000",
			       cfg->timeout_ms);
	if (max_out > SLURM_ACCT_MAX_OUT)
		return fp_errf(FP_EINVAL, err, errlen, "max_out %zu over %u bytes", cfg->max_out,
			       SLURM_ACCT_MAX_OUT);
	if (cfg->slurm_conf && (rc = check_path("slurm_conf", cfg->slurm_conf, err, errlen)) < 0)
		return rc;
	if (cfg->bindir && (rc = check_path("bindir", cfg->bindir, err, errlen)) < 0)
		return rc;
	struct slurm_acct *a = xcalloc(1, sizeof(*a));
	a->sacct = cfg->bindir ? xasprintf("%s/sacct", cfg->bindir) : xstrdup("sacct");
	a->sacctmgr = cfg->bindir ? xasprintf("%s/sacctmgr", cfg->bindir) : xstrdup("sacctmgr");
	a->squeue = cfg->bindir ? xasprintf("%s/squeue", cfg->bindir) : xstrdup("squeue");
	a->envp = slurm_tool_env(cfg->slurm_conf);
	a->timeout_ms = timeout_ms;
	a->max_out = max_out;
	*out = a;
	return 0;
}

void slurm_acct_free(struct slurm_acct *a)
{
	if (!a)
		return;
	slurm_tool_env_free(a->envp);
	free(a->sacct);
	free(a->sacctmgr);
	free(a->squeue);
	free(a);
}

static void fmt_utc(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

/* Runs argv (slurm_tool_run with this client's environment and bounds); tool names it. */
static int run_tool(struct slurm_acct *a, char *const argv[], const char *tool,
		    struct proc_result *res, char *err, size_t errlen)
{
	return slurm_tool_run(a->envp, a->timeout_ms, a->max_out, argv, tool, 0, res, err, errlen);
}

int slurm_acct_usage(struct slurm_acct *a, int64_t from, int64_t to, int64_t now,
		     enum slurm_acct_by by, struct slurm_acct_report *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!slurm_acct_by_name(by))
		return fp_errf(FP_EINVAL, err, errlen, "bad grouping %d", (int)by);
	if (from < 0 || from >= to)
		return fp_errf(FP_EINVAL, err, errlen, "window [%lld, %lld) is empty or negative",
			       (long long)from, (long long)to);
	if (to - from > SLURM_ACCT_MAX_WINDOW_S)
		return fp_errf(FP_EINVAL, err, errlen, "window of %lld s over %ld s (366 days)",
			       (long long)(to - from), SLURM_ACCT_MAX_WINDOW_S);
	char s_from[32], s_to[32];
	fmt_utc(from, s_from, sizeof(s_from));
	fmt_utc(to, s_to, sizeof(s_to));
	char *argv[] = {a->sacct, "--json", "-X", "-a", "-S", s_from, "-E", s_to, NULL};
	struct proc_result res;
	int rc = run_tool(a, argv, "sacct", &res, err, errlen);
	if (rc < 0)
		goto out;
	struct slurm_acct_job *jobs;
	size_t n;
	if (!res.out.len) {
		rc = fp_errf(FP_EPARSE, err, errlen, "sacct: empty output");
		goto out;
	}
	if ((rc = slurm_acct_parse(res.out.data, res.out.len, &jobs, &n, err, errlen)) < 0)
		goto out;
	slurm_acct_aggregate(jobs, n, by, from, to, now, out);
	free(jobs);
out:
	proc_result_release(&res);
	return rc;
}

int slurm_acct_account_check(const char *account, char *err, size_t errlen)
{
	size_t n = account ? strlen(account) : 0;
	if (n == 0 || n > SLURM_ACCT_ACCOUNT_MAX)
		return fp_errf(FP_EINVAL, err, errlen, "slurmAccount: expected 1..%u characters",
			       SLURM_ACCT_ACCOUNT_MAX);
	if (strspn(account, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != n || account[0] == '-')
		return fp_errf(
			FP_EINVAL, err, errlen,
			"slurmAccount: \"%.64s\" is not a Slurm account name (a-z 0-9 _ . -, "
			"not starting with -; sacctmgr lowercases names)",
			account);
	return 0;
}

int slurm_acct_set_gpu_quota(struct slurm_acct *a, const char *account, long quota, char *err,
			     size_t errlen)
{
	int rc = slurm_acct_account_check(account, err, errlen);
	if (rc < 0)
		return rc;
	if (quota < -1 || quota > SLURM_ACCT_MAX_GPUS)
		return fp_errf(FP_EINVAL, err, errlen, "gpuQuota %ld not in -1..%ld", quota,
			       SLURM_ACCT_MAX_GPUS);
	char where[SLURM_ACCT_ACCOUNT_MAX + 8], set[48];
	snprintf(where, sizeof(where), "name=%s", account);
	snprintf(set, sizeof(set), "GrpTRES=gres/gpu=%ld", quota);
	char *argv[] = {a->sacctmgr, "-i", "modify", "account", "where", where, "set", set, NULL};
	struct proc_result res;
	rc = run_tool(a, argv, "sacctmgr", &res, err, errlen);
	/* An account Slurm does not have: " Nothing modified" on stdout, exit 1. A quota equal
	 * to the one set is " Nothing modified" too, but exit 0. */
	if (rc == FP_EIO && res.exited && res.out.data && strstr(res.out.data, "Nothing modified"))
		rc = fp_errf(FP_ENOTFOUND, err, errlen, "sacctmgr: no account %s in Slurm",
			     account);
	proc_result_release(&res);
	return rc;
}

int slurm_acct_parse_running_gpus(const char *s, size_t len, const char *account, int64_t *gpus,
				  size_t *jobs, char *err, size_t errlen)
{
	*gpus = 0;
	*jobs = 0;
	json_error_t je;
	json_t *root = json_loadb(s, len, 0, &je);
	if (!root)
		return fp_errf(FP_EPARSE, err, errlen, "squeue JSON: line %d: %s", je.line,
			       je.text);
	int rc = 0;
	const json_t *arr = json_object_get(root, "jobs");
	if (!json_is_array(arr)) {
		rc = fp_errf(FP_EPARSE, err, errlen, "squeue JSON: no \"jobs\" array");
		goto out;
	}
	if (json_array_size(arr) > SLURM_ACCT_MAX_JOBS) {
		rc = fp_errf(FP_ETOOBIG, err, errlen, "squeue listed %zu jobs, over %u",
			     json_array_size(arr), SLURM_ACCT_MAX_JOBS);
		goto out;
	}
	size_t i;
	const json_t *j;
	int64_t sum = 0;
	size_t cnt = 0;
	json_array_foreach(arr, i, j) {
		const char *acc = json_string_value(json_object_get(j, "account"));
		const char *st = json_string_value(json_object_get(j, "job_state"));
		const json_t *tres = json_object_get(j, "tres_alloc_str");
		if (!json_is_object(j) || !st || (tres && !json_is_string(tres))) {
			rc = fp_errf(FP_EPARSE, err, errlen,
				     "squeue job %zu: no job_state, or tres_alloc_str not a string",
				     i);
			goto out;
		}
		if (!acc || strcmp(acc, account) != 0 || strcmp(st, "RUNNING") != 0)
			continue;
		cnt++;
		/* "cpu=1,node=1,billing=1,gres/gpu=3" (with AccountingStorageTRES=gres/gpu) */
		const char *t = tres ? json_string_value(tres) : "";
		for (const char *p = t; p && *p;) {
			const char *comma = strchr(p, ',');
			size_t l = comma ? (size_t)(comma - p) : strlen(p);
			if (l > 9 && strncmp(p, "gres/gpu=", 9) == 0) {
				int64_t v = 0;
				size_t k = 9;
				for (; k < l && p[k] >= '0' && p[k] <= '9' &&
				       v <= SLURM_ACCT_MAX_GPUS;
				     k++)
					v = v * 10 + (p[k] - '0');
				if (k != l || v > SLURM_ACCT_MAX_GPUS) {
					rc = fp_errf(
						FP_EPARSE, err, errlen,
						"squeue job %zu: bad gres/gpu count in \"%.64s\"",
						i, t);
					goto out;
				}
				sum += v;
			}
			p = comma ? comma + 1 : NULL;
		}
	}
	*gpus = sum;
	*jobs = cnt;
out:
	json_decref(root);
	return rc;
}

int slurm_acct_running_gpus(struct slurm_acct *a, const char *account, int64_t *gpus, size_t *jobs,
			    char *err, size_t errlen)
{
	*gpus = 0;
	*jobs = 0;
	int rc = slurm_acct_account_check(account, err, errlen);
	if (rc < 0)
		return rc;
	/* 22.05's squeue --json ignores -t and -A (it listed PENDING jobs with -t RUNNING): the
	 * filter is ours. */
	char *argv[] = {a->squeue, "--json", NULL};
	struct proc_result res;
	rc = run_tool(a, argv, "squeue", &res, err, errlen);
	if (rc == 0 && !res.out.len)
		rc = fp_errf(FP_EPARSE, err, errlen, "squeue: empty output");
	if (rc == 0)
		rc = slurm_acct_parse_running_gpus(res.out.data, res.out.len, account, gpus, jobs,
						   err, errlen);
	proc_result_release(&res);
	return rc;
}
