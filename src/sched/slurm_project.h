/* sched/slurm_project.h - the projection of one fleetplane node onto its Slurm node (issue 10
 * part 3, DESIGN.md principle 1): what Slurm should be told, or what fleetplane should import,
 * decided from the node as fleetplane holds it and the node as `scontrol show node` printed it.
 * Pure: no I/O, no clock, no memory of its own. sched/slurm_sync.c runs it on every node each
 * pass and carries out the answer.
 *
 * Who made a drain is read from Slurm itself, so it survives restarts of fleetplane: a drain
 * whose reason starts with exactly SLURM_PROJECT_PREFIX ("fleetplane: ", byte for byte, at the
 * start) is fleetplane's; any other drain - no reason, "FLEETPLANE: x", "see fleetplane: x",
 * "fleetplane:x" - is foreign, made by a person or another tool, and is never resumed by
 * fleetplane. The rules, first match wins (S = the Slurm node, N = the fleetplane node):
 *
 *   S absent                                    NONE     (the node is not in this cluster)
 *   S's state unknown, or DRAIN left open       UNSURE   (change nothing: fail closed)
 *   S drained, foreign reason                   IMPORT_HOLD slurm:<user>, Slurm's reason and
 *                                               time; NONE when N already has that hold with
 *                                               that reason
 *   S not drained by someone else, N has a      RELEASE_HOLD of that hold (an operator resumed
 *   slurm:* hold                                the node in Slurm: the hold's owner ended it)
 *   S drained by fleetplane, N schedulable      RESUME
 *   S drained by fleetplane, N not schedulable  DRAIN with the current reason when Slurm's
 *                                               differs (the reason is refreshed), else NONE
 *   S not drained, N not schedulable            DRAIN "fleetplane: <owner>: <reason>" of the
 *                                               most important hold, or "fleetplane: <phase>"
 *                                               when N has no hold (a phase reason)
 *   S not drained, N schedulable                NONE
 *
 * "Schedulable" is core/model.h's node_schedulable (DESIGN.md: phase available or in_service
 * and no hold). While Slurm has a foreign drain fleetplane does not overwrite its reason with
 * its own (that would make the drain fleetplane's, and fleetplane would later resume it).
 *
 * An imported hold: owner "slurm:<user>" with the user's letters, digits and ._-@ kept (any
 * other byte '_'), "slurm:unknown" when Slurm did not say who; reason Slurm's, sanitised, or
 * "drained in Slurm" when it has none; since Slurm's reason time read as UTC (scontrol prints
 * its host's local time, so a host off UTC shifts it), or now when Slurm gave none. */
#ifndef FP_SCHED_SLURM_PROJECT_H
#define FP_SCHED_SLURM_PROJECT_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "sched/slurm_node.h"

#define SLURM_PROJECT_PREFIX "fleetplane: "
/* Longest reason handed to Slurm or put on an imported hold, NUL included. */
#define SLURM_PROJECT_REASON_MAX 256
/* Longest hold owner "slurm:<user>", NUL included. */
#define SLURM_PROJECT_OWNER_MAX 80

#define SLURM_ACTION_MAP(X)                  \
	X(SLURM_ACT_NONE, "none")            \
	X(SLURM_ACT_DRAIN, "drain")          \
	X(SLURM_ACT_RESUME, "resume")        \
	X(SLURM_ACT_IMPORT_HOLD, "import")   \
	X(SLURM_ACT_RELEASE_HOLD, "release") \
	X(SLURM_ACT_UNSURE, "unsure")

enum slurm_action {
#define X(e, s) e,
	SLURM_ACTION_MAP(X)
#undef X
};

/* Why NONE or UNSURE was answered, for the SchedulerInSync condition and logs. */
enum slurm_project_why {
	SLURM_WHY_OK = 0,       /* Slurm agrees with fleetplane, or the action makes it agree */
	SLURM_WHY_ABSENT,       /* the node is not in Slurm's list */
	SLURM_WHY_STATE_UNKNOWN /* Slurm's state was not understood or leaves DRAIN open */
};

struct slurm_decision {
	enum slurm_action action;
	enum slurm_project_why why;
	/* DRAIN: the reason for Slurm ("fleetplane: health: xid 79"); IMPORT_HOLD: the hold's
	 * reason (Slurm's, sanitised); "" otherwise */
	char reason[SLURM_PROJECT_REASON_MAX];
	/* IMPORT_HOLD, RELEASE_HOLD: the hold's owner, "slurm:<user>"; "" otherwise */
	char owner[SLURM_PROJECT_OWNER_MAX];
	/* IMPORT_HOLD: when Slurm says the drain was made (wall ms; Slurm's reason time read as
	 * UTC), or the now_ms given when Slurm did not say */
	int64_t since_ms;
};

/* Decides for node n (required) and its Slurm node sn (NULL: absent from Slurm's list) at wall
 * time now_ms (only used as the fallback since of an imported hold). Always fills *out; the
 * same inputs always give the same answer. */
void slurm_project(const struct node *n, const struct slurm_node *sn, int64_t now_ms,
		   struct slurm_decision *out);

/* 1 when a Slurm reason marks a drain fleetplane made (starts with SLURM_PROJECT_PREFIX). */
int slurm_project_is_ours(const char *reason);

/* Writes the reason fleetplane gives Slurm for n into out (outlen bytes, at most
 * SLURM_PROJECT_REASON_MAX useful): "fleetplane: <owner>: <reason>" of n's most important hold
 * other than slurm:* ones - health, then operator:*, then lifecycle, then rollout, then any
 * other owner; ties go to the oldest since, then the first listed - or "fleetplane: <phase>"
 * when there is none. Control bytes and runs of blanks become one space, leading and trailing
 * blanks go, and a long reason is cut at a UTF-8 character boundary. Returns out. */
char *slurm_project_reason(const struct node *n, char *out, size_t outlen);

/* Copies s into out (outlen > 0) as Slurm reasons are compared and stored: control bytes
 * (newline, tab, DEL, ...) and runs of blanks become one space, no blank at either end, cut at
 * a UTF-8 character boundary to fit. Returns out. */
char *slurm_project_sanitize(const char *s, char *out, size_t outlen);

/* The action's name ("drain"); static. */
const char *slurm_action_name(enum slurm_action a);

#endif
