/* layers: base core */
/* test_health_verdict.c - the health decision on one event as a pure function (core/health.h
 * health_verdict): table-driven cases, one per step of docs/health.md "Evaluation of one
 * event" and the order between them, including the two NEED_* answers that make the
 * controller touch the job and breaker windows only when the evaluation reaches them, and the
 * start rung of a hold from the lemon score. No store, no clock: every input is in the row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/health.h"

/* Rules of the table: a hold at 2 in the window with a ladder, a hold by distinct jobs, a rule
 * without action. */
static struct health_rule rule_hold(void)
{
	struct health_rule r = {.code = "xid:79",
				.severity = SEV_CRITICAL,
				.action = HEALTH_ACTION_HOLD,
				.count = 2,
				.window_s = 3600,
				.ladder = {RUNG_GPU_RESET, RUNG_REBOOT, RUNG_REIMAGE, RUNG_RMA},
				.nladder = 4};
	return r;
}

struct row {
	const char *name;
	int rule; /* 0 hold, 1 distinct jobs (2), 2 no action, 3 unknown code */
	int64_t event_ms, fence_ms;
	int job, count, jobs, job_known, job_fault, holdable, remediating, breaker_known,
		breaker_open;
	int lemon_score; /* node and gpu score given with the lemon; -1: no lemon */
	int recurred;
	enum health_decision want;
	enum health_basis basis;
	size_t want_rung;
	int want_stale, want_met;
};

static const struct row rows[] = {
	/* step 1: no hold rule */
	{"no rule",
	 3,
	 0,
	 0,
	 0,
	 5,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_NONE,
	 HEALTH_BASIS_NO_RULE,
	 0,
	 0,
	 1},
	{"no action",
	 2,
	 0,
	 0,
	 0,
	 5,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_NONE,
	 HEALTH_BASIS_NO_ACTION,
	 0,
	 0,
	 1},
	/* stale beats everything after it, even a met threshold */
	{"stale",
	 0,
	 1000,
	 2000,
	 0,
	 5,
	 0,
	 0,
	 0,
	 1,
	 0,
	 1,
	 1,
	 -1,
	 0,
	 HEALTH_DECISION_COUNT,
	 HEALTH_BASIS_STALE,
	 0,
	 1,
	 1},
	{"no own time is never stale",
	 0,
	 0,
	 2000,
	 0,
	 1,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_COUNT,
	 HEALTH_BASIS_BELOW,
	 0,
	 0,
	 0},
	{"after the fence is not stale",
	 0,
	 3000,
	 2000,
	 0,
	 1,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_COUNT,
	 HEALTH_BASIS_BELOW,
	 0,
	 0,
	 0},
	/* job attribution: asked first, then decides */
	{"job: asks",      1, 0, 0, 1, 9, 9, 0, 0, 1, 0, 0, 0, -1, 0, HEALTH_DECISION_NEED_JOB,
	 HEALTH_BASIS_JOB, 0, 0, 1},
	{"job: the job's fault",
	 1,
	 0,
	 0,
	 1,
	 9,
	 9,
	 1,
	 1,
	 1,
	 0,
	 1,
	 1,
	 -1,
	 0,
	 HEALTH_DECISION_JOB_FAULT,
	 HEALTH_BASIS_JOB,
	 0,
	 0,
	 1},
	{"job: not at fault, 1 of 2 jobs",
	 1,
	 0,
	 0,
	 1,
	 9,
	 1,
	 1,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_COUNT,
	 HEALTH_BASIS_BELOW,
	 0,
	 0,
	 0},
	{"job ignored by a count rule",
	 0,
	 0,
	 0,
	 1,
	 1,
	 5,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_COUNT,
	 HEALTH_BASIS_BELOW,
	 0,
	 0,
	 0},
	{"no job: distinct-jobs rule counts events",
	 1,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_NEED_BREAKER,
	 HEALTH_BASIS_BREAKER,
	 0,
	 0,
	 1},
	/* threshold */
	{"below",
	 0,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_COUNT,
	 HEALTH_BASIS_BELOW,
	 0,
	 0,
	 0},
	{"met, not holdable",       0, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, -1, 0, HEALTH_DECISION_NONE,
	 HEALTH_BASIS_NOT_HOLDABLE, 0, 0, 1},
	{"met, remediation in progress",
	 0,
	 0,
	 0,
	 0,
	 2,
	 0,
	 0,
	 0,
	 1,
	 1,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_COUNT,
	 HEALTH_BASIS_REMEDIATING,
	 0,
	 0,
	 1},
	/* breaker: asked, then decides */
	{"breaker: asks",
	 0,
	 0,
	 0,
	 0,
	 2,
	 0,
	 0,
	 0,
	 1,
	 0,
	 0,
	 0,
	 -1,
	 0,
	 HEALTH_DECISION_NEED_BREAKER,
	 HEALTH_BASIS_BREAKER,
	 0,
	 0,
	 1},
	{"breaker open",       0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1, 1, 0, 0, HEALTH_DECISION_SUPPRESSED,
	 HEALTH_BASIS_BREAKER, 0, 0, 1},
	/* hold and its start rung */
	{"hold at the first rung", 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1, 0, 0, 0, HEALTH_DECISION_HOLD,
	 HEALTH_BASIS_THRESHOLD,   0, 0, 1},
	{"hold, lemon: rma",     0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1, 0, 3, 0, HEALTH_DECISION_HOLD,
	 HEALTH_BASIS_THRESHOLD, 3, 0, 1},
	{"hold, recurred after gpu_reset: reboot",
	 0,
	 0,
	 0,
	 0,
	 2,
	 0,
	 0,
	 0,
	 1,
	 0,
	 1,
	 0,
	 0,
	 1,
	 HEALTH_DECISION_HOLD,
	 HEALTH_BASIS_THRESHOLD,
	 1,
	 0,
	 1},
	{"hold by distinct jobs", 1, 0, 0, 1, 2, 2, 1, 0, 1, 0, 1, 0, 0, 0, HEALTH_DECISION_HOLD,
	 HEALTH_BASIS_THRESHOLD,  0, 0, 1},
};

