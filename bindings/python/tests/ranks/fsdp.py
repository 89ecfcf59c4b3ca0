"""One rank of the FSDP2 tests (tests/test_fsdp.py): 2 ranks on CPU with gloo, torchrun's variables.

  --mode compare    gradwire codec none: every sharded gradient equals FSDP2's default reduce-scatter's
                    bit for bit (2 ranks: the sum of two f32 values does not depend on the order, and AVG
                    divides it by 2 exactly)
  --mode int8       int8 gradients within the int8 bound of the default ones, and not identical
  --mode rules      int8 with [[rules]] sending the biases uncompressed: biases bit for bit, weights within
  --mode allgather  int8 reduce-scatter + int8 all-gather: every rank gathers the same weights, within the
                    int8 bound of the exact ones; training runs
  --mode divide     set_gradient_divide_factor(8) (PREMUL_SUM) and fp16 reduce_dtype (SUM with pre/post
                    division): bit for bit equal to FSDP2's default with the same settings
  --mode state      int8 + error feedback: 3 steps straight equal 2 steps, state_dict through torch.save,
                    a new compress() with load_state_dict, 1 step
  --mode bad-size | bad-shard | bad-device | mixed   bad input: each rank prints what it raised
Prints "rank R ok" at the end."""
import argparse
import copy
import io
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy

import gradwire
import gradwire.torch as gwt
import gradwire.torch.fsdp as gwf

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True)
p.add_argument("--steps", type=int, default=3)
args = p.parse_args()

gwt.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)


class Net(torch.nn.Module):
    # Odd sizes: FSDP2 pads each parameter's shards, so the buffers hold padding too.
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(37, 53)
        self.l2 = torch.nn.Linear(53, 29)
        self.l3 = torch.nn.Linear(29, 5)

    def forward(self, x):
        return self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))


def build(base, mp=None, divide=None):
    m = copy.deepcopy(base)
    kw = {"mp_policy": mp} if mp is not None else {}
    for layer in (m.l1, m.l2, m.l3):
        fully_shard(layer, **kw)
    fully_shard(m, **kw)
    if divide is not None:
        m.set_gradient_divide_factor(divide)
    return m


def batch(step):
    g = torch.Generator().manual_seed(1000 * step + rank)  # each rank its own data
    return torch.randn(16, 37, generator=g), torch.randn(16, 5, generator=g)


def train_step(m, opt, step):
    x, y = batch(step)
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(m(x), y)
    loss.backward()
    grads = {n: q.grad.to_local().clone() for n, q in m.named_parameters()}
    opt.step()
    return loss.detach(), grads


def say(msg):
    print(f"rank {rank} {msg}", flush=True)


base = Net()


def compare(kind, **kw):
    mp, divide = kw.pop("mp", None), kw.pop("divide", None)
    ref, gw = build(base, mp, divide), build(base, mp, divide)
    state = gwf.compress(gw, **kw)
    o_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    o_gw = torch.optim.SGD(gw.parameters(), lr=0.1)
    worst = 0.0
    for step in range(args.steps):
        _, g_ref = train_step(ref, o_ref, step)
        _, g_gw = train_step(gw, o_gw, step)
        for n in g_ref:
            a, b = g_ref[n], g_gw[n]
            assert a.dtype == b.dtype and a.shape == b.shape, (n, a.dtype, b.dtype, a.shape, b.shape)
            if kind == "exact" or (kind == "rules" and n.endswith("bias")):
                assert torch.equal(a, b), f"step {step} {n}: max |diff| {(a - b).abs().max().item()}"
            else:
                # int8 blockwise: each rank's shard is encoded once with a scale of max|block| / 127 and
                # rounded to the nearest step, so |error| <= max|g| / 254 per rank: the average's error is at
                # most the largest local gradient / 254. Bounded here by 4 % of the largest averaged gradient
                # (local gradients of two ranks are of the same size here), and the codec must have acted.
                bound = 0.04 * a.abs().max().item() + 1e-7
                d = (a - b).abs().max().item()
                worst = max(worst, d / (a.abs().max().item() + 1e-12))
                assert d <= bound, f"step {step} {n}: max |diff| {d} > {bound}"
        # Optimizer steps on the gw model used its own gradients: compare the next step from equal weights.
        with torch.no_grad():
            for q_ref, q_gw in zip(ref.parameters(), gw.parameters()):
                q_gw.to_local().copy_(q_ref.to_local())
    if kind != "exact":
        assert worst > 0, "int8 gradients equal the exact ones bit for bit: the codec did not act"
        say(f"int8 worst relative error {worst:.4g}")
    say(f"{state.reduce_scatters} reduce-scatters through gradwire")
    assert state.reduce_scatters == 3 * args.steps  # l1, l2, l3 (the root holds no parameter), state.reduce_scatters
    state.close()


def raised(fn):
    try:
        fn()
    except gradwire.Error as e:
        say(f"raised {type(e).__name__}: {e}")
        return e
    say("raised nothing")
    sys.exit(1)


if args.mode == "compare":
    compare("exact", codec="none")
