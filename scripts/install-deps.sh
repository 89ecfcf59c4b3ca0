#!/usr/bin/env bash
# Installs every Debian package gradwire builds, tests and benchmarks with.
# Idempotent; needs root (or sudo). The CUDA toolkit with NCCL is expected under /usr/local/cuda.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libboost-filesystem-dev          # Boost.DLL (header-only, uses Boost.Filesystem)
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev
  libucx-dev ucx-utils                          # transport + ucx_perftest peer
  libhwy-dev                                    # SIMD codecs with run-time dispatch
  abigail-tools                                 # abidw / abidiff ABI baseline
  openmpi-bin libopenmpi-dev                    # MPI_Allreduce benchmark peer
  libeigen3-dev                                 # dense math of `gradwire train`
  zlib1g-dev                                    # `gradwire train` reads the gzip-compressed IDX files
  dataset-fashion-mnist                         # the training data set
  python3.11-doc                                # benchmark T5's text corpus (the documentation's sources)
  clang libclang-rt-14-dev                      # libFuzzer targets
  iproute2 iputils-ping                         # network namespaces for the one-machine cluster
  python3-torch                                 # PyTorch DDP, the peer of benchmark T1
  cargo golang-go                               # the Rust and Go bindings (bindings/) and their tests
  python3-pytest python3-numpy python3-venv     # the Python binding's tests (bindings/python)
  python3-setuptools python3-wheel python3-pip  # pip install ./bindings/python offline
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# PyTorch 2.x from PyPI (scripts/requirements-torch.txt) in .venv-torch/ at the top of the tree (ignored by
# git), made with Debian's /usr/bin/python3 — never the first python3 on PATH, which may be another
# interpreter (pyenv). The Python tests and T2 run with its python (tests/python/CMakeLists.txt).
# GW_TORCH_VENV=0 skips it (the Python tests then run with Debian's python3-torch 1.13).
cd "$(dirname "$0")/.."
venv=.venv-torch
req=scripts/requirements-torch.txt
if [ "${GW_TORCH_VENV:-1}" = 0 ]; then
  echo "install-deps: GW_TORCH_VENV=0, no $venv"
  exit 0
fi
want=$(sed -n 's/^torch==//p' "$req")
# Up to date when it imports the pinned torch, numpy and pytest, and was made from this requirements file.
if [ -x "$venv/bin/python" ] && cmp -s "$req" "$venv/requirements-torch.txt" &&
   "$venv/bin/python" -c "import sys, numpy, pytest, torch; sys.exit(torch.__version__.split('+')[0] != '$want')" \
     2>/dev/null; then
  echo "install-deps: $venv has torch $want"
  exit 0
fi
echo "install-deps: making $venv with torch $want from PyPI (about 2.8 GB to download)"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --progress-bar off -r "$req"
cp "$req" "$venv/requirements-torch.txt"
"$venv/bin/python" -c "import torch; print('install-deps: torch', torch.__version__, 'in $venv')"
