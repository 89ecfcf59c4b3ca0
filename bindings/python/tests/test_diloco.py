"""gradwire.torch.DiLoCo on 2 ranks (torchrun's variables, gloo, CPU): parameters identical after outer steps
through int8 and top-k with error feedback, one fragment and streamed ones; save/restore equal to an
uninterrupted run bit for bit; another outer configuration's checkpoint refused; the loss falls."""
import pytest

from test_ddp import start_ranks

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.multiprocess


@pytest.mark.parametrize("codec, fragments", [("int8", 1), ("topk", 1), ("int8", 2)])
def test_ranks_identical_after_outer_steps(codec, fragments):
    for rank, (rc, out) in enumerate(start_ranks(2, "diloco.py", "identical", codec, str(fragments))):
        assert rc == 0, out
        assert f"rank {rank} ok" in out, out


def test_save_restore_equals_uninterrupted_run():
    for rank, (rc, out) in enumerate(start_ranks(2, "diloco.py", "save-restore")):
        assert rc == 0, out
        assert f"rank {rank} ok" in out, out


def test_loss_falls():
    for rank, (rc, out) in enumerate(start_ranks(2, "diloco.py", "converges")):
        assert rc == 0, out
        assert f"rank {rank} ok" in out, out
