/* cmd_sim.c - `fleetplane sim` (docs/simulation.md, docs/cli.md): parses the options, hands the
 * simulation runner (sim/sim.h) the stepped fleet assembly (fleet/fleet.h) as its control plane
 * (sim/sim_plane.h), and prints the report. `fleetplane sim state` is demo.c's machine dump.
 *
 * Exit codes: 0 no invariant violation, 1 a violation (the seed and a trace are printed), 2 usage
 * error, 3 the world could not be built. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "cmd/run.h"
#include "fleet/fleet.h"
#include "sim/sim.h"
#include "sim/sim_plane.h"

/* ---------------------------------------------------------------- the plane: a stepped fleet */

static void *plane_up(const struct sim_plane_config *pc, char *err, size_t errlen)
{
	struct fleet_config fc = {.parts = FLEET_CACHE | FLEET_LIFECYCLE | FLEET_HEALTH,
				  .store = pc->store,
				  .clock = pc->clock,
				  .stepped = 1,
				  .rng_seed = pc->rng_seed,
				  .heartbeat_timeout_s = pc->heartbeat_timeout_s,
				  .bmc_timeout_s = 30,
				  .bmc_limits = pc->bmc_limits};
	fc.drivers[0] = pc->driver;
	fc.ndrivers = 1;
	struct fleet *f = fleet_new(&fc, err, errlen);
	if (!f)
		return NULL;
	if (fleet_start(f, err, errlen) < 0) {
		fleet_free(f);
		return NULL;
	}
	return f;
}

static void plane_down(void *p)
{
	fleet_free(p);
}

static int plane_step(void *p, void (*each)(void *arg), void *arg)
{
	return fleet_step(p, each, arg);
}

static int plane_advance(void *p, int64_t until_ms, void (*each)(void *arg), void *arg)
{
	return fleet_advance(p, until_ms, each, arg);
}

static struct health *plane_health(void *p)
{
	return fleet_health(p);
}

static void plane_booted(void *p, const char *node, const char *boot_id)
{
	fleet_agent_booted(p, node, boot_id);
}

static void plane_validated(void *p, const char *node, const char *boot_id, int passed)
{
	fleet_agent_validated(p, node, boot_id, passed);
}

static void plane_remediated(void *p, const char *node, int ok, const char *msg)
{
	fleet_agent_remediated(p, node, NULL, ok, msg);
}

static const struct sim_plane_ops FLEET_PLANE = {
	.up = plane_up,
	.down = plane_down,
	.step = plane_step,
	.advance = plane_advance,
	.health = plane_health,
	.booted = plane_booted,
	.validated = plane_validated,
	.remediated = plane_remediated,
};

const struct sim_plane_ops *cmd_sim_plane(void)
{
	return &FLEET_PLANE;
}

/* ---------------------------------------------------------------- options */

static const char USAGE[] =
	"usage: fleetplane sim [--nodes N] [--days D] [--seed S] [--faults PROFILE[,PROFILE]]\n"
	"                      [--policy fleetplane|naive|both] [-o json|text] [--csv DIR]\n"
	"                      [--plot FILE.png] [--spares K] [--store mem|sqlite]\n"
	"       fleetplane sim state --data-dir DIR [NODE...]\n"
	"  runs the real controllers in virtual time under seeded faults, checks invariants\n"
	"  after every step, and reports availability and ETTR for fleetplane's policy and\n"
	"  a naive baseline on the same seed (docs/simulation.md)\n"
	"  --nodes N          simulated nodes (default 256; 8..100000)\n"
	"  --days D           fault window after onboarding, days (default 7)\n"
	"  --seed S           seed, >= 1 (default 1); same seed, same output\n"
	"  --faults LIST      llama3, bmc, crash, correlated, all or none (default all)\n"
	"  --policy P         both (default), fleetplane (no baseline) or naive (the\n"
	"                     baseline's figures at the top level)\n"
	"  -o json|text       output format (default text)\n"
	"  --csv DIR          also write DIR/timeseries.csv and DIR/summary.csv\n"
	"  --plot FILE.png    also plot availability over time (gnuplot)\n"
	"  --spares K         spare nodes of the fleet-wide job for ETTR (default nodes/64)\n"
	"  --ckpt-interval S  job checkpoint interval, seconds (default 300)\n"
	"  --restart-cost S   job restart cost, seconds (default 180)\n"
	"  --ettr-target X    target of spares_needed (default 0.97)\n"
	"  --tech-hours H     technician turnaround for failed nodes (default 24)\n"
	"  --naive-repair-hours H  the baseline's manual repair delay (default 24)\n"
	"  --store mem|sqlite the store (default mem; sqlite in a temp dir)\n"
	"exit: 0 no invariant violation, 1 a violation (seed and trace printed), 2 usage\n";

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end = NULL;
	double v = strtod(s, &end);
	if (!s[0] || !end || *end || v < lo || v > hi) {
		fprintf(stderr, "error: sim: %s: \"%s\" is not a number in [%g, %g]\n", opt, s, lo,
			hi);
		return -1;
	}
	*out = v;
	return 0;
}

