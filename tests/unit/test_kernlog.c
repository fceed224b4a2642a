/* layers: base core agent */
/* test_kernlog.c - the kernel log parser (agent/kernlog.h) on every real kernel line in
 * tests/data/kernel (SOURCES.md there says where each comes from): one table row per fault line
 * and per line that belongs to a fault record, with every expected field written by hand from
 * the line; each whole file fed through kernlog_feed/kernlog_flush with the exact count of
 * events per code; then the multi-line and AER record rules, and malformed, truncated and
 * over-long input (hand-made, labelled as such). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/kernlog.h"

#include "base/banned.h"

/* 2026-11-30T10:00:00Z: supplies the year of syslog stamps ("Nov 29 11:28:11" is 2026). */
#define NOW_MS 1796032800000LL

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

/* Reads tests/data/kernel/<name> whole (NUL-terminated); the caller frees it. */
static char *slurp(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/data/kernel/%s", srcdir(), name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	char *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Line lineno (1-based) of file, without its '\n'; the caller frees it. */
static char *file_line(const char *file, int lineno)
{
	size_t len;
	char *buf = slurp(file, &len);
	char *p = buf;
	for (int i = 1; i < lineno && p; i++) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	assert_non_null(p);
	char *e = strchr(p, '\n');
	size_t n = e ? (size_t)(e - p) : strlen(p);
	char *out = malloc(n + 1);
	assert_non_null(out);
	memcpy(out, p, n);
	out[n] = '\0';
	free(buf);
	return out;
}

struct row {
	const char *file;
	int lineno;
	const char *line;
	int n; /* kernlog_parse_line's answer */
	enum kernlog_kind kind;
	const char *code;
	int xid;
	const char *pci;
	long pid;
	const char *process;
	int64_t time_ms;
	int64_t uptime_us;
	const char *device;
	const char *aer_severity;
	const char *host;
};

/* Every fault line of tests/data/kernel, and the lines of the multi-line fallen-off-bus record
 * and SXid detail records (n = 0). The line literals are the files' lines (checked below). */
static const struct
	row
		rows
			[] =
				{
					{"xid-and-gpu-kernel-lines-from-issues.log", 6,
					 "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0", 0,
					 KERNLOG_NONE, "", -1, "", -1, "", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 7,
					 "               NVRM: (PCI ID: 10de:26b5) installed in this system has",
					 0, KERNLOG_NONE, "", -1, "", -1, "", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 8,
					 "               NVRM: fallen off the bus and is not responding to commands.",
					 1, KERNLOG_FALLEN_OFF_BUS, "gpu:fallen_off_bus", -1, "",
					 -1, "", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 12,
					 "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
					 1, KERNLOG_XID, "xid:79", 79, "0000:44:00.0", -1, "", 0,
					 -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 15,
					 "[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
					 1, KERNLOG_FALLEN_OFF_BUS, "gpu:fallen_off_bus", -1,
					 "0000:01:00.0", -1, "", 0, 49261458, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 18,
					 "[   49.261472] NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
					 1, KERNLOG_FALLEN_OFF_BUS, "gpu:fallen_off_bus", -1,
					 "0000:01:00.0", -1, "", 0, 49261472, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 22,
					 "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
					 1, KERNLOG_XID, "xid:13", 13, "0000:cb:00.0", -1, "",
					 1725018189000LL, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 23,
					 "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception on (GPC 7, TPC 7, SM 0): Multiple Warp Errors",
					 1, KERNLOG_XID, "xid:13", 13, "0000:cb:00.0", -1, "",
					 1725018189000LL, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 24,
					 "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 0x57c728=0x1f81fb60 0x57c72c=0x1174",
					 1, KERNLOG_XID, "xid:13", 13, "0000:cb:00.0", -1, "",
					 1725018189000LL, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 25,
					 "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
					 1, KERNLOG_XID, "xid:109", 109, "0000:cb:00.0", 1797828,
					 "pt_main_thread", 1725018194000LL, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 30,
					 "[Sun Apr 26 23:12:26 2026] NVRM: Xid (PCI:0001:6c:00): 119, pid=10200, name=NvmlTaskRunner, Timeout after 45s of waiting for RPC response from GPU5 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 24174 (0x20801322 0x808).",
					 1, KERNLOG_XID, "xid:119", 119, "0001:6c:00.0", 10200,
					 "NvmlTaskRunner", 1777245146000LL, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 34,
					 "[Sun Apr 26 23:13:11 2026] NVRM: Xid (PCI:0001:96:00): 119, pid=10200, name=NvmlTaskRunner, Timeout after 45s of waiting for RPC response from GPU6 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 23837 (0x20810108 0x3e0).",
					 1, KERNLOG_XID, "xid:119", 119, "0001:96:00.0", 10200,
					 "NvmlTaskRunner", 1777245191000LL, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 38,
					 "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
					 1, KERNLOG_XID, "xid:45", 45, "0000:dc:00.0", 1818990,
					 "python3", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 39,
					 "kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by previous Xid 145",
					 1, KERNLOG_XID, "xid:45", 45, "0000:ed:00.0", 1818992,
					 "python3", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 40,
					 "kernel: NVRM: Xid (PCI:0000:ba:00): 45, pid=1818989, name=python3, Ch 00000002 caused by previous Xid 145",
					 1, KERNLOG_XID, "xid:45", 45, "0000:ba:00.0", 1818989,
					 "python3", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 41,
					 "kernel: NVRM: Xid (PCI:0000:97:00): 45, pid=1818987, name=python3, Ch 00000003 caused by previous Xid 145",
					 1, KERNLOG_XID, "xid:45", 45, "0000:97:00.0", 1818987,
					 "python3", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 42,
					 "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000002 caused by previous Xid 149",
					 1, KERNLOG_XID, "xid:45", 45, "0000:dc:00.0", 1818990,
					 "python3", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 43,
					 "kernel: NVRM: Xid (PCI:0000:ba:00): 45, pid=1818989, name=python3, Ch 00000003 caused by previous Xid 145",
					 1, KERNLOG_XID, "xid:45", 45, "0000:ba:00.0", 1818989,
					 "python3", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 44,
					 "kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 00000001 caused by previous Xid 145",
					 1, KERNLOG_XID, "xid:45", 45, "0000:ed:00.0", 1818992,
					 "python3", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 47,
					 "NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)",
					 1, KERNLOG_XID, "xid:144", 144, "0000:01:00.0", -1,
					 "", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 48,
					 "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
					 1, KERNLOG_XID, "xid:149", 149, "0000:00:00.0", -1,
					 "", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 49,
					 "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
					 1, KERNLOG_XID, "xid:149", 149, "0000:00:00.0", -1,
					 "", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 50,
					 "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
					 1, KERNLOG_XID, "xid:149", 149, "0019:01:00.0", -1,
					 "", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 51,
					 "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
					 1, KERNLOG_XID, "xid:145", 145, "0018:01:00.0", -1,
					 "", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 52,
					 "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error",
					 1, KERNLOG_XID, "xid:94", 94, "0000:9b:00.0", 1234,
					 "python3", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 55,
					 "[1231741.378609] NVRM: Xid (PCI:0009:01:00): 43, pid=3188489, name=trigger_xid, channel 0x0b00000a",
					 1, KERNLOG_XID, "xid:43", 43, "0009:01:00.0", 3188489,
					 "trigger_xid", 0, 1231741378609LL, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 58,
					 "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
					 1, KERNLOG_XID, "xid:63", 63, "0000:10:1c.0", 1896, "", 0,
					 -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 61,
					 "NVRM: Xid (PCI:0000:01:00): 31, Ch 0000005a, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_1 faulted @ 0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_READ",
					 1, KERNLOG_XID, "xid:31", 31, "0000:01:00.0", -1, "", 0,
					 -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 63,
					 "[31543.449443] NVRM: Xid (PCI:0000:01:00): 31, Ch 0000003a, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x17_00592000. Fault is of type FAULT_PDE ACCESS_TYPE_READ",
					 1, KERNLOG_XID, "xid:31", 31, "0000:01:00.0", -1, "", 0,
					 31543449443LL, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 64,
					 "[31609.615230] NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: Class 0x0 Subchannel 0x0 Mismatch",
					 1, KERNLOG_XID, "xid:13", 13, "0000:01:00.0", -1, "", 0,
					 31609615230LL, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 65,
					 "[31609.615231] NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ESR 0x4041b0=0x0",
					 1, KERNLOG_XID, "xid:13", 13, "0000:01:00.0", -1, "", 0,
					 31609615231LL, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 66,
					 "[31609.615232] NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ESR 0x404000=0x80000002",
					 1, KERNLOG_XID, "xid:13", 13, "0000:01:00.0", -1, "", 0,
					 31609615232LL, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 67,
					 "[31609.615374] NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ChID 0052, Class 00000000, Offset 00001b0c, Data 1000f010",
					 1, KERNLOG_XID, "xid:13", 13, "0000:01:00.0", -1, "", 0,
					 31609615374LL, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 68,
					 "[31609.615516] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000052 intr 02000000",
					 1, KERNLOG_XID, "xid:32", 32, "0000:01:00.0", -1, "", 0,
					 31609615516LL, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 74,
					 "[  365.969681] NVRM: Xid (PCI:0000:01:00): 31, pid=13705, name=UnrealEditor, channel 0x0000000c, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_PROP_0 faulted @ 0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
					 1, KERNLOG_XID, "xid:31", 31, "0000:01:00.0", 13705,
					 "UnrealEditor", 0, 365969681, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 78,
					 "Nov 29 11:28:11 node001 kernel: NVRM: Xid (PCI:0000:c1:00): 31, pid=12890, Ch 0000003b, intr 00000000. MMU Fault: ENGINE HOST0 HUBCLIENT_HOST_CPU faulted @ 0x1_0c3c0000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE",
					 1, KERNLOG_XID, "xid:31", 31, "0000:c1:00.0", 12890, "",
					 1795951691000LL, -1, "", "", "node001"},
					{"xid-and-gpu-kernel-lines-from-issues.log", 79,
					 "Nov 29 11:28:11 node001 kernel: NVRM: Xid (PCI:0000:c1:00): 31, pid=12890, Ch 0000003e, intr 00000000. MMU Fault: ENGINE GRAPHICS HUBCLIENT_SCC faulted @ 0x1_8c710000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ",
					 1, KERNLOG_XID, "xid:31", 31, "0000:c1:00.0", 12890, "",
					 1795951691000LL, -1, "", "", "node001"},
					{"xid-and-gpu-kernel-lines-from-issues.log", 83,
					 "NVRM: Xid (PCI:0000:08:00): 31, pid=169800, name=chrome, Ch 00000023, intr 00000000. MMU Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ 0x0_0abe0000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ",
					 1, KERNLOG_XID, "xid:31", 31, "0000:08:00.0",
					 169800, "chrome", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 84,
					 "NVRM: Xid (PCI:0000:08:00): 31, pid=174421, name=chrome, Ch 00000023, intr 00000000. MMU Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ 0x0_0abe0000. Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ",
					 1, KERNLOG_XID, "xid:31", 31, "0000:08:00.0",
					 174421, "chrome", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 87,
					 "pcieport 0000:00:01.2: AER: Uncorrectable (Non-Fatal) error received from 0000:63:00.0",
					 1, KERNLOG_AER, "aer:nonfatal", -1, "0000:63:00.0",
					 -1, "", 0, -1, "", "nonfatal", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 88,
					 "snd_hda_intel 0000:63:00.1: PCIe Bus Error: Uncorrectable (Non-Fatal), type=Transaction Layer",
					 1, KERNLOG_AER, "aer:nonfatal", -1, "0000:63:00.1",
					 -1, "", 0, -1, "", "nonfatal", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 93,
					 "NVRM: Xid (PCI:0000:63:00): 31, name=plasmashell, MMU Fault: ENGINE GR_HOST0 HUBCLIENT_ESC0 ... FAULT_PDE",
					 1, KERNLOG_XID, "xid:31", 31, "0000:63:00.0",
					 -1, "plasmashell", 0, -1, "", "", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 99,
					 "[  +0.000001] pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: 0000:00:03.0",
					 1, KERNLOG_AER, "aer:fatal", -1, "0000:00:03.0", -1, "", 0,
					 -1, "", "fatal", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 100,
					 "[  +0.000004] pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)",
					 1, KERNLOG_AER, "aer:fatal", -1, "0000:00:03.0", -1, "", 0,
					 -1, "", "fatal", ""},
					{"xid-and-gpu-kernel-lines-from-issues.log", 110,
					 "Sep 19 16:18:02 node002 kernel: [68183.615790] pcieport 0000:00:03.1: AER: Correctable error message received from 0000:00:00.0",
					 1, KERNLOG_AER, "aer:correctable", -1, "0000:00:00.0", -1,
					 "", 1789834682000LL, 68183615790LL, "", "correctable",
					 "node002"},
					{"xid-and-gpu-kernel-lines-from-issues.log", 111,
					 "Sep 19 16:18:02 node002 kernel: [68183.615810] pcieport 0000:00:03.1: PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Transmitter ID)",
					 1, KERNLOG_AER, "aer:correctable", -1, "0000:00:03.1", -1,
					 "", 1789834682000LL, 68183615810LL, "", "correctable",
					 "node002"},
					{"xid-and-gpu-kernel-lines-from-issues.log", 114,
					 "Sep 19 16:18:02 node002 kernel: [68183.637883] pcieport 0000:00:03.1: AER: Correctable error message received from 0000:00:00.0",
					 1, KERNLOG_AER, "aer:correctable", -1, "0000:00:00.0", -1,
					 "", 1789834682000LL, 68183637883LL, "", "correctable",
					 "node002"},
					{"xid-and-gpu-kernel-lines-from-issues.log", 115,
					 "Sep 19 16:18:02 node002 kernel: [68183.637897] pcieport 0000:00:03.1: PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Receiver ID)",
					 1, KERNLOG_AER, "aer:correctable", -1, "0000:00:03.1", -1,
					 "", 1789834682000LL, 68183637897LL, "", "correctable",
					 "node002"},
					{"dmesg-xid119-gsp-timeout.log", 3,
					 "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).",
					 1, KERNLOG_XID, "xid:119", 119, "0000:9b:00.0", 2024380,
					 "nvidia-smi", 1740327858000LL, -1, "", "", ""},
					{"dmesg-xid119-gsp-timeout.log", 38,
					 "[Sun Feb 23 16:24:24 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 10 (FREE) (0xa55a0210 0x0).",
					 1, KERNLOG_XID, "xid:119", 119, "0000:9b:00.0", 2024380,
					 "nvidia-smi", 1740327864000LL, -1, "", "", ""},
					{"dmesg-xid119-gsp-timeout.log", 40,
					 "[Sun Feb 23 16:24:30 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 10 (FREE) (0xa55a0090 0x0).",
					 1, KERNLOG_XID, "xid:119", 119, "0000:9b:00.0", 2024380,
					 "nvidia-smi", 1740327870000LL, -1, "", "", ""},
					{"dmesg-xid119-gsp-timeout.log", 42,
					 "[Sun Feb 23 16:27:12 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=1263500, name=cache_mgr_main, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c).",
					 1, KERNLOG_XID, "xid:119", 119, "0000:9b:00.0", 1263500,
					 "cache_mgr_main", 1740328032000LL, -1, "", "", ""},
					{"dmesg-xid119-gsp-timeout.log", 43,
					 "[Sun Feb 23 16:30:13 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=1240590, name=gpud, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20803032 0x58c).",
					 1, KERNLOG_XID, "xid:119", 119, "0000:9b:00.0", 1240590,
					 "gpud", 1740328213000LL, -1, "", "", ""},
					{"dmesg-decode-iso-xid13-xid43.log", 1, "kern  :warn  : 2025-01-21T02:21:33,499870+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x555f30=0x11f000e 0x555f34=0x24 0x555f28=0xf81eb60 0x555f2c=0x1174",
					 1, KERNLOG_XID, "xid:13", 13, "0000:38:00.0", -1,
					 "", 1737426093499LL, -1, "", "", ""},
					{"dmesg-decode-iso-xid13-xid43.log", 2,
					 "kern  :warn  : 2025-01-21T02:21:33,500051+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 10, TPC 5, SM 0): Out Of Range Address",
					 1, KERNLOG_XID, "xid:13", 13, "0000:38:00.0", -1,
					 "", 1737426093500LL, -1, "", "", ""},
					{"dmesg-decode-iso-xid13-xid43.log", 3,
					 "kern  :warn  : 2025-01-21T02:21:33,500140+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception on (GPC 10, TPC 5, SM 0): Multiple Warp Errors",
					 1, KERNLOG_XID, "xid:13", 13, "0000:38:00.0", -1,
					 "", 1737426093500LL, -1, "", "", ""},
					{"dmesg-decode-iso-xid13-xid43.log", 4,
					 "kern  :warn  : 2025-01-21T02:21:33,500227+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x556f30=0x116000e 0x556f34=0x24 0x556f28=0xf81eb60 0x556f2c=0x1174",
					 1, KERNLOG_XID, "xid:13", 13, "0000:38:00.0", -1, "",
					 1737426093500LL, -1, "", "", ""},
					{"dmesg-decode-iso-xid13-xid43.log", 5,
					 "kern  :warn  : 2025-01-21T02:21:33,502278+00:00 NVRM: Xid (PCI:0000:38:00): 43, pid=2815167, name=pt_main_thread, Ch 00000008",
					 1, KERNLOG_XID, "xid:43", 43, "0000:38:00.0", 2815167,
					 "pt_main_thread", 1737426093502LL, -1, "", "", ""},
					{"dmesg-decode-iso-sxid.log", 1,
					 "kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, 0x00000000, 0x00000000}",
					 0, KERNLOG_NONE, "", -1, "", -1, "", 0, -1, "", "", ""},
					{"sxid-nvswitch-h100-tdx.log", 2,
					 "[   38.175561] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b, 0x0000002b, 0x00000000, 0x0000002b, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
					 0, KERNLOG_NONE, "", -1, "", -1, "", 0, -1, "", "", ""},
					{"sxid-nvswitch-h100-tdx.log", 3,
					 "[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt",
					 1, KERNLOG_SXID, "sxid:22013", 22013, "0000:04:00.0", -1,
					 "", 0, 38178720, "nvidia-nvswitch3", "", ""},
					{"sxid-nvswitch-h100-tdx.log", 4,
					 "[   38.180708] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 44 Sub-engine instance 00",
					 0, KERNLOG_NONE, "", -1, "", -1, "", 0, -1, "", "", ""},
					{"sxid-nvswitch-h100-tdx.log", 5,
					 "[   38.183583] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002c, 0x0000002c, 0x00000000, 0x0000002c, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
					 0, KERNLOG_NONE, "", -1, "", -1, "", 0, -1, "", "", ""},
					{"sxid-nvswitch-h100-tdx.log", 6,
					 "[   38.187830] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 45 Minion Link DLREQ interrupt",
					 1, KERNLOG_SXID, "sxid:22013", 22013, "0000:04:00.0", -1,
					 "", 0, 38187830, "nvidia-nvswitch3", "", ""},
					{"sxid-nvswitch-h100-tdx.log", 7,
					 "[   38.189818] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 45 Sub-engine instance 00",
					 0, KERNLOG_NONE, "", -1, "", -1, "", 0, -1, "", "", ""},
					{"sxid-nvswitch-h100-tdx.log", 8,
					 "[   38.191863] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002d, 0x0000002d, 0x00000000, 0x0000002d, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
					 0, KERNLOG_NONE, "", -1, "", -1, "", 0, -1, "", "", ""},
					{"sxid-nvswitch-h100-tdx.log", 9,
					 "[   38.194959] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 46 Minion Link DLREQ interrupt",
					 1, KERNLOG_SXID, "sxid:22013", 22013, "0000:04:00.0", -1,
					 "", 0, 38194959, "nvidia-nvswitch3", "", ""},
					{"nvlink-kernel-lines.log", 1,
					 "[449410.332316] NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
					 1, KERNLOG_XID, "xid:74", 74, "0003:00:00.0", -1, "", 0,
					 449410332316LL, "", "", ""},
					{"nvlink-kernel-lines.log", 2,
					 "Jul 09 10:42:47 node003 kernel: NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!",
					 1, KERNLOG_NVLINK, "nvlink:error", -1, "", -1, "",
					 1783593767000LL, -1, "", "", "node003"},
					{"xid48-dbe-syslog-gpu-operator-1146.log", 1,
					 "Dec  2 11:38:47 node001 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.",
					 /* Dec 2 of 2026 would be after NOW_MS (2026-11-30) by more than a day: 2025-12-02 */
					 1, KERNLOG_XID, "xid:48", 48, "0000:07:00.0", -1, "",
					 1764675527000LL, 219470994, "", "", "node001"},
					{"xid-redacted-bus-nccl-2241.log", 2,
					 "kernel: NVRM: Xid (PCI:...): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)",
					 1, KERNLOG_XID, "xid:145", 145, "", -1, "", 0, -1, "", "",
					 ""},
					{"xid-redacted-bus-nccl-2241.log", 3,
					 "kernel: NVRM: Xid (PCI:...): 137, RLW_RXPIPE interrupt hit on link 11 on GPU0: PRIV Error",
					 1, KERNLOG_XID, "xid:137", 137, "", -1, "", 0, -1, "", "",
					 ""},
};

static const size_t nrows = sizeof(rows) / sizeof(rows[0]);

static void check_row(const struct row *r)
{
	struct kernlog_event ev;
	char *from_file = file_line(r->file, r->lineno);
	if (strcmp(from_file, r->line) != 0)
		fail_msg("%s:%d is not the row's line", r->file, r->lineno);
	free(from_file);
	int n = kernlog_parse_line(r->line, strlen(r->line), NOW_MS, &ev);
	if (n != r->n)
		fail_msg("%s:%d: parse_line gave %d events, want %d", r->file, r->lineno, n, r->n);
	if (n == 0)
		return;
	assert_int_equal(ev.kind, r->kind);
	assert_string_equal(ev.code, r->code);
	assert_int_equal(ev.xid, r->xid);
	assert_string_equal(ev.pci_bus_id, r->pci);
	assert_int_equal(ev.gpu_index, -1);
	assert_int_equal(ev.pid, r->pid);
	assert_string_equal(ev.process, r->process);
	assert_int_equal(ev.time_ms, r->time_ms);
	assert_int_equal(ev.uptime_us, r->uptime_us);
	assert_string_equal(ev.device, r->device);
	assert_string_equal(ev.aer_severity, r->aer_severity);
	assert_string_equal(ev.host, r->host);
	assert_int_equal(ev.has_seq, 0);
	assert_string_equal(ev.raw, r->line);
}

static void test_real_lines(void **state)
{
	for (size_t i = 0; i < nrows; i++)
		check_row(&rows[i]);
}

static const char *const files[] = {
	"xid-and-gpu-kernel-lines-from-issues.log",
	"dmesg-xid119-gsp-timeout.log",
	"dmesg-nvidia-peermem.log",
	"kmsg-raw-nvswitch.log",
	"fabricmanager-h100.log",
	"sxid-nvswitch-h100-tdx.log",
	"dmesg-decode-iso-sxid.log",
	"dmesg-decode-iso-xid13-xid43.log",
	"nvlink-kernel-lines.log",
	"xid-redacted-bus-nccl-2241.log",
	"xid48-dbe-syslog-gpu-operator-1146.log",
};

/* Every line of every file that kernlog_parse_line reports has a row in the table. */
static void test_every_fault_line_has_a_row(void **state)
{
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		size_t len;
		char *buf = slurp(files[f], &len);
		int lineno = 0;
		for (char *p = buf; p < buf + len; lineno++) {
			char *e = memchr(p, '\n', (size_t)(buf + len - p));
			size_t n = e ? (size_t)(e - p) : (size_t)(buf + len - p);
			struct kernlog_event ev;
			if (kernlog_parse_line(p, n, NOW_MS, &ev)) {
				int found = 0;
				for (size_t i = 0; i < nrows; i++)
					if (strcmp(rows[i].file, files[f]) == 0 &&
					    rows[i].lineno == lineno + 1 && rows[i].n == 1)
						found = 1;
				if (!found)
					fail_msg("%s:%d gives an event but has no row", files[f],
						 lineno + 1);
			}
			p = e ? e + 1 : buf + len;
		}
		free(buf);
	}
}

