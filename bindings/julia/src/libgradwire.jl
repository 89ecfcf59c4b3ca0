# Raw @ccall wrappers of every function of gradwire.h, the Julia structs of its C structs and its constants,
# written once and checked against the header by ../check_signatures.py (run in CI). Names, argument
# order and types follow the C header exactly (only the argument `in` is spelled `input`). The safe API
# in Gradwire.jl builds on these; see the C header for ownership and the `thread:` rules.

# The library: GRADWIRE_LIB (a path), else the loader's search path (an installed libgradwire.so.0).
const libgradwire = get(ENV, "GRADWIRE_LIB", "libgradwire.so.0")

# 32-bit C enums and function-pointer typedefs
const gw_status = Int32
const gw_dtype = Int32
const gw_memory_kind = Int32
const gw_reduce_op = Int32
const gw_log_level = Int32
const gw_config_format = Int32
const gw_ps_mode = Int32
const gw_log_fn = Ptr{Cvoid}
const gw_allgather_fn = Ptr{Cvoid}
const gw_cache_load_fn = Ptr{Cvoid}

const GW_OK = gw_status(0)
const GW_IN_PROGRESS = gw_status(1)
const GW_MEMBERSHIP_CHANGED = gw_status(2)  # since 1.5, elastic mode only
const GW_ERR_INVALID_ARGUMENT = gw_status(-1)
const GW_ERR_NO_MEMORY = gw_status(-2)
const GW_ERR_NOT_FOUND = gw_status(-3)
const GW_ERR_PLUGIN = gw_status(-4)
const GW_ERR_VERSION = gw_status(-5)
const GW_ERR_CONFIG = gw_status(-6)
const GW_ERR_UNSUPPORTED = gw_status(-7)
const GW_ERR_TIMEOUT = gw_status(-8)
const GW_ERR_MISMATCH = gw_status(-9)
const GW_ERR_TRANSPORT = gw_status(-10)
const GW_ERR_CORRUPT = gw_status(-11)
const GW_ERR_ABORTED = gw_status(-12)
const GW_ERR_BUFFER_TOO_SMALL = gw_status(-13)
const GW_ERR_STATE = gw_status(-14)
const GW_ERR_INTERNAL = gw_status(-15)
const GW_DTYPE_F32 = gw_dtype(0)
const GW_DTYPE_F64 = gw_dtype(1)
const GW_DTYPE_F16 = gw_dtype(2)
const GW_DTYPE_BF16 = gw_dtype(3)
const GW_DTYPE_I32 = gw_dtype(4)
const GW_DTYPE_I64 = gw_dtype(5)
const GW_DTYPE_U8 = gw_dtype(6)
const GW_MEMORY_HOST = gw_memory_kind(0)
const GW_MEMORY_CUDA = gw_memory_kind(1)
const GW_REDUCE_SUM = gw_reduce_op(0)
const GW_REDUCE_AVG = gw_reduce_op(1)
const GW_REDUCE_MIN = gw_reduce_op(2)
const GW_REDUCE_MAX = gw_reduce_op(3)
const GW_LOG_ERROR = gw_log_level(0)
const GW_LOG_WARN = gw_log_level(1)
const GW_LOG_INFO = gw_log_level(2)
const GW_LOG_DEBUG = gw_log_level(3)
const GW_LOG_TRACE = gw_log_level(4)
const GW_CONFIG_FORMAT_TOML = gw_config_format(0)
const GW_CONFIG_FORMAT_REFERENCE = gw_config_format(1)
const GW_CODEC_LOSSLESS = UInt32(1)
const GW_CODEC_SPARSE = UInt32(2)
const GW_CODEC_SUMMABLE = UInt32(4)
const GW_CODEC_SHARED_INDICES = UInt32(8)
const GW_CODEC_CUDA = UInt32(16)
const GW_CODEC_STATEFUL = UInt32(32)
const GW_CODEC_ROUNDS = UInt32(64)
const GW_DECODE_ACCUMULATE = UInt32(1)
const GW_RUNTIME_NO_ENV_OVERRIDES = UInt32(1)
const GW_RUNTIME_INSPECT_ONLY = UInt32(2)
const GW_SYNC_APPLY = UInt32(1)
const GW_SYNC_GRADIENTS_AVERAGED = UInt32(2)
const GW_SYNC_PARAMETERS_AVERAGED = UInt32(4)
const GW_SYNC_OUTER_STEP = UInt32(8)
const GW_ABI_VERSION_MAJOR = UInt32(1)
const GW_ABI_VERSION_MINOR = UInt32(6)
const GW_SYNC_ALL_BUCKETS = UInt32(0xffffffff)
const GW_PS_SYNC = gw_ps_mode(0)
const GW_PS_ASYNC = gw_ps_mode(1)
const GW_CACHE_NODE_SHARED = UInt32(1)

