/* controller/health_parse.c - validation of an agent's health report (see health.h,
 * health_report; the shape is in docs/api.md and docs/health.md). A report is checked whole
 * before anything is evaluated or written: unknown keys, types, bounded lengths and counts,
 * ids, PCI bus ids, detector and source names; every error names the field. The result is a
 * struct rep (health_int.h) whose strings are borrowed from the JSON body; health.c evaluates
 * it. Pure: no store, no clock, no shared state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/timefmt.h"
#include "controller/health.h"
#include "controller/health_int.h"

static const char *const detector_names[] = {"kernel", "nvidia-smi", "nvml",
					     "dcgm",   "ibstat",     NULL};
static const char *const source_names[] = {"kernel", "nvidia-smi", "nvml",  "dcgm",
					   "ibstat", "agent",      "slurm", NULL};
static const char *const detector_reasons[] = {"NotConfigured", "ProbeTimeout", "ProbeFailed",
					       "Unparseable", NULL};

static int in_list(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

static int opt_str(const json_t *o, const char *key, const char *where, size_t max,
		   const char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: expected a string", where, key);
	if (json_string_length(v) > max)
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: longer than %zu bytes", where, key,
			       max);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: contains a NUL byte", where, key);
	*out = json_string_value(v);
	return 0;
}

static int opt_int(const json_t *o, const char *key, const char *where, int64_t lo, int64_t hi,
		   int *has, int64_t *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	*has = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return fp_errf(FP_EINVAL, err, errlen, "%s.%s: expected an integer in %lld..%lld",
			       where, key, (long long)lo, (long long)hi);
	*has = 1;
	*out = json_integer_value(v);
	return 0;
}

/* [A-Za-z0-9._-] (plus '+' when plus), 1..max bytes. */
static int id_ok(const char *s, size_t max, int plus)
{
	size_t n = 0;
	for (; s[n]; n++) {
		char c = s[n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || (plus && c == '+')))
			return 0;
	}
	return n >= 1 && n <= max;
}

/* "0000:3b:00.0" (domain of 4 or 8 hex digits), any case; lower-cased into out. */
static int bus_ok(const char *s, char *out, size_t outlen)
{
	size_t n = strlen(s), dom = 0;
	if (n >= outlen)
		return 0;
	while (dom < n && s[dom] != ':')
		dom++;
	if ((dom != 4 && dom != 8) || n != dom + 8)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			  (c >= 'A' && c <= 'F');
		size_t j = i - dom; /* offset after the domain */
		int want_sep = i == dom || j == 3;
		if (i >= dom && j == 6) {
			if (c != '.')
				return 0;
		} else if (i >= dom && j == 7) {
			if (c < '0' || c > '7')
				return 0;
		} else if (want_sep) {
			if (c != ':')
				return 0;
		} else if (!hex) {
			return 0;
		}
		out[i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
	}
	out[n] = 0;
	return 1;
}

