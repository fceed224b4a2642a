/* store.h - the revisioned key-value store of JSON documents (DESIGN.md "Store"; the etcd v3
 * model). One global, monotonically increasing revision; every successful write bumps it by
 * one and stamps the key's mod_revision. Compare-and-swap on mod_revision, create-if-absent,
 * multi-key transactions, a change feed readable from any revision newer than the compaction
 * point, and a blocking wait for new revisions.
 *
 * Backends (chosen by URI in store_open): "sqlite:PATH" (WAL, group commit: a write returns
 * only after the batch holding it has committed and is durable; the change feed is a table),
 * "mem:" (in-memory, for unit tests and the deterministic simulator), "etcd://h1:2379,h2:2379"
 * (etcd v3 over its JSON gateway; store_etcd.c says how revisions, limits and the feed map). Callers use only the
 * store_* functions below: store.c wraps the backend ops and is the single choke point for
 * argument checks, metrics and fault injection (SQLite os.c).
 *
 * Keys are "/"-separated printable ASCII (0x20..0x7e), 1..255 bytes, starting with "/". Values
 * are UTF-8 JSON text, at most STORE_MAX_VALUE bytes; the store does not parse them. Prefixes
 * and start_after strings are printable ASCII of at most 255 bytes ("" allowed); anything else
 * is FP_EINVAL. All functions are thread-safe; only store_wait may run while store_close does. */
#ifndef FP_STORE_STORE_H
#define FP_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_MAX_KEY 255
#define STORE_MAX_VALUE (1u << 20)
/* The ceiling of any backend's transaction limit (store_max_txn_ops): enough for the largest
 * bulk enroll (10,000 nodes, each with its audit event) in one SQLite transaction. */
#define STORE_MAX_TXN_OPS 32768

struct store;

/* One key's current state as returned by get/list. Strings are owned by the struct. */
struct store_kv {
	char *key;
	char *value;
	int64_t create_revision;
	int64_t mod_revision;
};

/* Frees kv's strings and zeroes it (the struct itself is the caller's). NULL is a no-op. */
void store_kv_release(struct store_kv *kv);
/* Releases n entries and frees the array from store_list. NULL is a no-op. */
void store_kv_array_free(struct store_kv *kvs, size_t n);

/* Expectation on a key's mod_revision for a write. */
#define STORE_ANY (-1)   /* write regardless */
#define STORE_ABSENT (0) /* create-if-absent: fail with FP_EEXIST if the key exists */
/* any value > 0: compare-and-swap, FP_ECONFLICT unless the key exists with this mod_revision */

enum store_op_type {
	STORE_OP_PUT = 1,
	STORE_OP_DELETE = 2
};

/* One write inside a transaction. Strings are borrowed for the call. */
struct store_op {
	enum store_op_type type;
	const char *key;
	const char *value; /* PUT only */
	int64_t expect;    /* STORE_ANY, STORE_ABSENT, or a mod_revision */
};

/* A change-feed entry: the key after revision `revision` (value NULL and create_revision 0 for
 * a delete). Events of one transaction share its revision and come in the order of its ops. */
struct store_event {
	int64_t revision;
	enum store_op_type type;
	char *key;
	char *value;
	int64_t create_revision;
};

/* Frees n events and the array from store_changes. NULL is a no-op. */
void store_event_array_free(struct store_event *evs, size_t n);

/* Opens a store. uri: "sqlite:/path/to/file.db" or "mem:". On error returns FP_EINVAL (bad
 * uri) or FP_EIO with detail in err. *out is owned by the caller; close with store_close. */
int store_open(const char *uri, struct store **out, char *err, size_t errlen);
/* Flushes pending writes, closes, frees. NULL is a no-op. */
void store_close(struct store *s);

/* Current (latest committed) revision; 0 for an empty store. */
int64_t store_revision(struct store *s);

/* Reads one key. Returns 0 and fills *out (caller releases), FP_ENOTFOUND, FP_EINVAL (bad key)
 * or FP_EIO; on error *out is zeroed. */
int store_get(struct store *s, const char *key, struct store_kv *out);

