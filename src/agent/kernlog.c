/* agent/kernlog.c - the kernel log detector's parser: turns Linux kernel log lines into GPU and
 * PCIe fault events (agent/kernlog.h). A line is first stripped of the prefixes the tools that
 * print the kernel log add (a /dev/kmsg record header, dmesg --decode, an iso/ctime/syslog
 * timestamp with its host, "kernel:", an uptime or delta stamp), then its message is matched
 * against the records the drivers print:
 *
 *   NVRM Xid      "NVRM: Xid (PCI:%04x:%02x:%02x): %d, [pid=%s, name=%s, ]<text>"
 *                 (NVIDIA "XID Errors", docs.nvidia.com/deploy/xid-errors; pid/name are absent
 *                 in older drivers, pid='<unknown>' when the driver does not know)
 *   NVSwitch SXid "nvidia-nvswitchN: SXid (PCI:%04x:%02x:%02x.%x): %05d, <text>" (NVSwitch
 *                 Fabric Manager user guide, SXid section). One SXid error is printed as up to
 *                 three records: the summary ("Fatal, ..."/"Non-fatal, Link N ..."), "Severity N
 *                 Engine instance ..." and "Data {...}" (tests/data/kernel/sxid-nvswitch-h100-
 *                 tdx.log). Only the summary is an event; the two detail records give none, so
 *                 one error is counted once.
 *   fallen off    an NVRM record without an Xid that says the GPU "has fallen off the bus":
 *   the bus       "NVRM: GPU at PCI:0000:01:00: has fallen off the bus." (and the older
 *                 "GPU at 0000:01:00.0 has ..."), and the multi-line record
 *                 "NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in
 *                 this system has\nNVRM: fallen off the bus and is not responding to commands."
 *                 which dmesg prints as indented continuation lines and /dev/kmsg as one line
 *                 with "\x0a" escapes. An Xid 79 line is an Xid event, never this one.
 *                 No event is merged with another record: in every sample we have (tests/
 *                 data/kernel) a fallen-off-bus record and an Xid 79 are separate records, and
 *                 Bumblebee #554 prints "GPU at ... has fallen off the bus." twice - two events;
 *                 the health controller counts per (code, GPU) in its own windows.
 *   NVLink        an NVRM (or nvidia-nvswitch) line that names NVLink and says fatal/error/
 *                 fail, that is not an Xid/SXid record (e.g. "NVRM: knvlinkDiscoverPostRxDet
 *                 Links_GH100: Getting peer0's postRxDetLinkMask failed!"). Xid 74 ("NVLink:
 *                 fatal error detected on link N") is an Xid event.
 *   PCIe AER      drivers/pci/pcie/aer.c: the header "AER: [Multiple ]<severity> error
 *                 received: <bdf>" (before Linux 6.3) or "... error message received from
 *                 <bdf>" (after), severity "Uncorrected|Uncorrectable (Non-Fatal)", "...
 *                 (Fatal)", "Corrected|Correctable"; then per device "PCIe Bus Error:
 *                 severity=<severity>, type=..." and its "device [..] error status/mask",
 *                 "[bit] Name" and "TLP Header" lines. The header is the event (bus id: the
 *                 error source it names); in kernlog_feed the detail lines that follow it are
 *                 part of the same record and give no second event. A "PCIe Bus Error" line
 *                 with no header before it (an excerpt, or kernlog_parse_line) is an event of
 *                 its own with the bus id of the device that printed it. APEI/GHES
 *                 "[Hardware Error]" records are not parsed (0 events).
 *
 * Malformed input: an Xid/SXid line whose number is missing, not followed by ',' (the driver
 * always prints "%d, "), longer than 6 digits or out of 1..KERNLOG_XID_MAX gives no event (a
 * line cut mid-number cannot be told from a shorter number otherwise). A bus id, pid or
 * process name that cannot be read whole (e.g. "PCI:...", 30-digit pid, name longer than the
 * field) is left unknown ("" / -1) and the event is still reported. Copies into the event are
 * bounded, NUL-terminated and valid UTF-8 (control bytes and invalid UTF-8 become '?').
 *
 * ctime and syslog timestamps carry no zone: they are read as UTC (fleet nodes run in UTC; the
 * raw line keeps what was printed). Syslog stamps have no year: the year of now_ms is used, or
 * the year before when that would put the line more than a day after now_ms. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/kernlog.h"
#include "base/alloc.h"
#include "base/timefmt.h"

#include "base/banned.h"

/* A continuation of the multi-line fallen-off-bus record is at most this many lines long
 * (NVRM prints 3). */
