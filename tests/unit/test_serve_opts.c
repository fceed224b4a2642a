/* layers: base core store driver engine boot controller api */
/* test_serve_opts.c - the serve option table (src/cmd/serve_opts.c, included whole so the row
 * helpers can be reached; it needs only base): defaults, every kind of value from a config
 * file, bounds and their messages (the flag messages byte for byte as before the table), an
 * unknown key named with its line, a duplicate key, a flag-only key, an oversize line, a file
 * that fails half way changing nothing, flags overriding the file, and --check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../src/cmd/serve_opts.c"

static char path[64];

/* write_conf writes text to a fresh temp file named in path. */
static void write_conf(const char *text)
{
	snprintf(path, sizeof(path), "/tmp/fp_serve_opts_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal((ssize_t)n, write(fd, text, n));
	close(fd);
}

static struct serve_opts *new_opts(void)
{
	struct serve_opts *o = malloc(sizeof(*o));
	assert_non_null(o);
	serve_opts_defaults(o);
	return o;
}

/* load writes text and loads it into o; returns the rc, err holds the message. */
static int load(const char *text, struct serve_opts *o, char *err, size_t errlen)
{
	write_conf(text);
	int rc = serve_opts_load_file(path, o, err, errlen);
	unlink(path);
	return rc;
}

static void test_defaults(void **state)
{
	struct serve_opts *o = new_opts();
	assert_null(o->data_dir);
	assert_string_equal("127.0.0.1:7070", o->listen);
	assert_int_equal(0, o->sim);
	assert_true(o->sim_speed == 10);
	assert_int_equal(0, o->sim_faults);
	assert_int_equal(4, o->workers);
	assert_int_equal(32, o->executor_threads);
	assert_true(o->site_qps == 100);
	assert_int_equal(1, o->bmc_concurrency);
	assert_int_equal(30, o->bmc_timeout);
	assert_int_equal(5, o->bmc_breaker_failures);
	assert_true(o->report_rate == API_REPORT_LIMIT_RATE);
	assert_int_equal(API_REPORT_LIMIT_BURST, o->report_burst);
	assert_int_equal(API_REPORT_LIMIT_EVENTS_PER_MIN, o->report_events);
	for (size_t i = 0; i < NOPTS; i++)
		assert_int_equal(0, o->set[i]);
	free(o);
}

static void test_every_kind(void **state)
{
	struct serve_opts *o = new_opts();
	char err[512] = "";
	int rc = load("# a comment\n"
		      "\n"
		      "data-dir /var/lib/fp\n"               /* string */
		      "  listen   10.0.0.1:8080  \r\n"       /* blanks around, CR cut */
		      "workers 9\n"                          /* long */
		      "bmc-timeout 45\n"                     /* duration */
		      "site-qps 2.5\n"                       /* double */
		      "sim-faults 18446744073709551615\n"    /* seed, the largest */
		      "log-level debug\n"                    /* level */
		      "bmc-credentials-dir /etc/fp creds\n", /* a value with a blank */
		      o, err, sizeof(err));
	assert_int_equal(0, rc);
	assert_string_equal("/var/lib/fp", o->data_dir);
	assert_string_equal("10.0.0.1:8080", o->listen);
	assert_int_equal(9, o->workers);
	assert_int_equal(45, o->bmc_timeout);
	assert_true(o->site_qps == 2.5);
	assert_true(o->sim_faults == UINT64_MAX);
	assert_string_equal("debug", o->log_level);
	assert_string_equal("/etc/fp creds", o->bmc_credentials_dir);
	/* the strings live in o itself, not in the freed temporary */
	assert_ptr_equal(o->listen, o->strbuf[find_opt("listen", 6) - opts]);
	assert_true(o->set[find_opt("workers", 7) - opts]);
	assert_false(o->set[find_opt("sim", 3) - opts]);
	free(o);
}

/* want is a format with one %s, the config file's path (a test-table format, hence the
 * -Wformat-nonliteral exception around its one use). */
static void expect_refused(const char *text, const char *want)
{
	struct serve_opts *o = new_opts();
	char err[512] = "";
	assert_int_equal(FP_EINVAL, load(text, o, err, sizeof(err)));
	char full[600];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(full, sizeof(full), want, path);
#pragma GCC diagnostic pop
	assert_string_equal(full, err);
	free(o);
}

static void test_bounds(void **state)
{
	expect_refused("workers 0\n", "%s:1: workers: \"0\" is not 1..256");
	expect_refused("workers 257\n", "%s:1: workers: \"257\" is not 1..256");
	expect_refused("workers 4x\n", "%s:1: workers: \"4x\" is not 1..256");
	expect_refused("site-qps 1000001\n", "%s:1: site-qps: \"1000001\" is not a number 0..1e6");
	expect_refused("sim-speed nan\n", "%s:1: sim-speed: \"nan\" is not a number 0..100000");
	expect_refused("bmc-min-interval -1\n",
		       "%s:1: bmc-min-interval: \"-1\" is not 0..600000 milliseconds");
	expect_refused("sim-faults 0\n", "%s:1: sim-faults: \"0\" is not a seed > 0");
	expect_refused("log-level loud\n",
		       "%s:1: log-level: \"loud\" is not one of debug, info, warn, error, off");
	expect_refused("workers\n", "%s:1: workers: needs a value");
	/* the edges are in */
	struct serve_opts *o = new_opts();
	char err[512];
	assert_int_equal(0, load("workers 256\nsim 200000\nsite-qps 1e6\n", o, err, sizeof(err)));
	assert_int_equal(256, o->workers);
	assert_int_equal(200000, o->sim);
	free(o);
}

static void test_flag_messages_unchanged(void **state)
{
	/* the text after "error: --NAME: " as cmd_serve printed it before the table */
	static const struct {
		const char *name, *value, *want;
	} cases[] = {
		{"sim", "x", "\"x\" is not a node count 0..200000"},
		{"sim-speed", "x", "\"x\" is not a number 0..100000"},
		{"sim-faults", "0", "\"0\" is not a seed > 0"},
		{"workers", "0", "\"0\" is not 1..256"},
		{"executor-threads", "0", "\"0\" is not 1..256"},
		{"bmc-concurrency", "65", "\"65\" is not 1..64"},
		{"bmc-min-interval", "x", "\"x\" is not 0..600000 milliseconds"},
		{"bmc-timeout", "0", "\"0\" is not 1..600 seconds"},
		{"bmc-breaker-failures", "0", "\"0\" is not 1..1000"},
		{"site-qps", "-1", "\"-1\" is not a number 0..1e6"},
		{"log-level", "x", "\"x\" is not one of debug, info, warn, error, off"},
		{"heartbeat-timeout", "x", "\"x\" is not 0..86400 seconds"},
		{"report-rate", "x",
		 "\"x\" is not a number 0..100000 (reports per second per node; "
		 "0 = no limit)"},
		{"report-burst", "0", "\"0\" is not 1..100000 reports"},
		{"report-events", "x",
		 "\"x\" is not 0..100000000 (events per minute per node; 0 = "
		 "no limit)"},
		{"bmc-credentials-dir", "", "must not be empty"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct opt *d = find_opt(cases[i].name, strlen(cases[i].name));
		assert_non_null(d);
		struct serve_opts *o = new_opts();
		assert_int_equal(FP_EINVAL, set_value(d, cases[i].value, o));
		free(o);
		char why[256];
		why_bad(d, cases[i].value, why, sizeof(why));
		assert_string_equal(cases[i].want, why);
	}
}

static void test_unknown_duplicate_flag_only(void **state)
{
	expect_refused("# header\n\nworkers 2\nwrokers 3\n", "%s:4: wrokers: unknown key");
	expect_refused("workers 2\nlisten :1\nworkers 3\n",
		       "%s:3: workers: given twice (first on line 1)");
	expect_refused("help\n", "%s:1: help: a command-line flag only, not a config key");
	expect_refused("new-secret-key\n",
		       "%s:1: new-secret-key: a command-line flag only, not a config key");
	expect_refused("config /etc/other\n",
		       "%s:1: config: a command-line flag only, not a config key");
}

/* A flag that may be a config key (slurm) is on alone or with on/yes/true/1, off with
 * off/no/false/0; any other value is refused naming it. */
static void test_flag_keys(void **state)
{
	static const struct {
		const char *text;
		int want;
	} cases[] = {{"slurm\n", 1},      {"slurm on\n", 1},    {"slurm yes\n", 1},
		     {"slurm true\n", 1}, {"slurm 1\n", 1},     {"slurm off\n", 0},
		     {"slurm no\n", 0},   {"slurm false\n", 0}, {"slurm 0\n", 0}};
	char err[512];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct serve_opts *o = new_opts();
		o->slurm = !cases[i].want;
		assert_int_equal(0, load(cases[i].text, o, err, sizeof(err)));
		assert_int_equal(cases[i].want, o->slurm);
		free(o);
	}
	expect_refused("slurm maybe\n",
		       "%s:1: slurm: \"maybe\" is not on or off (the key alone is on)");
}

static void test_oversize(void **state)
{
	char *text = malloc(SERVE_OPTS_LINE_MAX + 64);
	assert_non_null(text);
	size_t n = (size_t)snprintf(text, SERVE_OPTS_LINE_MAX + 64, "workers 2\nlisten ");
	memset(text + n, 'a', SERVE_OPTS_LINE_MAX);
	memcpy(text + n + SERVE_OPTS_LINE_MAX, "\n", 2);
	expect_refused(text, "%s:2: line longer than 4095 bytes");
	free(text);
	/* a file over the cap, of comment lines */
	size_t big = SERVE_OPTS_FILE_MAX + 10;
	text = malloc(big + 1);
	assert_non_null(text);
	for (size_t i = 0; i < big; i += 100) {
		size_t k = big - i < 100 ? big - i : 100;
		memset(text + i, '#', k);
		text[i + k - 1] = '\n';
	}
	text[big] = 0;
	expect_refused(text, "%s: larger than 1048576 bytes");
	free(text);
}

static void test_nothing_half_applies(void **state)
{
	struct serve_opts *o = new_opts();
	char err[512];
	assert_int_equal(FP_EINVAL,
			 load("workers 9\nlisten 1.2.3.4:5\nbogus 1\n", o, err, sizeof(err)));
	assert_int_equal(4, o->workers);
	assert_string_equal("127.0.0.1:7070", o->listen);
	assert_false(o->set[find_opt("workers", 7) - opts]);
	free(o);
}

/* parse runs serve_opts_parse on a NULL-terminated list, stderr and stdout to /dev/null. */
static int parse(struct serve_opts *o, const char **args)
{
	char *argv[32];
	int argc = 0;
	for (; args[argc]; argc++)
		argv[argc] = (char *)args[argc];
	argv[argc] = NULL;
	fflush(stderr);
	int saved = dup(2);
	FILE *null = freopen("/dev/null", "w", stderr);
	assert_non_null(null);
	int rc = serve_opts_parse(argc, argv, o);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	return rc;
}

static void test_flags_override_file(void **state)
{
	write_conf("workers 7\nlisten 127.0.0.1:9999\nsim-speed 0\nreport-burst 30\n");
	struct serve_opts *o = malloc(sizeof(*o));
	assert_non_null(o);
	/* flags before and after --config both win over the file */
	const char *args[] = {"serve",  "--workers",      "9",  "--config", path, "--data-dir",
			      "/tmp/x", "--report-burst", "40", NULL};
	assert_int_equal(-1, parse(o, args));
	assert_int_equal(9, o->workers);
	assert_int_equal(40, o->report_burst);
	assert_string_equal("127.0.0.1:9999", o->listen); /* from the file */
	assert_string_equal("/tmp/x", o->data_dir);
	assert_int_equal(4, o->executor_threads); /* sim-speed 0 from the file, threads not set */
	/* executor-threads given: the zero-latency rule leaves it alone */
	const char *args2[] = {"serve",  "--config",           path, "--data-dir",
			       "/tmp/x", "--executor-threads", "12", NULL};
	assert_int_equal(-1, parse(o, args2));
	assert_int_equal(12, o->executor_threads);
	assert_int_equal(7, o->workers);
	/* a bad file: exit 2 */
	unlink(path);
	write_conf("workers 700\n");
	const char *args3[] = {"serve", "--data-dir", "/tmp/x", "--config", path, NULL};
	assert_int_equal(2, parse(o, args3));
	unlink(path);
	/* a bad flag is refused before the file is read; a missing data dir; a stray argument */
	const char *args4[] = {"serve", "--config", "/nonexistent", "--workers", "0", NULL};
	assert_int_equal(2, parse(o, args4));
	const char *args5[] = {"serve", "--workers", "3", NULL};
	assert_int_equal(2, parse(o, args5));
	const char *args6[] = {"serve", "--data-dir", "/tmp/x", "extra", NULL};
	assert_int_equal(2, parse(o, args6));
	const char *args7[] = {"serve", "--no-such-flag", NULL};
	assert_int_equal(2, parse(o, args7));
	const char *args8[] = {"serve",      "--config", "/nonexistent/fp.conf",
			       "--data-dir", "/x",       NULL};
	assert_int_equal(2, parse(o, args8));
	free(o);
}

/* expect_invalid: serve_opts_validate refuses o with a message holding want. */
static void expect_invalid(const struct serve_opts *o, const char *want)
{
	char err[512] = "";
	assert_int_equal(FP_EINVAL, serve_opts_validate(o, err, sizeof(err)));
	if (!strstr(err, want))
		fail_msg("serve_opts_validate: \"%s\", want it to hold \"%s\"", err, want);
}

static void test_validate(void **state)
{
	struct serve_opts *o = new_opts();
	o->data_dir = "/tmp";
	char err[512];
	assert_int_equal(0, serve_opts_validate(o, err, sizeof(err)));
	/* --boot-* without --boot-listen, --boot-timeout among them */
	o->boot_timeout = 60;
	expect_invalid(o, "the --boot-* options need --boot-listen");
	o->boot_timeout = 0;
	o->boot_url = "http://10.0.0.1:8080";
	expect_invalid(o, "the --boot-* options need --boot-listen");
	/* with --boot-listen: the boot service's own checks, named by option */
	o->boot_listen = "10.0.0.1:8080";
	assert_int_equal(0, serve_opts_validate(o, err, sizeof(err)));
	o->boot_timeout = 60;
	assert_int_equal(0, serve_opts_validate(o, err, sizeof(err)));
	o->boot_url = "ftp://10.0.0.1";
	expect_invalid(o, "--boot-url ftp://10.0.0.1: expected http://host:port");
	o->boot_url = NULL;
	o->boot_listen = "boot.example:8080";
	expect_invalid(o, "--boot-listen boot.example:8080: the host must be an IP address");
	o->boot_listen = "10.0.0.1:99999";
	expect_invalid(o, "--boot-listen 10.0.0.1:99999: bad port");
	o->boot_listen = "10.0.0.1:8080";
	o->boot_kernel = "../vmlinuz";
	expect_invalid(o, "--boot-kernel: ");
	o->boot_kernel = NULL;
	o->boot_kernel_args = "console=ttyS0 $x";
	expect_invalid(o, "--boot-kernel-args: printable ASCII");
	o->boot_kernel_args = NULL;
	o->boot_dnsmasq_pid = "/run/dnsmasq.pid";
	expect_invalid(o, "--boot-dnsmasq-pid needs --boot-dhcp-hosts");
	o->boot_dnsmasq_pid = NULL;
	/* the Slurm conf files */
	o->slurm_gres_conf = "/etc/slurm/gres.conf";
	expect_invalid(o, "need --slurm");
	o->slurm = 1;
	expect_invalid(o, "--slurm-gres-conf needs --slurm-nodes-conf");
	o->slurm_nodes_conf = "nodes.conf";
	expect_invalid(o, "--slurm-nodes-conf: \"nodes.conf\" is not an absolute path");
	o->slurm_nodes_conf = "/etc/slurm/nodes.conf";
	assert_int_equal(0, serve_opts_validate(o, err, sizeof(err)));
	free(o);
}

static void test_check(void **state)
{
	struct serve_opts *o = new_opts();
	o->data_dir = "/tmp";
	o->listen = "127.0.0.1:0";
	fflush(stdout);
	int saved = dup(1);
	FILE *null = freopen("/dev/null", "w", stdout);
	assert_non_null(null);
	assert_int_equal(0, serve_opts_check(o));
	o->data_dir = "/tmp/fp-serve-opts-not-made-by-check";
	assert_int_equal(0, serve_opts_check(o));
	assert_int_not_equal(0, access(o->data_dir, F_OK)); /* --check creates nothing */
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	saved = dup(2);
	null = freopen("/dev/null", "w", stderr);
	assert_non_null(null);
	o->data_dir = "/nonexistent-parent/data";
	assert_int_equal(2, serve_opts_check(o));
	o->data_dir = "/tmp";
	o->listen = "127.0.0.1:70000";
	assert_int_equal(2, serve_opts_check(o));
	o->listen = "nocolon";
	assert_int_equal(2, serve_opts_check(o));
	o->listen = "127.0.0.1:0";
	o->boot_timeout = 30; /* without --boot-listen */
	assert_int_equal(2, serve_opts_check(o));
	o->boot_timeout = 0;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	free(o);
}

/* packaging (issue 15): serve_opts_diff names what a reload changed, in table order: every
 * kind of value, a string set against NULL, and never the command-line-only options. */
static void test_diff(void **state)
{
	struct serve_opts *a = new_opts(), *b = new_opts();
	char err[512] = "";
	const char *names[SERVE_OPTS_MAX];
	assert_int_equal(0, serve_opts_diff(a, b, names, SERVE_OPTS_MAX));
	assert_int_equal(0,
			 load("data-dir /d\nlog-level info\nsite-qps 10\n", a, err, sizeof(err)));
	assert_int_equal(0, load("data-dir /d\nlog-level debug\nsite-qps 20\nbmc-timeout 45\n"
				 "sim-faults 7\nslurm\nstore sqlite:/x\n",
				 b, err, sizeof(err)));
	b->check = 1;     /* flag-only: never named */
	b->config = "/c"; /* flag-only */
	size_t n = serve_opts_diff(a, b, names, SERVE_OPTS_MAX);
	assert_int_equal(6, n);
	const char *want[] = {"sim-faults",  "site-qps", "log-level",
			      "bmc-timeout", "slurm",    "store"};
	for (size_t i = 0; i < n; i++)
		assert_string_equal(want[i], names[i]);
	assert_int_equal(2, serve_opts_diff(a, b, names, 2)); /* cut at max */
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_kind),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_flag_messages_unchanged),
		cmocka_unit_test(test_unknown_duplicate_flag_only),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_nothing_half_applies),
		cmocka_unit_test(test_flags_override_file),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_flag_keys),
		cmocka_unit_test(test_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
