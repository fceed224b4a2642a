/* bmc_ipmi_parse.h - internal to the IPMI driver: the part of it that interprets bytes a BMC
 * sent without libfreeipmi's fiid templates, with no I/O, so that tests/fuzz/fuzz_ipmi_sel.c can
 * drive it. Everything else the driver reads from a BMC (Get Chassis Status, boot flags, Get
 * Device ID, Get SEL Info/Entry answers) is decoded by libfreeipmi's fiid templates into
 * fixed-width fields before the driver sees it. */
#ifndef FP_DRIVER_BMC_IPMI_PARSE_H
#define FP_DRIVER_BMC_IPMI_PARSE_H

#include <freeipmi/freeipmi.h>
#include <jansson.h>
#include <stdint.h>

#define IPMI_SEL_RECORD_LEN 16 /* IPMI 2.0 section 32: every SEL record is 16 bytes */

/* ipmi_sel_entry_json turns one 16-byte SEL record (IPMI 2.0 section 32: bytes 0-1 record id
 * little-endian, byte 2 record type, 3-6 timestamp, ...) into the SEL entry driver/bmc.h
 * describes: {"id", "timestamp" (RFC 3339, or null for pre-init/unspecified times and OEM
 * records without one), "sensorType", "sensorNumber"? and "eventType"? (system event records),
 * "message", "raw" (32 lowercase hex digits)}. Fields past the id and type are read with
 * libfreeipmi's SEL record helpers through sc, a parse-only context
 * (ipmi_sel_ctx_create(ipmi_ctx or NULL, NULL): no SDR, so sensors are named by type and
 * number). rec is borrowed; any byte values are accepted. Returns a new object; aborts on
 * out-of-memory. */
json_t *ipmi_sel_entry_json(ipmi_sel_ctx_t sc, const uint8_t *rec);

#endif