#define PENDING_MAX_LINES 4

struct kernlog_parser {
	int64_t now_ms;
	int pending; /* a "NVRM: The NVIDIA GPU <bdf>" record is open */
	int pending_lines;
	struct kernlog_event pend;
	int aer_open; /* the last line was an AER header or one of its detail lines */
};

/* One line cut into its prefixes and its message [msg, end). */
struct kline {
	const char *start, *end;
	const char *msg;
	int indented; /* began with blanks and had no prefix: a continuation line */
	int64_t time_ms;
	int64_t uptime_us;
	uint64_t seq;
	int has_seq;
	char host[64];
};

/* What the message is, besides a possible event. */
enum kflag {
	KF_FALLEN_START = 1, /* "NVRM: The NVIDIA GPU <bdf>" without "fallen off the bus" */
	KF_RECORD_START = 2, /* an Xid/SXid/GPU-at record: never a continuation */
	KF_AER_HEADER = 4,
	KF_AER_DETAIL = 8,
};

/* ---- byte helpers on [p, e) ---- */

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}
static int is_hex(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static int is_alnum(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static int is_blank(int c)
{
	return c == ' ' || c == '\t';
}
static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}
static int hexval(int c)
{
	return is_digit(c) ? c - '0' : lower(c) - 'a' + 10;
}

static int starts(const char *p, const char *e, const char *lit)
{
	size_t n = strlen(lit);
	return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

static const char *find(const char *p, const char *e, const char *lit)
{
	size_t n = strlen(lit);
	if (p >= e || (size_t)(e - p) < n)
		return NULL;
	return memmem(p, (size_t)(e - p), lit, n);
}

/* Case-insensitive find of a lower-case literal. */
static const char *find_ci(const char *p, const char *e, const char *lit)
{
	size_t n = strlen(lit);
	for (; p < e && (size_t)(e - p) >= n; p++) {
		size_t i = 0;
		while (i < n && lower((unsigned char)p[i]) == lit[i])
			i++;
		if (i == n)
			return p;
	}
	return NULL;
}

static const char *skip_blanks(const char *p, const char *e)
{
	while (p < e && is_blank((unsigned char)*p))
		p++;
	return p;
}

/* Reads 1..maxdig decimal digits; returns the end or NULL (no digit, or more than maxdig). */
static const char *read_uint(const char *p, const char *e, int maxdig, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;
	while (p < e && is_digit((unsigned char)*p)) {
		if (++n > maxdig)
			return NULL;
		x = x * 10 + (uint64_t)(*p - '0');
		p++;
	}
	if (n == 0)
		return NULL;
	*v = x;
	return p;
}

/* ---- bounded, UTF-8-safe copies ---- */

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when the bytes there are not one
 * (overlong forms, surrogates and values above U+10FFFF are invalid, as jansson checks). */
static int utf8_len(const unsigned char *p, const unsigned char *e)
{
	unsigned c = p[0];
	int n;
	unsigned min, v;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		v = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		v = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		v = c & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (e - p < n)
		return 0;
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return n;
}

/* Appends [s, e) to dst (capacity cap, current length *len): tabs become spaces, other control
 * bytes and invalid UTF-8 become '?', a kmsg "\x0a" escape becomes a space when unescape is set;
 * stops before a character that would not fit whole. dst stays NUL-terminated. */
static void append_text(char *dst, size_t cap, size_t *len, const char *s, const char *e,
			int unescape)
{
	size_t n = *len;
	const unsigned char *p = (const unsigned char *)s, *pe = (const unsigned char *)e;
	while (p < pe) {
		if (unescape && pe - p >= 4 && memcmp(p, "\\x0a", 4) == 0) {
			if (n + 1 >= cap)
				break;
			dst[n++] = ' ';
			p += 4;
			continue;
		}
		int k = utf8_len(p, pe);
		if (k <= 1) {
			if (n + 1 >= cap)
				break;
			unsigned c = *p;
			dst[n++] = c == '\t'                           ? ' '
				   : (k == 0 || c < 0x20 || c == 0x7f) ? '?'
								       : (char)c;
			p++;
			continue;
		}
		if (n + (size_t)k >= cap)
			break;
		memcpy(dst + n, p, (size_t)k);
		n += (size_t)k;
		p += k;
	}
	dst[n] = '\0';
	*len = n;
}

static void copy_text(char *dst, size_t cap, const char *s, const char *e, int unescape)
{
	size_t n = 0;
	append_text(dst, cap, &n, s, e, unescape);
}

/* ---- PCI addresses ---- */

/* Parses [domain:]bus:device[.function] in hex at p (domain 4-8 hex digits, leading zeros past
 * four dropped; bus 2; device 2, at most 0x1f; function 1 digit 0-7). need_domain: the domain
 * is required; need_fn: the function is required (else ".0" is added, as NVRM prints none).
 * Writes "dddd:bb:dd.f" in lower case. Returns the end, or NULL when p is not one. The caller
 * checks what follows. */
static const char *parse_bdf(const char *p, const char *e, int need_fn,
			     char out[FINDING_BUS_ID_LEN])
{
	const char *q = p;
	while (q < e && is_hex((unsigned char)*q) && q - p <= 8)
		q++;
	size_t dlen = (size_t)(q - p);
	if (dlen < 4 || dlen > 8 || q >= e || *q != ':')
		return NULL;
	const char *dom = p;
	while (dlen > 4 && *dom == '0') {
		dom++;
		dlen--;
	}
	q++;
	if (e - q < 5 || !is_hex((unsigned char)q[0]) || !is_hex((unsigned char)q[1]) ||
	    q[2] != ':' || !is_hex((unsigned char)q[3]) || !is_hex((unsigned char)q[4]))
		return NULL;
	const char *bus = q, *dev = q + 3;
	if (hexval((unsigned char)dev[0]) * 16 + hexval((unsigned char)dev[1]) > 0x1f)
		return NULL;
	q += 5;
	char fn = '0';
	if (q + 1 < e && *q == '.' && q[1] >= '0' && q[1] <= '7') {
		fn = q[1];
		q += 2;
	} else if (need_fn) {
		return NULL;
	}
	if (q < e && is_hex((unsigned char)*q))
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < dlen && n < 8; i++)
		out[n++] = (char)lower((unsigned char)dom[i]);
	out[n++] = ':';
	out[n++] = (char)lower((unsigned char)bus[0]);
	out[n++] = (char)lower((unsigned char)bus[1]);
	out[n++] = ':';
	out[n++] = (char)lower((unsigned char)dev[0]);
	out[n++] = (char)lower((unsigned char)dev[1]);
	out[n++] = '.';
	out[n++] = fn;
	out[n] = '\0';
	return q;
}

/* First PCI address in [p, e): "PCI:dddd:bb:dd[.f]" or a whole "dddd:bb:dd.f" token. */
static int find_bdf(const char *p, const char *e, char out[FINDING_BUS_ID_LEN])
{
	for (const char *q = p; q < e; q++) {
		if (starts(q, e, "PCI:") && parse_bdf(q + 4, e, 0, out))
			return 1;
		if (is_hex((unsigned char)*q) &&
		    (q == p || (!is_alnum((unsigned char)q[-1]) && q[-1] != ':')) &&
		    parse_bdf(q, e, 1, out))
			return 1;
	}
	out[0] = '\0';
	return 0;
}

/* "<driver> <bdf>: " at the start of a message (dev_printk): the device's address. Returns the
 * text after it, or NULL. */
static const char *device_prefix(const char *p, const char *e, char out[FINDING_BUS_ID_LEN])
{
	const char *q = p;
	while (q < e && !is_blank((unsigned char)*q) && q - p < 48)
		q++;
	if (q == p || q >= e || *q != ' ')
		return NULL;
	const char *r = parse_bdf(q + 1, e, 1, out);
	if (!r || r >= e || *r != ':') {
		out[0] = '\0';
		return NULL;
	}
	return r + 1;
}

/* ---- timestamps: the calendar forms are base/timefmt's (one parser of dates) ---- */

/* dmesg --time-format iso "2025-01-25T10:34:54,859532+00:00" (also '.', no fraction, 'Z',
 * "+0000"). Returns the end and the UTC time, or NULL. */
static const char *read_iso(const char *p, const char *e, int64_t *ms)
{
	return fp_time_scan_iso(p, e, FP_TIME_SCAN_DMESG, ms, NULL);
}

/* dmesg --ctime "[Sun Feb 23 16:24:18 2025]" (day space-padded). */
static const char *read_ctime(const char *p, const char *e, int64_t *ms)
{
	int64_t t;
	if (p >= e || *p != '[' || !(p = fp_time_scan_ctime(p + 1, e, &t)) || p >= e || *p != ']')
		return NULL;
	*ms = t;
	return p + 1;
}

/* syslog "Nov 29 11:28:11 " (no year, day space-padded; journalctl's short-precise adds
 * ".123456"). */
static const char *read_syslog(const char *p, const char *e, int64_t now_ms, int64_t *ms)
{
	int64_t t;
	if (!(p = fp_time_scan_syslog(p, e, now_ms, &t)) || p >= e || *p != ' ')
		return NULL;
	*ms = t;
	return p + 1;
}

/* "[ 1843.308145]" -> microseconds; "[  +0.000844]" (delta) -> skipped with *us = -1. */
static const char *read_uptime(const char *p, const char *e, int64_t *us)
{
	if (p >= e || *p != '[')
		return NULL;
	p = skip_blanks(p + 1, e);
	int delta = 0;
	if (p < e && *p == '+') {
		delta = 1;
		p++;
	}
	uint64_t sec;
	if (!(p = read_uint(p, e, 12, &sec)) || p >= e || *p != '.')
		return NULL;
	p++;
	int64_t frac = 0;
	int nd = 0;
	while (p < e && is_digit((unsigned char)*p)) {
		if (nd < 6)
			frac = frac * 10 + (*p - '0');
		if (++nd > 9)
			return NULL;
		p++;
	}
	if (nd == 0 || p >= e || *p != ']')
		return NULL;
	for (; nd < 6; nd++)
		frac *= 10;
	*us = delta ? -1 : (int64_t)sec * 1000000 + frac;
	return p + 1;
}

/* /dev/kmsg "prio,seq,usec,flags[,...];" (Documentation/ABI/testing/dev-kmsg). */
static const char *read_kmsg(const char *p, const char *e, struct kline *l)
{
	uint64_t prio, seq, usec;
	if (!(p = read_uint(p, e, 4, &prio)) || p >= e || *p != ',' ||
	    !(p = read_uint(p + 1, e, 19, &seq)) || p >= e || *p != ',' ||
	    !(p = read_uint(p + 1, e, 18, &usec)) || p >= e || *p != ',')
		return NULL;
	const char *f = ++p;
	while (p < e && *p != ';' && !is_blank((unsigned char)*p) && p - f < 32)
		p++;
	if (p >= e || *p != ';')
		return NULL;
	l->seq = seq;
	l->has_seq = 1;
	l->uptime_us = (int64_t)usec;
	return p + 1;
}

/* dmesg --decode "kern  :err   : " (util-linux facility and level names). */
static const char *read_decode(const char *p, const char *e)
{
	static const char *const fac[] = {"kern",     "user",   "mail",   "daemon", "auth",
					  "syslog",   "lpr",    "news",   "uucp",   "cron",
					  "authpriv", "ftp",    "local0", "local1", "local2",
					  "local3",   "local4", "local5", "local6", "local7"};
	static const char *const lvl[] = {"emerg", "alert",  "crit", "err",
					  "warn",  "notice", "info", "debug"};
	const char *q = p;
	while (q < e && is_alnum((unsigned char)*q) && q - p < 9)
		q++;
	int ok = 0;
	for (size_t i = 0; i < sizeof(fac) / sizeof(fac[0]); i++)
		if ((size_t)(q - p) == strlen(fac[i]) && memcmp(p, fac[i], (size_t)(q - p)) == 0)
			ok = 1;
	if (!ok)
		return NULL;
	q = skip_blanks(q, e);
	if (q >= e || *q != ':')
		return NULL;
	const char *w = ++q;
	while (q < e && is_alnum((unsigned char)*q) && q - w < 7)
		q++;
	ok = q == w;
	for (size_t i = 0; i < sizeof(lvl) / sizeof(lvl[0]); i++)
		if ((size_t)(q - w) == strlen(lvl[i]) && memcmp(w, lvl[i], (size_t)(q - w)) == 0)
			ok = 1;
	if (!ok)
		return NULL;
	q = skip_blanks(q, e);
	if (q + 1 >= e || q[0] != ':' || q[1] != ' ')
		return NULL;
	return q + 2;
}

/* "host " followed by "kernel:" - the syslog host; returns the text after the host. */
static const char *read_host(const char *p, const char *e, int require_kernel, char host[64])
{
	const char *q = p;
	while (q < e && !is_blank((unsigned char)*q))
		q++;
	if (q == p || q >= e)
		return NULL;
	if (require_kernel && !starts(q + 1, e, "kernel:") && !starts(q + 1, e, "kernel["))
		return NULL;
	if (q - p < 64)
		copy_text(host, 64, p, q, 0);
	return q + 1;
}

/* Cuts the prefixes off [start, end). */
static void split_line(struct kline *l, const char *s, size_t len, int64_t now_ms)
{
	memset(l, 0, sizeof(*l));
	const char *e = s, *se = s + len;
	while (e < se && *e != '\n')
		e++;
	while (e > s && (is_blank((unsigned char)e[-1]) || e[-1] == '\r'))
		e--;
	l->start = s;
	l->end = e;
	l->uptime_us = -1;
	const char *p = s, *q;
	int any = 0;
	if ((q = read_kmsg(p, e, l))) {
		l->msg = q;
		return;
	}
	int lead_blank = p < e && is_blank((unsigned char)*p);
	p = skip_blanks(p, e);
	if ((q = read_decode(p, e))) {
		p = q;
		any = 1;
	}
	if (p + 2 < e && *p == '<' && is_digit((unsigned char)p[1])) { /* console "<6>" level */
		uint64_t lv;
		q = read_uint(p + 1, e, 3, &lv);
		if (q && q < e && *q == '>') {
			p = q + 1;
			any = 1;
		}
	}
	int64_t ms;
	if ((q = read_iso(p, e, &ms))) {
		l->time_ms = ms;
		p = skip_blanks(q, e);
		if ((q = read_host(p, e, 1, l->host)))
			p = q;
		any = 1;
	} else if ((q = read_ctime(p, e, &ms))) {
		l->time_ms = ms;
		p = skip_blanks(q, e);
		any = 1;
	} else if ((q = read_syslog(p, e, now_ms, &ms))) {
		l->time_ms = ms;
		p = skip_blanks(q, e);
		if ((q = read_host(p, e, 0, l->host)))
			p = q;
		any = 1;
	}
	if (starts(p, e, "kernel: ")) {
		p += 8;
		any = 1;
	} else if (starts(p, e, "kernel[")) {
		q = p + 7;
		while (q < e && is_digit((unsigned char)*q) && q - p < 20)
			q++;
		if (starts(q, e, "]: ")) {
			p = q + 3;
			any = 1;
		}
	}
	p = skip_blanks(p, e);
	int64_t us;
	if ((q = read_uptime(p, e, &us))) {
		l->uptime_us = us;
		p = q;
		any = 1;
	}
	l->msg = skip_blanks(p, e);
	l->indented = lead_blank && !any;
}

/* ---- events ---- */

static void event_init(struct kernlog_event *ev, const struct kline *l, enum kernlog_kind kind)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->xid = -1;
	ev->recovery_action = -1;
	ev->gpu_index = -1;
	ev->pid = -1;
	ev->time_ms = l->time_ms;
	ev->uptime_us = l->uptime_us;
	ev->seq = l->seq;
	ev->has_seq = l->has_seq;
	memcpy(ev->host, l->host, sizeof(ev->host));
	copy_text(ev->raw, sizeof(ev->raw), l->start, l->end, 0);
	copy_text(ev->message, sizeof(ev->message), l->msg, l->end, 1);
}

