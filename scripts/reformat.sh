#!/usr/bin/env bash
# scripts/reformat.sh [--check] - clang-format every tracked .c/.h under src/, tests/ and bench/
# with the checked-in .clang-format.
#
# Without arguments, rewrites the files in place. With --check (what `make style` runs), changes
# nothing: prints a diff for each file that is not formatted, a summary line, and exits 1 if any
# file would change. Files whose first line says GENERATED (src/core/xid_catalog.c, written by
# scripts/gen-xid-catalog.sh) are left to their generator; each one skipped is named, so nothing
# is skipped silently. clang-format versions format differently, so the script insists on the
# major version the .clang-format was tuned for (14, Debian 12) unless CLANG_FORMAT_ANY=1.
# Environment: CLANG_FORMAT (default clang-format).
set -u -o pipefail

check=0
case "${1:-}" in
--check) check=1 ;;
"") ;;
*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.." || exit 2
cf=${CLANG_FORMAT:-clang-format}
want=14
if ! ver=$("$cf" --version 2>/dev/null); then
	echo "style: $cf not found (scripts/install-deps.sh --test installs clang-format)" >&2
	exit 2
fi
major=$(sed -n 's/.*version \([0-9]*\)\..*/\1/p' <<<"$ver")
if [ "$major" != "$want" ] && [ "${CLANG_FORMAT_ANY:-0}" != 1 ]; then
	echo "style: $cf is version ${major:-unknown}, .clang-format is tuned for $want" \
		"(set CLANG_FORMAT to clang-format-$want, or CLANG_FORMAT_ANY=1)" >&2
	exit 2
fi

files=() skipped=()
while IFS= read -r f; do
	if head -n 1 "$f" | grep -q 'GENERATED'; then
		skipped+=("$f")
	else
		files+=("$f")
	fi
done < <(git ls-files -- 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h' 'bench/*.c' 'bench/*.h')

for f in "${skipped[@]}"; do
	echo "style: skipped (generated): $f"
done

if [ "$check" = 0 ]; then
	"$cf" --style=file -i "${files[@]}" || exit 1
	echo "style: formatted ${#files[@]} files"
	exit 0
fi

bad=()
for f in "${files[@]}"; do
	if ! "$cf" --style=file "$f" | diff -u --label "$f" --label "$f (clang-format)" "$f" -; then
		bad+=("$f")
	fi
done
if [ ${#bad[@]} -gt 0 ]; then
	echo "style: ${#bad[@]} of ${#files[@]} files not formatted (scripts/reformat.sh fixes them):"
	printf '  %s\n' "${bad[@]}"
	exit 1
fi
echo "style: ${#files[@]} files formatted"
