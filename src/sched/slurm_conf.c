/* sched/slurm_conf.c - slurm.conf and gres.conf into node records with diagnostics, and the
 * NodeName=/PartitionName=/gres.conf lines generated from node specs (slurm_conf.h). One line
 * reader serves both files: physical lines are joined at a trailing '\', comments and escapes
 * go as Slurm's parse_config.c strips them, and the Key=Value pairs of the logical line are
 * handed to the record's handler. Partition membership waits for the end of slurm.conf, as
 * slurmctld builds partitions after every node is known. */
#include "sched/slurm_conf.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/err.h"

#include "base/banned.h"

/* NodeName numbers as given on a line or NodeName=DEFAULT (-1: not given). */
enum {
	R_CPUS,
	R_BOARDS,
	R_SOCKETS,
	R_SPB,
	R_CORES,
	R_THREADS,
	R_MEM,
	R_WEIGHT,
	R__N
};

struct slurm_conf_raw {
	long long num[R__N];
	char state[24];
	char features[128];
	char gres[512];
	int has_state, has_features, has_gres;
};

enum pending_kind {
	PEND_PART,
	PEND_SET
};

struct slurm_conf_pending {
	enum pending_kind kind;
	char name[SLURM_CONF_NAME_LEN];
	char *nodes; /* Nodes= as written, owned; NULL none */
	const char *file;
	unsigned line;
	char text[160];
	int is_default;
	char state[16];
};

struct pair {
	char *key;
	char *val;
};

/* The state of one file being read. */
struct reader {
	struct slurm_conf *c;
	const char *file; /* owned by c->files */
	int depth;
	int gres; /* 1: gres.conf */
};

static int read_text(struct reader *r, const char *text, size_t len, char *err, size_t errlen);

/* ---- diagnostics ---- */

static void cut_text(char *dst, size_t dstlen, const char *src)
{
	size_t l = strlen(src);
	if (l < dstlen) {
		memcpy(dst, src, l + 1);
		return;
	}
	memcpy(dst, src, dstlen - 4);
	memcpy(dst + dstlen - 4, "...", 4);
}

static void diag(struct slurm_conf *c, const char *file, unsigned line, const char *text,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void diag(struct slurm_conf *c, const char *file, unsigned line, const char *text,
		 const char *fmt, ...)
{
	if (c->ndiags >= SLURM_CONF_MAX_DIAGS) {
		c->ndiags_dropped++;
		return;
	}
	if (c->ndiags == c->diags_alloc) {
		c->diags_alloc = c->diags_alloc ? c->diags_alloc * 2 : 16;
		c->diags = xreallocarray(c->diags, c->diags_alloc, sizeof(*c->diags));
	}
	struct slurm_conf_diag *d = &c->diags[c->ndiags++];
	memset(d, 0, sizeof(*d));
	cut_text(d->file, sizeof(d->file), file ? file : "");
	d->line = line;
	cut_text(d->text, sizeof(d->text), text ? text : "");
	va_list ap;
	va_start(ap, fmt);
	char why[512];
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	cut_text(d->why, sizeof(d->why), why);
}

/* ---- lifecycle ---- */

void slurm_conf_init(struct slurm_conf *c)
{
	memset(c, 0, sizeof(*c));
	hmap_init(&c->by_name);
}

void slurm_conf_release(struct slurm_conf *c)
{
	if (!c)
		return;
	free(c->nodes);
	free(c->parts);
	free(c->diags);
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i]);
	free(c->files);
	if (c->by_name.buckets)
		hmap_release(&c->by_name);
	free(c->node_def);
	for (size_t i = 0; i < c->npending; i++)
		free(c->pending[i].nodes);
	free(c->pending);
	memset(c, 0, sizeof(*c)); /* zeroed is initialised: the map is made on first use */
}

const struct slurm_conf_node *slurm_conf_node_get(const struct slurm_conf *c, const char *name)
{
	if (!c->by_name.buckets)
		return NULL;
	uintptr_t v = (uintptr_t)hmap_get(&c->by_name, name);
	return v ? &c->nodes[v - 1] : NULL;
}

static struct slurm_conf_node *node_get(struct slurm_conf *c, const char *name)
{
	return (struct slurm_conf_node *)slurm_conf_node_get(c, name);
}

/* ---- numbers and names ---- */

