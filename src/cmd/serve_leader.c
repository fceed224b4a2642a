/* serve_leader.c - a serve's election, standby phase, fencing and step-down (serve_leader.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/tls.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "cmd/serve_leader.h"
#include "cmd/serve_opts.h"
#include "cmd/serve_standby.h"
#include "fleet/fleet.h"
#include "store/leader.h"
#include "store/store.h"
#include "base/banned.h"

struct serve_leader {
	struct store *st; /* the election's own store instance */
	struct leader *l;
};

static char *self_argv[256];
static volatile int stopping; /* set once serve got its stop signal: no re-exec then */

/* The process's own argv from /proc/self/cmdline, for the re-exec. */
static void save_argv(void)
{
	static char buf[65536];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	size_t k = 0;
	for (ssize_t i = 0; i < n && k < 255; i += (ssize_t)strlen(buf + i) + 1)
		self_argv[k++] = buf + i;
	self_argv[k] = NULL;
}

static void lost(void *arg, const char *why)
{
	if (stopping) {
		log_info("serve: leadership ended while stopping err=\"%s\"", why);
		return;
	}
	log_warn("serve: not the leader any more: stopping every controller and restarting "
		 "as a standby err=\"%s\"",
		 why);
	fflush(NULL);
	if (self_argv[0])
		execv("/proc/self/exe", self_argv);
	log_error("serve: re-exec failed, exiting err=\"%s\"", strerror(errno));
	_exit(1);
}

static int fence_hook(void *arg, struct store *s, char *err, size_t errlen)
{
	struct serve_leader *sl = arg;
	int rc = leader_fence(sl->l, s);
	if (rc < 0)
		return fp_errf(rc, err, errlen, "cannot fence the store with the leadership: %s",
			       fp_err_msg(rc));
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

struct serve_leader *serve_leader_begin(const struct serve_opts *so, struct fleet_config *sv)
{
	if (!so->store || strncmp(so->store, "etcd:", 5) != 0)
		return NULL;
	save_argv();
	struct serve_leader *sl = xcalloc(1, sizeof(*sl));
	char err[512];
	/* etcd may be down or without quorum: wait for it, saying why */
	for (int i = 0;; i++) {
		int rc = store_open(so->store, &sl->st, err, sizeof(err));
		if (rc == 0)
			break;
		if (rc == FP_EINVAL) {
			fprintf(stderr, "error: --store: %s\n", err);
			exit(2);
		}
		if (i % 10 == 0)
			log_warn("serve: waiting for etcd (not acting until it answers) err=\"%s\"",
				 err);
		sleep_ms(500);
	}
	char id[300];
	if (so->advertise_url)
		snprintf(id, sizeof(id), "%s", so->advertise_url);
	else
		snprintf(id, sizeof(id), "%s://%s", so->plain_http ? "http" : "https", so->listen);
	struct leader_config lc = {.id = id, .ttl_s = (int)so->leader_ttl, .lost = lost, .arg = sl};
	if (leader_new(sl->st, &lc, &sl->l, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		exit(2);
	}
	struct serve_standby *sb = NULL;
	if (leader_wait(sl->l, 1000) < 0) {
		log_info("serve: standby id=%s (another serve leads)", id);
		/* the standby speaks what the API will: the same pair the fleet loads (--tls-cert
		 * and --tls-key, or the self-signed pair in the data dir) */
		char *cert = NULL, *key = NULL, cp[4200], kp[4200];
		int tls_ok = 1;
		if (!so->plain_http) {
			snprintf(cp, sizeof(cp), "%s/tls.crt", so->data_dir);
			snprintf(kp, sizeof(kp), "%s/tls.key", so->data_dir);
			const char *cf = so->tls_cert ? so->tls_cert : cp;
			const char *kf = so->tls_key ? so->tls_key : kp;
			tls_ok = (so->tls_cert ||
				  api_tls_ensure_self_signed(so->data_dir, so->listen, NULL, err,
							     sizeof(err)) == 0) &&
				 api_tls_read_pem(cf, &cert, err, sizeof(err)) == 0 &&
				 api_tls_read_pem(kf, &key, err, sizeof(err)) == 0;
		}
		sb = tls_ok ? serve_standby_start(so->listen, sl->l, cert, key, err, sizeof(err))
			    : NULL;
		if (key)
			explicit_bzero(key, strlen(key));
		free(cert);
		free(key);
		if (!sb)
			log_warn("serve: standby answers off err=\"%s\"", err);
		while (leader_wait(sl->l, 1000) < 0)
			;
		serve_standby_stop(sb);
	}
	log_info("serve: leading id=%s; building the fleet", id);
	sv->store_opened = fence_hook;
	sv->store_opened_arg = sl;
	return sl;
}

void serve_leader_stopping(struct serve_leader *sl)
{
	stopping = 1;
}

void serve_leader_end(struct serve_leader *sl)
{
	if (!sl)
		return;
	leader_free(sl->l);
	store_close(sl->st);
	free(sl);
}
