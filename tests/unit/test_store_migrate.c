/* layers: base core store */
/* test_store_migrate.c - an older SQLite store is upgraded in place on open (store_sqlite.c
 * "Schema history"): a store of schema 1, built here from the SQL and the row layout of the
 * code that wrote it (commit bf37143, the last before schema 2: the same tables, change ids
 * rev << 11 | op index), opens with the current code; its keys, values, revisions and change
 * feed read back; user_version is current; the backup <db>.v1.bak is there, is schema 1 and
 * opens. A store newer than the binary stays refused and untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "core/codec.h"
#include "core/model.h"
#include "store/store.h"
#include "check.h"

/* src/store/store_sqlite.c sq_schema at bf37143 (schema 1), byte for byte */
static const char v1_schema[] =
	"CREATE TABLE IF NOT EXISTS kv("
	" key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL,"
	" create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS changes("
	" id INTEGER PRIMARY KEY, key TEXT NOT NULL, type INTEGER NOT NULL, value TEXT,"
	" create_rev INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS meta("
	" id INTEGER PRIMARY KEY CHECK (id = 1), rev INTEGER NOT NULL,"
	" compacted_rev INTEGER NOT NULL);"
	"INSERT OR IGNORE INTO meta(id, rev, compacted_rev) VALUES (1, 0, 0);";

/* A node as node_to_json(NODE_JSON_STORE) of bf37143 wrote it (src/core/codec.c there). */
#define V1_NODE                                                                                      \
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"r01n01\",\"uid\":\"u-1\",\"labels\":{\"pool\":" \
	"\"a\"},\"createdAt\":\"2026-11-29T10:00:00.000Z\"},\"spec\":{\"site\":\"s1\",\"rack\":"     \
	"\"r01\",\"bmc\":{\"driver\":\"sim\",\"address\":\"sim://r01n01\"},\"gpus\":{\"count\":8}}," \
	"\"status\":{\"phase\":\"available\",\"phaseSince\":\"2026-11-29T10:05:00.000Z\","           \
	"\"holds\":[],\"conditions\":[]}}"

/* Revisions 1, 2 (two ops) and 16: v1's id of rev 16 op 0 (16 << 11 = 32768) is schema 2's id
 * of rev 1 op 0 (1 << 15), the case an in-place re-encoding would trip on. */
static const char v1_rows[] =
	"INSERT INTO kv VALUES ('/nodes/r01n01', '" V1_NODE "', 1, 1);"
	"INSERT INTO kv VALUES ('/operations/op-1', '{\"kind\":\"Operation\"}', 2, 2);"
	"INSERT INTO kv VALUES ('/events/e-1', '{\"kind\":\"Event\"}', 2, 2);"
	"INSERT INTO kv VALUES ('/sites/s1', '{\"kind\":\"Site\"}', 16, 16);"
	"INSERT INTO changes VALUES (2048, '/nodes/r01n01', 1, '" V1_NODE "', 1);"
	"INSERT INTO changes VALUES (4096, '/operations/op-1', 1, '{\"kind\":\"Operation\"}', 2);"
	"INSERT INTO changes VALUES (4097, '/events/e-1', 1, '{\"kind\":\"Event\"}', 2);"
	"INSERT INTO changes VALUES (32768, '/sites/s1', 1, '{\"kind\":\"Site\"}', 16);"
	"UPDATE meta SET rev = 16, compacted_rev = 0 WHERE id = 1;";

struct mfx {
	char dir[64];
	char db[128];
	char uri[160];
};

static int setup(void **state)
{
	struct mfx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/fp-migrate-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof(f->db), "%s/fleetplane.db", f->dir);
	snprintf(f->uri, sizeof(f->uri), "sqlite:%s", f->db);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct mfx *f = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* Writes a store the way schema-1 code left it: WAL mode, the schema, the rows, user_version. */
static void write_store(const char *path, int version, const char *rows)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char sql[16384];
	snprintf(sql, sizeof(sql),
		 "PRAGMA journal_mode = WAL; BEGIN; %s %s PRAGMA user_version = %d; COMMIT;",
		 v1_schema, rows, version);
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("fixture: %s", msg);
	sqlite3_close(db);
}

/* One integer from a query on the file at path. */
static long long query_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	long long v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void expect_kv(struct store *s, const char *key, const char *value, int64_t cr, int64_t mr)
{
	struct store_kv kv = {0};
	ASSERT_OK(store_get(s, key, &kv));
	ASSERT_EQ_STR(kv.value, value);
	ASSERT_EQ_INT(kv.create_revision, cr);
	ASSERT_EQ_INT(kv.mod_revision, mr);
	store_kv_release(&kv);
}

