#!/usr/bin/python3
"""Benchmark T5: training over a slow link, per-step synchronization against DiLoCo.

The task: a character-level transformer language model (2 layers, width 64, context 32, about 0.14 M
parameters) on the reStructuredText sources of Python's documentation (Debian's python3.11-doc, 11 MB of
English prose and code): a real text corpus that needs thousands of steps to learn and that these steps do
not exhaust (4 ranks x 16 sequences x 32 bytes a step read 6 M bytes in 3000 steps, about half of it), with
a model small enough that a few thousand steps of 4 ranks fit on two shared cores. Every 20th file is held
out; the loss is measured on 512 windows spread evenly over them.

The inner optimizer is AdamW (DiLoCo's), the same recipe everywhere: a linear warm-up over --warmup steps,
then a cosine decay to --min-lr x the peak --lr at the last step (the inner schedule of the DiLoCo paper;
a constant rate leaves every configuration's loss swinging at the end, and the final values then compare
noise). The configurations:

  compute             no exchange at all: each rank trains alone, the step's floor on this machine (its
                      loss is one rank's training, not comparable to the others)
  ddp                 DDP's own allreduce (gloo), no hook
  gw-hook             DDP with gradwire's hook, the best per-step codec of T2 (top-k 1 % + error feedback)
  local-sgd           parameters averaged every H steps (the diloco schedule with outer lr 1, momentum 0)
  diloco              DiLoCo, f32 pseudo-gradients, outer Nesterov (lr 0.8, momentum 0.8) every H steps
  diloco-int8         the same, pseudo-gradients as int8 with error feedback
  diloco-sparse       the same, pseudo-gradients through --sparse-codec: sparseq, top-k 3 % at 2 bits with
                      error feedback (SparseLoCo's recipe)
  diloco-streaming    int8, 4 fragments at staggered steps, each applied --delay steps after it started

Prints JSON lines (rank 0): "eval" per evaluation (held-out loss of rank 0's model) and "result" per
configuration: final loss after --steps inner steps, training time, the time and the step at which the
loss first reached --target (when given), bytes this rank's interface sent (or gradwire's payload bytes),
and for gradwire's synchronizer two shares of the training time after the first outer step: the time
inside its step (gw_sync_step: waiting, encoding, the outer update), the mean over the ranks; and the part of
it that every rank spent at the same step (per step the least time any rank spent inside it, summed): gradwire's
own work and waiting on the network, without the time a rank waited for a slower one to reach the exchange.
Evaluations are excluded from the training time.

Run one rank per process under `gradwire run` (scripts/bench-t5.sh, behind rate-limited links).
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the gradwire package of this tree
import gradwire.torch as gwt  # noqa: E402

CORPUS = "/usr/share/doc/python3.11/html/_sources"  # Debian's python3.11-doc
CONFIGS = ["compute", "ddp", "gw-hook", "local-sgd", "diloco", "diloco-int8", "diloco-sparse", "diloco-streaming"]


def corpus():
    """The training and held-out bytes: every file of the corpus in path order, each 20th held out."""
    if not os.path.isdir(CORPUS):
        raise SystemExit(f"{CORPUS} is missing: install Debian's python3.11-doc (scripts/install-deps.sh does)")
    paths = sorted(os.path.join(d, n) for d, _, names in os.walk(CORPUS) for n in names if n.endswith(".txt"))
    train, held = [], []
    for i, path in enumerate(paths):
        with open(path, "rb") as f:
            (held if i % 20 == 19 else train).append(f.read())
    as_tensor = lambda parts: torch.frombuffer(bytearray(b"".join(parts)), dtype=torch.uint8).long()
    return as_tensor(train), as_tensor(held)


class LM(torch.nn.Module):
    def __init__(self, width=64, layers=2, heads=4, context=32):
        super().__init__()
        self.embed = torch.nn.Embedding(256, width)
        self.position = torch.nn.Parameter(torch.randn(context, width) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True,
                                                 norm_first=True)
        self.body = torch.nn.TransformerEncoder(layer, layers)
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, 256)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

    def forward(self, x):
        h = self.embed(x) + self.position[: x.shape[1]]
        h = self.body(h, mask=self.mask[: x.shape[1], : x.shape[1]], is_causal=True)
        return self.head(self.norm(h))


def batch(data, rank, step, size, context, seed):
    g = torch.Generator().manual_seed(seed * 1000003 + step * 131 + rank)
    start = torch.randint(0, len(data) - context - 1, (size,), generator=g)
    x = torch.stack([data[s: s + context] for s in start])
    y = torch.stack([data[s + 1: s + context + 1] for s in start])
    return x, y


def evaluate(model, held, context, windows=512):
    """The mean loss over `windows` windows of the held-out bytes, their starts spread evenly over it."""
    model.eval()
    with torch.no_grad():
        starts = torch.linspace(0, len(held) - context - 2, windows).long()
        x = torch.stack([held[s: s + context] for s in starts])
        y = torch.stack([held[s + 1: s + context + 1] for s in starts])
        loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1)).item()
    model.train()
    return loss


def schedule(args):
    """The inner learning rate of step s (0-based): linear warm-up, then cosine decay to min_lr x lr."""
    warmup = args.warmup if args.warmup is not None else max(1, args.steps // 20)
    def lr_at(s):
        if s < warmup:
            return args.lr * (s + 1) / warmup
        if args.decay == "none":
            return args.lr
        t = (s - warmup) / max(1, args.steps - 1 - warmup)
        return args.lr * (args.min_lr + (1 - args.min_lr) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))
    return lr_at


def tx_bytes(device):
    try:
        with open(f"/sys/class/net/{device}/statistics/tx_bytes") as f:
            return int(f.read())
    except OSError:
        return None


def sync_shares(in_sync, after_first, world):
    """The shares of the training time after the first outer step inside gradwire's step, from every rank's
    per-step times: the mean over the ranks, and per step the least any rank spent there, summed (the last rank
    to reach an exchange waits for no slower rank: only for the network, and for gradwire's own work)."""
    mine = torch.tensor([after_first] + in_sync, dtype=torch.float64)
    every = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(every, mine)
    times = torch.stack(every)
    after = times[:, 0]
    steps = times[:, 1:]
    return {"sync_share": round(float((steps.sum(dim=1) / after).mean()), 4),
            "sync_share_every_rank": round(float(steps.min(dim=0).values.sum() / after.mean()), 4)}


def run(args, config, train, held):
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    model = LM(context=args.context)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    lr_at = schedule(args)
    ddp, state, diloco = model, None, None
    if config in ("ddp", "gw-hook"):
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        if config == "gw-hook":
            state = gwt.HookState(codec="topk", error_feedback=True, ratio=0.01, model=ddp)
            ddp.register_comm_hook(state, gwt.hook)
    elif config != "compute":  # compute: no exchange at all
        kw = dict(codec="none", inner_steps=args.inner_steps, outer_lr=args.outer_lr, outer_momentum=args.outer_momentum)
        if config == "local-sgd":
            kw.update(outer_lr=1.0, outer_momentum=0.0, nesterov=False)
        elif config == "diloco-int8":
            kw.update(codec="int8", error_feedback=True)
        elif config == "diloco-sparse":
            kw.update(codec=args.sparse_codec, error_feedback=True, **dict(args.sparse_option))
        elif config == "diloco-streaming":
            kw.update(codec="int8", error_feedback=True, fragments=args.fragments, delay=args.delay,
                      bucket_bytes=args.bucket_bytes)
        diloco = gwt.DiLoCo(model, opt, **kw)
    dist.barrier()
    tx0 = tx_bytes(args.device)
    trained = 0.0
    in_sync = [0.0] * args.steps  # seconds inside gradwire's step, per step after the first outer step
    after_first = 0.0   # training seconds after the first outer step
    reached = None
    loss = None
    for step in range(args.steps):
        x, y = batch(train, rank, step, args.batch, args.context, args.seed)
        t0 = time.monotonic()
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        opt.zero_grad(set_to_none=True)
        out = ddp(x)
        torch.nn.functional.cross_entropy(out.reshape(-1, 256), y.reshape(-1)).backward()
        if diloco is None:
            opt.step()
        else:
            opt.step()
            t1 = time.monotonic()
            with torch.no_grad():
                flags = diloco.sync.step()
            if flags["outer_step"]:
                diloco.outer_steps += 1
            if step > args.inner_steps:
                in_sync[step] = time.monotonic() - t1
        dt = time.monotonic() - t0
        trained += dt
        if step > args.inner_steps:
            after_first += dt
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            loss = evaluate(model, held, args.context)
            if rank == 0:
                print(json.dumps({"kind": "eval", "config": config, "link": args.link, "step": step + 1,
                                  "seconds": round(trained, 3), "loss": round(loss, 4)}), flush=True)
            if args.target and reached is None and loss <= args.target:
                reached = (step + 1, trained)
    tx1 = tx_bytes(args.device)
    if diloco is not None:
        sent = diloco.stats()["wire_bytes"]
        diloco.close()
    elif state is not None:
        sent = None
        state.close()
    else:
        sent = None
    interface = tx1 - tx0 if tx0 is not None and tx1 is not None else None
    result = {"kind": "result", "config": config, "link": args.link, "ranks": world, "steps": args.steps,
              "parameters": sum(p.numel() for p in model.parameters()), "inner_steps": args.inner_steps,
              "outer_lr": args.outer_lr, "outer_momentum": args.outer_momentum,
              "final_loss": round(loss, 4), "train_seconds": round(trained, 2),
              "step_ms": round(1e3 * trained / args.steps, 2), "lr": args.lr, "decay": args.decay,
              "interface_bytes": interface, "gradwire_payload_bytes": sent,
              "target": args.target, "target_step": reached[0] if reached else None,
              "target_seconds": round(reached[1], 2) if reached else None}
    if diloco is not None and after_first > 0:
        result.update(sync_shares(in_sync, after_first, world))
    if rank == 0:
        print(json.dumps(result), flush=True)
    dist.barrier()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--inner-steps", type=int, default=50)
    p.add_argument("--outer-lr", type=float, default=0.8, help="DiLoCo's outer learning rate (not local SGD's: 1)")
    p.add_argument("--outer-momentum", type=float, default=0.8,
                   help="DiLoCo's outer Nesterov momentum (0.8: at H = 50 over a few thousand steps the paper's 0.9, "
                        "chosen for H = 500, trails DDP by more)")
    p.add_argument("--fragments", type=int, default=4)
    p.add_argument("--delay", type=int, default=5)
    p.add_argument("--bucket-bytes", type=int, default=65536)
    p.add_argument("--sparse-codec", default="sparseq")
    p.add_argument("--sparse-option", action="append", type=lambda s: tuple(s.split("=", 1)), default=None,
                   help="KEY=VALUE of the sparse codec (default: ratio=0.03 bits=2, SparseLoCo's recipe)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--context", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps (default: steps / 20)")
    p.add_argument("--decay", choices=["cosine", "none"], default="cosine")
    p.add_argument("--min-lr", type=float, default=0.1, help="the decayed rate at the last step, x --lr")
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--target", type=float, default=None, help="the loss whose first crossing is timed")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--link", default=os.environ.get("GW_LINK", "loopback"))
    p.add_argument("--device", default=os.environ.get("GLOO_SOCKET_IFNAME", "lo"))
    args = p.parse_args()
    def number(v):
        for kind in (int, float):
            try:
                return kind(v)
            except ValueError:
                pass
        return v
    args.sparse_option = [(k, number(v)) for k, v in (args.sparse_option or [("ratio", "0.03"), ("bits", "2")])]
    torch.set_num_threads(1)
    gwt.init_process_group("gloo")
    train, held = corpus()
    for config in args.configs.split(","):
        if config not in CONFIGS:
            raise SystemExit(f"unknown configuration {config}; known: {', '.join(CONFIGS)}")
        run(args, config, train, held)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
