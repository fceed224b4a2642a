/* serve.c - `fleetplane serve`: the control plane process. Parses the options into a
 * struct fleet_config and runs one fleet (fleet/fleet.h: store, cache, controllers, drivers,
 * API server) until SIGINT/SIGTERM (SIGHUP re-reads the config file), then stops and frees it in dependency order. */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/server.h"
#include "base/err.h"
#include "base/log.h"
#include "cmd/run.h"
#include "cmd/sdnotify.h"
#include "cmd/serve_leader.h"
#include "cmd/serve_opts.h"
#include "cmd/serve_reload.h"
#include "boot/boot_server.h"
#include "fleet/fleet.h"
#include "fleet/fleet_boot.h"
#include "fleet/fleet_slurm.h"
#include "sched/slurm_acct.h"
#include "sched/slurm_cli.h"
#include "sched/slurm_sync.h"
#include "sched/slurm_tenant.h"

/* GET /v1/usage over sacct (api/server.h struct api_usage_source). */
static int usage_sacct(void *arg, int64_t from_s, int64_t to_s, int64_t now_s, const char *by,
		       json_t **out, char *err, size_t errlen)
{
	enum slurm_acct_by b;
	*out = NULL;
	if (slurm_acct_by_parse(by, &b) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "by: expected account, user or partition");
	struct slurm_acct_report rep;
	int rc = slurm_acct_usage(arg, from_s, to_s, now_s, b, &rep, err, errlen);
	if (rc < 0)
		return rc;
	*out = slurm_acct_report_json(&rep);
	slurm_acct_report_release(&rep);
	return 0;
}

/* GET /v1/tenants/{name}'s status (api/server.h struct api_tenant_hooks): the GPUs the
 * account's running jobs hold (squeue) and its GPU use since the 1st of this month, 00:00 UTC
 * (sacct), against the quota. */
static json_t *tenant_status(void *arg, const char *account, long quota)
{
	struct slurm_acct *a = arg;
	char err[512];
	json_t *st = json_pack("{s:o}", "gpuQuota", quota < 0 ? json_null() : json_integer(quota));
	int64_t gpus;
	size_t jobs;
	if (slurm_acct_running_gpus(a, account, &gpus, &jobs, err, sizeof(err)) < 0) {
		json_object_set_new(st, "error", json_string(err));
		return st;
	}
	json_object_set_new(st, "gpusInUse", json_integer(gpus));
	json_object_set_new(st, "runningJobs", json_integer((json_int_t)jobs));
	json_object_set_new(st, "overQuota", json_boolean(quota >= 0 && gpus > quota));
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	time_t from = timegm(&tm);
	char since[32];
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	struct slurm_acct_report rep;
	if (slurm_acct_usage(a, from, (int64_t)now + 1, now, SLURM_ACCT_BY_ACCOUNT, &rep, err,
			     sizeof(err)) < 0) {
		json_object_set_new(st, "error", json_string(err));
		return st;
	}
	int64_t secs = 0;
	for (size_t i = 0; i < rep.nrows; i++)
		if (strcmp(rep.rows[i].key, account) == 0)
			secs = rep.rows[i].gpu_seconds;
	slurm_acct_report_release(&rep);
	json_object_set_new(st, "monthStart", json_string(since));
	json_object_set_new(st, "gpuSecondsThisMonth", json_integer(secs));
	json_object_set_new(st, "gpuHoursThisMonth", json_real((double)secs / 3600.0));
	return st;
}

/* Binds the API's address once and lets it go, before anything is made in the data dir: a port
 * in use or not ours to bind (below 1024 without the capability) fails here, naming it, and
 * leaves no store, key or token behind (issue 16 item 11). The API binds it again moments
 * later (SO_REUSEADDR both times, as libmicrohttpd does); a race for the port in between is
 * still answered by the API's own error. Returns 0 or -1 with err set. */
