/* layers: base core store driver engine sched controller api agent fleet */
/* test_slurm_sync.c - the Slurm backend (sched/slurm_sync.h) in a stepped fleet of the shared
 * harness, against an in-memory Slurm behind struct slurm_ops: held nodes are drained with
 * fleetplane's reason in one call per reason, released ones resumed, a foreign drain becomes a
 * slurm:<user> hold that fleetplane never resumes and drops when Slurm resumes the node, a
 * Slurm that cannot be listed or answers garbage changes nothing but SchedulerInSync, and the
 * condition is written only when it changes. The fake keeps every update call in a log; its
 * records go through the real `scontrol show node -o` parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "core/model.h"
#include "engine/clock.h"
#include "engine/objects.h"
#include "fleet/fleet.h"
#include "fleet/fleet_slurm.h"
#include "driver/bmc_sim.h"
#include "sched/slurm_job.h"
#include "sched/slurm_node.h"
#include "sched/slurm_sync.h"
#include "store/store.h"
#include "support/harness.h"

#include "check.h"

/* ---------------------------------------------------------------- an in-memory Slurm */

#define FAKE_MAX 8
#define FAKE_LOG 32

struct fake_node {
	char name[32];
	char base[16]; /* IDLE, MIXED, DOWN*, FROBNICATED... */
	int drain;
	char reason[256];
	char user[32];
	char jobs[128];     /* "12,7": the running jobs squeue lists on the node */
	char job_state[16]; /* their squeue state; "" = RUNNING */
	char job_end[24];   /* their end time; "" = 2026-11-30T04:40:00 */
};

struct fake_slurm {
	struct fake_node nodes[FAKE_MAX];
	size_t n;
	int fail_lists;          /* list_nodes fails (FP_EIO) while > 0 */
	int garbage;             /* list_nodes answers a record that does not parse */
	size_t lists;            /* list_nodes calls */
	int fail_jobs;           /* list_jobs fails (FP_ETIMEDOUT) while > 0 */
	size_t job_lists;        /* list_jobs calls */
	size_t reconfigures;     /* reconfigure calls */
	int fail_reconfigure;    /* reconfigure fails while > 0 */
	char log[FAKE_LOG][512]; /* "DRAIN n1,n2 reason" / "RESUME n1" */
	size_t nlog;
};

static struct fake_node *fake_find(struct fake_slurm *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->nodes[i].name, name) == 0)
			return &f->nodes[i];
	return NULL;
}

static void fake_add(struct fake_slurm *f, const char *name, const char *base)
{
	assert_true(f->n < FAKE_MAX);
	struct fake_node *n = &f->nodes[f->n++];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	snprintf(n->base, sizeof(n->base), "%s", base);
}

/* An operator's `scontrol update state=drain reason=...` in Slurm. */
static void fake_drain(struct fake_slurm *f, const char *name, const char *user, const char *reason)
{
	struct fake_node *n = fake_find(f, name);
	assert_non_null(n);
	n->drain = 1;
	snprintf(n->user, sizeof(n->user), "%s", user);
	snprintf(n->reason, sizeof(n->reason), "%s", reason);
}

static void fake_resume(struct fake_slurm *f, const char *name)
{
	struct fake_node *n = fake_find(f, name);
	assert_non_null(n);
	n->drain = 0;
	n->reason[0] = n->user[0] = '\0';
}

static int fake_list(void *arg, struct slurm_node **out, size_t *nout, char *err, size_t errlen)
{
	struct fake_slurm *f = arg;
	f->lists++;
	if (f->fail_lists > 0) {
		f->fail_lists--;
		snprintf(err, errlen, "scontrol: error: Unable to contact slurm controller");
		return FP_EIO;
	}
	struct slurm_node *v = xcalloc(f->n ? f->n : 1, sizeof(*v));
	for (size_t i = 0; i < f->n; i++) {
		char line[1024];
		const struct fake_node *fn = &f->nodes[i];
		if (f->garbage)
			snprintf(line, sizeof(line), "<html>502 Bad Gateway</html>");
		else if (fn->drain)
			snprintf(
				line, sizeof(line),
				"NodeName=%s Arch=x86_64 State=%s+DRAIN Reason=%s [%s@2026-11-30T01:00:00]",
				fn->name, fn->base, fn->reason, fn->user);
		else
			snprintf(line, sizeof(line), "NodeName=%s Arch=x86_64 State=%s", fn->name,
				 fn->base);
		int rc = slurm_node_parse(line, strlen(line), &v[i], err, errlen);
		if (rc < 0 && !v[i].name[0]) {
			free(v);
			return rc; /* what the real client answers for output it cannot read */
		}
	}
	*out = v;
	*nout = f->n;
	return 0;
}

/* squeue: one record per job of every node's jobs, through the real parser (a job on two nodes
 * is listed once per node here, which the backend must take the same). */
static int fake_list_jobs(void *arg, struct slurm_job **out, size_t *nout, char *err, size_t errlen)
{
	struct fake_slurm *f = arg;
	f->job_lists++;
	if (f->fail_jobs > 0) {
		f->fail_jobs--;
		snprintf(err, errlen, "squeue: no exit within 10000 ms (killed)");
		return FP_ETIMEDOUT;
	}
	char text[4096];
	size_t len = 0;
	for (size_t i = 0; i < f->n; i++) {
		char ids[128];
		snprintf(ids, sizeof(ids), "%s", f->nodes[i].jobs);
		char *save = NULL;
		for (char *id = strtok_r(ids, ",", &save); id; id = strtok_r(NULL, ",", &save))
			len += (size_t)
				snprintf(text + len, sizeof(text) - len,
					 "%s|%s|gpu|research|2026-11-30T00:10:00|%s|%s|alice\n", id,
					 f->nodes[i].job_state[0] ? f->nodes[i].job_state
								  : "RUNNING",
					 f->nodes[i].job_end[0] ? f->nodes[i].job_end
								: "2026-11-30T04:40:00",
					 f->nodes[i].name);
	}
	return slurm_jobs_parse(text, len, out, nout, err, errlen);
}

