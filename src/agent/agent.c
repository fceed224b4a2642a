/* agent.c - the node agent's loop (agent.h): the tool detectors with timeouts, finding
 * episodes, gpu_reset, and sending through the outbox. Kernel log reading with its crash-safe
 * cursor is agent_kernel.c's; event ids, report building and the other helpers both use are
 * agent_util.c's (declared in agent_int.h). Parsing is the parsers' (kernlog.h, nvsmi.h, dcgm.h, ibstat.h); these files
 * decide what is read when, what a report says, and what survives a crash. */
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

/* The bus id of GPU index idx in the table, or NULL. */
static const char *ag_gpu_bus(const struct agent *a, int idx)
{
	for (size_t i = 0; i < a->ngpus; i++)
		if (a->gpus[i].index == idx)
			return a->gpus[i].bus;
	return NULL;
}

/* ------------------------------------------------------------------ tool detectors */

/* Gets a tool's output: from the file (is_auto 0: path), or by running argv with the probe
 * timeout. Returns 0 with the bytes in b, 1 when the tool timed out, or <0; on 1 and <0,
 * reason (ProbeTimeout, ProbeFailed, Unparseable) and msg say why. Sets nothing. */
static int ag_tool_run(struct agent *a, int is_auto, const char *path, char *const argv[],
		       size_t max, struct buf *b, const char **reason, char *msg, size_t msglen)
{
	char err[512];
	if (!is_auto) {
		b->max = max + 1;
		int rc = buf_read_file(b, path, max, err, sizeof(err));
		if (rc < 0) {
			*reason = rc == FP_ETOOBIG ? "Unparseable" : "ProbeFailed";
			snprintf(msg, msglen, "%s", err);
		}
		return rc;
	}
	struct proc_result res;
	int rc = probe_run(argv, a->cfg.probe_timeout_s * 1000, max, &res, err, sizeof(err));
	if (rc < 0) {
		*reason = "ProbeFailed";
		snprintf(msg, msglen, "%s", err);
	} else if (res.timed_out) {
		*reason = "ProbeTimeout";
		snprintf(msg, msglen, "%s did not answer in %ld s", argv[0],
			 a->cfg.probe_timeout_s);
		rc = 1;
	} else if (res.truncated) {
		*reason = "Unparseable";
		snprintf(msg, msglen, "%s wrote more than %zu bytes", argv[0], max);
		rc = FP_EIO;
	} else if (!res.exited || res.exit_status != 0) {
		*reason = "ProbeFailed";
		if (res.exited)
			snprintf(msg, msglen, "%s exited with status %d", argv[0], res.exit_status);
		else
			snprintf(msg, msglen, "%s killed by signal %d", argv[0], res.signaled);
		rc = FP_EIO;
	} else {
		buf_reset(b);
		b->max = max + 1;
		if (res.out.len)
			buf_append(b, res.out.data, res.out.len);
	}
	proc_result_release(&res);
	return rc;
}

/* The probe_timeout:<detector> finding (source agent) for a tool that did not answer. */
static void ag_timeout_finding(struct agent *a, enum agent_det d, const char *msg,
			       struct agent_finding *f)
{
	log_warn("agent probe timed out node=%s detector=%s timeout_s=%ld", a->cfg.node,
		 agent_det_name(d), a->cfg.probe_timeout_s);
	memset(f, 0, sizeof(*f));
	snprintf(f->source, sizeof(f->source), "agent");
	snprintf(f->code, sizeof(f->code), "probe_timeout:%s", agent_det_name(d));
	f->gpu_index = -1;
	/* A level like any finding: one event per episode of timeouts. */
	snprintf(f->message, sizeof(f->message), "%s", msg);
}

/* ag_tool_run for detector d: returns 0 with the bytes in b; otherwise sets the detector not
 * live (ProbeTimeout, ProbeFailed, Unparseable) and returns <0, or 1 on a timeout with the
 * probe_timeout finding in *f. */
