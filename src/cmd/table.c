/* table.c - aligned table output and AGE formatting for the client subcommands (see table.h). */
#include "cmd/table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/jsonx.h"
#include "base/err.h"

#include "base/banned.h"

void table_init(struct table *t, int wide)
{
	memset(t, 0, sizeof(*t));
	t->wide = wide;
}

void table_col(struct table *t, const char *hdr, size_t maxw)
{
	BUG_ON(t->ncols >= TABLE_MAX_COLS || t->ncells > 0);
	t->hdr[t->ncols] = hdr;
	t->maxw[t->ncols] = (maxw && maxw < 2) ? 2 : maxw;
	t->ncols++;
}

void table_cols(struct table *t, const struct table_colspec *cols)
{
	for (; cols && cols->hdr; cols++)
		table_col(t, cols->hdr, cols->maxw);
}

size_t table_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

char *table_clean(const char *s, size_t maxw)
{
	size_t n = strlen(s);
	/* each input byte becomes at most one output byte ('?' for a bad or unsafe one), and a
	 * character at most its own bytes; plus the ellipsis and the NUL */
	char *out = xmalloc(n + 4);
	size_t j = 0, w = 0, total = 0;
	for (size_t i = 0; i < n; total++) {
		uint32_t cp;
		size_t l = jsonx_utf8_next(s + i, n - i, &cp);
		i += l ? l : 1;
	}
	for (size_t i = 0; i < n;) {
		if (maxw && total > maxw && w == maxw - 1) {
			memcpy(out + j, "\xE2\x80\xA6", 3); /* U+2026 HORIZONTAL ELLIPSIS */
			j += 3;
			break;
		}
		uint32_t cp = 0;
		size_t l = jsonx_utf8_next(s + i, n - i, &cp);
		if (l && (cp == '\t' || cp == '\n' || cp == '\r'))
			out[j++] = ' ';
		else if (!l || jsonx_cp_unsafe(cp))
			out[j++] = '?'; /* not UTF-8, a control, a C1 control or a bidi control */
		else
			memcpy(out + j, s + i, l), j += l;
		i += l ? l : 1;
		w++;
	}
	out[j] = 0;
	return out;
}

void table_cell(struct table *t, const char *s)
{
	BUG_ON(t->ncols == 0);
	size_t col = t->ncells % t->ncols;
	ALLOC_GROW(t->cells, t->ncells + 1, t->alloc);
	t->cells[t->ncells++] = table_clean((s && *s) ? s : "-", t->wide ? 0 : t->maxw[col]);
}

void table_cellf(struct table *t, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	table_cell(t, tmp);
}

size_t table_rows(const struct table *t)
{
	return t->ncols ? t->ncells / t->ncols : 0;
}

static void tbl_row(const struct table *t, FILE *f, const char *const *cells, const size_t *w,
		    size_t indent)
{
	for (size_t i = 0; i < indent; i++)
		fputc(' ', f);
	for (size_t c = 0; c < t->ncols; c++) {
		fputs(cells[c], f);
		if (c + 1 < t->ncols) {
			size_t pad = w[c] - table_width(cells[c]) + 3;
			for (size_t i = 0; i < pad; i++)
				fputc(' ', f);
		}
	}
	fputc('\n', f);
}

void table_print(const struct table *t, FILE *f)
{
	table_print_indent(t, f, 0);
}

void table_print_indent(const struct table *t, FILE *f, size_t indent)
{
	size_t w[TABLE_MAX_COLS] = {0};
	size_t rows = table_rows(t);
	for (size_t c = 0; c < t->ncols; c++) {
		w[c] = table_width(t->hdr[c]);
		for (size_t r = 0; r < rows; r++) {
			size_t cw = table_width(t->cells[r * t->ncols + c]);
			if (cw > w[c])
				w[c] = cw;
		}
	}
	if (!t->no_header)
		tbl_row(t, f, t->hdr, w, indent);
	for (size_t r = 0; r < rows; r++)
		tbl_row(t, f, (const char *const *)&t->cells[r * t->ncols], w, indent);
}

void table_release(struct table *t)
{
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

void table_age(int64_t now_ms, int64_t then_ms, char *out, size_t outlen)
{
	if (then_ms <= 0) {
		snprintf(out, outlen, "-");
		return;
	}
	long long s = (long long)((now_ms - then_ms) / 1000);
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(out, outlen, "%llds", s);
	else if (s < 3600)
		snprintf(out, outlen, "%lldm", s / 60);
	else if (s < 86400)
		snprintf(out, outlen, "%lldh", s / 3600);
	else if (s < 365LL * 86400)
		snprintf(out, outlen, "%lldd", s / 86400);
	else
		snprintf(out, outlen, "%lldy", s / (365LL * 86400));
}
