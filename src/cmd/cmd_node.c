/* cmd_node.c - `fleetplane node <verb>`: list (table, -o json, --watch), get, enroll, and the
 * lifecycle verbs drain, resume, retire and release, as clients of /v1/nodes (DESIGN.md "API").
 * Flags are parsed with getopt_long before anything touches the network, so usage errors
 * (exit 2) never need a server. Destructive verbs refuse an empty or wildcard target
 * (DESIGN.md principle 5). --watch lists, then follows ?watch=1 from the list's
 * resourceVersion, re-listing when the server says the revision was compacted (410). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/jsonx.h"
#include "cmd/cli_common.h"
#include "cmd/cli_fmt.h"
#include "cmd/client.h"
#include "core/codec.h"
#include "cmd/cmds.h"
#include "cmd/table.h"
#include "core/model.h"
#include "sched/hostlist.h"

#include "base/banned.h"

static const char node_usage_text[] =
	"Usage: fleetplane node <verb> [flags]\n"
	"\n"
	"Verbs:\n"
	"  list     list nodes (table, -o json, -o wide, --watch)\n"
	"  get      show one node\n"
	"  enroll   enroll nodes from a JSON file\n"
	"  drain    place an operator hold and drain a node\n"
	"  resume   release the operator hold and return a node to service\n"
	"  retire   decommission a node\n"
	"  release  release another owner's hold (admin)\n"
	"  power    power on, off, cycle, soft, reset a node, or read its power status\n"
	"\n"
	"Run 'fleetplane node <verb> --help' for the flags of a verb.\n"
	"Environment: FLEETPLANE_URL (default " CLIENT_DEFAULT_URL "), FLEETPLANE_TOKEN.\n";

static const char node_list_usage[] =
	"Usage: fleetplane node list [-l SELECTOR] [--phase PHASE] [-o FMT] [--no-headers]\n"
	"                            [--sort-by PATH] [--watch]\n"
	"\n"
	"  -l, --selector SEL  label selector, e.g. -l site=s1,rack!=r07 (repeatable: joined by ',')\n"
	"      --phase PHASE   only nodes in this phase (available, draining, ...)\n"
	"  -o, --output FMT    json or yaml: {\"items\":[...]} of full documents, all pages;\n"
	"                      wide: no truncation, extra OPERATION and LABELS columns;\n"
	"                      name: node/<name> lines; reasons: one row per hold (NODE OWNER\n"
	"                      SINCE REASON, like sinfo -R), nodes without holds left out\n"
	"      --no-headers    no header line in tables\n"
	"      --sort-by PATH  order by a field, e.g. .status.phase or .metadata.name\n"
	"  -w, --watch         follow changes: a live per-phase bar on a terminal, otherwise one\n"
	"                      line per change: TYPE NAME PHASE or TYPE NAME OLD->NEW\n"
	"  -h, --help          this help\n";

static const char node_get_usage[] = "Usage: fleetplane node get NAME [-o json]\n"
				     "\n"
				     "  -o, --output json   print the bare node document\n"
				     "  -h, --help          this help\n";

static const char node_enroll_usage[] =
	"Usage: fleetplane node enroll -f FILE\n"
	"\n"
	"  -f, --file FILE     one node document or {\"items\":[...]}; '-' reads stdin\n"
	"  -h, --help          this help\n";

static const char node_drain_usage[] =
	"Usage: fleetplane node drain NAME|HOSTLIST --reason TEXT [-o json]\n"
	"       fleetplane node drain -l SELECTOR --reason TEXT [-o json]\n"
	"\n"
	"  A Slurm hostlist ('r06n[01-08]', 'a,b') or -l drains many nodes in one request, done\n"
	"  by the server under the disruption budgets: one row per node (accepted, refused with\n"
	"  why, not_found); exit 1 when any node was not accepted. At most 1000 nodes.\n"
	"\n"
	"  -l, --selector SEL  the nodes whose labels match, e.g. -l rack=r06\n"
	"  -r, --reason TEXT   why (required); the hold is owned by operator:<token name>\n"
	"  -o, --output json   print the server's answer as JSON\n"
	"  -h, --help          this help\n";

static const char node_resume_usage[] =
	"Usage: fleetplane node resume NAME|HOSTLIST [--reason TEXT] [-o json]\n"
	"       fleetplane node resume -l SELECTOR [--reason TEXT] [-o json]\n"
	"\n"
	"  A hostlist or -l releases the caller's hold on many nodes (as drain does; at most\n"
	"  1000): a node without the caller's hold is refused.\n"
	"\n"
	"  -l, --selector SEL  the nodes whose labels match, e.g. -l rack=r06\n"
	"  -r, --reason TEXT   why (optional)\n"
	"  -o, --output json   print the server's answer as JSON\n"
	"  -h, --help          this help\n";

static const char node_retire_usage[] =
	"Usage: fleetplane node retire NAME --reason TEXT [--skip-power-off] [-o json]\n"
	"\n"
	"  -r, --reason TEXT   why (required)\n"
	"  --skip-power-off    retire without touching the BMC (it cannot power the machine\n"
	"                      off): PoweredOn becomes Unknown/NotPoweredOff; also ends a retire\n"
	"                      whose power off keeps failing\n"
	"  -o, --output json   print the server's answer as JSON\n"
	"  -h, --help          this help\n";

static const char node_release_usage[] =
	"Usage: fleetplane node release NAME --owner OWNER --reason TEXT [-o json]\n"
	"\n"
	"  --owner OWNER       whose hold to release, e.g. health or slurm:alice (required)\n"
	"  -r, --reason TEXT   why (required; audited)\n"
	"  -o, --output json   print the server's answer as JSON\n"
	"  -h, --help          this help\n";

static const char node_power_usage[] =
	"Usage: fleetplane node power NAME on|off|cycle|soft|reset|status [--wait] [--force]\n"
	"                             [--refresh] [--timeout SECONDS] [-o json]\n"
	"       fleetplane node power HOSTLIST|-l SELECTOR on|off|cycle|soft|reset|status\n"
	"                             [--force] [-o json]\n"
	"\n"
	"  A hostlist ('r06n[01-08]') or -l SELECTOR powers many nodes in one request (at most\n"
	"  1000), each as one NAME would be; a forced off/soft/cycle/reset answers to the\n"
	"  disruption budgets like a drain. One row per node; exit 1 when any was refused.\n"
	"\n"
	"  Queues a power operation (behind the node's operation in flight, if any) and exits once\n"
	"  the server accepted it. 'status' reads the BMC and waits: it prints on, off or\n"
	"  unknown (REASON: MESSAGE); while the node has an operation in flight it prints the last\n"
	"  recorded power instead (a fresh read would queue behind it) unless --refresh or --wait.\n"
	"\n"
	"  -f, --force         off/soft on an available or in_service node, and off/soft/cycle/\n"
	"                      reset on a node Slurm runs jobs on (else refused: drain it first)\n"
	"  -r, --refresh       status: queue a fresh read even behind an operation in flight\n"
	"  -w, --wait          wait for the operation to end: print the node's power and exit 0\n"
	"                      when it succeeded; exit 1 with its last error when it failed\n"
	"  -t, --timeout SECONDS  how long --wait waits (default 900; 1..86400); exit 1 after\n"
	"  -o, --output json   print the accepted operation document (and with --wait, the ended\n"
	"                      one) as JSON\n"
	"  -h, --help          this help\n";

static const char *const node_phase_names[] = {
#define X(e, s) s,
	NODE_PHASE_MAP(X)
#undef X
};
#define NODE_NPHASES (sizeof(node_phase_names) / sizeof(node_phase_names[0]))

/* ---- rows ---- */

