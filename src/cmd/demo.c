/* demo.c - `fleetplane demo`, the main job, and `fleetplane sim state`.
 *
 * demo runs the fleet serve runs (fleet/fleet.h, with serve's option defaults from serve_opts)
 * in its own process, on a SQLite data directory, listening on a free loopback port, its log
 * in <data-dir>/serve.log; then it drives that API over HTTP as any client would: enrolls N
 * simulated 8-GPU nodes, shows progress until every node is available, then runs the GPU
 * health scenario (issue 4): a rack disruption budget, real NVRM Xid lines fed to `fleetplane
 * agent --once` on three nodes of rack r01 at once (separate processes, as the agents of other
 * machines: this same binary, exec'd with an argv, never a shell), and the holds, budget
 * waits, remediation rungs and validations until the three are back. Then it drains one node
 * and resumes it, and prints a summary with the API address and CLI examples. It exits 0 only
 * when every node is available with no holds. SIGINT/SIGTERM (waited for with sigtimedwait,
 * blocked in every thread as serve does) stop it at the next poll: the agents are killed, the
 * fleet stopped and freed, and the demo then dies of the signal as it did before. --keep goes
 * on serving in the foreground after the summary until SIGINT/SIGTERM, then exits 0.
 *
 * --slurm (demo_slurm.c) starts a Slurm of the demo's own before the fleet, puts the Slurm
 * backend in the fleet's scheduler slot, enrolls its two nodes, and at the end runs the job
 * scenario; stop_fleet stops its daemons on every exit path. demo_int.h is what the two files
 * share.
 *
 * sim state reads the simulated machines' saved state (power, boot device, side-effect
 * counters) from a stopped serve's data directory. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "cmd/client.h"
#include "cmd/demo_int.h"
#include "cmd/demo_slurm.h"
#include "cmd/run.h"
#include "cmd/serve_opts.h"
#include "core/model.h"
#include "fleet/fleet.h"
#include "store/store.h"

#define DEMO_MAX_NODES 100000

int64_t demo_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps up to ms, or less when a stop signal (SIGINT, SIGTERM) arrives; ms 0 only polls.
 * Returns 1 once a stop signal was received (d->sig), 0 otherwise. */
int demo_nap(struct demo *d, long ms)
{
	if (d->sig)
		return 1;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	int sig = sigtimedwait(&d->stop, NULL, &ts);
	if (sig > 0)
		d->sig = sig;
	return d->sig != 0;
}

static void demo_usage(FILE *f)
{
	fprintf(f,
		"usage: fleetplane demo [--nodes N] [--data-dir DIR] [--keep] [--sim-speed X]\n"
		"                       [--timeout SECONDS] [--slurm] [--log-format logfmt|json]\n\n"
		"Runs serve's fleet (serve's defaults) in this process on a SQLite data dir and\n"
		"a free loopback port, its log in DIR/serve.log; enrolls simulated nodes through\n"
		"the API and waits until all are available; then the GPU health scenario: a rack\n"
		"disruption budget (max 1 unavailable), real NVRM Xid lines (79, 48, 119) in the\n"
		"kernel logs of three nodes of rack r01 read by `fleetplane agent --once`\n"
		"(separate processes), and their holds, budget waits, remediation and validation\n"
		"until all three are back; then drains and resumes r01n01. Exits 0 only when\n"
		"every node is available with no holds. Ctrl-C stops the agents and the fleet.\n\n"
		"  --nodes N          simulated 8-GPU nodes to enroll (default 64)\n"
		"  --data-dir DIR     where serve keeps its store (default: a new temp dir)\n"
		"  --keep             go on serving in the foreground after the summary, until\n"
		"                     Ctrl-C (SIGINT) or SIGTERM\n"
		"  --sim-speed X      simulated hardware speed-up (default 20)\n"
		"  --timeout SECONDS  give up after this long (default 600)\n"
		"  --log-format F     serve.log lines as logfmt (default) or json\n"
		"  --slurm            also run a real Slurm of the demo's own (munged, slurmctld,\n"
		"                     slurmd for two more nodes s01n01, s01n02; under DIR/slurm,\n"
		"                     loopback only) with serve's Slurm backend, and a job on\n"
		"                     s01n01 (s01n02 on a re-run) when it gets a real XID 79\n"
		"                     line: held, drained in Slurm, waits for the job, heals\n"
		"                     and returns. Needs munged, munge, slurmctld, slurmd,\n"
		"                     scontrol, sbatch, scancel and squeue in PATH (exit 2 if not)\n");
}

/* Builds and starts the fleet in this process, as `fleetplane serve --data-dir DIR --listen
 * 127.0.0.1:0 --sim-speed X` would with every other option at its default; its log lines go to
 * <data-dir>/serve.log (0600, appended), not to the demo's terminal. 0, or <0 with the reason
 * in err ("" when it is in serve.log). */
static int start_fleet(struct demo *d, char *err, size_t errlen)
{
	char logpath[4300];
	*err = 0;
	snprintf(logpath, sizeof(logpath), "%s/serve.log", d->data_dir);
	int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || !(d->log = fdopen(fd, "a"))) {
		snprintf(err, errlen, "cannot open serve.log in the data dir: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return FP_EIO;
	}
	log_init(log_level_get(), d->log);
	d->so = xcalloc(1, sizeof(*d->so));
	serve_opts_defaults(d->so);
	d->so->data_dir = d->data_dir;
	d->so->listen = "127.0.0.1:0";
	d->so->sim_speed = d->speed;
	d->so->plain_http = 1; /* kube: the demo drives its own API on loopback over http */
	serve_opts_derive(d->so);
	struct fleet_config cfg;
	serve_opts_fleet_config(d->so, &cfg);
	if (d->ds && demo_slurm_scheduler(d, &cfg, err, errlen) < 0)
		return FP_EINVAL;
	d->fl = fleet_new(&cfg, err, errlen);
	if (!d->fl)
		return FP_EIO;
	if (fleet_start(d->fl, err, errlen) < 0)
		return FP_EIO;
	snprintf(d->url, sizeof(d->url), "http://127.0.0.1:%u", fleet_port(d->fl));
	return 0;
}

/* Stops and frees the fleet (removes serve.url), then the demo's Slurm (--slurm: every daemon
 * stopped and reaped), then points the log back at stderr. Every exit path of the demo comes
 * here. */
static void stop_fleet(struct demo *d)
{
	if (d->fl) {
		log_info("demo: stopping the fleet signal=%d", d->sig);
		fleet_free(d->fl);
		d->fl = NULL;
		log_info("demo: fleet stopped");
	}
	demo_slurm_stop(d);
	if (d->log) {
		log_init(log_level_get(), NULL);
		fclose(d->log);
		d->log = NULL;
	}
	free(d->so);
	d->so = NULL;
}

/* Reads the first line of <data-dir>/<file> into out. */
static int read_line(struct demo *d, const char *file, char *out, size_t outlen)
{
	char path[4300];
	snprintf(path, sizeof(path), "%s/%s", d->data_dir, file);
	FILE *f = fopen(path, "r");
	if (!f)
		return FP_ENOTFOUND;
	int ok = fgets(out, (int)outlen, f) != NULL;
	fclose(f);
	if (!ok)
		return FP_EIO;
	out[strcspn(out, "\r\n")] = 0;
	return *out ? 0 : FP_EIO;
}

/* Points the client at the fleet's API with the admin token serve wrote, and waits for
 * /readyz (at once: fleet_start returned with the cache synced). */
