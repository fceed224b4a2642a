/* sched/slurm_project.c - the projection decision of slurm_project.h: which drain is whose,
 * the reason fleetplane gives Slurm, and the hold a foreign drain becomes. Pure. */
#include "sched/slurm_project.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/banned.h"

#define SLURM_HOLD_PREFIX "slurm:"

static const char *const action_names[] = {
#define X(e, s) s,
	SLURM_ACTION_MAP(X)
#undef X
};

const char *slurm_action_name(enum slurm_action a)
{
	if ((size_t)a >= sizeof(action_names) / sizeof(action_names[0]))
		return "?";
	return action_names[a];
}

int slurm_project_is_ours(const char *reason)
{
	return reason && strncmp(reason, SLURM_PROJECT_PREFIX, strlen(SLURM_PROJECT_PREFIX)) == 0;
}

/* Appends s to out[*len..] (cap bytes in all, NUL kept) with control bytes and blank runs
 * folded into one space, dropping leading blanks when the output is still empty. */
static void append_clean(char *out, size_t cap, size_t *len, const char *s)
{
	int space = *len > 0 && out[*len - 1] == ' ';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		int blank = *p <= 0x20 || *p == 0x7f;
		if (blank) {
			if (*len == 0 || space)
				continue;
			space = 1;
		} else {
			space = 0;
		}
		if (*len + 1 >= cap)
			break;
		out[(*len)++] = blank ? ' ' : (char)*p;
	}
	out[*len] = '\0';
}

/* Ends out at len: no trailing blank, no cut UTF-8 sequence (a lead byte whose continuation
 * bytes were cut off goes with them). */
static void finish(char *out, size_t len, size_t cap, int truncated)
{
	if (truncated && len > 0) {
		size_t i = len;
		while (i > 0 && ((unsigned char)out[i - 1] & 0xC0) == 0x80)
			i--;
		if (i > 0 && ((unsigned char)out[i - 1] & 0x80)) {
			unsigned char lead = (unsigned char)out[i - 1];
			size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
			if (len - (i - 1) < need)
				len = i - 1;
		}
	}
	while (len > 0 && out[len - 1] == ' ')
		len--;
	if (len < cap)
		out[len] = '\0';
}

char *slurm_project_sanitize(const char *s, char *out, size_t outlen)
{
	if (!outlen)
		return out;
	size_t len = 0;
	out[0] = '\0';
	append_clean(out, outlen, &len, s ? s : "");
	finish(out, len, outlen, len + 1 >= outlen);
	return out;
}

static int owner_rank(const char *owner)
{
	if (strcmp(owner, "health") == 0)
		return 0;
	if (strncmp(owner, "operator:", 9) == 0)
		return 1;
	if (strcmp(owner, "lifecycle") == 0)
		return 2;
	if (strcmp(owner, "rollout") == 0)
		return 3;
	return 4;
}

static int is_slurm_owner(const char *owner)
{
	return strncmp(owner, SLURM_HOLD_PREFIX, strlen(SLURM_HOLD_PREFIX)) == 0;
}

char *slurm_project_reason(const struct node *n, char *out, size_t outlen)
{
	if (!outlen)
		return out;
	if (outlen > SLURM_PROJECT_REASON_MAX)
		outlen = SLURM_PROJECT_REASON_MAX;
	const struct node_hold *best = NULL;
	for (size_t i = 0; i < n->nholds; i++) {
		const struct node_hold *h = &n->holds[i];
		if (!h->owner || is_slurm_owner(h->owner))
			continue;
		if (!best || owner_rank(h->owner) < owner_rank(best->owner) ||
		    (owner_rank(h->owner) == owner_rank(best->owner) && h->since < best->since))
			best = h;
	}
	size_t len = 0;
	out[0] = '\0';
	append_clean(out, outlen, &len, SLURM_PROJECT_PREFIX);
	if (best) {
		append_clean(out, outlen, &len, best->owner);
		append_clean(out, outlen, &len, ": ");
		append_clean(out, outlen, &len, best->reason ? best->reason : "");
	} else {
		append_clean(out, outlen, &len, node_phase_name(n->phase));
	}
	finish(out, len, outlen, len + 1 >= outlen);
	return out;
}

/* "slurm:<user>": the user's letters, digits and ._-@ kept, anything else '_'; "unknown" when
 * Slurm did not say who. */