int cmd_sim(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "state") == 0)
		return cmd_sim_state(argc, argv);
	enum {
		O_NODES = 256,
		O_DAYS,
		O_SEED,
		O_FAULTS,
		O_POLICY,
		O_CSV,
		O_PLOT,
		O_SPARES,
		O_CKPT,
		O_RESTART,
		O_TARGET,
		O_TECH,
		O_NAIVE,
		O_STORE
	};
	static const struct option opts[] = {{"nodes", required_argument, NULL, O_NODES},
					     {"days", required_argument, NULL, O_DAYS},
					     {"seed", required_argument, NULL, O_SEED},
					     {"faults", required_argument, NULL, O_FAULTS},
					     {"policy", required_argument, NULL, O_POLICY},
					     {"output", required_argument, NULL, 'o'},
					     {"csv", required_argument, NULL, O_CSV},
					     {"plot", required_argument, NULL, O_PLOT},
					     {"spares", required_argument, NULL, O_SPARES},
					     {"ckpt-interval", required_argument, NULL, O_CKPT},
					     {"restart-cost", required_argument, NULL, O_RESTART},
					     {"ettr-target", required_argument, NULL, O_TARGET},
					     {"tech-hours", required_argument, NULL, O_TECH},
					     {"naive-repair-hours", required_argument, NULL,
					      O_NAIVE},
					     {"store", required_argument, NULL, O_STORE},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	struct sim_config cfg = {.nodes = 256, .days = 7, .seed = 1, .spares = -1};
	char err[512];
	sim_faults_parse("all", &cfg.faults, err, sizeof(err));
	const char *out = "text", *csv = NULL, *plot = NULL, *policy = "both";
	double v;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case O_NODES:
			if (parse_num("--nodes", optarg, 8, 100000, &v) < 0)
				return 2;
			cfg.nodes = (long)v;
			break;
		case O_DAYS:
			if (parse_num("--days", optarg, 0.001, 3650, &v) < 0)
				return 2;
			cfg.days = v;
			break;
		case O_SEED:
			if (parse_num("--seed", optarg, 1, 9007199254740992.0, &v) < 0)
				return 2;
			cfg.seed = (uint64_t)v;
			break;
		case O_FAULTS:
			if (sim_faults_parse(optarg, &cfg.faults, err, sizeof(err)) < 0) {
				fprintf(stderr, "error: sim: %s\n", err);
				return 2;
			}
			break;
		case O_POLICY:
			if (strcmp(optarg, "both") && strcmp(optarg, "fleetplane") &&
			    strcmp(optarg, "naive")) {
				fprintf(stderr,
					"error: sim: --policy: fleetplane, naive or both\n");
				return 2;
			}
			policy = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "json") && strcmp(optarg, "text")) {
				fprintf(stderr, "error: sim: -o: json or text\n");
				return 2;
			}
			out = optarg;
			break;
		case O_CSV: csv = optarg; break;
		case O_PLOT: plot = optarg; break;
		case O_SPARES:
			if (parse_num("--spares", optarg, 0, 99999, &v) < 0)
				return 2;
			cfg.spares = (long)v;
			break;
		case O_CKPT:
			if (parse_num("--ckpt-interval", optarg, 1, 86400, &cfg.ckpt_s) < 0)
				return 2;
			break;
		case O_RESTART:
			if (parse_num("--restart-cost", optarg, 0.001, 86400, &cfg.restart_s) < 0)
				return 2;
			break;
		case O_TARGET:
			if (parse_num("--ettr-target", optarg, 0.01, 1, &cfg.ettr_target) < 0)
				return 2;
			break;
		case O_TECH:
			if (parse_num("--tech-hours", optarg, 0.01, 720, &cfg.tech_hours) < 0)
				return 2;
			break;
		case O_NAIVE:
			if (parse_num("--naive-repair-hours", optarg, 0.01, 720,
				      &cfg.naive_repair_hours) < 0)
				return 2;
			break;
		case O_STORE:
			if (strcmp(optarg, "mem") && strcmp(optarg, "sqlite")) {
				fprintf(stderr, "error: sim: --store: mem or sqlite\n");
				return 2;
			}
			cfg.store_sqlite = strcmp(optarg, "sqlite") == 0;
			break;
		case 'h': fputs(USAGE, stdout); return 0;
		default: fputs(USAGE, stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "error: sim: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (cfg.spares < 0)
		cfg.spares = cfg.nodes / 64;
	if (cfg.spares >= cfg.nodes) {
		fprintf(stderr, "error: sim: --spares must be below --nodes\n");
		return 2;
	}
	/* the controllers' own lines would drown the report: warnings and up */
	if (log_level_get() < LOG_LVL_WARN)
		log_init(LOG_LVL_ERROR, NULL);
	struct sim_result res;
	if (sim_run(&cfg, &FLEET_PLANE, &res, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: sim: %s\n", err);
		return 3;
	}
	if (strcmp(policy, "fleetplane") == 0) {
		json_decref(res.baseline);
		res.baseline = json_object();
	} else if (strcmp(policy, "naive") == 0) {
		/* the baseline's figures at the top level */
		json_decref(res.fleetplane);
		res.fleetplane = res.baseline;
		res.baseline = json_object();
	}
	if (strcmp(out, "json") == 0) {
		json_t *o = sim_report_json(&res);
		char *txt = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		printf("%s\n", txt ? txt : "{}");
		free(txt);
		json_decref(o);
	} else {
		char *txt = sim_report_text(&res);
		fputs(txt, stdout);
		free(txt);
	}
	int rc = res.violations ? 1 : 0;
	if (res.violations)
		fprintf(stderr, "sim: invariant violated with seed %" PRIu64 ": %s\n", cfg.seed,
			res.violation);
	if (csv && sim_write_csv(&res, csv, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: sim: %s\n", err);
		rc = rc ? rc : 3;
	}
	if (plot && sim_plot(&res, plot, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: sim: %s\n", err);
		rc = rc ? rc : 3;
	}
	sim_result_release(&res);
	return rc;
}
