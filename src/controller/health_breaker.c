/* health_breaker.c - the correlated-failure breakers' open state (see health_breaker.h): a map
 * of breaker name -> its document, under one mutex, loaded from /breakers/ at start. The health
 * controller decides when a breaker opens or closes and writes the store documents; this file
 * only keeps what is open and answers who it applies to (node_domain_value, core/budget.h). */
#include "controller/health_breaker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/timefmt.h"
#include "core/budget.h"

struct health_breakers {
	pthread_mutex_t mu;
	struct hmap open; /* name -> json_t* (breaker document) */
};

struct health_breakers *health_breakers_new(void)
{
	struct health_breakers *hb = xcalloc(1, sizeof(*hb));
	pthread_mutex_init(&hb->mu, NULL);
	hmap_init(&hb->open);
	return hb;
}

/* Holds hb->mu. */
static void clear(struct health_breakers *hb)
{
	for (struct hmap_iter it = hmap_iter_start(&hb->open); hmap_iter_next(&it);)
		json_decref(it.e->value);
	hmap_release(&hb->open);
	hmap_init(&hb->open);
}

void health_breakers_free(struct health_breakers *hb)
{
	if (!hb)
		return;
	clear(hb);
	hmap_release(&hb->open);
	pthread_mutex_destroy(&hb->mu);
	free(hb);
}

static int load_one(void *arg, const struct store_kv *kv)
{
	struct health_breakers *hb = arg;
	json_t *d = NULL;
	if (jsonx_parse(kv->value, strlen(kv->value), &d, NULL, 0) < 0)
		return 0;
	const char *name = kv->key + strlen("/breakers/");
	json_decref(hmap_put(&hb->open, name, d));
	return 0;
}

int health_breakers_load(struct health_breakers *hb, struct store *s, char *err, size_t errlen)
{
	pthread_mutex_lock(&hb->mu);
	clear(hb);
	int rc = store_foreach(s, "/breakers/", 0, load_one, hb, NULL);
	pthread_mutex_unlock(&hb->mu);
	if (rc < 0)
		return fp_errf(rc, err, errlen, "reading /breakers/: %s", fp_err_msg(rc));
	return 0;
}

int health_breakers_has(struct health_breakers *hb, const char *name)
{
	pthread_mutex_lock(&hb->mu);
	int has = hmap_get(&hb->open, name) != NULL;
	pthread_mutex_unlock(&hb->mu);
	return has;
}

json_t *health_breakers_get(struct health_breakers *hb, const char *name)
{
	pthread_mutex_lock(&hb->mu);
	json_t *d = hmap_get(&hb->open, name);
	d = d ? json_deep_copy(d) : NULL;
	pthread_mutex_unlock(&hb->mu);
	return d;
}

void health_breakers_put(struct health_breakers *hb, const char *name, json_t *doc)
{
	pthread_mutex_lock(&hb->mu);
	json_decref(hmap_put(&hb->open, name, doc));
	pthread_mutex_unlock(&hb->mu);
}

void health_breakers_open(struct health_breakers *hb, const char *name, const char *domain,
			  const char *value, json_t *nodes, const char *reason, int64_t at_ms)
{
	char ts[FP_TIME_LEN];
	fp_time_format(at_ms, ts);
	json_t *doc = json_pack("{s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:o, s:o, s:[]}", "kind",
				"HealthBreaker", "metadata", "name", name, "createdAt", ts,
				"domain", domain, "value", value, "state", "open", "openedAt", ts,
				"nodes", nodes, "reason", jsonx_string_lossy(reason), "suppressed");
	health_breakers_put(hb, name, doc);
}

int health_breakers_remove(struct health_breakers *hb, const char *name)
{
	pthread_mutex_lock(&hb->mu);
	json_t *d = hmap_remove(&hb->open, name);
	pthread_mutex_unlock(&hb->mu);
	json_decref(d);
	return d != NULL;
}

size_t health_breakers_count(struct health_breakers *hb)
{
	pthread_mutex_lock(&hb->mu);
	size_t n = hb->open.count;
	pthread_mutex_unlock(&hb->mu);
	return n;
}

