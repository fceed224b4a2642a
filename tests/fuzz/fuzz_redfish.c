/* layers: base core driver */
/* fuzz_redfish.c - libFuzzer target for the Redfish driver's interpretation of what a BMC sends
 * (driver/bmc_redfish_parse.h; the HTTP around it is not fuzzed). One input is one HTTP answer:
 * if it starts with "HTTP/", the lines up to the first blank line are response headers (fed
 * line by line to rf_header_line: ETag, Location, X-Auth-Token, Retry-After, 1xx resets) and
 * the rest is the body; otherwise the whole input is the body. The body goes through
 * jsonx_parse (as http_once does) and the document, or NULL when it is not JSON, is then read
 * in every role the driver gives a document:
 *   service root (rf_root_links), login answer (rf_session_uri with the Location header),
 *   GET answer (rf_etag_of with the ETag header, rf_header_safe on the X-Auth-Token),
 *   error body (rf_message_id), Systems
 *   collection (rf_choose_system with no system, with the first member's Id and with a missing
 *   one), ComputerSystem (rf_power_system, rf_first_chassis, rf_power_chassis with the same
 *   document as its Chassis, rf_reset_action, rf_allowable_inline, rf_reset_type for every
 *   action and power, rf_boot_of, rf_boot_patch for every boot request, rf_inventory_doc,
 *   rf_chassis_status_doc), ActionInfo (rf_action_info_values), Processor (rf_gpu_entry),
 *   LogService (rf_log_is_sel), LogEntries collection and LogEntry (rf_members,
 *   rf_sel_entry_is_link, rf_sel_entry), task monitor answers (rf_task_new with the Location
 *   header, rf_task_update, rf_task_state, rf_task_terminal, rf_poll_wait with Retry-After),
 *   and URIs it holds (rf_make_url, rf_last_segment on every @odata.id found).
 * The raw input (up to 127 bytes, as a header value) also goes to rf_parse_retry_after.
 * Properties checked (a failure aborts, which libFuzzer reports as a crash): kept headers are
 * NUL-terminated within their fields, Retry-After is -1 or 0..RF_MAX_RETRY_AFTER_MS, the poll
 * wait is within RF_POLL_MIN_MS..RF_POLL_MAX_MS, a URL made is on the BMC's origin with no byte
 * <= 0x20, a chosen system is a listed member (the asked one when asked), an unknown power
 * has a reason and a known one none, a ResetType is allowed by the list given, a boot PATCH
 * names the asked target, every document built has the shape driver/bmc.h promises and dumps
 * to JSON, no string in an inventory, chassis status, SEL or task document is over
 * RF_MAX_STRING bytes, a SEL timestamp is null or one fp_time_parse reads (with its offset
 * taken off), an ETag or token accepted for a request header is printable ASCII, a malformed
 * TaskState is refused with FP_EBMC, every error sets a message. ASan/UBSan catch memory errors, leaks and UB. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "base/timefmt.h"
#include "driver/bmc_redfish_parse.h"

#include "base/banned.h"

#define BASE "https://bmc.example:8443"

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_redfish: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static void check_dumps(const json_t *o, const char *what)
{
	if (!o)
		die(what, "NULL document");
	char *s = jsonx_dumps(o);
	if (!s)
		die(what, "does not dump");
	free(s);
}

static void want_type(const json_t *o, const char *key, int (*ok)(const json_t *), int optional,
		      const char *what)
{
	const json_t *v = json_object_get(o, key);
	if (!v && optional)
		return;
	if (!v || !ok(v))
		die(what, key);
}

static int is_str(const json_t *v)
{
	return json_is_string(v);
}
static int is_str_or_null(const json_t *v)
{
	return json_is_string(v) || json_is_null(v);
}
static int is_int(const json_t *v)
{
	return json_is_integer(v);
}
static int is_int_or_null(const json_t *v)
{
	return json_is_integer(v) || json_is_null(v);
}
static int is_num_or_null(const json_t *v)
{
	return json_is_number(v) || json_is_null(v);
}
static int is_bool(const json_t *v)
{
	return json_is_boolean(v);
}
static int is_obj(const json_t *v)
{
	return json_is_object(v);
}
static int is_arr(const json_t *v)
{
	return json_is_array(v);
}

/* Every string in v (depth-limited) is at most RF_MAX_STRING bytes. */
static void check_capped(const json_t *v, const char *what)
{
	if (json_is_string(v) && json_string_length(v) > RF_MAX_STRING)
		die(what, "a string over RF_MAX_STRING bytes");
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, x)
			check_capped(x, what);
	else if (json_is_array(v))
		json_array_foreach(v, i, x)
			check_capped(x, what);
}