static int fake_reconfigure(void *arg, char *err, size_t errlen)
{
	struct fake_slurm *f = arg;
	f->reconfigures++;
	if (f->fail_reconfigure > 0) {
		f->fail_reconfigure--;
		snprintf(err, errlen, "scontrol reconfigure: exit 1: \"Unable to contact slurm\"");
		return FP_EIO;
	}
	return 0;
}

static int fake_update(void *arg, const char *const *names, size_t n, int drain, const char *reason,
		       char *err, size_t errlen)
{
	struct fake_slurm *f = arg;
	assert_true(f->nlog < FAKE_LOG);
	char *l = f->log[f->nlog++];
	size_t len = (size_t)snprintf(l, 512, "%s ", drain ? "DRAIN" : "RESUME");
	for (size_t i = 0; i < n; i++) {
		len += (size_t)snprintf(l + len, 512 - len, "%s%s", i ? "," : "", names[i]);
		struct fake_node *fn = fake_find(f, names[i]);
		assert_non_null(fn);
		if (drain) {
			fake_drain(f, names[i], "root", reason);
		} else {
			fake_resume(f, names[i]);
		}
	}
	if (drain)
		snprintf(l + len, 512 - len, " %s", reason);
	return 0;
}

/* ---------------------------------------------------------------- the world */

struct world {
	struct harness *h;
	struct fake_slurm slurm;
	struct slurm_sync *sync;
	struct fleet_scheduler sched;
};

/* Paths the next world's backend keeps its generated configuration at (NULL: none). */
static const char *next_nodes_conf, *next_gres_conf;

static struct world *world_new_parts(size_t nnodes, unsigned parts)
{
	struct world *w = xcalloc(1, sizeof(*w));
	struct harness_config hc = {.parts = parts};
	w->h = harness_new(&hc);
	for (size_t i = 0; i < nnodes; i++) {
		char name[32];
		snprintf(name, sizeof(name), "n%zu", i + 1);
		harness_put_node(w->h, name, "s1", "r1", "sim", PHASE_AVAILABLE);
		fake_add(&w->slurm, name, "IDLE");
	}
	struct slurm_ops ops = {.list_nodes = fake_list,
				.update = fake_update,
				.list_jobs = fake_list_jobs,
				.reconfigure = fake_reconfigure,
				.arg = &w->slurm};
	struct slurm_sync_config sc = {.interval_ms = 30000,
				       .debounce_ms = 1000,
				       .rng_seed = 7,
				       .nodes_conf = next_nodes_conf,
				       .gres_conf = next_gres_conf};
	w->sync = slurm_sync_new(&ops, &sc);
	fleet_slurm_scheduler(w->sync, &w->sched);
	w->h->scheduler = &w->sched;
	harness_up(w->h);
	harness_pump(w->h);
	return w;
}

static struct world *world_new(size_t nnodes)
{
	return world_new_parts(nnodes, FLEET_CACHE);
}

static void world_free(struct world *w)
{
	harness_free(w->h);
	slurm_sync_free(w->sync);
	free(w);
}

struct hold_arg {
	const char *owner, *reason;
	int release;
};

static int mutate_hold(struct node *n, struct objects_txn *tx, void *arg)
{
	(void)tx;
	const struct hold_arg *a = arg;
	if (a->release)
		return node_hold_release(n, a->owner) == 0;
	return node_hold_add(n, a->owner, a->reason, 1796000000000LL, 0) == 0;
}

/* What the health controller or an operator does: a hold added or released in the store,
 * then the cache catches up. */
static void set_hold(struct world *w, const char *node, const char *owner, const char *reason,
		     int release)
{
	struct hold_arg a = {owner, reason, release};
	struct objects_update u = {.actor = "test", .now_ms = 1796000000000LL};
	ASSERT_OK(objects_update_node(w->h->store, node, mutate_hold, &a, &u, NULL, NULL, 0));
	harness_pump(w->h);
}

static int pass(struct world *w, struct slurm_sync_stats *st)
{
	int rc = slurm_sync_run_once(w->sync, clock_wall_ms(w->h->clock), st);
	harness_pump(w->h);
	return rc;
}

static void assert_cond(struct world *w, const char *node, enum cond_status status,
			const char *reason)
{
	struct node *n = harness_node(w->h, node);
	const struct node_condition *c = node_condition_get(n, SLURM_SYNC_CONDITION);
	if (!c)
		fail_msg("%s: no %s condition", node, SLURM_SYNC_CONDITION);
	ASSERT_EQ_STR(cond_status_name(c->status), cond_status_name(status));
	ASSERT_EQ_STR(c->reason, reason);
	node_free(n);
}

static void assert_hold(struct world *w, const char *node, const char *owner, const char *reason)
{
	struct node *n = harness_node(w->h, node);
	const struct node_hold *hd = node_hold_find(n, owner);
	if (reason) {
		if (!hd)
			fail_msg("%s: no hold of %s", node, owner);
		ASSERT_EQ_STR(hd->reason, reason);
	} else if (hd) {
		fail_msg("%s: unexpected hold of %s (%s)", node, owner, hd->reason);
	}
	node_free(n);
}

