/* jsonpatch.c - JSON Merge Patch (RFC 7386) and JSON Patch (RFC 6902) over jansson values; see
 * jsonpatch.h. */
#include "base/jsonpatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/banned.h"

static json_t *merge(const json_t *target, const json_t *patch, int depth, char *err, size_t errlen)
{
	if (depth > JSONPATCH_MAX_DEPTH) {
		fp_errf(FP_EINVAL, err, errlen, "merge patch nested deeper than %d levels",
			JSONPATCH_MAX_DEPTH);
		return NULL;
	}
	if (!json_is_object(patch))
		return json_deep_copy(patch);
	json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)patch, k, v) {
		if (json_is_null(v)) {
			json_object_del(out, k);
			continue;
		}
		json_t *m = merge(json_object_get(out, k), v, depth + 1, err, errlen);
		if (!m) {
			json_decref(out);
			return NULL;
		}
		json_object_set_new(out, k, m);
	}
	return out;
}

json_t *jsonpatch_merge(const json_t *target, const json_t *patch, char *err, size_t errlen)
{
	return merge(target, patch, 0, err, errlen);
}

/* ---------------------------------------------------------------- RFC 6901 pointers */

/* Splits pointer into its unescaped last token (tok) and finds the parent container in doc.
 * Returns the parent (borrowed) or NULL. "" (the whole document) is refused by the callers. */
static json_t *ptr_parent(json_t *doc, const char *ptr, char *tok, size_t toksize)
{
	if (ptr[0] != '/')
		return NULL;
	json_t *cur = doc;
	const char *p = ptr + 1;
	int depth = 0;
	for (;;) {
		size_t n = 0;
		const char *q = p;
		while (*q && *q != '/') {
			if (n + 1 >= toksize)
				return NULL;
			if (q[0] == '~' && q[1] == '0') {
				tok[n++] = '~';
				q += 2;
			} else if (q[0] == '~' && q[1] == '1') {
				tok[n++] = '/';
				q += 2;
			} else if (q[0] == '~') {
				return NULL;
			} else {
				tok[n++] = *q++;
			}
		}
		tok[n] = 0;
		if (!*q)
			return cur;
		if (++depth > JSONPATCH_MAX_DEPTH)
			return NULL;
		json_t *next = NULL;
		if (json_is_object(cur)) {
			next = json_object_get(cur, tok);
		} else if (json_is_array(cur)) {
			char *end = NULL;
			unsigned long i = strtoul(tok, &end, 10);
			if (!tok[0] || *end || (tok[0] == '0' && tok[1]))
				return NULL;
			next = json_array_get(cur, i);
		}
		if (!next)
			return NULL;
		cur = next;
		p = q + 1;
	}
}

/* Array index of tok in arr: "-" = size (append, when allow_end), digits without a leading 0.
 * Returns the index or -1. */
static long arr_index(const json_t *arr, const char *tok, int allow_end)
{
	size_t n = json_array_size(arr);
	if (strcmp(tok, "-") == 0)
		return allow_end ? (long)n : -1;
	char *end = NULL;
	unsigned long i = strtoul(tok, &end, 10);
	if (!tok[0] || *end || (tok[0] == '0' && tok[1]) || tok[0] == '-' || tok[0] == '+')
		return -1;
	if (i > n || (!allow_end && i == n))
		return -1;
	return (long)i;
}

static json_t *ptr_get(json_t *doc, const char *ptr)
{
	char tok[1024];
	if (!ptr[0])
		return doc;
	json_t *parent = ptr_parent(doc, ptr, tok, sizeof(tok));
	if (json_is_object(parent))
		return json_object_get(parent, tok);
	if (json_is_array(parent)) {
		long i = arr_index(parent, tok, 0);
		return i < 0 ? NULL : json_array_get(parent, (size_t)i);
	}
	return NULL;
}

