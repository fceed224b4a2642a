/* store_sqlite.c - the embedded SQLite store backend ("sqlite:PATH"; DESIGN.md "Store"). The
 * database runs in WAL mode with synchronous=FULL, so a commit is on disk (WAL fsynced) before
 * any writer is acknowledged. Tables: kv(key, value, create_rev, mod_rev) holds current state,
 * changes(id, key, type, value, create_rev) is the change feed with id = rev << 11 | op index
 * (so the rowid orders events by revision, then op order, without a second index), and meta
 * holds the current and compacted revisions.
 *
 * Group commit: writers enqueue their request and sleep; one writer thread takes every queued
 * request, runs BEGIN IMMEDIATE, applies each request's expectation checks and, inside a
 * SAVEPOINT, its writes (a request that fails is rolled back alone and reported; the others
 * still commit), bumps the revision once per successful request, COMMITs, and only then wakes
 * each writer with its own result. The write connection belongs to that thread alone. Reads
 * go to a small pool of read connections (WAL readers do not block the writer), each behind a
 * mutex with its statements prepared once. The current revision is cached in an atomic. */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h> /* open(2) flags for fsync of the schema backup (sq_backup) */

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "base/metrics.h"
#include "store/store_int.h"
#include "base/banned.h"

#define SQ_READERS 4
#define SQ_ID_SHIFT 15      /* changes.id = rev << 15 | op index; STORE_MAX_TXN_OPS <= 32768 */
#define SQ_SCHEMA_VERSION 2 /* 2: change ids shifted by 15 (1: by 11) */

_Static_assert(STORE_MAX_TXN_OPS <= (1 << SQ_ID_SHIFT), "op index must fit in changes.id");

/* Schema history (PRAGMA user_version). Every version is upgraded in place on open, never
 * refused; a version newer than SQ_SCHEMA_VERSION is refused (run the newer binary).
 *   0  a new, empty file (nothing to upgrade: sq_schema creates the tables)
 *   1  1d851ce..bf37143: the tables of sq_schema, changes.id = rev << 11 | op index
 *   2  699a45d..: the same tables, changes.id = rev << 15 | op index
 * sq_migrations[i] takes a store from version i + 1 to i + 2; all the steps from a store's
 * version to SQ_SCHEMA_VERSION run in one transaction with the new user_version, after a
 * backup of the whole file (sq_backup). */
static const char *const sq_migrations[SQ_SCHEMA_VERSION - 1] = {
	/* 1 -> 2: re-encode the change ids. A new table, not UPDATE in place: a re-encoded id
	 * can equal an old id not re-encoded yet (rev 1 op 0 becomes 32768 = rev 16 op 0 of v1),
	 * which an in-place UPDATE of the primary key would refuse. */
	"CREATE TABLE changes_v2("
	" id INTEGER PRIMARY KEY, key TEXT NOT NULL, type INTEGER NOT NULL, value TEXT,"
	" create_rev INTEGER NOT NULL);"
	"INSERT INTO changes_v2(id, key, type, value, create_rev)"
	" SELECT ((id >> 11) << 15) | (id & 2047), key, type, value, create_rev FROM changes;"
	"DROP TABLE changes;"
	"ALTER TABLE changes_v2 RENAME TO changes;",
};

static const char sq_schema[] =
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

enum {
	W_BEGIN,
	W_COMMIT,
	W_ROLLBACK,
	W_SAVEPOINT,
	W_RELEASE,
	W_ROLLBACK_TO,
	W_SELECT,
	W_INSERT,
	W_UPDATE,
	W_DELETE,
	W_CHANGE,
	W_META,
	W_META_READ,
	W_COMPACT,
	W_N
};

static const char *const sq_wsql[W_N] = {
	[W_BEGIN] = "BEGIN IMMEDIATE",
	[W_COMMIT] = "COMMIT",
	[W_ROLLBACK] = "ROLLBACK",
	[W_SAVEPOINT] = "SAVEPOINT req",
	[W_RELEASE] = "RELEASE req",
	[W_ROLLBACK_TO] = "ROLLBACK TO req",
	[W_SELECT] = "SELECT create_rev, mod_rev FROM kv WHERE key = ?1",
	[W_INSERT] = "INSERT INTO kv(key, value, create_rev, mod_rev) VALUES (?1, ?2, ?3, ?3)",
	[W_UPDATE] = "UPDATE kv SET value = ?2, mod_rev = ?3 WHERE key = ?1",
	[W_DELETE] = "DELETE FROM kv WHERE key = ?1",
	[W_CHANGE] =
		"INSERT INTO changes(id, key, type, value, create_rev) VALUES (?1,?2,?3,?4,?5)",
	[W_META] = "UPDATE meta SET rev = ?1, compacted_rev = ?2 WHERE id = 1",
	[W_META_READ] = "SELECT rev, compacted_rev FROM meta WHERE id = 1",
	[W_COMPACT] = "DELETE FROM changes WHERE id < ?1",
};

