#!/usr/bin/env bash
# Benchmark T4 (docs/benchmarks.md): one PyTorch FSDP2 trainer (torch 2.x fully_shard, gloo, CPU; a 21 M
# parameter transformer on synthetic Markov-chain tokens, bindings/python/benchmarks/t4_fsdp.py), 4 ranks
# each in its own network namespace behind a rate-limited link, only FSDP2's collectives swapped: FSDP2's
# own, both through gradwire uncompressed, the gradient reduce-scatter through gradwire int8 + error
# feedback, and that plus the parameter all-gather through gradwire int8. One table per link rate: step
# time and speed-up over FSDP2, the share of FSDP2's step spent communicating, the loss after the same steps
# and its gap to FSDP2's, bytes each rank's interface sent per step. The summary goes to bench/results/T4.json (machine, command, commit).
#
#   scripts/bench-t4.sh [t4_fsdp.py options...]          e.g. --steps 4 --configs fsdp,gw-int8-rs-ag
#
# Environment: GW (the gradwire command; default build/bin/gradwire), RATES ("100mbit 1gbit": at 100 Mbit/s
# FSDP2 spends most of its step communicating on this model), OUT (t4-out), STEPS (8), PYTHON
# (.venv-torch/bin/python: FSDP2 needs torch 2.x, scripts/install-deps.sh), SAVE_RESULT (1: write
# bench/results/T4.json). Needs root for the cluster; without it the ranks run on loopback and say so.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GW="${GW:-$root/build/bin/gradwire}"
RATES="${RATES:-100mbit 1gbit}"
OUT="${OUT:-t4-out}"
STEPS="${STEPS:-8}"
SAVE_RESULT="${SAVE_RESULT:-1}"
PYTHON="${PYTHON:-$root/.venv-torch/bin/python}"
trainer="$root/bindings/python/benchmarks/t4_fsdp.py"
[ -x "$GW" ] || { echo "bench-t4.sh: $GW is not built (scripts/build.sh, or set GW)" >&2; exit 1; }
"$PYTHON" -c "from torch.distributed.fsdp import fully_shard" 2>/dev/null ||
  { echo "bench-t4.sh: $PYTHON has no torch 2.x with FSDP2 (scripts/install-deps.sh makes .venv-torch)" >&2; exit 1; }
echo "bench-t4.sh: $PYTHON, torch $("$PYTHON" -c "import torch; print(torch.__version__)")"
export GRADWIRE_LIBRARY="${GRADWIRE_LIBRARY:-$(dirname "$GW")/../lib/libgradwire.so.0}"
mkdir -p "$OUT"
: > "$OUT/t4.jsonl"
for rate in $RATES; do
  uptime | sed "s/^/bench-t4.sh: load before $rate: /"
  echo "== PyTorch FSDP2, 4 ranks, $rate links"
  link=(--link "$rate")
  [ "$(id -u)" -eq 0 ] || { echo "bench-t4.sh: not root: loopback instead of $rate links" >&2; link=(); }
  OMP_NUM_THREADS=1 "$GW" run -n 4 "${link[@]}" -- "$PYTHON" "$trainer" --steps "$STEPS" "$@" \
    | tee "$OUT/t4-$rate.log" | grep -E '^\[0\] .*"kind": "(result|compute)"' || true
  sed -n 's/^\[0\] \({.*}\)$/\1/p' "$OUT/t4-$rate.log" >> "$OUT/t4.jsonl"
  uptime | sed "s/^/bench-t4.sh: load after $rate: /"
done

"$PYTHON" - "$OUT/t4.jsonl" "$root" "$SAVE_RESULT" "$0 $*" <<'PY'
import json, os, platform, subprocess, sys, time
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
root, save, command = sys.argv[2], sys.argv[3] == "1", sys.argv[4]
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
table = "\n".join(lines)
print(table)
if save:
    def sh(*a):
        try:
            return subprocess.run(a, cwd=root, capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""
    commit = sh("git", "rev-parse", "HEAD") + ("-dirty" if sh("git", "status", "--porcelain", "--untracked-files=no") else "")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    result = {"name": "T4", "machine": {"cpu": cpu, "cores": os.cpu_count(), "memory_bytes": mem,
                                        "kernel": platform.release()},
              "command": command, "commit": commit, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "table": table, "rows": rows}
    os.makedirs(os.path.join(root, "bench", "results"), exist_ok=True)
    with open(os.path.join(root, "bench", "results", "T4.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print("bench-t4.sh: wrote bench/results/T4.json")
PY
