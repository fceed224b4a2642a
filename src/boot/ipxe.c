/* ipxe.c - iPXE scripts and MAC parsing (see ipxe.h). */
#include "boot/ipxe.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

#include "base/banned.h"

int boot_mac_parse(const char *in, char out[BOOT_MAC_LEN + 1])
{
	if (!in || strlen(in) != BOOT_MAC_LEN)
		return FP_EINVAL;
	char sep = in[2];
	if (sep != ':' && sep != '-')
		return FP_EINVAL;
	for (int i = 0; i < BOOT_MAC_LEN; i++) {
		char c = in[i];
		if (i % 3 == 2) {
			if (c != sep)
				return FP_EINVAL;
			out[i] = ':';
		} else {
			if (!isxdigit((unsigned char)c))
				return FP_EINVAL;
			out[i] = (char)tolower((unsigned char)c);
		}
	}
	out[BOOT_MAC_LEN] = 0;
	return 0;
}

int ipxe_word_check(const char *s, size_t max)
{
	if (!s || strlen(s) > max)
		return FP_EINVAL;
	for (const char *p = s; *p; p++)
		if (*p < 0x20 || *p > 0x7e || strchr("$#\"'\\", *p))
			return FP_EINVAL;
	return 0;
}

char *ipxe_script_ramdisk(const struct ipxe_ramdisk *r)
{
	const char *args = r->kernel_args ? r->kernel_args : "console=ttyS0 console=tty0";
	if (ipxe_word_check(r->url, 256) < 0 || ipxe_word_check(r->kernel, 63) < 0 ||
	    ipxe_word_check(r->initrd, 63) < 0 || ipxe_word_check(r->node, 63) < 0 ||
	    ipxe_word_check(r->token, 128) < 0 || ipxe_word_check(args, 1024) < 0 ||
	    strchr(r->url, ' ') || strchr(r->kernel, ' ') || strchr(r->initrd, ' ') ||
	    strchr(r->node, ' ') || strchr(r->token, ' '))
		return NULL;
	/* initrd=<name> makes the kernel find the initrd iPXE loaded under UEFI too */
	return xasprintf("#!ipxe\n"
			 "echo fleetplane: booting the provisioning ramdisk for node %s\n"
			 "kernel %s/boot/files/%s initrd=%s %s panic=30 fleetplane.url=%s "
			 "fleetplane.node=%s fleetplane.token=%s fleetplane.mac=${net0/mac} "
			 "fleetplane.ip=${net0/ip} fleetplane.netmask=${net0/netmask} "
			 "fleetplane.gateway=${net0/gateway}\n"
			 "initrd %s/boot/files/%s\n"
			 "boot\n",
			 r->node, r->url, r->kernel, r->initrd, args, r->url, r->node, r->token,
			 r->url, r->initrd);
}

static char *clean(const char *s)
{
	char *c = xstrndup(s ? s : "", 200);
	for (char *p = c; *p; p++)
		if (*p < 0x20 || *p > 0x7e || strchr("$#\"'\\", *p))
			*p = '_';
	return c;
}

char *ipxe_script_local_disk(const char *node, const char *why)
{
	char *n = clean(node), *w = clean(why);
	char *s = xasprintf("#!ipxe\n"
			    "echo fleetplane: node %s boots from its local disk (%s)\n"
			    "sanboot --no-describe --drive 0x80 || exit\n",
			    n, w);
	free(n);
	free(w);
	return s;
}

char *ipxe_script_unknown(const char *mac)
{
	char *m = clean(mac);
	char *s = xasprintf("#!ipxe\n"
			    "echo fleetplane: MAC %s is not enrolled; not booting it\n"
			    "exit 1\n",
			    m);
	free(m);
	return s;
}
