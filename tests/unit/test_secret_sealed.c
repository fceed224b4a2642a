/* layers: base core store driver engine controller api */
/* test_secret_sealed.c - a BMC password stays sealed in memory (issue 9): an informer cache over
 * a store holding a node whose spec.bmc.password is sealed (core/secret.h) never holds the
 * plaintext - not in any string of a cached node, of its node_dup copy or of a node a visitor
 * reads, not in the JSON those nodes encode back to, not in the cache's rendered public JSON -
 * before and after the lifecycle ran BMC steps on it; and the BMC driver step still receives
 * the right plaintext, opened with the key the lifecycle was handed (a fake "ipmi" driver records
 * what it was given). Without the key the step fails CredentialsUnavailable and the driver is
 * never called. A clear-text password an older store holds is sealed by
 * api_seal_stored_passwords (serve's start) before a cache lists it. Runs single-threaded in
 * virtual time (inline executor, cache_sync_now). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_secrets.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/clock.h"
#include "controller/lifecycle.h"
#include "core/codec.h"
#include "core/secret.h"
#include "engine/cache.h"
#include "engine/clock.h"
#include "engine/executor_impl.h"

#include "base/banned.h"

#define START_WALL 1796000000000LL
#define PLAIN "pl41n-BMC-pw-5e4c"

struct world {
	struct store *store;
	struct fp_clock *clock;
	struct fp_rng rng;
	struct fp_executor *exec;
	struct cache *cache;
	struct lifecycle *lc;
	struct bmc *fake;
	struct secret_key *key;
	/* what the fake driver was given */
	long calls;
	long wrong; /* calls whose password was not PLAIN */
	char seen[64];
};

static int fake_call(struct bmc *b, const struct bmc_target *t)
{
	struct world *w = b->impl;
	w->calls++;
	snprintf(w->seen, sizeof(w->seen), "%s", t->password ? t->password : "(null)");
	if (!t->password || strcmp(t->password, PLAIN) != 0)
		w->wrong++;
	return 0;
}

static int fake_power_get(struct bmc *b, const struct bmc_target *t, int64_t dl,
			  enum bmc_power *out, char *err, size_t errlen)
{
	*out = BMC_POWER_OFF;
	return fake_call(b, t);
}

static int fake_power_set(struct bmc *b, const struct bmc_target *t, int64_t dl,
			  enum bmc_power_action a, char *err, size_t errlen)
{
	return fake_call(b, t);
}

static int fake_boot_get(struct bmc *b, const struct bmc_target *t, int64_t dl,
			 struct bmc_boot *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	return fake_call(b, t);
}

static int fake_boot_set(struct bmc *b, const struct bmc_target *t, int64_t dl,
			 const struct bmc_boot *want, char *err, size_t errlen)
{
	return fake_call(b, t);
}

static int fake_inventory(struct bmc *b, const struct bmc_target *t, int64_t dl, json_t **out,
			  char *err, size_t errlen)
{
	*out = json_pack("{s:{s:s},s:[]}", "system", "model", "fake", "gpus");
	return fake_call(b, t);
}

static void fake_free(struct bmc *b)
{
	free(b);
}

static const struct bmc_driver_ops fake_ops = {.name = "ipmi",
					       .caps = BMC_CAP_POWER | BMC_CAP_BOOT_DEVICE |
						       BMC_CAP_INVENTORY,
					       .power_get = fake_power_get,
					       .power_set = fake_power_set,
					       .boot_get = fake_boot_get,
					       .boot_set = fake_boot_set,
					       .inventory = fake_inventory,
					       .free = fake_free};

static struct secret_key *test_key(void)
{
	unsigned char b[SECRET_KEY_BYTES];
	memset(b, 7, sizeof(b));
	return secret_key_from_bytes(b, sizeof(b));
}

/* A store holding node f1 with its password sealed as the API stores it (legacy: in clear
 * text, as an older serve stored it); a cache and a lifecycle over it, the lifecycle handed the
 * key when give_key. */
