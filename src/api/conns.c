/* conns.c - the API's connection guard (see conns.h): per-client and total limits with eviction
 * of the oldest half-open connection, deadlines per request phase enforced by a reaper thread,
 * and one warning per misbehaving client per interval.
 *
 * Records: one struct conn_rec per open connection, in accept order on one list (the eviction
 * scan walks it from the oldest), and one struct client per client address with open
 * connections or counts not yet logged, in a base/hmap. Both live under one mutex. A record is
 * made when libmicrohttpd announces the connection (NOTIFY_STARTED) and freed when it announces
 * its end (NOTIFY_CLOSED), which it does before it closes the socket (daemon.c 0.9.75,
 * MHD_cleanup_connections): so a shutdown(2) made under the mutex always reaches the socket the
 * record names, never a descriptor number the kernel has handed to someone else. */
#include "api/conns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/alloc.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/memtrim.h"
#include "base/metrics.h"
#include "base/banned.h"

#define LOG_INTERVAL_NS (10LL * 1000000000)
#define REAP_TICK_MS 250
#define FD_OVERHEAD 256    /* descriptors serve needs besides the API's connections */
#define CLIENTS_EXTRA 1024 /* client records kept only for their counts, at most */
#define CLIENT_KEY_MAX (INET6_ADDRSTRLEN + 1)

enum drop_reason {
	DROP_PER_CLIENT,
	DROP_TOTAL,
	DROP_HEADER_TIMEOUT,
	DROP_BODY_TIMEOUT,
	DROP_EVICTED,
	DROP_N
};
static const char *const drop_names[DROP_N] = {"per_client", "total", "header_timeout",
					       "body_timeout", "evicted"};

struct client {
	char key[CLIENT_KEY_MAX];
	unsigned open;
	unsigned long pend[DROP_N]; /* drops not logged yet */
	int64_t last_log_ns;        /* 0 = never logged */
};

struct conn_rec {
	struct conn_rec *prev, *next;
	struct client *cl;
	int fd;
	enum api_conn_phase phase;
	int64_t since_ns;    /* accepted, or the phase began */
	int64_t deadline_ns; /* 0 = none */
	int closing;         /* shut down by the guard, not closed yet */
};

struct api_conns {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct api_conn_limits lim;
	struct conn_rec *head, *tail;
	unsigned open;    /* records */
	unsigned closing; /* records shut down, not closed yet */
	struct hmap clients;
	struct client other; /* counts of clients beyond the table's cap */
	unsigned long dropped[DROP_N];
	struct metric_family *m_open, *m_dropped;
	int stop;
	pthread_t reaper;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void api_conns_resolve(const struct api_conn_limits *in, struct api_conn_limits *out)
{
	static const struct api_conn_limits zero;
	*out = in ? *in : zero;
	if (!out->max_connections)
		out->max_connections = API_CONN_DEFAULT_MAX;
	if (!out->per_client)
		out->per_client = API_CONN_DEFAULT_PER_CLIENT;
	if (!out->header_timeout_s)
		out->header_timeout_s = API_CONN_DEFAULT_HEADER_S;
	if (!out->body_timeout_s)
		out->body_timeout_s = API_CONN_DEFAULT_BODY_S;
	if (!out->idle_timeout_s)
		out->idle_timeout_s = API_CONN_DEFAULT_IDLE_S;
}

static unsigned reserve_of(unsigned max)
{
	unsigned r = max / 8;
	return r < 32 ? 32 : r;
}

unsigned api_conns_mhd_limit(const struct api_conn_limits *resolved)
{
	return resolved->max_connections + reserve_of(resolved->max_connections);
}

unsigned api_conns_fit_fds(unsigned mhd_limit, unsigned *max_connections)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return mhd_limit;
	rlim_t need = (rlim_t)mhd_limit + FD_OVERHEAD;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		struct rlimit nl = rl;
		nl.rlim_cur = (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) ? need
										    : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
			rl = nl;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return mhd_limit;
	unsigned fits = rl.rlim_cur > FD_OVERHEAD + 48 ? (unsigned)(rl.rlim_cur - FD_OVERHEAD) : 48;
	unsigned max = fits - reserve_of(fits);
	if (max < 16)
		max = 16;
	log_warn("api connection limit lowered to fit the open files limit max_connections=%u "
		 "wanted=%u nofile=%llu",
		 max, *max_connections, (unsigned long long)rl.rlim_cur);
	*max_connections = max;
	return max + reserve_of(max);
}

/* ---------------------------------------------------------------- clients and drop counts */

static void client_key(const struct sockaddr *a, char *out)
{
	out[0] = 0;
	if (!a)
		return;
	if (a->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, out, CLIENT_KEY_MAX);
	else if (a->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, out,
			  CLIENT_KEY_MAX);
	if (!out[0])
		snprintf(out, CLIENT_KEY_MAX, "unknown");
}

/* The client record of key, made if absent (or the shared "other" one once the table holds
 * more than the connection limit plus CLIENTS_EXTRA). Locked. */
