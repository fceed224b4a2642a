/* boot/boot_server.h - the network boot service (issue 11; docs/provisioning.md): an HTTP
 * server of its own, on the provisioning network's address (serve --boot-listen), apart from
 * the API, that machines reach while they boot:
 *
 *   GET  /boot/ipxe?mac=M        the iPXE script for the machine with boot MAC M (ipxe.h):
 *                                the ramdisk while its provision/reimage operation is before
 *                                or at wait_deploy, its local disk otherwise, "not enrolled"
 *                                for a MAC no node has
 *   GET  /boot/files/NAME        an image store file (image.h), by sendfile, with Range
 *   HEAD                         (one range; 206/416), ETag "<sha256>", If-None-Match (304),
 *                                Repr-Digest (RFC 9530 sha-256), Accept-Ranges
 *   POST /boot/inspect           {"node","token","inventory"} from the inspection ramdisk
 *   GET  /boot/deploy?node=&token=   what the deploy ramdisk writes: image URL, sha256, size,
 *                                rootDevice, the NoCloud meta-data and user-data
 *   POST /boot/deployed          {"node","token","ok","sha256","bytes","disk","message"}
 *   POST /boot/booted            {"node","token","bootId"} from the written system
 *
 * No bearer token: each callback carries the per-attempt token of the node's provisioning
 * operation (core/secret.h secret_boot_token, which the iPXE script puts on the ramdisk's
 * kernel command line and the deploy writes into the meta-data). A token of an earlier
 * attempt, of another node, or for a node with nothing in flight is answered 403 with why;
 * a report for a step the operation has passed, or a disk-boot report before the deploy is
 * done, 409. Accepted reports go to hooks.reported
 * (the lifecycle's lifecycle_boot_reported). Bodies are bounded (1 MiB), every field checked.
 *
 * With dhcp_hosts set it also keeps dnsmasq's dhcp-hostsfile (dnsmasq.h) in step with the
 * nodes - rewritten within a second of a node change when its content changes, then dnsmasq
 * signalled through dnsmasq_pid. */
#ifndef FP_BOOT_BOOT_SERVER_H
#define FP_BOOT_BOOT_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "core/secret.h"
#include "engine/cache.h"
#include "store/store.h"

#define BOOT_DEFAULT_KERNEL "ramdisk-vmlinuz"
#define BOOT_DEFAULT_INITRD "ramdisk-initrd"
#define BOOT_MAX_BODY (1u << 20)

/* Report kinds, as lifecycle_boot_kind (controller/lifecycle.h). */
enum boot_report_kind {
	BOOT_INSPECTED = 0,
	BOOT_DEPLOYED = 1,
	BOOT_DISK_BOOTED = 2
};

struct boot_hooks {
	/* An accepted report for (node, op_id): doc borrowed for the call. Must not block. */
	void (*reported)(void *arg, const char *node, const char *op_id, enum boot_report_kind k,
			 const json_t *doc);
	void *arg;
};

/* serve's --boot-* options (the strings are copied by boot_server_new). */
struct boot_config {
	const char *listen;         /* "host:port" (IPv4 or [IPv6] literal; port 0 = any) */
	const char *url;            /* base URL machines are given; NULL = http://<listen> */
	const char *image_dir;      /* the image store (image.h) */
	const char *ramdisk_kernel; /* image names; NULL = BOOT_DEFAULT_KERNEL / _INITRD */
	const char *ramdisk_initrd;
	const char *kernel_args;   /* extra ramdisk kernel arguments; NULL = console=ttyS0 ... */
	const char *dhcp_hosts;    /* dnsmasq dhcp-hostsfile to keep; NULL = none */
	const char *dhcp_hostsdir; /* dnsmasq dhcp-hostsdir to keep (one file per node); NULL =
				    * none; not with dhcp_hosts */
	const char *dnsmasq_pid;   /* dnsmasq pid file, SIGHUP'd after a rewrite; NULL = none */
};

struct boot_server;

/* Checks cfg without keeping anything: listen parses as an IP literal and port, url is http(s)
 * and an iPXE word, kernel args are an iPXE word of at most 1024 bytes, the image names are
 * image names, image_dir is set, dhcp_hosts and dhcp_hostsdir are not both given. `serve --check` and boot_server_new share it. Returns 0 or
 * FP_EINVAL with a line naming the --boot-* option in err. */
int boot_config_check(const struct boot_config *cfg, char *err, size_t errlen);

/* Checks cfg (boot_config_check) and copies it. Returns the server (not listening yet) or NULL
 * with why in err. */
struct boot_server *boot_server_new(const struct boot_config *cfg, char *err, size_t errlen);

/* Starts listening, and the hosts-file thread when dhcp_hosts is set (it writes the file
 * once at once). s, c, clock, key and hooks are borrowed until boot_server_stop. Returns 0 or
 * FP_EIO/FP_EINVAL with err (address in use, ...). */
int boot_server_start(struct boot_server *b, struct store *s, struct cache *c,
		      struct fp_clock *clock, const struct secret_key *key,
		      const struct boot_hooks *hooks, char *err, size_t errlen);

/* A node changed (the fleet's informer): the hosts file is looked at again. Non-blocking. */
void boot_server_node_changed(struct boot_server *b, const char *node);

/* The TCP port listened on (after start), for --boot-listen with port 0. */
unsigned boot_server_port(const struct boot_server *b);

/* Stops serving (connections in flight are closed) and the hosts thread. Idempotent. */
void boot_server_stop(struct boot_server *b);

/* Parses a Range header (RFC 9110 section 14.1.2) for a file of size bytes: "bytes=A-B",
 * "bytes=A-" and "bytes=-N" give 1 with the byte range [*off, *off + *len) clipped to the
 * file; -1 when the range starts past the end (416); 0 to send the whole file - no header, a
 * multi-range or any form not understood (section 14.2 lets a server ignore Range). h may be
 * NULL. */
int boot_range_parse(const char *h, int64_t size, int64_t *off, int64_t *len);

/* Whether an If-None-Match header (RFC 9110 section 13.1.2) matches etag, a strong entity-tag
 * with its quotes ("\"<sha256>\""): 1 for "*" or a comma-separated list holding etag, each
 * member compared weakly (a W/ prefix is ignored, section 8.8.3.2); 0 otherwise, also for a
 * malformed member (the condition is then false and the file is sent). h may be NULL (0). At
 * most 64 members are looked at. */
int boot_etag_match(const char *h, const char *etag);

/* Stops and frees. NULL is a no-op. */
void boot_server_free(struct boot_server *b);

#endif