static void node_holds_text(const json_t *doc, struct buf *b)
{
	json_t *holds = jsonx_path(doc, "status.holds");
	size_t i;
	json_t *h;
	json_array_foreach(holds, i, h) {
		const char *o = json_string_value(json_object_get(h, "owner"));
		if (buf_printf(b, "%s%s", b->len ? "," : "", o ? o : "?") < 0)
			return;
	}
}

static void node_labels_text(const json_t *doc, struct buf *b)
{
	json_t *labels = jsonx_path(doc, "metadata.labels");
	const char *k;
	json_t *v;
	json_object_foreach(labels, k, v) {
		const char *s = json_string_value(v);
		if (buf_printf(b, "%s%s=%s", b->len ? "," : "", k, s ? s : "") < 0)
			return;
	}
}

static const struct table_colspec node_cols[] = {
	{"NAME", 40}, {"PHASE", 14}, {"HOLDS", 30}, {"SITE", 20},
	{"RACK", 20}, {"GPUS", 6},   {"AGE", 6},    {NULL, 0},
};
static const struct table_colspec node_wide_cols[] = {{"OPERATION", 0}, {"LABELS", 0}, {NULL, 0}};

static void node_table_row(struct table *t, const json_t *doc, enum client_output o, int64_t now)
{
	struct buf b;
	char age[16];
	buf_init(&b, 1 << 16);
	table_cell(t, jsonx_str(doc, "metadata.name"));
	table_cell(t, jsonx_str(doc, "status.phase"));
	node_holds_text(doc, &b);
	table_cell(t, b.data);
	table_cell(t, jsonx_str(doc, "spec.site"));
	table_cell(t, jsonx_str(doc, "spec.rack"));
	json_t *g = jsonx_path(doc, "spec.gpus.count");
	if (json_is_integer(g))
		table_cellf(t, "%lld", (long long)json_integer_value(g));
	else
		table_cell(t, NULL);
	table_age(now, client_time_ms(jsonx_path(doc, "metadata.createdAt")), age, sizeof(age));
	table_cell(t, age);
	if (o == CLIENT_OUT_WIDE) {
		table_cell(t, jsonx_str(doc, "status.operation"));
		buf_reset(&b);
		node_labels_text(doc, &b);
		table_cell(t, b.data);
	}
	buf_release(&b);
}

static const struct cli_view node_view = {node_cols, node_wide_cols, node_table_row,
					  "No nodes found.\n"};

/* -o reasons, like Slurm's `sinfo -R`: one row per hold, nodes without holds left out. */
static const struct table_colspec node_reasons_cols[] = {
	{"NODE", 40}, {"OWNER", 32}, {"SINCE", 24}, {"REASON", 80}, {NULL, 0},
};

static void node_reasons_row(struct table *t, const json_t *doc, enum client_output o, int64_t now)
{
	size_t i;
	json_t *h;
	json_array_foreach(jsonx_path(doc, "status.holds"), i, h) {
		table_cell(t, jsonx_str(doc, "metadata.name"));
		table_cell(t, jsonx_str(h, "owner"));
		table_cell(t, jsonx_str(h, "since"));
		table_cell(t, jsonx_str(h, "reason"));
	}
}

static const struct cli_view node_reasons_view = {node_reasons_cols, NULL, node_reasons_row,
						  "No holds found.\n"};

/* ---- list ---- */

/* Builds "/v1/nodes?labelSelector=..&phase=.." (+ watch parameters when rv is non-NULL) into
 * *path (malloc'd). Returns 0 or cli_path_query's usage error (filters too long). */
static int node_list_path(const char *selector, const char *phase, const char *rv, char **path)
{
	const struct cli_query q[] = {
		{"watch", rv ? "1" : NULL},
		{"resourceVersion", rv},
		{"labelSelector", selector},
		{"phase", phase},
	};
	return cli_path_query("node list", "/v1/nodes", q, 4, path);
}

struct node_watch {
	json_t *phase_of; /* name -> phase string */
	char rv[64];
	int tty;
	struct cli_throttle th; /* redraws at most every 100 ms, the last change never lost */
	int drawn;
	FILE *err; /* where event errors go: stderr, or a buffer while a bar is shown */
};

#define NODE_WATCH_RELIST 100

/* Draws the bar: at once when force, else when the throttle says so; changed 1 for a change,
 * 0 for a tick (BOOKMARK, heartbeat, libcurl progress) that only draws what is pending. */
