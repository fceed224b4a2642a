/* boot_server.c - the network boot service (see boot_server.h).
 *
 * libmicrohttpd with a thread per connection (MHD_USE_THREAD_PER_CONNECTION |
 * MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, ../shared/recipes/libmicrohttpd.md): the
 * handlers read the store and the image files, which may block, and a boot network has tens to
 * hundreds of clients at once, not thousands; file bodies go out with sendfile(2)
 * (MHD_create_response_from_fd_at_offset64). Responses are queued on the access handler's
 * second call, after the whole body arrived. */
#include "boot/boot_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/metrics.h"
#include "boot/dnsmasq.h"
#include "boot/image.h"
#include "boot/ipxe.h"
#include "core/codec.h"
#include "core/model.h"
#include "engine/objects.h"

#include "base/banned.h"

struct boot_server {
	struct boot_config cfg; /* strings owned */
	char *url;
	struct sockaddr_storage ss;
	socklen_t sl;
	struct MHD_Daemon *mhd;
	unsigned port;
	struct store *store;
	struct cache *cache;
	struct fp_clock *clock;
	const struct secret_key *key;
	struct boot_hooks hooks;
	/* hosts-file thread */
	pthread_t hosts_thread;
	int hosts_running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int hosts_dirty, stopping;
	struct metric_family *m_req;
};

struct req {
	struct buf body;
	int too_big;
};

static char *dupn(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* ---------------------------------------------------------------- config */

static int parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *sl, char *err,
			size_t errlen)
{
	const char *colon = listen ? strrchr(listen, ':') : NULL;
	if (!colon || colon == listen)
		return fp_errf(FP_EINVAL, err, errlen, "--boot-listen %.100s: expected host:port",
			       listen ? listen : "");
	char host[256];
	size_t hl = (size_t)(colon - listen);
	if (hl >= sizeof(host))
		return fp_errf(FP_EINVAL, err, errlen, "--boot-listen: host too long");
	memcpy(host, listen, hl);
	host[hl] = 0;
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	char *end = NULL;
	long port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || port < 0 || port > 65535)
		return fp_errf(FP_EINVAL, err, errlen, "--boot-listen %.100s: bad port", listen);
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_PASSIVE},
			*res = NULL;
	int g = getaddrinfo(host, NULL, &hints, &res);
	if (g != 0 || !res)
		return fp_errf(FP_EINVAL, err, errlen,
			       "--boot-listen %.100s: the host must be an IP address literal "
			       "(the boot network's address)",
			       listen);
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sl = res->ai_addrlen;
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	freeaddrinfo(res);
	return 0;
}

int boot_config_check(const struct boot_config *cfg, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	if (parse_listen(cfg->listen, &ss, &sl, err, errlen) < 0)
		return FP_EINVAL;
	if (!cfg->image_dir)
		return fp_errf(FP_EINVAL, err, errlen, "boot service: no image directory");
	if (cfg->dhcp_hosts && cfg->dhcp_hostsdir)
		return fp_errf(FP_EINVAL, err, errlen,
			       "--boot-dhcp-hosts and --boot-dhcp-hostsdir: give one of them");
	const char *k = cfg->ramdisk_kernel ? cfg->ramdisk_kernel : BOOT_DEFAULT_KERNEL;
	const char *i = cfg->ramdisk_initrd ? cfg->ramdisk_initrd : BOOT_DEFAULT_INITRD;
	char why[200];
	if (image_name_validate(k, why, sizeof(why)) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "--boot-kernel: %s", why);
	if (image_name_validate(i, why, sizeof(why)) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "--boot-initrd: %s", why);
	if (cfg->kernel_args && ipxe_word_check(cfg->kernel_args, 1024) < 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "--boot-kernel-args: printable ASCII without $ # quotes or "
			       "backslashes, at most 1024 bytes");
	if (cfg->url &&
	    (ipxe_word_check(cfg->url, 256) < 0 || strchr(cfg->url, ' ') ||
	     (strncmp(cfg->url, "http://", 7) != 0 && strncmp(cfg->url, "https://", 8) != 0)))
		return fp_errf(FP_EINVAL, err, errlen,
			       "--boot-url %.100s: expected http://host:port with no spaces",
			       cfg->url);
	return 0;
}

