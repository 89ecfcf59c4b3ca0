#!/bin/sh
# rust.build (CTest): builds the workspace's libraries, examples and test binaries offline, then puts
# the Rust plugin alone in a folder for GRADWIRE_PLUGIN_PATH. The environment (CARGO_HOME,
# CARGO_TARGET_DIR, PKG_CONFIG_PATH) comes from CMake.
# Usage: ctest-build.sh CARGO MANIFEST TARGET_DIR PLUGIN_DIR
set -eu
cargo=$1 manifest=$2 target=$3 plugins=$4
"$cargo" build --offline --locked --manifest-path "$manifest" --workspace --lib --examples
"$cargo" test --offline --locked --manifest-path "$manifest" --workspace --no-run
mkdir -p "$plugins"
cp "$target/debug/libgw_ternary.so" "$plugins/libgw-ternary.so"
