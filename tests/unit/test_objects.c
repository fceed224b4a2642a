/* layers: base core store driver engine */
/* test_objects.c - the object layer (engine/objects.h) on a mem: store: the key schema, typed
 * reads from the store and from the informer cache (which lags until it syncs), the node update
 * with its compare-and-swap retry under a concurrent writer and its audit event in the same
 * revision, the operation each kind starts with its steps, and the cache's read-only visitor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "core/codec.h"
#include "engine/cache.h"
#include "engine/objects.h"
#include "store/store.h"

static struct store *open_mem(void)
{
	char err[128];
	struct store *s = NULL;
	assert_int_equal(store_open("mem:", &s, err, sizeof(err)), 0);
	return s;
}

/* Writes a node named name (phase enrolled) create-if-absent; returns the revision. */
static int64_t put_node(struct store *s, const char *name)
{
	struct node *n = node_new();
	n->name = strdup(name);
	n->phase = PHASE_ENROLLED;
	json_t *nj = node_to_json(n, NODE_JSON_STORE);
	char *v = jsonx_dumps(nj);
	char *k = objects_key_node_dup(name);
	int64_t rev = 0;
	assert_int_equal(store_put(s, k, v, STORE_ABSENT, &rev), 0);
	free(k);
	free(v);
	json_decref(nj);
	node_free(n);
	return rev;
}

static void test_keys(void **state)
{
	char buf[64];
	assert_int_equal(objects_key_node(buf, sizeof(buf), "r01n01"), 0);
	assert_string_equal(buf, "/nodes/r01n01");
	assert_int_equal(objects_key_op(buf, sizeof(buf), "inspect-1"), 0);
	assert_string_equal(buf, "/operations/inspect-1");
	assert_int_equal(objects_key(buf, sizeof(buf), OBJECTS_BREAKER, "rack.r01"), 0);
	assert_string_equal(buf, "/breakers/rack.r01");
	assert_int_equal(objects_key(buf, 8, OBJECTS_NODE, "r01n01"), FP_ETOOBIG);
	assert_string_equal(buf, "");
	char big[300];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	char kbuf[600];
	assert_int_equal(objects_key_node(kbuf, sizeof(kbuf), big), FP_ETOOBIG);
	char *k = objects_key_healthevent_dup("r01n01", "e1");
	assert_string_equal(k, "/healthevents/r01n01/e1");
	free(k);
	k = objects_key_dup(OBJECTS_SIM_HW, "r01n01");
	assert_string_equal(k, "/sim/hw/r01n01");
	free(k);
	static const char *const want[OBJECTS__COUNT] = {"/nodes/",        "/operations/",
							 "/events/",       "/sites/",
							 "/racks/",        "/tokens/",
							 "/idempotency/",  "/sim/hw/",
							 "/healthevents/", "/policies/",
							 "/budgets/",      "/breakers/",
							 "/rmas/"};
	for (int i = 0; i < OBJECTS__COUNT; i++)
		assert_string_equal(objects_prefix((enum objects_kind)i), want[i]);
	assert_string_equal(objects_key_name(OBJECTS_NODE, "/nodes/x1"), "x1");
	assert_null(objects_key_name(OBJECTS_NODE, "/operations/x1"));
}

