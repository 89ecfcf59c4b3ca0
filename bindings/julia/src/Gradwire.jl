"""
    Gradwire

Julia binding of gradwire (compressed gradient communication) over its C ABI.

Handles (`Runtime`, `Codec`, `Comm`, `Request`, `Sync`) are closed with `close`; a handle the garbage
collector finds unreachable is not destroyed from its finalizer (finalizers must not call into a
library that may block or take locks): the finalizer queues it, and the next Gradwire call (or
`Gradwire.free_pending()`) destroys it — requests first, then synchronizers, codecs, communicators and
runtimes. Errors are thrown as `GradwireError` with gradwire's status and message. Arrays handed to a
nonblocking call are kept alive by the `Request` (and by the destroy queue, should the request be
collected while in flight) until gradwire is done with them.
"""
module Gradwire

export GradwireError, Runtime, Codec, Comm, Request, Sync, BF16
export encode, decode!, comm_rank, comm_size, abort, allreduce!, allreduce_start!, allreduce_compressed!,
       allreduce_compressed_start!, reduce_scatter_compressed!, reduce_scatter_compressed_start!,
       allgather_compressed!, allgather_compressed_start!, allgather!, broadcast!, barrier, send, recv!, test, free,
       register!, finalize!, step!, stats, free_pending

include("libgradwire.jl")

# ---- errors ---------------------------------------------------------------------------------------

"""A failed gradwire call: `status` (a `GW_ERR_*` value), its `name` and gradwire's `message`."""
struct GradwireError <: Exception
    status::Int32
    name::String
    message::String
end

Base.showerror(io::IO, e::GradwireError) = print(io, e.name, ": ", e.message)

# gw_last_error is thread-local; no task switch can happen between the failing ccall and this read.
function check(st::Integer)
    st >= 0 && return st
    msg = unsafe_string(gw_last_error())
    throw(GradwireError(Int32(st), unsafe_string(gw_status_string(Int32(st))), msg))
end

# ---- element types --------------------------------------------------------------------------------

"""bfloat16, stored as its bits."""
struct BF16
    bits::UInt16
end

const Element = Union{Float32,Float64,Float16,BF16,Int32,Int64,UInt8}
dtype(::Type{Float32}) = GW_DTYPE_F32
dtype(::Type{Float64}) = GW_DTYPE_F64
dtype(::Type{Float16}) = GW_DTYPE_F16
dtype(::Type{BF16}) = GW_DTYPE_BF16
dtype(::Type{Int32}) = GW_DTYPE_I32
dtype(::Type{Int64}) = GW_DTYPE_I64
dtype(::Type{UInt8}) = GW_DTYPE_U8

# A gw_tensor describing a dense array; call under GC.@preserve of the array.
tensor(a::DenseArray{T}) where {T<:Element} =
    gw_tensor(UInt32(sizeof(gw_tensor)), GW_MEMORY_HOST, dtype(T), Int32(0), Ptr{Cvoid}(pointer(a)),
              UInt64(length(a)), C_NULL)

const OPS = Dict(:sum => GW_REDUCE_SUM, :avg => GW_REDUCE_AVG, :min => GW_REDUCE_MIN, :max => GW_REDUCE_MAX)
op_of(op::Symbol) = haskey(OPS, op) ? OPS[op] :
    throw(ArgumentError("op must be :sum, :avg, :min or :max, not :$op"))

# ---- the destroy queue ----------------------------------------------------------------------------

const KIND_ORDER = (:request, :sync, :codec, :comm, :runtime)
const pending = Vector{Tuple{Symbol,Ptr{Cvoid},Any}}()   # kind, handle, what it keeps alive
const pending_lock = Threads.SpinLock()                   # never yields; finalizers only trylock it

kind_of(::Any) = :unknown   # methods for each handle type below
keep_of(x) = hasproperty(x, :keep) ? x.keep : nothing

# The finalizer of every handle: queue its destroy. A finalizer may run while this thread holds the
# lock (inside free_pending); it then re-registers itself and runs again at a later collection.
function queue_destroy(x)
    x.handle == C_NULL && return nothing
    if !trylock(pending_lock)
        finalizer(queue_destroy, x)
        return nothing
    end
    try
        push!(pending, (kind_of(x), Ptr{Cvoid}(x.handle), keep_of(x)))
    finally
        unlock(pending_lock)
    end
    nothing
end

"""Destroys every handle whose object was garbage-collected. Called by every constructor and `close`."""
function free_pending()
    lock(pending_lock)
    items = copy(pending)
    empty!(pending)
    unlock(pending_lock)
    for kind in KIND_ORDER, (k, h, _) in items
        k == kind || continue
        if k == :request
            r = Ptr{gw_request}(h)
            gw_request_wait(r, -1.0)   # freeing an unfinished collective would fail its communicator
            gw_request_free(r)
        elseif k == :sync
            gw_sync_destroy(Ptr{gw_sync}(h))
        elseif k == :codec
            gw_codec_destroy(Ptr{gw_codec}(h))
        elseif k == :comm
            gw_comm_destroy(Ptr{gw_comm}(h))
        elseif k == :runtime
            gw_runtime_destroy(Ptr{gw_runtime}(h))
        end
    end
    nothing