static int connect_api(struct demo *d)
{
	char token[256];
	int rc = read_line(d, "admin.token", token, sizeof(token));
	if (rc < 0)
		return rc;
	setenv("FLEETPLANE_URL", d->url, 1);
	setenv("FLEETPLANE_TOKEN", token, 1);
	explicit_bzero(token, sizeof(token));
	if (client_init(&d->cl) != 0)
		return FP_EINVAL;
	d->cl.err = fopen("/dev/null", "w");
	int64_t until = demo_mono_ms() + 30000;
	long status = 0;
	json_t *out = NULL;
	while (demo_mono_ms() < until) {
		rc = client_request(&d->cl, "GET", "/readyz", NULL, &status, &out);
		json_decref(out);
		out = NULL;
		if (rc == 0 && status == 200) {
			if (d->cl.err)
				fclose(d->cl.err);
			d->cl.err = stderr;
			return 0;
		}
		if (demo_nap(d, 100))
			return FP_ECLOSED;
	}
	return FP_ETIMEDOUT;
}

/* One simulated 8-GPU node of the demo's site for POST /v1/nodes. */
static json_t *node_item(const char *name, const char *rack)
{
	return json_pack("{s:s,s:{s:s,s:{s:s,s:s}},s:{s:s,s:s,s:s,s:{s:s},s:{s:i,s:s}}}", "kind",
			 "Node", "metadata", "name", name, "labels", "rack", rack, "site",
			 DEMO_SITE, "spec", "site", DEMO_SITE, "rack", rack, "provider", "sim",
			 "bmc", "driver", "sim", "gpus", "count", 8, "model",
			 "NVIDIA H100 80GB HBM3");
}

/* POSTs items (stolen) in one batch: 1 when created, 0 when they were already there (409, a
 * re-run on the same data dir), <0 after printing the error. */
static int post_nodes(struct demo *d, json_t *items, const char *what)
{
	json_t *body = json_pack("{s:o}", "items", items);
	long status = 0;
	json_t *out = NULL;
	FILE *saved = d->cl.err, *devnull = fopen("/dev/null", "w");
	if (devnull)
		d->cl.err =
			devnull; /* a 409 on a re-run is expected; other errors are shown below */
	int rc = client_request(&d->cl, "POST", "/v1/nodes", body, &status, &out);
	d->cl.err = saved;
	if (devnull)
		fclose(devnull);
	json_decref(body);
	if (status == 409) {
		json_decref(out);
		return 0;
	}
	if (rc != 0 || status != 201) {
		fprintf(stderr, "error: enrolling %s failed (HTTP %ld): %s\n", what, status,
			jsonx_str(out, "detail") ? jsonx_str(out, "detail") : "no detail");
		json_decref(out);
		return FP_EIO;
	}
	json_decref(out);
	return 1;
}

static int enroll(struct demo *d)
{
	json_t *items = json_array();
	for (long i = 0; i < d->nodes; i++) {
		char name[48], rack[24];
		snprintf(rack, sizeof(rack), "r%02ld", i / 8 + 1);
		snprintf(name, sizeof(name), "%sn%02ld", rack, i % 8 + 1);
		json_array_append_new(items, node_item(name, rack));
	}
	char what[64];
	snprintf(what, sizeof(what), "%ld nodes", d->nodes);
	int rc = post_nodes(d, items, what);
	if (rc < 0)
		return rc;
	if (rc == 0)
		printf("nodes already enrolled in %s; continuing with them\n", d->data_dir);
	else
		printf("enrolled %ld simulated nodes (8 GPUs each) in site %s\n", d->nodes,
		       DEMO_SITE);
	if (!d->slurm)
		return 0;
	/* --slurm: its two nodes, a batch of their own (they may be missing from a data dir
	 * an earlier demo without --slurm enrolled) */
	items = json_array();
	for (int i = 0; i < DEMO_SLURM_NODES; i++)
		json_array_append_new(items, node_item(demo_slurm_node(i), DEMO_SLURM_RACK));
	snprintf(what, sizeof(what), "%s, %s", demo_slurm_node(0), demo_slurm_node(1));
	if ((rc = post_nodes(d, items, what)) < 0)
		return rc;
	printf("%s %s (rack %s), the Slurm nodes\n", rc ? "enrolled" : "already enrolled:", what,
	       DEMO_SLURM_RACK);
	return 0;
}

struct counts {
	size_t phase[PHASE__COUNT];
	size_t held;
	size_t total;
};

static int count_nodes(struct demo *d, struct counts *c)
{
	json_t *items = NULL;
	char *rv = NULL;
	memset(c, 0, sizeof(*c));
	int rc = client_list(&d->cl, "/v1/nodes", 0, &items, &rv);
	free(rv);
	if (rc != 0)
		return FP_EIO;
	size_t i;
	json_t *n;
	json_array_foreach(items, i, n) {
		enum node_phase p;
		if (node_phase_parse(jsonx_str(n, "status.phase"), &p) == 0)
			c->phase[p]++;
		if (json_array_size(jsonx_path(n, "status.holds")) > 0)
			c->held++;
		c->total++;
	}
	json_decref(items);
	return 0;
}

static void show_progress(struct demo *d, const struct counts *c, int final)
{
	size_t avail = c->phase[PHASE_AVAILABLE];
	int width = 30, fill = c->total ? (int)(width * avail / c->total) : 0;
	char bar[64];
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[width] = 0;
	char line[512];
	int w = snprintf(line, sizeof(line), "[%s] available %zu/%zu", bar, avail, c->total);
	for (int p = 0; p < PHASE__COUNT && w < (int)sizeof(line) - 40; p++)
		if (p != PHASE_AVAILABLE && c->phase[p])
			w += snprintf(line + w, sizeof(line) - (size_t)w, "  %s %zu",
				      node_phase_name((enum node_phase)p), c->phase[p]);
	snprintf(line + w, sizeof(line) - (size_t)w, "  (%.0fs)",
		 (double)(demo_mono_ms() - d->t0) / 1000.0);
	if (d->tty)
		printf("\r\033[K%s%s", line, final ? "\n" : "");
	else
		printf("%s\n", line);
	fflush(stdout);
}

/* Waits until pred holds; returns 0, FP_ETIMEDOUT or FP_ECLOSED (a stop signal). */
static int wait_until(struct demo *d, int (*pred)(struct demo *, const struct counts *, void *),
		      void *arg, int show)
{
	int64_t until = d->t0 + d->timeout_s * 1000, last = 0;
	struct counts c;
	for (;;) {
		if (demo_nap(d, 0))
			return FP_ECLOSED;
		if (count_nodes(d, &c) == 0) {
			int done = pred(d, &c, arg);
			if (show && (done || d->tty || demo_mono_ms() - last >= 5000)) {
				show_progress(d, &c, done);
				last = demo_mono_ms();
			}
			if (done)
				return 0;
		}
		if (demo_mono_ms() > until)
			return FP_ETIMEDOUT;
		if (demo_nap(d, d->tty ? 250 : 500))
			return FP_ECLOSED;
	}
}

static int all_available(struct demo *d, const struct counts *c, void *arg)
{
	return c->total >= (size_t)d->nodes && c->phase[PHASE_AVAILABLE] == c->total &&
	       c->held == 0;
}

