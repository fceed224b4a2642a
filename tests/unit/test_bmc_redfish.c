/* layers: base core store driver engine */
/* test_bmc_redfish.c - the Redfish driver against the real peer: tests/peers/redfish/server.py
 * serving the DMTF public-rackmount1 and public-bladed mockups with state. Each test starts its
 * own server (fixed argv, posix_spawn), drives the driver, and asserts exact results and the
 * exact requests from the server's log (method, path, status, auth, ResetType, If-Match, PATCH
 * body). One test per fault knob. sushy (python3-sushy) checks the same server independently.
 * Run from the repository root (make does); FP_SRCDIR overrides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
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
#include "driver/bmc.h"
#include "driver/bmc_redfish.h"
#include "driver/bmc_redfish_parse.h"
#include "engine/clock.h"

extern char **environ;

#define PASSWORD "s3cret-Redfish-pw"
#define RACK_SYS "/redfish/v1/Systems/437XR1138R2"
#define RACK_RESET RACK_SYS "/Actions/ComputerSystem.Reset"
#define BLADE_SYS "/redfish/v1/Systems/529QB9452R6"

struct peer {
	pid_t pid;
	char dir[64];
	char url[64];
	char log[128];
	char pwfile[128];
};

struct fx {
	struct fp_clock *clock;
	struct bmc *b;
	struct peer p;
	struct bmc_observed obs;
	struct bmc_target t;
	char err[512];
};

static const char *srcdir(void)
{
	const char *s = getenv("FP_SRCDIR");
	return s && s[0] ? s : ".";
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return xstrdup("");
	char *s = NULL;
	size_t n = 0, cap = 0;
	int ch;
	while ((ch = fgetc(f)) != EOF) {
		if (n + 2 > cap) {
			cap = cap ? cap * 2 : 4096;
			s = xrealloc(s, cap);
		}
		s[n++] = (char)ch;
	}
	fclose(f);
	if (!s)
		return xstrdup("");
	s[n] = '\0';
	return s;
}

static void peer_start(struct peer *p, const char *bundle)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->dir, sizeof(p->dir), "/tmp/fp-rf-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->log, sizeof(p->log), "%s/requests.log", p->dir);
	snprintf(p->pwfile, sizeof(p->pwfile), "%s/password", p->dir);
	FILE *f = fopen(p->pwfile, "w");
	assert_non_null(f);
	fputs(PASSWORD "\n", f);
	fclose(f);
	char script[512], data[512], portfile[128];
	snprintf(script, sizeof(script), "%s/tests/peers/redfish/server.py", srcdir());
	snprintf(data, sizeof(data), "%s/tests/data/redfish/%s", srcdir(), bundle);
	snprintf(portfile, sizeof(portfile), "%s/port", p->dir);
	char *argv[] = {"/usr/bin/python3", script,    "--bundle", data,     "--port-file",
			portfile,           "--log",   p->log,     "--user", "admin",
			"--password-file",  p->pwfile, NULL};
	assert_int_equal(posix_spawn(&p->pid, argv[0], NULL, NULL, argv, environ), 0);
	/* wait for the port file (written once the socket listens) */
	for (int i = 0; i < 200; i++) {
		struct stat st;
		if (stat(portfile, &st) == 0)
			break;
		sleep_ms(50);
	}
	char *port = slurp(portfile);
	assert_true(atol(port) > 0);
	snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%ld", strtol(port, NULL, 10));
	free(port);
}

static void peer_stop(struct peer *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
	if (getenv("FP_RF_KEEP")) { /* debugging: keep the request log */
		print_message("kept %s\n", p->dir);
		return;
	}
	char cmd_path[160];
	const char *files[] = {"requests.log", "password", "port"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(cmd_path, sizeof(cmd_path), "%s/%s", p->dir, files[i]);
		unlink(cmd_path);
	}
	rmdir(p->dir);
}

static size_t discard(char *d, size_t s, size_t n, void *a)
{
	(void)d;
	(void)a;
	return s * n;
}

/* POST /__control with a JSON object of knobs. */
static void peer_control(struct peer *p, const char *json)
{
	CURL *h = curl_easy_init();
	char url[128];
	snprintf(url, sizeof(url), "%s/__control", p->url);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	long st = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(h);
	assert_int_equal(st, 200);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

/* Position of the first line starting with prefix, or -1. */
static long line_at(const char *log, const char *prefix)
{
	size_t pl = strlen(prefix);
	long i = 0;
	for (const char *s = log; *s; i++) {
		if (strncmp(s, prefix, pl) == 0)
			return i;
		const char *nl = strchr(s, '\n');
		if (!nl)
			break;
		s = nl + 1;
	}
	return -1;
}

/* The line at index i (0-based), or "". Borrowed from log. */
static const char *nth_line(const char *log, long i)
{
	const char *s = log;
	for (; i > 0 && s; i--) {
		s = strchr(s, '\n');
		if (s)
			s++;
	}
	return s ? s : "";
}

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int64_t in_ms(struct fx *f, int64_t ms)
{
	return clock_now_ms(f->clock) + ms;
}

static void fx_open(struct fx *f, const char *bundle, const char *system)
{
	memset(f, 0, sizeof(*f));
	peer_start(&f->p, bundle);
	f->clock = clock_real_new();
	f->b = bmc_redfish_new(f->clock);
	f->t = (struct bmc_target){.node = "n1",
				   .address = f->p.url,
				   .username = "admin",
				   .password = PASSWORD,
				   .cipher_suite = -1,
				   .tls_verify = 1,
				   .system = system,
				   .observed = &f->obs};
}

static int setup_rack(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	fx_open(f, "public-rackmount1", NULL);
	*state = f;
	return 0;
}

static int setup_blade(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	fx_open(f, "public-bladed", "529QB9452R6");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	if (f->b)
		bmc_free(f->b);
	f->b = NULL;
	if (f->clock)
		clock_free(f->clock);
	f->clock = NULL;
	peer_stop(&f->p);
	free(f);
	return 0;
}

static char *peer_log(struct fx *f)
{
	return slurp(f->p.log);
}

static enum bmc_power power(struct fx *f)
{
	enum bmc_power pw = BMC_POWER_UNKNOWN;
	memset(&f->obs, 0, sizeof(f->obs));
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 0);
	return pw;
}

static void set_power(struct fx *f, enum bmc_power_action a)
{
	int rc = bmc_power_set(f->b, &f->t, in_ms(f, 10000), a, f->err, sizeof(f->err));
	if (rc != 0)
		print_error("power_set: %s\n", f->err);
	assert_int_equal(rc, 0);
}

/* ---- the calls, public-rackmount1 ---- */

static void test_power_round_trip_one_session(void **state)
{
	struct fx *f = *state;
	assert_int_equal(power(f), BMC_POWER_ON);
	set_power(f, BMC_ACTION_OFF);
	assert_int_equal(power(f), BMC_POWER_OFF);
	set_power(f, BMC_ACTION_ON);
	assert_int_equal(power(f), BMC_POWER_ON);
	char *log = peer_log(f);
	assert_int_equal(count(log, "POST " RACK_RESET " 204 auth=session ResetType=ForceOff\n"),
			 1);
	assert_int_equal(count(log, "POST " RACK_RESET " 204 auth=session ResetType=On\n"), 1);
	assert_int_equal(count(log, "POST /redfish/v1/SessionService/Sessions 201"), 1);
	assert_int_equal(count(log, "GET /redfish/v1/ 200"), 1);
	assert_int_equal(count(log, "auth=basic"), 0);
	assert_true(line_at(log, "POST " RACK_RESET " 204 auth=session ResetType=ForceOff") <
		    line_at(log, "POST " RACK_RESET " 204 auth=session ResetType=On"));
	free(log);
	/* free ends the session */
	bmc_free(f->b);
	f->b = NULL;
	log = peer_log(f);
	assert_int_equal(count(log, "DELETE /redfish/v1/SessionService/Sessions/"), 1);
	assert_int_equal(count(log, " 204 auth=session\n"), 1); /* only the DELETE ends so */
	free(log);
}