static void node_watch_draw(struct node_watch *w, int force, int changed)
{
	int64_t now = client_now_ms();
	if (force) {
		w->th.last_ms = now;
		w->th.pending = 0;
	} else if (!cli_throttle_due(&w->th, now, changed)) {
		return;
	}
	size_t counts[NODE_NPHASES + 1];
	memset(counts, 0, sizeof(counts));
	size_t total = 0;
	const char *k;
	json_t *v;
	json_object_foreach(w->phase_of, k, v) {
		const char *p = json_string_value(v);
		size_t i;
		for (i = 0; i < NODE_NPHASES; i++)
			if (p && strcmp(p, node_phase_names[i]) == 0)
				break;
		counts[i]++; /* i == NODE_NPHASES: a phase this client does not know */
		total++;
	}
	size_t avail = counts[PHASE_AVAILABLE];
	size_t fill = total ? avail * 20 / total : 0;
	char bar[21];
	for (size_t i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[20] = 0;
	printf("\r%s %zu/%zu [%s]", node_phase_names[PHASE_AVAILABLE], avail, total, bar);
	for (size_t i = 0; i < NODE_NPHASES; i++)
		if (i != PHASE_AVAILABLE && counts[i])
			printf(" %s %zu", node_phase_names[i], counts[i]);
	if (counts[NODE_NPHASES])
		printf(" other %zu", counts[NODE_NPHASES]);
	fputs("\033[K", stdout);
	fflush(stdout);
	w->drawn = 1;
}

static void node_watch_tick(void *arg)
{
	struct node_watch *w = arg;
	if (w->drawn)
		node_watch_draw(w, 0, 0);
}

static void node_watch_line(const char *type, const char *name, const char *old, const char *now)
{
	if (old && now && strcmp(old, now) != 0)
		printf("%s %s %s->%s\n", type, name, old, now);
	else
		printf("%s %s %s\n", type, name, now ? now : (old ? old : "-"));
	fflush(stdout);
}

static int node_watch_event(void *arg, json_t *ev)
{
	struct node_watch *w = arg;
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	if (!type) {
		fprintf(w->err, "error: watch event without a type\n");
		return CLIENT_EXIT_API;
	}
	if (strcmp(type, "ERROR") == 0) {
		json_t *st = json_object_get(obj, "status");
		if (json_integer_value(st) == 410)
			return NODE_WATCH_RELIST;
		char line[1400];
		client_problem_format(json_integer_value(st), obj, NULL, 0, line, sizeof(line));
		fprintf(w->err, "%s\n", line);
		return CLIENT_EXIT_API;
	}
	char rv[64];
	client_rv_text(jsonx_path(obj, "metadata.resourceVersion"), rv, sizeof(rv));
	if (rv[0])
		snprintf(w->rv, sizeof(w->rv), "%s", rv);
	if (strcmp(type, "BOOKMARK") == 0) {
		if (w->tty)
			node_watch_draw(w, 0, 0); /* a change the throttle held back */
		return 0;
	}
	const char *name = jsonx_str(obj, "metadata.name");
	if (!name)
		return 0;
	const char *phase = jsonx_str(obj, "status.phase");
	json_t *oldv = json_object_get(w->phase_of, name);
	char *old = oldv ? xstrdup(json_string_value(oldv) ? json_string_value(oldv) : "-") : NULL;
	if (strcmp(type, "DELETED") == 0)
		json_object_del(w->phase_of, name);
	else
		json_object_set_new(w->phase_of, name, json_string(phase ? phase : "-"));
	if (w->tty) {
		node_watch_draw(w, 0, 1);
	} else {
		char *tc = table_clean(type, 0), *nc = table_clean(name, 0);
		char *pc = phase ? table_clean(phase, 0) : NULL;
		char *oc = old ? table_clean(old, 0) : NULL;
		node_watch_line(tc, nc, strcmp(type, "DELETED") == 0 ? NULL : oc,
				pc ? pc : (strcmp(type, "DELETED") == 0 ? oc : "-"));
		free(tc);
		free(nc);
		free(pc);
		free(oc);
	}
	free(old);
	return 0;
}

/* Lists, diffs against what the watch knew (all ADDED the first time), takes the list's rv. */
static int node_watch_relist(struct client *c, struct node_watch *w, const char *selector,
			     const char *phase)
{
	char *path = NULL;
	json_t *items = NULL;
	char *rv = NULL;
	int rc = node_list_path(selector, phase, NULL, &path);
	if (rc == 0)
		rc = client_list(c, path, 0, &items, &rv);
	free(path);
	if (rc != CLIENT_EXIT_OK)
		return rc;
	json_t *fresh = json_object();
	size_t i;
	json_t *doc;
	json_array_foreach(items, i, doc) {
		const char *name = jsonx_str(doc, "metadata.name");
		const char *ph = jsonx_str(doc, "status.phase");
		if (name)
			json_object_set_new(fresh, name, json_string(ph ? ph : "-"));
	}
	if (!w->tty) {
		const char *k;
		json_t *v;
		json_object_foreach(w->phase_of, k, v)
			if (!json_object_get(fresh, k))
				node_watch_line("DELETED", k, NULL, json_string_value(v));
		json_object_foreach(fresh, k, v) {
			json_t *ov = json_object_get(w->phase_of, k);
			if (!ov)
				node_watch_line("ADDED", k, NULL, json_string_value(v));
			else if (!json_equal(ov, v))
				node_watch_line("MODIFIED", k, json_string_value(ov),
						json_string_value(v));
		}
	}
	json_decref(w->phase_of);
	w->phase_of = fresh;
	snprintf(w->rv, sizeof(w->rv), "%s", rv ? rv : "0");
	free(rv);
	json_decref(items);
	if (w->tty)
		node_watch_draw(w, 1, 0);
	return CLIENT_EXIT_OK;
}

static void node_on_signal(int sig)
{
	client_interrupted = 1;
}

static int node_watch(struct client *c, const char *selector, const char *phase)
{
	struct node_watch w;
	memset(&w, 0, sizeof(w));
	w.phase_of = json_object();
	w.tty = isatty(STDOUT_FILENO);
	w.th.interval_ms = 100;
	w.err = stderr;
	/* on a terminal, hold error lines back until the bar's line is finished */
	char *errtext = NULL;
	size_t errlen = 0;
	FILE *errbuf = w.tty ? open_memstream(&errtext, &errlen) : NULL;
	FILE *saved_err = c->err;
	if (errbuf)
		c->err = w.err = errbuf;
	if (w.tty) {
		c->tick = node_watch_tick;
		c->tick_arg = &w;
	}
	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = node_on_signal;
	sigemptyset(&sa.sa_mask);
	client_interrupted = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	int rc = node_watch_relist(c, &w, selector, phase);
	int64_t down_since = 0, backoff_ms = 250;
	while ((rc == CLIENT_EXIT_OK || down_since) && !client_interrupted) {
		long status = 0;
		if (down_since && !w.rv[0]) {
			rc = node_watch_relist(c, &w, selector, phase);
		} else {
			char *path = NULL;
			if ((rc = node_list_path(selector, phase, w.rv, &path)) == 0)
				rc = client_watch(c, path, node_watch_event, &w, &status);
			free(path);
		}
		if (rc == CLIENT_EXIT_CONNECT || (rc == CLIENT_EXIT_API && status == 503)) {
			/* The server is restarting: keep trying for a minute, then give up. */
			int64_t now = client_now_ms();
			if (!down_since)
				down_since = now;
			if (now - down_since > 60000)
				break;
			struct timespec ts = {backoff_ms / 1000, (backoff_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
			backoff_ms = backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
			continue;
		}
		down_since = 0;
		backoff_ms = 250;
		if (rc == NODE_WATCH_RELIST || (rc == CLIENT_EXIT_API && status == 410)) {
			rc = node_watch_relist(c, &w, selector, phase);
			continue;
		}
		if (rc == CLIENT_EXIT_OK && !client_interrupted) {
			/* the server ended the stream (restart, timeout): resume from the last rv */
			struct timespec ts = {1, 0};
			nanosleep(&ts, NULL);
		}
	}
	if (client_interrupted)
		rc = CLIENT_EXIT_OK; /* Ctrl-C is how a watch ends */
	if (w.tty && w.drawn) {
		node_watch_draw(&w, 1, 0);
		fputc('\n', stdout);
		fflush(stdout);
	}
	if (errbuf) {
		fclose(errbuf);
		c->err = saved_err;
		if (errlen && !client_interrupted)
			fputs(errtext, stderr);
		free(errtext);
	}
	c->tick = NULL; /* w ends here */
	c->tick_arg = NULL;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	json_decref(w.phase_of);
	return rc;
}

static int node_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"selector", required_argument, NULL, 'l'},
		{"phase", required_argument, NULL, 'p'},
		{"output", required_argument, NULL, 'o'},
		{"watch", no_argument, NULL, 'w'},
		CLI_LIST_OPTS,
		CLI_OPTS_END_HELP,
	};
	const char *cmd = "node list";
	struct buf sel;
	buf_init(&sel, 1 << 14);
	const char *phase = NULL;
	struct cli_listfmt f = {CLIENT_OUT_TABLE, 0, NULL, "node"};
	int watch = 0, reasons = 0, ch, rc = CLIENT_EXIT_OK;
	char *path = NULL;

	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":l:o:wh", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			if (!*optarg) {
				rc = client_usage_error(cmd,
							"flag '-l' needs a non-empty selector");
				goto out;
			}
			if (buf_printf(&sel, "%s%s", sel.len ? "," : "", optarg) < 0) {
				rc = client_usage_error(cmd, "selector too long");
				goto out;
			}
			break;
		case 'p':
			if ((rc = cli_opt_value(cmd, "--phase", "a phase", &phase)) != 0)
				goto out;
			break;
		case 'w': watch = 1; break;
		case 'o':
			if (strcmp(optarg, "reasons") == 0) {
				reasons = 1;
				f.o = CLIENT_OUT_TABLE;
				break;
			}
			reasons = 0;
			/* fall through */
		default:
			if ((rc = cli_opt_list(cmd, ch, argv, node_list_usage, &f)) != CLI_GO_ON)
				goto out;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		goto out;
	if (watch && (f.o != CLIENT_OUT_TABLE || reasons || f.no_headers || f.sort_by)) {
		rc = client_usage_error(cmd, "--watch cannot be combined with -o, --no-headers or "
					     "--sort-by");
		goto out;
	}
	if ((rc = node_list_path(sel.data, phase, NULL, &path)) != 0)
		goto out; /* checked before any connection, for the list and the watch */
	if (watch) {
		struct client c;
		memset(&c, 0, sizeof(c));
		if ((rc = client_init(&c)) == 0)
			rc = node_watch(&c, sel.data, phase);
		client_release(&c);
		goto out;
	}
	rc = cli_list_print_fmt(path, 0, &f, reasons ? &node_reasons_view : &node_view);
out:
	free(path);
	buf_release(&sel);
	return rc;
}

