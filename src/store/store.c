/* store.c - the store's single choke point (DESIGN.md "Store"; SQLite os.c). Every public
 * store_* call lands here: the backend is chosen by URI scheme from a static table, arguments
 * are validated (keys, values, prefixes, op lists, expectations), test fault injection fails
 * the Nth write, and write outcomes and latencies are recorded as Prometheus metrics. Only then
 * is the backend op (store_int.h) called. Put and delete are one-op transactions, so backends
 * implement a single write path. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "base/metrics.h"
#include "store/store.h"
#include "store/store_int.h"
#include "base/banned.h"

struct store {
	struct store_impl *impl;
	const struct store_ops *ops;
	pthread_mutex_t fault_mu;
	unsigned fault_countdown; /* 0 = disabled; the write that brings it to 0 fails */
	int fault_rc;
	/* write health (store_write_failing), under fault_mu: the last backend failure */
	int fail_rc;
	int64_t fail_last_ms, fail_first_ms, fail_logged_ms; /* monotonic; 0 = never */
	uint64_t fail_count;                                 /* since the last success */
	atomic_uint_least64_t gets;                          /* store_get calls */
};

static const struct store_ops *const store_backends[] = {
	&store_sqlite_ops,
	&store_mem_ops,
	&store_etcd_ops,
};

struct store_impl *store_impl_get(struct store *s)
{
	return s ? s->impl : NULL;
}

static struct metric_family *m_writes, *m_write_seconds, *m_txn_ops;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void store_metrics_init(void)
{
	static const double ops_buckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
	m_writes = metrics_register(METRIC_COUNTER, "fleetplane_store_writes_total",
				    "Store write calls (put, delete, txn) by result.", "result",
				    NULL, 0);
	m_write_seconds =
		metrics_register(METRIC_HISTOGRAM, "fleetplane_store_write_duration_seconds",
				 "Time from a store write call to its durable acknowledgement.", "",
				 metrics_buckets_fast, METRICS_BUCKETS_FAST_N);
	m_txn_ops = metrics_register(METRIC_HISTOGRAM, "fleetplane_store_txn_ops",
				     "Operations per store write call.", "", ops_buckets,
				     sizeof(ops_buckets) / sizeof(ops_buckets[0]));
}

