/* sched/slurm_tool.c - running Slurm's client tools (slurm_tool.h). */
#include "sched/slurm_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

#include "base/banned.h"

extern char **environ;

static int has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int slurm_tool_check_path(const char *what, const char *p, size_t max, char *err, size_t errlen)
{
	if (!p[0] || p[0] != '/')
		return fp_errf(FP_EINVAL, err, errlen, "%s must be an absolute path", what);
	if (strlen(p) > max)
		return fp_errf(FP_EINVAL, err, errlen, "%s longer than %zu bytes", what, max);
	if (has_ctl(p))
		return fp_errf(FP_EINVAL, err, errlen, "%s holds a control byte", what);
	return 0;
}

static int env_overridden(const char *e)
{
	static const char *const names[] = {"SLURM_CONF=", "SLURM_TIME_FORMAT=", "LC_ALL=", "TZ=",
					    NULL};
	for (size_t i = 0; names[i]; i++)
		if (strncmp(e, names[i], strlen(names[i])) == 0)
			return 1;
	return 0;
}

char **slurm_tool_env(const char *slurm_conf)
{
	size_t n = 0;
	for (char **e = environ; e && *e; e++)
		n++;
	char **envp = xcalloc(n + 5, sizeof(*envp));
	size_t k = 0;
	const char *inherited_conf = NULL;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "SLURM_CONF=", 11) == 0)
			inherited_conf = *e;
		if (!env_overridden(*e))
			envp[k++] = xstrdup(*e);
	}
	if (slurm_conf)
		envp[k++] = xasprintf("SLURM_CONF=%s", slurm_conf);
	else if (inherited_conf)
		envp[k++] = xstrdup(inherited_conf);
	envp[k++] = xstrdup("SLURM_TIME_FORMAT=standard");
	envp[k++] = xstrdup("TZ=UTC");
	envp[k++] = xstrdup("LC_ALL=C");
	envp[k] = NULL;
	return envp;
}

void slurm_tool_env_free(char **envp)
{
	for (char **e = envp; e && *e; e++)
		free(*e);
	free(envp);
}

void slurm_tool_quote(const char *s, size_t len, char *q, size_t qlen)
{
	size_t k = 0, i = 0;
	if (!qlen)
		return;
	while (i < len && (s[i] == '\n' || s[i] == '\r' || s[i] == ' '))
		i++;
	for (size_t used = 0; i < len && s[i] != '\n' && used < SLURM_TOOL_QUOTE_MAX; i++, used++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
			if (k + 2 > qlen)
				break;
			q[k++] = (char)ch;
		} else {
			if (k + 5 > qlen)
				break;
			snprintf(q + k, qlen - k, "\\x%02x", ch);
			k += 4;
		}
	}
	while (k > 0 && q[k - 1] == '\r')
		k--;
	q[k] = '\0';
}

static int icontains(const char *s, const char *needle)
{
	return strcasestr(s, needle) != NULL;
}

int slurm_tool_run(char **envp, long timeout_ms, size_t max_out, char *const argv[],
		   const char *tool, int ok_fail, struct proc_result *res, char *err, size_t errlen)
{
	struct proc_opts opts = {.envp = envp, .max_err = SLURM_TOOL_MAX_ERR};
	char perr[256];
	int rc = proc_run(argv, timeout_ms, max_out, &opts, res, perr, sizeof(perr));
	if (rc < 0)
		return fp_errf(rc, err, errlen, "%s: %s", tool, perr);
	if (res->timed_out)
		return fp_errf(FP_ETIMEDOUT, err, errlen, "%s: no exit within %ld ms (killed)",
			       tool, timeout_ms);
	if (res->truncated)
		return fp_errf(FP_ETOOBIG, err, errlen, "%s: output over %zu bytes (killed)", tool,
			       max_out);
	if (res->exited && res->exit_status == 0)
		return 0;
	if (ok_fail && res->exited)
		return 1;
	char q[SLURM_TOOL_QUOTE_MAX * 4 + 8];
	if (res->err.len)
		slurm_tool_quote(res->err.data, res->err.len, q, sizeof(q));
	else if (res->out.len)
		slurm_tool_quote(res->out.data, res->out.len, q, sizeof(q));
	else
		snprintf(q, sizeof(q), "(no output)");
	if (!res->exited)
		return fp_errf(FP_EIO, err, errlen, "%s: killed by signal %d: \"%s\"", tool,
			       res->signaled, q);
	int code = (icontains(q, "permission denied") || icontains(q, "access denied")) ? FP_EPERM
											: FP_EIO;
	return fp_errf(code, err, errlen, "%s: exit %d: \"%s\"", tool, res->exit_status, q);
}
