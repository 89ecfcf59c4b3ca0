"""Elastic membership in gradwire.torch (docs/elastic.md, "PyTorch"), 4 ranks of ranks/elastic.py, real
processes: DiLoCo and ElasticDataParallel survive a SIGKILLed rank (the 3 others get the new rank and size,
finish, and end with the same parameters); a SIGSTOPped rank continued after the others moved on is refused;
a rank killed under `gradwire run --elastic` is started again, joins, and ends with the others' parameters
(and, with ElasticDataParallel, their optimizer's state)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import HERE, child_env, gradwire_cli
from test_ddp import start_ranks

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.multiprocess
HANG_GUARD_S = 600  # ends a hung run; not a timing assertion
STEPS = 17          # 4 outer periods of 4 inner steps and the outer step that ends the last


def parse(rank, out):
    """What ranks/elastic.py printed for the rank that started as `rank`."""
    changes = [tuple(int(v) for v in m) for m in
               re.findall(rf"rank {rank} changed epoch (\d+) rank (\d+) size (\d+) steps (\d+)", out)]
    done = re.search(rf"rank {rank} done steps (\d+) rank (\d+) size (\d+) epoch (\d+) hash (\w+)", out)
    return changes, done


def expect_survivors_identical(results, victim, wrapper):
    survivors = [r for r in range(4) if r != victim]
    hashes = set()
    for new_rank, old in enumerate(survivors):
        rc, out = results[old]
        assert rc == 0, out
        changes, done = parse(old, out)
        assert changes, f"{wrapper}: rank {old} never saw the membership change:\n{out}"
        epoch, rank, size, _ = changes[0]
        assert (epoch, rank, size) == (1, new_rank, 3), changes  # new ranks in the old order
        assert len(changes) == 1, changes
        assert done is not None, out
        assert int(done.group(1)) == STEPS and int(done.group(3)) == 3 and int(done.group(4)) == 1, done.group(0)
        hashes.add(done.group(5))
    assert len(hashes) == 1, f"{wrapper}: the survivors' parameters differ: {hashes}"


@pytest.mark.parametrize("wrapper", ["diloco", "edp"])
def test_survivors_of_a_killed_rank_finish_identical(wrapper):
    # DiLoCo: killed between outer steps (step 6), found at the outer step 8. ElasticDataParallel: killed
    # mid-step (20 ms into step 6).
    results = start_ranks(4, "elastic.py", wrapper, "kill", "2", "6", str(STEPS))
    assert results[2][0] == -9, results[2][1]
    expect_survivors_identical(results, 2, wrapper)


def test_a_stopped_rank_continued_after_the_others_moved_on_is_refused(tmp_path):
    results = start_ranks(4, "elastic.py", "diloco", "stop", "1", "6", str(STEPS), GW_TEST_DIR=tmp_path)
    rc, out = results[1]
    assert rc == 0, out
    said = out[out.index("rank 1 refused: "):] if "rank 1 refused: " in out else out
    assert said.startswith("rank 1 refused: StateError: ") and "was declared dead and removed" in said, said
    assert parse(1, out)[1] is None, out  # it never finished as a member
    hashes = set()
    for new_rank, old in enumerate([0, 2, 3]):
        rc, out = results[old]
        assert rc == 0, out
        changes, done = parse(old, out)
        assert [c[:3] for c in changes] == [(1, new_rank, 3)], changes
        assert done is not None and int(done.group(3)) == 3, out
        hashes.add(done.group(5))
    assert len(hashes) == 1, f"the survivors' parameters differ: {hashes}"


@pytest.mark.parametrize("wrapper", ["diloco", "edp"])
def test_a_killed_rank_started_again_joins_and_ends_identical(wrapper):
    # DiLoCo: rank 2 killed between outer steps, while the others' inner steps exchange only the per-step
    # message; ElasticDataParallel: the same, and the hash covers the optimizer's state (SGD's momentum,
    # which the joiner takes from the members).
    cmd = [gradwire_cli(), "run", "-n", "4", "--elastic=1", "--", sys.executable, os.path.join(HERE, "ranks", "elastic.py"),
           wrapper, "join", "2", "6", str(STEPS)]
    r = subprocess.run(cmd, env=child_env(OMP_NUM_THREADS=1), capture_output=True, text=True, timeout=HANG_GUARD_S)
    out = r.stdout + r.stderr
    print(out)  # shown by pytest when the test fails
    joined = re.search(r"rank 2 joined epoch (\d+) rank (\d+) size (\d+) steps (\d+)", out)
    assert joined is not None, out
    assert int(joined.group(2)) == 3 and int(joined.group(3)) == 4, joined.group(0)  # the last rank
    dones = re.findall(r"rank (\d) done steps (\d+) rank (\d+) size (\d+) epoch (\d+) hash (\w+)", out)
    assert sorted(int(d[0]) for d in dones) == [0, 1, 2, 3], out
    assert {d[3] for d in dones} == {"4"}, dones
    assert len({d[1] for d in dones}) == 1 and len({d[4] for d in dones}) == 1, dones
    assert len({d[5] for d in dones}) == 1, f"the 4 ranks' parameters differ: {dones}"
    assert r.returncode == 0, out
