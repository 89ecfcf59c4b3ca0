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
# The tables (bench/gwbench/validation.py), printed, kept as $out/summary.txt and as
# bench/results/validation.json with this machine, the command and the commit (docs/benchmarks.md,
# "Result files"); SAVE_RESULT=0 keeps the result file out.
python3 "$root/bench/run.py" --finish validation "$out" --command "RATES=\"$rates\" RANKS=\"$ranks\" BYTES=$bytes REPS=$reps FAST_REPS=$fast_reps LAUNCHES=$launches SUITES=\"$suites\" scripts/validate-cost-model.sh"
