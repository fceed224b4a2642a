/* hmap.c - chained string hash map (see hmap.h). */
#include "base/hmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

static size_t fnv1a(const char *s)
{
	size_t h = (size_t)14695981039346656037ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= (size_t)1099511628211ULL;
	}
	return h;
}

void hmap_init(struct hmap *m)
{
	m->nbuckets = 16;
	m->buckets = xcalloc(m->nbuckets, sizeof(*m->buckets));
	m->count = 0;
}

void hmap_release(struct hmap *m)
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct hmap_entry *e = m->buckets[i];
		while (e) {
			struct hmap_entry *n = e->next;
			free(e->key);
			free(e);
			e = n;
		}
	}
	free(m->buckets);
	m->buckets = NULL;
	m->nbuckets = m->count = 0;
}

static struct hmap_entry **find(const struct hmap *m, const char *key, size_t h)
{
	struct hmap_entry **pp = &m->buckets[h & (m->nbuckets - 1)];
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && strcmp((*pp)->key, key) == 0)
			break;
	return pp;
}

void *hmap_get(const struct hmap *m, const char *key)
{
	struct hmap_entry **pp = find(m, key, fnv1a(key));
	return *pp ? (*pp)->value : NULL;
}

static void grow(struct hmap *m)
{
	size_t nb = m->nbuckets * 2;
	struct hmap_entry **b = xcalloc(nb, sizeof(*b));
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct hmap_entry *e = m->buckets[i];
		while (e) {
			struct hmap_entry *n = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
			e = n;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = nb;
}

void *hmap_put(struct hmap *m, const char *key, void *value)
{
	size_t h = fnv1a(key);
	struct hmap_entry **pp = find(m, key, h);
	if (*pp) {
		void *old = (*pp)->value;
		(*pp)->value = value;
		return old;
	}
	struct hmap_entry *e = xmalloc(sizeof(*e));
	e->key = xstrdup(key);
	e->value = value;
	e->hash = h;
	e->next = NULL;
	*pp = e;
	if (++m->count > m->nbuckets)
		grow(m);
	return NULL;
}

void *hmap_remove(struct hmap *m, const char *key)
{
	struct hmap_entry **pp = find(m, key, fnv1a(key));
	if (!*pp)
		return NULL;
	struct hmap_entry *e = *pp;
	void *v = e->value;
	*pp = e->next;
	free(e->key);
	free(e);
	m->count--;
	return v;
}

struct hmap_iter hmap_iter_start(const struct hmap *m)
{
	struct hmap_iter it = {m, 0, NULL, m->nbuckets ? m->buckets[0] : NULL};
	return it;
}

int hmap_iter_next(struct hmap_iter *it)
{
	while (!it->next) {
		if (++it->bucket >= it->m->nbuckets)
			return 0;
		it->next = it->m->buckets[it->bucket];
	}
	it->e = it->next;
	it->next = it->e->next;
	return 1;
}
