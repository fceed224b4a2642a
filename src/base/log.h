/* log.h - one line per event, lower-case message then key=value context (OpenBSD log.h):
 *   log_warn("power on failed node=%s bmc=%s rc=%d", ...);
 * Lines go to stderr (or the file given to log_init) with an RFC 3339 UTC timestamp and level.
 * Thread-safe. base/core/store/driver never log at error level (CONVENTIONS.md). */
#ifndef FP_BASE_LOG_H
#define FP_BASE_LOG_H

#include <stdio.h>

enum log_level {
	LOG_LVL_DEBUG = 0,
	LOG_LVL_INFO,
	LOG_LVL_WARN,
	LOG_LVL_ERROR,
	LOG_LVL_OFF
};

/* log_init sets the minimum level and the sink (NULL = stderr). The FILE is borrowed. */
void log_init(enum log_level min, FILE *sink);
enum log_level log_level_get(void);
/* log_level_parse maps "debug|info|warn|error|off" to a level; returns -1 on anything else. */
int log_level_parse(const char *s);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)

#endif
