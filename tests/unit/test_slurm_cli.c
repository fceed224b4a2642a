/* layers: base core store driver engine sched */
/* test_slurm_cli.c - the Slurm client (src/sched/slurm_cli.c) against stand-in scontrol tools:
 * shell scripts this test writes into a temporary bindir (the test may use a shell; the client
 * never does). They print real Slurm 22.05.8 output from tests/data/slurm (SOURCES.md), print
 * garbage, sleep past the deadline, fail with a message on stderr, or record their argv and
 * environment so the exact command line is asserted: one batched hostlist, the Reason as one
 * argv element byte for byte. Every expected value is written by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "sched/slurm_cli.h"
#include "sched/slurm_node.h"
#include "sched/slurm_state.h"

#include "check.h"

extern char **environ;

static char dir[64]; /* the stand-in bindir, one per test */

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

/* An absolute path to tests/data/slurm/<name>, for the scripts (they run with another cwd). */
static char *data_path(const char *name)
{
	char cwd[512];
	const char *s = srcdir();
	if (s[0] == '/')
		return xasprintf("%s/tests/data/slurm/%s", s, name);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	return xasprintf("%s/%s/tests/data/slurm/%s", cwd, s, name);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/fp-slcli-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char *argv[] = {"rm", "-rf", dir, NULL};
	pid_t pid;
	if (posix_spawn(&pid, "/bin/rm", NULL, NULL, argv, environ) == 0)
		waitpid(pid, NULL, 0);
	return 0;
}

/* Writes DIR/scontrol: "#!/bin/sh", a line recording argv (one per line, then "--") into
 * DIR/argv and three variables into DIR/env, then body. */
static void tool_named(const char *name, const char *body)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"#!/bin/sh\n"
		"for a in \"$@\"; do printf '%%s\\n' \"$a\"; done >>%s/argv; echo -- >>%s/argv\n"
		"printf 'SLURM_CONF=%%s\\nSLURM_TIME_FORMAT=%%s\\nLC_ALL=%%s\\n' "
		"\"$SLURM_CONF\" \"$SLURM_TIME_FORMAT\" \"$LC_ALL\" >%s/env\n"
		"%s\n",
		dir, dir, dir, body);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	free(path);
	char *a = xasprintf("%s/argv", dir);
	unlink(a);
	free(a);
}

static void tool(const char *body)
{
	tool_named("scontrol", body);
}

/* The whole of DIR/<name>, "" when absent; the caller frees it. */
static char *slurp(const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	struct buf b;
	buf_init(&b, 4u << 20);
	if (buf_read_file(&b, path, 0, NULL, 0) < 0 || !b.data)
		buf_puts(&b, "");
	free(path);
	size_t len;
	return buf_detach(&b, &len);
}

static struct slurm_cli *cli(long timeout_ms, size_t max_out)
{
	struct slurm_cli_config cfg = {.slurm_conf = "/etc/fp-test/slurm.conf",
				       .bindir = dir,
				       .timeout_ms = timeout_ms,
				       .max_out = max_out};
	struct slurm_cli *c = NULL;
	char err[256];
	ASSERT_OK(slurm_cli_new(&cfg, &c, err, sizeof(err)));
	assert_non_null(c);
	return c;
}

static void cat_tool(const char *file)
{
	char *p = data_path(file);
	char *body = xasprintf("cat '%s'", p);
	tool(body);
	free(body);
	free(p);
}

