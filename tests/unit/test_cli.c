/* layers: base core */
/* test_cli.c - the client subcommands (node, op, event, token, health) and their helpers: table
 * layout and truncation, AGE, problem+json error lines, escaping and query building, argument
 * parsing and usage errors, and whole commands against a fake API server (libmicrohttpd on
 * 127.0.0.1, ephemeral port) that records each request raw (no unescaping) so the test sees
 * exactly the paths, queries, headers and bodies the CLI sends. It includes the cmd .c files
 * it tests directly so that it links only base (and libcurl/libmicrohttpd from LDLIBS).
 *
 * Every system header any included .c file needs comes first: the .c files end by including
 * base/banned.h, after which a system header declaring a banned name would not compile. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>

#include "../../src/sched/hostlist.c"
#include "../../src/cmd/cli_context.c"
#include "../../src/cmd/client.c"
#include "../../src/cmd/table.c"
#include "../../src/cmd/cli_common.c"
#include "../../src/cmd/cli_fmt.c"
#include "../../src/cmd/cmd_node.c"
#include "../../src/cmd/cmd_op.c"
#include "../../src/cmd/cmd_event.c"
#include "../../src/cmd/cmd_token.c"
#include "../../src/cmd/cmd_health.c"

#define TOKEN "test-token-XYZ"

/* ---- running a command with stdout/stderr captured ---- */

struct run_result {
	int rc;
	char out[65536];
	char err[8192];
};

static void slurp_fd(int fd, char *dst, size_t cap)
{
	lseek(fd, 0, SEEK_SET);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(fd, dst + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	dst[n] = 0;
}

/* Runs fn(argc, argv) with the NULL-terminated arguments, capturing stdout and stderr. */
static void run_cmd(struct run_result *res, int (*fn)(int, char **), ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;
	va_start(ap, fn);
	const char *a;
	while ((a = va_arg(ap, const char *)) != NULL && argc < 31)
		argv[argc++] = xstrdup(a);
	va_end(ap);
	argv[argc] = NULL;

	char po[] = "/tmp/test_cli_outXXXXXX", pe[] = "/tmp/test_cli_errXXXXXX";
	int fo = mkstemp(po), fe = mkstemp(pe);
	assert_true(fo >= 0 && fe >= 0);
	unlink(po);
	unlink(pe);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	dup2(fo, 1);
	dup2(fe, 2);
	res->rc = fn(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	slurp_fd(fo, res->out, sizeof(res->out));
	slurp_fd(fe, res->err, sizeof(res->err));
	close(fo);
	close(fe);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

/* ---- fake API server ---- */

struct req_log {
	char method[16];
	char path[256];
	char query[512];
	char auth[128];
	char body[2048];
};

static struct {
	pthread_mutex_t mu;
	struct req_log reqs[32];
	int nreqs;
	int watch_calls;
	struct MHD_Daemon *d;
	unsigned port;
} fake = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct fake_conn {
	char body[2048];
	size_t len;
};

static size_t fake_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	return strlen(s); /* keep everything raw: the test checks the CLI's escaping */
}

static enum MHD_Result fake_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct req_log *r = cls;
	size_t n = strlen(r->query);
	snprintf(r->query + n, sizeof(r->query) - n, "%s%s%s%s", n ? "&" : "", k, v ? "=" : "",
		 v ? v : "");
	return MHD_YES;
}

static char *node_doc_text(const char *name, const char *phase, const char *holds, const char *site,
			   const char *rack, int gpus, int64_t created_ms)
{
	char created[FP_TIME_LEN];
	fp_time_format(created_ms, created);
	char g[64] = "";
	if (gpus)
		snprintf(g, sizeof(g),
			 ",\"gpus\":{\"count\":%d,\"model\":\"NVIDIA H100 80GB HBM3\"}", gpus);
	return xasprintf(
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\","
		"\"resourceVersion\":\"5\",\"labels\":{\"site\":\"%s\"},\"createdAt\":\"%s\"},"
		"\"spec\":{\"site\":\"%s\",\"rack\":\"%s\",\"bmc\":{\"driver\":\"sim\"}%s},"
		"\"status\":{\"phase\":\"%s\",\"phaseSince\":\"%s\",\"holds\":[%s],"
		"\"conditions\":[{\"type\":\"BMCReachable\",\"status\":\"True\",\"reason\":"
		"\"Answered\",\"message\":\"ok\",\"since\":\"%s\"}],"
		"\"inventory\":{\"gpus\":[{\"model\":\"H100\"},{\"model\":\"H100\"}],"
		"\"cpu\":{\"model\":\"EPYC 9454\",\"sockets\":2,\"flags\":[]}}}}",
		name, name, site, created, site, rack, g, phase, created, holds, created);
}

static char *fake_route(const struct req_log *r, unsigned *status, const char **ctype)
{
	int64_t now = client_now_ms();
	*status = 200;
	*ctype = "application/json";
	if (strcmp(r->auth, "Bearer " TOKEN) != 0) {
		*status = 401;
		*ctype = "application/problem+json";
		return xstrdup(
			"{\"type\":\"about:blank\",\"title\":\"Unauthorized\",\"status\":401,"
			"\"detail\":\"bad or missing bearer token\"}");
	}
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/nodes")) {
		if (strstr(r->query, "watch=1")) {
			int n = ++fake.watch_calls;
			if (n == 1) {
				*status = 410;
				*ctype = "application/problem+json";
				return xstrdup(
					"{\"title\":\"Gone\",\"status\":410,\"detail\":\"compacted\"}");
			}
			*ctype = "application/x-ndjson";
			char *a = node_doc_text("r01n02", "enrolled", "", "s1", "r01", 0, now);
			char *s = xasprintf(
				"{\"type\":\"ADDED\",\"object\":%s}\n\n"
				"{\"type\":\"DELETED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":"
				"\"r01n02\",\"resourceVersion\":\"10\"},\"status\":{\"phase\":\"enrolled\"}}}\n"
				"{\"type\":\"ERROR\",\"object\":{\"title\":\"Forbidden\",\"status\":403,"
				"\"detail\":\"token revoked\"}}\n",
				a);
			free(a);
			return s;
		}
		if (strstr(r->query, "phase=empty"))
			return xstrdup("{\"items\":[],\"metadata\":{\"resourceVersion\":\"3\"}}");
		if (strstr(r->query, "continue=")) {
			char *n3 = node_doc_text("r02n01", "enrolled", "", "s2", "r02", 0,
						 now - 300000);
			char *s = xasprintf(
				"{\"items\":[%s],\"metadata\":{\"resourceVersion\":\"7\"}}", n3);
			free(n3);
			return s;
		}
		const char *ph2 = fake.watch_calls >= 1 ? "draining" : "available";
		char *n1 = node_doc_text("r01n01", ph2, "", "s1", "r01", 8, now - 300000);
		char *n2 = node_doc_text(
			"r01n02", "draining",
			"{\"owner\":\"health\",\"reason\":\"xid 79\",\"since\":\"2026-01-01T00:00:00Z\"},"
			"{\"owner\":\"operator:alice\",\"reason\":\"swap a cable in the rack\","
			"\"since\":\"2026-01-01T00:00:00Z\"}",
			"s1", "r01", 8, now - 3 * 3600 * 1000);
		char *s;
		if (strstr(r->query, "labelSelector=")) /* the watch test: one node, no paging */
			s = xasprintf("{\"items\":[%s],\"metadata\":{\"resourceVersion\":\"%s\"}}",
				      n1, fake.watch_calls >= 1 ? "8" : "7");
		else
			s = xasprintf("{\"items\":[%s,%s],\"metadata\":{\"continue\":\"abc def/+\","
				      "\"resourceVersion\":\"7\"}}",
				      n1, n2);
		free(n1);
		free(n2);
		return s;
	}
	/* node power: pw-on (queued, then off), pw-unk (power not known), pw-fail, retired1 */
	if (!strcmp(r->method, "POST") && !strncmp(r->path, "/v1/nodes/", 10) &&
	    strstr(r->path, ":power")) {
		*status = 202;
		if (!strcmp(r->path, "/v1/nodes/pw-on:power"))
			return xstrdup("{\"kind\":\"Operation\",\"metadata\":{\"name\":\"power-1\","
				       "\"resourceVersion\":\"10\"},\"spec\":{\"node\":\"pw-on\","
				       "\"kind\":\"power\"},\"status\":{\"state\":\"pending\"},"
				       "\"queued\":true,\"behind\":\"provision-1\"}");
		if (!strcmp(r->path, "/v1/nodes/pw-unk:power"))
			return xstrdup("{\"metadata\":{\"name\":\"power-3\"},\"queued\":false}");
		if (!strcmp(r->path, "/v1/nodes/pw-fail:power"))
			return xstrdup("{\"metadata\":{\"name\":\"power-2\"},\"queued\":false}");
		*status = 409;
		*ctype = "application/problem+json";
		return xstrdup("{\"type\":\"about:blank\",\"title\":\"Conflict\",\"status\":409,"
			       "\"detail\":\"node retired1 is retired\"}");
	}
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/operations/power-1"))
		return xstrdup("{\"metadata\":{\"name\":\"power-1\",\"resourceVersion\":\"11\"},"
			       "\"status\":{\"state\":\"succeeded\"}}");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/operations/power-3"))
		return xstrdup("{\"metadata\":{\"name\":\"power-3\",\"resourceVersion\":\"11\"},"
			       "\"status\":{\"state\":\"succeeded\"}}");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/operations/power-2"))
		return xstrdup("{\"metadata\":{\"name\":\"power-2\",\"resourceVersion\":\"11\"},"
			       "\"status\":{\"state\":\"failed\",\"lastError\":\"step power_off "
			       "attempt 5: power off: simulated BMC did not answer\"}}");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/nodes/pw-on"))
		return xstrdup("{\"metadata\":{\"name\":\"pw-on\",\"resourceVersion\":\"12\"},"
			       "\"status\":{\"conditions\":[{\"type\":\"BMCReachable\",\"status\":"
			       "\"True\"},{\"type\":\"PoweredOn\",\"status\":\"False\",\"reason\":"
			       "\"BMCReportsOff\",\"message\":\"confirmed\"}]}}");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/nodes/pw-busy")) {
		char since[FP_TIME_LEN];
		fp_time_format(now - 120000, since);
		return xasprintf("{\"metadata\":{\"name\":\"pw-busy\",\"resourceVersion\":\"12\"},"
				 "\"status\":{\"operation\":\"provision-7\",\"conditions\":[{"
				 "\"type\":\"PoweredOn\",\"status\":\"True\",\"reason\":"
				 "\"BMCReportsOn\",\"message\":\"m\",\"since\":\"%s\"}]}}",
				 since);
	}
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/nodes/pw-unk"))
		return xstrdup("{\"metadata\":{\"name\":\"pw-unk\",\"resourceVersion\":\"12\"},"
			       "\"status\":{\"conditions\":[{\"type\":\"PoweredOn\",\"status\":"
			       "\"Unknown\",\"reason\":\"PowerStateMissing\",\"message\":"
			       "\"Redfish PowerState absent\"}]}}");
	/* the policy as serve answers it after an apply of {"breaker":{"domains":["rack",
	 * "nvlink_domain","site"],"maxNodesPerDomain":{"rack":1,"site":50}}}, rules cut to two */
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/policies/default"))
		return xstrdup(
			"{\"kind\":\"HealthPolicy\",\"metadata\":{\"name\":\"default\","
			"\"resourceVersion\":\"3\"},\"spec\":{\"dryRun\":false,\"rules\":[{\"code\":"
			"\"xid:8\",\"severity\":\"medium\",\"action\":\"hold\",\"count\":2,"
			"\"windowSeconds\":3600,\"distinctJobs\":3,\"ladder\":[\"gpu_reset\","
			"\"reboot\",\"reimage\",\"rma\"]},{\"code\":\"xid:11\",\"severity\":"
			"\"low\",\"action\":\"none\",\"count\":1,\"windowSeconds\":3600,"
			"\"distinctJobs\":0,\"ladder\":[\"gpu_reset\",\"reboot\",\"reimage\","
			"\"rma\"]}],\"jobAttribution\":{\"minNodes\":3,\"windowSeconds\":600},"
			"\"lemon\":{\"windowSeconds\":2592000,\"rmaScore\":3,"
			"\"recurrenceSeconds\":604800},\"breaker\":{\"enabled\":true,"
			"\"maxNodes\":3,\"windowSeconds\":300,\"domains\":[\"rack\","
			"\"nvlink_domain\",\"site\"],\"maxNodesPerDomain\":{\"rack\":1,"
			"\"site\":50}}}}");
	/* a rack budget of 1 with rack r01 at its limit (docs/cli.md "health budget") */
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/budgets/rack-1"))
		return xstrdup("{\"kind\":\"DisruptionBudget\",\"metadata\":{\"name\":\"rack-1\"},"
			       "\"spec\":{\"domain\":\"rack\",\"maxUnavailable\":1},\"status\":"
			       "{\"domains\":[{\"value\":\"r01\",\"nodes\":8,\"unavailable\":1,"
			       "\"remaining\":0,\"out\":[\"r01n03\"],\"waiting\":[\"r01n04\"]},"
			       "{\"value\":\"r02\",\"nodes\":8,\"unavailable\":0,\"remaining\":1,"
			       "\"out\":[],\"waiting\":[]}]}}");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/readyz")) {
		*ctype = "text/plain";
		return xstrdup("ok\n");
	}
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/garbage"))
		return xstrdup("{\"a\":");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/nodes/r01n01"))
		return node_doc_text("r01n01", "available", "", "s1", "r01", 8, now - 120000);
	if (!strcmp(r->method, "GET") && !strncmp(r->path, "/v1/nodes/", 10)) {
		*status = 404;
		*ctype = "application/problem+json";
		return xstrdup("{\"type\":\"about:blank\",\"title\":\"Not Found\",\"status\":404,"
			       "\"detail\":\"node nosuch does not exist\"}");
	}
	if (!strcmp(r->method, "POST") && !strcmp(r->path, "/v1/nodes/r01n01:drain"))
		return node_doc_text("r01n01", "draining", "", "s1", "r01", 8, now);
	if (!strcmp(r->method, "POST") && !strcmp(r->path, "/v1/nodes/r01n01:retire"))
		return node_doc_text("r01n01", "retiring", "", "s1", "r01", 8, now);
	if (!strcmp(r->method, "POST") && !strcmp(r->path, "/v1/nodes/busy:drain")) {
		*status = 409;
		*ctype = "application/problem+json";
		return xstrdup("{\"type\":\"about:blank\",\"title\":\"Conflict\",\"status\":409,"
			       "\"detail\":\"node busy is retiring\"}");
	}
	if (!strcmp(r->method, "POST") && !strcmp(r->path, "/v1/nodes")) {
		*status = 201;
		return xstrdup("{\"items\":[{},{}]}");
	}
	if (!strcmp(r->method, "POST") && !strcmp(r->path, "/v1/tokens"))
		return xstrdup("{\"name\":\"ci\",\"role\":\"viewer\",\"token\":\"fpt_SECRET123\"}");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/tokens"))
		return xasprintf(
			"{\"items\":[{\"kind\":\"Token\",\"metadata\":{\"name\":\"admin\","
			"\"createdAt\":\"2026-11-30T05:39:44.912Z\",\"resourceVersion\":\"20\"},"
			"\"role\":\"admin\"},{\"kind\":\"Token\",\"metadata\":{\"name\":\"r01n01\","
			"\"createdAt\":%lld},\"role\":\"agent\",\"node\":\"r01n01\"}]}",
			(long long)(now - 7200000));
	if (!strcmp(r->method, "DELETE") && !strcmp(r->path, "/v1/tokens/ci")) {
		*status = 204;
		return xstrdup("");
	}
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/operations"))
		return xasprintf(
			"{\"items\":[{\"kind\":\"Operation\",\"metadata\":{\"name\":\"op-1\","
			"\"createdAt\":%lld},\"spec\":{\"node\":\"r01n01\",\"kind\":\"provision\","
			"\"steps\":[\"set_boot\",\"power_cycle\",\"wait_callback\"]},"
			"\"status\":{\"state\":\"running\",\"step\":1,\"attempt\":2}}],"
			"\"metadata\":{\"resourceVersion\":\"9\"}}",
			(long long)(now - 45000));
	if (!strcmp(r->method, "POST") && !strcmp(r->path, "/v1/operations/op%201:cancel"))
		return xstrdup("{\"kind\":\"Operation\",\"metadata\":{\"name\":\"op 1\"},"
			       "\"status\":{\"state\":\"cancelled\"}}");
	if (!strcmp(r->method, "POST") && !strcmp(r->path, "/v1/operations/op-run:cancel")) {
		*status = 409;
		*ctype = "application/problem+json";
		return xstrdup(
			"{\"type\":\"about:blank\",\"title\":\"Conflict\",\"status\":409,"
			"\"detail\":\"operation op-run is running step power_on; only queued "
			"or pending operations can be cancelled\"}");
	}
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/operations/op%201"))
		return xstrdup("{\"kind\":\"Operation\",\"metadata\":{\"name\":\"op 1\"},\"spec\":"
			       "{\"node\":\"r01n01\",\"kind\":\"power\",\"steps\":[\"power_on\"]},"
			       "\"status\":{\"state\":\"succeeded\",\"step\":1,\"attempt\":1}}");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/events") &&
	    strstr(r->query, "continue=more"))
		return xstrdup("{\"items\":[{\"kind\":\"Event\",\"metadata\":{\"name\":\"e3\"},"
			       "\"type\":\"Warning\",\"actor\":\"controller:lifecycle\","
			       "\"object\":\"node/r01n02\",\"reason\":\"Failed\","
			       "\"message\":\"on\",\"time\":\"2026-11-30T05:29:00.000Z\"}],"
			       "\"metadata\":{\"resourceVersion\":\"9\"}}");
	if (!strcmp(r->method, "GET") && !strcmp(r->path, "/v1/events"))
		return xstrdup(
			"{\"items\":[{\"kind\":\"Event\",\"metadata\":{\"name\":\"e1\"},"
			"\"type\":\"Normal\",\"actor\":\"operator:alice\",\"object\":\"node/r01n01\","
			"\"reason\":\"HoldAdded\",\"message\":\"drain\\nrequested\","
			"\"time\":\"2026-11-30T05:27:16.123Z\"},"
			"{\"kind\":\"Event\",\"metadata\":{\"name\":\"e2\"},\"type\":\"Warning\","
			"\"actor\":\"health\",\"object\":\"node/r01n01\",\"reason\":\"XID\","
			"\"message\":\"xid 79\",\"time\":\"2026-11-30T05:28:00.000Z\"}],"
			"\"metadata\":{\"continue\":\"more\",\"resourceVersion\":\"9\"}}");
	*status = 404;
	*ctype = "text/plain";
	return xstrdup("no route\nsecond line");
}

