#!/usr/bin/env bash
# Validation of the cost model (docs/cost-model.md): runs bench P5 with the model's predictions at each
# link rate and rank count, P7 (two-level, nodes of 2 ranks) at each rate and P4 (every rank on this host)
# once, each point with a model calibrated on this machine just before it (half a minute: a shared VM's
# speed drifts by a quarter within minutes), and prints Markdown tables of predicted against measured
# time with the median and worst absolute error. Needs root (network namespaces) and a build.
# Every P5 and P7 point is predicted two ways: informed (the links' rate, all-to-all rate and σ the suite
# measured in the same run) and by the operator's path (the point's fresh calibration and the link's
# nominal rate only, with what the model's delivery says TCP delivers of it): `nominal_error`, reported
# beside.
# Points of a few to a few hundred ms (10 Gbit/s links, P4) take FAST_REPS repetitions: on a shared
# 2-core VM their repetitions vary by a third and more, where the slow links' seconds-long ones agree.
# Points whose launches take seconds (1 and 10 Gbit/s links, P4) run in LAUNCHES launches, each with a
# calibration of its own, the launches of a point minutes apart (every point's first launch, then every
# point's second, ...): between launches the same allreduce's time moves by a fifth and more, and so
# does the plain transfer's CPU per byte at 10 Gbit/s (with where its two ends run), for minutes at a
# time. A point's row is its launch with the median error (each launch predicts from its own inputs);
# every launch's error is printed beside.
#   RATES="100mbit 1gbit 10gbit" RANKS="2 4 8" BYTES=25000000 REPS=3 FAST_REPS=7 LAUNCHES=3 \
#     SUITES="P5 P7 P4" scripts/validate-cost-model.sh [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gw=${GW:-$root/build/bin/gradwire}
out=${1:-$root/validate-out}
rates=${RATES:-100mbit 1gbit 10gbit}
ranks=${RANKS:-2 4 8}
bytes=${BYTES:-25000000}
reps=${REPS:-3}
fast_reps=${FAST_REPS:-7}
reps_at() { [ "$1" = 10gbit ] && echo "$fast_reps" || echo "$reps"; }  # RATE: repetitions there
launches=${LAUNCHES:-3}
launches_at() { [ "$1" = 1gbit ] || [ "$1" = 10gbit ] || [ "$1" = P4 ] && echo "$launches" || echo 1; }  # RATE
suites=${SUITES:-P5 P7 P4}
mkdir -p "$out"
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
# Waits (at most QUIET_S seconds, a minute by default) until the machine is quiet: under 5 % of its cores busy over a second. The
# ranks, peers and namespaces of the previous point take seconds to go; a calibration beside them
# measured the codecs and the sum half again as slow as the point itself then ran.
quiet() {
  local i a b
  for i in $(seq "${QUIET_S:-60}"); do
    a=($(busy_ticks)); sleep 1; b=($(busy_ticks))
    (( (b[0] - a[0]) * 20 < (b[1] - a[1]) )) && return 0
  done
  echo "the machine stayed busy; calibrating anyway" >&2
}
model() {  # POINT: a model calibrated now for this point (kept, so a rerun of the point reuses it)
  [ -f "$out/model-$1.toml" ] || { quiet; "$gw" calibrate -o "$out/model-$1.toml" > "$out/calibrate-$1.txt"; }
  echo "$out/model-$1.toml"
}
wants() { [[ " $suites " == *" $1 "* ]]; }
# A run whose peer failed to start (Open MPI's daemons now and then cannot connect across the namespaces)
# is run once more before its point is left out.
twice() {  # OUT CMD...: CMD's output into OUT
  local o="$1"
  shift
  "$@" > "$o" || { echo "failed; once more" >&2; "$@" > "$o"; }
}
once() {  # OUT CMD...: CMD's output into OUT
  local o="$1"
  shift
  "$@" > "$o"
}
# Launch $k of POINT (its file and model named after it, with the launch's tag), if the launches of WHEN
# (a rate, or P4) reach k and the launch has no file yet: RUNNER (once or twice) runs `gradwire bench
# ARGS... --model ... --json`.
launch() {  # POINT WHEN RUNNER DESCRIPTION ARGS...
  local point=$1 when=$2 runner=$3 what=$4
  shift 4
  [ "$k" -le "$(launches_at "$when")" ] || return 0
  local f="$out/$point$tag.jsonl"
  [ -s "$f" ] && return 0
  echo "$what, launch $k (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$out/launches.txt" >&2
  "$runner" "$f.tmp" "$gw" bench "$@" --model "$(model "$point$tag")" --json && mv "$f.tmp" "$f"
}
for k in $(seq "$launches"); do
  tag=$([ "$k" = 1 ] || echo "-L$k")  # launch 1 keeps the plain names
  if wants P5; then
    for n in $ranks; do
      for rate in $rates; do
        launch "p5-$n-$rate" "$rate" twice "P5: $n ranks at $rate" --suite P5 --link "$rate" --ranks "$n" \
          --bytes "$bytes" --repetitions "$(reps_at "$rate")"
      done
    done
  fi
  if wants P7; then
    for rate in $rates; do
      launch "p7-$rate" "$rate" twice "P7: 2x2 and 4x2 at $rate" --suite P7 --link "$rate" \
        --repetitions "$(reps_at "$rate")"
    done
  fi
  if wants P4; then
    launch p4 P4 once "P4: 2 and 4 ranks on this host" --suite P4 --repetitions "$fast_reps"
  fi
