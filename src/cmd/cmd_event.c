/* cmd_event.c - `fleetplane event list`: the audit and lifecycle events fleetplane records
 * about objects (DESIGN.md: every stuck step, queued disruption and released hold leaves an
 * event), as a client of /v1/events. Read-only. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonx.h"
#include "base/timefmt.h"
#include "cmd/cli_common.h"
#include "cmd/cli_fmt.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "cmd/table.h"

#include "base/banned.h"

static const char ev_usage_text[] = "Usage: fleetplane event <verb> [flags]\n"
				    "\n"
				    "Verbs:\n"
				    "  list     list events, newest first\n"
				    "\n"
				    "Run 'fleetplane event list --help' for its flags.\n";

static const char ev_list_usage[] =
	"Usage: fleetplane event list [--object KIND/NAME] [--type Normal|Warning] [--reason R]\n"
	"                             [--since DURATION|TIME] [--limit N] [-o FMT] [--no-headers]\n"
	"                             [--sort-by PATH]\n"
	"\n"
	"      --object OBJ    only events about this object, e.g. node/r01n03\n"
	"      --type TYPE     only Normal or only Warning events\n"
	"      --reason R      only events with this reason, e.g. DrainRequested\n"
	"      --since S       only events of the last S (10m, 2h, 1d, 1h30m) or since an RFC 3339\n"
	"                      time (2026-11-30T05:00:00Z)\n"
	"      --limit N       the newest N events (default: all)\n"
	"  -o, --output FMT    json or yaml: {\"items\":[...]} of event documents; wide: no\n"
	"                      truncation; name: event/<id> lines\n"
	"      --no-headers    no header line in tables\n"
	"      --sort-by PATH  order by a field instead, e.g. .reason or .metadata.name\n"
	"  -h, --help          this help\n";

#define EV_MAX_READ 200000 /* events read to find the newest (the store keeps ~110000) */

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
		{"type", required_argument, NULL, 'T'},
		{"reason", required_argument, NULL, 'R'},
		{"since", required_argument, NULL, 'S'},
		{"limit", required_argument, NULL, 'L'},
		CLI_LIST_OPTS,
		CLI_OPTS_END,
	};
	const char *cmd = "event list", *object = NULL, *type = NULL, *reason = NULL;
	char since[FP_TIME_LEN] = "";
	size_t limit = 0;
	struct cli_listfmt f = {CLIENT_OUT_TABLE, 0, NULL, "event"};
	int ch, rc;
	int64_t since_ms = 0;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'O':
			if ((rc = cli_opt_value(cmd, "--object", "KIND/NAME", &object)) != 0)
				return rc;
			break;
		case 'T':
			if (strcmp(optarg, "Normal") != 0 && strcmp(optarg, "Warning") != 0)
				return client_usage_error(cmd,
							  "flag '--type' needs Normal or Warning, "
							  "got '%s'",
							  optarg);
			type = optarg;
			break;
		case 'R':
			if ((rc = cli_opt_value(cmd, "--reason", "a reason such as DrainRequested",
						&reason)) != 0)
				return rc;
			break;
		case 'S':
			if (cli_parse_since(optarg, client_now_ms(), &since_ms) < 0)
				return client_usage_error(
					cmd,
					"flag '--since' needs a duration such as "
					"10m, 2h or 1d (1s..3650d) or an RFC 3339 "
					"time such as 2026-11-30T05:00:00Z, got '%s'",
					optarg);
			fp_time_format(since_ms, since);
			break;
		case 'L':
			if (cli_parse_count(optarg, 10000000ULL, &limit) < 0)
				return client_usage_error(cmd,
							  "flag '--limit' needs a count from 1 to "
							  "10000000, got '%s'",
							  optarg);
			break;
		default:
			if ((rc = cli_opt_list(cmd, ch, argv, ev_list_usage, &f)) != CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	const struct cli_query q[] = {{"object", object},
				      {"type", type},
				      {"reason", reason},
				      {"since", since[0] ? since : NULL}};
	char *path = NULL;
	if ((rc = cli_path_query(cmd, "/v1/events", q, 4, &path)) != 0)
		return rc;
	/* The API lists oldest first (ids sort by time): read every match, keep the newest -
	 * only the last `limit` while paging when there is a limit. */
	struct client c;
	json_t *all = NULL;
	size_t seen = 0;
	if ((rc = client_init(&c)) == 0)
		rc = limit ? client_list_last(&c, path, limit, &all, &seen)
			   : client_list(&c, path, EV_MAX_READ + 1, &all, NULL);
	client_release(&c);
	free(path);
	if (rc != CLIENT_EXIT_OK)
		return rc;
	size_t n = json_array_size(all);
	if (!limit && n > EV_MAX_READ) {
		fprintf(stderr,
			"note: more than %d events match and only the oldest %d were read: the "
			"newest may be missing; use --limit N, or narrow with --since, --object, "
			"--type or --reason\n",
			EV_MAX_READ, EV_MAX_READ);
		n = EV_MAX_READ;
	}
	if (limit && seen > limit)
		fprintf(stderr, "note: showing the newest %zu of %zu events\n", limit, seen);
	json_t *items = json_array();
	for (size_t i = 0; i < n && (!limit || i < limit); i++)
		json_array_append(items, json_array_get(all, n - 1 - i));
	json_decref(all);
	rc = cli_print_list(items, &f, &ev_view);
	json_decref(items);
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
