/* agent/kernlog.h - parser of Linux kernel log lines for GPU faults: NVIDIA XID (NVRM),
 * NVSwitch SXID, "GPU has fallen off the bus" (with and without an XID, single- and multi-line),
 * NVLink errors and PCIe AER (fatal / non-fatal / correctable).
 *
 * Accepted line formats (every one seen in tests/data/kernel with its source):
 *   raw /dev/kmsg records   "4,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, ..."
 *                           (Documentation/ABI/testing/dev-kmsg: prio,seq,usec,flags;msg)
 *   dmesg                   bare, "[ 1234.567890] ", ctime "[Mon Nov 30 10:00:00 2026] ",
 *                           iso "2026-11-30T10:00:00,123456+00:00 ", delta "[  +0.000123] ",
 *                           --decode "kern  :err   : " prefixes
 *   syslog / journal        "Nov 30 10:00:00 host kernel: [ 12.3] NVRM: ..." and "kernel: ..."
 * Facts about XID/SXID wording come from NVIDIA's "XID Errors" (docs.nvidia.com/deploy/xid-errors)
 * and the NVSwitch Fabric Manager user guide (SXID section); AER wording from the kernel's
 * drivers/pci/pcie/aer.c.
 *
 * Pure: no I/O, no allocation per line after kernlog_parser_new; safe on any bytes (fuzzed by
 * tests/fuzz/fuzz_kernlog.c). */
#ifndef FP_AGENT_KERNLOG_H
#define FP_AGENT_KERNLOG_H

#include <stddef.h>
#include <stdint.h>

#include "agent/finding.h"

enum kernlog_kind {
	KERNLOG_NONE = 0,
	KERNLOG_XID,            /* code "xid:<n>"; Xid 154 the recovery action's code */
	KERNLOG_SXID,           /* code "sxid:<n>" */
	KERNLOG_FALLEN_OFF_BUS, /* code "gpu:fallen_off_bus" (no XID on the line or record) */
	KERNLOG_NVLINK,         /* code "nvlink:error" */
	KERNLOG_AER,            /* code "aer:fatal" | "aer:nonfatal" | "aer:correctable" */
};

#define KERNLOG_RAW_LEN 1024
#define KERNLOG_MSG_LEN 512
/* Largest XID/SXID number accepted (NVRM prints "%d", NVSwitch "%05d"); a line with a larger
 * or longer number gives no event. */
#define KERNLOG_XID_MAX 999999

struct kernlog_event {
	enum kernlog_kind kind;
	char code[FINDING_CODE_LEN];
	int xid; /* XID or SXID number; -1 when none */
	/* Xid 154 only: the recovery action it changed to (enum agent_recovery, the hex number
	 * of "... to 0x1 (GPU Reset Required)"), -1 otherwise or unreadable. Its code is then
	 * agent_recovery_code's ("gpu:reset_required", ...), or "xid:154" for None / unknown. */
	int recovery_action;
	char pci_bus_id
		[FINDING_BUS_ID_LEN]; /* normalised "0000:3b:00.0" (NVRM prints PCI:0000:3b:00:
				  * function 0 is added); "" unknown */
	int gpu_index;         /* -1 unknown: always, as no kernel line says (NVRM's "GPU4" is
				  * RM's own numbering, not nvidia-smi's); the agent maps the bus id */
	char device[32];       /* NVSwitch device ("nvidia-nvswitch3") for SXID, "" otherwise */
	long pid;              /* -1 unknown */
	char process[64];      /* "" unknown */
	char aer_severity[16]; /* AER: "fatal" | "nonfatal" | "correctable"; "" otherwise */
	char message[KERNLOG_MSG_LEN]; /* the message after the timestamp/host/facility prefixes
					* (a multi-line record's lines joined with ' ', kmsg "\x0a"
					* escapes as ' ') */
	char raw[KERNLOG_RAW_LEN];     /* the whole first line as read (without its newline and
					* trailing blanks), truncated */
	int64_t time_ms;   /* absolute wall time (Unix ms, UTC) from a ctime/iso/syslog prefix;
				  * 0 when the line has none (syslog lines have no year: the parser
				  * takes the year from the `now_ms` given to kernlog_parser_new) */
	int64_t uptime_us; /* "[ 1234.567890]" or the kmsg usec field; -1 unknown */
	uint64_t seq;      /* kmsg sequence number; valid when has_seq */
	int has_seq;
	char host[64]; /* syslog host; "" otherwise */
	/* Every string field is NUL-terminated, cut on a character boundary and valid UTF-8: tabs
	 * become ' ', other control bytes and invalid UTF-8 '?'. */
};

struct kernlog_parser;

/* Returns a parser (free with kernlog_parser_free; never NULL, allocation failure aborts). now_ms
 * (Unix ms) supplies the year for syslog timestamps, which carry none. kernlog_parser_free(NULL)
 * is a no-op. */
struct kernlog_parser *kernlog_parser_new(int64_t now_ms);
void kernlog_parser_free(struct kernlog_parser *p);

/* Feeds one line (with or without its '\n'; len bytes, any content, NUL bytes included; bytes
 * after a '\n' are ignored). Some records span lines (the multi-line fallen-off-bus form): an
 * event may be completed by a later line or by kernlog_flush. Writes up to 2 completed events
 * to out and returns how many (0, 1 or 2). Lines that are not GPU/PCIe faults return 0. Never
 * fails. Unlike kernlog_parse_line it knows the lines before: the "PCIe Bus Error" and other
 * detail lines that follow an AER "error received" header are part of that header's event and
 * give none, and the continuation lines of "NVRM: The NVIDIA GPU <bdf>" complete one
 * fallen-off-bus event with that bus id. The rules (SXid detail records, malformed numbers,
 * unknown fields) are in kernlog.c's file comment. */
int kernlog_feed(struct kernlog_parser *p, const char *line, size_t len,
		 struct kernlog_event out[2]);
/* End of input: completes a pending multi-line record. Returns 0 or 1 events in out. Today a
 * record is reported on the line that completes it, so this returns 0; it drops an unfinished
 * "The NVIDIA GPU <bdf>" record (it never said "fallen off the bus") and ends an open AER
 * record, so the parser can be fed again. */
int kernlog_flush(struct kernlog_parser *p, struct kernlog_event out[2]);

/* Stateless one-line form for tests and the fuzzer: returns 1 and fills *out when the line is a
 * single-line fault record, else 0 (out may then hold scratch). now_ms as for
 * kernlog_parser_new. */
int kernlog_parse_line(const char *line, size_t len, int64_t now_ms, struct kernlog_event *out);

#endif
