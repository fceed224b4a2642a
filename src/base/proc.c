/* proc.c - fork+execvpe of an external program with a deadline, its own process group and a
 * bounded stdout and stderr (proc.h). The parent polls the output pipes until EOF, the bound or
 * the deadline, then reaps the child, killing the group first when it has to. The exec error
 * travels back over a close-on-exec pipe (the child writes its errno only when execvpe
 * returns). Moved here from agent/probe.c so that layers other than agent can run tools. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/proc.h"

#include "base/banned.h"

#define PROC_MAX_TIMEOUT_MS 3600000L
#define PROC_MAX_BYTES ((size_t)64 << 20)

extern char **environ;

static long proc_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void proc_result_release(struct proc_result *res)
{
	if (!res)
		return;
	buf_release(&res->out);
	buf_release(&res->err);
}

static void proc_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Child side after fork: only async-signal-safe calls (the caller may be threaded); never
 * returns. errfd < 0 sends stderr to /dev/null. */
static void proc_child(char *const argv[], char *const envp[], int outfd, int errfd, int xpipe)
{
	setpgid(0, 0);
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDERR_FILENO);
	}
	dup2(outfd, STDOUT_FILENO);
	if (errfd >= 0)
		dup2(errfd, STDERR_FILENO);
	/* Default dispositions and an open mask for the tool, whatever the caller ignores or
	 * blocks (a server's worker threads block SIGTERM for its signal thread). */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvpe(argv[0], argv, envp ? envp : environ);
	int e = errno;
	ssize_t w = write(xpipe, &e, sizeof(e));
	(void)w;
	_exit(127);
}

/* Reads what fd has into b, at most max bytes kept. Returns 1 at EOF or a read error (the
 * caller closes fd), 0 otherwise; *over is set when bytes past max arrived. */
static int proc_drain(int fd, struct buf *b, size_t max, int *over)
{
	char chunk[16384];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : 1;
	if (n == 0)
		return 1; /* EOF: every writer closed it */
	size_t room = max - b->len;
	size_t take = (size_t)n < room ? (size_t)n : room;
	if (take)
		buf_append(b, chunk, take); /* fits: b->max is max + 1 */
	if ((size_t)n > take)
		*over = 1;
	return 0;
}

int proc_run(char *const argv[], long timeout_ms, size_t max_out, const struct proc_opts *opts,
	     struct proc_result *res, char *err, size_t errlen)
{
	static const struct proc_opts none;
	if (!opts)
		opts = &none;
	memset(res, 0, sizeof(*res));
	buf_init(&res->out, max_out + 1);
	buf_init(&res->err, opts->max_err + 1);
	if (!argv || !argv[0] || !*argv[0])
		return fp_errf(FP_EINVAL, err, errlen, "run: empty argv");
	if (timeout_ms < 1 || timeout_ms > PROC_MAX_TIMEOUT_MS)
		return fp_errf(FP_EINVAL, err, errlen, "run %s: timeout %ld ms out of 1..%ld",
			       argv[0], timeout_ms, PROC_MAX_TIMEOUT_MS);
	if (max_out < 1 || max_out > PROC_MAX_BYTES)
		return fp_errf(FP_EINVAL, err, errlen, "run %s: output bound %zu out of 1..64 MiB",
			       argv[0], max_out);
	if (opts->max_err > PROC_MAX_BYTES)
		return fp_errf(FP_EINVAL, err, errlen, "run %s: stderr bound %zu out of 0..64 MiB",
			       argv[0], opts->max_err);
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, xp[2] = {-1, -1};
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(xp, O_CLOEXEC) < 0 ||
	    (opts->max_err && pipe2(errp, O_CLOEXEC) < 0)) {
		int e = errno;
		for (int i = 0; i < 2; i++) {
			proc_close(&outp[i]);
			proc_close(&errp[i]);
			proc_close(&xp[i]);
		}
		return fp_errf(FP_EIO, err, errlen, "run %s: pipe: %s", argv[0], strerror(e));
	}
	long start = proc_mono_ms();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		for (int i = 0; i < 2; i++) {
			proc_close(&outp[i]);
			proc_close(&errp[i]);
			proc_close(&xp[i]);
		}
		return fp_errf(FP_EIO, err, errlen, "run %s: fork: %s", argv[0], strerror(e));
	}
	if (pid == 0)
		proc_child(argv, opts->envp, outp[1], errp[1], xp[1]);
	setpgid(pid, pid); /* also in the child: whichever runs first wins the race */
	proc_close(&outp[1]);
	proc_close(&errp[1]);
	proc_close(&xp[1]);

	/* Did execvpe fail? The pipe closes at exec (EOF, 0 bytes) or carries the errno. */
	int child_errno = 0;
	ssize_t n;
	do
		n = read(xp[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	proc_close(&xp[0]);
	if (n == (ssize_t)sizeof(child_errno)) {
		proc_close(&outp[0]);
		proc_close(&errp[0]);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		res->exec_errno = child_errno;
		return fp_errf(FP_ENOTFOUND, err, errlen, "exec %s: %s", argv[0],
			       strerror(child_errno));
	}

	long deadline = start + timeout_ms;
	int kill_group = 0;
	while (outp[0] >= 0 || errp[0] >= 0) {
		long now = proc_mono_ms();
		if (now >= deadline) {
			res->timed_out = 1;
			kill_group = 1;
			break;
		}
		struct pollfd pfd[2] = {{.fd = outp[0], .events = POLLIN},
					{.fd = errp[0], .events = POLLIN}}; /* fd -1: skipped */
		int pr = poll(pfd, 2, (int)(deadline - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue; /* the deadline check above ends it */
		if (pr < 0)
			break;
		if (pfd[0].revents && proc_drain(outp[0], &res->out, max_out, &res->truncated))
			proc_close(&outp[0]);
		if (res->truncated) {
			kill_group = 1;
			break;
		}
		if (pfd[1].revents &&
		    proc_drain(errp[0], &res->err, opts->max_err, &res->err_truncated))
			proc_close(&errp[0]);
	}
	proc_close(&outp[0]);
	proc_close(&errp[0]);

	/* Reap. After EOF a child may still linger (it closed its outputs and hangs): wait until
	 * the deadline, then kill the group. */
	int status = 0;
	for (;;) {
		if (kill_group) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL); /* in case setpgid lost to an exec'd setsid */
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			break;
		}
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			break;
		if (proc_mono_ms() >= deadline) {
			res->timed_out = 1;
			kill_group = 1;
			continue;
		}
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (WIFEXITED(status)) {
		res->exited = 1;
		res->exit_status = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		res->signaled = WTERMSIG(status);
	}
	res->elapsed_ms = proc_mono_ms() - start;
	return 0;
}