end

# ---- runtime --------------------------------------------------------------------------------------

"""
    Runtime(; config_text=nothing, config_path=nothing, plugin_paths=String[], no_env_overrides=false)

The configuration and the loaded plugins. Any thread may use it.
"""
mutable struct Runtime
    handle::Ptr{gw_runtime}
    function Runtime(; config_text=nothing, config_path=nothing, plugin_paths=String[], no_env_overrides=false)
        free_pending()
        out = Ref{Ptr{gw_runtime}}(C_NULL)
        paths = [Base.unsafe_convert(Cstring, p) for p in plugin_paths]
        GC.@preserve plugin_paths paths config_text config_path begin
            opts = gw_runtime_options(UInt32(sizeof(gw_runtime_options)),
                config_path === nothing ? Cstring(C_NULL) : Base.unsafe_convert(Cstring, config_path),
                config_text === nothing ? Cstring(C_NULL) : Base.unsafe_convert(Cstring, config_text),
                isempty(paths) ? Ptr{Ptr{Cchar}}(C_NULL) : Ptr{Ptr{Cchar}}(pointer(paths)), UInt32(length(paths)),
                C_NULL, C_NULL, GW_LOG_WARN, no_env_overrides ? GW_RUNTIME_NO_ENV_OVERRIDES : UInt32(0))
            check(gw_runtime_create(Ref(opts), out))
        end
        rt = new(out[])
        finalizer(queue_destroy, rt)
    end
end

kind_of(::Runtime) = :runtime

function Base.close(rt::Runtime)
    free_pending()
    h, rt.handle = rt.handle, C_NULL
    check(gw_runtime_destroy(h))   # a closed runtime (NULL) is gradwire's GW_ERR_INVALID_ARGUMENT
    nothing
end

# ---- codecs ---------------------------------------------------------------------------------------

"""
    Codec(rt, name)

The codec `name` with its `[codec.<name>]` configuration. Encoding and decoding: one task at a time.
"""
mutable struct Codec
    handle::Ptr{gw_codec}
    function Codec(rt::Runtime, name::AbstractString)
        free_pending()
        out = Ref{Ptr{gw_codec}}(C_NULL)
        check(gw_codec_create(rt.handle, name, out))
        c = new(out[])
        finalizer(queue_destroy, c)
    end
end

kind_of(::Codec) = :codec

function Base.close(c::Codec)
    free_pending()
    h, c.handle = c.handle, C_NULL
    check(gw_codec_destroy(h))
    nothing
end

codec_context(seed, step) = gw_codec_context(UInt32(sizeof(gw_codec_context)), UInt64(seed), UInt64(step),
                                             UInt32(0), UInt32(1), C_NULL, UInt64(0), UInt64(0), C_NULL, UInt32(0))

"""`encode(codec, x; seed=0, step=0)`: the payload (wire header included) as a `Vector{UInt8}`."""
function encode(c::Codec, x::DenseArray{T}; seed=0, step=0) where {T<:Element}
    cap = Ref{UInt64}(0)
    check(gw_codec_max_encoded_size(c.handle, dtype(T), UInt64(length(x)), cap))
    p = Vector{UInt8}(undef, cap[])
    size = Ref{UInt64}(0)
    GC.@preserve x p begin
        check(gw_codec_encode(c.handle, Ref(codec_context(seed, step)), Ref(tensor(x)), pointer(p), cap[], size))
    end
    resize!(p, size[])
end

"""`decode!(codec, out, payload; accumulate=false)`: checks the payload against `out`, decodes into it."""
function decode!(c::Codec, out::DenseArray{T}, payload::Vector{UInt8}; accumulate=false) where {T<:Element}
    t = Ref(tensor(out))
    GC.@preserve out payload begin
        check(gw_codec_decode(c.handle, Ptr{gw_codec_context}(C_NULL), pointer(payload), UInt64(length(payload)), t,
                              accumulate ? GW_DECODE_ACCUMULATE : UInt32(0)))
    end
    out
end

# ---- communicators --------------------------------------------------------------------------------

