/* hmap.h - a string-keyed hash map (FNV-1a, chained, doubling at load 1). Keys are copied and
 * owned by the map; values are borrowed pointers the caller manages. Not thread-safe: callers
 * lock. Used for caches and indexes keyed by node name. */
#ifndef FP_BASE_HMAP_H
#define FP_BASE_HMAP_H

#include <stddef.h>

struct hmap_entry {
	char *key;
	void *value;
	struct hmap_entry *next;
	size_t hash;
};

struct hmap {
	struct hmap_entry **buckets;
	size_t nbuckets;
	size_t count;
};

void hmap_init(struct hmap *m);
/* Frees the entries and keys; values are the caller's (free them first via hmap_foreach). */
void hmap_release(struct hmap *m);
void *hmap_get(const struct hmap *m, const char *key);
/* Inserts or replaces; returns the previous value (or NULL). */
void *hmap_put(struct hmap *m, const char *key, void *value);
/* Removes; returns the removed value (or NULL). */
void *hmap_remove(struct hmap *m, const char *key);

/* Iteration: for (struct hmap_iter it = hmap_iter_start(m); hmap_iter_next(&it);) it.e->key */
struct hmap_iter {
	const struct hmap *m;
	size_t bucket;
	struct hmap_entry *e, *next;
};
struct hmap_iter hmap_iter_start(const struct hmap *m);
int hmap_iter_next(struct hmap_iter *it);

#endif
