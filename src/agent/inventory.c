/* inventory.c - the node inventory of `fleetplane agent inspect` (inventory.h): parsers of
 * lspci, dmidecode and /proc text, sysfs readers under a root directory, and the contract's
 * JSON. Parsers copy each line into a bounded buffer and never read past len; readers bound
 * every count and every file they read. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/inventory.h"
#include "agent/probe.h"
#include "agent/text.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"

#include "base/banned.h"

#define INV_LINE_MAX 1024 /* longer lines are cut (lspci -vvv VPD lines can be long) */
#define INV_ATTR_MAX 4096 /* bytes of one sysfs attribute read */

/* Iterates the lines of text[0..len): copies the next line (cut at INV_LINE_MAX - 1 bytes,
 * NUL bytes replaced by ' ', '\r' dropped) into line. Returns 0 at the end. */
static int inv_next_line(const char *text, size_t len, size_t *pos, char *line)
{
	if (*pos >= len)
		return 0;
	size_t n = 0;
	while (*pos < len && text[*pos] != '\n') {
		char c = text[*pos];
		if (c == '\0')
			c = ' ';
		if (c != '\r' && n < INV_LINE_MAX - 1)
			line[n++] = c;
		(*pos)++;
	}
	if (*pos < len)
		(*pos)++; /* the '\n' */
	line[n] = '\0';
	return 1;
}

