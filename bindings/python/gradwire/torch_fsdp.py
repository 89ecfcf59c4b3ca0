"""gradwire for PyTorch FSDP2 (torch.distributed.fsdp.fully_shard): gradient reduce-scatter and, as an
option, parameter all-gather through gradwire codecs. Imported as gradwire.torch.fsdp.

    import gradwire.torch as gwt
    import gradwire.torch.fsdp
    fully_shard(layer) for each layer; fully_shard(model)
    state = gwt.fsdp.compress(model, codec="int8", error_feedback=True, all_gather_codec="int8")
    ... train; state.state_dict() / state.load_state_dict() with the checkpoint; state.close()

Design (docs/pytorch.md, "FSDP2"):
* compress() installs one gradwire ReduceScatter (and, with all_gather_codec, one AllGather) on every
  FSDPModule of the model through FSDPModule.set_custom_reduce_scatter / set_custom_all_gather. FSDP2 calls
  them with its flat buffers: the reduce-scatter input holds world_size shards, each the concatenation of
  every parameter's padded shard, in MixedPrecisionPolicy.reduce_dtype (the parameters' dtype without
  one); the all-gather output holds every rank's concatenated shards and the input is this rank's part of it.
* Divide factor: FSDP2 decides it before the call (_get_gradient_divide_factors) and hands the
  reduce-scatter `op`: ReduceOp.AVG (no set_gradient_divide_factor, f32/bf16: gradwire averages),
  ReduceOp.SUM (fp16 reduce_dtype or set_force_sum_reduction_for_comms: FSDP2 divides the input before
  and the output after, gradwire sums), or PREMUL_SUM(1/factor) (set_gradient_divide_factor: gradwire
  multiplies the input by 1/factor, then sums). Any other op is refused.
* reduce_dtype: the input arrives in it and the output leaves in it; gradwire encodes f32, f16 and bf16
  and sums in f32 at each shard's owner (gw_reduce_scatter_compressed).
* The communicator is made over the FSDP model's shard process group by the DDP hook's rendezvous
  (gradwire.torch.allgather_over: torch's c10d store, never the group's collectives), on a progress
  thread that owns it and runs every gradwire call (FSDP2 may call the comms from autograd's threads).
  Or comm= takes a gradwire.Comm the caller made; its calls then run on the caller's thread.
* Per-parameter [[rules]] (glob on the parameter's fully qualified name, max_bytes) pick each
  parameter's codec; the buffer's parameters are grouped by codec and each group is one compressed
  reduce-scatter of world_size shards made of those parameters' shards.
* Error feedback per shard group for lossy codecs (gw_reduce_scatter_compressed_ef), keyed by the FSDP
  module and the codec group; state_dict() carries residuals and step counters.
* Bad input raises gradwire's exception on every rank: checks every rank makes alike (a process group of
  another size than the communicator, a shard count that does not divide, a codec other ranks do not
  use) raise where they are made; one rank's own bad input (a tensor on another device) leaves the
  message in the store and fails the communicator, and the other ranks raise with that message.
"""
import fnmatch
import threading
import queue

import torch
import torch.distributed as dist

from . import _core
from ._core import Comm, Codec, ErrorFeedback, Runtime
from . import torch as _gwt

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

__all__ = ["compress", "FSDPState", "ReduceScatter", "AllGather"]

STATE_VERSION = 1
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _fsdp_api():
    try:
        from torch.distributed.fsdp import FSDPModule
        from torch.distributed.fsdp._fully_shard import _fsdp_api as api
    except Exception as e:  # noqa: BLE001 - torch 1.x (Debian's 1.13 even fails importing its FSDP on 3.11)
        raise _core.UnsupportedError(f"gradwire.torch.fsdp needs torch 2.x with FSDP2 "
                                     f"(torch.distributed.fsdp.fully_shard): {type(e).__name__}: {e}") from None
    # FSDP2's comm interfaces, registered here (not subclassed at import: torch 1.x has none).
    api.ReduceScatter.register(ReduceScatter)
    api.AllGather.register(AllGather)
    return FSDPModule, api


