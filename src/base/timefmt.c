/* timefmt.c - RFC 3339 formatting, and the one parser of calendar dates (timefmt.h): RFC 3339
 * section 5.6 with "Z" or an offset, the ISO 8601 of dmesg, ctime and syslog stamps. Every
 * form ends in civil(): one field check (RFC 3339 section 5.7) and one conversion, years
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

/* Reads exactly n ASCII digits at p (before e) into *v; returns the end or NULL. */
static const char *digits(const char *p, const char *e, int n, int *v)
{
	if (e - p < n)
		return NULL;
	int x = 0;
	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return NULL;
		x = x * 10 + (p[i] - '0');
	}
	*v = x;
	return p + n;
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

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The year of a Unix ms instant (civil_from_days, year only). */
static int year_of(int64_t ms)
{
	int64_t days = ms >= 0 ? ms / 86400000 : (ms - 86399999) / 86400000;
	days += 719468;
	int64_t era = (days >= 0 ? days : days - 146096) / 146097;
	int64_t doe = days - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = yoe + era * 400;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	return (int)(y + (mp >= 10));
}

/* The one field check and conversion: RFC 3339 section 5.7 (month 01-12, mday by month and
 * leap year, hour 00-23, minute 00-59, second 00-60, 60 only at 23:59: a leap second, read as
 * the next second as POSIX time does), years 1970..9999. Returns 0 or FP_EPARSE. */
static int civil(int y, int mo, int d, int h, int mi, int s, int64_t *ms)
{
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h < 0 ||
	    h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60 || (s == 60 && (h != 23 || mi != 59)))
		return FP_EPARSE;
	*ms = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + (int64_t)s * 1000;
	return 0;
}

/* "HH:MM:SS" */
static const char *read_hms(const char *p, const char *e, int *h, int *mi, int *s)
{
	if (!(p = digits(p, e, 2, h)) || p >= e || *p != ':' || !(p = digits(p + 1, e, 2, mi)) ||
	    p >= e || *p != ':' || !(p = digits(p + 1, e, 2, s)))
		return NULL;
	return p;
}

/* A fraction after sep ('.' or, with comma, ','): 1..maxd digits (0: any number), the first
 * three as milliseconds. No separator: p unchanged, *ms 0. */
static const char *read_frac(const char *p, const char *e, int comma, int maxd, int64_t *ms)
{
	*ms = 0;
	if (p >= e || !(*p == '.' || (comma && *p == ',')))
		return p;
	p++;
	int nd = 0;
	while (p < e && *p >= '0' && *p <= '9') {
		if (nd < 3)
			*ms = *ms * 10 + (*p - '0');
		if (++nd > maxd && maxd)
			return NULL;
		p++;
	}
	if (nd == 0)
		return NULL;
	for (; nd < 3; nd++)
		*ms *= 10;
	return p;
}

static const char *read_name(const char *p, const char *e, const char *const *names, int n,
			     int *idx)
{
	for (int i = 0; i < n; i++)
		if (e - p >= 3 && memcmp(p, names[i], 3) == 0) {
			*idx = i;
			return p + 3;
		}
	return NULL;
}

static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
				     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char *const wdays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

/* "Feb 23" / "Feb  3" / "Feb 3": month name, blanks, a 1- or 2-digit day. */
static const char *read_month_day(const char *p, const char *e, int *mo, int *d)
{
	if (!(p = read_name(p, e, months, 12, mo)) || p >= e || *p != ' ')
		return NULL;
	while (p < e && *p == ' ')
		p++;
	if (!(p = digits(p, e, 1, d)))
		return NULL;
	int d2;
	if (p < e && digits(p, e, 1, &d2)) {
		*d = *d * 10 + d2;
		p++;
	}
	(*mo)++;
	return p;
}

