/* nvml.c - dlopen'd NVML (nvml.h). The declarations below are transcribed from NVIDIA's NVML API
 * Reference (docs.nvidia.com/deploy/nvml-api): return codes (nvmlReturn_t, "Error reporting"),
 * nvmlPciInfo_t ("Device Structs"), the memory error and ECC counter enums ("Device Enums"),
 * NVML_TEMPERATURE_GPU and NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, and the
 * nvmlClocksThrottleReason* bit values ("Clocks Event Reasons"). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nvml.h"
#include "base/alloc.h"
#include "base/err.h"

#include "base/banned.h"

typedef int nvml_return_t; /* nvmlReturn_t: an enum; NVML_SUCCESS = 0 */
typedef struct nvml_device_st *nvml_device_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3

/* nvmlPciInfo_t (NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
 * 32). */
struct nvml_pci_info {
	char bus_id_legacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pci_device_id;
	unsigned int pci_sub_system_id;
	char bus_id[32];
};

/* nvmlMemoryErrorType_t, nvmlEccCounterType_t, nvmlTemperatureSensors_t,
 * nvmlTemperatureThresholds_t */
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1
#define NVML_TEMPERATURE_GPU 0
#define NVML_TEMPERATURE_THRESHOLD_SHUTDOWN 0
#define NVML_TEMPERATURE_THRESHOLD_SLOWDOWN 1

/* nvmlClocksThrottleReason* (nvmlClocksEventReason* in newer headers; same values). */
#define NVML_THR_GPU_IDLE 0x1ULL
#define NVML_THR_APP_CLOCKS 0x2ULL
#define NVML_THR_SW_POWER_CAP 0x4ULL
#define NVML_THR_HW_SLOWDOWN 0x8ULL
#define NVML_THR_SYNC_BOOST 0x10ULL
#define NVML_THR_SW_THERMAL 0x20ULL
#define NVML_THR_HW_THERMAL 0x40ULL
#define NVML_THR_HW_POWER_BRAKE 0x80ULL
#define NVML_THR_DISPLAY_CLOCK 0x100ULL

struct nvml {
	void *dl;
	nvml_return_t (*init)(void);
	nvml_return_t (*shutdown)(void);
	const char *(*error_string)(nvml_return_t);
	nvml_return_t (*get_count)(unsigned int *);
	nvml_return_t (*get_handle)(unsigned int, nvml_device_t *);
	nvml_return_t (*get_pci)(nvml_device_t, struct nvml_pci_info *);
	nvml_return_t (*get_ecc)(nvml_device_t, int, int, unsigned long long *);
	nvml_return_t (*get_remap)(nvml_device_t, unsigned int *, unsigned int *, unsigned int *,
				   unsigned int *);
	nvml_return_t (*get_temp)(nvml_device_t, int, unsigned int *);
	nvml_return_t (*get_temp_threshold)(nvml_device_t, int, unsigned int *); /* optional */
	nvml_return_t (*get_throttle)(nvml_device_t, unsigned long long *);
};

static const char *nvml_errstr(struct nvml *n, nvml_return_t r)
{
	const char *s = n->error_string ? n->error_string(r) : NULL;
	return s ? s : "unknown NVML error";
}

/* dlsym into a function pointer without the object/function pointer cast warning. */
static int nvml_sym(struct nvml *n, const char *name, void *slot, int required, char *err,
		    size_t errlen)
{
	void *p = dlsym(n->dl, name);
	if (!p && required)
		return fp_errf(FP_EUNSUPPORTED, err, errlen, "%s: symbol %s not found",
			       NVML_LIBRARY, name);
	memcpy(slot, &p, sizeof(p));
	return 0;
}

