#!/usr/bin/python3
"""Benchmark T2: one PyTorch DDP trainer (gloo), only the gradient communication swapped.

Trains the MLP 784-1024-1024-10 (about 1.9 M parameters) on Fashion-MNIST with the recipe of T1's PyTorch
peer (bench/peers/torch_ddp.py: He-normal init, per-pixel normalization, SGD with momentum, cosine
learning rate, the global batch split evenly over the ranks), once per configuration:

  ddp            DDP's own allreduce (no hook)          gw-none        gradwire hook, uncompressed
  torch-fp16     fp16_compress_hook                     gw-fp16        gradwire hook, fp16
  torch-powersgd powerSGD_hook (rank 4)                 gw-int8        gradwire hook, int8
                                                        gw-topk-ef     gradwire hook, top-k 1 % + error feedback
                                                        gw-onebit-ef   gradwire hook, one bit + error feedback
                                                        gw-powersgd    gradwire hook, powersgd (the same rank
                                                                       and start as torch-powersgd)
                                                        gw-powersgd-int8  the same, P and Q as int8
                                                        gw-powersgd-batched  gw-powersgd, the step's buckets
                                                                       sharing one collective per round
                                                                       (rounds_batch = 0)

Prints JSON lines: "compute" (the step without any communication: the same model, no DDP, on every rank at
once; before and after the configurations), "eval" per evaluation and "result" per configuration (time to
85 % test accuracy, final accuracy, mean step time, bytes this rank's network interface sent per step).
Training time excludes evaluations.

Run one rank per process with torchrun's variables or under `gradwire run` (scripts/bench-t2.sh does, behind
rate-limited links, with .venv-torch/bin/python: torch 2.x from scripts/install-deps.sh). Debian's python3-torch
(1.13, /usr/bin/python3) runs it too.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))                           # the gradwire package of this tree
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))  # T1's data loading and model
import gradwire.torch as gwt  # noqa: E402
from torch_ddp import load, model_of  # noqa: E402

TARGET = 0.85
CONFIGS = {
    "ddp": None,
    "torch-fp16": None,
    "torch-powersgd": None,
    "gw-none": dict(codec="none"),
    "gw-fp16": dict(codec="fp16"),
    "gw-int8": dict(codec="int8"),
    "gw-topk-ef": dict(codec="topk", error_feedback=True, ratio=0.01),
    "gw-onebit-ef": dict(codec="onebit", error_feedback=True),
    # The rank and start step come from --powersgd-rank and --powersgd-start, as torch-powersgd's (run()).
    "gw-powersgd": dict(codec="powersgd", error_feedback=False),
    "gw-powersgd-int8": dict(codec="powersgd", error_feedback=False, factor_format="int8"),
    "gw-powersgd-batched": dict(codec="powersgd", error_feedback=False, rounds_batch=0),
}


def tx_bytes(device):
    """Bytes this rank's network interface sent so far (None when it cannot be read)."""
    try:
        with open(f"/sys/class/net/{device}/statistics/tx_bytes") as f:
            return int(f.read())
    except OSError:
        return None


def emit(rank, obj):
    if rank == 0:
        print(json.dumps(obj), flush=True)


