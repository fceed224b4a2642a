/* layers: base core store driver engine boot */
/* fuzz_boot.c - libFuzzer target for what the network boot service parses from a machine before
 * any token is checked (boot/boot_server.h, boot/ipxe.h): the ?mac= of GET /boot/ipxe
 * (boot_mac_parse), the Range header of GET /boot/files (boot_range_parse) and the words that go
 * into an iPXE script (ipxe_word_check). The input is one NUL-terminated string; the first byte
 * also picks a file size for the range. Properties checked (a failure aborts): an accepted MAC is
 * 17 bytes of lowercase hex pairs and ':' and parses again to itself; a range of 1 lies inside
 * the file and is not empty, -1 only for a range that starts at or past the end, 0 leaves the
 * outputs alone; an accepted word has no byte ipxe_word_check refuses and a ramdisk script built
 * from it (as kernel arguments) is produced and starts with "#!ipxe\n"; the local-disk and
 * unknown-MAC scripts never carry a '$'. Seeds: tests/fuzz/corpus/fuzz_boot/ (the forms of the
 * unit tests, test_boot.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot_server.h"
#include "boot/ipxe.h"

#include "base/banned.h"

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_boot: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                           \
		}                                                                          \
	} while (0)

static const int64_t sizes[] = {0, 1, 2, 100, 1000, 1 << 20, INT64_MAX / 2};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;

	char mac[BOOT_MAC_LEN + 1], again[BOOT_MAC_LEN + 1];
	if (boot_mac_parse(s, mac) == 0) {
		CHECK(strlen(mac) == BOOT_MAC_LEN);
		for (int i = 0; i < BOOT_MAC_LEN; i++)
			CHECK(i % 3 == 2 ? mac[i] == ':'
					 : (mac[i] >= '0' && mac[i] <= '9') ||
						   (mac[i] >= 'a' && mac[i] <= 'f'));
		CHECK(boot_mac_parse(mac, again) == 0 && strcmp(mac, again) == 0);
	}

	int64_t fsize = sizes[size ? data[0] % (sizeof(sizes) / sizeof(sizes[0])) : 0];
	int64_t off = -7, len = -7;
	int r = boot_range_parse(s, fsize, &off, &len);
	CHECK(r == -1 || r == 0 || r == 1);
	if (r == 1)
		CHECK(off >= 0 && len >= 1 && off < fsize && len <= fsize - off);
	else
		CHECK(off == -7 && len == -7);
	if (r == -1)
		CHECK(strncmp(s, "bytes=", 6) == 0);

	if (ipxe_word_check(s, 1024) == 0) {
		for (const char *p = s; *p; p++)
			CHECK(*p >= 0x20 && *p <= 0x7e && !strchr("$#\"'\\", *p));
		struct ipxe_ramdisk rd = {.url = "http://10.77.0.1:7071",
					  .kernel = "ramdisk-vmlinuz",
					  .initrd = "ramdisk-initrd",
					  .node = "r01n01",
					  .token = "tok",
					  .kernel_args = s};
		char *script = ipxe_script_ramdisk(&rd);
		CHECK(script && strncmp(script, "#!ipxe\n", 7) == 0);
		free(script);
	}
	char *d = ipxe_script_local_disk(s, s), *u = ipxe_script_unknown(s);
	CHECK(!strchr(d, '$') && !strchr(u, '$'));
	free(d);
	free(u);
	free(s);
	return 0;
}
