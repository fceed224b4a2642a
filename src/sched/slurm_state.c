/* sched/slurm_state.c - Slurm node states in their text and JSON forms (sched/slurm_state.h has
 * the contract). The word table below is node_state_string / node_state_string_compact of
 * Slurm's src/common/slurm_protocol_defs.c read backwards: for each word Slurm prints, which
 * flags it proves, which it leaves open (a check earlier or later in that function's chain
 * could have chosen another word), and what it says about jobs. Pure; bounded. */
#include "sched/slurm_state.h"

#include <stdio.h>
#include <string.h>

#include "base/err.h"

#include "base/banned.h"

/* The suffix chain of node_state_string for most words: the first flag that is set picks the
 * suffix, so the flags after it are left open. */
static const struct {
	char c;
	uint32_t flag;
} chain[] = {
	{'$', SLURM_NF_MAINTENANCE},      {'^', SLURM_NF_REBOOT_ISSUED},
	{'@', SLURM_NF_REBOOT_REQUESTED}, {'#', SLURM_NF_POWERING_UP},
	{'%', SLURM_NF_POWERING_DOWN},    {'~', SLURM_NF_POWERED_DOWN},
	{'!', SLURM_NF_POWER_DOWN},       {'*', SLURM_NF_NOT_RESPONDING},
};
#define CHAIN_N (sizeof(chain) / sizeof(chain[0]))

/* Flags no long or compact word ever shows. */
#define HIDDEN                                                                                  \
	(SLURM_NF_CLOUD | SLURM_NF_DYNAMIC_FUTURE | SLURM_NF_DYNAMIC_NORM | SLURM_NF_EXTERNAL | \
	 SLURM_NF_BLOCKED | SLURM_NF_UNDRAIN | SLURM_NF_POWER_DRAIN | SLURM_NF_REBOOT_CANCEL |  \
	 SLURM_NF_RESUME | SLURM_NF_POWER_UP)

/* Flags `scontrol show node` State= always lists when set (node_info.c before and after 21.08). */
#define SCONTROL_EXPLICIT                                                        \
	(SLURM_NF_COMPLETING | SLURM_NF_DRAIN | SLURM_NF_FAIL | SLURM_NF_CLOUD | \
	 SLURM_NF_POWERED_DOWN | SLURM_NF_POWERING_DOWN)

/* Suffix rules of a word. */
enum sfx {
	SFX_NONE,  /* no suffix */
	SFX_CHAIN, /* $ ^ @ # % ~ ! * */
	SFX_STAR,  /* '*' only (MAINT, FAIL, FAILING, UNKNOWN) */
	SFX_BOOT,  /* '^' (issued) or '*' (REBOOT) */
};

enum busy {
	BUSY_NO,    /* the word rules out ALLOCATED and MIXED bases */
	BUSY_YES,   /* the word proves jobs (ALLOCATED, MIXED, COMPLETING) */
	BUSY_MAYBE, /* the word does not say */
};

struct word {
	const char *name;
	enum slurm_base base;
	uint32_t flags;  /* proven set */
	uint32_t unsure; /* left open besides HIDDEN and the chain's tail */
	enum busy busy;
	enum sfx sfx;
	uint32_t after; /* more flags the chain ends with (IDLE: NPC, RESV, PLND; MIXED: '-') */
	int plus;       /* ALLOCATED+ / ALLOC+: a trailing '+' means COMPLETING */
};

#define IDLE_TAIL (SLURM_NF_PERFCTRS | SLURM_NF_RESERVED | SLURM_NF_PLANNED)
#define ANYFLAG (SLURM_NF_ALL & ~HIDDEN)
#define POWER_FLAGS                                                              \
	(SLURM_NF_POWERING_UP | SLURM_NF_POWERING_DOWN | SLURM_NF_POWERED_DOWN | \
	 SLURM_NF_POWER_DOWN)
/* What MAINT and FAIL leave open: the checks node_state_string makes after theirs. */
#define LATER_FLAGS (SLURM_NF_REBOOT_REQUESTED | SLURM_NF_REBOOT_ISSUED | POWER_FLAGS | IDLE_TAIL)