/* A decimal number of 1-18 digits, at most max. */
static int parse_num(const char *v, long long max, long long *out)
{
	size_t l = strlen(v);
	if (l == 0 || l > 18)
		return -1;
	long long x = 0;
	for (size_t i = 0; i < l; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	if (x > max)
		return -1;
	*out = x;
	return 0;
}

#define COUNT_MAX (1LL << 53)

/* A GRES count: digits with an optional K/M/G/T/P suffix (slurm.conf(5) "Gres"). */
static int parse_count(const char *v, size_t l, long long *out)
{
	if (l == 0 || l > 19)
		return -1;
	int shift = 0;
	switch (v[l - 1]) {
	case 'k':
	case 'K': shift = 10; break;
	case 'm':
	case 'M': shift = 20; break;
	case 'g':
	case 'G': shift = 30; break;
	case 't':
	case 'T': shift = 40; break;
	case 'p':
	case 'P': shift = 50; break;
	default: break;
	}
	if (shift)
		l--;
	if (l == 0 || l > 16)
		return -1;
	long long x = 0;
	for (size_t i = 0; i < l; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	if (shift && x > (COUNT_MAX >> shift))
		return -1;
	x <<= shift;
	if (x > COUNT_MAX)
		return -1;
	*out = x;
	return 0;
}

static int is_word(const char *s, size_t l, int extra)
{
	if (l == 0)
		return 0;
	for (size_t i = 0; i < l; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!isalnum(ch) && ch != '_' && !(extra && (ch == '-' || ch == '.')))
			return 0;
	}
	return 1;
}

static void upcase(char *dst, size_t dstlen, const char *src)
{
	size_t i = 0;
	for (; src[i] && i + 1 < dstlen; i++)
		dst[i] = (char)toupper((unsigned char)src[i]);
	dst[i] = '\0';
}

/* ---- GRES ---- */

/* One item of a GRES list (no commas outside parentheses). */
static int gres_item(const char *s, size_t l, struct slurm_gres *g, char *err, size_t errlen)
{
	/* scontrol's "(IDX:0-3)" / "(S:0-1)" after the count */
	if (l && s[l - 1] == ')') {
		size_t open = l;
		while (open > 0 && s[open - 1] != '(')
			open--;
		if (open > 1 && s[open - 2] != ':')
			l = open - 1;
	}
	const char *f[4];
	size_t fl[4], nf = 0, start = 0;
	for (size_t i = 0; i <= l; i++) {
		if (i == l || s[i] == ':') {
			if (nf == 3)
				return fp_errf(FP_EPARSE, err, errlen,
					       "GRES \"%.*s\": more than name:type:count", (int)l,
					       s);
			f[nf] = s + start;
			fl[nf] = i - start;
			nf++;
			start = i + 1;
		}
	}
	memset(g, 0, sizeof(*g));
	g->count = 1;
	if (!is_word(f[0], fl[0], 0) || fl[0] >= sizeof(g->name))
		return fp_errf(FP_EPARSE, err, errlen, "GRES \"%.*s\": bad name \"%.*s\"", (int)l,
			       s, (int)fl[0], f[0]);
	memcpy(g->name, f[0], fl[0]);
	const char *type = NULL;
	size_t tl = 0;
	if (nf == 2) {
		if (parse_count(f[1], fl[1], &g->count) < 0) {
			type = f[1];
			tl = fl[1];
		}
	} else if (nf == 3) {
		type = f[1];
		tl = fl[1];
		if (parse_count(f[2], fl[2], &g->count) < 0)
			return fp_errf(FP_EPARSE, err, errlen,
				       "GRES \"%.*s\": count \"%.*s\" is not a number", (int)l, s,
				       (int)fl[2], f[2]);
	}
	if (type && !(tl == 6 && memcmp(type, "(null)", 6) == 0)) {
		if (!is_word(type, tl, 1) || tl >= sizeof(g->type))
			return fp_errf(FP_EPARSE, err, errlen, "GRES \"%.*s\": bad type \"%.*s\"",
				       (int)l, s, (int)tl, type);
		memcpy(g->type, type, tl);
	}
	return 0;
}

int slurm_gres_parse(const char *s, size_t len, struct slurm_gres *out, size_t max, size_t *n,
		     char *err, size_t errlen)
{
	*n = 0;
	if (len == 0 || (len == 6 && memcmp(s, "(null)", 6) == 0))
		return 0;
	size_t cnt = 0, start = 0;
	int depth = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] == '(')
			depth++;
		else if (i < len && s[i] == ')')
			depth--;
		if (i < len && (s[i] != ',' || depth > 0))
			continue;
		if (i == start)
			return fp_errf(FP_EPARSE, err, errlen, "GRES \"%.*s\": empty item",
				       (int)len, s);
		if (cnt == max)
			return fp_errf(FP_ETOOBIG, err, errlen,
				       "GRES \"%.*s\": more than %zu items", (int)len, s, max);
		int rc = gres_item(s + start, i - start, &out[cnt], err, errlen);
		if (rc < 0)
			return rc;
		for (size_t j = 0; j < cnt; j++)
			if (strcmp(out[j].name, out[cnt].name) == 0 &&
			    strcmp(out[j].type, out[cnt].type) == 0)
				return fp_errf(FP_EPARSE, err, errlen,
					       "GRES \"%.*s\": %s%s%s given twice", (int)len, s,
					       out[cnt].name, out[cnt].type[0] ? ":" : "",
					       out[cnt].type);
		cnt++;
		start = i + 1;
	}
	*n = cnt;
	return 0;
}

/* ---- lines ---- */

/* Builds the next logical line of t[*pos..len) into line: physical lines joined at a trailing
 * '\', comments cut, escapes removed (parse_config.c _strip_comments, _strip_escapes). Sets
 * *first to the line number it starts on and *bad to a reason when it holds a control byte or
 * is too long. Returns 0 at the end of the text, else 1. */
static int next_line(const char *t, size_t len, size_t *pos, unsigned *lineno, struct buf *line,
		     unsigned *first, const char **bad)
{
	if (*pos >= len)
		return 0;
	buf_reset(line);
	buf_puts(line, "");
	*first = *lineno + 1;
	*bad = NULL;
	for (;;) {
		size_t s = *pos, e = s;
		while (e < len && t[e] != '\n')
			e++;
		*pos = e < len ? e + 1 : e;
		(*lineno)++;
		size_t l = e - s;
		if (l && t[s + l - 1] == '\r')
			l--;
		/* comment: a '#' after an even number of backslashes */
		size_t bs = 0;
		for (size_t i = 0; i < l; i++) {
			if (t[s + i] == '#' && bs % 2 == 0) {
				l = i;
				break;
			}
			bs = t[s + i] == '\\' ? bs + 1 : 0;
		}
		int cont = l && t[s + l - 1] == '\\';
		if (cont)
			l--;
		for (size_t i = 0; i < l; i++) {
			unsigned char ch = (unsigned char)t[s + i];
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				*bad = "a control byte";
		}
		if (!*bad && line->len + l > SLURM_CONF_MAX_LINE)
			*bad = "a line longer than 65536 bytes";
		if (!*bad && buf_append(line, t + s, l) < 0)
			*bad = "a line longer than 65536 bytes";
		if (!cont || *pos >= len)
			break;
	}
	if (*bad) {
		buf_reset(line);
		buf_puts(line, "");
		return 1;
	}
	/* escapes: a backslash keeps the byte after it */
	size_t w = 0;
	for (size_t r = 0; r < line->len; r++) {
		if (line->data[r] == '\\' && r + 1 < line->len)
			r++;
		line->data[w++] = line->data[r];
	}
	line->data[w] = '\0';
	line->len = w;
	return 1;
}

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* Splits s (modified) into Key=Value pairs. Returns the count, or -1 with why. */
static int tokenize(char *s, struct pair *pairs, size_t max, char *why, size_t whylen)
{
	size_t n = 0, i = 0;
	for (;;) {
		while (is_blank(s[i]))
			i++;
		if (!s[i])
			break;
		size_t k = i;
		while (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.')
			i++;
		size_t ke = i;
		while (is_blank(s[i]))
			i++;
		if (ke == k || s[i] != '=') {
			snprintf(why, whylen, "not Key=Value at column %zu", k + 1);
			return -1;
		}
		i++;
		while (is_blank(s[i]))
			i++;
		char *val;
		if (s[i] == '"') {
			val = s + i + 1;
			char *q = strchr(val, '"');
			if (!q) {
				snprintf(why, whylen, "a quote without its end at column %zu",
					 i + 1);
				return -1;
			}
			i = (size_t)(q - s) + 1;
			*q = '\0';
		} else {
			val = s + i;
			while (s[i] && !is_blank(s[i]))
				i++;
			if (val == s + i) {
				s[ke] = '\0';
				snprintf(why, whylen, "%s= without a value", s + k);
				return -1;
			}
			if (s[i])
				s[i++] = '\0';
		}
		if (n == max) {
			snprintf(why, whylen, "more than %zu Key=Value pairs", max);
			return -1;
		}
		s[ke] = '\0';
		pairs[n].key = s + k;
		pairs[n].val = val;
		n++;
	}
	return (int)n;
}

/* ---- nodes ---- */

struct key {
	const char *name;
	int kind; /* K_* */
	int idx;
	long long max;
};

enum {
	K_FIRST,
	K_NUM,
	K_STATE,
	K_FEAT,
	K_GRES,
	K_ADDR,
	K_HOST,
	K_KNOWN
};

/* slurm.conf(5) "NODE CONFIGURATION", Slurm 22.05. K_KNOWN: Slurm's, not read here. */
static const struct key node_keys[] = {
	{"NodeName", K_FIRST, 0, 0},
	{"NodeHostname", K_HOST, 0, 0},
	{"NodeAddr", K_ADDR, 0, 0},
	{"BcastAddr", K_HOST, 0, 0},
	{"Boards", K_NUM, R_BOARDS, 65535},
	{"CoreSpecCount", K_KNOWN, 0, 0},
	{"CoresPerSocket", K_NUM, R_CORES, 65535},
	{"CpuBind", K_KNOWN, 0, 0},
	{"CPUs", K_NUM, R_CPUS, 65535},
	{"Procs", K_NUM, R_CPUS, 65535},
	{"CpuSpecList", K_KNOWN, 0, 0},
	{"Feature", K_FEAT, 0, 0},
	{"Features", K_FEAT, 0, 0},
	{"Gres", K_GRES, 0, 0},
	{"MemSpecLimit", K_KNOWN, 0, 0},
	{"Port", K_KNOWN, 0, 0},
	{"RealMemory", K_NUM, R_MEM, COUNT_MAX},
	{"Reason", K_KNOWN, 0, 0},
	{"Sockets", K_NUM, R_SOCKETS, 65535},
	{"SocketsPerBoard", K_NUM, R_SPB, 65535},
	{"State", K_STATE, 0, 0},
	{"ThreadsPerCore", K_NUM, R_THREADS, 65535},
	{"TmpDisk", K_KNOWN, 0, 0},
	{"TRESWeights", K_KNOWN, 0, 0},
	{"Weight", K_NUM, R_WEIGHT, 4294967295LL},
	{NULL, 0, 0, 0},
};

static const struct key *key_find(const struct key *t, const char *k)
{
	for (; t->name; t++)
		if (strcasecmp(t->name, k) == 0)
			return t;
	return NULL;
}

static void raw_init(struct slurm_conf_raw *r)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < R__N; i++)
		r->num[i] = -1;
}

