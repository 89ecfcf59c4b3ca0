"""Every object of the binding in one process (a communicator of one rank), buffers and errors."""
import array
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import gradwire
from conftest import PACKAGE_ROOT


def test_version_and_abi():
    v = gradwire.version()
    assert v.count(".") == 2 and all(p.isdigit() for p in v.split("."))
    assert gradwire.abi_version()[0] == 1
    assert gradwire.status_string(-9) == "GW_ERR_MISMATCH"
    assert gradwire.dtype_size("bf16") == 2
    assert os.path.exists(gradwire.library_path())


def test_runtime_from_text_and_file(tmp_path):
    with gradwire.Runtime(text='[codec]\nname = "topk"\n[codec.topk]\nratio = 0.05\n') as rt:
        dump = rt.config_dump()
        assert 'name = "topk"' in dump and "ratio = 0.05" in dump
        assert "| `ratio` |" in rt.config_dump(reference=True)
        names = {p["name"] for p in rt.plugins() if p["loaded"]}
        assert {"int8", "topk", "fp16", "ucx"} <= names
        codecs = {c["name"] for p in rt.plugins() for c in p["components"] if c["kind"] == "codec"}
        assert "onebit" in codecs
        assert rt.search_paths()
    f = tmp_path / "gw.toml"
    f.write_text('[codec]\nname = "fp16"\n')
    rt = gradwire.Runtime(f)
    assert 'name = "fp16"' in rt.config_dump()
    rt.close()
    rt.close()  # idempotent
    with pytest.raises(gradwire.StateError, match="closed"):
        rt.config_dump()


def test_config_errors_are_config_errors(tmp_path):
    with pytest.raises(gradwire.ConfigError) as e:
        gradwire.Runtime(text='[codec]\nnmae = "int8"\n')
    assert e.value.status == -6 and e.value.status_name == "GW_ERR_CONFIG"
    assert "nmae" in e.value.message and "name" in e.value.message
    assert isinstance(e.value, ValueError) and isinstance(e.value, gradwire.Error)
    with pytest.raises(gradwire.ConfigError):
        gradwire.Runtime(tmp_path / "missing.toml")
    with pytest.raises(gradwire.InvalidArgumentError, match="not both"):
        gradwire.Runtime(tmp_path / "x.toml", text="")


def test_error_class_per_status():
    seen = set()
    for status in range(-15, 0):
        cls = gradwire.error_class(status)
        assert issubclass(cls, gradwire.Error) and cls is not gradwire.Error
        assert cls.status == status
        assert gradwire.status_string(status) == cls("x").status_name
        seen.add(cls)
    assert len(seen) == 15
    assert issubclass(gradwire.TimeoutError, TimeoutError)
    assert issubclass(gradwire.TransportError, ConnectionError)


def test_codec_roundtrip(runtime):
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    with runtime.codec("none") as none:
        assert none.name == "none"
        assert "lossless" in none.properties()["flags"]
        payload = none.encode(x)
        assert isinstance(payload, bytes) and len(payload) <= none.max_encoded_size(x.size)
        y = np.zeros_like(x)
        none.decode(payload, y)
        assert np.array_equal(x, y)
        none.decode(payload, y, accumulate=True)
        assert np.array_equal(2 * x, y)
    with runtime.codec() as int8:  # the [codec] name
        assert int8.name == "int8" and "lossless" not in int8.properties()["flags"]
        payload = int8.encode(x)
        assert len(payload) < x.nbytes / 3
        y = np.zeros_like(x)
        int8.decode(payload, y)
        assert np.abs(x - y).max() < 1 / 127
        out = bytearray(int8.max_encoded_size(x.size))
        n = int8.encode(x, out=out)
        assert bytes(out[:n]) == payload
        bad = bytearray(payload)
        bad[:4] = b"\xff\xff\xff\xff"
        with pytest.raises((gradwire.CorruptError, gradwire.VersionError, gradwire.MismatchError)) as e:
            int8.decode(bytes(bad), y)
        assert e.value.message
        with pytest.raises(gradwire.Error):
            int8.decode(payload, np.zeros(10, dtype=np.float32))  # another count


def test_sparseq_codec_by_name():
    # The sparse and quantised codec from its [codec.sparseq] table: exactly k of the largest entries kept,
    # each within half a quantisation step of its group's magnitude range.
    with gradwire.Runtime(text="[codec.sparseq]\nratio = 0.02\nbits = 4\n") as rt, rt.codec("sparseq") as sq:
        assert sq.properties()["flags"] == {"sparse"}
        x = np.random.default_rng(3).standard_normal(10000).astype(np.float32)
        payload = sq.encode(x)
        assert len(payload) < 200 * 4  # 200 entries under 4 bytes each, where topk sends 5 or more
        y = np.zeros_like(x)
        sq.decode(payload, y)
        kept = np.flatnonzero(y)
        assert kept.size == 200
        assert np.abs(x[kept]).min() >= np.abs(np.delete(x, kept)).max()
        mag = np.abs(x[kept])
        assert np.all(np.sign(y[kept]) == np.sign(x[kept]))
        assert np.abs(y[kept] - x[kept]).max() <= (mag.max() - mag.min()) / 16 * 1.001
    with pytest.raises(gradwire.ConfigError, match="bits"):
        with gradwire.Runtime(text="[codec.sparseq]\nbits = 5\n") as rt:
            rt.codec("sparseq")


