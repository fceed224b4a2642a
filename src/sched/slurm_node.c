/* sched/slurm_node.c - one `scontrol show node -o` record (sched/slurm_node.h has the contract).
 * The greedy keys and the keys that end them follow the order slurm_sprint_node_table prints
 * (Slurm src/api/node_info.c); every other value is one blank-free token. Pure; bounded. */
#include "sched/slurm_node.h"

#include <stdio.h>
#include <string.h>

#include "base/err.h"

#include "base/banned.h"

/* The keys node_info.c prints after Reason=, in order; Comment= and Extra= end at the keys after
 * them in this list. */
static const char *const after_reason[] = {
	"Comment",
	"Extra",
	"InstanceId",
	"InstanceType",
	"ReservationName",
	"TLSCertTokenSet",
	"TLSCertLastRenewal",
	"Topology",
	"Parameters",
	NULL,
};
static const char *const after_os[] = {"RealMemory", NULL};

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_key_start(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int is_key_char(char c)
{
	return is_key_start(c) || (c >= '0' && c <= '9') || c == '_';
}

static int key_is(const char *k, size_t kn, const char *name)
{
	return strlen(name) == kn && memcmp(k, name, kn) == 0;
}

/* The greedy keys' terminator lists, or NULL for a one-token value. */
static const char *const *terminators(const char *k, size_t kn)
{
	if (key_is(k, kn, "OS"))
		return after_os;
	if (key_is(k, kn, "Reason"))
		return after_reason;
	if (key_is(k, kn, "Comment"))
		return after_reason + 1;
	if (key_is(k, kn, "Extra"))
		return after_reason + 2;
	return NULL;
}

/* The first p in [from, end) that follows a blank and starts "<one of keys>=", else end. */
static size_t find_terminator(const char *s, size_t from, size_t end, const char *const *keys)
{
	for (size_t p = from; p < end; p++) {
		if (p == 0 || !is_blank(s[p - 1]) || !is_key_start(s[p]))
			continue;
		for (const char *const *k = keys; *k; k++) {
			size_t kn = strlen(*k);
			if (p + kn < end && memcmp(s + p, *k, kn) == 0 && s[p + kn] == '=')
				return p;
		}
	}
	return end;
}

static int copy_value(char *dst, size_t dstlen, const char *v, size_t vn, const char *key,
		      size_t at, char *err, size_t errlen)
{
	if (vn >= dstlen)
		return fp_errf(FP_EPARSE, err, errlen,
			       "scontrol node: %s= at offset %zu is %zu bytes, more than %zu", key,
			       at, vn, dstlen - 1);
	memcpy(dst, v, vn);
	dst[vn] = '\0';
	return 0;
}

static int parse_count(long long *dst, const char *v, size_t vn, const char *key, size_t at,
		       char *err, size_t errlen)
{
	long long x = 0;
	if (vn == 0 || vn > 18)
		goto bad;
	for (size_t i = 0; i < vn; i++) {
		if (v[i] < '0' || v[i] > '9')
			goto bad;
		x = x * 10 + (v[i] - '0');
	}
	*dst = x;
	return 0;
bad:
	return fp_errf(FP_EPARSE, err, errlen,
		       "scontrol node: %s= at offset %zu is \"%.*s\", not a count", key, at,
		       (int)(vn > 32 ? 32 : vn), v);
}

/* Is s[p..e) " [user@YYYY-MM-DDTHH:MM:SS]"? Sets *uend, *tb and *te (user end, time begin, time
 * end) and returns the offset after ']', or 0 when it is not. */
static size_t reason_stamp(const char *s, size_t p, size_t e, size_t *uend, size_t *tb, size_t *te)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	size_t u = p + 2, i;
	if (p + 2 >= e || s[p] != ' ' || s[p + 1] != '[')
		return 0;
	for (i = u; i < e && s[i] != '@'; i++)
		if (is_blank(s[i]) || s[i] == '[' || s[i] == ']')
			return 0;
	if (i == u || i >= e || i - u >= 64)
		return 0;
	*uend = i;
	*tb = ++i;
	for (size_t k = 0; shape[k]; k++, i++) {
		if (i >= e)
			return 0;
		if (shape[k] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[k])
			return 0;
	}
	if (i >= e || s[i] != ']')
		return 0;
	*te = i;
	return i + 1;
}

/* The number of blanks from s[p] on, before e. */
static size_t blank_run(const char *s, size_t p, size_t e)
{
	size_t n = 0;
	while (p + n < e && is_blank(s[p + n]))
		n++;
	return n;
}

