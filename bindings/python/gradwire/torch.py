"""gradwire for PyTorch DDP: a communication hook that averages each gradient bucket through a gradwire codec.

    import gradwire.torch as gwt
    state = gwt.HookState(codec="int8", model=model)          # or config="gradwire.toml" / text="..."
    ddp_model.register_comm_hook(state, gwt.hook)

Design (docs/pytorch.md):
* gradwire's communicator is made next to the process group, over the application-allgather rendezvous of
  gradwire.h implemented with torch's c10d store (the default group's store, keys namespaced per group and
  per hook): no port of its own, so it never collides with torch's TCPStore on MASTER_PORT; it works under
  every launcher the process group works under (torchrun, gradwire run, mp.spawn) and with any backend
  (gloo, NCCL), because it never calls the group's collectives.
* A rank whose own input fails (a bucket of the wrong dtype or device, ...) leaves gradwire's message in the
  store and fails the communicator on every rank; the others raise with that message instead of waiting.
* A communicator belongs to the thread that created it, and DDP calls hooks on the autograd thread while the
  backward pass runs. The state therefore owns one progress thread: it creates the communicator, the codecs
  and the error feedback, and runs every gradwire call. The hook only checks the bucket, queues it and
  returns a torch.futures.Future; the progress thread starts the bucket's compressed allreduce, drives all
  requests in flight and completes each future when its request completes. Backward never waits on the
  network; DDP waits on the futures at the end of backward, as with its own hooks.
* DDP hands the hook each bucket's flat buffer holding this rank's gradients, not divided by the world
  size; the hook averages (GW_REDUCE_AVG), so the result equals DDP's default allreduce hook's.
* Per-tensor [[rules]] (glob on the parameter's name, max_bytes) pick each parameter's codec; a bucket is cut
  into runs of parameters with one codec, each run one compressed allreduce.
* Error feedback ([codec] error_feedback): each run keeps a gradwire.ErrorFeedback (keyed by bucket index and
  run) that the compressed allreduce applies to every encoding this rank makes (gw_allreduce_compressed_ef):
  what a compression dropped is sent in later steps. state_dict() carries residuals and step counters for
  checkpoints.
"""
import fnmatch
import io
import os
import queue
import threading
import datetime

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

import torch
import torch.distributed as dist

from . import _core
from ._core import Comm, Codec, ErrorFeedback, Runtime

__all__ = ["HookState", "hook", "init_process_group", "allgather_over", "DiLoCo", "ElasticDataParallel"]

STATE_VERSION = 2  # 2: residuals inside the collective (keyed by element offset)
_LOSSLESS = {"none"}


def init_process_group(backend="gloo", **kw):
    """dist.init_process_group that also works under `gradwire run`: when torchrun's RANK is absent it takes
    GW_RANK, GW_WORLD_SIZE, GW_ROOT_ADDR and GW_ROOT_PORT (gradwire's own rendezvous is not used by the hook,
    so the port is free for torch's store).

    Returns True. In a process that `gradwire run --elastic` started again to join a running job
    (GW_ELASTIC_JOIN=1) it returns False and makes no process group: torch's group is fixed-size and
    cannot take the process back; gradwire.torch.DiLoCo and ElasticDataParallel then join through
    gradwire's own join contact (docs/elastic.md, "PyTorch")."""
    if _joining():
        return False
    if "RANK" not in os.environ and "GW_RANK" in os.environ:
        os.environ["RANK"] = os.environ["GW_RANK"]
        os.environ["WORLD_SIZE"] = os.environ["GW_WORLD_SIZE"]
        os.environ.setdefault("LOCAL_RANK", os.environ.get("GW_LOCAL_RANK", "0"))
        os.environ.setdefault("MASTER_ADDR", os.environ.get("GW_ROOT_ADDR", "127.0.0.1"))
        os.environ.setdefault("MASTER_PORT", os.environ["GW_ROOT_PORT"])
    dist.init_process_group(backend, **kw)
    return True


def _group_name(process_group):
    """The process group's name: the same on every member (torch names groups in creation order)."""
    c10d = dist.distributed_c10d
    pg = process_group if process_group is not None else c10d._get_default_group()
    world = getattr(c10d, "_world", None)  # torch 2.x; 1.13 keeps a module-level dict
    names = world.pg_names if world is not None else getattr(c10d, "_pg_names", {})
    name = names.get(pg)
    if name is None:
        name = getattr(pg, "group_name", None)
    if name is None:
        raise _core.StateError("gradwire.torch cannot name this process group (not made by torch.distributed?)")
    return str(name)


def _member(process_group, what):
    """This process's rank in the group and the group's size; InvalidArgumentError on a non-member."""
    rank = dist.get_rank(process_group)
    if rank < 0:
        raise _core.InvalidArgumentError(
            f"{what}: this process (rank {dist.get_rank()} of the default group) is not a member of the process "
            f"group it was given; create it on the group's members only")
    return rank, dist.get_world_size(process_group)


def _has_key(store, key):
    """Whether the store holds `key`, without waiting (torch 1.13's PrefixStore has no check())."""
    try:
        store.wait([key], datetime.timedelta(milliseconds=1))
        return True
    except RuntimeError:
        return False


def _store_failed(e):
    return _core.TransportError(f"torch's store (the rendezvous of gradwire's communicator) failed: {e}; the "
                                f"process that serves it (the TCPStore on MASTER_ADDR:MASTER_PORT, rank 0 under "
                                f"torchrun) may have exited")


def allgather_over(process_group=None, timeout=300.0, *, store=None, namespace=None):
    """An allgather callback for gradwire.Comm (the rendezvous of gw_comm_options.allgather) through
    torch's c10d key-value store, waiting at most `timeout` seconds.

    It never calls the process group's collectives, so it works whatever the group's backend (an NCCL
    group refuses the CPU tensors a gather of bytes would need). `store` defaults to the default group's
    store (init_process_group's: TCPStore under torchrun, FileStore for file://); every key is under
    `namespace`, by default "gradwire/<group name>/<n>", where n counts the callbacks made for that group
    by this rank (kept in the store, so every rank that makes its callbacks in the same order gets the
    same n). Each call of the callback (gw_comm_create calls it twice) uses keys of its own.

    The callback carries `rank`, `world_size`, `store` and `namespace` as attributes: gradwire.Comm
    refuses a world size or rank other than the group's before any rank waits."""
    rank, world = _member(process_group, "gradwire.torch.allgather_over")
    if store is None:
        store = dist.distributed_c10d._get_default_store()
    if namespace is None:
        group = _group_name(process_group)
        try:
            n = store.add(f"gradwire/{group}/callbacks/{rank}", 1)
        except RuntimeError as e:
            raise _store_failed(e) from None
        namespace = f"gradwire/{group}/{n}"
    calls = [0]

    def allgather(data):
        call = calls[0]
        calls[0] += 1
        keys = [f"{namespace}/rendezvous/{call}/{r}" for r in range(world)]
        try:
            store.set(keys[rank], bytes(data))
        except RuntimeError as e:
            raise _store_failed(e) from None
        try:
            store.wait(keys, datetime.timedelta(seconds=timeout))
        except RuntimeError as e:  # c10d's store timeout (DistStoreError in torch 2.x), or a store gone
            if "timeout" not in str(e).lower():
                raise _store_failed(e) from None
            missing = [r for r, k in enumerate(keys) if not _has_key(store, k)]
            raise _core.TimeoutError(
                f"gradwire's rendezvous through torch's store did not complete within {timeout} s: rank(s) "
                f"{missing or '?'} of the process group (size {world}) did not arrive; every rank must create "
                f"its gradwire hook (or communicator) for this group in the same order ({e})") from None
        try:
            return [store.get(k) for k in keys]
        except RuntimeError as e:
            raise _store_failed(e) from None

    allgather.rank, allgather.world_size, allgather.store, allgather.namespace = rank, world, store, namespace
    return allgather


