/* jsontext.c - one-pass JSON copy with members dropped or inserted (see jsontext.h). A
 * recursive descent over the text (depth bounded) that appends each token to the output as it
 * validates it; which edit paths are still matching at each object is a bit mask, one bit per
 * path, so the edit costs a few compares per member of the objects on a path and nothing
 * elsewhere. */
#include "base/jsontext.h"

#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "base/banned.h"

struct jt_path {
	const char *comp[JSONTEXT_MAX_COMPONENTS];
	size_t len[JSONTEXT_MAX_COMPONENTS];
	int n;
};

struct jt {
	const char *start, *p, *end;
	struct buf *out;
	/* paths[0..ndrop) are drop paths; paths[ndrop] the insert path when has_insert */
	struct jt_path paths[JSONTEXT_MAX_PATHS + 1];
	int ndrop;
	int has_insert;
	const struct jsontext_edit *ed;
	size_t insert_len;
	/* Output is gathered as runs of the input: compact input is copied in a few spans. */
	const char *run, *run_end;
	int mute;   /* > 0 inside a dropped member: nothing is emitted */
	int spaced; /* whitespace was seen between tokens (check_value's fast path is off) */
	char *err;
	size_t errlen;
};

static int jt_fail(struct jt *t, const char *why)
{
	return fp_errf(FP_EPARSE, t->err, t->errlen, "offset %zu: %s", (size_t)(t->p - t->start),
		       why);
}

static int too_big(struct jt *t)
{
	return fp_errf(FP_ETOOBIG, t->err, t->errlen, "output larger than %zu bytes", t->out->max);
}

/* Appends the pending run of input bytes to the output. */
static int flush(struct jt *t)
{
	const char *s = t->run;
	size_t n = s ? (size_t)(t->run_end - s) : 0;
	t->run = t->run_end = NULL;
	if (n && buf_append(t->out, s, n) < 0)
		return too_big(t);
	return 0;
}

/* Emits n bytes of the input at s: extends the pending run when s follows it. */
static inline int emit_in(struct jt *t, const char *s, size_t n)
{
	if (t->mute)
		return 0;
	if (t->run && t->run_end == s) {
		t->run_end += n;
		return 0;
	}
	int rc = flush(t);
	t->run = s;
	t->run_end = s + n;
	return rc;
}

/* Emits bytes that are not in the input (the inserted member, a separator for it). */
static int emit_lit(struct jt *t, const char *s, size_t n)
{
	if (t->mute)
		return 0;
	int rc = flush(t);
	if (rc == 0 && buf_append(t->out, s, n) < 0)
		rc = too_big(t);
	return rc;
}