static int parse_event(const json_t *o, size_t i, struct rep_ev *e, char *err, size_t errlen)
{
	static const char *const keys[] = {"id",  "source", "code",    "gpu", "pid", "process",
					   "job", "time",   "message", "raw", NULL};
	char where[32], why[160];
	snprintf(where, sizeof(where), "events[%zu]", i);
	int rc = jsonx_check_keys(o, keys, where, err, errlen);
	if (rc < 0)
		return rc;
	if ((rc = opt_str(o, "id", where, REPORT_MAX_ID, &e->id, err, errlen)) < 0)
		return rc;
	if (!e->id || !id_ok(e->id, REPORT_MAX_ID, 0))
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.id: required, 1..%d characters of [A-Za-z0-9._-]", where,
			       REPORT_MAX_ID);
	if ((rc = opt_str(o, "source", where, 16, &e->source, err, errlen)) < 0)
		return rc;
	if (!in_list(e->source, source_names))
		return fp_errf(
			FP_EINVAL, err, errlen,
			"%s.source: expected kernel, nvidia-smi, nvml, dcgm, ibstat, agent or slurm",
			where);
	if ((rc = opt_str(o, "code", where, HEALTH_CODE_MAX - 1, &e->code, err, errlen)) < 0)
		return rc;
	if (!e->code)
		return fp_errf(FP_EINVAL, err, errlen, "%s.code: required", where);
	if (health_code_validate(e->code, 0, why, sizeof(why)) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "%s.code: %s", where, why);
	json_t *g = json_object_get(o, "gpu");
	if (g) {
		static const char *const gk[] = {"index", "pciBusId", NULL};
		char gw[48];
		snprintf(gw, sizeof(gw), "%s.gpu", where);
		if ((rc = jsonx_check_keys(g, gk, gw, err, errlen)) < 0)
			return rc;
		if ((rc = opt_int(g, "index", gw, 0, 1023, &e->has_index, &e->gpu_index, err,
				  errlen)) < 0)
			return rc;
		if ((rc = opt_str(g, "pciBusId", gw, 20, &e->bus, err, errlen)) < 0)
			return rc;
		if (e->bus && !bus_ok(e->bus, e->bus_lc, sizeof(e->bus_lc)))
			return fp_errf(FP_EINVAL, err, errlen,
				       "%s.pciBusId: expected a PCI address like 0000:3b:00.0", gw);
	}
	if ((rc = opt_int(o, "pid", where, 0, 4194304, &e->has_pid, &e->pid, err, errlen)) < 0)
		return rc;
	if ((rc = opt_str(o, "process", where, REPORT_MAX_STR, &e->process, err, errlen)) < 0)
		return rc;
	if ((rc = opt_str(o, "job", where, REPORT_MAX_ID, &e->job, err, errlen)) < 0)
		return rc;
	if (e->job && !id_ok(e->job, REPORT_MAX_ID, 1))
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.job: 1..%d characters of [A-Za-z0-9._+-]", where, REPORT_MAX_ID);
	if ((rc = opt_str(o, "time", where, 40, &e->time_str, err, errlen)) < 0)
		return rc;
	if (e->time_str && fp_time_parse(e->time_str, &e->time) < 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s.time: expected RFC 3339 UTC like 2026-11-30T10:00:00.123Z",
			       where);
	if ((rc = opt_str(o, "message", where, REPORT_MAX_STR, &e->message, err, errlen)) < 0)
		return rc;
	if ((rc = opt_str(o, "raw", where, REPORT_MAX_STR, &e->raw, err, errlen)) < 0)
		return rc;
	if (e->bus)
		snprintf(e->gpu, sizeof(e->gpu), "%s", e->bus_lc);
	else if (e->has_index)
		snprintf(e->gpu, sizeof(e->gpu), "index:%d", (int)e->gpu_index);
	return 0;
}

/* Validates a report body (the design shape {"agent","detectors","events"}, docs/api.md
 * "POST /v1/nodes/{name}:report") whole: unknown keys, types, string lengths (REPORT_MAX_STR,
 * REPORT_MAX_ID), id and PCI bus id syntax, detector and source names, at most
 * REPORT_MAX_DETECTORS detectors and REPORT_MAX_EVENTS events with distinct ids. Fills *p
 * (zeroed by the caller): its strings are borrowed from r; p->ev is allocated (caller frees it,
 * also on error). Returns 0, or FP_EINVAL with err naming the field ("events[3].code: ..."). */
