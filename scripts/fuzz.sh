#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time each.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-20s}
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
  dir=$(dirname "$f")
  for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    echo "== $dir $name"
    # Go minimizes each new interesting input for up to a minute by
    # default; in a short run that is where the time went (FuzzReader
    # reported 0 execs/s for most of a minute while a worker minimized).
    go test -run '^$' -fuzz "^$name\$" -fuzztime "$t" -fuzzminimizetime "${FUZZMINIMIZETIME:-5s}" "$dir"
  done
done
