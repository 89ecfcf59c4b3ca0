#!/usr/bin/env bash
# check_symbol_versions.sh MAP LIB OLD_LIB CLIENT_1_0 CLIENT_1_2
# 1. LIB exports every symbol of the version script MAP with the node MAP puts it in (objdump -T), and
#    the nodes are GRADWIRE_<major>.<minor>, one per minor, each inheriting the one before.
# 2. CLIENT_1_2 (calls a 1.2 function) needs GRADWIRE_1.2; CLIENT_1_0 needs GRADWIRE_1.0 only.
# 3. Against LIB both start; against OLD_LIB (the nodes up to 1.1, same SONAME) CLIENT_1_0 starts and
#    CLIENT_1_2 is refused by the dynamic loader: "version `GRADWIRE_1.2' not found".
set -euo pipefail
map=$1 lib=$2 old_lib=$3 client_1_0=$4 client_1_2=$5
fail() { echo "FAIL: $*"; exit 1; }

# node<TAB>symbol for every symbol of the map; node<TAB>parent for every node.
listed=$(awk '/^GRADWIRE_[0-9]+\.[0-9]+ \{/ {node = $1} node && /^ +gw_[a-z0-9_]+;/ {gsub(/[ ;]/, ""); print node "\t" $0}' "$map" | sort)
nodes=$(awk '/^GRADWIRE_/ {node = $1} /^\}/ && node {p = $2; sub(/;$/, "", p); sub(/^\};?$/, "", p); print node "\t" p; node = ""}' "$map")
[ -n "$listed" ] || fail "$map lists no gw_* symbol in a GRADWIRE_<major>.<minor> node"
prev=""
while IFS=$'\t' read -r node parent; do
  [[ $node =~ ^GRADWIRE_1\.[0-9]+$ ]] || fail "node $node of $map is not GRADWIRE_1.<minor>"
  [ "$parent" = "$prev" ] || fail "node $node inherits '${parent}', expected '${prev}' (each node inherits the one before)"
  prev=$node
done <<< "$nodes"

exported=$(objdump -T "$lib" | awk '$NF ~ /^gw_/ && $(NF-1) ~ /GRADWIRE_/ {print $(NF-1) "\t" $NF}' | sort)
unversioned=$(objdump -T "$lib" | awk '$NF ~ /^gw_/ && $(NF-1) !~ /GRADWIRE_/ && $0 !~ /\*UND\*/ {print $NF}')
[ -z "$unversioned" ] || fail "$lib exports gw_* symbols without a GRADWIRE_ version: $unversioned"
if [ "$exported" != "$listed" ]; then
  echo "FAIL: the version nodes of $lib differ from $map (< map, > library):"
  diff <(printf '%s\n' "$listed") <(printf '%s\n' "$exported") || true
  echo "Every exported function is listed once, in the node of the minor it arrived in (docs/abi.md)."
  exit 1
fi
echo "ok: $lib exports $(printf '%s\n' "$exported" | wc -l) symbols in nodes $(printf '%s\n' "$nodes" | cut -f1 | paste -sd' ')"

needs() { readelf -V "$1" | awk '/Name: GRADWIRE_/ {for (i = 1; i <= NF; i++) if ($i == "Name:") print $(i + 1)}' | sort -u | paste -sd' '; }
[ "$(needs "$client_1_2")" = "GRADWIRE_1.0 GRADWIRE_1.2" ] ||
  fail "$client_1_2 needs '$(needs "$client_1_2")', expected GRADWIRE_1.0 GRADWIRE_1.2"
[ "$(needs "$client_1_0")" = "GRADWIRE_1.0" ] || fail "$client_1_0 needs '$(needs "$client_1_0")', expected GRADWIRE_1.0"
echo "ok: $(basename "$client_1_2") needs $(needs "$client_1_2"); $(basename "$client_1_0") needs $(needs "$client_1_0")"

run() {  # run LIBDIR PROGRAM: its output and status, with LIBDIR's libgradwire.so.0
  set +e
  out=$(LD_LIBRARY_PATH=$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$2" 2>&1)
  status=$?
  set -e
}
for client in "$client_1_0" "$client_1_2"; do
  run "$(dirname "$lib")" "$client"
  [ $status -eq 0 ] || fail "$client against $lib: status $status: $out"
  echo "ok: $(basename "$client") against the library: $out"
done
run "$(dirname "$old_lib")" "$client_1_0"
[ $status -eq 0 ] || fail "$client_1_0 (ABI 1.0 only) against the 1.1 library: status $status: $out"
echo "ok: $(basename "$client_1_0") against the 1.1 library: $out"
run "$(dirname "$old_lib")" "$client_1_2"
if [ $status -eq 0 ]; then
  fail "$client_1_2 started against the 1.1 library ($out); it must be refused at load"
fi
printf '%s\n' "$out" | grep -q "version \`GRADWIRE_1.2' not found" ||
  fail "$client_1_2 against the 1.1 library: status $status without the loader's version message: $out"
echo "ok: $(basename "$client_1_2") refused by the loader against the 1.1 library: $out"
