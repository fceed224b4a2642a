/* base/procstat.h - the process metrics of the Prometheus client libraries, read from Linux's
 * /proc, and fleetplane_build_info.
 *
 * Names, types and meanings follow "Writing client libraries", section "Process metrics"
 * (https://prometheus.io/docs/instrumenting/writing_clientlibs/#process-metrics), as the Go
 * client (client_golang's process collector) exports them on Linux:
 *   process_cpu_seconds_total       counter  user + system CPU time (stat fields 14, 15 / ticks)
 *   process_virtual_memory_bytes    gauge    virtual memory size (stat field 23, bytes)
 *   process_resident_memory_bytes   gauge    resident set size (stat field 24, pages x pagesize)
 *   process_open_fds                gauge    entries of /proc/self/fd
 *   process_max_fds                 gauge    soft limit "Max open files" of /proc/self/limits
 *   process_start_time_seconds      gauge    start time since the Unix epoch: /proc/stat btime
 *                                            + stat field 22 / ticks
 * Field numbers are proc(5)'s, counted from 1 at the pid. The parsers are pure (text in,
 * numbers out) so tests and fuzzers feed them any text; the collector reads the files with a
 * size bound and leaves a family out when its file cannot be read or parsed (a scrape never
 * fails for it). */
#ifndef FP_BASE_PROCSTAT_H
#define FP_BASE_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>

/* The fields of /proc/<pid>/stat the process metrics use, in the file's units. */
struct procstat {
	uint64_t utime, stime; /* clock ticks (sysconf(_SC_CLK_TCK)) */
	uint64_t starttime;    /* clock ticks after boot */
	uint64_t vsize;        /* bytes */
	int64_t rss;           /* pages */
};

/* Parses the text of /proc/<pid>/stat (len bytes, need not be NUL-terminated). The command
 * name, field 2, is skipped up to the LAST ')' of the text, since the name may itself hold
 * spaces and parentheses. Returns 0, or FP_EINVAL when there is no ')' or one of fields 3 .. 24
 * is missing or, for those used, not a decimal number that fits (out is then unspecified). */
int procstat_parse_stat(const char *text, size_t len, struct procstat *out);

/* Finds the "Max open files" line of /proc/<pid>/limits (len bytes) and stores its soft limit
 * (the first number) in *soft; "unlimited" is stored as -1. Returns 0, or FP_ENOTFOUND when no
 * such line is there, FP_EINVAL when its value is neither a number nor "unlimited". */
int procstat_parse_max_fds(const char *text, size_t len, int64_t *soft);

/* Finds the "btime N" line of /proc/stat (len bytes): the boot time, seconds since the epoch.
 * Returns 0, or FP_ENOTFOUND / FP_EINVAL as procstat_parse_max_fds. */
int procstat_parse_btime(const char *text, size_t len, int64_t *btime);

/* Registers (once per process; later calls do nothing) a metrics collector that renders the
 * six process_* families above for the calling process, and fleetplane_build_info{version,
 * commit} 1 (base/version.h). The boot time is read once, here; the rest on every scrape
 * (three small reads of /proc/self and a directory listing of /proc/self/fd). Thread-safe. */
void procstat_register_metrics(void);

#endif