static void test_reads_store_and_cache(void **state)
{
	struct store *s = open_mem();
	int64_t rev = put_node(s, "n1");
	char err[128];
	struct cache *c = cache_new(s);
	assert_int_equal(cache_start(c, err, sizeof(err)), 0);
	assert_int_equal(cache_wait_revision(c, rev, 5000), 0);

	struct node *n = NULL;
	int64_t mod = 0;
	assert_int_equal(objects_store_node(s, "n1", &n, &mod, err, sizeof(err)), 0);
	assert_int_equal(mod, rev);
	assert_int_equal(n->resource_version, rev);
	assert_string_equal(n->name, "n1");
	node_free(n);
	assert_int_equal(objects_store_node(s, "nope", &n, &mod, err, sizeof(err)), FP_ENOTFOUND);
	assert_null(n);
	assert_string_equal(err, "node nope not found");
	struct operation *op = NULL;
	assert_int_equal(objects_store_op(s, "nope", &op, &mod, err, sizeof(err)), FP_ENOTFOUND);
	assert_null(op);
	assert_string_equal(err, "operation nope not found");
	/* a document that does not decode */
	assert_int_equal(store_put(s, "/nodes/bad", "{\"kind\":\"Rack\"}", STORE_ANY, NULL), 0);
	assert_int_equal(objects_store_node(s, "bad", &n, &mod, err, sizeof(err)), FP_EPARSE);
	assert_null(n);

	struct node *cn = objects_cache_node(c, "n1");
	assert_non_null(cn);
	assert_int_equal(cn->resource_version, rev);
	node_free(cn);
	assert_null(objects_cache_node(c, "nope"));
	cache_free(c);
	store_close(s);
}

struct race {
	struct store *s;
	int calls;
};

/* The first call writes the node behind the update's back, so its CAS must fail once. */
static int add_hold_racing(struct node *n, struct objects_txn *tx, void *arg)
{
	struct race *r = arg;
	if (r->calls++ == 0) {
		struct store_kv kv = {0};
		assert_int_equal(store_get(r->s, "/nodes/n1", &kv), 0);
		assert_int_equal(store_put(r->s, "/nodes/n1", kv.value, kv.mod_revision, NULL), 0);
		store_kv_release(&kv);
	}
	assert_int_equal(node_hold_add(n, "alice", "maintenance", 1000, 0), 0);
	objects_txn_put(tx, strdup("/marks/n1"), strdup("{}"), STORE_ANY);
	return 1;
}

static int never_write(struct node *n, struct objects_txn *tx, void *arg)
{
	return 0;
}

static int abort_mutate(struct node *n, struct objects_txn *tx, void *arg)
{
	return FP_ESTATE;
}

static void test_update_cas_retry_and_event(void **state)
{
	struct store *s = open_mem();
	put_node(s, "n1");
	struct race r = {s, 0};
	struct objects_update u = {.actor = "user:alice",
				   .ev_type = "Normal",
				   .ev_reason = "DrainRequested",
				   .ev_msg = "hold added: maintenance",
				   .now_ms = 1796000000000,
				   .rnd = 7};
	struct node *out = NULL;
	char err[128];
	assert_int_equal(objects_update_node(s, "n1", add_hold_racing, &r, &u, &out, err,
					     sizeof(err)),
			 0);
	assert_int_equal(r.calls, 2);
	assert_int_equal(u.attempts, 2); /* the first CAS lost to the concurrent writer */
	assert_true(u.revision > 0);
	assert_int_equal(out->resource_version, u.revision);
	assert_int_equal(out->nholds, 1);
	node_free(out);

	/* the node, the hook's op and the audit event share the revision */
	struct store_kv kv = {0};
	assert_int_equal(store_get(s, "/nodes/n1", &kv), 0);
	assert_int_equal(kv.mod_revision, u.revision);
	store_kv_release(&kv);
	assert_int_equal(store_get(s, "/marks/n1", &kv), 0);
	assert_int_equal(kv.mod_revision, u.revision);
	store_kv_release(&kv);
	struct store_kv *evs = NULL;
	size_t nev = 0;
	assert_int_equal(store_list(s, "/events/", NULL, 0, &evs, &nev, NULL, NULL), 0);
	assert_int_equal(nev, 1);
	assert_int_equal(evs[0].mod_revision, u.revision);
	json_t *ev = NULL;
	assert_int_equal(jsonx_parse(evs[0].value, strlen(evs[0].value), &ev, NULL, 0), 0);
	assert_non_null(strstr(evs[0].value, "DrainRequested"));
	assert_non_null(strstr(evs[0].value, "node/n1"));
	json_decref(ev);
	store_kv_array_free(evs, nev);

	/* mutate 0: nothing written; < 0: its code; an absent node: FP_ENOTFOUND */
	int64_t rev0 = store_revision(s);
	assert_int_equal(objects_update_node(s, "n1", never_write, NULL, &u, NULL, NULL, 0), 0);
	assert_int_equal(u.revision, 0);
	assert_int_equal(objects_update_node(s, "n1", abort_mutate, NULL, &u, NULL, NULL, 0),
			 FP_ESTATE);
	assert_int_equal(objects_update_node(s, "zz", never_write, NULL, &u, NULL, NULL, 0),
			 FP_ENOTFOUND);
	assert_int_equal(store_revision(s), rev0);

	/* every attempt losing: FP_ECONFLICT after max_attempts reads */
	struct race always = {s, 0};
	u.max_attempts = 1;
	assert_int_equal(objects_update_node(s, "n1", add_hold_racing, &always, &u, NULL, NULL, 0),
			 FP_ECONFLICT);
	assert_int_equal(u.attempts, 1);
	store_close(s);
}