struct count {
	const char *code;
	int n;
};

/* Feeds file line by line, then flushes; checks the events per code are exactly want (a list
 * ending with {NULL, 0}) and returns the first event (for callers that look closer). */
static void feed_file(const char *file, const struct count *want, struct kernlog_event *first)
{
	size_t len;
	char *buf = slurp(file, &len);
	struct kernlog_parser *p = kernlog_parser_new(NOW_MS);
	struct kernlog_event out[2];
	int got[32] = {0}, total = 0, nwant = 0, want_total = 0;
	while (want[nwant].code) {
		want_total += want[nwant].n;
		nwant++;
	}
	for (char *s = buf; s < buf + len;) {
		char *e = memchr(s, '\n', (size_t)(buf + len - s));
		size_t n = e ? (size_t)(e - s) + 1 : (size_t)(buf + len - s);
		int k = kernlog_feed(p, s, n, out);
		assert_in_range(k, 0, 2);
		for (int i = 0; i < k; i++) {
			int j;
			for (j = 0; j < nwant; j++)
				if (strcmp(out[i].code, want[j].code) == 0)
					break;
			if (j == nwant)
				fail_msg("%s: unexpected event %s from %s", file, out[i].code,
					 out[i].raw);
			if (total == 0 && first)
				*first = out[i];
			got[j]++;
			total++;
		}
		s += n;
	}
	assert_int_equal(kernlog_flush(p, out), 0);
	kernlog_parser_free(p);
	free(buf);
	for (int j = 0; j < nwant; j++)
		if (got[j] != want[j].n)
			fail_msg("%s: %d events %s, want %d", file, got[j], want[j].code,
				 want[j].n);
	assert_int_equal(total, want_total);
}

