/* budget.c - the disruption-budget service (see budget.h; DESIGN.md principle 4).
 *
 * Budgets are read from /budgets/ and kept until budget_svc_invalidate or BUDGET_TTL_MS pass.
 * Node phases come from the informer cache: the members of a rack or site domain value through
 * the cache's rack/site index, of a pool or label domain by walking every node. An admitted
 * node is reserved for BUDGET_RESERVE_MS: it counts as unavailable until the cache shows it
 * unavailable (then the phase counts it and the reservation is dropped), the cache shows it
 * back in service in a version written after the admission (reserved()), or the reservation
 * ends. One mutex makes count + reserve atomic between admissions.
 *
 * The service also answers whether an open correlated-failure breaker stops automatic health
 * actions on a node (budget_breaker_open) by asking the breakers' owner (the health controller's
 * health_breaker.c, set with budget_svc_set_breakers) directly: no copy, no store read. */
#include "controller/budget.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/metrics.h"
#include "core/budget.h"

#define BUDGET_TTL_MS 5000
#define BUDGET_RESERVE_MS 30000
#define BUDGET_MAX_RESERVATIONS 65536
#define BUDGET_MAX_OUT_NAMED 8 /* nodes named in a refusal reason */

struct reservation {
	char *node;
	int64_t until;   /* monotonic ms */
	int64_t at_wall; /* wall ms of the admission */
	int64_t rv;      /* the node's resource version the admission saw */
};

struct budget_svc {
	struct store *store;
	struct cache *cache;
	struct fp_clock *clock;
	pthread_mutex_t mu;
	struct budget *budgets;
	size_t nbudgets;
	int loaded;
	int64_t loaded_at;
	char load_err[400]; /* why the last load failed ("" = it did not) */
	struct reservation *res;
	size_t nres;
	budget_breaker_fn breaker_open; /* the breakers' owner, asked directly (NULL: none) */
	void *breaker_arg;
	/* Members of each value of the domains the cache has no index for (labels such as leaf,
	 * nvlink_domain): domain -> struct domain_memo, rebuilt when the cache's revision moved,
	 * so a node that waits for its budget (looked at again every 2 s, lifecycle_remediation.c
	 * BUDGET_RETRY) does not visit every cached node each time (issue 12: 86 % of a
	 * 2,048-node `fleetplane sim` run). */
	struct hmap memo;
};

/* What tally_member needs of a node, copied at the memo's revision: a struct node with only
 * name, phase, phase_since, served_at and resource_version set. */
struct domain_member {
	struct node n;
	int waiting; /* DisruptionAllowed False */
};

struct domain_names {
	struct domain_member *m;
	size_t n;
};

struct domain_memo {
	int64_t rev;
	struct hmap values; /* value -> struct domain_names */
};

static void domain_memo_clear(struct domain_memo *m)
{
	for (struct hmap_iter it = hmap_iter_start(&m->values); hmap_iter_next(&it);) {
		struct domain_names *d = it.e->value;
		for (size_t i = 0; i < d->n; i++)
			free(d->m[i].n.name);
		free(d->m);
		free(d);
	}
	hmap_release(&m->values);
	hmap_init(&m->values);
}

struct memo_ctx {
	const struct budget *bu;
	struct domain_memo *m;
};

static int memo_add(void *arg, const struct node *n)
{
	struct memo_ctx *c = arg;
	const char *v = budget_domain_value(c->bu, n);
	if (!v || n->phase == PHASE_RETIRED)
		return 0;
	struct domain_names *d = hmap_get(&c->m->values, v);
	if (!d) {
		d = xcalloc(1, sizeof(*d));
		hmap_put(&c->m->values, v, d);
	}
	d->m = xreallocarray(d->m, d->n + 1, sizeof(*d->m));
	struct domain_member *mb = &d->m[d->n++];
	memset(mb, 0, sizeof(*mb));
	mb->n.name = xstrdup(n->name);
	mb->n.phase = n->phase;
	mb->n.phase_since = n->phase_since;
	mb->n.served_at = n->served_at;
	mb->n.resource_version = n->resource_version;
	const struct node_condition *cond = node_condition_get(n, "DisruptionAllowed");
	mb->waiting = cond && cond->status == COND_FALSE;
	return 0;
}

