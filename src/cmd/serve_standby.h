/* serve_standby.h - what a standby `fleetplane serve` (etcd store, not the leader) answers on
 * its API address while it waits to lead (docs/etcd.md): 503 to every request with the
 * leader's URL in the body and a Location header, /readyz 503 naming the leader, /healthz 200,
 * /metrics the process metrics (fleetplane_leader, fleetplane_leader_is_leader). Reads are not
 * served from a standby in this version: clients go to the leader. */
#ifndef FP_CMD_SERVE_STANDBY_H
#define FP_CMD_SERVE_STANDBY_H

struct leader;
struct serve_standby;

/* Listens on listen ("host:port", api_listen_parse's forms) and answers from l (borrowed,
 * outlives the standby), over TLS with cert_pem/key_pem (PEM strings, copied by
 * libmicrohttpd; both NULL = plain http, serve --plain-http) as the API it stands in for.
 * Returns NULL with the reason in err when the address cannot be bound. */
struct serve_standby *serve_standby_start(const char *listen, struct leader *l,
					  const char *cert_pem, const char *key_pem, char *err,
					  size_t errlen);
/* Stops listening (the port is free when it returns) and frees. NULL is a no-op. */
void serve_standby_stop(struct serve_standby *sb);

#endif
