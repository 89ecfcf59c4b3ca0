#!/usr/bin/env python3
"""The benchmark harness (bench/run.py, bench/gwbench): the tables of T2, T5 and the cost model's
validation built from planted output directories (figures worked out by hand), `--finish` writing the
summary into the output directory without a result file under SAVE_RESULT=0, an unknown benchmark and a
missing gradwire command refused with a message, and the shell harnesses thin (they hand over to
bench/run.py). No benchmark runs.

    check_bench_harness.py --root DIR
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def run(root, *args, env=None):
    return subprocess.run([sys.executable, os.path.join(root, "bench", "run.py"), *args], capture_output=True,
                          text=True, env=dict(os.environ, **(env or {})))


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    root = p.parse_args().root
    with tempfile.TemporaryDirectory() as d:
        t2 = os.path.join(d, "t2")
        os.makedirs(t2)
        base = {"kind": "result", "link": "1gbit", "epochs": 1, "train_images": 1280}
        write_jsonl(os.path.join(t2, "t2.jsonl"), [
            {"kind": "compute", "link": "1gbit", "compute_step_seconds": 0.1, "parameters": 1000, "when": "before"},
            dict(base, config="ddp", step_seconds=0.2, seconds_to_85=10.0, seconds_to_80=5.0, final_accuracy=0.86,
                 bytes_per_step=4e6),
            dict(base, config="gw-int8", step_seconds=0.125, seconds_to_85=4.0, seconds_to_80=2.0,
                 final_accuracy=0.855, bytes_per_step=1e6)])
        r = run(root, "--summary", "T2", t2)
        expect(r.returncode == 0, f"T2 summary failed: {r.stderr}")
        lines = r.stdout.splitlines()
        ddp = next((l for l in lines if l.startswith("ddp ")), "")
        int8 = next((l for l in lines if l.startswith("gw-int8 ")), "")
        expect(ddp.split()[1:3] == ["200", "50"], f"T2: ddp's step ms and comm % are not 200 and 50: {ddp!r}")
        expect("2.50x" in int8 and "-0.50 pt" in int8 and "1.00 MB" in int8, f"T2: gw-int8's row is wrong: {int8!r}")
        expect("target gw-int8 >= 2x sooner than ddp: 2.50x" in r.stdout, "T2: the gw-int8 target line is missing")

        t5 = os.path.join(d, "t5")
        os.makedirs(t5)
        res = {"kind": "result", "link": "loopback", "parameters": 2e6, "steps": 100, "inner_steps": 10, "target": None,
               "interface_bytes": None, "train_seconds": 50.0}
        write_jsonl(os.path.join(t5, "t5.jsonl"), [
            dict(res, config="compute", final_loss=2.5, gradwire_payload_bytes=None, train_seconds=2.0, step_ms=20.0),
            dict(res, config="ddp", final_loss=2.0, gradwire_payload_bytes=None),
            dict(res, config="gw-hook", final_loss=2.01, gradwire_payload_bytes=None, train_seconds=4.0, step_ms=40.0),
            dict(res, config="diloco-int8", final_loss=2.02, gradwire_payload_bytes=2e6, sync_share=0.05,
                 sync_share_every_rank=0.012),
            {"kind": "eval", "link": "loopback", "config": "compute", "loss": 2.0, "seconds": 1},
            {"kind": "eval", "link": "loopback", "config": "gw-hook", "loss": 2.03, "seconds": 3},
            {"kind": "eval", "link": "loopback", "config": "diloco-int8", "loss": 2.03, "seconds": 12}])
        r = run(root, "--summary", "T5", t5)
        expect(r.returncode == 0, f"T5 summary failed: {r.stderr}")
        expect("target loss 2.0400" in r.stdout, "T5: the target is not DDP's final loss x 1.02")
        # A row without step_ms (older output) gets train seconds / steps.
        expect("| diloco-int8 | 2.0200 | +1.00 % | 50 | 500.0 | 12 | 0.2x | 2.00 | - | 5.0 % | 1.2 % |" in r.stdout,
               f"T5: diloco-int8's row is wrong:\n{r.stdout}")
        # The floor: compared with nothing, its target crossing not timed; the bound is the hook's step over it.
        expect("| compute | 2.5000 | - | 2 | 20.0 | - | - | 0.00 | - | - | - |" in r.stdout,
               f"T5: the compute row is wrong:\n{r.stdout}")
        expect("no configuration steps more than 2.00x faster than the hook" in r.stdout and
               "fewer than 40 % of the hook's inner steps" in r.stdout, f"T5: the floor's bound is missing:\n{r.stdout}")

        # The hook never reached the target: a configuration that did is at least the hook's time over its own sooner.
        write_jsonl(os.path.join(t5, "t5.jsonl"), [
            dict(res, config="ddp", final_loss=2.0, gradwire_payload_bytes=None),
            dict(res, config="gw-hook", final_loss=2.1, gradwire_payload_bytes=None, train_seconds=40.0, step_ms=400.0),
            dict(res, config="diloco-int8", final_loss=2.02, gradwire_payload_bytes=2e6),
            {"kind": "eval", "link": "loopback", "config": "gw-hook", "loss": 2.1, "seconds": 40},
            {"kind": "eval", "link": "loopback", "config": "diloco-int8", "loss": 2.03, "seconds": 16}])
        r = run(root, "--summary", "T5", t5)
        expect("| gw-hook | 2.1000 | +5.00 % | 40 | 400.0 | not reached | - |" in r.stdout, f"T5: the hook's row:\n{r.stdout}")
        expect("The hook did not reach the target in 100 inner steps (40 s); diloco-int8 reached it in 16 s: at least "
               "2.50x sooner." in r.stdout, f"T5: the lower bound over a hook that never reached the target:\n{r.stdout}")

        val = os.path.join(d, "val")
        os.makedirs(val)
        point = {"case": "int8 100MB", "link": "1gbit", "ranks": 2, "ours": 100.0, "predicted_ms": 110.0, "mpi_ms": 300.0,
                 "ratio": 3.0, "peer_name": "MPI_Allreduce"}
        write_jsonl(os.path.join(val, "p5-2-1gbit.jsonl"), [dict(point, error=0.1, nominal_error=0.2)])
        write_jsonl(os.path.join(val, "p5-2-1gbit-L2.jsonl"), [dict(point, error=-0.3, nominal_error=0.4)])
        open(os.path.join(val, "launches.txt"), "w").write("P5: 2 ranks at 1gbit, launch 1 (load 1.00)\n")
        r = run(root, "--finish", "validation", val, "--command", "test", env={"SAVE_RESULT": "0"})
        expect(r.returncode == 0, f"validation --finish failed: {r.stderr}")
        # Two launches: the row is the launch of the lower median error (-30 %), the operator's path the lower
        # median of its own (+20 %), every launch's error beside (in the files' order).
        expect("| 1gbit | 2 | int8 | 100.0 | 110.0 | -30 % | 120.0 | +20 % |" in r.stdout,
               f"validation: the point's row is not its median launch:\n{r.stdout}")
        expect("| -30 +10 |" in r.stdout, "validation: each launch's error is not beside the row")
        summary = os.path.join(val, "summary.txt")
        expect(os.path.exists(summary) and open(summary).read() == r.stdout,
               "validation --finish did not keep the printed tables as OUT/summary.txt")
        expect("wrote" not in r.stdout, "SAVE_RESULT=0 still wrote a result file")

    r = run(root, "T9")
    expect(r.returncode == 2 and "unknown benchmark 'T9'" in r.stderr, f"an unknown benchmark: {r.returncode} {r.stderr}")
    r = run(root, "T2", env={"GW": "/nonexistent/gradwire"})
    expect(r.returncode == 1 and "/nonexistent/gradwire is not built" in r.stderr, f"a missing command: {r.stderr}")
    for s in ["bench-t1.sh", "bench-t2.sh", "bench-t4.sh", "bench-t5.sh", "bench-c1.sh"]:
        text = open(os.path.join(root, "scripts", s)).read()
        expect(len(text.splitlines()) <= 6 and "bench/run.py" in text, f"scripts/{s} is not a thin hand-over to bench/run.py")
    for f in failures:
        print("FAIL:", f)
    print("bench harness:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
