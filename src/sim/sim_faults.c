/* sim_faults.c - the fault profiles of `fleetplane sim` (sim.h): a seeded schedule of node
 * failures, correlated failures, BMC outages and control-plane crashes, and the real signal an
 * agent sees for each cause - a kernel log line or ibstat output copied from tests/data (sources
 * in tests/data/SOURCES.md), run through the agent's own parsers (agent/kernlog.h,
 * agent/ibstat.h) into the event object the agent reports.
 *
 * llama3: "The Llama 3 Herd of Models" (Meta, 2024), section 3.3.4 and table 5: 419 unexpected
 * interruptions in 54 days on 16,384 H100 GPUs (2,048 nodes), about 3.8 per 1,000 node-days,
 * by root cause: faulty GPU 30.1 %, GPU HBM3 17.2 %, software bug 12.9 %, network switch/cable
 * 8.4 %, host maintenance 7.6 %, GPU SRAM 4.5 %, GPU system processor 4.1 %, NIC 1.7 %, NCCL
 * watchdog 1.7 %, silent data corruption 1.4 %, GPU thermal interface 1.4 %, other host parts
 * (SSD, power supply, server chassis, IO, CPU, DRAM) about 4 %, the rest unknown. What fixes
 * each (reset, reboot, reimage or a technician) is our assumption, written next to the cause. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/finding.h"
#include "agent/ibstat.h"
#include "agent/kernlog.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/timefmt.h"
#include "sim/sim_int.h"

/* tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log line 12 (NVSentinel issue 155) */
static const char LINE_XID79[] = "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus";
/* tests/data/kernel/xid48-dbe-syslog-gpu-operator-1146.log line 1 */
static const char LINE_XID48[] =
	"Dec  2 11:38:47 node001 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, "
	"pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been "
	"detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.";
/* tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log line 22 (gpud PR 46) */
static const char LINE_XID13[] =
	"[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
	"name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction "
	"Parameter";
/* tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log line 52 (gpud PR 1160) */
static const char LINE_XID94[] =
	"NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error";
/* tests/data/kernel/dmesg-xid119-gsp-timeout.log line 3 */
static const char LINE_XID119[] =
	"[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, "
	"name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected "
	"function 103 (GSP_RM_ALLOC) (0x2081 0x4).";
/* tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log line 99 (returnn issue 1500) */
static const char LINE_AER_FATAL[] = "[  +0.000001] pcieport 0000:00:03.0: AER: Multiple "
				     "Uncorrected (Fatal) error received: 0000:00:03.0";
/* tests/data/kernel/sxid-nvswitch-h100-tdx.log line 3 */
static const char LINE_SXID[] = "[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, "
				"Non-fatal, Link 44 Minion Link DLREQ interrupt";
/* tests/data/ibstat/ibstat-h100-some-down.txt lines 69-85 (gpud testdata, the mlx5_2 port that
 * is down), its link layer changed from Ethernet to InfiniBand: a compute-fabric port. */
static const char IBSTAT_DOWN[] = "CA 'mlx5_2'\n"
				  "\tCA type: MT4125\n"
				  "\tNumber of ports: 1\n"
				  "\tFirmware version: 22.38.1002\n"
				  "\tHardware version: 0\n"
				  "\tNode GUID: 0x0000000000000006\n"
				  "\tSystem image GUID: 0x0000000000000002\n"
				  "\tPort 1:\n"
				  "\t\tState: Down\n"
				  "\t\tPhysical state: Disabled\n"
				  "\t\tRate: 40\n"
				  "\t\tBase lid: 0\n"
				  "\t\tLMC: 0\n"
				  "\t\tSM lid: 0\n"
				  "\t\tCapability mask: 0x00010000\n"
				  "\t\tPort GUID: 0x0000000000000007\n"
				  "\t\tLink layer: InfiniBand\n";