def compute_step_seconds(args, sizes, x, y, norm, steps=20):
    """The step without communication: forward, backward and optimizer on a local model (every rank at once,
    so the cores are shared as during training)."""
    model = model_of(sizes, args.seed)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    shard = args.batch // dist.get_world_size()
    dist.barrier()
    times = []
    for s in range(steps + 3):
        idx = torch.arange(s * shard, (s + 1) * shard)
        t = time.monotonic()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(norm(x[idx])), y[idx]).backward()
        opt.step()
        if s >= 3:
            times.append(time.monotonic() - t)
    dist.barrier()
    return sorted(times)[len(times) // 2]


def run(args, name, split, rank, world, norm, sizes, link):
    x_train, y_train = split["train"]
    x_test, y_test = split["t10k"]
    model = model_of(sizes, args.seed)
    first_bucket = dist._DEFAULT_FIRST_BUCKET_BYTES
    if name == "torch-powersgd":
        # PowerSGD chains its allreduces in future callbacks; with two buckets (DDP's first bucket is capped
        # at 1 MiB) the chains of the buckets interleave differently on different ranks and gloo aborts
        # with mismatched message sizes ("op.preamble.length <= op.nbytes"). One bucket avoids the race.
        dist._DEFAULT_FIRST_BUCKET_BYTES = 1 << 30
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    dist._DEFAULT_FIRST_BUCKET_BYTES = first_bucket
    state = None
    if name == "torch-fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif name == "torch-powersgd":
        ps = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                         start_powerSGD_iter=args.powersgd_start,
                                         random_seed=args.seed if args.powersgd_seed is None else args.powersgd_seed)
        ddp.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
    elif name.startswith("gw-"):
        options = dict(CONFIGS[name])
        if options["codec"] == "powersgd":
            options.update(rank=args.powersgd_rank, start_step=args.powersgd_start)
            if args.powersgd_seed is not None:
                options.update(seed=args.powersgd_seed)
        state = gwt.HookState(model=model, timeout=args.timeout, **options)
        ddp.register_comm_hook(state, gwt.hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = x_train.shape[0]
    steps_per_epoch = n // args.batch
    total = steps_per_epoch * args.epochs
    shard = args.batch // world
    lo, hi = x_test.shape[0] * rank // world, x_test.shape[0] * (rank + 1) // world
    evals = max(1, min(args.evals_per_epoch, steps_per_epoch))
    train_seconds, to_target, to_80, step, accuracy = 0.0, None, None, 0, 0.0
    sent = 0
    dist.barrier()
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(args.seed * 1000003 + epoch)
        order = torch.randperm(n, generator=g)
        started, tx0 = time.monotonic(), tx_bytes(args.device)
        for s in range(steps_per_epoch):
            for group in opt.param_groups:
                group["lr"] = 0.5 * args.lr * (1 + math.cos(math.pi * step / total))
            idx = order[s * args.batch + rank * shard: s * args.batch + (rank + 1) * shard]
            opt.zero_grad(set_to_none=True)
            loss_fn(ddp(norm(x_train[idx])), y_train[idx]).backward()
            opt.step()
            step += 1
            if (s + 1) * evals // steps_per_epoch == s * evals // steps_per_epoch:
                continue
            train_seconds += time.monotonic() - started
            tx1 = tx_bytes(args.device)
            if tx0 is not None and tx1 is not None:
                sent += tx1 - tx0
            with torch.no_grad():
                correct = (model(norm(x_test[lo:hi])).argmax(1) == y_test[lo:hi]).sum().double()
            dist.all_reduce(correct)
            accuracy = correct.item() / x_test.shape[0]
            if to_target is None and accuracy >= TARGET:
                to_target = train_seconds
            if to_80 is None and accuracy >= 0.80:
                to_80 = train_seconds
            emit(rank, {"kind": "eval", "config": name, "link": link, "epoch": round(epoch + (s + 1) / steps_per_epoch, 3),
                        "step": step, "seconds": round(train_seconds, 3), "test_accuracy": accuracy})
            started, tx0 = time.monotonic(), tx_bytes(args.device)
    if state is not None:
        state.close()
    bytes_per_step = sent / step if tx_bytes(args.device) is not None else None
    emit(rank, {"kind": "result", "config": name, "link": link, "ranks": world, "epochs": args.epochs,
                "train_images": n, "batch": args.batch, "hidden": args.hidden, "final_accuracy": accuracy,
                "seconds_to_85": None if to_target is None else round(to_target, 3),
                "seconds_to_80": None if to_80 is None else round(to_80, 3),
                "train_seconds": round(train_seconds, 3), "step_seconds": round(train_seconds / step, 5),
                "bytes_per_step": None if bytes_per_step is None else round(bytes_per_step)})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hidden", default="1024,1024")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--powersgd-rank", type=int, default=4)
    p.add_argument("--powersgd-start", type=int, default=10)
    p.add_argument("--powersgd-seed", type=int, default=None,
                   help="the seed of PowerSGD's first random Q: torch's random_seed and gradwire's [codec] seed "
                        "(default: --seed for torch, [codec] seed's default for gradwire)")
    p.add_argument("--evals-per-epoch", type=int, default=4)
    p.add_argument("--train-images", type=int, default=0, help="use the first N training images (0: all)")
    p.add_argument("--test-images", type=int, default=0)
    p.add_argument("--device", default=os.environ.get("GLOO_SOCKET_IFNAME", "lo"),
                   help="the network interface whose sent bytes are counted")
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args()
    names = args.configs.split(",")
    for name in names:
        if name not in CONFIGS:
            sys.exit(f"t2_ddp: unknown configuration '{name}'; known: {', '.join(CONFIGS)}")
    torch.set_num_threads(1)
    gwt.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        sys.exit(f"t2_ddp: the global batch {args.batch} must be a multiple of the {world} ranks")
    link = os.environ.get("GW_LINK_RATE", "loopback")
    split = load(args.data)
    if args.train_images:
        split["train"] = tuple(t[:args.train_images] for t in split["train"])
    if args.test_images:
        split["t10k"] = tuple(t[:args.test_images] for t in split["t10k"])
    pixels = split["train"][0].float() / 255.0
    mean, std = pixels.mean().item(), pixels.std(unbiased=False).item()
    norm = lambda x: (x.float() / 255.0 - mean) / std  # noqa: E731
    sizes = [split["train"][0].shape[1]] + [int(h) for h in args.hidden.split(",")] + [10]
    params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    # Measured before and after the configurations: a shared VM's speed drifts over a long run, and the
    # floor is the faster of the two (the summary takes the smaller).
    def probe(when):
        compute = compute_step_seconds(args, sizes, *split["train"], norm)
        emit(rank, {"kind": "compute", "when": when, "link": link, "ranks": world, "parameters": params,
                    "compute_step_seconds": round(compute, 5)})

    probe("before")
    for name in names:
        run(args, name, split, rank, world, norm, sizes, link)
    probe("after")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