static void test_reset_type_mapping(void **state)
{
	struct fx *f = *state;
	set_power(f, BMC_ACTION_SOFT);  /* on -> GracefulShutdown */
	set_power(f, BMC_ACTION_CYCLE); /* off, no PowerCycle -> On */
	set_power(f, BMC_ACTION_CYCLE); /* on, no PowerCycle -> ForceRestart */
	set_power(f, BMC_ACTION_RESET); /* ForceRestart */
	char *log = peer_log(f);
	long a = line_at(log, "POST " RACK_RESET " 204 auth=session ResetType=GracefulShutdown");
	long b = line_at(log, "POST " RACK_RESET " 204 auth=session ResetType=On");
	long c = line_at(log, "POST " RACK_RESET " 204 auth=session ResetType=ForceRestart");
	assert_true(a >= 0 && b > a && c > b);
	assert_int_equal(count(log, "ResetType=ForceRestart"), 2);
	assert_int_equal(count(log, "ResetType=PowerCycle"), 0);
	free(log);
	assert_int_equal(power(f), BMC_POWER_ON);
}

static void test_boot_if_match_and_read_back(void **state)
{
	struct fx *f = *state;
	struct bmc_boot want = {BMC_BOOT_PXE, 1, BMC_BOOT_MODE_UEFI}, got;
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(bmc_boot_get(f->b, &f->t, in_ms(f, 10000), &got, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(got.device, BMC_BOOT_PXE);
	assert_int_equal(got.persistent, 1);
	assert_int_equal(got.mode, BMC_BOOT_MODE_UEFI);
	want = (struct bmc_boot){BMC_BOOT_DISK, 0, BMC_BOOT_MODE_LEGACY};
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(bmc_boot_get(f->b, &f->t, in_ms(f, 10000), &got, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(got.device, BMC_BOOT_DISK);
	assert_int_equal(got.persistent, 0);
	assert_int_equal(got.mode, BMC_BOOT_MODE_LEGACY);
	char *log = peer_log(f);
	/* the ETag the GET just before saw, sent back (server ETags are W/"<n>") */
	assert_int_equal(count(log, "PATCH " RACK_SYS " 200 auth=session if-match=W/\""), 2);
	assert_int_equal(count(log,
			       "body={\"Boot\": {\"BootSourceOverrideEnabled\": \"Continuous\", "
			       "\"BootSourceOverrideMode\": \"UEFI\", "
			       "\"BootSourceOverrideTarget\": \"Pxe\"}}\n"),
			 1);
	assert_int_equal(count(log, "body={\"Boot\": {\"BootSourceOverrideEnabled\": \"Once\", "
				    "\"BootSourceOverrideMode\": \"Legacy\", "
				    "\"BootSourceOverrideTarget\": \"Hdd\"}}\n"),
			 1);
	free(log);
}

static void test_boot_412_retried_once(void **state)
{
	struct fx *f = *state;
	struct bmc_boot want = {BMC_BOOT_PXE, 0, BMC_BOOT_MODE_UEFI};
	peer_control(&f->p, "{\"stale_etag_patches\": 1}");
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	char *log = peer_log(f);
	long p412 = line_at(log, "PATCH " RACK_SYS " 412 auth=session if-match=");
	long p200 = line_at(log, "PATCH " RACK_SYS " 200 auth=session if-match=");
	assert_true(p412 >= 0 && p200 == p412 + 2);
	assert_int_equal(line_at(log, "GET " RACK_SYS " 200"), p412 - 1);
	free(log);
	/* twice stale: the driver gives up after one retry */
	peer_control(&f->p, "{\"stale_etag_patches\": 2}");
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 FP_ECONFLICT);
	log = peer_log(f);
	assert_int_equal(count(log, "PATCH " RACK_SYS " 412"), 3);
	free(log);
}

static void test_quirk_no_if_match(void **state)
{
	struct fx *f = *state;
	f->t.quirks = BMC_QUIRK_REDFISH_NO_IF_MATCH;
	struct bmc_boot want = {BMC_BOOT_PXE, 0, BMC_BOOT_MODE_UNKNOWN};
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	char *log = peer_log(f);
	/* Mode left as is when the caller does not say */
	assert_int_equal(count(log, "PATCH " RACK_SYS " 200 auth=session body={\"Boot\": "
				    "{\"BootSourceOverrideEnabled\": \"Once\", "
				    "\"BootSourceOverrideTarget\": \"Pxe\"}}\n"),
			 1);
	free(log);
}

static void test_quirk_basic_auth(void **state)
{
	struct fx *f = *state;
	f->t.quirks = BMC_QUIRK_REDFISH_BASIC_AUTH;
	assert_int_equal(power(f), BMC_POWER_ON);
	set_power(f, BMC_ACTION_OFF);
	char *log = peer_log(f);
	assert_int_equal(count(log, "SessionService/Sessions"), 0);
	assert_int_equal(count(log, "auth=session"), 0);
	assert_int_equal(count(log, "POST " RACK_RESET " 204 auth=basic ResetType=ForceOff\n"), 1);
	free(log);
}

static void test_inventory(void **state)
{
	struct fx *f = *state;
	json_t *inv = NULL;
	assert_int_equal(bmc_inventory(f->b, &f->t, in_ms(f, 10000), &inv, f->err, sizeof(f->err)),
			 0);
	char *s = json_dumps(inv, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s, "{\"cpu\":{\"model\":\"Multi-Core Intel(R) Xeon(R) processor 7xxx "
			       "Series\",\"sockets\":2},\"gpus\":[],\"memoryGiB\":96,\"system\":"
			       "{\"id\":\"437XR1138R2\",\"manufacturer\":\"Contoso\",\"model\":"
			       "\"3500\",\"serialNumber\":\"437XR1138R2\"}}");
	free(s);
	json_decref(inv);
	peer_control(&f->p, "{\"gpus\": 2}");
	assert_int_equal(bmc_inventory(f->b, &f->t, in_ms(f, 10000), &inv, f->err, sizeof(f->err)),
			 0);
	s = json_dumps(json_object_get(inv, "gpus"), JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s,
			    "[{\"id\":\"GPU0\",\"index\":0,\"manufacturer\":\"NVIDIA\",\"model\":"
			    "\"H100 80GB HBM3\",\"serial\":\"GPU-SN-0000\"},{\"id\":\"GPU1\","
			    "\"index\":1,\"manufacturer\":\"NVIDIA\",\"model\":\"H100 80GB HBM3\","
			    "\"serial\":\"GPU-SN-0001\"}]");
	free(s);
	json_decref(inv);
}

static void test_chassis_status_and_sel(void **state)
{
	struct fx *f = *state;
	json_t *o = NULL;
	assert_int_equal(bmc_chassis_status(f->b, &f->t, in_ms(f, 10000), &o, f->err,
					    sizeof(f->err)),
			 0);
	char *s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s, "{\"chassis\":\"1U\",\"health\":\"OK\",\"power\":\"on\"}");
	free(s);
	json_decref(o);
	assert_int_equal(bmc_sel_read(f->b, &f->t, in_ms(f, 10000), 10, &o, f->err, sizeof(f->err)),
			 0);
	s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(
		s, "[{\"eventType\":\"Upper Critical - going high\",\"id\":1,"
		   "\"message\":\"Temperature threshold exceeded\",\"sensorNumber\":1,"
		   "\"sensorType\":\"Temperature\",\"timestamp\":\"2012-03-07T14:44:00Z\"},"
		   "{\"eventType\":\"Upper Critical - going high\",\"id\":2,"
		   "\"message\":\"Temperature threshold exceeded\",\"sensorNumber\":2,"
		   "\"sensorType\":\"Temperature\",\"timestamp\":\"2012-03-07T14:45:00Z\"}]");
	free(s);
	json_decref(o);
	/* bounded: the newest one only */
	assert_int_equal(bmc_sel_read(f->b, &f->t, in_ms(f, 10000), 1, &o, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(json_array_size(o), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(o, 0), "id")), 2);
	json_decref(o);
}

static void test_firmware_update(void **state)
{
	struct fx *f = *state;
	json_t *o = NULL;
	struct bmc_firmware_req req = {.image_uri = "http://10.0.0.1/bios.bin",
				       .transfer_protocol = "HTTP"};
	assert_int_equal(bmc_firmware_update(f->b, &f->t, in_ms(f, 20000), &req, &o, f->err,
					     sizeof(f->err)),
			 0);
	char *s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s, "{\"messages\":[\"done\"],\"percent\":100,\"state\":\"Completed\","
			       "\"task\":\"/redfish/v1/TaskService/Tasks/fp1\"}");
	free(s);
	json_decref(o);
	char *log = peer_log(f);
	assert_int_equal(count(log,
			       "POST /redfish/v1/UpdateService/Actions/UpdateService."
			       "SimpleUpdate 202 auth=session ImageURI=http://10.0.0.1/bios.bin "
			       "TransferProtocol=HTTP\n"),
			 1);
	assert_int_equal(count(log, "GET /redfish/v1/TaskService/TaskMonitors/fp1 202"), 1);
	assert_int_equal(count(log, "GET /redfish/v1/TaskService/TaskMonitors/fp1 200"), 1);
	free(log);
	/* a protocol the BMC does not list: refused before anything is sent */
	req.transfer_protocol = "GOPHER";
	assert_int_equal(bmc_firmware_update(f->b, &f->t, in_ms(f, 20000), &req, &o, f->err,
					     sizeof(f->err)),
			 FP_EINVAL);
	assert_null(o);
	assert_string_equal(f->err, "TransferProtocol GOPHER is not allowed by the BMC (FTP, SFTP, "
				    "HTTP, HTTPS, SCP, TFTP)");
}

static void test_bad_password_and_addresses(void **state)
{
	struct fx *f = *state;
	enum bmc_power pw;
	f->t.password = "wrong-password";
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 FP_EAUTH);
	assert_null(strstr(f->err, "wrong-password"));
	assert_non_null(strstr(f->err, "HTTP 401"));
	f->t.password = PASSWORD;
	static const struct {
		const char *addr, *err;
	} bad[] = {
		{"127.0.0.1:443", "spec.bmc.address \"127.0.0.1:443\" is not a URL: want "
				  "http://host[:port] or https://host[:port]"},
		{"http://", "spec.bmc.address \"http://\" has no host"},
		{"https://bmc:99999",
		 "spec.bmc.address \"https://bmc:99999\": port must be 1-65535"},
		{"http://admin:pw@bmc", "spec.bmc.address: user info (\"user:password@\") is not "
					"allowed in the URL; use spec.bmc.username and "
					"spec.bmc.password"},
		{"http://bmc/redfish",
		 "spec.bmc.address \"http://bmc/redfish\": '/' at offset 10; "
		 "want only scheme://host[:port] (no path, query or fragment)"},
		{"http://\xc3\xa9.example",
		 "spec.bmc.address \"http://??.example\": character 0xc3 "
		 "at offset 7 is not allowed in a host"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f->t.address = bad[i].addr;
		assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 1000), &pw, f->err,
					       sizeof(f->err)),
				 FP_EINVAL);
		assert_string_equal(f->err, bad[i].err);
	}
	/* nothing listens on port 1: an I/O error, not a hang */
	f->t.address = "http://127.0.0.1:1";
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 5000), &pw, f->err, sizeof(f->err)),
			 FP_EIO);
	f->t.address = f->p.url;
}

