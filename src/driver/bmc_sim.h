/* bmc_sim.h - simulated hardware behind a simulated BMC: first-class driver "sim" (CONVENTIONS.md:
 * the simulator driver is not a test hack). Each simulated machine has power, a boot device, a
 * boot counter, 8 GPUs by default, and a deploy agent that calls back once the machine has
 * PXE-booted (like Ironic's IPA heartbeat) and then reports a burn-in validation result.
 *
 * Timing is realistic and scaled: a BMC request takes 0.2-1 s, PXE boot to agent 240-360 s,
 * burn-in 120-180 s, all divided by `speed` (speed 0 = zero latency, for benchmarks). Faults,
 * when fault_seed != 0, are drawn from a seeded rng: BMC timeouts, a wrong power state
 * reported, a lost boot callback — each with probability fault_rate per opportunity.
 *
 * The machine's state survives a crash of the control plane (hardware keeps running): every
 * side effect is saved through the persist callbacks before the call returns, and
 * bmc_sim_resume_node re-arms boots, GPU resets and burn-ins that were in progress.
 * Side-effect counters (power on/off/cycle, boot device sets, GPU resets) are part of the saved
 * state so tests can prove nothing ran twice. */
#ifndef FP_DRIVER_BMC_SIM_H
#define FP_DRIVER_BMC_SIM_H

#include "driver/bmc.h"

extern const struct bmc_driver_ops bmc_sim_ops;

enum bmc_sim_notice {
	BMC_SIM_BOOTED = 1,
	BMC_SIM_VALIDATED,
	BMC_SIM_REMEDIATED
};

/* Called from the clock's timer context when a machine's agent calls back; must not block
 * (hand the work to an executor). boot_id identifies the boot; passed is the burn-in result,
 * or for BMC_SIM_REMEDIATED whether the agent action (a GPU reset) succeeded. The simulated
 * agent runs burn-in after every boot (deploy image after PXE, node agent after a disk boot)
 * and after a GPU reset. */
typedef void (*bmc_sim_notify_fn)(void *arg, const char *node, enum bmc_sim_notice what,
				  const char *boot_id, int passed);
/* Persist one machine's state (a JSON text, borrowed) / load it (*json malloc'd or NULL when
 * absent). Return 0 or a negative FP_* code. */
typedef int (*bmc_sim_save_fn)(void *arg, const char *node, const char *json);
typedef int (*bmc_sim_load_fn)(void *arg, const char *node, char **json);

/* Fault kinds for bmc_sim_config.fault_kinds. */
#define BMC_SIM_FAULT_TIMEOUT (1u << 0)       /* a BMC request never answers */
#define BMC_SIM_FAULT_WRONG_POWER (1u << 1)   /* a power read reports the opposite state */
#define BMC_SIM_FAULT_LOST_CALLBACK (1u << 2) /* the agent's boot callback never arrives */
#define BMC_SIM_FAULT_GPU_RESET (1u << 3)     /* the agent's GPU reset fails */

struct bmc_sim_config {
	struct fp_clock *clock;
	double speed;         /* > 0: times divided by speed; 0: zero latency */
	uint64_t fault_seed;  /* 0: no faults */
	double fault_rate;    /* probability per opportunity when faults are on (default 0.05) */
	unsigned fault_kinds; /* BMC_SIM_FAULT_* mask; 0 = all kinds */
	bmc_sim_notify_fn notify;
	bmc_sim_save_fn save;
	bmc_sim_load_fn load;
	void *arg; /* passed to notify/save/load */
};

/* Creates the sim driver instance. cfg is copied. Returns NULL only on a bad config. */
struct bmc *bmc_sim_new(const struct bmc_sim_config *cfg);
/* Loads a machine's saved state and re-arms a boot, an agent GPU reset or a burn-in that was in
 * progress when the control plane stopped (saved as bootDueAt, resetDueAt, burnInDueAt; a due
 * time already past fires at once). Safe to call for a node with no saved state (no-op). */
int bmc_sim_resume_node(struct bmc *b, const char *node);
/* Returns a new JSON object with the machine's state and side-effect counters
 * {"power","bootDevice","bootId","counters":{"powerOn","powerOff","powerCycle","bootSet",
 * "gpuReset"}}. */
json_t *bmc_sim_state(struct bmc *b, const char *node);

#endif
