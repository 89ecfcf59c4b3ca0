#!/usr/bin/python3
"""Where a T2 step's time goes: T2's trainer (t2_ddp.py: the MLP 784-1024-1024-10, Fashion-MNIST, the global
batch of 128 split over the ranks) for a few hundred steps of one configuration, each step cut into forward,
backward (which ends when every bucket's communication has completed) and optimizer, and each gradwire
bucket's hook call and completion timed from the start of the backward pass. Rank 0 prints the medians
after the first 20 steps as one JSON line ("kind": "phases").

    gradwire run -n 4 --link 1gbit -- .venv-torch/bin/python bindings/python/benchmarks/t2_phases.py \\
        --config gw-powersgd [--hook '{"rounds_batch": 0}'] [--steps 200]

--config: compute (the model without DDP: the step without communication), or a configuration of t2_ddp.py;
--hook: HookState keywords added to the configuration's (JSON). The runtime's keys come from the
environment as usual (GRADWIRE_RUNTIME_WAIT_SLEEP_US=0, ...). docs/powersgd.md reads these figures.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import t2_ddp  # noqa: E402  (puts this tree's gradwire package and T1's data loading on the path)
import gradwire.torch as gwt  # noqa: E402
from torch_ddp import load, model_of  # noqa: E402


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if v else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="gw-powersgd")
    p.add_argument("--hook", default="{}", help="HookState keywords added to the configuration's (JSON)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--powersgd-rank", type=int, default=4)
    p.add_argument("--powersgd-start", type=int, default=10)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    if args.config != "compute" and args.config not in t2_ddp.CONFIGS:
        sys.exit(f"t2_phases: unknown configuration '{args.config}'; known: compute, {', '.join(t2_ddp.CONFIGS)}")
    extra = json.loads(args.hook)
    torch.set_num_threads(1)
    gwt.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    x_train, y_train = load(args.data)["train"]
    pixels = x_train.float() / 255.0
    mean, std = pixels.mean().item(), pixels.std(unbiased=False).item()
    norm = lambda x: (x.float() / 255.0 - mean) / std  # noqa: E731
    model = model_of([x_train.shape[1], 1024, 1024, 10], 1)
    net, state, calls = model, None, []
    if args.config != "compute":
        first_bucket = dist._DEFAULT_FIRST_BUCKET_BYTES
        if args.config == "torch-powersgd":
            dist._DEFAULT_FIRST_BUCKET_BYTES = 1 << 30  # as t2_ddp.py: one bucket for PyTorch's PowerSGD hook
        net = torch.nn.parallel.DistributedDataParallel(model)
        dist._DEFAULT_FIRST_BUCKET_BYTES = first_bucket
        if args.config == "torch-powersgd":
            ps = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                             start_powerSGD_iter=args.powersgd_start, random_seed=1)
            net.register_comm_hook(ps, powerSGD_hook.powerSGD_hook)
        elif args.config.startswith("gw-"):
            options = dict(t2_ddp.CONFIGS[args.config])
            if options["codec"] == "powersgd":
                options.update(rank=args.powersgd_rank, start_step=args.powersgd_start)
            options.update(extra)
            state = gwt.HookState(model=model, timeout=600, **options)

            def timed_hook(st, bucket):
                called = time.monotonic()
                fut = gwt.hook(st, bucket)

                def completed(f):
                    calls.append((called, time.monotonic()))
                    return f.value()
                return fut.then(completed)
            net.register_comm_hook(state, timed_hook)
        elif args.config != "ddp":
            sys.exit(f"t2_phases: configuration '{args.config}' is not timed here")
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    shard = 128 // world
    rows = []
    dist.barrier()
    for s in range(args.steps):
        first = (s * 128) % (x_train.shape[0] - 128) + rank * shard
        idx = torch.arange(first, first + shard)
        calls.clear()
        t0 = time.monotonic()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(norm(x_train[idx])), y_train[idx])
        t1 = time.monotonic()
        loss.backward()
        t2 = time.monotonic()
        opt.step()
        t3 = time.monotonic()
        rows.append(dict(step=t3 - t0, forward=t1 - t0, backward=t2 - t1, optimizer=t3 - t2,
                         buckets=[(a - t1, b - t1) for a, b in sorted(calls)]))
    rows = rows[args.warmup:]
    ms = lambda v: None if v is None else round(1000 * v, 2)  # noqa: E731
    out = {"kind": "phases", "config": args.config, "hook": extra, "ranks": world,
           "link": os.environ.get("GW_LINK_RATE", "loopback"), "steps": len(rows),
           "load1": round(os.getloadavg()[0], 2)}
    for k in ("step", "forward", "backward", "optimizer"):
        out[k + "_ms"] = ms(median([r[k] for r in rows]))
    n = max((len(r["buckets"]) for r in rows), default=0)
    out["buckets_ms"] = [[ms(median([r["buckets"][i][0] for r in rows if len(r["buckets"]) > i])),
                          ms(median([r["buckets"][i][1] for r in rows if len(r["buckets"]) > i]))] for i in range(n)]
    if rank == 0:
        print(json.dumps(out), flush=True)
    if state is not None:
        state.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