static const char *result_label(int rc)
{
	switch (rc) {
	case 0: return "ok";
	case FP_EEXIST: return "exists";
	case FP_ECONFLICT: return "conflict";
	case FP_ENOTFOUND: return "notfound";
	case FP_EINVAL:
	case FP_ETOOBIG: return "invalid";
	case FP_ECLOSED: return "closed";
	case FP_ENOSPC: return "nospace";
	default: return "error";
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Records the outcome of one backend write for store_write_failing; logs as it says. */
static void note_write(struct store *s, int rc)
{
	int failed = rc == FP_EIO || rc == FP_ENOSPC;
	if (!failed && rc != 0)
		return; /* an expectation or a refused request says nothing of the disk */
	int64_t now = mono_ms();
	pthread_mutex_lock(&s->fault_mu);
	if (failed) {
		if (!s->fail_count)
			s->fail_first_ms = now;
		s->fail_count++;
		s->fail_rc = rc;
		s->fail_last_ms = now;
		if (!s->fail_logged_ms || now - s->fail_logged_ms >= STORE_FAIL_LOG_MS) {
			s->fail_logged_ms = now;
			log_warn("store: writes fail rc=%s err=%s failed=%llu for_s=%lld hint=%s",
				 fp_err_name(rc), fp_err_msg(rc), (unsigned long long)s->fail_count,
				 (long long)((now - s->fail_first_ms) / 1000),
				 rc == FP_ENOSPC ? "free space on the store's file system"
						 : "see the store's disk");
		}
	} else if (s->fail_count) {
		log_info("store: writes succeed again failed=%llu for_s=%lld",
			 (unsigned long long)s->fail_count,
			 (long long)((now - s->fail_first_ms) / 1000));
		s->fail_count = 0;
		s->fail_rc = 0;
		s->fail_logged_ms = 0;
	}
	pthread_mutex_unlock(&s->fault_mu);
}

int store_write_failing(struct store *s, int64_t window_ms)
{
	pthread_mutex_lock(&s->fault_mu);
	int rc = s->fail_count && mono_ms() - s->fail_last_ms <= window_ms ? s->fail_rc : 0;
	pthread_mutex_unlock(&s->fault_mu);
	return rc;
}

static double mono_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- helpers shared with the backends ---- */

int store_has_prefix(const char *key, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncmp(key, prefix, n) == 0;
}

void store_prefix_upper(const char *prefix, char *upper)
{
	size_t n = strlen(prefix);
	if (n == 0) {
		upper[0] = 0x7f;
		upper[1] = '\0';
		return;
	}
	memcpy(upper, prefix, n + 1);
	upper[n - 1]++; /* printable ASCII, so at most 0x7f: no carry */
}

void store_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

void store_deadline(struct timespec *ts, int timeout_ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* ---- validation ---- */

/* Printable ASCII (0x20..0x7e), at most STORE_MAX_KEY bytes; "" allowed. */
static int valid_text(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++) {
		if (i >= STORE_MAX_KEY)
			return 0;
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return 0;
	}
	return 1;
}

static int valid_key(const char *key)
{
	return key && key[0] == '/' && valid_text(key);
}

static int check_value(const char *value)
{
	if (!value)
		return FP_EINVAL;
	if (strnlen(value, (size_t)STORE_MAX_VALUE + 1) > STORE_MAX_VALUE)
		return FP_ETOOBIG;
	return 0;
}

static int check_op(const struct store_op *op)
{
	if (!valid_key(op->key))
		return FP_EINVAL;
	switch (op->type) {
	case STORE_OP_PUT:
		if (op->expect < STORE_ANY)
			return FP_EINVAL;
		return check_value(op->value);
	case STORE_OP_DELETE:
		if (op->expect < STORE_ANY || op->expect == STORE_ABSENT)
			return FP_EINVAL;
		return 0;
	}
	return FP_EINVAL;
}

static int cmp_key_ptr(const void *a, const void *b)
{
	const struct store_op *const *x = a, *const *y = b;
	int c = strcmp((*x)->key, (*y)->key);
	if (c)
		return c;
	return *x < *y ? -1 : *x > *y;
}

/* Returns 0, or FP_EINVAL with *bad at the later op of the first duplicate pair found. */
static int check_distinct(const struct store_op *ops, size_t n, size_t *bad)
{
	if (n < 2)
		return 0;
	const struct store_op **v = xreallocarray(NULL, n, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = &ops[i];
	qsort(v, n, sizeof(*v), cmp_key_ptr);
	int rc = 0;
	size_t best = n;
	for (size_t i = 1; i < n; i++)
		if (strcmp(v[i - 1]->key, v[i]->key) == 0) {
			size_t idx = (size_t)(v[i] - ops);
			if (idx < best)
				best = idx;
			rc = FP_EINVAL;
		}
	free(v);
	*bad = best;
	return rc;
}

/* ---- lifecycle ---- */

int store_open(const char *uri, struct store **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!uri)
		return fp_errf(FP_EINVAL, err, errlen, "store uri missing");
	const char *colon = strchr(uri, ':');
	if (!colon)
		return fp_errf(FP_EINVAL, err, errlen, "store uri has no scheme: %s", uri);
	size_t slen = (size_t)(colon - uri);
	const struct store_ops *ops = NULL;
	for (size_t i = 0; i < sizeof(store_backends) / sizeof(store_backends[0]); i++)
		if (strlen(store_backends[i]->scheme) == slen &&
		    memcmp(store_backends[i]->scheme, uri, slen) == 0)
			ops = store_backends[i];
	if (!ops)
		return fp_errf(FP_EINVAL, err, errlen, "unknown store scheme in uri: %s", uri);
	pthread_once(&metrics_once, store_metrics_init);

	struct store_impl *impl = NULL;
	int rc = ops->open(colon + 1, &impl, err, errlen);
	if (rc < 0)
		return rc;
	struct store *s = xcalloc(1, sizeof(*s));
	s->impl = impl;
	s->ops = ops;
	pthread_mutex_init(&s->fault_mu, NULL);
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	s->ops->close(s->impl);
	pthread_mutex_destroy(&s->fault_mu);
	free(s);
}

void store_fault_inject(struct store *s, unsigned nth, int rc)
{
	pthread_mutex_lock(&s->fault_mu);
	s->fault_countdown = nth;
	s->fault_rc = rc;
	pthread_mutex_unlock(&s->fault_mu);
}

/* Returns the injected rc when this write call is the chosen one, else 0. */
static int fault_take(struct store *s)
{
	int rc = 0;
	pthread_mutex_lock(&s->fault_mu);
	if (s->fault_countdown > 0 && --s->fault_countdown == 0)
		rc = s->fault_rc;
	pthread_mutex_unlock(&s->fault_mu);
	return rc;
}

/* ---- reads ---- */

size_t store_max_txn_ops(struct store *s)
{
	size_t max = s->ops->max_txn_ops(s->impl);
	BUG_ON(max < 1 || max > STORE_MAX_TXN_OPS);
	return max;
}

uint64_t store_get_count(struct store *s)
{
	return atomic_load_explicit(&s->gets, memory_order_relaxed);
}

int64_t store_revision(struct store *s)
{
	return s->ops->revision(s->impl);
}

int64_t store_compacted_revision(struct store *s)
{
	return s->ops->compacted_revision(s->impl);
}

void store_kv_release(struct store_kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

void store_kv_array_free(struct store_kv *kvs, size_t n)
{
	if (!kvs)
		return;
	for (size_t i = 0; i < n; i++)
		store_kv_release(&kvs[i]);
	free(kvs);
}

void store_event_array_free(struct store_event *evs, size_t n)
{
	if (!evs)
		return;
	for (size_t i = 0; i < n; i++) {
		free(evs[i].key);
		free(evs[i].value);
	}
	free(evs);
}

int store_get(struct store *s, const char *key, struct store_kv *out)
{
	atomic_fetch_add_explicit(&s->gets, 1, memory_order_relaxed);
	memset(out, 0, sizeof(*out));
	if (!valid_key(key))
		return FP_EINVAL;
	return s->ops->get(s->impl, key, out);
}

int store_list(struct store *s, const char *prefix, const char *start_after, size_t limit,
	       struct store_kv **items, size_t *n, int64_t *rev, int *more)
{
	*items = NULL;
	*n = 0;
	if (more)
		*more = 0;
	if (!prefix)
		prefix = "";
	if (!start_after)
		start_after = "";
	if (!valid_text(prefix) || !valid_text(start_after))
		return FP_EINVAL;
	int64_t r = 0;
	int m = 0;
	int rc = s->ops->list(s->impl, prefix, start_after, limit, items, n, &r, &m);
	if (rc < 0)
		return rc;
	if (rev)
		*rev = r;
	if (more)
		*more = m;
	return 0;
}

/* The argument checks both scans share; fills the defaults. */
static int scan_args(const char **prefix, const char **start_after, store_scan_fn fn, int64_t *rev,
		     int *more)
{
	if (more)
		*more = 0;
	if (rev)
		*rev = 0;
	if (!*prefix)
		*prefix = "";
	if (!*start_after)
		*start_after = "";
	if (!fn || !valid_text(*prefix) || !valid_text(*start_after))
		return FP_EINVAL;
	return 0;
}

/* The copied walk behind store_scan_copied, and store_scan's on a backend without a scan. */
static int scan_copied(struct store *s, const char *prefix, const char *start_after, size_t limit,
		       store_scan_fn fn, void *arg, int64_t *rev, int *more)
{
	struct store_kv *items = NULL;
	size_t n = 0;
	int rc = s->ops->list(s->impl, prefix, start_after, limit, &items, &n, rev, more);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = fn(arg, &items[i]);
		if (rc > 0) { /* STORE_SCAN_STOP */
			*more = 1;
			rc = 0;
			break;
		}
	}
	store_kv_array_free(items, n);
	return rc;
}

/* store_scan (copied 0: in place where the backend can) and store_scan_copied (1). */
static int scan_with(struct store *s, const char *prefix, const char *start_after, size_t limit,
		     store_scan_fn fn, void *arg, int64_t *rev, int *more, int copied)
{
	int rc = scan_args(&prefix, &start_after, fn, rev, more);
	if (rc < 0)
		return rc;
	int64_t r = 0;
	int m = 0;
	if (!copied && s->ops->scan)
		rc = s->ops->scan(s->impl, prefix, start_after, limit, fn, arg, &r, &m);
	else
		rc = scan_copied(s, prefix, start_after, limit, fn, arg, &r, &m);
	if (rc < 0)
		return rc;
	if (rev)
		*rev = r;
	if (more)
		*more = m;
	return 0;
}

int store_scan(struct store *s, const char *prefix, const char *start_after, size_t limit,
	       store_scan_fn fn, void *arg, int64_t *rev, int *more)
{
	return scan_with(s, prefix, start_after, limit, fn, arg, rev, more, 0);
}

int store_scan_copied(struct store *s, const char *prefix, const char *start_after, size_t limit,
		      store_scan_fn fn, void *arg, int64_t *rev, int *more)
{
	return scan_with(s, prefix, start_after, limit, fn, arg, rev, more, 1);
}

int store_count(struct store *s, const char *prefix, size_t *n)
{
	*n = 0;
	if (!prefix)
		prefix = "";
	if (!valid_text(prefix))
		return FP_EINVAL;
	return s->ops->count(s->impl, prefix, n);
}

int store_changes(struct store *s, const char *prefix, int64_t after_rev, size_t max,
		  struct store_event **evs, size_t *n)
{
	*evs = NULL;
	*n = 0;
	if (!prefix)
		prefix = "";
	if (!valid_text(prefix) || after_rev < 0)
		return FP_EINVAL;
	if (max == 0)
		max = 1000;
	return s->ops->changes(s->impl, prefix, after_rev, max, evs, n);
}

int store_wait(struct store *s, int64_t after_rev, int timeout_ms)
{
	return s->ops->wait(s->impl, after_rev, timeout_ms);
}

/* ---- writes ---- */

static int do_write(struct store *s, const struct store_op *ops, size_t n, int64_t *rev,
		    size_t *failed_index)
{
	size_t fi = 0;
	int64_t r = 0;
	int rc = 0;
	double t0 = mono_seconds();

	if (!ops || n == 0) {
		rc = FP_EINVAL;
		goto out;
	}
	if (n > store_max_txn_ops(s)) {
		rc = FP_ETOOBIG;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		rc = check_op(&ops[i]);
		if (rc < 0) {
			fi = i;
			goto out;
		}
	}
	rc = check_distinct(ops, n, &fi);
	if (rc < 0)
		goto out;
	rc = fault_take(s);
	if (rc < 0)
		goto out;
	rc = s->ops->txn(s->impl, ops, n, &r, &fi);
	metric_observe(m_write_seconds, NULL, mono_seconds() - t0);
	metric_observe(m_txn_ops, NULL, (double)n);
out:
	note_write(s, rc);
	metric_add(m_writes, (const char *const[]){result_label(rc)}, 1);
	if (rc == 0 && rev)
		*rev = r;
	if (rc < 0 && failed_index)
		*failed_index = fi;
	return rc;
}

int store_put(struct store *s, const char *key, const char *value, int64_t expect, int64_t *rev)
{
	struct store_op op = {.type = STORE_OP_PUT, .key = key, .value = value, .expect = expect};
	return do_write(s, &op, 1, rev, NULL);
}

int store_delete(struct store *s, const char *key, int64_t expect, int64_t *rev)
{
	struct store_op op = {.type = STORE_OP_DELETE, .key = key, .expect = expect};
	return do_write(s, &op, 1, rev, NULL);
}

int store_txn(struct store *s, const struct store_op *ops, size_t n, int64_t *rev,
	      size_t *failed_index)
{
	return do_write(s, ops, n, rev, failed_index);
}

int store_compact(struct store *s, int64_t rev)
{
	if (rev < 0)
		return FP_EINVAL;
	return s->ops->compact(s->impl, rev);
}

struct foreach_state {
	store_foreach_fn fn;
	void *arg;
	int rc;      /* fn's non-zero return */
	char *last;  /* the last key given: where the next page starts (owned) */
	size_t cap;  /* bytes allocated for last */
	size_t seen; /* keys given */
};

static int foreach_item(void *arg, const struct store_kv *kv)
{
	struct foreach_state *f = arg;
	size_t kl = strlen(kv->key);
	if (kl + 1 > f->cap) {
		f->cap = kl + 1;
		f->last = xrealloc(f->last, f->cap);
	}
	memcpy(f->last, kv->key, kl + 1);
	f->seen++;
	int rc = f->fn(f->arg, kv);
	if (rc) {
		f->rc = rc;
		return rc < 0 ? rc : STORE_SCAN_STOP;
	}
	return 0;
}

/* The page walk behind store_foreach (copied 1: store_scan_copied pages) and
 * store_foreach_scan (0: store_scan pages). */
static int foreach_walk(struct store *s, const char *prefix, size_t page, store_foreach_fn fn,
			void *arg, int64_t *rev, int copied)
{
	struct foreach_state f = {.fn = fn, .arg = arg};
	int more = 1, rc = 0;
	char *after = NULL;
	if (rev)
		*rev = 0;
	while (more && rc == 0 && f.rc == 0) {
		int64_t at = 0;
		size_t before = f.seen;
		free(after);
		after = f.last ? xstrdup(f.last) : NULL;
		rc = scan_with(s, prefix, after, page ? page : 1000, foreach_item, &f, &at, &more,
			       copied);
		if (rc < 0)
			break;
		if (rev && (*rev == 0 || at < *rev))
			*rev = at;
		if (f.seen == before)
			break;
	}
	free(after);
	free(f.last);
	return f.rc ? f.rc : rc;
}

int store_foreach_scan(struct store *s, const char *prefix, size_t page, store_foreach_fn fn,
		       void *arg, int64_t *rev)
{
	return foreach_walk(s, prefix, page, fn, arg, rev, 0);
}

int store_foreach(struct store *s, const char *prefix, size_t page, store_foreach_fn fn, void *arg,
		  int64_t * rev)
{
	return foreach_walk(s, prefix, page, fn, arg, rev, 1);
}
