/* serve_opts.c - the one table of `fleetplane serve` options and everything made from it: the
 * getopt long options, the usage text, the parse of a value of each kind with its bounds, the
 * error message for a bad one, and the `--config FILE` reader (`key value` lines through the
 * same table). In the manner of Redis config.c and nginx's ngx_command_t: an option is a row
 * (name, kind, bounds, default, help, offset into struct serve_opts), not a switch case. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/server.h"
#include "base/err.h"
#include "base/log.h"
#include "boot/boot_server.h"
#include "cmd/serve_opts.h"
#include "base/kvlines.h"
#include "fleet/fleet.h"

#define SIM_SITE "sim-a"

enum opt_kind {
	OK_STRING,   /* any text; nonempty when opt.nonempty */
	OK_LONG,     /* base-10 integer lo..hi */
	OK_DURATION, /* base-10 integer lo..hi in opt.unit (seconds, milliseconds) */
	OK_DOUBLE,   /* strtod number lo..hi, not NaN */
	OK_SEED,     /* unsigned 64-bit integer > 0 */
	OK_LEVEL,    /* a log level: debug, info, warn, error, off */
	OK_FLAG,     /* no value: sets the int to 1 */
	OK_LOGFMT,   /* a log line format: logfmt or json (base/log.h) */
};

struct opt {
	const char *name; /* long flag without dashes; the config file key */
	enum opt_kind kind;
	const char *metavar; /* shown in the usage; NULL for a flag */
	double lo, hi;       /* bounds of OK_LONG, OK_DURATION, OK_DOUBLE */
	const char *noun;    /* "a number " in `"x" is not a number 0..1e6`; "" for none */
	const char *unit;    /* " seconds" or a parenthesised note after the bounds; "" for none */
	const char *dflt;    /* the default as its text, parsed by the same code; NULL = none */
	int flag_only;       /* refused in a config file */
	int nonempty;        /* OK_STRING: an empty value is refused */
	size_t off;          /* offsetof(struct serve_opts, field) */
	const char *help;
};

#define OFF(f) offsetof(struct serve_opts, f)

