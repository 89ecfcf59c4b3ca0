#!/usr/bin/env bash
# The GPU check of benchmarks.md, for a machine with an NVIDIA GPU (one H200: well under 5 minutes).
#   1. configure a fresh build with CUDA for sm_90 only, build the codec plugins and GPU programs;
#   2. G3: ctest -L gpu — the CUDA codecs write the CPU path's bytes; the NCCL transport on one rank
#      (init, every native collective, point-to-point, abort of a pending operation, timeout); device
#      tensors through the C ABI (compressed allreduce encoded on the device == host bits, on one rank
#      and on three ranks for every codec; gw_sync f32/bf16; NCCL collectives; powersgd's CUDA rounds ==
#      its CPU rounds, bit for bit);
#   3. G1: each dense codec's encode + decode, 256 MiB .. 2 GiB, against device-to-device cudaMemcpy;
#   4. G2: (top-k against torch.topk) — see the marked section below;
#   5. PyTorch DDP with an NCCL process group and gradwire's hook, against the CPU path
#      (tests/gpu/ddp_nccl.sh; needs a CUDA-enabled torch: .venv-torch from scripts/install-deps.sh, or
#      python3's; skipped, saying so, without one).
# Usage: tests/gpu/check.sh [build-dir]   (default: build-gpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
jobs=$(nproc 2>/dev/null || echo 4)
start=$SECONDS

echo "== configure ($build, CUDA sm_90)"
rm -rf "$build"
# RelWithDebInfo and GW_WERROR=OFF: a GPU machine's compiler may warn where CI's does not, and a check
# run must not end at a warning (GW_WERROR is ignored by trees that do not have the option).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGW_WERROR=OFF -DGW_WITH_CUDA=ON \
  -DGW_WITH_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null

echo "== build"
cmake --build "$build" -j "$jobs" --target gw_plugin_fp16 gw_plugin_bf16 gw_plugin_int8 gw_plugin_onebit \
  gw_plugin_topk gw_plugin_randomk gpu_codecs_test gw_gpu_g1 gpu_sparse_test gpu_sparse_cabi_test gw_gpu_g2 \
  gw_plugin_nccl nccl_transport_test gpu_path_test device_rank gradwire_cli gw_plugin_ucx gw_plugin_none \
  gw_plugin_every_step gradwire gw_plugin_powersgd gpu_powersgd_test

echo "== G3, the NCCL transport on one rank, device tensors through the C ABI (ctest -L gpu)"
status=0
(cd "$build" && ctest -L gpu --output-on-failure) || status=1

echo "== G1: dense codecs on the GPU vs device-to-device copy"
"$build"/bin/gw_gpu_g1 "$build"/lib/gradwire/plugins || status=1

# ---- G2 (top-k vs torch.topk): the topk/randomk owner adds its step here ------------------------
# gw_gpu_g2 times our CUDA top-k (1 % of 2^28 f32) and dumps the input and its selection (1 GiB);
# g2_torch_topk.py times torch.topk on the same data and prints the ratio, recall and count.
echo "== G2: GPU top-k (k = 1 % of 2^28 f32) vs torch.topk"
g2dir="$build/g2-dump"
rm -rf "$g2dir" && mkdir -p "$g2dir"
if "$build"/bin/gw_gpu_g2 "$build"/lib/gradwire/plugins "$g2dir"; then
  if [ ! -f "$g2dir/ours.json" ]; then
    echo "G2 peer NOT MEASURED: gw_gpu_g2 wrote no dump (no CUDA device?)"
  elif ! command -v python3 >/dev/null; then
    echo "G2 peer NOT MEASURED: python3 is not installed; our figures above stand alone"
  else
    python3 tests/gpu/g2_torch_topk.py "$g2dir" || status=1
  fi
else
  echo "G2 FAILED (see the lines above)"
  status=1
fi
rm -rf "$g2dir"
# ---- end of G2 -------------------------------------------------------------------------------------

echo "== DDP: NCCL process group + gradwire's hook (gradwire.torch), against the CPU path"
ddp_py=python3
[ -x .venv-torch/bin/python ] && ddp_py=.venv-torch/bin/python
if command -v "$ddp_py" >/dev/null; then
  tests/gpu/ddp_nccl.sh "$ddp_py" "$build" || status=1
else
  echo "DDP NCCL NOT RUN: python3 is not installed"
fi

echo "== done in $((SECONDS - start)) s, status $status"
exit $status