int nvml_open(const char *lib, struct nvml **out, char *err, size_t errlen)
{
	*out = NULL;
	const char *name = lib ? lib : NVML_LIBRARY;
	void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return fp_errf(FP_ENOTFOUND, err, errlen, "%s not found", name);
	struct nvml *n = xcalloc(1, sizeof(*n));
	n->dl = dl;
	int rc;
	if ((rc = nvml_sym(n, "nvmlErrorString", &n->error_string, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlInit_v2", &n->init, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlShutdown", &n->shutdown, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetCount_v2", &n->get_count, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetHandleByIndex_v2", &n->get_handle, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetPciInfo_v3", &n->get_pci, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetTotalEccErrors", &n->get_ecc, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetRemappedRows", &n->get_remap, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetTemperature", &n->get_temp, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetTemperatureThreshold", &n->get_temp_threshold, 0, err,
			   errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetCurrentClocksThrottleReasons", &n->get_throttle, 1, err,
			   errlen)) < 0) {
		dlclose(dl);
		free(n);
		return rc;
	}
	nvml_return_t r = n->init();
	if (r != NVML_SUCCESS) {
		fp_errf(FP_EIO, err, errlen, "nvmlInit_v2: %s (%d)", nvml_errstr(n, r), r);
		dlclose(dl);
		free(n);
		return FP_EIO;
	}
	*out = n;
	return 0;
}

void nvml_close(struct nvml *n)
{
	if (!n)
		return;
	if (n->shutdown)
		n->shutdown();
	dlclose(n->dl);
	free(n);
}

/* "00000000:3B:00.0" (NVML's busId: 8-digit domain, upper case) -> "0000:3b:00.0"; from the
 * numeric fields when the string is odd. */
static void nvml_bus_id(const struct nvml_pci_info *pi, char *out, size_t outlen)
{
	snprintf(out, outlen, "%04x:%02x:%02x.0", pi->domain & 0xffffu, pi->bus & 0xffu,
		 pi->device & 0x1fu);
	const char *s = pi->bus_id;
	size_t len = strnlen(s, sizeof(pi->bus_id));
	/* Take the function digit from the string when it has one ("...:00.1"). */
	if (len >= 2 && s[len - 2] == '.' && s[len - 1] >= '0' && s[len - 1] <= '7')
		out[strlen(out) - 1] = s[len - 1];
}

static int64_t nvml_ecc(struct nvml *n, nvml_device_t d, int type, int counter, int *supported)
{
	unsigned long long v = 0;
	nvml_return_t r = n->get_ecc(d, type, counter, &v);
	if (r == NVML_ERROR_NOT_SUPPORTED)
		*supported = 0;
	if (r != NVML_SUCCESS || v > (unsigned long long)INT64_MAX)
		return NVSMI_UNKNOWN;
	return (int64_t)v;
}

