/* store_etcd.c - the etcd v3 store backend ("etcd://h1:2379,h2:2379[/namespace][?options]";
 * DESIGN.md "Store"), over etcd's JSON gateway (grpc-gateway, /v3/...) with libcurl: no
 * well-kept C gRPC client exists, and the gateway is part of every etcd 3.4+ server. Facts about
 * the gateway (base64 keys and values, int64 as strings, omitted zero values, a failed txn has
 * no "succeeded") are from ../shared/recipes/services.md §1 and etcd's rpc.proto.
 *
 * Mapping. A store key K is the etcd key <ns>K (ns default "/fleetplane"); the data range is
 * [<ns>/, <ns>0). The store revision is etcd's revision minus one, so an empty etcd (revision 1)
 * is store revision 0 as in the other backends; revisions of writes outside the data range (the
 * leader key, other users of the cluster) are gaps. A store_txn is one etcd Txn: each op's
 * expectation becomes a compare (create-if-absent: create_revision == 0; CAS: mod_revision ==
 * m+1; delete: create_revision > 0), plus the leader fence when set (store_etcd_int.h); the
 * failure branch reads the fence key and every op's key, so a refusal names the first failed
 * op at the revision it was decided. etcd applies a Txn whole or not at all.
 *
 * Limits. etcd refuses a Txn with more than --max-txn-ops (default 128) compares or ops, and a
 * request over --max-request-bytes (default 1.5 MiB). The backend reports max_txn_ops - 1 (one
 * compare is the fence) and refuses a transaction whose encoded size passes max_request_bytes
 * with FP_ETOOBIG before sending it; callers split (api_nodes.c bulk enroll: batches, each
 * whole or absent, the reply says how many were enrolled). Never half-applied.
 *
 * Unknown outcomes. A write must survive the loss of one member, and is never applied twice nor
 * reported failed once applied. It goes to another member at once only where nothing can have
 * been applied: no connection, none of the request sent, or "no leader" (nothing proposed).
 * Where it may have been applied (the request sent and the connection reset or timed out, or
 * etcd's "leader changed", "request timed out", "server stopped"), etcd_txn resolves it before
 * trying again or answering: it reads the fence key and every op's key in one read-only Txn
 * (linearizable, from whichever member answers; after a leader change the new leader has
 * committed or dropped every older entry before it serves a read). Applied: every PUT's key has
 * the op's value at one mod_revision newer than its compare (a CAS's m; otherwise a revision
 * seen before the first send) and every DELETE's key is absent: the write answers success at
 * that revision. Not applied, and every expectation still holds: it is sent again with each
 * op's compare replaced by the state just read (mod_revision == read, or absent), so a first try
 * that lands late makes the retry fail (and be resolved again) instead of applying twice. Not
 * applied and an expectation fails: the store's answer for it (FP_EEXIST, FP_ECONFLICT, ...).
 * So that an unconditional put's late first try cannot land after its retry either, a STORE_ANY
 * put carries the compare mod_revision <= r0 (not written since the write began, r0 as above);
 * a refusal of that compare alone is resolved the same way.
 * If no member answers the read, FP_EIO (the one case where the outcome stays unknown).
 *
 * Change feed. One watch stream on the data range, on a thread of its own, fills an in-memory
 * log of events from the revision the store was opened at; store_changes reads that log and
 * store_wait waits on it. A write returns once etcd acknowledged it (store_revision is then at
 * least its revision); a writer still reads its own write in the feed: store_changes first waits
 * (bounded, kicking a stalled stream to another member) for the log to reach the newest revision
 * this process wrote. Events older than the open revision, trimmed from the log (it keeps at
 * most ETCD_LOG_MAX events and about ETCD_LOG_BYTES of keys and values) or compacted answer FP_ECOMPACTED (the caller re-lists, as after
 * compaction). The stream reconnects from the last revision on any error, rotating endpoints;
 * etcd's compaction past it (the watch is cancelled with compact_revision) raises the floor.
 *
 * Options: max_txn_ops=N (the server's --max-txn-ops, default 128), max_request_bytes=N
 * (default 1572864), timeout_ms=N (one request, default 5000), cacert=PATH, cert=PATH,
 * key=PATH (TLS: https to every endpoint). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "store/store_etcd_int.h"
#include "store/store_int.h"
#include "base/banned.h"

#define ETCD_MAX_ENDPOINTS 9
#define ETCD_POOL 16
#define ETCD_NS_MAX 64
#define ETCD_LOG_MAX 100000
#define ETCD_LOG_BYTES (128u << 20)
#define ETCD_RESP_MAX (512u << 20)
#define ETCD_DEFAULT_TXN_OPS 128
#define ETCD_DEFAULT_REQ_BYTES 1572864

struct etcd_ev {
	int64_t rev; /* store revision */
	enum store_op_type type;
	char *key; /* store key (namespace stripped) */
	char *value;
	int64_t create_rev;
};

struct store_etcd {
	struct store_impl base;
	char *endpoints[ETCD_MAX_ENDPOINTS];
	size_t nendpoints;
	atomic_uint cur; /* the endpoint that answered last */
	char ns[ETCD_NS_MAX + 1];
	size_t max_txn_ops; /* the server's limit */
	size_t max_request_bytes;
	long timeout_ms;
	char *cacert, *cert, *keyfile;

	pthread_mutex_t pool_mu;
	CURL *pool[ETCD_POOL];
	size_t npool;

	pthread_mutex_t mu;
	pthread_cond_t cond; /* broadcast on new events and on close */
	struct etcd_ev *log;
	size_t nlog, log_alloc;
	size_t log_bytes;  /* keys and values held, about */
	int64_t rev;       /* the feed holds every data event up to this store revision */
	int64_t acked;     /* the newest revision a write of ours was acknowledged at */
	int64_t floor;     /* ... and after this one */
	int64_t compacted; /* store_compact's point */
	int closing;
	int kick; /* the watch stream stalls (a write waits for it): reconnect elsewhere */
	int waiters;
	pthread_t watcher;
	int watcher_started;

	pthread_mutex_t fence_mu;
	int fence_mode;
	char fence_key[ETCD_NS_MAX + 16];
	int64_t fence_rev; /* etcd create_revision */
	_Atomic int64_t fence_deadline;
	void (*fence_lost)(void *arg);
	void *fence_arg;
};

static struct store_etcd *to_etcd(struct store_impl *b)
{
	return (struct store_etcd *)b;
}

int64_t store_etcd_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- base64 and JSON helpers ---- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *store_etcd_b64(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	char *out = xmalloc((n + 2) / 3 * 4 + 1);
	size_t o = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = b64chars[(v >> 6) & 63];
		out[o++] = b64chars[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0);
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = 0;
	return out;
}

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

char *store_etcd_unb64(const char *s, size_t *n)
{
	size_t len = strlen(s);
	char *out = xmalloc(len / 4 * 3 + 4);
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '=')
			break;
		int v = b64val((unsigned char)s[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = 0;
	if (n)
		*n = o;
	return out;
}

int64_t store_etcd_int(const json_t *obj, const char *name)
{
	json_t *v = obj ? json_object_get(obj, name) : NULL;
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_string(v))
		return (int64_t)strtoll(json_string_value(v), NULL, 10);
	return 0;
}

