#!/usr/bin/env bash
# check_exports.sh LIB: every dynamic symbol LIB defines is gw_* (the version node GRADWIRE_* aside).
# check_exports.sh --plugin LIB: a plugin defines gw_plugin_entry and nothing else.
# check_exports.sh --plugin-dir DIR: the same for every *.so in DIR.
set -euo pipefail
if [ "$1" = "--plugin-dir" ]; then
  shopt -s nullglob
  files=("$2"/*.so)
  [ ${#files[@]} -gt 0 ] || { echo "FAIL: no plugins in $2"; exit 1; }
  for f in "${files[@]}"; do "$0" --plugin "$f" || exit 1; done
  exit 0
fi
mode=lib
if [ "$1" = "--plugin" ]; then mode=plugin; shift; fi
lib=$1
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v '^GRADWIRE_' | sort -u)
if [ "$mode" = plugin ]; then
  bad=$(printf '%s\n' "$symbols" | grep -vx 'gw_plugin_entry' || true)
else
  bad=$(printf '%s\n' "$symbols" | grep -v '^gw_' || true)
fi
if [ -n "$bad" ]; then
  echo "FAIL: $lib exports symbols outside its ABI:"
  printf '  %s\n' $bad
  echo "Give them hidden visibility, or (for libgradwire) add them to the C ABI with a gw_ prefix."
  exit 1
fi
echo "ok: $lib exports $(printf '%s\n' "$symbols" | wc -l) symbols, all within its ABI"
