/* nvml.c - dlopen'd NVML (nvml.h). The declarations below are transcribed from NVIDIA's NVML API
 * Reference (docs.nvidia.com/deploy/nvml-api): return codes (nvmlReturn_t, "Error reporting"),
 * nvmlPciInfo_t ("Device Structs"), the memory error and ECC counter enums ("Device Enums"),
 * NVML_TEMPERATURE_GPU and NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, and the
 * nvmlClocksThrottleReason* bit values ("Clocks Event Reasons"). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/nvml.h"
#include "base/alloc.h"
#include "base/err.h"

#include "base/banned.h"

typedef int nvml_return_t; /* nvmlReturn_t: an enum; NVML_SUCCESS = 0 */
typedef struct nvml_device_st *nvml_device_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_RESET_REQUIRED 16

/* nvmlFieldValue_t and nvmlValue_t (NVML API Reference, "Field Value Queries",
 * docs.nvidia.com/deploy/nvml-api/api/structnvmlFieldValue__t.html): fieldId, scopeId,
 * timestamp (us), latencyUsec, valueType, nvmlReturn, value (an 8-byte union: dVal, uiVal,
 * ulVal, ullVal, sllVal, ...). NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230 in nvml.h) returns an
 * nvmlDeviceGpuRecoveryAction_t (finding.h, enum agent_recovery) as an unsigned int; NVIDIA's
 * "Error Recovery and Response Flags" (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/
 * error-recovery-and-response-flags.html) says what each value asks. */
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
union nvml_value {
	double d;
	unsigned int ui;
	unsigned long ul;
	unsigned long long ull;
	long long sll;
};
struct nvml_field_value {
	unsigned int field_id;
	unsigned int scope_id;
	long long timestamp;
	long long latency_usec;
	int value_type;
	nvml_return_t nvml_return;
	union nvml_value value;
};

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
	nvml_return_t (*get_fields)(nvml_device_t, int, struct nvml_field_value *); /* optional */
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
	    (rc = nvml_sym(n, "nvmlDeviceGetHandleByIndex_v2", &n->get_handle, 1, err, errlen)) <
		    0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetPciInfo_v3", &n->get_pci, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetTotalEccErrors", &n->get_ecc, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetRemappedRows", &n->get_remap, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetTemperature", &n->get_temp, 1, err, errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetTemperatureThreshold", &n->get_temp_threshold, 0, err,
			   errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetCurrentClocksThrottleReasons", &n->get_throttle, 1, err,
			   errlen)) < 0 ||
	    (rc = nvml_sym(n, "nvmlDeviceGetFieldValues", &n->get_fields, 0, err, errlen)) < 0) {
		dlclose(dl);
		free(n);
		return rc;
	}
	*out = n;
	return 0;
}

