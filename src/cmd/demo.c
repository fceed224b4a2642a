/* demo.c - `fleetplane demo`, the main job, and `fleetplane sim state`.
 *
 * demo starts `fleetplane serve` (this same binary, exec'd with an argv, never a shell) on a
 * SQLite data directory, enrolls N simulated 8-GPU nodes through the API, shows progress until
 * every node is available, drains one node and resumes it, and prints a summary with the API
 * address and CLI examples. It exits 0 only when every node is available with no holds.
 *
 * sim state reads the simulated machines' saved state (power, boot device, side-effect
 * counters) from a stopped serve's data directory. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
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
#include "cmd/client.h"
#include "cmd/run.h"
#include "core/model.h"
#include "store/store.h"

#define DEMO_SITE "demo-a"
#define DEMO_MAX_NODES 100000

struct demo {
	long nodes;
	char *data_dir;
	int keep;
	double speed;
	long timeout_s;
	pid_t serve_pid;
	char url[64];
	int tty;
	struct client cl;
	int64_t t0;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void demo_usage(FILE *f)
{
	fprintf(f, "usage: fleetplane demo [--nodes N] [--data-dir DIR] [--keep] [--sim-speed X]\n"
		   "                       [--timeout SECONDS]\n\n"
		   "  --nodes N          simulated 8-GPU nodes to enroll (default 64)\n"
		   "  --data-dir DIR     where serve keeps its store (default: a new temp dir)\n"
		   "  --keep             leave serve running at the end\n"
		   "  --sim-speed X      simulated hardware speed-up (default 10)\n"
		   "  --timeout SECONDS  give up after this long (default 600)\n");
}

static int start_serve(struct demo *d)
{
	char exe[4096], dd[4200], listen[64], speed[32], logpath[4300], urlpath[4300];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return FP_EIO;
	exe[n] = 0;
	snprintf(dd, sizeof(dd), "%s", d->data_dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:0");
	snprintf(speed, sizeof(speed), "%g", d->speed);
	snprintf(logpath, sizeof(logpath), "%s/serve.log", d->data_dir);
	snprintf(urlpath, sizeof(urlpath), "%s/serve.url", d->data_dir);
	unlink(urlpath); /* left behind by a serve that was killed */
	pid_t pid = fork();
	if (pid < 0)
		return FP_EIO;
	if (pid == 0) {
		int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		setpgid(0, 0); /* a Ctrl-C on the demo's terminal reaches the demo, not serve */
		char *argv[] = {exe, "serve", "--data-dir", dd, "--listen", listen, "--sim-speed",
				speed, NULL};
		execv(exe, argv);
		_exit(127);
	}
	d->serve_pid = pid;
	return 0;
}

static int serve_alive(struct demo *d)
{
	int st;
	return waitpid(d->serve_pid, &st, WNOHANG) == 0;
}

static void stop_serve(struct demo *d)
{
	if (d->serve_pid <= 0)
		return;
	kill(d->serve_pid, SIGTERM);
	for (int i = 0; i < 200; i++) {
		int st;
		if (waitpid(d->serve_pid, &st, WNOHANG) != 0)
			return;
		nap_ms(50);
	}
	kill(d->serve_pid, SIGKILL);
	waitpid(d->serve_pid, NULL, 0);
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

static int wait_ready(struct demo *d)
{
	char token[256];
	int64_t until = mono_ms() + 30000;
	while (mono_ms() < until) {
		if (!serve_alive(d))
			return FP_ECLOSED;
		if (read_line(d, "serve.url", d->url, sizeof(d->url)) == 0 &&
		    read_line(d, "admin.token", token, sizeof(token)) == 0) {
			setenv("FLEETPLANE_URL", d->url, 1);
			setenv("FLEETPLANE_TOKEN", token, 1);
			explicit_bzero(token, sizeof(token));
			if (client_init(&d->cl) != 0)
				return FP_EINVAL;
			d->cl.err = fopen("/dev/null", "w");
			long status = 0;
			json_t *out = NULL;
			while (mono_ms() < until) {
				int rc = client_request(&d->cl, "GET", "/readyz", NULL, &status, &out);
				json_decref(out);
				out = NULL;
				if (rc == 0 && status == 200) {
					fclose(d->cl.err);
					d->cl.err = stderr;
					return 0;
				}
				if (!serve_alive(d))
					return FP_ECLOSED;
				nap_ms(100);
			}
			return FP_ETIMEDOUT;
		}
		nap_ms(100);
	}
	return FP_ETIMEDOUT;
}

static int enroll(struct demo *d)
{
	json_t *items = json_array();
	for (long i = 0; i < d->nodes; i++) {
		char name[48], rack[24];
		snprintf(rack, sizeof(rack), "r%02ld", i / 8 + 1);
		snprintf(name, sizeof(name), "%sn%02ld", rack, i % 8 + 1);
		json_array_append_new(
			items, json_pack("{s:s,s:{s:s,s:{s:s,s:s}},s:{s:s,s:s,s:s,s:{s:s},s:{s:i,s:s}}}",
					 "kind", "Node", "metadata", "name", name, "labels", "rack",
					 rack, "site", DEMO_SITE, "spec", "site", DEMO_SITE, "rack",
					 rack, "provider", "sim", "bmc", "driver", "sim", "gpus",
					 "count", 8, "model", "NVIDIA H100 80GB HBM3"));
	}
	json_t *body = json_pack("{s:o}", "items", items);
	long status = 0;
	json_t *out = NULL;
	FILE *saved = d->cl.err, *devnull = fopen("/dev/null", "w");
	if (devnull)
		d->cl.err = devnull; /* a 409 on a re-run is expected; other errors are shown below */
	int rc = client_request(&d->cl, "POST", "/v1/nodes", body, &status, &out);
	d->cl.err = saved;
	if (devnull)
		fclose(devnull);
	json_decref(body);
	if (status == 409) {
		json_decref(out);
		printf("nodes already enrolled in %s; continuing with them\n", d->data_dir);
		return 0;
	}
	if (rc != 0 || status != 201) {
		fprintf(stderr, "error: enrolling %ld nodes failed (HTTP %ld): %s\n", d->nodes, status,
			jsonx_str(out, "detail") ? jsonx_str(out, "detail") : "no detail");
		json_decref(out);
		return FP_EIO;
	}
	json_decref(out);
	printf("enrolled %ld simulated nodes (8 GPUs each) in site %s\n", d->nodes, DEMO_SITE);
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
	json_array_foreach(items, i, n)
	{
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
		 (double)(mono_ms() - d->t0) / 1000.0);
	if (d->tty)
		printf("\r\033[K%s%s", line, final ? "\n" : "");
	else
		printf("%s\n", line);
	fflush(stdout);
}

/* Waits until pred holds; returns 0, FP_ETIMEDOUT or FP_ECLOSED (serve died). */
static int wait_until(struct demo *d, int (*pred)(struct demo *, const struct counts *, void *),
		      void *arg, int show)
{
	int64_t until = d->t0 + d->timeout_s * 1000, last = 0;
	struct counts c;
	for (;;) {
		if (!serve_alive(d))
			return FP_ECLOSED;
		if (count_nodes(d, &c) == 0) {
			int done = pred(d, &c, arg);
			if (show && (done || d->tty || mono_ms() - last >= 5000)) {
				show_progress(d, &c, done);
				last = mono_ms();
			}
			if (done)
				return 0;
		}
		if (mono_ms() > until)
			return FP_ETIMEDOUT;
		nap_ms(d->tty ? 250 : 500);
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
		rc == FP_ECLOSED ? "fleetplane serve exited (see serve.log in the data dir)"
		: rc == FP_ETIMEDOUT ? "timed out"
				     : fp_err_msg(rc));
	fprintf(stderr, "data dir: %s (serve log: %s/serve.log)\n", d->data_dir, d->data_dir);
	return 1;
}

static void summary(struct demo *d, double secs)
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
}

