/* layers: base core agent */
/* test_inventory.c - the node inventory of `fleetplane agent inspect` (agent/inventory.h):
 * the lspci, dmidecode and /proc parsers on the real samples in tests/data/inventory
 * (SOURCES.md there says where each comes from; every expected count and value below was
 * read by hand from the file named), malformed and bounded inputs, and the sysfs readers and
 * the contract's JSON over a fake /sys + /proc tree built in a temporary directory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"

#include "agent/deploy.h"
#include "agent/inventory.h"
#include "base/err.h"

#include "base/banned.h"

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

/* Reads tests/data/inventory/<name> whole; the caller frees. */
static char *slurp(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/data/inventory/%s", srcdir(), name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	char *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static struct inventory_pci pci[INVENTORY_MAX_PCI];

static size_t count_gpus(const struct inventory_pci *p, size_t n)
{
	size_t g = 0;
	for (size_t i = 0; i < n; i++)
		g += (size_t)inventory_pci_is_gpu(&p[i]);
	return g;
}

static size_t parse_file(const char *name, size_t *skipped, int *truncated)
{
	size_t len;
	char *t = slurp(name, &len);
	*skipped = 0;
	*truncated = 0;
	size_t n = inventory_parse_lspci(t, len, pci, INVENTORY_MAX_PCI, skipped, truncated);
	free(t);
	return n;
}

static const struct inventory_pci *find_pci(size_t n, const char *addr)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(pci[i].addr, addr) == 0)
			return &pci[i];
	fail_msg("no PCI device %s", addr);
	return NULL;
}

/* lspci -nn with domains: 31 lines, 8 A100 (10de:20b2, class 0302), NVSwitch bridges 0680. */
static void test_lspci_nn_a100(void **state)
{
	size_t skipped;
	int trunc;
	size_t n = parse_file("lspci-nn-a100-8gpu.txt", &skipped, &trunc);
	ASSERT_EQ_INT(n, 31);
	ASSERT_EQ_INT(skipped, 0);
	ASSERT_EQ_INT(trunc, 0);
	ASSERT_EQ_INT(count_gpus(pci, n), 8);
	ASSERT_EQ_STR(pci[0].addr, "0001:00:00.0");
	ASSERT_EQ_INT(pci[0].class_code, 0x0302);
	ASSERT_EQ_INT(pci[0].vendor, 0x10de);
	ASSERT_EQ_INT(pci[0].device, 0x20b2);
	ASSERT_EQ_STR(pci[0].name, "NVIDIA Corporation GA100 [A100 SXM4 80GB]");
	const struct inventory_pci *sw = find_pci(n, "0005:00:00.0");
	ASSERT_EQ_INT(sw->class_code, 0x0680);
	ASSERT_EQ_INT(sw->device, 0x1af1);
	ASSERT_EQ_INT(inventory_pci_is_gpu(sw), 0);
	const struct inventory_pci *gpu = find_pci(n, "000e:00:00.0");
	ASSERT_EQ_INT(inventory_pci_is_gpu(gpu), 1);
	/* the last line has no newline */
	ASSERT_EQ_STR(pci[30].addr, "f392:00:00.0");
	ASSERT_EQ_INT(pci[30].vendor, 0x1414);
	ASSERT_EQ_INT(pci[30].device, 0xb111);
	ASSERT_EQ_INT(pci[30].class_code, 0x0108);
	ASSERT_EQ_STR(pci[30].name, "Microsoft Corporation Device");
	const struct inventory_pci *eth = find_pci(n, "c941:00:02.0");
	ASSERT_EQ_STR(eth->name, "Mellanox Technologies MT27710 Family [ConnectX-4 Lx Virtual "
				 "Function]");
}

