/* agent/inventory.h - what `fleetplane agent inspect` reports about a node before it is
 * provisioned (issue 11, the boot contract's "inventory shape"): system identity, CPU, memory,
 * PCI devices and the NVIDIA GPUs among them, physical NICs and disks.
 *
 * Two kinds of functions. Parsers are pure functions over the text of one tool or proc file
 * (`lspci -D -nn`, `dmidecode -t system`, /proc/meminfo, /proc/cpuinfo): bounded, never
 * crashing on malformed input (a line that does not parse is counted in `skipped` and
 * dropped). Readers walk sysfs under a root directory (/sys/class/net, /sys/block,
 * /sys/bus/pci/devices, /sys/class/dmi/id) so tests run them over a fake tree; every path is
 * root + the absolute path the kernel documents (Documentation/ABI/testing/sysfs-class-net,
 * sysfs-block, sysfs-bus-pci, sysfs-class-dmi... of the Linux tree).
 *
 * lspci format: the agent runs `lspci -D -nn` (plain one-line-per-device output with the
 * domain and numeric [class] and [vendor:device] codes); the parser also reads the lines of
 * `lspci`, `lspci -nn`, `lspci -vvv` (indented detail lines are skipped) because those are the
 * real samples the tests use. `lspci -vmm` is not read (its records are not one line). */
#ifndef FP_AGENT_INVENTORY_H
#define FP_AGENT_INVENTORY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define INVENTORY_MAX_PCI 1024
#define INVENTORY_MAX_NICS 256
#define INVENTORY_MAX_DISKS 256
#define INVENTORY_TOOL_MAX_OUT ((size_t)4 << 20) /* bytes of lspci/dmidecode output kept */
#define INVENTORY_FILE_MAX ((size_t)4 << 20)     /* bytes of /proc/cpuinfo etc. read */
#define INVENTORY_TOOL_TIMEOUT_MS 15000L

#define INVENTORY_PCI_VENDOR_NVIDIA 0x10de
/* PCI class codes (base class, sub class) of display controllers: PCI Code and ID Assignment
 * Specification, base class 03h: 00h VGA compatible, 02h 3D controller. */
#define INVENTORY_PCI_CLASS_VGA 0x0300
#define INVENTORY_PCI_CLASS_3D 0x0302

struct inventory_pci {
	char addr[32];  /* "0000:17:00.0": domain always present (0000 when lspci omits it) */
	int class_code; /* 0x0302; -1 when unknown (plain lspci of a class other than VGA/3D) */
	int vendor;     /* 0x10de; -1 when unknown */
	int device;     /* 0x2330; -1 when unknown */
	char name[256]; /* lspci's "vendor device" text without codes and (rev ..), or "" */
};

struct inventory_system {
	char manufacturer[128], product_name[128], serial_number[128], uuid[64]; /* "" = absent */
};

struct inventory_cpu {
	char model[256]; /* first "model name" of /proc/cpuinfo, "" when none (many arm64) */
	int count;       /* "processor" entries (logical CPUs) */
};

struct inventory_nic {
	char name[32]; /* IFNAMSIZ is 16 */
	char mac[64];  /* "52:54:00:12:34:56" as sysfs writes it; InfiniBand: 20 bytes, 59 chars */
	char operstate[16];
	long speed_mbps;   /* -1 when unknown (link down, or the driver does not say) */
	char pci_addr[32]; /* "" when the device is not on PCI */
};

struct inventory_disk {
	char name[32], path[48];
	uint64_t size_bytes;
	char model[128], serial[128]; /* "" = absent */
	int rotational, removable;
};

struct inventory {
	struct inventory_system system;
	struct inventory_cpu cpu;
	uint64_t memory_mib;
	struct inventory_pci pci[INVENTORY_MAX_PCI];
	size_t npci;
	struct inventory_nic nics[INVENTORY_MAX_NICS];
	size_t nnics;
	struct inventory_disk disks[INVENTORY_MAX_DISKS];
	size_t ndisks;
	/* Where each part came from ("lspci", "sysfs", ...), for the human summary. */
	const char *pci_source, *system_source;
	size_t skipped; /* malformed lines or entries dropped, over all parsers and readers */
	int truncated;  /* a bound (devices, NICs, disks, tool output) was reached */
};

