/* sched/slurm_cli.c - scontrol run by argv with a deadline and bounds (sched/slurm_cli.h): the
 * children's environment built once, the run of one command with its failure mapped to one
 * fp_err and a quoted stderr line, the node list read record by record (failing whole), batched
 * node updates, and ping. */
#include "sched/slurm_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/proc.h"
#include "sched/hostlist.h"
#include "sched/slurm_tool.h"

#include "base/banned.h"

struct slurm_cli {
	char *scontrol; /* argv[0]: "scontrol" or "<bindir>/scontrol" */
	char *squeue;   /* the same for squeue */
	char **envp;    /* NULL-terminated, every string owned */
	long timeout_ms;
	size_t max_out;
};

#define QUOTE_MAX SLURM_TOOL_QUOTE_MAX

static int has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static int check_path(const char *what, const char *p, char *err, size_t errlen)
{
	return slurm_tool_check_path(what, p, SLURM_CLI_MAX_PATH, err, errlen);
}

int slurm_cli_new(const struct slurm_cli_config *cfg, struct slurm_cli **out, char *err,
		  size_t errlen)
{
	int rc;
	*out = NULL;
	if (!cfg)
		return fp_errf(FP_EINVAL, err, errlen, "no configuration");
	long timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : SLURM_CLI_TIMEOUT_MS;
	size_t max_out = cfg->max_out ? cfg->max_out : SLURM_CLI_MAX_OUT;
	if (timeout_ms < 1 || timeout_ms > 3600000)
		return fp_errf(FP_EINVAL, err, errlen, "timeout_ms %ld not in 1..3600000",
			       cfg->timeout_ms);
	if (max_out > (64u << 20))
		return fp_errf(FP_EINVAL, err, errlen, "max_out %zu over 64 MiB", cfg->max_out);
	if (cfg->slurm_conf && (rc = check_path("slurm_conf", cfg->slurm_conf, err, errlen)) < 0)
		return rc;
	if (cfg->bindir && (rc = check_path("bindir", cfg->bindir, err, errlen)) < 0)
		return rc;
	struct slurm_cli *c = xcalloc(1, sizeof(*c));
	c->scontrol = cfg->bindir ? xasprintf("%s/scontrol", cfg->bindir) : xstrdup("scontrol");
	c->squeue = cfg->bindir ? xasprintf("%s/squeue", cfg->bindir) : xstrdup("squeue");
	c->envp = slurm_tool_env(cfg->slurm_conf);
	c->timeout_ms = timeout_ms;
	c->max_out = max_out;
	*out = c;
	return 0;
}

void slurm_cli_free(struct slurm_cli *c)
{
	if (!c)
		return;
	slurm_tool_env_free(c->envp);
	free(c->scontrol);
	free(c->squeue);
	free(c);
}

static void quote_line(const char *s, size_t len, char *q, size_t qlen)
{
	slurm_tool_quote(s, len, q, qlen);
}

static int icontains(const char *s, const char *needle)
{
	return strcasestr(s, needle) != NULL;
}

/* Runs argv (slurm_tool_run with this client's environment and bounds). */
static int run(struct slurm_cli *c, char *const argv[], const char *cmd, int ok_fail,
	       struct proc_result *res, char *err, size_t errlen)
{
	return slurm_tool_run(c->envp, c->timeout_ms, c->max_out, argv, cmd, ok_fail, res, err,
			      errlen);
}

static int cmp_name(const void *a, const void *b)
{
	const struct slurm_node *x = *(const struct slurm_node *const *)a;
	const struct slurm_node *y = *(const struct slurm_node *const *)b;
	return strcmp(x->name, y->name);
}

