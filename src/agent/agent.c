/* agent.c - the node agent's loop (agent.h): kernel log reading with a crash-safe cursor, the
 * tool detectors with timeouts, event ids, report building, and sending through the outbox.
 * Parsing is the parsers' (kernlog.h, nvsmi.h, dcgm.h, ibstat.h); this file decides what is
 * read when, what a report says, and what survives a crash. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/dcgm.h"
#include "agent/ibstat.h"
#include "agent/kernlog.h"
#include "agent/nvml.h"
#include "agent/nvsmi.h"
#include "agent/outbox.h"
#include "agent/probe.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/timefmt.h"

#include "base/banned.h"

#define AG_CHUNK 65536               /* kernel file read size; a longer line is cut here */
#define AG_RECENT_IDS 64             /* emitted kernel ids remembered for the cursor */
#define AG_SENT_FINDINGS 4096        /* finding ids already put, not put again this run */
#define AG_MAX_FINDINGS 512
#define AG_ANSWER_MAX ((size_t)64 << 10)

static const char *const det_names[AGENT_DET__COUNT] = {"kernel", "nvidia-smi", "nvml", "dcgm",
							"ibstat"};

const char *agent_det_name(enum agent_det d)
{
	return (unsigned)d < AGENT_DET__COUNT ? det_names[d] : "?";
}

/* One event as it goes into a report. */
struct ag_event {
	char id[AGENT_ID_LEN];
	char source[16];
	char code[FINDING_CODE_LEN];
	int gpu_index;
	char bus[FINDING_BUS_ID_LEN];
	long pid;
	char process[64];
	int64_t time_ms;
	char message[KERNLOG_MSG_LEN];
	char raw[KERNLOG_RAW_LEN];
};

struct ag_line {
	uint64_t pos;     /* file: byte offset of the line; kmsg: sequence number */
	char text[KERNLOG_RAW_LEN];
};

struct ag_recent {
	uint64_t pos;     /* first line's pos */
	char id[AGENT_ID_LEN];
};

enum { KSRC_NONE = 0, KSRC_FILE, KSRC_KMSG };

struct agent {
	struct agent_config cfg;
	struct agent_transport tp;
	struct outbox ob;
	struct agent_stats st;
	struct agent_det_state det[AGENT_DET__COUNT];
	int configured[AGENT_DET__COUNT];
	char nvsmi_path[4096], dcgmi_path[4096], ibstat_path[4096]; /* "auto" resolved */
	int nvsmi_auto, dcgmi_auto, ibstat_auto;
	int64_t timeout_since[AGENT_DET__COUNT]; /* start of a probe timeout episode, 0 none */
	struct nvml *nvml;
	int expected_gpus;

	/* kernel source */
	int ksrc;
	int kfd;
	uint64_t kdev, kino;
	uint64_t kpos;            /* file: next byte to read; kmsg: last seq read */
	int kmsg_have_seq;
	struct kernlog_parser *kp;
	struct ag_line ring[AGENT_CURSOR_BACKUP];
	size_t ring_n, ring_head;  /* ring_head: index of the oldest */
	struct ag_recent recent[AG_RECENT_IDS];
	size_t nrecent;
	char (*skip)[AGENT_ID_LEN]; /* ids to skip on resume, from the cursor */
	size_t nskip;
	uint64_t kmsg_resume_seq;  /* kmsg: records with seq < this are not fed */
	int kmsg_resume;
	int kpaused;               /* reading stopped by the outbox bound */
	int keof_quiet;            /* the last pass ended at EOF without new bytes */
	uint64_t cursor_written_pos;
	int cursor_dirty;

	/* events waiting to be put */
	struct ag_event *ev;
	size_t nev;

	/* gpu_reset: the operation reported last, and the outcome of one run but not reported */
	char reset_done_op[72];
	char reset_pending_op[72];
	int reset_pending_ok;
	char reset_pending_msg[512];

	/* finding ids already put */
	char (*sent)[AGENT_ID_LEN];
	size_t nsent;
};

/* ------------------------------------------------------------------ small helpers */

static int64_t ag_now(struct agent *a)
{
	if (a->cfg.wall_ms)
		return a->cfg.wall_ms();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void ag_set(struct agent *a, enum agent_det d, int live, const char *status,
		   const char *reason, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void ag_set(struct agent *a, enum agent_det d, int live, const char *status,
		   const char *reason, const char *fmt, ...)
{
	struct agent_det_state *s = &a->det[d];
	s->live = live;
	s->status = status;
	snprintf(s->reason, sizeof(s->reason), "%s", reason ? reason : "");
	s->message[0] = '\0';
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->message, sizeof(s->message), fmt, ap);
		va_end(ap);
	}
}

static void ag_hex_id(const char *prefix, crypto_generichash_state *h, char out[AGENT_ID_LEN])
{
	unsigned char md[16];
	crypto_generichash_final(h, md, sizeof(md));
	static const char hx[] = "0123456789abcdef";
	out[0] = prefix[0];
	out[1] = '-';
	for (size_t i = 0; i < sizeof(md); i++) {
		out[2 + 2 * i] = hx[md[i] >> 4];
		out[3 + 2 * i] = hx[md[i] & 15];
	}
	out[AGENT_ID_LEN - 1] = '\0';
}

/* Each field goes in with its length first, so ("ab","c") and ("a","bc") differ. */
static void ag_hash_str(crypto_generichash_state *h, const char *s)
{
	uint64_t n = s ? strlen(s) : 0;
	crypto_generichash_update(h, (const unsigned char *)&n, sizeof(n));
	if (n)
		crypto_generichash_update(h, (const unsigned char *)s, n);
}

static void ag_hash_u64(crypto_generichash_state *h, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i)); /* little endian on every host */
	crypto_generichash_update(h, b, sizeof(b));
}

void agent_id_file_line(const char *boot_id, uint64_t dev, uint64_t ino, uint64_t offset,
			const char *raw, char out[AGENT_ID_LEN])
{
	crypto_generichash_state h;
	crypto_generichash_init(&h, NULL, 0, 16);
	ag_hash_str(&h, "file");
	ag_hash_str(&h, boot_id);
	ag_hash_u64(&h, dev);
	ag_hash_u64(&h, ino);
	ag_hash_u64(&h, offset);
	ag_hash_str(&h, raw);
	ag_hex_id("k", &h, out);
}

void agent_id_kmsg(const char *boot_id, uint64_t seq, char out[AGENT_ID_LEN])
{
	crypto_generichash_state h;
	crypto_generichash_init(&h, NULL, 0, 16);
	ag_hash_str(&h, "kmsg");
	ag_hash_str(&h, boot_id);
	ag_hash_u64(&h, seq);
	ag_hex_id("k", &h, out);
}

void agent_id_finding(const char *boot_id, const struct agent_finding *f, char out[AGENT_ID_LEN])
{
	crypto_generichash_state h;
	crypto_generichash_init(&h, NULL, 0, 16);
	ag_hash_str(&h, "finding");
	ag_hash_str(&h, boot_id);
	ag_hash_str(&h, f->code);
	ag_hash_str(&h, f->pci_bus_id);
	ag_hash_str(&h, f->key);
	ag_hex_id("f", &h, out);
}

/* Strips trailing '\n' and '\r' in place. */
static size_t ag_chomp(char *s, size_t n)
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return n;
}

/* ------------------------------------------------------------------ report building */

static json_t *ag_str(const char *s)
{
	/* Bounded (AGENT_MAX_MESSAGE) and never failing on bad UTF-8. */
	char tmp[AGENT_MAX_MESSAGE + 1];
	snprintf(tmp, sizeof(tmp), "%s", s ? s : "");
	return jsonx_string_lossy(tmp);
}

