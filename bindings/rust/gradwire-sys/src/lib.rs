//! Raw declarations of gradwire's C ABI: `gradwire/types.h` and `gradwire/gradwire.h`, written by hand
//! and checked in (no bindgen). Every `#[repr(C)]` struct is compared with the C compiler's layout by
//! `tests/layout.rs`; the comments of the C header (ownership, the `thread:` rules) apply unchanged.
//!
//! C enums are plain `i32`/`u32` type aliases with constants: a value the library adds in a later
//! minor version must not be undefined behaviour on the Rust side.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_void};

pub const GW_ABI_VERSION_MAJOR: u32 = 1;
pub const GW_ABI_VERSION_MINOR: u32 = 6;

// ---- gw_status ---------------------------------------------------------------------------------
pub type gw_status = i32;
pub const GW_OK: gw_status = 0;
pub const GW_IN_PROGRESS: gw_status = 1;
/// Since 1.5: elastic mode only (docs/elastic.md).
pub const GW_MEMBERSHIP_CHANGED: gw_status = 2;
pub const GW_ERR_INVALID_ARGUMENT: gw_status = -1;
pub const GW_ERR_NO_MEMORY: gw_status = -2;
pub const GW_ERR_NOT_FOUND: gw_status = -3;
pub const GW_ERR_PLUGIN: gw_status = -4;
pub const GW_ERR_VERSION: gw_status = -5;
pub const GW_ERR_CONFIG: gw_status = -6;
pub const GW_ERR_UNSUPPORTED: gw_status = -7;
pub const GW_ERR_TIMEOUT: gw_status = -8;
pub const GW_ERR_MISMATCH: gw_status = -9;
pub const GW_ERR_TRANSPORT: gw_status = -10;
pub const GW_ERR_CORRUPT: gw_status = -11;
pub const GW_ERR_ABORTED: gw_status = -12;
pub const GW_ERR_BUFFER_TOO_SMALL: gw_status = -13;
pub const GW_ERR_STATE: gw_status = -14;
pub const GW_ERR_INTERNAL: gw_status = -15;

// ---- gw_dtype ----------------------------------------------------------------------------------
pub type gw_dtype = i32;
pub const GW_DTYPE_F32: gw_dtype = 0;
pub const GW_DTYPE_F64: gw_dtype = 1;
pub const GW_DTYPE_F16: gw_dtype = 2;
pub const GW_DTYPE_BF16: gw_dtype = 3;
pub const GW_DTYPE_I32: gw_dtype = 4;
pub const GW_DTYPE_I64: gw_dtype = 5;
pub const GW_DTYPE_U8: gw_dtype = 6;

// ---- gw_memory_kind ----------------------------------------------------------------------------
pub type gw_memory_kind = i32;
pub const GW_MEMORY_HOST: gw_memory_kind = 0;
pub const GW_MEMORY_CUDA: gw_memory_kind = 1;

// ---- gw_reduce_op ------------------------------------------------------------------------------
pub type gw_reduce_op = i32;
pub const GW_REDUCE_SUM: gw_reduce_op = 0;
pub const GW_REDUCE_AVG: gw_reduce_op = 1;
pub const GW_REDUCE_MIN: gw_reduce_op = 2;
pub const GW_REDUCE_MAX: gw_reduce_op = 3;

// ---- gw_log_level ------------------------------------------------------------------------------
pub type gw_log_level = i32;
pub const GW_LOG_ERROR: gw_log_level = 0;
pub const GW_LOG_WARN: gw_log_level = 1;
pub const GW_LOG_INFO: gw_log_level = 2;
pub const GW_LOG_DEBUG: gw_log_level = 3;
pub const GW_LOG_TRACE: gw_log_level = 4;

// ---- gw_config_format --------------------------------------------------------------------------
pub type gw_config_format = i32;
pub const GW_CONFIG_FORMAT_TOML: gw_config_format = 0;
pub const GW_CONFIG_FORMAT_REFERENCE: gw_config_format = 1;

pub type gw_log_fn = Option<
    unsafe extern "C" fn(user: *mut c_void, level: gw_log_level, component: *const c_char, message: *const c_char),
