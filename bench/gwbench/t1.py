r"""Benchmark T1 (docs/benchmarks.md): `gradwire train` on 4 ranks behind emulated links (default 1gbit),
every configuration, and the PyTorch DDP peer (gloo; hooks none, fp16, powersgd) training the same MLP
with the same recipe on the same links; then one table: final test accuracy, time to 85 % and how much
sooner than uncompressed gradwire (ratio > 1: sooner), bytes sent per rank.

    bench/run.py T1 [gradwire train options...]     e.g. --epochs 3 --configs none,int8,topk-ef

Environment: GW (the gradwire command; default build/bin/gradwire), RATE (1gbit), OUT (t1-out),
EPOCHS (5), HOOKS (none,fp16,powersgd), PYTHON (/usr/bin/python3, Debian's python3-torch), SAVE_RESULT (1).
Needs root for the cluster; without it both sides run on loopback and say so.
"""
import contextlib
import glob
import io
import json
import os
import subprocess

from . import harness

PROG = "bench T1"


def summary(out):
    """The table of T1 from its output directory (OUT/gradwire/*.json, OUT/torch.log)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        rows = []
        order = ["none", "fp16", "int8", "topk-ef", "onebit-ef", "local-sgd"]
        paths = glob.glob(os.path.join(out, "gradwire", "*.json"))
        paths.sort(key=lambda p: (order.index(os.path.basename(p)[:-5]) if os.path.basename(p)[:-5] in order else 99, p))
        for path in paths:
            r = json.load(open(path))
            curve = r["curve"]
            t85 = next((p["seconds"] for p in curve if p["test_accuracy"] >= 0.85), None)
            rows.append(("gradwire " + r["configuration"], curve[-1]["test_accuracy"], t85, curve[-1]["seconds"],
                         curve[-1]["bytes"], r.get("link", "?")))
        for line in open(os.path.join(out, "torch.log")):
            line = line.split("] ", 1)[-1]
            if '"kind": "result"' not in line:
                continue
            r = json.loads(line)
            link = rows[0][5] if rows else "?"  # placed by the same gradwire run --link
            rows.append(("torch-ddp " + r["hook"], r["final_accuracy"], r.get("seconds_to_85"), r["train_seconds"],
                         r.get("bytes"), link))
        base = next((r for r in rows if r[0] == "gradwire none"), None)
        print(f"\n{'configuration':<22}{'final acc':>10}{'to 85 %':>10}{'sooner':>8}{'acc - none':>11}{'train s':>9}{'sent/rank':>12}  link")
        for name, acc, t85, secs, sent, link in rows:
            sooner = f"{base[2] / t85:.2f}x" if base and base[2] and t85 else "-"
            gap = f"{100 * (acc - base[1]):+.2f} pt" if base else "-"
            t = f"{t85:.1f} s" if t85 is not None else "never"
            b = f"{sent / 1e6:.1f} MB" if sent else "-"
            print(f"{name:<22}{acc:>10.4f}{t:>10}{sooner:>8}{gap:>11}{secs:>9.1f}{b:>12}  {link}")
        print("sooner: gradwire none's time to 85 % over this row's (target for a compressed gradwire row: >= 2x); "
              "acc - none: final accuracy minus gradwire none's (target: within 0.5 points)")
    return text.getvalue()


def main(args):
    gw = harness.gradwire(PROG)
    rate = harness.env("RATE", "1gbit")
    out = harness.env("OUT", "t1-out")
    epochs = harness.env("EPOCHS", "5")
    hooks = harness.env("HOOKS", "none,fp16,powersgd")
    python = harness.torch_python(PROG, "/usr/bin/python3", hint="Debian python3-torch")
    peer = os.path.join(harness.ROOT, "bench", "peers", "torch_ddp.py")
    os.makedirs(out, exist_ok=True)
    harness.load(PROG, "before")
    print(f"== gradwire train, 4 ranks, {rate} links", flush=True)
    subprocess.run([gw, "train", "--ranks", "4", "--link", rate, "--epochs", epochs, "--out",
                    os.path.join(out, "gradwire"), *args], check=True)
    print(f"== PyTorch DDP (gloo), 4 ranks, {rate} links, hooks {hooks}", flush=True)
    # gradwire run places the ranks (and sets MASTER_ADDR, GLOO_SOCKET_IFNAME in the cluster); torchrun's
    # variables come from gradwire run's.
    harness.run_logged([gw, "run", "-n", "4", "--link", rate, "--", "sh", "-c",
                        'RANK=$GW_RANK WORLD_SIZE=$GW_WORLD_SIZE MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} '
                        'MASTER_PORT=$GW_ROOT_PORT exec "$0" "$@"',
                        python, peer, "--epochs", epochs, "--hooks", hooks],
                       os.path.join(out, "torch.log"), show=r'^\[0\] .*"kind": "result"')
    harness.load(PROG, "after")
    harness.finish("T1", out, summary(out),
                   f"RATE={rate} EPOCHS={epochs} HOOKS={hooks} bench/run.py T1 {harness.shown(args)}")


summarize = summary