/* node_to_text with the inventory as text writes the bytes the tree path writes, with every
 * member of status set around it (the splice point must follow node_to_json's order). */
static void test_node_to_text_splice(void **state)
{
	const char *doc =
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"driver\":\"sim\"}},"
		"\"status\":{\"phase\":\"available\",\"holds\":[],\"conditions\":[],"
		"\"inventory\":{\"gpus\":[{\"index\":0,\"serial\":\"S\\u00e9\",\"temp\":41.5}]}}}";
	json_t *full = NULL;
	struct node *n = NULL;
	char err[128];
	assert_int_equal(jsonx_parse(doc, strlen(doc), &full, err, sizeof(err)), 0);
	assert_int_equal(node_from_json(full, 7, &n, err, sizeof(err)), 0);
	json_decref(full);
	n->phase_since = 1796000000000;
	assert_int_equal(node_hold_add(n, "alice", "maintenance", 1000, 0), 0);
	node_condition_set(n, "PoweredOn", COND_TRUE, "BMCReportsOn", "on", 1000);
	n->operation = strdup("provision-1");
	n->queued_ops = calloc(1, sizeof(char *));
	n->queued_ops[0] = strdup("power-2");
	n->nqueued = 1;
	n->bmc_quirks = BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE;
	n->last_boot_at = 2000;
	n->last_boot_id = strdup("n1-1");
	n->validated_at = 3000;
	n->validation_passed = 1;
	n->validation_boot_id = strdup("n1-1");
	n->served_at = 4000;
	n->remediation.active = 1;
	n->remediation.code = strdup("xid:79");
	n->remediation.since = 5000;
	n->workload.state = WORKLOAD_IDLE;
	n->workload.scheduler = strdup("slurm");
	for (int mode = 0; mode < 2; mode++) {
		enum node_json_mode m = mode ? NODE_JSON_PUBLIC : NODE_JSON_STORE;
		json_t *j = node_to_json(n, m);
		char *tree = jsonx_dumps(j);
		json_decref(j);
		struct node *t = node_dup(n);
		t->inventory_text = jsonx_dumps(t->inventory);
		json_decref(t->inventory);
		t->inventory = NULL;
		char *text = node_to_text(t, m);
		assert_string_equal(text, tree);
		char *same = node_to_text(n, m); /* with the tree: the tree path */
		assert_string_equal(same, tree);
		free(same);
		free(text);
		free(tree);
		node_free(t);
	}
	node_free(n);
}

/* Adds the hold "owner-<calls>" (calls counts the attempts made). */
static int add_hold_counted(struct node *n, struct objects_txn *tx, void *arg)
{
	int *calls = arg;
	char owner[32];
	snprintf(owner, sizeof(owner), "owner-%d", (*calls)++);
	assert_int_equal(node_hold_add(n, owner, "maintenance", 1000, 0), 0);
	return 1;
}

/* u.start: the first attempt changes the informer's copy (inventory kept as text) with the CAS
 * on its version, reading nothing; what it writes is the stored document with the change, every
 * field kept; a start the store has moved past loses its CAS and the update reads the store. */
