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
#include "core/codec.h"

#include "base/banned.h"

#define AG_CHUNK 65536               /* kernel file read size; a longer line is cut here */
#define AG_RECENT_IDS 64             /* emitted kernel ids remembered for the cursor */
#define AG_MAX_FINDINGS 512
#define AG_MAX_EPISODES 1024         /* finding episodes kept (live, or ended but unsent) */
#define AG_EPOCH_LEN 48
#define AG_NODE_BACKOFF_MAX_MS 30000
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
	int kernel;       /* a kernel event: remembered for the cursor once put */
	uint64_t first;   /* kernel: pos of its first line */
	int ep;           /* a finding: index of its episode; -1 none */
};

/* One finding episode (agent.h): a level seen from `since` until a clean probe no longer shows
 * it or the remediation epoch changes. An ended episode whose event is not yet in the outbox
 * is kept until it is. */
struct ag_episode {
	char code[FINDING_CODE_LEN];
	char bus[FINDING_BUS_ID_LEN];
	char key[64];
	char source[16];
	int gpu_index;
	char message[FINDING_MSG_LEN];
	int64_t since;             /* Unix ms, unique per agent (last_since) */
	char epoch[AG_EPOCH_LEN];  /* the remediation epoch at its start */
	char id[AGENT_ID_LEN];
	unsigned dets;             /* detectors that showed it (1 << enum agent_det) */
	unsigned long round;       /* the last probe round that showed it */
	int sent, ended;
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
	char legacy_boot[160];     /* a cursor without "ids": 2: its boot id (v1 ids); "" none */
	/* The last durable cursor, where reading goes back to after a failed write. */
	uint64_t dur_pos;
	char (*dur_skip)[AGENT_ID_LEN];
	size_t ndur_skip;
	int krotated;              /* the path names another file: finish this one, then switch */
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

	/* finding episodes (findings.state) */
	struct ag_episode *eps;
	size_t neps;
	unsigned long round;
	char epoch[AG_EPOCH_LEN];  /* newest status.remediationHistory[].at, "" none */
	int epoch_known;           /* epoch was read from the node document (now or before) */
	int64_t last_since;

	/* the node document GET: not before node_next_ms after a failure */
	int64_t node_next_ms;
	long node_backoff_ms;