static void test_verdict_table(void **state)
{
	(void)state;
	struct health_policy p = {.name = "default"};
	p.lemon.rma_score = 3;
	struct health_rule rules[4];
	rules[0] = rule_hold();
	rules[1] = rule_hold();
	rules[1].distinct_jobs = 2;
	rules[1].count = 1;
	rules[2] = rule_hold();
	rules[2].action = HEALTH_ACTION_NONE;
	rules[3] = rules[2];
	memcpy(rules[3].code, "other", 6);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];
		struct health_lemon lm = {.node_score = w->lemon_score,
					  .gpu_score = w->lemon_score,
					  .recurred = w->recurred,
					  .last_rung = RUNG_GPU_RESET};
		struct health_facts f = {.policy = &p,
					 .rule = &rules[w->rule],
					 .unknown_rule = w->rule == 3,
					 .event_ms = w->event_ms,
					 .fence_ms = w->fence_ms,
					 .job = w->job,
					 .count = w->count,
					 .jobs = w->jobs,
					 .job_known = w->job_known,
					 .job_fault = w->job_fault,
					 .holdable = w->holdable,
					 .remediating = w->remediating,
					 .breaker_known = w->breaker_known,
					 .breaker_open = w->breaker_open,
					 .lemon = w->lemon_score >= 0 ? &lm : NULL};
		struct health_verdict v;
		memset(&v, 0xa5, sizeof(v));
		health_verdict(&f, &v);
		if (v.decision != w->want || v.basis != w->basis || v.start_rung != w->want_rung ||
		    v.stale != w->want_stale || v.met != w->want_met)
			fail_msg(
				"%s: decision %s (%d) basis %d rung %zu stale %d met %d, expected %s "
				"(%d) basis %d rung %zu stale %d met %d",
				w->name, health_decision_name(v.decision), v.decision, v.basis,
				v.start_rung, v.stale, v.met, health_decision_name(w->want),
				w->want, w->basis, w->want_rung, w->want_stale, w->want_met);
		assert_string_equal(v.rule, rules[w->rule].code);
		assert_int_equal(v.by_jobs, w->job && rules[w->rule].distinct_jobs > 0);
		/* the inputs it read are in the verdict */
		assert_int_equal(v.in.count, w->count);
		assert_ptr_equal(v.in.rule, &rules[w->rule]);
		/* pure: the same facts give the same verdict */
		struct health_verdict v2;
		health_verdict(&f, &v2);
		assert_int_equal(v2.decision, v.decision);
		assert_int_equal(v2.start_rung, v.start_rung);
	}
}

static void test_decision_names(void **state)
{
	(void)state;
	assert_string_equal(health_decision_name(HEALTH_DECISION_NONE), "none");
	assert_string_equal(health_decision_name(HEALTH_DECISION_COUNT), "count");
	assert_string_equal(health_decision_name(HEALTH_DECISION_HOLD), "hold");
	assert_string_equal(health_decision_name(HEALTH_DECISION_SUPPRESSED), "suppressed");
	assert_string_equal(health_decision_name(HEALTH_DECISION_JOB_FAULT), "job_fault");
	assert_string_equal(health_decision_name(HEALTH_DECISION_NEED_JOB), "?");
	assert_int_equal(health_stale(0, 5), 0);
	assert_int_equal(health_stale(4, 0), 0);
	assert_int_equal(health_stale(4, 5), 1);
	assert_int_equal(health_stale(5, 5), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict_table),
		cmocka_unit_test(test_decision_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
