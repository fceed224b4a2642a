/* layers: base */
/* test_base.c - error space, bounded buffer, times (RFC 3339, offsets, dmesg ISO, ctime, syslog,
 * HTTP-date), JSON helpers, metrics rendering, the `key value` config line reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/jsontext.h"
#include "base/jsonx.h"
#include "base/kvlines.h"
#include "base/memtrim.h"
#include "base/metrics.h"
#include "base/timefmt.h"

static void test_err_map(void **state)
{
	assert_string_equal(fp_err_name(FP_ENOTFOUND), "FP_ENOTFOUND");
	assert_int_equal(fp_err_http(FP_ECONFLICT), 409);
	assert_int_equal(fp_err_http(FP_ETOOBIG), 413);
	assert_int_equal(fp_err_http(-999), 500);
	char e[32];
	assert_int_equal(fp_errf(FP_EINVAL, e, sizeof(e), "bad %s", "name"), FP_EINVAL);
	assert_string_equal(e, "bad name");
}

static void test_buf_bounded(void **state)
{
	struct buf b;
	buf_init(&b, 10);
	assert_int_equal(buf_puts(&b, "0123456789"), 0);
	assert_int_equal(buf_puts(&b, "x"), FP_ETOOBIG);
	assert_int_equal(b.len, 10);
	assert_string_equal(b.data, "0123456789");
	buf_release(&b);
}

static void test_time_roundtrip(void **state)
{
	char s[FP_TIME_LEN];
	fp_time_format(1796014169803LL, s);
	assert_string_equal(s, "2026-11-30T04:49:29.803Z");
	int64_t ms = 0;
	assert_int_equal(fp_time_parse(s, &ms), 0);
	assert_int_equal(ms, 1796014169803LL);
	assert_int_equal(fp_time_parse("2026-13-01T00:00:00Z", &ms), FP_EPARSE);
	assert_int_equal(fp_time_parse("2026-11-29T04:09:29+01:00", &ms), FP_EPARSE);
}

/* RFC 3339 with an offset (the API's documents stay "Z"-only through fp_time_parse; Redfish
 * SEL entries carry offsets): the UTC instant and the offset, and refusals that write nothing. */
static void test_time_offset(void **state)
{
	int64_t ms = 0;
	int off = 99;
	assert_int_equal(fp_time_parse_offset("2026-11-29T05:09:29+01:00", &ms, &off), 0);
	assert_int_equal(ms, 1795925369000LL);
	assert_int_equal(off, 60);
	assert_int_equal(fp_time_parse_offset("2026-11-28T23:39:29.5-04:30", &ms, &off), 0);
	assert_int_equal(ms, 1795925369500LL);
	assert_int_equal(off, -270);
	assert_int_equal(fp_time_parse_offset("2026-11-29T04:09:29Z", &ms, &off), 0);
	assert_int_equal(ms, 1795925369000LL);
	assert_int_equal(off, 0);
	assert_int_equal(fp_time_parse_offset("2026-11-29T04:09:29+00:00", &ms, NULL), 0);
	assert_int_equal(ms, 1795925369000LL);
	/* the offset moves the date: local Feb 29 of a leap year is checked as local */
	assert_int_equal(fp_time_parse_offset("2024-02-29T23:00:00-13:00", &ms, NULL), 0);
	assert_int_equal(ms, 1709208000000LL + 24 * 3600000LL);
	static const char *const bad[] = {
		"2026-11-29T05:09:29+0100",   /* RFC 3339 has the colon */
		"2026-11-29T05:09:29+01",     /* no minutes */
		"2026-11-29T05:09:29+24:00",  /* offset hour 24 */
		"2026-11-29T05:09:29+01:60",  /* offset minute 60 */
		"2026-11-29T05:09:29+01:00 ", /* trailing text */
		"2026-11-29T05:09:29,5Z",     /* ',' is dmesg's, not RFC 3339's */
		"2026-02-30T05:09:29+01:00",  /* impossible local date */
		"1970-01-01T00:30:00+01:00",  /* before the epoch in UTC */
		"9999-12-31T23:00:00-02:00",  /* past 9999 in UTC */
		"2026-11-29T05:09:29",        /* no zone */
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms = 42;
		off = 7;
		if (fp_time_parse_offset(bad[i], &ms, &off) != FP_EPARSE || ms != 42 || off != 7)
			fail_msg("\"%s\" was taken as %lld", bad[i], (long long)ms);
	}
	assert_int_equal(fp_time_parse_offset(NULL, &ms, &off), FP_EPARSE);
	/* fp_time_parse stays UTC-only */
	assert_int_equal(fp_time_parse("2026-11-29T05:09:29+01:00", &ms), FP_EPARSE);
}

/* The bounded scanners the kernel log parser uses: they stop after the stamp, need no NUL,
 * and return NULL (writing nothing) on anything else. */
