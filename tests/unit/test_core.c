/* layers: base core */
/* test_core.c - the core layer against DESIGN.md: the phase machine (every from/to pair, table
 * written out by hand below), holds, conditions, the strict node and operation codecs (defaults,
 * unknown fields, wrong types, names, MACs, round trips, secrets), label selectors and audit
 * event documents. Expected values are written by hand from DESIGN.md and the headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "core/codec.h"
#include "core/event.h"
#include "core/model.h"
#include "check.h"

#include "base/banned.h"

/* 2026-01-02T03:04:05Z and 2026-11-30T04:49:29.803Z as epoch milliseconds (computed by hand:
 * 20455 days * 86400 s + 11045 s). */
#define T0 1767323045000LL
#define T1 1796014169803LL

static json_t *parse(const char *s)
{
	json_t *v = NULL;
	char e[256];
	int rc = jsonx_parse(s, strlen(s), &v, e, sizeof(e));
	if (rc < 0)
		fail_msg("test document does not parse: %s: %s", e, s);
	return v;
}

/* Decodes s with node_from_enroll_json (enroll=1) or node_from_json; returns rc, fills err. */
static int decode_node(const char *s, int enroll, struct node **out, char *err, size_t errlen)
{
	json_t *doc = parse(s);
	err[0] = 0;
	int rc = enroll ? node_from_enroll_json(doc, out, err, errlen)
			: node_from_json(doc, 7, out, err, errlen);
	json_decref(doc);
	return rc;
}

/* Expects decoding to fail with exactly rc_want and message want. */
static void expect_node_err(const char *s, int enroll, int rc_want, const char *want)
{
	struct node *n = (struct node *)1;
	char e[512];
	int rc = decode_node(s, enroll, &n, e, sizeof(e));
	if (rc != rc_want || strcmp(e, want) != 0)
		fail_msg("document %s\n  rc %d want %d\n  err \"%s\"\n want \"%s\"", s, rc, rc_want,
			 e, want);
	assert_null(n);
}

/* ---- phase machine ---- */

static const char *const hand_names[12] = {"enrolled",  "inspecting", "provisioning", "validating",
					   "available", "in_service", "draining",     "maintenance",
					   "repairing", "failed",     "retiring",     "retired"};

/* DESIGN.md "Node phases", written out by hand, plus inspecting -> available for an adopted
 * node (spec.adopt, docs/architecture.md). Rows: from; columns: to, in the order
 * EN IN PR VA AV IS DR MA RE FA RG RD. "any -> retiring" is column RG for every row but
 * retiring itself (same phase) and retired (final). */
