/* timefmt.c - RFC 3339 formatting and parsing (RFC 3339 section 5.6), UTC only. */
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/err.h"

void fp_time_format(int64_t wall_ms, char out[FP_TIME_LEN])
{
	time_t s = (time_t)(wall_ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	char tmp[24];
	strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, FP_TIME_LEN, "%s.%03dZ", tmp, (int)(wall_ms % 1000));
}

int fp_time_parse(const char *s, int64_t *wall_ms)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	int ms = 0, n = 0;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return FP_EPARSE;
	const char *p = s + n;
	if (*p == '.') {
		p++;
		int digits = 0;
		while (*p >= '0' && *p <= '9') {
			if (digits < 3)
				ms = ms * 10 + (*p - '0');
			digits++;
			p++;
		}
		if (digits == 0)
			return FP_EPARSE;
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (strcmp(p, "Z") != 0)
		return FP_EPARSE;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return FP_EPARSE;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*wall_ms = (int64_t)timegm(&tm) * 1000 + ms;
	return 0;
}
