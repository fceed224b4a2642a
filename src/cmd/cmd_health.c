/* cmd_health.c - `fleetplane health <noun> <verb>`: the GPU health side of the control plane
 * (issue 4) as a client of the API: health events (/v1/healthevents), the health policy
 * (/v1/policies/default: summary, dry-run switch, whole-document apply), disruption budgets
 * (/v1/budgets), correlated-failure breakers (/v1/breakers) and RMA records (/v1/rmas).
 * docs/cli.md "health" is the reference; exit codes are those of cmds.h. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/jsonx.h"
#include "base/timefmt.h"
#include "cmd/cli_common.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "cmd/table.h"

#include "base/banned.h"

#define HE_MAX_FILE ((size_t)1 << 20) /* a policy document, bytes (the API's body limit) */

static const char health_usage_text[] =
	"Usage: fleetplane health <noun> [verb] [flags]\n"
	"\n"
	"Nouns:\n"
	"  events    list health events (agent reports and their decisions)\n"
	"  policy    show the health policy, switch dry run, apply a policy document\n"
	"  budget    list, get, set, delete disruption budgets\n"
	"  breaker   list open correlated-failure breakers, reset one\n"
	"  rma       list and get RMA records\n"
	"\n"
	"Run 'fleetplane health <noun> --help' for its verbs and flags.\n";

static const char he_events_usage[] =
	"Usage: fleetplane health events [--node NAME] [--code CODE] [--limit N] [-o json|wide]\n"
	"\n"
	"      --node NAME     only events of this node\n"
	"      --code CODE     only events with this code, e.g. xid:79\n"
	"      --limit N       the newest N events (default 100; 0: all)\n"
	"  -o, --output FMT    json: {\"items\":[...]} of health event documents; wide: no truncation\n"
	"  -h, --help          this help\n";

static const char he_policy_usage[] =
	"Usage: fleetplane health policy [get] [-o json]\n"
	"       fleetplane health policy set [--dry-run=true|false] [--breaker=true|false]\n"
	"                                    [--breaker-max-nodes N] [--breaker-window SECONDS]\n"
	"                                    [-o json]\n"
	"       fleetplane health policy apply -f FILE [-o json]\n"
	"\n"
	"  get      the policy in force: dry run, breaker, and one line per rule\n"
	"  set      read the policy, change the named settings, write it back under its\n"
	"           resourceVersion (a concurrent change is refused, not overwritten)\n"
	"  apply    replace the policy with the document in FILE ('-' = stdin)\n";

static const char he_budget_usage[] =
	"Usage: fleetplane health budget list [-o json]\n"
	"       fleetplane health budget get NAME [-o json]\n"
	"       fleetplane health budget set NAME --domain DOMAIN --max-unavailable N|N% [-o json]\n"
	"       fleetplane health budget delete NAME [-o json]\n"
	"\n"
	"  DOMAIN is rack, site, pool, a bare label key (nvlink_domain, leaf, pdu) or\n"
	"  label:<key>; the budget allows at most N nodes (or N% of the nodes, rounded up) of\n"
	"  each value of the domain out of service at once.\n";

static const char he_breaker_usage[] =
	"Usage: fleetplane health breaker list [-o json]\n"
	"       fleetplane health breaker reset NAME --reason TEXT [--replay] [-o json]\n"
	"\n"
	"  NAME is <domain>.<value>, e.g. rack.r01. reset closes an open breaker, so automatic\n"
	"  holds and actions in that domain resume (audited). --replay also places the holds\n"
	"  the breaker suppressed (one per node); without it those nodes are listed as left\n"
	"  unheld and keep GPUHealthy False/HoldSuppressed for a human.\n";

static const char he_rma_usage[] = "Usage: fleetplane health rma list [--node NAME] [-o json]\n"
				   "       fleetplane health rma get NAME [-o json]\n";

/* "true"/"false" → 1/0; -1 otherwise. */
static int he_parse_bool(const char *s)
{
	if (s && strcmp(s, "true") == 0)
		return 1;
	if (s && strcmp(s, "false") == 0)
		return 0;
	return -1;
}

