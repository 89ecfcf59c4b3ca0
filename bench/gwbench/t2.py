r"""Benchmark T2 (docs/pytorch.md): one PyTorch DDP trainer (gloo, MLP 784-1024-1024-10 on Fashion-MNIST,
4 ranks each in its own network namespace behind a rate-limited link), only the gradient communication
swapped: DDP's allreduce, PyTorch's fp16 and PowerSGD hooks, gradwire's hook with none, fp16, int8,
top-k + error feedback, one bit + error feedback and powersgd (f32 or int8 factors). One table per link
rate: step time, the share of DDP's step spent communicating, time to 85 % test accuracy and how much
sooner than DDP, final accuracy, bytes each rank's interface sent per step.

    bench/run.py T2 [t2_ddp.py options...]          e.g. --configs ddp,gw-int8 --epochs 1

Environment: GW (the gradwire command; default build/bin/gradwire), RATES ("100mbit 1gbit"), OUT (t2-out),
RESULT (T2: the result file's name under bench/results; a run of some configurations beside the full
table: RESULT=T2-powersgd), EPOCHS (2), TRAIN_IMAGES (0: all 60000), PYTHON (.venv-torch/bin/python,
PyPI's torch 2.x from scripts/install-deps.sh; without that venv /usr/bin/python3, Debian's
python3-torch 1.13), SAVE_RESULT (1). A smoke run of a few seconds per configuration (no timing worth
reading):
    RATES=1gbit EPOCHS=1 TRAIN_IMAGES=1280 OUT=/tmp/t2-smoke bench/run.py T2 --configs ddp,gw-int8 \
      --test-images 500 --evals-per-epoch 1 --hidden 64
Needs root for the cluster; without it the ranks run on loopback and say so.
"""
import contextlib
import io
import os

from . import harness

PROG = "bench T2"


