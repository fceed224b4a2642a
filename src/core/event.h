/* event.h - audit events (DESIGN.md: actor, object, what, why, when). Stored under
 * /events/<id> where id sorts by time: "<13-digit wall ms>-<8 hex>" so a prefix list returns
 * them oldest first. Document:
 *   {"kind":"Event","metadata":{"name":id,"createdAt"},"type":"Normal"|"Warning",
 *    "actor":"operator:alice","object":"node/r01n03","reason":"Drained",
 *    "message":"hold added: kernel upgrade","time":"<RFC 3339>"}
 * Messages must never contain secrets (BMC passwords, tokens). */
#ifndef FP_CORE_EVENT_H
#define FP_CORE_EVENT_H

#include <jansson.h>
#include <stdint.h>

#define EVENT_ID_LEN 24

/* Writes a new time-ordered id into out: 13-digit wall ms, then a process-wide sequence, so ids
 * made in one process sort in the order they were made. rnd (the caller's rng) seeds the
 * sequence's starting point on the first call. Thread-safe. */
void event_id(int64_t wall_ms, uint64_t rnd, char out[EVENT_ID_LEN]);
/* event_id_keep_order makes the time part of every later id at least that of the id before it,
 * so that a step back of the wall clock cannot sort new events before older ones (issue 16);
 * the events' own `time` stays the wall clock's. serve turns it on at start; off by default,
 * because one test or sim process runs several virtual clocks whose times must not mix. */
void event_id_keep_order(int on);
/* Returns a new event document (new reference). type is "Normal" or "Warning". */
json_t *event_new(const char *id, const char *type, const char *actor, const char *object,
		  const char *reason, const char *message, int64_t wall_ms);

#endif
