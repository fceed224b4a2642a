/* layers: base core store driver engine sched */
/* fuzz_slurm_acct.c - libFuzzer target for `sacct --json` answers (sched/slurm_acct.h): the
 * input goes through slurm_acct_parse and, when accepted, slurm_acct_aggregate by account over
 * a fixed window. Properties checked (a failure aborts): a refused input leaves no jobs; an
 * accepted one has at most SLURM_ACCT_MAX_JOBS jobs, each with NUL-terminated names, times
 * >= 0, end 0 or >= start, GPUs in 0..SLURM_ACCT_MAX_GPUS; the report's rows are sorted and
 * distinct, their sums equal the total, and no share is negative.
 * Seeds: tests/fuzz/corpus/fuzz_slurm_acct/ (the sacct answers of tests/data/slurm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/slurm_acct.h"

#include "base/banned.h"

#define CHECK(c)                                                                                 \
	do {                                                                                     \
		if (!(c)) {                                                                      \
			fprintf(stderr, "fuzz_slurm_acct: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

#define TERMINATED(f) CHECK(memchr((f), '\0', sizeof(f)) != NULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct slurm_acct_job *jobs = (void *)1;
	size_t n = 7;
	int rc = slurm_acct_parse((const char *)data, size, &jobs, &n, err, sizeof(err));
	if (rc < 0) {
		CHECK(jobs == NULL);
		CHECK(n == 0);
		TERMINATED(err);
		return 0;
	}
	CHECK(n <= SLURM_ACCT_MAX_JOBS);
	CHECK((n == 0) == (jobs == NULL));
	for (size_t i = 0; i < n; i++) {
		TERMINATED(jobs[i].user);
		TERMINATED(jobs[i].account);
		TERMINATED(jobs[i].partition);
		TERMINATED(jobs[i].state);
		CHECK(jobs[i].start >= 0 && jobs[i].end >= 0);
		CHECK(jobs[i].end == 0 || jobs[i].end >= jobs[i].start);
		CHECK(jobs[i].gpus >= 0 && jobs[i].gpus <= SLURM_ACCT_MAX_GPUS);
	}
	struct slurm_acct_report r;
	slurm_acct_aggregate(jobs, n, SLURM_ACCT_BY_ACCOUNT, 1000, 1000000, 2000000, &r);
	int64_t sum = 0;
	size_t cnt = 0;
	for (size_t i = 0; i < r.nrows; i++) {
		TERMINATED(r.rows[i].key);
		CHECK(r.rows[i].gpu_seconds >= 0);
		CHECK(r.rows[i].jobs > 0);
		if (i)
			CHECK(strcmp(r.rows[i - 1].key, r.rows[i].key) < 0);
		sum += r.rows[i].gpu_seconds;
		cnt += r.rows[i].jobs;
	}
	CHECK(sum == r.total.gpu_seconds);
	CHECK(cnt == r.total.jobs);
	CHECK(cnt <= n);
	slurm_acct_report_release(&r);
	free(jobs);
	return 0;
}
