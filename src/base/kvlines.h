/* kvlines.h - the `key value` line format of fleetplane's own small config files (serve's
 * --config, the CLI's contexts file, `agent check`'s agent.conf): one key a line, the key up to
 * the first blank (space or tab), the value the rest of the line without its leading and trailing
 * blanks; blank lines and lines whose first non-blank byte is '#' are skipped. The same reader
 * for every such file so each gets the same bounds and the same errors. */
#ifndef FP_BASE_KVLINES_H
#define FP_BASE_KVLINES_H

#include <stddef.h>

#define KVLINES_INLINE_COMMENTS \
	1u /* a '#' anywhere ends the line (agent.conf; not serve's
				    * file, whose values may hold '#') */

struct kvlines {
	char *p, *end;    /* the rest of the text, borrowed and cut in place */
	const char *path; /* for errors, borrowed */
	size_t line_max;  /* bytes of one line, its newline included */
	unsigned flags;   /* KVLINES_* */
	unsigned lineno;  /* the line kvlines_next returned last (1 = the first) */
};

/* Starts reading text[0 .. len) (not necessarily NUL-terminated; bytes are overwritten: each
 * line's end and the key's end become NUL). path names the file in errors; line_max (>= 2)
 * bounds a line: at most line_max - 1 bytes before its newline. Both are borrowed for the reader's life. */
void kvlines_init(struct kvlines *r, char *text, size_t len, const char *path, size_t line_max,
		  unsigned flags);

/* The next key and value (*key never empty; *value "" when the line has the key alone), both
 * pointing into the text. Returns 1 with a line, 0 at the end of the text, or FP_EINVAL with err
 * "PATH:LINE: line longer than N bytes" or "PATH:LINE: line holds a NUL byte" (reading stops
 * there). r->lineno is the line's number, for the caller's own errors ("PATH:LINE: key: ..."). */
int kvlines_next(struct kvlines *r, char **key, char **value, char *err, size_t errlen);

#endif
