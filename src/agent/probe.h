/* agent/probe.h - runs one node tool (nvidia-smi, dcgmi, ibstat) for the node agent with an argv
 * (never a shell), a deadline and a bound on its output, so a hung or chatty tool cannot stall
 * or flood the agent (issue 4: "every probe runs with a timeout; a hung probe is the fault
 * probe_timeout").
 *
 * The child runs in its own process group (setpgid) with stdin and stderr on /dev/null and
 * stdout on a pipe; at the deadline, or when its output passes the bound, the whole group is
 * killed with SIGKILL (kill(2) with a negative pid, POSIX) and reaped, so grandchildren a tool
 * forks (nv-hostengine helpers, shells in wrappers) go too. */
#ifndef FP_AGENT_PROBE_H
#define FP_AGENT_PROBE_H

#include <stddef.h>

#include "base/buf.h"

struct probe_result {
	struct buf
		out; /* stdout, at most the max_out given to probe_run; owned (probe_result_release) */
	int exited;      /* 1 when the child exited by itself; exit_status is then valid */
	int exit_status; /* its exit code (0-255) */
	int signaled;    /* the signal that ended it, 0 if none (SIGKILL when we killed it) */
	int timed_out;   /* 1 when the deadline passed and the group was killed */
	int truncated;   /* 1 when stdout passed max_out (the group was killed then; out holds the
			   * first max_out bytes) */
	long elapsed_ms; /* wall time from fork to reap */
};

/* Runs argv[0] (searched in PATH by execvp when it has no '/') with argv, waits at most
 * timeout_ms milliseconds (1 .. 3,600,000) and collects at most max_out bytes (1 .. 64 MiB) of
 * its stdout into res->out. Returns 0 when the child ran - whatever it did: see res (timed_out,
 * truncated, exited/exit_status, signaled) - or:
 *   FP_EINVAL  argv empty or a bound out of range (err says which);
 *   FP_ENOTFOUND  the program could not be executed (err: "exec nvidia-smi: No such file ..."),
 *                 the errno coming back from the child over a close-on-exec pipe;
 *   FP_EIO     pipe/fork failed (err has strerror).
 * res is initialised by the call in every case; release it with probe_result_release.
 * Blocks the calling thread for up to timeout_ms plus the reap. SIGPIPE is not touched: the
 * child writes into a pipe we keep open until it is killed or exits. */
int probe_run(char *const argv[], long timeout_ms, size_t max_out, struct probe_result *res,
	      char *err, size_t errlen);
void probe_result_release(struct probe_result *res);

/* Looks name (no '/') up in the PATH of the environment (execvp(3)'s rule; an empty or unset
 * PATH means "/usr/local/bin:/usr/bin:/bin") and writes the first executable regular file into
 * out. Returns 0, FP_ENOTFOUND, or FP_ETOOBIG when a candidate path does not fit outlen. */
int probe_which(const char *name, char *out, size_t outlen);

#endif