static void test_update_from_cached_start(void **state)
{
	struct store *s = open_mem();
	const char *doc =
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"uid\":\"u1\",\"labels\":{\"a\":\"b\"},"
		"\"annotations\":{\"x\":\"y\"}},\"spec\":{\"site\":\"s1\",\"rack\":\"r1\",\"bmc\":{"
		"\"driver\":\"sim\",\"address\":\"sim://n1\",\"username\":\"root\"},\"pool\":\"p1\"},"
		"\"status\":{\"phase\":\"available\",\"phaseSince\":\"2026-12-03T14:53:34.890Z\","
		"\"holds\":[],\"conditions\":[{\"type\":\"PoweredOn\",\"status\":\"True\","
		"\"reason\":\"BMCReportsOn\",\"message\":\"on\",\"since\":\"2026-12-03T14:53:34.890Z\"}],"
		"\"inventory\":{\"cpu\":{\"sockets\":2},\"gpus\":[{\"index\":0,\"serial\":\"S\\u00e9\","
		"\"temp\":41.5}]},\"lastBoot\":{\"at\":\"2026-12-03T14:53:34.890Z\",\"bootId\":\"n1-1\"},"
		"\"servedAt\":\"2026-12-03T14:53:34.890Z\"}}";
	int64_t rev = 0;
	assert_int_equal(store_put(s, "/nodes/n1", doc, STORE_ABSENT, &rev), 0);
	char err[128];
	struct cache *c = cache_new(s);
	assert_int_equal(cache_start(c, err, sizeof(err)), 0);
	assert_int_equal(cache_wait_revision(c, rev, 5000), 0);
	struct node *cn = cache_node_get(c, "n1");
	assert_non_null(cn);
	assert_null(cn->inventory);
	assert_non_null(cn->inventory_text);

	int calls = 0;
	struct objects_update u = {.actor = "user:alice", .start = cn};
	struct node *out = NULL;
	assert_int_equal(objects_update_node(s, "n1", add_hold_counted, &calls, &u, &out, err,
					     sizeof(err)),
			 0);
	assert_int_equal(calls, 1);
	assert_int_equal(u.attempts, 0); /* no read of the store */
	assert_true(u.revision > rev);
	assert_int_equal(out->resource_version, u.revision);
	node_free(out);

	/* the stored document: the original's full decode with the same change, field for field */
	json_t *full = NULL;
	struct node *fn = NULL;
	assert_int_equal(jsonx_parse(doc, strlen(doc), &full, err, sizeof(err)), 0);
	assert_int_equal(node_from_json(full, rev, &fn, err, sizeof(err)), 0);
	int c0 = 0;
	assert_int_equal(add_hold_counted(fn, NULL, &c0), 1);
	json_t *want = node_to_json(fn, NODE_JSON_STORE);
	struct store_kv kv = {0};
	assert_int_equal(store_get(s, "/nodes/n1", &kv), 0);
	assert_int_equal(kv.mod_revision, u.revision);
	json_t *got = NULL;
	assert_int_equal(jsonx_parse(kv.value, strlen(kv.value), &got, err, sizeof(err)), 0);
	assert_true(json_equal(got, want));
	json_decref(got);
	/* the inventory as it was stored, byte for byte (not parsed and dumped again) */
	assert_non_null(strstr(kv.value, "\"inventory\":{\"cpu\":{\"sockets\":2},\"gpus\":[{"
					 "\"index\":0,\"serial\":\"S\\u00e9\",\"temp\":41.5}]}"));
	store_kv_release(&kv);

	/* cn is now behind the store: its CAS loses, the store is read, the change lands there */
	u.revision = 0;
	assert_int_equal(objects_update_node(s, "n1", add_hold_counted, &calls, &u, &out, err,
					     sizeof(err)),
			 0);
	assert_int_equal(calls, 3); /* the stale copy's attempt, then the store's */
	assert_int_equal(u.attempts, 1);
	assert_int_equal(out->nholds, 2);
	assert_string_equal(out->holds[0].owner, "owner-0");
	assert_string_equal(out->holds[1].owner, "owner-2");
	node_free(out);
	/* a start never stored (version 0) is ignored: the store is read */
	cn->resource_version = 0;
	assert_int_equal(objects_update_node(s, "n1", never_write, NULL, &u, NULL, NULL, 0), 0);
	assert_int_equal(u.attempts, 1);

	json_decref(want);
	json_decref(full);
	node_free(fn);
	node_free(cn);
	cache_free(c);
	store_close(s);
}

