/* agent/probe.h - runs one node tool (nvidia-smi, dcgmi, ibstat) for the node agent with an argv
 * (never a shell), a deadline and a bound on its output, so a hung or chatty tool cannot stall
 * or flood the agent (issue 4: "every probe runs with a timeout; a hung probe is the fault
 * probe_timeout"). The runner itself is base/proc.h (own process group killed at the deadline,
 * bounded output, exec errno over a close-on-exec pipe); this adds the agent's PATH lookup. */
#ifndef FP_AGENT_PROBE_H
#define FP_AGENT_PROBE_H

#include <stddef.h>

#include "base/proc.h"

/* proc_run (base/proc.h) with stdin and stderr on /dev/null and the agent's environment: the
 * same arguments, result, errors and blocking. Release res with proc_result_release. */
int probe_run(char *const argv[], long timeout_ms, size_t max_out, struct proc_result *res,
	      char *err, size_t errlen);

/* Looks name (no '/') up in the PATH of the environment (execvp(3)'s rule; an empty or unset
 * PATH means "/usr/local/bin:/usr/bin:/bin") and writes the first executable regular file into
 * out. Returns 0, FP_ENOTFOUND, or FP_ETOOBIG when a candidate path does not fit outlen. */
int probe_which(const char *name, char *out, size_t outlen);

#endif