static const int table[12][12] = {
	/*               EN IN PR VA AV IS DR MA RE FA RG RD */
	/* enrolled */ {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0},
	/* inspect  */ {0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0}, /* -> available: spec.adopt */
	/* provis   */ {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0},
	/* validat  */ {0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0},
	/* availab  */ {0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0},
	/* in_serv  */ {0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0},
	/* drainin  */ {0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0},
	/* mainten  */ {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0},
	/* repairi  */ {0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0},
	/* failed   */ {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0},
	/* retiring */ {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
	/* retired  */ {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};

static void test_phase_names(void **state)
{
	(void)state;
	assert_int_equal(PHASE__COUNT, 12);
	for (int i = 0; i < 12; i++) {
		ASSERT_EQ_STR(node_phase_name((enum node_phase)i), hand_names[i]);
		enum node_phase p = PHASE_RETIRED;
		assert_int_equal(node_phase_parse(hand_names[i], &p), 0);
		assert_int_equal(p, i);
	}
	enum node_phase p = PHASE_AVAILABLE;
	assert_int_equal(node_phase_parse("Available", &p), FP_EINVAL);
	assert_int_equal(node_phase_parse("in-service", &p), FP_EINVAL);
	assert_int_equal(node_phase_parse("", &p), FP_EINVAL);
	assert_int_equal(node_phase_parse(NULL, &p), FP_EINVAL);
	ASSERT_EQ_PHASE(p, PHASE_AVAILABLE);
	ASSERT_EQ_STR(node_phase_name((enum node_phase)12), "unknown");
	ASSERT_EQ_STR(node_phase_name((enum node_phase) - 1), "unknown");

	/* transient = has a deadline: inspecting, provisioning, validating, draining, repairing,
	 * retiring */
	static const int transient[12] = {0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0};
	for (int i = 0; i < 12; i++)
		assert_int_equal(node_phase_is_transient((enum node_phase)i), transient[i]);
}

static void test_phase_table(void **state)
{
	(void)state;
	int allowed = 0;
	for (int f = 0; f < 12; f++)
		for (int t = 0; t < 12; t++) {
			char e[160] = "untouched";
			int rc = node_phase_check((enum node_phase)f, (enum node_phase)t, e,
						  sizeof(e));
			char want[160];
			if (table[f][t]) {
				allowed++;
				if (rc != 0)
					fail_msg("%s -> %s refused (%d: %s), DESIGN.md allows it",
						 hand_names[f], hand_names[t], rc, e);
				ASSERT_EQ_STR(e, "untouched");
				continue;
			}
			if (f == t)
				snprintf(want, sizeof(want), "node is already %s", hand_names[t]);
			else if (f == 11)
				snprintf(want, sizeof(want),
					 "cannot go from retired to %s: a retired node is final",
					 hand_names[t]);
			else
				snprintf(want, sizeof(want), "cannot go from %s to %s",
					 hand_names[f], hand_names[t]);
			if (rc != FP_ESTATE)
				fail_msg("%s -> %s: rc %d, DESIGN.md refuses it", hand_names[f],
					 hand_names[t], rc);
			ASSERT_EQ_STR(e, want);
		}
	/* 19 table edges (inspecting -> available for spec.adopt among them) + 10 "any ->
	 * retiring" (all but retiring and retired), failed -> retiring being in both */
	assert_int_equal(allowed, 28);
	char e[64];
	assert_int_equal(node_phase_check((enum node_phase)12, PHASE_ENROLLED, e, sizeof(e)),
			 FP_ESTATE);
	ASSERT_EQ_STR(e, "unknown phase");
	assert_int_equal(node_phase_check(PHASE_ENROLLED, (enum node_phase) - 1, e, sizeof(e)),
			 FP_ESTATE);
	/* NULL error buffer is allowed */
	assert_int_equal(node_phase_check(PHASE_RETIRED, PHASE_RETIRING, NULL, 0), FP_ESTATE);
	assert_int_equal(node_phase_check(PHASE_FAILED, PHASE_RETIRING, NULL, 0), 0);
}

/* ---- holds and schedulability ---- */

static void test_holds(void **state)
{
	(void)state;
	struct node *n = node_new();
	n->phase = PHASE_AVAILABLE;
	assert_int_equal(node_schedulable(n), 1);

	assert_int_equal(node_hold_add(n, "health", "xid:79 on gpu 3", T0, 0), 0);
	assert_int_equal(n->nholds, 1);
	assert_int_equal(node_schedulable(n), 0);
	assert_int_equal(node_hold_add(n, "operator:alice", "kernel upgrade", T0 + 5, T1), 0);
	assert_int_equal(n->nholds, 2);

	/* same owner: reason and expiry replaced, since kept, no second hold */
	assert_int_equal(node_hold_add(n, "health", "xid:48 on gpu 1", T1, T1 + 1000), 0);
	assert_int_equal(n->nholds, 2);
	const struct node_hold *h = node_hold_find(n, "health");
	assert_non_null(h);
	ASSERT_EQ_STR(h->owner, "health");
	ASSERT_EQ_STR(h->reason, "xid:48 on gpu 1");
	assert_int_equal(h->since, T0);
	assert_int_equal(h->expires, T1 + 1000);
	h = node_hold_find(n, "operator:alice");
	assert_non_null(h);
	ASSERT_EQ_STR(h->reason, "kernel upgrade");
	assert_int_equal(h->since, T0 + 5);
	assert_int_equal(h->expires, T1);

	/* empty owner or reason refused, nothing changes */
	assert_int_equal(node_hold_add(n, "", "x", T0, 0), FP_EINVAL);
	assert_int_equal(node_hold_add(n, "rollout", "", T0, 0), FP_EINVAL);
	assert_int_equal(node_hold_add(n, NULL, "x", T0, 0), FP_EINVAL);
	assert_int_equal(node_hold_add(n, "rollout", NULL, T0, 0), FP_EINVAL);
	assert_int_equal(n->nholds, 2);

	/* owners release only their own holds */
	assert_int_equal(node_hold_release(n, "operator:bob"), FP_ENOTFOUND);
	assert_int_equal(node_hold_release(n, "operator"), FP_ENOTFOUND);
	assert_int_equal(node_hold_release(n, "Health"), FP_ENOTFOUND);
	assert_int_equal(n->nholds, 2);
	assert_int_equal(node_hold_release(n, "health"), 0);
	assert_int_equal(n->nholds, 1);
	assert_null(node_hold_find(n, "health"));
	assert_int_equal(node_hold_release(n, "health"), FP_ENOTFOUND);
	ASSERT_EQ_STR(n->holds[0].owner, "operator:alice");
	assert_int_equal(node_schedulable(n), 0);
	assert_int_equal(node_hold_release(n, "operator:alice"), 0);
	assert_int_equal(n->nholds, 0);
	assert_int_equal(node_schedulable(n), 1);

	/* NODE_MAX_HOLDS (32) distinct owners, then FP_ETOOBIG; replacing still works */
	assert_int_equal(NODE_MAX_HOLDS, 32);
	char owner[32];
	for (int i = 0; i < 32; i++) {
		snprintf(owner, sizeof(owner), "slurm:user%d", i);
		assert_int_equal(node_hold_add(n, owner, "drained in slurm", T0 + i, 0), 0);
	}
	assert_int_equal(n->nholds, 32);
	assert_int_equal(node_hold_add(n, "rollout", "wave 1", T0, 0), FP_ETOOBIG);
	assert_int_equal(n->nholds, 32);
	assert_null(node_hold_find(n, "rollout"));
	assert_int_equal(node_hold_add(n, "slurm:user31", "reason changed", T1, 0), 0);
	assert_int_equal(n->nholds, 32);
	ASSERT_EQ_STR(node_hold_find(n, "slurm:user31")->reason, "reason changed");
	assert_int_equal(node_hold_find(n, "slurm:user31")->since, T0 + 31);
	/* releasing one in the middle keeps order and the others */
	assert_int_equal(node_hold_release(n, "slurm:user10"), 0);
	assert_int_equal(n->nholds, 31);
	ASSERT_EQ_STR(n->holds[9].owner, "slurm:user9");
	ASSERT_EQ_STR(n->holds[10].owner, "slurm:user11");
	ASSERT_EQ_STR(n->holds[30].owner, "slurm:user31");
	assert_int_equal(node_hold_add(n, "rollout", "wave 1", T0, 0), 0);
	assert_int_equal(n->nholds, 32);
	node_free(n);
}

static void test_schedulable_rules(void **state)
{
	(void)state;
	/* schedulable iff phase is available or in_service and no holds */
	static const int sched[12] = {0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0};
	struct node *n = node_new();
	for (int p = 0; p < 12; p++) {
		n->phase = (enum node_phase)p;
		assert_int_equal(node_schedulable(n), sched[p]);
	}
	assert_int_equal(node_hold_add(n, "rollout", "wave 2", T0, 0), 0);
	for (int p = 0; p < 12; p++) {
		n->phase = (enum node_phase)p;
		assert_int_equal(node_schedulable(n), 0);
	}
	node_free(n);
}

/* ---- conditions ---- */

static void test_conditions(void **state)
{
	(void)state;
	struct node *n = node_new();
	assert_null(node_condition_get(n, "BMCReachable"));
	assert_int_equal(node_condition_set(n, "BMCReachable", COND_TRUE, "Responding", "ok", T0),
			 1);
	const struct node_condition *c = node_condition_get(n, "BMCReachable");
	assert_non_null(c);
	assert_int_equal(c->status, COND_TRUE);
	ASSERT_EQ_STR(c->reason, "Responding");
	ASSERT_EQ_STR(c->message, "ok");
	assert_int_equal(c->since, T0);

	/* nothing changed: returns 0, since kept */
	assert_int_equal(node_condition_set(n, "BMCReachable", COND_TRUE, "Responding", "ok", T1),
			 0);
	assert_int_equal(node_condition_get(n, "BMCReachable")->since, T0);
	/* reason/message change without status change: 1, since kept */
	assert_int_equal(node_condition_set(n, "BMCReachable", COND_TRUE, "Responding",
					    "ok after 2 retries", T1),
			 1);
	c = node_condition_get(n, "BMCReachable");
	ASSERT_EQ_STR(c->message, "ok after 2 retries");
	assert_int_equal(c->since, T0);
	assert_int_equal(node_condition_set(n, "BMCReachable", COND_TRUE, NULL, NULL, T1), 1);
	c = node_condition_get(n, "BMCReachable");
	assert_null(c->reason);
	assert_null(c->message);
	assert_int_equal(c->since, T0);
	/* status change: since moves to now */
	assert_int_equal(node_condition_set(n, "BMCReachable", COND_FALSE, "Timeout",
					    "no answer in 10s", T1),
			 1);
	c = node_condition_get(n, "BMCReachable");
	assert_int_equal(c->status, COND_FALSE);
	ASSERT_EQ_STR(c->reason, "Timeout");
	assert_int_equal(c->since, T1);
	assert_int_equal(node_condition_set(n, "BMCReachable", COND_UNKNOWN, "Timeout",
					    "no answer in 10s", T1 + 1),
			 1);
	assert_int_equal(node_condition_get(n, "BMCReachable")->since, T1 + 1);

	assert_int_equal(node_condition_set(n, "GPUHealthy", COND_TRUE, "AllGood", NULL, T0), 1);
	assert_int_equal(n->nconditions, 2);
	assert_int_equal(node_condition_remove(n, "BMCReachable"), 1);
	assert_int_equal(node_condition_remove(n, "BMCReachable"), 0);
	assert_int_equal(n->nconditions, 1);
	ASSERT_EQ_STR(n->conditions[0].type, "GPUHealthy");

	ASSERT_EQ_STR(cond_status_name(COND_TRUE), "True");
	ASSERT_EQ_STR(cond_status_name(COND_FALSE), "False");
	ASSERT_EQ_STR(cond_status_name(COND_UNKNOWN), "Unknown");
	enum cond_status s = COND_TRUE;
	assert_int_equal(cond_status_parse("False", &s), 0);
	assert_int_equal(s, COND_FALSE);
	assert_int_equal(cond_status_parse("Unknown", &s), 0);
	assert_int_equal(s, COND_UNKNOWN);
	assert_int_equal(cond_status_parse("true", &s), FP_EINVAL);
	assert_int_equal(cond_status_parse(NULL, &s), FP_EINVAL);
	node_free(n);
}

/* ---- names and labels ---- */

static void test_names(void **state)
{
	(void)state;
	char e[256];
	assert_int_equal(name_validate("metadata.name", "r01n03", e, sizeof(e)), 0);
	assert_int_equal(name_validate("metadata.name", "a", e, sizeof(e)), 0);
	assert_int_equal(name_validate("metadata.name", "gpu-01.site-a", e, sizeof(e)), 0);
	const char *n63 = "abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abc";
	assert_int_equal(strlen(n63), 63);
	assert_int_equal(name_validate("metadata.name", n63, e, sizeof(e)), 0);
	const char *n64 = "abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abcd";
	assert_int_equal(name_validate("metadata.name", n64, e, sizeof(e)), FP_EINVAL);
	ASSERT_EQ_STR(e, "metadata.name: \"abcdefghij0123456789abcdefghij0123456789abcdefghij"
			 "0123456789abc...\" is longer than 63 characters");
	assert_int_equal(name_validate("spec.site", "", e, sizeof(e)), FP_EINVAL);
	ASSERT_EQ_STR(e, "spec.site: must not be empty");
	assert_int_equal(name_validate("spec.site", NULL, e, sizeof(e)), FP_EINVAL);
	ASSERT_EQ_STR(e, "spec.site: must not be empty");
	assert_int_equal(name_validate("metadata.name", "n1-", e, sizeof(e)), FP_EINVAL);
	ASSERT_EQ_STR(e, "metadata.name: \"n1-\" is not a valid name: use lower-case "
			 "letters, digits, '-' and '.', starting and ending with a letter "
			 "or digit (bad character at position 3)");
	assert_int_equal(name_validate("metadata.name", ".n1", e, sizeof(e)), FP_EINVAL);
	assert_int_equal(name_validate("metadata.name", "n_1", e, sizeof(e)), FP_EINVAL);
	assert_int_equal(name_validate("metadata.name", "n 1", e, sizeof(e)), FP_EINVAL);
	assert_int_equal(name_validate("metadata.name", "-", e, sizeof(e)), FP_EINVAL);

	assert_int_equal(label_validate("nvlink_domain", "nvl-7", e, sizeof(e)), 0);
	assert_int_equal(label_validate("example.com/team", "ML.Infra_1", e, sizeof(e)), 0);
	assert_int_equal(label_validate("k", "", e, sizeof(e)), 0);
	assert_int_equal(label_validate("", "v", e, sizeof(e)), FP_EINVAL);
	ASSERT_EQ_STR(e, "metadata.labels: key \"\" must be 1-63 characters of [A-Za-z0-9._/-]");
	assert_int_equal(label_validate("a b", "v", e, sizeof(e)), FP_EINVAL);
	ASSERT_EQ_STR(e, "metadata.labels: key \"a b\" must be 1-63 characters of [A-Za-z0-9._/-]");
	assert_int_equal(label_validate("k", "a/b", e, sizeof(e)), FP_EINVAL);
	ASSERT_EQ_STR(e, "metadata.labels.k: value must be 0-63 characters of [A-Za-z0-9._-]");
	assert_int_equal(label_validate(n63, n63, e, sizeof(e)), 0);
	assert_int_equal(label_validate(n64, "v", e, sizeof(e)), FP_EINVAL);
	assert_int_equal(label_validate("k", n64, e, sizeof(e)), FP_EINVAL);
}

static void test_bad_node_names(void **state)
{
	(void)state;
	expect_node_err("{\"metadata\":{\"name\":\"N1\"}}", 1, FP_EINVAL,
			"metadata.name: \"N1\" is not a valid name: use lower-case letters, "
			"digits, '-' and '.', starting and ending with a letter or digit (bad "
			"character at position 1)");
	expect_node_err("{\"metadata\":{\"name\":\"r01N3\"}}", 1, FP_EINVAL,
			"metadata.name: \"r01N3\" is not a valid name: use lower-case letters, "
			"digits, '-' and '.', starting and ending with a letter or digit (bad "
			"character at position 4)");
	expect_node_err("{\"metadata\":{\"name\":\"-n1\"}}", 1, FP_EINVAL,
			"metadata.name: \"-n1\" is not a valid name: use lower-case letters, "
			"digits, '-' and '.', starting and ending with a letter or digit (bad "
			"character at position 1)");
	expect_node_err("{\"metadata\":{\"name\":\"abcdefghij0123456789abcdefghij0123456789abcdef"
			"ghij0123456789abcd\"}}",
			1, FP_EINVAL,
			"metadata.name: \"abcdefghij0123456789abcdefghij0123456789abcdefghij0123456"
			"789abc...\" is longer than 63 characters");
	expect_node_err("{\"metadata\":{\"name\":\"\"}}", 1, FP_EINVAL,
			"metadata.name: must not be empty");
	expect_node_err("{\"metadata\":{}}", 1, FP_EINVAL, "metadata.name: required string");
	expect_node_err("{\"kind\":\"Node\"}", 1, FP_EINVAL,
			"metadata: expected an object with a name");
	expect_node_err(
		"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"site\":\"Site-A\"}}", 1, FP_EINVAL,
		"spec.site: \"Site-A\" is not a valid name: use lower-case letters, digits, "
		"'-' and '.', starting and ending with a letter or digit (bad character at "
		"position 1)");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"rack\":\"\"}}", 1, FP_EINVAL,
			"spec.rack: must not be empty");
	expect_node_err(
		"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"pool\":\"train.\"}}", 1, FP_EINVAL,
		"spec.pool: \"train.\" is not a valid name: use lower-case letters, digits, "
		"'-' and '.', starting and ending with a letter or digit (bad character at "
		"position 6)");
	/* label rules through the decoder */
	expect_node_err("{\"metadata\":{\"name\":\"n1\",\"labels\":{\"rack\":\"r 1\"}}}", 1,
			FP_EINVAL,
			"metadata.labels.rack: value must be 0-63 characters of [A-Za-z0-9._-]");
	expect_node_err("{\"metadata\":{\"name\":\"n1\",\"labels\":{\"rack\":1}}}", 1, FP_EINVAL,
			"metadata.labels.rack: expected a string");
	expect_node_err("{\"metadata\":{\"name\":\"n1\",\"labels\":[]}}", 1, FP_EINVAL,
			"metadata.labels: expected an object");
}

/* ---- node codec ---- */

static void test_enroll_minimal(void **state)
{
	(void)state;
	struct node *n = NULL;
	char e[256];
	assert_int_equal(decode_node("{\"metadata\":{\"name\":\"n1\"}}", 1, &n, e, sizeof(e)), 0);
	assert_non_null(n);
	ASSERT_EQ_STR(n->name, "n1");
	ASSERT_EQ_STR(n->bmc.driver, "sim");
	assert_null(n->bmc.address);
	assert_null(n->bmc.password);
	assert_null(n->bmc.extra);
	ASSERT_EQ_PHASE(n->phase, PHASE_ENROLLED);
	assert_int_equal(n->nholds, 0);
	assert_int_equal(n->nconditions, 0);
	assert_int_equal(n->nlabels, 0);
	assert_int_equal(n->nmacs, 0);
	assert_int_equal(n->gpu_count, 0);
	assert_int_equal(n->retire, 0);
	assert_null(n->site);
	assert_null(n->uid);
	assert_int_equal(n->resource_version, 0);
	assert_int_equal(node_schedulable(n), 0);
	node_free(n);

	/* kind is optional but, when present, must be "Node"; spec null = absent */
	assert_int_equal(decode_node("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n2\"},"
				     "\"spec\":null}",
				     1, &n, e, sizeof(e)),
			 0);
	ASSERT_EQ_STR(n->name, "n2");
	ASSERT_EQ_STR(n->bmc.driver, "sim");
	node_free(n);
	/* spec.bmc without driver still defaults to sim */
	assert_int_equal(decode_node("{\"metadata\":{\"name\":\"n3\"},\"spec\":{\"bmc\":{"
				     "\"username\":\"root\"}}}",
				     1, &n, e, sizeof(e)),
			 0);
	ASSERT_EQ_STR(n->bmc.driver, "sim");
	ASSERT_EQ_STR(n->bmc.username, "root");
	node_free(n);

	/* the enrolling client cannot choose the phase or holds (status is fleetplane's) */
	assert_int_equal(decode_node("{\"metadata\":{\"name\":\"n4\"},\"status\":{\"phase\":"
				     "\"available\"}}",
				     1, &n, e, sizeof(e)),
			 0);
	ASSERT_EQ_PHASE(n->phase, PHASE_ENROLLED);
	assert_int_equal(n->nholds, 0);
	node_free(n);

	expect_node_err("{\"kind\":\"Operation\",\"metadata\":{\"name\":\"n1\"}}", 1, FP_EINVAL,
			"kind: expected \"Node\"");
	expect_node_err("{\"kind\":7,\"metadata\":{\"name\":\"n1\"}}", 1, FP_EINVAL,
			"kind: expected \"Node\"");
	expect_node_err("[]", 1, FP_EINVAL, "expected a JSON object");
	expect_node_err("\"n1\"", 0, FP_EINVAL, "expected a JSON object");
}

static void test_enroll_full(void **state)
{
	(void)state;
	struct node *n = NULL;
	char e[256];
	const char *doc =
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"r01n03\",\"labels\":{\"rack\":\"r01\","
		"\"nvlink_domain\":\"nvl-7\"}},\"spec\":{\"site\":\"site-a\",\"rack\":\"r01\","
		"\"provider\":\"Acme\",\"pool\":\"train\",\"bmc\":{\"driver\":\"ipmi\",\"address\":"
		"\"10.0.0.3:623\",\"username\":\"admin\",\"password\":\"hunter2\",\"cipher_suite\":3,"
		"\"quirks\":[\"ipmi_open_session_privilege\"]},\"macs\":[\"aa:bb:cc:dd:ee:01\",\"AA:BB:CC:DD:EE:02\"],"
		"\"gpus\":{\"count\":8,\"model\":\"NVIDIA H100 80GB HBM3\"},\"retire\":false}}";
	assert_int_equal(decode_node(doc, 1, &n, e, sizeof(e)), 0);
	ASSERT_EQ_STR(n->name, "r01n03");
	assert_int_equal(n->nlabels, 2);
	ASSERT_EQ_STR(node_label_get(n, "rack"), "r01");
	ASSERT_EQ_STR(node_label_get(n, "nvlink_domain"), "nvl-7");
	assert_null(node_label_get(n, "pdu"));
	ASSERT_EQ_STR(n->site, "site-a");
	ASSERT_EQ_STR(n->rack, "r01");
	ASSERT_EQ_STR(n->provider, "Acme");
	ASSERT_EQ_STR(n->pool, "train");
	ASSERT_EQ_STR(n->bmc.driver, "ipmi");
	ASSERT_EQ_STR(n->bmc.address, "10.0.0.3:623");
	ASSERT_EQ_STR(n->bmc.username, "admin");
	ASSERT_EQ_STR(n->bmc.password, "hunter2");
	assert_null(n->bmc.password_file);
	assert_null(n->bmc.extra);
	assert_int_equal(n->bmc.cipher_suite, 3);
	assert_int_equal(n->bmc.tls_verify, 1);
	assert_int_equal(n->bmc.quirks, BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE);
	assert_int_equal(n->nmacs, 2);
	ASSERT_EQ_STR(n->macs[0], "aa:bb:cc:dd:ee:01");
	ASSERT_EQ_STR(n->macs[1], "AA:BB:CC:DD:EE:02");
	assert_int_equal(n->gpu_count, 8);
	ASSERT_EQ_STR(n->gpu_model, "NVIDIA H100 80GB HBM3");
	assert_int_equal(n->retire, 0);
	ASSERT_EQ_PHASE(n->phase, PHASE_ENROLLED);

	/* node_dup is deep */
	struct node *d = node_dup(n);
	assert_ptr_not_equal(d->name, n->name);
	assert_ptr_not_equal(d->macs[1], n->macs[1]);
	node_free(n);
	ASSERT_EQ_STR(d->bmc.password, "hunter2");
	ASSERT_EQ_STR(d->macs[1], "AA:BB:CC:DD:EE:02");
	ASSERT_EQ_STR(d->labels[0].key, "rack");
	assert_int_equal(d->bmc.cipher_suite, 3);
	assert_int_equal(d->bmc.quirks, BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE);
	node_free(d);
	/* spec.bmc extras are checked, each error names the field */
	expect_node_err(
		"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"quirks\":[\"x\"]}}}", 1,
		FP_EINVAL,
		"spec.bmc.quirks[0]: expected one of ipmi_open_session_privilege, "
		"ipmi_authentication_capabilities, ipmi_intel_2_0, ipmi_supermicro_2_0, "
		"ipmi_sun_2_0, ipmi_non_empty_integrity_check_value, ipmi_no_checksum_check, "
		"redfish_no_if_match, redfish_basic_auth");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"cipher_suite\":18}}}",
			1, FP_EINVAL, "spec.bmc.cipher_suite: 18 is out of range 0..17");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"tls_verify\":1}}}", 1,
			FP_EINVAL, "spec.bmc.tls_verify: expected true or false");
	/* ca_file names a file in serve's --bmc-credentials-dir, like password_file */
	expect_node_err(
		"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"ca_file\":"
		"\"/etc/shadow\"}}}",
		1, FP_EINVAL,
		"spec.bmc.ca_file: expected a plain file name in serve's --bmc-credentials-dir "
		"(letters, digits, '.', '_', '-'; no '/'), not a path");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"ca_file\":"
			"\"../ca.pem\"}}}",
			1, FP_EINVAL,
			"spec.bmc.ca_file: must not start with '.'; name a file in serve's "
			"--bmc-credentials-dir");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"ca_file\":"
			"\"\"}}}",
			1, FP_EINVAL,
			"spec.bmc.ca_file: expected a file name of 1..128 characters");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"ca_file\":7}}}", 1,
			FP_EINVAL, "spec.bmc.ca_file: expected a string");
	assert_int_equal(decode_node("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{"
				     "\"driver\":\"redfish\",\"address\":\"https://10.0.0.9\","
				     "\"ca_file\":\"bmc-ca_2.pem\"}}}",
				     1, &n, e, sizeof(e)),
			 0);
	ASSERT_EQ_STR(n->bmc.ca_file, "bmc-ca_2.pem");
	node_free(n);
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"system\":\"a/b\"}}}",
			1, FP_EINVAL,
			"spec.bmc.system: \"a/b\" is not a Redfish resource Id (letters, digits, "
			"'.', '_', '-')");

	assert_int_equal(decode_node("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"retire\":true,"
				     "\"bmc\":{\"driver\":\"redfish\",\"address\":"
				     "\"https://10.0.0.9\"}}}",
				     1, &n, e, sizeof(e)),
			 0);
	assert_int_equal(n->retire, 1);
	ASSERT_EQ_STR(n->bmc.driver, "redfish");
	node_free(n);
}