/* The names of the nodes whose bu->domain value is value, as of the cache's revision now
 * (borrowed until the next call; NULL when none). Holds b->mu. */
static const struct domain_names *domain_members(struct budget_svc *b, const struct budget *bu,
						 const char *value)
{
	int64_t rev = cache_revision(b->cache);
	struct domain_memo *m = hmap_get(&b->memo, bu->domain);
	if (!m) {
		m = xcalloc(1, sizeof(*m));
		hmap_init(&m->values);
		m->rev = -1;
		hmap_put(&b->memo, bu->domain, m);
	}
	if (m->rev != rev) {
		domain_memo_clear(m);
		struct memo_ctx c = {bu, m};
		cache_visit_nodes(b->cache, memo_add, &c);
		m->rev = rev;
	}
	return hmap_get(&m->values, value);
}

static void budgets_clear(struct budget_svc *b)
{
	for (size_t i = 0; i < b->nbudgets; i++)
		budget_release(&b->budgets[i]);
	free(b->budgets);
	b->budgets = NULL;
	b->nbudgets = 0;
	b->loaded = 0;
}

/* Reads /budgets/ when the copy is missing or older than BUDGET_TTL_MS. Returns 0, or a
 * negative error with b->load_err set (a store error, or a stored document that does not
 * decode: the service then refuses every disruption, fail closed). Holds b->mu. */
static int budgets_load(struct budget_svc *b)
{
	int64_t now = clock_now_ms(b->clock);
	if (b->loaded && now - b->loaded_at < BUDGET_TTL_MS)
		return b->load_err[0] ? FP_EIO : 0;
	budgets_clear(b);
	b->load_err[0] = 0;
	struct store_kv *kvs = NULL;
	size_t n = 0;
	int more = 0;
	int rc = store_list(b->store, "/budgets/", NULL, BUDGET_MAX, &kvs, &n, NULL, &more);
	if (rc < 0) {
		snprintf(b->load_err, sizeof(b->load_err), "reading budgets failed: %s",
			 fp_err_msg(rc));
		goto out;
	}
	if (more)
		log_warn("more than %d budgets stored; only the first %d apply", BUDGET_MAX,
			 BUDGET_MAX);
	b->budgets = xcalloc(n + 1, sizeof(*b->budgets));
	for (size_t i = 0; i < n; i++) {
		json_t *doc = NULL;
		char e[200];
		rc = jsonx_parse(kvs[i].value, strlen(kvs[i].value), &doc, e, sizeof(e));
		if (rc == 0)
			rc = budget_from_json(doc, kvs[i].mod_revision, &b->budgets[b->nbudgets], e,
					      sizeof(e));
		json_decref(doc);
		if (rc < 0) {
			snprintf(b->load_err, sizeof(b->load_err),
				 "stored budget %.64s is invalid: %.200s", kvs[i].key, e);
			break;
		}
		b->nbudgets++;
	}
out:
	store_kv_array_free(kvs, n);
	b->loaded = 1;
	b->loaded_at = now;
	return b->load_err[0] ? (rc < 0 ? rc : FP_EIO) : 0;
}

/* 1 while cached node m holds a live reservation. A reservation ends after BUDGET_RESERVE_MS,
 * or as soon as the cache shows m back in service (available or in_service) in a version
 * written after the admission (a higher resource version, or phase_since after the admission's
 * wall time): whatever the admission allowed is over, or was never committed (the lifecycle
 * asks again before it retries). Ended ones are dropped. Holds b->mu. */
static int reserved(struct budget_svc *b, const struct node *m, int64_t now)
{
	for (size_t i = 0; i < b->nres; i++)
		if (strcmp(b->res[i].node, m->name) == 0) {
			int back = (m->phase == PHASE_AVAILABLE || m->phase == PHASE_IN_SERVICE) &&
				   (m->resource_version > b->res[i].rv ||
				    m->phase_since > b->res[i].at_wall);
			if (b->res[i].until > now && !back)
				return 1;
			free(b->res[i].node);
			b->res[i] = b->res[--b->nres];
			return 0;
		}
	return 0;
}

