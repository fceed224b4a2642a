/* auth.c - bearer tokens for the API (see auth.h): the hashed token documents in the store, the
 * in-memory hash -> principal map the server consults on every request, and the first-start
 * admin token in <data_dir>/admin.token. Only hashes are kept; secrets exist in memory just long
 * enough to hash or hand out, and are wiped with explicit_bzero / sodium_memzero. */
#include "api/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "core/codec.h"
#include "core/event.h"
#include "store/store.h"
#include "base/banned.h"

#define TOKEN_HASH_LEN 32
#define TOKEN_RAND_LEN 32
#define TOKEN_PREFIX_KEY "/tokens/"
/* How often a successful lookup may look for tokens revoked by another process (ms). */
#define AUTH_REFRESH_MS 1000

struct auth_entry {
	unsigned char hash[TOKEN_HASH_LEN];
	struct api_principal who;
};

struct api_auth {
	struct store *st;
	pthread_rwlock_t mu; /* read: lookups; write: reloads and edits of the map */
	struct auth_entry *ents;
	size_t n, alloc;
	int32_t *buckets;           /* index into ents, -1 = empty; open addressing */
	size_t nbuckets;            /* power of two, >= 2n */
	_Atomic int64_t loaded_rev; /* atomics: read under the read lock too */
	_Atomic int64_t checked_mono_ms;
};

static const char *const role_names[] = {"none", "agent", "viewer", "operator", "admin"};

const char *api_role_name(enum api_role r)
{
	if ((unsigned)r >= sizeof(role_names) / sizeof(role_names[0]))
		return "none";
	return role_names[r];
}

