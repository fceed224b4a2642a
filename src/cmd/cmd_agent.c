/* cmd_agent.c - `fleetplane agent --node NAME`: the node agent (docs/agent.md). Parses flags,
 * reads the boot id, and gives the agent loop (src/agent/agent.c) an HTTP transport built on the
 * CLI's client (FLEETPLANE_URL, FLEETPLANE_TOKEN: a node-scoped agent token from `fleetplane
 * token create --role agent --node NAME`). Exit codes as the client commands: 0 ok (--once: the
 * API accepted every report), 1 a report was rejected or kept for a reason other than an
 * unreachable API, 2 usage (a flag, --node/--job/$SLURM_JOB_ID outside the server's grammar, a
 * state dir that cannot be created), 3 the API could not be reached (reports kept in the
 * outbox), 4 a local write under the state dir failed (ENOSPC, EROFS, EACCES: nothing is
 * lost, the events not yet in the outbox are read again next run). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/agent.h"
#include "agent/bootclient.h"
#include "agent/check.h"
#include "agent/deploy.h"
#include "agent/inventory.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/kvlines.h"
#include "base/log.h"
#include "cmd/sdnotify.h"
#include "cmd/client.h"
#include "cmd/run.h"
#include "core/codec.h"
#include "core/model.h"
#include "sched/slurm_cli.h"
#include "sched/slurm_project.h"

#include "base/banned.h"

static const char agent_usage[] =
	"Usage: fleetplane agent --node NAME [flags]\n"
	"\n"
	"Runs on a GPU node: reads the kernel log and GPU tools, reports health events and\n"
	"heartbeats to fleetplane (FLEETPLANE_URL, FLEETPLANE_TOKEN: an agent token for NAME).\n"
	"\n"
	"      --node NAME           the node this agent reports for (required)\n"
	"      --kernel-log FILE     kernel log to follow: a file, or /dev/kmsg\n"
	"      --nvidia-smi FILE|auto  nvidia-smi -q or -q -x output re-read each interval, or\n"
	"                            auto: run `nvidia-smi -q -x` and `nvidia-smi nvlink\n"
	"                            --status` from PATH\n"
	"      --nvlink-status FILE  `nvidia-smi nvlink --status` output re-read each interval\n"
	"                            (with --nvidia-smi; auto runs it without this flag)\n"
	"      --nvml                read GPUs through libnvidia-ml.so.1 when present\n"
	"      --dcgmi FILE|auto     `dcgmi health -c [-j]` (or `dcgmi diag`) output, or auto:\n"
	"                            run `dcgmi health -c -j` from PATH\n"
	"      --ibstat FILE|auto    `ibstat` output, or auto\n"
	"      --ethernet-not-fabric  ibstat's Ethernet ports carry no RDMA fabric: a RoCE\n"
	"                            port down is no finding (default: roce:port_down)\n"
	"      --expected-gpus N     expected GPU count (default: the node's spec.gpus.count)\n"
	"      --gpu-idle-minutes N  report slurm:gpu_idle when a Slurm job's GPUs are all at 0 %\n"
	"                            for N minutes (default 30; 0 off; at most 1440)\n"
	"      --job ID              job id of events whose pid's own Slurm job (from\n"
	"                            /proc/PID/cgroup or environ) is not known\n"
	"                            (default: $SLURM_JOB_ID)\n"
	"      --state-dir DIR       outbox and kernel cursor (default /var/lib/fleetplane-agent)\n"
	"      --interval S          probe and heartbeat interval, seconds (default 30)\n"
	"      --probe-timeout S     per probe, seconds (default 10)\n"
	"      --max-buffer N        events kept while the API is down (default 10000)\n"
	"      --boot-id ID          default: /proc/sys/kernel/random/boot_id\n"
	"      --once                read inputs to their end, probe once, send, exit\n"
	"      --log-format FORMAT   log lines as logfmt (default) or json\n"
	"  -h, --help                this help\n"
	"\n"
	"Exit codes: 0 ok; 1 a report was refused or kept (see the log); 2 usage; 3 fleetplane\n"
	"could not be reached (reports stay in DIR/outbox and are sent first next time); 4 a\n"
	"file under DIR could not be written (disk full, read-only): nothing is lost.\n";

static volatile sig_atomic_t agent_stop;

static void agent_on_signal(int sig)
{
	(void)sig;
	agent_stop = 1;
}

struct agent_http {
	struct client c;
	char *report_path;
	char *node_path;
	char *remediated_path;
};

/* Runs client_request with its error line captured (the problem text becomes the answer kept
 * with a rejected report). Returns the client_exit code; *line is malloc'd (maybe ""). */
static int agent_request(struct agent_http *h, const char *method, const char *path,
			 const json_t *body, long *status, json_t **out, char **line)
{
	char *text = NULL;
	size_t tlen = 0;
	FILE *mem = open_memstream(&text, &tlen);
	FILE *saved = h->c.err;
	if (mem)
		h->c.err = mem;
	int rc = client_request(&h->c, method, path, body, status, out);
	h->c.err = saved;
	if (mem)
		fclose(mem);
	if (!text)
		text = xstrdup("");
	size_t n = strlen(text);
	while (n && text[n - 1] == '\n')
		text[--n] = '\0';
	*line = text;
	return rc;
}

static int agent_http_report(void *arg, const char *body, size_t len, long *status,
			     struct buf *answer)
{
	struct agent_http *h = arg;
	json_t *doc = NULL, *out = NULL;
	char err[256];
	*status = 0;
	buf_reset(answer);
	if (jsonx_parse(body, len, &doc, err, sizeof(err)) < 0) {
		/* Not JSON (damaged on disk): the server would refuse it the same way. */
		*status = 400;
		buf_printf(answer, "not sent: the report file is not JSON: %s", err);
		return 0;
	}
	char *line = NULL;
	int rc = agent_request(h, "POST", h->report_path, doc, status, &out, &line);
	json_decref(doc);
	if (rc == CLIENT_EXIT_OK) {
		if (out) {
			char *s = jsonx_dumps(out);
			buf_puts(answer, s);
			free(s);
		}
	} else if (line[0]) {
		buf_puts(answer, line);
		log_warn("agent report not taken path=%s status=%ld answer=\"%s\"", h->report_path,
			 *status, line);
	}
	json_decref(out);
	free(line);
	if (rc == CLIENT_EXIT_CONNECT || (rc != CLIENT_EXIT_OK && *status == 0))
		return FP_EIO;
	return 0;
}