static void set_code(struct kernlog_event *ev, const char *prefix, long n)
{
	size_t k = strlen(prefix);
	memcpy(ev->code, prefix, k);
	if (n >= 0) {
		char d[24];
		int i = 0;
		do {
			d[i++] = (char)('0' + n % 10);
			n /= 10;
		} while (n > 0);
		while (i > 0)
			ev->code[k++] = d[--i];
	}
	ev->code[k] = '\0';
}

/* "(PCI:<bus>): <n>," after "Xid " or "SXid ". Returns the text after "<n>," or NULL. */
static const char *read_xid_head(const char *p, const char *e, char bus[FINDING_BUS_ID_LEN],
				 int *xid)
{
	if (p >= e || *p != '(')
		return NULL;
	p++;
	const char *close = NULL;
	for (const char *q = p; q < e && q - p <= 40; q++)
		if (*q == ')') {
			close = q;
			break;
		}
	if (!close)
		return NULL;
	const char *b = starts(p, close, "PCI:") ? p + 4 : p;
	const char *be = parse_bdf(b, close, 0, bus);
	if (!be || be != close)
		bus[0] = '\0';
	p = close + 1;
	if (p >= e || *p != ':')
		return NULL;
	p = skip_blanks(p + 1, e);
	uint64_t v;
	if (!(p = read_uint(p, e, 6, &v)) || p >= e || *p != ',' || v < 1 || v > KERNLOG_XID_MAX)
		return NULL;
	*xid = (int)v;
	return skip_blanks(p + 1, e);
}

