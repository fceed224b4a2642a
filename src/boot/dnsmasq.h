/* boot/dnsmasq.h - fleetplane's side of dnsmasq as the DHCP/TFTP server of the provisioning
 * network (docs/provisioning.md "DHCP"): the dhcp-hostsfile it generates from the nodes (one
 * reservation per boot MAC) and the reload signal. dnsmasq itself is the Debian package, run
 * by the site (or the tests); fleetplane never reimplements DHCP. Line format: dnsmasq(8)
 * --dhcp-host / --dhcp-hostsfile ("[<hwaddr>][,set:<tag>][,<ipaddr>][,<hostname>]"); dnsmasq
 * re-reads the file on SIGHUP. */
#ifndef FP_BOOT_DNSMASQ_H
#define FP_BOOT_DNSMASQ_H

#include <stddef.h>

struct dhcp_host {
	const char *mac;      /* "52:54:00:12:34:56" */
	const char *tag;      /* the node's site, set as a dnsmasq tag; NULL = none */
	const char *ip;       /* IPv4 reservation; NULL = an address from the range */
	const char *hostname; /* NULL = none */
};

/* Renders the hosts file for n entries, sorted by MAC (so the same fleet always gives the same
 * bytes): a header comment, then one line per entry. Entries whose fields hold anything but
 * [A-Za-z0-9.:_-] are skipped (a comma or newline would change the line's meaning). A new
 * string (caller frees). */
char *dnsmasq_hosts_render(struct dhcp_host *h, size_t n);

/* Writes text to path atomically (path.tmp, fsync, rename) unless path already holds exactly
 * text; *changed = 1 when it wrote. Returns 0 or FP_EIO with the path and strerror. */
int dnsmasq_hosts_write(const char *path, const char *text, int *changed, char *err, size_t errlen);

/* Sends SIGHUP to the pid in pidfile (dnsmasq's --pid-file): dnsmasq re-reads its hosts
 * files. Returns 0, FP_ENOTFOUND (no such file or process), FP_EINVAL (not a pid). */
int dnsmasq_reload(const char *pidfile, char *err, size_t errlen);

#endif
