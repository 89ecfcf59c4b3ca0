"""PyTorch FSDP2 (torch 2.x fully_shard) with gradwire.torch.fsdp: 2 ranks on CPU with gloo, real processes
(torchrun's variables; one test under torchrun itself). Codec none gives FSDP2's default reduce-scatter's
gradients bit for bit (with its divide factor and an fp16 reduce_dtype too), int8 stays within the int8
bound, [[rules]] apply per parameter, the int8 all-gather hands every rank the same weights, the state
survives a checkpoint, and bad input raises gradwire's message on every rank."""
import os
import subprocess
import sys

import pytest

from conftest import HERE, child_env, free_port

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.multiprocess
HANG_GUARD_S = 300  # ends a hung run; not a timing assertion

try:
    from torch.distributed.fsdp import fully_shard  # noqa: F401
except Exception:  # noqa: BLE001 - ImportError on torch 1.x; Debian's 1.13 raises ValueError on Python 3.11
    pytest.skip("torch without FSDP2 (torch.distributed.fsdp.fully_shard): torch 2.x only", allow_module_level=True)


def start_ranks(n, *args):
    """n ranks of ranks/fsdp.py with torchrun's variables; [(exit status, output)]."""
    port = free_port()
    procs = []
    for rank in range(n):
        e = child_env(RANK=rank, WORLD_SIZE=n, LOCAL_RANK=rank, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                      OMP_NUM_THREADS=1)
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "ranks", "fsdp.py"), *args], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    results = []
    for p in procs:
        try:
            out = p.communicate(timeout=HANG_GUARD_S)[0]
        except subprocess.TimeoutExpired:
            p.kill()
            out = p.communicate()[0] + "\n(hung)"
        results.append((p.returncode, out))
    print("\n".join(f"--- rank {i} (exit {rc})\n{out}" for i, (rc, out) in enumerate(results)))  # on failure
    return results


def ok(mode, *args, n=2):
    results = start_ranks(n, "--mode", mode, *args)
    for rank, (rc, out) in enumerate(results):
        assert rc == 0, out
        assert f"rank {rank} ok" in out, out
    return [out for _, out in results]


def test_codec_none_equals_fsdp_reduce_scatter_bit_for_bit():
    outs = ok("compare")
    assert "rank 0 9 reduce-scatters through gradwire" in outs[0]


def test_divide_factor_and_fp16_reduce_dtype_bit_for_bit():
    outs = ok("divide")
    for rank, out in enumerate(outs):
        assert f"rank {rank} divide factor 8 bit for bit" in out
        assert f"rank {rank} fp16 reduce_dtype bit for bit" in out


def test_int8_within_bound():
    outs = ok("int8")
    assert "int8 worst relative error" in outs[0]


def test_rules_per_parameter():
    ok("rules")


def test_int8_all_gather():
    outs = ok("allgather")
    for rank, out in enumerate(outs):
        assert f"rank {rank} int8 all-gather: same weights on every rank" in out


def test_state_round_trip():
    outs = ok("state")
    for rank, out in enumerate(outs):
        assert f"rank {rank} state round trip: step 3 equal bit for bit" in out
        assert f"rank {rank} other codec refused" in out


def test_under_torchrun(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "--log_dir", str(tmp_path),
           "--redirects", "1", "--tee", "1", os.path.join(HERE, "ranks", "fsdp.py"), "--mode", "int8", "--steps", "2"]
    r = subprocess.run(cmd, env=child_env(OMP_NUM_THREADS=1), capture_output=True, text=True, timeout=HANG_GUARD_S)
    out = r.stdout + r.stderr
    print(out)
    assert r.returncode == 0, out
    assert "rank 0 ok" in out and "rank 1 ok" in out, out


@pytest.mark.parametrize("case, expected", [
    ("bad-size", [("InvalidArgumentError", "the gradwire communicator has 1 ranks but the FSDP model's process "
                                           "group has 2")] * 2),
    ("bad-shard", [("InvalidArgumentError", "a buffer of 7 elements and a shard of 3 do not make 2 equal shards")]
     * 2),
    ("bad-device", [("InvalidArgumentError", "rank 1 of the process group failed on its input: gradwire.torch.fsdp "
                                             "reduce-scatter: the input tensor lives on meta"),
                    ("InvalidArgumentError", "the input tensor lives on meta but FSDP's process group works on cpu")]),
    ("mixed", [("MismatchError", "configure different codecs: rank 0 has codec.name = \"int8\"")] * 2),
])
def test_bad_input_raises_on_every_rank(case, expected):
    results = start_ranks(2, "--mode", case)
    for rank, ((rc, out), (cls, text)) in enumerate(zip(results, expected)):
        assert rc == 0, out
        assert f"rank {rank} raised " in out, out
        said = out[out.index(f"rank {rank} raised "):]  # gradwire's message may span lines
        assert said.startswith(f"rank {rank} raised {cls}: ") and text in said, said
        assert f"rank {rank} ok" in out, out
