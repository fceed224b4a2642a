/* agent/finding.h - one observation a node agent's detector made, before it is sent to the API
 * as a health event (docs: the agent report in docs/api.md, "POST /v1/nodes/{name}:report").
 * Plain fixed-size data, no ownership: parsers fill arrays of these and never allocate per
 * finding. Every string is NUL-terminated and truncated to its buffer (bounded input). */
#ifndef FP_AGENT_FINDING_H
#define FP_AGENT_FINDING_H

#include <stdint.h>

#define FINDING_CODE_LEN 48
#define FINDING_BUS_ID_LEN 24
#define FINDING_MSG_LEN 256

struct agent_finding {
	char source[16]; /* "kernel" | "nvidia-smi" | "nvml" | "dcgm" | "ibstat" | "agent" */
	char code[FINDING_CODE_LEN]; /* "ecc:dbe_volatile", "ib:port_down", ... (design contract) */
	int gpu_index;               /* nvidia-smi/NVML minor or order index; -1 unknown */
	char pci_bus_id
		[FINDING_BUS_ID_LEN];  /* "0000:3b:00.0" (lower case, 4-digit domain); "" unknown */
	char message[FINDING_MSG_LEN]; /* for humans: what was seen, with the value */
	/* A level, not an edge: the same state seen again must map to the same event id. The
	 * agent hashes (boot id, code, pci bus id/port, key) into the event id, so key carries
	 * what makes this occurrence new, e.g. the counter value ("dbe=2") or "" for a state. */
	char key[64];
	/* 1: a notice, not a fault - a state healthy GPUs show too (power:brake_slowdown,
	 * thermal:sw_slowdown, ecc:sbe_volatile; the compiled policy ranks them action "none").
	 * It is still sent as an event (the policy counts it), but it does not make its detector
	 * "unhealthy", and the agent does not send it again when a remediation is recorded: only
	 * a new boot, or the state clearing and coming back, is a new event (break report 4b #6).
	 * Set by the parser that makes the finding. */
	int notice;
};

/* GPU recovery actions: NVML's nvmlDeviceGpuRecoveryAction_t values (NVML API Reference,
 * "Device Enums"; docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-
 * flags.html says what each asks of the operator), as Xid 154 prints them ("GPU recovery action
 * changed from 0x0 (None) to 0x1 (GPU Reset Required)"), nvidia-smi -q prints them ("GPU
 * Recovery Action : Reset") and NVML's field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION returns them. */
enum agent_recovery {
	AGENT_RECOVERY_NONE = 0,
	AGENT_RECOVERY_GPU_RESET = 1,
	AGENT_RECOVERY_NODE_REBOOT = 2,
	AGENT_RECOVERY_DRAIN_P2P = 3,
	AGENT_RECOVERY_DRAIN_AND_RESET = 4,
	AGENT_RECOVERY_RECOVER_IMEX_DOMAIN = 5,
	AGENT_RECOVERY_BUS_RESET = 6,
	AGENT_RECOVERY_SYSTEM_REBOOT = 7
};

/* The health event code of a recovery action the GPU asks for (docs/health.md, "Recovery
 * actions"): gpu:reset_required, gpu:reboot_required (node reboot, PCIe bus reset, system
 * reboot: a reboot covers each), gpu:drain_p2p, gpu:drain_and_reset; NULL for None and for
 * actions that are not this GPU's (Recover IMEX Domain) or not known. */
static inline const char *agent_recovery_code(int action)
{
	switch (action) {
	case AGENT_RECOVERY_GPU_RESET: return "gpu:reset_required";
	case AGENT_RECOVERY_NODE_REBOOT:
	case AGENT_RECOVERY_BUS_RESET:
	case AGENT_RECOVERY_SYSTEM_REBOOT: return "gpu:reboot_required";
	case AGENT_RECOVERY_DRAIN_P2P: return "gpu:drain_p2p";
	case AGENT_RECOVERY_DRAIN_AND_RESET: return "gpu:drain_and_reset";
	default: return NULL;
	}
}

#endif
