r"""Validation of the cost model (docs/cost-model.md): the tables of predicted against measured time with
the median and worst absolute error, from the output directory of scripts/validate-cost-model.sh (its
launches of `gradwire bench --suite P5/P7/P4 --model ... --json`, one file per point and launch, and
launches.txt with the machine's load as each began). The launches stay in that script (the order of the
points, the quiet wait and the fresh calibration before each are its method); the table is built here.

    bench/run.py --summary validation OUT      the tables again from a run's output directory
"""
import contextlib
import glob
import io
import json
import os
import statistics

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

def load(d, pattern):  # the points of the files matching pattern, each merged over its launches
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


def tables(d):
    """The Markdown tables of the validation from its output directory."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        p5 = load(d, "p5-*.jsonl")
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

        p7 = load(d, "p7-*.jsonl")
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

        p4 = load(d, "p4*.jsonl")
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
    return text.getvalue()


summarize = tables