/* plain lspci (no codes): 87 devices, 4 GB200 GPUs "Device 2941", an ASPEED VGA. */
static void test_lspci_plain_gb200(void **state)
{
	size_t skipped;
	int trunc;
	size_t n = parse_file("lspci-gb200.txt", &skipped, &trunc);
	ASSERT_EQ_INT(n, 87);
	ASSERT_EQ_INT(skipped, 0);
	ASSERT_EQ_INT(count_gpus(pci, n), 4);
	const char *gpus[] = {"0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"};
	for (int i = 0; i < 4; i++) {
		const struct inventory_pci *g = find_pci(n, gpus[i]);
		ASSERT_EQ_INT(inventory_pci_is_gpu(g), 1);
		ASSERT_EQ_INT(g->vendor, 0x10de);
		ASSERT_EQ_INT(g->device, 0x2941);
		ASSERT_EQ_INT(g->class_code, 0x0302);
		ASSERT_EQ_STR(g->name, "NVIDIA Corporation Device 2941");
	}
	const struct inventory_pci *vga = find_pci(n, "0005:07:00.0");
	ASSERT_EQ_INT(vga->class_code, 0x0300);
	ASSERT_EQ_INT(vga->vendor, -1); /* ASPEED: no code without -nn */
	ASSERT_EQ_INT(inventory_pci_is_gpu(vga), 0);
	const struct inventory_pci *br = find_pci(n, "0000:00:00.0");
	ASSERT_EQ_INT(br->class_code, -1);
	ASSERT_EQ_INT(br->vendor, 0x10de);
	ASSERT_EQ_INT(br->device, 0x22b2);
	ASSERT_EQ_INT(inventory_pci_is_gpu(br), 0);
}

/* lspci -vvv without domains: 517 devices (detail lines skipped), 8 H100 "Device 2330". */
static void test_lspci_vvv_h100(void **state)
{
	size_t skipped;
	int trunc;
	size_t n = parse_file("lspci-vvv-h100-dell-xe9680.txt", &skipped, &trunc);
	ASSERT_EQ_INT(n, 517);
	ASSERT_EQ_INT(skipped, 0);
	ASSERT_EQ_INT(trunc, 0);
	ASSERT_EQ_INT(count_gpus(pci, n), 8);
	const char *gpus[] = {"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0",
			      "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0"};
	for (int i = 0; i < 8; i++) {
		const struct inventory_pci *g = find_pci(n, gpus[i]);
		ASSERT_EQ_INT(inventory_pci_is_gpu(g), 1);
		ASSERT_EQ_INT(g->device, 0x2330);
	}
	const struct inventory_pci *vga = find_pci(n, "0000:03:00.0");
	ASSERT_EQ_INT(vga->class_code, 0x0300);
	ASSERT_EQ_STR(vga->name, "Matrox Electronics Systems Ltd. Integrated Matrox G200eW3 "
				 "Graphics Controller");
	ASSERT_EQ_INT(inventory_pci_is_gpu(vga), 0);
	const struct inventory_pci *gsp = find_pci(n, "0000:00:00.4");
	ASSERT_EQ_INT(gsp->class_code, 0x0807); /* "Generic system peripheral [0807]" */
	const struct inventory_pci *nvs = find_pci(n, "0000:83:00.0");
	ASSERT_EQ_INT(nvs->vendor, 0x10de);
	ASSERT_EQ_INT(inventory_pci_is_gpu(nvs), 0); /* NVSwitch "Bridge" */
}

