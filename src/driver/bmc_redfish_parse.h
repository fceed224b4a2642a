/* bmc_redfish_parse.h - internal to the Redfish driver: the pure interpretation of what a BMC
 * sends (headers, JSON documents), with no I/O, so that tests/fuzz/fuzz_redfish.c can drive it
 * directly. bmc_redfish.c does the HTTP and calls these; the behaviour is documented in
 * docs/driver-redfish.md. Protocol: DMTF DSP0266 "Redfish Specification"; schemas: DSP8010
 * (ComputerSystem, Chassis, ActionInfo, Task, LogService/LogEntry, Processor).
 *
 * Every json_t argument is borrowed and may be NULL or of any JSON type (a BMC sends what it
 * likes); a missing or mistyped member reads as absent. Returned json_t are new references
 * owned by the caller. String results that point into a json_t live as long as it does.
 * Nothing here allocates more than a bounded amount per call beyond the documents it builds,
 * whose size is bounded by the input documents (arrays read are capped as stated). */
#ifndef FP_DRIVER_BMC_REDFISH_PARSE_H
#define FP_DRIVER_BMC_REDFISH_PARSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "driver/bmc.h"

#define RF_MAX_HEADER 4096            /* bytes of one kept header value (token) */
#define RF_MAX_MEMBERS 1024           /* members read from one collection */
#define RF_MAX_GPUS 64                /* Processors read for the GPU inventory */
#define RF_MAX_LOG_SERVICES 16        /* LogServices members looked at for the SEL */
#define RF_MAX_TASK_MESSAGES 32       /* Task Messages kept */
#define RF_MAX_STRING 256             /* bytes of one string copied into a document we build */
#define RF_MAX_SEL_ENTRIES 128        /* SEL entries one sel_read returns, whatever is asked */
#define RF_MAX_TIMESTAMP 40           /* bytes of a LogEntry Created that is read at all */
#define RF_MAX_TASK_URI 1023          /* bytes of a Task @odata.id taken as the task's name */
#define RF_MAX_RETRY_AFTER_MS 3600000 /* Retry-After values are capped at an hour */
#define RF_POLL_MIN_MS 100            /* task monitor polling interval bounds */
#define RF_POLL_DEFAULT_MS 500
#define RF_POLL_MAX_MS 5000

/* The response headers the driver keeps (one response; reset on each "HTTP/" status line). */
struct rf_headers {
	char etag[256];         /* ETag, "" if absent or 255+ bytes */
	char location[1024];    /* Location, "" if absent or 1023+ bytes */
	char *token;            /* X-Auth-Token (secret, heap, wiped on free), or NULL */
	int64_t retry_after_ms; /* Retry-After in ms (capped), -1: none or unreadable */
};

/* rf_headers_init empties h; rf_headers_release frees the token (wiped) and empties h. */
void rf_headers_init(struct rf_headers *h);
void rf_headers_release(struct rf_headers *h);

/* rf_header_line takes one raw header line as libcurl hands it (`n` bytes, not NUL-terminated,
 * usually ending in CRLF) into h: a status line "HTTP/..." resets h (a 1xx answer came first);
 * ETag, Location, X-Auth-Token and Retry-After (names case-insensitive) are kept with
 * surrounding blanks and the line end stripped; a value too long for its field is dropped
 * (treated as absent); other lines are ignored. wall_now_ms (Unix ms) dates a Retry-After
 * HTTP-date. */
void rf_header_line(struct rf_headers *h, const char *line, size_t n, int64_t wall_now_ms);

/* rf_parse_retry_after reads a Retry-After value (RFC 9110 section 10.2.3): delay-seconds, or
 * an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") taken relative to wall_now_ms (Unix ms).
 * Returns the delay in ms, 0 for a date in the past, capped at RF_MAX_RETRY_AFTER_MS; -1 when v
 * is neither. v is NUL-terminated. */
int64_t rf_parse_retry_after(const char *v, int64_t wall_now_ms);

/* rf_parse_address checks spec.bmc.address "http[s]://host[:port][/]" and writes
 * "http[s]://host[:port]" (the scheme lowercased) into base[n].
 * 0, or FP_EINVAL with err naming what is wrong and where. */
