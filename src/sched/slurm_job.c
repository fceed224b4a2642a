/* sched/slurm_job.c - the squeue job-listing parser of slurm_job.h. */
#include "sched/slurm_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/timefmt.h"
#include "sched/hostlist.h"

#include "base/banned.h"

const char *const slurm_job_squeue_args[] =
	{"-h", "-t", "CF,CG,R,RS,SI,SO,ST,S", "-o", "%i|%T|%P|%a|%S|%e|%N|%u", NULL};

#define NFIELDS 8

void slurm_jobs_free(struct slurm_job *jobs, size_t n)
{
	if (!jobs)
		return;
	for (size_t i = 0; i < n; i++)
		free(jobs[i].nodes);
	free(jobs);
}

static int id_ok(const char *s, size_t len)
{
	if (len == 0 || len > SLURM_JOB_ID_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      c == '_' || c == '+' || c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

static int state_ok(const char *s, size_t len)
{
	if (len == 0 || len > SLURM_JOB_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_'))
			return 0;
	return 1;
}

/* "YYYY-MM-DDTHH:MM:SS" read as UTC, or one of Slurm's words for no time (0). */
static int time_field(const char *s, size_t len, int64_t *out)
{
	*out = 0;
	static const char *const none[] = {"N/A", "Unknown", "None", NULL};
	for (size_t i = 0; none[i]; i++)
		if (len == strlen(none[i]) && strncasecmp(s, none[i], len) == 0)
			return 0;
	if (len != 19)
		return -1;
	char z[21];
	memcpy(z, s, 19);
	z[19] = 'Z';
	z[20] = '\0';
	return fp_time_parse(z, out) < 0 ? -1 : 0;
}

static void copy_field(char *dst, const char *s, size_t len)
{
	memcpy(dst, s, len);
	dst[len] = '\0';
}

/* One record: line (len bytes, no newline) into *j. */
static int parse_line(const char *line, size_t len, struct slurm_job *j, char *why, size_t whylen)
{
	const char *f[NFIELDS];
	size_t fl[NFIELDS];
	size_t k = 0, start = 0;
	for (size_t i = 0; i < len && k < NFIELDS - 1; i++)
		if (line[i] == '|') {
			f[k] = line + start;
			fl[k++] = i - start;
			start = i + 1;
		}
	if (k < NFIELDS - 1) {
		snprintf(why, whylen, "expected %d fields separated by '|', found %zu", NFIELDS,
			 k + 1);
		return FP_EPARSE;
	}
	f[k] = line + start; /* the user: the rest of the line */
	fl[k] = len - start;
	if (!id_ok(f[0], fl[0])) {
		snprintf(why, whylen, "job id: expected 1..%d of [0-9A-Za-z_+.-]",
			 SLURM_JOB_ID_MAX);
		return FP_EPARSE;
	}
	if (!state_ok(f[1], fl[1])) {
		snprintf(why, whylen, "job state: expected an upper-case Slurm state");
		return FP_EPARSE;
	}
	static const char *const names[NFIELDS] = {NULL, NULL, "partition", "account",
						   NULL, NULL, NULL,        "user"};
	for (int i = 2; i < NFIELDS; i++)
		if (names[i] && fl[i] > SLURM_JOB_NAME_MAX) {
			snprintf(why, whylen, "%s: longer than %d bytes", names[i],
				 SLURM_JOB_NAME_MAX);
			return FP_EPARSE;
		}
	if (time_field(f[4], fl[4], &j->start_ms) < 0 || time_field(f[5], fl[5], &j->end_ms) < 0) {
		snprintf(why, whylen, "start or end time: expected YYYY-MM-DDTHH:MM:SS or N/A");
		return FP_EPARSE;
	}
	struct hostlist hl;
	hostlist_init(&hl);
	char herr[160];
	int rc = hostlist_expand(&hl, f[6], fl[6], herr, sizeof(herr));
	hostlist_release(&hl);
	if (rc < 0) {
		snprintf(why, whylen, "nodes: %s", herr);
		return FP_EPARSE;
	}
	copy_field(j->id, f[0], fl[0]);
	copy_field(j->state, f[1], fl[1]);
	copy_field(j->partition, f[2], fl[2]);
	if (fl[3] == 6 && memcmp(f[3], "(null)", 6) == 0)
		j->account[0] = '\0';
	else
		copy_field(j->account, f[3], fl[3]);
	copy_field(j->user, f[7], fl[7]);
	j->nodes = xstrndup(f[6], fl[6]);
	return 0;
}

int slurm_jobs_parse(const char *s, size_t len, struct slurm_job **out, size_t *n, char *err,
		     size_t errlen)
{
	*out = NULL;
	*n = 0;
	if (len > SLURM_JOB_MAX_TEXT)
		return fp_errf(FP_ETOOBIG, err, errlen, "squeue: output over %u bytes",
			       SLURM_JOB_MAX_TEXT);
	struct slurm_job *jobs = NULL;
	size_t count = 0, alloc = 0, line = 0;
	int rc = 0;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (s + i)) : len - i;
		line++;
		size_t tl = l;
		while (tl > 0 && (s[i + tl - 1] == '\r' || s[i + tl - 1] == ' '))
			tl--;
		for (size_t c = 0; c < tl; c++)
			if ((unsigned char)s[i + c] < 0x20 || s[i + c] == 0x7f) {
				rc = fp_errf(FP_EPARSE, err, errlen,
					     "squeue: line %zu: a control byte or NUL", line);
				goto out;
			}
		if (tl > 0) {
			if (count == SLURM_JOB_MAX_JOBS) {
				rc = fp_errf(FP_ETOOBIG, err, errlen, "squeue: more than %u jobs",
					     SLURM_JOB_MAX_JOBS);
				goto out;
			}
			if (count == alloc) {
				alloc = alloc ? alloc * 2 : 64;
				jobs = xreallocarray(jobs, alloc, sizeof(*jobs));
			}
			memset(&jobs[count], 0, sizeof(jobs[count]));
			char why[200];
			if (parse_line(s + i, tl, &jobs[count], why, sizeof(why)) < 0) {
				rc = fp_errf(FP_EPARSE, err, errlen, "squeue: line %zu: %s", line,
					     why);
				goto out;
			}
			count++;
		}
		i += l + 1;
	}
out:
	if (rc < 0) {
		slurm_jobs_free(jobs, count);
		return rc;
	}
	*out = jobs;
	*n = count;
	return 0;
}
