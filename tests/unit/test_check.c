/* layers: base core */
/* test_check.c - the typed assertions of check.h say what failed: each macro is made to fail
 * inside a cmocka group run by a child process, and the child's report must name both values
 * (phases and fp_err codes by name, HTTP statuses with their reason phrases); the same macros
 * with equal values must pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "core/model.h"
#include "check.h"

#include "base/banned.h"

static void fail_phase(void **state)
{
	(void)state;
	enum node_phase p = PHASE_VALIDATING;
	ASSERT_EQ_PHASE(p, PHASE_AVAILABLE);
}

static void fail_err(void **state)
{
	(void)state;
	int rc = FP_ECONFLICT;
	ASSERT_OK(rc);
}

static void fail_http(void **state)
{
	(void)state;
	int status = 409;
	ASSERT_EQ_HTTP(status, 201);
}

static void fail_str(void **state)
{
	(void)state;
	const char *name = NULL;
	ASSERT_EQ_STR(name, "r01n01");
}

static void fail_int(void **state)
{
	(void)state;
	long n = 4;
	ASSERT_EQ_INT(n, 5);
}

/* Runs one failing test in a child; returns what it wrote to stderr and stdout (caller frees)
 * and its exit status in *status. */
static char *run_child(void (*fn)(void **), int *status)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		const struct CMUnitTest t[] = {cmocka_unit_test(fn)};
		_exit(_cmocka_run_group_tests("child", t, 1, NULL, NULL) ? 1 : 0);
	}
	close(p[1]);
	size_t len = 0, cap = 4096;
	char *out = malloc(cap);
	ssize_t r;
	while ((r = read(p[0], out + len, cap - len - 1)) > 0) {
		len += (size_t)r;
		if (cap - len < 2)
			out = realloc(out, cap *= 2);
	}
	out[len] = 0;
	close(p[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
	return out;
}

static void expect_failure(void (*fn)(void **), const char *want)
{
	int status = 0;
	char *out = run_child(fn, &status);
	if (!strstr(out, want))
		fail_msg("child report lacks \"%s\":\n%s", want, out);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	free(out);
}

static void test_messages_name_values(void **state)
{
	(void)state;
	expect_failure(fail_phase, "p == PHASE_AVAILABLE: validating != available");
	expect_failure(fail_err, "rc == 0: FP_ECONFLICT (");
	expect_failure(fail_http, "status == 201: 409 Conflict != 201 Created");
	expect_failure(fail_str, "name == \"r01n01\": \"(null)\" != \"r01n01\"");
	expect_failure(fail_int, "n == 5: 4 != 5");
}

static void test_equal_values_pass(void **state)
{
	(void)state;
	ASSERT_EQ_PHASE(PHASE_AVAILABLE, PHASE_AVAILABLE);
	ASSERT_OK(0);
	ASSERT_EQ_ERR(FP_ENOTFOUND, FP_ENOTFOUND);
	ASSERT_EQ_HTTP(200, 200);
	ASSERT_EQ_STR(NULL, NULL);
	ASSERT_EQ_STR("a", "a");
	ASSERT_EQ_INT(-1, -1LL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_messages_name_values),
		cmocka_unit_test(test_equal_values_pass),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
