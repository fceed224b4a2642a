/* cmd_token.c - `fleetplane token <verb>`: create, list and revoke API bearer tokens
 * (DESIGN.md "API": roles admin, operator, viewer and node-scoped agent). `token create`
 * prints the secret alone as the last line of its output, so scripts can take it with
 * `| tail -n 1`; the secret is wiped from memory once printed and appears nowhere else. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/jsonx.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "cmd/table.h"

#include "base/banned.h"

static const char tok_usage_text[] =
	"Usage: fleetplane token <verb> [flags]\n"
	"\n"
	"Verbs:\n"
	"  create   create a token; its secret is the last line of output\n"
	"  list     list tokens (names and roles; never secrets)\n"
	"  revoke   revoke a token by name\n"
	"\n"
	"Run 'fleetplane token <verb> --help' for the flags of a verb.\n";

static const char tok_create_usage[] =
	"Usage: fleetplane token create --name NAME --role ROLE [--node NODE]\n"
	"\n"
	"      --name NAME     token name; holds it places are owned by operator:NAME\n"
	"      --role ROLE     admin, operator, viewer or agent\n"
	"      --node NODE     the node an agent token may report for (required for agent)\n"
	"  -h, --help          this help\n";

static const char tok_list_usage[] =
	"Usage: fleetplane token list [-o json]\n"
	"\n"
	"  -o, --output json   print {\"items\":[...]}\n"
	"  -h, --help          this help\n";

static const char tok_revoke_usage[] =
	"Usage: fleetplane token revoke NAME\n"
	"\n"
	"  -h, --help          this help\n";

static const char *const tok_roles[] = {"admin", "operator", "viewer", "agent", NULL};

static int tok_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"role", required_argument, NULL, 'r'},
		{"node", required_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "token create", *name = NULL, *role = NULL, *node = NULL;
	int ch, rc;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *body = NULL, *resp = NULL;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			name = optarg;
			break;
		case 'r':
			role = optarg;
			break;
		case 'N':
			node = optarg;
			break;
		case 'h':
			fputs(tok_create_usage, stdout);
			return 0;
		default:
			return client_getopt_error(cmd, ch, argv);
		}
	}
	if (optind < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!name || !*name)
		return client_usage_error(cmd, "missing --name NAME");
	if (!role || !*role)
		return client_usage_error(cmd, "missing --role ROLE");
	size_t i;
	for (i = 0; tok_roles[i]; i++)
		if (!strcmp(role, tok_roles[i]))
			break;
	if (!tok_roles[i])
		return client_usage_error(cmd, "unknown role '%s' (want admin, operator, viewer or "
					  "agent)", role);
	if (!strcmp(role, "agent") && (!node || !*node))
		return client_usage_error(cmd, "--role agent needs --node NODE");
	if (strcmp(role, "agent") != 0 && node)
		return client_usage_error(cmd, "--node applies only to --role agent");

	body = json_pack("{s:s,s:s}", "name", name, "role", role);
	if (node)
		json_object_set_new(body, "node", json_string(node));
	if ((rc = client_init(&c)) != 0)
		goto out;
	rc = client_request(&c, "POST", "/v1/tokens", body, NULL, &resp);
	if (rc != CLIENT_EXIT_OK)
		goto out;
	json_t *sec = json_object_get(resp, "token");
	const char *secret = json_string_value(sec);
	if (!secret || !*secret) {
		fprintf(stderr, "error: fleetplane answered POST /v1/tokens without a token\n");
		rc = CLIENT_EXIT_API;
		goto out;
	}
	const char *rname = jsonx_str(resp, "name"), *rrole = jsonx_str(resp, "role");
	char *nc = table_clean(rname ? rname : name, 0), *rc_ = table_clean(rrole ? rrole : role, 0);
	char *sc = table_clean(secret, 0);
	if (node) {
		char *ndc = table_clean(node, 0);
		printf("token %s created (role %s, node %s); secret follows, shown once:\n", nc, rc_,
		       ndc);
		free(ndc);
	} else {
		printf("token %s created (role %s); secret follows, shown once:\n", nc, rc_);
	}
	printf("%s\n", sc);
	fflush(stdout);
	fp_free_secret(sc);
	free(nc);
	free(rc_);
	/* wipe jansson's copy too: the string is ours to scribble on before the last decref */
	explicit_bzero((char *)secret, json_string_length(sec));
