#!/usr/bin/env bash
# Benchmark C1 (docs/cache.md): the data cache against slow storage. `gradwire train` on 4 ranks reads
# Fashion-MNIST through emulated slow storage (--slow-storage: a read takes at least bytes / RATE; the
# time the real read did not take is slept) three ways: the whole training set in every rank's memory
# (the default path), --cache (each rank reads and holds 1/4 and draws batches through gw_cache_get), and
# --cache-node-shared. Table: the load from storage, epoch 1 (load + training), the later epochs, the
# training-set bytes each rank holds, peak resident memory of rank 0, final accuracy. The three modes run
# in turn REPEAT times; each time figure is the median of the runs, with its spread (max - min).
#
#   scripts/bench-c1.sh
#
# Environment: GW (the gradwire command; default build/bin/gradwire), RATE (MB/s, 20), EPOCHS (3),
# RANKS (4), REPEAT (3), HIDDEN (the MLP's hidden layers, 256,128), OUT (c1-out), PYTHON (python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GW="${GW:-$root/build/bin/gradwire}"
RATE="${RATE:-20}"
EPOCHS="${EPOCHS:-3}"
RANKS="${RANKS:-4}"
REPEAT="${REPEAT:-3}"
HIDDEN="${HIDDEN:-256,128}"
OUT="${OUT:-c1-out}"
PYTHON="${PYTHON:-python3}"
[ -x "$GW" ] || { echo "bench-c1.sh: $GW is not built (scripts/build.sh, or set GW)" >&2; exit 1; }
mkdir -p "$OUT"
uptime | sed 's/^/bench-c1.sh: load before: /'
for rep in $(seq 1 "$REPEAT"); do
  for mode in memory cache node-shared; do
    case $mode in
      memory) flags=() ;;
      cache) flags=(--cache) ;;
      node-shared) flags=(--cache-node-shared) ;;
    esac
    echo "== $mode, run $rep of $REPEAT"
    "$GW" train --ranks "$RANKS" --epochs "$EPOCHS" --batch 128 --hidden "$HIDDEN" --evals-per-epoch 1 --configs none \
      --slow-storage "$RATE" "${flags[@]}" --out "$OUT/$mode-$rep" | grep -E '^none ' || true
  done
done
uptime | sed 's/^/bench-c1.sh: load after: /'

"$PYTHON" - "$OUT" "$RATE" "$RANKS" "$REPEAT" "$HIDDEN" <<'PY' | tee "$OUT/summary.txt"
import json, os, statistics, sys
out, rate, ranks, repeat, hidden = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
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
PY
# The summary as bench/results/C1.json, with this machine, the command and the commit (docs/benchmarks.md,
# "Result files"); SAVE_RESULT=0 keeps it out.
if [ "${SAVE_RESULT:-1}" != 0 ]; then
  python3 "$root/scripts/bench-report.py" save C1 --command "RATE=$RATE EPOCHS=$EPOCHS RANKS=$RANKS REPEAT=$REPEAT HIDDEN=$HIDDEN scripts/bench-c1.sh $*" < "$OUT/summary.txt"
fi