static void inv_copy(char *dst, size_t dstlen, const char *src, size_t n)
{
	if (!dstlen)
		return;
	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int inv_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Parses exactly n hex digits at s. Returns the value or -1. */
static long inv_hex(const char *s, size_t n)
{
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		int d = inv_hexval(s[i]);
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* "[DDDD:]BB:DD.F" at the start of s (domain 4 to 8 hex digits). Writes the address with a
 * domain into addr. Returns the length consumed or 0. */
static size_t inv_parse_bdf(const char *s, char *addr, size_t addrlen)
{
	size_t dom = 0;
	while (dom < 9 && inv_hexval(s[dom]) >= 0)
		dom++;
	const char *b = s;
	char domain[16] = "0000";
	if (s[dom] == ':' && dom >= 4 && dom <= 8 && inv_hexval(s[dom + 1]) >= 0 &&
	    inv_hexval(s[dom + 2]) >= 0 && s[dom + 3] == ':') {
		inv_copy(domain, sizeof(domain), s, dom);
		b = s + dom + 1;
	} else if (dom != 2) {
		return 0;
	}
	if (inv_hex(b, 2) < 0 || b[2] != ':' || inv_hex(b + 3, 2) < 0 || b[5] != '.' ||
	    b[6] < '0' || b[6] > '7')
		return 0;
	for (char *p = domain; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	char bus[8];
	inv_copy(bus, sizeof(bus), b, 7);
	for (char *p = bus; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	snprintf(addr, addrlen, "%s:%s", domain, bus);
	return (size_t)(b + 7 - s);
}

/* A trailing " [XXXX]" (4 hex) or " [VVVV:DDDD]" at the end of s[0..*n): parses it, cuts it
 * off. Returns 1 when found. */
static int inv_cut_code(const char *s, size_t *n, int pair, long *a, long *b)
{
	size_t w = pair ? 12 : 7; /* " [vvvv:dddd]" or " [cccc]" */
	if (*n < w || s[*n - w] != ' ' || s[*n - w + 1] != '[' || s[*n - 1] != ']')
		return 0;
	const char *c = s + *n - w + 2;
	long x = inv_hex(c, 4);
	long y = pair ? (c[4] == ':' ? inv_hex(c + 5, 4) : -1) : 0;
	if (x < 0 || y < 0)
		return 0;
	*a = x;
	if (pair)
		*b = y;
	*n -= w;
	return 1;
}

static int inv_line_parse_lspci(const char *line, struct inventory_pci *p)
{
	memset(p, 0, sizeof(*p));
	p->class_code = p->vendor = p->device = -1;
	size_t k = inv_parse_bdf(line, p->addr, sizeof(p->addr));
	if (!k || line[k] != ' ')
		return -1;
	const char *cls = line + k + 1;
	const char *colon = strstr(cls, ": ");
	if (!colon || colon == cls)
		return -1;
	size_t cn = (size_t)(colon - cls);
	long code = -1, unused = 0;
	if (inv_cut_code(cls, &cn, 0, &code, &unused))
		p->class_code = (int)code;
	else if (cn == 25 && strncmp(cls, "VGA compatible controller", cn) == 0)
		p->class_code = INVENTORY_PCI_CLASS_VGA;
	else if (cn == 13 && strncmp(cls, "3D controller", cn) == 0)
		p->class_code = INVENTORY_PCI_CLASS_3D;
	else if (cn == 10 && strncmp(cls, "Class ", 6) == 0 && inv_hex(cls + 6, 4) >= 0)
		p->class_code = (int)inv_hex(cls + 6, 4); /* busybox lspci: "Class 0302" */
	const char *name = colon + 2;
	size_t nn = strlen(name);
	/* Trailing annotations lspci adds after the codes: " (rev xx)", " (prog-if xx [..])". */
	const char *cut = NULL;
	for (const char *q = name; (q = strstr(q, " (")) != NULL; q++)
		if (strncmp(q, " (rev ", 6) == 0 || strncmp(q, " (prog-if ", 10) == 0) {
			cut = q;
			break;
		}
	if (cut)
		nn = (size_t)(cut - name);
	while (nn && name[nn - 1] == ' ')
		nn--;
	long v = -1, d = -1;
	if (inv_cut_code(name, &nn, 1, &v, &d)) {
		p->vendor = (int)v;
		p->device = (int)d;
	} else if (nn == 9 && name[4] == ':' && inv_hex(name, 4) >= 0 &&
		   inv_hex(name + 5, 4) >= 0) {
		/* busybox lspci: "0000:17:00.0 Class 0302: 10de:2330", no names */
		p->vendor = (int)inv_hex(name, 4);
		p->device = (int)inv_hex(name + 5, 4);
	} else {
		if (strncmp(name, "NVIDIA Corporation ", 19) == 0)
			p->vendor = INVENTORY_PCI_VENDOR_NVIDIA;
		/* lspci names an unnamed device "Device dddd" (lib/names.c "Device %04x"). */
		if (nn >= 12 && strncmp(name + nn - 12, " Device ", 8) == 0) {
			long id = inv_hex(name + nn - 4, 4);
			if (id >= 0)
				p->device = (int)id;
		}
	}
	inv_copy(p->name, sizeof(p->name), name, nn);
	return 0;
}

size_t inventory_parse_lspci(const char *text, size_t len, struct inventory_pci *out, size_t max,
			     size_t *skipped, int *truncated)
{
	char line[INV_LINE_MAX];
	size_t pos = 0, n = 0;
	if (!text)
		return 0;
	while (inv_next_line(text, len, &pos, line)) {
		if (!line[0] || line[0] == ' ' || line[0] == '\t')
			continue;
		struct inventory_pci p;
		if (inv_line_parse_lspci(line, &p) < 0) {
			(*skipped)++;
			continue;
		}
		if (n == max) {
			*truncated = 1;
			break;
		}
		out[n++] = p;
	}
	return n;
}

/* A dmidecode value that means "no value" (dmi_string() placeholders and vendor defaults). */
static int inv_dmi_placeholder(const char *v)
{
	static const char *const ph[] = {"Not Specified",  "Not Present", "To Be Filled By O.E.M.",
					 "Default string", "None",        "Not Settable",
					 "Unknown"};
	if (!*v)
		return 1;
	for (size_t i = 0; i < sizeof(ph) / sizeof(ph[0]); i++)
		if (strcasecmp(v, ph[i]) == 0)
			return 1;
	return 0;
}

static void inv_set_dmi(char *dst, size_t dstlen, const char *v)
{
	if (!inv_dmi_placeholder(v))
		inv_copy(dst, dstlen, v, strlen(v));
}

int inventory_parse_dmidecode(const char *text, size_t len, struct inventory_system *sys)
{
	char line[INV_LINE_MAX];
	size_t pos = 0;
	int in_type1 = 0, in_block = 0, found = 0;
	memset(sys, 0, sizeof(*sys));
	if (!text)
		return FP_ENOTFOUND;
	while (inv_next_line(text, len, &pos, line)) {
		if (strncmp(line, "Handle ", 7) == 0) {
			in_type1 = strstr(line, ", DMI type 1,") != NULL;
			in_block = 0;
			continue;
		}
		int indented = line[0] == ' ' || line[0] == '\t';
		agent_text_trim(line);
		if (!line[0]) {
			in_block = 0;
			continue;
		}
		if (!indented) {
			/* dmidecode -t system prints the block title on the line after Handle. */
			in_block = in_type1 && strcmp(line, "System Information") == 0;
			if (in_block && found)
				in_block = 0; /* the first type-1 block wins */
			if (in_block)
				found = 1;
			continue;
		}
		if (!in_block)
			continue;
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *val = colon + 1;
		agent_text_trim(line);
		agent_text_trim(val);
		if (strcmp(line, "Manufacturer") == 0)
			inv_set_dmi(sys->manufacturer, sizeof(sys->manufacturer), val);
		else if (strcmp(line, "Product Name") == 0)
			inv_set_dmi(sys->product_name, sizeof(sys->product_name), val);
		else if (strcmp(line, "Serial Number") == 0)
			inv_set_dmi(sys->serial_number, sizeof(sys->serial_number), val);
		else if (strcmp(line, "UUID") == 0)
			inv_set_dmi(sys->uuid, sizeof(sys->uuid), val);
	}
	return found ? 0 : FP_ENOTFOUND;
}

int inventory_parse_meminfo(const char *text, size_t len, uint64_t *mib)
{
	char line[INV_LINE_MAX];
	size_t pos = 0;
	*mib = 0;
	if (!text)
		return FP_ENOTFOUND;
	while (inv_next_line(text, len, &pos, line)) {
		if (strncmp(line, "MemTotal:", 9) != 0)
			continue;
		const char *p = line + 9;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			return FP_ENOTFOUND;
		errno = 0;
		char *end = NULL;
		unsigned long long kb = strtoull(p, &end, 10);
		if (errno || strcmp(end, " kB") != 0)
			return FP_ENOTFOUND;
		*mib = kb / 1024;
		return 0;
	}
	return FP_ENOTFOUND;
}

int inventory_parse_cpuinfo(const char *text, size_t len, struct inventory_cpu *cpu)
{
	char line[INV_LINE_MAX];
	size_t pos = 0;
	memset(cpu, 0, sizeof(*cpu));
	if (!text)
		return FP_ENOTFOUND;
	while (inv_next_line(text, len, &pos, line)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *val = colon + 1;
		agent_text_trim(line);
		agent_text_trim(val);
		if (strcmp(line, "processor") == 0 && cpu->count < INT_MAX)
			cpu->count++;
		else if (strcmp(line, "model name") == 0 && !cpu->model[0])
			inv_copy(cpu->model, sizeof(cpu->model), val, strlen(val));
	}
	return cpu->count ? 0 : FP_ENOTFOUND;
}

/* ------------------------------------------------------------------ sysfs readers */

char *inventory_read_text(const char *root, const char *path, size_t max, size_t *len)
{
	char full[PATH_MAX];
	int r = snprintf(full, sizeof(full), "%s%s", strcmp(root, "/") == 0 ? "" : root, path);
	if (r < 0 || (size_t)r >= sizeof(full))
		return NULL;
	struct buf b;
	char err[64];
	buf_init(&b, max + 1);
	/* sysfs and proc files report size 0 or 4096: read to EOF, bounded. */
	int rc = buf_read_file(&b, full, max, err, sizeof(err));
	if (rc < 0 && rc != FP_ETOOBIG) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, len);
}

/* One attribute, trimmed, into out. Returns 0 or -1 (absent, unreadable, e.g. speed of a
 * down link answers EINVAL). */
static int inv_attr(const char *root, const char *path, char *out, size_t outlen)
{
	size_t n = 0;
	char *s = inventory_read_text(root, path, INV_ATTR_MAX, &n);
	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\0')
			s[i] = ' ';
	s[strcspn(s, "\n")] = '\0'; /* one line: a sysfs attribute ends with '\n' */
	agent_text_trim(s);
	inv_copy(out, outlen, s, strlen(s));
	free(s);
	return 0;
}

static int inv_attr_long(const char *root, const char *path, long long *v)
{
	char s[64];
	if (inv_attr(root, path, s, sizeof(s)) < 0 || !s[0])
		return -1;
	errno = 0;
	char *end = NULL;
	long long x = strtoll(s, &end, 0);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

static int inv_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entry names of root + dir (no "." entries, names up to 255 bytes), sorted, at most
 * limit of them (a huge directory is cut, *truncated set). Returns the count; *names is
 * malloc'd (free each and the array). */
static size_t inv_list_dir(const char *root, const char *dir, size_t limit, char ***names,
			   int *truncated)
{
	char full[PATH_MAX];
	*names = NULL;
	int r = snprintf(full, sizeof(full), "%s%s", strcmp(root, "/") == 0 ? "" : root, dir);
	if (r < 0 || (size_t)r >= sizeof(full))
		return 0;
	DIR *d = opendir(full);
	if (!d)
		return 0;
	size_t n = 0, cap = 0;
	char **v = NULL;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == limit) {
			*truncated = 1;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			v = xreallocarray(v, cap, sizeof(*v));
		}
		v[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), inv_name_cmp);
	*names = v;
	return n;
}

static void inv_free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Entries read from a directory before the max of the result is applied: directories can
 * hold non-device entries (bonding_masters in /sys/class/net). */
#define INV_DIR_LIMIT 4096

size_t inventory_read_nics(const char *root, struct inventory_nic *out, size_t max, size_t *skipped,
			   int *truncated)
{
	char **names;
	size_t nn = inv_list_dir(root, "/sys/class/net", INV_DIR_LIMIT, &names, truncated);
	size_t n = 0;
	for (size_t i = 0; i < nn; i++) {
		char rel[PATH_MAX], full[PATH_MAX], real[PATH_MAX];
		const char *name = names[i];
		if (strlen(name) >= sizeof(out[0].name)) {
			(*skipped)++;
			continue;
		}
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/device", name);
		snprintf(full, sizeof(full), "%s%s", strcmp(root, "/") == 0 ? "" : root, rel);
		struct stat st;
		if (lstat(full, &st) < 0)
			continue; /* no device link: virtual (lo, bridge, bond, veth, tun) */
		if (n == max) {
			*truncated = 1;
			break;
		}
		struct inventory_nic *nic = &out[n];
		memset(nic, 0, sizeof(*nic));
		inv_copy(nic->name, sizeof(nic->name), name, strlen(name));
		nic->speed_mbps = -1;
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/address", name);
		if (inv_attr(root, rel, nic->mac, sizeof(nic->mac)) < 0 || !nic->mac[0]) {
			(*skipped)++;
			continue;
		}
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/operstate", name);
		if (inv_attr(root, rel, nic->operstate, sizeof(nic->operstate)) < 0 ||
		    !nic->operstate[0])
			snprintf(nic->operstate, sizeof(nic->operstate), "unknown");
		long long sp;
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/speed", name);
		if (inv_attr_long(root, rel, &sp) == 0 && sp > 0 && sp < 100000000)
			nic->speed_mbps = (long)sp;
		/* The device link points at the bus device: a PCI function "0000:17:00.0", or a
		 * virtio device whose parent is the PCI function. */
		if (realpath(full, real)) {
			char addr[32];
			char *base = strrchr(real, '/');
			for (int up = 0; up < 2 && base; up++) {
				if (inv_parse_bdf(base + 1, addr, sizeof(addr)) &&
				    strlen(base + 1) == strlen(addr)) {
					inv_copy(nic->pci_addr, sizeof(nic->pci_addr), addr,
						 strlen(addr));
					break;
				}
				*base = '\0';
				base = strrchr(real, '/');
			}
		}
		n++;
	}
	inv_free_names(names, nn);
	return n;
}

static int inv_virtual_disk(const char *name)
{
	static const char *const pfx[] = {"loop", "ram", "zram", "dm-", "md", "nbd"};
	for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
		if (strncmp(name, pfx[i], strlen(pfx[i])) == 0)
			return 1;
	return 0;
}

size_t inventory_read_disks(const char *root, struct inventory_disk *out, size_t max,
			    size_t *skipped, int *truncated)
{
	char **names;
	size_t nn = inv_list_dir(root, "/sys/block", INV_DIR_LIMIT, &names, truncated);
	size_t n = 0;
	for (size_t i = 0; i < nn; i++) {
		const char *name = names[i];
		char rel[PATH_MAX];
		if (inv_virtual_disk(name))
			continue;
		if (strlen(name) >= sizeof(out[0].name)) {
			(*skipped)++;
			continue;
		}
		if (n == max) {
			*truncated = 1;
			break;
		}
		struct inventory_disk *d = &out[n];
		memset(d, 0, sizeof(*d));
		inv_copy(d->name, sizeof(d->name), name, strlen(name));
		snprintf(d->path, sizeof(d->path), "/dev/%s", name);
		long long v;
		snprintf(rel, sizeof(rel), "/sys/block/%s/size", name);
		if (inv_attr_long(root, rel, &v) < 0 || v < 0 ||
		    v > (long long)(UINT64_MAX / 512)) {
			(*skipped)++;
			continue;
		}
		d->size_bytes = (uint64_t)v * 512; /* always 512-byte units (sysfs-block "size") */
		snprintf(rel, sizeof(rel), "/sys/block/%s/device/model", name);
		inv_attr(root, rel, d->model, sizeof(d->model));
		snprintf(rel, sizeof(rel), "/sys/block/%s/device/serial", name);
		if (inv_attr(root, rel, d->serial, sizeof(d->serial)) < 0 || !d->serial[0]) {
			snprintf(rel, sizeof(rel), "/sys/block/%s/serial", name);
			inv_attr(root, rel, d->serial, sizeof(d->serial));
		}
		snprintf(rel, sizeof(rel), "/sys/block/%s/queue/rotational", name);
		d->rotational = inv_attr_long(root, rel, &v) == 0 && v == 1;
		snprintf(rel, sizeof(rel), "/sys/block/%s/removable", name);
		d->removable = inv_attr_long(root, rel, &v) == 0 && v == 1;
		n++;
	}
	inv_free_names(names, nn);
	return n;
}

size_t inventory_read_pci_sysfs(const char *root, struct inventory_pci *out, size_t max,
				size_t *skipped, int *truncated)
{
	char **names;
	size_t nn = inv_list_dir(root, "/sys/bus/pci/devices", INV_DIR_LIMIT, &names, truncated);
	size_t n = 0;
	for (size_t i = 0; i < nn; i++) {
		char rel[PATH_MAX], addr[32];
		const char *name = names[i];
		if (!inv_parse_bdf(name, addr, sizeof(addr)) || strlen(name) != strlen(addr)) {
			(*skipped)++;
			continue;
		}
		long long ven, dev, cls;
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/vendor", name);
		int bad = inv_attr_long(root, rel, &ven) < 0 || ven < 0 || ven > 0xffff;
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/device", name);
		bad |= inv_attr_long(root, rel, &dev) < 0 || dev < 0 || dev > 0xffff;
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/class", name);
		bad |= inv_attr_long(root, rel, &cls) < 0 || cls < 0 || cls > 0xffffff;
		if (bad) {
			(*skipped)++;
			continue;
		}
		if (n == max) {
			*truncated = 1;
			break;
		}
		struct inventory_pci *p = &out[n++];
		memset(p, 0, sizeof(*p));
		inv_copy(p->addr, sizeof(p->addr), addr, strlen(addr));
		p->vendor = (int)ven;
		p->device = (int)dev;
		p->class_code = (int)(cls >> 8); /* class, subclass; the low byte is prog-if */
		if (ven == INVENTORY_PCI_VENDOR_NVIDIA)
			snprintf(p->name, sizeof(p->name), "NVIDIA Corporation Device %04llx", dev);
		else
			snprintf(p->name, sizeof(p->name), "Vendor %04llx Device %04llx", ven, dev);
	}
	inv_free_names(names, nn);
	return n;
}

int inventory_read_dmi_sysfs(const char *root, struct inventory_system *sys)
{
	static const char *const attr[] = {"sys_vendor", "product_name", "product_serial",
					   "product_uuid"};
	char *dst[] = {sys->manufacturer, sys->product_name, sys->serial_number, sys->uuid};
	size_t len[] = {sizeof(sys->manufacturer), sizeof(sys->product_name),
			sizeof(sys->serial_number), sizeof(sys->uuid)};
	int any = 0;
	memset(sys, 0, sizeof(*sys));
	for (size_t i = 0; i < 4; i++) {
		char rel[128], v[256];
		snprintf(rel, sizeof(rel), "/sys/class/dmi/id/%s", attr[i]);
		if (inv_attr(root, rel, v, sizeof(v)) < 0)
			continue;
		any = 1;
		inv_set_dmi(dst[i], len[i], v);
	}
	return any ? 0 : FP_ENOTFOUND;
}

int inventory_pci_is_gpu(const struct inventory_pci *p)
{
	return p->vendor == INVENTORY_PCI_VENDOR_NVIDIA &&
	       (p->class_code == INVENTORY_PCI_CLASS_VGA ||
		p->class_code == INVENTORY_PCI_CLASS_3D);
}

/* ------------------------------------------------------------------ collection */

static void inv_warn(char *warn, size_t warnlen, const char *what)
{
	size_t n = strlen(warn);
	if (n + 1 >= warnlen)
		return;
	snprintf(warn + n, warnlen - n, "%s%s", n ? "; " : "", what);
}

/* Runs tool argv when it is in PATH. Returns its stdout (the caller frees) or NULL. */
static char *inv_run_tool(char *const argv[], size_t *len, int *truncated, char *warn,
			  size_t warnlen)
{
	char path[PATH_MAX], err[256], w[384];
	if (probe_which(argv[0], path, sizeof(path)) < 0)
		return NULL;
	struct proc_result res;
	int rc = probe_run(argv, INVENTORY_TOOL_TIMEOUT_MS, INVENTORY_TOOL_MAX_OUT, &res, err,
			   sizeof(err));
	char *out = NULL;
	if (rc < 0) {
		snprintf(w, sizeof(w), "%s: %s", argv[0], err);
		inv_warn(warn, warnlen, w);
	} else if (res.timed_out) {
		snprintf(w, sizeof(w), "%s: no answer within %ld ms", argv[0],
			 INVENTORY_TOOL_TIMEOUT_MS);
		inv_warn(warn, warnlen, w);
	} else if (!res.truncated && (!res.exited || res.exit_status != 0)) {
		snprintf(w, sizeof(w), "%s: exit %d signal %d", argv[0], res.exit_status,
			 res.signaled);
		inv_warn(warn, warnlen, w);
	} else {
		if (res.truncated)
			*truncated = 1;
		out = buf_detach(&res.out, len);
	}
	proc_result_release(&res);
	return out;
}

void inventory_collect(const char *root, int use_tools, struct inventory *inv, char *warn,
		       size_t warnlen)
{
	size_t len = 0;
	char *text;
	memset(inv, 0, sizeof(*inv));
	if (warnlen)
		warn[0] = '\0';
	inv->pci_source = inv->system_source = "none";

	text = NULL;
	if (use_tools) {
		char *argv[] = {"lspci", "-D", "-nn", NULL};
		text = inv_run_tool(argv, &len, &inv->truncated, warn, warnlen);
	}
	if (text) {
		inv->npci = inventory_parse_lspci(text, len, inv->pci, INVENTORY_MAX_PCI,
						  &inv->skipped, &inv->truncated);
		inv->pci_source = "lspci";
		free(text);
	}
	if (!inv->npci) {
		inv->npci = inventory_read_pci_sysfs(root, inv->pci, INVENTORY_MAX_PCI,
						     &inv->skipped, &inv->truncated);
		inv->pci_source = inv->npci ? "sysfs" : "none";
		if (!inv->npci)
			inv_warn(warn, warnlen, "no PCI devices found");
	}

	text = NULL;
	if (use_tools) {
		char *argv[] = {"dmidecode", "-t", "system", NULL};
		text = inv_run_tool(argv, &len, &inv->truncated, warn, warnlen);
	}
	if (text && inventory_parse_dmidecode(text, len, &inv->system) == 0)
		inv->system_source = "dmidecode";
	else if (inventory_read_dmi_sysfs(root, &inv->system) == 0)
		inv->system_source = "sysfs";
	else
		inv_warn(warn, warnlen, "no DMI system information");
	free(text);

	text = inventory_read_text(root, "/proc/meminfo", INVENTORY_FILE_MAX, &len);
	if (inventory_parse_meminfo(text, len, &inv->memory_mib) < 0)
		inv_warn(warn, warnlen, "no MemTotal in /proc/meminfo");
	free(text);
	text = inventory_read_text(root, "/proc/cpuinfo", INVENTORY_FILE_MAX, &len);
	if (inventory_parse_cpuinfo(text, len, &inv->cpu) < 0)
		inv_warn(warn, warnlen, "no processor in /proc/cpuinfo");
	free(text);

	inv->nnics = inventory_read_nics(root, inv->nics, INVENTORY_MAX_NICS, &inv->skipped,
					 &inv->truncated);
	inv->ndisks = inventory_read_disks(root, inv->disks, INVENTORY_MAX_DISKS, &inv->skipped,
					   &inv->truncated);
	if (inv->truncated)
		inv_warn(warn, warnlen, "a bound was reached: the lists are cut");
}

static json_t *inv_str_or_null(const char *s)
{
	return s && *s ? jsonx_string_lossy(s) : json_null();
}

json_t *inventory_to_json(const struct inventory *inv)
{
	json_t *gpus = json_array(), *nics = json_array(), *disks = json_array();
	for (size_t i = 0; i < inv->npci; i++) {
		const struct inventory_pci *p = &inv->pci[i];
		if (!inventory_pci_is_gpu(p))
			continue;
		char ven[8], dev[8];
		snprintf(ven, sizeof(ven), "%04x", (unsigned)p->vendor & 0xffff);
		snprintf(dev, sizeof(dev), "%04x", (unsigned)p->device & 0xffff);
		json_array_append_new(gpus,
				      json_pack("{s:s,s:s,s:o,s:o}", "pciAddress", p->addr,
						"vendorId", ven, "deviceId",
						p->device >= 0 ? json_string(dev) : json_null(),
						"name", inv_str_or_null(p->name)));
	}
	for (size_t i = 0; i < inv->nnics; i++) {
		const struct inventory_nic *n = &inv->nics[i];
		json_t *o = json_pack("{s:o,s:o,s:o}", "name", jsonx_string_lossy(n->name), "mac",
				      jsonx_string_lossy(n->mac), "operstate",
				      jsonx_string_lossy(n->operstate));
		if (n->speed_mbps > 0)
			json_object_set_new(o, "speedMbps", json_integer(n->speed_mbps));
		if (n->pci_addr[0])
			json_object_set_new(o, "pciAddress", json_string(n->pci_addr));
		json_array_append_new(nics, o);
	}
	for (size_t i = 0; i < inv->ndisks; i++) {
		const struct inventory_disk *d = &inv->disks[i];
		json_t *o = json_pack("{s:o,s:o,s:I}", "name", jsonx_string_lossy(d->name), "path",
				      jsonx_string_lossy(d->path), "sizeBytes",
				      (json_int_t)d->size_bytes);
		if (d->model[0])
			json_object_set_new(o, "model", jsonx_string_lossy(d->model));
		if (d->serial[0])
			json_object_set_new(o, "serial", jsonx_string_lossy(d->serial));
		json_object_set_new(o, "rotational", json_boolean(d->rotational));
		json_object_set_new(o, "removable", json_boolean(d->removable));
		json_array_append_new(disks, o);
	}
	const struct inventory_system *s = &inv->system;
	return json_pack("{s:s,s:{s:o,s:o,s:o,s:o},s:{s:o,s:i},s:I,s:o,s:I,s:o,s:o}", "source",
			 "inspection", "system", "manufacturer", inv_str_or_null(s->manufacturer),
			 "productName", inv_str_or_null(s->product_name), "serialNumber",
			 inv_str_or_null(s->serial_number), "uuid", inv_str_or_null(s->uuid), "cpu",
			 "model", inv_str_or_null(inv->cpu.model), "count", inv->cpu.count,
			 "memoryMiB", (json_int_t)inv->memory_mib, "gpus", gpus, "pciDevices",
			 (json_int_t)inv->npci, "nics", nics, "disks", disks);
}
