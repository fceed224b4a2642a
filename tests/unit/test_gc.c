/* layers: base core store driver engine controller */
/* test_gc.c - store housekeeping: event trimming keeps the newest, only old terminal operations
 * that no node points at are deleted, and the change feed is compacted to keep the last N
 * revisions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "check.h"
#include "controller/gc.h"

#define DAY (24LL * 3600 * 1000)
#define NOW 1796000000000LL /* 2026-11-29T22:13:20Z */

static void put(struct store *s, const char *key, const char *val)
{
	ASSERT_OK(store_put(s, key, val, STORE_ANY, NULL));
}

static void op(struct store *s, const char *id, const char *node, const char *state,
	       const char *finished)
{
	char key[128], val[512];
	snprintf(key, sizeof(key), "/operations/%s", id);
	snprintf(
		val, sizeof(val),
		"{\"kind\":\"Operation\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"node\":\"%s\"},"
		"\"status\":{\"state\":\"%s\"%s%s%s}}",
		id, node, state, finished ? ",\"finishedAt\":\"" : "", finished ? finished : "",
		finished ? "\"" : "");
	put(s, key, val);
}

static int exists(struct store *s, const char *key)
{
	struct store_kv kv = {0};
	int rc = store_get(s, key, &kv);
	store_kv_release(&kv);
	return rc == 0;
}

static void test_gc_pass(void **state)
{
	struct store *s = NULL;
	char err[64];
	ASSERT_OK(store_open("mem:", &s, err, sizeof(err)));
	for (int i = 0; i < 10; i++) {
		char key[64];
		snprintf(key, sizeof(key), "/events/%013d-0000000%d", 1000 + i, i);
		put(s, key, "{}");
	}
	/* NOW is 2026-11-29T22:13:20Z; 8 days earlier is 2026-11-21. */
	op(s, "old-done", "n1", "succeeded", "2026-11-21T10:00:00.000Z");
	op(s, "old-failed", "n2", "failed", "2026-11-20T10:00:00.000Z");
	op(s, "old-referenced", "n3", "succeeded", "2026-11-21T10:00:00.000Z");
	op(s, "recent-done", "n1", "succeeded", "2026-11-29T10:00:00.000Z");
	op(s, "running", "n4", "running", NULL);
	put(s, "/nodes/n3", "{\"status\":{\"operation\":\"old-referenced\"}}");
	int64_t rev_before = store_revision(s); /* 16 writes */
	ASSERT_EQ_INT(rev_before, 16);

	/* These events are from 1970 by their ids: no age limit here (test_gc_retention). */
	struct gc_config cfg = {.retain_revisions = 5,
				.max_events = 4,
				.op_retention_ms = 7 * DAY,
				.event_retention_ms = -1};
	struct gc_result res;
	ASSERT_OK(gc_run_once(s, &cfg, NOW, &res));
	ASSERT_EQ_INT(res.events_deleted, 6);
	ASSERT_EQ_INT(res.ops_deleted, 2);
	size_t n = 0;
	ASSERT_OK(store_count(s, "/events/", &n));
	ASSERT_EQ_INT(n, 4);
	/* the newest four events stay */
	assert_true(exists(s, "/events/0000000001006-00000006"));
	assert_true(exists(s, "/events/0000000001009-00000009"));
	assert_false(exists(s, "/events/0000000001005-00000005"));
	assert_false(exists(s, "/operations/old-done"));
	assert_false(exists(s, "/operations/old-failed"));
	assert_true(exists(s, "/operations/old-referenced"));
	assert_true(exists(s, "/operations/recent-done"));
	assert_true(exists(s, "/operations/running"));
	/* 16 + 8 deletes = revision 24; keep 5 -> compacted to 19 */
	ASSERT_EQ_INT(store_revision(s), 24);
	ASSERT_EQ_INT(res.compacted_to, 19);
	ASSERT_EQ_INT(store_compacted_revision(s), 19);
	struct store_event *evs = NULL;
	size_t nev = 0;
	ASSERT_EQ_INT(store_changes(s, "", 10, 0, &evs, &nev), FP_ECOMPACTED);
	/* A second pass has nothing to do. */
	ASSERT_OK(gc_run_once(s, &cfg, NOW, &res));
	ASSERT_EQ_INT(res.events_deleted, 0);
	ASSERT_EQ_INT(res.ops_deleted, 0);
	ASSERT_EQ_INT(res.compacted_to, 0);
	store_close(s);
}