/* status.workload of node: state ("none" when absent) and its job ids joined by ','. */
static void assert_workload(struct world *w, const char *node, const char *state, const char *jobs)
{
	struct node *n = harness_node(w->h, node);
	ASSERT_EQ_STR(workload_state_name(n->workload.state), state);
	char got[256] = "";
	size_t len = 0;
	for (size_t i = 0; i < n->workload.njobs; i++)
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", i ? "," : "",
					n->workload.jobs[i]);
	ASSERT_EQ_STR(got, jobs);
	if (n->workload.state != WORKLOAD_NONE)
		ASSERT_EQ_STR(n->workload.scheduler, "slurm");
	node_free(n);
}

/* ---------------------------------------------------------------- tests */

static void test_drain_batched_then_resume(void **state)
{
	(void)state;
	struct world *w = world_new(3);
	struct slurm_sync_stats st;
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.nlog, 0); /* all schedulable, all IDLE: nothing to say */
	ASSERT_EQ_INT(st.writes, 3);     /* SchedulerInSync True appears once on each */
	assert_cond(w, "n1", COND_TRUE, "InSync");

	set_hold(w, "n1", "health", "xid 79", 0);
	set_hold(w, "n2", "health", "xid 79", 0);
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.nlog, 1);
	ASSERT_EQ_STR(w->slurm.log[0], "DRAIN n1,n2 fleetplane: health: xid 79");
	ASSERT_EQ_INT(st.drained, 2);
	ASSERT_EQ_INT(st.update_calls, 1);
	ASSERT_EQ_INT(st.writes, 0); /* the condition stayed True: no write */

	/* Slurm shows our drains now: a pass sends nothing more, and records them drained */
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.nlog, 1);
	ASSERT_EQ_INT(st.writes, 2);
	assert_workload(w, "n1", "drained", "");
	assert_workload(w, "n2", "drained", "");
	assert_workload(w, "n3", "idle", "");
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.writes, 0);
	ASSERT_EQ_INT(w->slurm.job_lists, 0); /* no node had a job: squeue was never run */

	/* a different reason is a separate call */
	set_hold(w, "n3", "operator:alice", "cable swap", 0);
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.nlog, 2);
	ASSERT_EQ_STR(w->slurm.log[1], "DRAIN n3 fleetplane: operator:alice: cable swap");

	set_hold(w, "n1", "health", NULL, 1);
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.nlog, 3);
	ASSERT_EQ_STR(w->slurm.log[2], "RESUME n1");
	ASSERT_EQ_INT(st.resumed, 1);
	ASSERT_EQ_INT(fake_find(&w->slurm, "n1")->drain, 0);
	ASSERT_EQ_INT(fake_find(&w->slurm, "n2")->drain, 1);
	/* resumed: no longer drained at once, though the listing of that pass still said so */
	assert_workload(w, "n1", "idle", "");
	world_free(w);
}

static void test_foreign_drain_imported_never_resumed(void **state)
{
	(void)state;
	struct world *w = world_new(2);
	struct slurm_sync_stats st;
	fake_drain(&w->slurm, "n2", "alice", "bad dimm");
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.imported, 1);
	ASSERT_EQ_INT(w->slurm.nlog, 0);
	assert_hold(w, "n2", "slurm:alice", "bad dimm");
	assert_cond(w, "n2", COND_TRUE, "InSync");
	struct node *n = harness_node(w->h, "n2");
	ASSERT_EQ_INT(node_schedulable(n), 0);
	ASSERT_EQ_INT(node_hold_find(n, "slurm:alice")->since, 1796000400000LL);
	node_free(n);

	/* imported once: the next pass writes nothing */
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.writes, 0);

	/* our own hold comes and goes: Slurm's foreign drain is neither overwritten nor resumed */
	set_hold(w, "n2", "health", "xid 48", 0);
	ASSERT_OK(pass(w, &st));
	set_hold(w, "n2", "health", NULL, 1);
	ASSERT_OK(pass(w, &st));
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.nlog, 0);
	ASSERT_EQ_STR(fake_find(&w->slurm, "n2")->reason, "bad dimm");
	assert_hold(w, "n2", "slurm:alice", "bad dimm");

	/* the operator resumes it in Slurm: the hold's owner ended it, fleetplane drops it */
	fake_resume(&w->slurm, "n2");
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.released, 1);
	assert_hold(w, "n2", "slurm:alice", NULL);
	n = harness_node(w->h, "n2");
	ASSERT_EQ_INT(node_schedulable(n), 1);
	node_free(n);
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.nlog, 0);
	ASSERT_EQ_INT(st.writes, 0);
	world_free(w);
}

/* Snapshot of what a failed list must not change. */
struct snap {
	size_t nholds[4];
	enum node_phase phase[4];
};

static void take_snap(struct world *w, size_t n, struct snap *s)
{
	for (size_t i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "n%zu", i + 1);
		struct node *nd = harness_node(w->h, name);
		s->nholds[i] = nd->nholds;
		s->phase[i] = nd->phase;
		node_free(nd);
	}
}

