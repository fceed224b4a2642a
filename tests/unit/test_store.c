/* layers: base core store */
/* test_store.c - the store contract (store.h), run against both backends: "mem:" and
 * "sqlite:" in a fresh mkdtemp directory per test. Covers reads and writes with their
 * expectations, transactions, ordered listing, the change feed and compaction, store_wait,
 * argument validation, fault injection and write metrics, concurrent writers, and (SQLite)
 * reopen and kill -9 crash safety. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "base/err.h"
#include "base/metrics.h"
#include "store/leader.h"
#include "store/store.h"
#include "store/store_etcd_int.h"
#include "base/banned.h"

struct fx {
	int sqlite;
	char dir[64];
	char uri[128];
	struct store *s;
	pid_t etcd; /* a single-member etcd started for this test (setup_etcd) */
};

static void open_store(struct fx *f)
{
	char err[256] = "";
	int rc = store_open(f->uri, &f->s, err, sizeof(err));
	if (rc != 0)
		fail_msg("store_open %s: %d %s", f->uri, rc, err);
}

static int setup_mem(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->uri, sizeof(f->uri), "mem:");
	open_store(f);
	*state = f;
	return 0;
}

static int setup_sqlite(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->sqlite = 1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_store.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->uri, sizeof(f->uri), "sqlite:%s/store.db", f->dir);
	open_store(f);
	*state = f;
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- etcd: one fresh single-member etcd per test, on free loopback ports, in a temp dir ---- */

static int etcd_skip; /* 1: etcd is not installed and we are not root (CI installs it) */

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return ntohs(a.sin_port);
}