static int agent_http_get_node(void *arg, json_t **doc)
{
	struct agent_http *h = arg;
	long status = 0;
	char *line = NULL;
	int rc = agent_request(h, "GET", h->node_path, NULL, &status, doc, &line);
	if (rc != CLIENT_EXIT_OK && line[0])
		log_warn("agent cannot read its node document path=%s answer=\"%s\"", h->node_path,
			 line);
	free(line);
	return rc == CLIENT_EXIT_OK && *doc ? 0 : FP_EIO;
}

static int agent_http_remediated(void *arg, const char *operation, int succeeded,
				 const char *message, long *status)
{
	struct agent_http *h = arg;
	json_t *body = json_pack("{s:s,s:b,s:o}", "operation", operation, "succeeded", succeeded,
				 "message", jsonx_string_lossy(message ? message : ""));
	json_t *out = NULL;
	char *line = NULL;
	*status = 0;
	int rc = agent_request(h, "POST", h->remediated_path, body, status, &out, &line);
	json_decref(body);
	json_decref(out);
	if (rc != CLIENT_EXIT_OK && line[0])
		log_warn("agent :remediated not taken path=%s status=%ld answer=\"%s\"",
			 h->remediated_path, *status, line);
	free(line);
	return rc == CLIENT_EXIT_CONNECT || (rc != CLIENT_EXIT_OK && *status == 0) ? FP_EIO : 0;
}

/* Parses a decimal in [lo, hi]. Returns 0 or -1. */
static int agent_parse_long(const char *s, long lo, long hi, long *out)
{
	char *end = NULL;
	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return -1;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (long)v;
	return 0;
}

enum {
	AGENT_EXIT_LOCAL = 4
};

/* mkdir -p dir with mode 0700 for what is missing. Returns 0 or -1 with why. */
static int agent_mkdirs(const char *dir, char *why, size_t whylen)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		snprintf(why, whylen, "path longer than %zu bytes", sizeof(path) - 1);
		return -1;
	}
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		struct stat st;
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			snprintf(why, whylen, "mkdir %.300s: %s", path, strerror(errno));
			return -1;
		}
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
			snprintf(why, whylen, "%.300s is not a directory", path);
			return -1;
		}
		*p = c;
		if (c == '\0')
			return 0;
	}
}

/* --once: a configured detector that is not live says why on stderr (the server's
 * DetectorsLive says it too, but a person running --once reads stderr). */
static void agent_warn_detectors(const struct agent *a, const struct agent_config *cfg)
{
	static const char *const flag[AGENT_DET__COUNT] = {"--kernel-log", "--nvidia-smi", "--nvml",
							   "--dcgmi", "--ibstat"};
	const char *val[AGENT_DET__COUNT] = {cfg->kernel_log, cfg->nvidia_smi,
					     cfg->nvml ? "" : NULL, cfg->dcgmi, cfg->ibstat};
	for (int d = 0; d < AGENT_DET__COUNT; d++) {
		const struct agent_det_state *s = agent_detector(a, (enum agent_det)d);
		if (!val[d] || s->live)
			continue;
		fprintf(stderr, "warning: %s%s%s: detector %s not live (%s): %s\n", flag[d],
			val[d][0] ? " " : "", val[d], agent_det_name((enum agent_det)d), s->reason,
			s->message);
	}
}

/* Reads the boot id (one line) into out. Returns 0 or -1 with errno's text in why. */
static int agent_read_boot_id(char *out, size_t outlen, char *why, size_t whylen)
{
	const char *path = "/proc/sys/kernel/random/boot_id";
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!fgets(out, (int)outlen, f)) {
		fclose(f);
		snprintf(why, whylen, "%s: empty", path);
		return -1;
	}
	fclose(f);
	out[strcspn(out, "\r\n")] = '\0';
	if (!*out) {
		snprintf(why, whylen, "%s: empty", path);
		return -1;
	}
	return 0;
}

static int cmd_agent_check(int argc, char **argv);
static int cmd_agent_epilog(int argc, char **argv);
static int cmd_agent_inspect(int argc, char **argv);
static int cmd_agent_deploy(int argc, char **argv);

