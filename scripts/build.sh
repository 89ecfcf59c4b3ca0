#!/usr/bin/env bash
# Installs the Debian packages, configures and builds gradwire into build/ (CUDA, NCCL and UCX parts are
# detected). Extra arguments go to CMake's configure step.
# build/ is the ordinary Release build a user or packager makes, with CMake's default generator (Unix
# Makefiles on Debian), plus GW_WERROR: the project's own scripts and CI hold the tree warning-clean with
# the default compiler (gcc on Debian), and this one tree is what every test (the install and consumer
# checks among them) then runs against, so the check costs no second build. The fuzz tree of
# scripts/test.sh is built with Ninja; tests/build checks that every generator and build type generates.
# A build/ made earlier keeps the generator it was made with (CMake reads it from the cache).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGW_WERROR=ON "$@"
cmake --build build -j"$(nproc)"