static enum MHD_Result fake_handler(void *cls, struct MHD_Connection *conn, const char *url,
				    const char *method, const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	struct fake_conn *fc = *con_cls;
	if (!fc) {
		*con_cls = xcalloc(1, sizeof(*fc));
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		if (fc->len + n >= sizeof(fc->body))
			n = sizeof(fc->body) - 1 - fc->len;
		memcpy(fc->body + fc->len, upload, n);
		fc->len += n;
		*upload_size = 0;
		return MHD_YES;
	}
	struct req_log r;
	memset(&r, 0, sizeof(r));
	snprintf(r.method, sizeof(r.method), "%s", method);
	snprintf(r.path, sizeof(r.path), "%s", url);
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, fake_arg, &r);
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	snprintf(r.auth, sizeof(r.auth), "%s", auth ? auth : "");
	memcpy(r.body, fc->body, fc->len);
	pthread_mutex_lock(&fake.mu);
	if (fake.nreqs < 32)
		fake.reqs[fake.nreqs++] = r;
	unsigned status;
	const char *ctype;
	char *text = fake_route(&r, &status, &ctype);
	pthread_mutex_unlock(&fake.mu);
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text,
								    MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", ctype);
	enum MHD_Result ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void fake_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	free(*con_cls);
	*con_cls = NULL;
}

