/* jsonx.c - jansson helpers (see jsonx.h). */
#include "base/jsonx.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"

int jsonx_parse(const char *data, size_t len, json_t **out, char *err, size_t errlen)
{
	json_error_t je;
	*out = NULL;
	if (!data || len == 0)
		return fp_errf(FP_EPARSE, err, errlen, "empty body: expected a JSON value");
	if (memchr(data, 0, len))
		return fp_errf(FP_EPARSE, err, errlen, "body contains a NUL byte");
	json_t *v = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (!v) {
		/* jansson appends " near '<token>'": the token is the caller's own text, often a
		 * password in a half-written document, and error messages end up in terminals,
		 * CI logs and problem documents. Line and column say where; the text stays out. */
		char *near = strstr(je.text, " near '");
		if (near)
			*near = '\0';
		return fp_errf(FP_EPARSE, err, errlen, "invalid JSON at line %d column %d: %s",
			       je.line, je.column, je.text);
	}
	*out = v;
	return 0;
}

char *jsonx_dumps(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	return s ? s : xstrdup("null");
}

json_t *jsonx_path(const json_t *obj, const char *path)
{
	char key[128];
	const json_t *cur = obj;
	const char *p = path;
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(key) || !json_is_object(cur))
			return NULL;
		memcpy(key, p, n);
		key[n] = 0;
		cur = json_object_get(cur, key);
		p = dot ? dot + 1 : p + n;
	}
	return (json_t *)cur;
}

const char *jsonx_str(const json_t *obj, const char *path)
{
	return json_string_value(jsonx_path(obj, path));
}

int jsonx_check_keys(const json_t *obj, const char *const *allowed, const char *where, char *err,
		     size_t errlen)
{
	const char *k;
	json_t *v;
	if (!json_is_object(obj))
		return fp_errf(FP_EINVAL, err, errlen, "%s: expected an object", where);
	json_object_foreach((json_t *)obj, k, v) {
		int ok = 0;
		for (const char *const *a = allowed; *a; a++)
			if (strcmp(*a, k) == 0) {
				ok = 1;
				break;
			}
		if (!ok)
			return fp_errf(FP_EINVAL, err, errlen, "unknown field %s%s%s", where,
				       *where ? "." : "", k);
	}
	return 0;
}

/* Length of the well-formed UTF-8 sequence at p (1..4), or 0 if the bytes there are not one. */
static size_t utf8_seq(const unsigned char *p)
{
	unsigned c = p[0];
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned min, cp;
	if ((c & 0xe0) == 0xc0) {
		n = 2, min = 0x80, cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3, min = 0x800, cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4, min = 0x10000, cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *jsonx_utf8_lossy(const char *s)
{
	if (!s)
		return NULL;
	char *out = xstrdup(s);
	unsigned char *p = (unsigned char *)out;
	while (*p) {
		size_t n = utf8_seq(p);
		if (n == 0) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
	return out;
}

char *jsonx_utf8_escaped(const char *s)
{
	if (!s)
		return NULL;
	struct buf b;
	buf_init(&b, 0);
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n = utf8_seq(p);
		if (n == 0) {
			buf_printf(&b, "\\x%02X", *p++);
			continue;
		}
		buf_append(&b, p, n);
		p += n;
	}
	size_t len;
	return buf_detach(&b, &len);
}

json_t *jsonx_string_lossy(const char *s)
{
	if (!s)
		return NULL;
	json_t *v = json_string(s);
	if (v)
		return v;
	char *fixed = jsonx_utf8_lossy(s);
	v = json_string(fixed);
	free(fixed);
	return v;
}

/* Decodes one well-formed UTF-8 sequence at p (n bytes left): its length, or 0 when malformed
 * (overlong, surrogate, above U+10FFFF, cut short). */
size_t jsonx_utf8_next(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
	if (len == 0 || len > n || p[0] > 0xf4)
		return 0;
	uint32_t v = p[0] & (0xff >> (len + 1));
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
	    (len == 4 && (v < 0x10000 || v > 0x10ffff)))
		return 0;
	*cp = v;
	return len;
}

int jsonx_cp_unsafe(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

int jsonx_text_check(const char *s, size_t len, size_t max_chars, char *why, size_t whylen)
{
	size_t chars = 0;
	for (size_t i = 0; i < len; chars++) {
		uint32_t cp = 0;
		size_t l = jsonx_utf8_next(s + i, len - i, &cp);
		if (l == 0) {
			snprintf(why, whylen, "not valid UTF-8 at byte %zu", i);
			return -1;
		}
		const char *what = cp == 0                    ? "NUL characters"
				   : cp < 0x20 || cp == 0x7f  ? "control characters"
				   : cp >= 0x80 && cp <= 0x9f ? "C1 control characters"
				   : (cp >= 0x202a && cp <= 0x202e) ||
						   (cp >= 0x2066 && cp <= 0x2069)
					   ? "bidirectional control characters"
					   : NULL;
		if (what) {
			snprintf(why, whylen, "%s are not allowed (U+%04X at character %zu)", what,
				 (unsigned)cp, chars + 1);
			return -1;
		}
		i += l;
	}
	if (chars < 1 || chars > max_chars) {
		snprintf(why, whylen, "expected 1..%zu characters, got %zu", max_chars, chars);
		return -1;
	}
	return 0;
}
