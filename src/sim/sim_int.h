/* sim/sim_int.h - private types of the simulation runner (sim.h): the fault schedule
 * (sim_faults.c), the world and its simulated agents and technicians (sim_world.c), the
 * invariant checker over the store's change feed (sim_check.c) and the metrics (sim_report.c). */
#ifndef FP_SIM_SIM_INT_H
#define FP_SIM_SIM_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/hmap.h"
#include "core/budget.h"
#include "core/model.h"
#include "sim/sim.h"

#define SEC 1000LL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

/* What fixes a fault at the simulated hardware: validation passes again only after a rung at
 * least this strong ran (a GPU reset, a disk boot, a PXE boot), or a technician came. */
enum sim_fix {
	FIX_NONE = 0,  /* the node is fine: the job (or nothing) was at fault */
	FIX_SELF,      /* clears by itself after clear_ms */
	FIX_GPU_RESET, /* a GPU reset, or anything stronger */
	FIX_REBOOT,    /* a power cycle / disk boot */
	FIX_REIMAGE,   /* a PXE boot (reprovision) */
	FIX_TECH,      /* a human with a part (RMA) */
};

/* How a cause reaches fleetplane. */
enum sim_signal {
	SIG_NONE = 0, /* nothing a detector sees (SDC, NCCL watchdog): only the job notices */
	SIG_KERNEL,   /* a real kernel log line, parsed by the agent's kernlog parser */
	SIG_IBSTAT,   /* real ibstat output with a port down, parsed by the agent's ibstat parser */
	SIG_SMI,      /* an nvidia-smi finding (thermal slowdown) */
	SIG_OPERATOR, /* host maintenance: an operator's hold, released by them */
};

struct sim_cause {
	const char *name;
	double share; /* of all llama3 interruptions (Llama 3 paper, table 5) */
	enum sim_signal signal;
	const char *line; /* SIG_KERNEL: the line; SIG_IBSTAT: the ibstat text */
	const char *job;  /* event carries this job (software faults), or NULL */
	int repeat;       /* the signal comes again 10 min later (the restarted job hits it) */
	int interrupts;   /* the fleet job dies when it happens on one of its nodes */
	/* fix drawn per fault: p_a of fix_a, else fix_b */
	double p_a;
	enum sim_fix fix_a, fix_b;
};

extern const struct sim_cause sim_causes[];
extern const size_t sim_ncauses;

/* One scheduled fault. */
struct sim_fault {
	int64_t at_ms; /* virtual ms after the fault window began */
	int node;      /* index; -1 for a site-wide event (BMC outage) */
	int cause;     /* index in sim_causes, or one of the SIM_EV_* below */
	enum sim_fix fix;
	int64_t clear_ms; /* FIX_SELF: clears this long after at_ms; outages: duration */
	int group;        /* correlated: the group id, else -1 */
};

#define SIM_EV_LEAF (-1)       /* correlated: a leaf switch down (every node: ib port down) */
#define SIM_EV_NVSWITCH (-2)   /* correlated: an NVSwitch tray fault across a domain (SXid) */
#define SIM_EV_BMC_OUTAGE (-3) /* bmc: the site's BMC network unreachable for clear_ms */
#define SIM_EV_CRASH (-4)      /* crash: fleetplane killed and restarted */

/* The whole schedule, sorted by (at_ms, insertion). */
struct sim_schedule {
	struct sim_fault *f;
	size_t n, cap;
	unsigned char *lemon; /* per node: 1 = lemon (5-10x the base rate) */
};

void sim_schedule_build(const struct sim_config *cfg, struct sim_schedule *s);
void sim_schedule_release(struct sim_schedule *s);

/* Builds the event object the agent would send for cause c on node (id unique per node), at
 * wall time now_ms: parsed from the cause's real line or tool output. NULL for SIG_NONE and
 * SIG_OPERATOR. bus_id: the GPU the kernel line names is kept (a real line's bus id). */
json_t *sim_signal_event(const struct sim_cause *c, const char *id, int64_t now_ms);
/* The correlated signals: a leaf down (ibstat port down) / an NVSwitch SXid. */
json_t *sim_signal_leaf(const char *id, int64_t now_ms);
json_t *sim_signal_sxid(const char *id, int64_t now_ms);

/* ---------------------------------------------------------------- invariant checker */

struct sim_node_track {
	enum node_phase phase;
	int schedulable;
	int health_held, op_held; /* a `health` / `operator:*` hold at the last look */
	size_t hist;
	int64_t hist_at;  /* time of the newest remediationHistory record at the last look */
	int counted;      /* budget_node_unavailable at the last look */
	char *op;         /* status.operation at the last look */
	int64_t since_ms; /* virtual ms of the last phase change */
	int64_t unsched_since;
	int64_t held_at;    /* health hold placed (virtual ms), 0 = none */
	int64_t rung_start; /* remediation entered repairing at (virtual ms) */
	int rung;           /* the rung in progress (RUNG_*), -1 none */
	int served;
	/* operations of the node that may cause each hardware side effect (counted when first
	 * seen): each does it at most once, even across crashes */
	long may_power_on, may_power_off, may_gpu_reset;
};