int api_role_parse(const char *s, enum api_role *out)
{
	for (int i = API_ROLE_AGENT; i <= API_ROLE_ADMIN; i++)
		if (s && strcmp(s, role_names[i]) == 0) {
			*out = (enum api_role)i;
			return 0;
		}
	return FP_EINVAL;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void hash_secret(const char *secret, unsigned char out[TOKEN_HASH_LEN])
{
	crypto_generichash(out, TOKEN_HASH_LEN, (const unsigned char *)secret, strlen(secret), NULL,
			   0);
}

static size_t bucket_of(const unsigned char *h, size_t nb)
{
	/* The hash of a random 256-bit secret is uniformly distributed; its first bytes index. */
	uint32_t v = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
		     (uint32_t)h[3] << 24;
	return v & (nb - 1);
}

static void rebuild_index(struct api_auth *a)
{
	size_t nb = 16;
	while (nb < a->n * 2 + 1)
		nb *= 2;
	free(a->buckets);
	a->buckets = xmalloc(nb * sizeof(*a->buckets));
	for (size_t i = 0; i < nb; i++)
		a->buckets[i] = -1;
	a->nbuckets = nb;
	for (size_t i = 0; i < a->n; i++) {
		size_t b = bucket_of(a->ents[i].hash, nb);
		while (a->buckets[b] >= 0)
			b = (b + 1) & (nb - 1);
		a->buckets[b] = (int32_t)i;
	}
}

/* Parses one stored token document into e. Returns 0 or FP_EINVAL. */
static int entry_from_doc(const json_t *doc, struct auth_entry *e)
{
	const char *name = jsonx_str(doc, "metadata.name");
	const char *role = jsonx_str(doc, "role");
	const char *hex = jsonx_str(doc, "hash");
	const char *node = jsonx_str(doc, "node");
	const char *uid = jsonx_str(doc, "nodeUid");
	size_t hl = 0;
	memset(e, 0, sizeof(*e));
	if (!name || !role || !hex || strlen(name) >= API_NAME_MAX ||
	    api_role_parse(role, &e->who.role) < 0)
		return FP_EINVAL;
	if (sodium_hex2bin(e->hash, TOKEN_HASH_LEN, hex, strlen(hex), NULL, &hl, NULL) != 0 ||
	    hl != TOKEN_HASH_LEN)
		return FP_EINVAL;
	snprintf(e->who.name, sizeof(e->who.name), "%s", name);
	if (node) {
		if (strlen(node) >= API_NAME_MAX)
			return FP_EINVAL;
		snprintf(e->who.node, sizeof(e->who.node), "%s", node);
	}
	if (uid) {
		if (strlen(uid) >= API_UID_MAX)
			return FP_EINVAL;
		snprintf(e->who.node_uid, sizeof(e->who.node_uid), "%s", uid);
	}
	/* An agent token without nodeUid (older versions) loads: the server refuses it with a
	 * detail that says to make a new one, which "unknown token" would not. */
	if (e->who.role == API_ROLE_AGENT && !e->who.node[0])
		return FP_EINVAL;
	return 0;
}

/* Reads all of /tokens/ and replaces the map. Caller holds a->mu for writing. */
static int reload_locked(struct api_auth *a)
{
	struct auth_entry *ents = NULL;
	size_t n = 0, alloc = 0;
	char last[STORE_MAX_KEY + 1] = "";
	int64_t rev0 = 0;
	for (;;) {
		struct store_kv *kvs = NULL;
		size_t nk = 0;
		int64_t rev = 0;
		int more = 0;
		int rc = store_list(a->st, TOKEN_PREFIX_KEY, last, 1000, &kvs, &nk, &rev, &more);
		if (rc < 0) {
			free(ents);
			return rc;
		}
		if (!rev0)
			rev0 = rev;
		for (size_t i = 0; i < nk; i++) {
			json_t *doc = NULL;
			ALLOC_GROW(ents, n + 1, alloc);
			if (jsonx_parse(kvs[i].value, strlen(kvs[i].value), &doc, NULL, 0) == 0 &&
			    entry_from_doc(doc, &ents[n]) == 0)
				n++;
			else
				log_warn("ignoring malformed token document key=%s", kvs[i].key);
			json_decref(doc);
		}
		if (nk)
			snprintf(last, sizeof(last), "%s", kvs[nk - 1].key);
		store_kv_array_free(kvs, nk);
		if (!more || !nk)
			break;
	}
	sodium_memzero(a->ents, a->alloc * sizeof(*a->ents));
	free(a->ents);
	a->ents = ents;
	a->n = n;
	a->alloc = alloc;
	a->loaded_rev = rev0;
	a->checked_mono_ms = mono_ms();
	rebuild_index(a);
	return 0;
}

/* Re-reads the map when /tokens/ changed since it was loaded. force: on a miss; otherwise at
 * most every AUTH_REFRESH_MS. Caller holds a->mu for writing. */
static void refresh_locked(struct api_auth *a, int force)
{
	int64_t cur = store_revision(a->st);
	if (cur == a->loaded_rev)
		return;
	int64_t now = mono_ms();
	if (!force && now - a->checked_mono_ms < AUTH_REFRESH_MS)
		return;
	a->checked_mono_ms = now;
	struct store_event *evs = NULL;
	size_t n = 0;
	int rc = store_changes(a->st, TOKEN_PREFIX_KEY, a->loaded_rev, 1, &evs, &n);
	store_event_array_free(evs, n);
	if (rc == 0 && n == 0) {
		a->loaded_rev = cur;
		return;
	}
	if (reload_locked(a) < 0)
		log_warn("token reload failed rev=%lld", (long long)cur);
}

static void map_put_locked(struct api_auth *a, const struct auth_entry *e)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->ents[i].who.name, e->who.name) == 0) {
			a->ents[i] = *e;
			rebuild_index(a);
			return;
		}
	ALLOC_GROW(a->ents, a->n + 1, a->alloc);
	a->ents[a->n++] = *e;
	rebuild_index(a);
}

static void map_del_locked(struct api_auth *a, const char *name)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->ents[i].who.name, name) == 0) {
			a->ents[i] = a->ents[a->n - 1];
			sodium_memzero(&a->ents[a->n - 1], sizeof(a->ents[0]));
			a->n--;
			rebuild_index(a);
			return;
		}
}