static const struct opt opts[] = {
	{"data-dir", OK_STRING, "DIR", 0, 0, "", "", NULL, 0, 0, OFF(data_dir),
	 "store, admin.token, secret.key and state live here (created 0700); required"},
	{"config", OK_STRING, "FILE", 0, 0, "", "", NULL, 1, 1, OFF(config),
	 "read `key value` lines (a key is a flag without its dashes; # comments); flags given "
	 "on the command line override the file"},
	{"check", OK_FLAG, NULL, 0, 0, "", "", NULL, 1, 0, OFF(check),
	 "validate the flags and the config file (bounds, data dir, listen address), print "
	 "\"configuration ok\" and exit 0, or the error and exit 2; opens and binds nothing"},
	{"listen", OK_STRING, "ADDR", 0, 0, "", "", "127.0.0.1:7070", 0, 0, OFF(listen),
	 "host:port for the API"},
	{"sim", OK_LONG, "N", 0, 200000, "a node count ", "", "0", 0, 0, OFF(sim),
	 "create, if absent, site " SIM_SITE " with racks of 8 nodes and N enrolled simulated "
	 "8-GPU nodes (idempotent)"},
	{"sim-speed", OK_DOUBLE, "X", 0, 100000, "a number ", "", "10", 0, 0, OFF(sim_speed),
	 "simulated hardware runs X times faster than real (0 = zero latency)"},
	{"sim-faults", OK_SEED, "SEED", 0, 0, "", "", NULL, 0, 0, OFF(sim_faults),
	 "inject seeded BMC timeouts, wrong power reads, lost callbacks (default off)"},
	{"workers", OK_LONG, "N", 1, 256, "", "", "4", 0, 0, OFF(workers), "reconcile workers"},
	{"executor-threads", OK_LONG, "N", 1, 256, "", "", "32", 0, 0, OFF(executor_threads),
	 "threads that run operation steps (BMC calls block on them; 4 with --sim-speed 0 "
	 "unless given)"},
	{"site-qps", OK_DOUBLE, "Q", 0, 1e6, "a number ", "", "100", 0, 0, OFF(site_qps),
	 "BMC commands per second per site (scaled by --sim-speed for sim nodes; 0 = unlimited)"},
	{"log-level", OK_LEVEL, "LEVEL", 0, 0, "", "", NULL, 0, 0, OFF(log_level),
	 "debug, info, warn, error or off (default info)"},
	{"log-format", OK_LOGFMT, "FORMAT", 0, 0, "", "", NULL, 0, 0, OFF(log_format),
	 "log lines as logfmt (default) or json, one event a line (docs/operations.md \"Logs\")"},
	{"bmc-credentials-dir", OK_STRING, "DIR", 0, 0, "", "", NULL, 0, 1,
	 OFF(bmc_credentials_dir),
	 "spec.bmc.password_file and spec.bmc.ca_file name files in DIR (default "
	 "DATA_DIR/bmc-credentials, created 0700)"},
	{"bmc-concurrency", OK_LONG, "N", 1, 64, "", "", "1", 0, 0, OFF(bmc_concurrency),
	 "commands in flight per BMC"},
	{"bmc-min-interval", OK_DURATION, "MS", 0, 600000, "", " milliseconds", "0", 0, 0,
	 OFF(bmc_min_interval), "least gap between two commands to one BMC"},
	{"bmc-timeout", OK_DURATION, "SECONDS", 1, 600, "", " seconds", "30", 0, 0,
	 OFF(bmc_timeout), "deadline of one BMC call"},
	{"bmc-breaker-failures", OK_LONG, "N", 1, 1000, "", "", "5", 0, 0,
	 OFF(bmc_breaker_failures),
	 "consecutive timeouts or connection failures after which a BMC is left alone until a "
	 "probe answers"},
	{"new-secret-key", OK_FLAG, NULL, 0, 0, "", "", NULL, 1, 0, OFF(new_secret_key),
	 "secret.key is missing and nodes have BMC passwords sealed with it: make a new key "
	 "anyway (those passwords must be set again); refused when secret.key exists; a flag "
	 "only, never in a config file"},
	{"heartbeat-timeout", OK_DURATION, "SECONDS", 0, 86400, "", " seconds", "0", 0, 0,
	 OFF(heartbeat_timeout),
	 "a node agent silent this long gets AgentAlive False (0: 3 x the agent's reported "
	 "interval, at least 90 s)"},
	{"report-rate", OK_DOUBLE, "R", 0, 100000, "a number ",
	 " (reports per second per node; 0 = no limit)", "5", 0, 0, OFF(report_rate),
	 "agent reports (POST /v1/nodes/{name}:report) per second per node, and the same per "
	 "token (0 = no limit); over it: 429, Retry-After"},
	{"report-burst", OK_LONG, "N", 1, 100000, "", " reports", "20", 0, 0, OFF(report_burst),
	 "reports a node (or a token) may send at once"},
	{"report-events", OK_LONG, "N", 0, 100000000, "",
	 " (events per minute per node; 0 = no limit)", "6000", 0, 0, OFF(report_events),
	 "events in reports per minute per node, and the same per token (0 = no limit; the "
	 "bucket holds at least 256, one report)"},
	{"api-max-connections", OK_LONG, "N", 16, 100000, "", " connections", "1000", 0, 0,
	 OFF(api_max_connections),
	 "open API connections in all; at the limit a new connection closes the oldest one that "
	 "has not sent a whole request (else the longest-idle keep-alive one), so health probes "
	 "and clients still get in (docs/operations.md \"Connection limits\")"},
	{"api-max-connections-per-client", OK_LONG, "N", 0, 100000, "",
	 " connections (0 = no limit)", "100", 0, 0, OFF(api_max_conn_per_client),
	 "open API connections per client IP address (0 = no limit; raise it behind a proxy or "
	 "NAT that funnels many clients into one address)"},
	{"api-header-timeout", OK_DURATION, "SECONDS", 1, 3600, "", " seconds", "10", 0, 0,
	 OFF(api_header_timeout),
	 "a new connection's request line and headers must arrive within this time, and each "
	 "keep-alive request's headers within this time of its first line; else it is closed"},
	{"api-body-timeout", OK_DURATION, "SECONDS", 1, 3600, "", " seconds", "60", 0, 0,
	 OFF(api_body_timeout), "a request body must arrive within this time of its headers"},
	{"api-idle-timeout", OK_DURATION, "SECONDS", 1, 86400, "", " seconds", "60", 0, 0,
	 OFF(api_idle_timeout), "a keep-alive connection with no request is closed after this"},
	{"metrics-node-series", OK_LONG, "N", 0, 1000000, "", " nodes (0 = none)", "10000", 0, 0,
	 OFF(metrics_node_series),
	 "/metrics has fleetplane_node_info and fleetplane_node_condition (about 10 series a node) "
	 "while the fleet has at most N nodes, none above (fleetplane_node_series_limited 1); 0 = "
	 "never (docs/operations.md \"Monitoring and alerts\")"},
	{"slurm", OK_FLAG, NULL, 0, 0, "", "", NULL, 0, 0, OFF(slurm),
	 "keep Slurm in step (docs/slurm.md): a node fleetplane does not schedule is DRAIN there "
	 "with reason \"fleetplane: OWNER: REASON\" and RESUMEd when it is schedulable again; a "
	 "drain fleetplane did not make becomes a hold of slurm:USER that fleetplane never "
	 "releases itself. Runs scontrol from PATH with SLURM_CONF from the environment"},
	{"slurm-interval", OK_DURATION, "SECONDS", 1, 3600, "", " seconds", "30", 0, 0,
	 OFF(slurm_interval),
	 "with --slurm: a full pass over every node this often (changed nodes go within 1 s); "
	 "a drain made in Slurm is imported within this time"},
	{"slurm-stuck-completing", OK_DURATION, "SECONDS", 0, 86400, "", " seconds", "600", 0, 0,
	 OFF(slurm_stuck_completing),
	 "with --slurm: a job still COMPLETING this long after it ended is stuck: a health event "
	 "slurm:completing_stuck for each of its nodes, attributed to the job (0 = off)"},
	{"slurm-nodes-conf", OK_STRING, "FILE", 0, 0, "", "", NULL, 0, 1, OFF(slurm_nodes_conf),
	 "with --slurm: keep FILE (absolute; slurm.conf Includes it) equal to the NodeName= and "
	 "PartitionName= lines generated from the nodes that passed validation, and run scontrol "
	 "reconfigure when it changes"},
	{"slurm-gres-conf", OK_STRING, "FILE", 0, 0, "", "", NULL, 0, 1, OFF(slurm_gres_conf),
	 "with --slurm-nodes-conf: keep FILE (absolute) equal to the generated cluster-wide "
	 "gres.conf"},
	{"boot-listen", OK_STRING, "ADDR", 0, 0, "", "", NULL, 0, 1, OFF(boot_listen),
	 "serve the network boot service (docs/provisioning.md: iPXE scripts, images, the "
	 "ramdisk and disk-boot callbacks) on ADDR, an IP:port of the provisioning network; nodes "
	 "with spec.provision are then provisioned and reimaged through it"},
	{"boot-url", OK_STRING, "URL", 0, 0, "", "", NULL, 0, 1, OFF(boot_url),
	 "with --boot-listen: the base URL machines reach the boot service at (default "
	 "http://ADDR of --boot-listen)"},
	{"boot-kernel", OK_STRING, "IMAGE", 0, 0, "", "", "ramdisk-vmlinuz", 0, 1, OFF(boot_kernel),
	 "with --boot-listen: the image store name of the ramdisk's kernel"},
	{"boot-initrd", OK_STRING, "IMAGE", 0, 0, "", "", "ramdisk-initrd", 0, 1, OFF(boot_initrd),
	 "with --boot-listen: the image store name of the ramdisk's initrd"},
	{"boot-kernel-args", OK_STRING, "ARGS", 0, 0, "", "", NULL, 0, 1, OFF(boot_kernel_args),
	 "with --boot-listen: kernel arguments for the ramdisk besides fleetplane's own (default "
	 "\"console=ttyS0 console=tty0\")"},
	{"boot-dhcp-hosts", OK_STRING, "FILE", 0, 0, "", "", NULL, 0, 1, OFF(boot_dhcp_hosts),
	 "with --boot-listen: keep FILE (dnsmasq --dhcp-hostsfile) equal to one line per node "
	 "MAC: MAC,set:SITE[,spec.provision.ipAddress],HOSTNAME"},
	{"boot-dhcp-hostsdir", OK_STRING, "DIR", 0, 0, "", "", NULL, 0, 1, OFF(boot_dhcp_hostsdir),
	 "with --boot-listen: keep DIR (dnsmasq --dhcp-hostsdir, re-read by inotify, no signal) "
	 "as one file NODE.hosts per node with the lines of --boot-dhcp-hosts; use it rather "
	 "than --boot-dhcp-hosts (docs/provisioning.md)"},
	{"boot-dnsmasq-pid", OK_STRING, "FILE", 0, 0, "", "", NULL, 0, 1, OFF(boot_dnsmasq_pid),
	 "with --boot-dhcp-hosts: SIGHUP the dnsmasq whose --pid-file is FILE after each rewrite"},
	{"boot-timeout", OK_DURATION, "SECONDS", 0, 86400, "", " seconds", "0", 0, 0,
	 OFF(boot_timeout),
	 "with --boot-listen: how long each network-boot wait (inspection, deploy, boot from "
	 "disk) may take before the provisioning fails naming it (0 = 15, 30 and 15 minutes)"},
	{"store", OK_STRING, "URI", 0, 0, "", "", NULL, 0, 1, OFF(store),
	 "the store: sqlite:PATH (default sqlite:DIR/fleetplane.db of --data-dir) or "
	 "etcd://HOST:PORT[,HOST:PORT...][/NAMESPACE][?OPTIONS] (docs/etcd.md); on etcd the "
	 "serves of one namespace elect a leader, which alone runs the controllers, and the "
	 "others stand by answering 503 with the leader's URL"},
	{"leader-ttl", OK_DURATION, "SECONDS", 2, 60, "", " seconds", "2", 0, 0, OFF(leader_ttl),
	 "with an etcd store: the leader's lease TTL; it renews every TTL/4 and stops acting "
	 "when a renewal has not succeeded for TTL - 0.6 s, before etcd expires the lease; a "
	 "standby takes over within about TTL + 0.5 s of the leader's death"},
	{"advertise-url", OK_STRING, "URL", 0, 0, "", "", NULL, 0, 1, OFF(advertise_url),
	 "with an etcd store: the API URL standbys name for this serve while it leads (default "
	 "https://ADDR of --listen, http:// with --plain-http)"},
	/* kube (issue 13): TLS on the API listener */
	{"tls-cert", OK_STRING, "FILE", 0, 0, "", "", NULL, 0, 1, OFF(tls_cert),
	 "PEM certificate chain of the API (with --tls-key); default: a self-signed certificate "
	 "for the listen address made on first start as DATA_DIR/tls.crt, which clients trust "
	 "as DATA_DIR/ca.crt (FLEETPLANE_CA, `fleetplane kubeconfig`)"},
	{"tls-key", OK_STRING, "FILE", 0, 0, "", "", NULL, 0, 1, OFF(tls_key),
	 "PEM private key of --tls-cert"},
	{"plain-http", OK_FLAG, NULL, 0, 0, "", "", NULL, 0, 0, OFF(plain_http),
	 "serve the API over plain http, without TLS (kubectl then sends no token; for tests "
	 "and loopback use)"},
	{"help", OK_FLAG, NULL, 0, 0, "", "", NULL, 1, 0, OFF(help), "print this help"},
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))
_Static_assert(NOPTS <= SERVE_OPTS_MAX, "SERVE_OPTS_MAX too small");