/* ---- get ---- */

static void node_print_inventory(const json_t *inv)
{
	if (!json_is_object(inv) || json_object_size(inv) == 0) {
		cli_print_kv("Inventory:", "<none>");
		return;
	}
	puts("Inventory:");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)inv, k, v) {
		char val[256];
		if (json_is_string(v))
			snprintf(val, sizeof(val), "%s", json_string_value(v));
		else if (json_is_integer(v))
			snprintf(val, sizeof(val), "%lld", (long long)json_integer_value(v));
		else if (json_is_real(v))
			snprintf(val, sizeof(val), "%g", json_real_value(v));
		else if (json_is_boolean(v))
			snprintf(val, sizeof(val), "%s", json_is_true(v) ? "true" : "false");
		else if (json_is_array(v)) {
			/* a list of devices: count them and name the first model if there is one */
			const char *model = jsonx_str(json_array_get(v, 0), "model");
			if (!model)
				model = jsonx_str(json_array_get(v, 0), "name");
			if (model)
				snprintf(val, sizeof(val), "%zu x %s", json_array_size(v), model);
			else
				snprintf(val, sizeof(val), "%zu entries", json_array_size(v));
		} else if (json_is_object(v)) {
			/* one level down: its scalar fields as k=v, the rest counted */
			struct buf b;
			buf_init(&b, sizeof(val) - 1);
			const char *k2;
			json_t *v2;
			size_t other = 0;
			json_object_foreach(v, k2, v2) {
				const char *sp = b.len ? " " : "";
				if (json_is_string(v2))
					buf_printf(&b, "%s%s=%s", sp, k2, json_string_value(v2));
				else if (json_is_integer(v2))
					buf_printf(&b, "%s%s=%lld", sp, k2,
						   (long long)json_integer_value(v2));
				else if (json_is_boolean(v2))
					buf_printf(&b, "%s%s=%s", sp, k2,
						   json_is_true(v2) ? "true" : "false");
				else
					other++;
			}
			if (other)
				buf_printf(&b, "%s(+%zu more)", b.len ? " " : "", other);
			snprintf(val, sizeof(val), "%s", b.data ? b.data : "{}");
			buf_release(&b);
		} else
			snprintf(val, sizeof(val), "null");
		char *kc = table_clean(k, 40), *vc = table_clean(val, 120);
		printf("  %s: %s\n", kc, vc);
		free(kc);
		free(vc);
	}
}

/* Prints arr (holds or conditions: objects of strings) as "<label>" and a table indented by
 * two, a column of cols per key of keys ("since" shows as its AGE at now), or as
 * "<label> <none>" when it is empty. */
static void node_print_objects(const char *label, const json_t *arr,
			       const struct table_colspec *cols, const char *const *keys,
			       int64_t now)
{
	if (json_array_size(arr) == 0) {
		cli_print_kv(label, "<none>");
		return;
	}
	puts(label);
	struct table t;
	table_init(&t, 0);
	table_cols(&t, cols);
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x) {
		for (const char *const *k = keys; *k; k++) {
			char age[16];
			json_t *v = json_object_get(x, *k);
			if (strcmp(*k, "since") == 0) {
				table_age(now, client_time_ms(v), age, sizeof(age));
				table_cell(&t, age);
			} else {
				table_cell(&t, json_string_value(v));
			}
		}
	}
	table_print_indent(&t, stdout, 2);
	table_release(&t);
}

