#!/usr/bin/python3
"""torch.topk peer of `gradwire bench` P2: the k largest magnitudes of N normal f32 values on the CPU with
every core (torch.set_num_threads(os.cpu_count())), what a PyTorch user runs for top-k sparsification:
torch.topk(x.abs(), k), REPS timed runs after one warm-up (the abs included, as P2's exact peer includes
its copy of |x|). Prints one JSON line: {"peer": "torch.topk", "seconds": [...], "threads": T}.
Usage: torch_topk.py N K REPS
"""
import json
import os
import sys
import time

try:
    import torch
except ImportError as e:
    sys.exit(f"torch_topk: PyTorch is not importable ({e}); install Debian's python3-torch")


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: torch_topk.py N K REPS")
    n, k, reps = (int(a) for a in sys.argv[1:])
    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    x = torch.randn(n, generator=torch.Generator().manual_seed(2024))
    seconds = []
    for rep in range(reps + 1):
        t0 = time.perf_counter()
        values, indices = torch.topk(x.abs(), k, sorted=False)
        elapsed = time.perf_counter() - t0
        if rep > 0:
            seconds.append(elapsed)
    assert indices.numel() == k
    print(json.dumps({"peer": "torch.topk", "seconds": seconds, "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main()
