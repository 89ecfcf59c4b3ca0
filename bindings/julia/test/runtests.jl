# Tests of Gradwire.jl, run where Julia exists:
#   GRADWIRE_LIB=build/lib/libgradwire.so.0 GRADWIRE_CLI=build/bin/gradwire julia --project=bindings/julia bindings/julia/test/runtests.jl
# One process for the API, then 3 ranks of test/mp_rank.jl under `gradwire run` when GRADWIRE_CLI is set.
using Test
using Gradwire
const G = Gradwire

rt() = Runtime(no_env_overrides=true)

@testset "errors carry status and message" begin
    err = try
        Runtime(config_text="[codec]\nnmae = 1\n")
        nothing
    catch e
        e
    end
    @test err isa GradwireError
    @test err.status == G.GW_ERR_CONFIG
    @test occursin("name", err.message)
    @test startswith(sprint(showerror, err), "GW_ERR_CONFIG: ")
    @test_throws GradwireError Codec(rt(), "int9")
end

@testset "codec round trip, wrong sizes, closed handles" begin
    r = rt()
    c = Codec(r, "int8")
    x = Float32.(collect(0:99) ./ 10)
    p = encode(c, x; seed=1)
    y = zeros(Float32, 100)
    decode!(c, y, p)
    @test maximum(abs.(x .- y)) < 0.05
    e = try decode!(c, zeros(Float32, 99), p); nothing catch e; e end
    @test e isa GradwireError && e.status == G.GW_ERR_MISMATCH
    e = try decode!(c, y, p[1:20]); nothing catch e; e end
    @test e isa GradwireError && e.status == G.GW_ERR_CORRUPT
    close(c)
    e = try encode(c, x); nothing catch e; e end
    @test e isa GradwireError && e.status == G.GW_ERR_INVALID_ARGUMENT && occursin("codec", e.message)
    close(r)
end

@testset "one rank: collectives, requests, abort" begin
    r = rt()
    c = Comm(r; rank=0, world_size=1)
    @test (comm_rank(c), comm_size(c)) == (0, 1)
    x = Int64[1, 2, 3]
    allreduce!(c, x, :max)
    @test x == [1, 2, 3]
    e = try allreduce!(c, zeros(Int64, 2), x); nothing catch e; e end
    @test e isa GradwireError && e.status == G.GW_ERR_INVALID_ARGUMENT
    @test_throws ArgumentError allreduce!(c, x, :median)
    b = fill(2.0, 4096)
    req = allreduce_start!(c, b, b, :sum)
    wait(req)
    free(req)
    @test all(b .== 2.0)
    # a request dropped while in flight: the queue waits for it and keeps b alive
    allreduce_start!(c, b, b, :sum)
    GC.gc(); GC.gc()
    free_pending()
    t = Threads.@spawn abort(c)   # any thread may abort
    fetch(t)
    e = try barrier(c); nothing catch e; e end
    @test e isa GradwireError && e.status == G.GW_ERR_ABORTED
    close(c)
    close(r)
end

@testset "finalizers queue, never destroy" begin
    r = rt()
    c = Codec(r, "int8")
    G.queue_destroy(c)                 # what the finalizer does
    @test length(G.pending) == 1 && G.pending[1][1] == :codec
    @test c.handle != C_NULL && encode(c, Float32[1, 2]) isa Vector{UInt8}   # still alive
    free_pending()                     # the next Gradwire call destroys it
    @test isempty(G.pending)
    c.handle = C_NULL
    close(r)
end

cli = get(ENV, "GRADWIRE_CLI", "")
if !isempty(cli)
    @testset "3 ranks: $case" for case in ("collectives", "compressed", "sync", "mismatch")
        script = joinpath(@__DIR__, "mp_rank.jl")
        cmd = `$cli run -n 3 -- $(Base.julia_cmd()) --project=$(dirname(@__DIR__)) $script $case`
        out = read(pipeline(ignorestatus(cmd); stderr=stdout), String)
        @test count("OK rank", out) == 3 || (println(out); false)
    end
end
