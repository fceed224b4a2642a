/* bmc.h - the BMC driver interface (DESIGN.md "BMC"; CONVENTIONS.md "Interfaces for backends
 * and drivers"). A driver is an ops table chosen by name ("sim", later "ipmi", "redfish") from a
 * static table in bmc.c; callers use only the bmc_* wrappers, which check arguments, answer
 * FP_EUNSUPPORTED for NULL ops, enforce the call deadline, and record
 * fleetplane_bmc_requests_total{driver,op,result} and
 * fleetplane_bmc_request_duration_seconds{driver,op}.
 *
 * Calls block (seconds on real hardware), so they run on executor threads, never on API or
 * reconcile threads. Every call takes an absolute deadline in the clock's monotonic
 * milliseconds and returns FP_ETIMEDOUT once past it. Detail for humans goes into err; it must
 * never contain the BMC password. */
#ifndef FP_DRIVER_BMC_H
#define FP_DRIVER_BMC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "core/model.h"

enum bmc_power {
	BMC_POWER_UNKNOWN = 0,
	BMC_POWER_ON,
	BMC_POWER_OFF
};
/* IPMI 2.0 "Chassis Control" (section 28.3) data byte 1 / Redfish ResetType, by meaning:
 * ON power up; OFF hard power down; CYCLE off then on; SOFT ACPI soft shutdown (IPMI 0x05,
 * Redfish GracefulShutdown); RESET hard reset without a power transition (IPMI 0x03, Redfish
 * ForceRestart). */
enum bmc_power_action {
	BMC_ACTION_ON = 1,
	BMC_ACTION_OFF,
	BMC_ACTION_CYCLE,
	BMC_ACTION_SOFT,
	BMC_ACTION_RESET
};
enum bmc_boot_device {
	BMC_BOOT_UNKNOWN = 0,
	BMC_BOOT_PXE,
	BMC_BOOT_DISK
};
/* Boot firmware mode (IPMI boot flags byte 1 bit 5 "BIOS boot type"; Redfish
 * BootSourceOverrideMode). UNKNOWN on read means the BMC does not say; on write, leave as is. */
enum bmc_boot_mode {
	BMC_BOOT_MODE_UNKNOWN = 0,
	BMC_BOOT_MODE_UEFI,
	BMC_BOOT_MODE_LEGACY
};

/* A boot override: device, next boot only (persistent = 0) or every boot (1), firmware mode. */
struct bmc_boot {
	enum bmc_boot_device device;
	int persistent;
	enum bmc_boot_mode mode;
};

const char *bmc_power_name(enum bmc_power p); /* "on" | "off" | "unknown" */
const char *
bmc_action_name(enum bmc_power_action a);          /* "on" | "off" | "cycle" | "soft" | "reset" */
const char *bmc_boot_name(enum bmc_boot_device d); /* "pxe" | "disk" | "unknown" */
const char *bmc_boot_mode_name(enum bmc_boot_mode m); /* "uefi" | "legacy" | "unknown" */
int bmc_action_parse(const char *s, enum bmc_power_action *out);

/* Capability flags a driver advertises. */
#define BMC_CAP_POWER (1u << 0)
#define BMC_CAP_BOOT_DEVICE (1u << 1)
#define BMC_CAP_INVENTORY (1u << 2)
#define BMC_CAP_SEL (1u << 3)
#define BMC_CAP_FIRMWARE (1u << 4)
/* boot_get tells whether a next-boot override is still pending (reads UNKNOWN or another
 * device once it has been used), so a matching read may skip the write. IPMI cannot: BMCs keep
 * the device selector after the boot flags' "valid" bit clears (IPMI 2.0 table 28-14) and
 * ipmi_sim keeps no valid bit at all. */
#define BMC_CAP_BOOT_READBACK (1u << 5)

/* BMC quirks (BMC_QUIRK_*, bmc_quirk_name/parse) are node spec vocabulary: core/model.h. */