static int node_phase_is(struct demo *d, const struct counts *unused, void *arg)
{
	const char **want = arg; /* {name, phase, "holds"|"noholds"} */
	char path[128];
	snprintf(path, sizeof(path), "/v1/nodes/%s", want[0]);
	long status = 0;
	json_t *n = NULL;
	int ok = client_request(&d->cl, "GET", path, NULL, &status, &n) == 0 && status == 200 &&
		 jsonx_str(n, "status.phase") && strcmp(jsonx_str(n, "status.phase"), want[1]) == 0;
	if (ok && strcmp(want[2], "noholds") == 0)
		ok = json_array_size(jsonx_path(n, "status.holds")) == 0;
	json_decref(n);
	return ok;
}

static int action(struct demo *d, const char *node, const char *verb, const char *reason)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/nodes/%s:%s", node, verb);
	json_t *body = json_pack("{s:s}", "reason", reason);
	long status = 0;
	json_t *out = NULL;
	int rc = client_request(&d->cl, "POST", path, body, &status, &out);
	json_decref(body);
	json_decref(out);
	return rc == 0 && status >= 200 && status < 300 ? 0 : FP_EIO;
}

static int fail(struct demo *d, const char *what, int rc)
{
	if (d->tty)
		printf("\n");
	fprintf(stderr, "error: demo: %s: %s\n", what,
		rc == FP_ECLOSED
			? (d->sig == SIGTERM ? "interrupted by SIGTERM" : "interrupted by SIGINT")
		: rc == FP_ETIMEDOUT ? "timed out"
				     : fp_err_msg(rc));
	fprintf(stderr, "data dir: %s (serve log: %s/serve.log)\n", d->data_dir, d->data_dir);
	return 1;
}

int demo_fail(struct demo *d, const char *what, int rc)
{
	fail(d, what, rc);
	return rc < 0 ? rc : FP_EIO;
}

int demo_get_node(struct demo *d, const char *name, json_t **out)
{
	char path[640];
	snprintf(path, sizeof(path), "/v1/nodes/%s", name);
	long status = 0;
	*out = NULL;
	if (client_request(&d->cl, "GET", path, NULL, &status, out) == 0 && status == 200 && *out)
		return 0;
	json_decref(*out);
	*out = NULL;
	return FP_EIO;
}

/* ---- the GPU health scenario (issue 4) ----
 *
 * After onboarding: a disruption budget "demo-rack" (domain rack, maxUnavailable 1), an agent
 * token for each of three nodes of rack r01, one real NVRM Xid line appended to each node's
 * kernel log file under <data-dir>/agents/<node>/, and `fleetplane agent --once` (this binary,
 * exec'd with an argv and an environment naming the agent token; never a shell) for the three
 * at once: a burst. The health controller holds all three at once; the budget lets one out at a
 * time; each runs its ladder's first rung, is validated and comes back. The lines are real,
 * copied byte for byte from public sources (each named below); the binary never reads tests/ or
 * ../shared at run time. */

#define DEMO_BUDGET "demo-rack"
#define DEMO_HEALTH_NODES 3

/* How a demo line is stamped when it is written: the published lines carry their own dates
 * (2025), which would make "today's" demo incident a year old in `fleetplane health events`
 * (event time = the line's own absolute time) and stale for the health policy. So each is
 * written with the current time in the same prefix format it was published with. */
enum demo_stamp {
	DEMO_STAMP_NONE,   /* the line has no timestamp: the agent uses when it read it */
	DEMO_STAMP_SYSLOG, /* syslog "Dec  2 11:38:47 " (strftime "%b %e %H:%M:%S ", no year) */
	DEMO_STAMP_CTIME,  /* dmesg --ctime/-T "[Sun Feb 23 16:24:18 2025] " (util-linux
			    * dmesg: strftime "%a %b %e %H:%M:%S %Y") */
};

struct demo_xid {
	const char *code; /* the event code the agent's kernel parser derives */
	enum demo_stamp stamp;
	const char *published; /* the published timestamp prefix replaced by the current time
				* ("" for DEMO_STAMP_NONE), for the comment in the demo's output */
	const char *line;      /* the rest of the kernel log line, as published (byte for byte after
			   * the timestamp prefix) */
};

static const struct demo_xid demo_xids[DEMO_HEALTH_NODES] = {
	/* tests/data/kernel/xid-and-gpu-kernel-lines-from-issues.log: the single-line form quoted
	 * in https://github.com/NVIDIA/NVSentinel/issues/155 (maintainer comment). XID 79 "GPU
	 * has fallen off the bus": a GPU reset is impossible, the ladder starts at reboot. No
	 * timestamp in the source: written as it is. */
	{"xid:79", DEMO_STAMP_NONE, "",
	 "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"},
	/* https://github.com/NVIDIA/gpu-operator/issues/1146 (issue description, `grep -i nvrm
	 * /var/log/syslog`; GitHub ToS): syslog form with host and uptime; the host "worker4"
	 * replaced with "node001" as tests/data/kernel does, and the syslog stamp
	 * "Dec  2 11:38:47 " replaced by the current time (UTC, the same format); nothing else
	 * changed. Not in tests/data/kernel (it has no XID 48 line). XID 48 double-bit ECC
	 * error: ladder gpu_reset > reboot > reimage > rma. */
	{"xid:48", DEMO_STAMP_SYSLOG, "Dec  2 11:38:47 ",
	 "node001 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, "
	 "pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been "
	 "detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1."},
	/* tests/data/kernel/dmesg-xid119-gsp-timeout.log line 3, from
	 * https://github.com/leptonai/gpud/blob/main/components/accelerator/nvidia/xid/testdata/dmesg-with-xid-119.log
	 * (Apache-2.0), dmesg --ctime form; the stamp "[Sun Feb 23 16:24:18 2025] " replaced by
	 * the current time (UTC, the same format), the message unchanged. XID 119 GSP RPC
	 * timeout: gpu_reset first. */
	{"xid:119", DEMO_STAMP_CTIME, "[Sun Feb 23 16:24:18 2025] ",
	 "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, "
	 "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 "
	 "(GSP_RM_ALLOC) (0x2081 0x4)."},
};

/* Writes x's line into out (len bytes) with the timestamp prefix of its format for the Unix
 * time now (seconds), in UTC: the agent's kernel parser reads syslog and ctime stamps as UTC
 * (agent/kernlog.h). Returns the length, or -1 when it does not fit. */
static int demo_line(const struct demo_xid *x, time_t now, char *out, size_t len)
{
	char stamp[64] = "";
	struct tm tm;
	if (x->stamp != DEMO_STAMP_NONE) {
		if (!gmtime_r(&now, &tm))
			return -1;
		size_t sn = x->stamp == DEMO_STAMP_SYSLOG
				    ? strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S ", &tm)
				    : strftime(stamp, sizeof(stamp), "[%a %b %e %H:%M:%S %Y] ",
					       &tm);
		if (sn == 0)
			return -1;
	}
	int n = snprintf(out, len, "%s%s", stamp, x->line);
	return n > 0 && (size_t)n < len ? n : -1;
}

/* One node of the scenario and what the demo last printed about it. */
struct hnode {
	char name[64];
	const struct demo_xid *x;
	const char *line; /* the line written to its kernel log (x's line with a current stamp;
			   * points into demo_health's lines[]) */
	pid_t agent;
	size_t hist0;   /* status.remediationHistory entries before the scenario */
	char phase[24]; /* last printed phase */
	char rung[16];  /* last printed rung */
	int held;       /* a `health` hold was printed */
	int waiting;    /* DisruptionAllowed False was printed */
	int done;
};

