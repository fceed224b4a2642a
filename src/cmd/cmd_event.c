/* cmd_event.c - `fleetplane event list`: the audit and lifecycle events fleetplane records
 * about objects (DESIGN.md: every stuck step, queued disruption and released hold leaves an
 * event), as a client of /v1/events. Read-only. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonx.h"
#include "cmd/cli_common.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "cmd/table.h"

#include "base/banned.h"

static const char ev_usage_text[] =
	"Usage: fleetplane event <verb> [flags]\n"
	"\n"
	"Verbs:\n"
	"  list     list events, oldest first as the server orders them\n"
	"\n"
	"Run 'fleetplane event list --help' for its flags.\n";

static const char ev_list_usage[] =
	"Usage: fleetplane event list [--object KIND/NAME] [--limit N] [-o json|wide]\n"
	"\n"
	"      --object OBJ    only events about this object, e.g. node/r01n03\n"
	"      --limit N       at most N events (default: all)\n"
	"  -o, --output FMT    json: {\"items\":[...]} of event documents; wide: no truncation\n"
	"  -h, --help          this help\n";

static const struct table_colspec ev_cols[] = {
	{"TIME", 24},  {"TYPE", 8},     {"OBJECT", 40}, {"REASON", 28},
	{"ACTOR", 24}, {"MESSAGE", 60}, {NULL, 0},
};

static void ev_row(struct table *t, const json_t *ev, enum client_output o, int64_t now)
{
	table_cell(t, jsonx_str(ev, "time"));
	table_cell(t, jsonx_str(ev, "type"));
	table_cell(t, jsonx_str(ev, "object"));
	table_cell(t, jsonx_str(ev, "reason"));
	table_cell(t, jsonx_str(ev, "actor"));
	table_cell(t, jsonx_str(ev, "message"));
}

static const struct cli_view ev_view = {ev_cols, NULL, ev_row, "No events found.\n"};

static int ev_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"object", required_argument, NULL, 'O'},
		{"limit", required_argument, NULL, 'L'},
		CLI_OPTS_END,
	};
	const char *cmd = "event list", *object = NULL;
	size_t limit = 0;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'O':
			if ((rc = cli_opt_value(cmd, "--object", "KIND/NAME", &object)) != 0)
				return rc;
			break;
		case 'L':
			if (cli_parse_count(optarg, 10000000ULL, &limit) < 0)
				return client_usage_error(cmd,
							  "flag '--limit' needs a count from 1 to "
							  "10000000, got '%s'",
							  optarg);
			break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, ev_list_usage, 1, &o)) !=
			    CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	const struct cli_query q[] = {{"object", object}};
	char *path = NULL;
	if ((rc = cli_path_query(cmd, "/v1/events", q, 1, &path)) == 0)
		rc = cli_list_print(path, limit, o, &ev_view);
	free(path);
	return rc;
}

int cmd_event(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"list", "ls", ev_list},
		{NULL, NULL, NULL},
	};
	return cli_dispatch("event", ev_usage_text, verbs, argc, argv);
}
