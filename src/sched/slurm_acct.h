/* sched/slurm_acct.h - GPU metering from Slurm's accounting (issue 10, part 7): the job records
 * slurmdbd keeps, read with `sacct --json -X -a -S <from> -E <to>` (sacct(1); the JSON is the
 * openapi dbv0.0.38 schema of slurmrestd, tests/data/slurm/sacct-X-a.json), run by argv through
 * base/proc.h with a deadline and an output bound, and GPU-seconds per account, user or
 * partition over a window: Σ GPUs × (min(end, to) − max(start, from)) of the jobs that ran in it.
 *
 * The children get the caller's environment as it was at slurm_acct_new, with SLURM_CONF set
 * (when configured), TZ=UTC (sacct reads and prints times in local time, sacct(1) -S), and
 * SLURM_TIME_FORMAT=standard and LC_ALL=C, built once and passed as envp: setenv is never
 * called. One struct slurm_acct may be used from several threads at once. */
#ifndef FP_SCHED_SLURM_ACCT_H
#define FP_SCHED_SLURM_ACCT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SLURM_ACCT_TIMEOUT_MS 30000L   /* default per sacct run */
#define SLURM_ACCT_MAX_OUT (64u << 20) /* default and largest stdout bound (~20,000 jobs) */
#define SLURM_ACCT_MAX_JOBS 100000u    /* job records one answer may hold */
#define SLURM_ACCT_NAME_MAX 128u       /* bytes of a user, account or partition name */
#define SLURM_ACCT_STATE_MAX 32u       /* bytes of a state name */
#define SLURM_ACCT_MAX_GPUS 1000000L   /* GPUs one job may hold; more is refused as corrupt */
#define SLURM_ACCT_MAX_PATH 1024u      /* bytes of bindir and slurm_conf */
#define SLURM_ACCT_MAX_WINDOW_S (366L * 86400) /* longest window slurm_acct_usage accepts */

/* One job allocation as sacct reports it (-X: the allocation, not its steps). */
struct slurm_acct_job {
	uint64_t id;                           /* job_id */
	char user[SLURM_ACCT_NAME_MAX + 1];    /* user */
	char account[SLURM_ACCT_NAME_MAX + 1]; /* account ("" when the record has none) */
	char partition[SLURM_ACCT_NAME_MAX + 1];
	char state[SLURM_ACCT_STATE_MAX + 1]; /* state.current: COMPLETED, RUNNING, PENDING, ... */
	int64_t start;                        /* time.start, unix s; 0: never started */
	int64_t end;                          /* time.end, unix s; 0: not ended (running) */
	int64_t gpus; /* count of the tres.allocated entry {type "gres", name "gpu"}; 0 if none */
};

/* Parses sacct --json output s (len bytes, no NUL needed): an object with "jobs" (an array of
 * job objects) and "errors" (an array; an entry is FP_EIO with its "error" or "description"
 * quoted, except error_number 9003 "Nothing found with query", which 22.05 lists beside an empty
 * "jobs" when no job matched, tests/data/slurm/sacct-X-a-empty.json). Per job: job_id (integer >= 0), user, account, partition (strings or
 * null -> ""), state.current (string), time.start and time.end (integers >= 0), tres.allocated
 * (array of {type, name, count}; missing or null = no GPUs). Only the entry named exactly "gpu"
 * counts: typed entries ("gpu:a100", when AccountingStorageTRES lists them) repeat a share of
 * the same GPUs. Refused with FP_EPARSE (err names the job index and field): invalid JSON, a
 * missing or mistyped field, a name longer than SLURM_ACCT_NAME_MAX or holding a control byte,
 * end before start, a GPU count below 0 or above SLURM_ACCT_MAX_GPUS; FP_ETOOBIG over
 * SLURM_ACCT_MAX_JOBS jobs. On success *out is a calloc'ed array of *n jobs in sacct's order
 * (owned: free(*out); NULL when *n is 0); on error *out is NULL and *n 0. */
int slurm_acct_parse(const char *s, size_t len, struct slurm_acct_job **out, size_t *n, char *err,
		     size_t errlen);

enum slurm_acct_by {
	SLURM_ACCT_BY_ACCOUNT = 0,
	SLURM_ACCT_BY_USER,
	SLURM_ACCT_BY_PARTITION,
};

/* "account", "user", "partition" for by; NULL for a value out of range. */
const char *slurm_acct_by_name(enum slurm_acct_by by);
/* The inverse of slurm_acct_by_name: 0 and *by, or FP_EINVAL for any other string. */
int slurm_acct_by_parse(const char *s, enum slurm_acct_by *by);

/* One group's use in a window. */
struct slurm_acct_row {
	char key[SLURM_ACCT_NAME_MAX + 1]; /* the account, user or partition name */
	int64_t gpu_seconds;               /* Σ GPUs × seconds inside the window */
	size_t jobs;                       /* jobs that ran in the window, GPUs or not */
};

struct slurm_acct_report {
	int64_t from, to; /* the window, unix s, [from, to) */
	enum slurm_acct_by by;
	struct slurm_acct_row *rows; /* sorted by key (strcmp); owned: slurm_acct_report_release */
	size_t nrows;
	struct slurm_acct_row total; /* key "" */
};

/* Sums jobs[0..n-1] by `by` over the window [from, to) (unix s, from < to): a job ran in the
 * window when it started (start > 0) before `to` and ended after `from` (a job of zero length:
 * at or after `from`); its end is
 * `now` while it runs (end 0), and its share is gpus × max(0, min(end, to) − max(start, from))
 * seconds. Jobs that never started add nothing and are not counted. Pure; never fails (rows
 * may be 0). out is overwritten; release it with slurm_acct_report_release. */
