#!/usr/bin/python3
"""Error of the compressed allreduce against the exact average, flat and two-level, on real gradients.

Trains the Fashion-MNIST MLP of `gradwire train` (784-1024-1024-10, plain SGD on the average of the
ranks' gradients, batch 64 per rank) and, at the given steps, writes every rank's gradient to a file
that tests/two_level's rank program reads (GW_TWO_LEVEL_DATA); then runs it flat, two-level with the
cross phase's scatter-reduce-allgather and two-level with its gather, 2 ranks per node.

    scripts/two-level-accuracy.py [--ranks 8] [--steps 0,50,400] [--codecs int8,onebit] [--build build]
"""
import argparse, gzip, os, subprocess, sys, tempfile

import numpy as np
import torch

ap = argparse.ArgumentParser()
ap.add_argument("--ranks", type=int, default=8)
ap.add_argument("--steps", default="0,50,400")
ap.add_argument("--codecs", default="int8,onebit")
ap.add_argument("--build", default="build")
ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
args = ap.parse_args()
bin_dir = os.path.join(args.build, "bin")
for tool in ("gradwire", "two_level_rank"):
    if not os.access(os.path.join(bin_dir, tool), os.X_OK):
        sys.exit(f"{bin_dir}/{tool} is missing: build first (scripts/build.sh)")


def idx(name, offset):
    with gzip.open(os.path.join(args.data, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


X = torch.tensor(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255)
Y = torch.tensor(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 10))
order = torch.randperm(len(X))
B, n = 64, args.ranks


def gradients(step):
    out = []
    for r in range(n):
        start = ((step * n + r) * B) % (len(X) - B)
        batch = order[start:start + B]
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(X[batch]), Y[batch]).backward()
        out.append(torch.cat([p.grad.flatten() for p in model.parameters()]).clone())
    return out


def run(path, mode, codec, cross):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "error.txt")
        env = dict(os.environ, UCX_TLS="tcp", GW_TWO_LEVEL_DATA=path, GRADWIRE_COLLECTIVES_TWO_LEVEL_CROSS=cross)
        r = subprocess.run([os.path.join(bin_dir, "gradwire"), "run", "-n", str(n), "--ranks-per-node", "2", "--",
                            os.path.join(bin_dir, "two_level_rank"), mode, codec, out],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"two_level_rank {mode} {codec} ({cross}) failed:\n{r.stdout}{r.stderr}")
        return [float(v) for v in open(out).read().split()]


steps = [int(s) for s in args.steps.split(",")]
print(f"| step | codec | flat rms | two-level scatter rms | two-level gather rms | scatter / flat | gather / flat |")
print("|---|---|---|---|---|---|---|")
step = 0
with tempfile.TemporaryDirectory() as d:
    for target in steps:
        while step < target:
            g = torch.stack(gradients(step)).mean(0)
            with torch.no_grad():
                o = 0
                for p in model.parameters():
                    p -= 0.05 * g[o:o + p.numel()].view_as(p)
                    o += p.numel()
            step += 1
        path = os.path.join(d, f"grad{step}.f32")
        torch.cat(gradients(step)).numpy().astype("<f4").tofile(path)
        for codec in args.codecs.split(","):
            flat = run(path, "off", codec, "auto")[0]
            scatter = run(path, "on", codec, "scatter")[0]
            gather = run(path, "on", codec, "gather")[0]
            print(f"| {step} | {codec} | {flat:.4g} | {scatter:.4g} | {gather:.4g} | {scatter / flat:.3f} | "
                  f"{gather / flat:.3f} |", flush=True)
