/* layers: base core store driver engine sched boot controller api agent sim fleet cmd */
/* test_sim.c - `fleetplane sim` (sim/sim.h) on small worlds: a few seeds with every fault
 * profile run to convergence with no invariant violated; the same seed gives the same report
 * byte for byte and another seed another one; the profiles parse; the fault signals are what
 * the agent's parsers make of the real lines; ETTR and the naive baseline on hand-made inputs.
 * The injected-bug check (a build without the budget check must fail with a seed) is
 * tests/sim/test_sim_bug.sh: it needs another build of controller/budget.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "cmd/run.h"
#include "sim/sim.h"
#include "sim/sim_int.h"
#include "check.h"

static struct sim_config small(uint64_t seed)
{
	struct sim_config c = {.nodes = 64, .days = 4, .seed = seed, .spares = 1};
	sim_faults_parse("all", &c.faults, NULL, 0);
	return c;
}

static char *run_json(const struct sim_config *c, long *violations)
{
	struct sim_result res;
	char err[256] = "";
	ASSERT_OK(sim_run(c, cmd_sim_plane(), &res, err, sizeof(err)));
	json_t *o = sim_report_json(&res);
	char *txt = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	*violations = res.violations;
	if (res.violations)
		print_message("seed %llu: %s\n", (unsigned long long)c->seed, res.violation);
	json_decref(o);
	sim_result_release(&res);
	return txt;
}

/* Three seeds, all profiles: zero violations, faults were injected, the fleet converged (the run
 * ends only once every node is back), and the figures are in range. */
static void test_few_seeds_no_violation(void **state)
{
	long injected = 0;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct sim_config c = small(seed);
		struct sim_result res;
		char err[256] = "";
		ASSERT_OK(sim_run(&c, cmd_sim_plane(), &res, err, sizeof(err)));
		if (res.violations)
			fail_msg("seed %llu: %s", (unsigned long long)seed, res.violation);
		ASSERT_EQ_INT(res.violations, 0);
		injected += res.faults_injected;
		double a = json_number_value(json_object_get(res.fleetplane, "gpu_availability"));
		double e = json_number_value(json_object_get(res.fleetplane, "ettr"));
		assert_true(a > 0.9 && a <= 1.0);
		assert_true(e > 0.5 && e <= 1.0);
		assert_true(json_is_object(json_object_get(res.baseline, "nodes_out_peak")));
		assert_true(res.crashes > 0); /* 4 days, one crash every ~12 h */
		sim_result_release(&res);
	}
	assert_true(injected > 0);
}

/* Same seed: the same bytes; another seed: other bytes. */
static void test_same_seed_same_output(void **state)
{
	struct sim_config c = small(7);
	c.days = 2;
	long v1 = 0, v2 = 0, v3 = 0;
	char *a = run_json(&c, &v1), *b = run_json(&c, &v2);
	ASSERT_EQ_STR(a, b);
	c.seed = 8;
	char *d = run_json(&c, &v3);
	assert_true(strcmp(a, d) != 0);
	ASSERT_EQ_INT(v1 + v2 + v3, 0);
	free(a);
	free(b);
	free(d);
}