static void test_op_start_kinds(void **state)
{
	static const struct {
		const char *kind;
		const char *steps[5];
	} want[] = {
		{"inspect", {"power_status", "read_inventory"}},
		{"provision",
		 {"set_boot_pxe", "power_on_or_cycle", "wait_boot_callback", "set_boot_disk"}},
		{"validate", {"check_gpu_count", "wait_burn_in"}},
		{"repair", {"power_off", "power_on", "wait_boot_callback"}},
		{"drain", {"workload_drained"}},
		{"retire", {"power_off"}},
		{"gpu_reset", {"request_gpu_reset", "wait_agent_action"}},
		{"reboot", {"power_off", "power_on", "wait_boot_callback"}},
		{"reimage",
		 {"set_boot_pxe", "power_on_or_cycle", "wait_boot_callback", "set_boot_disk"}},
		{"rma", {"open_rma"}},
	};
	struct store *s = open_mem();
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct objects_txn tx;
		objects_txn_init(&tx);
		struct operation *op = NULL;
		struct objects_op_spec spec = {.node = "n1",
					       .kind = want[i].kind,
					       .actor = "controller:lifecycle",
					       .reason = "because",
					       .now_ms = 1796000000123,
					       .rnd = 0x1234abcd5678ef90ULL};
		assert_int_equal(objects_op_start(&spec, &tx, &op, NULL, 0), 0);
		char id[64];
		snprintf(id, sizeof(id), "%s-1796000000123-5678ef90", want[i].kind);
		assert_string_equal(op->id, id);
		assert_string_equal(op->node, "n1");
		assert_string_equal(op->kind, want[i].kind);
		assert_int_equal(op->state, OP_PENDING);
		assert_int_equal(op->created_at, 1796000000123);
		size_t ns = 0;
		while (ns < 5 && want[i].steps[ns])
			ns++;
		assert_int_equal(op->nsteps, ns);
		for (size_t j = 0; j < ns; j++)
			assert_string_equal(op->steps[j], want[i].steps[j]);
		/* its document: create-if-absent at its key */
		assert_int_equal(tx.n, 1);
		char key[96];
		snprintf(key, sizeof(key), "/operations/%s", id);
		assert_string_equal(tx.ops[0].key, key);
		assert_int_equal(tx.ops[0].expect, STORE_ABSENT);
		assert_int_equal(store_txn(s, tx.ops, tx.n, NULL, NULL), 0);
		struct operation *back = NULL;
		assert_int_equal(objects_store_op(s, id, &back, NULL, NULL, 0), 0);
		assert_int_equal(back->nsteps, ns);
		assert_string_equal(back->actor, "controller:lifecycle");
		operation_free(back);
		operation_free(op);
		objects_txn_release(&tx);
	}

	/* power: the one step power_<action>; retire without power off: skip_power_off */
	struct operation *op = NULL;
	json_t *p = json_pack("{s:s}", "action", "cycle");
	struct objects_op_spec spec = {.node = "n1",
				       .kind = "power",
				       .params = p,
				       .actor = "u",
				       .reason = "r",
				       .idempotency_key = "k1",
				       .now_ms = 5};
	assert_int_equal(objects_op_start(&spec, NULL, &op, NULL, 0), 0);
	assert_string_equal(op->id, "power-0000000000005-00000000");
	assert_int_equal(op->nsteps, 1);
	assert_string_equal(op->steps[0], "power_cycle");
	assert_string_equal(jsonx_str(op->params, "action"), "cycle");
	assert_string_equal(op->idempotency_key, "k1");
	operation_free(op);
	json_decref(p);
	p = json_pack("{s:s}", "action", "explode");
	spec.params = p;
	char err[96];
	assert_int_equal(objects_op_start(&spec, NULL, &op, err, sizeof(err)), FP_EINVAL);
	assert_null(op);
	json_decref(p);
	p = json_pack("{s:b}", "skipPowerOff", 1);
	spec.kind = "retire";
	spec.params = p;
	assert_int_equal(objects_op_start(&spec, NULL, &op, NULL, 0), 0);
	assert_int_equal(op->nsteps, 1);
	assert_string_equal(op->steps[0], "skip_power_off");
	operation_free(op);
	json_decref(p);
	spec.kind = "teleport";
	spec.params = NULL;
	assert_int_equal(objects_op_start(&spec, NULL, &op, err, sizeof(err)), FP_EINVAL);
	assert_non_null(strstr(err, "teleport"));
	store_close(s);
}