static void node_print_human(const json_t *doc)
{
	int64_t now = client_now_ms();
	char age[16], line[512];
	struct buf b;
	buf_init(&b, 1 << 16);

	cli_print_kv("Name:", jsonx_str(doc, "metadata.name"));
	table_age(now, client_time_ms(jsonx_path(doc, "status.phaseSince")), age, sizeof(age));
	const char *phase = jsonx_str(doc, "status.phase");
	snprintf(line, sizeof(line), "%s (for %s)", phase ? phase : "-", age);
	cli_print_kv("Phase:", line);
	cli_print_kv("Site:", jsonx_str(doc, "spec.site"));
	cli_print_kv("Rack:", jsonx_str(doc, "spec.rack"));
	cli_print_kv("Provider:", jsonx_str(doc, "spec.provider"));
	cli_print_kv("Pool:", jsonx_str(doc, "spec.pool"));
	node_labels_text(doc, &b);
	cli_print_kv("Labels:", b.data);
	json_t *g = jsonx_path(doc, "spec.gpus.count");
	const char *model = jsonx_str(doc, "spec.gpus.model");
	if (json_is_integer(g))
		snprintf(line, sizeof(line), "%lld x %s", (long long)json_integer_value(g),
			 model ? model : "unknown model");
	else
		snprintf(line, sizeof(line), "-");
	cli_print_kv("GPUs:", line);
	const char *drv = jsonx_str(doc, "spec.bmc.driver"),
		   *addr = jsonx_str(doc, "spec.bmc.address");
	snprintf(line, sizeof(line), "%s%s%s", drv ? drv : "-", addr ? " " : "", addr ? addr : "");
	cli_print_kv("BMC:", line);
	cli_print_kv("Operation:", jsonx_str(doc, "status.operation"));
	const char *created = jsonx_str(doc, "metadata.createdAt");
	table_age(now, client_time_ms(jsonx_path(doc, "metadata.createdAt")), age, sizeof(age));
	snprintf(line, sizeof(line), "%s (%s ago)", created ? created : "-", age);
	cli_print_kv("Created:", line);

	static const struct table_colspec hold_cols[] = {
		{"OWNER", 30}, {"REASON", 60}, {"AGE", 6}, {"EXPIRES", 0}, {NULL, 0},
	};
	static const char *const hold_keys[] = {"owner", "reason", "since", "expires", NULL};
	static const struct table_colspec cond_cols[] = {
		{"TYPE", 24}, {"STATUS", 8}, {"REASON", 30}, {"AGE", 6}, {"MESSAGE", 80}, {NULL, 0},
	};
	static const char *const cond_keys[] = {"type",  "status",  "reason",
						"since", "message", NULL};
	node_print_objects("Holds:", jsonx_path(doc, "status.holds"), hold_cols, hold_keys, now);
	node_print_objects("Conditions:", jsonx_path(doc, "status.conditions"), cond_cols,
			   cond_keys, now);
	node_print_inventory(jsonx_path(doc, "status.inventory"));
	buf_release(&b);
}

/* Refuses an empty or wildcard target (DESIGN.md principle 5). Returns 0 or a usage error. */
static int node_check_target(const char *cmd, const char *name)
{
	if (!name || !*name)
		return client_usage_error(cmd, "refusing an empty node name");
	if (strpbrk(name, "*?,=[] \t\n"))
		return client_usage_error(cmd,
					  "refusing node name '%s': wildcards and selectors are "
					  "not targets; name one node",
					  name);
	char err[256];
	if (name_validate("NAME", name, err, sizeof(err)) < 0)
		return client_usage_error(cmd, "%s", err); /* no round trip for a 404 */
	return 0;
}

/* Parses "NAME" positional: exactly one, a node name (node_check_target). */
static int node_one_name(const char *cmd, int argc, char **argv, const char **name)
{
	int rc = cli_one_operand(cmd, argc, argv, "missing NAME", 1, name);
	return rc ? rc : node_check_target(cmd, *name);
}

static int node_get(int argc, char **argv)
{
	static const struct cli_get get = {"node get",     node_get_usage,    "nodes",
					   "missing NAME", node_check_target, node_print_human};
	return cli_get_verb(&get, argc, argv);
}

/* ---- enroll ---- */

static int node_enroll(int argc, char **argv)
{
	static const struct option opts[] = {
		{"file", required_argument, NULL, 'f'},
		CLI_OPTS_END_HELP,
	};
	const char *cmd = "node enroll", *file = NULL;
	int ch, rc = CLIENT_EXIT_OK;
	json_t *body = NULL, *resp = NULL;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":f:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'f': file = optarg; break;
		default: return cli_opt_default(cmd, ch, argv, node_enroll_usage, 0, NULL);
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	if (!file || !*file)
		return client_usage_error(cmd, "missing -f FILE");
	if ((rc = cli_read_json_file(file, CLIENT_MAX_BODY, &body)) != 0)
		goto out;
	size_t count;
	json_t *arr = json_object_get(body, "items");
	if (!json_is_object(body)) {
		fprintf(stderr, "error: %s: expected a node document or {\"items\":[...]}\n", file);
		rc = CLIENT_EXIT_USAGE;
		goto out;
	}
	if (arr) {
		if (!json_is_array(arr) || json_array_size(arr) == 0) {
			fprintf(stderr, "error: %s: \"items\" must be a non-empty array of nodes\n",
				file);
			rc = CLIENT_EXIT_USAGE;
			goto out;
		}
		count = json_array_size(arr);
	} else {
		count = 1;
	}
	if ((rc = cli_call("POST", "/v1/nodes", body, &resp)) != CLIENT_EXIT_OK)
		goto out;
	json_t *ritems = json_object_get(resp, "items");
	if (json_is_array(ritems))
		count = json_array_size(ritems);
	printf("enrolled %zu node%s\n", count, count == 1 ? "" : "s");
out:
	json_decref(body);
	json_decref(resp);
	return rc;
}

/* ---- drain, resume, retire, release ---- */

struct node_action {
	const char *verb; /* "drain" */
	const char *done; /* "drain requested" */
	const char *usage;
	int reason_required;
	int owner; /* 1: --owner required (release) */
};

static const struct node_action node_actions[] = {
	{"drain", "drain requested", node_drain_usage, 1, 0},
	{"resume", "resume requested", node_resume_usage, 0, 0},
	{"retire", "retire requested", node_retire_usage, 1, 0},
	{"release", "hold released", node_release_usage, 1, 1},
};

#define NODE_BULK_MAX 1000 /* the API's bound (docs/api.md "Bulk drain and resume") */

static const struct table_colspec node_bulk_cols[] = {{"NODE", 40},
						      {"RESULT", 10},
						      {"REASON", 100},
						      {NULL, 0}};

/* POST /v1/nodes:<verb> with {"selector"} or {"names"} and the reason; prints the per-node
 * table and a summary (or -o json the answer). Exit 1 when a node was not accepted. */
static int node_bulk(const char *cmd, const char *verb, const char *selector,
		     const struct hostlist *hl, const char *reason, json_t *extra,
		     enum client_output o)
{
	json_t *body = extra ? extra : json_object(), *resp = NULL;
	if (selector) {
		json_object_set_new(body, "selector", json_string(selector));
	} else {
		json_t *names = json_array();
		for (size_t i = 0; i < hl->n; i++)
			json_array_append_new(names, json_string(hostlist_name(hl, i)));
		json_object_set_new(body, "names", names);
	}
	if (reason && *reason)
		json_object_set_new(body, "reason", json_string(reason));
	char path[32];
	snprintf(path, sizeof(path), "/v1/nodes:%s", verb);
	int rc = cli_call("POST", path, body, &resp);
	json_decref(body);
	if (rc != CLIENT_EXIT_OK)
		return rc;
	json_t *items = json_object_get(resp, "items");
	if (!json_is_array(items)) {
		fprintf(stderr, "error: the answer to POST %s has no items\n", path);
		json_decref(resp);
		return CLIENT_EXIT_API;
	}
	size_t i, bad = 0;
	json_t *it;
	json_array_foreach(items, i, it) {
		const char *res = jsonx_str(it, "result");
		bad += !res || strcmp(res, "accepted") != 0;
	}
	if (o == CLIENT_OUT_JSON) {
		client_print_json(resp);
	} else if (json_array_size(items) == 0) {
		fprintf(stderr, "no node matches the selector\n");
		bad = 1;
	} else {
		struct table t;
		table_init(&t, 0);
		table_cols(&t, node_bulk_cols);
		json_array_foreach(items, i, it) {
			table_cell(&t, jsonx_str(it, "name"));
			table_cell(&t, jsonx_str(it, "result"));
			if (jsonx_str(it, "operation"))
				table_cellf(&t, "operation %s", jsonx_str(it, "operation"));
			else
				table_cell(&t, jsonx_str(it, "reason"));
		}
		table_print(&t, stdout);
		table_release(&t);
		printf("%zu node%s: %lld accepted, %lld refused, %lld not found\n",
		       json_array_size(items), json_array_size(items) == 1 ? "" : "s",
		       (long long)json_integer_value(json_object_get(resp, "accepted")),
		       (long long)json_integer_value(json_object_get(resp, "refused")),
		       (long long)json_integer_value(json_object_get(resp, "notFound")));
	}
	json_decref(resp);
	return bad ? CLIENT_EXIT_API : CLIENT_EXIT_OK;
}

