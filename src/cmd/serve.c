/* serve.c - `fleetplane serve`: the control plane process. Parses the options into a
 * struct fleet_config and runs one fleet (fleet/fleet.h: store, cache, controllers, drivers,
 * API server) until SIGINT/SIGTERM, then stops and frees it in dependency order. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "cmd/run.h"
#include "cmd/serve_opts.h"
#include "fleet/fleet.h"

/* fleetplane serve: options from serve_opts' one table (a --config file, flags over it; --check
 * validates and exits), then one fleet until SIGINT/SIGTERM. Exit 0, 1 (the fleet failed to
 * start) or 2 (bad options). */
int cmd_serve(int argc, char **argv)
{
	struct fleet_config sv;
	struct serve_opts so;
	int orc = serve_opts_parse(argc, argv, &so);
	if (orc >= 0)
		return orc;
	if (so.check)
		return serve_opts_check(&so);
	if (so.log_level)
		log_init((enum log_level)log_level_parse(so.log_level), NULL);
	serve_opts_fleet_config(&so, &sv);
	/* Block the stop signals in every thread (before the fleet starts any); main waits for
	 * them with sigwait. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	char err[512];
	struct fleet *fl = fleet_new(&sv, err, sizeof(err));
	if (!fl) {
		if (*err)
			fprintf(stderr, "error: %s\n", err);
		return 1;
	}
	if (fleet_start(fl, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		fleet_free(fl);
		return 1;
	}
	int sig = 0;
	sigwait(&stop, &sig);
	log_info("serve: stopping signal=%d", sig);
	fleet_free(fl);
	log_info("serve: stopped");
	return 0;
}