static json_t *b64_json(const char *p, size_t n)
{
	char *b = store_etcd_b64(p, n);
	json_t *j = json_string(b);
	free(b);
	return j;
}

/* The etcd key of store key k (or of a prefix), as base64 JSON. */
static json_t *ekey(struct store_etcd *e, const char *k, int nul)
{
	char buf[ETCD_NS_MAX + STORE_MAX_KEY + 4];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s%s", e->ns, k);
	if (nul)
		buf[n++] = 0; /* the smallest key after k */
	return b64_json(buf, n);
}

/* ---- HTTP ---- */

struct resp_buf {
	char *p;
	size_t n, cap;
	int over;
};

static size_t resp_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct resp_buf *b = arg;
	size_t len = size * nmemb;
	if (b->n + len + 1 > ETCD_RESP_MAX) {
		b->over = 1;
		return 0;
	}
	if (b->n + len + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 4096;
		while (c < b->n + len + 1)
			c *= 2;
		b->p = xrealloc(b->p, c);
		b->cap = c;
	}
	memcpy(b->p + b->n, ptr, len);
	b->n += len;
	b->p[b->n] = 0;
	return len;
}

static CURL *pool_get(struct store_etcd *e)
{
	CURL *c = NULL;
	pthread_mutex_lock(&e->pool_mu);
	if (e->npool)
		c = e->pool[--e->npool];
	pthread_mutex_unlock(&e->pool_mu);
	if (!c)
		c = curl_easy_init();
	return c;
}

static void pool_put(struct store_etcd *e, CURL *c)
{
	pthread_mutex_lock(&e->pool_mu);
	if (e->npool < ETCD_POOL) {
		e->pool[e->npool++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&e->pool_mu);
	if (c)
		curl_easy_cleanup(c);
}

static void setup_handle(struct store_etcd *e, CURL *c, const char *url, const char *body,
			 struct curl_slist *hdrs, long timeout_ms)
{
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 1000 ? timeout_ms : 1000L);
	if (timeout_ms > 0)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (e->cacert)
		curl_easy_setopt(c, CURLOPT_CAINFO, e->cacert);
	if (e->cert)
		curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert);
	if (e->keyfile)
		curl_easy_setopt(c, CURLOPT_SSLKEY, e->keyfile);
}

static const char *endpoint_scheme(struct store_etcd *e)
{
	return (e->cacert || e->cert) ? "https" : "http";
}

/* Maps an etcd error answer {"error","message","code"} to ours. */
static int grpc_error(const char *body, char *err, size_t errlen)
{
	json_t *j = json_loads(body ? body : "", 0, NULL);
	const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
	if (!msg && j)
		msg = json_string_value(json_object_get(j, "error"));
	int64_t code = store_etcd_int(j, "code");
	int rc = FP_EIO;
	if (msg && strstr(msg, "compacted"))
		rc = FP_ECOMPACTED;
	else if (msg && (strstr(msg, "too many operations") || strstr(msg, "too large")))
		rc = FP_ETOOBIG;
	fp_errf(rc, err, errlen, "etcd: %s (code %lld)", msg ? msg : "error", (long long)code);
	json_decref(j);
	return rc;
}

/* Whether an etcd error answer leaves a write's outcome unknown: the member proposed it (or
 * passed it on) and lost track of it (leader changed, timed out, stopped). */
static int etcd_msg_uncertain(const char *body)
{
	return body && (strstr(body, "leader changed") || strstr(body, "timed out") ||
			strstr(body, "server stopped") || strstr(body, "unhealthy") ||
			strstr(body, "took too long"));
}

/* One POST. retry_sent: retry another endpoint also when the request may have been sent (reads
 * and idempotent calls). A write (retry_sent 0) goes to another endpoint only when nothing can
 * have been applied: no connection, nothing of the request sent (curl's request size is 0), or
 * "no leader". When it may have been applied (sent and no answer, a timeout, "leader changed",
 * "request timed out") *uncertain (may be NULL) is set to 1 and FP_EIO returned: the caller
 * resolves the outcome (etcd_txn). deadline_ms (monotonic, 0 none): a retryable call tries the
 * members in turn until then, each endpoint still to try in a round getting its share of the time
 * left (>= 250 ms), so one member that hangs (a follower whose leader just died) cannot spend it
 * all. */
static int etcd_post_until(struct store_etcd *e, const char *path, json_t *body, int retry_sent,
			   int64_t deadline_ms, json_t **resp, int *uncertain, char *err,
			   size_t errlen)
{
	*resp = NULL;
	if (uncertain)
		*uncertain = 0;
	char *text = json_dumps(body, JSON_COMPACT);
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	int rc = FP_EIO;
	unsigned start = atomic_load(&e->cur);
	int no_leader_rounds = 0, tries = 0;
	for (size_t t = 0; t < e->nendpoints || (retry_sent && deadline_ms > 0 && rc == FP_EIO &&
						 store_etcd_mono_ms() < deadline_ms);
	     t++) {
		if (t >= e->nendpoints) { /* a call with a deadline tries every member until then */
			struct timespec ts = {0, 50 * 1000000L};
			nanosleep(&ts, NULL);
			t = 0;
		}
		unsigned idx = (unsigned)((start + t) % e->nendpoints);
		char url[512];
		snprintf(url, sizeof(url), "%s://%s%s", endpoint_scheme(e), e->endpoints[idx],
			 path);
		long tmo = e->timeout_ms;
		if (deadline_ms > 0) {
			int64_t left = deadline_ms - store_etcd_mono_ms();
			if (left <= 0) {
				if (!tries)
					fp_errf(FP_EIO, err, errlen, "etcd: the deadline passed");
				break;
			}
			if (left < tmo)
				tmo = (long)left;
			/* a member that hangs (a follower whose leader just died) must not spend
			 * the whole deadline: each endpoint still to try gets its share, >= 250 ms */
			int64_t share = left / (int64_t)(e->nendpoints - t);
			if (retry_sent && t + 1 < e->nendpoints && share < tmo)
				tmo = (long)(share > 250 ? share : 250);
		}
		CURL *c = pool_get(e);
		struct resp_buf b = {0};
		tries++;
		setup_handle(e, c, url, text, hdrs, tmo);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, resp_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		CURLcode cc = curl_easy_perform(c);
		long http = 0, sent = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
		curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &sent);
		if (cc != CURLE_OK) {
			fp_errf(FP_EIO, err, errlen,
				"etcd %s: %s (curl %d, %ld request bytes sent)", e->endpoints[idx],
				curl_easy_strerror(cc), (int)cc, sent);
			curl_easy_cleanup(c);
			free(b.p);
			rc = FP_EIO;
			if (retry_sent || cc == CURLE_COULDNT_CONNECT ||
			    cc == CURLE_COULDNT_RESOLVE_HOST || (sent == 0 && http == 0)) {
				if (!retry_sent)
					log_info(
						"store: etcd write not sent, trying another member err=\"%s\"",
						err);
				continue;
			}
			if (uncertain)
				*uncertain = 1;
			break;
		}
		pool_put(e, c);
		if (http == 200) {
			json_error_t je;
			*resp = json_loadb(b.p ? b.p : "", b.n, 0, &je);
			free(b.p);
			atomic_store(&e->cur, idx);
			rc = *resp ? 0
				   : fp_errf(FP_EPARSE, err, errlen, "etcd: bad JSON: %s", je.text);
			break;
		}
		rc = grpc_error(b.p, err, errlen);
		int no_leader = b.p && strstr(b.p, "no leader") != NULL;
		int unsure = !retry_sent && !no_leader && etcd_msg_uncertain(b.p);
		free(b.p);
		/* no leader / unavailable on this member: another may have one. "no leader" means
		 * nothing was proposed, so even a write may go again (an election takes about one
		 * election timeout: wait a little) */
		if (rc == FP_EIO && no_leader) {
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
			if (t + 1 == e->nendpoints && ++no_leader_rounds < 20)
				t = (size_t)-1; /* another round over every endpoint */
			continue;
		}
		if (rc == FP_EIO && unsure) {
			/* the next try starts elsewhere: this member may be the one going away */
			atomic_store(&e->cur, (unsigned)((idx + 1) % e->nendpoints));
			if (uncertain)
				*uncertain = 1;
			break;
		}
		if (rc == FP_EIO && retry_sent && http >= 500)
			continue;
		break;
	}
	curl_slist_free_all(hdrs);
	free(text);
	return rc;
}

