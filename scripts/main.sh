#!/usr/bin/env bash
# The main job. Until `gradwire train` lands it shows what the runtime found and the effective
# configuration of the example file; then it will train on Fashion-MNIST with local ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
if ./build/bin/gradwire --help | grep -q "^  train"; then
  exec ./build/bin/gradwire train "$@"
fi
./build/bin/gradwire --version
./build/bin/gradwire plugins
./build/bin/gradwire config check examples/gradwire.toml
./build/bin/gradwire config dump examples/gradwire.toml