/* H2: two targets on the same BMC and user, the second with a wrong password: the second logs
 * in itself and is refused (the server log shows its 401 login); the first keeps its session. */
static void test_wrong_password_gets_own_session(void **state)
{
	struct fx *f = *state;
	assert_int_equal(power(f), BMC_POWER_ON);
	struct bmc_target bad = f->t;
	bad.node = "n2";
	bad.password = "WrongPass-123";
	enum bmc_power pw = BMC_POWER_UNKNOWN;
	assert_int_equal(bmc_power_get(f->b, &bad, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 FP_EAUTH);
	assert_int_equal(pw, BMC_POWER_UNKNOWN);
	char want[256];
	snprintf(want, sizeof(want), "%s: session login refused (HTTP 401) for user admin",
		 f->p.url);
	assert_string_equal(f->err, want);
	/* the first still works, on its first session */
	assert_int_equal(power(f), BMC_POWER_ON);
	char *log = peer_log(f);
	assert_int_equal(count(log, "POST /redfish/v1/SessionService/Sessions 201"), 1);
	assert_int_equal(count(log, "POST /redfish/v1/SessionService/Sessions 401 auth=none"), 1);
	assert_int_equal(count(log, "GET " RACK_SYS " 200 auth=session"), 2);
	assert_int_equal(count(log, "WrongPass-123"), 0);
	assert_int_equal(count(log, " 401 auth=session"), 0);
	free(log);
	/* the wrong one again: refused again, with a new login, never the first's session */
	assert_int_equal(bmc_power_get(f->b, &bad, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 FP_EAUTH);
	log = peer_log(f);
	assert_int_equal(count(log, "POST /redfish/v1/SessionService/Sessions 401 auth=none"), 2);
	assert_int_equal(count(log, "GET " RACK_SYS " 200 auth=session"), 2);
	free(log);
	/* a node whose password changes to the right one: its own session too */
	bad.password = PASSWORD;
	assert_int_equal(bmc_power_get(f->b, &bad, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(pw, BMC_POWER_ON);
	log = peer_log(f);
	assert_int_equal(count(log, "POST /redfish/v1/SessionService/Sessions 201"), 1);
	free(log);
}

static void validate_is(const char *json, int want_rc, const char *want_field, const char *want_err)
{
	json_error_t je;
	json_t *bmc = json_loads(json, 0, &je);
	assert_non_null(bmc);
	struct node_bmc spec = {.cipher_suite = -1, .tls_verify = 1};
	spec.driver = (char *)jsonx_str(bmc, "driver");
	spec.address = (char *)jsonx_str(bmc, "address");
	spec.username = (char *)jsonx_str(bmc, "username");
	spec.password = (char *)jsonx_str(bmc, "password");
	if (json_object_get(bmc, "cipher_suite"))
		spec.cipher_suite = (int)json_integer_value(json_object_get(bmc, "cipher_suite"));
	const char *q = jsonx_str(bmc, "quirk");
	if (q)
		assert_int_equal(bmc_quirk_parse(q, &spec.quirks), 0);
	const char *field = "unset";
	char err[256] = "";
	assert_int_equal(bmc_spec_validate(&spec, &field, err, sizeof(err)), want_rc);
	if (want_rc == 0) {
		assert_null(field);
	} else {
		assert_string_equal(field, want_field);
		assert_string_equal(err, want_err);
	}
	json_decref(bmc);
}

/* bmc_spec_validate for redfish: the checks the calls make (same code), and the options
 * calls ignore. */
static void test_validate_spec(void **state)
{
	validate_is("{\"driver\":\"redfish\",\"address\":\"https://10.0.0.9:8443/\","
		    "\"username\":\"admin\",\"password\":\"pw\",\"quirk\":\"redfish_basic_auth\"}",
		    0, NULL, NULL);
	validate_is("{\"driver\":\"redfish\",\"address\":\"https://[::1]:8443\",\"username\":\"a\","
		    "\"password\":\"pw\"}",
		    0, NULL, NULL);
	validate_is(
		"{\"driver\":\"redfish\",\"address\":\"https://h\",\"username\":\"a\"}", FP_EINVAL,
		"spec.bmc.password",
		"spec.bmc.password: required for the redfish driver (or spec.bmc.password_file)");
	validate_is("{\"driver\":\"redfish\",\"address\":\"https://h\",\"username\":\"a\","
		    "\"password\":\"\"}",
		    FP_EINVAL, "spec.bmc.password", "spec.bmc.password: empty");
	validate_is(
		"{\"driver\":\"redfish\",\"address\":\"http://user:pw@host\",\"username\":\"a\"}",
		FP_EINVAL, "spec.bmc.address",
		"spec.bmc.address: user info (\"user:password@\") is not allowed in the URL; use "
		"spec.bmc.username and spec.bmc.password");
	validate_is("{\"driver\":\"redfish\",\"address\":\"http://host#f\",\"username\":\"a\"}",
		    FP_EINVAL, "spec.bmc.address",
		    "spec.bmc.address \"http://host#f\": '#' at offset 11; want only "
		    "scheme://host[:port] (no path, query or fragment)");
	validate_is("{\"driver\":\"redfish\",\"address\":\"http://host\",\"username\":\"\"}",
		    FP_EINVAL, "spec.bmc.username",
		    "spec.bmc.username: required for the redfish driver");
	validate_is(
		"{\"driver\":\"redfish\",\"address\":\"http://host\",\"username\":\"ad min\\u0001\"}",
		FP_EINVAL, "spec.bmc.username",
		"spec.bmc.username: control character 0x01 at offset 6");
	validate_is("{\"driver\":\"redfish\",\"address\":\"http://host\",\"username\":\"a\","
		    "\"password\":\"p\\tw\"}",
		    FP_EINVAL, "spec.bmc.password", "spec.bmc.password: has a control character");
	validate_is("{\"driver\":\"redfish\",\"address\":\"http://host\",\"username\":\"a\","
		    "\"password\":\"pw\",\"cipher_suite\":3}",
		    FP_EINVAL, "spec.bmc.cipher_suite",
		    "spec.bmc.cipher_suite: an IPMI setting; the redfish driver has none");
	validate_is(
		"{\"driver\":\"redfish\",\"address\":\"http://host\",\"username\":\"a\","
		"\"password\":\"pw\",\"quirk\":\"ipmi_intel_2_0\"}",
		FP_EINVAL, "spec.bmc.quirks",
		"spec.bmc.quirks: \"ipmi_intel_2_0\" is not a redfish quirk (the redfish driver "
		"takes only redfish_* quirks)");
	/* sim takes anything */
	validate_is("{\"driver\":\"sim\",\"address\":\"a b\",\"quirk\":\"ipmi_intel_2_0\"}", 0,
		    NULL, NULL);
}

/* ---- public-bladed: four systems, no BootSourceOverrideMode ---- */

static void test_bladed_system_choice(void **state)
{
	struct fx *f = *state;
	enum bmc_power pw;
	f->t.system = NULL;
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 FP_EINVAL);
	char want[256];
	snprintf(want, sizeof(want),
		 "%s has several ComputerSystems (529QB9450R6, 529QB9451R6, "
		 "529QB9452R6, 529QB9453R6): set spec.bmc.system to one",
		 f->p.url);
	assert_string_equal(f->err, want);
	f->t.system = "nope";
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 FP_EINVAL);
	snprintf(want, sizeof(want),
		 "spec.bmc.system \"nope\" is not a ComputerSystem of %s (it "
		 "has: 529QB9450R6, 529QB9451R6, 529QB9452R6, 529QB9453R6)",
		 f->p.url);
	assert_string_equal(f->err, want);
}

static void test_bladed_power_and_boot_without_mode(void **state)
{
	struct fx *f = *state;
	assert_int_equal(power(f), BMC_POWER_ON);
	set_power(f, BMC_ACTION_OFF);
	assert_int_equal(power(f), BMC_POWER_OFF);
	struct bmc_boot want = {BMC_BOOT_PXE, 0, BMC_BOOT_MODE_UEFI}, got;
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(bmc_boot_get(f->b, &f->t, in_ms(f, 10000), &got, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(got.device, BMC_BOOT_PXE);
	assert_int_equal(got.persistent, 0);
	assert_int_equal(got.mode, BMC_BOOT_MODE_UNKNOWN);
	set_power(f, BMC_ACTION_ON);
	char *log = peer_log(f);
	assert_int_equal(count(log, "POST " BLADE_SYS "/Actions/ComputerSystem.Reset 204 "
				    "auth=session ResetType=ForceOff\n"),
			 1);
	/* Mode omitted: the bladed System has none */
	assert_int_equal(count(log, "PATCH " BLADE_SYS " 200 auth=session if-match=W/\""), 1);
	assert_int_equal(count(log, " body={\"Boot\": {\"BootSourceOverrideEnabled\": \"Once\", "
				    "\"BootSourceOverrideTarget\": \"Pxe\"}}\n"),
			 1);
	assert_true(line_at(log, "PATCH " BLADE_SYS " 200") <
		    line_at(log, "POST " BLADE_SYS "/Actions/ComputerSystem.Reset 204 auth=session "
				 "ResetType=On"));
	assert_int_equal(count(log, "GET /redfish/v1/Chassis/Blade3 200"), 2);
	free(log);
	json_t *inv = NULL;
	assert_int_equal(bmc_inventory(f->b, &f->t, in_ms(f, 10000), &inv, f->err, sizeof(f->err)),
			 0);
	assert_string_equal(jsonx_str(inv, "system.id"), "529QB9452R6");
	json_decref(inv);
}

/* ---- fault knobs ---- */

static void test_fault_power_state_dropped(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"drop_power_state\": true}");
	assert_int_equal(power(f), BMC_POWER_UNKNOWN);
	assert_string_equal(f->obs.power_reason, "PowerStateMissing");
	assert_string_equal(f->err, "System 437XR1138R2 has no PowerState");
}

static void test_fault_power_state_disagrees(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"disagree\": true}");
	assert_int_equal(power(f), BMC_POWER_UNKNOWN);
	assert_string_equal(f->obs.power_reason, "PowerStateDisagrees");
	assert_string_equal(f->err,
			    "System 437XR1138R2 PowerState On but Chassis 1U PowerState Off");
	peer_control(&f->p, "{\"disagree\": false}");
	assert_int_equal(power(f), BMC_POWER_ON);
	assert_string_equal(f->obs.power_reason, "");
}

static void test_fault_busy_retry_after(void **state)
{
	struct fx *f = *state;
	enum bmc_power pw;
	/* Retry-After 30 s, deadline in 3 s: come back later */
	peer_control(&f->p, "{\"busy\": {\"count\": 1, \"retry_after\": 30}}");
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 3000), &pw, f->err, sizeof(f->err)),
			 FP_EAGAIN);
	assert_int_equal(f->obs.retry_after_ms, 30000);
	/* Retry-After 1 s within a 10 s deadline: waited, tried again, done */
	peer_control(&f->p, "{\"busy\": {\"count\": 1, \"retry_after\": 1}}");
	memset(&f->obs, 0, sizeof(f->obs));
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(pw, BMC_POWER_ON);
	assert_int_equal(f->obs.retry_after_ms, 0);
	/* busy twice in a row: one wait, then FP_EAGAIN */
	peer_control(&f->p, "{\"busy\": {\"count\": 2, \"retry_after\": 1}}");
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 10000), &pw, f->err, sizeof(f->err)),
			 FP_EAGAIN);
	assert_int_equal(f->obs.retry_after_ms, 1000);
	char *log = peer_log(f);
	assert_int_equal(count(log, " 503 auth="), 4);
	free(log);
}

