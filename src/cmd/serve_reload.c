/* serve_reload.c - serve's SIGHUP: re-read the config file, apply the log level, name what
 * needs a restart (serve_reload.h). */
#include "cmd/serve_reload.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "cmd/serve_opts.h"
#include "fleet/fleet.h"

/* The level names, as log_level_parse numbers them; static so cur->log_level may point here. */
static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

/* Appends name to the comma list out (outlen bytes), cut when full. */
static void list_add(char *out, size_t outlen, const char *name)
{
	size_t n = strlen(out);
	if (n + 1 >= outlen)
		return;
	snprintf(out + n, outlen - n, "%s%s", n ? "," : "", name);
}

/* The keys fleet_set_bmc_limits applies. */
static int is_limit_key(const char *k)
{
	return strcmp(k, "site-qps") == 0 || strcmp(k, "bmc-concurrency") == 0 ||
	       strcmp(k, "bmc-min-interval") == 0;
}

int serve_reload(int argc, char **argv, struct serve_opts *cur, struct fleet *fl)
{
	if (!cur->config) {
		log_info("serve: reload: started without --config, nothing to re-read");
		return 0;
	}
	char err[600];
	/* The file alone first, for its error with FILE:LINE (serve_opts_parse would print it to
	 * stderr without the log's time and level). */
	struct serve_opts *n = malloc(sizeof(*n));
	if (!n)
		abort();
	serve_opts_defaults(n);
	int rc = serve_opts_load_file(cur->config, n, err, sizeof(err));
	if (rc < 0)
		goto bad;
	/* Then as at start: defaults, the file, the flags over it (the flags parsed at start, so
	 * only a file changed since the line above can fail here; its message is on stderr). */
	if (serve_opts_parse(argc, argv, n) >= 0) {
		snprintf(err, sizeof(err), "%s: changed while being read, see the line above",
			 cur->config);
		rc = FP_EINVAL;
		goto bad;
	}
	if (serve_opts_validate(n, err, sizeof(err)) < 0) {
		rc = FP_EINVAL;
		goto bad;
	}
	const char *changed[SERVE_OPTS_MAX];
	size_t nc = serve_opts_diff(cur, n, changed, SERVE_OPTS_MAX);
	char applied[256] = "", restart[1024] = "";
	int limits = 0;
	for (size_t i = 0; i < nc; i++)
		limits |= is_limit_key(changed[i]);
	if (limits &&
	    fleet_set_bmc_limits(fl, n->site_qps, n->bmc_concurrency, n->bmc_min_interval) == 0) {
		cur->site_qps = n->site_qps;
		cur->bmc_concurrency = n->bmc_concurrency;
		cur->bmc_min_interval = n->bmc_min_interval;
	} else {
		limits = 0; /* no limiters to change: a restart applies them */
	}
	for (size_t i = 0; i < nc; i++) {
		if (strcmp(changed[i], "log-level") == 0) {
			/* unset in the file = the default, info */
			int lvl = n->log_level ? log_level_parse(n->log_level) : LOG_LVL_INFO;
			log_init((enum log_level)lvl, NULL);
			cur->log_level = n->log_level ? level_names[lvl] : NULL;
			list_add(applied, sizeof(applied), changed[i]);
		} else if (limits && is_limit_key(changed[i])) {
			list_add(applied, sizeof(applied), changed[i]);
		} else {
			list_add(restart, sizeof(restart), changed[i]);
		}
	}
	free(n);
	log_info("serve: reloaded config=%s applied=%s restart_needed=%s", cur->config,
		 *applied ? applied : "none", *restart ? restart : "none");
	if (*restart)
		log_warn("serve: restart needed keys=%s config=%s", restart, cur->config);
	log_debug("serve: reload done log_level=%s", level_names[log_level_get()]);
	return 0;
bad:
	free(n);
	log_error("serve: reload failed, running settings kept config=%s err=\"%s\"", cur->config,
		  err);
	return rc;
}
