/* check.c - `fleetplane agent check` (agent/check.h): one pass of local probes (nvidia-smi and
 * ibstat through the agent's parsers), the node document's hold and agent conditions, a report
 * of the local faults to the health controller, and the exit code Slurm's Prolog and
 * HealthCheckProgram read. No state is kept between runs: the event ids make repeated runs one
 * event per fault and boot. */
#include "agent/check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/ibstat.h"
#include "agent/nvsmi.h"
#include "agent/probe.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/timefmt.h"
#include "core/codec.h"

#include "base/banned.h"

#define CK_MAX_FINDINGS 128 /* per tool */
#define CK_EPOCH_LEN 48

static const char *const mode_names[] = {"manual", "prolog", "healthcheck"};

const char *check_mode_name(enum check_mode m)
{
	return (unsigned)m < 3 ? mode_names[m] : "?";
}

int check_mode_parse(const char *s, enum check_mode *out)
{
	for (int i = 0; i < 3; i++)
		if (s && strcmp(s, mode_names[i]) == 0) {
			*out = (enum check_mode)i;
			return 0;
		}
	return -1;
}

__attribute__((format(printf, 4, 5))) static void
ck_line(struct check_result *r, enum check_level lvl, const char *code, const char *fmt, ...)
{
	if (r->nlines >= CHECK_MAX_LINES)
		return;
	struct check_line *l = &r->lines[r->nlines++];
	l->level = lvl;
	snprintf(l->code, sizeof(l->code), "%s", code);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->text, sizeof(l->text), fmt, ap);
	va_end(ap);
	/* One finding, one line: a tool's message or an API answer never breaks it. */
	for (char *p = l->text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
}

static void ck_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0)
		;
}