int cmd_agent(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "check") == 0)
		return cmd_agent_check(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "epilog") == 0)
		return cmd_agent_epilog(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "inspect") == 0)
		return cmd_agent_inspect(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "deploy") == 0)
		return cmd_agent_deploy(argc - 1, argv + 1);

	static const struct option opts[] = {
		{"node", required_argument, NULL, 'n'},
		{"kernel-log", required_argument, NULL, 'k'},
		{"nvidia-smi", required_argument, NULL, 's'},
		{"nvlink-status", required_argument, NULL, 'L'},
		{"nvml", no_argument, NULL, 'N'},
		{"dcgmi", required_argument, NULL, 'd'},
		{"ibstat", required_argument, NULL, 'i'},
		{"ethernet-not-fabric", no_argument, NULL, 'E'},
		{"expected-gpus", required_argument, NULL, 'g'},
		{"gpu-idle-minutes", required_argument, NULL, 'G'},
		{"job", required_argument, NULL, 'j'},
		{"state-dir", required_argument, NULL, 'D'},
		{"interval", required_argument, NULL, 'I'},
		{"probe-timeout", required_argument, NULL, 'T'},
		{"max-buffer", required_argument, NULL, 'B'},
		{"boot-id", required_argument, NULL, 'b'},
		{"once", no_argument, NULL, 'o'},
		{"log-format", required_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "agent";
	struct agent_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.state_dir = "/var/lib/fleetplane-agent";
	cfg.interval_s = 30;
	cfg.probe_timeout_s = 10;
	cfg.max_buffer = 10000;
	cfg.gpu_idle_minutes = 30;
	const char *job = getenv("SLURM_JOB_ID");
	cfg.job = job && *job ? job : NULL;
	int job_flag = 0;
	long v;
	int ch;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'n': {
			char why[256];
			if (name_validate("node", optarg, why, sizeof(why)) < 0)
				return client_usage_error(cmd, "flag '--node': %s", why);
			cfg.node = optarg;
			break;
		}
		case 'k': cfg.kernel_log = optarg; break;
		case 's': cfg.nvidia_smi = optarg; break;
		case 'L':
			if (!*optarg)
				return client_usage_error(cmd,
							  "flag '--nvlink-status' needs a file");
			cfg.nvlink_status = optarg;
			break;
		case 'N': cfg.nvml = 1; break;
		case 'd': cfg.dcgmi = optarg; break;
		case 'i': cfg.ibstat = optarg; break;
		case 'E': cfg.ethernet_not_fabric = 1; break;
		case 'g':
			if (agent_parse_long(optarg, 1, 64, &v) < 0)
				return client_usage_error(cmd,
							  "flag '--expected-gpus' needs a count "
							  "from 1 to 64, got '%s'",
							  optarg);
			cfg.expected_gpus = (int)v;
			break;
		case 'G':
			if (agent_parse_long(optarg, 0, 1440, &v) < 0)
				return client_usage_error(cmd,
							  "flag '--gpu-idle-minutes' needs minutes "
							  "from 0 to 1440, got '%s'",
							  optarg);
			cfg.gpu_idle_minutes = v;
			break;
		case 'j': {
			char why[128];
			if (agent_job_validate(optarg, why, sizeof(why)) < 0)
				return client_usage_error(cmd,
							  "flag '--job' needs a job id of %s, got "
							  "'%.80s'",
							  why, optarg);
			cfg.job = optarg;
			job_flag = 1;
			break;
		}
		case 'D':
			if (!*optarg)
				return client_usage_error(cmd,
							  "flag '--state-dir' needs a directory");
			cfg.state_dir = optarg;
			break;
		case 'I':
			if (agent_parse_long(optarg, 1, 86400, &v) < 0)
				return client_usage_error(cmd,
							  "flag '--interval' needs seconds from 1 "
							  "to 86400, got '%s'",
							  optarg);
			cfg.interval_s = v;
			break;
		case 'T':
			if (agent_parse_long(optarg, 1, 3600, &v) < 0)
				return client_usage_error(cmd,
							  "flag '--probe-timeout' needs seconds "
							  "from 1 to 3600, got '%s'",
							  optarg);
			cfg.probe_timeout_s = v;
			break;
		case 'B':
			if (agent_parse_long(optarg, 1, 10000000, &v) < 0)
				return client_usage_error(cmd,
							  "flag '--max-buffer' needs a count of "
							  "events from 1 to 10000000, got '%s'",
							  optarg);
			cfg.max_buffer = (size_t)v;
			break;
		case 'b':
			if (!*optarg || strlen(optarg) > 128)
				return client_usage_error(cmd,
							  "flag '--boot-id' needs an id of 1 to "
							  "128 bytes");
			cfg.boot_id = optarg;
			break;
		case 'o': cfg.once = 1; break;
		case 'F':
			if (log_format_parse(optarg) < 0)
				return client_usage_error(cmd,
							  "flag '--log-format' needs logfmt or "
							  "json, got '%.40s'",
							  optarg);
			log_format_set((enum log_format)log_format_parse(optarg));
			break;
		case 'h': fputs(agent_usage, stdout); return 0;
		default: return client_getopt_error(cmd, ch, argv);
		}
	}
	if (optind < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!cfg.node || !*cfg.node)
		return client_usage_error(cmd, "flag '--node' is required");
	if (!job_flag && cfg.job) {
		char why[128];
		if (agent_job_validate(cfg.job, why, sizeof(why)) < 0)
			return client_usage_error(cmd,
						  "$SLURM_JOB_ID needs a job id of %s, got "
						  "'%.80s' (or give --job)",
						  why, cfg.job);
	}
	static const char *const tool_flags[] = {"nvidia-smi", "dcgmi", "ibstat"};
	const char *tools[] = {cfg.nvidia_smi, cfg.dcgmi, cfg.ibstat};
	for (int i = 0; i < 3; i++)
		if (tools[i] && !*tools[i])
			return client_usage_error(cmd, "flag '--%s' needs a file or 'auto'",
						  tool_flags[i]);
	if (cfg.nvlink_status && !cfg.nvidia_smi)
		return client_usage_error(cmd,
					  "flag '--nvlink-status' needs --nvidia-smi FILE|auto "
					  "(its findings are the nvidia-smi detector's)");
	if (cfg.kernel_log && !*cfg.kernel_log)
		return client_usage_error(cmd, "flag '--kernel-log' needs a file or /dev/kmsg");
	char boot[160];
	if (!cfg.boot_id) {
		char why[256];
		if (agent_read_boot_id(boot, sizeof(boot), why, sizeof(why)) < 0)
			return client_usage_error(cmd,
						  "cannot read the boot id (%s); give --boot-id",
						  why);
		cfg.boot_id = boot;
	}
	char why[512];
	if (agent_mkdirs(cfg.state_dir, why, sizeof(why)) < 0)
		return client_usage_error(cmd, "flag '--state-dir': cannot create %s (%s)",
					  cfg.state_dir, why);

	struct agent_http h;
	memset(&h, 0, sizeof(h));
	int rc = client_init(&h.c);
	if (rc != CLIENT_EXIT_OK) {
		client_release(&h.c);
		return rc;
	}
	char *esc = client_escape(cfg.node);
	h.report_path = xasprintf("/v1/nodes/%s:report", esc);
	h.node_path = xasprintf("/v1/nodes/%s", esc);
	h.remediated_path = xasprintf("/v1/nodes/%s:remediated", esc);
	free(esc);

	log_init(LOG_LVL_INFO, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = agent_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* The agent reads its settings once, at start: a SIGHUP (a reload, a closed terminal)
	 * has nothing to re-read and must not stop it (SIGHUP's default action would). */
	signal(SIGHUP, SIG_IGN);
	cfg.stop = &agent_stop;

	struct agent_transport tp = {
		.report = agent_http_report,
		.get_node = agent_http_get_node,
		.remediated = agent_http_remediated,
		.arg = &h,
	};
	struct agent *a = NULL;
	char err[512];
	int exit_code = 0;
	rc = agent_new(&cfg, &tp, &a, err, sizeof(err));
	if (rc == FP_EINVAL) {
		exit_code = client_usage_error(cmd, "%s", err);
	} else if (rc < 0) {
		fprintf(stderr, "error: the state dir %s is not usable: %s\n", cfg.state_dir, err);
		exit_code = AGENT_EXIT_LOCAL;
	} else {
		sdnotify_ready(
			"reporting"); /* systemd Type=notify (debian/fleetplane-agent.service) */
		rc = agent_run(a);
		sdnotify_stopping();
		const struct agent_stats *st = agent_stats(a);
		size_t unsent = 0;
		const char *local = agent_local_error(a, &unsent);
		if (cfg.once) {
			agent_warn_detectors(a, &cfg);
			fprintf(stderr,
				"agent: %zu reports sent, %zu rejected, %zu events, %zu "
				"accepted, %zu duplicates, %zu events still buffered\n",
				st->reports_sent, st->reports_rejected, st->events_put,
				st->accepted, st->duplicates, agent_outbox_events(a));
		}
		if (rc < 0 && local) {
			fprintf(stderr,
				"error: a local write under %s failed, not the API: %s; %zu "
				"events found are not in the outbox yet (read again next "
				"run, nothing is lost)\n",
				cfg.state_dir, local, unsent);
			exit_code = AGENT_EXIT_LOCAL;
		} else if (rc == FP_EIO) {
			exit_code = CLIENT_EXIT_CONNECT;
		} else if (rc < 0) {
			exit_code = CLIENT_EXIT_API;
		}
	}
	agent_free(a);
	free(h.report_path);
	free(h.node_path);
	free(h.remediated_path);
	client_release(&h.c);
	return exit_code;
}

/* ------------------------------------------------------------------ agent check / epilog */

static const char check_usage[] =
	"Usage: fleetplane agent check [--fast] [--node NAME] [--mode prolog|healthcheck|manual]\n"
	"                              [--config FILE] [--nvidia-smi FILE|auto] [--ibstat FILE|auto]\n"
	"                              [--ethernet-not-fabric] [--expected-gpus N]\n"
	"\n"
	"Checks the node once, as Slurm's Prolog or HealthCheckProgram (docs/slurm.md \"Checks\n"
	"Slurm calls\"): GPU count, uncorrectable ECC / pending remaps, InfiniBand ports, no open\n"
	"health hold, the agent alive with its detectors live. A local fault is reported to\n"
	"fleetplane, whose health policy decides the hold. One line per finding on stdout.\n"
	"\n"
	"      --fast                each probe and API call bounded so the check ends within 2 s\n"
	"      --node NAME           default: $SLURMD_NODENAME\n"
	"      --mode MODE           prolog, healthcheck or manual (default manual)\n"
	"      --config FILE         `key value` lines: url, token-file, node, nvidia-smi, ibstat,\n"
	"                            ethernet-not-fabric (yes|no), expected-gpus (flags win;\n"
	"                            default /etc/fleetplane/agent.conf when it exists)\n"
	"      --nvidia-smi FILE|auto  nvidia-smi -q / -q -x output, or run `nvidia-smi -q -x`\n"
	"      --ibstat FILE|auto    ibstat output, or run `ibstat`\n"
	"      --ethernet-not-fabric  ibstat's Ethernet ports carry no RDMA fabric: a RoCE port\n"
	"                            down is not a finding (as the agent's flag)\n"
	"      --expected-gpus N     default: the node's spec.gpus.count\n"
	"      --boot-id ID          default: /proc/sys/kernel/random/boot_id\n"
	"  -h, --help                this help\n"
	"\n"
	"Exit codes: 0 pass; 1 the node must not take jobs (fleetplane holds it, or a fault that\n"
	"fleetplane could not be told of); 2 usage; 3 (manual, healthcheck) nothing found locally\n"
	"but fleetplane could not be asked. A Prolog passes when fleetplane is unreachable and\n"
	"nothing is found locally: an API outage must not drain the cluster.\n";

#define CHECK_CONFIG_DEFAULT "/etc/fleetplane/agent.conf"
#define CHECK_CONFIG_MAX (64u << 10)
#define CHECK_CONFIG_LINE_MAX 4096u
#define CHECK_TOKEN_MAX 4096u

/* The keys of an agent config file; a value is borrowed from the file's buffer. */
struct check_file {
	struct buf text;
	const char *url, *token_file, *node, *nvidia_smi, *ibstat, *expected_gpus,
		*ethernet_not_fabric;
};

/* Reads `key value` lines (# comments, blank lines) of path. Returns 0, or -1 after a usage
 * error naming the file and line. */
static int check_read_config(const char *cmd, const char *path, struct check_file *cf)
{
	char err[512];
	buf_init(&cf->text, CHECK_CONFIG_MAX + 1);
	if (check_read_file(&cf->text, path, CHECK_CONFIG_MAX, err, sizeof(err)) < 0) {
		client_usage_error(cmd, "flag '--config': %s", err);
		return -1;
	}
	struct kvlines kv;
	kvlines_init(&kv, cf->text.data ? cf->text.data : (char *)"", cf->text.len, path,
		     CHECK_CONFIG_LINE_MAX, KVLINES_INLINE_COMMENTS);
	char *line, *val;
	int rc;
	while ((rc = kvlines_next(&kv, &line, &val, err, sizeof(err))) == 1) {
		unsigned lineno = kv.lineno;
		if (!*val) {
			client_usage_error(cmd, "%s:%u: key '%s' needs a value", path, lineno,
					   line);
			return -1;
		}
		static const char *const keys[] =
			{"url",           "token-file",         "node", "nvidia-smi", "ibstat",
			 "expected-gpus", "ethernet-not-fabric"};
		const char **slot[] = {&cf->url,
				       &cf->token_file,
				       &cf->node,
				       &cf->nvidia_smi,
				       &cf->ibstat,
				       &cf->expected_gpus,
				       &cf->ethernet_not_fabric};
		const size_t nkeys = sizeof(keys) / sizeof(keys[0]);
		size_t k = 0;
		while (k < nkeys && strcmp(line, keys[k]) != 0)
			k++;
		if (k == nkeys) {
			client_usage_error(
				cmd,
				"%s:%u: unknown key '%.40s' (url, token-file, node, "
				"nvidia-smi, ibstat, expected-gpus, ethernet-not-fabric)",
				path, lineno, line);
			return -1;
		}
		if (k == 6 && strcmp(val, "yes") != 0 && strcmp(val, "no") != 0) {
			client_usage_error(
				cmd, "%s:%u: ethernet-not-fabric needs yes or no, got '%.40s'",
				path, lineno, val);
			return -1;
		}
		*slot[k] = val;
	}
	if (rc < 0) {
		client_usage_error(cmd, "flag '--config': %s", err);
		return -1;
	}
	return 0;
}

/* The check's client: URL and token from the config file when given there, else
 * FLEETPLANE_URL / FLEETPLANE_TOKEN. Returns a client exit code. */
static int check_client(const char *cmd, const struct check_file *cf, int fast, struct client *c)
{
	char *tok = NULL;
	if (cf->token_file) {
		struct buf b;
		char err[512];
		buf_init(&b, CHECK_TOKEN_MAX + 1);
		if (check_read_file(&b, cf->token_file, CHECK_TOKEN_MAX, err, sizeof(err)) < 0) {
			buf_release(&b);
			return client_usage_error(cmd, "token-file: %s", err);
		}
		tok = xstrdup(b.data ? b.data : "");
		explicit_bzero(b.data, b.len);
		buf_release(&b);
	}
	/* client_init reads the environment; this process is single-threaded here and the
	 * variables are removed again before any probe runs (the token reaches no child). */
	if (cf->url)
		setenv("FLEETPLANE_URL", cf->url, 1);
	if (tok)
		setenv("FLEETPLANE_TOKEN", tok, 1);
	int rc = client_init(c);
	if (tok) {
		explicit_bzero(tok, strlen(tok));
		free(tok);
	}
	unsetenv("FLEETPLANE_TOKEN");
	if (rc != CLIENT_EXIT_OK)
		return rc;
	if (fast) {
		/* --fast: at most three calls (node, report, node again) within the 2 s. */
		c->connect_timeout_ms = 250;
		c->timeout_ms = 400;
	} else {
		c->timeout_ms = 5000;
	}
	return CLIENT_EXIT_OK;
}

struct check_http {
	struct agent_http h;
	struct slurm_cli *slurm;
};

static int check_err_rc(int rc, long status, const char *line, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", line);
	if (rc == CLIENT_EXIT_CONNECT || (rc != CLIENT_EXIT_OK && status == 0))
		return FP_EIO;
	return status == 404 ? FP_ENOTFOUND : FP_EINVAL;
}

static int check_get_node(void *arg, json_t **doc, char *err, size_t errlen)
{
	struct check_http *ch = arg;
	long status = 0;
	char *line = NULL;
	*doc = NULL;
	int rc = agent_request(&ch->h, "GET", ch->h.node_path, NULL, &status, doc, &line);
	if (rc == CLIENT_EXIT_OK && *doc) {
		free(line);
		return 0;
	}
	json_decref(*doc);
	*doc = NULL;
	rc = check_err_rc(rc, status, line, err, errlen);
	free(line);
	return rc;
}

static int check_report(void *arg, const json_t *body, json_t **answer, char *err, size_t errlen)
{
	struct check_http *ch = arg;
	long status = 0;
	char *line = NULL;
	*answer = NULL;
	int rc = agent_request(&ch->h, "POST", ch->h.report_path, body, &status, answer, &line);
	if (rc == CLIENT_EXIT_OK) {
		free(line);
		return 0;
	}
	json_decref(*answer);
	*answer = NULL;
	rc = check_err_rc(rc, status, line, err, errlen);
	free(line);
	return rc;
}

/* Prolog: `scontrol update NodeName=<node> State=DRAIN Reason=<the Slurm sync's reason>`. */
static int check_drain(void *arg, const json_t *doc, char *err, size_t errlen)
{
	struct check_http *ch = arg;
	struct node *n = NULL;
	char why[256];
	if (node_from_json(doc, 0, &n, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "the node document does not decode: %s", why);
		return FP_EINVAL;
	}
	/* Never over someone else's drain (its reason would become fleetplane's, and the sync
	 * would then resume it): not when fleetplane holds the node for Slurm already (a
	 * slurm:* hold), nor when Slurm shows it drained, DOWN or FAIL without fleetplane's
	 * reason right now. The Prolog's failure still keeps the job off the node. */
	for (size_t i = 0; i < n->nholds; i++)
		if (n->holds[i].owner && strncmp(n->holds[i].owner, "slurm:", 6) == 0) {
			node_free(n);
			return 0;
		}
	struct slurm_node *sl = NULL;
	size_t nsl = 0;
	char lerr[256];
	if (slurm_cli_nodes(ch->slurm, &sl, &nsl, lerr, sizeof(lerr)) == 0) {
		for (size_t i = 0; i < nsl; i++) {
			if (strcmp(sl[i].name, n->name) != 0)
				continue;
			struct slurm_decision d;
			slurm_project(n, &sl[i], 0, &d);
			if (d.action == SLURM_ACT_IMPORT_HOLD || d.action == SLURM_ACT_UNSURE) {
				free(sl);
				node_free(n);
				return 0; /* Slurm's state is someone else's (or not understood) */
			}
		}
	}
	free(sl);
	char reason[SLURM_CLI_REASON_MAX];
	slurm_project_reason(n, reason, sizeof(reason));
	const char *names[] = {n->name};
	int rc = slurm_cli_update(ch->slurm, names, 1, SLURM_UPDATE_DRAIN, reason, err, errlen);
	node_free(n);
	return rc;
}

static int cmd_agent_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{"fast", no_argument, NULL, 'f'},
		{"node", required_argument, NULL, 'n'},
		{"mode", required_argument, NULL, 'm'},
		{"config", required_argument, NULL, 'c'},
		{"nvidia-smi", required_argument, NULL, 's'},
		{"ibstat", required_argument, NULL, 'i'},
		{"expected-gpus", required_argument, NULL, 'g'},
		{"ethernet-not-fabric", no_argument, NULL, 'E'},
		{"boot-id", required_argument, NULL, 'b'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "agent check";
	struct check_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	const char *config = NULL, *node = NULL, *nvsmi = NULL, *ibstat = NULL, *gpus = NULL;
	int fast = 0, eth_flag = 0;
	int ch;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'f': fast = 1; break;
		case 'n': node = optarg; break;
		case 'm':
			if (check_mode_parse(optarg, &cfg.mode) < 0)
				return client_usage_error(cmd,
							  "flag '--mode' needs prolog, healthcheck "
							  "or manual, got '%.40s'",
							  optarg);
			break;
		case 'c': config = optarg; break;
		case 's': nvsmi = optarg; break;
		case 'i': ibstat = optarg; break;
		case 'g': gpus = optarg; break;
		case 'E': eth_flag = 1; break;
		case 'b':
			if (!*optarg || strlen(optarg) > 128)
				return client_usage_error(cmd,
							  "flag '--boot-id' needs an id of 1 to "
							  "128 bytes");
			cfg.boot_id = optarg;
			break;
		case 'h': fputs(check_usage, stdout); return 0;
		default: return client_getopt_error(cmd, ch, argv);
		}
	}
	if (optind < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	struct check_file cf;
	memset(&cf, 0, sizeof(cf));
	struct stat st;
	if (!config && stat(CHECK_CONFIG_DEFAULT, &st) == 0)
		config = CHECK_CONFIG_DEFAULT;
	int exit_code = CHECK_EXIT_USAGE;
	struct check_http h;
	memset(&h, 0, sizeof(h));
	if (config && check_read_config(cmd, config, &cf) < 0)
		goto out;
	const char *env_node = getenv("SLURMD_NODENAME");
	cfg.node = node ? node : cf.node ? cf.node : env_node && *env_node ? env_node : NULL;
	if (!cfg.node) {
		client_usage_error(cmd, "no node: give --node, node in the config file, or run "
					"under Slurm ($SLURMD_NODENAME)");
		goto out;
	}
	char why[256];
	if (name_validate("node", cfg.node, why, sizeof(why)) < 0) {
		client_usage_error(cmd, "node '%.80s': %s", cfg.node, why);
		goto out;
	}
	cfg.nvidia_smi = nvsmi ? nvsmi : cf.nvidia_smi;
	cfg.ibstat = ibstat ? ibstat : cf.ibstat;
	cfg.ethernet_not_fabric = eth_flag || (cf.ethernet_not_fabric &&
					       strcmp(cf.ethernet_not_fabric, "yes") == 0);
	if ((cfg.nvidia_smi && !*cfg.nvidia_smi) || (cfg.ibstat && !*cfg.ibstat)) {
		client_usage_error(cmd, "--nvidia-smi and --ibstat need a file or 'auto'");
		goto out;
	}
	if (!gpus)
		gpus = cf.expected_gpus;
	if (gpus) {
		long v;
		if (agent_parse_long(gpus, 1, 64, &v) < 0) {
			client_usage_error(cmd,
					   "expected GPUs needs a count from 1 to 64, got '%.40s'",
					   gpus);
			goto out;
		}
		cfg.expected_gpus = (int)v;
	}
	char boot[160];
	if (!cfg.boot_id) {
		if (agent_read_boot_id(boot, sizeof(boot), why, sizeof(why)) < 0) {
			client_usage_error(cmd, "cannot read the boot id (%s); give --boot-id",
					   why);
			goto out;
		}
		cfg.boot_id = boot;
	}
	cfg.probe_timeout_ms = fast ? CHECK_FAST_PROBE_MS : CHECK_PROBE_MS;
	cfg.hold_wait_ms = fast ? CHECK_FAST_HOLD_WAIT_MS : CHECK_HOLD_WAIT_MS;
	exit_code = check_client(cmd, &cf, fast, &h.h.c);
	if (exit_code != CLIENT_EXIT_OK)
		goto out;
	if (cfg.mode == CHECK_MODE_PROLOG) {
		/* The Prolog has SLURM_CONF (slurm.conf(5) "SLURM_CONF: Available in Prolog and
		 * Epilog"); scontrol comes from PATH. */
		struct slurm_cli_config sc = {.timeout_ms = fast ? 500 : 5000};
		char err[256];
		if (slurm_cli_new(&sc, &h.slurm, err, sizeof(err)) < 0) {
			exit_code = client_usage_error(cmd, "scontrol: %s", err);
			goto out;
		}
	}
	char *esc = client_escape(cfg.node);
	h.h.report_path = xasprintf("/v1/nodes/%s:report", esc);
	h.h.node_path = xasprintf("/v1/nodes/%s", esc);
	free(esc);
	signal(SIGPIPE, SIG_IGN);
	struct check_transport tp = {
		.get_node = check_get_node,
		.report = check_report,
		.drain = h.slurm ? check_drain : NULL,
		.arg = &h,
	};
	struct check_result *res = xcalloc(1, sizeof(*res));
	exit_code = check_run(&cfg, &tp, res);
	check_print(res, &cfg, stdout);
	fflush(stdout);
	free(res);
out:
	slurm_cli_free(h.slurm);
	free(h.h.report_path);
	free(h.h.node_path);
	client_release(&h.h.c);
	buf_release(&cf.text);
	return exit_code;
}

