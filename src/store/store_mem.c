/* store_mem.c - the in-memory store backend ("mem:"), a first-class implementation used by unit
 * tests and the deterministic simulator (DESIGN.md "Store"). Keys live in an array of pointers
 * kept in byte order (binary search: O(log n) get, ordered prefix scans; O(n) pointer moves on
 * insert/delete). The change feed is an array of events in revision order, trimmed by
 * compaction. One mutex guards everything; a condition variable wakes store_wait callers on
 * each commit and on close. Nothing survives store_close. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "store/store_int.h"
#include "base/banned.h"

struct mem_entry {
	char *key;
	char *value;
	int64_t create_rev;
	int64_t mod_rev;
};

struct mem_event {
	int64_t rev;
	enum store_op_type type;
	char *key;
	char *value; /* NULL for a delete */
	int64_t create_rev;
};

struct store_mem {
	struct store_impl base;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* broadcast on commit and close */
	struct mem_entry **keys;
	size_t nkeys, keys_alloc;
	struct mem_event *evs;
	size_t nevs, evs_alloc;
	int64_t rev;
	int64_t compacted_rev;
	int closing;
	int waiters;
	size_t max_txn_ops;
};

static struct store_mem *to_mem(struct store_impl *b)
{
	return (struct store_mem *)b;
}

/* Index of the first key >= key; *found set when equal. */
static size_t mem_search(struct store_mem *m, const char *key, int *found)
{
	size_t lo = 0, hi = m->nkeys;
	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->keys[mid]->key, key);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct mem_entry *mem_find(struct store_mem *m, const char *key)
{
	int found;
	size_t i = mem_search(m, key, &found);
	return found ? m->keys[i] : NULL;
}

/* arg: "" or "max_txn_ops=N" (1..STORE_MAX_TXN_OPS), a smaller transaction limit so tests
 * can play a backend such as etcd. */
static int mem_open(const char *arg, struct store_impl **out, char *err, size_t errlen)
{
	size_t max = STORE_MAX_TXN_OPS;
	if (strncmp(arg, "max_txn_ops=", 12) == 0) {
		char *end = NULL;
		unsigned long v = strtoul(arg + 12, &end, 10);
		if (end == arg + 12 || *end || v < 1 || v > STORE_MAX_TXN_OPS)
			return fp_errf(FP_EINVAL, err, errlen,
				       "mem:max_txn_ops=N takes 1..%d, not %s", STORE_MAX_TXN_OPS,
				       arg + 12);
		max = v;
	} else if (arg[0] != '\0') {
		return fp_errf(FP_EINVAL, err, errlen, "mem store takes no path: mem:%s", arg);
	}
	struct store_mem *m = xcalloc(1, sizeof(*m));
	m->max_txn_ops = max;
	m->base.ops = &store_mem_ops;
	pthread_mutex_init(&m->mu, NULL);
	store_cond_init(&m->cond);
	*out = &m->base;
	return 0;
}

