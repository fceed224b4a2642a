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
 * nvmlDeviceGetCurrentClocksThrottleReasons and the nvmlClocksThrottleReason* bits); no driver
 * header is needed to build. A value NVML answers NOT_SUPPORTED or any error for is Unknown
 * (-1), never 0. */
#ifndef FP_AGENT_NVML_H
#define FP_AGENT_NVML_H

#include <stddef.h>

#include "agent/nvsmi.h"

#define NVML_LIBRARY "libnvidia-ml.so.1"

struct nvml;

/* Loads the library (dlopen RTLD_NOW|RTLD_LOCAL; lib NULL = NVML_LIBRARY, searched the dynamic
 * loader's way) and calls nvmlInit_v2. Returns 0 and *out (free with nvml_close), or:
 *   FP_ENOTFOUND  the library is absent (err: "libnvidia-ml.so.1 not found") - the detector is
 *                 then NotConfigured, not an error;
 *   FP_EUNSUPPORTED  a required symbol is missing (err names it);
 *   FP_EIO        nvmlInit_v2 failed (err has nvmlErrorString's text, e.g. "Driver Not Loaded"). */
int nvml_open(const char *lib, struct nvml **out, char *err, size_t errlen);
/* Calls nvmlShutdown and dlclose. NULL is a no-op. */
void nvml_close(struct nvml *n);

/* Fills out for every GPU NVML counts (at most NVSMI_MAX_GPUS; more sets out->truncated).
 * out->attached_gpus is nvmlDeviceGetCount_v2's count. Returns 0, or FP_EIO when the count or a
 * device handle cannot be read (err names the call and NVML's error string). */
int nvml_query(struct nvml *n, struct nvsmi_report *out, char *err, size_t errlen);

#endif
