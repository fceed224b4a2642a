/* sched/hostlist.c - Slurm hostlist expansion and compression (sched/hostlist.h has the contract).
 * Written from the rules of Slurm's src/common/hostlist.c (slurm-22.05: _next_tok,
 * _parse_single_range, _push_range_list, hostlist_uniq, _get_bracketed_list), not from its code:
 * an expression is checked whole and counted before any name is written, and the names of a
 * hostlist live in one pool. Pure; bounded. */
#include "sched/hostlist.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

#include "base/banned.h"

static int is_sep(char c)
{
	return c == ',' || c == ' ' || c == '\t';
}

static int is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

void hostlist_init(struct hostlist *hl)
{
	memset(hl, 0, sizeof(*hl));
}

void hostlist_release(struct hostlist *hl)
{
	free(hl->pool);
	free(hl->off);
	hostlist_init(hl);
}

const char *hostlist_name(const struct hostlist *hl, size_t i)
{
	BUG_ON(i >= hl->n);
	return hl->pool + hl->off[i];
}

/* Appends without checks; the callers have checked the name and the count. */
static void push_raw(struct hostlist *hl, const char *name, size_t len)
{
	ALLOC_GROW(hl->off, hl->n + 1, hl->off_alloc);
	ALLOC_GROW(hl->pool, hl->pool_len + len + 1, hl->pool_alloc);
	hl->off[hl->n++] = hl->pool_len;
	memcpy(hl->pool + hl->pool_len, name, len);
	hl->pool[hl->pool_len + len] = '\0';
	hl->pool_len += len + 1;
}

int hostlist_push(struct hostlist *hl, const char *name, size_t len, char *err, size_t errlen)
{
	if (len == 0)
		return fp_errf(FP_EINVAL, err, errlen, "empty node name");
	if (len > HOSTLIST_MAX_NAME)
		return fp_errf(FP_EINVAL, err, errlen,
			       "node name of %zu bytes, more than the %d allowed", len,
			       HOSTLIST_MAX_NAME);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (is_sep((char)c) || c == '[' || c == ']' || is_ctl(c))
			return fp_errf(FP_EINVAL, err, errlen,
				       "node name holds byte 0x%02x at offset %zu (a separator, "
				       "bracket or control byte)",
				       c, i);
	}
	if (hl->n >= HOSTLIST_MAX_NAMES)
		return fp_errf(FP_ETOOBIG, err, errlen, "more than %d node names",
			       HOSTLIST_MAX_NAMES);
	push_raw(hl, name, len);
	return 0;
}

/* ---- expansion ---- */

struct hl_range {
	unsigned long long lo, hi;
	int width; /* digits written for lo: the zero-padding width */
};

struct hl_group {
	size_t lit, lit_len; /* the literal text before this group, in s */
	size_t r0, nr;       /* ranges[r0 .. r0+nr) */
	size_t count;        /* numbers in the group, at most HOSTLIST_MAX_NAMES */
};

struct hl_item {
	size_t start, end; /* [start, end) of s */
	struct hl_group g[HOSTLIST_MAX_GROUPS];
	size_t ng;
	size_t tail; /* offset of the literal after the last group (empty) or of the whole name */
	struct hl_range *ranges;
	size_t nranges, ranges_alloc;
	size_t count; /* names the item expands to, at most HOSTLIST_MAX_NAMES + 1 */
};

/* Reads the decimal number at s[*i]; returns its digit count (0 when there is none). */
static int read_num(const char *s, size_t len, size_t *i, unsigned long long *v)
{
	int nd = 0;
	*v = 0;
	while (*i < len && is_digit(s[*i])) {
		if (nd < HOSTLIST_MAX_DIGITS)
			*v = *v * 10 + (unsigned long long)(s[*i] - '0');
		nd++;
		(*i)++;
	}
	return nd;
}

