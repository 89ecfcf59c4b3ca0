"""One rank of the multi-rank binding test, started by `gradwire run -n N` (GW_* variables): every collective
through the binding, a compressed allreduce, reduce-scatter and allgather per codec, and the synchronizer;
prints "rank R ok" at the end. A failed check exits non-zero with what differed."""
import sys

import numpy as np

import gradwire


def check(cond, what):
    if not cond:
        sys.exit(f"rank check failed: {what}")


def main():
    rt = gradwire.Runtime(text='[runtime]\ntimeout_s = 60\n[codec]\nname = "int8"\nerror_feedback = true\n'
                               '[codec.topk]\nratio = 0.1\nselection = "exact"\n')
    with gradwire.Comm(rt) as comm:
        r, n = comm.rank, comm.size
        check(n >= 2, f"world size {n}")
        # Dense collectives, blocking and nonblocking.
        x = np.full(1000, r + 1, dtype=np.float32)
        comm.allreduce(x, op="sum")
        check(np.all(x == n * (n + 1) / 2), f"allreduce sum gave {x[:3]}")
        y = np.full(100, float(r), dtype=np.float64)
        req = comm.allreduce_start(y, op="max")
        req.wait()
        check(np.all(y == n - 1), "allreduce max")
        g = np.zeros(3 * n, dtype=np.int64)
        comm.allgather(np.full(3, r, dtype=np.int64), g)
        check(list(g) == [i for i in range(n) for _ in range(3)], f"allgather {g}")
        counts = [i + 1 for i in range(n)]
        gv = np.zeros(sum(counts), dtype=np.float32)
        comm.allgatherv(np.full(r + 1, r, dtype=np.float32), gv, counts)
        check(list(gv) == [float(i) for i in range(n) for _ in range(i + 1)], f"allgatherv {gv}")
        rs = np.zeros(4, dtype=np.float32)
        comm.reduce_scatter(np.arange(4 * n, dtype=np.float32), rs, op="sum")
        check(np.all(rs == n * np.arange(4 * r, 4 * r + 4)), f"reduce_scatter {rs}")
        b = np.full(10, r, dtype=np.int32)
        comm.broadcast(b, root=n - 1)
        check(np.all(b == n - 1), "broadcast")
        comm.barrier()
        # A ring of sends.
        out = np.full(5, r, dtype=np.float32)
        inn = np.zeros(5, dtype=np.float32)
        rq = comm.recv_start(inn, peer=(r - 1) % n, tag=7)
        comm.send(out, peer=(r + 1) % n, tag=7)
        rq.wait()
        check(np.all(inn == (r - 1) % n), "send/recv")
        # Compressed allreduce per codec: every rank ends with the same bits, close to the true average.
        rng = np.random.default_rng(r)
        base = rng.standard_normal(50000).astype(np.float32)
        truth = np.zeros_like(base)
        for i in range(n):
            truth += np.random.default_rng(i).standard_normal(50000).astype(np.float32)
        truth /= n
        for name, tol in (("none", 1e-6), ("fp16", 1e-2), ("int8", 0.05), ("topk", None), ("onebit", None)):
            with rt.codec(name) as codec:
                v = base.copy()
                req = comm.allreduce_compressed_start(codec, v, op="avg", seed=3, step=1)
                while not req.test():
                    pass
                every = np.zeros(n * v.size, dtype=np.float32)
                comm.allgather(v, every)
                parts = every.reshape(n, -1)
                check(all(np.array_equal(parts[0], p) for p in parts), f"{name}: ranks ended with different bits")
                if tol is not None:
                    check(np.abs(v - truth).max() < tol, f"{name}: max error {np.abs(v - truth).max()}")
                else:
                    check(np.dot(v, truth) > 0, f"{name}: result not correlated with the average")
        # Compressed reduce-scatter and allgather: the owner's shard of the average, every shard decoded alike
        # everywhere; none gives the dense collectives' bits.
        full = np.array([(i % 7) + r for i in range(n * 600)], dtype=np.float32)
        exact_rs = np.array([(i % 7) for i in range(n * 600)], dtype=np.float32)[r * 600:(r + 1) * 600] + (n - 1) / 2
        for name, tol in (("none", 0.0), ("fp16", 1e-2), ("int8", 0.05), ("topk", None)):
            with rt.codec(name) as codec:
                shard = np.zeros(600, dtype=np.float32)
                comm.reduce_scatter_compressed(codec, full, shard, op="avg", seed=3, step=1)
                if tol is not None:
                    check(np.abs(shard - exact_rs).max() <= tol, f"{name}: reduce-scatter error {np.abs(shard - exact_rs).max()}")
                if name == "none":
                    dense = np.zeros(600, dtype=np.float32)
                    comm.reduce_scatter(full, dense, op="avg")
                    check(np.array_equal(shard, dense), "none: reduce-scatter differs from reduce_scatter")
                gathered = np.zeros(n * 600, dtype=np.float32)
                req = comm.allgather_compressed_start(codec, full[:600], gathered, seed=3, step=1)
                req.wait()
                every = np.zeros(n * gathered.size, dtype=np.float32)
                comm.allgather(gathered, every)
                parts = every.reshape(n, -1)
                check(all(np.array_equal(parts[0], p) for p in parts), f"{name}: allgather bits differ across ranks")
                truth = np.concatenate([full[:600] - r + q for q in range(n)])
                if tol is not None:
                    check(np.abs(gathered - truth).max() <= tol,
                          f"{name}: allgather error {np.abs(gathered - truth).max()}")
        try:
            with rt.codec("int8") as codec:
                comm.reduce_scatter_compressed(codec, np.zeros(n * 10 + 1, dtype=np.float32), np.zeros(10, dtype=np.float32))
            check(False, "a reduce-scatter count that does not divide was accepted")
        except gradwire.InvalidArgumentError as e:
            check("not divisible" in str(e), f"reduce-scatter count message: {e}")
        # The synchronizer over a communicator of its own, made with the application-allgather rendezvous
        # over the first communicator (no second listener on the root port).
        def allgather(data):
            mine = np.frombuffer(data, dtype=np.uint8).copy()
            every = np.zeros(n * mine.size, dtype=np.uint8)
            comm.allgather(mine, every)
            return [every[i * mine.size:(i + 1) * mine.size].tobytes() for i in range(n)]

        with gradwire.Comm(rt, allgather=allgather) as comm2:
            grads = [np.full(3000, r + i, dtype=np.float32) for i in range(3)]
            sync = gradwire.Sync(comm2)
            for i, gr in enumerate(grads):
                sync.register(f"w{i}", gr)
            sync.finalize()
            flags = sync.step()
            check(flags["apply"], "sync apply flag")
            check(all(np.allclose(gr, (n - 1) / 2 + i, atol=0.05) for i, gr in enumerate(grads)), "sync average")
            blob = sync.save_state()
            sync.load_state(blob)
            check(sync.stats()["wire_bytes"] > 0, "sync stats")
            sync.close()
    rt.close()
    print(f"rank {r} ok", flush=True)


if __name__ == "__main__":
    main()
