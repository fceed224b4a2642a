/* cli_context.c - the contexts file and the client's settings precedence (see cli_context.h). */
#include "cmd/cli_context.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/kvlines.h"

#include "base/banned.h"

const char *cli_context_flag;

static int ctx_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > CLI_CTX_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

int cli_context_take(int *argc, char **argv)
{
	if (*argc < 2)
		return 0;
	const char *name = NULL;
	int used = 0;
	if (strcmp(argv[1], "--context") == 0) {
		if (*argc < 3) {
			fprintf(stderr, "error: flag '--context' needs a context name\n");
			return 2;
		}
		name = argv[2];
		used = 2;
	} else if (strncmp(argv[1], "--context=", 10) == 0) {
		name = argv[1] + 10;
		used = 1;
	} else {
		return 0;
	}
	if (!ctx_name_ok(name)) {
		fprintf(stderr,
			"error: flag '--context': bad context name '%s' (1..%d of A-Z a-z 0-9 . _ "
			"-)\n",
			name, CLI_CTX_NAME_MAX);
		return 2;
	}
	cli_context_flag = name;
	for (int i = 1; i + used < *argc; i++)
		argv[i] = argv[i + used];
	*argc -= used;
	argv[*argc] = NULL;
	return 0;
}

/* path with "~/" expanded and a relative one taken from dir. Malloc'd. */
static char *ctx_path(const char *v, const char *home, const char *dir)
{
	if (v[0] == '~' && v[1] == '/')
		return xasprintf("%s/%s", home ? home : "", v + 2);
	if (v[0] != '/')
		return xasprintf("%s/%s", dir, v);
	return xstrdup(v);
}

int cli_config_parse(const char *path, const char *home, const char *text, size_t len,
		     struct cli_config *cfg, char *err, size_t errlen)
{
	char *buf = xmalloc(len + 1), *dir = xstrdup(path);
	memcpy(buf, text, len);
	buf[len] = 0;
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		snprintf(dir, strlen(dir) + 1, ".");
	cfg->path = xstrdup(path);
	int rc = 0;
	struct cli_ctx *cur = NULL;
	struct kvlines kv;
	kvlines_init(&kv, buf, len, path, CLI_CTX_LINE_MAX, 0);
	char *key, *value;
	while ((rc = kvlines_next(&kv, &key, &value, err, errlen)) == 1) {
		rc = 0;
		unsigned lineno = kv.lineno;
		if (!*value) {
			rc = fp_errf(-1, err, errlen, "%s:%u: %s: needs a value", path, lineno,
				     key);
			break;
		}
		if (strcmp(key, "current-context") == 0 || strcmp(key, "context") == 0) {
			if (!ctx_name_ok(value)) {
				rc = fp_errf(-1, err, errlen,
					     "%s:%u: %s: bad context name '%s' (1..%d of A-Z a-z "
					     "0-9 . _ -)",
					     path, lineno, key, value, CLI_CTX_NAME_MAX);
				break;
			}
		}
		if (strcmp(key, "current-context") == 0) {
			if (cur || cfg->current_line) {
				rc = fp_errf(-1, err, errlen,
					     cur ? "%s:%u: current-context: must come before the "
						   "first context"
						 : "%s:%u: current-context: given twice",
					     path, lineno);
				break;
			}
			snprintf(cfg->current, sizeof(cfg->current), "%s", value);
			cfg->current_line = lineno;
			continue;
		}
		if (strcmp(key, "context") == 0) {
			for (size_t i = 0; i < cfg->n; i++) {
				if (strcmp(cfg->ctx[i].name, value) == 0) {
					rc = fp_errf(
						-1, err, errlen,
						"%s:%u: context: %s given twice (first on line "
						"%u)",
						path, lineno, value, cfg->ctx[i].line);
					break;
				}
			}
			if (rc)
				break;
			if (cfg->n >= CLI_CTX_MAX) {
				rc = fp_errf(-1, err, errlen,
					     "%s:%u: context: more than %d contexts", path, lineno,
					     CLI_CTX_MAX);
				break;
			}
			cur = &cfg->ctx[cfg->n++];
			snprintf(cur->name, sizeof(cur->name), "%s", value);
			cur->line = lineno;
			continue;
		}
		int known = strcmp(key, "url") == 0 || strcmp(key, "token-file") == 0 ||
			    strcmp(key, "ca-file") == 0;
		if (!known) {
			rc = fp_errf(-1, err, errlen,
				     "%s:%u: %s: unknown key (want current-context, context, url, "
				     "token-file or ca-file)",
				     path, lineno, key);
			break;
		}
		if (!cur) {
			rc = fp_errf(
				-1, err, errlen,
				"%s:%u: %s: outside a context (put a 'context NAME' line above "
				"it)",
				path, lineno, key);
			break;
		}
		char **slot = key[0] == 'u'   ? &cur->url
			      : key[0] == 't' ? &cur->token_file
					      : &cur->ca_file;
		if (*slot) {
			rc = fp_errf(-1, err, errlen, "%s:%u: %s: given twice in context %s", path,
				     lineno, key, cur->name);
			break;
		}
		if (strcmp(key, "url") == 0) {
			if (strncmp(value, "http://", 7) != 0 &&
			    strncmp(value, "https://", 8) != 0) {
				rc = fp_errf(-1, err, errlen,
					     "%s:%u: url: must start with http:// or https://",
					     path, lineno);
				break;
			}
			*slot = xstrdup(value);
		} else {
			*slot = ctx_path(value, home, dir);
		}
	}
	if (rc == 0 && cfg->current_line) {
		size_t i;
		for (i = 0; i < cfg->n && strcmp(cfg->ctx[i].name, cfg->current) != 0; i++)
			;
		if (i == cfg->n)
			rc = fp_errf(-1, err, errlen, "%s:%u: current-context %s names no context",
				     path, cfg->current_line, cfg->current);
	}
	free(buf);
	free(dir);
	if (rc)
		cli_config_release(cfg);
	return rc ? -1 : 0;
}

