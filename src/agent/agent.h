/* agent/agent.h - the node agent's core loop (`fleetplane agent --node NAME`, issue 4 item 1;
 * docs/agent.md): reads the kernel log (a file followed by offset, or /dev/kmsg records), runs
 * the GPU tool detectors (nvidia-smi file or `nvidia-smi -q -x`, NVML, `dcgmi health -c -j`,
 * `ibstat`) each interval with a timeout, turns what they saw into health events with stable
 * ids, and sends reports (the shape of POST /v1/nodes/{name}:report in docs/api.md) through
 * the on-disk outbox (outbox.h), so nothing is lost while the API is down.
 *
 * It sits in the agent layer: the HTTP side is the caller's (struct agent_transport; cmd_agent.c
 * implements it with the CLI's client), so the loop is unit-testable with a fake transport.
 *
 * Event ids (design contract; [A-Za-z0-9._-], 34 chars): "k-" or "f-" and 32 hex digits of
 * BLAKE2b-128 (libsodium crypto_generichash) over
 *   kernel line from a file: file dev, inode, byte offset of the record's first line, the parsed
 *                            raw first line - not the boot id: a line already sent is the same
 *                            event after a reboot (break report #1);
 *   kernel /dev/kmsg record: boot id, the record's sequence number (kmsg numbers restart at
 *                            each boot);
 *   detector finding:        boot id, code, PCI bus id, finding key, the start of its episode
 *                            (Unix ms) and the node's remediation epoch at that start.
 * A finding is a level: it is one event per episode. An episode of (code, bus id/port, key)
 * starts when a probe first shows it and ends when a detector that showed it runs cleanly and
 * no longer shows it, or when the node's remediation epoch (the newest
 * status.remediationHistory[].at of the node document, read every interval) changes: a fault
 * that survives a remediation, or comes back after it cleared, is a new event (break report
 * #2). A notice (agent_finding.notice: power:brake_slowdown, thermal:sw_slowdown,
 * ecc:sbe_volatile) is not ended by a remediation: it is sent again only when it clears and
 * comes back, or after a new boot; notices never make a detector "unhealthy" (break report 4b
 * #6). Episodes are kept in <state>/findings.state, so a restart does not send an unchanged
 * episode again; a new boot starts every episode afresh.
 * The kernel cursor (<state>/kernel.cursor) moves only after the events it covers are in the
 * outbox; it is kept a few lines behind the read position (so a multi-line record cut by a
 * crash is parsed whole again) together with the ids already emitted from those lines, which
 * are skipped on resume: a crash anywhere neither loses nor repeats an event. An id counts as
 * emitted only once its report is durably in the outbox: when an outbox or cursor write fails
 * (ENOSPC, EROFS, EACCES), reading goes back to the last durable cursor and nothing is lost
 * (break report #4). A cursor written before ids left out the boot id (no "ids": 2) still
 * works: its emitted ids are matched under the old formula with the cursor's boot id. */
#ifndef FP_AGENT_AGENT_H
#define FP_AGENT_AGENT_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/finding.h"
#include "base/buf.h"

#define AGENT_VERSION "0.4.0"
#define AGENT_ID_LEN 35             /* "k-" + 32 hex + NUL */
#define AGENT_MAX_REPORT_EVENTS 256 /* per report (design contract) */
#define AGENT_MAX_MESSAGE 1024      /* bytes of any string sent, NUL excluded */
#define AGENT_CURSOR_BACKUP 8       /* lines (records) the cursor stays behind */

/* The detectors, in report order. */
enum agent_det {
	AGENT_DET_KERNEL = 0,
	AGENT_DET_NVSMI,
	AGENT_DET_NVML,
	AGENT_DET_DCGM,
	AGENT_DET_IBSTAT,
	AGENT_DET__COUNT
};
/* "kernel", "nvidia-smi", "nvml", "dcgm", "ibstat". */
const char *agent_det_name(enum agent_det d);

