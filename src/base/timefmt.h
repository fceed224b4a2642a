/* timefmt.h - RFC 3339 UTC timestamps ("2026-11-30T05:27:16.123Z") for documents and logs. */
#ifndef FP_BASE_TIMEFMT_H
#define FP_BASE_TIMEFMT_H

#include <stdint.h>

#define FP_TIME_LEN 32

/* The instants an RFC 3339 date-fullyear (4 digits) can write, from the Unix epoch:
 * 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
#define FP_TIME_MIN_MS 0LL
#define FP_TIME_MAX_MS 253402300799999LL

/* Writes wall_ms (Unix epoch milliseconds) as RFC 3339 UTC with milliseconds into out
 * ("2026-11-30T05:27:16.123Z", always a 4-digit year): a value outside FP_TIME_MIN_MS..
 * FP_TIME_MAX_MS is written as the nearest end of that range. */
void fp_time_format(int64_t wall_ms, char out[FP_TIME_LEN]);
/* Parses "YYYY-MM-DDTHH:MM:SS[.f...]Z" (RFC 3339 section 5.6, UTC only; exactly 2 or 4 digits
 * per field, fractions past milliseconds dropped) into Unix epoch milliseconds. Refused with
 * FP_EPARSE (nothing written to *wall_ms): any other shape, an impossible date or time (month
 * 13, 2026-02-30, hour 24, minute 60; second 60 only at 23:59, a leap second, read as the next
 * second), and years outside 1970..9999. Returns 0 or FP_EPARSE. */
int fp_time_parse(const char *s, int64_t *wall_ms);

#endif
