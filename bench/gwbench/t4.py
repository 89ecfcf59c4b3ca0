r"""Benchmark T4 (docs/benchmarks.md): one PyTorch FSDP2 trainer (torch 2.x fully_shard, gloo, CPU; a 21 M
parameter transformer on synthetic Markov-chain tokens, bindings/python/benchmarks/t4_fsdp.py), 4 ranks
each in its own network namespace behind a rate-limited link, only FSDP2's collectives swapped: FSDP2's
own, both through gradwire uncompressed, the gradient reduce-scatter through gradwire int8 + error
feedback, and that plus the parameter all-gather through gradwire int8. One table per link rate: step
time and speed-up over FSDP2, the share of FSDP2's step spent communicating, the loss after the same steps
and its gap to FSDP2's, bytes each rank's interface sent per step. The summary goes to
bench/results/T4.json (machine, command, commit, and rank 0's rows).

    bench/run.py T4 [t4_fsdp.py options...]          e.g. --steps 4 --configs fsdp,gw-int8-rs-ag

Environment: GW (the gradwire command; default build/bin/gradwire), RATES ("100mbit 1gbit": at 100 Mbit/s
FSDP2 spends most of its step communicating on this model), OUT (t4-out), STEPS (8), PYTHON
(.venv-torch/bin/python: FSDP2 needs torch 2.x, scripts/install-deps.sh), SAVE_RESULT (1: write
bench/results/T4.json). Needs root for the cluster; without it the ranks run on loopback and say so.
"""
import os

from . import harness

PROG = "bench T4"


def summary(rows):
    """The tables of T4 (Markdown) from rank 0's JSON lines (OUT/t4.jsonl)."""
    links = []
    for r in rows:
        if r["link"] not in links:
            links.append(r["link"])
    lines = []
    for link in links:
        compute = next((r for r in rows if r["link"] == link and r["kind"] == "compute"), None)
        res = [r for r in rows if r["link"] == link and r["kind"] == "result"]
        base = next((r for r in res if r["config"] == "fsdp"), None)
        if not res:
            continue
        lines.append(f"T4 at {link}: 4 ranks, {res[0]['parameters'] / 1e6:.1f} M parameters, {res[0]['steps']} steps "
                     f"({res[0]['timed_steps']} timed) of {res[0]['batch_per_rank']} x {res[0]['seq']} tokens per rank; "
                     f"the step without communication "
                     f"{compute['compute_step_seconds']:.2f} s" if compute else "")
        lines.append("")
        lines.append("| configuration | step s | speed-up | comm % | loss | loss vs fsdp | sent/step |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for r in res:
            step = r["step_seconds"]
            comm = f"{100 * max(0.0, 1 - compute['compute_step_seconds'] / step):.0f}" if compute else "-"
            up = f"{base['step_seconds'] / step:.2f}x" if base else "-"
            gap = f"{100 * (r['final_loss'] / base['final_loss'] - 1):+.2f} %" if base else "-"
            sent = f"{r['bytes_per_step'] / 1e6:.1f} MB" if r.get("bytes_per_step") else "-"
            lines.append(f"| {r['config']} | {step:.2f} | {up} | {comm} | {r['final_loss']:.4f} | {gap} | {sent} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main(args):
    gw = harness.gradwire(PROG)
    rates = harness.env("RATES", "100mbit 1gbit")
    out = harness.env("OUT", "t4-out")
    steps = harness.env("STEPS", "8")
    python = harness.torch_python(PROG, os.path.join(harness.ROOT, ".venv-torch", "bin", "python"),
                                  probe="from torch.distributed.fsdp import fully_shard",
                                  hint="FSDP2 needs torch 2.x; scripts/install-deps.sh makes .venv-torch")
    trainer = os.path.join(harness.ROOT, "bindings", "python", "benchmarks", "t4_fsdp.py")
    harness.say_torch(PROG, python)
    harness.library_env(gw)
    os.makedirs(out, exist_ok=True)
    jsonl = os.path.join(out, "t4.jsonl")
    open(jsonl, "w").close()
    for rate in rates.split():
        harness.load(PROG, f"before {rate}")
        print(f"== PyTorch FSDP2, 4 ranks, {rate} links", flush=True)
        link = harness.link_args(PROG, rate)
        log = os.path.join(out, f"t4-{rate}.log")
        harness.run_logged([gw, "run", "-n", "4", *link, "--", python, trainer, "--steps", steps, *args], log,
                           show=r'^\[0\] .*"kind": "(result|compute)"', extra_env={"OMP_NUM_THREADS": "1"})
        harness.append_jsonl(jsonl, harness.rank0_json(log))
        harness.load(PROG, f"after {rate}")
    rows = harness.read_jsonl(jsonl)
    harness.finish("T4", out, summary(rows), f'RATES="{rates}" STEPS={steps} bench/run.py T4 {harness.shown(args)}',
                   filename="summary.md", rows=rows)


def summarize(out):
    return summary(harness.read_jsonl(os.path.join(out, "t4.jsonl")))