enum {
	R_BEGIN,
	R_COMMIT,
	R_META,
	R_GET,
	R_LIST,
	R_LIST_AFTER,
	R_COUNT,
	R_CHANGES,
	R_N
};

static const char *const sq_rsql[R_N] = {
	[R_BEGIN] = "BEGIN",
	[R_COMMIT] = "COMMIT",
	[R_META] = "SELECT rev, compacted_rev FROM meta WHERE id = 1",
	[R_GET] = "SELECT value, create_rev, mod_rev FROM kv WHERE key = ?1",
	/* One lower bound each: with two (key >= prefix AND key > start_after) SQLite cannot
	 * tell at prepare time which is higher and starts the index range at the first, so each
	 * page of a walk re-read every key before it (O(n^2) over a walk; 0.58 s of a
	 * 100,000-node start for /sim/hw/ alone). sq_scan picks the statement. */
	[R_LIST] = "SELECT key, value, create_rev, mod_rev FROM kv"
		   " WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3",
	[R_LIST_AFTER] = "SELECT key, value, create_rev, mod_rev FROM kv"
			 " WHERE key > ?1 AND key < ?2 ORDER BY key LIMIT ?3",
	[R_COUNT] = "SELECT count(*) FROM kv WHERE key >= ?1 AND key < ?2",
	[R_CHANGES] = "SELECT id, key, type, value, create_rev FROM changes"
		      " WHERE id >= ?1 AND key >= ?2 AND key < ?3 ORDER BY id LIMIT ?4",
};

struct sq_reader {
	pthread_mutex_t mu;
	sqlite3 *db;
	sqlite3_stmt *st[R_N];
};

enum sq_req_kind {
	SQ_REQ_TXN,
	SQ_REQ_COMPACT
};

/* One queued write, on the stack of the thread that waits for it. */
struct sq_req {
	struct sq_req *next;
	enum sq_req_kind kind;
	const struct store_op *ops;
	size_t n;
	int64_t compact_rev;
	int rc;
	int64_t rev;
	size_t failed_index;
	int done;
	pthread_cond_t cond;
};

struct store_sqlite {
	struct store_impl base;
	char *path;
	sqlite3 *wdb; /* owned by the writer thread after open */
	sqlite3_stmt *w[W_N];
	struct sq_reader readers[SQ_READERS];
	atomic_uint rr;
	_Atomic int64_t rev;
	_Atomic int64_t compacted_rev;

	pthread_mutex_t mu;     /* queue, closing, waiters */
	pthread_cond_t qcond;   /* writer thread: work queued or closing */
	pthread_cond_t revcond; /* store_wait: revision advanced or closing */
	struct sq_req *head, **tail;
	int closing;
	int waiters;
	int writer_started;
	pthread_t writer;
};

static struct metric_family *m_batch;

static struct store_sqlite *to_sq(struct store_impl *b)
{
	return (struct store_sqlite *)b;
}

/* ---- statement helpers ---- */

/* Runs a statement that returns no rows; resets it. SQLite code returned. */
/* Set by sq_exec on the thread that saw SQLite fail for want of space: SQLITE_FULL (os_unix.c
 * maps a short write with ENOSPC to it), or an I/O error whose errno is ENOSPC (an fsync).
 * The writer thread clears it before a batch and reads it after. */
static _Thread_local int sq_saw_full;

static int sq_exec(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		sqlite3 *db = sqlite3_db_handle(st);
		if ((rc & 0xff) == SQLITE_FULL ||
		    ((rc & 0xff) == SQLITE_IOERR && sqlite3_system_errno(db) == ENOSPC))
			sq_saw_full = 1;
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *p = sqlite3_column_text(st, i);
	if (!p)
		return NULL;
	return xstrndup((const char *)p, (size_t)sqlite3_column_bytes(st, i));
}

static int prepare_all(sqlite3 *db, const char *const *sql, sqlite3_stmt **st, int n, char *err,
		       size_t errlen)
{
	for (int i = 0; i < n; i++)
		if (sqlite3_prepare_v3(db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st[i], NULL) !=
		    SQLITE_OK)
			return fp_errf(FP_EIO, err, errlen, "sqlite prepare %s: %s", sql[i],
				       sqlite3_errmsg(db));
	return 0;
}

static void finalize_all(sqlite3_stmt **st, int n)
{
	for (int i = 0; i < n; i++) {
		sqlite3_finalize(st[i]);
		st[i] = NULL;
	}
}

static int conn_open(const char *path, sqlite3 **out, int query_only, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	char *msg = NULL;
	int rc = sqlite3_open_v2(path, &db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (rc != SQLITE_OK) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite open %s: %s", path,
			     db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(db, 5000);
	const char *pragmas = query_only ? "PRAGMA query_only = 1;"
					 : "PRAGMA synchronous = FULL; PRAGMA foreign_keys = 0;";
	if (sqlite3_exec(db, pragmas, NULL, NULL, &msg) != SQLITE_OK) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite pragmas %s: %s", path,
			     msg ? msg : "unknown");
		goto fail;
	}
	*out = db;
	return 0;