/* Removes the value at ptr and returns it (new reference), or NULL. */
static json_t *ptr_remove(json_t *doc, const char *ptr)
{
	char tok[1024];
	json_t *parent = ptr_parent(doc, ptr, tok, sizeof(tok));
	json_t *v = NULL;
	if (json_is_object(parent)) {
		v = json_incref(json_object_get(parent, tok));
		if (v)
			json_object_del(parent, tok);
	} else if (json_is_array(parent)) {
		long i = arr_index(parent, tok, 0);
		if (i >= 0) {
			v = json_incref(json_array_get(parent, (size_t)i));
			json_array_remove(parent, (size_t)i);
		}
	}
	return v;
}

/* Adds v (stolen) at ptr (RFC 6902 section 4.1). Returns 0 or -1 (v released). */
static int ptr_add(json_t *doc, const char *ptr, json_t *v, int replace)
{
	char tok[1024];
	json_t *parent = ptr_parent(doc, ptr, tok, sizeof(tok));
	if (json_is_object(parent)) {
		if (replace && !json_object_get(parent, tok)) {
			json_decref(v);
			return -1;
		}
		json_object_set_new(parent, tok, v);
		return 0;
	}
	if (json_is_array(parent)) {
		long i = arr_index(parent, tok, !replace);
		if (i < 0) {
			json_decref(v);
			return -1;
		}
		if (replace)
			json_array_set_new(parent, (size_t)i, v);
		else
			json_array_insert_new(parent, (size_t)i, v);
		return 0;
	}
	json_decref(v);
	return -1;
}

json_t *jsonpatch_apply(const json_t *doc, const json_t *patch, int *conflict, char *err,
			size_t errlen)
{
	if (conflict)
		*conflict = 0;
	if (!json_is_array(patch)) {
		fp_errf(FP_EINVAL, err, errlen, "a JSON patch is an array of operations");
		return NULL;
	}
	if (json_array_size(patch) > JSONPATCH_MAX_OPS) {
		fp_errf(FP_EINVAL, err, errlen, "more than %d operations", JSONPATCH_MAX_OPS);
		return NULL;
	}
	json_t *out = json_deep_copy(doc);
	size_t i;
	json_t *op;
	json_array_foreach(patch, i, op) {
		const char *name = json_string_value(json_object_get(op, "op"));
		const char *path = json_string_value(json_object_get(op, "path"));
		const char *from = json_string_value(json_object_get(op, "from"));
		json_t *value = json_object_get(op, "value");
		const char *why = NULL;
		if (!json_is_object(op) || !name || !path) {
			why = "needs \"op\" and \"path\" strings";
		} else if (!path[0] && strcmp(name, "test") != 0) {
			why = "the whole document cannot be changed";
		} else if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0) {
			if (!value)
				why = "needs a \"value\"";
			else if (ptr_add(out, path, json_deep_copy(value), name[0] == 'r') < 0)
				why = "path does not exist";
		} else if (strcmp(name, "remove") == 0) {
			json_t *v = ptr_remove(out, path);
			if (!v)
				why = "path does not exist";
			json_decref(v);
		} else if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
			json_t *v = NULL;
			if (!from)
				why = "needs a \"from\"";
			else if (name[0] == 'm' && strncmp(path, from, strlen(from)) == 0 &&
				 path[strlen(from)] == '/')
				why = "cannot move a value into itself";
			else if (!(v = name[0] == 'm' ? ptr_remove(out, from)
						      : json_deep_copy(ptr_get(out, from))))
				why = "from does not exist";
			else if (ptr_add(out, path, v, 0) < 0)
				why = "path does not exist";
		} else if (strcmp(name, "test") == 0) {
			json_t *have = ptr_get(out, path);
			if (!value)
				why = "needs a \"value\"";
			else if (!have || !json_equal(have, value)) {
				why = "value differs";
				if (conflict)
					*conflict = 1;
			}
		} else {
			why = "unknown op";
		}
		if (why) {
			fp_errf(FP_EINVAL, err, errlen, "operation %zu (%.16s %.128s): %s", i,
				name ? name : "?", path ? path : "?", why);
			json_decref(out);
			return NULL;
		}
	}
	return out;
}