void slurm_acct_aggregate(const struct slurm_acct_job *jobs, size_t n, enum slurm_acct_by by,
			  int64_t from, int64_t to, int64_t now, struct slurm_acct_report *out);
/* r as JSON for GET /v1/usage (docs/api.md "Usage"): a new object {"items": [{<by>: key,
 * "gpuHours": gpu_seconds / 3600 (a real), "gpuSeconds": n, "jobs": n}, ...] in r's order,
 * "total": {"gpuHours", "gpuSeconds", "jobs"}}. The caller owns it (json_decref). */
json_t *slurm_acct_report_json(const struct slurm_acct_report *r);
/* Frees r's rows and zeroes it; NULL is a no-op. */
void slurm_acct_report_release(struct slurm_acct_report *r);

struct slurm_acct_config {
	const char *slurm_conf; /* SLURM_CONF for sacct; NULL inherits the caller's */
	const char *bindir;     /* directory holding sacct; NULL searches the caller's PATH */
	long timeout_ms;        /* per run, 1 .. 3,600,000; 0 = SLURM_ACCT_TIMEOUT_MS */
	size_t max_out;         /* stdout bound, 1 .. SLURM_ACCT_MAX_OUT; 0 = SLURM_ACCT_MAX_OUT */
};

struct slurm_acct;

/* Creates a client from cfg (borrowed: copied). FP_EINVAL (err says which): a bound out of
 * range, a slurm_conf or bindir that is empty, not absolute, longer than SLURM_ACCT_MAX_PATH
 * or holding a control byte. Returns 0 and *out (free with slurm_acct_free), or the code and
 * *out NULL. Nothing is run. */
int slurm_acct_new(const struct slurm_acct_config *cfg, struct slurm_acct **out, char *err,
		   size_t errlen);
/* Frees a; NULL is a no-op. */
void slurm_acct_free(struct slurm_acct *a);

/* Runs `sacct --json -X -a -S <from> -E <to>` (times as YYYY-MM-DDTHH:MM:SS in UTC; without
 * --state, -S/-E select the jobs in any state during the window, sacct(1) "DEFAULT TIME
 * WINDOW"), parses it (slurm_acct_parse) and aggregates it (slurm_acct_aggregate with now).
 * Refused with FP_EINVAL before anything runs: from >= to, from < 0, or a window longer than
 * SLURM_ACCT_MAX_WINDOW_S. Errors of the run: FP_ENOTFOUND (sacct could not be executed),
 * FP_ETIMEDOUT, FP_ETOOBIG (stdout over max_out, too many jobs), FP_EIO (non-zero exit or a
 * signal: err quotes stderr's first line, e.g. "sacct: error: Problem talking to the database:
 * Connection refused"; or the JSON's "errors"), FP_EPARSE (as slurm_acct_parse). On error out
 * is zeroed. */
int slurm_acct_usage(struct slurm_acct *a, int64_t from, int64_t to, int64_t now,
		     enum slurm_acct_by by, struct slurm_acct_report *out, char *err,
		     size_t errlen);

/* --- tenants' GPU quotas (issue 10 part 7, step 5) --- */
#define SLURM_ACCT_ACCOUNT_MAX 64u /* bytes of an account name fleetplane writes */

/* A Slurm account name fleetplane may put in a sacctmgr argv: 1..SLURM_ACCT_ACCOUNT_MAX bytes
 * of a-z 0-9 _ . -, not starting with '-' (sacctmgr lowercases names, so an upper-case name
 * would never match its own record). 0 or FP_EINVAL with err naming slurmAccount. */
int slurm_acct_account_check(const char *account, char *err, size_t errlen);

/* Sets the account's group GPU limit with `sacctmgr -i modify account where name=<account>
 * set GrpTRES=gres/gpu=<quota>` (sacctmgr(1) "GrpTRES"; -1 clears it). With
 * AccountingStorageEnforce=limits, a job that would take the account's running GPUs over it
 * stays PENDING with reason AssocGrpGRES (verified on 22.05.8, docs/slurm.md). FP_EINVAL: a bad
 * account or a quota outside -1..SLURM_ACCT_MAX_GPUS (nothing run); FP_ENOTFOUND: Slurm has no
 * such account (sacctmgr prints " Nothing modified" and exits 1); else the run errors of
 * slurm_acct_usage. Setting the quota already set succeeds. */
int slurm_acct_set_gpu_quota(struct slurm_acct *a, const char *account, long quota, char *err,
			     size_t errlen);

/* GPUs held now by the account's RUNNING jobs: `squeue --json` (every job; 22.05 ignores -t
 * and -A with --json), each job's tres_alloc_str "...,gres/gpu=N" summed (needs
 * AccountingStorageTRES=gres/gpu, without which it lists no gres), *jobs the running jobs.
 * Errors as slurm_acct_usage's; FP_EINVAL for a bad account. */
int slurm_acct_running_gpus(struct slurm_acct *a, const char *account, int64_t *gpus, size_t *jobs,
			    char *err, size_t errlen);
/* The parser of slurm_acct_running_gpus over squeue --json output s (len bytes): FP_EPARSE
 * (invalid JSON, no "jobs", a job without job_state or with a bad gres/gpu count),
 * FP_ETOOBIG over SLURM_ACCT_MAX_JOBS jobs; *gpus and *jobs 0 on error. */
int slurm_acct_parse_running_gpus(const char *s, size_t len, const char *account, int64_t *gpus,
				  size_t *jobs, char *err, size_t errlen);

#endif
