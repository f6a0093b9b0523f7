#!/usr/bin/env bash
# Builds the ZooKeeper image spangle's compose cluster uses, from Debian's
# packages, without any container registry: mmdebstrap makes a minimal
# bookworm root with a headless JRE and ZooKeeper's jars (libzookeeper-java,
# not the zookeeper package, which pulls in a desktop JRE), and
# `docker import` turns it into an image whose command is the standalone
# server. Skips the build when the image already exists (FORCE=1 rebuilds).
#
# The Debian mirror is the one this machine's apt uses (override with
# DEBIAN_MIRROR=http://.../debian and DEBIAN_SECURITY=http://.../debian-security).
set -euo pipefail

IMAGE=${ZK_IMAGE:-spangle/zookeeper:3.8-bookworm}
SUITE=bookworm
here=$(cd "$(dirname "$0")" && pwd)

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "spangle: $IMAGE exists; not rebuilding (FORCE=1 to rebuild)" >&2
  exit 0
fi

if ! command -v mmdebstrap >/dev/null 2>&1; then
  echo "spangle: mmdebstrap is missing; run scripts/e2e-deps.sh (as root) or: apt-get install mmdebstrap" >&2
  exit 1
fi

# mirror_of prints the first URI apt's sources give for the suite $1.
mirror_of() {
  local suite=$1 f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    case "$f" in
      *.sources)
        # deb822: a stanza with URIs: and Suites: holding the suite.
        awk -v s="$suite" '
          /^[[:space:]]*$/ { if (uri != "" && hit) { print uri; exit } uri=""; hit=0; next }
          /^URIs:/ { uri=$2 }
          /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) hit=1 }
          END { if (uri != "" && hit) print uri }' "$f"
        ;;
      *)
        awk -v s="$suite" '$1 == "deb" { u=""; for (i = 2; i <= NF; i++) { if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; continue } if (u == "") { u=$i; continue } if ($i == s) { print u; exit } break } }' "$f"
        ;;
    esac
  done | head -n 1
}

mirror=${DEBIAN_MIRROR:-$(mirror_of "$SUITE")}
security=${DEBIAN_SECURITY:-$(mirror_of "$SUITE-security")}
mirror=${mirror:-http://deb.debian.org/debian}
sources=("deb $mirror $SUITE main" "deb $mirror $SUITE-updates main")
if [ -n "$security" ]; then
  sources+=("deb $security $SUITE-security main")
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "spangle: building $IMAGE from $mirror (about 80 s)" >&2
start=$(date +%s)

# Keep docs, man pages and locales out (man1 stays, as the JRE's
# update-alternatives needs it); keep the rest as Debian ships it.
mmdebstrap --variant=minbase \
  --include=openjdk-17-jre-headless,libzookeeper-java,libslf4j-java \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --setup-hook='mkdir -p "$1/usr/share/man/man1"' \
  --customize-hook="mkdir -p \"\$1/etc/zookeeper\" \"\$1/var/lib/zookeeper\" && cp '$here/zoo.cfg' \"\$1/etc/zookeeper/zoo.cfg\"" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  "$SUITE" "$work/rootfs.tar" "${sources[@]}" </dev/null

cp="/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
docker import \
  --change 'WORKDIR /var/lib/zookeeper' \
  --change 'EXPOSE 2181' \
  --change "CMD [\"java\", \"-XX:+UseSerialGC\", \"-Xms32m\", \"-Xmx256m\", \"-cp\", \"$cp\", \"-Dzookeeper.admin.enableServer=false\", \"-Dzookeeper.4lw.commands.whitelist=srvr,ruok,stat,mntr,conf\", \"-Dorg.slf4j.simpleLogger.defaultLogLevel=info\", \"org.apache.zookeeper.server.ZooKeeperServerMain\", \"/etc/zookeeper/zoo.cfg\"]" \
  --message "spangle ZooKeeper from Debian $SUITE packages" \
  "$work/rootfs.tar" "$IMAGE" >/dev/null
echo "spangle: built $IMAGE in $(( $(date +%s) - start )) s" >&2
