/* agent/nvsmi.h - parser of `nvidia-smi -q` text and `nvidia-smi -q -x` XML (the XML through
 * libxml2), and the health findings derived from one query.
 *
 * Field names follow the nvidia-smi(1) man page and the nvsmi_device_v12.dtd shipped with the
 * driver (tags ecc_errors/volatile/dram_uncorrectable, retired_pages, remapped_rows,
 * clocks_event_reasons / clocks_throttle_reasons, temperature, utilization/gpu_util). "[N/A]", "N/A",
 * "[Not Supported]", "Not Supported", "ERR!", "[Unknown Error]", an empty value and anything
 * that is not a number where a number belongs are Unknown (-1 / NVSMI_UNKNOWN), never 0:
 * fleetplane fails closed (DESIGN.md principle 8).
 *
 * Pure: no I/O; bounded (at most NVSMI_MAX_GPUS GPUs, input at most NVSMI_MAX_INPUT bytes);
 * fuzzed by tests/fuzz/fuzz_nvsmi.c. */
#ifndef FP_AGENT_NVSMI_H
#define FP_AGENT_NVSMI_H

#include <stddef.h>
#include <stdint.h>

#include "agent/finding.h"

#define NVSMI_MAX_GPUS 64
#define NVSMI_MAX_INPUT (8u << 20)
#define NVSMI_UNKNOWN (-1)
/* Not reported: the field is absent, or "N/A" / "[Not Supported]" (the GPU or driver has no
 * such reading - ECC Mode on a GeForce, GPU Recovery Action before driver 550). Only for the
 * fields that say so below; everywhere else N/A is NVSMI_UNKNOWN. */
#define NVSMI_NA (-2)
#define NVSMI_TLIMIT_UNKNOWN (-1000)

/* Clock event ("throttle") reasons, as nvidia-smi -q names them (Clocks Event Reasons /
 * Clocks Throttle Reasons). */
#define NVSMI_THR_GPU_IDLE (1u << 0)
#define NVSMI_THR_APP_CLOCKS (1u << 1)
#define NVSMI_THR_SW_POWER_CAP (1u << 2)
#define NVSMI_THR_HW_SLOWDOWN (1u << 3)
#define NVSMI_THR_HW_THERMAL_SLOWDOWN (1u << 4)
#define NVSMI_THR_HW_POWER_BRAKE_SLOWDOWN (1u << 5)
#define NVSMI_THR_SYNC_BOOST (1u << 6)
#define NVSMI_THR_SW_THERMAL_SLOWDOWN (1u << 7)
#define NVSMI_THR_DISPLAY_CLOCKS (1u << 8)

