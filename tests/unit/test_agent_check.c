/* layers: base core agent */
/* test_agent_check.c - `fleetplane agent check` (agent/check.h) against a fake API: real
 * nvidia-smi and ibstat outputs from tests/data (SOURCES.md there) give the exact findings and
 * exit codes of each mode; a fault is reported with the events the health controller takes
 * (stable ids), the hold is read back and the Prolog drains only a node fleetplane holds; an
 * unreachable API passes a healthy Prolog and refuses a faulty one (fail safe). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/check.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"

#define BOOT "b7c0e1a2-5f3d-4c6b-9a8e-0123456789ab"
#define H100 "nvidia-smi/h100-hgx-8gpu-q-535.161.08.txt"
#define P100 "nvidia-smi/tesla-p100-q-x-510.47.03.xml"
#define IB_OK "ibstat/ibstat-h100-all-active.txt"
#define IB_ETH_DOWN "ibstat/ibstat-h100-some-down.txt"

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

static char data_path[8][1024];
static int ndata;

static const char *data(const char *rel)
{
	char *p = data_path[ndata++ % 8];
	snprintf(p, 1024, "%s/tests/data/%s", srcdir(), rel);
	return p;
}

/* The fake API: one node document, the answers it gives, what it was sent. */
struct fake {
	int unreachable;    /* every call: FP_EIO */
	int hold_on_report; /* the report places a health hold */
	int hold_late;      /* > 0: the hold shows only on that many-th GET after the report;
			     * -1: never (decided, not yet written) */
	int dry_run;        /* the hold decision is dry run: nothing is held */
	int gets_since;
	json_t *doc;
	int gets, reports, drains;
	json_t *last_report;
	char drained_reason[256];
};

static json_t *node_doc(int gpus, const char *alive, const char *live)
{
	return json_pack("{s:{s:s},s:{s:{s:i}},s:{s:[],s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]}}",
			 "metadata", "name", "n2", "spec", "gpus", "count", gpus, "status", "holds",
			 "conditions", "type", "AgentAlive", "status", alive, "reason", "Heartbeat",
			 "type", "DetectorsLive", "status", live, "reason",
			 strcmp(live, "True") == 0 ? "AllLive" : "DetectorDown");
}

static void add_hold(json_t *doc, const char *reason)
{
	json_array_append_new(jsonx_path(doc, "status.holds"),
			      json_pack("{s:s,s:s,s:s}", "owner", "health", "reason", reason,
					"since", "2026-12-02T05:00:00.000Z"));
}

static int f_get(void *arg, json_t **doc, char *err, size_t errlen)
{
	struct fake *f = arg;
	f->gets++;
	if (f->unreachable) {
		snprintf(err, errlen, "error: cannot reach fleetplane");
		return FP_EIO;
	}
	if (f->hold_late > 0 && ++f->gets_since == f->hold_late)
		add_hold(f->doc, "critical gpu:count_mismatch: 1 of 1 within 86400 s; hold");
	*doc = json_deep_copy(f->doc);
	return 0;
}

static int f_report(void *arg, const json_t *body, json_t **answer, char *err, size_t errlen)
{
	struct fake *f = arg;
	f->reports++;
	if (f->unreachable)
		return FP_EIO;
	json_decref(f->last_report);
	f->last_report = json_deep_copy(body);
	json_t *ev = json_array_get(json_object_get(body, "events"), 0);
	const char *code = jsonx_str(ev, "code");
	if (f->hold_on_report && !f->hold_late && !f->dry_run)
		add_hold(f->doc, "critical gpu:count_mismatch: 1 of 1 within 86400 s; hold");
	f->gets_since = 0;
	*answer = json_pack("{s:i,s:i,s:[{s:s,s:s,s:b}]}", "accepted", 1, "duplicates", 0,
			    "decisions", "event", jsonx_str(ev, "id"), "action",
			    f->hold_on_report ? "hold" : "count", "dryRun", f->dry_run);
	(void)code;
	return 0;
}

static int f_drain(void *arg, const json_t *doc, char *err, size_t errlen)
{
	struct fake *f = arg;
	f->drains++;
	json_t *h = json_array_get(jsonx_path(doc, "status.holds"), 0);
	snprintf(f->drained_reason, sizeof(f->drained_reason), "fleetplane: health: %s",
		 h ? jsonx_str(h, "reason") : "?");
	return 0;
}

