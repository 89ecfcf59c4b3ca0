"""The C ABI of libgradwire as ctypes declarations, and how the library is found.

Every struct here mirrors one of abi/include/gradwire/{types,gradwire}.h field for field; the layout test
(tests/test_layout.py) compiles a C program against the headers and compares sizes and offsets.
"""
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import sysconfig

SONAME = "libgradwire.so.0"

# ---- enums (32-bit in the ABI) ----------------------------------------------------------------------
GW_OK = 0
GW_IN_PROGRESS = 1
GW_MEMBERSHIP_CHANGED = 2  # since 1.5, elastic mode only
GW_ERR_INVALID_ARGUMENT = -1
GW_ERR_NO_MEMORY = -2
GW_ERR_NOT_FOUND = -3
GW_ERR_PLUGIN = -4
GW_ERR_VERSION = -5
GW_ERR_CONFIG = -6
GW_ERR_UNSUPPORTED = -7
GW_ERR_TIMEOUT = -8
GW_ERR_MISMATCH = -9
GW_ERR_TRANSPORT = -10
GW_ERR_CORRUPT = -11
GW_ERR_ABORTED = -12
GW_ERR_BUFFER_TOO_SMALL = -13
GW_ERR_STATE = -14
GW_ERR_INTERNAL = -15

GW_DTYPE_F32, GW_DTYPE_F64, GW_DTYPE_F16, GW_DTYPE_BF16, GW_DTYPE_I32, GW_DTYPE_I64, GW_DTYPE_U8 = range(7)
GW_MEMORY_HOST, GW_MEMORY_CUDA = 0, 1
GW_REDUCE_SUM, GW_REDUCE_AVG, GW_REDUCE_MIN, GW_REDUCE_MAX = range(4)
GW_LOG_ERROR, GW_LOG_WARN, GW_LOG_INFO, GW_LOG_DEBUG, GW_LOG_TRACE = range(5)
GW_CONFIG_FORMAT_TOML, GW_CONFIG_FORMAT_REFERENCE = 0, 1

GW_RUNTIME_NO_ENV_OVERRIDES = 1 << 0
GW_RUNTIME_INSPECT_ONLY = 1 << 1

GW_CODEC_LOSSLESS = 1 << 0
GW_CODEC_SPARSE = 1 << 1
GW_CODEC_SUMMABLE = 1 << 2
GW_CODEC_SHARED_INDICES = 1 << 3
GW_CODEC_CUDA = 1 << 4
GW_CODEC_STATEFUL = 1 << 5
GW_CODEC_ROUNDS = 1 << 6

GW_DECODE_ACCUMULATE = 1 << 0

GW_SYNC_ALL_BUCKETS = 0xFFFFFFFF
GW_SYNC_APPLY = 1 << 0
GW_SYNC_GRADIENTS_AVERAGED = 1 << 1
GW_SYNC_PARAMETERS_AVERAGED = 1 << 2
GW_SYNC_OUTER_STEP = 1 << 3

c_status = ctypes.c_int32
c_enum = ctypes.c_int32
c_u32 = ctypes.c_uint32
c_u64 = ctypes.c_uint64
c_i64 = ctypes.c_int64
c_vp = ctypes.c_void_p
c_str = ctypes.c_char_p

LOG_FN = ctypes.CFUNCTYPE(None, c_vp, c_enum, c_str, c_str)
ALLGATHER_FN = ctypes.CFUNCTYPE(c_status, c_vp, c_vp, c_u64, c_vp)