static struct world *world_new_store(int give_key, int legacy)
{
	struct world *w = xcalloc(1, sizeof(*w));
	char err[256];
	assert_int_equal(store_open("mem:", &w->store, err, sizeof(err)), 0);
	w->clock = clock_virtual_new(START_WALL);
	fp_rng_init(&w->rng, 42);
	w->key = test_key();
	w->fake = xcalloc(1, sizeof(*w->fake));
	*w->fake = (struct bmc){.ops = &fake_ops, .clock = w->clock, .impl = w};

	struct node *n = node_new();
	n->name = xstrdup("f1");
	n->uid = xstrdup("f1-uid");
	n->bmc.driver = xstrdup("ipmi");
	n->bmc.address = xstrdup("10.0.0.9:623");
	n->bmc.username = xstrdup("admin");
	n->bmc.password = xstrdup(PLAIN);
	n->gpu_count = 2;
	n->phase = PHASE_ENROLLED;
	n->phase_since = n->created_at = clock_wall_ms(w->clock);
	if (!legacy)
		assert_int_equal(secret_bmc_seal(w->key, &n->bmc, err, sizeof(err)), 0);
	json_t *doc = node_to_json(n, NODE_JSON_STORE);
	char *val = jsonx_dumps(doc);
	assert_true(!legacy == !strstr(val, PLAIN));
	assert_int_equal(store_put(w->store, "/nodes/f1", val, STORE_ABSENT, NULL), 0);
	free(val);
	json_decref(doc);
	node_free(n);
	/* a node without a password (password_file) is left alone */
	assert_int_equal(store_put(w->store, "/nodes/f2",
				   "{\"kind\":\"Node\",\"metadata\":{\"name\":\"f2\"},\"spec\":"
				   "{\"bmc\":{\"driver\":\"sim\",\"password_file\":\"f2.pw\"}},"
				   "\"status\":{\"phase\":\"retired\"}}",
				   STORE_ABSENT, NULL),
			 0);
	if (legacy) {
		/* put by hand: a password under an escaped name is sealed too; a text with two
		 * "spec" members is left as it is (read with the last one and written back, the
		 * first would be lost) */
		const char
			*dup = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"f3\"},\"spec\":{"
			       "\"site\":\"s1\",\"bmc\":{\"driver\":\"sim\"}},\"spec\":{\"bmc\":"
			       "{\"driver\":\"ipmi\",\"password\":\"DUP\"}},\"status\":{\"phase\":"
			       "\"enrolled\"}}";
		assert_int_equal(store_put(w->store, "/nodes/f3", dup, STORE_ABSENT, NULL), 0);
		assert_int_equal(store_put(w->store, "/nodes/f4",
					   "{\"kind\":\"Node\",\"metadata\":{\"name\":\"f4\"},"
					   "\"spec\":{\"bmc\":{\"driver\":\"ipmi\",\"address\":"
					   "\"10.0.0.8:623\",\"p\\u0061ssword\":\"ESCPW\"}},"
					   "\"status\":{\"phase\":\"retired\"}}",
					   STORE_ABSENT, NULL),
				 0);
		size_t k = 0;
		assert_int_equal(api_seal_stored_passwords(w->store, w->key, &k, err, sizeof(err)),
				 0);
		assert_int_equal(k, 2);
		struct store_kv got = {0};
		assert_int_equal(store_get(w->store, "/nodes/f3", &got), 0);
		assert_string_equal(got.value, dup);
		store_kv_release(&got);
		assert_int_equal(store_get(w->store, "/nodes/f4", &got), 0);
		assert_null(strstr(got.value, "ESCPW"));
		assert_non_null(strstr(got.value, "\"password_sealed\""));
		store_kv_release(&got);
		assert_int_equal(store_delete(w->store, "/nodes/f3", STORE_ANY, NULL), 0);
		assert_int_equal(store_delete(w->store, "/nodes/f4", STORE_ANY, NULL), 0);
		assert_int_equal(api_seal_stored_passwords(w->store, w->key, &k, err, sizeof(err)),
				 0);
		assert_int_equal(k, 0); /* nothing left */
	}

