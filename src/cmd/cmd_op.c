/* cmd_op.c - `fleetplane op <verb>`: list and get operations, the durable records of lifecycle
 * actions on nodes (DESIGN.md vocabulary "operation", "step"), as clients of /v1/operations.
 * list and get only read; cancel drops an operation that has not started
 * (POST /v1/operations/{id}:cancel). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/jsonx.h"
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
	"Usage: fleetplane op list [--node NAME] [--state STATE] [-o json|wide]\n"
	"\n"
	"      --node NAME     only operations on this node\n"
	"      --state STATE   pending, running, succeeded, failed or cancelled\n"
	"  -o, --output FMT    json: {\"items\":[...]} of full documents, all pages; wide: no truncation\n"
	"  -h, --help          this help\n";

static const char op_get_usage[] =
	"Usage: fleetplane op get ID [-o json]\n"
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

/* "2/5 power_cycle" for the current step, "done" past the last one. */
static void op_step_text(const json_t *doc, char *out, size_t outlen)
{
	json_t *st = jsonx_path(doc, "status.step");
	json_t *steps = jsonx_path(doc, "spec.steps");
	size_t n = json_array_size(steps);
	if (json_is_string(st)) {
		snprintf(out, outlen, "%s", json_string_value(st));
	} else if (json_is_integer(st) && json_integer_value(st) >= 0) {
		size_t i = (size_t)json_integer_value(st);
		const char *name = json_string_value(json_array_get(steps, i));
		if (n && i >= n)
			snprintf(out, outlen, "done");
		else if (name)
			snprintf(out, outlen, "%zu/%zu %s", i + 1, n, name);
		else
			snprintf(out, outlen, "%zu", i + 1);
	} else {
		snprintf(out, outlen, "-");
	}
}

static void op_int_cell(struct table *t, const json_t *v)
{
	if (json_is_integer(v))
		table_cellf(t, "%lld", (long long)json_integer_value(v));
	else
		table_cell(t, NULL);
}

static int op_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"node", required_argument, NULL, 'n'},
		{"state", required_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "op list", *node = NULL, *state = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *items = NULL;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (!*optarg)
				return client_usage_error(cmd, "flag '--node' needs a node name");
			node = optarg;
			break;
		case 's':
			if (!*optarg)
				return client_usage_error(cmd, "flag '--state' needs a state");
			state = optarg;
			break;
		case 'o':
			if ((rc = client_parse_output(cmd, optarg, 1, &o)) != 0)
				return rc;
			break;
		case 'h':
			fputs(op_list_usage, stdout);
			return 0;
		default:
			return client_getopt_error(cmd, ch, argv);
		}
	}
	if (optind < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if ((rc = client_init(&c)) != 0)
		goto out;
	struct buf path;
	buf_init(&path, 1 << 14);
	buf_puts(&path, "/v1/operations");
	client_query_add(&path, "node", node);
	client_query_add(&path, "state", state);
	rc = client_list(&c, path.data, 0, &items, NULL);
	buf_release(&path);
	if (rc != CLIENT_EXIT_OK)
		goto out;
	if (o == CLIENT_OUT_JSON) {
		json_t *doc = json_pack("{s:O}", "items", items);
		client_print_json(doc);
		json_decref(doc);
		goto out;
	}
	struct table t;
	int64_t now = client_now_ms();
	char step[160], age[16];
	table_init(&t, o == CLIENT_OUT_WIDE);
	table_col(&t, "ID", 40);
	table_col(&t, "NODE", 40);
	table_col(&t, "KIND", 12);
	table_col(&t, "STATE", 10);
	table_col(&t, "STEP", 32);
	table_col(&t, "ATTEMPT", 7);
	table_col(&t, "AGE", 6);
	size_t i;
	json_t *doc;
	json_array_foreach(items, i, doc) {
		table_cell(&t, jsonx_str(doc, "metadata.name"));
		table_cell(&t, jsonx_str(doc, "spec.node"));
		table_cell(&t, jsonx_str(doc, "spec.kind"));
		table_cell(&t, jsonx_str(doc, "status.state"));
		op_step_text(doc, step, sizeof(step));
		table_cell(&t, step);
		op_int_cell(&t, jsonx_path(doc, "status.attempt"));
		table_age(now, client_time_ms(jsonx_path(doc, "metadata.createdAt")), age, sizeof(age));
		table_cell(&t, age);
	}
	if (table_rows(&t) == 0)
		fputs("No operations found.\n", stderr);
	else
		table_print(&t, stdout);
	table_release(&t);
out:
	json_decref(items);
	client_release(&c);
	return rc;
}

static void op_kv(const char *key, const char *value)
{
	char *v = table_clean(value && *value ? value : "-", 0);
	printf("%-12s %s\n", key, v);
	free(v);
}

