/* conns.h - the API's connection guard (issue 16 item 6): which connections libmicrohttpd may
 * accept, how long a client may take to send a request, and who gets closed when the listener is
 * full, so that slow or idle clients cannot deny service to the rest.
 *
 * libmicrohttpd 0.9.75 has a total connection limit, a per-IP limit and an *inactivity* timeout
 * (MHD_OPTION_CONNECTION_TIMEOUT): a client sending one header byte every few seconds keeps a
 * connection for ever, and once the total is reached every new connection is refused, health
 * probes included. The guard adds what it lacks, through its documented hooks
 * (MHD_OPTION_ACCEPT_POLICY_CALLBACK, MHD_OPTION_NOTIFY_CONNECTION, MHD_OPTION_URI_LOG_CALLBACK
 * and the access/completed callbacks):
 *
 *  - a deadline per request phase on the monotonic clock: a new connection must have sent its
 *    request line and headers within header_timeout_s of being accepted; a keep-alive request
 *    within header_timeout_s of its request line; the body within body_timeout_s of the headers
 *    (as nginx's client_header_timeout and client_body_timeout). A connection past its deadline
 *    is shut down (shutdown(2) on its socket: libmicrohttpd sees the end of stream and closes
 *    it on its own thread);
 *  - at most per_client open connections per client address (0 = no such limit);
 *  - at most max_connections in all; when a new connection arrives at the total, the oldest
 *    connection that has not finished sending a request is closed to make room, else the
 *    longest-idle keep-alive connection, and only when every connection is running a request
 *    or a watch is the new one refused. So /healthz, /readyz and real clients are answered while
 *    half-open connections hold the listener;
 *  - one warning per misbehaving client per interval (10 s), with counts, instead of one line
 *    per refused or closed connection; the counts are also metrics
 *    (fleetplane_http_connections_dropped_total{reason}, fleetplane_http_connections_open).
 *
 * Thread-safety: every function may be called from any thread (one mutex); the reaper thread
 * enforces deadlines once a second. */
#ifndef FP_API_CONNS_H
#define FP_API_CONNS_H

#include <stddef.h>
#include <sys/socket.h>

struct MHD_Connection;

/* Limits; 0 in any field = its default (in parentheses). */
struct api_conn_limits {
	unsigned max_connections; /* open connections in all (1000) */
	unsigned per_client;      /* open connections per client address (100); see no_per_client */
	int no_per_client;        /* 1 = no per-client limit (per_client is then ignored) */
	unsigned header_timeout_s; /* request line and headers (10 s) */
	unsigned body_timeout_s;   /* request body after the headers (60 s) */
	unsigned idle_timeout_s;   /* keep-alive connection with no request (60 s; libmicrohttpd's
				    * MHD_OPTION_CONNECTION_TIMEOUT) */
};

#define API_CONN_DEFAULT_MAX 1000u
#define API_CONN_DEFAULT_PER_CLIENT 100u
#define API_CONN_DEFAULT_HEADER_S 10u
#define API_CONN_DEFAULT_BODY_S 60u
#define API_CONN_DEFAULT_IDLE_S 60u

struct api_conns;

/* Fills out from in with the defaults applied. */
void api_conns_resolve(const struct api_conn_limits *in, struct api_conn_limits *out);

/* The connection limit to give libmicrohttpd (MHD_OPTION_CONNECTION_LIMIT): max_connections
 * plus a reserve (an eighth, at least 32) for connections the guard has shut down that are not
 * closed yet, so that the accept policy, not libmicrohttpd, decides. */
unsigned api_conns_mhd_limit(const struct api_conn_limits *resolved);

/* Raises RLIMIT_NOFILE's soft limit to what mhd_limit connections need (plus 256 for the
 * store, logs and peers) when the hard limit allows. Returns the connection limit that fits
 * (mhd_limit, or less when the hard limit is lower: then *max_connections is lowered to match
 * and a warning names both numbers). */
unsigned api_conns_fit_fds(unsigned mhd_limit, unsigned *max_connections);

/* Starts the guard and its reaper thread. Returns NULL when the thread cannot start. */
struct api_conns *api_conns_new(const struct api_conn_limits *limits);
/* Stops the reaper and frees the guard; call after MHD_stop_daemon (no callbacks may come). */
void api_conns_free(struct api_conns *c);

/* MHD_AcceptPolicyCallback: 1 to accept a connection from addr, 0 to refuse it (per-client
 * limit, or the total reached with nothing to close). May close another connection. */
int api_conns_admit(struct api_conns *c, const struct sockaddr *addr, socklen_t addrlen);

/* MHD_OPTION_NOTIFY_CONNECTION, MHD_CONNECTION_NOTIFY_STARTED / _CLOSED; *socket_context is
 * the guard's record of conn (set by started, cleared by closed). */
void api_conns_started(struct api_conns *c, struct MHD_Connection *conn, void **socket_context);
void api_conns_closed(struct api_conns *c, void **socket_context);

/* Phase changes of conn's current request, from the server's callbacks: the request line was
 * read (URI log callback); the headers were read and a body follows (body = 1) or not; the
 * request was read whole and runs; its response ended. Unknown conn: nothing. */
enum api_conn_phase {
	API_CONN_NEW,     /* accepted, nothing read yet */
	API_CONN_HEADERS, /* request line read, headers coming */
	API_CONN_BODY,    /* headers read, body coming */
	API_CONN_BUSY,    /* request read whole: handler, response or watch stream */
	API_CONN_IDLE,    /* keep-alive, between requests */
};
void api_conns_phase(struct api_conns *c, struct MHD_Connection *conn, enum api_conn_phase p);

/* Open connections, and connections closed or refused since start by reason ("per_client",
 * "total", "header_timeout", "body_timeout", "evicted"); for tests. Unknown reason: 0. */
unsigned api_conns_open(struct api_conns *c);
unsigned long api_conns_dropped(struct api_conns *c, const char *reason);

#endif
