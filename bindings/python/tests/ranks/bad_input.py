"""One rank of the hook's bad-input tests (test_ddp.py), with torchrun's variables: each case is wrong on
one rank or on every rank, and every rank must raise a gradwire error (never wait for the others). Prints
"rank R raised CLASS: MESSAGE" and exits 0 when the case raised, 1 when it did not.

  bad_input.py codecs        rank 0 int8, the others fp16
  bad_input.py rules         the same codec, but rank 1 sends biases through "none" ([[rules]])
  bad_input.py group-size    DDP over the default group, the hook over a group of rank 0 only
  bad_input.py comm-size     gradwire.Comm of world size 3 over a store rendezvous of the default group
  bad_input.py device        rank 1's gradient bucket on another device (meta) than the CPU ones of the others
  bad_input.py missing       rank 1 makes no hook: rank 0's rendezvous times out (5 s) naming rank 1
"""
import os
import sys
import time

import torch
import torch.distributed as dist

import gradwire
import gradwire.torch as gwt

TIMEOUT = 60.0  # gradwire's rendezvous and collectives: a hang ends here instead of at the test's guard


class Bucket:
    """What the hook reads of DDP's GradBucket."""

    def __init__(self, buffer, index=0):
        self._buffer, self._index = buffer, index

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def parameters(self):
        return []


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def train_step(ddp):
    ddp.zero_grad()
    ddp(torch.randn(8, 16)).square().mean().backward()


def run(case, rank, world):
    if case == "codecs":
        with gwt.HookState(codec="int8" if rank == 0 else "fp16", timeout=TIMEOUT):
            pass
    elif case == "rules":
        m = model()
        ddp = torch.nn.parallel.DistributedDataParallel(m)
        rules = [{"match": "*.bias", "codec": "none"}] if rank == 1 else None
        with gwt.HookState(codec="int8", rules=rules, model=m, timeout=TIMEOUT) as state:
            ddp.register_comm_hook(state, gwt.hook)
            for _ in range(2):
                train_step(ddp)
    elif case == "group-size":
        ddp = torch.nn.parallel.DistributedDataParallel(model())
        solo = dist.new_group([0])
        with gwt.HookState(codec="int8", model=ddp, process_group=solo, timeout=TIMEOUT):
            pass
    elif case == "comm-size":
        with gradwire.Runtime() as rt:
            gradwire.Comm(rt, world_size=world + 1, allgather=gwt.allgather_over(timeout=TIMEOUT)).close()
    elif case == "device":
        with gwt.HookState(codec="int8", timeout=TIMEOUT) as state:
            buf = torch.ones(1000, device="meta" if rank == 1 else "cpu")
            state.submit(Bucket(buf)).wait()
    elif case == "missing":
        if rank == 1:
            print("rank 1 makes no hook", flush=True)
            return "no hook"
        with gwt.HookState(codec="int8", timeout=5.0):
            pass
    else:
        raise SystemExit(f"unknown case {case}")


def main():
    case = sys.argv[1]
    torch.set_num_threads(1)
    gwt.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        result = run(case, rank, world)
    except gradwire.Error as e:
        print(f"rank {rank} raised {type(e).__name__}: {e}", flush=True)
        code = 0
    except RuntimeError as e:  # DDP's backward re-raises the hook's error as a RuntimeError
        print(f"rank {rank} raised RuntimeError: {e}", flush=True)
        code = 0
    else:
        code = 0 if result == "no hook" else 1
        if code:
            print(f"rank {rank}: no error in case {case}", flush=True)
    # No collective here (a rank that raised early must not wait in one): the ranks meet in torch's store,
    # bounded, so that rank 0, which serves the store, does not exit while the others still use it.
    try:
        store = dist.distributed_c10d._get_default_store()
        store.add("bad_input/done", 1)
        for _ in range(600):
            if store.add("bad_input/done", 0) >= world:
                break
            time.sleep(0.1)
    except RuntimeError:
        pass
    os._exit(code)


if __name__ == "__main__":
    main()