static int etcd_post(struct store_etcd *e, const char *path, json_t *body, int retry_sent,
		     json_t **resp, char *err, size_t errlen)
{
	return etcd_post_until(e, path, body, retry_sent, 0, resp, NULL, err, errlen);
}

int store_etcd_call(struct store_etcd *e, const char *path, json_t *body, int64_t deadline_ms,
		    json_t **resp, char *err, size_t errlen)
{
	return etcd_post_until(e, path, body, 1, deadline_ms, resp, NULL, err, errlen);
}

const char *store_etcd_namespace(struct store_etcd *e)
{
	return e->ns;
}

/* ---- decoding ---- */

/* Decodes an etcd KeyValue into kv (store key, value, store revisions). Returns 0 or FP_EPARSE
 * (key outside the namespace, bad base64). */
static int decode_kv(struct store_etcd *e, const json_t *j, struct store_kv *kv)
{
	memset(kv, 0, sizeof(*kv));
	const char *k64 = json_string_value(json_object_get(j, "key"));
	const char *v64 = json_string_value(json_object_get(j, "value"));
	size_t nsl = strlen(e->ns), kl = 0;
	char *k = k64 ? store_etcd_unb64(k64, &kl) : NULL;
	if (!k || kl <= nsl || memcmp(k, e->ns, nsl) != 0 || strlen(k) != kl) {
		free(k);
		return FP_EPARSE;
	}
	kv->key = xstrdup(k + nsl);
	free(k);
	kv->value = v64 ? store_etcd_unb64(v64, NULL) : xstrdup("");
	if (!kv->value) {
		store_kv_release(kv);
		return FP_EPARSE;
	}
	kv->create_revision = store_etcd_int(j, "create_revision") - 1;
	kv->mod_revision = store_etcd_int(j, "mod_revision") - 1;
	return 0;
}

static int64_t header_rev(const json_t *resp)
{
	return store_etcd_int(json_object_get(resp, "header"), "revision") - 1;
}

/* ---- the change feed ---- */

static size_t ev_bytes(const struct etcd_ev *v)
{
	return strlen(v->key) + (v->value ? strlen(v->value) : 0) + sizeof(*v);
}

static void ev_free(struct etcd_ev *v)
{
	free(v->key);
	free(v->value);
}

/* Drops log entries with rev <= upto. Called with mu held. */
static void log_trim(struct store_etcd *e, int64_t upto)
{
	size_t k = 0;
	while (k < e->nlog && e->log[k].rev <= upto) {
		e->log_bytes -= ev_bytes(&e->log[k]);
		ev_free(&e->log[k++]);
	}
	memmove(e->log, e->log + k, (e->nlog - k) * sizeof(*e->log));
	e->nlog -= k;
}

/* Applies one watch answer's events. Returns 1 when the stream must restart (cancelled). */
static int feed_apply(struct store_etcd *e, json_t *msg)
{
	json_t *res = json_object_get(msg, "result");
	if (!res)
		return 1; /* {"error":...} */
	json_t *evs = json_object_get(res, "events");
	int restart = 0;
	pthread_mutex_lock(&e->mu);
	if (json_is_true(json_object_get(res, "canceled"))) {
		int64_t cr = store_etcd_int(res, "compact_revision");
		if (cr > 0) {
			/* the stream resumes at etcd revision cr: store revisions >= cr - 1 */
			int64_t fl = cr - 2;
			if (fl > e->floor) {
				log_warn("store: etcd compacted past the change feed rev=%lld "
					 "compact_revision=%lld; readers re-list",
					 (long long)e->rev, (long long)cr - 1);
				e->floor = fl;
				log_trim(e, fl);
				if (e->rev < fl)
					e->rev = fl;
			}
		}
		restart = 1;
	}
	size_t n = json_array_size(evs);
	int64_t last = e->rev;
	for (size_t i = 0; i < n; i++) {
		json_t *ev = json_array_get(evs, i);
		struct store_kv kv;
		if (decode_kv(e, json_object_get(ev, "kv"), &kv) < 0)
			continue;
		if (kv.mod_revision <= e->rev) { /* replayed after a reconnect */
			store_kv_release(&kv);
			continue;
		}
		ALLOC_GROW(e->log, e->nlog + 1, e->log_alloc);
		struct etcd_ev *v = &e->log[e->nlog++];
		const char *type = json_string_value(json_object_get(ev, "type"));
		v->rev = kv.mod_revision;
		v->key = kv.key;
		if (type && strcmp(type, "DELETE") == 0) {
			v->type = STORE_OP_DELETE;
			v->value = NULL;
			v->create_rev = 0;
			free(kv.value);
		} else {
			v->type = STORE_OP_PUT;
			v->value = kv.value;
			v->create_rev = kv.create_revision;
		}
		e->log_bytes += ev_bytes(v);
		if (v->rev > last)
			last = v->rev;
	}
	if (last > e->rev) {
		/* a revision is complete once a later one or the answer's end is seen: etcd never
		 * splits a revision across watch answers (fragment is off) */
		e->rev = last;
		if (e->nlog > ETCD_LOG_MAX || e->log_bytes > ETCD_LOG_BYTES) {
			/* drop the older half; readers behind it re-list */
			int64_t cut = e->log[e->nlog / 2].rev - 1;
			log_trim(e, cut);
			if (cut > e->floor)
				e->floor = cut;
		}
		pthread_cond_broadcast(&e->cond);
	}
	pthread_mutex_unlock(&e->mu);
	return restart;
}

