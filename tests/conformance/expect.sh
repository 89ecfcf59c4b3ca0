#!/usr/bin/env bash
# expect.sh CLI PLUGIN pass|fail [CHECK...]
# Runs `gradwire conformance PLUGIN`. pass: exit status 0 and no FAIL line. fail: exit status 1 and every
# CHECK (a name suffix, e.g. ".ordering") among the failed checks - the broken fixture fails for its
# own rule, not by accident.
set -uo pipefail
cli=$1 plugin=$2 want=$3
shift 3
# --timeout 15: room for a loaded machine (a transport that hangs still fails). GW_CONFORMANCE_ARGS: more options (e.g. --require-failure-detection), set by the test.
out=$("$cli" conformance --timeout 15 ${GW_CONFORMANCE_ARGS:-} "$plugin" 2>&1)
status=$?
echo "$out"
if [ "$want" = pass ]; then
  [ $status -eq 0 ] || { echo "EXPECTED PASS, exit status $status"; exit 1; }
  grep -q '^FAIL ' <<< "$out" && { echo "EXPECTED no FAIL line"; exit 1; }
  grep -q '^conformance: PASS' <<< "$out" || { echo "EXPECTED the PASS verdict"; exit 1; }
  exit 0
fi
[ $status -eq 1 ] || { echo "EXPECTED exit status 1 (a failed check), got $status"; exit 1; }
for check in "$@"; do
  grep -Eq "^FAIL [a-z0-9_.]*${check}(:|$)" <<< "$out" || { echo "EXPECTED check '$check' to fail"; exit 1; }
done
echo "ok: failed as expected (${*})"