static void test_unreachable_changes_only_the_condition(void **state)
{
	(void)state;
	struct world *w = world_new(3);
	struct slurm_sync_stats st;
	ASSERT_OK(pass(w, &st));
	set_hold(w, "n1", "health", "xid 79", 0);
	fake_drain(&w->slurm, "n3", "bob", "fan");
	struct snap before, after;
	take_snap(w, 3, &before);

	w->slurm.fail_lists = 2;
	ASSERT_EQ_ERR(pass(w, &st), FP_EIO);
	ASSERT_EQ_INT(st.list_rc, FP_EIO);
	ASSERT_EQ_INT(st.writes, 3);
	ASSERT_EQ_INT(w->slurm.nlog, 0);
	for (int i = 1; i <= 3; i++) {
		char name[32];
		snprintf(name, sizeof(name), "n%d", i);
		assert_cond(w, name, COND_FALSE, "SlurmUnreachable");
	}
	take_snap(w, 3, &after);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ_INT(after.nholds[i], before.nholds[i]);
		ASSERT_EQ_PHASE(after.phase[i], before.phase[i]);
	}
	assert_hold(w, "n3", "slurm:bob", NULL);

	/* still down: the condition is already False, nothing is written */
	ASSERT_EQ_ERR(pass(w, &st), FP_EIO);
	ASSERT_EQ_INT(st.writes, 0);

	/* recovered: True again, and the work that waited is done */
	ASSERT_OK(pass(w, &st));
	assert_cond(w, "n1", COND_TRUE, "InSync");
	assert_cond(w, "n3", COND_TRUE, "InSync");
	ASSERT_EQ_INT(w->slurm.nlog, 1);
	ASSERT_EQ_STR(w->slurm.log[0], "DRAIN n1 fleetplane: health: xid 79");
	assert_hold(w, "n3", "slurm:bob", "fan");
	world_free(w);
}

static void test_garbage_changes_only_the_condition(void **state)
{
	(void)state;
	struct world *w = world_new(2);
	struct slurm_sync_stats st;
	set_hold(w, "n1", "health", "xid 79", 0);
	w->slurm.garbage = 1;
	ASSERT_EQ_ERR(pass(w, &st), FP_EPARSE);
	assert_cond(w, "n1", COND_FALSE, "SlurmOutputInvalid");
	assert_cond(w, "n2", COND_FALSE, "SlurmOutputInvalid");
	ASSERT_EQ_INT(w->slurm.nlog, 0);
	assert_hold(w, "n1", "health", "xid 79");
	w->slurm.garbage = 0;
	ASSERT_OK(pass(w, &st));
	assert_cond(w, "n2", COND_TRUE, "InSync");
	ASSERT_EQ_INT(w->slurm.nlog, 1);
	world_free(w);
}

static void test_unknown_state_and_absent(void **state)
{
	(void)state;
	struct world *w = world_new(2);
	harness_put_node(w->h, "n9", "s1", "r1", "sim", PHASE_AVAILABLE); /* not in Slurm */
	harness_pump(w->h);
	snprintf(fake_find(&w->slurm, "n2")->base, 16, "FROBNICATED");
	set_hold(w, "n2", "health", "xid 79", 0);
	struct slurm_sync_stats st;
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.unsure, 1);
	ASSERT_EQ_INT(st.absent, 1);
	ASSERT_EQ_INT(w->slurm.nlog, 0); /* n2 held, but Slurm's state is not understood */
	assert_cond(w, "n2", COND_FALSE, "SlurmStateUnknown");
	assert_cond(w, "n9", COND_FALSE, "NodeNotInSlurm");
	assert_cond(w, "n1", COND_TRUE, "InSync");
	world_free(w);
}

/* status.workload follows Slurm's state and squeue's jobs: busy, then draining once the drain
 * shows, drained when the last job is gone; a failed squeue keeps the ids it had. */
static void test_workload_follows_jobs(void **state)
{
	(void)state;
	struct world *w = world_new(2);
	struct fake_node *n1 = fake_find(&w->slurm, "n1");
	snprintf(n1->base, sizeof(n1->base), "MIXED");
	snprintf(n1->jobs, sizeof(n1->jobs), "12,7,1003");
	struct slurm_sync_stats st;
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.job_lists, 1);
	assert_workload(w, "n1", "busy", "7,12,1003"); /* numeric order */
	assert_workload(w, "n2", "idle", "");

	set_hold(w, "n1", "operator:alice", "dimm swap", 0);
	ASSERT_OK(pass(w, &st)); /* the drain is sent; this listing predates it */
	ASSERT_EQ_STR(w->slurm.log[0], "DRAIN n1 fleetplane: operator:alice: dimm swap");
	assert_workload(w, "n1", "busy", "7,12,1003");
	ASSERT_OK(pass(w, &st));
	assert_workload(w, "n1", "draining", "7,12,1003");

	snprintf(n1->jobs, sizeof(n1->jobs), "1003");
	ASSERT_OK(pass(w, &st));
	assert_workload(w, "n1", "draining", "1003");
	struct node *n = harness_node(w->h, "n1");
	ASSERT_EQ_INT(n->workload.jobs_total, 1);
	node_free(n);

	/* squeue times out: the state still comes from scontrol, the ids stay as they were */
	snprintf(n1->jobs, sizeof(n1->jobs), "1004");
	w->slurm.fail_jobs = 1;
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.writes, 0);
	assert_workload(w, "n1", "draining", "1003");

	/* the last job ends */
	snprintf(n1->base, sizeof(n1->base), "IDLE");
	n1->jobs[0] = '\0';
	size_t lists = w->slurm.job_lists;
	ASSERT_OK(pass(w, &st));
	assert_workload(w, "n1", "drained", "");
	ASSERT_EQ_INT(w->slurm.job_lists, lists); /* nothing holds a job: squeue not run */
	world_free(w);
}

/* More jobs than status.workload keeps: the smallest NODE_MAX_JOBS ids and the total. */
static void test_workload_job_bound(void **state)
{
	(void)state;
	struct world *w = world_new(1);
	struct fake_node *n1 = fake_find(&w->slurm, "n1");
	snprintf(n1->base, sizeof(n1->base), "ALLOCATED");
	size_t len = 0;
	for (int i = 40; i >= 21; i--)
		len += (size_t)snprintf(n1->jobs + len, sizeof(n1->jobs) - len, "%s%d",
					len ? "," : "", i);
	struct slurm_sync_stats st;
	ASSERT_OK(pass(w, &st));
	assert_workload(w, "n1", "busy", "21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36");
	struct node *n = harness_node(w->h, "n1");
	ASSERT_EQ_INT(n->workload.jobs_total, 20);
	char text[200];
	ASSERT_EQ_STR(node_workload_jobs_text(&n->workload, text, sizeof(text)),
		      "21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36 and 4 more");
	node_free(n);
	world_free(w);
}

