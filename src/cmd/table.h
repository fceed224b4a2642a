/* table.h - column-aligned tables for people, the human face of `fleetplane <noun> list`
 * (DESIGN.md "One binary": tables for people, -o json for scripts). Columns are separated by
 * three spaces, headers are upper case, the last column is never padded, empty cells print as
 * "-". A cell longer than its column's maximum is cut to the maximum with "…" as its last
 * character, unless the table is wide (-o wide). Control bytes from the server are replaced
 * so a hostile document cannot move the cursor. Widths count UTF-8 code points. Also holds the
 * kubectl-style AGE formatting. */
#ifndef FP_CMD_TABLE_H
#define FP_CMD_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TABLE_MAX_COLS 16

struct table {
	size_t ncols;
	const char *hdr[TABLE_MAX_COLS]; /* borrowed, usually string literals */
	size_t maxw[TABLE_MAX_COLS];     /* display width cap per column; 0 = none */
	char **cells;                    /* owned, row-major, nrows * ncols */
	size_t ncells, alloc;
	int wide;      /* 1 = never truncate */
	int no_header; /* 1 = print the rows only (--no-headers) */
};

/* Starts an empty table; wide 1 disables truncation. */
void table_init(struct table *t, int wide);
/* Adds a column (before any cell) with a header and a maximum width in code points (0 = no
 * cap; a cap below 2 is raised to 2). More than TABLE_MAX_COLS columns is a BUG. */
void table_col(struct table *t, const char *hdr, size_t maxw);
/* One column of a table given as data: header and maximum width as for table_col. Arrays of
 * them end with {NULL, 0}. */
struct table_colspec {
	const char *hdr;
	size_t maxw;
};
/* Adds the columns of cols (NULL-terminated; cols NULL adds none) with table_col. */
void table_cols(struct table *t, const struct table_colspec *cols);
/* Adds the next cell, filling rows left to right. s is copied, cleaned and truncated;
 * NULL or "" becomes "-". */
void table_cell(struct table *t, const char *s);
void table_cellf(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Number of complete rows so far. */
size_t table_rows(const struct table *t);
/* Prints the header and rows to f. A table with no rows prints only the header. */
void table_print(const struct table *t, FILE *f);
/* Same, with indent spaces before every line (for tables nested in `get` output). */
void table_print_indent(const struct table *t, FILE *f, size_t indent);
void table_release(struct table *t);

/* Display width of a UTF-8 string in code points. */
size_t table_width(const char *s);
/* Returns a malloc'd copy of s with \t \n \r turned into spaces and every other character that
 * must not reach a terminal as it is - C0 and C1 controls, DEL, bidi controls (jsonx_cp_unsafe)
 * - and every byte that is not well-formed UTF-8 into '?', cut to maxw characters ending in
 * "…" when longer (maxw 0 = no cut). */
char *table_clean(const char *s, size_t maxw);

/* Writes how long ago then_ms was at now_ms, kubectl style, into out: "45s" under a minute,
 * "3m" under an hour, "2h" under a day, "4d" under 365 days, then "2y". Times in the future
 * count as "0s"; then_ms <= 0 (unknown) gives "-". */
void table_age(int64_t now_ms, int64_t then_ms, char *out, size_t outlen);

#endif