	w->exec = executor_inline_new();
	w->cache = cache_new(w->store);
	struct lifecycle_config lc = {.store = w->store,
				      .cache = w->cache,
				      .clock = w->clock,
				      .rng = &w->rng,
				      .exec = w->exec,
				      .secret_key = give_key ? w->key : NULL,
				      .drivers = {w->fake},
				      .ndrivers = 1,
				      .workers = 0};
	w->lc = lifecycle_new(&lc);
	assert_true(cache_sync_now(w->cache) >= 0);
	return w;
}

static struct world *world_new(int give_key)
{
	return world_new_store(give_key, 0);
}

static void world_free(struct world *w)
{
	lifecycle_stop(w->lc);
	executor_free(w->exec);
	lifecycle_free(w->lc);
	cache_free(w->cache);
	bmc_free(w->fake);
	secret_key_free(w->key);
	clock_free(w->clock);
	store_close(w->store);
	fp_rng_release(&w->rng);
	free(w);
}

static void pump(struct world *w)
{
	for (;;) {
		int k = 0;
		int c = cache_sync_now(w->cache);
		assert_true(c >= 0);
		k += c;
		while (lifecycle_run_once(w->lc))
			k++;
		while (executor_inline_run(w->exec, 1))
			k++;
		if (!k)
			return;
	}
}

/* Runs the world in virtual time for up to max_ms. */
static void run_for(struct world *w, int64_t max_ms)
{
	int64_t t0 = clock_now_ms(w->clock);
	for (;;) {
		pump(w);
		int64_t at = 0;
		if (clock_virtual_next_timer(w->clock, &at) < 0 || at - t0 > max_ms)
			return;
		int64_t now = clock_now_ms(w->clock);
		clock_virtual_advance(w->clock, at > now ? at - now : 0);
	}
}

static void no_plain(const char *s, const char *what)
{
	if (s && strstr(s, PLAIN))
		fail_msg("the plaintext BMC password is in %s", what);
}

static void no_plain_json(const json_t *j, const char *what)
{
	if (!j)
		return;
	char *t = jsonx_dumps(j);
	no_plain(t, what);
	free(t);
}

/* Every string a decoded node holds, and the JSON it encodes back to (both forms). */
static void scan_node(const struct node *n, const char *what)
{
	assert_non_null(n);
	const char *const str[] = {n->name,
				   n->uid,
				   n->site,
				   n->rack,
				   n->provider,
				   n->pool,
				   n->bmc.driver,
				   n->bmc.address,
				   n->bmc.username,
				   n->bmc.password,
				   n->bmc.password_file,
				   n->bmc.password_sealed,
				   n->bmc.ca_file,
				   n->bmc.system,
				   n->gpu_model,
				   n->operation,
				   n->last_boot_id,
				   n->validation_boot_id,
				   n->inventory_text};
	for (size_t i = 0; i < sizeof(str) / sizeof(str[0]); i++)
		no_plain(str[i], what);
	for (size_t i = 0; i < n->nlabels; i++) {
		no_plain(n->labels[i].key, what);
		no_plain(n->labels[i].value, what);
	}
	for (size_t i = 0; i < n->nmacs; i++)
		no_plain(n->macs[i], what);
	for (size_t i = 0; i < n->nholds; i++) {
		no_plain(n->holds[i].owner, what);
		no_plain(n->holds[i].reason, what);
	}
	for (size_t i = 0; i < n->nconditions; i++) {
		no_plain(n->conditions[i].type, what);
		no_plain(n->conditions[i].reason, what);
		no_plain(n->conditions[i].message, what);
	}
	for (size_t i = 0; i < n->nqueued; i++)
		no_plain(n->queued_ops[i], what);
	no_plain_json(n->bmc.extra, what);
	no_plain_json(n->inventory, what);
	/* a decoded node holds the sealed text only */
	assert_null(n->bmc.password);
	assert_non_null(n->bmc.password_sealed);
	assert_int_equal(strncmp(n->bmc.password_sealed, SECRET_SEALED_PREFIX, 4), 0);
	for (int mode = 0; mode < 2; mode++) {
		json_t *j = node_to_json(n, mode ? NODE_JSON_PUBLIC : NODE_JSON_STORE);
		char *t = jsonx_dumps(j);
		assert_null(memmem(t, strlen(t), PLAIN, strlen(PLAIN)));
		free(t);
		json_decref(j);
	}
}