static void test_fault_slow(void **state)
{
	struct fx *f = *state;
	enum bmc_power pw;
	assert_int_equal(power(f), BMC_POWER_ON); /* session made while fast */
	peer_control(&f->p, "{\"delay_ms\": 3000}");
	assert_int_equal(bmc_power_get(f->b, &f->t, in_ms(f, 500), &pw, f->err, sizeof(f->err)),
			 FP_ETIMEDOUT);
	assert_int_equal(pw, BMC_POWER_UNKNOWN);
	peer_control(&f->p, "{\"delay_ms\": 0}");
	assert_int_equal(power(f), BMC_POWER_ON); /* and the handle still works */
}

static void test_fault_task_never_finishes(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"task_never_finishes\": true}");
	json_t *o = NULL;
	struct bmc_firmware_req req = {.image_uri = "http://10.0.0.1/bmc.bin"};
	assert_int_equal(bmc_firmware_update(f->b, &f->t, in_ms(f, 2000), &req, &o, f->err,
					     sizeof(f->err)),
			 FP_ETIMEDOUT);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "Running");
	assert_string_equal(json_string_value(json_object_get(o, "task")),
			    "/redfish/v1/TaskService/Tasks/fp1");
	json_decref(o);
	char *log = peer_log(f);
	/* no TransferProtocol when the caller gives none */
	assert_int_equal(count(log,
			       "SimpleUpdate 202 auth=session ImageURI=http://10.0.0.1/bmc.bin "
			       "TransferProtocol=None\n"),
			 1);
	free(log);
}