static void test_time_scan_forms(void **state)
{
	int64_t ms = 0;
	int off = 0;
	/* dmesg --time-format iso: ',' fraction (microseconds), "+hh:mm" and "+hhmm" */
	static const char iso[] = "2025-01-25T10:34:54,859532+00:00 kernel: x";
	const char *e = iso + strlen(iso);
	const char *q = fp_time_scan_iso(iso, e, FP_TIME_SCAN_DMESG, &ms, &off);
	assert_ptr_equal(q, iso + 32);
	assert_int_equal(ms, 1737801294859LL);
	static const char iso2[] = "2025-01-25T12:34:54.859+0200";
	q = fp_time_scan_iso(iso2, iso2 + strlen(iso2), FP_TIME_SCAN_DMESG, &ms, &off);
	assert_ptr_equal(q, iso2 + strlen(iso2));
	assert_int_equal(ms, 1737801294859LL);
	assert_int_equal(off, 120);
	/* without the dmesg flag "+0200" and ',' are refused */
	assert_null(fp_time_scan_iso(iso2, iso2 + strlen(iso2), 0, &ms, NULL));
	assert_null(fp_time_scan_iso(iso, e, 0, &ms, NULL));
	/* ten fraction digits are too many for dmesg's form */
	static const char iso3[] = "2025-01-25T10:34:54.1234567890Z";
	assert_null(fp_time_scan_iso(iso3, iso3 + strlen(iso3), FP_TIME_SCAN_DMESG, &ms, NULL));
	/* bounded: the end cuts the stamp */
	assert_null(fp_time_scan_iso(iso, iso + 20, FP_TIME_SCAN_DMESG, &ms, NULL));

	/* ctime: day space-padded or not */
	static const char ct[] = "Sun Feb 23 16:24:18 2025]";
	q = fp_time_scan_ctime(ct, ct + strlen(ct), &ms);
	assert_ptr_equal(q, ct + 24);
	assert_int_equal(ms, 1740327858000LL);
	static const char ct2[] = "Mon Feb  3 06:04:08 2025";
	assert_ptr_equal(fp_time_scan_ctime(ct2, ct2 + strlen(ct2), &ms), ct2 + strlen(ct2));
	assert_int_equal(ms, 1738562648000LL);
	static const char *const bad_ct[] = {
		"Sun Feb 30 16:24:18 2025", /* impossible date */
		"Sun Fob 23 16:24:18 2025", /* no such month */
		"Sxn Feb 23 16:24:18 2025", /* no such day */
		"Sun Feb 23 24:24:18 2025", /* hour 24 */
		"Sun Feb 23 16:24:18 25",   /* 2-digit year */
		"Sun Feb 23 16:24:18",      /* no year */
	};
	for (size_t i = 0; i < sizeof(bad_ct) / sizeof(bad_ct[0]); i++) {
		ms = 42;
		if (fp_time_scan_ctime(bad_ct[i], bad_ct[i] + strlen(bad_ct[i]), &ms) || ms != 42)
			fail_msg("ctime \"%s\" was taken as %lld", bad_ct[i], (long long)ms);
	}

	/* syslog: the year from now_ms; a December line read early in January is last year's */
	int64_t now = 1795951691000LL + 3600000; /* 2026-11-29T12:28:11Z */
	static const char sl[] = "Nov 29 11:28:11 host kernel: x";
	q = fp_time_scan_syslog(sl, sl + strlen(sl), now, &ms);
	assert_ptr_equal(q, sl + 15);
	assert_int_equal(ms, 1795951691000LL);
	static const char sl2[] = "Nov 29 11:28:11.123456 host";
	q = fp_time_scan_syslog(sl2, sl2 + strlen(sl2), now, &ms);
	assert_ptr_equal(q, sl2 + 22);
	assert_int_equal(ms, 1795951691123LL);
	static const char sl3[] = "Dec 31 23:59:00 host";
	q = fp_time_scan_syslog(sl3, sl3 + strlen(sl3), 1767312000000LL /* 2026-01-02 */, &ms);
	assert_non_null(q);
	assert_int_equal(ms, 1767225540000LL); /* 2025-12-31T23:59:00Z */
	static const char *const bad_sl[] = {
		"Nov 31 11:28:11 h",  /* November has 30 */
		"Nov 29 11:60:11 h",  /* minute 60 */
		"Nov 29 11:28:11. h", /* no fraction digits */
		"Nov 29 11:28 h",     /* no seconds */
		"11:28:11 h",         /* no date */
	};
	for (size_t i = 0; i < sizeof(bad_sl) / sizeof(bad_sl[0]); i++) {
		ms = 42;
		if (fp_time_scan_syslog(bad_sl[i], bad_sl[i] + strlen(bad_sl[i]), now, &ms) ||
		    ms != 42)
			fail_msg("syslog \"%s\" was taken as %lld", bad_sl[i], (long long)ms);
	}
}

