/* jsonpatch.h - the two JSON patch formats Kubernetes clients send (jsonpatch.c): JSON Merge
 * Patch (RFC 7386; kubectl apply, label, edit, patch --type=merge) and JSON Patch (RFC 6902;
 * kubectl patch --type=json) with JSON Pointers (RFC 6901). Pure functions over jansson
 * values; no project dependencies. The API's Kubernetes surface (api/kube.c) applies them to
 * an object's public form. */
#ifndef FP_BASE_JSONPATCH_H
#define FP_BASE_JSONPATCH_H

#include <jansson.h>
#include <stddef.h>

#define JSONPATCH_MAX_OPS 1000 /* operations in one RFC 6902 document */
#define JSONPATCH_MAX_DEPTH 64 /* nesting of a merge patch, segments of a pointer */

/* RFC 7386 section 2 MergePatch(target, patch): returns a new value (the caller owns it);
 * target is borrowed and not changed (NULL = absent). A null member deletes. Never fails
 * except past JSONPATCH_MAX_DEPTH levels (NULL, with err). */
json_t *jsonpatch_merge(const json_t *target, const json_t *patch, char *err, size_t errlen);

/* RFC 6902: applies the array of operations patch (add, remove, replace, move, copy, test) to a
 * copy of doc and returns it (new reference), or NULL with the failing operation's index and
 * reason in err ("operation 2 (test /spec/x): value differs"). *conflict (may be NULL) is set
 * to 1 when a test operation failed (Kubernetes answers 422 for both; callers may tell them
 * apart). At most JSONPATCH_MAX_OPS operations. */
json_t *jsonpatch_apply(const json_t *doc, const json_t *patch, int *conflict, char *err,
			size_t errlen);

#endif
