/* sched/slurm_state.h - a Slurm node state, read from every form Slurm prints it in, and the
 * questions the projection asks of it (is there work on the node? is it drained?).
 *
 * Forms (names from Slurm's src/common/slurm_protocol_defs.c, slurm-22.05 and later:
 * node_state_string, node_state_string_compact, node_state_string_complete, the node_states[]
 * and node_state_flags[] tables; the suffixes from sinfo(1) "NODE STATE CODES"):
 *   complete   `scontrol show node` State= since 21.08, `sinfo -o %StateComplete`: a base state
 *              and every flag, "IDLE+DRAIN", "MIXED+COMPLETING", "IDLE+CLOUD+POWERED_DOWN";
 *   pre-21.08  `scontrol show node` State= before 21.08: a long word and the flags CLOUD,
 *              COMPLETING, DRAIN/FAIL, POWER/POWERING_DOWN: "DOWN*+DRAIN", "ALLOCATED+DRAIN";
 *   long       `sinfo -o %T`: one word and at most one suffix, "drained", "draining@", "idle~";
 *   compact    `sinfo -o %t` (sinfo's default STATE column): "drng@", "fail*", "mix-", "alloc+";
 *   JSON       `scontrol show node --json` / `sinfo --json` (22.05, openapi v0.0.37/38):
 *              "state": "idle" and "state_flags": ["DRAIN"]; from 23.02 (data_parser):
 *              "state": ["IDLE", "DRAIN"].
 * Case does not matter (sinfo lower-cases). The suffixes: '*' not responding, '~' powered down,
 * '#' powering up, '!' power down pending, '%' powering down, '$' maintenance reservation, '@'
 * reboot requested, '^' reboot issued, '-' planned, '+' (after ALLOC/ALLOCATED) completing.
 *
 * The long and compact forms hide flags: one word with one suffix stands for many states
 * (node_state_string prints the first that applies), so "down*" may be COMPLETING too and
 * "fail" may be MIXED. What a form leaves open is kept in `unsure`, and the predicates answer
 * only what the text proves. Anything not understood sets `unknown`: then the state never reads
 * as idle, drained or free of jobs (DESIGN.md principle 8: fail closed).
 *
 * Pure; bounded (SLURM_STATE_MAX_TEXT bytes, SLURM_STATE_MAX_TOKENS tokens); fuzzed by
 * tests/fuzz/fuzz_slurm_state.c. */
#ifndef FP_SCHED_SLURM_STATE_H
#define FP_SCHED_SLURM_STATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define SLURM_STATE_MAX_TEXT 512
#define SLURM_STATE_MAX_TOKENS 32

/* The base state (Slurm's NODE_STATE_BASE values). SLURM_BASE_NONE: the text does not name one
 * ("drng", "drain", "fail", "maint", "boot", "inval" stand for several). SLURM_BASE_UNKNOWN is
 * Slurm's own UNKNOWN (slurmctld has not heard from the node yet), not a parse failure. */
enum slurm_base {
	SLURM_BASE_NONE = 0,
	SLURM_BASE_UNKNOWN,
	SLURM_BASE_DOWN,
	SLURM_BASE_IDLE,
	SLURM_BASE_ALLOCATED,
	SLURM_BASE_ERROR,
	SLURM_BASE_MIXED,
	SLURM_BASE_FUTURE,
};

/* Flag bits (Slurm's NODE_STATE_* flags, named as node_state_flags[] names them). */
#define SLURM_NF_DRAIN (1u << 0)
#define SLURM_NF_COMPLETING (1u << 1)
#define SLURM_NF_NOT_RESPONDING (1u << 2)   /* '*' */
#define SLURM_NF_POWERED_DOWN (1u << 3)     /* '~'; pre-21.08 "+POWER" */
#define SLURM_NF_POWERING_UP (1u << 4)      /* '#' */
#define SLURM_NF_POWER_DOWN (1u << 5)       /* '!': power down pending */
#define SLURM_NF_POWERING_DOWN (1u << 6)    /* '%' */
#define SLURM_NF_MAINTENANCE (1u << 7)      /* '$' */
#define SLURM_NF_REBOOT_REQUESTED (1u << 8) /* '@' */
#define SLURM_NF_REBOOT_ISSUED (1u << 9)    /* '^' */
#define SLURM_NF_PLANNED (1u << 10)         /* '-' */
#define SLURM_NF_FAIL (1u << 11)
#define SLURM_NF_INVALID_REG (1u << 12) /* INVAL */
#define SLURM_NF_RESERVED (1u << 13)
#define SLURM_NF_CLOUD (1u << 14)
#define SLURM_NF_PERFCTRS (1u << 15) /* NPC */
#define SLURM_NF_RESUME (1u << 16)
#define SLURM_NF_POWER_UP (1u << 17)
#define SLURM_NF_REBOOT_CANCEL (1u << 18)
#define SLURM_NF_DYNAMIC_FUTURE (1u << 19)
#define SLURM_NF_DYNAMIC_NORM (1u << 20)
#define SLURM_NF_EXTERNAL (1u << 21)
#define SLURM_NF_BLOCKED (1u << 22)
#define SLURM_NF_UNDRAIN (1u << 23)
#define SLURM_NF_POWER_DRAIN (1u << 24)
#define SLURM_NF_ALL ((1u << 25) - 1)