/* Text of a JSON scalar for a table cell (arena-free: into out). */
static const char *he_scalar(const json_t *v, char *out, size_t outlen)
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v))
		snprintf(out, outlen, "%lld", (long long)json_integer_value(v));
	else if (json_is_true(v))
		snprintf(out, outlen, "true");
	else if (json_is_false(v))
		snprintf(out, outlen, "false");
	else
		out[0] = 0;
	return out;
}

/* "a,b,c" of a string array into out. */
static void he_join(const json_t *arr, char *out, size_t outlen)
{
	size_t i, len = 0;
	json_t *v;
	out[0] = 0;
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v))
			continue;
		int n = snprintf(out + len, outlen - len, "%s%s", len ? "," : "",
				 json_string_value(v));
		if (n < 0 || (size_t)n >= outlen - len)
			break;
		len += (size_t)n;
	}
}

/* "k=v,k=v" of an object's scalar members, in document order, into out; members that do not
 * fit are left out whole. */
static void he_pairs(const json_t *obj, char *out, size_t outlen)
{
	size_t len = 0;
	const char *k;
	json_t *v;
	out[0] = 0;
	json_object_foreach((json_t *)obj, k, v) {
		char tmp[32];
		int n = snprintf(out + len, outlen - len, "%s%s=%s", len ? "," : "", k,
				 he_scalar(v, tmp, sizeof(tmp)));
		if (n < 0 || (size_t)n >= outlen - len) {
			out[len] = 0;
			break;
		}
		len += (size_t)n;
	}
}

/* Prints one document as the one-row table of the view v (a `get` in list form). */
static void he_print_one(const json_t *doc, const struct cli_view *v)
{
	json_t *arr = json_pack("[O]", (json_t *)doc);
	cli_print_items(arr, CLIENT_OUT_TABLE, v);
	json_decref(arr);
}

/* `health policy get` and `health breaker list` (-o json, no operands): one GET of path, printed
 * with fn (or as JSON). */
static int he_show(const char *cmd, const char *usage, const char *path, cli_print_fn fn, int argc,
		   char **argv)
{
	enum client_output o = CLIENT_OUT_TABLE;
	int rc = client_parse_output_flags(cmd, argc, argv, usage, 0, &o);
	if (rc >= 0)
		return rc;
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	return cli_get_print(path, o, fn);
}

/* ---------------------------------------------------------------- events */

#define HE_DEFAULT_LIMIT 100 /* events shown without --limit */
#define HE_MAX_READ 100000   /* events read to find the newest (the API lists by id) */

/* Epoch ms of an event's "time" (when the detector saw it), else its "receivedAt"; -1 when
 * neither is an RFC 3339 time. */
static int64_t he_event_ms(const json_t *ev)
{
	int64_t ms;
	if (fp_time_parse(jsonx_str(ev, "time"), &ms) == 0 ||
	    fp_time_parse(jsonx_str(ev, "receivedAt"), &ms) == 0)
		return ms;
	return -1;
}

struct he_sorted {
	int64_t ms, recv;
	json_t *ev; /* borrowed */
};

/* Newest first: time, then receivedAt, then node and id (the API's key order) reversed. */
static int he_cmp_newest(const void *a, const void *b)
{
	const struct he_sorted *x = a, *y = b;
	if (x->ms != y->ms)
		return x->ms < y->ms ? 1 : -1;
	if (x->recv != y->recv)
		return x->recv < y->recv ? 1 : -1;
	const char *xn = jsonx_str(x->ev, "node"), *yn = jsonx_str(y->ev, "node");
	int c = strcmp(xn ? xn : "", yn ? yn : "");
	if (c)
		return -c;
	const char *xi = jsonx_str(x->ev, "id"), *yi = jsonx_str(y->ev, "id");
	return -strcmp(xi ? xi : "", yi ? yi : "");
}

/* Sorts items (a JSON array of health event documents) newest first by event time and keeps
 * the first `limit` (0: all). Returns a new array; items is left as it was. */