static int check_unique(const struct slurm_node *nodes, size_t n, char *err, size_t errlen)
{
	if (n < 2)
		return 0;
	const struct slurm_node **idx = xcalloc(n, sizeof(*idx));
	for (size_t i = 0; i < n; i++)
		idx[i] = &nodes[i];
	qsort(idx, n, sizeof(*idx), cmp_name);
	int rc = 0;
	for (size_t i = 1; i < n; i++)
		if (strcmp(idx[i - 1]->name, idx[i]->name) == 0) {
			rc = fp_errf(FP_EPARSE, err, errlen,
				     "scontrol show node: node %s listed twice", idx[i]->name);
			break;
		}
	free(idx);
	return rc;
}

static int is_blank_line(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

int slurm_cli_parse_nodes(const char *s, size_t len, struct slurm_node **out, size_t *n, char *err,
			  size_t errlen)
{
	*out = NULL;
	*n = 0;
	static const char empty[] = "No nodes in the system";
	if (len == 0)
		return fp_errf(FP_EPARSE, err, errlen, "scontrol show node: empty output");
	if (memchr(s, '\0', len))
		return fp_errf(FP_EPARSE, err, errlen, "scontrol show node: a NUL byte in output");
	size_t tl = len;
	while (tl > 0 && (s[tl - 1] == '\n' || s[tl - 1] == ' '))
		tl--;
	if (tl == sizeof(empty) - 1 && memcmp(s, empty, tl) == 0)
		return 0;

	struct slurm_node *nodes = NULL;
	size_t count = 0, alloc = 0, line = 0;
	int rc = 0;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (s + i)) : len - i;
		line++;
		if (!is_blank_line(s + i, l)) {
			if (count == SLURM_CLI_MAX_NODES) {
				rc = fp_errf(FP_ETOOBIG, err, errlen,
					     "scontrol show node: more than %u nodes",
					     SLURM_CLI_MAX_NODES);
				goto out;
			}
			if (count == alloc) {
				alloc = alloc ? alloc * 2 : 64;
				if (alloc > SLURM_CLI_MAX_NODES)
					alloc = SLURM_CLI_MAX_NODES;
				nodes = xreallocarray(nodes, alloc, sizeof(*nodes));
			}
			char perr[256];
			rc = slurm_node_parse(s + i, l, &nodes[count], perr, sizeof(perr));
			if (rc < 0) {
				rc = fp_errf(FP_EPARSE, err, errlen,
					     "scontrol show node: line %zu: %s", line, perr);
				goto out;
			}
			count++;
		}
		i += l + 1;
	}
	if (count == 0) {
		rc = fp_errf(FP_EPARSE, err, errlen, "scontrol show node: no records");
		goto out;
	}
	rc = check_unique(nodes, count, err, errlen);
out:
	if (rc < 0) {
		free(nodes);
		return rc;
	}
	*out = nodes;
	*n = count;
	return 0;
}

int slurm_cli_nodes(struct slurm_cli *c, struct slurm_node **out, size_t *n, char *err,
		    size_t errlen)
{
	*out = NULL;
	*n = 0;
	char *argv[] = {c->scontrol, "-o", "-F", "show", "node", NULL};
	struct proc_result res;
	int rc = run(c, argv, "scontrol show node", 0, &res, err, errlen);
	if (rc == 0)
		rc = slurm_cli_parse_nodes(res.out.data, res.out.len, out, n, err, errlen);
	proc_result_release(&res);
	return rc;
}

int slurm_cli_jobs(struct slurm_cli *c, struct slurm_job **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	char *argv[8];
	size_t k = 0;
	argv[k++] = c->squeue;
	for (size_t i = 0; slurm_job_squeue_args[i] && k < 7; i++)
		argv[k++] = (char *)slurm_job_squeue_args[i];
	argv[k] = NULL;
	struct proc_result res;
	int rc = run(c, argv, "squeue", 0, &res, err, errlen);
	if (rc == 0)
		rc = slurm_jobs_parse(res.out.data, res.out.len, out, n, err, errlen);
	proc_result_release(&res);
	return rc;
}

