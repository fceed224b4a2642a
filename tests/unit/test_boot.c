/* layers: base core store driver engine boot */
/* test_boot.c - the pure parts of network-boot provisioning (issue 11): boot_mac_parse,
 * boot_range_parse (RFC 9110 section 14.1.2), ipxe_word_check and the iPXE scripts (exact
 * text), the dnsmasq hosts file (exact text, sorted, unsafe entries skipped; write only when
 * it changed; SIGHUP through a pid file), the image store on a temporary directory (sha256 of
 * known bytes, replace, EEXIST, bad names, temporary directories skipped, a size change seen by
 * image_open), the per-attempt boot token (secret_boot_token: a fixed key gives the value
 * computed independently with Python's hashlib/hmac, and it changes with node, op id and key)
 * and spec.provision / spec.hardware in the codec (accepted, round-tripped, each bad field
 * refused naming it). The HTTP routes are tested against the real binary in
 * tests/integration/test_boot_service.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "boot/boot_server.h"
#include "boot/dnsmasq.h"
#include "boot/image.h"
#include "boot/ipxe.h"
#include "core/codec.h"
#include "core/model.h"
#include "core/secret.h"

#include "check.h"

#include "base/banned.h"

/* 2026-01-02T03:04:05Z in epoch ms (as test_core.c) */
#define T0 1767323045000LL

/* ---------------------------------------------------------------- helpers */

