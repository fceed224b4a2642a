/* sched/slurm_render.c - fleetplane's nodes as slurm.conf/gres.conf lines (slurm_render.h). */
#include "sched/slurm_render.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "sched/slurm_conf.h"

#include "base/banned.h"

int slurm_render_wanted(const struct node *n)
{
	return n->served_at != 0 && n->phase != PHASE_RETIRING && n->phase != PHASE_RETIRED &&
	       !n->retire;
}

void slurm_render_gres_type(const char *model, char *out, size_t outlen)
{
	size_t w = 0;
	int sep = 0;
	if (!outlen)
		return;
	out[0] = '\0';
	if (!model)
		return;
	for (const char *p = model; *p && w + 2 < outlen; p++) {
		unsigned char ch = (unsigned char)*p;
		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		    ch == '-' || ch == '.') {
			out[w++] = (char)ch;
			sep = 0;
		} else if (ch >= 'A' && ch <= 'Z') {
			out[w++] = (char)(ch - 'A' + 'a');
			sep = 0;
		} else if (!sep && w) {
			out[w++] = '_';
			sep = 1;
		}
	}
	while (w && out[w - 1] == '_')
		w--;
	out[w] = '\0';
}

static long long label_num(const struct node *n, const char *key)
{
	const char *v = node_label_get(n, key);
	if (!v || !*v || strlen(v) > 18 || strspn(v, "0123456789") != strlen(v))
		return 0;
	return strtoll(v, NULL, 10);
}

int slurm_render(struct node *const *v, size_t n, const char *header, struct buf *nodes,
		 struct buf *gres, size_t *count, char *err, size_t errlen)
{
	struct slurm_conf_spec *specs = xcalloc(n + 1, sizeof(*specs));
	struct slurm_gres *g = xcalloc(n + 1, sizeof(*g));
	const char **pools = xcalloc(n + 1, sizeof(*pools));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct node *nd = v[i];
		if (!slurm_render_wanted(nd))
			continue;
		struct slurm_conf_spec *s = &specs[k];
		s->name = nd->name;
		s->cpus = label_num(nd, "slurm/cpus");
		s->sockets = label_num(nd, "slurm/sockets");
		s->cores_per_socket = label_num(nd, "slurm/cores-per-socket");
		s->threads_per_core = label_num(nd, "slurm/threads-per-core");
		s->real_memory_mb = label_num(nd, "slurm/real-memory-mb");
		json_t *inv = nd->inventory        ? json_incref(nd->inventory)
			      : nd->inventory_text ? json_loads(nd->inventory_text, 0, NULL)
						   : NULL;
		json_t *igpus = json_object_get(inv, "gpus");
		if (!s->sockets && json_is_integer(jsonx_path(inv, "cpu.sockets")))
			s->sockets = json_integer_value(jsonx_path(inv, "cpu.sockets"));
		if (!s->real_memory_mb && json_is_integer(json_object_get(inv, "memoryGiB")))
			s->real_memory_mb = json_integer_value(json_object_get(inv, "memoryGiB")) *
					    1024;
		long long gpus = json_is_array(igpus) ? (long long)json_array_size(igpus) : 0;
		if (!gpus)
			gpus = nd->gpu_count;
		/* what inspect found wins over what the spec expects */
		const char *model = json_array_size(igpus)
					    ? jsonx_str(json_array_get(igpus, 0), "model")
					    : nd->gpu_model;
		if (gpus > 0) {
			memcpy(g[k].name, "gpu", 4);
			slurm_render_gres_type(model, g[k].type, sizeof(g[k].type));
			g[k].count = gpus;
			s->gres = &g[k];
			s->ngres = 1;
		}
		json_decref(inv);
		pools[k] = nd->pool;
		if (pools[k]) {
			s->parts = &pools[k];
			s->nparts = 1;
		}
		k++;
	}
	struct buf bn, bg;
	buf_init(&bn, nodes->max);
	buf_init(&bg, gres->max);
	if (header) {
		buf_printf(&bn, "# %s\n", header);
		buf_printf(&bg, "# %s\n", header);
	}
	int rc = slurm_conf_render_nodes(specs, k, &bn, err, errlen);
	for (size_t j = 0; j < k && rc == 0; j++)
		rc = slurm_conf_render_gres(&specs[j], &bg, err, errlen);
	if (rc == 0) {
		size_t n0 = nodes->len;
		if (buf_append(nodes, bn.data ? bn.data : "", bn.len) < 0 ||
		    buf_append(gres, bg.data ? bg.data : "", bg.len) < 0) {
			nodes->len = n0;
			rc = fp_errf(FP_ETOOBIG, err, errlen,
				     "the generated configuration is over "
				     "its buffer's bound");
		} else if (count) {
			*count = k;
		}
	}
	buf_release(&bn);
	buf_release(&bg);
	free(specs);
	free(g);
	free(pools);
	return rc;
}
