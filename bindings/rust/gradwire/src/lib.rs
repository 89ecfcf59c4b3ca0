//! Safe Rust API of gradwire (compressed gradient communication), over its C ABI.
//!
//! Owned handles free themselves on `Drop` (`Runtime`, `Codec`, `ErrorFeedback`, `Comm`, `Sync`); each
//! also has `close()` that reports the destroy call's error. Every call returns
//! `Result<T, gradwire::Error>` carrying gradwire's status and message. Nonblocking operations run in
//! `Comm::scope` and return `Request`s that borrow their buffers. Threading follows the C rules: see
//! each type and README.md.
mod codec;
mod comm;
mod dtype;
mod error;
mod runtime;
mod sync;

pub use codec::{Codec, CodecContext, CodecProperties, ErrorFeedback};
pub use comm::{AbortHandle, Comm, CommOptions, ReduceOp, Request, Scope};
pub use dtype::{DType, Element, BF16, F16};
pub use error::{Error, Result, Status};
pub use gradwire_sys as sys;
pub use runtime::{ComponentInfo, ComponentKind, ConfigFormat, LogLevel, PluginInfo, Runtime, RuntimeOptions};
pub use sync::{BucketInfo, StepFlags, Sync, SyncStats, TensorId};

/// The library's version ("0.1.0").
pub fn version() -> String {
    // SAFETY: static storage.
    unsafe { error::cstr(sys::gw_version_string()) }
}

/// The ABI version the library implements.
pub fn abi_version() -> (u32, u32) {
    // SAFETY: no arguments.
    unsafe { (sys::gw_abi_version_major(), sys::gw_abi_version_minor()) }
}