static void test_fault_session_limit(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"session_limit\": true}");
	assert_int_equal(power(f), BMC_POWER_ON);
	set_power(f, BMC_ACTION_OFF);
	char *log = peer_log(f);
	/* documented: basic auth for that call; a session is tried again on the next call */
	assert_int_equal(count(log, "POST /redfish/v1/SessionService/Sessions 400"), 2);
	assert_int_equal(count(log, "POST " RACK_RESET " 204 auth=basic ResetType=ForceOff\n"), 1);
	assert_int_equal(count(log, "auth=session"), 0);
	free(log);
	peer_control(&f->p, "{\"session_limit\": false}");
	assert_int_equal(power(f), BMC_POWER_OFF);
	log = peer_log(f);
	assert_int_equal(count(log, "POST /redfish/v1/SessionService/Sessions 201"), 1);
	assert_int_equal(count(log, "GET " RACK_SYS " 200 auth=session"), 1);
	free(log);
}

static void test_fault_connection_close(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"conn_close\": true}");
	for (int i = 0; i < 3; i++) {
		set_power(f, i % 2 ? BMC_ACTION_ON : BMC_ACTION_OFF);
		assert_int_equal(power(f), i % 2 ? BMC_POWER_ON : BMC_POWER_OFF);
	}
	struct bmc_boot want = {BMC_BOOT_PXE, 1, BMC_BOOT_MODE_UEFI};
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
}

static void test_fault_reset_task_and_odata_etag(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"reset_task\": true, \"odata_etag\": true}");
	set_power(f, BMC_ACTION_OFF);
	assert_int_equal(power(f), BMC_POWER_OFF);
	struct bmc_boot want = {BMC_BOOT_PXE, 0, BMC_BOOT_MODE_UEFI};
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	char *log = peer_log(f);
	assert_int_equal(count(log, "POST " RACK_RESET " 202 auth=session ResetType=ForceOff\n"),
			 1);
	assert_int_equal(count(log, "GET /redfish/v1/TaskService/TaskMonitors/fp1 200"), 1);
	assert_int_equal(count(log, "PATCH " RACK_SYS " 200 auth=session if-match=W/\""), 1);
	free(log);
}

