/* cmd_op.c - `fleetplane op <verb>`: list and get operations, the durable records of lifecycle
 * actions on nodes (DESIGN.md vocabulary "operation", "step"), as clients of /v1/operations.
 * list and get only read; cancel drops an operation that has not started
 * (POST /v1/operations/{id}:cancel). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonx.h"
#include "cmd/cli_common.h"
#include "cmd/cli_fmt.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "cmd/table.h"

#include "base/banned.h"

static const char op_usage_text[] =
	"Usage: fleetplane op <verb> [flags]\n"
	"\n"
	"Verbs:\n"
	"  list     list operations\n"
	"  get      show one operation and its steps\n"
	"  cancel   cancel a queued or pending operation that has not started\n"
	"\n"
	"Run 'fleetplane op <verb> --help' for the flags of a verb.\n";

static const char op_list_usage[] =
	"Usage: fleetplane op list [--node NAME] [--state STATE] [-o FMT] [--no-headers]\n"
	"                          [--sort-by PATH]\n"
	"\n"
	"      --node NAME     only operations on this node\n"
	"      --state STATE   pending, running, succeeded, failed or cancelled\n"
	"  -o, --output FMT    json or yaml: {\"items\":[...]} of full documents, all pages;\n"
	"                      wide: no truncation; name: operation/<id> lines\n"
	"      --no-headers    no header line in tables\n"
	"      --sort-by PATH  order by a field, e.g. .status.state or .metadata.createdAt\n"
	"  -h, --help          this help\n";

static const char op_get_usage[] = "Usage: fleetplane op get ID [-o json]\n"
				   "\n"
				   "  -o, --output json   print the bare operation document\n"
				   "  -h, --help          this help\n";

static const char op_cancel_usage[] =
	"Usage: fleetplane op cancel ID [--reason TEXT] [-o json]\n"
	"\n"
	"  Cancels an operation that is queued on its node or pending and not started; a\n"
	"  running operation is never interrupted (the server answers 409).\n"
	"\n"
	"  -r, --reason TEXT   why (optional; recorded in lastError and the audit event)\n"
	"  -o, --output json   print the cancelled operation document\n"
	"  -h, --help          this help\n";

static void op_int_cell(struct table *t, const json_t *v)
{
	if (json_is_integer(v))
		table_cellf(t, "%lld", (long long)json_integer_value(v));
	else
		table_cell(t, NULL);
}

static const struct table_colspec op_cols[] = {
	{"ID", 40},   {"NODE", 40},   {"KIND", 12}, {"STATE", 10},
	{"STEP", 32}, {"ATTEMPT", 7}, {"AGE", 6},   {NULL, 0},
};

static void op_row(struct table *t, const json_t *doc, enum client_output o, int64_t now)
{
	char step[160], age[16];
	table_cell(t, jsonx_str(doc, "metadata.name"));
	table_cell(t, jsonx_str(doc, "spec.node"));
	table_cell(t, jsonx_str(doc, "spec.kind"));
	table_cell(t, jsonx_str(doc, "status.state"));
	cli_op_step_text(doc, step, sizeof(step));
	table_cell(t, step);
	op_int_cell(t, jsonx_path(doc, "status.attempt"));
	table_age(now, client_time_ms(jsonx_path(doc, "metadata.createdAt")), age, sizeof(age));
	table_cell(t, age);
}

static const struct cli_view op_view = {op_cols, NULL, op_row, "No operations found.\n"};

static int op_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"node", required_argument, NULL, 'n'},
		{"state", required_argument, NULL, 's'},
		CLI_LIST_OPTS,
		CLI_OPTS_END,
	};
	const char *cmd = "op list", *node = NULL, *state = NULL;
	struct cli_listfmt f = {CLIENT_OUT_TABLE, 0, NULL, "operation"};
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if ((rc = cli_opt_value(cmd, "--node", "a node name", &node)) != 0)
				return rc;
			break;
		case 's':
			if ((rc = cli_opt_value(cmd, "--state", "a state", &state)) != 0)
				return rc;
			break;
		default:
			if ((rc = cli_opt_list(cmd, ch, argv, op_list_usage, &f)) != CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	const struct cli_query q[] = {{"node", node}, {"state", state}};
	char *path = NULL;
	if ((rc = cli_path_query(cmd, "/v1/operations", q, 2, &path)) == 0)
		rc = cli_list_print_fmt(path, 0, &f, &op_view);
	free(path);
	return rc;
}

static void op_time_kv(const char *key, const json_t *doc, const char *path, int64_t now)
{
	const char *s = jsonx_str(doc, path);
	int64_t ms = client_time_ms(jsonx_path(doc, path));
	char age[16], line[128];
	if (!ms) {
		cli_print_kv(key, s);
		return;
	}
	table_age(now, ms, age, sizeof(age));
	if (s)
		snprintf(line, sizeof(line), "%s (%s ago)", s, age);
	else
		snprintf(line, sizeof(line), "%s ago", age);
	cli_print_kv(key, line);
}

static void op_print_human(const json_t *doc)
{
	int64_t now = client_now_ms();
	char line[160];
	cli_print_kv("ID:", jsonx_str(doc, "metadata.name"));
	cli_print_kv("Node:", jsonx_str(doc, "spec.node"));
	cli_print_kv("Kind:", jsonx_str(doc, "spec.kind"));
	cli_print_kv("State:", jsonx_str(doc, "status.state"));
	cli_op_step_text(doc, line, sizeof(line));
	cli_print_kv("Step:", line);
	json_t *att = jsonx_path(doc, "status.attempt");
	snprintf(line, sizeof(line), "%lld", (long long)json_integer_value(att));
	cli_print_kv("Attempt:", json_is_integer(att) ? line : NULL);
	cli_print_kv("Reason:", jsonx_str(doc, "spec.reason"));
	cli_print_kv("Actor:", jsonx_str(doc, "spec.actor"));
	op_time_kv("Created:", doc, "metadata.createdAt", now);
	op_time_kv("Started:", doc, "status.startedAt", now);
	op_time_kv("Finished:", doc, "status.finishedAt", now);
	cli_print_kv("Last error:", jsonx_str(doc, "status.lastError"));

	json_t *steps = jsonx_path(doc, "spec.steps");
	if (json_array_size(steps) == 0)
		return;
	puts("Steps:");
	json_t *stv = jsonx_path(doc, "status.step");
	long long cur = json_is_integer(stv) ? (long long)json_integer_value(stv) : -1;
	const char *state = jsonx_str(doc, "status.state");
	struct table t;
	static const struct table_colspec cols[] = {{"#", 0},
						    {"STEP", 40},
						    {"STATUS", 0},
						    {NULL, 0}};
	table_init(&t, 0);
	table_cols(&t, cols);
	size_t i;
	json_t *s;
	json_array_foreach(steps, i, s) {
		table_cellf(&t, "%zu", i + 1);
		table_cell(&t, json_string_value(s));
		if (cur < 0)
			table_cell(&t, NULL);
		else if ((long long)i < cur)
			table_cell(&t, "done");
		else if ((long long)i == cur)
			table_cell(&t, state);
		else
			table_cell(&t, "pending");
	}
	table_print_indent(&t, stdout, 2);
	table_release(&t);
}

static int op_get(int argc, char **argv)
{
	static const struct cli_get get = {"op get",     op_get_usage, "operations",
					   "missing ID", NULL,         op_print_human};
	return cli_get_verb(&get, argc, argv);
}

/* fleetplane op cancel ID [--reason TEXT] [-o json]: POST /v1/operations/ID:cancel with
 * {"reason"} when given. Prints "operation ID cancelled" (or the document with -o json). Returns
 * a client_exit code; the server's refusal (409 running or finished, 404) is printed by
 * client_request. */