static const char epilog_usage[] =
	"Usage: fleetplane agent epilog [--node NAME] [--job ID] [--config FILE]\n"
	"\n"
	"Run as Slurm's Epilog: reports the end of the job to fleetplane (POST\n"
	"/v1/nodes/{name}:jobend: job, GPUs, exit code and signal), from SLURMD_NODENAME,\n"
	"SLURM_JOB_ID, SLURM_JOB_GPUS and SLURM_JOB_EXIT_CODE2 (\"<exit>:<signal>\").\n"
	"\n"
	"      --node NAME           default: $SLURMD_NODENAME\n"
	"      --job ID              default: $SLURM_JOB_ID\n"
	"      --config FILE         as `agent check` (url, token-file); default\n"
	"                            /etc/fleetplane/agent.conf when it exists\n"
	"  -h, --help                this help\n"
	"\n"
	"Exit codes: 0 reported, or not reported with a warning on stderr (a non-zero Epilog\n"
	"drains the node, slurm.conf(5): a job-end report never does); 2 usage (no node or job).\n";

/* SLURM_JOB_EXIT_CODE2 "<exit>:<sig>" (slurm.conf(5) "Prolog and Epilog Scripts"). Returns 0
 * or -1 for another shape. */
static int epilog_exit_parse(const char *s, long *code, long *sig)
{
	char a[8], b[8];
	size_t n = strcspn(s, ":");
	if (!n || n >= sizeof(a) || s[n] != ':' || strlen(s + n + 1) >= sizeof(b))
		return -1;
	memcpy(a, s, n);
	a[n] = '\0';
	snprintf(b, sizeof(b), "%s", s + n + 1);
	return agent_parse_long(a, 0, 255, code) < 0 || agent_parse_long(b, 0, 127, sig) < 0 ? -1
											     : 0;
}

