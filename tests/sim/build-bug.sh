#!/usr/bin/env bash
# tests/sim/build-bug.sh OUT - links OUT: the fleetplane binary of build/ with one deliberately
# injected bug, controller/budget.c compiled with -DFP_INJECT_BUG_SKIP_BUDGET (budget_admit
# admits everything). Only that file is compiled again; every other object is build/'s, so
# `make fleetplane` must have run. Used by test_sim_bug.sh and `make simtest-bug`.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: build-bug.sh OUT}
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the libraries the Makefile links (its PKGS := and PKGS += lines)
PKGS=$(sed -n 's/^PKGS[[:space:]]*[:+]=[[:space:]]*//p' Makefile | tr '\n' ' ')
# shellcheck disable=SC2046
cc -std=c11 -D_GNU_SOURCE -O2 -pthread -Isrc $(pkg-config --cflags $PKGS) \
	-DFP_INJECT_BUG_SKIP_BUDGET -c src/controller/budget.c -o "$tmp/budget_bug.o"
objs=$(find "$BUILD" -name '*.o' -not -path "$BUILD/tests/*" -not -path "$BUILD/controller/budget.o" | sort)
# shellcheck disable=SC2046,SC2086
cc -pthread -o "$out" $objs "$tmp/budget_bug.o" $(pkg-config --libs $PKGS) -lpthread -lm -ldl
