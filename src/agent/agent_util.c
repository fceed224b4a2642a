/* agent_util.c - the helpers both halves of the node agent use (agent_int.h): event and
 * finding ids, the process -> job lookup, detector state, local write failures, report
 * building and putting a report into the outbox (with the emitted kernel ids it remembers for
 * the cursor), and the GPU bus id -> index table. agent.c (detectors, findings, the loop) and
 * agent_kernel.c (kernel log reading) both call these and not each other's internals; this
 * file calls neither of them. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/agent_int.h"
#include "agent/outbox.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/timefmt.h"

#include "base/banned.h"

static const char *const det_names[AGENT_DET__COUNT] = {"kernel", "nvidia-smi", "nvml", "dcgm",
							"ibstat"};

const char *agent_det_name(enum agent_det d)
{
	return (unsigned)d < AGENT_DET__COUNT ? det_names[d] : "?";
}

/* ------------------------------------------------------------------ small helpers */

int64_t agent_now(struct agent *a)
{
	if (a->cfg.wall_ms)
		return a->cfg.wall_ms();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void agent_set(struct agent *a, enum agent_det d, int live, const char *status, const char *reason,
	       const char *fmt, ...)
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

/* Reads at most max bytes of root/pid/name into buf (NUL-terminated; buf has max + 1 bytes).
 * Returns the length, or -1 when it cannot be read. */
static ssize_t ag_proc_read(const char *root, long pid, const char *name, char *buf, size_t max)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%ld/%s", root, pid, name);
	return buf_read_into(path, buf, max + 1);
}

/* The job id of one cgroup path ("/system.slice/slurmstepd.scope/job_1392969/step_0/..."),
 * or 0: "job_<digits>" as a whole component whose parent is a Slurm directory. */
static int ag_cgroup_job(const char *path, size_t plen, char *job, size_t joblen)
{
	for (size_t i = 0; i + 5 <= plen; i++) {
		if (path[i] != '/' || strncmp(path + i + 1, "job_", 4) != 0)
			continue;
		size_t d = i + 5, e = d;
		while (e < plen && path[e] >= '0' && path[e] <= '9')
			e++;
		if (e == d || e - d > 20 || (e < plen && path[e] != '/'))
			continue;
		/* the parent component: [i0, i) */
		size_t i0 = i;
		while (i0 > 0 && path[i0 - 1] != '/')
			i0--;
		size_t pl = i - i0;
		const char *parent = path + i0;
		int slurm = 0;
		if (pl >= 4 && strncmp(parent, "uid_", 4) == 0 && i0 >= 2) {
			/* v1: the component above uid_<uid> is "slurm" or "slurm_<node>" */
			size_t j1 = i0 - 1, j0 = j1;
			while (j0 > 0 && path[j0 - 1] != '/')
				j0--;
			slurm = (j1 - j0 == 5 && strncmp(path + j0, "slurm", 5) == 0) ||
				(j1 - j0 > 6 && strncmp(path + j0, "slurm_", 6) == 0);
		} else if (pl >= 16 && strncmp(parent + pl - 16, "slurmstepd.scope", 16) == 0) {
			slurm = 1; /* v2: slurmstepd.scope or <node>_slurmstepd.scope */
		}
		if (!slurm || e - d >= joblen)
			continue;
		memcpy(job, path + d, e - d);
		job[e - d] = '\0';
		return 1;
	}
	return 0;
}

int agent_pid_job(const char *proc_root, long pid, const char *process, char *job, size_t joblen)
{
	const char *root = proc_root && *proc_root ? proc_root : "/proc";
	char why[128];
	if (pid <= 0 || joblen < 2)
		return 0;
	if (process && *process) {
		char comm[64];
		ssize_t n = ag_proc_read(root, pid, "comm", comm, sizeof(comm) - 1);
		if (n < 0)
			return 0; /* gone */
		comm[strcspn(comm, "\n")] = '\0';
		if (strncmp(comm, process, 15) != 0)
			return 0; /* the pid names another process now */
	}
	size_t cap = 64 << 10;
	char *buf = xmalloc(256 << 10 | 1);
	ssize_t n = ag_proc_read(root, pid, "cgroup", buf, cap);
	int found = 0;
	for (ssize_t i = 0; n > 0 && i < n && !found;) {
		const char *line = buf + i;
		const char *nl = memchr(line, '\n', (size_t)(n - i));
		size_t ll = nl ? (size_t)(nl - line) : (size_t)(n - i);
		i += (ssize_t)ll + 1;
		/* "hierarchy-ID:controller-list:cgroup-path": the path after the second ':' */
		const char *c1 = memchr(line, ':', ll);
		const char *c2 = c1 ? memchr(c1 + 1, ':', ll - (size_t)(c1 + 1 - line)) : NULL;
		if (!c2)
			continue;
		const char *path = c2 + 1;
		found = ag_cgroup_job(path, ll - (size_t)(path - line), job, joblen) &&
			agent_job_validate(job, why, sizeof(why)) == 0;
	}
	if (!found) {
		n = ag_proc_read(root, pid, "environ", buf, 256 << 10);
		for (ssize_t i = 0; n > 0 && i < n && !found;) {
			const char *ent = buf + i;
			size_t el = strnlen(ent, (size_t)(n - i));
			i += (ssize_t)el + 1;
			if (el <= 13 || strncmp(ent, "SLURM_JOB_ID=", 13) != 0 || el - 13 >= joblen)
				continue;
			memcpy(job, ent + 13, el - 13);
			job[el - 13] = '\0';
			found = agent_job_validate(job, why, sizeof(why)) == 0;
		}
	}
	free(buf);
	if (!found)
		job[0] = '\0';
	return found;
}