class _Struct(ctypes.Structure):
    """A struct that starts with struct_size, set on construction as the *_INIT macros do."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.struct_size = ctypes.sizeof(self)


class gw_tensor(_Struct):
    _fields_ = [("struct_size", c_u32), ("memory", c_enum), ("dtype", c_enum), ("device", ctypes.c_int32),
                ("data", c_vp), ("count", c_u64), ("stream", c_vp)]


class gw_codec_properties(_Struct):
    _fields_ = [("struct_size", c_u32), ("flags", c_u32), ("sum_dtype", c_enum), ("dtypes", c_u32)]


class gw_tensor_shape(ctypes.Structure):
    _fields_ = [("offset", c_u64), ("rows", c_u64), ("cols", c_u64)]


class gw_codec_context(_Struct):
    _fields_ = [("struct_size", c_u32), ("seed", c_u64), ("step", c_u64), ("rank", c_u32), ("world_size", c_u32),
                ("workspace", c_vp), ("workspace_bytes", c_u64), ("buffer_id", c_u64), ("shapes", c_vp),
                ("num_shapes", c_u32)]

    def __init__(self, **kw):
        kw.setdefault("world_size", 1)
        super().__init__(**kw)


class gw_runtime_options(_Struct):
    _fields_ = [("struct_size", c_u32), ("config_path", c_str), ("config_text", c_str),
                ("plugin_paths", ctypes.POINTER(c_str)), ("num_plugin_paths", c_u32), ("log", LOG_FN),
                ("log_user", c_vp), ("log_level", c_enum), ("flags", c_u32)]

    def __init__(self, **kw):
        kw.setdefault("log_level", GW_LOG_WARN)
        super().__init__(**kw)


class gw_plugin_info(_Struct):
    _fields_ = [("struct_size", c_u32), ("path", c_str), ("status", c_status), ("error", c_str), ("name", c_str),
                ("version", c_str), ("description", c_str), ("abi_major", c_u32), ("abi_minor", c_u32),
                ("num_components", c_u32)]


class gw_component_info(_Struct):
    _fields_ = [("struct_size", c_u32), ("kind", c_u32), ("name", c_str), ("help", c_str)]


class gw_comm_options(_Struct):
    _fields_ = [("struct_size", c_u32), ("rank", c_i64), ("world_size", c_i64), ("local_rank", c_i64),
                ("root_address", c_str), ("root_port", c_i64), ("allgather", ALLGATHER_FN),
                ("allgather_user", c_vp), ("timeout_s", ctypes.c_double)]

    def __init__(self, **kw):
        for k in ("rank", "world_size", "local_rank", "root_port"):
            kw.setdefault(k, -1)
        super().__init__(**kw)


class gw_sync_options(_Struct):
    _fields_ = [("struct_size", c_u32), ("runtime", c_vp), ("flags", c_u32)]


class gw_sync_bucket_info(_Struct):
    _fields_ = [("struct_size", c_u32), ("codec", c_str), ("count", c_u64), ("num_tensors", c_u32),
                ("flags", c_u32)]


class gw_sync_stats(_Struct):
    _fields_ = [("struct_size", c_u32), ("raw_bytes", c_u64), ("wire_bytes", c_u64),
                ("compression_ratio", ctypes.c_double), ("encode_seconds", ctypes.c_double),
                ("transfer_seconds", ctypes.c_double), ("decode_seconds", ctypes.c_double), ("steps", c_u64),
                ("syncs", c_u64), ("codec", c_str), ("codec_reason", c_str)]

    def __init__(self, **kw):
        kw.setdefault("compression_ratio", 1.0)
        super().__init__(**kw)


class gw_ps_options(_Struct):
    _fields_ = [("struct_size", c_u32), ("runtime", c_vp), ("servers", c_u32), ("mode", c_enum),
                ("staleness", c_u32), ("momentum", ctypes.c_float), ("flags", c_u32)]

    def __init__(self, **kw):
        kw.setdefault("servers", 1)
        kw.setdefault("staleness", 8)
        kw.setdefault("momentum", 0.9)
        super().__init__(**kw)


class gw_ps_stats(_Struct):
    _fields_ = [("struct_size", c_u32), ("pushes", c_u64), ("dropped", c_u64), ("wire_bytes", c_u64),
                ("version", c_u64), ("dead_workers", c_u32), ("flags", c_u32)]


class gw_cache_options(_Struct):
    _fields_ = [("struct_size", c_u32), ("num_samples", c_u64), ("sample_bytes", c_u64), ("load", c_vp),
                ("load_user", c_vp), ("checksum", c_u64), ("flags", c_u32)]


class gw_cache_stats(_Struct):
    _fields_ = [("struct_size", c_u32), ("bytes_private", c_u64), ("bytes_shared", c_u64), ("bytes_local", c_u64),
                ("bytes_fetched", c_u64), ("bytes_served", c_u64), ("loads", c_u64), ("bytes_loaded", c_u64),
                ("gets", c_u64), ("checksum", c_u64), ("flags", c_u32)]


# Every struct the binding declares, by its C name (the layout test walks this).
STRUCTS = {c.__name__: c for c in (gw_tensor, gw_codec_properties, gw_codec_context, gw_runtime_options,
                                    gw_plugin_info, gw_component_info, gw_comm_options, gw_sync_options,
                                    gw_sync_bucket_info, gw_sync_stats, gw_ps_options, gw_ps_stats,
                                    gw_cache_options, gw_cache_stats)}

P = ctypes.POINTER
PP = lambda t: P(P(t))  # noqa: E731
T = P(gw_tensor)
CTX = P(gw_codec_context)
H = c_vp  # opaque handles are void* here

# name: (restype, argtypes)
FUNCTIONS = {
    "gw_version": (c_u32, []),
    "gw_version_string": (c_str, []),
    "gw_abi_version_major": (c_u32, []),
    "gw_abi_version_minor": (c_u32, []),
    "gw_status_string": (c_str, [c_status]),
    "gw_last_error": (c_str, []),
    "gw_dtype_name": (c_str, [c_enum]),
    "gw_dtype_size": (c_u32, [c_enum]),
    "gw_runtime_create": (c_status, [P(gw_runtime_options), P(H)]),
    "gw_runtime_destroy": (c_status, [H]),
    "gw_runtime_config_dump": (c_status, [H, c_enum, c_vp, ctypes.c_size_t, P(ctypes.c_size_t)]),
    "gw_runtime_plugin_count": (c_status, [H, P(c_u32)]),
    "gw_runtime_plugin_info": (c_status, [H, c_u32, P(gw_plugin_info)]),
    "gw_runtime_component_info": (c_status, [H, c_u32, c_u32, P(gw_component_info)]),
    "gw_runtime_search_path_count": (c_status, [H, P(c_u32)]),
    "gw_runtime_search_path": (c_status, [H, c_u32, P(c_str)]),
    "gw_codec_create": (c_status, [H, c_str, P(H)]),
    "gw_codec_destroy": (c_status, [H]),
    "gw_codec_name": (c_str, [H]),
    "gw_codec_get_properties": (c_status, [H, P(gw_codec_properties)]),
    "gw_codec_max_encoded_size": (c_status, [H, c_enum, c_u64, P(c_u64)]),
    "gw_codec_encode": (c_status, [H, CTX, T, c_vp, c_u64, P(c_u64)]),
    "gw_codec_decode": (c_status, [H, CTX, c_vp, c_u64, T, c_u32]),
    "gw_codec_save_state": (c_status, [H, c_vp, c_u64, P(c_u64)]),
    "gw_codec_load_state": (c_status, [H, c_vp, c_u64]),
    "gw_error_feedback_create": (c_status, [H, P(H)]),
    "gw_error_feedback_destroy": (c_status, [H]),
    "gw_error_feedback_encode": (c_status, [H, c_u64, CTX, T, c_vp, c_u64, P(c_u64)]),
    "gw_error_feedback_reset": (c_status, [H]),
    "gw_error_feedback_state_size": (c_status, [H, P(c_u64)]),
    "gw_error_feedback_save": (c_status, [H, c_vp, c_u64, P(c_u64)]),
    "gw_error_feedback_load": (c_status, [H, c_vp, c_u64]),
    "gw_comm_create": (c_status, [H, P(gw_comm_options), P(H)]),
    "gw_comm_destroy": (c_status, [H]),
    "gw_comm_rank": (c_u32, [H]),
    "gw_comm_size": (c_u32, [H]),
    "gw_comm_abort": (c_status, [H]),
    "gw_comm_membership_epoch": (c_u64, [H]),  # since 1.5
    "gw_request_test": (c_status, [H]),
    "gw_request_wait": (c_status, [H, ctypes.c_double]),
    "gw_request_free": (c_status, [H]),
    "gw_allreduce_start": (c_status, [H, T, T, c_enum, P(H)]),
    "gw_allreduce": (c_status, [H, T, T, c_enum]),
    "gw_reduce_scatter_start": (c_status, [H, T, T, c_enum, P(H)]),
    "gw_reduce_scatter": (c_status, [H, T, T, c_enum]),
    "gw_allgather_start": (c_status, [H, T, T, P(H)]),
    "gw_allgather": (c_status, [H, T, T]),
    "gw_allgatherv_start": (c_status, [H, T, T, P(c_u64), P(H)]),
    "gw_allgatherv": (c_status, [H, T, T, P(c_u64)]),
    "gw_broadcast_start": (c_status, [H, T, c_u32, P(H)]),
    "gw_broadcast": (c_status, [H, T, c_u32]),
    "gw_barrier_start": (c_status, [H, P(H)]),
    "gw_barrier": (c_status, [H]),
    "gw_send_start": (c_status, [H, T, c_u32, c_u32, P(H)]),
    "gw_send": (c_status, [H, T, c_u32, c_u32]),
    "gw_recv_start": (c_status, [H, T, c_u32, c_u32, P(H)]),
    "gw_recv": (c_status, [H, T, c_u32, c_u32]),
    "gw_allreduce_compressed_start": (c_status, [H, H, CTX, T, T, c_enum, P(H)]),
    "gw_allreduce_compressed": (c_status, [H, H, CTX, T, T, c_enum]),
    "gw_allreduce_compressed_batch_start": (c_status, [H, c_u32, P(H), P(CTX), P(T), c_enum, P(H)]),  # since 1.6
    "gw_allreduce_compressed_batch": (c_status, [H, c_u32, P(H), P(CTX), P(T), c_enum]),  # since 1.6
    "gw_allreduce_compressed_ef_start": (c_status, [H, H, CTX, T, T, c_enum, P(H)]),
    "gw_allreduce_compressed_ef": (c_status, [H, H, CTX, T, T, c_enum]),
    "gw_reduce_scatter_compressed_start": (c_status, [H, H, CTX, T, T, c_enum, P(H)]),
    "gw_reduce_scatter_compressed": (c_status, [H, H, CTX, T, T, c_enum]),
    "gw_reduce_scatter_compressed_ef_start": (c_status, [H, H, CTX, T, T, c_enum, P(H)]),
    "gw_reduce_scatter_compressed_ef": (c_status, [H, H, CTX, T, T, c_enum]),
    "gw_allgather_compressed_start": (c_status, [H, H, CTX, T, T, P(H)]),
    "gw_allgather_compressed": (c_status, [H, H, CTX, T, T]),
    "gw_allgather_compressed_ef_start": (c_status, [H, H, CTX, T, T, P(H)]),
    "gw_allgather_compressed_ef": (c_status, [H, H, CTX, T, T]),
    "gw_sync_create": (c_status, [H, P(gw_sync_options), P(H)]),
    "gw_sync_destroy": (c_status, [H]),
    "gw_sync_register": (c_status, [H, c_str, T, T]),
    "gw_sync_register_shape": (c_status, [H, c_str, c_u32, P(c_i64)]),
    "gw_sync_finalize": (c_status, [H]),
    "gw_sync_bucket_count": (c_status, [H, P(c_u32)]),
    "gw_sync_get_bucket_info": (c_status, [H, c_u32, P(gw_sync_bucket_info)]),
    "gw_sync_tensor_bucket": (c_status, [H, c_str, P(c_u32)]),
    "gw_sync_bucket_ready": (c_status, [H, c_u32]),
    "gw_sync_step": (c_status, [H, P(c_u32)]),
    "gw_sync_skip_step": (c_status, [H]),
    "gw_sync_save_state": (c_status, [H, c_vp, c_u64, P(c_u64)]),
    "gw_sync_load_state": (c_status, [H, c_vp, c_u64]),
    "gw_sync_get_stats": (c_status, [H, c_u32, P(gw_sync_stats)]),
    "gw_ps_create": (c_status, [H, P(gw_ps_options), T, P(H)]),
    "gw_ps_role": (c_status, [H, P(ctypes.c_int), P(c_u32), P(c_u32)]),
    "gw_ps_push_pull": (c_status, [H, T, ctypes.c_float]),
    "gw_ps_serve": (c_status, [H]),
    "gw_ps_get_stats": (c_status, [H, P(gw_ps_stats)]),
    "gw_ps_destroy": (c_status, [H]),
    "gw_cache_create": (c_status, [H, P(gw_cache_options), P(H)]),
    "gw_cache_shard": (c_status, [H, P(c_u64), P(c_u64)]),
    "gw_cache_get": (c_status, [H, P(c_u64), c_u64, c_vp]),
    "gw_cache_get_stats": (c_status, [H, P(gw_cache_stats)]),
    "gw_cache_destroy": (c_status, [H]),
}


class LibraryNotFound(OSError):
    """libgradwire could not be loaded from any of the places searched."""


def _candidates(explicit):
    """(where it came from, path) in the order the binding tries them."""
    out = []
    if explicit:
        out.append(("the path given", explicit))
    env = os.environ.get("GRADWIRE_LIBRARY")
    if env:
        out.append(("GRADWIRE_LIBRARY", env))
    # The prefix this Python installs into (a venv, /usr/local, ...) and the usual install prefixes.
    prefixes = []
    for p in (sys.prefix, sysconfig.get_config_var("prefix"), "/usr/local", "/usr"):
        if p and p not in prefixes:
            prefixes.append(p)
    for p in prefixes:
        for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu"):
            out.append((f"install prefix {p}", os.path.join(p, libdir, SONAME)))
    # A source tree: bindings/python/gradwire -> build/lib (scripts/build.sh's folder).
    here = os.path.dirname(os.path.abspath(__file__))
    out.append(("the source tree's build folder", os.path.normpath(os.path.join(here, "..", "..", "..", "build", "lib", SONAME))))
    if shutil.which("pkg-config"):
        try:
            libdir = subprocess.run(["pkg-config", "--variable=libdir", "gradwire"], capture_output=True, text=True,
                                    timeout=10).stdout.strip()
            if libdir:
                out.append(("pkg-config gradwire", os.path.join(libdir, SONAME)))
        except (OSError, subprocess.SubprocessError):
            pass
    return out


def _torch_first(path):
    """Imports torch before a libgradwire built with CUDA is loaded, when torch is installed and not imported.

    PyPI's torch bundles a CUDA runtime and NCCL (nvidia/*/lib) newer than a system's (/usr/local/cuda).
    Libraries are shared by soname: whichever is loaded first serves both libgradwire (and its NCCL
    plugin) and torch. torch does not load over older ones (`import torch` then fails with "undefined
    symbol: ncclCommResume"), while gradwire runs with torch's newer ones. So torch goes first, which
    `gradwire.torch` does anyway; `import gradwire` alone still imports no torch (only loading the library
    does, and only then). GRADWIRE_TORCH_FIRST=0 turns this off."""
    if "torch" in sys.modules or os.environ.get("GRADWIRE_TORCH_FIRST", "1") == "0":
        return
    import importlib.util
    try:
        if importlib.util.find_spec("torch") is None:
            return
    except (ImportError, ValueError):
        return
    if os.path.sep in path:  # a file: only a CUDA build of gradwire needs it
        try:
            with open(path, "rb") as f:
                if b"libcudart.so" not in f.read():
                    return
        except OSError:
            return
    try:
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001 - a broken torch is the application's affair, not the binding's
        pass


def _open(path):
    _torch_first(path)
    return ctypes.CDLL(path)


def load(explicit=None):
    """Loads libgradwire: an explicit path, GRADWIRE_LIBRARY, the install prefixes, the source tree's
    build/lib, pkg-config, then the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache)."""
    tried = []
    for origin, path in _candidates(explicit):
        if origin in ("the path given", "GRADWIRE_LIBRARY"):
            # A path the user named must work: say so instead of silently falling back.
            try:
                return _declare(_open(path)), path
            except OSError as e:
                raise LibraryNotFound(f"cannot load libgradwire from {origin} '{path}': {e}") from None
        if not os.path.exists(path):
            tried.append(f"{path} ({origin}: no such file)")
            continue
        try:
            return _declare(_open(path)), path
        except OSError as e:
            tried.append(f"{path} ({origin}: {e})")
    try:
        return _declare(_open(SONAME)), SONAME
    except OSError as e:
        tried.append(f"{SONAME} (the dynamic loader's search path: {e})")
    raise LibraryNotFound("cannot find libgradwire; tried:\n  " + "\n  ".join(tried) +
                          "\nBuild it (scripts/build.sh), install it (cmake --install build --prefix PREFIX), or set "
                          "GRADWIRE_LIBRARY to the path of libgradwire.so.0")


def _declare(lib):
    missing = []
    for name, (restype, argtypes) in FUNCTIONS.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        f.restype = restype
        f.argtypes = argtypes
    if missing:
        raise LibraryNotFound(f"{lib._name} is not a libgradwire of this binding's ABI: it lacks {', '.join(missing)}")
    return lib
