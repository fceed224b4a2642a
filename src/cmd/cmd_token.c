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
#include "cmd/cli_common.h"
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

static const char tok_list_usage[] = "Usage: fleetplane token list [-o json]\n"
				     "\n"
				     "  -o, --output json   print {\"items\":[...]}\n"
				     "  -h, --help          this help\n";

static const char tok_revoke_usage[] = "Usage: fleetplane token revoke NAME\n"
				       "\n"
				       "  -h, --help          this help\n";

static const char *const tok_roles[] = {"admin", "operator", "viewer", "agent", NULL};

static int tok_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"role", required_argument, NULL, 'r'},
		{"node", required_argument, NULL, 'N'},
		CLI_OPTS_END_HELP,
	};
	const char *cmd = "token create", *name = NULL, *role = NULL, *node = NULL;
	int ch, rc;
	json_t *body = NULL, *resp = NULL;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'n': name = optarg; break;
		case 'r': role = optarg; break;
		case 'N': node = optarg; break;
		default: return cli_opt_default(cmd, ch, argv, tok_create_usage, 0, NULL);
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	if (!name || !*name)
		return client_usage_error(cmd, "missing --name NAME");
	if (!role || !*role)
		return client_usage_error(cmd, "missing --role ROLE");
	size_t i;
	for (i = 0; tok_roles[i]; i++)
		if (!strcmp(role, tok_roles[i]))
			break;
	if (!tok_roles[i])
		return client_usage_error(cmd,
					  "unknown role '%s' (want admin, operator, viewer or "
					  "agent)",
					  role);
	if (!strcmp(role, "agent") && (!node || !*node))
		return client_usage_error(cmd, "--role agent needs --node NODE");
	if (strcmp(role, "agent") != 0 && node)
		return client_usage_error(cmd, "--node applies only to --role agent");

	body = json_pack("{s:s,s:s}", "name", name, "role", role);
	if (node)
		json_object_set_new(body, "node", json_string(node));
	rc = cli_call("POST", "/v1/tokens", body, &resp);
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
	char *nc = table_clean(rname ? rname : name, 0),
	     *rc_ = table_clean(rrole ? rrole : role, 0);
	char *sc = table_clean(secret, 0);
	if (node) {
		char *ndc = table_clean(node, 0);
		printf("token %s created (role %s, node %s); secret follows, shown once:\n", nc,
		       rc_, ndc);
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
	return rc;
}

static const struct table_colspec tok_cols[] = {
	{"NAME", 40}, {"ROLE", 10}, {"NODE", 40}, {"AGE", 6}, {NULL, 0},
};

static void tok_row(struct table *t, const json_t *tk, enum client_output o, int64_t now)
{
	char age[16];
	/* token documents carry name and createdAt under metadata (api_tokens.c) */
	table_cell(t, jsonx_str(tk, "metadata.name"));
	table_cell(t, jsonx_str(tk, "role"));
	table_cell(t, jsonx_str(tk, "node"));
	table_age(now, client_time_ms(jsonx_path(tk, "metadata.createdAt")), age, sizeof(age));
	table_cell(t, age);
}

static const struct cli_view tok_view = {tok_cols, NULL, tok_row, "No tokens found.\n"};

static int tok_list(int argc, char **argv)
{
	const char *cmd = "token list";
	enum client_output o = CLIENT_OUT_TABLE;
	int rc;
	json_t *resp = NULL;
	if ((rc = client_parse_output_flags(cmd, argc, argv, tok_list_usage, 1, &o)) >= 0)
		return rc;
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	if ((rc = cli_call("GET", "/v1/tokens", NULL, &resp)) != CLIENT_EXIT_OK)
		return rc;
	json_t *items = json_is_array(resp) ? resp : json_object_get(resp, "items");
	if (!json_is_array(items)) {
		fprintf(stderr,
			"error: fleetplane answered GET /v1/tokens without an \"items\" array\n");
		rc = CLIENT_EXIT_API;
	} else {
		cli_print_items(items, o, &tok_view);
	}
	json_decref(resp);
	return rc;
}

static int tok_revoke(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_OPTS_END_HELP,
	};
	const char *cmd = "token revoke", *name = NULL;
	int ch, rc;
	client_getopt_reset();
	if ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) /* -h, or a bad flag */
		return cli_opt_default(cmd, ch, argv, tok_revoke_usage, 0, NULL);
	if ((rc = cli_one_operand(cmd, argc, argv, "refusing an empty token name", 0, &name)) != 0)
		return rc;
	if (strpbrk(name, "*?,=[] \t\n"))
		return client_usage_error(cmd, "refusing token name '%s': name one token", name);
	json_t *resp = NULL;
	char *path = cli_doc_path("tokens", name, NULL);
	rc = cli_call("DELETE", path, NULL, &resp);
	free(path);
	if (rc == CLIENT_EXIT_OK) {
		char *nc = table_clean(name, 0);
		printf("token %s revoked\n", nc);
		free(nc);
	}
	json_decref(resp);
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
	return cli_dispatch("token", tok_usage_text, verbs, argc, argv);
}