/* What a driver observed during a call, beyond its result. The caller zeroes it. */
struct bmc_observed {
	unsigned learned_quirks; /* quirks found necessary on this call (OR'd in) */
	char power_reason[32];   /* with BMC_POWER_UNKNOWN: a CamelCase reason such as
				   * "PowerStateMissing" or "PowerStateDisagrees" (err has the
				   * detail) */
	int maybe_acted;         /* power_set: set once the action request has been sent, so
				   * a failure after it (no answer, broken connection) may have
				   * been carried out; 0 with a failure = certainly not done */
	int64_t retry_after_ms;  /* with FP_EAGAIN: the BMC asked to be left alone this long
				   * (Redfish 429/503 Retry-After, RFC 9110 section 10.2.3) */
};

/* What a call is aimed at: one node's BMC. Strings borrowed for the call. */
struct bmc_target {
	const char *node;    /* node name */
	const char *address; /* host:port (IPMI, default port 623) or URL (Redfish); NULL for sim */
	const char *username;
	const char *password; /* secret: never logged, never put in err, never in argv */
	int cipher_suite;    /* IPMI 2.0 cipher suite id (section 22.15.2); < 0: driver default 3 */
	int tls_verify;      /* Redfish: verify the BMC's certificate (1, default) or not (0) */
	const char *ca_file; /* Redfish: PEM CA bundle for tls_verify, or NULL for the system's */
	const char *system;  /* Redfish: ComputerSystem Id when the BMC has several, or NULL */
	unsigned quirks;     /* BMC_QUIRK_* to apply (spec + learned) */
	struct bmc_observed *observed; /* may be NULL */
	const json_t *extra;           /* other driver-specific spec.bmc fields, or NULL */
};

/* Firmware update request (Redfish UpdateService, DSP0266 / DSP8010 UpdateService schema).
 * Exactly one of image_uri and image_path. image_uri is fetched by the BMC (SimpleUpdate);
 * transfer_protocol is NULL (use the URI's scheme) or one of the BMC's
 * TransferProtocol@Redfish.AllowableValues. image_path is a file on the control-plane host,
 * pushed to the BMC (DSP0266 "Multipart HTTP push updates", UpdateService.MultipartHttpPushUri):
 * an absolute path, not a symbolic link, a regular file of at most 4 GiB, streamed (never read
 * whole); apply_time is NULL (the BMC's default), "Immediate" or "OnReset"
 * (@Redfish.OperationApplyTime), image_path only. targets are resource URIs (NULL-terminated,
 * or NULL for the service's default). Strings borrowed for the call. */
struct bmc_firmware_req {
	const char *image_uri;
	const char *transfer_protocol;
	const char *const *targets;
	const char *image_path;
	const char *apply_time;
};

struct bmc;

struct bmc_driver_ops {
	const char *name;
	unsigned caps;
	int (*power_get)(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 enum bmc_power *out, char *err, size_t errlen);
	int (*power_set)(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 enum bmc_power_action a, char *err, size_t errlen);
	int (*boot_get)(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			struct bmc_boot *out, char *err, size_t errlen);
	int (*boot_set)(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			const struct bmc_boot *want, char *err, size_t errlen);
	/* *out: a new JSON object {"system":{...},"gpus":[...],...}; caller owns it. */
	int (*inventory)(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
			 char *err, size_t errlen);
	/* *out: a new JSON object {"power": "on"|"off"|"unknown", "powerFault": bool?,
	 * "powerRestorePolicy"?: str, "intrusion"?: bool, "health"?: str, ...}; caller owns it. */
	int (*chassis_status)(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			      json_t **out, char *err, size_t errlen);
	/* *out: a new JSON array of system event log entries, oldest first, at most max_entries
	 * (the newest ones): {"id": int, "timestamp": RFC 3339 or null, "sensorType": str,
	 * "sensorNumber": int?, "eventType": str?, "message": str, "raw": hex str?}. */
	int (*sel_read)(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			size_t max_entries, json_t **out, char *err, size_t errlen);
	/* Starts a firmware update and tracks its task until it ends or deadline passes. *out: a
	 * new JSON object {"task": uri or null, "state": "Completed"|"Exception"|"Killed"|
	 * "Cancelled"|"Running"|..., "percent": int?, "messages": [str]}; 0 only when the task
	 * Completed; FP_ETIMEDOUT with *out set (state "Running") when it did not end in time. */
	int (*firmware_update)(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			       const struct bmc_firmware_req *req, json_t **out, char *err,
			       size_t errlen);
	/* Asks the node's own agent (not the BMC) to perform `action` - today "gpu_reset": reset
	 * the GPU named in the node's status.remediation.gpu (nvidia-smi --gpu-reset, NVIDIA
	 * nvidia-smi(1)) - for drivers that have a channel to it; only the simulator does. The
	 * request is asynchronous: 0 means accepted, and the agent later answers through the
	 * remediated callback (the sim's notify BMC_SIM_REMEDIATED; a real agent POSTs
	 * :remediated). FP_ESTATE when the machine cannot do it now (off). NULL = no channel: a
	 * real agent sees the request on its node document (status.operation). */
	int (*agent_action)(struct bmc *b, const struct bmc_target *t, const char *action,
			    int64_t deadline, char *err, size_t errlen);
	/* Checks a node's spec.bmc before it is stored (enroll, PUT) with the same code that checks
	 * a bmc_target at call time. spec->password is checked only when set (a password_file's
	 * content is read at call time). 0, or FP_EINVAL with *field set to the offending field
	 * ("spec.bmc.address", a static string) and err saying what is wrong; never the password
	 * nor URL user info in err. NULL: the driver accepts any spec. */
	int (*validate)(const struct node_bmc *spec, const char **field, char *err, size_t errlen);
	/* Ends every session the driver holds (Redfish DELETE of its sessions, IPMI Close
	 * Session) and frees the instance. */
	void (*free)(struct bmc *b);
};