/* HTTP-date, IMF-fixdate only (RFC 9110 section 5.6.7): Redfish Retry-After. */
static void test_time_http(void **state)
{
	int64_t ms = 0;
	assert_int_equal(fp_time_parse_http("Sun, 06 Nov 1994 08:49:37 GMT", &ms), 0);
	assert_int_equal(ms, 784111777000LL);
	assert_int_equal(fp_time_parse_http("Sun, 6 Nov 1994 08:49:37 GMT", &ms), 0);
	assert_int_equal(ms, 784111777000LL);
	static const char *const bad[] = {
		"Sunday, 06-Nov-94 08:49:37 GMT", /* RFC 850, obsolete */
		"Sun Nov  6 08:49:37 1994",       /* asctime, obsolete */
		"Sun, 06 Nov 1994 08:49:37 UTC",  /* the zone is "GMT" */
		"Sun, 06 Nov 1994 08:49:37 GMT ", /* trailing text */
		"Sun, 31 Nov 1994 08:49:37 GMT",  /* impossible date */
		"Sun, 06 Nov 1969 08:49:37 GMT",  /* before 1970 */
		"sun, 06 nov 1994 08:49:37 GMT",  /* names are case-sensitive */
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms = 42;
		if (fp_time_parse_http(bad[i], &ms) != FP_EPARSE || ms != 42)
			fail_msg("\"%s\" was taken as %lld", bad[i], (long long)ms);
	}
	assert_int_equal(fp_time_parse_http(NULL, &ms), FP_EPARSE);
}

/* fp_time_parse refuses what RFC 3339 section 5.7 calls impossible, and years a 4-digit
 * date-fullyear cannot pair with epoch milliseconds; *wall_ms is left alone on refusal. */
