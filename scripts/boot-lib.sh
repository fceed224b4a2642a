# boot-lib.sh - shared pieces of scripts/build-ramdisk.sh and scripts/build-os-image.sh (sourced,
# bash). Everything is built from Debian 12 packages on the host, without root-only steps:
#
#   fp_boot_kernel CACHE          downloads (once) the Debian kernel package that the
#                                 linux-image-amd64 candidate depends on (linux-image-6.1.*-amd64)
#                                 into CACHE and extracts it (once) to CACHE/kernel-<abi>/; sets
#                                 FP_KDIR (that directory), FP_KVER (6.1.0-NN-amd64) and
#                                 FP_VMLINUZ. Offline, a .deb already in CACHE is used.
#   fp_boot_modules KDIR ROOT M.. copies modules M (names as modinfo knows them) and, recursively,
#                                 what `modinfo -F depends` says they need, from
#                                 KDIR/lib/modules/<ver>/ to ROOT/lib/modules/, and writes
#                                 ROOT/lib/modules/load-order (file names, dependencies first).
#                                 Modules built into the kernel (modules.builtin) are skipped.
#   fp_boot_busybox ROOT          the static busybox as ROOT/bin/busybox + one symlink per applet.
#   fp_boot_binary ROOT PATH..    copies each ELF PATH (to the same path under ROOT) with every
#                                 library ldd lists, the dynamic loader included, at ldd's paths.
#   fp_boot_cpio ROOT OUT         ROOT as a gzip'd newc cpio (owner root, fixed mtimes, sorted).
set -euo pipefail

fp_boot_die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

fp_boot_kernel() {
	local cache=$1 abi="" deb=""
	mkdir -p "$cache"
	# The kernel the metapackage points to (bookworm: linux-image-6.1.0-NN-amd64).
	abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-6\.1\.[0-9]*-[0-9]*-amd64\)$/\1/p' | head -n1) || true
	if [ -n "$abi" ]; then
		deb=$(ls "$cache/${abi}"_*_amd64.deb 2>/dev/null | sort -V | tail -n1) || true
		if [ -z "$deb" ]; then
			echo "${0##*/}: downloading $abi into $cache" >&2
			# apt's _apt user may not be able to write there: that is only a warning.
			(cd "$cache" && apt-get download -q "$abi" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) ||
				fp_boot_die "apt-get download $abi failed"
			deb=$(ls "$cache/${abi}"_*_amd64.deb 2>/dev/null | sort -V | tail -n1) || true
		fi
	else
		deb=$(ls "$cache"/linux-image-6.1.*-amd64_*_amd64.deb 2>/dev/null | sort -V | tail -n1) || true
	fi
	[ -n "$deb" ] && [ -f "$deb" ] || fp_boot_die "no linux-image-6.1.*-amd64 package (apt-cache and $cache)"
	abi=${deb##*/}
	abi=${abi%%_*}
	FP_KVER=${abi#linux-image-}
	FP_KDIR=$cache/kernel-$FP_KVER
	if [ ! -f "$FP_KDIR/.extracted" ]; then
		rm -rf "$FP_KDIR"
		mkdir -p "$FP_KDIR"
		dpkg-deb -x "$deb" "$FP_KDIR"
		touch "$FP_KDIR/.extracted"
	fi
	FP_VMLINUZ=$FP_KDIR/boot/vmlinuz-$FP_KVER
	[ -f "$FP_VMLINUZ" ] || fp_boot_die "$deb has no /boot/vmlinuz-$FP_KVER"
}

# fp_boot_modules KDIR ROOT MODULE...
fp_boot_modules() {
	local kdir=$1 root=$2
	shift 2
	local mdir ver
	mdir=$(ls -d "$kdir"/lib/modules/*/ 2>/dev/null | head -n1)
	[ -n "$mdir" ] || fp_boot_die "no lib/modules under $kdir"
	mdir=${mdir%/}
	ver=${mdir##*/}
	local -A path=() builtin=() done_=()
	local f n
	while IFS= read -r f; do
		n=${f##*/}
		n=${n%.ko*}
		path[${n//-/_}]=$f
	done < <(cd "$mdir" && find kernel -name '*.ko*')
	while IFS= read -r f; do
		n=${f##*/}
		n=${n%.ko*}
		builtin[${n//-/_}]=1
	done <"$mdir/modules.builtin"
	mkdir -p "$root/lib/modules/$ver"
	: >"$root/lib/modules/load-order"
	visit() {
		local m=${1//-/_} d deps
		[ -z "${done_[$m]:-}" ] || return 0
		done_[$m]=1
		if [ -n "${builtin[$m]:-}" ]; then return 0; fi
		[ -n "${path[$m]:-}" ] || fp_boot_die "module $m is neither built in nor in $mdir"
		deps=$(modinfo -F depends "$mdir/${path[$m]}")
		for d in ${deps//,/ }; do visit "$d"; done
		cp "$mdir/${path[$m]}" "$root/lib/modules/$ver/"
		echo "${path[$m]##*/}" >>"$root/lib/modules/load-order"
	}
	for f in "$@"; do visit "$f"; done
	unset -f visit
}

fp_boot_busybox() {
	local root=$1 bb=/usr/bin/busybox a
	[ -x "$bb" ] && ! ldd "$bb" >/dev/null 2>&1 ||
		fp_boot_die "$bb is not the static busybox (apt-get install busybox-static)"
	mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin"
	cp "$bb" "$root/bin/busybox"
	for a in $("$bb" --list-full); do
		[ -e "$root/$a" ] || [ -L "$root/$a" ] || ln -s /bin/busybox "$root/$a"
	done
}

# fp_boot_binary ROOT PATH...: PATH and its shared libraries, at the same paths under ROOT.
fp_boot_binary() {
	local root=$1 p lib
	shift
	for p in "$@"; do
		[ -x "$p" ] || fp_boot_die "$p is not an executable"
		mkdir -p "$root$(dirname "$p")"
		rm -f "$root$p"
		cp -L "$p" "$root$p"
		strip --strip-unneeded "$root$p" 2>/dev/null || true
		# ldd lines: "libx.so.1 => /lib/.../libx.so.1 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
		for lib in $(ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
			[ -e "$root$lib" ] && continue
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
	done
}

fp_boot_cpio() {
	local root=$1 out=$2
	find "$root" -exec touch -h -d @0 {} + 2>/dev/null || true
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --quiet --reproducible) |
		gzip -n -9 >"$out.tmp"
	mv "$out.tmp" "$out"
}
