#!/usr/bin/env python3
"""A gw_sync step of many powersgd buckets, their rounds batched ([bucket] rounds_batch = 0: one collective
per round for all of them) against one collective per bucket and round (rounds_batch = 1), in the same run,
alternating step by step (docs/powersgd.md).

    scripts/bench-rounds-batch.py [--ranks 4] [--link 100mbit] [--buckets 16] [--rows 256] [--cols 256]
                                  [--rank-r 4] [--steps 30] [--gradwire build/bin/gradwire]

Runs `gradwire run -n RANKS [--link RATE] -- python THIS --worker ...` (--link needs root: each rank in its
own network namespace behind a rate-limited link; without --link the ranks talk over loopback) and prints a
Markdown table of rank 0's medians: keep it with `scripts/bench-report.py save NAME --command "..."`.
Each bucket holds one rows x cols matrix (compressed at rank r) and a bias of rows elements (sent exactly).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def config(args, batch):
    return (f'[codec]\nname = "powersgd"\n[codec.powersgd]\nrank = {args.rank_r}\n'
            f'[bucket]\nbytes = {4 * (args.rows * args.cols + args.rows)}\nrounds_batch = {batch}\n')


def worker(args):
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    import numpy as np
    import gradwire
    rt = {b: gradwire.Runtime(text=config(args, b)) for b in (0, 1)}
    comm = gradwire.Comm(rt[0])
    rng = np.random.default_rng(1 + comm.rank)
    syncs, grads = {}, {}
    for b in (0, 1):
        s = gradwire.Sync(comm, rt[b])
        grads[b] = []
        for k in range(args.buckets):
            w = np.zeros(args.rows * args.cols, dtype=np.float32)
            bias = np.zeros(args.rows, dtype=np.float32)
            s.register(f"w{k}", w)
            s.register_shape(f"w{k}", [args.rows, args.cols])
            s.register(f"b{k}", bias)
            grads[b] += [w, bias]
        s.finalize()
        syncs[b] = s
    inputs = [rng.standard_normal(g.size).astype(np.float32) for g in grads[0]]
    times = {0: [], 1: []}
    for step in range(args.steps + 3):
        for b in ((0, 1) if step % 2 == 0 else (1, 0)):  # alternate which goes first
            for g, x in zip(grads[b], inputs):
                g[:] = x
            comm.barrier()
            t0 = time.perf_counter()
            syncs[b].step()
            if step >= 3:
                times[b].append(time.perf_counter() - t0)
    if comm.rank == 0:
        out = {"buckets": syncs[0].bucket_count()}
        for b in (0, 1):
            st = syncs[b].stats()
            out[str(b)] = {"median_ms": 1e3 * statistics.median(times[b]), "wire_bytes": st["wire_bytes"],
                           "steps": st["steps"]}
        print("RESULT " + json.dumps(out), flush=True)
    for s in syncs.values():
        s.close()
    comm.close()
    for r in rt.values():
        r.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--link", default="")
    p.add_argument("--buckets", type=int, default=16)
    p.add_argument("--rows", type=int, default=256)
    p.add_argument("--cols", type=int, default=256)
    p.add_argument("--rank-r", type=int, default=4)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--gradwire", default=os.path.join(ROOT, "build", "bin", "gradwire"))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    own = ["--buckets", str(args.buckets), "--rows", str(args.rows), "--cols", str(args.cols),
           "--rank-r", str(args.rank_r), "--steps", str(args.steps)]
    link = ["--link", args.link] if args.link else []
    load_before = os.getloadavg()[0]
    r = subprocess.run([args.gradwire, "run", "-n", str(args.ranks), *link, "--", sys.executable,
                        os.path.abspath(__file__), "--worker", *own], capture_output=True, text=True)
    load_after = os.getloadavg()[0]
    lines = [l for l in r.stdout.splitlines() if "RESULT " in l]
    if r.returncode != 0 or not lines:
        sys.exit(f"bench-rounds-batch: the run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    res = json.loads(lines[0].split("RESULT ", 1)[1])
    steps = res["0"]["steps"]
    print(f"{args.ranks} ranks, {'link ' + args.link if args.link else 'loopback'}, {res['buckets']} buckets "
          f"of a {args.rows} x {args.cols} matrix (rank {args.rank_r}) and a bias; median of {args.steps} steps "
          f"each, alternating, after 3 warm-up steps.\n")
    print("| rounds_batch | collectives per step | step (ms) | sent per step (KB) |")
    print("|---|---|---|---|")
    for b, n in (("0", 2), ("1", 2 * res["buckets"])):
        print(f"| {b} | {n} | {res[b]['median_ms']:.1f} | {res[b]['wire_bytes'] / steps / 1e3:.1f} |")
    print(f"\nbatched / per bucket: {res['0']['median_ms'] / res['1']['median_ms']:.2f} of the step time. "
          f"Load average {load_before:.1f} before, {load_after:.1f} after, on {os.cpu_count()} cores.")


if __name__ == "__main__":
    main()