struct watch_ctx {
	struct store_etcd *e;
	struct resp_buf line;
	int restart;
	int got;
};

static size_t watch_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct watch_ctx *w = arg;
	size_t len = size * nmemb;
	for (size_t i = 0; i < len; i++) {
		if (ptr[i] != '\n') {
			if (resp_write(ptr + i, 1, 1, &w->line) != 1)
				return 0;
			continue;
		}
		json_t *msg = w->line.n ? json_loadb(w->line.p, w->line.n, 0, NULL) : NULL;
		w->line.n = 0;
		if (!msg)
			continue;
		w->got = 1;
		if (feed_apply(w->e, msg))
			w->restart = 1;
		json_decref(msg);
		if (w->restart)
			return 0;
	}
	return len;
}

static int watch_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct watch_ctx *w = arg;
	pthread_mutex_lock(&w->e->mu);
	int stop = w->e->closing || w->e->kick;
	w->e->kick = 0;
	pthread_mutex_unlock(&w->e->mu);
	return stop;
}

static void *watch_main(void *arg)
{
	struct store_etcd *e = arg;
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	int fails = 0;
	for (;;) {
		pthread_mutex_lock(&e->mu);
		int closing = e->closing;
		int64_t from = e->rev + 2; /* etcd revision after the last one we hold */
		pthread_mutex_unlock(&e->mu);
		if (closing)
			break;
		char lo[ETCD_NS_MAX + 2], hi[ETCD_NS_MAX + 2];
		snprintf(lo, sizeof(lo), "%s/", e->ns);
		snprintf(hi, sizeof(hi), "%s0", e->ns);
		json_t *body = json_pack("{s:{s:o,s:o,s:I}}", "create_request", "key",
					 b64_json(lo, strlen(lo)), "range_end",
					 b64_json(hi, strlen(hi)), "start_revision",
					 (json_int_t)from);
		char *text = json_dumps(body, JSON_COMPACT);
		json_decref(body);
		unsigned idx = atomic_load(&e->cur) % (unsigned)e->nendpoints;
		char url[512];
		snprintf(url, sizeof(url), "%s://%s/v3/watch", endpoint_scheme(e),
			 e->endpoints[idx]);
		CURL *c = curl_easy_init();
		struct watch_ctx w = {.e = e};
		setup_handle(e, c, url, text, hdrs, 0);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, &w);
		/* a dead member must not hold the stream: no bytes for 60 s is a reconnect (a write
		 * that waits over 1 s for its event kicks it sooner: feed_wait_for) */
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
		curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
		CURLcode cc = curl_easy_perform(c);
		curl_easy_cleanup(c);
		free(text);
		free(w.line.p);
		pthread_mutex_lock(&e->mu);
		closing = e->closing;
		pthread_mutex_unlock(&e->mu);
		if (closing)
			break;
		if (!w.restart) {
			if (!w.got || cc == CURLE_ABORTED_BY_CALLBACK)
				atomic_store(&e->cur, (idx + 1) % (unsigned)e->nendpoints);
			if (cc == CURLE_OPERATION_TIMEDOUT && w.got)
				log_debug("store: etcd watch idle for 60 s; reconnecting");
			else if (fails++ % 50 == 0)
				log_warn(
					"store: etcd watch ended, reconnecting endpoint=%s curl_rc=%d "
					"err=\"%s\"",
					e->endpoints[idx], (int)cc, curl_easy_strerror(cc));
			struct timespec ts = {0, 100 * 1000000L};
			nanosleep(&ts, NULL);
		} else {
			fails = 0;
		}
	}
	curl_slist_free_all(hdrs);
	return NULL;
}

/* Waits until the feed holds revision rev (a write of ours), at most 10 s. Called with mu held. */
static void feed_wait_for(struct store_etcd *e, int64_t rev)
{
	struct timespec dl;
	for (int round = 0; e->rev < rev && !e->closing && round < 10; round++) {
		store_deadline(&dl, 1000);
		while (e->rev < rev && !e->closing)
			if (pthread_cond_timedwait(&e->cond, &e->mu, &dl) == ETIMEDOUT)
				break;
		if (e->rev < rev)
			e->kick = 1; /* the stream's member may be stopped: try another */
	}
	if (e->rev < rev)
		log_warn("store: etcd watch has not delivered rev=%lld after 10 s", (long long)rev);
}

/* ---- ops ---- */

static int parse_size_opt(const char *v, size_t lo, size_t hi, size_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *end || errno || x < lo || x > hi)
		return -1;
	*out = (size_t)x;
	return 0;
}

static void etcd_free(struct store_etcd *e)
{
	for (size_t i = 0; i < e->nendpoints; i++)
		free(e->endpoints[i]);
	for (size_t i = 0; i < e->npool; i++)
		curl_easy_cleanup(e->pool[i]);
	for (size_t i = 0; i < e->nlog; i++)
		ev_free(&e->log[i]);
	free(e->log);
	free(e->cacert);
	free(e->cert);
	free(e->keyfile);
	pthread_mutex_destroy(&e->pool_mu);
	pthread_mutex_destroy(&e->mu);
	pthread_mutex_destroy(&e->fence_mu);
	pthread_cond_destroy(&e->cond);
	free(e);
}