static void test_unknown_fields(void **state)
{
	(void)state;
	/* each level of the enroll shape */
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"colour\":1}", 1, FP_EINVAL,
			"unknown field colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\",\"colour\":1}}", 1, FP_EINVAL,
			"unknown field metadata.colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"colour\":1}}", 1, FP_EINVAL,
			"unknown field spec.colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"colour\":\"red\"}}}",
			1, FP_EINVAL, "unknown field spec.bmc.colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"gpus\":{\"count\":8,"
			"\"colour\":1}}}",
			1, FP_EINVAL, "unknown field spec.gpus.colour");
	/* the same through node_from_json, plus every level of status */
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"colour\":1}", 0, FP_EINVAL,
			"unknown field colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"colour\":\"red\"}}}",
			0, FP_EINVAL, "unknown field spec.bmc.colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"colour\":1}}", 0, FP_EINVAL,
			"unknown field status.colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"holds\":[{\"owner\":"
			"\"health\",\"reason\":\"x\",\"colour\":1}]}}",
			0, FP_EINVAL, "unknown field status.holds[].colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":"
			"\"PoweredOn\",\"status\":\"True\",\"colour\":1}]}}",
			0, FP_EINVAL, "unknown field status.conditions[].colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"lastBoot\":{\"colour\":1}}}",
			0, FP_EINVAL, "unknown field status.lastBoot.colour");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"validation\":{\"colour\":"
			"1}}}",
			0, FP_EINVAL, "unknown field status.validation.colour");
	/* keys are case-sensitive */
	expect_node_err("{\"Metadata\":{\"name\":\"n1\"}}", 1, FP_EINVAL, "unknown field Metadata");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"Password\":\"x\"}}}",
			1, FP_EINVAL, "unknown field spec.bmc.Password");
}