static int copy_val(char *dst, size_t dstlen, const char *v)
{
	size_t l = strlen(v);
	if (l >= dstlen)
		return -1;
	memcpy(dst, v, l + 1);
	return 0;
}

static int has_dup(const struct pair *p, size_t n, size_t i)
{
	for (size_t j = i + 1; j < n; j++)
		if (strcasecmp(p[i].key, p[j].key) == 0)
			return 1;
	return 0;
}

/* Overlays the keys of a NodeName line onto r. Returns 0, or -1 after a diagnostic. */
static int node_keys_read(struct reader *rd, unsigned line, const char *text, struct pair *p,
			  size_t n, struct slurm_conf_raw *r, const char **addr, int is_default)
{
	struct slurm_conf *c = rd->c;
	int bad = 0;
	for (size_t i = 1; i < n; i++) {
		const struct key *k = key_find(node_keys, p[i].key);
		if (!k) {
			diag(c, rd->file, line, text, "unknown NodeName key %s", p[i].key);
			bad = 1;
			continue;
		}
		if (has_dup(p, n, i)) {
			diag(c, rd->file, line, text,
			     "%s given twice on one line: Slurm uses the last", p[i].key);
			continue;
		}
		switch (k->kind) {
		case K_FIRST:
			diag(c, rd->file, line, text, "NodeName given twice on one line");
			bad = 1;
			break;
		case K_NUM:
			if (parse_num(p[i].val, k->max, &r->num[k->idx]) < 0) {
				diag(c, rd->file, line, text,
				     "%s=%s is not a number from 0 to %lld", k->name, p[i].val,
				     k->max);
				bad = 1;
			}
			break;
		case K_STATE:
			upcase(r->state, sizeof(r->state), p[i].val);
			r->has_state = 1;
			break;
		case K_FEAT:
			if (copy_val(r->features, sizeof(r->features), p[i].val) < 0) {
				diag(c, rd->file, line, text, "%s longer than %zu bytes", k->name,
				     sizeof(r->features) - 1);
				bad = 1;
			}
			r->has_features = 1;
			break;
		case K_GRES:
			if (copy_val(r->gres, sizeof(r->gres), p[i].val) < 0) {
				diag(c, rd->file, line, text, "Gres longer than %zu bytes",
				     sizeof(r->gres) - 1);
				bad = 1;
			}
			r->has_gres = 1;
			break;
		case K_ADDR:
		case K_HOST:
			if (is_default) {
				diag(c, rd->file, line, text,
				     "%s is not allowed with NodeName=DEFAULT", k->name);
				bad = 1;
			} else if (k->kind == K_ADDR) {
				*addr = p[i].val;
			}
			break;
		default: break;
		}
	}
	return bad ? -1 : 0;
}