static void check_printable(const char *v, const char *what)
{
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			die(what, "a byte outside 0x20-0x7e was accepted for a header");
}

static void check_url(const char *uri)
{
	char url[2048], err[256] = "";
	if (rf_make_url(BASE, uri, url, sizeof(url), err, sizeof(err)) < 0) {
		if (!err[0])
			die("rf_make_url failed without a message", uri);
		return;
	}
	if (strncmp(url, BASE, strlen(BASE)) != 0 && strncasecmp(url, BASE, strlen(BASE)) != 0)
		die("rf_make_url left the origin", url);
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			die("rf_make_url kept a control byte", url);
	char seg[64];
	rf_last_segment(uri, seg, sizeof(seg));
	if (strlen(seg) >= sizeof(seg))
		die("rf_last_segment overflowed", uri);
}

/* Every "@odata.id" string anywhere in v (depth-limited), as the driver would follow. */
static void walk_ids(const json_t *v, int depth, int *budget)
{
	if (depth > 8 || *budget <= 0)
		return;
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach((json_t *)v, k, x) {
			if (strcmp(k, "@odata.id") == 0 && json_is_string(x)) {
				(*budget)--;
				check_url(json_string_value(x));
			} else {
				walk_ids(x, depth + 1, budget);
			}
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x)
			walk_ids(x, depth + 1, budget);
	}
}

static void check_choose(const json_t *doc, const char *want)
{
	char err[512] = "";
	const char *uri = NULL;
	int rc = rf_choose_system(doc, want, BASE, &uri, err, sizeof(err));
	if (rc < 0) {
		if (!err[0] || (rc != FP_EINVAL && rc != FP_EBMC))
			die("rf_choose_system error without message or with another code", err);
		return;
	}
	if (!uri)
		die("rf_choose_system gave no URI", NULL);
	size_t n = rf_members(doc, RF_MAX_MEMBERS), i;
	for (i = 0; i < n; i++)
		if (rf_member_uri(doc, i) == uri)
			break;
	if (i == n)
		die("rf_choose_system chose a URI that is not a member", uri);
	if (want && want[0]) {
		char id[256];
		rf_last_segment(uri, id, sizeof(id));
		if (strcmp(id, want) != 0)
			die("rf_choose_system chose another system than asked", uri);
	}
}

static void check_power(const json_t *doc)
{
	const char *reason = NULL;
	char msg[256] = "";
	enum bmc_power p = rf_power_system(doc, "/redfish/v1/Systems/1", &reason, msg, sizeof(msg));
	if ((p == BMC_POWER_UNKNOWN) != (reason != NULL) || (reason && !msg[0]))
		die("rf_power_system reason does not match the power", reason);
	if (p != rf_power_of(json_string_value(json_object_get(doc, "PowerState"))))
		die("rf_power_system and rf_power_of disagree", NULL);
	const char *ch = rf_first_chassis(doc);
	if (p != BMC_POWER_UNKNOWN) {
		msg[0] = '\0';
		enum bmc_power q = rf_power_chassis(doc, p, "/redfish/v1/Systems/1", doc,
						    ch ? ch : "/redfish/v1/Chassis/1", &reason, msg,
						    sizeof(msg));
		if (q != p || reason) /* the same document as its own Chassis always agrees */
			die("rf_power_chassis disagrees with the same document", msg);
		json_t *other = json_pack("{s:s}", "PowerState", p == BMC_POWER_ON ? "Off" : "On");
		q = rf_power_chassis(doc, p, "/redfish/v1/Systems/1", other, "/x/", &reason, msg,
				     sizeof(msg));
		if (q != BMC_POWER_UNKNOWN || !reason ||
		    strcmp(reason, "PowerStateDisagrees") != 0 || !msg[0])
			die("rf_power_chassis missed a disagreement", msg);
		json_decref(other);
	}
}