static int probe_listen(const char *listen, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	int v6 = 0;
	if (api_listen_parse(listen, &ss, &sl, &v6, err, errlen) < 0)
		return -1;
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot listen on %s: socket: %s", listen, strerror(errno));
		return -1;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	int rc = bind(fd, (struct sockaddr *)&ss, sl);
	int e = errno;
	close(fd);
	if (rc < 0) {
		snprintf(err, errlen,
			 "cannot listen on %s: %s; nothing was created in the data dir", listen,
			 strerror(e));
		return -1;
	}
	return 0;
}

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
	if (so.log_format)
		log_format_set((enum log_format)log_format_parse(so.log_format));
	serve_opts_fleet_config(&so, &sv);
	char err[512];
	/* --slurm: the Slurm backend (sched/slurm_sync.h) over scontrol (sched/slurm_cli.h) in the
	 * fleet's scheduler slot; its passes run on its own thread (scontrol blocks). */
	struct slurm_cli *scli = NULL;
	struct slurm_sync *ssync = NULL;
	struct slurm_acct *sacct = NULL;
	struct fleet_scheduler sched;
	int rc_early = 0;
	if (serve_opts_validate(&so, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		return 2;
	}
	if (probe_listen(so.listen, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		return 1;
	}
	if (so.slurm) {
		struct slurm_cli_config cc = {.slurm_conf = getenv("SLURM_CONF")};
		if (slurm_cli_new(&cc, &scli, err, sizeof(err)) < 0) {
			fprintf(stderr, "error: --slurm: %s\n", err);
			return 1;
		}
		/* GET /v1/usage: GPU-hours from Slurm's accounting (sacct; sched/slurm_acct.h). */
		struct slurm_acct_config ac = {.slurm_conf = getenv("SLURM_CONF")};
		if (slurm_acct_new(&ac, &sacct, err, sizeof(err)) < 0) {
			fprintf(stderr, "error: --slurm: %s\n", err);
			slurm_cli_free(scli);
			return 1;
		}
		sv.usage.usage = usage_sacct;
		sv.usage.arg = sacct;
		sv.tenants.status = tenant_status;
		sv.tenants.arg = sacct;
		struct slurm_ops ops;
		slurm_cli_ops(scli, &ops);
		struct slurm_sync_config sc =
			{.threaded = 1,
			 .interval_ms = so.slurm_interval * 1000,
			 .stuck_completing_ms = so.slurm_stuck_completing
							? so.slurm_stuck_completing * 1000
							: -1,
			 .nodes_conf = so.slurm_nodes_conf,
			 .gres_conf = so.slurm_gres_conf};
		ssync = slurm_sync_new(&ops, &sc);
		fleet_slurm_scheduler(ssync, &sched);
		sv.scheduler = &sched;
	}
	/* --boot-listen: the network boot service (boot/boot_server.h) in the fleet's boot slot */
	struct boot_server *boot = NULL;
	struct fleet_boot bootslot;
	char imgdir[4096];
	if (so.boot_listen) {
		struct boot_config bc;
		serve_opts_boot_config(&so, imgdir, sizeof(imgdir), &bc);
		boot = boot_server_new(&bc, err, sizeof(err));
		if (!boot) {
			fprintf(stderr, "error: %s\n", err);
			rc_early = 2;
			goto early;
		}
		fleet_boot_wrap(boot, &bootslot);
		sv.boot = &bootslot;
	}
	/* SIGHUP is held from here (standing by included) until the loop below takes it. */
	sigset_t hup;
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &hup, NULL);
	/* --store etcd://...: stand by until elected; the fleet's store is then fenced */
	struct serve_leader *lead = serve_leader_begin(&so, &sv);
	/* Block the stop signals in every thread (before the fleet starts any); main waits for
	 * them with sigwait. SIGHUP too: it reloads the config file (serve_reload.h). */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct fleet *fl = fleet_new(&sv, err, sizeof(err));
	int rc = 1;
	if (!fl) {
		if (*err)
			fprintf(stderr, "error: %s\n", err);
		goto out;
	}
	if (fleet_start(fl, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		goto out;
	}
	/* --slurm: tenants' GPU quotas into Slurm (GrpTRES), on a thread of their own */
	struct slurm_tenant_sync *tsync = NULL;
	if (sacct) {
		struct slurm_tenant_sync_config tc = {.store = fleet_store(fl),
						      .acct = sacct,
						      .interval_ms = so.slurm_interval * 1000L,
						      .threaded = 1};
		tsync = slurm_tenant_sync_start(&tc, err, sizeof(err));
		if (!tsync) {
			fprintf(stderr, "error: --slurm: %s\n", err);
			goto out;
		}
	}
	/* systemd (Type=notify): the API answers now (fleet_start binds it last) */
	sdnotify_ready("serving");
	int sig = 0;
	while (sigwait(&stop, &sig) == 0 && sig == SIGHUP) {
		sdnotify_reloading();
		serve_reload(argc, argv, &so, fl);
		sdnotify_ready("serving");
	}
	sdnotify_stopping();
	serve_leader_stopping(lead);
	slurm_tenant_sync_free(tsync);
	log_info("serve: stopping signal=%d", sig);
	rc = 0;
out:
	fleet_free(fl); /* stops the scheduler slot first */
	serve_leader_end(lead);
	boot_server_free(boot);
	slurm_sync_free(ssync);
	slurm_cli_free(scli);
	slurm_acct_free(sacct);
	if (rc == 0)
		log_info("serve: stopped");
	return rc;
early:
	slurm_sync_free(ssync);
	slurm_cli_free(scli);
	slurm_acct_free(sacct);
	return rc_early;
}