static int node_line(struct reader *rd, unsigned line, const char *text, struct pair *p, size_t n,
		     char *err, size_t errlen)
{
	struct slurm_conf *c = rd->c;
	if (!c->node_def) {
		c->node_def = xmalloc(sizeof(*c->node_def));
		raw_init(c->node_def);
	}
	if (strcasecmp(p[0].val, "DEFAULT") == 0) {
		struct slurm_conf_raw r = *c->node_def;
		const char *addr = NULL;
		if (node_keys_read(rd, line, text, p, n, &r, &addr, 1) == 0)
			*c->node_def = r;
		return 0;
	}
	struct slurm_conf_raw r = *c->node_def;
	const char *addr = NULL;
	if (node_keys_read(rd, line, text, p, n, &r, &addr, 0) < 0)
		return 0;
	struct slurm_gres gres[SLURM_CONF_MAX_GRES];
	size_t ngres = 0;
	char why[256] = "";
	if (r.has_gres && slurm_gres_parse(r.gres, strlen(r.gres), gres, SLURM_CONF_MAX_GRES,
					   &ngres, why, sizeof(why)) < 0) {
		diag(c, rd->file, line, text, "%s", why);
		return 0;
	}
	if (r.num[R_SOCKETS] >= 0 && r.num[R_SPB] >= 0) {
		diag(c, rd->file, line, text,
		     "both Sockets and SocketsPerBoard: give one (slurm.conf(5))");
		return 0;
	}
	long long boards = r.num[R_BOARDS] > 0 ? r.num[R_BOARDS] : 1;
	long long cores = r.num[R_CORES] > 0 ? r.num[R_CORES] : 1;
	long long threads = r.num[R_THREADS] > 0 ? r.num[R_THREADS] : 1;
	long long sockets = 1;
	if (r.num[R_SPB] > 0)
		sockets = boards * r.num[R_SPB];
	else if (r.num[R_SOCKETS] > 0)
		sockets = r.num[R_SOCKETS];
	else if (r.num[R_CPUS] > 0 && r.num[R_CPUS] / (cores * threads) > 0)
		sockets = r.num[R_CPUS] / (cores * threads);
	long long cpus = r.num[R_CPUS] > 0 ? r.num[R_CPUS] : sockets * cores * threads;

	struct hostlist names, addrs;
	hostlist_init(&names);
	hostlist_init(&addrs);
	int rc = 0;
	if (hostlist_expand(&names, p[0].val, strlen(p[0].val), why, sizeof(why)) < 0 ||
	    names.n == 0) {
		diag(c, rd->file, line, text, "NodeName=%s does not expand: %s", p[0].val,
		     names.n == 0 && !why[0] ? "no names" : why);
		goto out;
	}
	if (addr && (hostlist_expand(&addrs, addr, strlen(addr), why, sizeof(why)) < 0 ||
		     addrs.n != names.n)) {
		diag(c, rd->file, line, text,
		     "NodeAddr=%s does not give one address per node (%zu)", addr, names.n);
		goto out;
	}
	if (c->nnodes + names.n > SLURM_CONF_MAX_NODES) {
		rc = fp_errf(FP_ETOOBIG, err, errlen, "%s:%u: more than %u nodes", rd->file, line,
			     SLURM_CONF_MAX_NODES);
		goto out;
	}
	size_t dups = 0;
	const char *first_dup = NULL;
	for (size_t i = 0; i < names.n; i++) {
		const char *name = hostlist_name(&names, i);
		if (node_get(c, name)) {
			if (!dups++)
				first_dup = name;
			continue;
		}
		if (c->nnodes == c->nodes_alloc) {
			c->nodes_alloc = c->nodes_alloc ? c->nodes_alloc * 2 : 16;
			c->nodes = xreallocarray(c->nodes, c->nodes_alloc, sizeof(*c->nodes));
		}
		struct slurm_conf_node *nd = &c->nodes[c->nnodes];
		memset(nd, 0, sizeof(*nd));
		snprintf(nd->name, sizeof(nd->name), "%s", name);
		if (addr)
			snprintf(nd->addr, sizeof(nd->addr), "%s", hostlist_name(&addrs, i));
		nd->cpus = cpus;
		nd->boards = boards;
		nd->sockets = sockets;
		nd->cores_per_socket = cores;
		nd->threads_per_core = threads;
		nd->real_memory_mb = r.num[R_MEM];
		nd->weight = r.num[R_WEIGHT];
		if (r.has_state)
			snprintf(nd->state, sizeof(nd->state), "%s", r.state);
		if (r.has_features)
			snprintf(nd->features, sizeof(nd->features), "%s", r.features);
		memcpy(nd->gres, gres, ngres * sizeof(gres[0]));
		nd->ngres = ngres;
		nd->file = rd->file;
		nd->line = line;
		c->nnodes++;
		hmap_put(&c->by_name, nd->name, (void *)(uintptr_t)c->nnodes);
	}
	if (dups)
		diag(c, rd->file, line, text,
		     "%zu node(s) already defined by an earlier NodeName line, first %s; kept the "
		     "first definition",
		     dups, first_dup);
out:
	hostlist_release(&names);
	hostlist_release(&addrs);
	return rc;
}

/* ---- partitions and node sets ---- */

static struct slurm_conf_pending *pending_add(struct slurm_conf *c)
{
	if (c->npending == c->pending_alloc) {
		c->pending_alloc = c->pending_alloc ? c->pending_alloc * 2 : 8;
		c->pending = xreallocarray(c->pending, c->pending_alloc, sizeof(*c->pending));
	}
	struct slurm_conf_pending *pd = &c->pending[c->npending++];
	memset(pd, 0, sizeof(*pd));
	return pd;
}

static void part_line(struct reader *rd, unsigned line, const char *text, struct pair *p, size_t n,
		      enum pending_kind kind)
{
	struct slurm_conf *c = rd->c;
	const char *first = kind == PEND_PART ? "PartitionName" : "NodeSet";
	if (!is_word(p[0].val, strlen(p[0].val), 1) || strlen(p[0].val) >= SLURM_CONF_NAME_LEN) {
		diag(c, rd->file, line, text,
		     "%s=%s is not a name of at most %d letters, digits, "
		     "'_', '-' or '.'",
		     first, p[0].val, SLURM_CONF_NAME_LEN - 1);
		return;
	}
	const char *nodes = NULL, *state = NULL;
	int is_default = 0;
	for (size_t i = 1; i < n; i++) {
		if (strcasecmp(p[i].key, "Nodes") == 0) {
			nodes = p[i].val;
		} else if (kind == PEND_SET && strcasecmp(p[i].key, "Feature") == 0) {
			diag(c, rd->file, line, text,
			     "NodeSet by Feature is not mapped: partitions naming %s get no nodes "
			     "from it",
			     p[0].val);
			return;
		} else if (kind == PEND_PART && strcasecmp(p[i].key, "Default") == 0) {
			is_default = strcasecmp(p[i].val, "YES") == 0;
		} else if (kind == PEND_PART && strcasecmp(p[i].key, "State") == 0) {
			state = p[i].val;
		}
		/* every other partition key (MaxTime, AllowGroups, ...) is Slurm's limit, not a
		 * node's: accepted as it is */
	}
	if (kind == PEND_PART && strcasecmp(p[0].val, "DEFAULT") == 0) {
		if (nodes)
			diag(c, rd->file, line, text,
			     "Nodes= on PartitionName=DEFAULT is not mapped");
		return;
	}
	struct slurm_conf_pending *pd = pending_add(c);
	pd->kind = kind;
	snprintf(pd->name, sizeof(pd->name), "%s", p[0].val);
	pd->nodes = nodes ? xstrdup(nodes) : NULL;
	pd->file = rd->file;
	pd->line = line;
	cut_text(pd->text, sizeof(pd->text), text);
	pd->is_default = is_default;
	if (state)
		upcase(pd->state, sizeof(pd->state), state);
}