int rf_parse_address(const char *addr, char *base, size_t n, char *err, size_t errlen);

/* rf_make_url turns a URI the BMC gave (an absolute path, or an absolute URL on the BMC's own
 * origin `base`) into url[n]. FP_EBMC with err when it has a byte <= 0x20 or 0x7f, points to
 * another origin, is relative, or does not fit. */
int rf_make_url(const char *base, const char *uri, char *url, size_t n, char *err, size_t errlen);

/* rf_message_id returns the first MessageId of a Redfish error body (DSP0266 "Error
 * responses": error.@Message.ExtendedInfo[0].MessageId, else error.code, else a top-level
 * @Message.ExtendedInfo[0].MessageId), or "". Points into body. */
const char *rf_message_id(const json_t *body);

/* rf_link returns o[key]["@odata.id"] if it is a string, else NULL. Points into o. */
const char *rf_link(const json_t *o, const char *key);

/* rf_root_links reads a service root (DSP0266 "Service root"): the Systems, UpdateService and
 * session collection links (Links.Sessions, else the DSP0266 default
 * "/redfish/v1/SessionService/Sessions" when there is a SessionService, else NULL). Each out
 * may be NULL; results point into root or are static. */
void rf_root_links(const json_t *root, const char **systems, const char **sessions,
		   const char **update);

/* rf_session_uri returns the session's URI after a login: the Location header if not "",
 * else the body's @odata.id, else NULL. */
const char *rf_session_uri(const char *location, const json_t *body);

/* rf_header_safe checks a value from the BMC that the driver sends back in a request header
 * (X-Auth-Token, If-Match): 0 when v (NUL-terminated) is at most max - 1 bytes, each printable
 * ASCII 0x20-0x7e (RFC 9110 section 5.5 field-vchar and SP: no CR or LF that would end our
 * header and start another, no NUL or other control byte); else FP_EBMC with err naming `what`
 * and the first bad byte and its offset, or the bound. The value itself is never put in err (a
 * token is a secret). */
int rf_header_safe(const char *what, const char *v, size_t max, char *err, size_t errlen);

/* rf_etag_of writes into etag[n] the ETag header if not "", else the body's @odata.etag
 * (DSP0266 "ETags"), else "". 0, or FP_EBMC with etag "" and err (rf_header_safe: a byte
 * outside 0x20-0x7e, or n bytes or more) when the value is not fit for an If-Match header. */
int rf_etag_of(const char *header_etag, const json_t *body, char *etag, size_t n, char *err,
	       size_t errlen);

/* rf_last_segment writes the last path segment of uri (trailing slashes ignored) into out[n],
 * truncated to n - 1 bytes. */
void rf_last_segment(const char *uri, char *out, size_t n);

/* rf_member_uri returns coll.Members[i]["@odata.id"] if it is a string, else NULL; rf_members
 * the number of Members, capped at max. */
const char *rf_member_uri(const json_t *coll, size_t i);
size_t rf_members(const json_t *coll, size_t max);

/* rf_choose_system picks from a Systems collection the ComputerSystem spec.bmc.system `want`
 * means (its last path segment; "" or NULL: the only one). Reads at most RF_MAX_MEMBERS
 * members. 0 with *uri pointing into coll; FP_EINVAL (want not among them, or several and no
 * want) or FP_EBMC (none) with err naming base and the Ids it has. */
int rf_choose_system(const json_t *coll, const char *want, const char *base, const char **uri,
		     char *err, size_t errlen);

/* rf_power_of maps a DSP8010 PowerState ("On", "Paused" -> on; "Off" -> off; anything else,
 * NULL included -> unknown). */
enum bmc_power rf_power_of(const char *s);

/* rf_first_chassis returns sys.Links.Chassis[0]["@odata.id"], or NULL. */
const char *rf_first_chassis(const json_t *sys);

/* rf_power_system reads a ComputerSystem's PowerState (system_uri names it in msg). ON/OFF
 * when it is On/Paused/Off; UNKNOWN otherwise with *reason "PowerStateMissing" or
 * "PowerStateTransitioning" and msg[n] saying why; when known, *reason is NULL and msg is
 * untouched. */