static void test_trailing_slash_and_hpe_wrapper(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"trailing_slash\": true, \"hpe_wrapper\": true}");
	assert_int_equal(power(f), BMC_POWER_ON);
	set_power(f, BMC_ACTION_OFF); /* 200 + error{Base.1.4.Success}: a success */
	assert_int_equal(power(f), BMC_POWER_OFF);
	struct bmc_boot want = {BMC_BOOT_PXE, 1, BMC_BOOT_MODE_UEFI}, got;
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(bmc_boot_get(f->b, &f->t, in_ms(f, 10000), &got, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(got.device, BMC_BOOT_PXE);
	char *log = peer_log(f);
	/* the URIs are used as the BMC gives them, trailing slash included */
	assert_int_equal(count(log, "POST " RACK_RESET "/ 200 auth=session ResetType=ForceOff\n"),
			 1);
	assert_int_equal(count(log, "GET " RACK_SYS "/ 200 auth=session"), 5);
	free(log);
	/* the Id is still found with a slash after it */
	f->t.system = "437XR1138R2";
	assert_int_equal(power(f), BMC_POWER_OFF);
}

static void test_session_expired_relogin_once(void **state)
{
	struct fx *f = *state;
	assert_int_equal(power(f), BMC_POWER_ON);
	peer_control(&f->p, "{\"drop_sessions\": true}");
	assert_int_equal(power(f), BMC_POWER_ON);
	char *log = peer_log(f);
	assert_int_equal(count(log, "POST /redfish/v1/SessionService/Sessions 201"), 2);
	assert_int_equal(count(log, "GET " RACK_SYS " 401 auth=badtoken"), 1);
	/* right after the 401: a new session, then the same GET again */
	long i = line_at(log, "GET " RACK_SYS " 401 auth=badtoken");
	assert_true(i > 0);
	assert_true(starts(nth_line(log, i + 1), "POST /redfish/v1/SessionService/Sessions 201 "));
	assert_true(starts(nth_line(log, i + 2), "GET " RACK_SYS " 200 auth=session\n"));
	free(log);
}

/* ---- independent client ---- */

static int run_sushy(struct fx *f, const char *power_s, const char *target, const char *enabled,
		     const char *mode)
{
	char script[512];
	snprintf(script, sizeof(script), "%s/tests/peers/redfish/sushy_check.py", srcdir());
	char *argv[] = {"/usr/bin/python3",
			script,
			f->p.url,
			"admin",
			f->p.pwfile,
			"437XR1138R2",
			(char *)power_s,
			(char *)target,
			(char *)enabled,
			(char *)mode,
			NULL};
	pid_t pid;
	assert_int_equal(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ), 0);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_sushy_agrees(void **state)
{
	struct fx *f = *state;
	set_power(f, BMC_ACTION_OFF);
	struct bmc_boot want = {BMC_BOOT_PXE, 1, BMC_BOOT_MODE_UEFI};
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(run_sushy(f, "off", "Pxe", "Continuous", "UEFI"), 0);
	want = (struct bmc_boot){BMC_BOOT_DISK, 0, BMC_BOOT_MODE_LEGACY};
	assert_int_equal(bmc_boot_set(f->b, &f->t, in_ms(f, 10000), &want, f->err, sizeof(f->err)),
			 0);
	set_power(f, BMC_ACTION_ON);
	assert_int_equal(run_sushy(f, "on", "Hdd", "Once", "Legacy"), 0);
	/* and it can tell a difference */
	assert_int_equal(run_sushy(f, "off", "Hdd", "Once", "Legacy"), 1);
}

/* ---- inputs found by tests/fuzz/fuzz_redfish.c, replayed through the pure interpreters ---- */

/* Splits a raw answer like the fuzzer does: header lines up to the blank line into h, the body
 * parsed into *doc (NULL when it is not JSON). */
static void replay_answer(const char *raw, size_t n, struct rf_headers *h, json_t **doc)
{
	size_t i = 0;
	rf_headers_init(h);
	while (i < n) {
		const char *line = raw + i;
		const char *nl = memchr(line, '\n', n - i);
		size_t len = nl ? (size_t)(nl - line) + 1 : n - i;
		i += len;
		if (len <= 2 &&
		    (line[0] == '\n' || (line[0] == '\r' && len == 2 && line[1] == '\n')))
			break;
		rf_header_line(h, line, len, 1700000000000LL);
	}
	char perr[128];
	if (jsonx_parse(raw + i, n - i, doc, perr, sizeof(perr)) < 0)
		*doc = NULL;
}

/* fuzz_redfish crash ec7398532caca529: a 201 answer whose Location has the byte 0xaa. As a task
 * monitor (202 + Location) json_pack refused the URI, the task document was NULL and task_wait
 * called strcmp(NULL): a BMC could crash fleetplane with one byte. Now rf_task_new refuses a
 * monitor that is not printable ASCII and task_wait fails the call with FP_EBMC. */
static void test_fuzz_task_monitor_not_ascii(void **state)
{
	(void)state;
	static const char raw[] =
		"HTTP/1.1 201 Created\x0d\n"
		"X-Auth\x01\x00\x00\x00\x00\x00\x00\x16"
		"0123456789abcdef\x0d\n"
		"Location: /reated\x0d\n"
		"X-Auth\x01\x00\x00\x00\x00\x00\x00\x16"
		"0123456789abcdef\x0d\n"
		"Location: /redfish/v\xaa"
		"fish/v1/SessionService/Sessions/7\x0d\n"
		"\x0d\n"
		"{\x22@odata.id\x22:\x22/redfish/v1/SessionService/Sessions/7\x22,\x22UserName\x22"
		":\x22"
		"admin\x22}";
	struct rf_headers h;
	json_t *doc;
	replay_answer(raw, sizeof(raw) - 1, &h, &doc);
	assert_string_equal(h.location, "/redfish/v\xaa"
					"fish/v1/SessionService/Sessions/7");
	assert_null(h.token); /* the X-Auth lines lost their colon */
	assert_int_equal(h.retry_after_ms, -1);
	assert_non_null(doc);
	assert_null(rf_task_new(h.location, doc));
	assert_null(rf_task_new("/redfish/v1/Task Service/1", doc)); /* a space is refused too */
	/* the same answer with an ASCII monitor still makes a task document */
	json_t *o = rf_task_new("/redfish/v1/TaskService/Tasks/1/Monitor", doc);
	assert_non_null(o);
	assert_string_equal(rf_task_state(o), "Running");
	assert_string_equal(json_string_value(json_object_get(o, "task")),
			    "/redfish/v1/SessionService/Sessions/7");
	assert_int_equal(json_array_size(json_object_get(o, "messages")), 0);
	json_decref(o);
	json_decref(doc);
	rf_headers_release(&h);
}

/* ---- hardening: what a hostile BMC sends is bounded before it reaches a document ---- */

static char *repeat(const char *unit, size_t times, const char *prefix)
{
	size_t ul = strlen(unit), pl = strlen(prefix);
	char *s = xmalloc(pl + ul * times + 1);
	memcpy(s, prefix, pl);
	for (size_t i = 0; i < times; i++)
		memcpy(s + pl + i * ul, unit, ul);
	s[pl + ul * times] = '\0';
	return s;
}

static void assert_capped(json_t *j, const char *want)
{
	assert_non_null(j);
	assert_true(json_is_string(j));
	assert_string_equal(json_string_value(j), want);
	json_decref(j);
}

static void test_strings_capped_on_utf8_boundary(void **state)
{
	(void)state;
	char *in = repeat("a", 300, ""), *want = repeat("a", 256, "");
	assert_capped(rf_str_capped(in), want); /* 256 bytes */
	free(in);
	free(want);
	/* "a" + 2-byte characters: byte 256 continues a character, so 255 bytes are kept */
	in = repeat("\xc3\xa9", 200, "a");
	want = repeat("\xc3\xa9", 127, "a");
	assert_capped(rf_str_capped(in), want);
	free(in);
	free(want);
	/* "ab" + 4-byte characters: cut back to 254 bytes, 63 whole characters */
	in = repeat("\xf0\x9f\x98\x80", 100, "ab");
	want = repeat("\xf0\x9f\x98\x80", 63, "ab");
	assert_capped(rf_str_capped(in), want);
	free(in);
	free(want);
	assert_capped(rf_str_capped("OK"), "OK");
	json_t *n = rf_str_capped(NULL);
	assert_true(json_is_null(n));
	json_decref(n);
}

static void test_inventory_chassis_sel_bounded(void **state)
{
	(void)state;
	char *big = repeat("\x01", 100000, ""); /* escaped as \u0001 by JSON: 6 bytes each */
	char *cut = repeat("\x01", 256, "");
	json_t *sys = json_pack("{s:s,s:s,s:s,s:s,s:{s:s,s:i},s:{s:s},s:s,s:{s:i}}", "Id", big,
				"Manufacturer", big, "Model", big, "SerialNumber", big,
				"ProcessorSummary", "Model", big, "Count", 2, "Status", "Health",
				big, "PowerRestorePolicy", big, "MemorySummary",
				"TotalSystemMemoryGiB", 96);
	json_t *proc = json_pack("{s:s,s:s,s:s,s:s,s:s}", "ProcessorType", "GPU", "Id", big,
				 "Model", big, "Manufacturer", big, "SerialNumber", big);
	json_t *gpus = json_array();
	for (size_t i = 0; i < 100; i++)
		json_array_append_new(gpus, rf_gpu_entry(proc, i));
	json_t *inv = rf_inventory_doc(sys, gpus);
	assert_int_equal(json_array_size(json_object_get(inv, "gpus")), RF_MAX_GPUS);
	assert_string_equal(jsonx_str(inv, "system.manufacturer"), cut);
	assert_string_equal(jsonx_str(inv, "cpu.model"), cut);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(inv, "gpus"), 63), "serial")),
			    cut);
	char *text = jsonx_dumps(inv);
	/* 261 strings of 256 bytes escaped to 6 each + keys: under the 450 KB promised */
	assert_int_equal(strlen(text), 404976);
	free(text);
	json_decref(inv);
	json_t *ch = json_pack("{s:s,s:{s:s},s:s}", "PowerState", "On", "Status", "Health", big,
			       "IndicatorLED", big);
	json_t *cs = rf_chassis_status_doc(sys, ch, "/redfish/v1/Chassis/1U");
	assert_string_equal(jsonx_str(cs, "health"), cut);
	assert_string_equal(jsonx_str(cs, "indicatorLed"), cut);
	assert_string_equal(jsonx_str(cs, "powerRestorePolicy"), cut);
	json_decref(cs);
	json_t *e = json_pack("{s:s,s:s,s:s,s:s,s:s}", "Id", "7", "Created", "2012-03-07T14:44:00Z",
			      "SensorType", big, "Message", big, "EntryCode", big);
	json_t *se = rf_sel_entry(e, 0);
	assert_string_equal(jsonx_str(se, "message"), cut);
	assert_string_equal(jsonx_str(se, "sensorType"), cut);
	assert_string_equal(jsonx_str(se, "eventType"), cut);
	json_decref(se);
	json_decref(e);
	/* a task's @odata.id longer than a kept Location: the monitor names the task instead
	 * (found by fuzz_redfish) */
	char *long_id = repeat("/x", 600, "/redfish/v1/TaskService/Tasks");
	json_t *first = json_pack("{s:s,s:s,s:[{s:s}]}", "@odata.id", long_id, "TaskState", big,
				  "Messages", "Message", big);
	json_t *task = rf_task_new("/redfish/v1/TaskService/TaskMonitors/1", first);
	assert_string_equal(jsonx_str(task, "task"), "/redfish/v1/TaskService/TaskMonitors/1");
	assert_string_equal(rf_task_state(task), cut);
	assert_string_equal(json_string_value(json_array_get(json_object_get(task, "messages"), 0)),
			    cut);
	json_decref(task);
	json_decref(first);
	free(long_id);
	json_decref(ch);
	json_decref(gpus);
	json_decref(proc);
	json_decref(sys);
	free(big);
	free(cut);
}