static int parse_uri(struct store_etcd *e, const char *arg, char *err, size_t errlen)
{
	if (strncmp(arg, "//", 2) != 0)
		return fp_errf(FP_EINVAL, err, errlen, "etcd uri: expected etcd://host:port,...");
	arg += 2;
	size_t hl = strcspn(arg, "/?");
	if (hl == 0 || hl > 2048)
		return fp_errf(FP_EINVAL, err, errlen, "etcd uri: no endpoints");
	char hosts[2049];
	memcpy(hosts, arg, hl);
	hosts[hl] = 0;
	char *save = NULL;
	for (char *h = strtok_r(hosts, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
		if (e->nendpoints == ETCD_MAX_ENDPOINTS)
			return fp_errf(FP_EINVAL, err, errlen, "etcd uri: at most %d endpoints",
				       ETCD_MAX_ENDPOINTS);
		for (const char *p = h; *p; p++)
			if (!(*p == '.' || *p == ':' || *p == '-' || *p == '[' || *p == ']' ||
			      (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
			      (*p >= 'A' && *p <= 'Z')))
				return fp_errf(FP_EINVAL, err, errlen,
					       "etcd uri: bad endpoint \"%.64s\"", h);
		if (!strchr(h, ':') || strlen(h) > 300)
			return fp_errf(FP_EINVAL, err, errlen,
				       "etcd uri: endpoint \"%.64s\" needs host:port", h);
		e->endpoints[e->nendpoints++] = xstrdup(h);
	}
	if (!e->nendpoints)
		return fp_errf(FP_EINVAL, err, errlen, "etcd uri: no endpoints");
	arg += hl;
	snprintf(e->ns, sizeof(e->ns), "/fleetplane");
	if (*arg == '/') {
		size_t nl = strcspn(arg, "?");
		if (nl > ETCD_NS_MAX)
			return fp_errf(FP_EINVAL, err, errlen, "etcd uri: namespace over %d bytes",
				       ETCD_NS_MAX);
		for (size_t i = 1; i < nl; i++)
			if ((unsigned char)arg[i] <= 0x20 || (unsigned char)arg[i] >= 0x7f ||
			    arg[i] == ':')
				return fp_errf(FP_EINVAL, err, errlen, "etcd uri: bad namespace");
		memcpy(e->ns, arg, nl);
		e->ns[nl] = 0;
		while (nl > 1 && e->ns[nl - 1] == '/')
			e->ns[--nl] = 0;
		if (nl == 1)
			e->ns[0] = 0; /* "etcd://h/" : no namespace */
		arg += strcspn(arg, "?");
	}
	if (*arg != '?')
		return 0;
	char opts[2048];
	snprintf(opts, sizeof(opts), "%s", arg + 1);
	for (char *o = strtok_r(opts, "&", &save); o; o = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(o, '=');
		if (!eq)
			return fp_errf(FP_EINVAL, err, errlen, "etcd uri: option %.32s needs =", o);
		*eq++ = 0;
		size_t v = 0;
		if (strcmp(o, "max_txn_ops") == 0 &&
		    parse_size_opt(eq, 2, STORE_MAX_TXN_OPS, &v) == 0)
			e->max_txn_ops = v;
		else if (strcmp(o, "max_request_bytes") == 0 &&
			 parse_size_opt(eq, 4096, 1u << 30, &v) == 0)
			e->max_request_bytes = v;
		else if (strcmp(o, "timeout_ms") == 0 && parse_size_opt(eq, 100, 600000, &v) == 0)
			e->timeout_ms = (long)v;
		else if (strcmp(o, "cacert") == 0 && *eq)
			e->cacert = xstrdup(eq);
		else if (strcmp(o, "cert") == 0 && *eq)
			e->cert = xstrdup(eq);
		else if (strcmp(o, "key") == 0 && *eq)
			e->keyfile = xstrdup(eq);
		else
			return fp_errf(FP_EINVAL, err, errlen, "etcd uri: bad option %.32s=%.64s",
				       o, eq);
	}
	return 0;
}

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int etcd_open(const char *arg, struct store_impl **out, char *err, size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, curl_init_once);
	struct store_etcd *e = xcalloc(1, sizeof(*e));
	e->base.ops = &store_etcd_ops;
	e->max_txn_ops = ETCD_DEFAULT_TXN_OPS;
	e->max_request_bytes = ETCD_DEFAULT_REQ_BYTES;
	e->timeout_ms = 5000;
	pthread_mutex_init(&e->pool_mu, NULL);
	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->fence_mu, NULL);
	store_cond_init(&e->cond);
	int rc = parse_uri(e, arg, err, errlen);
	if (rc < 0) {
		etcd_free(e);
		return rc;
	}
	/* the current revision: where the feed starts */
	json_t *body = json_pack("{s:o,s:b}", "key", ekey(e, "/", 0), "count_only", 1);
	json_t *resp = NULL;
	rc = etcd_post(e, "/v3/kv/range", body, 1, &resp, err, errlen);
	json_decref(body);
	if (rc < 0) {
		etcd_free(e);
		return FP_EIO;
	}
	e->rev = header_rev(resp);
	e->floor = e->rev;
	json_decref(resp);
	if (pthread_create(&e->watcher, NULL, watch_main, e) != 0) {
		etcd_free(e);
		return fp_errf(FP_EIO, err, errlen, "etcd: cannot start the watch thread");
	}
	e->watcher_started = 1;
	*out = &e->base;
	return 0;
}

static void etcd_close(struct store_impl *b)
{
	struct store_etcd *e = to_etcd(b);
	pthread_mutex_lock(&e->mu);
	e->closing = 1;
	pthread_cond_broadcast(&e->cond);
	while (e->waiters > 0)
		pthread_cond_wait(&e->cond, &e->mu);
	pthread_mutex_unlock(&e->mu);
	if (e->watcher_started)
		pthread_join(e->watcher, NULL);
	etcd_free(e);
}

static int64_t etcd_revision(struct store_impl *b)
{
	struct store_etcd *e = to_etcd(b);
	pthread_mutex_lock(&e->mu);
	int64_t r = e->rev > e->acked ? e->rev : e->acked;
	pthread_mutex_unlock(&e->mu);
	return r;
}

static int64_t etcd_compacted(struct store_impl *b)
{
	struct store_etcd *e = to_etcd(b);
	pthread_mutex_lock(&e->mu);
	int64_t r = e->compacted > e->floor ? e->compacted : e->floor;
	pthread_mutex_unlock(&e->mu);
	return r;
}

static int etcd_get(struct store_impl *b, const char *key, struct store_kv *out)
{
	struct store_etcd *e = to_etcd(b);
	json_t *body = json_pack("{s:o}", "key", ekey(e, key, 0));
	json_t *resp = NULL;
	char err[256];
	int rc = etcd_post(e, "/v3/kv/range", body, 1, &resp, err, sizeof(err));
	json_decref(body);
	if (rc < 0) {
		log_debug("store: etcd get failed key=%s err=\"%s\"", key, err);
		return rc == FP_EPARSE ? FP_EIO : rc;
	}
	json_t *kvs = json_object_get(resp, "kvs");
	if (json_array_size(kvs) == 0)
		rc = FP_ENOTFOUND;
	else if (decode_kv(e, json_array_get(kvs, 0), out) < 0)
		rc = FP_EIO;
	json_decref(resp);
	return rc;
}

/* The data range of prefix: [lo, hi) as base64 JSON; 0 when no key can match. */
static int prefix_range(struct store_etcd *e, const char *prefix, json_t **lo, json_t **hi)
{
	if (!*prefix) {
		*lo = ekey(e, "/", 0);
		*hi = ekey(e, "0", 0);
		return 1;
	}
	if (prefix[0] != '/')
		return 0;
	char up[STORE_MAX_KEY + 2];
	store_prefix_upper(prefix, up);
	*lo = ekey(e, prefix, 0);
	*hi = ekey(e, up, 0);
	return 1;
}