struct nvsmi_gpu {
	char pci_bus_id[FINDING_BUS_ID_LEN]; /* normalised "0000:3b:00.0" from "00000000:3B:00.0" */
	int index;                           /* order in the output, 0-based (nvidia-smi's index) */
	int minor_number;                    /* -1 unknown */
	char product[64];                    /* "NVIDIA H100 80GB HBM3"; "" unknown */
	char uuid[64];
	char serial[32];
	/* 1 enabled, 0 disabled, NVSMI_NA "N/A" (no ECC on this board: the ECC and row-remap
	 * checks are skipped as for disabled), NVSMI_UNKNOWN unreadable ("[Unknown Error]",
	 * "ERR!", "[GPU requires reset]", absent): the ECC and row-remap checks are Unknown,
	 * never skipped - an unreadable mode is not "ECC off". */
	int ecc_mode_current;
	/* ECC counts: totals ("Total" or the sum of the memory locations when no total is given);
	 * -1 unknown. sbe = correctable, dbe = uncorrectable (nvidia-smi's Single/Double Bit). */
	int64_t ecc_volatile_sbe, ecc_volatile_dbe, ecc_aggregate_sbe, ecc_aggregate_dbe;
	/* Retired pages (pre-Ampere): counts -1 unknown; pending 1/0/-1. */
	int64_t retired_sbe, retired_dbe;
	int retired_pending;
	/* Remapped rows (Ampere+): counts -1 unknown; pending and failure 1/0/-1. */
	int64_t remap_correctable, remap_uncorrectable;
	int remap_pending, remap_failure;
	/* Temperatures in degrees C; -1 unknown. */
	int temp_gpu, temp_mem, temp_slowdown, temp_shutdown, temp_max_operating;
	/* T.Limit form (Hopper/Ada drivers 535+ print "GPU T.Limit Temp" and the thresholds as
	 * offsets to T.Limit instead of absolute slowdown/shutdown temperatures): the current
	 * margin below T.Limit and the margins at which slowdown / shutdown / max operating begin,
	 * in degrees C, may be negative; NVSMI_TLIMIT_UNKNOWN when absent or unknown. The GPU is
	 * over its slowdown limit when tlimit_margin <= tlimit_slowdown (as NVSentinel's
	 * gpu-health-monitor compares DCGM_FI_DEV_GPU_TEMP_TLIMIT with the slowdown threshold). */
	int tlimit_margin, tlimit_slowdown, tlimit_shutdown, tlimit_max_operating;
	/* Utilization / Gpu (text) or <utilization><gpu_util> (XML): percent of the last sample
	 * period during which a kernel ran on the GPU (nvidia-smi(1), "Utilization"), 0..100;
	 * -1 unknown ("N/A" - as in MIG mode -, absent, not "N %", over 100), never 0. */
	int gpu_util;
	unsigned throttle_active;  /* NVSMI_THR_* that say "Active" */
	unsigned throttle_unknown; /* NVSMI_THR_* whose value was not Active/Not Active; also
				    * HW Slowdown when its line is missing from a reasons list */
	/* The GPU's recovery action: "GPU Recovery Action" (text, drivers >= 550) /
	 * <gpu_recovery_action> (XML) / NVML field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, as
	 * enum agent_recovery (finding.h; nvidia-smi's words None, Reset, Reboot, Drain P2P,
	 * Drain and Reset); NVSMI_NA absent or N/A; NVSMI_UNKNOWN a value not known. */
	int recovery_action;
	/* "GPU Reset Status" / <gpu_reset_status>: "Reset Required" and "Drain and Reset
	 * Recommended" (NVML's deprecated NVML_FI_DEV_RESET_STATUS and
	 * NVML_FI_DEV_DRAIN_AND_RESET_STATUS): 1 Yes, 0 No, NVSMI_NA absent / N/A /
	 * "Requested functionality has been deprecated", NVSMI_UNKNOWN anything else. */
	int reset_required, drain_and_reset;
	/* Readings printed as "[GPU requires reset]" (NVML_ERROR_RESET_REQUIRED: the GPU must
	 * be reset before it answers): the count and the first field's name. */
	int requires_reset;
	char requires_reset_field[48];
	/* Health readings (ECC, retired pages, remapped rows, temperature, clock event reasons,
	 * reset status, recovery action) printed as an error placeholder - "ERR!" or a
	 * bracketed value other than "[N/A]" / "[Not Supported]" ("[Unknown Error]",
	 * "[GPU requires reset]", "[GPU is lost]", "[Insufficient Permissions]"): the count. */
	int unreadable;
	int partial; /* 1: the text section ended before its "Processes" line
				      * (cut off): its values are what it had, and it gives no
				      * finding, since one may need a line it lacks (HW Slowdown
				      * is printed before HW Power Brake Slowdown) */
};

struct nvsmi_report {
	char driver_version[32]; /* "" unknown */
	char cuda_version[16];
	int attached_gpus; /* "Attached GPUs"; -1 unknown */
	size_t ngpus;
	struct nvsmi_gpu gpus[NVSMI_MAX_GPUS];
	int truncated; /* more GPUs than NVSMI_MAX_GPUS, or the input ended inside
				      * a GPU section: the report is partial (findings treat it as
				      * unknown) */
};

/* Parse `nvidia-smi -q` text. A last line without its newline is cut and not read (unless
 * its GPU section already reached "Processes"); a GPU section that does not reach "Processes"
 * sets truncated. Returns 0 (out filled; unknown fields are -1), FP_EIO when the output holds
 * nvidia-smi's own failure line (nvsmi_tool_error: the tool failed, as if it had been run and
 * exited non-zero), or FP_EINVAL when the input is not nvidia-smi -q output at all (no
 * "Attached GPUs" and no GPU section), with the reason in err. */
int nvsmi_parse_text(const char *buf, size_t len, struct nvsmi_report *out, char *err,
		     size_t errlen);
/* Parse `nvidia-smi -q -x` XML (libxml2, no network, no entity expansion, no DTD loading).
 * Same results and errors as the text form. */
int nvsmi_parse_xml(const char *buf, size_t len, struct nvsmi_report *out, char *err,
		    size_t errlen);
/* Finds nvidia-smi's own failure line in captured output (a line that starts with one of:
 * "Unable to determine the device handle for GPU" - "...: Unknown Error" (NVIDIA/nvidia-docker
 * #1553) or "...: GPU is lost.  Reboot the system to recover this GPU" (marian-nmt/marian
 * #251) -, "No devices were found", "NVIDIA-SMI has failed", "Failed to initialize NVML",
 * "Unable to determine the device handle"): 1 and the line (trimmed, cut) in err, else 0. */