fail:
	sqlite3_free(msg);
	sqlite3_close(db);
	return rc;
}

/* fsyncs path (a file or a directory); 0 or -errno. */
static int sq_fsync_path(const char *path, int dir)
{
	int fd = open(path, (dir ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* sq_backup copies the whole database of s->wdb (WAL content included) with SQLite's online
 * backup API to "<path>.v<version>.bak" - or "<path>.v<version>.<unix-seconds>.bak" when that
 * exists already (an earlier upgrade's backup is never overwritten) - then fsyncs the file and
 * its directory. The chosen name goes to out. 0 or FP_EIO with err naming the step. */
static int sq_backup(struct store_sqlite *s, int version, char *out, size_t outlen, char *err,
		     size_t errlen)
{
	if ((size_t)snprintf(out, outlen, "%s.v%d.bak", s->path, version) + 24 >= outlen)
		return fp_errf(FP_EIO, err, errlen, "sqlite %s: path too long for a backup name",
			       s->path);
	if (access(out, F_OK) == 0)
		snprintf(out, outlen, "%s.v%d.%lld.bak", s->path, version, (long long)time(NULL));
	if (access(out, F_OK) == 0)
		return fp_errf(FP_EIO, err, errlen, "sqlite %s: backup %s exists already", s->path,
			       out);
	sqlite3 *dst = NULL;
	int rc = 0;
	if (sqlite3_open_v2(out, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: backup %s: %s", s->path, out,
			     dst ? sqlite3_errmsg(dst) : "cannot open");
		goto out;
	}
	sqlite3_backup *b = sqlite3_backup_init(dst, "main", s->wdb, "main");
	int step = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
	int fin = b ? sqlite3_backup_finish(b) : SQLITE_ERROR;
	if (step != SQLITE_DONE || fin != SQLITE_OK) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: backup to %s failed: %s", s->path,
			     out, sqlite3_errmsg(dst));
		goto out;
	}
	if (sqlite3_close(dst) != SQLITE_OK) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: backup %s: close failed", s->path,
			     out);
		dst = NULL;
		goto out;
	}
	dst = NULL;
	char dir[4400];
	snprintf(dir, sizeof(dir), "%s", out);
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	int frc = sq_fsync_path(out, 0);
	if (frc == 0)
		frc = sq_fsync_path(dir, 1);
	if (frc < 0)
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: backup %s: fsync: %s", s->path, out,
			     strerror(-frc));
out:
	if (dst)
		sqlite3_close(dst);
	if (rc < 0)
		unlink(out);
	return rc;
}

/* sq_migrate upgrades a store of schema version (1 <= version < SQ_SCHEMA_VERSION) in place:
 * backup first (sq_backup), then every step of sq_migrations from version on and the new
 * user_version in one transaction - a failed step leaves the store as it was. Logs the backup's
 * name. 0 or FP_EIO with err naming the step. */
