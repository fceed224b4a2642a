/* health_int.h - private interface between the parts of the health controller: health.c
 * (controller state, evaluation, node changes, store transactions, breakers, sweep, start) and
 * health_parse.c (validation and parsing of an agent report into struct rep). Nothing outside
 * src/controller/health*.c includes it; the public interface is health.h. */
#ifndef FP_CONTROLLER_HEALTH_INT_H
#define FP_CONTROLLER_HEALTH_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/health.h"

#define REPORT_MAX_EVENTS 256
#define REPORT_MAX_DETECTORS 16
#define REPORT_MAX_STR 1024
#define REPORT_MAX_ID 64

struct rep_ev {
	const char *id, *source, *code, *process, *job, *message, *raw, *bus, *time_str;
	int has_index, has_pid;
	int64_t gpu_index, pid, time;
	char bus_lc[24];
	char gpu[32]; /* window key part: bus id, "index:N" or "" */
	/* decision */
	int dup;
	int64_t fence; /* health_fence of the node for this event's GPU */
	char rule_code[HEALTH_CODE_MAX];
	enum health_severity sev;
	const char *action; /* static */
	int dry;
	int holds; /* this event placed the hold */
	char reason[512];
	char audit[1024];
};

struct rep_det {
	const char *name, *status, *reason, *message;
	int live;
};

struct rep {
	const char *version, *boot_id, *job;
	int64_t interval;
	struct rep_det det[REPORT_MAX_DETECTORS];
	size_t ndet;
	int has_detectors;
	struct rep_ev *ev;
	size_t nev;
};

/* ---- health_parse.c */

int health_parse_report(const json_t *r, struct rep *p, char *err, size_t errlen);

#endif
