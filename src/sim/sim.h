/* sim/sim.h - `fleetplane sim` (issue 12, DESIGN.md principle 6): the real controllers - the
 * stepped fleet assembly (fleet/fleet.h: informer cache, budget service, lifecycle and health
 * controllers) over a real store (mem: or SQLite in a temp dir), the sim BMC driver
 * (driver/bmc_sim.c) and simulated node agents - run single-threaded in virtual time under
 * seeded fault profiles, with invariants checked after every unit of work, and fleet outcomes
 * (GPU availability, ETTR, holds, MTTR by rung, nodes out per domain) for the fleetplane policy
 * and a naive baseline on the same fault schedule.
 *
 * Deterministic: the same config (seed included) gives the same report, byte for byte; nothing
 * reads the real clock or the OS's randomness. docs/simulation.md describes the profiles with
 * their sources, the invariants and the outputs. */
#ifndef FP_SIM_SIM_H
#define FP_SIM_SIM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Fault profiles (sim_config.faults), combinable. */
#define SIM_FAULT_LLAMA3 (1u << 0)     /* node failures: Llama 3 rates and cause mix */
#define SIM_FAULT_BMC (1u << 1)        /* BMC timeouts, lies, lost callbacks, site outages */
#define SIM_FAULT_CRASH (1u << 2)      /* fleetplane killed and restarted from its store */
#define SIM_FAULT_CORRELATED (1u << 3) /* a leaf switch / NVLink domain failing together */

/* Parses "llama3,bmc,crash,correlated" (also "all" and "none") into SIM_FAULT_* bits. Returns
 * 0, or FP_EINVAL naming the unknown profile in err. */
int sim_faults_parse(const char *s, unsigned *out, char *err, size_t errlen);
/* Writes the profile names of mask, comma-separated ("none" for 0), into out. */
void sim_faults_format(unsigned mask, char *out, size_t len);

struct sim_config {
	long nodes;         /* 8..100000 */
	double days;        /* fault window after onboarding, (0, 3650] */
	uint64_t seed;      /* 1.. */
	unsigned faults;    /* SIM_FAULT_* */
	int store_sqlite;   /* 0: mem:, 1: SQLite in a temp dir (removed at the end) */
	long spares;        /* ETTR: the job runs on nodes - spares nodes; 0..nodes-1 */
	double ckpt_s;      /* checkpoint interval of the fleet-wide job, seconds (0 = 300) */
	double restart_s;   /* job restart cost after an interruption, seconds (0 = 180) */
	double ettr_target; /* for spares_needed (0 = 0.97) */
	double tech_hours;  /* a technician's turnaround for RMA/failed nodes (0 = 24) */
	double naive_repair_hours; /* baseline: manual repair after this delay (0 = 24) */
	int rack_size;             /* nodes per rack (0 = 8) */
	int racks_per_leaf;        /* racks behind one leaf switch (0 = 4) */
	int budget_rack;           /* disruption budget: maxUnavailable per rack (0 = 2) */
	int budget_leaf;           /* maxUnavailable per leaf (0 = 4) */
	int sample_s;              /* time-series sample step for CSV/plot (0 = 3600) */
	int quiet_tail_days;       /* convergence bound after faults stop (0 = 7) */
};

/* One point of the availability time series (every sample_s). */
struct sim_sample {
	double t_h;     /* hours since the fault window began */
	int sched;      /* fleetplane: schedulable nodes */
	int naive;      /* baseline: schedulable nodes */
	int out_health; /* fleetplane nodes out by cause: health remediation, */
	int out_maint;  /* maintenance (operator holds), */
	int out_failed; /* failed (RMA, exhausted ladder), */
	int out_other;  /* held but not yet drained, onboarding, other */
};

/* What one run found. Owned by the caller: sim_result_release. */
struct sim_result {
	struct sim_config cfg;
	long violations;
	char violation[2048]; /* the first: "step N t=...: what" + a short trace */
	long steps;           /* units of work run */
	long crashes;
	long faults_injected;
	json_t *fleetplane; /* the policy's metrics object (see docs/simulation.md) */
	json_t *baseline;   /* the naive policy's, same shape where it applies */
	json_t *faults;     /* counts by cause */
	struct sim_sample *samples;
	size_t nsamples;
};

/* Runs one simulation. Returns 0 with *res filled (violations counted in it: a violation stops
 * the run early but still returns 0), or a negative FP_* code with err set when the world
 * could not be built. */
struct sim_plane_ops; /* sim/sim_plane.h */
int sim_run(const struct sim_config *cfg, const struct sim_plane_ops *plane, struct sim_result *res,
	    char *err, size_t errlen);
void sim_result_release(struct sim_result *res);

/* The report as one JSON object (new reference): {"seed","nodes","days","faults",
 * "invariant_violations","violation"?, "steps","crashes", the fleetplane metrics at top level,
 * "baseline":{...}, "faults_by_cause":{...}}. */
json_t *sim_report_json(const struct sim_result *res);
/* The same as text for people (ends with a newline; caller frees). */
char *sim_report_text(const struct sim_result *res);
/* Writes DIR/timeseries.csv and DIR/summary.csv (DIR created if absent). 0 or FP_EIO. */
int sim_write_csv(const struct sim_result *res, const char *dir, char *err, size_t errlen);
/* Renders the availability time series to a PNG through gnuplot (exec'd with argv, script on
 * its stdin). 0, FP_ENOTFOUND (no gnuplot) or FP_EIO. */
int sim_plot(const struct sim_result *res, const char *png, char *err, size_t errlen);

#endif
