/* bmc_redfish.h - the Redfish BMC driver (DMTF DSP0266 protocol, DSP8010 schemas) over libcurl
 * and jansson. docs/driver-redfish.md says what it reads, sends and assumes. */
#ifndef FP_DRIVER_BMC_REDFISH_H
#define FP_DRIVER_BMC_REDFISH_H

#include "base/clock.h"
#include "driver/bmc.h"

/* The ops table, found by bmc_driver_lookup("redfish"). */
extern const struct bmc_driver_ops bmc_redfish_ops;

/* bmc_redfish_new returns a driver instance that talks to any number of BMCs. target->address
 * is a URL "http://host[:port]" or "https://host[:port]" (an optional trailing "/"; no user
 * info, path, query or fragment); anything else fails the call with FP_EINVAL naming what is
 * wrong. Per BMC (address + username) it keeps one libcurl easy handle (keep-alive) and one
 * Redfish session, both behind the BMC's own lock, so calls from several executor threads are
 * safe. `clock` is borrowed, must outlive the instance, and gives the deadlines' time base and
 * the waits (Retry-After, task polling). Calls libcurl's global init once per process. Free
 * with bmc_free(), which DELETEs the sessions it holds. Aborts on out-of-memory. */
struct bmc *bmc_redfish_new(struct fp_clock *clock);

#endif