/* Shares are the Llama 3 table's; "unknown" takes the rest. The fixes are our model. */
const struct sim_cause sim_causes[] = {
	/* a GPU off the bus: a power cycle brings most back; a dead board is an RMA */
	{"faulty_gpu", 30.1, SIG_KERNEL, LINE_XID79, NULL, 0, 1, 0.75, FIX_REBOOT, FIX_TECH},
	/* HBM3 DBE: the reset applies the row remap; spares exhausted: RMA */
	{"gpu_hbm3", 17.2, SIG_KERNEL, LINE_XID48, NULL, 0, 1, 0.9, FIX_GPU_RESET, FIX_TECH},
	/* the job's own bug: the node is fine */
	{"software", 12.9, SIG_KERNEL, LINE_XID13, "job-1", 0, 1, 1, FIX_NONE, FIX_NONE},
	/* a switch or cable: half the link flaps clear within 5 minutes */
	{"network", 8.4, SIG_IBSTAT, IBSTAT_DOWN, NULL, 0, 1, 0.5, FIX_SELF, FIX_REBOOT},
	{"host_maintenance", 7.6, SIG_OPERATOR, NULL, NULL, 0, 1, 1, FIX_NONE, FIX_NONE},
	/* SRAM: contained errors that recur until the GPU is reset */
	{"gpu_sram", 4.5, SIG_KERNEL, LINE_XID94, NULL, 1, 1, 1, FIX_GPU_RESET, FIX_GPU_RESET},
	{"gpu_gsp", 4.1, SIG_KERNEL, LINE_XID119, NULL, 0, 1, 0.8, FIX_GPU_RESET, FIX_REBOOT},
	{"nic", 1.7, SIG_IBSTAT, IBSTAT_DOWN, NULL, 0, 1, 0, FIX_REBOOT, FIX_TECH},
	{"nccl_watchdog", 1.7, SIG_NONE, NULL, NULL, 0, 1, 1, FIX_NONE, FIX_NONE},
	{"sdc", 1.4, SIG_NONE, NULL, NULL, 0, 1, 1, FIX_NONE, FIX_NONE},
	{"thermal", 1.4, SIG_SMI, NULL, NULL, 0, 1, 1, FIX_NONE, FIX_NONE},
	/* SSD, PSU, chassis, CPU, DRAM: a PCIe fatal error on the host side */
	{"host_other", 4.0, SIG_KERNEL, LINE_AER_FATAL, NULL, 0, 1, 0.5, FIX_REBOOT, FIX_TECH},
	{"unknown", 5.0, SIG_NONE, NULL, NULL, 0, 1, 1, FIX_NONE, FIX_NONE},
};
const size_t sim_ncauses = sizeof(sim_causes) / sizeof(sim_causes[0]);

/* 419 interruptions / (2048 nodes x 54 days) */
#define LLAMA3_PER_NODE_DAY (419.0 / (2048.0 * 54.0))

static const struct {
	const char *name;
	unsigned bit;
} PROFILES[] = {{"llama3", SIM_FAULT_LLAMA3},
		{"bmc", SIM_FAULT_BMC},
		{"crash", SIM_FAULT_CRASH},
		{"correlated", SIM_FAULT_CORRELATED}};

int sim_faults_parse(const char *s, unsigned *out, char *err, size_t errlen)
{
	*out = 0;
	if (!s || !*s)
		return fp_errf(FP_EINVAL, err, errlen, "--faults: empty (use none)");
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", s);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "none") == 0)
			continue;
		if (strcmp(t, "all") == 0) {
			*out |= SIM_FAULT_LLAMA3 | SIM_FAULT_BMC | SIM_FAULT_CRASH |
				SIM_FAULT_CORRELATED;
			continue;
		}
		size_t i;
		for (i = 0; i < sizeof(PROFILES) / sizeof(PROFILES[0]); i++)
			if (strcmp(t, PROFILES[i].name) == 0)
				break;
		if (i == sizeof(PROFILES) / sizeof(PROFILES[0]))
			return fp_errf(FP_EINVAL, err, errlen,
				       "--faults: unknown profile \"%.40s\" (known: llama3, bmc, "
				       "crash, correlated, all, none)",
				       t);
		*out |= PROFILES[i].bit;
	}
	return 0;
}

void sim_faults_format(unsigned mask, char *out, size_t len)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < sizeof(PROFILES) / sizeof(PROFILES[0]); i++)
		if (mask & PROFILES[i].bit)
			o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%s", o ? "," : "",
					      PROFILES[i].name);
	if (!mask)
		snprintf(out, len, "none");
}