/* Parses `lspci [-D] [-nn] [-vvv]` text (len bytes, need not be NUL-terminated): one device per
 * line that starts with a bus address "[DDDD:]BB:DD.F", then " <class>[ [CCCC]]: <name>[
 * [VVVV:DDDD]][ (rev RR)][ (prog-if ...)]". Indented lines (-v detail) and blank lines are
 * ignored; any other line that does not parse counts in *skipped. Without -nn the class code
 * is known only for "VGA compatible controller" and "3D controller", the vendor only for
 * "NVIDIA Corporation", the device id from lspci's "Device XXXX" for unnamed devices. busybox
 * lspci's lines ("0000:17:00.0 Class 0302: 10de:2330", no names) are read too. Writes
 * at most max entries into out and sets *truncated when more devices followed. Returns the
 * number of entries written. */
size_t inventory_parse_lspci(const char *text, size_t len, struct inventory_pci *out, size_t max,
			     size_t *skipped, int *truncated);

/* Parses `dmidecode -t system` (or a whole dmidecode dump) text: the "System Information"
 * block of a "DMI type 1" handle (SMBIOS spec DSP0134 7.2), keys Manufacturer, Product Name,
 * Serial Number, UUID. Placeholder values ("Not Specified", "Not Present", "To Be Filled By
 * O.E.M.", "Default string", "None") are left "". Returns 0, or FP_ENOTFOUND when the text has
 * no System Information block (sys is zeroed then). */
int inventory_parse_dmidecode(const char *text, size_t len, struct inventory_system *sys);

/* Parses /proc/meminfo's "MemTotal: <n> kB" (proc(5)) into MiB (n / 1024, rounded down).
 * Returns 0 or FP_ENOTFOUND. */
int inventory_parse_meminfo(const char *text, size_t len, uint64_t *mib);

/* Parses /proc/cpuinfo: counts "processor" lines and keeps the first "model name" value
 * (x86; arm64 kernels write none). Returns 0, or FP_ENOTFOUND when no processor line. */
int inventory_parse_cpuinfo(const char *text, size_t len, struct inventory_cpu *cpu);

/* Readers: every path is root + "/sys/...". Each returns the number of entries written (at
 * most max, in name order), adds malformed entries to *skipped and sets *truncated when more
 * entries existed than max. */

/* root/sys/class/net/<if>: address, operstate, speed, and the PCI address from the `device`
 * link; interfaces without a `device` link (lo, bridges, bonds, veth, tun: virtual) are not
 * physical and are left out. */
size_t inventory_read_nics(const char *root, struct inventory_nic *out, size_t max, size_t *skipped,
			   int *truncated);
/* root/sys/block/<disk>: size (512-byte sectors, sysfs-block), device/model, device/serial or
 * <disk>/serial, queue/rotational, removable. loop*, ram*, zram*, dm-*, md*, nbd* are left out
 * (virtual); sr* are kept (removable as sysfs says). path is "/dev/<disk>". */
size_t inventory_read_disks(const char *root, struct inventory_disk *out, size_t max,
			    size_t *skipped, int *truncated);
/* root/sys/bus/pci/devices/<addr>/{vendor,device,class} ("0x10de", "0x2330", "0x030200");
 * name is lspci's text for a device it has no name for: "<vendor> Device <dddd>" with the
 * vendor "NVIDIA Corporation" for 10de, else "Vendor <vvvv>". */
size_t inventory_read_pci_sysfs(const char *root, struct inventory_pci *out, size_t max,
				size_t *skipped, int *truncated);
/* root/sys/class/dmi/id/{sys_vendor,product_name,product_serial,product_uuid} (the last two
 * are root-only readable on a real system). Returns 0 or FP_ENOTFOUND when none is readable. */
int inventory_read_dmi_sysfs(const char *root, struct inventory_system *sys);

/* 1 when p is an NVIDIA (10de) VGA or 3D controller: what the contract counts as a GPU. */
int inventory_pci_is_gpu(const struct inventory_pci *p);

/* Fills inv for the machine under root ("/" or a fake tree). With use_tools set (the CLI sets
 * it only for root "/": a tool describes the running machine, not a fake tree) runs `lspci
 * -D -nn` and `dmidecode -t system` from PATH through probe_run (timeout, output bound) and
 * falls back to sysfs when a tool is absent or fails; proc files are root/proc/meminfo and
 * root/proc/cpuinfo. A part that cannot be read stays empty and is named in warn (a ';'
 * separated list, at most warnlen bytes). Never fails. */
void inventory_collect(const char *root, int use_tools, struct inventory *inv, char *warn,
		       size_t warnlen);

/* The contract's inventory object ({"source":"inspection","system",...}). New reference. */
json_t *inventory_to_json(const struct inventory *inv);

/* Reads root + path (a sysfs attribute or proc file) whole, at most max bytes, into a
 * malloc'd NUL-terminated string (the caller frees), *len its length. NULL when it cannot be
 * read. */
char *inventory_read_text(const char *root, const char *path, size_t max, size_t *len);

#endif
