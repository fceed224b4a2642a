/* agent/ibstat.c - parser of `ibstat` (infiniband-diags ibstat(8)) output and the "ib:port_down"
 * findings of the ibstat detector (agent/ibstat.h has the contract). ibstat prints one
 * "CA '<name>'" block per adapter, with "Port N:" sub-blocks carrying "State:", "Physical
 * state:", "Rate:" and "Link layer:" lines. Pure; bounded (IBSTAT_MAX_INPUT bytes,
 * IBSTAT_MAX_PORTS ports). */
#include "agent/ibstat.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"

#include "agent/text.h"
#include "base/banned.h"

/* If line is "<name>: value", copies the trimmed value into out and returns 1. */
static int field(const char *line, const char *name, char *out, size_t outlen)
{
	size_t l = strlen(name);
	if (strncmp(line, name, l) != 0 || line[l] != ':')
		return 0;
	snprintf(out, outlen, "%s", line + l + 1);
	agent_text_trim(out);
	return 1;
}

int ibstat_parse(const char *buf, size_t len, struct ibstat_report *out, char *err, size_t errlen)
{
	char line[256], ca[32] = "", v[64];
	struct ibstat_port *cur = NULL;
	int seen_ca = 0;
	size_t pos = 0;

	memset(out, 0, sizeof(*out));
	if (len > IBSTAT_MAX_INPUT)
		return fp_errf(FP_EINVAL, err, errlen,
			       "ibstat output is %zu bytes, more than the %u allowed", len,
			       IBSTAT_MAX_INPUT);
	while (pos < len) {
		size_t end = pos, n;
		unsigned port;
		while (end < len && buf[end] != '\n')
			end++;
		n = end - pos < sizeof(line) - 1 ? end - pos : sizeof(line) - 1;
		memcpy(line, buf + pos, n);
		line[n] = '\0';
		pos = end + 1;
		agent_text_trim(line);
		if (strncmp(line, "ibpanic:", 8) == 0) {
			/* refused whole: no ports from a run that failed */
			memset(out, 0, sizeof(*out));
			return fp_errf(FP_EIO, err, errlen, "ibstat failed: %s", line);
		}
		if (strncmp(line, "CA '", 4) == 0) {
			char *q = strchr(line + 4, '\'');
			if (q)
				*q = '\0';
			n = strnlen(line + 4, sizeof(ca) - 1);
			memcpy(ca, line + 4, n);
			ca[n] = '\0';
			seen_ca = 1;
			cur = NULL;
		} else if (seen_ca && strncmp(line, "Port ", 5) == 0 &&
			   sscanf(line + 5, "%u", &port) == 1 && strchr(line, ':') &&
			   strchr(line, ':')[1] == '\0') {
			if (out->nports >= IBSTAT_MAX_PORTS) {
				out->truncated = 1;
				cur = NULL;
				continue;
			}
			cur = &out->ports[out->nports++];
			memset(cur, 0, sizeof(*cur));
			snprintf(cur->ca, sizeof(cur->ca), "%s", ca);
			cur->port = port > 1000 ? -1 : (int)port;
			cur->rate_gbps = -1;
		} else if (cur) {
			if (field(line, "State", cur->state, sizeof(cur->state)) ||
			    field(line, "Physical state", cur->phys_state,
				  sizeof(cur->phys_state)) ||
			    field(line, "Link layer", cur->link_layer, sizeof(cur->link_layer)))
				continue;
			if (field(line, "Rate", v, sizeof(v))) {
				unsigned r;
				char extra;
				cur->rate_gbps = (sscanf(v, "%u%c", &r, &extra) == 1 && r < 100000)
							 ? (int)r
							 : -1;
			}
		}
	}
	if (!seen_ca)
		return fp_errf(FP_EINVAL, err, errlen,
			       "not ibstat output: no \"CA '<name>'\" line");
	return 0;
}

size_t ibstat_findings(const struct ibstat_report *r, struct agent_finding *out, size_t max,
		       int *unknown)
{
	return ibstat_findings_flags(r, 0, out, max, unknown);
}

size_t ibstat_findings_flags(const struct ibstat_report *r, unsigned flags,
			     struct agent_finding *out, size_t max, int *unknown)
{
	size_t n = 0;

	*unknown = r->truncated ? 1 : 0;
	for (size_t i = 0; i < r->nports; i++) {
		const struct ibstat_port *p = &r->ports[i];
		struct agent_finding *f;
		int eth = strcmp(p->link_layer, "Ethernet") == 0;
		if (eth && (flags & IBSTAT_ETHERNET_NOT_FABRIC))
			continue;
		if (p->link_layer[0] == '\0' || p->state[0] == '\0' || p->phys_state[0] == '\0') {
			*unknown = 1;
			continue;
		}
		if (eth ? strcmp(p->state, "Active") == 0 || strcmp(p->phys_state, "Disabled") == 0
			: strcmp(p->state, "Active") == 0 && strcmp(p->phys_state, "LinkUp") == 0)
			continue;
		if (n >= max)
			continue;
		f = &out[n++];
		memset(f, 0, sizeof(*f));
		snprintf(f->source, sizeof(f->source), "%s", "ibstat");
		snprintf(f->code, sizeof(f->code), "%s", eth ? "roce:port_down" : "ib:port_down");
		f->gpu_index = -1;
		snprintf(f->key, sizeof(f->key), "%s/%d/%s", p->ca, p->port, p->state);
		snprintf(f->message, sizeof(f->message),
			 "%s port %s/%d: State %s, Physical state %s",
			 eth ? "RoCE (Ethernet)" : "InfiniBand", p->ca, p->port, p->state,
			 p->phys_state);
	}
	return n;
}
