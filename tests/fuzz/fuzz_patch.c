/* layers: base */
/* fuzz_patch.c - libFuzzer target for the patch bodies of the Kubernetes API (base/jsonpatch.c:
 * RFC 7386 merge patch and RFC 6902 JSON patch), which come from kubectl apply, label, edit and
 * patch. The input is split at the first NUL into a target document and a patch (both JSON);
 * properties checked: a merge patch never fails below the depth limit and is idempotent
 * (merge(merge(t, p), p) == merge(t, p)); merging {} changes nothing; a JSON patch either
 * fails with a reason or returns a document, and never changes its input; an empty JSON patch
 * returns a copy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonpatch.h"

#include "base/banned.h"

static json_t *load(const uint8_t *p, size_t n)
{
	return json_loadb((const char *)p, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t tn = nul ? (size_t)(nul - data) : size;
	json_t *target = load(data, tn);
	json_t *patch = nul ? load(nul + 1, size - tn - 1) : NULL;
	if (!target)
		target = json_object();
	json_t *before = json_deep_copy(target);
	char err[256];
	if (patch) {
		err[0] = 0;
		json_t *m = jsonpatch_merge(target, patch, err, sizeof(err));
		if (m) {
			json_t *m2 = jsonpatch_merge(m, patch, err, sizeof(err));
			if (!m2 || !json_equal(m, m2))
				abort(); /* RFC 7386 merge patches are idempotent */
			json_decref(m2);
			json_decref(m);
		} else if (!err[0]) {
			abort(); /* refused without a reason */
		}
		int conflict = 0;
		err[0] = 0;
		json_t *a = jsonpatch_apply(target, patch, &conflict, err, sizeof(err));
		if (!a && !err[0])
			abort();
		if (a && conflict)
			abort(); /* a failed test is a failure */
		json_decref(a);
	}
	json_t *empty = json_object();
	json_t *same = jsonpatch_merge(target, empty, err, sizeof(err));
	if (json_is_object(target) && (!same || !json_equal(same, target)))
		abort(); /* merging {} into an object changes nothing */
	json_decref(same);
	json_t *noops = json_array();
	json_t *copy = jsonpatch_apply(target, noops, NULL, err, sizeof(err));
	if (!copy || !json_equal(copy, target))
		abort();
	json_decref(copy);
	if (!json_equal(before, target))
		abort(); /* inputs are borrowed, never changed */
	json_decref(noops);
	json_decref(empty);
	json_decref(before);
	json_decref(target);
	json_decref(patch);
	return 0;
}
