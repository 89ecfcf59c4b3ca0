#!/usr/bin/env bash
# Installs the Debian packages, configures and builds gradwire into build/ (CUDA, NCCL and UCX parts are
# detected). Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j"$(nproc)"
