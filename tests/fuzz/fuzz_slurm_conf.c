/* layers: base core store driver engine sched */
/* fuzz_slurm_conf.c - libFuzzer target for slurm.conf text (sched/slurm_conf.h). The input goes
 * through slurm_conf_parse with an in-memory reader: `Include` of any name reads the same input
 * again, so nesting, the depth bound and the total-size bound are exercised without files.
 * Properties checked (a failure aborts): a node has a non-empty unique name, CPUs, sockets,
 * cores and threads of at least 1 and at most SLURM_CONF_MAX_NODES nodes exist; GRES, partition
 * and diagnostic counts stay in their bounds; every string is NUL-terminated in its buffer; a
 * diagnostic names a file and a line. Seeds: tests/fuzz/corpus/fuzz_slurm_conf/ (the real
 * configs of tests/data/slurm/conf). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/slurm_conf.h"

#include "base/banned.h"

#define CHECK(c)                                                                                 \
	do {                                                                                     \
		if (!(c)) {                                                                      \
			fprintf(stderr, "fuzz_slurm_conf: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

#define TERMINATED(f) CHECK(memchr((f), '\0', sizeof(f)) != NULL)

struct input {
	const uint8_t *data;
	size_t size;
};

static int same_input(void *ctx, const char *path, struct buf *out, size_t max, char *err,
		      size_t errlen)
{
	const struct input *in = ctx;
	if (strstr(path, "missing"))
		return -2;
	return buf_append(out, in->data, in->size > max ? max + 1 : in->size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct slurm_conf c;
	char err[256];
	slurm_conf_init(&c);
	int rc = slurm_conf_parse(&c, "/etc/slurm/slurm.conf", (const char *)data, size, same_input,
				  &in, err, sizeof(err));
	if (rc < 0)
		TERMINATED(err);
	CHECK(c.nnodes <= SLURM_CONF_MAX_NODES);
	CHECK(c.ndiags <= SLURM_CONF_MAX_DIAGS);
	for (size_t i = 0; i < c.nnodes; i++) {
		const struct slurm_conf_node *n = &c.nodes[i];
		TERMINATED(n->name);
		TERMINATED(n->addr);
		TERMINATED(n->state);
		TERMINATED(n->features);
		CHECK(n->name[0] != '\0');
		CHECK(slurm_conf_node_get(&c, n->name) == n);
		CHECK(n->cpus >= 1 && n->sockets >= 1 && n->cores_per_socket >= 1 &&
		      n->threads_per_core >= 1 && n->boards >= 1);
		CHECK(n->real_memory_mb >= -1 && n->weight >= -1);
		CHECK(n->ngres <= SLURM_CONF_MAX_GRES && n->nparts <= SLURM_CONF_MAX_PARTS);
		for (size_t g = 0; g < n->ngres; g++) {
			TERMINATED(n->gres[g].name);
			TERMINATED(n->gres[g].type);
			CHECK(n->gres[g].name[0] != '\0' && n->gres[g].count >= 0);
		}
		CHECK(n->file != NULL && n->line >= 1);
	}
	for (size_t i = 0; i < c.ndiags; i++) {
		TERMINATED(c.diags[i].file);
		TERMINATED(c.diags[i].text);
		TERMINATED(c.diags[i].why);
		CHECK(c.diags[i].file[0] != '\0' && c.diags[i].why[0] != '\0');
	}
	slurm_conf_release(&c);
	return 0;
}
