r"""Benchmark P9 (docs/powersgd.md): the PowerSGD compression step on one CPU, gradwire's powersgd codec
against the compute of PyTorch's powerSGD_hook in the same process (scripts/bench-p9.py prints the
table; this harness runs it with torch 2.x and saves it as bench/results/P9.json).

    bench/run.py P9 [bench-p9.py options...]

Environment: PYTHON (.venv-torch/bin/python), OUT (p9-out), SAVE_RESULT (1).
"""
import os

from . import harness

PROG = "bench P9"


def summarize(out):
    return open(os.path.join(out, "summary.txt")).read()


def main(args):
    python = harness.torch_python(PROG, harness.venv_python())
    out = harness.env("OUT", "p9-out")
    harness.run_table_program(PROG, "P9", out, [python, os.path.join(harness.ROOT, "scripts", "bench-p9.py"), *args],
                              f"scripts/bench-p9.py {harness.shown(args)}".rstrip())
