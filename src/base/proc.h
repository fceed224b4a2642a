/* base/proc.h - runs one external program with an argv (never a shell), a deadline and a bound
 * on its output, so a hung or chatty tool cannot stall or flood its caller: the node agent's
 * probes (nvidia-smi, dcgmi, ibstat; agent/probe.h, issue 4: "every probe runs with a timeout;
 * a hung probe is the fault probe_timeout") and the Slurm client tools the scheduler backend
 * runs (scontrol, sinfo, squeue; issue 10).
 *
 * The child runs in its own process group (setpgid) with stdin on /dev/null, stdout on a pipe
 * and stderr on a second pipe or /dev/null; at the deadline, or when its stdout passes the
 * bound, the whole group is killed with SIGKILL (kill(2) with a negative pid, POSIX) and reaped,
 * so grandchildren a tool forks (nv-hostengine helpers, shells in wrappers) go too. */
#ifndef FP_BASE_PROC_H
#define FP_BASE_PROC_H

#include <stddef.h>

#include "base/buf.h"

struct proc_result {
	struct buf out;    /* stdout, at most max_out bytes; owned (proc_result_release) */
	struct buf err;    /* stderr, at most opts->max_err bytes; empty when not captured; owned */
	int exited;        /* 1 when the child exited by itself; exit_status is then valid */
	int exit_status;   /* its exit code (0-255) */
	int signaled;      /* the signal that ended it, 0 if none (SIGKILL when we killed it) */
	int timed_out;     /* 1 when the deadline passed and the group was killed */
	int truncated;     /* 1 when stdout passed max_out (the group was killed then; out holds
			    * the first max_out bytes) */
	int err_truncated; /* 1 when stderr passed max_err: err holds the first max_err bytes and
			    * the rest was read and dropped (the child is not killed for it) */
	int exec_errno;    /* the errno of a failed exec (proc_run returned FP_ENOTFOUND), else 0 */
	long elapsed_ms;   /* wall time from fork to reap */
};

/* Optional settings of proc_run; NULL (or all zero) means: inherit the environment, stderr to
 * /dev/null. */
struct proc_opts {
	/* The child's whole environment, NULL-terminated "NAME=value" strings, borrowed; NULL
	 * inherits the caller's. With it, a caller passes SLURM_CONF to scontrol without setenv,
	 * which is not safe in a threaded process. argv[0] is still searched in the caller's PATH
	 * (glibc execvpe(3)), not in envp's. */
	char *const *envp;
	/* 0: stderr to /dev/null; else capture at most this many bytes (1 .. 64 MiB) into
	 * res->err (scontrol reports errors there: "slurm_update error: Invalid node name
	 * specified"). */
	size_t max_err;
};

/* Runs argv[0] (searched in PATH by execvpe when it has no '/') with argv, waits at most
 * timeout_ms milliseconds (1 .. 3,600,000) and collects at most max_out bytes (1 .. 64 MiB) of
 * its stdout into res->out (and of its stderr into res->err when opts->max_err is set). opts may
 * be NULL. Returns 0 when the child ran - whatever it did: see res (timed_out, truncated,
 * exited/exit_status, signaled) - or:
 *   FP_EINVAL  argv empty or a bound out of range (err says which);
 *   FP_ENOTFOUND  the program could not be executed (err: "exec nvidia-smi: No such file ...",
 *                 res->exec_errno the errno), the errno coming back from the child over a
 *                 close-on-exec pipe;
 *   FP_EIO     pipe/fork failed (err has strerror).
 * res is initialised by the call in every case; release it with proc_result_release.
 * Blocks the calling thread for up to timeout_ms plus the reap; safe to call from several
 * threads at once (each call waits for its own pid only). The child gets default dispositions
 * for SIGPIPE, SIGINT and SIGTERM and an empty signal mask, whatever the caller's thread
 * blocks. SIGPIPE is not touched in the caller: the child writes into pipes we keep open until
 * it is killed or exits. */
int proc_run(char *const argv[], long timeout_ms, size_t max_out, const struct proc_opts *opts,
	     struct proc_result *res, char *err, size_t errlen);
/* Frees res's buffers; NULL is a no-op. */
void proc_result_release(struct proc_result *res);

#endif