static void test_task_state_not_a_string(void **state)
{
	(void)state;
	char err[256] = "";
	json_t *o = rf_task_new("/redfish/v1/TaskService/TaskMonitors/1", NULL);
	json_t *body = json_pack("{s:i,s:i}", "TaskState", 3, "PercentComplete", 50);
	/* 202: the monitor says it still runs; the document is not read */
	assert_int_equal(rf_task_update(o, 202, body, err, sizeof(err)), 0);
	assert_string_equal(rf_task_state(o), "Running");
	/* any other status: a malformed Task ends the wait */
	assert_int_equal(rf_task_update(o, 200, body, err, sizeof(err)), FP_EBMC);
	assert_string_equal(err, "task monitor answered HTTP 200 with a TaskState that is an "
				 "integer, not a string (DSP8010 Task.TaskState)");
	assert_string_equal(rf_task_state(o), "Running");
	assert_null(json_object_get(o, "percent"));
	json_decref(body);
	body = json_pack("{s:n}", "TaskState");
	assert_int_equal(rf_task_update(o, 200, body, err, sizeof(err)), FP_EBMC);
	assert_string_equal(err, "task monitor answered HTTP 200 with a TaskState that is null, "
				 "not a string (DSP8010 Task.TaskState)");
	json_decref(body);
	/* a string TaskState and a body without one behave as before */
	body = json_pack("{s:s}", "TaskState", "Exception");
	assert_int_equal(rf_task_update(o, 200, body, err, sizeof(err)), 0);
	assert_string_equal(rf_task_state(o), "Exception");
	json_decref(body);
	json_decref(o);
	o = rf_task_new("/redfish/v1/TaskService/TaskMonitors/1", NULL);
	assert_int_equal(rf_task_update(o, 204, NULL, err, sizeof(err)), 0);
	assert_string_equal(rf_task_state(o), "Completed");
	json_decref(o);
}

static void test_header_values_sent_back_are_printable(void **state)
{
	(void)state;
	char etag[256], err[256] = "";
	json_t *body = json_pack("{s:s}", "@odata.etag", "W/\"1\"\r\nX-Evil: 1");
	assert_int_equal(rf_etag_of("", body, etag, sizeof(etag), err, sizeof(err)), FP_EBMC);
	assert_string_equal(etag, "");
	assert_string_equal(err,
			    "@odata.etag from the BMC has byte 0x0d at offset 5; not sent back "
			    "(a header value must be printable ASCII 0x20-0x7e)");
	json_decref(body);
	char *longtag = repeat("x", 300, "W/");
	body = json_pack("{s:s}", "@odata.etag", longtag);
	assert_int_equal(rf_etag_of(NULL, body, etag, sizeof(etag), err, sizeof(err)), FP_EBMC);
	assert_string_equal(err, "@odata.etag from the BMC is 256 bytes or more; not sent back (at "
				 "most 255)");
	free(longtag);
	/* the ETag header wins over the body, and is checked the same way */
	assert_int_equal(rf_etag_of("W/\"2\"\x01", body, etag, sizeof(etag), err, sizeof(err)),
			 FP_EBMC);
	assert_string_equal(err, "ETag from the BMC has byte 0x01 at offset 5; not sent back (a "
				 "header value must be printable ASCII 0x20-0x7e)");
	assert_int_equal(rf_etag_of("W/\"2\"", body, etag, sizeof(etag), err, sizeof(err)), 0);
	assert_string_equal(etag, "W/\"2\"");
	json_decref(body);
	assert_int_equal(rf_etag_of(NULL, NULL, etag, sizeof(etag), err, sizeof(err)), 0);
	assert_string_equal(etag, "");
	/* a login answer whose X-Auth-Token hides a CR: kept by the header reader, refused
	 * before it could go into a request; the message does not carry the token */
	static const char raw[] = "HTTP/1.1 201 Created\r\n"
				  "X-Auth-Token: 0123\rSet-Cookie: x=1\r\n"
				  "Location: /redfish/v1/SessionService/Sessions/1\r\n\r\n{}";
	struct rf_headers h;
	json_t *doc;
	replay_answer(raw, sizeof(raw) - 1, &h, &doc);
	assert_string_equal(h.token, "0123\rSet-Cookie: x=1");
	assert_int_equal(rf_header_safe("X-Auth-Token", h.token, RF_MAX_HEADER, err, sizeof(err)),
			 FP_EBMC);
	assert_string_equal(err, "X-Auth-Token from the BMC has byte 0x0d at offset 4; not sent "
				 "back (a header value must be printable ASCII 0x20-0x7e)");
	assert_int_equal(rf_header_safe("X-Auth-Token", "0123abcd", RF_MAX_HEADER, err,
					sizeof(err)),
			 0);
	assert_int_equal(rf_header_safe("X-Auth-Token", "caf\xc3\xa9", RF_MAX_HEADER, err,
					sizeof(err)),
			 FP_EBMC);
	assert_string_equal(err, "X-Auth-Token from the BMC has byte 0xc3 at offset 3; not sent "
				 "back (a header value must be printable ASCII 0x20-0x7e)");
	json_decref(doc);
	rf_headers_release(&h);
}

static void test_sel_created_validated(void **state)
{
	(void)state;
	static const struct {
		const char *in, *want; /* want NULL: null */
	} cases[] = {
		{"2012-03-07T14:44:00Z", "2012-03-07T14:44:00Z"},
		{"2012-03-07T14:44:00.5Z", "2012-03-07T14:44:00.5Z"},
		{"2024-02-29T23:59:59Z", "2024-02-29T23:59:59Z"},
		{"2012-03-07T14:44:00-06:00", "2012-03-07T20:44:00.000Z"},
		{"2012-03-07T02:14:00.250+05:30", "2012-03-06T20:44:00.250Z"},
		{"2012-03-07T14:44:00+00:00", "2012-03-07T14:44:00.000Z"},
		{"2023-02-29T00:00:00Z", NULL},
		{"2012-04-31T00:00:00Z", NULL},
		{"2012-13-07T14:44:00Z", NULL},
		{"2012-03-07T24:00:00Z", NULL},
		{"2012-03-07T14:44:00", NULL},
		{"2012-03-07 14:44:00Z", NULL},
		{"2012-03-07t14:44:00z", NULL},
		{"2012-03-07T14:44:00.Z", NULL},
		{"2012-03-07T14:44:00+24:00", NULL},
		{"2012-03-07T14:44:00+0600", NULL},
		{" 2012-03-07T14:44:00Z", NULL},
		{"2012-3-7T14:44:00Z", NULL},
		{"2012-03-07T14:44:00.12345678901234567890Z", NULL}, /* 41 bytes */
		{"1006-03-07T02:14:00.250+05:30", NULL},             /* found by fuzz_redfish */
		{"1969-12-31T23:59:59Z", NULL},
		{"1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"},
		{"yesterday", NULL},
		{"", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *e = json_pack("{s:s,s:s}", "Id", "1", "Created", cases[i].in);
		json_t *se = rf_sel_entry(e, 0);
		json_t *ts = json_object_get(se, "timestamp");
		if (cases[i].want) {
			assert_string_equal(json_string_value(ts), cases[i].want);
		} else {
			if (!json_is_null(ts))
				print_error("case %zu \"%s\" was not refused\n", i, cases[i].in);
			assert_true(json_is_null(ts));
		}
		json_decref(se);
		json_decref(e);
	}
	json_t *e = json_pack("{s:s,s:i}", "Id", "1", "Created", 1331131440);
	json_t *se = rf_sel_entry(e, 0);
	assert_true(json_is_null(json_object_get(se, "timestamp")));
	json_decref(se);
	json_decref(e);
}

/* ---- MultipartHttpPushUri (DSP0266 "Multipart HTTP push updates") ---- */

/* Writes n bytes (i * 7 + 3) % 256 into dir/name; returns the path (caller frees). */
static char *write_image(const char *dir, const char *name, size_t n)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		fputc((int)((i * 7 + 3) % 256), f);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void test_firmware_multipart_upload(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"multipart_push\": true}");
	char *path = write_image(f->p.dir, "bmc-fw.bin", 70000);
	static const char *const targets[] = {"/redfish/v1/UpdateService/FirmwareInventory/BMC",
					      NULL};
	struct bmc_firmware_req req = {.image_path = path,
				       .apply_time = "OnReset",
				       .targets = targets};
	json_t *o = NULL;
	int rc = bmc_firmware_update(f->b, &f->t, in_ms(f, 20000), &req, &o, f->err,
				     sizeof(f->err));
	if (rc != 0)
		print_error("firmware_update: %s\n", f->err);
	assert_int_equal(rc, 0);
	char *s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s, "{\"messages\":[\"done\"],\"percent\":100,\"state\":\"Completed\","
			       "\"task\":\"/redfish/v1/TaskService/Tasks/fp1\"}");
	free(s);
	json_decref(o);
	/* again with no targets and no apply time: an empty UpdateParameters object */
	struct bmc_firmware_req plain = {.image_path = path};
	assert_int_equal(bmc_firmware_update(f->b, &f->t, in_ms(f, 20000), &plain, &o, f->err,
					     sizeof(f->err)),
			 0);
	json_decref(o);
	char *log = peer_log(f);
	/* the server saw exactly the file's bytes (sha256 of the 70000 bytes written) */
	assert_int_equal(
		count(log, "POST /redfish/v1/UpdateService/upload 202 auth=session "
			   "UpdateParameters={\"@Redfish.OperationApplyTime\": \"OnReset\", "
			   "\"Targets\": [\"/redfish/v1/UpdateService/FirmwareInventory/BMC\"]} "
			   "UpdateFile=bmc-fw.bin size=70000 sha256=9f6d8bb550591a5410aa72b997e7"
			   "d49e3eed1ce025e83628addaf4382d2295bd\n"),
		1);
	assert_int_equal(count(log,
			       "POST /redfish/v1/UpdateService/upload 202 auth=session "
			       "UpdateParameters={} UpdateFile=bmc-fw.bin size=70000 sha256=9f6d8b"
			       "b550591a5410aa72b997e7d49e3eed1ce025e83628addaf4382d2295bd\n"),
			 1);
	assert_int_equal(count(log, "GET /redfish/v1/TaskService/TaskMonitors/fp1 202"), 1);
	assert_int_equal(count(log, "GET /redfish/v1/TaskService/TaskMonitors/fp1 200"), 1);
	assert_int_equal(count(log, "GET /redfish/v1/TaskService/TaskMonitors/fp2 200"), 1);
	assert_int_equal(count(log, "SimpleUpdate"), 0);
	free(log);
	unlink(path);
	free(path);
}