/* The start-up list decodes on several threads (engine/cache.c list_nodes): more nodes than
 * its queue holds, each with its own rack, come out whole, indexed, at their own revision, and
 * an undecodable document among them is skipped. */
static void test_start_list_many(void **state)
{
	enum {
		N = 1500
	};
	struct store *s = open_mem();
	int64_t revs[N], last = 0;
	for (int i = 0; i < N; i++) {
		struct node *n = node_new();
		char name[16], rack[16];
		snprintf(name, sizeof(name), "m%04d", i);
		snprintf(rack, sizeof(rack), "r%02d", i % 10);
		n->name = strdup(name);
		n->rack = strdup(rack);
		n->phase = i % 3 ? PHASE_AVAILABLE : PHASE_ENROLLED;
		json_t *nj = node_to_json(n, NODE_JSON_STORE);
		char *v = jsonx_dumps(nj), *k = objects_key_node_dup(name);
		assert_int_equal(store_put(s, k, v, STORE_ABSENT, &revs[i]), 0);
		last = revs[i];
		free(k);
		free(v);
		json_decref(nj);
		node_free(n);
		if (i == N / 2)
			assert_int_equal(store_put(s, "/nodes/bad", "{\"kind\":\"Rack\"}",
						   STORE_ABSENT, &last),
					 0);
	}
	char err[128];
	struct cache *c = cache_new(s);
	assert_int_equal(cache_start(c, err, sizeof(err)), 0);
	assert_int_equal(cache_wait_revision(c, last, 5000), 0);
	assert_int_equal(cache_node_count(c), N);
	size_t counts[PHASE__COUNT] = {0};
	cache_phase_counts(c, counts);
	assert_int_equal(counts[PHASE_ENROLLED], N / 3);
	assert_int_equal(counts[PHASE_AVAILABLE], N - N / 3);
	char **names = NULL;
	size_t nr = cache_node_names(c, CACHE_BY_RACK, "r07", &names);
	assert_int_equal(nr, N / 10);
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	for (int i = 0; i < N; i += 97) {
		char name[16];
		snprintf(name, sizeof(name), "m%04d", i);
		struct node *n = cache_node_get(c, name);
		assert_non_null(n);
		assert_int_equal(n->resource_version, revs[i]);
		node_free(n);
	}
	assert_null(cache_node_get(c, "bad"));
	cache_free(c);
	store_close(s);
}

struct tally {
	size_t nodes, enrolled;
	int stop_after;
};

static int tally_node(void *arg, const struct node *n)
{
	struct tally *t = arg;
	t->nodes++;
	t->enrolled += n->phase == PHASE_ENROLLED;
	return t->stop_after && (int)t->nodes >= t->stop_after ? 42 : 0;
}

