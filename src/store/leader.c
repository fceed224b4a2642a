/* leader.c - leader election on an etcd lease with fenced writes (leader.h). One thread per
 * process: as a standby it reads the leader key every 250 ms and, when it is absent, grants a
 * lease and creates the key with it in one create-if-absent Txn; as the leader it renews the
 * lease every ttl/4 and moves the fenced stores' local deadline to (send time of the last
 * renewal that succeeded) + ttl - 0.6 s, which is before etcd can expire the lease (etcd counts
 * the TTL from when it received the renewal). Gateway calls and their traps (keepalive on an
 * expired lease answers 200 without TTL) are from ../shared/recipes/services.md §1. */
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
#include "base/metrics.h"
#include "store/leader.h"
#include "store/store_etcd_int.h"
#include "base/banned.h"

#define LEADER_MAX_FENCED 4
#define LEADER_POLL_MS 250

struct leader {
	struct store_etcd *e;
	char id[256];
	char key[96]; /* raw etcd key <ns>:leader */
	int ttl_s;
	void (*lost)(void *arg, const char *why);
	void *arg;

	pthread_mutex_t mu;
	pthread_cond_t cond;
	int stop;
	int leading;
	int lost_called;
	int64_t lease;
	int64_t create_rev; /* etcd create_revision of our key */
	int64_t deadline_ms;
	char holder[256];
	struct store_etcd *fenced[LEADER_MAX_FENCED];
	size_t nfenced;
	pthread_t th;
};

static struct metric_family *m_is_leader, *m_leader;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void leader_metrics_init(void)
{
	m_is_leader = metrics_register(METRIC_GAUGE, "fleetplane_leader_is_leader",
				       "1 while this process is the leader of its etcd store.", "",
				       NULL, 0);
	m_leader = metrics_register(METRIC_GAUGE, "fleetplane_leader",
				    "1 for the leader this process sees (its API URL).", "leader",
				    NULL, 0);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void set_holder(struct leader *l, const char *h)
{
	pthread_mutex_lock(&l->mu);
	if (strcmp(l->holder, h) != 0) {
		if (*l->holder)
			metric_set(m_leader, (const char *const[]){l->holder}, 0);
		snprintf(l->holder, sizeof(l->holder), "%s", h);
		if (*h)
			metric_set(m_leader, (const char *const[]){h}, 1);
		log_info("leader: the leader changed leader=%s", *h ? h : "(none)");
	}
	pthread_mutex_unlock(&l->mu);
}

static json_t *b64j(const char *s)
{
	char *b = store_etcd_b64(s, strlen(s));
	json_t *j = json_string(b);
	free(b);
	return j;
}

/* Steps down once: refuses the fenced stores' writes and tells the owner. */
static void step_down(struct leader *l, const char *why)
{
	pthread_mutex_lock(&l->mu);
	int call = l->leading && !l->lost_called;
	l->leading = 0;
	if (call)
		l->lost_called = 1;
	for (size_t i = 0; i < l->nfenced; i++)
		store_etcd_fence(l->fenced[i], -1, NULL, 0, NULL, NULL);
	pthread_mutex_unlock(&l->mu);
	metric_set(m_is_leader, NULL, 0);
	if (call) {
		log_warn("leader: lost leadership err=\"%s\"", why);
		if (l->lost)
			l->lost(l->arg, why);
	}
}

static void fence_lost_cb(void *arg)
{
	step_down(arg, "a write was refused: another process holds the leader key");
}

static void fence_one(struct leader *l, struct store_etcd *e)
{
	store_etcd_fence_deadline(e, l->deadline_ms);
	store_etcd_fence(e, 1, l->key, l->create_rev, fence_lost_cb, l);
}

/* One campaign round: read the key; create it with a new lease when absent. */
static void campaign(struct leader *l)
{
	char err[256];
	json_t *resp = NULL;
	json_t *body = json_pack("{s:o}", "key", b64j(l->key));
	int rc = store_etcd_call(l->e, "/v3/kv/range", body, 0, &resp, err, sizeof(err));
	json_decref(body);
	if (rc < 0) {
		static int64_t last_log;
		if (store_etcd_mono_ms() - last_log > 5000) {
			log_warn("leader: cannot read the leader key err=\"%s\"", err);
			last_log = store_etcd_mono_ms();
		}
		return;
	}
	json_t *kv = json_array_get(json_object_get(resp, "kvs"), 0);
	if (kv) {
		const char *v64 = json_string_value(json_object_get(kv, "value"));
		char *v = v64 ? store_etcd_unb64(v64, NULL) : NULL;
		set_holder(l, v ? v : "");
		free(v);
		json_decref(resp);
		return;
	}
	json_decref(resp);
	int64_t t0 = store_etcd_mono_ms();
	body = json_pack("{s:I}", "TTL", (json_int_t)l->ttl_s);
	rc = store_etcd_call(l->e, "/v3/lease/grant", body, 0, &resp, err, sizeof(err));
	json_decref(body);
	if (rc < 0)
		return;
	int64_t lease = store_etcd_int(resp, "ID");
	json_decref(resp);
	if (!lease)
		return;
	char lease_s[32];
	snprintf(lease_s, sizeof(lease_s), "%lld", (long long)lease);
	body = json_pack("{s:[{s:o,s:s,s:s,s:s}],s:[{s:{s:o,s:o,s:s}}]}", "compare", "key",
			 b64j(l->key), "target", "CREATE", "result", "EQUAL", "create_revision",
			 "0", "success", "request_put", "key", b64j(l->key), "value", b64j(l->id),
			 "lease", lease_s);
	rc = store_etcd_call(l->e, "/v3/kv/txn", body, 0, &resp, err, sizeof(err));
	json_decref(body);
	if (rc == 0 && json_is_true(json_object_get(resp, "succeeded"))) {
		int64_t rev = store_etcd_int(json_object_get(resp, "header"), "revision");
		pthread_mutex_lock(&l->mu);
		l->lease = lease;
		l->create_rev = rev;
		l->deadline_ms = t0 + (int64_t)l->ttl_s * 1000 - 600;
		l->leading = 1;
		for (size_t i = 0; i < l->nfenced; i++)
			fence_one(l, l->fenced[i]);
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->mu);
		json_decref(resp);
		metric_set(m_is_leader, NULL, 1);
		log_info("leader: elected id=%s lease=%lld key_revision=%lld ttl_s=%d", l->id,
			 (long long)lease, (long long)rev, l->ttl_s);
		set_holder(l, l->id);
		return;
	}
	json_decref(resp);
	/* lost the race (or the outcome is unknown): give the lease back */
	body = json_pack("{s:s}", "ID", lease_s);
	if (store_etcd_call(l->e, "/v3/lease/revoke", body, 0, &resp, err, sizeof(err)) == 0)
		json_decref(resp);
	json_decref(body);
}