static json_t *he_newest(json_t *items, size_t limit)
{
	size_t n = json_array_size(items);
	struct he_sorted *v = xcalloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		json_t *ev = json_array_get(items, i);
		int64_t recv = -1;
		v[i].ev = ev;
		v[i].ms = he_event_ms(ev);
		if (fp_time_parse(jsonx_str(ev, "receivedAt"), &recv) < 0)
			recv = -1;
		v[i].recv = recv;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), he_cmp_newest);
	json_t *out = json_array();
	for (size_t i = 0; i < n && (!limit || i < limit); i++)
		json_array_append(out, v[i].ev);
	free(v);
	return out;
}

static const struct table_colspec he_event_cols[] = {
	{"TIME", 24}, {"NODE", 24}, {"SOURCE", 10}, {"CODE", 24},
	{"GPU", 16},  {"JOB", 16},  {"ACTION", 12}, {NULL, 0},
};

static void he_event_row(struct table *t, const json_t *ev, enum client_output o, int64_t now)
{
	char idx[24];
	const char *gpu = jsonx_str(ev, "gpu.pciBusId");
	json_t *gi = jsonx_path(ev, "gpu.index");
	if (!gpu && json_is_integer(gi)) {
		snprintf(idx, sizeof(idx), "%lld", (long long)json_integer_value(gi));
		gpu = idx;
	}
	table_cell(t, jsonx_str(ev, "time"));
	table_cell(t, jsonx_str(ev, "node"));
	table_cell(t, jsonx_str(ev, "source"));
	table_cell(t, jsonx_str(ev, "code"));
	table_cell(t, gpu);
	table_cell(t, jsonx_str(ev, "job"));
	const char *act = jsonx_str(ev, "decision.action");
	if (act && json_is_true(jsonx_path(ev, "decision.dryRun")))
		table_cellf(t, "%s (dry run)", act);
	else
		table_cell(t, act);
}

static const struct cli_view he_event_view = {he_event_cols, NULL, he_event_row,
					      "No health events found.\n"};

static int he_events(int argc, char **argv)
{
	static const struct option opts[] = {
		{"node", required_argument, NULL, 'N'},
		{"code", required_argument, NULL, 'C'},
		{"limit", required_argument, NULL, 'L'},
		CLI_OPTS_END,
	};
	const char *cmd = "health events", *node = NULL, *code = NULL;
	size_t limit = HE_DEFAULT_LIMIT;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'N':
			if ((rc = cli_opt_value(cmd, "--node", "a node name", &node)) != 0)
				return rc;
			break;
		case 'C':
			if (!*optarg || !strchr(optarg, ':'))
				return client_usage_error(cmd,
							  "flag '--code' needs a code such as "
							  "xid:79, got '%s'",
							  optarg);
			code = optarg;
			break;
		case 'L':
			if (strcmp(optarg, "0") == 0)
				limit = 0;
			else if (cli_parse_count(optarg, HE_MAX_READ, &limit) < 0)
				return client_usage_error(
					cmd,
					"flag '--limit' needs a count from 0 (all) "
					"to %d, got '%s'",
					HE_MAX_READ, optarg);
			break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, he_events_usage, 1, &o)) !=
			    CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	const struct cli_query q[] = {{"node", node}, {"code", code}};
	char *path = NULL;
	if ((rc = cli_path_query(cmd, "/v1/healthevents", q, 2, &path)) != 0)
		return rc;
	struct client c;
	memset(&c, 0, sizeof(c));
	json_t *all = NULL;
	/* The API lists by node and id, not by time: read them all (up to HE_MAX_READ + 1, to
	 * know there are more) and keep the newest. */
	if ((rc = client_init(&c)) == 0)
		rc = client_list(&c, path, HE_MAX_READ + 1, &all, NULL);
	free(path);
	client_release(&c);
	if (rc != CLIENT_EXIT_OK)
		return rc;
	size_t total = json_array_size(all);
	int capped = total > HE_MAX_READ;
	if (capped)
		json_array_remove(all, HE_MAX_READ);
	json_t *items = he_newest(all, limit);
	json_decref(all);
	if (capped)
		fprintf(stderr,
			"note: more than %d health events match; only the first %d in the "
			"API's order (node, then id) were read - narrow with --node or "
			"--code\n",
			HE_MAX_READ, HE_MAX_READ);
	else if (limit && total > limit)
		fprintf(stderr,
			"note: showing the newest %zu of %zu health events; --limit N "
			"for more, --limit 0 for all\n",
			limit, total);
	cli_print_items(items, o, &he_event_view);
	json_decref(items);
	return rc;
}

