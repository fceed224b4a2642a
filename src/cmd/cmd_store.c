/* cmd_store.c - `fleetplane store migrate --from URI --to URI` (docs/etcd.md "Migrating"): copies
 * every key of one store into another, empty one (sqlite: to etcd:// and back, or any pair
 * store_open takes), then verifies. The source must be still: serve stopped (a SQLite source's
 * data dir lock is checked when it is there) and its revision is read before and after the copy;
 * a change aborts. Keys are copied in byte order in transactions of at most the destination's
 * limit (store_max_txn_ops, and about 1 MiB of values), each create-if-absent, so a rerun after
 * a failure refuses rather than overwrites. Verification walks both stores: the key counts and a
 * SHA-256 over every (key, value) in order must be equal. Revisions are the destination's own
 * (etcd numbers its writes): clients re-list, as after any compaction. */
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "cmd/cmds.h"
#include "store/store.h"
#include "base/banned.h"

#define MIGRATE_BATCH_BYTES (1u << 20)

struct copy {
	struct store *to;
	struct store_op *ops;
	char **keys, **vals;
	size_t n, max, bytes;
	size_t copied;
	int rc;
	char err[256];
};

static int flush(struct copy *c)
{
	if (!c->n)
		return 0;
	size_t failed = 0;
	int rc = store_txn(c->to, c->ops, c->n, NULL, &failed);
	if (rc < 0) {
		snprintf(c->err, sizeof(c->err), "writing %s: %s", c->ops[failed].key,
			 rc == FP_EEXIST ? "it exists in the destination" : fp_err_msg(rc));
		c->rc = rc;
	} else {
		c->copied += c->n;
	}
	for (size_t i = 0; i < c->n; i++) {
		free(c->keys[i]);
		free(c->vals[i]);
	}
	c->n = 0;
	c->bytes = 0;
	return rc;
}

static int copy_one(void *arg, const struct store_kv *kv)
{
	struct copy *c = arg;
	size_t len = strlen(kv->key) + strlen(kv->value);
	if (c->n == c->max || (c->n && c->bytes + len > MIGRATE_BATCH_BYTES))
		if (flush(c) < 0)
			return c->rc;
	c->keys[c->n] = xstrdup(kv->key);
	c->vals[c->n] = xstrdup(kv->value);
	c->ops[c->n] = (struct store_op){STORE_OP_PUT, c->keys[c->n], c->vals[c->n], STORE_ABSENT};
	c->n++;
	c->bytes += len;
	return 0;
}

struct sum {
	crypto_hash_sha256_state h;
	size_t n;
};

static int sum_one(void *arg, const struct store_kv *kv)
{
	struct sum *s = arg;
	/* NUL-separated: no key or value holds a NUL */
	crypto_hash_sha256_update(&s->h, (const unsigned char *)kv->key, strlen(kv->key) + 1);
	crypto_hash_sha256_update(&s->h, (const unsigned char *)kv->value, strlen(kv->value) + 1);
	s->n++;
	return 0;
}