static void test_time_bounds(void **state)
{
	static const char *const bad[] = {
		"2026-02-30T00:00:00Z",     /* February has 28 days in 2026 */
		"2026-02-29T00:00:00Z",     /* 2026 is not a leap year */
		"2100-02-29T00:00:00Z",     /* divisible by 100, not by 400 */
		"2026-04-31T00:00:00Z",     /* April has 30 */
		"2026-00-10T00:00:00Z",     /* month 0 */
		"2026-13-10T00:00:00Z",     /* month 13 */
		"2026-01-00T00:00:00Z",     /* day 0 */
		"2026-01-32T00:00:00Z",     /* day 32 */
		"2026-01-01T24:00:00Z",     /* hour 24 */
		"2026-01-01T10:60:00Z",     /* minute 60 */
		"2026-01-01T10:00:61Z",     /* second 61 */
		"2026-01-01T10:00:60Z",     /* a leap second only at 23:59 */
		"0000-01-01T00:00:00Z",     /* year 0 */
		"1969-12-31T23:59:59.999Z", /* before 1970 */
		"9999-12-31T23:59:60Z",     /* would be year 10000 */
		"2026-1-01T00:00:00Z",      /* 1-digit month */
		"+026-01-01T00:00:00Z",     /* a sign in the year */
		"2026-01-01T00:00: 1Z",     /* a space in the seconds */
		"2026-01-01T00:00:00.Z",    /* no fraction digits */
		"2026-01-01T00:00:00z",     /* lower-case zone */
		"2026-01-01",               /* no time */
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms = 42;
		if (fp_time_parse(bad[i], &ms) != FP_EPARSE || ms != 42)
			fail_msg("\"%s\" was taken as %lld", bad[i], (long long)ms);
	}
	int64_t ms = 0;
	assert_int_equal(fp_time_parse("2024-02-29T12:00:00Z", &ms), 0); /* leap year */
	assert_int_equal(ms, 1709208000000LL);
	assert_int_equal(fp_time_parse("2000-02-29T00:00:00Z", &ms), 0); /* divisible by 400 */
	assert_int_equal(ms, 951782400000LL);
	assert_int_equal(fp_time_parse("1970-01-01T00:00:00Z", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(fp_time_parse("9999-12-31T23:59:59.999Z", &ms), 0);
	assert_int_equal(ms, 253402300799999LL);
	/* 2016-12-31T23:59:60Z (the last leap second) reads as the next second */
	assert_int_equal(fp_time_parse("2016-12-31T23:59:60Z", &ms), 0);
	assert_int_equal(ms, 1483228800000LL);
	assert_int_equal(fp_time_parse("2026-11-30T10:00:00.1234567Z", &ms), 0);
	assert_int_equal(ms, 1796032800123LL);

	/* rendering always has a 4-digit year: the ends of the range, and values outside it
	 * written as the nearest end */
	char s[FP_TIME_LEN];
	fp_time_format(0, s);
	assert_string_equal(s, "1970-01-01T00:00:00.000Z");
	fp_time_format(253402300799999LL, s);
	assert_string_equal(s, "9999-12-31T23:59:59.999Z");
	fp_time_format(-1, s);
	assert_string_equal(s, "1970-01-01T00:00:00.000Z");
	fp_time_format(253402300800000LL, s);
	assert_string_equal(s, "9999-12-31T23:59:59.999Z");
	fp_time_format(1000, s);
	assert_string_equal(s, "1970-01-01T00:00:01.000Z");
}

static void test_json_strict(void **state)
{
	json_t *v = NULL;
	char e[128];
	assert_int_equal(jsonx_parse("{\"a\":1,\"a\":2}", 13, &v, e, sizeof(e)), FP_EPARSE);
	assert_null(v);
	assert_int_equal(jsonx_parse("{\"a\":1} x", 9, &v, e, sizeof(e)), FP_EPARSE);
	assert_int_equal(jsonx_parse("{\"a\":{\"b\":\"c\"}}", 15, &v, e, sizeof(e)), 0);
	assert_string_equal(jsonx_str(v, "a.b"), "c");
	static const char *const allowed[] = {"b", NULL};
	assert_int_equal(jsonx_check_keys(json_object_get(v, "a"), allowed, "a", e, sizeof(e)), 0);
	static const char *const none[] = {NULL};
	assert_int_equal(jsonx_check_keys(json_object_get(v, "a"), none, "a", e, sizeof(e)),
			 FP_EINVAL);
	assert_string_equal(e, "unknown field a.b");
	json_decref(v);
}

static void test_text_check(void **state)
{
	(void)state;
	char why[160];
	assert_int_equal(jsonx_text_check("replace NIC", 11, 256, why, sizeof(why)), 0);
	assert_int_equal(jsonx_text_check("Größe 🙂", strlen("Größe 🙂"), 7, why,
					  sizeof(why)),
			 0);
	assert_int_equal(jsonx_text_check("Größe 🙂", strlen("Größe 🙂"), 6, why,
					  sizeof(why)),
			 -1);
	assert_string_equal(why, "expected 1..6 characters, got 7");
	assert_int_equal(jsonx_text_check("", 0, 5, why, sizeof(why)), -1);
	assert_string_equal(why, "expected 1..5 characters, got 0");
	static const struct {
		const char *s;
		size_t len;
		const char *why;
	} bad[] = {
		{"a\nb", 3, "control characters are not allowed (U+000A at character 2)"},
		{"a\tb", 3, "control characters are not allowed (U+0009 at character 2)"},
		{"a\x7f", 2, "control characters are not allowed (U+007F at character 2)"},
		{"a\0b", 3, "NUL characters are not allowed (U+0000 at character 2)"},
		{"\xc2\x9b[2J", 5, "C1 control characters are not allowed (U+009B at character 1)"},
		{"x\xe2\x80\xaey", 5,
		 "bidirectional control characters are not allowed (U+202E at character 2)"},
		{"\xe2\x81\xa6", 3,
		 "bidirectional control characters are not allowed (U+2066 at character 1)"},
		{"\xe2\x81\xa9", 3,
		 "bidirectional control characters are not allowed (U+2069 at character 1)"},
		{"ab\xc0\xaf", 4, "not valid UTF-8 at byte 2"},       /* overlong '/' */
		{"\xed\xa0\x80", 3, "not valid UTF-8 at byte 0"},     /* surrogate */
		{"\xf4\x90\x80\x80", 4, "not valid UTF-8 at byte 0"}, /* above U+10FFFF */
		{"\xe2\x80", 2, "not valid UTF-8 at byte 0"},         /* cut short */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(jsonx_text_check(bad[i].s, bad[i].len, 256, why, sizeof(why)), -1);
		assert_string_equal(why, bad[i].why);
	}
	/* neighbours of the refused ranges pass: U+00A0, U+2029, U+202F, U+2065, U+206A */
	const char *ok = "\xc2\xa0\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa";
	assert_int_equal(jsonx_text_check(ok, strlen(ok), 5, why, sizeof(why)), 0);
}

static void test_json_error_hides_text(void **state)
{
	(void)state;
	/* a broken document's error says where, never what: the token is often a password */
	char err[256];
	json_t *v = NULL;
	const char *doc = "{\"spec\":{\"bmc\":{\"password\":\"LeakyPass99}}}";
	assert_int_equal(jsonx_parse(doc, strlen(doc), &v, err, sizeof(err)), FP_EPARSE);
	assert_null(v);
	assert_null(strstr(err, "Leaky"));
	assert_string_equal(err, "invalid JSON at line 1 column 42: premature end of input");
}

static void test_utf8_lossy(void **state)
{
	(void)state;
	/* well-formed text is kept as is, multi-byte characters included */
	char *s = jsonx_utf8_lossy("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\xa5");
	assert_string_equal(s, "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\xa5");
	free(s);
	/* an arrow cut after its first two bytes (a bounded snprintf), a lone continuation
	 * byte, an overlong '/', a UTF-16 surrogate, a byte from a BMC */
	s = jsonx_utf8_lossy("a\xe2\x86");
	assert_string_equal(s, "a??");
	free(s);
	s = jsonx_utf8_lossy("\x80x\xc0\xafy\xed\xa0\x80z\xaa");
	assert_string_equal(s, "?x??y???z?");
	free(s);
	assert_null(jsonx_utf8_lossy(NULL));
	/* json_string refuses bad UTF-8; the lossy one keeps the text */
	assert_null(json_string("lost \xe2\x86"));
	json_t *v = jsonx_string_lossy("kept \xe2\x86");
	assert_string_equal(json_string_value(v), "kept ??");
	json_decref(v);
}

/* jsonx_utf8_escaped: well-formed text kept, each other byte as \xNN (what a problem document
 * shows of a client's bad path, issue 16 item 7) */
static void test_utf8_escaped(void **state)
{
	(void)state;
	char *s = jsonx_utf8_escaped("caf\xc3\xa9 \xe2\x86\x92");
	assert_string_equal(s, "caf\xc3\xa9 \xe2\x86\x92");
	free(s);
	s = jsonx_utf8_escaped("/v1/nodes/\xff\xfe"
			       "ab\xe2\x86");
	assert_string_equal(s, "/v1/nodes/\\xFF\\xFEab\\xE2\\x86");
	free(s);
	s = jsonx_utf8_escaped("");
	assert_string_equal(s, "");
	free(s);
	assert_null(jsonx_utf8_escaped(NULL));
	json_t *v = json_string(s = jsonx_utf8_escaped("\xc0\xaf"));
	assert_non_null(v);
	assert_string_equal(json_string_value(v), "\\xC0\\xAF");
	json_decref(v);
	free(s);
}

/* memtrim: no trim below the threshold, one once it was noted, none again within the gap,
 * none after the gap without new notes, one after the gap with them */
static void test_memtrim(void **state)
{
	(void)state;
	assert_int_equal(memtrim_run(1000000), 0);
	memtrim_note(MEMTRIM_THRESHOLD - 1);
	assert_int_equal(memtrim_run(1000000), 0);
	memtrim_note(1);
	assert_int_equal(memtrim_run(1000000), 1);
	memtrim_note(MEMTRIM_THRESHOLD);
	assert_int_equal(memtrim_run(1000000 + MEMTRIM_MIN_GAP_MS - 1), 0);
	assert_int_equal(memtrim_run(1000000 + MEMTRIM_MIN_GAP_MS), 1);
	assert_int_equal(memtrim_run(1000000 + 3 * MEMTRIM_MIN_GAP_MS), 0);
}

static void test_metrics_render(void **state)
{
	struct metric_family *c = metrics_register(METRIC_COUNTER, "t_ops_total", "Ops.",
						   "kind,result", NULL, 0);
	metric_add(c, (const char *[]){"provision", "success"}, 2);
	metric_add(c, (const char *[]){"provision", "success"}, 1);
	struct metric_family *h = metrics_register(METRIC_HISTOGRAM, "t_dur_seconds", "Dur.", "",
						   (const double[]){0.1, 1}, 2);
	metric_observe(h, NULL, 0.5);
	struct buf b;
	buf_init(&b, 0);
	metrics_render(&b);
	assert_non_null(strstr(b.data, "t_ops_total{kind=\"provision\",result=\"success\"} 3\n"));
	assert_non_null(strstr(b.data, "t_dur_seconds_bucket{le=\"0.1\"} 0\n"));
	assert_non_null(strstr(b.data, "t_dur_seconds_bucket{le=\"1\"} 1\n"));
	assert_non_null(strstr(b.data, "t_dur_seconds_count 1\n"));
	buf_release(&b);
}

/* kvlines: keys and values with their line numbers; comments, blank and CRLF lines skipped; a
 * key alone has value ""; inline '#' only with KVLINES_INLINE_COMMENTS; a NUL byte and a line
 * over the bound stop the reader with PATH:LINE. */
static void test_kvlines(void **state)
{
	char text[] = "# head\n\n  url  http://a:1/x#y  \r\nflag\n\tkey\tv w\n";
	struct kvlines r;
	char *k, *v, err[128];
	kvlines_init(&r, text, sizeof(text) - 1, "f.conf", 64, 0);
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 1);
	assert_string_equal(k, "url");
	assert_string_equal(v, "http://a:1/x#y");
	assert_int_equal(r.lineno, 3);
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 1);
	assert_string_equal(k, "flag");
	assert_string_equal(v, "");
	assert_int_equal(r.lineno, 4);
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 1);
	assert_string_equal(k, "key");
	assert_string_equal(v, "v w");
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 0);

	char inl[] = "ibstat auto   # or a file\n# all comment\nnode n1";
	kvlines_init(&r, inl, sizeof(inl) - 1, "agent.conf", 64, KVLINES_INLINE_COMMENTS);
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 1);
	assert_string_equal(v, "auto");
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 1);
	assert_string_equal(k, "node");
	assert_string_equal(v, "n1");
	assert_int_equal(r.lineno, 3);
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 0);

	char nul[] = "a 1\nb \0 2\nc 3\n";
	kvlines_init(&r, nul, sizeof(nul) - 1, "n.conf", 64, 0);
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 1);
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), FP_EINVAL);
	assert_string_equal(err, "n.conf:2: line holds a NUL byte");
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 0); /* stopped */

	char lng[] = "k 12345\nk 123456\n"; /* bound 8: 7 bytes a line */
	kvlines_init(&r, lng, sizeof(lng) - 1, "l.conf", 8, 0);
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), 1);
	assert_string_equal(v, "12345");
	assert_int_equal(kvlines_next(&r, &k, &v, err, sizeof(err)), FP_EINVAL);
	assert_string_equal(err, "l.conf:2: line longer than 7 bytes");
	(void)state;
}