/* "pid=1234, " / "pid='<unknown>', " and "name=python3, " after the Xid number. */
static void read_pid_name(const char *p, const char *e, struct kernlog_event *ev)
{
	if (starts(p, e, "pid=")) {
		const char *v = p + 4, *c = v;
		while (c < e && *c != ',' && c - v < 32)
			c++;
		uint64_t pid = 0;
		const char *r = read_uint(v, c, 10, &pid);
		if (r == c && c < e && *c == ',' && pid <= INT32_MAX)
			ev->pid = (long)pid;
		if (c >= e || *c != ',')
			return;
		p = skip_blanks(c + 1, e);
	}
	if (starts(p, e, "name=")) {
		const char *v = p + 5, *c = v;
		while (c < e && *c != ',' && c - v < (long)sizeof(ev->process))
			c++;
		if (c < e && *c == ',' && c > v && (size_t)(c - v) < sizeof(ev->process) &&
		    !(c - v == 9 && memcmp(v, "<unknown>", 9) == 0))
			copy_text(ev->process, sizeof(ev->process), v, c, 0);
	}
}

/* Xid 154's text after "154, ": "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset
 * Required)" (the "from ..." part may be absent). Returns the new action: the hex number
 * (nvmlDeviceGpuRecoveryAction_t, authoritative when the words disagree), else the words in
 * the parentheses, else -1. */
