/* client.h - the HTTP client that fleetplane's client subcommands (`node`, `op`, `event`,
 * `token`) use to talk to the REST/JSON API under /v1 (DESIGN.md "API"), built on libcurl.
 *
 * It reads FLEETPLANE_URL (default https://127.0.0.1:7070) and FLEETPLANE_TOKEN (required),
 * sends the token as "Authorization: Bearer", bounds every response at 64 MiB, applies
 * timeouts (connect 5 s, total 60 s; watches have no total timeout), and turns failures into
 * one line on stderr plus a process exit code:
 *   0 ok, 1 API/HTTP error, 2 usage error, 3 cannot connect.
 * Problem documents (RFC 9457 application/problem+json) print as
 *   "error: <title>: <detail> (HTTP 409)".
 * The token is never printed, logged or put into an error message, and is wiped on release.
 *
 * The file also holds the small helpers that every client subcommand shares: usage errors in
 * one format, getopt_long error naming, query building with escaping, pretty JSON output and
 * reading times out of documents. */
#ifndef FP_CMD_CLIENT_H
#define FP_CMD_CLIENT_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"

#define CLIENT_DEFAULT_URL "https://127.0.0.1:7070" /* serve speaks TLS unless --plain-http */
#define CLIENT_MAX_BODY ((size_t)64 << 20)          /* largest response accepted, bytes */
#define CLIENT_MAX_LINE ((size_t)16 << 20)          /* largest single watch event line, bytes */
#define CLIENT_CONNECT_TIMEOUT_MS 5000L
#define CLIENT_TOTAL_TIMEOUT_MS 60000L
#define CLIENT_PAGE_LIMIT 500 /* limit= used while following `continue` */

/* Process exit codes of the client subcommands (docs/cli.md "Exit codes"). */
enum client_exit {
	CLIENT_EXIT_OK = 0,
	CLIENT_EXIT_API = 1,     /* the API answered an error, or the answer was unusable */
	CLIENT_EXIT_USAGE = 2,   /* bad flags/arguments, or missing FLEETPLANE_TOKEN */
	CLIENT_EXIT_CONNECT = 3, /* could not connect to FLEETPLANE_URL */
};

/* An API connection. Initialise with client_init, free with client_release. */
struct client {
	char *url;   /* base URL, no trailing '/', owned */
	char *token; /* bearer secret, owned; wiped on release */
	void *curl;  /* CURL *, reused so paging keeps one connection */
	FILE *err;   /* where error lines go; stderr unless a test changes it */
	long connect_timeout_ms;
	long timeout_ms;
	char *ca; /* FLEETPLANE_CA: PEM file the https server must chain to, owned; NULL = the
		   * system store (kube, issue 13: serve's own is <data-dir>/ca.crt) */
	/* Called with tick_arg from libcurl's progress callback while a request or watch runs
	 * (about once a second, or more often while bytes arrive), on the caller's thread;
	 * NULL: none. `node list --watch` draws its throttled bar's trailing redraw here. */
	void (*tick)(void *arg);
	void *tick_arg;
};

/* Set from a SIGINT/SIGTERM handler to stop a watch cleanly; client_watch returns 0 then. */
extern volatile sig_atomic_t client_interrupted;

/* Reads FLEETPLANE_URL, FLEETPLANE_TOKEN and FLEETPLANE_CA from the environment into c. The URL must start
 * with http:// or https://; trailing '/' are removed. Trailing whitespace of the token is
 * removed; a token with whitespace or control bytes inside is refused. Returns CLIENT_EXIT_OK,
 * or CLIENT_EXIT_USAGE after printing "error: FLEETPLANE_TOKEN is not set ..." (or the URL
 * problem) to stderr. On failure c is left safe to pass to client_release. */
int client_init(struct client *c);
/* Frees c's strings (wiping the token) and the curl handle. Tolerates a zeroed or partly
 * initialised struct. */
void client_release(struct client *c);

/* Sends one request. method "GET", "POST", "DELETE"; path starts with "/v1/" and is already
 * escaped (see client_escape / client_query_add); body is sent as compact JSON when non-NULL.
 * On a 2xx answer returns CLIENT_EXIT_OK with *out the parsed body (new reference; NULL when
 * the body was empty or its Content-Type does not name JSON, e.g. text/plain from /readyz) and
 * *status the HTTP status (status may be NULL). Otherwise prints one
 * error line to c->err and returns CLIENT_EXIT_API (HTTP error, body over 64 MiB, bad JSON,
 * timeout after connecting) or CLIENT_EXIT_CONNECT (refused, unresolvable, connect timeout);
 * *out is NULL then and *status holds the HTTP status when there was one (0 otherwise). */
int client_request(struct client *c, const char *method, const char *path, const json_t *body,
		   long *status, json_t **out);

/* GETs path (which may carry a query already) and follows metadata.continue until the end or
 * until max items were collected (max 0 = no cap). Each page asks for
 * limit=min(CLIENT_PAGE_LIMIT, remaining). On success *items is a new JSON array and, when
 * rv is non-NULL, *rv a malloc'd copy of the first page's metadata.resourceVersion (or NULL).
 * Returns a client_exit code; errors are printed by client_request. A page without an "items"
 * array is an error (CLIENT_EXIT_API). */
int client_list(struct client *c, const char *path, size_t max, json_t **items, char **rv);
/* Lists path to its end like client_list but keeps only the last `keep` items (>= 1) in list
 * order: memory stays bounded by keep however long the list is (event list --limit N reads
 * an oldest-first list for its newest N). *items (new reference) and *total (items seen) on
 * CLIENT_EXIT_OK; errors as client_list. */
