/* serve_standby.c - the standby's answers (serve_standby.h): a small libmicrohttpd daemon on
 * the API address, one poll thread, no store access, replaced by the real API server the
 * moment this serve is elected. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "api/server.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/metrics.h"
#include "cmd/serve_standby.h"
#include "store/leader.h"
#include "base/banned.h"

struct serve_standby {
	struct MHD_Daemon *mhd;
	struct leader *l;
	char *cert, *key; /* the TLS pair, kept while the daemon runs (NULL: plain http) */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     const char *body, size_t len, const char *location)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", type);
	if (location && *location)
		MHD_add_response_header(r, "Location", location);
	enum MHD_Result ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result access_cb(void *arg, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **ctx)
{
	struct serve_standby *sb = arg;
	if (!*ctx) { /* first call: headers only */
		*ctx = sb;
		return MHD_YES;
	}
	if (*upload_size) { /* discard a body */
		*upload_size = 0;
		return MHD_YES;
	}
	char leader[256], body[1024];
	leader_holder(sb->l, leader, sizeof(leader));
	if (strcmp(url, "/healthz") == 0)
		return reply(c, 200, "application/json", "{\"status\":\"ok\"}", 15, NULL);
	if (strcmp(url, "/metrics") == 0) {
		struct buf b;
		buf_init(&b, 0);
		metrics_render(&b);
		enum MHD_Result ok = reply(c, 200, "text/plain; version=0.0.4; charset=utf-8",
					   b.data ? b.data : "", b.len, NULL);
		buf_release(&b);
		return ok;
	}
	/* the leader URL is ours (a serve's --advertise-url or listen), printable ASCII */
	int n;
	if (strcmp(url, "/readyz") == 0)
		n = snprintf(body, sizeof(body), "{\"status\":\"standby\",\"leader\":\"%s\"}",
			     leader);
	else
		n = snprintf(body, sizeof(body),
			     "{\"type\":\"about:blank\",\"title\":\"Service Unavailable\","
			     "\"status\":503,\"detail\":\"this fleetplane serve is a standby; the "
			     "leader is %s\",\"leader\":\"%s\"}",
			     *leader ? leader : "not known yet", leader);
	if (n < 0 || (size_t)n >= sizeof(body))
		n = 0;
	return reply(c, 503, "application/json", body, (size_t)n, leader);
}

struct serve_standby *serve_standby_start(const char *listen, struct leader *l,
					  const char *cert_pem, const char *key_pem, char *err,
					  size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int v6 = 0;
	if (api_listen_parse(listen, &ss, &sl, &v6, err, errlen) < 0)
		return NULL;
	struct serve_standby *sb = xcalloc(1, sizeof(*sb));
	sb->l = l;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	if (v6)
		flags |= MHD_USE_IPv6;
	struct MHD_OptionItem tls[3] = {{MHD_OPTION_END, 0, NULL}};
	if (cert_pem && key_pem) {
		flags |= MHD_USE_TLS;
		sb->cert = xstrdup(cert_pem);
		sb->key = xstrdup(key_pem);
		tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, sb->cert};
		tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, sb->key};
	}
	sb->mhd = MHD_start_daemon(flags, 0, NULL, NULL, access_cb, sb, MHD_OPTION_SOCK_ADDR,
				   (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT,
				   (unsigned)10, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	if (!sb->mhd) {
		fp_errf(FP_EIO, err, errlen, "cannot listen on %s (address in use?)", listen);
		serve_standby_stop(sb);
		return NULL;
	}
	return sb;
}

void serve_standby_stop(struct serve_standby *sb)
{
	if (!sb)
		return;
	if (sb->mhd)
		MHD_stop_daemon(sb->mhd);
	free(sb->cert);
	if (sb->key)
		explicit_bzero(sb->key, strlen(sb->key));
	free(sb->key);
	free(sb);
}