>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_tensor {
    pub struct_size: u32,
    pub memory: gw_memory_kind,
    pub dtype: gw_dtype,
    pub device: i32,
    pub data: *mut c_void,
    pub count: u64,
    pub stream: *mut c_void,
}

impl Default for gw_tensor {
    /// `GW_TENSOR_INIT`.
    fn default() -> Self {
        gw_tensor {
            struct_size: std::mem::size_of::<gw_tensor>() as u32,
            memory: GW_MEMORY_HOST,
            dtype: GW_DTYPE_F32,
            device: 0,
            data: std::ptr::null_mut(),
            count: 0,
            stream: std::ptr::null_mut(),
        }
    }
}

// Codec property flags (GW_CODEC_*).
pub const GW_CODEC_LOSSLESS: u32 = 1 << 0;
pub const GW_CODEC_SPARSE: u32 = 1 << 1;
pub const GW_CODEC_SUMMABLE: u32 = 1 << 2;
pub const GW_CODEC_SHARED_INDICES: u32 = 1 << 3;
pub const GW_CODEC_CUDA: u32 = 1 << 4;
pub const GW_CODEC_STATEFUL: u32 = 1 << 5;
/// Since 1.4.
pub const GW_CODEC_ROUNDS: u32 = 1 << 6;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_codec_properties {
    pub struct_size: u32,
    pub flags: u32,
    pub sum_dtype: gw_dtype,
    pub dtypes: u32,
}