# Opaque handles
abstract type gw_runtime end
abstract type gw_codec end
abstract type gw_error_feedback end
abstract type gw_comm end
abstract type gw_request end
abstract type gw_sync end
abstract type gw_ps end
abstract type gw_cache end

# Structs (every one starts with struct_size; see the *_INIT constructors in Gradwire.jl)
struct gw_tensor
    struct_size::UInt32
    memory::gw_memory_kind
    dtype::gw_dtype
    device::Int32
    data::Ptr{Cvoid}
    count::UInt64
    stream::Ptr{Cvoid}
end

struct gw_codec_properties
    struct_size::UInt32
    flags::UInt32
    sum_dtype::gw_dtype
    dtypes::UInt32
end

struct gw_tensor_shape
    offset::UInt64
    rows::UInt64
    cols::UInt64
end

struct gw_codec_context
    struct_size::UInt32
    seed::UInt64
    step::UInt64
    rank::UInt32
    world_size::UInt32
    workspace::Ptr{Cvoid}
    workspace_bytes::UInt64
    buffer_id::UInt64
    shapes::Ptr{gw_tensor_shape}
    num_shapes::UInt32
end

struct gw_runtime_options
    struct_size::UInt32
    config_path::Cstring
    config_text::Cstring
    plugin_paths::Ptr{Ptr{Cchar}}
    num_plugin_paths::UInt32
    log::gw_log_fn
    log_user::Ptr{Cvoid}
    log_level::gw_log_level
    flags::UInt32
end

struct gw_plugin_info
    struct_size::UInt32
    path::Cstring
    status::gw_status
    error::Cstring
    name::Cstring
    version::Cstring
    description::Cstring
    abi_major::UInt32
    abi_minor::UInt32
    num_components::UInt32
end

struct gw_component_info
    struct_size::UInt32
    kind::UInt32
    name::Cstring
    help::Cstring
end

struct gw_comm_options
    struct_size::UInt32
    rank::Int64
    world_size::Int64
    local_rank::Int64
    root_address::Cstring
    root_port::Int64
    allgather::gw_allgather_fn
    allgather_user::Ptr{Cvoid}
    timeout_s::Cdouble
end

struct gw_sync_options
    struct_size::UInt32
    runtime::Ptr{gw_runtime}
    flags::UInt32
end

struct gw_sync_bucket_info
    struct_size::UInt32
    codec::Cstring
    count::UInt64
    num_tensors::UInt32
    flags::UInt32
end

struct gw_sync_stats
    struct_size::UInt32
    raw_bytes::UInt64
    wire_bytes::UInt64
    compression_ratio::Cdouble
    encode_seconds::Cdouble
    transfer_seconds::Cdouble
    decode_seconds::Cdouble
    steps::UInt64
    syncs::UInt64
    codec::Cstring
    codec_reason::Cstring
end

struct gw_ps_options
    struct_size::UInt32
    runtime::Ptr{gw_runtime}
    servers::UInt32
    mode::gw_ps_mode
    staleness::UInt32
    momentum::Cfloat
    flags::UInt32
end

struct gw_ps_stats
    struct_size::UInt32
    pushes::UInt64
    dropped::UInt64
    wire_bytes::UInt64
    version::UInt64
    dead_workers::UInt32
    flags::UInt32
end

