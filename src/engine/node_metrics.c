/* node_metrics.c - per-node and per-site series (see node_metrics.h). One walk over the cache
 * under its read lock fills two text buffers (the per-node families) and a small count table
 * (the per-site families); the text is assembled after the walk. */
#include "engine/node_metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/metrics.h"
#include "core/model.h"

static const char *const types[NODE_METRICS_NTYPES] = {NODE_METRICS_TYPES};
static const char *const statuses[3] = {"True", "False", "Unknown"};
#define OTHER_SITE "_other"

struct site_counts {
	char *site;
	size_t nodes;
	size_t cond[NODE_METRICS_NTYPES][3];
};

struct walk {
	struct site_counts sites[NODE_METRICS_MAX_SITES + 1]; /* + "_other" */
	size_t nsites;
	int per_node; /* emit the per-node families */
	size_t max_nodes;
	size_t emitted;
	struct buf info, cond;
};

static int type_index(const char *t)
{
	for (int i = 0; i < NODE_METRICS_NTYPES; i++)
		if (strcmp(types[i], t) == 0)
			return i;
	return -1;
}

static int status_index(enum cond_status s)
{
	return s == COND_TRUE ? 0 : s == COND_FALSE ? 1 : 2;
}

static struct site_counts *site_of(struct walk *w, const char *site)
{
	for (size_t i = 0; i < w->nsites; i++)
		if (strcmp(w->sites[i].site, site) == 0)
			return &w->sites[i];
	if (w->nsites == NODE_METRICS_MAX_SITES) {
		/* the overflow slot, NODE_METRICS_MAX_SITES, holds "_other" */
		struct site_counts *o = &w->sites[NODE_METRICS_MAX_SITES];
		if (!o->site)
			o->site = xstrdup(OTHER_SITE);
		return o;
	}
	struct site_counts *s = &w->sites[w->nsites++];
	s->site = xstrdup(site);
	return s;
}

static void label(struct buf *out, const char *k, const char *v, int first)
{
	buf_printf(out, "%s%s=\"", first ? "" : ",", k);
	metrics_escape(out, v ? v : "");
	buf_puts(out, "\"");
}

static int visit(void *arg, const struct node *n)
{
	struct walk *w = arg;
	struct site_counts *s = site_of(w, n->site ? n->site : "");
	s->nodes++;
	int emit = w->per_node && w->emitted < w->max_nodes;
	if (emit) {
		w->emitted++;
		buf_puts(&w->info, "fleetplane_node_info{");
		label(&w->info, "node", n->name, 1);
		label(&w->info, "site", n->site, 0);
		label(&w->info, "rack", n->rack, 0);
		label(&w->info, "pool", n->pool, 0);
		label(&w->info, "phase", node_phase_name(n->phase), 0);
		buf_puts(&w->info, "} 1\n");
	}
	int seen[NODE_METRICS_NTYPES] = {0};
	for (size_t i = 0; i < n->nconditions; i++) {
		const struct node_condition *c = &n->conditions[i];
		int t = c->type ? type_index(c->type) : -1;
		if (t < 0 || seen[t])
			continue;
		seen[t] = 1;
		int st = status_index(c->status);
		s->cond[t][st]++;
		if (emit) {
			buf_puts(&w->cond, "fleetplane_node_condition{");
			label(&w->cond, "node", n->name, 1);
			buf_printf(&w->cond, ",type=\"%s\",status=\"%s\"} 1\n", types[t],
				   statuses[st]);
		}
	}
	return 0;
}

