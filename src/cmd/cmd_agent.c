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
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "cmd/client.h"
#include "cmd/run.h"
#include "core/codec.h"

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

int cmd_agent(int argc, char **argv)
{
	static const struct option opts[] = {
		{"node", required_argument, NULL, 'n'},
		{"kernel-log", required_argument, NULL, 'k'},
		{"nvidia-smi", required_argument, NULL, 's'},
		{"nvlink-status", required_argument, NULL, 'L'},
		{"nvml", no_argument, NULL, 'N'},
		{"dcgmi", required_argument, NULL, 'd'},
		{"ibstat", required_argument, NULL, 'i'},
		{"expected-gpus", required_argument, NULL, 'g'},
		{"gpu-idle-minutes", required_argument, NULL, 'G'},
		{"job", required_argument, NULL, 'j'},
		{"state-dir", required_argument, NULL, 'D'},
		{"interval", required_argument, NULL, 'I'},
		{"probe-timeout", required_argument, NULL, 'T'},
		{"max-buffer", required_argument, NULL, 'B'},
		{"boot-id", required_argument, NULL, 'b'},
		{"once", no_argument, NULL, 'o'},
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
		rc = agent_run(a);
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