static void node_add_part(struct slurm_conf *c, struct slurm_conf_node *nd,
			  const struct slurm_conf_pending *pd)
{
	for (size_t i = 0; i < nd->nparts; i++)
		if (strcmp(nd->parts[i], pd->name) == 0)
			return;
	if (nd->nparts == SLURM_CONF_MAX_PARTS) {
		diag(c, pd->file, pd->line, pd->text, "node %s is in more than %d partitions",
		     nd->name, SLURM_CONF_MAX_PARTS);
		return;
	}
	snprintf(nd->parts[nd->nparts++], SLURM_CONF_NAME_LEN, "%s", pd->name);
}

static const struct slurm_conf_pending *set_find(const struct slurm_conf *c, const char *name)
{
	for (size_t i = 0; i < c->npending; i++)
		if (c->pending[i].kind == PEND_SET && strcmp(c->pending[i].name, name) == 0)
			return &c->pending[i];
	return NULL;
}

/* Adds the nodes of expr to the partition pd (through node sets, one level, as Slurm's
 * NodeSet cannot name a NodeSet). */
static void part_members(struct slurm_conf *c, const struct slurm_conf_pending *pd,
			 const char *expr, int via_set)
{
	struct hostlist hl;
	hostlist_init(&hl);
	char why[256];
	if (hostlist_expand(&hl, expr, strlen(expr), why, sizeof(why)) < 0) {
		diag(c, pd->file, pd->line, pd->text, "Nodes=%s does not expand: %s", expr, why);
		hostlist_release(&hl);
		return;
	}
	size_t unknown = 0;
	const char *first = NULL;
	for (size_t i = 0; i < hl.n; i++) {
		const char *name = hostlist_name(&hl, i);
		struct slurm_conf_node *nd = node_get(c, name);
		const struct slurm_conf_pending *set;
		if (nd) {
			node_add_part(c, nd, pd);
		} else if (strcasecmp(name, "ALL") == 0) {
			for (size_t j = 0; j < c->nnodes; j++)
				node_add_part(c, &c->nodes[j], pd);
		} else if (!via_set && (set = set_find(c, name)) && set->nodes) {
			part_members(c, pd, set->nodes, 1);
		} else if (!unknown++) {
			first = name;
		}
	}
	if (unknown)
		diag(c, pd->file, pd->line, pd->text,
		     "%zu name(s) in Nodes= that no NodeName line defines, first %s", unknown,
		     first);
	hostlist_release(&hl);
}

static void resolve_parts(struct slurm_conf *c)
{
	for (size_t i = 0; i < c->npending; i++) {
		struct slurm_conf_pending *pd = &c->pending[i];
		if (pd->kind != PEND_PART)
			continue;
		if (c->nparts == c->parts_alloc) {
			c->parts_alloc = c->parts_alloc ? c->parts_alloc * 2 : 8;
			c->parts = xreallocarray(c->parts, c->parts_alloc, sizeof(*c->parts));
		}
		struct slurm_conf_part *pt = &c->parts[c->nparts++];
		memset(pt, 0, sizeof(*pt));
		snprintf(pt->name, sizeof(pt->name), "%s", pd->name);
		pt->is_default = pd->is_default;
		snprintf(pt->state, sizeof(pt->state), "%s", pd->state);
		if (pd->nodes)
			part_members(c, pd, pd->nodes, 0);
	}
}

/* ---- gres.conf ---- */

static const char *const gres_known[] = {"Links", "Flags", "MultipleFiles", NULL};

static void gres_line(struct reader *rd, unsigned line, const char *text, struct pair *p, size_t n)
{
	struct slurm_conf *c = rd->c;
	const char *nodes = NULL, *name = NULL, *type = NULL, *file = NULL, *count = NULL,
		   *cores = NULL, *autodetect = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *k = p[i].key;
		const char **slot = NULL;
		if (strcasecmp(k, "NodeName") == 0)
			slot = &nodes;
		else if (strcasecmp(k, "Name") == 0)
			slot = &name;
		else if (strcasecmp(k, "Type") == 0)
			slot = &type;
		else if (strcasecmp(k, "File") == 0)
			slot = &file;
		else if (strcasecmp(k, "Count") == 0)
			slot = &count;
		else if (strcasecmp(k, "Cores") == 0 || strcasecmp(k, "CPUs") == 0)
			slot = &cores;
		else if (strcasecmp(k, "AutoDetect") == 0)
			slot = &autodetect;
		int known = 0;
		for (size_t j = 0; gres_known[j]; j++)
			known |= strcasecmp(k, gres_known[j]) == 0;
		if (!slot && !known) {
			diag(c, rd->file, line, text, "unknown gres.conf key %s", k);
			return;
		}
		if (slot && *slot) {
			diag(c, rd->file, line, text, "%s given twice on one line", k);
			return;
		}
		if (slot)
			*slot = p[i].val;
	}
	char why[256];
	struct slurm_gres_dev dev;
	memset(&dev, 0, sizeof(dev));
	if (!name && !autodetect) {
		diag(c, rd->file, line, text, "a gres.conf line without Name= or AutoDetect=");
		return;
	}
	if (autodetect && strlen(autodetect) >= sizeof(c->autodetect)) {
		diag(c, rd->file, line, text, "AutoDetect=%s is not a mode", autodetect);
		return;
	}
	if (name) {
		if (!is_word(name, strlen(name), 0) || strlen(name) >= sizeof(dev.name) ||
		    (type &&
		     (!is_word(type, strlen(type), 1) || strlen(type) >= sizeof(dev.type)))) {
			diag(c, rd->file, line, text, "bad GRES Name or Type");
			return;
		}
		snprintf(dev.name, sizeof(dev.name), "%s", name);
		snprintf(dev.type, sizeof(dev.type), "%s", type ? type : "");
		dev.count = 1;
		if (file) {
			struct hostlist files;
			hostlist_init(&files);
			if (strlen(file) >= sizeof(dev.file) ||
			    hostlist_expand(&files, file, strlen(file), why, sizeof(why)) < 0 ||
			    files.n == 0) {
				diag(c, rd->file, line, text,
				     "File=%s does not expand to device files", file);
				hostlist_release(&files);
				return;
			}
			dev.count = (long long)files.n;
			hostlist_release(&files);
			snprintf(dev.file, sizeof(dev.file), "%s", file);
		}
		if (count && parse_count(count, strlen(count), &dev.count) < 0) {
			diag(c, rd->file, line, text, "Count=%s is not a number", count);
			return;
		}
		if (cores && strlen(cores) >= sizeof(dev.cores)) {
			diag(c, rd->file, line, text, "Cores= longer than %zu bytes",
			     sizeof(dev.cores) - 1);
			return;
		}
		snprintf(dev.cores, sizeof(dev.cores), "%s", cores ? cores : "");
	}
	if (!nodes) {
		if (autodetect && !name) {
			snprintf(c->autodetect, sizeof(c->autodetect), "%s", autodetect);
			return;
		}
		for (size_t i = 0; i < c->nnodes; i++) {
			struct slurm_conf_node *nd = &c->nodes[i];
			if (autodetect)
				snprintf(nd->autodetect, sizeof(nd->autodetect), "%s", autodetect);
			if (name && nd->ndevs < SLURM_CONF_MAX_DEVS)
				nd->devs[nd->ndevs++] = dev;
			else if (name)
				diag(c, rd->file, line, text,
				     "node %s has more than %d gres.conf lines", nd->name,
				     SLURM_CONF_MAX_DEVS);
		}
		return;
	}
	struct hostlist hl;
	hostlist_init(&hl);
	if (hostlist_expand(&hl, nodes, strlen(nodes), why, sizeof(why)) < 0) {
		diag(c, rd->file, line, text, "NodeName=%s does not expand: %s", nodes, why);
		hostlist_release(&hl);
		return;
	}
	size_t unknown = 0;
	const char *first = NULL;
	for (size_t i = 0; i < hl.n; i++) {
		struct slurm_conf_node *nd = node_get(c, hostlist_name(&hl, i));
		if (!nd) {
			if (!unknown++)
				first = hostlist_name(&hl, i);
			continue;
		}
		if (autodetect)
			snprintf(nd->autodetect, sizeof(nd->autodetect), "%s", autodetect);
		if (!name)
			continue;
		if (nd->ndevs == SLURM_CONF_MAX_DEVS) {
			diag(c, rd->file, line, text, "node %s has more than %d gres.conf lines",
			     nd->name, SLURM_CONF_MAX_DEVS);
			continue;
		}
		nd->devs[nd->ndevs++] = dev;
	}
	if (unknown)
		diag(c, rd->file, line, text,
		     "%zu node(s) that slurm.conf does not define, first %s", unknown, first);
	hostlist_release(&hl);
}

