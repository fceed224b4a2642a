/* sched/slurm_tool.h - how fleetplane runs Slurm's client tools (scontrol, squeue, sacct,
 * sacctmgr): by argv through base/proc.h, never a shell; one deadline and one stdout bound per
 * command; a child environment built once; failures turned into one error line that quotes the
 * tool. Shared by the scontrol client (slurm_cli.c) and the accounting client (slurm_acct.c).
 *
 * The environment is the caller's as it was when built, with SLURM_CONF set (when given; else
 * the caller's is kept), SLURM_TIME_FORMAT=standard (times as "2026-12-02T01:34:37",
 * scontrol(1)/squeue(1)/sacct(1) ENVIRONMENT VARIABLES), TZ=UTC (so those times are UTC, as
 * fleetplane reads them) and LC_ALL=C; setenv is never called. */
#ifndef FP_SCHED_SLURM_TOOL_H
#define FP_SCHED_SLURM_TOOL_H

#include <stddef.h>

#include "base/proc.h"

#define SLURM_TOOL_QUOTE_MAX 200 /* bytes of a tool's message quoted into an error */
#define SLURM_TOOL_MAX_ERR 4096u /* stderr kept */

/* Checks a configured path: FP_EINVAL (err: "<what> must be an absolute path", "... longer than
 * MAX bytes", "... holds a control byte") or 0. */
int slurm_tool_check_path(const char *what, const char *p, size_t max, char *err, size_t errlen);

/* The child environment described above, NULL-terminated, every string owned (free with
 * slurm_tool_env_free). slurm_conf may be NULL. */
char **slurm_tool_env(const char *slurm_conf);
void slurm_tool_env_free(char **envp);

/* The first line of s (len bytes), leading blanks skipped, at most SLURM_TOOL_QUOTE_MAX bytes of
 * it, control and non-ASCII bytes and '\' as \xNN, into q (qlen bytes). */
void slurm_tool_quote(const char *s, size_t len, char *q, size_t qlen);

/* Runs argv with envp, timeout_ms and a stdout bound max_out. tool names it in messages
 * ("scontrol show node"). Returns 0 when it exited 0 (res holds its output; release it with
 * proc_result_release, on every path), 1 when ok_fail is set and it exited non-zero (the caller
 * reads the output), or the code with err: FP_ENOTFOUND (could not be executed), FP_ETIMEDOUT
 * (no exit within timeout_ms: its process group was killed), FP_ETOOBIG (stdout over max_out),
 * FP_EPERM (a non-zero exit whose message says permission or access denied), FP_EIO (another
 * non-zero exit or a signal: "<tool>: exit N: \"<first line of stderr, else stdout>\""). */
int slurm_tool_run(char **envp, long timeout_ms, size_t max_out, char *const argv[],
		   const char *tool, int ok_fail, struct proc_result *res, char *err,
		   size_t errlen);

#endif
