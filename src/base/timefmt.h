/* timefmt.h - RFC 3339 UTC timestamps ("2026-11-30T05:27:16.123Z") for documents and logs, and
 * the one reader of calendar dates in fleetplane: RFC 3339 with or without a UTC offset (the
 * API, Redfish), the ISO 8601 that dmesg writes, ctime and syslog stamps (kernel logs). */
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

/* fp_time_parse with a UTC offset allowed: "YYYY-MM-DDTHH:MM:SS[.f...](Z|+hh:mm|-hh:mm)"
 * (RFC 3339 section 5.6 date-time; offset hours 00-23, minutes 00-59). *wall_ms is the UTC
 * instant; *off_min (may be NULL) the offset in minutes east of UTC (0 for "Z" and "+00:00").
 * The fields are checked as in fp_time_parse (local year 1970..9999), and the instant must lie
 * in FP_TIME_MIN_MS..FP_TIME_MAX_MS. Returns 0 or FP_EPARSE (nothing written). */
int fp_time_parse_offset(const char *s, int64_t *wall_ms, int *off_min);

/* The scanners below read one timestamp at p in the bounded text [p, e) (no NUL needed) and
 * return the first byte after it, or NULL (nothing written) when p does not start with one.
 * Fields are exactly 2 or 4 digits unless said otherwise and are checked as in fp_time_parse
 * (Gregorian month lengths, hour 00-23, minute 00-59, second 60 only at 23:59 and read as the
 * next second, years 1970..9999); *wall_ms is Unix epoch ms, UTC. */

/* FP_TIME_SCAN_DMESG: also what dmesg --time-format iso writes ("2025-01-25T10:34:54,859532
 * +00:00"): ',' before the fraction, at most 9 fraction digits, and "+hhmm" offsets. */
#define FP_TIME_SCAN_DMESG 1

/* ISO 8601 / RFC 3339 date-time with "Z" or an offset: "2025-01-25T10:34:54[.f...](Z|+hh:mm)";
 * flags 0 or FP_TIME_SCAN_DMESG; *off_min (may be NULL) as fp_time_parse_offset. */
const char *fp_time_scan_iso(const char *p, const char *e, int flags, int64_t *wall_ms,
			     int *off_min);
/* ctime(3) without the newline, no zone (read as UTC): "Sun Feb 23 16:24:18 2025"; the day of
 * the month space-padded or not ("Feb  3", "Feb 3"), 1 or 2 digits; the weekday name is
 * required but not checked against the date. */
const char *fp_time_scan_ctime(const char *p, const char *e, int64_t *wall_ms);
/* syslog (RFC 3164 section 4.1.2 TIMESTAMP) "Nov 29 11:28:11", day space-padded, optionally
 * with journalctl -o short-precise's ".123456" (1-9 digits); no year and no zone: read as UTC
 * in the year of now_ms, or the year before when that would put it more than a day after
 * now_ms (a December line read in January). */
const char *fp_time_scan_syslog(const char *p, const char *e, int64_t now_ms, int64_t *wall_ms);

/* HTTP-date as IMF-fixdate (RFC 9110 section 5.6.7): "Sun, 06 Nov 1994 08:49:37 GMT", the
 * whole string; day and month names case-sensitive as the RFC says, the day 1 or 2 digits.
 * The obsolete RFC 850 and asctime forms are refused. Returns 0 or FP_EPARSE. */
int fp_time_parse_http(const char *s, int64_t *wall_ms);

#endif
