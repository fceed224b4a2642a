/* boot/ipxe.h - what the boot service answers an iPXE client (https://ipxe.org/scripting,
 * https://ipxe.org/cmd): pure renderers of the per-node scripts and the MAC address parser of
 * GET /boot/ipxe?mac=..., kept apart from the HTTP server so tests and the fuzzer reach them. */
#ifndef FP_BOOT_IPXE_H
#define FP_BOOT_IPXE_H

#include <stddef.h>

#define BOOT_MAC_LEN 17 /* "52:54:00:12:34:56" */

/* Parses a MAC address as iPXE sends ${net0/mac} (six hex pairs separated by ':' - the query
 * string arrives URL-decoded - or '-', any case) into out as lowercase "xx:xx:xx:xx:xx:xx".
 * Returns 0, or FP_EINVAL for anything else (NULL, wrong length, other separators, non-hex). */
int boot_mac_parse(const char *in, char out[BOOT_MAC_LEN + 1]);

/* What the ramdisk script boots (all borrowed): the boot service's base URL as machines
 * reach it ("http://10.77.0.1:7071"), the kernel and initrd image names in the image store, the
 * node, its per-attempt token (core/secret.h secret_boot_token) and extra kernel arguments
 * (serve's --boot-kernel-args; NULL = "console=ttyS0 console=tty0"). */
struct ipxe_ramdisk {
	const char *url;
	const char *kernel;
	const char *initrd;
	const char *node;
	const char *token;
	const char *kernel_args;
};

/* 0 when s may go into a kernel command line or an iPXE script line as one word or a run of
 * words: printable ASCII, no '$' (iPXE expands ${...}), no '#', no quote or backslash, at most
 * max bytes. Else FP_EINVAL. */
int ipxe_word_check(const char *s, size_t max);

/* The script that boots fleetplane's ramdisk (docs/provisioning.md "Callbacks"): kernel with
 * fleetplane.url/node/token/mac/ip/netmask/gateway arguments (the last four expanded by iPXE
 * from net0), initrd, boot. A new string (caller frees), or NULL when a field fails
 * ipxe_word_check or, but for kernel_args, holds a space (each is one word of the script). */
char *ipxe_script_ramdisk(const struct ipxe_ramdisk *r);

/* The script that boots from the first local disk (sanboot --drive 0x80, else exit to the
 * firmware's next boot device), with `why` echoed on the console (ipxe_word_check'd
 * characters only; others become '_'). A new string. */
char *ipxe_script_local_disk(const char *node, const char *why);

/* The script for a MAC fleetplane does not know: says so and exits (the firmware tries its
 * next boot device). A new string. */
char *ipxe_script_unknown(const char *mac);

#endif