/* Parses the range list after the '[' at s[open]; leaves *i after its ']'. */
static int parse_group(const char *s, size_t len, size_t open, size_t *i, struct hl_item *it,
		       struct hl_group *g, char *err, size_t errlen)
{
	g->r0 = it->nranges;
	g->nr = 0;
	g->count = 0;
	for (;;) {
		struct hl_range r;
		size_t at = *i;
		int nd;

		nd = read_num(s, len, i, &r.lo);
		if (nd == 0)
			goto bad_char;
		if (nd > HOSTLIST_MAX_DIGITS)
			return fp_errf(FP_EPARSE, err, errlen,
				       "hostlist: number at offset %zu has more than %d digits", at,
				       HOSTLIST_MAX_DIGITS);
		r.width = nd;
		r.hi = r.lo;
		if (*i < len && s[*i] == '-') {
			size_t hi_at = ++(*i);
			nd = read_num(s, len, i, &r.hi);
			if (nd == 0)
				return fp_errf(FP_EPARSE, err, errlen,
					       "hostlist: expected digits after '-' at offset %zu",
					       hi_at);
			if (nd > HOSTLIST_MAX_DIGITS)
				return fp_errf(
					FP_EPARSE, err, errlen,
					"hostlist: number at offset %zu has more than %d digits",
					hi_at, HOSTLIST_MAX_DIGITS);
			if (r.hi < r.lo)
				return fp_errf(
					FP_EPARSE, err, errlen,
					"hostlist: range %llu-%llu at offset %zu ends below its "
					"start",
					r.lo, r.hi, at);
		}
		if (r.hi - r.lo >= (unsigned long long)HOSTLIST_MAX_NAMES - g->count)
			return fp_errf(FP_ETOOBIG, err, errlen,
				       "hostlist: bracket at offset %zu holds more than %d numbers",
				       open, HOSTLIST_MAX_NAMES);
		g->count += (size_t)(r.hi - r.lo + 1);
		ALLOC_GROW(it->ranges, it->nranges + 1, it->ranges_alloc);
		it->ranges[it->nranges++] = r;
		g->nr++;
		if (*i < len && s[*i] == ',') {
			(*i)++;
			continue;
		}
		if (*i < len && s[*i] == ']') {
			(*i)++;
			return 0;
		}
bad_char:
		if (*i >= len)
			return fp_errf(FP_EPARSE, err, errlen,
				       "hostlist: '[' at offset %zu has no ']'", open);
		if (s[*i] == '[')
			return fp_errf(FP_EPARSE, err, errlen,
				       "hostlist: '[' inside brackets at offset %zu", *i);
		if (s[*i] == ']' || s[*i] == ',')
			return fp_errf(FP_EPARSE, err, errlen,
				       "hostlist: empty range at offset %zu", *i);
		if (s[*i] == '-')
			return fp_errf(
				FP_EPARSE, err, errlen,
				"hostlist: '-' at offset %zu (negative numbers and ranges of "
				"ranges are refused)",
				*i);
		if (is_sep(s[*i]))
			return fp_errf(FP_EPARSE, err, errlen,
				       "hostlist: separator 0x%02x inside brackets at offset %zu",
				       (unsigned char)s[*i], *i);
		return fp_errf(
			FP_EPARSE, err, errlen,
			"hostlist: byte 0x%02x at offset %zu is not a digit, '-', ',' or ']'",
			(unsigned char)s[*i], *i);
	}
}

/* Parses the item at s[*i] up to the next top-level separator or the end. */
static int parse_item(const char *s, size_t len, size_t *i, struct hl_item *it, char *err,
		      size_t errlen)
{
	size_t lit = *i;
	int rc;

	it->start = *i;
	it->ng = 0;
	it->nranges = 0;
	while (*i < len && !is_sep(s[*i])) {
		unsigned char c = (unsigned char)s[*i];
		if (is_ctl(c))
			return fp_errf(FP_EPARSE, err, errlen,
				       "hostlist: control byte 0x%02x at offset %zu", c, *i);
		if (c == ']')
			return fp_errf(FP_EPARSE, err, errlen,
				       "hostlist: ']' without '[' at offset %zu", *i);
		if (c != '[') {
			(*i)++;
			continue;
		}
		if (it->ng >= HOSTLIST_MAX_GROUPS)
			return fp_errf(
				FP_EPARSE, err, errlen,
				"hostlist: more than %d bracket groups in the name at offset "
				"%zu",
				HOSTLIST_MAX_GROUPS, it->start);
		struct hl_group *g = &it->g[it->ng++];
		g->lit = lit;
		g->lit_len = *i - lit;
		size_t open = (*i)++;
		rc = parse_group(s, len, open, i, it, g, err, errlen);
		if (rc < 0)
			return rc;
		lit = *i;
	}
	it->end = *i;
	it->tail = lit;
	if (it->ng > 0 && lit < it->end)
		return fp_errf(
			FP_EPARSE, err, errlen,
			"hostlist: text after ']' at offset %zu (Slurm allows none after the "
			"last bracket)",
			lit);
	it->count = 1;
	for (size_t k = 0; k < it->ng; k++) {
		if (it->count > HOSTLIST_MAX_NAMES / it->g[k].count) {
			it->count = HOSTLIST_MAX_NAMES + 1;
			break;
		}
		it->count *= it->g[k].count;
	}
	return 0;
}