static int fake_setup(void **state)
{
	fake.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
				  fake_handler, NULL, MHD_OPTION_UNESCAPE_CALLBACK, fake_unescape,
				  NULL, MHD_OPTION_NOTIFY_COMPLETED, fake_completed, NULL,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
	if (!fake.d)
		return -1;
	fake.port = MHD_get_daemon_info(fake.d, MHD_DAEMON_INFO_BIND_PORT)->port;
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", fake.port);
	setenv("FLEETPLANE_URL", url, 1);
	setenv("FLEETPLANE_TOKEN", TOKEN "\n", 1); /* trailing newline as from $(cat file) */
	setenv("XDG_CONFIG_HOME", "/nonexistent/fleetplane-test", 1); /* no contexts file */
	return 0;
}

static int fake_teardown(void **state)
{
	MHD_stop_daemon(fake.d);
	return 0;
}

static void fake_reset(void)
{
	pthread_mutex_lock(&fake.mu);
	fake.nreqs = 0;
	fake.watch_calls = 0;
	pthread_mutex_unlock(&fake.mu);
}

static void assert_no_token(const struct run_result *r)
{
	assert_null(strstr(r->out, TOKEN));
	assert_null(strstr(r->err, TOKEN));
}

/* ---- pure helpers ---- */

static void test_table_layout(void **state)
{
	struct table t;
	table_init(&t, 0);
	table_col(&t, "NAME", 10);
	table_col(&t, "PHASE", 0);
	table_cell(&t, "r01n01");
	table_cell(&t, "available");
	table_cell(&t, "a-very-long-node-name");
	table_cell(&t, "");
	table_cell(&t, "tab\there");
	table_cell(&t, "esc\x1b[2Jx");
	assert_int_equal(table_rows(&t), 3);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	table_print(&t, f);
	fclose(f);
	assert_string_equal(buf, "NAME         PHASE\n"
				 "r01n01       available\n"
				 "a-very-lo\xE2\x80\xA6   -\n"
				 "tab here     esc?[2Jx\n");
	free(buf);
	table_release(&t);

	/* wide: no truncation */
	table_init(&t, 1);
	table_col(&t, "NAME", 10);
	table_col(&t, "X", 0);
	table_cell(&t, "a-very-long-node-name");
	table_cell(&t, "1");
	f = open_memstream(&buf, &len);
	table_print_indent(&t, f, 2);
	fclose(f);
	assert_string_equal(buf, "  NAME                    X\n"
				 "  a-very-long-node-name   1\n");
	free(buf);
	table_release(&t);
}

static void test_table_clean_utf8(void **state)
{
	assert_int_equal(table_width("h\xC3\xA9llo"), 5);
	char *s = table_clean("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 3); /* four é, cap 3 */
	assert_string_equal(s, "\xC3\xA9\xC3\xA9\xE2\x80\xA6");
	free(s);
	s = table_clean("abc", 3); /* exactly the cap: untouched */
	assert_string_equal(s, "abc");
	free(s);
	s = table_clean("abcd", 0);
	assert_string_equal(s, "abcd");
	free(s);
	/* nothing reaches the terminal as it is: ESC, C1 CSI, a bidi override, a bad byte */
	s = table_clean("a\x1b[2Jb\xC2\x9B"
			"1mc\xE2\x80\xAE"
			"d\xFF"
			"e\tf",
			0);
	assert_string_equal(s, "a?[2Jb?1mc?d?e f");
	free(s);
	s = table_clean("\xC2\xA0\xE2\x80\xAF", 0); /* U+00A0, U+202F: printable, kept */
	assert_string_equal(s, "\xC2\xA0\xE2\x80\xAF");
	free(s);
	s = table_clean("\xFF\xFE\xFD"
			"x",
			3); /* bad bytes count one each */
	assert_string_equal(s, "??\xE2\x80\xA6");
	free(s);
}

static void test_age(void **state)
{
	char a[16];
	int64_t now = 1796014169803LL;
	table_age(now, now - 5000, a, sizeof(a));
	assert_string_equal(a, "5s");
	table_age(now, now - 59999, a, sizeof(a));
	assert_string_equal(a, "59s");
	table_age(now, now - 60000, a, sizeof(a));
	assert_string_equal(a, "1m");
	table_age(now, now - 239000, a, sizeof(a));
	assert_string_equal(a, "3m");
	table_age(now, now - 2 * 3600000LL - 59 * 60000LL, a, sizeof(a));
	assert_string_equal(a, "2h");
	table_age(now, now - 4 * 86400000LL - 5 * 3600000LL, a, sizeof(a));
	assert_string_equal(a, "4d");
	table_age(now, now - 800 * 86400000LL, a, sizeof(a));
	assert_string_equal(a, "2y");
	table_age(now, now + 10000, a, sizeof(a));
	assert_string_equal(a, "0s");
	table_age(now, 0, a, sizeof(a));
	assert_string_equal(a, "-");
}

static void test_problem_format(void **state)
{
	char line[256];
	json_t *p = json_pack("{s:s,s:s,s:i,s:s}", "type", "about:blank", "title", "Conflict",
			      "status", 409, "detail", "node r01n03 is retiring");
	client_problem_format(409, p, NULL, 0, line, sizeof(line));
	assert_string_equal(line, "error: Conflict: node r01n03 is retiring (HTTP 409)");
	json_object_del(p, "detail");
	client_problem_format(409, p, NULL, 0, line, sizeof(line));
	assert_string_equal(line, "error: Conflict (HTTP 409)");
	json_decref(p);
	p = json_pack("{s:s}", "detail", "line one\nline two");
	client_problem_format(400, p, NULL, 0, line, sizeof(line));
	assert_string_equal(line, "error: Bad Request: line one (HTTP 400)");
	json_decref(p);
	const char raw[] = "<html>\x01oops</html>\nmore";
	client_problem_format(502, NULL, raw, sizeof(raw) - 1, line, sizeof(line));
	assert_string_equal(line, "error: Bad Gateway: <html>?oops</html> (HTTP 502)");
	client_problem_format(599, NULL, NULL, 0, line, sizeof(line));
	assert_string_equal(line, "error: HTTP error (HTTP 599)");
}

static void test_escape_and_query(void **state)
{
	char *e = client_escape("node/r01 n03");
	assert_string_equal(e, "node%2Fr01%20n03");
	free(e);
	e = client_escape("a-b.c_d~e");
	assert_string_equal(e, "a-b.c_d~e");
	free(e);
	struct buf b;
	buf_init(&b, 1024);
	buf_puts(&b, "/v1/nodes");
	assert_int_equal(client_query_add(&b, "labelSelector", "site=s1,rack!=r07"), 0);
	assert_int_equal(client_query_add(&b, "phase", NULL), 0);
	assert_int_equal(client_query_add(&b, "continue", "a&b=c+d"), 0);
	assert_string_equal(b.data, "/v1/nodes?labelSelector=site%3Ds1%2Crack%21%3Dr07"
				    "&continue=a%26b%3Dc%2Bd");
	buf_release(&b);
	char *p = NULL;
	assert_int_equal(node_list_path("k=v", "available", "42", &p), 0);
	assert_string_equal(p, "/v1/nodes?watch=1&resourceVersion=42&labelSelector=k%3Dv"
			       "&phase=available");
	free(p);
	assert_int_equal(node_list_path(NULL, NULL, NULL, &p), 0);
	assert_string_equal(p, "/v1/nodes");
	free(p);
}

static void test_rv_and_time(void **state)
{
	char t[32];
	json_t *v = json_integer(42);
	client_rv_text(v, t, sizeof(t));
	assert_string_equal(t, "42");
	json_decref(v);
	v = json_string("17");
	client_rv_text(v, t, sizeof(t));
	assert_string_equal(t, "17");
	assert_int_equal(client_time_ms(v), 0); /* not a time */
	json_decref(v);
	client_rv_text(NULL, t, sizeof(t));
	assert_string_equal(t, "");
	v = json_string("2026-11-30T04:49:29.803Z");
	assert_int_equal(client_time_ms(v), 1796014169803LL);
	json_decref(v);
	v = json_integer(1796014169803LL);
	assert_int_equal(client_time_ms(v), 1796014169803LL);
	json_decref(v);
}

/* ---- usage errors: all answered before any network access ---- */

static void test_usage_errors(void **state)
{
	struct run_result r;
	run_cmd(&r, cmd_node, "node", NULL);
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "Usage: fleetplane node <verb>"));

	run_cmd(&r, cmd_node, "node", "frob", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unknown verb 'frob' for 'node'\n"
				   "Run 'fleetplane node --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "list", "--bogus", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unknown flag '--bogus'\n"
				   "Run 'fleetplane node list --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "list", "--bogus=1", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unknown flag '--bogus'\n"
				   "Run 'fleetplane node list --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "list", "-x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unknown flag '-x'\n"
				   "Run 'fleetplane node list --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "list", "-o", "xml", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unknown output format 'xml' (want table, json, wide, "
				   "yaml or name)\n"
				   "Run 'fleetplane node list --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "list", "extra", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unexpected argument 'extra'\n"
				   "Run 'fleetplane node list --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "list", "--watch", "-o", "json", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: --watch cannot be combined with -o, --no-headers or "
				   "--sort-by\n"
				   "Run 'fleetplane node list --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "drain", "--reason", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: flag '--reason' needs a value\n"
				   "Run 'fleetplane node drain --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "drain", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: missing NAME\n"
				   "Run 'fleetplane node drain --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "drain", "", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: refusing an empty node name\n"
				   "Run 'fleetplane node drain --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "retire", "*", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: refusing node name '*': wildcards and selectors are not "
				   "targets; name one node\n"
				   "Run 'fleetplane node retire --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "drain", "r01n01", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: missing --reason TEXT\n"
				   "Run 'fleetplane node drain --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "drain", "r01n01", "--owner", "health", "--reason", "x",
		NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unknown flag '--owner'\n"
				   "Run 'fleetplane node drain --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "release", "r01n01", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: missing --owner OWNER\n"
				   "Run 'fleetplane node release --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "enroll", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: missing -f FILE\n"
				   "Run 'fleetplane node enroll --help' for usage.\n");

	run_cmd(&r, cmd_node, "node", "get", "a", "b", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unexpected argument 'b'\n"
				   "Run 'fleetplane node get --help' for usage.\n");

	run_cmd(&r, cmd_op, "op", "get", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err,
			    "error: missing ID\nRun 'fleetplane op get --help' for usage.\n");

	run_cmd(&r, cmd_op, "op", "list", "-o", "wide", "--state", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: flag '--state' needs a value\n"
				   "Run 'fleetplane op list --help' for usage.\n");

	run_cmd(&r, cmd_event, "event", "list", "--limit", "0", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err,
			    "error: flag '--limit' needs a count from 1 to 10000000, got '0'\n"
			    "Run 'fleetplane event list --help' for usage.\n");

	run_cmd(&r, cmd_event, "event", "list", "--limit", "12x", NULL);
	assert_int_equal(r.rc, 2);

	run_cmd(&r, cmd_token, "token", "create", "--name", "x", "--role", "root", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err,
			    "error: unknown role 'root' (want admin, operator, viewer or agent)\n"
			    "Run 'fleetplane token create --help' for usage.\n");

	run_cmd(&r, cmd_token, "token", "create", "--name", "a1", "--role", "agent", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: --role agent needs --node NODE\n"
				   "Run 'fleetplane token create --help' for usage.\n");

	run_cmd(&r, cmd_token, "token", "revoke", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: refusing an empty token name\n"
				   "Run 'fleetplane token revoke --help' for usage.\n");
}