static int etcd_list(struct store_impl *b, const char *prefix, const char *start_after,
		     size_t limit, struct store_kv **items, size_t *n, int64_t *rev, int *more)
{
	struct store_etcd *e = to_etcd(b);
	json_t *lo = NULL, *hi = NULL;
	if (!prefix_range(e, prefix, &lo, &hi)) {
		*rev = etcd_revision(b);
		return 0;
	}
	/* strictly after start_after: from start_after + NUL when that is past the prefix */
	char pk[ETCD_NS_MAX + STORE_MAX_KEY + 4];
	snprintf(pk, sizeof(pk), "%s%s", e->ns, *prefix ? prefix : "/");
	char sk[ETCD_NS_MAX + STORE_MAX_KEY + 4];
	snprintf(sk, sizeof(sk), "%s%s", e->ns, start_after);
	if (*start_after && strcmp(sk, pk) >= 0) {
		json_decref(lo);
		lo = ekey(e, start_after, 1);
	}
	json_t *body = json_pack("{s:o,s:o}", "key", lo, "range_end", hi);
	if (limit)
		json_object_set_new(body, "limit", json_integer((json_int_t)limit));
	json_t *resp = NULL;
	char err[256];
	int rc = etcd_post(e, "/v3/kv/range", body, 1, &resp, err, sizeof(err));
	json_decref(body);
	if (rc < 0) {
		log_debug("store: etcd list failed prefix=%s err=\"%s\"", prefix, err);
		return rc == FP_EPARSE ? FP_EIO : rc;
	}
	json_t *kvs = json_object_get(resp, "kvs");
	size_t cnt = json_array_size(kvs);
	struct store_kv *arr = cnt ? xcalloc(cnt, sizeof(*arr)) : NULL;
	size_t k = 0;
	for (size_t i = 0; i < cnt; i++)
		if (decode_kv(e, json_array_get(kvs, i), &arr[k]) == 0)
			k++;
	*items = arr;
	*n = k;
	*rev = header_rev(resp);
	*more = json_is_true(json_object_get(resp, "more"));
	json_decref(resp);
	return 0;
}

static int etcd_count(struct store_impl *b, const char *prefix, size_t *n)
{
	struct store_etcd *e = to_etcd(b);
	json_t *lo = NULL, *hi = NULL;
	if (!prefix_range(e, prefix, &lo, &hi))
		return 0;
	json_t *body = json_pack("{s:o,s:o,s:b}", "key", lo, "range_end", hi, "count_only", 1);
	json_t *resp = NULL;
	char err[256];
	int rc = etcd_post(e, "/v3/kv/range", body, 1, &resp, err, sizeof(err));
	json_decref(body);
	if (rc < 0)
		return rc == FP_EPARSE ? FP_EIO : rc;
	*n = (size_t)store_etcd_int(resp, "count");
	json_decref(resp);
	return 0;
}

static size_t etcd_max_txn_ops(struct store_impl *b)
{
	return to_etcd(b)->max_txn_ops - 1; /* one compare is the leader fence */
}

static int fence_take(struct store_etcd *e, char *key, size_t keylen, int64_t *rev)
{
	pthread_mutex_lock(&e->fence_mu);
	int mode = e->fence_mode;
	snprintf(key, keylen, "%s", e->fence_key);
	*rev = e->fence_rev;
	pthread_mutex_unlock(&e->fence_mu);
	if (mode == 1 && store_etcd_mono_ms() > atomic_load(&e->fence_deadline))
		return -1; /* the lease may be gone by now: do not even try */
	return mode;
}

static void fence_lost(struct store_etcd *e)
{
	void (*fn)(void *) = NULL;
	void *arg = NULL;
	pthread_mutex_lock(&e->fence_mu);
	if (e->fence_mode == 1) {
		fn = e->fence_lost;
		arg = e->fence_arg;
		e->fence_mode = -1;
	}
	pthread_mutex_unlock(&e->fence_mu);
	if (fn)
		fn(arg);
}

void store_etcd_fence(struct store_etcd *e, int mode, const char *key, int64_t create_rev,
		      void (*lost)(void *arg), void *arg)
{
	pthread_mutex_lock(&e->fence_mu);
	e->fence_mode = mode;
	snprintf(e->fence_key, sizeof(e->fence_key), "%s", key ? key : "");
	e->fence_rev = create_rev;
	e->fence_lost = lost;
	e->fence_arg = arg;
	pthread_mutex_unlock(&e->fence_mu);
}

void store_etcd_fence_deadline(struct store_etcd *e, int64_t deadline_ms)
{
	atomic_store(&e->fence_deadline, deadline_ms);
}

static json_t *cmp_new(json_t *key, const char *target, const char *result, const char *field,
		       int64_t v)
{
	return json_pack("{s:o,s:s,s:s,s:I}", "key", key, "target", target, "result", result, field,
			 (json_int_t)v);
}

/* Why the txn failed, from its failure branch (the fence key's and each op's key's state): the
 * store error with *failed_index, -1 the fence is lost, or 2 every expectation holds. */
static int txn_failure(struct store_etcd *e, const struct store_op *ops, size_t n, int fenced,
		       int64_t fence_rev, json_t *resp, size_t *failed_index)
{
	json_t *rs = json_object_get(resp, "responses");
	size_t off = 0;
	if (fenced) {
		json_t *kvs = json_object_get(json_object_get(json_array_get(rs, 0),
							      "response_range"),
					      "kvs");
		json_t *kv = json_array_get(kvs, 0);
		off = 1;
		if (!kv || store_etcd_int(kv, "create_revision") != fence_rev) {
			*failed_index = 0;
			return -1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		json_t *kvs = json_object_get(json_object_get(json_array_get(rs, off + i),
							      "response_range"),
					      "kvs");
		json_t *kv = json_array_get(kvs, 0);
		int64_t mod = kv ? store_etcd_int(kv, "mod_revision") - 1 : 0;
		const struct store_op *op = &ops[i];
		int rc = 0;
		if (op->type == STORE_OP_PUT) {
			if (op->expect == STORE_ABSENT && kv)
				rc = FP_EEXIST;
			else if (op->expect > 0 && (!kv || mod != op->expect))
				rc = FP_ECONFLICT;
		} else {
			if (!kv)
				rc = FP_ENOTFOUND;
			else if (op->expect > 0 && mod != op->expect)
				rc = FP_ECONFLICT;
		}
		if (rc) {
			*failed_index = i;
			return rc;
		}
	}
	*failed_index = 0;
	return 2; /* every op's expectation holds (not a store error code) */
}

/* Resolves a write whose outcome is unknown (etcd_post_until's *uncertain, or a refusal of a
 * pinned retry): reads the fence key and every op's key in one read-only Txn (linearizable, from
 * whichever member answers) and decides. Applied: every PUT's key holds its value at one
 * mod_revision W newer than the op's compare (CAS: its m; otherwise r0, an etcd revision
 * observed before the first send) and every DELETE's key is absent; *rev = W - 1 (a deletes-only
 * txn: the read's revision). Returns 1 applied; 0 not applied and every expectation holds:
 * pins[i] = the etcd mod_revision of op i's key (0 absent) to compare on in the retry, so that
 * a late landing of the first try makes the retry fail instead of applying twice; the store error
 * (FP_EEXIST, FP_ENOTFOUND, FP_ECONFLICT, with *failed_index) when an expectation fails; -1 the
 * fence is lost; FP_EIO when no member answered the read. */
static int txn_resolve(struct store_etcd *e, const struct store_op *ops, size_t n, int fenced,
		       const char *fkey, int64_t frev, int64_t r0, int64_t *pins, int64_t *rev,
		       size_t *failed_index)
{
	json_t *succ = json_array();
	if (fenced)
		json_array_append_new(succ,
				      json_pack("{s:{s:o,s:b}}", "request_range", "key",
						b64_json(fkey, strlen(fkey)), "keys_only", 1));
	for (size_t i = 0; i < n; i++)
		json_array_append_new(succ, json_pack("{s:{s:o}}", "request_range", "key",
						      ekey(e, ops[i].key, 0)));
	json_t *body = json_pack("{s:o}", "success", succ);
	json_t *resp = NULL;
	char err[256];
	int rc = etcd_post(e, "/v3/kv/txn", body, 1, &resp, err, sizeof(err));
	json_decref(body);
	if (rc < 0) {
		log_warn("store: etcd write outcome unknown and unresolved err=\"%s\"", err);
		return FP_EIO;
	}
	json_t *rs = json_object_get(resp, "responses");
	size_t off = fenced ? 1 : 0;
	int applied = 1, holds = 1;
	int64_t w = 0;
	*failed_index = 0;
	int hrc = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *kv = json_array_get(json_object_get(json_object_get(json_array_get(rs,
											   off + i),
									    "response_range"),
							    "kvs"),
					    0);
		const struct store_op *op = &ops[i];
		int64_t mod = kv ? store_etcd_int(kv, "mod_revision") : 0;
		pins[i] = mod;
		if (op->type == STORE_OP_PUT) {
			const char *v64 = kv ? json_string_value(json_object_get(kv, "value"))
					     : NULL;
			size_t vl = 0;
			char *v = kv ? (v64 ? store_etcd_unb64(v64, &vl) : xstrdup("")) : NULL;
			if (v && !v64)
				vl = 0;
			int64_t after = op->expect > 0 ? op->expect + 1 : r0;
			int same = v && vl == strlen(op->value) && memcmp(v, op->value, vl) == 0;
			free(v);
			if (!same || mod <= after || (w && mod != w))
				applied = 0;
			else
				w = mod;
			if (!hrc && op->expect == STORE_ABSENT && kv)
				hrc = FP_EEXIST;
			else if (!hrc && op->expect > 0 && (!kv || mod != op->expect + 1))
				hrc = FP_ECONFLICT;
		} else {
			if (kv)
				applied = 0;
			if (!hrc && !kv)
				hrc = FP_ENOTFOUND;
			else if (!hrc && op->expect > 0 && mod != op->expect + 1)
				hrc = FP_ECONFLICT;
		}
		if (hrc && holds) {
			holds = 0;
			*failed_index = i;
		}
	}
	if (applied) {
		*rev = w ? w - 1 : header_rev(resp);
		json_decref(resp);
		return 1;
	}
	if (fenced) {
		json_t *kv = json_array_get(json_object_get(json_object_get(json_array_get(rs, 0),
									    "response_range"),
							    "kvs"),
					    0);
		if (!kv || store_etcd_int(kv, "create_revision") != frev) {
			json_decref(resp);
			*failed_index = 0;
			return -1;
		}
	}
	json_decref(resp);
	return holds ? 0 : hrc;
}