static int cmd_agent_epilog(int argc, char **argv)
{
	static const struct option opts[] = {
		{"node", required_argument, NULL, 'n'},
		{"job", required_argument, NULL, 'j'},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = "agent epilog";
	const char *node = NULL, *job = NULL, *config = NULL;
	int ch;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'n': node = optarg; break;
		case 'j': job = optarg; break;
		case 'c': config = optarg; break;
		case 'h': fputs(epilog_usage, stdout); return 0;
		default: return client_getopt_error(cmd, ch, argv);
		}
	}
	if (optind < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	struct check_file cf;
	memset(&cf, 0, sizeof(cf));
	struct stat st;
	if (!config && stat(CHECK_CONFIG_DEFAULT, &st) == 0)
		config = CHECK_CONFIG_DEFAULT;
	int exit_code = CLIENT_EXIT_USAGE;
	struct agent_http h;
	memset(&h, 0, sizeof(h));
	json_t *body = NULL;
	char why[256];
	/* The report is bookkeeping: only a missing node or job id exits non-zero (Slurm drains
	 * a node whose Epilog fails, slurm.conf(5) "Epilog"); anything else warns and exits 0. */
	if (config && check_read_config(cmd, config, &cf) < 0) {
		fprintf(stderr, "warning: the job's end is not reported (configuration %s)\n",
			config);
		exit_code = 0;
		goto out;
	}
	const char *env = getenv("SLURMD_NODENAME");
	if (!node)
		node = cf.node ? cf.node : env && *env ? env : NULL;
	if (!node || name_validate("node", node, why, sizeof(why)) < 0) {
		client_usage_error(cmd, "node: %s",
				   node ? why : "give --node or set SLURMD_NODENAME");
		goto out;
	}
	env = getenv("SLURM_JOB_ID");
	if (!job)
		job = env && *env ? env : NULL;
	if (!job) {
		client_usage_error(cmd, "job: give --job or set SLURM_JOB_ID");
		goto out;
	}
	if (agent_job_validate(job, why, sizeof(why)) < 0) {
		fprintf(stderr, "warning: job: %s; the job's end is not reported\n", why);
		exit_code = 0;
		goto out;
	}
	body = json_pack("{s:s}", "job", job);
	/* Optional facts: a value of another shape is left out with a warning, not refused
	 * (the report is bookkeeping and must never drain the node). */
	const char *gpus = getenv("SLURM_JOB_GPUS");
	if (gpus && *gpus) {
		int ok = strlen(gpus) <= 256;
		for (const char *p = gpus; ok && *p; p++)
			ok = (*p >= '0' && *p <= '9') || *p == ',' || *p == '-';
		if (ok)
			json_object_set_new(body, "gpus", json_string(gpus));
		else
			fprintf(stderr,
				"warning: SLURM_JOB_GPUS '%.60s' is not a GPU list; left out\n",
				gpus);
	}
	const char *ec = getenv("SLURM_JOB_EXIT_CODE2");
	if (ec && *ec) {
		long code, sig;
		if (epilog_exit_parse(ec, &code, &sig) == 0) {
			json_object_set_new(body, "exitCode", json_integer(code));
			json_object_set_new(body, "signal", json_integer(sig));
		} else {
			fprintf(stderr,
				"warning: SLURM_JOB_EXIT_CODE2 '%.40s' is not <exit>:<signal>; left "
				"out\n",
				ec);
		}
	}
	exit_code = check_client(cmd, &cf, 1, &h.c);
	if (exit_code != CLIENT_EXIT_OK) {
		fprintf(stderr, "warning: the end of job %s on %s is not reported (no client)\n",
			job, node);
		exit_code = 0;
		goto out;
	}
	h.c.timeout_ms = 2000;
	char *esc = client_escape(node);
	char *path = xasprintf("/v1/nodes/%s:jobend", esc);
	free(esc);
	long status = 0;
	json_t *answer = NULL;
	char *line = NULL;
	int rc = agent_request(&h, "POST", path, body, &status, &answer, &line);
	if (rc == CLIENT_EXIT_OK)
		printf("epilog: job %s on %s reported\n", job, node);
	else
		fprintf(stderr, "warning: the end of job %s on %s was not reported: %s\n", job,
			node, line);
	json_decref(answer);
	free(line);
	free(path);
	exit_code = 0;
out:
	json_decref(body);
	client_release(&h.c);
	buf_release(&cf.text);
	return exit_code;
}