/* A health event of node received at `received` with decision action. */
static void hev(struct store *s, const char *node, const char *id, const char *received,
		const char *action)
{
	char key[128], val[512];
	snprintf(key, sizeof(key), "/healthevents/%s/%s", node, id);
	snprintf(val, sizeof(val),
		 "{\"kind\":\"HealthEvent\",\"node\":\"%s\",\"id\":\"%s\",\"code\":\"xid:13\","
		 "\"receivedAt\":\"%s\",\"decision\":{\"action\":\"%s\"}}",
		 node, id, received, action);
	put(s, key, val);
}

/* Health events: older than 30 days go; past 3 per node the oldest go, except a hold (the
 * evidence of a remediation) until its age. Audit events older than 30 days go (their ids
 * start with the wall ms: 1796000000000 is NOW, 1793000000000 is 2026-10-26T09:33:20Z,
 * 34.7 days earlier). */
static void test_gc_retention(void **state)
{
	struct store *s = NULL;
	char err[64];
	ASSERT_OK(store_open("mem:", &s, err, sizeof(err)));
	put(s, "/events/1793000000000-00000001", "{}");
	put(s, "/events/1795000000000-00000002", "{}"); /* 11.6 days before NOW */
	put(s, "/events/1796000000000-00000003", "{}");
	hev(s, "n1", "a", "2026-10-20T00:00:00.000Z", "hold"); /* 40 days old: goes */
	hev(s, "n1", "b", "2026-11-20T00:00:00.000Z", "hold"); /* 5th newest, a hold: kept */
	hev(s, "n1", "c", "2026-11-21T00:00:00.000Z", "none"); /* 4th newest: goes */
	hev(s, "n1", "d", "2026-11-29T01:00:00.000Z", "none");
	hev(s, "n1", "e", "2026-11-29T02:00:00.000Z", "count");
	hev(s, "n1", "f", "2026-11-29T03:00:00.000Z", "none");
	hev(s, "n2", "a", "2026-11-01T00:00:00.000Z", "none"); /* 28.9 days: kept */
	struct gc_config cfg = {.healthevents_per_node = 3};
	struct gc_result res;
	ASSERT_OK(gc_run_once(s, &cfg, NOW, &res));
	ASSERT_EQ_INT(res.events_deleted, 1);
	ASSERT_EQ_INT(res.healthevents_deleted, 2);
	assert_false(exists(s, "/events/1793000000000-00000001"));
	assert_true(exists(s, "/events/1795000000000-00000002"));
	assert_true(exists(s, "/events/1796000000000-00000003"));
	assert_false(exists(s, "/healthevents/n1/a"));
	assert_true(exists(s, "/healthevents/n1/b"));
	assert_false(exists(s, "/healthevents/n1/c"));
	assert_true(exists(s, "/healthevents/n1/d"));
	assert_true(exists(s, "/healthevents/n1/e"));
	assert_true(exists(s, "/healthevents/n1/f"));
	assert_true(exists(s, "/healthevents/n2/a"));
	store_close(s);
}

/* An audit event with this reason (the shape of core/event.c, trimmed). */
static void audit(struct store *s, long long ms, int n, const char *reason)
{
	char key[128], val[256];
	snprintf(key, sizeof(key), "/events/%013lld-%08x", ms, n);
	snprintf(val, sizeof(val),
		 "{\"kind\":\"Event\",\"type\":\"Normal\",\"object\":\"node/n%d\","
		 "\"reason\":\"%s\",\"message\":\"m\"}",
		 n, reason);
	put(s, key, val);
}

/* HealthDecision audit events (which one node's agent can cause at will) are trimmed under their
 * own cap: 20 of them, newer than 5 lifecycle/operator events, never push those out. The other
 * events keep their own cap. A message quoting "HealthDecision" does not make an event one. */
