"""gradwire.torch on a one-rank process group: configuration, bad input raising with gradwire's message instead
of hanging, checkpoints of the hook's state. (Several ranks: test_ddp.py.)"""
import os

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

import gradwire  # noqa: E402
import gradwire.torch as gwt  # noqa: E402


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    store = tmp_path_factory.mktemp("pg") / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def model_of(dtype=torch.float32):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(dtype)


def step(ddp, dtype=torch.float32):
    x = torch.randn(8, 32, dtype=dtype)
    ddp.zero_grad()
    ddp(x).square().mean().backward()


def test_needs_a_process_group():
    if dist.is_initialized():
        pytest.skip("the process group of another test is up")
    with pytest.raises(gradwire.StateError, match="init_process_group"):
        gwt.HookState(codec="int8")


def test_configuration_one_way_only(group):
    with pytest.raises(gradwire.InvalidArgumentError, match="one way"):
        gwt.HookState(codec="int8", text='[codec]\nname = "fp16"\n')
    with pytest.raises(gradwire.InvalidArgumentError, match="need codec"):
        gwt.HookState(ratio=0.1)
    with pytest.raises(gradwire.ConfigError, match="ratoi"):
        gwt.HookState(codec="topk", ratoi=0.1)


def test_one_rank_average_is_the_gradient(group):
    model = model_of()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    with gwt.HookState(codec="none", model=model) as state:
        ddp.register_comm_hook(state, gwt.hook)
        torch.manual_seed(5)
        step(ddp)
        got = [p.grad.clone() for p in model.parameters()]
        ref = model_of()
        torch.manual_seed(5)
        x = torch.randn(8, 32)
        ref(x).square().mean().backward()
        for g, r in zip(got, ref.parameters()):
            assert torch.allclose(g, r.grad, atol=1e-6)
        assert state.buckets == 1


def test_rules_and_error_feedback_checkpoint(group):
    model = model_of()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    rules = [{"match": "*.bias", "codec": "none"}]
    with gwt.HookState(codec="topk", error_feedback=True, ratio=0.1, rules=rules, model=model) as state:
        ddp.register_comm_hook(state, gwt.hook)
        step(ddp)
        step(ddp)
        sd = state.state_dict()
        codecs = sorted({r["codec"] for r in sd["runs"].values()})
        assert codecs == ["none", "topk"], sd["runs"].keys()  # biases through "none", weights through topk
        assert any(r["ef"] for r in sd["runs"].values() if r["codec"] == "topk")
        assert all(r["step"] >= 1 for r in sd["runs"].values())  # DDP rebuilds its buckets after step 1
        step(ddp)
        after = [p.grad.clone() for p in model.parameters()]
        state.load_state_dict(sd)
        assert {k: r["step"] for k, r in state.state_dict()["runs"].items()} == \
            {k: r["step"] for k, r in sd["runs"].items()}
        # The restored state reproduces the step taken from it.
        torch.manual_seed(11)
        step(ddp)
        g1 = [p.grad.clone() for p in model.parameters()]
        state.load_state_dict(sd)
        torch.manual_seed(11)
        step(ddp)
        g2 = [p.grad.clone() for p in model.parameters()]
        assert all(torch.equal(a, b) for a, b in zip(g1, g2))
        assert len(after) == len(g1)
        with pytest.raises(gradwire.VersionError):
            state.load_state_dict({"version": 99})
        with pytest.raises(gradwire.MismatchError, match="codec"):
            state.load_state_dict(dict(sd, codec="int8"))


def test_wrong_dtype_raises_from_backward(group):
    model = model_of(torch.float64)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    with gwt.HookState(codec="int8") as state:
        ddp.register_comm_hook(state, gwt.hook)
        with pytest.raises(RuntimeError, match="float32"):
            step(ddp, torch.float64)


def test_bucket_larger_than_configured_raises(group):
    model = model_of()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    with gwt.HookState(codec="int8", bucket_cap_mb=0.001) as state:
        ddp.register_comm_hook(state, gwt.hook)
        with pytest.raises(RuntimeError, match="bucket_cap_mb"):
            step(ddp)


def test_process_group_helper_maps_gradwire_run_variables(monkeypatch):
    seen = {}
    monkeypatch.delenv("RANK", raising=False)
    for k, v in {"GW_RANK": "1", "GW_WORLD_SIZE": "3", "GW_ROOT_ADDR": "127.0.0.1", "GW_ROOT_PORT": "23456"}.items():
        monkeypatch.setenv(k, v)
    for k in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(dist, "init_process_group", lambda backend, **kw: seen.update(
        backend=backend, rank=os.environ["RANK"], world=os.environ["WORLD_SIZE"], port=os.environ["MASTER_PORT"]))
    gwt.init_process_group()
    assert seen == {"backend": "gloo", "rank": "1", "world": "3", "port": "23456"}


class _CudaDevice:
    type = "cuda"

    def __init__(self, index):
        self.index = index

    def __str__(self):
        return f"cuda:{self.index}"


