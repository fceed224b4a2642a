/* agent/ibstat.h - parser of `ibstat` output (infiniband-diags ibstat(8)): CAs, their ports,
 * State / Physical state / Rate / Link layer. Findings: "ib:port_down" (source "ibstat") for an
 * InfiniBand port whose State is not "Active" or whose Physical state is not "LinkUp"; the
 * finding's message names CA, port, states; key "<ca>/<port>/<state>". Ethernet link-layer ports
 * are ignored. Pure; bounded; fuzzed. */
#ifndef FP_AGENT_IBSTAT_H
#define FP_AGENT_IBSTAT_H

#include <stddef.h>

#include "agent/finding.h"

#define IBSTAT_MAX_PORTS 64
#define IBSTAT_MAX_INPUT (1u << 20)

struct ibstat_port {
	char ca[32];         /* "mlx5_0" */
	int port;            /* 1-based */
	char state[24];      /* "Active", "Down", "Polling", "Initializing", "Armed"; "" unknown */
	char phys_state[24]; /* "LinkUp", "Polling", "Disabled", ...; "" unknown */
	int rate_gbps;       /* -1 unknown */
	char link_layer[16]; /* "InfiniBand" | "Ethernet" | "" */
};

struct ibstat_report {
	size_t nports;
	struct ibstat_port ports[IBSTAT_MAX_PORTS];
	int truncated;
};

/* Returns 0, or FP_EINVAL when no "CA '...'" section is found (err says so). */
int ibstat_parse(const char *buf, size_t len, struct ibstat_report *out, char *err, size_t errlen);
/* Findings for ports that are down; returns the number written (at most max). *unknown = 1 when
 * a port's state is missing or the report is truncated. */
size_t ibstat_findings(const struct ibstat_report *r, struct agent_finding *out, size_t max,
		       int *unknown);

#endif