"""
    Comm(rt; rank=-1, world_size=-1, timeout_s=0.0)

A communicator over all ranks (collective); -1: from the launcher's environment (`gradwire run`).
gradwire's rule: one thread uses it (call it from the task that created it, and keep that task on its
thread: `@async`, not `Threads.@spawn`), except `abort`, which any thread may call.
"""
mutable struct Comm
    handle::Ptr{gw_comm}
    lock::ReentrantLock   # abort vs close
    function Comm(rt::Runtime; rank=-1, world_size=-1, timeout_s=0.0)
        free_pending()
        o = gw_comm_options(UInt32(sizeof(gw_comm_options)), Int64(rank), Int64(world_size),
                            Int64(rank >= 0 ? rank : -1), Cstring(C_NULL), Int64(-1), C_NULL, C_NULL,
                            Float64(timeout_s))
        out = Ref{Ptr{gw_comm}}(C_NULL)
        check(gw_comm_create(rt.handle, Ref(o), out))
        c = new(out[], ReentrantLock())
        finalizer(queue_destroy, c)
    end
end

kind_of(::Comm) = :comm

function Base.close(c::Comm)
    free_pending()
    lock(c.lock) do
        check(gw_comm_destroy(c.handle))   # GW_ERR_STATE while a request is not freed
        c.handle = C_NULL
    end
    nothing
end

comm_rank(c::Comm) = Int(gw_comm_rank(c.handle))
comm_size(c::Comm) = Int(gw_comm_size(c.handle))

"""Makes every pending and future operation of `c` fail with GW_ERR_ABORTED. Any thread."""
abort(c::Comm) = lock(c.lock) do
    check(gw_comm_abort(c.handle))
    nothing
end

function allreduce!(c::Comm, out::DenseArray{T}, input::DenseArray{T}, op::Symbol=:sum) where {T<:Element}
    GC.@preserve out input check(gw_allreduce(c.handle, Ref(tensor(input)), Ref(tensor(out)), op_of(op)))
    out
end
allreduce!(c::Comm, buf::DenseArray{<:Element}, op::Symbol=:sum) = allreduce!(c, buf, buf, op)

function allgather!(c::Comm, out::DenseArray{T}, input::DenseArray{T}) where {T<:Element}
    GC.@preserve out input check(gw_allgather(c.handle, Ref(tensor(input)), Ref(tensor(out))))
    out
end

function broadcast!(c::Comm, buf::DenseArray{<:Element}, root::Integer)
    GC.@preserve buf check(gw_broadcast(c.handle, Ref(tensor(buf)), UInt32(root)))
    buf
end

barrier(c::Comm) = (check(gw_barrier(c.handle)); nothing)

send(c::Comm, buf::DenseArray{<:Element}, peer::Integer, tag::Integer) =
    (GC.@preserve buf check(gw_send(c.handle, Ref(tensor(buf)), UInt32(peer), UInt32(tag))); nothing)

function recv!(c::Comm, buf::DenseArray{<:Element}, peer::Integer, tag::Integer)
    GC.@preserve buf check(gw_recv(c.handle, Ref(tensor(buf)), UInt32(peer), UInt32(tag)))
    buf
end

function allreduce_compressed!(c::Comm, codec::Codec, out::DenseArray{Float32}, input::DenseArray{Float32};
                               op::Symbol=:sum, seed=0, step=0)
    GC.@preserve out input begin
        check(gw_allreduce_compressed(c.handle, codec.handle, Ref(codec_context(seed, step)), Ref(tensor(input)),
                                      Ref(tensor(out)), op_of(op)))
    end
    out
end

"""
`reduce_scatter_compressed!(c, codec, out, input; op, seed, step)`: out = this rank's shard of input
(`comm_size(c)` shards of `length(out)`) summed (or averaged) over all ranks through `codec`'s payloads,
each shard encoded once by every other rank and summed in f32 in rank order by its owner.
"""
function reduce_scatter_compressed!(c::Comm, codec::Codec, out::DenseArray{Float32}, input::DenseArray{Float32};
                                    op::Symbol=:sum, seed=0, step=0)
    GC.@preserve out input begin
        check(gw_reduce_scatter_compressed(c.handle, codec.handle, Ref(codec_context(seed, step)),
                                           Ref(tensor(input)), Ref(tensor(out)), op_of(op)))
    end
    out
end

"""
`allgather_compressed!(c, codec, out, input; seed, step)`: out (`comm_size(c) * length(input)`) receives
every rank's input in rank order as `codec` decodes it; every rank holds the same bits.
"""
function allgather_compressed!(c::Comm, codec::Codec, out::DenseArray{Float32}, input::DenseArray{Float32};
                               seed=0, step=0)
    GC.@preserve out input begin
        check(gw_allgather_compressed(c.handle, codec.handle, Ref(codec_context(seed, step)), Ref(tensor(input)),
                                      Ref(tensor(out))))
    end
    out
end

# ---- nonblocking ----------------------------------------------------------------------------------