static void check_reset(const json_t *doc)
{
	const json_t *act = rf_reset_action(doc);
	json_t *allowed = rf_allowable_inline(act, "ResetType");
	if (allowed && !json_is_array(allowed))
		die("rf_allowable_inline gave a non-array", NULL);
	json_t *info = rf_action_info_values(doc, "ResetType");
	if (info && !json_is_array(info))
		die("rf_action_info_values gave a non-array", NULL);
	char list[128];
	rf_list_text(allowed ? allowed : info, list, sizeof(list));
	if (strlen(list) >= sizeof(list))
		die("rf_list_text overflowed", NULL);
	const json_t *lists[] = {NULL, allowed, info};
	for (size_t l = 0; l < 3; l++) {
		if (l && !lists[l])
			continue;
		for (int a = BMC_ACTION_ON; a <= BMC_ACTION_RESET; a++)
			for (int cur = BMC_POWER_UNKNOWN; cur <= BMC_POWER_OFF; cur++) {
				const char *rt = rf_reset_type(lists[l], (enum bmc_power_action)a,
							       (enum bmc_power)cur);
				if (!rt)
					continue;
				if (lists[l] ? !rf_in_list(lists[l], rt)
					     : strcmp(rt, "PowerCycle") == 0)
					die("rf_reset_type chose a ResetType not allowed", rt);
			}
	}
	json_decref(allowed);
	json_decref(info);
}

static void check_boot(const json_t *doc)
{
	struct bmc_boot b;
	rf_boot_of(doc, &b);
	if ((unsigned)b.device > BMC_BOOT_DISK || (unsigned)b.mode > BMC_BOOT_MODE_LEGACY ||
	    (b.persistent != 0 && b.persistent != 1))
		die("rf_boot_of out of range", NULL);
	for (int d = BMC_BOOT_PXE; d <= BMC_BOOT_DISK; d++)
		for (int m = BMC_BOOT_MODE_UNKNOWN; m <= BMC_BOOT_MODE_LEGACY; m++) {
			struct bmc_boot want = {(enum bmc_boot_device)d, m & 1,
						(enum bmc_boot_mode)m};
			json_t *req = NULL;
			char err[512] = "";
			int rc = rf_boot_patch(doc, "/redfish/v1/Systems/1", &want, &req, err,
					       sizeof(err));
			if (rc < 0) {
				if (req || !err[0])
					die("rf_boot_patch error with a body or without message",
					    err);
				continue;
			}
			const char *tg = json_string_value(
				json_object_get(json_object_get(req, "Boot"),
						"BootSourceOverrideTarget"));
			if (!tg || strcmp(tg, d == BMC_BOOT_PXE ? "Pxe" : "Hdd") != 0)
				die("rf_boot_patch target is not the one asked", tg);
			check_dumps(req, "rf_boot_patch body");
			json_decref(req);
		}
}

