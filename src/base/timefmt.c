/* timefmt.c - RFC 3339 formatting and parsing (RFC 3339 section 5.6), UTC only, years
 * 1970..9999 (FP_TIME_MIN_MS..FP_TIME_MAX_MS). */
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/err.h"

void fp_time_format(int64_t wall_ms, char out[FP_TIME_LEN])
{
	/* RFC 3339 section 5.6 date-fullyear is exactly 4 digits: clamp to what it can say */
	if (wall_ms < FP_TIME_MIN_MS)
		wall_ms = FP_TIME_MIN_MS;
	if (wall_ms > FP_TIME_MAX_MS)
		wall_ms = FP_TIME_MAX_MS;
	time_t s = (time_t)(wall_ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	/* the moduli are identities for a clamped time; they tell the compiler the widths */
	snprintf(out, FP_TIME_LEN, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ",
		 (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)(tm.tm_mon + 1) % 100u,
		 (unsigned)tm.tm_mday % 100u, (unsigned)tm.tm_hour % 100u,
		 (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u,
		 (unsigned)(wall_ms % 1000) % 1000u);
}

/* Reads exactly n ASCII digits at *p into *v and moves *p past them; -1 if one is not a digit. */
static int digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -1;
		*v = *v * 10 + (c - '0');
	}
	*p += n;
	return 0;
}

static int is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days in month mo (1..12) of year y: RFC 3339 section 5.7 (the Gregorian calendar). */
static int month_days(int y, int mo)
{
	static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return mo == 2 && is_leap(y) ? 29 : d[mo - 1];
}

int fp_time_parse(const char *s, int64_t *wall_ms)
{
	if (!s)
		return FP_EPARSE;
	const char *p = s;
	int y, mo, d, h, mi, sec, ms = 0;
	if (digits(&p, 4, &y) < 0 || *p++ != '-' || digits(&p, 2, &mo) < 0 || *p++ != '-' ||
	    digits(&p, 2, &d) < 0 || *p++ != 'T' || digits(&p, 2, &h) < 0 || *p++ != ':' ||
	    digits(&p, 2, &mi) < 0 || *p++ != ':' || digits(&p, 2, &sec) < 0)
		return FP_EPARSE;
	if (*p == '.') {
		p++;
		int nd = 0;
		while (*p >= '0' && *p <= '9') {
			if (nd < 3)
				ms = ms * 10 + (*p - '0');
			nd++;
			p++;
		}
		if (nd == 0)
			return FP_EPARSE;
		for (; nd < 3; nd++)
			ms *= 10;
	}
	if (strcmp(p, "Z") != 0)
		return FP_EPARSE;
	/* RFC 3339 section 5.7: month 01-12, mday by month and leap year, hour 00-23, minute
	 * 00-59, second 00-58/59/60 (60 only for a leap second, at 23:59 UTC) */
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h > 23 ||
	    mi > 59 || sec > 60 || (sec == 60 && (h != 23 || mi != 59)))
		return FP_EPARSE;
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec; /* a leap second reads as the next day's 00:00:00 (POSIX time) */
	int64_t v = (int64_t)timegm(&tm) * 1000 + ms;
	if (v > FP_TIME_MAX_MS) /* 9999-12-31T23:59:60Z */
		return FP_EPARSE;
	*wall_ms = v;
	return 0;
}
