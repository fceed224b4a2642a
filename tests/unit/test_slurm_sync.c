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

#include "base/alloc.h"
#include "base/err.h"
#include "core/model.h"
#include "engine/clock.h"
#include "engine/objects.h"
#include "fleet/fleet.h"
#include "fleet/fleet_slurm.h"
#include "sched/slurm_node.h"
#include "sched/slurm_sync.h"
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
};

struct fake_slurm {
	struct fake_node nodes[FAKE_MAX];
	size_t n;
	int fail_lists;          /* list_nodes fails (FP_EIO) while > 0 */
	int garbage;             /* list_nodes answers a record that does not parse */
	size_t lists;            /* list_nodes calls */
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

static struct world *world_new(size_t nnodes)
{
	struct world *w = xcalloc(1, sizeof(*w));
	struct harness_config hc = {.parts = FLEET_CACHE};
	w->h = harness_new(&hc);
	for (size_t i = 0; i < nnodes; i++) {
		char name[32];
		snprintf(name, sizeof(name), "n%zu", i + 1);
		harness_put_node(w->h, name, "s1", "r1", "sim", PHASE_AVAILABLE);
		fake_add(&w->slurm, name, "IDLE");
	}
	struct slurm_ops ops = {.list_nodes = fake_list, .update = fake_update, .arg = &w->slurm};
	struct slurm_sync_config sc = {.interval_ms = 30000, .debounce_ms = 1000, .rng_seed = 7};
	w->sync = slurm_sync_new(&ops, &sc);
	fleet_slurm_scheduler(w->sync, &w->sched);
	w->h->scheduler = &w->sched;
	harness_up(w->h);
	harness_pump(w->h);
	return w;
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

	/* Slurm shows our drains now: a pass says nothing more */
	ASSERT_OK(pass(w, &st));
	ASSERT_EQ_INT(w->slurm.nlog, 1);
	ASSERT_EQ_INT(st.writes, 0);

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
		cmocka_unit_test(test_timers_drive_passes),
		cmocka_unit_test(test_threaded_pass),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