int nvsmi_tool_error(const char *buf, size_t len, char *err, size_t errlen);
/* Either: XML when the first non-blank byte is '<'. Both forms return FP_EIO (err: the line)
 * when nvsmi_tool_error finds nvidia-smi's failure line anywhere in the output. */
int nvsmi_parse(const char *buf, size_t len, struct nvsmi_report *out, char *err, size_t errlen);

/* Derives findings (source "nvidia-smi") from a parsed report: ecc:dbe_volatile (volatile
 * uncorrectable > 0), row_remap:pending, row_remap:failure, retired_pages:pending,
 * gpu:count_mismatch (fewer GPUs than expected_gpus, when expected_gpus > 0, and only from a
 * whole report: not truncated, and its own "Attached GPUs" equal to the GPU sections it has -
 * a cut-off output is unknown, never a missing GPU),
 * thermal:hw_slowdown (HW Thermal Slowdown active, or HW Slowdown active without a power brake),
 * power:brake_slowdown (HW Power Brake Slowdown active), thermal:sw_slowdown (SW
 * thermal slowdown active), thermal:over_limit (GPU temperature >= its slowdown temperature).
 * power:brake_slowdown, thermal:sw_slowdown and ecc:sbe_volatile are notices (finding.notice
 * = 1). The GPU's own recovery request: recovery_action's code (agent_recovery_code:
 * gpu:reset_required, gpu:reboot_required, gpu:drain_p2p, gpu:drain_and_reset), Reset
 * Required Yes (gpu:drain_and_reset when Drain and Reset Recommended is Yes too, else
 * gpu:reset_required), and any "[GPU requires reset]" reading (gpu:reset_required); each code
 * at most once per GPU. A partial GPU section gives no finding (only *unknown = 1).
 * Writes at most max findings to out and returns the number written. *unknown is set to 1 when
 * the report cannot prove health (truncated, attached count unknown or not equal to the GPU
 * sections, or a GPU whose: ECC mode is unreadable; ECC/remap state is unknown while ECC is
 * enabled; Remapping Failure Occurred is unreadable while its Pending is read; GPU temperature
 * is unreadable, or neither a slowdown temperature nor a T.Limit margin and its slowdown
 * margin can be read; HW Slowdown or HW Thermal Slowdown is unreadable; recovery action or
 * reset status is an unknown value; any health reading is an error placeholder): the
 * detector's status is then "unknown", never "ok" - also when its only findings are notices. */
size_t nvsmi_findings(const struct nvsmi_report *r, int expected_gpus, struct agent_finding *out,
		      size_t max, int *unknown);

/* `nvidia-smi nvlink --status` (a GPU line "GPU 0: <name> (UUID: ...)" followed by
 * "Link N: 25 GB/s" or "Link N: <inactive>" lines; a GPU whose links are all down may instead
 * print "NVML: Unable to retrieve NVLink information as all links are inActive"). */
#define NVSMI_NVLINK_MAX_LINKS 32
struct nvsmi_nvlink_gpu {
	int index;          /* the "GPU N" number */
	int nlinks;         /* links listed */
	int links_up;       /* with a bandwidth > 0 */
	int all_inactive;   /* the NVML "all links are inActive" line */
	uint32_t down_mask; /* bit N set: link N was <inactive> or 0 GB/s */
};
struct nvsmi_nvlink_report {
	size_t ngpus;
	struct nvsmi_nvlink_gpu gpus[NVSMI_MAX_GPUS];
	int truncated; /* more GPUs or links than the arrays hold */
};
/* Parse `nvidia-smi nvlink --status`. Returns 0, FP_EIO when the output holds nvidia-smi's own
 * failure line (nvsmi_tool_error), or FP_EINVAL when no "GPU N:" line is found or a Link line
 * comes before any GPU line (err names the line). */
int nvsmi_nvlink_status_parse(const char *buf, size_t len, struct nvsmi_nvlink_report *out,
			      char *err, size_t errlen);
/* Findings "nvlink:link_down" (source "nvidia-smi"), one per GPU that has a down link while
 * some link of the node is up (a node whose links are all down has no NVLink in use: PCIe
 * cards list their links as inactive); message names the links, key "links=<mask hex>".
 * *unknown = 1 when the report is truncated. Returns the number written (at most max). */
size_t nvsmi_nvlink_findings(const struct nvsmi_nvlink_report *r, struct agent_finding *out,
			     size_t max, int *unknown);

#endif