/* spec.adopt: decoded as true/false, written back only when set (the import's nodes carry it
 * through the store and the public view). */
static void test_adopt_codec(void **state)
{
	(void)state;
	char err[256];
	struct node *n = NULL;
	ASSERT_OK(decode_node("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"adopt\":true}}", 1, &n,
			      err, sizeof(err)));
	ASSERT_EQ_INT(n->adopt, 1);
	json_t *doc = node_to_json(n, NODE_JSON_PUBLIC);
	assert_true(json_is_true(json_object_get(json_object_get(doc, "spec"), "adopt")));
	json_decref(doc);
	node_free(n);
	n = NULL;
	ASSERT_OK(decode_node("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"adopt\":false}}", 1, &n,
			      err, sizeof(err)));
	ASSERT_EQ_INT(n->adopt, 0);
	doc = node_to_json(n, NODE_JSON_STORE);
	assert_null(json_object_get(json_object_get(doc, "spec"), "adopt"));
	json_decref(doc);
	node_free(n);
}

static void test_wrong_types(void **state)
{
	(void)state;
	expect_node_err("{\"metadata\":\"n1\"}", 1, FP_EINVAL,
			"metadata: expected an object with a name");
	expect_node_err("{\"metadata\":{\"name\":5}}", 1, FP_EINVAL,
			"metadata.name: required string");
	expect_node_err("{\"metadata\":{\"name\":\"n1\",\"uid\":5}}", 1, FP_EINVAL,
			"metadata.uid: expected a string");
	expect_node_err("{\"metadata\":{\"name\":\"n1\",\"createdAt\":\"yesterday\"}}", 1,
			FP_EINVAL,
			"metadata.createdAt: expected an RFC 3339 UTC time like "
			"2026-01-02T03:04:05Z");
	expect_node_err("{\"metadata\":{\"name\":\"n1\",\"createdAt\":1767323045}}", 1, FP_EINVAL,
			"metadata.createdAt: expected an RFC 3339 UTC time like "
			"2026-01-02T03:04:05Z");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":\"x\"}", 1, FP_EINVAL,
			"spec: expected an object");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"site\":5}}", 1, FP_EINVAL,
			"spec.site: expected a string");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"provider\":[]}}", 1, FP_EINVAL,
			"spec.provider: expected a string");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":\"ipmi\"}}", 1,
			FP_EINVAL, "spec.bmc: expected an object");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"password\":1234}}}",
			1, FP_EINVAL, "spec.bmc.password: expected a string");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"gpus\":8}}", 1, FP_EINVAL,
			"spec.gpus: expected an object");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"gpus\":{\"count\":\"8\"}}}", 1,
			FP_EINVAL, "spec.gpus.count: expected an integer");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"gpus\":{\"count\":8.0}}}", 1,
			FP_EINVAL, "spec.gpus.count: expected an integer");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"gpus\":{\"count\":65}}}", 1,
			FP_EINVAL, "spec.gpus.count: 65 is out of range 0..64");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"gpus\":{\"count\":-1}}}", 1,
			FP_EINVAL, "spec.gpus.count: -1 is out of range 0..64");
	expect_node_err(
		"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"macs\":\"aa:bb:cc:dd:ee:ff\"}}", 1,
		FP_EINVAL, "spec.macs: expected an array");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"retire\":\"yes\"}}", 1,
			FP_EINVAL, "spec.retire: expected true or false");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"retire\":1}}", 1, FP_EINVAL,
			"spec.retire: expected true or false");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"adopt\":\"yes\"}}", 1,
			FP_EINVAL, "spec.adopt: expected true or false");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"adopt\":1}}", 1, FP_EINVAL,
			"spec.adopt: expected true or false");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"driver\":\"IPMI\","
			"\"address\":\"h\"}}}",
			1, FP_EINVAL, "spec.bmc.driver: \"IPMI\" is not one of sim, ipmi, redfish");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"driver\":\"ipmi\"}}}",
			1, FP_EINVAL, "spec.bmc.address: required for driver ipmi");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"driver\":\"redfish\","
			"\"address\":null}}}",
			1, FP_EINVAL, "spec.bmc.address: required for driver redfish");
	/* strings are bounded: site 63, bmc.username 64 */
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"username\":"
			"\"abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abcde\"}}}",
			1, FP_EINVAL, "spec.bmc.username: longer than 64 characters");
	/* status, through node_from_json */
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":[]}", 0, FP_EINVAL,
			"status: expected an object");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"phase\":\"serving\"}}", 0,
			FP_EINVAL, "status.phase: unknown phase \"serving\"");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"phase\":4}}", 0, FP_EINVAL,
			"status.phase: expected a string");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"holds\":{}}}", 0, FP_EINVAL,
			"status.holds: expected an array of at most 32 holds");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"holds\":[\"health\"]}}", 0,
			FP_EINVAL, "status.holds[]: expected an object");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"holds\":[{\"owner\":"
			"\"health\"}]}}",
			0, FP_EINVAL, "status.holds[0]: owner and reason are required");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"holds\":[{\"owner\":"
			"\"health\",\"reason\":\"a\"},{\"owner\":\"health\",\"reason\":\"b\"}]}}",
			0, FP_EINVAL, "status.holds[1]: duplicate owner \"health\"");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":"
			"\"PoweredOn\",\"status\":true}]}}",
			0, FP_EINVAL,
			"status.conditions[0]: type and status (True|False|Unknown) are required");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":"
			"\"PoweredOn\",\"status\":\"True\"},{\"type\":\"PoweredOn\",\"status\":"
			"\"False\"}]}}",
			0, FP_EINVAL, "status.conditions[1]: duplicate type \"PoweredOn\"");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"validation\":{\"passed\":"
			"\"yes\"}}}",
			0, FP_EINVAL, "status.validation.passed: expected true or false");
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"lastBoot\":{\"at\":"
			"\"2026-01-02T03:04:05+01:00\"}}}",
			0, FP_EINVAL,
			"status.lastBoot.at: expected an RFC 3339 UTC time like "
			"2026-01-02T03:04:05Z");
	/* times before 1970 cannot be written back (fp_time_format), so they are refused */
	expect_node_err("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"phaseSince\":"
			"\"1969-12-31T23:59:59.500Z\"}}",
			0, FP_EINVAL,
			"status.phaseSince: expected an RFC 3339 UTC time like "
			"2026-01-02T03:04:05Z");
}