static const char *workload_cond_reason(struct world *w, const char *node, char *msg, size_t msglen)
{
	static char reason[64];
	struct node *n = harness_node(w->h, node);
	const struct node_condition *c = node_condition_get(n, "WorkloadDrained");
	snprintf(reason, sizeof(reason), "%s", c ? c->reason : "(none)");
	snprintf(msg, msglen, "%s", c && c->message ? c->message : "");
	node_free(n);
	return reason;
}

static long long sim_counter(struct world *w, const char *node, const char *name)
{
	json_t *s = bmc_sim_state(w->h->sim, node);
	long long v = json_integer_value(json_object_get(json_object_get(s, "counters"), name));
	json_decref(s);
	return v;
}

/* With a scheduler in the fleet the drain operation waits for the jobs: the node stays draining
 * (naming the jobs) and its machine untouched while a job runs, however long; once Slurm shows
 * it drained the drain ends and the operator's node goes to maintenance. */
static void test_drain_waits_for_jobs(void **state)
{
	(void)state;
	struct world *w = world_new_parts(1, FLEET_CACHE | FLEET_LIFECYCLE);
	struct fake_node *n1 = fake_find(&w->slurm, "n1");
	snprintf(n1->base, sizeof(n1->base), "MIXED");
	snprintf(n1->jobs, sizeof(n1->jobs), "4242");
	harness_idle(w->h, 10); /* the first pass: busy */
	assert_workload(w, "n1", "busy", "4242");
	long long off0 = sim_counter(w, "n1", "powerOff"),
		  cyc0 = sim_counter(w, "n1", "powerCycle");

	set_hold(w, "n1", "operator:alice", "dimm swap", 0);
	harness_idle(w->h, 5000); /* drain sent after 1 s, confirmed 1 s later */
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_DRAINING), 1);
	assert_workload(w, "n1", "draining", "4242");
	char msg[400];
	ASSERT_EQ_STR(workload_cond_reason(w, "n1", msg, sizeof(msg)), "JobsRunning");
	ASSERT_EQ_STR(msg, "slurm jobs 4242 (state draining)");

	harness_idle(w->h, 3 * 3600 * 1000LL); /* a long job: three hours later, still waiting */
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_DRAINING), 1);
	ASSERT_EQ_INT(sim_counter(w, "n1", "powerOff"), off0);
	ASSERT_EQ_INT(sim_counter(w, "n1", "powerCycle"), cyc0);

	snprintf(n1->base, sizeof(n1->base), "IDLE");
	n1->jobs[0] = '\0';
	harness_idle(w->h, 31000); /* the next full pass sees it drained */
	assert_workload(w, "n1", "drained", "");
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_MAINTENANCE), 1);
	ASSERT_EQ_STR(workload_cond_reason(w, "n1", msg, sizeof(msg)), "Drained");
	world_free(w);
}

/* A Slurm that cannot be read is never "drained": the drain waits, past its 4 h deadline it
 * fails, and the node stays draining (no power action follows a failed drain). */
static void test_drain_never_done_on_lookup_failure(void **state)
{
	(void)state;
	struct world *w = world_new_parts(1, FLEET_CACHE | FLEET_LIFECYCLE);
	harness_idle(w->h, 10);
	assert_workload(w, "n1", "idle", "");
	w->slurm.fail_lists = 1 << 30;
	set_hold(w, "n1", "operator:alice", "dimm swap", 0);
	harness_idle(w->h, 60000);
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_DRAINING), 1);
	assert_workload(w, "n1", "idle", ""); /* unchanged: nothing was learnt */
	char msg[400];
	ASSERT_EQ_STR(workload_cond_reason(w, "n1", msg, sizeof(msg)), "DrainPending");
	assert_cond(w, "n1", COND_FALSE, "SlurmUnreachable");
	harness_idle(w->h, 4 * 3600 * 1000LL + 60000);
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_DRAINING), 1);
	ASSERT_EQ_INT(w->slurm.nlog, 0);
	world_free(w);
}

struct power_arg {
	const char *action;
	int force;
	uint64_t rnd;
};

static int mutate_power(struct node *n, struct objects_txn *tx, void *arg)
{
	const struct power_arg *a = arg;
	json_t *params = json_pack("{s:s}", "action", a->action);
	if (a->force)
		json_object_set_new(params, "force", json_true());
	struct objects_op_spec spec = {.node = n->name,
				       .kind = "power",
				       .params = params,
				       .actor = "operator:alice",
				       .reason = "test",
				       .now_ms = 1796000000000LL,
				       .rnd = a->rnd};
	struct operation *op = NULL;
	ASSERT_OK(objects_op_start(&spec, tx, &op, NULL, 0));
	json_decref(params);
	free(n->operation);
	n->operation = xstrdup(op->id);
	operation_free(op);
	return 1;
}

/* An operator's `fleetplane node power N <action> [--force]` as the API writes it. */
static void request_power(struct world *w, const char *node, const char *action, int force)
{
	static uint64_t rnd = 1;
	struct power_arg a = {action, force, rnd++};
	struct objects_update u = {.actor = "test", .now_ms = 1796000000000LL};
	ASSERT_OK(objects_update_node(w->h->store, node, mutate_power, &a, &u, NULL, NULL, 0));
	harness_pump(w->h);
}

/* A power cycle does not run while Slurm has a job on the node (it waits, naming the job) and
 * runs once the job is gone; a forced one runs at once, and says so. */