/* The report limit defaults above are the API's own: the table shows them, the API uses them. */
_Static_assert(API_REPORT_LIMIT_BURST == 20, "report-burst default differs from the API's");
_Static_assert(API_REPORT_LIMIT_EVENTS_PER_MIN == 6000, "report-events default differs");

static const struct opt *find_opt(const char *name, size_t len)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
			return &opts[i];
	return NULL;
}

/* fmt_bound prints a bound as the old messages did: integers plainly, doubles with %g and
 * an exponent without its sign and zeros (1e6, not 1e+06). */
static void fmt_bound(const struct opt *d, double v, char *out, size_t n)
{
	if (d->kind != OK_DOUBLE) {
		snprintf(out, n, "%ld", (long)v);
		return;
	}
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%g", v);
	char *e = strchr(tmp, 'e');
	if (!e) {
		snprintf(out, n, "%s", tmp);
		return;
	}
	char *p = e + 1;
	int neg = *p == '-';
	if (*p == '+' || *p == '-')
		p++;
	while (*p == '0' && p[1])
		p++;
	*e = 0;
	snprintf(out, n, "%se%s%s", tmp, neg ? "-" : "", p);
}

/* why_bad writes why value is refused for option d (no "error:" and no name). */
static void why_bad(const struct opt *d, const char *value, char *why, size_t n)
{
	char lo[64], hi[64];
	switch (d->kind) {
	case OK_STRING: snprintf(why, n, "must not be empty"); return;
	case OK_SEED: snprintf(why, n, "\"%s\" is not a seed > 0", value); return;
	case OK_LEVEL:
		snprintf(why, n, "\"%s\" is not one of debug, info, warn, error, off", value);
		return;
	case OK_LOGFMT: snprintf(why, n, "\"%s\" is not logfmt or json", value); return;
	case OK_FLAG:
		snprintf(why, n, "\"%s\" is not on or off (the key alone is on)", value);
		return;
	default:
		fmt_bound(d, d->lo, lo, sizeof(lo));
		fmt_bound(d, d->hi, hi, sizeof(hi));
		snprintf(why, n, "\"%s\" is not %s%s..%s%s", value, d->noun, lo, hi, d->unit);
		return;
	}
}