static void test_files_feed_counts(void **state)
{
	/* Hand-counted from the files: Xid lines per number; the NVSentinel #155 three-line record
	 * and the two Bumblebee lines are the 3 fallen-off-bus events; one AER event per "error
	 * received" header (the "PCIe Bus Error" lines after them are the same records). */
	static const struct count issues[] = {{"gpu:fallen_off_bus", 3},
					      {"xid:79", 1},
					      {"xid:13", 7},
					      {"xid:109", 1},
					      {"xid:119", 2},
					      {"xid:45", 7},
					      {"xid:144", 1},
					      {"xid:149", 3},
					      {"xid:145", 1},
					      {"xid:94", 1},
					      {"xid:43", 1},
					      {"xid:63", 1},
					      {"xid:31", 8},
					      {"xid:32", 1},
					      {"aer:nonfatal", 1},
					      {"aer:fatal", 1},
					      {"aer:correctable", 2},
					      {NULL, 0}};
	struct kernlog_event first;
	feed_file("xid-and-gpu-kernel-lines-from-issues.log", issues, &first);
	/* the multi-line record: its bus id is on its first line, so is its uptime */
	assert_string_equal(first.code, "gpu:fallen_off_bus");
	assert_string_equal(first.pci_bus_id, "0000:b3:00.0");
	assert_int_equal(first.uptime_us, 1843308145LL);
	assert_string_equal(first.raw, "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0");
	assert_string_equal(
		first.message,
		"NVRM: The NVIDIA GPU 0000:b3:00.0 NVRM: (PCI ID: 10de:26b5) installed in this "
		"system has NVRM: fallen off the bus and is not responding to commands.");

	static const struct count gsp[] = {{"xid:119", 5}, {NULL, 0}};
	feed_file("dmesg-xid119-gsp-timeout.log", gsp, NULL);
	static const struct count none[] = {{NULL, 0}};
	feed_file("dmesg-nvidia-peermem.log", none, NULL);
	feed_file("kmsg-raw-nvswitch.log", none, NULL);
	feed_file("fabricmanager-h100.log", none, NULL);
	/* three SXid errors, each printed as Data/Non-fatal/Severity records: one event each */
	static const struct count sxid[] = {{"sxid:22013", 3}, {NULL, 0}};
	feed_file("sxid-nvswitch-h100-tdx.log", sxid, NULL);
	/* a lone "Data {...}" detail record of SXid 12028 */
	feed_file("dmesg-decode-iso-sxid.log", none, NULL);
	static const struct count iso[] = {{"xid:13", 4}, {"xid:43", 1}, {NULL, 0}};
	feed_file("dmesg-decode-iso-xid13-xid43.log", iso, NULL);
	static const struct count nvl[] = {{"xid:74", 1}, {"nvlink:error", 1}, {NULL, 0}};
	feed_file("nvlink-kernel-lines.log", nvl, NULL);
	static const struct count nccl[] = {{"xid:145", 1}, {"xid:137", 1}, {NULL, 0}};
	feed_file("xid-redacted-bus-nccl-2241.log", nccl, NULL);
	static const struct count dbe[] = {{"xid:48", 1}, {NULL, 0}};
	feed_file("xid48-dbe-syslog-gpu-operator-1146.log", dbe, NULL);
}