static void unreserve(struct budget_svc *b, const char *name)
{
	for (size_t i = 0; i < b->nres; i++)
		if (strcmp(b->res[i].node, name) == 0) {
			free(b->res[i].node);
			b->res[i] = b->res[--b->nres];
			return;
		}
}

/* Reserves admitted node n (its name, resource version) for BUDGET_RESERVE_MS from now
 * (monotonic ms); now_wall is the admission's wall time. Holds b->mu. */
static void reserve(struct budget_svc *b, const struct node *n, int64_t now, int64_t now_wall)
{
	const char *name = n->name;
	for (size_t i = 0; i < b->nres; i++)
		if (strcmp(b->res[i].node, name) == 0) {
			b->res[i].until = now + BUDGET_RESERVE_MS;
			b->res[i].at_wall = now_wall;
			b->res[i].rv = n->resource_version;
			return;
		}
	if (b->nres >= BUDGET_MAX_RESERVATIONS) { /* drop expired ones; else the oldest slot */
		size_t w = 0;
		for (size_t i = 0; i < b->nres; i++) {
			if (b->res[i].until > now)
				b->res[w++] = b->res[i];
			else
				free(b->res[i].node);
		}
		b->nres = w;
		if (b->nres >= BUDGET_MAX_RESERVATIONS) {
			free(b->res[0].node);
			b->res[0] = b->res[--b->nres];
		}
	}
	b->res = xreallocarray(b->res, b->nres + 1, sizeof(*b->res));
	b->res[b->nres].node = xstrdup(name);
	b->res[b->nres].until = now + BUDGET_RESERVE_MS;
	b->res[b->nres].at_wall = now_wall;
	b->res[b->nres].rv = n->resource_version;
	b->nres++;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One domain value of a budget, counted from the cache (holds b->mu). `out` and `waiting` get
 * new sorted name arrays when non-NULL; `skip` (may be NULL) is left out of the count. */
struct tally {
	size_t members, unavailable;
	char **out, **waiting;
	size_t nout, nwaiting;
};

static void tally_release(struct tally *t)
{
	free_names(t->out, t->nout);
	free_names(t->waiting, t->nwaiting);
	memset(t, 0, sizeof(*t));
}

struct tally_ctx {
	struct budget_svc *b;
	const struct budget *bu;
	const char *value, *skip;
	int64_t now;
	struct tally *t;
};

/* Counts one node m into c->t when it is in the domain value (m borrowed). */
/* Counts member m (its domain value is the tally's; not retired) into the tally. */
static void tally_member(struct tally_ctx *c, const struct node *m, int waiting)
{
	struct tally *t = c->t;
	t->members++;
	if (waiting) {
		t->waiting = xreallocarray(t->waiting, t->nwaiting + 1, sizeof(char *));
		t->waiting[t->nwaiting++] = xstrdup(m->name);
	}
	int out = 0;
	if (budget_node_unavailable(m)) {
		out = 1;
		unreserve(c->b, m->name); /* the cache shows it now */
	} else if (reserved(c->b, m, c->now)) {
		out = 1;
	}
	if (out && !(c->skip && strcmp(c->skip, m->name) == 0)) {
		t->unavailable++;
		t->out = xreallocarray(t->out, t->nout + 1, sizeof(char *));
		t->out[t->nout++] = xstrdup(m->name);
	}
}

/* A rack or site budget reads its few members through the cache's index (a copy each); any
 * other domain visits every cached node in place (cache_visit_nodes, no copies). */
static void count_value(struct budget_svc *b, const struct budget *bu, const char *value,
			const char *skip, int64_t now, struct tally *t)
{
	memset(t, 0, sizeof(*t));
	struct tally_ctx c = {b, bu, value, skip, now, t};
	const struct domain_names *d = domain_members(b, bu, value);
	for (size_t i = 0; d && i < d->n; i++)
		tally_member(&c, &d->m[i].n, d->m[i].waiting);
	if (t->nout)
		qsort(t->out, t->nout, sizeof(char *), cmp_str);
	if (t->nwaiting)
		qsort(t->waiting, t->nwaiting, sizeof(char *), cmp_str);
}

/* "rack r01", "nvlink_domain nvl-a" */
static const char *domain_word(const struct budget *bu)
{
	return strncmp(bu->domain, "label:", 6) == 0 ? bu->domain + 6 : bu->domain;
}

static void collect(struct buf *out, void *arg);

struct budget_svc *budget_svc_new(struct store *s, struct cache *c, struct fp_clock *clock)
{
	struct budget_svc *b = xcalloc(1, sizeof(*b));
	b->store = s;
	b->cache = c;
	b->clock = clock;
	pthread_mutex_init(&b->mu, NULL);
	hmap_init(&b->memo);
	metrics_add_collector(collect, b);
	return b;
}

void budget_svc_free(struct budget_svc *b)
{
	if (!b)
		return;
	metrics_remove_collector(collect, b);
	budgets_clear(b);
	for (size_t i = 0; i < b->nres; i++)
		free(b->res[i].node);
	free(b->res);
	for (struct hmap_iter it = hmap_iter_start(&b->memo); hmap_iter_next(&it);) {
		domain_memo_clear(it.e->value);
		hmap_release(&((struct domain_memo *)it.e->value)->values);
		free(it.e->value);
	}
	hmap_release(&b->memo);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

void budget_svc_invalidate(struct budget_svc *b)
{
	pthread_mutex_lock(&b->mu);
	b->loaded = 0;
	pthread_mutex_unlock(&b->mu);
}

void budget_svc_set_breakers(struct budget_svc *b, budget_breaker_fn fn, void *arg)
{
	pthread_mutex_lock(&b->mu);
	b->breaker_open = fn;
	b->breaker_arg = arg;
	pthread_mutex_unlock(&b->mu);
}

int budget_breaker_open(struct budget_svc *b, const struct node *n, char *why, size_t whylen,
			char *name, size_t namelen)
{
	if (why && whylen)
		why[0] = 0;
	if (name && namelen)
		name[0] = 0;
	pthread_mutex_lock(&b->mu);
	budget_breaker_fn fn = b->breaker_open;
	void *arg = b->breaker_arg;
	pthread_mutex_unlock(&b->mu);
	return fn ? fn(arg, n, why, whylen, name, namelen) : 0;
}

int budget_admit(struct budget_svc *b, const struct node *n, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
#ifdef FP_INJECT_BUG_SKIP_BUDGET
	/* a deliberately injected bug (make simtest-bug): `fleetplane sim` must catch it */
	return 1;
#endif
	pthread_mutex_lock(&b->mu);
	int64_t now = clock_now_ms(b->clock);
	int ok = 1;
	if (budgets_load(b) < 0) {
		snprintf(why, whylen, "%s", b->load_err);
		ok = 0;
	}
	for (size_t i = 0; ok && i < b->nbudgets; i++) {
		const struct budget *bu = &b->budgets[i];
		const char *value = budget_domain_value(bu, n);
		if (!value)
			continue;
		struct tally t;
		count_value(b, bu, value, n->name, now, &t);
		/* n itself is a member even if the cache does not show it yet */
		size_t members = t.members ? t.members : 1;
		int max = budget_max(bu, members);
		if ((long long)t.unavailable + 1 > (long long)max) {
			ok = 0;
			struct buf w;
			buf_init(&w, 0);
			for (size_t k = 0; k < t.nout && k < BUDGET_MAX_OUT_NAMED; k++)
				buf_printf(&w, "%s%s", k ? ", " : "", t.out[k]);
			if (t.nout > BUDGET_MAX_OUT_NAMED)
				buf_printf(&w, " and %zu more", t.nout - BUDGET_MAX_OUT_NAMED);
			size_t len;
			char *list = buf_detach(&w, &len);
			snprintf(why, whylen,
				 "budget %s: %s %s has %zu of max %d unavailable%s%s%s", bu->name,
				 domain_word(bu), value, t.unavailable, max, t.nout ? " (" : "",
				 list, t.nout ? ")" : "");
			free(list);
		}
		tally_release(&t);
	}
	if (ok)
		reserve(b, n, now, clock_wall_ms(b->clock));
	pthread_mutex_unlock(&b->mu);
	return ok;
}

struct values_ctx {
	const struct budget *bu;
	char **vals;
	size_t nv;
};

static int collect_value(void *arg, const struct node *m)
{
	struct values_ctx *c = arg;
	const char *v = budget_domain_value(c->bu, m);
	int seen = 0;
	for (size_t k = 0; v && k < c->nv; k++)
		seen |= strcmp(c->vals[k], v) == 0;
	if (v && !seen) {
		c->vals = xreallocarray(c->vals, c->nv + 1, sizeof(char *));
		c->vals[c->nv++] = xstrdup(v);
	}
	return 0;
}

/* Distinct values of bu's domain over every node (a visit, no copies), sorted; same ownership
 * as cache names. */
static size_t domain_values(struct budget_svc *b, const struct budget *bu, char ***values)
{
	struct values_ctx c = {bu, NULL, 0};
	cache_visit_nodes(b->cache, collect_value, &c);
	char **vals = c.vals;
	size_t nv = c.nv;
	if (nv)
		qsort(vals, nv, sizeof(char *), cmp_str);
	*values = vals;
	return nv;
}

static json_t *names_json(char **names, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(names[i]));
	return a;
}

/* Appends the domain entries of budget bu to arr (holds b->mu). */
static void status_of(struct budget_svc *b, const struct budget *bu, json_t *arr, int64_t now,
		      int with_name)
{
	char **values = NULL;
	size_t nv = domain_values(b, bu, &values);
	for (size_t i = 0; i < nv; i++) {
		struct tally t;
		count_value(b, bu, values[i], NULL, now, &t);
		int max = budget_max(bu, t.members);
		long long rem = (long long)max - (long long)t.unavailable;
		json_t *o = json_pack("{s:s,s:I,s:I,s:i,s:I,s:o,s:o}", "value", values[i], "nodes",
				      (json_int_t)t.members, "unavailable",
				      (json_int_t)t.unavailable, "max", max, "remaining",
				      (json_int_t)(rem > 0 ? rem : 0), "out",
				      names_json(t.out, t.nout), "waiting",
				      names_json(t.waiting, t.nwaiting));
		if (with_name)
			json_object_set_new(o, "budget", json_string(bu->name));
		json_array_append_new(arr, o);
		tally_release(&t);
	}
	free_names(values, nv);
}

json_t *budget_svc_status(struct budget_svc *b, const char *name)
{
	pthread_mutex_lock(&b->mu);
	int64_t now = clock_now_ms(b->clock);
	json_t *res = NULL;
	budgets_load(b);
	for (size_t i = 0; i < b->nbudgets; i++) {
		if (name && strcmp(b->budgets[i].name, name) != 0)
			continue;
		if (!res)
			res = json_pack("{s:[]}", "domains");
		status_of(b, &b->budgets[i], json_object_get(res, "domains"), now, name == NULL);
	}
	if (!res && !name)
		res = json_pack("{s:[]}", "domains");
	pthread_mutex_unlock(&b->mu);
	return res;
}

static int count_waiting(void *arg, const struct node *m)
{
	const struct node_condition *c = node_condition_get(m, "DisruptionAllowed");
	*(size_t *)arg += c && c->status == COND_FALSE;
	return 0;
}

/* fleetplane_budget_remaining{budget,value} for every stored budget and domain value, and
 * fleetplane_disruptions_waiting (nodes whose DisruptionAllowed is False). */
static void collect(struct buf *out, void *arg)
{
	struct budget_svc *b = arg;
	json_t *st = budget_svc_status(b, NULL);
	buf_puts(out, "# HELP fleetplane_budget_remaining Disruptions a budget still allows per "
		      "domain value.\n# TYPE fleetplane_budget_remaining gauge\n");
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(st, "domains"), i, d) {
		buf_puts(out, "fleetplane_budget_remaining{budget=\"");
		metrics_escape(out, jsonx_str(d, "budget"));
		buf_puts(out, "\",value=\"");
		metrics_escape(out, jsonx_str(d, "value"));
		buf_printf(out, "\"} %lld\n",
			   (long long)json_integer_value(json_object_get(d, "remaining")));
	}
	json_decref(st);
	size_t waiting = 0;
	cache_visit_nodes(b->cache, count_waiting, &waiting);
	buf_printf(out,
		   "# HELP fleetplane_disruptions_waiting Nodes waiting for a disruption "
		   "budget.\n# TYPE fleetplane_disruptions_waiting gauge\nfleetplane_disruptions_"
		   "waiting %zu\n",
		   waiting);
}