"""
A nonblocking operation. It keeps its arrays (and codec) alive until it is freed; `wait` then `free`
(or `close`). Collected while in flight, it is waited for and freed by the destroy queue, which keeps
its arrays alive until then.
"""
mutable struct Request
    handle::Ptr{gw_request}
    keep::Any
    function Request(h::Ptr{gw_request}, keep)
        r = new(h, keep)
        finalizer(queue_destroy, r)
    end
end

kind_of(::Request) = :request

function start(f, keep)
    free_pending()
    out = Ref{Ptr{gw_request}}(C_NULL)
    GC.@preserve keep check(f(out))
    Request(out[], keep)
end

allreduce_start!(c::Comm, out::DenseArray{T}, input::DenseArray{T}, op::Symbol=:sum) where {T<:Element} =
    start(r -> gw_allreduce_start(c.handle, Ref(tensor(input)), Ref(tensor(out)), op_of(op), r), (c, out, input))

allreduce_compressed_start!(c::Comm, codec::Codec, out::DenseArray{Float32}, input::DenseArray{Float32};
                            op::Symbol=:sum, seed=0, step=0) =
    start(r -> gw_allreduce_compressed_start(c.handle, codec.handle, Ref(codec_context(seed, step)),
                                             Ref(tensor(input)), Ref(tensor(out)), op_of(op), r),
          (c, codec, out, input))

reduce_scatter_compressed_start!(c::Comm, codec::Codec, out::DenseArray{Float32}, input::DenseArray{Float32};
                                 op::Symbol=:sum, seed=0, step=0) =
    start(r -> gw_reduce_scatter_compressed_start(c.handle, codec.handle, Ref(codec_context(seed, step)),
                                                  Ref(tensor(input)), Ref(tensor(out)), op_of(op), r),
          (c, codec, out, input))

allgather_compressed_start!(c::Comm, codec::Codec, out::DenseArray{Float32}, input::DenseArray{Float32};
                            seed=0, step=0) =
    start(r -> gw_allgather_compressed_start(c.handle, codec.handle, Ref(codec_context(seed, step)),
                                             Ref(tensor(input)), Ref(tensor(out)), r),
          (c, codec, out, input))

"""`test(r)`: true once complete (throws its error); drives progress."""
test(r::Request) = check(gw_request_test(r.handle)) == GW_OK

"""Waits until the request completes (the communicator's timeout ends a stuck collective)."""
Base.wait(r::Request) = (check(gw_request_wait(r.handle, -1.0)); nothing)

"""Waits if needed, frees the request and lets go of its arrays."""
function free(r::Request)
    r.handle == C_NULL && return nothing
    gw_request_wait(r.handle, -1.0)
    h, r.handle = r.handle, C_NULL
    r.keep = nothing
    check(gw_request_free(h))
    nothing
end
Base.close(r::Request) = free(r)

# ---- synchronizer ---------------------------------------------------------------------------------

"""
    Sync(comm, rt)

The synchronizer a trainer calls each step. It keeps the registered arrays alive (gradwire holds their
addresses); do not resize them. While it exists, use `comm` only through it.
"""
mutable struct Sync
    handle::Ptr{gw_sync}
    keep::Vector{Any}
    function Sync(comm::Comm, rt::Runtime)
        free_pending()
        o = gw_sync_options(UInt32(sizeof(gw_sync_options)), rt.handle, UInt32(0))
        out = Ref{Ptr{gw_sync}}(C_NULL)
        check(gw_sync_create(comm.handle, Ref(o), out))
        s = new(out[], Any[comm, rt])
        finalizer(queue_destroy, s)
    end
end

kind_of(::Sync) = :sync

function register!(s::Sync, name::AbstractString, gradient::Vector{Float32}, parameter=nothing)
    p = parameter === nothing ? Ptr{gw_tensor}(C_NULL) : Ref(tensor(parameter))
    GC.@preserve gradient parameter check(gw_sync_register(s.handle, name, Ref(tensor(gradient)), p))
    push!(s.keep, gradient, parameter)
    nothing
end

finalize!(s::Sync) = (check(gw_sync_finalize(s.handle)); nothing)

"""Ends a step (collective); returns the GW_SYNC_* flags (apply the optimizer when `flags & GW_SYNC_APPLY != 0`)."""
function step!(s::Sync)
    f = Ref{UInt32}(0)
    check(gw_sync_step(s.handle, f))
    f[]
end

function stats(s::Sync; bucket=GW_SYNC_ALL_BUCKETS)
    r = Ref(gw_sync_stats(UInt32(sizeof(gw_sync_stats)), 0, 0, 1.0, 0.0, 0.0, 0.0, 0, 0))
    check(gw_sync_get_stats(s.handle, UInt32(bucket), r))
    r[]
end

function Base.close(s::Sync)
    free_pending()
    h, s.handle = s.handle, C_NULL
    check(gw_sync_destroy(h))
    empty!(s.keep)
    nothing
end

end # module
