/* layers: base core agent */
/* fuzz_bootsector.c - libFuzzer target for the on-disk parsers of the deploy (agent/deploy.h):
 * the first 512 bytes of an input go through deploy_fat_label and deploy_mbr_partitions (and
 * so does every shorter input). Properties checked (a failure aborts): results 0 / count or
 * FP_ENOTFOUND, inputs under 512 bytes always FP_ENOTFOUND, a label of at most 11 printable
 * bytes NUL-terminated, at most 4 partitions numbered 1..4 in order with sectors > 0. Seeds:
 * tests/fuzz/corpus/fuzz_bootsector/ (mkfs.fat FAT12 and FAT32 boot sectors, an MBR). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/deploy.h"
#include "base/err.h"

#include "base/banned.h"

#define CHECK(c)                                                                                 \
	do {                                                                                     \
		if (!(c)) {                                                                      \
			fprintf(stderr, "fuzz_bootsector: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char label[16];
	memset(label, 'x', sizeof(label));
	int rc = deploy_fat_label(data, size, label, sizeof(label));
	CHECK(rc == 0 || rc == FP_ENOTFOUND);
	if (size < 512)
		CHECK(rc == FP_ENOTFOUND);
	CHECK(memchr(label, '\0', sizeof(label)) != NULL);
	CHECK(strlen(label) <= 11);
	for (size_t i = 0; label[i]; i++)
		CHECK(label[i] >= 0x20 && label[i] < 0x7f);
	char tiny[4];
	rc = deploy_fat_label(data, size, tiny, sizeof(tiny));
	CHECK(memchr(tiny, '\0', sizeof(tiny)) != NULL);

	struct deploy_part p[4];
	int n = deploy_mbr_partitions(data, size, p);
	CHECK(n == FP_ENOTFOUND || (n >= 0 && n <= 4));
	if (size < 512)
		CHECK(n == FP_ENOTFOUND);
	for (int i = 0; i < n; i++) {
		CHECK(p[i].index >= 1 && p[i].index <= 4);
		CHECK(i == 0 || p[i].index > p[i - 1].index);
		CHECK(p[i].sectors > 0 && p[i].type != 0);
	}
	return 0;
}