static void test_macs(void **state)
{
	(void)state;
	struct node *n = NULL;
	char e[128];
	assert_int_equal(decode_node("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"macs\":["
				     "\"0a:1b:2c:3d:4e:5f\",\"FF:ff:00:00:00:00\"]}}",
				     1, &n, e, sizeof(e)),
			 0);
	assert_int_equal(n->nmacs, 2);
	ASSERT_EQ_STR(n->macs[0], "0a:1b:2c:3d:4e:5f");
	node_free(n);
	assert_int_equal(decode_node("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"macs\":[]}}", 1,
				     &n, e, sizeof(e)),
			 0);
	assert_int_equal(n->nmacs, 0);
	node_free(n);

	static const char *const bad[] = {
		"\"aa-bb-cc-dd-ee-ff\"",  /* dashes */
		"\"aa:bb:cc:dd:ee\"",     /* 5 octets */
		"\"aa:bb:cc:dd:ee:f\"",   /* 16 characters */
		"\"aa:bb:cc:dd:ee:ff:\"", /* 18 characters */
		"\"aa:bb:cc:dd:ee:fg\"",  /* not hex */
		"\"aabb:cc:dd:ee:ff0\"",  /* colon misplaced, 17 characters */
		"\"\"",
		"12",
		"null",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char doc[200];
		snprintf(
			doc, sizeof(doc),
			"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"macs\":[\"aa:bb:cc:dd:ee:ff\","
			"%s]}}",
			bad[i]);
		expect_node_err(doc, 1, FP_EINVAL,
				"spec.macs[1]: expected a MAC address like aa:bb:cc:dd:ee:ff");
	}
	/* at most NODE_MAX_MACS (16) */
	char doc[1024];
	size_t off = (size_t)snprintf(doc, sizeof(doc),
				      "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"macs\":[");
	for (int i = 0; i < 17; i++)
		off += (size_t)snprintf(doc + off, sizeof(doc) - off, "%s\"aa:bb:cc:dd:ee:%02x\"",
					i ? "," : "", i);
	snprintf(doc + off, sizeof(doc) - off, "]}}");
	expect_node_err(doc, 1, FP_EINVAL, "spec.macs: more than 16 entries");
}

/* A stored document in canonical form: decoding then encoding in STORE mode gives it back. */
static const char *const full_doc =
	"{\"kind\":\"Node\","
	"\"metadata\":{\"name\":\"r01n03\",\"uid\":\"6f1c2a9e-0d3b-4c55-9a1e-2b7d8e4f0a11\","
	"\"labels\":{\"rack\":\"r01\",\"pdu\":\"pdu-a\"},\"createdAt\":\"2026-01-02T03:04:05.000Z\"},"
	"\"spec\":{\"site\":\"site-a\",\"rack\":\"r01\",\"provider\":\"acme\",\"pool\":\"train\","
	"\"bmc\":{\"cipher_suite\":17,\"driver\":\"ipmi\",\"address\":\"10.0.0.3:623\","
	"\"username\":\"admin\",\"password\":\"s3cr3t-pw-907\",\"password_file\":\"/etc/fp/bmc\"},"
	"\"macs\":[\"aa:bb:cc:dd:ee:01\"],\"gpus\":{\"count\":8,\"model\":\"NVIDIA H100 80GB HBM3\"},"
	"\"retire\":true},"
	"\"status\":{\"phase\":\"draining\",\"phaseSince\":\"2026-11-30T04:49:29.803Z\","
	"\"holds\":[{\"owner\":\"health\",\"reason\":\"xid:79\",\"since\":\"2026-11-30T04:49:29.803Z\"},"
	"{\"owner\":\"operator:alice\",\"reason\":\"kernel\",\"since\":\"2026-01-02T03:04:05.000Z\","
	"\"expires\":\"2026-11-30T04:49:29.803Z\"}],"
	"\"conditions\":[{\"type\":\"BMCReachable\",\"status\":\"True\",\"reason\":\"Responding\","
	"\"message\":\"ok\",\"since\":\"2026-01-02T03:04:05.000Z\"},"
	"{\"type\":\"GPUHealthy\",\"status\":\"Unknown\",\"since\":\"2026-11-30T04:49:29.803Z\"}],"
	"\"operation\":\"op-000123\","
	"\"lastBoot\":{\"at\":\"2026-11-30T04:49:29.803Z\",\"bootId\":\"b-42\"},"
	"\"validation\":{\"at\":\"2026-11-30T04:49:29.803Z\",\"passed\":true},"
	"\"inventory\":{\"gpus\":[{\"index\":0,\"uuid\":\"GPU-1\"}],\"memGiB\":2048}}}";

static void test_store_roundtrip(void **state)
{
	(void)state;
	struct node *n = NULL, *n2 = NULL;
	char e[256];
	assert_int_equal(decode_node(full_doc, 0, &n, e, sizeof(e)), 0);
	assert_int_equal(n->resource_version, 7);
	ASSERT_EQ_STR(n->uid, "6f1c2a9e-0d3b-4c55-9a1e-2b7d8e4f0a11");
	assert_int_equal(n->created_at, T0);
	ASSERT_EQ_PHASE(n->phase, PHASE_DRAINING);
	assert_int_equal(n->phase_since, T1);
	assert_int_equal(n->nholds, 2);
	ASSERT_EQ_STR(n->holds[1].owner, "operator:alice");
	assert_int_equal(n->holds[1].since, T0);
	assert_int_equal(n->holds[1].expires, T1);
	assert_int_equal(n->holds[0].expires, 0);
	assert_int_equal(n->nconditions, 2);
	assert_int_equal(n->conditions[1].status, COND_UNKNOWN);
	assert_null(n->conditions[1].reason);
	ASSERT_EQ_STR(n->operation, "op-000123");
	assert_int_equal(n->last_boot_at, T1);
	ASSERT_EQ_STR(n->last_boot_id, "b-42");
	assert_int_equal(n->validated_at, T1);
	assert_int_equal(n->validation_passed, 1);
	assert_int_equal(json_integer_value(jsonx_path(n->inventory, "memGiB")), 2048);
	assert_int_equal(n->retire, 1);
	ASSERT_EQ_STR(n->bmc.password_file, "/etc/fp/bmc");

	json_t *orig = parse(full_doc);
	json_t *j1 = node_to_json(n, NODE_JSON_STORE);
	if (!json_equal(j1, orig)) {
		char *s = jsonx_dumps(j1);
		fail_msg("store encoding differs from the document:\n%s", s);
	}
	/* STORE mode carries no resourceVersion (the store's mod_revision is the truth) */
	assert_null(jsonx_path(j1, "metadata.resourceVersion"));
	ASSERT_EQ_STR(jsonx_str(j1, "spec.bmc.password"), "s3cr3t-pw-907");
	assert_int_equal(node_from_json(j1, 9, &n2, e, sizeof(e)), 0);
	assert_int_equal(n2->resource_version, 9);
	json_t *j2 = node_to_json(n2, NODE_JSON_STORE);
	assert_true(json_equal(j1, j2));
	/* node_dup encodes the same */
	struct node *d = node_dup(n2);
	json_t *j3 = node_to_json(d, NODE_JSON_STORE);
	assert_true(json_equal(j1, j3));
	json_decref(j3);
	node_free(d);
	json_decref(j2);
	json_decref(j1);
	json_decref(orig);
	node_free(n2);
	node_free(n);

	/* minimal enrolled node: encoding has the documented shape */
	assert_int_equal(decode_node("{\"metadata\":{\"name\":\"n1\"}}", 1, &n, e, sizeof(e)), 0);
	j1 = node_to_json(n, NODE_JSON_STORE);
	json_t *want = parse("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{}},"
			     "\"spec\":{\"bmc\":{\"driver\":\"sim\"}},"
			     "\"status\":{\"phase\":\"enrolled\",\"holds\":[],\"conditions\":[]}}");
	if (!json_equal(j1, want)) {
		char *s = jsonx_dumps(j1);
		fail_msg("minimal encoding: %s", s);
	}
	json_decref(want);
	assert_int_equal(node_from_json(j1, 1, &n2, e, sizeof(e)), 0);
	j2 = node_to_json(n2, NODE_JSON_STORE);
	assert_true(json_equal(j1, j2));
	json_decref(j1);
	json_decref(j2);
	node_free(n2);
	node_free(n);
}

/* status.servedAt, status.remediation and status.remediationHistory (design4 "Node status
 * additions"): decode, exact round trip, node_dup, history bound, strict errors naming fields. */
static const char *remed_doc =
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"r01n03\",\"labels\":{}},"
	"\"spec\":{\"bmc\":{\"driver\":\"sim\"}},"
	"\"status\":{\"phase\":\"repairing\",\"holds\":[],\"conditions\":[],"
	"\"servedAt\":\"2026-01-02T03:04:05.000Z\","
	"\"remediation\":{\"ladder\":[\"gpu_reset\",\"reboot\",\"rma\"],\"rung\":\"reboot\","
	"\"code\":\"xid:79\",\"gpu\":\"0000:3b:00.0\",\"reason\":\"XID 79 on GPU 3\","
	"\"policy\":\"default\",\"healthEvents\":[\"r01n03.k-1\",\"r01n03.k-2\"],"
	"\"since\":\"2026-11-30T04:49:29.803Z\",\"attempts\":2,\"rma\":\"rma-1\"},"
	"\"remediationHistory\":[{\"code\":\"xid:48\",\"rung\":\"gpu_reset\",\"result\":\"succeeded\","
	"\"at\":\"2026-01-02T03:04:05.000Z\"},{\"code\":\"xid:79\",\"gpu\":\"0000:3b:00.0\","
	"\"rung\":\"rma\",\"result\":\"rma\",\"at\":\"2026-11-30T04:49:29.803Z\"}]}}";