/* What the text says about jobs on the node: none, some (ALLOCATED, MIXED or COMPLETING), or it
 * does not say. */
enum slurm_jobs {
	SLURM_JOBS_UNSURE = 0,
	SLURM_JOBS_NONE,
	SLURM_JOBS_SOME,
};

/* Where a text form came from: SCONTROL (`scontrol show node` State=, every version) lists
 * COMPLETING, DRAIN, FAIL, CLOUD and the power flags explicitly, so a word without them proves
 * they are clear; SINFO (%T, %t, %StateComplete) proves only what its word and suffix say. */
enum slurm_state_src {
	SLURM_SRC_SINFO = 0,
	SLURM_SRC_SCONTROL,
};

struct slurm_state {
	enum slurm_base base;
	uint32_t flags;       /* SLURM_NF_* the text proves set */
	uint32_t unsure;      /* SLURM_NF_* it leaves open (never also in flags) */
	enum slurm_jobs jobs; /* SLURM_JOBS_UNSURE whenever unknown */
	int unknown;          /* 1: a token, suffix or shape was not understood */
	char text[64];        /* the input as given (truncated), for messages */
};

/* Parses the text form s (len bytes, no NUL needed; surrounding blanks ignored) from src into
 * out (always fully written). An empty text, a word or flag not in Slurm's tables ("?" included,
 * which Slurm prints for a bit it has no name for), a suffix on a word that takes none, two
 * suffixes, an empty "+" token other than ALLOC+'s, or a text over SLURM_STATE_MAX_TEXT bytes or
 * SLURM_STATE_MAX_TOKENS tokens set out->unknown = 1 and return FP_EPARSE with err (may be
 * NULL) naming the token and its offset; what was understood is still in out, but the
 * predicates below treat it as unknown. Returns 0 or FP_EPARSE. */
int slurm_state_parse(const char *s, size_t len, enum slurm_state_src src, struct slurm_state *out,
		      char *err, size_t errlen);

/* Reads the JSON form: state is a node object's "state" member (a string: 22.05's lower-case
 * base name; or an array of strings: 23.02's base and flag names) and state_flags its
 * "state_flags" member (an array of flag names, 22.05; NULL when absent). Both are borrowed.
 * Refused (out->unknown = 1, FP_EPARSE, err naming the member and index): state missing or of
 * another type, a non-string element, a name not in Slurm's tables, no base or two bases, and a
 * string state without state_flags (then the flags are not known). Returns 0 or FP_EPARSE. */
int slurm_state_from_json(const json_t *state, const json_t *state_flags, struct slurm_state *out,
			  char *err, size_t errlen);

/* 1 when the node has or may have jobs: ALLOCATED, MIXED or COMPLETING proven, or the text does
 * not rule them out, or the state is unknown. 0 only when the text proves there are none. */
int slurm_state_has_jobs(const struct slurm_state *st);
/* 1 when DRAIN is proven set and jobs are proven absent (Slurm's DRAINED): the node may be
 * power-cycled as far as Slurm is concerned. Never 1 for an unknown state. */
int slurm_state_drained(const struct slurm_state *st);
/* 1 when DRAIN is proven set (DRAINING or DRAINED, whoever asked for it). 0 when DRAIN is proven
 * clear, and also when it is left open or the state is unknown: check st->unknown and
 * slurm_state_drain_unsure first when that matters. */
int slurm_state_drain_requested(const struct slurm_state *st);
/* 1 when the text neither proves DRAIN set nor clear ("boot", "inval", unknown states). */
int slurm_state_drain_unsure(const struct slurm_state *st);

/* Slurm's name of a base ("IDLE", "MIXED", ...; "NONE" for SLURM_BASE_NONE). Static string. */
const char *slurm_base_name(enum slurm_base b);
/* Slurm's name of one flag bit ("DRAIN", "NOT_RESPONDING", ...), or NULL when bit is not exactly
 * one SLURM_NF_* bit. Static string. */
const char *slurm_flag_name(uint32_t bit);
/* Writes st in the complete form for messages and tests: the base ("NONE" for SLURM_BASE_NONE),
 * then "+FLAG" for each proven flag in SLURM_NF_* bit order, "+?DRAIN" / "+?COMPLETING" when
 * those are left open, and " (unknown)" when unknown: "DOWN+?COMPLETING+NOT_RESPONDING" for
 * sinfo's "down*". Truncated to outlen (NUL-terminated when outlen > 0); returns out. */
char *slurm_state_format(const struct slurm_state *st, char *out, size_t outlen);

#endif