int health_parse_report(const json_t *r, struct rep *p, char *err, size_t errlen)
{
	static const char *const top[] = {"agent", "detectors", "events", NULL};
	int rc = jsonx_check_keys(r, top, "", err, errlen);
	if (rc < 0)
		return rc;
	json_t *a = json_object_get(r, "agent");
	p->interval = 30;
	if (a) {
		static const char *const ak[] = {"version", "bootId", "intervalSeconds", "job",
						 NULL};
		if ((rc = jsonx_check_keys(a, ak, "agent", err, errlen)) < 0)
			return rc;
		if ((rc = opt_str(a, "version", "agent", 64, &p->version, err, errlen)) < 0 ||
		    (rc = opt_str(a, "bootId", "agent", 128, &p->boot_id, err, errlen)) < 0 ||
		    (rc = opt_str(a, "job", "agent", REPORT_MAX_ID, &p->job, err, errlen)) < 0)
			return rc;
		if (p->job && !id_ok(p->job, REPORT_MAX_ID, 1))
			return fp_errf(FP_EINVAL, err, errlen,
				       "agent.job: 1..%d characters of [A-Za-z0-9._+-]",
				       REPORT_MAX_ID);
		int has = 0;
		/* 0: the agent runs once and does not heartbeat (agent --once). */
		if ((rc = opt_int(a, "intervalSeconds", "agent", 0, 3600, &has, &p->interval, err,
				  errlen)) < 0)
			return rc;
	}
	json_t *d = json_object_get(r, "detectors");
	if (d) {
		if (!json_is_array(d))
			return fp_errf(FP_EINVAL, err, errlen, "detectors: expected an array");
		if (json_array_size(d) > REPORT_MAX_DETECTORS)
			return fp_errf(FP_EINVAL, err, errlen, "detectors: more than %d entries",
				       REPORT_MAX_DETECTORS);
		p->has_detectors = 1;
		size_t i;
		json_t *o;
		json_array_foreach(d, i, o) {
			static const char *const dk[] = {"name",   "live",    "status",
							 "reason", "message", NULL};
			char where[32];
			snprintf(where, sizeof(where), "detectors[%zu]", i);
			struct rep_det *x = &p->det[p->ndet];
			if ((rc = jsonx_check_keys(o, dk, where, err, errlen)) < 0)
				return rc;
			if ((rc = opt_str(o, "name", where, 16, &x->name, err, errlen)) < 0)
				return rc;
			if (!in_list(x->name, detector_names))
				return fp_errf(
					FP_EINVAL, err, errlen,
					"%s.name: expected kernel, nvidia-smi, nvml, dcgm or ibstat",
					where);
			for (size_t k = 0; k < p->ndet; k++)
				if (strcmp(p->det[k].name, x->name) == 0)
					return fp_errf(FP_EINVAL, err, errlen,
						       "%s.name: %s repeats detectors[%zu]", where,
						       x->name, k);
			json_t *live = json_object_get(o, "live");
			if (!json_is_boolean(live))
				return fp_errf(FP_EINVAL, err, errlen,
					       "%s.live: required, true or false", where);
			x->live = json_is_true(live);
			if ((rc = opt_str(o, "status", where, 16, &x->status, err, errlen)) < 0)
				return rc;
			static const char *const st[] = {"ok", "unhealthy", "unknown", NULL};
			if (!in_list(x->status, st))
				return fp_errf(FP_EINVAL, err, errlen,
					       "%s.status: required, ok, unhealthy or unknown",
					       where);
			if ((rc = opt_str(o, "reason", where, 32, &x->reason, err, errlen)) < 0)
				return rc;
			if (x->reason && !in_list(x->reason, detector_reasons))
				return fp_errf(
					FP_EINVAL, err, errlen,
					"%s.reason: expected NotConfigured, ProbeTimeout, ProbeFailed or Unparseable",
					where);
			if ((rc = opt_str(o, "message", where, REPORT_MAX_STR, &x->message, err,
					  errlen)) < 0)
				return rc;
			/* A detector that is not live says why, and cannot vouch for the GPUs. */
			if (!x->live && !x->reason)
				return fp_errf(
					FP_EINVAL, err, errlen,
					"%s.reason: required when live is false (NotConfigured, ProbeTimeout, ProbeFailed or Unparseable)",
					where);
			if (!x->live && strcmp(x->status, "ok") == 0)
				return fp_errf(
					FP_EINVAL, err, errlen,
					"%s.status: ok needs live true (a detector that is not live reports unknown)",
					where);
			p->ndet++;
		}
	}
	json_t *ev = json_object_get(r, "events");
	if (ev) {
		if (!json_is_array(ev))
			return fp_errf(FP_EINVAL, err, errlen, "events: expected an array");
		if (json_array_size(ev) > REPORT_MAX_EVENTS)
			return fp_errf(FP_EINVAL, err, errlen, "events: more than %d entries",
				       REPORT_MAX_EVENTS);
		p->nev = json_array_size(ev);
		p->ev = p->nev ? xcalloc(p->nev, sizeof(*p->ev)) : NULL;
		for (size_t i = 0; i < p->nev; i++) {
			if ((rc = parse_event(json_array_get(ev, i), i, &p->ev[i], err, errlen)) <
			    0)
				return rc;
			for (size_t k = 0; k < i; k++)
				if (strcmp(p->ev[k].id, p->ev[i].id) == 0)
					return fp_errf(FP_EINVAL, err, errlen,
						       "events[%zu].id: %s repeats events[%zu]", i,
						       p->ev[i].id, k);
			if (!p->ev[i].job && p->job)
				p->ev[i].job = p->job;
		}
	}
	return 0;
}
