/* sched/slurm_job.h - the jobs that hold nodes, as `squeue` lists them (issue 10 part 3: a node is
 * drained only when no job is ALLOCATED, MIXED or COMPLETING on it, and the wait names the jobs).
 *
 * fleetplane runs (sched/slurm_cli.c)
 *
 *   squeue -h -t CF,CG,R,RS,SI,SO,ST,S -o %i|%T|%P|%a|%S|%e|%N|%u
 *
 * that is, with no header (-h), only the job states in which a job holds its nodes (squeue(1)
 * JOB STATE CODES: CONFIGURING, COMPLETING, RUNNING, RESIZING, SIGNALING, STAGE_OUT, STOPPED,
 * SUSPENDED), one job a line with the fields job id (%i: "123", an array task "77_3", a
 * heterogeneous component "9+1"), state in extended form (%T), partition (%P), account (%a),
 * start and end time (%S, %e: "2026-12-02T04:50:00" with SLURM_TIME_FORMAT=standard, or "N/A",
 * "Unknown", "None" in any case - a running job's end prints "NONE",
 * tests/data/slurm/squeue-held.txt), the nodes (%N: a hostlist) and the user (%u). The user is last because it
 * is the one field Slurm does not restrict: it takes the rest of the line, '|' included.
 * `squeue --json` was not used: in 22.05.8 it ignores -t and prints every job, pending ones
 * included, at ~3 KB each (observed on the test peer; tests/data/slurm/squeue.json).
 *
 * Pure and bounded: SLURM_JOB_MAX_TEXT bytes, SLURM_JOB_MAX_JOBS records; fuzzed by
 * tests/fuzz/fuzz_slurm_job.c. */
#ifndef FP_SCHED_SLURM_JOB_H
#define FP_SCHED_SLURM_JOB_H

#include <stddef.h>
#include <stdint.h>

#define SLURM_JOB_MAX_TEXT (64u << 20) /* bytes of squeue output read */
#define SLURM_JOB_MAX_JOBS 200000u     /* records one listing may hold */
#define SLURM_JOB_ID_MAX 32            /* bytes of a job id, NUL excluded (NODE_JOB_ID_MAX) */
#define SLURM_JOB_NAME_MAX 64          /* bytes of a state, partition, account, user */

/* squeue's argv after the program name, NULL-terminated (for slurm_cli and the tests). */
extern const char *const slurm_job_squeue_args[];

struct slurm_job {
	char id[SLURM_JOB_ID_MAX + 1];
	char state[SLURM_JOB_NAME_MAX + 1]; /* "RUNNING", "COMPLETING", ... as printed */
	char partition[SLURM_JOB_NAME_MAX + 1];
	char account[SLURM_JOB_NAME_MAX + 1]; /* "" when Slurm printed "(null)" */
	char user[SLURM_JOB_NAME_MAX + 1];
	int64_t start_ms; /* wall ms, read as UTC; 0 when Slurm printed no time */
	int64_t end_ms;   /* the same: for COMPLETING, when the job ended */
	char *nodes;      /* the %N hostlist as printed, owned; "" for none */
};

/* Frees the nodes strings of jobs[0..n-1] and the array itself; NULL is a no-op. */
void slurm_jobs_free(struct slurm_job *jobs, size_t n);

/* Parses squeue's stdout s (len bytes, no NUL needed) in the format above. Blank lines are
 * skipped; empty output is no jobs (0, *out NULL). On success *out is a calloc'ed array of *n
 * jobs in squeue's order (free with slurm_jobs_free). Refused, *out NULL and *n 0 (the caller
 * must then keep what it knew): FP_ETOOBIG for len over SLURM_JOB_MAX_TEXT or more than
 * SLURM_JOB_MAX_JOBS records; FP_EPARSE (err: "squeue: line N: why") for a NUL or control byte,
 * fewer than eight fields, an empty or over-long id or a field over its bound, an id with a byte
 * outside [0-9_+A-Za-z.-], a state that is not upper-case letters and '_', a time that is
 * neither "YYYY-MM-DDTHH:MM:SS" nor one of N/A, Unknown, None (any case), and a hostlist %N that
 * hostlist_expand refuses. Returns 0 or the code. */
int slurm_jobs_parse(const char *s, size_t len, struct slurm_job **out, size_t *n, char *err,
		     size_t errlen);

#endif
