#!/usr/bin/env bash
# check_abi.sh LIB ABI_DIR: compares LIB's ABI (abidw.sh: gw_* functions, their version nodes and the public
# types they reach) with ABI_DIR/libgradwire.abi.
# Any difference fails: an incompatible one always needs a new ABI major; a compatible addition means
# the baseline must be updated on purpose with tests/abi/update-baseline.sh (see docs/abi.md).
set -euo pipefail
lib=$1
abi_dir=$2
baseline=$abi_dir/libgradwire.abi
current=$(mktemp)
trap 'rm -f "$current"' EXIT
"$(dirname "$0")/abidw.sh" "$lib" "$abi_dir/include/gradwire" > "$current" || { echo "FAIL: abidw.sh failed"; exit 1; }
set +e
# Both descriptions hold public types only already (abidw.sh); no --headers-dir here: without source
# locations abidiff would take every type for a private one and filter out its changes.
report=$(abidiff "$baseline" "$current")
status=$?
set -e
if [ $status -eq 0 ]; then
  echo "ok: the ABI of $lib matches $baseline"
  exit 0
fi
echo "$report"
# abidiff calls only removals incompatible; a member inserted in the middle, removed or retyped, or an
# enumerator renumbered, breaks existing binaries just as surely.
breaking='offset changed|data member deletion|type of .* changed|parameter [0-9]+ of type .* changed to|return type changed|enumerator .* value changed|[1-9][0-9]* Removed'
if [ $((status & 8)) -ne 0 ] || printf '%s\n' "$report" | grep -Eq "$breaking"; then
  echo "FAIL: INCOMPATIBLE ABI change against $baseline. Restore compatibility (structs only grow at the end,"
  echo "no removed or changed functions), or bump GW_ABI_VERSION_MAJOR and update the baseline."
elif [ $((status & 4)) -ne 0 ]; then
  echo "FAIL: compatible ABI change (additions). If intended, bump GW_ABI_VERSION_MINOR if needed and run"
  echo "tests/abi/update-baseline.sh to record it."
else
  echo "FAIL: abidiff could not compare (status $status)."
fi
exit 1
