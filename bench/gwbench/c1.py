r"""Benchmark C1 (docs/cache.md): the data cache against slow storage. `gradwire train` on 4 ranks reads
Fashion-MNIST through emulated slow storage (--slow-storage: a read takes at least bytes / RATE; the
time the real read did not take is slept) three ways: the whole training set in every rank's memory
(the default path), --cache (each rank reads and holds 1/4 and draws batches through gw_cache_get), and
--cache-node-shared. Table: the load from storage, epoch 1 (load + training), the later epochs, the
training-set bytes each rank holds, peak resident memory of rank 0, final accuracy. The three modes run
in turn REPEAT times; each time figure is the median of the runs, with its spread (max - min).

    bench/run.py C1

Environment: GW (the gradwire command; default build/bin/gradwire), RATE (MB/s, 20), EPOCHS (3),
RANKS (4), REPEAT (3), HIDDEN (the MLP's hidden layers, 256,128), OUT (c1-out), SAVE_RESULT (1).
"""
import contextlib
import io
import json
import os
import re
import statistics
import subprocess

from . import harness

PROG = "bench C1"
MODES = {"memory": [], "cache": ["--cache"], "node-shared": ["--cache-node-shared"]}


def summary(out, rate, ranks, repeat, hidden):
    """The table of C1 from its output directory (OUT/MODE-RUN/none.json)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        print(f"\nC1: {ranks} ranks, storage at {rate} MB/s (emulated), MLP 784-{hidden.replace(',', '-')}-10, batch 128; "
              f"median of {repeat} runs (spread max - min)")
        print(f"{'mode':<13}{'load s':>14}{'epoch 1 s':>14}{'later epochs s':>16}{'train set held/rank':>26}"
              f"{'max RSS rank 0':>16}{'final acc':>11}")

        def cell(values):
            return f"{statistics.median(values):.2f} ({max(values) - min(values):.2f})"

        for mode in ["memory", "cache", "node-shared"]:
            runs = []
            for rep in range(1, repeat + 1):
                path = os.path.join(out, f"{mode}-{rep}", "none.json")
                if os.path.exists(path):
                    runs.append(json.load(open(path)))
            if not runs:
                print(f"{mode:<13} (no result)")
                continue
            load, first, later = [], [], []
            for r in runs:
                ends = [p["seconds"] for p in r["curve"]]
                epochs = [ends[0]] + [b - a for a, b in zip(ends, ends[1:])]
                load.append(r["data"]["load_seconds"])
                first.append(r["data"]["load_seconds"] + epochs[0])
                later.append(sum(epochs[1:]) / max(1, len(epochs) - 1))
            d = runs[0]["data"]
            held = f"{d['train_bytes_held'] / 1e6:.1f} MB" + (" (node share)" if d.get("node_shared") else "")
            rss = statistics.median(r["data"]["max_rss_bytes"] for r in runs) / 1e6
            print(f"{mode:<13}{cell(load):>14}{cell(first):>14}{cell(later):>16}{held:>26}{rss:>13.1f} MB"
                  f"{runs[0]['curve'][-1]['test_accuracy']:>11.4f}")
    return text.getvalue()


def settings():
    return (harness.env("RATE", "20"), harness.env("EPOCHS", "3"), harness.env("RANKS", "4"),
            int(harness.env("REPEAT", "3")), harness.env("HIDDEN", "256,128"))


def main(args):
    gw = harness.gradwire(PROG)
    rate, epochs, ranks, repeat, hidden = settings()
    out = harness.env("OUT", "c1-out")
    os.makedirs(out, exist_ok=True)
    harness.load(PROG, "before")
    for rep in range(1, repeat + 1):
        for mode, flags in MODES.items():
            print(f"== {mode}, run {rep} of {repeat}", flush=True)
            run = subprocess.run([gw, "train", "--ranks", ranks, "--epochs", epochs, "--batch", "128", "--hidden", hidden,
                                  "--evals-per-epoch", "1", "--configs", "none", "--slow-storage", rate, *flags,
                                  "--out", os.path.join(out, f"{mode}-{rep}"), *args], stdout=subprocess.PIPE, text=True)
            for line in run.stdout.splitlines():
                if re.match(r"^none ", line):
                    print(line, flush=True)
    harness.load(PROG, "after")
    harness.finish("C1", out, summary(out, rate, ranks, repeat, hidden),
                   f"RATE={rate} EPOCHS={epochs} RANKS={ranks} REPEAT={repeat} HIDDEN={hidden} bench/run.py C1 "
                   f"{harness.shown(args)}")


def summarize(out):
    rate, _, ranks, repeat, hidden = settings()
    return summary(out, rate, ranks, repeat, hidden)