/* ---------------------------------------------------------------- policy */

static void he_policy_print(const json_t *doc)
{
	json_t *spec = json_object_get(doc, "spec");
	char rv[32];
	client_rv_text(jsonx_path(doc, "metadata.resourceVersion"), rv, sizeof(rv));
	printf("Name:             %s\n",
	       jsonx_str(doc, "metadata.name") ? jsonx_str(doc, "metadata.name") : "default");
	printf("ResourceVersion:  %s\n", *rv ? rv : "- (the compiled default)");
	printf("Dry run:          %s\n",
	       json_is_true(json_object_get(spec, "dryRun")) ? "true" : "false");
	json_t *br = json_object_get(spec, "breaker");
	if (json_is_object(br)) {
		char a[32], b[32], doms[256], per[256];
		he_join(json_object_get(br, "domains"), doms, sizeof(doms));
		he_pairs(json_object_get(br, "maxNodesPerDomain"), per, sizeof(per));
		printf("Breaker:          %s, opens when more than %s nodes of one domain value "
		       "turn unhealthy within %s s (domains %s%s%s)\n",
		       json_is_false(json_object_get(br, "enabled")) ? "disabled" : "enabled",
		       he_scalar(json_object_get(br, "maxNodes"), a, sizeof(a)),
		       he_scalar(json_object_get(br, "windowSeconds"), b, sizeof(b)),
		       *doms ? doms : "-", *per ? "; per-domain limits " : "", per);
	}
	json_t *rules = json_object_get(spec, "rules");
	printf("Rules:            %zu\n", json_array_size(rules));
	static const struct table_colspec rule_cols[] = {
		{"CODE", 24},  {"SEVERITY", 10}, {"ACTION", 8},  {"COUNT", 6},
		{"WINDOW", 8}, {"JOBS", 5},      {"LADDER", 40}, {NULL, 0},
	};
	struct table t;
	table_init(&t, 0);
	table_cols(&t, rule_cols);
	size_t i;
	json_t *ru;
	json_array_foreach(rules, i, ru) {
		char a[32], b[32], c[32], lad[128];
		he_join(json_object_get(ru, "ladder"), lad, sizeof(lad));
		table_cell(&t, jsonx_str(ru, "code"));
		table_cell(&t, jsonx_str(ru, "severity"));
		table_cell(&t, jsonx_str(ru, "action"));
		table_cell(&t, he_scalar(json_object_get(ru, "count"), a, sizeof(a)));
		table_cell(&t, he_scalar(json_object_get(ru, "windowSeconds"), b, sizeof(b)));
		table_cell(&t, he_scalar(json_object_get(ru, "distinctJobs"), c, sizeof(c)));
		table_cell(&t, lad);
	}
	if (table_rows(&t))
		table_print_indent(&t, stdout, 2);
	table_release(&t);
}

static int he_policy_get(int argc, char **argv)
{
	return he_show("health policy get", he_policy_usage, "/v1/policies/default",
		       he_policy_print, argc, argv);
}

/* PUTs doc to /v1/policies/default and prints the stored policy. */
static int he_policy_put(const json_t *doc, enum client_output o)
{
	json_t *out = NULL;
	int rc = cli_call("PUT", "/v1/policies/default", doc, &out);
	if (rc == 0) {
		if (o == CLIENT_OUT_JSON)
			client_print_json(out);
		else
			he_policy_print(out);
	}
	json_decref(out);
	return rc;
}

