/* agent/ibstat.h - parser of `ibstat` output (infiniband-diags ibstat(8)): CAs, their ports,
 * State / Physical state / Rate / Link layer. Findings (source "ibstat"): "ib:port_down" for an
 * InfiniBand port whose State is not "Active" or whose Physical state is not "LinkUp", and
 * "roce:port_down" for an Ethernet link-layer port (RoCE: the RDMA adapter's port on an
 * Ethernet fabric) whose State is not "Active" while its Physical state is not "Disabled" (a
 * disabled port is one the node does not use: the real H100 sample has three). The finding's
 * message names CA, port, states; key "<ca>/<port>/<state>". IBSTAT_ETHERNET_NOT_FABRIC (the
 * agent's --ethernet-not-fabric, for nodes whose Ethernet ports carry no RDMA fabric) ignores
 * Ethernet ports. Pure; bounded; fuzzed. */
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

/* Returns 0; FP_EIO when the output holds ibstat's own fatal line ("ibpanic: [pid] main: stat
 * of IB device 'mlx5_8' failed: No such file or directory", infiniband-diags' IBPANIC; ibstat
 * exits non-zero after it, so captured output with it is a failed probe, not a short report;
 * err: "ibstat failed: <the line>"); or FP_EINVAL when no "CA '...'" section is found (err
 * says so). */
int ibstat_parse(const char *buf, size_t len, struct ibstat_report *out, char *err, size_t errlen);
/* Findings for ports that are down; returns the number written (at most max). *unknown = 1 when
 * a port's state is missing or the report is truncated. */
size_t ibstat_findings(const struct ibstat_report *r, struct agent_finding *out, size_t max,
		       int *unknown);
#define IBSTAT_ETHERNET_NOT_FABRIC 1u
/* The same with flags (IBSTAT_ETHERNET_NOT_FABRIC: no roce:port_down, Ethernet ports are not
 * read at all); ibstat_findings is flags 0. */
size_t ibstat_findings_flags(const struct ibstat_report *r, unsigned flags,
			     struct agent_finding *out, size_t max, int *unknown);

#endif