/* Count and SHA-256 (hex) of every key and value of st, in key order. */
static int checksum(struct store *st, size_t *n, char hex[65])
{
	struct sum s = {.n = 0};
	crypto_hash_sha256_init(&s.h);
	int rc = store_foreach(st, "", 1000, sum_one, &s, NULL);
	if (rc < 0)
		return rc;
	unsigned char out[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(&s.h, out);
	sodium_bin2hex(hex, 65, out, sizeof(out));
	*n = s.n;
	return 0;
}

/* A SQLite source inside a serve's data dir: refused while that serve holds serve.lock. */
static int source_locked(const char *uri)
{
	if (strncmp(uri, "sqlite:", 7) != 0)
		return 0;
	const char *path = uri + 7;
	const char *slash = strrchr(path, '/');
	char lock[4200];
	if (slash)
		snprintf(lock, sizeof(lock), "%.*s/serve.lock", (int)(slash - path), path);
	else
		snprintf(lock, sizeof(lock), "serve.lock");
	int fd = open(lock, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
	close(fd);
	return busy;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: fleetplane store migrate --from URI --to URI\n\n"
		"      --from URI   the source store (sqlite:PATH of a stopped serve, etcd://...)\n"
		"      --to URI     the destination, empty (etcd://HOST:PORT,...[/NAMESPACE])\n"
		"  -h, --help       this help\n\n"
		"Copies every key, then checks that both stores hold the same number of keys\n"
		"and the same SHA-256 over all keys and values. Exit 0 when they match.\n");
}

static int migrate(int argc, char **argv)
{
	static const struct option lo[] = {{"from", required_argument, NULL, 'f'},
					   {"to", required_argument, NULL, 't'},
					   {"help", no_argument, NULL, 'h'},
					   {NULL, 0, NULL, 0}};
	const char *from = NULL, *to = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (c == 'f')
			from = optarg;
		else if (c == 't')
			to = optarg;
		else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!from || !to || optind < argc) {
		usage(stderr);
		return 2;
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "error: libsodium did not initialise\n");
		return 1;
	}
	if (source_locked(from)) {
		fprintf(stderr,
			"error: --from %s: its serve is running (serve.lock is held); stop "
			"it first\n",
			from);
		return 1;
	}
	char err[512];
	struct store *src = NULL, *dst = NULL;
	int rc = 1;
	if (store_open(from, &src, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: --from: %s\n", err);
		return 1;
	}
	if (store_open(to, &dst, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: --to: %s\n", err);
		goto out;
	}
	size_t have = 0;
	if (store_count(dst, "", &have) < 0 || have) {
		fprintf(stderr,
			"error: --to %s is not empty (%zu keys); migrate into an empty store\n", to,
			have);
		goto out;
	}
	int64_t rev0 = store_revision(src);
	struct copy cp = {.to = dst, .max = store_max_txn_ops(dst)};
	cp.ops = xcalloc(cp.max, sizeof(*cp.ops));
	cp.keys = xcalloc(cp.max, sizeof(*cp.keys));
	cp.vals = xcalloc(cp.max, sizeof(*cp.vals));
	int frc = store_foreach(src, "", 1000, copy_one, &cp, NULL);
	if (frc == 0)
		flush(&cp);
	free(cp.ops);
	free(cp.keys);
	free(cp.vals);
	if (frc < 0 || cp.rc < 0) {
		fprintf(stderr, "error: copy stopped after %zu keys: %s\n", cp.copied,
			cp.rc < 0 ? cp.err : fp_err_msg(frc));
		goto out;
	}
	if (store_revision(src) != rev0) {
		fprintf(stderr,
			"error: the source changed during the copy (revision %lld -> %lld); "
			"stop its serve and migrate into an empty store again\n",
			(long long)rev0, (long long)store_revision(src));
		goto out;
	}
	size_t ns = 0, nd = 0;
	char hs[65], hd[65];
	if (checksum(src, &ns, hs) < 0 || checksum(dst, &nd, hd) < 0) {
		fprintf(stderr, "error: cannot read the stores back to verify\n");
		goto out;
	}
	printf("copied %zu keys from %s (revision %lld)\n", cp.copied, from, (long long)rev0);
	printf("source:      %zu keys sha256 %s\n", ns, hs);
	printf("destination: %zu keys sha256 %s\n", nd, hd);
	if (ns != nd || strcmp(hs, hd) != 0) {
		fprintf(stderr, "error: verification failed: the stores differ\n");
		goto out;
	}
	printf("verified\n");
	rc = 0;
out:
	store_close(dst);
	store_close(src);
	return rc;
}

int cmd_store(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(argc < 2 ? stderr : stdout,
			"Usage: fleetplane store <verb> [flags]\n\nVerbs:\n"
			"  migrate   copy a stopped serve's store into an empty one and verify\n");
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "migrate") == 0)
		return migrate(argc - 1, argv + 1);
	fprintf(stderr, "error: unknown verb \"%s\" (fleetplane store --help)\n", argv[1]);
	return 2;
}
