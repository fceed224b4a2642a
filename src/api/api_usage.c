/* api_usage.c - GET /v1/usage?from=&to=&by= (docs/api.md "Usage"): GPU-hours per Slurm
 * account, user or partition over a window, from the usage source serve wires with --slurm
 * (server.h struct api_usage_source over sched/slurm_acct.h). Validation first (400 naming
 * the parameter), then the source, on a worker thread (it runs sacct). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "base/err.h"
#include "base/timefmt.h"

#include "base/banned.h"

/* The longest window: 366 days, as sched/slurm_acct.h SLURM_ACCT_MAX_WINDOW_S (sched is a peer
 * layer of api, not included; the source refuses a longer one with FP_EINVAL, a 400, too). */
#define USAGE_MAX_WINDOW_S (366L * 86400)

/* "unix seconds" (1..12 digits) or an RFC 3339 date-time; *t in unix seconds. */
static int parse_instant(const char *s, int64_t *t)
{
	size_t n = strlen(s);
	if (n > 0 && n <= 12 && strspn(s, "0123456789") == n) {
		int64_t v = 0;
		for (size_t i = 0; i < n; i++)
			v = v * 10 + (s[i] - '0');
		*t = v;
		return 0;
	}
	int64_t ms;
	if (n > 64 || fp_time_parse_offset(s, &ms, NULL) < 0)
		return FP_EPARSE;
	*t = ms / 1000;
	return 0;
}

static int instant_param(struct api_req *r, const char *name, int64_t *t)
{
	const char *s = api_query(r, name);
	if (!s || !s[0]) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", name),
				"%s: required (RFC 3339 date-time or unix seconds)", name);
		return -1;
	}
	if (parse_instant(s, t) < 0) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", name),
				"%s: expected an RFC 3339 date-time (2026-12-01T00:00:00Z) or unix "
				"seconds, got \"%.64s\"",
				name, s);
		return -1;
	}
	return 0;
}

void api_usage_get(struct api_req *r)
{
	const struct api_usage_source *src = &r->srv->cfg.usage;
	int64_t from, to;
	if (instant_param(r, "from", &from) < 0 || instant_param(r, "to", &to) < 0)
		return;
	const char *bys = api_query(r, "by");
	if (!bys || (strcmp(bys, "account") != 0 && strcmp(bys, "user") != 0 &&
		     strcmp(bys, "partition") != 0)) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "by"),
				"by: expected account, user or partition%s%.32s%s",
				bys ? ", got \"" : " (required)", bys ? bys : "", bys ? "\"" : "");
		return;
	}
	if (from >= to) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "to"),
				"to: must be after from (the window is [from, to))");
		return;
	}
	if (to - from > USAGE_MAX_WINDOW_S) {
		api_problem_ext(r, 400, json_pack("{s:s}", "parameter", "from"),
				"from: the window is %lld s, over %ld s (366 days)",
				(long long)(to - from), USAGE_MAX_WINDOW_S);
		return;
	}
	if (!src->usage) {
		api_problem(r, 503,
			    "usage comes from Slurm's accounting (slurmdbd): start fleetplane "
			    "serve with --slurm");
		return;
	}
	json_t *doc = NULL;
	char err[512] = "";
	int64_t now = api_now(r) / 1000;
	int rc = src->usage(src->arg, from, to, now, bys, &doc, err, sizeof(err));
	if (rc < 0 || !json_is_object(doc)) {
		json_decref(doc);
		if (rc == FP_EINVAL)
			api_problem(r, 400, "%s", err);
		else
			api_problem(r, 502, "Slurm accounting: %s", rc < 0 ? err : "no document");
		return;
	}
	char sf[FP_TIME_LEN], st[FP_TIME_LEN];
	fp_time_format(from * 1000, sf);
	fp_time_format(to * 1000, st);
	json_object_set_new(doc, "from", json_string(sf));
	json_object_set_new(doc, "to", json_string(st));
	json_object_set_new(doc, "by", json_string(bys));
	api_reply_json(r, 200, doc);
}