def test_error_feedback_inside_the_compressed_allreduce(runtime):
    # One rank: each call returns decode(encode(x + residual)); over 20 calls the outputs sum to 20 x
    # within one call's error, where the codec alone repeats its rounding 20 times.
    x = np.random.default_rng(2).standard_normal(5000).astype(np.float32)
    with gradwire.Comm(runtime) as comm, runtime.codec("int8") as int8, gradwire.ErrorFeedback(int8) as ef:
        with_ef, without = np.zeros(5000), np.zeros(5000)
        for step in range(20):
            a, b = x.copy(), x.copy()
            comm.allreduce_compressed(ef, a, step=step)
            comm.allreduce_compressed(int8, b, step=step)
            with_ef += a
            without += b
            if step == 0:
                first = np.abs(with_ef - x).max()
        err_ef, err_plain = np.abs(with_ef - 20 * x).max(), np.abs(without - 20 * x).max()
        assert err_ef <= 2 * first, (first, err_ef)
        assert err_ef < err_plain / 5, (err_ef, err_plain)
        r = comm.allreduce_compressed_start(ef, x.copy(), step=20)
        r.wait()
        assert r.done


def test_compressed_reduce_scatter_and_allgather_on_one_rank(runtime):
    # One rank: the reduce-scatter's only shard is this rank's own, never encoded (the input itself); the
    # allgather returns decode(encode(x + residual)), so with error feedback 20 calls sum to 20 x within one
    # call's error.
    x = np.random.default_rng(3).standard_normal(5000).astype(np.float32)
    with gradwire.Comm(runtime) as comm, runtime.codec("int8") as int8, gradwire.ErrorFeedback(int8) as ef:
        shard = np.zeros(5000, dtype=np.float32)
        comm.reduce_scatter_compressed(int8, x, shard, op="sum")
        assert np.array_equal(shard, x)
        with_ef, without = np.zeros(5000), np.zeros(5000)
        for step in range(20):
            a, b = np.zeros(5000, dtype=np.float32), np.zeros(5000, dtype=np.float32)
            comm.allgather_compressed(ef, x, a, step=step)
            comm.allgather_compressed(int8, x, b, step=step)
            with_ef += a
            without += b
            if step == 0:
                first = np.abs(with_ef - x).max()
        err_ef, err_plain = np.abs(with_ef - 20 * x).max(), np.abs(without - 20 * x).max()
        assert err_ef <= 2 * first, (first, err_ef)
        assert err_ef < err_plain / 5, (err_ef, err_plain)
        r = comm.reduce_scatter_compressed_start(ef, x, shard, step=20)
        r.wait()
        assert r.done
        with pytest.raises(gradwire.InvalidArgumentError, match="it needs 1 \\(ranks\\) x 5000"):
            comm.allgather_compressed(int8, x, np.zeros(4999, dtype=np.float32))


def test_error_feedback_save_load(runtime):
    with runtime.codec("int8") as int8, gradwire.ErrorFeedback(int8) as ef:
        x = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
        p1 = ef.encode(7, x)
        blob = ef.save()
        assert len(blob) > 4096 * 4
        p2 = ef.encode(7, x)
        ef.load(blob)
        assert ef.encode(7, x) == p2
        assert p1 != p2  # the residual changed the input
        ef.reset()
        assert ef.encode(7, x) == p1
        with pytest.raises(gradwire.CorruptError):
            ef.load(blob[:-3] + b"abc")
        with pytest.raises(gradwire.InvalidArgumentError, match="f32"):
            ef.encode(7, x.astype(np.float64))


