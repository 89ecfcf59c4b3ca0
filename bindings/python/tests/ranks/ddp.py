"""One rank of the DDP tests, with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT):
trains a small MLP for a few steps with gradwire's hook and checks that every rank holds the same parameters.

  ddp.py --codec int8 --error-feedback --steps 6      the hook; parameters identical across ranks
  ddp.py --codec powersgd --compare --expect-compressed  powersgd gets each parameter's shape: the average
                                                      differs from DDP's (the matrices are compressed)
  ddp.py --codec none --compare                       also trains a copy with DDP's own allreduce and checks
                                                      that the hook averaged the same (within fp32 rounding)
  ddp.py --die-rank 2 --die-step 3                    that rank exits mid-training; the others must raise a
                                                      gradwire error with its message (prints "raised ...")
  ddp.py --refuse-cpu-collectives                     torch.distributed's collectives raise on CPU tensors, as
                                                      an NCCL group does, from before the hook is made until
                                                      training ends: the hook must not call them
  ddp.py --subgroup                                   DDP and the hook over a group made with new_group
  ddp.py --backend nccl --device cuda --save F        a GPU run (tests/gpu/check.sh); --save writes the final
                                                      parameters (torch.save) for a comparison across runs
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

import gradwire
import gradwire.torch as gwt


def model_of(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


_COLLECTIVES = ("all_gather", "all_gather_object", "all_gather_into_tensor", "_all_gather_base", "all_reduce",
                "broadcast", "broadcast_object_list", "gather", "gather_object", "scatter", "scatter_object_list",
                "reduce", "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "barrier",
                "monitored_barrier", "send", "recv", "isend", "irecv")


def refuse_cpu_collectives():
    """Makes torch.distributed's collectives raise as an NCCL process group does on CPU tensors (objects and
    barriers, which NCCL would run on a device, raise too). Returns the function that restores them."""
    import torch.distributed.distributed_c10d as c10d
    saved = []

    def refusing(name):
        def refuse(*args, **kwargs):
            raise RuntimeError(f"refused like NCCL: torch.distributed.{name} called with CPU tensors "
                               f"(the gradwire hook must not use the process group's collectives)")
        return refuse

    for name in _COLLECTIVES:
        for mod in (dist, c10d):
            if hasattr(mod, name):
                saved.append((mod, name, getattr(mod, name)))
                setattr(mod, name, refusing(name))
    def restore():
        for mod, name, fn in saved:
            setattr(mod, name, fn)
    return restore


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--codec", default="int8")
    p.add_argument("--error-feedback", action="store_true")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--compare", action="store_true")
    p.add_argument("--expect-compressed", action="store_true",
                   help="with --compare: the result must differ from DDP's allreduce (powersgd saw the shapes)")
    p.add_argument("--die-rank", type=int, default=-1)
    p.add_argument("--die-step", type=int, default=3)
    p.add_argument("--bucket-cap-mb", type=float, default=0.1)
    p.add_argument("--timeout", type=float, default=120.0, help="gradwire's rendezvous and collectives")
    p.add_argument("--refuse-cpu-collectives", action="store_true")
    p.add_argument("--subgroup", action="store_true", help="DDP and the hook over a new group of every rank")
    p.add_argument("--backend", default="gloo")
    p.add_argument("--device", default="cpu", help="cpu, or cuda (each rank its LOCAL_RANK's device)")
    p.add_argument("--rounds-batch", type=int, default=None, help="HookState rounds_batch (powersgd)")
    p.add_argument("--save", default=None, help="torch.save the final parameters (on the CPU) to this file")
    args = p.parse_args()
    torch.set_num_threads(1)
    gwt.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    ddp_kw = {}
    if args.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        ddp_kw = {"device_ids": [device.index]}
    if args.subgroup:
        ddp_kw["process_group"] = dist.new_group(list(range(world)))
    model = model_of(1).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb, **ddp_kw)
    if args.compare:
        ref_model = model_of(1).to(device)
        ref = torch.nn.parallel.DistributedDataParallel(ref_model, bucket_cap_mb=args.bucket_cap_mb, **ddp_kw)
        ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    restore = refuse_cpu_collectives() if args.refuse_cpu_collectives else (lambda: None)
    opts = {"ratio": 0.05} if args.codec == "topk" else {"rank": 2} if args.codec == "powersgd" else {}
    if args.rounds_batch is not None:
        opts["rounds_batch"] = args.rounds_batch
    state = gwt.HookState(codec=args.codec, error_feedback=args.error_feedback, model=model, timeout=args.timeout,
                          bucket_cap_mb=25, process_group=ddp_kw.get("process_group"), **opts)
    ddp.register_comm_hook(state, gwt.hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()
    try:
        for step in range(args.steps):
            if rank == args.die_rank and step == args.die_step:
                print(f"rank {rank} dies at step {step}", flush=True)
                os._exit(3)
            x, y = (t.to(device) for t in batch(rank, step))
            opt.zero_grad()
            loss_fn(ddp(x), y).backward()
            opt.step()
            if args.compare:
                ref_opt.zero_grad()
                loss_fn(ref(x), y).backward()
                ref_opt.step()
    except RuntimeError as e:  # DDP re-raises the hook's exception from backward
        print(f"rank {rank} raised at step {step}: {e}", flush=True)
        os._exit(0 if args.die_rank >= 0 else 1)
    if args.die_rank >= 0:
        print(f"rank {rank}: no error although rank {args.die_rank} died", flush=True)
        os._exit(1)
    restore()
    # Every rank holds the same parameters.
    mine = flat(model)
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine)
    same = all(torch.equal(every[0], e) for e in every)
    print(f"rank {rank} parameters identical across ranks: {same}", flush=True)
    ok = same
    if args.compare:
        diff = (flat(ref_model) - mine).abs().max().item()
        print(f"rank {rank} max difference to DDP's own allreduce: {diff:.3g}", flush=True)
        ok = ok and (diff > 1e-4 if args.expect_compressed else diff < 1e-4)
    sd = state.state_dict()
    state.load_state_dict(sd)
    runs = sd["runs"]
    has_ef = any(r["ef"] for r in runs.values())
    print(f"rank {rank} hook state: {len(runs)} runs, error feedback {'saved' if has_ef else 'none'}, "
          f"buckets {state.buckets}", flush=True)
    if args.error_feedback and args.codec != "none":
        ok = ok and has_ef
    if args.codec == "powersgd":  # its warm starts and residuals travel in the hook's state
        has_state = any(r.get("codec_state") for r in runs.values())
        print(f"rank {rank} codec state saved: {has_state}", flush=True)
        print(f"rank {rank} rounds batches {state.batches} over {args.steps} steps", flush=True)
        ok = ok and has_state
    if args.save and rank == 0:
        torch.save(mine.cpu(), args.save)
    state.close()
    dist.destroy_process_group()
    print(f"rank {rank} {'ok' if ok else 'FAILED'}", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
