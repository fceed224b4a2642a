/* kvlines.c - see kvlines.h. */
#include "base/kvlines.h"

#include <string.h>

#include "base/err.h"

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

void kvlines_init(struct kvlines *r, char *text, size_t len, const char *path, size_t line_max,
		  unsigned flags)
{
	r->p = text;
	r->end = text + len;
	r->path = path;
	r->line_max = line_max;
	r->flags = flags;
	r->lineno = 0;
}

int kvlines_next(struct kvlines *r, char **key, char **value, char *err, size_t errlen)
{
	while (r->p && r->p < r->end) {
		char *line = r->p;
		r->lineno++;
		char *nl = memchr(line, '\n', (size_t)(r->end - line));
		char *eol = nl ? nl : r->end;
		r->p = nl ? nl + 1 : r->end;
		if ((size_t)(eol - line) > r->line_max - 1) {
			r->p = NULL;
			return fp_errf(FP_EINVAL, err, errlen, "%s:%u: line longer than %zu bytes",
				       r->path, r->lineno, r->line_max - 1);
		}
		if (memchr(line, 0, (size_t)(eol - line))) {
			r->p = NULL;
			return fp_errf(FP_EINVAL, err, errlen, "%s:%u: line holds a NUL byte",
				       r->path, r->lineno);
		}
		*eol = 0;
		if (r->flags & KVLINES_INLINE_COMMENTS) {
			char *hash = strchr(line, '#');
			if (hash) {
				*hash = 0;
				eol = hash;
			}
		}
		while (eol > line && is_blank(eol[-1]))
			*--eol = 0;
		while (is_blank(*line))
			line++;
		if (!*line || *line == '#')
			continue;
		char *p = line;
		while (*p && !is_blank(*p))
			p++;
		if (*p)
			*p++ = 0;
		while (is_blank(*p))
			p++;
		*key = line;
		*value = p;
		return 1;
	}
	return 0;
}