def summary(rows):
    """The tables of T2 from rank 0's JSON lines (OUT/t2.jsonl)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        links = []
        for r in rows:
            if r["link"] not in links:
                links.append(r["link"])
        for link in links:
            computes = [r for r in rows if r["link"] == link and r["kind"] == "compute"]
            compute = min(computes, key=lambda r: r["compute_step_seconds"]) if computes else None
            probes = ", ".join(f"{r.get('when', '?')} {r['compute_step_seconds'] * 1000:.0f}" for r in computes)
            res = [r for r in rows if r["link"] == link and r["kind"] == "result"]
            base = next((r for r in res if r["config"] == "ddp"), None)
            print(f"\nT2 at {link}: 4 ranks, {res[0]['epochs'] if res else '?'} epochs of {res[0]['train_images'] if res else '?'} "
                  f"images, {compute['parameters'] if compute else '?'} parameters; the step without communication "
                  f"{compute['compute_step_seconds'] * 1000:.0f} ms (the faster of {probes} ms)" if compute else "")
            print(f"{'configuration':<16}{'step ms':>9}{'comm %':>8}{'to 80 %':>10}{'sooner':>8}{'to 85 %':>10}{'sooner':>8}{'final acc':>10}"
                  f"{'acc - ddp':>11}{'sent/step':>11}")
            for r in res:
                step = r["step_seconds"]
                comm = f"{100 * max(0.0, 1 - compute['compute_step_seconds'] / step):.0f}" if compute else "-"
                t85 = r["seconds_to_85"]
                sooner = f"{base['seconds_to_85'] / t85:.2f}x" if base and base["seconds_to_85"] and t85 else "-"
                t80 = r.get("seconds_to_80")
                sooner80 = f"{base['seconds_to_80'] / t80:.2f}x" if base and base.get("seconds_to_80") and t80 else "-"
                gap = f"{100 * (r['final_accuracy'] - base['final_accuracy']):+.2f} pt" if base else "-"
                sent = f"{r['bytes_per_step'] / 1e6:.2f} MB" if r.get("bytes_per_step") else "-"
                print(f"{r['config']:<16}{1000 * step:>9.0f}{comm:>8}{(f'{t80:.1f} s' if t80 is not None else 'never'):>10}"
                      f"{sooner80:>8}{(f'{t85:.1f} s' if t85 is not None else 'never'):>10}{sooner:>8}{r['final_accuracy']:>10.4f}{gap:>11}{sent:>11}")
            loads = [r for r in rows if r["link"] == link and r["kind"] == "load"]
            if loads:
                print("load average (1 min) on this machine's " + str(loads[0]["cores"]) + " cores: " +
                      ", ".join(f"{r['when']} {r['load1']:.1f}" for r in loads) +
                      "; every configuration ran under it, one after another")
            def t85(name):
                r = next((r for r in res if r["config"] == name), None)
                return r["seconds_to_85"] if r else None
            torch_best = min((t for t in (t85("torch-fp16"), t85("torch-powersgd")) if t), default=None)
            gw_best = min((t for r in res if r["config"].startswith("gw-") for t in [r["seconds_to_85"]] if t), default=None)
            if base and base["seconds_to_85"] and t85("gw-int8"):
                print(f"target gw-int8 >= 2x sooner than ddp: {base['seconds_to_85'] / t85('gw-int8'):.2f}x")
            if t85("torch-powersgd") and t85("gw-powersgd"):
                print(f"target gw-powersgd >= 1.3x sooner than torch-powersgd: {t85('torch-powersgd') / t85('gw-powersgd'):.2f}x")
            if t85("torch-powersgd") and gw_best:
                print(f"target best gradwire hook >= 2x sooner than torch-powersgd: {t85('torch-powersgd') / gw_best:.2f}x")
            if torch_best and gw_best:
                print(f"target best gradwire hook >= 1.5x sooner than the best PyTorch hook: {torch_best / gw_best:.2f}x")
        print("comm %: share of the step not explained by the step without communication (1 - compute / step); "
              "sooner: ddp's time to 85 % over this row's; sent/step: bytes the rank's interface sent per step")
    return text.getvalue()


def main(args):
    gw = harness.gradwire(PROG)
    rates = harness.env("RATES", "100mbit 1gbit")
    out = harness.env("OUT", "t2-out")
    epochs = harness.env("EPOCHS", "2")
    train_images = harness.env("TRAIN_IMAGES", "0")
    python = harness.torch_python(PROG, harness.venv_python())
    trainer = os.path.join(harness.ROOT, "bindings", "python", "benchmarks", "t2_ddp.py")
    harness.say_torch(PROG, python)
    harness.library_env(gw)
    os.makedirs(out, exist_ok=True)
    jsonl = os.path.join(out, "t2.jsonl")
    open(jsonl, "w").close()
    def load_row(rate, when):
        harness.load(PROG, f"{when} {rate}")
        harness.append_jsonl(jsonl, [{"kind": "load", "link": rate, "when": when, "cores": os.cpu_count(),
                                      "load1": os.getloadavg()[0]}])

    for rate in rates.split():
        load_row(rate, "before")
        print(f"== PyTorch DDP, 4 ranks, {rate} links", flush=True)
        link = harness.link_args(PROG, rate)
        # gradwire run places the ranks (MASTER_ADDR, GLOO_SOCKET_IFNAME in the cluster); the trainer takes
        # torch's variables from gradwire run's (gradwire.torch.init_process_group).
        log = os.path.join(out, f"t2-{rate}.log")
        harness.run_logged([gw, "run", "-n", "4", *link, "--", python, trainer, "--epochs", epochs,
                            "--train-images", train_images, *args], log,
                           show=r'^\[0\] .*"kind": "(result|compute)"', extra_env={"OMP_NUM_THREADS": "1"})
        harness.append_jsonl(jsonl, harness.rank0_json(log))
        load_row(rate, "after")
    harness.finish(harness.env("RESULT", "T2"), out, summary(harness.read_jsonl(jsonl)),
                   f'RATES="{rates}" EPOCHS={epochs} TRAIN_IMAGES={train_images} bench/run.py T2 {harness.shown(args)}')


def summarize(out):
    """The table again from a finished run's output directory."""
    return summary(harness.read_jsonl(os.path.join(out, "t2.jsonl")))
