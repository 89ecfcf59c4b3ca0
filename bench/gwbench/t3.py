r"""Benchmark T3 (docs/ps.md): `gradwire train` on 4 ranks behind emulated links with one straggler (the
slow rank's steps SLOW_FACTOR times its compute): synchronous allreduce against asynchronous exchanges
and the parameter server (sync and async); the table is `gradwire train`'s own (OUT/table.txt), saved as
bench/results/T3.json.

    bench/run.py T3 [gradwire train options...]     e.g. --epochs 1 --configs none,ps-async

Environment: GW (the gradwire command; default build/bin/gradwire), RATE (1gbit), EPOCHS (2), CONFIGS
(none,async,ps-sync,ps-async), SLOW_RANK (3), SLOW_FACTOR (3), OUT (t3-out), SAVE_RESULT (1). Needs root
for the cluster; without it the ranks run on loopback and say so.
"""
import os
import subprocess

from . import harness

PROG = "bench T3"


def summarize(out):
    return open(os.path.join(out, "table.txt")).read()


def main(args):
    gw = harness.gradwire(PROG)
    rate = harness.env("RATE", "1gbit")
    epochs = harness.env("EPOCHS", "2")
    configs = harness.env("CONFIGS", "none,async,ps-sync,ps-async")
    slow_rank = harness.env("SLOW_RANK", "3")
    slow_factor = harness.env("SLOW_FACTOR", "3")
    out = harness.env("OUT", "t3-out")
    harness.load(PROG, "before")
    subprocess.run([gw, "train", "--ranks", "4", "--link", rate, "--epochs", epochs, "--evals-per-epoch", "8",
                    "--configs", configs, "--slow-rank", slow_rank, "--slow-factor", slow_factor, "--out", out, *args],
                   check=True)
    harness.load(PROG, "after")
    harness.finish("T3", out, summarize(out),
                   f"RATE={rate} EPOCHS={epochs} CONFIGS={configs} SLOW_RANK={slow_rank} SLOW_FACTOR={slow_factor} "
                   f"bench/run.py T3 {harness.shown(args)}")