static int ag_tool_output(struct agent *a, enum agent_det d, int is_auto, const char *path,
			  char *const argv[], size_t max, struct buf *b, struct agent_finding *f)
{
	const char *reason = NULL;
	char msg[AGENT_MAX_MESSAGE + 1];
	int rc = ag_tool_run(a, is_auto, path, argv, max, b, &reason, msg, sizeof(msg));
	if (rc == 0)
		return 0;
	agent_set(a, d, 0, "unknown", reason, "%s", msg);
	if (rc == 1)
		ag_timeout_finding(a, d, msg, f);
	return rc;
}

/* `nvidia-smi nvlink --status` (the --nvlink-status file, or run with --nvidia-smi auto):
 * appends its nvlink:link_down findings (nvsmi_nvlink_findings) to f[*n] (room for
 * NVSMI_MAX_GPUS). Output with nothing but blanks is a node without NVLink: no finding.
 * Returns 0; 1 on a timeout (*tf = probe_timeout:nvidia-smi); <0 when the output could not be
 * had or read (*reason, msg). *unknown |= a truncated report. */
static int ag_probe_nvlink(struct agent *a, struct agent_finding *f, size_t *n, int *unknown,
			   struct agent_finding *tf, const char **reason, char *msg, size_t msglen)
{
	int is_file = a->cfg.nvlink_status != NULL;
	if (!is_file && !a->nvsmi_auto)
		return 0;
	struct buf b;
	buf_init(&b, NVSMI_MAX_INPUT + 1);
	char *argv[] = {a->nvsmi_path, "nvlink", "--status", NULL};
	int rc = ag_tool_run(a, !is_file, a->cfg.nvlink_status, argv, NVSMI_MAX_INPUT, &b, reason,
			     msg, msglen);
	if (rc == 1)
		ag_timeout_finding(a, AGENT_DET_NVSMI, msg, tf);
	if (rc != 0)
		goto out;
	size_t i = 0;
	while (i < b.len && strchr(" \t\r\n", b.data[i]))
		i++;
	if (i == b.len)
		goto out;
	struct nvsmi_nvlink_report *r = xcalloc(1, sizeof(*r));
	char err[512];
	int prc = nvsmi_nvlink_status_parse(b.data, b.len, r, err, sizeof(err));
	if (prc < 0) {
		*reason = prc == FP_EIO ? "ProbeFailed" : "Unparseable";
		snprintf(msg, msglen, "nvlink --status: %s", err);
		rc = prc;
	} else {
		int unk = 0;
		*n += nvsmi_nvlink_findings(r, f + *n, NVSMI_MAX_GPUS, &unk);
		*unknown |= unk;
	}
	free(r);
out:
	buf_release(&b);
	return rc;
}

/* Sets a parsed detector's status from its n findings f: "unhealthy" when one is a fault,
 * else "unknown" when the output cannot prove health, else "ok". Notices (finding.h) are
 * events but never make a detector unhealthy: a healthy H100 shows power:brake_slowdown
 * (break report 4b #6). */
static void ag_set_result(struct agent *a, enum agent_det d, const struct agent_finding *f,
			  size_t n, int unknown)
{
	size_t faults = 0;
	for (size_t i = 0; i < n; i++)
		faults += !f[i].notice;
	size_t notices = n - faults;
	if (faults)
		agent_set(a, d, 1, "unhealthy", NULL, "%zu finding%s", faults,
			  faults == 1 ? "" : "s");
	else if (unknown)
		agent_set(a, d, 1, "unknown", NULL,
			  "the output cannot prove health (values unknown "
			  "or truncated)");
	else if (notices)
		agent_set(a, d, 1, "ok", NULL, "%zu notice%s, no fault", notices,
			  notices == 1 ? "" : "s");
	else
		agent_set(a, d, 1, "ok", NULL, "%s", "");
}

