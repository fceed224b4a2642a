#!/usr/bin/env bash
# packaging (issue 15): the Debian package as an operator gets it. Builds it once from a copy of
# the tree (dpkg-buildpackage -us -uc -b; the checkout stays clean), requires lintian to report
# no error and no warning (debian/fleetplane.lintian-overrides says why for each override),
# installs it with dpkg -i, checks /usr/bin/fleetplane runs and has the changelog's version,
# the system user fleetplane exists, /etc/fleetplane/serve.conf is a conffile that
# `serve --check` accepts, the units pass `systemd-analyze verify` (offline: it needs no
# systemd as PID 1, only the unit files and the binaries they name) and serve's unit keeps its
# hardening (`systemd-analyze security --offline=yes` exposure at most 2.0), then purges it.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "skip: test_package needs root (dpkg -i, dpkg --purge)"; exit 77; }
for t in dpkg-buildpackage dh lintian systemd-analyze dpkg-parsechangelog; do
	command -v "$t" >/dev/null ||
		{ echo "skip: $t missing (scripts/install-deps.sh --test)"; exit 77; }
done
if dpkg-query -W -f='${Status}' fleetplane 2>/dev/null | grep -q "installed"; then
	echo "skip: a fleetplane package is installed on this machine; not replacing it"
	exit 77
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/fp-test_package-XXXXXX)
installed=0
cleanup() {
	local rc=$?
	[ $installed = 1 ] && dpkg --purge fleetplane >/dev/null 2>&1
	[ $rc -eq 0 ] && rm -rf "$WORK" || echo "--- test_package failed; kept $WORK" >&2
	exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL test_package: $*" >&2; exit 1; }

# A copy of the tree: tracked and untracked-but-not-ignored files (no build outputs).
mkdir "$WORK/fleetplane"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) |
		tar -xf - -C "$WORK/fleetplane"
else
	tar -C "$ROOT" --exclude='./build*' --exclude=./fleetplane --exclude='./fleetplane-*' \
		--exclude='./debian/fleetplane' -cf - . | tar -xf - -C "$WORK/fleetplane"
fi
before=$(git -C "$ROOT" status --porcelain --ignored -- debian 2>/dev/null || true)
version=$(dpkg-parsechangelog -l "$WORK/fleetplane/debian/changelog" -SVersion)
(cd "$WORK/fleetplane" &&
	DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
	>"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; fail "dpkg-buildpackage failed"; }
deb="$WORK/fleetplane_${version}_$(dpkg --print-architecture).deb"
[ -f "$deb" ] || fail "no $deb after the build: $(ls "$WORK")"
[ "$(git -C "$ROOT" status --porcelain --ignored -- debian 2>/dev/null || true)" = "$before" ] ||
	fail "the build changed the checkout's debian/"

# lintian: no E: or W: line (I: and P: are allowed)
lintian --fail-on error,warning "$WORK"/fleetplane_"${version}"_*.changes >"$WORK/lintian.txt" 2>&1 ||
	{ cat "$WORK/lintian.txt" >&2; fail "lintian reported errors or warnings"; }
grep -E '^[EW]: ' "$WORK/lintian.txt" && fail "lintian: errors or warnings above"

dpkg -i "$deb" >"$WORK/install.log" 2>&1 || {
	DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq --no-install-recommends \
		>>"$WORK/install.log" 2>&1 || { cat "$WORK/install.log" >&2; fail "dpkg -i failed"; }
}
installed=1
[ "$(dpkg-query -W -f='${Status}' fleetplane)" = "install ok installed" ] ||
	fail "fleetplane not installed: $(cat "$WORK/install.log")"

# "fleetplane 0.1.0", or with the commit after it ("fleetplane 0.1.0 (abc1234)")
v=$(/usr/bin/fleetplane --version)
case "$v" in "fleetplane $version" | "fleetplane $version "*) ;;
*) fail "/usr/bin/fleetplane --version: [$v], want [fleetplane $version] (debian/changelog)" ;;
esac
ent=$(getent passwd fleetplane) || fail "no system user fleetplane after install"
uid=$(echo "$ent" | cut -d: -f3)
[ "$uid" -lt 1000 ] || fail "fleetplane is not a system user: $ent"
[ "$(echo "$ent" | cut -d: -f6)" = /var/lib/fleetplane ] || fail "fleetplane's home: $ent"
dpkg-query -W -f='${Conffiles}\n' fleetplane | grep -q '^ /etc/fleetplane/serve.conf ' ||
	fail "/etc/fleetplane/serve.conf is not a conffile: $(dpkg-query -W -f='${Conffiles}' fleetplane)"
out=$(/usr/bin/fleetplane serve --config /etc/fleetplane/serve.conf --check 2>&1) ||
	fail "serve --check of the shipped serve.conf: $out"
[ "$out" = "configuration ok" ] || fail "serve --check said: $out"

units=(/lib/systemd/system/fleetplane-serve.service /lib/systemd/system/fleetplane-agent.service)
for u in "${units[@]}"; do [ -f "$u" ] || fail "$u not installed"; done
out=$(systemd-analyze verify "${units[@]}" 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warned: $out"
[ -L /etc/systemd/system/multi-user.target.wants/fleetplane-serve.service ] ||
	fail "fleetplane-serve.service not enabled by the install"
[ -e /etc/systemd/system/multi-user.target.wants/fleetplane-agent.service ] &&
	fail "fleetplane-agent.service enabled by the install (it needs /etc/fleetplane/agent.env)"
exposure=$(systemd-analyze security --offline=yes "${units[0]}" 2>&1 |
	sed -n 's/.*Overall exposure level for fleetplane-serve.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "no exposure figure from systemd-analyze security"
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' ||
	fail "fleetplane-serve.service exposure $exposure, above 2.0: hardening lost"

dpkg --purge fleetplane >"$WORK/purge.log" 2>&1 || { cat "$WORK/purge.log" >&2; fail "purge failed"; }
installed=0
[ -e /usr/bin/fleetplane ] && fail "/usr/bin/fleetplane left after purge"
[ -e /etc/fleetplane/serve.conf ] && fail "/etc/fleetplane/serve.conf left after purge"
[ -e /lib/systemd/system/fleetplane-serve.service ] && fail "unit left after purge"
echo "ok: fleetplane $version built, lintian clean, installed, units verified (serve exposure $exposure), purged"