enum bmc_power rf_power_system(const json_t *sys, const char *system_uri, const char **reason,
			       char *msg, size_t n);

/* rf_power_chassis checks the system's known power p against the Chassis document ch (at
 * chassis_uri): UNKNOWN with *reason "PowerStateDisagrees" and msg[n] when the Chassis has a
 * known PowerState that differs, else p (reason NULL, msg untouched). */
enum bmc_power rf_power_chassis(const json_t *sys, enum bmc_power p, const char *system_uri,
				const json_t *ch, const char *chassis_uri, const char **reason,
				char *msg, size_t n);

/* rf_in_list: 1 if the array arr holds the string v. rf_list_text writes arr's strings
 * ", "-separated into out[n] (truncated). */
int rf_in_list(const json_t *arr, const char *v);
void rf_list_text(const json_t *arr, char *out, size_t n);

/* rf_reset_action returns sys.Actions["#ComputerSystem.Reset"] (any type), or NULL. */
const json_t *rf_reset_action(const json_t *sys);

/* rf_allowable_inline returns act["<param>@Redfish.AllowableValues"] when it is an array (new
 * reference), else NULL; rf_action_info_values the AllowableValues array of the ActionInfo
 * document ai's Parameters entry named param (the last such), else NULL (DSP0266 "Allowable
 * values"). */
json_t *rf_allowable_inline(const json_t *act, const char *param);
json_t *rf_action_info_values(const json_t *ai, const char *param);

/* rf_reset_type picks the DSP8010 ResetType for action a given the allowable values (NULL:
 * the BMC does not list them; every value but PowerCycle is then assumed) and the current
 * power (for a cycle without PowerCycle). NULL when none fits. Static string. */
const char *rf_reset_type(const json_t *allowed, enum bmc_power_action a, enum bmc_power cur);

/* rf_boot_of reads sys.Boot's override (DSP8010 ComputerSystem.Boot) into *out. */
void rf_boot_of(const json_t *sys, struct bmc_boot *out);

/* rf_boot_patch builds the PATCH body {"Boot":{...}} that sets want on sys (system_uri names
 * it in err), checking the BMC's AllowableValues. 0 with *req (new reference);
 * FP_EUNSUPPORTED (no Boot object) or FP_EINVAL (value not allowed, the list in err). */
int rf_boot_patch(const json_t *sys, const char *system_uri, const struct bmc_boot *want,
		  json_t **req, char *err, size_t errlen);

/* rf_str_capped returns a new JSON string of s cut to at most RF_MAX_STRING bytes at a UTF-8
 * character boundary (s is UTF-8, as every jansson string is; a NUL ends it), or JSON null when
 * s is NULL. Every string the documents below copy from the BMC goes through it, so that a BMC
 * cannot grow a node's stored status (the store takes at most STORE_MAX_VALUE, 1 MiB, per value)
 * by sending long strings. */
json_t *rf_str_capped(const char *s);

/* rf_gpu_entry returns the inventory entry {"index","id","model","manufacturer","serial"} of
 * a Processor document whose ProcessorType is "GPU", else NULL. Strings capped (rf_str_capped):
 * an entry is at most 4 x 256 bytes of strings. */
json_t *rf_gpu_entry(const json_t *proc, size_t index);

/* rf_inventory_doc builds the inventory document bmc.h describes from a ComputerSystem and the
 * gpus array (borrowed; its first RF_MAX_GPUS entries are copied in). Never NULL. Bound: at most
 * 5 + 4 x RF_MAX_GPUS = 261 strings of at most RF_MAX_STRING bytes each (rf_str_capped) plus
 * two numbers and fixed keys: with entries from rf_gpu_entry, under 80 KB as compact JSON, and
 * under 450 KB even if every byte were a control character that JSON escapes as \u00XX (6
 * bytes), well under STORE_MAX_VALUE (1 MiB). */
json_t *rf_inventory_doc(const json_t *sys, const json_t *gpus);

