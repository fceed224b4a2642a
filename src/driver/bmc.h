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

enum bmc_power { BMC_POWER_UNKNOWN = 0, BMC_POWER_ON, BMC_POWER_OFF };
enum bmc_power_action { BMC_ACTION_ON = 1, BMC_ACTION_OFF, BMC_ACTION_CYCLE, BMC_ACTION_SOFT };
enum bmc_boot_device { BMC_BOOT_UNKNOWN = 0, BMC_BOOT_PXE, BMC_BOOT_DISK };

const char *bmc_power_name(enum bmc_power p);          /* "on" | "off" | "unknown" */
const char *bmc_action_name(enum bmc_power_action a);  /* "on" | "off" | "cycle" | "soft" */
const char *bmc_boot_name(enum bmc_boot_device d);     /* "pxe" | "disk" | "unknown" */
int bmc_action_parse(const char *s, enum bmc_power_action *out);

/* Capability flags a driver advertises. */
#define BMC_CAP_POWER (1u << 0)
#define BMC_CAP_BOOT_DEVICE (1u << 1)
#define BMC_CAP_INVENTORY (1u << 2)

/* What a call is aimed at: one node's BMC. Strings borrowed for the call. */
struct bmc_target {
	const char *node;     /* node name */
	const char *address;  /* host:port or URL; NULL for sim */
	const char *username;
	const char *password; /* secret: never logged or put in err */
	const json_t *extra;  /* driver-specific spec.bmc fields, or NULL */
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
			enum bmc_boot_device *out, int *persistent, char *err, size_t errlen);
	int (*boot_set)(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			enum bmc_boot_device d, int persistent, char *err, size_t errlen);
	/* *out: a new JSON object {"system":{...},"gpus":[...],...}; caller owns it. */
	int (*inventory)(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
			 char *err, size_t errlen);
	void (*free)(struct bmc *b);
};

/* A driver instance. `impl` belongs to the driver. */
struct bmc {
	const struct bmc_driver_ops *ops;
	struct fp_clock *clock;
	void *impl;
};

/* Finds a compiled-in driver's ops by name; NULL if there is none. */
const struct bmc_driver_ops *bmc_driver_lookup(const char *name);

/* Wrappers: 0 on success, FP_EUNSUPPORTED, FP_ETIMEDOUT, FP_EBMC (the BMC answered with an
 * error), FP_EIO (could not reach it). */
int bmc_power_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		  enum bmc_power *out, char *err, size_t errlen);
int bmc_power_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		  enum bmc_power_action a, char *err, size_t errlen);
int bmc_boot_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		 enum bmc_boot_device *out, int *persistent, char *err, size_t errlen);
int bmc_boot_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		 enum bmc_boot_device d, int persistent, char *err, size_t errlen);
int bmc_inventory(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
		  char *err, size_t errlen);
unsigned bmc_caps(const struct bmc *b);
void bmc_free(struct bmc *b);

#endif
