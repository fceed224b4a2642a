/* layers: base */
/* test_procstat.c - base/procstat.h: the /proc/self/stat, /proc/self/limits and /proc/stat
 * parsers on texts of the shape proc(5) documents (a command name with spaces and ')' in it,
 * "unlimited", a stat line cut short, numbers that overflow), and the collector's families on
 * this process's own /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/metrics.h"
#include "base/procstat.h"
#include "base/version.h"
#include "check.h"

/* A /proc/<pid>/stat line of a serve (Linux 6.1): pid, comm, state, then fields 4 .. 52. */
static const char stat_line[] =
	"4242 (fleetplane) S 1 4242 4242 0 -1 4194560 2301 0 0 0 123 45 0 0 20 0 9 0 "
	"987654 1479368704 5097 18446744073709551615 94371684352000 94371689132485 "
	"140725744291600 0 0 0 0 4096 17026 0 0 0 17 1 0 0 0 0 0 94371689393616 "
	"94371689485112 94371700445184 140725744297679 140725744297750 140725744297750 "
	"140725744300011 0\n";

static void test_stat_fields(void **state)
{
	struct procstat st;
	ASSERT_OK(procstat_parse_stat(stat_line, strlen(stat_line), &st));
	ASSERT_EQ_INT(st.utime, 123);
	ASSERT_EQ_INT(st.stime, 45);
	ASSERT_EQ_INT(st.starttime, 987654);
	ASSERT_EQ_INT(st.vsize, 1479368704);
	ASSERT_EQ_INT(st.rss, 5097);
}

static void test_stat_comm_with_parens_and_spaces(void **state)
{
	/* comm is whatever the process set (prctl PR_SET_NAME): ") 1 2 (" must not shift fields */
	const char *t = "7 (a) 1 2 (b c)) R 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 1 0 33 44 55 0\n";
	struct procstat st;
	ASSERT_OK(procstat_parse_stat(t, strlen(t), &st));
	ASSERT_EQ_INT(st.utime, 11);
	ASSERT_EQ_INT(st.stime, 22);
	ASSERT_EQ_INT(st.starttime, 33);
	ASSERT_EQ_INT(st.vsize, 44);
	ASSERT_EQ_INT(st.rss, 55);
}

static void test_stat_bad(void **state)
{
	struct procstat st;
	/* no ')' at all */
	ASSERT_EQ_ERR(procstat_parse_stat("4242 fleetplane S 1", 19, &st), FP_EINVAL);
	/* cut after field 20: rss (24) missing */
	const char *cut = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0\n";
	ASSERT_EQ_ERR(procstat_parse_stat(cut, strlen(cut), &st), FP_EINVAL);
	/* utime not a number */
	const char *word = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 1x 2 0 0 20 0 1 0 3 4 5\n";
	ASSERT_EQ_ERR(procstat_parse_stat(word, strlen(word), &st), FP_EINVAL);
	/* vsize overflows 64 bits */
	const char *big = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 3 "
			  "18446744073709551616 5\n";
	ASSERT_EQ_ERR(procstat_parse_stat(big, strlen(big), &st), FP_EINVAL);
	/* the length bounds the parse: the same good line cut at its field 23 */
	const char *p = strstr(stat_line, " 1479368704");
	ASSERT_EQ_ERR(procstat_parse_stat(stat_line, (size_t)(p - stat_line), &st), FP_EINVAL);
}

static const char limits_text[] =
	"Limit                     Soft Limit           Hard Limit           Units     \n"
	"Max cpu time              unlimited            unlimited            seconds   \n"
	"Max file size             unlimited            unlimited            bytes     \n"
	"Max processes             514263               514263               processes \n"
	"Max open files            20000                1048576              files     \n"
	"Max locked memory         8388608              8388608              bytes     \n";