/* gres.conf counts against slurm.conf's Gres, per GRES name. */
static void gres_check(struct slurm_conf *c)
{
	for (size_t i = 0; i < c->nnodes; i++) {
		struct slurm_conf_node *nd = &c->nodes[i];
		for (size_t d = 0; d < nd->ndevs; d++) {
			int seen = 0;
			for (size_t e = 0; e < d; e++)
				seen |= strcmp(nd->devs[e].name, nd->devs[d].name) == 0;
			if (seen)
				continue;
			long long in_gres = 0, in_conf = 0;
			for (size_t e = d; e < nd->ndevs; e++)
				if (strcmp(nd->devs[e].name, nd->devs[d].name) == 0)
					in_conf += nd->devs[e].count;
			for (size_t g = 0; g < nd->ngres; g++)
				if (strcmp(nd->gres[g].name, nd->devs[d].name) == 0)
					in_gres += nd->gres[g].count;
			if (in_gres != in_conf)
				diag(c, nd->file, nd->line, "",
				     "node %s: gres.conf gives %lld %s, its Gres= %lld", nd->name,
				     in_conf, nd->devs[d].name, in_gres);
		}
	}
}

/* ---- files ---- */

static const char *file_add(struct slurm_conf *c, const char *name)
{
	if (c->nfiles % 8 == 0)
		c->files = xreallocarray(c->files, c->nfiles + 8, sizeof(*c->files));
	c->files[c->nfiles] = xstrdup(name);
	return c->files[c->nfiles++];
}

static void include_line(struct reader *rd, unsigned line, const char *text, const char *arg)
{
	struct slurm_conf *c = rd->c;
	char path[512];
	size_t w = 0;
	for (size_t i = 0; arg[i]; i++) {
		if (arg[i] == '%' && arg[i + 1] == 'c') {
			if (!c->cluster_name[0]) {
				diag(c, rd->file, line, text, "%%c before ClusterName is set");
				return;
			}
			size_t l = strlen(c->cluster_name);
			if (w + l >= sizeof(path))
				goto long_path;
			memcpy(path + w, c->cluster_name, l);
			w += l;
			i++;
			continue;
		}
		if (w + 1 >= sizeof(path))
			goto long_path;
		path[w++] = arg[i];
	}
	path[w] = '\0';
	while (w && is_blank(path[w - 1]))
		path[--w] = '\0';
	if (!w) {
		diag(c, rd->file, line, text, "Include without a file");
		return;
	}
	char full[768];
	if (path[0] != '/' && c->top_dir[0])
		snprintf(full, sizeof(full), "%s/%s", c->top_dir, path);
	else
		snprintf(full, sizeof(full), "%s", path);
	if (!c->reader) {
		diag(c, rd->file, line, text, "Include %s not read (no file reader)", full);
		return;
	}
	if (rd->depth >= SLURM_CONF_MAX_DEPTH) {
		diag(c, rd->file, line, text, "Include %s nested more than %d deep", full,
		     SLURM_CONF_MAX_DEPTH);
		return;
	}
	if (c->nfiles >= SLURM_CONF_MAX_FILES) {
		diag(c, rd->file, line, text, "Include %s: more than %d files", full,
		     SLURM_CONF_MAX_FILES);
		return;
	}
	size_t room = c->total_bytes < SLURM_CONF_MAX_TOTAL ? SLURM_CONF_MAX_TOTAL - c->total_bytes
							    : 0;
	if (room > SLURM_CONF_MAX_TEXT)
		room = SLURM_CONF_MAX_TEXT;
	struct buf b;
	buf_init(&b, room + 1);
	char why[256] = "";
	int rc = c->reader(c->reader_ctx, full, &b, room, why, sizeof(why));
	if (rc == 0 && b.len > room)
		rc = fp_errf(FP_ETOOBIG, why, sizeof(why), "more than %zu bytes", room);
	if (rc < 0) {
		diag(c, rd->file, line, text, "Include %s: %s", full,
		     why[0] ? why : fp_err_msg(rc));
		buf_release(&b);
		return;
	}
	struct reader sub = {.c = c,
			     .file = file_add(c, full),
			     .depth = rd->depth + 1,
			     .gres = rd->gres};
	c->total_bytes += b.len;
	char err[256];
	if (read_text(&sub, b.data ? b.data : "", b.len, err, sizeof(err)) < 0)
		diag(c, rd->file, line, text, "Include %s: %s", full, err);
	buf_release(&b);
	return;
long_path:
	diag(c, rd->file, line, text, "Include path longer than %zu bytes", sizeof(path) - 1);
}