/* Expands a drain/resume operand that is a hostlist (holds '[' or ','), checking every name
 * and the bound. Returns 0 or a usage error. */
static int node_bulk_names(const char *cmd, const char *arg, struct hostlist *hl)
{
	char err[256];
	if (strpbrk(arg, "*?=")) /* wildcards and selectors are never targets (principle 5) */
		return node_check_target(cmd, arg);
	if (hostlist_expand(hl, arg, strlen(arg), err, sizeof(err)) < 0)
		return client_usage_error(cmd, "bad hostlist '%s': %s", arg, err);
	if (hl->n == 0)
		return client_usage_error(cmd, "hostlist '%s' names no node", arg);
	if (hl->n > NODE_BULK_MAX)
		return client_usage_error(cmd, "hostlist '%s' names %zu nodes; at most %d at once",
					  arg, hl->n, NODE_BULK_MAX);
	for (size_t i = 0; i < hl->n; i++)
		if (name_validate("NAME", hostlist_name(hl, i), err, sizeof(err)) < 0)
			return client_usage_error(cmd, "hostlist '%s': %s", arg, err);
	return 0;
}

static int node_act(const struct node_action *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{"selector", required_argument, NULL, 'l'},
		{"reason", required_argument, NULL, 'r'},
		{"owner", required_argument, NULL, 'O'},
		{"skip-power-off", no_argument, NULL, 'S'},
		CLI_OPTS_END,
	};
	char cmd[32];
	int skip = 0;
	snprintf(cmd, sizeof(cmd), "node %s", a->verb);
	const char *name = NULL, *reason = NULL, *owner = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	json_t *body = NULL, *resp = NULL;
	const char *selector = NULL;
	int bulk_ok = strcmp(a->verb, "drain") == 0 || strcmp(a->verb, "resume") == 0;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":l:r:o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r': reason = optarg; break;
		case 'l':
			if (!bulk_ok)
				return client_usage_error(cmd, "unknown flag '-l'");
			if ((rc = cli_opt_value(cmd, "-l", "a non-empty selector", &selector)) != 0)
				return rc;
			break;
		case 'O':
			if (!a->owner)
				return client_usage_error(cmd, "unknown flag '--owner'");
			owner = optarg;
			break;
		case 'S':
			if (strcmp(a->verb, "retire") != 0)
				return client_usage_error(cmd, "unknown flag '--skip-power-off'");
			skip = 1;
			break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, a->usage, 0, &o)) != CLI_GO_ON)
				return rc;
		}
	}
	if (selector || (bulk_ok && optind < argc && strpbrk(argv[optind], "[,"))) {
		struct hostlist hl;
		hostlist_init(&hl);
		if (selector)
			rc = cli_no_operands(cmd, argc, argv);
		else if (optind + 1 < argc)
			rc = client_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
		else
			rc = node_bulk_names(cmd, argv[optind], &hl);
		if (rc == 0 && a->reason_required && (!reason || !*reason))
			rc = client_usage_error(cmd, "missing --reason TEXT");
		if (rc == 0)
			rc = node_bulk(cmd, a->verb, selector, &hl, reason, NULL, o);
		hostlist_release(&hl);
		return rc;
	}
	if ((rc = node_one_name(cmd, argc, argv, &name)) != 0)
		return rc;
	if (a->owner && (!owner || !*owner))
		return client_usage_error(cmd, "missing --owner OWNER");
	if (a->reason_required && (!reason || !*reason))
		return client_usage_error(cmd, "missing --reason TEXT");
	body = json_object();
	if (owner)
		json_object_set_new(body, "owner", json_string(owner));
	if (reason && *reason)
		json_object_set_new(body, "reason", json_string(reason));
	if (skip)
		json_object_set_new(body, "skipPowerOff", json_true());
	char *path = cli_doc_path("nodes", name, a->verb);
	rc = cli_call("POST", path, body, &resp);
	free(path);
	if (rc != CLIENT_EXIT_OK)
		goto out;
	if (o == CLIENT_OUT_JSON) {
		if (!resp)
			resp = json_object(); /* an empty answer prints as {} */
		client_print_json(resp);
		goto out;
	}
	char *nc = table_clean(name, 0);
	const char *phase = jsonx_str(resp, "status.phase");
	char *pc = phase ? table_clean(phase, 0) : NULL;
	char *oc = owner ? table_clean(owner, 0) : NULL;
	printf("node/%s %s%s%s%s%s%s\n", nc,
	       skip ? "retire requested without powering off" : a->done, oc ? " (owner " : "",
	       oc ? oc : "", oc ? ")" : "", pc ? ", phase " : "", pc ? pc : "");
	free(nc);
	free(pc);
	free(oc);
out:
	json_decref(body);
	json_decref(resp);
	return rc;
}

/* ---- power ---- */

static const char *const node_power_actions[] = {"on",    "off",    "cycle", "soft",
						 "reset", "status", NULL};

#define NODE_POWER_POLL_MS 500
#define NODE_POWER_TIMEOUT_S 900

static void node_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !client_interrupted)
		;
}

static int node_op_terminal(const char *state)
{
	return state && (!strcmp(state, "succeeded") || !strcmp(state, "failed") ||
			 !strcmp(state, "cancelled"));
}

/* Prints the node's power from its PoweredOn condition: "on", "off" or
 * "unknown (REASON: MESSAGE)". */