/* The position of one group's walk: range ri, value v. */
struct hl_pos {
	size_t ri;
	unsigned long long v;
};

/* Writes the item's names in Slurm's order (hostlist.h). */
static int emit_item(struct hostlist *hl, const char *s, const struct hl_item *it, char *err,
		     size_t errlen)
{
	struct hl_pos pos[HOSTLIST_MAX_GROUPS];
	size_t ord[HOSTLIST_MAX_GROUPS]; /* ord[0] varies fastest */
	char name[HOSTLIST_MAX_NAME + 1];
	size_t k;

	if (it->ng == 0) {
		size_t n = it->end - it->start;
		if (n > HOSTLIST_MAX_NAME)
			return fp_errf(FP_EPARSE, err, errlen,
				       "hostlist: name at offset %zu is longer than %d bytes",
				       it->start, HOSTLIST_MAX_NAME);
		push_raw(hl, s + it->start, n);
		return 0;
	}
	/* the last group fastest, then the first, second, ... last-but-one slowest */
	ord[0] = it->ng - 1;
	for (k = 0; k + 1 < it->ng; k++)
		ord[k + 1] = k;
	for (k = 0; k < it->ng; k++) {
		pos[k].ri = it->g[k].r0;
		pos[k].v = it->ranges[pos[k].ri].lo;
	}
	for (;;) {
		size_t n = 0;
		for (k = 0; k < it->ng; k++) {
			const struct hl_group *g = &it->g[k];
			const struct hl_range *r = &it->ranges[pos[k].ri];
			char num[32];
			int w = snprintf(num, sizeof(num), "%0*llu", r->width, pos[k].v);
			if (n + g->lit_len + (size_t)w > HOSTLIST_MAX_NAME)
				return fp_errf(
					FP_EPARSE, err, errlen,
					"hostlist: a name of the item at offset %zu is longer "
					"than %d bytes",
					it->start, HOSTLIST_MAX_NAME);
			memcpy(name + n, s + g->lit, g->lit_len);
			n += g->lit_len;
			memcpy(name + n, num, (size_t)w);
			n += (size_t)w;
		}
		push_raw(hl, name, n);
		/* advance the odometer */
		for (k = 0; k < it->ng; k++) {
			size_t gi = ord[k];
			const struct hl_group *g = &it->g[gi];
			struct hl_pos *p = &pos[gi];
			if (p->v < it->ranges[p->ri].hi) {
				p->v++;
				break;
			}
			if (p->ri + 1 < g->r0 + g->nr) {
				p->ri++;
				p->v = it->ranges[p->ri].lo;
				break;
			}
			p->ri = g->r0;
			p->v = it->ranges[p->ri].lo;
		}
		if (k == it->ng)
			return 0;
	}
}

int hostlist_expand(struct hostlist *hl, const char *s, size_t len, char *err, size_t errlen)
{
	struct hl_item it;
	size_t i = 0, n0 = hl->n, pool0 = hl->pool_len;
	int rc = 0;

	memset(&it, 0, sizeof(it));
	if (len > HOSTLIST_MAX_INPUT)
		return fp_errf(FP_ETOOBIG, err, errlen,
			       "hostlist of %zu bytes, more than the %u allowed", len,
			       HOSTLIST_MAX_INPUT);
	while (i < len) {
		if (is_sep(s[i])) {
			i++;
			continue;
		}
		rc = parse_item(s, len, &i, &it, err, errlen);
		if (rc < 0)
			goto out;
		if (it.count > HOSTLIST_MAX_NAMES - hl->n) {
			rc = fp_errf(FP_ETOOBIG, err, errlen,
				     "hostlist: the item at offset %zu makes more than %d names",
				     it.start, HOSTLIST_MAX_NAMES);
			goto out;
		}
		rc = emit_item(hl, s, &it, err, errlen);
		if (rc < 0)
			goto out;
	}
out:
	if (rc < 0) {
		hl->n = n0;
		hl->pool_len = pool0;
	}
	free(it.ranges);
	return rc;
}

/* ---- compression ---- */

struct hl_ent {
	const char *name;
	size_t plen; /* prefix bytes: the name without its trailing digits */
	int ndig;    /* trailing digits; 0: a name without a number (a "singlet") */
	int fixed;   /* the digits start with a '0' and are more than one */
	unsigned long long num;
};

/* Natural order of a[0..al) and b[0..bl) (Slurm sorts prefixes with strnatcmp): runs of digits
 * compare by value, then the shorter run (fewer leading zeros) first; other bytes by value. Equal
 * only when the bytes are. */