/* The brief's own -nn line, and what is skipped or bounded. */
static void test_lspci_lines(void **state)
{
	const char *t = "17:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] "
			"[10de:2330] (rev a1)\n"
			"garbage line\n"
			"17:00.0\n"
			"zz:00.0 VGA compatible controller: x\n"
			"18:00.9 VGA compatible controller: bad function\n"
			"\tdetail line\n"
			"\n"
			"0000:19:00.0 VGA compatible controller [0300]: NVIDIA Corporation AD102 "
			"[10DE:2684]\r\n";
	size_t skipped = 0;
	int trunc = 0;
	size_t n = inventory_parse_lspci(t, strlen(t), pci, 8, &skipped, &trunc);
	ASSERT_EQ_INT(n, 2);
	ASSERT_EQ_INT(skipped, 4);
	ASSERT_EQ_STR(pci[0].addr, "0000:17:00.0");
	ASSERT_EQ_INT(pci[0].class_code, 0x0302);
	ASSERT_EQ_INT(pci[0].vendor, 0x10de);
	ASSERT_EQ_INT(pci[0].device, 0x2330);
	ASSERT_EQ_STR(pci[0].name, "NVIDIA Corporation GH100 [H100 SXM5 80GB]");
	ASSERT_EQ_INT(pci[1].device, 0x2684); /* upper-case hex, CRLF */
	ASSERT_EQ_INT(inventory_pci_is_gpu(&pci[1]), 1);

	/* busybox lspci (a ramdisk may carry it): "<slot> Class <cccc>: <vvvv>:<dddd>" */
	const char *bb = "0000:00:01.0 Class 0604: 8086:1234\n"
			 "0000:17:00.0 Class 0302: 10de:2330\n";
	skipped = 0;
	n = inventory_parse_lspci(bb, strlen(bb), pci, 8, &skipped, &trunc);
	ASSERT_EQ_INT(n, 2);
	ASSERT_EQ_INT(skipped, 0);
	ASSERT_EQ_INT(pci[0].class_code, 0x0604);
	ASSERT_EQ_INT(pci[0].vendor, 0x8086);
	ASSERT_EQ_INT(inventory_pci_is_gpu(&pci[0]), 0);
	ASSERT_EQ_INT(pci[1].class_code, 0x0302);
	ASSERT_EQ_INT(pci[1].vendor, 0x10de);
	ASSERT_EQ_INT(pci[1].device, 0x2330);
	ASSERT_EQ_INT(inventory_pci_is_gpu(&pci[1]), 1);

	skipped = 0;
	n = inventory_parse_lspci(t, strlen(t), pci, 1, &skipped, &trunc);
	ASSERT_EQ_INT(n, 1);
	ASSERT_EQ_INT(trunc, 1);

	/* NUL bytes and a 5000-byte line: no crash, the line is cut and still parses. */
	char big[6000];
	memset(big, 'x', sizeof(big));
	memcpy(big, "01:00.0 3D controller: NVIDIA Corporation ", 43);
	big[10] = '\0';
	big[sizeof(big) - 1] = '\n';
	skipped = 0;
	trunc = 0;
	n = inventory_parse_lspci(big, sizeof(big), pci, 8, &skipped, &trunc);
	ASSERT_EQ_INT(n + skipped, 1);
	ASSERT_EQ_INT(inventory_parse_lspci(NULL, 0, pci, 8, &skipped, &trunc), 0);
}

static void test_dmidecode(void **state)
{
	struct inventory_system s;
	size_t len;
	char *t = slurp("dmidecode-t1-dell-xe9680.txt", &len);
	ASSERT_OK(inventory_parse_dmidecode(t, len, &s));
	ASSERT_EQ_STR(s.manufacturer, "Dell Inc.");
	ASSERT_EQ_STR(s.product_name, "PowerEdge XE9680");
	ASSERT_EQ_STR(s.serial_number, "SERIAL0001");
	ASSERT_EQ_STR(s.uuid, "00000000-0000-0000-0000-000000000001");
	free(t);

	/* type 1 then type 3 (Chassis Manufacturer must not overwrite) then ipmitool fru */
	t = slurp("dmidecode-t1-t3-ipmitool-fru-dell-xe8545.txt", &len);
	ASSERT_OK(inventory_parse_dmidecode(t, len, &s));
	ASSERT_EQ_STR(s.manufacturer, "Dell Inc.");
	ASSERT_EQ_STR(s.product_name, "PowerEdge T-XE8545");
	ASSERT_EQ_STR(s.serial_number, "SERIAL0001");
	free(t);

	t = slurp("dmidecode-t1-t3-ipmitool-fru-dgx-a100.txt", &len);
	ASSERT_OK(inventory_parse_dmidecode(t, len, &s));
	ASSERT_EQ_STR(s.manufacturer, "NVIDIA");
	ASSERT_EQ_STR(s.product_name, "DGXA100 920-23687-2531-001");
	ASSERT_EQ_STR(s.uuid, "00000000-0000-0000-0000-000000000001");
	free(t);

	const char *ph = "Handle 0x0001, DMI type 1, 27 bytes\nSystem Information\n"
			 "\tManufacturer: To Be Filled By O.E.M.\n\tProduct Name: X1\n"
			 "\tSerial Number: Not Specified\n";
	ASSERT_OK(inventory_parse_dmidecode(ph, strlen(ph), &s));
	ASSERT_EQ_STR(s.manufacturer, "");
	ASSERT_EQ_STR(s.product_name, "X1");
	ASSERT_EQ_STR(s.serial_number, "");
	const char *none = "# dmidecode 3.3\nHandle 0x0300, DMI type 3, 22 bytes\n"
			   "Chassis Information\n\tManufacturer: Dell Inc.\n";
	ASSERT_EQ_ERR(inventory_parse_dmidecode(none, strlen(none), &s), FP_ENOTFOUND);
	ASSERT_EQ_STR(s.manufacturer, "");
}

