#!/usr/bin/env bash
# Installs what `go` does not fetch: a ZooKeeper server for the integration
# tests, Chromium for the status-page test and LuaJIT for the xDS Lua filter
# test, all from Debian's packages; and builds versitygw, the S3 server of
# the S3 tests, at the version pinned in tools/versitygw, into
# $(go env GOPATH)/bin. Safe to run again: it installs only what is missing.
# Without root or apt it stops and says what to install.
set -euo pipefail

# versitygw: built once from the pinned tools module (about 2 minutes).
go="${GO:-go}"
vgw="$("$go" env GOPATH | cut -d: -f1)/bin/versitygw"
want="$(cd "$(dirname "$0")/../tools/versitygw" && "$go" list -m -f '{{.Version}}' github.com/versity/versitygw)"
if ! "$go" version -m "$vgw" 2>/dev/null | grep -q "github.com/versity/versitygw[[:space:]]*$want"; then
  echo "spangle: building versitygw $want into $vgw" >&2
  (cd "$(dirname "$0")/../tools/versitygw" && CGO_ENABLED=0 GOBIN="$(dirname "$vgw")" "$go" install -trimpath github.com/versity/versitygw/cmd/versitygw)
fi

need=()
command -v java >/dev/null 2>&1 && [ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v luajit >/dev/null 2>&1 || need+=(luajit)

exec "$(dirname "$0")/apt-install.sh" test ${need[@]+"${need[@]}"}
