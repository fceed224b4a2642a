#!/usr/bin/env bash
# build-ramdisk.sh OUTDIR [--fleetplane PATH] - the provisioning ramdisk of the network-boot
# contract: OUTDIR/vmlinuz (Debian 12's linux-image-6.1.*-amd64, the one linux-image-amd64 depends
# on) and OUTDIR/initrd.img (gzip'd newc cpio). No root needed.
#
# The initrd holds: busybox (the static one, /usr/bin/busybox from busybox-static) with its
# applet links; /init (scripts/boot/ramdisk-init), which runs `fleetplane agent inspect|deploy`;
# the modules for qemu's e1000 and virtio-net NICs, virtio-blk, ATA
# (ahci, ata_piix) + sd_mod, vfat with its code pages, and their dependencies (modinfo -F
# depends), loaded in order from /lib/modules/load-order; the fleetplane binary (PATH, default
# ./fleetplane, stripped) with every library ldd lists and the dynamic loader; lspci with
# pci.ids, and dmidecode when installed.
#
# The kernel package is downloaded once (apt-get download) into $FP_BOOT_CACHE (default
# OUTDIR/cache) and extracted there; a rerun reuses both. Timestamps in the cpio are fixed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/boot-lib.sh"

usage() {
	echo "usage: build-ramdisk.sh OUTDIR [--fleetplane PATH]" >&2
	exit 2
}
[ $# -ge 1 ] || usage
out=$1
shift
fp=./fleetplane
while [ $# -gt 0 ]; do
	case $1 in
	--fleetplane) [ $# -ge 2 ] || usage; fp=$2; shift 2 ;;
	*) usage ;;
	esac
done
[ -x "$fp" ] || fp_boot_die "fleetplane binary $fp not found (make fleetplane, or --fleetplane PATH)"
fp=$(cd "$(dirname "$fp")" && pwd)/$(basename "$fp")
mkdir -p "$out"
out=$(cd "$out" && pwd)
fp_boot_kernel "${FP_BOOT_CACHE:-$out/cache}"

root=$(mktemp -d "$out/.ramdisk.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{dev,proc,sys,tmp,run,mnt,etc,root}
fp_boot_busybox "$root"
fp_boot_modules "$FP_KDIR" "$root" e1000 virtio_net virtio_pci virtio_blk ahci ata_piix sd_mod \
	vfat nls_cp437 nls_ascii nls_iso8859_1 nls_utf8

# fleetplane at /usr/bin/fleetplane, whatever its path here.
fp_boot_binary "$root" "$fp"
if [ "$fp" != /usr/bin/fleetplane ]; then
	mv "$root$fp" "$root/usr/bin/fleetplane"
	rmdir -p --ignore-fail-on-non-empty "$root$(dirname "$fp")" 2>/dev/null || true
fi
for b in /usr/bin/lspci /usr/sbin/dmidecode; do
	if [ -x "$b" ]; then
		fp_boot_binary "$root" "$b"
	else
		echo "build-ramdisk.sh: $b not installed (scripts/install-deps.sh --test); the agent falls back to sysfs" >&2
	fi
done
if [ -f /usr/share/misc/pci.ids ]; then
	mkdir -p "$root/usr/share/misc"
	cp /usr/share/misc/pci.ids "$root/usr/share/misc/pci.ids"
fi

install -m 0755 "$here/boot/ramdisk-init" "$root/init"
install -m 0644 "$here/boot/guest-lib.sh" "$root/etc/fp-lib.sh"
install -m 0644 "$here/boot/jget.awk" "$root/etc/fp-jget.awk"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"
printf 'hosts: files\n' >"$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n' >"$root/etc/hosts"

fp_boot_cpio "$root" "$out/initrd.img"
cp "$FP_VMLINUZ" "$out/vmlinuz.tmp" && mv "$out/vmlinuz.tmp" "$out/vmlinuz"
echo "build-ramdisk.sh: $out/vmlinuz ($(stat -c %s "$out/vmlinuz") bytes, $FP_KVER)," \
	"$out/initrd.img ($(stat -c %s "$out/initrd.img") bytes)" >&2
