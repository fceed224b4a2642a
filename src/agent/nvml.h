/* agent/nvml.h - the NVML detector of the node agent: loads libnvidia-ml.so.1 with dlopen when
 * it is present (it ships with the GPU driver, so fleetplane never links it; CONVENTIONS.md
 * "NVML is the exception") and reads per GPU what nvidia-smi -q shows for health - PCI bus id,
 * volatile/aggregate ECC totals, remapped rows (pending, failure), GPU temperature and its
 * slowdown threshold, current clock event ("throttle") reasons - into a struct nvsmi_report, so
 * the findings are nvsmi_findings' (one rule set for both detectors).
 *
 * Symbols and types are declared here from NVIDIA's NVML API Reference
 * (docs.nvidia.com/deploy/nvml-api: nvmlInit_v2, nvmlShutdown, nvmlErrorString,
 * nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPciInfo_v3 with
 * nvmlPciInfo_t, nvmlDeviceGetTotalEccErrors, nvmlDeviceGetRemappedRows,
 * nvmlDeviceGetTemperature, nvmlDeviceGetTemperatureThreshold,
 * nvmlDeviceGetCurrentClocksThrottleReasons and the nvmlClocksThrottleReason* bits, and - when
 * the library has it - nvmlDeviceGetFieldValues for NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, the
 * GPU's recovery action, nvmlDeviceGpuRecoveryAction_t; docs.nvidia.com/deploy/
 * a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html); no driver header is needed
 * to build. A value NVML answers NOT_SUPPORTED or any error for is Unknown (-1), never 0;
 * NVML_ERROR_RESET_REQUIRED on any reading is nvidia-smi's "[GPU requires reset]" (a
 * gpu:reset_required finding), and NVML_ERROR_GPU_IS_LOST fails the query (FP_EIO). */
#ifndef FP_AGENT_NVML_H
#define FP_AGENT_NVML_H

#include <stddef.h>

#include "agent/nvsmi.h"

#define NVML_LIBRARY "libnvidia-ml.so.1"

struct nvml;

/* Loads the library (dlopen RTLD_NOW|RTLD_LOCAL; lib NULL = NVML_LIBRARY, searched the dynamic
 * loader's way) and resolves the symbols. It does not call nvmlInit_v2: NVML is initialised
 * and shut down around each query (nvml_query), in the child of nvml_query_timed, so the
 * agent's own process never holds NVML state and a hung driver call cannot stall it.
 * Returns 0 and *out (free with nvml_close), or:
 *   FP_ENOTFOUND  the library is absent (err: "libnvidia-ml.so.1 not found") - the detector is
 *                 then NotConfigured, not an error;
 *   FP_EUNSUPPORTED  a required symbol is missing (err names it). */
int nvml_open(const char *lib, struct nvml **out, char *err, size_t errlen);
/* dlclose. NULL is a no-op. */
void nvml_close(struct nvml *n);

/* nvmlInit_v2, then fills out for every GPU NVML counts (at most NVSMI_MAX_GPUS; more sets
 * out->truncated), then nvmlShutdown - in the calling process, with no timeout.
 * out->attached_gpus is nvmlDeviceGetCount_v2's count. Returns 0, or FP_EIO when init, the
 * count or a device handle fails (err names the call and NVML's error string, e.g.
 * "nvmlInit_v2: Driver Not Loaded (9)") or a reading answers GPU_IS_LOST (err "GPU 0
 * (0000:9b:00.0): NVML: GPU is lost"). */
int nvml_query(struct nvml *n, struct nvsmi_report *out, char *err, size_t errlen);

/* nvml_query in a forked child (its own process group) that writes the filled report to a
 * pipe; waits at most timeout_ms (1 .. 3,600,000). On the deadline the child's group is
 * killed with SIGKILL and reaped, *timed_out = 1 and FP_EIO ("NVML did not answer in N ms").
 * Otherwise the child's result: 0 with out filled, or nvml_query's error (err), or FP_EIO
 * when the child died without answering (err names the signal or status). FP_EINVAL for a
 * bad timeout. The caller must not have other threads running NVML or holding locks the
 * child needs (the agent is single-threaded). */
int nvml_query_timed(struct nvml *n, long timeout_ms, struct nvsmi_report *out, int *timed_out,
		     char *err, size_t errlen);

#endif
