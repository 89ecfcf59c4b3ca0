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
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