/* rf_chassis_status_doc builds the chassis_status document bmc.h describes from a
 * ComputerSystem and its first Chassis (ch may be NULL; chassis_uri NULL when none). At most 4
 * strings of at most RF_MAX_STRING bytes (health, powerRestorePolicy, chassis Id,
 * indicatorLed) plus "power" and a boolean: under 7 KB as JSON, escapes included. */
json_t *rf_chassis_status_doc(const json_t *sys, const json_t *ch, const char *chassis_uri);

/* rf_log_is_sel: 1 if a LogService document's LogEntryType is "SEL". */
int rf_log_is_sel(const json_t *svc);

/* rf_sel_entry_is_link: 1 if a LogEntries member carries neither Message nor Created (only a
 * link: the entry is read by its @odata.id). */
int rf_sel_entry_is_link(const json_t *e);

/* rf_sel_timestamp returns a LogEntry's Created (DSP8010 LogEntry.Created, an RFC 3339
 * section 5.6 date-time) for the SEL entry's "timestamp": s itself when it is
 * "YYYY-MM-DDTHH:MM:SS[.fraction]Z" and a real UTC date and time (src/base/timefmt.h
 * fp_time_parse, day of month checked); the same instant in UTC as fp_time_format writes it
 * ("2012-03-07T20:44:00.000Z") when it ends in a numeric offset "+HH:MM"/"-HH:MM"; JSON null
 * for anything else (NULL, over RF_MAX_TIMESTAMP bytes, another shape, a lower-case 't'/'z', a
 * date that does not exist, an instant before 1970-01-01T00:00:00Z). New reference. */
json_t *rf_sel_timestamp(const char *s);

/* rf_sel_entry maps a DSP8010 LogEntry to the SEL entry bmc.h describes; idx is its place in
 * the collection, the id when Id is not a decimal number. Never NULL. timestamp from
 * rf_sel_timestamp; sensorType, message and eventType capped at RF_MAX_STRING bytes
 * (rf_str_capped): an entry is at most 3 x 256 bytes of strings, a 40-byte timestamp, two
 * integers and fixed keys (under 1 KB as JSON, under 5 KB with every byte escaped), so the at
 * most RF_MAX_SEL_ENTRIES (128) entries a sel_read returns stay under 128 KB (640 KB escaped). */
json_t *rf_sel_entry(const json_t *e, size_t idx);

/* rf_task_terminal: 1 for a DSP8010 TaskState that ends a task (Completed, Exception, Killed,
 * Cancelled); 0 otherwise, NULL included. */
int rf_task_terminal(const char *state);

/* rf_task_new starts the task document {"task","state":"Running","messages":[]} for a task
 * monitor URI (DSP0266 "Asynchronous operations") and the 202 answer's body `first` (may be
 * NULL): its @odata.id names the task (when at most RF_MAX_TASK_URI bytes; else the monitor
 * does), its TaskState, PercentComplete and Messages fold in (strings capped, rf_str_capped).
 * NULL when monitor has a byte outside 0x21-0x7e (a URI is ASCII, RFC 3986 section 2; the
 * caller fails the call instead of polling it). */
json_t *rf_task_new(const char *monitor, const json_t *first);

/* rf_task_update folds one task monitor answer (HTTP status, parsed body or NULL) into the
 * task document o: a body with a string TaskState updates state/percent/messages (at most
 * RF_MAX_TASK_MESSAGES, each capped at RF_MAX_STRING bytes); without a TaskState, any status
 * but 202 means Completed. 0, or FP_EBMC with err naming TaskState and its JSON type when the
 * status is not 202 and TaskState is there but not a string (a malformed Task: polling on would
 * only wait for the deadline); o is then unchanged. With 202 such a TaskState is ignored. */
int rf_task_update(json_t *o, long status, const json_t *body, char *err, size_t errlen);

/* rf_task_state returns o's "state" (never NULL for a document from rf_task_new). */
const char *rf_task_state(const json_t *o);

/* rf_poll_wait returns the next task poll interval in ms: the Retry-After (ms, -1: none) if
 * given, else cur, clamped to RF_POLL_MIN_MS..RF_POLL_MAX_MS. */
int64_t rf_poll_wait(int64_t retry_after_ms, int64_t cur);

#endif