class _Entry:
    """One compressed collective's state: codec, error feedback, step counter."""

    def __init__(self, codec_name, count):
        self.codec_name, self.count = codec_name, count
        self.codec = None
        self.ef = None
        self.step = 0


class FSDPState:
    """What compress() returns: the runtime, the communicator, the codecs and error feedback of every
    FSDP module it serves, and the thread that runs the gradwire calls. state_dict() / load_state_dict()
    for checkpoints, close() when done."""

    def __init__(self, runtime, own_runtime, process_group, comm, timeout, all_gather_codec):
        self.runtime, self._own_runtime = runtime, own_runtime
        cfg = tomllib.loads(runtime.config_dump())
        self.codec_name = cfg["codec"]["name"]
        self.error_feedback = bool(cfg["codec"].get("error_feedback", False))
        self.seed = int(cfg["codec"].get("seed", 0))
        self.rules = list(cfg.get("rules", []))
        self.all_gather_codec = all_gather_codec
        self.timeout = timeout
        self.process_group = process_group
        self.rank, self.world_size = _gwt._member(process_group, "gradwire.torch.fsdp.compress")
        self._entries = {}
        self._pending_load = {}
        self._failed = None
        self.reduce_scatters = 0
        self.all_gathers = 0
        gather = _gwt.allgather_over(process_group, timeout)
        self._store, self._namespace = gather.store, gather.namespace
        self._queue = None
        self._thread = None
        if comm is not None:
            if comm.size != self.world_size:
                raise _core.InvalidArgumentError(
                    f"the gradwire communicator has {comm.size} ranks but the FSDP model's process group has "
                    f"{self.world_size}: the communicator must span exactly the group FSDP shards over")
            self.comm, self._own_comm = comm, False
            return
        self._own_comm = True
        self._queue = queue.Queue()
        created = {}
        ready = threading.Event()

        def start():
            try:
                created["comm"] = Comm(runtime, rank=self.rank, world_size=self.world_size, allgather=gather,
                                       timeout=timeout)
            except BaseException as e:  # noqa: BLE001 - handed to the creating thread
                created["error"] = e
                ready.set()
                return
            ready.set()
            self._loop()

        self._thread = threading.Thread(target=start, name="gradwire-fsdp", daemon=True)
        self._thread.start()
        ready.wait()
        if "error" in created:
            raise created["error"]
        self.comm = created["comm"]

    # ---- the thread that owns the communicator ----
    def _loop(self):
        while True:
            item = self._queue.get()
            if item is None:
                self._close_all()
                return
            fn, done = item
            try:
                done["result"] = fn()
            except BaseException as e:  # noqa: BLE001
                done["error"] = e
            done["event"].set()

    def _call(self, fn):
        if self._queue is None:
            return fn()
        if not self._thread.is_alive():
            raise _core.StateError("the gradwire FSDP state is closed")
        done = {"event": threading.Event()}
        self._queue.put((fn, done))
        done["event"].wait()
        if "error" in done:
            raise done["error"]
        return done.get("result")

    # ---- failures ----
    def _earlier(self):
        e = self._failed
        cls = _core.error_class(e.status) if isinstance(e, _core.Error) else _core.StateError
        return cls(f"the gradwire communicator failed earlier and cannot continue: {getattr(e, 'message', e)}")

    def fail_here(self, e):
        """This rank's own input is bad: leaves gradwire's message in the store, then fails the communicator
        on every rank (a collective freed before it completed does), so no rank waits for this one."""
        if self._failed is None:
            _gwt._leave_failure(self._store, self._namespace, self.rank, e)
            self._failed = e

            def kill():
                try:
                    self.comm.barrier_start().free()
                except _core.Error:
                    pass
            try:
                self._call(kill)
            except _core.Error:
                pass
        raise e

    def _peer_failure(self, e):
        return _gwt._peer_failure(self._store, self._namespace, self.rank, e)

    def run(self, fn):
        """Runs fn (gradwire calls) on the owning thread; a failure is reported with the failing rank's
        message when another rank's own input failed the communicator."""
        if self._failed is not None:
            raise self._earlier()
        try:
            return self._call(fn)
        except _core.Error as e:
            if getattr(e, "_gw_own", False):
                self.fail_here(e)  # the C side refused this rank's own input: fail every rank with its message
            err = self._peer_failure(e)
            self._failed = err
            raise err from None

    # ---- codecs ----
    def codec_of(self, name, nbytes):
        for r in self.rules:
            pattern = r.get("match", "*")
            if (name is None and pattern != "*"):
                continue
            if (name is None or fnmatch.fnmatchcase(name, pattern)) and \
                    (not r.get("max_bytes", 0) or nbytes <= r["max_bytes"]):
                return r.get("codec", "none")
        return self.codec_name

    def entry(self, key, codec_name, count, error_feedback):
        """The entry for `key` (made on the owning thread)."""
        e = self._entries.get(key)
        if e is None or (e.codec_name, e.count) != (codec_name, count):
            if e is not None:
                for obj in (e.ef, e.codec):
                    if obj is not None:
                        obj.close()
            e = _Entry(codec_name, count)
            e.codec = Codec(self.runtime, codec_name)
            if error_feedback and "lossless" not in e.codec.properties()["flags"]:
                e.ef = ErrorFeedback(e.codec)
            p = self._pending_load.pop(key, None)
            if p is not None and p["codec"] == codec_name and p["count"] == count:
                e.step = p["step"]
                if e.ef is not None and p.get("ef"):
                    e.ef.load(p["ef"])
            self._entries[key] = e
        return e

    # ---- checkpoints ----
    def state_dict(self):
        """Per collective: codec, element count, step counter and error-feedback residual (gradwire's
        versioned blob). Take it between steps."""
        def collect():
            out = {}
            for key, e in self._entries.items():
                out[key] = {"codec": e.codec_name, "count": e.count, "step": e.step,
                            "ef": e.ef.save() if e.ef is not None else b""}
            return {"version": STATE_VERSION, "codec": self.codec_name, "error_feedback": self.error_feedback,
                    "all_gather_codec": self.all_gather_codec, "world_size": self.world_size, "entries": out}
        return self._call(collect)

    def load_state_dict(self, state):
        """Restores a state_dict(): each collective resumes its step counter and residual (now, or when it
        first runs) where codec and element count match."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            got = state.get("version") if isinstance(state, dict) else type(state).__name__
            raise _core.VersionError(f"not a gradwire FSDP state of version {STATE_VERSION} (got {got})")
        if state.get("codec") != self.codec_name:
            raise _core.MismatchError(f"the checkpoint's gradwire FSDP state is for codec '{state.get('codec')}', "
                                      f"this model uses '{self.codec_name}'")
        if state.get("world_size") != self.world_size:
            raise _core.MismatchError(f"the checkpoint's gradwire FSDP state is for {state.get('world_size')} ranks, "
                                      f"this process group has {self.world_size} (residuals are per shard)")

        def apply():
            pending = {k: dict(v) for k, v in state["entries"].items()}
            for key, v in list(pending.items()):
                e = self._entries.get(key)
                if e is not None and (e.codec_name, e.count) == (v["codec"], v["count"]):
                    _gwt._load_step_and_residual(e, v)
                    del pending[key]
            self._pending_load = pending
        self._call(apply)

    def _close_all(self):
        for e in self._entries.values():
            for obj in (e.ef, e.codec):
                if obj is not None:
                    obj.close()
        self._entries.clear()
        if self._own_comm:
            try:
                self.comm.close()
            except _core.Error:
                pass

    def close(self):
        """Destroys the codecs, the error feedback and (when compress made it) the communicator."""
        if self._thread is not None:
            if self._thread.is_alive():
                self._queue.put(None)
                self._thread.join()
        elif self.comm is not None:
            self._close_all()
        self.comm = None
        if self._own_runtime and not self.runtime.closed:
            self.runtime.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_common(state, what, inp, out, group, gather):
    """Checks every rank makes alike (same shapes, same group): raised where made, never a collective."""
    w = state.world_size
    if group is not None and group.size() != w:
        raise _core.InvalidArgumentError(
            f"{what}: FSDP's process group has {group.size()} ranks but the gradwire communicator has "
            f"{w}: the communicator must span exactly the group FSDP shards over")
    whole, part = (out, inp) if gather else (inp, out)
    if whole.numel() % w != 0 or part.numel() * w != whole.numel():
        raise _core.InvalidArgumentError(
            f"{what}: a buffer of {whole.numel()} elements and a shard of {part.numel()} do not make {w} equal "
            f"shards (the shard count must divide the buffer)")


def _own(e):
    """Marks an error of gradwire's refusing this rank's own input at the start of a collective (invalid
    argument, unsupported), which FSDPState.run turns into a failure of every rank; others pass as they are."""
    if isinstance(e, (_core.InvalidArgumentError, _core.UnsupportedError)):
        e._gw_own = True
    return e


def _check_own(state, what, tensors, device):
    """One rank's own tensors: a failure fails the communicator on every rank (FSDPState.fail_here)."""
    try:
        for name, t in tensors:
            if t.device != device:
                raise _core.InvalidArgumentError(
                    f"{what}: the {name} tensor lives on {t.device} but FSDP's process group works on {device}")
            if t.dtype not in _DTYPES:
                raise _core.InvalidArgumentError(
                    f"{what}: the {name} tensor holds {t.dtype}; gradwire takes float32, float16 and bfloat16")
            if not t.is_contiguous():
                raise _core.InvalidArgumentError(f"{what}: the {name} tensor is not contiguous")
    except _core.Error as e:
        state.fail_here(e)