def _config_text(codec, error_feedback, seed, options, rules, timeout, rounds_batch=None):
    lines = ["[codec]", f'name = "{codec}"']
    if error_feedback is not None:
        lines.append(f"error_feedback = {'true' if error_feedback else 'false'}")
    if seed is not None:
        lines.append(f"seed = {int(seed)}")
    if options:
        lines.append(f"[codec.{codec}]")
        for k, v in options.items():
            lines.append(f"{k} = {_toml_value(v)}")
    if timeout is not None:
        lines += ["[runtime]", f"timeout_s = {float(timeout)}"]
    if rounds_batch is not None:
        lines += ["[bucket]", f"rounds_batch = {int(rounds_batch)}"]
    for r in rules or ():
        lines.append("[[rules]]")
        for k, v in r.items():
            lines.append(f"{k} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Run:
    """A run of one bucket's parameters with one codec: elements [offset, offset + count) of the buffer."""

    def __init__(self, key, codec_name, offset, count):
        self.key, self.codec_name, self.offset, self.count = key, codec_name, offset, count
        self.codec = None       # the collective's codec (gradwire.Codec)
        self.ef = None          # gradwire.ErrorFeedback, or None
        self.rounds = False     # a codec of rounds (powersgd): its state is saved with the run
        self.step = 0


_FAILED_KEY = "failed"


def _leave_failure(store, namespace, rank, e):
    """The first rank whose own input failed leaves gradwire's status and message under the namespace, for
    the other ranks' _peer_failure; a store that is gone is ignored (the failure still reaches the peers
    through the failed communicator)."""
    try:
        if store.add(f"{namespace}/{_FAILED_KEY}/count", 1) == 1:
            status = getattr(e, "status", None) or _core.InternalError.status
            store.set(f"{namespace}/{_FAILED_KEY}", f"{int(status)}\n{rank}\n{getattr(e, 'message', e)}".encode())
    except Exception:  # noqa: BLE001 - a store that is gone: the failure still reaches the peers
        pass


def _peer_failure(store, namespace, rank, e):
    """The error to raise for `e` when another rank failed first on its own input and said why in the
    store: its class and message, with what this rank saw; else `e`."""
    try:
        # The count is 1 once a rank has set the message (it sets it before it fails the others).
        if store.add(f"{namespace}/{_FAILED_KEY}/count", 0) == 0:
            return e
        key = f"{namespace}/{_FAILED_KEY}"
        store.wait([key], datetime.timedelta(seconds=5))
        status, failed_rank, message = store.get(key).decode(errors="replace").split("\n", 2)
        status, failed_rank = int(status), int(failed_rank)
    except Exception:  # noqa: BLE001 - no word from the others (or no store): this rank's own error
        return e
    if failed_rank == rank:
        return e
    cls = _core.error_class(status)
    here = f"{e.status_name}: {e.message}" if isinstance(e, _core.Error) else str(e)
    err = cls(f"rank {failed_rank} of the process group failed on its input: {message} (so this rank's collective "
              f"failed too: {here})")
    if cls is _core.Error:
        err.status = status
    return err


def _load_step_and_residual(entry, saved):
    """A saved collective's step counter and error-feedback residual into its live counterpart (the caller
    has checked that codec and count agree); a saved state without a residual resets it."""
    entry.step = saved["step"]
    if getattr(entry, "rounds", False) and saved.get("codec_state"):
        entry.codec.load_state(saved["codec_state"])
    if entry.ef is not None:
        if saved.get("ef"):
            entry.ef.load(saved["ef"])
        else:
            entry.ef.reset()


class HookState:
    """What gradwire's DDP hook needs: the runtime, the communicator, the codecs, per-bucket step counters and
    error feedback, and the progress thread that runs every gradwire call.

    HookState(runtime=None, *, config=None, text=None, codec=None, error_feedback=None, seed=None, rules=None,
              model=None, process_group=None, bucket_cap_mb=25, timeout=None, rounds_batch=None, **codec_options)

    The configuration is a gradwire.Runtime, a TOML file (config) or text (text), or keyword arguments:
    codec="topk", error_feedback=True, seed=0, rules=[{"match": "*.bias", "codec": "none"}] and the codec's
    own keys (ratio=0.01, block_size=256, ...). `model` (the module, before or after wrapping in DDP) gives
    the parameters' names for [[rules]]; a DDP model also gives its process group when `process_group` is
    None, and one of another size than `process_group` is refused. `bucket_cap_mb`: the largest bucket
    accepted (DDP's own bucket_cap_mb); `timeout` (seconds) bounds the rendezvous and every collective
    ([runtime] timeout_s). `rounds_batch`: [bucket] rounds_batch, how many consecutive buckets' powersgd runs
    share one collective per round (0: a step's all, 1, the default: each its own; docs/powersgd.md). The process group
    may have any backend (gloo, NCCL, ...): the hook never calls
    its collectives (the rendezvous goes through torch's store, see allgather_over)."""

    def __init__(self, runtime=None, *, config=None, text=None, codec=None, error_feedback=None, seed=None,
                 rules=None, model=None, process_group=None, bucket_cap_mb=25, timeout=None, rounds_batch=None,
                 **codec_options):
        given = sum(x is not None for x in (runtime, config, text, codec))
        if given > 1:
            raise _core.InvalidArgumentError("give the configuration one way: a Runtime, config=FILE, text=TOML or "
                                             "codec=NAME with keyword options")
        if codec_options and codec is None:
            raise _core.InvalidArgumentError(f"codec options {sorted(codec_options)} need codec=NAME")
        if not dist.is_available() or not dist.is_initialized():
            raise _core.StateError("gradwire.torch.HookState needs an initialized torch.distributed process group "
                                   "(torch.distributed.init_process_group or gradwire.torch.init_process_group)")
        if rounds_batch is not None and codec is None:
            raise _core.InvalidArgumentError("rounds_batch= comes with codec=NAME; in a configuration file or text "
                                             "it is [bucket] rounds_batch")
        if codec is not None:
            text = _config_text(codec, error_feedback, seed, codec_options, rules, timeout, rounds_batch)
        elif config is None and text is None and runtime is None:
            text = _config_text("none", None, None, {}, None, timeout)
        self._own_runtime = runtime is None
        self.runtime = runtime if runtime is not None else Runtime(config, text=text)
        cfg = tomllib.loads(self.runtime.config_dump())
        self.codec_name = cfg["codec"]["name"]
        self.error_feedback = bool(cfg["codec"].get("error_feedback", False))
        self.seed = int(cfg["codec"].get("seed", 0))
        self.rules = list(cfg.get("rules", []))
        self.timeout = float(timeout) if timeout is not None else float(cfg.get("runtime", {}).get("timeout_s", 300))
        self.max_bucket_bytes = int(bucket_cap_mb * 1024 * 1024) if bucket_cap_mb else None
        # [bucket] rounds_batch: the runs of codecs of rounds (powersgd) of this many consecutive buckets (0:
        # all of a step's) share one collective per round (gw_allreduce_compressed_batch). DDP hands the
        # buckets over in index order on every rank, so every rank batches the same runs.
        self.rounds_batch = int(cfg.get("bucket", {}).get("rounds_batch", 1))
        self._batch = []          # runs of rounds waiting for their batch: (run, x, context, bucket index)
        self._batch_buckets = []  # the buckets they belong to, in order: [index, future, buffer]
        self.batches = 0          # batches started
        ddp_group = getattr(model, "process_group", None) if model is not None else None
        if process_group is None:
            process_group = ddp_group
        self.process_group = process_group
        self.rank, self.world_size = _member(process_group, "gradwire.torch.HookState")
        if ddp_group is not None and ddp_group is not process_group:
            ddp_size = dist.get_world_size(ddp_group)
            if ddp_size != self.world_size:
                raise _core.InvalidArgumentError(
                    f"the DDP model's process group has {ddp_size} ranks but the hook's (process_group=) has "
                    f"{self.world_size}: the hook averages over its own group, so both must be the same group "
                    f"(leave process_group=None to take the model's)")
        self._names = {}
        if model is not None:
            module = getattr(model, "module", model)
            self._names = {id(p): n for n, p in module.named_parameters()}
        self._runs = {}           # (bucket index, run index) -> _Run
        self._layouts = {}        # bucket index -> [(codec name, offset, count)]
        self._pending_load = None
        self._queue = queue.Queue()
        self._failed = None       # the error that failed the communicator
        self.bytes_sent = 0       # f32 bytes handed to the collectives (for accounting)
        self.buckets = 0
        self.device = None        # the device of the first bucket; every later bucket must be on it
        self.comm = None
        # The rendezvous, and the word a rank leaves when its own input fails it, go through torch's store
        # under this hook's namespace (allgather_over), never through the group's collectives.
        gather = allgather_over(process_group, self.timeout)
        self._store, self._namespace = gather.store, gather.namespace
        ready = threading.Event()
        created = {}

        def start():
            try:
                created["comm"] = Comm(self.runtime, rank=self.rank, world_size=self.world_size,
                                       allgather=gather, timeout=self.timeout)
            except BaseException as e:  # noqa: BLE001 - handed to the creating thread
                created["error"] = e
                ready.set()
                return
            ready.set()
            self._loop(created["comm"])

        self._thread = threading.Thread(target=start, name="gradwire-progress", daemon=True)
        self._thread.start()
        ready.wait()
        if "error" in created:
            if self._own_runtime:
                self.runtime.close()
            raise created["error"]
        self.comm = created["comm"]

    # ---- the hook side (autograd thread) ----
    def _codec_of(self, param):
        name = self._names.get(id(param))
        nbytes = param.numel() * 4
        for r in self.rules:
            pattern = r.get("match", "*")
            if name is None and pattern != "*":
                continue
            if (name is None or fnmatch.fnmatchcase(name, pattern)) and \
                    (not r.get("max_bytes", 0) or nbytes <= r["max_bytes"]):
                return r.get("codec", "none")
        return self.codec_name

    def _layout(self, bucket):
        """The bucket's runs (codec, offset, count, shapes): shapes are the 2-D views (offset in the run,
        dims[0], the rest) of its parameters of two dimensions or more, for codecs that work on matrices
        (powersgd); the others ignore them."""
        runs = []
        offset = 0
        for p in bucket.parameters():
            c = self._codec_of(p)
            n = p.numel()
            if runs and runs[-1][0] == c:
                runs[-1][2] += n
            else:
                runs.append([c, offset, n, []])
            if p.dim() >= 2 and n > 0:
                runs[-1][3].append((offset - runs[-1][1], p.shape[0], n // p.shape[0]))
            offset += n
        return [(c, o, n, tuple(s)) for c, o, n, s in runs], offset

    def submit(self, bucket):
        buf = bucket.buffer()
        if self._failed is not None:
            fut = torch.futures.Future()
            fut.set_exception(self._earlier())
            return fut
        try:
            if buf.dtype != torch.float32:
                raise _core.InvalidArgumentError(f"gradient bucket {bucket.index()} holds {buf.dtype}; the gradwire hook "
                                                 f"averages float32 gradients (train in float32, or keep this model "
                                                 f"on DDP's own hooks)")
            if buf.device.type not in ("cpu", "cuda"):
                raise _core.UnsupportedError(f"gradient bucket {bucket.index()} lives on {buf.device}; the gradwire hook "
                                             f"takes CPU and CUDA tensors")
            if self.device is None:
                self.device = buf.device
            elif buf.device != self.device:
                raise _core.InvalidArgumentError(
                    f"gradient bucket {bucket.index()} lives on {buf.device} but this hook's earlier buckets on "
                    f"{self.device}: a HookState serves one DDP model on one device (one HookState per model)")
            if not buf.is_contiguous():
                raise _core.InvalidArgumentError(f"gradient bucket {bucket.index()}'s buffer is not contiguous")
            nbytes = buf.numel() * buf.element_size()
            if self.max_bucket_bytes is not None and nbytes > self.max_bucket_bytes:
                raise _core.InvalidArgumentError(
                    f"gradient bucket {bucket.index()} has {nbytes} bytes, more than the {self.max_bucket_bytes} the "
                    f"hook was configured for (HookState bucket_cap_mb); give DDP and HookState the same "
                    f"bucket_cap_mb, large enough for the largest parameter")
            layout, total = self._layout(bucket)
            if total != buf.numel():  # parameters not known (e.g. a buffer DDP built otherwise): one run
                layout = [(self.codec_name, 0, buf.numel(), ())]
        except _core.Error as e:
            # This rank will not run this bucket's collective while the others may: the communicator is
            # failed on every rank, and the others raise with this message (_fail_here).
            fut = torch.futures.Future()
            fut.set_exception(e)
            self._queue.put(("fail", e))
            return fut
        if buf.device.type == "cuda":
            # The bucket goes to the collectives as a device tensor (gw_tensor memory CUDA: the codecs' CUDA
            # kernels, docs/nccl.md), ordered on the stream the backward pass queued it on; its future is
            # one that may hold tensors of that device.
            stream = torch.cuda.current_stream(buf.device)
            fut = torch.futures.Future(devices=[buf.device])
        else:
            stream, fut = None, torch.futures.Future()
        # A step's last bucket ends its batch of rounds (a bucket without is_last, as in tests, ends it too).
        is_last = bucket.is_last() if hasattr(bucket, "is_last") else True
        self._queue.put(("bucket", bucket.index(), buf, layout, stream, is_last, fut))
        return fut

    # ---- the progress thread ----
    def _loop(self, comm):
        inflight = []  # [request, future, buffer, whether it is its bucket's last request], in start order
        while True:
            try:
                item = self._queue.get(block=not inflight, timeout=None)
            except queue.Empty:
                item = None
            if item is not None:
                kind = item[0]
                if kind == "stop":
                    self._drop_batch(_core.StateError("the gradwire hook closed before the step's last bucket"))
                    self._drain(inflight)
                    self._close_all(comm)
                    item[1].set()
                    return
                if kind == "fail":
                    self._fail_here(comm, item[1], inflight)
                    continue
                if kind == "call":
                    _, fn, done = item
                    try:
                        done["result"] = fn()
                    except BaseException as e:  # noqa: BLE001
                        done["error"] = e
                    done["event"].set()
                    continue
                try:
                    self._start_bucket(comm, inflight, *item[1:])
                except Exception as e:  # noqa: BLE001 - a bug here must not leave DDP waiting forever
                    self._fail(e, inflight, item[-1])
                continue
            # Nothing new: drive the oldest request for a moment, then look at the queue again.
            entry = inflight[0]
            req = entry[0]
            try:
                req.wait(0.002)
            except _core.TimeoutError as e:
                if not req.done:
                    continue  # still running: look at the queue again
                self._fail(e, inflight)  # the collective itself timed out
                continue
            except _core.Error as e:
                self._fail(e, inflight)
                continue
            # Completed: every completed request of the bucket list in order.
            self._complete_done(inflight)

    def _complete_done(self, inflight):
        while inflight and inflight[0][0].done:
            _, fut, buf, last = inflight.pop(0)
            if last:
                fut.set_result(buf)
        # Requests behind the oldest may have finished too; they are collected when they reach the front.

    def _earlier(self):
        e = self._failed
        cls = _core.error_class(e.status) if isinstance(e, _core.Error) else _core.StateError
        return cls(f"the gradwire communicator failed earlier and cannot continue: {getattr(e, 'message', e)}")

    def _fail_here(self, comm, e, inflight, fut=None):
        """This rank's own input failed (a bucket it cannot take, a tensor the C side refused at the start):
        leaves gradwire's message in the store for the other ranks, then fails the communicator on every
        rank (freeing a collective before it completed does: gw_request_free), so that no rank waits for a
        collective this one will not start."""
        first = self._failed is None
        if first:
            _leave_failure(self._store, self._namespace, self.rank, e)
        had_inflight = bool(inflight)
        self._fail(e, inflight, fut, lookup=False)
        if first and not had_inflight:
            try:
                comm.barrier_start().free()
            except _core.Error:
                pass  # the communicator has failed already

    def _peer_failure(self, e):
        return _peer_failure(self._store, self._namespace, self.rank, e)

    def _fail(self, e, inflight, fut=None, lookup=True):
        if lookup and self._failed is None:
            e = self._peer_failure(e)
        if self._failed is None:
            self._failed = e
        self._drop_batch(e)  # buckets waiting for their batch of rounds: it will not start
        futs = [fut] if fut is not None else []
        for _, fut, _, last in inflight:
            if last and fut not in futs:
                futs.append(fut)
        for r in inflight:
            try:
                r[0].free()
            except _core.Error:
                pass
        inflight.clear()
        for f in futs:
            if not f.done():
                f.set_exception(e)

    def _drain(self, inflight):
        while inflight:
            try:
                inflight[0][0].wait()
            except _core.Error as e:
                self._fail(e, inflight)
                return
            self._complete_done(inflight)

    def _run_of(self, index, i, codec_name, offset, count):
        key = (index, i)
        run = self._runs.get(key)
        if run is None or (run.codec_name, run.offset, run.count) != (codec_name, offset, count):
            if run is not None:
                self._close_run(run)  # DDP rebuilt its buckets: this bucket's layout changed
            run = _Run(key, codec_name, offset, count)
            run.codec = Codec(self.runtime, codec_name)
            flags = run.codec.properties()["flags"]
            run.rounds = "rounds" in flags  # powersgd: its own error feedback and state
            if self.error_feedback and "lossless" not in flags and not run.rounds:
                run.ef = ErrorFeedback(run.codec)
            pending = (self._pending_load or {}).get(key)
            if pending is not None and pending["codec"] == codec_name and pending["count"] == count:
                run.step = pending["step"]
                if run.ef is not None and pending.get("ef"):
                    run.ef.load(pending["ef"])
                if run.rounds and pending.get("codec_state"):
                    run.codec.load_state(pending["codec_state"])
                del self._pending_load[key]
            self._runs[key] = run
        return run

    def _start_bucket(self, comm, inflight, index, buf, layout, stream, is_last, fut):
        if self._failed is not None:
            self._drop_batch(self._earlier())
            fut.set_exception(self._earlier())
            return
        if stream is not None:
            with torch.cuda.stream(stream):
                return self._start_runs(comm, inflight, index, buf, layout, is_last, fut)
        return self._start_runs(comm, inflight, index, buf, layout, is_last, fut)

    def _start_runs(self, comm, inflight, index, buf, layout, is_last, fut):
        reqs = []
        batched = False
        try:
            for i, (codec_name, offset, count, shapes) in enumerate(layout):
                run = self._run_of(index, i, codec_name, offset, count)
                x = buf[offset:offset + count]
                seed = self.seed + index * 1009 + i
                if run.rounds and self.rounds_batch != 1:
                    # Started with the rest of its batch (_flush_batch), with this call's context.
                    self._batch.append((run, x, dict(seed=seed, step=run.step, buffer_id=(index << 16) | i,
                                                     shapes=shapes), index))
                    batched = True
                    run.step += 1
                    self.bytes_sent += count * 4
                    continue
                # With error feedback, every encoding inside the collective adds its residual (this rank's
                # values and, for int8 and one bit, the sum it encodes as the owner of a block). The shapes
                # and the run's buffer id reach codecs of rounds (powersgd), which keep their state per id.
                reqs.append(comm.allreduce_compressed_start(run.ef if run.ef is not None else run.codec, x, op="avg",
                                                            seed=seed, step=run.step, buffer_id=(index << 16) | i,
                                                            shapes=shapes))
                run.step += 1
                self.bytes_sent += count * 4
            self.buckets += 1
        except _core.Error as e:
            self._batch = [b for b in self._batch if b[3] != index]  # this bucket's runs leave their batch
            for r in reqs:
                inflight.append([r, fut, buf, False])
            if e.status in (_core.InvalidArgumentError.status, _core.UnsupportedError.status) and \
                    self._failed is None:
                self._fail_here(comm, e, inflight, fut)  # the C side refused this rank's tensor
            else:
                self._fail(e, inflight, fut)
            return
        for j, r in enumerate(reqs):
            inflight.append([r, fut, buf, j == len(reqs) - 1 and not batched])
        if batched:
            self._batch_buckets.append([index, fut, buf])
            if is_last or (self.rounds_batch > 0 and len(self._batch_buckets) >= self.rounds_batch):
                self._flush_batch(comm, inflight)
        elif not reqs:
            fut.set_result(buf)

    def _flush_batch(self, comm, inflight):
        """Starts the waiting runs of rounds as one batch (one collective per round for all of them); each of
        their buckets completes when it completes (after the bucket's other runs)."""
        batch, buckets = self._batch, self._batch_buckets
        self._batch, self._batch_buckets = [], []
        try:
            req = comm.allreduce_compressed_batch_start([b[0].codec for b in batch], [b[1] for b in batch], op="avg",
                                                        contexts=[b[2] for b in batch])
        except _core.Error as e:
            futs = [f for _, f, _ in buckets]
            for f in futs[1:]:
                if not f.done():
                    f.set_exception(e)
            if e.status in (_core.InvalidArgumentError.status, _core.UnsupportedError.status) and \
                    self._failed is None:
                self._fail_here(comm, e, inflight, futs[0])
            else:
                self._fail(e, inflight, futs[0])
            return
        self.batches += 1
        for _, f, buf in buckets:
            inflight.append([req, f, buf, True])

    def _drop_batch(self, e):
        """Fails the buckets waiting for their batch (the hook failed or closed before the batch started)."""
        for _, f, _ in self._batch_buckets:
            if not f.done():
                f.set_exception(e)
        self._batch, self._batch_buckets = [], []

    def _close_run(self, run):
        for obj in (run.ef, run.codec):
            if obj is not None:
                obj.close()

    def _close_all(self, comm):
        for run in self._runs.values():
            self._close_run(run)
        self._runs.clear()
        try:
            comm.close()
        except _core.Error:
            pass

    def _call(self, fn):
        """Runs fn on the progress thread (which owns every gradwire object) and returns its result."""
        if not self._thread.is_alive():
            raise _core.StateError("the gradwire hook state is closed")
        done = {"event": threading.Event()}
        self._queue.put(("call", fn, done))
        done["event"].wait()
        if "error" in done:
            raise done["error"]
        return done.get("result")

    # ---- checkpoints ----
    def state_dict(self):
        """The hook's state for a checkpoint: per bucket run its codec, element count, step counter and
        error-feedback residual (gradwire's versioned blob). Take it between steps."""
        def collect():
            runs = {}
            for (index, i), run in self._runs.items():
                runs[f"{index}.{i}"] = {"codec": run.codec_name, "count": run.count, "step": run.step,
                                        "ef": run.ef.save() if run.ef is not None else b"",
                                        "codec_state": run.codec.save_state() if run.rounds else b""}
            return {"version": STATE_VERSION, "codec": self.codec_name, "error_feedback": self.error_feedback,
                    "world_size": self.world_size, "runs": runs}
        return self._call(collect)

    def load_state_dict(self, state):
        """Restores a state_dict(): each run resumes its step counter and residual when DDP hands the hook
        that bucket with the same codec and element count (a checkpoint of another layout is reported)."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise _core.VersionError(f"not a gradwire hook state of version {STATE_VERSION} "
                                     f"(got {state.get('version') if isinstance(state, dict) else type(state).__name__})")
        if state.get("codec") != self.codec_name:
            raise _core.MismatchError(f"the checkpoint's hook state is for codec '{state.get('codec')}', this hook "
                                      f"uses '{self.codec_name}'")

        def apply():
            pending = {}
            for k, v in state["runs"].items():
                index, i = (int(x) for x in k.split("."))
                pending[(index, i)] = dict(v)
            # Runs that exist now load at once; the others when their bucket arrives.
            for key, v in list(pending.items()):
                run = self._runs.get(key)
                if run is not None and run.codec_name == v["codec"] and run.count == v["count"]:
                    _load_step_and_residual(run, v)
                    del pending[key]
            self._pending_load = pending
        self._call(apply)

    def close(self):
        """Finishes the collectives in flight, destroys the communicator and the codecs and stops the
        progress thread."""
        if self._thread.is_alive():
            stopped = threading.Event()
            self._queue.put(("stop", stopped))
            stopped.wait()
            self._thread.join()
        if self._own_runtime and not self.runtime.closed:
            self.runtime.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def hook(state, bucket):
    """DDP communication hook: averages the bucket across ranks through gradwire (see HookState). Returns a
    torch.futures.Future completed with the averaged buffer."""
    return state.submit(bucket)


# ---- elastic membership (docs/elastic.md, "PyTorch") ----

def _joining():
    """Whether this process was started again by `gradwire run --elastic` to join a running job."""
    return os.environ.get("GW_ELASTIC_JOIN") == "1"


def _elastic_text(elastic, min_ranks):
    """The [elastic] section of the keywords elastic= and min_ranks= ("" when neither asks for it)."""
    if min_ranks is not None and not elastic:
        raise _core.InvalidArgumentError("min_ranks= is the quorum's floor of elastic mode: give it with elastic=True")
    if not elastic and min_ranks is None:
        return ""
    text = "[elastic]\nenabled = true\n"
    if min_ranks is not None:
        text += f"min_ranks = {int(min_ranks)}\n"
    return text


def _one_configuration(runtime, config, text, keywords_given, hint):
    """Whether the configuration came as a Runtime, config=FILE or text=TOML; refuses two ways at once."""
    given = sum(x is not None for x in (runtime, config, text))
    if given > 1 or (given and keywords_given):
        raise _core.InvalidArgumentError("give the configuration one way: a Runtime, config=FILE, text=TOML, or "
                                         f"keywords ({hint})")
    return bool(given)


def _joining_or_group(what):
    """Whether this process joins a running job (no process group); else it needs torch's process group."""
    joining = _joining()
    if not joining and (not dist.is_available() or not dist.is_initialized()):
        raise _core.StateError(f"{what} needs an initialized torch.distributed process group "
                               "(torch.distributed.init_process_group or gradwire.torch.init_process_group)")
    return joining


def _wrapper_text(codec, error_feedback, seed, codec_options, rules, timeout, schedule, bucket_bytes, elastic,
                  min_ranks):
    """The TOML of a wrapper configured by keywords: codec, its schedule's text, bucket size, elastic mode."""
    text = _config_text(codec or "none", error_feedback, seed, codec_options, rules, timeout) + schedule
    if bucket_bytes is not None:
        text += f"[bucket]\nbytes = {int(bucket_bytes)}\n"
    return text + _elastic_text(elastic, min_ranks)


def _make_comm(runtime, process_group, timeout, what, elastic, joining):
    """The wrapper's communicator: over torch's store (allgather_over) for a member of the process group; for
    a process that joins a running elastic job, through gradwire's join contact (torch's process group is
    fixed-size and cannot take a process back)."""
    if joining:
        if not elastic:
            raise _core.InvalidArgumentError(
                f"{what}: GW_ELASTIC_JOIN=1 (a process `gradwire run --elastic` started again to join the job), "
                f"but the configuration does not enable elastic mode; give elastic=True (or [elastic] enabled = "
                f"true) on every rank")
        return Comm(runtime, timeout=timeout)
    rank, world = _member(process_group, what)
    return Comm(runtime, rank=rank, world_size=world, allgather=allgather_over(process_group, timeout), timeout=timeout)


def _clone(obj):
    """A copy of an optimizer's state_dict() whose tensors share no memory with the optimizer's."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_clone(v) for v in obj)
    return obj


class _Snapshots:
    """The optimizer's state (and the wrapper's counters) at the start of gradwire's last two steps, as
    gw_sync keeps the parameters' and its own: after a membership change the one of the agreed step is put
    back. `optimizer` None: the optimizer's state is the application's (nothing copied)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self._kept = []  # [(steps, counters, optimizer state)], newest first

    def take(self, steps, counters=None):
        state = _clone(self.optimizer.state_dict()) if self.optimizer is not None else None
        self._kept = [(steps, counters, state)] + self._kept[:1]

    def restore(self, steps):
        for i, (s, counters, state) in enumerate(self._kept):
            if s != steps:
                continue
            # The newest one is the state at this very step's start: nothing changed it since.
            if i > 0 and state is not None:
                self.optimizer.load_state_dict(_clone(state))
            self._kept = [self._kept[i]]
            return counters
        raise _core.StateError(f"elastic: the members continue from step {steps}, but this rank kept the optimizer's "
                               f"state of steps {[k[0] for k in self._kept]} only (please report it)")


def _share_optimizer_state(comm, optimizer):
    """Every member takes rank 0's optimizer state: its size, then its torch.save bytes, broadcast over the
    communicator. ElasticDataParallel's members do it after every membership change and a joiner once
    after its synchronizer's finalize (the change that admitted it), so a joiner's momentum or Adam moments
    are the members' and every replica stays identical. After a change without joiners the members' states
    are equal already: the broadcast changes nothing there."""
    root = comm.rank == 0
    if root:
        out = io.BytesIO()
        torch.save(optimizer.state_dict(), out)
        data = torch.frombuffer(bytearray(out.getvalue()), dtype=torch.uint8)
        size = torch.tensor([data.numel()], dtype=torch.int64)
    else:
        size = torch.zeros(1, dtype=torch.int64)
    comm.broadcast(size, root=0)
    if not root:
        data = torch.empty(int(size.item()), dtype=torch.uint8)
    comm.broadcast(data, root=0)
    if not root:
        # map_location cpu: load_state_dict moves each state to its parameter's device.
        optimizer.load_state_dict(torch.load(io.BytesIO(data.numpy().tobytes()), map_location="cpu",
                                             weights_only=True))


def _after_change(w):
    """After gw_sync_step said GW_MEMBERSHIP_CHANGED: the wrapper's new rank and size, and the optimizer's
    state of the step the members continue from. Returns (steps, the counters kept with that step)."""
    w.membership_changed = True
    w.rank, w.world_size = w.comm.rank, w.comm.size
    steps = w.sync.stats()["steps"]
    return steps, w._snapshots.restore(steps)


class _SyncOwner:
    """What ElasticDataParallel and DiLoCo share: a gw_sync over a communicator of their own, and the
    runtime when they made it (self.sync, self.comm, self.runtime, self._own_runtime)."""

    @property
    def membership_epoch(self):
        """How many times the membership changed (elastic mode); 0 without it."""
        return self.comm.membership_epoch

    def stats(self):
        """gw_sync's counters over every bucket: wire_bytes (sent by this rank), syncs, steps, ..."""
        return self.sync.stats()

    def close(self):
        """Finishes exchanges in flight and destroys the synchronizer and the communicator."""
        if self.sync is not None:
            self.sync.close()
            self.sync = None
        if self.comm is not None:
            self.comm.close()
            self.comm = None
        if self._own_runtime and not self.runtime.closed:
            self.runtime.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ElasticDataParallel(_SyncOwner):
    """Data parallelism that survives ranks failing (and joining), without DDP (docs/elastic.md, "PyTorch"):
    after backward, `step()` averages every parameter's gradient through gradwire's synchronizer in elastic
    mode and runs the optimizer. DDP cannot do this: its reducer and its buffer broadcasts use its
    fixed-size process group.

        import gradwire.torch as gwt
        gwt.init_process_group("gloo")
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        edp = gwt.ElasticDataParallel(model, opt, codec="int8", error_feedback=True, min_ranks=2)
        while edp.steps < total_steps:
            x, y = shard(edp.steps, edp.rank, edp.world_size)   # this step's data for this rank
            opt.zero_grad(); loss_fn(model(x), y).backward()
            edp.step()    # False: the membership changed, the step was undone: compute it again

    ElasticDataParallel(model, optimizer, runtime=None, *, config=None, text=None, codec=None,
                        error_feedback=None, seed=None, rules=None, min_ranks=None, bucket_bytes=None,
                        process_group=None, timeout=None, snapshot_optimizer=True, **codec_options)

    The configuration is a gradwire.Runtime, a TOML file or text (with [elastic] enabled = true), or the
    keywords (the schedule every_step). Parameters must be float32 and contiguous; at creation every
    rank takes rank 0's (as DDP does). The process group is used for the rendezvous only (through its
    store), never after. The optimizer's state is copied at the start of every step, and after a
    membership change every member (a joiner included) takes rank 0's (snapshot_optimizer; False: both
    are the application's)."""

    def __init__(self, model, optimizer, runtime=None, *, config=None, text=None, codec=None, error_feedback=None,
                 seed=None, rules=None, min_ranks=None, bucket_bytes=None, process_group=None, timeout=None,
                 snapshot_optimizer=True, **codec_options):
        given = _one_configuration(runtime, config, text,
                                   codec is not None or codec_options or bucket_bytes or rules or seed is not None
                                   or error_feedback is not None or min_ranks is not None,
                                   "codec=, error_feedback=, min_ranks=, ...")
        joining = _joining_or_group("gradwire.torch.ElasticDataParallel")
        if not given:
            text = _wrapper_text(codec, error_feedback, seed, codec_options, rules, timeout,
                                 '[schedule]\nname = "every_step"\n', bucket_bytes, True, min_ranks)
        self._own_runtime = runtime is None
        self.runtime = runtime if runtime is not None else Runtime(config, text=text)
        self.sync = None
        self.comm = None
        try:
            cfg = tomllib.loads(self.runtime.config_dump())
            if not cfg.get("elastic", {}).get("enabled", False):
                raise _core.InvalidArgumentError(
                    "gradwire.torch.ElasticDataParallel runs in elastic mode: the configuration must say [elastic] "
                    "enabled = true (or give the keywords, which do)")
            self.model = model
            self.optimizer = optimizer
            t = float(timeout) if timeout is not None else float(cfg.get("runtime", {}).get("timeout_s", 300))
            self.comm = _make_comm(self.runtime, process_group, t, "gradwire.torch.ElasticDataParallel", True, joining)
            self.rank, self.world_size = self.comm.rank, self.comm.size
            self._params, self._grads = [], []
            for name, p in model.named_parameters():
                if not p.requires_grad:
                    continue
                if p.dtype != torch.float32 or not p.is_contiguous():
                    raise _core.InvalidArgumentError(
                        f"parameter '{name}' is {p.dtype}{'' if p.is_contiguous() else ', not contiguous'}; "
                        f"gradwire.torch.ElasticDataParallel takes contiguous float32 parameters")
                self._params.append((name, p))
            if not joining:
                with torch.no_grad():  # every replica starts from rank 0's parameters (a joiner gets them below)
                    for _, p in self._params:
                        self._synchronize(p)
                        self.comm.broadcast(p.detach(), root=0)
            self.sync = _core.Sync(self.comm, self.runtime)
            for name, p in self._params:
                # The gradient lives in a buffer of the wrapper's, registered once; step() puts it in p.grad.
                g = torch.zeros_like(p, memory_format=torch.contiguous_format)
                self.sync.register(name, g, p.detach())
                if p.dim() > 1:
                    self.sync.register_shape(name, list(p.shape))
                self._grads.append(g)
            self.sync.finalize()
        except BaseException:
            self.close()
            raise
        self.steps = self.sync.stats()["steps"] if joining else 0
        self.membership_changed = False
        self._snapshots = _Snapshots(optimizer if snapshot_optimizer else None)
        if joining and snapshot_optimizer:
            # The members do the same after the change that admitted this process (step()).
            try:
                _share_optimizer_state(self.comm, optimizer)
            except BaseException:
                self.close()
                raise

    @staticmethod
    def _synchronize(p):
        if p.is_cuda:
            torch.cuda.current_stream(p.device).synchronize()

    def step(self):
        """Averages the gradients across the members and runs the optimizer's step; returns True.

        Returns False when the membership changed (ranks failed, or joined): the step was undone, the
        parameters and the optimizer's state are those at the start of step `steps` on every member, and
        `rank`, `world_size` are the new ones. Compute that step's gradients again (with this rank's shard
        of the new membership) and call step() again. Raises gradwire's error when the quorum is lost, and
        StateError on a rank that was declared dead and came back."""
        self.membership_changed = False
        with torch.no_grad():
            for (_, p), g in zip(self._params, self._grads):
                if p.grad is None:
                    g.zero_()  # a parameter this step did not use
                elif p.grad.data_ptr() != g.data_ptr():
                    g.copy_(p.grad)
                    p.grad = g
            if self._params:
                self._synchronize(self._params[0][1])
            self._snapshots.take(self.steps)
            flags = self.sync.step()
        if flags["membership_changed"]:
            self.steps, _ = _after_change(self)
            if self._snapshots.optimizer is not None:
                _share_optimizer_state(self.comm, self.optimizer)  # a joiner's (if one came) is empty
            return False
        if flags["apply"]:
            self.optimizer.step()
        self.steps += 1
        return True


DILOCO_STATE_VERSION = 1
_DILOCO_KEYS = ("inner_steps", "fragments", "delay", "outer_lr", "outer_momentum", "nesterov")


class DiLoCo(_SyncOwner):
    """DiLoCo (docs/diloco.md) around a model and its inner optimizer, without DDP: every rank trains its
    own replica with `inner_optimizer`; every `inner_steps` steps gradwire averages each parameter's
    pseudo-gradient (its change since the last outer step) through the configured codec, with error
    feedback, and its outer optimizer (SGD with Nesterov momentum) sets the parameters.

        import gradwire.torch as gwt
        gwt.init_process_group("gloo")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        diloco = gwt.DiLoCo(model, opt, inner_steps=100, outer_lr=0.7, outer_momentum=0.9, codec="int8")
        for x, y in data:
            opt.zero_grad(); loss_fn(model(x), y).backward()
            diloco.step()                        # opt.step(), then the outer loop's part of the step

    DiLoCo(model, inner_optimizer, runtime=None, *, config=None, text=None, codec="none", error_feedback=None,
           inner_steps=100, fragments=1, delay=0, outer_lr=0.7, outer_momentum=0.9, nesterov=True,
           bucket_bytes=None, rules=None, process_group=None, timeout=None, elastic=None, min_ranks=None,
           snapshot_optimizer=True, **codec_options)

    The configuration is a gradwire.Runtime, a TOML file or text with [schedule] name = "diloco", or the
    keywords. fragments > 1 streams the outer steps (fragments synced at staggered steps; delay > 0 lets
    each exchange run behind `delay` inner steps); a fragment is at least one bucket, so set bucket_bytes
    ([bucket] bytes) small enough. Parameters must be float32 and contiguous, CPU or CUDA, and stay where
    they are. The ranks' parameters are made equal at the first step (a dense average).

    elastic=True ([elastic] enabled, min_ranks= its quorum floor; delay 0 only) survives ranks that fail
    or join (docs/elastic.md, "PyTorch"): see step(). The process group is then used for the rendezvous
    only (through its store), never after a failure; the inner optimizer's state is copied at the start
    of every step (snapshot_optimizer; False: restoring it after a change is the application's)."""

    def __init__(self, model, inner_optimizer, runtime=None, *, config=None, text=None, codec=None,
                 error_feedback=None, inner_steps=None, fragments=None, delay=None, outer_lr=None,
                 outer_momentum=None, nesterov=None, bucket_bytes=None, rules=None, process_group=None,
                 timeout=None, elastic=None, min_ranks=None, snapshot_optimizer=True, **codec_options):
        keywords = {"inner_steps": inner_steps, "fragments": fragments, "delay": delay, "outer_lr": outer_lr,
                    "outer_momentum": outer_momentum, "nesterov": nesterov}
        keywords = {k: v for k, v in keywords.items() if v is not None}
        given = _one_configuration(runtime, config, text,
                                   codec is not None or keywords or codec_options or bucket_bytes or rules or
                                   elastic is not None or min_ranks is not None,
                                   "codec=, inner_steps=, outer_lr=, elastic=, ...")
        joining = _joining_or_group("gradwire.torch.DiLoCo")
        if not given:
            schedule = '[schedule]\nname = "diloco"\n[schedule.diloco]\n'
            schedule += "".join(f"{k} = {_toml_value(v)}\n" for k, v in keywords.items())
            text = _wrapper_text(codec, error_feedback, None, codec_options, rules, timeout, schedule, bucket_bytes,
                                 elastic, min_ranks)
        self._own_runtime = runtime is None
        self.runtime = runtime if runtime is not None else Runtime(config, text=text)
        self.sync = None
        self.comm = None
        try:
            cfg = tomllib.loads(self.runtime.config_dump())
            if cfg.get("schedule", {}).get("name") != "diloco":
                raise _core.InvalidArgumentError(
                    f"gradwire.torch.DiLoCo runs the schedule 'diloco'; the configuration names "
                    f"'{cfg.get('schedule', {}).get('name')}' ([schedule] name = \"diloco\")")
            self.config = dict(cfg.get("schedule", {}).get("diloco", {}))
            self.elastic = bool(cfg.get("elastic", {}).get("enabled", False))
            if self.elastic and int(self.config.get("delay", 0)) > 0:
                raise _core.UnsupportedError(
                    f"gradwire.torch.DiLoCo: elastic mode cannot replay an outer exchange that runs behind the inner "
                    f"steps (delay = {self.config['delay']}); use delay = 0 with elastic=True (docs/elastic.md)")
            self.model = model
            self.inner_optimizer = inner_optimizer
            self.process_group = process_group
            t = float(timeout) if timeout is not None else float(cfg.get("runtime", {}).get("timeout_s", 300))
            self.comm = _make_comm(self.runtime, process_group, t, "gradwire.torch.DiLoCo", self.elastic, joining)
            self.rank, self.world_size = self.comm.rank, self.comm.size
            self.sync = _core.Sync(self.comm, self.runtime)
            self._params = []
            for name, p in model.named_parameters():
                if not p.requires_grad:
                    continue
                if p.dtype != torch.float32 or not p.is_contiguous():
                    raise _core.InvalidArgumentError(
                        f"parameter '{name}' is {p.dtype}{'' if p.is_contiguous() else ', not contiguous'}; "
                        f"gradwire.torch.DiLoCo takes contiguous float32 parameters")
                # The schedule never touches gradients: the parameter stands for its own (same size).
                self.sync.register(name, p.detach(), p.detach())
                self._params.append(p)
            self.sync.finalize()
        except BaseException:
            self.close()
            raise
        # A joiner's finalize received the synchronizer's state and the parameters: it continues from there.
        self.steps = self.sync.stats()["steps"] if joining else 0
        self.outer_steps = 0
        self.membership_changed = False
        self._snapshots = _Snapshots(inner_optimizer if snapshot_optimizer else None) if self.elastic else None

    def step(self, closure=None):
        """The inner optimizer's step, then gradwire's: on an outer step the parameters change in place.
        Returns the inner optimizer's result.

        Elastic mode (elastic=True, docs/elastic.md): when ranks failed or joined during gradwire's part,
        the survivors agree on a new membership, the parameters and gradwire's state go back to the start
        of the last step every member completed, the inner optimizer's state with them (snapshot_optimizer),
        and gradwire's part is done again among the new members. `membership_changed` then says so,
        `rank` and `world_size` are the new ones (re-shard the data), and `steps` may be one less than
        the calls made (this rank's last inner step was undone: loop on `steps`, not on a counter of
        your own)."""
        result = self.inner_optimizer.step() if closure is None else self.inner_optimizer.step(closure)
        self.membership_changed = False
        with torch.no_grad():
            for p in self._params:
                if p.is_cuda:
                    torch.cuda.current_stream(p.device).synchronize()
                    break
            while True:
                if self._snapshots is not None:
                    self._snapshots.take(self.steps, self.outer_steps)
                flags = self.sync.step()
                if not flags["membership_changed"]:
                    break
                self.steps, self.outer_steps = _after_change(self)
        self.steps += 1
        if flags.get("outer_step"):
            self.outer_steps += 1
        return result

    def state_dict(self):
        """The synchronizer's checkpoint (anchors, outer momentum, error-feedback residuals, exchanges in
        flight, the schedule's counters and configuration) and the inner optimizer's state. The model's
        parameters are the application's to save."""
        return {"version": DILOCO_STATE_VERSION, "config": dict(self.config), "steps": self.steps,
                "outer_steps": self.outer_steps, "sync": self.sync.save_state(),
                "inner_optimizer": self.inner_optimizer.state_dict()}

    def load_state_dict(self, state):
        """Restores a state_dict() taken with the same outer configuration (another is refused with
        gradwire.MismatchError, naming it), after the model's parameters were restored."""
        if not isinstance(state, dict) or state.get("version") != DILOCO_STATE_VERSION:
            raise _core.VersionError(f"not a gradwire.torch.DiLoCo state of version {DILOCO_STATE_VERSION}")
        self.sync.load_state(state["sync"])
        self.inner_optimizer.load_state_dict(state["inner_optimizer"])
        self.steps = int(state["steps"])
        self.outer_steps = int(state["outer_steps"])



# gradwire.torch.fsdp (FSDP2's reduce-scatter and all-gather through gradwire) lives in torch_fsdp.py, a
# module of the gradwire package, and is importable as gradwire.torch.fsdp.
import sys as _sys  # noqa: E402
from . import torch_fsdp as fsdp  # noqa: E402
_sys.modules[__name__ + ".fsdp"] = fsdp