static int nat_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	size_t i = 0, j = 0;
	while (i < al && j < bl) {
		if (is_digit(a[i]) && is_digit(b[j])) {
			size_t i0 = i, j0 = j, ia, jb;
			while (i < al && is_digit(a[i]))
				i++;
			while (j < bl && is_digit(b[j]))
				j++;
			ia = i0;
			jb = j0;
			while (ia + 1 < i && a[ia] == '0')
				ia++;
			while (jb + 1 < j && b[jb] == '0')
				jb++;
			if (i - ia != j - jb)
				return i - ia < j - jb ? -1 : 1;
			int c = memcmp(a + ia, b + jb, i - ia);
			if (c != 0)
				return c;
			if (i - i0 != j - j0)
				return i - i0 < j - j0 ? -1 : 1;
			continue;
		}
		if (a[i] != b[j])
			return (unsigned char)a[i] < (unsigned char)b[j] ? -1 : 1;
		i++;
		j++;
	}
	if (i < al)
		return 1;
	return j < bl ? -1 : 0;
}

static int ent_cmp(const void *pa, const void *pb)
{
	const struct hl_ent *a = pa, *b = pb;
	int c = nat_cmp(a->name, a->plen, b->name, b->plen);
	if (c != 0)
		return c;
	if ((a->ndig == 0) != (b->ndig == 0))
		return a->ndig == 0 ? -1 : 1; /* the singlet first, as hostrange_prefix_cmp */
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	return a->ndig - b->ndig;
}

static int same_prefix(const struct hl_ent *a, const struct hl_ent *b)
{
	return a->plen == b->plen && memcmp(a->name, b->name, a->plen) == 0;
}

int hostlist_compress(const struct hostlist *hl, struct buf *out, char *err, size_t errlen)
{
	struct hl_ent *e = NULL;
	size_t n = 0, i, j;
	int rc = 0;

	buf_reset(out);
	rc = buf_append(out, "", 0);
	if (rc < 0 || hl->n == 0)
		goto out;
	e = xcalloc(hl->n, sizeof(*e));
	for (i = 0; i < hl->n; i++) {
		const char *s = hostlist_name(hl, i);
		size_t len = strlen(s), k = len;
		while (k > 0 && is_digit(s[k - 1]))
			k--;
		e[i].name = s;
		e[i].plen = k;
		if (len - k == 0 || len - k > HOSTLIST_MAX_DIGITS) {
			e[i].plen = len; /* no number, or one too long to hold: written as it is */
			continue;
		}
		e[i].ndig = (int)(len - k);
		e[i].fixed = e[i].ndig > 1 && s[k] == '0';
		for (j = k; j < len; j++)
			e[i].num = e[i].num * 10 + (unsigned long long)(s[j] - '0');
	}
	qsort(e, hl->n, sizeof(*e), ent_cmp);
	for (i = 0; i < hl->n; i++) /* drop duplicates: equal under ent_cmp means equal names */
		if (n == 0 || ent_cmp(&e[n - 1], &e[i]) != 0)
			e[n++] = e[i];

	for (i = 0; i < n; i = j) {
		if (i > 0 && (rc = buf_append(out, ",", 1)) < 0)
			goto out;
		j = i + 1;
		if (e[i].ndig == 0) {
			rc = buf_puts(out, e[i].name);
			if (rc < 0)
				goto out;
			continue;
		}
		while (j < n && e[j].ndig > 0 && same_prefix(&e[i], &e[j]))
			j++;
		if (j == i + 1) {
			rc = buf_puts(out, e[i].name);
			if (rc < 0)
				goto out;
			continue;
		}
		rc = buf_append(out, e[i].name, e[i].plen);
		if (rc == 0)
			rc = buf_append(out, "[", 1);
		for (size_t r = i; r < j && rc == 0;) {
			/* one range: consecutive numbers that one width writes as they are written */
			int w = e[r].ndig;
			size_t t = r + 1;
			while (t < j && e[t].num == e[t - 1].num + 1 &&
			       (e[t].fixed ? e[t].ndig == w : e[t].ndig >= w))
				t++;
			if (r > i)
				rc = buf_append(out, ",", 1);
			if (rc == 0 && t == r + 1)
				rc = buf_printf(out, "%0*llu", w, e[r].num);
			else if (rc == 0)
				rc = buf_printf(out, "%0*llu-%0*llu", w, e[r].num, w, e[t - 1].num);
			r = t;
		}
		if (rc == 0)
			rc = buf_append(out, "]", 1);
		if (rc < 0)
			goto out;
	}
out:
	free(e);
	if (rc < 0)
		return fp_errf(rc, err, errlen, "hostlist: compressed form longer than %zu bytes",
			       out->max);
	return 0;
}
