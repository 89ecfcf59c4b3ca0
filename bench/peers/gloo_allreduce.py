#!/usr/bin/python3
"""The gloo (PyTorch) peer of bench P7: torch.distributed.all_reduce (sum) of COUNT float32 over the gloo
backend, one warm-up and REPS timed repetitions, each started after a barrier and timed as the slowest
rank's. One rank per process, started by `gradwire run` (GW_RANK, GW_WORLD_SIZE, GW_ROOT_ADDR,
GW_ROOT_PORT; inside the emulated cluster GLOO_SOCKET_IFNAME is set). Rank 0 prints one JSON line:
{"peer": "gloo all_reduce", "ranks": n, "count": COUNT, "seconds": [...]}. Needs Debian's python3-torch.

    gradwire run -n 4 --ranks-per-node 2 --link 1gbit -- /usr/bin/python3 gloo_allreduce.py COUNT REPS
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gloo_allreduce.py COUNT REPS (inside gradwire run)")
    count, reps = int(sys.argv[1]), int(sys.argv[2])
    rank, size = int(os.environ["GW_RANK"]), int(os.environ["GW_WORLD_SIZE"])
    os.environ.setdefault("MASTER_ADDR", os.environ.get("GW_ROOT_ADDR", "127.0.0.1"))
    os.environ["MASTER_PORT"] = os.environ["GW_ROOT_PORT"]
    dist.init_process_group("gloo", rank=rank, world_size=size)
    x = torch.ones(count, dtype=torch.float32)
    seconds = []
    for rep in range(reps + 1):
        x.fill_(1.0)
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(x)
        mine = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        if float(x[0]) != float(size) or float(x[-1]) != float(size):
            sys.exit(f"gloo_allreduce: wrong result {float(x[0])} (expected {size})")
        if rep > 0:
            seconds.append(float(mine[0]))
    if rank == 0:
        print(json.dumps({"peer": "gloo all_reduce", "ranks": size, "count": count, "seconds": seconds}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