/* One renewal while leading. */
static void renew(struct leader *l)
{
	char err[256], lease_s[32];
	snprintf(lease_s, sizeof(lease_s), "%lld", (long long)l->lease);
	int64_t t0 = store_etcd_mono_ms();
	json_t *body = json_pack("{s:s}", "ID", lease_s);
	json_t *resp = NULL;
	int rc = store_etcd_call(l->e, "/v3/lease/keepalive", body, l->deadline_ms, &resp, err,
				 sizeof(err));
	json_decref(body);
	if (rc == 0) {
		int64_t ttl = store_etcd_int(json_object_get(resp, "result"), "TTL");
		json_decref(resp);
		if (ttl <= 0) {
			step_down(l, "the lease expired in etcd (keepalive answered without TTL)");
			return;
		}
		pthread_mutex_lock(&l->mu);
		l->deadline_ms = t0 + (int64_t)l->ttl_s * 1000 - 600;
		for (size_t i = 0; i < l->nfenced; i++)
			store_etcd_fence_deadline(l->fenced[i], l->deadline_ms);
		pthread_mutex_unlock(&l->mu);
		return;
	}
	pthread_mutex_lock(&l->mu);
	int64_t dl = l->deadline_ms;
	pthread_mutex_unlock(&l->mu);
	if (store_etcd_mono_ms() >= dl) {
		char why[400];
		snprintf(why, sizeof(why),
			 "the lease could not be renewed within %d ms (etcd unreachable or without "
			 "quorum: %s); stopped before etcd can expire it",
			 l->ttl_s * 1000 - 600, err);
		step_down(l, why);
	}
}