struct api_auth *api_auth_new(struct store *st, char *err, size_t errlen)
{
	if (sodium_init() < 0) {
		fp_errf(FP_EIO, err, errlen, "libsodium initialisation failed");
		return NULL;
	}
	struct api_auth *a = xcalloc(1, sizeof(*a));
	a->st = st;
	pthread_rwlock_init(&a->mu, NULL);
	int rc = reload_locked(a);
	if (rc < 0) {
		fp_errf(rc, err, errlen, "cannot read tokens from the store: %s", fp_err_msg(rc));
		api_auth_free(a);
		return NULL;
	}
	for (size_t i = 0; i < a->n; i++)
		if (a->ents[i].who.role == API_ROLE_AGENT && !a->ents[i].who.node_uid[0])
			log_warn("agent token has no nodeUid (made by an older fleetplane) and is "
				 "refused; make a new one name=%s node=%s",
				 a->ents[i].who.name, a->ents[i].who.node);
	return a;
}

void api_auth_free(struct api_auth *a)
{
	if (!a)
		return;
	if (a->ents)
		sodium_memzero(a->ents, a->alloc * sizeof(*a->ents));
	free(a->ents);
	free(a->buckets);
	pthread_rwlock_destroy(&a->mu);
	free(a);
}

static int lookup_locked(struct api_auth *a, const unsigned char *h, struct api_principal *who)
{
	if (!a->nbuckets)
		return FP_EAUTH;
	size_t b = bucket_of(h, a->nbuckets);
	while (a->buckets[b] >= 0) {
		const struct auth_entry *e = &a->ents[a->buckets[b]];
		if (sodium_memcmp(e->hash, h, TOKEN_HASH_LEN) == 0) {
			*who = e->who;
			return 0;
		}
		b = (b + 1) & (a->nbuckets - 1);
	}
	return FP_EAUTH;
}

/* 1 when refresh_locked(a, 0) would read the store. */
static int refresh_due(struct api_auth *a)
{
	return store_revision(a->st) != atomic_load(&a->loaded_rev) &&
	       mono_ms() - atomic_load(&a->checked_mono_ms) >= AUTH_REFRESH_MS;
}

static int auth_check(struct api_auth *a, const char *secret, struct api_principal *who, int fast)
{
	unsigned char h[TOKEN_HASH_LEN];
	size_t plen = strlen(API_TOKEN_PREFIX);
	if (!secret || strncmp(secret, API_TOKEN_PREFIX, plen) != 0 || strlen(secret) > 256)
		return FP_EAUTH;
	hash_secret(secret, h);
	/* Hot path: a hit in a map that needs no refresh, under the read lock only. */
	int rc = FP_EAGAIN;
	pthread_rwlock_rdlock(&a->mu);
	if (!refresh_due(a) && lookup_locked(a, h, who) == 0)
		rc = 0;
	pthread_rwlock_unlock(&a->mu);
	if (rc == FP_EAGAIN && !fast) {
		pthread_rwlock_wrlock(&a->mu);
		refresh_locked(a, 0);
		rc = lookup_locked(a, h, who);
		if (rc < 0) {
			refresh_locked(a, 1);
			rc = lookup_locked(a, h, who);
		}
		pthread_rwlock_unlock(&a->mu);
	}
	sodium_memzero(h, sizeof(h));
	return rc;
}

int api_auth_check(struct api_auth *a, const char *secret, struct api_principal *who)
{
	return auth_check(a, secret, who, 0);
}

int api_auth_check_fast(struct api_auth *a, const char *secret, struct api_principal *who)
{
	return auth_check(a, secret, who, 1);
}

