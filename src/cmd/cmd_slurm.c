/* cmd_slurm.c - `fleetplane slurm import|config`: a running Slurm cluster adopts fleetplane
 * without downtime, and fleetplane writes its nodes back as Slurm configuration. `import` reads
 * slurm.conf and gres.conf (sched/slurm_conf.h), prints every line it cannot map as
 * `file:line: why: text`, and enrolls each node with spec.adopt (inspected, then available:
 * never provisioned), its GPUs from Gres= and its CPUs, topology and memory as labels;
 * `config` renders NodeName=/PartitionName= lines and gres.conf from GET /v1/nodes. Drains in
 * Slurm are not read here: `serve --slurm` turns each into a `slurm:<user>` hold on its first
 * pass (docs/slurm.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "cmd/cli_common.h"
#include "cmd/client.h"
#include "cmd/cmds.h"
#include "cmd/table.h"
#include "core/codec.h"
#include "sched/slurm_conf.h"
#include "sched/slurm_render.h"

#include "base/banned.h"

static const char slurm_usage_text[] =
	"Usage: fleetplane slurm <verb> [flags]\n"
	"\n"
	"Verbs:\n"
	"  import   enroll the nodes of a running cluster's slurm.conf/gres.conf (adopted)\n"
	"  config   print or write the Slurm lines (nodes.conf, gres.conf) of the API's nodes\n"
	"\n"
	"Run 'fleetplane slurm <verb> --help' for a verb's flags.\n";

static const char slurm_import_usage[] =
	"Usage: fleetplane slurm import [flags]\n"
	"\n"
	"Enrolls every node of slurm.conf with spec.adopt: inspected through its BMC, then\n"
	"available; never PXE-booted, reimaged or validated. Lines that cannot be mapped are\n"
	"printed as FILE:LINE: WHY: TEXT on stderr.\n"
	"\n"
	"Flags:\n"
	"      --slurm-conf FILE         slurm.conf (default $SLURM_CONF, else "
	"/etc/slurm/slurm.conf)\n"
	"      --gres-conf FILE          gres.conf (default: gres.conf next to slurm.conf, if "
	"any)\n"
	"      --bmc-driver D            ipmi, redfish or sim (default sim)\n"
	"      --bmc-address TEMPLATE    BMC address, {name} is the node name "
	"(\"{name}-bmc\")\n"
	"      --bmc-username U          BMC user\n"
	"      --bmc-password-file F     file holding the BMC password (read by serve)\n"
	"      --dry-run                 parse and print what would be enrolled; no request\n"
	"  -h, --help                    this help\n";

static const char slurm_config_usage[] =
	"Usage: fleetplane slurm config [--out DIR]\n"
	"\n"
	"Renders the NodeName= and PartitionName= lines (one partition per pool) and gres.conf of\n"
	"the nodes in the API. Without --out both go to stdout; with it, to DIR/nodes.conf and\n"
	"DIR/gres.conf (each written whole, then renamed into place).\n"
	"\n"
	"Flags:\n"
	"      --out DIR   write DIR/nodes.conf and DIR/gres.conf\n"
	"  -h, --help      this help\n";

/* Include reader of slurm_conf_parse: the file from disk. */
static int file_reader(void *ctx, const char *path, struct buf *out, size_t max, char *err,
		       size_t errlen)
{
	(void)ctx;
	return buf_read_file(out, path, max, err, errlen);
}

static void print_diags(const struct slurm_conf *c, size_t from)
{
	for (size_t i = from; i < c->ndiags; i++) {
		const struct slurm_conf_diag *d = &c->diags[i];
		if (d->text[0])
			fprintf(stderr, "%s:%u: %s: %s\n", d->file, d->line, d->why, d->text);
		else
			fprintf(stderr, "%s:%u: %s\n", d->file, d->line, d->why);
	}
	if (c->ndiags_dropped)
		fprintf(stderr, "... and %zu more\n", c->ndiags_dropped);
}

/* {name} replaced by name; NULL template gives NULL. */
static char *expand_template(const char *tpl, const char *name)
{
	if (!tpl)
		return NULL;
	struct buf b;
	buf_init(&b, 4096);
	buf_puts(&b, "");
	for (const char *p = tpl; *p;) {
		if (strncmp(p, "{name}", 6) == 0) {
			buf_puts(&b, name);
			p += 6;
		} else {
			buf_append(&b, p++, 1);
		}
	}
	return buf_detach(&b, NULL);
}

struct import_opts {
	const char *slurm_conf, *gres_conf;
	const char *driver, *address, *username, *password_file;
	int dry_run;
};

