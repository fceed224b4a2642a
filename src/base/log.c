/* log.c - the process-wide logger (see log.h). */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static _Atomic enum log_level g_min = LOG_LVL_INFO; /* SIGHUP reload sets it while others log */
static FILE *g_sink;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

void log_init(enum log_level min, FILE *sink)
{
	g_min = min;
	g_sink = sink;
}

enum log_level log_level_get(void)
{
	return g_min;
}

int log_level_parse(const char *s)
{
	static const char *names[] = {"debug", "info", "warn", "error", "off"};
	for (int i = 0; i < 5; i++)
		if (s && strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *lv[] = {"debug", "info", "warn", "error"};
	if (lvl < g_min || lvl >= LOG_LVL_OFF)
		return;
	struct timeval tv;
	struct tm tm;
	char ts[32];
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	FILE *out = g_sink ? g_sink : stderr;
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&g_mu);
	fprintf(out, "%s.%03ldZ %s ", ts, (long)(tv.tv_usec / 1000), lv[lvl]);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	fflush(out);
	pthread_mutex_unlock(&g_mu);
	va_end(ap);
}
