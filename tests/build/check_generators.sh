#!/usr/bin/env bash
# check_generators.sh SOURCE_DIR WORK_DIR
# Configures and generates the source tree with CMake's default generator and with Ninja, for each build
# type (Debug, Release, RelWithDebInfo, none) and with CUDA as detected and with -DGW_WITH_CUDA=OFF: the
# plain `cmake -S . -B build` a user, packager or IDE runs must generate on a machine with CUDA, not only
# the Ninja tree the project's scripts build. The default generator's full build is scripts/build.sh's
# own (build/ is made with it); the fuzz tree is built with Ninja.
set -uo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cuda_expected=OFF
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc > /dev/null; then cuda_expected=ON; fi
command -v ninja > /dev/null || { echo "FAIL: ninja is not installed (scripts/install-deps.sh installs ninja-build)"; exit 1; }

failed=0 cells=0
for generator in default Ninja; do
  for type in Debug Release RelWithDebInfo none; do
    for cuda in detected OFF; do
      cells=$((cells + 1))
      dir=$work/$generator-$type-$cuda
      args=(-S "$src" -B "$dir")
      [ "$generator" = Ninja ] && args+=(-G Ninja)
      [ "$type" != none ] && args+=(-DCMAKE_BUILD_TYPE="$type")
      [ "$cuda" = OFF ] && args+=(-DGW_WITH_CUDA=OFF)
      if ! cmake "${args[@]}" > "$dir.log" 2>&1; then
        echo "FAIL: cmake ${args[*]}"
        grep -A6 "CMake Error" "$dir.log" | head -20
        failed=1
        continue
      fi
      want=Makefile
      [ "$generator" = Ninja ] && want=build.ninja
      [ -f "$dir/$want" ] || { echo "FAIL: $generator $type CUDA=$cuda: no $want generated"; failed=1; continue; }
      got=$(sed -n 's/^GW_WITH_CUDA:BOOL=//p' "$dir/CMakeCache.txt")
      expect=$cuda_expected
      [ "$cuda" = OFF ] && expect=OFF
      [ "$got" = "$expect" ] || { echo "FAIL: $generator $type: GW_WITH_CUDA=$got, expected $expect"; failed=1; continue; }
      echo "ok: $generator generator, build type $type, CUDA $cuda (GW_WITH_CUDA=$got)"
      rm -rf "$dir"
    done
  done
done
[ "$failed" = 0 ] || exit 1
echo "ok: $cells configurations generate"
