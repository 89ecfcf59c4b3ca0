r"""Benchmark F1 (docs/elastic.md): elastic membership under faults, every scenario repeated and every
outcome reported (f1_scenarios.py runs the ranks and prints the table; this harness saves it as
bench/results/F1.json).

    bench/run.py F1 [--repeat 10] [--tls tcp] [--link 1gbit] [--scenarios kill,root,two,stop,churn,train]

The ranks run in the cluster of 1 Gbit/s links (gradwire run --link 1gbit, root needed) unless --link is
given; without root on loopback, said in the output and the result.

Environment: OUT (f1-out), SAVE_RESULT (1).
"""
import os
import sys

from . import harness

PROG = "bench F1"


def summarize(out):
    return open(os.path.join(out, "summary.txt")).read()


def main(args):
    out = harness.env("OUT", "f1-out")
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "f1_scenarios.py")
    if "--link" not in args and not any(a.startswith("--link=") for a in args):
        args = [*args, *harness.link_args(PROG, "1gbit")]
    harness.run_table_program(PROG, "F1", out, [sys.executable, program, *args],
                              f"bench/run.py F1 {harness.shown(args)}".rstrip())