/* squeue: the exact argv, real 22.05.8 output read whole, garbage and a failure refused. */
static void test_jobs(void **state)
{
	char *p = data_path("squeue-held.txt");
	char *body = xasprintf("cat '%s'", p);
	tool_named("squeue", body);
	free(body);
	free(p);
	struct slurm_cli *c = cli(0, 0);
	struct slurm_job *jobs = NULL;
	size_t n = 0;
	char err[256] = "";
	ASSERT_OK(slurm_cli_jobs(c, &jobs, &n, err, sizeof(err)));
	char *argv = slurp("argv");
	ASSERT_EQ_STR(argv, "-h\n-t\nCF,CG,R,RS,SI,SO,ST,S\n-o\n%i|%T|%P|%a|%S|%e|%N|%u\n--\n");
	free(argv);
	char *env = slurp("env");
	ASSERT_EQ_STR(env, "SLURM_CONF=/etc/fp-test/slurm.conf\nSLURM_TIME_FORMAT=standard\n"
			   "LC_ALL=C\n");
	free(env);
	ASSERT_EQ_INT(n, 2);
	ASSERT_EQ_STR(jobs[0].id, "1");
	ASSERT_EQ_STR(jobs[0].state, "RUNNING");
	ASSERT_EQ_STR(jobs[0].partition, "gpu");
	ASSERT_EQ_STR(jobs[0].account, ""); /* "(null)": no accounting */
	ASSERT_EQ_STR(jobs[0].user, "root");
	ASSERT_EQ_STR(jobs[0].nodes, "n1");
	ASSERT_EQ_INT(jobs[0].start_ms, 1796186838000LL); /* 2026-12-02T04:47:18Z */
	ASSERT_EQ_INT(jobs[0].end_ms, 0);                 /* "NONE" */
	ASSERT_EQ_STR(jobs[1].id, "2");
	ASSERT_EQ_STR(jobs[1].nodes, "n2");
	slurm_jobs_free(jobs, n);

	tool_named("squeue", "echo '<html>502</html>'");
	ASSERT_EQ_ERR(slurm_cli_jobs(c, &jobs, &n, err, sizeof(err)), FP_EPARSE);
	ASSERT_EQ_STR(err, "squeue: line 1: expected 8 fields separated by '|', found 1");
	assert_null(jobs);
	tool_named("squeue",
		   "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1");
	ASSERT_EQ_ERR(slurm_cli_jobs(c, &jobs, &n, err, sizeof(err)), FP_EIO);
	ASSERT_EQ_STR(err, "squeue: exit 1: \"squeue: error: Unable to contact slurm controller\"");
	tool_named("squeue", ": # no job holds a node");
	ASSERT_OK(slurm_cli_jobs(c, &jobs, &n, err, sizeof(err)));
	ASSERT_EQ_INT(n, 0);
	assert_null(jobs);
	slurm_cli_free(c);
}

/* scontrol reconfigure: its argv, and a failure quoted. */
static void test_reconfigure(void **state)
{
	tool(": # reconfigured");
	struct slurm_cli *c = cli(0, 0);
	char err[256] = "";
	ASSERT_OK(slurm_cli_reconfigure(c, err, sizeof(err)));
	char *argv = slurp("argv");
	ASSERT_EQ_STR(argv, "reconfigure\n--\n");
	free(argv);
	tool("echo 'slurm_reconfigure error: Unable to contact slurm controller' >&2; exit 1");
	ASSERT_EQ_ERR(slurm_cli_reconfigure(c, err, sizeof(err)), FP_EIO);
	ASSERT_EQ_STR(err, "scontrol reconfigure: exit 1: \"slurm_reconfigure error: Unable to "
			   "contact slurm controller\"");
	slurm_cli_free(c);
}

