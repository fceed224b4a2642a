/* procstat.c - process metrics from /proc (see procstat.h). */
#include "base/procstat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/metrics.h"
#include "base/version.h"

/* Reads a decimal number at text[*i] (an optional '-' when neg_ok), advancing *i past it.
 * Returns 0, or FP_EINVAL when there is no digit or the value overflows. */
static int parse_num(const char *text, size_t len, size_t *i, int neg_ok, uint64_t *mag, int *neg)
{
	size_t p = *i;
	*neg = 0;
	if (neg_ok && p < len && text[p] == '-') {
		*neg = 1;
		p++;
	}
	if (p >= len || text[p] < '0' || text[p] > '9')
		return FP_EINVAL;
	uint64_t v = 0;
	for (; p < len && text[p] >= '0' && text[p] <= '9'; p++) {
		unsigned d = (unsigned)(text[p] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return FP_EINVAL;
		v = v * 10 + d;
	}
	*mag = v;
	*i = p;
	return 0;
}

static void skip_blanks(const char *text, size_t len, size_t *i)
{
	while (*i < len && (text[*i] == ' ' || text[*i] == '\t'))
		(*i)++;
}

int procstat_parse_stat(const char *text, size_t len, struct procstat *out)
{
	size_t close = len;
	for (size_t i = len; i > 0; i--)
		if (text[i - 1] == ')') {
			close = i - 1;
			break;
		}
	if (close == len)
		return FP_EINVAL;
	memset(out, 0, sizeof(*out));
	size_t i = close + 1;
	/* fields 3 (state) .. 24 (rss), one blank-separated word each */
	for (int field = 3; field <= 24; field++) {
		skip_blanks(text, len, &i);
		if (i >= len || text[i] == '\n')
			return FP_EINVAL;
		uint64_t v = 0;
		int neg = 0;
		switch (field) {
		case 14:
		case 15:
		case 22:
		case 23:
		case 24:
			if (parse_num(text, len, &i, field == 24, &v, &neg) < 0)
				return FP_EINVAL;
			if (i < len && text[i] != ' ' && text[i] != '\n')
				return FP_EINVAL;
			break;
		default:
			while (i < len && text[i] != ' ' && text[i] != '\t' && text[i] != '\n')
				i++;
			continue;
		}
		if (field == 14)
			out->utime = v;
		else if (field == 15)
			out->stime = v;
		else if (field == 22)
			out->starttime = v;
		else if (field == 23)
			out->vsize = v;
		else {
			if (v > (uint64_t)INT64_MAX)
				return FP_EINVAL;
			out->rss = neg ? -(int64_t)v : (int64_t)v;
		}
	}
	return 0;
}

/* Finds the line starting with key (at the start of the text or after a '\n'); returns the
 * index just past key, or len when there is none. */
static size_t find_line(const char *text, size_t len, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i + kl <= len;) {
		if (memcmp(text + i, key, kl) == 0)
			return i + kl;
		const char *nl = memchr(text + i, '\n', len - i);
		if (!nl)
			break;
		i = (size_t)(nl - text) + 1;
	}
	return len;
}

/* The number (or "unlimited" as -1 when allowed) after the blanks at text[i]. */
static int value_after(const char *text, size_t len, size_t i, int unlimited_ok, int64_t *v)
{
	skip_blanks(text, len, &i);
	if (unlimited_ok && len - i >= 9 && memcmp(text + i, "unlimited", 9) == 0) {
		*v = -1;
		return 0;
	}
	uint64_t m;
	int neg;
	if (parse_num(text, len, &i, 0, &m, &neg) < 0 || m > (uint64_t)INT64_MAX)
		return FP_EINVAL;
	if (i < len && text[i] != ' ' && text[i] != '\t' && text[i] != '\n')
		return FP_EINVAL;
	*v = (int64_t)m;
	return 0;
}

int procstat_parse_max_fds(const char *text, size_t len, int64_t *soft)
{
	size_t i = find_line(text, len, "Max open files ");
	if (i == len)
		return FP_ENOTFOUND;
	return value_after(text, len, i, 1, soft);
}