/* Splits Reason's value [b, e) into text, user and time. Lines after the first follow the
 * stamp after at least eight blanks (" " and seven with -o, "\n   " and seven without); each
 * such run becomes one '\n'. */
static void parse_reason(struct slurm_node *out, const char *s, size_t b, size_t e)
{
	size_t stamp = e, after = e, uend = 0, tb = 0, te = 0, n = 0;
	for (size_t p = b; p < e; p++) {
		size_t a = reason_stamp(s, p, e, &uend, &tb, &te);
		if (a && blank_run(s, a, e) >= (a == e ? 0 : 8)) {
			stamp = p;
			after = a;
			break;
		}
	}
	out->has_reason = 1;
	for (size_t p = b; p < e; p++) {
		char c = s[p];
		if (p == stamp) {
			p = after - 1;
			continue;
		}
		if (stamp != e && p >= after && blank_run(s, p, e) >= 8) {
			c = '\n';
			p += blank_run(s, p, e) - 1;
		}
		if (n + 1 >= sizeof(out->reason)) {
			out->reason_truncated = 1;
			break;
		}
		out->reason[n++] = c;
	}
	out->reason[n] = '\0';
	if (stamp != e) {
		memcpy(out->reason_user, s + stamp + 2, uend - stamp - 2);
		out->reason_user[uend - stamp - 2] = '\0';
		memcpy(out->reason_time, s + tb, te - tb);
		out->reason_time[te - tb] = '\0';
	}
}

static void reset(struct slurm_node *out)
{
	memset(out, 0, sizeof(*out));
	out->cpu_tot = out->cpu_alloc = out->real_memory_mb = out->alloc_mem_mb = -1;
	slurm_state_parse("", 0, SLURM_SRC_SCONTROL, &out->state, NULL, 0);
}

/* The keys whose second appearance is refused (a record holds each once). */
#define SEEN_NAME (1u << 0)
#define SEEN_STATE (1u << 1)
#define SEEN_REASON (1u << 2)
#define SEEN_GRES (1u << 3)
#define SEEN_GRES_USED (1u << 4)
#define SEEN_CFG_TRES (1u << 5)
#define SEEN_ALLOC_TRES (1u << 6)
#define SEEN_PARTITIONS (1u << 7)
#define SEEN_CPU_TOT (1u << 8)
#define SEEN_CPU_ALLOC (1u << 9)
#define SEEN_REAL_MEMORY (1u << 10)
#define SEEN_ALLOC_MEM (1u << 11)

static int field(struct slurm_node *out, const char *s, size_t k, size_t kn, size_t vb, size_t ve,
		 unsigned *seen, char *err, size_t errlen)
{
	static const struct {
		const char *key;
		unsigned bit;
	} once[] = {
		{"NodeName", SEEN_NAME},          {"State", SEEN_STATE},
		{"Reason", SEEN_REASON},          {"Gres", SEEN_GRES},
		{"GresUsed", SEEN_GRES_USED},     {"CfgTRES", SEEN_CFG_TRES},
		{"AllocTRES", SEEN_ALLOC_TRES},   {"Partitions", SEEN_PARTITIONS},
		{"CPUTot", SEEN_CPU_TOT},         {"CPUAlloc", SEEN_CPU_ALLOC},
		{"RealMemory", SEEN_REAL_MEMORY}, {"AllocMem", SEEN_ALLOC_MEM},
	};
	const char *key = NULL, *v = s + vb;
	size_t vn = ve - vb;
	unsigned bit = 0;

	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++)
		if (key_is(s + k, kn, once[i].key)) {
			key = once[i].key;
			bit = once[i].bit;
		}
	if (!key)
		return 0;
	if (*seen & bit)
		return fp_errf(FP_EPARSE, err, errlen, "scontrol node: %s= twice, at offset %zu",
			       key, k);
	*seen |= bit;
	switch (bit) {
	case SEEN_NAME:
		if (vn == 0)
			return fp_errf(FP_EPARSE, err, errlen,
				       "scontrol node: empty NodeName= at offset %zu", k);
		return copy_value(out->name, sizeof(out->name), v, vn, key, k, err, errlen);
	case SEEN_STATE:
		/* an unknown state is out->state.unknown, not a refused record */
		slurm_state_parse(v, vn, SLURM_SRC_SCONTROL, &out->state, NULL, 0);
		return 0;
	case SEEN_REASON: parse_reason(out, s, vb, ve); return 0;
	case SEEN_GRES: return copy_value(out->gres, sizeof(out->gres), v, vn, key, k, err, errlen);
	case SEEN_GRES_USED:
		return copy_value(out->gres_used, sizeof(out->gres_used), v, vn, key, k, err,
				  errlen);
	case SEEN_CFG_TRES:
		return copy_value(out->cfg_tres, sizeof(out->cfg_tres), v, vn, key, k, err, errlen);
	case SEEN_ALLOC_TRES:
		return copy_value(out->alloc_tres, sizeof(out->alloc_tres), v, vn, key, k, err,
				  errlen);
	case SEEN_PARTITIONS:
		return copy_value(out->partitions, sizeof(out->partitions), v, vn, key, k, err,
				  errlen);
	case SEEN_CPU_TOT: return parse_count(&out->cpu_tot, v, vn, key, k, err, errlen);
	case SEEN_CPU_ALLOC: return parse_count(&out->cpu_alloc, v, vn, key, k, err, errlen);
	case SEEN_REAL_MEMORY: return parse_count(&out->real_memory_mb, v, vn, key, k, err, errlen);
	case SEEN_ALLOC_MEM: return parse_count(&out->alloc_mem_mb, v, vn, key, k, err, errlen);
	}
	BUG_ON(1);
	return 0;
}

