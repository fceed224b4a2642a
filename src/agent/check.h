/* agent/check.h - `fleetplane agent check`: the one-shot node check Slurm runs as Prolog (before
 * each job) and HealthCheckProgram (periodically), issue 10 part 5; docs/slurm.md "Checks Slurm
 * calls". Local probes reuse the agent's parsers (nvidia-smi -q / -q -x through nvsmi.h, ibstat
 * through ibstat.h): a GPU count below the expected one, an uncorrectable ECC error or a pending
 * row remap / page retirement, an InfiniBand port down. From the API (GET /v1/nodes/{name}): an
 * open `health` hold, AgentAlive and DetectorsLive. A fault found locally is reported as health
 * events through the agent's report route (POST /v1/nodes/{name}:report), so fleetplane's health
 * controller decides by its policy whether the node is held; the check never drains behind
 * fleetplane's back (how the Prolog keeps Slurm's own "Prolog error" drain from racing
 * fleetplane's: check_run's comment).
 *
 * It sits in the agent layer: HTTP and scontrol are the caller's (struct check_transport;
 * cmd_agent.c implements them), so the decisions are unit-testable with a fake API. */
#ifndef FP_AGENT_CHECK_H
#define FP_AGENT_CHECK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CHECK_MAX_LINES 64
#define CHECK_LINE_LEN 512
#define CHECK_FAST_PROBE_MS 1000L    /* --fast: per probe (nvidia-smi, ibstat) */
#define CHECK_PROBE_MS 10000L        /* without --fast, as the agent's --probe-timeout default */
#define CHECK_FAST_HOLD_WAIT_MS 800L /* --fast: how long a decided hold is waited for */
#define CHECK_HOLD_WAIT_MS 5000L
#define CHECK_HOLD_POLL_MS 50L

enum check_mode {
	CHECK_MODE_MANUAL = 0, /* a person or a script: exit 3 when fleetplane cannot be asked */
	CHECK_MODE_PROLOG,     /* Slurm Prolog: 1 keeps the job off the node, see check_run */
	CHECK_MODE_HEALTHCHECK /* Slurm HealthCheckProgram: Slurm ignores the exit status */
};
/* "manual", "prolog", "healthcheck"; check_mode_parse: 0 or -1 for another word. */
const char *check_mode_name(enum check_mode m);
int check_mode_parse(const char *s, enum check_mode *out);

/* buf_read_file for the check's inputs, refusing (FP_EIO, "PATH is not a regular file") a
 * FIFO, socket, directory or device before opening it: a check run by Slurm's Prolog must not
 * block on a pipe nobody writes (opening a FIFO waits for a writer, without bound). */
struct buf;
int check_read_file(struct buf *b, const char *path, size_t max, char *err, size_t errlen);

/* Process exit codes (docs/cli.md, docs/slurm.md). */
enum {
	CHECK_EXIT_PASS = 0,   /* no fault; the node may take the job */
	CHECK_EXIT_FAULT = 1,  /* the node must not take jobs (held, or a fault fleetplane cannot be
				* told of) */
	CHECK_EXIT_USAGE = 2,  /* a flag or the config file is wrong */
	CHECK_EXIT_NO_API = 3, /* manual and healthcheck only: nothing found locally, but fleetplane
				* could not be asked (unreachable or an error answer) */
};

struct check_config {
	const char *node;        /* required: the node name (name_validate) */
	const char *boot_id;     /* required: part of the event ids (agent_id_finding) */
	const char *nvidia_smi;  /* a file of nvidia-smi -q / -q -x output, "auto", or NULL */
	const char *ibstat;      /* a file of ibstat output, "auto", or NULL */
	int ethernet_not_fabric; /* 1: ibstat's Ethernet link-layer ports are not RDMA fabric
				  * (IBSTAT_ETHERNET_NOT_FABRIC), as the agent's flag */
	int expected_gpus;       /* > 0: the expected count; 0: the node's spec.gpus.count */
	enum check_mode mode;
	long probe_timeout_ms;    /* per probe run ("auto"), 1 .. 3,600,000 */
	long hold_wait_ms;        /* after a "hold" decision, the node document is read every
				* CHECK_HOLD_POLL_MS until the hold shows, for at most this long
				* (0 .. 60,000): the controller writes it after the report's answer */
	int64_t (*wall_ms)(void); /* NULL = CLOCK_REALTIME; event times */
};