impl Default for gw_codec_properties {
    /// `GW_CODEC_PROPERTIES_INIT`.
    fn default() -> Self {
        gw_codec_properties {
            struct_size: std::mem::size_of::<gw_codec_properties>() as u32,
            flags: 0,
            sum_dtype: GW_DTYPE_F32,
            dtypes: 0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_codec_context {
    pub struct_size: u32,
    pub seed: u64,
    pub step: u64,
    pub rank: u32,
    pub world_size: u32,
    pub workspace: *mut c_void,
    pub workspace_bytes: u64,
    /// Since 1.4.
    pub buffer_id: u64,
    /// Since 1.4.
    pub shapes: *const gw_tensor_shape,
    /// Since 1.4.
    pub num_shapes: u32,
}

/// The 2-D view of one tensor inside a buffer handed to a codec (since 1.4; a fixed layout).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct gw_tensor_shape {
    pub offset: u64,
    pub rows: u64,
    pub cols: u64,
}

impl Default for gw_codec_context {
    /// `GW_CODEC_CONTEXT_INIT`.
    fn default() -> Self {
        gw_codec_context {
            struct_size: std::mem::size_of::<gw_codec_context>() as u32,
            seed: 0,
            step: 0,
            rank: 0,
            world_size: 1,
            workspace: std::ptr::null_mut(),
            workspace_bytes: 0,
            buffer_id: 0,
            shapes: std::ptr::null(),
            num_shapes: 0,
        }
    }
}

pub const GW_DECODE_ACCUMULATE: u32 = 1 << 0;

// ---- opaque handles ----------------------------------------------------------------------------
#[repr(C)]
pub struct gw_runtime {
    _private: [u8; 0],
}
#[repr(C)]
pub struct gw_codec {
    _private: [u8; 0],
}
#[repr(C)]
pub struct gw_error_feedback {
    _private: [u8; 0],
}
#[repr(C)]
pub struct gw_comm {
    _private: [u8; 0],
}
#[repr(C)]
pub struct gw_request {
    _private: [u8; 0],
}
#[repr(C)]
pub struct gw_sync {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_runtime_options {
    pub struct_size: u32,
    pub config_path: *const c_char,
    pub config_text: *const c_char,
    pub plugin_paths: *const *const c_char,
    pub num_plugin_paths: u32,
    pub log: gw_log_fn,
    pub log_user: *mut c_void,
    pub log_level: gw_log_level,
    pub flags: u32,
}

impl Default for gw_runtime_options {
    /// `GW_RUNTIME_OPTIONS_INIT`.
    fn default() -> Self {
        gw_runtime_options {
            struct_size: std::mem::size_of::<gw_runtime_options>() as u32,
            config_path: std::ptr::null(),
            config_text: std::ptr::null(),
            plugin_paths: std::ptr::null(),
            num_plugin_paths: 0,
            log: None,
            log_user: std::ptr::null_mut(),
            log_level: GW_LOG_WARN,
            flags: 0,
        }
    }
}

pub const GW_RUNTIME_NO_ENV_OVERRIDES: u32 = 1 << 0;
pub const GW_RUNTIME_INSPECT_ONLY: u32 = 1 << 1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_plugin_info {
    pub struct_size: u32,
    pub path: *const c_char,
    pub status: gw_status,
    pub error: *const c_char,
    pub name: *const c_char,
    pub version: *const c_char,
    pub description: *const c_char,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub num_components: u32,
}

impl Default for gw_plugin_info {
    /// `GW_PLUGIN_INFO_INIT`.
    fn default() -> Self {
        gw_plugin_info {
            struct_size: std::mem::size_of::<gw_plugin_info>() as u32,
            path: std::ptr::null(),
            status: GW_OK,
            error: std::ptr::null(),
            name: std::ptr::null(),
            version: std::ptr::null(),
            description: std::ptr::null(),
            abi_major: 0,
            abi_minor: 0,
            num_components: 0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_component_info {
    pub struct_size: u32,
    pub kind: u32,
    pub name: *const c_char,
    pub help: *const c_char,
}

impl Default for gw_component_info {
    /// `GW_COMPONENT_INFO_INIT`.
    fn default() -> Self {
        gw_component_info {
            struct_size: std::mem::size_of::<gw_component_info>() as u32,
            kind: 0,
            name: std::ptr::null(),
            help: std::ptr::null(),
        }
    }
}

pub type gw_allgather_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, input: *const c_void, bytes: u64, out: *mut c_void) -> gw_status>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_comm_options {
    pub struct_size: u32,
    pub rank: i64,
    pub world_size: i64,
    pub local_rank: i64,
    pub root_address: *const c_char,
    pub root_port: i64,
    pub allgather: gw_allgather_fn,
    pub allgather_user: *mut c_void,
    pub timeout_s: f64,
}

impl Default for gw_comm_options {
    /// `GW_COMM_OPTIONS_INIT`.
    fn default() -> Self {
        gw_comm_options {
            struct_size: std::mem::size_of::<gw_comm_options>() as u32,
            rank: -1,
            world_size: -1,
            local_rank: -1,
            root_address: std::ptr::null(),
            root_port: -1,
            allgather: None,
            allgather_user: std::ptr::null_mut(),
            timeout_s: 0.0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_sync_options {
    pub struct_size: u32,
    pub runtime: *mut gw_runtime,
    pub flags: u32,
}

impl Default for gw_sync_options {
    /// `GW_SYNC_OPTIONS_INIT`.
    fn default() -> Self {
        gw_sync_options {
            struct_size: std::mem::size_of::<gw_sync_options>() as u32,
            runtime: std::ptr::null_mut(),
            flags: 0,
        }
    }
}

pub const GW_SYNC_ALL_BUCKETS: u32 = 0xffff_ffff;
pub const GW_SYNC_APPLY: u32 = 1 << 0;
pub const GW_SYNC_GRADIENTS_AVERAGED: u32 = 1 << 1;
pub const GW_SYNC_PARAMETERS_AVERAGED: u32 = 1 << 2;
/// Since 1.4: an outer step (the schedule `diloco`) set some parameters.
pub const GW_SYNC_OUTER_STEP: u32 = 1 << 3;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_sync_bucket_info {
    pub struct_size: u32,
    pub codec: *const c_char,
    pub count: u64,
    pub num_tensors: u32,
    pub flags: u32,
}

impl Default for gw_sync_bucket_info {
    /// `GW_SYNC_BUCKET_INFO_INIT`.
    fn default() -> Self {
        gw_sync_bucket_info {
            struct_size: std::mem::size_of::<gw_sync_bucket_info>() as u32,
            codec: std::ptr::null(),
            count: 0,
            num_tensors: 0,
            flags: 0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gw_sync_stats {
    pub struct_size: u32,
    pub raw_bytes: u64,
    pub wire_bytes: u64,
    pub compression_ratio: f64,
    pub encode_seconds: f64,
    pub transfer_seconds: f64,
    pub decode_seconds: f64,
    pub steps: u64,
    pub syncs: u64,
    pub codec: *const c_char,
    pub codec_reason: *const c_char,
}

impl Default for gw_sync_stats {
    /// `GW_SYNC_STATS_INIT`.
    fn default() -> Self {
        gw_sync_stats {
            struct_size: std::mem::size_of::<gw_sync_stats>() as u32,
            raw_bytes: 0,
            wire_bytes: 0,
            compression_ratio: 1.0,
            encode_seconds: 0.0,
            transfer_seconds: 0.0,
            decode_seconds: 0.0,
            steps: 0,
            syncs: 0,
            codec: std::ptr::null(),
            codec_reason: std::ptr::null(),
        }
    }
}

extern "C" {
    // Versions and errors
    pub fn gw_version() -> u32;
    pub fn gw_version_string() -> *const c_char;
    pub fn gw_abi_version_major() -> u32;
    pub fn gw_abi_version_minor() -> u32;
    pub fn gw_status_string(status: gw_status) -> *const c_char;
    pub fn gw_last_error() -> *const c_char;
    pub fn gw_dtype_name(dtype: gw_dtype) -> *const c_char;
    pub fn gw_dtype_size(dtype: gw_dtype) -> u32;

    // Runtime
    pub fn gw_runtime_create(options: *const gw_runtime_options, runtime: *mut *mut gw_runtime) -> gw_status;
    pub fn gw_runtime_destroy(runtime: *mut gw_runtime) -> gw_status;
    pub fn gw_runtime_config_dump(
        runtime: *mut gw_runtime,
        format: gw_config_format,
        buf: *mut c_char,
        capacity: usize,
        length: *mut usize,
    ) -> gw_status;
    pub fn gw_runtime_plugin_count(runtime: *mut gw_runtime, count: *mut u32) -> gw_status;
    pub fn gw_runtime_plugin_info(runtime: *mut gw_runtime, index: u32, info: *mut gw_plugin_info) -> gw_status;
    pub fn gw_runtime_component_info(
        runtime: *mut gw_runtime,
        plugin_index: u32,
        component_index: u32,
        info: *mut gw_component_info,
    ) -> gw_status;
    pub fn gw_runtime_search_path_count(runtime: *mut gw_runtime, count: *mut u32) -> gw_status;
    pub fn gw_runtime_search_path(runtime: *mut gw_runtime, index: u32, path: *mut *const c_char) -> gw_status;

    // Codecs
    pub fn gw_codec_create(runtime: *mut gw_runtime, name: *const c_char, codec: *mut *mut gw_codec) -> gw_status;
    pub fn gw_codec_destroy(codec: *mut gw_codec) -> gw_status;
    pub fn gw_codec_name(codec: *const gw_codec) -> *const c_char;
    pub fn gw_codec_get_properties(codec: *mut gw_codec, properties: *mut gw_codec_properties) -> gw_status;
    pub fn gw_codec_max_encoded_size(codec: *mut gw_codec, dtype: gw_dtype, count: u64, bytes: *mut u64) -> gw_status;
    pub fn gw_codec_encode(
        codec: *mut gw_codec,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        payload: *mut c_void,
        capacity: u64,
        size: *mut u64,
    ) -> gw_status;
    pub fn gw_codec_decode(
        codec: *mut gw_codec,
        context: *const gw_codec_context,
        payload: *const c_void,
        size: u64,
        out: *mut gw_tensor,
        flags: u32,
    ) -> gw_status;
    /// Since 1.4.
    pub fn gw_codec_save_state(codec: *mut gw_codec, buf: *mut c_void, capacity: u64, size: *mut u64) -> gw_status;
    /// Since 1.4.
    pub fn gw_codec_load_state(codec: *mut gw_codec, buf: *const c_void, size: u64) -> gw_status;

    // Error feedback
    pub fn gw_error_feedback_create(codec: *mut gw_codec, ef: *mut *mut gw_error_feedback) -> gw_status;
    pub fn gw_error_feedback_destroy(ef: *mut gw_error_feedback) -> gw_status;
    pub fn gw_error_feedback_encode(
        ef: *mut gw_error_feedback,
        buffer_id: u64,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        payload: *mut c_void,
        capacity: u64,
        size: *mut u64,
    ) -> gw_status;
    pub fn gw_error_feedback_reset(ef: *mut gw_error_feedback) -> gw_status;
    pub fn gw_error_feedback_state_size(ef: *mut gw_error_feedback, size: *mut u64) -> gw_status;
    pub fn gw_error_feedback_save(ef: *mut gw_error_feedback, buf: *mut c_void, capacity: u64, size: *mut u64)
        -> gw_status;
    pub fn gw_error_feedback_load(ef: *mut gw_error_feedback, buf: *const c_void, size: u64) -> gw_status;

    // Communicators
    pub fn gw_comm_create(runtime: *mut gw_runtime, options: *const gw_comm_options, comm: *mut *mut gw_comm)
        -> gw_status;
    pub fn gw_comm_destroy(comm: *mut gw_comm) -> gw_status;
    pub fn gw_comm_rank(comm: *const gw_comm) -> u32;
    pub fn gw_comm_size(comm: *const gw_comm) -> u32;
    pub fn gw_comm_abort(comm: *mut gw_comm) -> gw_status;
    /// Since 1.5.
    pub fn gw_comm_membership_epoch(comm: *const gw_comm) -> u64;

    pub fn gw_request_test(request: *mut gw_request) -> gw_status;
    pub fn gw_request_wait(request: *mut gw_request, timeout_s: f64) -> gw_status;
    pub fn gw_request_free(request: *mut gw_request) -> gw_status;

    pub fn gw_allreduce_start(
        comm: *mut gw_comm,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_allreduce(comm: *mut gw_comm, input: *const gw_tensor, out: *mut gw_tensor, op: gw_reduce_op)
        -> gw_status;
    pub fn gw_reduce_scatter_start(
        comm: *mut gw_comm,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_reduce_scatter(comm: *mut gw_comm, input: *const gw_tensor, out: *mut gw_tensor, op: gw_reduce_op)
        -> gw_status;
    pub fn gw_allgather_start(
        comm: *mut gw_comm,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_allgather(comm: *mut gw_comm, input: *const gw_tensor, out: *mut gw_tensor) -> gw_status;
    pub fn gw_allgatherv_start(
        comm: *mut gw_comm,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        counts: *const u64,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_allgatherv(comm: *mut gw_comm, input: *const gw_tensor, out: *mut gw_tensor, counts: *const u64)
        -> gw_status;
    pub fn gw_broadcast_start(comm: *mut gw_comm, buf: *mut gw_tensor, root: u32, request: *mut *mut gw_request)
        -> gw_status;
    pub fn gw_broadcast(comm: *mut gw_comm, buf: *mut gw_tensor, root: u32) -> gw_status;
    pub fn gw_barrier_start(comm: *mut gw_comm, request: *mut *mut gw_request) -> gw_status;
    pub fn gw_barrier(comm: *mut gw_comm) -> gw_status;
    pub fn gw_send_start(
        comm: *mut gw_comm,
        buf: *const gw_tensor,
        peer: u32,
        tag: u32,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_send(comm: *mut gw_comm, buf: *const gw_tensor, peer: u32, tag: u32) -> gw_status;
    pub fn gw_recv_start(comm: *mut gw_comm, buf: *mut gw_tensor, peer: u32, tag: u32, request: *mut *mut gw_request)
        -> gw_status;
    pub fn gw_recv(comm: *mut gw_comm, buf: *mut gw_tensor, peer: u32, tag: u32) -> gw_status;
    pub fn gw_allreduce_compressed_start(
        comm: *mut gw_comm,
        codec: *mut gw_codec,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_allreduce_compressed(
        comm: *mut gw_comm,
        codec: *mut gw_codec,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
    ) -> gw_status;
    /// Since 1.6: several tensors through codecs of rounds, one collective per round for all of them.
    pub fn gw_allreduce_compressed_batch_start(
        comm: *mut gw_comm,
        n: u32,
        codecs: *const *mut gw_codec,
        contexts: *const *const gw_codec_context,
        tensors: *const *mut gw_tensor,
        op: gw_reduce_op,
        request: *mut *mut gw_request,
    ) -> gw_status;
    /// Since 1.6.
    pub fn gw_allreduce_compressed_batch(
        comm: *mut gw_comm,
        n: u32,
        codecs: *const *mut gw_codec,
        contexts: *const *const gw_codec_context,
        tensors: *const *mut gw_tensor,
        op: gw_reduce_op,
    ) -> gw_status;
    pub fn gw_allreduce_compressed_ef_start(
        comm: *mut gw_comm,
        ef: *mut gw_error_feedback,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_allreduce_compressed_ef(
        comm: *mut gw_comm,
        ef: *mut gw_error_feedback,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
    ) -> gw_status;
    // Compressed reduce-scatter and allgather (since ABI 1.3)
    pub fn gw_reduce_scatter_compressed_start(
        comm: *mut gw_comm,
        codec: *mut gw_codec,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_reduce_scatter_compressed(
        comm: *mut gw_comm,
        codec: *mut gw_codec,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
    ) -> gw_status;
    pub fn gw_reduce_scatter_compressed_ef_start(
        comm: *mut gw_comm,
        ef: *mut gw_error_feedback,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_reduce_scatter_compressed_ef(
        comm: *mut gw_comm,
        ef: *mut gw_error_feedback,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        op: gw_reduce_op,
    ) -> gw_status;
    pub fn gw_allgather_compressed_start(
        comm: *mut gw_comm,
        codec: *mut gw_codec,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_allgather_compressed(
        comm: *mut gw_comm,
        codec: *mut gw_codec,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
    ) -> gw_status;
    pub fn gw_allgather_compressed_ef_start(
        comm: *mut gw_comm,
        ef: *mut gw_error_feedback,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
        request: *mut *mut gw_request,
    ) -> gw_status;
    pub fn gw_allgather_compressed_ef(
        comm: *mut gw_comm,
        ef: *mut gw_error_feedback,
        context: *const gw_codec_context,
        input: *const gw_tensor,
        out: *mut gw_tensor,
    ) -> gw_status;

    // Synchronizer
    pub fn gw_sync_create(comm: *mut gw_comm, options: *const gw_sync_options, sync: *mut *mut gw_sync) -> gw_status;
    pub fn gw_sync_destroy(sync: *mut gw_sync) -> gw_status;
    pub fn gw_sync_register(
        sync: *mut gw_sync,
        name: *const c_char,
        gradient: *const gw_tensor,
        parameter: *const gw_tensor,
    ) -> gw_status;
    /// Since 1.4.
    pub fn gw_sync_register_shape(sync: *mut gw_sync, name: *const c_char, ndim: u32, dims: *const i64) -> gw_status;
    pub fn gw_sync_finalize(sync: *mut gw_sync) -> gw_status;
    pub fn gw_sync_bucket_count(sync: *mut gw_sync, count: *mut u32) -> gw_status;
    pub fn gw_sync_get_bucket_info(sync: *mut gw_sync, bucket: u32, info: *mut gw_sync_bucket_info) -> gw_status;
    pub fn gw_sync_tensor_bucket(sync: *mut gw_sync, name: *const c_char, bucket: *mut u32) -> gw_status;
    pub fn gw_sync_bucket_ready(sync: *mut gw_sync, bucket: u32) -> gw_status;
    pub fn gw_sync_step(sync: *mut gw_sync, flags: *mut u32) -> gw_status;
    pub fn gw_sync_skip_step(sync: *mut gw_sync) -> gw_status;
    pub fn gw_sync_save_state(sync: *mut gw_sync, buf: *mut c_void, capacity: u64, size: *mut u64) -> gw_status;
    pub fn gw_sync_load_state(sync: *mut gw_sync, buf: *const c_void, size: u64) -> gw_status;
    pub fn gw_sync_get_stats(sync: *mut gw_sync, bucket: u32, stats: *mut gw_sync_stats) -> gw_status;
}
