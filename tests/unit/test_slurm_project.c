/* layers: base core store driver engine sched */
/* test_slurm_project.c - the projection decision of sched/slurm_project.h, table-driven: a
 * fleetplane node (phase, holds) and a Slurm node (a `scontrol show node -o` record read by the
 * real parser, or absent) give one action with its reason, hold owner and time. Every expected
 * value is written by hand from the rules in slurm_project.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "core/model.h"
#include "sched/slurm_node.h"
#include "sched/slurm_project.h"

#include "check.h"

#define NOW 1796000000000LL /* 2026-11-30T00:53:20Z */

struct hold_spec {
	const char *owner, *reason;
	int64_t since;
};

struct row {
	const char *what;
	enum node_phase phase;
	struct hold_spec holds[3];
	const char *slurm; /* NULL: absent from Slurm */
	enum slurm_action want;
	const char *reason; /* "" when none */
	const char *owner;  /* "" when none */
	int64_t since;
	enum slurm_project_why why;
};

static const struct row rows[] = {
	{"absent from Slurm",
	 PHASE_AVAILABLE,
	 {{0}},
	 NULL,
	 SLURM_ACT_NONE,
	 "",
	 "",
	 0,
	 SLURM_WHY_ABSENT},
	{"idle and schedulable",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=IDLE",
	 SLURM_ACT_NONE,
	 "",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"mixed and in service",
	 PHASE_IN_SERVICE,
	 {{0}},
	 "NodeName=n1 State=MIXED",
	 SLURM_ACT_NONE,
	 "",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"our drain, schedulable again",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=fleetplane: health: xid 79 [root@2026-11-30T01:00:00]",
	 SLURM_ACT_RESUME,
	 "",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"our drain while draining jobs, schedulable again",
	 PHASE_IN_SERVICE,
	 {{0}},
	 "NodeName=n1 State=ALLOCATED+DRAIN Reason=fleetplane: rollout: image v2 [root@2026-11-30T01:00:00]",
	 SLURM_ACT_RESUME,
	 "",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"foreign drain while jobs run",
	 PHASE_IN_SERVICE,
	 {{0}},
	 "NodeName=n1 State=ALLOCATED+DRAIN Reason=bad dimm [root@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "bad dimm",
	 "slurm:root",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"unknown state flag",
	 PHASE_AVAILABLE,
	 {{"health", "xid 79", 1}},
	 "NodeName=n1 State=IDLE+FROBNICATED",
	 SLURM_ACT_UNSURE,
	 "",
	 "",
	 0,
	 SLURM_WHY_STATE_UNKNOWN},
	{"unknown base state",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=SLEEPY+DRAIN",
	 SLURM_ACT_UNSURE,
	 "",
	 "",
	 0,
	 SLURM_WHY_STATE_UNKNOWN},
	{"foreign drain on a node not responding",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=DOWN*+DRAIN Reason=Not responding [slurm@2026-11-29T23:59:59]",
	 SLURM_ACT_IMPORT_HOLD,
	 "Not responding",
	 "slurm:slurm",
	 1795996799000LL,
	 SLURM_WHY_OK},
	{"reason merely contains fleetplane: foreign",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=see fleetplane: ticket 12 [alice@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "see fleetplane: ticket 12",
	 "slurm:alice",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"prefix without the blank: foreign",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=fleetplane:health [alice@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "fleetplane:health",
	 "slurm:alice",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"prefix in capitals: foreign",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=FLEETPLANE: x [alice@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "FLEETPLANE: x",
	 "slurm:alice",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"foreign drain without reason or user",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=IDLE+DRAIN",
	 SLURM_ACT_IMPORT_HOLD,
	 "drained in Slurm",
	 "slurm:unknown",
	 NOW,
	 SLURM_WHY_OK},
	{"foreign drain already imported",
	 PHASE_AVAILABLE,
	 {{"slurm:alice", "bad dimm", 5}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=bad dimm [alice@2026-11-30T01:00:00]",
	 SLURM_ACT_NONE,
	 "",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"foreign drain, reason changed in Slurm",
	 PHASE_AVAILABLE,
	 {{"slurm:alice", "bad dimm", 5}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=bad dimm, RMA 7 [alice@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "bad dimm, RMA 7",
	 "slurm:alice",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"foreign drain by another user than the imported hold",
	 PHASE_AVAILABLE,
	 {{"slurm:alice", "bad dimm", 5}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=bad dimm [bob@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "bad dimm",
	 "slurm:bob",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"foreign drain wins over our own hold: imported, not overwritten",
	 PHASE_AVAILABLE,
	 {{"health", "xid 79", 1}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=bad dimm [alice@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "bad dimm",
	 "slurm:alice",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"foreign drain ended in Slurm: release its hold",
	 PHASE_AVAILABLE,
	 {{"slurm:alice", "bad dimm", 5}},
	 "NodeName=n1 State=IDLE",
	 SLURM_ACT_RELEASE_HOLD,
	 "",
	 "slurm:alice",
	 0,
	 SLURM_WHY_OK},
	{"foreign drain replaced by ours: release its hold",
	 PHASE_AVAILABLE,
	 {{"slurm:bob", "bad dimm", 5}, {"health", "xid 79", 1}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=fleetplane: health: xid 79",
	 SLURM_ACT_RELEASE_HOLD,
	 "",
	 "slurm:bob",
	 0,
	 SLURM_WHY_OK},
	{"health hold: drain",
	 PHASE_AVAILABLE,
	 {{"health", "xid 79 on GPU 3", 1}},
	 "NodeName=n1 State=IDLE",
	 SLURM_ACT_DRAIN,
	 "fleetplane: health: xid 79 on GPU 3",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"hold reason with control bytes sanitised",
	 PHASE_IN_SERVICE,
	 {{"health", "xid 79\nrow remap\t failed\x01\x7f", 1}},
	 "NodeName=n1 State=MIXED",
	 SLURM_ACT_DRAIN,
	 "fleetplane: health: xid 79 row remap failed",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"health before rollout",
	 PHASE_AVAILABLE,
	 {{"rollout", "image v2", 1}, {"health", "xid 48", 9}},
	 "NodeName=n1 State=IDLE",
	 SLURM_ACT_DRAIN,
	 "fleetplane: health: xid 48",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"operator before lifecycle",
	 PHASE_AVAILABLE,
	 {{"lifecycle", "reboot", 1}, {"operator:alice", "cable swap", 9}},
	 "NodeName=n1 State=IDLE",
	 SLURM_ACT_DRAIN,
	 "fleetplane: operator:alice: cable swap",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"same rank: the oldest hold",
	 PHASE_AVAILABLE,
	 {{"operator:bob", "later", 9}, {"operator:alice", "first", 2}},
	 "NodeName=n1 State=IDLE",
	 SLURM_ACT_DRAIN,
	 "fleetplane: operator:alice: first",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"not schedulable for its phase",
	 PHASE_REPAIRING,
	 {{0}},
	 "NodeName=n1 State=IDLE",
	 SLURM_ACT_DRAIN,
	 "fleetplane: repairing",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"phase reason on a down node",
	 PHASE_ENROLLED,
	 {{0}},
	 "NodeName=n1 State=DOWN*",
	 SLURM_ACT_DRAIN,
	 "fleetplane: enrolled",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"a person's DOWN on a node that responds: Slurm's, imported, never drained over",
	 PHASE_AVAILABLE,
	 {{"operator:alice", "fp maint", 1}},
	 "NodeName=n1 State=DOWN Reason=psu broken [root@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "psu broken",
	 "slurm:root",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"a person's FAIL: imported too",
	 PHASE_AVAILABLE,
	 {{0}},
	 "NodeName=n1 State=IDLE+FAIL Reason=human fail [root@2026-11-30T01:00:00]",
	 SLURM_ACT_IMPORT_HOLD,
	 "human fail",
	 "slurm:root",
	 1796000400000LL,
	 SLURM_WHY_OK},
	{"a person's DOWN lifted: the hold goes",
	 PHASE_AVAILABLE,
	 {{"slurm:root", "psu broken", 1}},
	 "NodeName=n1 State=IDLE",
	 SLURM_ACT_RELEASE_HOLD,
	 "",
	 "slurm:root",
	 0,
	 SLURM_WHY_OK},
	{"our drain with the current reason",
	 PHASE_AVAILABLE,
	 {{"health", "xid 79", 1}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=fleetplane: health: xid 79 [root@2026-11-30T01:00:00]",
	 SLURM_ACT_NONE,
	 "",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"our drain with an old reason: refreshed",
	 PHASE_REPAIRING,
	 {{"health", "xid 48", 1}},
	 "NodeName=n1 State=DRAINED Reason=fleetplane: health: xid 79 [root@2026-11-30T01:00:00]",
	 SLURM_ACT_DRAIN,
	 "fleetplane: health: xid 48",
	 "",
	 0,
	 SLURM_WHY_OK},
	{"our drain of a phase, still in it",
	 PHASE_MAINTENANCE,
	 {{0}},
	 "NodeName=n1 State=IDLE+DRAIN Reason=fleetplane: maintenance",
	 SLURM_ACT_NONE,
	 "",
	 "",
	 0,
	 SLURM_WHY_OK},
};

static struct node *make_node(const struct row *r)
{
	struct node *n = node_new();
	n->name = xstrdup("n1");
	n->phase = r->phase;
	for (size_t i = 0; i < 3 && r->holds[i].owner; i++)
		ASSERT_OK(node_hold_add(n, r->holds[i].owner, r->holds[i].reason, r->holds[i].since,
					0));
	return n;
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct node *n = make_node(r);
		struct slurm_node sn;
		char err[256] = "";
		if (r->slurm) {
			int rc = slurm_node_parse(r->slurm, strlen(r->slurm), &sn, err,
						  sizeof(err));
			if (rc < 0 && !sn.state.unknown)
				fail_msg("row %zu (%s): parse: %s", i, r->what, err);
		}
		struct slurm_decision d;
		slurm_project(n, r->slurm ? &sn : NULL, NOW, &d);
		if (d.action != r->want || strcmp(d.reason, r->reason) != 0 ||
		    strcmp(d.owner, r->owner) != 0 || d.since_ms != r->since || d.why != r->why)
			fail_msg(
				"row %zu (%s): got %s reason \"%s\" owner \"%s\" since %lld why %d; "
				"want %s reason \"%s\" owner \"%s\" since %lld why %d",
				i, r->what, slurm_action_name(d.action), d.reason, d.owner,
				(long long)d.since_ms, (int)d.why, slurm_action_name(r->want),
				r->reason, r->owner, (long long)r->since, (int)r->why);
		node_free(n);
	}
}

/* The same inputs always give the same answer, and a later pass after the action was carried
 * out answers NONE (the projection converges). */
static void test_converges(void **state)
{
	(void)state;
	struct node *n = node_new();
	n->name = xstrdup("n1");
	n->phase = PHASE_AVAILABLE;
	ASSERT_OK(node_hold_add(n, "health", "xid 79", 1, 0));
	struct slurm_node sn;
	const char *idle = "NodeName=n1 State=IDLE";
	ASSERT_OK(slurm_node_parse(idle, strlen(idle), &sn, NULL, 0));
	struct slurm_decision d;
	slurm_project(n, &sn, NOW, &d);
	ASSERT_EQ_INT(d.action, SLURM_ACT_DRAIN);
	/* Slurm now shows our drain with that reason */
	char line[512];
	snprintf(line, sizeof(line),
		 "NodeName=n1 State=IDLE+DRAIN Reason=%s [root@2026-11-30T01:00:00]", d.reason);
	ASSERT_OK(slurm_node_parse(line, strlen(line), &sn, NULL, 0));
	slurm_project(n, &sn, NOW, &d);
	ASSERT_EQ_INT(d.action, SLURM_ACT_NONE);
	ASSERT_OK(node_hold_release(n, "health"));
	slurm_project(n, &sn, NOW, &d);
	ASSERT_EQ_INT(d.action, SLURM_ACT_RESUME);
	node_free(n);
}

static void test_reason_bounded(void **state)
{
	(void)state;
	struct node *n = node_new();
	n->name = xstrdup("n1");
	n->phase = PHASE_AVAILABLE;
	char long_reason[600];
	memset(long_reason, 'a', sizeof(long_reason) - 1);
	long_reason[sizeof(long_reason) - 1] = '\0';
	ASSERT_OK(node_hold_add(n, "health", long_reason, 1, 0));
	char out[SLURM_PROJECT_REASON_MAX];
	slurm_project_reason(n, out, sizeof(out));
	ASSERT_EQ_INT(strlen(out), SLURM_PROJECT_REASON_MAX - 1);
	ASSERT_EQ_INT(strncmp(out, "fleetplane: health: aaa", 23), 0);
	/* a larger buffer changes nothing: the bound is SLURM_PROJECT_REASON_MAX */
	char big[1024];
	slurm_project_reason(n, big, sizeof(big));
	ASSERT_EQ_STR(big, out);
	node_free(n);

	/* cut at a UTF-8 boundary: "ab\xe2\x82\xac" (ab + euro sign) into 5 bytes is "ab" */
	char small[5];
	ASSERT_EQ_STR(slurm_project_sanitize("ab\xe2\x82\xac", small, sizeof(small)), "ab");
	char six[6];
	ASSERT_EQ_STR(slurm_project_sanitize("ab\xe2\x82\xac", six, sizeof(six)), "ab\xe2\x82\xac");
	char buf[64];
	ASSERT_EQ_STR(slurm_project_sanitize("  a\r\n\n b \t", buf, sizeof(buf)), "a b");
	ASSERT_EQ_STR(slurm_project_sanitize("", buf, sizeof(buf)), "");
	ASSERT_EQ_STR(slurm_project_sanitize(NULL, buf, sizeof(buf)), "");
}

static void test_is_ours(void **state)
{
	(void)state;
	ASSERT_EQ_INT(slurm_project_is_ours("fleetplane: health: x"), 1);
	ASSERT_EQ_INT(slurm_project_is_ours("fleetplane: "), 1);
	ASSERT_EQ_INT(slurm_project_is_ours("fleetplane:"), 0);
	ASSERT_EQ_INT(slurm_project_is_ours(" fleetplane: x"), 0);
	ASSERT_EQ_INT(slurm_project_is_ours("Fleetplane: x"), 0);
	ASSERT_EQ_INT(slurm_project_is_ours(""), 0);
	ASSERT_EQ_INT(slurm_project_is_ours(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_converges),
		cmocka_unit_test(test_reason_bounded),
		cmocka_unit_test(test_is_ours),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
