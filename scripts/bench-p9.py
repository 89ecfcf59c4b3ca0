#!/usr/bin/env python3
"""Benchmark P9: the PowerSGD compression step on one CPU, gradwire's powersgd codec against the compute of
PyTorch's powerSGD_hook, in the same process.

For a rows x cols f32 gradient and each rank r, one step is what a rank computes between and around the two
allreduces, with error feedback:
  M = gradient + residual; P = M Q; orthogonalise P; Q = M^T P; out = P Q^T; residual (gradwire's: M - P Q^T
  with the rank's own Q, docs/powersgd.md; PyTorch's: M - out).
gradwire: gw_allreduce_compressed with the powersgd codec (rank r, the tensor's shape in the codec context)
on a communicator of one rank, so the runtime's sums are copies and the time is the codec's rounds. PyTorch:
the same operations with the functions powerSGD_hook uses (torch.matmul, its _orthogonalize: Gram-Schmidt up
to rank 2, QR above), at torch's default thread count. Each figure is the median of --reps steps after two
warm-up steps; a step of each side alternates, so a load on the machine falls on both alike.

Prints a Markdown table (for scripts/bench-report.py save P9) and, with --json, one JSON line per rank.
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook  # noqa: E402

import gradwire  # noqa: E402


def torch_step(grad, state, rank):
    m = grad + state["residual"]
    q = state["q"]
    p = torch.matmul(m, q)
    powerSGD_hook._orthogonalize(p.unsqueeze(0))
    q = torch.matmul(m.t(), p)
    out = torch.matmul(p, q.t())
    state["residual"] = m - out
    state["q"] = q
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--ranks", default="1,4,16")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--threads", type=int, default=0,
                    help="powersgd's threads (0: every core the process may use, the codec's default)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows, cols = a.rows, a.cols
    rng = np.random.default_rng(1)
    grad = rng.standard_normal((rows, cols), dtype=np.float32)
    tgrad = torch.from_numpy(grad.copy())
    lines = []
    for r in [int(x) for x in a.ranks.split(",")]:
        rt = gradwire.Runtime(text=f"[codec.powersgd]\nrank = {r}\nthreads = {a.threads}\n", env_overrides=False)
        comm = gradwire.Comm(rt, rank=0, world_size=1, allgather=lambda data: [data])
        codec = gradwire.Codec(rt, "powersgd")
        buf = np.empty_like(grad)
        shapes = [(0, rows, cols)]
        state = {"residual": torch.zeros(rows, cols), "q": torch.randn(cols, r)}
        ours, theirs = [], []
        for i in range(a.reps + 2):
            buf[...] = grad
            t0 = time.perf_counter()
            comm.allreduce_compressed(codec, buf, op="sum", seed=7, step=i, buffer_id=1, shapes=shapes)
            t1 = time.perf_counter()
            torch_step(tgrad, state, r)
            t2 = time.perf_counter()
            if i >= 2:
                ours.append(t1 - t0)
                theirs.append(t2 - t1)
        codec.close()
        comm.close()
        rt.close()
        g, p = statistics.median(ours), statistics.median(theirs)
        row = {"suite": "P9", "case": f"{rows}x{cols} rank {r}", "ours_ms": g * 1e3, "peer_ms": p * 1e3,
               "ratio": p / g, "peer": f"torch {torch.__version__} powerSGD_hook compute, "
                                           f"{torch.get_num_threads()} threads"}
        lines.append(row)
        if a.json:
            print(json.dumps(row), flush=True)
    threads = a.threads or min(len(os.sched_getaffinity(0)), 64)
    print("| case | gradwire powersgd (ms) | PyTorch powerSGD_hook compute (ms) | PyTorch / gradwire |")
    print("|---|---|---|---|")
    for row in lines:
        print(f"| {row['case']} | {row['ours_ms']:.1f} | {row['peer_ms']:.1f} | {row['ratio']:.2f} |")
    print(f"\nMedian of {a.reps} steps each (after 2 warm-up steps), alternating; torch {torch.__version__} with "
          f"{torch.get_num_threads()} threads; gradwire's kernels on "
          f"{threads} threads. One step: M = gradient + residual, "
          f"P = M Q, orthogonalise P, Q = M^T P, out = P Q^T, residual (gradwire: M - P Q^T with this rank's own Q; "
          f"PyTorch: M - out). Load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.")


if __name__ == "__main__":
    main()
