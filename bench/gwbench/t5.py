r"""Benchmark T5 (docs/benchmarks.md, docs/diloco.md): training over a slow link. One PyTorch trainer
(bindings/python/benchmarks/t5_diloco.py: a character-level transformer LM on Python's documentation sources,
AdamW inside), 4 ranks each in its own network namespace behind a rate-limited link: every rank training
alone with no exchange (compute: the step's floor), DDP without a hook,
DDP with gradwire's best per-step hook (top-k 1 % + error feedback), local SGD, DiLoCo with f32, int8 and
sparseq (top-k 3 % at 2 bits) pseudo-gradients, and streaming DiLoCo. One table per link rate: final loss
after the same inner steps and its gap to DDP's, training time, time to the target loss (DDP's final loss
+ 2 %, from a DDP run at the first rate unless TARGET is set) and the speed-up over the per-step hook,
bytes each rank sent and DDP's bytes over them, the share of the step spent inside gradwire's step (the mean
over the ranks) and the part of it that every rank spent there at the same step (gradwire's work and the
network's, not a rank waiting for a slower one).

    bench/run.py T5 [t5_diloco.py options...]      e.g. --steps 200 --configs ddp,diloco-int8

Environment: GW (default build/bin/gradwire), RATES ("10mbit 100mbit"; "loopback": no cluster), STEPS
(3000), OUT (t5-out), TARGET (a loss; empty: DDP's final loss x 1.02), PYTHON (.venv-torch/bin/python),
SAVE_RESULT (1). Needs root for the cluster; without it the ranks run on loopback and the table says so.
"""
import contextlib
import io
import os

from . import harness

PROG = "bench T5"