static const char *action_word(enum slurm_update_action act)
{
	switch (act) {
	case SLURM_UPDATE_DRAIN: return "DRAIN";
	case SLURM_UPDATE_RESUME: return "RESUME";
	case SLURM_UPDATE_DOWN: return "DOWN";
	case SLURM_UPDATE_UNDRAIN: return "UNDRAIN";
	}
	return NULL;
}

static int check_reason(enum slurm_update_action act, const char *reason, char *err, size_t errlen)
{
	/* The keys slurm_node_parse ends a Reason= value at (sched/slurm_node.c after_reason). */
	static const char *const keys[] = {
		" Comment=",
		" Extra=",
		" InstanceId=",
		" InstanceType=",
		" ReservationName=",
		" TLSCertTokenSet=",
		" TLSCertLastRenewal=",
		" Topology=",
		" Parameters=",
		NULL,
	};
	if (!reason) {
		if (act == SLURM_UPDATE_DRAIN || act == SLURM_UPDATE_DOWN)
			return fp_errf(FP_EINVAL, err, errlen,
				       "State=%s needs a reason (scontrol refuses without)",
				       action_word(act));
		return 0;
	}
	size_t len = strlen(reason);
	if (len > SLURM_CLI_REASON_MAX)
		return fp_errf(FP_EINVAL, err, errlen, "reason longer than %u bytes",
			       SLURM_CLI_REASON_MAX);
	if (strspn(reason, " ") == len)
		return fp_errf(FP_EINVAL, err, errlen, "reason empty");
	if (has_ctl(reason))
		return fp_errf(FP_EINVAL, err, errlen, "reason holds a control byte");
	if (reason[0] == '"' || reason[len - 1] == '"')
		return fp_errf(FP_EINVAL, err, errlen,
			       "reason starts or ends with '\"' (scontrol strips it)");
	if (reason[len - 1] == ']')
		return fp_errf(FP_EINVAL, err, errlen,
			       "reason ends with ']' (reads back as [user@time])");
	for (size_t i = 0; keys[i]; i++)
		if (icontains(reason, keys[i]))
			return fp_errf(FP_EINVAL, err, errlen,
				       "reason holds \"%s\" (would not read back whole)",
				       keys[i] + 1);
	return 0;
}

static int update_one(struct slurm_cli *c, const struct hostlist *hl, const char *state,
		      const char *reason, size_t cmd, size_t ncmd, char *err, size_t errlen)
{
	struct buf hls;
	buf_init(&hls, SLURM_CLI_MAX_HOSTLIST);
	char what[96];
	snprintf(what, sizeof(what), "scontrol update (command %zu of %zu)", cmd, ncmd);
	int rc = hostlist_compress(hl, &hls, NULL, 0);
	if (rc < 0) {
		buf_release(&hls);
		return fp_errf(rc, err, errlen, "%s: hostlist over %u bytes", what,
			       SLURM_CLI_MAX_HOSTLIST);
	}
	char *nodes = xasprintf("NodeName=%s", hls.data ? hls.data : "");
	char *st = xasprintf("State=%s", state);
	char *rs = reason ? xasprintf("Reason=%s", reason) : NULL;
	char *argv[] = {c->scontrol, "update", nodes, st, rs, NULL};
	struct proc_result res;
	rc = run(c, argv, what, 0, &res, err, errlen);
	proc_result_release(&res);
	free(rs);
	free(st);
	free(nodes);
	buf_release(&hls);
	return rc;
}

int slurm_cli_update(struct slurm_cli *c, const char *const *names, size_t n,
		     enum slurm_update_action act, const char *reason, char *err, size_t errlen)
{
	const char *state = action_word(act);
	if (!state)
		return fp_errf(FP_EINVAL, err, errlen, "unknown update action %d", (int)act);
	int rc = check_reason(act, reason, err, errlen);
	if (rc < 0 || n == 0)
		return rc;
	if (n > HOSTLIST_MAX_NAMES)
		return fp_errf(FP_ETOOBIG, err, errlen, "%zu nodes, more than %u", n,
			       HOSTLIST_MAX_NAMES);