	/* the last local write failure; events found but not in the outbox because of it */
	char local_err[512];
	int local_failed;
	size_t unsent_kernel;
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

void agent_id_file_line(uint64_t dev, uint64_t ino, uint64_t offset, const char *raw,
			char out[AGENT_ID_LEN])
{
	crypto_generichash_state h;
	crypto_generichash_init(&h, NULL, 0, 16);
	ag_hash_str(&h, "file2");
	ag_hash_u64(&h, dev);
	ag_hash_u64(&h, ino);
	ag_hash_u64(&h, offset);
	ag_hash_str(&h, raw);
	ag_hex_id("k", &h, out);
}

void agent_id_file_line_v1(const char *boot_id, uint64_t dev, uint64_t ino, uint64_t offset,
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

void agent_id_finding(const char *boot_id, const struct agent_finding *f, int64_t since,
		      const char *epoch, char out[AGENT_ID_LEN])
{
	crypto_generichash_state h;
	crypto_generichash_init(&h, NULL, 0, 16);
	ag_hash_str(&h, "finding2");
	ag_hash_str(&h, boot_id);
	ag_hash_str(&h, f->code);
	ag_hash_str(&h, f->pci_bus_id);
	ag_hash_str(&h, f->key);
	ag_hash_u64(&h, (uint64_t)since);
	ag_hash_str(&h, epoch);
	ag_hex_id("f", &h, out);
}

int agent_job_validate(const char *job, char *err, size_t errlen)
{
	size_t n = job ? strlen(job) : 0;
	int ok = n >= 1 && n <= 64;
	for (size_t i = 0; ok && i < n; i++) {
		char c = job[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		     c == '.' || c == '_' || c == '-' || c == '+';
	}
	if (!ok)
		return fp_errf(FP_EINVAL, err, errlen, "1..64 characters of [A-Za-z0-9._+-]");
	return 0;
}

/* Records a local write failure (logged by the caller). */
static void ag_local_fail(struct agent *a, const char *what, const char *err)
{
	a->local_failed = 1;
	snprintf(a->local_err, sizeof(a->local_err), "%.60s: %.440s", what, err);
}

const char *agent_local_error(const struct agent *a, size_t *unsent)
{
	if (unsent) {
		size_t n = a->unsent_kernel;
		for (size_t i = 0; i < a->neps; i++)
			n += !a->eps[i].sent;
		*unsent = n;
	}
	return a->local_failed ? a->local_err : NULL;
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

static void ag_remember(struct agent *a, uint64_t pos, const char *id);

/* Puts a report of the waiting events (all of them; the callers keep nev <=
 * AGENT_MAX_REPORT_EVENTS) and clears them. Only once the report is durably in the outbox
 * are its kernel ids remembered for the cursor and its episodes marked sent; on a failed write
 * the events stay waiting (the caller decides) and agent_local_error says why. */
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
		log_error("agent outbox write failed node=%s events=%zu err=\"%s\"", a->cfg.node,
			  a->nev, err);
		ag_local_fail(a, "outbox write failed", err);
		return FP_EIO;
	}
	a->local_failed = 0;
	for (size_t i = 0; i < a->nev; i++) {
		if (a->ev[i].kernel)
			ag_remember(a, a->ev[i].first, a->ev[i].id);
		if (a->ev[i].ep >= 0 && (size_t)a->ev[i].ep < a->neps)
			a->eps[a->ev[i].ep].sent = 1;
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
	e->ep = -1;
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
	json_object_set_new(doc, "ids", json_integer(2));
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
	/* Ids still to skip belong to lines not read again yet (after a resume or a rollback, a
	 * pass that stopped early): they are still emitted, ahead of the resume position. */
	for (size_t i = 0; i < a->nskip; i++)
		json_array_append_new(skip, json_string(a->skip[i]));
	json_object_set_new(doc, "emitted", json_incref(skip));
	if (a->legacy_boot[0] && a->nskip > 0)
		json_object_set_new(doc, "legacyBootId", ag_str(a->legacy_boot));
	char *body = jsonx_dumps(doc);
	json_decref(doc);
	char *path = ag_cursor_path(a);
	char err[512];
	int rc = outbox_write_durable(path, body, strlen(body), err, sizeof(err));
	free(body);
	free(path);
	if (rc < 0) {
		json_decref(skip);
		log_error("agent cursor write failed node=%s err=\"%s\"", a->cfg.node, err);
		ag_local_fail(a, "kernel cursor write failed", err);
		return FP_EIO;
	}
	/* What a rollback goes back to. */
	a->dur_pos = resume;
	size_t ns = json_array_size(skip);
	free(a->dur_skip);
	a->dur_skip = xcalloc(ns ? ns : 1, sizeof(*a->dur_skip));
	a->ndur_skip = 0;
	for (size_t i = 0; i < ns; i++)
		snprintf(a->dur_skip[a->ndur_skip++], AGENT_ID_LEN, "%s",
			 json_string_value(json_array_get(skip, i)));
	json_decref(skip);
	if (a->nskip == 0)
		a->legacy_boot[0] = '\0';
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
	const char *legacy = json_string_value(json_object_get(doc, "legacyBootId"));
	uint64_t dev = 0, ino = 0, pos = 0;
	if (!kind || !cpath || strcmp(cpath, a->cfg.kernel_log) != 0)
		goto out;
	if (a->ksrc == KSRC_FILE) {
		if (strcmp(kind, "file") || ag_json_u64(doc, "dev", &dev) < 0 ||
		    ag_json_u64(doc, "inode", &ino) < 0 || ag_json_u64(doc, "offset", &pos) < 0 ||
		    dev != a->kdev || ino != a->kino)
			goto out;
		*file_offset = pos;
		/* Written before file-line ids left out the boot id: its emitted ids are v1 ids
		 * under its own boot id. */
		if (json_integer_value(json_object_get(doc, "ids")) != 2 && boot)
			legacy = boot;
		if (legacy && strlen(legacy) < sizeof(a->legacy_boot))
			snprintf(a->legacy_boot, sizeof(a->legacy_boot), "%s", legacy);
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
	a->dur_pos = pos;
	a->dur_skip = xcalloc(a->nskip ? a->nskip : 1, sizeof(*a->dur_skip));
	memcpy(a->dur_skip, a->skip, a->nskip * sizeof(*a->skip));
	a->ndur_skip = a->nskip;
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

static int ag_write_cursor(struct agent *a);

/* Puts the waiting kernel events and then moves the cursor over them, so a later failure goes
 * back no further than this. */
static int ag_put_kernel(struct agent *a)
{
	int rc = ag_put_report(a);
	if (rc == 0)
		rc = ag_write_cursor(a);
	return rc;
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
			agent_id_file_line(a->kdev, a->kino, first, k->raw, id);
		}
		int skip = ag_skip_id(a, id);
		if (!skip && a->legacy_boot[0] && a->ksrc == KSRC_FILE) {
			char v1[AGENT_ID_LEN];
			agent_id_file_line_v1(a->legacy_boot, a->kdev, a->kino, first, k->raw, v1);
			skip = ag_skip_id(a, v1);
		}
		if (skip) {
			/* Emitted before, durably: remembered for the next cursor now. */
			ag_remember(a, first, id);
			a->st.skipped_on_resume++;
			continue;
		}
		if (a->nev >= AGENT_MAX_REPORT_EVENTS) {
			int rc = ag_put_kernel(a);
			if (rc < 0)
				return rc;
		}
		struct ag_event *e = ag_new_event(a);
		memcpy(e->id, id, sizeof(id));
		e->kernel = 1;
		e->first = first;
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
			int rc = ag_put_kernel(a);
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
	free(a->dur_skip);
	a->dur_skip = NULL;
	a->ndur_skip = 0;
	a->dur_pos = 0;
	a->legacy_boot[0] = '\0';
	a->kmsg_resume = 0;
	a->krotated = 0;
	a->keof_quiet = 0;
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

/* A write failed: forget what was read since the last durable cursor and go back to it, so
 * the next pass reads those lines again (the ids already in the outbox are in that cursor's
 * skip list; others were never remembered). */
static void ag_kernel_rollback(struct agent *a)
{
	size_t lost = 0;
	for (size_t i = 0; i < a->nev; i++)
		lost += a->ev[i].kernel;
	a->unsent_kernel = lost;
	a->nev = 0;
	log_warn("agent kernel log reading goes back to the last durable cursor node=%s "
		 "events_not_in_outbox=%zu", a->cfg.node, lost);
	if (a->ksrc == KSRC_KMSG) {
		ag_kernel_close(a); /* reopened from the cursor file at the next pass */
		return;
	}
	a->kpos = a->dur_pos;
	a->ring_n = a->ring_head = 0;
	a->nrecent = 0;
	free(a->skip);
	a->skip = xcalloc(a->ndur_skip ? a->ndur_skip : 1, sizeof(*a->skip));
	if (a->ndur_skip)
		memcpy(a->skip, a->dur_skip, a->ndur_skip * sizeof(*a->skip));
	a->nskip = a->ndur_skip;
	a->keof_quiet = 0;
	a->cursor_dirty = 1;
	kernlog_parser_free(a->kp);
	a->kp = kernlog_parser_new(ag_now(a));
}

/* One pass over the open source from kpos to its end (see agent_read_kernel). *at_end: the
 * end was reached; *progressed: a line was read. */
static int ag_read_pass(struct agent *a, int final, int *at_end, int *progressed)
{
	int rc = 0;
	size_t lines = 0;
	*at_end = *progressed = 0;
	char *chunk = xmalloc(AG_CHUNK + 1);
	for (;;) {
		if (a->cfg.max_lines_per_pass && lines >= a->cfg.max_lines_per_pass)
			break;
		if (outbox_full(&a->ob))
			break;
		if (a->ksrc == KSRC_KMSG) {
			ssize_t n = ag_kmsg_record(a, chunk, AG_CHUNK + 1);
			if (n <= 0) {
				*at_end = 1;
				break;
			}
			uint64_t seq;
			if (ag_kmsg_seq(chunk, &seq) < 0)
				continue;
			if (a->kmsg_resume && seq < a->kmsg_resume_seq)
				continue;
			a->kpos = seq;
			a->kmsg_have_seq = 1;
			*progressed = 1;
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
			*at_end = 1;
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
			*progressed = 1;
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
			*at_end = 1;
			break;
		}
	}
	free(chunk);
	return rc;
}

/* Completes a pending multi-line record (kernlog_flush) and takes its events. */
static int ag_kernel_flush(struct agent *a)
{
	struct kernlog_event kev[2];
	int n = kernlog_flush(a->kp, kev);
	uint64_t last = a->ring_n ? a->ring[(a->ring_head + a->ring_n - 1) % AGENT_CURSOR_BACKUP].pos
				  : a->kpos;
	return n > 0 ? ag_take_kernel_events(a, kev, n, last) : 0;
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
		/* Rotated (the path names another file now): the old file is read to its end
		 * below before the new one is opened. */
		if (!a->krotated && stat(a->cfg.kernel_log, &now_st) == 0 &&
		    ((uint64_t)now_st.st_dev != a->kdev || (uint64_t)now_st.st_ino != a->kino)) {
			log_info("agent kernel log rotated, reading the old file to its end path=%s",
				 a->cfg.kernel_log);
			a->krotated = 1;
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
	int rc, at_end, progressed;
	for (int file = 0; file < 2; file++) {
		rc = ag_read_pass(a, final, &at_end, &progressed);
		/* End of input: complete a pending multi-line record when told to, when the log
		 * has been quiet for a whole pass (a record's lines are written together), or
		 * before leaving a rotated file. */
		int leave = a->krotated && at_end && (final || !progressed);
		if (rc == 0 && at_end && (final || leave || (!progressed && a->keof_quiet)))
			rc = ag_kernel_flush(a);
		a->keof_quiet = at_end && !progressed;
		if (rc == 0 && a->nev > 0)
			rc = ag_put_report(a);
		if (rc == 0 && (progressed || a->cursor_dirty ||
				ag_resume_pos(a) != a->cursor_written_pos))
			rc = ag_write_cursor(a);
		if (rc < 0) {
			ag_kernel_rollback(a);
			return rc;
		}
		a->unsent_kernel = 0;
		if (!leave)
			break;
		/* The old file is read to its end: follow the new one from its start. */
		log_info("agent kernel log rotated, following the new file path=%s",
			 a->cfg.kernel_log);
		ag_kernel_close(a);
		if (ag_kernel_open(a) < 0)
			return 0;
		a->cursor_dirty = 1;
	}
	return 0;
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
		return 0;
	}
	struct probe_result res;
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
		memset(f, 0, sizeof(*f));
		snprintf(f->source, sizeof(f->source), "agent");
		snprintf(f->code, sizeof(f->code), "probe_timeout:%s", det_names[d]);
		f->gpu_index = -1;
		snprintf(f->message, sizeof(f->message), "%s did not answer in %ld s", argv[0],
			 a->cfg.probe_timeout_s);
		/* A level like any finding: one event per episode of timeouts. */
		probe_result_release(&res);
		return 1;
	}
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

/* ------------------------------------------------------------------ finding episodes */

static char *ag_eps_path(struct agent *a)
{
	return xasprintf("%s/findings.state", a->cfg.state_dir);
}

/* Writes findings.state durably (outbox_write_durable). 0, or FP_EIO (logged, local error). */
static int ag_eps_save(struct agent *a)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "bootId", ag_str(a->cfg.boot_id));
	json_object_set_new(doc, "epoch", json_string(a->epoch));
	json_object_set_new(doc, "epochKnown", json_boolean(a->epoch_known));
	json_object_set_new(doc, "lastSince", json_integer(a->last_since));
	json_t *arr = json_array();
	for (size_t i = 0; i < a->neps; i++) {
		const struct ag_episode *e = &a->eps[i];
		json_t *o = json_object();
		json_object_set_new(o, "code", json_string(e->code));
		json_object_set_new(o, "bus", json_string(e->bus));
		json_object_set_new(o, "key", ag_str(e->key));
		json_object_set_new(o, "source", json_string(e->source));
		json_object_set_new(o, "gpuIndex", json_integer(e->gpu_index));
		json_object_set_new(o, "message", ag_str(e->message));
		json_object_set_new(o, "since", json_integer(e->since));
		json_object_set_new(o, "epoch", json_string(e->epoch));
		json_object_set_new(o, "id", json_string(e->id));
		json_object_set_new(o, "dets", json_integer(e->dets));
		json_object_set_new(o, "sent", json_boolean(e->sent));
		json_object_set_new(o, "ended", json_boolean(e->ended));
		json_array_append_new(arr, o);
	}
	json_object_set_new(doc, "episodes", arr);
	char *body = jsonx_dumps(doc);
	json_decref(doc);
	char *path = ag_eps_path(a);
	char err[512];
	int rc = outbox_write_durable(path, body, strlen(body), err, sizeof(err));
	free(body);
	free(path);
	if (rc < 0) {
		log_error("agent findings state write failed node=%s err=\"%s\"", a->cfg.node, err);
		ag_local_fail(a, "findings state write failed", err);
		return FP_EIO;
	}
	return 0;
}

static int ag_id_shape_ok(const char *id)
{
	if (!id || strlen(id) != AGENT_ID_LEN - 1 || id[0] != 'f' || id[1] != '-')
		return 0;
	for (size_t i = 2; i < AGENT_ID_LEN - 1; i++)
		if (!strchr("0123456789abcdef", id[i]))
			return 0;
	return 1;
}

/* Reads findings.state. Missing: nothing known. Damaged: logged, nothing known (at worst an
 * unchanged finding is sent once more under a new id). Episodes of another boot are dropped
 * unless their event was never put (then it is sent: nothing found is lost). */
static void ag_eps_load(struct agent *a)
{
	char *path = ag_eps_path(a);
	struct buf b;
	buf_init(&b, 4 << 20);
	char err[256] = "larger than 4 MiB";
	json_t *doc = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			log_warn("agent findings state unreadable path=%s err=\"%s\"", path,
				 strerror(errno));
		goto out;
	}
	char chunk[8192];
	ssize_t n;
	int toobig = 0;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		if (buf_append(&b, chunk, (size_t)n) < 0)
			toobig = 1;
	close(fd);
	if (toobig || jsonx_parse(b.data ? b.data : "", b.len, &doc, err, sizeof(err)) < 0 ||
	    !json_is_object(doc)) {
		log_warn("agent findings state damaged, starting afresh path=%s err=\"%s\"", path,
			 err);
		goto out;
	}
	const char *boot = jsonx_str(doc, "bootId");
	int same_boot = boot && strcmp(boot, a->cfg.boot_id) == 0;
	const char *ep = jsonx_str(doc, "epoch");
	if (ep && strlen(ep) < sizeof(a->epoch)) {
		snprintf(a->epoch, sizeof(a->epoch), "%s", ep);
		a->epoch_known = json_is_true(json_object_get(doc, "epochKnown"));
	}
	json_int_t ls = json_integer_value(json_object_get(doc, "lastSince"));
	a->last_since = ls > 0 ? (int64_t)ls : 0;
	json_t *arr = json_object_get(doc, "episodes");
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o) {
		if (a->neps >= AG_MAX_EPISODES)
			break;
		const char *id = jsonx_str(o, "id");
		int sent = json_is_true(json_object_get(o, "sent"));
		if (!ag_id_shape_ok(id) || (!same_boot && sent))
			continue;
		struct ag_episode *e = &a->eps[a->neps++];
		memset(e, 0, sizeof(*e));
		const char *v;
		snprintf(e->code, sizeof(e->code), "%s", (v = jsonx_str(o, "code")) ? v : "");
		snprintf(e->bus, sizeof(e->bus), "%s", (v = jsonx_str(o, "bus")) ? v : "");
		snprintf(e->key, sizeof(e->key), "%s", (v = jsonx_str(o, "key")) ? v : "");
		snprintf(e->source, sizeof(e->source), "%s", (v = jsonx_str(o, "source")) ? v : "agent");
		snprintf(e->message, sizeof(e->message), "%s", (v = jsonx_str(o, "message")) ? v : "");
		snprintf(e->epoch, sizeof(e->epoch), "%s", (v = jsonx_str(o, "epoch")) ? v : "");
		snprintf(e->id, sizeof(e->id), "%s", id);
		json_int_t gi = json_integer_value(json_object_get(o, "gpuIndex"));
		e->gpu_index = gi >= 0 && gi < 1024 ? (int)gi : -1;
		e->since = json_integer_value(json_object_get(o, "since"));
		e->dets = (unsigned)json_integer_value(json_object_get(o, "dets")) &
			  ((1u << AGENT_DET__COUNT) - 1);
		e->sent = sent;
		e->ended = !same_boot || json_is_true(json_object_get(o, "ended"));
	}
out:
	json_decref(doc);
	buf_release(&b);
	free(path);
}

/* Drops the episodes that ended and whose event is in the outbox. */
static void ag_eps_compact(struct agent *a)
{
	size_t k = 0;
	for (size_t i = 0; i < a->neps; i++)
		if (!(a->eps[i].ended && a->eps[i].sent))
			a->eps[k++] = a->eps[i];
	a->neps = k;
}

/* Ends every live episode (a remediation was recorded): what is still shown is new. When only
 * before_ms > 0, ends those that started before it. Returns how many ended. */
static size_t ag_eps_end_all(struct agent *a, int64_t before_ms)
{
	size_t n = 0;
	for (size_t i = 0; i < a->neps; i++)
		if (!a->eps[i].ended && (before_ms <= 0 || a->eps[i].since < before_ms)) {
			a->eps[i].ended = 1;
			n++;
		}
	return n;
}

/* GET /v1/nodes/{node} unless a failure asked to wait (1 s doubling to 30 s). New reference
 * or NULL. */
static json_t *ag_fetch_node(struct agent *a)
{
	if (!a->tp.get_node)
		return NULL;
	int64_t now = ag_now(a);
	if (now < a->node_next_ms)
		return NULL;
	json_t *doc = NULL;
	if (a->tp.get_node(a->tp.arg, &doc) < 0 || !doc) {
		json_decref(doc);
		if (a->node_backoff_ms < 1000)
			a->node_backoff_ms = 1000;
		a->node_next_ms = now + a->node_backoff_ms;
		a->node_backoff_ms = a->node_backoff_ms * 2 > AG_NODE_BACKOFF_MAX_MS
					     ? AG_NODE_BACKOFF_MAX_MS
					     : a->node_backoff_ms * 2;
		return NULL;
	}
	a->node_backoff_ms = 1000;
	a->node_next_ms = 0;
	return doc;
}

/* Takes what the node document says: the expected GPU count (when not given) and the
 * remediation epoch, the newest status.remediationHistory[].at (RFC 3339 as the API writes it,
 * so the strings order as the times do). A changed epoch ends every episode. Returns 1 when
 * the episodes changed. */
static int ag_apply_node(struct agent *a, json_t *doc)
{
	if (!doc)
		return 0;
	if (a->expected_gpus <= 0) {
		json_int_t n = json_integer_value(jsonx_path(doc, "spec.gpus.count"));
		if (n > 0 && n <= NVSMI_MAX_GPUS)
			a->expected_gpus = (int)n;
	}
	char newest[AG_EPOCH_LEN] = "";
	json_t *hist = jsonx_path(doc, "status.remediationHistory");
	size_t i;
	json_t *h;
	json_array_foreach(hist, i, h) {
		const char *at = jsonx_str(h, "at");
		if (at && strlen(at) < sizeof(newest) && strcmp(at, newest) > 0)
			snprintf(newest, sizeof(newest), "%s", at);
	}
	int changed = 0;
	if (!a->epoch_known) {
		/* First read ever: end only the episodes that started before that remediation. */
		int64_t at_ms = 0;
		if (newest[0] && fp_time_parse(newest, &at_ms) == 0)
			ag_eps_end_all(a, at_ms);
		changed = 1;
	} else if (strcmp(newest, a->epoch) != 0) {
		size_t n = ag_eps_end_all(a, 0);
		log_info("agent remediation recorded node=%s epoch=%s: findings still shown are new "
			 "events ended=%zu", a->cfg.node, newest[0] ? newest : "-", n);
		changed = 1;
	}
	snprintf(a->epoch, sizeof(a->epoch), "%s", newest);
	a->epoch_known = 1;
	return changed;
}

/* Maps one detector's findings onto episodes: a finding an open episode has is that episode
 * (no new event); any other starts one. Returns 1 when an episode started. */
static int ag_take_findings(struct agent *a, const struct agent_finding *f, size_t n,
			    enum agent_det d)
{
	int changed = 0;
	int64_t now = ag_now(a);
	for (size_t i = 0; i < n; i++) {
		struct ag_episode *e = NULL;
		for (size_t k = 0; k < a->neps && !e; k++) {
			struct ag_episode *x = &a->eps[k];
			if (!x->ended && strcmp(x->code, f[i].code) == 0 &&
			    strcmp(x->bus, f[i].pci_bus_id) == 0 && strcmp(x->key, f[i].key) == 0)
				e = x;
		}
		if (!e) {
			if (a->neps >= AG_MAX_EPISODES) {
				log_warn("agent too many finding episodes node=%s max=%d: %s not "
					 "reported yet", a->cfg.node, AG_MAX_EPISODES, f[i].code);
				continue;
			}
			e = &a->eps[a->neps++];
			memset(e, 0, sizeof(*e));
			snprintf(e->code, sizeof(e->code), "%s", f[i].code);
			snprintf(e->bus, sizeof(e->bus), "%s", f[i].pci_bus_id);
			snprintf(e->key, sizeof(e->key), "%s", f[i].key);
			snprintf(e->source, sizeof(e->source), "%s",
				 strcmp(f[i].source, "agent") == 0 ? "agent" : det_names[d]);
			e->gpu_index = f[i].gpu_index;
			snprintf(e->message, sizeof(e->message), "%s", f[i].message);
			/* Unique per agent, so two episodes never share an id. */
			e->since = now > a->last_since ? now : a->last_since + 1;
			a->last_since = e->since;
			snprintf(e->epoch, sizeof(e->epoch), "%s", a->epoch);
			agent_id_finding(a->cfg.boot_id, &f[i], e->since, e->epoch, e->id);
			changed = 1;
		}
		e->round = a->round;
		e->dets |= 1u << d;
	}
	return changed;
}

/* The probe round with the node document (may be NULL). */
static int ag_probe_round_doc(struct agent *a, json_t *doc)
{
	struct agent_finding *f = xcalloc(AG_MAX_FINDINGS, sizeof(*f));
	size_t nf = 0, mark = 0;
	int rc = 0, changed = ag_apply_node(a, doc);
	a->round++;
	unsigned ran = 0;
	for (int d = AGENT_DET_NVSMI; d < AGENT_DET__COUNT; d++) {
		if (d == AGENT_DET_NVSMI)
			ag_probe_nvsmi(a, f, &nf);
		else if (d == AGENT_DET_NVML)
			ag_probe_nvml(a, f, &nf);
		else if (d == AGENT_DET_DCGM)
			ag_probe_dcgm(a, f, &nf);
		else
			ag_probe_ibstat(a, f, &nf);
		if (a->configured[d] && a->det[d].live)
			ran |= 1u << d;
		/* Each detector's findings carry its own source name. */
		changed |= ag_take_findings(a, f + mark, nf - mark, (enum agent_det)d);
		mark = nf;
	}
	/* An episode ends when every detector that showed it ran cleanly and did not show it. */
	for (size_t k = 0; k < a->neps; k++) {
		struct ag_episode *e = &a->eps[k];
		if (!e->ended && e->round != a->round && (e->dets & ran) == e->dets) {
			e->ended = 1;
			changed = 1;
		}
	}
	ag_eps_compact(a);
	/* Durable before the events go out, so a restart neither forgets an episode whose event
	 * may be in the outbox nor loses one whose event is not. */
	if (changed && (rc = ag_eps_save(a)) < 0)
		goto out;
	size_t put = 0, unsent = 0;
	for (size_t k = 0; k < a->neps; k++) {
		const struct ag_episode *e = &a->eps[k];
		if (e->sent)
			continue;
		unsent++;
		if (a->nev >= AGENT_MAX_REPORT_EVENTS) {
			if ((rc = ag_put_report(a)) < 0)
				goto out;
			put++;
		}
		struct ag_event *ev = ag_new_event(a);
		memcpy(ev->id, e->id, sizeof(ev->id));
		snprintf(ev->source, sizeof(ev->source), "%s", e->source);
		snprintf(ev->code, sizeof(ev->code), "%s", e->code);
		ev->gpu_index = e->gpu_index;
		snprintf(ev->bus, sizeof(ev->bus), "%s", e->bus);
		ev->time_ms = e->since;
		snprintf(ev->message, sizeof(ev->message), "%s", e->message);
		ev->ep = (int)k;
	}
	/* A heartbeat only when nothing is waiting: pending reports carry the detectors too, and
	 * heartbeats must not pile up while the API is down. */
	if (a->nev > 0 || (put == 0 && a->ob.npending == 0))
		if ((rc = ag_put_report(a)) < 0)
			goto out;
	if (unsent) {
		ag_eps_compact(a);
		rc = ag_eps_save(a);
	}
out:
	if (rc < 0)
		a->nev = 0; /* the episodes stay unsent: a later round puts them */
	free(f);
	return rc;
}

int agent_probe_round(struct agent *a)
{
	json_t *doc = ag_fetch_node(a);
	int rc = ag_probe_round_doc(a, doc);
	json_decref(doc);
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
			ag_local_fail(a, "outbox read failed", err);
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
				ag_local_fail(a, "outbox remove failed", err);
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
			ag_local_fail(a, "outbox reject failed", err);
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

/* agent_gpu_reset_check with the node document (may be NULL: nothing to do). */
static int ag_reset_with_doc(struct agent *a, json_t *doc)
{
	if (!doc || !a->tp.remediated)
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
	return reported;
}

int agent_gpu_reset_check(struct agent *a)
{
	if (!a->tp.get_node || !a->tp.remediated)
		return 0;
	json_t *doc = ag_fetch_node(a);
	int rc = ag_reset_with_doc(a, doc);
	json_decref(doc);
	return rc;
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
	char why[256];
	if (c->job && agent_job_validate(c->job, why, sizeof(why)) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "job: %s", why);
	if (name_validate("node", c->node, why, sizeof(why)) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "%s", why);
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
	a->eps = xcalloc(AG_MAX_EPISODES, sizeof(*a->eps));
	a->node_backoff_ms = 1000;
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
	ag_eps_load(a);
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
	free(a->dur_skip);
	free(a->ev);
	free(a->eps);
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
	json_t *doc = ag_fetch_node(a);
	rc = ag_probe_round_doc(a, doc);
	if (rc == 0)
		ag_reset_with_doc(a, doc);
	json_decref(doc);
	if (rc < 0)
		return rc;
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
			json_t *doc = ag_fetch_node(a);
			ag_probe_round_doc(a, doc);
			ag_reset_with_doc(a, doc);
			json_decref(doc);
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
