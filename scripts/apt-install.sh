#!/usr/bin/env bash
# apt-install.sh WHAT PKG...: installs the Debian packages PKG (WHAT says
# what they are for, in messages) when run as root with apt; otherwise it
# stops and says what to install. deps.sh and e2e-deps.sh end with it.
set -euo pipefail

what=$1
shift
if [ "$#" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "spangle: missing $what dependencies: $*" >&2
  echo "spangle: install them with: sudo apt-get install -y $*" >&2
  exit 1
fi
echo "spangle: installing $* from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@" >/dev/null