static int feed_str(struct kernlog_parser *p, const char *s, struct kernlog_event out[2])
{
	return kernlog_feed(p, s, strlen(s), out);
}

/* The multi-line record as /dev/kmsg gives it: one record, newlines escaped as \x0a (hand-made
 * from the NVSentinel #155 text with a kmsg header, dev-kmsg ABI). */
static void test_fallen_kmsg_record(void **state)
{
	const char *line =
		"3,5120,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: "
		"10de:26b5) installed in this system has\\x0aNVRM: fallen off the bus and is "
		"not responding to commands.\n";
	struct kernlog_event ev;
	assert_int_equal(kernlog_parse_line(line, strlen(line), NOW_MS, &ev), 1);
	assert_int_equal(ev.kind, KERNLOG_FALLEN_OFF_BUS);
	assert_string_equal(ev.code, "gpu:fallen_off_bus");
	assert_int_equal(ev.xid, -1);
	assert_string_equal(ev.pci_bus_id, "0000:b3:00.0");
	assert_int_equal(ev.has_seq, 1);
	assert_int_equal(ev.seq, 5120);
	assert_int_equal(ev.uptime_us, 1843308145LL);
	assert_int_equal(ev.time_ms, 0);
	assert_string_equal(ev.message,
			    "NVRM: The NVIDIA GPU 0000:b3:00.0 NVRM: (PCI ID: 10de:26b5) "
			    "installed in this system has NVRM: fallen off the bus and is "
			    "not responding to commands.");
}