static int sq_migrate(struct store_sqlite *s, int version, char *err, size_t errlen)
{
	char bak[4300];
	int rc = sq_backup(s, version, bak, sizeof(bak), err, errlen);
	if (rc < 0)
		return rc;
	log_info("store: sqlite schema backup written path=%s backup=%s version=%d", s->path, bak,
		 version);
	char *msg = NULL;
	if (sqlite3_exec(s->wdb, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
		goto fail;
	for (int v = version; v < SQ_SCHEMA_VERSION; v++) {
		if (sqlite3_exec(s->wdb, sq_migrations[v - 1], NULL, NULL, &msg) != SQLITE_OK) {
			rc = fp_errf(FP_EIO, err, errlen,
				     "sqlite %s: schema upgrade %d -> %d failed: %s (the store is "
				     "unchanged; backup %s)",
				     s->path, v, v + 1, msg ? msg : "unknown", bak);
			sqlite3_free(msg);
			sqlite3_exec(s->wdb, "ROLLBACK", NULL, NULL, NULL);
			return rc;
		}
	}
	char set[64];
	snprintf(set, sizeof(set), "PRAGMA user_version = %d; COMMIT;", SQ_SCHEMA_VERSION);
	if (sqlite3_exec(s->wdb, set, NULL, NULL, &msg) != SQLITE_OK)
		goto fail;
	log_info("store: sqlite schema upgraded path=%s from=%d to=%d backup=%s", s->path, version,
		 SQ_SCHEMA_VERSION, bak);
	return 0;
fail:
	rc = fp_errf(FP_EIO, err, errlen,
		     "sqlite %s: schema upgrade: %s (the store is unchanged; "
		     "backup %s)",
		     s->path, msg ? msg : sqlite3_errmsg(s->wdb), bak);
	sqlite3_free(msg);
	sqlite3_exec(s->wdb, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* WAL mode, schema, version check, revisions. Runs on the write connection during open. */
static int sq_init_db(struct store_sqlite *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char *msg = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(s->wdb, "PRAGMA journal_mode = WAL", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW ||
	    strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: cannot enable WAL: %s", s->path,
			     sqlite3_errmsg(s->wdb));
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;

	if (sqlite3_prepare_v2(s->wdb, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: %s", s->path, sqlite3_errmsg(s->wdb));
		goto out;
	}
	int version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (version > SQ_SCHEMA_VERSION || version < 0) {
		rc = fp_errf(FP_EIO, err, errlen,
			     "sqlite %s: schema version %d was written by a newer fleetplane (this "
			     "one reads up to %d): run that version, or restore the backup "
			     "<store>.v%d.bak it made when it upgraded this store",
			     s->path, version, SQ_SCHEMA_VERSION, SQ_SCHEMA_VERSION);
		goto out;
	}
	if (version != 0 && version < SQ_SCHEMA_VERSION &&
	    (rc = sq_migrate(s, version, err, errlen)) < 0)
		goto out;
	char *sql = xasprintf("BEGIN IMMEDIATE; %s PRAGMA user_version = %d; COMMIT;", sq_schema,
			      SQ_SCHEMA_VERSION);
	int src = sqlite3_exec(s->wdb, sql, NULL, NULL, &msg);
	free(sql);
	if (src != SQLITE_OK) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: schema: %s", s->path,
			     msg ? msg : "unknown");
		sqlite3_exec(s->wdb, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
out:
	sqlite3_free(msg);
	sqlite3_finalize(st);
	return rc;
}

/* Reloads the cached revisions from meta (write connection, outside a transaction). */
static int sq_load_meta(struct store_sqlite *s)
{
	sqlite3_stmt *st = s->w[W_META_READ];
	int rc = FP_EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		atomic_store(&s->rev, sqlite3_column_int64(st, 0));
		atomic_store(&s->compacted_rev, sqlite3_column_int64(st, 1));
		rc = 0;
	}
	sqlite3_reset(st);
	return rc;
}

/* ---- the writer thread ---- */

/* Expectation check for one op inside the batch transaction; 0 or a failed-expectation code,
 * FP_EIO on a database error. *create_rev is the key's create_rev (0 when absent). */
static int sq_check(struct store_sqlite *s, const struct store_op *op, int64_t *create_rev,
		    int *exists)
{
	sqlite3_stmt *st = s->w[W_SELECT];
	int64_t mod = 0;
	bind_text(st, 1, op->key);
	int r = sqlite3_step(st);
	*exists = r == SQLITE_ROW;
	*create_rev = 0;
	if (r == SQLITE_ROW) {
		*create_rev = sqlite3_column_int64(st, 0);
		mod = sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		return FP_EIO;
	if (op->type == STORE_OP_DELETE) {
		if (!*exists)
			return FP_ENOTFOUND;
		if (op->expect > 0 && mod != op->expect)
			return FP_ECONFLICT;
		return 0;
	}
	if (op->expect == STORE_ABSENT && *exists)
		return FP_EEXIST;
	if (op->expect > 0 && (!*exists || mod != op->expect))
		return FP_ECONFLICT;
	return 0;
}

static int sq_write_op(struct store_sqlite *s, const struct store_op *op, size_t idx, int64_t rev,
		       int64_t create_rev, int exists)
{
	sqlite3_stmt *st;
	int64_t ev_create = 0;
	if (op->type == STORE_OP_DELETE) {
		st = s->w[W_DELETE];
		bind_text(st, 1, op->key);
	} else {
		st = s->w[exists ? W_UPDATE : W_INSERT];
		bind_text(st, 1, op->key);
		bind_text(st, 2, op->value);
		sqlite3_bind_int64(st, 3, rev);
		ev_create = exists ? create_rev : rev;
	}
	if (sq_exec(st) != SQLITE_OK)
		return FP_EIO;
	st = s->w[W_CHANGE];
	sqlite3_bind_int64(st, 1, (rev << SQ_ID_SHIFT) | (int64_t)idx);
	bind_text(st, 2, op->key);
	sqlite3_bind_int(st, 3, (int)op->type);
	if (op->type == STORE_OP_PUT)
		bind_text(st, 4, op->value);
	else
		sqlite3_bind_null(st, 4);
	sqlite3_bind_int64(st, 5, ev_create);
	return sq_exec(st) == SQLITE_OK ? 0 : FP_EIO;
}

/* Applies one transaction request at revision rev inside the open batch transaction. Returns 0
 * (request applied), a failed-expectation code or FP_EIO (request rolled back alone), or 1 when
 * SQLite rolled back the whole batch transaction. */
static int sq_apply_txn(struct store_sqlite *s, struct sq_req *r, int64_t rev)
{
	/* Keys are distinct (store.c), so the checks are independent of this request's writes. */
	int64_t stack_cr[8];
	int stack_ex[8];
	int64_t *cr = r->n <= 8 ? stack_cr : xreallocarray(NULL, r->n, sizeof(*cr));
	int *ex = r->n <= 8 ? stack_ex : xreallocarray(NULL, r->n, sizeof(*ex));
	int rc = 0;
	for (size_t i = 0; i < r->n; i++) {
		rc = sq_check(s, &r->ops[i], &cr[i], &ex[i]);
		if (rc == FP_EIO && sqlite3_get_autocommit(s->wdb)) {
			rc = 1;
			goto out;
		}
		if (rc < 0) {
			r->failed_index = i;
			goto out;
		}
	}
	if (sq_exec(s->w[W_SAVEPOINT]) != SQLITE_OK) {
		rc = sqlite3_get_autocommit(s->wdb) ? 1 : FP_EIO;
		goto out;
	}
	for (size_t i = 0; i < r->n; i++) {
		rc = sq_write_op(s, &r->ops[i], i, rev, cr[i], ex[i]);
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		if (sqlite3_get_autocommit(s->wdb)) {
			rc = 1;
			goto out;
		}
		sq_exec(s->w[W_ROLLBACK_TO]);
	}
	if (sq_exec(s->w[W_RELEASE]) != SQLITE_OK && rc == 0)
		rc = FP_EIO;
out:
	if (cr != stack_cr)
		free(cr);
	if (ex != stack_ex)
		free(ex);
	return rc;
}

static int sq_apply_compact(struct store_sqlite *s, struct sq_req *r, int64_t rev, int64_t *crev)
{
	if (r->compact_rev > rev)
		return FP_EINVAL;
	if (r->compact_rev <= *crev)
		return 0;
	sqlite3_stmt *st = s->w[W_COMPACT];
	sqlite3_bind_int64(st, 1, (r->compact_rev + 1) << SQ_ID_SHIFT);
	if (sq_exec(st) != SQLITE_OK)
		return sqlite3_get_autocommit(s->wdb) ? 1 : FP_EIO;
	*crev = r->compact_rev;
	return 0;
}

/* Runs one batch as one SQLite transaction and fills each request's rc and rev. */
static void sq_apply_batch(struct store_sqlite *s, struct sq_req *batch)
{
	int64_t rev0 = atomic_load(&s->rev), rev = rev0;
	int64_t crev0 = atomic_load(&s->compacted_rev), crev = crev0;
	int aborted = 0;
	size_t nreq = 0;

	sq_saw_full = 0;
	if (sq_exec(s->w[W_BEGIN]) != SQLITE_OK) {
		for (struct sq_req *r = batch; r; r = r->next)
			r->rc = sq_saw_full ? FP_ENOSPC : FP_EIO;
		return;
	}
	for (struct sq_req *r = batch; r; r = r->next) {
		nreq++;
		int rc;
		if (aborted) {
			r->rc = FP_EIO;
			continue;
		}
		if (r->kind == SQ_REQ_COMPACT)
			rc = sq_apply_compact(s, r, rev, &crev);
		else
			rc = sq_apply_txn(s, r, rev + 1);
		if (rc == 1) {
			aborted = 1;
			r->rc = FP_EIO;
			continue;
		}
		r->rc = rc;
		if (rc == 0 && r->kind == SQ_REQ_TXN)
			r->rev = ++rev;
	}
	metric_observe(m_batch, NULL, (double)nreq);
	if (!aborted && (rev != rev0 || crev != crev0)) {
		sqlite3_stmt *st = s->w[W_META];
		sqlite3_bind_int64(st, 1, rev);
		sqlite3_bind_int64(st, 2, crev);
		if (sq_exec(st) != SQLITE_OK)
			aborted = 1;
	}
	if (!aborted && sq_exec(s->w[W_COMMIT]) == SQLITE_OK) {
		atomic_store(&s->compacted_rev, crev);
		atomic_store(&s->rev, rev);
		if (sq_saw_full) /* a request rolled back alone for want of space */
			for (struct sq_req *r = batch; r; r = r->next)
				if (r->rc == FP_EIO)
					r->rc = FP_ENOSPC;
		return;
	}
	/* Nothing in this batch is acknowledged. If the COMMIT's fsync failed, the state on
	 * disk is unknown; reload the revisions from the database rather than trust the cache. */
	if (!sqlite3_get_autocommit(s->wdb))
		sq_exec(s->w[W_ROLLBACK]);
	for (struct sq_req *r = batch; r; r = r->next) {
		if (r->rc == 0) {
			r->rc = FP_EIO;
			r->rev = 0;
		}
		if (r->rc == FP_EIO && sq_saw_full)
			r->rc = FP_ENOSPC;
	}
	sq_load_meta(s);
}

static void *sq_writer_main(void *arg)
{
	struct store_sqlite *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->closing)
			pthread_cond_wait(&s->qcond, &s->mu);
		if (!s->head)
			break; /* closing and drained */
		struct sq_req *batch = s->head;
		s->head = NULL;
		s->tail = &s->head;
		pthread_mutex_unlock(&s->mu);

		sq_apply_batch(s, batch);

		pthread_mutex_lock(&s->mu);
		for (struct sq_req *r = batch, *next; r; r = next) {
			next = r->next;
			r->done = 1;
			pthread_cond_signal(&r->cond);
		}
		pthread_cond_broadcast(&s->revcond);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Queues r and blocks until the writer thread has committed (or failed) it. */
static int sq_submit(struct store_sqlite *s, struct sq_req *r)
{
	r->next = NULL;
	r->done = 0;
	r->rc = 0;
	r->rev = 0;
	pthread_cond_init(&r->cond, NULL);
	pthread_mutex_lock(&s->mu);
	if (s->closing) {
		pthread_mutex_unlock(&s->mu);
		pthread_cond_destroy(&r->cond);
		return FP_ECLOSED;
	}
	int was_empty = s->head == NULL;
	*s->tail = r;
	s->tail = &r->next;
	if (was_empty)
		pthread_cond_signal(&s->qcond);
	while (!r->done)
		pthread_cond_wait(&r->cond, &s->mu);
	pthread_mutex_unlock(&s->mu);
	pthread_cond_destroy(&r->cond);
	return r->rc;
}

/* ---- open / close ---- */

static void sq_free(struct store_sqlite *s)
{
	for (int i = 0; i < SQ_READERS; i++) {
		finalize_all(s->readers[i].st, R_N);
		sqlite3_close(s->readers[i].db);
		pthread_mutex_destroy(&s->readers[i].mu);
	}
	finalize_all(s->w, W_N);
	sqlite3_close(s->wdb);
	pthread_cond_destroy(&s->qcond);
	pthread_cond_destroy(&s->revcond);
	pthread_mutex_destroy(&s->mu);
	free(s->path);
	free(s);
}

static int sq_open(const char *arg, struct store_impl **out, char *err, size_t errlen)
{
	static const double batch_buckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
	if (arg[0] == '\0')
		return fp_errf(FP_EINVAL, err, errlen, "sqlite store needs a path: sqlite:PATH");
	m_batch = metrics_register(METRIC_HISTOGRAM, "fleetplane_store_batch_size",
				   "Write requests committed per SQLite group commit.", "",
				   batch_buckets, sizeof(batch_buckets) / sizeof(batch_buckets[0]));

	struct store_sqlite *s = xcalloc(1, sizeof(*s));
	int rc = 0;
	s->base.ops = &store_sqlite_ops;
	s->path = xstrdup(arg);
	s->tail = &s->head;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->qcond, NULL);
	store_cond_init(&s->revcond);
	for (int i = 0; i < SQ_READERS; i++)
		pthread_mutex_init(&s->readers[i].mu, NULL);

	rc = conn_open(s->path, &s->wdb, 0, err, errlen);
	if (rc < 0)
		goto fail;
	rc = sq_init_db(s, err, errlen);
	if (rc < 0)
		goto fail;
	rc = prepare_all(s->wdb, sq_wsql, s->w, W_N, err, errlen);
	if (rc < 0)
		goto fail;
	if (sq_load_meta(s) < 0) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: cannot read meta: %s", s->path,
			     sqlite3_errmsg(s->wdb));
		goto fail;
	}
	for (int i = 0; i < SQ_READERS; i++) {
		rc = conn_open(s->path, &s->readers[i].db, 1, err, errlen);
		if (rc < 0)
			goto fail;
		rc = prepare_all(s->readers[i].db, sq_rsql, s->readers[i].st, R_N, err, errlen);
		if (rc < 0)
			goto fail;
	}
	if (pthread_create(&s->writer, NULL, sq_writer_main, s) != 0) {
		rc = fp_errf(FP_EIO, err, errlen, "sqlite %s: cannot start writer thread", s->path);
		goto fail;
	}
	s->writer_started = 1;
	pthread_setname_np(s->writer, "fp-store-write");
	*out = &s->base;
	return 0;
fail:
	sq_free(s);
	return rc;
}

static void sq_close(struct store_impl *b)
{
	struct store_sqlite *s = to_sq(b);
	pthread_mutex_lock(&s->mu);
	s->closing = 1;
	pthread_cond_signal(&s->qcond);
	pthread_cond_broadcast(&s->revcond);
	while (s->waiters > 0)
		pthread_cond_wait(&s->revcond, &s->mu);
	pthread_mutex_unlock(&s->mu);
	if (s->writer_started)
		pthread_join(s->writer, NULL); /* drains the queue first */
	sq_free(s);
}

/* ---- reads ---- */

/* The reader this thread holds across a store_scan callback (NULL when none): a read from inside
 * the callback must wait for another connection, never for its own. */
static _Thread_local struct sq_reader *sq_held;

static struct sq_reader *reader_take(struct store_sqlite *s)
{
	unsigned start = atomic_fetch_add(&s->rr, 1);
	for (unsigned i = 0; i < SQ_READERS; i++) {
		struct sq_reader *c = &s->readers[(start + i) % SQ_READERS];
		if (pthread_mutex_trylock(&c->mu) == 0)
			return c;
	}
	struct sq_reader *c = &s->readers[start % SQ_READERS];
	if (c == sq_held)
		c = &s->readers[(start + 1) % SQ_READERS];
	pthread_mutex_lock(&c->mu);
	return c;
}

static void reader_put(struct sq_reader *c)
{
	pthread_mutex_unlock(&c->mu);
}

static int64_t sq_revision(struct store_impl *b)
{
	return atomic_load(&to_sq(b)->rev);
}

static int64_t sq_compacted_revision(struct store_impl *b)
{
	return atomic_load(&to_sq(b)->compacted_rev);
}

static int sq_get(struct store_impl *b, const char *key, struct store_kv *out)
{
	struct sq_reader *c = reader_take(to_sq(b));
	sqlite3_stmt *st = c->st[R_GET];
	int rc;
	bind_text(st, 1, key);
	int r = sqlite3_step(st);
	if (r == SQLITE_ROW) {
		out->key = xstrdup(key);
		out->value = col_dup(st, 0);
		out->create_revision = sqlite3_column_int64(st, 1);
		out->mod_revision = sqlite3_column_int64(st, 2);
		rc = 0;
	} else {
		rc = r == SQLITE_DONE ? FP_ENOTFOUND : FP_EIO;
	}
	sqlite3_reset(st);
	reader_put(c);
	return rc;
}

/* Starts a read transaction and reads meta inside it, so later statements see the same
 * snapshot as the returned revisions. */
static int reader_begin(struct sq_reader *c, int64_t *rev, int64_t *crev)
{
	if (sq_exec(c->st[R_BEGIN]) != SQLITE_OK)
		return FP_EIO;
	sqlite3_stmt *st = c->st[R_META];
	int rc = FP_EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*rev = sqlite3_column_int64(st, 0);
		*crev = sqlite3_column_int64(st, 1);
		rc = 0;
	}
	sqlite3_reset(st);
	if (rc < 0)
		sq_exec(c->st[R_COMMIT]);
	return rc;
}

/* The scan of one read transaction behind sq_scan and sq_list: fn sees each row as a borrowed
 * kv (sqlite3_column_text's pointers, valid until the next step). */
static int sq_scan(struct store_impl *b, const char *prefix, const char *start_after, size_t limit,
		   store_scan_fn fn, void *arg, int64_t *rev, int *more)
{
	struct sq_reader *c = reader_take(to_sq(b));
	char upper[STORE_MAX_KEY + 2];
	size_t nv = 0;
	int64_t crev;
	int r = SQLITE_DONE;
	*more = 0;
	int rc = reader_begin(c, rev, &crev);
	if (rc < 0)
		goto out;
	store_prefix_upper(prefix, upper);
	/* keys after start_after when it is at or past the prefix, else every key with it */
	int after = start_after && strcmp(start_after, prefix) >= 0;
	sqlite3_stmt *st = c->st[after ? R_LIST_AFTER : R_LIST];
	bind_text(st, 1, after ? start_after : prefix);
	bind_text(st, 2, upper);
	if (limit >= (size_t)INT64_MAX)
		limit = 0;
	sqlite3_bind_int64(st, 3, limit ? (int64_t)limit + 1 : -1);
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		if (limit && nv == limit) {
			*more = 1;
			break;
		}
		const char *key = (const char *)sqlite3_column_text(st, 0);
		const char *value = (const char *)sqlite3_column_text(st, 1);
		if (!key || !value) { /* out of memory converting the column */
			r = SQLITE_NOMEM;
			break;
		}
		const struct store_kv kv = {
			.key = (char *)key,
			.value = (char *)value,
			.create_revision = sqlite3_column_int64(st, 2),
			.mod_revision = sqlite3_column_int64(st, 3),
		};
		nv++;
		struct sq_reader *outer = sq_held;
		sq_held = c;
		rc = fn(arg, &kv);
		sq_held = outer;
		if (rc != 0) {
			if (rc > 0) { /* STORE_SCAN_STOP */
				*more = 1;
				rc = 0;
			}
			break;
		}
	}
	sqlite3_reset(st);
	sq_exec(c->st[R_COMMIT]);
	if (rc == 0 && r != SQLITE_DONE && r != SQLITE_ROW)
		rc = FP_EIO;
out:
	reader_put(c);
	return rc;
}