static int etcd_txn(struct store_impl *b, const struct store_op *ops, size_t n, int64_t *rev,
		    size_t *failed_index)
{
	struct store_etcd *e = to_etcd(b);
	char fkey[ETCD_NS_MAX + 16];
	int64_t frev = 0;
	int mode = fence_take(e, fkey, sizeof(fkey), &frev);
	if (mode < 0)
		return FP_EAGAIN; /* not the leader (a standby, or a lease past its deadline) */
	int fenced = mode == 1;
	/* r0: an etcd revision every write of ours sent from here on is newer than */
	pthread_mutex_lock(&e->mu);
	int64_t r0 = (e->rev > e->acked ? e->rev : e->acked) + 1;
	pthread_mutex_unlock(&e->mu);
	json_t *cmp = json_array(), *succ = json_array(), *fail = json_array();
	size_t bytes = 64;
	if (fenced) {
		json_array_append_new(cmp, cmp_new(b64_json(fkey, strlen(fkey)), "CREATE", "EQUAL",
						   "create_revision", frev));
		json_array_append_new(fail,
				      json_pack("{s:{s:o,s:b}}", "request_range", "key",
						b64_json(fkey, strlen(fkey)), "keys_only", 1));
	}
	for (size_t i = 0; i < n; i++) {
		const struct store_op *op = &ops[i];
		size_t kl = strlen(e->ns) + strlen(op->key);
		bytes += 3 * (kl + 24);
		if (op->type == STORE_OP_PUT) {
			size_t vl = strlen(op->value);
			bytes += vl + 8;
			if (op->expect == STORE_ABSENT)
				json_array_append_new(cmp, cmp_new(ekey(e, op->key, 0), "CREATE",
								   "EQUAL", "create_revision", 0));
			else if (op->expect > 0)
				json_array_append_new(cmp,
						      cmp_new(ekey(e, op->key, 0), "MOD", "EQUAL",
							      "mod_revision", op->expect + 1));
			else /* STORE_ANY: not written since r0, so a late first try never lands
			      * after a retry (a refusal of this compare alone is resolved) */
				json_array_append_new(cmp, cmp_new(ekey(e, op->key, 0), "MOD",
								   "LESS", "mod_revision", r0 + 1));
			json_array_append_new(succ, json_pack("{s:{s:o,s:o}}", "request_put", "key",
							      ekey(e, op->key, 0), "value",
							      b64_json(op->value, vl)));
		} else {
			if (op->expect > 0)
				json_array_append_new(cmp,
						      cmp_new(ekey(e, op->key, 0), "MOD", "EQUAL",
							      "mod_revision", op->expect + 1));
			else
				json_array_append_new(cmp,
						      cmp_new(ekey(e, op->key, 0), "CREATE",
							      "GREATER", "create_revision", 0));
			json_array_append_new(succ, json_pack("{s:{s:o}}", "request_delete_range",
							      "key", ekey(e, op->key, 0)));
		}
		json_array_append_new(fail, json_pack("{s:{s:o,s:b}}", "request_range", "key",
						      ekey(e, op->key, 0), "keys_only", 1));
	}
	if (bytes > e->max_request_bytes) {
		json_decref(cmp);
		json_decref(succ);
		json_decref(fail);
		log_warn("store: etcd transaction refused: %zu ops of about %zu bytes pass etcd's "
			 "request limit of %zu bytes (max_request_bytes)",
			 n, bytes, e->max_request_bytes);
		*failed_index = 0;
		return FP_ETOOBIG;
	}
	int64_t *pins = NULL;
	int rc = FP_EIO, unsure_seen = 0;
	int64_t r = 0;
	json_t *resp = NULL;
	for (int attempt = 0;; attempt++) {
		json_t *c = cmp;
		if (pins) { /* a retry after an unknown outcome: compare on the state resolved */
			c = json_array();
			if (fenced)
				json_array_append(c, json_array_get(cmp, 0));
			for (size_t i = 0; i < n; i++)
				json_array_append_new(c, pins[i] ? cmp_new(ekey(e, ops[i].key, 0),
									   "MOD", "EQUAL",
									   "mod_revision", pins[i])
								 : cmp_new(ekey(e, ops[i].key, 0),
									   "CREATE", "EQUAL",
									   "create_revision", 0));
		} else {
			json_incref(c);
		}
		json_t *body = json_pack("{s:o,s:O,s:O}", "compare", c, "success", succ, "failure",
					 fail);
		char err[256];
		int unsure = 0;
		rc = etcd_post_until(e, "/v3/kv/txn", body, 0, 0, &resp, &unsure, err, sizeof(err));
		json_decref(body);
		if (rc == 0 && json_is_true(json_object_get(resp, "succeeded"))) {
			r = header_rev(resp);
			break;
		}
		if (rc < 0 && !unsure) {
			log_warn("store: etcd txn failed ops=%zu err=\"%s\"", n, err);
			if (rc == FP_ETOOBIG)
				log_warn("store: etcd refused a transaction ops=%zu err=\"%s\"", n,
					 err);
			rc = rc == FP_EPARSE || rc == FP_ECOMPACTED ? FP_EIO : rc;
			goto out;
		}
		if (rc == 0 && !unsure_seen) { /* refused, and no earlier try can have landed */
			rc = txn_failure(e, ops, n, fenced, frev, resp, failed_index);
			json_decref(resp);
			resp = NULL;
			if (rc != 2)
				goto refused;
			/* 2: only a STORE_ANY put's "not written since r0" failed: resolve, pin */
		}
		/* the outcome of this try (unsure) or of an earlier one (a pinned retry refused) is
		 * unknown: resolve it before trying again or answering */
		json_decref(resp);
		resp = NULL;
		if (unsure)
			log_warn(
				"store: etcd write outcome unknown, resolving ops=%zu try=%d err=\"%s\"",
				n, attempt + 1, err);
		unsure_seen = 1;
		if (!pins)
			pins = xcalloc(n ? n : 1, sizeof(*pins));
		rc = txn_resolve(e, ops, n, fenced, fkey, frev, r0, pins, &r, failed_index);
		if (rc == 1) {
			log_info("store: etcd write resolved: applied rev=%lld", (long long)r);
			break;
		}
		if (rc < 0) /* a store error, FP_EIO, or -1: the fence is lost */
			goto refused;
		if (attempt >= 8) {
			log_warn("store: etcd write not applied, giving up tries=%d", attempt + 1);
			rc = FP_EIO;
			goto out;
		}
		log_info("store: etcd write resolved: not applied, trying again");
	}
	json_decref(resp);
	resp = NULL;
	pthread_mutex_lock(&e->mu);
	if (r > e->acked) {
		e->acked = r;
		pthread_cond_broadcast(&e->cond);
	}
	pthread_mutex_unlock(&e->mu);
	*rev = r;
	rc = 0;
	goto out;
refused:
	if (rc == -1) {
		log_warn("store: etcd write refused: this process no longer holds the "
			 "leader key (fence)");
		fence_lost(e);
		rc = FP_EAGAIN;
	}
out:
	free(pins);
	json_decref(cmp);
	json_decref(succ);
	json_decref(fail);
	return rc;
}

