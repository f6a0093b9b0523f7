#!/usr/bin/env bash
# Checks (and, as root with apt, installs from Debian's packages) what
# `make images` and `make e2e` need besides Go: a running Docker engine,
# docker-compose (v1) or the compose plugin, and mmdebstrap when the
# ZooKeeper image is not built yet. Without root or apt it stops and says
# what to install.
set -euo pipefail

ZK_IMAGE=${ZK_IMAGE:-spangle/zookeeper:3.8-bookworm}

if ! command -v docker >/dev/null 2>&1; then
  echo "spangle: docker is missing; install Docker Engine (Debian: apt-get install docker.io)" >&2
  exit 1
fi
if ! docker info >/dev/null 2>&1; then
  echo "spangle: cannot talk to the Docker engine (is it running, may this user use it?)" >&2
  exit 1
fi

need=()
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1; then
  need+=(docker-compose)
fi
if ! docker image inspect "$ZK_IMAGE" >/dev/null 2>&1 && ! command -v mmdebstrap >/dev/null 2>&1; then
  need+=(mmdebstrap)
fi
exec "$(dirname "$0")/apt-install.sh" e2e ${need[@]+"${need[@]}"}
