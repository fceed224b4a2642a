/* sched/slurm_cli.h - the Slurm client tools as fleetplane runs them (issue 10, part 2): scontrol
 * by argv through base/proc.h (never a shell), one deadline and one output bound per command,
 * node lists read from the one-line records of `scontrol show node -o` (sched/slurm_node.h: 22.05
 * has no `scontrol --json`, tests/data/slurm/scontrol-show-node-json.stderr), and drain, resume,
 * down and undrain of many nodes in one `scontrol update NodeName=<hostlist>` each. It is the real
 * client below the Slurm backend's ops; it keeps no state of its own beyond its configuration,
 * so one struct slurm_cli may be used from several threads at once.
 *
 * The children get the caller's environment as it was at slurm_cli_new, with SLURM_CONF set (when
 * configured), SLURM_TIME_FORMAT=standard (reason times as "2026-12-02T01:34:37", scontrol(1)
 * ENVIRONMENT VARIABLES) and LC_ALL=C, built once and passed as envp: setenv is never called. */
#ifndef FP_SCHED_SLURM_CLI_H
#define FP_SCHED_SLURM_CLI_H

#include <stddef.h>

#include "sched/slurm_job.h"
#include "sched/slurm_node.h"
#include "sched/slurm_sync.h"

#define SLURM_CLI_TIMEOUT_MS 10000L        /* default per command */
#define SLURM_CLI_MAX_OUT (16u << 20)      /* default stdout bound, bytes */
#define SLURM_CLI_MAX_ERR 4096u            /* stderr kept, bytes */
#define SLURM_CLI_MAX_NODES 100000u        /* records one node list may hold */
#define SLURM_CLI_MAX_HOSTLIST (64u << 10) /* bytes of one NodeName= value */
#define SLURM_CLI_REASON_MAX 512u          /* bytes of a reason, see slurm_cli_update */
#define SLURM_CLI_MAX_PATH 1024u           /* bytes of bindir and slurm_conf */

struct slurm_cli_config {
	const char *slurm_conf; /* SLURM_CONF for the tools; NULL inherits the caller's */
	const char *bindir;     /* directory holding scontrol; NULL searches the caller's PATH */
	long timeout_ms;        /* per command, 1 .. 3,600,000; 0 = SLURM_CLI_TIMEOUT_MS */
	size_t max_out;         /* stdout bound per command, 1 .. 64 MiB; 0 = SLURM_CLI_MAX_OUT */
};

struct slurm_cli;

/* Creates a client from cfg (borrowed: its strings are copied). Refused with FP_EINVAL (err says
 * which): a bound out of range, a slurm_conf or bindir that is empty, not absolute, longer than
 * SLURM_CLI_MAX_PATH or holding a control byte. Returns 0 and *out (free with slurm_cli_free), or
 * the code and *out = NULL. Nothing is run. */
int slurm_cli_new(const struct slurm_cli_config *cfg, struct slurm_cli **out, char *err,
		  size_t errlen);
/* Frees c; NULL is a no-op. */
void slurm_cli_free(struct slurm_cli *c);

/* Lists every node slurmctld knows with `scontrol -o -F show node` (scontrol(1) OPTIONS -o
 * "--oneliner", -F "--future"; COMMANDS "show"). -F is given so that FUTURE nodes (configured,
 * not yet in service: the ones fleetplane is onboarding) are listed too; without it they are
 * absent and would read as nodes Slurm does not know. Every line is one record parsed by
 * slurm_node_parse; blank lines are skipped; the single line "No nodes in the system" is an
 * empty cluster (0 nodes, *out NULL).
 *
 * On success *out is a calloc'ed array of *n nodes in scontrol's order (owned by the caller:
 * free(*out)). Errors, with *out NULL and *n 0 (fleetplane's view must then stay as it was):
 *   FP_ENOTFOUND  scontrol could not be executed;
 *   FP_ETIMEDOUT  no exit within timeout_ms (the process group was killed);
 *   FP_ETOOBIG    stdout over max_out, or more than SLURM_CLI_MAX_NODES records;
 *   FP_EPERM      scontrol exited non-zero saying permission/access denied;
 *   FP_EIO        any other non-zero exit or a signal; err quotes the first line of stderr (else
 *                 stdout), at most 200 bytes, control and non-ASCII bytes as \xNN;
 *   FP_EPARSE     empty output, a NUL byte, a record slurm_node_parse refuses (err: "line N:
 *                 <parser's error>"), or one node name twice.
 * A record whose State= is not understood parses (state.unknown = 1): the caller decides. */
int slurm_cli_nodes(struct slurm_cli *c, struct slurm_node **out, size_t *n, char *err,
		    size_t errlen);

enum slurm_update_action {
	SLURM_UPDATE_DRAIN = 0, /* State=DRAIN: no new jobs; running jobs finish */
	SLURM_UPDATE_RESUME,    /* State=RESUME: back to service (clears DRAIN, DOWN, FAIL) */
	SLURM_UPDATE_DOWN,      /* State=DOWN: running jobs are killed */
	SLURM_UPDATE_UNDRAIN,   /* State=UNDRAIN: clears DRAIN only, the base state stays */
};

