/* probe.c - the agent's tool runner: proc_run (base/proc.c) without stderr or an environment
 * override, and an execvp(3)-rule PATH lookup (probe.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/probe.h"
#include "base/err.h"

#include "base/banned.h"

int probe_run(char *const argv[], long timeout_ms, size_t max_out, struct proc_result *res,
	      char *err, size_t errlen)
{
	return proc_run(argv, timeout_ms, max_out, NULL, res, err, errlen);
}

int probe_which(const char *name, char *out, size_t outlen)
{
	if (!name || !*name || strchr(name, '/'))
		return FP_ENOTFOUND;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	const char *p = path;
	int toobig = 0;
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t dl = colon ? (size_t)(colon - p) : strlen(p);
		const char *dir = dl ? p : ".";
		size_t dlen = dl ? dl : 1;
		if (dlen + 1 + strlen(name) + 1 > outlen) {
			toobig = 1;
		} else {
			memcpy(out, dir, dlen);
			out[dlen] = '/';
			memcpy(out + dlen + 1, name, strlen(name) + 1);
			struct stat st;
			if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
				return 0;
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	if (outlen)
		out[0] = '\0';
	return toobig ? FP_ETOOBIG : FP_ENOTFOUND;
}