static void skip_ws(struct jt *t)
{
	while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r'))
		t->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The code unit of the \\uXXXX escape at p (p[0] == '\\'), or -1 when p does not start one. */
static int uescape(const char *p, const char *end)
{
	if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
		return -1;
	int v = 0;
	for (int i = 2; i < 6; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* 1 for the bytes a string holds as they are: printable ASCII but '"' and '\\'. */
static inline int plain(unsigned char c)
{
	return ((unsigned)(c - 0x20) < 0x60) & (c != '"') & (c != '\\');
}

/* Scans the string at t->p (which is '"') to just past its closing quote, checking escapes,
 * control characters and UTF-8; *escaped says whether it held a backslash. Copies nothing. */
static int scan_string(struct jt *t, int *escaped)
{
	*escaped = 0;
	t->p++;
	while (t->p < t->end) {
		/* eight bytes at a time while none is special (SWAR, "Hacker's Delight" 6-1:
		 * a byte of x is zero iff (x - 0x01..) & ~x & 0x80.. has its high bit) */
		const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
		while (t->end - t->p >= 8) {
			uint64_t x;
			memcpy(&x, t->p, 8);
			uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
			uint64_t special = ((q - ones) & ~q) | ((b - ones) & ~b) |
					   ((x - ones * 0x20) & ~x) | x;
			if (special & highs)
				break;
			t->p += 8;
		}
		while (t->p < t->end && plain((unsigned char)*t->p))
			t->p++;
		if (t->p >= t->end)
			break;
		unsigned char c = (unsigned char)*t->p;
		if (c == '"') {
			t->p++;
			return 0;
		}
		if (c < 0x20)
			return jt_fail(t, "control character in a string");
		if (c == '\\') {
			*escaped = 1;
			if (t->end - t->p < 2)
				return jt_fail(t, "unterminated string");
			char e = t->p[1];
			if (e == 'u') {
				int u = uescape(t->p, t->end);
				if (u < 0)
					return jt_fail(t, "bad \\u escape");
				/* UTF-16 surrogates only as a pair (RFC 8259 section 7), as jansson
				 * reads them: a lone one is refused */
				if (u >= 0xDC00 && u <= 0xDFFF)
					return jt_fail(t, "lone low surrogate");
				if (u >= 0xD800 && u <= 0xDBFF) {
					int lo = uescape(t->p + 6, t->end);
					if (lo < 0xDC00 || lo > 0xDFFF)
						return jt_fail(
							t, "high surrogate without its low half");
					t->p += 6;
				}
				t->p += 6;
			} else if (strchr("\"\\/bfnrt", e) && e) {
				t->p += 2;
			} else {
				return jt_fail(t, "bad escape");
			}
			continue;
		}
		if (c < 0x80) {
			t->p++;
			continue;
		}
		uint32_t cp;
		size_t n = jsonx_utf8_next(t->p, (size_t)(t->end - t->p), &cp);
		if (n == 0)
			return jt_fail(t, "invalid UTF-8 in a string");
		t->p += n;
	}
	return jt_fail(t, "unterminated string");
}

/* Trusted text only (jsontext.h): moves t->p past the string at t->p (which is '"') looking
 * only for its closing quote; *escaped as scan_string. Checks nothing but the end of input. */
static int skip_string(struct jt *t, int *escaped)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	*escaped = 0;
	t->p++;
	for (;;) {
		while (t->end - t->p >= 8) {
			uint64_t x;
			memcpy(&x, t->p, 8);
			uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
			uint64_t m = (((q - ones) & ~q) | ((b - ones) & ~b)) & highs;
			if (m) {
				/* the lowest flagged byte is exact (only bytes above a match can be
				 * flagged falsely) */
				t->p += (unsigned)__builtin_ctzll(m) >> 3;
				break;
			}
			t->p += 8;
		}
		while (t->p < t->end && *t->p != '"' && *t->p != '\\')
			t->p++;
		if (t->p >= t->end)
			return jt_fail(t, "unterminated string");
		if (*t->p == '"') {
			t->p++;
			return 0;
		}
		*escaped = 1;
		t->p += 2; /* the backslash and the byte it escapes */
		if (t->p > t->end)
			return jt_fail(t, "unterminated string");
	}
}

/* Trusted text only: moves t->p past the value at t->p by its brackets and quotes alone. */
static int skip_value(struct jt *t)
{
	int depth = 0, rc, escaped;
	do {
		if (t->p >= t->end)
			return jt_fail(t, "unterminated value");
		switch (*t->p) {
		case '"':
			if ((rc = skip_string(t, &escaped)) < 0)
				return rc;
			break;
		case '{':
		case '[':
			if (++depth > JSONTEXT_MAX_DEPTH)
				return jt_fail(t, "nested too deeply");
			t->p++;
			break;
		case '}':
		case ']':
			if (--depth < 0)
				return jt_fail(t, "unexpected character");
			t->p++;
			break;
		case ',':
		case ':':
		case ' ':
		case '\t':
		case '\n':
		case '\r':
			if (depth == 0)
				return jt_fail(t, "unexpected character");
			t->p++;
			break;
		default: /* a number or literal: up to the next delimiter */
			while (t->p < t->end && !strchr(",:]} \t\n\r\"{[", *t->p))
				t->p++;
		}
	} while (depth > 0);
	return 0;
}

static int copy_string(struct jt *t)
{
	const char *s = t->p;
	int escaped;
	int rc = t->ed->trusted ? skip_string(t, &escaped) : scan_string(t, &escaped);
	if (rc < 0)
		return rc;
	return emit_in(t, s, (size_t)(t->p - s));
}

static int digits(struct jt *t)
{
	const char *s = t->p;
	while (t->p < t->end && *t->p >= '0' && *t->p <= '9')
		t->p++;
	return t->p > s ? 0 : jt_fail(t, "expected a digit");
}

/* RFC 8259 section 6: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(struct jt *t)
{
	if (*t->p == '-')
		t->p++;
	if (t->p < t->end && *t->p == '0') {
		t->p++;
	} else if (t->p < t->end && *t->p >= '1' && *t->p <= '9') {
		(void)digits(t); /* at least the one just seen */
	} else {
		return jt_fail(t, "bad number");
	}
	if (t->p < t->end && *t->p == '.') {
		t->p++;
		int rc = digits(t);
		if (rc < 0)
			return rc;
	}
	if (t->p < t->end && (*t->p == 'e' || *t->p == 'E')) {
		t->p++;
		if (t->p < t->end && (*t->p == '+' || *t->p == '-'))
			t->p++;
		int rc = digits(t);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int copy_number(struct jt *t)
{
	const char *s = t->p;
	int rc = scan_number(t);
	return rc < 0 ? rc : emit_in(t, s, (size_t)(t->p - s));
}

static int scan_literal(struct jt *t, const char *lit, size_t n)
{
	if ((size_t)(t->end - t->p) < n || memcmp(t->p, lit, n) != 0)
		return jt_fail(t, "unexpected character");
	t->p += n;
	return 0;
}

static int copy_literal(struct jt *t, const char *lit, size_t n)
{
	int rc = scan_literal(t, lit, n);
	return rc < 0 ? rc : emit_in(t, t->p - n, n);
}

/* Skips whitespace; sets t->spaced when there was some. */
static inline void skip_ws_seen(struct jt *t)
{
	const char *s = t->p;
	skip_ws(t);
	t->spaced |= t->p != s;
}

/* Checks the value at t->p as copy_value would (the same errors at the same offsets) and moves
 * past it without emitting anything: the fast path for a value no edit path runs into, which
 * is then emitted as one run (copy_value). */
static int check_value(struct jt *t, int depth)
{
	int rc, escaped;
	skip_ws_seen(t);
	if (t->p >= t->end)
		return jt_fail(t, "expected a value");
	switch (*t->p) {
	case '{':
		if (depth >= JSONTEXT_MAX_DEPTH)
			return jt_fail(t, "nested too deeply");
		t->p++;
		skip_ws_seen(t);
		if (t->p < t->end && *t->p == '}') {
			t->p++;
			return 0;
		}
		for (;;) {
			if (t->p >= t->end || *t->p != '"')
				return jt_fail(t, "expected a member name");
			if ((rc = scan_string(t, &escaped)) < 0)
				return rc;
			skip_ws_seen(t);
			if (t->p >= t->end || *t->p != ':')
				return jt_fail(t, "expected : after a member name");
			t->p++;
			if ((rc = check_value(t, depth + 1)) < 0)
				return rc;
			skip_ws_seen(t);
			if (t->p >= t->end)
				return jt_fail(t, "unterminated object");
			if (*t->p == '}') {
				t->p++;
				return 0;
			}
			if (*t->p != ',')
				return jt_fail(t, "expected , or } in an object");
			t->p++;
			skip_ws_seen(t);
		}
	case '[':
		if (depth >= JSONTEXT_MAX_DEPTH)
			return jt_fail(t, "nested too deeply");
		t->p++;
		skip_ws_seen(t);
		if (t->p < t->end && *t->p == ']') {
			t->p++;
			return 0;
		}
		for (;;) {
			if ((rc = check_value(t, depth + 1)) < 0)
				return rc;
			skip_ws_seen(t);
			if (t->p >= t->end)
				return jt_fail(t, "unterminated array");
			if (*t->p == ']') {
				t->p++;
				return 0;
			}
			if (*t->p != ',')
				return jt_fail(t, "expected , or ] in an array");
			t->p++;
		}
	case '"': return scan_string(t, &escaped);
	case 't': return scan_literal(t, "true", 4);
	case 'f': return scan_literal(t, "false", 5);
	case 'n': return scan_literal(t, "null", 4);
	default:
		if (*t->p == '-' || (*t->p >= '0' && *t->p <= '9'))
			return scan_number(t);
		return jt_fail(t, "unexpected character");
	}
}

static int copy_value(struct jt *t, uint32_t alive, int depth);

static int copy_array(struct jt *t, int depth)
{
	if (depth >= JSONTEXT_MAX_DEPTH)
		return jt_fail(t, "nested too deeply");
	int rc = emit_in(t, t->p++, 1);
	if (rc < 0)
		return rc;
	skip_ws(t);
	if (t->p < t->end && *t->p == ']')
		return emit_in(t, t->p++, 1);
	for (;;) {
		if ((rc = copy_value(t, 0, depth + 1)) < 0)
			return rc;
		skip_ws(t);
		if (t->p >= t->end)
			return jt_fail(t, "unterminated array");
		if (*t->p == ']')
			return emit_in(t, t->p++, 1);
		if (*t->p != ',')
			return jt_fail(t, "expected , or ] in an array");
		if ((rc = emit_in(t, t->p++, 1)) < 0)
			return rc;
	}
}

static int key_in(const char *k, size_t kl, const char *const *list)
{
	for (; list && *list; list++)
		if (strlen(*list) == kl && memcmp(*list, k, kl) == 0)
			return 1;
	return 0;
}

static int emit_insert(struct jt *t, int *first)
{
	int rc;
	if (!*first && (rc = emit_lit(t, ",", 1)) < 0)
		return rc;
	*first = 0;
	return emit_lit(t, t->ed->insert, t->insert_len);
}

/* The trusted top object's members after the last one a path starts with (t->p is at the
 * comma before them): emitted with its closing brace as one run, unread (jsontext.h
 * "trusted"). first: no member was emitted yet, so the comma is left out. */
static int emit_rest(struct jt *t, int first)
{
	const char *e = t->end;
	while (e > t->p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		e--;
	if (e == t->p || e[-1] != '}') {
		t->p = t->end; /* where the checked copy would say so */
		return jt_fail(t, "unterminated object");
	}
	const char *s = t->p + (first ? 1 : 0);
	t->p = t->end;
	return emit_in(t, s, (size_t)(e - s));
}

/* An object whose members sit at path depth `depth` (0 = the top object's members); alive
 * holds the paths whose first `depth` components led here. */
static int copy_object(struct jt *t, uint32_t alive, int depth)
{
	if (depth >= JSONTEXT_MAX_DEPTH)
		return jt_fail(t, "nested too deeply");
	int ins_bit = t->ndrop;
	int target = t->has_insert && (alive & (1u << ins_bit)) && t->paths[ins_bit].n == depth;
	/* paths that go on below this object: their keys must be compared */
	uint32_t deeper = 0;
	for (int i = 0; i <= t->ndrop; i++)
		if ((alive & (1u << i)) && t->paths[i].n > depth)
			deeper |= 1u << i;
	int inserted = !target, first = 1, rc;
	uint32_t seen = 0;        /* paths whose member at this depth was copied */
	const char *comma = NULL; /* the input's comma before this member */
	if ((rc = emit_in(t, t->p++, 1)) < 0)
		return rc;
	skip_ws(t);
	if (t->p < t->end && *t->p == '}') {
		if (!inserted && (rc = emit_insert(t, &first)) < 0)
			return rc;
		return emit_in(t, t->p++, 1);
	}
	for (;;) {
		if (t->p >= t->end || *t->p != '"')
			return jt_fail(t, "expected a member name");
		const char *ks = t->p;
		int escaped;
		if ((rc = t->ed->trusted ? skip_string(t, &escaped) : scan_string(t, &escaped)) < 0)
			return rc;
		const char *k = ks + 1;
		size_t kl = (size_t)(t->p - ks) - 2;
		if (escaped && (deeper || target)) {
			t->p = ks;
			return jt_fail(t, "escaped member name in an edited object");
		}
		skip_ws(t);
		if (t->p >= t->end || *t->p != ':')
			return jt_fail(t, "expected : after a member name");
		const char *colon = t->p++;
		skip_ws(t);
		uint32_t child = 0;
		int drop = -1;
		for (int i = 0; deeper && i <= t->ndrop; i++) {
			const struct jt_path *pa = &t->paths[i];
			if (!(deeper & (1u << i)) || pa->len[depth] != kl ||
			    memcmp(pa->comp[depth], k, kl) != 0)
				continue;
			seen |= 1u << i;
			if (i < t->ndrop && pa->n == depth + 1)
				drop = i;
			else
				child |= 1u << i;
		}
		if (!inserted && !key_in(k, kl, t->ed->insert_after)) {
			if ((rc = emit_insert(t, &first)) < 0)
				return rc;
			inserted = 1;
		}
		if (drop >= 0) {
			const char *v = t->p;
			t->mute++;
			rc = copy_value(t, 0, depth + 1);
			t->mute--;
			if (rc < 0)
				return rc;
			if (t->ed->dropped) {
				struct jsontext_span *sp = &t->ed->dropped[drop];
				*sp = (struct jsontext_span){(size_t)(v - t->start),
							     (size_t)(t->p - v), sp->count + 1};
			}
		} else {
			if (!first && (rc = comma ? emit_in(t, comma, 1) : emit_lit(t, ",", 1)) < 0)
				return rc;
			first = 0;
			if ((rc = emit_in(t, ks, kl + 2)) < 0 || (rc = emit_in(t, colon, 1)) < 0)
				return rc;
			if ((rc = copy_value(t, child, depth + 1)) < 0)
				return rc;
		}
		skip_ws(t);
		if (t->p >= t->end)
			return jt_fail(t, "unterminated object");
		if (*t->p == '}')
			break;
		if (*t->p != ',')
			return jt_fail(t, "expected , or } in an object");
		if (depth == 0 && t->ed->trusted && inserted && !(deeper & ~seen))
			return emit_rest(t, first);
		comma = t->p++;
		skip_ws(t);
	}
	if (!inserted && (rc = emit_insert(t, &first)) < 0)
		return rc;
	return emit_in(t, t->p++, 1);
}

static int copy_value(struct jt *t, uint32_t alive, int depth)
{
	skip_ws(t);
	if (t->p >= t->end)
		return jt_fail(t, "expected a value");
	/* No edit below: check it in one pass and emit it as one run - unless it holds
	 * whitespace, which the copy leaves out token by token (and, once seen, is assumed
	 * everywhere: the fast path is not tried again, so no value is checked twice over). */
	if (!alive && t->ed->trusted) {
		const char *s = t->p;
		int rc = skip_value(t);
		return rc < 0 ? rc : emit_in(t, s, (size_t)(t->p - s));
	}
	if (!alive && !t->spaced && (*t->p == '{' || *t->p == '[')) {
		const char *s = t->p;
		int rc = check_value(t, depth);
		if (rc < 0)
			return rc;
		if (!t->spaced)
			return emit_in(t, s, (size_t)(t->p - s));
		t->p = s;
	}
	switch (*t->p) {
	case '{': return copy_object(t, alive, depth);
	case '[': return copy_array(t, depth);
	case '"': return copy_string(t);
	case 't': return copy_literal(t, "true", 4);
	case 'f': return copy_literal(t, "false", 5);
	case 'n': return copy_literal(t, "null", 4);
	default:
		if (*t->p == '-' || (*t->p >= '0' && *t->p <= '9'))
			return copy_number(t);
		return jt_fail(t, "unexpected character");
	}
}

static int split_path(struct jt *t, const char *path, struct jt_path *out)
{
	out->n = 0;
	if (!*path)
		return 0;
	const char *p = path;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n == 0 || n > 127 || out->n >= JSONTEXT_MAX_COMPONENTS)
			return fp_errf(FP_EINVAL, t->err, t->errlen,
				       "edit path \"%.64s\": 1..%d components of 1..127 bytes",
				       path, JSONTEXT_MAX_COMPONENTS);
		out->comp[out->n] = p;
		out->len[out->n] = n;
		out->n++;
		if (!dot)
			return 0;
		p = dot + 1;
	}
}

int jsontext_rewrite(const char *in, size_t len, const struct jsontext_edit *ed, struct buf *out,
		     char *err, size_t errlen)
{
	static const struct jsontext_edit none;
	struct jt t = {.start = in,
		       .p = in,
		       .end = in + len,
		       .out = out,
		       .err = err,
		       .errlen = errlen,
		       .ed = ed ? ed : &none};
	int rc;
	uint32_t alive = 0;
	for (const char *const *d = t.ed->drop; d && *d; d++) {
		if (t.ndrop >= JSONTEXT_MAX_PATHS)
			return fp_errf(FP_EINVAL, err, errlen, "more than %d drop paths",
				       JSONTEXT_MAX_PATHS);
		if ((rc = split_path(&t, *d, &t.paths[t.ndrop])) < 0)
			return rc;
		if (t.paths[t.ndrop].n == 0)
			return fp_errf(FP_EINVAL, err, errlen, "empty drop path");
		alive |= 1u << t.ndrop;
		t.ndrop++;
	}
	if (t.ed->insert_at && t.ed->insert) {
		if ((rc = split_path(&t, t.ed->insert_at, &t.paths[t.ndrop])) < 0)
			return rc;
		t.has_insert = 1;
		t.insert_len = strlen(t.ed->insert);
		alive |= 1u << t.ndrop;
	}
	if (t.ed->dropped)
		memset(t.ed->dropped, 0, (size_t)t.ndrop * sizeof(*t.ed->dropped));
	size_t keep = out->len;
	if (!in)
		t.end = t.p;
	rc = copy_value(&t, alive, 0);
	if (rc == 0)
		rc = flush(&t);
	if (rc == 0) {
		skip_ws(&t);
		if (t.p != t.end)
			rc = jt_fail(&t, "text after the value");
	}
	if (rc < 0) {
		out->len = keep;
		if (out->data)
			out->data[keep] = 0;
	}
	return rc;
}