struct boot_server *boot_server_new(const struct boot_config *cfg, char *err, size_t errlen)
{
	if (boot_config_check(cfg, err, errlen) < 0)
		return NULL;
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	parse_listen(cfg->listen, &ss, &sl, err, errlen);
	const char *k = cfg->ramdisk_kernel ? cfg->ramdisk_kernel : BOOT_DEFAULT_KERNEL;
	const char *i = cfg->ramdisk_initrd ? cfg->ramdisk_initrd : BOOT_DEFAULT_INITRD;
	struct boot_server *b = xcalloc(1, sizeof(*b));
	b->cfg.listen = dupn(cfg->listen);
	b->cfg.url = dupn(cfg->url);
	b->cfg.image_dir = dupn(cfg->image_dir);
	b->cfg.ramdisk_kernel = xstrdup(k);
	b->cfg.ramdisk_initrd = xstrdup(i);
	b->cfg.kernel_args = dupn(cfg->kernel_args);
	b->cfg.dhcp_hosts = dupn(cfg->dhcp_hosts);
	b->cfg.dhcp_hostsdir = dupn(cfg->dhcp_hostsdir);
	b->cfg.dnsmasq_pid = dupn(cfg->dnsmasq_pid);
	b->ss = ss;
	b->sl = sl;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	b->m_req = metrics_register(METRIC_COUNTER, "fleetplane_boot_requests_total",
				    "Requests to the network boot service by route and answer",
				    "route,code", NULL, 0);
	return b;
}

/* ---------------------------------------------------------------- replies */

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned code, const char *type,
				  char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
								 MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_json(struct boot_server *b, struct MHD_Connection *c,
				  const char *route, unsigned code, json_t *doc)
{
	char codes[8];
	snprintf(codes, sizeof(codes), "%u", code);
	metric_add(b->m_req, (const char *[]){route, codes}, 1);
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return reply_text(c, code, "application/json", text ? text : xstrdup("{}"));
}

static enum MHD_Result reply_error(struct boot_server *b, struct MHD_Connection *c,
				   const char *route, unsigned code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static enum MHD_Result reply_error(struct boot_server *b, struct MHD_Connection *c,
				   const char *route, unsigned code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (code >= 400)
		log_info("boot: request refused route=%s status=%u err=\"%s\"", route, code, msg);
	return reply_json(b, c, route, code, json_pack("{s:s}", "error", msg));
}

/* ---------------------------------------------------------------- nodes */

struct mac_find {
	const char *mac;
	char *name;
};

static int visit_mac(void *arg, const struct node *n)
{
	struct mac_find *f = arg;
	for (size_t i = 0; i < n->nmacs; i++)
		if (strcasecmp(n->macs[i], f->mac) == 0) {
			f->name = xstrdup(n->name);
			return 1;
		}
	return 0;
}

/* The node's network-boot operation in flight (store reads), or NULL with why. */
static int boot_op(struct boot_server *b, const char *name, struct node **np,
		   struct operation **opp, char *why, size_t whylen)
{
	*np = NULL;
	*opp = NULL;
	struct node *n = NULL;
	if (objects_store_node(b->store, name, &n, NULL, NULL, 0) < 0) {
		snprintf(why, whylen, "no node %.63s", name);
		return FP_EPERM;
	}
	struct operation *op = NULL;
	if (!n->operation || objects_store_op(b->store, n->operation, &op, NULL, NULL, 0) < 0 ||
	    op_state_terminal(op->state) || strcmp(op->node, n->name) != 0 ||
	    !json_is_object(json_object_get(op->params, "networkBoot"))) {
		snprintf(why, whylen,
			 "node %.63s has no network-boot provisioning in flight (phase %s)", name,
			 node_phase_name(n->phase));
		operation_free(op);
		node_free(n);
		return FP_EPERM;
	}
	*np = n;
	*opp = op;
	return 0;
}

/* Checks a callback's token for node name: 0 with the node and its operation (caller frees),
 * or an HTTP code with why. */
static unsigned check_token(struct boot_server *b, const char *name, const char *token,
			    struct node **np, struct operation **opp, char *why, size_t whylen)
{
	*np = NULL;
	*opp = NULL;
	if (!name || name_validate("node", name, NULL, 0) < 0) {
		snprintf(why, whylen, "\"node\": expected a node name");
		return 400;
	}
	if (!token || !*token || strlen(token) > 128) {
		snprintf(why, whylen, "\"token\": expected the token from the kernel command line");
		return 400;
	}
	if (boot_op(b, name, np, opp, why, whylen) < 0)
		return 403;
	char want[SECRET_BOOT_TOKEN_LEN + 1];
	if (secret_boot_token(b->key, name, (*opp)->id, want, sizeof(want)) < 0 ||
	    !secret_token_equal(want, token)) {
		snprintf(why, whylen,
			 "token refused: it is not the token of node %.63s's provisioning attempt "
			 "in flight (a callback from an earlier boot, or for another node)",
			 name);
		sodium_memzero(want, sizeof(want));
		node_free(*np);
		operation_free(*opp);
		*np = NULL;
		*opp = NULL;
		return 403;
	}
	sodium_memzero(want, sizeof(want));
	return 0;
}

/* ---------------------------------------------------------------- routes */

static const char *base_url(struct boot_server *b)
{
	return b->url;
}

static enum MHD_Result h_ipxe(struct boot_server *b, struct MHD_Connection *c)
{
	const char *raw = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "mac");
	char mac[BOOT_MAC_LEN + 1];
	if (boot_mac_parse(raw, mac) < 0) {
		metric_add(b->m_req, (const char *[]){"ipxe", "400"}, 1);
		return reply_text(c, 400, "text/plain",
				  xstrdup("#!ipxe\necho fleetplane: ?mac= must be a MAC address "
					  "like 52:54:00:12:34:56\nexit 1\n"));
	}
	struct mac_find f = {.mac = mac};
	if (b->cache)
		cache_visit_nodes(b->cache, visit_mac, &f);
	if (!f.name) {
		log_info("boot: ipxe mac=%s answer=unknown", mac);
		metric_add(b->m_req, (const char *[]){"ipxe", "unknown"}, 1);
		return reply_text(c, 200, "text/plain", ipxe_script_unknown(mac));
	}
	struct node *n = NULL;
	struct operation *op = NULL;
	char why[256];
	char *script = NULL;
	const char *answer = "disk";
	if (boot_op(b, f.name, &n, &op, why, sizeof(why)) == 0 &&
	    operation_at_or_before(op, "wait_deploy")) {
		char tok[SECRET_BOOT_TOKEN_LEN + 1];
		if (secret_boot_token(b->key, n->name, op->id, tok, sizeof(tok)) == 0) {
			struct ipxe_ramdisk rd = {.url = base_url(b),
						  .kernel = b->cfg.ramdisk_kernel,
						  .initrd = b->cfg.ramdisk_initrd,
						  .node = n->name,
						  .token = tok,
						  .kernel_args = b->cfg.kernel_args};
			script = ipxe_script_ramdisk(&rd);
			answer = "ramdisk";
		}
		sodium_memzero(tok, sizeof(tok));
	}
	if (!script) {
		char r[200];
		if (op)
			snprintf(r, sizeof(r), "operation %s is at step %s", op->id,
				 op->step < op->nsteps ? op->steps[op->step] : "(done)");
		else
			snprintf(r, sizeof(r), "nothing to provision");
		script = ipxe_script_local_disk(f.name, r);
	}
	log_info("boot: ipxe mac=%s node=%s answer=%s op=%s", mac, f.name, answer,
		 op ? op->id : "-");
	metric_add(b->m_req, (const char *[]){"ipxe", answer}, 1);
	node_free(n);
	operation_free(op);
	free(f.name);
	return reply_text(c, 200, "text/plain", script);
}