/* ------------------------------------------------------------------ agent inspect / deploy */

static const char inspect_usage[] =
	"Usage: fleetplane agent inspect --server URL --node NAME --token T [--sysfs-root DIR]\n"
	"                                [--dry-run]\n"
	"\n"
	"Run by the provisioning ramdisk (docs/boot-contract.md): collects the node's inventory\n"
	"(`lspci -D -nn`, `dmidecode -t system`, /proc/meminfo, /proc/cpuinfo, /sys/class/net,\n"
	"/sys/block; /sys/bus/pci and /sys/class/dmi/id when the tools are absent) and POSTs it to\n"
	"URL/boot/inspect with the per-attempt token.\n"
	"\n"
	"      --server URL          fleetplane's base URL (fleetplane.url=)\n"
	"      --node NAME           the node (fleetplane.node=)\n"
	"      --token T             the attempt's token (fleetplane.token=), [A-Za-z0-9_-]{1,128}\n"
	"      --sysfs-root DIR      read sys/ and proc/ under DIR instead of / (tests); lspci and\n"
	"                            dmidecode are not run then\n"
	"      --dry-run             print the inventory JSON on stdout, send nothing\n"
	"  -h, --help                this help\n"
	"\n"
	"Exit codes: 0 accepted (or printed); 1 refused (403, 400: the reason on stderr); 2 usage;\n"
	"3 fleetplane could not be reached.\n";

