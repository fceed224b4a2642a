#!/usr/bin/env bash
# build-os-image.sh OUTDIR [--kernel VMLINUZ --modules-from KDIR] - OUTDIR/os.img, the small
# bootable raw disk image of the network-boot contract, built without root and without loop
# devices (partitions are built as files and dd'd into place):
#   MBR (syslinux's mbr.bin, sfdisk on the file)
#   p1  24 MiB FAT16 "FPBOOT", active: syslinux (ldlinux.sys/.c32), syslinux.cfg, vmlinuz and
#       initrd.img (busybox, block/NIC/vfat/ext4 modules, /init = scripts/boot/os-init). Kernel
#       command line: console=ttyS0 panic=-1. The OS runs from this initrd.
#   p2  8 MiB ext4 "fp-root" (mke2fs -d): /etc/fleetplane-os-release, mounted read-only and
#       printed by /init (it shows the image's ext4 partition survived the write).
#   p3  4 MiB FAT "CIDATA", empty: the deploy agent writes meta-data/user-data there.
# The kernel is Debian 12's (KDIR = an extracted linux-image-6.1.*-amd64 package: its modules come
# from KDIR/lib/modules); without --kernel it is fetched like build-ramdisk.sh does (cache:
# $FP_BOOT_CACHE, default OUTDIR/cache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/boot-lib.sh"

usage() {
	echo "usage: build-os-image.sh OUTDIR [--kernel VMLINUZ --modules-from KDIR]" >&2
	exit 2
}
[ $# -ge 1 ] || usage
out=$1
shift
kernel="" kdir=""
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) [ $# -ge 2 ] || usage; kernel=$2; shift 2 ;;
	--modules-from) [ $# -ge 2 ] || usage; kdir=$2; shift 2 ;;
	*) usage ;;
	esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "$kernel" ] && [ -z "$kdir" ]; then
	fp_boot_kernel "${FP_BOOT_CACHE:-$out/cache}"
	kernel=$FP_VMLINUZ kdir=$FP_KDIR
fi
[ -n "$kernel" ] && [ -n "$kdir" ] || fp_boot_die "--kernel and --modules-from go together"
[ -f "$kernel" ] || fp_boot_die "no kernel $kernel"
for t in sfdisk mkfs.vfat mcopy syslinux mke2fs; do
	command -v "$t" >/dev/null || fp_boot_die "$t missing (scripts/install-deps.sh --test)"
done
mbr=/usr/lib/syslinux/mbr/mbr.bin
[ -f "$mbr" ] || fp_boot_die "$mbr missing (syslinux-common)"

work=$(mktemp -d "$out/.osimg.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/initrd
mkdir -p "$root"/{dev,proc,sys,tmp,run,mnt,etc,root}
fp_boot_busybox "$root"
fp_boot_modules "$kdir" "$root" virtio_pci virtio_blk ahci ata_piix sd_mod e1000 virtio_net \
	vfat nls_cp437 nls_ascii nls_iso8859_1 nls_utf8 crc32c_generic ext4
install -m 0755 "$here/boot/os-init" "$root/init"
install -m 0644 "$here/boot/guest-lib.sh" "$root/etc/fp-lib.sh"
install -m 0644 "$here/boot/jget.awk" "$root/etc/fp-jget.awk"
install -m 0755 "$here/boot/udhcpc.script" "$root/etc/udhcpc.script"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
fp_boot_cpio "$root" "$work/initrd.img"

# Layout in 512-byte sectors.
p1s=2048 p1n=$((24 * 2048))
p2s=$((p1s + p1n)) p2n=$((8 * 2048))
p3s=$((p2s + p2n)) p3n=$((4 * 2048))
total=$((p3s + p3n + 2048))

# p1: FAT16 + syslinux + kernel + initrd.
cat >"$work/syslinux.cfg" <<CFG
SERIAL 0 115200
DEFAULT fpos
PROMPT 0
TIMEOUT 0
LABEL fpos
  KERNEL /vmlinuz
  INITRD /initrd.img
  APPEND console=ttyS0 panic=-1
CFG
mkfs.vfat -F 16 -n FPBOOT -i 46500001 -C "$work/p1.img" $((p1n / 2)) >/dev/null
mcopy -i "$work/p1.img" "$kernel" ::/vmlinuz
mcopy -i "$work/p1.img" "$work/initrd.img" ::/initrd.img
mcopy -i "$work/p1.img" "$work/syslinux.cfg" ::/syslinux.cfg
syslinux --install "$work/p1.img"

# p2: ext4 with a release file.
mkdir -p "$work/rootfs/etc"
echo "fleetplane test OS image, kernel ${kernel##*/}" >"$work/rootfs/etc/fleetplane-os-release"
mke2fs -q -t ext4 -L fp-root -U 46500002-0000-4000-8000-000000000002 -E root_owner=0:0 \
	-d "$work/rootfs" "$work/p2.img" $((p2n / 2))k >/dev/null

# p3: empty CIDATA.
mkfs.vfat -n CIDATA -i 46500003 -C "$work/p3.img" $((p3n / 2)) >/dev/null

img=$work/os.img
truncate -s $((total * 512)) "$img"
sfdisk -q --no-reread --no-tell-kernel "$img" <<PT
label: dos
label-id: 0x46500000
unit: sectors
start=$p1s, size=$p1n, type=6, bootable
start=$p2s, size=$p2n, type=83
start=$p3s, size=$p3n, type=1
PT
dd if="$mbr" of="$img" bs=440 count=1 conv=notrunc status=none
dd if="$work/p1.img" of="$img" bs=512 seek=$p1s conv=notrunc status=none
dd if="$work/p2.img" of="$img" bs=512 seek=$p2s conv=notrunc status=none
dd if="$work/p3.img" of="$img" bs=512 seek=$p3s conv=notrunc status=none
mv "$img" "$out/os.img"
echo "build-os-image.sh: $out/os.img ($(stat -c %s "$out/os.img") bytes; initrd $(stat -c %s "$work/initrd.img") bytes)" >&2