/* Runs jsontext_rewrite over in into a fresh buffer of at most max bytes (0 = default);
 * returns rc, the output in out (caller frees; "" on error). */
static int rewrite(const char *in, const struct jsontext_edit *ed, size_t max, char **out,
		   char *err, size_t errlen)
{
	struct buf b;
	buf_init(&b, max);
	int rc = jsontext_rewrite(in, strlen(in), ed, &b, err, errlen);
	*out = b.data ? buf_detach(&b, NULL) : strdup("");
	buf_release(&b);
	return rc;
}

static const char *const node_drop[] = {"spec.bmc.password", "spec.bmc.password_sealed",
					"spec.bmc.password_file", NULL};
static const char *const node_after[] = {"name", "uid", NULL};
static const struct jsontext_edit node_edit = {node_drop,  "metadata",
					       node_after, "\"resourceVersion\":\"42\"",
					       NULL,       0};

static void test_jsontext_copy(void **state)
{
	char *o, err[128];
	/* whitespace goes, every token is copied byte for byte */
	assert_int_equal(
		rewrite(" { \"a\" : [ 1 , -0.5e+3 , true , false , null , \"x\\u00e9\\n\" ] ,"
			" \"b\":{ } , \"c\":[ ] , \"\xc3\xa9\":\"\xe2\x82\xac\" }\n",
			NULL, 0, &o, err, sizeof(err)),
		0);
	assert_string_equal(o,
			    "{\"a\":[1,-0.5e+3,true,false,null,\"x\\u00e9\\n\"],\"b\":{},\"c\":[],"
			    "\"\xc3\xa9\":\"\xe2\x82\xac\"}");
	free(o);
	assert_int_equal(rewrite("7", NULL, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "7");
	free(o);
	/* not one JSON value: refused with where and why, nothing written */
	static const struct {
		const char *in, *why;
	} bad[] = {
		{"", "offset 0: expected a value"},
		{"{\"a\":1} x", "offset 8: text after the value"},
		{"{\"a\":01}", "offset 6: expected , or } in an object"},
		{"[1,]", "offset 3: unexpected character"},
		{"{\"a\" 1}", "offset 5: expected : after a member name"},
		{"{a:1}", "offset 1: expected a member name"},
		{"\"tab\there\"", "offset 4: control character in a string"},
		{"\"\\x\"", "offset 1: bad escape"},
		{"\"\\u12g4\"", "offset 1: bad \\u escape"},
		{"\"\xc3\"", "offset 1: invalid UTF-8 in a string"},
		{"\"abc", "offset 4: unterminated string"},
		{"1.", "offset 2: expected a digit"},
		{"-", "offset 1: bad number"},
		{"tru", "offset 0: unexpected character"},
		{"[1 2]", "offset 3: expected , or ] in an array"},
		{"{\"a\":1 \"b\":2}", "offset 7: expected , or } in an object"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf b;
		buf_init(&b, 0);
		buf_puts(&b, "kept");
		assert_int_equal(jsontext_rewrite(bad[i].in, strlen(bad[i].in), NULL, &b, err,
						  sizeof(err)),
				 FP_EPARSE);
		assert_string_equal(err, bad[i].why);
		assert_int_equal(b.len, 4);
		assert_string_equal(b.data, "kept");
		buf_release(&b);
	}
	/* depth is bounded: 65 nested arrays are refused, 64 copied */
	char deep[200];
	memset(deep, '[', 65);
	memset(deep + 65, ']', 65);
	deep[130] = 0;
	assert_int_equal(rewrite(deep, NULL, 0, &o, err, sizeof(err)), FP_EPARSE);
	assert_string_equal(err, "offset 64: nested too deeply");
	free(o);
	deep[129] = 0;
	assert_int_equal(rewrite(deep + 1, NULL, 0, &o, err, sizeof(err)), 0);
	assert_int_equal(strlen(o), 128);
	free(o);
	/* the output's maximum: FP_ETOOBIG, old length kept */
	assert_int_equal(rewrite("[\"0123456789\"]", NULL, 8, &o, err, sizeof(err)), FP_ETOOBIG);
	assert_string_equal(o, "");
	free(o);
}

static void test_jsontext_node_edit(void **state)
{
	char *o, err[128];
	assert_int_equal(
		rewrite("{\"metadata\":{\"name\":\"n1\",\"uid\":\"u\",\"labels\":{}},\"spec\":{\"bmc\":"
			"{\"driver\":\"ipmi\",\"password\":\"s3cret\",\"address\":\"a\","
			"\"password_sealed\":\"v1:x\",\"password_file\":\"/f\"},"
			"\"x\":{\"password\":\"not a bmc\"}},\"status\":{\"phase\":\"available\"}}",
			&node_edit, 0, &o, err, sizeof(err)),
		0);
	assert_string_equal(
		o, "{\"metadata\":{\"name\":\"n1\",\"uid\":\"u\",\"resourceVersion\":\"42\","
		   "\"labels\":{}},\"spec\":{\"bmc\":{\"driver\":\"ipmi\",\"address\":\"a\"},"
		   "\"x\":{\"password\":\"not a bmc\"}},\"status\":{\"phase\":"
		   "\"available\"}}");
	free(o);
	/* the member goes last when every member is a leading one, first when none is */
	assert_int_equal(rewrite("{\"metadata\":{\"uid\":\"u\",\"name\":\"n\"}}", &node_edit, 0, &o,
				 err, sizeof(err)),
			 0);
	assert_string_equal(
		o, "{\"metadata\":{\"uid\":\"u\",\"name\":\"n\",\"resourceVersion\":\"42\"}}");
	free(o);
	assert_int_equal(rewrite("{\"metadata\":{}}", &node_edit, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "{\"metadata\":{\"resourceVersion\":\"42\"}}");
	free(o);
	assert_int_equal(rewrite("{\"metadata\":{\"labels\":{\"name\":\"x\"}}}", &node_edit, 0, &o,
				 err, sizeof(err)),
			 0);
	assert_string_equal(
		o, "{\"metadata\":{\"resourceVersion\":\"42\",\"labels\":{\"name\":\"x\"}}}");
	free(o);
	/* no metadata object: nothing inserted; a dropped member that is the only one */
	assert_int_equal(rewrite("{\"spec\":{\"bmc\":{\"password\":{\"a\":[1]}}},\"metadata\":7}",
				 &node_edit, 0, &o, err, sizeof(err)),
			 0);
	assert_string_equal(o, "{\"spec\":{\"bmc\":{}},\"metadata\":7}");
	free(o);
	/* an escaped name on an edited path cannot be compared: refused, never let through */
	assert_int_equal(rewrite("{\"spec\":{\"bmc\":{\"p\\u0061ssword\":\"s\"}}}", &node_edit, 0,
				 &o, err, sizeof(err)),
			 FP_EPARSE);
	assert_string_equal(err, "offset 16: escaped member name in an edited object");
	free(o);
	assert_int_equal(rewrite("{\"metadata\":{\"n\\u0061me\":\"n\"}}", &node_edit, 0, &o, err,
				 sizeof(err)),
			 FP_EPARSE);
	free(o);
	/* ... but elsewhere it is copied as it is */
	assert_int_equal(rewrite("{\"status\":{\"p\\u0061ssword\":1}}", &node_edit, 0, &o, err,
				 sizeof(err)),
			 0);
	assert_string_equal(o, "{\"status\":{\"p\\u0061ssword\":1}}");
	free(o);
	/* arrays are never edited */
	assert_int_equal(rewrite("[{\"metadata\":{}}]", &node_edit, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "[{\"metadata\":{}}]");
	free(o);
	/* insert into the top object */
	const struct jsontext_edit top = {NULL, "", NULL, "\"k\":1", NULL, 0};
	assert_int_equal(rewrite("{\"a\":2}", &top, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "{\"k\":1,\"a\":2}");
	free(o);
	/* dropped values are reported where they were in the input: a member kept as text */
	static const char *const inv_drop[] = {"status.inventory", "status.none", NULL};
	struct jsontext_span sp[2] = {{9, 9, 9}, {9, 9, 9}};
	const struct jsontext_edit take = {inv_drop, NULL, NULL, NULL, sp, 0};
	const char *doc = "{\"status\":{\"phase\":\"x\",\"inventory\": {\"gpus\":[1,2]} ,\"y\":1}}";
	assert_int_equal(rewrite(doc, &take, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "{\"status\":{\"phase\":\"x\",\"y\":1}}");
	free(o);
	assert_int_equal(sp[0].off, 36);
	assert_int_equal(sp[0].len, 14);
	assert_memory_equal(doc + sp[0].off, "{\"gpus\":[1,2]}", 14);
	assert_int_equal(sp[0].count, 1);
	assert_int_equal(sp[1].off, 0);
	assert_int_equal(sp[1].len, 0);
	assert_int_equal(sp[1].count, 0);
	/* a duplicate key: both left out, the last one's span, and the count says two */
	assert_int_equal(rewrite("{\"status\":{\"inventory\":{\"a\":1},\"inventory\":{\"b\":2}}}",
				 &take, 0, &o, err, sizeof(err)),
			 0);
	assert_string_equal(o, "{\"status\":{}}");
	free(o);
	assert_int_equal(sp[0].off, 43);
	assert_int_equal(sp[0].len, 7);
	assert_int_equal(sp[0].count, 2);
	/* malformed edits */
	const char *const empty[] = {"spec..bmc", NULL};
	const struct jsontext_edit bad = {empty, NULL, NULL, NULL, NULL, 0};
	assert_int_equal(rewrite("{}", &bad, 0, &o, err, sizeof(err)), FP_EINVAL);
	free(o);
	const char *const many[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", NULL};
	const struct jsontext_edit bad2 = {many, NULL, NULL, NULL, NULL, 0};
	assert_int_equal(rewrite("{}", &bad2, 0, &o, err, sizeof(err)), FP_EINVAL);
	assert_string_equal(err, "more than 8 drop paths");
	free(o);
}

/* trusted (jsontext.h): the same edits, and once every top-level member a path starts with is
 * copied, the rest of the top object goes out as it is, unread. */
static void test_jsontext_trusted(void **state)
{
	static const char *const drop[] = {"spec.bmc.password", "metadata.resourceVersion", NULL};
	static const char *const after[] = {"name", "uid", NULL};
	struct jsontext_edit ed = {drop, "metadata", after, "\"resourceVersion\":\"42\"", NULL, 0};
	char *o, err[128];
	const char *doc = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"a\",\"uid\":\"u\","
			  "\"resourceVersion\":\"1\"},\"spec\":{\"bmc\":{\"driver\":\"ipmi\","
			  "\"password\":\"s\"}},\"status\":{\"phase\":\"x\",\"n\":[1,2]}}";
	const char *want = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"a\",\"uid\":\"u\","
			   "\"resourceVersion\":\"42\"},\"spec\":{\"bmc\":{\"driver\":\"ipmi\"}},"
			   "\"status\":{\"phase\":\"x\",\"n\":[1,2]}}";
	for (ed.trusted = 0; ed.trusted < 2; ed.trusted++) {
		assert_int_equal(rewrite(doc, &ed, 0, &o, err, sizeof(err)), 0);
		assert_string_equal(o, want);
		free(o);
		/* a path's member after the rest: still edited, so nothing is left unread */
		assert_int_equal(rewrite("{\"status\":{\"a\":1},\"spec\":{\"bmc\":{\"password\":"
					 "\"s\"}},\"metadata\":{}}",
					 &ed, 0, &o, err, sizeof(err)),
				 0);
		assert_string_equal(o, "{\"status\":{\"a\":1},\"spec\":{\"bmc\":{}},\"metadata\":{"
				       "\"resourceVersion\":\"42\"}}");
		free(o);
	}
	/* the rest is not read: its whitespace stays (untrusted: left out) ... */
	const char *spaced = "{\"metadata\":{},\"spec\":{},\"status\": {\"phase\" : \"x\"} }\n";
	ed.trusted = 1;
	assert_int_equal(rewrite(spaced, &ed, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{},"
			       "\"status\": {\"phase\" : \"x\"} }");
	free(o);
	ed.trusted = 0;
	assert_int_equal(rewrite(spaced, &ed, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{},"
			       "\"status\":{\"phase\":\"x\"}}");
	free(o);
	/* ... and a rest that breaks the promise goes out broken, as jsontext.h says */
	const char *broken = "{\"metadata\":{},\"spec\":{},\"status\":{\"x\":}}";
	assert_int_equal(rewrite(broken, &ed, 0, &o, err, sizeof(err)), FP_EPARSE);
	assert_string_equal(err, "offset 39: unexpected character");
	free(o);
	ed.trusted = 1;
	assert_int_equal(rewrite(broken, &ed, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{},"
			       "\"status\":{\"x\":}}");
	free(o);
	/* the top object must still end in its brace */
	assert_int_equal(rewrite("{\"metadata\":{},\"spec\":{},\"x\":1", &ed, 0, &o, err,
				 sizeof(err)),
			 FP_EPARSE);
	assert_string_equal(err, "offset 30: unterminated object");
	free(o);
	/* every member before the rest left out: no leading comma */
	static const char *const drop_a[] = {"a", NULL};
	const struct jsontext_edit da = {.drop = drop_a, .trusted = 1};
	assert_int_equal(rewrite("{\"a\":1,\"b\": 2}", &da, 0, &o, err, sizeof(err)), 0);
	assert_string_equal(o, "{\"b\": 2}");
	free(o);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_err_map),
		cmocka_unit_test(test_buf_bounded),
		cmocka_unit_test(test_time_roundtrip),
		cmocka_unit_test(test_time_bounds),
		cmocka_unit_test(test_time_offset),
		cmocka_unit_test(test_time_scan_forms),
		cmocka_unit_test(test_time_http),
		cmocka_unit_test(test_json_strict),
		cmocka_unit_test(test_metrics_render),
		cmocka_unit_test(test_utf8_lossy),
		cmocka_unit_test(test_utf8_escaped),
		cmocka_unit_test(test_memtrim),
		cmocka_unit_test(test_json_error_hides_text),
		cmocka_unit_test(test_text_check),
		cmocka_unit_test(test_kvlines),
		cmocka_unit_test(test_jsontext_copy),
		cmocka_unit_test(test_jsontext_node_edit),
		cmocka_unit_test(test_jsontext_trusted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