int boot_etag_match(const char *h, const char *etag)
{
	if (!h)
		return 0;
	size_t elen = strlen(etag);
	const char *p = h;
	for (int n = 0; n < 64; n++) {
		p += strspn(p, " \t");
		if (*p == '*')
			return n == 0 && p[1 + strspn(p + 1, " \t")] == '\0';
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		if (*p != '"')
			return 0;
		const char *end = strchr(p + 1, '"');
		if (!end)
			return 0;
		if ((size_t)(end + 1 - p) == elen && memcmp(p, etag, elen) == 0)
			return 1;
		p = end + 1;
		p += strspn(p, " \t");
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return 0;
		p++;
	}
	return 0;
}

int boot_range_parse(const char *h, int64_t size, int64_t *off, int64_t *len)
{
	if (!h || strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
		return 0;
	const char *p = h + 6;
	char *end;
	if (*p == '-') {
		long long n = strtoll(p + 1, &end, 10);
		if (*end || n <= 0 || p[1] < '0' || p[1] > '9')
			return 0;
		if (size == 0)
			return -1;
		*len = n > size ? size : n;
		*off = size - *len;
		return 1;
	}
	if (*p < '0' || *p > '9')
		return 0;
	long long a = strtoll(p, &end, 10);
	if (*end != '-' || a < 0)
		return 0;
	long long z = size - 1;
	if (end[1]) {
		if (end[1] < '0' || end[1] > '9')
			return 0;
		char *e2;
		z = strtoll(end + 1, &e2, 10);
		if (*e2 || z < a)
			return 0;
		if (z > size - 1)
			z = size - 1;
	}
	if (a >= size)
		return -1;
	*off = a;
	*len = z - a + 1;
	return 1;
}

static enum MHD_Result h_file(struct boot_server *b, struct MHD_Connection *c, const char *name)
{
	int fd = -1;
	struct image_info info;
	char err[256];
	int rc = image_open(b->cfg.image_dir, name, &fd, &info, err, sizeof(err));
	if (rc < 0)
		return reply_error(b, c, "files", rc == FP_ENOTFOUND || rc == FP_EINVAL ? 404 : 500,
				   "%s", err);
	char etag[IMAGE_SHA256_HEX + 3];
	snprintf(etag, sizeof(etag), "\"%s\"", info.sha256);
	unsigned char bin[32];
	char b64[64], digest[96];
	sodium_hex2bin(bin, sizeof(bin), info.sha256, IMAGE_SHA256_HEX, NULL, NULL, NULL);
	sodium_bin2base64(b64, sizeof(b64), bin, sizeof(bin), sodium_base64_VARIANT_ORIGINAL);
	snprintf(digest, sizeof(digest), "sha-256=:%s:", b64);
	const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
	struct MHD_Response *r;
	unsigned code;
	if (boot_etag_match(inm, etag)) {
		close(fd);
		r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		code = 304;
	} else {
		int64_t off = 0, len = info.size;
		int pr = boot_range_parse(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range"),
					  info.size, &off, &len);
		const char *ifr = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-Range");
		if (pr == 1 && ifr && strcmp(ifr, etag) != 0)
			pr = 0, off = 0, len = info.size; /* changed since: the whole file */
		if (pr < 0) {
			close(fd);
			char cr[64];
			snprintf(cr, sizeof(cr), "bytes */%" PRId64, info.size);
			r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
			MHD_add_response_header(r, "Content-Range", cr);
			code = 416;
		} else {
			r = MHD_create_response_from_fd_at_offset64((uint64_t)len, fd,
								    (uint64_t)off);
			if (!r) {
				close(fd);
				return reply_error(b, c, "files", 500, "cannot serve %s", name);
			}
			code = 200;
			if (pr == 1) {
				char cr[96];
				snprintf(cr, sizeof(cr), "bytes %" PRId64 "-%" PRId64 "/%" PRId64,
					 off, off + len - 1, info.size);
				MHD_add_response_header(r, "Content-Range", cr);
				code = 206;
			}
			MHD_add_response_header(r, "Content-Type", "application/octet-stream");
		}
	}
	MHD_add_response_header(r, "ETag", etag);
	MHD_add_response_header(r, "Accept-Ranges", "bytes");
	MHD_add_response_header(r, "Repr-Digest", digest);
	char codes[8];
	snprintf(codes, sizeof(codes), "%u", code);
	metric_add(b->m_req, (const char *[]){"files", codes}, 1);
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static json_t *parse_body(struct req *q, char *why, size_t whylen)
{
	json_error_t je;
	json_t *doc = q->body.len
			      ? json_loadb(q->body.data, q->body.len, JSON_REJECT_DUPLICATES, &je)
			      : NULL;
	if (!doc) {
		snprintf(why, whylen, "body: expected a JSON object%s%.200s",
			 q->body.len ? ": " : " (empty body)", q->body.len ? je.text : "");
		return NULL;
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		snprintf(why, whylen, "body: expected a JSON object");
		return NULL;
	}
	return doc;
}

static const char *const keys_inspect[] = {"node", "token", "inventory", NULL};
static const char *const keys_deployed[] = {"node",  "token", "ok",      "sha256",
					    "bytes", "disk",  "message", NULL};
static const char *const keys_booted[] = {"node", "token", "bootId", NULL};

static int printable(const char *s, size_t max)
{
	if (!s || strlen(s) > max)
		return 0;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

/* 1 when doc's key is absent, null or a string: a field of another type is refused, not read
 * as absent. */
static int str_or_absent(const json_t *doc, const char *key)
{
	const json_t *v = json_object_get(doc, key);
	return !v || json_is_null(v) || json_is_string(v);
}

/* POST /boot/inspect, /boot/deployed, /boot/booted. */
static enum MHD_Result h_report(struct boot_server *b, struct MHD_Connection *c, struct req *q,
				enum boot_report_kind kind)
{
	static const char *const routes[] = {"inspect", "deployed", "booted"};
	const char *route = routes[kind];
	char why[512];
	json_t *doc = parse_body(q, why, sizeof(why));
	if (!doc)
		return reply_error(b, c, route, 400, "%s", why);
	const char *const *keys = kind == BOOT_INSPECTED  ? keys_inspect
				  : kind == BOOT_DEPLOYED ? keys_deployed
							  : keys_booted;
	char kerr[256];
	if (jsonx_check_keys(doc, keys, "body", kerr, sizeof(kerr)) < 0) {
		json_decref(doc);
		return reply_error(b, c, route, 400, "%s", kerr);
	}
	struct node *n = NULL;
	struct operation *op = NULL;
	unsigned code = check_token(b, jsonx_str(doc, "node"), jsonx_str(doc, "token"), &n, &op,
				    why, sizeof(why));
	if (code) {
		json_decref(doc);
		return reply_error(b, c, route, code, "%s", why);
	}
	json_t *rep = NULL;
	code = 0;
	if (kind == BOOT_INSPECTED) {
		json_t *inv = json_object_get(doc, "inventory");
		if (!json_is_object(inv)) {
			code = 400;
			snprintf(why, sizeof(why), "\"inventory\": expected an object");
		} else {
			json_t *v = json_deep_copy(inv);
			json_object_set_new(v, "source", json_string("inspection"));
			rep = json_pack("{s:o}", "inventory", v);
		}
	} else if (kind == BOOT_DEPLOYED) {
		json_t *ok = json_object_get(doc, "ok");
		const char *sha = jsonx_str(doc, "sha256"), *disk = jsonx_str(doc, "disk"),
			   *msg = jsonx_str(doc, "message");
		json_t *bytes = json_object_get(doc, "bytes");
		if (!json_is_boolean(ok)) {
			code = 400;
			snprintf(why, sizeof(why), "\"ok\": expected true or false");
		} else if (!str_or_absent(doc, "sha256") || !str_or_absent(doc, "disk") ||
			   !str_or_absent(doc, "message") || (sha && !printable(sha, 64)) ||
			   (disk && !printable(disk, 64)) || (msg && !printable(msg, 512)) ||
			   (bytes && (!json_is_integer(bytes) || json_integer_value(bytes) < 0))) {
			code = 400;
			snprintf(why, sizeof(why),
				 "\"sha256\", \"disk\" (<= 64), \"message\" (<= 512): printable "
				 "strings; \"bytes\": a count");
		} else {
			int good = json_is_true(ok);
			char m[600];
			snprintf(m, sizeof(m), "%s", msg ? msg : "");
			struct image_info info;
			const char *img = jsonx_str(json_object_get(op->params, "networkBoot"),
						    "image");
			/* the agent checked the sum while writing; check what it says it saw
			 * against the image's record too */
			if (good && img && image_get(b->cfg.image_dir, img, &info, NULL, 0) == 0 &&
			    (!sha || strcmp(sha, info.sha256) != 0)) {
				good = 0;
				snprintf(m, sizeof(m),
					 "reported sha256 %.64s differs from image %s's %s",
					 sha ? sha : "(none)", img, info.sha256);
			}
			rep = json_pack("{s:b,s:s?,s:I,s:s?,s:s}", "ok", good, "sha256", sha,
					"bytes",
					(json_int_t)(bytes ? json_integer_value(bytes) : 0), "disk",
					disk, "message", m);
		}
	} else {
		const char *id = jsonx_str(doc, "bootId");
		if (!id || !*id || strlen(id) > 64 || ipxe_word_check(id, 64) < 0 ||
		    strchr(id, ' ')) {
			code = 400;
			snprintf(why, sizeof(why),
				 "\"bootId\": expected /proc/sys/kernel/random/boot_id");
		} else {
			rep = json_pack("{s:s}", "bootId", id);
		}
	}
	if (!code && !operation_at_or_before(op, netboot_report_step((int)kind))) {
		code = 409;
		snprintf(why, sizeof(why), "operation %s of node %s is past %s (at %s)", op->id,
			 n->name, netboot_report_step((int)kind),
			 op->step < op->nsteps ? op->steps[op->step] : "(done)");
	} else if (!code && kind == BOOT_DISK_BOOTED && operation_at_or_before(op, "wait_deploy")) {
		/* the written system exists only once the deploy is done: a boot report before
		 * that would let wait_disk_boot pass without the disk ever booting */
		code = 409;
		snprintf(why, sizeof(why),
			 "operation %s of node %s is at %s: nothing has been written to boot from "
			 "yet",
			 op->id, n->name, op->step < op->nsteps ? op->steps[op->step] : "(done)");
	}
	enum MHD_Result ret;
	if (code) {
		ret = reply_error(b, c, route, code, "%s", why);
	} else {
		if (b->hooks.reported)
			b->hooks.reported(b->hooks.arg, n->name, op->id, kind, rep);
		log_info("boot: report accepted route=%s node=%s op=%s", route, n->name, op->id);
		ret = reply_json(b, c, route, 200,
				 json_pack("{s:b,s:s,s:s}", "accepted", 1, "node", n->name,
					   "operation", op->id));
	}
	json_decref(rep);
	json_decref(doc);
	node_free(n);
	operation_free(op);
	return ret;
}

/* "<prefix><v>\n" with v as a YAML double-quoted scalar: JSON's string syntax is a subset
 * of it (YAML 1.2 section 7.3.1), so any string stays one scalar. */
static void yaml_line(struct buf *out, const char *prefix, const char *v)
{
	json_t *s = json_string(v ? v : "");
	char *q = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
	buf_printf(out, "%s%s\n", prefix, q ? q : "\"\"");
	free(q);
	json_decref(s);
}

static void yaml_str(struct buf *out, const char *key, const char *v)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "%s: ", key);
	yaml_line(out, prefix, v);
}

static enum MHD_Result h_deploy(struct boot_server *b, struct MHD_Connection *c)
{
	const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "node");
	const char *token = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
	struct node *n = NULL;
	struct operation *op = NULL;
	char why[512];
	unsigned code = check_token(b, name, token, &n, &op, why, sizeof(why));
	if (code)
		return reply_error(b, c, "deploy", code, "%s", why);
	if (!operation_at_or_before(op, "wait_deploy")) {
		reply_error(b, c, "deploy", 409, "operation %s of node %s is past wait_deploy",
			    op->id, n->name);
		node_free(n);
		operation_free(op);
		return MHD_YES;
	}
	const char *img = jsonx_str(json_object_get(op->params, "networkBoot"), "image");
	struct image_info info;
	char err[256];
	if (!img || image_get(b->cfg.image_dir, img, &info, err, sizeof(err)) < 0) {
		reply_error(b, c, "deploy", 404,
			    "image %s of node %s is not in the image store (fleetplane image add)",
			    img ? img : "(none)", n->name);
		node_free(n);
		operation_free(op);
		return MHD_YES;
	}
	const json_t *p = n->provision;
	const char *host = jsonx_str(p, "hostname");
	if (!host)
		host = n->name;
	struct buf md;
	buf_init(&md, 256 * 1024);
	char iid[200];
	snprintf(iid, sizeof(iid), "%s-%s", n->name, op->id);
	yaml_str(&md, "instance-id", iid);
	yaml_str(&md, "local-hostname", host);
	yaml_str(&md, "fleetplane-node", n->name);
	yaml_str(&md, "fleetplane-url", base_url(b));
	yaml_str(&md, "fleetplane-token", token);
	json_t *keys = json_object_get(p, "sshAuthorizedKeys");
	if (json_array_size(keys)) {
		buf_puts(&md, "public-keys:\n");
		size_t i;
		json_t *k;
		json_array_foreach(keys, i, k)
			yaml_line(&md, "  - ", json_string_value(k));
	}
	char *mdtext = buf_detach(&md, NULL);
	const char *ud = jsonx_str(p, "userData");
	char *udtext = NULL;
	if (!ud && json_array_size(keys)) {
		struct buf u;
		buf_init(&u, 256 * 1024);
		buf_puts(&u, "#cloud-config\nssh_authorized_keys:\n");
		size_t i;
		json_t *k;
		json_array_foreach(keys, i, k)
			yaml_line(&u, "  - ", json_string_value(k));
		udtext = buf_detach(&u, NULL);
	}
	char *url = xasprintf("%s/boot/files/%s", base_url(b), img);
	json_t *doc = json_pack("{s:{s:s,s:s,s:s,s:I},s:s?,s:{s:s,s:s,s:s?}}", "image", "name", img,
				"url", url, "sha256", info.sha256, "sizeBytes",
				(json_int_t)info.size, "rootDevice", jsonx_str(p, "rootDevice"),
				"config", "hostname", host, "metaData", mdtext, "userData",
				ud ? ud : udtext);
	if (!json_object_get(doc, "rootDevice"))
		json_object_set_new(doc, "rootDevice", json_null());
	log_info("boot: deploy node=%s op=%s image=%s", n->name, op->id, img);
	free(url);
	free(mdtext);
	free(udtext);
	node_free(n);
	operation_free(op);
	return reply_json(b, c, "deploy", 200, doc);
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	struct boot_server *b = cls;
	struct req *q = *con_cls;
	if (!q) {
		q = xcalloc(1, sizeof(*q));
		buf_init(&q->body, BOOT_MAX_BODY);
		*con_cls = q;
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
		if (cl && strtoull(cl, NULL, 10) > BOOT_MAX_BODY)
			return reply_error(b, c, "body", 413, "body larger than %u bytes",
					   BOOT_MAX_BODY);
		return MHD_YES;
	}
	if (*upload_size) {
		if (!q->too_big && buf_append(&q->body, upload, *upload_size) < 0)
			q->too_big = 1;
		*upload_size = 0;
		return MHD_YES;
	}
	if (q->too_big)
		return reply_error(b, c, "body", 413, "body larger than %u bytes", BOOT_MAX_BODY);
	int get = strcmp(method, "GET") == 0, head = strcmp(method, "HEAD") == 0,
	    post = strcmp(method, "POST") == 0;
	if (strncmp(url, "/boot/files/", 12) == 0 && (get || head))
		return h_file(b, c, url + 12);
	if (strcmp(url, "/boot/ipxe") == 0 && get)
		return h_ipxe(b, c);
	if (strcmp(url, "/boot/deploy") == 0 && get)
		return h_deploy(b, c);
	if (strcmp(url, "/boot/inspect") == 0 && post)
		return h_report(b, c, q, BOOT_INSPECTED);
	if (strcmp(url, "/boot/deployed") == 0 && post)
		return h_report(b, c, q, BOOT_DEPLOYED);
	if (strcmp(url, "/boot/booted") == 0 && post)
		return h_report(b, c, q, BOOT_DISK_BOOTED);
	if (strcmp(url, "/healthz") == 0 && get)
		return reply_json(b, c, "healthz", 200, json_pack("{s:s}", "status", "ok"));
	(void)version;
	return reply_error(b, c, "other", 404, "no route %s %.200s on the boot service", method,
			   url);
}

