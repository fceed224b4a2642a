/* event.c - audit event documents (see event.h). */
#include "core/event.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>

#include "base/jsonx.h"
#include "base/timefmt.h"

/* The suffix is a process-wide sequence, so two events made in the same millisecond list in
 * the order they were made, whichever component made them. Its starting point comes from the
 * first caller's random value, so ids from two processes (or a restart within the same
 * millisecond) do not collide in practice. */
static _Atomic uint32_t seq;
static _Atomic int seeded;

static _Atomic int keep_order;
static _Atomic int64_t last_ms; /* the largest time part handed out while keep_order is on */

void event_id_keep_order(int on)
{
	atomic_store(&keep_order, on);
}

void event_id(int64_t wall_ms, uint64_t rnd, char out[EVENT_ID_LEN])
{
	if (atomic_load(&keep_order)) {
		int64_t prev = atomic_load(&last_ms);
		while (wall_ms > prev && !atomic_compare_exchange_weak(&last_ms, &prev, wall_ms))
			;
		if (wall_ms < prev)
			wall_ms = prev;
	}
	int expect = 0;
	if (atomic_compare_exchange_strong(&seeded, &expect, 1))
		atomic_fetch_add(&seq, (uint32_t)(rnd & 0xfff00000u));
	uint32_t n = atomic_fetch_add(&seq, 1);
	snprintf(out, EVENT_ID_LEN, "%013" PRId64 "-%08x", wall_ms, (unsigned)n);
}

json_t *event_new(const char *id, const char *type, const char *actor, const char *object,
		  const char *reason, const char *message, int64_t wall_ms)
{
	char ts[FP_TIME_LEN];
	fp_time_format(wall_ms, ts);
	/* The message often carries text from outside (a BMC's error, cut to a buffer): made
	 * valid UTF-8 here, or json_pack would return NULL and the event would be lost. */
	return json_pack("{s:s,s:{s:s,s:s},s:s,s:s,s:s,s:s,s:o,s:s}", "kind", "Event", "metadata",
			 "name", id, "createdAt", ts, "type", type, "actor", actor, "object",
			 object, "reason", reason, "message",
			 jsonx_string_lossy(message ? message : ""), "time", ts);
}
