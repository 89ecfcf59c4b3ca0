"""PyTorch DDP with gradwire's hook, 4 ranks with torchrun's variables: parameters stay identical across ranks,
the hook's average equals DDP's own allreduce, and a rank dying mid-training makes every other rank raise.
2 ranks: the hook works over a process group whose collectives refuse CPU tensors (as NCCL's do), and bad
input on one rank or every rank makes every rank raise gradwire's message."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import HERE, child_env, free_port

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.multiprocess
HANG_GUARD_S = 300  # ends a hung run; not a timing assertion
RANKS = 4


def torchrun(log_dir, *args):
    """Runs ranks/ddp.py under torchrun (torch.distributed.run) with 4 local ranks, its logs in `log_dir`
    (without one torchrun leaves a torchelastic_* folder in the temporary directory)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(RANKS),
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "--log_dir", str(log_dir),
           # Debian's torch 1.13 under Python 3.11 cannot parse "0" (no redirection; IntFlag iteration skips 0):
           # send stdout to its log and tee it to the console, the one setting that parses.
           "--redirects", "1", "--tee", "1", os.path.join(HERE, "ranks", "ddp.py"),
           *args]
    env = child_env(OMP_NUM_THREADS=1)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)


def test_int8_error_feedback_keeps_ranks_identical(tmp_path):
    r = torchrun(tmp_path, "--codec", "int8", "--error-feedback", "--steps", "6")
    out = r.stdout + r.stderr
    print(out)  # shown by pytest when the test fails
    assert r.returncode == 0, out
    for rank in range(RANKS):
        assert f"rank {rank} parameters identical across ranks: True" in out, out
        assert f"rank {rank} ok" in out, out
    assert "error feedback saved" in out


def test_powersgd_gets_the_parameters_shapes(tmp_path):
    # powersgd compresses only what has a shape: the weight matrices reach it through the hook (GradBucket's
    # parameters), so the average differs from DDP's own; every rank stays identical; its state is saved.
    r = torchrun(tmp_path, "--codec", "powersgd", "--steps", "4", "--compare", "--expect-compressed")
    out = r.stdout + r.stderr
    print(out)  # shown by pytest when the test fails
    assert r.returncode == 0, out
    for rank in range(RANKS):
        assert f"rank {rank} parameters identical across ranks: True" in out, out
        assert f"rank {rank} codec state saved: True" in out, out
        assert f"rank {rank} ok" in out, out


def test_powersgd_batched_rounds_equal_one_bucket_at_a_time(tmp_path):
    # rounds_batch=0: the powersgd runs of a step's buckets share one collective per round (one batch a step);
    # their round vectors are small enough for recursive doubling, so the parameters have the bits of
    # rounds_batch=1 (each bucket its own collectives), on every rank.
    saved = {}
    for batch in (0, 1):
        saved[batch] = tmp_path / f"params-{batch}.pt"
        r = torchrun(tmp_path / f"logs-{batch}", "--codec", "powersgd", "--steps", "4", "--rounds-batch", str(batch),
                     "--save", str(saved[batch]))
        out = r.stdout + r.stderr
        print(out)  # shown by pytest when the test fails
        assert r.returncode == 0, out
        for rank in range(RANKS):
            assert f"rank {rank} parameters identical across ranks: True" in out, out
            assert f"rank {rank} rounds batches {4 if batch == 0 else 0} over 4 steps" in out, out
    assert torch.equal(torch.load(saved[0]), torch.load(saved[1]))


def test_hook_averages_like_ddp_allreduce(tmp_path):
    r = torchrun(tmp_path, "--codec", "none", "--steps", "4", "--compare")
    out = r.stdout + r.stderr
    print(out)  # shown by pytest when the test fails
    assert r.returncode == 0, out
    assert out.count(" ok") >= RANKS, out


