/* layers: base core store driver engine sched */
/* fuzz_slurm_cli.c - libFuzzer target for what the Slurm client reads from scontrol's stdout
 * (sched/slurm_cli.h): the first byte picks the parser (even: slurm_cli_parse_nodes, the whole
 * `scontrol -o -F show node` output; odd: slurm_cli_parse_ping), the rest is the output.
 * Properties checked (a failure aborts): a refused node list hands back no array and 0 nodes;
 * an accepted one has at most SLURM_CLI_MAX_NODES nodes, non-empty names, no name twice, and
 * 0 nodes only for "No nodes in the system"; input with a NUL is refused by both; a refused
 * ping is all zero, an accepted one has a non-empty host, up 0 or 1 and backups_up <= backups.
 * Seeds: tests/fuzz/corpus/fuzz_slurm_cli/ (the outputs of tests/data/slurm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/slurm_cli.h"

#include "base/banned.h"

#define CHECK(c)                                                                                \
	do {                                                                                    \
		if (!(c)) {                                                                     \
			fprintf(stderr, "fuzz_slurm_cli: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                \
		}                                                                               \
	} while (0)

static int cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *s = (const char *)data + 1;
	size_t len = size - 1;
	int has_nul = memchr(s, '\0', len) != NULL;
	char err[512];
	if ((data[0] & 1) == 0) {
		struct slurm_node *nodes = (struct slurm_node *)&nodes;
		size_t n = 99;
		int rc = slurm_cli_parse_nodes(s, len, &nodes, &n, err, sizeof(err));
		if (has_nul)
			CHECK(rc != 0);
		if (rc != 0) {
			CHECK(nodes == NULL && n == 0);
			CHECK(memchr(err, '\0', sizeof(err)) != NULL);
			return 0;
		}
		CHECK(n <= SLURM_CLI_MAX_NODES);
		CHECK((n == 0) == (nodes == NULL));
		if (n == 0)
			CHECK(len >= 22 && memcmp(s, "No nodes in the system", 22) == 0);
		const char **names = n ? calloc(n, sizeof(*names)) : NULL;
		CHECK(n == 0 || names != NULL);
		for (size_t i = 0; i < n; i++) {
			CHECK(nodes[i].name[0] != '\0');
			CHECK(memchr(nodes[i].name, '\0', sizeof(nodes[i].name)) != NULL);
			names[i] = nodes[i].name;
		}
		if (n > 1) {
			qsort(names, n, sizeof(*names), cmp);
			for (size_t i = 1; i < n; i++)
				CHECK(strcmp(names[i - 1], names[i]) != 0);
		}
		free(names);
		free(nodes);
		return 0;
	}
	struct slurm_ping p;
	memset(&p, 0x5a, sizeof(p));
	int rc = slurm_cli_parse_ping(s, len, &p, err, sizeof(err));
	if (has_nul)
		CHECK(rc != 0);
	CHECK(memchr(p.host, '\0', sizeof(p.host)) != NULL);
	if (rc != 0) {
		CHECK(p.up == 0 && p.host[0] == '\0' && p.backups == 0 && p.backups_up == 0);
		return 0;
	}
	CHECK(p.host[0] != '\0');
	CHECK(p.up == 0 || p.up == 1);
	CHECK(p.backups_up >= 0 && p.backups_up <= p.backups);
	return 0;
}