/* A "The NVIDIA GPU <bdf>" record that goes on to say something else is no event, and the
 * line that ends it is still parsed (hand-made). */
static void test_fallen_pending_dropped(void **state)
{
	struct kernlog_parser *p = kernlog_parser_new(NOW_MS);
	struct kernlog_event out[2];
	assert_int_equal(feed_str(p, "[    5.100000] NVRM: The NVIDIA GPU 0000:3b:00.0\n", out), 0);
	assert_int_equal(
		feed_str(p,
			 "               NVRM: (PCI ID: 10de:2330) installed in this system is\n",
			 out),
		0);
	assert_int_equal(
		feed_str(p,
			 "               NVRM: not supported by the NVIDIA 470 driver release.\n",
			 out),
		0);
	assert_int_equal(
		feed_str(
			p,
			"[    5.200000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n",
			out),
		1);
	assert_string_equal(out[0].code, "xid:79");
	assert_int_equal(out[0].uptime_us, 5200000);
	/* a fault record of its own after the head is not swallowed as a continuation */
	assert_int_equal(feed_str(p, "[    5.300000] NVRM: The NVIDIA GPU 0000:3b:00.0\n", out), 0);
	assert_int_equal(
		feed_str(
			p,
			"[    5.400000] NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!\n",
			out),
		1);
	assert_string_equal(out[0].code, "nvlink:error");
	assert_int_equal(out[0].uptime_us, 5400000);
	/* unfinished at end of input: flush drops it */
	assert_int_equal(feed_str(p, "[    6.000000] NVRM: The NVIDIA GPU 0000:3b:00.0\n", out), 0);
	assert_int_equal(kernlog_flush(p, out), 0);
	assert_int_equal(
		feed_str(
			p,
			"               NVRM: fallen off the bus and is not responding to commands.\n",
			out),
		1);
	assert_string_equal(out[0].pci_bus_id, ""); /* the record's head was flushed away */
	kernlog_parser_free(p);
}