static void test_visit_nodes(void **state)
{
	struct store *s = open_mem();
	int64_t rev = 0;
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof(name), "v%d", i);
		rev = put_node(s, name);
	}
	char err[128];
	struct cache *c = cache_new(s);
	assert_int_equal(cache_start(c, err, sizeof(err)), 0);
	assert_int_equal(cache_wait_revision(c, rev, 5000), 0);
	struct tally t = {0};
	assert_int_equal(cache_visit_nodes(c, tally_node, &t), 0);
	assert_int_equal(t.nodes, 5);
	assert_int_equal(t.enrolled, 5);
	struct tally stop = {.stop_after = 2};
	assert_int_equal(cache_visit_nodes(c, tally_node, &stop), 42);
	assert_int_equal(stop.nodes, 2);
	cache_free(c);
	store_close(s);
}

/* cache_trusted_revision vouches for the rows the cache decoded: 0 before the first list; its
 * revision less one once synced; 0 while some node's newest document did not decode (the
 * cache keeps the older one), and back once that node is replaced or deleted. */
static void test_trusted_revision(void **state)
{
	struct store *s = open_mem();
	put_node(s, "t1");
	int64_t rev = put_node(s, "t2"), rv = 0, bad = 0;
	struct cache *c = cache_new(s);
	assert_int_equal(cache_trusted_revision(c), 0);
	assert_true(cache_sync_now(c) >= 0);
	assert_int_equal(cache_trusted_revision(c), rev - 1);
	assert_int_equal(cache_node_rev(c, "t2", &rv), 0);
	assert_int_equal(rv, rev);
	assert_int_equal(cache_node_rev(c, "nope", &rv), FP_ENOTFOUND);

	/* t1's newest document is not a node: refused, nothing vouched for */
	assert_int_equal(store_put(s, "/nodes/t1",
				   "{\"kind\":\"Node\",\"metadata\":{\"name\":\"t1\"},\"spec\":7}",
				   STORE_ANY, &bad),
			 0);
	assert_true(cache_sync_now(c) >= 0);
	assert_int_equal(cache_revision(c), bad);
	assert_int_equal(cache_trusted_revision(c), 0);
	assert_int_equal(cache_node_rev(c, "t1", &rv), 0);
	assert_int_equal(rv, rev - 1); /* the older t1 it still holds */
	/* replaced by a node that decodes: vouched for again */
	assert_int_equal(store_delete(s, "/nodes/t1", STORE_ANY, &rv), 0);
	int64_t good = put_node(s, "t1");
	assert_true(cache_sync_now(c) >= 0);
	assert_int_equal(cache_trusted_revision(c), good - 1);
	/* a refused document that is then deleted */
	assert_int_equal(store_put(s, "/nodes/t3", "[1]", STORE_ANY, &bad), 0);
	assert_true(cache_sync_now(c) >= 0);
	assert_int_equal(cache_trusted_revision(c), 0);
	int64_t del = 0;
	assert_int_equal(store_delete(s, "/nodes/t3", STORE_ANY, &del), 0);
	assert_true(cache_sync_now(c) >= 0);
	assert_int_equal(cache_trusted_revision(c), del - 1);
	cache_free(c);
	store_close(s);
}

/* The cache keeps a node's inventory as text cut out of the stored document (decode_cached):
 * the text must be the inventory's compact form, the node otherwise what a full decode gives,
 * and the public document the same bytes as rendering the full decode; an inventory that is
 * not an object is refused as node_from_json refuses it, null is none. */