static struct check_transport tp_of(struct fake *f)
{
	struct check_transport tp = {.get_node = f_get,
				     .report = f_report,
				     .drain = f_drain,
				     .arg = f};
	return tp;
}

static struct check_config cfg_of(enum check_mode mode, const char *nvsmi, const char *ib)
{
	struct check_config c = {
		.node = "n2",
		.boot_id = BOOT,
		.nvidia_smi = nvsmi ? data(nvsmi) : NULL,
		.ibstat = ib ? data(ib) : NULL,
		.mode = mode,
		.probe_timeout_ms = CHECK_FAST_PROBE_MS,
		.hold_wait_ms = 200,
	};
	return c;
}

static void release(struct fake *f)
{
	json_decref(f->doc);
	json_decref(f->last_report);
}

/* A healthy H100 node (8 of 8 GPUs, ECC clean, IB ports up) with a live agent passes every mode
 * with no line at all (its power brake notices are not faults) and reports nothing. */
static void test_healthy_passes(void **state)
{
	(void)state;
	for (int m = 0; m < 3; m++) {
		struct fake f = {.doc = node_doc(8, "True", "True")};
		struct check_transport tp = tp_of(&f);
		struct check_config c = cfg_of((enum check_mode)m, H100, IB_OK);
		struct check_result r;
		assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
		assert_int_equal(r.nlines, 0);
		assert_int_equal(r.faults, 0);
		assert_int_equal(r.api, 1);
		assert_int_equal(f.reports, 0);
		assert_int_equal(f.drains, 0);
		release(&f);
	}
}

/* Ethernet ports that are Down and Disabled (administratively off) are not faults (ibstat.h):
 * still a pass. */
static void test_ethernet_down_is_not_a_fault(void **state)
{
	(void)state;
	struct fake f = {.doc = node_doc(8, "True", "True")};
	struct check_transport tp = tp_of(&f);
	struct check_config c = cfg_of(CHECK_MODE_PROLOG, H100, IB_ETH_DOWN);
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
	assert_int_equal(r.nlines, 0);
	release(&f);
}

/* A RoCE port down: the real H100 ibstat file with mlx5_2's Ethernet port (State: Down) edited
 * by hand from Physical state Disabled (administratively off, not a fault) to Polling (enabled,
 * no link). It is roce:port_down, reported and held like an InfiniBand port; with
 * --ethernet-not-fabric (cfg.ethernet_not_fabric) the same file passes, as in the agent. */
static void test_roce_down_unless_not_fabric(void **state)
{
	(void)state;
	struct buf b;
	char err[256];
	buf_init(&b, 1u << 20);
	assert_int_equal(buf_read_file(&b, data(IB_ETH_DOWN), 1u << 20, err, sizeof(err)), 0);
	char *ca = strstr(b.data, "CA 'mlx5_2'");
	assert_non_null(ca);
	char *ps = strstr(ca, "Physical state: Disabled");
	assert_non_null(ps);
	memcpy(ps + strlen("Physical state: "), "Polling ", 8); /* "Disabled" is 8 bytes too */
	char tmp[] = "/tmp/fp-check-roce-XXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	FILE *fo = fdopen(fd, "w");
	fwrite(b.data, 1, b.len, fo);
	fclose(fo);
	buf_release(&b);

	struct fake f = {.doc = node_doc(8, "True", "True"), .hold_on_report = 1};
	struct check_transport tp = tp_of(&f);
	struct check_config c = cfg_of(CHECK_MODE_HEALTHCHECK, H100, NULL);
	c.ibstat = tmp;
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_FAULT);
	assert_int_equal(r.faults, 1);
	assert_string_equal(r.lines[0].code, "roce:port_down");
	json_t *ev = json_array_get(json_object_get(f.last_report, "events"), 0);
	assert_string_equal(jsonx_str(ev, "code"), "roce:port_down");
	release(&f);

	struct fake g = {.doc = node_doc(8, "True", "True"), .hold_on_report = 1};
	tp = tp_of(&g);
	c.ethernet_not_fabric = 1;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
	assert_int_equal(r.nlines, 0);
	assert_int_equal(g.reports, 0);
	unlink(tmp);
	release(&g);
}

