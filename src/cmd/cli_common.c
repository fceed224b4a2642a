/* cli_common.c - what the client verbs share: getopt endings, operands, counts, document
 * paths, one-shot requests and list printing (see cli_common.h). */
#include "cmd/cli_common.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/jsonx.h"

#include "base/banned.h"

int cli_opt_default(const char *cmd, int ch, char **argv, const char *usage, int allow_wide,
		    enum client_output *o)
{
	int rc;
	if (ch == 'o' && o) {
		if ((rc = client_parse_output(cmd, optarg, allow_wide, o)) != 0)
			return rc;
		return CLI_GO_ON;
	}
	if (ch == 'h') {
		fputs(usage, stdout);
		return CLIENT_EXIT_OK;
	}
	return client_getopt_error(cmd, ch, argv);
}

int cli_opt_value(const char *cmd, const char *flag, const char *what, const char **out)
{
	if (!*optarg)
		return client_usage_error(cmd, "flag '%s' needs %s", flag, what);
	*out = optarg;
	return 0;
}

int cli_no_operands(const char *cmd, int argc, char **argv)
{
	if (optind < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int cli_one_operand(const char *cmd, int argc, char **argv, const char *missing, int allow_empty,
		    const char **operand)
{
	if (optind >= argc || (!allow_empty && !*argv[optind]))
		return client_usage_error(cmd, "%s", missing);
	if (optind + 1 < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	*operand = argv[optind];
	return 0;
}

int cli_parse_count(const char *s, unsigned long long max, size_t *out)
{
	char *end = NULL;
	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > max)
		return -1;
	*out = (size_t)v;
	return 0;
}

char *cli_doc_path(const char *coll, const char *name, const char *action)
{
	char *esc = client_escape(name);
	char *path = xasprintf("/v1/%s/%s%s%s", coll, esc, action ? ":" : "", action ? action : "");
	free(esc);
	return path;
}

int cli_path_query(const char *cmd, const char *base, const struct cli_query *q, size_t nq,
		   char **path)
{
	struct buf b;
	size_t len;
	int rc = 0;
	*path = NULL;
	buf_init(&b, CLI_MAX_PATH);
	rc = buf_puts(&b, base);
	for (size_t i = 0; i < nq && rc == 0; i++)
		rc = client_query_add(&b, q[i].key, q[i].value);
	if (rc < 0) {
		buf_release(&b);
		return client_usage_error(cmd,
					  "filters too long: the request path would be over "
					  "%zu KiB",
					  CLI_MAX_PATH >> 10);
	}
	*path = buf_detach(&b, &len);
	return 0;
}

int cli_call(const char *method, const char *path, const json_t *body, json_t **resp)
{
	struct client c;
	memset(&c, 0, sizeof(c));
	*resp = NULL;
	int rc = client_init(&c);
	if (rc == CLIENT_EXIT_OK)
		rc = client_request(&c, method, path, body, NULL, resp);
	client_release(&c);
	return rc;
}

int cli_get_print(const char *path, enum client_output o, cli_print_fn fn)
{
	json_t *doc = NULL;
	int rc = cli_call("GET", path, NULL, &doc);
	if (rc == CLIENT_EXIT_OK) {
		if (o == CLIENT_OUT_JSON || !fn)
			client_print_json(doc);
		else
			fn(doc);
	}
	json_decref(doc);
	return rc;
}

int cli_get_verb(const struct cli_get *g, int argc, char **argv)
{
	enum client_output o = CLIENT_OUT_TABLE;
	const char *name = NULL;
	int rc = client_parse_output_flags(g->cmd, argc, argv, g->usage, 0, &o);
	if (rc >= 0)
		return rc;
	if ((rc = cli_one_operand(g->cmd, argc, argv, g->missing, g->check != NULL, &name)) != 0)
		return rc;
	if (g->check && (rc = g->check(g->cmd, name)) != 0)
		return rc;
	char *path = cli_doc_path(g->coll, name, NULL);
	rc = cli_get_print(path, o, g->print);
	free(path);
	return rc;
}

void cli_print_items(const json_t *items, enum client_output o, const struct cli_view *v)
{
	if (o == CLIENT_OUT_JSON) {
		json_t *doc = json_pack("{s:O}", "items", (json_t *)items);
		client_print_json(doc);
		json_decref(doc);
		return;
	}
	struct table t;
	int64_t now = client_now_ms();
	table_init(&t, o == CLIENT_OUT_WIDE);
	table_cols(&t, v->cols);
	if (o == CLIENT_OUT_WIDE)
		table_cols(&t, v->wide_cols);
	size_t i;
	json_t *item;
	json_array_foreach(items, i, item)
		v->row(&t, item, o, now);
	if (table_rows(&t) == 0)
		fputs(v->none, stderr);
	else
		table_print(&t, stdout);
	table_release(&t);
}

int cli_list_print(const char *path, size_t max, enum client_output o, const struct cli_view *v)
{
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *items = NULL;
	int rc = client_init(&c);
	if (rc == CLIENT_EXIT_OK)
		rc = client_list(&c, path, max, &items, NULL);
	if (rc == CLIENT_EXIT_OK) {
		while (max && json_array_size(items) > max)
			json_array_remove(items, json_array_size(items) - 1);
		cli_print_items(items, o, v);
	}
	json_decref(items);
	client_release(&c);
	return rc;
}

int cli_dispatch(const char *noun, const char *usage, const struct client_verb *verbs, int argc,
		 char **argv)
{
	int rc = client_dispatch(usage, verbs, argc, argv);
	if (rc >= 0)
		return rc;
	return client_unknown_verb(noun, argv[1]);
}

void cli_print_kv(const char *key, const char *value)
{
	char *v = table_clean(value && *value ? value : "-", 0);
	printf("%-12s %s\n", key, v);
	free(v);
}

int cli_read_json_file(const char *file, size_t max, json_t **doc)
{
	struct buf b;
	char e[512];
	int rc = CLIENT_EXIT_OK;
	*doc = NULL;
	buf_init(&b, max);
	if (client_read_file(file, &b, e, sizeof(e)) < 0) {
		fprintf(stderr, "error: %s\n", e);
		rc = CLIENT_EXIT_USAGE;
	} else if (jsonx_parse(b.data, b.len, doc, e, sizeof(e)) < 0) {
		json_decref(*doc);
		*doc = NULL;
		fprintf(stderr, "error: %s: %s\n", file, e);
		rc = CLIENT_EXIT_USAGE;
	}
	buf_release(&b);
	return rc;
}
