/* store_etcd_int.h - what the etcd backend (store_etcd.c) shares with leader election
 * (leader.c), both in the store layer: a raw call to the etcd v3 JSON gateway over the backend's
 * endpoints and connection pool, and the write fence. Nothing above the store layer includes it. */
#ifndef FP_STORE_STORE_ETCD_INT_H
#define FP_STORE_STORE_ETCD_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_int.h"

struct store_etcd;

/* The etcd backend behind s, or NULL when s is another backend. Borrowed. */
struct store_etcd *store_etcd_of(struct store *s);

/* POSTs body (borrowed JSON) to path ("/v3/lease/grant") on the first endpoint that answers,
 * with the backend's timeout, TLS and pool, giving up at deadline_ms (CLOCK_MONOTONIC ms; 0 =
 * none); *resp (caller decrefs) is the parsed 200 answer. Returns 0, FP_EIO (no endpoint
 * answered in time, or an HTTP/gRPC error; detail in err) or FP_EPARSE. */
int store_etcd_call(struct store_etcd *e, const char *path, json_t *body, int64_t deadline_ms,
		    json_t **resp, char *err, size_t errlen);

/* The backend's namespace ("/fleetplane"): data keys are <ns><key>, the leader key <ns>:leader. */
const char *store_etcd_namespace(struct store_etcd *e);

/* Base64 (RFC 4648, padded) of n bytes, as a new string; and back: a new NUL-terminated buffer
 * with its length in *n, or NULL for bad input. */
char *store_etcd_b64(const char *p, size_t n);
char *store_etcd_unb64(const char *s, size_t *n);

/* An int64 field of an etcd answer: the gateway writes int64 as strings and omits zeros. */
int64_t store_etcd_int(const json_t *obj, const char *name);

/* Fences every later write: it then carries a compare that the etcd key `key` (raw etcd key,
 * borrowed until unfenced) has create_revision `create_rev`, and is refused locally with
 * FP_EAGAIN once the monotonic time passes deadline_ms (CLOCK_MONOTONIC ms). lost(arg) is
 * called (once, from the writing thread) when etcd refuses a write for the fence. mode: 1 =
 * fenced, 0 = unfenced (writes as usual), -1 = every write refused with FP_EAGAIN (a standby). */
void store_etcd_fence(struct store_etcd *e, int mode, const char *key, int64_t create_rev,
		      void (*lost)(void *arg), void *arg);
/* Moves the fence's local deadline (renewals). */
void store_etcd_fence_deadline(struct store_etcd *e, int64_t deadline_ms);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t store_etcd_mono_ms(void);

#endif