static void test_cache_inventory_text(void **state)
{
	struct store *s = open_mem();
	const char *doc =
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"i1\",\"uid\":\"u1\",\"labels\":{\"a\":\"b\"}},"
		"\"spec\":{\"bmc\":{\"driver\":\"sim\"}},\"status\":{\"phase\":\"available\",\"holds\":[],"
		"\"conditions\":[],\"inventory\":{\"cpu\":{\"sockets\":2},\"gpus\":[{\"index\":0,"
		"\"serial\":\"S\\u00e9\",\"temp\":41.5}]},\"servedAt\":\"2026-12-03T14:53:34.890Z\"}}";
	assert_int_equal(store_put(s, "/nodes/i1", doc, STORE_ABSENT, NULL), 0);
	assert_int_equal(store_put(s, "/nodes/i2",
				   "{\"kind\":\"Node\",\"metadata\":{\"name\":\"i2\"},\"status\":{"
				   "\"phase\":\"enrolled\",\"inventory\":null}}",
				   STORE_ABSENT, NULL),
			 0);
	int64_t rev = 0;
	assert_int_equal(store_put(s, "/nodes/i3",
				   "{\"kind\":\"Node\",\"metadata\":{\"name\":\"i3\"},\"status\":{"
				   "\"phase\":\"enrolled\",\"inventory\":[1]}}",
				   STORE_ABSENT, NULL),
			 0);
	/* two inventories: refused as any duplicate key is (the cut alone would take both) */
	assert_int_equal(store_put(s, "/nodes/i4",
				   "{\"kind\":\"Node\",\"metadata\":{\"name\":\"i4\"},\"status\":{"
				   "\"phase\":\"enrolled\",\"inventory\":{},\"inventory\":{}}}",
				   STORE_ABSENT, &rev),
			 0);
	char err[128];
	struct cache *c = cache_new(s);
	assert_int_equal(cache_start(c, err, sizeof(err)), 0);
	assert_int_equal(cache_wait_revision(c, rev, 5000), 0);
	assert_int_equal(cache_node_count(c), 2);
	assert_null(cache_node_get(c, "i4"));

	struct node *cn = cache_node_get(c, "i1");
	assert_non_null(cn);
	assert_null(cn->inventory);
	assert_string_equal(
		cn->inventory_text,
		"{\"cpu\":{\"sockets\":2},\"gpus\":[{\"index\":0,\"serial\":\"S\\u00e9\","
		"\"temp\":41.5}]}");
	assert_true(cn->served_at > 0); /* decoded from the text around the cut */
	assert_int_equal(cn->nlabels, 1);
	/* the public document, rendered from the cached node, equals the full decode's */
	json_t *full = NULL;
	struct node *fn = NULL;
	assert_int_equal(jsonx_parse(doc, strlen(doc), &full, err, sizeof(err)), 0);
	assert_int_equal(node_from_json(full, cn->resource_version, &fn, err, sizeof(err)), 0);
	json_t *a = node_to_json(fn, NODE_JSON_PUBLIC), *b = node_to_json(cn, NODE_JSON_PUBLIC);
	char *da = jsonx_dumps(a), *db = jsonx_dumps(b);
	assert_string_equal(db, da);
	char *json = NULL;
	size_t len = 0;
	assert_int_equal(cache_node_json(c, "i1", &json, &len), 0);
	/* rendered with the inventory text spliced in as stored (its escapes kept): the same
	 * document */
	assert_non_null(strstr(json, "\"serial\":\"S\\u00e9\""));
	json_t *pj = NULL;
	assert_int_equal(jsonx_parse(json, len, &pj, err, sizeof(err)), 0);
	assert_true(json_equal(pj, a));
	json_decref(pj);
	free(json);
	free(da);
	free(db);
	json_decref(a);
	json_decref(b);
	json_decref(full);
	node_free(fn);
	node_free(cn);

	cn = cache_node_get(c, "i2");
	assert_non_null(cn);
	assert_null(cn->inventory_text);
	node_free(cn);
	assert_null(cache_node_get(c, "i3")); /* "status.inventory: expected an object" */
	cache_free(c);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_reads_store_and_cache),
		cmocka_unit_test(test_update_cas_retry_and_event),
		cmocka_unit_test(test_update_from_cached_start),
		cmocka_unit_test(test_node_to_text_splice),
		cmocka_unit_test(test_op_start_kinds),
		cmocka_unit_test(test_visit_nodes),
		cmocka_unit_test(test_start_list_many),
		cmocka_unit_test(test_cache_inventory_text),
		cmocka_unit_test(test_trusted_revision),
	};
	return cmocka_run_group_tests_name("objects", tests, NULL, NULL);
}
