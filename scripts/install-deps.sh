#!/usr/bin/env bash
# Installs the Debian 12 packages fleetplane needs to build and test, idempotently and without
# questions. Usage: scripts/install-deps.sh [--test]   (--test adds the test-only packages)
set -euo pipefail

build_pkgs=(build-essential pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev
	libcurl4-openssl-dev libsodium-dev libfreeipmi-dev libxml2-dev)
build_pkgs+=(libgnutls28-dev) # kube (issue 13): the API's TLS certificate (src/api/tls.c)
test_pkgs=(libcmocka-dev clang clang-format libclang-rt-14-dev prometheus curl procps jq
	openipmi ipmitool python3 python3-sushy slurmctld slurmd slurm-client munge
	slurmdbd mariadb-server
	qemu-system-x86 ipxe-qemu dnsmasq-base iproute2 busybox-static syslinux syslinux-common
	mtools dosfstools e2fsprogs cpio fdisk pciutils dmidecode kmod gzip binutils util-linux
	etcd-server etcd-client)
test_pkgs+=(python3-kubernetes) # kube (issue 13): kubectl comes with the image (google-cloud-cli)
# fleetplane sim --plot (issue 12)
test_pkgs+=(gnuplot-nox)
test_pkgs+=(chromium chromium-driver python3-selenium) # web (issue 15): tests/ops/test_web.sh drives the fleet page in headless Chromium

want=("${build_pkgs[@]}")
[ "${1:-}" = "--test" ] && want+=("${test_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Packages such as prometheus, munge and slurmd ship init scripts; never start services during
# install (their postinst then prints "policy-rc.d denied execution of start" and leaves no
# daemon running; tests start their own on free ports, tests/peers/).
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
	$SUDO chmod +x /usr/sbin/policy-rc.d
	trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
