#!/usr/bin/env bash
# Records the current ABI of libgradwire as the baseline, on purpose: tests/abi/update-baseline.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
"$root/tests/abi/abidw.sh" "$build/lib/libgradwire.so" "$root/abi/include/gradwire" > "$root/abi/libgradwire.abi"
echo "wrote $root/abi/libgradwire.abi; commit it with a note of what changed and why"