void nvml_close(struct nvml *n)
{
	if (!n)
		return;
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

/* Notes an answer of a per-GPU call: RESET_REQUIRED is the "[GPU requires reset]" that
 * nvidia-smi would print (nvsmi.h, requires_reset); GPU_IS_LOST is remembered in *lost. */
static void nvml_note(struct nvsmi_gpu *g, nvml_return_t r, const char *call, int *lost)
{
	if (r == NVML_ERROR_RESET_REQUIRED && g->requires_reset++ == 0)
		snprintf(g->requires_reset_field, sizeof(g->requires_reset_field), "%s", call);
	if (r == NVML_ERROR_GPU_IS_LOST)
		*lost = 1;
}

/* The GPU's recovery action through nvmlDeviceGetFieldValues: an agent_recovery value,
 * NVSMI_NA when the library or driver has no such field (NOT_SUPPORTED, or the call is absent:
 * drivers before the field existed), NVSMI_UNKNOWN on any other error or value type. */
static int nvml_recovery(struct nvml *n, nvml_device_t d, struct nvsmi_gpu *g, int *lost)
{
	struct nvml_field_value fv;
	if (!n->get_fields)
		return NVSMI_NA;
	memset(&fv, 0, sizeof(fv));
	fv.field_id = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
	nvml_return_t r = n->get_fields(d, 1, &fv);
	nvml_note(g, r, "nvmlDeviceGetFieldValues", lost);
	if (r == NVML_SUCCESS) {
		r = fv.nvml_return;
		nvml_note(g, r, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", lost);
	}
	if (r == NVML_ERROR_NOT_SUPPORTED)
		return NVSMI_NA;
	if (r != NVML_SUCCESS)
		return NVSMI_UNKNOWN;
	unsigned long long v = fv.value_type == NVML_VALUE_TYPE_UNSIGNED_INT ? fv.value.ui
									     : fv.value.ull;
	return v <= AGENT_RECOVERY_SYSTEM_REBOOT ? (int)v : NVSMI_UNKNOWN;
}

static int64_t nvml_ecc(struct nvml *n, nvml_device_t d, int type, int counter, int *supported,
			struct nvsmi_gpu *g, int *lost)
{
	unsigned long long v = 0;
	nvml_return_t r = n->get_ecc(d, type, counter, &v);
	nvml_note(g, r, "nvmlDeviceGetTotalEccErrors", lost);
	if (r == NVML_ERROR_NOT_SUPPORTED)
		*supported = 0;
	if (r != NVML_SUCCESS || v > (unsigned long long)INT64_MAX)
		return NVSMI_UNKNOWN;
	return (int64_t)v;
}

static int nvml_query_devices(struct nvml *n, struct nvsmi_report *out, char *err, size_t errlen);

int nvml_query(struct nvml *n, struct nvsmi_report *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->attached_gpus = -1;
	nvml_return_t r = n->init();
	if (r != NVML_SUCCESS)
		return fp_errf(FP_EIO, err, errlen, "nvmlInit_v2: %s (%d)", nvml_errstr(n, r), r);
	int rc = nvml_query_devices(n, out, err, errlen);
	n->shutdown();
	return rc;
}

/* What the child writes to the pipe. */
struct nvml_answer {
	int rc;
	char err[512];
	struct nvsmi_report report;
};

static int64_t nvml_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int nvml_query_timed(struct nvml *n, long timeout_ms, struct nvsmi_report *out, int *timed_out,
		     char *err, size_t errlen)
{
	*timed_out = 0;
	memset(out, 0, sizeof(*out));
	out->attached_gpus = -1;
	if (timeout_ms < 1 || timeout_ms > 3600000L)
		return fp_errf(FP_EINVAL, err, errlen, "nvml: timeout %ld ms out of 1..3600000",
			       timeout_ms);
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return fp_errf(FP_EIO, err, errlen, "nvml: pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return fp_errf(FP_EIO, err, errlen, "nvml: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		/* The child: NVML from scratch (the parent never initialises it), the answer down
		 * the pipe, _exit (no atexit handlers of the parent run here). */
		close(fds[0]);
		setpgid(0, 0);
		static struct nvml_answer ans;
		memset(&ans, 0, sizeof(ans));
		ans.rc = nvml_query(n, &ans.report, ans.err, sizeof(ans.err));
		const char *p = (const char *)&ans;
		size_t left = sizeof(ans);
		while (left) {
			ssize_t w = write(fds[1], p, left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				_exit(1);
			p += w;
			left -= (size_t)w;
		}
		_exit(0);
	}
	close(fds[1]);
	struct nvml_answer *ans = xcalloc(1, sizeof(*ans));
	size_t got = 0;
	int64_t deadline = nvml_now_ms() + timeout_ms;
	int rc = 0;
	while (got < sizeof(*ans)) {
		int64_t left = deadline - nvml_now_ms();
		if (left <= 0) {
			*timed_out = 1;
			break;
		}
		struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
		int pr = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		ssize_t r = read(fds[0], (char *)ans + got, sizeof(*ans) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* the child died before it answered */
		got += (size_t)r;
	}
	close(fds[0]);
	if (*timed_out) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (*timed_out) {
		rc = fp_errf(FP_EIO, err, errlen, "NVML did not answer in %ld ms", timeout_ms);
	} else if (got < sizeof(*ans)) {
		if (WIFSIGNALED(status))
			rc = fp_errf(FP_EIO, err, errlen,
				     "nvml: the query process was killed by "
				     "signal %d",
				     WTERMSIG(status));
		else
			rc = fp_errf(FP_EIO, err, errlen,
				     "nvml: the query process ended without an "
				     "answer (status %d)",
				     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	} else {
		*out = ans->report;
		if (out->ngpus > NVSMI_MAX_GPUS)
			out->ngpus = NVSMI_MAX_GPUS;
		rc = ans->rc;
		if (rc < 0) {
			ans->err[sizeof(ans->err) - 1] = '\0';
			snprintf(err, errlen, "%s", ans->err);
		}
	}
	free(ans);
	return rc;
}

static int nvml_query_devices(struct nvml *n, struct nvsmi_report *out, char *err, size_t errlen)
{
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
		/* No T.Limit reading through NVML here: unknown, never the 0 of the memset (a
		 * margin 0 at a slowdown margin 0 read as thermal:over_limit on every GPU). */
		g->tlimit_margin = g->tlimit_slowdown = g->tlimit_shutdown =
			g->tlimit_max_operating = NVSMI_TLIMIT_UNKNOWN;
		/* Utilisation is not read through NVML here: unknown, never an idle 0. */
		g->gpu_util = NVSMI_UNKNOWN;
		struct nvml_pci_info pi;
		memset(&pi, 0, sizeof(pi));
		if (n->get_pci(d, &pi) == NVML_SUCCESS)
			nvml_bus_id(&pi, g->pci_bus_id, sizeof(g->pci_bus_id));
		int supported = 1;
		int lost = 0;
		g->ecc_volatile_sbe = nvml_ecc(n, d, NVML_MEMORY_ERROR_TYPE_CORRECTED,
					       NVML_VOLATILE_ECC, &supported, g, &lost);
		g->ecc_volatile_dbe = nvml_ecc(n, d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
					       NVML_VOLATILE_ECC, &supported, g, &lost);
		g->ecc_aggregate_sbe = nvml_ecc(n, d, NVML_MEMORY_ERROR_TYPE_CORRECTED,
						NVML_AGGREGATE_ECC, &supported, g, &lost);
		g->ecc_aggregate_dbe = nvml_ecc(n, d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
						NVML_AGGREGATE_ECC, &supported, g, &lost);
		/* Reset status is read through the recovery action (NVML deprecates
		 * NVML_FI_DEV_RESET_STATUS and ..._DRAIN_AND_RESET_STATUS for it). */
		g->reset_required = g->drain_and_reset = NVSMI_NA;
		g->recovery_action = nvml_recovery(n, d, g, &lost);
		/* NOT_SUPPORTED for ECC counters means ECC is off or absent (GeForce); any other
		 * error leaves the mode unknown. */
		g->ecc_mode_current = !supported ? 0 : g->ecc_volatile_dbe >= 0 ? 1 : -1;
		/* Retired pages are not read through NVML (nvmlDeviceGetRetiredPages is not in the
		 * set loaded): unknown. */
		g->retired_sbe = g->retired_dbe = NVSMI_UNKNOWN;
		g->retired_pending = -1;
		unsigned int corr = 0, unc = 0, pend = 0, fail = 0;
		r = n->get_remap(d, &corr, &unc, &pend, &fail);
		nvml_note(g, r, "nvmlDeviceGetRemappedRows", &lost);
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
		r = n->get_temp(d, NVML_TEMPERATURE_GPU, &t);
		nvml_note(g, r, "nvmlDeviceGetTemperature", &lost);
		g->temp_gpu = r == NVML_SUCCESS && t < 1000 ? (int)t : -1;
		g->temp_mem = -1;
		g->temp_max_operating = -1;
		g->temp_slowdown = g->temp_shutdown = -1;
		if (n->get_temp_threshold) {
			if (n->get_temp_threshold(d, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &t) ==
				    NVML_SUCCESS &&
			    t < 1000)
				g->temp_slowdown = (int)t;
			if (n->get_temp_threshold(d, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &t) ==
				    NVML_SUCCESS &&
			    t < 1000)
				g->temp_shutdown = (int)t;
		}
		unsigned long long thr = 0;
		r = n->get_throttle(d, &thr);
		nvml_note(g, r, "nvmlDeviceGetCurrentClocksThrottleReasons", &lost);
		if (r == NVML_SUCCESS) {
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
		/* A GPU the driver has lost answers nothing: the query failed, as nvidia-smi's
		 * "GPU is lost" does (never a GPU with unknown readings that passes for one). */
		if (lost)
			return fp_errf(FP_EIO, err, errlen, "GPU %u (%s): NVML: GPU is lost", i,
				       g->pci_bus_id);
		out->ngpus++;
	}
	return 0;
}