int procstat_parse_btime(const char *text, size_t len, int64_t *btime)
{
	size_t i = find_line(text, len, "btime ");
	if (i == len)
		return FP_ENOTFOUND;
	return value_after(text, len, i, 0, btime);
}

/* /proc/stat has a line per CPU and an "intr" line of one count per interrupt before btime:
 * tens of KiB on a large machine. Read once, at registration. */
#define PROCSTAT_STAT_MAX (1u << 20)
#define PROCSTAT_SMALL_MAX 8192 /* /proc/self/stat is < 1 KiB, /proc/self/limits ~1.5 KiB */

/* The descriptor an entry of /proc/self/fd names, or -1. */
static long fd_name(const char *name)
{
	size_t i = 0;
	uint64_t v;
	int neg;
	size_t len = strlen(name);
	if (parse_num(name, len, &i, 0, &v, &neg) < 0 || i != len || v > INT32_MAX)
		return -1;
	return (long)v;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int64_t g_btime = -1;

static void family(struct buf *out, const char *name, const char *type, const char *help)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void collect(struct buf *out, void *arg)
{
	(void)arg;
	char small[PROCSTAT_SMALL_MAX];
	long tck = sysconf(_SC_CLK_TCK);
	long page = sysconf(_SC_PAGESIZE);
	ssize_t n = buf_read_into("/proc/self/stat", small, sizeof(small));
	struct procstat st;
	if (n > 0 && tck > 0 && page > 0 && procstat_parse_stat(small, (size_t)n, &st) == 0) {
		family(out, "process_cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.");
		buf_printf(out, "process_cpu_seconds_total %.15g\n",
			   (double)(st.utime + st.stime) / (double)tck);
		family(out, "process_virtual_memory_bytes", "gauge",
		       "Virtual memory size in bytes.");
		buf_printf(out, "process_virtual_memory_bytes %llu\n",
			   (unsigned long long)st.vsize);
		family(out, "process_resident_memory_bytes", "gauge",
		       "Resident memory size in bytes.");
		buf_printf(out, "process_resident_memory_bytes %lld\n", (long long)(st.rss * page));
		if (g_btime >= 0) {
			family(out, "process_start_time_seconds", "gauge",
			       "Start time of the process since unix epoch in seconds.");
			buf_printf(out, "process_start_time_seconds %.15g\n",
				   (double)g_btime + (double)st.starttime / (double)tck);
		}
	}
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		long fds = 0;
		int self = dirfd(d);
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && fd_name(e->d_name) != self)
				fds++;
		closedir(d);
		family(out, "process_open_fds", "gauge", "Number of open file descriptors.");
		buf_printf(out, "process_open_fds %ld\n", fds);
	}
	n = buf_read_into("/proc/self/limits", small, sizeof(small));
	int64_t maxfds;
	if (n > 0 && procstat_parse_max_fds(small, (size_t)n, &maxfds) == 0) {
		family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
		if (maxfds < 0)
			buf_puts(out, "process_max_fds +Inf\n");
		else
			buf_printf(out, "process_max_fds %lld\n", (long long)maxfds);
	}
	family(out, "fleetplane_build_info", "gauge",
	       "A constant 1 labelled with the version and git commit the binary was built from.");
	buf_puts(out, "fleetplane_build_info{version=\"");
	metrics_escape(out, FP_VERSION);
	buf_puts(out, "\",commit=\"");
	metrics_escape(out, fp_commit());
	buf_puts(out, "\"} 1\n");
}

static void register_once(void)
{
	char *text = xmalloc(PROCSTAT_STAT_MAX);
	ssize_t n = buf_read_into("/proc/stat", text, PROCSTAT_STAT_MAX);
	int64_t bt;
	if (n > 0 && procstat_parse_btime(text, (size_t)n, &bt) == 0)
		g_btime = bt;
	free(text);
	metrics_add_collector(collect, NULL);
}

void procstat_register_metrics(void)
{
	pthread_once(&g_once, register_once);
}
