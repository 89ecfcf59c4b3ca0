#!/usr/bin/python3
"""gloo peer of `gradwire bench` P8: torch.distributed's reduce-scatter and all-gather (gloo backend) of COUNT
f32 values on N ranks (COUNT / N per rank), the reduce-scatter averaged like gradwire's (sum, then divide by
the world size), REPS timed runs of each after one warm-up, each from a barrier to completion, as the slowest
rank's time.

gloo has `reduce_scatter_tensor` and `all_gather_into_tensor` only in newer PyTorch releases; where they are
missing (Debian's 1.13: "ProcessGroup gloo does not support _reduce_scatter_base", no `reduce_scatter` at
all, no `_allgather_base`) the peer uses what gloo has with the same bytes on the wire: the reduce-scatter as
`all_to_all_single` of the shards plus a local sum, the all-gather as `all_gather` into views of the output.
The JSON names the operation used.

One rank per process, started by `gradwire run -n N [--link RATE] -- PYTHON torch_shards.py COUNT REPS`
(the rendezvous of torch_allreduce.py, whose init_gloo it imports). Rank 0 prints one JSON line:
{"peer": "gloo", "reduce_scatter": [...], "allgather": [...], "reduce_scatter_op": ..., "allgather_op": ...,
 "count": COUNT, "world": N, "torch": VERSION}.
"""
import json
import sys
import time

try:
    import torch
    import torch.distributed as dist
except ImportError as e:  # reported by the suite, which skips the peer
    sys.exit(f"torch_shards: PyTorch is not importable ({e})")

from torch_allreduce import init_gloo  # beside this file, installed or in the source tree


def works(f):
    try:
        f()
        return True
    except RuntimeError:
        return False


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: torch_shards.py COUNT REPS")
    count, reps = int(sys.argv[1]), int(sys.argv[2])
    rank, world = init_gloo()
    if count % world:
        sys.exit(f"torch_shards: COUNT {count} is not divisible by the {world} ranks")
    part = count // world
    gen = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(count, generator=gen)
    shard = torch.empty(part)
    full = torch.empty(count)
    received = torch.empty(count)

    # Every rank probes alike, so all take the same path.
    native_rs = hasattr(dist, "reduce_scatter_tensor") and works(lambda: dist.reduce_scatter_tensor(shard, x))
    native_ag = hasattr(dist, "all_gather_into_tensor") and works(lambda: dist.all_gather_into_tensor(full, shard))

    def reduce_scatter():
        if native_rs:
            dist.reduce_scatter_tensor(shard, x)
        else:
            dist.all_to_all_single(received, x)
            torch.sum(received.view(world, part), dim=0, out=shard)
        shard.div_(world)

    views = list(full.chunk(world))

    def all_gather():
        if native_ag:
            dist.all_gather_into_tensor(full, shard)
        else:
            dist.all_gather(views, shard)

    seconds = {"reduce_scatter": [], "allgather": []}
    for rep in range(reps + 1):
        for name, op in (("reduce_scatter", reduce_scatter), ("allgather", all_gather)):
            dist.barrier()
            t0 = time.perf_counter()
            op()
            elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
            if rep > 0:
                seconds[name].append(elapsed.item())
    if rank == 0:
        print(json.dumps({"peer": "gloo", **seconds,
                          "reduce_scatter_op": "reduce_scatter_tensor" if native_rs else "all_to_all_single+sum",
                          "allgather_op": "all_gather_into_tensor" if native_ag else "all_gather",
                          "count": count, "world": world, "torch": torch.__version__}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