static void check_docs(const json_t *doc)
{
	json_t *gpus = json_array();
	json_t *g = rf_gpu_entry(doc, 0);
	if (g) {
		want_type(g, "index", is_int, 0, "gpu entry");
		want_type(g, "id", is_str_or_null, 0, "gpu entry");
		want_type(g, "model", is_str_or_null, 0, "gpu entry");
		want_type(g, "serial", is_str_or_null, 0, "gpu entry");
		json_array_append_new(gpus, g);
	}
	json_t *inv = rf_inventory_doc(doc, gpus);
	check_dumps(inv, "rf_inventory_doc");
	want_type(inv, "system", is_obj, 0, "inventory");
	want_type(inv, "cpu", is_obj, 0, "inventory");
	want_type(inv, "gpus", is_arr, 0, "inventory");
	want_type(json_object_get(inv, "cpu"), "sockets", is_int_or_null, 0, "inventory.cpu");
	want_type(inv, "memoryGiB", is_num_or_null, 0, "inventory");
	if (json_array_size(json_object_get(inv, "gpus")) > RF_MAX_GPUS)
		die("inventory", "more than RF_MAX_GPUS gpus");
	check_capped(inv, "inventory");
	json_decref(inv);
	json_decref(gpus);

	json_t *cs = rf_chassis_status_doc(doc, doc, rf_first_chassis(doc));
	check_dumps(cs, "rf_chassis_status_doc");
	want_type(cs, "power", is_str, 0, "chassis status");
	want_type(cs, "intrusion", is_bool, 1, "chassis status");
	want_type(cs, "health", is_str, 1, "chassis status");
	check_capped(cs, "chassis status");
	json_decref(cs);
	cs = rf_chassis_status_doc(doc, NULL, NULL);
	check_dumps(cs, "rf_chassis_status_doc without chassis");
	json_decref(cs);

	(void)rf_log_is_sel(doc);
	size_t n = rf_members(doc, RF_MAX_MEMBERS);
	const json_t *em = json_object_get(doc, "Members");
	for (size_t i = 0; i <= n; i++) {
		const json_t *e = i < n ? json_array_get(em, i) : doc;
		(void)rf_sel_entry_is_link(e);
		json_t *s = rf_sel_entry(e, i);
		check_dumps(s, "rf_sel_entry");
		want_type(s, "id", is_int, 0, "sel entry");
		want_type(s, "timestamp", is_str_or_null, 0, "sel entry");
		want_type(s, "sensorType", is_str, 0, "sel entry");
		want_type(s, "message", is_str, 0, "sel entry");
		want_type(s, "sensorNumber", is_int, 1, "sel entry");
		want_type(s, "eventType", is_str, 1, "sel entry");
		check_capped(s, "sel entry");
		const char *ts = json_string_value(json_object_get(s, "timestamp"));
		int64_t ms;
		if (ts && fp_time_parse(ts, &ms) < 0)
			die("sel entry timestamp fp_time_parse does not read", ts);
		json_decref(s);
	}
}

