/* layers: base core store driver engine sched */
/* test_slurm_peer_cli.c - the Slurm client (src/sched/slurm_cli.c) against a real Slurm 22.05
 * started with tests/peers/slurm/slurm.sh (fixed argv, posix_spawn; stopped in the group
 * teardown, also when a case fails): the node list with n1, n2 (real slurmd, idle), ghost01-03
 * (nothing listens: UNKNOWN+NOT_RESPONDING once slurmctld's first ping fails) and fut01-02
 * (FUTURE, listed because the client passes -F); n1 and n2 drained in one `scontrol update`
 * with the reason read back with its user, resumed to IDLE; a name Slurm does not know; ping;
 * and, last, the controller stopped: ping DOWN and the node list failing whole.
 * scontrol is reached through a wrapper in a bindir of the test's that logs each argv before
 * exec'ing the real one, so "one command" is asserted. A peer suite (`make peers`); skips when
 * slurmctld is not installed. Run from the repository root (make does); FP_SRCDIR overrides. */
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

static char dir[64];
static int started;
static struct slurm_cli *cli;

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && *s ? s : ".";
}

static int spawn_wait(const char *path, char *const argv[])
{
	pid_t pid;
	if (posix_spawn(&pid, path, NULL, NULL, argv, environ) != 0)
		return -1;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int peer(const char *verb)
{
	char *script = xasprintf("%s/tests/peers/slurm/slurm.sh", srcdir());
	char *argv[] = {"bash", script, (char *)verb, dir, NULL};
	int rc = spawn_wait("/bin/bash", argv);
	free(script);
	return rc;
}

static char *slurp(const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	struct buf b;
	buf_init(&b, 1u << 20);
	if (buf_read_file(&b, path, 0, NULL, 0) < 0 || !b.data)
		buf_puts(&b, "");
	free(path);
	size_t len;
	return buf_detach(&b, &len);
}

static void truncate_calls(void)
{
	char *path = xasprintf("%s/calls", dir);
	FILE *f = fopen(path, "w");
	if (f)
		fclose(f);
	free(path);
}

static int make_client(void);
static int group_teardown(void **state);

static int group_setup(void **state)
{
	if (access("/usr/sbin/slurmctld", X_OK) != 0 || access("/usr/bin/scontrol", X_OK) != 0) {
		fprintf(stderr, "slurmctld or scontrol not installed: skipping\n");
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/fp-slcli-peer-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0711) != 0)
		return -1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = peer("start");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "peer start: rc %d in %ld ms\n", rc,
		(long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
	if (rc != 0) {
		peer("stop"); /* slurm.sh stops what it started; again is harmless */
		return -1;
	}
	started = 1;
	if (make_client() < 0) {
		group_teardown(state); /* cmocka skips the group teardown when setup fails */
		return -1;
	}
	return 0;
}

/* The client, through a bindir of the test's: a wrapper that logs the argv it is given (one line
 * a call) and execs the real scontrol. */
static int make_client(void)
{
	/* The test's bindir: a wrapper that logs the argv it is given, one line a call. */
	char *bindir = xasprintf("%s/bin", dir), *wrapper = xasprintf("%s/scontrol", bindir);
	FILE *f = mkdir(bindir, 0755) == 0 ? fopen(wrapper, "w") : NULL;
	if (!f) {
		free(wrapper);
		free(bindir);
		return -1;
	}
	fprintf(f, "#!/bin/sh\necho \"$*\" >>%s/calls\nexec /usr/bin/scontrol \"$@\"\n", dir);
	fclose(f);
	if (chmod(wrapper, 0755) != 0) {
		free(wrapper);
		free(bindir);
		return -1;
	}
	char *conf = xasprintf("%s/slurm.conf", dir), err[256];
	struct slurm_cli_config cfg = {.slurm_conf = conf, .bindir = bindir};
	int rc = slurm_cli_new(&cfg, &cli, err, sizeof(err));
	free(conf);
	free(wrapper);
	free(bindir);
	return rc < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
	slurm_cli_free(cli);
	cli = NULL;
	if (!dir[0])
		return 0;
	int rc = started ? peer("stop") : 0;
	started = 0;
	char *argv[] = {"rm", "-rf", dir, NULL};
	spawn_wait("/bin/rm", argv);
	return rc == 0 ? 0 : -1;
}

static void need_peer(void)
{
	if (!started)
		skip();
}

static const struct slurm_node *find(const struct slurm_node *nodes, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(nodes[i].name, name) == 0)
			return &nodes[i];
	return NULL;
}