void cli_config_release(struct cli_config *cfg)
{
	for (size_t i = 0; i < cfg->n; i++) {
		free(cfg->ctx[i].url);
		free(cfg->ctx[i].token_file);
		free(cfg->ctx[i].ca_file);
	}
	free(cfg->path);
	memset(cfg, 0, sizeof(*cfg));
}

int cli_token_mode_ok(unsigned mode)
{
	return S_ISREG(mode) && (mode & 077) == 0 ? 0 : -1;
}

/* Reads a token file into *out (malloc'd, trailing whitespace cut). 0 or -1 after an error. */
static int ctx_read_token(const char *file, const char *ctxname, char **out)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "error: context %s: token file %s: %s\n", ctxname, file,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (cli_token_mode_ok((unsigned)st.st_mode) < 0) {
		fprintf(stderr,
			"error: context %s: token file %s is %s (mode %04o); refusing it as ssh "
			"refuses such keys: chmod 600 %s\n",
			ctxname, file,
			S_ISREG(st.st_mode) ? "open to others" : "not a regular file",
			(unsigned)(st.st_mode & 07777), file);
		close(fd);
		return -1;
	}
	char *b = xmalloc(CLI_CTX_TOKEN_MAX + 1);
	ssize_t n = read(fd, b, CLI_CTX_TOKEN_MAX + 1);
	close(fd);
	if (n < 0 || n > CLI_CTX_TOKEN_MAX) {
		fprintf(stderr, "error: context %s: token file %s: %s\n", ctxname, file,
			n < 0 ? strerror(errno) : "larger than 4096 bytes");
		explicit_bzero(b, CLI_CTX_TOKEN_MAX + 1);
		free(b);
		return -1;
	}
	while (n > 0 &&
	       (b[n - 1] == '\n' || b[n - 1] == '\r' || b[n - 1] == ' ' || b[n - 1] == '\t'))
		n--;
	b[n] = 0;
	*out = b;
	return 0;
}

