/* jsonx.h - small helpers over jansson (a library: https://jansson.readthedocs.io/) for the edges
 * where JSON enters and leaves: strict parsing with positioned errors, unknown-field checks,
 * dotted-path lookups and compact dumps. */
#ifndef FP_BASE_JSONX_H
#define FP_BASE_JSONX_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Parses len bytes as one JSON value (no trailing garbage, no NUL bytes, duplicate keys
 * rejected). On error returns FP_EPARSE and writes "line L column C: <why>" into err.
 * *out is a new reference owned by the caller. */
int jsonx_parse(const char *data, size_t len, json_t **out, char *err, size_t errlen);

/* Compact dump in insertion order.
 * Returns a malloc'd string the caller frees; never NULL. */
char *jsonx_dumps(const json_t *v);
/* jsonx_utf8_lossy returns a malloc'd copy of s (NUL-terminated) in which every byte that is
 * not part of a well-formed UTF-8 sequence (RFC 3629 section 4: no overlongs, no surrogates,
 * at most U+10FFFF) - for example the tail of a character cut by a bounded snprintf, or a
 * byte from a BMC - is replaced by '?'. NULL for NULL. */
char *jsonx_utf8_lossy(const char *s);
/* jsonx_utf8_escaped is jsonx_utf8_lossy with each such byte written as the four characters
 * "\xNN" (upper-case hex) instead of '?', so that a person can see which bytes a client sent
 * (an invalid path echoed in a problem document). Malloc'd; NULL for NULL. */
char *jsonx_utf8_escaped(const char *s);
/* jsonx_string_lossy is json_string(s) that never fails on bad UTF-8 (see jsonx_utf8_lossy):
 * text from outside (BMC answers, truncated error messages) must not vanish from a document.
 * NULL only for s == NULL. New reference. */
json_t *jsonx_string_lossy(const char *s);

/* jsonx_utf8_next decodes the well-formed UTF-8 sequence (RFC 3629 section 4: no overlongs, no
 * surrogates, at most U+10FFFF) at s, n > 0 bytes left: returns its length (1..4) with the code
 * point in *cp, or 0 when the bytes there are not one. */
size_t jsonx_utf8_next(const char *s, size_t n, uint32_t *cp);
/* 1 for a code point that must not reach a terminal or a person's screen as it is: C0 controls
 * and DEL, C1 controls U+0080..U+009F, bidirectional embeddings, overrides and isolates
 * (U+202A..U+202E, U+2066..U+2069; Unicode UAX #9). */
int jsonx_cp_unsafe(uint32_t cp);

/* jsonx_text_check checks free text that people will read (a reason, a message): len bytes of
 * well-formed UTF-8 (RFC 3629 section 4) of 1..max_chars code points, with no NUL, no C0
 * control or DEL (U+0000..U+001F, U+007F), no C1 control (U+0080..U+009F) and no bidirectional
 * embedding, override or isolate (U+202A..U+202E, U+2066..U+2069: Unicode UAX #9 section 2;
 * the "Trojan Source" class of spoofing). Returns 0, or -1 with why (NUL-terminated, naming
 * the character as U+XXXX and its character index) in why/whylen. */
int jsonx_text_check(const char *s, size_t len, size_t max_chars, char *why, size_t whylen);

/* Returns the value at a dotted path ("status.phase") inside obj, or NULL. Borrowed. */
json_t *jsonx_path(const json_t *obj, const char *path);
/* String at a dotted path, or NULL if absent / not a string. Borrowed. */
const char *jsonx_str(const json_t *obj, const char *path);

/* Refuses keys of obj that are not in allowed (NULL-terminated). `where` names the object in
 * the error ("spec.bmc"). Returns 0 or FP_EINVAL with "unknown field where.key" in err. */
int jsonx_check_keys(const json_t *obj, const char *const *allowed, const char *where, char *err,
		     size_t errlen);

#endif