/* The nvidia-smi detector: `nvidia-smi -q -x` (or the --nvidia-smi file), then `nvidia-smi
 * nvlink --status` (or the --nvlink-status file). Either query failing makes the detector not
 * live with that query's reason; the findings of a query that worked are still taken (so an
 * episode it showed does not end). */
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
	int prc = nvsmi_parse(b.data ? b.data : "", b.len, r, err, sizeof(err));
	if (prc < 0) {
		/* FP_EIO: the output holds the tool's own failure line (a file as much as a run) */
		agent_set(a, AGENT_DET_NVSMI, 0, "unknown",
			  prc == FP_EIO ? "ProbeFailed" : "Unparseable", "%s", err);
	} else {
		int unknown = 0;
		agent_gpu_table(a, r);
		agent_idle_sample(a, r);
		size_t n = nvsmi_findings(r, a->expected_gpus, f + *nf, AG_DET_ROOM - 1, &unknown);
		const char *reason = NULL;
		char msg[AGENT_MAX_MESSAGE + 1];
		size_t n0 = n;
		int nrc = ag_probe_nvlink(a, f + *nf, &n, &unknown, &tf, &reason, msg, sizeof(msg));
		/* nvlink --status names GPUs by index only: the bus id from the -q just read. */
		for (size_t k = n0; k < n; k++) {
			const char *bus = ag_gpu_bus(a, f[*nf + k].gpu_index);
			if (bus && !f[*nf + k].pci_bus_id[0])
				snprintf(f[*nf + k].pci_bus_id, sizeof(f[*nf + k].pci_bus_id), "%s",
					 bus);
		}
		*nf += n;
		if (nrc == 1)
			f[(*nf)++] = tf;
		if (nrc != 0)
			agent_set(a, AGENT_DET_NVSMI, 0, "unknown", reason, "%s", msg);
		else
			ag_set_result(a, AGENT_DET_NVSMI, f + *nf - n, n, unknown);
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
	int timed_out = 0;
	/* In a child under the probe timeout: a hung driver call is probe_timeout:nvml, not a
	 * stalled agent. */
	if (nvml_query_timed(a->nvml, a->cfg.probe_timeout_s * 1000, r, &timed_out, err,
			     sizeof(err)) < 0) {
		if (timed_out) {
			char msg[128];
			snprintf(msg, sizeof(msg), "NVML did not answer in %ld s",
				 a->cfg.probe_timeout_s);
			agent_set(a, AGENT_DET_NVML, 0, "unknown", "ProbeTimeout", "%s", msg);
			ag_timeout_finding(a, AGENT_DET_NVML, msg, &f[(*nf)++]);
		} else {
			agent_set(a, AGENT_DET_NVML, 0, "unknown", "ProbeFailed", "%s", err);
		}
	} else {
		int unknown = 0;
		agent_gpu_table(a, r);
		size_t n = nvsmi_findings(r, a->expected_gpus, f + *nf, AG_DET_ROOM - 1, &unknown);
		*nf += n;
		ag_set_result(a, AGENT_DET_NVML, f + *nf - n, n, unknown);
	}
	free(r);
}