/* Lists the nodes, and polls (0.2 s) up to secs seconds until node name has state base+flags. */
static struct slurm_node *await_state(const char *name, enum slurm_base base, uint32_t flags,
				      int secs, size_t *n)
{
	struct slurm_node *nodes = NULL;
	char err[512];
	for (int i = 0; i <= secs * 5; i++) {
		free(nodes);
		nodes = NULL;
		int rc = slurm_cli_nodes(cli, &nodes, n, err, sizeof(err));
		if (rc < 0)
			fail_msg("slurm_cli_nodes: %s: %s", fp_err_name(rc), err);
		const struct slurm_node *x = find(nodes, *n, name);
		assert_non_null(x);
		if (x->state.base == base && x->state.flags == flags)
			return nodes;
		struct timespec ts = {0, 200 * 1000000L};
		nanosleep(&ts, NULL);
	}
	const struct slurm_node *x = find(nodes, *n, name);
	fail_msg("%s: state %s, not base %d flags 0x%x within %d s", name, x->state.text, (int)base,
		 flags, secs);
	return NULL;
}

static void test_nodes(void **state)
{
	need_peer();
	size_t n = 0;
	/* The ghosts turn NOT_RESPONDING about 10 s after slurmctld starts (slurm.sh). */
	struct slurm_node *nodes = await_state("ghost01", SLURM_BASE_UNKNOWN,
					       SLURM_NF_NOT_RESPONDING, 25, &n);
	ASSERT_EQ_INT(n, 7);
	static const char *const names[] = {"n1",      "n2",    "ghost01", "ghost02",
					    "ghost03", "fut01", "fut02"};
	for (size_t i = 0; i < 7; i++) {
		const struct slurm_node *x = find(nodes, n, names[i]);
		if (!x)
			fail_msg("node %s not listed", names[i]);
		ASSERT_EQ_INT(x->state.unknown, 0);
		ASSERT_EQ_STR(x->gres, "gpu:8");
		ASSERT_EQ_INT(x->cpu_tot, 1);
		ASSERT_EQ_INT(x->real_memory_mb, 500);
		if (i < 2) {
			ASSERT_EQ_INT(x->state.base, SLURM_BASE_IDLE);
			ASSERT_EQ_INT(x->state.flags, 0);
			ASSERT_EQ_INT(x->has_reason, 0);
		} else if (i < 5) {
			ASSERT_EQ_INT(x->state.base, SLURM_BASE_UNKNOWN);
			ASSERT_EQ_INT(x->state.flags, SLURM_NF_NOT_RESPONDING);
		} else {
			ASSERT_EQ_INT(x->state.base, SLURM_BASE_FUTURE);
		}
	}
	free(nodes);
}