static int he_policy_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{"dry-run", required_argument, NULL, 'D'},
		{"breaker", required_argument, NULL, 'B'},
		{"breaker-max-nodes", required_argument, NULL, 'M'},
		{"breaker-window", required_argument, NULL, 'W'},
		CLI_OPTS_END,
	};
	const char *cmd = "health policy set";
	int dry = -1, brk = -1, ch, rc;
	size_t maxn = 0, win = 0;
	enum client_output o = CLIENT_OUT_TABLE;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'D':
			if ((dry = he_parse_bool(optarg)) < 0)
				return client_usage_error(cmd,
							  "flag '--dry-run' needs true or false, "
							  "got '%s'",
							  optarg);
			break;
		case 'B':
			if ((brk = he_parse_bool(optarg)) < 0)
				return client_usage_error(cmd,
							  "flag '--breaker' needs true or false, "
							  "got '%s'",
							  optarg);
			break;
		case 'M':
			if (cli_parse_count(optarg, 64, &maxn) < 0)
				return client_usage_error(cmd,
							  "flag '--breaker-max-nodes' needs a "
							  "count from 1 to 64, got '%s'",
							  optarg);
			break;
		case 'W':
			if (cli_parse_count(optarg, 90ULL * 86400, &win) < 0)
				return client_usage_error(cmd,
							  "flag '--breaker-window' needs seconds "
							  "from 1 to 7776000, got '%s'",
							  optarg);
			break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, he_policy_usage, 0, &o)) !=
			    CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	if (dry < 0 && brk < 0 && !maxn && !win)
		return client_usage_error(cmd, "nothing to set: give --dry-run, --breaker, "
					       "--breaker-max-nodes or --breaker-window");
	json_t *doc = NULL;
	if ((rc = cli_call("GET", "/v1/policies/default", NULL, &doc)) != 0)
		goto out;
	json_t *spec = json_object_get(doc, "spec");
	if (!json_is_object(spec)) {
		fprintf(stderr, "error: the server's policy has no spec object\n");
		rc = CLIENT_EXIT_API;
		goto out;
	}
	if (dry >= 0)
		json_object_set_new(spec, "dryRun", json_boolean(dry));
	if (brk >= 0 || maxn || win) {
		json_t *br = json_object_get(spec, "breaker");
		if (!json_is_object(br)) {
			br = json_object();
			json_object_set_new(spec, "breaker", br);
		}
		if (brk >= 0)
			json_object_set_new(br, "enabled", json_boolean(brk));
		if (maxn)
			json_object_set_new(br, "maxNodes", json_integer((json_int_t)maxn));
		if (win)
			json_object_set_new(br, "windowSeconds", json_integer((json_int_t)win));
	}
	/* The document goes back with the resourceVersion it was read at: a change made in
	 * between is a 409, never silently overwritten. */
	rc = he_policy_put(doc, o);
out:
	json_decref(doc);
	return rc;
}

static int he_policy_apply(int argc, char **argv)
{
	static const struct option opts[] = {
		{"file", required_argument, NULL, 'f'},
		CLI_OPTS_END,
	};
	const char *cmd = "health policy apply", *file = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":f:o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'f': file = optarg; break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, he_policy_usage, 0, &o)) !=
			    CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	if (!file || !*file)
		return client_usage_error(cmd, "missing -f FILE");
	json_t *doc = NULL;
	if ((rc = cli_read_json_file(file, HE_MAX_FILE, &doc)) != 0)
		return rc;
	if (!json_is_object(doc)) {
		fprintf(stderr, "error: %s: expected a policy document (a JSON object)\n", file);
		rc = CLIENT_EXIT_USAGE;
	} else {
		rc = he_policy_put(doc, o);
	}
	json_decref(doc);
	return rc;
}

static int he_policy(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"get", NULL, he_policy_get},
		{"set", NULL, he_policy_set},
		{"apply", NULL, he_policy_apply},
		{NULL, NULL, NULL},
	};
	/* `health policy` and `health policy -o json` are `health policy get`. */
	if (argc < 2 ||
	    (argv[1][0] == '-' && strcmp(argv[1], "-h") != 0 && strcmp(argv[1], "--help") != 0))
		return he_policy_get(argc, argv);
	return cli_dispatch("health policy", he_policy_usage, verbs, argc, argv);
}

/* ---------------------------------------------------------------- budget */

static const struct table_colspec he_budget_cols[] = {
	{"NAME", 24},     {"DOMAIN", 24}, {"MAX", 6},      {"VALUE", 20}, {"OUT/NODES", 10},
	{"REMAINING", 9}, {"OUT", 40},    {"WAITING", 40}, {NULL, 0},
};

/* One row per domain value of the budget's status; one row with the spec alone before the
 * budget service has counted. */
