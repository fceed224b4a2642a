/* sched/hostlist.h - Slurm hostlists: "gpu[001-016,020],login1" expanded into node names, and a
 * set of node names compressed back into the ranged form Slurm prints, for `scontrol update
 * NodeName=<hostlist>` batches, slurm.conf `NodeName=` lines and the NODELIST column of sinfo.
 *
 * The rules are Slurm's (src/common/hostlist.c, hostlist_create and hostlist_ranged_string with
 * one dimension, as in slurm-22.05; scontrol(1) "show hostnames" / "show hostlistsorted"):
 * names are separated by ',', ' ' or '\t' outside brackets; "[a-b,c]" is a list of decimal
 * numbers and ranges whose zero-padding width is the number of digits written for the low end
 * ("[001-016]" gives 001..016, "[8-10]" gives 8, 9, 10); one name may hold several bracket
 * groups ("r[1-2]n[01-02]") and nothing may follow the last ']'. This reader is stricter than
 * Slurm where Slurm guesses (see hostlist_expand); it never accepts what Slurm refuses.
 *
 * Pure; bounded (HOSTLIST_MAX_INPUT bytes in, HOSTLIST_MAX_NAMES names, HOSTLIST_MAX_NAME bytes a
 * name); fuzzed by tests/fuzz/fuzz_hostlist.c. */
#ifndef FP_SCHED_HOSTLIST_H
#define FP_SCHED_HOSTLIST_H

#include <stddef.h>

#include "base/buf.h"

/* Slurm's own bounds are 64Ki hosts in one range (MAX_RANGE) and 64Ki prefixes
 * (MAX_PREFIX_CNT); fleetplane bounds the whole list the same. */
#define HOSTLIST_MAX_NAMES 65536
#define HOSTLIST_MAX_NAME 255 /* bytes of one name, the NUL not counted */
#define HOSTLIST_MAX_INPUT (1u << 20)
#define HOSTLIST_MAX_GROUPS 8  /* bracket groups in one name */
#define HOSTLIST_MAX_DIGITS 18 /* decimal digits of one number in a range */

/* A list of node names in order, duplicates allowed. The names live back to back in one pool. */
struct hostlist {
	char *pool;  /* owned; name i is the NUL-terminated string at pool + off[i] */
	size_t *off; /* owned */
	size_t n;    /* names */
	size_t pool_len, pool_alloc, off_alloc;
};

void hostlist_init(struct hostlist *hl);
/* Frees what hl owns and re-initialises it; a released or zeroed hostlist may be released
 * again. */
void hostlist_release(struct hostlist *hl);
/* Name i (0 <= i < hl->n), borrowed from hl until the next push or release. */
const char *hostlist_name(const struct hostlist *hl, size_t i);

/* Appends one literal name of len bytes (no expansion). Refused: an empty name, one longer than
 * HOSTLIST_MAX_NAME, one holding a separator (',', ' ', '\t'), a bracket, a NUL or another
 * control byte (FP_EINVAL), and a name past HOSTLIST_MAX_NAMES (FP_ETOOBIG). hl is unchanged
 * when refused; err (may be NULL) names the reason. Returns 0 or the code. */
int hostlist_push(struct hostlist *hl, const char *name, size_t len, char *err, size_t errlen);

/* Expands the hostlist expression s (len bytes, no NUL needed) and appends its names to hl, in
 * Slurm's order: the top-level items in the order written; inside one item the last bracket
 * group varies fastest, and the others are walked as Slurm's _push_range_list recursion walks
 * them, from the last-but-one group (outermost) back to the first ("r[1-2]n[1-2]" gives r1n1,
 * r1n2, r2n1, r2n2; "a[1-2]b[1-2]c[1-2]" gives a1b1c1, a1b1c2, a2b1c1, a2b1c2, a1b2c1, ...).
 * Empty items (",,", leading or trailing separators) are skipped, as Slurm's _next_tok does; an
 * empty or all-separator s appends nothing and succeeds.
 *
 * Refused with FP_EPARSE, err naming the offset in s of what is wrong: '[' without ']', ']'
 * without '[', a '[' inside brackets, text after the last ']' ("n[1-2]x": Slurm refuses it
 * too), an empty range list or list item ("n[]", "n[1,,2]"), a range whose high end is below its
 * low end ("n[5-3]"), anything but digits and one '-' in an item ("n[-1]", "n[1-2-3]", "n[a]",
 * "n[1-]": Slurm reads the last as "n1"), a number of more than HOSTLIST_MAX_DIGITS digits, a
 * separator inside brackets, more than HOSTLIST_MAX_GROUPS groups, a control byte or NUL, and an
 * expanded name longer than HOSTLIST_MAX_NAME. Refused with FP_ETOOBIG: len over
 * HOSTLIST_MAX_INPUT, or hl growing past HOSTLIST_MAX_NAMES names (counted before any is
 * written). On any error hl is left as it was before the call. Returns 0 or the code. */
int hostlist_expand(struct hostlist *hl, const char *s, size_t len, char *err, size_t errlen);

/* Writes the names of hl, sorted and without duplicates, as the shortest ranged hostlist Slurm
 * prints for them (hostlist_uniq then hostlist_ranged_string; `scontrol show hostlist` instead
 * keeps the input order, "n[1-2],ghost[01-03],fut01" in tests/data/slurm): each name splits into a prefix
 * and its trailing decimal digits; names with equal prefixes are ordered by number, prefixes in
 * natural order ("r2n" before "r10n"; a name without trailing digits before the numbered names of
 * the same prefix); consecutive numbers join into "lo-hi" when one zero-padding width prints
 * them all exactly as written ("n08,n09,n10" gives "n[08-10]", "n9,n10" gives "n[9-10]", "n1"
 * and "n01" stay apart); one prefix's ranges share one bracket, and a prefix with a single
 * name is written without brackets. out is reset first and holds "" for an empty hl. The result
 * expands (hostlist_expand) back to exactly those sorted names.
 *
 * Refused: FP_ETOOBIG when out's maximum is reached (out then holds a truncated prefix; never
 * pass it on). Returns 0 or FP_ETOOBIG. */
int hostlist_compress(const struct hostlist *hl, struct buf *out, char *err, size_t errlen);

#endif
