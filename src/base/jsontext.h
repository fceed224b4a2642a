/* jsontext.h - edits a JSON text while copying it, without building a tree: the read path's
 * "serve the stored text" (issue 17 item 4). A list of 100,000 nodes parsed, decoded, encoded
 * and dumped costs ~100 allocations and three JSON passes per document; this is one pass with
 * no allocation but the output's growth. It checks the syntax as it goes (RFC 8259 sections 2-7,
 * and UTF-8 per RFC 3629 section 4), so its output is always one well-formed JSON value; callers
 * fall back to a real parse on any error. Written here rather than taken from a library because
 * jansson (and every tree parser) must build the tree this exists to avoid, and the streaming
 * parsers at hand (yajl) cannot leave a member out without re-serialising every token. */
#ifndef FP_BASE_JSONTEXT_H
#define FP_BASE_JSONTEXT_H

#include <stddef.h>

#include "base/buf.h"

/* At most this many drop paths, and this many members in any path. */
#define JSONTEXT_MAX_PATHS 8
#define JSONTEXT_MAX_COMPONENTS 8
/* Most levels of nested objects and arrays accepted (jansson allows 2048). */
#define JSONTEXT_MAX_DEPTH 64

/* Where a dropped value was in the input: in[off .. off + len), len 0 when none was dropped. */
struct jsontext_span {
	size_t off, len;
	unsigned count; /* members the path matched: more than 1 only for a duplicate key */
};

/* What to change. Paths are dotted member names from the top object ("spec.bmc.password"),
 * each component 1..127 bytes; array elements are never edited. All strings are borrowed. */
struct jsontext_edit {
	const char *const *drop; /* members to leave out, NULL-terminated; NULL = none */
	const char *insert_at;   /* the object (a path; "" = the top one) to add a member to, or
				  * NULL for no insertion */
	/* The member goes after the object's leading members whose keys are in this list
	 * (NULL-terminated, any order) and before the first other member, or last: with
	 * {"name","uid"}, `{"name":..,"uid":..,"labels":..}` gets it third - where node_to_json
	 * puts resourceVersion (core/codec.c). NULL = first. */
	const char *const *insert_after;
	const char *insert; /* the member's raw text, `"key":value`, NUL-terminated; inserted as
			     * it is, so it must be valid JSON text (the caller's own) */
	/* NULL, or one span per drop path (same order), set to where its value was in the input
	 * (the last one, should a path match twice): a caller can take a member out of a text
	 * and keep it as text (the cache's inventory). Zeroed first. */
	struct jsontext_span *dropped;
	/* Nonzero: the caller vouches that in[0..len) is one well-formed JSON object with no
	 * member name twice in any object a path runs through, followed by nothing but
	 * whitespace - because it parsed this very text before (the list path: the cache
	 * decoded the node from the same store revision, with jansson's
	 * JSON_REJECT_DUPLICATES). Then, once every top-level member a path starts with has
	 * been copied, the rest of the top object is emitted as it is, unread (whitespace
	 * included): a node's status, 85 % of its bytes, is not scanned at all; a value no
	 * path reaches before that is skipped by its quotes and brackets alone and copied as
	 * it is. Member names on a path are still compared (an escaped one still refused). A
	 * text that breaks the promise is copied out broken - never set it for text not
	 * checked. */
	int trusted;
};

/* Appends to out the JSON value in in[0..len) with ed applied (ed NULL = no change), compact:
 * whitespace between tokens is left out; strings and numbers are copied byte for byte. A
 * missing object at insert_at gets no member; every object found at it gets one (only one
 * exists in a text without duplicate keys). Keys are compared as raw bytes, so a key with an
 * escape ("\u0070assword") in an object that a drop or insert path runs through is refused
 * rather than compared wrongly - a dropped secret must never slip through.
 * Returns 0; FP_EINVAL for a malformed edit (too many paths or components, an empty or
 * over-long component); FP_EPARSE ("offset N: why" in err) for a text that is not exactly
 * one JSON value, nests deeper than JSONTEXT_MAX_DEPTH or has such an escaped key; or
 * FP_ETOOBIG when out reaches its maximum. On any error out keeps its old length (nothing
 * half-written). err may be NULL. */
int jsontext_rewrite(const char *in, size_t len, const struct jsontext_edit *ed, struct buf *out,
		     char *err, size_t errlen);

#endif