/* What the checker asks of the world it checks (sim_world.c fills it): the checker calls the
 * world only through these, the world calls the checker's functions. */
struct sim_checker_hooks {
	void *arg;
	struct store *store;
	long nodes;
	int64_t (*now)(void *arg); /* virtual ms since the fault window began */
	long (*steps)(void *arg);
	int (*node_index)(void *arg, const char *name); /* -1 when not a simulated node */
	/* every revision of node i (prev: what the checker saw before) */
	void (*node_seen)(void *arg, int i, const struct sim_node_track *prev,
			  const struct node *n);
	/* 1 when the simulated people released node i's hold of this owner kind ("health",
	 * "operator") in the write being looked at */
	int (*release_expected)(void *arg, int i, const char *owner);
};

struct sim_checker {
	struct sim_checker_hooks h;
	int64_t rev;               /* change feed read up to here */
	struct sim_node_track *tr; /* per node index */
	struct hmap idx;           /* node name -> index + 1 (as uintptr_t) */
	struct hmap ops;           /* running op id -> node name (xstrdup) */
	struct hmap seen_ops;      /* every op id seen (value unused) */
	struct budget *budgets;
	size_t nbudgets;
	/* per budget, per domain value: members and out, by interned value */
	struct hmap *dom_members, *dom_out; /* value -> (intptr_t) count */
	int *out_peak;                      /* per budget: most out of one value at one look */
	long checks;
	long violations;
	char first[2048];
	struct buf trace; /* the last changes seen, a ring of lines */
};

void sim_checker_init(struct sim_checker *c, const struct sim_checker_hooks *h);
void sim_checker_release(struct sim_checker *c);
/* Reads every change since the last look and checks each node revision and operation. */
void sim_checker_step(struct sim_checker *c);
/* Records a violation (first one kept with the trace). */
void sim_violation(struct sim_checker *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- the world */

size_t sim_checker_running_ops(struct sim_checker *c);
/* Side effects at the hardware against the operations that may cause them: node i's machine
 * counters (bmc_sim_state "counters") must not exceed what its operations can do (one each). */
void sim_checker_side_effects(struct sim_checker *c, int i, const char *name, long power_on,
			      long power_cycle, long power_off, long gpu_reset);
int sim_hist_new_success(const struct node *n, int64_t prev_at);

/* ---------------------------------------------------------------- metrics */

struct sim_metrics {
	long nodes;
	int64_t window_ms;
	long holds, false_holds, suppressed;
	double *det_to_hold_ms; /* per hold: signal to hold, ms */
	size_t ndet, capdet;
	/* by rung of the remediation that succeeded; [RUNG__COUNT]: after a technician */
	double mttr_sum_ms[RUNG__COUNT + 1];
	long mttr_n[RUNG__COUNT + 1];
	long remediations_ok, remediations_failed;
	long deadline_exceeded;
	/* schedulable nodes as a step function over the window: (t, count) points */
	struct sim_step *pts;
	size_t npts, cappts;
	int cur_sched;
	struct sim_intr *intr;
	size_t nintr, capintr;
};

struct sim_step {
	int64_t t;
	int n;
};

/* a fault that kills the fleet job when it hits one of the job's nodes */
struct sim_intr {
	int64_t t;
	int node;
	int fp_sched;    /* the node was schedulable under fleetplane then */
	int naive_sched; /* ... under the baseline (filled by sim_naive) */
	double u;        /* uniform [0,1): the node is in the job iff u < job / schedulable */
};

void sim_metrics_sched_point(struct sim_metrics *m, int64_t t, int sched);
void sim_metrics_interruption(struct sim_metrics *m, int64_t t, int node, int sched);
void sim_metrics_release(struct sim_metrics *m);
/* ETTR of a job on job_nodes nodes over a schedulable step function, window [0, window_ms):
 * progress is saved every ckpt_s of useful time; an interruption of the job (or capacity below
 * job_nodes) loses the work since the last checkpoint and costs restart_s before progress
 * resumes. naive: use naive_sched of the interruptions. */
double sim_ettr(const struct sim_step *pts, size_t npts, int64_t window_ms,
		const struct sim_intr *intr, size_t nintr, int naive, long job_nodes, double ckpt_s,
		double restart_s);
/* 99th percentile (nearest rank) of v (sorted in place); 0 for n = 0. */
double sim_p99(double *v, size_t n);
/* The naive baseline on the same schedule: drain on any fault an agent reports (every XID
 * and finding), manual repair after naive_repair_hours, host maintenance as the operator asks,
 * no budgets. Fills *pts (caller frees) and each interruption's naive_sched; returns the
 * number of drains (holds) and *false_holds. */
long sim_naive(const struct sim_config *cfg, const struct sim_schedule *s, struct sim_intr *intr,
	       size_t nintr, struct sim_step **pts, size_t *npts, long *false_holds,
	       long *nodes_out_peak_rack, long *nodes_out_peak_leaf);
/* schedulable count of a step function at time t */
int sim_step_at(const struct sim_step *pts, size_t npts, int64_t t);

#endif