/* How the check reaches fleetplane and Slurm. */
struct check_transport {
	/* GET /v1/nodes/{node}: 0 and *doc (new reference) on a 200; FP_EIO when the API could not
	 * be reached (connect refused, timeout); another <0 for an error answer (404, 403, ...) with
	 * one line in err. */
	int (*get_node)(void *arg, json_t **doc, char *err, size_t errlen);
	/* POST body to /v1/nodes/{node}:report: 0 and *answer (new reference) on a 200; FP_EIO
	 * unreachable; another <0 for an error answer, with one line in err. */
	int (*report)(void *arg, const json_t *body, json_t **answer, char *err, size_t errlen);
	/* Prolog only (NULL elsewhere): drains the node in Slurm with the reason fleetplane's Slurm
	 * sync gives a node document doc (sched/slurm_project.h slurm_project_reason: "fleetplane:
	 * health: <hold reason>"), before the Prolog exits non-zero. 0 or <0 with err. */
	int (*drain)(void *arg, const json_t *doc, char *err, size_t errlen);
	void *arg;
};

enum check_level {
	CHECK_LVL_FAULT = 0, /* keeps jobs off the node (when fleetplane holds it, or cannot say) */
	CHECK_LVL_WARN,      /* printed; never keeps a job off by itself */
	CHECK_LVL_INFO       /* what the check did: reported, held, drained */
};

struct check_line {
	enum check_level level;
	char code[48]; /* a finding's code ("gpu:count_mismatch"), or "hold:health",
			* "api:unreachable", "agent:not_alive", "probe:nvidia-smi", ... */
	char text[CHECK_LINE_LEN];
};

struct check_result {
	struct check_line lines[CHECK_MAX_LINES];
	size_t nlines;
	int faults;    /* local faults found (non-notice findings) */
	int api;       /* 1: the node document was read */
	int held;      /* 1: a health hold is on the node (before or after the report) */
	int reported;  /* events reported (the API answered 200) */
	int drained;   /* prolog: the drain was set with fleetplane's reason */
	int exit_code; /* CHECK_EXIT_* */
};

/* Runs the check once (blocking: each probe bounded by cfg->probe_timeout_ms, each API call by
 * the transport's own timeout) and fills *out. Returns out->exit_code:
 *
 *  - CHECK_EXIT_FAULT when the node has a `health` hold (read before the report, or placed by
 *    the health controller for the findings just reported: a "hold" decision that is not dry
 *    run, then the node document read until the hold shows, at most hold_wait_ms; a hold
 *    decided but not yet seen refuses too, without the drain below), or when a local fault was found and fleetplane could not be told
 *    (fail safe: a GPU fault must not take a job because the API is down). A local fault that
 *    fleetplane was told of but that its policy does not hold on (a count not yet reached, dry
 *    run) passes: fleetplane decides, not the check.
 *  - In prolog mode, before returning CHECK_EXIT_FAULT for a held node, the transport's drain
 *    sets the Slurm drain with fleetplane's own reason. slurm.conf(5) "Prolog": a non-zero exit
 *    sets the node DRAIN and requeues the job held; Slurm 22.05 leaves the reason of a node that
 *    is already DRAIN as it is (observed: tests/integration/test_slurm_prolog.sh), so the node
 *    shows "fleetplane: health: ..." and the Slurm sync sees its own drain, never an import.
 *    When fleetplane could not be told, there is no fleetplane reason to set: Slurm drains with
 *    "Prolog error", which the sync imports as a slurm:<user> hold once the API is back.
 *  - CHECK_EXIT_NO_API (manual, healthcheck) when no fault was found but the node document could
 *    not be read; in prolog mode that passes (CHECK_EXIT_PASS): an API outage must not drain the
 *    cluster, and a node fleetplane holds is already drained in Slurm by the sync.
 *  - CHECK_EXIT_PASS otherwise (warnings may be listed: agent not alive, detectors down, a
 *    probe that failed or could not prove health).
 * Events carry no job (a Prolog runs before its job: the job is not the cause) and their ids are
 * agent_id_finding(boot id, finding, 0, the node's remediation epoch): the same fault seen by
 * every run of one boot is one event (a duplicate for the server), and a new one after a
 * remediation. Returns CHECK_EXIT_USAGE with one line when cfg is unusable. */
int check_run(const struct check_config *cfg, const struct check_transport *tp,
	      struct check_result *out);

/* Writes out's lines, one a line, "<fault|warning|info> <code>: <text>", and a last line
 * "check: pass|fail|no-api node=<node> mode=<mode> ..." to f. */
void check_print(const struct check_result *out, const struct check_config *cfg, FILE *f);

#endif