def start_ranks(n, script, *args, **env):
    """Starts n ranks of ranks/SCRIPT with torchrun's variables (no torchrun: it would stop the others when one
    rank fails) and returns [(exit status, output)], killing a rank that runs past the hang guard."""
    port = free_port()
    procs = []
    for rank in range(n):
        e = child_env(RANK=rank, WORLD_SIZE=n, LOCAL_RANK=rank, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                      OMP_NUM_THREADS=1, **env)
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "ranks", script), *args], env=e,
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


def test_rendezvous_never_calls_the_process_groups_collectives():
    """torch.distributed's collectives raise on CPU tensors from before the hook is made to the end of training
    (as an NCCL group's would): the hook's rendezvous goes through torch's store, and its average still equals
    DDP's own allreduce. DDP and the hook run over a group made with new_group (keys under its name)."""
    results = start_ranks(2, "ddp.py", "--refuse-cpu-collectives", "--subgroup", "--codec", "none", "--steps", "3",
                          "--compare")
    for rank, (rc, out) in enumerate(results):
        assert rc == 0, out
        assert "refused like NCCL" not in out, out
        assert f"rank {rank} parameters identical across ranks: True" in out, out
        assert f"rank {rank} ok" in out, out


@pytest.mark.parametrize("case, expected", [
    ("codecs", [("MismatchError", "config key 'codec.name': \"fp16\" vs \"int8\" on rank 0")] * 2),
    ("rules", [("MismatchError", "config key 'rules.0.codec' = \"none\" is not on rank 0")] * 2),
    ("group-size", [("InvalidArgumentError", "DDP model's process group has 2 ranks but the hook's"),
                    ("InvalidArgumentError", "not a member of the process group")]),
    ("comm-size", [("InvalidArgumentError", "world_size is 3 but its allgather callback's group has world_size 2")]
     * 2),
    ("device", [("UnsupportedError", "rank 1 of the process group failed on its input: gradient bucket 0 lives on "
                                     "meta"),
                ("UnsupportedError", "gradient bucket 0 lives on meta")]),
])
def test_bad_input_raises_on_every_rank(case, expected):
    results = start_ranks(2, "bad_input.py", case)
    for rank, ((rc, out), (cls, text)) in enumerate(zip(results, expected)):
        assert rc == 0, out
        assert f"rank {rank} raised " in out, out
        said = out[out.index(f"rank {rank} raised "):]  # gradwire's message may span lines
        assert said.startswith(f"rank {rank} raised {cls}: ") and text in said, said


def test_rendezvous_names_a_rank_that_does_not_arrive():
    (rc0, out0), (rc1, out1) = start_ranks(2, "bad_input.py", "missing")
    assert rc1 == 0 and "rank 1 makes no hook" in out1, out1
    assert rc0 == 0, out0
    assert "rank 0 raised TimeoutError: GW_ERR_TIMEOUT" in out0 and "rank(s) [1] of the process group" in out0, out0


def test_a_rank_dying_mid_training_raises_on_the_others():
    """Ranks started with torchrun's variables directly (torchrun itself would stop the survivors at once):
    every surviving rank's backward raises with gradwire's message instead of hanging."""
    port = free_port()
    procs = []
    for rank in range(RANKS):
        env = child_env(RANK=rank, WORLD_SIZE=RANKS, LOCAL_RANK=rank, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                        OMP_NUM_THREADS=1)
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "ranks", "ddp.py"), "--die-rank", "2",
                                       "--die-step", "3", "--steps", "8", "--timeout", "30"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=HANG_GUARD_S)[0])
        except subprocess.TimeoutExpired:
            p.kill()
            outs.append(p.communicate()[0] + "\n(hung)")
    text = "\n".join(f"--- rank {i} (exit {p.returncode})\n{o}" for i, (p, o) in enumerate(zip(procs, outs)))
    print(text)  # shown by pytest when the test fails
    assert procs[2].returncode == 3, text
    for rank in (0, 1, 3):
        assert procs[rank].returncode == 0, text
        assert f"rank {rank} raised at step 3:" in outs[rank], text
        assert "GW_ERR_" in outs[rank], text
