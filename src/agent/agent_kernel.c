/* agent_kernel.c - the node agent's kernel log reading (agent.h, agent_read_kernel): a log
 * file or /dev/kmsg, fed line by line to the kernel log parser (kernlog.h); a crash-safe
 * cursor (kernel.cursor in the state directory) that points AGENT_CURSOR_BACKUP lines back
 * with the ids already emitted, so a restart neither loses nor repeats an event; rotation of
 * the log file; and the pause when the outbox is full. The structs are in agent_int.h; the
 * helpers it uses are agent_util.c's (it calls nothing of agent.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_int.h"
#include "agent/kernlog.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"

#include "base/banned.h"

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
	json_object_set_new(doc, "path", agent_str(a->cfg.kernel_log));
	json_object_set_new(doc, "bootId", agent_str(a->cfg.boot_id));
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
		json_object_set_new(doc, "legacyBootId", agent_str(a->legacy_boot));
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
		agent_local_fail(a, "kernel cursor write failed", err);
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
		log_warn(
			"agent kernel cursor unreadable, starting at the beginning path=%s err=\"%s\"",
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
	agent_chomp(l->text, strlen(l->text));
}

/* The pos of the line an event's raw first line came from: the newest ring line that raw is
 * a prefix of (raw is the first line, truncated); the current line when none matches. */
static uint64_t ag_first_line_pos(struct agent *a, const char *raw, uint64_t cur)
{
	char r[KERNLOG_RAW_LEN];
	snprintf(r, sizeof(r), "%s", raw);
	size_t rl = agent_chomp(r, strlen(r));
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

static int ag_write_cursor(struct agent *a);

/* Puts the waiting kernel events and then moves the cursor over them, so a later failure goes
 * back no further than this. */
static int ag_put_kernel(struct agent *a)
{
	int rc = agent_put_report(a);
	if (rc == 0)
		rc = ag_write_cursor(a);
	return rc;
}

/* After a failed put in --once: whether to go on counting what is not in the outbox (the
 * rest of the batch, then the rest of the log: ag_kernel_count_rest) instead of returning at
 * once. The count is what the exit message says (break report 4b #10). */
static int ag_count_on_fail(struct agent *a)
{
	if (!a->cfg.once)
		return 0;
	a->kcounting = 1;
	return 1;
}

/* Takes the parser's completed events; cur = pos of the line just fed (or of the last one for
 * a flush). Puts a report when the batch is full. While counting (a->kcounting), an event not
 * emitted before only adds to a->kcounted. */
static int ag_take_kernel_events(struct agent *a, const struct kernlog_event *kev, int n,
				 uint64_t cur)
{
	int failed = 0;
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
			agent_remember(a, first, id);
			a->st.skipped_on_resume++;
			continue;
		}
		if (a->kcounting) {
			a->kcounted++;
			continue;
		}
		if (a->nev >= AGENT_MAX_REPORT_EVENTS) {
			int rc = ag_put_kernel(a);
			if (rc < 0) {
				if (!ag_count_on_fail(a))
					return rc;
				failed = rc;
				a->kcounted++;
				continue;
			}
		}
		struct ag_event *e = agent_new_event(a);
		memcpy(e->id, id, sizeof(id));
		e->kernel = 1;
		e->first = first;
		snprintf(e->source, sizeof(e->source), "kernel");
		snprintf(e->code, sizeof(e->code), "%s", k->code);
		/* The kernel line names the bus; the index comes from the latest nvidia-smi or
		 * NVML report the agent read (-1 when none names that bus). */
		e->gpu_index = k->gpu_index >= 0 ? k->gpu_index : agent_gpu_index(a, k->pci_bus_id);
		snprintf(e->bus, sizeof(e->bus), "%s", k->pci_bus_id);
		e->pid = k->pid;
		snprintf(e->process, sizeof(e->process), "%s", k->process);
		/* The pid's Slurm job when it can still be read; else the event has --job. */
		if (e->pid > 0)
			agent_pid_job(a->cfg.proc_root, e->pid, e->process, e->job, sizeof(e->job));
		e->time_ms = k->time_ms > 0 ? k->time_ms : agent_now(a);
		snprintf(e->message, sizeof(e->message), "%s", k->message);
		snprintf(e->raw, sizeof(e->raw), "%s", k->raw);
		/* The bound counts events not yet put: put them as soon as they would fill the
		 * outbox, so reading stops right here (the caller checks outbox_full). */
		if (a->ob.nevents + a->nev >= a->ob.max_events) {
			int rc = ag_put_kernel(a);
			if (rc < 0) {
				if (!ag_count_on_fail(a))
					return rc;
				failed = rc;
			}
		}
	}
	return failed;
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
		agent_set(a, AGENT_DET_KERNEL, 0, "unknown", "ProbeFailed", "open %s: %s", p,
			  strerror(errno));
		return FP_EIO;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		agent_set(a, AGENT_DET_KERNEL, 0, "unknown", "ProbeFailed", "stat %s: %s", p,
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
				 "path=%s size=%jd offset=%" PRIu64,
				 p, (intmax_t)st.st_size, off);
			off = 0;
		}
		a->kpos = off;
	} else {
		a->kpos = 0;
		a->kmsg_have_seq = 0;
	}
	kernlog_parser_free(a->kp);
	a->kp = kernlog_parser_new(agent_now(a));
	agent_set(a, AGENT_DET_KERNEL, 1, "ok", NULL, "%s", "");
	return 0;
}