static void push(struct sim_schedule *s, const struct sim_fault *f)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->f = xrealloc(s->f, s->cap * sizeof(*s->f));
	}
	s->f[s->n++] = *f;
}

/* exponential inter-arrival in ms for a rate per ms */
static int64_t expo(struct fp_rng *r, double rate_per_ms)
{
	double u = fp_rng_double(r);
	if (u <= 1e-12)
		u = 1e-12;
	return (int64_t)(-log(u) / rate_per_ms);
}

static int pick_cause(struct fp_rng *r)
{
	double total = 0;
	for (size_t i = 0; i < sim_ncauses; i++)
		total += sim_causes[i].share;
	double x = fp_rng_double(r) * total;
	for (size_t i = 0; i < sim_ncauses; i++) {
		if (x < sim_causes[i].share)
			return (int)i;
		x -= sim_causes[i].share;
	}
	return (int)sim_ncauses - 1;
}

static int cmp_fault(const void *a, const void *b)
{
	const struct sim_fault *x = a, *y = b;
	if (x->at_ms != y->at_ms)
		return x->at_ms < y->at_ms ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->cause < y->cause ? -1 : x->cause > y->cause;
}

void sim_schedule_build(const struct sim_config *cfg, struct sim_schedule *s)
{
	memset(s, 0, sizeof(*s));
	int64_t window = (int64_t)(cfg->days * (double)DAY);
	long n = cfg->nodes;
	s->lemon = xcalloc((size_t)n, 1);
	struct fp_rng r;
	fp_rng_init(&r, cfg->seed * 0x9e3779b97f4a7c15ULL + 1);
	if (cfg->faults & SIM_FAULT_LLAMA3) {
		/* 1.5 % lemons at 5-10x the base rate; the base rate is set so the fleet's mean
		 * is Llama 3's */
		double lemon_share = 0.015, lemon_mult = 7.5;
		double base = LLAMA3_PER_NODE_DAY / (1 - lemon_share + lemon_share * lemon_mult);
		for (long i = 0; i < n; i++) {
			double mult = 1;
			if (fp_rng_double(&r) < lemon_share) {
				s->lemon[i] = 1;
				mult = 5 + 5 * fp_rng_double(&r);
			}
			double rate = base * mult / (double)DAY;
			for (int64_t t = expo(&r, rate); t < window; t += expo(&r, rate)) {
				struct sim_fault f = {.at_ms = t, .node = (int)i, .group = -1};
				f.cause = pick_cause(&r);
				const struct sim_cause *c = &sim_causes[f.cause];
				f.fix = fp_rng_double(&r) < c->p_a ? c->fix_a : c->fix_b;
				if (f.fix == FIX_SELF)
					f.clear_ms = 30 * SEC +
						     (int64_t)fp_rng_below(&r, 270) * SEC;
				if (c->signal == SIG_OPERATOR) /* host maintenance: 2-6 h */
					f.clear_ms = 2 * HOUR +
						     (int64_t)fp_rng_below(&r, 4 * 60) * MIN;
				push(s, &f);
			}
		}
	}
	if (cfg->faults & SIM_FAULT_CORRELATED) {
		/* about one leaf switch or NVSwitch domain event per 1,000 nodes per 10 days */
		int rack = cfg->rack_size, per_leaf = rack * cfg->racks_per_leaf;
		double rate = (double)n / 1000.0 / (10.0 * (double)DAY);
		for (int64_t t = expo(&r, rate); t < window; t += expo(&r, rate)) {
			int leaf = fp_rng_double(&r) < 0.5;
			int span = leaf ? per_leaf : rack;
			long groups = (n + span - 1) / span;
			long g = (long)fp_rng_below(&r, (uint64_t)groups);
			struct sim_fault f = {.at_ms = t,
					      .node = (int)(g * span),
					      .cause = leaf ? SIM_EV_LEAF : SIM_EV_NVSWITCH,
					      .fix = leaf ? FIX_TECH : FIX_REBOOT,
					      .clear_ms = 30 * MIN +
							  (int64_t)fp_rng_below(&r, 90) * MIN,
					      .group = (int)g};
			push(s, &f);
		}
	}
	if (cfg->faults & SIM_FAULT_BMC) {
		/* the site's BMC network down for 5-40 min, about once every 5 days */
		double rate = 1.0 / (5.0 * (double)DAY);
		for (int64_t t = expo(&r, rate); t < window; t += expo(&r, rate)) {
			struct sim_fault f = {.at_ms = t,
					      .node = -1,
					      .cause = SIM_EV_BMC_OUTAGE,
					      .clear_ms = 5 * MIN +
							  (int64_t)fp_rng_below(&r, 35) * MIN,
					      .group = -1};
			push(s, &f);
		}
	}
	if (cfg->faults & SIM_FAULT_CRASH) {
		/* fleetplane killed about every 12 hours */
		double rate = 1.0 / (12.0 * (double)HOUR);
		for (int64_t t = expo(&r, rate); t < window; t += expo(&r, rate)) {
			struct sim_fault f = {.at_ms = t,
					      .node = -1,
					      .cause = SIM_EV_CRASH,
					      .group = -1};
			push(s, &f);
		}
	}
	fp_rng_release(&r);
	qsort(s->f, s->n, sizeof(*s->f), cmp_fault);
}