/* Records a local write failure (logged by the caller). */
void agent_local_fail(struct agent *a, const char *what, const char *err)
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
size_t agent_chomp(char *s, size_t n)
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return n;
}

/* ------------------------------------------------------------------ report building */

json_t *agent_str(const char *s)
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
			json_object_set_new(o, "message", agent_str(s->message));
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
		json_object_set_new(o, "process", agent_str(e->process));
	if (e->job[0])
		json_object_set_new(o, "job", agent_str(e->job));
	else if (a->cfg.job && *a->cfg.job)
		json_object_set_new(o, "job", agent_str(a->cfg.job));
	fp_time_format(e->time_ms, t);
	json_object_set_new(o, "time", json_string(t));
	json_object_set_new(o, "message", agent_str(e->message));
	if (e->raw[0])
		json_object_set_new(o, "raw", agent_str(e->raw));
	return o;
}

/* Puts a report of the waiting events (all of them; the callers keep nev <=
 * AGENT_MAX_REPORT_EVENTS) and clears them. Only once the report is durably in the outbox
 * are its kernel ids remembered for the cursor and its episodes marked sent; on a failed write
 * the events stay waiting (the caller decides) and agent_local_error says why. */
int agent_put_report(struct agent *a)
{
	json_t *doc = json_object();
	json_t *ag = json_object();
	json_object_set_new(ag, "version", json_string(AGENT_VERSION));
	json_object_set_new(ag, "bootId", agent_str(a->cfg.boot_id));
	/* 0: a --once run sends no heartbeats, so the server must not expect the next report
	 * (break report 4b #9; docs/api.md, agent.intervalSeconds) */
	json_object_set_new(ag, "intervalSeconds",
			    json_integer(a->cfg.once ? 0 : a->cfg.interval_s));
	if (a->cfg.job && *a->cfg.job)
		json_object_set_new(ag, "job", agent_str(a->cfg.job));
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
		agent_local_fail(a, "outbox write failed", err);
		return FP_EIO;
	}
	a->local_failed = 0;
	for (size_t i = 0; i < a->nev; i++) {
		if (a->ev[i].kernel)
			agent_remember(a, a->ev[i].first, a->ev[i].id);
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

void agent_gpu_table(struct agent *a, const struct nvsmi_report *r)
{
	a->ngpus = 0;
	for (size_t i = 0; i < r->ngpus && a->ngpus < NVSMI_MAX_GPUS; i++) {
		const struct nvsmi_gpu *g = &r->gpus[i];
		if (!g->pci_bus_id[0] || g->index < 0)
			continue;
		struct ag_gpu *t = &a->gpus[a->ngpus++];
		snprintf(t->bus, sizeof(t->bus), "%s", g->pci_bus_id);
		t->index = g->index;
	}
}

int agent_gpu_index(const struct agent *a, const char *bus)
{
	if (!bus || !*bus)
		return -1;
	for (size_t i = 0; i < a->ngpus; i++)
		if (strcasecmp(a->gpus[i].bus, bus) == 0)
			return a->gpus[i].index;
	return -1;
}

struct ag_event *agent_new_event(struct agent *a)
{
	BUG_ON(a->nev >= AGENT_MAX_REPORT_EVENTS);
	struct ag_event *e = &a->ev[a->nev++];
	memset(e, 0, sizeof(*e));
	e->gpu_index = -1;
	e->pid = -1;
	e->ep = -1;
	return e;
}

void agent_remember(struct agent *a, uint64_t pos, const char *id)
{
	if (a->nrecent == AG_RECENT_IDS) {
		memmove(&a->recent[0], &a->recent[1], (AG_RECENT_IDS - 1) * sizeof(a->recent[0]));
		a->nrecent--;
	}
	a->recent[a->nrecent].pos = pos;
	memcpy(a->recent[a->nrecent].id, id, AGENT_ID_LEN);
	a->nrecent++;
}
