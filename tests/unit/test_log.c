/* layers: base */
/* test_log.c - the structured logger (base/log.h): the split of a call's format string into msg
 * and fields, logfmt quoting and escaping of every awkward value, JSON lines with the same keys
 * (parsed back with jansson). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "check.h"

/* 2026-12-02T19:40:00.123Z */
#define T0 1796240400123LL

#define LINE_EQ(want, ...)                                                 \
	do {                                                               \
		char *got_ = log_format_line(LOG_FMT_LOGFMT, __VA_ARGS__); \
		ASSERT_EQ_STR(got_, want);                                 \
		free(got_);                                                \
	} while (0)

static void test_log_logfmt_basic(void **state)
{
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=warn msg=\"power on failed\" node=n1 "
		"bmc=ipmi rc=-110",
		LOG_LVL_WARN, T0, "power on failed node=%s bmc=%s rc=%d", "n1", "ipmi", -110);
	/* a component prefix "store:" stays in msg; a trailing ':' of msg and a trailing ','
	 * of a bare value are punctuation of the format, not data */
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=info msg=\"cache: re-listing\" rev=42",
		LOG_LVL_INFO, T0, "cache: re-listing rev=%lld,", 42LL);
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=debug msg=ready", LOG_LVL_DEBUG, T0, "ready");
	/* conversions of every length modifier keep their arguments in step */
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=error msg=\"n 100%\" a=1 b=2 c=3 d=4 e=0x1f "
		"f=2.50 g=\"  ab\" h=x",
		LOG_LVL_ERROR, T0, "n 100%% a=%zu b=%ld c=%lld d=%jd e=%#x f=%.2f g=%*s h=%c",
		(size_t)1, 2L, 3LL, (intmax_t)4, 31u, 2.5, 4, "ab", 'x');
}

static void test_log_logfmt_quoting(void **state)
{
	/* spaces, quotes, backslashes, '=', newlines, control bytes, the empty string */
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=info msg=m err=\"no route to host\"",
		LOG_LVL_INFO, T0, "m err=%s", "no route to host");
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=info msg=m v=\"say \\\"hi\\\"\"", LOG_LVL_INFO,
		T0, "m v=%s", "say \"hi\"");
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=info msg=m v=\"C:\\\\tmp\"", LOG_LVL_INFO, T0,
		"m v=%s", "C:\\tmp");
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=info msg=m v=\"a=b\"", LOG_LVL_INFO, T0,
		"m v=%s", "a=b");
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=info msg=m v=\"l1\\nl2\\r\\t\\u0001\\u007f\"",
		LOG_LVL_INFO, T0, "m v=%s", "l1\nl2\r\t\x01\x7f");
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=info msg=m v=\"\" w=\"\"", LOG_LVL_INFO, T0,
		"m v=%s w=\"%s\"", "", "");
	/* UTF-8 passes as it is; a byte that is not UTF-8 becomes '?' */
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=info msg=m v=r\xc3\xa9seau w=a?b", LOG_LVL_INFO,
		T0, "m v=%s w=%s", "r\xc3\xa9seau",
		"a\xff"
		"b");
	/* a quoted value in the format keeps its spaces and loses the literal quotes */
	LINE_EQ("ts=2026-12-02T19:40:00.123Z level=warn msg=\"lifecycle: refused\" node=n1 "
		"err=\"phase available: no\"",
		LOG_LVL_WARN, T0, "lifecycle: refused node=%s err=\"%s\"", "n1",
		"phase available: no");
}