static void test_max_fds(void **state)
{
	int64_t v = 0;
	ASSERT_OK(procstat_parse_max_fds(limits_text, strlen(limits_text), &v));
	ASSERT_EQ_INT(v, 20000);
	const char *unl =
		"Max open files            unlimited            unlimited            files\n";
	ASSERT_OK(procstat_parse_max_fds(unl, strlen(unl), &v));
	ASSERT_EQ_INT(v, -1);
	const char *none = "Limit  Soft Limit  Hard Limit  Units\nMax processes 1 1 processes\n";
	ASSERT_EQ_ERR(procstat_parse_max_fds(none, strlen(none), &v), FP_ENOTFOUND);
	const char *bad =
		"Max open files            lots                 1048576              files\n";
	ASSERT_EQ_ERR(procstat_parse_max_fds(bad, strlen(bad), &v), FP_EINVAL);
	/* the key must start a line */
	const char *mid = "x Max open files 5 5 files\n";
	ASSERT_EQ_ERR(procstat_parse_max_fds(mid, strlen(mid), &v), FP_ENOTFOUND);
}

static void test_btime(void **state)
{
	const char *t = "cpu  10 0 20 300 0 0 1 0 0 0\ncpu0 10 0 20 300 0 0 1 0 0 0\n"
			"intr 12345 0 9 0\nctxt 99\nbtime 1796240000\nprocesses 4000\n";
	int64_t bt = 0;
	ASSERT_OK(procstat_parse_btime(t, strlen(t), &bt));
	ASSERT_EQ_INT(bt, 1796240000);
	ASSERT_EQ_ERR(procstat_parse_btime("cpu 1 2\nctxt 9\n", 15, &bt), FP_ENOTFOUND);
	ASSERT_EQ_ERR(procstat_parse_btime("btime -5\n", 9, &bt), FP_EINVAL);
}

/* The value of the unlabelled series name in the exposition text, or -1 when absent. */
static double series(const char *text, const char *name)
{
	char key[128];
	snprintf(key, sizeof(key), "\n%s ", name);
	const char *p = strstr(text, key);
	return p ? strtod(p + strlen(key), NULL) : -1;
}

static void test_collector_on_own_proc(void **state)
{
	procstat_register_metrics();
	procstat_register_metrics(); /* idempotent: one set of families */
	struct buf b;
	buf_init(&b, 0);
	metrics_render(&b);
	const char *t = b.data;
	ASSERT_EQ_INT(strstr(t, "# TYPE process_cpu_seconds_total counter\n") != NULL, 1);
	const char *first = strstr(t, "# TYPE process_open_fds gauge");
	ASSERT_EQ_INT(first != NULL, 1);
	ASSERT_EQ_INT(strstr(first + 1, "# TYPE process_open_fds gauge") == NULL, 1);
	ASSERT_EQ_INT(series(t, "process_cpu_seconds_total") >= 0, 1);
	ASSERT_EQ_INT(series(t, "process_resident_memory_bytes") > 0, 1);
	ASSERT_EQ_INT(series(t, "process_virtual_memory_bytes") >=
			      series(t, "process_resident_memory_bytes"),
		      1);
	/* stdin, stdout, stderr at least; the listing's own descriptor is not counted */
	ASSERT_EQ_INT(series(t, "process_open_fds") >= 3, 1);
	ASSERT_EQ_INT(series(t, "process_max_fds") == (double)sysconf(_SC_OPEN_MAX), 1);
	/* started after 2020-01-01 and not in the future */
	double start = series(t, "process_start_time_seconds");
	ASSERT_EQ_INT(start > 1577836800.0 && start <= (double)time(NULL) + 1, 1);
	char info[160];
	snprintf(info, sizeof(info), "\nfleetplane_build_info{version=\"%s\",commit=\"%s\"} 1\n",
		 FP_VERSION, fp_commit());
	ASSERT_EQ_INT(strstr(t, info) != NULL, 1);
	ASSERT_EQ_INT(strlen(fp_commit()) > 0, 1);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat_fields),
		cmocka_unit_test(test_stat_comm_with_parens_and_spaces),
		cmocka_unit_test(test_stat_bad),
		cmocka_unit_test(test_max_fds),
		cmocka_unit_test(test_btime),
		cmocka_unit_test(test_collector_on_own_proc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