static void test_profiles_parse(void **state)
{
	unsigned m = 0;
	char err[256], out[128];
	ASSERT_OK(sim_faults_parse("llama3,crash", &m, err, sizeof(err)));
	ASSERT_EQ_INT(m, SIM_FAULT_LLAMA3 | SIM_FAULT_CRASH);
	sim_faults_format(m, out, sizeof(out));
	ASSERT_EQ_STR(out, "llama3,crash");
	ASSERT_OK(sim_faults_parse("none", &m, err, sizeof(err)));
	ASSERT_EQ_INT(m, 0);
	sim_faults_format(0, out, sizeof(out));
	ASSERT_EQ_STR(out, "none");
	ASSERT_EQ_ERR(sim_faults_parse("llama3,meteor", &m, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "--faults: unknown profile \"meteor\" (known: llama3, bmc, crash, "
			   "correlated, all, none)");
}

/* Every cause with a signal becomes the event the agent's parsers make of the real line. */
static void test_signals_from_real_lines(void **state)
{
	static const char *const want[] = {
		"faulty_gpu", "xid:79",       "gpu_hbm3", "xid:48",
		"software",   "xid:13",       "network",  "ib:port_down",
		"gpu_sram",   "xid:94",       "gpu_gsp",  "xid:119",
		"nic",        "ib:port_down", "thermal",  "thermal:hw_slowdown",
		"host_other", "aer:fatal",
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k += 2) {
		size_t i;
		for (i = 0; i < sim_ncauses; i++)
			if (strcmp(sim_causes[i].name, want[k]) == 0)
				break;
		assert_true(i < sim_ncauses);
		json_t *e = sim_signal_event(&sim_causes[i], "id-1", 1796000000000LL);
		if (!e)
			fail_msg("%s: no event from its signal", want[k]);
		ASSERT_EQ_STR(jsonx_str(e, "code"), want[k + 1]);
		ASSERT_EQ_STR(jsonx_str(e, "time"), "2026-11-30T00:53:20.000Z");
		json_decref(e);
	}
	json_t *e = sim_signal_event(&sim_causes[0], "id-2", 1796000000000LL);
	ASSERT_EQ_STR(jsonx_str(e, "gpu.pciBusId"), "0000:44:00.0");
	ASSERT_EQ_STR(jsonx_str(e, "raw"),
		      "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus");
	json_decref(e);
	e = sim_signal_sxid("id-3", 1796000000000LL);
	ASSERT_EQ_STR(jsonx_str(e, "code"), "sxid:22013");
	json_decref(e);
	double total = 0;
	for (size_t i = 0; i < sim_ncauses; i++)
		total += sim_causes[i].share;
	assert_true(total > 99.9 && total < 100.1); /* the Llama 3 mix plus "unknown" */
}

/* ETTR by hand: a 10,000 s window, 4 nodes schedulable throughout, a job on 4 nodes. No
 * interruption: 1. One at 1,000 s on a job node (u = 0): the 100 s since the checkpoint at
 * 900 s are lost and the restart costs 180 s: (10000 - 280) / 10000. Capacity below the job
 * from 5,000 s to 6,000 s: that hour is idle, and it stops the job too (100 s since the
 * checkpoint at 4,900 s lost... after the first restart checkpoints fall at 1180 + 300k, so
 * at 4,780 s: 220 s lost) plus another restart of 180 s. */
static void test_ettr_by_hand(void **state)
{
	struct sim_step flat[] = {{0, 4}};
	ASSERT_EQ_INT((long)(sim_ettr(flat, 1, 10000000, NULL, 0, 0, 4, 300, 180) * 1e6), 1000000);
	struct sim_intr in = {.t = 1000000, .node = 0, .fp_sched = 1, .naive_sched = 1, .u = 0};
	ASSERT_EQ_INT((long)(sim_ettr(flat, 1, 10000000, &in, 1, 0, 4, 300, 180) * 1e6 + 0.5),
		      972000);
	/* the node was not schedulable (not in the job): nothing lost */
	in.fp_sched = 0;
	ASSERT_EQ_INT((long)(sim_ettr(flat, 1, 10000000, &in, 1, 0, 4, 300, 180) * 1e6 + 0.5),
		      1000000);
	struct sim_step dip[] = {{0, 4}, {5000000, 3}, {6000000, 4}};
	in.fp_sched = 1;
	ASSERT_EQ_INT((long)(sim_ettr(dip, 3, 10000000, &in, 1, 0, 4, 300, 180) * 1e6 + 0.5),
		      (long)((10000.0 - 280 - 1000 - 220 - 180) / 10000.0 * 1e6 + 0.5));
	/* with a spare (job on 3 of 4) the dip does not stop the job */
	ASSERT_EQ_INT((long)(sim_ettr(dip, 3, 10000000, &in, 1, 0, 3, 300, 180) * 1e6 + 0.5),
		      972000);
}

/* The baseline: an XID on node 0 at 1 h takes it out for the repair delay (24 h); a signal-less
 * fault (SDC) takes nothing out; host maintenance as long as the operator says. */
static void test_naive_baseline(void **state)
{
	struct sim_config c = {.nodes = 16,
			       .days = 3,
			       .rack_size = 8,
			       .racks_per_leaf = 4,
			       .naive_repair_hours = 24};
	size_t sdc = 0, xid = 0, maint = 0;
	for (size_t i = 0; i < sim_ncauses; i++) {
		if (strcmp(sim_causes[i].name, "sdc") == 0)
			sdc = i;
		if (strcmp(sim_causes[i].name, "faulty_gpu") == 0)
			xid = i;
		if (strcmp(sim_causes[i].name, "host_maintenance") == 0)
			maint = i;
	}
	struct sim_fault f[] = {
		{.at_ms = HOUR, .node = 0, .cause = (int)xid, .fix = FIX_REBOOT, .group = -1},
		{.at_ms = 2 * HOUR, .node = 1, .cause = (int)sdc, .group = -1},
		{.at_ms = 3 * HOUR,
		 .node = 9,
		 .cause = (int)maint,
		 .clear_ms = 2 * HOUR,
		 .group = -1},
	};
	struct sim_schedule s = {.f = f, .n = 3};
	struct sim_step *pts = NULL;
	size_t np = 0;
	long fh = -1, pr = 0, pl = 0;
	ASSERT_EQ_INT(sim_naive(&c, &s, NULL, 0, &pts, &np, &fh, &pr, &pl), 2);
	ASSERT_EQ_INT(fh, 0);
	ASSERT_EQ_INT(sim_step_at(pts, np, 0), 16);
	ASSERT_EQ_INT(sim_step_at(pts, np, HOUR), 15);
	ASSERT_EQ_INT(sim_step_at(pts, np, 4 * HOUR), 14);
	ASSERT_EQ_INT(sim_step_at(pts, np, 5 * HOUR), 15);
	ASSERT_EQ_INT(sim_step_at(pts, np, 25 * HOUR), 16);
	ASSERT_EQ_INT(pr, 1);
	ASSERT_EQ_INT(pl, 2);
	free(pts);
}

int main(void)
{
	log_init(LOG_LVL_ERROR, NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profiles_parse),
		cmocka_unit_test(test_signals_from_real_lines),
		cmocka_unit_test(test_ettr_by_hand),
		cmocka_unit_test(test_naive_baseline),
		cmocka_unit_test(test_few_seeds_no_violation),
		cmocka_unit_test(test_same_seed_same_output),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
