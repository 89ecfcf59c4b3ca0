#!/usr/bin/env bash
# Validation of the cost model (docs/cost-model.md): calibrates it on this machine, runs bench P5 with
# its predictions at each link rate and rank count, and prints a Markdown table of predicted against
# measured time with the median and worst absolute error. Needs root (network namespaces) and a build.
#   RATES="100mbit 1gbit 10gbit" RANKS="2 4" BYTES=25000000 REPS=3 scripts/validate-cost-model.sh [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gw=${GW:-$root/build/bin/gradwire}
out=${1:-$root/validate-out}
rates=${RATES:-100mbit 1gbit 10gbit}
ranks=${RANKS:-2 4}
bytes=${BYTES:-25000000}
reps=${REPS:-3}
mkdir -p "$out"
[ -f "$out/model.toml" ] || "$gw" calibrate -o "$out/model.toml" | tee "$out/calibrate.txt"
for n in $ranks; do
  for rate in $rates; do
    f="$out/p5-$n-$rate.jsonl"
    [ -s "$f" ] && continue
    echo "P5: $n ranks at $rate (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    "$gw" bench --suite P5 --link "$rate" --ranks "$n" --bytes "$bytes" --repetitions "$reps" \
      --model "$out/model.toml" --json > "$f.tmp" && mv "$f.tmp" "$f"
  done
done
python3 - "$out" <<'PY'
import glob, json, statistics, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/p5-*.jsonl")):
    for line in open(f):
        j = json.loads(line)
        if "predicted_ms" in j:
            rows.append(j)
print("| link | ranks | codec | measured ms | predicted ms | error | link σ ns/B | gloo ms | MPI ms | ratio (best peer) | of_ideal |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
order = {"100mbit": 0, "1gbit": 1, "10gbit": 2}
rows.sort(key=lambda j: (order.get(j["link"], 9), j["ranks"]))
for j in rows:
    print(f"| {j['link']} | {j['ranks']} | {j['case'].split()[0]} | {j['ours']:.1f} | {j['predicted_ms']:.1f} | "
          f"{100 * j['error']:+.0f} % | {j.get('link_cpu_ns_per_byte', 0):.2f} | "
          f"{j.get('gloo_ms', float('nan')):.1f} | {j['mpi_ms']:.1f} | "
          f"{j['ratio']:.2f} ({j['peer_name']}) | {j.get('of_ideal', 0):.2f} |")
errs = [abs(j["error"]) for j in rows]
if errs:
    print(f"\n{len(errs)} points: median |error| {100 * statistics.median(errs):.0f} %, worst {100 * max(errs):.0f} %")
    print("\n| links | points | median \\|error\\| | worst | within 10 % | within 25 % |\n|---|---|---|---|---|---|")
    for link in sorted({j["link"] for j in rows}, key=lambda l: order.get(l, 9)):
        e = [abs(j["error"]) for j in rows if j["link"] == link]
        print(f"| {link} | {len(e)} | {100 * statistics.median(e):.0f} % | {100 * max(e):.0f} % | "
              f"{sum(x <= 0.1 for x in e)} | {sum(x <= 0.25 for x in e)} |")
PY