/* Configuration; strings are borrowed for the agent's lifetime. */
struct agent_config {
	const char *node;          /* required */
	const char *boot_id;       /* required: /proc/sys/kernel/random/boot_id or --boot-id */
	const char *state_dir;     /* required */
	const char *kernel_log;    /* a file (followed), "/dev/kmsg", or NULL (not configured) */
	const char *nvidia_smi;    /* a file of `nvidia-smi -q` / `-q -x` output re-read each
				    * interval, "auto" (run `nvidia-smi -q -x` from PATH), NULL */
	const char *nvlink_status; /* a file of `nvidia-smi nvlink --status` output re-read each
				    * interval; NULL: with nvidia_smi "auto", run `nvidia-smi nvlink
				    * --status` (same timeout), else not read. Needs nvidia_smi. */
	int nvml;                  /* 1: try NVML */
	const char *nvml_lib;      /* NULL = libnvidia-ml.so.1 (tests name another) */
	const char *dcgmi;         /* file of `dcgmi health -c [-j]` / `dcgmi diag` output, "auto"
				    * (run `dcgmi health -c -j` from PATH), NULL */
	const char *ibstat;        /* file of `ibstat` output, "auto", NULL */
	int ethernet_not_fabric;   /* 1: Ethernet link-layer ports of ibstat are not RDMA fabric
				    * (no roce:port_down; IBSTAT_ETHERNET_NOT_FABRIC) */
	int expected_gpus;         /* > 0: expected GPU count; 0: read spec.gpus.count of the node
				    * document through transport->get_node (retried until known) */
	const char *job;           /* attached to every event whose pid's Slurm job is not known
				    * (agent_pid_job); NULL none; agent_job_validate */
	/* Test hook: where /proc is (agent_pid_job reads <proc_root>/<pid>/...); NULL "/proc". */
	const char *proc_root;
	long interval_s;      /* probe/heartbeat interval, 1 .. 86400 */
	long probe_timeout_s; /* per probe, 1 .. 3600 */
	size_t max_buffer;    /* outbox bound in events, 1 .. 10,000,000 */
	int once;             /* agent_run: one pass, then return */
	/* GPUs idle under a Slurm job (agent_idle.c, docs/agent.md): minutes of consecutive
	 * nvidia-smi samples with every GPU at or below gpu_idle_util_pct while the node
	 * document's status.workload is busy/draining with a job, before slurm:gpu_idle is
	 * reported for the job; 0 off, 1 .. 1440. Needs the nvidia-smi detector and get_node. */
	long gpu_idle_minutes;
	int gpu_idle_util_pct; /* 0 .. 100 (percent); 0: only a GPU at 0 % is idle */
	/* Test hook: at most this many kernel lines per read pass (0 = no limit). */
	size_t max_lines_per_pass;
	/* Wall clock, Unix ms; NULL = CLOCK_REALTIME. */
	int64_t (*wall_ms)(void);
	/* Set (by a signal handler) to stop agent_run at the next tick. May be NULL. */
	volatile sig_atomic_t *stop;
};

/* How the agent reaches the API. Every function returns 0 when the API answered (whatever the
 * status) or FP_EIO when it could not be reached or gave no usable answer (connect refused,
 * timeout, transport error) - the agent then keeps the report and retries later. */
struct agent_transport {
	/* POST body (a report, len bytes of JSON) to /v1/nodes/{node}:report. *status = the HTTP
	 * status; answer (reset by the callee, bounded) = the response body or problem text. */
	int (*report)(void *arg, const char *body, size_t len, long *status, struct buf *answer);
	/* GET /v1/nodes/{node}: 0 and *doc (new reference) on a 200; <0 otherwise. May be NULL. */
	int (*get_node)(void *arg, json_t **doc);
	/* POST /v1/nodes/{node}:remediated {"operation","succeeded","message"}. 0 when the API
	 * answered (*status), FP_EIO when unreachable. May be NULL (no agent-side gpu_reset). */
	int (*remediated)(void *arg, const char *operation, int succeeded, const char *message,
			  long *status);
	void *arg;
};

