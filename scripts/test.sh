#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs every test (GoogleTest through CTest, ABI
# checks, install check, multi-process tests over UCX). GPU tests skip themselves without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
# Tests that start ranks (real processes over UCX, network namespaces) or run a benchmark or calibration
# (label benchmark) run one at a time: in parallel on 2 cores their timeouts would measure the other
# test's load, not gradwire. Label unit means one process and no benchmark (tests/CMakeLists.txt).
# A failed test's output scrolls by in the middle of a long log: at the end, each failed test's output
# is printed again (the end of the log is what a CI summary shows).
failed=0
stage() {
  local log=$1
  shift
  ctest --test-dir build --output-on-failure --timeout 900 -O "$log" "$@" && return 0
  failed=1
}
stage build/ctest-parallel.log -j2 -LE "multiprocess|cluster|train|benchmark"
stage build/ctest-serial.log -L "multiprocess|cluster|train|benchmark"
if [ "$failed" = 1 ]; then
  echo "==== the failed tests' output again ===="
  for log in build/ctest-parallel.log build/ctest-serial.log; do
    # From each failed test's result line to the next test's start, at most 120 lines each.
    awk '/\*\*\*(Failed|Timeout|Exception)/ {on = 1; n = 0} on && /^ *Start [0-9]+:/ {on = 0}
         on && n++ < 120' "$log"
  done
  grep -h -A20 "The following tests FAILED" build/ctest-parallel.log build/ctest-serial.log || true
  exit 1
fi

# The decoders under libFuzzer with AddressSanitizer and UBSan (clang), each for a bounded time from its
# committed seed corpus (tests/fuzz/).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGW_BUILD_FUZZERS=ON -DGW_SANITIZE=ON -DGW_WITH_CUDA=OFF -DGW_WERROR=ON > build-fuzz.log || { cat build-fuzz.log; exit 1; }
cmake --build build-fuzz -j"$(nproc)" --target gw_fuzzers
ctest --test-dir build-fuzz --output-on-failure -L fuzz
