#!/usr/bin/env bash
# check_install.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"

# The installed layout docs/ and README.md describe.
for f in include/gradwire/gradwire.h include/gradwire/plugin.h include/gradwire/types.h \
         include/gradwire/plugin_core.h include/gradwire/plugin_codec.h include/gradwire/plugin_transport.h \
         include/gradwire/plugin_schedule.h bin/gradwire \
         lib/gradwire/plugins/libgw-none.so lib/cmake/gradwire/gradwireConfig.cmake \
         lib/cmake/gradwire/gradwireConfigVersion.cmake lib/pkgconfig/gradwire.pc; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done
soname=$(objdump -p "$prefix/lib/libgradwire.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libgradwire.so.0" ] || { echo "FAIL: SONAME is '$soname'"; exit 1; }

# The ABI the installed headers declare: a plugin built against them reports it in `gradwire plugins`.
abi=$(sed -n 's/^#define GW_ABI_VERSION_MAJOR \([0-9]*\).*/\1/p' "$prefix/include/gradwire/types.h").$(
      sed -n 's/^#define GW_ABI_VERSION_MINOR \([0-9]*\).*/\1/p' "$prefix/include/gradwire/types.h")
[[ "$abi" =~ ^[0-9]+\.[0-9]+$ ]] || { echo "FAIL: no ABI version in the installed types.h ('$abi')"; exit 1; }

# The example plugin, against the installed package (find_package) and nothing else.
cmake -S "$src/examples/third_party_codec" -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" > "$work/example.log"
cmake --build "$work/example" >> "$work/example.log"
out=$(GRADWIRE_PLUGIN_PATH="$work/example" "$prefix/bin/gradwire" plugins)
echo "$out"
grep -q "^minmax8 1.0.0  (ABI $abi)" <<< "$out" || { echo "FAIL: minmax8 not listed"; exit 1; }
grep -q "^none 1.0.0" <<< "$out" || { echo "FAIL: none not listed from the installed plugin folder"; exit 1; }

# The example transport, against the installed package only; the installed `gradwire conformance`
# passes it (a transport author's own CI does exactly this).
cmake -S "$src/examples/third_party_transport" -B "$work/transport" -DCMAKE_PREFIX_PATH="$prefix" > "$work/transport.log"
cmake --build "$work/transport" >> "$work/transport.log"
out=$(GRADWIRE_PLUGIN_PATH="$work/transport" "$prefix/bin/gradwire" plugins)
grep -q "^tcp_example 1.0.0  (ABI $abi)" <<< "$out" || { echo "$out"; echo "FAIL: tcp_example not listed"; exit 1; }
"$prefix/bin/gradwire" conformance --timeout 10 "$work/transport/libgw-tcp-example.so" > "$work/conformance.log" 2>&1 ||
  { cat "$work/conformance.log"; echo "FAIL: the out-of-tree transport does not pass conformance"; exit 1; }
tail -1 "$work/conformance.log"

# A C client through pkg-config, round-tripping the example codec.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc -std=c99 -Wall -Werror $(pkg-config --cflags gradwire) "$src/tests/abi/c_client.c" -o "$work/c_client" \
   $(pkg-config --libs gradwire) -lm -Wl,-rpath,"$prefix/lib"
GRADWIRE_PLUGIN_PATH="$work/example" "$work/c_client" minmax8 0.02
"$work/c_client" none 0
printf '[codec]\nname = "minmax8"\n[codec.minmax8]\nblok = 64\n' > "$work/typo.toml"
if GRADWIRE_PLUGIN_PATH="$work/example" "$prefix/bin/gradwire" config check "$work/typo.toml" 2> "$work/typo.err"; then
  echo "FAIL: a misspelt plugin key passed config check"; exit 1
fi
grep -q "unknown key 'blok' in \[codec.minmax8\]; did you mean 'block'?" "$work/typo.err" || { cat "$work/typo.err"; exit 1; }
echo "ok: installed package, out-of-tree codec and transport, pkg-config client"
