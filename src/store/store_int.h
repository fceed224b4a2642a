/* store_int.h - private interface between store.c and the store backends (SQLite
 * sqlite3_io_methods style). A backend is an ops table plus an instance struct whose first
 * member is struct store_impl. store.c is the only caller of these ops: it has already
 * validated every argument (keys, values, prefixes, op lists, expectations) before an op runs,
 * so backends check only what depends on stored state. Backends are listed in store.c's static
 * table and chosen by the URI scheme given to store_open. */
#ifndef FP_STORE_STORE_INT_H
#define FP_STORE_STORE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "store/store.h"

struct store_impl {
	const struct store_ops *ops;
};

struct store_ops {
	const char *scheme; /* URI scheme before ':' ("sqlite", "mem") */
	/* arg is the URI after "scheme:". */
	int (*open)(const char *arg, struct store_impl **out, char *err, size_t errlen);
	/* Finishes queued writes, wakes waiters with FP_ECLOSED, waits for them to leave, frees. */
	void (*close)(struct store_impl *b);
	int64_t (*revision)(struct store_impl *b);
	int64_t (*compacted_revision)(struct store_impl *b);
	int (*get)(struct store_impl *b, const char *key, struct store_kv *out);
	/* ops: 1..max_txn_ops validated ops with distinct keys. Put and delete arrive here as
	 * one-op transactions. Failed expectations: FP_EEXIST, FP_ECONFLICT, FP_ENOTFOUND with
	 * *failed_index set; nothing is written. */
	int (*txn)(struct store_impl *b, const struct store_op *ops, size_t n, int64_t *rev,
		   size_t *failed_index);
	/* prefix and start_after are never NULL ("" for none). limit 0 = no limit. */
	int (*list)(struct store_impl *b, const char *prefix, const char *start_after, size_t limit,
		    struct store_kv **items, size_t *n, int64_t *rev, int *more);
	/* store_scan; NULL = store.c scans a store_list page. prefix and start_after are never
	 * NULL. */
	int (*scan)(struct store_impl *b, const char *prefix, const char *start_after, size_t limit,
		    store_scan_fn fn, void *arg, int64_t *rev, int *more);
	int (*count)(struct store_impl *b, const char *prefix, size_t *n);
	/* max is already resolved (> 0). */
	int (*changes)(struct store_impl *b, const char *prefix, int64_t after_rev, size_t max,
		       struct store_event **evs, size_t *n);
	int (*wait)(struct store_impl *b, int64_t after_rev, int timeout_ms);
	int (*compact)(struct store_impl *b, int64_t rev);
	/* The most ops one transaction may hold, 1..STORE_MAX_TXN_OPS; fixed for the store's
	 * life. */
	size_t (*max_txn_ops)(struct store_impl *b);
};

extern const struct store_ops store_mem_ops;
extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_etcd_ops; /* store_etcd.c */

/* The backend instance behind s (borrowed), for backend-specific helpers (store_etcd_int.h). */
struct store_impl *store_impl_get(struct store *s);

/* Helpers shared by the backends (store.c). */

/* 1 when key starts with prefix (prefix "" matches everything). */
int store_has_prefix(const char *key, const char *prefix);
/* Writes into upper (size STORE_MAX_KEY + 2) the smallest string greater than every string
 * that starts with prefix. prefix is validated printable ASCII (so the result is too, or
 * "\x7f" for ""). */
void store_prefix_upper(const char *prefix, char *upper);
/* Initialises a condition variable that measures timeouts on CLOCK_MONOTONIC. */
void store_cond_init(pthread_cond_t *c);
/* Absolute CLOCK_MONOTONIC deadline timeout_ms (>= 0) from now, for pthread_cond_timedwait on a
 * condition variable made by store_cond_init. */
void store_deadline(struct timespec *ts, int timeout_ms);

#endif
