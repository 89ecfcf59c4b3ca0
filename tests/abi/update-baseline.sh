#!/usr/bin/env bash
# Records the current ABI of libgradwire as the baseline, on purpose: tests/abi/update-baseline.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
abidw --headers-dir "$root/abi/include/gradwire" --drop-private-types --no-corpus-path \
  "$build/lib/libgradwire.so" > "$root/abi/libgradwire.abi"
echo "wrote $root/abi/libgradwire.abi; commit it with a note of what changed and why"