static void test_remediation_codec(void **state)
{
	(void)state;
	struct node *n = NULL, *n2 = NULL;
	char e[256];
	assert_int_equal(decode_node(remed_doc, 0, &n, e, sizeof(e)), 0);
	assert_int_equal(n->served_at, T0);
	assert_int_equal(n->remediation.active, 1);
	assert_int_equal(n->remediation.nladder, 3);
	assert_int_equal(n->remediation.ladder[0], RUNG_GPU_RESET);
	assert_int_equal(n->remediation.ladder[1], RUNG_REBOOT);
	assert_int_equal(n->remediation.ladder[2], RUNG_RMA);
	assert_int_equal(n->remediation.rung, 1);
	assert_int_equal(n->remediation.attempts, 2);
	ASSERT_EQ_STR(n->remediation.code, "xid:79");
	ASSERT_EQ_STR(n->remediation.gpu, "0000:3b:00.0");
	ASSERT_EQ_STR(n->remediation.reason, "XID 79 on GPU 3");
	ASSERT_EQ_STR(n->remediation.policy, "default");
	assert_int_equal(n->remediation.nevents, 2);
	ASSERT_EQ_STR(n->remediation.events[1], "r01n03.k-2");
	assert_int_equal(n->remediation.since, T1);
	ASSERT_EQ_STR(n->remediation.rma, "rma-1");
	assert_int_equal(n->nremediation_history, 2);
	ASSERT_EQ_STR(n->remediation_history[0].code, "xid:48");
	assert_null(n->remediation_history[0].gpu);
	assert_int_equal(n->remediation_history[0].rung, RUNG_GPU_RESET);
	ASSERT_EQ_STR(n->remediation_history[0].result, "succeeded");
	assert_int_equal(n->remediation_history[0].at, T0);
	assert_int_equal(n->remediation_history[1].rung, RUNG_RMA);

	json_t *orig = parse(remed_doc);
	json_t *j1 = node_to_json(n, NODE_JSON_STORE);
	if (!json_equal(j1, orig))
		fail_msg("remediation encoding differs:\n%s", jsonx_dumps(j1));
	struct node *d = node_dup(n);
	json_t *j2 = node_to_json(d, NODE_JSON_PUBLIC);
	assert_true(json_equal(json_object_get(j2, "status"), json_object_get(orig, "status")));
	json_decref(j2);
	node_free(d);
	json_decref(j1);
	json_decref(orig);

	/* every rung tried: "rung" absent, and back */
	n->remediation.rung = 3;
	j1 = node_to_json(n, NODE_JSON_STORE);
	assert_null(jsonx_path(j1, "status.remediation.rung"));
	assert_int_equal(node_from_json(j1, 3, &n2, e, sizeof(e)), 0);
	assert_int_equal(n2->remediation.rung, 3);
	json_decref(j1);
	node_free(n2);
	n->remediation.rung = 1;

	/* history keeps the newest 8, oldest dropped */
	for (int i = 0; i < 7; i++)
		node_remediation_history_append(n, "xid:94", NULL, RUNG_REBOOT, "failed", T1 + i);
	assert_int_equal(n->nremediation_history, 8);
	ASSERT_EQ_STR(n->remediation_history[0].code, "xid:79");
	assert_int_equal(n->remediation_history[7].at, T1 + 6);
	j1 = node_to_json(n, NODE_JSON_STORE);
	assert_int_equal(node_from_json(j1, 3, &n2, e, sizeof(e)), 0);
	assert_int_equal(n2->nremediation_history, 8);
	json_decref(j1);
	node_free(n2);
	/* cleared remediation renders as absent */
	node_remediation_release(&n->remediation);
	j1 = node_to_json(n, NODE_JSON_STORE);
	assert_null(jsonx_path(j1, "status.remediation"));
	json_decref(j1);
	node_free(n);

	ASSERT_EQ_STR(remediation_rung_name(RUNG_GPU_RESET), "gpu_reset");
	ASSERT_EQ_STR(remediation_rung_name(RUNG_REIMAGE), "reimage");
	enum remediation_rung r;
	assert_int_equal(remediation_rung_parse("rma", &r), 0);
	assert_int_equal(r, RUNG_RMA);
	assert_int_equal(remediation_rung_parse("reset", &r), FP_EINVAL);

#define RDOC(x) "{\"metadata\":{\"name\":\"n1\"},\"status\":{" x "}}"
	expect_node_err(RDOC("\"remediation\":{\"ladder\":[\"reboot\"],\"rung\":\"reboot\","
			     "\"code\":\"xid:79\",\"colour\":1}"),
			0, FP_EINVAL, "unknown field status.remediation.colour");
	expect_node_err(
		RDOC("\"remediation\":{\"ladder\":[],\"rung\":\"reboot\",\"code\":\"x:1\"}"), 0,
		FP_EINVAL, "status.remediation.ladder: expected an array of 1..4 rungs");
	expect_node_err(
		RDOC("\"remediation\":{\"ladder\":[\"reboot\",\"nuke\"],\"rung\":\"reboot\","
		     "\"code\":\"x:1\"}"),
		0, FP_EINVAL,
		"status.remediation.ladder[1]: expected one of gpu_reset, reboot, reimage, "
		"rma");
	expect_node_err(RDOC("\"remediation\":{\"ladder\":[\"reimage\",\"reboot\"],"
			     "\"rung\":\"reboot\",\"code\":\"x:1\"}"),
			0, FP_EINVAL,
			"status.remediation.ladder[1]: rungs must be distinct and in escalation "
			"order (gpu_reset, reboot, reimage, rma)");
	expect_node_err(RDOC("\"remediation\":{\"ladder\":[\"reboot\"],\"rung\":\"rma\","
			     "\"code\":\"x:1\"}"),
			0, FP_EINVAL, "status.remediation.rung: \"rma\" is not in the ladder");
	expect_node_err(RDOC("\"remediation\":{\"ladder\":[\"reboot\"],\"rung\":\"reboot\"}"), 0,
			FP_EINVAL, "status.remediation.code: required string");
	expect_node_err(RDOC("\"remediation\":{\"ladder\":[\"reboot\"],\"rung\":\"reboot\","
			     "\"code\":\"x:1\",\"attempts\":\"2\"}"),
			0, FP_EINVAL, "status.remediation.attempts: expected an integer");
	expect_node_err(RDOC("\"remediation\":{\"ladder\":[\"reboot\"],\"rung\":\"reboot\","
			     "\"code\":\"x:1\",\"healthEvents\":[\"\"]}"),
			0, FP_EINVAL,
			"status.remediation.healthEvents[0]: expected a health event name of "
			"1..128 characters");
	expect_node_err(RDOC("\"servedAt\":\"yesterday\""), 0, FP_EINVAL,
			"status.servedAt: expected an RFC 3339 UTC time like 2026-01-02T03:04:05Z");
	expect_node_err(RDOC("\"remediationHistory\":[{\"code\":\"x:1\",\"rung\":\"reboot\","
			     "\"result\":\"meh\",\"at\":\"2026-01-02T03:04:05Z\"}]"),
			0, FP_EINVAL,
			"status.remediationHistory[0].result: expected succeeded, failed or rma");
	expect_node_err(RDOC("\"remediationHistory\":[{\"code\":\"x:1\",\"rung\":\"reboot\","
			     "\"result\":\"failed\",\"at\":\"2026-01-02T03:04:05Z\",\"by\":1}]"),
			0, FP_EINVAL, "unknown field status.remediationHistory[0].by");
	expect_node_err(RDOC("\"remediationHistory\":[{\"code\":\"x:1\",\"result\":\"failed\","
			     "\"at\":\"2026-01-02T03:04:05Z\"}]"),
			0, FP_EINVAL,
			"status.remediationHistory[0].rung: expected one of gpu_reset, reboot, "
			"reimage, rma");
#undef RDOC
}

static void test_public_mode(void **state)
{
	(void)state;
	struct node *n = NULL;
	char e[256];
	assert_int_equal(decode_node(full_doc, 0, &n, e, sizeof(e)), 0);
	n->resource_version = 4242;
	json_t *j = node_to_json(n, NODE_JSON_PUBLIC);
	char *s = jsonx_dumps(j);
	assert_null(strstr(s, "s3cr3t-pw-907"));
	assert_null(strstr(s, "\"password\""));
	assert_null(jsonx_path(j, "spec.bmc.password"));
	ASSERT_EQ_STR(jsonx_str(j, "metadata.resourceVersion"), "4242");
	assert_non_null(strstr(s, "\"resourceVersion\":\"4242\""));
	/* the rest of the BMC spec is still shown */
	ASSERT_EQ_STR(jsonx_str(j, "spec.bmc.username"), "admin");
	/* where the password lives on the server is not shown either */
	assert_null(jsonx_path(j, "spec.bmc.password_file"));
	assert_null(strstr(s, "/etc/fp/bmc"));
	assert_int_equal(json_integer_value(jsonx_path(j, "spec.bmc.cipher_suite")), 17);
	ASSERT_EQ_STR(jsonx_str(j, "status.phase"), "draining");
	free(s);
	/* the in-memory node still has it (encoding does not consume the secret) */
	ASSERT_EQ_STR(n->bmc.password, "s3cr3t-pw-907");
	/* a public document decodes back (resourceVersion is accepted and ignored) */
	struct node *n2 = NULL;
	assert_int_equal(node_from_json(j, 5, &n2, e, sizeof(e)), 0);
	assert_int_equal(n2->resource_version, 5);
	assert_null(n2->bmc.password);
	node_free(n2);
	json_decref(j);
	node_free(n);

	/* STORE mode of the same node does contain it, so the PUBLIC check above can fail */
	assert_int_equal(decode_node(full_doc, 0, &n, e, sizeof(e)), 0);
	j = node_to_json(n, NODE_JSON_STORE);
	s = jsonx_dumps(j);
	assert_non_null(strstr(s, "\"password\":\"s3cr3t-pw-907\""));
	free(s);
	json_decref(j);
	node_free(n);
}

/* ---- operation codec ---- */