static int64_t ck_now(const struct check_config *cfg)
{
	if (cfg->wall_ms)
		return cfg->wall_ms();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int check_read_file(struct buf *b, const char *path, size_t max, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return fp_errf(FP_EIO, err, errlen, "open %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fp_errf(FP_EIO, err, errlen, "%s is not a regular file", path);
	return buf_read_file(b, path, max, err, errlen);
}

/* A tool's output into b: the file, or the tool from PATH run by argv with the timeout.
 * Returns 0, or <0 with why in msg. */
static int ck_tool(const struct check_config *cfg, const char *spec, const char *tool,
		   char *const args[], size_t max, struct buf *b, char *msg, size_t msglen)
{
	char err[512];
	b->max = max + 1;
	if (strcmp(spec, "auto") != 0) {
		int rc = check_read_file(b, spec, max, err, sizeof(err));
		if (rc < 0)
			snprintf(msg, msglen, "%s", err);
		return rc;
	}
	char path[4096];
	if (probe_which(tool, path, sizeof(path)) < 0) {
		snprintf(msg, msglen, "%s not found in PATH", tool);
		return FP_ENOTFOUND;
	}
	char *argv[4] = {path, NULL, NULL, NULL};
	for (int i = 0; args[i] && i < 2; i++)
		argv[i + 1] = args[i];
	struct proc_result res;
	int rc = probe_run(argv, cfg->probe_timeout_ms, max, &res, err, sizeof(err));
	if (rc < 0) {
		snprintf(msg, msglen, "%s", err);
		return rc;
	}
	if (res.timed_out) {
		snprintf(msg, msglen, "%s did not answer within %ld ms", tool,
			 cfg->probe_timeout_ms);
		rc = FP_ETIMEDOUT;
	} else if (res.truncated) {
		snprintf(msg, msglen, "%s wrote more than %zu bytes", tool, max);
		rc = FP_ETOOBIG;
	} else if (!res.exited || res.exit_status != 0) {
		if (res.exited)
			snprintf(msg, msglen, "%s exited with status %d", tool, res.exit_status);
		else
			snprintf(msg, msglen, "%s killed by signal %d", tool, res.signaled);
		rc = FP_EIO;
	} else {
		buf_reset(b);
		if (res.out.len)
			buf_append(b, res.out.data, res.out.len);
	}
	proc_result_release(&res);
	return rc;
}

/* The faults of one tool's findings into f[*nf] (notices are dropped: healthy GPUs show them),
 * each with a fault line. */
static void ck_take(struct check_result *r, const struct agent_finding *in, size_t n,
		    struct agent_finding *f, size_t *nf, size_t room)
{
	for (size_t i = 0; i < n; i++) {
		if (in[i].notice)
			continue;
		if (in[i].pci_bus_id[0])
			ck_line(r, CHECK_LVL_FAULT, in[i].code, "%s: %s (GPU %s)", in[i].source,
				in[i].message, in[i].pci_bus_id);
		else
			ck_line(r, CHECK_LVL_FAULT, in[i].code, "%s: %s", in[i].source,
				in[i].message);
		r->faults++;
		if (*nf < room)
			f[(*nf)++] = in[i];
	}
}

static void ck_nvsmi(const struct check_config *cfg, int expected, struct check_result *r,
		     struct agent_finding *f, size_t *nf, size_t room)
{
	struct buf b;
	buf_init(&b, NVSMI_MAX_INPUT + 1);
	char msg[512];
	char *args[] = {"-q", "-x", NULL};
	if (ck_tool(cfg, cfg->nvidia_smi, "nvidia-smi", args, NVSMI_MAX_INPUT, &b, msg,
		    sizeof(msg)) < 0) {
		ck_line(r, CHECK_LVL_WARN, "probe:nvidia-smi", "%s", msg);
		buf_release(&b);
		return;
	}
	struct nvsmi_report *rep = xcalloc(1, sizeof(*rep));
	struct agent_finding *tmp = xcalloc(CK_MAX_FINDINGS, sizeof(*tmp));
	char err[512];
	int prc = nvsmi_parse(b.data ? b.data : "", b.len, rep, err, sizeof(err));
	if (prc == FP_EIO) {
		ck_line(r, CHECK_LVL_WARN, "probe:nvidia-smi", "%s", err);
	} else if (prc < 0) {
		ck_line(r, CHECK_LVL_WARN, "probe:nvidia-smi", "not nvidia-smi -q output: %s", err);
	} else {
		int unknown = 0;
		size_t n = nvsmi_findings(rep, expected, tmp, CK_MAX_FINDINGS, &unknown);
		ck_take(r, tmp, n, f, nf, room);
		if (unknown)
			ck_line(r, CHECK_LVL_WARN, "probe:nvidia-smi",
				"the output cannot prove health (a value is unknown or the output "
				"is cut off)");
		if (expected <= 0)
			ck_line(r, CHECK_LVL_WARN, "probe:nvidia-smi",
				"%zu GPUs; no expected count known (node document not read, no "
				"--expected-gpus): the count is not checked",
				rep->ngpus);
	}
	free(tmp);
	free(rep);
	buf_release(&b);
}

static void ck_ibstat(const struct check_config *cfg, struct check_result *r,
		      struct agent_finding *f, size_t *nf, size_t room)
{
	struct buf b;
	buf_init(&b, IBSTAT_MAX_INPUT + 1);
	char msg[512];
	char *args[] = {NULL};
	if (ck_tool(cfg, cfg->ibstat, "ibstat", args, IBSTAT_MAX_INPUT, &b, msg, sizeof(msg)) < 0) {
		ck_line(r, CHECK_LVL_WARN, "probe:ibstat", "%s", msg);
		buf_release(&b);
		return;
	}
	struct ibstat_report *rep = xcalloc(1, sizeof(*rep));
	struct agent_finding *tmp = xcalloc(CK_MAX_FINDINGS, sizeof(*tmp));
	char err[512];
	int prc = ibstat_parse(b.data ? b.data : "", b.len, rep, err, sizeof(err));
	if (prc == FP_EIO) {
		ck_line(r, CHECK_LVL_WARN, "probe:ibstat", "%s", err);
	} else if (prc < 0) {
		ck_line(r, CHECK_LVL_WARN, "probe:ibstat", "not ibstat output: %s", err);
	} else {
		int unknown = 0;
		size_t n = ibstat_findings_flags(rep,
						 cfg->ethernet_not_fabric
							 ? IBSTAT_ETHERNET_NOT_FABRIC
							 : 0,
						 tmp, CK_MAX_FINDINGS, &unknown);
		ck_take(r, tmp, n, f, nf, room);
		if (unknown)
			ck_line(r, CHECK_LVL_WARN, "probe:ibstat",
				"a port's state is missing or the output is cut off");
	}
	free(tmp);
	free(rep);
	buf_release(&b);
}

/* The health hold of a node document, or NULL. */
static const json_t *ck_health_hold(const json_t *doc)
{
	json_t *holds = jsonx_path(doc, "status.holds");
	size_t i;
	json_t *h;
	json_array_foreach(holds, i, h) {
		const char *owner = jsonx_str(h, "owner");
		if (owner && strcmp(owner, "health") == 0)
			return h;
	}
	return NULL;
}

static const json_t *ck_condition(const json_t *doc, const char *type)
{
	json_t *conds = jsonx_path(doc, "status.conditions");
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *t = jsonx_str(c, "type");
		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

/* What the node document says: the hold (a fault line), AgentAlive and DetectorsLive (warnings),
 * the expected GPU count and the remediation epoch (as agent.c's ag_apply_node reads it). */
static void ck_read_doc(const json_t *doc, struct check_result *r, int *expected, char *epoch)
{
	const json_t *h = ck_health_hold(doc);
	if (h) {
		r->held = 1;
		const char *reason = jsonx_str(h, "reason");
		ck_line(r, CHECK_LVL_FAULT, "hold:health", "fleetplane holds the node: %s",
			reason ? reason : "(no reason)");
	}
	static const char *const conds[] = {"AgentAlive", "DetectorsLive"};
	for (int i = 0; i < 2; i++) {
		const json_t *c = ck_condition(doc, conds[i]);
		const char *st = c ? jsonx_str(c, "status") : NULL;
		if (st && strcmp(st, "True") == 0)
			continue;
		const char *why = c ? jsonx_str(c, "reason") : NULL;
		const char *msg = c ? jsonx_str(c, "message") : NULL;
		ck_line(r, CHECK_LVL_WARN, i == 0 ? "agent:not_alive" : "agent:detectors_down",
			"%s is %s%s%s%s%s%s", conds[i], st ? st : "not set", why ? " (" : "",
			why ? why : "", why ? ")" : "", msg && *msg ? ": " : "", msg ? msg : "");
	}
	if (*expected <= 0) {
		json_int_t n = json_integer_value(jsonx_path(doc, "spec.gpus.count"));
		if (n > 0 && n <= NVSMI_MAX_GPUS)
			*expected = (int)n;
	}
	json_t *hist = jsonx_path(doc, "status.remediationHistory");
	size_t i;
	json_t *e;
	json_array_foreach(hist, i, e) {
		const char *at = jsonx_str(e, "at");
		if (at && strlen(at) < CK_EPOCH_LEN && strcmp(at, epoch) > 0)
			snprintf(epoch, CK_EPOCH_LEN, "%s", at);
	}
}

static json_t *ck_report_body(const struct check_config *cfg, const struct agent_finding *f,
			      size_t n, const char *epoch)
{
	json_t *ag = json_pack("{s:s,s:o,s:i}", "version", AGENT_VERSION, "bootId",
			       jsonx_string_lossy(cfg->boot_id), "intervalSeconds", 0);
	json_t *evs = json_array();
	char t[FP_TIME_LEN];
	fp_time_format(ck_now(cfg), t);
	for (size_t i = 0; i < n && i < AGENT_MAX_REPORT_EVENTS; i++) {
		char id[AGENT_ID_LEN];
		agent_id_finding(cfg->boot_id, &f[i], 0, epoch, id);
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", id, "source", f[i].source,
				      "code", f[i].code, "time", t, "message",
				      jsonx_string_lossy(f[i].message));
		if (f[i].gpu_index >= 0 || f[i].pci_bus_id[0]) {
			json_t *g = json_object();
			if (f[i].gpu_index >= 0)
				json_object_set_new(g, "index", json_integer(f[i].gpu_index));
			if (f[i].pci_bus_id[0])
				json_object_set_new(g, "pciBusId", json_string(f[i].pci_bus_id));
			json_object_set_new(o, "gpu", g);
		}
		json_array_append_new(evs, o);
	}
	return json_pack("{s:o,s:o}", "agent", ag, "events", evs);
}

/* Counts the "hold" decisions of a report answer that are not dry run. */
static int ck_holds_decided(const json_t *answer)
{
	int n = 0;
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(answer, "decisions"), i, d) {
		const char *a = jsonx_str(d, "action");
		if (a && strcmp(a, "hold") == 0 && !json_is_true(json_object_get(d, "dryRun")))
			n++;
	}
	return n;
}

static int ck_cfg_ok(const struct check_config *cfg, struct check_result *r)
{
	char why[256];
	if (!cfg->node || name_validate("node", cfg->node, why, sizeof(why)) < 0) {
		ck_line(r, CHECK_LVL_FAULT, "usage", "node: %s", cfg->node ? why : "required");
		return -1;
	}
	if (!cfg->boot_id || !*cfg->boot_id) {
		ck_line(r, CHECK_LVL_FAULT, "usage", "boot id: required");
		return -1;
	}
	if ((unsigned)cfg->mode > CHECK_MODE_HEALTHCHECK || cfg->probe_timeout_ms < 1 ||
	    cfg->hold_wait_ms < 0 || cfg->hold_wait_ms > 60000 ||
	    cfg->probe_timeout_ms > 3600000L || cfg->expected_gpus < 0 ||
	    cfg->expected_gpus > NVSMI_MAX_GPUS) {
		ck_line(r, CHECK_LVL_FAULT, "usage",
			"mode, probe timeout (1..3600000 ms) or expected GPUs (0..%d) out of range",
			NVSMI_MAX_GPUS);
		return -1;
	}
	return 0;
}

int check_run(const struct check_config *cfg, const struct check_transport *tp,
	      struct check_result *out)
{
	memset(out, 0, sizeof(*out));
	if (ck_cfg_ok(cfg, out) < 0)
		return out->exit_code = CHECK_EXIT_USAGE;
	int expected = cfg->expected_gpus;
	char epoch[CK_EPOCH_LEN] = "";
	char err[512] = "";
	json_t *doc = NULL;
	int rc = tp->get_node ? tp->get_node(tp->arg, &doc, err, sizeof(err)) : FP_EIO;
	if (rc == 0 && doc) {
		out->api = 1;
		ck_read_doc(doc, out, &expected, epoch);
	} else if (rc == FP_EIO) {
		ck_line(out, CHECK_LVL_WARN, "api:unreachable",
			"fleetplane could not be reached%s%s", err[0] ? ": " : "", err);
	} else {
		ck_line(out, CHECK_LVL_WARN, "api:error", "the node document could not be read%s%s",
			err[0] ? ": " : "", err);
	}

	size_t room = 2 * CK_MAX_FINDINGS;
	struct agent_finding *f = xcalloc(room, sizeof(*f));
	size_t nf = 0;
	if (cfg->nvidia_smi)
		ck_nvsmi(cfg, expected, out, f, &nf, room);
	if (cfg->ibstat)
		ck_ibstat(cfg, out, f, &nf, room);

	int told = 0, held_unseen = 0;
	if (nf && out->api && tp->report) {
		json_t *body = ck_report_body(cfg, f, nf, epoch);
		json_t *answer = NULL;
		err[0] = '\0';
		rc = tp->report(tp->arg, body, &answer, err, sizeof(err));
		json_decref(body);
		if (rc == 0) {
			told = 1;
			out->reported = (int)(nf < AGENT_MAX_REPORT_EVENTS
						      ? nf
						      : AGENT_MAX_REPORT_EVENTS);
			int holds = ck_holds_decided(answer);
			ck_line(out, CHECK_LVL_INFO, "report",
				"%d findings reported to fleetplane: %" JSON_INTEGER_FORMAT
				" accepted, %" JSON_INTEGER_FORMAT " duplicates, %d hold decisions",
				out->reported,
				json_integer_value(json_object_get(answer, "accepted")),
				json_integer_value(json_object_get(answer, "duplicates")), holds);
			json_decref(answer);
			/* The hold is the health controller's: read it back rather than infer it
			 * (a repeat is a duplicate with no decision while the hold stays). The
			 * controller writes it after answering, so a "hold" decision is waited
			 * for, bounded by hold_wait_ms. */
			int64_t until = ck_now(cfg) + (holds ? cfg->hold_wait_ms : 0);
			for (int tries = 0; !out->held; tries++) {
				json_t *doc2 = NULL;
				if (tries > 0 && ck_now(cfg) >= until)
					break;
				if (tries > 0)
					ck_sleep_ms(CHECK_HOLD_POLL_MS);
				if (tp->get_node(tp->arg, &doc2, err, sizeof(err)) == 0 && doc2) {
					json_decref(doc);
					doc = doc2;
					const json_t *h = ck_health_hold(doc);
					if (h) {
						out->held = 1;
						const char *reason = jsonx_str(h, "reason");
						ck_line(out, CHECK_LVL_INFO, "hold:health",
							"fleetplane held the node: %s",
							reason ? reason : "(no reason)");
					}
				}
				if (!holds)
					break;
			}
			if (!out->held && holds) {
				/* Decided but not yet seen: refuse all the same (fail closed). */
				out->held = 1;
				held_unseen = 1;
				ck_line(out, CHECK_LVL_INFO, "hold:health",
					"fleetplane decided to hold the node; the hold was not in the "
					"node document within %ld ms",
					cfg->hold_wait_ms);
			}
			if (!out->held)
				ck_line(out, CHECK_LVL_INFO, "policy",
					"fleetplane's health policy does not hold the node for these "
					"findings: the node stays in service");
		} else {
			ck_line(out, CHECK_LVL_WARN, rc == FP_EIO ? "api:unreachable" : "api:error",
				"the findings could not be reported%s%s", err[0] ? ": " : "", err);
		}
	}
	free(f);

	int refuse = out->held || (out->faults > 0 && !told);
	if (refuse && out->faults > 0 && !told && !out->held)
		ck_line(out, CHECK_LVL_INFO, "fail-safe",
			"fleetplane was not told of the faults: the node is refused without its "
			"hold%s",
			cfg->mode == CHECK_MODE_PROLOG ? " (Slurm drains it with \"Prolog error\")"
						       : "");
	if (refuse && out->held && !held_unseen && cfg->mode == CHECK_MODE_PROLOG && tp->drain &&
	    doc) {
		err[0] = '\0';
		if (tp->drain(tp->arg, doc, err, sizeof(err)) == 0) {
			out->drained = 1;
			ck_line(out, CHECK_LVL_INFO, "drain",
				"drained in Slurm with fleetplane's reason");
		} else {
			ck_line(out, CHECK_LVL_WARN, "drain", "the Slurm drain failed: %s", err);
		}
	}
	json_decref(doc);
	if (refuse)
		out->exit_code = CHECK_EXIT_FAULT;
	else if (!out->api && cfg->mode != CHECK_MODE_PROLOG)
		out->exit_code = CHECK_EXIT_NO_API;
	else
		out->exit_code = CHECK_EXIT_PASS;
	return out->exit_code;
}

void check_print(const struct check_result *r, const struct check_config *cfg, FILE *f)
{
	static const char *const lvl[] = {"fault", "warning", "info"};
	for (size_t i = 0; i < r->nlines; i++)
		fprintf(f, "%s %s: %s\n", lvl[r->lines[i].level], r->lines[i].code,
			r->lines[i].text);
	const char *verdict = r->exit_code == CHECK_EXIT_PASS     ? "pass"
			      : r->exit_code == CHECK_EXIT_FAULT  ? "fail"
			      : r->exit_code == CHECK_EXIT_NO_API ? "no-api"
								  : "usage";
	fprintf(f, "check: %s node=%s mode=%s faults=%d held=%d reported=%d exit=%d\n", verdict,
		cfg->node ? cfg->node : "-", check_mode_name(cfg->mode), r->faults, r->held,
		r->reported, r->exit_code);
}
