#!/usr/bin/env bash
# Installs the Debian packages, configures and builds gradwire into build/ (CUDA, NCCL and UCX parts are
# detected). Extra arguments go to CMake's configure step.
# build/ is the ordinary Release build a user or packager makes, plus GW_WERROR: the project's own
# scripts and CI hold the tree warning-clean with the default compiler (gcc on Debian), and this one
# tree is what every test then runs against, so the check costs no second build.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGW_WERROR=ON "$@"
cmake --build build -j"$(nproc)"
