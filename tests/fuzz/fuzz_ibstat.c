/* layers: base core agent */
/* fuzz_ibstat.c - libFuzzer target for the ibstat parser (agent/ibstat.h): one input goes
 * through ibstat_parse and, when it parses, ibstat_findings with arrays of 8 and 1. Properties
 * checked (a failure aborts): at most IBSTAT_MAX_PORTS ports, every string NUL-terminated in
 * its buffer, rate -1 or >= 0; a refused input leaves no ports; findings never exceed the
 * array, are "ibstat"/"ib:port_down" for InfiniBand and "roce:port_down" for Ethernet ports
 * (never with IBSTAT_ETHERNET_NOT_FABRIC); *unknown is 0 or 1 and
 * 1 when the report is truncated. Seeds: tests/fuzz/corpus/fuzz_ibstat/ (tests/data/ibstat). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/ibstat.h"

#include "base/banned.h"

#define CHECK(c)                                                                             \
	do {                                                                                 \
		if (!(c)) {                                                                  \
			fprintf(stderr, "fuzz_ibstat: %s failed (line %d)\n", #c, __LINE__); \
			abort();                                                             \
		}                                                                            \
	} while (0)

static struct ibstat_report rep;

static void check(const struct agent_finding *f, size_t n, size_t max, int unknown)
{
	CHECK(n <= max);
	CHECK(unknown == 0 || unknown == 1);
	if (rep.truncated)
		CHECK(unknown == 1);
	for (size_t i = 0; i < n; i++) {
		CHECK(strcmp(f[i].source, "ibstat") == 0);
		CHECK(strcmp(f[i].code, "ib:port_down") == 0 ||
		      strcmp(f[i].code, "roce:port_down") == 0);
		CHECK(memchr(f[i].message, '\0', sizeof(f[i].message)) != NULL);
		CHECK(memchr(f[i].key, '\0', sizeof(f[i].key)) != NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_finding f[8];
	char err[128];
	int unknown = -1;
	size_t n;

	if (ibstat_parse((const char *)data, size, &rep, err, sizeof(err)) != 0) {
		CHECK(rep.nports == 0);
		return 0;
	}
	CHECK(rep.nports <= IBSTAT_MAX_PORTS);
	for (size_t i = 0; i < rep.nports; i++) {
		const struct ibstat_port *p = &rep.ports[i];
		CHECK(memchr(p->ca, '\0', sizeof(p->ca)) != NULL);
		CHECK(memchr(p->state, '\0', sizeof(p->state)) != NULL);
		CHECK(memchr(p->phys_state, '\0', sizeof(p->phys_state)) != NULL);
		CHECK(memchr(p->link_layer, '\0', sizeof(p->link_layer)) != NULL);
		CHECK(p->rate_gbps >= -1);
	}
	n = ibstat_findings(&rep, f, 8, &unknown);
	check(f, n, 8, unknown);
	for (size_t i = 0; i < n; i++) { /* a key names a port of the report of its layer */
		int named = 0;
		int eth = strcmp(f[i].code, "roce:port_down") == 0;
		for (size_t k = 0; k < rep.nports; k++) {
			size_t l = strlen(rep.ports[k].ca);
			named |= strncmp(f[i].key, rep.ports[k].ca, l) == 0 && f[i].key[l] == '/' &&
				 (strcmp(rep.ports[k].link_layer, "Ethernet") == 0) == eth;
		}
		CHECK(named);
	}
	/* with Ethernet not fabric, never a RoCE finding */
	n = ibstat_findings_flags(&rep, IBSTAT_ETHERNET_NOT_FABRIC, f, 8, &unknown);
	check(f, n, 8, unknown);
	for (size_t i = 0; i < n; i++)
		CHECK(strcmp(f[i].code, "ib:port_down") == 0);
	n = ibstat_findings(&rep, f, 1, &unknown);
	check(f, n, 1, unknown);
	return 0;
}
