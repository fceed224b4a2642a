/* probe.c - fork+execvp of a node tool with a deadline, its own process group and a bounded
 * stdout (probe.h). The parent polls the stdout pipe until EOF, the bound or the deadline, then
 * reaps the child, killing the group first when it has to. The exec error travels back over a
 * close-on-exec pipe (the child writes its errno only when execvp returns). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/probe.h"
#include "base/err.h"

#include "base/banned.h"

static long probe_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void probe_result_release(struct probe_result *res)
{
	if (res)
		buf_release(&res->out);
}

/* Child side after fork: never returns. */
static void probe_child(char *const argv[], int outfd, int errpipe)
{
	setpgid(0, 0);
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDERR_FILENO);
	}
	dup2(outfd, STDOUT_FILENO);
	/* Default dispositions for the tool whatever the agent ignores. */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	execvp(argv[0], argv);
	int e = errno;
	ssize_t w = write(errpipe, &e, sizeof(e));
	(void)w;
	_exit(127);
}

int probe_run(char *const argv[], long timeout_ms, size_t max_out, struct probe_result *res,
	      char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	buf_init(&res->out, max_out + 1);
	if (!argv || !argv[0] || !*argv[0])
		return fp_errf(FP_EINVAL, err, errlen, "probe: empty argv");
	if (timeout_ms < 1 || timeout_ms > 3600000L)
		return fp_errf(FP_EINVAL, err, errlen, "probe %s: timeout %ld ms out of 1..3600000",
			       argv[0], timeout_ms);
	if (max_out < 1 || max_out > ((size_t)64 << 20))
		return fp_errf(FP_EINVAL, err, errlen,
			       "probe %s: output bound %zu out of 1..64 MiB", argv[0], max_out);
	int outp[2] = {-1, -1}, errp[2] = {-1, -1};
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		int e = errno;
		if (outp[0] >= 0) {
			close(outp[0]);
			close(outp[1]);
		}
		return fp_errf(FP_EIO, err, errlen, "probe %s: pipe: %s", argv[0], strerror(e));
	}
	long start = probe_mono_ms();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(outp[0]);
		close(outp[1]);
		close(errp[0]);
		close(errp[1]);
		return fp_errf(FP_EIO, err, errlen, "probe %s: fork: %s", argv[0], strerror(e));
	}
	if (pid == 0)
		probe_child(argv, outp[1], errp[1]);
	setpgid(pid, pid); /* also in the child: whichever runs first wins the race */
	close(outp[1]);
	close(errp[1]);

	/* Did execvp fail? The pipe closes at exec (EOF, 0 bytes) or carries the errno. */
	int child_errno = 0;
	ssize_t n;
	do
		n = read(errp[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(errp[0]);
	if (n == (ssize_t)sizeof(child_errno)) {
		close(outp[0]);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return fp_errf(FP_ENOTFOUND, err, errlen, "exec %s: %s", argv[0],
			       strerror(child_errno));
	}

	long deadline = start + timeout_ms;
	int kill_group = 0;
	char chunk[16384];
	for (;;) {
		long now = probe_mono_ms();
		if (now >= deadline) {
			res->timed_out = 1;
			kill_group = 1;
			break;
		}
		struct pollfd pfd = {.fd = outp[0], .events = POLLIN};
		int pr = poll(&pfd, 1, (int)(deadline - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			continue; /* the deadline check above ends it */
		if (pr < 0)
			break;
		n = read(outp[0], chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* EOF: every writer closed stdout */
		size_t room = max_out - res->out.len;
		size_t take = (size_t)n < room ? (size_t)n : room;
		if (take)
			buf_append(&res->out, chunk, take); /* fits: max is max_out + 1 */
		if ((size_t)n > take) {
			res->truncated = 1;
			kill_group = 1;
			break;
		}
	}
	close(outp[0]);

	/* Reap. After EOF a child may still linger (it closed stdout and hangs): wait until the
	 * deadline, then kill the group. */
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
		if (probe_mono_ms() >= deadline) {
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
	res->elapsed_ms = probe_mono_ms() - start;
	return 0;
}

int probe_which(const char *name, char *out, size_t outlen)
{
	if (!name || !*name || strchr(name, '/'))
		return FP_ENOTFOUND;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	const char *p = path;
	int toobig = 0;
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t dl = colon ? (size_t)(colon - p) : strlen(p);
		const char *dir = dl ? p : ".";
		size_t dlen = dl ? dl : 1;
		if (dlen + 1 + strlen(name) + 1 > outlen) {
			toobig = 1;
		} else {
			memcpy(out, dir, dlen);
			out[dlen] = '/';
			memcpy(out + dlen + 1, name, strlen(name) + 1);
			struct stat st;
			if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
				return 0;
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	if (outlen)
		out[0] = '\0';
	return toobig ? FP_ETOOBIG : FP_ENOTFOUND;
}