static void test_nodes_real(void **state)
{
	/* The caller's own LC_ALL and SLURM_TIME_FORMAT are replaced, not doubled. */
	setenv("LC_ALL", "de_DE.UTF-8", 1);
	setenv("SLURM_TIME_FORMAT", "relative", 1);
	struct slurm_cli *c = cli(0, 0);
	unsetenv("LC_ALL");
	unsetenv("SLURM_TIME_FORMAT");
	cat_tool("scontrol-show-node-o.txt");
	struct slurm_node *nodes = NULL;
	size_t n = 99;
	char err[256] = "";
	ASSERT_OK(slurm_cli_nodes(c, &nodes, &n, err, sizeof(err)));
	ASSERT_EQ_INT(n, 5);
	ASSERT_EQ_STR(nodes[0].name, "ghost01");
	ASSERT_EQ_INT(nodes[0].state.base, SLURM_BASE_UNKNOWN);
	ASSERT_EQ_INT(nodes[0].state.flags, SLURM_NF_NOT_RESPONDING);
	ASSERT_EQ_INT(nodes[0].has_reason, 0);
	ASSERT_EQ_STR(nodes[1].name, "ghost02");
	ASSERT_EQ_INT(nodes[1].state.base, SLURM_BASE_UNKNOWN);
	ASSERT_EQ_INT(nodes[1].state.flags, SLURM_NF_DRAIN | SLURM_NF_NOT_RESPONDING);
	ASSERT_EQ_STR(nodes[1].reason, "never onboarded");
	ASSERT_EQ_STR(nodes[1].reason_user, "root");
	ASSERT_EQ_STR(nodes[1].reason_time, "2026-12-02T01:34:37");
	ASSERT_EQ_STR(nodes[2].name, "ghost03");
	ASSERT_EQ_STR(nodes[3].name, "n1");
	ASSERT_EQ_INT(nodes[3].state.base, SLURM_BASE_IDLE);
	ASSERT_EQ_INT(nodes[3].state.flags, SLURM_NF_DRAIN);
	ASSERT_EQ_STR(nodes[3].reason, "fleetplane: xid 79 on GPU 3");
	ASSERT_EQ_STR(nodes[4].name, "n2");
	ASSERT_EQ_INT(nodes[4].state.base, SLURM_BASE_ALLOCATED);
	ASSERT_EQ_INT(nodes[4].state.flags, 0);
	ASSERT_EQ_INT(nodes[4].cpu_alloc, 1);
	ASSERT_EQ_STR(nodes[4].gres, "gpu:8");
	free(nodes);

	char *argv = slurp("argv"), *env = slurp("env");
	ASSERT_EQ_STR(argv, "-o\n-F\nshow\nnode\n--\n");
	ASSERT_EQ_STR(env, "SLURM_CONF=/etc/fp-test/slurm.conf\nSLURM_TIME_FORMAT=standard\n"
			   "LC_ALL=C\n");
	free(argv);
	free(env);
	slurm_cli_free(c);
}

static void test_nodes_snapshot2(void **state)
{
	struct slurm_cli *c = cli(0, 0);
	cat_tool("scontrol-show-node-o-2.txt");
	struct slurm_node *nodes = NULL;
	size_t n = 0;
	char err[256] = "";
	ASSERT_OK(slurm_cli_nodes(c, &nodes, &n, err, sizeof(err)));
	ASSERT_EQ_INT(n, 5);
	ASSERT_EQ_STR(nodes[2].name, "ghost03");
	ASSERT_EQ_INT(nodes[2].state.base, SLURM_BASE_DOWN);
	ASSERT_EQ_INT(nodes[2].state.flags, SLURM_NF_NOT_RESPONDING);
	ASSERT_EQ_STR(nodes[2].reason, "bmc unreachable");
	ASSERT_EQ_STR(nodes[4].name, "n2");
	ASSERT_EQ_INT(nodes[4].state.base, SLURM_BASE_ALLOCATED);
	ASSERT_EQ_INT(nodes[4].state.flags, SLURM_NF_DRAIN);
	ASSERT_EQ_STR(nodes[4].reason, "fleetplane: rollout wave 2");
	free(nodes);
	slurm_cli_free(c);
}

static void test_nodes_empty(void **state)
{
	struct slurm_cli *c = cli(0, 0);
	tool("echo 'No nodes in the system'");
	struct slurm_node *nodes = (struct slurm_node *)&nodes;
	size_t n = 7;
	char err[256] = "";
	ASSERT_OK(slurm_cli_nodes(c, &nodes, &n, err, sizeof(err)));
	ASSERT_EQ_INT(n, 0);
	assert_null(nodes);
	slurm_cli_free(c);
}

/* Runs the tool body and expects rc with err exactly want (NULL: not checked) and no nodes. */
static void nodes_fail(struct slurm_cli *c, const char *body, int rc, const char *want)
{
	tool(body);
	struct slurm_node *nodes = (struct slurm_node *)&nodes;
	size_t n = 7;
	char err[512] = "";
	ASSERT_EQ_ERR(slurm_cli_nodes(c, &nodes, &n, err, sizeof(err)), rc);
	assert_null(nodes);
	ASSERT_EQ_INT(n, 0);
	if (want)
		ASSERT_EQ_STR(err, want);
}

