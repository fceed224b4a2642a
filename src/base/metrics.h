/* metrics.h - a process-wide registry of Prometheus metrics (text exposition format 0.0.4,
 * https://prometheus.io/docs/instrumenting/exposition_formats/). Families are registered once
 * (idempotent by name) and hold labelled series; rendering walks every family. Collectors are
 * callbacks that append whole families at scrape time (e.g. fleetplane_nodes by phase from the
 * informer cache). All functions are thread-safe. Label values are escaped on output. */
#ifndef FP_BASE_METRICS_H
#define FP_BASE_METRICS_H

#include <stddef.h>

#include "base/buf.h"

enum metric_type {
	METRIC_COUNTER,
	METRIC_GAUGE,
	METRIC_HISTOGRAM
};

#define METRIC_MAX_LABELS 4
#define METRIC_MAX_BUCKETS 16

struct metric_family;

/* Register (or find, if already registered with this name) a family. label_names is a
 * comma-separated list ("kind,result") or "" for none; at most METRIC_MAX_LABELS. For
 * histograms, buckets are the upper bounds in ascending order (seconds for durations), at most
 * METRIC_MAX_BUCKETS; +Inf is implicit. The registry owns the family for the process lifetime. */
struct metric_family *metrics_register(enum metric_type type, const char *name, const char *help,
				       const char *label_names, const double *buckets,
				       size_t nbuckets);

/* label_values has exactly as many strings as the family has label names (NULL if none). */
void metric_add(struct metric_family *f, const char *const *label_values, double v);
void metric_set(struct metric_family *f, const char *const *label_values, double v);
void metric_observe(struct metric_family *f, const char *const *label_values, double v);
/* Current value of a counter or gauge series (0 when absent); for tests. */
double metric_value(struct metric_family *f, const char *const *label_values);

typedef void (*metrics_collect_fn)(struct buf *out, void *arg);
/* Add a collector called on every render; it appends complete families with HELP/TYPE. */
void metrics_add_collector(metrics_collect_fn fn, void *arg);
void metrics_remove_collector(metrics_collect_fn fn, void *arg);

/* Append the whole exposition to out. */
void metrics_render(struct buf *out);
/* Append one escaped label value (backslash, quote, newline escaped). */
void metrics_escape(struct buf *out, const char *v);

/* Default bucket sets (seconds). */
extern const double metrics_buckets_fast[]; /* 0.0005 .. 5 s, 12 buckets */
extern const double metrics_buckets_slow[]; /* 0.1 .. 3600 s, 12 buckets */
#define METRICS_BUCKETS_FAST_N 12
#define METRICS_BUCKETS_SLOW_N 12

#endif
