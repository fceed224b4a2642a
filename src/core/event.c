/* event.c - audit event documents (see event.h). */
#include "core/event.h"

#include <inttypes.h>
#include <stdio.h>

#include "base/timefmt.h"

void event_id(int64_t wall_ms, uint64_t rnd, char out[EVENT_ID_LEN])
{
	snprintf(out, EVENT_ID_LEN, "%013" PRId64 "-%08x", wall_ms, (unsigned)(rnd & 0xffffffffu));
}

json_t *event_new(const char *id, const char *type, const char *actor, const char *object,
		  const char *reason, const char *message, int64_t wall_ms)
{
	char ts[FP_TIME_LEN];
	fp_time_format(wall_ms, ts);
	return json_pack("{s:s,s:{s:s,s:s},s:s,s:s,s:s,s:s,s:s,s:s}", "kind", "Event", "metadata",
			 "name", id, "createdAt", ts, "type", type, "actor", actor, "object",
			 object, "reason", reason, "message", message ? message : "", "time", ts);
}