def summary(rows):
    """The tables of T5 (Markdown) from rank 0's JSON lines (OUT/t5.jsonl)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        results = [r for r in rows if r["kind"] == "result"]
        evals = [r for r in rows if r["kind"] == "eval"]
        links = list(dict.fromkeys(r["link"] for r in results))
        first_ddp = next((r for r in results if r["config"] == "ddp"), None)
        target = results[0]["target"] if results and results[0]["target"] else (first_ddp["final_loss"] * 1.02 if first_ddp else None)
        for link in links:
            res = [r for r in results if r["link"] == link]
            base = next((r for r in res if r["config"] == "ddp"), None)
            hook = next((r for r in res if r["config"] == "gw-hook"), None)
            def reach(r):
                for e in evals:
                    if e["link"] == link and e["config"] == r["config"] and target is not None and e["loss"] <= target:
                        return e["seconds"]
                return None
            def sent(r):
                # On loopback the interface carries every rank's traffic (and gradwire's ranks talk over shared
                # memory): gradwire's payload bytes there, the rank's own interface in the cluster.
                if link == "loopback" and r["gradwire_payload_bytes"] is not None:
                    return r["gradwire_payload_bytes"]
                return r["interface_bytes"] if r["interface_bytes"] is not None else r["gradwire_payload_bytes"]
            print(f"T5 at {link}: 4 ranks, {res[0]['parameters'] / 1e6:.2f} M parameters, {res[0]['steps']} inner steps, "
                  f"H = {res[0]['inner_steps']}; target loss {target:.4f}" if target else f"T5 at {link}")
            print()
            print("| configuration | final loss | vs ddp | train s | ms/step | s to target | vs hook | MB sent/rank | ddp bytes / these | in gradwire's step | of it, every rank |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            hook_t = reach(hook) if hook else None
            for r in res:
                compute = r["config"] == "compute"  # no exchange: one rank's training, the step's floor
                t = reach(r) if not compute else None
                gap = f"{100 * (r['final_loss'] / base['final_loss'] - 1):+.2f} %" if base and not compute else "-"
                s = sent(r)
                ratio = f"{sent(base) / s:.0f}x" if base and s and sent(base) and not compute else "-"
                up = f"{hook_t / t:.1f}x" if hook_t and t else "-"
                # The mean rank's share in gradwire's step, and per step the least of any rank's: its work and
                # the network's, not a rank waiting for a slower one (older results have only the first).
                share, every = (f"{100 * r[k]:.1f} %" if k in r else "-" for k in ("sync_share", "sync_share_every_rank"))
                ms = r.get("step_ms", 1e3 * r["train_seconds"] / r["steps"])
                reached = "-" if compute or target is None else (t if t is not None else "not reached")
                print(f"| {r['config']} | {r['final_loss']:.4f} | {gap} | {r['train_seconds']:.0f} | {ms:.1f} | "
                      f"{reached} | {up} | {s / 1e6 if s else 0:.2f} | {ratio} | {share} | {every} |")
            if hook and hook_t is None and target is not None:
                # The hook did not reach the target within the run: it needs more than all its training time,
                # so a configuration that reached it is at least that time over its own sooner.
                firsts = [(reach(r), r) for r in res if r["config"] not in ("compute", "ddp", "gw-hook") and reach(r)]
                if firsts:
                    t, r = min(firsts, key=lambda x: x[0])
                    print()
                    print(f"The hook did not reach the target in {hook['steps']} inner steps ({hook['train_seconds']:.0f} s); "
                          f"{r['config']} reached it in {t:.0f} s: at least {hook['train_seconds'] / t:.2f}x sooner.")
            # No configuration steps faster than one that never communicates: to be k times sooner than the
            # hook, a configuration needs fewer than bound / k of the hook's inner steps to the target.
            floor = next((r for r in res if r["config"] == "compute"), None)
            if floor and hook and floor.get("step_ms") and hook.get("step_ms"):
                bound = hook["step_ms"] / floor["step_ms"]
                print()
                print(f"The step without any exchange (compute) takes {floor['step_ms']:.1f} ms, the hook's "
                      f"{hook['step_ms']:.1f} ms: no configuration steps more than {bound:.2f}x faster than the hook, "
                      f"and one that is 5x sooner to the target needs fewer than {100 * bound / 5:.0f} % of the hook's "
                      f"inner steps to it.")
            print()
    return text.getvalue()


def main(args):
    gw = harness.gradwire(PROG)
    rates = harness.env("RATES", "10mbit 100mbit")
    steps = harness.env("STEPS", "3000")
    out = harness.env("OUT", "t5-out")
    target = harness.env("TARGET", "")
    python = os.environ.get("PYTHON") or os.path.join(harness.ROOT, ".venv-torch", "bin", "python")
    trainer = os.path.join(harness.ROOT, "bindings", "python", "benchmarks", "t5_diloco.py")
    harness.library_env(gw)
    os.makedirs(out, exist_ok=True)
    jsonl = os.path.join(out, "t5.jsonl")
    open(jsonl, "w").close()
    for rate in rates.split():
        harness.load(PROG, f"before {rate}")
        link = ["--link", rate] if rate != "loopback" else []  # RATES=loopback: a smoke run without the cluster
        if not harness.is_root():
            print(f"{PROG}: not root: loopback instead of {rate} links", flush=True)
            link, rate = [], "loopback"
        print(f"== T5, 4 ranks, {rate} links", flush=True)
        log = os.path.join(out, f"t5-{rate}.log")
        harness.run_logged([gw, "run", "-n", "4", *link, "--", python, trainer, "--steps", steps,
                            *(["--target", target] if target else []), *args], log,
                           show=r'^\[0\] .*"kind": "result"', extra_env={"GW_LINK": rate, "OMP_NUM_THREADS": "1"})
        harness.append_jsonl(jsonl, harness.rank0_json(log))
        harness.load(PROG, f"after {rate}")
    harness.finish("T5", out, summary(harness.read_jsonl(jsonl)),
                   f'RATES="{rates}" STEPS={steps} {"TARGET=" + target + " " if target else ""}bench/run.py T5 '
                   f"{harness.shown(args)}", filename="summary.md")


def summarize(out):
    return summary(harness.read_jsonl(os.path.join(out, "t5.jsonl")))