static char *mktmp(void)
{
	char *d = xstrdup("/tmp/fp-test-boot-XXXXXX");
	if (!mkdtemp(d))
		fail_msg("mkdtemp failed");
	return d;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void rmtree(char *d)
{
	nftw(d, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		fail_msg("cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *b = xcalloc(1, 65536);
	size_t n = fread(b, 1, 65535, f);
	b[n] = 0;
	fclose(f);
	return b;
}

/* ---------------------------------------------------------------- MAC */

static void expect_mac(const char *in, const char *want)
{
	char out[BOOT_MAC_LEN + 1];
	memset(out, 'x', sizeof(out));
	int rc = boot_mac_parse(in, out);
	if (rc != 0)
		fail_msg("boot_mac_parse(\"%s\") = %s, want 0", in, fp_err_name(rc));
	ASSERT_EQ_STR(out, want);
}

static void expect_bad_mac(const char *in)
{
	char out[BOOT_MAC_LEN + 1];
	int rc = boot_mac_parse(in, out);
	if (rc != FP_EINVAL)
		fail_msg("boot_mac_parse(\"%s\") = %d, want FP_EINVAL", in ? in : "(null)", rc);
}

static void test_mac_parse(void **state)
{
	(void)state;
	expect_mac("52:54:00:12:34:56", "52:54:00:12:34:56");
	expect_mac("52-54-00-12-34-56", "52:54:00:12:34:56");
	expect_mac("52:54:00:AB:cD:EF", "52:54:00:ab:cd:ef");
	expect_mac("FF-FF-FF-FF-FF-FF", "ff:ff:ff:ff:ff:ff");
	expect_mac("00:00:00:00:00:00", "00:00:00:00:00:00");
	/* NULL, empty, wrong length */
	expect_bad_mac(NULL);
	expect_bad_mac("");
	expect_bad_mac("52:54:00:12:34:5");
	expect_bad_mac("52:54:00:12:34:567");
	expect_bad_mac("52:54:00:12:34:56 ");
	expect_bad_mac("52:54:00:12:34");
	/* separators: other characters, mixed, missing */
	expect_bad_mac("52.54.00.12.34.56");
	expect_bad_mac("52 54 00 12 34 56");
	expect_bad_mac("52:54-00:12:34:56");
	expect_bad_mac("52-54-00-12-34:56");
	expect_bad_mac("525400123456xxxxx");
	expect_bad_mac("52:5400:12:34:566");
	/* non-hex digits, signs, NUL-free control bytes */
	expect_bad_mac("52:54:00:12:34:5g");
	expect_bad_mac("g2:54:00:12:34:56");
	expect_bad_mac("52:54:00:1 :34:56");
	expect_bad_mac("52:54:00:+1:34:56");
	expect_bad_mac("52:54:00:12:34:\x01"
		       "6");
	expect_bad_mac("\xc3\xa9:54:00:12:34:56");
	/* %-encoded: the query string arrives decoded; an encoded one is not a MAC */
	expect_bad_mac("52%3A54%3A00%3A12%3A34%3A56");
}

/* ---------------------------------------------------------------- If-None-Match */

static void test_etag_match(void **state)
{
	(void)state;
	const char *e = "\"abc123\"";
	assert_int_equal(boot_etag_match(NULL, e), 0);
	assert_int_equal(boot_etag_match("", e), 0);
	assert_int_equal(boot_etag_match("\"abc123\"", e), 1);
	assert_int_equal(boot_etag_match("*", e), 1);
	assert_int_equal(boot_etag_match(" * ", e), 1);
	/* weak comparison: W/ is ignored (RFC 9110 section 8.8.3.2) */
	assert_int_equal(boot_etag_match("W/\"abc123\"", e), 1);
	/* a list, the match anywhere in it, with or without spaces */
	assert_int_equal(boot_etag_match("\"x\", \"abc123\"", e), 1);
	assert_int_equal(boot_etag_match("\"x\",W/\"y\" ,  \"abc123\"", e), 1);
	assert_int_equal(boot_etag_match("\"x\", \"y\"", e), 0);
	/* a prefix or a longer tag is not the tag */
	assert_int_equal(boot_etag_match("\"abc12\"", e), 0);
	assert_int_equal(boot_etag_match("\"abc1234\"", e), 0);
	assert_int_equal(boot_etag_match("abc123", e), 0);
	/* malformed members end the list: no match after them */
	assert_int_equal(boot_etag_match("\"x\" junk, \"abc123\"", e), 0);
	assert_int_equal(boot_etag_match("\"abc123", e), 0);
	assert_int_equal(boot_etag_match("\"x\", *", e), 0);
}

/* ---------------------------------------------------------------- Range */

static void expect_range(const char *h, int64_t size, int want_rc, int64_t want_off,
			 int64_t want_len)
{
	int64_t off = -7, len = -7;
	int rc = boot_range_parse(h, size, &off, &len);
	if (rc != want_rc)
		fail_msg("boot_range_parse(\"%s\", %lld) = %d, want %d", h ? h : "(null)",
			 (long long)size, rc, want_rc);
	if (want_rc == 1 && (off != want_off || len != want_len))
		fail_msg("boot_range_parse(\"%s\", %lld): [%lld, +%lld), want [%lld, +%lld)", h,
			 (long long)size, (long long)off, (long long)len, (long long)want_off,
			 (long long)want_len);
}

static void test_range_parse(void **state)
{
	(void)state;
	/* the three forms */
	expect_range("bytes=0-99", 1000, 1, 0, 100);
	expect_range("bytes=100-199", 1000, 1, 100, 100);
	expect_range("bytes=999-999", 1000, 1, 999, 1);
	expect_range("bytes=500-", 1000, 1, 500, 500);
	expect_range("bytes=0-", 1000, 1, 0, 1000);
	expect_range("bytes=-100", 1000, 1, 900, 100);
	expect_range("bytes=-1", 1000, 1, 999, 1);
	/* clipped to the file: an end past it, a suffix longer than it */
	expect_range("bytes=900-5000", 1000, 1, 900, 100);
	expect_range("bytes=0-99999999999999999999", 1000, 1, 0, 1000);
	expect_range("bytes=-1000", 1000, 1, 0, 1000);
	expect_range("bytes=-5000", 1000, 1, 0, 1000);
	/* the start past the end: 416 */
	expect_range("bytes=1000-", 1000, -1, 0, 0);
	expect_range("bytes=1000-2000", 1000, -1, 0, 0);
	expect_range("bytes=5000-6000", 1000, -1, 0, 0);
	expect_range("bytes=99999999999999999999-", 1000, -1, 0, 0);
	/* an empty file: nothing is satisfiable */
	expect_range("bytes=0-", 0, -1, 0, 0);
	expect_range("bytes=0-10", 0, -1, 0, 0);
	expect_range("bytes=-10", 0, -1, 0, 0);
	/* no header, multi-range, and forms not understood: the whole file */
	expect_range(NULL, 1000, 0, 0, 0);
	expect_range("", 1000, 0, 0, 0);
	expect_range("bytes=0-1,5-6", 1000, 0, 0, 0);
	expect_range("bytes=-5,0-1", 1000, 0, 0, 0);
	expect_range("bytes=", 1000, 0, 0, 0);
	expect_range("bytes=-", 1000, 0, 0, 0);
	expect_range("bytes=-0", 1000, 0, 0, 0);
	expect_range("bytes=--5", 1000, 0, 0, 0);
	expect_range("bytes=-+5", 1000, 0, 0, 0);
	expect_range("bytes=- 5", 1000, 0, 0, 0);
	expect_range("bytes=+5-", 1000, 0, 0, 0);
	expect_range("bytes= 5-", 1000, 0, 0, 0);
	expect_range("bytes=5", 1000, 0, 0, 0);
	expect_range("bytes=5-+7", 1000, 0, 0, 0);
	expect_range("bytes=5- 7", 1000, 0, 0, 0);
	expect_range("bytes=5-7 ", 1000, 0, 0, 0);
	expect_range("bytes=5-7x", 1000, 0, 0, 0);
	expect_range("bytes=5--7", 1000, 0, 0, 0);
	expect_range("bytes=7-5", 1000, 0, 0, 0); /* last < first: invalid, ignored */
	expect_range("bytes=a-b", 1000, 0, 0, 0);
	expect_range("Bytes=0-1", 1000, 0, 0, 0);
	expect_range("items=0-1", 1000, 0, 0, 0);
	expect_range("bytes 0-1", 1000, 0, 0, 0);
	expect_range("0-1", 1000, 0, 0, 0);
}

/* ---------------------------------------------------------------- iPXE */

static void test_word_check(void **state)
{
	(void)state;
	ASSERT_OK(ipxe_word_check("", 10));
	ASSERT_OK(ipxe_word_check("console=ttyS0 console=tty0", 100));
	ASSERT_OK(ipxe_word_check("http://10.77.0.1:7071/a?b=c&d=e%20f~!@()*+,;[]{}|<>^`", 100));
	ASSERT_OK(ipxe_word_check("abcde", 5));
	ASSERT_EQ_ERR(ipxe_word_check("abcdef", 5), FP_EINVAL);
	ASSERT_EQ_ERR(ipxe_word_check(NULL, 5), FP_EINVAL);
	static const char *const bad[] = {"a$b",  "${net0/mac}", "a#b",      "a\"b",
					  "a'b",  "a\\b",        "a\nb",     "a\tb",
					  "a\rb", "\x7f",        "\xc3\xa9", "\x1b[0m"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ipxe_word_check(bad[i], 100) != FP_EINVAL)
			fail_msg("ipxe_word_check accepted bad[%zu]", i);
}

static const char want_ramdisk[] =
	"#!ipxe\n"
	"echo fleetplane: booting the provisioning ramdisk for node r01n01\n"
	"kernel http://10.77.0.1:7071/boot/files/ramdisk-vmlinuz initrd=ramdisk-initrd "
	"console=ttyS0 console=tty0 panic=30 fleetplane.url=http://10.77.0.1:7071 "
	"fleetplane.node=r01n01 fleetplane.token=K0JbZUEJy703BQLerT8IrSsAYSo6VKTj4EAQg-cJpIg "
	"fleetplane.mac=${net0/mac} fleetplane.ip=${net0/ip} fleetplane.netmask=${net0/netmask} "
	"fleetplane.gateway=${net0/gateway}\n"
	"initrd http://10.77.0.1:7071/boot/files/ramdisk-initrd\n"
	"boot\n";

static void test_script_ramdisk(void **state)
{
	(void)state;
	struct ipxe_ramdisk r = {.url = "http://10.77.0.1:7071",
				 .kernel = "ramdisk-vmlinuz",
				 .initrd = "ramdisk-initrd",
				 .node = "r01n01",
				 .token = "K0JbZUEJy703BQLerT8IrSsAYSo6VKTj4EAQg-cJpIg",
				 .kernel_args = NULL};
	char *s = ipxe_script_ramdisk(&r);
	ASSERT_EQ_STR(s, want_ramdisk);
	free(s);
	/* extra kernel arguments replace the console default */
	r.kernel_args = "console=ttyS1,115200 quiet";
	s = ipxe_script_ramdisk(&r);
	ASSERT_EQ_STR(s, "#!ipxe\n"
			 "echo fleetplane: booting the provisioning ramdisk for node r01n01\n"
			 "kernel http://10.77.0.1:7071/boot/files/ramdisk-vmlinuz "
			 "initrd=ramdisk-initrd console=ttyS1,115200 quiet panic=30 "
			 "fleetplane.url=http://10.77.0.1:7071 fleetplane.node=r01n01 "
			 "fleetplane.token=K0JbZUEJy703BQLerT8IrSsAYSo6VKTj4EAQg-cJpIg "
			 "fleetplane.mac=${net0/mac} fleetplane.ip=${net0/ip} "
			 "fleetplane.netmask=${net0/netmask} fleetplane.gateway=${net0/gateway}\n"
			 "initrd http://10.77.0.1:7071/boot/files/ramdisk-initrd\n"
			 "boot\n");
	free(s);
	r.kernel_args = NULL;
	/* a '$' (iPXE expands ${...}) or a space where one word belongs: no script */
	struct ipxe_ramdisk bad;
	const char **fields[] = {&bad.url,  &bad.kernel, &bad.initrd,
				 &bad.node, &bad.token,  &bad.kernel_args};
	for (size_t i = 0; i < 6; i++) {
		bad = r;
		*fields[i] = "a$b";
		s = ipxe_script_ramdisk(&bad);
		if (s)
			fail_msg("field %zu with '$': got a script:\n%s", i, s);
		bad = r;
		*fields[i] = "a\"b";
		assert_null(ipxe_script_ramdisk(&bad));
		bad = r;
		*fields[i] = "a\nb";
		assert_null(ipxe_script_ramdisk(&bad));
	}
	static const char *const spaced[] = {"url", "kernel", "initrd", "node", "token"};
	for (size_t i = 0; i < 5; i++) {
		bad = r;
		*fields[i] = "a b";
		s = ipxe_script_ramdisk(&bad);
		if (s)
			fail_msg("%s with a space: got a script:\n%s", spaced[i], s);
	}
	bad = r;
	bad.url = NULL;
	assert_null(ipxe_script_ramdisk(&bad));
	bad = r;
	bad.token = NULL;
	assert_null(ipxe_script_ramdisk(&bad));
	/* bounds: token 128, node and names 63 */
	char tok[130];
	memset(tok, 'A', 129);
	tok[129] = 0;
	bad = r;
	bad.token = tok;
	assert_null(ipxe_script_ramdisk(&bad));
	tok[128] = 0;
	s = ipxe_script_ramdisk(&bad);
	assert_non_null(s);
	free(s);
}

static void test_script_disk_unknown(void **state)
{
	(void)state;
	char *s = ipxe_script_local_disk("r01n01",
					 "operation provision-1 is at step set_boot_disk");
	ASSERT_EQ_STR(s, "#!ipxe\n"
			 "echo fleetplane: node r01n01 boots from its local disk (operation "
			 "provision-1 is at step set_boot_disk)\n"
			 "sanboot --no-describe --drive 0x80 || exit\n");
	free(s);
	/* every character ipxe_word_check refuses becomes '_' */
	s = ipxe_script_local_disk("n$1", "a${x}#\"'\\\n\x7f\xc3\xa9z");
	ASSERT_EQ_STR(s, "#!ipxe\n"
			 "echo fleetplane: node n_1 boots from its local disk (a_{x}________z)\n"
			 "sanboot --no-describe --drive 0x80 || exit\n");
	free(s);
	s = ipxe_script_local_disk(NULL, NULL);
	ASSERT_EQ_STR(s, "#!ipxe\n"
			 "echo fleetplane: node  boots from its local disk ()\n"
			 "sanboot --no-describe --drive 0x80 || exit\n");
	free(s);
	s = ipxe_script_unknown("52:54:00:12:34:56");
	ASSERT_EQ_STR(s, "#!ipxe\n"
			 "echo fleetplane: MAC 52:54:00:12:34:56 is not enrolled; not booting it\n"
			 "exit 1\n");
	free(s);
	s = ipxe_script_unknown("${x}\n");
	ASSERT_EQ_STR(s, "#!ipxe\n"
			 "echo fleetplane: MAC _{x}_ is not enrolled; not booting it\n"
			 "exit 1\n");
	free(s);
}

/* ---------------------------------------------------------------- dnsmasq */

#define HOSTS_HEADER                                                                        \
	"# generated by fleetplane from spec.macs and spec.provision of each node; do not " \
	"edit\n"

static void test_hosts_render(void **state)
{
	(void)state;
	struct dhcp_host h[] = {
		{"52:54:00:00:00:03", "site-a", "10.0.0.3", "r01n03", NULL},
		{"52:54:00:00:00:01", NULL, NULL, NULL, NULL},
		{"52:54:00:00:00:02", "site-a", NULL, "r01n02", NULL},
		{"52:54:00:00:00:09", "site,b", NULL, "x", NULL},       /* comma: skipped */
		{"52:54:00:00:00:08", "s", "10.0.0.8\nx", "x", NULL},   /* newline: skipped */
		{"52:54:00:00:00:07", "s", NULL, "bad host", NULL},     /* space: skipped */
		{"52:54:00:00:00:06", "", NULL, NULL, NULL},            /* empty field: skipped */
		{"52:54:00:00:00:05,set:evil", NULL, NULL, NULL, NULL}, /* skipped */
		{"52:54:00:00:00:04", "S_1.b", "10.0.0.4", "H-4", NULL},
		{NULL, "s", NULL, NULL, NULL}, /* no MAC: skipped */
	};
	char *s = dnsmasq_hosts_render(h, sizeof(h) / sizeof(h[0]));
	ASSERT_EQ_STR(s, HOSTS_HEADER "52:54:00:00:00:01\n"
				      "52:54:00:00:00:02,set:site-a,r01n02\n"
				      "52:54:00:00:00:03,set:site-a,10.0.0.3,r01n03\n"
				      "52:54:00:00:00:04,set:S_1.b,10.0.0.4,H-4\n");
	free(s);
	/* a 256-byte field is refused, 255 kept */
	char big[257];
	memset(big, 'h', 256);
	big[256] = 0;
	struct dhcp_host b[] = {{"52:54:00:00:00:01", NULL, NULL, big, NULL}};
	s = dnsmasq_hosts_render(b, 1);
	ASSERT_EQ_STR(s, HOSTS_HEADER);
	free(s);
	big[255] = 0;
	s = dnsmasq_hosts_render(b, 1);
	assert_int_equal(strlen(s), strlen(HOSTS_HEADER) + 18 + 255 + 1);
	free(s);
	s = dnsmasq_hosts_render(NULL, 0);
	ASSERT_EQ_STR(s, HOSTS_HEADER);
	free(s);
}

static void test_hosts_write(void **state)
{
	(void)state;
	char *d = mktmp();
	char path[512], err[512];
	snprintf(path, sizeof(path), "%s/hosts", d);
	int changed = -1;
	ASSERT_OK(dnsmasq_hosts_write(path, HOSTS_HEADER "52:54:00:00:00:01\n", &changed, err,
				      sizeof(err)));
	ASSERT_EQ_INT(changed, 1);
	char *got = read_all(path);
	ASSERT_EQ_STR(got, HOSTS_HEADER "52:54:00:00:00:01\n");
	free(got);
	struct stat st1, st2;
	assert_int_equal(stat(path, &st1), 0);
	/* the same text: nothing written (the file is the same inode, dnsmasq not signalled) */
	changed = -1;
	ASSERT_OK(dnsmasq_hosts_write(path, HOSTS_HEADER "52:54:00:00:00:01\n", &changed, err,
				      sizeof(err)));
	ASSERT_EQ_INT(changed, 0);
	assert_int_equal(stat(path, &st2), 0);
	ASSERT_EQ_INT(st2.st_ino, st1.st_ino);
	/* other text: written again */
	ASSERT_OK(dnsmasq_hosts_write(path, HOSTS_HEADER, &changed, err, sizeof(err)));
	ASSERT_EQ_INT(changed, 1);
	got = read_all(path);
	ASSERT_EQ_STR(got, HOSTS_HEADER);
	free(got);
	/* a directory that does not exist */
	snprintf(path, sizeof(path), "%s/no/hosts", d);
	changed = -1;
	ASSERT_EQ_ERR(dnsmasq_hosts_write(path, "x\n", &changed, err, sizeof(err)), FP_EIO);
	ASSERT_EQ_INT(changed, 0);
	char want[700];
	snprintf(want, sizeof(want), "open %s/no/.hosts.tmp: No such file or directory", d);
	ASSERT_EQ_STR(err, want);
	rmtree(d);
}

static void test_hostsdir_sync(void **state)
{
	(void)state;
	char *d = mktmp();
	char dir[512], path[600], err[512];
	snprintf(dir, sizeof(dir), "%s/hosts.d", d); /* made by the sync */
	struct dhcp_host h[] = {
		{.mac = "52:54:00:00:00:12", .node = "n2"},
		{.mac = "52:54:00:00:00:01",
		 .tag = "a",
		 .ip = "10.0.0.1",
		 .hostname = "n1",
		 .node = "n1"},
		{.mac = "52:54:00:00:00:11",
		 .tag = "a",
		 .ip = "10.0.0.2",
		 .hostname = "n2",
		 .node = "n2"},
		{.mac = "52:54:00:00:00:99", .node = "bad/name"}, /* skipped */
		{.mac = "52:54:00:00:00:98"},                     /* no node: skipped */
	};
	size_t written = 9, removed = 9;
	ASSERT_OK(dnsmasq_hostsdir_sync(dir, h, 5, &written, &removed, err, sizeof(err)));
	ASSERT_EQ_INT(written, 2);
	ASSERT_EQ_INT(removed, 0);
	snprintf(path, sizeof(path), "%s/n1.hosts", dir);
	char *got = read_all(path);
	ASSERT_EQ_STR(got, HOSTS_HEADER "52:54:00:00:00:01,set:a,10.0.0.1,n1\n");
	free(got);
	snprintf(path, sizeof(path), "%s/n2.hosts", dir);
	got = read_all(path);
	ASSERT_EQ_STR(got, HOSTS_HEADER "52:54:00:00:00:11,set:a,10.0.0.2,n2\n"
					"52:54:00:00:00:12\n");
	free(got);
	/* an unchanged fleet writes nothing; a file that is not ours stays */
	snprintf(path, sizeof(path), "%s/site.conf", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("52:54:00:00:00:77,10.0.0.77\n", f);
	fclose(f);
	ASSERT_OK(dnsmasq_hostsdir_sync(dir, h, 5, &written, &removed, err, sizeof(err)));
	ASSERT_EQ_INT(written, 0);
	ASSERT_EQ_INT(removed, 0);
	/* n1 gone, n2's address changed: n1.hosts removed, n2.hosts rewritten */
	struct dhcp_host h2[] = {
		{.mac = "52:54:00:00:00:11",
		 .tag = "a",
		 .ip = "10.0.0.3",
		 .hostname = "n2",
		 .node = "n2"},
		{.mac = "52:54:00:00:00:12", .node = "n2"},
	};
	ASSERT_OK(dnsmasq_hostsdir_sync(dir, h2, 2, &written, &removed, err, sizeof(err)));
	ASSERT_EQ_INT(written, 1);
	ASSERT_EQ_INT(removed, 1);
	snprintf(path, sizeof(path), "%s/n1.hosts", dir);
	ASSERT_EQ_INT(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/n2.hosts", dir);
	got = read_all(path);
	ASSERT_EQ_STR(got, HOSTS_HEADER "52:54:00:00:00:11,set:a,10.0.0.3,n2\n"
					"52:54:00:00:00:12\n");
	free(got);
	snprintf(path, sizeof(path), "%s/site.conf", dir);
	ASSERT_EQ_INT(access(path, F_OK), 0);
	/* a node whose name is a prefix of another's ("n2" and "n22") keeps its own file */
	struct dhcp_host h3[] = {{.mac = "52:54:00:00:00:22", .node = "n22"},
				 {.mac = "52:54:00:00:00:11", .node = "n2"}};
	ASSERT_OK(dnsmasq_hostsdir_sync(dir, h3, 2, &written, &removed, err, sizeof(err)));
	ASSERT_EQ_INT(written, 2);
	ASSERT_EQ_INT(removed, 0);
	/* nothing: every .hosts file removed */
	ASSERT_OK(dnsmasq_hostsdir_sync(dir, NULL, 0, &written, &removed, err, sizeof(err)));
	ASSERT_EQ_INT(written, 0);
	ASSERT_EQ_INT(removed, 2);
	/* a dir that cannot be made */
	snprintf(path, sizeof(path), "%s/no/such/dir", d);
	ASSERT_EQ_ERR(dnsmasq_hostsdir_sync(path, NULL, 0, &written, &removed, err, sizeof(err)),
		      FP_EIO);
	char want[700];
	snprintf(want, sizeof(want), "dhcp hosts dir %s: No such file or directory", path);
	ASSERT_EQ_STR(err, want);
	rmtree(d);
}

static void test_dnsmasq_reload(void **state)
{
	(void)state;
	char *d = mktmp();
	char pf[512], err[512];
	snprintf(pf, sizeof(pf), "%s/dnsmasq.pid", d);
	ASSERT_EQ_ERR(dnsmasq_reload(pf, err, sizeof(err)), FP_ENOTFOUND);
	char want[700];
	snprintf(want, sizeof(want), "dnsmasq pid file %s: No such file or directory", pf);
	ASSERT_EQ_STR(err, want);
	snprintf(want, sizeof(want), "dnsmasq pid file %s: not a pid", pf);
	static const char *const garbage[] = {"",    "garbage\n", "12ab\n", "-5\n",   "0\n",
					      "1\n", "4194305\n", " \n",    "12 13\n"};
	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		write_file(pf, garbage[i]);
		int rc = dnsmasq_reload(pf, err, sizeof(err));
		if (rc != FP_EINVAL || strcmp(err, want) != 0)
			fail_msg("pid file \"%s\": %d \"%s\"", garbage[i], rc, err);
	}
	/* a live process gets SIGHUP (its default action ends it), a gone one is FP_ENOTFOUND */
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		signal(SIGHUP, SIG_DFL);
		for (;;)
			pause();
	}
	char line[32];
	snprintf(line, sizeof(line), "%d\n", (int)c);
	write_file(pf, line);
	ASSERT_OK(dnsmasq_reload(pf, err, sizeof(err)));
	int ws = 0;
	assert_int_equal(waitpid(c, &ws, 0), c);
	assert_true(WIFSIGNALED(ws));
	ASSERT_EQ_INT(WTERMSIG(ws), SIGHUP);
	ASSERT_EQ_ERR(dnsmasq_reload(pf, err, sizeof(err)), FP_ENOTFOUND);
	snprintf(want, sizeof(want), "dnsmasq pid %d: No such process", (int)c);
	ASSERT_EQ_STR(err, want);
	rmtree(d);
}

/* ---------------------------------------------------------------- image store */

/* sha256sum of the bytes, computed with coreutils' sha256sum */
#define BYTES1 "fleetplane image bytes\n" /* 23 bytes */
#define SHA1 "907c0b8ff02d3a46d27935dda604526c82222c1ac02e81bbfe478f5256af381c"
#define SHA1_UPPER "907C0B8FF02D3A46D27935DDA604526C82222C1AC02E81BBFE478F5256AF381C"
#define BYTES2 "fleetplane image bytes, replaced\n" /* 33 bytes */
#define SHA2 "e681445d00f742faf3ac748a761295f10e88809204e67b33660c77a5a63b28de"
#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void test_image_store(void **state)
{
	(void)state;
	char *d = mktmp();
	char dir[512], src1[512], src2[512], srce[512], p[700], err[512];
	snprintf(dir, sizeof(dir), "%s/images", d); /* created by the first add */
	snprintf(src1, sizeof(src1), "%s/one", d);
	snprintf(src2, sizeof(src2), "%s/two", d);
	snprintf(srce, sizeof(srce), "%s/empty", d);
	write_file(src1, BYTES1);
	write_file(src2, BYTES2);
	write_file(srce, "");
	struct image_info info, got;
	size_t n = 7;
	struct image_info *v = NULL;
	/* a missing store is an empty list */
	ASSERT_OK(image_list(dir, &v, &n, err, sizeof(err)));
	ASSERT_EQ_INT(n, 0);
	assert_null(v);

	ASSERT_OK(image_add(dir, "os-1", src1, 0, T0, &info, err, sizeof(err)));
	ASSERT_EQ_STR(info.name, "os-1");
	ASSERT_EQ_STR(info.sha256, SHA1);
	ASSERT_EQ_INT(info.size, 23);
	ASSERT_EQ_INT(info.added_ms, T0);
	ASSERT_OK(image_get(dir, "os-1", &got, err, sizeof(err)));
	ASSERT_EQ_STR(got.sha256, SHA1);
	ASSERT_EQ_INT(got.size, 23);
	ASSERT_EQ_INT(got.added_ms, T0);
	snprintf(p, sizeof(p), "%s/os-1/meta.json", dir);
	char *meta = read_all(p);
	ASSERT_EQ_STR(meta,
		      "{\n  \"addedAt\": \"2026-01-02T03:04:05.000Z\",\n  \"name\": \"os-1\",\n"
		      "  \"sha256\": \"" SHA1 "\",\n  \"sizeBytes\": 23\n}\n");
	free(meta);
	int fd = -1;
	ASSERT_OK(image_open(dir, "os-1", &fd, &got, err, sizeof(err)));
	char buf[64] = "";
	ASSERT_EQ_INT(read(fd, buf, sizeof(buf) - 1), 23);
	ASSERT_EQ_STR(buf, BYTES1);

	/* adding it again: FP_EEXIST without replace, the old bytes kept */
	ASSERT_EQ_ERR(image_add(dir, "os-1", src2, 0, T0 + 1000, &info, err, sizeof(err)),
		      FP_EEXIST);
	ASSERT_EQ_STR(err, "image os-1 already exists (rm it first, or add with --replace)");
	ASSERT_OK(image_get(dir, "os-1", &got, err, sizeof(err)));
	ASSERT_EQ_STR(got.sha256, SHA1);
	/* replaced: the new record; a descriptor opened before still reads the old bytes */
	ASSERT_OK(image_add(dir, "os-1", src2, 1, T0 + 1000, &info, err, sizeof(err)));
	ASSERT_EQ_STR(info.sha256, SHA2);
	ASSERT_EQ_INT(info.size, 33);
	ASSERT_OK(image_get(dir, "os-1", &got, err, sizeof(err)));
	ASSERT_EQ_STR(got.sha256, SHA2);
	ASSERT_EQ_INT(got.size, 33);
	ASSERT_EQ_INT(got.added_ms, T0 + 1000);
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ_INT(pread(fd, buf, sizeof(buf) - 1, 0), 23);
	ASSERT_EQ_STR(buf, BYTES1);
	close(fd);
	/* replace of an image that is not there yet just adds it; an empty file is an image */
	ASSERT_OK(image_add(dir, "empty.img", srce, 1, T0, &info, err, sizeof(err)));
	ASSERT_EQ_STR(info.sha256, SHA_EMPTY);
	ASSERT_EQ_INT(info.size, 0);

	/* bad names, each refused with why, nothing created */
	static const struct {
		const char *name, *err;
	} bad[] = {
		{"", "image name \"\": expected 1 to 63 characters"},
		{"Os", "image name \"Os\": must start with a lowercase letter or digit"},
		{"-os", "image name \"-os\": must start with a lowercase letter or digit"},
		{".tmp-x", "image name \".tmp-x\": must start with a lowercase letter or digit"},
		{"..", "image name \"..\": must start with a lowercase letter or digit"},
		{"a/b", "image name \"a/b\": only a-z, 0-9, '.', '_' and '-' are allowed"},
		{"a b", "image name \"a b\": only a-z, 0-9, '.', '_' and '-' are allowed"},
		{"osA", "image name \"osA\": only a-z, 0-9, '.', '_' and '-' are allowed"},
		{"0123456789012345678901234567890123456789012345678901234567890123",
		 "image name \"0123456789012345678901234567890123456789012345678901234567890123\": "
		 "expected 1 to 63 characters"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		int rc = image_add(dir, bad[i].name, src1, 0, T0, &info, err, sizeof(err));
		if (rc != FP_EINVAL || strcmp(err, bad[i].err) != 0)
			fail_msg("image_add(\"%s\"): %d \"%s\", want FP_EINVAL \"%s\"", bad[i].name,
				 rc, err, bad[i].err);
		ASSERT_EQ_ERR(image_get(dir, bad[i].name, &got, NULL, 0), FP_EINVAL);
		ASSERT_EQ_ERR(image_remove(dir, bad[i].name, NULL, 0), FP_EINVAL);
	}
	ASSERT_EQ_ERR(image_name_validate(NULL, err, sizeof(err)), FP_EINVAL);
	ASSERT_OK(image_name_validate("a", err, sizeof(err)));
	ASSERT_OK(image_name_validate("ubuntu_22.04-x86_64.img", err, sizeof(err)));
	ASSERT_OK(image_name_validate(
		"012345678901234567890123456789012345678901234567890123456789012", err,
		sizeof(err)));
	/* sources that are not regular files */
	ASSERT_EQ_ERR(image_add(dir, "x", d, 0, T0, &info, err, sizeof(err)), FP_EINVAL);
	snprintf(p, sizeof(p), "%s: not a regular file", d);
	ASSERT_EQ_STR(err, p);
	snprintf(p, sizeof(p), "%s/absent", d);
	ASSERT_EQ_ERR(image_add(dir, "x", p, 0, T0, &info, err, sizeof(err)), FP_ENOTFOUND);
	ASSERT_EQ_ERR(image_get(dir, "x", &got, err, sizeof(err)), FP_ENOTFOUND);

	/* list: sorted, temporary/old directories, broken records and stray files skipped */
	ASSERT_OK(image_add(dir, "a-img", src1, 0, T0, &info, err, sizeof(err)));
	snprintf(p, sizeof(p), "%s/.tmp-zz-1-00000000", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.tmp-zz-1-00000000/meta.json", dir);
	write_file(p, "{\"name\":\"zz\",\"sha256\":\"" SHA1 "\",\"sizeBytes\":23}\n");
	snprintf(p, sizeof(p), "%s/broken", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/broken/meta.json", dir);
	write_file(p, "{\"name\":\"broken\",\"sha256\":\"abc\",\"sizeBytes\":23}\n");
	snprintf(p, sizeof(p), "%s/stray", dir);
	write_file(p, "x");
	ASSERT_OK(image_list(dir, &v, &n, err, sizeof(err)));
	ASSERT_EQ_INT(n, 3);
	ASSERT_EQ_STR(v[0].name, "a-img");
	ASSERT_EQ_STR(v[0].sha256, SHA1);
	ASSERT_EQ_STR(v[1].name, "empty.img");
	ASSERT_EQ_STR(v[2].name, "os-1");
	ASSERT_EQ_STR(v[2].sha256, SHA2);
	ASSERT_EQ_INT(v[2].size, 33);
	free(v);
	ASSERT_EQ_ERR(image_get(dir, "broken", &got, err, sizeof(err)), FP_EPARSE);
	snprintf(p, sizeof(p), "image broken: %s/broken/meta.json is not a valid record", dir);
	ASSERT_EQ_STR(err, p);
	/* 64 characters that are not lowercase hex are no sha256 either (the ETag and
	 * Repr-Digest are made from it) */
	snprintf(p, sizeof(p), "%s/broken/meta.json", dir);
	write_file(p, "{\"name\":\"broken\",\"sha256\":\"" SHA1_UPPER "\",\"sizeBytes\":23}\n");
	ASSERT_EQ_ERR(image_get(dir, "broken", &got, err, sizeof(err)), FP_EPARSE);
	write_file(p, "{\"name\":\"broken\",\"sha256\":\"" SHA1 "\",\"sizeBytes\":23}\n");
	ASSERT_OK(image_get(dir, "broken", &got, err, sizeof(err)));
	write_file(p, "{\"name\":\"broken\",\"sha256\":\"" SHA1 "\",\"sizeBytes\":-1}\n");
	ASSERT_EQ_ERR(image_get(dir, "broken", &got, err, sizeof(err)), FP_EPARSE);
	write_file(p, "{\"name\":\"broken\",\"sha256\":\"" SHA1 "\",\"sizeBytes\":23,"
		      "\"addedAt\":\"yesterday\"}\n");
	ASSERT_EQ_ERR(image_get(dir, "broken", &got, err, sizeof(err)), FP_EPARSE);
	write_file(p, "not json");
	ASSERT_EQ_ERR(image_get(dir, "broken", &got, err, sizeof(err)), FP_EPARSE);
	ASSERT_EQ_ERR(image_get(dir, "stray", &got, err, sizeof(err)), FP_ENOTFOUND);
	/* a broken record can still be removed */
	ASSERT_OK(image_remove(dir, "broken", err, sizeof(err)));

	/* image_open sees bytes whose size changed after image_add */
	snprintf(p, sizeof(p), "%s/os-1/image", dir);
	FILE *f = fopen(p, "a");
	fputs("!", f);
	fclose(f);
	fd = 99;
	ASSERT_EQ_ERR(image_open(dir, "os-1", &fd, &got, err, sizeof(err)), FP_EIO);
	ASSERT_EQ_INT(fd, -1);
	ASSERT_EQ_STR(err, "image os-1: size on disk 34 differs from the recorded 33");
	/* the bytes missing */
	unlink(p);
	ASSERT_EQ_ERR(image_open(dir, "os-1", &fd, &got, err, sizeof(err)), FP_ENOTFOUND);

	/* remove */
	ASSERT_OK(image_remove(dir, "os-1", err, sizeof(err)));
	ASSERT_EQ_ERR(image_get(dir, "os-1", &got, err, sizeof(err)), FP_ENOTFOUND);
	ASSERT_EQ_STR(err, "image os-1 not found");
	ASSERT_EQ_ERR(image_remove(dir, "os-1", err, sizeof(err)), FP_ENOTFOUND);
	ASSERT_OK(image_list(dir, &v, &n, err, sizeof(err)));
	ASSERT_EQ_INT(n, 2);
	ASSERT_EQ_STR(v[0].name, "a-img");
	ASSERT_EQ_STR(v[1].name, "empty.img");
	free(v);
	/* nothing of the removed or failed adds is left behind but the .tmp- we made */
	snprintf(p, sizeof(p), "%s/os-1", dir);
	struct stat st;
	assert_int_equal(stat(p, &st), -1);
	rmtree(d);
}

/* ---------------------------------------------------------------- boot token */

static struct secret_key *key_n(unsigned char fill)
{
	unsigned char b[SECRET_KEY_BYTES];
	memset(b, fill, sizeof(b));
	return secret_key_from_bytes(b, sizeof(b));
}

#define OP1 "provision-1767323045000-0000002a"

static void test_boot_token(void **state)
{
	(void)state;
	struct secret_key *k1 = key_n(1), *k2 = key_n(2);
	char t[SECRET_BOOT_TOKEN_LEN + 1], u[SECRET_BOOT_TOKEN_LEN + 1];
	ASSERT_OK(secret_boot_token(k1, "n1", OP1, t, sizeof(t)));
	/* base64url(HMAC-SHA-256(BLAKE2b-256(key=k1, "fleetplane-boot-token-v1"),
	 * "n1\0" OP1)) without padding, computed with Python's hashlib.blake2b and hmac */
	ASSERT_EQ_STR(t, "K0JbZUEJy703BQLerT8IrSsAYSo6VKTj4EAQg-cJpIg");
	ASSERT_EQ_INT(strlen(t), 43);
	ASSERT_OK(secret_boot_token(k1, "n1", OP1, u, sizeof(u)));
	ASSERT_EQ_STR(u, t);
	assert_int_equal(secret_token_equal(t, u), 1);
	/* another node, another operation, another key */
	ASSERT_OK(secret_boot_token(k1, "n2", OP1, u, sizeof(u)));
	assert_string_not_equal(u, t);
	assert_int_equal(secret_token_equal(t, u), 0);
	ASSERT_EQ_INT(strlen(u), 43);
	ASSERT_OK(secret_boot_token(k1, "n1", "provision-1767323045000-0000002b", u, sizeof(u)));
	assert_string_not_equal(u, t);
	ASSERT_OK(secret_boot_token(k2, "n1", OP1, u, sizeof(u)));
	assert_string_not_equal(u, t);
	/* the NUL between node and op id: ("n1", "xop") and ("n1x", "op") differ */
	char a[SECRET_BOOT_TOKEN_LEN + 1], b[SECRET_BOOT_TOKEN_LEN + 1];
	ASSERT_OK(secret_boot_token(k1, "n1", "xop", a, sizeof(a)));
	ASSERT_OK(secret_boot_token(k1, "n1x", "op", b, sizeof(b)));
	assert_string_not_equal(a, b);
	/* base64url characters only */
	for (const char *p = t; *p; p++)
		assert_non_null(
			strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
			       *p));
	/* refusals */
	ASSERT_EQ_ERR(secret_boot_token(k1, "n1", OP1, u, SECRET_BOOT_TOKEN_LEN), FP_EINVAL);
	ASSERT_EQ_ERR(secret_boot_token(NULL, "n1", OP1, u, sizeof(u)), FP_EINVAL);
	ASSERT_EQ_ERR(secret_boot_token(k1, NULL, OP1, u, sizeof(u)), FP_EINVAL);
	ASSERT_EQ_ERR(secret_boot_token(k1, "n1", NULL, u, sizeof(u)), FP_EINVAL);
	/* secret_token_equal */
	assert_int_equal(secret_token_equal("abc", "abc"), 1);
	assert_int_equal(secret_token_equal("abc", "abd"), 0);
	assert_int_equal(secret_token_equal("abc", "abcd"), 0);
	assert_int_equal(secret_token_equal("", ""), 0);
	assert_int_equal(secret_token_equal(NULL, "abc"), 0);
	assert_int_equal(secret_token_equal("abc", NULL), 0);
	secret_key_free(k1);
	secret_key_free(k2);
}

/* ---------------------------------------------------------------- codec */

static int decode(const char *s, int enroll, struct node **out, char *err, size_t errlen)
{
	json_t *doc = NULL;
	char e[256];
	if (jsonx_parse(s, strlen(s), &doc, e, sizeof(e)) < 0)
		fail_msg("test document does not parse: %s: %s", e, s);
	err[0] = 0;
	*out = NULL;
	int rc = enroll ? node_from_enroll_json(doc, out, err, errlen)
			: node_from_json(doc, 3, out, err, errlen);
	json_decref(doc);
	return rc;
}

#define SPEC(x) "{\"metadata\":{\"name\":\"n1\"},\"spec\":{" x "}}"

static void expect_spec_err(const char *spec, const char *want)
{
	for (int enroll = 1; enroll >= 0; enroll--) {
		struct node *n = NULL;
		char e[512];
		int rc = decode(spec, enroll, &n, e, sizeof(e));
		if (rc != FP_EINVAL || strcmp(e, want) != 0)
			fail_msg("%s (enroll %d)\n  rc %d err \"%s\"\n want FP_EINVAL \"%s\"", spec,
				 enroll, rc, e, want);
		assert_null(n);
	}
}

static const char full_spec[] = SPEC(
	"\"macs\":[\"52:54:00:00:00:01\"],"
	"\"provision\":{\"image\":\"ubuntu-22.04\",\"rootDevice\":\"/dev/nvme0n1\","
	"\"hostname\":\"gpu-01\",\"ipAddress\":\"10.77.0.21\",\"userData\":\"#cloud-config\\n\","
	"\"sshAuthorizedKeys\":[\"ssh-ed25519 AAAA alice@x\",\"ssh-rsa BBBB bob@y\"]},"
	"\"hardware\":{\"nics\":2,\"disks\":1,\"memoryMiB\":2048}");

static void test_codec_provision(void **state)
{
	(void)state;
	struct node *n = NULL, *n2 = NULL;
	char e[512];
	ASSERT_OK(decode(full_spec, 1, &n, e, sizeof(e)));
	json_t *want_p = json_pack("{s:s,s:s,s:s,s:s,s:s,s:[s,s]}", "image", "ubuntu-22.04",
				   "rootDevice", "/dev/nvme0n1", "hostname", "gpu-01", "ipAddress",
				   "10.77.0.21", "userData", "#cloud-config\n", "sshAuthorizedKeys",
				   "ssh-ed25519 AAAA alice@x", "ssh-rsa BBBB bob@y");
	json_t *want_h = json_pack("{s:i,s:i,s:i}", "nics", 2, "disks", 1, "memoryMiB", 2048);
	assert_true(json_equal(n->provision, want_p));
	assert_true(json_equal(n->hardware, want_h));
	/* encoded (store and public forms), decoded again, duplicated: the same */
	for (int mode = 0; mode < 2; mode++) {
		json_t *j = node_to_json(n, mode ? NODE_JSON_PUBLIC : NODE_JSON_STORE);
		assert_true(json_equal(jsonx_path(j, "spec.provision"), want_p));
		assert_true(json_equal(jsonx_path(j, "spec.hardware"), want_h));
		ASSERT_OK(node_from_json(j, 4, &n2, e, sizeof(e)));
		assert_true(json_equal(n2->provision, want_p));
		assert_true(json_equal(n2->hardware, want_h));
		node_free(n2);
		json_decref(j);
	}
	n2 = node_dup(n);
	assert_true(json_equal(n2->provision, want_p));
	assert_true(json_equal(n2->hardware, want_h));
	node_free(n2);
	node_free(n);
	/* the minimal forms: only the image; null fields; an empty hardware */
	ASSERT_OK(decode(SPEC("\"provision\":{\"image\":\"os\"}"), 1, &n, e, sizeof(e)));
	json_t *only = json_pack("{s:s}", "image", "os");
	assert_true(json_equal(n->provision, only));
	json_decref(only);
	assert_null(n->hardware);
	json_t *j = node_to_json(n, NODE_JSON_STORE);
	assert_null(jsonx_path(j, "spec.hardware"));
	json_decref(j);
	node_free(n);
	ASSERT_OK(decode(SPEC("\"provision\":{\"image\":\"os\",\"rootDevice\":null,"
			      "\"sshAuthorizedKeys\":null},\"hardware\":{}"),
			 1, &n, e, sizeof(e)));
	assert_non_null(n->hardware);
	node_free(n);
	ASSERT_OK(decode(SPEC("\"provision\":null,\"hardware\":null"), 1, &n, e, sizeof(e)));
	assert_null(n->provision);
	assert_null(n->hardware);
	node_free(n);
	/* every image store name is a valid spec.provision.image (boot/image.h) */
	ASSERT_OK(decode(SPEC("\"provision\":{\"image\":\"ubuntu_22.04-x86_64.img\"}"), 1, &n, e,
			 sizeof(e)));
	node_free(n);
	ASSERT_OK(decode(SPEC("\"provision\":{\"image\":\"os-\"}"), 1, &n, e, sizeof(e)));
	node_free(n);
	/* bounds that are accepted */
	ASSERT_OK(decode(SPEC("\"hardware\":{\"nics\":256,\"disks\":0,\"memoryMiB\":4294967296}"),
			 1, &n, e, sizeof(e)));
	node_free(n);
	json_decref(want_p);
	json_decref(want_h);
}

static void test_codec_provision_errors(void **state)
{
	(void)state;
	expect_spec_err(SPEC("\"provision\":\"os\""), "spec.provision: expected an object");
	expect_spec_err(SPEC("\"provision\":[]"), "spec.provision: expected an object");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"kernel\":\"x\"}"),
			"unknown field spec.provision.kernel");
	expect_spec_err(SPEC("\"provision\":{}"),
			"spec.provision.image: required (an image store name)");
	expect_spec_err(SPEC("\"provision\":{\"image\":null}"),
			"spec.provision.image: required (an image store name)");
	expect_spec_err(SPEC("\"provision\":{\"image\":5}"),
			"spec.provision.image: expected a string");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"0123456789012345678901234567890123456789"
			     "012345678901234567890123\"}"),
			"spec.provision.image: longer than 63 characters");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"Os\"}"),
			"spec.provision.image: image name \"Os\": must start with a lowercase "
			"letter or digit");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"\"}"),
			"spec.provision.image: image name \"\": expected 1 to 63 characters");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"../etc\"}"),
			"spec.provision.image: image name \"../etc\": must start with a "
			"lowercase letter or digit");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"a/b\"}"),
			"spec.provision.image: image name \"a/b\": only a-z, 0-9, '.', '_' and "
			"'-' are allowed");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"rootDevice\":\"sda\"}"),
			"spec.provision.rootDevice: expected a device path like /dev/sda");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"rootDevice\":\"/dev/../sda\"}"),
			"spec.provision.rootDevice: expected a device path like /dev/sda");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"rootDevice\":\"/dev/s da\"}"),
			"spec.provision.rootDevice: expected a device path like /dev/sda");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"rootDevice\":7}"),
			"spec.provision.rootDevice: expected a string");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"hostname\":\"-gpu\"}"),
			"spec.provision.hostname: expected a hostname label (letters, digits, "
			"'-', at most 63)");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"hostname\":\"gpu.example\"}"),
			"spec.provision.hostname: expected a hostname label (letters, digits, "
			"'-', at most 63)");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"hostname\":\"\"}"),
			"spec.provision.hostname: expected a hostname label (letters, digits, "
			"'-', at most 63)");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"ipAddress\":\"10.0.0.256\"}"),
			"spec.provision.ipAddress: expected an IPv4 address like 10.0.0.12");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"ipAddress\":\"fe80::1\"}"),
			"spec.provision.ipAddress: expected an IPv4 address like 10.0.0.12");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"ipAddress\":\"010.000.000.001x\"}"),
			"spec.provision.ipAddress: longer than 15 characters");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"userData\":{}}"),
			"spec.provision.userData: expected a string");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"sshAuthorizedKeys\":\"k\"}"),
			"spec.provision.sshAuthorizedKeys: expected an array of at most 16 keys");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"sshAuthorizedKeys\":"
			     "[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\",\"11\","
			     "\"12\",\"13\",\"14\",\"15\",\"16\",\"17\"]}"),
			"spec.provision.sshAuthorizedKeys: expected an array of at most 16 keys");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"sshAuthorizedKeys\":[\"\"]}"),
			"spec.provision.sshAuthorizedKeys[0]: expected one key line of at most "
			"1024 bytes");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"sshAuthorizedKeys\":"
			     "[\"ssh-ed25519 A\",\"ssh-ed25519 B\\nssh-rsa C\"]}"),
			"spec.provision.sshAuthorizedKeys[1]: expected one key line of at most "
			"1024 bytes");
	expect_spec_err(SPEC("\"provision\":{\"image\":\"os\",\"sshAuthorizedKeys\":[5]}"),
			"spec.provision.sshAuthorizedKeys[0]: expected one key line of at most "
			"1024 bytes");
	/* a 65537-byte userData */
	char *big = xmalloc(65537 + 200);
	int len = snprintf(big, 200, "%s",
			   "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"provision\":{\"image\":"
			   "\"os\",\"userData\":\"");
	memset(big + len, 'u', 65537);
	snprintf(big + len + 65537, 200, "\"}}}");
	expect_spec_err(big, "spec.provision.userData: longer than 65536 characters");
	free(big);

	expect_spec_err(SPEC("\"hardware\":5"), "spec.hardware: expected an object");
	expect_spec_err(SPEC("\"hardware\":{\"gpus\":8}"), "unknown field spec.hardware.gpus");
	expect_spec_err(SPEC("\"hardware\":{\"nics\":\"2\"}"),
			"spec.hardware.nics: expected an integer");
	expect_spec_err(SPEC("\"hardware\":{\"nics\":2.5}"),
			"spec.hardware.nics: expected an integer");
	expect_spec_err(SPEC("\"hardware\":{\"nics\":-1}"),
			"spec.hardware.nics: -1 is out of range 0..256");
	expect_spec_err(SPEC("\"hardware\":{\"disks\":257}"),
			"spec.hardware.disks: 257 is out of range 0..256");
	expect_spec_err(SPEC("\"hardware\":{\"memoryMiB\":4294967297}"),
			"spec.hardware.memoryMiB: 4294967297 is out of range 0..4294967296");
	expect_spec_err(SPEC("\"hardware\":{\"memoryMiB\":true}"),
			"spec.hardware.memoryMiB: expected an integer");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mac_parse),
		cmocka_unit_test(test_range_parse),
		cmocka_unit_test(test_etag_match),
		cmocka_unit_test(test_word_check),
		cmocka_unit_test(test_script_ramdisk),
		cmocka_unit_test(test_script_disk_unknown),
		cmocka_unit_test(test_hosts_render),
		cmocka_unit_test(test_hosts_write),
		cmocka_unit_test(test_hostsdir_sync),
		cmocka_unit_test(test_dnsmasq_reload),
		cmocka_unit_test(test_image_store),
		cmocka_unit_test(test_boot_token),
		cmocka_unit_test(test_codec_provision),
		cmocka_unit_test(test_codec_provision_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
