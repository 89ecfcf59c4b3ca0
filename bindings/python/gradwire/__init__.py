"""gradwire: compressed gradient communication, from Python.

A binding over libgradwire's C ABI (ctypes; no compiled extension). See docs/pytorch.md.

    import gradwire
    with gradwire.Runtime(text='[codec]\\nname = "int8"\\n') as rt, gradwire.Comm(rt) as comm:
        comm.allreduce_compressed(rt.codec(), grads)       # grads: f32 numpy array or torch tensor

`gradwire.torch` (the PyTorch DDP hook) is imported on first use, so `import gradwire` alone never imports
torch: `gradwire.torch.HookState` works after `import gradwire`, as does `import gradwire.torch`.
"""
import importlib as _importlib

from ._core import (DTYPES, OPS, AbortedError, BufferTooSmallError, Codec, Comm, ConfigError, CorruptError,
                    Error, ErrorFeedback, InternalError, InvalidArgumentError, MismatchError, NoMemoryError,
                    NotFoundError, PluginError, Request, Runtime, StateError, Sync, TimeoutError, TransportError,
                    UnsupportedError, VersionError, abi_version, as_buffer, dtype_size, error_class, library_path,
                    load_library, status_string, version)
from ._lib import LibraryNotFound

__version__ = "0.1.0"

__all__ = [
    "AbortedError", "BufferTooSmallError", "Codec", "Comm", "ConfigError", "CorruptError", "DTYPES", "Error",
    "ErrorFeedback", "InternalError", "InvalidArgumentError", "LibraryNotFound", "MismatchError", "NoMemoryError",
    "NotFoundError", "OPS", "PluginError", "Request", "Runtime", "StateError", "Sync", "TimeoutError",
    "TransportError", "UnsupportedError", "VersionError", "abi_version", "as_buffer", "dtype_size", "error_class",
    "library_path", "load_library", "status_string", "version",
]


def __getattr__(name):
    # PEP 562: the torch submodule on first access (it imports torch, which plain users do not need).
    if name == "torch":
        return _importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'gradwire' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"torch"})
