#!/usr/bin/env bash
# agree.sh CLI GOOD_PLUGIN BAD_PLUGIN: `gradwire conformance` and the runtime's loader (`gradwire plugins`)
# give one verdict. GOOD passes conformance and loads; BAD fails conformance's plugin.load check with the
# very message the loader gives for it.
set -uo pipefail
cli=$1 good=$2 bad=$3
fail() { echo "FAIL: $*"; exit 1; }

# The loader's verdict on FILE: "" when loaded, else its error (the plugin alone in its folder).
loader() {
  GRADWIRE_PLUGIN_PATH=$(dirname "$1") "$cli" plugins --json |
    python3 -c 'import json, os, sys
file = os.path.realpath(sys.argv[1])
for p in json.load(sys.stdin)["plugins"]:
    if os.path.realpath(p["file"]) == file:
        print("" if p["loaded"] else p["error"]); sys.exit(0)
print("not listed"); sys.exit(0)' "$1"
}

out=$("$cli" conformance --timeout 15 "$good" 2>&1)
status=$?
[ $status -eq 0 ] && grep -q '^conformance: PASS' <<< "$out" || { echo "$out"; fail "$good does not pass conformance"; }
verdict=$(loader "$good")
[ -z "$verdict" ] || fail "$good passes conformance but the loader refuses it: $verdict"
echo "ok: $(basename "$good") passes conformance and loads"

out=$("$cli" conformance --timeout 15 "$bad" 2>&1)
status=$?
echo "$out"
[ $status -eq 1 ] || fail "$bad: conformance exit status $status, expected 1"
line=$(grep '^FAIL plugin.load' <<< "$out") || fail "$bad: conformance did not fail plugin.load"
message=${line#FAIL plugin.load: }
verdict=$(loader "$bad")
[ -n "$verdict" ] || fail "$bad fails conformance but the loader accepts it"
# Both messages start with the file's path, as each found it; the reasons after it must be the same.
[ "${message#*.so: }" = "${verdict#*.so: }" ] ||
  fail "conformance and the loader give different reasons: '$message' / '$verdict'"
grep -q 'below the .* bytes of its first version' <<< "$verdict" || fail "unexpected reason: $verdict"
echo "ok: $(basename "$bad") fails conformance and the loader alike: $verdict"