class _Comm:
    def allocate(self, size, *, dtype, device):
        return torch.empty(size, dtype=dtype, device=device)


def _params_layout(fsdp_params):
    """[(fqn, padded shard numel)] in FSDP's buffer order, or None."""
    try:
        return [(p._param_fqn, p.padded_sharded_param_size.numel()) for p in fsdp_params]
    except AttributeError:
        return None


class ReduceScatter(_Comm):
    """FSDP2's gradient reduce-scatter through gradwire (see the module's docstring)."""

    def __init__(self, state, index, fsdp_params, device):
        self.state, self.index, self.device = state, index, device
        self.params = fsdp_params
        self.calls = 0

    def _groups(self, shard_numel):
        """[(codec, [(offset, count)] within a shard)]: the rules applied to the buffer's parameters, or the
        whole shard with the default codec when the buffer is not the module's parameters (some without a
        gradient) or no rule applies."""
        st = self.state
        layout = _params_layout(self.params) if st.rules else None
        if not layout or sum(n for _, n in layout) != shard_numel:
            return [(st.codec_name, [(0, shard_numel)])]
        groups = {}
        off = 0
        for fqn, n in layout:
            c = st.codec_of(fqn, n * self.state.world_size * 4)
            segs = groups.setdefault(c, [])
            if segs and segs[-1][0] + segs[-1][1] == off:
                segs[-1] = (segs[-1][0], segs[-1][1] + n)
            else:
                segs.append((off, n))
            off += n
        return sorted(groups.items())

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        st = self.state
        what = "gradwire.torch.fsdp reduce-scatter"
        _check_common(st, what, input_tensor, output_tensor, group, False)
        _check_own(st, what, [("input", input_tensor), ("output", output_tensor)], self.device)
        if input_tensor.dtype != output_tensor.dtype:
            st.fail_here(_core.InvalidArgumentError(f"{what}: input {input_tensor.dtype}, output {output_tensor.dtype}"))
        kind = getattr(op, "op", op)
        R = dist.ReduceOp
        if kind == R.AVG:
            gw_op = "avg"
        elif kind == R.SUM:
            gw_op = "sum"
        elif kind == R.PREMUL_SUM:
            factor = op.factor
            input_tensor.mul_(factor)  # FSDP's scratch buffer: PREMUL_SUM's pre-multiplication
            gw_op = "sum"
        else:
            raise _core.UnsupportedError(f"{what}: FSDP asked for {kind}; gradwire reduce-scatters with AVG, SUM "
                                         f"and PREMUL_SUM")
        w = st.world_size
        shard = output_tensor.numel()
        groups = self._groups(shard)
        self.calls += 1

        def go():
            reqs = []
            outs = []
            for g, (codec_name, segs) in enumerate(groups):
                n = sum(c for _, c in segs)
                e = st.entry(f"rs/{self.index}/{g}", codec_name, n * w, st.error_feedback)
                if len(groups) == 1:
                    x, y = input_tensor, output_tensor
                else:
                    v = input_tensor.view(w, shard)
                    x = torch.cat([v[:, o:o + c] for o, c in segs], dim=1).contiguous().view(-1)
                    y = torch.empty(n, dtype=output_tensor.dtype, device=output_tensor.device)
                    outs.append((y, segs))
                seed = st.seed + 7919 * self.index + g
                try:
                    reqs.append(st.comm.reduce_scatter_compressed_start(e.ef if e.ef is not None else e.codec, x,
                                                                        y, op=gw_op, seed=seed, step=e.step))
                except _core.Error as ex:
                    for r in reqs:
                        r.free()
                    raise _own(ex)
                e.step += 1
            err = None
            for r in reqs:
                try:
                    r.wait()
                except _core.Error as ex:
                    err = err or ex
            if err is not None:
                raise err
            for y, segs in outs:
                o2 = 0
                for o, c in segs:
                    output_tensor[o:o + c].copy_(y[o2:o2 + c])
                    o2 += c
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
        st.run(go)
        st.reduce_scatters += 1
        return None


