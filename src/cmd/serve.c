/* serve.c - `fleetplane serve`: the control plane process. Parses the options into a
 * struct fleet_config and runs one fleet (fleet/fleet.h: store, cache, controllers, drivers,
 * API server) until SIGINT/SIGTERM, then stops and frees it in dependency order. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "cmd/run.h"
#include "fleet/fleet.h"

#define SIM_SITE FLEET_SIM_SITE
#define SIM_MAX_NODES 200000

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fleetplane serve --data-dir DIR [--listen ADDR] [--sim N] [--sim-speed X]\n"
		"                        [--sim-faults SEED] [--workers N] [--site-qps Q]\n"
		"                        [--bmc-credentials-dir DIR] [--bmc-concurrency N]\n"
		"                        [--bmc-min-interval MS] [--bmc-timeout SECONDS]\n"
		"                        [--bmc-breaker-failures N] [--new-secret-key]\n"
		"                        [--heartbeat-timeout SECONDS] [--report-rate R]\n"
		"                        [--report-burst N] [--report-events N]\n"
		"                        [--log-level debug|info|warn|error]\n"
		"\n"
		"  --data-dir DIR      store, admin.token, secret.key and state live here\n"
		"                      (created 0700)\n"
		"  --bmc-credentials-dir DIR  spec.bmc.password_file and spec.bmc.ca_file name\n"
		"                      files in DIR (default DATA_DIR/bmc-credentials, created 0700)\n"
		"  --new-secret-key    secret.key is missing and nodes have BMC passwords sealed with\n"
		"                      it: make a new key anyway (those passwords must be set again);\n"
		"                      refused when secret.key exists\n"
		"  --listen ADDR       host:port for the API (default 127.0.0.1:7070)\n"
		"  --sim N             create, if absent, site " SIM_SITE " with racks of 8 nodes and\n"
		"                      N enrolled simulated 8-GPU nodes (idempotent)\n"
		"  --sim-speed X       simulated hardware runs X times faster than real (default 10;\n"
		"                      0 = zero latency)\n"
		"  --sim-faults SEED   inject seeded BMC timeouts, wrong power reads, lost callbacks\n"
		"  --workers N         reconcile workers (default 4)\n"
		"  --executor-threads N  threads that run operation steps (BMC calls block on\n"
		"                      them; default 32, or 4 with --sim-speed 0)\n"
		"  --site-qps Q        BMC commands per second per site (default 100; scaled by\n"
		"                      --sim-speed for sim nodes; 0 = unlimited)\n"
		"  --bmc-concurrency N  commands in flight per BMC (default 1; 1..64)\n"
		"  --bmc-min-interval MS  least gap between two commands to one BMC (default 0)\n"
		"  --bmc-timeout SECONDS  deadline of one BMC call (default 30; 1..600)\n"
		"  --bmc-breaker-failures N  consecutive timeouts or connection failures after which\n"
		"                      a BMC is left alone until a probe answers (default 5)\n"
		"  --heartbeat-timeout SECONDS  a node agent silent this long gets AgentAlive False\n"
		"                      (default 0: 3 x the agent's reported interval, at least 90 s)\n"
		"  --report-rate R     agent reports (POST /v1/nodes/{name}:report) per second per\n"
		"                      node (default 5; 0 = no limit); over it: 429, Retry-After\n"
		"  --report-burst N    reports a node may send at once (default 20; 1..100000)\n"
		"  --report-events N   events in reports per minute per node (default 6000;\n"
		"                      0 = no limit; the bucket holds at least 256, one report)\n");
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || isnan(v) || v < lo || v > hi)
		return FP_EINVAL;
	*out = v;
	return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return FP_EINVAL;
	*out = v;
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	struct fleet_config sv = {.listen = "127.0.0.1:7070", .sim_speed = 10, .workers = 4,
			   .exec_threads = 32, .site_qps = 100, .bmc_concurrency = 1,
			   .bmc_timeout_s = 30, .bmc_breaker_failures = 5};
	static const struct option opts[] = {
		{"data-dir", required_argument, NULL, 'd'}, {"listen", required_argument, NULL, 'l'},
		{"sim", required_argument, NULL, 's'},      {"sim-speed", required_argument, NULL, 'x'},
		{"sim-faults", required_argument, NULL, 'f'}, {"workers", required_argument, NULL, 'w'},
		{"site-qps", required_argument, NULL, 'q'}, {"log-level", required_argument, NULL, 'L'},
		{"executor-threads", required_argument, NULL, 'e'},
		{"bmc-credentials-dir", required_argument, NULL, 'C'},
		{"bmc-concurrency", required_argument, NULL, 'B'},
		{"bmc-min-interval", required_argument, NULL, 'I'},
		{"bmc-timeout", required_argument, NULL, 'T'},
		{"bmc-breaker-failures", required_argument, NULL, 'F'},
		{"new-secret-key", no_argument, NULL, 'K'},
		{"heartbeat-timeout", required_argument, NULL, 'H'},
		{"report-rate", required_argument, NULL, 'R'},
		{"report-burst", required_argument, NULL, 'U'},
		{"report-events", required_argument, NULL, 'E'},
		{"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
	int c, exec_threads_set = 0;
	long v;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			sv.data_dir = optarg;
			break;
		case 'l':
			sv.listen = optarg;
			break;
		case 'C':
			if (!*optarg) {
				fprintf(stderr, "error: --bmc-credentials-dir: must not be empty\n");
				return 2;
			}
			sv.cred_dir = optarg;
			break;
		case 's':
			if (parse_long(optarg, 0, SIM_MAX_NODES, &sv.sim_nodes) < 0) {
				fprintf(stderr, "error: --sim: \"%s\" is not a node count 0..%d\n",
					optarg, SIM_MAX_NODES);
				return 2;
			}
			break;
		case 'x':
			if (parse_double(optarg, 0, 100000, &sv.sim_speed) < 0) {
				fprintf(stderr, "error: --sim-speed: \"%s\" is not a number 0..100000\n",
					optarg);
				return 2;
			}
			break;
		case 'f': {
			char *end;
			errno = 0;
			unsigned long long seed = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || seed == 0) {
				fprintf(stderr, "error: --sim-faults: \"%s\" is not a seed > 0\n", optarg);
				return 2;
			}
			sv.sim_faults = seed;
			break;
		}
		case 'w':
			if (parse_long(optarg, 1, 256, &v) < 0) {
				fprintf(stderr, "error: --workers: \"%s\" is not 1..256\n", optarg);
				return 2;
			}
			sv.workers = (int)v;
			break;
		case 'e':
			if (parse_long(optarg, 1, 256, &v) < 0) {
				fprintf(stderr, "error: --executor-threads: \"%s\" is not 1..256\n",
					optarg);
				return 2;
			}
			sv.exec_threads = (int)v;
			exec_threads_set = 1;
			break;
		case 'B':
			if (parse_long(optarg, 1, 64, &sv.bmc_concurrency) < 0) {
				fprintf(stderr, "error: --bmc-concurrency: \"%s\" is not 1..64\n",
					optarg);
				return 2;
			}
			break;
		case 'I':
			if (parse_long(optarg, 0, 600000, &sv.bmc_min_interval_ms) < 0) {
				fprintf(stderr, "error: --bmc-min-interval: \"%s\" is not 0..600000 "
						"milliseconds\n",
					optarg);
				return 2;
			}
			break;
		case 'T':
			if (parse_long(optarg, 1, 600, &sv.bmc_timeout_s) < 0) {
				fprintf(stderr, "error: --bmc-timeout: \"%s\" is not 1..600 seconds\n",
					optarg);
				return 2;
			}
			break;
		case 'F':
			if (parse_long(optarg, 1, 1000, &sv.bmc_breaker_failures) < 0) {
				fprintf(stderr, "error: --bmc-breaker-failures: \"%s\" is not 1..1000\n",
					optarg);
				return 2;
			}
			break;
		case 'q':
			if (parse_double(optarg, 0, 1e6, &sv.site_qps) < 0) {
				fprintf(stderr, "error: --site-qps: \"%s\" is not a number 0..1e6\n",
					optarg);
				return 2;
			}
			break;
		case 'L': {
			int lvl = log_level_parse(optarg);
			if (lvl < 0) {
				fprintf(stderr, "error: --log-level: \"%s\" is not one of debug, info, "
						"warn, error, off\n",
					optarg);
				return 2;
			}
			log_init((enum log_level)lvl, NULL);
			break;
		}
		case 'K':
			sv.new_secret_key = 1;
			break;
		case 'H':
			if (parse_long(optarg, 0, 86400, &sv.heartbeat_timeout_s) < 0) {
				fprintf(stderr, "error: --heartbeat-timeout: \"%s\" is not 0..86400 "
						"seconds\n",
					optarg);
				return 2;
			}
			break;
		case 'R': {
			double rate;
			if (parse_double(optarg, 0, 100000, &rate) < 0) {
				fprintf(stderr, "error: --report-rate: \"%s\" is not a number 0..100000 "
						"(reports per second per node; 0 = no limit)\n",
					optarg);
				return 2;
			}
			sv.report_limit.reports_per_s = rate == 0 ? -1 : rate;
			break;
		}
		case 'U':
			if (parse_long(optarg, 1, 100000, &sv.report_limit.burst) < 0) {
				fprintf(stderr, "error: --report-burst: \"%s\" is not 1..100000 "
						"reports\n",
					optarg);
				return 2;
			}
			break;
		case 'E':
			if (parse_long(optarg, 0, 100000000, &v) < 0) {
				fprintf(stderr, "error: --report-events: \"%s\" is not 0..100000000 "
						"(events per minute per node; 0 = no limit)\n",
					optarg);
				return 2;
			}
			sv.report_limit.events_per_min = v == 0 ? -1 : v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (sv.sim_speed == 0 && !exec_threads_set)
		sv.exec_threads = 4; /* zero-latency sim: steps never block, threads only switch */
	if (optind < argc) {
		fprintf(stderr, "error: serve: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (!sv.data_dir || !*sv.data_dir) {
		fprintf(stderr, "error: serve: --data-dir is required (and must not be empty)\n");
		usage(stderr);
		return 2;
	}
	/* Block the stop signals in every thread (before the fleet starts any); main waits for
	 * them with sigwait. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	char err[512];
	struct fleet *fl = fleet_new(&sv, err, sizeof(err));
	if (!fl) {
		if (*err)
			fprintf(stderr, "error: %s\n", err);
		return 1;
	}
	if (fleet_start(fl, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		fleet_free(fl);
		return 1;
	}
	int sig = 0;
	sigwait(&stop, &sig);
	log_info("serve: stopping signal=%d", sig);
	fleet_free(fl);
	log_info("serve: stopped");
	return 0;
}
