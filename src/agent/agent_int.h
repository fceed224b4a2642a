/* agent_int.h - private interface between the parts of the node agent: agent.c (detectors,
 * finding episodes, sending, gpu_reset, the loop), agent_kernel.c (kernel log reading with its
 * crash-safe cursor, rotation and /dev/kmsg) and agent_util.c (the helpers both use: detector
 * state, report building and putting, event slots, the GPU table, the emitted-id memory). The
 * calls go one way: agent.c -> agent_kernel.c -> agent_util.c, and agent.c -> agent_util.c.
 * Nothing outside src/agent/agent*.c includes it; the public interface is agent.h. */
#ifndef FP_AGENT_AGENT_INT_H
#define FP_AGENT_AGENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/agent.h"
#include "agent/finding.h"
#include "agent/kernlog.h"
#include "agent/nvsmi.h"
#include "agent/outbox.h"

#define AG_CHUNK 65536   /* kernel file read size; a longer line is cut here */
#define AG_RECENT_IDS 64 /* emitted kernel ids remembered for the cursor */
#define AG_DET_ROOM 128  /* findings per tool query in one round */
#define AG_MAX_FINDINGS (4 * AG_DET_ROOM + NVSMI_MAX_GPUS + 1) /* + nvlink --status, timeout */
#define AG_MAX_EPISODES 1024 /* finding episodes kept (live, or ended but unsent) */
#define AG_EPOCH_LEN 48
#define AG_NODE_BACKOFF_MAX_MS 30000
#define AG_ANSWER_MAX ((size_t)64 << 10)
#define AG_IDLE_CODE "slurm:gpu_idle"
#define AG_IDLE_SIG_LEN 33 /* 32 hex digits + NUL */

/* One event as it goes into a report. */
struct ag_event {
	char id[AGENT_ID_LEN];
	char source[16];
	char code[FINDING_CODE_LEN];
	int gpu_index;
	char bus[FINDING_BUS_ID_LEN];
	long pid;
	char process[64];
	char job[65]; /* the pid's Slurm job (agent_pid_job); "" = the agent's --job */
	int64_t time_ms;
	char message[KERNLOG_MSG_LEN];
	char raw[KERNLOG_RAW_LEN];
	int kernel;     /* a kernel event: remembered for the cursor once put */
	uint64_t first; /* kernel: pos of its first line */
	int ep;         /* a finding: index of its episode; -1 none */
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
	int64_t since;            /* Unix ms, unique per agent (last_since) */
	char epoch[AG_EPOCH_LEN]; /* the remediation epoch at its start */
	char id[AGENT_ID_LEN];
	unsigned dets;       /* detectors that showed it (1 << enum agent_det) */
	unsigned long round; /* the last probe round that showed it */
	int notice;          /* a notice (finding.h): a recorded remediation does not end it */
	int sent, ended;
	char job[65]; /* the event's job (slurm:gpu_idle: the idle job); "" = the agent's --job */
};

/* The GPUs-idle-under-a-job detector (agent_idle.c): the current job list and run of idle
 * samples. Kept in findings.state with the episodes (same boot only). */
struct ag_idle {
	char sig[AG_IDLE_SIG_LEN]; /* hex BLAKE2b-128 of status.workload's jobs + jobsTotal; "" */
	char job[65];              /* its first job id */
	int64_t since;             /* Unix ms of the run's first idle sample; 0: no run */
	int fired;                 /* the run reached --gpu-idle-minutes: its finding is shown */
	char message[FINDING_MSG_LEN];
};

struct ag_line {
	uint64_t pos; /* file: byte offset of the line; kmsg: sequence number */
	char text[KERNLOG_RAW_LEN];
};

struct ag_recent {
	uint64_t pos; /* first line's pos */
	char id[AGENT_ID_LEN];
};

