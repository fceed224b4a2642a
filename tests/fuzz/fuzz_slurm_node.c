/* layers: base core store driver engine sched */
/* fuzz_slurm_node.c - libFuzzer target for `scontrol show node -o` records (sched/slurm_node.h):
 * the input goes through slurm_node_parse. Properties checked (a failure aborts): a refused
 * record (and any holding a NUL) leaves no node (name "", state unknown); an accepted one has a non-empty name, at most
 * SLURM_NODE_MAX_FIELDS pairs, counts of -1 or more, every string NUL-terminated in its buffer,
 * a reason user and time only with a reason, and a state that fails closed when unknown.
 * Seeds: tests/fuzz/corpus/fuzz_slurm_node/ (the records of tests/data/slurm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/slurm_node.h"

#include "base/banned.h"

#define CHECK(c)                                                                                 \
	do {                                                                                     \
		if (!(c)) {                                                                      \
			fprintf(stderr, "fuzz_slurm_node: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

#define TERMINATED(f) CHECK(memchr((f), '\0', sizeof(f)) != NULL)

static struct slurm_node node;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	int rc = slurm_node_parse((const char *)data, size, &node, err, sizeof(err));

	TERMINATED(node.name);
	TERMINATED(node.reason);
	TERMINATED(node.reason_user);
	TERMINATED(node.reason_time);
	TERMINATED(node.gres);
	TERMINATED(node.gres_used);
	TERMINATED(node.cfg_tres);
	TERMINATED(node.alloc_tres);
	TERMINATED(node.partitions);
	TERMINATED(node.state.text);
	if (memchr(data, '\0', size) != NULL) /* a control byte: refused */
		CHECK(rc != 0);
	if (rc != 0) {
		TERMINATED(err);
		CHECK(node.name[0] == '\0');
		CHECK(node.state.unknown == 1);
		return 0;
	}
	CHECK(node.name[0] != '\0');
	CHECK(node.nfields >= 2 && node.nfields <= SLURM_NODE_MAX_FIELDS);
	CHECK(node.cpu_tot >= -1 && node.cpu_alloc >= -1);
	CHECK(node.real_memory_mb >= -1 && node.alloc_mem_mb >= -1);
	if (!node.has_reason)
		CHECK(node.reason[0] == '\0' && node.reason_user[0] == '\0');
	CHECK((node.reason_user[0] == '\0') == (node.reason_time[0] == '\0'));
	if (node.state.unknown) {
		CHECK(slurm_state_has_jobs(&node.state));
		CHECK(!slurm_state_drained(&node.state));
		CHECK(!slurm_state_drain_requested(&node.state));
	}
	return 0;
}