static void node_print_power(const json_t *node)
{
	json_t *conds = jsonx_path(node, "status.conditions");
	const json_t *pc = NULL;
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *t = jsonx_str(c, "type");
		if (t && !strcmp(t, "PoweredOn"))
			pc = c;
	}
	const char *st = pc ? jsonx_str(pc, "status") : NULL;
	if (st && !strcmp(st, "True")) {
		printf("on\n");
		return;
	}
	if (st && !strcmp(st, "False")) {
		printf("off\n");
		return;
	}
	const char *reason = pc ? jsonx_str(pc, "reason") : NULL;
	const char *msg = pc ? jsonx_str(pc, "message") : NULL;
	char *rc = table_clean(reason ? reason : "NoPowerReading", 0);
	char *mc = table_clean(msg ? msg : "the node has no PoweredOn condition yet", 0);
	printf("unknown (%s: %s)\n", rc, mc);
	free(rc);
	free(mc);
}

/* `node power NAME status` while the node has operation `busy` in flight: prints the power
 * last recorded in its PoweredOn condition (status, reason, age) and that a fresh read would
 * queue behind busy; -o json prints {"poweredOn": CONDITION|null, "behind": busy}. */
static void node_print_recorded_power(const json_t *node, const char *busy, enum client_output o)
{
	json_t *conds = jsonx_path(node, "status.conditions");
	json_t *pc = NULL, *c;
	size_t i;
	json_array_foreach(conds, i, c) {
		const char *t = jsonx_str(c, "type");
		if (t && !strcmp(t, "PoweredOn"))
			pc = c;
	}
	if (o == CLIENT_OUT_JSON) {
		json_t *j = json_pack("{s:O?,s:s}", "poweredOn", pc, "behind", busy);
		client_print_json(j);
		json_decref(j);
		return;
	}
	char *bc = table_clean(busy, 0);
	if (!pc) {
		printf("no power recorded yet; a fresh read would queue behind operation %s "
		       "(--refresh queues one)\n",
		       bc);
		free(bc);
		return;
	}
	const char *st = jsonx_str(pc, "status");
	const char *word = st && !strcmp(st, "True")    ? "on"
			   : st && !strcmp(st, "False") ? "off"
							: "unknown";
	char age[32] = "?";
	table_age(client_now_ms(), client_time_ms(json_object_get(pc, "since")), age, sizeof(age));
	char *sc = table_clean(st ? st : "?", 0);
	char *rc = table_clean(jsonx_str(pc, "reason") ? jsonx_str(pc, "reason") : "?", 0);
	printf("%s (recorded %s ago: PoweredOn %s, %s)\n", word, age, sc, rc);
	printf("not read now: a fresh read would queue behind operation %s (--refresh queues "
	       "one)\n",
	       bc);
	free(sc);
	free(rc);
	free(bc);
}

/* The wait was interrupted (SIGINT/SIGTERM) or timed out while operation id had not started
 * (state pending: queued behind another operation, or not yet picked up): with cancel, asks
 * POST /v1/operations/ID:cancel (best effort: the server refuses an operation that started
 * meanwhile, 409) and says what happened; otherwise says how to cancel it. */
static void node_power_abandon(struct client *c, const char *id, int cancel)
{
	char *ic = table_clean(id, 0);
	if (cancel) {
		char *esc = client_escape(id);
		char *path = xasprintf("/v1/operations/%s:cancel", esc);
		free(esc);
		json_t *body = json_pack("{s:s}", "reason", "fleetplane node power interrupted");
		json_t *resp = NULL;
		client_interrupted = 0; /* let the cancel request through */
		int rc = client_request(c, "POST", path, body, NULL, &resp);
		json_decref(body);
		json_decref(resp);
		free(path);
		if (rc == CLIENT_EXIT_OK) {
			fprintf(stderr, "interrupted: operation %s had not started; cancelled it\n",
				ic);
			free(ic);
			return;
		}
	}
	fprintf(stderr, "operation %s has not started; to drop it: fleetplane op cancel %s\n", ic,
		ic);
	free(ic);
}

/* Polls GET /v1/operations/ID until it ends or timeout_s passes; *op receives the last
 * document read. SIGINT/SIGTERM end the wait; an operation that has not started then is
 * cancelled (node_power_abandon), one that runs is left to finish. */
static int node_power_wait(struct client *c, const char *id, long timeout_s, json_t **op)
{
	char *esc = client_escape(id);
	char *path = xasprintf("/v1/operations/%s", esc);
	free(esc);
	struct sigaction sa, old_int, old_term;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = node_on_signal;
	sigemptyset(&sa.sa_mask);
	client_interrupted = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	int64_t start = client_now_ms(), until = start + timeout_s * 1000;
	int rc, pending = 1, tty = isatty(STDERR_FILENO), shown = 0;
	char line[400];
	for (;;) {
		json_decref(*op);
		*op = NULL;
		if ((rc = client_request(c, "GET", path, NULL, NULL, op)) != CLIENT_EXIT_OK) {
			if (client_interrupted && pending)
				node_power_abandon(c, id, 1);
			break;
		}
		const char *st = jsonx_str(*op, "status.state");
		pending = st && strcmp(st, "pending") == 0;
		if (node_op_terminal(st))
			break;
		/* What it waits on, for people: on a terminal, one line on stderr redrawn each
		 * poll with the time (scripts reading a pipe get the result lines only). */
		if (tty) {
			cli_wait_text(id, client_now_ms() - start, *op, line, sizeof(line));
			fprintf(stderr, "\r%s\033[K", line);
			shown = 1;
		}
		if (client_interrupted || client_now_ms() >= until) {
			int intr = client_interrupted;
			char *ic = table_clean(id, 0);
			if (intr)
				fprintf(stderr, "error: operation %s still %s when interrupted\n",
					ic, st ? st : "running");
			else
				fprintf(stderr, "error: operation %s still %s after %lds\n", ic,
					st ? st : "running", timeout_s);
			free(ic);
			if (pending)
				node_power_abandon(c, id, intr);
			rc = CLIENT_EXIT_API;
			break;
		}
		node_sleep_ms(NODE_POWER_POLL_MS);
	}
	if (shown)
		fputs("\r\033[K", stderr); /* the wait's line goes; the result follows */
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	client_interrupted = 0;
	free(path);
	return rc;
}