static json_t *ag_detectors_json(struct agent *a)
{
	json_t *arr = json_array();
	for (int d = 0; d < AGENT_DET__COUNT; d++) {
		const struct agent_det_state *s = &a->det[d];
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(det_names[d]));
		json_object_set_new(o, "live", json_boolean(s->live));
		json_object_set_new(o, "status", json_string(s->status ? s->status : "unknown"));
		if (s->reason[0])
			json_object_set_new(o, "reason", json_string(s->reason));
		if (s->message[0])
			json_object_set_new(o, "message", ag_str(s->message));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *ag_event_json(struct agent *a, const struct ag_event *e)
{
	json_t *o = json_object();
	char t[FP_TIME_LEN];
	json_object_set_new(o, "id", json_string(e->id));
	json_object_set_new(o, "source", json_string(e->source));
	json_object_set_new(o, "code", json_string(e->code));
	if (e->gpu_index >= 0 || e->bus[0]) {
		json_t *g = json_object();
		if (e->gpu_index >= 0)
			json_object_set_new(g, "index", json_integer(e->gpu_index));
		if (e->bus[0])
			json_object_set_new(g, "pciBusId", json_string(e->bus));
		json_object_set_new(o, "gpu", g);
	}
	if (e->pid >= 0)
		json_object_set_new(o, "pid", json_integer(e->pid));
	if (e->process[0])
		json_object_set_new(o, "process", ag_str(e->process));
	if (a->cfg.job && *a->cfg.job)
		json_object_set_new(o, "job", ag_str(a->cfg.job));
	fp_time_format(e->time_ms, t);
	json_object_set_new(o, "time", json_string(t));
	json_object_set_new(o, "message", ag_str(e->message));
	if (e->raw[0])
		json_object_set_new(o, "raw", ag_str(e->raw));
	return o;
}

/* Puts a report of the waiting events (all of them; the callers keep nev <=
 * AGENT_MAX_REPORT_EVENTS) and clears them. */
static int ag_put_report(struct agent *a)
{
	json_t *doc = json_object();
	json_t *ag = json_object();
	json_object_set_new(ag, "version", json_string(AGENT_VERSION));
	json_object_set_new(ag, "bootId", ag_str(a->cfg.boot_id));
	json_object_set_new(ag, "intervalSeconds", json_integer(a->cfg.interval_s));
	if (a->cfg.job && *a->cfg.job)
		json_object_set_new(ag, "job", ag_str(a->cfg.job));
	json_object_set_new(doc, "agent", ag);
	json_object_set_new(doc, "detectors", ag_detectors_json(a));
	json_t *evs = json_array();
	for (size_t i = 0; i < a->nev; i++)
		json_array_append_new(evs, ag_event_json(a, &a->ev[i]));
	json_object_set_new(doc, "events", evs);
	char *body = jsonx_dumps(doc);
	json_decref(doc);
	char err[512];
	uint64_t seq = 0;
	int rc = outbox_put(&a->ob, body, strlen(body), a->nev, &seq, err, sizeof(err));
	free(body);
	if (rc < 0) {
		log_error("agent outbox write failed node=%s err=\"%s\"", a->cfg.node, err);
		return FP_EIO;
	}
	a->st.reports_put++;
	a->st.events_put += a->nev;
	log_debug("agent report queued node=%s seq=%" PRIu64 " events=%zu", a->cfg.node, seq,
		  a->nev);
	a->nev = 0;
	return 0;
}

static struct ag_event *ag_new_event(struct agent *a)
{
	BUG_ON(a->nev >= AGENT_MAX_REPORT_EVENTS);
	struct ag_event *e = &a->ev[a->nev++];
	memset(e, 0, sizeof(*e));
	e->gpu_index = -1;
	e->pid = -1;
	return e;
}

/* ------------------------------------------------------------------ kernel cursor */

static char *ag_cursor_path(struct agent *a)
{
	return xasprintf("%s/kernel.cursor", a->cfg.state_dir);
}

/* The resume position: the oldest line in the ring (AGENT_CURSOR_BACKUP lines back), or the
 * read position when the ring is empty. */
static uint64_t ag_resume_pos(struct agent *a)
{
	if (a->ring_n == 0)
		return a->ksrc == KSRC_KMSG ? a->kpos + (a->kmsg_have_seq ? 1 : 0) : a->kpos;
	return a->ring[a->ring_head].pos;
}

static int ag_write_cursor(struct agent *a)
{
	uint64_t resume = ag_resume_pos(a);
	json_t *doc = json_object();
	json_object_set_new(doc, "kind", json_string(a->ksrc == KSRC_KMSG ? "kmsg" : "file"));
	json_object_set_new(doc, "path", ag_str(a->cfg.kernel_log));
	json_object_set_new(doc, "bootId", ag_str(a->cfg.boot_id));
	char num[32];
	snprintf(num, sizeof(num), "%" PRIu64, a->kdev);
	json_object_set_new(doc, "dev", json_string(num));
	snprintf(num, sizeof(num), "%" PRIu64, a->kino);
	json_object_set_new(doc, "inode", json_string(num));
	snprintf(num, sizeof(num), "%" PRIu64, resume);
	json_object_set_new(doc, a->ksrc == KSRC_KMSG ? "seq" : "offset", json_string(num));
	json_t *skip = json_array();
	for (size_t i = 0; i < a->nrecent; i++)
		if (a->recent[i].pos >= resume)
			json_array_append_new(skip, json_string(a->recent[i].id));
	json_object_set_new(doc, "emitted", skip);
	char *body = jsonx_dumps(doc);
	json_decref(doc);
	char *path = ag_cursor_path(a);
	char err[512];
	int rc = outbox_write_durable(path, body, strlen(body), err, sizeof(err));
	free(body);
	free(path);
	if (rc < 0) {
		log_error("agent cursor write failed node=%s err=\"%s\"", a->cfg.node, err);
		return FP_EIO;
	}
	a->cursor_written_pos = resume;
	a->cursor_dirty = 0;
	return 0;
}

static int ag_json_u64(const json_t *o, const char *key, uint64_t *out)
{
	const char *s = json_string_value(json_object_get(o, key));
	if (!s || !*s || strlen(s) > 20)
		return -1;
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* Reads the cursor when it names this source: sets the resume position and the skip set.
 * A missing, damaged or foreign cursor means: start at the beginning (logged when damaged). */
static void ag_load_cursor(struct agent *a, uint64_t *file_offset)
{
	*file_offset = 0;
	char *path = ag_cursor_path(a);
	struct buf b;
	buf_init(&b, 1 << 20);
	FILE *f = fopen(path, "re");
	if (!f) {
		free(path);
		buf_release(&b);
		return;
	}
	char chunk[4096];
	size_t n;
	int toobig = 0;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_append(&b, chunk, n) < 0)
			toobig = 1;
	fclose(f);
	json_t *doc = NULL;
	char err[256] = "too large";
	if (toobig || jsonx_parse(b.data ? b.data : "", b.len, &doc, err, sizeof(err)) < 0) {
		log_warn("agent kernel cursor unreadable, starting at the beginning path=%s err=\"%s\"",
			 path, err);
		goto out;
	}
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	const char *cpath = json_string_value(json_object_get(doc, "path"));
	const char *boot = json_string_value(json_object_get(doc, "bootId"));
	uint64_t dev = 0, ino = 0, pos = 0;
	if (!kind || !cpath || strcmp(cpath, a->cfg.kernel_log) != 0)
		goto out;
	if (a->ksrc == KSRC_FILE) {
		if (strcmp(kind, "file") || ag_json_u64(doc, "dev", &dev) < 0 ||
		    ag_json_u64(doc, "inode", &ino) < 0 || ag_json_u64(doc, "offset", &pos) < 0 ||
		    dev != a->kdev || ino != a->kino)
			goto out;
		*file_offset = pos;
	} else {
		/* kmsg sequence numbers restart at each boot. */
		if (strcmp(kind, "kmsg") || !boot || strcmp(boot, a->cfg.boot_id) != 0 ||
		    ag_json_u64(doc, "seq", &pos) < 0)
			goto out;
		a->kmsg_resume_seq = pos;
		a->kmsg_resume = 1;
	}
	json_t *em = json_object_get(doc, "emitted");
	size_t ne = json_is_array(em) ? json_array_size(em) : 0;
	if (ne > AG_RECENT_IDS)
		ne = AG_RECENT_IDS;
	a->skip = xcalloc(ne ? ne : 1, sizeof(*a->skip));
	for (size_t i = 0; i < ne; i++) {
		const char *id = json_string_value(json_array_get(em, i));
		if (id && strlen(id) == AGENT_ID_LEN - 1)
			memcpy(a->skip[a->nskip++], id, AGENT_ID_LEN);
	}
	log_info("agent kernel cursor resumed node=%s source=%s pos=%" PRIu64 " emitted=%zu",
		 a->cfg.node, a->cfg.kernel_log, pos, a->nskip);
out:
	json_decref(doc);
	buf_release(&b);
	free(path);
}

/* ------------------------------------------------------------------ kernel reading */

static void ag_ring_push(struct agent *a, uint64_t pos, const char *line, size_t len)
{
	size_t idx;
	if (a->ring_n < AGENT_CURSOR_BACKUP) {
		idx = (a->ring_head + a->ring_n) % AGENT_CURSOR_BACKUP;
		a->ring_n++;
	} else {
		idx = a->ring_head;
		a->ring_head = (a->ring_head + 1) % AGENT_CURSOR_BACKUP;
	}
	struct ag_line *l = &a->ring[idx];
	l->pos = pos;
	size_t n = len < sizeof(l->text) - 1 ? len : sizeof(l->text) - 1;
	memcpy(l->text, line, n);
	l->text[n] = '\0';
	ag_chomp(l->text, strlen(l->text));
}

/* The pos of the line an event's raw first line came from: the newest ring line that raw is
 * a prefix of (raw is the first line, truncated); the current line when none matches. */
static uint64_t ag_first_line_pos(struct agent *a, const char *raw, uint64_t cur)
{
	char r[KERNLOG_RAW_LEN];
	snprintf(r, sizeof(r), "%s", raw);
	size_t rl = ag_chomp(r, strlen(r));
	if (rl == 0)
		return cur;
	for (size_t k = a->ring_n; k-- > 0;) {
		const struct ag_line *l = &a->ring[(a->ring_head + k) % AGENT_CURSOR_BACKUP];
		if (strncmp(l->text, r, rl) == 0)
			return l->pos;
	}
	return cur;
}

static int ag_skip_id(struct agent *a, const char *id)
{
	for (size_t i = 0; i < a->nskip; i++)
		if (strcmp(a->skip[i], id) == 0) {
			memmove(a->skip[i], a->skip[i + 1], (a->nskip - i - 1) * AGENT_ID_LEN);
			a->nskip--;
			return 1;
		}
	return 0;
}

static void ag_remember(struct agent *a, uint64_t pos, const char *id)
{
	if (a->nrecent == AG_RECENT_IDS) {
		memmove(&a->recent[0], &a->recent[1], (AG_RECENT_IDS - 1) * sizeof(a->recent[0]));
		a->nrecent--;
	}
	a->recent[a->nrecent].pos = pos;
	memcpy(a->recent[a->nrecent].id, id, AGENT_ID_LEN);
	a->nrecent++;
}

/* Takes the parser's completed events; cur = pos of the line just fed (or of the last one for
 * a flush). Puts a report when the batch is full. */
static int ag_take_kernel_events(struct agent *a, const struct kernlog_event *kev, int n,
				 uint64_t cur)
{
	for (int i = 0; i < n; i++) {
		const struct kernlog_event *k = &kev[i];
		char id[AGENT_ID_LEN];
		uint64_t first;
		if (a->ksrc == KSRC_KMSG) {
			first = k->has_seq ? k->seq : cur;
			agent_id_kmsg(a->cfg.boot_id, first, id);
		} else {
			first = ag_first_line_pos(a, k->raw, cur);
			agent_id_file_line(a->cfg.boot_id, a->kdev, a->kino, first, k->raw, id);
		}
		ag_remember(a, first, id);
		if (ag_skip_id(a, id)) {
			a->st.skipped_on_resume++;
			continue;
		}
		if (a->nev >= AGENT_MAX_REPORT_EVENTS) {
			int rc = ag_put_report(a);
			if (rc < 0)
				return rc;
		}
		struct ag_event *e = ag_new_event(a);
		memcpy(e->id, id, sizeof(id));
		snprintf(e->source, sizeof(e->source), "kernel");
		snprintf(e->code, sizeof(e->code), "%s", k->code);
		e->gpu_index = k->gpu_index;
		snprintf(e->bus, sizeof(e->bus), "%s", k->pci_bus_id);
		e->pid = k->pid;
		snprintf(e->process, sizeof(e->process), "%s", k->process);
		e->time_ms = k->time_ms > 0 ? k->time_ms : ag_now(a);
		snprintf(e->message, sizeof(e->message), "%s", k->message);
		snprintf(e->raw, sizeof(e->raw), "%s", k->raw);
		/* The bound counts events not yet put: put them as soon as they would fill the
		 * outbox, so reading stops right here (the caller checks outbox_full). */
		if (a->ob.nevents + a->nev >= a->ob.max_events) {
			int rc = ag_put_report(a);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* Opens the kernel source and positions it from the cursor. 0, or <0 with the detector set
 * dead (ProbeFailed). */
static int ag_kernel_open(struct agent *a)
{
	if (a->kfd >= 0)
		return 0;
	const char *p = a->cfg.kernel_log;
	int kmsg = strcmp(p, "/dev/kmsg") == 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC | (kmsg ? O_NONBLOCK : 0));
	if (fd < 0) {
		ag_set(a, AGENT_DET_KERNEL, 0, "unknown", "ProbeFailed", "open %s: %s", p,
		       strerror(errno));
		return FP_EIO;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		ag_set(a, AGENT_DET_KERNEL, 0, "unknown", "ProbeFailed", "stat %s: %s", p,
		       strerror(errno));
		return FP_EIO;
	}
	a->kfd = fd;
	a->ksrc = kmsg ? KSRC_KMSG : KSRC_FILE;
	a->kdev = (uint64_t)st.st_dev;
	a->kino = (uint64_t)st.st_ino;
	a->ring_n = a->ring_head = 0;
	a->nrecent = 0;
	free(a->skip);
	a->skip = NULL;
	a->nskip = 0;
	uint64_t off = 0;
	ag_load_cursor(a, &off);
	if (a->ksrc == KSRC_FILE) {
		if (S_ISREG(st.st_mode) && off > (uint64_t)st.st_size) {
			log_warn("agent kernel log shorter than its cursor, reading from the start "
				 "path=%s size=%jd offset=%" PRIu64, p, (intmax_t)st.st_size, off);
			off = 0;
		}
		a->kpos = off;
	} else {
		a->kpos = 0;
		a->kmsg_have_seq = 0;
	}
	kernlog_parser_free(a->kp);
	a->kp = kernlog_parser_new(ag_now(a));
	ag_set(a, AGENT_DET_KERNEL, 1, "ok", NULL, "%s", "");
	return 0;
}

static void ag_kernel_close(struct agent *a)
{
	if (a->kfd >= 0)
		close(a->kfd);
	a->kfd = -1;
}

/* One /dev/kmsg record into line (NUL-terminated, the dictionary lines after the first '\n'
 * dropped). Returns its length, 0 at the end (EAGAIN), -1 on an error (logged). EPIPE (records
 * overwritten before we read them) is logged and reading goes on. */
static ssize_t ag_kmsg_record(struct agent *a, char *line, size_t cap)
{
	for (;;) {
		ssize_t n = read(a->kfd, line, cap - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE) {
			log_warn("agent /dev/kmsg records were overwritten before they were read "
				 "node=%s", a->cfg.node);
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0) {
			ag_set(a, AGENT_DET_KERNEL, 0, "unknown", "ProbeFailed", "read /dev/kmsg: %s",
			       strerror(errno));
			return -1;
		}
		if (n == 0)
			return 0;
		line[n] = '\0';
		char *nl = memchr(line, '\n', (size_t)n);
		if (nl) {
			*nl = '\0';
			n = nl - line;
		}
		return n;
	}
}

/* The sequence number of a "prio,seq,usec,flags;msg" record, or -1. */
static int ag_kmsg_seq(const char *rec, uint64_t *seq)
{
	const char *c = strchr(rec, ',');
	if (!c)
		return -1;
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(c + 1, &end, 10);
	if (errno || end == c + 1 || *end != ',')
		return -1;
	*seq = v;
	return 0;
}

/* Feeds one line (record) at pos; handles events. */
static int ag_feed(struct agent *a, const char *line, size_t len, uint64_t pos)
{
	struct kernlog_event kev[2];
	ag_ring_push(a, pos, line, len);
	int n = kernlog_feed(a->kp, line, len, kev);
	a->st.kernel_lines++;
	return ag_take_kernel_events(a, kev, n, pos);
}

int agent_read_kernel(struct agent *a, int final)
{
	if (!a->configured[AGENT_DET_KERNEL])
		return 0;
	if (a->kfd >= 0 && a->ksrc == KSRC_FILE) {
		struct stat now_st, fd_st;
		if (fstat(a->kfd, &fd_st) == 0 && S_ISREG(fd_st.st_mode) &&
		    (uint64_t)fd_st.st_size < a->kpos) {
			log_warn("agent kernel log truncated, reading from the start path=%s",
				 a->cfg.kernel_log);
			a->kpos = 0;
			a->ring_n = a->ring_head = 0;
			a->nrecent = 0;
		}
		/* Rotated (the path names another file now): finish the old one first. */
		if (a->keof_quiet && stat(a->cfg.kernel_log, &now_st) == 0 &&
		    ((uint64_t)now_st.st_dev != a->kdev || (uint64_t)now_st.st_ino != a->kino)) {
			log_info("agent kernel log rotated, following the new file path=%s",
				 a->cfg.kernel_log);
			ag_kernel_close(a);
		}
	}
	if (ag_kernel_open(a) < 0)
		return 0; /* reported as a dead detector; retried next pass */
	if (outbox_full(&a->ob)) {
		if (!a->kpaused)
			log_warn("agent outbox full, kernel log reading paused node=%s events=%zu "
				 "max=%zu", a->cfg.node, a->ob.nevents, a->ob.max_events);
		a->kpaused = 1;
		ag_set(a, AGENT_DET_KERNEL, 1, "ok", NULL,
		       "outbox full (%zu events buffered, max %zu): kernel log reading paused",
		       a->ob.nevents, a->ob.max_events);
		return 0;
	}
	if (a->kpaused) {
		log_info("agent outbox has room again, kernel log reading resumed node=%s",
			 a->cfg.node);
		a->kpaused = 0;
		ag_set(a, AGENT_DET_KERNEL, 1, "ok", NULL, "%s", "");
	}
	int rc = 0;
	size_t lines = 0;
	int progressed = 0, at_end = 0;
	char *chunk = xmalloc(AG_CHUNK + 1);
	for (;;) {
		if (a->cfg.max_lines_per_pass && lines >= a->cfg.max_lines_per_pass)
			break;
		if (outbox_full(&a->ob))
			break;
		if (a->ksrc == KSRC_KMSG) {
			ssize_t n = ag_kmsg_record(a, chunk, AG_CHUNK + 1);
			if (n <= 0) {
				at_end = 1;
				break;
			}
			uint64_t seq;
			if (ag_kmsg_seq(chunk, &seq) < 0)
				continue;
			if (a->kmsg_resume && seq < a->kmsg_resume_seq)
				continue;
			a->kpos = seq;
			a->kmsg_have_seq = 1;
			progressed = 1;
			lines++;
			if ((rc = ag_feed(a, chunk, (size_t)n, seq)) < 0)
				break;
			continue;
		}
		ssize_t n = pread(a->kfd, chunk, AG_CHUNK, (off_t)a->kpos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ag_set(a, AGENT_DET_KERNEL, 0, "unknown", "ProbeFailed", "read %s: %s",
			       a->cfg.kernel_log, strerror(errno));
			break;
		}
		if (n == 0) {
			at_end = 1;
			break;
		}
		/* Whole lines of this chunk; a chunk with no newline is one (cut) line when it is
		 * full, or an unfinished line left for later (fed now only when final). */
		size_t off = 0;
		while (off < (size_t)n) {
			if (a->cfg.max_lines_per_pass && lines >= a->cfg.max_lines_per_pass)
				break;
			char *nl = memchr(chunk + off, '\n', (size_t)n - off);
			size_t len;
			if (nl) {
				len = (size_t)(nl - (chunk + off)) + 1;
			} else if (off == 0 && (size_t)n == AG_CHUNK) {
				len = AG_CHUNK;
			} else if (final && off == 0) {
				len = (size_t)n - off; /* the last line, without its newline */
			} else {
				break;
			}
			uint64_t pos = a->kpos;
			a->kpos += len;
			progressed = 1;
			lines++;
			if ((rc = ag_feed(a, chunk + off, len, pos)) < 0)
				break;
			off += len;
			if (outbox_full(&a->ob))
				break;
		}
		if (rc < 0)
			break;
		if (off == 0) {
			at_end = 1;
			break;
		}
	}
	free(chunk);
	if (rc < 0)
		return rc;
	/* End of input: complete a pending multi-line record when told to, or when the log has
	 * been quiet for a whole pass (a record's lines are written together). */
	if (at_end && (final || (!progressed && a->keof_quiet))) {
		struct kernlog_event kev[2];
		int n = kernlog_flush(a->kp, kev);
		uint64_t last = a->ring_n
					? a->ring[(a->ring_head + a->ring_n - 1) % AGENT_CURSOR_BACKUP].pos
					: a->kpos;
		if (n > 0 && (rc = ag_take_kernel_events(a, kev, n, last)) < 0)
			return rc;
	}
	a->keof_quiet = at_end && !progressed;
	if (a->nev > 0 && (rc = ag_put_report(a)) < 0)
		return rc;
	if (progressed || a->cursor_dirty || ag_resume_pos(a) != a->cursor_written_pos)
		rc = ag_write_cursor(a);
	return rc;
}

/* ------------------------------------------------------------------ tool detectors */

/* Reads a whole file of at most max bytes. 0, or <0 with why in err. */
static int ag_read_file(const char *path, size_t max, struct buf *b, char *err, size_t errlen)
{
	buf_reset(b);
	b->max = max + 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fp_errf(FP_EIO, err, errlen, "open %s: %s", path, strerror(errno));
	char chunk[16384];
	int rc = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fp_errf(FP_EIO, err, errlen, "read %s: %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (b->len + (size_t)n > max) {
			rc = fp_errf(FP_ETOOBIG, err, errlen, "%s is larger than %zu bytes", path,
				     max);
			break;
		}
		buf_append(b, chunk, (size_t)n);
	}
	close(fd);
	return rc;
}

/* Gets a tool's output: from the file, or by running argv with the probe timeout. Returns 0
 * with the bytes in b; otherwise sets the detector (ProbeTimeout, ProbeFailed, Unparseable)
 * and returns <0. A timeout also yields a probe_timeout finding in *f (returns 1 then). */
static int ag_tool_output(struct agent *a, enum agent_det d, int is_auto, const char *path,
			  char *const argv[], size_t max, struct buf *b, struct agent_finding *f)
{
	char err[512];
	if (!is_auto) {
		int rc = ag_read_file(path, max, b, err, sizeof(err));
		if (rc == FP_ETOOBIG) {
			ag_set(a, d, 0, "unknown", "Unparseable", "%s", err);
			return rc;
		}
		if (rc < 0) {
			ag_set(a, d, 0, "unknown", "ProbeFailed", "%s", err);
			return rc;
		}
		a->timeout_since[d] = 0;
		return 0;
	}
	struct probe_result res;
	int64_t start = ag_now(a);
	int rc = probe_run(argv, a->cfg.probe_timeout_s * 1000, max, &res, err, sizeof(err));
	if (rc < 0) {
		ag_set(a, d, 0, "unknown", "ProbeFailed", "%s", err);
		probe_result_release(&res);
		return rc;
	}
	if (res.timed_out) {
		ag_set(a, d, 0, "unknown", "ProbeTimeout", "%s did not answer in %ld s", argv[0],
		       a->cfg.probe_timeout_s);
		log_warn("agent probe timed out node=%s detector=%s timeout_s=%ld", a->cfg.node,
			 det_names[d], a->cfg.probe_timeout_s);
		if (!a->timeout_since[d])
			a->timeout_since[d] = start;
		memset(f, 0, sizeof(*f));
		snprintf(f->source, sizeof(f->source), "agent");
		snprintf(f->code, sizeof(f->code), "probe_timeout:%s", det_names[d]);
		f->gpu_index = -1;
		snprintf(f->message, sizeof(f->message), "%s did not answer in %ld s", argv[0],
			 a->cfg.probe_timeout_s);
		/* One event per episode of timeouts (a level): the episode's start is the key. */
		snprintf(f->key, sizeof(f->key), "since=%" PRId64, a->timeout_since[d]);
		probe_result_release(&res);
		return 1;
	}
	a->timeout_since[d] = 0;
	if (res.truncated) {
		ag_set(a, d, 0, "unknown", "Unparseable", "%s wrote more than %zu bytes", argv[0],
		       max);
	} else if (!res.exited || res.exit_status != 0) {
		if (res.exited)
			ag_set(a, d, 0, "unknown", "ProbeFailed", "%s exited with status %d", argv[0],
			       res.exit_status);
		else
			ag_set(a, d, 0, "unknown", "ProbeFailed", "%s killed by signal %d", argv[0],
			       res.signaled);
	} else {
		buf_reset(b);
		b->max = max + 1;
		if (res.out.len)
			buf_append(b, res.out.data, res.out.len);
		probe_result_release(&res);
		return 0;
	}
	probe_result_release(&res);
	return FP_EIO;
}

static int ag_sent_before(struct agent *a, const char *id)
{
	for (size_t i = 0; i < a->nsent; i++)
		if (strcmp(a->sent[i], id) == 0)
			return 1;
	if (a->nsent == AG_SENT_FINDINGS)
		a->nsent = 0; /* forget all: at worst the server sees duplicates */
	memcpy(a->sent[a->nsent++], id, AGENT_ID_LEN);
	return 0;
}

/* Turns findings into events (skipping those already put this run). */
static int ag_take_findings(struct agent *a, const struct agent_finding *f, size_t n,
			    const char *source)
{
	for (size_t i = 0; i < n; i++) {
		char id[AGENT_ID_LEN];
		agent_id_finding(a->cfg.boot_id, &f[i], id);
		if (ag_sent_before(a, id))
			continue;
		if (a->nev >= AGENT_MAX_REPORT_EVENTS) {
			int rc = ag_put_report(a);
			if (rc < 0)
				return rc;
		}
		struct ag_event *e = ag_new_event(a);
		memcpy(e->id, id, sizeof(id));
		snprintf(e->source, sizeof(e->source), "%s",
			 strcmp(f[i].source, "agent") == 0 ? "agent" : source);
		snprintf(e->code, sizeof(e->code), "%s", f[i].code);
		e->gpu_index = f[i].gpu_index;
		snprintf(e->bus, sizeof(e->bus), "%s", f[i].pci_bus_id);
		e->time_ms = ag_now(a);
		snprintf(e->message, sizeof(e->message), "%s", f[i].message);
	}
	return 0;
}

/* Sets a parsed detector's status from its findings. */
static void ag_set_result(struct agent *a, enum agent_det d, size_t nfind, int unknown)
{
	if (nfind)
		ag_set(a, d, 1, "unhealthy", NULL, "%zu finding%s", nfind, nfind == 1 ? "" : "s");
	else if (unknown)
		ag_set(a, d, 1, "unknown", NULL, "the output cannot prove health (values unknown "
		       "or truncated)");
	else
		ag_set(a, d, 1, "ok", NULL, "%s", "");
}

static void ag_want_expected(struct agent *a)
{
	if (a->expected_gpus > 0 || !a->tp.get_node)
		return;
	json_t *doc = NULL;
	if (a->tp.get_node(a->tp.arg, &doc) == 0 && doc) {
		json_int_t n = json_integer_value(jsonx_path(doc, "spec.gpus.count"));
		if (n > 0 && n <= NVSMI_MAX_GPUS)
			a->expected_gpus = (int)n;
	}
	json_decref(doc);
}

static int ag_probe_nvsmi(struct agent *a, struct agent_finding *f, size_t *nf)
{
	if (!a->configured[AGENT_DET_NVSMI])
		return 0;
	struct buf b;
	buf_init(&b, NVSMI_MAX_INPUT + 1);
	char *argv[] = {a->nvsmi_path, "-q", "-x", NULL};
	struct agent_finding tf;
	int rc = ag_tool_output(a, AGENT_DET_NVSMI, a->nvsmi_auto, a->cfg.nvidia_smi, argv,
				NVSMI_MAX_INPUT, &b, &tf);
	if (rc == 1)
		f[(*nf)++] = tf;
	if (rc != 0) {
		buf_release(&b);
		return 0;
	}
	struct nvsmi_report *r = xcalloc(1, sizeof(*r));
	char err[512];
	if (nvsmi_parse(b.data ? b.data : "", b.len, r, err, sizeof(err)) < 0) {
		ag_set(a, AGENT_DET_NVSMI, 0, "unknown", "Unparseable", "%s", err);
	} else {
		int unknown = 0;
		size_t n = nvsmi_findings(r, a->expected_gpus, f + *nf, AG_MAX_FINDINGS / 4 - 1,
					  &unknown);
		*nf += n;
		ag_set_result(a, AGENT_DET_NVSMI, n, unknown);
	}
	free(r);
	buf_release(&b);
	return 0;
}

static void ag_probe_nvml(struct agent *a, struct agent_finding *f, size_t *nf)
{
	if (!a->configured[AGENT_DET_NVML] || !a->nvml)
		return;
	struct nvsmi_report *r = xcalloc(1, sizeof(*r));
	char err[512];
	if (nvml_query(a->nvml, r, err, sizeof(err)) < 0) {
		ag_set(a, AGENT_DET_NVML, 0, "unknown", "ProbeFailed", "%s", err);
	} else {
		int unknown = 0;
		size_t n = nvsmi_findings(r, a->expected_gpus, f + *nf, AG_MAX_FINDINGS / 4, &unknown);
		*nf += n;
		ag_set_result(a, AGENT_DET_NVML, n, unknown);
	}
	free(r);
}

static void ag_probe_dcgm(struct agent *a, struct agent_finding *f, size_t *nf)
{
	if (!a->configured[AGENT_DET_DCGM])
		return;
	struct buf b;
	buf_init(&b, DCGM_MAX_INPUT + 1);
	char *argv[] = {a->dcgmi_path, "health", "-c", NULL};
	struct agent_finding tf;
	int rc = ag_tool_output(a, AGENT_DET_DCGM, a->dcgmi_auto, a->cfg.dcgmi, argv,
				DCGM_MAX_INPUT, &b, &tf);
	if (rc == 1)
		f[(*nf)++] = tf;
	if (rc == 0) {
		int unknown = 0;
		const char *s = b.data ? b.data : "";
		/* A file may hold either command's output; `dcgmi diag` prints a "Diagnostic"
		 * table head (DCGM user guide, "Diagnostics"). */
		int diag = strstr(s, "| Diagnostic") != NULL;
		size_t n = diag ? dcgm_diag_findings(s, b.len, f + *nf, AG_MAX_FINDINGS / 4 - 1,
						     &unknown)
				: dcgm_health_findings(s, b.len, f + *nf, AG_MAX_FINDINGS / 4 - 1,
						       &unknown);
		*nf += n;
		if (unknown && n == 0)
			ag_set(a, AGENT_DET_DCGM, 0, "unknown", "Unparseable",
			       "the output is not a dcgmi %s report", diag ? "diag" : "health");
		else
			ag_set_result(a, AGENT_DET_DCGM, n, unknown);
	}
	buf_release(&b);
}

static void ag_probe_ibstat(struct agent *a, struct agent_finding *f, size_t *nf)
{
	if (!a->configured[AGENT_DET_IBSTAT])
		return;
	struct buf b;
	buf_init(&b, IBSTAT_MAX_INPUT + 1);
	char *argv[] = {a->ibstat_path, NULL};
	struct agent_finding tf;
	int rc = ag_tool_output(a, AGENT_DET_IBSTAT, a->ibstat_auto, a->cfg.ibstat, argv,
				IBSTAT_MAX_INPUT, &b, &tf);
	if (rc == 1)
		f[(*nf)++] = tf;
	if (rc == 0) {
		struct ibstat_report *r = xcalloc(1, sizeof(*r));
		char err[512];
		if (ibstat_parse(b.data ? b.data : "", b.len, r, err, sizeof(err)) < 0) {
			ag_set(a, AGENT_DET_IBSTAT, 0, "unknown", "Unparseable", "%s", err);
		} else {
			int unknown = 0;
			size_t n = ibstat_findings(r, f + *nf, AG_MAX_FINDINGS / 4 - 1, &unknown);
			*nf += n;
			ag_set_result(a, AGENT_DET_IBSTAT, n, unknown);
		}
		free(r);
	}
	buf_release(&b);
}

int agent_probe_round(struct agent *a)
{
	struct agent_finding *f = xcalloc(AG_MAX_FINDINGS, sizeof(*f));
	size_t nf = 0, mark;
	int rc = 0;
	if (a->configured[AGENT_DET_NVSMI] || a->configured[AGENT_DET_NVML])
		ag_want_expected(a);
	/* Each detector's findings carry its own source name. */
	ag_probe_nvsmi(a, f, &nf);
	if ((rc = ag_take_findings(a, f, nf, "nvidia-smi")) < 0)
		goto out;
	mark = nf;
	ag_probe_nvml(a, f, &nf);
	if ((rc = ag_take_findings(a, f + mark, nf - mark, "nvml")) < 0)
		goto out;
	mark = nf;
	ag_probe_dcgm(a, f, &nf);
	if ((rc = ag_take_findings(a, f + mark, nf - mark, "dcgm")) < 0)
		goto out;
	mark = nf;
	ag_probe_ibstat(a, f, &nf);
	if ((rc = ag_take_findings(a, f + mark, nf - mark, "ibstat")) < 0)
		goto out;
	/* A heartbeat only when nothing is waiting: pending reports carry the detectors too, and
	 * heartbeats must not pile up while the API is down. */
	if (a->nev > 0 || a->ob.npending == 0)
		rc = ag_put_report(a);
out:
	free(f);
	return rc;
}

/* ------------------------------------------------------------------ sending */

static void ag_log_answer(struct agent *a, uint64_t seq, const struct buf *ans)
{
	json_t *doc = NULL;
	char err[128];
	if (ans->len && jsonx_parse(ans->data, ans->len, &doc, err, sizeof(err)) == 0) {
		json_int_t acc = json_integer_value(json_object_get(doc, "accepted"));
		json_int_t dup = json_integer_value(json_object_get(doc, "duplicates"));
		a->st.accepted += acc > 0 ? (size_t)acc : 0;
		a->st.duplicates += dup > 0 ? (size_t)dup : 0;
		log_info("agent report accepted node=%s seq=%" PRIu64 " accepted=%" JSON_INTEGER_FORMAT
			 " duplicates=%" JSON_INTEGER_FORMAT, a->cfg.node, seq, acc, dup);
	}
	json_decref(doc);
}

int agent_flush(struct agent *a)
{
	struct buf body, ans;
	buf_init(&body, OUTBOX_MAX_REPORT);
	buf_init(&ans, AG_ANSWER_MAX);
	int rc = 0;
	while (a->ob.npending > 0) {
		uint64_t seq;
		char err[512];
		if ((rc = outbox_peek(&a->ob, &seq, &body, err, sizeof(err))) < 0) {
			log_error("agent outbox read failed node=%s err=\"%s\"", a->cfg.node, err);
			rc = FP_EIO;
			break;
		}
		long status = 0;
		buf_reset(&ans);
		if (a->tp.report(a->tp.arg, body.data ? body.data : "", body.len, &status, &ans) < 0) {
			rc = FP_EIO;
			break;
		}
		if (status >= 200 && status < 300) {
			ag_log_answer(a, seq, &ans);
			if ((rc = outbox_remove(&a->ob, seq, err, sizeof(err))) < 0) {
				log_error("agent outbox remove failed node=%s err=\"%s\"", a->cfg.node,
					  err);
				rc = FP_EIO;
				break;
			}
			a->st.reports_sent++;
			continue;
		}
		if (status == 409 || status == 429 || status >= 500 || status == 401 ||
		    status == 403 || status == 404 || status < 400) {
			log_warn("agent report kept for a retry node=%s seq=%" PRIu64 " status=%ld "
				 "answer=\"%.300s\"", a->cfg.node, seq, status,
				 ans.data ? ans.data : "");
			rc = FP_EAGAIN;
			break;
		}
		log_error("agent report rejected node=%s seq=%" PRIu64 " status=%ld answer=\"%.300s\" "
			  "kept=%s/%020" PRIu64 ".json", a->cfg.node, seq, status,
			  ans.data ? ans.data : "", a->ob.rejected_dir, seq);
		if ((rc = outbox_reject(&a->ob, seq, status, ans.data, err, sizeof(err))) < 0) {
			log_error("agent outbox reject failed node=%s err=\"%s\"", a->cfg.node, err);
			rc = FP_EIO;
			break;
		}
		a->st.reports_rejected++;
	}
	buf_release(&body);
	buf_release(&ans);
	return rc;
}

/* ------------------------------------------------------------------ gpu_reset */

static char *ag_reset_path(struct agent *a)
{
	return xasprintf("%s/gpu-reset.last", a->cfg.state_dir);
}

static void ag_reset_load(struct agent *a)
{
	char *p = ag_reset_path(a);
	FILE *f = fopen(p, "re");
	free(p);
	if (!f)
		return;
	if (fgets(a->reset_done_op, sizeof(a->reset_done_op), f))
		a->reset_done_op[strcspn(a->reset_done_op, "\r\n")] = '\0';
	fclose(f);
}

/* A PCI bus id as the API writes it ("0000:3b:00.0"): hex digits, ':' and '.', at most 23. */
static int ag_bus_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n >= FINDING_BUS_ID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdefABCDEF:.", s[i]))
			return 0;
	return 1;
}

/* Runs the reset; fills the pending outcome. */
static void ag_run_reset(struct agent *a, const char *op, const char *gpu)
{
	snprintf(a->reset_pending_op, sizeof(a->reset_pending_op), "%s", op);
	a->reset_pending_ok = 0;
	if (!ag_bus_id_ok(gpu)) {
		snprintf(a->reset_pending_msg, sizeof(a->reset_pending_msg),
			 "status.remediation.gpu is not a PCI bus id: the agent reset nothing");
		return;
	}
	char tool[4096];
	if (a->nvsmi_auto && a->configured[AGENT_DET_NVSMI])
		snprintf(tool, sizeof(tool), "%s", a->nvsmi_path);
	else if (probe_which("nvidia-smi", tool, sizeof(tool)) < 0) {
		snprintf(a->reset_pending_msg, sizeof(a->reset_pending_msg),
			 "nvidia-smi not found in PATH: the agent reset nothing");
		return;
	}
	char *argv[] = {tool, "--gpu-reset", "-i", (char *)gpu, NULL};
	struct probe_result r;
	char err[512];
	log_info("agent gpu reset node=%s operation=%s gpu=%s", a->cfg.node, op, gpu);
	int rc = probe_run(argv, AGENT_GPU_RESET_TIMEOUT_S * 1000L, 64 << 10, &r, err, sizeof(err));
	char first[256] = "";
	if (rc == 0 && r.out.len) {
		size_t n = strcspn(r.out.data, "\n");
		snprintf(first, sizeof(first), ": %.*s", (int)(n < 200 ? n : 200), r.out.data);
	}
	if (rc < 0)
		snprintf(a->reset_pending_msg, sizeof(a->reset_pending_msg), "%s", err);
	else if (r.timed_out)
		snprintf(a->reset_pending_msg, sizeof(a->reset_pending_msg),
			 "nvidia-smi --gpu-reset -i %s did not finish in %d s", gpu,
			 AGENT_GPU_RESET_TIMEOUT_S);
	else if (r.exited && r.exit_status == 0) {
		a->reset_pending_ok = 1;
		snprintf(a->reset_pending_msg, sizeof(a->reset_pending_msg),
			 "nvidia-smi --gpu-reset -i %s succeeded%s", gpu, first);
	} else if (r.exited)
		snprintf(a->reset_pending_msg, sizeof(a->reset_pending_msg),
			 "nvidia-smi --gpu-reset -i %s exited with status %d%s", gpu, r.exit_status,
			 first);
	else
		snprintf(a->reset_pending_msg, sizeof(a->reset_pending_msg),
			 "nvidia-smi --gpu-reset -i %s killed by signal %d", gpu, r.signaled);
	probe_result_release(&r);
}

int agent_gpu_reset_check(struct agent *a)
{
	if (!a->tp.get_node || !a->tp.remediated)
		return 0;
	json_t *doc = NULL;
	if (a->tp.get_node(a->tp.arg, &doc) < 0 || !doc)
		return 0;
	int reported = 0;
	const char *phase = jsonx_str(doc, "status.phase");
	const char *rung = jsonx_str(doc, "status.remediation.rung");
	const char *gpu = jsonx_str(doc, "status.remediation.gpu");
	const char *op = jsonx_str(doc, "status.operation");
	if (!phase || strcmp(phase, "repairing") != 0 || !rung || strcmp(rung, "gpu_reset") != 0 ||
	    !op || !*op || strlen(op) >= sizeof(a->reset_done_op) ||
	    strcmp(op, a->reset_done_op) == 0)
		goto out;
	if (strcmp(op, a->reset_pending_op) != 0)
		ag_run_reset(a, op, gpu);
	long status = 0;
	if (a->tp.remediated(a->tp.arg, op, a->reset_pending_ok, a->reset_pending_msg, &status) < 0)
		goto out; /* unreachable: report the same outcome next time */
	log_info("agent gpu reset reported node=%s operation=%s succeeded=%d status=%ld", a->cfg.node,
		 op, a->reset_pending_ok, status);
	snprintf(a->reset_done_op, sizeof(a->reset_done_op), "%s", op);
	a->reset_pending_op[0] = '\0';
	char *p = ag_reset_path(a);
	char err[512];
	char line[80];
	snprintf(line, sizeof(line), "%s\n", op);
	if (outbox_write_durable(p, line, strlen(line), err, sizeof(err)) < 0)
		log_warn("agent gpu reset state not saved node=%s err=\"%s\"", a->cfg.node, err);
	free(p);
	reported = 1;
out:
	json_decref(doc);
	return reported;
}

/* ------------------------------------------------------------------ lifecycle */

static int ag_resolve(struct agent *a, enum agent_det d, const char *flag, const char *tool,
		      char *path, size_t pathlen, int *is_auto)
{
	if (!flag) {
		ag_set(a, d, 0, "unknown", "NotConfigured", "no --%s given",
		       d == AGENT_DET_DCGM ? "dcgmi" : det_names[d]);
		return 0;
	}
	if (strcmp(flag, "auto") == 0) {
		*is_auto = 1;
		if (probe_which(tool, path, pathlen) < 0) {
			ag_set(a, d, 0, "unknown", "NotConfigured", "%s not found in PATH", tool);
			return 0;
		}
	} else {
		snprintf(path, pathlen, "%s", flag);
	}
	a->configured[d] = 1;
	ag_set(a, d, 1, "unknown", NULL, "not probed yet");
	return 0;
}

static int ag_check_cfg(const struct agent_config *c, char *err, size_t errlen)
{
	if (!c->node || !*c->node)
		return fp_errf(FP_EINVAL, err, errlen, "node: required");
	if (!c->boot_id || !*c->boot_id)
		return fp_errf(FP_EINVAL, err, errlen, "boot id: required");
	if (strlen(c->boot_id) > 128)
		return fp_errf(FP_EINVAL, err, errlen, "boot id: longer than 128 bytes");
	if (!c->state_dir || !*c->state_dir)
		return fp_errf(FP_EINVAL, err, errlen, "state dir: required");
	if (c->interval_s < 1 || c->interval_s > 86400)
		return fp_errf(FP_EINVAL, err, errlen, "interval: %ld s out of 1..86400",
			       c->interval_s);
	if (c->probe_timeout_s < 1 || c->probe_timeout_s > 3600)
		return fp_errf(FP_EINVAL, err, errlen, "probe timeout: %ld s out of 1..3600",
			       c->probe_timeout_s);
	if (c->max_buffer < 1 || c->max_buffer > 10000000)
		return fp_errf(FP_EINVAL, err, errlen, "max buffer: %zu out of 1..10000000 events",
			       c->max_buffer);
	if (c->expected_gpus < 0 || c->expected_gpus > NVSMI_MAX_GPUS)
		return fp_errf(FP_EINVAL, err, errlen, "expected gpus: %d out of 0..%d",
			       c->expected_gpus, NVSMI_MAX_GPUS);
	if (c->job && strlen(c->job) > 256)
		return fp_errf(FP_EINVAL, err, errlen, "job: longer than 256 bytes");
	if (!c->node || strlen(c->node) > 253)
		return fp_errf(FP_EINVAL, err, errlen, "node: longer than 253 bytes");
	return 0;
}

int agent_new(const struct agent_config *cfg, const struct agent_transport *tp,
	      struct agent **out, char *err, size_t errlen)
{
	*out = NULL;
	int rc = ag_check_cfg(cfg, err, errlen);
	if (rc < 0)
		return rc;
	if (!tp || !tp->report)
		return fp_errf(FP_EINVAL, err, errlen, "transport: report function required");
	if (sodium_init() < 0)
		return fp_errf(FP_EIO, err, errlen, "libsodium failed to initialise");
	struct agent *a = xcalloc(1, sizeof(*a));
	a->cfg = *cfg;
	a->tp = *tp;
	a->kfd = -1;
	a->expected_gpus = cfg->expected_gpus;
	a->ev = xcalloc(AGENT_MAX_REPORT_EVENTS, sizeof(*a->ev));
	a->sent = xcalloc(AG_SENT_FINDINGS, sizeof(*a->sent));
	if ((rc = outbox_open(&a->ob, cfg->state_dir, cfg->max_buffer, err, errlen)) < 0) {
		agent_free(a);
		return rc;
	}
	if (cfg->kernel_log && *cfg->kernel_log) {
		a->configured[AGENT_DET_KERNEL] = 1;
		ag_set(a, AGENT_DET_KERNEL, 1, "ok", NULL, "%s", "");
	} else {
		ag_set(a, AGENT_DET_KERNEL, 0, "unknown", "NotConfigured", "no --kernel-log given");
	}
	ag_resolve(a, AGENT_DET_NVSMI, cfg->nvidia_smi, "nvidia-smi", a->nvsmi_path,
		   sizeof(a->nvsmi_path), &a->nvsmi_auto);
	ag_resolve(a, AGENT_DET_DCGM, cfg->dcgmi, "dcgmi", a->dcgmi_path, sizeof(a->dcgmi_path),
		   &a->dcgmi_auto);
	ag_resolve(a, AGENT_DET_IBSTAT, cfg->ibstat, "ibstat", a->ibstat_path,
		   sizeof(a->ibstat_path), &a->ibstat_auto);
	if (!cfg->nvml) {
		ag_set(a, AGENT_DET_NVML, 0, "unknown", "NotConfigured", "no --nvml given");
	} else {
		char nerr[512];
		int nrc = nvml_open(cfg->nvml_lib, &a->nvml, nerr, sizeof(nerr));
		if (nrc == FP_ENOTFOUND) {
			ag_set(a, AGENT_DET_NVML, 0, "unknown", "NotConfigured", "%s", nerr);
		} else if (nrc < 0) {
			a->configured[AGENT_DET_NVML] = 1;
			ag_set(a, AGENT_DET_NVML, 0, "unknown", "ProbeFailed", "%s", nerr);
			log_warn("agent nvml unusable node=%s err=\"%s\"", cfg->node, nerr);
		} else {
			a->configured[AGENT_DET_NVML] = 1;
			ag_set(a, AGENT_DET_NVML, 1, "unknown", NULL, "not probed yet");
		}
	}
	ag_reset_load(a);
	if (a->ob.npending)
		log_info("agent outbox has pending reports node=%s reports=%zu events=%zu",
			 cfg->node, a->ob.npending, a->ob.nevents);
	*out = a;
	return 0;
}

void agent_free(struct agent *a)
{
	if (!a)
		return;
	ag_kernel_close(a);
	kernlog_parser_free(a->kp);
	nvml_close(a->nvml);
	outbox_close(&a->ob);
	free(a->skip);
	free(a->ev);
	free(a->sent);
	free(a);
}

const struct agent_stats *agent_stats(const struct agent *a) { return &a->st; }

const struct agent_det_state *agent_detector(const struct agent *a, enum agent_det d)
{
	return (unsigned)d < AGENT_DET__COUNT ? &a->det[d] : NULL;
}

size_t agent_outbox_events(const struct agent *a) { return a->ob.nevents; }

static int ag_stopped(struct agent *a)
{
	return a->cfg.stop && *a->cfg.stop;
}

static int ag_run_once(struct agent *a)
{
	size_t rejected0 = a->st.reports_rejected;
	int rc = agent_flush(a);
	if (rc == FP_EIO)
		return FP_EIO;
	/* Read the kernel log to its end, sending between passes so the outbox bound only stops
	 * reading when the API cannot take reports. */
	for (;;) {
		size_t lines0 = a->st.kernel_lines;
		if ((rc = agent_read_kernel(a, 1)) < 0)
			return rc;
		rc = agent_flush(a);
		if (rc == FP_EIO)
			return FP_EIO;
		if (ag_stopped(a))
			return FP_EAGAIN;
		if (a->st.kernel_lines == lines0)
			break; /* at the end, or paused by a full outbox the API would not drain */
	}
	if ((rc = agent_probe_round(a)) < 0)
		return rc;
	agent_gpu_reset_check(a);
	rc = agent_flush(a);
	if (rc < 0)
		return rc;
	if (a->kpaused)
		return FP_EAGAIN;
	return a->st.reports_rejected != rejected0 ? FP_EINVAL : 0;
}

static void ag_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int agent_run(struct agent *a)
{
	if (a->cfg.once)
		return ag_run_once(a);
	int64_t next_probe = 0, next_flush = 0;
	long backoff_ms = 1000;
	log_info("agent started node=%s interval_s=%ld kernel=%s", a->cfg.node, a->cfg.interval_s,
		 a->cfg.kernel_log ? a->cfg.kernel_log : "-");
	while (!ag_stopped(a)) {
		int64_t now = ag_now(a);
		agent_read_kernel(a, 0);
		if (now >= next_probe) {
			agent_probe_round(a);
			agent_gpu_reset_check(a);
			next_probe = now + a->cfg.interval_s * 1000;
		}
		if (a->ob.npending && now >= next_flush) {
			int rc = agent_flush(a);
			if (rc < 0) {
				next_flush = now + backoff_ms;
				backoff_ms = backoff_ms * 2 > 30000 ? 30000 : backoff_ms * 2;
			} else {
				next_flush = 0;
				backoff_ms = 1000;
			}
		}
		for (int i = 0; i < 10 && !ag_stopped(a); i++)
			ag_sleep_ms(100);
	}
	log_info("agent stopping node=%s pending_reports=%zu", a->cfg.node, a->ob.npending);
	return 0;
}
