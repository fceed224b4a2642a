/* bmc_ipmi.h - the "ipmi" BMC driver: IPMI 2.0 over LAN (RMCP+, "lanplus") through libfreeipmi
 * (https://www.gnu.org/software/freeipmi/), never a shell-out to ipmitool. docs/driver-ipmi.md
 * is the operator's view: what it does, the spec.bmc fields it reads, quirks, errors.
 *
 * One RMCP+ session per BMC address + user is kept open and reused by later calls (thread-safe;
 * calls to one BMC are serialised inside the driver), reopened after an error, when the call's
 * deadline is shorter than the session's command timeout, or after it has been idle long enough
 * that the BMC may have dropped it. Every FreeIPMI timeout is derived from the call's deadline. */
#ifndef FP_DRIVER_BMC_IPMI_H
#define FP_DRIVER_BMC_IPMI_H

#include <stdint.h>

#include "driver/bmc.h"

extern const struct bmc_driver_ops bmc_ipmi_ops;

/* Creates the driver instance. clock (borrowed, must outlive the instance) gives the monotonic
 * milliseconds that call deadlines are expressed in. Never NULL (aborts on OOM). Free with
 * bmc_free, which closes every session (IPMI 2.0 section 22.19, Close Session). */
struct bmc *bmc_ipmi_new(struct fp_clock *clock);

/* Counters of one instance, for tests and debugging. */
struct bmc_ipmi_stats {
	uint64_t sessions_opened; /* RMCP+ sessions successfully opened, ever */
	uint64_t sessions_open;   /* sessions open now */
	uint64_t commands;        /* IPMI commands sent on an open session (answered or not) */
};

/* Fills *out with b's counters (b must come from bmc_ipmi_new). */
void bmc_ipmi_stats(struct bmc *b, struct bmc_ipmi_stats *out);

#endif