/* The state of one detector as the next report says it. */
struct agent_det_state {
	int live;
	const char *status; /* "ok" | "unhealthy" | "unknown" (static) */
	char reason[24];    /* NotConfigured, ProbeTimeout, ProbeFailed, Unparseable; "" */
	char message[AGENT_MAX_MESSAGE + 1];
};

/* Totals since agent_new, for logs and tests. */
struct agent_stats {
	size_t reports_put, reports_sent, reports_rejected;
	size_t events_put;           /* events written to the outbox */
	size_t accepted, duplicates; /* as the API answered */
	size_t kernel_lines;         /* kernel lines (records) fed to the parser */
	size_t skipped_on_resume;    /* events not put again because the cursor said so */
};

struct agent;

/* Checks cfg (each bound above, the node name and job grammar; err names the field) and opens
 * the outbox, the finding episodes (findings.state), the kernel cursor and NVML (absent NVML is not an error: the detector is NotConfigured). Returns 0 and *out
 * (free with agent_free), FP_EINVAL, or FP_EIO (state dir unusable). tp is copied. */
int agent_new(const struct agent_config *cfg, const struct agent_transport *tp, struct agent **out,
	      char *err, size_t errlen);
void agent_free(struct agent *a);

/* Sends pending reports oldest first until none is left or the API cannot take one now.
 * 200 removes the report; 409, 429, 5xx, 401, 403 and 404 (not the report's fault: a busy or
 * starting server, a token or node to fix) keep it; any other 4xx moves it to rejected/ with the
 * answer. Returns 0 when the outbox is empty, FP_EIO when the API is unreachable, FP_EAGAIN when
 * it answered but kept a report pending, FP_EIO also for a local file error (logged). */
int agent_flush(struct agent *a);
/* (FP_EIO for a local file error sets agent_local_error.) */

/* Reads the kernel log from the cursor to its current end (bounded by the outbox: when it holds
 * max_buffer events reading stops, the cursor stays and the kernel detector's message says so),
 * putting reports of at most AGENT_MAX_REPORT_EVENTS events. final = 1 completes a pending
 * multi-line record at the end (kernlog_flush). When the path names another file (a rename
 * rotation), the old file is read to its end first, and followed until a pass finds nothing
 * new on it (final: at once), then the new file is read from its start. Returns 0 or FP_EIO
 * (outbox/cursor write failed: logged, agent_local_error set, and reading goes back to the
 * last durable cursor so the next pass reads those lines again). */
int agent_read_kernel(struct agent *a, int final);

/* Reads the node document (transport->get_node; after a failure not again for 1 s, doubling to
 * 30 s, like the outbox retries) for the expected GPU count and the remediation epoch, runs
 * every configured probe once, updates the detectors and the finding episodes, and puts one
 * report with the events of new episodes (a heartbeat when there are none and the outbox is
 * empty). Returns 0 or FP_EIO (a local write failed; the episodes stay unsent and are put by a
 * later round). */
int agent_probe_round(struct agent *a);

/* Agent-side gpu_reset rung (design contract "Holds and the ladder"): reads the node document;
 * when it is repairing with status.remediation.rung "gpu_reset" and status.operation names an
 * operation not yet reported, runs `nvidia-smi --gpu-reset -i <status.remediation.gpu>` by argv
 * (nvidia-smi(1), "--gpu-reset"; timeout AGENT_GPU_RESET_TIMEOUT_S) and POSTs :remediated with
 * the outcome. The operation reported last is kept in <state>/gpu-reset.last, so a restart does
 * not reset the GPU again for it. Returns 1 when it reported, 0 when there was nothing to do or
 * the API could not be reached (retried next time; the reset is not run twice in one run).
 * The node document GET backs off as in agent_probe_round. */
#define AGENT_GPU_RESET_TIMEOUT_S 120
int agent_gpu_reset_check(struct agent *a);

/* --once: flush, read the kernel log to its end, one probe round, flush. Returns 0 when the API
 * accepted every report (outbox empty, none rejected), FP_EIO when it could not be reached
 * (reports kept) or a local write failed (agent_local_error says which), FP_EAGAIN when reports
 * were kept for another reason, FP_EINVAL when one was rejected. Follow mode (!cfg->once): ticks every second (kernel read, flush with back-off) and
 * runs a probe round and agent_gpu_reset_check every interval until *cfg->stop; returns 0. */
