/* cli_context.h - the client's contexts file (issue 15): named servers, each with a URL, a
 * token file and a CA file, and the current one, so an operator with several fleets types
 * `fleetplane --context lab node list` instead of exporting three variables
 * (docs/cli.md "Contexts").
 *
 * The file is $XDG_CONFIG_HOME/fleetplane/config (when XDG_CONFIG_HOME is an absolute path),
 * else $HOME/.config/fleetplane/config, in the `key value` line format of `serve --config`
 * (src/cmd/serve_opts.c): '#' comments, blank lines, blanks around the value cut.
 *
 *     current-context prod
 *     context prod
 *     url https://10.0.0.5:7070
 *     token-file ~/.config/fleetplane/prod.token
 *     ca-file /etc/fleetplane/ca.crt
 *
 * `current-context` comes before the first `context`; `url`, `token-file` and `ca-file` belong
 * to the `context` above them. "~/" at the start of a path is $HOME; a relative path is taken
 * from the file's directory.
 *
 * Precedence, per setting (URL, token, CA): the --context flag's context > the environment
 * (FLEETPLANE_URL, FLEETPLANE_TOKEN, FLEETPLANE_CA) > the current-context > the built-in
 * default. A token file must be a regular file no one but its owner can read or write (mode
 * 0600 or 0400, as ssh asks of private keys): anything looser is refused. */
#ifndef FP_CMD_CLI_CONTEXT_H
#define FP_CMD_CLI_CONTEXT_H

#include <limits.h>
#include <stddef.h>

#define CLI_CTX_MAX 64              /* contexts in one file */
#define CLI_CTX_NAME_MAX 63         /* bytes of a context name: [A-Za-z0-9._-] */
#define CLI_CTX_FILE_MAX (64 << 10) /* bytes of the file */
#define CLI_CTX_LINE_MAX 4096       /* bytes of one line */
#define CLI_CTX_TOKEN_MAX 4096      /* bytes of a token file */

struct cli_ctx {
	char name[CLI_CTX_NAME_MAX + 1];
	char *url, *token_file, *ca_file; /* owned; NULL when not given */
	unsigned line;                    /* where its `context` line is */
};

struct cli_config {
	char *path; /* owned: the file read */
	char current[CLI_CTX_NAME_MAX + 1];
	unsigned current_line;
	struct cli_ctx ctx[CLI_CTX_MAX];
	size_t n;
};

/* The --context NAME given before the noun (cli_context_take), or NULL. */
extern const char *cli_context_flag;

/* Takes a leading "--context NAME" or "--context=NAME" off argv (argv[1..]) into
 * cli_context_flag, shifting the rest down. Returns 0, or 2 after a usage error on stderr
 * (no name, a bad name). */
int cli_context_take(int *argc, char **argv);

/* Parses text (len bytes, the file path names it in errors; home expands "~/") into cfg
 * (zeroed by the caller). Errors, with nothing kept: "FILE:LINE: KEY: WHY" for an unknown key,
 * a key given twice in one context, a key outside a context, a bad or duplicate context name,
 * a value missing, a URL not http(s)://, a line too long or holding a NUL, more than
 * CLI_CTX_MAX contexts; "FILE:LINE: current-context NAME names no context" after the whole
 * file. Returns 0 or -1 with err set. */
int cli_config_parse(const char *path, const char *home, const char *text, size_t len,
		     struct cli_config *cfg, char *err, size_t errlen);
void cli_config_release(struct cli_config *cfg);

/* The settings a client uses, resolved by precedence (see above). Strings owned; token wiped
 * on release. */
struct cli_settings {
	char *url;                        /* NULL: the default */
	char *token;                      /* NULL: none found */
	char *ca;                         /* NULL: the system store */
	char from[CLI_CTX_NAME_MAX + 32]; /* "context lab" or "" where the token came from */
};

/* Reads the contexts file (a missing file is no context unless --context named one) and the
 * environment into s. Returns 0, or -1 after "error: ..." on stderr (the file's error, an
 * unknown --context, a token file that cannot be read or is open to others). */
int cli_settings_resolve(struct cli_settings *s);
void cli_settings_release(struct cli_settings *s);

/* 0 when mode (st_mode) is fine for a token file (regular, no group/other bits), else -1. */
int cli_token_mode_ok(unsigned mode);

#endif