static void mem_close(struct store_impl *b)
{
	struct store_mem *m = to_mem(b);
	pthread_mutex_lock(&m->mu);
	m->closing = 1;
	pthread_cond_broadcast(&m->cond);
	while (m->waiters > 0)
		pthread_cond_wait(&m->cond, &m->mu);
	pthread_mutex_unlock(&m->mu);

	for (size_t i = 0; i < m->nkeys; i++) {
		free(m->keys[i]->key);
		free(m->keys[i]->value);
		free(m->keys[i]);
	}
	free(m->keys);
	for (size_t i = 0; i < m->nevs; i++) {
		free(m->evs[i].key);
		free(m->evs[i].value);
	}
	free(m->evs);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static int64_t mem_revision(struct store_impl *b)
{
	struct store_mem *m = to_mem(b);
	pthread_mutex_lock(&m->mu);
	int64_t r = m->rev;
	pthread_mutex_unlock(&m->mu);
	return r;
}

static int64_t mem_compacted_revision(struct store_impl *b)
{
	struct store_mem *m = to_mem(b);
	pthread_mutex_lock(&m->mu);
	int64_t r = m->compacted_rev;
	pthread_mutex_unlock(&m->mu);
	return r;
}

static void fill_kv(struct store_kv *kv, const struct mem_entry *e)
{
	kv->key = xstrdup(e->key);
	kv->value = xstrdup(e->value);
	kv->create_revision = e->create_rev;
	kv->mod_revision = e->mod_rev;
}

static int mem_get(struct store_impl *b, const char *key, struct store_kv *out)
{
	struct store_mem *m = to_mem(b);
	int rc = FP_ENOTFOUND;
	pthread_mutex_lock(&m->mu);
	struct mem_entry *e = mem_find(m, key);
	if (e) {
		fill_kv(out, e);
		rc = 0;
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* The expectation check for one op against current state; 0 or a failed-expectation code. */
static int mem_check(struct store_mem *m, const struct store_op *op)
{
	struct mem_entry *e = mem_find(m, op->key);
	if (op->type == STORE_OP_DELETE) {
		if (!e)
			return FP_ENOTFOUND;
		if (op->expect > 0 && e->mod_rev != op->expect)
			return FP_ECONFLICT;
		return 0;
	}
	if (op->expect == STORE_ABSENT && e)
		return FP_EEXIST;
	if (op->expect > 0 && (!e || e->mod_rev != op->expect))
		return FP_ECONFLICT;
	return 0;
}

static void mem_apply(struct store_mem *m, const struct store_op *op, int64_t rev)
{
	int found;
	size_t i = mem_search(m, op->key, &found);
	struct mem_event *ev;
	ALLOC_GROW(m->evs, m->nevs + 1, m->evs_alloc);
	ev = &m->evs[m->nevs++];
	ev->rev = rev;
	ev->type = op->type;
	ev->key = xstrdup(op->key);

	if (op->type == STORE_OP_DELETE) {
		BUG_ON(!found);
		struct mem_entry *e = m->keys[i];
		memmove(&m->keys[i], &m->keys[i + 1], (m->nkeys - i - 1) * sizeof(*m->keys));
		m->nkeys--;
		free(e->key);
		free(e->value);
		free(e);
		ev->value = NULL;
		ev->create_rev = 0;
		return;
	}
	struct mem_entry *e;
	if (found) {
		e = m->keys[i];
		free(e->value);
	} else {
		ALLOC_GROW(m->keys, m->nkeys + 1, m->keys_alloc);
		memmove(&m->keys[i + 1], &m->keys[i], (m->nkeys - i) * sizeof(*m->keys));
		e = xcalloc(1, sizeof(*e));
		e->key = xstrdup(op->key);
		e->create_rev = rev;
		m->keys[i] = e;
		m->nkeys++;
	}
	e->value = xstrdup(op->value);
	e->mod_rev = rev;
	ev->value = xstrdup(op->value);
	ev->create_rev = e->create_rev;
}

static int mem_txn(struct store_impl *b, const struct store_op *ops, size_t n, int64_t *rev,
		   size_t *failed_index)
{
	struct store_mem *m = to_mem(b);
	int rc = 0;
	pthread_mutex_lock(&m->mu);
	if (m->closing) {
		rc = FP_ECLOSED;
		goto out;
	}
	/* Keys are distinct (store.c), so checks do not depend on each other's writes. */
	for (size_t i = 0; i < n; i++) {
		rc = mem_check(m, &ops[i]);
		if (rc < 0) {
			*failed_index = i;
			goto out;
		}
	}
	m->rev++;
	for (size_t i = 0; i < n; i++)
		mem_apply(m, &ops[i], m->rev);
	*rev = m->rev;
	pthread_cond_broadcast(&m->cond);
out:
	pthread_mutex_unlock(&m->mu);
	return rc;
}

static int mem_list(struct store_impl *b, const char *prefix, const char *start_after, size_t limit,
		    struct store_kv **items, size_t *n, int64_t *rev, int *more)
{
	struct store_mem *m = to_mem(b);
	struct store_kv *v = NULL;
	size_t nv = 0, alloc = 0;
	int found;
	pthread_mutex_lock(&m->mu);
	int after = strcmp(start_after, prefix) >= 0; /* start strictly after start_after */
	size_t i = mem_search(m, after ? start_after : prefix, &found);
	if (found && after)
		i++;
	*more = 0;
	for (; i < m->nkeys && store_has_prefix(m->keys[i]->key, prefix); i++) {
		if (limit && nv == limit) {
			*more = 1;
			break;
		}
		ALLOC_GROW(v, nv + 1, alloc);
		fill_kv(&v[nv++], m->keys[i]);
	}
	*rev = m->rev;
	pthread_mutex_unlock(&m->mu);
	*items = v;
	*n = nv;
	return 0;
}

static int mem_count(struct store_impl *b, const char *prefix, size_t *n)
{
	struct store_mem *m = to_mem(b);
	char upper[STORE_MAX_KEY + 2];
	int found;
	store_prefix_upper(prefix, upper);
	pthread_mutex_lock(&m->mu);
	size_t lo = mem_search(m, prefix, &found);
	size_t hi = mem_search(m, upper, &found);
	pthread_mutex_unlock(&m->mu);
	*n = hi - lo;
	return 0;
}

static int mem_changes(struct store_impl *b, const char *prefix, int64_t after_rev, size_t max,
		       struct store_event **evs, size_t *n)
{
	struct store_mem *m = to_mem(b);
	struct store_event *v = NULL;
	size_t nv = 0, alloc = 0;
	int rc = 0;
	pthread_mutex_lock(&m->mu);
	if (after_rev < m->compacted_rev) {
		rc = FP_ECOMPACTED;
		goto out;
	}
	/* first event with rev > after_rev */
	size_t lo = 0, hi = m->nevs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->evs[mid].rev <= after_rev)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < m->nevs; i++) {
		const struct mem_event *e = &m->evs[i];
		/* Past max, finish the revision in hand: a revision is never split. */
		if (nv >= max && e->rev != v[nv - 1].revision)
			break;
		if (!store_has_prefix(e->key, prefix))
			continue;
		ALLOC_GROW(v, nv + 1, alloc);
		v[nv].revision = e->rev;
		v[nv].type = e->type;
		v[nv].key = xstrdup(e->key);
		v[nv].value = e->value ? xstrdup(e->value) : NULL;
		v[nv].create_revision = e->create_rev;
		nv++;
	}
out:
	pthread_mutex_unlock(&m->mu);
	*evs = v;
	*n = nv;
	return rc;
}

static int mem_wait(struct store_impl *b, int64_t after_rev, int timeout_ms)
{
	struct store_mem *m = to_mem(b);
	struct timespec dl;
	int rc = 0;
	if (timeout_ms >= 0)
		store_deadline(&dl, timeout_ms);
	pthread_mutex_lock(&m->mu);
	m->waiters++;
	for (;;) {
		if (m->closing) {
			rc = FP_ECLOSED;
			break;
		}
		if (m->rev > after_rev)
			break;
		if (timeout_ms < 0) {
			pthread_cond_wait(&m->cond, &m->mu);
		} else if (pthread_cond_timedwait(&m->cond, &m->mu, &dl) != 0) {
			rc = m->rev > after_rev ? 0 : FP_ETIMEDOUT;
			break;
		}
	}
	m->waiters--;
	if (m->closing)
		pthread_cond_broadcast(&m->cond); /* store_close waits for waiters to leave */
	pthread_mutex_unlock(&m->mu);
	return rc;
}

static int mem_compact(struct store_impl *b, int64_t rev)
{
	struct store_mem *m = to_mem(b);
	int rc = 0;
	pthread_mutex_lock(&m->mu);
	if (rev > m->rev) {
		rc = FP_EINVAL;
		goto out;
	}
	if (rev <= m->compacted_rev)
		goto out;
	size_t k = 0;
	while (k < m->nevs && m->evs[k].rev <= rev) {
		free(m->evs[k].key);
		free(m->evs[k].value);
		k++;
	}
	memmove(m->evs, m->evs + k, (m->nevs - k) * sizeof(*m->evs));
	m->nevs -= k;
	m->compacted_rev = rev;
out:
	pthread_mutex_unlock(&m->mu);
	return rc;
}

static size_t mem_max_txn_ops(struct store_impl *b)
{
	return to_mem(b)->max_txn_ops;
}

const struct store_ops store_mem_ops = {
	.scheme = "mem",
	.open = mem_open,
	.close = mem_close,
	.revision = mem_revision,
	.compacted_revision = mem_compacted_revision,
	.get = mem_get,
	.txn = mem_txn,
	.list = mem_list,
	.count = mem_count,
	.changes = mem_changes,
	.wait = mem_wait,
	.compact = mem_compact,
	.max_txn_ops = mem_max_txn_ops,
};