struct sq_collect {
	struct store_kv *v;
	size_t n, alloc;
};

static int sq_collect(void *arg, const struct store_kv *kv)
{
	struct sq_collect *col = arg;
	ALLOC_GROW(col->v, col->n + 1, col->alloc);
	col->v[col->n] = *kv;
	col->v[col->n].key = xstrdup(kv->key);
	col->v[col->n].value = xstrdup(kv->value);
	col->n++;
	return 0;
}

static int sq_list(struct store_impl *b, const char *prefix, const char *start_after, size_t limit,
		   struct store_kv **items, size_t *n, int64_t *rev, int *more)
{
	struct sq_collect col = {0};
	int rc = sq_scan(b, prefix, start_after, limit, sq_collect, &col, rev, more);
	if (rc < 0) {
		store_kv_array_free(col.v, col.n);
		col.v = NULL;
		col.n = 0;
	}
	*items = col.v;
	*n = col.n;
	return rc;
}

static int sq_count(struct store_impl *b, const char *prefix, size_t *n)
{
	struct sq_reader *c = reader_take(to_sq(b));
	char upper[STORE_MAX_KEY + 2];
	sqlite3_stmt *st = c->st[R_COUNT];
	int rc = FP_EIO;
	store_prefix_upper(prefix, upper);
	bind_text(st, 1, prefix);
	bind_text(st, 2, upper);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*n = (size_t)sqlite3_column_int64(st, 0);
		rc = 0;
	}
	sqlite3_reset(st);
	reader_put(c);
	return rc;
}