int nvml_query(struct nvml *n, struct nvsmi_report *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->attached_gpus = -1;
	unsigned int count = 0;
	nvml_return_t r = n->get_count(&count);
	if (r != NVML_SUCCESS)
		return fp_errf(FP_EIO, err, errlen, "nvmlDeviceGetCount_v2: %s", nvml_errstr(n, r));
	out->attached_gpus = count > 1000000 ? -1 : (int)count;
	unsigned int take = count;
	if (take > NVSMI_MAX_GPUS) {
		take = NVSMI_MAX_GPUS;
		out->truncated = 1;
	}
	for (unsigned int i = 0; i < take; i++) {
		struct nvsmi_gpu *g = &out->gpus[out->ngpus];
		memset(g, 0, sizeof(*g));
		nvml_device_t d = NULL;
		r = n->get_handle(i, &d);
		if (r != NVML_SUCCESS)
			return fp_errf(FP_EIO, err, errlen, "nvmlDeviceGetHandleByIndex_v2(%u): %s",
				       i, nvml_errstr(n, r));
		g->index = (int)i;
		g->minor_number = -1;
		struct nvml_pci_info pi;
		memset(&pi, 0, sizeof(pi));
		if (n->get_pci(d, &pi) == NVML_SUCCESS)
			nvml_bus_id(&pi, g->pci_bus_id, sizeof(g->pci_bus_id));
		int supported = 1;
		g->ecc_volatile_sbe = nvml_ecc(n, d, NVML_MEMORY_ERROR_TYPE_CORRECTED,
					       NVML_VOLATILE_ECC, &supported);
		g->ecc_volatile_dbe = nvml_ecc(n, d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
					       NVML_VOLATILE_ECC, &supported);
		g->ecc_aggregate_sbe = nvml_ecc(n, d, NVML_MEMORY_ERROR_TYPE_CORRECTED,
						NVML_AGGREGATE_ECC, &supported);
		g->ecc_aggregate_dbe = nvml_ecc(n, d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
						NVML_AGGREGATE_ECC, &supported);
		/* NOT_SUPPORTED for ECC counters means ECC is off or absent (GeForce); any other
		 * error leaves the mode unknown. */
		g->ecc_mode_current = !supported ? 0 : g->ecc_volatile_dbe >= 0 ? 1 : -1;
		/* Retired pages are not read through NVML (nvmlDeviceGetRetiredPages is not in the
		 * set loaded): unknown. */
		g->retired_sbe = g->retired_dbe = NVSMI_UNKNOWN;
		g->retired_pending = -1;
		unsigned int corr = 0, unc = 0, pend = 0, fail = 0;
		r = n->get_remap(d, &corr, &unc, &pend, &fail);
		if (r == NVML_SUCCESS) {
			g->remap_correctable = corr;
			g->remap_uncorrectable = unc;
			g->remap_pending = pend ? 1 : 0;
			g->remap_failure = fail ? 1 : 0;
		} else {
			g->remap_correctable = g->remap_uncorrectable = NVSMI_UNKNOWN;
			g->remap_pending = g->remap_failure = -1;
		}
		unsigned int t = 0;
		g->temp_gpu = n->get_temp(d, NVML_TEMPERATURE_GPU, &t) == NVML_SUCCESS && t < 1000
				      ? (int)t
				      : -1;
		g->temp_mem = -1;
		g->temp_max_operating = -1;
		g->temp_slowdown = g->temp_shutdown = -1;
		if (n->get_temp_threshold) {
			if (n->get_temp_threshold(d, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &t) ==
				    NVML_SUCCESS && t < 1000)
				g->temp_slowdown = (int)t;
			if (n->get_temp_threshold(d, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &t) ==
				    NVML_SUCCESS && t < 1000)
				g->temp_shutdown = (int)t;
		}
		unsigned long long thr = 0;
		if (n->get_throttle(d, &thr) == NVML_SUCCESS) {
			static const struct {
				unsigned long long nv;
				unsigned ours;
			} map[] = {
				{NVML_THR_GPU_IDLE, NVSMI_THR_GPU_IDLE},
				{NVML_THR_APP_CLOCKS, NVSMI_THR_APP_CLOCKS},
				{NVML_THR_SW_POWER_CAP, NVSMI_THR_SW_POWER_CAP},
				{NVML_THR_HW_SLOWDOWN, NVSMI_THR_HW_SLOWDOWN},
				{NVML_THR_SYNC_BOOST, NVSMI_THR_SYNC_BOOST},
				{NVML_THR_SW_THERMAL, NVSMI_THR_SW_THERMAL_SLOWDOWN},
				{NVML_THR_HW_THERMAL, NVSMI_THR_HW_THERMAL_SLOWDOWN},
				{NVML_THR_HW_POWER_BRAKE, NVSMI_THR_HW_POWER_BRAKE_SLOWDOWN},
				{NVML_THR_DISPLAY_CLOCK, NVSMI_THR_DISPLAY_CLOCKS},
			};
			for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
				if (thr & map[k].nv)
					g->throttle_active |= map[k].ours;
		} else {
			g->throttle_unknown = ~0u & 0x1ffu;
		}
		out->ngpus++;
	}
	return 0;
}