static void he_budget_rows(struct table *t, const json_t *b, enum client_output o, int64_t now)
{
	char a[32];
	json_t *doms = jsonx_path(b, "status.domains");
	if (!json_array_size(doms)) {
		table_cell(t, jsonx_str(b, "metadata.name"));
		table_cell(t, jsonx_str(b, "spec.domain"));
		table_cell(t, he_scalar(jsonx_path(b, "spec.maxUnavailable"), a, sizeof(a)));
		for (int k = 0; k < 5; k++)
			table_cell(t, NULL);
		return;
	}
	size_t i;
	json_t *d;
	json_array_foreach(doms, i, d) {
		char n1[32], n2[32], n3[32], out[256], wait[256];
		table_cell(t, jsonx_str(b, "metadata.name"));
		table_cell(t, jsonx_str(b, "spec.domain"));
		table_cell(t, he_scalar(jsonx_path(b, "spec.maxUnavailable"), a, sizeof(a)));
		table_cell(t, jsonx_str(d, "value"));
		table_cellf(t, "%s/%s",
			    he_scalar(json_object_get(d, "unavailable"), n1, sizeof(n1)),
			    he_scalar(json_object_get(d, "nodes"), n2, sizeof(n2)));
		table_cell(t, he_scalar(json_object_get(d, "remaining"), n3, sizeof(n3)));
		he_join(json_object_get(d, "out"), out, sizeof(out));
		he_join(json_object_get(d, "waiting"), wait, sizeof(wait));
		table_cell(t, out);
		table_cell(t, wait);
	}
}

static const struct cli_view he_budget_view = {he_budget_cols, NULL, he_budget_rows,
					       "No budgets found.\n"};

static void he_budget_print(const json_t *doc)
{
	he_print_one(doc, &he_budget_view);
}

static int he_budget_list(int argc, char **argv)
{
	enum client_output o = CLIENT_OUT_TABLE;
	const char *cmd = "health budget list";
	int rc = client_parse_output_flags(cmd, argc, argv, he_budget_usage, 0, &o);
	if (rc >= 0)
		return rc;
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	return cli_list_print("/v1/budgets", 0, o, &he_budget_view);
}

static int he_budget_get(int argc, char **argv)
{
	static const struct cli_get get = {"health budget get",
					   he_budget_usage,
					   "budgets",
					   "missing NAME",
					   NULL,
					   he_budget_print};
	return cli_get_verb(&get, argc, argv);
}

static int he_budget_delete(int argc, char **argv)
{
	const char *cmd = "health budget delete", *name = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int rc = client_parse_output_flags(cmd, argc, argv, he_budget_usage, 0, &o);
	if (rc >= 0)
		return rc;
	if ((rc = cli_one_operand(cmd, argc, argv, "missing NAME", 0, &name)) != 0)
		return rc;
	json_t *doc = NULL;
	char *path = cli_doc_path("budgets", name, NULL);
	if ((rc = cli_call("DELETE", path, NULL, &doc)) == 0) {
		if (o == CLIENT_OUT_JSON)
			client_print_json(doc);
		else
			printf("budget %s deleted\n", name);
	}
	free(path);
	json_decref(doc);
	return rc;
}