static void test_proc(void **state)
{
	size_t len;
	uint64_t mib = 0;
	char *t = slurp("proc-meminfo-24gib-vm.txt", &len);
	ASSERT_OK(inventory_parse_meminfo(t, len, &mib));
	ASSERT_EQ_INT(mib, 24105); /* 24683568 kB / 1024 */
	free(t);
	ASSERT_EQ_ERR(inventory_parse_meminfo("MemTotal: lots\n", 15, &mib), FP_ENOTFOUND);
	ASSERT_EQ_ERR(inventory_parse_meminfo("MemFree: 1 kB\n", 14, &mib), FP_ENOTFOUND);

	struct inventory_cpu cpu;
	t = slurp("proc-cpuinfo-2cpu-amd-epyc-vm.txt", &len);
	ASSERT_OK(inventory_parse_cpuinfo(t, len, &cpu));
	ASSERT_EQ_INT(cpu.count, 2);
	ASSERT_EQ_STR(cpu.model, "AMD EPYC");
	free(t);
	/* arm64 shape: processor lines, no model name */
	const char *arm = "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU part\t: 0xd4f\n\n"
			  "processor\t: 1\nBogoMIPS\t: 2000.00\n";
	ASSERT_OK(inventory_parse_cpuinfo(arm, strlen(arm), &cpu));
	ASSERT_EQ_INT(cpu.count, 2);
	ASSERT_EQ_STR(cpu.model, "");
	ASSERT_EQ_ERR(inventory_parse_cpuinfo("", 0, &cpu), FP_ENOTFOUND);
}

/* ------------------------------------------------------------------ fake sysfs */

static char root[256];

static void put(const char *rel, const char *text)
{
	char path[1024], dir[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0755);
			*p = '/';
		}
	FILE *f = fopen(path, "w");
	if (!f)
		fail_msg("cannot create %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static void link_to(const char *target, const char *rel)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (symlink(target, path) < 0)
		fail_msg("symlink %s: %s", path, strerror(errno));
}