struct health_result {
	int ran; /* 0: skipped (reason printed) */
	size_t nodes;
	size_t remediated;
	size_t peak_waiting; /* most nodes waiting on the budget at one time */
	long max_out;        /* most nodes of rack r01 the budget counted out at one time */
	size_t events;       /* health events stored */
	char rungs[128];     /* "r01n01 reboot, r01n02 gpu_reset, ..." */
};

/* fail() for the health scenario: prints, then returns a negative code. */
static int hfail(struct demo *d, const char *what, int rc)
{
	fail(d, what, rc);
	return rc < 0 ? rc : FP_EIO;
}

/* Seconds since the GPU health scenario started, for its progress lines. */
static double demo_secs(const struct demo *d)
{
	return (double)(demo_mono_ms() - d->h0) / 1000.0;
}

/* The `health` hold of node document n, or NULL. Borrowed. */
static const json_t *health_hold(const json_t *n)
{
	size_t i;
	json_t *h;
	json_array_foreach(jsonx_path(n, "status.holds"), i, h) {
		const char *o = jsonx_str(h, "owner");
		if (o && strcmp(o, "health") == 0)
			return h;
	}
	return NULL;
}

/* The condition `type` of node document n, or NULL. Borrowed. */
static const json_t *node_cond(const json_t *n, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach(jsonx_path(n, "status.conditions"), i, c) {
		const char *t = jsonx_str(c, "type");
		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

/* Picks up to DEMO_HEALTH_NODES nodes of rack r01 that are available, hold nothing and were
 * never remediated (a repeat on the same GPU would start higher on the ladder: docs/health.md,
 * lemon.recurrenceSeconds). Returns how many were picked. */
static size_t pick_health_nodes(struct demo *d, struct hnode *hn)
{
	json_t *items = NULL;
	char *rv = NULL;
	size_t k = 0;
	if (client_list(&d->cl, "/v1/nodes?labelSelector=rack%3Dr01", 0, &items, &rv) != 0)
		return 0;
	free(rv);
	size_t i;
	json_t *n;
	json_array_foreach(items, i, n) {
		const char *name = jsonx_str(n, "metadata.name"),
			   *ph = jsonx_str(n, "status.phase");
		if (k >= DEMO_HEALTH_NODES || !name || strlen(name) >= sizeof(hn[k].name) || !ph ||
		    strcmp(ph, "available") != 0 ||
		    json_array_size(jsonx_path(n, "status.holds")) ||
		    json_array_size(jsonx_path(n, "status.remediationHistory")))
			continue;
		memset(&hn[k], 0, sizeof(hn[k]));
		snprintf(hn[k].name, sizeof(hn[k].name), "%s", name);
		hn[k].x = &demo_xids[k];
		snprintf(hn[k].phase, sizeof(hn[k].phase), "available");
		k++;
	}
	json_decref(items);
	return k;
}

/* PUTs the demo budget: at most one node of each rack out at a time. */
static int put_budget(struct demo *d)
{
	json_t *body = json_pack("{s:s,s:{s:s},s:{s:s,s:i}}", "kind", "DisruptionBudget",
				 "metadata", "name", DEMO_BUDGET, "spec", "domain", "rack",
				 "maxUnavailable", 1);
	long status = 0;
	json_t *out = NULL;
	int rc = client_request(&d->cl, "PUT", "/v1/budgets/" DEMO_BUDGET, body, &status, &out);
	json_decref(body);
	json_decref(out);
	return rc == 0 ? 0 : FP_EIO;
}

/* Creates (or re-creates) the agent token demo-agent-<node>; *secret is malloc'd, the caller
 * wipes it with fp_free_secret. */
static int agent_token(struct demo *d, const char *node, char **secret)
{
	char path[640], name[600];
	snprintf(name, sizeof(name), "demo-agent-%s", node);
	snprintf(path, sizeof(path), "/v1/tokens/%s", name);
	long status = 0;
	json_t *out = NULL;
	FILE *saved = d->cl.err, *devnull = fopen("/dev/null", "w");
	if (devnull)
		d->cl.err = devnull; /* 404 on a first run */
	client_request(&d->cl, "DELETE", path, NULL, &status, &out);
	d->cl.err = saved;
	if (devnull)
		fclose(devnull);
	json_decref(out);
	out = NULL;
	json_t *body = json_pack("{s:s,s:s,s:s}", "name", name, "role", "agent", "node", node);
	int rc = client_request(&d->cl, "POST", "/v1/tokens", body, &status, &out);
	json_decref(body);
	const char *tok = jsonx_str(out, "token");
	*secret = rc == 0 && tok ? xstrdup(tok) : NULL;
	if (out) {
		json_t *t = json_object_get(out, "token");
		if (t && json_is_string(t)) /* wipe jansson's copy too */
			explicit_bzero((char *)json_string_value(t), json_string_length(t));
	}
	json_decref(out);
	return *secret ? 0 : FP_EIO;
}

/* mkdir -p for the two levels under the data dir. */
static int mkdir_one(const char *path)
{
	return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Appends h->x's line, stamped with the current time (demo_line), to
 * <data-dir>/agents/<node>/kern.log (a kernel log grows; the agent's cursor in state/ resumes
 * at what it read last time). The line written, without its newline, is left in line. */
static int write_kernel_line(struct demo *d, const struct hnode *h, char *logpath, size_t len,
			     char *line, size_t linelen)
{
	char dir[4300];
	snprintf(dir, sizeof(dir), "%s/agents", d->data_dir);
	if (mkdir_one(dir) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/agents/%s", d->data_dir, h->name);
	if (mkdir_one(dir) < 0)
		return -1;
	snprintf(logpath, len, "%s/kern.log", dir);
	int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int n = demo_line(h->x, time(NULL), line, linelen - 1);
	int ok = n > 0;
	if (ok) {
		line[n] = '\n';
		ok = write(fd, line, (size_t)n + 1) == n + 1;
		line[n] = 0;
	}
	return close(fd) == 0 && ok ? 0 : -1;
}

extern char **environ;

/* Starts `fleetplane agent --node N --kernel-log FILE --once --state-dir DIR` with
 * FLEETPLANE_URL and FLEETPLANE_TOKEN (the agent token) in its environment; its output goes to
 * <data-dir>/agents/<node>/agent.log. */
static pid_t start_agent(struct demo *d, const struct hnode *h, const char *logpath,
			 const char *secret)
{
	char exe[4096], state[4300], out[4300];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(state, sizeof(state), "%s/agents/%s/state", d->data_dir, h->name);
	snprintf(out, sizeof(out), "%s/agents/%s/agent.log", d->data_dir, h->name);
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **envp = xcalloc(ne + 3, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < ne; i++)
		if (strncmp(environ[i], "FLEETPLANE_URL=", 15) != 0 &&
		    strncmp(environ[i], "FLEETPLANE_TOKEN=", 17) != 0)
			envp[k++] = environ[i];
	char *url = xasprintf("FLEETPLANE_URL=%s", d->url);
	char *tok = xasprintf("FLEETPLANE_TOKEN=%s", secret);
	envp[k++] = url;
	envp[k++] = tok;
	envp[k] = NULL;
	char *argv[] = {exe,
			"agent",
			"--node",
			(char *)h->name,
			"--kernel-log",
			(char *)logpath,
			"--once",
			"--state-dir",
			state,
			NULL};
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		/* the demo blocks SIGINT/SIGTERM (it polls for them); the agent gets them again, so
		 * a Ctrl-C on the terminal reaches it as it did */
		sigprocmask(SIG_UNBLOCK, &d->stop, NULL);
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execve(exe, argv, envp);
		_exit(127);
	}
	free(url);
	fp_free_secret(tok);
	free(envp);
	return pid;
}

/* The decision the server took on the event the agent sent for h: the stored health event of
 * h's node with h's code and raw line (the line as written, h->line) received last. Writes
 * "hold (reason)" into out. */
static void event_decision(struct demo *d, const struct hnode *h, char *out, size_t len)
{
	char path[640];
	snprintf(path, sizeof(path), "/v1/healthevents?node=%s&code=%s", h->name, h->x->code);
	json_t *items = NULL;
	char *rv = NULL;
	snprintf(out, len, "no health event stored");
	if (client_list(&d->cl, path, 0, &items, &rv) != 0)
		return;
	free(rv);
	const json_t *best = NULL;
	size_t i;
	json_t *e;
	json_array_foreach(items, i, e) {
		const char *raw = jsonx_str(e, "raw"), *at = jsonx_str(e, "receivedAt");
		if (!raw || strcmp(raw, h->line) != 0 || !at)
			continue;
		if (!best || strcmp(at, jsonx_str(best, "receivedAt")) > 0)
			best = e;
	}
	if (best)
		snprintf(out, len, "%s %s (%s)", jsonx_str(best, "code"),
			 jsonx_str(best, "decision.action") ? jsonx_str(best, "decision.action")
							    : "?",
			 jsonx_str(best, "decision.reason") ? jsonx_str(best, "decision.reason")
							    : "");
	json_decref(items);
}

/* Prints what changed on node h since the last call; document n. Returns 1 when h is back:
 * available, no `health` hold, a new remediationHistory entry; -1 when it failed. */
static int show_node_change(struct demo *d, struct hnode *h, const json_t *n,
			    struct health_result *r)
{
	const char *ph = jsonx_str(n, "status.phase");
	if (!ph)
		return 0;
	const json_t *hold = health_hold(n);
	if (hold && !h->held) {
		h->held = 1;
		const json_t *lad = jsonx_path(n, "status.remediation.ladder");
		char ladder[96] = "";
		size_t i, w = 0;
		json_t *s;
		json_array_foreach(lad, i, s)
			w += (size_t)snprintf(ladder + w, sizeof(ladder) - w, "%s%s",
					      i ? " > " : "",
					      json_string_value(s) ? json_string_value(s) : "?");
		printf("  %5.1fs  %-8s hold owner health: %s; ladder %s\n", demo_secs(d), h->name,
		       jsonx_str(hold, "reason") ? jsonx_str(hold, "reason") : "?",
		       w ? ladder : "(none)");
	}
	const json_t *da = node_cond(n, "DisruptionAllowed");
	int waiting = da && jsonx_str(da, "status") &&
		      strcmp(jsonx_str(da, "status"), "False") == 0;
	if (waiting && !h->waiting)
		printf("  %5.1fs  %-8s waits: DisruptionAllowed False (%s): %s\n", demo_secs(d),
		       h->name, jsonx_str(da, "reason") ? jsonx_str(da, "reason") : "?",
		       jsonx_str(da, "message") ? jsonx_str(da, "message") : "");
	else if (!waiting && h->waiting)
		printf("  %5.1fs  %-8s admitted by budget %s\n", demo_secs(d), h->name,
		       DEMO_BUDGET);
	h->waiting = waiting;
	const char *rung = jsonx_str(n, "status.remediation.rung");
	if (strcmp(ph, h->phase) != 0 || (rung && strcmp(rung, h->rung) != 0)) {
		if (strcmp(ph, "repairing") == 0)
			printf("  %5.1fs  %-8s repairing: rung %s\n", demo_secs(d), h->name,
			       rung ? rung : "?");
		else if (strcmp(ph, h->phase) != 0 && strcmp(ph, "available") != 0)
			printf("  %5.1fs  %-8s %s\n", demo_secs(d), h->name, ph);
		snprintf(h->phase, sizeof(h->phase), "%s", ph);
		snprintf(h->rung, sizeof(h->rung), "%s", rung ? rung : "");
	}
	if (strcmp(ph, "failed") == 0) {
		printf("  %5.1fs  %-8s failed: %s\n", demo_secs(d), h->name,
		       jsonx_str(n, "status.reason") ? jsonx_str(n, "status.reason") : "");
		return -1;
	}
	const json_t *hist = jsonx_path(n, "status.remediationHistory");
	size_t nh = json_array_size(hist);
	if (strcmp(ph, "available") == 0 && !hold && nh > h->hist0) {
		const json_t *last = json_array_get(hist, nh - 1);
		const char *rg = jsonx_str(last, "rung"), *res = jsonx_str(last, "result");
		printf("  %5.1fs  %-8s available: health hold released, %s %s on rung %s, "
		       "validated\n",
		       demo_secs(d), h->name,
		       jsonx_str(last, "code") ? jsonx_str(last, "code") : "?", res ? res : "?",
		       rg ? rg : "?");
		size_t w = strlen(r->rungs);
		snprintf(r->rungs + w, sizeof(r->rungs) - w, "%s%s %s", w ? ", " : "", h->name,
			 rg ? rg : "?");
		h->done = 1;
		return 1;
	}
	return 0;
}

/* Reads the budget's status for rack r01; prints (out, waiting) when it changed. */
static void show_budget(struct demo *d, struct health_result *r, char *last, size_t lastlen)
{
	long status = 0;
	json_t *b = NULL;
	if (client_request(&d->cl, "GET", "/v1/budgets/" DEMO_BUDGET, NULL, &status, &b) != 0)
		return;
	size_t i;
	json_t *v;
	json_array_foreach(jsonx_path(b, "status.domains"), i, v) {
		if (!jsonx_str(v, "value") || strcmp(jsonx_str(v, "value"), "r01") != 0)
			continue;
		long out = (long)json_integer_value(json_object_get(v, "unavailable"));
		if (out > r->max_out)
			r->max_out = out;
		size_t nw = json_array_size(json_object_get(v, "waiting"));
		if (nw > r->peak_waiting)
			r->peak_waiting = nw;
		char line[512];
		size_t w = (size_t)snprintf(line, sizeof(line), "out %ld of max %lld [", out,
					    (long long)json_integer_value(
						    json_object_get(v, "max")));
		size_t k;
		json_t *s;
		json_array_foreach(json_object_get(v, "out"), k, s)
			if (w < sizeof(line))
				w += (size_t)snprintf(line + w, sizeof(line) - w, "%s%s",
						      k ? " " : "",
						      json_string_value(s) ? json_string_value(s)
									   : "?");
		if (w < sizeof(line))
			w += (size_t)snprintf(line + w, sizeof(line) - w, "], waiting [");
		json_array_foreach(json_object_get(v, "waiting"), k, s)
			if (w < sizeof(line))
				w += (size_t)snprintf(line + w, sizeof(line) - w, "%s%s",
						      k ? " " : "",
						      json_string_value(s) ? json_string_value(s)
									   : "?");
		if (w < sizeof(line))
			snprintf(line + w, sizeof(line) - w, "]");
		if (strcmp(line, last) != 0) {
			printf("  %5.1fs  budget %s rack r01: %s\n", demo_secs(d), DEMO_BUDGET,
			       line);
			snprintf(last, lastlen, "%s", line);
		}
	}
	json_decref(b);
}

/* Reaps the nn agents: status[i] and reaped[i] (0 when waitpid failed). On a stop signal,
 * kills those still running (SIGTERM), reaps them and returns FP_ECLOSED; else 0. */
static int wait_agents(struct demo *d, const struct hnode *hn, size_t nn, int *status, int *reaped)
{
	size_t left = nn;
	int gone[DEMO_HEALTH_NODES] = {0};
	while (left > 0) {
		for (size_t i = 0; i < nn; i++) {
			if (gone[i])
				continue;
			int st = 0;
			pid_t w = waitpid(hn[i].agent, &st, WNOHANG);
			if (w == 0)
				continue;
			gone[i] = 1;
			reaped[i] = w == hn[i].agent;
			status[i] = st;
			left--;
		}
		if (left > 0 && demo_nap(d, 20)) {
			for (size_t i = 0; i < nn; i++)
				if (!gone[i]) {
					kill(hn[i].agent, SIGTERM);
					waitpid(hn[i].agent, NULL, 0);
				}
			return FP_ECLOSED;
		}
	}
	return 0;
}

const json_t *demo_health_hold(const json_t *n)
{
	return health_hold(n);
}

const json_t *demo_node_cond(const json_t *n, const char *type)
{
	return node_cond(n, type);
}

int demo_feed_xid79(struct demo *d, const char *node)
{
	struct hnode h;
	char line[1024], logpath[4400], *secret = NULL;
	memset(&h, 0, sizeof(h));
	snprintf(h.name, sizeof(h.name), "%s", node);
	h.x = &demo_xids[0];
	h.line = line;
	int rc = agent_token(d, h.name, &secret);
	if (rc < 0)
		return hfail(d, "creating an agent token", rc);
	if (write_kernel_line(d, &h, logpath, sizeof(logpath), line, sizeof(line)) < 0) {
		fp_free_secret(secret);
		return hfail(d, "writing a kernel log under the data dir", FP_EIO);
	}
	printf("  %5.1fs  %-8s kernel log %s gets a real line:\n           %s\n", demo_secs(d),
	       h.name, logpath, line);
	h.agent = start_agent(d, &h, logpath, secret);
	fp_free_secret(secret);
	if (h.agent < 0)
		return hfail(d, "starting fleetplane agent", FP_EIO);
	int st = 0, reaped = 0;
	if (wait_agents(d, &h, 1, &st, &reaped) < 0)
		return hfail(d, "running the agent", FP_ECLOSED);
	if (!reaped || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr,
			"error: demo: agent of %s exited %d (log: %s/agents/%s/agent.log)\n",
			h.name, WIFEXITED(st) ? WEXITSTATUS(st) : -1, d->data_dir, h.name);
		return hfail(d, "running the agent", FP_EIO);
	}
	char dec[512];
	event_decision(d, &h, dec, sizeof(dec));
	printf("  %5.1fs  %-8s fleetplane agent --once reported; decision: %s\n", demo_secs(d),
	       h.name, dec);
	return 0;
}

/* Runs the scenario; fills r. 0, or <0 after printing what went wrong (fail()). */
static int demo_health(struct demo *d, struct health_result *r)
{
	struct hnode hn[DEMO_HEALTH_NODES];
	char lines[DEMO_HEALTH_NODES][1024]; /* the kernel lines as written (hn[i].line) */
	memset(r, 0, sizeof(*r));
	size_t nn = pick_health_nodes(d, hn);
	if (nn == 0) {
		printf("GPU health: skipped - no node of rack r01 is available and never remediated "
		       "(a repeat on the same GPU starts higher on the ladder); use a fresh "
		       "--data-dir\n");
		return 0;
	}
	r->ran = 1;
	r->nodes = nn;
	d->h0 = demo_mono_ms();
	int rc = put_budget(d);
	if (rc < 0)
		return hfail(d, "creating the disruption budget " DEMO_BUDGET, rc);
	printf("\nGPU health: disruption budget %s: at most 1 node of each rack out at a time\n",
	       DEMO_BUDGET);
	/* Each node's history length now: "back" means a new entry. */
	for (size_t i = 0; i < nn; i++) {
		char path[640];
		snprintf(path, sizeof(path), "/v1/nodes/%s", hn[i].name);
		long status = 0;
		json_t *n = NULL;
		if (client_request(&d->cl, "GET", path, NULL, &status, &n) == 0)
			hn[i].hist0 = json_array_size(jsonx_path(n, "status.remediationHistory"));
		json_decref(n);
	}
	for (size_t i = 0; i < nn; i++) {
		char *secret = NULL, logpath[4400];
		hn[i].line = lines[i];
		const char *what = NULL;
		if ((rc = agent_token(d, hn[i].name, &secret)) < 0)
			what = "creating an agent token";
		else if (write_kernel_line(d, &hn[i], logpath, sizeof(logpath), lines[i],
					   sizeof(lines[i])) < 0)
			what = "writing a kernel log under the data dir";
		if (what) {
			fp_free_secret(secret);
			for (size_t k = 0; k < i;
			     k++) /* the agents already started end on their own */
				waitpid(hn[k].agent, NULL, 0);
			return hfail(d, what, rc < 0 ? rc : FP_EIO);
		}
		printf("  %-8s kernel log %s gets a real line%s%s%s:\n           %s\n", hn[i].name,
		       logpath, *hn[i].x->published ? " (its stamp \"" : "", hn[i].x->published,
		       *hn[i].x->published ? "\" replaced by the current time)" : "", hn[i].line);
		hn[i].agent = start_agent(d, &hn[i], logpath, secret);
		fp_free_secret(secret);
		if (hn[i].agent < 0) {
			for (size_t k = 0; k < i; k++)
				waitpid(hn[k].agent, NULL, 0);
			return hfail(d, "starting fleetplane agent", FP_EIO);
		}
	}
	printf("  %5.1fs  %zu agents started at once: fleetplane agent --node N --kernel-log FILE "
	       "--once --state-dir DIR (token role agent, scoped to N)\n",
	       demo_secs(d), nn);
	int bad = 0, ast[DEMO_HEALTH_NODES] = {0}, reaped[DEMO_HEALTH_NODES] = {0};
	if (wait_agents(d, hn, nn, ast, reaped) < 0)
		return hfail(d, "running the agents", FP_ECLOSED);
	for (size_t i = 0; i < nn; i++) {
		int st = ast[i];
		if (!reaped[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr,
				"error: demo: agent of %s exited %d (log: %s/agents/%s/agent.log)\n",
				hn[i].name, WIFEXITED(st) ? WEXITSTATUS(st) : -1, d->data_dir,
				hn[i].name);
			bad = 1;
		}
	}
	if (bad)
		return hfail(d, "running the agents", FP_EIO);
	for (size_t i = 0; i < nn; i++) {
		char dec[512];
		event_decision(d, &hn[i], dec, sizeof(dec));
		printf("  %5.1fs  %-8s reported; decision: %s\n", demo_secs(d), hn[i].name, dec);
	}
	/* The agents had only a kernel log: the other detectors are reported not live. */
	char path0[640];
	snprintf(path0, sizeof(path0), "/v1/nodes/%s", hn[0].name);
	long st0 = 0;
	json_t *n0 = NULL;
	if (client_request(&d->cl, "GET", path0, NULL, &st0, &n0) == 0) {
		const json_t *c = node_cond(n0, "DetectorsLive");
		if (c && jsonx_str(c, "status") && jsonx_str(c, "message"))
			printf("  %5.1fs  %-8s DetectorsLive %s: %s (only --kernel-log was given; "
			       "detectors that are not live never create holds)\n",
			       demo_secs(d), hn[0].name, jsonx_str(c, "status"),
			       jsonx_str(c, "message"));
	}
	json_decref(n0);
	char last[512] = "";
	int64_t until = d->t0 + d->timeout_s * 1000;
	size_t back = 0;
	while (back < nn) {
		if (demo_nap(d, 0))
			return hfail(d, "GPU health scenario", FP_ECLOSED);
		json_t *docs[DEMO_HEALTH_NODES] = {NULL};
		for (size_t i = 0; i < nn; i++) {
			char path[640];
			snprintf(path, sizeof(path), "/v1/nodes/%s", hn[i].name);
			long status = 0;
			if (!hn[i].done &&
			    client_request(&d->cl, "GET", path, NULL, &status, &docs[i]) != 0)
				docs[i] = NULL;
		}
		/* Nodes back in service first, so that "available" prints before the admission
		 * of the next node it made room for. */
		int failed = 0;
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < nn; i++) {
				if (!docs[i] || hn[i].done)
					continue;
				const char *ph = jsonx_str(docs[i], "status.phase");
				int avail = ph && strcmp(ph, "available") == 0 &&
					    !health_hold(docs[i]);
				if (avail != (pass == 0))
					continue;
				int s = show_node_change(d, &hn[i], docs[i], r);
				if (s < 0)
					failed = 1;
				else
					back += (size_t)s;
			}
		for (size_t i = 0; i < nn; i++)
			json_decref(docs[i]);
		if (failed)
			return hfail(d, "GPU health scenario: a node failed", FP_ESTATE);
		size_t waiting = 0;
		for (size_t i = 0; i < nn; i++)
			waiting += (size_t)hn[i].waiting;
		if (waiting > r->peak_waiting)
			r->peak_waiting = waiting;
		show_budget(d, r, last, sizeof(last));
		fflush(stdout);
		if (back < nn && demo_mono_ms() > until)
			return hfail(d, "GPU health scenario", FP_ETIMEDOUT);
		if (back < nn && demo_nap(d, 250))
			return hfail(d, "GPU health scenario", FP_ECLOSED);
	}
	r->remediated = back;
	json_t *evs = NULL;
	char *rv = NULL;
	if (client_list(&d->cl, "/v1/healthevents", 0, &evs, &rv) == 0)
		r->events = json_array_size(evs);
	free(rv);
	json_decref(evs);
	return 0;
}

static void summary(struct demo *d, double secs, const struct health_result *hr)
{
	struct counts c;
	count_nodes(d, &c);
	json_t *ops = NULL, *evs = NULL;
	char *rv = NULL;
	client_list(&d->cl, "/v1/operations", 0, &ops, &rv);
	free(rv);
	rv = NULL;
	client_list(&d->cl, "/v1/events", 0, &evs, &rv);
	free(rv);
	printf("\nfleetplane demo: %zu/%zu nodes available (%zu GPUs) in %.1fs; %zu operations, "
	       "%zu events recorded\n",
	       c.phase[PHASE_AVAILABLE], c.total, c.phase[PHASE_AVAILABLE] * 8, secs,
	       json_array_size(ops), json_array_size(evs));
	json_decref(ops);
	json_decref(evs);
	if (hr->ran)
		printf("GPU health: %zu real kernel lines -> %zu health holds -> %zu remediations "
		       "succeeded (%s);\n  budget %s held back up to %zu node%s at the peak and "
		       "counted at most %ld node%s of rack r01 out; %zu health event%s stored\n",
		       hr->nodes, hr->nodes, hr->remediated, hr->rungs, DEMO_BUDGET,
		       hr->peak_waiting, hr->peak_waiting == 1 ? "" : "s", hr->max_out,
		       hr->max_out == 1 ? "" : "s", hr->events, hr->events == 1 ? "" : "s");
	printf("\n  API:        %s   (metrics: %s/metrics)\n", d->url, d->url);
	printf("  data dir:   %s   (admin token in %s/admin.token)\n", d->data_dir, d->data_dir);
	/* The commands name the binary that is running, so they work as printed. */
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		n = snprintf(exe, sizeof(exe), "fleetplane");
	exe[n] = 0;
	printf("\n  export FLEETPLANE_URL=%s\n", d->url);
	printf("  export FLEETPLANE_TOKEN=$(cat %s/admin.token)\n", d->data_dir);
	printf("  %s node list\n  %s node get r01n01\n  %s op list --node r01n01\n"
	       "  %s event list --object node/r01n01\n",
	       exe, exe, exe, exe);
	if (hr->ran)
		printf("  %s health events\n  %s health budget list\n", exe, exe);
	demo_slurm_summary(d);
}

int cmd_demo(int argc, char **argv)
{
	struct demo d = {.nodes = 64, .speed = 20, .timeout_s = 600};
	static const struct option opts[] = {{"nodes", required_argument, NULL, 'n'},
					     {"data-dir", required_argument, NULL, 'd'},
					     {"keep", no_argument, NULL, 'k'},
					     {"sim-speed", required_argument, NULL, 'x'},
					     {"timeout", required_argument, NULL, 't'},
					     {"slurm", no_argument, NULL, 's'},
					     {"log-format", required_argument, NULL, 'F'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	int c;
	char *end;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		errno = 0;
		switch (c) {
		case 'n':
			d.nodes = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || d.nodes < 1 ||
			    d.nodes > DEMO_MAX_NODES) {
				fprintf(stderr, "error: --nodes: \"%s\" is not 1..%d\n", optarg,
					DEMO_MAX_NODES);
				return 2;
			}
			break;
		case 'd': d.data_dir = xstrdup(optarg); break;
		case 'k': d.keep = 1; break;
		case 's': d.slurm = 1; break;
		case 'x':
			d.speed = strtod(optarg, &end);
			if (errno || *end || end == optarg || isnan(d.speed) || d.speed < 0 ||
			    d.speed > 100000) {
				fprintf(stderr, "error: --sim-speed: \"%s\" is not 0..100000\n",
					optarg);
				return 2;
			}
			break;
		case 't':
			d.timeout_s = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || d.timeout_s < 1) {
				fprintf(stderr,
					"error: --timeout: \"%s\" is not a positive number of "
					"seconds\n",
					optarg);
				return 2;
			}
			break;
		case 'F':
			if (log_format_parse(optarg) < 0) {
				fprintf(stderr,
					"error: --log-format: \"%s\" is not logfmt or json\n",
					optarg);
				return 2;
			}
			log_format_set((enum log_format)log_format_parse(optarg));
			break;
		case 'h': demo_usage(stdout); return 0;
		default: demo_usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "error: demo: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (d.slurm) {
		char why[512];
		if (demo_slurm_check(why, sizeof(why)) < 0) {
			fprintf(stderr, "error: demo: %s\n", why);
			free(d.data_dir);
			return 2;
		}
	}
	if (!d.data_dir) {
		char tmpl[] = "/tmp/fleetplane-demo-XXXXXX";
		if (!mkdtemp(tmpl)) {
			fprintf(stderr, "error: cannot create a temp dir: %s\n", strerror(errno));
			return 1;
		}
		d.data_dir = xstrdup(tmpl);
	} else if (mkdir(d.data_dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "error: cannot create %s: %s\n", d.data_dir, strerror(errno));
		return 1;
	}
	d.tty = isatty(STDOUT_FILENO);
	/* Block the stop signals in every thread (before the fleet starts any), as serve does;
	 * the demo polls for them between its requests (demo_nap), and with --keep waits for them
	 * with sigwait. */
	sigemptyset(&d.stop);
	sigaddset(&d.stop, SIGINT);
	sigaddset(&d.stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &d.stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	d.t0 = demo_mono_ms();
	printf("fleetplane demo: starting serve (data dir %s, sim speed %gx)\n", d.data_dir,
	       d.speed);
	fflush(stdout);
	char err[512];
	int result = 1, rc = 0;
	if (d.slurm) {
		printf("starting Slurm under %s/slurm (munged, slurmctld, slurmd %s and %s)\n",
		       d.data_dir, demo_slurm_node(0), demo_slurm_node(1));
		fflush(stdout);
		if ((rc = demo_slurm_start(&d, err, sizeof(err))) < 0) {
			stop_fleet(&d);
			fprintf(stderr, "error: demo: starting Slurm: %s\n", err);
			goto raise;
		}
		printf("Slurm is up: scontrol ping UP, %s and %s IDLE\n", demo_slurm_node(0),
		       demo_slurm_node(1));
	}
	rc = start_fleet(&d, err, sizeof(err));
	if (rc < 0) {
		stop_fleet(&d);
		if (d.tty)
			printf("\n");
		fprintf(stderr, "error: demo: starting serve: %s\n",
			*err ? err : "see serve.log in the data dir");
		fprintf(stderr, "data dir: %s (serve log: %s/serve.log)\n", d.data_dir, d.data_dir);
		free(d.data_dir);
		return 1;
	}
	if ((rc = connect_api(&d)) < 0) {
		stop_fleet(&d);
		fail(&d, "starting serve", rc);
		goto raise;
	}
	printf("serve is up at %s\n", d.url);
	if ((rc = enroll(&d)) < 0) {
		fail(&d, "enrolling", rc);
		goto out;
	}
	printf("bringing nodes enrolled → inspecting → provisioning → validating → available\n");
	if ((rc = wait_until(&d, all_available, NULL, 1)) < 0) {
		fail(&d, "waiting for every node to be available", rc);
		goto out;
	}
	double onboard_s = (double)(demo_mono_ms() - d.t0) / 1000.0;
	struct health_result hr;
	if (demo_health(&d, &hr) < 0)
		goto out;
	double health_s = (double)(demo_mono_ms() - d.t0) / 1000.0 - onboard_s;
	const char *node = "r01n01";
	printf("\ndraining %s by hand (hold owner operator:admin, no remediation) ...\n", node);
	if ((rc = action(&d, node, "drain", "demo: drain and resume")) < 0) {
		fail(&d, "draining r01n01", rc);
		goto out;
	}
	const char *want_maint[] = {node, "maintenance", "holds"};
	if ((rc = wait_until(&d, node_phase_is, want_maint, 0)) < 0) {
		fail(&d, "waiting for r01n01 to reach maintenance", rc);
		goto out;
	}
	printf("%s is in maintenance; resuming ...\n", node);
	if ((rc = action(&d, node, "resume", "demo: done")) < 0) {
		fail(&d, "resuming r01n01", rc);
		goto out;
	}
	const char *want_avail[] = {node, "available", "noholds"};
	if ((rc = wait_until(&d, node_phase_is, want_avail, 0)) < 0) {
		fail(&d, "waiting for r01n01 to be available again", rc);
		goto out;
	}
	printf("%s is available again\n", node);
	if (d.slurm && demo_slurm_scenario(&d) < 0)
		goto out;
	struct counts cnt;
	if (count_nodes(&d, &cnt) < 0 || !all_available(&d, &cnt, NULL)) {
		fail(&d, "final check: not every node is available with no holds", FP_ESTATE);
		goto out;
	}
	printf("onboarding took %.1fs", onboard_s);
	if (hr.ran)
		printf(", the GPU health scenario %.1fs", health_s);
	printf("\n");
	summary(&d, (double)(demo_mono_ms() - d.t0) / 1000.0, &hr);
	result = 0;
out:
	if (d.keep && result == 0) {
		/* The promise of --keep with serve in this process: it goes on serving here, in the
		 * foreground, until asked to stop; that stop is the expected end (exit 0). */
		printf("\nserve is still running at %s in this process (pid %d); stop it with "
		       "Ctrl-C or: kill %d\n",
		       d.url, (int)getpid(), (int)getpid());
		fflush(stdout);
		if (!d.sig)
			sigwait(&d.stop, &d.sig);
		stop_fleet(&d);
		printf("serve stopped (signal %d)\n", d.sig);
		d.sig = 0;
	} else {
		stop_fleet(&d);
		if (result == 0)
			printf("\nserve stopped; rerun with --keep to leave it running.\n");
	}
	client_release(&d.cl);
raise:
	free(d.data_dir);
	fflush(stdout);
	if (d.sig) {
		/* Stopped by SIGINT/SIGTERM before the end: the fleet is stopped and the agents
		 * are gone; die of the signal, as the demo did before it handled it. */
		signal(d.sig, SIG_DFL);
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, d.sig);
		raise(d.sig);
		pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	}
	return result;
}

/* ---- fleetplane sim state --data-dir DIR [NODE...] ---- */

struct sim_pick {
	json_t *out;
	char **names; /* only these nodes, or all when n == 0 */
	int n;
};

static int pick_machine(void *arg, const struct store_kv *kv)
{
	struct sim_pick *p = arg;
	const char *node = kv->key + strlen("/sim/hw/");
	int want = p->n <= 0;
	for (int a = 0; a < p->n && !want; a++)
		want = strcmp(p->names[a], node) == 0;
	json_t *v = NULL;
	if (want && jsonx_parse(kv->value, strlen(kv->value), &v, NULL, 0) == 0)
		json_object_set_new(p->out, node, v);
	return 0;
}

int cmd_sim_state(int argc, char **argv)
{
	const char *dir = NULL;
	static const struct option opts[] = {{"data-dir", required_argument, NULL, 'd'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("usage: fleetplane sim state --data-dir DIR [NODE...]\n"
		       "  prints the saved state of simulated machines (power, boot device,\n"
		       "  side-effect counters) as JSON; run it on a stopped serve's data dir\n");
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "state") != 0) {
		fprintf(stderr,
			"usage: fleetplane sim state --data-dir DIR [NODE...]\n"
			"  prints the saved state of simulated machines (power, boot device,\n"
			"  side-effect counters) as JSON; run it on a stopped serve's data dir\n");
		return 2;
	}
	int c;
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "h", opts, NULL)) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 'h') {
			printf("usage: fleetplane sim state --data-dir DIR [NODE...]\n");
			return 0;
		} else
			return 2;
	}
	if (!dir) {
		fprintf(stderr, "error: sim state: --data-dir is required\n");
		return 2;
	}
	char uri[4200], err[256];
	snprintf(uri, sizeof(uri), "sqlite:%s/fleetplane.db", dir);
	struct stat st;
	snprintf(err, sizeof(err), "%s/fleetplane.db", dir);
	if (stat(err, &st) < 0) {
		fprintf(stderr, "error: no store in %s\n", dir);
		return 1;
	}
	struct store *s = NULL;
	if (store_open(uri, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: cannot open %s: %s\n", uri, err);
		return 1;
	}
	json_t *out = json_object();
	struct sim_pick pick = {out, argv + optind + 1, argc - optind - 1};
	if (store_foreach(s, "/sim/hw/", 1000, pick_machine, &pick, NULL) < 0)
		fprintf(stderr, "warning: could not read every simulated machine\n");
	store_close(s);
	char *txt = json_dumps(out, JSON_INDENT(2) | JSON_SORT_KEYS);
	printf("%s\n", txt ? txt : "{}");
	free(txt);
	json_decref(out);
	return 0;
}