	/* Validate every name first, so that a bad one runs nothing. */
	struct hostlist all;
	hostlist_init(&all);
	size_t *start = xcalloc(n + 1, sizeof(*start)); /* first name of each command */
	size_t ncmd = 0;
	for (size_t i = 0; i < n; i++) {
		char herr[128];
		rc = hostlist_push(&all, names[i], strlen(names[i]), herr, sizeof(herr));
		if (rc < 0) {
			rc = fp_errf(rc, err, errlen, "node %zu: %s", i, herr);
			goto out;
		}
	}
	/* One command when the whole list compresses within the bound; else chunks whose plain
	 * length (name, comma, two brackets each) fits, which their compressed form cannot pass. */
	struct buf probe;
	buf_init(&probe, SLURM_CLI_MAX_HOSTLIST);
	int fits = hostlist_compress(&all, &probe, NULL, 0) == 0;
	buf_release(&probe);
	start[ncmd++] = 0;
	if (!fits) {
		size_t used = 0;
		for (size_t i = 0; i < n; i++) {
			size_t cost = strlen(names[i]) + 3;
			if (used + cost > SLURM_CLI_MAX_HOSTLIST && used > 0) {
				start[ncmd++] = i;
				used = 0;
			}
			used += cost;
		}
	}
	start[ncmd] = n;
	for (size_t k = 0; k < ncmd; k++) {
		struct hostlist part;
		hostlist_init(&part);
		for (size_t i = start[k]; i < start[k + 1]; i++)
			BUG_ON(hostlist_push(&part, names[i], strlen(names[i]), NULL, 0) < 0);
		rc = update_one(c, &part, state, reason, k + 1, ncmd, err, errlen);
		hostlist_release(&part);
		if (rc < 0)
			break;
	}
out:
	free(start);
	hostlist_release(&all);
	return rc;
}

/* "Slurmctld(ROLE) at HOST is UP|DOWN" into role, host, up; 0 or -1. */
static int ping_line(const char *s, size_t len, char *role, size_t rlen, char *host, size_t hlen,
		     int *up)
{
	static const char pfx[] = "Slurmctld(";
	if (len < sizeof(pfx) - 1 || memcmp(s, pfx, sizeof(pfx) - 1) != 0)
		return -1;
	const char *p = s + sizeof(pfx) - 1, *end = s + len;
	const char *rp = memchr(p, ')', (size_t)(end - p));
	if (!rp || rp == p || (size_t)(rp - p) >= rlen)
		return -1;
	memcpy(role, p, (size_t)(rp - p));
	role[rp - p] = '\0';
	p = rp + 1;
	if (end - p < 4 || memcmp(p, " at ", 4) != 0)
		return -1;
	p += 4;
	const char *sp = memchr(p, ' ', (size_t)(end - p));
	if (!sp || sp == p || (size_t)(sp - p) >= hlen)
		return -1;
	memcpy(host, p, (size_t)(sp - p));
	host[sp - p] = '\0';
	p = sp;
	size_t rest = (size_t)(end - p);
	if (rest == 6 && memcmp(p, " is UP", 6) == 0)
		*up = 1;
	else if (rest == 8 && memcmp(p, " is DOWN", 8) == 0)
		*up = 0;
	else
		return -1;
	for (const char *q = role; *q; q++)
		if ((unsigned char)*q < 0x21 || *q == 0x7f)
			return -1;
	for (const char *q = host; *q; q++)
		if ((unsigned char)*q < 0x21 || *q == 0x7f)
			return -1;
	return 0;
}

