#!/usr/bin/env bash
# Installs the Debian 12 packages fleetplane needs to build and test, idempotently and without
# questions. Usage: scripts/install-deps.sh [--test]   (--test adds the test-only packages)
set -euo pipefail

build_pkgs=(build-essential pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev
	libcurl4-openssl-dev libsodium-dev libfreeipmi-dev libxml2-dev)
build_pkgs+=(libgnutls28-dev) # kube (issue 13): the API's TLS certificate (src/api/tls.c)
build_pkgs+=(libsystemd-dev) # packaging (issue 15): sd_notify of the systemd units (src/cmd/sdnotify.c)
build_pkgs+=(libyaml-dev) # cli (issue 15): -o yaml is written by libyaml (src/cmd/cli_fmt.c)
test_pkgs=(libcmocka-dev clang clang-format libclang-rt-14-dev prometheus curl procps jq
	openipmi ipmitool python3 python3-sushy slurmctld slurmd slurm-client munge
	slurmdbd mariadb-server
	qemu-system-x86 ipxe-qemu dnsmasq-base iproute2 busybox-static syslinux syslinux-common
	mtools dosfstools e2fsprogs cpio fdisk pciutils dmidecode kmod gzip binutils util-linux
	etcd-server etcd-client)
test_pkgs+=(python3-kubernetes) # kube (issue 13): kubectl comes with the image (google-cloud-cli)
test_pkgs+=(faketime) # hardening (issue 16): wall-clock steps in tests/integration/test_clock_step.sh
test_pkgs+=(dpkg-dev debhelper lintian systemd) # packaging (issue 15): tests/ops/test_package.sh builds, lints, verifies units
test_pkgs+=(groff-base) # cli (issue 15): test_cli_completion.sh renders docs/fleetplane.1 with groff -ww
# fleetplane sim --plot (issue 12)
test_pkgs+=(gnuplot-nox)
test_pkgs+=(python3-yaml) # obs (issue 15): tests/ops/test_rules.sh reads the rules file

# kube (issue 13): redocly lints the OpenAPI documents (tests/ops/test_openapi_lint.sh), from the
# npm registry with the machine's Node.js (nodejs here brings npm), pinned, outside the tree.
npm_prefix=${FP_NPM_PREFIX:-/opt/fleetplane-test}
npm_pkgs=("@redocly/cli@2.77.0")
test_pkgs+=(nodejs)

install_npm() {
	[ "${1:-}" = "--test" ] || return 0
	[ -x "$npm_prefix/node_modules/.bin/redocly" ] &&
		"$npm_prefix/node_modules/.bin/redocly" --version 2>/dev/null | grep -qx 2.77.0 && return 0
	command -v npm >/dev/null || { echo "install-deps: npm missing (nodejs without npm?)" >&2; return 1; }
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	echo "installing (npm, into $npm_prefix): ${npm_pkgs[*]}"
	$sudo mkdir -p "$npm_prefix"
	$sudo npm install --prefix "$npm_prefix" --no-audit --no-fund --loglevel=error "${npm_pkgs[@]}" >/dev/null
}
test_pkgs+=(chromium chromium-driver python3-selenium) # web (issue 15): tests/ops/test_web.sh drives the fleet page in headless Chromium

want=("${build_pkgs[@]}")
[ "${1:-}" = "--test" ] && want+=("${test_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	install_npm "${1:-}"
	exit 0
fi

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
install_npm "${1:-}"