static int read_text(struct reader *rd, const char *t, size_t len, char *err, size_t errlen)
{
	struct slurm_conf *c = rd->c;
	struct buf line, copy;
	buf_init(&line, SLURM_CONF_MAX_LINE + 1);
	buf_init(&copy, SLURM_CONF_MAX_LINE + 1);
	struct pair *pairs = xcalloc(SLURM_CONF_MAX_PAIRS, sizeof(*pairs));
	size_t pos = 0;
	unsigned lineno = 0, first = 0;
	const char *bad = NULL;
	int rc = 0;
	while (rc == 0 && next_line(t, len, &pos, &lineno, &line, &first, &bad)) {
		if (bad) {
			diag(c, rd->file, first, "", "%s", bad);
			continue;
		}
		const char *s = line.data;
		while (is_blank(*s))
			s++;
		if (!*s)
			continue;
		if (strncasecmp(s, "include", 7) == 0 && is_blank(s[7])) {
			const char *a = s + 7;
			while (is_blank(*a))
				a++;
			include_line(rd, first, s, a);
			continue;
		}
		buf_reset(&copy);
		buf_puts(&copy, s);
		char why[256];
		int n = tokenize(copy.data, pairs, SLURM_CONF_MAX_PAIRS, why, sizeof(why));
		if (n < 0) {
			diag(c, rd->file, first, s, "%s", why);
			continue;
		}
		if (rd->gres) {
			gres_line(rd, first, s, pairs, (size_t)n);
			continue;
		}
		const char *k = pairs[0].key;
		if (strcasecmp(k, "NodeName") == 0)
			rc = node_line(rd, first, s, pairs, (size_t)n, err, errlen);
		else if (strcasecmp(k, "PartitionName") == 0)
			part_line(rd, first, s, pairs, (size_t)n, PEND_PART);
		else if (strcasecmp(k, "NodeSet") == 0)
			part_line(rd, first, s, pairs, (size_t)n, PEND_SET);
		else if (strcasecmp(k, "DownNodes") == 0)
			diag(c, rd->file, first, s,
			     "DownNodes is not mapped: fleetplane reads drained and down nodes from "
			     "the running slurmctld");
		else if (strcasecmp(k, "FrontendName") == 0)
			diag(c, rd->file, first, s, "FrontendName is not mapped");
		else
			for (int i = 0; i < n; i++)
				if (strcasecmp(pairs[i].key, "ClusterName") == 0)
					snprintf(c->cluster_name, sizeof(c->cluster_name), "%s",
						 pairs[i].val);
	}
	free(pairs);
	buf_release(&line);
	buf_release(&copy);
	return rc;
}

static int parse_top(struct slurm_conf *c, const char *file, const char *text, size_t len,
		     slurm_conf_read_fn *reader, void *ctx, int gres, char *err, size_t errlen)
{
	if (!c || !file || (!text && len))
		return fp_errf(FP_EINVAL, err, errlen, "slurm_conf: no conf or file");
	if (len > SLURM_CONF_MAX_TEXT)
		return fp_errf(FP_ETOOBIG, err, errlen, "%s: more than %u bytes", file,
			       SLURM_CONF_MAX_TEXT);
	if (!c->by_name.buckets)
		hmap_init(&c->by_name);
	c->reader = reader;
	c->reader_ctx = ctx;
	c->total_bytes = len;
	const char *slash = strrchr(file, '/');
	if (slash && (size_t)(slash - file) < sizeof(c->top_dir))
		snprintf(c->top_dir, sizeof(c->top_dir), "%.*s", (int)(slash - file), file);
	else
		c->top_dir[0] = '\0';
	if (slash == file)
		snprintf(c->top_dir, sizeof(c->top_dir), "/");
	struct reader rd = {.c = c, .file = file_add(c, file), .depth = 0, .gres = gres};
	return read_text(&rd, text ? text : "", len, err, errlen);
}

int slurm_conf_parse(struct slurm_conf *c, const char *file, const char *text, size_t len,
		     slurm_conf_read_fn *reader, void *reader_ctx, char *err, size_t errlen)
{
	int rc = parse_top(c, file, text, len, reader, reader_ctx, 0, err, errlen);
	if (rc == 0)
		resolve_parts(c);
	return rc;
}

int slurm_conf_parse_gres(struct slurm_conf *c, const char *file, const char *text, size_t len,
			  slurm_conf_read_fn *reader, void *reader_ctx, char *err, size_t errlen)
{
	int rc = parse_top(c, file, text, len, reader, reader_ctx, 1, err, errlen);
	if (rc == 0)
		gres_check(c);
	return rc;
}

/* ---- generating ---- */

static int spec_check(const struct slurm_conf_spec *s, char *err, size_t errlen)
{
	struct hostlist hl;
	hostlist_init(&hl);
	char why[256];
	int rc = s->name ? hostlist_push(&hl, s->name, strlen(s->name), why, sizeof(why))
			 : fp_errf(FP_EINVAL, why, sizeof(why), "no name");
	hostlist_release(&hl);
	if (rc < 0)
		return fp_errf(FP_EINVAL, err, errlen, "node name: %s", why);
	for (size_t i = 0; i < s->ngres; i++)
		if (!is_word(s->gres[i].name, strlen(s->gres[i].name), 0) ||
		    (s->gres[i].type[0] && !is_word(s->gres[i].type, strlen(s->gres[i].type), 1)) ||
		    s->gres[i].count < 0)
			return fp_errf(FP_EINVAL, err, errlen, "node %s: bad GRES %s:%s:%lld",
				       s->name, s->gres[i].name, s->gres[i].type, s->gres[i].count);
	for (size_t i = 0; i < s->nparts; i++)
		if (!s->parts[i] || !is_word(s->parts[i], strlen(s->parts[i]), 1))
			return fp_errf(FP_EINVAL, err, errlen, "node %s: bad partition name",
				       s->name);
	return 0;
}