int client_list_last(struct client *c, const char *path, size_t keep, json_t **items,
		     size_t *total);

/* Called by client_watch with each parsed watch event ({"type","object"}); the event is
 * borrowed. Return 0 to go on, anything else to stop the watch (client_watch returns it). */
typedef int (*client_event_fn)(void *arg, json_t *ev);

/* Streams newline-delimited JSON from path (a ?watch=1 URL) without a total timeout and calls
 * fn for each non-empty line. Returns 0 when the server ended the stream or client_interrupted
 * was set, fn's non-zero value when fn stopped it, CLIENT_EXIT_API when a line is not JSON or
 * longer than CLIENT_MAX_LINE, and for HTTP errors. For HTTP errors the problem line is printed
 * unless *status is 410 (compacted: the caller re-lists), which is returned silently as
 * CLIENT_EXIT_API with *status 410. CLIENT_EXIT_CONNECT when it cannot connect. */
int client_watch(struct client *c, const char *path, client_event_fn fn, void *arg, long *status);

/* Formats an HTTP error as one line without a newline: "error: <title>: <detail> (HTTP <status>)"
 * from a problem document; "error: <title> (HTTP <status>)" when it has no detail; and for a
 * non-problem body "error: <reason phrase>: <first line of raw, at most 200 bytes, control
 * bytes replaced by '?'> (HTTP <status>)" (raw may be NULL). Writes at most outlen bytes. */
void client_problem_format(long status, const json_t *problem, const char *raw, size_t rawlen,
			   char *out, size_t outlen);

/* Returns a malloc'd percent-escaped copy of s (RFC 3986: everything but ALPHA DIGIT - . _ ~
 * is escaped), for one path segment or one query value. Never NULL. */
char *client_escape(const char *s);
/* Appends "?key=value" (or "&key=value" when url already has a '?') with value escaped. A NULL
 * value appends nothing. Returns 0 or FP_ETOOBIG from the buffer. */
int client_query_add(struct buf *url, const char *key, const char *value);

/* Prints "error: <message>" and "Run 'fleetplane <cmd> --help' for usage." to stderr and
 * returns CLIENT_EXIT_USAGE. cmd is the command path ("node drain"). */
int client_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Turns getopt_long's '?' or ':' result into a usage error naming the argument:
 * "unknown flag '--bogus'", "unknown flag '-x'", "flag '--reason' needs a value". argv and
 * optind/optopt are those getopt_long just used. Returns CLIENT_EXIT_USAGE. */
int client_getopt_error(const char *cmd, int ch, char **argv);
/* Resets getopt's global state before a subcommand parses its own argv (GNU: optind = 0). */
void client_getopt_reset(void);

/* Output formats. CLIENT_OUT_WIDE disables truncation in tables. */
enum client_output {
	CLIENT_OUT_TABLE = 0,
	CLIENT_OUT_JSON,
	CLIENT_OUT_WIDE,
	CLIENT_OUT_YAML, /* list verbs only (cli_fmt.h cli_opt_list) */
	CLIENT_OUT_NAME  /* list verbs only: <kind>/<name> per line */
};
/* Parses an -o value: "json" always; "wide" only when allow_wide. Returns 0 or
 * CLIENT_EXIT_USAGE after printing the usage error for cmd. */
int client_parse_output(const char *cmd, const char *arg, int allow_wide, enum client_output *o);

/* Parses the argv of a command whose only flags are -o/--output and -h/--help (node get, op
 * get, token list). Returns -1 when parsing succeeded (*o set; optind at the first operand),
 * or the exit code the command must return: 0 after printing usage to stdout, 2 after a
 * usage error on stderr. */
int client_parse_output_flags(const char *cmd, int argc, char **argv, const char *usage,
			      int allow_wide, enum client_output *o);

/* One verb of a noun ("node list"): name, optional alias ("ls") and entry point, which gets
 * argv with argv[0] = the verb. Tables end with a NULL name. */
struct client_verb {
	const char *name;
	const char *alias;
	int (*fn)(int argc, char **argv);
};

/* Dispatches argv (argv[0] = the noun) to the verb table: no verb prints usage to stderr and
 * returns 2; -h/--help/help prints it to stdout and returns 0. Returns the verb's exit code, or
 * -1 when argv[1] names no verb in the table (the caller tries more or reports it with
 * client_unknown_verb). */
int client_dispatch(const char *usage, const struct client_verb *verbs, int argc, char **argv);
/* Usage error for an unknown verb of noun; returns 2. */
int client_unknown_verb(const char *noun, const char *verb);

/* Prints v as indented JSON (2 spaces, keys in document order) and a newline to stdout. */
void client_print_json(const json_t *v);

/* Unix epoch milliseconds now (CLOCK_REALTIME). */
int64_t client_now_ms(void);
/* Reads a time out of a document: an RFC 3339 UTC string ("2026-11-30T05:27:16.123Z") or an
 * integer of epoch milliseconds. Returns 0 for NULL, absent or unparseable values. */
int64_t client_time_ms(const json_t *v);
/* Writes a resourceVersion (JSON string or integer) as text into out; "" when absent. */
void client_rv_text(const json_t *v, char *out, size_t outlen);

/* Reads a whole file ("-" = stdin) into b (b's max bounds it). Returns 0, FP_EIO with
 * strerror text in err, or FP_ETOOBIG. */
int client_read_file(const char *path, struct buf *b, char *err, size_t errlen);

#endif