static void test_power_waits_for_jobs_unless_forced(void **state)
{
	(void)state;
	struct world *w = world_new_parts(1, FLEET_CACHE | FLEET_LIFECYCLE);
	struct fake_node *n1 = fake_find(&w->slurm, "n1");
	snprintf(n1->base, sizeof(n1->base), "MIXED");
	snprintf(n1->jobs, sizeof(n1->jobs), "77");
	harness_idle(w->h, 10);
	assert_workload(w, "n1", "busy", "77");
	long long cyc0 = sim_counter(w, "n1", "powerCycle");

	request_power(w, "n1", "cycle", 0);
	harness_idle(w->h, 60000);
	ASSERT_EQ_INT(sim_counter(w, "n1", "powerCycle"), cyc0);
	char msg[400];
	ASSERT_EQ_STR(workload_cond_reason(w, "n1", msg, sizeof(msg)), "JobsRunning");
	ASSERT_EQ_STR(msg, "power_cycle waits: slurm jobs 77 (state busy) run; the operation may "
			   "say force");

	snprintf(n1->base, sizeof(n1->base), "IDLE");
	n1->jobs[0] = '\0';
	harness_idle(w->h, 31000);
	assert_workload(w, "n1", "idle", "");
	ASSERT_EQ_INT(sim_counter(w, "n1", "powerCycle"), cyc0 + 1);

	snprintf(n1->base, sizeof(n1->base), "ALLOCATED");
	snprintf(n1->jobs, sizeof(n1->jobs), "78");
	harness_idle(w->h, 31000);
	assert_workload(w, "n1", "busy", "78");
	request_power(w, "n1", "cycle", 1);
	harness_idle(w->h, 1000);
	ASSERT_EQ_INT(sim_counter(w, "n1", "powerCycle"), cyc0 + 2);
	ASSERT_EQ_STR(workload_cond_reason(w, "n1", msg, sizeof(msg)), "Forced");
	assert_non_null(strstr(msg, "power_cycle of operation power-"));
	assert_non_null(
		strstr(msg, " forced by operator:alice while slurm jobs 78 (state busy) run"));
	world_free(w);
}

static const struct node_hold *find_hold(const struct node *n, const char *owner)
{
	return node_hold_find(n, owner);
}

/* A job COMPLETING 13 min after its end: one slurm:completing_stuck event attributed to the
 * job, which the default policy turns into a health hold (reported once, not every pass); the
 * node then drains, and waits, since the stuck job still holds it. */
static void test_stuck_completing_job(void **state)
{
	(void)state;
	struct world *w = world_new_parts(1, FLEET_CACHE | FLEET_LIFECYCLE | FLEET_HEALTH);
	struct fake_node *n1 = fake_find(&w->slurm, "n1");
	snprintf(n1->base, sizeof(n1->base), "IDLE+COMPLETING");
	snprintf(n1->jobs, sizeof(n1->jobs), "55");
	snprintf(n1->job_state, sizeof(n1->job_state), "COMPLETING");
	snprintf(n1->job_end, sizeof(n1->job_end), "2026-11-30T00:40:00"); /* 13m20s ago */
	harness_idle(w->h, 10);
	struct slurm_sync_stats st;
	slurm_sync_last_stats(w->sync, &st);
	ASSERT_EQ_INT(st.stuck_reported, 1);
	assert_workload(w, "n1", "busy", "55");
	struct node *n = harness_node(w->h, "n1");
	const struct node_hold *hd = find_hold(n, "health");
	if (!hd)
		fail_msg("no health hold after a stuck job");
	assert_non_null(strstr(hd->reason, "slurm:completing_stuck"));
	node_free(n);
	/* the event names the job */
	struct store_kv *kvs = NULL;
	size_t nkv = 0;
	ASSERT_OK(store_list(w->h->store, "/healthevents/n1/", NULL, 0, &kvs, &nkv, NULL, NULL));
	ASSERT_EQ_INT(nkv, 1);
	json_t *ev = json_loads(kvs[0].value, 0, NULL);
	ASSERT_EQ_STR(json_string_value(json_object_get(ev, "code")), "slurm:completing_stuck");
	ASSERT_EQ_STR(json_string_value(json_object_get(ev, "job")), "55");
	ASSERT_EQ_STR(json_string_value(json_object_get(ev, "source")), "slurm");
	ASSERT_EQ_STR(json_string_value(json_object_get(ev, "id")), "slurm-cg-55");
	assert_non_null(strstr(json_string_value(json_object_get(ev, "message")),
			       "job 55 (user alice, partition gpu) COMPLETING for 800 s"));
	json_decref(ev);
	store_kv_array_free(kvs, nkv);

	harness_idle(w->h, 31000); /* the next full pass: nothing new to report */
	slurm_sync_last_stats(w->sync, &st);
	ASSERT_EQ_INT(st.stuck_reported, 0);
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_DRAINING), 1);
	world_free(w);
}

/* A node Slurm drained with "Kill task failed": the drain is imported as Slurm's hold (never
 * resumed by fleetplane) and reported as slurm:kill_task_failed for the node's job. */
