#!/usr/bin/env bash
# check_capi_home.sh RUNTIME_DIR: every C ABI function (a definition marked GW_API, which is what makes
# libgradwire export it) lives in RUNTIME_DIR/capi/. check_capi_home.sh --self-test: plants one elsewhere
# in a scratch tree and expects it found.
set -euo pipefail
if [ "$1" = "--self-test" ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/capi" "$scratch/sync"
  printf 'GW_API gw_status gw_ok(void) { return GW_OK; }\n' > "$scratch/capi/ok.cpp"
  "$0" "$scratch" > /dev/null || { echo "FAIL: a tree with C ABI functions only in capi/ was refused"; exit 1; }
  printf 'GW_API gw_status gw_stray(void) { return GW_OK; }\n' > "$scratch/sync/stray.cpp"
  if out=$("$0" "$scratch"); then
    echo "FAIL: a C ABI function planted in sync/ was not found"
    exit 1
  fi
  grep -q 'sync/stray.cpp' <<< "$out" || { echo "FAIL: the report does not name the file: $out"; exit 1; }
  echo "ok: planted gw_stray in sync/: reported"
  exit 0
fi
runtime=$1
stray=$(cd "$runtime" && grep -rlE '^\s*GW_API\b' --include='*.cpp' --include='*.hpp' . | sed 's|^\./||' | grep -v '^capi/' || true)
if [ -n "$stray" ]; then
  echo "FAIL: C ABI functions (GW_API) outside $runtime/capi/:"
  printf '  %s\n' $stray
  echo "Move them to capi/, next to the other gw_* functions; the area keeps its C++ and capi/ calls it."
  exit 1
fi
echo "ok: every C ABI function of $runtime is in capi/ ($(cd "$runtime" && grep -rhE '^\s*GW_API\b' capi | wc -l) definitions)"