static void test_help(void **state)
{
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "--help", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, node_usage_text);
	run_cmd(&r, cmd_node, "node", "list", "-h", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, node_list_usage);
	const char *verbs[] = {"get", "enroll", "drain", "resume", "retire", "release"};
	for (size_t i = 0; i < 6; i++) {
		run_cmd(&r, cmd_node, "node", verbs[i], "--help", NULL);
		assert_int_equal(r.rc, 0);
		assert_non_null(strstr(r.out, "Usage: fleetplane node "));
		assert_string_equal(r.err, "");
	}
	run_cmd(&r, cmd_op, "op", "-h", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, op_usage_text);
	run_cmd(&r, cmd_op, "op", "get", "-h", NULL);
	assert_string_equal(r.out, op_get_usage);
	run_cmd(&r, cmd_event, "event", "list", "--help", NULL);
	assert_string_equal(r.out, ev_list_usage);
	run_cmd(&r, cmd_token, "token", "create", "--help", NULL);
	assert_string_equal(r.out, tok_create_usage);
	run_cmd(&r, cmd_token, "token", "revoke", "-h", NULL);
	assert_string_equal(r.out, tok_revoke_usage);
}

static void test_env(void **state)
{
	struct run_result r;
	char *saved = xstrdup(getenv("FLEETPLANE_TOKEN"));
	unsetenv("FLEETPLANE_TOKEN");
	run_cmd(&r, cmd_node, "node", "list", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: FLEETPLANE_TOKEN is not set; export a token (an admin "
				   "token is in <data-dir>/admin.token, others come from "
				   "'fleetplane token create'), or name a token-file in a "
				   "context of ~/.config/fleetplane/config\n");
	setenv("FLEETPLANE_TOKEN", "two words", 1);
	run_cmd(&r, cmd_node, "node", "list", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: FLEETPLANE_TOKEN contains a space or control byte\n");
	setenv("FLEETPLANE_TOKEN", saved, 1);
	free(saved);

	char *url = xstrdup(getenv("FLEETPLANE_URL"));
	setenv("FLEETPLANE_URL", "ftp://x", 1);
	run_cmd(&r, cmd_node, "node", "list", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: FLEETPLANE_URL must start with http:// or https:// "
				   "(got 'ftp://x')\n");
	setenv("FLEETPLANE_URL", url, 1);
	free(url);
}

/* ---- against the fake server ---- */

static void test_connect_refused(void **state)
{
	/* a port that was free a moment ago and has no listener now */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	getsockname(s, (struct sockaddr *)&a, &al);
	close(s);
	char url[64], want[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	snprintf(want, sizeof(want), "error: cannot reach fleetplane at %s: ", url);
	char *saved = xstrdup(getenv("FLEETPLANE_URL"));
	setenv("FLEETPLANE_URL", url, 1);
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "get", "r01n01", NULL);
	assert_int_equal(r.rc, 3);
	assert_memory_equal(r.err, want, strlen(want));
	assert_string_equal(r.out, "");
	assert_no_token(&r);
	setenv("FLEETPLANE_URL", saved, 1);
	free(saved);
}

static void test_node_list_table_and_paging(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "list", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_string_equal(
		r.out, "NAME     PHASE       HOLDS                   SITE   RACK   GPUS   AGE\n"
		       "r01n01   available   -                       s1     r01    8      5m\n"
		       "r01n02   draining    health,operator:alice   s1     r01    8      3h\n"
		       "r02n01   enrolled    -                       s2     r02    -      5m\n");
	assert_int_equal(fake.nreqs, 2);
	assert_string_equal(fake.reqs[0].method, "GET");
	assert_string_equal(fake.reqs[0].path, "/v1/nodes");
	assert_string_equal(fake.reqs[0].query, "limit=500");
	assert_string_equal(fake.reqs[0].auth, "Bearer " TOKEN);
	assert_string_equal(fake.reqs[1].query, "limit=500&continue=abc%20def%2F%2B");
	assert_no_token(&r);
}

static void test_node_list_json(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "list", "-o", "json", NULL);
	assert_int_equal(r.rc, 0);
	json_t *doc = NULL;
	char e[128];
	assert_int_equal(jsonx_parse(r.out, strlen(r.out), &doc, e, sizeof(e)), 0);
	assert_int_equal(json_object_size(doc), 1);
	json_t *items = json_object_get(doc, "items");
	assert_int_equal(json_array_size(items), 3);
	assert_string_equal(jsonx_str(json_array_get(items, 0), "metadata.name"), "r01n01");
	assert_int_equal(json_array_size(jsonx_path(json_array_get(items, 1), "status.holds")), 2);
	assert_string_equal(jsonx_str(json_array_get(items, 2), "metadata.name"), "r02n01");
	assert_string_equal(jsonx_str(json_array_get(items, 0), "spec.bmc.driver"), "sim");
	json_decref(doc);
	assert_int_equal(fake.nreqs, 2);
}

static void test_node_list_empty_and_selector(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "list", "-l", "site=s1", "-l", "rack!=r07", "--phase",
		"empty", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "No nodes found.\n");
	assert_int_equal(fake.nreqs, 1);
	assert_string_equal(fake.reqs[0].query,
			    "labelSelector=site%3Ds1%2Crack%21%3Dr07&phase=empty&limit=500");
}

static void test_node_get(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "get", "r01n01", "-o", "json", NULL);
	assert_int_equal(r.rc, 0);
	json_t *doc = NULL;
	char e[128];
	assert_int_equal(jsonx_parse(r.out, strlen(r.out), &doc, e, sizeof(e)), 0);
	assert_string_equal(jsonx_str(doc, "kind"), "Node");
	assert_string_equal(jsonx_str(doc, "metadata.name"), "r01n01");
	json_decref(doc);

	run_cmd(&r, cmd_node, "node", "get", "r01n01", NULL);
	assert_int_equal(r.rc, 0);
	/* all but the Created timestamp, which the fake server takes from the clock */
	static const char head[] = "Name:        r01n01\n"
				   "Phase:       available (for 2m)\n"
				   "Site:        s1\n"
				   "Rack:        r01\n"
				   "Provider:    -\n"
				   "Pool:        -\n"
				   "Labels:      site=s1\n"
				   "GPUs:        8 x NVIDIA H100 80GB HBM3\n"
				   "BMC:         sim\n"
				   "Operation:   -\n"
				   "Created:     ";
	static const char tail[] = " (2m ago)\n"
				   "Holds:       <none>\n"
				   "Conditions:\n"
				   "  TYPE           STATUS   REASON     AGE   MESSAGE\n"
				   "  BMCReachable   True     Answered   2m    ok\n"
				   "Inventory:\n"
				   "  gpus: 2 x H100\n"
				   "  cpu: model=EPYC 9454 sockets=2 (+1 more)\n";
	size_t stamp = strlen("2026-11-30T05:27:16.123Z");
	assert_int_equal(strlen(r.out), strlen(head) + stamp + strlen(tail));
	assert_memory_equal(r.out, head, strlen(head));
	assert_string_equal(r.out + strlen(head) + stamp, tail);

	run_cmd(&r, cmd_node, "node", "get", "nosuch", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "error: Not Found: node nosuch does not exist (HTTP 404)\n");
	assert_string_equal(r.out, "");
	assert_no_token(&r);
}

static void test_node_drain(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "drain", "r01n01", "--reason", "swap \"PSU\"", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "node/r01n01 drain requested, phase draining\n");
	assert_int_equal(fake.nreqs, 1);
	assert_string_equal(fake.reqs[0].method, "POST");
	assert_string_equal(fake.reqs[0].path, "/v1/nodes/r01n01:drain");
	assert_string_equal(fake.reqs[0].body, "{\"reason\":\"swap \\\"PSU\\\"\"}");
	assert_string_equal(fake.reqs[0].auth, "Bearer " TOKEN);

	run_cmd(&r, cmd_node, "node", "drain", "busy", "--reason", "x", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "error: Conflict: node busy is retiring (HTTP 409)\n");
	assert_no_token(&r);

	/* a wrong token: the server's 401 is reported, the token itself never */
	setenv("FLEETPLANE_TOKEN", "wrong-secret-123", 1);
	run_cmd(&r, cmd_node, "node", "drain", "r01n01", "--reason", "x", NULL);
	setenv("FLEETPLANE_TOKEN", TOKEN, 1);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "error: Unauthorized: bad or missing bearer token (HTTP 401)\n");
	assert_null(strstr(r.err, "wrong-secret-123"));

	/* retire without powering off: skipPowerOff in the body; the flag is retire's only */
	fake_reset();
	run_cmd(&r, cmd_node, "node", "retire", "r01n01", "--reason", "BMC dead",
		"--skip-power-off", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out,
			    "node/r01n01 retire requested without powering off, phase retiring\n");
	assert_int_equal(fake.nreqs, 1);
	assert_string_equal(fake.reqs[0].path, "/v1/nodes/r01n01:retire");
	assert_string_equal(fake.reqs[0].body, "{\"reason\":\"BMC dead\",\"skipPowerOff\":true}");
	run_cmd(&r, cmd_node, "node", "drain", "r01n01", "--reason", "x", "--skip-power-off", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unknown flag '--skip-power-off'\n"
				   "Run 'fleetplane node drain --help' for usage.\n");
	assert_int_equal(fake.nreqs, 1);

	/* no route: a plain-text body becomes the detail, first line only */
	run_cmd(&r, cmd_node, "node", "resume", "r01n01", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "error: Not Found: no route (HTTP 404)\n");
	assert_string_equal(fake.reqs[fake.nreqs - 1].path, "/v1/nodes/r01n01:resume");
	assert_string_equal(fake.reqs[fake.nreqs - 1].body, "{}");
}