static void *leader_main(void *arg)
{
	struct leader *l = arg;
	for (;;) {
		pthread_mutex_lock(&l->mu);
		int stop = l->stop, leading = l->leading, lost = l->lost_called;
		int64_t dl = l->deadline_ms;
		pthread_mutex_unlock(&l->mu);
		if (stop)
			break;
		if (leading) {
			if (store_etcd_mono_ms() >= dl) {
				step_down(l, "the renewal deadline passed (the process was paused "
					     "or etcd is slow); stopped before etcd can expire the "
					     "lease");
				continue;
			}
			renew(l);
			sleep_ms(l->ttl_s * 1000 / 4);
		} else if (!lost) {
			campaign(l);
			pthread_mutex_lock(&l->mu);
			leading = l->leading;
			pthread_mutex_unlock(&l->mu);
			if (!leading)
				sleep_ms(LEADER_POLL_MS);
		} else {
			sleep_ms(LEADER_POLL_MS); /* deposed: the owner restarts */
		}
	}
	return NULL;
}

int leader_new(struct store *s, const struct leader_config *cfg, struct leader **out, char *err,
	       size_t errlen)
{
	*out = NULL;
	struct store_etcd *e = store_etcd_of(s);
	if (!e)
		return fp_errf(FP_EUNSUPPORTED, err, errlen,
			       "leader election needs an etcd store (--store etcd://...)");
	if (!cfg->id || !*cfg->id || strlen(cfg->id) > 255)
		return fp_errf(FP_EINVAL, err, errlen, "leader: id must be 1..255 bytes");
	if (cfg->ttl_s < 2 || cfg->ttl_s > 60)
		return fp_errf(FP_EINVAL, err, errlen, "leader: ttl must be 2..60 s");
	pthread_once(&metrics_once, leader_metrics_init);
	struct leader *l = xcalloc(1, sizeof(*l));
	l->e = e;
	snprintf(l->id, sizeof(l->id), "%s", cfg->id);
	snprintf(l->key, sizeof(l->key), "%s:leader", store_etcd_namespace(e));
	l->ttl_s = cfg->ttl_s;
	l->lost = cfg->lost;
	l->arg = cfg->arg;
	pthread_mutex_init(&l->mu, NULL);
	store_cond_init(&l->cond);
	metric_set(m_is_leader, NULL, 0);
	if (pthread_create(&l->th, NULL, leader_main, l) != 0) {
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cond);
		free(l);
		return fp_errf(FP_EIO, err, errlen, "leader: cannot start its thread");
	}
	*out = l;
	return 0;
}

int leader_wait(struct leader *l, int timeout_ms)
{
	struct timespec dl;
	store_deadline(&dl, timeout_ms);
	int rc = 0;
	pthread_mutex_lock(&l->mu);
	while (!l->leading)
		if (pthread_cond_timedwait(&l->cond, &l->mu, &dl) == ETIMEDOUT) {
			rc = l->leading ? 0 : FP_ETIMEDOUT;
			break;
		}
	pthread_mutex_unlock(&l->mu);
	return rc;
}

int leader_is_leader(struct leader *l)
{
	pthread_mutex_lock(&l->mu);
	int r = l->leading;
	pthread_mutex_unlock(&l->mu);
	return r;
}

void leader_holder(struct leader *l, char *buf, size_t len)
{
	pthread_mutex_lock(&l->mu);
	snprintf(buf, len, "%s", l->holder);
	pthread_mutex_unlock(&l->mu);
}

int leader_fence(struct leader *l, struct store *s)
{
	struct store_etcd *e = store_etcd_of(s);
	if (!e)
		return FP_EUNSUPPORTED;
	pthread_mutex_lock(&l->mu);
	int rc = 0;
	if (!l->leading)
		rc = FP_EAGAIN;
	else if (l->nfenced == LEADER_MAX_FENCED)
		rc = FP_EINVAL;
	else {
		l->fenced[l->nfenced++] = e;
		fence_one(l, e);
	}
	pthread_mutex_unlock(&l->mu);
	return rc;
}

void leader_free(struct leader *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->th, NULL);
	if (l->leading && l->lease) {
		char lease_s[32], err[128];
		snprintf(lease_s, sizeof(lease_s), "%lld", (long long)l->lease);
		json_t *body = json_pack("{s:s}", "ID", lease_s), *resp = NULL;
		if (store_etcd_call(l->e, "/v3/lease/revoke", body, 0, &resp, err, sizeof(err)) ==
		    0)
			json_decref(resp);
		json_decref(body);
		log_info("leader: resigned id=%s", l->id);
	}
	/* the fenced stores are not touched: their owners may have closed them already */
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cond);
	free(l);
}
