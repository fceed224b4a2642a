/* layers: base core agent */
/* fuzz_lspci.c - libFuzzer target for the lspci parser (agent/inventory.h): one input goes
 * through inventory_parse_lspci with room for 8 devices and for INVENTORY_MAX_PCI. Properties
 * checked (a failure aborts): at most max entries, truncated only when max was reached, every
 * address "DDDD:BB:DD.F" (12 bytes with a 4-digit domain, at most 16 with 8) NUL-terminated,
 * every name NUL-terminated, class/vendor/device -1 or 16-bit, the small run a prefix of the
 * big one. Seeds: tests/fuzz/corpus/fuzz_lspci/ (tests/data/inventory). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/inventory.h"

#include "base/banned.h"

#define CHECK(c)                                                                            \
	do {                                                                                \
		if (!(c)) {                                                                 \
			fprintf(stderr, "fuzz_lspci: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                            \
		}                                                                           \
	} while (0)

static struct inventory_pci big[INVENTORY_MAX_PCI], small[8];

static void check(const struct inventory_pci *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		CHECK(memchr(p[i].addr, '\0', sizeof(p[i].addr)) != NULL);
		size_t al = strlen(p[i].addr);
		CHECK(al >= 12 && al <= 16);
		CHECK(p[i].addr[al - 2] == '.' && p[i].addr[al - 5] == ':');
		CHECK(memchr(p[i].name, '\0', sizeof(p[i].name)) != NULL);
		CHECK(p[i].class_code >= -1 && p[i].class_code <= 0xffff);
		CHECK(p[i].vendor >= -1 && p[i].vendor <= 0xffff);
		CHECK(p[i].device >= -1 && p[i].device <= 0xffff);
		CHECK(inventory_pci_is_gpu(&p[i]) == 0 || p[i].vendor == 0x10de);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t sk1 = 0, sk2 = 0;
	int tr1 = 0, tr2 = 0;
	size_t n = inventory_parse_lspci((const char *)data, size, big, INVENTORY_MAX_PCI, &sk1,
					 &tr1);
	CHECK(n <= INVENTORY_MAX_PCI);
	CHECK(!tr1 || n == INVENTORY_MAX_PCI);
	check(big, n);
	size_t m = inventory_parse_lspci((const char *)data, size, small, 8, &sk2, &tr2);
	CHECK(m <= 8);
	CHECK(!tr2 || m == 8);
	CHECK(m == (n < 8 ? n : 8));
	for (size_t i = 0; i < m; i++)
		CHECK(memcmp(&small[i], &big[i], sizeof(small[i])) == 0);
	return 0;
}