static void completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *q = *con_cls;
	if (q) {
		buf_release(&q->body);
		free(q);
		*con_cls = NULL;
	}
}

/* ---------------------------------------------------------------- hosts file */

struct hosts_collect {
	struct dhcp_host *h;
	size_t n, cap;
	char **strs;
	size_t nstrs, capstrs;
};

static const char *keep(struct hosts_collect *hc, const char *s)
{
	if (!s)
		return NULL;
	if (hc->nstrs == hc->capstrs) {
		hc->capstrs = hc->capstrs ? hc->capstrs * 2 : 64;
		hc->strs = xrealloc(hc->strs, hc->capstrs * sizeof(char *));
	}
	return hc->strs[hc->nstrs++] = xstrdup(s);
}

static int visit_hosts(void *arg, const struct node *n)
{
	struct hosts_collect *hc = arg;
	const char *host = jsonx_str(n->provision, "hostname");
	for (size_t i = 0; i < n->nmacs; i++) {
		if (hc->n == hc->cap) {
			hc->cap = hc->cap ? hc->cap * 2 : 64;
			hc->h = xrealloc(hc->h, hc->cap * sizeof(*hc->h));
		}
		hc->h[hc->n++] = (struct dhcp_host){
			.mac = keep(hc, n->macs[i]),
			.tag = keep(hc, n->site),
			.ip = i == 0 ? keep(hc, jsonx_str(n->provision, "ipAddress")) : NULL,
			.hostname = i == 0 ? keep(hc, host ? host : n->name) : NULL,
			.node = keep(hc, n->name)};
	}
	return 0;
}