class _CudaTensorStandIn:
    """What the binding reads of a CUDA torch tensor (this machine's PyTorch has no CUDA): its dtype, device,
    layout and address."""

    __module__ = "torch.standin"

    def __init__(self, n=10, contiguous=True):
        self.dtype, self.device, self.n, self.contiguous = torch.float32, _CudaDevice(1), n, contiguous

    def data_ptr(self):
        return 0x7F0000001000

    def numel(self):
        return self.n

    def element_size(self):
        return 4

    def is_contiguous(self):
        return self.contiguous

    def stride(self):
        return (1,) if self.contiguous else (2,)


def test_cuda_tensors_carry_device_and_stream_to_the_collectives(monkeypatch):
    from gradwire import _core, _lib

    class Stream:
        cuda_stream = 0x5EED

    seen = []
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: seen.append(device) or Stream())
    t = _CudaTensorStandIn()
    buf = _core._device_buffer(t, "x", writable=True, dtype="f32")
    assert buf.tensor.memory == _lib.GW_MEMORY_CUDA
    assert buf.tensor.device == 1
    assert buf.tensor.stream == 0x5EED
    assert buf.tensor.data == 0x7F0000001000 and buf.tensor.count == 10 and buf.nbytes == 40
    assert seen and seen[0] is t.device  # the tensor's own device's stream
    assert buf.owner is t  # kept alive with the request
    with pytest.raises(gradwire.InvalidArgumentError, match="contiguous"):
        _core._device_buffer(_CudaTensorStandIn(contiguous=False), "x")


def test_cuda_tensors_refused_where_a_host_payload_is_written():
    # Codec.encode writes the payload into host bytes: a device tensor there is refused before any C call.
    rt = gradwire.Runtime()
    with gradwire.Codec(rt, "int8") as codec, pytest.raises(gradwire.UnsupportedError, match=r"\.cpu\(\)"):
        codec.encode(_CudaTensorStandIn())
    rt.close()


def test_import_gradwire_gives_the_torch_submodule_lazily():
    """`import gradwire` does not import torch; `gradwire.torch.HookState` then works (PEP 562)."""
    import subprocess
    import sys
    from conftest import PACKAGE_ROOT
    code = ("import sys, gradwire\n"
            "assert 'torch' not in sys.modules and 'gradwire.torch' not in sys.modules, 'imported eagerly'\n"
            "assert 'torch' in dir(gradwire)\n"
            "h = gradwire.torch.HookState\n"
            "import gradwire.torch as gwt\n"
            "assert h is gwt.HookState and 'torch' in sys.modules\n"
            "try:\n    gradwire.no_such_thing\nexcept AttributeError as e:\n    assert 'no_such_thing' in str(e)\n"
            "else:\n    raise SystemExit('no AttributeError')\n"
            "print('lazy ok')\n")
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "lazy ok" in r.stdout, r.stdout + r.stderr


def _refuse_collectives(monkeypatch):
    """torch.distributed's collectives raise, as an NCCL group's do on CPU tensors."""
    import torch.distributed.distributed_c10d as c10d

    def refuse(*a, **k):
        raise RuntimeError("refused like NCCL")
    for name in ("all_gather", "all_gather_object", "broadcast", "broadcast_object_list", "all_reduce", "barrier",
                 "gather", "scatter", "all_gather_into_tensor"):
        for mod in (dist, c10d):
            if hasattr(mod, name):
                monkeypatch.setattr(mod, name, refuse)


def test_rendezvous_goes_through_the_store_not_the_group(group, monkeypatch):
    _refuse_collectives(monkeypatch)
    model = model_of()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    with gwt.HookState(codec="int8", model=ddp) as state:  # the DDP model gives its process group
        ddp.register_comm_hook(state, gwt.hook)
        step(ddp)
        assert state.buckets >= 1
    # Each callback has a namespace of its own in the store, and each of its calls keys of its own.
    a, b = gwt.allgather_over(), gwt.allgather_over()
    assert a.namespace != b.namespace and a.namespace.startswith("gradwire/")
    assert (a.rank, a.world_size) == (0, 1)
    assert a(b"first") == [b"first"] and a(b"second") == [b"second"]
    assert gwt._has_key(a.store, f"{a.namespace}/rendezvous/1/0")  # what names missing ranks on a timeout
    assert not gwt._has_key(a.store, f"{a.namespace}/rendezvous/2/0")


def test_comm_refuses_a_callback_of_another_group_size(group):
    with gradwire.Runtime() as rt:
        with pytest.raises(gradwire.InvalidArgumentError, match="world_size is 2 but its allgather callback's group"):
            gradwire.Comm(rt, world_size=2, allgather=gwt.allgather_over(timeout=5))
        with pytest.raises(gradwire.InvalidArgumentError, match="rank is 1"):
            gradwire.Comm(rt, rank=1, world_size=1, allgather=gwt.allgather_over(timeout=5))
        # Left unset, the rank and world size are the callback's group's.
        with gradwire.Comm(rt, allgather=gwt.allgather_over(timeout=30)) as comm:
            assert (comm.rank, comm.size) == (0, 1)