static void test_nodes_garbage(void **state)
{
	struct slurm_cli *c = cli(0, 0);
	char *p = data_path("scontrol-show-node-o.txt");
	/* A real record, then garbage: the whole call fails, naming line 2. */
	char *body = xasprintf("head -n 1 '%s'; echo 'garbage here'", p);
	tool(body);
	struct slurm_node *nodes = NULL;
	size_t n = 0;
	char err[512] = "";
	ASSERT_EQ_ERR(slurm_cli_nodes(c, &nodes, &n, err, sizeof(err)), FP_EPARSE);
	assert_non_null(strstr(err, "scontrol show node: line 2: "));
	assert_null(nodes);
	free(body);
	/* The same record twice. */
	body = xasprintf("head -n 1 '%s'; head -n 1 '%s'", p, p);
	nodes_fail(c, body, FP_EPARSE, "scontrol show node: node ghost01 listed twice");
	free(body);
	/* A record without State=. */
	nodes_fail(c, "echo 'NodeName=n1 CPUTot=1'", FP_EPARSE, NULL);
	nodes_fail(c, "true", FP_EPARSE, "scontrol show node: empty output");
	nodes_fail(c, "echo; echo", FP_EPARSE, "scontrol show node: no records");
	/* What scontrol prints on stdout for a name it does not know, here with exit 0. */
	nodes_fail(c, "echo 'Node fut01 not found'", FP_EPARSE, NULL);
	nodes_fail(c, "printf 'NodeName=n1 State=IDLE\\000\\n'", FP_EPARSE,
		   "scontrol show node: a NUL byte in output");
	/* A state word Slurm never prints parses, flagged unknown, for the caller to refuse. */
	tool("echo 'NodeName=n1 State=SLEEPY'");
	ASSERT_OK(slurm_cli_nodes(c, &nodes, &n, err, sizeof(err)));
	ASSERT_EQ_INT(n, 1);
	ASSERT_EQ_INT(nodes[0].state.unknown, 1);
	free(nodes);
	free(p);
	slurm_cli_free(c);
}

static void test_nodes_failures(void **state)
{
	struct slurm_cli *c = cli(300, 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	nodes_fail(c, "sleep 5", FP_ETIMEDOUT,
		   "scontrol show node: no exit within 300 ms (killed)");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 3);
	nodes_fail(c,
		   "echo 'slurm_load_node error: Unable to contact slurm controller (connect "
		   "failure)' >&2; exit 1",
		   FP_EIO,
		   "scontrol show node: exit 1: \"slurm_load_node error: Unable to contact slurm "
		   "controller (connect failure)\"");
	/* Only the first line, escaped. */
	nodes_fail(c, "printf 'bad\\033[31m \\\\ \\303\\251\\nsecond line\\n' >&2; exit 2", FP_EIO,
		   "scontrol show node: exit 2: \"bad\\x1b[31m \\x5c \\xc3\\xa9\"");
	char *down = data_path("scontrol-show-node-down.stderr");
	char *body = xasprintf("cat '%s' >&2; exit 1", down);
	nodes_fail(c, body, FP_EIO,
		   "scontrol show node: exit 1: \"slurm_load_node error: Unable to contact slurm "
		   "controller (connect failure)\"");
	free(body);
	free(down);
	nodes_fail(c, "echo 'Access/permission denied' >&2; exit 1", FP_EPERM, NULL);
	nodes_fail(c, "kill -9 $$", FP_EIO,
		   "scontrol show node: killed by signal 9: \"(no output)\"");
	/* stdout when stderr is empty (22.05 prints "Node x not found" there). */
	nodes_fail(c, "echo 'Node fut01 not found'; exit 1", FP_EIO,
		   "scontrol show node: exit 1: \"Node fut01 not found\"");
	slurm_cli_free(c);

	c = cli(0, 1000);
	cat_tool("scontrol-show-node-o.txt");
	struct slurm_node *nodes = NULL;
	size_t n = 0;
	char err[256];
	ASSERT_EQ_ERR(slurm_cli_nodes(c, &nodes, &n, err, sizeof(err)), FP_ETOOBIG);
	assert_null(nodes);
	slurm_cli_free(c);

	/* No scontrol in the bindir. */
	c = cli(0, 0);
	char *path = xasprintf("%s/scontrol", dir);
	unlink(path);
	free(path);
	ASSERT_EQ_ERR(slurm_cli_nodes(c, &nodes, &n, err, sizeof(err)), FP_ENOTFOUND);
	assert_null(nodes);
	slurm_cli_free(c);
}