static int he_budget_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{"domain", required_argument, NULL, 'D'},
		{"max-unavailable", required_argument, NULL, 'M'},
		CLI_OPTS_END,
	};
	const char *cmd = "health budget set", *domain = NULL, *maxu = NULL, *name = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'D': domain = optarg; break;
		case 'M': maxu = optarg; break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, he_budget_usage, 0, &o)) !=
			    CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_one_operand(cmd, argc, argv, "missing NAME", 0, &name)) != 0)
		return rc;
	if (!domain || !*domain)
		return client_usage_error(
			cmd,
			"missing --domain (rack, site, pool, nvlink_domain, leaf, pdu or label:<key>)");
	if (!maxu || !*maxu)
		return client_usage_error(cmd, "missing --max-unavailable (a count or N%%)");
	json_t *mv;
	size_t n = strlen(maxu), count = 0;
	if (maxu[n - 1] == '%') {
		char digits[8];
		if (n < 2 || n > 4 ||
		    (snprintf(digits, sizeof(digits), "%.*s", (int)(n - 1), maxu),
		     strspn(digits, "0123456789") != n - 1) ||
		    strtoul(digits, NULL, 10) > 100)
			return client_usage_error(cmd,
						  "flag '--max-unavailable' needs a count or a "
						  "percentage 0%%..100%%, got '%s'",
						  maxu);
		mv = json_string(maxu);
	} else {
		if (strcmp(maxu, "0") == 0)
			count = 0;
		else if (cli_parse_count(maxu, 100000, &count) < 0)
			return client_usage_error(cmd,
						  "flag '--max-unavailable' needs a count "
						  "0..100000 or a percentage like 10%%, got '%s'",
						  maxu);
		mv = json_integer((json_int_t)count);
	}
	json_t *doc = json_pack("{s:s,s:{s:s},s:{s:s,s:o}}", "kind", "DisruptionBudget", "metadata",
				"name", name, "spec", "domain", domain, "maxUnavailable", mv);
	json_t *out = NULL;
	char *path = cli_doc_path("budgets", name, NULL);
	if ((rc = cli_call("PUT", path, doc, &out)) == 0) {
		if (o == CLIENT_OUT_JSON)
			client_print_json(out);
		else
			he_budget_print(out);
	}
	free(path);
	json_decref(out);
	json_decref(doc);
	return rc;
}

static int he_budget(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"list", "ls", he_budget_list},
		{"get", NULL, he_budget_get},
		{"set", NULL, he_budget_set},
		{"delete", "rm", he_budget_delete},
		{NULL, NULL, NULL},
	};
	return cli_dispatch("health budget", he_budget_usage, verbs, argc, argv);
}

/* ---------------------------------------------------------------- breaker */

static const struct table_colspec he_breaker_cols[] = {
	{"NAME", 32}, {"STATE", 8}, {"OPENED", 24}, {"NODES", 48}, {"REASON", 60}, {NULL, 0},
};

static void he_breaker_row(struct table *t, const json_t *b, enum client_output o, int64_t now)
{
	char nodes[512];
	he_join(json_object_get(b, "nodes"), nodes, sizeof(nodes));
	table_cell(t, jsonx_str(b, "metadata.name"));
	table_cell(t, jsonx_str(b, "state"));
	table_cell(t, jsonx_str(b, "openedAt"));
	table_cell(t, nodes);
	table_cell(t, jsonx_str(b, "reason"));
}

static const struct cli_view he_breaker_view = {he_breaker_cols, NULL, he_breaker_row,
						"No open breakers.\n"};

/* The list document of GET /v1/breakers ({"items":[...]}; not paged) as a table. */
static void he_breaker_table(const json_t *doc)
{
	cli_print_items(json_object_get(doc, "items"), CLIENT_OUT_TABLE, &he_breaker_view);
}

static int he_breaker_list(int argc, char **argv)
{
	return he_show("health breaker list", he_breaker_usage, "/v1/breakers", he_breaker_table,
		       argc, argv);
}

static int he_breaker_reset(int argc, char **argv)
{
	static const struct option opts[] = {
		{"reason", required_argument, NULL, 'r'},
		{"replay", no_argument, NULL, 'R'},
		CLI_OPTS_END,
	};
	const char *cmd = "health breaker reset", *reason = NULL, *name = NULL;
	int replay = 0;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":r:o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r': reason = optarg; break;
		case 'R': replay = 1; break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, he_breaker_usage, 0, &o)) !=
			    CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_one_operand(cmd, argc, argv, "missing NAME (e.g. rack.r01)", 0, &name)) != 0)
		return rc;
	if (!reason || !*reason)
		return client_usage_error(cmd,
					  "missing --reason TEXT (recorded in the audit event)");
	char *path = cli_doc_path("breakers", name, "reset");
	json_t *body = json_pack("{s:s, s:b}", "reason", reason, "replay", replay), *out = NULL;
	if ((rc = cli_call("POST", path, body, &out)) == 0) {
		if (o == CLIENT_OUT_JSON)
			client_print_json(out);
		else {
			printf("breaker %s reset%s\n", name,
			       replay ? " (suppressed holds replayed)" : "");
			size_t i;
			json_t *x;
			json_array_foreach(json_object_get(out, "held"), i, x)
				printf("held: %s\n", json_string_value(x));
			json_array_foreach(json_object_get(out, "evidence"), i, x)
				printf("evidence: %s (%s) of %s\n", jsonx_str(x, "event"),
				       jsonx_str(x, "code"), jsonx_str(x, "of"));
			json_array_foreach(json_object_get(out, "unheld"), i, x)
				printf("left unheld: %s (%s %s: %s)\n", jsonx_str(x, "node"),
				       jsonx_str(x, "code"), jsonx_str(x, "event"),
				       jsonx_str(x, "reason"));
		}
	}
	json_decref(out);
	json_decref(body);
	free(path);
	return rc;
}

