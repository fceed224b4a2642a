/* layers: base */
/* test_proc.c - base/proc.h: proc_run's exit status, stdout and stderr capture and their
 * bounds, the deadline killing the whole process group (a grandchild too), exec errors with
 * their errno, the environment override, the child's signal mask, argument checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/proc.h"
#include "check.h"

static char err[512];

static void test_exit_status_and_streams(void **state)
{
	struct proc_result r;
	char *argv[] = {"sh", "-c", "echo out; echo oops >&2; exit 3", NULL}; /* sh from PATH */
	struct proc_opts o = {.max_err = 4096};
	ASSERT_OK(proc_run(argv, 10000, 4096, &o, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.exited, 1);
	ASSERT_EQ_INT(r.exit_status, 3);
	ASSERT_EQ_INT(r.signaled, 0);
	ASSERT_EQ_INT(r.timed_out, 0);
	ASSERT_EQ_INT(r.truncated, 0);
	ASSERT_EQ_INT(r.exec_errno, 0);
	ASSERT_EQ_STR(r.out.data, "out\n");
	ASSERT_EQ_STR(r.err.data, "oops\n");
	proc_result_release(&r);

	/* Without opts stderr goes to /dev/null. */
	ASSERT_OK(proc_run(argv, 10000, 4096, NULL, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.exit_status, 3);
	ASSERT_EQ_STR(r.out.data, "out\n");
	ASSERT_EQ_INT(r.err.len, 0);
	proc_result_release(&r);

	/* What scontrol does with an unknown node (tests/data/slurm/scontrol-update-nosuch.stderr):
	 * nothing on stdout, the error on stderr, status 1. */
	char *scontrol[] = {"/bin/sh", "-c",
			    "echo 'slurm_update error: Invalid node name specified' >&2; exit 1",
			    NULL};
	ASSERT_OK(proc_run(scontrol, 10000, 4096, &o, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.exit_status, 1);
	ASSERT_EQ_INT(r.out.len, 0);
	ASSERT_EQ_STR(r.err.data, "slurm_update error: Invalid node name specified\n");
	proc_result_release(&r);
	proc_result_release(NULL);
}

/* The deadline kills the group: sh forks `sleep 100`, prints its pid and waits; the sleep keeps
 * stdout open, so only the kill ends the run. The test is the subreaper, so the orphaned
 * grandchild is reparented here and its end can be observed by waitpid, even where PID 1 does
 * not reap. */
static void test_timeout_kills_group(void **state)
{
	ASSERT_EQ_INT(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	struct proc_result r;
	char *argv[] = {"/bin/sh", "-c", "sleep 100 & echo $!; wait", NULL};
	ASSERT_OK(proc_run(argv, 1000, 4096, NULL, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.timed_out, 1);
	ASSERT_EQ_INT(r.exited, 0);
	ASSERT_EQ_INT(r.signaled, SIGKILL);
	char *end = NULL;
	long gpid = r.out.data ? strtol(r.out.data, &end, 10) : 0;
	if (gpid <= 1 || !end || *end != '\n')
		fail_msg("no grandchild pid on stdout: [%s]", r.out.data ? r.out.data : "");
	proc_result_release(&r);
	int st = 0;
	pid_t w = 0;
	for (int i = 0; i < 1000 && w == 0; i++) { /* at most 10 s; it is gone at once */
		w = waitpid((pid_t)gpid, &st, WNOHANG);
		if (w == 0) {
			struct timespec ts = {0, 10 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	ASSERT_EQ_INT(w, gpid);
	ASSERT_EQ_INT(WIFSIGNALED(st), 1);
	ASSERT_EQ_INT(WTERMSIG(st), SIGKILL);
	ASSERT_EQ_INT(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
}

static void test_bounds(void **state)
{
	struct proc_result r;
	/* stdout past the bound: the first max_out bytes, and the group is killed. */
	char *big_out[] = {"head", "-c", "1000000", "/dev/zero", NULL};
	ASSERT_OK(proc_run(big_out, 10000, 1000, NULL, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.truncated, 1);
	ASSERT_EQ_INT(r.out.len, 1000);
	ASSERT_EQ_INT(r.timed_out, 0);
	proc_result_release(&r);

	/* stderr past its bound: the first max_err bytes; the rest is drained, the child runs on
	 * and its stdout is whole. */
	char *big_err[] = {"/bin/sh", "-c", "head -c 1000000 /dev/zero >&2; echo done", NULL};
	struct proc_opts o = {.max_err = 10};
	ASSERT_OK(proc_run(big_err, 10000, 1000, &o, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.err_truncated, 1);
	ASSERT_EQ_INT(r.err.len, 10);
	ASSERT_EQ_INT(r.truncated, 0);
	ASSERT_EQ_INT(r.exited, 1);
	ASSERT_EQ_INT(r.exit_status, 0);
	ASSERT_EQ_STR(r.out.data, "done\n");
	proc_result_release(&r);

	/* Exactly at the bound is not truncated. */
	char *exact[] = {"/bin/sh", "-c", "printf 1234567890", NULL};
	ASSERT_OK(proc_run(exact, 10000, 10, NULL, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.truncated, 0);
	ASSERT_EQ_STR(r.out.data, "1234567890");
	proc_result_release(&r);
}

static void test_exec_errors(void **state)
{
	struct proc_result r;
	char *missing[] = {"/nonexistent/scontrol", "show", "node", NULL};
	ASSERT_EQ_ERR(proc_run(missing, 1000, 100, NULL, &r, err, sizeof(err)), FP_ENOTFOUND);
	ASSERT_EQ_INT(r.exec_errno, ENOENT);
	ASSERT_EQ_STR(err, "exec /nonexistent/scontrol: No such file or directory");
	proc_result_release(&r);

	char *unknown[] = {"fp-no-such-tool-in-path", NULL};
	ASSERT_EQ_ERR(proc_run(unknown, 1000, 100, NULL, &r, err, sizeof(err)), FP_ENOTFOUND);
	ASSERT_EQ_INT(r.exec_errno, ENOENT);
	proc_result_release(&r);

	/* A file without an execute bit: EACCES (root too). */
	char path[] = "/tmp/fp-test-proc-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	char *noexec[] = {path, NULL};
	ASSERT_EQ_ERR(proc_run(noexec, 1000, 100, NULL, &r, err, sizeof(err)), FP_ENOTFOUND);
	ASSERT_EQ_INT(r.exec_errno, EACCES);
	proc_result_release(&r);
	unlink(path);
}

static void test_env_override(void **state)
{
	struct proc_result r;
	/* The child's whole environment is envp; argv[0] is still found in the caller's PATH. */
	char *envp[] = {"SLURM_CONF=/tmp/fp/slurm.conf", "PATH=/nonexistent", NULL};
	char *env_argv[] = {"env", NULL};
	struct proc_opts o = {.envp = envp};
	ASSERT_OK(proc_run(env_argv, 10000, 4096, &o, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.exit_status, 0);
	ASSERT_EQ_STR(r.out.data, "SLURM_CONF=/tmp/fp/slurm.conf\nPATH=/nonexistent\n");
	proc_result_release(&r);

	/* An empty environment. */
	char *empty[] = {NULL};
	o.envp = empty;
	ASSERT_OK(proc_run(env_argv, 10000, 4096, &o, &r, err, sizeof(err)));
	ASSERT_EQ_INT(r.out.len, 0);
	proc_result_release(&r);

	/* NULL inherits. */
	ASSERT_EQ_INT(setenv("FP_TEST_PROC", "inherited", 1), 0);
	char *sh[] = {"/bin/sh", "-c", "echo $FP_TEST_PROC", NULL};
	ASSERT_OK(proc_run(sh, 10000, 4096, NULL, &r, err, sizeof(err)));
	ASSERT_EQ_STR(r.out.data, "inherited\n");
	proc_result_release(&r);
	unsetenv("FP_TEST_PROC");
}

/* A caller that blocks SIGTERM (a server's worker thread) still runs its tools with an empty
 * signal mask: grep, exec'd directly (a shell would clear the mask itself), reads its own. */
static void test_signal_mask_reset(void **state)
{
	sigset_t term, old;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	ASSERT_EQ_INT(sigprocmask(SIG_BLOCK, &term, &old), 0);
	struct proc_result r;
	char *argv[] = {"grep", "^SigBlk:", "/proc/self/status", NULL};
	ASSERT_OK(proc_run(argv, 10000, 100, NULL, &r, err, sizeof(err)));
	ASSERT_EQ_INT(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	ASSERT_EQ_INT(r.exit_status, 0);
	ASSERT_EQ_STR(r.out.data, "SigBlk:\t0000000000000000\n");
	proc_result_release(&r);
}

static void test_bad_arguments(void **state)
{
	struct proc_result r;
	char *argv[] = {"/bin/true", NULL};
	ASSERT_EQ_ERR(proc_run(argv, 0, 100, NULL, &r, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "run /bin/true: timeout 0 ms out of 1..3600000");
	proc_result_release(&r);
	ASSERT_EQ_ERR(proc_run(argv, 3600001, 100, NULL, &r, err, sizeof(err)), FP_EINVAL);
	proc_result_release(&r);
	ASSERT_EQ_ERR(proc_run(argv, 1000, 0, NULL, &r, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "run /bin/true: output bound 0 out of 1..64 MiB");
	proc_result_release(&r);
	struct proc_opts o = {.max_err = ((size_t)64 << 20) + 1};
	ASSERT_EQ_ERR(proc_run(argv, 1000, 100, &o, &r, err, sizeof(err)), FP_EINVAL);
	proc_result_release(&r);
	char *empty[] = {NULL};
	ASSERT_EQ_ERR(proc_run(empty, 1000, 100, NULL, &r, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "run: empty argv");
	proc_result_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_status_and_streams),
		cmocka_unit_test(test_timeout_kills_group),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_exec_errors),
		cmocka_unit_test(test_env_override),
		cmocka_unit_test(test_signal_mask_reset),
		cmocka_unit_test(test_bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