static void op_time_kv(const char *key, const json_t *doc, const char *path, int64_t now)
{
	const char *s = jsonx_str(doc, path);
	int64_t ms = client_time_ms(jsonx_path(doc, path));
	char age[16], line[128];
	if (!ms) {
		op_kv(key, s);
		return;
	}
	table_age(now, ms, age, sizeof(age));
	if (s)
		snprintf(line, sizeof(line), "%s (%s ago)", s, age);
	else
		snprintf(line, sizeof(line), "%s ago", age);
	op_kv(key, line);
}

static void op_print_human(const json_t *doc)
{
	int64_t now = client_now_ms();
	char line[160];
	op_kv("ID:", jsonx_str(doc, "metadata.name"));
	op_kv("Node:", jsonx_str(doc, "spec.node"));
	op_kv("Kind:", jsonx_str(doc, "spec.kind"));
	op_kv("State:", jsonx_str(doc, "status.state"));
	op_step_text(doc, line, sizeof(line));
	op_kv("Step:", line);
	json_t *att = jsonx_path(doc, "status.attempt");
	snprintf(line, sizeof(line), "%lld", (long long)json_integer_value(att));
	op_kv("Attempt:", json_is_integer(att) ? line : NULL);
	op_kv("Reason:", jsonx_str(doc, "spec.reason"));
	op_kv("Actor:", jsonx_str(doc, "spec.actor"));
	op_time_kv("Created:", doc, "metadata.createdAt", now);
	op_time_kv("Started:", doc, "status.startedAt", now);
	op_time_kv("Finished:", doc, "status.finishedAt", now);
	op_kv("Last error:", jsonx_str(doc, "status.lastError"));

	json_t *steps = jsonx_path(doc, "spec.steps");
	if (json_array_size(steps) == 0)
		return;
	puts("Steps:");
	json_t *stv = jsonx_path(doc, "status.step");
	long long cur = json_is_integer(stv) ? (long long)json_integer_value(stv) : -1;
	const char *state = jsonx_str(doc, "status.state");
	struct table t;
	table_init(&t, 0);
	table_col(&t, "#", 0);
	table_col(&t, "STEP", 40);
	table_col(&t, "STATUS", 0);
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
	const char *cmd = "op get";
	enum client_output o = CLIENT_OUT_TABLE;
	int rc;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *doc = NULL;
	if ((rc = client_parse_output_flags(cmd, argc, argv, op_get_usage, 0, &o)) >= 0)
		return rc;
	if (optind >= argc || !*argv[optind])
		return client_usage_error(cmd, "missing ID");
	if (optind + 1 < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	if ((rc = client_init(&c)) != 0)
		goto out;
	char *esc = client_escape(argv[optind]);
	char *path = xasprintf("/v1/operations/%s", esc);
	rc = client_request(&c, "GET", path, NULL, NULL, &doc);
	free(path);
	free(esc);
	if (rc != CLIENT_EXIT_OK)
		goto out;
	if (o == CLIENT_OUT_JSON)
		client_print_json(doc);
	else
		op_print_human(doc);
out:
	json_decref(doc);
	client_release(&c);
	return rc;
}

/* fleetplane op cancel ID [--reason TEXT] [-o json]: POST /v1/operations/ID:cancel with
 * {"reason"} when given. Prints "operation ID cancelled" (or the document with -o json). Returns
 * a client_exit code; the server's refusal (409 running or finished, 404) is printed by
 * client_request. */
static int op_cancel(int argc, char **argv)
{
	static const struct option opts[] = {
		{"reason", required_argument, NULL, 'r'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "op cancel", *reason = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *body = NULL, *resp = NULL;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":r:o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			reason = optarg;
			break;
		case 'o':
			if ((rc = client_parse_output(cmd, optarg, 0, &o)) != 0)
				return rc;
			break;
		case 'h':
			fputs(op_cancel_usage, stdout);
			return 0;
		default:
			return client_getopt_error(cmd, ch, argv);
		}
	}
	if (optind >= argc || !*argv[optind])
		return client_usage_error(cmd, "missing ID");
	if (optind + 1 < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	if (reason && !*reason)
		return client_usage_error(cmd, "--reason: empty; give a reason or leave the flag out");
	body = json_object();
	if (reason)
		json_object_set_new(body, "reason", json_string(reason));
	if ((rc = client_init(&c)) != 0)
		goto out;
	char *esc = client_escape(argv[optind]);
	char *path = xasprintf("/v1/operations/%s:cancel", esc);
	rc = client_request(&c, "POST", path, body, NULL, &resp);
	free(path);
	free(esc);
	if (rc != CLIENT_EXIT_OK)
		goto out;
	if (o == CLIENT_OUT_JSON && resp) {
		client_print_json(resp);
		goto out;
	}
	char *ic = table_clean(argv[optind], 0);
	printf("operation %s cancelled\n", ic);
	free(ic);
out:
	json_decref(body);
	json_decref(resp);
	client_release(&c);
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
	int rc = client_dispatch(op_usage_text, verbs, argc, argv);
	if (rc >= 0)
		return rc;
	return client_unknown_verb("op", argv[1]);
}