static void test_node_power(void **state)
{
	struct run_result r;
	const char *help = "Run 'fleetplane node power --help' for usage.\n";
	char want[512];
	fake_reset();
	/* usage errors: exit 2, nothing sent */
	run_cmd(&r, cmd_node, "node", "power", NULL);
	assert_int_equal(r.rc, 2);
	snprintf(want, sizeof(want),
		 "error: missing NAME and ACTION (on, off, cycle, soft, reset "
		 "or status)\n%s",
		 help);
	assert_string_equal(r.err, want);
	run_cmd(&r, cmd_node, "node", "power", "pw-on", NULL);
	assert_int_equal(r.rc, 2);
	snprintf(want, sizeof(want),
		 "error: missing ACTION: on, off, cycle, soft, reset or "
		 "status\n%s",
		 help);
	assert_string_equal(r.err, want);
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "restart", NULL);
	assert_int_equal(r.rc, 2);
	snprintf(want, sizeof(want),
		 "error: unknown action 'restart': expected on, off, cycle, "
		 "soft, reset or status\n%s",
		 help);
	assert_string_equal(r.err, want);
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "on", "off", NULL);
	assert_int_equal(r.rc, 2);
	snprintf(want, sizeof(want), "error: unexpected argument 'off'\n%s", help);
	assert_string_equal(r.err, want);
	run_cmd(&r, cmd_node, "node", "power", "r01*", "off", NULL);
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "wildcards and selectors are not targets"));
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "on", "--timeout", "5", NULL);
	assert_int_equal(r.rc, 2);
	snprintf(want, sizeof(want), "error: --timeout needs --wait\n%s", help);
	assert_string_equal(r.err, want);
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "on", "--wait", "--timeout", "0", NULL);
	assert_int_equal(r.rc, 2);
	snprintf(want, sizeof(want), "error: --timeout: '0' is not 1..86400 seconds\n%s", help);
	assert_string_equal(r.err, want);
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "on", "--bogus", NULL);
	assert_int_equal(r.rc, 2);
	assert_int_equal(fake.nreqs, 0);

	/* accepted: exit 0 at once, queued behind the operation in flight */
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "off", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "power off requested for pw-on: operation power-1 (queued "
				   "behind provision-1)\n");
	assert_string_equal(r.err, "");
	assert_int_equal(fake.nreqs, 1);
	assert_string_equal(fake.reqs[0].method, "POST");
	assert_string_equal(fake.reqs[0].path, "/v1/nodes/pw-on:power");
	assert_string_equal(fake.reqs[0].body, "{\"action\":\"off\"}");

	/* --wait: the operation ended well; the node's power is printed */
	fake_reset();
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "off", "--wait", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "power off requested for pw-on: operation power-1 (queued "
				   "behind provision-1)\noff\n");
	assert_int_equal(fake.nreqs, 3);
	assert_string_equal(fake.reqs[1].path, "/v1/operations/power-1");
	assert_string_equal(fake.reqs[2].path, "/v1/nodes/pw-on");

	/* --wait: the operation failed: exit 1 with its last error */
	run_cmd(&r, cmd_node, "node", "power", "pw-fail", "off", "--wait", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.out, "power off requested for pw-fail: operation power-2\n");
	assert_string_equal(r.err, "error: operation power-2 failed: step power_off attempt 5: "
				   "power off: simulated BMC did not answer\n");

	/* status on a node with no operation in flight: the node is read, then the read is
	 * requested and waited for; only the power is printed */
	fake_reset();
	run_cmd(&r, cmd_node, "node", "power", "pw-unk", "status", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "unknown (PowerStateMissing: Redfish PowerState absent)\n");
	assert_string_equal(fake.reqs[0].method, "GET");
	assert_string_equal(fake.reqs[0].path, "/v1/nodes/pw-unk");
	assert_string_equal(fake.reqs[1].body, "{\"action\":\"status\"}");
	assert_int_equal(fake.nreqs, 4);
	/* ... with an operation in flight: the last recorded power, no operation created */
	fake_reset();
	run_cmd(&r, cmd_node, "node", "power", "pw-busy", "status", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "on (recorded 2m ago: PoweredOn True, BMCReportsOn)\n"
				   "not read now: a fresh read would queue behind operation "
				   "provision-7 (--refresh queues one)\n");
	assert_int_equal(fake.nreqs, 1);
	assert_string_equal(fake.reqs[0].method, "GET");
	run_cmd(&r, cmd_node, "node", "power", "pw-busy", "status", "-o", "json", NULL);
	assert_int_equal(r.rc, 0);
	json_t *j = json_loads(r.out, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "behind")), "provision-7");
	assert_string_equal(jsonx_str(json_object_get(j, "poweredOn"), "reason"), "BMCReportsOn");
	json_decref(j);
	/* --refresh (or --wait) asks for the read as before */
	fake_reset();
	run_cmd(&r, cmd_node, "node", "power", "pw-unk", "status", "--refresh", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(fake.reqs[0].method, "POST");
	assert_string_equal(fake.reqs[0].body, "{\"action\":\"status\"}");
	assert_int_equal(fake.nreqs, 3);
	/* --force goes in the body; it and --refresh are refused for the other actions */
	fake_reset();
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "off", "--force", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(fake.reqs[0].body, "{\"action\":\"off\",\"force\":true}");
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "on", "--force", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: --force is for off, soft, cycle and reset only\n"
				   "Run 'fleetplane node power --help' for usage.\n");
	fake_reset();
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "cycle", "--force", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(fake.reqs[0].body, "{\"action\":\"cycle\",\"force\":true}");
	run_cmd(&r, cmd_node, "node", "power", "pw-on", "on", "--refresh", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: --refresh is for status only\n"
				   "Run 'fleetplane node power --help' for usage.\n");
	assert_int_equal(fake.nreqs, 1);

	/* refused by the server */
	run_cmd(&r, cmd_node, "node", "power", "retired1", "on", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err, "error: Conflict: node retired1 is retired (HTTP 409)\n");
	assert_no_token(&r);
}

static void test_node_enroll(void **state)
{
	fake_reset();
	char path[] = "/tmp/test_cli_enrollXXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char doc[] =
		"{\"items\":[{\"metadata\":{\"name\":\"a1\"}},{\"metadata\":{\"name\":\"a2\"}}]}";
	assert_int_equal(write(fd, doc, sizeof(doc) - 1), (ssize_t)(sizeof(doc) - 1));
	close(fd);
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "enroll", "-f", path, NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "enrolled 2 nodes\n");
	assert_int_equal(fake.nreqs, 1);
	assert_string_equal(fake.reqs[0].path, "/v1/nodes");
	assert_string_equal(fake.reqs[0].body, doc);

	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{\"a\":1,", 7), 7);
	close(fd);
	run_cmd(&r, cmd_node, "node", "enroll", "-f", path, NULL);
	assert_int_equal(r.rc, 2);
	char want[256];
	snprintf(want, sizeof(want),
		 "error: %s: invalid JSON at line 1 column 7: "
		 "string or '}' expected near end of file\n",
		 path);
	assert_string_equal(r.err, want);
	assert_int_equal(fake.nreqs, 1); /* nothing sent */
	unlink(path);

	run_cmd(&r, cmd_node, "node", "enroll", "-f", "/nonexistent/nodes.json", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: cannot open /nonexistent/nodes.json: No such file or "
				   "directory\n");
}

static void test_node_watch_lines(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "list", "--watch", "-l", "site=s1", NULL);
	/* list (r01n01 available, rv 7) -> watch rv 7: 410 -> relist (draining, rv 8) ->
	 * watch rv 8: ADDED r01n02, heartbeat, DELETED r01n02, ERROR 403 -> exit 1 */
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.out, "ADDED r01n01 available\n"
				   "MODIFIED r01n01 available->draining\n"
				   "ADDED r01n02 enrolled\n"
				   "DELETED r01n02 enrolled\n");
	assert_string_equal(r.err, "error: Forbidden: token revoked (HTTP 403)\n");
	assert_int_equal(fake.nreqs, 4);
	assert_string_equal(fake.reqs[0].query, "labelSelector=site%3Ds1&limit=500");
	assert_string_equal(fake.reqs[1].query,
			    "watch=1&resourceVersion=7&labelSelector=site%3Ds1");
	assert_string_equal(fake.reqs[2].query, "labelSelector=site%3Ds1&limit=500");
	assert_string_equal(fake.reqs[3].query,
			    "watch=1&resourceVersion=8&labelSelector=site%3Ds1");
}

