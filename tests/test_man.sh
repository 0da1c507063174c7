#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The manual pages in man/ cover the API and render cleanly:
#  - every symbol the shared library exports (nm -D; names ending in '_' or containing '__'
#    are internal) has man/man3/SYMBOL.3, a page or a '.so man3/FAMILY.3' link;
#  - every man3 file names a function (or function-like macro) declared in include/tide, so
#    no page outlives its function;
#  - a '.so' link points at a page that exists and lists the linked name under NAME, and
#    every name a page lists under NAME has a file of its own;
#  - every reference to a tide page (SEE ALSO and the text) leads to a file;
#  - man/meson.build installs every file;
#  - every long option of 'tide-fwd --help' appears in tide-fwd(1);
#  - every prototype in a SYNOPSIS matches its declaration in include/tide;
#  - every page renders with man(1) without a warning (undefined macros, bad escapes,
#    lines that cannot be broken or adjusted at 80 columns) and without a line wider than
#    80 columns; every link resolves from the manual's root, as man resolves it.
# usage: test_man.sh LIBTIDE_SO INCLUDE_TIDE_DIR MAN_DIR [TIDE_FWD]
set -u
lib=$1
inc=$2
mandir=$3
fwd=${4:-}
command -v nm >/dev/null || { echo "nm not installed" >&2; exit 77; }
command -v man >/dev/null || { echo "man not installed (scripts/install-deps: man-db)" >&2; exit 77; }
command -v groff >/dev/null || { echo "groff not installed (scripts/install-deps: groff-base)" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# The public symbols, as tests/test_abi.sh reads them.
nm -D --defined-only "$lib" | awk '$3 ~ /^tide_/ { sub(/@.*/, "", $3); print $3 }' |
	grep -v -e '_$' -e '__' | sort -u >"$tmp/exported"
[ -s "$tmp/exported" ] || { fail "no tide_ symbol exported by $lib"; exit 1; }

# Names declared in the headers: exported prototypes, inline functions and function-like
# macros (comments removed first: they name functions too).
cat "$inc"/*.h | sed -n 's/^[[:space:]]*#[[:space:]]*define[[:space:]]\{1,\}\(tide_[a-z0-9_]*\)(.*/\1/p' \
	>"$tmp/declared"
cat "$inc"/*.h | grep -v '^[[:space:]]*#' | tr '\n' ' ' |
	sed -e 's:/\*\([^*]\|\*[^/]\)*\*/: :g' | tr ';{}' '\n\n\n' |
	grep -E 'TIDE_EXPORT|static inline' |
	grep -oE 'tide_[a-z0-9_]+[[:space:]]*\(' | grep -oE '^tide_[a-z0-9_]+' >>"$tmp/declared"
sort -u -o "$tmp/declared" "$tmp/declared"

# The family page a man3 file stands for: itself, or the target of its .so line.
target() {
	sed -n 's:^\.so[[:space:]]\{1,\}man3/\([^[:space:]]*\)\.3[[:space:]]*$:\1:p' "$1"
}
# The names a page lists in its NAME section ("a, b \- what they do").
names() {
	awk '/^\.SH/ { on = ($2 == "NAME"); next } on' "$1" | tr '\n' ' ' | sed 's/\\-.*//' |
		tr ',' '\n' |
		sed -e 's/\\//g' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v '^$'
}

# (1) every exported function has a page.
n=0
for s in $(cat "$tmp/exported"); do
	n=$((n + 1))
	[ -f "$mandir/man3/$s.3" ] ||
		fail "no page for exported symbol $s: add man/man3/$s.3 (a page, or a line '.so man3/FAMILY.3' naming its family page, which lists $s under NAME)"
done

# (2) every man3 file is about a declared function, and links and NAME sections agree.
pages=0
links=0
for f in "$mandir"/man3/*.3; do
	[ -f "$f" ] || continue
	b=$(basename "$f" .3)
	grep -qx "$b" "$tmp/declared" ||
		fail "man/man3/$b.3: no function or macro $b is declared in include/tide (stale page?)"
	if head -n 1 "$f" | grep -q '^\.so'; then
		links=$((links + 1))
		t=$(target "$f")
		if [ -z "$t" ] || [ "$(wc -l <"$f")" -ne 1 ]; then
			fail "man/man3/$b.3: a link page is the one line '.so man3/FAMILY.3'"
		elif [ ! -f "$mandir/man3/$t.3" ] || head -n 1 "$mandir/man3/$t.3" | grep -q '^\.so'; then
			fail "man/man3/$b.3: links to man3/$t.3, which is not a page"
		elif ! names "$mandir/man3/$t.3" | grep -qx "$b"; then
			fail "man/man3/$b.3: links to $t.3, whose NAME section does not list $b"
		fi
	else
		pages=$((pages + 1))
		names "$f" | grep -qx "$b" || fail "man/man3/$b.3: its NAME section does not list $b"
		for s in $(names "$f"); do
			if [ ! -f "$mandir/man3/$s.3" ]; then
				fail "man/man3/$b.3 lists $s under NAME, but man/man3/$s.3 does not exist (add '.so man3/$b.3')"
			elif [ "$s" != "$b" ] && [ "$(target "$mandir/man3/$s.3")" != "$b" ]; then
				fail "man/man3/$b.3 lists $s under NAME, but man/man3/$s.3 is not '.so man3/$b.3'"
			fi
		done
	fi
done

# (2b) every reference to a tide page (.BR tide_x (3), \fBtide_x\fP(3), tide(7)...) leads
# to a file.
for f in "$mandir"/man*/*.[0-9]; do
	[ -f "$f" ] || continue
	sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' "$f" |
		grep -oE '(^|[ (])tide[a-z0-9_-]*[[:space:]]*\([1-9]\)' |
		sed -e 's/^[ (]//' -e 's/[[:space:]]//g' | sort -u |
		while read -r ref; do
			name=${ref%(*}
			sec=${ref#*(}
			sec=${sec%)}
			[ -f "$mandir/man$sec/$name.$sec" ] ||
				echo "FAIL: ${f#"$mandir"/} refers to $ref, which has no page"
		done
done >"$tmp/refs"
if [ -s "$tmp/refs" ]; then
	cat "$tmp/refs"
	fails=$((fails + $(wc -l <"$tmp/refs")))
fi

# (3) meson install installs every file: each is listed in man/meson.build.
for f in "$mandir"/man*/*.[0-9]; do
	[ -f "$f" ] || continue
	rel=${f#"$mandir"/}
	grep -qF "'$rel'" "$mandir/meson.build" ||
		fail "$rel is not installed: add '$rel' to install_man() in man/meson.build"
done

# (4) tide-fwd(1) names every long option tide-fwd --help lists.
if [ -n "$fwd" ]; then
	"$fwd" --help 2>&1 | grep -oE -- '--[a-z][a-z-]*' | sort -u >"$tmp/opts"
	[ -s "$tmp/opts" ] || fail "tide-fwd --help lists no option"
	# man(7) source spells a hyphen \-; compare on the text with escapes removed.
	sed 's/\\-/-/g' "$mandir/man1/tide-fwd.1" >"$tmp/fwd.1"
	for o in $(cat "$tmp/opts"); do
		grep -qE -e "$o([^a-z-]|\$)" "$tmp/fwd.1" || fail "tide-fwd(1) does not describe $o (tide-fwd --help lists it)"
	done
fi

# (5) every prototype in a SYNOPSIS is the one the headers declare (the same words and
# types, spacing aside), so that a changed signature shows up here.
protos="prototypes not compared (no python3)"
if command -v python3 >/dev/null; then
	python3 - "$inc" "$mandir" >"$tmp/proto" <<'PY' || fails=$((fails + 1))
import glob, os, re, subprocess, sys
inc, mandir = sys.argv[1:3]
hdr = "".join(open(f).read() + "\n" for f in sorted(glob.glob(inc + "/*.h")))
hdr = re.sub(r"/\*.*?\*/", " ", hdr, flags=re.S)
hdr = re.sub(r"^\s*#.*$", " ", hdr, flags=re.M)


def norm(s):
    return re.sub(r"\s*([(),*])\s*", r"\1", re.sub(r"\s+", " ", s)).strip()


decl = {}
for m in re.finditer(r"((?:TIDE_EXPORT|static inline)[^;{}]*?\b(tide_\w+)\s*\([^;{}]*?\))\s*[;{]", hdr):
    decl[m.group(2)] = norm(m.group(1).replace("TIDE_EXPORT ", ""))
for m in re.finditer(r"(typedef[^;{}]*?\(\*\s*(tide_\w+)\)\s*\([^;{}]*?\))\s*;", hdr):
    decl[m.group(2)] = norm(m.group(1))
env = dict(os.environ, LC_ALL="C", MANWIDTH="200")
bad = n = 0
for f in sorted(glob.glob(mandir + "/man3/*.3")):
    if open(f).read().startswith(".so"):
        continue
    out = subprocess.run(["man", "-E", "ascii", "-l", f], capture_output=True, text=True,
                         env=env).stdout
    syn = re.sub(r"\s+", " ", out.split("SYNOPSIS", 1)[-1].split("DESCRIPTION", 1)[0])
    for m in re.finditer(r"((?:static inline |typedef )?[a-z][\w ]*?[ *(]*(tide_\w+)\)?\s*\([^;]*?\));", syn):
        name, got = m.group(2), norm(m.group(1))
        if name not in decl:
            continue  # a macro (stale pages are caught above)
        n += 1
        if got != decl[name]:
            bad += 1
            print("FAIL: %s: the SYNOPSIS prototype of %s differs from include/tide:\n"
                  "    page:   %s\n    header: %s"
                  % (os.path.relpath(f, mandir), name, got, decl[name]))
print("%d SYNOPSIS prototypes match the headers" % n)
sys.exit(1 if bad or n == 0 else 0)
PY
	sed '$d' "$tmp/proto"
	protos=$(tail -n 1 "$tmp/proto")
fi

# (6) every page renders without a warning. A link is resolved the way man resolves it,
# relative to the manual's root (so from man/): its text must be its target's, with no
# complaint (the target's rendering is checked as a page).
rendered=0
resolved=0
for f in "$mandir"/man*/*.[0-9]; do
	[ -f "$f" ] || continue
	rel=${f#"$mandir"/}
	if head -n 1 "$f" | grep -q '^\.so'; then
		t=$(target "$f")
		(cd "$mandir" && soelim "$rel" 2>"$tmp/err" | grep -v '^\.lf ' >"$tmp/out")
		if [ -s "$tmp/err" ] || ! grep -v '^\.lf ' "$mandir/man3/$t.3" | cmp -s - "$tmp/out"; then
			fail "$rel: '.so man3/$t.3' does not resolve from $mandir: $(head -n 1 "$tmp/err")"
		fi
		resolved=$((resolved + 1))
		continue
	fi
	if ! (cd "$mandir" && LC_ALL=C.UTF-8 MANWIDTH=80 MAN_KEEP_STDERR=1 \
		man --warnings=w -E UTF-8 -l "$rel" >"$tmp/out" 2>"$tmp/err"); then
		fail "$rel: man exited non-zero: $(head -n 3 "$tmp/err")"
	elif [ -s "$tmp/err" ]; then
		fail "$rel renders with warnings:"
		sed 's/^/    /' "$tmp/err"
	elif [ ! -s "$tmp/out" ]; then
		fail "$rel renders to nothing"
	else
		# groff does not warn about no-fill lines (prototypes, examples) that overflow.
		LC_ALL=C.UTF-8 sed 's/[^ -~]/?/g' "$tmp/out" |
			awk 'length($0) > 80 { print length($0) ": " $0 }' >"$tmp/wide"
		[ -s "$tmp/wide" ] && fail "$rel has lines wider than 80 columns:" &&
			sed 's/^/    /' "$tmp/wide"
	fi
	rendered=$((rendered + 1))
done

if [ $fails -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
[ -n "$fwd" ] && checked="tide-fwd(1) names every option of --help" ||
	checked="tide-fwd(1) not compared with --help (no tide-fwd given)"
echo "$n exported functions, each with a page; $pages pages and $links links, all declared; $protos; $checked; $rendered pages render without warnings at 80 columns, $resolved links resolve"
exit 0