static int he_breaker(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"list", "ls", he_breaker_list},
		{"reset", NULL, he_breaker_reset},
		{NULL, NULL, NULL},
	};
	return cli_dispatch("health breaker", he_breaker_usage, verbs, argc, argv);
}

/* ---------------------------------------------------------------- rma */

static const struct table_colspec he_rma_cols[] = {
	{"NAME", 40}, {"NODE", 24},    {"GPU", 16},    {"CODE", 16},
	{"STATE", 8}, {"CREATED", 24}, {"REASON", 60}, {NULL, 0},
};

static void he_rma_row(struct table *t, const json_t *m, enum client_output o, int64_t now)
{
	table_cell(t, jsonx_str(m, "metadata.name"));
	table_cell(t, jsonx_str(m, "node"));
	table_cell(t, jsonx_str(m, "gpu"));
	table_cell(t, jsonx_str(m, "code"));
	table_cell(t, jsonx_str(m, "state"));
	table_cell(t, jsonx_str(m, "metadata.createdAt"));
	table_cell(t, jsonx_str(m, "reason"));
}

static const struct cli_view he_rma_view = {he_rma_cols, NULL, he_rma_row,
					    "No RMA records found.\n"};

static void he_rma_print(const json_t *m)
{
	he_print_one(m, &he_rma_view);
	json_t *evs = jsonx_path(m, "evidence.healthEvents");
	printf("Evidence:         %zu health events, %zu remediation records\n",
	       json_array_size(evs), json_array_size(jsonx_path(m, "evidence.remediationHistory")));
}

static int he_rma_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"node", required_argument, NULL, 'N'},
		CLI_OPTS_END,
	};
	const char *cmd = "health rma list", *node = NULL;
	enum client_output o = CLIENT_OUT_TABLE;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'N':
			if ((rc = cli_opt_value(cmd, "--node", "a node name", &node)) != 0)
				return rc;
			break;
		default:
			if ((rc = cli_opt_default(cmd, ch, argv, he_rma_usage, 0, &o)) != CLI_GO_ON)
				return rc;
		}
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	const struct cli_query q[] = {{"node", node}};
	char *path = NULL;
	if ((rc = cli_path_query(cmd, "/v1/rmas", q, 1, &path)) == 0)
		rc = cli_list_print(path, 0, o, &he_rma_view);
	free(path);
	return rc;
}

static int he_rma_get(int argc, char **argv)
{
	static const struct cli_get get = {"health rma get", he_rma_usage, "rmas",
					   "missing NAME",   NULL,         he_rma_print};
	return cli_get_verb(&get, argc, argv);
}

static int he_rma(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"list", "ls", he_rma_list},
		{"get", NULL, he_rma_get},
		{NULL, NULL, NULL},
	};
	return cli_dispatch("health rma", he_rma_usage, verbs, argc, argv);
}

int cmd_health(int argc, char **argv)
{
	static const struct client_verb nouns[] = {
		{"events", "event", he_events},   {"policy", NULL, he_policy},
		{"budget", "budgets", he_budget}, {"breaker", "breakers", he_breaker},
		{"rma", "rmas", he_rma},          {NULL, NULL, NULL},
	};
	int rc = client_dispatch(health_usage_text, nouns, argc, argv);
	if (rc >= 0)
		return rc;
	return client_usage_error("health",
				  "unknown noun '%s' for 'health' (events, policy, "
				  "budget, breaker, rma)",
				  argv[1]);
}