static void test_kill_task_failed(void **state)
{
	(void)state;
	struct world *w = world_new_parts(1, FLEET_CACHE | FLEET_LIFECYCLE | FLEET_HEALTH);
	struct fake_node *n1 = fake_find(&w->slurm, "n1");
	snprintf(n1->base, sizeof(n1->base), "MIXED");
	snprintf(n1->jobs, sizeof(n1->jobs), "91");
	fake_drain(&w->slurm, "n1", "slurm", "Kill task failed");
	harness_idle(w->h, 10);
	struct slurm_sync_stats st;
	slurm_sync_last_stats(w->sync, &st);
	ASSERT_EQ_INT(st.stuck_reported, 1);
	assert_hold(w, "n1", "slurm:slurm", "Kill task failed");
	struct node *n = harness_node(w->h, "n1");
	const struct node_hold *hd = find_hold(n, "health");
	if (!hd)
		fail_msg("no health hold after Kill task failed");
	assert_non_null(strstr(hd->reason, "slurm:kill_task_failed"));
	node_free(n);
	struct store_kv *kvs = NULL;
	size_t nkv = 0;
	ASSERT_OK(store_list(w->h->store, "/healthevents/n1/", NULL, 0, &kvs, &nkv, NULL, NULL));
	ASSERT_EQ_INT(nkv, 1);
	json_t *ev = json_loads(kvs[0].value, 0, NULL);
	ASSERT_EQ_STR(json_string_value(json_object_get(ev, "id")),
		      "slurm-ktf-2026-11-30T01.00.00");
	ASSERT_EQ_STR(json_string_value(json_object_get(ev, "job")), "91");
	json_decref(ev);
	store_kv_array_free(kvs, nkv);
	ASSERT_EQ_INT(w->slurm.nlog, 0); /* Slurm's own drain is left alone */
	world_free(w);
}

struct serve_arg {
	int64_t served_at;
	enum node_phase phase;
	const char *pool;
};

static int mutate_served(struct node *n, struct objects_txn *tx, void *arg)
{
	(void)tx;
	const struct serve_arg *a = arg;
	n->served_at = a->served_at;
	n->phase = a->phase;
	if (a->pool) {
		free(n->pool);
		n->pool = xstrdup(a->pool);
	}
	return 1;
}

static void set_served(struct world *w, const char *node, int64_t at, enum node_phase phase,
		       const char *pool)
{
	struct serve_arg a = {at, phase, pool};
	struct objects_update u = {.actor = "test", .now_ms = 1796000000000LL};
	ASSERT_OK(objects_update_node(w->h->store, node, mutate_served, &a, &u, NULL, NULL, 0));
	harness_pump(w->h);
}

static char *slurp_file(const char *path)
{
	struct buf b;
	buf_init(&b, 1u << 20);
	if (buf_read_file(&b, path, 0, NULL, 0) < 0)
		buf_reset(&b);
	buf_puts(&b, "");
	return buf_detach(&b, NULL);
}

/* The generated configuration: a node is written once it passed validation (servedAt), a
 * retired one is removed; the files change only when their content does, and each change is
 * followed by one reconfigure (a failed one is retried by the next full pass). */
static void test_generated_config(void **state)
{
	(void)state;
	char dir[] = "/tmp/fp-slconf-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *nodes = xasprintf("%s/nodes.conf", dir), *gres = xasprintf("%s/gres.conf", dir);
	next_nodes_conf = nodes;
	next_gres_conf = gres;
	struct world *w = world_new(3);
	next_nodes_conf = next_gres_conf = NULL;
	static const char head[] = "# generated by fleetplane serve --slurm: do not edit\n";
	struct slurm_sync_stats st;
	ASSERT_OK(pass(w, &st));
	char *got = slurp_file(nodes);
	ASSERT_EQ_STR(got, head); /* no node has passed validation yet */
	free(got);
	ASSERT_EQ_INT(w->slurm.reconfigures, 1);

	set_served(w, "n1", 1796000000000LL, PHASE_AVAILABLE, "train");
	set_served(w, "n3", 1796000000000LL, PHASE_IN_SERVICE, "train");
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.config_written, 1);
	ASSERT_EQ_INT(st.reconfigured, 1);
	got = slurp_file(nodes);
	ASSERT_EQ_STR(got, "# generated by fleetplane serve --slurm: do not edit\n"
			   "NodeName=n[1,3] Gres=gpu:8\n"
			   "PartitionName=train Nodes=n[1,3]\n");
	free(got);
	got = slurp_file(gres);
	ASSERT_EQ_STR(got, "# generated by fleetplane serve --slurm: do not edit\n"
			   "NodeName=n1 Name=gpu File=/dev/nvidia[0-7]\n"
			   "NodeName=n3 Name=gpu File=/dev/nvidia[0-7]\n");
	free(got);
	ASSERT_EQ_INT(w->slurm.reconfigures, 2);

	/* nothing changed: nothing written, no reconfigure */
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.config_written, 0);
	ASSERT_EQ_INT(w->slurm.reconfigures, 2);

	/* n3 retired: it leaves; the reconfigure fails once and is retried by the next pass */
	set_served(w, "n3", 1796000000000LL, PHASE_RETIRED, NULL);
	w->slurm.fail_reconfigure = 1;
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.config_written, 1);
	ASSERT_EQ_INT(st.reconfigured, 0);
	got = slurp_file(nodes);
	ASSERT_EQ_STR(got, "# generated by fleetplane serve --slurm: do not edit\n"
			   "NodeName=n1 Gres=gpu:8\n"
			   "PartitionName=train Nodes=n1\n");
	free(got);
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(st.config_written, 0);
	ASSERT_EQ_INT(st.reconfigured, 1);
	ASSERT_EQ_INT(w->slurm.reconfigures, 4);
	world_free(w);
	unlink(nodes);
	unlink(gres);
	rmdir(dir);
	free(nodes);
	free(gres);
}

/* A Slurm that cannot be read makes status.workload untrustworthy: a drain that follows a stale
 * "drained" waits, and a power cycle of a node last seen idle waits too (jobs may have
 * started); both go on once Slurm reads again. */
