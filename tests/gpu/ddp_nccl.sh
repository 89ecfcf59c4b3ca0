#!/usr/bin/env bash
# PyTorch DDP with an NCCL process group and gradwire's hook (gradwire.torch), for tests/gpu/check.sh:
#   1. NCCL group, CUDA model, codec none: the hook's average equals DDP's own NCCL allreduce (<= 1e-4);
#   2. the same training on the CPU (gloo group, CPU model): the parameters match the GPU run's (<= 1e-3,
#      the forward and backward kernels of the two devices round differently);
#   3. NCCL group, CUDA model, int8 + error feedback (device kernels): parameters identical across ranks.
# 2 ranks with 2 GPUs or more; 1 rank with one GPU (NCCL takes one GPU per rank). Skips (exit 0, saying so)
# without a CUDA-enabled torch or a GPU.
# Usage: tests/gpu/ddp_nccl.sh PYTHON BUILD-DIR
# GW_DDP_NCCL_SELFTEST=1 runs the "GPU" runs with gloo on the CPU, 2 ranks: the script's own check, anywhere.
set -uo pipefail
cd "$(dirname "$0")/../.."
py=$1 build=$2
backend=nccl device=cuda
if [ "${GW_DDP_NCCL_SELFTEST:-0}" = 1 ]; then
  backend=gloo device=cpu ranks=2
  echo "(self-test: the NCCL runs with gloo on the CPU)"
elif ! "$py" -c "import sys, torch, torch.distributed as d
sys.exit(not (torch.cuda.is_available() and d.is_nccl_available()))" 2>/dev/null; then
  echo "DDP NCCL NOT RUN: $py has no CUDA-enabled torch with NCCL, or there is no GPU"
  exit 0
else
  gpus=$("$py" -c "import torch; print(torch.cuda.device_count())")
  ranks=$((gpus >= 2 ? 2 : 1))
  [ "$ranks" = 1 ] && echo "(one GPU: 1 rank; 2 ranks need 2 GPUs, NCCL takes one GPU per rank)"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONPATH="$PWD/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
export GRADWIRE_LIBRARY="$PWD/$build/lib/libgradwire.so.0" OMP_NUM_THREADS=1
status=0
run() {  # run NAME ARGS...: ranks/ddp.py under torchrun, bounded; its output in $tmp/NAME.log
  local name=$1
  shift
  timeout 300 "$py" -m torch.distributed.run --nnodes 1 --nproc_per_node "$ranks" --master_addr 127.0.0.1 \
    --master_port $((20000 + RANDOM % 10000)) --log_dir "$tmp/$name-logs" --redirects 1 --tee 1 \
    bindings/python/tests/ranks/ddp.py --steps 4 "$@" >"$tmp/$name.log" 2>&1
  local rc=$?
  grep -E "^(\[[^]]*\]:)?rank [0-9]+ (max|param|ok|FAILED)" "$tmp/$name.log" | sed 's/^/  /'
  if [ $rc != 0 ]; then
    echo "DDP NCCL $name FAILED (exit $rc):"
    tail -40 "$tmp/$name.log"
    status=1
  fi
}
echo "-- NCCL group, CUDA model, codec none, against DDP's own allreduce"
run gpu-none --backend "$backend" --device "$device" --codec none --compare --save "$tmp/gpu.pt"
echo "-- gloo group, CPU model, codec none (the CPU path)"
run cpu-none --backend gloo --device cpu --codec none --save "$tmp/cpu.pt"
echo "-- NCCL group, CUDA model, int8 + error feedback"
run gpu-int8 --backend "$backend" --device "$device" --codec int8 --error-feedback
if [ -f "$tmp/gpu.pt" ] && [ -f "$tmp/cpu.pt" ]; then
  "$py" - "$tmp/gpu.pt" "$tmp/cpu.pt" <<'PY' || status=1
import sys, torch
gpu, cpu = torch.load(sys.argv[1]), torch.load(sys.argv[2])
diff = (gpu - cpu).abs().max().item()
print(f"  GPU run (NCCL group) vs CPU run (gloo group): max parameter difference {diff:.3g} (limit 1e-3)")
sys.exit(0 if diff <= 1e-3 else 1)
PY
else
  echo "DDP NCCL: a run saved no parameters"
  status=1
fi
echo "DDP NCCL $([ $status = 0 ] && echo ok || echo FAILED)"
exit $status