static void test_new_refused(void **state)
{
	struct slurm_cli *c = (struct slurm_cli *)&c;
	char err[256];
	struct slurm_cli_config cfg = {.bindir = "bin"};
	ASSERT_EQ_ERR(slurm_cli_new(&cfg, &c, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "bindir must be an absolute path");
	assert_null(c);
	cfg = (struct slurm_cli_config){.slurm_conf = "/etc/slurm\n.conf"};
	ASSERT_EQ_ERR(slurm_cli_new(&cfg, &c, err, sizeof(err)), FP_EINVAL);
	cfg = (struct slurm_cli_config){.timeout_ms = -1};
	ASSERT_EQ_ERR(slurm_cli_new(&cfg, &c, err, sizeof(err)), FP_EINVAL);
	cfg = (struct slurm_cli_config){.max_out = (64u << 20) + 1};
	ASSERT_EQ_ERR(slurm_cli_new(&cfg, &c, err, sizeof(err)), FP_EINVAL);
	cfg = (struct slurm_cli_config){0};
	ASSERT_OK(slurm_cli_new(&cfg, &c, err, sizeof(err)));
	slurm_cli_free(c);
	slurm_cli_free(NULL);
}

static void test_update_batch(void **state)
{
	struct slurm_cli *c = cli(0, 0);
	tool("exit 0");
	const char *names[] = {"n1", "n2", "ghost01", "ghost02", "ghost03", "n1"};
	char err[256] = "";
	ASSERT_OK(slurm_cli_update(c, names, 6, SLURM_UPDATE_DRAIN, "fleetplane: health: xid 79",
				   err, sizeof(err)));
	char *argv = slurp("argv");
	ASSERT_EQ_STR(argv, "update\nNodeName=ghost[01-03],n[1-2]\nState=DRAIN\n"
			    "Reason=fleetplane: health: xid 79\n--\n");
	free(argv);

	tool("exit 0");
	ASSERT_OK(slurm_cli_update(c, names, 2, SLURM_UPDATE_RESUME, NULL, err, sizeof(err)));
	argv = slurp("argv");
	ASSERT_EQ_STR(argv, "update\nNodeName=n[1-2]\nState=RESUME\n--\n");
	free(argv);

	tool("exit 0");
	ASSERT_OK(slurm_cli_update(c, names + 4, 1, SLURM_UPDATE_DOWN, "bmc unreachable; 'x' $HOME",
				   err, sizeof(err)));
	argv = slurp("argv");
	ASSERT_EQ_STR(argv, "update\nNodeName=ghost03\nState=DOWN\n"
			    "Reason=bmc unreachable; 'x' $HOME\n--\n");
	free(argv);

	tool("exit 0");
	ASSERT_OK(slurm_cli_update(c, names, 1, SLURM_UPDATE_UNDRAIN, NULL, err, sizeof(err)));
	argv = slurp("argv");
	ASSERT_EQ_STR(argv, "update\nNodeName=n1\nState=UNDRAIN\n--\n");
	free(argv);

	/* No names: nothing runs. */
	tool("exit 0");
	ASSERT_OK(slurm_cli_update(c, names, 0, SLURM_UPDATE_DRAIN, "x", err, sizeof(err)));
	argv = slurp("argv");
	ASSERT_EQ_STR(argv, "");
	free(argv);
	slurm_cli_free(c);
}

static void update_refused(struct slurm_cli *c, const char *name, enum slurm_update_action act,
			   const char *reason, const char *want)
{
	tool("exit 0");
	const char *names[] = {"n1", name};
	char err[256] = "";
	ASSERT_EQ_ERR(slurm_cli_update(c, names, 2, act, reason, err, sizeof(err)), FP_EINVAL);
	if (want)
		ASSERT_EQ_STR(err, want);
	char *argv = slurp("argv");
	ASSERT_EQ_STR(argv, ""); /* nothing ran */
	free(argv);
}

static void test_update_refused(void **state)
{
	struct slurm_cli *c = cli(0, 0);
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, NULL,
		       "State=DRAIN needs a reason (scontrol refuses without)");
	update_refused(c, "n2", SLURM_UPDATE_DOWN, NULL,
		       "State=DOWN needs a reason (scontrol refuses without)");
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, "", "reason empty");
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, "   ", "reason empty");
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, "two\nlines", "reason holds a control byte");
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, "tab\there", "reason holds a control byte");
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, "esc\033", "reason holds a control byte");
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, "\"quoted\"",
		       "reason starts or ends with '\"' (scontrol strips it)");
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, "x [root@2026-12-02T01:34:37]",
		       "reason ends with ']' (reads back as [user@time])");
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, "a Comment=b",
		       "reason holds \"Comment=\" (would not read back whole)");
	update_refused(c, "n2", (enum slurm_update_action)9, "x", "unknown update action 9");
	char *big = xcalloc(1, SLURM_CLI_REASON_MAX + 2);
	memset(big, 'r', SLURM_CLI_REASON_MAX + 1);
	update_refused(c, "n2", SLURM_UPDATE_DRAIN, big, "reason longer than 512 bytes");
	big[SLURM_CLI_REASON_MAX] = '\0'; /* exactly the bound is taken */
	tool("exit 0");
	const char *one[] = {"n1"};
	char err[256];
	ASSERT_OK(slurm_cli_update(c, one, 1, SLURM_UPDATE_DRAIN, big, err, sizeof(err)));
	free(big);
	/* Names a hostlist cannot carry: nothing runs, the index is named. */
	update_refused(c, "n2,n3", SLURM_UPDATE_RESUME, NULL, NULL);
	update_refused(c, "n[2]", SLURM_UPDATE_RESUME, NULL, NULL);
	update_refused(c, "", SLURM_UPDATE_RESUME, NULL, NULL);
	update_refused(c, "n 2", SLURM_UPDATE_RESUME, NULL, NULL);
	slurm_cli_free(c);
}

