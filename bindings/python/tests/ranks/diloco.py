"""One rank of the gradwire.torch.DiLoCo tests, with torchrun's variables: a small MLP trained by its own
inner optimizer (AdamW), no DDP, and DiLoCo's outer loop through gradwire.

  diloco.py identical CODEC FRAGMENTS     after every outer step every rank holds the same parameters
  diloco.py save-restore                  a run saved halfway and resumed equals an uninterrupted one, bit for
                                          bit; a checkpoint of another outer configuration is refused
  diloco.py converges                     the loss falls
Prints "rank R ok" at the end.
"""
import sys

import torch
import torch.distributed as dist

import gradwire
import gradwire.torch as gwt

INNER = 4


def model_of():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(32, 16, generator=g)
    return x, x[:, :4].sum(dim=1, keepdim=True) - x[:, 4:6].prod(dim=1, keepdim=True)


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def make(codec="int8", fragments=1, delay=0, outer_lr=0.7):
    model = model_of()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    d = gwt.DiLoCo(model, opt, codec=codec, error_feedback=codec != "none", inner_steps=INNER,
                   fragments=fragments, delay=delay, outer_lr=outer_lr, outer_momentum=0.9, bucket_bytes=1024)
    return model, opt, d


def train(model, opt, d, rank, start, stop, on_step=None):
    losses = []
    for step in range(start, stop):
        x, y = batch(rank, step)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        d.step()
        losses.append(loss.item())
        if on_step:
            on_step(step)
    return losses


def identical(model):
    f = flat(model)
    out = [torch.empty_like(f) for _ in range(dist.get_world_size())]
    dist.all_gather(out, f)
    return all(torch.equal(o, out[0]) for o in out)


def main():
    case = sys.argv[1]
    gwt.init_process_group("gloo")
    rank = dist.get_rank()
    if case == "identical":
        codec, fragments = sys.argv[2], int(sys.argv[3])
        model, opt, d = make(codec, fragments)
        assert d.sync.bucket_count() >= fragments, d.sync.bucket_count()

        def check(step):
            # With one fragment every parameter takes the outer step together: all alike afterwards.
            if step % INNER == 0 and fragments == 1:
                assert identical(model), f"step {step}: the ranks' parameters differ after the outer step"
        train(model, opt, d, rank, 0, 4 * INNER + 1, check)
        assert d.outer_steps == 1 + 4 * fragments, d.outer_steps  # step 0 (the anchors), 4 per fragment
        st = d.stats()
        print(f"rank {rank} wire bytes {st['wire_bytes']} syncs {st['syncs']}")
        d.close()
    elif case == "save-restore":
        model, opt, d = make("int8", 2, 1)
        train(model, opt, d, rank, 0, 15)
        whole = flat(model)
        d.close()
        model, opt, d = make("int8", 2, 1)
        train(model, opt, d, rank, 0, 7)  # step 6 starts an exchange that step 7 applies: saved in flight
        saved = {"model": {k: v.clone() for k, v in model.state_dict().items()}, "diloco": d.state_dict()}
        d.close()
        model, opt, d = make("int8", 2, 1)
        model.load_state_dict(saved["model"])
        d.load_state_dict(saved["diloco"])
        train(model, opt, d, rank, 7, 15)
        assert torch.equal(flat(model), whole), "the resumed run differs from the uninterrupted one"
        d.close()
        model, opt, d = make("int8", 2, 1, outer_lr=0.5)
        try:
            d.load_state_dict(saved["diloco"])
            raise AssertionError("a checkpoint of another outer configuration was accepted")
        except gradwire.MismatchError as e:
            assert "another outer configuration" in str(e), str(e)
        d.close()
    elif case == "converges":
        model, opt, d = make("int8", 1)
        losses = train(model, opt, d, rank, 0, 60)
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        print(f"rank {rank} loss {first:.4f} -> {last:.4f}")
        assert last < 0.5 * first, (first, last)
        d.close()
    dist.destroy_process_group()
    print(f"rank {rank} ok")


if __name__ == "__main__":
    main()