/* The node document of n, or NULL with why (the node is then a failed row). */
static json_t *node_doc(const struct import_opts *o, const struct slurm_conf_node *n, char *why,
			size_t whylen)
{
	if (name_validate("NodeName", n->name, why, whylen) < 0)
		return NULL;
	long long gpus = 0;
	const char *model = NULL;
	int mixed = 0;
	for (size_t g = 0; g < n->ngres; g++) {
		if (strcmp(n->gres[g].name, "gpu") != 0)
			continue;
		gpus += n->gres[g].count;
		if (n->gres[g].type[0] && !model)
			model = n->gres[g].type;
		else if (!model || strcmp(model, n->gres[g].type) != 0)
			mixed = 1;
	}
	if (gpus > 64) {
		snprintf(why, whylen, "%lld GPUs: spec.gpus.count is at most 64", gpus);
		return NULL;
	}
	json_t *labels = json_pack("{s:s}", "slurm/adopted", "true");
	char v[32];
#define LABEL(k, x)                                             \
	do {                                                    \
		snprintf(v, sizeof(v), "%lld", (long long)(x)); \
		json_object_set_new(labels, k, json_string(v)); \
	} while (0)
	LABEL("slurm/cpus", n->cpus);
	LABEL("slurm/sockets", n->sockets);
	LABEL("slurm/cores-per-socket", n->cores_per_socket);
	LABEL("slurm/threads-per-core", n->threads_per_core);
	if (n->real_memory_mb >= 0)
		LABEL("slurm/real-memory-mb", n->real_memory_mb);
#undef LABEL
	json_t *spec = json_pack("{s:b}", "adopt", 1);
	char err[256];
	if (n->nparts && name_validate("pool", n->parts[0], err, sizeof(err)) == 0)
		json_object_set_new(spec, "pool", json_string(n->parts[0]));
	json_t *bmc = json_pack("{s:s}", "driver", o->driver);
	char *addr = expand_template(o->address, n->name);
	if (addr)
		json_object_set_new(bmc, "address", json_string(addr));
	free(addr);
	if (o->username)
		json_object_set_new(bmc, "username", json_string(o->username));
	if (o->password_file)
		json_object_set_new(bmc, "password_file", json_string(o->password_file));
	json_object_set_new(spec, "bmc", bmc);
	if (gpus) {
		json_t *g = json_pack("{s:I}", "count", (json_int_t)gpus);
		if (model && !mixed)
			json_object_set_new(g, "model", json_string(model));
		json_object_set_new(spec, "gpus", g);
	}
	return json_pack("{s:s,s:{s:s,s:o},s:o}", "kind", "Node", "metadata", "name", n->name,
			 "labels", labels, "spec", spec);
}

/* POSTs one node; *result is "created", "exists" or "failed" with detail. */
static int post_node(struct client *c, const json_t *doc, const char **result, char *detail,
		     size_t detaillen)
{
	char *errtext = NULL;
	size_t errlen = 0;
	FILE *mem = open_memstream(&errtext, &errlen);
	FILE *saved = c->err;
	if (mem)
		c->err = mem;
	long status = 0;
	json_t *resp = NULL;
	int rc = client_request(c, "POST", "/v1/nodes", doc, &status, &resp);
	c->err = saved;
	if (mem)
		fclose(mem);
	detail[0] = '\0';
	if (rc == CLIENT_EXIT_OK) {
		*result = "created";
	} else if (status == 409 && errtext && !strstr(errtext, "BMC")) {
		*result = "exists";
		rc = CLIENT_EXIT_OK;
	} else {
		*result = "failed";
		snprintf(detail, detaillen, "%s", errtext ? errtext : "");
		size_t l = strlen(detail);
		while (l && (detail[l - 1] == '\n'))
			detail[--l] = '\0';
	}
	free(errtext);
	json_decref(resp);
	return rc;
}