static int xid154_action(const char *p, const char *e)
{
	const char *c = find_ci(p, e, "recovery action changed");
	if (!c)
		return -1;
	c += strlen("recovery action changed");
	const char *to = find_ci(c, e, " to ");
	if (!to)
		return -1;
	p = skip_blanks(to + 4, e);
	if (starts(p, e, "0x") || starts(p, e, "0X")) {
		int v = 0, nd = 0;
		for (p += 2; p < e && nd < 8; p++, nd++) {
			int d = *p >= '0' && *p <= '9'                     ? *p - '0'
				: (*p | 0x20) >= 'a' && (*p | 0x20) <= 'f' ? (*p | 0x20) - 'a' + 10
									   : -1;
			if (d < 0)
				break;
			v = v * 16 + d;
		}
		if (nd > 0 && nd < 8)
			return v;
	}
	static const struct {
		const char *words;
		int action;
	} names[] = {
		{"(none", AGENT_RECOVERY_NONE},
		{"(gpu reset", AGENT_RECOVERY_GPU_RESET},
		{"(node reboot", AGENT_RECOVERY_NODE_REBOOT},
		{"(os reboot", AGENT_RECOVERY_NODE_REBOOT},
		{"(drain p2p", AGENT_RECOVERY_DRAIN_P2P},
		{"(drain and reset", AGENT_RECOVERY_DRAIN_AND_RESET},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (find_ci(p, e, names[i].words))
			return names[i].action;
	return -1;
}

static int parse_xid(const struct kline *l, const char *at, struct kernlog_event *ev)
{
	char bus[FINDING_BUS_ID_LEN];
	int xid;
	const char *rest = read_xid_head(at + strlen("NVRM: Xid "), l->end, bus, &xid);
	if (!rest)
		return 0;
	event_init(ev, l, KERNLOG_XID);
	ev->xid = xid;
	set_code(ev, "xid:", xid);
	memcpy(ev->pci_bus_id, bus, sizeof(bus));
	read_pid_name(rest, l->end, ev);
	if (xid == 154) {
		/* The catalog: Xid 154 is the driver's summary of the recovery the GPU now needs,
		 * the authoritative action: its code is the action's (None keeps xid:154, info). */
		ev->recovery_action = xid154_action(rest, l->end);
		const char *code = agent_recovery_code(ev->recovery_action);
		if (code)
			snprintf(ev->code, sizeof(ev->code), "%s", code);
	}
	return 1;
}

static int parse_sxid(const struct kline *l, const char *at, struct kernlog_event *ev)
{
	char bus[FINDING_BUS_ID_LEN];
	int xid;
	const char *rest = read_xid_head(at + strlen("SXid "), l->end, bus, &xid);
	if (!rest)
		return 0;
	/* the detail records of one SXid error (see the file comment) */
	if (starts(rest, l->end, "Data {") || starts(rest, l->end, "Severity "))
		return 0;
	event_init(ev, l, KERNLOG_SXID);
	ev->xid = xid;
	set_code(ev, "sxid:", xid);
	memcpy(ev->pci_bus_id, bus, sizeof(bus));
	/* the device token before " SXid": "nvidia-nvswitch3:" (some print no colon) */
	const char *de = at;
	while (de > l->msg && is_blank((unsigned char)de[-1]))
		de--;
	if (de > l->msg && de[-1] == ':')
		de--;
	const char *ds = de;
	while (ds > l->msg && !is_blank((unsigned char)ds[-1]))
		ds--;
	if (de - ds < (long)sizeof(ev->device) && starts(ds, de, "nvidia-nvswitch"))
		copy_text(ev->device, sizeof(ev->device), ds, de, 0);
	return 1;
}

/* Severity in [p, e): "fatal" | "nonfatal" | "correctable" or NULL. */
static const char *aer_severity(const char *p, const char *e)
{
	if (find(p, e, "Uncorrect")) {
		if (find(p, e, "(Non-Fatal)"))
			return "nonfatal";
		if (find(p, e, "(Fatal)"))
			return "fatal";
		return NULL;
	}
	if (find(p, e, "Corrected") || find(p, e, "Correctable"))
		return "correctable";
	return NULL;
}

static void set_aer(struct kernlog_event *ev, const char *sev, const char *bus)
{
	size_t n = strlen(sev);
	memcpy(ev->aer_severity, sev, n + 1);
	memcpy(ev->code, "aer:", 4);
	memcpy(ev->code + 4, sev, n + 1);
	memcpy(ev->pci_bus_id, bus, FINDING_BUS_ID_LEN);
}

/* AER header or detail line. Returns 1 with *ev filled for an event. */
static int parse_aer(const struct kline *l, struct kernlog_event *ev, int *flags)
{
	const char *m = l->msg, *e = l->end;
	char dev[FINDING_BUS_ID_LEN] = "", src[FINDING_BUS_ID_LEN] = "";
	const char *after = device_prefix(m, e, dev);
	const char *body = skip_blanks(after ? after : m, e);
	if (!after && !l->indented)
		body = m;
	const char *a = find(m, e, "AER: ");
	const char *rcv = a ? find(a, e, " error received") : NULL;
	if (a && !rcv)
		rcv = find(a, e, " error message received");
	if (rcv) {
		const char *sev = aer_severity(a, rcv);
		if (!sev)
			return 0;
		*flags |= KF_AER_HEADER;
		const char *s = find(rcv, e, "received from ");
		if (s)
			s += strlen("received from ");
		else if ((s = find(rcv, e, "received: ")))
			s += strlen("received: ");
		const char *r = s ? parse_bdf(s, e, 1, src) : NULL;
		if (!r)
			memcpy(src, dev, sizeof(src));
		event_init(ev, l, KERNLOG_AER);
		set_aer(ev, sev, src);
		return 1;
	}
	if (starts(body, e, "PCIe Bus Error:")) {
		*flags |= KF_AER_DETAIL;
		const char *se = find(body, e, ", type=");
		const char *sev = aer_severity(body, se ? se : e);
		if (!sev)
			return 0;
		event_init(ev, l, KERNLOG_AER);
		set_aer(ev, sev, dev);
		return 1;
	}
	if ((after || l->indented) &&
	    (starts(body, e, "device [") || starts(body, e, "[") ||
	     starts(body, e, "TLP Header:") || starts(body, e, "Error of this Agent") ||
	     starts(body, e, "AER:   Error of this Agent")))
		*flags |= KF_AER_DETAIL;
	return 0;
}

/* Classifies one split line. Returns 1 with *ev filled when it is a single-line fault record. */
static int classify(const struct kline *l, struct kernlog_event *ev, int *flags)
{
	const char *m = l->msg, *e = l->end, *at;
	*flags = 0;
	if ((at = find(m, e, "NVRM: Xid "))) {
		*flags |= KF_RECORD_START;
		return parse_xid(l, at, ev);
	}
	if ((at = find(m, e, "SXid ("))) {
		*flags |= KF_RECORD_START;
		return parse_sxid(l, at, ev);
	}
	int nvrm = find(m, e, "NVRM") != NULL;
	if (nvrm && (find(m, e, "NVRM: GPU at ") || find(m, e, "NVRM: The NVIDIA GPU ")))
		*flags |= KF_RECORD_START;
	if (nvrm && find(m, e, "fallen off the bus")) {
		event_init(ev, l, KERNLOG_FALLEN_OFF_BUS);
		memcpy(ev->code, "gpu:fallen_off_bus", sizeof("gpu:fallen_off_bus"));
		find_bdf(m, e, ev->pci_bus_id);
		return 1;
	}
	if (nvrm && find(m, e, "NVRM: The NVIDIA GPU ")) {
		*flags |= KF_FALLEN_START;
		return 0;
	}
	if ((nvrm || starts(m, e, "nvidia-nvswitch")) && find_ci(m, e, "nvlink") &&
	    (find_ci(m, e, "fatal") || find_ci(m, e, "error") || find_ci(m, e, "fail"))) {
		event_init(ev, l, KERNLOG_NVLINK);
		memcpy(ev->code, "nvlink:error", sizeof("nvlink:error"));
		find_bdf(m, e, ev->pci_bus_id);
		const char *de = m;
		while (de < e && !is_blank((unsigned char)*de) && *de != ':')
			de++;
		if (starts(m, e, "nvidia-nvswitch") && de - m < (long)sizeof(ev->device))
			copy_text(ev->device, sizeof(ev->device), m, de, 0);
		return 1;
	}
	if (nvrm)
		return 0;
	return parse_aer(l, ev, flags);
}

int kernlog_parse_line(const char *line, size_t len, int64_t now_ms, struct kernlog_event *out)
{
	struct kline l;
	int flags;
	if (!line || !out)
		return 0;
	split_line(&l, line, len, now_ms);
	return classify(&l, out, &flags);
}

struct kernlog_parser *kernlog_parser_new(int64_t now_ms)
{
	struct kernlog_parser *p = xcalloc(1, sizeof(*p));
	p->now_ms = now_ms;
	return p;
}

void kernlog_parser_free(struct kernlog_parser *p)
{
	free(p);
}

int kernlog_feed(struct kernlog_parser *p, const char *line, size_t len,
		 struct kernlog_event out[2])
{
	struct kline l;
	int flags;
	if (!p || !line || !out)
		return 0;
	split_line(&l, line, len, p->now_ms);
	int single = classify(&l, &out[0], &flags);

	if (p->pending) {
		/* a line that is a fault record of its own is no continuation, except the record's
		 * own last line ("NVRM: fallen off the bus and ...") */
		int cont = !(flags & KF_RECORD_START) && p->pending_lines < PENDING_MAX_LINES &&
			   (l.indented || starts(l.msg, l.end, "NVRM: ")) &&
			   (!single || out[0].kind == KERNLOG_FALLEN_OFF_BUS);
		if (cont) {
			static const char sp[] = " ";
			size_t n = strlen(p->pend.message);
			append_text(p->pend.message, sizeof(p->pend.message), &n, sp, sp + 1, 0);
			append_text(p->pend.message, sizeof(p->pend.message), &n, l.msg, l.end, 1);
			p->pending_lines++;
			if (find(l.msg, l.end, "fallen off the bus")) {
				out[0] = p->pend;
				p->pending = 0;
				return 1;
			}
			return 0;
		}
		p->pending = 0; /* it never said "fallen off the bus" */
	}

	if (p->aer_open) {
		if (flags & KF_AER_DETAIL)
			return 0; /* part of the AER record whose header was the event */
		p->aer_open = 0;
	}
	if (flags & KF_AER_HEADER)
		p->aer_open = 1;

	if (flags & KF_FALLEN_START) {
		event_init(&p->pend, &l, KERNLOG_FALLEN_OFF_BUS);
		memcpy(p->pend.code, "gpu:fallen_off_bus", sizeof("gpu:fallen_off_bus"));
		find_bdf(l.msg, l.end, p->pend.pci_bus_id);
		p->pending = 1;
		p->pending_lines = 1;
		return 0;
	}
	return single;
}

int kernlog_flush(struct kernlog_parser *p, struct kernlog_event out[2])
{
	(void)out;
	if (!p)
		return 0;
	p->pending = 0;
	p->aer_open = 0;
	return 0;
}
