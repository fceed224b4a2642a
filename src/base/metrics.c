/* metrics.c - Prometheus registry (see metrics.h). Series are kept in small arrays searched
 * linearly: families have few series (phases, kinds, results), not per-node labels. */
#include "base/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

const double metrics_buckets_fast[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				       0.05,   0.1,   0.25,   0.5,   1,    5};
const double metrics_buckets_slow[] = {0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};

struct series {
	char *labels[METRIC_MAX_LABELS];
	double value; /* counter/gauge, or histogram sum */
	double count;
	double bucket[METRIC_MAX_BUCKETS];
};

struct metric_family {
	enum metric_type type;
	char *name, *help;
	char *label_names[METRIC_MAX_LABELS];
	size_t nlabels;
	double buckets[METRIC_MAX_BUCKETS];
	size_t nbuckets;
	struct series *series;
	size_t nseries, aseries;
	struct metric_family *next;
};

struct collector {
	metrics_collect_fn fn;
	void *arg;
	struct collector *next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct metric_family *g_families, *g_last;
static struct collector *g_collectors;

struct metric_family *metrics_register(enum metric_type type, const char *name, const char *help,
				       const char *label_names, const double *buckets,
				       size_t nbuckets)
{
	pthread_mutex_lock(&g_mu);
	for (struct metric_family *f = g_families; f; f = f->next)
		if (strcmp(f->name, name) == 0) {
			pthread_mutex_unlock(&g_mu);
			return f;
		}
	struct metric_family *f = xcalloc(1, sizeof(*f));
	f->type = type;
	f->name = xstrdup(name);
	f->help = xstrdup(help);
	if (label_names && *label_names) {
		char *copy = xstrdup(label_names), *save = NULL;
		for (char *t = strtok_r(copy, ",", &save); t && f->nlabels < METRIC_MAX_LABELS;
		     t = strtok_r(NULL, ",", &save))
			f->label_names[f->nlabels++] = xstrdup(t);
		free(copy);
	}
	if (type == METRIC_HISTOGRAM) {
		f->nbuckets = nbuckets > METRIC_MAX_BUCKETS ? METRIC_MAX_BUCKETS : nbuckets;
		memcpy(f->buckets, buckets, f->nbuckets * sizeof(double));
	}
	if (g_last)
		g_last->next = f;
	else
		g_families = f;
	g_last = f;
	pthread_mutex_unlock(&g_mu);
	return f;
}

static struct series *find_series(struct metric_family *f, const char *const *lv)
{
	for (size_t i = 0; i < f->nseries; i++) {
		size_t j = 0;
		for (; j < f->nlabels; j++)
			if (strcmp(f->series[i].labels[j], lv[j] ? lv[j] : "") != 0)
				break;
		if (j == f->nlabels)
			return &f->series[i];
	}
	ALLOC_GROW(f->series, f->nseries + 1, f->aseries);
	struct series *s = &f->series[f->nseries++];
	memset(s, 0, sizeof(*s));
	for (size_t j = 0; j < f->nlabels; j++)
		s->labels[j] = xstrdup(lv[j] ? lv[j] : "");
	return s;
}

void metric_add(struct metric_family *f, const char *const *lv, double v)
{
	pthread_mutex_lock(&g_mu);
	find_series(f, lv)->value += v;
	pthread_mutex_unlock(&g_mu);
}

void metric_set(struct metric_family *f, const char *const *lv, double v)
{
	pthread_mutex_lock(&g_mu);
	find_series(f, lv)->value = v;
	pthread_mutex_unlock(&g_mu);
}

void metric_observe(struct metric_family *f, const char *const *lv, double v)
{
	pthread_mutex_lock(&g_mu);
	struct series *s = find_series(f, lv);
	s->value += v;
	s->count += 1;
	for (size_t i = 0; i < f->nbuckets; i++)
		if (v <= f->buckets[i])
			s->bucket[i] += 1;
	pthread_mutex_unlock(&g_mu);
}

double metric_value(struct metric_family *f, const char *const *lv)
{
	pthread_mutex_lock(&g_mu);
	double v = find_series(f, lv)->value;
	pthread_mutex_unlock(&g_mu);
	return v;
}

void metrics_add_collector(metrics_collect_fn fn, void *arg)
{
	struct collector *c = xcalloc(1, sizeof(*c));
	c->fn = fn;
	c->arg = arg;
	pthread_mutex_lock(&g_mu);
	c->next = g_collectors;
	g_collectors = c;
	pthread_mutex_unlock(&g_mu);
}

void metrics_remove_collector(metrics_collect_fn fn, void *arg)
{
	pthread_mutex_lock(&g_mu);
	for (struct collector **pp = &g_collectors; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->arg == arg) {
			struct collector *c = *pp;
			*pp = c->next;
			free(c);
			break;
		}
	pthread_mutex_unlock(&g_mu);
}

void metrics_escape(struct buf *out, const char *v)
{
	for (const char *p = v; *p; p++) {
		if (*p == '\\')
			buf_puts(out, "\\\\");
		else if (*p == '"')
			buf_puts(out, "\\\"");
		else if (*p == '\n')
			buf_puts(out, "\\n");
		else
			buf_append(out, p, 1);
	}
}

static void put_labels(struct buf *out, struct metric_family *f, struct series *s,
		       const char *extra_k, const char *extra_v)
{
	if (f->nlabels == 0 && !extra_k)
		return;
	buf_puts(out, "{");
	for (size_t j = 0; j < f->nlabels; j++) {
		buf_printf(out, "%s%s=\"", j ? "," : "", f->label_names[j]);
		metrics_escape(out, s->labels[j]);
		buf_puts(out, "\"");
	}
	if (extra_k)
		buf_printf(out, "%s%s=\"%s\"", f->nlabels ? "," : "", extra_k, extra_v);
	buf_puts(out, "}");
}

static void put_num(struct buf *out, double v)
{
	if (isinf(v))
		buf_puts(out, v > 0 ? "+Inf" : "-Inf");
	else if (v == (double)(long long)v && fabs(v) < 1e15)
		buf_printf(out, "%lld", (long long)v);
	else
		buf_printf(out, "%.17g", v);
}

void metrics_render(struct buf *out)
{
	static const char *tn[] = {"counter", "gauge", "histogram"};
	pthread_mutex_lock(&g_mu);
	for (struct metric_family *f = g_families; f; f = f->next) {
		buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
			   tn[f->type]);
		for (size_t i = 0; i < f->nseries; i++) {
			struct series *s = &f->series[i];
			if (f->type != METRIC_HISTOGRAM) {
				buf_puts(out, f->name);
				put_labels(out, f, s, NULL, NULL);
				buf_puts(out, " ");
				put_num(out, s->value);
				buf_puts(out, "\n");
				continue;
			}
			for (size_t b = 0; b < f->nbuckets; b++) {
				char le[32];
				snprintf(le, sizeof(le), "%g", f->buckets[b]);
				buf_printf(out, "%s_bucket", f->name);
				put_labels(out, f, s, "le", le);
				buf_puts(out, " ");
				put_num(out, s->bucket[b]);
				buf_puts(out, "\n");
			}
			buf_printf(out, "%s_bucket", f->name);
			put_labels(out, f, s, "le", "+Inf");
			buf_puts(out, " ");
			put_num(out, s->count);
			buf_printf(out, "\n%s_sum", f->name);
			put_labels(out, f, s, NULL, NULL);
			buf_puts(out, " ");
			put_num(out, s->value);
			buf_printf(out, "\n%s_count", f->name);
			put_labels(out, f, s, NULL, NULL);
			buf_puts(out, " ");
			put_num(out, s->count);
			buf_puts(out, "\n");
		}
	}
	struct collector *c = g_collectors;
	pthread_mutex_unlock(&g_mu);
	/* Collectors run outside the lock; the list only grows at start-up. */
	for (; c; c = c->next)
		c->fn(out, c->arg);
}