static int slurm_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{"slurm-conf", required_argument, NULL, 's'},
		{"gres-conf", required_argument, NULL, 'g'},
		{"bmc-driver", required_argument, NULL, 'd'},
		{"bmc-address", required_argument, NULL, 'a'},
		{"bmc-username", required_argument, NULL, 'u'},
		{"bmc-password-file", required_argument, NULL, 'p'},
		{"dry-run", no_argument, NULL, 'n'},
		CLI_OPTS_END_HELP,
	};
	const char *cmd = "slurm import";
	struct import_opts o = {.driver = "sim"};
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 's': rc = cli_opt_value(cmd, "--slurm-conf", "FILE", &o.slurm_conf); break;
		case 'g': rc = cli_opt_value(cmd, "--gres-conf", "FILE", &o.gres_conf); break;
		case 'd': rc = cli_opt_value(cmd, "--bmc-driver", "DRIVER", &o.driver); break;
		case 'a': rc = cli_opt_value(cmd, "--bmc-address", "TEMPLATE", &o.address); break;
		case 'u': rc = cli_opt_value(cmd, "--bmc-username", "USER", &o.username); break;
		case 'p':
			rc = cli_opt_value(cmd, "--bmc-password-file", "FILE", &o.password_file);
			break;
		case 'n':
			o.dry_run = 1;
			rc = 0;
			break;
		default: return cli_opt_default(cmd, ch, argv, slurm_import_usage, 0, NULL);
		}
		if (rc != 0)
			return rc;
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	if (strcmp(o.driver, "sim") && strcmp(o.driver, "ipmi") && strcmp(o.driver, "redfish"))
		return client_usage_error(cmd, "--bmc-driver %s is not one of ipmi, redfish, sim",
					  o.driver);
	if (strcmp(o.driver, "sim") != 0 && !o.address)
		return client_usage_error(cmd, "--bmc-driver %s needs --bmc-address TEMPLATE",
					  o.driver);
	if (!o.slurm_conf) {
		const char *env = getenv("SLURM_CONF");
		o.slurm_conf = env && *env ? env : "/etc/slurm/slurm.conf";
	}
	char *gres_default = NULL;
	int gres_optional = 0;
	if (!o.gres_conf) {
		const char *slash = strrchr(o.slurm_conf, '/');
		gres_default = slash ? xasprintf("%.*s/gres.conf", (int)(slash - o.slurm_conf),
						 o.slurm_conf)
				     : xstrdup("gres.conf");
		o.gres_conf = gres_default;
		gres_optional = 1;
	}

	struct slurm_conf c;
	struct buf b;
	char err[512];
	struct client cl;
	struct table t;
	memset(&cl, 0, sizeof(cl));
	slurm_conf_init(&c);
	buf_init(&b, SLURM_CONF_MAX_TEXT + 1);
	table_init(&t, 1);
	rc = CLIENT_EXIT_OK;
	if (buf_read_file(&b, o.slurm_conf, SLURM_CONF_MAX_TEXT, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		rc = CLIENT_EXIT_USAGE;
		goto out;
	}
	if (slurm_conf_parse(&c, o.slurm_conf, b.data ? b.data : "", b.len, file_reader, NULL, err,
			     sizeof(err)) < 0) {
		print_diags(&c, 0);
		fprintf(stderr, "error: %s\n", err);
		rc = CLIENT_EXIT_USAGE;
		goto out;
	}
	if (access(o.gres_conf, F_OK) == 0 || !gres_optional) {
		buf_reset(&b);
		if (buf_read_file(&b, o.gres_conf, SLURM_CONF_MAX_TEXT, err, sizeof(err)) < 0 ||
		    slurm_conf_parse_gres(&c, o.gres_conf, b.data ? b.data : "", b.len, file_reader,
					  NULL, err, sizeof(err)) < 0) {
			print_diags(&c, 0);
			fprintf(stderr, "error: %s\n", err);
			rc = CLIENT_EXIT_USAGE;
			goto out;
		}
	}
	print_diags(&c, 0);
	if (!o.dry_run && (rc = client_init(&cl)) != CLIENT_EXIT_OK)
		goto out;
	table_col(&t, "NODE", 0);
	table_col(&t, "POOL", 0);
	table_col(&t, "CPUS", 0);
	table_col(&t, "GPUS", 0);
	table_col(&t, "RESULT", 0);
	table_col(&t, "DETAIL", 0);
	size_t created = 0, exists = 0, failed = 0, skipped = 0;
	for (size_t i = 0; i < c.nnodes; i++) {
		const struct slurm_conf_node *n = &c.nodes[i];
		char why[512] = "";
		const char *result;
		json_t *doc = NULL;
		if (!strcmp(n->state, "FUTURE") || !strcmp(n->state, "CLOUD")) {
			/* no machine runs there yet: nothing to adopt */
			fprintf(stderr,
				"%s:%u: node %s State=%s is not a running node: not imported\n",
				n->file, n->line, n->name, n->state);
			result = "skipped";
			snprintf(why, sizeof(why), "State=%s", n->state);
			skipped++;
		} else if (!(doc = node_doc(&o, n, why, sizeof(why)))) {
			result = "failed";
			failed++;
		} else if (o.dry_run) {
			result = "dry-run";
		} else {
			int prc = post_node(&cl, doc, &result, why, sizeof(why));
			if (prc == CLIENT_EXIT_CONNECT) {
				fprintf(stderr, "%s\n", why);
				json_decref(doc);
				rc = prc;
				goto out;
			}
			created += !strcmp(result, "created");
			exists += !strcmp(result, "exists");
			failed += !strcmp(result, "failed");
		}
		long long gpus = 0;
		for (size_t g = 0; g < n->ngres; g++)
			if (!strcmp(n->gres[g].name, "gpu"))
				gpus += n->gres[g].count;
		table_cell(&t, n->name);
		table_cell(&t, n->nparts ? n->parts[0] : NULL);
		table_cellf(&t, "%lld", n->cpus);
		table_cellf(&t, "%lld", gpus);
		table_cell(&t, result);
		table_cell(&t, why);
		json_decref(doc);
	}
	table_print(&t, stdout);
	printf("%zu node%s in %s: %zu created, %zu already enrolled, %zu failed, %zu skipped; "
	       "%zu line%s not mapped%s\n",
	       c.nnodes, c.nnodes == 1 ? "" : "s", o.slurm_conf, created, exists, failed, skipped,
	       c.ndiags, c.ndiags == 1 ? "" : "s", o.dry_run ? " (dry run: nothing enrolled)" : "");
	if (failed)
		rc = CLIENT_EXIT_API;
out:
	table_release(&t);
	client_release(&cl);
	buf_release(&b);
	slurm_conf_release(&c);
	free(gres_default);
	return rc;
}