/* Sets the state act on names[0..n-1] (node names, borrowed) with `scontrol update
 * NodeName=<hostlist> State=<act> [Reason=<reason>]` (scontrol(1) "NODES - SPECIFICATIONS FOR
 * UPDATE COMMAND"): the names are compressed into one ranged hostlist (hostlist_compress: sorted,
 * duplicates dropped) and sent in one command, or, when that hostlist is longer than
 * SLURM_CLI_MAX_HOSTLIST bytes, in several, each taking names in the caller's order while their
 * plain length (a name, a comma and room for brackets) stays within the bound. "Reason=<reason>"
 * is one argv element: no shell, no quoting. n == 0 runs nothing and returns 0.
 *
 * reason is required for DRAIN and DOWN (scontrol refuses without: "You must specify a reason
 * when DOWNING or DRAINING a node. Request denied") and optional (NULL) for RESUME and UNDRAIN.
 * Refused with FP_EINVAL before anything runs: a bad act, a missing reason, a reason that is
 * empty or all blanks, longer than SLURM_CLI_REASON_MAX bytes, holding a control byte (tab and
 * newline included) or DEL, starting or ending with '"' (scontrol strips one quote at each end,
 * src/scontrol/update_node.c), ending with ']' (it would read back as Slurm's " [user@time]"),
 * or holding one of the keys slurm_node_parse ends a reason at (" Comment=", " Extra=", ...:
 * it would not read back whole); a name hostlist_push refuses (empty, too long, a separator, a
 * bracket, a control byte); more than HOSTLIST_MAX_NAMES names (FP_ETOOBIG). Slurm 22.05 sets no
 * limit of its own: a 70,000-byte reason is stored and printed whole, and `Reason="quoted"` reads
 * back as `quoted` (tests/data/slurm/SOURCES.md, snapshot 3). SLURM_CLI_REASON_MAX is
 * fleetplane's: a reason stays whole in struct slurm_node's buffer, and a record stays far below
 * SLURM_NODE_MAX_TEXT.
 *
 * Errors of a run as slurm_cli_nodes's (FP_ENOTFOUND, FP_ETIMEDOUT, FP_EPERM, FP_EIO with the
 * stderr line: "slurm_update error: Invalid node name specified" for a name Slurm does not
 * know, tests/data/slurm/scontrol-update-nosuch.stderr). With several commands the first failure
 * stops the rest and err says which command failed ("command 2 of 3: ..."); the earlier ones took
 * effect. */
int slurm_cli_update(struct slurm_cli *c, const char *const *names, size_t n,
		     enum slurm_update_action act, const char *reason, char *err, size_t errlen);

/* Lists the jobs that hold nodes with squeue (sched/slurm_job.h: the argv, the format and the
 * parser). On success *out is an array of *n jobs (free with slurm_jobs_free); errors as
 * slurm_cli_nodes's (FP_ENOTFOUND, FP_ETIMEDOUT, FP_ETOOBIG, FP_EPERM, FP_EIO) and the parser's
 * FP_EPARSE, with *out NULL and *n 0. squeue is run from bindir, or PATH, as scontrol is. */
int slurm_cli_jobs(struct slurm_cli *c, struct slurm_job **out, size_t *n, char *err,
		   size_t errlen);
/* Runs `scontrol reconfigure` (scontrol(1) COMMANDS "reconfigure": every daemon re-reads its
 * configuration; in 22.05 added or removed nodes also need a restart). Errors as
 * slurm_cli_nodes's run errors. Returns 0 when it exited 0. */
int slurm_cli_reconfigure(struct slurm_cli *c, char *err, size_t errlen);
/* What `scontrol ping` says (scontrol(1) COMMANDS "ping"). */
struct slurm_ping {
	int up;                           /* 1: the primary slurmctld answered */
	char host[HOSTLIST_MAX_NAME + 1]; /* the primary's host as printed */
	int backups;                      /* backup controllers listed */
	int backups_up;                   /* of them, those UP */
};

/* Runs `scontrol ping` and reads its lines "Slurmctld(primary) at HOST is UP|DOWN" and
 * "Slurmctld(backupN) at HOST is UP|DOWN" (slurm-22.05 src/scontrol/scontrol.c _ping_slurmctld);
 * lines of '*' (its banner when every controller is down) are skipped. The exit status is not
 * used when the primary's line is there: 22.05 exits 1 when one is DOWN
 * (tests/data/slurm/scontrol-ping-down.txt). out is always written.
 * Errors: FP_ENOTFOUND, FP_ETIMEDOUT, FP_ETOOBIG as slurm_cli_nodes; FP_EIO when it exited
 * non-zero with nothing on stdout (err quotes stderr); FP_EPARSE for any other line, no
 * primary line, or two. Returns 0 when the primary's state was read, up or down. */
int slurm_cli_ping(struct slurm_cli *c, struct slurm_ping *out, char *err, size_t errlen);

/* The parsers slurm_cli_nodes and slurm_cli_ping run on a tool's stdout s (len bytes, no NUL
 * needed), pure and fuzzed (tests/fuzz/fuzz_slurm_cli.c), with the same results and FP_EPARSE
 * and FP_ETOOBIG errors as those calls; *out is NULL (nodes) or zeroed (ping) after an error. */
int slurm_cli_parse_nodes(const char *s, size_t len, struct slurm_node **out, size_t *n, char *err,
			  size_t errlen);
int slurm_cli_parse_ping(const char *s, size_t len, struct slurm_ping *out, char *err,
			 size_t errlen);

/* Fills *out with the Slurm backend's ops (sched/slurm_sync.h) over c (borrowed: c must outlive
 * the backend): list_nodes is slurm_cli_nodes, update is slurm_cli_update with State=DRAIN and
 * the reason, or State=RESUME without one, list_jobs is slurm_cli_jobs, reconfigure slurm_cli_reconfigure. `fleetplane serve --slurm` runs the backend on it. */
void slurm_cli_ops(struct slurm_cli *c, struct slurm_ops *out);

#endif
