/* layers: base core store driver engine sched */
/* fuzz_gres_conf.c - libFuzzer target for gres.conf text and GRES strings (sched/slurm_conf.h).
 * The input is read as a gres.conf over a fixed slurm.conf of three nodes (tux[0-2], GRES
 * gpu:a100:4,mps:400), then as a GRES string through slurm_gres_parse. Properties checked (a
 * failure aborts): no node gains or loses its slurm.conf GRES; gres.conf lines per node stay
 * within SLURM_CONF_MAX_DEVS with counts >= 0 and NUL-terminated strings; a refused GRES string
 * reads 0 items, an accepted one at most the maximum, each with a non-empty name. Seeds:
 * tests/fuzz/corpus/fuzz_gres_conf/ (the gres.conf files of tests/data/slurm/conf). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/slurm_conf.h"

#include "base/banned.h"

#define CHECK(c)                                                                                \
	do {                                                                                    \
		if (!(c)) {                                                                     \
			fprintf(stderr, "fuzz_gres_conf: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                                \
		}                                                                               \
	} while (0)

#define TERMINATED(f) CHECK(memchr((f), '\0', sizeof(f)) != NULL)

static const char slurm[] = "NodeName=tux[0-2] CPUs=8 Gres=gpu:a100:4,mps:400\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct slurm_conf c;
	char err[256];
	slurm_conf_init(&c);
	CHECK(slurm_conf_parse(&c, "slurm.conf", slurm, sizeof(slurm) - 1, NULL, NULL, err,
			       sizeof(err)) == 0);
	CHECK(c.nnodes == 3 && c.ndiags == 0);
	slurm_conf_parse_gres(&c, "gres.conf", (const char *)data, size, NULL, NULL, err,
			      sizeof(err));
	CHECK(c.nnodes == 3);
	TERMINATED(c.autodetect);
	for (size_t i = 0; i < c.nnodes; i++) {
		const struct slurm_conf_node *n = &c.nodes[i];
		CHECK(n->ngres == 2 && n->gres[0].count == 4 && n->gres[1].count == 400);
		CHECK(n->ndevs <= SLURM_CONF_MAX_DEVS);
		TERMINATED(n->autodetect);
		for (size_t d = 0; d < n->ndevs; d++) {
			TERMINATED(n->devs[d].name);
			TERMINATED(n->devs[d].type);
			TERMINATED(n->devs[d].file);
			TERMINATED(n->devs[d].cores);
			CHECK(n->devs[d].name[0] != '\0' && n->devs[d].count >= 0);
		}
	}
	for (size_t i = 0; i < c.ndiags; i++)
		CHECK(c.diags[i].line >= 1 && c.diags[i].why[0] != '\0');
	slurm_conf_release(&c);

	struct slurm_gres g[SLURM_CONF_MAX_GRES];
	size_t n = 99;
	int rc = slurm_gres_parse((const char *)data, size, g, SLURM_CONF_MAX_GRES, &n, err,
				  sizeof(err));
	if (rc < 0) {
		CHECK(n == 0);
		TERMINATED(err);
		return 0;
	}
	CHECK(n <= SLURM_CONF_MAX_GRES);
	for (size_t i = 0; i < n; i++) {
		TERMINATED(g[i].name);
		TERMINATED(g[i].type);
		CHECK(g[i].name[0] != '\0' && g[i].count >= 0);
	}
	return 0;
}