def test_buffers_without_copies_and_clear_errors(runtime):
    torch = pytest.importorskip("torch")
    with gradwire.Comm(runtime) as comm:
        assert (comm.rank, comm.size) == (0, 1)
        for buf in (np.arange(8, dtype=np.float32), torch.arange(8, dtype=torch.float32),
                    memoryview(bytearray(np.arange(8, dtype=np.float32).tobytes())).cast("f"),
                    array.array("f", range(8))):
            comm.allreduce(buf, op="sum")
        with pytest.raises(gradwire.UnsupportedError, match="u8"):
            comm.allreduce(bytearray(8))  # raw bytes do not reduce
        b = gradwire.as_buffer(torch.zeros(3, dtype=torch.bfloat16), "t")
        assert b.dtype == "bf16" and b.tensor.count == 3
        a = np.zeros(4, dtype=np.float32)
        assert gradwire.as_buffer(a).tensor.data == a.ctypes.data  # no copy
        with pytest.raises(gradwire.InvalidArgumentError, match="not C-contiguous"):
            comm.allreduce(np.zeros((4, 4), dtype=np.float32)[:, 1])
        with pytest.raises(gradwire.InvalidArgumentError, match="not contiguous"):
            comm.allreduce(torch.zeros(4, 4).t())
        with pytest.raises(gradwire.InvalidArgumentError, match="complex"):
            comm.allreduce(np.zeros(4, dtype=np.complex64))
        with pytest.raises(gradwire.InvalidArgumentError, match="read-only"):
            comm.allreduce(b"abcd")
        with pytest.raises(gradwire.InvalidArgumentError, match="not a buffer"):
            comm.allreduce([1.0, 2.0])
        with pytest.raises(gradwire.InvalidArgumentError, match="reduce op"):
            comm.allreduce(a, op="prod")
        with runtime.codec() as int8:
            with pytest.raises(gradwire.UnsupportedError, match="f64"):
                comm.allreduce_compressed(int8, np.zeros(4))


def test_single_rank_collectives_and_requests(runtime):
    with gradwire.Comm(runtime) as comm, runtime.codec("int8") as int8:
        x = np.arange(16, dtype=np.float32)
        out = np.zeros_like(x)
        comm.allreduce(x, out, op="max")
        assert np.array_equal(out, x)
        r = comm.allreduce_start(out, op="sum")
        r.wait()
        assert r.done and r.test()
        g = np.zeros(16, dtype=np.float32)
        comm.allgather(x, g)
        assert np.array_equal(g, x)
        comm.allgatherv(x, g, [16])
        comm.reduce_scatter(x, g, op="sum")
        comm.broadcast(x, root=0)
        comm.barrier()
        r = comm.barrier_start()
        while not r.test():
            pass
        y = np.linspace(0, 1, 4096, dtype=np.float32)
        comm.allreduce_compressed(int8, y, op="avg")
        assert np.allclose(y, np.linspace(0, 1, 4096), atol=1 / 127)
        r = comm.allreduce_compressed_start(int8, y)
        r.wait(timeout=30)
        with pytest.raises(gradwire.InvalidArgumentError, match="counts"):
            comm.allgatherv(x, g, [1, 2])
        with pytest.raises(gradwire.Error):
            comm.send(x, peer=5)
        # The communicator belongs to its thread.
        err = []
        t = threading.Thread(target=lambda: err.append(pytest.raises(gradwire.StateError, comm.barrier)))
        t.start()
        t.join()
        assert err and "thread" in str(err[0].value)
    with pytest.raises(gradwire.StateError, match="closed"):
        comm.barrier()


def test_sync_lifecycle(runtime):
    rt = gradwire.Runtime(text='[codec]\nname = "int8"\nerror_feedback = true\n[bucket]\nbytes = 4096\n')
    comm = gradwire.Comm(rt)
    sync = gradwire.Sync(comm)
    grads = [np.full(1000, i + 1, dtype=np.float32) for i in range(3)]
    for i, g in enumerate(grads):
        sync.register(f"layer{i}.weight", g)
    with pytest.raises(gradwire.InvalidArgumentError, match="f32"):
        sync.register("bad", np.zeros(3))
    sync.finalize()
    assert sync.bucket_count() >= 2
    assert sync.bucket_info(0)["codec"] == "int8"
    assert sync.tensor_bucket("layer2.weight") < sync.bucket_count()
    sync.bucket_ready(0)
    flags = sync.step()
    assert flags["apply"] and flags["gradients_averaged"]
    assert np.allclose(grads[1], 2, atol=0.02)
    blob = sync.save_state()
    sync.skip_step()
    sync.load_state(blob)
    with pytest.raises(gradwire.CorruptError):
        sync.load_state(blob[:-1] + bytes([blob[-1] ^ 1]))
    st = sync.stats()
    assert st["steps"] == 1 and st["raw_bytes"] == 3 * 1000 * 4 and st["syncs"] >= 2
    assert sync.stats(0)["syncs"] == 1
    # Destruction order: the sync keeps its runtime and communicator alive.
    rt.close()
    sync.close()
    comm.close()


def test_library_not_found_says_where_it_looked(tmp_path):
    env = dict(os.environ, GRADWIRE_LIBRARY=str(tmp_path / "nope.so"), PYTHONPATH=PACKAGE_ROOT)
    r = subprocess.run([sys.executable, "-c", "import gradwire; gradwire.version()"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "GRADWIRE_LIBRARY" in r.stderr and "nope.so" in r.stderr
