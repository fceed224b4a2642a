/* cli_fmt.h - how the client's list verbs print and order what they read (issue 15, the CLI):
 * kubectl's -o yaml and -o name, --no-headers and --sort-by (a JSONPath-like field path), the
 * --since times of `event list`, and the throttle of the `node list --watch` bar. Pure where it
 * can be (time is passed in) so tests/unit/test_cli.c checks it without a clock.
 *
 * YAML comes from libyaml's emitter (Debian libyaml-dev, pkg-config yaml-0.1): it writes
 * the indentation, escapes and line folding; this file only decides each scalar's style. A
 * JSON string is written plain only when it is a "safe" scalar (cli_yaml_plain_ok), otherwise
 * double-quoted, so no string ever reads back as a number, a boolean, null or a timestamp under
 * YAML 1.1 or 1.2. */
#ifndef FP_CMD_CLI_FMT_H
#define FP_CMD_CLI_FMT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/cli_common.h"
#include "cmd/client.h"

/* getopt_long values of the list flags (beyond any character). */
#define CLI_OPT_NO_HEADERS 0x101
#define CLI_OPT_SORT_BY 0x102

/* The list flags every list verb takes, for its option table (before CLI_OPTS_END). */
#define CLI_LIST_OPTS                                               \
	{"no-headers", no_argument, NULL, CLI_OPT_NO_HEADERS},      \
	{                                                           \
		"sort-by", required_argument, NULL, CLI_OPT_SORT_BY \
	}

#define CLI_SORT_MAX_PATH 256 /* longest --sort-by path, bytes */

/* How a list verb prints: the -o format, --no-headers, --sort-by (NULL: the verb's own order)
 * and the kind -o name writes before the name ("node" gives node/r01n01). */
struct cli_listfmt {
	enum client_output o;
	int no_headers;
	const char *sort_by; /* borrowed from argv */
	const char *kind;
};

/* For the `default:` of a list verb's getopt_long switch: -o with the list formats (table, json,
 * wide, yaml, name), --no-headers, --sort-by (checked with cli_sort_path_ok), then what
 * cli_opt_default does (-h, unknown flags). Returns CLI_GO_ON or the exit code. */
int cli_opt_list(const char *cmd, int ch, char **argv, const char *usage, struct cli_listfmt *f);

/* Checks a --sort-by path: '.' followed by fields separated by '.', each 1..63 characters of
 * [A-Za-z0-9_-], optionally followed by one [N] index (N decimal, at most 6 digits); the whole
 * may be wrapped in kubectl's braces ("{.status.phase}"); at most CLI_SORT_MAX_PATH bytes.
 * Returns 1 when it is one, else 0 with the reason in err ("field 2 is empty"). */
int cli_sort_path_ok(const char *path, char *err, size_t errlen);

/* The value at path (cli_sort_path_ok's syntax; checked) inside doc, borrowed; NULL when some
 * step is missing or of another type. */
const json_t *cli_sort_value(const json_t *doc, const char *path);

/* Sorts items (a JSON array, changed in place) by the value at path, ascending and stable:
 * items without the field first, then null, booleans (false first), numbers by value,
 * strings by bytes (RFC 3339 times sort in time order), then others by their JSON text.
 * Returns 0, or -1 when items is not empty and no item has the field (the caller names the
 * path: kubectl's "couldn't find any field with path"). */
int cli_sort_items(json_t *items, const char *path);

/* 1 when s can be written as a plain YAML scalar that reads back as this string under YAML
 * 1.1 and 1.2: 1..1024 bytes, first a letter or '_', then letters, digits and "_./-", and not a
 * word those schemas read as a boolean or null (true, False, yes, No, on, OFF, y, n, null,
 * ...). Anything else is double-quoted. */
int cli_yaml_plain_ok(const char *s);

/* Writes v as one YAML document (block style; {} and [] for empty containers; object keys in
 * document order) to f with libyaml. Returns 0, or -1 when libyaml failed (nothing is
 * guaranteed written then; the caller says so). */
int cli_yaml_write(const json_t *v, FILE *f);

/* Prints items (a JSON array; sorted in place when f->sort_by) in format f: table (v's columns,
 * without the header line under --no-headers), json and yaml as {"items":[...]}, name as one
 * "<kind>/<metadata.name>" line per item. Returns CLIENT_EXIT_OK, or CLIENT_EXIT_USAGE after
 * "error: --sort-by: no item has the field '<path>'" (nothing printed), CLIENT_EXIT_API when
 * the YAML could not be written. */
int cli_print_list(json_t *items, const struct cli_listfmt *f, const struct cli_view *v);

/* cli_list_print with a cli_listfmt: lists path (following continue, at most max items, 0 =
 * all) and prints with cli_print_list. Returns a client_exit code. */
int cli_list_print_fmt(const char *path, size_t max, const struct cli_listfmt *f,
		       const struct cli_view *v);

/* Parses a --since value: a duration back from now_ms ("90s", "10m", "2h", "7d", "1h30m": one
 * or more <digits><s|m|h|d>, in total 1 s .. 3650 d) or an RFC 3339 date-time with Z or an
 * offset ("2026-11-30T05:00:00Z"). *out_ms is the instant (Unix epoch ms). Returns 0 or -1
 * (*out_ms untouched); the caller names the flag. */
int cli_parse_since(const char *s, int64_t now_ms, int64_t *out_ms);

/* Writes an operation's current step as `op list` shows it into out: "2/5 power_cycle" (the
 * 1-based index of status.step among spec.steps and its name), "done" past the last step, the
 * string when status.step is one, "-" when there is none. */
void cli_op_step_text(const json_t *op, char *out, size_t outlen);

/* Writes what a --wait waits on into out, for people: "waiting 12s for operation power-1:
 * running, step 2/3 power_on (attempt 2)"; the state "pending" reads "pending (queued behind
 * the node's operation in flight)" when the document says queued. elapsed_ms from the start
 * of the wait; op is the last operation document read (NULL: "waiting 0s for operation ID").
 * Control bytes of the server's strings are replaced (table_clean). */
void cli_wait_text(const char *id, int64_t elapsed_ms, const json_t *op, char *out, size_t outlen);

/* A redraw throttle with a trailing redraw: a change seen inside the interval is not lost but
 * drawn by the next call once the interval has passed, even when that call brings no change
 * (a tick: the watch's progress callback or a BOOKMARK). */
struct cli_throttle {
	int64_t interval_ms; /* least time between two draws */
	int64_t last_ms;     /* when the last draw was; 0: never */
	int pending;         /* a change not drawn yet */
};

/* Call on every change (changed 1) and on every tick (changed 0) with the time now. Returns 1
 * when the caller is to draw now (the throttle then counts it as drawn), 0 otherwise. */
int cli_throttle_due(struct cli_throttle *t, int64_t now_ms, int changed);

#endif