/* set_value parses value for option d into o; strings are stored as the pointer given (the
 * caller keeps it alive). Returns 0 or FP_EINVAL. */
static int set_value(const struct opt *d, const char *value, struct serve_opts *o)
{
	char *field = (char *)o + d->off;
	char *end;
	errno = 0;
	switch (d->kind) {
	case OK_STRING:
		if (d->nonempty && !*value)
			return FP_EINVAL;
		*(const char **)field = value;
		break;
	case OK_LONG:
	case OK_DURATION: {
		long v = strtol(value, &end, 10);
		if (errno || end == value || *end || v < (long)d->lo || v > (long)d->hi)
			return FP_EINVAL;
		*(long *)field = v;
		break;
	}
	case OK_DOUBLE: {
		double v = strtod(value, &end);
		if (errno || end == value || *end || isnan(v) || v < d->lo || v > d->hi)
			return FP_EINVAL;
		*(double *)field = v;
		break;
	}
	case OK_SEED: {
		unsigned long long v = strtoull(value, &end, 10);
		if (errno || end == value || *end || v == 0)
			return FP_EINVAL;
		*(uint64_t *)field = v;
		break;
	}
	case OK_LEVEL:
		if (log_level_parse(value) < 0)
			return FP_EINVAL;
		*(const char **)field = value;
		break;
	case OK_LOGFMT:
		if (log_format_parse(value) < 0)
			return FP_EINVAL;
		*(const char **)field = value;
		break;
	case OK_FLAG:
		/* a command-line flag has no value; a config-file key may say on or off */
		if (!value || !*value || strcmp(value, "on") == 0 || strcmp(value, "yes") == 0 ||
		    strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
			*(int *)field = 1;
		else if (strcmp(value, "off") == 0 || strcmp(value, "no") == 0 ||
			 strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
			*(int *)field = 0;
		else
			return FP_EINVAL;
		break;
	}
	o->set[d - opts] = 1;
	return 0;
}

void serve_opts_defaults(struct serve_opts *o)
{
	memset(o, 0, offsetof(struct serve_opts, strbuf));
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].dflt && set_value(&opts[i], opts[i].dflt, o) < 0)
			abort(); /* a table default out of its own bounds */
	memset(o->set, 0, sizeof(o->set));
}

