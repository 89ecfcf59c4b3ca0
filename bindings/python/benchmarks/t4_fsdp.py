#!/usr/bin/python3
"""Benchmark T4: one PyTorch FSDP2 trainer (torch 2.x fully_shard, gloo, CPU), only FSDP2's collectives swapped.

A decoder-only transformer (default: vocabulary 8192, width 512, 4 blocks of 8 heads, MLP 2048, untied output
layer: about 21 M parameters; each block and the whole model fully_shard-ed) learns next-token prediction
on synthetic tokens, once per configuration, from the same initial weights and the same batches:

  fsdp              FSDP2's own reduce-scatter and all-gather (gloo)
  gw-none           both through gradwire uncompressed: separates the collectives' own algorithms (gloo's
                    reduce-scatter sends about twice the (n - 1) / n of the buffer a reduce-scatter needs, as
                    the sent bytes per step show) from what the codec gains
  gw-int8-rs        gradient reduce-scatter through gradwire int8 + error feedback (gradwire.torch.fsdp)
  gw-int8-rs-ag     the same and the parameter all-gather through gradwire int8

The tokens: a fixed random first-order Markov chain over the vocabulary (every token has 4 successors with
probabilities 0.55, 0.25, 0.15 and 0.05), the same on every machine and rank, each rank drawing its own
sequences. It needs no data set, and unlike uniform random tokens it has structure to learn: the loss
falls from about ln(8192) = 9.0 towards the chain's entropy (1.11 nats), so "the same loss after the same
steps" compares training, not noise.

Prints JSON lines: "compute" (the step without communication: the same model unsharded on every rank at
once) and "result" per configuration (mean step time over the timed steps, the loss after the last step
averaged over ranks, the loss of every step, bytes this rank's network interface sent per step).

Run one rank per process with torchrun's variables or under `gradwire run` (scripts/bench-t4.sh does, behind
rate-limited links, with .venv-torch/bin/python).
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the gradwire package of this tree
import gradwire.torch as gwt  # noqa: E402
import gradwire.torch.fsdp as gwf  # noqa: E402

CONFIGS = {
    "fsdp": None,
    "gw-none": dict(codec="none", all_gather_codec="none"),
    "gw-int8-rs": dict(codec="int8", error_feedback=True),
    "gw-int8-rs-ag": dict(codec="int8", error_feedback=True, all_gather_codec="int8"),
}


class Block(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Transformer(nn.Module):
    def __init__(self, vocab, d, layers, heads, ffn, seq):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, ffn) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def model_of(args):
    torch.manual_seed(args.seed)
    return Transformer(args.vocab, args.width, args.layers, args.heads, args.ffn, args.seq)


class Chain:
    """The synthetic token source: a fixed random Markov chain (the same for every seed of the data)."""

    def __init__(self, vocab, seed=12345):
        g = torch.Generator().manual_seed(seed)
        self.next = torch.randint(0, vocab, (vocab, 4), generator=g)
        self.probs = torch.tensor([0.55, 0.25, 0.15, 0.05])
        self.vocab = vocab

    def batch(self, n, seq, seed):
        g = torch.Generator().manual_seed(seed)
        out = torch.empty(n, seq + 1, dtype=torch.long)
        out[:, 0] = torch.randint(0, self.vocab, (n,), generator=g)
        for t in range(seq):
            choice = torch.multinomial(self.probs.expand(n, 4), 1, generator=g).squeeze(1)
            out[:, t + 1] = self.next[out[:, t], choice]
        return out[:, :-1], out[:, 1:]


def tx_bytes(device):
    try:
        with open(f"/sys/class/net/{device}/statistics/tx_bytes") as f:
            return int(f.read())
    except OSError:
        return None


def emit(rank, obj):
    if rank == 0:
        print(json.dumps(obj), flush=True)


def lr_at(args, step):
    return args.lr * min(1.0, (step + 1) / args.warmup)


def compute_step_seconds(args, chain, rank, steps=3):
    """The step without communication: the unsharded model's forward, backward and optimizer step on every
    rank at once (the cores shared as in training); the median of `steps`."""
    model = model_of(args)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    dist.barrier()
    times = []
    for s in range(steps + 1):
        x, y = chain.batch(args.batch, args.seq, 10 ** 6 + s * 7919 + rank)
        t = time.monotonic()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        opt.step()
        if s >= 1:
            times.append(time.monotonic() - t)
    dist.barrier()
    return sorted(times)[len(times) // 2]


def run(args, name, chain, rank, world, link, params):
    from torch.distributed.fsdp import fully_shard
    model = model_of(args)
    for b in model.blocks:
        fully_shard(b)
    fully_shard(model)
    state = gwf.compress(model, timeout=args.timeout, **CONFIGS[name]) if CONFIGS[name] else None
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    losses, timed, sent = [], 0.0, 0
    dist.barrier()
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(args, step)
        x, y = chain.batch(args.batch, args.seq, args.seed * 1000003 + step * world + rank)
        t0, tx0 = time.monotonic(), tx_bytes(args.device)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()
        dt = time.monotonic() - t0
        tx1 = tx_bytes(args.device)
        if step >= args.untimed:
            timed += dt
            if tx0 is not None and tx1 is not None:
                sent += tx1 - tx0
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # outside the timed part
        losses.append(round(mean.item() / world, 5))
        emit(rank, {"kind": "step", "config": name, "link": link, "step": step + 1, "seconds": round(dt, 3),
                    "loss": losses[-1]})
    n = args.steps - args.untimed
    if state is not None:
        state.close()
    emit(rank, {"kind": "result", "config": name, "link": link, "ranks": world, "parameters": params,
                "steps": args.steps, "timed_steps": n, "batch_per_rank": args.batch, "seq": args.seq,
                "step_seconds": round(timed / n, 4), "final_loss": losses[-1], "losses": losses,
                "bytes_per_step": round(sent / n) if tx_bytes(args.device) is not None else None})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--steps", type=int, default=8, help="training steps per configuration")
    p.add_argument("--untimed", type=int, default=1, help="first steps left out of the step time")
    p.add_argument("--batch", type=int, default=2, help="sequences per rank per step")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=2048)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default=os.environ.get("GLOO_SOCKET_IFNAME", "lo"),
                   help="the network interface whose sent bytes are counted")
    p.add_argument("--timeout", type=float, default=900.0)
    args = p.parse_args()
    names = args.configs.split(",")
    for name in names:
        if name not in CONFIGS:
            sys.exit(f"t4_fsdp: unknown configuration '{name}'; known: {', '.join(CONFIGS)}")
    if args.steps <= args.untimed:
        sys.exit("t4_fsdp: --steps must exceed --untimed")
    torch.set_num_threads(1)
    gwt.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    link = os.environ.get("GW_LINK_RATE", "loopback")
    chain = Chain(args.vocab)
    params = sum(q.numel() for q in model_of(args).parameters())
    emit(rank, {"kind": "compute", "link": link, "ranks": world, "parameters": params,
                "compute_step_seconds": round(compute_step_seconds(args, chain, rank), 4),
                "entropy_nats": round(-sum(p * math.log(p) for p in chain.probs.tolist()), 4)})
    for name in names:
        run(args, name, chain, rank, world, link, params)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