static int op_cancel(int argc, char **argv)
{
	static const struct option opts[] = {
		{"reason", required_argument, NULL, 'r'},
		CLI_OPTS_END,
	};
	const char *cmd = "op cancel", *reason = NULL, *id = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":r:o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r': reason = optarg; break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, op_cancel_usage, 0, &o)) !=
			    CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_one_operand(cmd, argc, argv, "missing ID", 0, &id)) != 0)
		return rc;
	if (reason && !*reason)
		return client_usage_error(cmd,
					  "--reason: empty; give a reason or leave the flag out");
	json_t *body = json_object(), *resp = NULL;
	if (reason)
		json_object_set_new(body, "reason", json_string(reason));
	char *path = cli_doc_path("operations", id, "cancel");
	rc = cli_call("POST", path, body, &resp);
	free(path);
	if (rc == CLIENT_EXIT_OK) {
		if (o == CLIENT_OUT_JSON && resp) {
			client_print_json(resp);
		} else {
			char *ic = table_clean(id, 0);
			printf("operation %s cancelled\n", ic);
			free(ic);
		}
	}
	json_decref(body);
	json_decref(resp);
	return rc;
}

int cmd_op(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"list", "ls", op_list},
		{"get", NULL, op_get},
		{"cancel", NULL, op_cancel},
		{NULL, NULL, NULL},
	};
	return cli_dispatch("op", op_usage_text, verbs, argc, argv);
}
