/* layers: base core agent */
/* fuzz_dmidecode.c - libFuzzer target for the dmidecode parser (agent/inventory.h): one input
 * goes through inventory_parse_dmidecode. Properties checked (a failure aborts): the result is
 * 0 or FP_ENOTFOUND, every field NUL-terminated in its buffer, all empty on FP_ENOTFOUND, no
 * field a placeholder ("Not Specified"). Seeds: tests/fuzz/corpus/fuzz_dmidecode/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/inventory.h"
#include "base/err.h"

#include "base/banned.h"

#define CHECK(c)                                                                                \
	do {                                                                                    \
		if (!(c)) {                                                                     \
			fprintf(stderr, "fuzz_dmidecode: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                \
		}                                                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct inventory_system s;
	int rc = inventory_parse_dmidecode((const char *)data, size, &s);
	CHECK(rc == 0 || rc == FP_ENOTFOUND);
	const char *f[] = {s.manufacturer, s.product_name, s.serial_number, s.uuid};
	size_t l[] = {sizeof(s.manufacturer), sizeof(s.product_name), sizeof(s.serial_number),
		      sizeof(s.uuid)};
	for (int i = 0; i < 4; i++) {
		CHECK(memchr(f[i], '\0', l[i]) != NULL);
		CHECK(strcmp(f[i], "Not Specified") != 0);
		if (rc != 0)
			CHECK(f[i][0] == '\0');
	}
	return 0;
}