elif args.mode == "int8":
    compare("int8", codec="int8")
elif args.mode == "rules":
    compare("rules", codec="int8", rules=[{"match": "*.bias", "codec": "none"}])
elif args.mode == "divide":
    compare("exact", codec="none", divide=8.0)
    say("divide factor 8 bit for bit")
    compare("exact", codec="none", mp=MixedPrecisionPolicy(reduce_dtype=torch.float16))
    say("fp16 reduce_dtype bit for bit")
elif args.mode == "allgather":
    ref, gw = build(base), build(base)
    state = gwf.compress(gw, codec="int8", all_gather_codec="int8")
    o_ref = torch.optim.SGD(ref.parameters(), lr=0.05)
    o_gw = torch.optim.SGD(gw.parameters(), lr=0.05)
    for step in range(args.steps):
        l_ref, _ = train_step(ref, o_ref, step)
        l_gw, _ = train_step(gw, o_gw, step)
        say(f"step {step} loss default {l_ref.item():.6f} gradwire {l_gw.item():.6f}")
    assert state.all_gathers >= 3 * args.steps, state.all_gathers
    # The gathered weights: the same bits on every rank, int8-close to the exact ones, not equal to them.
    gw.l1.unshard()
    got_w = gw.l1.weight.detach().clone()
    gw.l1.reshard()
    gathered = [torch.empty_like(got_w) for _ in range(world)]
    dist.all_gather(gathered, got_w)
    assert all(torch.equal(gathered[0], g) for g in gathered), "ranks gathered different weights"
    exact_w = gw.l1.weight.full_tensor()  # DTensor's own (gloo) all-gather of the sharded weights: exact
    d = (exact_w - got_w).abs().max().item()
    assert 0 < d <= exact_w.abs().max().item() / 127, f"all-gathered weight differs by {d}"
    say(f"int8 all-gather: same weights on every rank, max |diff| to the exact ones {d:.3g}")
    state.close()
elif args.mode == "state":
    a, b = build(base), build(base)
    kw = dict(codec="int8", error_feedback=True)
    sa, sb = gwf.compress(a, **kw), gwf.compress(b, **kw)
    oa, ob = torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.SGD(b.parameters(), lr=0.1)
    for step in range(3):
        _, ga = train_step(a, oa, step)
    for step in range(2):
        train_step(b, ob, step)
    sd = sb.state_dict()
    assert any(len(e["ef"]) > 0 for e in sd["entries"].values()), "no error-feedback residual saved"
    buf = io.BytesIO()
    torch.save(sd, buf)
    sb.close()
    sb2 = gwf.compress(b, **kw)
    try:
        sb2.load_state_dict(dict(sd, codec="fp16"))
        say("a checkpoint of another codec was accepted")
        sys.exit(1)
    except gradwire.MismatchError as e:
        say(f"other codec refused: {e}")
    sb2.load_state_dict(torch.load(io.BytesIO(buf.getvalue()), weights_only=False))
    _, gb = train_step(b, ob, 2)
    for n in ga:
        assert torch.equal(ga[n], gb[n]), f"{n} after the state round trip differs by {(ga[n] - gb[n]).abs().max()}"
    say("state round trip: step 3 equal bit for bit")
    sa.close(), sb2.close()
elif args.mode == "bad-size":
    one = gradwire.Comm(gradwire.Runtime(text='[codec]\nname = "none"\n'), rank=0, world_size=1,
                        allgather=lambda d: [d])
    m = build(base)
    e = raised(lambda: gwf.compress(m, codec="none", comm=one))
    assert isinstance(e, gradwire.InvalidArgumentError)
elif args.mode == "bad-shard":
    m = build(base)
    st = gwf.compress(m, codec="int8")
    rs = m.l1._get_fsdp_state()._fsdp_param_groups[0]._reduce_scatter_comm
    e = raised(lambda: rs(output_tensor=torch.empty(3), input_tensor=torch.empty(7), group=dist.group.WORLD,
                          op=dist.ReduceOp.AVG))
    assert isinstance(e, gradwire.InvalidArgumentError)
    st.close()
elif args.mode == "bad-device":
    m = build(base)
    st = gwf.compress(m, codec="int8")
    rs = m.l1._get_fsdp_state()._fsdp_param_groups[0]._reduce_scatter_comm
    dev = "meta" if rank == 1 else "cpu"
    e = raised(lambda: rs(output_tensor=torch.zeros(4, device=dev), input_tensor=torch.zeros(8, device=dev),
                          group=dist.group.WORLD, op=dist.ReduceOp.AVG))
    assert isinstance(e, gradwire.InvalidArgumentError), type(e)
    assert "meta" in str(e), e
    e2 = raised(lambda: train_step(m, torch.optim.SGD(m.parameters(), lr=0.1), 0))
    st.close()
elif args.mode == "mixed":
    m = build(base)
    e = raised(lambda: gwf.compress(m, codec="int8" if rank == 0 else "none"))
    assert isinstance(e, gradwire.MismatchError)
else:
    raise SystemExit(f"unknown mode {args.mode}")
say("ok")
dist.destroy_process_group()