static struct client *client_get(struct api_conns *c, const char *key, int make)
{
	struct client *cl = hmap_get(&c->clients, key);
	if (cl || !make)
		return cl;
	if (c->clients.count >= api_conns_mhd_limit(&c->lim) + CLIENTS_EXTRA)
		return &c->other;
	cl = xcalloc(1, sizeof(*cl));
	snprintf(cl->key, sizeof(cl->key), "%s", key);
	hmap_put(&c->clients, cl->key, cl);
	return cl;
}

static int client_pending(const struct client *cl)
{
	for (int i = 0; i < DROP_N; i++)
		if (cl->pend[i])
			return 1;
	return 0;
}

static void client_log(struct client *cl, int64_t now)
{
	log_warn("api client misbehaves client=%s refused_per_client=%lu refused_total=%lu "
		 "header_timeout=%lu body_timeout=%lu evicted=%lu open=%u window_s=%lld",
		 cl->key, cl->pend[DROP_PER_CLIENT], cl->pend[DROP_TOTAL],
		 cl->pend[DROP_HEADER_TIMEOUT], cl->pend[DROP_BODY_TIMEOUT], cl->pend[DROP_EVICTED],
		 cl->open, (long long)(LOG_INTERVAL_NS / 1000000000));
	memset(cl->pend, 0, sizeof(cl->pend));
	cl->last_log_ns = now;
}

/* Counts one drop of reason against cl: a metric at once, a log line at most once per
 * interval per client (the reaper logs what is left when the interval ends). Locked. */
static void drop_note(struct api_conns *c, struct client *cl, enum drop_reason why, int64_t now)
{
	c->dropped[why]++;
	const char *labels[1] = {drop_names[why]};
	metric_add(c->m_dropped, labels, 1);
	cl->pend[why]++;
	if (!cl->last_log_ns || now - cl->last_log_ns >= LOG_INTERVAL_NS)
		client_log(cl, now);
}

/* Logs what is pending past its interval; forgets clients with nothing open or pending. */
static void clients_sweep(struct api_conns *c, int64_t now)
{
	for (struct hmap_iter it = hmap_iter_start(&c->clients); hmap_iter_next(&it);) {
		struct client *cl = it.e->value;
		if (client_pending(cl) && now - cl->last_log_ns >= LOG_INTERVAL_NS)
			client_log(cl, now);
		if (!cl->open && !client_pending(cl) &&
		    (!cl->last_log_ns || now - cl->last_log_ns >= LOG_INTERVAL_NS)) {
			hmap_remove(&c->clients, cl->key);
			free(cl);
		}
	}
	if (client_pending(&c->other) && now - c->other.last_log_ns >= LOG_INTERVAL_NS)
		client_log(&c->other, now);
}

/* ---------------------------------------------------------------- records */

/* Shuts rec's socket down (libmicrohttpd then closes it) and counts why. Locked. */
static void rec_close(struct api_conns *c, struct conn_rec *rec, enum drop_reason why, int64_t now)
{
	if (rec->closing)
		return;
	rec->closing = 1;
	c->closing++;
	if (rec->fd >= 0)
		shutdown(rec->fd, SHUT_RDWR);
	drop_note(c, rec->cl, why, now);
}

/* The connection to close for a newcomer when the total is reached: the oldest one still
 * sending its request, else the longest-idle keep-alive one, else NULL. Locked. */
static struct conn_rec *victim(struct api_conns *c)
{
	struct conn_rec *idle = NULL;
	for (struct conn_rec *r = c->head; r; r = r->next) {
		if (r->closing)
			continue;
		if (r->phase == API_CONN_NEW || r->phase == API_CONN_HEADERS ||
		    r->phase == API_CONN_BODY)
			return r;
		if (r->phase == API_CONN_IDLE && (!idle || r->since_ns < idle->since_ns))
			idle = r;
	}
	return idle;
}