static void test_v1_upgraded(void **state)
{
	struct mfx *f = *state;
	write_store(f->db, 1, v1_rows);
	struct store *s = NULL;
	char err[512] = "";
	int rc = store_open(f->uri, &s, err, sizeof(err));
	if (rc != 0)
		fail_msg("open of a schema 1 store: %s: %s", fp_err_name(rc), err);

	/* keys, values and revisions as schema 1 held them */
	ASSERT_EQ_INT(store_revision(s), 16);
	ASSERT_EQ_INT(store_compacted_revision(s), 0);
	expect_kv(s, "/nodes/r01n01", V1_NODE, 1, 1);
	expect_kv(s, "/operations/op-1", "{\"kind\":\"Operation\"}", 2, 2);
	expect_kv(s, "/events/e-1", "{\"kind\":\"Event\"}", 2, 2);
	expect_kv(s, "/sites/s1", "{\"kind\":\"Site\"}", 16, 16);
	/* the change feed with its revisions and op order, re-encoded */
	struct store_event *ev = NULL;
	size_t n = 0;
	ASSERT_OK(store_changes(s, "", 0, 0, &ev, &n));
	ASSERT_EQ_INT(n, 4);
	static const int64_t revs[] = {1, 2, 2, 16};
	static const char *const keys[] = {"/nodes/r01n01", "/operations/op-1", "/events/e-1",
					   "/sites/s1"};
	for (size_t i = 0; i < 4; i++) {
		ASSERT_EQ_INT(ev[i].revision, revs[i]);
		ASSERT_EQ_STR(ev[i].key, keys[i]);
		ASSERT_EQ_INT(ev[i].type, STORE_OP_PUT);
	}
	store_event_array_free(ev, n);
	/* after revision 2: only 16 (an id-order mistake would return 1 or 2 again) */
	ASSERT_OK(store_changes(s, "", 2, 0, &ev, &n));
	ASSERT_EQ_INT(n, 1);
	ASSERT_EQ_INT(ev[0].revision, 16);
	store_event_array_free(ev, n);
	/* a schema 1 node document decodes with the current codec */
	struct store_kv kv = {0};
	ASSERT_OK(store_get(s, "/nodes/r01n01", &kv));
	json_t *doc = json_loads(kv.value, 0, NULL);
	struct node *node = NULL;
	rc = node_from_json(doc, kv.mod_revision, &node, err, sizeof(err));
	if (rc != 0)
		fail_msg("schema 1 node document: %s", err);
	ASSERT_EQ_STR(node->name, "r01n01");
	ASSERT_EQ_PHASE(node->phase, PHASE_AVAILABLE);
	ASSERT_EQ_INT(node->gpu_count, 8);
	node_free(node);
	json_decref(doc);
	store_kv_release(&kv);
	/* it takes writes: the next revision and its change */
	struct store_op op = {STORE_OP_PUT, "/racks/r01", "{}", STORE_ABSENT};
	int64_t rev = 0;
	ASSERT_OK(store_txn(s, &op, 1, &rev, NULL));
	ASSERT_EQ_INT(rev, 17);
	ASSERT_OK(store_changes(s, "", 16, 0, &ev, &n));
	ASSERT_EQ_INT(n, 1);
	ASSERT_EQ_STR(ev[0].key, "/racks/r01");
	store_event_array_free(ev, n);
	store_close(s);

	ASSERT_EQ_INT(query_int(f->db, "PRAGMA user_version"), 2);
	ASSERT_EQ_INT(query_int(f->db, "SELECT min(id) FROM changes"), 1LL << 15);
	/* the backup: schema 1 as it was, and it opens */
	char bak[200];
	snprintf(bak, sizeof(bak), "%s.v1.bak", f->db);
	ASSERT_EQ_INT(access(bak, R_OK), 0);
	ASSERT_EQ_INT(query_int(bak, "PRAGMA user_version"), 1);
	ASSERT_EQ_INT(query_int(bak, "SELECT count(*) FROM changes WHERE id IN (2048, 4096, 4097, "
				     "32768)"),
		      4);
	ASSERT_EQ_INT(query_int(bak, "SELECT rev FROM meta"), 16);

	/* opened again: no second upgrade, no second backup */
	ASSERT_OK(store_open(f->uri, &s, err, sizeof(err)));
	ASSERT_EQ_INT(store_revision(s), 17);
	store_close(s);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "test $(ls %s | grep -c '\\.bak$') = 1", f->dir);
	ASSERT_EQ_INT(system(cmd), 0);
}

static void test_newer_refused(void **state)
{
	struct mfx *f = *state;
	write_store(f->db, 3, "UPDATE meta SET rev = 5 WHERE id = 1;");
	struct store *s = NULL;
	char err[512] = "";
	ASSERT_EQ_ERR(store_open(f->uri, &s, err, sizeof(err)), FP_EIO);
	assert_null(s);
	assert_non_null(strstr(err, "schema version 3 was written by a newer fleetplane"));
	assert_non_null(strstr(err, "reads up to 2"));
	ASSERT_EQ_INT(query_int(f->db, "PRAGMA user_version"), 3);
	ASSERT_EQ_INT(query_int(f->db, "SELECT rev FROM meta"), 5);
	char bak[200];
	snprintf(bak, sizeof(bak), "%s.v3.bak", f->db);
	ASSERT_EQ_INT(access(bak, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v1_upgraded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
