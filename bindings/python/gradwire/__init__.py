"""gradwire: compressed gradient communication, from Python.

A binding over libgradwire's C ABI (ctypes; no compiled extension). See docs/pytorch.md.

    import gradwire
    with gradwire.Runtime(text='[codec]\\nname = "int8"\\n') as rt, gradwire.Comm(rt) as comm:
        comm.allreduce_compressed(rt.codec(), grads)       # grads: f32 numpy array or torch tensor
"""
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