int slurm_node_parse(const char *s, size_t len, struct slurm_node *out, char *err, size_t errlen)
{
	size_t i = 0, e = len;
	unsigned seen = 0;
	int rc = 0;

	reset(out);
	if (len > SLURM_NODE_MAX_TEXT)
		return fp_errf(FP_ETOOBIG, err, errlen,
			       "scontrol node: record of %zu bytes, more than %u", len,
			       SLURM_NODE_MAX_TEXT);
	for (size_t p = 0; p < len; p++) {
		unsigned char c = (unsigned char)s[p];
		if ((c < 0x20 && !is_blank((char)c)) || c == 0x7f) {
			rc = fp_errf(FP_EPARSE, err, errlen,
				     "scontrol node: control byte 0x%02x at offset %zu", c, p);
			goto out;
		}
	}
	while (e > 0 && is_blank(s[e - 1]))
		e--;
	while (i < e) {
		size_t k, kn, vb, ve;
		const char *const *term;

		if (is_blank(s[i])) {
			i++;
			continue;
		}
		k = i;
		if (!is_key_start(s[i]))
			goto not_pair;
		while (i < e && is_key_char(s[i]))
			i++;
		if (i >= e || s[i] != '=')
			goto not_pair;
		kn = i - k;
		vb = ++i;
		if (out->nfields == 0 && !key_is(s + k, kn, "NodeName")) {
			rc = fp_errf(
				FP_EPARSE, err, errlen,
				"scontrol node: record starts with \"%.*s=\" at offset %zu, not "
				"NodeName=",
				(int)(kn > 32 ? 32 : kn), s + k, k);
			goto out;
		}
		if (++out->nfields > SLURM_NODE_MAX_FIELDS) {
			rc = fp_errf(FP_EPARSE, err, errlen,
				     "scontrol node: more than %d Key=Value pairs, at offset %zu",
				     SLURM_NODE_MAX_FIELDS, k);
			goto out;
		}
		term = terminators(s + k, kn);
		if (term) {
			ve = find_terminator(s, vb, e, term);
			i = ve;
			while (ve > vb && is_blank(s[ve - 1]))
				ve--;
		} else {
			while (i < e && !is_blank(s[i]))
				i++;
			ve = i;
		}
		rc = field(out, s, k, kn, vb, ve, &seen, err, errlen);
		if (rc < 0)
			goto out;
		continue;
not_pair:
		while (i < e && !is_blank(s[i]))
			i++;
		rc = fp_errf(FP_EPARSE, err, errlen,
			     "scontrol node: \"%.*s\" at offset %zu is not Key=Value",
			     (int)(i - k > 32 ? 32 : i - k), s + k, k);
		goto out;
	}
	if (!(seen & SEEN_NAME))
		rc = fp_errf(FP_EPARSE, err, errlen, "scontrol node: no NodeName=");
	else if (!(seen & SEEN_STATE))
		rc = fp_errf(FP_EPARSE, err, errlen, "scontrol node: %s has no State=", out->name);
out:
	if (rc < 0)
		reset(out);
	return rc;
}
