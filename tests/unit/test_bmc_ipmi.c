/* layers: base core store driver engine */
/* test_bmc_ipmi.c - the ipmi driver against real OpenIPMI ipmi_sim BMCs started through
 * tests/peers/ipmi_sim/ipmisim.sh (fixed argv, posix_spawn): power round trips with the exact
 * chassis_control calls in order, boot flags, cycle/reset/soft, chassis status, the SEL entry the
 * peer is configured with, session reuse, the open-session-privilege quirk learned on first
 * contact, wrong password, a port where nothing listens, and a SIGSTOPped BMC. Skips when
 * ipmi_sim is not installed. Run from the repository root (make does); FP_SRCDIR overrides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "driver/bmc.h"
#include "driver/bmc_ipmi.h"
#include "engine/clock.h"

extern char **environ;

#define PASSWORD "fpPw-7Qx2kLm9"

struct peer {
	char dir[64];
	char address[32];
	int port;
	pid_t pid;
};

static struct fp_clock *clk;
static struct peer live; /* a copy of the running peer: teardown stops it when a test fails */
static int live_on;

static int have_ipmi_sim(void)
{
	return access("/usr/bin/ipmi_sim", X_OK) == 0 ||
	       access("/usr/local/bin/ipmi_sim", X_OK) == 0;
}

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && *s ? s : ".";
}

