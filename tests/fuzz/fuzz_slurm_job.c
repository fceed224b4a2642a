/* layers: base core store driver engine sched */
/* fuzz_slurm_job.c - libFuzzer target for the squeue job-listing parser (sched/slurm_job.h):
 * the input is squeue's whole stdout. Properties checked (a failure aborts): a refused listing
 * hands back no array and 0 jobs with a terminated message; an accepted one has at most
 * SLURM_JOB_MAX_JOBS jobs, each with a non-empty id of allowed bytes, a non-empty upper-case
 * state, terminated strings, non-negative times and a nodes string that expands as a hostlist;
 * input with a NUL is refused. Seeds: tests/fuzz/corpus/fuzz_slurm_job/ (tests/data/slurm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/hostlist.h"
#include "sched/slurm_job.h"

#include "base/banned.h"

#define CHECK(c)                                                                                \
	do {                                                                                    \
		if (!(c)) {                                                                     \
			fprintf(stderr, "fuzz_slurm_job: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                \
		}                                                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	int has_nul = memchr(s, '\0', size) != NULL;
	char err[512];
	struct slurm_job *jobs = (struct slurm_job *)&jobs;
	size_t n = 99;
	int rc = slurm_jobs_parse(s, size, &jobs, &n, err, sizeof(err));
	if (has_nul)
		CHECK(rc != 0);
	if (rc != 0) {
		CHECK(jobs == NULL && n == 0);
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		return 0;
	}
	CHECK(n <= SLURM_JOB_MAX_JOBS);
	CHECK((n == 0) == (jobs == NULL));
	for (size_t i = 0; i < n; i++) {
		const struct slurm_job *j = &jobs[i];
		CHECK(j->id[0] != '\0' && strlen(j->id) <= SLURM_JOB_ID_MAX);
		CHECK(strspn(j->id,
			     "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_+.-") ==
		      strlen(j->id));
		CHECK(j->state[0] != '\0');
		CHECK(strspn(j->state, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == strlen(j->state));
		CHECK(memchr(j->partition, '\0', sizeof(j->partition)) != NULL);
		CHECK(memchr(j->account, '\0', sizeof(j->account)) != NULL);
		CHECK(memchr(j->user, '\0', sizeof(j->user)) != NULL);
		CHECK(j->start_ms >= 0 && j->end_ms >= 0);
		CHECK(j->nodes != NULL);
		struct hostlist hl;
		hostlist_init(&hl);
		CHECK(hostlist_expand(&hl, j->nodes, strlen(j->nodes), NULL, 0) == 0);
		hostlist_release(&hl);
	}
	slurm_jobs_free(jobs, n);
	return 0;
}
