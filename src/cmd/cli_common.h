/* cli_common.h - the shapes the client verbs (`node`, `op`, `event`, `token`, `health`) share,
 * so each verb's file holds only what is its own: the flags every getopt loop ends with (-o,
 * -h, unknown flags), operand counting, decimal counts, paths of one document, "ask once and
 * print the answer", and "list with paging, then print a table or {"items":[...]}".
 *
 * Symbols are named cli_* (the file's concept: the command line); the HTTP client itself and
 * its lower-level helpers are client.h, table layout is table.h. Exit codes are client.h's
 * enum client_exit; every error is printed here, once, in docs/cli.md's formats, so a caller
 * returns the code it gets. */
#ifndef FP_CMD_CLI_COMMON_H
#define FP_CMD_CLI_COMMON_H

#include <getopt.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/client.h"
#include "cmd/table.h"

/* The end of a verb's getopt_long option table (git's OPT_END): -o/--output FMT, -h/--help
 * and the terminator; CLI_OPTS_END_HELP for a verb without -o. */
#define CLI_OPTS_END                                                                \
	{"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, \
	{                                                                           \
		NULL, 0, NULL, 0                                                    \
	}
#define CLI_OPTS_END_HELP                 \
	{"help", no_argument, NULL, 'h'}, \
	{                                 \
		NULL, 0, NULL, 0          \
	}

/* Returned by the parsing helpers below when the verb is to go on (not an exit code). */
#define CLI_GO_ON (-1)

/* For the `default:` of a verb's getopt_long switch: handles what every verb's loop ends with.
 * ch 'o' (-o/--output FMT, parsed by client_parse_output with allow_wide; only when o is
 * non-NULL) returns CLI_GO_ON with *o set; ch 'h' prints usage to stdout and returns
 * CLIENT_EXIT_OK; anything else (getopt's '?' or ':', or 'o' without o) is
 * client_getopt_error's usage error ("unknown flag '--bogus'") and CLIENT_EXIT_USAGE. cmd is the
 * command path ("op list"); argv as getopt_long just used it. */
int cli_opt_default(const char *cmd, int ch, char **argv, const char *usage, int allow_wide,
		    enum client_output *o);

/* For a flag whose value must not be empty, inside the getopt_long switch: *out = optarg, or
 * the usage error "flag '<flag>' needs <what>" ("flag '--node' needs a node name"). Returns 0
 * or CLIENT_EXIT_USAGE. */
int cli_opt_value(const char *cmd, const char *flag, const char *what, const char **out);

/* After getopt: refuses operands. Returns 0, or CLIENT_EXIT_USAGE after
 * "error: unexpected argument '<first operand>'". */
int cli_no_operands(const char *cmd, int argc, char **argv);

/* After getopt: exactly one operand, into *operand (borrowed from argv). No operand - or an
 * empty one unless allow_empty - is the usage error missing ("missing ID"); a second operand
 * is "unexpected argument '<it>'". Returns 0 or CLIENT_EXIT_USAGE. */
int cli_one_operand(const char *cmd, int argc, char **argv, const char *missing, int allow_empty,
		    const char **operand);

/* Parses a decimal count 1..max (digits only: no sign, no space, no suffix; errno range
 * checked) into *out. Returns 0, or -1 with *out untouched; the caller names the flag. */
int cli_parse_count(const char *s, unsigned long long max, size_t *out);

/* Returns the malloc'd path of one document, "/v1/<coll>/<name percent-escaped>", with
 * ":<action>" appended when action is non-NULL ("/v1/nodes/r01n03:drain"). coll and action are
 * literals of ours and go in as they are. Never NULL. */
char *cli_doc_path(const char *coll, const char *name, const char *action);

#define CLI_MAX_PATH ((size_t)64 << 10) /* longest request path with its query, bytes */

/* One query parameter of a list; a NULL value is left out (a filter not given). */
struct cli_query {
	const char *key;
	const char *value;
};

/* Builds base + "?k=v&k=v" from the nq pairs of q (values percent-escaped, NULL values left
 * out) into *path (malloc'd). A path over CLI_MAX_PATH bytes is the usage error "filters too
 * long ..." for cmd - never a list without the filter. Returns 0 or CLIENT_EXIT_USAGE. */
int cli_path_query(const char *cmd, const char *base, const struct cli_query *q, size_t nq,
		   char **path);

/* One request on a connection of its own: client_init (FLEETPLANE_URL, FLEETPLANE_TOKEN),
 * client_request(method, path, body), client_release. On CLIENT_EXIT_OK *resp is the answer
 * (new reference, may be NULL for an empty body); otherwise *resp is NULL and the error line was
 * printed. Returns a client_exit code. */
int cli_call(const char *method, const char *path, const json_t *body, json_t **resp);

/* Renders one document for people on stdout. */
typedef void (*cli_print_fn)(const json_t *doc);

/* GETs path (cli_call) and prints the answer: with -o json, or when fn is NULL, as indented JSON
 * exactly as the server sent it; otherwise with fn. Returns a client_exit code. */
int cli_get_print(const char *path, enum client_output o, cli_print_fn fn);

/* A `<noun> get NAME [-o json]` verb (node get, op get, health budget get, health rma get). */
struct cli_get {
	const char *cmd;     /* "op get" */
	const char *usage;   /* printed by -h */
	const char *coll;    /* collection under /v1: "operations" */
	const char *missing; /* usage error without an operand: "missing ID" */
	/* Optional check of the operand before any request (0 or a usage error it printed); with
	 * a check an empty operand is the check's to refuse, without one it is `missing`. */
	int (*check)(const char *cmd, const char *name);
	cli_print_fn print; /* how people see the document; -o json prints it as sent */
};

/* Runs a get verb: -o json and -h (client_parse_output_flags), exactly one operand, then
 * GET /v1/<coll>/<operand> printed by cli_get_print. Returns the exit code. */
int cli_get_verb(const struct cli_get *g, int argc, char **argv);

/* How a list prints as a table: the columns cols, then with -o wide also wide_cols (NULL: none;
 * a wide table is never truncated), row adds the row or rows of one item (borrowed) - a cell
 * per column in force; now_ms is read once per table for AGE columns. none is the line printed
 * on stderr instead of a table without rows ("No operations found.\n"). */
struct cli_view {
	const struct table_colspec *cols, *wide_cols;
	void (*row)(struct table *t, const json_t *item, enum client_output o, int64_t now_ms);
	const char *none;
};

/* Prints items (a JSON array, borrowed): with -o json as {"items":[...]} (indented), else as
 * v's table on stdout (or v->none on stderr when no row was added). */
void cli_print_items(const json_t *items, enum client_output o, const struct cli_view *v);

/* Lists path (which may carry a query) with client_list, following metadata.continue, at most
 * max items (0 = all; any extra item of the last page is dropped), and prints them with
 * cli_print_items. Returns a client_exit code. */
int cli_list_print(const char *path, size_t max, enum client_output o, const struct cli_view *v);

/* Dispatches a noun's verbs (client_dispatch) and answers an unknown verb with
 * client_unknown_verb(noun, verb). Returns the exit code. */
int cli_dispatch(const char *noun, const char *usage, const struct client_verb *verbs, int argc,
		 char **argv);

/* Prints "key value" for people: key left-aligned in 12 columns, value cleaned of control bytes
 * (table_clean), NULL or "" as "-" (the `get` outputs of node and op). */
void cli_print_kv(const char *key, const char *value);

/* Reads FILE ('-' = stdin) of at most max bytes and parses it as JSON into *doc (new
 * reference). Errors print "error: <read error>" or "error: <file>: <JSON error with line and
 * column>" and return CLIENT_EXIT_USAGE with *doc NULL; returns 0 otherwise. The caller checks
 * the document's shape. */
int cli_read_json_file(const char *file, size_t max, json_t **doc);

#endif