/* Long names (node_state_string) first, then compact ones (node_state_string_compact), then the
 * words of later versions (BLOCKED, EXTERNAL, UNDRAIN, DYNAMIC_*). */
static const struct word words[] = {
	{"IDLE", SLURM_BASE_IDLE, 0, 0, BUSY_NO, SFX_CHAIN, IDLE_TAIL, 0},
	{"ALLOCATED", SLURM_BASE_ALLOCATED, 0, 0, BUSY_YES, SFX_CHAIN, SLURM_NF_COMPLETING, 1},
	{"ALLOC", SLURM_BASE_ALLOCATED, 0, 0, BUSY_YES, SFX_CHAIN, SLURM_NF_COMPLETING, 1},
	{"MIXED", SLURM_BASE_MIXED, 0, 0, BUSY_YES, SFX_CHAIN, SLURM_NF_PLANNED, 0},
	{"MIX", SLURM_BASE_MIXED, 0, 0, BUSY_YES, SFX_CHAIN, SLURM_NF_PLANNED, 0},
	/* DOWN is chosen before COMPLETING is looked at */
	{"DOWN", SLURM_BASE_DOWN, 0, SLURM_NF_COMPLETING, BUSY_NO, SFX_CHAIN, 0, 0},
	{"FUTURE", SLURM_BASE_FUTURE, 0, 0, BUSY_NO, SFX_CHAIN, 0, 0},
	{"FUTR", SLURM_BASE_FUTURE, 0, 0, BUSY_NO, SFX_CHAIN, 0, 0},
	/* COMPLETING is chosen after DOWN and ALLOCATED, before IDLE and MIXED */
	{"COMPLETING", SLURM_BASE_NONE, SLURM_NF_COMPLETING, 0, BUSY_YES, SFX_CHAIN, 0, 0},
	{"COMP", SLURM_BASE_NONE, SLURM_NF_COMPLETING, 0, BUSY_YES, SFX_CHAIN, 0, 0},
	/* DRAIN with COMPLETING, ALLOCATED or MIXED; the DRAIN branch comes after MAINT and REBOOT */
	{"DRAINING", SLURM_BASE_NONE, SLURM_NF_DRAIN, SLURM_NF_FAIL, BUSY_YES, SFX_CHAIN, 0, 0},
	{"DRNG", SLURM_BASE_NONE, SLURM_NF_DRAIN, SLURM_NF_FAIL, BUSY_YES, SFX_CHAIN, 0, 0},
	{"DRAINED", SLURM_BASE_NONE, SLURM_NF_DRAIN, SLURM_NF_FAIL, BUSY_NO, SFX_CHAIN, 0, 0},
	{"DRAIN", SLURM_BASE_NONE, SLURM_NF_DRAIN, SLURM_NF_FAIL, BUSY_NO, SFX_CHAIN, 0, 0},
	/* FAIL with COMPLETING or ALLOCATED (MIXED is not looked at: FAIL may be MIXED) */
	{"FAILING", SLURM_BASE_NONE, SLURM_NF_FAIL, SLURM_NF_MAINTENANCE | LATER_FLAGS, BUSY_YES,
	 SFX_STAR, 0, 0},
	{"FAILG", SLURM_BASE_NONE, SLURM_NF_FAIL, SLURM_NF_MAINTENANCE | LATER_FLAGS, BUSY_YES,
	 SFX_STAR, 0, 0},
	{"FAIL", SLURM_BASE_NONE, SLURM_NF_FAIL, SLURM_NF_MAINTENANCE | LATER_FLAGS, BUSY_MAYBE,
	 SFX_STAR, 0, 0},
	/* MAINT: no DRAIN, base not ALLOCATED, DOWN or MIXED; checked before COMPLETING */
	{"MAINT", SLURM_BASE_NONE, SLURM_NF_MAINTENANCE,
	 SLURM_NF_COMPLETING | SLURM_NF_FAIL | LATER_FLAGS, BUSY_NO, SFX_STAR, 0, 0},
	/* REBOOT: base not ALLOCATED or MIXED; checked before DRAIN and COMPLETING */
	{"REBOOT", SLURM_BASE_NONE, SLURM_NF_REBOOT_REQUESTED,
	 SLURM_NF_DRAIN | SLURM_NF_COMPLETING | SLURM_NF_FAIL | SLURM_NF_MAINTENANCE, BUSY_NO,
	 SFX_BOOT, 0, 0},
	{"BOOT", SLURM_BASE_NONE, SLURM_NF_REBOOT_REQUESTED,
	 SLURM_NF_DRAIN | SLURM_NF_COMPLETING | SLURM_NF_FAIL | SLURM_NF_MAINTENANCE, BUSY_NO,
	 SFX_BOOT, 0, 0},
	{"REBOOT_ISSUED", SLURM_BASE_NONE, SLURM_NF_REBOOT_ISSUED, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"CANCEL_REBOOT", SLURM_BASE_NONE, SLURM_NF_REBOOT_CANCEL, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"CANC_R", SLURM_BASE_NONE, SLURM_NF_REBOOT_CANCEL, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"CLOUD", SLURM_BASE_NONE, SLURM_NF_CLOUD, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POWER_DOWN", SLURM_BASE_NONE, SLURM_NF_POWER_DOWN, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POW_DN", SLURM_BASE_NONE, SLURM_NF_POWER_DOWN, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POWER_UP", SLURM_BASE_NONE, SLURM_NF_POWER_UP, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POW_UP", SLURM_BASE_NONE, SLURM_NF_POWER_UP, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POWERING_DOWN", SLURM_BASE_NONE, SLURM_NF_POWERING_DOWN, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POWRING_DN", SLURM_BASE_NONE, SLURM_NF_POWERING_DOWN, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POWERED_DOWN", SLURM_BASE_NONE, SLURM_NF_POWERED_DOWN, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POWERED_DN", SLURM_BASE_NONE, SLURM_NF_POWERED_DOWN, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"POWERING_UP", SLURM_BASE_NONE, SLURM_NF_POWERING_UP, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"PERFCTRS", SLURM_BASE_IDLE, SLURM_NF_PERFCTRS, 0, BUSY_NO, SFX_NONE, 0, 0},
	{"NPC", SLURM_BASE_IDLE, SLURM_NF_PERFCTRS, 0, BUSY_NO, SFX_NONE, 0, 0},
	{"RESERVED", SLURM_BASE_IDLE, SLURM_NF_RESERVED, SLURM_NF_PLANNED, BUSY_NO, SFX_NONE, 0, 0},
	{"RESV", SLURM_BASE_IDLE, SLURM_NF_RESERVED, SLURM_NF_PLANNED, BUSY_NO, SFX_NONE, 0, 0},
	{"PLANNED", SLURM_BASE_IDLE, SLURM_NF_PLANNED, 0, BUSY_NO, SFX_NONE, 0, 0},
	{"PLND", SLURM_BASE_IDLE, SLURM_NF_PLANNED, 0, BUSY_NO, SFX_NONE, 0, 0},
	{"RESUME", SLURM_BASE_NONE, SLURM_NF_RESUME, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"RESM", SLURM_BASE_NONE, SLURM_NF_RESUME, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	/* Slurm's UNKNOWN: slurmctld has not heard from slurmd yet; jobs it recovered would have
	 * made the node ALLOCATED or MIXED, and COMPLETING is chosen before UNKNOWN */
	{"UNKNOWN", SLURM_BASE_UNKNOWN, 0, 0, BUSY_NO, SFX_STAR, 0, 0},
	{"UNK", SLURM_BASE_UNKNOWN, 0, 0, BUSY_NO, SFX_STAR, 0, 0},
	/* INVAL is printed before anything else is looked at */
	{"INVAL", SLURM_BASE_NONE, SLURM_NF_INVALID_REG, ANYFLAG & ~SLURM_NF_INVALID_REG,
	 BUSY_MAYBE, SFX_NONE, 0, 0},
	{"ERROR", SLURM_BASE_ERROR, 0, 0, BUSY_NO, SFX_NONE, 0, 0},
	{"BLOCKED", SLURM_BASE_NONE, SLURM_NF_BLOCKED, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"BLOCK", SLURM_BASE_NONE, SLURM_NF_BLOCKED, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"EXTERNAL", SLURM_BASE_NONE, SLURM_NF_EXTERNAL, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"EXT", SLURM_BASE_NONE, SLURM_NF_EXTERNAL, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"UNDRAIN", SLURM_BASE_NONE, SLURM_NF_UNDRAIN, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"DYNAMIC_FUTURE", SLURM_BASE_NONE, SLURM_NF_DYNAMIC_FUTURE, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
	{"DYNAMIC_NORM", SLURM_BASE_NONE, SLURM_NF_DYNAMIC_NORM, 0, BUSY_MAYBE, SFX_NONE, 0, 0},
};

/* Flag names after '+' (node_state_flags[]; the data_parser's names; pre-21.08 "POWER"). */
static const struct {
	const char *name;
	uint32_t flag;
} flag_names[] = {
	{"DRAIN", SLURM_NF_DRAIN},
	{"COMPLETING", SLURM_NF_COMPLETING},
	{"NOT_RESPONDING", SLURM_NF_NOT_RESPONDING},
	{"POWERED_DOWN", SLURM_NF_POWERED_DOWN},
	{"POWERING_UP", SLURM_NF_POWERING_UP},
	{"POWER_DOWN", SLURM_NF_POWER_DOWN},
	{"POWERING_DOWN", SLURM_NF_POWERING_DOWN},
	{"MAINTENANCE", SLURM_NF_MAINTENANCE},
	{"REBOOT_REQUESTED", SLURM_NF_REBOOT_REQUESTED},
	{"REBOOT_ISSUED", SLURM_NF_REBOOT_ISSUED},
	{"PLANNED", SLURM_NF_PLANNED},
	{"FAIL", SLURM_NF_FAIL},
	{"INVALID_REG", SLURM_NF_INVALID_REG},
	{"RESERVED", SLURM_NF_RESERVED},
	{"CLOUD", SLURM_NF_CLOUD},
	{"PERFCTRS", SLURM_NF_PERFCTRS},
	{"RESUME", SLURM_NF_RESUME},
	{"POWER_UP", SLURM_NF_POWER_UP},
	{"REBOOT_CANCELED", SLURM_NF_REBOOT_CANCEL},
	{"DYNAMIC_FUTURE", SLURM_NF_DYNAMIC_FUTURE},
	{"DYNAMIC_NORM", SLURM_NF_DYNAMIC_NORM},
	{"EXTERNAL", SLURM_NF_EXTERNAL},
	{"BLOCKED", SLURM_NF_BLOCKED},
	{"UNDRAIN", SLURM_NF_UNDRAIN},
	{"POWER_DRAIN", SLURM_NF_POWER_DRAIN},
	{"POWER", SLURM_NF_POWERED_DOWN}, /* NODE_STATE_POWER_SAVE, scontrol before 21.08 */
};
#define FLAG_NAMES_N (sizeof(flag_names) / sizeof(flag_names[0]))

static const char *const base_names[] = {
	[SLURM_BASE_NONE] = "NONE",           [SLURM_BASE_UNKNOWN] = "UNKNOWN",
	[SLURM_BASE_DOWN] = "DOWN",           [SLURM_BASE_IDLE] = "IDLE",
	[SLURM_BASE_ALLOCATED] = "ALLOCATED", [SLURM_BASE_ERROR] = "ERROR",
	[SLURM_BASE_MIXED] = "MIXED",         [SLURM_BASE_FUTURE] = "FUTURE",
};

const char *slurm_base_name(enum slurm_base b)
{
	if ((unsigned)b >= sizeof(base_names) / sizeof(base_names[0]))
		return "NONE";
	return base_names[b];
}

const char *slurm_flag_name(uint32_t bit)
{
	for (size_t i = 0; i < FLAG_NAMES_N; i++)
		if (flag_names[i].flag == bit)
			return flag_names[i].name;
	return NULL;
}

/* ASCII case-insensitive equality of a[0..n) and the NUL-terminated upper-case b. */
static int eq_upper(const char *a, size_t n, const char *b)
{
	size_t i;
	for (i = 0; i < n && b[i]; i++) {
		char c = a[i];
		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		if (c != b[i])
			return 0;
	}
	return i == n && b[i] == '\0';
}

static const struct word *find_word(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (eq_upper(s, n, words[i].name))
			return &words[i];
	return NULL;
}

static int find_flag(const char *s, size_t n, uint32_t *flag)
{
	for (size_t i = 0; i < FLAG_NAMES_N; i++)
		if (eq_upper(s, n, flag_names[i].name)) {
			*flag = flag_names[i].flag;
			return 1;
		}
	return 0;
}

static int is_base_word(const struct word *w)
{
	return w->flags == 0 && w->base != SLURM_BASE_NONE;
}

static void init(struct slurm_state *out, const char *s, size_t len)
{
	size_t n = len < sizeof(out->text) - 1 ? len : sizeof(out->text) - 1;
	memset(out, 0, sizeof(*out));
	out->base = SLURM_BASE_NONE;
	out->jobs = SLURM_JOBS_UNSURE;
	for (size_t i = 0; i < n; i++) /* printable copy: the text goes into messages */
		out->text[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
}

/* Derives jobs from base, flags, unsure and what the word said. */
static void settle(struct slurm_state *out, enum busy busy)
{
	out->unsure &= ~out->flags;
	if (out->unknown)
		out->jobs = SLURM_JOBS_UNSURE;
	else if ((out->flags & SLURM_NF_COMPLETING) || out->base == SLURM_BASE_ALLOCATED ||
		 out->base == SLURM_BASE_MIXED || busy == BUSY_YES)
		out->jobs = SLURM_JOBS_SOME;
	else if (out->unsure & SLURM_NF_COMPLETING)
		out->jobs = SLURM_JOBS_UNSURE;
	else if (out->base != SLURM_BASE_NONE)
		out->jobs =
			SLURM_JOBS_NONE; /* IDLE, DOWN, FUTURE, UNKNOWN, ERROR without COMPLETING */
	else if (out->base == SLURM_BASE_NONE && busy == BUSY_NO)
		out->jobs = SLURM_JOBS_NONE;
	else
		out->jobs = SLURM_JOBS_UNSURE;
}

static int fail(struct slurm_state *out, char *err, size_t errlen, const char *what,
		const char *tok, size_t n, size_t at)
{
	out->unknown = 1;
	settle(out, BUSY_MAYBE);
	return fp_errf(FP_EPARSE, err, errlen, "slurm state \"%s\": %s \"%.*s\" at offset %zu",
		       out->text, what, (int)(n > 32 ? 32 : n), tok, at);
}

int slurm_state_parse(const char *s, size_t len, enum slurm_state_src src, struct slurm_state *out,
		      char *err, size_t errlen)
{
	const struct word *w;
	size_t b = 0, e = len, i, wend, ntok = 1;
	char sfx = 0;

	while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r'))
		b++;
	while (e > b &&
	       (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r'))
		e--;
	init(out, s + b, e - b);
	if (len > SLURM_STATE_MAX_TEXT) {
		out->unknown = 1;
		settle(out, BUSY_MAYBE);
		return fp_errf(FP_EPARSE, err, errlen, "slurm state of %zu bytes, more than %d",
			       len, SLURM_STATE_MAX_TEXT);
	}
	if (b == e)
		return fail(out, err, errlen, "empty state", "", 0, b);

	/* the first word and its suffix */
	for (wend = b; wend < e && s[wend] != '+'; wend++)
		;
	i = wend;
	if (i > b && s[i - 1] != '\0' && strchr("*~#!%$@^-", s[i - 1]) != NULL) {
		sfx = s[i - 1];
		i--;
	}
	w = find_word(s + b, i - b);
	if (w == NULL)
		return fail(out, err, errlen, "unknown state word", s + b, wend - b, b);
	out->base = w->base;
	out->flags = w->flags;
	out->unsure = w->unsure | (src == SLURM_SRC_SINFO ? HIDDEN : 0);
	if (sfx) {
		size_t k = 0;
		int ok = 0;
		switch (w->sfx) {
		case SFX_NONE: break;
		case SFX_STAR: ok = sfx == '*'; break;
		case SFX_BOOT: ok = sfx == '*' || sfx == '^'; break;
		case SFX_CHAIN:
			for (k = 0; k < CHAIN_N && chain[k].c != sfx; k++)
				;
			ok = k < CHAIN_N || (sfx == '-' && (w->after & SLURM_NF_PLANNED));
			break;
		}
		if (!ok)
			return fail(out, err, errlen, "suffix not used with this word", s + i, 1,
				    i);
		if (w->sfx == SFX_CHAIN && sfx == '-') {
			out->flags |= SLURM_NF_PLANNED;
		} else if (w->sfx == SFX_CHAIN) {
			out->flags |= chain[k].flag;
			for (k++; k < CHAIN_N; k++)
				out->unsure |= chain[k].flag;
			out->unsure |= w->after;
		} else if (w->sfx == SFX_BOOT && sfx == '^') {
			out->flags = (out->flags & ~SLURM_NF_REBOOT_REQUESTED) |
				     SLURM_NF_REBOOT_ISSUED;
			out->unsure |= SLURM_NF_REBOOT_REQUESTED | SLURM_NF_NOT_RESPONDING;
		} else {
			out->flags |= SLURM_NF_NOT_RESPONDING;
		}
	}

	/* "+FLAG" tokens; a lone trailing '+' after ALLOC/ALLOCATED is COMPLETING */
	i = wend;
	while (i < e) {
		size_t t = ++i, tn;
		uint32_t f;
		while (i < e && s[i] != '+')
			i++;
		tn = i - t;
		if (++ntok > SLURM_STATE_MAX_TOKENS)
			return fail(out, err, errlen, "more tokens than allowed, at", s + t, tn, t);
		if (tn == 0 && i == e && ntok == 2 && w->plus && !sfx) {
			out->flags |= SLURM_NF_COMPLETING;
			break;
		}
		if (tn == 0)
			return fail(out, err, errlen, "empty flag", s + t, 0, t);
		if (!find_flag(s + t, tn, &f))
			return fail(out, err, errlen, "unknown state flag", s + t, tn, t);
		out->flags |= f;
	}
	if (ntok > 1 || src == SLURM_SRC_SCONTROL)
		out->unsure &= ~SCONTROL_EXPLICIT;
	if (ntok > 1 && is_base_word(w) && !sfx)
		out->unsure = 0; /* the complete form: a bare base and every flag */
	settle(out, w->busy);
	return 0;
}

static void mark_unknown(struct slurm_state *out)
{
	out->unknown = 1;
	settle(out, BUSY_MAYBE);
}

/* One JSON name: a base (when bases_ok) or a flag. */
static int json_name(struct slurm_state *out, const char *name, int bases_ok, int *nbase)
{
	size_t n = strlen(name);
	uint32_t f;
	if (bases_ok) { /* node_states[]: the seven base names only */
		for (int b = SLURM_BASE_UNKNOWN; b <= SLURM_BASE_FUTURE; b++) {
			if (!eq_upper(name, n, base_names[b]))
				continue;
			if ((*nbase)++ > 0)
				return -1;
			out->base = (enum slurm_base)b;
			return 0;
		}
	}
	if (!find_flag(name, n, &f))
		return -1;
	out->flags |= f;
	return 0;
}

int slurm_state_from_json(const json_t *state, const json_t *state_flags, struct slurm_state *out,
			  char *err, size_t errlen)
{
	int nbase = 0;
	size_t i;

	init(out, json_is_string(state) ? json_string_value(state) : "",
	     json_is_string(state) ? strlen(json_string_value(state)) : 0);
	if (json_is_string(state)) {
		if (json_name(out, json_string_value(state), 1, &nbase) < 0 || nbase != 1) {
			mark_unknown(out);
			return fp_errf(FP_EPARSE, err, errlen,
				       "slurm state: \"state\": \"%s\" is not a base state",
				       out->text);
		}
		if (!json_is_array(state_flags)) {
			mark_unknown(out);
			return fp_errf(
				FP_EPARSE, err, errlen,
				"slurm state: \"state\": \"%s\" without a \"state_flags\" array",
				out->text);
		}
		if (json_array_size(state_flags) > SLURM_STATE_MAX_TOKENS) {
			mark_unknown(out);
			return fp_errf(FP_EPARSE, err, errlen,
				       "slurm state: \"state_flags\" has more than %d items",
				       SLURM_STATE_MAX_TOKENS);
		}
		for (i = 0; i < json_array_size(state_flags); i++) {
			const json_t *f = json_array_get(state_flags, i);
			if (!json_is_string(f) ||
			    json_name(out, json_string_value(f), 0, &nbase) < 0) {
				mark_unknown(out);
				return fp_errf(
					FP_EPARSE, err, errlen,
					"slurm state: \"state_flags\"[%zu] is not a known flag", i);
			}
		}
	} else if (json_is_array(state)) {
		if (json_array_size(state) > SLURM_STATE_MAX_TOKENS) {
			mark_unknown(out);
			return fp_errf(FP_EPARSE, err, errlen,
				       "slurm state: \"state\" has more than %d items",
				       SLURM_STATE_MAX_TOKENS);
		}
		for (i = 0; i < json_array_size(state); i++) {
			const json_t *f = json_array_get(state, i);
			if (!json_is_string(f) ||
			    json_name(out, json_string_value(f), 1, &nbase) < 0) {
				mark_unknown(out);
				return fp_errf(
					FP_EPARSE, err, errlen,
					"slurm state: \"state\"[%zu] is not a known base or flag, "
					"or a second base",
					i);
			}
		}
		if (nbase != 1) {
			mark_unknown(out);
			return fp_errf(FP_EPARSE, err, errlen,
				       "slurm state: \"state\" (%zu items) names no base state",
				       json_array_size(state));
		}
	} else {
		mark_unknown(out);
		return fp_errf(
			FP_EPARSE, err, errlen,
			"slurm state: \"state\" is missing or neither a string nor an array");
	}
	out->unsure = 0;
	settle(out, BUSY_NO);
	return 0;
}

int slurm_state_has_jobs(const struct slurm_state *st)
{
	return st->unknown || st->jobs != SLURM_JOBS_NONE;
}

int slurm_state_drained(const struct slurm_state *st)
{
	return !st->unknown && (st->flags & SLURM_NF_DRAIN) && st->jobs == SLURM_JOBS_NONE;
}

int slurm_state_drain_requested(const struct slurm_state *st)
{
	return !st->unknown && (st->flags & SLURM_NF_DRAIN) != 0;
}

int slurm_state_drain_unsure(const struct slurm_state *st)
{
	return st->unknown || (st->unsure & SLURM_NF_DRAIN) != 0;
}

char *slurm_state_format(const struct slurm_state *st, char *out, size_t outlen)
{
	size_t n;
	if (outlen == 0)
		return out;
	n = (size_t)snprintf(out, outlen, "%s", slurm_base_name(st->base));
	for (uint32_t bit = 1; bit && bit <= SLURM_NF_ALL && n < outlen; bit <<= 1) {
		const char *name = slurm_flag_name(bit);
		/* of the flags left open, only the two the predicates read are written */
		uint32_t open = st->unsure & (SLURM_NF_DRAIN | SLURM_NF_COMPLETING);
		if (!name || !((st->flags | open) & bit))
			continue;
		n += (size_t)snprintf(out + n, outlen - n, "+%s%s", (open & bit) ? "?" : "", name);
	}
	if (st->unknown && n < outlen)
		snprintf(out + n, outlen - n, " (unknown)");
	return out;
}