/* Makes a new secret (malloc'd) and its hash. */
static char *secret_new(unsigned char hash[TOKEN_HASH_LEN])
{
	unsigned char rnd[TOKEN_RAND_LEN];
	char b64[sodium_base64_ENCODED_LEN(TOKEN_RAND_LEN,
					   sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
	randombytes_buf(rnd, sizeof(rnd));
	sodium_bin2base64(b64, sizeof(b64), rnd, sizeof(rnd),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *s = xasprintf("%s%s", API_TOKEN_PREFIX, b64);
	sodium_memzero(rnd, sizeof(rnd));
	sodium_memzero(b64, sizeof(b64));
	hash_secret(s, hash);
	return s;
}

static json_t *token_doc(const char *name, enum api_role role, const char *node,
			 const char *node_uid, const unsigned char *hash, int64_t wall_ms)
{
	char ts[FP_TIME_LEN], hex[TOKEN_HASH_LEN * 2 + 1];
	fp_time_format(wall_ms, ts);
	json_t *doc = json_pack("{s:s,s:{s:s,s:s},s:s}", "kind", "Token", "metadata", "name", name,
				"createdAt", ts, "role", api_role_name(role));
	if (node)
		json_object_set_new(doc, "node", json_string(node));
	if (node_uid)
		json_object_set_new(doc, "nodeUid", json_string(node_uid));
	if (hash) {
		sodium_bin2hex(hex, sizeof(hex), hash, TOKEN_HASH_LEN);
		json_object_set_new(doc, "hash", json_string(hex));
	}
	return doc;
}

json_t *api_auth_token_public(const json_t *stored)
{
	json_t *doc = json_deep_copy(stored);
	json_object_del(doc, "hash");
	return doc;
}

/* Writes the token (and event) with expect; updates the map on success. */
static int token_write(struct api_auth *a, const char *name, enum api_role role, const char *node,
		       const char *node_uid, const char *actor, const char *reason, int64_t wall_ms,
		       uint64_t rnd, int64_t expect, char **secret, json_t **doc_out)
{
	struct auth_entry e;
	memset(&e, 0, sizeof(e));
	char *s = secret_new(e.hash);
	json_t *doc = token_doc(name, role, node, node_uid, e.hash, wall_ms);
	char *val = jsonx_dumps(doc);
	char key[STORE_MAX_KEY + 1], ekey[STORE_MAX_KEY + 1], eid[EVENT_ID_LEN];
	snprintf(key, sizeof(key), "%s%s", TOKEN_PREFIX_KEY, name);
	event_id(wall_ms, rnd, eid);
	snprintf(ekey, sizeof(ekey), "/events/%s", eid);
	char obj[API_NAME_MAX + 8];
	snprintf(obj, sizeof(obj), "token/%s", name);
	char msg[160];
	snprintf(msg, sizeof(msg), "token created role=%s", api_role_name(role));
	json_t *ev = event_new(eid, "Normal", actor, obj, reason, msg, wall_ms);
	char *evval = jsonx_dumps(ev);
	struct store_op ops[2] = {
		{.type = STORE_OP_PUT, .key = key, .value = val, .expect = expect},
		{.type = STORE_OP_PUT, .key = ekey, .value = evval, .expect = STORE_ABSENT},
	};
	int64_t rev = 0;
	int rc = store_txn(a->st, ops, 2, &rev, NULL);
	free(val);
	free(evval);
	json_decref(ev);
	if (rc < 0) {
		fp_free_secret(s);
		json_decref(doc);
		return rc;
	}
	e.who.role = role;
	snprintf(e.who.name, sizeof(e.who.name), "%s", name);
	if (node)
		snprintf(e.who.node, sizeof(e.who.node), "%s", node);
	if (node_uid)
		snprintf(e.who.node_uid, sizeof(e.who.node_uid), "%s", node_uid);
	pthread_rwlock_wrlock(&a->mu);
	map_put_locked(a, &e);
	pthread_rwlock_unlock(&a->mu);
	sodium_memzero(&e, sizeof(e));
	*secret = s;
	if (doc_out) {
		*doc_out = api_auth_token_public(doc);
	}
	json_decref(doc);
	return 0;
}

int api_auth_token_create(struct api_auth *a, const char *name, enum api_role role,
			  const char *node, const char *node_uid, const char *actor,
			  int64_t wall_ms, uint64_t rnd, char **secret, json_t **doc, char *err,
			  size_t errlen)
{
	*secret = NULL;
	if (doc)
		*doc = NULL;
	int rc = name_validate("name", name, err, errlen);
	if (rc < 0)
		return rc;
	if (strlen(name) >= API_NAME_MAX)
		return fp_errf(FP_EINVAL, err, errlen, "name: longer than %d characters",
			       API_NAME_MAX - 1);
	if (role == API_ROLE_AGENT) {
		if (!node)
			return fp_errf(FP_EINVAL, err, errlen, "node: required for an agent token");
		rc = name_validate("node", node, err, errlen);
		if (rc < 0)
			return rc;
		if (!node_uid || !*node_uid || strlen(node_uid) >= API_UID_MAX)
			return fp_errf(FP_EINVAL, err, errlen,
				       "node: an agent token needs node %s's uid", node);
	} else if (role < API_ROLE_VIEWER || role > API_ROLE_ADMIN) {
		return fp_errf(FP_EINVAL, err, errlen,
			       "role: expected admin, operator, viewer or agent");
	} else if (node || node_uid) {
		return fp_errf(FP_EINVAL, err, errlen,
			       "node: only agent tokens are scoped to a node");
	}
	rc = token_write(a, name, role, node, node_uid, actor, "TokenCreated", wall_ms, rnd,
			 STORE_ABSENT, secret, doc);
	if (rc == FP_EEXIST)
		fp_errf(rc, err, errlen, "token %s already exists", name);
	else if (rc < 0)
		fp_errf(rc, err, errlen, "store: %s", fp_err_msg(rc));
	return rc;
}

int api_auth_token_revoke(struct api_auth *a, const char *name, const char *actor, int64_t wall_ms,
			  uint64_t rnd)
{
	char key[STORE_MAX_KEY + 1], ekey[STORE_MAX_KEY + 1], eid[EVENT_ID_LEN];
	char obj[STORE_MAX_KEY + 1];
	if (strlen(name) >= API_NAME_MAX)
		return FP_ENOTFOUND;
	snprintf(key, sizeof(key), "%s%s", TOKEN_PREFIX_KEY, name);
	snprintf(obj, sizeof(obj), "token/%s", name);
	event_id(wall_ms, rnd, eid);
	snprintf(ekey, sizeof(ekey), "/events/%s", eid);
	struct store_kv kv = {0};
	int rc = store_get(a->st, key, &kv);
	if (rc < 0)
		return rc;
	json_t *ev = event_new(eid, "Normal", actor, obj, "TokenRevoked", "token revoked", wall_ms);
	char *evval = jsonx_dumps(ev);
	struct store_op ops[2] = {
		{.type = STORE_OP_DELETE, .key = key, .expect = kv.mod_revision},
		{.type = STORE_OP_PUT, .key = ekey, .value = evval, .expect = STORE_ABSENT},
	};
	rc = store_txn(a->st, ops, 2, NULL, NULL);
	free(evval);
	json_decref(ev);
	store_kv_release(&kv);
	if (rc == FP_ECONFLICT)
		rc = FP_EBUSY;
	if (rc < 0)
		return rc;
	pthread_rwlock_wrlock(&a->mu);
	map_del_locked(a, name);
	pthread_rwlock_unlock(&a->mu);
	return 0;
}

int api_auth_bootstrap(struct api_auth *a, const char *data_dir, int64_t wall_ms, uint64_t rnd,
		       char *err, size_t errlen)
{
	if (!data_dir)
		return 0;
	char *path = xasprintf("%s/admin.token", data_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		int e = errno;
		int rc = 0;
		if (e != EEXIST)
			rc = fp_errf(FP_EIO, err, errlen, "cannot create %s: %s", path,
				     strerror(e));
		free(path);
		return rc;
	}
	char *secret = NULL;
	int rc = token_write(a, "admin", API_ROLE_ADMIN, NULL, NULL, "system:serve", "TokenCreated",
			     wall_ms, rnd, STORE_ANY, &secret, NULL);
	if (rc < 0) {
		fp_errf(FP_EIO, err, errlen, "cannot store the admin token: %s", fp_err_msg(rc));
		goto fail;
	}
	size_t len = strlen(secret);
	secret[len] = '\n'; /* temporarily, to write one line */
	ssize_t w = write(fd, secret, len + 1);
	secret[len] = 0;
	if (w != (ssize_t)(len + 1) || fsync(fd) != 0) {
		rc = fp_errf(FP_EIO, err, errlen, "cannot write %s: %s", path, strerror(errno));
		goto fail;
	}
	close(fd);
	fp_free_secret(secret);
	log_info("admin token written path=%s", path);
	free(path);
	return 0;
fail:
	close(fd);
	unlink(path);
	fp_free_secret(secret);
	free(path);
	return rc < 0 ? rc : FP_EIO;
}
