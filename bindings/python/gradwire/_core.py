"""Pythonic objects over gradwire.h: Runtime, Codec, ErrorFeedback, Comm, Request, Sync.

Ownership follows the C ABI: each object destroys its handle in close() (also on `with` exit and, as a
last resort, when garbage-collected). Objects keep alive what the C side needs alive: an ErrorFeedback
its codec, a Sync its runtime, communicator and registered tensors, a Request its buffers and codec.
"""
import builtins
import ctypes
import threading
import weakref

from . import _lib
from ._lib import gw_tensor

_lib_handle = None
_lib_path = None
_lib_lock = threading.Lock()


def load_library(path=None):
    """Loads libgradwire (once per process); `path` overrides the search (see _lib.load)."""
    global _lib_handle, _lib_path
    with _lib_lock:
        if _lib_handle is None or (path is not None and path != _lib_path):
            _lib_handle, _lib_path = _lib.load(path)
        return _lib_handle


def lib():
    return _lib_handle if _lib_handle is not None else load_library()


def library_path():
    """The file libgradwire was loaded from."""
    lib()
    return _lib_path


# ---- errors -------------------------------------------------------------------------------------------

class Error(Exception):
    """A gradwire call failed. `status` is the gw_status value, `status_name` its name ("GW_ERR_CONFIG"),
    `message` gradwire's own message (gw_last_error): what was wrong and what to do."""

    status = None

    def __init__(self, message, status=None):
        if status is not None:
            self.status = status
        self.message = message
        super().__init__(message)

    @property
    def status_name(self):
        return _STATUS_NAMES.get(self.status, "?")

    def __str__(self):
        return f"{self.status_name}: {self.message}"


def _cls(name, status, *bases, doc=""):
    return type(name, (Error,) + bases, {"status": status, "__doc__": doc, "__module__": "gradwire"})


InvalidArgumentError = _cls("InvalidArgumentError", _lib.GW_ERR_INVALID_ARGUMENT, ValueError,
                            doc="A NULL handle, a value out of range, a buffer of the wrong dtype or layout.")
NoMemoryError = _cls("NoMemoryError", _lib.GW_ERR_NO_MEMORY, MemoryError)
NotFoundError = _cls("NotFoundError", _lib.GW_ERR_NOT_FOUND, LookupError, doc="No such plugin, component or key.")
PluginError = _cls("PluginError", _lib.GW_ERR_PLUGIN, doc="A plugin could not be loaded or is malformed.")
VersionError = _cls("VersionError", _lib.GW_ERR_VERSION, doc="An ABI or format version that is not supported.")
ConfigError = _cls("ConfigError", _lib.GW_ERR_CONFIG, ValueError, doc="The configuration is invalid.")
UnsupportedError = _cls("UnsupportedError", _lib.GW_ERR_UNSUPPORTED, NotImplementedError,
                        doc="A valid request this build or component cannot do.")
TimeoutError = _cls("TimeoutError", _lib.GW_ERR_TIMEOUT, builtins.TimeoutError,
                    doc="A wait or a collective ran past its timeout.")
MismatchError = _cls("MismatchError", _lib.GW_ERR_MISMATCH,
                     doc="Ranks disagree (count, dtype, op, codec, configuration, plugin versions).")
TransportError = _cls("TransportError", _lib.GW_ERR_TRANSPORT, ConnectionError, doc="I/O failure; a peer died.")
CorruptError = _cls("CorruptError", _lib.GW_ERR_CORRUPT, ValueError, doc="A payload or state blob is malformed.")
AbortedError = _cls("AbortedError", _lib.GW_ERR_ABORTED, doc="Comm.abort() was called.")
BufferTooSmallError = _cls("BufferTooSmallError", _lib.GW_ERR_BUFFER_TOO_SMALL, ValueError)
StateError = _cls("StateError", _lib.GW_ERR_STATE, RuntimeError, doc="A call not valid in the object's state.")
InternalError = _cls("InternalError", _lib.GW_ERR_INTERNAL, RuntimeError)

_BY_STATUS = {c.status: c for c in (InvalidArgumentError, NoMemoryError, NotFoundError, PluginError, VersionError,
                                    ConfigError, UnsupportedError, TimeoutError, MismatchError, TransportError,
                                    CorruptError, AbortedError, BufferTooSmallError, StateError, InternalError)}
_STATUS_NAMES = {c.status: "GW_ERR_" + {"NoMemoryError": "NO_MEMORY", "NotFoundError": "NOT_FOUND",
                                        "InvalidArgumentError": "INVALID_ARGUMENT",
                                        "BufferTooSmallError": "BUFFER_TOO_SMALL"}.get(
                                            c.__name__, c.__name__[:-len("Error")].upper())
                 for c in _BY_STATUS.values()}


def error_class(status):
    """The Error subclass raised for a gw_status value."""
    return _BY_STATUS.get(status, Error)


def _error(status, message=None):
    if message is None:
        message = lib().gw_last_error().decode(errors="replace")
    if not message:
        message = lib().gw_status_string(status).decode()
    cls = _BY_STATUS.get(status)
    return cls(message) if cls is not None else Error(message, status)


def _check(status):
    if status != _lib.GW_OK:
        raise _error(status)
    return status


# ---- buffers ------------------------------------------------------------------------------------------

DTYPES = {"f32": _lib.GW_DTYPE_F32, "f64": _lib.GW_DTYPE_F64, "f16": _lib.GW_DTYPE_F16, "bf16": _lib.GW_DTYPE_BF16,
          "i32": _lib.GW_DTYPE_I32, "i64": _lib.GW_DTYPE_I64, "u8": _lib.GW_DTYPE_U8}
