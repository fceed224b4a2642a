/* cmd_event.c - `fleetplane event list`: the audit and lifecycle events fleetplane records
 * about objects (DESIGN.md: every stuck step, queued disruption and released hold leaves an
 * event), as a client of /v1/events. Read-only. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jsonx.h"
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

/* Parses a positive decimal count. Returns 0 or -1. */
static int ev_parse_count(const char *s, size_t *out)
{
	char *end = NULL;
	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > 10000000ULL)
		return -1;
	*out = (size_t)v;
	return 0;
}

static int ev_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"object", required_argument, NULL, 'O'},
		{"limit", required_argument, NULL, 'L'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "event list", *object = NULL;
	size_t limit = 0;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *items = NULL;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'O':
			if (!*optarg)
				return client_usage_error(cmd, "flag '--object' needs KIND/NAME");
			object = optarg;
			break;
		case 'L':
			if (ev_parse_count(optarg, &limit) < 0)
				return client_usage_error(cmd, "flag '--limit' needs a count from 1 to "
							  "10000000, got '%s'", optarg);
			break;
		case 'o':
			if ((rc = client_parse_output(cmd, optarg, 1, &o)) != 0)
				return rc;
			break;
		case 'h':
			fputs(ev_list_usage, stdout);
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
	buf_puts(&path, "/v1/events");
	client_query_add(&path, "object", object);
	rc = client_list(&c, path.data, limit, &items, NULL);
	buf_release(&path);
	if (rc != CLIENT_EXIT_OK)
		goto out;
	while (limit && json_array_size(items) > limit)
		json_array_remove(items, json_array_size(items) - 1);
	if (o == CLIENT_OUT_JSON) {
		json_t *doc = json_pack("{s:O}", "items", items);
		client_print_json(doc);
		json_decref(doc);
		goto out;
	}
	struct table t;
	table_init(&t, o == CLIENT_OUT_WIDE);
	table_col(&t, "TIME", 24);
	table_col(&t, "TYPE", 8);
	table_col(&t, "OBJECT", 40);
	table_col(&t, "REASON", 28);
	table_col(&t, "ACTOR", 24);
	table_col(&t, "MESSAGE", 60);
	size_t i;
	json_t *ev;
	json_array_foreach(items, i, ev) {
		table_cell(&t, jsonx_str(ev, "time"));
		table_cell(&t, jsonx_str(ev, "type"));
		table_cell(&t, jsonx_str(ev, "object"));
		table_cell(&t, jsonx_str(ev, "reason"));
		table_cell(&t, jsonx_str(ev, "actor"));
		table_cell(&t, jsonx_str(ev, "message"));
	}
	if (table_rows(&t) == 0)
		fputs("No events found.\n", stderr);
	else
		table_print(&t, stdout);
	table_release(&t);
out:
	json_decref(items);
	client_release(&c);
	return rc;
}

int cmd_event(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"list", "ls", ev_list},
		{NULL, NULL, NULL},
	};
	int rc = client_dispatch(ev_usage_text, verbs, argc, argv);
	if (rc >= 0)
		return rc;
	return client_unknown_verb("event", argv[1]);
}