static void test_update_fails(void **state)
{
	struct slurm_cli *c = cli(300, 0);
	char *p = data_path("scontrol-update-nosuch.stderr");
	char *body = xasprintf("cat '%s' >&2; exit 1", p);
	tool(body);
	const char *names[] = {"nosuch"};
	char err[256] = "";
	ASSERT_EQ_ERR(slurm_cli_update(c, names, 1, SLURM_UPDATE_DRAIN, "x", err, sizeof(err)),
		      FP_EIO);
	ASSERT_EQ_STR(err, "scontrol update (command 1 of 1): exit 1: \"slurm_update error: "
			   "Invalid node name specified\"");
	tool("sleep 5");
	ASSERT_EQ_ERR(slurm_cli_update(c, names, 1, SLURM_UPDATE_RESUME, NULL, err, sizeof(err)),
		      FP_ETIMEDOUT);
	free(body);
	free(p);
	slurm_cli_free(c);
}

static size_t count_lines_with(const char *s, const char *prefix, size_t *longest)
{
	size_t n = 0, pl = strlen(prefix);
	*longest = 0;
	for (const char *l = s; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		if (len >= pl && memcmp(l, prefix, pl) == 0) {
			n++;
			if (len - pl > *longest)
				*longest = len - pl;
		}
		l += len + (nl ? 1 : 0);
	}
	return n;
}

static void test_update_split(void **state)
{
	struct slurm_cli *c = cli(0, 0);
	enum {
		N = 20000
	};
	char **names = xcalloc(N, sizeof(*names));
	/* Ranged names: 20,000 in one command. */
	for (size_t i = 0; i < N; i++)
		names[i] = xasprintf("node%05zu", i);
	tool("exit 0");
	char err[256] = "";
	ASSERT_OK(slurm_cli_update(c, (const char *const *)names, N, SLURM_UPDATE_RESUME, NULL, err,
				   sizeof(err)));
	char *argv = slurp("argv");
	ASSERT_EQ_STR(argv, "update\nNodeName=node[00000-19999]\nState=RESUME\n--\n");
	free(argv);
	for (size_t i = 0; i < N; i++)
		free(names[i]);
	/* Names that do not range ("x00001y": no trailing digits): 160,000 bytes of hostlist. A
	 * command takes names while 7 bytes plus 3 (comma, room for brackets) each fit in 64 KiB:
	 * 6,553 names a command, so four commands, every name once. */
	for (size_t i = 0; i < N; i++)
		names[i] = xasprintf("x%05zuy", i);
	tool("exit 0");
	ASSERT_OK(slurm_cli_update(c, (const char *const *)names, N, SLURM_UPDATE_DRAIN,
				   "fleetplane: split", err, sizeof(err)));
	argv = slurp("argv");
	size_t longest;
	ASSERT_EQ_INT(count_lines_with(argv, "NodeName=", &longest), 4);
	ASSERT_EQ_INT(longest, 6553 * 8 - 1);
	assert_true(longest <= SLURM_CLI_MAX_HOSTLIST);
	ASSERT_EQ_INT(count_lines_with(argv, "Reason=fleetplane: split", &longest), 4);
	ASSERT_EQ_INT(count_lines_with(argv, "x", &longest), 0);
	/* Every name once: the commas, plus one name per command. */
	size_t commas = 0;
	for (const char *q = argv; *q; q++)
		commas += *q == ',';
	ASSERT_EQ_INT(commas + 4, N);
	assert_non_null(strstr(argv, "NodeName=x00000y,"));
	assert_non_null(strstr(argv, ",x19999y\n"));
	free(argv);
	for (size_t i = 0; i < N; i++)
		free(names[i]);
	free(names);
	slurm_cli_free(c);
}