/* ---- config ---- */

/* Writes text to dir/name whole (buf_write_file). */
static int write_whole(const char *dir, const char *name, const struct buf *text)
{
	char *path = xasprintf("%s/%s", dir, name), err[512];
	int rc = buf_write_file(text, path, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "error: %s\n", err);
	free(path);
	return rc < 0 ? -1 : 0;
}

static int slurm_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'O'},
		CLI_OPTS_END_HELP,
	};
	const char *cmd = "slurm config", *dir = NULL;
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'O': rc = cli_opt_value(cmd, "--out", "DIR", &dir); break;
		default: return cli_opt_default(cmd, ch, argv, slurm_config_usage, 0, NULL);
		}
		if (rc != 0)
			return rc;
	}
	if ((rc = cli_no_operands(cmd, argc, argv)) != 0)
		return rc;
	struct client cl;
	json_t *items = NULL;
	memset(&cl, 0, sizeof(cl));
	if ((rc = client_init(&cl)) != CLIENT_EXIT_OK)
		goto done;
	if ((rc = client_list(&cl, "/v1/nodes", 0, &items, NULL)) != CLIENT_EXIT_OK)
		goto done;
	size_t n = json_array_size(items), k = 0;
	struct node **v = xcalloc(n + 1, sizeof(*v));
	size_t nv = 0;
	struct buf nodes, gconf;
	char err[256];
	buf_init(&nodes, 0);
	buf_init(&gconf, 0);
	size_t i;
	json_t *it;
	rc = CLIENT_EXIT_OK;
	json_array_foreach(items, i, it) {
		if (node_from_json(it, 0, &v[nv], err, sizeof(err)) < 0) {
			fprintf(stderr, "error: node %s from the API: %s\n",
				jsonx_str(it, "metadata.name") ? jsonx_str(it, "metadata.name")
							       : "?",
				err);
			rc = CLIENT_EXIT_API;
			break;
		}
		nv++;
	}
	if (rc == CLIENT_EXIT_OK && slurm_render(v, nv, "generated by fleetplane slurm config",
						 &nodes, &gconf, &k, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		rc = CLIENT_EXIT_API;
	}
	if (rc == CLIENT_EXIT_OK && !dir) {
		fputs("# nodes.conf\n", stdout);
		fwrite(nodes.data, 1, nodes.len, stdout);
		fputs("# gres.conf\n", stdout);
		fwrite(gconf.data, 1, gconf.len, stdout);
	} else if (rc == CLIENT_EXIT_OK) {
		if (write_whole(dir, "nodes.conf", &nodes) < 0 ||
		    write_whole(dir, "gres.conf", &gconf) < 0)
			rc = CLIENT_EXIT_USAGE;
		else
			printf("wrote %s/nodes.conf and %s/gres.conf (%zu nodes)\n", dir, dir, k);
	}
	buf_release(&nodes);
	buf_release(&gconf);
	for (size_t j = 0; j < nv; j++)
		node_free(v[j]);
	free(v);
done:
	json_decref(items);
	client_release(&cl);
	return rc;
}

int cmd_slurm(int argc, char **argv)
{
	static const struct client_verb verbs[] = {
		{"import", NULL, slurm_import},
		{"config", NULL, slurm_config},
		{NULL, NULL, NULL},
	};
	return cli_dispatch("slurm", slurm_usage_text, verbs, argc, argv);
}
