#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs every test (GoogleTest through CTest, ABI
# checks, install check, multi-process tests over UCX). GPU tests skip themselves without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
# Tests that start ranks (real processes over UCX, network namespaces) run one at a time: in parallel on
# 2 cores their timeouts would measure the other test's load, not gradwire.
ctest --test-dir build --output-on-failure -j2 --timeout 900 -LE "multiprocess|cluster|train"
ctest --test-dir build --output-on-failure --timeout 900 -L "multiprocess|cluster|train"

# The decoders under libFuzzer with AddressSanitizer and UBSan (clang), each for a bounded time from its
# committed seed corpus (tests/fuzz/).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGW_BUILD_FUZZERS=ON -DGW_SANITIZE=ON -DGW_WITH_CUDA=OFF -DGW_WERROR=ON > build-fuzz.log || { cat build-fuzz.log; exit 1; }
cmake --build build-fuzz -j"$(nproc)" --target gw_fuzzers
ctest --test-dir build-fuzz --output-on-failure -L fuzz
