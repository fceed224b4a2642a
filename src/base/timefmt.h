/* timefmt.h - RFC 3339 UTC timestamps ("2026-11-30T05:27:16.123Z") for documents and logs. */
#ifndef FP_BASE_TIMEFMT_H
#define FP_BASE_TIMEFMT_H

#include <stdint.h>

#define FP_TIME_LEN 32

/* Writes wall_ms (Unix epoch milliseconds) as RFC 3339 UTC with milliseconds into out. */
void fp_time_format(int64_t wall_ms, char out[FP_TIME_LEN]);
/* Parses "YYYY-MM-DDTHH:MM:SS[.fff]Z" (UTC only). Returns 0 or FP_EPARSE. */
int fp_time_parse(const char *s, int64_t *wall_ms);

#endif