enum {
	KSRC_NONE = 0,
	KSRC_FILE,
	KSRC_KMSG
};

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
	/* PCI bus id -> GPU index, from the latest nvidia-smi -q or NVML report that parsed
	 * (agent_gpu_table); kernel events get their index from it */
	struct ag_gpu {
		char bus[FINDING_BUS_ID_LEN];
		int index;
	} gpus[NVSMI_MAX_GPUS];
	size_t ngpus;

	/* kernel source */
	int ksrc;
	int kfd;
	uint64_t kdev, kino;
	uint64_t kpos; /* file: next byte to read; kmsg: last seq read */
	int kmsg_have_seq;
	struct kernlog_parser *kp;
	struct ag_line ring[AGENT_CURSOR_BACKUP];
	size_t ring_n, ring_head; /* ring_head: index of the oldest */
	struct ag_recent recent[AG_RECENT_IDS];
	size_t nrecent;
	char (*skip)[AGENT_ID_LEN]; /* ids to skip on resume, from the cursor */
	size_t nskip;
	char legacy_boot[160]; /* a cursor without "ids": 2: its boot id (v1 ids); "" none */
	/* The last durable cursor, where reading goes back to after a failed write. */
	uint64_t dur_pos;
	char (*dur_skip)[AGENT_ID_LEN];
	size_t ndur_skip;
	int krotated;             /* the path names another file: finish this one, then switch */
	uint64_t kmsg_resume_seq; /* kmsg: records with seq < this are not fed */
	int kmsg_resume;
	int kpaused;    /* reading stopped by the outbox bound */
	int keof_quiet; /* the last pass ended at EOF without new bytes */
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
	char epoch[AG_EPOCH_LEN]; /* newest status.remediationHistory[].at, "" none */
	int epoch_known;          /* epoch was read from the node document (now or before) */
	int64_t last_since;

	/* slurm:gpu_idle: the state, and this round's utilisation sample (agent_idle_sample) */
	struct ag_idle idle;
	int util_known;
	size_t util_n;
	int util[NVSMI_MAX_GPUS], util_index[NVSMI_MAX_GPUS];

	/* the node document GET: not before node_next_ms after a failure */
	int64_t node_next_ms;
	long node_backoff_ms;

	/* the last local write failure; events found but not in the outbox because of it */
	char local_err[512];
	int local_failed;
	size_t unsent_kernel;
	/* --once after a failed write: kernel events are only counted (not put) from then on;
	 * kcounted is how many, reset by the rollback (agent_kernel.c) */
	int kcounting;
	size_t kcounted;
};

/* ---- agent_util.c */

/* Wall time, Unix ms (cfg.wall_ms when set, else CLOCK_REALTIME). */
int64_t agent_now(struct agent *a);
/* Sets detector d's state; message from fmt (may be NULL). */
void agent_set(struct agent *a, enum agent_det d, int live, const char *status, const char *reason,
	       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Records a local write failure (logged by the caller). */
void agent_local_fail(struct agent *a, const char *what, const char *err);
/* Strips trailing '\n' and '\r' in place; returns the new length. */
size_t agent_chomp(char *s, size_t n);
/* A JSON string of s, bounded (AGENT_MAX_MESSAGE) and lossy on bad UTF-8; new reference. */
json_t *agent_str(const char *s);
/* Puts a report of the waiting events into the outbox and clears them (0 or FP_EIO). */
int agent_put_report(struct agent *a);
/* Replaces the bus id -> index table with the GPUs of r that have both (nvidia-smi's index,
 * the order of its output; NVML's device index: the same numbering, nvidia-smi(1) "-i"). */
void agent_gpu_table(struct agent *a, const struct nvsmi_report *r);
/* The index of the GPU at PCI bus id bus ("0000:3b:00.0", case ignored) in the table, or -1
 * when the table has none (no nvidia-smi/NVML report yet, or another bus). */
int agent_gpu_index(const struct agent *a, const char *bus);
/* The next free event slot, zeroed (caller keeps nev < AGENT_MAX_REPORT_EVENTS). */
struct ag_event *agent_new_event(struct agent *a);

/* Remembers an emitted kernel event id (by its first line's pos) for the cursor. */
void agent_remember(struct agent *a, uint64_t pos, const char *id);

/* ---- agent_idle.c */

/* Takes this round's utilisation sample from a parsed nvidia-smi report: only a whole report
 * (not truncated, "Attached GPUs" equal to its GPU sections) whose every GPU has a known
 * gpu_util sets util_known; anything else leaves it 0 (unknown). The caller clears util_known
 * at the start of each round. */
void agent_idle_sample(struct agent *a, const struct nvsmi_report *r);
/* One round of the detector with the node document (NULL: not read this round) and the
 * sample: while status.workload is busy/draining with a job id and every GPU's sample is at
 * or below cfg.gpu_idle_util_pct since a sample cfg.gpu_idle_minutes ago, fires once per
 * episode (job list + run of idle samples). An episode ends when a sample is above the
 * threshold, the job list (or jobsTotal) changes or the workload is no longer busy/draining;
 * an unreadable document or an unknown sample changes nothing. While fired, fills *f (source
 * agent, code AG_IDLE_CODE, no GPU, key "jobs=<sig>", the job in a->idle.job) and sets *shown
 * = 1, every round, as a level. Returns 1 when the state changed (findings.state to save). */
int agent_idle_round(struct agent *a, const json_t *doc, struct agent_finding *f, int *shown);

/* ---- agent_kernel.c */

/* Closes the kernel log source (no-op when none is open). */
void agent_kernel_close(struct agent *a);

#endif
