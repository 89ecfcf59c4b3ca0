"""Several ranks through `gradwire run` (real processes over UCX): every collective, the compressed allreduce
per codec, the synchronizer, and mismatched codecs raising MismatchError on every rank."""
import os
import subprocess
import sys

import pytest

from conftest import HERE, child_env, gradwire_cli

pytestmark = pytest.mark.multiprocess
HANG_GUARD_S = 600  # ends a hung run; not a timing assertion


def run_ranks(n, script, *extra):
    cmd = [gradwire_cli(), "run", "-n", str(n), *extra, "--", sys.executable, os.path.join(HERE, "ranks", script)]
    return subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=HANG_GUARD_S)


def test_three_ranks_every_collective():
    r = run_ranks(3, "collectives.py")
    out = r.stdout + r.stderr
    print(out)  # shown by pytest when the test fails
    assert r.returncode == 0, out
    for rank in range(3):
        assert f"[{rank}] rank {rank} ok" in out, out


def test_mismatched_codecs_raise_on_every_rank():
    r = run_ranks(2, "mismatch.py", "--keep-going")
    out = r.stdout + r.stderr
    print(out)  # shown by pytest when the test fails
    assert r.returncode == 0, out
    for rank in range(2):
        assert f"[{rank}] rank {rank} raised MismatchError:" in out, out
