/* boot/dnsmasq.h - fleetplane's side of dnsmasq as the DHCP/TFTP server of the provisioning
 * network (docs/provisioning.md "DHCP"): the dhcp-hostsfile it generates from the nodes (one
 * reservation per boot MAC) and the reload signal. dnsmasq itself is the Debian package, run
 * by the site (or the tests); fleetplane never reimplements DHCP. Line format: dnsmasq(8)
 * --dhcp-host / --dhcp-hostsfile ("[<hwaddr>][,set:<tag>][,<ipaddr>][,<hostname>]").
 *
 * Two ways to hand the lines over. A dhcp-hostsdir (dnsmasq(8) --dhcp-hostsdir): one file per
 * node, which dnsmasq re-reads by inotify as each is written or removed, no signal; the one
 * to use. A dhcp-hostsfile: one file that dnsmasq re-reads on SIGHUP; dnsmasq 2.90 (Debian
 * 12) can segfault on that SIGHUP once a client holds a lease it asked for with a client FQDN
 * (option 81, which most DHCP clients send), so it is kept only for sites that run it already
 * (docs/provisioning.md "DHCP"). */
#ifndef FP_BOOT_DNSMASQ_H
#define FP_BOOT_DNSMASQ_H

#include <stddef.h>

struct dhcp_host {
	const char *mac;      /* "52:54:00:12:34:56" */
	const char *tag;      /* the node's site, set as a dnsmasq tag; NULL = none */
	const char *ip;       /* IPv4 reservation; NULL = an address from the range */
	const char *hostname; /* NULL = none */
	const char *node;     /* the node the entry is of (dnsmasq_hostsdir_sync's file name) */
};

/* Renders the hosts file for n entries, sorted by MAC (so the same fleet always gives the same
 * bytes): a header comment, then one line per entry. Entries whose fields hold anything but
 * [A-Za-z0-9.:_-] are skipped (a comma or newline would change the line's meaning). A new
 * string (caller frees). */
char *dnsmasq_hosts_render(struct dhcp_host *h, size_t n);

/* Writes text to path atomically (path.tmp, fsync, rename) unless path already holds exactly
 * text; *changed = 1 when it wrote. Returns 0 or FP_EIO with the path and strerror. */
int dnsmasq_hosts_write(const char *path, const char *text, int *changed, char *err, size_t errlen);

/* Keeps dir (a dnsmasq --dhcp-hostsdir, made 0755 if missing) equal to the n entries: one
 * file <node>.hosts per node, rendered as dnsmasq_hosts_render renders that node's entries
 * and written as dnsmasq_hosts_write writes (atomically, only when the bytes differ), and every
 * other *.hosts file removed (a node that is gone). Files not ending in .hosts are left alone.
 * Entries without a node, or whose node holds anything but [A-Za-z0-9.:_-], are skipped; h is
 * sorted in place. *written and *removed count the files written and removed. Returns 0, or
 * FP_EIO with the path and strerror in err (the files done so far stay done). */
int dnsmasq_hostsdir_sync(const char *dir, struct dhcp_host *h, size_t n, size_t *written,
			  size_t *removed, char *err, size_t errlen);

/* Sends SIGHUP to the pid in pidfile (dnsmasq's --pid-file): dnsmasq re-reads its hosts
 * files. Returns 0, FP_ENOTFOUND (no such file or process), FP_EINVAL (not a pid). */
int dnsmasq_reload(const char *pidfile, char *err, size_t errlen);

#endif
