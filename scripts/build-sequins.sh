#!/usr/bin/env bash
# build-sequins.sh SEQUINS_SRC [OUT]: builds Stripe's sequins from its own
# source, for the bench's side-by-side section (bench/README.md, "sequins
# side by side"), and prints the binary's path: OUT/bin/sequins.
#
# SEQUINS_SRC is a checkout or export of github.com/stripe/sequins (for
# instance `git archive HEAD | tar -x -C DIR`); it is copied, never built
# in place. OUT defaults to ${TMPDIR:-/tmp}/sequins-build and must be
# outside this repository: none of sequins' code belongs here.
#
# sequins predates Go modules: it is built in GOPATH mode
# (GO111MODULE=off) from its vendor/ dir, which also holds packages the
# module proxy no longer serves (github.com/colinmarc/sequencefile). Its
# one cgo dependency is libsparkey (github.com/bsm/go-sparkey), built here
# as a static library from the copy vendored in SEQUINS_SRC/vendor/sparkey,
# the version sequins pins (spotify/sparkey's current source also needs
# zstd); SPARKEY_SRC=DIR builds another copy instead. libsparkey needs
# snappy, taken from Debian's libsnappy-dev rather than sequins' vendored
# copy. Its Makefile also links a vendored ZooKeeper C client that no Go
# code calls (it talks to ZooKeeper through a pure Go client), so that is
# not built. SEQUINS_VERSION names the build (default the checkout's
# commit). Debian packages needed: gcc g++ make autoconf automake
# libtool libsnappy-dev (installed as root with apt, else listed).
set -euo pipefail

if [ "$#" -lt 1 ] || [ "$#" -gt 2 ]; then
  echo "usage: $0 SEQUINS_SRC [OUT]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
out=$(realpath -m "${2:-${TMPDIR:-/tmp}/sequins-build}")
repo=$(cd "$(dirname "$0")/.." && pwd)
case "$out/" in
  "$repo"/*) echo "build-sequins: OUT ($out) is inside the repository; choose a dir outside it" >&2; exit 2 ;;
esac
if [ ! -f "$src/sequins.go" ] || [ ! -d "$src/vendor/github.com/bsm/go-sparkey" ]; then
  echo "build-sequins: $src is not a sequins source tree with its vendor/ dir" >&2
  exit 2
fi
sparkey_src=${SPARKEY_SRC:-$src/vendor/sparkey}
if [ ! -f "$sparkey_src/configure.ac" ]; then
  echo "build-sequins: no libsparkey source at $sparkey_src" >&2
  exit 2
fi
mkdir -p "$out"

need=()
for tool in gcc:gcc g++:g++ make:make autoreconf:autoconf automake:automake libtoolize:libtool; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
done
[ -f /usr/include/snappy-c.h ] || need+=(libsnappy-dev)
"$(dirname "$0")/apt-install.sh" "sequins build" ${need[@]+"${need[@]}"}

go="${GO:-go}"
prefix=$out/prefix
log=$out/build.log
: >"$log"
echo "build-sequins: building in $out (log: $log)" >&2

# libsparkey, static. Its Makefile.am builds with -Werror, on which the
# old source's bench program fails under a recent gcc: the library itself
# is built with the same optimisation and warnings, without -Werror.
rm -rf "$out/sparkey"
cp -r "$sparkey_src" "$out/sparkey"
(
  cd "$out/sparkey"
  autoreconf --install
  ./configure --prefix="$prefix" --disable-shared
  make -j"$(nproc)" install CFLAGS="-O2 -Wall -Wextra"
) >>"$log" 2>&1 || { echo "build-sequins: libsparkey failed; see $log" >&2; tail -20 "$log" >&2; exit 1; }

# sequins, in a GOPATH of its own.
gopath=$out/gopath
pkg=$gopath/src/github.com/stripe/sequins
rm -rf "$pkg"
mkdir -p "$(dirname "$pkg")"
cp -r "$src" "$pkg"
version=${SEQUINS_VERSION:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo source)}
(
  cd "$pkg"
  export GOPATH="$gopath" GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local
  # The status page's template, compiled in as sequins' Makefile does.
  "$go" build -o "$out/bin/go-bindata" ./vendor/github.com/jteeuwen/go-bindata/go-bindata/
  "$out/bin/go-bindata" -o status.tmpl.go status.tmpl
  CGO_ENABLED=1 CGO_CFLAGS="-I$prefix/include" \
    CGO_LDFLAGS="$prefix/lib/libsparkey.a -lsnappy -lrt -lm -lstdc++" \
    "$go" build -ldflags "-X main.sequinsVersion=$version" -o "$out/bin/sequins" .
) >>"$log" 2>&1 || { echo "build-sequins: sequins failed; see $log" >&2; tail -20 "$log" >&2; exit 1; }

"$out/bin/sequins" --version >&2
echo "$out/bin/sequins"
