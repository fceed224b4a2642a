/* layers: base */
/* fuzz_jsontext.c - libFuzzer target for base/jsontext.c, the one-pass rewrite that serves
 * stored node documents to lists (issue 17 item 4). The store's text is trusted in shape, but
 * the rewrite is the last step before a document reaches a client and decides which secrets
 * are left out, so it must hold on any bytes. Properties checked (a failure aborts), each
 * against jansson as the reference parser: a copy without edits that succeeds is a text
 * jansson also reads, and jansson reads the copy as the same value; a text jansson reads with
 * fewer than JSONTEXT_MAX_DEPTH brackets is always copied; with the node edit (drop
 * spec.bmc.password, password_sealed and password_file, insert metadata.resourceVersion), a
 * success is a text jansson reads as the input without the dropped members and with the member
 * added to an object metadata, and the output never contains a dropped member; every failure
 * leaves the output buffer as it was; the same edit in trusted mode, on a text jansson
 * reads as an object without duplicate keys, succeeds whenever the checked edit does, and gives
 * the same tree (never a broken text); a dropped member's
 * reported span is the value jansson finds at its path. Seeds: tests/fuzz/corpus/fuzz_jsontext/ (stored node
 * documents, the unit tests' forms). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsontext.h"

#include "base/banned.h"

#define CHECK(c)                                                                               \
	do {                                                                                   \
		if (!(c)) {                                                                    \
			fprintf(stderr, "fuzz_jsontext: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                               \
		}                                                                              \
	} while (0)

static const char *const drop[] = {"spec.bmc.password", "spec.bmc.password_sealed",
				   "spec.bmc.password_file", NULL};
static const char *const after[] = {"name", "uid", NULL};
static const struct jsontext_edit node_edit = {drop, "metadata", after, "\"resourceVersion\":\"7\"",
					       NULL, 0};

static json_t *load(const char *p, size_t n, json_error_t *je)
{
	/* JSON_ALLOW_NUL: "\u0000" is valid JSON text (RFC 8259 section 7) */
	json_error_t mine;
	return json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, je ? je : &mine);
}

/* jansson refuses numbers it cannot hold (beyond int64, or a double's range) and "\u0000" in a
 * member name (its keys are C strings); both are valid JSON text (RFC 8259 sections 6 and 7),
 * and the rewrite copies them without needing their values. */
static int range_only(const json_error_t *je)
{
	return strstr(je->text, "too big") || strstr(je->text, "overflow") ||
	       strstr(je->text, "NUL byte in object key");
}

static size_t brackets(const char *p, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i] == '[' || p[i] == '{';
	return k;
}

/* The expected value of the node edit, applied to a tree; a new reference. */
static json_t *expect_edit(const json_t *in)
{
	json_t *e = json_deep_copy(in);
	json_t *bmc = json_object_get(json_object_get(e, "spec"), "bmc");
	if (json_is_object(bmc))
		for (const char *const *d = drop; *d; d++)
			json_object_del(bmc, strrchr(*d, '.') + 1);
	json_t *md = json_object_get(e, "metadata");
	if (json_is_object(md))
		json_object_set_new(md, "resourceVersion", json_string("7"));
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	const char *in = (const char *)data;
	json_error_t je;
	/* a raw NUL byte is never JSON (RFC 8259: not whitespace, not allowed in a string), but
	 * jansson's loader stops at one: such inputs must simply fail */
	int nul = memchr(in, 0, size) != NULL;
	json_t *ref = nul ? NULL : load(in, size, &je);
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "x");
	char err[128];

	int rc = jsontext_rewrite(in, size, NULL, &b, err, sizeof(err));
	if (rc == 0 && ref) {
		json_t *copy = load(b.data + 1, b.len - 1, NULL);
		CHECK(copy != NULL);
		CHECK(json_equal(copy, ref));
		json_decref(copy);
	} else if (rc == 0) {
		CHECK(!nul && range_only(&je));
	} else {
		CHECK(b.len == 1 && strcmp(b.data, "x") == 0);
		CHECK(ref == NULL || brackets(in, size) >= JSONTEXT_MAX_DEPTH);
	}

	/* the reference for the edits: jansson keeps the last of duplicate keys, so only a text
	 * without them has one right tree */
	json_t *strict = ref ? json_loadb(in, size,
					  JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
					  NULL)
			     : NULL;
	buf_reset(&b);
	buf_puts(&b, "x");
	rc = jsontext_rewrite(in, size, &node_edit, &b, err, sizeof(err));
	if (rc == 0 && ref) {
		json_t *got = load(b.data + 1, b.len - 1, NULL);
		CHECK(got != NULL);
		/* an input with duplicate keys or its own resourceVersion has no single right
		 * answer in a tree: the dropped members must still be gone */
		json_t *bmc = json_object_get(json_object_get(got, "spec"), "bmc");
		for (const char *const *d = drop; *d; d++)
			CHECK(!json_object_get(bmc, strrchr(*d, '.') + 1));
		if (strict &&
		    !json_object_get(json_object_get(strict, "metadata"), "resourceVersion")) {
			json_t *want = expect_edit(strict);
			CHECK(json_equal(got, want));
			json_decref(want);
		}
		json_decref(got);
	} else if (rc == 0) {
		CHECK(!nul && range_only(&je));
	} else {
		CHECK(b.len == 1 && strcmp(b.data, "x") == 0);
	}
	/* trusted (what the list path sets for a text the cache parsed this way: an object,
	 * duplicate keys refused): never a broken output, the same tree as the checked copy
	 * when both succeed, the dropped members always gone */
	if (json_is_object(strict)) {
		struct jsontext_edit tr = node_edit;
		tr.trusted = 1;
		struct buf tb;
		buf_init(&tb, 0);
		int trc = jsontext_rewrite(in, size, &tr, &tb, err, sizeof(err));
		if (rc == 0 && brackets(in, size) < JSONTEXT_MAX_DEPTH)
			CHECK(trc == 0);
		if (trc == 0) {
			json_t *got = load(tb.data, tb.len, NULL);
			CHECK(got != NULL);
			json_t *bmc = json_object_get(json_object_get(got, "spec"), "bmc");
			for (const char *const *d = drop; *d; d++)
				CHECK(!json_object_get(bmc, strrchr(*d, '.') + 1));
			if (rc == 0) {
				json_t *checked = load(b.data + 1, b.len - 1, NULL);
				CHECK(json_equal(got, checked));
				json_decref(checked);
			} else if (!json_object_get(json_object_get(strict, "metadata"),
						    "resourceVersion")) {
				json_t *want = expect_edit(strict);
				CHECK(json_equal(got, want));
				json_decref(want);
			}
			json_decref(got);
		} else {
			CHECK(tb.len == 0);
		}
		buf_release(&tb);
	}
	/* a dropped member kept as text: its span is the value jansson finds at the path */
	static const char *const inv[] = {"status.inventory", NULL};
	struct jsontext_span sp[1];
	const struct jsontext_edit take = {inv, NULL, NULL, NULL, sp, 0};
	buf_reset(&b);
	rc = jsontext_rewrite(in, size, &take, &b, err, sizeof(err));
	if (rc == 0 && strict) {
		json_t *want = json_object_get(json_object_get(strict, "status"), "inventory");
		CHECK((sp[0].len != 0) == (want != NULL));
		if (want) {
			CHECK(sp[0].off + sp[0].len <= size);
			json_t *got = load(in + sp[0].off, sp[0].len, NULL);
			CHECK(got && json_equal(got, want));
			json_decref(got);
		}
	}
	json_decref(strict);
	buf_release(&b);
	json_decref(ref);
	return 0;
}