struct gw_cache_options
    struct_size::UInt32
    num_samples::UInt64
    sample_bytes::UInt64
    load::gw_cache_load_fn
    load_user::Ptr{Cvoid}
    checksum::UInt64
    flags::UInt32
end

struct gw_cache_stats
    struct_size::UInt32
    bytes_private::UInt64
    bytes_shared::UInt64
    bytes_local::UInt64
    bytes_fetched::UInt64
    bytes_served::UInt64
    loads::UInt64
    bytes_loaded::UInt64
    gets::UInt64
    checksum::UInt64
    flags::UInt32
end

# Functions
gw_version() = @ccall libgradwire.gw_version()::UInt32
gw_version_string() = @ccall libgradwire.gw_version_string()::Cstring
gw_abi_version_major() = @ccall libgradwire.gw_abi_version_major()::UInt32
gw_abi_version_minor() = @ccall libgradwire.gw_abi_version_minor()::UInt32
gw_status_string(status) = @ccall libgradwire.gw_status_string(status::gw_status)::Cstring
gw_last_error() = @ccall libgradwire.gw_last_error()::Cstring
gw_dtype_name(dtype) = @ccall libgradwire.gw_dtype_name(dtype::gw_dtype)::Cstring
gw_dtype_size(dtype) = @ccall libgradwire.gw_dtype_size(dtype::gw_dtype)::UInt32
gw_runtime_create(options, runtime) = @ccall libgradwire.gw_runtime_create(options::Ptr{gw_runtime_options}, runtime::Ptr{Ptr{gw_runtime}})::gw_status
gw_runtime_destroy(runtime) = @ccall libgradwire.gw_runtime_destroy(runtime::Ptr{gw_runtime})::gw_status
gw_runtime_config_dump(runtime, format, buf, capacity, length) = @ccall libgradwire.gw_runtime_config_dump(runtime::Ptr{gw_runtime}, format::gw_config_format, buf::Ptr{Cchar}, capacity::Csize_t, length::Ptr{Csize_t})::gw_status
gw_runtime_plugin_count(runtime, count) = @ccall libgradwire.gw_runtime_plugin_count(runtime::Ptr{gw_runtime}, count::Ptr{UInt32})::gw_status
gw_runtime_plugin_info(runtime, index, info) = @ccall libgradwire.gw_runtime_plugin_info(runtime::Ptr{gw_runtime}, index::UInt32, info::Ptr{gw_plugin_info})::gw_status
gw_runtime_component_info(runtime, plugin_index, component_index, info) = @ccall libgradwire.gw_runtime_component_info(runtime::Ptr{gw_runtime}, plugin_index::UInt32, component_index::UInt32, info::Ptr{gw_component_info})::gw_status
gw_runtime_search_path_count(runtime, count) = @ccall libgradwire.gw_runtime_search_path_count(runtime::Ptr{gw_runtime}, count::Ptr{UInt32})::gw_status
gw_runtime_search_path(runtime, index, path) = @ccall libgradwire.gw_runtime_search_path(runtime::Ptr{gw_runtime}, index::UInt32, path::Ptr{Ptr{Cchar}})::gw_status
gw_codec_create(runtime, name, codec) = @ccall libgradwire.gw_codec_create(runtime::Ptr{gw_runtime}, name::Cstring, codec::Ptr{Ptr{gw_codec}})::gw_status
gw_codec_destroy(codec) = @ccall libgradwire.gw_codec_destroy(codec::Ptr{gw_codec})::gw_status
gw_codec_name(codec) = @ccall libgradwire.gw_codec_name(codec::Ptr{gw_codec})::Cstring
gw_codec_get_properties(codec, properties) = @ccall libgradwire.gw_codec_get_properties(codec::Ptr{gw_codec}, properties::Ptr{gw_codec_properties})::gw_status
gw_codec_max_encoded_size(codec, dtype, count, bytes) = @ccall libgradwire.gw_codec_max_encoded_size(codec::Ptr{gw_codec}, dtype::gw_dtype, count::UInt64, bytes::Ptr{UInt64})::gw_status
gw_codec_encode(codec, context, input, payload, capacity, size) = @ccall libgradwire.gw_codec_encode(codec::Ptr{gw_codec}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, payload::Ptr{Cvoid}, capacity::UInt64, size::Ptr{UInt64})::gw_status
gw_codec_decode(codec, context, payload, size, out, flags) = @ccall libgradwire.gw_codec_decode(codec::Ptr{gw_codec}, context::Ptr{gw_codec_context}, payload::Ptr{Cvoid}, size::UInt64, out::Ptr{gw_tensor}, flags::UInt32)::gw_status
gw_codec_save_state(codec, buf, capacity, size) = @ccall libgradwire.gw_codec_save_state(codec::Ptr{gw_codec}, buf::Ptr{Cvoid}, capacity::UInt64, size::Ptr{UInt64})::gw_status
gw_codec_load_state(codec, buf, size) = @ccall libgradwire.gw_codec_load_state(codec::Ptr{gw_codec}, buf::Ptr{Cvoid}, size::UInt64)::gw_status
gw_error_feedback_create(codec, ef) = @ccall libgradwire.gw_error_feedback_create(codec::Ptr{gw_codec}, ef::Ptr{Ptr{gw_error_feedback}})::gw_status
gw_error_feedback_destroy(ef) = @ccall libgradwire.gw_error_feedback_destroy(ef::Ptr{gw_error_feedback})::gw_status
gw_error_feedback_encode(ef, buffer_id, context, input, payload, capacity, size) = @ccall libgradwire.gw_error_feedback_encode(ef::Ptr{gw_error_feedback}, buffer_id::UInt64, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, payload::Ptr{Cvoid}, capacity::UInt64, size::Ptr{UInt64})::gw_status
gw_error_feedback_reset(ef) = @ccall libgradwire.gw_error_feedback_reset(ef::Ptr{gw_error_feedback})::gw_status
gw_error_feedback_state_size(ef, size) = @ccall libgradwire.gw_error_feedback_state_size(ef::Ptr{gw_error_feedback}, size::Ptr{UInt64})::gw_status
gw_error_feedback_save(ef, buf, capacity, size) = @ccall libgradwire.gw_error_feedback_save(ef::Ptr{gw_error_feedback}, buf::Ptr{Cvoid}, capacity::UInt64, size::Ptr{UInt64})::gw_status
gw_error_feedback_load(ef, buf, size) = @ccall libgradwire.gw_error_feedback_load(ef::Ptr{gw_error_feedback}, buf::Ptr{Cvoid}, size::UInt64)::gw_status
gw_comm_create(runtime, options, comm) = @ccall libgradwire.gw_comm_create(runtime::Ptr{gw_runtime}, options::Ptr{gw_comm_options}, comm::Ptr{Ptr{gw_comm}})::gw_status
gw_comm_destroy(comm) = @ccall libgradwire.gw_comm_destroy(comm::Ptr{gw_comm})::gw_status
gw_comm_rank(comm) = @ccall libgradwire.gw_comm_rank(comm::Ptr{gw_comm})::UInt32
gw_comm_size(comm) = @ccall libgradwire.gw_comm_size(comm::Ptr{gw_comm})::UInt32
gw_comm_abort(comm) = @ccall libgradwire.gw_comm_abort(comm::Ptr{gw_comm})::gw_status
gw_comm_membership_epoch(comm) = @ccall libgradwire.gw_comm_membership_epoch(comm::Ptr{gw_comm})::UInt64  # since 1.5
gw_request_test(request) = @ccall libgradwire.gw_request_test(request::Ptr{gw_request})::gw_status
gw_request_wait(request, timeout_s) = @ccall libgradwire.gw_request_wait(request::Ptr{gw_request}, timeout_s::Cdouble)::gw_status
gw_request_free(request) = @ccall libgradwire.gw_request_free(request::Ptr{gw_request})::gw_status
gw_allreduce_start(comm, input, out, op, request) = @ccall libgradwire.gw_allreduce_start(comm::Ptr{gw_comm}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op, request::Ptr{Ptr{gw_request}})::gw_status
gw_allreduce(comm, input, out, op) = @ccall libgradwire.gw_allreduce(comm::Ptr{gw_comm}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op)::gw_status
gw_reduce_scatter_start(comm, input, out, op, request) = @ccall libgradwire.gw_reduce_scatter_start(comm::Ptr{gw_comm}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op, request::Ptr{Ptr{gw_request}})::gw_status
gw_reduce_scatter(comm, input, out, op) = @ccall libgradwire.gw_reduce_scatter(comm::Ptr{gw_comm}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op)::gw_status
gw_allgather_start(comm, input, out, request) = @ccall libgradwire.gw_allgather_start(comm::Ptr{gw_comm}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, request::Ptr{Ptr{gw_request}})::gw_status
gw_allgather(comm, input, out) = @ccall libgradwire.gw_allgather(comm::Ptr{gw_comm}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor})::gw_status
gw_allgatherv_start(comm, input, out, counts, request) = @ccall libgradwire.gw_allgatherv_start(comm::Ptr{gw_comm}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, counts::Ptr{UInt64}, request::Ptr{Ptr{gw_request}})::gw_status
gw_allgatherv(comm, input, out, counts) = @ccall libgradwire.gw_allgatherv(comm::Ptr{gw_comm}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, counts::Ptr{UInt64})::gw_status
gw_broadcast_start(comm, buf, root, request) = @ccall libgradwire.gw_broadcast_start(comm::Ptr{gw_comm}, buf::Ptr{gw_tensor}, root::UInt32, request::Ptr{Ptr{gw_request}})::gw_status
gw_broadcast(comm, buf, root) = @ccall libgradwire.gw_broadcast(comm::Ptr{gw_comm}, buf::Ptr{gw_tensor}, root::UInt32)::gw_status
gw_barrier_start(comm, request) = @ccall libgradwire.gw_barrier_start(comm::Ptr{gw_comm}, request::Ptr{Ptr{gw_request}})::gw_status
gw_barrier(comm) = @ccall libgradwire.gw_barrier(comm::Ptr{gw_comm})::gw_status
gw_send_start(comm, buf, peer, tag, request) = @ccall libgradwire.gw_send_start(comm::Ptr{gw_comm}, buf::Ptr{gw_tensor}, peer::UInt32, tag::UInt32, request::Ptr{Ptr{gw_request}})::gw_status
gw_send(comm, buf, peer, tag) = @ccall libgradwire.gw_send(comm::Ptr{gw_comm}, buf::Ptr{gw_tensor}, peer::UInt32, tag::UInt32)::gw_status
gw_recv_start(comm, buf, peer, tag, request) = @ccall libgradwire.gw_recv_start(comm::Ptr{gw_comm}, buf::Ptr{gw_tensor}, peer::UInt32, tag::UInt32, request::Ptr{Ptr{gw_request}})::gw_status
gw_recv(comm, buf, peer, tag) = @ccall libgradwire.gw_recv(comm::Ptr{gw_comm}, buf::Ptr{gw_tensor}, peer::UInt32, tag::UInt32)::gw_status
gw_allreduce_compressed_start(comm, codec, context, input, out, op, request) = @ccall libgradwire.gw_allreduce_compressed_start(comm::Ptr{gw_comm}, codec::Ptr{gw_codec}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op, request::Ptr{Ptr{gw_request}})::gw_status
gw_allreduce_compressed(comm, codec, context, input, out, op) = @ccall libgradwire.gw_allreduce_compressed(comm::Ptr{gw_comm}, codec::Ptr{gw_codec}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op)::gw_status
gw_allreduce_compressed_batch_start(comm, n, codecs, contexts, tensors, op, request) = @ccall libgradwire.gw_allreduce_compressed_batch_start(comm::Ptr{gw_comm}, n::UInt32, codecs::Ptr{Ptr{gw_codec}}, contexts::Ptr{Ptr{gw_codec_context}}, tensors::Ptr{Ptr{gw_tensor}}, op::gw_reduce_op, request::Ptr{Ptr{gw_request}})::gw_status  # since 1.6
gw_allreduce_compressed_batch(comm, n, codecs, contexts, tensors, op) = @ccall libgradwire.gw_allreduce_compressed_batch(comm::Ptr{gw_comm}, n::UInt32, codecs::Ptr{Ptr{gw_codec}}, contexts::Ptr{Ptr{gw_codec_context}}, tensors::Ptr{Ptr{gw_tensor}}, op::gw_reduce_op)::gw_status  # since 1.6
gw_allreduce_compressed_ef_start(comm, ef, context, input, out, op, request) = @ccall libgradwire.gw_allreduce_compressed_ef_start(comm::Ptr{gw_comm}, ef::Ptr{gw_error_feedback}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op, request::Ptr{Ptr{gw_request}})::gw_status
gw_allreduce_compressed_ef(comm, ef, context, input, out, op) = @ccall libgradwire.gw_allreduce_compressed_ef(comm::Ptr{gw_comm}, ef::Ptr{gw_error_feedback}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op)::gw_status
gw_reduce_scatter_compressed_start(comm, codec, context, input, out, op, request) = @ccall libgradwire.gw_reduce_scatter_compressed_start(comm::Ptr{gw_comm}, codec::Ptr{gw_codec}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op, request::Ptr{Ptr{gw_request}})::gw_status
gw_reduce_scatter_compressed(comm, codec, context, input, out, op) = @ccall libgradwire.gw_reduce_scatter_compressed(comm::Ptr{gw_comm}, codec::Ptr{gw_codec}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op)::gw_status
gw_reduce_scatter_compressed_ef_start(comm, ef, context, input, out, op, request) = @ccall libgradwire.gw_reduce_scatter_compressed_ef_start(comm::Ptr{gw_comm}, ef::Ptr{gw_error_feedback}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op, request::Ptr{Ptr{gw_request}})::gw_status
gw_reduce_scatter_compressed_ef(comm, ef, context, input, out, op) = @ccall libgradwire.gw_reduce_scatter_compressed_ef(comm::Ptr{gw_comm}, ef::Ptr{gw_error_feedback}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, op::gw_reduce_op)::gw_status
gw_allgather_compressed_start(comm, codec, context, input, out, request) = @ccall libgradwire.gw_allgather_compressed_start(comm::Ptr{gw_comm}, codec::Ptr{gw_codec}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, request::Ptr{Ptr{gw_request}})::gw_status
gw_allgather_compressed(comm, codec, context, input, out) = @ccall libgradwire.gw_allgather_compressed(comm::Ptr{gw_comm}, codec::Ptr{gw_codec}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor})::gw_status
gw_allgather_compressed_ef_start(comm, ef, context, input, out, request) = @ccall libgradwire.gw_allgather_compressed_ef_start(comm::Ptr{gw_comm}, ef::Ptr{gw_error_feedback}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor}, request::Ptr{Ptr{gw_request}})::gw_status
gw_allgather_compressed_ef(comm, ef, context, input, out) = @ccall libgradwire.gw_allgather_compressed_ef(comm::Ptr{gw_comm}, ef::Ptr{gw_error_feedback}, context::Ptr{gw_codec_context}, in::Ptr{gw_tensor}, out::Ptr{gw_tensor})::gw_status
gw_sync_create(comm, options, sync) = @ccall libgradwire.gw_sync_create(comm::Ptr{gw_comm}, options::Ptr{gw_sync_options}, sync::Ptr{Ptr{gw_sync}})::gw_status
gw_sync_destroy(sync) = @ccall libgradwire.gw_sync_destroy(sync::Ptr{gw_sync})::gw_status
gw_sync_register(sync, name, gradient, parameter) = @ccall libgradwire.gw_sync_register(sync::Ptr{gw_sync}, name::Cstring, gradient::Ptr{gw_tensor}, parameter::Ptr{gw_tensor})::gw_status
gw_sync_register_shape(sync, name, ndim, dims) = @ccall libgradwire.gw_sync_register_shape(sync::Ptr{gw_sync}, name::Cstring, ndim::UInt32, dims::Ptr{Int64})::gw_status
gw_sync_finalize(sync) = @ccall libgradwire.gw_sync_finalize(sync::Ptr{gw_sync})::gw_status
gw_sync_bucket_count(sync, count) = @ccall libgradwire.gw_sync_bucket_count(sync::Ptr{gw_sync}, count::Ptr{UInt32})::gw_status
gw_sync_get_bucket_info(sync, bucket, info) = @ccall libgradwire.gw_sync_get_bucket_info(sync::Ptr{gw_sync}, bucket::UInt32, info::Ptr{gw_sync_bucket_info})::gw_status
gw_sync_tensor_bucket(sync, name, bucket) = @ccall libgradwire.gw_sync_tensor_bucket(sync::Ptr{gw_sync}, name::Cstring, bucket::Ptr{UInt32})::gw_status
gw_sync_bucket_ready(sync, bucket) = @ccall libgradwire.gw_sync_bucket_ready(sync::Ptr{gw_sync}, bucket::UInt32)::gw_status
gw_sync_step(sync, flags) = @ccall libgradwire.gw_sync_step(sync::Ptr{gw_sync}, flags::Ptr{UInt32})::gw_status
gw_sync_skip_step(sync) = @ccall libgradwire.gw_sync_skip_step(sync::Ptr{gw_sync})::gw_status
gw_sync_save_state(sync, buf, capacity, size) = @ccall libgradwire.gw_sync_save_state(sync::Ptr{gw_sync}, buf::Ptr{Cvoid}, capacity::UInt64, size::Ptr{UInt64})::gw_status
gw_sync_load_state(sync, buf, size) = @ccall libgradwire.gw_sync_load_state(sync::Ptr{gw_sync}, buf::Ptr{Cvoid}, size::UInt64)::gw_status
gw_sync_get_stats(sync, bucket, stats) = @ccall libgradwire.gw_sync_get_stats(sync::Ptr{gw_sync}, bucket::UInt32, stats::Ptr{gw_sync_stats})::gw_status