_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
_FORMAT_DTYPES = {("f", 4): "f32", ("d", 8): "f64", ("e", 2): "f16", ("i", 4): "i32", ("l", 4): "i32",
                  ("l", 8): "i64", ("q", 8): "i64", ("B", 1): "u8", ("b", 1): "u8", ("c", 1): "u8"}
_NUMPY_DTYPES = {"f4": "f32", "f8": "f64", "f2": "f16", "i4": "i32", "i8": "i64", "u1": "u8", "i1": "u8"}
_TORCH_DTYPES = {"torch.float32": "f32", "torch.float64": "f64", "torch.float16": "f16", "torch.bfloat16": "bf16",
                 "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8", "torch.int8": "u8"}

OPS = {"sum": _lib.GW_REDUCE_SUM, "avg": _lib.GW_REDUCE_AVG, "min": _lib.GW_REDUCE_MIN, "max": _lib.GW_REDUCE_MAX}


def _op(op):
    if isinstance(op, int) and op in OPS.values():
        return op
    try:
        return OPS[str(op).lower()]
    except KeyError:
        raise InvalidArgumentError(f"reduce op {op!r} is not one of {', '.join(OPS)}") from None


class _Buffer:
    """A gw_tensor over an object's memory, and the object, which must stay alive while it is used."""

    __slots__ = ("tensor", "owner", "nbytes", "dtype")

    def __init__(self, tensor, owner, nbytes, dtype):
        self.tensor, self.owner, self.nbytes, self.dtype = tensor, owner, nbytes, dtype


