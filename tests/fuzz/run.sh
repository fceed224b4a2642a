#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [TARGET...] - build and run the libFuzzer targets.
#
# Every tests/fuzz/fuzz_<name>.c is a target. Its first line names the layers it links, like the
# unit tests: /* layers: base core */ - run.sh compiles src/<layer>/*.c for those layers with
# clang -fsanitize=fuzzer,address,undefined into build-fuzz/, links the libraries the Makefile
# lists in PKGS, and runs each target for SECONDS (default 30) with -max_total_time on a copy of
# its seed corpus tests/fuzz/corpus/fuzz_<name>/ (the checked-in seeds are never modified).
# tests/fuzz/fuzz_<name>.dict, if present, is passed as -dict. Crash inputs are kept in
# build-fuzz/artifacts/. Exits non-zero if a target fails to build, crashes, leaks or times out.
# Environment: CC (default clang), FUZZ_ARGS (extra libFuzzer flags), FUZZ_KEEP=1 keeps the
# corpus copies (their paths are printed), FUZZ_JOBS targets run at once (default: CPUs).
set -u -o pipefail

secs=${1:-30}
shift $(( $# > 0 ? 1 : 0 ))
case $secs in ''|*[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2;; esac

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
CC=${CC:-clang}
[ "$CC" = cc ] && CC=clang
out=build-fuzz
mkdir -p "$out/obj" "$out/artifacts" "$out/logs"

pkgs=$(sed -n 's/^PKGS[[:space:]]*[:+]\{0,1\}=[[:space:]]*//p' Makefile 2>/dev/null | tr '\n' ' ')
[ -n "$pkgs" ] || pkgs=jansson
# only the packages that are installed; a missing one fails the build only if it is needed
have=""
for p in $pkgs; do pkg-config --exists "$p" 2>/dev/null && have="$have $p"; done
pkg_cflags=$(pkg-config --cflags $have 2>/dev/null)
pkg_libs=$(pkg-config --libs $have 2>/dev/null)

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cflags="-std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
-Wmissing-prototypes -Wstrict-prototypes -Wformat=2 -Wundef -Wvla \
-pthread -Isrc $san $pkg_cflags"

# Compiles src/<layer>/*.c once per run into build-fuzz/obj/<layer>/ (instrumented for coverage
# with -fsanitize=fuzzer-no-link) and prints the object paths.
declare -A layer_objs=()
build_layer() {
	local layer=$1 src obj objs=""
	if [ -n "${layer_objs[$layer]+x}" ]; then
		printf '%s' "${layer_objs[$layer]}"
		return 0
	fi
	if [ ! -d "src/$layer" ]; then
		echo "run.sh: no layer src/$layer" >&2
		return 1
	fi
	mkdir -p "$out/obj/$layer"
	for src in src/"$layer"/*.c; do
		[ -e "$src" ] || continue
		obj="$out/obj/$layer/$(basename "${src%.c}").o"
		if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find src -name '*.h' -newer "$obj" -print -quit)" ]; then
			$CC $cflags -fsanitize=fuzzer-no-link -c -o "$obj" "$src" >&2 || return 1
		fi
		objs="$objs $obj"
	done
	layer_objs[$layer]=$objs
	printf '%s' "$objs"
}

if [ $# -gt 0 ]; then
	targets=()
	for t in "$@"; do targets+=("tests/fuzz/${t%.c}.c"); done
else
	targets=(tests/fuzz/fuzz_*.c)
fi
[ -e "${targets[0]}" ] || { echo "run.sh: no fuzz targets" >&2; exit 2; }

failed=()
summary=()
built=()
for t in "${targets[@]}"; do
	name=$(basename "${t%.c}")
	layers=$(sed -n '1s|^/\* layers: \(.*\) \*/[[:space:]]*$|\1|p' "$t")
	if [ -z "$layers" ]; then
		echo "== $name: first line must be /* layers: ... */" >&2
		failed+=("$name(no layers line)")
		continue
	fi
	objs=""
	ok=1
	for l in $layers; do
		o=$(build_layer "$l") || { ok=0; break; }
		objs="$objs $o"
	done
	bin="$out/$name"
	if [ $ok = 1 ]; then
		# shellcheck disable=SC2086
		# libFuzzer's entry points have no header to declare them
		$CC $cflags -Wno-missing-prototypes -fsanitize=fuzzer -o "$bin" "$t" $objs $pkg_libs -lm -lpthread -ldl || ok=0
	fi
	if [ $ok = 0 ]; then
		echo "== $name: build failed" >&2
		failed+=("$name(build)")
		continue
	fi

	built+=("$name")
done

# Runs one built target for $secs on a copy of its corpus; writes its one-line result to
# $out/logs/NAME.result and its failure details to stderr.
run_one() {
	local name=$1 bin="$out/$1" work log rc execs cov dict=()
	work=$(mktemp -d "${TMPDIR:-/tmp}/fp-fuzz-$name.XXXXXX")
	if [ -d "tests/fuzz/corpus/$name" ]; then
		cp -r "tests/fuzz/corpus/$name/." "$work/"
	fi
	[ -f "tests/fuzz/$name.dict" ] && dict=("-dict=tests/fuzz/$name.dict")
	log="$out/logs/$name.log"
	echo "== $name: ${secs}s, corpus $(ls "$work" | wc -l) seeds"
	# shellcheck disable=SC2086
	"$bin" "$work" "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" \
		${FUZZ_ARGS:-} >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	if [ $rc -ne 0 ]; then
		echo "== $name: FAILED (exit $rc), log $log" >&2
		grep -E 'ERROR|SUMMARY|fuzz_|Test unit written|^==' "$log" | head -40 >&2
	fi
	echo "$rc $name: exit $rc, ${execs:-?} execs, ${cov:-cov: ?}, corpus $(ls "$work" | wc -l)" \
		>"$out/logs/$name.result"
	if [ "${FUZZ_KEEP:-0}" = 1 ]; then
		echo "   corpus kept in $work"
	else
		rm -rf "$work"
	fi
}

# The targets are single-threaded: run FUZZ_JOBS (default: one per CPU) at a time, each for the
# full $secs, so the wall time is about targets * secs / FUZZ_JOBS.
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
for name in "${built[@]}"; do
	rm -f "$out/logs/$name.result"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
	run_one "$name" &
done
wait
for name in "${built[@]}"; do
	res=$(cat "$out/logs/$name.result" 2>/dev/null) || res="1 $name: no result"
	summary+=("${res#* }")
	[ "${res%% *}" = 0 ] || failed+=("$name")
done

echo "== summary"
for s in "${summary[@]}"; do echo "   $s"; done
if [ ${#failed[@]} -gt 0 ]; then
	echo "== FAILED: ${failed[*]}" >&2
	exit 1
fi
echo "== all fuzz targets passed"
