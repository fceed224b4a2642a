/* log.c - the process-wide logger (see log.h): the format string of a call is walked token by
 * token to split msg from key=value fields, each printf conversion is formatted on its own (so
 * its output is one value, whatever it holds), and the line is written as logfmt or JSON. */
#include "base/log.h"

#include "base/alloc.h"
#include "base/buf.h"

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>

static _Atomic enum log_level g_min = LOG_LVL_INFO; /* SIGHUP reload sets it while others log */
static FILE *g_sink;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static _Atomic enum log_format g_fmt = LOG_FMT_LOGFMT; /* as g_min: set while others may log */

void log_init(enum log_level min, FILE *sink)
{
	g_min = min;
	g_sink = sink;
}

enum log_level log_level_get(void)
{
	return g_min;
}

int log_level_parse(const char *s)
{
	static const char *names[] = {"debug", "info", "warn", "error", "off"};
	for (int i = 0; i < 5; i++)
		if (s && strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

void log_format_set(enum log_format f)
{
	g_fmt = f;
}

enum log_format log_format_get(void)
{
	return g_fmt;
}

int log_format_parse(const char *s)
{
	if (s && strcmp(s, "logfmt") == 0)
		return LOG_FMT_LOGFMT;
	if (s && strcmp(s, "json") == 0)
		return LOG_FMT_JSON;
	return -1;
}

/* ------------------------------------------------------------------ rendering the call */

#define LOG_MAX_TOKENS 64

struct log_tok {
	const char *key; /* into the format string; NULL for a msg token */
	size_t klen;
	size_t off, len; /* the rendered text in render.text */
};

struct render {
	char text[LOG_LINE_MAX];
	size_t n;
	int truncated;
	size_t lit_tail; /* trailing bytes of text that are literal ',', ';' or ':' */
	struct log_tok tok[LOG_MAX_TOKENS];
	size_t ntok;
};

static void put_lit(struct render *r, char c)
{
	if (r->n + 1 >= sizeof(r->text)) {
		r->truncated = 1;
		return;
	}
	r->text[r->n++] = c;
	r->lit_tail = (c == ',' || c == ';' || c == ':') ? r->lit_tail + 1 : 0;
}

static int is_key_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_key_char(char c)
{
	return is_key_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* Length of the literal key at p when p starts "key=", else 0. */
static size_t key_at(const char *p)
{
	if (!is_key_start(*p))
		return 0;
	size_t k = 1;
	while (is_key_char(p[k]))
		k++;
	return p[k] == '=' ? k : 0;
}

enum len_mod {
	LM_NONE,
	LM_HH,
	LM_H,
	LM_L,
	LM_LL,
	LM_J,
	LM_Z,
	LM_T,
	LM_BIGL
};

/* The format string of one conversion is built here from the caller's (printf-checked) format,
 * with '*' widths made literal, so -Wformat-nonliteral does not apply. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void put_conv_out(struct render *r, int w)
{
	size_t room = sizeof(r->text) - r->n;
	if (w < 0)
		return;
	if ((size_t)w >= room) {
		r->truncated = 1;
		w = (int)room - 1;
	}
	r->n += (size_t)w;
	r->lit_tail = 0;
}

/* Formats the conversion at p ('%') with its argument(s) from ap; returns the format position
 * after it. */
static const char *put_conv(struct render *r, const char *p, va_list *ap)
{
	if (p[1] == '%') {
		put_lit(r, '%');
		return p + 2;
	}
	char spec[64];
	size_t s = 0;
	spec[s++] = *p++;
	while (*p && strchr("-+ #0'", *p) && s < 16)
		spec[s++] = *p++;
	if (*p == '*') {
		s += (size_t)snprintf(spec + s, sizeof(spec) - s, "%d", va_arg(*ap, int));
		p++;
	} else {
		while (*p >= '0' && *p <= '9' && s < 30)
			spec[s++] = *p++;
	}
	if (*p == '.') {
		p++;
		if (*p == '*') {
			int prec = va_arg(*ap, int);
			if (prec >= 0)
				s += (size_t)snprintf(spec + s, sizeof(spec) - s, ".%d", prec);
			p++;
		} else {
			spec[s++] = '.';
			while (*p >= '0' && *p <= '9' && s < 46)
				spec[s++] = *p++;
		}
	}
	enum len_mod lm = LM_NONE;
	if (p[0] == 'h' && p[1] == 'h')
		lm = LM_HH, spec[s++] = *p++, spec[s++] = *p++;
	else if (p[0] == 'l' && p[1] == 'l')
		lm = LM_LL, spec[s++] = *p++, spec[s++] = *p++;
	else if (*p == 'h' || *p == 'l' || *p == 'j' || *p == 'z' || *p == 't' || *p == 'L') {
		static const char mods[] = "hljztL";
		static const enum len_mod lms[] = {LM_H, LM_L, LM_J, LM_Z, LM_T, LM_BIGL};
		lm = lms[strchr(mods, *p) - mods];
		spec[s++] = *p++;
	}
	char c = *p;
	if (!c) {
		spec[s] = '\0';
		for (size_t i = 0; i < s; i++)
			put_lit(r, spec[i]);
		return p;
	}
	p++;
	spec[s++] = c;
	spec[s] = '\0';
	char *out = r->text + r->n;
	size_t room = sizeof(r->text) - r->n;
	switch (c) {
	case 'd':
	case 'i':
		switch (lm) {
		case LM_L: put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, long))); break;
		case LM_LL:
			put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, long long)));
			break;
		case LM_J: put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, intmax_t))); break;
		case LM_Z: put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, ssize_t))); break;
		case LM_T:
			put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, ptrdiff_t)));
			break;
		default: put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, int))); break;
		}
		break;
	case 'o':
	case 'u':
	case 'x':
	case 'X':
		switch (lm) {
		case LM_L:
			put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, unsigned long)));
			break;
		case LM_LL:
			put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, unsigned long long)));
			break;
		case LM_J:
			put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, uintmax_t)));
			break;
		case LM_Z: put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, size_t))); break;
		case LM_T:
			put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, ptrdiff_t)));
			break;
		default: put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, unsigned))); break;
		}
		break;
	case 'c': put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, int))); break;
	case 's': {
		const char *v = va_arg(*ap, const char *);
		put_conv_out(r, snprintf(out, room, spec, v ? v : "(null)"));
		break;
	}
	case 'p': put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, void *))); break;
	case 'e':
	case 'E':
	case 'f':
	case 'F':
	case 'g':
	case 'G':
	case 'a':
	case 'A':
		if (lm == LM_BIGL)
			put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, long double)));
		else
			put_conv_out(r, snprintf(out, room, spec, va_arg(*ap, double)));
		break;
	case 'n': (void)va_arg(*ap, void *); break;
	default:
		for (size_t i = 0; i < s; i++)
			put_lit(r, spec[i]);
		break;
	}
	return p;
}
#pragma GCC diagnostic pop