void sim_schedule_release(struct sim_schedule *s)
{
	free(s->f);
	free(s->lemon);
	memset(s, 0, sizeof(*s));
}

/* The event object of the agent contract (docs/api.md "report"): {id, source, code, gpu?,
 * pid?, process?, job?, time, message, raw?}. */
static json_t *event_obj(const char *id, const char *source, const char *code, const char *bus,
			 long pid, const char *process, const char *job, int64_t now_ms,
			 const char *message, const char *raw)
{
	char ts[FP_TIME_LEN];
	fp_time_format(now_ms, ts);
	json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "source", source, "code", code,
			      "time", ts, "message", message);
	if (bus && *bus)
		json_object_set_new(e, "gpu", json_pack("{s:s}", "pciBusId", bus));
	if (pid > 0)
		json_object_set_new(e, "pid", json_integer(pid));
	if (process && *process)
		json_object_set_new(e, "process", json_string(process));
	if (job)
		json_object_set_new(e, "job", json_string(job));
	if (raw)
		json_object_set_new(e, "raw", json_string(raw));
	return e;
}

static json_t *kernel_event(const char *line, const char *job, const char *id, int64_t now_ms)
{
	struct kernlog_event ke;
	if (!kernlog_parse_line(line, strlen(line), now_ms, &ke))
		return NULL;
	return event_obj(id, "kernel", ke.code, ke.pci_bus_id, ke.pid, ke.process, job, now_ms,
			 ke.message, ke.raw);
}

static json_t *ibstat_event(const char *id, int64_t now_ms)
{
	static struct ibstat_report rep;
	struct agent_finding f[4];
	int unknown = 0;
	if (ibstat_parse(IBSTAT_DOWN, sizeof(IBSTAT_DOWN) - 1, &rep, NULL, 0) < 0)
		return NULL;
	if (ibstat_findings(&rep, f, 4, &unknown) < 1)
		return NULL;
	return event_obj(id, "ibstat", f[0].code, NULL, 0, NULL, NULL, now_ms, f[0].message, NULL);
}

json_t *sim_signal_event(const struct sim_cause *c, const char *id, int64_t now_ms)
{
	switch (c->signal) {
	case SIG_KERNEL: return kernel_event(c->line, c->job, id, now_ms);
	case SIG_IBSTAT: return ibstat_event(id, now_ms);
	case SIG_SMI:
		/* nvidia-smi -q "Clocks Event Reasons": HW Slowdown Active (agent/nvsmi.c) */
		return event_obj(id, "nvidia-smi", "thermal:hw_slowdown", "0000:18:00.0", 0, NULL,
				 NULL, now_ms, "HW Slowdown: Active (thermal)", NULL);
	default: return NULL;
	}
}

json_t *sim_signal_leaf(const char *id, int64_t now_ms)
{
	return ibstat_event(id, now_ms);
}

json_t *sim_signal_sxid(const char *id, int64_t now_ms)
{
	return kernel_event(LINE_SXID, NULL, id, now_ms);
}
