#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time each.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-20s}
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
  dir=$(dirname "$f")
  for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    echo "== $dir $name"
    go test -run '^$' -fuzz "^$name\$" -fuzztime "$t" "$dir"
  done
done