/* Walks fmt: whitespace-separated tokens, each a field ("key=value", "key=\"value\"") or a
 * piece of msg; conversions formatted whole from ap. */
static void render(struct render *r, const char *fmt, va_list *ap)
{
	const char *p = fmt;
	while (*p) {
		while (is_space(*p))
			p++;
		if (!*p)
			break;
		struct log_tok t = {0};
		size_t k = key_at(p);
		int quoted = 0;
		if (k) {
			t.key = p;
			t.klen = k;
			p += k + 1;
			if (*p == '"') {
				quoted = 1;
				p++;
			}
		}
		t.off = r->n;
		r->lit_tail = 0;
		while (*p) {
			if (quoted && *p == '"') {
				p++;
				while (*p &&
				       !is_space(*p)) /* punctuation after the closing quote */
					p++;
				break;
			}
			if (!quoted && is_space(*p))
				break;
			if (*p == '%')
				p = put_conv(r, p, ap);
			else
				put_lit(r, *p++);
		}
		t.len = r->n - t.off;
		if (t.key && !quoted && r->lit_tail <= t.len)
			t.len -= r->lit_tail;
		if (r->ntok < LOG_MAX_TOKENS)
			r->tok[r->ntok++] = t;
		else
			r->truncated = 1;
	}
}

/* ------------------------------------------------------------------ writing the line */

/* Length of the well-formed UTF-8 sequence at s (RFC 3629 section 4: no overlongs, no
 * surrogates, at most U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	if (s[0] < 0x80)
		return 1;
	size_t len;
	unsigned lo = 0x80, hi = 0xbf;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* Copies v[0..n) to b, every byte outside a well-formed UTF-8 sequence as '?'. */
static void put_utf8(struct buf *b, const char *v, size_t n)
{
	const unsigned char *u = (const unsigned char *)v;
	for (size_t i = 0; i < n;) {
		size_t l = utf8_seq(u + i, n - i);
		if (l)
			buf_append(b, v + i, l);
		else
			buf_append(b, "?", 1);
		i += l ? l : 1;
	}
}

/* logfmt value: bare when it has no byte <= ' ', '=', '"', '\' or DEL and is not empty; else
 * quoted, with \" \\ \n \r \t and \u00XX for other control bytes (go-logfmt's rules, plus
 * backslash quoted so a reader never has to guess). */
static void put_logfmt_value(struct buf *b, const char *v, size_t n)
{
	int quote = n == 0;
	for (size_t i = 0; i < n && !quote; i++) {
		unsigned char c = (unsigned char)v[i];
		quote = c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f;
	}
	if (!quote) {
		buf_append(b, v, n);
		return;
	}
	buf_append(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		char esc[8];
		switch (c) {
		case '"': buf_append(b, "\\\"", 2); break;
		case '\\': buf_append(b, "\\\\", 2); break;
		case '\n': buf_append(b, "\\n", 2); break;
		case '\r': buf_append(b, "\\r", 2); break;
		case '\t': buf_append(b, "\\t", 2); break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				buf_append(b, esc, 6);
			} else {
				buf_append(b, v + i, 1);
			}
		}
	}
	buf_append(b, "\"", 1);
}