static void test_log_no_forged_keys(void **state)
{
	/* a user string with " level=error node=evil\nts=..." stays one value on one line */
	const char *hostile = "x level=error node=evil\nts=2020-01-01T00:00:00Z msg=forged";
	char *s = log_format_line(LOG_FMT_LOGFMT, LOG_LVL_INFO, T0, "hold set node=%s why=%s", "n1",
				  hostile);
	ASSERT_EQ_STR(s, "ts=2026-12-02T19:40:00.123Z level=info msg=\"hold set\" node=n1 "
			 "why=\"x level=error node=evil\\nts=2020-01-01T00:00:00Z msg=forged\"");
	assert_null(strchr(s, '\n'));
	free(s);
	/* in msg too: the conversion's output is part of msg, never a field */
	s = log_format_line(LOG_FMT_LOGFMT, LOG_LVL_INFO, T0, "the leader is now %s", "a node=b");
	ASSERT_EQ_STR(s,
		      "ts=2026-12-02T19:40:00.123Z level=info msg=\"the leader is now a node=b\"");
	free(s);
	/* the logger's own keys and repeated keys are renamed, never doubled */
	s = log_format_line(LOG_FMT_LOGFMT, LOG_LVL_INFO, T0, "m msg=%s node=%s node=%s", "a", "b",
			    "c");
	ASSERT_EQ_STR(s, "ts=2026-12-02T19:40:00.123Z level=info msg=m msg_2=a node=b node_2=c");
	free(s);
}

static void test_log_json(void **state)
{
	const char *hostile = "say \"hi\"\\ a=b\nnext\x01 r\xc3\xa9seau \xff";
	char *s = log_format_line(LOG_FMT_JSON, LOG_LVL_WARN, T0,
				  "power on failed node=%s why=\"%s\" rc=%d trailing %s", "n1",
				  hostile, -5, "words");
	assert_null(strchr(s, '\n'));
	json_error_t je;
	json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		fail_msg("not JSON: %s: %s", je.text, s);
	ASSERT_EQ_INT(json_object_size(o), 6);
	ASSERT_EQ_STR(json_string_value(json_object_get(o, "ts")), "2026-12-02T19:40:00.123Z");
	ASSERT_EQ_STR(json_string_value(json_object_get(o, "level")), "warn");
	ASSERT_EQ_STR(json_string_value(json_object_get(o, "msg")),
		      "power on failed trailing words");
	ASSERT_EQ_STR(json_string_value(json_object_get(o, "node")), "n1");
	ASSERT_EQ_STR(json_string_value(json_object_get(o, "why")),
		      "say \"hi\"\\ a=b\nnext\x01 r\xc3\xa9seau ?");
	ASSERT_EQ_STR(json_string_value(json_object_get(o, "rc")), "-5");
	/* keys in the same order as logfmt: ts, level, msg, then the fields */
	assert_true(strncmp(s, "{\"ts\":", 6) == 0);
	assert_non_null(strstr(s, "\"level\":\"warn\",\"msg\":"));
	json_decref(o);
	free(s);
	/* the same call in logfmt has the same keys */
	s = log_format_line(LOG_FMT_LOGFMT, LOG_LVL_WARN, T0, "power on failed node=%s rc=%d", "n1",
			    -5);
	ASSERT_EQ_STR(
		s, "ts=2026-12-02T19:40:00.123Z level=warn msg=\"power on failed\" node=n1 rc=-5");
	free(s);
}

static void test_log_bounded(void **state)
{
	/* a value longer than the line's bound is cut and the line says so */
	char *big = malloc(3 * LOG_LINE_MAX);
	memset(big, 'a', 3 * LOG_LINE_MAX - 1);
	big[3 * LOG_LINE_MAX - 1] = '\0';
	char *s = log_format_line(LOG_FMT_LOGFMT, LOG_LVL_INFO, T0, "m v=%s n=%d", big, 7);
	assert_true(strlen(s) < LOG_LINE_MAX + 200);
	assert_non_null(strstr(s, " log_truncated=1"));
	free(s);
	free(big);
}

static void test_log_parse(void **state)
{
	ASSERT_EQ_INT(log_format_parse("logfmt"), LOG_FMT_LOGFMT);
	ASSERT_EQ_INT(log_format_parse("json"), LOG_FMT_JSON);
	ASSERT_EQ_INT(log_format_parse("JSON"), -1);
	ASSERT_EQ_INT(log_format_parse(NULL), -1);
	ASSERT_EQ_INT(log_level_parse("warn"), LOG_LVL_WARN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_logfmt_basic),
		cmocka_unit_test(test_log_logfmt_quoting),
		cmocka_unit_test(test_log_no_forged_keys),
		cmocka_unit_test(test_log_json),
		cmocka_unit_test(test_log_bounded),
		cmocka_unit_test(test_log_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