class AllGather(_Comm):
    """FSDP2's parameter all-gather through a gradwire codec (gw_allgather_compressed): each rank's shard
    encoded once and decoded by every rank, its own too, so every rank computes with the same weights."""

    def __init__(self, state, index, device, codec_name):
        self.state, self.index, self.device, self.codec_name = state, index, device, codec_name

    def __call__(self, output_tensor, input_tensor, group, async_op=False):
        st = self.state
        what = "gradwire.torch.fsdp all-gather"
        _check_common(st, what, input_tensor, output_tensor, group, True)
        _check_own(st, what, [("input", input_tensor), ("output", output_tensor)], self.device)
        # FSDP gathers in place (the input is this rank's part of the output): gradwire gets a copy.
        src = input_tensor.clone()

        def go():
            e = st.entry(f"ag/{self.index}", self.codec_name, src.numel(), False)
            try:
                st.comm.allgather_compressed(e.codec, src, output_tensor, seed=st.seed + 104729 + self.index,
                                             step=e.step)
            except (_core.InvalidArgumentError, _core.UnsupportedError) as ex:
                raise _own(ex)
            e.step += 1
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
        st.run(go)
        st.all_gathers += 1
        return None


def _flat_keys(text):
    """A configuration dump as ["section.key = value"] (comments dropped)."""
    out, section = [], ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]") + "."
            continue
        out.append(section + line)
    return out