const char *fp_time_scan_iso(const char *p, const char *e, int flags, int64_t *wall_ms,
			     int *off_min)
{
	int dmesg = flags & FP_TIME_SCAN_DMESG;
	int y, mo, d, h, mi, s;
	if (!p || !(p = digits(p, e, 4, &y)) || p >= e || *p != '-' ||
	    !(p = digits(p + 1, e, 2, &mo)) || p >= e || *p != '-' ||
	    !(p = digits(p + 1, e, 2, &d)) || p >= e || *p != 'T' ||
	    !(p = read_hms(p + 1, e, &h, &mi, &s)))
		return NULL;
	int64_t frac;
	if (!(p = read_frac(p, e, dmesg, dmesg ? 9 : 0, &frac)))
		return NULL;
	int off = 0;
	if (p < e && *p == 'Z') {
		p++;
	} else if (p < e && (*p == '+' || *p == '-')) {
		int sign = *p == '-' ? -1 : 1, oh, om;
		if (!(p = digits(p + 1, e, 2, &oh)))
			return NULL;
		if (p < e && *p == ':')
			p++;
		else if (!dmesg)
			return NULL;
		if (!(p = digits(p, e, 2, &om)) || oh > 23 || om > 59)
			return NULL;
		off = sign * (oh * 60 + om);
	} else {
		return NULL;
	}
	int64_t ms;
	if (civil(y, mo, d, h, mi, s, &ms) < 0)
		return NULL;
	ms += frac - (int64_t)off * 60000;
	if (ms < FP_TIME_MIN_MS || ms > FP_TIME_MAX_MS)
		return NULL;
	*wall_ms = ms;
	if (off_min)
		*off_min = off;
	return p;
}

int fp_time_parse_offset(const char *s, int64_t *wall_ms, int *off_min)
{
	if (!s)
		return FP_EPARSE;
	const char *e = s + strlen(s);
	int64_t ms;
	int off;
	if (fp_time_scan_iso(s, e, 0, &ms, &off) != e)
		return FP_EPARSE;
	*wall_ms = ms;
	if (off_min)
		*off_min = off;
	return 0;
}

int fp_time_parse(const char *s, int64_t *wall_ms)
{
	if (!s)
		return FP_EPARSE;
	size_t n = strlen(s);
	if (n == 0 || s[n - 1] != 'Z')
		return FP_EPARSE;
	return fp_time_parse_offset(s, wall_ms, NULL);
}

const char *fp_time_scan_ctime(const char *p, const char *e, int64_t *wall_ms)
{
	int wd, mo, d, h, mi, s, y;
	if (!p || !(p = read_name(p, e, wdays, 7, &wd)) || p >= e || *p != ' ' ||
	    !(p = read_month_day(p + 1, e, &mo, &d)) || p >= e || *p != ' ' ||
	    !(p = read_hms(p + 1, e, &h, &mi, &s)) || p >= e || *p != ' ' ||
	    !(p = digits(p + 1, e, 4, &y)))
		return NULL;
	int64_t ms;
	if (civil(y, mo, d, h, mi, s, &ms) < 0)
		return NULL;
	*wall_ms = ms;
	return p;
}

const char *fp_time_scan_syslog(const char *p, const char *e, int64_t now_ms, int64_t *wall_ms)
{
	int mo, d, h, mi, s;
	int64_t frac;
	if (!p || !(p = read_month_day(p, e, &mo, &d)) || p >= e || *p != ' ' ||
	    !(p = read_hms(p + 1, e, &h, &mi, &s)) || !(p = read_frac(p, e, 0, 9, &frac)))
		return NULL;
	int y = year_of(now_ms);
	int64_t t;
	if (civil(y, mo, d, h, mi, s, &t) < 0 || t > now_ms + 86400000) {
		/* the year before: a December line read in January, or Feb 29 of last year */
		if (civil(y - 1, mo, d, h, mi, s, &t) < 0)
			return NULL;
	}
	*wall_ms = t + frac;
	return p;
}

int fp_time_parse_http(const char *s, int64_t *wall_ms)
{
	if (!s)
		return FP_EPARSE;
	const char *p = s, *e = s + strlen(s);
	int wd, mo, d, h, mi, sec, y;
	if (!(p = read_name(p, e, wdays, 7, &wd)) || e - p < 2 || p[0] != ',' || p[1] != ' ' ||
	    !(p = digits(p + 2, e, 1, &d)))
		return FP_EPARSE;
	int d2;
	if (digits(p, e, 1, &d2)) {
		d = d * 10 + d2;
		p++;
	}
	if (p >= e || *p != ' ' || !(p = read_name(p + 1, e, months, 12, &mo)) || p >= e ||
	    *p != ' ' || !(p = digits(p + 1, e, 4, &y)) || p >= e || *p != ' ' ||
	    !(p = read_hms(p + 1, e, &h, &mi, &sec)) || strcmp(p, " GMT") != 0)
		return FP_EPARSE;
	int64_t ms;
	if (civil(y, mo + 1, d, h, mi, sec, &ms) < 0)
		return FP_EPARSE;
	*wall_ms = ms;
	return 0;
}
