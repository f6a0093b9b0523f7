#!/usr/bin/env bash
# The embedded default: a standalone storaged serving the sample data in
# testdata/sample, and a routerd in front of it, no ZooKeeper needed.
# Ctrl-C (or SIGTERM) stops both, and the script then exits 0: a stop
# asked for is not an error (make would otherwise print "Error 130").
set -euo pipefail
cd "$(dirname "$0")/.."

STORAGED_BIND=${STORAGED_BIND:-127.0.0.1:9599}
ROUTERD_BIND=${ROUTERD_BIND:-127.0.0.1:9590}
RUN_DIR=${RUN_DIR:-.run}
mkdir -p "$RUN_DIR"

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

bin/storaged --source testdata/sample --local-store "$RUN_DIR/storaged" \
  --bind "$STORAGED_BIND" --log-format console &
pids+=($!)
bin/routerd --bind "$ROUTERD_BIND" --storaged "http://$STORAGED_BIND" --log-format console &
pids+=($!)

echo "spangle: storaged on http://$STORAGED_BIND, routerd on http://$ROUTERD_BIND"
echo "spangle: try: curl http://$ROUTERD_BIND/baby-names/1881/boy"
wait -n "${pids[@]}"