/* Writes one key. expect: STORE_ANY, STORE_ABSENT or a mod_revision (see above; a CAS on an
 * absent key is FP_ECONFLICT). Returns 0 and the new revision in *rev (may be NULL), FP_EEXIST,
 * FP_ECONFLICT, FP_EINVAL (bad key, NULL value, expect < STORE_ANY), FP_ETOOBIG (value over
 * STORE_MAX_VALUE), FP_ECLOSED, or FP_EIO. On any error but FP_EIO nothing is written; after
 * FP_EIO (e.g. a failed fsync at commit) the write is either fully applied or fully absent. */
int store_put(struct store *s, const char *key, const char *value, int64_t expect, int64_t *rev);

/* Deletes one key. expect: STORE_ANY or a mod_revision (STORE_ABSENT is FP_EINVAL). Returns 0
 * and the new revision in *rev (may be NULL), FP_ENOTFOUND (absent, whatever expect is),
 * FP_ECONFLICT, FP_EINVAL, FP_ECLOSED or FP_EIO, as store_put. */
int store_delete(struct store *s, const char *key, int64_t expect, int64_t *rev);

/* The most ops one store_txn may hold on this store, 1..STORE_MAX_TXN_OPS, as the backend
 * reports it (SQLite and mem: STORE_MAX_TXN_OPS; "mem:max_txn_ops=N" sets N; etcd's default
 * is 128). Fixed for the store's life; callers that write in batches size them by it. */
size_t store_max_txn_ops(struct store *s);

/* Applies all ops atomically or none. All ops of one transaction get the same new revision.
 * Each op has store_put's (PUT) or store_delete's (DELETE) expectation semantics. On a failed
 * expectation returns FP_EEXIST/FP_ECONFLICT/FP_ENOTFOUND and, if failed_index is not NULL,
 * the index of the first op that failed. 1..store_max_txn_ops(s) ops (n == 0 or ops NULL is
 * FP_EINVAL, more is FP_ETOOBIG); one key at most once (else FP_EINVAL with failed_index at
 * the repeat); an invalid op is FP_EINVAL or FP_ETOOBIG with failed_index at it. rev and
 * failed_index may be NULL. */
int store_txn(struct store *s, const struct store_op *ops, size_t n, int64_t *rev,
	      size_t *failed_index);

/* store_write_failing returns the error (FP_EIO, or FP_ENOSPC when the backend is out of
 * space: SQLite's SQLITE_FULL) of the last write the backend failed, when no write has
 * succeeded since and that failure is at most window_ms old (monotonic); 0 otherwise. The
 * window lets an idle store count as writable again once space is back. While writes fail,
 * one warning per STORE_FAIL_LOG_MS names the error and the count (never one per write). */
#define STORE_FAIL_LOG_MS 60000
int store_write_failing(struct store *s, int64_t window_ms);

/* Lists keys with the given prefix in byte order, strictly after start_after (NULL or "" for
 * the beginning), at most limit (0 = no limit). *items is a new array the caller frees with
 * store_kv_array_free; *rev is the store revision the list was read at. *more is set to 1 when
 * keys remain after the last returned one. rev and more may be NULL. Returns 0, FP_EINVAL or
 * FP_EIO. */
int store_list(struct store *s, const char *prefix, const char *start_after, size_t limit,
	       struct store_kv **items, size_t *n, int64_t *rev, int *more);

/* store_list without the copies: calls fn for each key with the prefix, in byte order, strictly
 * after start_after (NULL or "" for the beginning), at most limit keys (0 = no limit), all from
 * one snapshot - every kv is as of the revision stored in *rev, as one store_list page is.
 * kv and its strings are borrowed for the call only (on SQLite they point into the database
 * page cache: no allocation per key). fn returns 0 for the next key, STORE_SCAN_STOP to end
 * the scan there (that key counts as not given: *more is 1), or a negative error, which ends
 * the scan and is returned. *more (may be NULL) is 1 when keys remain after the last one
 * given. Returns 0, fn's error, FP_EINVAL or FP_EIO. For the API's list pages (issue 17 item
 * 4: the stored text served without a copy).
 * On SQLite the scan holds one of a few pooled connections and a read transaction for as long
 * as fn runs: fn may get or list (a nested read uses another connection and may see a later
 * revision) but not scan again, and must not wait for a write to commit or take a lock whose
 * holder may be reading the store. A callback that must is given store_scan_copied. */