static const char deploy_usage[] =
	"Usage: fleetplane agent deploy --server URL --node NAME --token T [--root-device PATH]\n"
	"                               [--dry-run]\n"
	"\n"
	"Run by the provisioning ramdisk after inspect: GETs URL/boot/deploy, streams the image\n"
	"onto the disk (sha256 checked while streaming; on a mismatch the first MiB is zeroed),\n"
	"re-reads the partition table, writes meta-data and user-data into the image's CIDATA\n"
	"partition and POSTs the result to URL/boot/deployed.\n"
	"\n"
	"      --server URL          fleetplane's base URL (fleetplane.url=)\n"
	"      --node NAME           the node (fleetplane.node=)\n"
	"      --token T             the attempt's token (fleetplane.token=)\n"
	"      --root-device PATH    the disk to write (wins over the document's rootDevice;\n"
	"                            default: rootDevice, else the smallest non-removable disk\n"
	"                            that holds the image). An existing regular file works (its\n"
	"                            size is the disk's): the seed is then written with mtools'\n"
	"                            mcopy (needed in PATH)\n"
	"      --dry-run             fetch the document, choose the disk, print the plan; write\n"
	"                            nothing, report nothing\n"
	"  -h, --help                this help\n"
	"\n"
	"Exit codes: 0 written, verified, seeded and reported; 1 refused by fleetplane, or the\n"
	"deploy failed (reported with ok=false; the reason on stderr); 2 usage; 3 fleetplane\n"
	"could not be reached.\n";