static void spec_attrs(const struct slurm_conf_spec *s, struct buf *b)
{
	buf_reset(b);
	buf_puts(b, "");
	if (s->cpus > 0)
		buf_printf(b, " CPUs=%lld", s->cpus);
	if (s->sockets > 0)
		buf_printf(b, " Sockets=%lld", s->sockets);
	if (s->cores_per_socket > 0)
		buf_printf(b, " CoresPerSocket=%lld", s->cores_per_socket);
	if (s->threads_per_core > 0)
		buf_printf(b, " ThreadsPerCore=%lld", s->threads_per_core);
	if (s->real_memory_mb > 0)
		buf_printf(b, " RealMemory=%lld", s->real_memory_mb);
	int any = 0;
	for (size_t i = 0; i < s->ngres; i++) {
		const struct slurm_gres *g = &s->gres[i];
		buf_printf(b, "%s%s%s%s:%lld", any++ ? "," : " Gres=", g->name,
			   g->type[0] ? ":" : "", g->type, g->count);
	}
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct slurm_conf_spec *base = arg;
	return strcmp(base[*(const size_t *)a].name, base[*(const size_t *)b].name);
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct group {
	char *attrs;
	struct hostlist hl;
};

int slurm_conf_render_nodes(const struct slurm_conf_spec *specs, size_t n, struct buf *out,
			    char *err, size_t errlen)
{
	int rc = 0;
	size_t *order = xcalloc(n + 1, sizeof(*order));
	struct group *groups = xcalloc(n + 1, sizeof(*groups));
	size_t ngroups = 0;
	char **pnames = NULL;
	struct hostlist *pmembers = NULL;
	size_t npart = 0, palloc = 0;
	struct hmap gidx, pidx, seen;
	hmap_init(&gidx);
	hmap_init(&pidx);
	hmap_init(&seen);
	struct buf attrs, text, hl;
	buf_init(&attrs, 0);
	buf_init(&text, out->max ? out->max : 0);
	buf_init(&hl, 0);
	for (size_t i = 0; i < n; i++) {
		if ((rc = spec_check(&specs[i], err, errlen)) < 0)
			goto out;
		if (hmap_put(&seen, specs[i].name, (void *)1)) {
			rc = fp_errf(FP_EINVAL, err, errlen, "node %s given twice", specs[i].name);
			goto out;
		}
		order[i] = i;
	}
	qsort_r(order, n, sizeof(*order), by_name, (void *)specs);
	for (size_t k = 0; k < n; k++) {
		const struct slurm_conf_spec *s = &specs[order[k]];
		spec_attrs(s, &attrs);
		uintptr_t g = (uintptr_t)hmap_get(&gidx, attrs.data);
		if (!g) {
			groups[ngroups].attrs = xstrdup(attrs.data);
			hostlist_init(&groups[ngroups].hl);
			ngroups++;
			g = ngroups;
			hmap_put(&gidx, attrs.data, (void *)g);
		}
		hostlist_push(&groups[g - 1].hl, s->name, strlen(s->name), NULL, 0);
		for (size_t p = 0; p < s->nparts; p++) {
			uintptr_t pi = (uintptr_t)hmap_get(&pidx, s->parts[p]);
			if (!pi) {
				if (npart == palloc) {
					palloc = palloc ? palloc * 2 : 8;
					pnames = xreallocarray(pnames, palloc, sizeof(*pnames));
					pmembers = xreallocarray(pmembers, palloc,
								 sizeof(*pmembers));
				}
				pnames[npart] = xstrdup(s->parts[p]);
				hostlist_init(&pmembers[npart]);
				npart++;
				pi = npart;
				hmap_put(&pidx, s->parts[p], (void *)pi);
			}
			hostlist_push(&pmembers[pi - 1], s->name, strlen(s->name), NULL, 0);
		}
	}
	for (size_t g = 0; g < ngroups; g++) {
		if ((rc = hostlist_compress(&groups[g].hl, &hl, err, errlen)) < 0 ||
		    (rc = buf_printf(&text, "NodeName=%s%s\n", hl.data, groups[g].attrs)) < 0)
			goto toobig;
	}
	/* partitions sorted by name: sort a copy of the names, then look each up */
	char **sorted = xcalloc(npart + 1, sizeof(*sorted));
	if (npart)
		memcpy(sorted, pnames, npart * sizeof(*sorted));
	qsort(sorted, npart, sizeof(*sorted), by_str);
	for (size_t p = 0; p < npart && rc == 0; p++) {
		uintptr_t pi = (uintptr_t)hmap_get(&pidx, sorted[p]);
		if ((rc = hostlist_compress(&pmembers[pi - 1], &hl, err, errlen)) < 0 ||
		    (rc = buf_printf(&text, "PartitionName=%s Nodes=%s\n", sorted[p], hl.data)) < 0)
			rc = FP_ETOOBIG;
	}
	free(sorted);
	if (rc < 0)
		goto toobig;
	if (text.len && (rc = buf_append(out, text.data, text.len)) < 0)
		goto toobig;
	goto out;
toobig:
	rc = fp_errf(FP_ETOOBIG, err, errlen, "generated lines longer than the output allows");
out:
	for (size_t g = 0; g < ngroups; g++) {
		free(groups[g].attrs);
		hostlist_release(&groups[g].hl);
	}
	for (size_t p = 0; p < npart; p++) {
		free(pnames[p]);
		hostlist_release(&pmembers[p]);
	}
	free(pnames);
	free(pmembers);
	free(groups);
	free(order);
	hmap_release(&gidx);
	hmap_release(&pidx);
	hmap_release(&seen);
	buf_release(&attrs);
	buf_release(&text);
	buf_release(&hl);
	return rc;
}

int slurm_conf_render_gres(const struct slurm_conf_spec *spec, struct buf *out, char *err,
			   size_t errlen)
{
	int rc = spec_check(spec, err, errlen);
	if (rc < 0)
		return rc;
	struct buf text;
	buf_init(&text, out->max ? out->max : 0);
	long long dev = 0;
	for (size_t i = 0; i < spec->ngres && rc == 0; i++) {
		const struct slurm_gres *g = &spec->gres[i];
		const char *t = g->type[0] ? " Type=" : "";
		if (strcmp(g->name, "gpu") == 0) {
			if (g->count == 0)
				continue;
			if (dev + g->count > 1000000) {
				rc = fp_errf(FP_EINVAL, err, errlen, "node %s: %lld GPUs",
					     spec->name, dev + g->count);
				break;
			}
			if (g->count == 1)
				rc = buf_printf(&text,
						"NodeName=%s Name=gpu%s%s File=/dev/nvidia%lld\n",
						spec->name, t, g->type, dev);
			else
				rc = buf_printf(
					&text,
					"NodeName=%s Name=gpu%s%s File=/dev/nvidia[%lld-%lld]\n",
					spec->name, t, g->type, dev, dev + g->count - 1);
			dev += g->count;
		} else {
			rc = buf_printf(&text, "NodeName=%s Name=%s%s%s Count=%lld\n", spec->name,
					g->name, t, g->type, g->count);
		}
		if (rc < 0 && rc != FP_EINVAL)
			rc = fp_errf(FP_ETOOBIG, err, errlen, "gres.conf lines too long");
	}
	if (rc == 0 && text.len && buf_append(out, text.data, text.len) < 0)
		rc = fp_errf(FP_ETOOBIG, err, errlen, "gres.conf lines too long");
	buf_release(&text);
	return rc;
}