static void hosts_sync(struct boot_server *b)
{
	struct hosts_collect hc = {0};
	cache_visit_nodes(b->cache, visit_hosts, &hc);
	char err[300];
	if (b->cfg.dhcp_hostsdir) {
		size_t written = 0, removed = 0;
		if (dnsmasq_hostsdir_sync(b->cfg.dhcp_hostsdir, hc.h, hc.n, &written, &removed, err,
					  sizeof(err)) < 0)
			log_warn("boot: cannot keep the dhcp hosts dir err=\"%s\"", err);
		else if (written || removed)
			log_info("boot: dhcp hosts dir updated path=%s written=%zu removed=%zu "
				 "entries=%zu",
				 b->cfg.dhcp_hostsdir, written, removed, hc.n);
		goto out;
	}
	char *text = dnsmasq_hosts_render(hc.h, hc.n);
	int changed = 0;
	if (dnsmasq_hosts_write(b->cfg.dhcp_hosts, text, &changed, err, sizeof(err)) < 0) {
		log_warn("boot: cannot write the dhcp hosts file err=\"%s\"", err);
	} else if (changed) {
		log_info("boot: dhcp hosts file written path=%s entries=%zu", b->cfg.dhcp_hosts,
			 hc.n);
		if (b->cfg.dnsmasq_pid && dnsmasq_reload(b->cfg.dnsmasq_pid, err, sizeof(err)) < 0)
			log_warn("boot: cannot signal dnsmasq err=\"%s\"", err);
	}
	free(text);
out:
	for (size_t i = 0; i < hc.nstrs; i++)
		free(hc.strs[i]);
	free(hc.strs);
	free(hc.h);
}

