/* jsonx.h - small helpers over jansson (a library: https://jansson.readthedocs.io/) for the edges
 * where JSON enters and leaves: strict parsing with positioned errors, unknown-field checks,
 * dotted-path lookups and compact dumps. */
#ifndef FP_BASE_JSONX_H
#define FP_BASE_JSONX_H

#include <jansson.h>
#include <stddef.h>

/* Parses len bytes as one JSON value (no trailing garbage, no NUL bytes, duplicate keys
 * rejected). On error returns FP_EPARSE and writes "line L column C: <why>" into err.
 * *out is a new reference owned by the caller. */
int jsonx_parse(const char *data, size_t len, json_t **out, char *err, size_t errlen);

/* Compact dump in insertion order.
 * Returns a malloc'd string the caller frees; never NULL. */
char *jsonx_dumps(const json_t *v);

/* Returns the value at a dotted path ("status.phase") inside obj, or NULL. Borrowed. */
json_t *jsonx_path(const json_t *obj, const char *path);
/* String at a dotted path, or NULL if absent / not a string. Borrowed. */
const char *jsonx_str(const json_t *obj, const char *path);

/* Refuses keys of obj that are not in allowed (NULL-terminated). `where` names the object in
 * the error ("spec.bmc"). Returns 0 or FP_EINVAL with "unknown field where.key" in err. */
int jsonx_check_keys(const json_t *obj, const char *const *allowed, const char *where, char *err,
		     size_t errlen);

#endif