/* AER: the detail lines after a header are one record; a "PCIe Bus Error" line after some other
 * line is its own event (lines from the returnn #1500 block of the issues file). */
static void test_aer_records(void **state)
{
	struct kernlog_parser *p = kernlog_parser_new(NOW_MS);
	struct kernlog_event out[2];
	assert_int_equal(
		feed_str(
			p,
			"[  +0.000001] pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: 0000:00:03.0\n",
			out),
		1);
	assert_string_equal(out[0].code, "aer:fatal");
	assert_string_equal(out[0].pci_bus_id, "0000:00:03.0");
	assert_int_equal(
		feed_str(
			p,
			"[  +0.000004] pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)\n",
			out),
		0);
	assert_int_equal(
		feed_str(
			p,
			"[  +0.000898] pcieport 0000:00:03.0:   device [8086:6f08] error status/mask=00004020/00000000\n",
			out),
		0);
	assert_int_equal(
		feed_str(p, "[  +0.000889] pcieport 0000:00:03.0:    [ 5] SDES                  \n",
			 out),
		0);
	assert_int_equal(
		feed_str(
			p,
			"[  +0.000921] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)\n",
			out),
		0);
	/* the record ended: the same detail line is now an event of its own */
	assert_int_equal(
		feed_str(
			p,
			"[  +0.000004] pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)\n",
			out),
		1);
	assert_string_equal(out[0].code, "aer:fatal");
	assert_string_equal(out[0].aer_severity, "fatal");
	assert_string_equal(out[0].pci_bus_id, "0000:00:03.0");
	kernlog_parser_free(p);

	/* pre-6.3 wording with no source address: the reporting port's (hand-made, aer.c text) */
	struct kernlog_event ev;
	const char *old = "pcieport 0000:00:1c.5: AER: Corrected error received: id=00e5";
	assert_int_equal(kernlog_parse_line(old, strlen(old), NOW_MS, &ev), 1);
	assert_string_equal(ev.code, "aer:correctable");
	assert_string_equal(ev.pci_bus_id, "0000:00:1c.5");
	const char *nf =
		"pcieport 0000:00:1c.5: AER: Uncorrected (Non-Fatal) error received: 0000:3b:00.0";
	assert_int_equal(kernlog_parse_line(nf, strlen(nf), NOW_MS, &ev), 1);
	assert_string_equal(ev.code, "aer:nonfatal");
	assert_string_equal(ev.pci_bus_id, "0000:3b:00.0");
	/* AER lines that are no error report */
	const char *rec = "pcieport 0000:00:03.0: AER: Root Port link has been reset (0)";
	assert_int_equal(kernlog_parse_line(rec, strlen(rec), NOW_MS, &ev), 0);
}