void node_metrics_render(struct cache *c, long max_nodes, struct buf *out)
{
	struct walk *w = xcalloc(1, sizeof(*w));
	size_t limit = max_nodes == 0  ? NODE_METRICS_DEFAULT_MAX_NODES
		       : max_nodes < 0 ? 0
				       : (size_t)max_nodes;
	size_t count = cache_node_count(c);
	w->per_node = limit > 0 && count <= limit;
	w->max_nodes = limit;
	buf_init(&w->info, 0);
	buf_init(&w->cond, 0);
	cache_visit_nodes(c, visit, w);
	size_t visited = 0;
	for (size_t i = 0; i <= NODE_METRICS_MAX_SITES; i++)
		visited += w->sites[i].nodes;
	/* nodes added between the count and the walk may pass the limit: then none either */
	int limited = limit > 0 && visited > limit;
	if (limited)
		w->per_node = 0;

	buf_puts(out, "# HELP fleetplane_site_nodes Nodes per site.\n"
		      "# TYPE fleetplane_site_nodes gauge\n");
	size_t nslots = w->nsites + (w->sites[NODE_METRICS_MAX_SITES].site ? 1 : 0);
	for (size_t i = 0; i < nslots; i++) {
		struct site_counts *s = i < w->nsites ? &w->sites[i]
						      : &w->sites[NODE_METRICS_MAX_SITES];
		buf_puts(out, "fleetplane_site_nodes{");
		label(out, "site", s->site, 1);
		buf_printf(out, "} %zu\n", s->nodes);
	}
	buf_puts(out, "# HELP fleetplane_nodes_condition Nodes per site whose condition of this "
		      "type has this status.\n"
		      "# TYPE fleetplane_nodes_condition gauge\n");
	for (size_t i = 0; i < nslots; i++) {
		struct site_counts *s = i < w->nsites ? &w->sites[i]
						      : &w->sites[NODE_METRICS_MAX_SITES];
		for (int t = 0; t < NODE_METRICS_NTYPES; t++)
			for (int st = 0; st < 3; st++) {
				buf_puts(out, "fleetplane_nodes_condition{");
				label(out, "site", s->site, 1);
				buf_printf(out, ",type=\"%s\",status=\"%s\"} %zu\n", types[t],
					   statuses[st], s->cond[t][st]);
			}
	}
	buf_printf(out,
		   "# HELP fleetplane_node_series_limited 1 when fleetplane_node_info and "
		   "fleetplane_node_condition are left out: more nodes than "
		   "--metrics-node-series.\n"
		   "# TYPE fleetplane_node_series_limited gauge\n"
		   "fleetplane_node_series_limited %d\n",
		   limited);
	if (w->per_node) {
		buf_puts(out,
			 "# HELP fleetplane_node_info A constant 1 per node, labelled with its "
			 "site, rack, pool and phase.\n"
			 "# TYPE fleetplane_node_info gauge\n");
		buf_append(out, w->info.data ? w->info.data : "", w->info.len);
		buf_puts(out, "# HELP fleetplane_node_condition A constant 1 per node and "
			      "condition, labelled with the condition's current status.\n"
			      "# TYPE fleetplane_node_condition gauge\n");
		buf_append(out, w->cond.data ? w->cond.data : "", w->cond.len);
	}
	buf_release(&w->info);
	buf_release(&w->cond);
	for (size_t i = 0; i <= NODE_METRICS_MAX_SITES; i++)
		free(w->sites[i].site);
	free(w);
}

/* One registration per cache; its limit travels with it. */
struct reg {
	struct cache *cache;
	long max_nodes;
	struct reg *next;
};
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct reg *g_regs;

static void collect(struct buf *out, void *arg)
{
	struct reg *r = arg;
	node_metrics_render(r->cache, r->max_nodes, out);
}

void node_metrics_register(struct cache *c, long max_nodes)
{
	struct reg *r = xcalloc(1, sizeof(*r));
	r->cache = c;
	r->max_nodes = max_nodes;
	pthread_mutex_lock(&g_mu);
	r->next = g_regs;
	g_regs = r;
	pthread_mutex_unlock(&g_mu);
	metrics_add_collector(collect, r);
}

void node_metrics_unregister(struct cache *c)
{
	pthread_mutex_lock(&g_mu);
	struct reg *found = NULL;
	for (struct reg **pp = &g_regs; *pp; pp = &(*pp)->next)
		if ((*pp)->cache == c) {
			found = *pp;
			*pp = found->next;
			break;
		}
	pthread_mutex_unlock(&g_mu);
	if (!found)
		return;
	metrics_remove_collector(collect, found);
	free(found);
}
