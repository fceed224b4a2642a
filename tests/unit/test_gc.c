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
#include "controller/gc.h"

#define DAY (24LL * 3600 * 1000)
#define NOW 1796000000000LL /* 2026-11-29T22:13:20Z */

static void put(struct store *s, const char *key, const char *val)
{
	assert_int_equal(store_put(s, key, val, STORE_ANY, NULL), 0);
}

static void op(struct store *s, const char *id, const char *node, const char *state,
	       const char *finished)
{
	char key[128], val[512];
	snprintf(key, sizeof(key), "/operations/%s", id);
	snprintf(val, sizeof(val),
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
	assert_int_equal(store_open("mem:", &s, err, sizeof(err)), 0);
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
	assert_int_equal(rev_before, 16);

	struct gc_config cfg = {.retain_revisions = 5, .max_events = 4, .op_retention_ms = 7 * DAY};
	struct gc_result res;
	assert_int_equal(gc_run_once(s, &cfg, NOW, &res), 0);
	assert_int_equal(res.events_deleted, 6);
	assert_int_equal(res.ops_deleted, 2);
	size_t n = 0;
	assert_int_equal(store_count(s, "/events/", &n), 0);
	assert_int_equal(n, 4);
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
	assert_int_equal(store_revision(s), 24);
	assert_int_equal(res.compacted_to, 19);
	assert_int_equal(store_compacted_revision(s), 19);
	struct store_event *evs = NULL;
	size_t nev = 0;
	assert_int_equal(store_changes(s, "", 10, 0, &evs, &nev), FP_ECOMPACTED);
	/* A second pass has nothing to do. */
	assert_int_equal(gc_run_once(s, &cfg, NOW, &res), 0);
	assert_int_equal(res.events_deleted, 0);
	assert_int_equal(res.ops_deleted, 0);
	assert_int_equal(res.compacted_to, 0);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_gc_pass)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