int slurm_cli_parse_ping(const char *s, size_t len, struct slurm_ping *out, char *err,
			 size_t errlen)
{
	memset(out, 0, sizeof(*out));
	int rc = 0, primaries = 0;
	if (memchr(s, '\0', len))
		return fp_errf(FP_EPARSE, err, errlen, "scontrol ping: a NUL byte in output");
	size_t line = 0;
	for (size_t i = 0; i < len && rc == 0;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (s + i)) : len - i;
		const char *ln = s + i;
		i += l + 1;
		line++;
		if (is_blank_line(ln, l) || ln[0] == '*')
			continue;
		char role[32], host[sizeof(out->host)];
		int up;
		if (ping_line(ln, l, role, sizeof(role), host, sizeof(host), &up) < 0) {
			char q[QUOTE_MAX * 4 + 8];
			quote_line(ln, l, q, sizeof(q));
			rc = fp_errf(FP_EPARSE, err, errlen, "scontrol ping: line %zu: \"%s\"",
				     line, q);
		} else if (strcmp(role, "primary") == 0) {
			if (++primaries > 1)
				rc = fp_errf(FP_EPARSE, err, errlen,
					     "scontrol ping: line %zu: a second primary", line);
			out->up = up;
			memcpy(out->host, host, strlen(host) + 1);
		} else if (strncmp(role, "backup", 6) == 0) {
			out->backups++;
			out->backups_up += up;
		} else {
			rc = fp_errf(FP_EPARSE, err, errlen,
				     "scontrol ping: line %zu: unknown role %s", line, role);
		}
	}
	if (rc == 0 && primaries == 0)
		rc = fp_errf(FP_EPARSE, err, errlen, "scontrol ping: no primary line");
	if (rc < 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

int slurm_cli_ping(struct slurm_cli *c, struct slurm_ping *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	char *argv[] = {c->scontrol, "ping", NULL};
	struct proc_result res;
	int rc = run(c, argv, "scontrol ping", 1, &res, err, errlen);
	if (rc < 0)
		goto out;
	const char *s = res.out.data ? res.out.data : "";
	if (rc == 1 && strspn(s, " \t\r\n") == res.out.len) {
		/* Exited non-zero with nothing on stdout: say what stderr said. */
		char q[QUOTE_MAX * 4 + 8];
		if (res.err.len)
			quote_line(res.err.data, res.err.len, q, sizeof(q));
		else
			snprintf(q, sizeof(q), "(no output)");
		rc = fp_errf(FP_EIO, err, errlen, "scontrol ping: exit %d: \"%s\"", res.exit_status,
			     q);
		goto out;
	}
	rc = slurm_cli_parse_ping(s, res.out.len, out, err, errlen);
out:
	proc_result_release(&res);
	return rc;
}

/* ---------------------------------------------------------------- the backend's ops */

static int ops_list_nodes(void *arg, struct slurm_node **out, size_t *n, char *err, size_t errlen)
{
	return slurm_cli_nodes(arg, out, n, err, errlen);
}

static int ops_update(void *arg, const char *const *names, size_t n, int drain, const char *reason,
		      char *err, size_t errlen)
{
	return slurm_cli_update(arg, names, n, drain ? SLURM_UPDATE_DRAIN : SLURM_UPDATE_RESUME,
				drain ? reason : NULL, err, errlen);
}

int slurm_cli_reconfigure(struct slurm_cli *c, char *err, size_t errlen)
{
	char *argv[] = {c->scontrol, "reconfigure", NULL};
	struct proc_result res;
	int rc = run(c, argv, "scontrol reconfigure", 0, &res, err, errlen);
	proc_result_release(&res);
	return rc;
}

static int ops_reconfigure(void *arg, char *err, size_t errlen)
{
	return slurm_cli_reconfigure(arg, err, errlen);
}

static int ops_list_jobs(void *arg, struct slurm_job **out, size_t *n, char *err, size_t errlen)
{
	return slurm_cli_jobs(arg, out, n, err, errlen);
}

void slurm_cli_ops(struct slurm_cli *c, struct slurm_ops *out)
{
	*out = (struct slurm_ops){.list_nodes = ops_list_nodes,
				  .update = ops_update,
				  .list_jobs = ops_list_jobs,
				  .reconfigure = ops_reconfigure,
				  .arg = c};
}