/* The held names in strcmp order (borrowed from the map; free the array). Holds hb->mu. */
static const char **sorted_names(struct health_breakers *hb, size_t *count)
{
	size_t n = hb->open.count, i = 0;
	const char **names = xcalloc(n ? n : 1, sizeof(*names));
	for (struct hmap_iter it = hmap_iter_start(&hb->open); hmap_iter_next(&it);)
		names[i++] = it.e->key;
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(names[b - 1], names[b]) > 0; b--) {
			const char *tmp = names[b];
			names[b] = names[b - 1];
			names[b - 1] = tmp;
		}
	*count = n;
	return names;
}

json_t *health_breakers_list(struct health_breakers *hb)
{
	json_t *items = json_array();
	pthread_mutex_lock(&hb->mu);
	size_t n;
	const char **names = sorted_names(hb, &n);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(items, json_deep_copy(hmap_get(&hb->open, names[i])));
	free(names);
	pthread_mutex_unlock(&hb->mu);
	return json_pack("{s:o}", "items", items);
}

json_t *health_breakers_note(struct health_breakers *hb, const char *bname, const char *node,
			     const char *event, const char *code, const char *gpu, int64_t at_ms)
{
	json_t *out = NULL;
	pthread_mutex_lock(&hb->mu);
	json_t *doc = hmap_get(&hb->open, bname);
	if (!doc)
		goto done;
	json_t *arr = json_object_get(doc, "suppressed");
	if (!json_is_array(arr)) {
		arr = json_array();
		json_object_set_new(doc, "suppressed", arr);
	}
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x)
		if (strcmp(jsonx_str(x, "node") ? jsonx_str(x, "node") : "", node) == 0 &&
		    strcmp(jsonx_str(x, "event") ? jsonx_str(x, "event") : "", event) == 0)
			goto done;
	if (json_array_size(arr) >= BREAKER_MAX_SUPPRESSED) {
		json_int_t d = json_integer_value(json_object_get(doc, "suppressedDropped"));
		json_object_set_new(doc, "suppressedDropped", json_integer(d + 1));
	} else {
		char ts[FP_TIME_LEN];
		fp_time_format(at_ms, ts);
		json_t *pair = json_pack("{s:s, s:s, s:s, s:s}", "node", node, "event", event,
					 "code", code, "at", ts);
		if (gpu)
			json_object_set_new(pair, "gpu", json_string(gpu));
		json_array_append_new(arr, pair);
	}
	out = json_deep_copy(doc);
done:
	pthread_mutex_unlock(&hb->mu);
	return out;
}

int health_breakers_open_for(struct health_breakers *hb, const struct node *n, char *why,
			     size_t whylen, char *name, size_t namelen)
{
	if (why && whylen)
		why[0] = 0;
	if (name && namelen)
		name[0] = 0;
	int open = 0;
	pthread_mutex_lock(&hb->mu);
	size_t cnt;
	const char **names = sorted_names(hb, &cnt);
	for (size_t i = 0; !open && i < cnt; i++) {
		const json_t *doc = hmap_get(&hb->open, names[i]);
		const char *st = jsonx_str(doc, "state"), *dom = jsonx_str(doc, "domain"),
			   *val = jsonx_str(doc, "value"), *at = jsonx_str(doc, "openedAt");
		if (!st || strcmp(st, "open") != 0 || !dom || !*dom || !val || !*val)
			continue;
		const char *v = node_domain_value(n, dom);
		if (!v || strcmp(v, val) != 0)
			continue;
		open = 1;
		if (why && whylen)
			snprintf(why, whylen, "correlated-failure breaker %s is open%s%s", names[i],
				 at ? " since " : "", at ? at : "");
		if (name && namelen)
			snprintf(name, namelen, "%s", names[i]);
	}
	free(names);
	pthread_mutex_unlock(&hb->mu);
	return open;
}

int health_breakers_open_for_cb(void *hb, const struct node *n, char *why, size_t whylen,
				char *name, size_t namelen)
{
	return health_breakers_open_for(hb, n, why, whylen, name, namelen);
}