static const char *const op_doc =
	"{\"kind\":\"Operation\","
	"\"metadata\":{\"name\":\"op-000123\",\"createdAt\":\"2026-01-02T03:04:05.000Z\"},"
	"\"spec\":{\"node\":\"r01n03\",\"kind\":\"provision\",\"steps\":[\"set_boot_pxe\","
	"\"power_cycle\",\"wait_callback\"],\"reason\":\"onboarding\",\"actor\":\"lifecycle\","
	"\"idempotencyKey\":\"k-77\",\"params\":{\"image\":\"ubuntu-22.04\"}},"
	"\"status\":{\"state\":\"running\",\"step\":2,\"attempt\":3,"
	"\"deadline\":\"2026-11-30T04:49:29.803Z\",\"stepDeadline\":\"2026-11-30T04:49:29.803Z\","
	"\"startedAt\":\"2026-01-02T03:04:05.000Z\",\"updatedAt\":\"2026-11-30T04:49:29.803Z\","
	"\"lastError\":\"callback not received\"}}";

static int decode_op(const char *s, struct operation **out, char *e, size_t elen)
{
	json_t *doc = parse(s);
	e[0] = 0;
	int rc = operation_from_json(doc, 11, out, e, elen);
	json_decref(doc);
	return rc;
}

static void expect_op_err(const char *s, const char *want)
{
	struct operation *op = (struct operation *)1;
	char e[256];
	int rc = decode_op(s, &op, e, sizeof(e));
	if (rc != FP_EINVAL || strcmp(e, want) != 0)
		fail_msg("operation %s\n  rc %d\n  err \"%s\"\n want \"%s\"", s, rc, e, want);
	assert_null(op);
}

static void test_operation_roundtrip(void **state)
{
	(void)state;
	struct operation *op = NULL, *op2 = NULL;
	char e[256];
	assert_int_equal(decode_op(op_doc, &op, e, sizeof(e)), 0);
	ASSERT_EQ_STR(op->id, "op-000123");
	assert_int_equal(op->resource_version, 11);
	ASSERT_EQ_STR(op->node, "r01n03");
	ASSERT_EQ_STR(op->kind, "provision");
	assert_int_equal(op->nsteps, 3);
	ASSERT_EQ_STR(op->steps[2], "wait_callback");
	assert_int_equal(op->step, 2);
	assert_int_equal(op->attempt, 3);
	assert_int_equal(op->state, OP_RUNNING);
	assert_int_equal(op->created_at, T0);
	assert_int_equal(op->deadline, T1);
	assert_int_equal(op->started_at, T0);
	assert_int_equal(op->finished_at, 0);
	ASSERT_EQ_STR(op->idempotency_key, "k-77");
	ASSERT_EQ_STR(op->last_error, "callback not received");
	ASSERT_EQ_STR(jsonx_str(op->params, "image"), "ubuntu-22.04");
	assert_int_equal(op_state_terminal(op->state), 0);

	json_t *orig = parse(op_doc);
	json_t *j1 = operation_to_json(op, 0);
	if (!json_equal(j1, orig)) {
		char *s = jsonx_dumps(j1);
		fail_msg("operation encoding differs:\n%s", s);
	}
	assert_int_equal(operation_from_json(j1, 12, &op2, e, sizeof(e)), 0);
	json_t *j2 = operation_to_json(op2, 0);
	assert_true(json_equal(j1, j2));
	json_decref(j2);
	struct operation *d = operation_dup(op2);
	j2 = operation_to_json(d, 1);
	ASSERT_EQ_STR(jsonx_str(j2, "metadata.resourceVersion"), "12");
	json_object_del(json_object_get(j2, "metadata"), "resourceVersion");
	assert_true(json_equal(j1, j2));
	json_decref(j2);
	operation_free(d);
	operation_free(op2);
	json_decref(j1);
	json_decref(orig);
	operation_free(op);

	/* op states */
	static const char *const states[5] = {"pending", "running", "succeeded", "failed",
					      "cancelled"};
	static const int terminal[5] = {0, 0, 1, 1, 1};
	for (int i = 0; i < 5; i++) {
		enum op_state s = OP_PENDING;
		ASSERT_EQ_STR(op_state_name((enum op_state)i), states[i]);
		assert_int_equal(op_state_parse(states[i], &s), 0);
		assert_int_equal(s, i);
		assert_int_equal(op_state_terminal(s), terminal[i]);
	}
	enum op_state s;
	assert_int_equal(op_state_parse("done", &s), FP_EINVAL);
	ASSERT_EQ_STR(op_state_name((enum op_state)5), "unknown");
}

static void test_operation_errors(void **state)
{
	(void)state;
	const char *base_meta = "\"metadata\":{\"name\":\"op-1\"}";
	const char *base_spec = "\"spec\":{\"node\":\"n1\",\"kind\":\"power\",\"steps\":[\"on\"]}";
	char doc[512];
	snprintf(doc, sizeof(doc), "{%s,%s,\"status\":{\"state\":\"pending\"}}", base_meta,
		 base_spec);
	struct operation *op = NULL;
	char e[256];
	assert_int_equal(decode_op(doc, &op, e, sizeof(e)), 0);
	assert_int_equal(op->state, OP_PENDING);
	assert_int_equal(op->step, 0);
	assert_int_equal(op->attempt, 0);
	assert_null(op->params);
	operation_free(op);

	snprintf(doc, sizeof(doc), "{\"kind\":\"Node\",%s,%s,\"status\":{\"state\":\"pending\"}}",
		 base_meta, base_spec);
	expect_op_err(doc, "kind: expected \"Operation\"");
	snprintf(doc, sizeof(doc), "{%s,%s}", base_meta, base_spec);
	expect_op_err(doc, "operation: metadata, spec, status required");
	snprintf(doc, sizeof(doc), "{%s,%s,\"status\":{\"state\":\"pending\",\"colour\":1}}",
		 base_meta, base_spec);
	expect_op_err(doc, "unknown field status.colour");
	snprintf(doc, sizeof(doc),
		 "{\"metadata\":{\"name\":\"op-1\",\"colour\":1},%s,\"status\":{\"state\":"
		 "\"pending\"}}",
		 base_spec);
	expect_op_err(doc, "unknown field metadata.colour");
	snprintf(doc, sizeof(doc),
		 "{%s,\"spec\":{\"node\":\"n1\",\"kind\":\"power\",\"steps\":[],\"colour\":1},"
		 "\"status\":{\"state\":\"pending\"}}",
		 base_meta);
	expect_op_err(doc, "unknown field spec.colour");
	snprintf(doc, sizeof(doc), "{%s,%s,\"status\":{\"state\":\"done\"}}", base_meta, base_spec);
	expect_op_err(doc, "status.state: unknown state");
	snprintf(doc, sizeof(doc), "{%s,%s,\"status\":{}}", base_meta, base_spec);
	expect_op_err(doc, "status.state: unknown state");
	snprintf(doc, sizeof(doc), "{%s,%s,\"status\":{\"state\":\"pending\",\"step\":2}}",
		 base_meta, base_spec);
	expect_op_err(doc, "status.step: beyond the last step");
	snprintf(doc, sizeof(doc), "{%s,%s,\"status\":{\"state\":\"pending\",\"step\":\"1\"}}",
		 base_meta, base_spec);
	expect_op_err(doc, "status.step: expected an integer");
	snprintf(doc, sizeof(doc), "{%s,%s,\"status\":{\"state\":\"pending\",\"step\":17}}",
		 base_meta, base_spec);
	expect_op_err(doc, "status.step: 17 is out of range 0..16");
	snprintf(doc, sizeof(doc),
		 "{%s,\"spec\":{\"node\":\"n1\",\"steps\":[]},\"status\":{\"state\":\"pending\"}}",
		 base_meta);
	expect_op_err(doc, "operation: metadata.name, spec.node and spec.kind are required");
	snprintf(doc, sizeof(doc),
		 "{%s,\"spec\":{\"node\":\"n1\",\"kind\":\"power\",\"steps\":\"on\"},"
		 "\"status\":{\"state\":\"pending\"}}",
		 base_meta);
	expect_op_err(doc, "spec.steps: expected at most 16 step names");
	snprintf(doc, sizeof(doc),
		 "{%s,\"spec\":{\"node\":\"n1\",\"kind\":\"power\",\"steps\":[\"on\",3]},"
		 "\"status\":{\"state\":\"pending\"}}",
		 base_meta);
	expect_op_err(doc, "spec.steps[1]: expected a string");
	/* step names are bounded: 64 characters accepted, 65 refused */
	snprintf(doc, sizeof(doc),
		 "{%s,\"spec\":{\"node\":\"n1\",\"kind\":\"power\",\"steps\":[\"on\","
		 "\"abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abcd\"]},"
		 "\"status\":{\"state\":\"pending\"}}",
		 base_meta);
	assert_int_equal(decode_op(doc, &op, e, sizeof(e)), 0);
	assert_int_equal(strlen(op->steps[1]), 64);
	operation_free(op);
	snprintf(doc, sizeof(doc),
		 "{%s,\"spec\":{\"node\":\"n1\",\"kind\":\"power\",\"steps\":[\"on\","
		 "\"abcdefghij0123456789abcdefghij0123456789abcdefghij0123456789abcde\"]},"
		 "\"status\":{\"state\":\"pending\"}}",
		 base_meta);
	expect_op_err(doc, "spec.steps[1]: longer than 64 characters");
	snprintf(doc, sizeof(doc),
		 "{%s,\"spec\":{\"node\":\"n1\",\"kind\":\"power\",\"steps\":[\"a\",\"b\",\"c\","
		 "\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\","
		 "\"q\"]},\"status\":{\"state\":\"pending\"}}",
		 base_meta);
	expect_op_err(doc, "spec.steps: expected at most 16 step names");
	snprintf(doc, sizeof(doc),
		 "{%s,\"spec\":{\"node\":\"n1\",\"kind\":\"power\",\"steps\":[\"on\"],"
		 "\"reason\":7},\"status\":{\"state\":\"pending\"}}",
		 base_meta);
	expect_op_err(doc, "spec.reason: expected a string");
}

/* ---- label selectors ---- */