struct boot_flags {
	const char *server, *node, *token, *sysfs_root, *root_device;
	int dry_run;
	char url[2100];
};

/* Parses the flags inspect and deploy share, plus the one of each (dev: 'r' --root-device for
 * deploy, 's' --sysfs-root for inspect). Returns -1 when parsing succeeded, else the exit code
 * (0 after --help). */
static int boot_parse_flags(const char *cmd, const char *usage, int deploy, int argc, char **argv,
			    struct boot_flags *f)
{
	static const struct option opts[] = {
		{"server", required_argument, NULL, 'u'},
		{"node", required_argument, NULL, 'n'},
		{"token", required_argument, NULL, 't'},
		{"sysfs-root", required_argument, NULL, 's'},
		{"root-device", required_argument, NULL, 'r'},
		{"dry-run", no_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char why[256];
	int ch;
	memset(f, 0, sizeof(*f));
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (ch) {
		case 'u': f->server = optarg; break;
		case 'n':
			if (name_validate("node", optarg, why, sizeof(why)) < 0)
				return client_usage_error(cmd, "flag '--node': %s", why);
			f->node = optarg;
			break;
		case 't':
			if (bootclient_token_check(optarg, why, sizeof(why)) < 0)
				return client_usage_error(cmd, "flag '--token' %s", why);
			f->token = optarg;
			break;
		case 's':
			if (deploy)
				return client_usage_error(cmd, "unknown flag '--sysfs-root'");
			if (!*optarg)
				return client_usage_error(cmd,
							  "flag '--sysfs-root' needs a directory");
			f->sysfs_root = optarg;
			break;
		case 'r':
			if (!deploy)
				return client_usage_error(cmd, "unknown flag '--root-device'");
			if (optarg[0] != '/')
				return client_usage_error(cmd,
							  "flag '--root-device' needs an absolute "
							  "path, got '%.80s'",
							  optarg);
			f->root_device = optarg;
			break;
		case 'd': f->dry_run = 1; break;
		case 'h': fputs(usage, stdout); return 0;
		default: return client_getopt_error(cmd, ch, argv);
		}
	}
	if (optind < argc)
		return client_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!f->server || !f->node || !f->token)
		return client_usage_error(cmd, "flags '--server', '--node' and '--token' are "
					       "required");
	if (bootclient_url_check(f->server, why, sizeof(why)) < 0)
		return client_usage_error(cmd, "flag '--server': %s", why);
	snprintf(f->url, sizeof(f->url), "%s", f->server);
	size_t n = strlen(f->url);
	while (n > 8 && f->url[n - 1] == '/')
		f->url[--n] = '\0';
	return -1;
}

static int boot_exit(int rc)
{
	return rc == 0 ? CLIENT_EXIT_OK : rc == FP_EIO ? CLIENT_EXIT_CONNECT : CLIENT_EXIT_API;
}

static int cmd_agent_inspect(int argc, char **argv)
{
	struct boot_flags f;
	int rc = boot_parse_flags("agent inspect", inspect_usage, 0, argc, argv, &f);
	if (rc >= 0)
		return rc;
	const char *root = f.sysfs_root ? f.sysfs_root : "/";
	struct inventory *inv = xcalloc(1, sizeof(*inv));
	char warn[1024];
	inventory_collect(root, strcmp(root, "/") == 0, inv, warn, sizeof(warn));
	if (warn[0])
		fprintf(stderr, "warning: inventory: %s\n", warn);
	json_t *doc = inventory_to_json(inv);
	size_t ngpus = json_array_size(json_object_get(doc, "gpus"));
	int exit_code = 0;
	if (f.dry_run) {
		client_print_json(doc);
	} else {
		signal(SIGPIPE, SIG_IGN);
		struct bootclient bc = {.server = f.url};
		char msg[512];
		rc = bootclient_inspect(&bc, f.node, f.token, doc, msg, sizeof(msg));
		if (rc == 0)
			printf("inspect: accepted: %zu GPUs, %zu PCI devices (%s), %zu NICs, %zu "
			       "disks, %llu MiB, system from %s\n",
			       ngpus, inv->npci, inv->pci_source, inv->nnics, inv->ndisks,
			       (unsigned long long)inv->memory_mib, inv->system_source);
		else
			fprintf(stderr, "error: %s\n", msg);
		exit_code = boot_exit(rc);
	}
	json_decref(doc);
	free(inv);
	return exit_code;
}

static int cmd_agent_deploy(int argc, char **argv)
{
	struct boot_flags f;
	int rc = boot_parse_flags("agent deploy", deploy_usage, 1, argc, argv, &f);
	if (rc >= 0)
		return rc;
	signal(SIGPIPE, SIG_IGN);
	struct deploy_opts o = {
		.client = {.server = f.url},
		.node = f.node,
		.token = f.token,
		.root_device = f.root_device,
		.sysfs_root = "/",
		.dry_run = f.dry_run,
	};
	struct deploy_result *res = xcalloc(1, sizeof(*res));
	rc = deploy_run(&o, res);
	if (rc == 0 && !f.dry_run)
		printf("deploy: reported to %s\n", f.url);
	else if (rc < 0 && res->disk[0] && !res->reported && res->report_status == 0 &&
		 rc == FP_EIO)
		fprintf(stderr, "error: the result was not reported: fleetplane unreachable\n");
	free(res);
	return boot_exit(rc);
}