static void test_stale_workload_not_believed(void **state)
{
	(void)state;
	struct world *w = world_new_parts(1, FLEET_CACHE | FLEET_LIFECYCLE);
	harness_idle(w->h, 10);
	set_hold(w, "n1", "operator:alice", "dimm swap", 0);
	harness_idle(w->h, 5000);
	assert_workload(w, "n1", "drained", "");
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_MAINTENANCE), 1);

	/* Slurm goes away; the operator resumes, then drains again */
	w->slurm.fail_lists = 1 << 30;
	harness_idle(w->h, 31000);
	assert_cond(w, "n1", COND_FALSE, "SlurmUnreachable");
	set_hold(w, "n1", "operator:alice", NULL, 1);
	harness_idle(w->h, 1000);
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_AVAILABLE), 1);
	assert_workload(w, "n1", "drained", ""); /* stale: the RESUME could not be sent */
	set_hold(w, "n1", "operator:alice", "again", 0);
	harness_idle(w->h, 60000);
	ASSERT_EQ_INT(harness_phase_is(w->h, "n1", PHASE_DRAINING), 1);
	char msg[400];
	ASSERT_EQ_STR(workload_cond_reason(w, "n1", msg, sizeof(msg)), "DrainPending");
	ASSERT_EQ_STR(msg, "waiting: Slurm cannot be read now (SchedulerInSync False "
			   "SlurmUnreachable), so whether jobs run on the node is not known");

	/* a power cycle meanwhile waits as well */
	long long cyc0 = sim_counter(w, "n1", "powerCycle");
	set_hold(w, "n1", "operator:alice", NULL, 1);
	harness_idle(w->h, 1000);
	request_power(w, "n1", "cycle", 0);
	harness_idle(w->h, 60000);
	ASSERT_EQ_INT(sim_counter(w, "n1", "powerCycle"), cyc0);
	ASSERT_EQ_STR(workload_cond_reason(w, "n1", msg, sizeof(msg)), "JobsRunning");

	/* Slurm is back (the node idle there, resumed): the cycle runs */
	w->slurm.fail_lists = 0;
	harness_idle(w->h, 31000);
	assert_cond(w, "n1", COND_TRUE, "InSync");
	harness_idle(w->h, 2000);
	ASSERT_EQ_INT(sim_counter(w, "n1", "powerCycle"), cyc0 + 1);
	world_free(w);
}

/* The timers: the first full pass at start, then a node change is projected debounce_ms later
 * without anyone calling run_once. */
static void test_timers_drive_passes(void **state)
{
	(void)state;
	struct world *w = world_new(2);
	harness_idle(w->h, 10);
	ASSERT_EQ_INT(w->slurm.lists, 1);
	assert_cond(w, "n1", COND_TRUE, "InSync");
	set_hold(w, "n2", "rollout", "image v2", 0);
	harness_idle(w->h, 500);
	ASSERT_EQ_INT(w->slurm.nlog, 0); /* debounced */
	harness_idle(w->h, 1000);
	ASSERT_EQ_INT(w->slurm.nlog, 1);
	ASSERT_EQ_STR(w->slurm.log[0], "DRAIN n2 fleetplane: rollout: image v2");
	/* the periodic pass finds nothing more to do */
	harness_idle(w->h, 60000);
	ASSERT_EQ_INT(w->slurm.nlog, 1);
	world_free(w);
}

/* cfg.threaded: the timers only wake the backend's thread, which runs the pass; stop joins it.
 * The fake Slurm is touched by that thread alone until last_stats says the pass is done. */
static void test_threaded_pass(void **state)
{
	(void)state;
	struct fake_slurm *slurm = xcalloc(1, sizeof(*slurm));
	struct harness_config hc = {.parts = FLEET_CACHE};
	struct harness *h = harness_new(&hc);
	harness_put_node(h, "n1", "s1", "r1", "sim", PHASE_AVAILABLE);
	fake_add(slurm, "n1", "IDLE");
	struct slurm_ops ops = {.list_nodes = fake_list, .update = fake_update, .arg = slurm};
	struct slurm_sync_config sc = {.threaded = 1, .rng_seed = 7};
	struct slurm_sync *s = slurm_sync_new(&ops, &sc);
	struct fleet_scheduler fs;
	fleet_slurm_scheduler(s, &fs);
	h->scheduler = &fs;
	harness_up(h);
	harness_pump(h);
	harness_idle(h, 10); /* the start timer fires: the thread is woken */
	struct slurm_sync_stats st = {0};
	for (int i = 0; i < 2000 && st.nodes == 0; i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		slurm_sync_last_stats(s, &st);
	}
	ASSERT_EQ_INT(st.nodes, 1);
	ASSERT_EQ_INT(st.listed, 1);
	harness_free(h); /* the fleet stops the backend: the thread is joined */
	slurm_sync_free(s);
	ASSERT_EQ_INT(slurm->lists, 1);
	free(slurm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_batched_then_resume),
		cmocka_unit_test(test_foreign_drain_imported_never_resumed),
		cmocka_unit_test(test_unreachable_changes_only_the_condition),
		cmocka_unit_test(test_garbage_changes_only_the_condition),
		cmocka_unit_test(test_unknown_state_and_absent),
		cmocka_unit_test(test_workload_follows_jobs),
		cmocka_unit_test(test_workload_job_bound),
		cmocka_unit_test(test_drain_waits_for_jobs),
		cmocka_unit_test(test_drain_never_done_on_lookup_failure),
		cmocka_unit_test(test_power_waits_for_jobs_unless_forced),
		cmocka_unit_test(test_stuck_completing_job),
		cmocka_unit_test(test_kill_task_failed),
		cmocka_unit_test(test_generated_config),
		cmocka_unit_test(test_stale_workload_not_believed),
		cmocka_unit_test(test_timers_drive_passes),
		cmocka_unit_test(test_threaded_pass),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