static void test_drain_resume(void **state)
{
	need_peer();
	const char *names[] = {"n2", "n1"};
	char err[512] = "";
	truncate_calls();
	int rc = slurm_cli_update(cli, names, 2, SLURM_UPDATE_DRAIN, "fleetplane: test: batch", err,
				  sizeof(err));
	if (rc < 0)
		fail_msg("drain: %s: %s", fp_err_name(rc), err);
	char *calls = slurp("calls");
	ASSERT_EQ_STR(calls, "update NodeName=n[1-2] State=DRAIN Reason=fleetplane: test: batch\n");
	free(calls);

	size_t n = 0;
	struct slurm_node *nodes = NULL;
	ASSERT_OK(slurm_cli_nodes(cli, &nodes, &n, err, sizeof(err)));
	for (size_t i = 0; i < 2; i++) {
		const struct slurm_node *x = find(nodes, n, names[i]);
		assert_non_null(x);
		ASSERT_EQ_INT(x->state.base, SLURM_BASE_IDLE);
		ASSERT_EQ_INT(x->state.flags, SLURM_NF_DRAIN);
		ASSERT_EQ_INT(x->has_reason, 1);
		ASSERT_EQ_STR(x->reason, "fleetplane: test: batch");
		ASSERT_EQ_STR(x->reason_user, "root");
		ASSERT_EQ_INT(strlen(x->reason_time), 19); /* 2026-12-02T01:34:37 */
	}
	ASSERT_EQ_INT(find(nodes, n, "ghost01")->state.flags & SLURM_NF_DRAIN, 0);
	free(nodes);

	truncate_calls();
	rc = slurm_cli_update(cli, names, 2, SLURM_UPDATE_RESUME, NULL, err, sizeof(err));
	if (rc < 0)
		fail_msg("resume: %s: %s", fp_err_name(rc), err);
	calls = slurp("calls");
	ASSERT_EQ_STR(calls, "update NodeName=n[1-2] State=RESUME\n");
	free(calls);
	/* After RESUME a node may read IDLE+NOT_RESPONDING until slurmctld pings it again. */
	nodes = await_state("n1", SLURM_BASE_IDLE, 0, 15, &n);
	free(nodes);
	nodes = await_state("n2", SLURM_BASE_IDLE, 0, 15, &n);
	ASSERT_EQ_INT(find(nodes, n, "n2")->has_reason, 0);
	free(nodes);
}

static void test_update_unknown_node(void **state)
{
	need_peer();
	const char *names[] = {"nosuch"};
	char err[512] = "";
	ASSERT_EQ_ERR(slurm_cli_update(cli, names, 1, SLURM_UPDATE_DRAIN, "x", err, sizeof(err)),
		      FP_EIO);
	ASSERT_EQ_STR(err, "scontrol update (command 1 of 1): exit 1: \"slurm_update error: "
			   "Invalid node name specified\"");
}

static void test_ping(void **state)
{
	need_peer();
	struct slurm_ping p;
	char err[512] = "";
	int rc = slurm_cli_ping(cli, &p, err, sizeof(err));
	if (rc < 0)
		fail_msg("ping: %s: %s", fp_err_name(rc), err);
	ASSERT_EQ_INT(p.up, 1);
	/* 22.05 names the controller by this host's name (tests/data/slurm/SOURCES.md). */
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = '\0';
	if (strcmp(p.host, host) != 0 && strcmp(p.host, "localhost") != 0)
		fail_msg("ping host %s, not %s or localhost", p.host, host);
	ASSERT_EQ_INT(p.backups, 0);
}

/* Last: the controller stopped. Ping reads it DOWN; the node list fails whole (FP_EIO). */
static void test_controller_down(void **state)
{
	need_peer();
	started = 0;
	ASSERT_EQ_INT(peer("stop"), 0);
	struct slurm_ping p;
	char err[512] = "";
	int rc = slurm_cli_ping(cli, &p, err, sizeof(err));
	if (rc < 0)
		fail_msg("ping: %s: %s", fp_err_name(rc), err);
	ASSERT_EQ_INT(p.up, 0);
	struct slurm_node *nodes = (struct slurm_node *)&nodes;
	size_t n = 7;
	ASSERT_EQ_ERR(slurm_cli_nodes(cli, &nodes, &n, err, sizeof(err)), FP_EIO);
	assert_null(nodes);
	ASSERT_EQ_INT(n, 0);
	ASSERT_EQ_STR(err, "scontrol show node: exit 1: \"slurm_load_node error: Unable to contact "
			   "slurm controller (connect failure)\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nodes),
		cmocka_unit_test(test_drain_resume),
		cmocka_unit_test(test_update_unknown_node),
		cmocka_unit_test(test_ping),
		cmocka_unit_test(test_controller_down),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
