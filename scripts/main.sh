#!/usr/bin/env bash
# The main job: `gradwire train` — 4 local ranks train an MLP on Fashion-MNIST uncompressed, with fp16,
# int8, top-k 1 % and one bit (error feedback) and with local SGD, then print the table and write
# train-out/train.svg (docs/train.md). Arguments go to `gradwire train` (e.g. --link 1gbit as root).
# A build without the train command shows what the runtime found instead.
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