static void test_gc_health_decisions(void **state)
{
	struct store *s = NULL;
	char err[64];
	ASSERT_OK(store_open("mem:", &s, err, sizeof(err)));
	audit(s, NOW - 5000, 1, "PhaseChanged");
	audit(s, NOW - 4000, 2, "Drain");
	audit(s, NOW - 3000, 3, "BreakerReset");
	put(s, "/events/1795999997500-00000004",
	    "{\"kind\":\"Event\",\"reason\":\"Note\",\"message\":\"\\\"reason\\\":\\\"HealthDecision\\\"\"}");
	audit(s, NOW - 2000, 5, "BudgetExhausted");
	for (int i = 0; i < 20; i++)
		audit(s, NOW - 1000 + i, 100 + i, "HealthDecision");
	struct gc_config cfg = {.max_events = 5, .max_health_decisions = 8};
	struct gc_result res;
	ASSERT_OK(gc_run_once(s, &cfg, NOW, &res));
	ASSERT_EQ_INT(res.events_deleted, 12);
	size_t n = 0;
	ASSERT_OK(store_count(s, "/events/", &n));
	ASSERT_EQ_INT(n, 13);
	assert_true(exists(s, "/events/1795999995000-00000001"));
	assert_true(exists(s, "/events/1795999997500-00000004"));
	assert_false(exists(s, "/events/1795999999011-0000006f")); /* the 12th HealthDecision */
	assert_true(exists(s, "/events/1795999999012-00000070"));  /* the 13th: kept */
	/* The others' cap: 3 of the 5 go (the oldest), the 8 HealthDecision stay. */
	cfg.max_events = 2;
	ASSERT_OK(gc_run_once(s, &cfg, NOW, &res));
	ASSERT_EQ_INT(res.events_deleted, 3);
	assert_false(exists(s, "/events/1795999997000-00000003"));
	assert_true(exists(s, "/events/1795999997500-00000004"));
	assert_true(exists(s, "/events/1795999998000-00000005"));
	ASSERT_OK(store_count(s, "/events/", &n));
	ASSERT_EQ_INT(n, 10);
	store_close(s);
}

/* A stop flag already set (serve stopping): the pass deletes nothing and compacts nothing at
 * every one of its four walks (events over the cap, aged events, health events, operations),
 * returns 0, and the next pass without it does the work. */
static void test_gc_stop_flag(void **state)
{
	struct store *s = NULL;
	char err[64];
	ASSERT_OK(store_open("mem:", &s, err, sizeof(err)));
	for (int i = 0; i < 6; i++) {
		char key[64];
		snprintf(key, sizeof(key), "/events/%013lld-0000000%d", NOW - 40 * DAY + i, i);
		put(s, key, "{}");
	}
	op(s, "old-done", "n1", "succeeded", "2026-11-21T10:00:00.000Z");
	hev(s, "n1", "h1", "2026-10-01T00:00:00.000Z", "none");
	atomic_int stop = 1;
	struct gc_config cfg = {.retain_revisions = 2, .max_events = 3, .stop = &stop};
	struct gc_result res;
	int64_t rev = store_revision(s);
	ASSERT_OK(gc_run_once(s, &cfg, NOW, &res));
	ASSERT_EQ_INT(res.events_deleted, 0);
	ASSERT_EQ_INT(res.healthevents_deleted, 0);
	ASSERT_EQ_INT(res.ops_deleted, 0);
	ASSERT_EQ_INT(res.compacted_to, 0);
	ASSERT_EQ_INT(store_revision(s), rev);
	/* the count cap alone (the ages are checked by the same walk with the flag) */
	cfg.max_events = 100000;
	ASSERT_OK(gc_run_once(s, &cfg, NOW, &res));
	ASSERT_EQ_INT(res.events_deleted, 0);
	atomic_store(&stop, 0);
	ASSERT_OK(gc_run_once(s, &cfg, NOW, &res));
	ASSERT_EQ_INT(res.events_deleted, 6); /* 40 days old: past the 30-day retention */
	ASSERT_EQ_INT(res.healthevents_deleted, 1);
	ASSERT_EQ_INT(res.ops_deleted, 1);
	assert_true(res.compacted_to > 0);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_gc_pass),
					   cmocka_unit_test(test_gc_retention),
					   cmocka_unit_test(test_gc_health_decisions),
					   cmocka_unit_test(test_gc_stop_flag)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