void serve_opts_derive(struct serve_opts *o)
{
	if (o->sim_speed == 0 && !o->set[find_opt("executor-threads", 16) - opts])
		o->executor_threads =
			4; /* zero-latency sim: steps never block, threads only switch */
}

void serve_opts_fleet_config(const struct serve_opts *o, struct fleet_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->data_dir = o->data_dir;
	cfg->listen = o->listen;
	cfg->cred_dir = o->bmc_credentials_dir;
	cfg->new_secret_key = o->new_secret_key;
	cfg->sim_nodes = o->sim;
	cfg->sim_speed = o->sim_speed;
	cfg->sim_faults = o->sim_faults;
	cfg->workers = (int)o->workers;
	cfg->exec_threads = (int)o->executor_threads;
	cfg->site_qps = o->site_qps;
	cfg->bmc_concurrency = o->bmc_concurrency;
	cfg->bmc_min_interval_ms = o->bmc_min_interval;
	cfg->bmc_timeout_s = o->bmc_timeout;
	cfg->bmc_breaker_failures = o->bmc_breaker_failures;
	cfg->heartbeat_timeout_s = o->heartbeat_timeout;
	cfg->report_limit.reports_per_s = o->report_rate == 0 ? -1 : o->report_rate;
	cfg->report_limit.burst = o->report_burst;
	cfg->report_limit.events_per_min = o->report_events == 0 ? -1 : o->report_events;
	cfg->metrics_node_series = o->metrics_node_series == 0 ? -1 : o->metrics_node_series;
	cfg->conn_limits.max_connections = (unsigned)o->api_max_connections;
	cfg->conn_limits.per_client = (unsigned)o->api_max_conn_per_client;
	cfg->conn_limits.no_per_client = o->api_max_conn_per_client == 0;
	cfg->conn_limits.header_timeout_s = (unsigned)o->api_header_timeout;
	cfg->conn_limits.body_timeout_s = (unsigned)o->api_body_timeout;
	cfg->conn_limits.idle_timeout_s = (unsigned)o->api_idle_timeout;
	cfg->boot_wait_ms = o->boot_timeout * 1000;
	cfg->store_uri = o->store;
	cfg->tls_cert = o->tls_cert;
	cfg->tls_key = o->tls_key;
	cfg->plain_http = o->plain_http;
}

void serve_opts_copy(struct serve_opts *dst, const struct serve_opts *src)
{
	if (dst == src)
		return;
	memcpy(dst, src, sizeof(*dst));
	for (size_t i = 0; i < NOPTS; i++) {
		if (opts[i].kind != OK_STRING && opts[i].kind != OK_LEVEL &&
		    opts[i].kind != OK_LOGFMT)
			continue;
		const char **f = (const char **)((char *)dst + opts[i].off);
		if (*f == src->strbuf[i])
			*f = dst->strbuf[i];
	}
}

/* put_wrapped prints text to f from column col, wrapping at 100 columns with later lines
 * indented to indent. */
static void put_wrapped(FILE *f, const char *text, int col, int indent)
{
	const char *p = text;
	while (*p) {
		while (*p == ' ')
			p++;
		size_t w = strcspn(p, " ");
		if (!w)
			break;
		if (col > indent && col + 1 + (int)w > 100) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, w, f);
		col += (int)w;
		p += w;
	}
	fputc('\n', f);
}