def _is_torch(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


def as_buffer(obj, what="buffer", writable=False, dtype=None, device_ok=False):
    """A gw_tensor over `obj` without copying: a torch tensor (contiguous; on the CPU, or on a CUDA device
    where `device_ok`), a numpy array (C-contiguous) or any object with the buffer protocol (bytearray,
    memoryview, array.array, bytes when read-only). `dtype` ("f32", ...) is the element type required, or
    None for any. Raises InvalidArgumentError naming `what` and the problem."""
    if isinstance(obj, _Buffer):
        buf = obj
    elif _is_torch(obj):
        buf = _torch_buffer(obj, what, device_ok)
    elif hasattr(obj, "__array_interface__"):
        buf = _numpy_buffer(obj, what, writable)
    else:
        buf = _protocol_buffer(obj, what, writable)
    if dtype is not None and buf.dtype != dtype:
        raise InvalidArgumentError(f"{what} holds {buf.dtype} elements; this call needs {dtype} "
                                   f"(convert it, e.g. tensor.float() or array.astype('float32'))")
    return buf


def _device_buffer(obj, what="buffer", writable=False, dtype=None):
    """as_buffer for the calls that take device tensors (the communicator's collectives, gw_sync)."""
    return as_buffer(obj, what, writable, dtype, device_ok=True)


def _torch_buffer(t, what, device_ok=False):
    name = _TORCH_DTYPES.get(str(t.dtype))
    if name is None:
        raise InvalidArgumentError(f"{what} is a torch tensor of {t.dtype}; gradwire takes "
                                   f"{', '.join(_TORCH_DTYPES)}")
    if t.device.type not in ("cpu", "cuda") or (t.device.type == "cuda" and not device_ok):
        raise UnsupportedError(f"{what} lives on {t.device}; this call takes CPU tensors (copy it with .cpu()); "
                               f"the communicator's collectives and gw_sync also take CUDA tensors")
    if not t.is_contiguous():
        raise InvalidArgumentError(f"{what} is not contiguous (strides {tuple(t.stride())}); pass "
                                   f"tensor.contiguous()")
    tensor = gw_tensor(memory=_lib.GW_MEMORY_HOST, dtype=DTYPES[name], data=t.data_ptr() or None, count=t.numel())
    if t.device.type == "cuda":
        # The device and the stream PyTorch orders this tensor's work on: gradwire orders its own work
        # there too (after what is queued, before what comes next).
        import torch
        tensor.memory = _lib.GW_MEMORY_CUDA
        tensor.device = t.device.index if t.device.index is not None else torch.cuda.current_device()
        tensor.stream = torch.cuda.current_stream(t.device).cuda_stream or None
    return _Buffer(tensor, t, t.numel() * t.element_size(), name)


def _numpy_buffer(a, what, writable):
    ai = a.__array_interface__
    typestr = ai["typestr"]
    name = _NUMPY_DTYPES.get(typestr[1:])
    if name is None or (typestr[0] == ">" and typestr[1:] not in ("u1", "i1")):
        raise InvalidArgumentError(f"{what} is an array of {getattr(a, 'dtype', typestr)}; gradwire takes float32, "
                                   f"float64, float16, int32, int64 and uint8 in native byte order")
    if ai.get("strides") is not None and not a.flags["C_CONTIGUOUS"]:
        raise InvalidArgumentError(f"{what} is not C-contiguous (strides {a.strides}); pass "
                                   f"numpy.ascontiguousarray(array)")
    ptr, readonly = ai["data"]
    if writable and readonly:
        raise InvalidArgumentError(f"{what} is read-only; the call writes into it")
    count = int(a.size)
    tensor = gw_tensor(memory=_lib.GW_MEMORY_HOST, dtype=DTYPES[name], data=ptr or None, count=count)
    return _Buffer(tensor, a, count * int(typestr[2:]), name)


def _protocol_buffer(obj, what, writable):
    try:
        mv = memoryview(obj)
    except TypeError:
        raise InvalidArgumentError(f"{what} ({type(obj).__name__}) is not a buffer: pass a numpy array, a torch "
                                   f"tensor, a bytearray or a memoryview") from None
    if not mv.c_contiguous:
        raise InvalidArgumentError(f"{what} is not contiguous; pass a contiguous copy")
    fmt = mv.format.lstrip("@=<")
    name = _FORMAT_DTYPES.get((fmt, mv.itemsize))
    if name is None:
        raise InvalidArgumentError(f"{what} has elements of format '{mv.format}'; gradwire takes f, d, e, i, q and "
                                   f"B (memoryview.cast() can reinterpret bytes)")
    if mv.readonly:
        if writable:
            raise InvalidArgumentError(f"{what} is read-only; the call writes into it")
        if isinstance(obj, bytes):
            ptr = ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value
            holder = obj
        else:
            raise InvalidArgumentError(f"{what} is a read-only {type(obj).__name__}; pass bytes, a writable buffer "
                                       f"or a numpy array")
    else:
        holder = (ctypes.c_char * mv.nbytes).from_buffer(mv) if mv.nbytes else None
        ptr = ctypes.addressof(holder) if holder is not None else None
        holder = (mv, holder)
    count = mv.nbytes // mv.itemsize
    tensor = gw_tensor(memory=_lib.GW_MEMORY_HOST, dtype=DTYPES[name], data=ptr, count=count)
    return _Buffer(tensor, holder, mv.nbytes, name)


def _ref(buf):
    return ctypes.byref(buf.tensor) if buf is not None else None


def _bytes_out(nbytes):
    return bytearray(nbytes)


def _closed(name):
    return StateError(f"this {name} is closed")


class _Handle:
    """An owned C handle, destroyed once by close()."""

    _kind = "object"

    def __init__(self):
        self._h = ctypes.c_void_p()

    @property
    def handle(self):
        if not self._h:
            raise _closed(self._kind)
        return self._h

    @property
    def closed(self):
        return not self._h

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at collection time
            pass


# ---- version ------------------------------------------------------------------------------------------

def version():
    """The library's version string ("major.minor.patch")."""
    return lib().gw_version_string().decode()


def abi_version():
    return lib().gw_abi_version_major(), lib().gw_abi_version_minor()


def status_string(status):
    return lib().gw_status_string(status).decode()


def dtype_size(dtype):
    return lib().gw_dtype_size(DTYPES[dtype])


# ---- runtime ------------------------------------------------------------------------------------------

LOG_LEVELS = {"error": _lib.GW_LOG_ERROR, "warn": _lib.GW_LOG_WARN, "info": _lib.GW_LOG_INFO,
              "debug": _lib.GW_LOG_DEBUG, "trace": _lib.GW_LOG_TRACE}


class Runtime(_Handle):
    """The configuration and the loaded plugins.

    Runtime(config=None, text=None, plugin_paths=(), log=None, log_level="warn", env_overrides=True)
    `config`: a TOML file's path; `text`: TOML text (not both). `log(level, component, message)` receives
    log lines (from any thread) instead of stderr."""

    _kind = "runtime"

    def __init__(self, config=None, *, text=None, plugin_paths=(), log=None, log_level="warn", env_overrides=True,
                 inspect_only=False):
        super().__init__()
        if config is not None and text is not None:
            raise InvalidArgumentError("give the configuration as a file (config) or as text (text=), not both")
        if log_level not in LOG_LEVELS:
            raise InvalidArgumentError(f"log_level {log_level!r} is not one of {', '.join(LOG_LEVELS)}")
        o = _lib.gw_runtime_options(log_level=LOG_LEVELS[log_level])
        o.config_path = None if config is None else str(config).encode()
        o.config_text = None if text is None else text.encode()
        paths = [str(p).encode() for p in plugin_paths]
        self._paths = (ctypes.c_char_p * max(1, len(paths)))(*paths)
        o.plugin_paths = ctypes.cast(self._paths, ctypes.POINTER(ctypes.c_char_p)) if paths else None
        o.num_plugin_paths = len(paths)
        self._log = None
        if log is not None:
            names = {v: k for k, v in LOG_LEVELS.items()}

            def trampoline(_user, level, component, message):
                try:
                    log(names.get(level, str(level)), component.decode(errors="replace"),
                        message.decode(errors="replace"))
                except Exception:  # noqa: BLE001 - must not unwind into C
                    pass

            self._log = _lib.LOG_FN(trampoline)
            o.log = self._log
        o.flags = (0 if env_overrides else _lib.GW_RUNTIME_NO_ENV_OVERRIDES) | \
            (_lib.GW_RUNTIME_INSPECT_ONLY if inspect_only else 0)
        _check(lib().gw_runtime_create(ctypes.byref(o), ctypes.byref(self._h)))

    def close(self):
        if self._h:
            h, self._h = self._h, ctypes.c_void_p()
            _check(lib().gw_runtime_destroy(h))

    def config_dump(self, reference=False):
        """The effective configuration as TOML (defaults included), or the Markdown key reference."""
        fmt = _lib.GW_CONFIG_FORMAT_REFERENCE if reference else _lib.GW_CONFIG_FORMAT_TOML
        n = ctypes.c_size_t()
        _check(lib().gw_runtime_config_dump(self.handle, fmt, None, 0, ctypes.byref(n)))
        buf = ctypes.create_string_buffer(n.value + 1)
        _check(lib().gw_runtime_config_dump(self.handle, fmt, buf, n.value + 1, ctypes.byref(n)))
        return buf.value.decode()

    def plugins(self):
        """Every plugin candidate found: dicts with path, loaded, error, name, version, description, abi and
        components (kind, name, help)."""
        n = ctypes.c_uint32()
        _check(lib().gw_runtime_plugin_count(self.handle, ctypes.byref(n)))
        out = []
        kinds = {0: "codec", 1: "schedule", 2: "transport"}
        for i in range(n.value):
            p = _lib.gw_plugin_info()
            _check(lib().gw_runtime_plugin_info(self.handle, i, ctypes.byref(p)))
            comps = []
            for j in range(p.num_components):
                c = _lib.gw_component_info()
                _check(lib().gw_runtime_component_info(self.handle, i, j, ctypes.byref(c)))
                comps.append({"kind": kinds.get(c.kind, str(c.kind)), "name": _s(c.name), "help": _s(c.help)})
            out.append({"path": _s(p.path), "loaded": p.status == _lib.GW_OK, "status": p.status,
                        "error": _s(p.error), "name": _s(p.name), "version": _s(p.version),
                        "description": _s(p.description), "abi": (p.abi_major, p.abi_minor), "components": comps})
        return out

    def search_paths(self):
        n = ctypes.c_uint32()
        _check(lib().gw_runtime_search_path_count(self.handle, ctypes.byref(n)))
        out = []
        for i in range(n.value):
            s = ctypes.c_char_p()
            _check(lib().gw_runtime_search_path(self.handle, i, ctypes.byref(s)))
            out.append(_s(s))
        return out

    def codec(self, name=None):
        return Codec(self, name)


def _s(b):
    if isinstance(b, ctypes.c_char_p):
        b = b.value
    return "" if b is None else b.decode(errors="replace")


# ---- codecs -------------------------------------------------------------------------------------------

def _context(seed=0, step=0, rank=0, world_size=1, buffer_id=0, shapes=None):
    """A gw_codec_context; `shapes` (since ABI 1.4): [(offset, rows, cols)] of the tensors in the buffer. The
    array is kept on the context object (the C side copies it when the call starts)."""
    ctx = _lib.gw_codec_context(seed=seed, step=step, rank=rank, world_size=world_size, buffer_id=buffer_id)
    if shapes:
        arr = (_lib.gw_tensor_shape * len(shapes))(*[_lib.gw_tensor_shape(int(o), int(r), int(c)) for o, r, c in shapes])
        ctx.shapes = ctypes.cast(arr, ctypes.c_void_p)
        ctx.num_shapes = len(shapes)
        ctx._shapes = arr
    return ctx


class Codec(_Handle):
    """A codec by name with its [codec.<name>] configuration (None: the [codec] name)."""

    _kind = "codec"

    def __init__(self, runtime, name=None):
        super().__init__()
        self._lock = threading.Lock()
        _check(lib().gw_codec_create(runtime.handle, None if name is None else name.encode(), ctypes.byref(self._h)))

    def close(self):
        if self._h:
            h, self._h = self._h, ctypes.c_void_p()
            _check(lib().gw_codec_destroy(h))

    @property
    def name(self):
        return lib().gw_codec_name(self.handle).decode()

    def properties(self):
        """dict: flags (set of names), sum_dtype, dtypes (accepted input dtypes)."""
        p = _lib.gw_codec_properties()
        _check(lib().gw_codec_get_properties(self.handle, ctypes.byref(p)))
        names = {_lib.GW_CODEC_LOSSLESS: "lossless", _lib.GW_CODEC_SPARSE: "sparse", _lib.GW_CODEC_SUMMABLE: "summable",
                 _lib.GW_CODEC_SHARED_INDICES: "shared_indices", _lib.GW_CODEC_CUDA: "cuda",
                 _lib.GW_CODEC_STATEFUL: "stateful",
                 _lib.GW_CODEC_ROUNDS: "rounds"}
        return {"flags": {n for bit, n in names.items() if p.flags & bit},
                "sum_dtype": _DTYPE_NAMES.get(p.sum_dtype, "?"),
                "dtypes": {n for n, v in DTYPES.items() if p.dtypes & (1 << v)}}

    def max_encoded_size(self, count, dtype="f32"):
        n = ctypes.c_uint64()
        _check(lib().gw_codec_max_encoded_size(self.handle, DTYPES[dtype], count, ctypes.byref(n)))
        return n.value

    def encode(self, data, *, seed=0, step=0, rank=0, world_size=1, out=None):
        """The payload (wire format: header and body) of `data`, as bytes; or written into `out` (a writable
        buffer), returning the payload's length."""
        b = as_buffer(data, "data")
        cap = self.max_encoded_size(b.tensor.count, b.dtype)
        target = bytearray(cap) if out is None else out
        o = as_buffer(target, "out", writable=True)
        if o.nbytes < cap and out is not None:
            pass  # the codec says whether it fits (GW_ERR_BUFFER_TOO_SMALL)
        size = ctypes.c_uint64()
        ctx = _context(seed, step, rank, world_size)
        with self._lock:
            _check(lib().gw_codec_encode(self.handle, ctypes.byref(ctx), _ref(b), o.tensor.data, o.nbytes,
                                         ctypes.byref(size)))
        if out is not None:
            return size.value
        return bytes(memoryview(target)[:size.value])

    def decode(self, payload, out, *, accumulate=False, seed=0, step=0, rank=0, world_size=1):
        """Decodes `payload` into `out` (a writable buffer of the payload's dtype and count)."""
        p = as_buffer(payload, "payload")
        o = as_buffer(out, "out", writable=True)
        ctx = _context(seed, step, rank, world_size)
        with self._lock:
            _check(lib().gw_codec_decode(self.handle, ctypes.byref(ctx), p.tensor.data, p.nbytes, _ref(o),
                                         _lib.GW_DECODE_ACCUMULATE if accumulate else 0))
        return out


    def save_state(self):
        """The state the codec keeps between calls (powersgd's warm starts and residuals) as bytes."""
        n = ctypes.c_uint64()
        with self._lock:
            _check(lib().gw_codec_save_state(self.handle, None, 0, ctypes.byref(n)))
            buf = ctypes.create_string_buffer(max(1, n.value))
            _check(lib().gw_codec_save_state(self.handle, ctypes.cast(buf, ctypes.c_void_p), n.value, ctypes.byref(n)))
        return buf.raw[:n.value]

    def load_state(self, blob):
        b = bytes(blob)
        with self._lock:
            _check(lib().gw_codec_load_state(self.handle, b, len(b)))


class ErrorFeedback(_Handle):
    """Error feedback around a lossy codec: a residual per buffer id, saved and restored as a blob."""

    _kind = "error feedback"

    def __init__(self, codec):
        super().__init__()
        self.codec = codec  # must outlive the error feedback
        _check(lib().gw_error_feedback_create(codec.handle, ctypes.byref(self._h)))

    def close(self):
        if self._h:
            h, self._h = self._h, ctypes.c_void_p()
            _check(lib().gw_error_feedback_destroy(h))

    def encode(self, buffer_id, data, *, seed=0, step=0, rank=0, world_size=1, out=None):
        """Encodes data + residual[buffer_id] (f32) and updates the residual; returns the payload as bytes
        (or its length when written into `out`)."""
        b = as_buffer(data, "data", dtype="f32")
        cap = self.codec.max_encoded_size(b.tensor.count, "f32")
        target = bytearray(cap) if out is None else out
        o = as_buffer(target, "out", writable=True)
        size = ctypes.c_uint64()
        ctx = _context(seed, step, rank, world_size)
        _check(lib().gw_error_feedback_encode(self.handle, buffer_id, ctypes.byref(ctx), _ref(b), o.tensor.data,
                                              o.nbytes, ctypes.byref(size)))
        if out is not None:
            return size.value
        return bytes(memoryview(target)[:size.value])

    def reset(self):
        _check(lib().gw_error_feedback_reset(self.handle))

    def save(self):
        """The state (every residual) as bytes."""
        n = ctypes.c_uint64()
        _check(lib().gw_error_feedback_state_size(self.handle, ctypes.byref(n)))
        buf = ctypes.create_string_buffer(max(1, n.value))
        _check(lib().gw_error_feedback_save(self.handle, buf, n.value, ctypes.byref(n)))
        return buf.raw[:n.value]

    def load(self, blob):
        b = bytes(blob)
        _check(lib().gw_error_feedback_load(self.handle, b, len(b)))


# ---- communicators ------------------------------------------------------------------------------------

class Request:
    """A collective in flight. test() / wait() report its completion and raise its error; the request keeps
    its buffers (and codec) alive until it is freed, which happens when it completes or its communicator
    closes."""

    def __init__(self, comm, handle, keep):
        self._comm = comm
        self._h = handle
        self._keep = keep
        self._done = False
        comm._requests.add(self)

    @property
    def done(self):
        return self._done

    def _finish(self, status):
        message = lib().gw_last_error().decode(errors="replace") if status != _lib.GW_OK else None
        self._free()
        self._done = True
        if status != _lib.GW_OK:
            raise _error(status, message)

    def _free(self):
        if self._h:
            h, self._h = self._h, ctypes.c_void_p()
            self._comm._requests.discard(self)
            lib().gw_request_free(h)
            self._keep = None

    def test(self):
        """True once the request completed (raising its error if it failed), False while it runs."""
        if self._done:
            return True
        self._comm._check_thread()
        st = lib().gw_request_test(self._h)
        if st == _lib.GW_IN_PROGRESS:
            return False
        self._finish(st)
        return True

    def wait(self, timeout=None):
        """Waits for completion (timeout in seconds, None: the communicator's own timeout only). Raises
        gradwire.TimeoutError when `timeout` passed first (the request still runs), or the request's error."""
        if self._done:
            return
        self._comm._check_thread()
        st = lib().gw_request_wait(self._h, -1.0 if timeout is None else float(timeout))
        if st == _lib.GW_ERR_TIMEOUT and timeout is not None:
            msg = lib().gw_last_error().decode(errors="replace")
            # The request is alive unless the collective itself timed out; test says which.
            st2 = lib().gw_request_test(self._h)
            if st2 == _lib.GW_IN_PROGRESS:
                raise TimeoutError(msg or f"the request did not complete within {timeout} s")
            st = st2
        self._finish(st)

    def free(self):
        """Frees the request. Freeing a collective before it completed fails the communicator on every rank."""
        self._comm._check_thread()
        self._free()
        self._done = True


class Comm(_Handle):
    """A communicator: rank, world size and the collectives.

    Comm(runtime, rank=None, world_size=None, local_rank=None, root_address=None, root_port=None,
         allgather=None, timeout=None)
    Values left None come from the environment (GW_RANK ..., torchrun's RANK/WORLD_SIZE/MASTER_ADDR/
    MASTER_PORT, Open MPI, Slurm). `allgather(data: bytes) -> list of bytes` (every rank's, in rank order)
    replaces the built-in rendezvous; it must bound its own waits.

    A communicator belongs to the thread that created it: every call but abort() comes from that thread
    (a call from another thread raises StateError)."""

    _kind = "communicator"

    def __init__(self, runtime, *, rank=None, world_size=None, local_rank=None, root_address=None, root_port=None,
                 allgather=None, timeout=None):
        super().__init__()
        self._requests = weakref.WeakSet()
        self._thread = threading.get_ident()
        self.runtime = runtime
        o = _lib.gw_comm_options()
        for k, v in (("rank", rank), ("world_size", world_size), ("local_rank", local_rank),
                     ("root_port", root_port)):
            if v is not None:
                setattr(o, k, int(v))
        if root_address is not None:
            o.root_address = str(root_address).encode()
        if timeout is not None:
            o.timeout_s = float(timeout)
        self._gather_error = None
        if allgather is not None:
            # A callback that knows its group (gradwire.torch.allgather_over) gives the rank and world size
            # left unset, and refuses others here, on every rank alike, before anyone waits for anyone.
            for key, given in (("world_size", world_size), ("rank", rank)):
                theirs = getattr(allgather, key, None)
                if theirs is None:
                    continue
                if given is None:
                    setattr(o, key, int(theirs))
                elif int(given) != int(theirs):
                    raise InvalidArgumentError(
                        f"the communicator's {key} is {int(given)} but its allgather callback's group has "
                        f"{key} {int(theirs)}: a communicator must span exactly the process group it "
                        f"gathers over (give {key}={int(theirs)}, or the callback of a group of {int(given)}"
                        f"{' ranks' if key == 'world_size' else ''})")
            expected = int(o.world_size) if o.world_size >= 0 else None

            def trampoline(_user, data, nbytes, out):
                try:
                    mine = ctypes.string_at(data, nbytes)
                    parts = list(allgather(mine))
                    if expected is not None and len(parts) != expected:
                        raise InvalidArgumentError(f"the allgather callback returned {len(parts)} parts; the "
                                                   f"communicator has {expected} ranks")
                    joined = b"".join(bytes(p) for p in parts)
                    if any(len(p) != nbytes for p in parts):
                        raise InvalidArgumentError(f"the allgather callback returned parts of "
                                                   f"{sorted({len(p) for p in parts})} bytes; each must have "
                                                   f"{nbytes}")
                    ctypes.memmove(out, joined, len(joined))
                    return _lib.GW_OK
                except BaseException as e:  # noqa: BLE001 - must not unwind into C
                    self._gather_error = e
                    return getattr(e, "status", None) or (_lib.GW_ERR_TIMEOUT if isinstance(e, builtins.TimeoutError)
                                                          else _lib.GW_ERR_TRANSPORT)

            self._allgather = _lib.ALLGATHER_FN(trampoline)
            o.allgather = self._allgather
        st = lib().gw_comm_create(runtime.handle, ctypes.byref(o), ctypes.byref(self._h))
        if st != _lib.GW_OK:
            err = _error(st)
            ge = self._gather_error
            if ge is not None:
                # The runtime cannot see into the callback: what it raised is the message that says why.
                said = f"{ge.status_name}: {ge.message}" if isinstance(ge, Error) else f"{type(ge).__name__}: {ge}"
                err.message = f"{err.message}\nThe callback raised {said}"
                err.args = (err.message,)
                raise err from ge
            raise err

    def _check_thread(self):
        if threading.get_ident() != self._thread:
            raise StateError("a communicator belongs to the thread that created it; this call came from another "
                             "thread (create the communicator on the thread that uses it)")

    def close(self):
        """Frees requests still alive (a collective freed before it completed fails it on every rank), then
        destroys the communicator."""
        if self._h:
            for r in list(self._requests):
                r._free()
            h, self._h = self._h, ctypes.c_void_p()
            _check(lib().gw_comm_destroy(h))

    @property
    def rank(self):
        return lib().gw_comm_rank(self.handle)

    @property
    def size(self):
        return lib().gw_comm_size(self.handle)

    world_size = size

    @property
    def membership_epoch(self):
        """How many times the membership changed (elastic mode, docs/elastic.md); 0 without it."""
        return lib().gw_comm_membership_epoch(self.handle)

    def abort(self):
        """Makes every pending and future operation fail with AbortedError; callable from any thread."""
        _check(lib().gw_comm_abort(self.handle))

    # Each collective: blocking form and *_start returning a Request.
    def _run(self, start, blocking, fn, args, keep):
        self._check_thread()
        if start:
            r = ctypes.c_void_p()
            _check(fn(self.handle, *args, ctypes.byref(r)))
            return Request(self, r, keep)
        _check(fn(self.handle, *args))
        return None

    def _inout(self, inp, out, what_in="in", what_out="out"):
        i = _device_buffer(inp, what_in, writable=out is None)
        o = i if out is None else _device_buffer(out, what_out, writable=True)
        return i, o

    def allreduce(self, inp, out=None, op="sum"):
        """out = in reduced over all ranks; in place when out is None."""
        i, o = self._inout(inp, out)
        return self._run(False, True, lib().gw_allreduce, (_ref(i), _ref(o), _op(op)), None)

    def allreduce_start(self, inp, out=None, op="sum"):
        i, o = self._inout(inp, out)
        return self._run(True, False, lib().gw_allreduce_start, (_ref(i), _ref(o), _op(op)), (i, o))

    def reduce_scatter(self, inp, out, op="sum"):
        i, o = self._inout(inp, out)
        return self._run(False, True, lib().gw_reduce_scatter, (_ref(i), _ref(o), _op(op)), None)

    def reduce_scatter_start(self, inp, out, op="sum"):
        i, o = self._inout(inp, out)
        return self._run(True, False, lib().gw_reduce_scatter_start, (_ref(i), _ref(o), _op(op)), (i, o))

    def allgather(self, inp, out):
        i, o = self._inout(inp, out)
        return self._run(False, True, lib().gw_allgather, (_ref(i), _ref(o)), None)

    def allgather_start(self, inp, out):
        i, o = self._inout(inp, out)
        return self._run(True, False, lib().gw_allgather_start, (_ref(i), _ref(o)), (i, o))

    def _counts(self, counts):
        c = (ctypes.c_uint64 * len(counts))(*[int(x) for x in counts])
        if len(counts) != self.size:
            raise InvalidArgumentError(f"counts has {len(counts)} entries; allgatherv needs one per rank ({self.size})")
        return c

    def allgatherv(self, inp, out, counts):
        i, o = self._inout(inp, out)
        return self._run(False, True, lib().gw_allgatherv, (_ref(i), _ref(o), self._counts(counts)), None)

    def allgatherv_start(self, inp, out, counts):
        i, o = self._inout(inp, out)
        c = self._counts(counts)
        return self._run(True, False, lib().gw_allgatherv_start, (_ref(i), _ref(o), c), (i, o, c))

    def broadcast(self, buf, root=0):
        b = _device_buffer(buf, "buf", writable=True)
        return self._run(False, True, lib().gw_broadcast, (_ref(b), root), None)

    def broadcast_start(self, buf, root=0):
        b = _device_buffer(buf, "buf", writable=True)
        return self._run(True, False, lib().gw_broadcast_start, (_ref(b), root), b)

    def barrier(self):
        return self._run(False, True, lib().gw_barrier, (), None)

    def barrier_start(self):
        return self._run(True, False, lib().gw_barrier_start, (), None)

    def send(self, buf, peer, tag=0):
        b = _device_buffer(buf, "buf")
        return self._run(False, True, lib().gw_send, (_ref(b), peer, tag), None)

    def send_start(self, buf, peer, tag=0):
        b = _device_buffer(buf, "buf")
        return self._run(True, False, lib().gw_send_start, (_ref(b), peer, tag), b)

    def recv(self, buf, peer, tag=0):
        b = _device_buffer(buf, "buf", writable=True)
        return self._run(False, True, lib().gw_recv, (_ref(b), peer, tag), None)

    def recv_start(self, buf, peer, tag=0):
        b = _device_buffer(buf, "buf", writable=True)
        return self._run(True, False, lib().gw_recv_start, (_ref(b), peer, tag), b)

    def allreduce_compressed(self, codec, inp, out=None, op="avg", *, seed=0, step=0, buffer_id=0, shapes=None):
        """out = in averaged (or summed) over all ranks through `codec`'s payloads; f32; in place when out is
        None. Every rank passes the same codec, seed and step. `codec` may be an ErrorFeedback: its codec is
        used and its residuals are applied to every encoding inside the collective
        (gw_allreduce_compressed_ef); use one per tensor, with the same count every call. `buffer_id` and
        `shapes` ([(offset, rows, cols)] of the tensors inside `inp`) reach codecs that work on matrices
        (powersgd), which keep their state per buffer_id."""
        return self._compressed(False, codec, inp, out, op, seed, step, buffer_id=buffer_id, shapes=shapes)

    def allreduce_compressed_start(self, codec, inp, out=None, op="avg", *, seed=0, step=0, buffer_id=0, shapes=None):
        return self._compressed(True, codec, inp, out, op, seed, step, buffer_id=buffer_id, shapes=shapes)

    def allreduce_compressed_batch(self, codecs, tensors, op="avg", *, contexts):
        """The tensors (in place) averaged (or summed) through codecs of rounds (powersgd) in one collective per
        round for all of them (gw_allreduce_compressed_batch): tensor i through codecs[i] with contexts[i], a
        dict of seed, step, buffer_id and shapes as allreduce_compressed takes them. Every rank passes the same
        tensors in the same order."""
        return self._batch(False, codecs, tensors, op, contexts)

    def allreduce_compressed_batch_start(self, codecs, tensors, op="avg", *, contexts):
        return self._batch(True, codecs, tensors, op, contexts)

    def _batch(self, start, codecs, tensors, op, contexts):
        if not (len(codecs) == len(tensors) == len(contexts)):
            raise InvalidArgumentError(f"a batch takes one codec and one context per tensor: {len(codecs)} codecs, "
                                       f"{len(contexts)} contexts, {len(tensors)} tensors")
        bufs = [_device_buffer(t, f"tensors[{k}]", writable=True) for k, t in enumerate(tensors)]
        ctxs = [_context(**c) for c in contexts]
        n = len(bufs)
        handles = (ctypes.c_void_p * n)(*[c.handle for c in codecs])
        ctx_ptrs = (ctypes.POINTER(_lib.gw_codec_context) * n)(*[ctypes.pointer(c) for c in ctxs])
        tensor_ptrs = (ctypes.POINTER(_lib.gw_tensor) * n)(*[ctypes.pointer(b.tensor) for b in bufs])
        args = (n, handles, ctx_ptrs, tensor_ptrs, _op(op))
        fn = lib().gw_allreduce_compressed_batch_start if start else lib().gw_allreduce_compressed_batch
        if not start:
            return self._run(False, True, fn, args, None)
        return self._run(True, False, fn, args, (bufs, list(codecs), ctxs, handles, ctx_ptrs, tensor_ptrs))

    def reduce_scatter_compressed(self, codec, inp, out, op="avg", *, seed=0, step=0):
        """out = this rank's shard of in (world_size equal shards) averaged (or summed) over all ranks through
        `codec`'s payloads: each shard encoded once by every other rank, summed in f32 in rank order by its
        owner (gw_reduce_scatter_compressed). f32, f16 or bf16. `codec` may be an ErrorFeedback, as for
        allreduce_compressed; use one per tensor, with the same count every call."""
        return self._compressed(False, codec, inp, out, op, seed, step, "gw_reduce_scatter_compressed")

    def reduce_scatter_compressed_start(self, codec, inp, out, op="avg", *, seed=0, step=0):
        return self._compressed(True, codec, inp, out, op, seed, step, "gw_reduce_scatter_compressed")

    def allgather_compressed(self, codec, inp, out, *, seed=0, step=0):
        """out = every rank's in, in rank order, as `codec` decodes it: each rank's in encoded once, decoded by
        every rank (its own too), so every rank holds the same bits (gw_allgather_compressed). `codec` may be
        an ErrorFeedback, as for allreduce_compressed."""
        return self._compressed(False, codec, inp, out, None, seed, step, "gw_allgather_compressed")

    def allgather_compressed_start(self, codec, inp, out, *, seed=0, step=0):
        return self._compressed(True, codec, inp, out, None, seed, step, "gw_allgather_compressed")

    def _compressed(self, start, codec, inp, out, op, seed, step, name="gw_allreduce_compressed", buffer_id=0,
                    shapes=None):
        i, o = self._inout(inp, out)
        ctx = _context(seed, step, buffer_id=buffer_id, shapes=shapes)
        ef = isinstance(codec, ErrorFeedback)
        fn = getattr(lib(), name + ("_ef" if ef else "") + ("_start" if start else ""))
        args = (codec.handle, ctypes.byref(ctx), _ref(i), _ref(o)) + (() if op is None else (_op(op),))
        if not start:
            return self._run(False, True, fn, args, None)
        return self._run(True, False, fn, args, (i, o, codec, codec.codec if ef else None, ctx))


# ---- synchronizer -------------------------------------------------------------------------------------

class Sync(_Handle):
    """The per-step synchronizer over a communicator (gw_sync): register tensors, finalize, then step() each
    training step. While it lives, use its communicator only through it."""

    _kind = "synchronizer"

    def __init__(self, comm, runtime=None):
        super().__init__()
        self.comm = comm
        self.runtime = runtime if runtime is not None else comm.runtime
        self._tensors = []
        comm._check_thread()
        o = _lib.gw_sync_options(runtime=self.runtime.handle.value)
        _check(lib().gw_sync_create(comm.handle, ctypes.byref(o), ctypes.byref(self._h)))

    def close(self):
        if self._h:
            h, self._h = self._h, ctypes.c_void_p()
            self._tensors = []
            _check(lib().gw_sync_destroy(h))

    def register(self, name, gradient, parameter=None):
        """Registers an f32 gradient (and, for schedules that average parameters, its parameter); both must
        stay where they are while the synchronizer lives (the binding keeps them referenced)."""
        g = _device_buffer(gradient, f"gradient of '{name}'", writable=True, dtype="f32")
        p = None if parameter is None else _device_buffer(parameter, f"parameter of '{name}'", writable=True,
                                                          dtype="f32")
        _check(lib().gw_sync_register(self.handle, name.encode(), _ref(g), _ref(p)))
        self._tensors.append((g, p))

    def register_shape(self, name, dims):
        """Gives a registered tensor its shape (the product of `dims` is its count), before finalize: codecs
        that work on matrices (powersgd) see it as dims[0] x the rest."""
        arr = (ctypes.c_int64 * max(1, len(dims)))(*[int(d) for d in dims])
        _check(lib().gw_sync_register_shape(self.handle, name.encode(), len(dims), arr))

    def finalize(self):
        _check(lib().gw_sync_finalize(self.handle))

    def bucket_count(self):
        n = ctypes.c_uint32()
        _check(lib().gw_sync_bucket_count(self.handle, ctypes.byref(n)))
        return n.value

    def bucket_info(self, bucket):
        i = _lib.gw_sync_bucket_info()
        _check(lib().gw_sync_get_bucket_info(self.handle, bucket, ctypes.byref(i)))
        return {"codec": _s(i.codec), "count": i.count, "num_tensors": i.num_tensors}

    def tensor_bucket(self, name):
        b = ctypes.c_uint32()
        _check(lib().gw_sync_tensor_bucket(self.handle, name.encode(), ctypes.byref(b)))
        return b.value

    def bucket_ready(self, bucket):
        _check(lib().gw_sync_bucket_ready(self.handle, bucket))

    def step(self):
        """Ends a step; returns a dict of flags: apply, gradients_averaged, parameters_averaged, outer_step,
        membership_changed (elastic mode, docs/elastic.md: the step was discarded and the parameters put
        back; re-read the communicator's rank and size and redo the step)."""
        f = ctypes.c_uint32()
        st = lib().gw_sync_step(self.handle, ctypes.byref(f))
        if st != _lib.GW_MEMBERSHIP_CHANGED:
            _check(st)
        return {"membership_changed": st == _lib.GW_MEMBERSHIP_CHANGED,
                "apply": bool(f.value & _lib.GW_SYNC_APPLY),
                "gradients_averaged": bool(f.value & _lib.GW_SYNC_GRADIENTS_AVERAGED),
                "parameters_averaged": bool(f.value & _lib.GW_SYNC_PARAMETERS_AVERAGED),
                "outer_step": bool(f.value & _lib.GW_SYNC_OUTER_STEP)}

    def skip_step(self):
        _check(lib().gw_sync_skip_step(self.handle))

    def save_state(self):
        n = ctypes.c_uint64()
        _check(lib().gw_sync_save_state(self.handle, None, 0, ctypes.byref(n)))
        buf = ctypes.create_string_buffer(max(1, n.value))
        _check(lib().gw_sync_save_state(self.handle, buf, n.value, ctypes.byref(n)))
        return buf.raw[:n.value]

    def load_state(self, blob):
        b = bytes(blob)
        _check(lib().gw_sync_load_state(self.handle, b, len(b)))

    def stats(self, bucket=None):
        s = _lib.gw_sync_stats()
        _check(lib().gw_sync_get_stats(self.handle, _lib.GW_SYNC_ALL_BUCKETS if bucket is None else bucket,
                                       ctypes.byref(s)))
        return {k: getattr(s, k) for k, _ in s._fields_ if k != "struct_size"}
