"""What every benchmark of bench/run.py shares: the gradwire command and the Python it runs, the
machine's load before and after each run, ranks' output kept in a log with rank 0's JSON lines picked
out, and the one writer of a summary (printed, kept in the output directory, saved as
bench/results/NAME.json through scripts/bench-report.py's save_summary unless SAVE_RESULT=0)."""
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Failure(Exception):
    """A harness that cannot run: what is missing and what to do."""


def env(name, default):
    return os.environ.get(name, default)


def gradwire(prog):
    """The gradwire command (GW, default build/bin/gradwire), built."""
    gw = env("GW", os.path.join(ROOT, "build", "bin", "gradwire"))
    if not os.access(gw, os.X_OK):
        raise Failure(f"{prog}: {gw} is not built (scripts/build.sh, or set GW)")
    return gw


def torch_python(prog, default, probe="import torch", hint="scripts/install-deps.sh"):
    """PYTHON, else `default`, checked to import what the peer needs."""
    python = os.environ.get("PYTHON") or default
    if subprocess.run([python, "-c", probe], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        raise Failure(f"{prog}: {python} has no torch ({hint})")
    return python


def say_torch(prog, python):
    """Which interpreter and torch the peer runs, said at the start of a run."""
    version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True).stdout.strip()
    print(f"{prog}: {python}, torch {version}")


def venv_python():
    """.venv-torch's Python (PyPI's torch 2.x from scripts/install-deps.sh), else /usr/bin/python3."""
    venv = os.path.join(ROOT, ".venv-torch", "bin", "python")
    return venv if os.access(venv, os.X_OK) else "/usr/bin/python3"


def library_env(gw):
    """The Python binding loads this build's library (and, next to it, its plugins)."""
    os.environ.setdefault("GRADWIRE_LIBRARY", os.path.join(os.path.dirname(gw), "..", "lib", "libgradwire.so.0"))


def load(prog, when):
    """The machine's load (uptime), said before and after each run: the machine may be shared."""
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"{prog}: load {when}: {up}", flush=True)


def is_root():
    return os.geteuid() == 0


def link_args(prog, rate):
    """gradwire run's `--link RATE`, or nothing (loopback, said) where the cluster needs root and we are not."""
    if is_root():
        return ["--link", rate]
    print(f"{prog}: not root: loopback instead of {rate} links", flush=True)
    return []


def run_logged(argv, log, show=None, extra_env=None):
    """Runs argv, its output (stdout and stderr as the ranks wrote them) into `log`; the lines matching
    the regular expression `show` are printed. A failed run is said and left to the table (its rows are
    missing), as every harness did."""
    env_ = dict(os.environ, **(extra_env or {}))
    pattern = re.compile(show) if show else None
    with open(log, "w") as f, subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env_) as p:
        for line in p.stdout:
            f.write(line)
            if pattern and pattern.search(line):
                print(line, end="", flush=True)
    return p.returncode


def rank0_json(log):
    """Rank 0's JSON lines of a `gradwire run` log (`[0] {...}`), parsed."""
    rows = []
    for line in open(log):
        m = re.match(r"^\[0\] (\{.*\})$", line.rstrip("\n"))
        if m:
            rows.append(json.loads(m.group(1)))
    return rows


def read_jsonl(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def append_jsonl(path, rows):
    with open(path, "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def shown(prog_args):
    return " ".join(shlex.quote(a) for a in prog_args)


def _bench_report():
    spec = importlib.util.spec_from_file_location("bench_report", os.path.join(ROOT, "scripts", "bench-report.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def finish(name, out, text, command, filename="summary.txt", **extra):
    """The one writer of a benchmark's summary: printed, written to OUT/filename, and (unless
    SAVE_RESULT=0) kept as bench/results/NAME.json with the machine, `command` and commit."""
    sys.stdout.write(text)
    sys.stdout.flush()
    with open(os.path.join(out, filename), "w") as f:
        f.write(text)
    if env("SAVE_RESULT", "1") != "0":
        _bench_report().save_summary(name, command, text, **extra)


def run_table_program(prog, name, out, argv, command):
    """A benchmark whose program prints its own table (P9, F1): run it between two load lines, then
    finish() with what it printed."""
    os.makedirs(out, exist_ok=True)
    load(prog, "before")
    run = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=True)
    load(prog, "after")
    finish(name, out, run.stdout, command)