class _Bucket:
    def __init__(self, buffer, index=0):
        self._buffer, self._index = buffer, index

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def parameters(self):
        return []


def test_bucket_on_another_device_than_the_first_fails_the_hook(group, monkeypatch):
    class Stream:
        cuda_stream = 0

    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: Stream())
    with gwt.HookState(codec="int8") as state:
        ones = torch.ones(100)
        assert torch.equal(state.submit(_Bucket(ones)).wait(), torch.ones(100))
        assert state.device == torch.device("cpu")
        with pytest.raises(gradwire.InvalidArgumentError,
                           match="lives on cuda:1 but this hook's earlier buckets on cpu"):
            state.submit(_Bucket(_CudaTensorStandIn(), 1)).wait()
        # This rank's own bad input failed the communicator: every later bucket says so at once.
        with pytest.raises(gradwire.Error, match="failed earlier"):
            state.submit(_Bucket(torch.ones(100))).wait()


def test_torch_imports_after_a_runtime_was_made_first():
    """A CUDA build of libgradwire loaded before torch would give torch an older CUDA runtime and NCCL (the
    system's) than its own, and `import torch` would fail: the binding imports torch before such a library."""
    import subprocess
    import sys
    from conftest import PACKAGE_ROOT
    code = ("import gradwire\n"
            "with gradwire.Runtime() as rt:\n    rt.plugins()\n"
            "import torch\n"
            "torch.ones(2).sum()\n"
            "print('torch after gradwire ok', torch.__version__)\n")
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    env.pop("GRADWIRE_TORCH_FIRST", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "torch after gradwire ok" in r.stdout, r.stdout + r.stderr


# ---- elastic mode on one rank (several ranks and failures: test_elastic.py) ----

def test_elastic_keywords_refused_with_a_clear_message(group):
    model = model_of()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(gradwire.UnsupportedError, match="delay"):
        gwt.DiLoCo(model, opt, inner_steps=4, fragments=2, delay=1, elastic=True)
    with pytest.raises(gradwire.InvalidArgumentError, match="min_ranks= .* elastic=True"):
        gwt.DiLoCo(model, opt, inner_steps=4, min_ranks=2)
    with pytest.raises(gradwire.InvalidArgumentError, match="one way"):
        gwt.DiLoCo(model, opt, text='[schedule]\nname = "diloco"\n', elastic=True)
    with pytest.raises(gradwire.InvalidArgumentError, match=r"\[elastic\] enabled = true"):
        gwt.ElasticDataParallel(model, opt, text='[codec]\nname = "none"\n')


def test_elastic_data_parallel_on_one_rank_is_the_optimizer_step(group):
    model, ref = model_of(), model_of()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    with gwt.ElasticDataParallel(model, opt, codec="none", min_ranks=1) as edp:
        assert (edp.rank, edp.world_size, edp.membership_epoch, edp.steps) == (0, 1, 0, 0)
        for i in range(3):
            x = torch.randn(8, 32, generator=torch.Generator().manual_seed(i))
            for m, o in ((model, opt), (ref, ref_opt)):
                o.zero_grad()  # set_to_none: the wrapper copies the new gradient into its own buffer
                m(x).square().mean().backward()
            assert edp.step() is True and not edp.membership_changed
            ref_opt.step()
        assert edp.steps == 3
        for p, q in zip(model.parameters(), ref.parameters()):
            assert torch.equal(p, q)


def test_elastic_diloco_on_one_rank_steps(group):
    model = model_of()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with gwt.DiLoCo(model, opt, codec="int8", inner_steps=2, elastic=True, min_ranks=1) as d:
        for i in range(5):
            opt.zero_grad()
            model(torch.randn(8, 32)).square().mean().backward()
            d.step()
            assert not d.membership_changed
        assert (d.steps, d.outer_steps, d.membership_epoch) == (5, 3, 0)


def test_optimizer_snapshot_of_the_agreed_step_is_put_back():
    from gradwire.torch import _Snapshots
    model = model_of()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def train_step():
        opt.zero_grad()
        model(torch.randn(8, 32)).square().mean().backward()
        opt.step()
    train_step()
    snaps = _Snapshots(opt)
    snaps.take(1, "counters of step 1")
    first = {k: v.clone() for k, v in opt.state[next(model.parameters())].items()}
    train_step()
    snaps.take(2)
    train_step()
    assert snaps.restore(1) == "counters of step 1"  # one step back: the state of step 1 again
    for k, v in opt.state[next(model.parameters())].items():
        assert torch.equal(v, first[k]), k
    train_step()  # changes the optimizer's state, not the copy kept for step 1
    snaps.take(2)
    assert snaps.restore(1) == "counters of step 1"
    for k, v in opt.state[next(model.parameters())].items():
        assert torch.equal(v, first[k]), k
    with pytest.raises(gradwire.StateError, match="continue from step 7"):
        snaps.restore(7)