def _exchange_config(process_group, timeout, mine):
    """Every rank's configuration (through torch's store); MismatchError on every rank when they differ."""
    gather = _gwt.allgather_over(process_group, timeout)
    parts = [_flat_keys(p.decode(errors="replace")) for p in gather(mine.encode())]
    for r, theirs in enumerate(parts):
        if theirs != parts[0]:
            only0 = [x for x in parts[0] if x not in theirs][:4]
            onlyr = [x for x in theirs if x not in parts[0]][:4]
            raise _core.MismatchError(
                f"gradwire.torch.fsdp.compress: the ranks of the process group configure different codecs: rank 0 "
                f"has {'; '.join(only0) or '(nothing more)'}, rank {r} has {'; '.join(onlyr) or '(nothing more)'}; "
                f"every rank must compress with the same configuration")


def compress(model, codec=None, all_gather_codec=None, *, comm=None, runtime=None, config=None, text=None,
             error_feedback=None, seed=None, rules=None, process_group=None, timeout=None, **codec_options):
    """Makes an FSDP2 model's gradient reduce-scatter (and with all_gather_codec its parameter all-gather)
    go through gradwire codecs; returns the FSDPState (state_dict / load_state_dict / close).

    `model`: a module on which torch.distributed.fsdp.fully_shard was called (it and every FSDPModule
    inside it get gradwire's comms). The configuration is a gradwire.Runtime, a TOML file (config), text,
    or codec="int8" with error_feedback=, seed=, rules=[{"match": "*.bias", "codec": "none"}] and the
    codec's own keys. all_gather_codec: None keeps FSDP2's all-gather; a codec name (e.g. "int8") gathers
    the parameters through it. comm: a gradwire.Comm to use (its calls then run on the calling thread);
    by default one is made over the model's shard process group through torch's store. Every rank calls
    compress in the same order with the same codecs (checked: MismatchError on every rank)."""
    FSDPModule, api = _fsdp_api()
    if not dist.is_available() or not dist.is_initialized():
        raise _core.StateError("gradwire.torch.fsdp.compress needs an initialized torch.distributed process group")
    modules = [(n, m) for n, m in model.named_modules() if isinstance(m, FSDPModule)]
    if not modules:
        raise _core.InvalidArgumentError("gradwire.torch.fsdp.compress: the model has no FSDPModule (call "
                                         "torch.distributed.fsdp.fully_shard on it first)")
    given = sum(x is not None for x in (runtime, config, text, codec))
    if given > 1:
        raise _core.InvalidArgumentError("give the configuration one way: runtime=, config=FILE, text=TOML or "
                                         "codec=NAME with keyword options")
    pgs = []
    for name, m in modules:
        groups = m._get_fsdp_state()._fsdp_param_groups
        if len(groups) > 1:
            raise _core.UnsupportedError(f"gradwire.torch.fsdp: module '{name}' has several FSDP parameter groups "
                                         f"(shard_placement_fn meshes); FSDP2's custom comms take one")
        pgs.append(groups[0] if groups else None)
    if process_group is None:
        for pg in pgs:
            if pg is not None:
                process_group = pg.mesh_info.shard_process_group
                break
    if process_group is None:
        raise _core.InvalidArgumentError("gradwire.torch.fsdp.compress: no FSDP module has parameters")
    if codec is not None:
        text = _gwt._config_text(codec, error_feedback, seed, codec_options, rules, timeout)
    elif runtime is None and config is None and text is None:
        text = _gwt._config_text("none", None, None, {}, rules, timeout)
    own = runtime is None
    rt = runtime if runtime is not None else Runtime(config, text=text)
    try:
        cfg = tomllib.loads(rt.config_dump())
        t = float(timeout) if timeout is not None else float(cfg.get("runtime", {}).get("timeout_s", 300))
        if comm is not None and comm.size != dist.get_world_size(process_group):
            raise _core.InvalidArgumentError(
                f"gradwire.torch.fsdp.compress: the gradwire communicator has {comm.size} ranks but the FSDP "
                f"model's process group has {dist.get_world_size(process_group)}: the communicator must span "
                f"exactly the group FSDP shards over")
        _exchange_config(process_group, t, f"{rt.config_dump()}\n[fsdp]\nall_gather_codec = {all_gather_codec!r}\n")
        state = FSDPState(rt, own, process_group, comm, t, all_gather_codec)
    except BaseException:
        if own:
            rt.close()
        raise
    for index, ((name, m), pg) in enumerate(zip(modules, pgs)):
        if pg is None:
            continue
        size = pg.mesh_info.shard_process_group.size()
        if size != state.world_size:
            state.close()
            raise _core.InvalidArgumentError(
                f"gradwire.torch.fsdp.compress: module '{name}' shards over a process group of {size} ranks but "
                f"the gradwire communicator has {state.world_size}")
        m.set_custom_reduce_scatter(ReduceScatter(state, index, pg.fsdp_params, pg.device))
        if all_gather_codec is not None:
            m.set_custom_all_gather(AllGather(state, index, pg.device, all_gather_codec))
    return state