/* The P100 output (1 GPU) on a node whose spec says 8: gpu:count_mismatch is reported, the
 * health controller holds, the Prolog drains with fleetplane's reason and exits 1. */
static void test_count_mismatch_prolog_held_and_drained(void **state)
{
	(void)state;
	struct fake f = {.doc = node_doc(8, "True", "True"), .hold_on_report = 1};
	struct check_transport tp = tp_of(&f);
	struct check_config c = cfg_of(CHECK_MODE_PROLOG, P100, NULL);
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_FAULT);
	assert_int_equal(r.faults, 1);
	assert_int_equal(r.held, 1);
	assert_int_equal(r.reported, 1);
	assert_int_equal(r.drained, 1);
	assert_int_equal(f.reports, 1);
	assert_int_equal(f.gets, 2); /* before, and the hold read back */
	assert_int_equal(f.drains, 1);
	assert_string_equal(f.drained_reason,
			    "fleetplane: health: critical gpu:count_mismatch: 1 of 1 within 86400 "
			    "s; hold");
	assert_int_equal(r.nlines, 4);
	assert_int_equal(r.lines[0].level, CHECK_LVL_FAULT);
	assert_string_equal(r.lines[0].code, "gpu:count_mismatch");
	assert_string_equal(r.lines[0].text, "nvidia-smi: 1 GPUs seen by nvidia-smi, 8 expected");
	assert_string_equal(r.lines[1].code, "report");
	assert_string_equal(r.lines[1].text,
			    "1 findings reported to fleetplane: 1 accepted, 0 duplicates, 1 hold "
			    "decisions");
	assert_string_equal(r.lines[2].code, "hold:health");
	assert_string_equal(r.lines[3].code, "drain");

	/* the event as the report route takes it (docs/api.md): no job, no detectors */
	json_t *body = f.last_report;
	assert_null(json_object_get(body, "detectors"));
	assert_int_equal(json_integer_value(jsonx_path(body, "agent.intervalSeconds")), 0);
	assert_string_equal(jsonx_str(body, "agent.bootId"), BOOT);
	json_t *evs = json_object_get(body, "events");
	assert_int_equal(json_array_size(evs), 1);
	json_t *ev = json_array_get(evs, 0);
	assert_string_equal(jsonx_str(ev, "code"), "gpu:count_mismatch");
	assert_string_equal(jsonx_str(ev, "source"), "nvidia-smi");
	assert_null(json_object_get(ev, "job"));
	const char *id = jsonx_str(ev, "id");
	assert_int_equal(strlen(id), AGENT_ID_LEN - 1);
	assert_memory_equal(id, "f-", 2);
	char first[AGENT_ID_LEN];
	snprintf(first, sizeof(first), "%s", id);

	/* A second run of the same boot sends the same id (a duplicate for the server); the
	 * node is held already, so nothing is read back. */
	struct check_result r2;
	assert_int_equal(check_run(&c, &tp, &r2), CHECK_EXIT_FAULT);
	assert_string_equal(jsonx_str(json_array_get(json_object_get(f.last_report, "events"), 0),
				      "id"),
			    first);
	assert_int_equal(r2.lines[0].level, CHECK_LVL_FAULT);
	assert_string_equal(r2.lines[0].code, "hold:health");

	/* After a remediation (a new epoch) the same fault is a new event. */
	json_t *hist = json_pack("[{s:s}]", "at", "2026-12-02T05:10:00.000Z");
	json_object_set_new(json_object_get(f.doc, "status"), "remediationHistory", hist);
	assert_int_equal(check_run(&c, &tp, &r2), CHECK_EXIT_FAULT);
	assert_string_not_equal(jsonx_str(json_array_get(json_object_get(f.last_report, "events"),
							 0),
					  "id"),
				first);
	release(&f);
}

/* The same fault in healthcheck mode: reported and held, but never drained by the check
 * (HealthCheckProgram has no SLURM_CONF; the Slurm sync drains). */
static void test_count_mismatch_healthcheck_no_drain(void **state)
{
	(void)state;
	struct fake f = {.doc = node_doc(8, "True", "True"), .hold_on_report = 1};
	struct check_transport tp = tp_of(&f);
	tp.drain = NULL;
	struct check_config c = cfg_of(CHECK_MODE_HEALTHCHECK, P100, NULL);
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_FAULT);
	assert_int_equal(r.held, 1);
	assert_int_equal(r.drained, 0);
	assert_int_equal(f.drains, 0);
	release(&f);
}

