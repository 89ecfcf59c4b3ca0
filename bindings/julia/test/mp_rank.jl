# One rank of Gradwire.jl's multi-rank tests: gradwire run -n 3 -- julia --project=bindings/julia mp_rank.jl CASE
using Gradwire
const G = Gradwire

case = ARGS[1]
extra = case == "sync" ? "[codec]\nname = \"int8\"\nerror_feedback = true\n" : ""
rt = Runtime(config_text="[runtime]\ntimeout_s = 60\n[codec.topk]\nratio = 0.05\n" * extra)
c = Comm(rt)
r, w = comm_rank(c), comm_size(c)

function same_everywhere(c, x::Vector{Float32})
    bits = reinterpret(Int32, x)
    all = zeros(Int32, length(bits) * comm_size(c))
    allgather!(c, all, collect(bits))
    for k in 0:comm_size(c)-1
        all[k*length(bits)+1:(k+1)*length(bits)] == bits || error("rank $k holds other bits")
    end
end

if case == "collectives"
    for T in (Float32, Float64, Float16, Int32, Int64)
        x = T[T((r + 1) * (i % 7 + 1)) for i in 0:499]
        out = similar(x)
        allreduce!(c, out, x, :sum)
        out == T[T(w * (w + 1) ÷ 2 * (i % 7 + 1)) for i in 0:499] || error("$T sum")
        req = allreduce_start!(c, x, x, :max)
        wait(req); free(req)
        x == T[T(w * (i % 7 + 1)) for i in 0:499] || error("$T max")
    end
    b = r == 1 ? Vector{UInt8}("from rank 1") : zeros(UInt8, 11)
    broadcast!(c, b, 1)
    String(b) == "from rank 1" || error("broadcast")
elseif case == "compressed"
    for name in ("int8", "topk")
        codec = Codec(rt, name)
        x = Float32[sin(0.1i + r) for i in 1:10000]
        y = zeros(Float32, 10000)
        allreduce_compressed!(c, codec, y, x; seed=3)
        same_everywhere(c, y)
        close(codec)
    end
    # Compressed reduce-scatter and allgather: none gives the inputs' exact sum of small integers; int8's
    # allgather is bit-identical everywhere, blocking equals nonblocking.
    codec = Codec(rt, "none")
    full = Float32[(i % 7) + r for i in 0:w*300-1]
    shard = zeros(Float32, 300)
    reduce_scatter_compressed!(c, codec, shard, full)
    shard == Float32[w * (i % 7) + w * (w - 1) ÷ 2 for i in r*300:(r+1)*300-1] || error("none reduce-scatter")
    close(codec)
    codec = Codec(rt, "int8")
    gathered = zeros(Float32, w * 300)
    allgather_compressed!(c, codec, gathered, full[1:300]; seed=3)
    same_everywhere(c, gathered)
    again = zeros(Float32, w * 300)
    req = allgather_compressed_start!(c, codec, again, full[1:300]; seed=3)
    wait(req); free(req)
    again == gathered || error("int8 allgather: blocking and nonblocking differ")
    close(codec)
elseif case == "sync"
    d, rows = 64, 256
    s = Sync(c, rt)
    g = zeros(Float32, d); wv = zeros(Float32, d)
    register!(s, "w", g, wv)
    finalize!(s)
    seed = UInt64(r * 7919 + 1)
    rnd() = (global seed = seed * 0x5851f42d4c957f2d + 0x14057b7ef767814f; Float32(seed >> 40) / Float32(2^24) - 0.5f0)
    A = [rnd() for _ in 1:rows, _ in 1:d]
    bvec = A * Float32[cos(0.3j) for j in 0:d-1]
    loss(w) = sum(abs2, A * w .- bvec) / rows
    loss0 = loss(wv)
    for _ in 1:60
        g .= (2 / rows) .* (A' * (A * wv .- bvec))
        flags = step!(s)
        flags & G.GW_SYNC_APPLY != 0 && (wv .-= 2 .* g)
    end
    st = stats(s)
    close(s)
    same_everywhere(c, wv)
    (loss(wv) < 0.1loss0 && st.steps == 60) || error("loss $loss0 -> $(loss(wv))")
elseif case == "mismatch"
    x = zeros(Float32, r == 1 ? 5 : 4)
    e = try allreduce!(c, x); nothing catch e; e end
    (e isa GradwireError && e.status == G.GW_ERR_MISMATCH) || error("want GW_ERR_MISMATCH, got $e")
end
println("OK rank $r")
