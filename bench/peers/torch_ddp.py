#!/usr/bin/python3
"""PyTorch DDP peer of `gradwire train` (benchmark T1): the same MLP on the same Fashion-MNIST files with the
same recipe (He-normal init, zero biases, per-pixel normalization, SGD with momentum, cosine learning rate,
global batch split evenly over the ranks, last partial batch dropped), over the gloo backend, once per
communication hook: none (plain fp32 allreduce), fp16 (fp16_compress_hook) and powersgd (PowerSGD).

Prints one JSON object per line: an "eval" line at each test-set evaluation and a "result" line per hook
with the final accuracy and the training time until the test accuracy first reached 85 %. Training time
excludes evaluations, as in `gradwire train`.

Without RANK in the environment it starts --ranks local processes itself; with RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT set (torchrun's convention) it is one rank, e.g. inside a namespace of
scripts/cluster.sh (set GLOO_SOCKET_IFNAME=eth0 there). Needs Debian's python3-torch: run it with
/usr/bin/python3.
"""
import argparse
import gzip
import json
import math
import os
import socket
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

TARGET = 0.85
DATA_PACKAGE = "dataset-fashion-mnist"


def read_idx(path, rank):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08 or raw[3] != rank:
        sys.exit(f"torch_ddp: {path}: not an IDX file of {rank}-dimensional unsigned bytes")
    dims = struct.unpack(">" + "I" * rank, raw[4:4 + 4 * rank])
    body = raw[4 + 4 * rank:]
    if len(body) != math.prod(dims):
        sys.exit(f"torch_ddp: {path}: holds {len(body)} elements, its header announces {math.prod(dims)}")
    return torch.frombuffer(bytearray(body), dtype=torch.uint8).reshape(dims)


def find(data, name):
    for candidate in (os.path.join(data, name + ".gz"), os.path.join(data, name)):
        if os.path.exists(candidate):
            return candidate
    sys.exit(f"torch_ddp: {name}[.gz] is not in {data}: install the Debian package {DATA_PACKAGE} or give --data DIR")


def load(data):
    split = {}
    for kind in ("train", "t10k"):
        images = read_idx(find(data, f"{kind}-images-idx3-ubyte"), 3)
        labels = read_idx(find(data, f"{kind}-labels-idx1-ubyte"), 1)
        split[kind] = (images.reshape(images.shape[0], -1), labels.long())
    return split


def model_of(sizes, seed):
    torch.manual_seed(seed)
    layers = []
    for i in range(len(sizes) - 1):
        lin = torch.nn.Linear(sizes[i], sizes[i + 1])
        torch.nn.init.kaiming_normal_(lin.weight, mode="fan_in", nonlinearity="relu")
        torch.nn.init.zeros_(lin.bias)
        layers.append(lin)
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def run_hook(args, hook, split, rank, world):
    x_train, y_train = split["train"]
    x_test, y_test = split["t10k"]
    if args.train_images:
        x_train, y_train = x_train[:args.train_images], y_train[:args.train_images]
    if args.test_images:
        x_test, y_test = x_test[:args.test_images], y_test[:args.test_images]
    pixels = x_train.float() / 255.0
    mean, std = pixels.mean().item(), pixels.std(unbiased=False).item()
    norm = lambda x: (x.float() / 255.0 - mean) / std

    sizes = [x_train.shape[1]] + [int(h) for h in args.hidden.split(",")] + [10]
    model = torch.nn.parallel.DistributedDataParallel(model_of(sizes, args.seed))
    if hook == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif hook == "powersgd":
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                            start_powerSGD_iter=args.powersgd_start, random_seed=args.seed)
        model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()

    n = x_train.shape[0]
    steps_per_epoch = n // args.batch
    total = steps_per_epoch * args.epochs
    shard = args.batch // world
    lo, hi = x_test.shape[0] * rank // world, x_test.shape[0] * (rank + 1) // world
    evals = max(1, min(args.evals_per_epoch, steps_per_epoch))
    train_seconds, to_target, step, accuracy = 0.0, None, 0, 0.0
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(args.seed * 1000003 + epoch)
        order = torch.randperm(n, generator=g)
        started = time.monotonic()
        for s in range(steps_per_epoch):
            for group in opt.param_groups:
                group["lr"] = 0.5 * args.lr * (1 + math.cos(math.pi * step / total))
            idx = order[s * args.batch + rank * shard: s * args.batch + (rank + 1) * shard]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(norm(x_train[idx])), y_train[idx])
            loss.backward()
            opt.step()
            step += 1
            if (s + 1) * evals // steps_per_epoch == s * evals // steps_per_epoch:
                continue
            train_seconds += time.monotonic() - started
            with torch.no_grad():
                correct = (model.module(norm(x_test[lo:hi])).argmax(1) == y_test[lo:hi]).sum().double()
            dist.all_reduce(correct)
            accuracy = correct.item() / x_test.shape[0]
            if to_target is None and accuracy >= TARGET:
                to_target = train_seconds
            if rank == 0:
                print(json.dumps({"peer": "torch_ddp", "kind": "eval", "hook": hook, "epoch": epoch + (s + 1) / steps_per_epoch,
                                  "step": step, "seconds": round(train_seconds, 3), "test_accuracy": accuracy}), flush=True)
            started = time.monotonic()
    if rank == 0:
        print(json.dumps({"peer": "torch_ddp", "kind": "result", "hook": hook, "ranks": world, "epochs": args.epochs,
                          "batch": args.batch, "lr": args.lr, "hidden": args.hidden, "final_accuracy": accuracy,
                          "seconds_to_85": None if to_target is None else round(to_target, 3),
                          "train_seconds": round(train_seconds, 3)}), flush=True)


def rank_main(rank, world, args):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        split = load(args.data)
        if args.batch % world:
            sys.exit(f"torch_ddp: the global batch {args.batch} must be a multiple of the {world} ranks")
        for hook in args.hooks.split(","):
            run_hook(args, hook, split, rank, world)
    finally:
        dist.destroy_process_group()


def spawned(rank, world, args):
    os.environ["RANK"] = str(rank)
    rank_main(rank, world, args)


def free_port():
    """A free TCP port below Linux's ephemeral range (32768-60999), as `gradwire run` picks one: a port
    from bind(0) is ephemeral, and any outgoing connection may take it before the store binds it."""
    for i in range(12000):
        port = 20000 + (os.getpid() + i) % 12000
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free TCP port in 20000-31999")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hidden", default="256,128")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--hooks", default="none,fp16,powersgd")
    p.add_argument("--powersgd-rank", type=int, default=4)
    p.add_argument("--powersgd-start", type=int, default=10, help="plain allreduce steps before PowerSGD starts")
    p.add_argument("--evals-per-epoch", type=int, default=4)
    p.add_argument("--train-images", type=int, default=0)
    p.add_argument("--test-images", type=int, default=0)
    args = p.parse_args()
    for hook in args.hooks.split(","):
        if hook not in ("none", "fp16", "powersgd"):
            sys.exit(f"torch_ddp: unknown hook '{hook}'; known: none, fp16, powersgd")
    if not os.path.isdir(args.data):
        sys.exit(f"torch_ddp: {args.data} does not exist: install the Debian package {DATA_PACKAGE} or give --data DIR")
    if "RANK" in os.environ:
        rank_main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    mp.spawn(spawned, args=(args.ranks, args), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