static int sq_changes(struct store_impl *b, const char *prefix, int64_t after_rev, size_t max,
		      struct store_event **evs, size_t *n)
{
	struct sq_reader *c = reader_take(to_sq(b));
	char upper[STORE_MAX_KEY + 2];
	struct store_event *v = NULL;
	size_t nv = 0, alloc = 0;
	int64_t rev, crev;
	int r = SQLITE_DONE;
	int rc = reader_begin(c, &rev, &crev);
	if (rc < 0)
		goto out;
	if (after_rev < crev) {
		rc = FP_ECOMPACTED;
		sq_exec(c->st[R_COMMIT]);
		goto out;
	}
	store_prefix_upper(prefix, upper);
	sqlite3_stmt *st = c->st[R_CHANGES];
	sqlite3_bind_int64(st, 1,
			   after_rev >= rev ? (rev + 1) << SQ_ID_SHIFT
					    : (after_rev + 1) << SQ_ID_SHIFT);
	bind_text(st, 2, prefix);
	bind_text(st, 3, upper);
	/* Fetch up to one whole transaction more than max, then cut after the revision that holds
	 * the max-th event: a revision is never split (its events number at most
	 * STORE_MAX_TXN_OPS). */
	sqlite3_bind_int64(st, 4,
			   max >= (size_t)INT64_MAX - STORE_MAX_TXN_OPS
				   ? -1
				   : (int64_t)(max + STORE_MAX_TXN_OPS));
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(v, nv + 1, alloc);
		v[nv].revision = sqlite3_column_int64(st, 0) >> SQ_ID_SHIFT;
		v[nv].key = col_dup(st, 1);
		v[nv].type = (enum store_op_type)sqlite3_column_int(st, 2);
		v[nv].value = col_dup(st, 3);
		v[nv].create_revision = sqlite3_column_int64(st, 4);
		nv++;
	}
	sqlite3_reset(st);
	sq_exec(c->st[R_COMMIT]);
	if (r == SQLITE_DONE && nv > max) {
		size_t keep = max;
		while (keep < nv && v[keep].revision == v[max - 1].revision)
			keep++;
		for (size_t i = keep; i < nv; i++) {
			free(v[i].key);
			free(v[i].value);
		}
		nv = keep;
	}
	if (r != SQLITE_DONE) {
		rc = FP_EIO;
		store_event_array_free(v, nv);
		v = NULL;
		nv = 0;
	}