static int etcd_up(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static int setup_etcd(void **state)
{
	if (etcd_skip)
		skip();
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_store_etcd.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	int cp = free_port(), pp = free_port();
	char data[128], curl[64], purl[64], cluster[96], log[128];
	snprintf(data, sizeof(data), "%s/data", f->dir);
	snprintf(curl, sizeof(curl), "http://127.0.0.1:%d", cp);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", pp);
	snprintf(cluster, sizeof(cluster), "s1=%s", purl);
	snprintf(log, sizeof(log), "%s/log", f->dir);
	f->etcd = fork();
	if (f->etcd == 0) {
		prctl(PR_SET_PDEATHSIG,
		      SIGKILL); /* a crashed or killed suite leaves no etcd behind */
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("etcd", "etcd", "--name", "s1", "--data-dir", data, "--listen-client-urls",
		       curl, "--advertise-client-urls", curl, "--listen-peer-urls", purl,
		       "--initial-advertise-peer-urls", purl, "--initial-cluster", cluster,
		       "--initial-cluster-state", "new", "--log-level", "error", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && !etcd_up(cp); i++)
		sleep_ms(25);
	snprintf(f->uri, sizeof(f->uri), "etcd://127.0.0.1:%d", cp);
	/* the first request can race etcd's first election: retry the open briefly */
	char err[256] = "";
	int rc = -1;
	for (int i = 0; i < 100 && rc != 0; i++) {
		rc = store_open(f->uri, &f->s, err, sizeof(err));
		if (rc != 0)
			sleep_ms(50);
	}
	if (rc != 0)
		fail_msg("store_open %s: %d %s", f->uri, rc, err);
	*state = f;
	return 0;
}

static void etcd_stop(struct fx *f)
{
	if (f->etcd <= 0)
		return;
	kill(f->etcd, SIGTERM);
	waitpid(f->etcd, NULL, 0);
	f->etcd = 0;
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "%s/data", f->dir);
	/* the data dir holds etcd's member/ tree: remove it with rm (argv, no shell) */
	pid_t p = fork();
	if (p == 0) {
		execlp("rm", "rm", "-rf", f->dir, (char *)NULL);
		_exit(127);
	}
	waitpid(p, NULL, 0);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	store_close(f->s);
	f->s = NULL;
	if (f->etcd) {
		etcd_stop(f);
		free(f);
		return 0;
	}
	if (f->sqlite) {
		static const char *const names[] = {"store.db", "store.db-wal", "store.db-shm"};
		char p[192];
		for (size_t i = 0; i < 3; i++) {
			snprintf(p, sizeof(p), "%s/%s", f->dir, names[i]);
			unlink(p);
		}
		rmdir(f->dir);
	}
	free(f);
	return 0;
}

static int64_t put_ok(struct store *s, const char *key, const char *value)
{
	int64_t rev = -1;
	assert_int_equal(store_put(s, key, value, STORE_ANY, &rev), 0);
	return rev;
}

static void expect_kv(struct store *s, const char *key, const char *value, int64_t create_rev,
		      int64_t mod_rev)
{
	struct store_kv kv;
	assert_int_equal(store_get(s, key, &kv), 0);
	assert_string_equal(kv.key, key);
	assert_string_equal(kv.value, value);
	assert_int_equal(kv.create_revision, create_rev);
	assert_int_equal(kv.mod_revision, mod_rev);
	store_kv_release(&kv);
}

static void expect_absent(struct store *s, const char *key)
{
	struct store_kv kv;
	assert_int_equal(store_get(s, key, &kv), FP_ENOTFOUND);
	assert_null(kv.key);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- basic reads and writes ---- */

static void test_put_get(void **state)
{
	struct fx *f = *state;
	struct store *s = f->s;
	assert_int_equal(store_revision(s), 0);
	expect_absent(s, "/nodes/a");
	assert_int_equal(put_ok(s, "/nodes/a", "{\"v\":1}"), 1);
	expect_kv(s, "/nodes/a", "{\"v\":1}", 1, 1);
	assert_int_equal(put_ok(s, "/nodes/b", ""), 2);
	assert_int_equal(put_ok(s, "/nodes/a", "{\"v\":2}"), 3);
	expect_kv(s, "/nodes/a", "{\"v\":2}", 1, 3);
	expect_kv(s, "/nodes/b", "", 2, 2);
	assert_int_equal(store_revision(s), 3);
	/* rev may be NULL */
	assert_int_equal(store_put(s, "/nodes/c", "x", STORE_ANY, NULL), 0);
	assert_int_equal(store_revision(s), 4);
}

static void test_create_if_absent(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	int64_t rev = -1;
	assert_int_equal(store_put(s, "/x", "first", STORE_ABSENT, &rev), 0);
	assert_int_equal(rev, 1);
	rev = -1;
	assert_int_equal(store_put(s, "/x", "second", STORE_ABSENT, &rev), FP_EEXIST);
	assert_int_equal(rev, -1);
	assert_int_equal(store_revision(s), 1);
	expect_kv(s, "/x", "first", 1, 1);
}

static void test_cas(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	int64_t r1 = put_ok(s, "/c", "v1"), r2 = -1;
	assert_int_equal(r1, 1);
	assert_int_equal(store_put(s, "/c", "v2", r1, &r2), 0);
	assert_int_equal(r2, 2);
	assert_int_equal(store_put(s, "/c", "v3", r1, NULL), FP_ECONFLICT);
	assert_int_equal(store_put(s, "/missing", "v", 5, NULL), FP_ECONFLICT);
	expect_absent(s, "/missing");
	expect_kv(s, "/c", "v2", 1, 2);
	assert_int_equal(store_revision(s), 2);
}

static void test_delete(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	int64_t rev = -1;
	assert_int_equal(store_delete(s, "/d", STORE_ANY, NULL), FP_ENOTFOUND);
	assert_int_equal(store_delete(s, "/d", 7, NULL), FP_ENOTFOUND);
	assert_int_equal(put_ok(s, "/d", "v"), 1);
	assert_int_equal(store_delete(s, "/d", 99, NULL), FP_ECONFLICT);
	expect_kv(s, "/d", "v", 1, 1);
	assert_int_equal(store_delete(s, "/d", 1, &rev), 0);
	assert_int_equal(rev, 2);
	expect_absent(s, "/d");
	assert_int_equal(put_ok(s, "/d", "again"), 3);
	expect_kv(s, "/d", "again", 3, 3); /* a new life: create_revision restarts */
	assert_int_equal(store_delete(s, "/d", STORE_ANY, &rev), 0);
	assert_int_equal(rev, 4);
	assert_int_equal(store_revision(s), 4);
}

/* ---- transactions ---- */

static void test_txn(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	int64_t rev = -1;
	size_t fi = 99;
	assert_int_equal(put_ok(s, "/t/c", "c"), 1);
	assert_int_equal(put_ok(s, "/t/b", "b0"), 2);

	struct store_op ok[] = {
		{STORE_OP_PUT, "/t/a", "a", STORE_ABSENT},
		{STORE_OP_PUT, "/t/b", "b1", 2},
		{STORE_OP_DELETE, "/t/c", NULL, STORE_ANY},
	};
	assert_int_equal(store_txn(s, ok, 3, &rev, &fi), 0);
	assert_int_equal(rev, 3);
	assert_int_equal(fi, 99);
	expect_kv(s, "/t/a", "a", 3, 3);
	expect_kv(s, "/t/b", "b1", 2, 3);
	expect_absent(s, "/t/c");

	/* the second op fails: the first must not be applied */
	struct store_op exists[] = {
		{STORE_OP_PUT, "/t/x", "x", STORE_ANY},
		{STORE_OP_PUT, "/t/a", "a2", STORE_ABSENT},
	};
	assert_int_equal(store_txn(s, exists, 2, &rev, &fi), FP_EEXIST);
	assert_int_equal(fi, 1);
	expect_absent(s, "/t/x");

	struct store_op conflict[] = {
		{STORE_OP_PUT, "/t/x", "x", STORE_ANY},
		{STORE_OP_DELETE, "/t/y", NULL, STORE_ANY},
		{STORE_OP_PUT, "/t/b", "b2", 2},
	};
	assert_int_equal(store_txn(s, conflict, 3, &rev, &fi), FP_ENOTFOUND);
	assert_int_equal(fi, 1);
	conflict[1].key = "/t/a";
	assert_int_equal(store_txn(s, conflict, 3, &rev, &fi), FP_ECONFLICT);
	assert_int_equal(fi, 2);
	expect_absent(s, "/t/x");
	expect_kv(s, "/t/a", "a", 3, 3);
	expect_kv(s, "/t/b", "b1", 2, 3);

	/* refused before reaching the backend */
	struct store_op dup[] = {
		{STORE_OP_PUT, "/t/q", "1", STORE_ANY},
		{STORE_OP_PUT, "/t/r", "2", STORE_ANY},
		{STORE_OP_DELETE, "/t/q", NULL, STORE_ANY},
	};
	assert_int_equal(store_txn(s, dup, 3, &rev, &fi), FP_EINVAL);
	assert_int_equal(fi, 2);
	assert_int_equal(store_txn(s, dup, 0, &rev, &fi), FP_EINVAL);
	assert_int_equal(store_txn(s, NULL, 1, &rev, &fi), FP_EINVAL);
	struct store_op badop[] = {{STORE_OP_PUT, "/t/q", "1", STORE_ANY}, {9, "/t/z", "", -1}};
	assert_int_equal(store_txn(s, badop, 2, &rev, &fi), FP_EINVAL);
	assert_int_equal(fi, 1);

	if (((struct fx *)*state)->etcd) /* etcd's 127-op limit: test_etcd_limits */
		return;
	struct store_op *big = calloc(STORE_MAX_TXN_OPS + 1, sizeof(*big));
	char(*keys)[16] = calloc(STORE_MAX_TXN_OPS + 1, sizeof(*keys));
	for (size_t i = 0; i <= STORE_MAX_TXN_OPS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/big/%04zu", i);
		big[i] = (struct store_op){STORE_OP_PUT, keys[i], "v", STORE_ANY};
	}
	assert_int_equal(store_max_txn_ops(s), STORE_MAX_TXN_OPS); /* SQLite and mem report it */
	assert_int_equal(store_txn(s, big, STORE_MAX_TXN_OPS + 1, &rev, &fi), FP_ETOOBIG);
	assert_int_equal(store_revision(s), 3);
	assert_int_equal(store_txn(s, big, STORE_MAX_TXN_OPS, &rev, &fi), 0);
	assert_int_equal(rev, 4);
	size_t n = 0;
	assert_int_equal(store_count(s, "/big/", &n), 0);
	assert_int_equal(n, STORE_MAX_TXN_OPS);
	expect_kv(s, "/big/1023", "v", 4, 4);
	free(big);
	free(keys);
}

/* ---- list and count ---- */

static void expect_keys(const struct store_kv *items, size_t n, const char *const *want,
			size_t nwant)
{
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(items[i].key, want[i]);
}

/* store_scan's callback: records keys and values, stops (STORE_SCAN_STOP) before key
 * number stop_at (0 = never), fails with FP_EPERM at fail_at, and reads each key back with a
 * nested store_get, which must not wait on the connection the scan holds. */
struct scan_rec {
	struct store *s;
	char keys[16][16];
	size_t n, stop_at, fail_at;
	int64_t mod[16];
};

static int scan_rec_fn(void *arg, const struct store_kv *kv)
{
	struct scan_rec *sr = arg;
	if (sr->stop_at && sr->n + 1 == sr->stop_at)
		return STORE_SCAN_STOP;
	if (sr->fail_at && sr->n + 1 == sr->fail_at)
		return FP_EPERM;
	assert_true(sr->n < 16);
	assert_string_equal(kv->value, kv->key); /* test_scan puts each key's name as its value */
	struct store_kv again = {0};
	assert_int_equal(store_get(sr->s, kv->key, &again), 0);
	assert_int_equal(again.mod_revision, kv->mod_revision);
	store_kv_release(&again);
	snprintf(sr->keys[sr->n], sizeof(sr->keys[0]), "%s", kv->key);
	sr->mod[sr->n++] = kv->mod_revision;
	return 0;
}

static void test_scan(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	static const char *const puts_order[] = {"/l/b", "/l/a", "/l/c", "/m/x", "/l/aa"};
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(put_ok(s, puts_order[i], puts_order[i]), (int64_t)i + 1);
	/* the same results in place and over a copied page */
	typedef int (*scan_call)(struct store *, const char *, const char *, size_t, store_scan_fn,
				 void *, int64_t *, int *);
	static const scan_call calls[] = {store_scan, store_scan_copied};
	for (size_t c = 0; c < 2; c++) {
		const scan_call scan = calls[c];
		struct scan_rec sr = {.s = s};
		int64_t rev = 0;
		int more = -1;
		assert_int_equal(scan(s, "/l/", NULL, 0, scan_rec_fn, &sr, &rev, &more), 0);
		assert_int_equal(sr.n, 4);
		assert_string_equal(sr.keys[0], "/l/a");
		assert_string_equal(sr.keys[1], "/l/aa");
		assert_string_equal(sr.keys[2], "/l/b");
		assert_string_equal(sr.keys[3], "/l/c");
		assert_int_equal(sr.mod[1], 5);
		assert_int_equal(rev, 5);
		assert_int_equal(more, 0);

		/* a limit, and start_after */
		sr = (struct scan_rec){.s = s};
		assert_int_equal(scan(s, "/l/", "/l/a", 2, scan_rec_fn, &sr, &rev, &more), 0);
		assert_int_equal(sr.n, 2);
		assert_string_equal(sr.keys[0], "/l/aa");
		assert_string_equal(sr.keys[1], "/l/b");
		assert_int_equal(more, 1);

		/* the callback stops before the third key: two given, more keys remain */
		sr = (struct scan_rec){.s = s, .stop_at = 3};
		assert_int_equal(scan(s, "/l/", NULL, 0, scan_rec_fn, &sr, &rev, &more), 0);
		assert_int_equal(sr.n, 2);
		assert_int_equal(more, 1);

		/* the callback's error ends the scan and is what store_scan returns */
		sr = (struct scan_rec){.s = s, .fail_at = 2};
		assert_int_equal(scan(s, "/l/", NULL, 0, scan_rec_fn, &sr, &rev, &more), FP_EPERM);
		assert_int_equal(sr.n, 1);
		assert_int_equal(more, 0);

		/* nothing under the prefix; bad arguments */
		sr = (struct scan_rec){.s = s};
		assert_int_equal(scan(s, "/zz", NULL, 0, scan_rec_fn, &sr, &rev, &more), 0);
		assert_int_equal(sr.n, 0);
		assert_int_equal(rev, 5);
		assert_int_equal(scan(s, "/a\tb", NULL, 0, scan_rec_fn, &sr, NULL, NULL),
				 FP_EINVAL);
		assert_int_equal(scan(s, "/l/", NULL, 0, NULL, &sr, NULL, NULL), FP_EINVAL);
	}
}

static void test_list(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	static const char *const puts_order[] = {"/l/b", "/l/a", "/l/c", "/l/aa", "/m/x",
						 "/l",   "/k",   "/l/B", "/l/~",  "/l0"};
	for (size_t i = 0; i < 10; i++)
		assert_int_equal(put_ok(s, puts_order[i], puts_order[i]), (int64_t)i + 1);

	struct store_kv *it = NULL;
	size_t n = 0;
	int64_t rev = 0;
	int more = -1;
	static const char *const all_l[] = {"/l/B", "/l/a", "/l/aa", "/l/b", "/l/c", "/l/~"};
	assert_int_equal(store_list(s, "/l/", NULL, 0, &it, &n, &rev, &more), 0);
	expect_keys(it, n, all_l, 6);
	assert_int_equal(rev, 10);
	assert_int_equal(more, 0);
	assert_string_equal(it[1].value, "/l/a");
	assert_int_equal(it[1].create_revision, 2);
	assert_int_equal(it[1].mod_revision, 2);
	store_kv_array_free(it, n);

	assert_int_equal(store_list(s, "/l/", "", 2, &it, &n, &rev, &more), 0);
	expect_keys(it, n, all_l, 2);
	assert_int_equal(more, 1);
	store_kv_array_free(it, n);

	assert_int_equal(store_list(s, "/l/", "/l/a", 3, &it, &n, &rev, &more), 0);
	expect_keys(it, n, all_l + 2, 3);
	assert_int_equal(more, 1);
	store_kv_array_free(it, n);

	/* exactly the remaining keys: more stays 0 */
	assert_int_equal(store_list(s, "/l/", "/l/aa", 3, &it, &n, &rev, &more), 0);
	expect_keys(it, n, all_l + 3, 3);
	assert_int_equal(more, 0);
	store_kv_array_free(it, n);

	/* start_after need not be a key, and may sort before the prefix */
	assert_int_equal(store_list(s, "/l/", "/l/ab", 0, &it, &n, &rev, &more), 0);
	expect_keys(it, n, all_l + 3, 3);
	store_kv_array_free(it, n);
	assert_int_equal(store_list(s, "/l/", "/a", 0, &it, &n, &rev, &more), 0);
	expect_keys(it, n, all_l, 6);
	store_kv_array_free(it, n);
	assert_int_equal(store_list(s, "/l/", "/l/~", 0, &it, &n, &rev, &more), 0);
	assert_int_equal(n, 0);
	assert_null(it);
	assert_int_equal(more, 0);

	static const char *const every[] = {"/k",   "/l",   "/l/B", "/l/a", "/l/aa",
					    "/l/b", "/l/c", "/l/~", "/l0",  "/m/x"};
	assert_int_equal(store_list(s, "", NULL, 0, &it, &n, NULL, NULL), 0);
	expect_keys(it, n, every, 10);
	store_kv_array_free(it, n);
	static const char *const l_all[] = {"/l",   "/l/B", "/l/a", "/l/aa",
					    "/l/b", "/l/c", "/l/~", "/l0"};
	assert_int_equal(store_list(s, "/l", NULL, 0, &it, &n, NULL, NULL), 0);
	expect_keys(it, n, l_all, 8);
	store_kv_array_free(it, n);
	assert_int_equal(store_list(s, "/zz", NULL, 0, &it, &n, &rev, &more), 0);
	assert_int_equal(n, 0);

	size_t c = 99;
	assert_int_equal(store_count(s, "/l/", &c), 0);
	assert_int_equal(c, 6);
	assert_int_equal(store_count(s, "", &c), 0);
	assert_int_equal(c, 10);
	assert_int_equal(store_count(s, NULL, &c), 0);
	assert_int_equal(c, 10);
	assert_int_equal(store_count(s, "/l", &c), 0);
	assert_int_equal(c, 8);
	assert_int_equal(store_count(s, "/m/x", &c), 0);
	assert_int_equal(c, 1);
	assert_int_equal(store_count(s, "/zz", &c), 0);
	assert_int_equal(c, 0);
}

/* ---- change feed and compaction ---- */

static void expect_event(const struct store_event *e, int64_t rev, enum store_op_type type,
			 const char *key, const char *value, int64_t create_rev)
{
	assert_int_equal(e->revision, rev);
	assert_int_equal(e->type, type);
	assert_string_equal(e->key, key);
	if (value)
		assert_string_equal(e->value, value);
	else
		assert_null(e->value);
	assert_int_equal(e->create_revision, create_rev);
}

/* A transaction bigger than the page asked for is returned whole: a reader that resumes after
 * the last revision it saw must never skip the rest of a revision. */
static void test_changes_whole_revision(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	/* 600, or the backend's transaction limit when smaller (etcd: 127) */
	const int N = store_max_txn_ops(s) < 600 ? (int)store_max_txn_ops(s) : 600;
	struct store_op ops[600];
	char keys[600][32];
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/big/k%03d", i);
		ops[i] = (struct store_op){STORE_OP_PUT, keys[i], "{}", STORE_ABSENT};
	}
	assert_int_equal(store_put(s, "/before", "{}", STORE_ANY, NULL), 0); /* rev 1 */
	int64_t rev = 0;
	assert_int_equal(store_txn(s, ops, (size_t)N, &rev, NULL), 0); /* rev 2 */
	assert_int_equal(rev, 2);
	assert_int_equal(store_put(s, "/after", "{}", STORE_ANY, NULL), 0); /* rev 3 */
	struct store_event *evs = NULL;
	size_t n = 0;
	/* 100 asked: rev 1 (1 event) and all N of rev 2, not rev 3 */
	assert_int_equal(store_changes(s, "", 0, 100, &evs, &n), 0);
	assert_int_equal(n, N + 1);
	assert_int_equal(evs[0].revision, 1);
	assert_int_equal(evs[1].revision, 2);
	assert_int_equal(evs[N].revision, 2);
	assert_string_equal(evs[N].key, keys[N - 1]);
	store_event_array_free(evs, n);
	/* exactly at a revision boundary nothing extra is added */
	assert_int_equal(store_changes(s, "", 0, (size_t)N + 1, &evs, &n), 0);
	assert_int_equal(n, N + 1);
	store_event_array_free(evs, n);
	assert_int_equal(store_changes(s, "", 2, 100, &evs, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(evs[0].key, "/after");
	store_event_array_free(evs, n);
}

struct walk {
	char seen[8][16];
	int n;
	int stop_at, stop_rc; /* return stop_rc (42 when 0) for the stop_at-th key */
};

static int walk_fn(void *arg, const struct store_kv *kv)
{
	struct walk *w = arg;
	snprintf(w->seen[w->n], sizeof(w->seen[0]), "%s", kv->key);
	w->n++;
	return w->n == w->stop_at ? (w->stop_rc ? w->stop_rc : 42) : 0;
}

/* store_foreach and store_foreach_scan visit every key of the prefix once, in order, across
 * pages (the last one full), and stop when the callback says so, with its result: positive
 * (even STORE_SCAN_STOP's 1) or an error. */
static void test_foreach(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	const char *keys[] = {"/f/e", "/f/a", "/f/c", "/g/x", "/f/b", "/f/d", "/f/f"};
	for (int i = 0; i < 7; i++)
		assert_int_equal(store_put(s, keys[i], "{}", STORE_ANY, NULL), 0);
	typedef int (*walk_call)(struct store *, const char *, size_t, store_foreach_fn, void *,
				 int64_t *);
	static const walk_call calls[] = {store_foreach, store_foreach_scan};
	for (size_t c = 0; c < 2; c++) {
		struct walk w = {.stop_at = -1};
		int64_t rev = 0;
		assert_int_equal(calls[c](s, "/f/", 2, walk_fn, &w, &rev), 0);
		assert_int_equal(w.n, 6);
		assert_string_equal(w.seen[0], "/f/a");
		assert_string_equal(w.seen[4], "/f/e");
		assert_string_equal(w.seen[5], "/f/f");
		assert_int_equal(rev, 7);
		struct walk w2 = {.stop_at = 3};
		assert_int_equal(calls[c](s, "/f/", 2, walk_fn, &w2, NULL), 42);
		assert_int_equal(w2.n, 3);
		assert_string_equal(w2.seen[2], "/f/c");
		struct walk w3 = {.stop_at = 4, .stop_rc = STORE_SCAN_STOP};
		assert_int_equal(calls[c](s, "/f/", 3, walk_fn, &w3, NULL), STORE_SCAN_STOP);
		assert_int_equal(w3.n, 4);
		struct walk w4 = {.stop_at = 5, .stop_rc = FP_EPERM};
		assert_int_equal(calls[c](s, "/f/", 0, walk_fn, &w4, NULL), FP_EPERM);
		assert_int_equal(w4.n, 5);
		struct walk w5 = {.stop_at = -1};
		assert_int_equal(calls[c](s, "/nothing/", 2, walk_fn, &w5, &rev), 0);
		assert_int_equal(w5.n, 0);
		assert_int_equal(rev, 7);
	}
}

static void test_changes(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	assert_int_equal(put_ok(s, "/w/a", "a1"), 1);
	assert_int_equal(put_ok(s, "/o/x", "x1"), 2);
	struct store_op ops[] = {
		{STORE_OP_PUT, "/w/b", "b1", STORE_ABSENT},
		{STORE_OP_DELETE, "/w/a", NULL, 1},
		{STORE_OP_PUT, "/o/x", "x2", 2},
	};
	int64_t rev = 0;
	assert_int_equal(store_txn(s, ops, 3, &rev, NULL), 0);
	assert_int_equal(rev, 3);

	struct store_event *ev = NULL;
	size_t n = 0;
	assert_int_equal(store_changes(s, "", 0, 0, &ev, &n), 0);
	assert_int_equal(n, 5);
	expect_event(&ev[0], 1, STORE_OP_PUT, "/w/a", "a1", 1);
	expect_event(&ev[1], 2, STORE_OP_PUT, "/o/x", "x1", 2);
	expect_event(&ev[2], 3, STORE_OP_PUT, "/w/b", "b1", 3);
	expect_event(&ev[3], 3, STORE_OP_DELETE, "/w/a", NULL, 0);
	expect_event(&ev[4], 3, STORE_OP_PUT, "/o/x", "x2", 2);
	store_event_array_free(ev, n);

	assert_int_equal(store_changes(s, "/w/", 1, 0, &ev, &n), 0);
	assert_int_equal(n, 2);
	expect_event(&ev[0], 3, STORE_OP_PUT, "/w/b", "b1", 3);
	expect_event(&ev[1], 3, STORE_OP_DELETE, "/w/a", NULL, 0);
	store_event_array_free(ev, n);

	assert_int_equal(store_changes(s, "/o/", 0, 1, &ev, &n), 0);
	assert_int_equal(n, 1);
	expect_event(&ev[0], 2, STORE_OP_PUT, "/o/x", "x1", 2);
	store_event_array_free(ev, n);

	assert_int_equal(store_changes(s, "", 3, 0, &ev, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_changes(s, "", 1000, 0, &ev, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_changes(s, "", -1, 0, &ev, &n), FP_EINVAL);
}

static void test_compact(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	char key[16];
	for (int i = 1; i <= 5; i++) {
		snprintf(key, sizeof(key), "/k/%d", i);
		assert_int_equal(put_ok(s, key, "v"), i);
	}
	assert_int_equal(store_compacted_revision(s), 0);
	assert_int_equal(store_compact(s, 6), FP_EINVAL);
	assert_int_equal(store_compact(s, -1), FP_EINVAL);
	assert_int_equal(store_compact(s, 3), 0);
	assert_int_equal(store_compacted_revision(s), 3);
	assert_int_equal(store_revision(s), 5);

	struct store_event *ev = NULL;
	size_t n = 0;
	assert_int_equal(store_changes(s, "", 2, 0, &ev, &n), FP_ECOMPACTED);
	assert_int_equal(n, 0);
	assert_int_equal(store_changes(s, "", 0, 0, &ev, &n), FP_ECOMPACTED);
	assert_int_equal(store_changes(s, "", 3, 0, &ev, &n), 0);
	assert_int_equal(n, 2);
	expect_event(&ev[0], 4, STORE_OP_PUT, "/k/4", "v", 4);
	expect_event(&ev[1], 5, STORE_OP_PUT, "/k/5", "v", 5);
	store_event_array_free(ev, n);

	/* going backwards is a no-op; data is untouched by compaction */
	assert_int_equal(store_compact(s, 2), 0);
	assert_int_equal(store_compacted_revision(s), 3);
	expect_kv(s, "/k/1", "v", 1, 1);
	assert_int_equal(store_compact(s, 5), 0);
	assert_int_equal(store_changes(s, "", 5, 0, &ev, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_changes(s, "", 4, 0, &ev, &n), FP_ECOMPACTED);
	assert_int_equal(put_ok(s, "/k/6", "v"), 6);
	assert_int_equal(store_changes(s, "", 5, 0, &ev, &n), 0);
	assert_int_equal(n, 1);
	expect_event(&ev[0], 6, STORE_OP_PUT, "/k/6", "v", 6);
	store_event_array_free(ev, n);
}

/* ---- store_wait ---- */

struct delayed_put {
	struct store *s;
	int delay_ms;
	int rc;
};

static void *delayed_put_main(void *arg)
{
	struct delayed_put *d = arg;
	sleep_ms(d->delay_ms);
	d->rc = store_put(d->s, "/wake", "up", STORE_ANY, NULL);
	return NULL;
}

static void test_wait(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	assert_int_equal(put_ok(s, "/a", "1"), 1);
	assert_int_equal(store_wait(s, 0, 0), 0); /* already newer */

	/* Only lower bounds: a timeout never returns early, and the put comes after its 50 ms
	 * sleep; how late either is depends on the machine's load (no upper bound asserted). */
	double t0 = now_s();
	assert_int_equal(store_wait(s, 1, 100), FP_ETIMEDOUT);
	double waited = now_s() - t0;
	assert_true(waited >= 0.095);

	struct delayed_put d = {s, 50, -100};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, delayed_put_main, &d), 0);
	t0 = now_s();
	int wrc = store_wait(s, 1, 60000);
	waited = now_s() - t0;
	pthread_join(th, NULL); /* before any assertion can leave the test */
	assert_int_equal(wrc, 0);
	assert_true(waited >= 0.040);
	assert_int_equal(store_revision(s), 2);
	assert_int_equal(d.rc, 0);
}

struct waiter {
	struct store *s;
	int rc;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	w->rc = store_wait(w->s, store_revision(w->s), -1);
	return NULL;
}

/* A waiter blocked without a timeout returns FP_ECLOSED when the store closes. */
static void test_wait_closed(void **state)
{
	struct fx *f = *state;
	store_close(f->s);
	f->s = NULL;
	struct store *s = NULL;
	assert_int_equal(store_open(f->uri, &s, NULL, 0), 0);
	struct waiter w = {s, -100};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
	sleep_ms(50);
	store_close(s);
	pthread_join(th, NULL);
	assert_int_equal(w.rc, FP_ECLOSED);
}

/* ---- validation, fault injection, metrics ---- */

static void test_validation(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	char key[STORE_MAX_KEY + 2];
	struct store_kv kv;

	assert_int_equal(store_put(s, NULL, "v", STORE_ANY, NULL), FP_EINVAL);
	assert_int_equal(store_put(s, "", "v", STORE_ANY, NULL), FP_EINVAL);
	assert_int_equal(store_put(s, "nodes/a", "v", STORE_ANY, NULL), FP_EINVAL);
	assert_int_equal(store_put(s, "/nodes\n", "v", STORE_ANY, NULL), FP_EINVAL);
	assert_int_equal(store_put(s, "/nod\x7f", "v", STORE_ANY, NULL), FP_EINVAL);
	assert_int_equal(store_put(s, "/n\xc3\xa9", "v", STORE_ANY, NULL), FP_EINVAL);
	memset(key, 'k', sizeof(key));
	key[0] = '/';
	key[STORE_MAX_KEY + 1] = '\0'; /* 256 bytes */
	assert_int_equal(store_put(s, key, "v", STORE_ANY, NULL), FP_EINVAL);
	assert_int_equal(store_get(s, key, &kv), FP_EINVAL);
	key[STORE_MAX_KEY] = '\0'; /* 255 bytes */
	assert_int_equal(put_ok(s, key, "v"), 1);
	expect_kv(s, key, "v", 1, 1);

	assert_int_equal(store_put(s, "/v", NULL, STORE_ANY, NULL), FP_EINVAL);
	assert_int_equal(store_put(s, "/v", "v", -2, NULL), FP_EINVAL);
	assert_int_equal(store_delete(s, "/v", STORE_ABSENT, NULL), FP_EINVAL);
	assert_int_equal(store_delete(s, "bad", STORE_ANY, NULL), FP_EINVAL);
	char *big = malloc(STORE_MAX_VALUE + 2);
	memset(big, 'x', STORE_MAX_VALUE + 1);
	big[STORE_MAX_VALUE + 1] = '\0';
	assert_int_equal(store_put(s, "/v", big, STORE_ANY, NULL), FP_ETOOBIG);
	assert_int_equal(store_revision(s), 1);
	big[STORE_MAX_VALUE] = '\0';
	assert_int_equal(put_ok(s, "/v", big), 2);
	assert_int_equal(store_get(s, "/v", &kv), 0);
	assert_int_equal(strlen(kv.value), STORE_MAX_VALUE);
	store_kv_release(&kv);
	free(big);

	struct store_kv *it;
	struct store_event *ev;
	size_t n;
	assert_int_equal(store_get(s, "x", &kv), FP_EINVAL);
	assert_int_equal(store_list(s, "/a\tb", NULL, 0, &it, &n, NULL, NULL), FP_EINVAL);
	assert_int_equal(store_list(s, "/a", "\x01", 0, &it, &n, NULL, NULL), FP_EINVAL);
	assert_int_equal(store_count(s, "/\n", &n), FP_EINVAL);
	assert_int_equal(store_changes(s, "\x1b", 0, 0, &ev, &n), FP_EINVAL);
	assert_int_equal(store_revision(s), 2);

	struct store *bad = (struct store *)1;
	char err[128] = "";
	assert_int_equal(store_open("nope:x", &bad, err, sizeof(err)), FP_EINVAL);
	assert_null(bad);
	assert_string_equal(err, "unknown store scheme in uri: nope:x");
	assert_int_equal(store_open("no-scheme", &bad, NULL, 0), FP_EINVAL);
	assert_int_equal(store_open("mem:extra", &bad, NULL, 0), FP_EINVAL);
	assert_int_equal(store_open("sqlite:", &bad, NULL, 0), FP_EINVAL);
	assert_int_equal(store_open("sqlite:/nonexistent-dir/x/y.db", &bad, err, sizeof(err)),
			 FP_EIO);
	assert_null(bad);
}

static struct metric_family *writes_family(void)
{
	return metrics_register(METRIC_COUNTER, "fleetplane_store_writes_total", "", "result", NULL,
				0);
}

static double writes(const char *result)
{
	return metric_value(writes_family(), (const char *const[]){result});
}

static void test_fault_injection(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	double ok0 = writes("ok"), err0 = writes("error"), conf0 = writes("conflict");
	double nospace0 = writes("nospace");
	store_fault_inject(s, 2, FP_EIO);
	assert_int_equal(put_ok(s, "/f/1", "v"), 1);
	assert_int_equal(store_write_failing(s, 60000), 0);
	assert_int_equal(store_put(s, "/f/2", "v", STORE_ANY, NULL), FP_EIO);
	expect_absent(s, "/f/2");
	assert_int_equal(store_revision(s), 1);
	/* write health: the failure is named until a write succeeds (or the window passes) */
	assert_int_equal(store_write_failing(s, 60000), FP_EIO);
	assert_int_equal(put_ok(s, "/f/3", "v"), 2); /* one-shot */
	assert_int_equal(store_write_failing(s, 60000), 0);
	store_fault_inject(s, 1, FP_ENOSPC);
	assert_int_equal(store_put(s, "/f/3b", "v", STORE_ANY, NULL), FP_ENOSPC);
	assert_int_equal(store_write_failing(s, 60000), FP_ENOSPC);
	assert_int_equal(store_write_failing(s, -1), 0); /* older than the window */
	assert_int_equal(store_put(s, "/f/3", "w", STORE_ABSENT, NULL), FP_EEXIST);
	assert_int_equal(store_write_failing(s, 60000), FP_ENOSPC); /* an expectation: no news */
	assert_int_equal(put_ok(s, "/f/3c", "v"), 3);
	assert_int_equal(store_write_failing(s, 60000), 0);

	store_fault_inject(s, 1, FP_EBUSY);
	store_fault_inject(s, 0, 0); /* disabled again */
	assert_int_equal(put_ok(s, "/f/4", "v"), 4);

	store_fault_inject(s, 1, FP_ECONFLICT);
	struct store_op ops[] = {{STORE_OP_PUT, "/f/5", "v", STORE_ANY}};
	assert_int_equal(store_txn(s, ops, 1, NULL, NULL), FP_ECONFLICT);
	expect_absent(s, "/f/5");
	/* invalid calls are refused before the fault counter */
	store_fault_inject(s, 1, FP_EIO);
	assert_int_equal(store_put(s, "bad", "v", STORE_ANY, NULL), FP_EINVAL);
	assert_int_equal(store_delete(s, "/f/1", STORE_ANY, NULL), FP_EIO);
	expect_kv(s, "/f/1", "v", 1, 1);

	assert_true(writes("ok") == ok0 + 4);
	assert_true(writes("error") == err0 + 2);
	assert_true(writes("nospace") == nospace0 + 1);
	assert_true(writes("conflict") == conf0 + 1);
}

/* ---- persistence (sqlite) ---- */

static void test_reopen(void **state)
{
	struct fx *f = *state;
	struct store *s = f->s;
	assert_int_equal(put_ok(s, "/p/a", "a"), 1);
	assert_int_equal(put_ok(s, "/p/b", "b"), 2);
	struct store_op ops[] = {
		{STORE_OP_PUT, "/p/a", "a2", 1},
		{STORE_OP_DELETE, "/p/b", NULL, STORE_ANY},
		{STORE_OP_PUT, "/p/c", "c", STORE_ABSENT},
	};
	assert_int_equal(store_txn(s, ops, 3, NULL, NULL), 0);
	assert_int_equal(store_compact(s, 1), 0);
	store_close(s);
	f->s = NULL;
	open_store(f);
	s = f->s;
	assert_int_equal(store_revision(s), 3);
	assert_int_equal(store_compacted_revision(s), 1);
	expect_kv(s, "/p/a", "a2", 1, 3);
	expect_absent(s, "/p/b");
	expect_kv(s, "/p/c", "c", 3, 3);
	struct store_event *ev;
	size_t n;
	assert_int_equal(store_changes(s, "", 0, 0, &ev, &n), FP_ECOMPACTED);
	assert_int_equal(store_changes(s, "", 1, 0, &ev, &n), 0);
	assert_int_equal(n, 4);
	expect_event(&ev[0], 2, STORE_OP_PUT, "/p/b", "b", 2);
	expect_event(&ev[3], 3, STORE_OP_PUT, "/p/c", "c", 3);
	store_event_array_free(ev, n);
	assert_int_equal(put_ok(s, "/p/d", "d"), 4);
}

/* etcd: a reopened store keeps keys and revisions; its change feed starts at the revision it
 * was opened at (older readers are told FP_ECOMPACTED and re-list; store_etcd.c). */
static void test_etcd_reopen(void **state)
{
	struct fx *f = *state;
	struct store *s = f->s;
	assert_int_equal(put_ok(s, "/p/a", "a"), 1);
	assert_int_equal(put_ok(s, "/p/b", "b"), 2);
	struct store_op ops[] = {
		{STORE_OP_PUT, "/p/a", "a2", 1},
		{STORE_OP_DELETE, "/p/b", NULL, STORE_ANY},
		{STORE_OP_PUT, "/p/c", "c", STORE_ABSENT},
	};
	assert_int_equal(store_txn(s, ops, 3, NULL, NULL), 0);
	store_close(s);
	f->s = NULL;
	open_store(f);
	s = f->s;
	assert_int_equal(store_revision(s), 3);
	assert_int_equal(store_compacted_revision(s), 3);
	expect_kv(s, "/p/a", "a2", 1, 3);
	expect_absent(s, "/p/b");
	expect_kv(s, "/p/c", "c", 3, 3);
	struct store_event *ev;
	size_t n;
	assert_int_equal(store_changes(s, "", 2, 0, &ev, &n), FP_ECOMPACTED);
	assert_int_equal(store_changes(s, "", 3, 0, &ev, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(put_ok(s, "/p/d", "d"), 4);
	assert_int_equal(store_changes(s, "", 3, 0, &ev, &n), 0);
	assert_int_equal(n, 1);
	expect_event(&ev[0], 4, STORE_OP_PUT, "/p/d", "d", 4);
	store_event_array_free(ev, n);
}

/* etcd's limits: --max-txn-ops (128 by default; one compare is the leader fence, so 127 ops)
 * and --max-request-bytes (1.5 MiB): a transaction past either is refused whole, FP_ETOOBIG,
 * and nothing of it is written. */
static void test_etcd_limits(void **state)
{
	struct fx *f = *state;
	struct store *s = f->s;
	assert_int_equal(store_max_txn_ops(s), 127);
	static char keys[140][16];
	struct store_op ops[140];
	for (int i = 0; i < 140; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/l/%03d", i);
		ops[i] = (struct store_op){STORE_OP_PUT, keys[i], "v", STORE_ABSENT};
	}
	assert_int_equal(store_txn(s, ops, 128, NULL, NULL), FP_ETOOBIG);
	int64_t rev = 0;
	assert_int_equal(store_txn(s, ops, 127, &rev, NULL), 0);
	assert_int_equal(rev, 1);
	size_t n = 0;
	assert_int_equal(store_count(s, "/l/", &n), 0);
	assert_int_equal(n, 127);
	/* two values of 1 MiB: each fits, together they pass the request limit */
	char *big = malloc(STORE_MAX_VALUE + 1);
	memset(big, 'x', STORE_MAX_VALUE);
	big[STORE_MAX_VALUE] = 0;
	struct store_op two[] = {{STORE_OP_PUT, "/big/1", big, STORE_ANY},
				 {STORE_OP_PUT, "/big/2", big, STORE_ANY}};
	assert_int_equal(store_txn(s, two, 2, NULL, NULL), FP_ETOOBIG);
	assert_int_equal(store_count(s, "/big/", &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_put(s, "/big/1", big, STORE_ANY, &rev), 0);
	assert_int_equal(rev, 2);
	struct store_kv kv;
	assert_int_equal(store_get(s, "/big/1", &kv), 0);
	assert_int_equal(strlen(kv.value), STORE_MAX_VALUE);
	store_kv_release(&kv);
	free(big);
	store_close(s);
	f->s = NULL;

	/* a client told the server allows more than it does: etcd refuses, nothing is written */
	char uri[160];
	snprintf(uri, sizeof(uri), "%s/other?max_txn_ops=200", f->uri);
	assert_int_equal(store_open(uri, &s, NULL, 0), 0);
	assert_int_equal(store_max_txn_ops(s), 199);
	assert_int_equal(store_txn(s, ops, 140, NULL, NULL), FP_ETOOBIG);
	assert_int_equal(store_count(s, "", &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_revision(s), 2); /* etcd's revision: the other namespace's writes */
	f->s = s;
	char err[128];
	struct store *bad = NULL;
	assert_int_equal(store_open("etcd://", &bad, err, sizeof(err)), FP_EINVAL);
	assert_int_equal(store_open("etcd:x", &bad, err, sizeof(err)), FP_EINVAL);
	assert_int_equal(store_open("etcd://h:1?max_txn_ops=1", &bad, err, sizeof(err)), FP_EINVAL);
	assert_int_equal(store_open("etcd://h:1?bogus=1", &bad, err, sizeof(err)), FP_EINVAL);
	assert_int_equal(store_open("etcd://a b:1", &bad, err, sizeof(err)), FP_EINVAL);
	assert_null(bad);
}

/* Leader election and the fence (leader.h): the first campaigner leads and its writes carry the
 * fence; a second one stands by and names it; once the first is deposed (its key deleted, as
 * when its lease expires) the second is elected, and the first's next write fails with
 * FP_EAGAIN, calls its lost hook once, and writes nothing. */
static int lost_calls;
static void on_lost(void *arg, const char *why)
{
	lost_calls++;
}

static void test_etcd_leader_fence(void **state)
{
	struct fx *f = *state;
	struct store *s2 = NULL;
	assert_int_equal(store_open(f->uri, &s2, NULL, 0), 0);
	struct leader *a = NULL, *b = NULL;
	struct leader_config ca = {.id = "http://a:1", .ttl_s = 2, .lost = on_lost};
	struct leader_config cb = {.id = "http://b:1", .ttl_s = 2, .lost = on_lost};
	char err[256];
	lost_calls = 0;
	assert_int_equal(leader_new(f->s, &ca, &a, err, sizeof(err)), 0);
	assert_int_equal(leader_wait(a, 5000), 0);
	assert_int_equal(leader_fence(a, f->s), 0);
	assert_int_equal(store_put(f->s, "/x", "1", STORE_ANY, NULL), 0);
	assert_int_equal(leader_new(s2, &cb, &b, err, sizeof(err)), 0);
	assert_int_equal(leader_wait(b, 600), FP_ETIMEDOUT);
	char holder[64];
	leader_holder(b, holder, sizeof(holder));
	assert_string_equal(holder, "http://a:1");
	assert_int_equal(leader_is_leader(a), 1);
	assert_int_equal(leader_is_leader(b), 0);
	/* a standby's store is not fenced by b: b's fence needs b to lead */
	assert_int_equal(leader_fence(b, s2), FP_EAGAIN);

	/* depose a behind its back */
	const char *lk = "/fleetplane:leader";
	char *k64 = store_etcd_b64(lk, strlen(lk));
	json_t *body = json_pack("{s:s}", "key", k64), *resp = NULL;
	free(k64);
	assert_int_equal(store_etcd_call(store_etcd_of(s2), "/v3/kv/deleterange", body, 0, &resp,
					 err, sizeof(err)),
			 0);
	json_decref(body);
	json_decref(resp);
	assert_int_equal(leader_wait(b, 3000), 0);
	assert_int_equal(leader_fence(b, s2), 0);
	assert_int_equal(store_put(f->s, "/late", "1", STORE_ANY, NULL), FP_EAGAIN);
	assert_int_equal(lost_calls, 1);
	assert_int_equal(leader_is_leader(a), 0);
	assert_int_equal(store_put(f->s, "/late2", "1", STORE_ANY, NULL), FP_EAGAIN);
	assert_int_equal(lost_calls, 1);
	struct store_kv kv;
	assert_int_equal(store_get(s2, "/late", &kv), FP_ENOTFOUND);
	assert_int_equal(store_put(s2, "/b", "1", STORE_ANY, NULL), 0);
	leader_free(b);
	leader_free(a);
	store_close(s2);
	/* a store that is not etcd has no election */
	struct store *m = NULL;
	struct leader *l = NULL;
	assert_int_equal(store_open("mem:", &m, NULL, 0), 0);
	assert_int_equal(leader_new(m, &ca, &l, err, sizeof(err)), FP_EUNSUPPORTED);
	store_close(m);
}

/* A write whose outcome is unknown (store_etcd.c "Unknown outcomes"): the store talks to etcd
 * through a proxy (the first endpoint; the real member is the second) that forwards each
 * request, except that the next Txn is, per mode, applied and then its connection closed with no
 * answer (1), dropped unsent to etcd after the store sent it (2), or applied and answered 500
 * "etcdserver: leader changed" (3). Each write must answer success, and land exactly once. */
struct flaky {
	int lfd;
	int etcd_port;
	_Atomic int mode; /* for the next /v3/kv/txn; back to 0 once used */
	_Atomic int stop;
	int held[8]; /* watch connections, held open and silent */
	size_t nheld;
	pthread_t th;
};

static size_t flaky_sink(char *p, size_t size, size_t n, void *arg)
{
	json_t **out = arg;
	size_t len = size * n;
	if (!*out)
		*out = json_string("");
	char *cur = NULL;
	if (asprintf(&cur, "%s%.*s", json_string_value(*out), (int)len, p) < 0)
		return 0;
	json_string_set(*out, cur);
	free(cur);
	return len;
}

static void *flaky_main(void *arg)
{
	struct flaky *x = arg;
	while (!x->stop) {
		struct pollfd pf = {.fd = x->lfd, .events = POLLIN};
		if (poll(&pf, 1, 100) <= 0)
			continue;
		int c = accept(x->lfd, NULL, NULL);
		if (c < 0)
			continue;
		char req[65536];
		size_t n = 0;
		char *hend = NULL;
		while (n < sizeof(req) - 1 && !hend) {
			ssize_t r = read(c, req + n, sizeof(req) - 1 - n);
			if (r <= 0)
				break;
			n += (size_t)r;
			req[n] = 0;
			hend = strstr(req, "\r\n\r\n");
		}
		if (!hend) {
			close(c);
			continue;
		}
		char path[128] = "";
		sscanf(req, "POST %127s", path);
		if (strcmp(path, "/v3/watch") == 0) {
			if (x->nheld < 8)
				x->held[x->nheld++] = c;
			else
				close(c);
			continue;
		}
		const char *cl = strcasestr(req, "Content-Length:");
		size_t want = cl ? strtoul(cl + 15, NULL, 10) : 0;
		size_t body_at = (size_t)(hend + 4 - req);
		while (n < body_at + want && n < sizeof(req) - 1) {
			ssize_t r = read(c, req + n, sizeof(req) - 1 - n);
			if (r <= 0)
				break;
			n += (size_t)r;
		}
		req[n] = 0;
		int mode = strcmp(path, "/v3/kv/txn") == 0 ? atomic_exchange(&x->mode, 0) : 0;
		if (mode == 2) {
			close(c);
			continue;
		}
		char url[192];
		snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", x->etcd_port, path);
		CURL *h = curl_easy_init();
		json_t *out = NULL;
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req + body_at);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, flaky_sink);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
		long code = 502;
		if (curl_easy_perform(h) == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_cleanup(h);
		const char *b = out ? json_string_value(out) : "";
		if (mode == 3) {
			code = 500;
			b = "{\"error\":\"etcdserver: leader changed\",\"code\":14,"
			    "\"message\":\"etcdserver: leader changed\"}";
		}
		if (mode != 1) {
			char hdr[160];
			int hl = snprintf(hdr, sizeof(hdr),
					  "HTTP/1.1 %ld X\r\nContent-Type: application/json\r\n"
					  "Content-Length: %zu\r\nConnection: close\r\n\r\n",
					  code, strlen(b));
			if (write(c, hdr, (size_t)hl) < 0 || write(c, b, strlen(b)) < 0)
				code = 0;
		}
		json_decref(out);
		close(c);
	}
	for (size_t i = 0; i < x->nheld; i++)
		close(x->held[i]);
	return NULL;
}

static void test_etcd_unknown_outcome(void **state)
{
	struct fx *f = *state;
	struct flaky x = {.lfd = socket(AF_INET, SOCK_STREAM, 0)};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	assert_int_equal(bind(x.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(x.lfd, (struct sockaddr *)&a, &l), 0);
	assert_int_equal(listen(x.lfd, 16), 0);
	assert_int_equal(sscanf(f->uri, "etcd://127.0.0.1:%d", &x.etcd_port), 1);
	assert_int_equal(pthread_create(&x.th, NULL, flaky_main, &x), 0);
	char uri[160];
	snprintf(uri, sizeof(uri), "etcd://127.0.0.1:%d,127.0.0.1:%d", ntohs(a.sin_port),
		 x.etcd_port);
	struct store *s = NULL;
	char err[256] = "";
	assert_int_equal(store_open(uri, &s, err, sizeof(err)), 0);
	int64_t r0 = put_ok(f->s, "/base", "0"); /* etcd's revision: r0 */

	/* 1: applied, then no answer: resolved as applied (not FP_EEXIST on a retry) */
	int64_t rev = -1;
	atomic_store(&x.mode, 1);
	assert_int_equal(store_put(s, "/a", "1", STORE_ABSENT, &rev), 0);
	assert_int_equal(rev, r0 + 1);
	expect_kv(f->s, "/a", "1", r0 + 1, r0 + 1);

	/* 2: never reached etcd: retried, applied once */
	atomic_store(&x.mode, 2);
	rev = -1;
	assert_int_equal(store_put(s, "/a", "2", r0 + 1, &rev), 0);
	assert_int_equal(rev, r0 + 2);
	expect_kv(f->s, "/a", "2", r0 + 1, r0 + 2);

	/* a delete: applied, no answer */
	atomic_store(&x.mode, 1);
	rev = -1;
	assert_int_equal(store_delete(s, "/a", STORE_ANY, &rev), 0);
	assert_int_equal(rev, r0 + 3);
	expect_absent(f->s, "/a");

	/* unknown, not applied, and its expectation fails now: the store's own answer */
	atomic_store(&x.mode, 2);
	assert_int_equal(store_put(s, "/base", "x", STORE_ABSENT, NULL), FP_EEXIST);
	assert_int_equal(atomic_load(&x.mode), 0);

	/* 3: applied, answered "leader changed": success (last: the store then prefers the other
	 * member) */
	atomic_store(&x.mode, 3);
	rev = -1;
	assert_int_equal(store_put(s, "/b", "3", STORE_ANY, &rev), 0);
	assert_int_equal(rev, r0 + 4);
	expect_kv(f->s, "/b", "3", r0 + 4, r0 + 4);
	/* nothing landed twice: the next write is the very next revision */
	assert_int_equal(put_ok(f->s, "/base", "1"), r0 + 5);
	assert_int_equal(atomic_load(&x.mode), 0);
	store_close(s);
	x.stop = 1;
	pthread_join(x.th, NULL);
	close(x.lfd);
}

/* ---- concurrency ---- */

#define CONC_THREADS 8
#define CONC_PUTS 250
#define CAS_INCS 40

struct conc {
	struct store *s;
	int id;
	int rc;
	int64_t revs[CONC_PUTS];
	int cas_retries;
};

static void *conc_main(void *arg)
{
	struct conc *c = arg;
	char key[32];
	for (int i = 0; i < CONC_PUTS; i++) {
		snprintf(key, sizeof(key), "/conc/%d/%03d", c->id, i);
		int rc = store_put(c->s, key, key, STORE_ABSENT, &c->revs[i]);
		if (rc < 0) {
			c->rc = rc;
			return NULL;
		}
	}
	/* read-modify-write a shared counter with CAS */
	for (int i = 0; i < CAS_INCS;) {
		struct store_kv kv;
		int rc = store_get(c->s, "/counter", &kv);
		if (rc < 0) {
			c->rc = rc;
			return NULL;
		}
		char v[32];
		snprintf(v, sizeof(v), "%ld", strtol(kv.value, NULL, 10) + 1);
		rc = store_put(c->s, "/counter", v, kv.mod_revision, NULL);
		store_kv_release(&kv);
		if (rc == FP_ECONFLICT) {
			c->cas_retries++;
			continue;
		}
		if (rc < 0) {
			c->rc = rc;
			return NULL;
		}
		i++;
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void test_concurrent_writers(void **state)
{
	struct store *s = ((struct fx *)*state)->s;
	assert_int_equal(put_ok(s, "/counter", "0"), 1);
	struct conc *c = calloc(CONC_THREADS, sizeof(*c));
	pthread_t th[CONC_THREADS];
	for (int i = 0; i < CONC_THREADS; i++) {
		c[i].s = s;
		c[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, conc_main, &c[i]), 0);
	}
	for (int i = 0; i < CONC_THREADS; i++)
		pthread_join(th[i], NULL);

	int64_t *all = calloc(CONC_THREADS * CONC_PUTS, sizeof(*all));
	size_t k = 0;
	for (int i = 0; i < CONC_THREADS; i++) {
		assert_int_equal(c[i].rc, 0);
		for (int j = 0; j < CONC_PUTS; j++) {
			if (j > 0)
				assert_true(c[i].revs[j] > c[i].revs[j - 1]);
			all[k++] = c[i].revs[j];
		}
	}
	qsort(all, k, sizeof(*all), cmp_i64);
	for (size_t i = 1; i < k; i++)
		assert_true(all[i] > all[i - 1]); /* unique */
	for (int i = 0; i < CONC_THREADS; i++)
		for (int j = 0; j < CONC_PUTS; j++) {
			char key[32];
			snprintf(key, sizeof(key), "/conc/%d/%03d", i, j);
			expect_kv(s, key, key, c[i].revs[j], c[i].revs[j]);
		}
	size_t n = 0;
	assert_int_equal(store_count(s, "/conc/", &n), 0);
	assert_int_equal(n, CONC_THREADS * CONC_PUTS);
	struct store_kv kv;
	assert_int_equal(store_get(s, "/counter", &kv), 0);
	assert_string_equal(kv.value, "320"); /* CONC_THREADS * CAS_INCS: no lost update */
	store_kv_release(&kv);
	/* one revision per successful write: 1 + 2000 puts + 320 increments, no gaps */
	assert_int_equal(store_revision(s), 1 + CONC_THREADS * CONC_PUTS + CONC_THREADS * CAS_INCS);
	struct store_event *ev = NULL;
	assert_int_equal(store_changes(s, "", 0, 5000, &ev, &n), 0);
	assert_int_equal(n, 1 + CONC_THREADS * CONC_PUTS + CONC_THREADS * CAS_INCS);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(ev[i].revision, (int64_t)i + 1);
	store_event_array_free(ev, n);
	free(all);
	free(c);
}

/* ---- crash safety (sqlite) ---- */

#define CRASH_ROUNDS 4
#define CRASH_THREADS 4 /* concurrent writers in the child, so kills land inside group commits */
#define CRASH_TXN_KEYS 3

static int crash_is_txn(int i)
{
	return i % 4 == 3;
}

static void crash_key(char *buf, size_t len, int round, int t, int i, int part)
{
	if (crash_is_txn(i))
		snprintf(buf, len, "/crash/%d/%d/t%06d/%d", round, t, i, part);
	else
		snprintf(buf, len, "/crash/%d/%d/k%06d", round, t, i);
}

struct crash_writer {
	struct store *s;
	int round, t, fd;
};

/* One child thread: writes forever, reporting each acknowledged index as (t << 24 | i) on fd
 * (one 4-byte write, atomic on a pipe). Exits the process on any error. */
static void *crash_writer_main(void *arg)
{
	struct crash_writer *w = arg;
	char keys[CRASH_TXN_KEYS][64], val[32];
	for (int i = 0;; i++) {
		int rc;
		snprintf(val, sizeof(val), "%d", i);
		if (crash_is_txn(i)) {
			struct store_op ops[CRASH_TXN_KEYS];
			for (int p = 0; p < CRASH_TXN_KEYS; p++) {
				crash_key(keys[p], sizeof(keys[p]), w->round, w->t, i, p);
				ops[p] = (struct store_op){STORE_OP_PUT, keys[p], val,
							   STORE_ABSENT};
			}
			rc = store_txn(w->s, ops, CRASH_TXN_KEYS, NULL, NULL);
		} else {
			crash_key(keys[0], sizeof(keys[0]), w->round, w->t, i, 0);
			rc = store_put(w->s, keys[0], val, STORE_ABSENT, NULL);
		}
		if (rc < 0)
			_exit(3);
		int msg = w->t << 24 | i;
		if (write(w->fd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			_exit(4);
	}
	return NULL;
}

/* The child: CRASH_THREADS writers until killed. Never returns. */
static void crash_child(const char *uri, int round, int fd)
{
	struct store *s = NULL;
	struct crash_writer w[CRASH_THREADS];
	pthread_t th;
	if (store_open(uri, &s, NULL, 0) < 0)
		_exit(2);
	for (int t = 0; t < CRASH_THREADS; t++) {
		w[t] = (struct crash_writer){s, round, t, fd};
		if (pthread_create(&th, NULL, crash_writer_main, &w[t]) != 0)
			_exit(5);
	}
	for (;;)
		pause();
}

/* Reads acknowledgements from fd until deadline (or EOF when deadline < 0) into last[t]. */
static void crash_drain(int fd, int *last, double deadline)
{
	for (;;) {
		if (deadline >= 0) {
			double left = deadline - now_s();
			if (left <= 0)
				return;
			struct pollfd p = {fd, POLLIN, 0};
			if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
				continue;
		}
		int v[256];
		ssize_t r = read(fd, v, sizeof(v));
		if (r <= 0)
			return; /* EOF after the child died */
		assert_int_equal(r % (ssize_t)sizeof(int), 0);
		for (ssize_t k = 0; k < r / (ssize_t)sizeof(int); k++) {
			int t = v[k] >> 24, i = v[k] & 0xffffff;
			assert_true(t >= 0 && t < CRASH_THREADS);
			assert_int_equal(i, last[t] + 1); /* each thread acknowledges in order */
			last[t] = i;
		}
	}
}

/* Number of keys index i of thread t wrote that exist: 0 or all of them, never part. */
static int crash_present(struct store *s, int round, int t, int i)
{
	int parts = crash_is_txn(i) ? CRASH_TXN_KEYS : 1, present = 0;
	int64_t rev0 = 0;
	char want[32];
	snprintf(want, sizeof(want), "%d", i);
	for (int p = 0; p < parts; p++) {
		char key[64];
		struct store_kv kv;
		crash_key(key, sizeof(key), round, t, i, p);
		int rc = store_get(s, key, &kv);
		if (rc == FP_ENOTFOUND)
			continue;
		assert_int_equal(rc, 0);
		assert_string_equal(kv.value, want);
		if (present == 0)
			rev0 = kv.mod_revision;
		assert_int_equal(kv.mod_revision, rev0); /* one txn, one revision */
		store_kv_release(&kv);
		present++;
	}
	if (present != 0 && present != parts)
		fail_msg("round %d thread %d index %d: torn txn, %d of %d keys", round, t, i,
			 present, parts);
	return present;
}

static int crash_min_acks(const int *last)
{
	int m = last[0];
	for (int t = 1; t < CRASH_THREADS; t++)
		if (last[t] < m)
			m = last[t];
	return m;
}

static void test_crash(void **state)
{
	struct fx *f = *state;
	store_close(f->s); /* fork with no store threads in the parent */
	f->s = NULL;
	srand((unsigned)getpid() ^ (unsigned)time(NULL));
	int64_t rev_before = 0;
	for (int round = 0; round < CRASH_ROUNDS; round++) {
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			crash_child(f->uri, round, fds[1]);
		}
		close(fds[1]);
		int last[CRASH_THREADS];
		for (int t = 0; t < CRASH_THREADS; t++)
			last[t] = -1;
		/* wait until every thread has an acknowledgement, then kill at a random moment */
		double give_up = now_s() + 10.0;
		while (crash_min_acks(last) < 0 && now_s() < give_up) {
			crash_drain(fds[0], last, now_s() + 0.01);
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid)
				fail_msg("crash child exited early: status %d", st);
		}
		crash_drain(fds[0], last, now_s() + (10 + rand() % 190) / 1000.0);
		assert_int_equal(kill(pid, SIGKILL), 0);
		int st = 0;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st));
		assert_int_equal(WTERMSIG(st), SIGKILL);
		crash_drain(fds[0], last, -1);
		close(fds[0]);
		assert_true(crash_min_acks(last) >= 0);

		open_store(f);
		struct store *s = f->s;
		size_t want = 0;
		int64_t writes = 0;
		for (int t = 0; t < CRASH_THREADS; t++) {
			for (int i = 0; i <= last[t]; i++) {
				int parts = crash_is_txn(i) ? CRASH_TXN_KEYS : 1;
				assert_int_equal(crash_present(s, round, t, i), parts);
				want += (size_t)parts;
			}
			writes += last[t] + 1;
			/* the one write per thread in flight at the kill: all or nothing */
			int inflight = crash_present(s, round, t, last[t] + 1);
			want += (size_t)inflight;
			writes += inflight ? 1 : 0;
			assert_int_equal(crash_present(s, round, t, last[t] + 2), 0);
		}
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "/crash/%d/", round);
		size_t n = 0;
		assert_int_equal(store_count(s, prefix, &n), 0);
		assert_int_equal(n, want);
		int64_t rev_after = store_revision(s);
		assert_int_equal(rev_after, rev_before + writes);
		rev_before = rev_after;
		store_close(s);
		f->s = NULL;
	}
}

/* The transaction limit is the backend's property: "mem:max_txn_ops=4" reports 4 and refuses
 * a fifth op; the option's bounds are checked. */
static void test_txn_limit_property(void **state)
{
	char err[256];
	struct store *s = NULL;
	assert_int_equal(store_open("mem:max_txn_ops=4", &s, err, sizeof(err)), 0);
	assert_int_equal(store_max_txn_ops(s), 4);
	struct store_op ops[5];
	char keys[5][16];
	for (size_t i = 0; i < 5; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/l/%zu", i);
		ops[i] = (struct store_op){STORE_OP_PUT, keys[i], "v", STORE_ANY};
	}
	int64_t rev = 0;
	assert_int_equal(store_txn(s, ops, 5, &rev, NULL), FP_ETOOBIG);
	assert_int_equal(store_revision(s), 0);
	assert_int_equal(store_txn(s, ops, 4, &rev, NULL), 0);
	assert_int_equal(rev, 1);
	store_close(s);
	s = NULL;
	assert_int_equal(store_open("mem:max_txn_ops=0", &s, err, sizeof(err)), FP_EINVAL);
	assert_int_equal(store_open("mem:max_txn_ops=40000", &s, err, sizeof(err)), FP_EINVAL);
	assert_int_equal(store_open("mem:max_txn_ops=", &s, err, sizeof(err)), FP_EINVAL);
	assert_null(s);
}

#define BOTH_BACKENDS(setup)                                                                   \
	cmocka_unit_test_setup_teardown(test_put_get, setup, teardown),                        \
		cmocka_unit_test_setup_teardown(test_create_if_absent, setup, teardown),       \
		cmocka_unit_test_setup_teardown(test_cas, setup, teardown),                    \
		cmocka_unit_test_setup_teardown(test_delete, setup, teardown),                 \
		cmocka_unit_test_setup_teardown(test_txn, setup, teardown),                    \
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),                   \
		cmocka_unit_test_setup_teardown(test_scan, setup, teardown),                   \
		cmocka_unit_test_setup_teardown(test_changes, setup, teardown),                \
		cmocka_unit_test_setup_teardown(test_foreach, setup, teardown),                \
		cmocka_unit_test_setup_teardown(test_changes_whole_revision, setup, teardown), \
		cmocka_unit_test_setup_teardown(test_compact, setup, teardown),                \
		cmocka_unit_test_setup_teardown(test_wait, setup, teardown),                   \
		cmocka_unit_test_setup_teardown(test_wait_closed, setup, teardown),            \
		cmocka_unit_test_setup_teardown(test_validation, setup, teardown),             \
		cmocka_unit_test_setup_teardown(test_fault_injection, setup, teardown),        \
		cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown)

int main(void)
{
	const struct CMUnitTest mem_tests[] = {BOTH_BACKENDS(setup_mem)};
	const struct CMUnitTest sqlite_tests[] = {
		BOTH_BACKENDS(setup_sqlite),
		cmocka_unit_test_setup_teardown(test_reopen, setup_sqlite, teardown),
		cmocka_unit_test_setup_teardown(test_crash, setup_sqlite, teardown),
		cmocka_unit_test(test_txn_limit_property),
	};
	const struct CMUnitTest etcd_tests[] = {
		BOTH_BACKENDS(setup_etcd),
		cmocka_unit_test_setup_teardown(test_etcd_reopen, setup_etcd, teardown),
		cmocka_unit_test_setup_teardown(test_etcd_limits, setup_etcd, teardown),
		cmocka_unit_test_setup_teardown(test_etcd_leader_fence, setup_etcd, teardown),
		cmocka_unit_test_setup_teardown(test_etcd_unknown_outcome, setup_etcd, teardown),
	};
	int failed = cmocka_run_group_tests_name("store_mem", mem_tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("store_sqlite", sqlite_tests, NULL, NULL);
	/* etcd: CI installs it (scripts/install-deps.sh --test); a user without it and without
	 * root sees the group skipped, root without it is a failure */
	if (system("command -v etcd >/dev/null 2>&1") != 0) {
		if (geteuid() == 0) {
			fprintf(stderr, "store_etcd: etcd is not installed (root: a failure)\n");
			return 1;
		}
		fprintf(stderr, "store_etcd: etcd is not installed: group skipped\n");
		etcd_skip = 1;
	}
	failed += cmocka_run_group_tests_name("store_etcd", etcd_tests, NULL, NULL);
	return failed ? 1 : 0;
}