done
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, os, statistics, sys
d = sys.argv[1]
order = {"100mbit": 0, "1gbit": 1, "10gbit": 2}

def merged(runs):
    """One point's launches as one row: the launch whose error is the median (the lower of the middle two
    for an even count; each launch's prediction follows its own launch's machine, so its error is the
    figure to take the median of), with every launch's error beside (launch_errors)."""
    errors = [x["error"] for x in runs]
    j = dict(next(x for x in runs if x["error"] == statistics.median_low(errors)))
    j["launch_errors"] = errors
    if "nominal_error" in j:
        nominal = [x["nominal_error"] for x in runs]
        j["nominal_error"] = statistics.median_low(nominal)
        j["nominal_launch_errors"] = nominal
    if "calibrated_error" in j:
        calibrated = [x["calibrated_error"] for x in runs]
        j["calibrated_error"] = statistics.median_low(calibrated)
        j["calibrated_predicted_ms"] = j["ours"] * (1 + j["calibrated_error"])
        j["calibrated_launch_errors"] = calibrated
    return j

def load(pattern):  # the points of the files matching pattern, each merged over its launches
    points = {}
    for f in sorted(glob.glob(d + "/" + pattern)):
        for line in open(f):
            j = json.loads(line)
            if "predicted_ms" in j:
                points.setdefault(j["case"], []).append(j)
    return [merged(runs) for runs in points.values()]

def launch_column(j):  # each launch's error, where there was more than one
    e = j["launch_errors"]
    return " ".join(f"{100 * x:+.0f}" for x in e) if len(e) > 1 else ""

def operator(rows):  # the rows as the operator's path predicted them (nominal rates only)
    return [dict(j, error=j["nominal_error"], launch_errors=j["nominal_launch_errors"]) for j in rows
            if "nominal_error" in j]