static int tree_setup(void **state)
{
	snprintf(root, sizeof(root), "%s/fp-inv.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return -1;
	/* PCI functions: an H100 and a virtio NIC, and an entry that is no address */
	put("sys/devices/pci0000:00/0000:17:00.0/vendor", "0x10de\n");
	put("sys/devices/pci0000:00/0000:17:00.0/device", "0x2330\n");
	put("sys/devices/pci0000:00/0000:17:00.0/class", "0x030200\n");
	put("sys/devices/pci0000:00/0000:00:03.0/vendor", "0x1af4\n");
	put("sys/devices/pci0000:00/0000:00:03.0/device", "0x1041\n");
	put("sys/devices/pci0000:00/0000:00:03.0/class", "0x020000\n");
	put("sys/devices/pci0000:00/0000:00:03.0/virtio0/x", "");
	put("sys/bus/pci/devices/.keep", "");
	link_to("../../../devices/pci0000:00/0000:17:00.0", "sys/bus/pci/devices/0000:17:00.0");
	link_to("../../../devices/pci0000:00/0000:00:03.0", "sys/bus/pci/devices/0000:00:03.0");
	put("sys/bus/pci/devices/junk/vendor", "0x1\n");
	/* NICs: lo and br0 virtual (no device link), eth0 on virtio, ib0 on the PCI function */
	put("sys/class/net/lo/address", "00:00:00:00:00:00\n");
	put("sys/class/net/lo/operstate", "unknown\n");
	put("sys/class/net/br0/address", "aa:bb:cc:00:00:01\n");
	put("sys/class/net/eth0/address", "52:54:00:12:34:56\n");
	put("sys/class/net/eth0/operstate", "up\n");
	put("sys/class/net/eth0/speed", "25000\n");
	link_to("../../../devices/pci0000:00/0000:00:03.0/virtio0", "sys/class/net/eth0/device");
	put("sys/class/net/ib0/address", "00:00:10:49:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:6b:"
					 "6b:6a\n");
	put("sys/class/net/ib0/operstate", "down\n");
	link_to("../../../devices/pci0000:00/0000:17:00.0", "sys/class/net/ib0/device");
	put("sys/class/net/bonding_masters", "\n");
	/* disks: vda 20 GiB rotational with /sys/block/vda/serial, nvme0n1 1 TB, sr0
	 * removable, loop0 and dm-0 left out */
	put("sys/block/vda/size", "41943040\n");
	put("sys/block/vda/serial", "disk-a\n");
	put("sys/block/vda/queue/rotational", "1\n");
	put("sys/block/vda/removable", "0\n");
	put("sys/block/nvme0n1/size", "1953525168\n");
	put("sys/block/nvme0n1/device/model", "SAMSUNG MZQL21T9HCJR-00A07             \n");
	put("sys/block/nvme0n1/device/serial", "S64GNE0R000001      \n");
	put("sys/block/nvme0n1/queue/rotational", "0\n");
	put("sys/block/nvme0n1/removable", "0\n");
	put("sys/block/sr0/size", "2097152\n");
	put("sys/block/sr0/removable", "1\n");
	put("sys/block/loop0/size", "100\n");
	put("sys/block/dm-0/size", "100\n");
	put("sys/block/bad0/size", "lots\n");
	/* DMI: product_serial unreadable as non-root on a real system: absent here */
	put("sys/class/dmi/id/sys_vendor", "QEMU\n");
	put("sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n");
	put("sys/class/dmi/id/product_uuid", "4c4c4544-0000-1000-8000-000000000001\n");
	size_t len;
	char *t = slurp("proc-meminfo-24gib-vm.txt", &len);
	put("proc/meminfo", t);
	free(t);
	t = slurp("proc-cpuinfo-2cpu-amd-epyc-vm.txt", &len);
	put("proc/cpuinfo", t);
	free(t);
	return 0;
}

static int tree_teardown(void **state)
{
	char *argv[] = {"rm", "-rf", root, NULL};
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return 0;
}

static void test_sysfs_readers(void **state)
{
	struct inventory_nic nics[4];
	struct inventory_disk disks[8];
	size_t skipped = 0;
	int trunc = 0;
	size_t n = inventory_read_nics(root, nics, 4, &skipped, &trunc);
	ASSERT_EQ_INT(n, 2); /* eth0, ib0: lo, br0 and bonding_masters have no device link */
	ASSERT_EQ_INT(trunc, 0);
	ASSERT_EQ_STR(nics[0].name, "eth0");
	ASSERT_EQ_STR(nics[0].mac, "52:54:00:12:34:56");
	ASSERT_EQ_STR(nics[0].operstate, "up");
	ASSERT_EQ_INT(nics[0].speed_mbps, 25000);
	ASSERT_EQ_STR(nics[0].pci_addr, "0000:00:03.0"); /* the virtio device's parent */
	ASSERT_EQ_STR(nics[1].name, "ib0");
	ASSERT_EQ_INT(nics[1].speed_mbps, -1);
	ASSERT_EQ_STR(nics[1].pci_addr, "0000:17:00.0");
	n = inventory_read_nics(root, nics, 1, &skipped, &trunc);
	ASSERT_EQ_INT(n, 1);
	ASSERT_EQ_INT(trunc, 1);

	skipped = 0;
	trunc = 0;
	n = inventory_read_disks(root, disks, 8, &skipped, &trunc);
	ASSERT_EQ_INT(n, 3); /* nvme0n1, sr0, vda in name order; bad0 skipped */
	ASSERT_EQ_INT(skipped, 1);
	ASSERT_EQ_STR(disks[0].name, "nvme0n1");
	ASSERT_EQ_STR(disks[0].path, "/dev/nvme0n1");
	ASSERT_EQ_INT(disks[0].size_bytes, 1953525168ULL * 512);
	ASSERT_EQ_STR(disks[0].model, "SAMSUNG MZQL21T9HCJR-00A07");
	ASSERT_EQ_STR(disks[0].serial, "S64GNE0R000001");
	ASSERT_EQ_INT(disks[0].rotational, 0);
	ASSERT_EQ_STR(disks[1].name, "sr0");
	ASSERT_EQ_INT(disks[1].removable, 1);
	ASSERT_EQ_STR(disks[2].name, "vda");
	ASSERT_EQ_INT(disks[2].size_bytes, 21474836480ULL);
	ASSERT_EQ_STR(disks[2].serial, "disk-a");
	ASSERT_EQ_STR(disks[2].model, "");
	ASSERT_EQ_INT(disks[2].rotational, 1);

	/* the contract's auto rule: the smallest non-removable disk that holds the image */
	const struct inventory_disk *d = deploy_pick_disk(disks, n, 10ULL << 30);
	assert_non_null(d);
	ASSERT_EQ_STR(d->name, "vda");
	d = deploy_pick_disk(disks, n, 30ULL << 30);
	assert_non_null(d);
	ASSERT_EQ_STR(d->name, "nvme0n1");
	assert_null(deploy_pick_disk(disks, n, 2ULL << 40));
	d = deploy_pick_disk(disks, n, 1);
	ASSERT_EQ_STR(d->name, "vda"); /* sr0 (1 GiB) is removable */

	skipped = 0;
	n = inventory_read_pci_sysfs(root, pci, 8, &skipped, &trunc);
	ASSERT_EQ_INT(n, 2);
	ASSERT_EQ_INT(skipped, 1); /* "junk" */
	ASSERT_EQ_STR(pci[1].addr, "0000:17:00.0");
	ASSERT_EQ_INT(pci[1].class_code, 0x0302);
	ASSERT_EQ_STR(pci[1].name, "NVIDIA Corporation Device 2330");
	ASSERT_EQ_INT(inventory_pci_is_gpu(&pci[1]), 1);
	ASSERT_EQ_STR(pci[0].name, "Vendor 1af4 Device 1041");

	struct inventory_system s;
	ASSERT_OK(inventory_read_dmi_sysfs(root, &s));
	ASSERT_EQ_STR(s.manufacturer, "QEMU");
	ASSERT_EQ_STR(s.serial_number, "");
	ASSERT_EQ_ERR(inventory_read_dmi_sysfs("/nonexistent-fp", &s), FP_ENOTFOUND);
}

static void test_collect_json(void **state)
{
	struct inventory *inv = calloc(1, sizeof(*inv));
	char warn[512];
	inventory_collect(root, 0, inv, warn, sizeof(warn));
	ASSERT_EQ_STR(warn, "");
	ASSERT_EQ_STR(inv->pci_source, "sysfs");
	ASSERT_EQ_STR(inv->system_source, "sysfs");
	json_t *j = inventory_to_json(inv);
	char *s = json_dumps(j, JSON_COMPACT);
	ASSERT_EQ_STR(
		s,
		"{\"source\":\"inspection\",\"system\":{\"manufacturer\":\"QEMU\",\"productName\":"
		"\"Standard PC (Q35 + ICH9, 2009)\",\"serialNumber\":null,\"uuid\":\"4c4c4544-"
		"0000-1000-8000-000000000001\"},\"cpu\":{\"model\":\"AMD EPYC\",\"count\":2},"
		"\"memoryMiB\":24105,\"gpus\":[{\"pciAddress\":\"0000:17:00.0\",\"vendorId\":"
		"\"10de\",\"deviceId\":\"2330\",\"name\":\"NVIDIA Corporation Device 2330\"}],"
		"\"pciDevices\":2,\"nics\":[{\"name\":\"eth0\",\"mac\":\"52:54:00:12:34:56\","
		"\"operstate\":\"up\",\"speedMbps\":25000,\"pciAddress\":\"0000:00:03.0\"},"
		"{\"name\":\"ib0\",\"mac\":\"00:00:10:49:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:"
		"6b:6b:6a\",\"operstate\":\"down\",\"pciAddress\":\"0000:17:00.0\"}],\"disks\":"
		"[{\"name\":\"nvme0n1\",\"path\":\"/dev/nvme0n1\",\"sizeBytes\":1000204886016,"
		"\"model\":\"SAMSUNG MZQL21T9HCJR-00A07\",\"serial\":\"S64GNE0R000001\","
		"\"rotational\":false,\"removable\":false},{\"name\":\"sr0\",\"path\":\"/dev/sr0\","
		"\"sizeBytes\":1073741824,\"rotational\":false,\"removable\":true},{\"name\":"
		"\"vda\",\"path\":\"/dev/vda\",\"sizeBytes\":21474836480,\"serial\":\"disk-a\","
		"\"rotational\":true,\"removable\":false}]}");
	free(s);
	json_decref(j);

	/* An empty root: every part missing is named, nothing crashes, the JSON keeps shape. */
	inventory_collect("/nonexistent-fp", 0, inv, warn, sizeof(warn));
	ASSERT_EQ_STR(warn, "no PCI devices found; no DMI system information; no MemTotal in "
			    "/proc/meminfo; no processor in /proc/cpuinfo");
	j = inventory_to_json(inv);
	ASSERT_EQ_INT(json_array_size(json_object_get(j, "gpus")), 0);
	ASSERT_EQ_INT(json_integer_value(json_object_get(j, "pciDevices")), 0);
	json_decref(j);
	free(inv);
}

/* lspci output parsed into the JSON: the a100 sample's 8 GPUs in the contract's shape. */
static void test_json_gpus_from_lspci(void **state)
{
	struct inventory *inv = calloc(1, sizeof(*inv));
	size_t len;
	char *t = slurp("lspci-nn-a100-8gpu.txt", &len);
	inv->npci = inventory_parse_lspci(t, len, inv->pci, INVENTORY_MAX_PCI, &inv->skipped,
					  &inv->truncated);
	free(t);
	json_t *j = inventory_to_json(inv);
	json_t *g = json_object_get(j, "gpus");
	ASSERT_EQ_INT(json_array_size(g), 8);
	ASSERT_EQ_INT(json_integer_value(json_object_get(j, "pciDevices")), 31);
	char *s = json_dumps(json_array_get(g, 7), JSON_COMPACT);
	ASSERT_EQ_STR(s, "{\"pciAddress\":\"000e:00:00.0\",\"vendorId\":\"10de\",\"deviceId\":"
			 "\"20b2\",\"name\":\"NVIDIA Corporation GA100 [A100 SXM4 80GB]\"}");
	free(s);
	json_decref(j);
	free(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lspci_nn_a100),
		cmocka_unit_test(test_lspci_plain_gb200),
		cmocka_unit_test(test_lspci_vvv_h100),
		cmocka_unit_test(test_lspci_lines),
		cmocka_unit_test(test_dmidecode),
		cmocka_unit_test(test_proc),
		cmocka_unit_test(test_json_gpus_from_lspci),
		cmocka_unit_test_setup_teardown(test_sysfs_readers, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_collect_json, tree_setup, tree_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