static void test_ping(void **state)
{
	struct slurm_cli *c = cli(0, 0);
	struct slurm_ping p;
	char err[256] = "";
	/* Real 22.05.8 output (tests/data/slurm/SOURCES.md, snapshot 3). */
	cat_tool("scontrol-ping.txt");
	ASSERT_OK(slurm_cli_ping(c, &p, err, sizeof(err)));
	ASSERT_EQ_INT(p.up, 1);
	ASSERT_EQ_STR(p.host, "vm");
	ASSERT_EQ_INT(p.backups, 0);
	char *argv = slurp("argv");
	ASSERT_EQ_STR(argv, "ping\n--\n");
	free(argv);
	/* The controller stopped: exit 1, the DOWN line and a banner of '*'. */
	char *path = data_path("scontrol-ping-down.txt");
	char *body = xasprintf("cat '%s'; exit 1", path);
	tool(body);
	free(body);
	free(path);
	ASSERT_OK(slurm_cli_ping(c, &p, err, sizeof(err)));
	ASSERT_EQ_INT(p.up, 0);
	ASSERT_EQ_STR(p.host, "vm");

	tool("echo 'Slurmctld(primary) at ctl1 is DOWN'; echo 'Slurmctld(backup) at ctl2 is UP';"
	     "exit 1");
	ASSERT_OK(slurm_cli_ping(c, &p, err, sizeof(err)));
	ASSERT_EQ_INT(p.up, 0);
	ASSERT_EQ_STR(p.host, "ctl1");
	ASSERT_EQ_INT(p.backups, 1);
	ASSERT_EQ_INT(p.backups_up, 1);

	tool("echo 'Slurmctld(primary) at localhost is SORT OF UP'");
	ASSERT_EQ_ERR(slurm_cli_ping(c, &p, err, sizeof(err)), FP_EPARSE);
	ASSERT_EQ_STR(err,
		      "scontrol ping: line 1: \"Slurmctld(primary) at localhost is SORT OF UP\"");
	ASSERT_EQ_INT(p.up, 0);
	tool("echo 'Slurmctld(primary) at a is UP'; echo 'Slurmctld(primary) at b is UP'");
	ASSERT_EQ_ERR(slurm_cli_ping(c, &p, err, sizeof(err)), FP_EPARSE);
	ASSERT_EQ_INT(p.up, 0);
	tool("true");
	ASSERT_EQ_ERR(slurm_cli_ping(c, &p, err, sizeof(err)), FP_EPARSE);
	ASSERT_EQ_STR(err, "scontrol ping: no primary line");
	tool("echo 'scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error' >&2; exit 1");
	ASSERT_EQ_ERR(slurm_cli_ping(c, &p, err, sizeof(err)), FP_EIO);
	ASSERT_EQ_STR(err, "scontrol ping: exit 1: \"scontrol: error: resolve_ctls_from_dns_srv: "
			   "res_nsearch error\"");
	slurm_cli_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nodes_real, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconfigure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nodes_snapshot2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nodes_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nodes_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nodes_failures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_update_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_update_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_update_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_update_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ping, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
