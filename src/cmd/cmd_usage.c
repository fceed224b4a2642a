/* cmd_usage.c - `fleetplane usage`: GPU-hours per Slurm account, user or partition over a
 * window, as a client of GET /v1/usage (docs/api.md "Usage"; serve --slurm meters them from
 * slurmdbd's job records). Read-only. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonx.h"
#include "cmd/cli_common.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "cmd/table.h"

#include "base/banned.h"

static const char usage_text[] =
	"Usage: fleetplane usage [--from TIME] [--to TIME] [--by account|user|partition]\n"
	"                        [-o json]\n"
	"\n"
	"GPU-hours of the Slurm jobs that ran in [from, to), per group, from Slurm's accounting\n"
	"(the server must run with --slurm and slurmdbd). TIME is RFC 3339 (2026-12-01T00:00:00Z)\n"
	"or unix seconds.\n"
	"\n"
	"      --from TIME     window start (default: the 1st of this month, 00:00 UTC)\n"
	"      --to TIME       window end (default: now)\n"
	"      --by GROUP      account (default), user or partition\n"
	"  -o, --output FMT    json: the server's document {from,to,by,items,total}\n"
	"  -h, --help          this help\n";

static const char *by_header(const char *by)
{
	if (strcmp(by, "user") == 0)
		return "USER";
	if (strcmp(by, "partition") == 0)
		return "PARTITION";
	return "ACCOUNT";
}

static void usage_row(struct table *t, const char *name, const json_t *row)
{
	table_cell(t, name);
	table_cellf(t, "%.3f", json_number_value(json_object_get(row, "gpuHours")));
	table_cellf(t, "%lld", (long long)json_integer_value(json_object_get(row, "gpuSeconds")));
	table_cellf(t, "%lld", (long long)json_integer_value(json_object_get(row, "jobs")));
}

static const char *g_by = "account";

static void usage_print(const json_t *doc)
{
	const char *by = jsonx_str(doc, "by");
	if (!by)
		by = g_by;
	printf("GPU use %s .. %s\n", jsonx_str(doc, "from") ? jsonx_str(doc, "from") : "?",
	       jsonx_str(doc, "to") ? jsonx_str(doc, "to") : "?");
	struct table t;
	table_init(&t, 0);
	table_col(&t, by_header(by), 40);
	table_col(&t, "GPU-HOURS", 16);
	table_col(&t, "GPU-SECONDS", 16);
	table_col(&t, "JOBS", 10);
	const json_t *items = json_object_get(doc, "items");
	size_t i;
	const json_t *it;
	json_array_foreach(items, i, it) {
		const char *name = jsonx_str(it, by);
		usage_row(&t, name && name[0] ? name : "(none)", it);
	}
	const json_t *total = json_object_get(doc, "total");
	if (total)
		usage_row(&t, "TOTAL", total);
	table_print(&t, stdout);
	table_release(&t);
}

int cmd_usage(int argc, char **argv)
{
	static const struct option opts[] = {
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"by", required_argument, NULL, 'B'},
		CLI_OPTS_END,
	};
	const char *cmd = "usage", *from = NULL, *to = NULL, *by = "account";
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'F':
			if ((rc = cli_opt_value(cmd, "--from", "a time", &from)) != 0)
				return rc;
			break;
		case 'T':
			if ((rc = cli_opt_value(cmd, "--to", "a time", &to)) != 0)
				return rc;
			break;
		case 'B':
			if ((rc = cli_opt_value(cmd, "--by", "account, user or partition", &by)) !=
			    0)
				return rc;
			if (strcmp(by, "account") != 0 && strcmp(by, "user") != 0 &&
			    strcmp(by, "partition") != 0)
				return client_usage_error(cmd,
							  "flag '--by' needs account, user or "
							  "partition, got '%s'",
							  by);
			break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, usage_text, 0, &o)) != CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	char from_buf[48], to_buf[32];
	time_t now = time(NULL);
	if (!to) {
		snprintf(to_buf, sizeof(to_buf), "%lld", (long long)now);
		to = to_buf;
	}
	if (!from) {
		struct tm tm;
		gmtime_r(&now, &tm);
		snprintf(from_buf, sizeof(from_buf), "%04d-%02d-01T00:00:00Z", tm.tm_year + 1900,
			 tm.tm_mon + 1);
		from = from_buf;
	}
	g_by = by;
	const struct cli_query q[] = {{"from", from}, {"to", to}, {"by", by}};
	char *path = NULL;
	if ((rc = cli_path_query(cmd, "/v1/usage", q, 3, &path)) == 0)
		rc = cli_get_print(path, o, usage_print);
	free(path);
	return rc;
}
