#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The shared library exports exactly its public API: every dynamic symbol is declared with
# TIDE_EXPORT in include/tide/, and every TIDE_EXPORT symbol the library defines is
# exported (listed in src/libtide.map).
set -u
lib=$1
inc=$2
command -v nm >/dev/null || { echo "nm not installed" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-abi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
nm -D --defined-only "$lib" | awk '$3 ~ /^tide_/ { sub(/@.*/, "", $3); print $3 }' | sort -u >"$tmp/exported"
nm --defined-only "$lib" | awk '$3 ~ /^tide_/ { print $3 }' | sort -u >"$tmp/defined"
# Declarations only: preprocessor lines and comments removed first (they name inline
# helpers too; the headers use no // comments).
cat "$inc"/*.h | grep -v '^[[:space:]]*#' | tr '\n' ' ' |
	sed -e 's:/\*\([^*]\|\*[^/]\)*\*/: :g' | tr ';' '\n' | grep 'TIDE_EXPORT' |
	grep -oE 'tide_[a-z0-9_]+[[:space:]]*(\(|$|__attribute__)' | grep -oE '^tide_[a-z0-9_]+' |
	sort -u >"$tmp/public"
fail=0
for s in $(comm -23 "$tmp/exported" "$tmp/public"); do
	echo "exported but not public (no TIDE_EXPORT declaration in include/tide): $s"
	fail=1
done
for s in $(comm -12 "$tmp/public" "$tmp/defined" | comm -23 - "$tmp/exported"); do
	echo "public but not exported (add it to src/libtide.map): $s"
	fail=1
done
[ $fail -eq 0 ] && echo "$(wc -l <"$tmp/exported") symbols exported, all public, none missing"
exit $fail
