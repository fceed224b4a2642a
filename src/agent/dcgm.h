/* agent/dcgm.h - parsers of DCGM's `dcgmi health -c` (health watch results) and `dcgmi diag`
 * (diagnostic run) table output, into findings with source "dcgm" and code "dcgm:<subsystem>"
 * (memory, pcie, nvlink, thermal, power, inforom, driver, sm, diag, ...; lower case, spaces to
 * '_'). Wording from NVIDIA DCGM's user guide ("Health and Diagnostics") and real outputs in
 * tests/data/dcgm. "Warning" and "Fail"/"Failure" results give a finding; "Pass", "Healthy",
 * "Skip" do not; anything else (unparseable table) sets *unknown. Pure; fuzzed. */
#ifndef FP_AGENT_DCGM_H
#define FP_AGENT_DCGM_H

#include <stddef.h>

#include "agent/finding.h"

#define DCGM_MAX_INPUT (4u << 20)

/* Finds dcgmi's own failure in captured output: a line that starts with "Error: " (dcgmi's
 * prefix for every failure, e.g. "Error: Unable to connect to host engine. Host engine
 * connection invalid/disconnected." from DCGM dcgmi/Command.cpp when nv-hostengine is not
 * running; a report's rows start with '|' or '+', its JSON with '{'). Returns 1 with the line
 * (trimmed, cut, prefixed "dcgmi failed: ") in err, else 0. The agent's dcgm detector is then
 * ProbeFailed, as when dcgmi is run and exits non-zero. */
int dcgm_tool_error(const char *buf, size_t len, char *err, size_t errlen);

/* `dcgmi health -c [-g N]`. Returns the number of findings written to out (at most max);
 * *unknown = 1 when the output could not be read as a health report (then the caller's
 * detector status is "unknown"). */
size_t dcgm_health_findings(const char *buf, size_t len, struct agent_finding *out, size_t max,
			    int *unknown);
/* `dcgmi diag -r N`. Same contract; a test whose result is "Fail" on some GPUs gives one finding
 * per GPU named ("GPU 3"), gpu_index set; "Fail - All" gives one finding with gpu_index -1. */
size_t dcgm_diag_findings(const char *buf, size_t len, struct agent_finding *out, size_t max,
			  int *unknown);

#endif