def summary(title, groups):
    print(f"\n| {title} | points | median \\|error\\| | worst | within 10 % | within 25 % | worst launch |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in groups:
        e = [abs(j["error"]) for j in rows]
        if e:
            single = max(abs(x) for j in rows for x in j["launch_errors"])
            print(f"| {name} | {len(e)} | {100 * statistics.median(e):.0f} % | {100 * max(e):.0f} % | "
                  f"{sum(x <= 0.1 for x in e)} | {sum(x <= 0.25 for x in e)} | {100 * single:.0f} % |")

p5 = load("p5-*.jsonl")
p5.sort(key=lambda j: (order.get(j["link"], 9), j["ranks"]))
if p5:
    print("### P5: one rank per link\n")
    print("| link | ranks | codec | measured ms | predicted ms | error | operator's path ms | error | link σ ns/B | "
          "gloo ms | MPI ms | ratio (best peer) | of_ideal | launches |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for j in p5:
        print(f"| {j['link']} | {j['ranks']} | {j['case'].split()[0]} | {j['ours']:.1f} | {j['predicted_ms']:.1f} | "
              f"{100 * j['error']:+.0f} % | {j['ours'] * (1 + j.get('nominal_error', float('nan'))):.1f} | "
              f"{100 * j.get('nominal_error', float('nan')):+.0f} % | {j.get('link_cpu_ns_per_byte', 0):.2f} | "
              f"{j.get('gloo_ms', float('nan')):.1f} | {j['mpi_ms']:.1f} | "
              f"{j['ratio']:.2f} ({j['peer_name']}) | {j.get('of_ideal', 0):.2f} | {launch_column(j)} |")
    summary("P5 links", [(l, [j for j in p5 if j["link"] == l]) for l in sorted({j["link"] for j in p5}, key=lambda l: order.get(l, 9))])
    summary("P5 links, operator's path", [(l, operator([j for j in p5 if j["link"] == l])) for l in sorted({j["link"] for j in p5}, key=lambda l: order.get(l, 9))])

p7 = load("p7-*.jsonl")
p7.sort(key=lambda j: (order.get(j["link"], 9), j["case"].split()[-2], j["case"]))
if p7:
    print("\n### P7: nodes of 2 ranks, 100 MB\n")
    print("| link | nodes | case | measured ms | predicted ms | error | operator's path error | uplink MB/s | link σ ns/B | launches |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for j in p7:
        words = j["case"].split()
        print(f"| {j['link']} | {words[-2]} | {' '.join(words[:-2])} | {j['ours']:.1f} | {j['predicted_ms']:.1f} | "
              f"{100 * j['error']:+.0f} % | {100 * j.get('nominal_error', float('nan')):+.0f} % | "
              f"{j['link_bytes_per_s'] / 1e6:.0f} | {j['link_cpu_ns_per_byte']:.2f} | "
              f"{launch_column(j)} |")
    summary("P7 links", [(l, [j for j in p7 if j["link"] == l]) for l in sorted({j["link"] for j in p7}, key=lambda l: order.get(l, 9))])
    summary("P7 links, operator's path", [(l, operator([j for j in p7 if j["link"] == l])) for l in sorted({j["link"] for j in p7}, key=lambda l: order.get(l, 9))])

p4 = load("p4*.jsonl")
if p4:
    print("\n### P4: every rank on this host (shared memory), uncompressed\n")
    print("| case | measured ms | predicted ms | error | from the calibration alone | launches |")
    print("|---|---|---|---|---|---|")
    for j in p4:
        alone = f"{j['calibrated_predicted_ms']:.3f} ms, {100 * j['calibrated_error']:+.0f} %" if "calibrated_error" in j else ""
        print(f"| {j['case']} | {j['ours']:.3f} | {j['predicted_ms']:.3f} | {100 * j['error']:+.0f} % | {alone} | "
              f"{launch_column(j)} |")
    summary("P4", [("all sizes", p4), ("1 MiB and up", [j for j in p4 if "target" in j]),
                   ("from the calibration alone", [dict(j, error=j["calibrated_error"],
                                                        launch_errors=j["calibrated_launch_errors"])
                                                   for j in p4 if "calibrated_error" in j])])

launches = os.path.join(d, "launches.txt")
if os.path.exists(launches):  # the machine's load (1-minute average) as each launch began
    print("\nLaunches, with the machine's load as each began:\n")
    print("```text")
    print(open(launches).read().rstrip())
    print("```")

summary("all suites", [("P5", p5), ("P7", p7), ("P4", p4), ("all", p5 + p7 + p4),
                       ("P5, operator's path", operator(p5)), ("P7, operator's path", operator(p7)),
                       ("P5 and P7, operator's path", operator(p5 + p7))])
PY
# The summary as bench/results/validation.json, with this machine, the command and the commit (docs/benchmarks.md,
# "Result files"); SAVE_RESULT=0 keeps it out.
if [ "${SAVE_RESULT:-1}" != 0 ]; then
  python3 "$root/scripts/bench-report.py" save validation --command "RATES=\"$rates\" RANKS=\"$ranks\" BYTES=$bytes REPS=$reps FAST_REPS=$fast_reps LAUNCHES=$launches SUITES=\"$suites\" scripts/validate-cost-model.sh" < "$out/summary.txt"
fi
