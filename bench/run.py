#!/usr/bin/env python3
r"""The benchmark harness (docs/benchmarks.md): runs one benchmark and writes its result file under
bench/results/, the file the documents' generated blocks quote (scripts/bench-report.py renders them).

    bench/run.py SUITE [ARGS...]        run SUITE: P1-P8 are `gradwire bench --suite SUITE ARGS...` (their
                                        result file with --out); P9, T1-T5 and C1 launch their ranks and
                                        peers here (bench/gwbench/); validation is
                                        scripts/validate-cost-model.sh [OUT]
    bench/run.py --summary SUITE OUT    the table again from a finished run's output directory
    bench/run.py --finish SUITE OUT --command TEXT
                                        the table printed, kept in OUT and saved as bench/results/SUITE.json
                                        (unless SAVE_RESULT=0): what a shell harness calls at its end
    bench/run.py --list

Each benchmark's settings come from the environment (GW, OUT, RATES, EPOCHS, ...; `bench/run.py SUITE
--help-env` prints them). The machine's load is printed before and after every run.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gwbench import c1, f1, harness, p9, t1, t2, t3, t4, t5, validation  # noqa: E402

HARNESSES = {"F1": f1, "P9": p9, "T1": t1, "T2": t2, "T3": t3, "T4": t4, "T5": t5, "C1": c1}
SUMMARIES = {**HARNESSES, "validation": validation}
SUITES = [f"P{i}" for i in range(1, 9)]


def usage(status):
    sys.stdout.write(__doc__)
    return status


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        return usage(0 if argv else 2)
    if argv[0] == "--list":
        for name in SUITES:
            print(f"{name}  gradwire bench --suite {name}")
        for name, module in SUMMARIES.items():
            print(f"{name:<3} {module.__doc__.strip().splitlines()[0]}")
        return 0
    if argv[0] in ("--summary", "--finish"):
        if len(argv) < 3 or argv[1] not in SUMMARIES:
            print(f"bench/run.py {argv[0]}: give SUITE OUT, SUITE one of {', '.join(SUMMARIES)}", file=sys.stderr)
            return 2
        name, out = argv[1], argv[2]
        if not os.path.isdir(out):
            print(f"bench/run.py: {out} is not a benchmark's output directory", file=sys.stderr)
            return 2
        text = SUMMARIES[name].summarize(out)
        if argv[0] == "--summary":
            sys.stdout.write(text)
            return 0
        command = argv[argv.index("--command") + 1] if "--command" in argv[:-1] else "?"
        harness.finish(name, out, text, command)
        return 0
    name, args = argv[0], argv[1:]
    if args[:1] == ["--help-env"]:
        module = HARNESSES.get(name) or SUMMARIES.get(name)
        print(module.__doc__ if module else f"{name}: gradwire bench --suite {name} --help")
        return 0
    if name in SUITES:
        return subprocess.run([harness.gradwire(f"bench {name}"), "bench", "--suite", name, *args]).returncode
    if name == "validation":
        return subprocess.run([os.path.join(harness.ROOT, "scripts", "validate-cost-model.sh"), *args]).returncode
    if name not in HARNESSES:
        known = SUITES + list(SUMMARIES)
        print(f"bench/run.py: unknown benchmark '{name}'; known: {' '.join(known)}", file=sys.stderr)
        return 2
    try:
        HARNESSES[name].main(args)
    except harness.Failure as e:
        print(e, file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"bench {name}: {' '.join(map(str, e.cmd[:3]))} ... exited with status {e.returncode}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