/* The controller writes the hold after the report's answer: the check reads the node until it
 * shows (here on the third read), then drains; a hold decided but never seen within the wait
 * still refuses the job, without a drain (no fleetplane reason to give); a dry-run "hold"
 * holds nothing and passes. */
static void test_hold_written_late(void **state)
{
	(void)state;
	struct fake f = {.doc = node_doc(8, "True", "True"), .hold_on_report = 1, .hold_late = 3};
	struct check_transport tp = tp_of(&f);
	struct check_config c = cfg_of(CHECK_MODE_PROLOG, P100, NULL);
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_FAULT);
	assert_int_equal(r.held, 1);
	assert_int_equal(r.drained, 1);
	assert_int_equal(f.gets, 4); /* before the report, then three */
	release(&f);

	f = (struct fake){.doc = node_doc(8, "True", "True"), .hold_on_report = 1, .hold_late = -1};
	tp = tp_of(&f);
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_FAULT);
	assert_int_equal(r.held, 1);
	assert_int_equal(r.drained, 0);
	assert_int_equal(f.drains, 0);
	assert_true(f.gets >= 2);
	assert_string_equal(r.lines[r.nlines - 1].text,
			    "fleetplane decided to hold the node; the hold was not in the node "
			    "document within 200 ms");
	release(&f);

	f = (struct fake){.doc = node_doc(8, "True", "True"), .hold_on_report = 1, .dry_run = 1};
	tp = tp_of(&f);
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
	assert_int_equal(r.held, 0);
	assert_int_equal(f.gets, 2);
	release(&f);
}

/* A fault the policy does not hold on (count below threshold, dry run): fleetplane decides,
 * the Prolog passes. */
static void test_policy_no_hold_passes(void **state)
{
	(void)state;
	struct fake f = {.doc = node_doc(8, "True", "True")};
	struct check_transport tp = tp_of(&f);
	struct check_config c = cfg_of(CHECK_MODE_PROLOG, P100, NULL);
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
	assert_int_equal(r.faults, 1);
	assert_int_equal(r.held, 0);
	assert_int_equal(f.reports, 1);
	assert_int_equal(f.drains, 0);
	assert_string_equal(r.lines[r.nlines - 1].code, "policy");
	release(&f);
}

/* An ECC fault from the real H100 output with its first GPU's volatile DRAM uncorrectable
 * count set to 2 (hand-made from the real file). */
static void test_ecc_dbe(void **state)
{
	(void)state;
	struct buf b;
	char err[256];
	buf_init(&b, 1u << 24);
	assert_int_equal(buf_read_file(&b, data(H100), 1u << 24, err, sizeof(err)), 0);
	const char *needle = "            DRAM Uncorrectable            : 0";
	char *p = strstr(b.data, needle);
	assert_non_null(p);
	p[strlen(needle) - 1] = '2';
	char tmp[] = "/tmp/fp-check-ecc-XXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	FILE *fo = fdopen(fd, "w");
	fwrite(b.data, 1, b.len, fo);
	fclose(fo);
	buf_release(&b);

	struct fake f = {.doc = node_doc(8, "True", "True"), .hold_on_report = 1};
	struct check_transport tp = tp_of(&f);
	struct check_config c = cfg_of(CHECK_MODE_PROLOG, NULL, NULL);
	c.nvidia_smi = tmp;
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_FAULT);
	assert_int_equal(r.faults, 1);
	assert_string_equal(r.lines[0].code, "ecc:dbe_volatile");
	json_t *ev = json_array_get(json_object_get(f.last_report, "events"), 0);
	assert_string_equal(jsonx_str(ev, "code"), "ecc:dbe_volatile");
	assert_string_equal(jsonx_str(ev, "gpu.pciBusId"), "0000:19:00.0");
	unlink(tmp);
	release(&f);
}

/* fleetplane unreachable: a healthy Prolog passes (an outage must not drain the cluster); the
 * same in healthcheck and manual mode says so with exit 3; a faulty Prolog is refused without
 * a drain of its own (fail safe: Slurm drains it, "Prolog error"). */