/* The cache entry, a node_dup copy of it, every node a visitor over the cache reads (as the
 * metrics and budget scans do), the cache's rendered public JSON and the stored document. */
static void scan_cache(struct world *w)
{
	struct node *n = cache_node_get(w->cache, "f1");
	scan_node(n, "the cache entry");
	struct node *d = node_dup(n);
	scan_node(d, "a node_dup copy");
	node_free(d);
	node_free(n);
	char **names = NULL;
	size_t k = cache_all_node_names(w->cache, &names);
	assert_int_equal(k, 2);
	for (size_t i = 0; i < k; i++) {
		struct node *v = cache_node_get(w->cache, names[i]);
		if (strcmp(names[i], "f1") == 0)
			scan_node(v, "a node a visitor read");
		node_free(v);
		free(names[i]);
	}
	free(names);
	char *json = NULL;
	size_t len = 0;
	assert_int_equal(cache_node_json(w->cache, "f1", &json, &len), 0);
	assert_null(memmem(json, len, PLAIN, strlen(PLAIN)));
	free(json);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, "/nodes/f1", &kv), 0);
	assert_null(strstr(kv.value, PLAIN));
	assert_non_null(strstr(kv.value, "\"password_sealed\":\"sb1:"));
	store_kv_release(&kv);
}

static void test_cache_holds_sealed_only(void **state)
{
	struct world *w = world_new(1);
	scan_cache(w); /* as listed */
	run_for(w, 10 * 60 * 1000LL);
	/* the lifecycle ran BMC steps (and wrote the node back, so the cache decoded it again) */
	assert_true(w->calls > 0);
	assert_int_equal(w->wrong, 0);
	assert_string_equal(w->seen, PLAIN);
	struct node *n = cache_node_get(w->cache, "f1");
	assert_true(n->resource_version > 1);
	assert_int_not_equal(n->phase, PHASE_ENROLLED);
	node_free(n);
	scan_cache(w);
	world_free(w);
}

static void test_no_key_no_call(void **state)
{
	struct world *w = world_new(0);
	run_for(w, 10 * 60 * 1000LL);
	assert_int_equal(w->calls, 0);
	struct node *n = cache_node_get(w->cache, "f1");
	const struct node_condition *c = node_condition_get(n, "BMCReachable");
	assert_non_null(c);
	assert_int_equal(c->status, COND_FALSE);
	assert_string_equal(c->reason, "CredentialsUnavailable");
	assert_non_null(strstr(c->message, "cannot decrypt the BMC password"));
	node_free(n);
	scan_cache(w);
	world_free(w);
}

/* An older store's clear-text password: sealed at start, then as above. */
static void test_legacy_plaintext_sealed_at_start(void **state)
{
	struct world *w = world_new_store(1, 1);
	scan_cache(w);
	struct store_kv kv = {0};
	assert_int_equal(store_get(w->store, "/nodes/f2", &kv), 0);
	assert_int_equal(kv.mod_revision, 2); /* not rewritten */
	store_kv_release(&kv);
	run_for(w, 10 * 60 * 1000LL);
	assert_true(w->calls > 0);
	assert_int_equal(w->wrong, 0);
	scan_cache(w);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_holds_sealed_only),
		cmocka_unit_test(test_no_key_no_call),
		cmocka_unit_test(test_legacy_plaintext_sealed_at_start),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