# Parameter server
gw_ps_create(comm, options, parameters, ps) = @ccall libgradwire.gw_ps_create(comm::Ptr{gw_comm}, options::Ptr{gw_ps_options}, parameters::Ptr{gw_tensor}, ps::Ptr{Ptr{gw_ps}})::gw_status
gw_ps_role(ps, is_server, worker, workers) = @ccall libgradwire.gw_ps_role(ps::Ptr{gw_ps}, is_server::Ptr{Cint}, worker::Ptr{UInt32}, workers::Ptr{UInt32})::gw_status
gw_ps_push_pull(ps, gradient, lr) = @ccall libgradwire.gw_ps_push_pull(ps::Ptr{gw_ps}, gradient::Ptr{gw_tensor}, lr::Cfloat)::gw_status
gw_ps_serve(ps) = @ccall libgradwire.gw_ps_serve(ps::Ptr{gw_ps})::gw_status
gw_ps_get_stats(ps, stats) = @ccall libgradwire.gw_ps_get_stats(ps::Ptr{gw_ps}, stats::Ptr{gw_ps_stats})::gw_status
gw_ps_destroy(ps) = @ccall libgradwire.gw_ps_destroy(ps::Ptr{gw_ps})::gw_status

# Data cache
gw_cache_create(comm, options, cache) = @ccall libgradwire.gw_cache_create(comm::Ptr{gw_comm}, options::Ptr{gw_cache_options}, cache::Ptr{Ptr{gw_cache}})::gw_status
gw_cache_shard(cache, first, count) = @ccall libgradwire.gw_cache_shard(cache::Ptr{gw_cache}, first::Ptr{UInt64}, count::Ptr{UInt64})::gw_status
gw_cache_get(cache, indices, n, out) = @ccall libgradwire.gw_cache_get(cache::Ptr{gw_cache}, indices::Ptr{UInt64}, n::UInt64, out::Ptr{Cvoid})::gw_status
gw_cache_get_stats(cache, stats) = @ccall libgradwire.gw_cache_get_stats(cache::Ptr{gw_cache}, stats::Ptr{gw_cache_stats})::gw_status
gw_cache_destroy(cache) = @ccall libgradwire.gw_cache_destroy(cache::Ptr{gw_cache})::gw_status
