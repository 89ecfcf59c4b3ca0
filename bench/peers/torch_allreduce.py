#!/usr/bin/python3
"""gloo peer of `gradwire bench` P5: torch.distributed's allreduce (gloo backend, Debian's python3-torch)
of COUNT f32 values, averaged like gradwire's (sum, then divide by the world size), REPS timed runs after
one warm-up, each from a barrier to completion, as the slowest rank's time.

One rank per process, started by `gradwire run -n N [--link RATE] -- /usr/bin/python3 torch_allreduce.py
COUNT REPS`: the rank and world size come from GW_RANK / GW_WORLD_SIZE, the rendezvous from MASTER_ADDR
(rank 0's address; gradwire run sets it in the emulated cluster, else 127.0.0.1) and GW_ROOT_PORT + 1.
Rank 0 prints one JSON line: {"peer": "gloo", "seconds": [...], "count": COUNT, "world": N}.
"""
import json
import os
import sys
import time

try:
    import torch
    import torch.distributed as dist
except ImportError as e:  # reported by the suite, which skips the peer
    sys.exit(f"torch_allreduce: PyTorch is not importable ({e}); install Debian's python3-torch")


def init_gloo():
    """Joins the gloo process group of the ranks `gradwire run` started (rendezvous above; one thread per
    rank, as the ranks share the machine's cores). Returns (rank, world size). P8's peer uses it too."""
    rank = int(os.environ.get("GW_RANK", os.environ.get("RANK", "0")))
    world = int(os.environ.get("GW_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "GW_ROOT_PORT" in os.environ:
        os.environ["MASTER_PORT"] = str(int(os.environ["GW_ROOT_PORT"]) + 1)
    if os.environ["MASTER_ADDR"] == "127.0.0.1":
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    return rank, world


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: torch_allreduce.py COUNT REPS")
    count, reps = int(sys.argv[1]), int(sys.argv[2])
    rank, world = init_gloo()
    gen = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(count, generator=gen)
    seconds = []
    for rep in range(reps + 1):
        y = x.clone()
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(y)
        y /= world
        elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        if rep > 0:
            seconds.append(elapsed.item())
    if rank == 0:
        print(json.dumps({"peer": "gloo", "seconds": seconds, "count": count, "world": world}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