static void *hosts_main(void *arg)
{
	struct boot_server *b = arg;
	pthread_mutex_lock(&b->mu);
	while (!b->stopping) {
		if (b->hosts_dirty) {
			b->hosts_dirty = 0;
			pthread_mutex_unlock(&b->mu);
			hosts_sync(b);
			pthread_mutex_lock(&b->mu);
			/* at most one rewrite a second: a fleet-wide change is one write */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&b->cv, &b->mu, &ts);
			continue;
		}
		pthread_cond_wait(&b->cv, &b->mu);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

void boot_server_node_changed(struct boot_server *b, const char *node)
{
	if (!b || (!b->cfg.dhcp_hosts && !b->cfg.dhcp_hostsdir))
		return;
	pthread_mutex_lock(&b->mu);
	b->hosts_dirty = 1;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

/* ---------------------------------------------------------------- lifecycle */

int boot_server_start(struct boot_server *b, struct store *s, struct cache *c,
		      struct fp_clock *clock, const struct secret_key *key,
		      const struct boot_hooks *hooks, char *err, size_t errlen)
{
	if (!key)
		return fp_errf(FP_EINVAL, err, errlen, "boot service: no secret key for tokens");
	b->store = s;
	b->cache = c;
	b->clock = clock;
	b->key = key;
	if (hooks)
		b->hooks = *hooks;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG;
	if (b->ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	b->mhd = MHD_start_daemon(flags, 0, NULL, NULL, access_cb, b, MHD_OPTION_SOCK_ADDR,
				  (struct sockaddr *)&b->ss, MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned)60, MHD_OPTION_CONNECTION_LIMIT, (unsigned)512,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
				  MHD_OPTION_NOTIFY_COMPLETED, completed_cb, b, MHD_OPTION_END);
	if (!b->mhd)
		return fp_errf(FP_EIO, err, errlen,
			       "boot service: cannot listen on %s (address in use, or not an "
			       "address of this machine)",
			       b->cfg.listen);
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(b->mhd, MHD_DAEMON_INFO_BIND_PORT);
	b->port = di ? di->port : 0;
	free(b->url);
	if (b->cfg.url) {
		b->url = xstrdup(b->cfg.url);
		size_t l = strlen(b->url);
		while (l > 0 && b->url[l - 1] == '/')
			b->url[--l] = 0;
	} else {
		char host[INET6_ADDRSTRLEN] = "";
		if (b->ss.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&b->ss)->sin_addr, host,
				  sizeof(host));
		else
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&b->ss)->sin6_addr, host,
				  sizeof(host));
		b->url = b->ss.ss_family == AF_INET ? xasprintf("http://%s:%u", host, b->port)
						    : xasprintf("http://[%s]:%u", host, b->port);
	}
	if ((b->cfg.dhcp_hosts || b->cfg.dhcp_hostsdir) && c) {
		b->hosts_dirty = 1;
		if (pthread_create(&b->hosts_thread, NULL, hosts_main, b) == 0)
			b->hosts_running = 1;
	}
	log_info("boot: serving %s on %s (image store %s%s%s)", b->url, b->cfg.listen,
		 b->cfg.image_dir,
		 b->cfg.dhcp_hostsdir ? ", dhcp hosts dir "
		 : b->cfg.dhcp_hosts  ? ", dhcp hosts file "
				      : "",
		 b->cfg.dhcp_hostsdir ? b->cfg.dhcp_hostsdir
		 : b->cfg.dhcp_hosts  ? b->cfg.dhcp_hosts
				      : "");
	return 0;
}

unsigned boot_server_port(const struct boot_server *b)
{
	return b ? b->port : 0;
}

void boot_server_stop(struct boot_server *b)
{
	if (!b)
		return;
	if (b->hosts_running) {
		pthread_mutex_lock(&b->mu);
		b->stopping = 1;
		pthread_cond_signal(&b->cv);
		pthread_mutex_unlock(&b->mu);
		pthread_join(b->hosts_thread, NULL);
		b->hosts_running = 0;
	}
	if (b->mhd) {
		MHD_stop_daemon(b->mhd);
		b->mhd = NULL;
	}
}

void boot_server_free(struct boot_server *b)
{
	if (!b)
		return;
	boot_server_stop(b);
	free((char *)b->cfg.listen);
	free((char *)b->cfg.url);
	free((char *)b->cfg.image_dir);
	free((char *)b->cfg.ramdisk_kernel);
	free((char *)b->cfg.ramdisk_initrd);
	free((char *)b->cfg.kernel_args);
	free((char *)b->cfg.dhcp_hosts);
	free((char *)b->cfg.dhcp_hostsdir);
	free((char *)b->cfg.dnsmasq_pid);
	free(b->url);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b);
}