static void ag_probe_dcgm(struct agent *a, struct agent_finding *f, size_t *nf)
{
	if (!a->configured[AGENT_DET_DCGM])
		return;
	struct buf b;
	buf_init(&b, DCGM_MAX_INPUT + 1);
	/* -j: the JSON form (DCGM's dcgmi "-j, --json"); the one real `dcgmi health -c` sample in
	 * tests/data/dcgm is JSON (DCGM issue #263), and dcgm_health_findings reads both forms. */
	char *argv[] = {a->dcgmi_path, "health", "-c", "-j", NULL};
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
		char derr[256];
		if (dcgm_tool_error(s, b.len, derr, sizeof(derr))) {
			agent_set(a, AGENT_DET_DCGM, 0, "unknown", "ProbeFailed", "%s", derr);
			buf_release(&b);
			return;
		}
		size_t n = diag ? dcgm_diag_findings(s, b.len, f + *nf, AG_DET_ROOM - 1, &unknown)
				: dcgm_health_findings(s, b.len, f + *nf, AG_DET_ROOM - 1,
						       &unknown);
		*nf += n;
		if (unknown && n == 0)
			agent_set(a, AGENT_DET_DCGM, 0, "unknown", "Unparseable",
				  "the output is not a dcgmi %s report", diag ? "diag" : "health");
		else
			ag_set_result(a, AGENT_DET_DCGM, f + *nf - n, n, unknown);
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
		int prc = ibstat_parse(b.data ? b.data : "", b.len, r, err, sizeof(err));
		if (prc < 0) {
			/* FP_EIO: ibstat's own "ibpanic:" line, in a file as when it is run */
			agent_set(a, AGENT_DET_IBSTAT, 0, "unknown",
				  prc == FP_EIO ? "ProbeFailed" : "Unparseable", "%s", err);
		} else {
			int unknown = 0;
			size_t n = ibstat_findings_flags(r,
							 a->cfg.ethernet_not_fabric
								 ? IBSTAT_ETHERNET_NOT_FABRIC
								 : 0,
							 f + *nf, AG_DET_ROOM - 1, &unknown);
			*nf += n;
			ag_set_result(a, AGENT_DET_IBSTAT, f + *nf - n, n, unknown);
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
	json_object_set_new(doc, "bootId", agent_str(a->cfg.boot_id));
	json_object_set_new(doc, "epoch", json_string(a->epoch));
	json_object_set_new(doc, "epochKnown", json_boolean(a->epoch_known));
	json_object_set_new(doc, "lastSince", json_integer(a->last_since));
	json_t *arr = json_array();
	for (size_t i = 0; i < a->neps; i++) {
		const struct ag_episode *e = &a->eps[i];
		json_t *o = json_object();
		json_object_set_new(o, "code", json_string(e->code));
		json_object_set_new(o, "bus", json_string(e->bus));
		json_object_set_new(o, "key", agent_str(e->key));
		json_object_set_new(o, "source", json_string(e->source));
		json_object_set_new(o, "gpuIndex", json_integer(e->gpu_index));
		json_object_set_new(o, "message", agent_str(e->message));
		json_object_set_new(o, "since", json_integer(e->since));
		json_object_set_new(o, "epoch", json_string(e->epoch));
		json_object_set_new(o, "id", json_string(e->id));
		json_object_set_new(o, "dets", json_integer(e->dets));
		json_object_set_new(o, "notice", json_boolean(e->notice));
		json_object_set_new(o, "sent", json_boolean(e->sent));
		json_object_set_new(o, "ended", json_boolean(e->ended));
		if (e->job[0])
			json_object_set_new(o, "job", json_string(e->job));
		json_array_append_new(arr, o);
	}
	json_object_set_new(doc, "episodes", arr);
	if (a->idle.sig[0])
		json_object_set_new(doc, "gpuIdle",
				    json_pack("{s:s, s:s, s:I, s:b, s:o}", "sig", a->idle.sig,
					      "job", a->idle.job, "since",
					      (json_int_t)a->idle.since, "fired", a->idle.fired,
					      "message", agent_str(a->idle.message)));
	char *body = jsonx_dumps(doc);
	json_decref(doc);
	char *path = ag_eps_path(a);
	char err[512];
	int rc = outbox_write_durable(path, body, strlen(body), err, sizeof(err));
	free(body);
	free(path);
	if (rc < 0) {
		log_error("agent findings state write failed node=%s err=\"%s\"", a->cfg.node, err);
		agent_local_fail(a, "findings state write failed", err);
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
		snprintf(e->source, sizeof(e->source), "%s",
			 (v = jsonx_str(o, "source")) ? v : "agent");
		snprintf(e->message, sizeof(e->message), "%s",
			 (v = jsonx_str(o, "message")) ? v : "");
		snprintf(e->epoch, sizeof(e->epoch), "%s", (v = jsonx_str(o, "epoch")) ? v : "");
		snprintf(e->id, sizeof(e->id), "%s", id);
		json_int_t gi = json_integer_value(json_object_get(o, "gpuIndex"));
		e->gpu_index = gi >= 0 && gi < 1024 ? (int)gi : -1;
		e->since = json_integer_value(json_object_get(o, "since"));
		e->dets = (unsigned)json_integer_value(json_object_get(o, "dets")) &
			  ((1u << AGENT_DET__COUNT) - 1);
		e->notice = json_is_true(json_object_get(o, "notice"));
		e->sent = sent;
		e->ended = !same_boot || json_is_true(json_object_get(o, "ended"));
		v = jsonx_str(o, "job");
		if (v && agent_job_validate(v, err, sizeof(err)) == 0)
			snprintf(e->job, sizeof(e->job), "%s", v);
	}
	/* The idle detector's run, in the same boot only (a reboot ended every job). */
	json_t *gi = json_object_get(doc, "gpuIdle");
	const char *gsig = jsonx_str(gi, "sig"), *gjob = jsonx_str(gi, "job");
	const char *gmsg = jsonx_str(gi, "message");
	json_int_t gsince = json_integer_value(json_object_get(gi, "since"));
	if (same_boot && gsig && strlen(gsig) == AG_IDLE_SIG_LEN - 1 && gjob &&
	    agent_job_validate(gjob, err, sizeof(err)) == 0 && gsince >= 0) {
		snprintf(a->idle.sig, sizeof(a->idle.sig), "%s", gsig);
		snprintf(a->idle.job, sizeof(a->idle.job), "%s", gjob);
		a->idle.since = gsince;
		a->idle.fired = json_is_true(json_object_get(gi, "fired"));
		snprintf(a->idle.message, sizeof(a->idle.message), "%s", gmsg ? gmsg : "");
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

/* Ends every live episode of a fault (a remediation was recorded): what is still shown is
 * new. When before_ms > 0, only those that started before it. A notice's episode goes on: a
 * remediation does not make a power brake new, only a new boot or the state clearing does
 * (break report 4b #6). Returns how many ended. */
static size_t ag_eps_end_all(struct agent *a, int64_t before_ms)
{
	size_t n = 0;
	for (size_t i = 0; i < a->neps; i++)
		if (!a->eps[i].ended && !a->eps[i].notice &&
		    strcmp(a->eps[i].code, AG_IDLE_CODE) != 0 &&
		    (before_ms <= 0 || a->eps[i].since < before_ms)) {
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
	int64_t now = agent_now(a);
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
		log_info(
			"agent remediation recorded node=%s epoch=%s: findings still shown are new "
			"events ended=%zu",
			a->cfg.node, newest[0] ? newest : "-", n);
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
	int64_t now = agent_now(a);
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
					 "reported yet",
					 a->cfg.node, AG_MAX_EPISODES, f[i].code);
				continue;
			}
			e = &a->eps[a->neps++];
			memset(e, 0, sizeof(*e));
			snprintf(e->code, sizeof(e->code), "%s", f[i].code);
			snprintf(e->bus, sizeof(e->bus), "%s", f[i].pci_bus_id);
			snprintf(e->key, sizeof(e->key), "%s", f[i].key);
			snprintf(e->source, sizeof(e->source), "%s",
				 strcmp(f[i].source, "agent") == 0 ? "agent" : agent_det_name(d));
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
		e->notice = f[i].notice;
	}
	return changed;
}

/* The probe round with the node document (may be NULL). heartbeat 0: put no report when no
 * finding event is waiting (--once puts its heartbeat after reading the kernel log). */
static int ag_probe_round_doc(struct agent *a, json_t *doc, int heartbeat)
{
	struct agent_finding *f = xcalloc(AG_MAX_FINDINGS, sizeof(*f));
	size_t nf = 0, mark = 0;
	int rc = 0, changed = ag_apply_node(a, doc);
	a->round++;
	a->util_known = 0;
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
	/* GPUs idle under a job: its episode is the detector's own (job list + run of idle
	 * samples), shown every round while it lasts; any other of its episodes has ended. */
	struct agent_finding idf;
	int shown = 0;
	changed |= agent_idle_round(a, doc, &idf, &shown);
	if (shown)
		changed |= ag_take_findings(a, &idf, 1, AGENT_DET_NVSMI);
	for (size_t k = 0; k < a->neps; k++) {
		struct ag_episode *e = &a->eps[k];
		if (e->ended || strcmp(e->code, AG_IDLE_CODE) != 0)
			continue;
		if (shown && strcmp(e->key, idf.key) == 0) {
			if (!e->job[0])
				snprintf(e->job, sizeof(e->job), "%s", a->idle.job);
		} else {
			e->ended = 1;
			changed = 1;
		}
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
			if ((rc = agent_put_report(a)) < 0)
				goto out;
			put++;
		}
		struct ag_event *ev = agent_new_event(a);
		memcpy(ev->id, e->id, sizeof(ev->id));
		snprintf(ev->source, sizeof(ev->source), "%s", e->source);
		snprintf(ev->code, sizeof(ev->code), "%s", e->code);
		ev->gpu_index = e->gpu_index;
		snprintf(ev->bus, sizeof(ev->bus), "%s", e->bus);
		ev->time_ms = e->since;
		snprintf(ev->message, sizeof(ev->message), "%s", e->message);
		snprintf(ev->job, sizeof(ev->job), "%s", e->job);
		ev->ep = (int)k;
	}
	/* A heartbeat only when nothing is waiting: pending reports carry the detectors too, and
	 * heartbeats must not pile up while the API is down. */
	if (a->nev > 0 || (heartbeat && put == 0 && a->ob.npending == 0))
		if ((rc = agent_put_report(a)) < 0)
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
	int rc = ag_probe_round_doc(a, doc, 1);
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
		log_info("agent report accepted node=%s seq=%" PRIu64
			 " accepted=%" JSON_INTEGER_FORMAT " duplicates=%" JSON_INTEGER_FORMAT,
			 a->cfg.node, seq, acc, dup);
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
			agent_local_fail(a, "outbox read failed", err);
			rc = FP_EIO;
			break;
		}
		long status = 0;
		buf_reset(&ans);
		if (a->tp.report(a->tp.arg, body.data ? body.data : "", body.len, &status, &ans) <
		    0) {
			rc = FP_EIO;
			break;
		}
		if (status >= 200 && status < 300) {
			ag_log_answer(a, seq, &ans);
			if ((rc = outbox_remove(&a->ob, seq, err, sizeof(err))) < 0) {
				log_error("agent outbox remove failed node=%s err=\"%s\"",
					  a->cfg.node, err);
				agent_local_fail(a, "outbox remove failed", err);
				rc = FP_EIO;
				break;
			}
			a->st.reports_sent++;
			continue;
		}
		if (status == 409 || status == 429 || status >= 500 || status == 401 ||
		    status == 403 || status == 404 || status < 400) {
			log_warn("agent report kept for a retry node=%s seq=%" PRIu64 " status=%ld "
				 "answer=\"%.300s\"",
				 a->cfg.node, seq, status, ans.data ? ans.data : "");
			rc = FP_EAGAIN;
			break;
		}
		log_error("agent report rejected node=%s seq=%" PRIu64
			  " status=%ld answer=\"%.300s\" "
			  "kept=%s/%020" PRIu64 ".json",
			  a->cfg.node, seq, status, ans.data ? ans.data : "", a->ob.rejected_dir,
			  seq);
		if ((rc = outbox_reject(&a->ob, seq, status, ans.data, err, sizeof(err))) < 0) {
			log_error("agent outbox reject failed node=%s err=\"%s\"", a->cfg.node,
				  err);
			agent_local_fail(a, "outbox reject failed", err);
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
	struct proc_result r;
	char err[512];
	log_info("agent gpu reset node=%s op=%s gpu=%s", a->cfg.node, op, gpu);
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
	proc_result_release(&r);
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
	log_info("agent gpu reset reported node=%s op=%s succeeded=%d status=%ld", a->cfg.node, op,
		 a->reset_pending_ok, status);
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
		agent_set(a, d, 0, "unknown", "NotConfigured", "no --%s given",
			  d == AGENT_DET_DCGM ? "dcgmi" : agent_det_name(d));
		return 0;
	}
	if (strcmp(flag, "auto") == 0) {
		*is_auto = 1;
		if (probe_which(tool, path, pathlen) < 0) {
			agent_set(a, d, 0, "unknown", "NotConfigured", "%s not found in PATH",
				  tool);
			return 0;
		}
	} else {
		snprintf(path, pathlen, "%s", flag);
	}
	a->configured[d] = 1;
	agent_set(a, d, 1, "unknown", NULL, "not probed yet");
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
	if (c->gpu_idle_minutes < 0 || c->gpu_idle_minutes > 1440)
		return fp_errf(FP_EINVAL, err, errlen, "gpu idle minutes: %ld out of 0..1440",
			       c->gpu_idle_minutes);
	if (c->gpu_idle_util_pct < 0 || c->gpu_idle_util_pct > 100)
		return fp_errf(FP_EINVAL, err, errlen, "gpu idle utilisation: %d %% out of 0..100",
			       c->gpu_idle_util_pct);
	if (c->nvlink_status && (!*c->nvlink_status || !c->nvidia_smi))
		return fp_errf(FP_EINVAL, err, errlen, "nvlink status: %s",
			       *c->nvlink_status ? "needs the nvidia-smi detector (--nvidia-smi)"
						 : "needs a file");
	char why[256];
	if (c->job && agent_job_validate(c->job, why, sizeof(why)) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "job: %s", why);
	if (name_validate("node", c->node, why, sizeof(why)) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "%s", why);
	return 0;
}

