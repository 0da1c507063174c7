#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The examples build out of tree against an installed tide: stage an install with
# `meson install --destdir`, point pkg-config at it, run examples/Makefile, run the result.
# usage: test_examples_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

command -v pkg-config >/dev/null || { echo "no pkg-config: skipped"; exit 77; }
meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; exit 1; }
pc=$(find "$tmp/root" -name libtide.pc | head -n 1)
[ -n "$pc" ] || { echo "libtide.pc was not installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
mkdir "$tmp/ex"
cp "$src/examples/skeleton.c" "$src/examples/Makefile" "$tmp/ex/"
# The Makefile's own way for a staged install: DESTDIR alone, no pkg-config variables.
env -u PKG_CONFIG_PATH -u PKG_CONFIG_SYSROOT_DIR make -s -C "$tmp/ex" DESTDIR="$tmp/root" skeleton
LD_LIBRARY_PATH=$libdir "$tmp/ex/skeleton" simnic:ports=2,mode=inline 0.2
echo "out-of-tree example: ok"