static int etcd_changes(struct store_impl *b, const char *prefix, int64_t after_rev, size_t max,
			struct store_event **evs, size_t *n)
{
	struct store_etcd *e = to_etcd(b);
	pthread_mutex_lock(&e->mu);
	/* read-your-writes: the feed first catches up with our own acknowledged writes */
	if (e->rev < e->acked && after_rev < e->acked)
		feed_wait_for(e, e->acked);
	int64_t fl = e->compacted > e->floor ? e->compacted : e->floor;
	if (after_rev < fl) {
		pthread_mutex_unlock(&e->mu);
		return FP_ECOMPACTED;
	}
	size_t lo = 0, hi = e->nlog;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->log[mid].rev <= after_rev)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct store_event *out = NULL;
	size_t k = 0, alloc = 0;
	int64_t last = -1;
	for (size_t i = lo; i < e->nlog; i++) {
		struct etcd_ev *v = &e->log[i];
		if (k >= max && v->rev != last)
			break;
		if (!store_has_prefix(v->key, prefix))
			continue;
		ALLOC_GROW(out, k + 1, alloc);
		out[k].revision = v->rev;
		out[k].type = v->type;
		out[k].key = xstrdup(v->key);
		out[k].value = v->value ? xstrdup(v->value) : NULL;
		out[k].create_revision = v->create_rev;
		last = v->rev;
		k++;
	}
	pthread_mutex_unlock(&e->mu);
	*evs = out;
	*n = k;
	return 0;
}

static int etcd_wait(struct store_impl *b, int64_t after_rev, int timeout_ms)
{
	struct store_etcd *e = to_etcd(b);
	struct timespec dl;
	if (timeout_ms >= 0)
		store_deadline(&dl, timeout_ms);
	int rc = 0;
	pthread_mutex_lock(&e->mu);
	e->waiters++;
	while (!e->closing && e->rev <= after_rev && e->acked <= after_rev) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&e->cond, &e->mu);
		} else if (pthread_cond_timedwait(&e->cond, &e->mu, &dl) == ETIMEDOUT) {
			rc = e->rev > after_rev || e->acked > after_rev ? 0 : FP_ETIMEDOUT;
			break;
		}
	}
	if (rc == 0 && e->closing && e->rev <= after_rev && e->acked <= after_rev)
		rc = FP_ECLOSED;
	e->waiters--;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->mu);
	return rc;
}

static int etcd_compact(struct store_impl *b, int64_t rev)
{
	struct store_etcd *e = to_etcd(b);
	pthread_mutex_lock(&e->mu);
	int64_t cur = e->rev > e->acked ? e->rev : e->acked, done = e->compacted;
	if (rev > e->rev && rev <= e->acked)
		feed_wait_for(e, rev); /* trim the feed only past what it holds */
	pthread_mutex_unlock(&e->mu);
	if (rev > cur)
		return FP_EINVAL;
	if (rev <= done)
		return 0;
	json_t *body = json_pack("{s:I}", "revision", (json_int_t)(rev + 1));
	json_t *resp = NULL;
	char err[256];
	int rc = etcd_post(e, "/v3/kv/compaction", body, 1, &resp, err, sizeof(err));
	json_decref(body);
	json_decref(resp);
	if (rc < 0 && rc != FP_ECOMPACTED) { /* compacted already (by another process): fine */
		log_debug("store: etcd compaction failed rev=%lld err=\"%s\"", (long long)rev, err);
		return FP_EIO;
	}
	pthread_mutex_lock(&e->mu);
	if (rev > e->compacted) {
		e->compacted = rev;
		log_trim(e, rev);
	}
	pthread_mutex_unlock(&e->mu);
	return 0;
}

const struct store_ops store_etcd_ops = {
	.scheme = "etcd",
	.open = etcd_open,
	.close = etcd_close,
	.revision = etcd_revision,
	.compacted_revision = etcd_compacted,
	.get = etcd_get,
	.txn = etcd_txn,
	.list = etcd_list,
	.count = etcd_count,
	.changes = etcd_changes,
	.wait = etcd_wait,
	.compact = etcd_compact,
	.max_txn_ops = etcd_max_txn_ops,
};

struct store_etcd *store_etcd_of(struct store *s)
{
	struct store_impl *b = store_impl_get(s);
	return b && b->ops == &store_etcd_ops ? to_etcd(b) : NULL;
}