#define STORE_SCAN_STOP 1
typedef int (*store_scan_fn)(void *arg, const struct store_kv *kv);
int store_scan(struct store *s, const char *prefix, const char *start_after, size_t limit,
	       store_scan_fn fn, void *arg, int64_t *rev, int *more);

/* store_scan over a copied store_list page: the same arguments, order, snapshot and results,
 * with fn called after the read has ended, so fn may do anything (take locks, write). */
int store_scan_copied(struct store *s, const char *prefix, const char *start_after, size_t limit,
		      store_scan_fn fn, void *arg, int64_t *rev, int *more);

/* Calls fn for every key with the prefix, in byte order, reading pages of `page` keys (0 =
 * 1000) through store_list. fn returns 0 to go on, anything else stops the walk and is
 * returned. *rev (may be NULL) receives the lowest revision any page was read at: a caller
 * that follows with store_changes from there misses nothing. kv is borrowed for the call. */
typedef int (*store_foreach_fn)(void *arg, const struct store_kv *kv);
int store_foreach(struct store *s, const char *prefix, size_t page, store_foreach_fn fn, void *arg,
		  int64_t * rev);
/* store_foreach over store_scan pages: every key with the prefix in byte order, kv borrowed
 * inside each page's read transaction (on SQLite, where the page cache holds it: no copy of a
 * whole page per call). fn is bound by store_scan's rules (it may get or list, but must not
 * scan, wait for a write, or take a lock whose holder may be reading the store): for passes
 * that only read and collect (the start-up passes over every node). fn's non-zero return
 * stops the walk and is returned; *rev as store_foreach's. Returns 0, fn's result, or store_scan's error. */
int store_foreach_scan(struct store *s, const char *prefix, size_t page, store_foreach_fn fn,
		       void *arg, int64_t *rev);

/* Counts keys with the prefix (NULL or "" for all) into *n. Returns 0, FP_EINVAL or FP_EIO. */
int store_count(struct store *s, const char *prefix, size_t *n);

/* Reads the change feed: events with revision > after_rev whose key has the prefix ("" for all),
 * in revision order, at most max (0 = 1000) - except that a revision is never split: the
 * revision holding the max-th event is returned whole (up to STORE_MAX_TXN_OPS - 1 more). Returns FP_ECOMPACTED if after_rev is older than
 * the compaction point (the caller must re-list), FP_EINVAL for after_rev < 0 or a bad prefix,
 * FP_EIO. *evs is freed with store_event_array_free (NULL when *n is 0). */
int store_changes(struct store *s, const char *prefix, int64_t after_rev, size_t max,
		  struct store_event **evs, size_t *n);

/* Blocks until store_revision(s) > after_rev or timeout_ms passes (monotonic real time; < 0
 * waits without limit) or the store is closing. Returns 0 when a newer revision exists,
 * FP_ETIMEDOUT, or FP_ECLOSED. store_close wakes waiters and waits for them to return. */
int store_wait(struct store *s, int64_t after_rev, int timeout_ms);

/* Drops change-feed entries with revision <= rev; keys are untouched and the revision does not
 * change. rev at or below the compaction point is a no-op. Returns 0, FP_EINVAL if rev < 0 or
 * rev > current, or FP_EIO. */
int store_compact(struct store *s, int64_t rev);
/* The compaction point (0 if never compacted). */
int64_t store_compacted_revision(struct store *s);

/* The number of store_get calls made on s since it was opened (any result): what a path that
 * should read from a cache costs the store, for tests and benchmarks. Thread-safe. */
uint64_t store_get_count(struct store *s);

/* Fault injection for tests: the nth (1-based) write call (put, delete, txn) from now that passes
 * argument checks fails with rc without writing anything; once only. nth 0 disables. */
void store_fault_inject(struct store *s, unsigned nth, int rc);

#endif