int agent_new(const struct agent_config *cfg, const struct agent_transport *tp, struct agent **out,
	      char *err, size_t errlen)
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
		agent_set(a, AGENT_DET_KERNEL, 1, "ok", NULL, "%s", "");
	} else {
		agent_set(a, AGENT_DET_KERNEL, 0, "unknown", "NotConfigured",
			  "no --kernel-log given");
	}
	ag_resolve(a, AGENT_DET_NVSMI, cfg->nvidia_smi, "nvidia-smi", a->nvsmi_path,
		   sizeof(a->nvsmi_path), &a->nvsmi_auto);
	ag_resolve(a, AGENT_DET_DCGM, cfg->dcgmi, "dcgmi", a->dcgmi_path, sizeof(a->dcgmi_path),
		   &a->dcgmi_auto);
	ag_resolve(a, AGENT_DET_IBSTAT, cfg->ibstat, "ibstat", a->ibstat_path,
		   sizeof(a->ibstat_path), &a->ibstat_auto);
	if (!cfg->nvml) {
		agent_set(a, AGENT_DET_NVML, 0, "unknown", "NotConfigured", "no --nvml given");
	} else {
		char nerr[512];
		int nrc = nvml_open(cfg->nvml_lib, &a->nvml, nerr, sizeof(nerr));
		if (nrc == FP_ENOTFOUND) {
			agent_set(a, AGENT_DET_NVML, 0, "unknown", "NotConfigured", "%s", nerr);
		} else if (nrc < 0) {
			a->configured[AGENT_DET_NVML] = 1;
			agent_set(a, AGENT_DET_NVML, 0, "unknown", "ProbeFailed", "%s", nerr);
			log_warn("agent nvml unusable node=%s err=\"%s\"", cfg->node, nerr);
		} else {
			a->configured[AGENT_DET_NVML] = 1;
			agent_set(a, AGENT_DET_NVML, 1, "unknown", NULL, "not probed yet");
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
	agent_kernel_close(a);
	kernlog_parser_free(a->kp);
	nvml_close(a->nvml);
	outbox_close(&a->ob);
	free(a->skip);
	free(a->dur_skip);
	free(a->ev);
	free(a->eps);
	free(a);
}

const struct agent_stats *agent_stats(const struct agent *a)
{
	return &a->st;
}

const struct agent_det_state *agent_detector(const struct agent *a, enum agent_det d)
{
	return (unsigned)d < AGENT_DET__COUNT ? &a->det[d] : NULL;
}

size_t agent_outbox_events(const struct agent *a)
{
	return a->ob.nevents;
}

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
	/* The probes first: their GPU table gives kernel events their GPU index, and every report
	 * then carries the detectors as probed, not "not probed yet". Their findings are put now
	 * (sent by the kernel loop's flushes); the heartbeat waits for the end. */
	size_t puts0 = a->st.reports_put;
	json_t *doc = ag_fetch_node(a);
	rc = ag_probe_round_doc(a, doc, 0);
	if (rc == 0)
		ag_reset_with_doc(a, doc);
	json_decref(doc);
	if (rc < 0)
		return rc;
	int probe_put = a->st.reports_put != puts0;
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
	/* The probe round's heartbeat (as when it ran last): when it had no finding to put and
	 * nothing is waiting, so the last report the server gets has the detectors' state. */
	if (!probe_put && a->ob.npending == 0 && (rc = agent_put_report(a)) < 0)
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
		int64_t now = agent_now(a);
		/* Probes before the kernel read, so the first kernel events already have the GPU
		 * table (agent_gpu_index). */
		if (now >= next_probe) {
			json_t *doc = ag_fetch_node(a);
			ag_probe_round_doc(a, doc, 1);
			ag_reset_with_doc(a, doc);
			json_decref(doc);
			next_probe = now + a->cfg.interval_s * 1000;
		}
		agent_read_kernel(a, 0);
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