void agent_kernel_close(struct agent *a)
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
				 "node=%s",
				 a->cfg.node);
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0) {
			agent_set(a, AGENT_DET_KERNEL, 0, "unknown", "ProbeFailed",
				  "read /dev/kmsg: %s", strerror(errno));
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
	size_t lost = a->kcounted;
	for (size_t i = 0; i < a->nev; i++)
		lost += a->ev[i].kernel;
	a->unsent_kernel = lost;
	a->kcounting = 0;
	a->kcounted = 0;
	a->nev = 0;
	log_warn("agent kernel log reading goes back to the last durable cursor node=%s "
		 "events_not_in_outbox=%zu",
		 a->cfg.node, lost);
	if (a->ksrc == KSRC_KMSG) {
		agent_kernel_close(a); /* reopened from the cursor file at the next pass */
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
	a->kp = kernlog_parser_new(agent_now(a));
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
		if (!a->kcounting && outbox_full(&a->ob))
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
			agent_set(a, AGENT_DET_KERNEL, 0, "unknown", "ProbeFailed", "read %s: %s",
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
			if (!a->kcounting && outbox_full(&a->ob))
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
	uint64_t last = a->ring_n
				? a->ring[(a->ring_head + a->ring_n - 1) % AGENT_CURSOR_BACKUP].pos
				: a->kpos;
	return n > 0 ? ag_take_kernel_events(a, kev, n, last) : 0;
}

/* --once after a failed write: reads the rest of the source to its end only to count the
 * events in it not emitted before (a->kcounted), so the exit message says how many events
 * found are not in the outbox - all of them, not only the batch that failed. Puts nothing and
 * writes nothing; the rollback that follows forgets what was read. */
static void ag_kernel_count_rest(struct agent *a)
{
	int at_end = 0, progressed = 1;
	a->kcounting = 1;
	while (!at_end && progressed)
		if (ag_read_pass(a, 1, &at_end, &progressed) < 0)
			break;
	ag_kernel_flush(a);
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
			log_info(
				"agent kernel log rotated, reading the old file to its end path=%s",
				a->cfg.kernel_log);
			a->krotated = 1;
		}
	}
	if (ag_kernel_open(a) < 0)
		return 0; /* reported as a dead detector; retried next pass */
	if (outbox_full(&a->ob)) {
		if (!a->kpaused)
			log_warn("agent outbox full, kernel log reading paused node=%s events=%zu "
				 "max=%zu",
				 a->cfg.node, a->ob.nevents, a->ob.max_events);
		a->kpaused = 1;
		agent_set(a, AGENT_DET_KERNEL, 1, "ok", NULL,
			  "outbox full (%zu events buffered, max %zu): kernel log reading paused",
			  a->ob.nevents, a->ob.max_events);
		return 0;
	}
	if (a->kpaused) {
		log_info("agent outbox has room again, kernel log reading resumed node=%s",
			 a->cfg.node);
		a->kpaused = 0;
		agent_set(a, AGENT_DET_KERNEL, 1, "ok", NULL, "%s", "");
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
			rc = agent_put_report(a);
		if (rc == 0 &&
		    (progressed || a->cursor_dirty || ag_resume_pos(a) != a->cursor_written_pos))
			rc = ag_write_cursor(a);
		if (rc < 0) {
			if (a->cfg.once)
				ag_kernel_count_rest(a);
			ag_kernel_rollback(a);
			return rc;
		}
		a->unsent_kernel = 0;
		if (!leave)
			break;
		/* The old file is read to its end: follow the new one from its start. */
		log_info("agent kernel log rotated, following the new file path=%s",
			 a->cfg.kernel_log);
		agent_kernel_close(a);
		if (ag_kernel_open(a) < 0)
			return 0;
		a->cursor_dirty = 1;
	}
	return 0;
}
