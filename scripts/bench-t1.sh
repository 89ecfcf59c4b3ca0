#!/usr/bin/env bash
# Benchmark T1 (docs/benchmarks.md): `gradwire train` on 4 ranks behind emulated links (default 1gbit),
# every configuration, and the PyTorch DDP peer (gloo; hooks none, fp16, powersgd) training the same MLP
# with the same recipe on the same links; then one table: final test accuracy, time to 85 % and how much
# sooner than uncompressed gradwire (ratio > 1: sooner), bytes sent per rank.
#
#   scripts/bench-t1.sh [gradwire train options...]     e.g. --epochs 3 --configs none,int8,topk-ef
#
# Environment: GW (the gradwire command; default build/bin/gradwire), RATE (1gbit), OUT (t1-out),
# EPOCHS (5), HOOKS (none,fp16,powersgd), PYTHON (/usr/bin/python3, Debian's python3-torch).
# Needs root for the cluster; without it both sides run on loopback and say so.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GW="${GW:-$root/build/bin/gradwire}"
RATE="${RATE:-1gbit}"
OUT="${OUT:-t1-out}"
EPOCHS="${EPOCHS:-5}"
HOOKS="${HOOKS:-none,fp16,powersgd}"
PYTHON="${PYTHON:-/usr/bin/python3}"
peer="$root/runtime/cli/bench/peers/torch_ddp.py"
[ -x "$GW" ] || { echo "bench-t1.sh: $GW is not built (scripts/build.sh, or set GW)" >&2; exit 1; }
"$PYTHON" -c "import torch" 2>/dev/null || { echo "bench-t1.sh: $PYTHON has no torch (Debian python3-torch)" >&2; exit 1; }
mkdir -p "$OUT"
uptime | sed 's/^/bench-t1.sh: load before: /'

echo "== gradwire train, 4 ranks, $RATE links"
"$GW" train --ranks 4 --link "$RATE" --epochs "$EPOCHS" --out "$OUT/gradwire" "$@"

echo "== PyTorch DDP (gloo), 4 ranks, $RATE links, hooks $HOOKS"
# gradwire run places the ranks (and sets MASTER_ADDR, GLOO_SOCKET_IFNAME in the cluster); torchrun's
# variables come from gradwire run's.
"$GW" run -n 4 --link "$RATE" -- sh -c \
  'RANK=$GW_RANK WORLD_SIZE=$GW_WORLD_SIZE MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=$GW_ROOT_PORT exec "$0" "$@"' \
  "$PYTHON" "$peer" --epochs "$EPOCHS" --hooks "$HOOKS" | tee "$OUT/torch.log" | grep -E '^\[0\] .*"kind": "result"' || true
uptime | sed 's/^/bench-t1.sh: load after: /'

"$PYTHON" - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, sys
out = sys.argv[1]
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
PY
# The summary as bench/results/T1.json, with this machine, the command and the commit (docs/benchmarks.md,
# "Result files"); SAVE_RESULT=0 keeps it out.
if [ "${SAVE_RESULT:-1}" != 0 ]; then
  python3 "$root/scripts/bench-report.py" save T1 --command "RATE=$RATE EPOCHS=$EPOCHS HOOKS=$HOOKS scripts/bench-t1.sh $*" < "$OUT/summary.txt"
fi