/* A driver instance. `impl` belongs to the driver. Real drivers keep per-BMC sessions inside
 * impl, keyed by address, safe for calls from several executor threads (calls to one BMC are
 * serialised by the caller's per-BMC concurrency limit, default 1, but the driver must not
 * rely on it for memory safety). */
struct bmc {
	const struct bmc_driver_ops *ops;
	struct fp_clock *clock;
	void *impl;
};

/* Finds a compiled-in driver's ops by name; NULL if there is none. */
const struct bmc_driver_ops *bmc_driver_lookup(const char *name);

/* Wrappers: 0 on success, FP_EUNSUPPORTED, FP_ETIMEDOUT, FP_EBMC (the BMC answered with an
 * error), FP_EIO (could not reach it), FP_EAUTH (credentials refused), FP_EAGAIN (the BMC asked
 * to come back later: observed->retry_after_ms), FP_EINVAL (a request the BMC cannot take,
 * e.g. an action not in its allowable values: do not retry). */
int bmc_power_get(struct bmc *b, const struct bmc_target *t, int64_t deadline, enum bmc_power *out,
		  char *err, size_t errlen);
int bmc_power_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		  enum bmc_power_action a, char *err, size_t errlen);
int bmc_boot_get(struct bmc *b, const struct bmc_target *t, int64_t deadline, struct bmc_boot *out,
		 char *err, size_t errlen);
int bmc_boot_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		 const struct bmc_boot *want, char *err, size_t errlen);
int bmc_inventory(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
		  char *err, size_t errlen);
int bmc_chassis_status(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
		       char *err, size_t errlen);
int bmc_sel_read(struct bmc *b, const struct bmc_target *t, int64_t deadline, size_t max_entries,
		 json_t **out, char *err, size_t errlen);
int bmc_firmware_update(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			const struct bmc_firmware_req *req, json_t **out, char *err, size_t errlen);
/* Asks the node's agent to perform action ("gpu_reset"); see bmc_driver_ops.agent_action.
 * FP_EUNSUPPORTED when the driver has no channel to the agent. */
int bmc_agent_action(struct bmc *b, const struct bmc_target *t, const char *action,
		     int64_t deadline, char *err, size_t errlen);
/* Checks spec (borrowed) for its driver (spec->driver, looked up with bmc_driver_lookup):
 * 0 when it is fine or the driver has no validate op; FP_EINVAL with *field = "spec.bmc.<name>"
 * (a static string; "spec.bmc.driver" for an unknown driver) and a message in err naming the
 * field and what is wrong. Never blocks, never touches the network; safe from any thread. */
int bmc_spec_validate(const struct node_bmc *spec, const char **field, char *err, size_t errlen);
unsigned bmc_caps(const struct bmc *b);
void bmc_free(struct bmc *b);

#endif