int agent_run(struct agent *a);

const struct agent_stats *agent_stats(const struct agent *a);
const struct agent_det_state *agent_detector(const struct agent *a, enum agent_det d);
/* Events in the outbox now. */
size_t agent_outbox_events(const struct agent *a);

/* The last local I/O failure (an outbox, cursor or state file write under the state dir:
 * ENOSPC, EROFS, EACCES, ...) as text naming the path, or NULL when the last write succeeded.
 * agent_run (--once) returns FP_EIO with this set when it stopped for a local failure, and
 * *unsent (may be NULL) gets the number of events found but not yet in the outbox (they are
 * read again, or sent from findings.state, next time): with --once, every kernel event from
 * the last durable cursor to the end of the log, read only to be counted after the failure. */
const char *agent_local_error(const struct agent *a, size_t *unsent);

/* The id helpers (exposed for tests). out gets AGENT_ID_LEN bytes incl. NUL. */
void agent_id_file_line(uint64_t dev, uint64_t ino, uint64_t offset, const char *raw,
			char out[AGENT_ID_LEN]);
/* The id of a file line as agents before "ids": 2 cursors computed it (boot id first); used
 * only to match the emitted ids of such a cursor on resume. */
void agent_id_file_line_v1(const char *boot_id, uint64_t dev, uint64_t ino, uint64_t offset,
			   const char *raw, char out[AGENT_ID_LEN]);
void agent_id_kmsg(const char *boot_id, uint64_t seq, char out[AGENT_ID_LEN]);
/* since: the episode's start (Unix ms); epoch: the node's remediation epoch then ("" none). */
void agent_id_finding(const char *boot_id, const struct agent_finding *f, int64_t since,
		      const char *epoch, char out[AGENT_ID_LEN]);

/* Agent-side checks of the names the server validates (exposed for cmd_agent and tests):
 * a node name (core/codec.h name_validate) and a job id (1..64 of [A-Za-z0-9._+-], the
 * report's agent.job rule in docs/api.md). 0 or FP_EINVAL with why in err. */
int agent_job_validate(const char *job, char *err, size_t errlen);

/* The Slurm job of process pid, as the issue asks ("the pid's Slurm job when known"), read
 * from proc_root (NULL "/proc"):
 *  1. <pid>/comm must equal process (the event's process name, compared on the kernel's 15
 *     characters, TASK_COMM_LEN 16 in linux/sched.h) when process is not empty: a log line read
 *     after its process ended may name a pid the kernel has given to another process since;
 *  2. <pid>/cgroup (proc(5), "/proc/pid/cgroup": "hierarchy-ID:controller-list:cgroup-path"
 *     lines, at most 64 KiB read): the first path holding "/job_<digits>" right under a Slurm
 *     directory - cgroup/v1 ".../slurm/uid_<uid>/job_<id>/step_<s>/..." (or "slurm_<node>"
 *     with multiple slurmd), cgroup/v2 ".../slurmstepd.scope/job_<id>/step_<s>/..." (or
 *     "<node>_slurmstepd.scope"), as https://slurm.schedmd.com/cgroup_v2.html ("slurmd
 *     startup", the job_x/step_y hierarchy under slurmstepd.scope) and
 *     https://slurm.schedmd.com/cgroups.html describe them;
 *  3. else SLURM_JOB_ID in <pid>/environ (NUL-separated KEY=VALUE, at most 256 KiB read;
 *     readable only by the process's owner or root), the variable Slurm sets in every task
 *     (srun(1), "OUTPUT ENVIRONMENT VARIABLES").
 * The id must pass agent_job_validate. Returns 1 with job filled (NUL-terminated, at most
 * joblen - 1 bytes), or 0 (pid <= 0, process gone or another one, no Slurm job found). */
int agent_pid_job(const char *proc_root, long pid, const char *process, char *job, size_t joblen);

#endif