static int run_script(const char *verb, const char *dir)
{
	char script[512];
	snprintf(script, sizeof(script), "%s/tests/peers/ipmi_sim/ipmisim.sh", srcdir());
	char *argv[] = {"bash", script, (char *)verb, (char *)dir, NULL};
	pid_t pid;
	if (posix_spawn(&pid, "/bin/bash", NULL, NULL, argv, environ) != 0)
		return -1;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const struct peer *p, const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", p->dir, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return xstrdup("");
	char *buf = xcalloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void peer_start(struct peer *p)
{
	if (!have_ipmi_sim())
		skip();
	snprintf(p->dir, sizeof(p->dir), "/tmp/fp-ipmi-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	write_file(p->dir, "password", PASSWORD);
	assert_int_equal(run_script("start", p->dir), 0);
	char *port = slurp(p, "port"), *pid = slurp(p, "pid");
	p->port = (int)strtol(port, NULL, 10);
	p->pid = (pid_t)strtol(pid, NULL, 10);
	free(port);
	free(pid);
	assert_true(p->port > 0 && p->pid > 0);
	snprintf(p->address, sizeof(p->address), "127.0.0.1:%d", p->port);
	live = *p;
	live_on = 1;
}

static void peer_stop(struct peer *p)
{
	live_on = 0;
	assert_int_equal(run_script("stop", p->dir), 0);
	char *argv[] = {"rm", "-rf", p->dir, NULL};
	pid_t pid;
	if (posix_spawn(&pid, "/bin/rm", NULL, NULL, argv, environ) == 0)
		waitpid(pid, NULL, 0);
}

static void clear_calls(struct peer *p)
{
	write_file(p->dir, "calls.log", "");
}

static struct bmc_target target(const struct peer *p, struct bmc_observed *obs)
{
	return (struct bmc_target){.node = "n1",
				   .address = p->address,
				   .username = "admin",
				   .password = PASSWORD,
				   .cipher_suite = -1,
				   .observed = obs};
}

static int64_t in_ms(int64_t ms)
{
	return clock_now_ms(clk) + ms;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Waits (at most 10 s) until the machine's power file reads want; returns what it read last. */
static int wait_power_file(struct peer *p, int want)
{
	int got = -1;
	for (int i = 0; i < 100; i++) {
		char *s = slurp(p, "power");
		got = (int)strtol(s, NULL, 10);
		free(s);
		if (got == want)
			break;
		sleep_ms(100);
	}
	return got;
}

static void assert_calls(struct peer *p, const char *want)
{
	char *got = slurp(p, "calls.log");
	assert_string_equal(got, want);
	free(got);
}

/* bmc_power_get of t (10 s deadline) answers 0 and want; the driver's error is printed if not. */
static void power_is(struct bmc *b, const struct bmc_target *t, enum bmc_power want)
{
	char err[256] = "";
	enum bmc_power pw = BMC_POWER_UNKNOWN;
	int rc = bmc_power_get(b, t, in_ms(10000), &pw, err, sizeof(err));
	if (rc != 0)
		print_error("bmc_power_get: %s\n", err);
	assert_int_equal(rc, 0);
	assert_int_equal(pw, want);
}

/* bmc_power_set of action a on t (10 s deadline) answers 0; the driver's error is printed if
 * not. */
static void power_set_ok(struct bmc *b, const struct bmc_target *t, enum bmc_power_action a)
{
	char err[256] = "";
	int rc = bmc_power_set(b, t, in_ms(10000), a, err, sizeof(err));
	if (rc != 0)
		print_error("bmc_power_set %s: %s\n", bmc_action_name(a), err);
	assert_int_equal(rc, 0);
}

/* bmc_power_get of t is refused with FP_EINVAL and exactly want_err. */
static void power_get_refused(struct bmc *b, const struct bmc_target *t, const char *want_err)
{
	char err[256] = "";
	enum bmc_power pw;
	assert_int_equal(bmc_power_get(b, t, in_ms(1000), &pw, err, sizeof(err)), FP_EINVAL);
	assert_string_equal(err, want_err);
}

static void test_power_round_trip(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = target(&p, NULL);
	power_is(b, &t, BMC_POWER_OFF);
	power_set_ok(b, &t, BMC_ACTION_ON);
	power_is(b, &t, BMC_POWER_ON);
	power_set_ok(b, &t, BMC_ACTION_OFF);
	power_is(b, &t, BMC_POWER_OFF);
	assert_calls(&p, "get power\nset power 1\nget power\nset power 0\nget power\n");
	char *f = slurp(&p, "power");
	assert_string_equal(f, "0\n");
	free(f);
	bmc_free(b);
	peer_stop(&p);
}

static void test_boot_pxe_then_disk(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = target(&p, NULL);
	char err[256] = "";
	struct bmc_boot got;
	struct bmc_boot pxe = {BMC_BOOT_PXE, 0, BMC_BOOT_MODE_UNKNOWN};
	assert_int_equal(bmc_boot_set(b, &t, in_ms(10000), &pxe, err, sizeof(err)), 0);
	assert_int_equal(bmc_boot_get(b, &t, in_ms(10000), &got, err, sizeof(err)), 0);
	assert_int_equal(got.device, BMC_BOOT_PXE);
	/* ipmi_sim keeps only the device: the valid bit reads back clear, so persistent and the
	 * firmware mode are not believed (docs/driver-ipmi.md) */
	assert_int_equal(got.persistent, 0);
	assert_int_equal(got.mode, BMC_BOOT_MODE_UNKNOWN);
	char *f = slurp(&p, "boot");
	assert_string_equal(f, "pxe\n");
	free(f);
	struct bmc_boot disk = {BMC_BOOT_DISK, 1, BMC_BOOT_MODE_UEFI};
	assert_int_equal(bmc_boot_set(b, &t, in_ms(10000), &disk, err, sizeof(err)), 0);
	assert_int_equal(bmc_boot_get(b, &t, in_ms(10000), &got, err, sizeof(err)), 0);
	assert_int_equal(got.device, BMC_BOOT_DISK);
	/* mode unknown: read param 5 first (get boot), then set; with a mode: set only */
	assert_calls(&p, "get boot\nset boot pxe\nget boot\nset boot default\nget boot\n");
	bmc_free(b);
	peer_stop(&p);
}

static void test_cycle_reset_soft(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = target(&p, NULL);
	power_set_ok(b, &t, BMC_ACTION_ON);
	clear_calls(&p);
	/* cycle: off now, on again from ipmi_sim's own timer about a second later */
	power_set_ok(b, &t, BMC_ACTION_CYCLE);
	assert_int_equal(wait_power_file(&p, 1), 1);
	assert_calls(&p, "set power 0\nget power\nset power 1\n");
	clear_calls(&p);
	power_set_ok(b, &t, BMC_ACTION_RESET);
	assert_calls(&p, "set reset 1\n");
	clear_calls(&p);
	power_set_ok(b, &t, BMC_ACTION_SOFT);
	assert_calls(&p, "set shutdown 1\n");
	/* the machine shuts itself down a second later */
	assert_int_equal(wait_power_file(&p, 0), 0);
	power_is(b, &t, BMC_POWER_OFF);
	bmc_free(b);
	peer_stop(&p);
}

static void test_chassis_status(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = target(&p, NULL);
	char err[256] = "";
	power_set_ok(b, &t, BMC_ACTION_ON);
	json_t *cs = NULL;
	assert_int_equal(bmc_chassis_status(b, &t, in_ms(10000), &cs, err, sizeof(err)), 0);
	char *s = jsonx_dumps(cs);
	assert_string_equal(s, "{\"power\":\"on\",\"powerFault\":false,\"powerOverload\":false,"
			       "\"powerInterlock\":false,\"powerControlFault\":false,"
			       "\"powerRestorePolicy\":\"AlwaysOff\",\"intrusion\":false,"
			       "\"driveFault\":false,\"coolingFault\":false,\"health\":\"OK\"}");
	free(s);
	json_decref(cs);
	json_t *inv = NULL;
	assert_int_equal(bmc_inventory(b, &t, in_ms(10000), &inv, err, sizeof(err)), 0);
	/* sim.emu: mc_add 0x20 <device id 0> ... <fw 9> <fw 8> ... 0x1291 (MontaVista) 0xf02 */
	s = jsonx_dumps(inv);
	assert_string_equal(s, "{\"system\":{\"manufacturer\":\"MontaVista Software, Inc.\","
			       "\"manufacturerId\":4753,\"product\":\"0x0f02\",\"productId\":3842,"
			       "\"firmware\":\"9.08\",\"deviceId\":0,\"ipmiVersion\":\"2.0\"}}");
	free(s);
	json_decref(inv);
	bmc_free(b);
	peer_stop(&p);
}

static void test_sel_read(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = target(&p, NULL);
	char err[256] = "";
	json_t *sel = NULL;
	assert_int_equal(bmc_sel_read(b, &t, in_ms(10000), 10, &sel, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(sel), 1);
	json_t *e = json_array_get(sel, 0);
	assert_int_equal(json_integer_value(json_object_get(e, "id")), 1);
	assert_true(json_is_null(json_object_get(e, "timestamp"))); /* pre-init time stamp */
	assert_string_equal(jsonx_str(e, "sensorType"), "Temperature");
	assert_int_equal(json_integer_value(json_object_get(e, "sensorNumber")), 1);
	assert_string_equal(jsonx_str(e, "eventType"), "threshold");
	assert_string_equal(jsonx_str(e, "message"),
			    "Temperature #1: Upper Non-recoverable - going low | "
			    "Sensor Reading = 00h | Threshold = 00h");
	/* record id 1, type 0x02; generator 0x20, EvM rev 4, sensor type 1, number 1, event
	 * type 1, data 0x5a 00 00 (the bytes in sim.emu); bytes 3-6 are ipmi_sim's time stamp */
	const char *raw = jsonx_str(e, "raw");
	assert_int_equal(strlen(raw), 32);
	assert_memory_equal(raw, "010002", 6);
	assert_string_equal(raw + 14, "200004010101"
				      "5a0000");
	json_decref(sel);
	/* max_entries 0: nothing */
	assert_int_equal(bmc_sel_read(b, &t, in_ms(10000), 0, &sel, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(sel), 0);
	json_decref(sel);
	bmc_free(b);
	peer_stop(&p);
}

static void test_session_reuse(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = target(&p, NULL);
	char err[256] = "";
	enum bmc_power pw;
	struct bmc_boot bt;
	for (int i = 0; i < 3; i++)
		assert_int_equal(bmc_power_get(b, &t, in_ms(10000), &pw, err, sizeof(err)), 0);
	assert_int_equal(bmc_boot_get(b, &t, in_ms(10000), &bt, err, sizeof(err)), 0);
	power_set_ok(b, &t, BMC_ACTION_ON);
	struct bmc_ipmi_stats st;
	bmc_ipmi_stats(b, &st);
	assert_int_equal(st.sessions_opened, 1);
	assert_int_equal(st.sessions_open, 1);
	assert_int_equal(st.commands, 5);
	/* a deadline shorter than the session's command timeout: a new session that fits */
	assert_int_equal(bmc_power_get(b, &t, in_ms(1500), &pw, err, sizeof(err)), 0);
	bmc_ipmi_stats(b, &st);
	assert_int_equal(st.sessions_opened, 2);
	assert_int_equal(st.sessions_open, 1);
	bmc_free(b);
	peer_stop(&p);
}

static void test_quirk_learned(void **state)
{
	struct peer p;
	peer_start(&p);
	char err[256] = "";
	enum bmc_power pw;
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_observed obs = {0};
	struct bmc_target t = target(&p, &obs);
	assert_int_equal(bmc_power_get(b, &t, in_ms(10000), &pw, err, sizeof(err)), 0);
	assert_int_equal(obs.learned_quirks, BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE);
	bmc_free(b);
	/* given in the spec (or learned before): nothing to learn */
	b = bmc_ipmi_new(clk);
	memset(&obs, 0, sizeof(obs));
	t.quirks = BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE;
	assert_int_equal(bmc_power_get(b, &t, in_ms(10000), &pw, err, sizeof(err)), 0);
	assert_int_equal(obs.learned_quirks, 0);
	struct bmc_ipmi_stats st;
	bmc_ipmi_stats(b, &st);
	assert_int_equal(st.sessions_opened, 1);
	bmc_free(b);
	peer_stop(&p);
}

static void test_wrong_password(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = target(&p, NULL);
	t.password = "WrongPw-Zq81";
	char err[256] = "";
	enum bmc_power pw;
	assert_int_equal(bmc_power_get(b, &t, in_ms(10000), &pw, err, sizeof(err)), FP_EAUTH);
	assert_non_null(strstr(err, "admin"));
	assert_null(strstr(err, "WrongPw-Zq81"));
	assert_null(strstr(err, PASSWORD));
	bmc_free(b);
	peer_stop(&p);
}

/* The H2 question for IPMI: two targets on the same BMC and user, the second with a wrong
 * password. The driver keys sessions by address + user but reopens when the password differs,
 * so the second is refused (ipmi_sim rejects its RAKP exchange) and the first still works, on
 * a session of its own again. */
static void test_same_user_wrong_password(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target good = target(&p, NULL), bad = target(&p, NULL);
	bad.node = "n2";
	bad.password = "WrongPass-123";
	char err[256] = "";
	enum bmc_power pw;
	power_is(b, &good, BMC_POWER_OFF);
	assert_int_equal(bmc_power_get(b, &bad, in_ms(10000), &pw, err, sizeof(err)), FP_EAUTH);
	char want[160];
	snprintf(want, sizeof(want),
		 "BMC %s refused the user name or password for user \"admin\" (password invalid)",
		 p.address);
	assert_string_equal(err, want);
	struct bmc_ipmi_stats st;
	bmc_ipmi_stats(b, &st);
	assert_int_equal(st.sessions_opened, 1);
	assert_int_equal(st.sessions_open, 0); /* the good session was closed to try the bad one */
	power_is(b, &good, BMC_POWER_OFF);
	bmc_ipmi_stats(b, &st);
	assert_int_equal(st.sessions_opened, 2);
	assert_int_equal(st.sessions_open, 1);
	/* only the two good reads reached the machine */
	assert_calls(&p, "get power\nget power\n");
	bmc_free(b);
	peer_stop(&p);
}

static void validate_is(const struct node_bmc *spec, int want_rc, const char *want_field,
			const char *want_err)
{
	const char *field = "unset";
	char err[256] = "";
	assert_int_equal(bmc_spec_validate(spec, &field, err, sizeof(err)), want_rc);
	if (want_rc == 0) {
		assert_null(field);
		return;
	}
	assert_string_equal(field, want_field);
	assert_string_equal(err, want_err);
}

/* bmc_spec_validate for ipmi: the call-time checks (same code) and quirks of other drivers. */
static void test_validate_spec(void **state)
{
	struct node_bmc s = {.driver = "ipmi",
			     .address = "10.0.0.1:623",
			     .username = "admin",
			     .password = "12345678901234567890",
			     .cipher_suite = 17,
			     .tls_verify = 1,
			     .quirks = BMC_QUIRK_IPMI_INTEL_2_0};
	validate_is(&s, 0, NULL, NULL);
	s.address = "[::1]:623";
	validate_is(
		&s, FP_EINVAL, "spec.bmc.address",
		"spec.bmc.address: IPv6 addresses are not supported by the ipmi driver; want an "
		"IPv4 address or DNS name, optionally with :port");
	s.address = "bmc.example:+623";
	validate_is(&s, FP_EINVAL, "spec.bmc.address",
		    "spec.bmc.address: the port must be a number 1-65535");
	s.address = "bmc.example";
	s.username = "adminadminadminadmin";
	validate_is(&s, FP_EINVAL, "spec.bmc.username",
		    "spec.bmc.username: longer than 16 bytes (IPMI 2.0 limit)");
	s.username = "r\xc3\xb6ot";
	validate_is(&s, FP_EINVAL, "spec.bmc.username",
		    "spec.bmc.username: byte 0xc3 at offset 1 is not ASCII (IPMI user names are "
		    "ASCII)");
	s.username = "admin";
	s.password = "pw\x01";
	validate_is(&s, FP_EINVAL, "spec.bmc.password",
		    "spec.bmc.password: has a control character");
	s.password = NULL; /* a password_file is read at call time */
	s.cipher_suite = 4;
	validate_is(
		&s, FP_EINVAL, "spec.bmc.cipher_suite",
		"spec.bmc.cipher_suite: 4 is not one FreeIPMI supports (0-3, 6-8, 11-12, 15-17; "
		"ipmi_sim offers only 3)");
	s.cipher_suite = -1;
	validate_is(&s, FP_EINVAL, "spec.bmc.password",
		    "spec.bmc.password: required for the ipmi driver (or spec.bmc.password_file)");
	s.password = "";
	validate_is(&s, FP_EINVAL, "spec.bmc.password",
		    "spec.bmc.password: empty (anonymous IPMI logins are not supported)");
	s.password = NULL;
	s.password_file = "r01n03";
	s.username = "";
	validate_is(
		&s, FP_EINVAL, "spec.bmc.username",
		"spec.bmc.username: required for the ipmi driver (anonymous IPMI logins are not "
		"supported)");
	s.username = "admin";
	s.quirks = BMC_QUIRK_REDFISH_BASIC_AUTH;
	validate_is(&s, FP_EINVAL, "spec.bmc.quirks",
		    "spec.bmc.quirks: \"redfish_basic_auth\" is not an ipmi quirk (the ipmi driver "
		    "takes only ipmi_* quirks)");
	s.quirks = 0;
	validate_is(&s, 0, NULL, NULL);
	/* Redfish-only fields, each named */
	s.ca_file = "ca.pem";
	validate_is(&s, FP_EINVAL, "spec.bmc.ca_file",
		    "spec.bmc.ca_file: a redfish setting; the ipmi driver has none");
	s.ca_file = NULL;
	s.tls_verify = 0;
	validate_is(&s, FP_EINVAL, "spec.bmc.tls_verify",
		    "spec.bmc.tls_verify: a redfish setting; the ipmi driver has none (IPMI is not "
		    "TLS)");
	s.tls_verify = 1;
	s.system = "abc";
	validate_is(&s, FP_EINVAL, "spec.bmc.system",
		    "spec.bmc.system: a redfish setting; the ipmi driver has none");
	s.system = NULL;
	validate_is(&s, 0, NULL, NULL);
}

static int free_udp_port(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void test_nothing_listens(void **state)
{
	struct bmc *b = bmc_ipmi_new(clk);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_udp_port());
	struct bmc_target t = {.node = "n1",
			       .address = addr,
			       .username = "admin",
			       .password = PASSWORD,
			       .cipher_suite = 3};
	char err[256] = "";
	enum bmc_power pw;
	int rc = bmc_power_get(b, &t, in_ms(2000), &pw, err, sizeof(err));
	assert_true(rc == FP_ETIMEDOUT || rc == FP_EIO);
	assert_null(strstr(err, PASSWORD));
	bmc_free(b);
}

static void test_stopped_bmc(void **state)
{
	struct peer p;
	peer_start(&p);
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = target(&p, NULL);
	char err[256] = "";
	enum bmc_power pw;
	assert_int_equal(bmc_power_get(b, &t, in_ms(10000), &pw, err, sizeof(err)), 0);
	assert_int_equal(kill(p.pid, SIGSTOP), 0);
	/* the open session's command timeout does not fit in 2 s: reopened, and times out */
	assert_int_equal(bmc_power_get(b, &t, in_ms(2000), &pw, err, sizeof(err)), FP_ETIMEDOUT);
	/* on the session kept open across calls, too */
	assert_int_equal(bmc_power_get(b, &t, in_ms(3000), &pw, err, sizeof(err)), FP_ETIMEDOUT);
	assert_int_equal(kill(p.pid, SIGCONT), 0);
	power_is(b, &t, BMC_POWER_OFF);
	bmc_free(b);
	peer_stop(&p);
}

static void test_bad_targets(void **state)
{
	struct bmc *b = bmc_ipmi_new(clk);
	struct bmc_target t = {.node = "n1",
			       .address = "127.0.0.1:abc",
			       .username = "admin",
			       .password = PASSWORD,
			       .cipher_suite = -1};
	power_get_refused(b, &t, "spec.bmc.address: the port must be a number 1-65535");
	t.address = "bmc one";
	power_get_refused(b, &t,
			  "spec.bmc.address: byte 0x20 at offset 3 is not allowed in a host "
			  "name or IPv4 address");
	t.address = NULL;
	power_get_refused(b, &t,
			  "spec.bmc.address: required for the ipmi driver (host or host:port)");
	t.address = "127.0.0.1:70000";
	power_get_refused(b, &t, "spec.bmc.address: the port must be a number 1-65535");
	t.address = "127.0.0.1";
	t.cipher_suite = 5;
	power_get_refused(b, &t,
			  "spec.bmc.cipher_suite: 5 is not one FreeIPMI supports (0-3, 6-8, "
			  "11-12, 15-17; ipmi_sim offers only 3)");
	t.cipher_suite = 3;
	t.password = "123456789012345678901";
	power_get_refused(b, &t, "spec.bmc.password: longer than 20 bytes (IPMI 2.0 limit)");
	/* M9: a non-ASCII byte is named in hex, never copied (half a UTF-8 character) */
	t.password = PASSWORD;
	t.address = "\xc3\xa9.example";
	power_get_refused(b, &t,
			  "spec.bmc.address: byte 0xc3 at offset 0 is not allowed in a host "
			  "name or IPv4 address");
	/* L2: a URL is said to be one, not "the port must be a number" */
	t.address = "http://10.0.0.1";
	power_get_refused(b, &t,
			  "spec.bmc.address: a URL is not an IPMI address; want host or "
			  "host:port (URLs are for the redfish driver)");
	assert_int_equal(bmc_caps(b),
			 BMC_CAP_POWER | BMC_CAP_BOOT_DEVICE | BMC_CAP_INVENTORY | BMC_CAP_SEL);
	bmc_free(b);
}

static int teardown(void **state)
{
	if (live_on) {
		kill(live.pid, SIGCONT);
		peer_stop(&live);
	}
	return 0;
}

#define T(f) cmocka_unit_test_teardown(f, teardown)

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	clk = clock_real_new();
	const struct CMUnitTest tests[] = {
		T(test_bad_targets),        T(test_power_round_trip),
		T(test_boot_pxe_then_disk), T(test_cycle_reset_soft),
		T(test_chassis_status),     T(test_sel_read),
		T(test_session_reuse),      T(test_quirk_learned),
		T(test_wrong_password),     T(test_same_user_wrong_password),
		T(test_validate_spec),      T(test_nothing_listens),
		T(test_stopped_bmc),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	clock_free(clk);
	return rc;
}
