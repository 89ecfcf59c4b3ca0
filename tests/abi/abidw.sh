#!/usr/bin/env bash
# abidw.sh LIB HEADERS_DIR: the ABI description of libgradwire that the baseline records and the check
# compares: the exported gw_* functions with their version nodes, and only the types they reach that the
# public headers define (--exported-interfaces-only, --drop-private-types). No source locations or
# build paths, so a comment in a header or another checkout does not change it.
set -euo pipefail
# The types come from the debug info of the C ABI's translation units (compiled with -g,
# runtime/CMakeLists.txt); without it abidw sees symbols only and a changed type would pass unnoticed.
if ! readelf -S "$1" | grep -q '\.debug_info'; then
  echo "$1 has no debug info, so its ABI cannot be described type by type; build it with this tree's CMake" \
    "files, which compile the C ABI's sources with -g" >&2
  exit 1
fi
# abidw has no switch for the translation units' paths: they are cut to the part below the checkout.
abidw --headers-dir "$2" --drop-private-types --exported-interfaces-only --drop-undefined-syms \
  --no-show-locs --no-corpus-path --no-comp-dir-path "$1" | sed -E "s|^( *<abi-instr [^>]* path=')[^']*/runtime/|\1runtime/|"