int api_conns_admit(struct api_conns *c, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)addrlen;
	char key[CLIENT_KEY_MAX];
	client_key(addr, key);
	int64_t now = now_ns();
	int ok = 1;
	pthread_mutex_lock(&c->mu);
	struct client *cl = client_get(c, key, 0);
	if (!c->lim.no_per_client && cl && cl->open >= c->lim.per_client) {
		drop_note(c, cl, DROP_PER_CLIENT, now);
		ok = 0;
	} else if (c->open - c->closing >= c->lim.max_connections) {
		struct conn_rec *v = victim(c);
		if (v) {
			rec_close(c, v, DROP_EVICTED, now);
		} else {
			drop_note(c, client_get(c, key, 1), DROP_TOTAL, now);
			ok = 0;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return ok;
}

void api_conns_started(struct api_conns *c, struct MHD_Connection *conn, void **socket_context)
{
	const union MHD_ConnectionInfo
		*ia = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const union MHD_ConnectionInfo
		*ifd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	char key[CLIENT_KEY_MAX];
	client_key(ia ? ia->client_addr : NULL, key);
	struct conn_rec *rec = xcalloc(1, sizeof(*rec));
	rec->fd = ifd ? (int)ifd->connect_fd : -1;
	rec->phase = API_CONN_NEW;
	rec->since_ns = now_ns();
	rec->deadline_ns = rec->since_ns + (int64_t)c->lim.header_timeout_s * 1000000000;
	pthread_mutex_lock(&c->mu);
	rec->cl = client_get(c, key, 1);
	rec->cl->open++;
	rec->prev = c->tail;
	if (c->tail)
		c->tail->next = rec;
	else
		c->head = rec;
	c->tail = rec;
	c->open++;
	metric_set(c->m_open, NULL, c->open);
	pthread_mutex_unlock(&c->mu);
	*socket_context = rec;
}

void api_conns_closed(struct api_conns *c, void **socket_context)
{
	struct conn_rec *rec = *socket_context;
	if (!rec)
		return;
	*socket_context = NULL;
	pthread_mutex_lock(&c->mu);
	if (rec->prev)
		rec->prev->next = rec->next;
	else
		c->head = rec->next;
	if (rec->next)
		rec->next->prev = rec->prev;
	else
		c->tail = rec->prev;
	c->open--;
	if (rec->closing)
		c->closing--;
	if (rec->cl->open)
		rec->cl->open--;
	metric_set(c->m_open, NULL, c->open);
	pthread_mutex_unlock(&c->mu);
	free(rec);
}

void api_conns_phase(struct api_conns *c, struct MHD_Connection *conn, enum api_conn_phase p)
{
	const union MHD_ConnectionInfo
		*i = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn_rec *rec = i ? i->socket_context : NULL;
	if (!rec)
		return;
	int64_t now = now_ns();
	pthread_mutex_lock(&c->mu);
	if (p == API_CONN_HEADERS) {
		/* a new connection keeps its deadline from the accept; a keep-alive request gets
		 * its own from its request line */
		if (rec->phase != API_CONN_NEW)
			rec->deadline_ns = now + (int64_t)c->lim.header_timeout_s * 1000000000;
	} else if (p == API_CONN_BODY) {
		rec->deadline_ns = now + (int64_t)c->lim.body_timeout_s * 1000000000;
	} else {
		rec->deadline_ns = 0; /* BUSY: the handler's; IDLE: libmicrohttpd's idle timeout */
	}
	rec->phase = p;
	rec->since_ns = now;
	pthread_mutex_unlock(&c->mu);
}

/* ---------------------------------------------------------------- reaper */

static void *reaper_main(void *arg)
{
	struct api_conns *c = arg;
	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += REAP_TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
		if (c->stop)
			break;
		int64_t now = now_ns();
		for (struct conn_rec *r = c->head; r; r = r->next)
			if (!r->closing && r->deadline_ns && now >= r->deadline_ns)
				rec_close(c, r,
					  r->phase == API_CONN_BODY ? DROP_BODY_TIMEOUT
								    : DROP_HEADER_TIMEOUT,
					  now);
		clients_sweep(c, now);
		/* the API's housekeeping thread: heap freed by large replies goes back to the
		 * kernel here, off the poll and worker threads (base/memtrim.h) */
		pthread_mutex_unlock(&c->mu);
		memtrim_run(now / 1000000);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

struct api_conns *api_conns_new(const struct api_conn_limits *limits)
{
	struct api_conns *c = xcalloc(1, sizeof(*c));
	api_conns_resolve(limits, &c->lim);
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	hmap_init(&c->clients);
	snprintf(c->other.key, sizeof(c->other.key), "other");
	c->m_open = metrics_register(METRIC_GAUGE, "fleetplane_http_connections_open",
				     "Connections open on the API listener.", "", NULL, 0);
	c->m_dropped = metrics_register(
		METRIC_COUNTER, "fleetplane_http_connections_dropped_total",
		"API connections refused or closed by the connection guard, by reason: per_client "
		"(a client's limit), total (every connection busy), header_timeout, body_timeout "
		"(a request not sent in time), evicted (closed to make room for a new one).",
		"reason", NULL, 0);
	for (int i = 0; i < DROP_N; i++) {
		const char *labels[1] = {drop_names[i]};
		metric_add(c->m_dropped, labels, 0);
	}
	metric_set(c->m_open, NULL, 0);
	if (pthread_create(&c->reaper, NULL, reaper_main, c) != 0) {
		hmap_release(&c->clients);
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return NULL;
	}
	return c;
}

void api_conns_free(struct api_conns *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->reaper, NULL);
	for (struct conn_rec *r = c->head, *n; r; r = n) {
		n = r->next;
		free(r);
	}
	for (struct hmap_iter it = hmap_iter_start(&c->clients); hmap_iter_next(&it);)
		free(it.e->value);
	hmap_release(&c->clients);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

unsigned api_conns_open(struct api_conns *c)
{
	pthread_mutex_lock(&c->mu);
	unsigned n = c->open;
	pthread_mutex_unlock(&c->mu);
	return n;
}

unsigned long api_conns_dropped(struct api_conns *c, const char *reason)
{
	unsigned long n = 0;
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < DROP_N; i++)
		if (reason && strcmp(reason, drop_names[i]) == 0)
			n = c->dropped[i];
	pthread_mutex_unlock(&c->mu);
	return n;
}
