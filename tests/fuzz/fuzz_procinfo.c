/* layers: base core agent */
/* fuzz_procinfo.c - libFuzzer target for the /proc parsers (agent/inventory.h): one input goes
 * through inventory_parse_meminfo and inventory_parse_cpuinfo. Properties checked (a failure
 * aborts): results 0 or FP_ENOTFOUND, MiB 0 on FP_ENOTFOUND, the CPU count >= 1 exactly when
 * the parse succeeds, the model NUL-terminated. Seeds: tests/fuzz/corpus/fuzz_procinfo/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/inventory.h"
#include "base/err.h"

#include "base/banned.h"

#define CHECK(c)                                                                               \
	do {                                                                                   \
		if (!(c)) {                                                                    \
			fprintf(stderr, "fuzz_procinfo: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                               \
		}                                                                              \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t mib = 1;
	int rc = inventory_parse_meminfo((const char *)data, size, &mib);
	CHECK(rc == 0 || rc == FP_ENOTFOUND);
	if (rc != 0)
		CHECK(mib == 0);
	struct inventory_cpu cpu;
	rc = inventory_parse_cpuinfo((const char *)data, size, &cpu);
	CHECK(rc == 0 || rc == FP_ENOTFOUND);
	CHECK((rc == 0) == (cpu.count >= 1));
	CHECK(memchr(cpu.model, '\0', sizeof(cpu.model)) != NULL);
	return 0;
}