/* The key of token i, with a "_N" suffix when it is ts/level/msg or repeats an earlier one. */
static void token_key(const struct render *r, size_t i, char *key, size_t keylen)
{
	const struct log_tok *t = &r->tok[i];
	int clash = (t->klen == 2 && memcmp(t->key, "ts", 2) == 0) ||
		    (t->klen == 5 && memcmp(t->key, "level", 5) == 0) ||
		    (t->klen == 3 && memcmp(t->key, "msg", 3) == 0);
	int nth = clash ? 1 : 0;
	for (size_t j = 0; j < i; j++)
		if (r->tok[j].key && r->tok[j].klen == t->klen &&
		    memcmp(r->tok[j].key, t->key, t->klen) == 0)
			nth++;
	if (nth)
		snprintf(key, keylen, "%.*s_%d", (int)t->klen, t->key, nth + 1);
	else
		snprintf(key, keylen, "%.*s", (int)t->klen, t->key);
}

char *log_vformat_line(enum log_format f, enum log_level lvl, int64_t unix_ms, const char *fmt,
		       va_list ap)
{
	static const char *lv[] = {"debug", "info", "warn", "error"};
	struct render *r = xcalloc(1, sizeof(*r));
	va_list aq;
	va_copy(aq, ap);
	render(r, fmt ? fmt : "", &aq);
	va_end(aq);

	char ts[40];
	struct tm tm;
	time_t sec = (time_t)(unix_ms / 1000);
	gmtime_r(&sec, &tm);
	size_t tl = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + tl, sizeof(ts) - tl, ".%03dZ", (int)(unix_ms % 1000));

	/* msg: the non-field tokens, one space apart, without a trailing ':' */
	struct buf msg, val, out;
	buf_init(&msg, 0);
	buf_init(&val, 0);
	buf_init(&out, 0);
	for (size_t i = 0; i < r->ntok; i++) {
		if (r->tok[i].key)
			continue;
		if (msg.len)
			buf_append(&msg, " ", 1);
		put_utf8(&msg, r->text + r->tok[i].off, r->tok[i].len);
	}
	while (msg.len && (msg.data[msg.len - 1] == ':' || msg.data[msg.len - 1] == ' '))
		msg.data[--msg.len] = '\0';
	const char *level = lvl >= LOG_LVL_DEBUG && lvl < LOG_LVL_OFF ? lv[lvl] : "info";
	char key[96];

	if (f == LOG_FMT_JSON) {
		json_t *o = json_object();
		json_object_set_new(o, "ts", json_string(ts));
		json_object_set_new(o, "level", json_string(level));
		json_object_set_new(o, "msg", json_stringn(msg.data ? msg.data : "", msg.len));
		for (size_t i = 0; i < r->ntok; i++) {
			if (!r->tok[i].key)
				continue;
			token_key(r, i, key, sizeof(key));
			buf_reset(&val);
			put_utf8(&val, r->text + r->tok[i].off, r->tok[i].len);
			json_object_set_new(o, key,
					    json_stringn(val.data ? val.data : "", val.len));
		}
		if (r->truncated)
			json_object_set_new(o, "log_truncated", json_string("1"));
		char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(o);
		buf_puts(&out, s ? s : "{}");
		free(s);
	} else {
		buf_puts(&out, "ts=");
		buf_puts(&out, ts);
		buf_puts(&out, " level=");
		buf_puts(&out, level);
		buf_puts(&out, " msg=");
		put_logfmt_value(&out, msg.data ? msg.data : "", msg.len);
		for (size_t i = 0; i < r->ntok; i++) {
			if (!r->tok[i].key)
				continue;
			token_key(r, i, key, sizeof(key));
			buf_reset(&val);
			put_utf8(&val, r->text + r->tok[i].off, r->tok[i].len);
			buf_append(&out, " ", 1);
			buf_puts(&out, key);
			buf_append(&out, "=", 1);
			put_logfmt_value(&out, val.data ? val.data : "", val.len);
		}
		if (r->truncated)
			buf_puts(&out, " log_truncated=1");
	}
	buf_release(&msg);
	buf_release(&val);
	free(r);
	size_t len;
	return buf_detach(&out, &len);
}

char *log_format_line(enum log_format f, enum log_level lvl, int64_t unix_ms, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = log_vformat_line(f, lvl, unix_ms, fmt, ap);
	va_end(ap);
	return s;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	if (lvl < g_min || lvl >= LOG_LVL_OFF)
		return;
	struct timeval tv;
	gettimeofday(&tv, NULL);
	va_list ap;
	va_start(ap, fmt);
	char *line = log_vformat_line(g_fmt, lvl, (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000,
				      fmt, ap);
	va_end(ap);
	FILE *out = g_sink ? g_sink : stderr;
	pthread_mutex_lock(&g_mu);
	fputs(line, out);
	fputc('\n', out);
	fflush(out);
	pthread_mutex_unlock(&g_mu);
	free(line);
}