static int ctx_load(struct cli_config *cfg, int *found)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *path = xdg && xdg[0] == '/' ? xasprintf("%s/fleetplane/config", xdg)
		     : home && *home      ? xasprintf("%s/.config/fleetplane/config", home)
					  : NULL;
	char err[600];
	*found = 0;
	if (!path)
		return 0;
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		cfg->path = path;
		if (e == ENOENT)
			return 0;
		fprintf(stderr, "error: %s: %s\n", path, strerror(e));
		return -1;
	}
	char *text = xmalloc(CLI_CTX_FILE_MAX + 1);
	size_t n = fread(text, 1, CLI_CTX_FILE_MAX + 1, f);
	int bad = ferror(f);
	fclose(f);
	int rc = 0;
	if (bad || n > CLI_CTX_FILE_MAX) {
		fprintf(stderr, "error: %s: %s\n", path,
			bad ? "cannot read it" : "larger than 65536 bytes");
		rc = -1;
	} else if (cli_config_parse(path, home, text, n, cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		rc = -1;
	} else {
		*found = 1;
	}
	free(text);
	if (!*found) {
		free(cfg->path);
		cfg->path = path;
	} else {
		free(path);
	}
	return rc;
}

int cli_settings_resolve(struct cli_settings *s)
{
	struct cli_config cfg;
	int found = 0, rc = 0;
	memset(s, 0, sizeof(*s));
	memset(&cfg, 0, sizeof(cfg));
	if (ctx_load(&cfg, &found) < 0) {
		cli_config_release(&cfg);
		return -1;
	}
	const struct cli_ctx *ctx = NULL;
	int explicit = cli_context_flag != NULL;
	const char *want = explicit ? cli_context_flag
				    : (found && cfg.current[0] ? cfg.current : NULL);
	if (want) {
		for (size_t i = 0; i < cfg.n; i++)
			if (strcmp(cfg.ctx[i].name, want) == 0)
				ctx = &cfg.ctx[i];
		if (!ctx) {
			fprintf(stderr, "error: context %s: not in %s%s\n", want,
				cfg.path ? cfg.path : "the contexts file (no HOME)",
				found ? "" : " (no such file)");
			cli_config_release(&cfg);
			return -1;
		}
	}
	const char *env_url = getenv("FLEETPLANE_URL"), *env_tok = getenv("FLEETPLANE_TOKEN"),
		   *env_ca = getenv("FLEETPLANE_CA");
	if (env_url && !*env_url)
		env_url = NULL;
	if (env_tok && !*env_tok)
		env_tok = NULL;
	if (env_ca && !*env_ca)
		env_ca = NULL;
	/* url */
	if (ctx && ctx->url && (explicit || !env_url))
		s->url = xstrdup(ctx->url);
	else if (env_url)
		s->url = xstrdup(env_url);
	/* ca */
	if (ctx && ctx->ca_file && (explicit || !env_ca))
		s->ca = xstrdup(ctx->ca_file);
	else if (env_ca)
		s->ca = xstrdup(env_ca);
	/* token */
	if (ctx && ctx->token_file && (explicit || !env_tok)) {
		if (ctx_read_token(ctx->token_file, ctx->name, &s->token) < 0)
			rc = -1;
		else
			snprintf(s->from, sizeof(s->from), "context %s", ctx->name);
	} else if (env_tok) {
		s->token = xstrdup(env_tok);
	}
	cli_config_release(&cfg);
	if (rc < 0)
		cli_settings_release(s);
	return rc;
}

void cli_settings_release(struct cli_settings *s)
{
	free(s->url);
	free(s->ca);
	if (s->token) {
		explicit_bzero(s->token, strlen(s->token));
		free(s->token);
	}
	memset(s, 0, sizeof(*s));
}