void serve_opts_usage(FILE *f)
{
	fprintf(f, "usage: fleetplane serve --data-dir DIR [--config FILE] [--check] [OPTION]...\n"
		   "\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *d = &opts[i];
		char head[96], lo[64], hi[64], text[1024];
		snprintf(head, sizeof(head), "--%s%s%s", d->name, d->metavar ? " " : "",
			 d->metavar ? d->metavar : "");
		size_t n = (size_t)snprintf(text, sizeof(text), "%s", d->help);
		if (d->dflt && n < sizeof(text))
			n += (size_t)snprintf(text + n, sizeof(text) - n, "; default %s", d->dflt);
		if ((d->kind == OK_LONG || d->kind == OK_DURATION || d->kind == OK_DOUBLE) &&
		    n < sizeof(text)) {
			fmt_bound(d, d->lo, lo, sizeof(lo));
			fmt_bound(d, d->hi, hi, sizeof(hi));
			n += (size_t)snprintf(text + n, sizeof(text) - n, "; %s..%s%s", lo, hi,
					      d->kind == OK_DURATION ? d->unit : "");
		}
		if (d->flag_only && strcmp(d->name, "new-secret-key") != 0 && n < sizeof(text))
			snprintf(text + n, sizeof(text) - n, " (flag only)");
		fprintf(f, "  %-28s ", head);
		put_wrapped(f, text, 31, 31);
	}
}

/* read_capped reads path whole into a malloc'd NUL-terminated buffer of at most
 * SERVE_OPTS_FILE_MAX bytes. Returns 0 (caller frees *out) or FP_EIO / FP_EINVAL with err. */
static int read_capped(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fp_errf(FP_EIO, err, errlen, "%s: cannot open: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fp_errf(FP_EIO, err, errlen, "%s: not a regular file", path);
	}
	char *buf = malloc(SERVE_OPTS_FILE_MAX + 2);
	if (!buf)
		abort();
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, SERVE_OPTS_FILE_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			free(buf);
			return fp_errf(FP_EIO, err, errlen, "%s: cannot read: %s", path,
				       strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > SERVE_OPTS_FILE_MAX) {
			close(fd);
			free(buf);
			return fp_errf(FP_EINVAL, err, errlen, "%s: larger than %d bytes", path,
				       SERVE_OPTS_FILE_MAX);
		}
	}
	close(fd);
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

int serve_opts_load_file(const char *path, struct serve_opts *o, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_capped(path, &buf, &len, err, errlen);
	if (rc < 0)
		return rc;
	struct serve_opts *tmp = malloc(sizeof(*tmp));
	if (!tmp)
		abort();
	serve_opts_copy(tmp, o);
	unsigned seen[SERVE_OPTS_MAX] = {0}; /* line where option i was given, 0 = not yet */
	struct kvlines kv;
	kvlines_init(&kv, buf, len, path, SERVE_OPTS_LINE_MAX, 0);
	char *key, *value;
	while ((rc = kvlines_next(&kv, &key, &value, err, errlen)) == 1) {
		unsigned lineno = kv.lineno;
		size_t klen = strlen(key);
		const struct opt *d = find_opt(key, klen);
		char why[256];
		if (!d) {
			rc = fp_errf(FP_EINVAL, err, errlen, "%s:%u: %s: unknown key", path, lineno,
				     key);
			break;
		}
		size_t i = (size_t)(d - opts);
		if (d->flag_only) {
			rc = fp_errf(FP_EINVAL, err, errlen,
				     "%s:%u: %s: a command-line flag only, not a config key", path,
				     lineno, key);
			break;
		}
		if (seen[i]) {
			rc = fp_errf(FP_EINVAL, err, errlen,
				     "%s:%u: %s: given twice (first on line "
				     "%u)",
				     path, lineno, key, seen[i]);
			break;
		}
		seen[i] = lineno;
		if (!*value && d->kind != OK_FLAG) {
			rc = fp_errf(FP_EINVAL, err, errlen, "%s:%u: %s: needs a value", path,
				     lineno, key);
			break;
		}
		snprintf(tmp->strbuf[i], sizeof(tmp->strbuf[i]), "%s", value);
		if (set_value(d, tmp->strbuf[i], tmp) < 0) {
			why_bad(d, value, why, sizeof(why));
			rc = fp_errf(FP_EINVAL, err, errlen, "%s:%u: %s: %s", path, lineno, key,
				     why);
			break;
		}
	}
	if (rc == 0)
		serve_opts_copy(o, tmp);
	free(tmp);
	free(buf);
	return rc;
}

