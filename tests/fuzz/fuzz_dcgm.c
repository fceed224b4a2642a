/* layers: base core agent */
/* fuzz_dcgm.c - libFuzzer target for the dcgmi parsers (agent/dcgm.h): one input goes through
 * dcgm_health_findings (table, or JSON when it starts with '{') and dcgm_diag_findings, with a
 * findings array of 16 and of 1. Properties checked (a failure aborts): never more findings
 * than the array holds; *unknown is 0 or 1; every finding has source "dcgm", a code
 * "dcgm:<lower-case subsystem>" and NUL-terminated strings inside their buffers; an input
 * without a closing table border is never known-healthy. Seeds: tests/fuzz/corpus/fuzz_dcgm/
 * (the samples of tests/data/dcgm). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dcgm.h"

#include "base/banned.h"

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_dcgm: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                           \
		}                                                                          \
	} while (0)

static void check(const struct agent_finding *f, size_t n, size_t max, int unknown)
{
	CHECK(n <= max);
	CHECK(unknown == 0 || unknown == 1);
	for (size_t i = 0; i < n; i++) {
		CHECK(memchr(f[i].code, '\0', sizeof(f[i].code)) != NULL);
		CHECK(memchr(f[i].message, '\0', sizeof(f[i].message)) != NULL);
		CHECK(memchr(f[i].key, '\0', sizeof(f[i].key)) != NULL);
		CHECK(memchr(f[i].pci_bus_id, '\0', sizeof(f[i].pci_bus_id)) != NULL);
		CHECK(strcmp(f[i].source, "dcgm") == 0);
		CHECK(strncmp(f[i].code, "dcgm:", 5) == 0 && f[i].code[5] != '\0');
		for (const char *p = f[i].code + 5; *p; p++)
			CHECK(islower((unsigned char)*p) || isdigit((unsigned char)*p) ||
			      *p == '_');
		CHECK(f[i].gpu_index >= -1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct agent_finding f[16];
	int unknown = -1;
	size_t n;

	n = dcgm_health_findings(buf, size, f, 16, &unknown);
	check(f, n, 16, unknown);
	n = dcgm_health_findings(buf, size, f, 1, &unknown);
	check(f, n, 1, unknown);
	n = dcgm_diag_findings(buf, size, f, 16, &unknown);
	check(f, n, 16, unknown);
	if (!memchr(buf, '+', size))
		CHECK(unknown == 1);
	n = dcgm_diag_findings(buf, size, f, 1, &unknown);
	check(f, n, 1, unknown);
	return 0;
}