/* The same watch with stdout on a pseudo-terminal: a live bar, errors after its line. */
static void test_node_watch_tty(void **state)
{
	fake_reset();
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(m >= 0);
	assert_int_equal(grantpt(m), 0);
	assert_int_equal(unlockpt(m), 0);
	int sl = open(ptsname(m), O_RDWR | O_NOCTTY);
	assert_true(sl >= 0);
	char pe[] = "/tmp/test_cli_errXXXXXX";
	int fe = mkstemp(pe);
	unlink(pe);
	char *argv[] = {xstrdup("node"), xstrdup("list"),    xstrdup("-w"),
			xstrdup("-l"),   xstrdup("site=s1"), NULL};
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	dup2(sl, 1);
	dup2(fe, 2);
	int rc = cmd_node(5, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	close(sl);
	char out[8192], err[1024];
	size_t n = 0;
	ssize_t k;
	fcntl(m, F_SETFL, O_NONBLOCK);
	while (n + 1 < sizeof(out) && (k = read(m, out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = 0;
	close(m);
	slurp_fd(fe, err, sizeof(err));
	close(fe);
	for (int i = 0; argv[i]; i++)
		free(argv[i]);
	assert_int_equal(rc, 1);
	static const char first[] = "\ravailable 1/1 [####################]\033[K";
	static const char last[] = "\ravailable 0/1 [--------------------] draining 1\033[K\r\n";
	assert_memory_equal(out, first, strlen(first));
	assert_true(n >= strlen(last));
	assert_string_equal(out + n - strlen(last), last);
	assert_string_equal(err, "error: Forbidden: token revoked (HTTP 403)\n");
}

/* client_request used directly, as `demo` does: text bodies, bad JSON, statuses. */
static void test_request_direct(void **state)
{
	fake_reset();
	struct client c;
	assert_int_equal(client_init(&c), 0);
	char path[] = "/tmp/test_cli_cerrXXXXXX";
	int fd = mkstemp(path);
	unlink(path);
	c.err = fdopen(fd, "w+");
	long status = -1;
	json_t *out = NULL;
	assert_int_equal(client_request(&c, "GET", "/readyz", NULL, &status, &out), 0);
	assert_int_equal(status, 200);
	assert_null(out);
	assert_int_equal(client_request(&c, "GET", "/v1/garbage", NULL, &status, &out), 1);
	assert_int_equal(status, 200);
	assert_null(out);
	assert_int_equal(client_request(&c, "POST", "/v1/nodes/busy:drain", NULL, &status, &out),
			 1);
	assert_int_equal(status, 409);
	fflush(c.err);
	char err[1024];
	slurp_fd(fd, err, sizeof(err));
	assert_string_equal(err, "error: fleetplane answered GET /v1/garbage with a body that is "
				 "not JSON: invalid JSON at line 1 column 5: unexpected token "
				 "near end of file\n"
				 "error: Conflict: node busy is retiring (HTTP 409)\n");
	fclose(c.err);
	char want_url[64];
	snprintf(want_url, sizeof(want_url), "http://127.0.0.1:%u", fake.port); /* '/' stripped */
	assert_string_equal(c.url, want_url);
	assert_string_equal(c.token, TOKEN); /* trailing newline stripped */
	client_release(&c);
	assert_null(c.token);
}

static void test_op(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_op, "op", "list", "--node", "r01n01", "--state", "running", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(
		r.out, "ID     NODE     KIND        STATE     STEP              ATTEMPT   AGE\n"
		       "op-1   r01n01   provision   running   2/3 power_cycle   2         45s\n");
	assert_string_equal(fake.reqs[0].path, "/v1/operations");
	assert_string_equal(fake.reqs[0].query, "node=r01n01&state=running&limit=500");

	run_cmd(&r, cmd_op, "op", "get", "op 1", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(fake.reqs[1].path, "/v1/operations/op%201");
	assert_string_equal(r.out, "ID:          op 1\n"
				   "Node:        r01n01\n"
				   "Kind:        power\n"
				   "State:       succeeded\n"
				   "Step:        done\n"
				   "Attempt:     1\n"
				   "Reason:      -\n"
				   "Actor:       -\n"
				   "Created:     -\n"
				   "Started:     -\n"
				   "Finished:    -\n"
				   "Last error:  -\n"
				   "Steps:\n"
				   "  #   STEP       STATUS\n"
				   "  1   power_on   done\n");

	/* cancel: the reason in the body; the server's 409 for a running one is printed */
	run_cmd(&r, cmd_op, "op", "cancel", "op 1", "--reason", "not needed", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "operation op 1 cancelled\n");
	assert_string_equal(fake.reqs[2].method, "POST");
	assert_string_equal(fake.reqs[2].path, "/v1/operations/op%201:cancel");
	assert_string_equal(fake.reqs[2].body, "{\"reason\":\"not needed\"}");
	run_cmd(&r, cmd_op, "op", "cancel", "op-run", NULL);
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err,
			    "error: Conflict: operation op-run is running step power_on; "
			    "only queued or pending operations can be cancelled (HTTP 409)\n");
	assert_string_equal(fake.reqs[3].body, "{}");
	run_cmd(&r, cmd_op, "op", "cancel", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: missing ID\n"
				   "Run 'fleetplane op cancel --help' for usage.\n");
	assert_int_equal(fake.nreqs, 4);
}

static void test_event_list(void **state)
{
	fake_reset();
	struct run_result r;
	/* newest first: every page is read (the API lists oldest first), the newest kept */
	run_cmd(&r, cmd_event, "event", "list", "--object", "node/r01n01", "--type", "Warning",
		"--reason", "Failed", "--since", "2026-11-30T05:00:00+01:00", "--limit", "2", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(
		r.out,
		"TIME                       TYPE      OBJECT        REASON   ACTOR                  MESSAGE\n"
		"2026-11-30T05:29:00.000Z   Warning   node/r01n02   Failed   controller:lifecycle   on\n"
		"2026-11-30T05:28:00.000Z   Warning   node/r01n01   XID      health                 xid 79\n");
	assert_string_equal(r.err, "note: showing the newest 2 of 3 events\n");
	assert_int_equal(fake.nreqs, 2);
	assert_string_equal(
		fake.reqs[0].query,
		"object=node%2Fr01n01&type=Warning&reason=Failed&since=2026-11-30T04%3A00%3A00.000Z&limit=500");
	assert_string_equal(
		fake.reqs[1].query,
		"object=node%2Fr01n01&type=Warning&reason=Failed&since=2026-11-30T04%3A00%3A00.000Z&limit=500&continue=more");

	run_cmd(&r, cmd_event, "event", "list", "-o", "json", "--limit", "2", NULL);
	assert_int_equal(r.rc, 0);
	json_t *doc = NULL;
	char e[128];
	assert_int_equal(jsonx_parse(r.out, strlen(r.out), &doc, e, sizeof(e)), 0);
	json_t *items = json_object_get(doc, "items");
	assert_int_equal(json_array_size(items), 2);
	assert_string_equal(jsonx_str(json_array_get(items, 0), "metadata.name"), "e3");
	assert_string_equal(jsonx_str(json_array_get(items, 1), "metadata.name"), "e2");
	json_decref(doc);

	run_cmd(&r, cmd_event, "event", "list", "-o", "name", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "event/e3\nevent/e2\nevent/e1\n");

	run_cmd(&r, cmd_event, "event", "list", "--no-headers", "--sort-by", "{.reason}", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(
		r.out,
		"2026-11-30T05:29:00.000Z   Warning   node/r01n02   Failed      controller:lifecycle   on\n"
		"2026-11-30T05:27:16.123Z   Normal    node/r01n01   HoldAdded   operator:alice         drain requested\n"
		"2026-11-30T05:28:00.000Z   Warning   node/r01n01   XID         health                 xid 79\n");

	run_cmd(&r, cmd_event, "event", "list", "--sort-by", ".status.phase", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: --sort-by: no item has the field '.status.phase'\n");
	assert_string_equal(r.out, "");

	int n = fake.nreqs;
	run_cmd(&r, cmd_event, "event", "list", "--since", "10", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(
		r.err, "error: flag '--since' needs a duration such as 10m, 2h or 1d (1s..3650d) "
		       "or an RFC 3339 time such as 2026-11-30T05:00:00Z, got '10'\n"
		       "Run 'fleetplane event list --help' for usage.\n");
	run_cmd(&r, cmd_event, "event", "list", "--type", "warning", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: flag '--type' needs Normal or Warning, got 'warning'\n"
				   "Run 'fleetplane event list --help' for usage.\n");
	run_cmd(&r, cmd_event, "event", "list", "-o", "xml", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err,
			    "error: unknown output format 'xml' (want table, json, wide, "
			    "yaml or name)\nRun 'fleetplane event list --help' for usage.\n");
	run_cmd(&r, cmd_event, "event", "list", "--sort-by", ".a..b", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: flag '--sort-by': bad field path '.a..b': field 2 is "
				   "empty or has a bad character\n"
				   "Run 'fleetplane event list --help' for usage.\n");
	assert_int_equal(fake.nreqs, n); /* usage errors send nothing */
}

static void test_node_list_formats(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "list", "-o", "name", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "node/r01n01\nnode/r01n02\nnode/r02n01\n");

	run_cmd(&r, cmd_node, "node", "list", "-o", "reasons", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(
		r.out,
		"NODE     OWNER            SINCE                  REASON\n"
		"r01n02   health           2026-01-01T00:00:00Z   xid 79\n"
		"r01n02   operator:alice   2026-01-01T00:00:00Z   swap a cable in the rack\n");

	run_cmd(&r, cmd_node, "node", "list", "-o", "reasons", "--no-headers", "--sort-by",
		".metadata.name", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(
		r.out,
		"r01n02   health           2026-01-01T00:00:00Z   xid 79\n"
		"r01n02   operator:alice   2026-01-01T00:00:00Z   swap a cable in the rack\n");

	/* by phase: available < draining < enrolled; the header is left out */
	run_cmd(&r, cmd_node, "node", "list", "--sort-by", ".status.phase", "--no-headers", "-o",
		"name", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "node/r01n01\nnode/r01n02\nnode/r02n01\n");
	run_cmd(&r, cmd_node, "node", "list", "--sort-by", ".spec.gpus.count", "-o", "name", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "node/r02n01\nnode/r01n01\nnode/r01n02\n"); /* none first */
	run_cmd(&r, cmd_node, "node", "list", "--sort-by", ".status.phase", "--no-headers", NULL);
	assert_int_equal(r.rc, 0);
	assert_true(strncmp(r.out, "r01n01   available", 18) == 0);

	run_cmd(&r, cmd_node, "node", "list", "-o", "yaml", NULL);
	assert_int_equal(r.rc, 0);
	static const char yaml_head[] = "items:\n"
					"- kind: Node\n"
					"  metadata:\n"
					"    name: r01n01\n"
					"    uid: u-r01n01\n"
					"    resourceVersion: \"5\"\n"
					"    labels:\n"
					"      site: s1\n"
					"    createdAt: \"";
	assert_true(strncmp(r.out, yaml_head, strlen(yaml_head)) == 0);
	assert_non_null(strstr(r.out, "\n    holds: []\n"));
	assert_non_null(strstr(r.out, "\n    - owner: \"operator:alice\"\n"));
	assert_non_null(strstr(r.out, "\n      count: 8\n"));
}

static void test_node_bulk_usage(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_node, "node", "drain", "r0[1-2", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: bad hostlist 'r0[1-2': hostlist: '[' at offset 2 has no "
				   "']'\nRun 'fleetplane node drain --help' for usage.\n");
	run_cmd(&r, cmd_node, "node", "drain", "r[1-2]*", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "wildcards and selectors are not targets"));
	run_cmd(&r, cmd_node, "node", "drain", "r[0001-1001]", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: hostlist 'r[0001-1001]' names 1001 nodes; at most 1000 "
				   "at once\nRun 'fleetplane node drain --help' for usage.\n");
	run_cmd(&r, cmd_node, "node", "drain", "r[1-2]", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: missing --reason TEXT\n"
				   "Run 'fleetplane node drain --help' for usage.\n");
	run_cmd(&r, cmd_node, "node", "drain", "-l", "rack=r01", "r01n01", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unexpected argument 'r01n01'\n"
				   "Run 'fleetplane node drain --help' for usage.\n");
	run_cmd(&r, cmd_node, "node", "retire", "r[1-2]", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_non_null(strstr(r.err, "wildcards and selectors are not targets"));
	run_cmd(&r, cmd_node, "node", "retire", "-l", "a=b", "--reason", "x", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: unknown flag '-l'\n"
				   "Run 'fleetplane node retire --help' for usage.\n");
	assert_int_equal(fake.nreqs, 0);
}

static void test_wait_text(void **state)
{
	char out[400];
	json_t *op = json_loads("{\"spec\":{\"steps\":[\"power_off\",\"power_on\"]},\"status\":"
				"{\"state\":\"running\",\"step\":1,\"attempt\":2}}",
				0, NULL);
	cli_wait_text("power-1", 12345, op, out, sizeof(out));
	assert_string_equal(out, "waiting 12s for operation power-1: running, step 2/2 power_on "
				 "(attempt 2)");
	json_decref(op);
	op = json_loads("{\"status\":{\"state\":\"pending\"},\"queued\":true}", 0, NULL);
	cli_wait_text("power-1", 999, op, out, sizeof(out));
	assert_string_equal(out, "waiting 0s for operation power-1: pending (queued behind the "
				 "node's operation in flight)");
	json_decref(op);
	op = json_loads("{\"status\":{\"state\":\"pend\\u001bing\",\"step\":\"x\"}}", 0, NULL);
	cli_wait_text("p\nq", 61000, op, out, sizeof(out));
	assert_string_equal(out, "waiting 61s for operation p q: pend?ing, step x");
	json_decref(op);
	cli_wait_text("power-9", -5, NULL, out, sizeof(out));
	assert_string_equal(out, "waiting 0s for operation power-9");
}

static void test_contexts(void **state)
{
	struct cli_config cfg;
	char err[600];
	static const char good[] = "# fleets\n"
				   "current-context lab\n"
				   "\n"
				   "context prod\n"
				   "  url https://10.0.0.5:7070  \n"
				   "  token-file ~/.config/fleetplane/prod.token\n"
				   "  ca-file /etc/fleetplane/ca.crt\n"
				   "context lab\n"
				   "url http://127.0.0.1:7070\n"
				   "token-file lab.token\n";
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(cli_config_parse("/h/.config/fleetplane/config", "/h", good, strlen(good),
					  &cfg, err, sizeof(err)),
			 0);
	assert_string_equal(cfg.current, "lab");
	assert_int_equal(cfg.n, 2);
	assert_string_equal(cfg.ctx[0].name, "prod");
	assert_string_equal(cfg.ctx[0].url, "https://10.0.0.5:7070");
	assert_string_equal(cfg.ctx[0].token_file, "/h/.config/fleetplane/prod.token");
	assert_string_equal(cfg.ctx[0].ca_file, "/etc/fleetplane/ca.crt");
	assert_string_equal(cfg.ctx[1].token_file, "/h/.config/fleetplane/lab.token");
	assert_null(cfg.ctx[1].ca_file);
	cli_config_release(&cfg);

	static const struct {
		const char *text, *err;
	} bad[] = {
		{"context a\nuri http://x\n", "F:2: uri: unknown key (want current-context, "
					      "context, url, token-file or ca-file)"},
		{"url http://x\n", "F:1: url: outside a context (put a 'context NAME' line above "
				   "it)"},
		{"context a\nurl http://x\nurl http://y\n", "F:3: url: given twice in context a"},
		{"context a\ncontext a\n", "F:2: context: a given twice (first on line 1)"},
		{"context a b\n", "F:1: context: bad context name 'a b' (1..63 of A-Z a-z 0-9 . _ "
				  "-)"},
		{"context a\nurl ftp://x\n", "F:2: url: must start with http:// or https://"},
		{"context a\ntoken-file\n", "F:2: token-file: needs a value"},
		{"current-context b\ncontext a\n", "F:1: current-context b names no context"},
		{"context a\ncurrent-context a\n", "F:2: current-context: must come before the "
						   "first context"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&cfg, 0, sizeof(cfg));
		assert_int_equal(cli_config_parse("F", "/h", bad[i].text, strlen(bad[i].text), &cfg,
						  err, sizeof(err)),
				 -1);
		assert_string_equal(err, bad[i].err);
		assert_int_equal(cfg.n, 0); /* nothing kept */
	}

	assert_int_equal(cli_token_mode_ok(S_IFREG | 0600), 0);
	assert_int_equal(cli_token_mode_ok(S_IFREG | 0400), 0);
	assert_int_equal(cli_token_mode_ok(S_IFREG | 0640), -1);
	assert_int_equal(cli_token_mode_ok(S_IFREG | 0604), -1);
	assert_int_equal(cli_token_mode_ok(S_IFDIR | 0700), -1);

	char *av[] = {"fleetplane", "--context", "lab", "node", "list", NULL};
	int ac = 5;
	assert_int_equal(cli_context_take(&ac, av), 0);
	assert_int_equal(ac, 3);
	assert_string_equal(av[1], "node");
	assert_string_equal(cli_context_flag, "lab");
	cli_context_flag = NULL;

	/* end to end: --context's token file beats FLEETPLANE_TOKEN; a loose mode is refused */
	char dir[] = "/tmp/test_cli_ctxXXXXXX";
	assert_non_null(mkdtemp(dir));
	char *sub = xasprintf("%s/fleetplane", dir), *conf = xasprintf("%s/config", sub);
	char *tokf = xasprintf("%s/t.token", sub);
	assert_int_equal(mkdir(sub, 0700), 0);
	FILE *f = fopen(conf, "w");
	fprintf(f, "context t\nurl http://127.0.0.1:%u\ntoken-file t.token\n", fake.port);
	fclose(f);
	f = fopen(tokf, "w");
	fprintf(f, "%s\n", TOKEN);
	fclose(f);
	chmod(tokf, 0600);
	char *saved_xdg = xstrdup(getenv("XDG_CONFIG_HOME"));
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("FLEETPLANE_TOKEN", "wrong-secret-123", 1);
	struct run_result r;
	fake_reset();
	run_cmd(&r, cmd_node, "node", "list", "-o", "name", NULL);
	assert_int_equal(r.rc, 1); /* no --context: the environment's (wrong) token */
	cli_context_flag = "t";
	run_cmd(&r, cmd_node, "node", "list", "-o", "name", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "node/r01n01\nnode/r01n02\nnode/r02n01\n");
	chmod(tokf, 0644);
	run_cmd(&r, cmd_node, "node", "list", NULL);
	assert_int_equal(r.rc, 2);
	char *want = xasprintf("error: context t: token file %s is open to others (mode 0644); "
			       "refusing it as ssh refuses such keys: chmod 600 %s\n",
			       tokf, tokf);
	assert_string_equal(r.err, want);
	free(want);
	cli_context_flag = "nope";
	run_cmd(&r, cmd_node, "node", "list", NULL);
	assert_int_equal(r.rc, 2);
	want = xasprintf("error: context nope: not in %s\n", conf);
	assert_string_equal(r.err, want);
	free(want);
	cli_context_flag = NULL;
	setenv("XDG_CONFIG_HOME", saved_xdg, 1);
	setenv("FLEETPLANE_TOKEN", TOKEN, 1);
	unlink(tokf);
	unlink(conf);
	rmdir(sub);
	rmdir(dir);
	free(saved_xdg);
	free(sub);
	free(conf);
	free(tokf);
}

static void test_since(void **state)
{
	const int64_t now = 1796240000000LL;
	int64_t t = 0;
	assert_int_equal(cli_parse_since("10m", now, &t), 0);
	assert_int_equal(t, now - 600000);
	assert_int_equal(cli_parse_since("1h30m", now, &t), 0);
	assert_int_equal(t, now - 5400000);
	assert_int_equal(cli_parse_since("2d", now, &t), 0);
	assert_int_equal(t, now - 172800000);
	assert_int_equal(cli_parse_since("1s", now, &t), 0);
	assert_int_equal(t, now - 1000);
	assert_int_equal(cli_parse_since("2026-11-30T05:00:00Z", now, &t), 0);
	assert_int_equal(t, 1796014800000LL);
	t = 7;
	const char *bad[] = {"",       "0s",    "10",        "m",          "10x", "-5m",
			     "1h 30m", "3651d", "99999999s", "2026-11-30", NULL};
	for (const char **b = bad; *b; b++)
		assert_int_equal(cli_parse_since(*b, now, &t), -1);
	assert_int_equal(t, 7);
}

static void test_throttle(void **state)
{
	struct cli_throttle th = {100, 0, 0};
	assert_int_equal(cli_throttle_due(&th, 1000, 0), 0); /* nothing to draw */
	assert_int_equal(cli_throttle_due(&th, 1000, 1), 1); /* the first change draws */
	assert_int_equal(cli_throttle_due(&th, 1040, 1), 0); /* throttled ... */
	assert_int_equal(cli_throttle_due(&th, 1099, 0), 0); /* ... not yet due */
	assert_int_equal(cli_throttle_due(&th, 1100, 0), 1); /* the trailing redraw, no event */
	assert_int_equal(cli_throttle_due(&th, 5000, 0), 0); /* drawn: nothing pending */
	assert_int_equal(cli_throttle_due(&th, 5000, 1), 1);
	assert_int_equal(cli_throttle_due(&th, 4000, 1), 1); /* the clock stepped back: draw */
}

static void test_sort_and_yaml(void **state)
{
	char err[128];
	assert_int_equal(cli_sort_path_ok(".status.phase", err, sizeof(err)), 1);
	assert_int_equal(cli_sort_path_ok("{.metadata.name}", err, sizeof(err)), 1);
	assert_int_equal(cli_sort_path_ok(".status.holds[0].owner", err, sizeof(err)), 1);
	assert_int_equal(cli_sort_path_ok("status", err, sizeof(err)), 0);
	assert_string_equal(err, "must start with '.', as in .metadata.name");
	assert_int_equal(cli_sort_path_ok(".a[x]", err, sizeof(err)), 0);
	assert_string_equal(err, "field 1: expected [N] with 1..6 digits");
	assert_int_equal(cli_sort_path_ok(".a b", err, sizeof(err)), 0);
	assert_string_equal(err, "unexpected ' ' after field 1");

	json_t *items =
		json_loads("[{\"n\":\"c\",\"v\":{\"x\":[1,3]}},{\"n\":\"a\"},"
			   "{\"n\":\"b\",\"v\":{\"x\":[5,2]}},{\"n\":\"d\",\"v\":{\"x\":[0,2]}}]",
			   0, NULL);
	assert_int_equal(cli_sort_items(items, ".v.x[1]"), 0);
	char *s = json_dumps(items, JSON_COMPACT);
	/* missing first, then by value, ties in their order */
	assert_string_equal(
		s, "[{\"n\":\"a\"},{\"n\":\"b\",\"v\":{\"x\":[5,2]}},{\"n\":\"d\",\"v\":{\"x\""
		   ":[0,2]}},{\"n\":\"c\",\"v\":{\"x\":[1,3]}}]");
	free(s);
	assert_int_equal(cli_sort_items(items, ".zz"), -1);
	json_decref(items);

	assert_int_equal(cli_yaml_plain_ok("r01n01"), 1);
	assert_int_equal(cli_yaml_plain_ok("node/r01n01"), 1);
	const char *quoted[] = {"",     "yes",  "No", "ON",  "null",
				"y",    "true", "12", "1e3", "-x",
				"a b",  "a: b", "#c", "~",   "2026-11-30T05:00:00Z",
				".inf", NULL};
	for (const char **q = quoted; *q; q++)
		assert_int_equal(cli_yaml_plain_ok(*q), 0);

	json_t *doc = json_loads("{\"a\":\"yes\",\"b\":12,\"c\":\"12\",\"d\":[],\"e\":{},\"f\":"
				 "[true,null,1.5,\"x\\ny\"],\"on\":\"é ü\",\"g\":{\"h\":\"r01\"}}",
				 JSON_PRESERVE_ORDER, NULL);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(cli_yaml_write(doc, f), 0);
	fclose(f);
	assert_string_equal(text, "a: \"yes\"\n"
				  "b: 12\n"
				  "c: \"12\"\n"
				  "d: []\n"
				  "e: {}\n"
				  "f:\n"
				  "- true\n"
				  "- null\n"
				  "- 1.5\n"
				  "- \"x\\ny\"\n"
				  "\"on\": \"é ü\"\n"
				  "g:\n"
				  "  h: r01\n");
	free(text);
	json_decref(doc);
}

static void test_token(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_token, "token", "create", "--role", "viewer", "--name", "ci", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "token ci created (role viewer); secret follows, shown once:\n"
				   "fpt_SECRET123\n");
	assert_string_equal(fake.reqs[0].body, "{\"name\":\"ci\",\"role\":\"viewer\"}");
	assert_no_token(&r);

	run_cmd(&r, cmd_token, "token", "list", "-o", "wide", NULL);
	assert_int_equal(r.rc, 0);
	/* AGE of the first token counts from a fixed 2026 date: check its row up to AGE only */
	static const char head[] = "NAME     ROLE    NODE     AGE\n"
				   "admin    admin   -        ";
	assert_memory_equal(r.out, head, strlen(head));
	const char *row2 = strchr(r.out + strlen(head), '\n');
	assert_non_null(row2);
	assert_string_equal(row2 + 1, "r01n01   agent   r01n01   2h\n");

	run_cmd(&r, cmd_token, "token", "revoke", "ci", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "token ci revoked\n");
	assert_string_equal(fake.reqs[2].method, "DELETE");
	assert_string_equal(fake.reqs[2].path, "/v1/tokens/ci");
}

/* cli_common.c's helpers on their own: counts, document paths, columns as data. */
static void test_cli_common(void **state)
{
	size_t n = 7;
	assert_int_equal(cli_parse_count("1", 64, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(cli_parse_count("64", 64, &n), 0);
	assert_int_equal(n, 64);
	assert_int_equal(cli_parse_count("65", 64, &n), -1);
	assert_int_equal(cli_parse_count("0", 64, &n), -1);
	assert_int_equal(cli_parse_count("+1", 64, &n), -1);
	assert_int_equal(cli_parse_count(" 1", 64, &n), -1);
	assert_int_equal(cli_parse_count("1x", 64, &n), -1);
	assert_int_equal(cli_parse_count("", 64, &n), -1);
	assert_int_equal(cli_parse_count("99999999999999999999", ULLONG_MAX, &n), -1); /* ERANGE */
	assert_int_equal(n, 64); /* untouched by the refusals */

	/* filters: NULL values left out, escaped, and a query over CLI_MAX_PATH refused rather
	 * than sent without the filter */
	const struct cli_query q[] = {{"node", "r01 n01"}, {"state", NULL}, {"code", "xid:79"}};
	char *p = NULL;
	assert_int_equal(cli_path_query("op list", "/v1/operations", q, 3, &p), 0);
	assert_string_equal(p, "/v1/operations?node=r01%20n01&code=xid%3A79");
	free(p);
	char *huge = xmalloc(CLI_MAX_PATH + 1);
	memset(huge, 'a', CLI_MAX_PATH);
	huge[CLI_MAX_PATH] = 0;
	const struct cli_query qh[] = {{"node", huge}};
	struct run_result r;
	fflush(stderr);
	char pe[] = "/tmp/test_cli_errXXXXXX";
	int fe = mkstemp(pe), se = dup(2);
	unlink(pe);
	dup2(fe, 2);
	int rc = cli_path_query("op list", "/v1/operations", qh, 1, &p);
	fflush(stderr);
	dup2(se, 2);
	close(se);
	slurp_fd(fe, r.err, sizeof(r.err));
	close(fe);
	free(huge);
	assert_int_equal(rc, 2);
	assert_null(p);
	assert_string_equal(r.err,
			    "error: filters too long: the request path would be over 64 KiB\n"
			    "Run 'fleetplane op list --help' for usage.\n");

	p = cli_doc_path("nodes", "a b/c", "drain");
	assert_string_equal(p, "/v1/nodes/a%20b%2Fc:drain");
	free(p);
	p = cli_doc_path("budgets", "rack-1", NULL);
	assert_string_equal(p, "/v1/budgets/rack-1");
	free(p);

	static const struct table_colspec cols[] = {{"NAME", 6}, {"NOTE", 0}, {NULL, 0}};
	struct table t;
	table_init(&t, 0);
	table_cols(&t, cols);
	table_cols(&t, NULL); /* adds nothing */
	table_cell(&t, "r01n01-long");
	table_cell(&t, "x");
	char buf[256] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	table_print(&t, f);
	fclose(f);
	assert_string_equal(buf, "NAME     NOTE\n"
				 "r01n0\xE2\x80\xA6   x\n");
	table_release(&t);
}

static void test_health_policy_and_budget(void **state)
{
	fake_reset();
	struct run_result r;
	run_cmd(&r, cmd_health, "health", "policy", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(
		r.out,
		"Name:             default\n"
		"ResourceVersion:  3\n"
		"Dry run:          false\n"
		"Breaker:          enabled, opens when more than 3 nodes of one domain "
		"value turn unhealthy within 300 s (domains rack,nvlink_domain,site; "
		"per-domain limits rack=1,site=50)\n"
		"Rules:            2\n"
		"  CODE     SEVERITY   ACTION   COUNT   WINDOW   JOBS   LADDER\n"
		"  xid:8    medium     hold     2       3600     3      gpu_reset,reboot,reimage,rma\n"
		"  xid:11   low        none     1       3600     0      gpu_reset,reboot,reimage,rma\n");
	assert_string_equal(r.err, "");
	assert_string_equal(fake.reqs[0].path, "/v1/policies/default");

	run_cmd(&r, cmd_health, "health", "budget", "get", "rack-1", NULL);
	assert_int_equal(r.rc, 0);
	assert_string_equal(
		r.out, "NAME     DOMAIN   MAX   VALUE   OUT/NODES   REMAINING   OUT      WAITING\n"
		       "rack-1   rack     1     r01     1/8         0           r01n03   r01n04\n"
		       "rack-1   rack     1     r02     0/8         1           -        -\n");
	assert_string_equal(fake.reqs[1].path, "/v1/budgets/rack-1");

	/* usage errors come before any request */
	run_cmd(&r, cmd_health, "health", "budget", "get", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: missing NAME\n"
				   "Run 'fleetplane health budget get --help' for usage.\n");
	run_cmd(&r, cmd_health, "health", "rma", "list", "--node", "", NULL);
	assert_int_equal(r.rc, 2);
	assert_string_equal(r.err, "error: flag '--node' needs a node name\n"
				   "Run 'fleetplane health rma list --help' for usage.\n");
	run_cmd(&r, cmd_health, "health", "breaker", "frob", NULL);
	assert_int_equal(r.rc, 2);
	assert_int_equal(fake.nreqs, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_layout),
		cmocka_unit_test(test_table_clean_utf8),
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_problem_format),
		cmocka_unit_test(test_escape_and_query),
		cmocka_unit_test(test_rv_and_time),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_node_list_table_and_paging),
		cmocka_unit_test(test_node_list_json),
		cmocka_unit_test(test_node_list_empty_and_selector),
		cmocka_unit_test(test_node_get),
		cmocka_unit_test(test_node_drain),
		cmocka_unit_test(test_node_power),
		cmocka_unit_test(test_node_enroll),
		cmocka_unit_test(test_node_watch_lines),
		cmocka_unit_test(test_node_watch_tty),
		cmocka_unit_test(test_request_direct),
		cmocka_unit_test(test_op),
		cmocka_unit_test(test_event_list),
		cmocka_unit_test(test_node_list_formats),
		cmocka_unit_test(test_node_bulk_usage),
		cmocka_unit_test(test_wait_text),
		cmocka_unit_test(test_contexts),
		cmocka_unit_test(test_since),
		cmocka_unit_test(test_throttle),
		cmocka_unit_test(test_sort_and_yaml),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_cli_common),
		cmocka_unit_test(test_health_policy_and_budget),
	};
	return cmocka_run_group_tests(tests, fake_setup, fake_teardown);
}