/* One flag as given: option index and its argument (NULL for a flag without one). */
struct given {
	size_t i;
	const char *arg;
};

int serve_opts_parse(int argc, char **argv, struct serve_opts *o)
{
	struct option longopts[SERVE_OPTS_MAX + 1];
	for (size_t i = 0; i < NOPTS; i++)
		longopts[i] = (struct option){opts[i].name,
					      opts[i].kind == OK_FLAG ? no_argument
								      : required_argument,
					      NULL, 256 + (int)i};
	longopts[NOPTS] = (struct option){NULL, 0, NULL, 0};
	serve_opts_defaults(o);
	struct given *given = calloc((size_t)argc + 1, sizeof(*given));
	if (!given)
		abort();
	size_t ngiven = 0;
	int c, rc = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h')
			c = 256 + (int)(find_opt("help", 4) - opts);
		if (c < 256 || c >= 256 + (int)NOPTS) {
			serve_opts_usage(stderr);
			rc = 2;
			goto out;
		}
		const struct opt *d = &opts[c - 256];
		if (set_value(d, optarg ? optarg : "", o) < 0) {
			char why[256];
			why_bad(d, optarg ? optarg : "", why, sizeof(why));
			fprintf(stderr, "error: --%s: %s\n", d->name, why);
			rc = 2;
			goto out;
		}
		if (o->help) {
			serve_opts_usage(stdout);
			rc = 0;
			goto out;
		}
		given[ngiven++] = (struct given){(size_t)(d - opts), optarg};
	}
	if (o->config) {
		/* The file under the flags: defaults, the file, then the flags again in order (they
		 * parsed once already, so they parse again). */
		struct serve_opts *f = malloc(sizeof(*f));
		if (!f)
			abort();
		const char *path = o->config;
		char err[512];
		serve_opts_defaults(f);
		if (serve_opts_load_file(path, f, err, sizeof(err)) < 0) {
			fprintf(stderr, "error: %s\n", err);
			free(f);
			rc = 2;
			goto out;
		}
		for (size_t k = 0; k < ngiven; k++)
			if (set_value(&opts[given[k].i], given[k].arg ? given[k].arg : "", f) < 0)
				abort(); /* it parsed a moment ago */
		serve_opts_copy(o, f);
		free(f);
	}
	serve_opts_derive(o);
	if (optind < argc) {
		fprintf(stderr, "error: serve: unexpected argument \"%s\"\n", argv[optind]);
		rc = 2;
		goto out;
	}
	if (!o->data_dir || !*o->data_dir) {
		fprintf(stderr, "error: serve: --data-dir is required (and must not be empty)\n");
		serve_opts_usage(stderr);
		rc = 2;
		goto out;
	}
out:
	free(given);
	return rc;
}

/* check_listen: the address the API would bind (api_listen_parse), its error named as the flag. */
static int check_listen(const char *listen, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int v6;
	char why[512];
	int rc = api_listen_parse(listen, &ss, &sl, &v6, why, sizeof(why));
	if (rc < 0)
		return fp_errf(rc, err, errlen, "--%s", why);
	return 0;
}

/* check_dir: dir is a writable directory, or missing with a writable directory above it. */
static int check_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return fp_errf(FP_EINVAL, err, errlen, "data dir %s is not a directory",
				       dir);
		if (access(dir, W_OK | X_OK) < 0)
			return fp_errf(FP_EINVAL, err, errlen, "data dir %s is not writable: %s",
				       dir, strerror(errno));
		return 0;
	}
	if (errno != ENOENT)
		return fp_errf(FP_EINVAL, err, errlen, "data dir %s: %s", dir, strerror(errno));
	char parent[4096];
	snprintf(parent, sizeof(parent), "%s", dir);
	size_t n = strlen(parent);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = 0;
	char *slash = strrchr(parent, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == parent)
		parent[1] = 0;
	else
		*slash = 0;
	if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode) || access(parent, W_OK | X_OK) < 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "cannot create data dir %s: %s is not a writable directory", dir,
			       parent);
	return 0;
}

void serve_opts_boot_config(const struct serve_opts *o, char *imgdir, size_t imgdirlen,
			    struct boot_config *bc)
{
	snprintf(imgdir, imgdirlen, "%s/images", o->data_dir);
	*bc = (struct boot_config){.listen = o->boot_listen,
				   .url = o->boot_url,
				   .image_dir = imgdir,
				   .ramdisk_kernel = o->boot_kernel,
				   .ramdisk_initrd = o->boot_initrd,
				   .kernel_args = o->boot_kernel_args,
				   .dhcp_hosts = o->boot_dhcp_hosts,
				   .dhcp_hostsdir = o->boot_dhcp_hostsdir,
				   .dnsmasq_pid = o->boot_dnsmasq_pid};
}