out:
	reader_put(c);
	*evs = v;
	*n = nv;
	return rc;
}

static int sq_wait(struct store_impl *b, int64_t after_rev, int timeout_ms)
{
	struct store_sqlite *s = to_sq(b);
	struct timespec dl;
	int rc = 0;
	if (timeout_ms >= 0)
		store_deadline(&dl, timeout_ms);
	pthread_mutex_lock(&s->mu);
	s->waiters++;
	for (;;) {
		if (s->closing) {
			rc = FP_ECLOSED;
			break;
		}
		if (atomic_load(&s->rev) > after_rev)
			break;
		if (timeout_ms < 0) {
			pthread_cond_wait(&s->revcond, &s->mu);
		} else if (pthread_cond_timedwait(&s->revcond, &s->mu, &dl) != 0) {
			rc = atomic_load(&s->rev) > after_rev ? 0 : FP_ETIMEDOUT;
			break;
		}
	}
	s->waiters--;
	if (s->closing)
		pthread_cond_broadcast(&s->revcond); /* sq_close waits for waiters to leave */
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* ---- writes ---- */

static int sq_txn(struct store_impl *b, const struct store_op *ops, size_t n, int64_t *rev,
		  size_t *failed_index)
{
	struct sq_req r = {.kind = SQ_REQ_TXN, .ops = ops, .n = n};
	int rc = sq_submit(to_sq(b), &r);
	if (rc == 0)
		*rev = r.rev;
	else
		*failed_index = r.failed_index;
	return rc;
}

static int sq_compact(struct store_impl *b, int64_t rev)
{
	struct sq_req r = {.kind = SQ_REQ_COMPACT, .compact_rev = rev};
	return sq_submit(to_sq(b), &r);
}

static size_t sq_max_txn_ops(struct store_impl *b)
{
	return STORE_MAX_TXN_OPS; /* the changes.id layout above allows no more */
}

const struct store_ops store_sqlite_ops = {
	.scheme = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.revision = sq_revision,
	.compacted_revision = sq_compacted_revision,
	.get = sq_get,
	.txn = sq_txn,
	.list = sq_list,
	.scan = sq_scan,
	.count = sq_count,
	.changes = sq_changes,
	.wait = sq_wait,
	.compact = sq_compact,
	.max_txn_ops = sq_max_txn_ops,
};