static int node_power(int argc, char **argv)
{
	static const struct option opts[] = {
		{"wait", no_argument, NULL, 'w'},
		{"force", no_argument, NULL, 'f'},
		{"refresh", no_argument, NULL, 'r'},
		{"timeout", required_argument, NULL, 't'},
		{"selector", required_argument, NULL, 'l'},
		CLI_OPTS_END,
	};
	const char *cmd = "node power", *name = NULL, *action = NULL, *selector = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc, wait = 0, timeout_set = 0, force = 0, refresh = 0;
	long timeout_s = NODE_POWER_TIMEOUT_S;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *body = NULL, *resp = NULL, *op = NULL, *node = NULL;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":wfrt:l:o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			if ((rc = cli_opt_value(cmd, "-l", "a non-empty selector", &selector)) != 0)
				return rc;
			break;
		case 'w': wait = 1; break;
		case 'f': force = 1; break;
		case 'r': refresh = 1; break;
		case 't': {
			char *end;
			errno = 0;
			timeout_s = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || timeout_s < 1 || timeout_s > 86400)
				return client_usage_error(cmd,
							  "--timeout: '%s' is not 1..86400 "
							  "seconds",
							  optarg);
			timeout_set = 1;
			break;
		}
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, node_power_usage, 0, &o)) !=
			    CLI_GO_ON)
				return rc;
		}
	}
	if (optind >= argc)
		return client_usage_error(cmd, "missing NAME and ACTION (on, off, cycle, soft, "
					       "reset or status)");
	struct hostlist hl;
	hostlist_init(&hl);
	int bulk = selector || strpbrk(argv[optind], "[,");
	if (!selector) {
		name = argv[optind++];
		if (!bulk && (rc = node_check_target(cmd, name)) != 0)
			return rc;
	}
	if (optind >= argc)
		return client_usage_error(cmd, "missing ACTION: on, off, cycle, soft, reset or "
					       "status");
	action = argv[optind];
	if (optind + 1 < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
	int known = 0;
	for (size_t i = 0; node_power_actions[i]; i++)
		known |= !strcmp(action, node_power_actions[i]);
	if (!known) {
		char *ac = table_clean(action, 0);
		rc = client_usage_error(cmd,
					"unknown action '%s': expected on, off, cycle, soft, "
					"reset or status",
					ac);
		free(ac);
		return rc;
	}
	int status = !strcmp(action, "status");
	if (force && (strcmp(action, "on") == 0 || strcmp(action, "status") == 0))
		return client_usage_error(cmd, "--force is for off, soft, cycle and reset only");
	if (refresh && !status)
		return client_usage_error(cmd, "--refresh is for status only");
	if (timeout_set && !wait)
		return client_usage_error(cmd, "--timeout needs --wait");
	if (bulk) {
		/* many nodes: one POST /v1/nodes:power, a result per node (node_bulk) */
		if (wait || refresh)
			return client_usage_error(cmd, "--wait and --refresh take one NAME, not a "
						       "hostlist or -l");
		if (!selector && (rc = node_bulk_names(cmd, name, &hl)) != 0) {
			hostlist_release(&hl);
			return rc;
		}
		json_t *extra = json_pack("{s:s}", "action", action);
		if (force)
			json_object_set_new(extra, "force", json_true());
		rc = node_bulk(cmd, "power", selector, &hl, NULL, extra, o);
		hostlist_release(&hl);
		return rc;
	}
	if ((rc = client_init(&c)) != 0)
		goto out;
	char *esc = client_escape(name);
	char *path;
	if (status && !wait && !refresh) {
		/* A read queued behind a long operation (a provisioning's boot wait) would block
		 * up to its deadline: look at the node first. */
		path = xasprintf("/v1/nodes/%s", esc);
		rc = client_request(&c, "GET", path, NULL, NULL, &node);
		free(path);
		if (rc != CLIENT_EXIT_OK) {
			free(esc);
			goto out;
		}
		const char *busy = jsonx_str(node, "status.operation");
		if (busy) {
			node_print_recorded_power(node, busy, o);
			free(esc);
			goto out;
		}
		json_decref(node);
		node = NULL;
	}
	if (status)
		wait = 1;
	body = json_pack("{s:s}", "action", action);
	if (force)
		json_object_set_new(body, "force", json_true());
	path = xasprintf("/v1/nodes/%s:power", esc);
	rc = client_request(&c, "POST", path, body, NULL, &resp);
	free(path);
	if (rc != CLIENT_EXIT_OK) {
		free(esc);
		goto out;
	}
	const char *id = jsonx_str(resp, "metadata.name");
	if (!id) {
		fprintf(stderr, "error: the server's answer names no operation\n");
		rc = CLIENT_EXIT_API;
		free(esc);
		goto out;
	}
	if (o == CLIENT_OUT_JSON && !wait) {
		client_print_json(resp);
		free(esc);
		goto out;
	}
	if (o != CLIENT_OUT_JSON && !status) {
		char *nc = table_clean(name, 0), *ic = table_clean(id, 0);
		const char *behind = jsonx_str(resp, "behind");
		char *bc = behind ? table_clean(behind, 0) : NULL;
		printf("power %s requested for %s: operation %s%s%s%s\n", action, nc, ic,
		       bc ? " (queued behind " : "", bc ? bc : "", bc ? ")" : "");
		fflush(stdout);
		free(nc);
		free(ic);
		free(bc);
	}
	if (!wait) {
		free(esc);
		goto out;
	}
	rc = node_power_wait(&c, id, timeout_s, &op);
	if (rc != CLIENT_EXIT_OK) {
		free(esc);
		goto out;
	}
	const char *state = jsonx_str(op, "status.state");
	if (strcmp(state, "succeeded") != 0) {
		const char *le = jsonx_str(op, "status.lastError");
		char *ic = table_clean(id, 0), *lc = table_clean(le ? le : "no error recorded", 0);
		fprintf(stderr, "error: operation %s %s: %s\n", ic, state, lc);
		free(ic);
		free(lc);
		if (o == CLIENT_OUT_JSON)
			client_print_json(op);
		rc = CLIENT_EXIT_API;
		free(esc);
		goto out;
	}
	if (o == CLIENT_OUT_JSON) {
		client_print_json(op);
		free(esc);
		goto out;
	}
	/* The node as of the operation's end: its PoweredOn was written before (or with) the
	 * operation's terminal state; a read served by a cache that lags is asked again. */
	char opr[32] = "", nr[32] = "";
	client_rv_text(jsonx_path(op, "metadata.resourceVersion"), opr, sizeof(opr));
	path = xasprintf("/v1/nodes/%s", esc);
	free(esc);
	for (int tries = 0; tries < 20; tries++) {
		json_decref(node);
		node = NULL;
		if ((rc = client_request(&c, "GET", path, NULL, NULL, &node)) != CLIENT_EXIT_OK)
			break;
		client_rv_text(jsonx_path(node, "metadata.resourceVersion"), nr, sizeof(nr));
		if (!*opr || !*nr || strtoll(nr, NULL, 10) >= strtoll(opr, NULL, 10))
			break;
		node_sleep_ms(100);
	}
	free(path);
	if (rc == CLIENT_EXIT_OK)
		node_print_power(node);
out:
	json_decref(body);
	json_decref(resp);
	json_decref(op);
	json_decref(node);
	client_release(&c);
	return rc;
}

/* ---- dispatch ---- */

int cmd_node(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"list", "ls", node_list},   {"get", NULL, node_get}, {"enroll", NULL, node_enroll},
		{"power", NULL, node_power}, {NULL, NULL, NULL},
	};
	int rc = client_dispatch(node_usage_text, verbs, argc, argv);
	if (rc >= 0)
		return rc;
	for (size_t i = 0; i < sizeof(node_actions) / sizeof(node_actions[0]); i++)
		if (!strcmp(argv[1], node_actions[i].verb))
			return node_act(&node_actions[i], argc - 1, argv + 1);
	return client_unknown_verb("node", argv[1]);
}
