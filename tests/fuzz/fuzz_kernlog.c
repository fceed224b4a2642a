/* layers: base core agent */
/* fuzz_kernlog.c - libFuzzer target for the kernel log parser (agent/kernlog.h), which reads
 * /dev/kmsg and log files on the node: any bytes a kernel, a driver or a user-written log line
 * can hold. The input is cut at '\n' into lines (at most 4096) that are fed, each with its
 * '\n', through one parser (kernlog_feed), then kernlog_flush; the whole input also goes to
 * kernlog_parse_line, and so does each line. Seeds: the real logs of tests/data/kernel.
 * Properties checked for every event (a failure aborts): kernlog_feed returns 0..2 and
 * kernlog_flush 0..1; every string field is NUL-terminated inside its buffer and valid UTF-8
 * (jansson accepts it, as the agent's report needs); the code matches the kind ("xid:<xid>",
 * "sxid:<xid>", "gpu:fallen_off_bus", "nvlink:error", "aer:<aer_severity>") and the contract's
 * grammar [a-z0-9_-]+:[a-z0-9_.-]+; xid is 1..KERNLOG_XID_MAX for Xid/SXid and -1 otherwise;
 * pci_bus_id is "" or "<4-8 hex>:<2 hex>:<2 hex>.<0-7>" in lower case; pid is -1 or
 * 0..INT32_MAX; gpu_index is -1; uptime_us is -1 or >= 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent/kernlog.h"

#include "base/banned.h"

#define NOW_MS 1796032800000LL

static void die(const char *what, const struct kernlog_event *ev)
{
	fprintf(stderr, "fuzz_kernlog: %s (kind %d code %.48s)\n", what, (int)ev->kind, ev->code);
	abort();
}

static void check_str(const char *s, size_t cap, const char *name, const struct kernlog_event *ev)
{
	if (!memchr(s, '\0', cap))
		die(name, ev);
	json_t *j = json_string(s);
	if (!j)
		die(name, ev); /* not valid UTF-8 */
	json_decref(j);
}

static int lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int bus_ok(const char *b)
{
	if (!b[0])
		return 1;
	size_t n = 0;
	while (lower_hex(b[n]))
		n++;
	if (n < 4 || n > 8 || b[n] != ':')
		return 0;
	const char *p = b + n + 1;
	return lower_hex(p[0]) && lower_hex(p[1]) && p[2] == ':' && lower_hex(p[3]) &&
	       lower_hex(p[4]) && p[5] == '.' && p[6] >= '0' && p[6] <= '7' && p[7] == '\0';
}

static int code_grammar(const char *c)
{
	size_t i = 0;
	while ((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') || c[i] == '_' ||
	       c[i] == '-')
		i++;
	if (i == 0 || c[i] != ':')
		return 0;
	size_t j = ++i;
	while ((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') || c[i] == '_' ||
	       c[i] == '-' || c[i] == '.')
		i++;
	return i > j && c[i] == '\0';
}

static void check_event(const struct kernlog_event *ev)
{
	check_str(ev->code, sizeof(ev->code), "code", ev);
	check_str(ev->pci_bus_id, sizeof(ev->pci_bus_id), "pci_bus_id", ev);
	check_str(ev->device, sizeof(ev->device), "device", ev);
	check_str(ev->process, sizeof(ev->process), "process", ev);
	check_str(ev->aer_severity, sizeof(ev->aer_severity), "aer_severity", ev);
	check_str(ev->message, sizeof(ev->message), "message", ev);
	check_str(ev->raw, sizeof(ev->raw), "raw", ev);
	check_str(ev->host, sizeof(ev->host), "host", ev);
	if (!code_grammar(ev->code))
		die("code grammar", ev);
	char want[FINDING_CODE_LEN];
	switch (ev->kind) {
	case KERNLOG_XID:
	case KERNLOG_SXID:
		if (ev->xid < 1 || ev->xid > KERNLOG_XID_MAX)
			die("xid out of range", ev);
		snprintf(want, sizeof(want), "%s:%d", ev->kind == KERNLOG_XID ? "xid" : "sxid",
			 ev->xid);
		break;
	case KERNLOG_FALLEN_OFF_BUS: snprintf(want, sizeof(want), "gpu:fallen_off_bus"); break;
	case KERNLOG_NVLINK: snprintf(want, sizeof(want), "nvlink:error"); break;
	case KERNLOG_AER:
		if (strcmp(ev->aer_severity, "fatal") && strcmp(ev->aer_severity, "nonfatal") &&
		    strcmp(ev->aer_severity, "correctable"))
			die("aer severity", ev);
		snprintf(want, sizeof(want), "aer:%s", ev->aer_severity);
		break;
	default: die("kind", ev); return;
	}
	if (strcmp(ev->code, want) != 0)
		die("code does not match kind", ev);
	if (ev->kind != KERNLOG_XID && ev->kind != KERNLOG_SXID && ev->xid != -1)
		die("xid set on a non-Xid event", ev);
	if (ev->kind != KERNLOG_AER && ev->aer_severity[0])
		die("aer_severity on a non-AER event", ev);
	if (!bus_ok(ev->pci_bus_id))
		die("pci_bus_id form", ev);
	if (ev->pid < -1 || ev->pid > INT32_MAX)
		die("pid range", ev);
	if (ev->gpu_index != -1)
		die("gpu_index", ev);
	if (ev->uptime_us < -1)
		die("uptime_us", ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *end = s + size;
	struct kernlog_event out[2], one;
	struct kernlog_parser *p = kernlog_parser_new(NOW_MS);
	int lines = 0;
	while (s < end && lines++ < 4096) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) + 1 : (size_t)(end - s);
		int k = kernlog_feed(p, s, n, out);
		if (k < 0 || k > 2)
			abort();
		for (int i = 0; i < k; i++)
			check_event(&out[i]);
		if (kernlog_parse_line(s, n, NOW_MS, &one))
			check_event(&one);
		s += n;
	}
	int k = kernlog_flush(p, out);
	if (k < 0 || k > 1)
		abort();
	for (int i = 0; i < k; i++)
		check_event(&out[i]);
	kernlog_parser_free(p);
	if (kernlog_parse_line((const char *)data, size, NOW_MS, &one))
		check_event(&one);
	return 0;
}