static void check_task(const struct rf_headers *h, const json_t *doc, long status)
{
	const char *mon = h->location[0] ? h->location : "/redfish/v1/TaskService/Tasks/1/Monitor";
	int ascii = 1;
	for (const char *p = mon; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			ascii = 0;
	json_t *o = rf_task_new(mon, doc);
	if (!ascii) {
		if (o)
			die("rf_task_new took a monitor URI that is not printable ASCII", mon);
		mon = "/redfish/v1/TaskService/Tasks/1/Monitor";
		o = rf_task_new(mon, doc);
	}
	if (!o || !rf_task_state(o))
		die("rf_task_new gave no task document with a state", mon);
	want_type(o, "task", is_str, 0, "task");
	want_type(o, "messages", is_arr, 0, "task");
	want_type(o, "percent", is_int, 1, "task");
	const json_t *ts = json_object_get(doc, "TaskState");
	for (int i = 0; i < 3; i++) {
		char err[256] = "";
		long st = i == 2 ? status : 202;
		int rc = rf_task_update(o, st, doc, err, sizeof(err));
		if ((rc < 0) != (st != 202 && ts && !json_is_string(ts)) ||
		    (rc < 0 && (rc != FP_EBMC || !strstr(err, "TaskState"))))
			die("rf_task_update malformed TaskState not (only) refused", err);
		if (!rf_task_state(o))
			die("rf_task_update lost the state", NULL);
		(void)rf_task_terminal(rf_task_state(o));
	}
	const json_t *tu = json_object_get(o, "task");
	if (json_string_length(tu) > RF_MAX_TASK_URI)
		die("task URI over RF_MAX_TASK_URI bytes", NULL);
	json_object_del(o, "task");
	check_capped(o, "task");
	if (json_array_size(json_object_get(o, "messages")) > RF_MAX_TASK_MESSAGES)
		die("task keeps more than RF_MAX_TASK_MESSAGES messages", NULL);
	check_dumps(o, "task");
	json_decref(o);
	int64_t w = rf_poll_wait(h->retry_after_ms, RF_POLL_DEFAULT_MS);
	if (w < RF_POLL_MIN_MS || w > RF_POLL_MAX_MS)
		die("rf_poll_wait out of bounds", NULL);
}

static void check_headers(const struct rf_headers *h)
{
	if (!memchr(h->etag, '\0', sizeof(h->etag)) ||
	    !memchr(h->location, '\0', sizeof(h->location)))
		die("a kept header is not NUL-terminated", NULL);
	if (h->token && (!h->token[0] || strlen(h->token) >= RF_MAX_HEADER))
		die("X-Auth-Token kept empty or too long", NULL);
	if (h->retry_after_ms < -1 || h->retry_after_ms > RF_MAX_RETRY_AFTER_MS)
		die("Retry-After out of bounds", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const int64_t wall = 1700000000000LL; /* 2023-11-14T22:13:20Z */
	struct rf_headers h;
	rf_headers_init(&h);
	const char *body = (const char *)data;
	size_t blen = size;
	long status = 200;
	if (size >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		size_t i = 0;
		while (i < size) {
			const char *line = (const char *)data + i;
			const char *nl = memchr(line, '\n', size - i);
			size_t n = nl ? (size_t)(nl - line) + 1 : size - i;
			if (n <= 2 &&
			    (line[0] == '\n' || (line[0] == '\r' && n == 2 && line[1] == '\n'))) {
				i += n;
				break;
			}
			rf_header_line(&h, line, n, wall);
			check_headers(&h);
			i += n;
		}
		body = (const char *)data + i;
		blen = size - i;
		if (size > 12 && data[8] == ' ') /* "HTTP/1.1 202 ..." */
			status = (data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0');
	}

	char v[128];
	size_t vn = size < sizeof(v) - 1 ? size : sizeof(v) - 1;
	memcpy(v, data, vn);
	v[vn] = '\0';
	int64_t ra = rf_parse_retry_after(v, wall);
	if (ra < -1 || ra > RF_MAX_RETRY_AFTER_MS)
		die("rf_parse_retry_after out of bounds", v);

	json_t *doc = NULL;
	char perr[128];
	if (blen == 0 || jsonx_parse(body, blen, &doc, perr, sizeof(perr)) < 0)
		doc = NULL;

	const char *systems, *sessions, *update;
	rf_root_links(doc, &systems, &sessions, &update);
	if (systems)
		check_url(systems);
	if (sessions)
		check_url(sessions);
	const char *su = rf_session_uri(h.location, doc);
	if (su)
		check_url(su);
	char etag[256], eerr[256] = "";
	if (rf_etag_of(h.etag, doc, etag, sizeof(etag), eerr, sizeof(eerr)) < 0) {
		if (!eerr[0] || etag[0])
			die("rf_etag_of refused without a message or kept a value", eerr);
	}
	check_printable(etag, "rf_etag_of");
	if (h.token) {
		eerr[0] = '\0';
		if (rf_header_safe("X-Auth-Token", h.token, RF_MAX_HEADER, eerr, sizeof(eerr)) == 0)
			check_printable(h.token, "rf_header_safe");
		else if (!eerr[0])
			die("rf_header_safe refused without a message", NULL);
	}
	if (!rf_message_id(doc))
		die("rf_message_id gave NULL", NULL);
	int budget = 64;
	walk_ids(doc, 0, &budget);

	check_choose(doc, NULL);
	check_choose(doc, "no-such-system");
	const char *first = rf_member_uri(doc, 0);
	if (first) {
		char id[256];
		rf_last_segment(first, id, sizeof(id));
		check_choose(doc, id);
	}
	check_power(doc);
	check_reset(doc);
	check_boot(doc);
	check_docs(doc);
	check_task(&h, doc, status);

	json_decref(doc);
	rf_headers_release(&h);
	return 0;
}