/* Prefix forms our real files lack (hand-made around real message text). */
static void test_prefix_forms(void **state)
{
	struct kernlog_event ev;
	/* /dev/kmsg with extra comma fields before ';' (dev-kmsg ABI: "flag[,additional]") */
	const char *k =
		"4,1227,5678901,c,1,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.";
	assert_int_equal(kernlog_parse_line(k, strlen(k), NOW_MS, &ev), 1);
	assert_int_equal(ev.has_seq, 1);
	assert_int_equal(ev.seq, 1227);
	assert_int_equal(ev.uptime_us, 5678901);
	assert_int_equal(ev.xid, 79);
	assert_int_equal(ev.pid, 1234);
	assert_string_equal(ev.process, "python");
	assert_string_equal(
		ev.message,
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.");
	/* ctime with a space-padded day, pid=<n/a> */
	const char *c =
		"[Wed Aug  5 03:12:01 2026] NVRM: Xid (PCI:0000:65:00): 74, pid=<n/a>, name=<unknown>, NVLink: fatal error detected on link 2";
	assert_int_equal(kernlog_parse_line(c, strlen(c), NOW_MS, &ev), 1);
	assert_int_equal(ev.time_ms, 1785899521000LL);
	assert_int_equal(ev.kind, KERNLOG_XID);
	assert_string_equal(ev.code, "xid:74");
	assert_int_equal(ev.pid, -1);
	assert_string_equal(ev.process, "");
	/* iso with a zone offset: 04:26:49.803 at +02:00 is 02:26:49.803Z */
	const char *i =
		"kern  :warn  : 2025-01-21T04:26:49,803751+02:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception on (GPC 9, TPC 1, SM 1): Multiple Warp Errors";
	assert_int_equal(kernlog_parse_line(i, strlen(i), NOW_MS, &ev), 1);
	assert_int_equal(ev.time_ms, 1737426409803LL);
	/* syslog stamp in December read on New Year's Day belongs to the year before */
	const char *y =
		"Dec 31 23:59:59 node001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.";
	assert_int_equal(kernlog_parse_line(y, strlen(y), 1798761605000LL, &ev), 1);
	assert_int_equal(ev.time_ms, 1798761599000LL);
	assert_string_equal(ev.host, "node001");
	/* journalctl -o short-precise, day space-padded */
	const char *jp =
		"Jul  9 10:42:47.250981 node003 kernel: NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!";
	assert_int_equal(kernlog_parse_line(jp, strlen(jp), NOW_MS, &ev), 1);
	assert_string_equal(ev.code, "nvlink:error");
	assert_int_equal(ev.time_ms, 1783593767250LL);
	assert_string_equal(ev.host, "node003");
	assert_string_equal(
		ev.message,
		"NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!");
	/* SXid without the colon after the device, seen in kmsg parsers' tests */
	const char *s =
		"12,6010676,3561654626948,-;nvidia-nvswitch0 SXid (PCI:0000:06:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate";
	assert_int_equal(kernlog_parse_line(s, strlen(s), NOW_MS, &ev), 1);
	assert_string_equal(ev.code, "sxid:20009");
	assert_string_equal(ev.device, "nvidia-nvswitch0");
	assert_string_equal(ev.pci_bus_id, "0000:06:00.0");
	assert_int_equal(ev.uptime_us, 3561654626948LL);
	/* not faults */
	const char *n1 = "NVRM: NVLink link training completed";
	assert_int_equal(kernlog_parse_line(n1, strlen(n1), NOW_MS, &ev), 0);
	const char *n2 =
		"[Sun Apr 26 23:12:26 2026] NVRM: _kgspLogXid119: Note: Please also check logs above.";
	assert_int_equal(kernlog_parse_line(n2, strlen(n2), NOW_MS, &ev), 0);
	assert_int_equal(kernlog_parse_line("", 0, NOW_MS, &ev), 0);
}

struct bad {
	const char *line;
	int n;
	int xid;
	const char *pci;
	long pid;
	const char *process;
};

/* Malformed and truncated lines (hand-made): never a wrong number - no event, or an event with
 * the unreadable fields unknown. */
static void test_malformed(void **state)
{
	static const char long_name[] =
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=77, name="
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, x";
	static const struct bad bad[] = {
		{"NVRM: Xid (PCI:", 0, -1, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:00): 7", 0, -1, "", -1, ""}, /* cut mid-number */
		{"NVRM: Xid (PCI:0000:3b:00): ", 0, -1, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:00", 0, -1, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:00): 1234567, too long", 0, -1, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:00): 0, zero", 0, -1, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:00): -79, negative", 0, -1, "", -1, ""},
		{"nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 2201", 0, -1, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:00): 79,", 1, 79, "0000:3b:00.0", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:0): 79, short bus", 1, 79, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:00.9): 79, bad function", 1, 79, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3b:20): 79, device above 0x1f", 1, 79, "", -1, ""},
		{"NVRM: Xid (PCI:0000:3B:00): 79, upper case", 1, 79, "0000:3b:00.0", -1, ""},
		{"NVRM: Xid (PCI:00000000:3b:00): 79, 8-digit domain", 1, 79, "0000:3b:00.0", -1,
		 ""},
		{"NVRM: Xid (PCI:0000:3b:00): 79, pid=12", 1, 79, "0000:3b:00.0", -1,
		 ""}, /* cut pid */
		{"NVRM: Xid (PCI:0000:3b:00): 79, pid=123456789012345678901234567890, name=python3, x",
		 1, 79, "0000:3b:00.0", -1, "python3"},
		{"NVRM: Xid (PCI:0000:3b:00): 79, pid=4294967296, name=python3, x", 1, 79,
		 "0000:3b:00.0", -1, "python3"},
		{"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=pyth", 1, 79, "0000:3b:00.0", 1234,
		 ""}, /* cut name */
		{long_name, 1, 79, "0000:3b:00.0", 77, ""},
		{"[ 1843.3081", 0, -1, "", -1, ""},
		{"kern  :err   : 2025-13-45T99:99:99,1+00:00 NVRM: Xid (PCI:0000:3b:00): 79, x", 1,
		 79, "0000:3b:00.0", -1, ""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kernlog_event ev;
		int n = kernlog_parse_line(bad[i].line, strlen(bad[i].line), NOW_MS, &ev);
		if (n != bad[i].n)
			fail_msg("%s: %d events, want %d", bad[i].line, n, bad[i].n);
		if (!n)
			continue;
		assert_int_equal(ev.xid, bad[i].xid);
		assert_string_equal(ev.pci_bus_id, bad[i].pci);
		assert_int_equal(ev.pid, bad[i].pid);
		assert_string_equal(ev.process, bad[i].process);
		assert_int_equal(ev.time_ms, 0);
	}
}