out:
	json_decref(body);
	json_decref(resp);
	client_release(&c);
	return rc;
}

static int tok_list(int argc, char **argv)
{
	const char *cmd = "token list";
	enum client_output o = CLIENT_OUT_TABLE;
	int rc;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *resp = NULL;
	if ((rc = client_parse_output_flags(cmd, argc, argv, tok_list_usage, 1, &o)) >= 0)
		return rc;
	if (optind < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if ((rc = client_init(&c)) != 0)
		goto out;
	rc = client_request(&c, "GET", "/v1/tokens", NULL, NULL, &resp);
	if (rc != CLIENT_EXIT_OK)
		goto out;
	json_t *items = json_is_array(resp) ? resp : json_object_get(resp, "items");
	if (!json_is_array(items)) {
		fprintf(stderr, "error: fleetplane answered GET /v1/tokens without an \"items\" array\n");
		rc = CLIENT_EXIT_API;
		goto out;
	}
	if (o == CLIENT_OUT_JSON) {
		json_t *doc = json_pack("{s:O}", "items", items);
		client_print_json(doc);
		json_decref(doc);
		goto out;
	}
	struct table t;
	int64_t now = client_now_ms();
	char age[16];
	table_init(&t, o == CLIENT_OUT_WIDE);
	table_col(&t, "NAME", 40);
	table_col(&t, "ROLE", 10);
	table_col(&t, "NODE", 40);
	table_col(&t, "AGE", 6);
	size_t i;
	json_t *tk;
	json_array_foreach(items, i, tk) {
		/* token documents carry name and createdAt under metadata (api_tokens.c) */
		table_cell(&t, jsonx_str(tk, "metadata.name"));
		table_cell(&t, jsonx_str(tk, "role"));
		table_cell(&t, jsonx_str(tk, "node"));
		table_age(now, client_time_ms(jsonx_path(tk, "metadata.createdAt")), age, sizeof(age));
		table_cell(&t, age);
	}
	if (table_rows(&t) == 0)
		fputs("No tokens found.\n", stderr);
	else
		table_print(&t, stdout);
	table_release(&t);
out:
	json_decref(resp);
	client_release(&c);
	return rc;
}

static int tok_revoke(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "token revoke";
	int ch, rc;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *resp = NULL;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			fputs(tok_revoke_usage, stdout);
			return 0;
		default:
			return client_getopt_error(cmd, ch, argv);
		}
	}
	if (optind >= argc || !*argv[optind])
		return client_usage_error(cmd, "refusing an empty token name");
	if (optind + 1 < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	const char *name = argv[optind];
	if (strpbrk(name, "*?,=[] \t\n"))
		return client_usage_error(cmd, "refusing token name '%s': name one token", name);
	if ((rc = client_init(&c)) != 0)
		goto out;
	char *esc = client_escape(name);
	char *path = xasprintf("/v1/tokens/%s", esc);
	rc = client_request(&c, "DELETE", path, NULL, NULL, &resp);
	free(path);
	free(esc);
	if (rc != CLIENT_EXIT_OK)
		goto out;
	char *nc = table_clean(name, 0);
	printf("token %s revoked\n", nc);
	free(nc);
out:
	json_decref(resp);
	client_release(&c);
	return rc;
}

int cmd_token(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"create", NULL, tok_create},
		{"list", "ls", tok_list},
		{"revoke", NULL, tok_revoke},
		{NULL, NULL, NULL},
	};
	int rc = client_dispatch(tok_usage_text, verbs, argc, argv);
	if (rc >= 0)
		return rc;
	return client_unknown_verb("token", argv[1]);
}