int serve_opts_validate(const struct serve_opts *o, char *err, size_t errlen)
{
	if (!o->slurm && (o->slurm_nodes_conf || o->slurm_gres_conf))
		return fp_errf(FP_EINVAL, err, errlen,
			       "--slurm-nodes-conf and --slurm-gres-conf need --slurm");
	if (!o->slurm_nodes_conf && o->slurm_gres_conf)
		return fp_errf(FP_EINVAL, err, errlen,
			       "--slurm-gres-conf needs --slurm-nodes-conf");
	for (int i = 0; i < 2; i++) {
		const char *p = i ? o->slurm_gres_conf : o->slurm_nodes_conf;
		if (p && (p[0] != '/' || strlen(p) > 1024))
			return fp_errf(FP_EINVAL, err, errlen,
				       "--slurm-%s-conf: \"%.100s\" is not an absolute path of at "
				       "most 1024 bytes",
				       i ? "gres" : "nodes", p);
	}
	if (!o->boot_listen &&
	    (o->boot_url || o->boot_kernel_args || o->boot_dhcp_hosts || o->boot_dhcp_hostsdir ||
	     o->boot_dnsmasq_pid || o->boot_timeout > 0))
		return fp_errf(FP_EINVAL, err, errlen, "the --boot-* options need --boot-listen");
	if (o->boot_dnsmasq_pid && !o->boot_dhcp_hosts)
		return fp_errf(FP_EINVAL, err, errlen,
			       "--boot-dnsmasq-pid needs --boot-dhcp-hosts");
	if (o->boot_listen) {
		char imgdir[4096];
		struct boot_config bc;
		serve_opts_boot_config(o, imgdir, sizeof(imgdir), &bc);
		if (boot_config_check(&bc, err, errlen) < 0)
			return FP_EINVAL;
	}
	return 0;
}

/* kube (issue 13): --tls-cert and --tls-key go together, not with --plain-http, and name
 * readable files. */
static int check_tls(const struct serve_opts *o, char *err, size_t errlen)
{
	if (!o->tls_cert != !o->tls_key)
		return fp_errf(FP_EINVAL, err, errlen, "--tls-cert and --tls-key go together");
	if (o->tls_cert && o->plain_http)
		return fp_errf(FP_EINVAL, err, errlen,
			       "--plain-http excludes --tls-cert and --tls-key");
	const char *files[] = {o->tls_cert, o->tls_key};
	for (size_t i = 0; i < 2; i++)
		if (files[i] && access(files[i], R_OK) != 0)
			return fp_errf(FP_EINVAL, err, errlen, "%s %s: %s",
				       i ? "--tls-key" : "--tls-cert", files[i], strerror(errno));
	return 0;
}

int serve_opts_check(const struct serve_opts *o)
{
	char err[512];
	if (check_dir(o->data_dir, err, sizeof(err)) < 0 ||
	    check_listen(o->listen, err, sizeof(err)) < 0 ||
	    serve_opts_validate(o, err, sizeof(err)) < 0 || check_tls(o, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		return 2;
	}
	if (o->store && strncmp(o->store, "sqlite:", 7) != 0 &&
	    strncmp(o->store, "etcd://", 7) != 0) {
		fprintf(stderr,
			"error: --store: \"%.100s\" is neither sqlite:PATH nor etcd://...\n",
			o->store);
		return 2;
	}
	printf("configuration ok\n");
	return 0;
}

/* packaging (issue 15): what a SIGHUP reload changed (serve_reload.c) */
size_t serve_opts_diff(const struct serve_opts *a, const struct serve_opts *b, const char **names,
		       size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *d = &opts[i];
		if (d->flag_only)
			continue;
		const char *pa = (const char *)a + d->off, *pb = (const char *)b + d->off;
		int same = 1;
		switch (d->kind) {
		case OK_LONG:
		case OK_DURATION:
			same = *(const long *)(const void *)pa == *(const long *)(const void *)pb;
			break;
		case OK_DOUBLE:
			same = *(const double *)(const void *)pa ==
			       *(const double *)(const void *)pb;
			break;
		case OK_SEED:
			same = *(const uint64_t *)(const void *)pa ==
			       *(const uint64_t *)(const void *)pb;
			break;
		case OK_FLAG:
			same = *(const int *)(const void *)pa == *(const int *)(const void *)pb;
			break;
		default: { /* OK_STRING, OK_LEVEL: the kinds whose field is a const char * */
			const char *sa = *(const char *const *)(const void *)pa;
			const char *sb = *(const char *const *)(const void *)pb;
			same = (!sa && !sb) || (sa && sb && strcmp(sa, sb) == 0);
			break;
		}
		}
		if (!same && n < max)
			names[n++] = d->name;
	}
	return n;
}