static void test_api_unreachable(void **state)
{
	(void)state;
	struct fake f = {.unreachable = 1};
	struct check_transport tp = tp_of(&f);
	struct check_result r;
	struct check_config c = cfg_of(CHECK_MODE_PROLOG, H100, IB_OK);
	c.expected_gpus = 8;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
	assert_int_equal(r.nlines, 1);
	assert_int_equal(r.lines[0].level, CHECK_LVL_WARN);
	assert_string_equal(r.lines[0].code, "api:unreachable");
	c.mode = CHECK_MODE_HEALTHCHECK;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_NO_API);
	c.mode = CHECK_MODE_MANUAL;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_NO_API);

	c = cfg_of(CHECK_MODE_PROLOG, P100, NULL);
	c.expected_gpus = 8;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_FAULT);
	assert_int_equal(r.faults, 1);
	assert_int_equal(r.held, 0);
	assert_int_equal(f.reports, 0);
	assert_int_equal(f.drains, 0);
	assert_string_equal(r.lines[r.nlines - 1].code, "fail-safe");

	/* without an expected count the GPU count cannot be judged: a warning, no fault */
	c.expected_gpus = 0;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
	assert_int_equal(r.faults, 0);
}

/* A node fleetplane already holds fails the check in every mode; the agent's conditions are
 * warnings that keep no job off. */
static void test_held_and_agent_conditions(void **state)
{
	(void)state;
	struct fake f = {.doc = node_doc(8, "False", "False")};
	add_hold(f.doc, "critical xid:79 on GPU 0000:3b:00.0");
	struct check_transport tp = tp_of(&f);
	struct check_config c = cfg_of(CHECK_MODE_HEALTHCHECK, H100, NULL);
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_FAULT);
	assert_int_equal(r.nlines, 3);
	assert_string_equal(r.lines[0].code, "hold:health");
	assert_string_equal(r.lines[0].text,
			    "fleetplane holds the node: critical xid:79 on GPU 0000:3b:00.0");
	assert_string_equal(r.lines[1].code, "agent:not_alive");
	assert_string_equal(r.lines[1].text, "AgentAlive is False (Heartbeat)");
	assert_string_equal(r.lines[2].code, "agent:detectors_down");
	assert_int_equal(f.reports, 0);
	release(&f);

	f = (struct fake){.doc = node_doc(8, "False", "True")};
	tp = tp_of(&f);
	c.mode = CHECK_MODE_PROLOG;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
	assert_int_equal(r.nlines, 1);
	assert_string_equal(r.lines[0].code, "agent:not_alive");
	release(&f);
}

/* A probe that cannot be read is a warning naming it; a bad config is a usage error. */
static void test_probe_failure_and_usage(void **state)
{
	(void)state;
	struct fake f = {.doc = node_doc(8, "True", "True")};
	struct check_transport tp = tp_of(&f);
	struct check_config c = cfg_of(CHECK_MODE_PROLOG, NULL, NULL);
	c.nvidia_smi = "/nonexistent/nvidia-smi.txt";
	struct check_result r;
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_PASS);
	assert_int_equal(r.nlines, 1);
	assert_string_equal(r.lines[0].code, "probe:nvidia-smi");
	c.node = "N2 bad";
	assert_int_equal(check_run(&c, &tp, &r), CHECK_EXIT_USAGE);
	assert_string_equal(r.lines[0].code, "usage");
	release(&f);
	enum check_mode m;
	assert_int_equal(check_mode_parse("healthcheck", &m), 0);
	assert_int_equal(m, CHECK_MODE_HEALTHCHECK);
	assert_int_equal(check_mode_parse("epilog", &m), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_passes),
		cmocka_unit_test(test_ethernet_down_is_not_a_fault),
		cmocka_unit_test(test_roce_down_unless_not_fabric),
		cmocka_unit_test(test_count_mismatch_prolog_held_and_drained),
		cmocka_unit_test(test_count_mismatch_healthcheck_no_drain),
		cmocka_unit_test(test_hold_written_late),
		cmocka_unit_test(test_policy_no_hold_passes),
		cmocka_unit_test(test_ecc_dbe),
		cmocka_unit_test(test_api_unreachable),
		cmocka_unit_test(test_held_and_agent_conditions),
		cmocka_unit_test(test_probe_failure_and_usage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