static void import_owner(const struct slurm_node *sn, char *out, size_t outlen)
{
	const char *u = sn->reason_user[0] ? sn->reason_user : "unknown";
	size_t len = (size_t)snprintf(out, outlen, "%s", SLURM_HOLD_PREFIX);
	for (const char *p = u; *p && len + 1 < outlen; p++) {
		char c = *p;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '@';
		out[len++] = ok ? c : '_';
	}
	out[len] = '\0';
}

/* Slurm's "2023-04-11T11:42:06" as UTC wall ms, or fallback when it is not that shape. */
static int64_t reason_time_ms(const char *s, int64_t fallback)
{
	int y, mo, d, h, mi, se, used = 0;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &used) != 6 ||
	    used != 19 || s[19] != '\0' || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || se > 60)
		return fallback;
	struct tm tm = {.tm_year = y - 1900,
			.tm_mon = mo - 1,
			.tm_mday = d,
			.tm_hour = h,
			.tm_min = mi,
			.tm_sec = se};
	time_t t = timegm(&tm);
	return t < 0 ? fallback : (int64_t)t * 1000;
}

static const struct node_hold *first_slurm_hold(const struct node *n)
{
	for (size_t i = 0; i < n->nholds; i++)
		if (n->holds[i].owner && is_slurm_owner(n->holds[i].owner))
			return &n->holds[i];
	return NULL;
}

static size_t count_slurm_holds(const struct node *n)
{
	size_t k = 0;
	for (size_t i = 0; i < n->nholds; i++)
		if (n->holds[i].owner && is_slurm_owner(n->holds[i].owner))
			k++;
	return k;
}

void slurm_project(const struct node *n, const struct slurm_node *sn, int64_t now_ms,
		   struct slurm_decision *out)
{
	memset(out, 0, sizeof(*out));
	if (!sn) {
		out->why = SLURM_WHY_ABSENT;
		return;
	}
	if (sn->state.unknown || slurm_state_drain_unsure(&sn->state)) {
		out->action = SLURM_ACT_UNSURE;
		out->why = SLURM_WHY_STATE_UNKNOWN;
		return;
	}
	/* Out of service in Slurm: drained, or DOWN or FAIL on a node that responds. fleetplane
	 * only ever sets DRAIN, so such a DOWN or FAIL without fleetplane's reason is a person's
	 * (`scontrol update State=DOWN|FAIL Reason=...`): it is imported like a foreign drain
	 * and never drained over (which would replace its reason) or resumed. A DOWN* node is
	 * slurmctld's own "Not responding" (a machine being provisioned, powered off or
	 * rebooting), which Slurm lifts by itself (ReturnToService): it stays as before. */
	int person_down = (sn->state.base == SLURM_BASE_DOWN ||
			   (sn->state.flags & SLURM_NF_FAIL)) &&
			  !(sn->state.flags & SLURM_NF_NOT_RESPONDING);
	int drained = slurm_state_drain_requested(&sn->state) || person_down;
	int ours = drained && sn->has_reason && slurm_project_is_ours(sn->reason);
	if (drained && !ours) {
		import_owner(sn, out->owner, sizeof(out->owner));
		slurm_project_sanitize(sn->has_reason ? sn->reason : "", out->reason,
				       sizeof(out->reason));
		if (!out->reason[0])
			snprintf(out->reason, sizeof(out->reason), "%s in Slurm",
				 slurm_state_drain_requested(&sn->state) ? "drained"
				 : sn->state.base == SLURM_BASE_DOWN     ? "down"
									 : "failed");
		out->since_ms = reason_time_ms(sn->reason_time, now_ms);
		const struct node_hold *h = node_hold_find(n, out->owner);
		if (h && h->reason && strcmp(h->reason, out->reason) == 0 &&
		    count_slurm_holds(n) == 1) {
			out->owner[0] = out->reason[0] = '\0';
			out->since_ms = 0;
			return;
		}
		out->action = SLURM_ACT_IMPORT_HOLD;
		return;
	}
	const struct node_hold *sh = first_slurm_hold(n);
	if (sh) {
		out->action = SLURM_ACT_RELEASE_HOLD;
		snprintf(out->owner, sizeof(out->owner), "%s", sh->owner);
		return;
	}
	if (node_schedulable(n)) {
		if (ours)
			out->action = SLURM_ACT_RESUME;
		return;
	}
	slurm_project_reason(n, out->reason, sizeof(out->reason));
	if (ours) {
		char cur[SLURM_PROJECT_REASON_MAX];
		slurm_project_sanitize(sn->reason, cur, sizeof(cur));
		if (strcmp(cur, out->reason) == 0) {
			out->reason[0] = '\0';
			return;
		}
	}
	out->action = SLURM_ACT_DRAIN;
}