int cmd_demo(int argc, char **argv)
{
	struct demo d = {.nodes = 64, .speed = 10, .timeout_s = 600};
	static const struct option opts[] = {{"nodes", required_argument, NULL, 'n'},
					     {"data-dir", required_argument, NULL, 'd'},
					     {"keep", no_argument, NULL, 'k'},
					     {"sim-speed", required_argument, NULL, 'x'},
					     {"timeout", required_argument, NULL, 't'},
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
			if (errno || *end || end == optarg || d.nodes < 1 || d.nodes > DEMO_MAX_NODES) {
				fprintf(stderr, "error: --nodes: \"%s\" is not 1..%d\n", optarg,
					DEMO_MAX_NODES);
				return 2;
			}
			break;
		case 'd':
			d.data_dir = xstrdup(optarg);
			break;
		case 'k':
			d.keep = 1;
			break;
		case 'x':
			d.speed = strtod(optarg, &end);
			if (errno || *end || end == optarg || isnan(d.speed) || d.speed < 0 ||
			    d.speed > 100000) {
				fprintf(stderr, "error: --sim-speed: \"%s\" is not 0..100000\n", optarg);
				return 2;
			}
			break;
		case 't':
			d.timeout_s = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || d.timeout_s < 1) {
				fprintf(stderr, "error: --timeout: \"%s\" is not a positive number of "
						"seconds\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			demo_usage(stdout);
			return 0;
		default:
			demo_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "error: demo: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
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
	signal(SIGPIPE, SIG_IGN);
	d.t0 = mono_ms();
	printf("fleetplane demo: starting serve (data dir %s, sim speed %gx)\n", d.data_dir,
	       d.speed);
	int rc = start_serve(&d);
	if (rc == 0)
		rc = wait_ready(&d);
	if (rc < 0) {
		stop_serve(&d);
		return fail(&d, "starting serve", rc);
	}
	printf("serve is up at %s\n", d.url);
	int result = 1;
	if ((rc = enroll(&d)) < 0) {
		fail(&d, "enrolling", rc);
		goto out;
	}
	printf("bringing nodes enrolled → inspecting → provisioning → validating → available\n");
	if ((rc = wait_until(&d, all_available, NULL, 1)) < 0) {
		fail(&d, "waiting for every node to be available", rc);
		goto out;
	}
	double onboard_s = (double)(mono_ms() - d.t0) / 1000.0;
	const char *node = "r01n01";
	printf("draining %s (hold owner operator:admin) ...\n", node);
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
	struct counts cnt;
	if (count_nodes(&d, &cnt) < 0 || !all_available(&d, &cnt, NULL)) {
		fail(&d, "final check: not every node is available with no holds", FP_ESTATE);
		goto out;
	}
	printf("onboarding took %.1fs\n", onboard_s);
	summary(&d, (double)(mono_ms() - d.t0) / 1000.0);
	result = 0;
out:
	if (d.keep && result == 0) {
		printf("\nserve is still running (pid %d); stop it with: kill %d\n", (int)d.serve_pid,
		       (int)d.serve_pid);
	} else {
		stop_serve(&d);
		if (result == 0)
			printf("\nserve stopped; rerun with --keep to leave it running.\n");
	}
	client_release(&d.cl);
	free(d.data_dir);
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

int cmd_sim(int argc, char **argv)
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