static struct node *labelled(const char *rack, const char *gpu)
{
	struct node *n = node_new();
	n->labels = calloc(2, sizeof(*n->labels));
	if (rack) {
		n->labels[n->nlabels].key = strdup("rack");
		n->labels[n->nlabels++].value = strdup(rack);
	}
	if (gpu) {
		n->labels[n->nlabels].key = strdup("gpu");
		n->labels[n->nlabels++].value = strdup(gpu);
	}
	return n;
}

/* Parses sel and checks it against: rack=r01 gpu=h100 / rack=r02 / no labels / gpu="" */
static void expect_sel(const char *sel, int m_r01_h100, int m_r02, int m_none, int m_gpu_empty)
{
	struct label_selector *ls = NULL;
	char e[256];
	int rc = label_selector_parse(sel, &ls, e, sizeof(e));
	if (rc != 0)
		fail_msg("selector \"%s\" refused: %s", sel, e);
	struct node *a = labelled("r01", "h100"), *b = labelled("r02", NULL),
		    *c = labelled(NULL, NULL), *d = labelled(NULL, "");
	int got[4] = {label_selector_match(ls, a), label_selector_match(ls, b),
		      label_selector_match(ls, c), label_selector_match(ls, d)};
	int want[4] = {m_r01_h100, m_r02, m_none, m_gpu_empty};
	for (int i = 0; i < 4; i++)
		if (got[i] != want[i])
			fail_msg("selector \"%s\" on node %d: %d, want %d", sel, i, got[i],
				 want[i]);
	/* the JSON form matches the same way */
	json_t *ja = parse("{\"rack\":\"r01\",\"gpu\":\"h100\"}"),
	       *jb = parse("{\"rack\":\"r02\"}"), *jc = parse("{}"), *jd = parse("{\"gpu\":\"\"}");
	assert_int_equal(label_selector_match_json(ls, ja), m_r01_h100);
	assert_int_equal(label_selector_match_json(ls, jb), m_r02);
	assert_int_equal(label_selector_match_json(ls, jc), m_none);
	assert_int_equal(label_selector_match_json(ls, jd), m_gpu_empty);
	assert_int_equal(label_selector_match_json(ls, NULL), m_none);
	json_decref(ja);
	json_decref(jb);
	json_decref(jc);
	json_decref(jd);
	node_free(a);
	node_free(b);
	node_free(c);
	node_free(d);
	label_selector_free(ls);
}

static void expect_sel_err(const char *sel, const char *want)
{
	struct label_selector *ls = (struct label_selector *)1;
	char e[256] = "";
	int rc = label_selector_parse(sel, &ls, e, sizeof(e));
	if (rc != FP_EINVAL || strcmp(e, want) != 0)
		fail_msg("selector \"%s\": rc %d err \"%s\", want \"%s\"", sel ? sel : "(null)", rc,
			 e, want);
	assert_null(ls);
}

static void test_selectors(void **state)
{
	(void)state;
	/*                           r01+h100 r02 none gpu="" */
	expect_sel("rack=r01", 1, 0, 0, 0);
	expect_sel("rack==r01", 1, 0, 0, 0);
	expect_sel("rack!=r01", 0, 1, 1, 1);
	expect_sel("rack", 1, 1, 0, 0);
	expect_sel("!rack", 0, 0, 1, 1);
	expect_sel("gpu", 1, 0, 0, 1);
	expect_sel("!gpu", 0, 1, 1, 0);
	expect_sel("gpu=", 0, 0, 0, 1);
	expect_sel("gpu!=", 1, 1, 1, 0);
	expect_sel("rack=r01,gpu=h100", 1, 0, 0, 0);
	expect_sel("rack=r01,gpu=a100", 0, 0, 0, 0);
	expect_sel("rack!=r01,!gpu", 0, 1, 1, 0);
	expect_sel("rack=R01", 0, 0, 0, 0); /* values are case-sensitive */
	expect_sel("Rack", 0, 0, 0, 0);
	/* 16 terms accepted */
	expect_sel("a!=1,b!=1,c!=1,d!=1,e!=1,f!=1,g!=1,h!=1,i!=1,j!=1,k!=1,l!=1,m!=1,n!=1,o!=1,"
		   "rack",
		   1, 1, 0, 0);

	expect_sel_err("", "label selector: must not be empty (an empty selector is not "
			   "\"everything\")");
	expect_sel_err(NULL, "label selector: must not be empty (an empty selector is not "
			     "\"everything\")");
	/* Kubernetes' set-based syntax (issue 13): in, notin, blanks around tokens */
	expect_sel("rack in (r01,r02)", 1, 1, 0, 0);
	expect_sel("rack in (r02)", 0, 1, 0, 0);
	expect_sel("rack notin (r01)", 0, 1, 1, 1);
	expect_sel("rack in (r01, r02),gpu notin (h100)", 0, 1, 0, 0);
	expect_sel(" rack = r01 , gpu ", 1, 0, 0, 0);
	expect_sel("rack in(r01)", 1, 0, 0, 0);
	expect_sel_err("rack=r01,", "label selector: trailing comma at offset 9");
	expect_sel_err("rack,", "label selector: trailing comma at offset 5");
	expect_sel_err(",rack", "label selector: expected a label key at offset 0");
	expect_sel_err("rack,,gpu", "label selector: expected a label key at offset 5");
	expect_sel_err(",", "label selector: expected a label key at offset 0");
	expect_sel_err("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q",
		       "label selector: more than 16 terms at offset 32");
	expect_sel_err("=r01", "label selector: expected a label key at offset 0");
	expect_sel_err("!", "label selector: expected a label key at offset 1");
	expect_sel_err("rack=r 01", "label selector: expected ',' between terms at offset 7");
	expect_sel_err("rack=r01=x", "label selector: unexpected character at offset 8");
	expect_sel_err("rack===r01", "label selector: unexpected character at offset 6");
	expect_sel_err("!rack=r01", "label selector: expected ',' between terms at offset 5");
	expect_sel_err("rack in ()", "label selector: expected a value at offset 9");
	expect_sel_err("rack in (a,,b)", "label selector: expected a value at offset 11");
	expect_sel_err("rack in (a", "label selector: expected , or ) at offset 10");
	expect_sel_err("rack in r01", "label selector: expected ( after in/notin at offset 8");
	expect_sel_err("rack inn (a)",
		       "label selector: expected =, ==, !=, in, notin or ',' at offset 5");
	expect_sel_err("rack=r 01x(", "label selector: expected ',' between terms at offset 7");
	expect_sel_err("rack in (R 1)", "label selector: expected , or ) at offset 11");
	/* a key longer than any label key */
	char big[300];
	memset(big, 'a', 260);
	big[260] = 0;
	expect_sel_err(big, "label selector: key longer than 63 characters at offset 0");
	/* 64-character key inside the 130 limit */
	memset(big, 'k', 64);
	big[64] = 0;
	char want[400];
	snprintf(want, sizeof(want),
		 "metadata.labels: key \"%s\" must be 1-63 characters of [A-Za-z0-9._/-]", big);
	expect_sel_err(big, want);
}

/* ---- events ---- */

static void test_events(void **state)
{
	(void)state;
	char id[EVENT_ID_LEN];
	/* The first call seeds the sequence from rnd's bits 20..31; later calls count up from
	 * there whatever rnd they pass, so ids of one millisecond sort in creation order. */
	event_id(T1, 0x1234abcdULL, id);
	ASSERT_EQ_STR(id, "1796014169803-12300000");
	event_id(T1, 0xffffffff00000001ULL, id);
	ASSERT_EQ_STR(id, "1796014169803-12300001");
	event_id(5, 0, id);
	ASSERT_EQ_STR(id, "0000000000005-12300002");
	/* keep order (serve): a wall clock stepped back does not sort a new id first */
	event_id_keep_order(1);
	event_id(T1, 0, id);
	ASSERT_EQ_STR(id, "1796014169803-12300003");
	event_id(T1 - 3600000, 0, id);
	ASSERT_EQ_STR(id, "1796014169803-12300004");
	event_id(T1 + 1, 0, id);
	ASSERT_EQ_STR(id, "1796014169804-12300005");
	event_id_keep_order(0);
	event_id(5, 0, id);
	ASSERT_EQ_STR(id, "0000000000005-12300006");
	json_t *ev = event_new("1796014169803-1234abcd", "Warning", "operator:alice", "node/r01n03",
			       "Drained", NULL, T1);
	json_t *want = parse(
		"{\"kind\":\"Event\",\"metadata\":{\"name\":\"1796014169803-1234abcd\","
		"\"createdAt\":\"2026-11-30T04:49:29.803Z\"},\"type\":\"Warning\","
		"\"actor\":\"operator:alice\",\"object\":\"node/r01n03\",\"reason\":"
		"\"Drained\",\"message\":\"\",\"time\":\"2026-11-30T04:49:29.803Z\"}");
	assert_true(json_equal(ev, want));
	json_decref(ev);
	json_decref(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phase_names),
		cmocka_unit_test(test_phase_table),
		cmocka_unit_test(test_holds),
		cmocka_unit_test(test_schedulable_rules),
		cmocka_unit_test(test_conditions),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_bad_node_names),
		cmocka_unit_test(test_enroll_minimal),
		cmocka_unit_test(test_enroll_full),
		cmocka_unit_test(test_unknown_fields),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_adopt_codec),
		cmocka_unit_test(test_macs),
		cmocka_unit_test(test_store_roundtrip),
		cmocka_unit_test(test_remediation_codec),
		cmocka_unit_test(test_public_mode),
		cmocka_unit_test(test_operation_roundtrip),
		cmocka_unit_test(test_operation_errors),
		cmocka_unit_test(test_selectors),
		cmocka_unit_test(test_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
