#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs every test (GoogleTest through CTest, ABI
# checks, install check, multi-process tests over UCX). GPU tests skip themselves without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure -j2 --timeout 900