/* NUL, control bytes, invalid UTF-8 and over-long lines: copies stay bounded, NUL-terminated,
 * valid UTF-8, and the record is still read (hand-made). */
static void test_bytes_and_bounds(void **state)
{
	struct kernlog_event ev;
	static const char nul[] =
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=py\0thon, \x01\xff GPU has fallen off the bus.";
	assert_int_equal(kernlog_parse_line(nul, sizeof(nul) - 1, NOW_MS, &ev), 1);
	assert_string_equal(ev.process, "py?thon");
	assert_string_equal(
		ev.raw,
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=py?thon, ?? GPU has fallen off the bus.");

	/* 3000 bytes of 'é' (2 bytes each) then a record: raw and message cut on a character */
	size_t pre = 3000, len = pre + 64;
	char *big = malloc(len + 1);
	assert_non_null(big);
	for (size_t i = 0; i < pre; i += 2) {
		big[i] = (char)0xc3;
		big[i + 1] = (char)0xa9;
	}
	snprintf(big + pre, len + 1 - pre, " NVRM: Xid (PCI:0000:3b:00): 79, x");
	assert_int_equal(kernlog_parse_line(big, strlen(big), NOW_MS, &ev), 1);
	assert_int_equal(ev.xid, 79);
	assert_int_equal(strlen(ev.raw), KERNLOG_RAW_LEN - 2); /* 1022: 511 whole characters */
	assert_int_equal(strlen(ev.message), KERNLOG_MSG_LEN - 2);
	free(big);

	/* a '\n' ends the line: what follows is not read */
	static const char two[] = "irrelevant line\nNVRM: Xid (PCI:0000:3b:00): 79, x";
	assert_int_equal(kernlog_parse_line(two, sizeof(two) - 1, NOW_MS, &ev), 0);
}

/* Xid 154 names the recovery action the GPU now needs; the XID catalog says to use it as the
 * authoritative action, so its code is the action's (docs/health.md "Recovery actions"), never
 * the info-only xid:154 that decides nothing (issue 16, "GPU signals" 1). Lines:
 * tests/data/kernel/xid154-*.log (SOURCES.md). */
static void test_xid154_recovery_action(void **state)
{
	static const struct {
		const char *file;
		int line;
		const char *code;
		int action;
		const char *bus;
	} r154[] = {
		{"xid154-recovery-action-gb200-gpud.log", 1, "xid:149", -1, "0009:01:00.0"},
		{"xid154-recovery-action-gb200-gpud.log", 2, "gpu:drain_and_reset", 4,
		 "0009:01:00.0"},
		{"xid154-recovery-action-gb200-gpud.log", 3, "gpu:reset_required", 1,
		 "0019:01:00.0"},
		{"xid154-variants-derived.log", 1, "gpu:reboot_required", 2, "0000:01:00.0"},
		{"xid154-variants-derived.log", 2, "gpu:drain_p2p", 3, "0000:01:00.0"},
		{"xid154-variants-derived.log", 3, "xid:154", 0, "0000:01:00.0"},
		{"xid154-variants-derived.log", 4, "gpu:reboot_required", 2, "0000:01:00.0"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(r154) / sizeof(r154[0]); i++) {
		struct kernlog_event ev;
		char *line = file_line(r154[i].file, r154[i].line);
		if (kernlog_parse_line(line, strlen(line), NOW_MS, &ev) != 1)
			fail_msg("%s:%d: no event, want %s", r154[i].file, r154[i].line,
				 r154[i].code);
		if (strcmp(ev.code, r154[i].code) != 0 || ev.recovery_action != r154[i].action)
			fail_msg("%s:%d: code %s action %d, want %s action %d", r154[i].file,
				 r154[i].line, ev.code, ev.recovery_action, r154[i].code,
				 r154[i].action);
		assert_string_equal(ev.pci_bus_id, r154[i].bus);
		assert_int_equal(ev.kind, KERNLOG_XID);
		free(line);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_lines),
		cmocka_unit_test(test_every_fault_line_has_a_row),
		cmocka_unit_test(test_files_feed_counts),
		cmocka_unit_test(test_fallen_kmsg_record),
		cmocka_unit_test(test_fallen_pending_dropped),
		cmocka_unit_test(test_aer_records),
		cmocka_unit_test(test_prefix_forms),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_bytes_and_bounds),
		cmocka_unit_test(test_xid154_recovery_action),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
