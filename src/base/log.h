/* log.h - one line per event in one structured format: logfmt by default, or one JSON object per
 * line (log_format_set). Call sites keep the OpenBSD log.h style - a lower-case message, then
 * key=value context, printf-checked:
 *   log_warn("power on failed node=%s bmc=%s rc=%d", ...);
 * and the logger writes
 *   ts=2026-12-02T19:40:00.123Z level=warn msg="power on failed" node=n1 bmc=ipmi rc=-110
 *   {"ts":"2026-12-02T19:40:00.123Z","level":"warn","msg":"power on failed","node":"n1",...}
 * The split into msg and fields is read from the FORMAT STRING, never from the formatted text:
 * a whitespace-separated token of the format that starts with the literal `key=` (key:
 * [A-Za-z_][A-Za-z0-9_.-]*) is a field whose value is the rest of that token, with every
 * conversion's output taken whole (spaces, quotes, '=' and newlines included); `key=\"%s\"`
 * drops the literal quotes; a trailing literal ',', ';' or ':' of an unquoted value is dropped.
 * Every other token joins msg. So a string from outside (a BMC answer, a node name, an error
 * text) can never start a key of its own or a second line: values are quoted and escaped on
 * output (logfmt: `"` `\` as \" \\, newline \n, CR \r, tab \t, other control bytes \u00XX;
 * bytes that are not UTF-8 become '?'). The keys ts, level and msg are the logger's; a field of
 * that name, or a repeated one, gets a "_2"-style suffix. Every value is a string in JSON mode.
 * A line holds at most LOG_LINE_MAX bytes of formatted text (then log_truncated=1).
 * Lines go to stderr (or the FILE given to log_init), each written whole under one lock.
 * Thread-safe. base/core/store/driver never log at error level (CONVENTIONS.md). The key
 * vocabulary is in docs/operations.md "Logs". */
#ifndef FP_BASE_LOG_H
#define FP_BASE_LOG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

enum log_level {
	LOG_LVL_DEBUG = 0,
	LOG_LVL_INFO,
	LOG_LVL_WARN,
	LOG_LVL_ERROR,
	LOG_LVL_OFF
};

enum log_format {
	LOG_FMT_LOGFMT = 0, /* the default */
	LOG_FMT_JSON,
};

/* Bytes of formatted message and values per line, before escaping. */
#define LOG_LINE_MAX 8192

/* log_init sets the minimum level and the sink (NULL = stderr). The FILE is borrowed. The
 * format is left as it is. */
void log_init(enum log_level min, FILE *sink);
enum log_level log_level_get(void);
/* log_level_parse maps "debug|info|warn|error|off" to a level; returns -1 on anything else. */
int log_level_parse(const char *s);
/* log_format_set picks the line format of every later line (process-wide). */
void log_format_set(enum log_format f);
enum log_format log_format_get(void);
/* log_format_parse maps "logfmt|json" to a format; returns -1 on anything else (NULL too). */
int log_format_parse(const char *s);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* log_format_line renders the line log_msg would write (without the newline) for a time of
 * unix_ms milliseconds since 1970 UTC, in format f: a malloc'd NUL-terminated string the caller
 * frees (never NULL). For tests and for callers that write lines elsewhere. */
char *log_format_line(enum log_format f, enum log_level lvl, int64_t unix_ms, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
char *log_vformat_line(enum log_format f, enum log_level lvl, int64_t unix_ms, const char *fmt,
		       va_list ap);

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)

#endif