static void test_firmware_path_needs_multipart(void **state)
{
	struct fx *f = *state;
	char *path = write_image(f->p.dir, "bmc-fw.bin", 16);
	struct bmc_firmware_req req = {.image_path = path};
	json_t *o = NULL;
	assert_int_equal(bmc_firmware_update(f->b, &f->t, in_ms(f, 20000), &req, &o, f->err,
					     sizeof(f->err)),
			 FP_EUNSUPPORTED);
	assert_null(o);
	char want[512];
	snprintf(want, sizeof(want),
		 "%s UpdateService has no MultipartHttpPushUri, which "
		 "image_path needs (it offers SimpleUpdate, HttpPushUri): serve the image and give "
		 "image_uri",
		 f->p.url);
	assert_string_equal(f->err, want);
	char *log = peer_log(f);
	assert_int_equal(count(log, "GET /redfish/v1/UpdateService 200 auth=session"), 1);
	assert_int_equal(count(log, "POST /redfish/v1/UpdateService"), 0);
	free(log);
	unlink(path);
	free(path);
}

static void test_firmware_path_refused(void **state)
{
	struct fx *f = *state;
	peer_control(&f->p, "{\"multipart_push\": true}");
	char *path = write_image(f->p.dir, "bmc-fw.bin", 16);
	char *link = xasprintf("%s/link.bin", f->p.dir);
	assert_int_equal(symlink(path, link), 0);
	char want[512];
	json_t *o = NULL;
	struct bmc_firmware_req req = {.image_path = link};
	assert_int_equal(bmc_firmware_update(f->b, &f->t, in_ms(f, 20000), &req, &o, f->err,
					     sizeof(f->err)),
			 FP_EINVAL);
	assert_null(o);
	snprintf(want, sizeof(want),
		 "firmware image_path %s is a symbolic link; refused (opened "
		 "with O_NOFOLLOW): give the file itself",
		 link);
	assert_string_equal(f->err, want);
	static const struct {
		struct bmc_firmware_req req;
		const char *err;
	} bad[] = {
		{{.image_path = "bmc-fw.bin"},
		 "firmware image_path \"bmc-fw.bin\" is not an absolute path"},
		{{.image_path = "/tmp", .apply_time = "Immediate"},
		 "firmware image_path /tmp is not a regular file"},
		{{.image_path = "/dev/null/x"}, "firmware image_path /dev/null/x: Not a directory"},
		{{.image_path = "/x.bin", .apply_time = "AtMaintenanceWindowStart"},
		 "firmware update: apply_time \"AtMaintenanceWindowStart\" is not Immediate or "
		 "OnReset"},
		{{.image_path = "/x.bin", .image_uri = "http://10.0.0.1/x.bin"},
		 "firmware update: give image_uri or image_path, not both"},
		{{.image_path = "/x.bin", .transfer_protocol = "HTTP"},
		 "firmware update: transfer_protocol is for image_uri, not image_path"},
		{{.image_uri = "http://10.0.0.1/x.bin", .apply_time = "OnReset"},
		 "firmware update: apply_time is for image_path (MultipartHttpPushUri) only"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(bmc_firmware_update(f->b, &f->t, in_ms(f, 20000), &bad[i].req, &o,
						     f->err, sizeof(f->err)),
				 FP_EINVAL);
		assert_string_equal(f->err, bad[i].err);
	}
	FILE *e = fopen(path, "w"); /* empty */
	assert_non_null(e);
	fclose(e);
	req.image_path = path;
	assert_int_equal(bmc_firmware_update(f->b, &f->t, in_ms(f, 20000), &req, &o, f->err,
					     sizeof(f->err)),
			 FP_EINVAL);
	snprintf(want, sizeof(want), "firmware image_path %s is empty", path);
	assert_string_equal(f->err, want);
	/* nothing reached the BMC: every refusal comes before the first request */
	char *log = peer_log(f);
	assert_int_equal(count(log, "/redfish/v1/"), 0);
	free(log);
	unlink(link);
	unlink(path);
	free(link);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_power_round_trip_one_session, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_reset_type_mapping, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_boot_if_match_and_read_back, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_boot_412_retried_once, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_quirk_no_if_match, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_quirk_basic_auth, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_inventory, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_chassis_status_and_sel, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_firmware_update, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_bad_password_and_addresses, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_wrong_password_gets_own_session, setup_rack,
						teardown),
		cmocka_unit_test(test_validate_spec),
		cmocka_unit_test_setup_teardown(test_bladed_system_choice, setup_blade, teardown),
		cmocka_unit_test_setup_teardown(test_bladed_power_and_boot_without_mode,
						setup_blade, teardown),
		cmocka_unit_test_setup_teardown(test_fault_power_state_dropped, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_fault_power_state_disagrees, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_fault_busy_retry_after, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_fault_slow, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_fault_task_never_finishes, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_fault_session_limit, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_fault_connection_close, setup_rack, teardown),
		cmocka_unit_test_setup_teardown(test_fault_reset_task_and_odata_etag, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_trailing_slash_and_hpe_wrapper, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_session_expired_relogin_once, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_sushy_agrees, setup_rack, teardown),
		cmocka_unit_test(test_fuzz_task_monitor_not_ascii),
		cmocka_unit_test(test_strings_capped_on_utf8_boundary),
		cmocka_unit_test(test_inventory_chassis_sel_bounded),
		cmocka_unit_test(test_task_state_not_a_string),
		cmocka_unit_test(test_header_values_sent_back_are_printable),
		cmocka_unit_test(test_sel_created_validated),
		cmocka_unit_test_setup_teardown(test_firmware_multipart_upload, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_firmware_path_needs_multipart, setup_rack,
						teardown),
		cmocka_unit_test_setup_teardown(test_firmware_path_refused, setup_rack, teardown),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
