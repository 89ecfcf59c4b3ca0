#!/usr/bin/env python3
"""F1: elastic membership under faults (docs/elastic.md).

4 ranks of tests/elastic/elastic_rank (a gw_sync_step loop, int8 with error feedback, [elastic] enabled)
under `gradwire run`, every scenario repeated REPEAT times, every outcome reported:

  kill    SIGKILL one of ranks 1..3 at a random step (--elastic=1: it is started again and joins)
  root    the same for rank 0
  two     SIGKILL two ranks at once: 2 of 4 is no majority, the survivors must end with the error
  stop    SIGSTOP one rank past the timeout, SIGCONT once the others moved on: it must be refused
  churn   SIGKILL a random rank every CHURN_EVERY seconds for CHURN_SECONDS (--elastic=50)
  train   `gradwire train --elastic 1` (int8, one epoch of --train-images at batch 64): one of ranks 1..3
          killed at a random step; the final accuracy against an unfailed run of the same steps, and
          whether the 4 members (the restarted one joined) end with the same parameters

Figures: seconds from the kill to the survivors' first completed step after the change (the slowest
survivor), steps undone (the most any survivor had to redo), seconds from the kill to the restarted
process's admission, and whether all ranks ended with the same parameters (a hash).

    bench/run.py F1 [--repeat 10] [--tls tcp] [--link 1gbit]     (this program, its table saved as F1.json;
                                                               --link 1gbit unless given, loopback if not root)
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TIMEOUT_S = 5


def run(args, fault, victims, steps, flags, env_extra, churn=None):
    tag = "f1-%d-%d" % (os.getpid(), random.randrange(1 << 30))
    env = dict(os.environ, UCX_TLS=args.tls, FAULT_TIMEOUT_S=str(TIMEOUT_S), **env_extra)
    cmd = [args.gradwire, "run", "-n", "4"] + flags + (["--link", args.link] if args.link else []) + \
          ["--", args.rank, str(steps), fault, ",".join(map(str, victims)), tag]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    lines, pids, moved = [], {}, set()
    stopped = [None]
    start = time.time()
    kills = [0]

    def churner():
        end = start + churn[1]
        while time.time() < end and p.poll() is None:
            time.sleep(churn[0])
            live = [pid for pid in pids.values() if os.path.exists("/proc/%d" % pid)]
            if live:
                try:
                    os.kill(random.choice(live), signal.SIGKILL)
                    kills[0] += 1
                except ProcessLookupError:
                    pass

    if churn:
        threading.Thread(target=churner, daemon=True).start()
    deadline = time.time() + (churn[1] + 240 if churn else 240)
    for line in p.stdout:
        lines.append(line.rstrip("\n"))
        m = re.match(r"\[(\d+)\] START pid (\d+)", line)
        if m:
            pids[int(m.group(1))] = int(m.group(2))
        m = re.match(r"\[(\d+)\] FAULT stop pid (\d+)", line)
        if m:
            stopped[0] = int(m.group(2))
        m = re.match(r"\[(\d+)\] (CHANGED|EXPECTED-ERROR)", line)
        if m:
            moved.add(int(m.group(1)))
            if stopped[0] and len(moved) >= 3:
                os.kill(stopped[0], signal.SIGCONT)
                stopped[0] = None
        if time.time() > deadline:
            p.kill()
    p.wait()
    return p.returncode, lines, kills[0]


def parse(lines):
    ranks = {}
    for line in lines:
        m = re.match(r"\[(\d+)\] (.*)", line)
        if not m:
            continue
        r, text = int(m.group(1)), m.group(2)
        d = ranks.setdefault(r, {"changes": 0})
        if (f := re.match(r"FAULT \S+ pid \d+ at ([\d.]+)", text)):
            d["fault_at"] = float(f.group(1))
        elif (f := re.match(r"CHANGED epoch \d+ rank \d+ size \d+ steps \d+ at ([\d.]+) lost (\d+)", text)):
            d["changes"] += 1
            d.setdefault("lost", 0)
            d["lost"] = max(d["lost"], int(f.group(2)))
        elif (f := re.match(r"RESUMED at ([\d.]+)", text)):
            d.setdefault("resumed_at", float(f.group(1)))
        elif (f := re.match(r"JOINED .* at ([\d.]+)", text)):
            d["joined_at"] = float(f.group(1))
        elif (f := re.match(r"EXPECTED-ERROR (\S+) at [\d.]+ step \d+: (.*)", text)):
            d["error"] = f.group(1)
            d["message"] = f.group(2)
        elif (f := re.match(r"DONE steps (\d+) rank \d+ size (\d+) epoch \d+ hash (\S+)", text)):
            d["hash"] = f.group(3)
            d["size"] = int(f.group(2))
        elif text.startswith("FAIL"):
            d["fail"] = text
    return ranks


def scenario(args, name):
    steps = 150
    env = {"ELASTIC_STEP_SLEEP_MS": "20", "FAULT_AT": str(random.randint(2, 8)),
           "FAULT_DELAY_MS": str(random.randint(0, 40))}
    if name == "kill":
        victims = [random.randint(1, 3)]
        code, lines, _ = run(args, "kill", victims, steps, ["--elastic=1"], env)
    elif name == "root":
        victims = [0]
        code, lines, _ = run(args, "kill", victims, steps, ["--elastic=1"], env)
    elif name == "two":
        victims = random.sample(range(4), 2)
        code, lines, _ = run(args, "kill", victims, steps, ["--keep-going"], env)
    elif name == "stop":
        victims = [random.randint(0, 3)]
        env["ELASTIC_STEP_SLEEP_MS"] = "25"
        code, lines, _ = run(args, "stop", victims, 400, ["--keep-going"], env)
    else:  # churn
        victims = []
        env["ELASTIC_STEP_SLEEP_MS"] = "25"
        code, lines, kills = run(args, "none", [], int((args.churn_seconds + 20) / 0.03), ["--elastic=50"], env,
                                 churn=(args.churn_every, args.churn_seconds))
    ranks = parse(lines)
    fault_at = min([d["fault_at"] for d in ranks.values() if "fault_at" in d] or [0])
    survivors = [r for r in range(4) if r not in victims]
    hashes = {ranks.get(r, {}).get("hash") for r in range(4) if ranks.get(r, {}).get("hash")}
    out = {"victims": victims, "exit": code}
    if name in ("kill", "root"):
        res = [ranks.get(r, {}).get("resumed_at") for r in survivors]
        out["resume_s"] = max(res) - fault_at if all(res) else None
        out["lost"] = max(ranks.get(r, {}).get("lost", 0) for r in survivors)
        j = ranks.get(victims[0], {}).get("joined_at")
        out["rejoin_s"] = j - fault_at if j else None
        out["ok"] = (len(hashes) == 1 and all("hash" in ranks.get(r, {}) for r in range(4)) and code == 0)
        out["outcome"] = "4 ranks bit-identical" if out["ok"] else "FAILED"
    elif name == "two":
        errs = [ranks.get(r, {}).get("message", "") for r in survivors]
        out["ok"] = all("quorum is lost" in e for e in errs)
        out["outcome"] = "every survivor: quorum lost, clean error" if out["ok"] else "FAILED"
    elif name == "stop":
        v = ranks.get(victims[0], {})
        out["ok"] = (v.get("error") == "GW_ERR_STATE" and "declared dead" in v.get("message", "") and
                     len(hashes) == 1 and all("hash" in ranks.get(r, {}) for r in survivors))
        res = [ranks.get(r, {}).get("resumed_at") for r in survivors]
        out["resume_s"] = max(res) - fault_at if all(res) else None
        out["outcome"] = "refused (GW_ERR_STATE), 3 survivors bit-identical" if out["ok"] else "FAILED"
    else:
        out["kills"] = kills
        out["ok"] = len(hashes) == 1 and all(ranks.get(r, {}).get("hash") for r in range(4)) and code == 0
        out["outcome"] = ("%d kills, 4 ranks bit-identical" % kills) if out["ok"] else "FAILED"
    if not out["ok"]:
        out["tail"] = lines[-15:]
    return out


def train_run(args, kill):
    """`gradwire train` int8 on 4 ranks with --elastic 1, rank kill[0] killed at step kill[1] (None: no
    fault). Returns (exit code, final accuracy or None, the members' (size, step, hash) lines, output)."""
    out = tempfile.mkdtemp(prefix="f1-train-")
    toml = os.path.join(out, "f1.toml")
    with open(toml, "w") as f:
        f.write("[runtime]\ntimeout_s = %d\n" % TIMEOUT_S)
    cmd = [args.gradwire, "train", "--ranks", "4", "--configs", "int8", "--epochs", "1", "--batch", "64",
           "--train-images", str(args.train_images), "--evals-per-epoch", "1", "--elastic", "1", "--config", toml,
           "--out", out] + (["--link", args.link] if args.link else [])
    if kill:
        cmd += ["--kill-rank", str(kill[0]), "--kill-step", str(kill[1])]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, UCX_TLS=args.tls), timeout=900)
    members = re.findall(r"elastic: rank \d+ of (\d+) ended at step (\d+) with parameters fnv1a (\S+)", p.stdout)
    accuracy = None
    try:
        with open(os.path.join(out, "int8.json")) as f:
            accuracy = json.load(f)["curve"][-1]["test_accuracy"]
    except (OSError, ValueError, KeyError, IndexError):
        pass
    shutil.rmtree(out, ignore_errors=True)
    return p.returncode, accuracy, members, p.stdout


def train_scenario(args, baseline):
    """The accuracy scenario: one of ranks 1..3 killed at a random step within the first three quarters of
    the run's (--train-images / 64); the final accuracy against the unfailed run of the same steps
    (`baseline`), and whether the 4 ended identical."""
    victim, step = random.randint(1, 3), random.randint(10, max(11, args.train_images // 64 * 3 // 4))
    code, accuracy, members, text = train_run(args, (victim, step))
    out = {"victims": [victim], "exit": code, "kill_step": step}
    restarted = "starting it again to join the job" in text  # the kill happened (gradwire run says so)
    ok = (code == 0 and accuracy is not None and restarted and len(members) == 4 and
          len({m[2] for m in members}) == 1 and all(m[0] == "4" for m in members))
    if accuracy is not None and baseline is not None:
        out["accuracy_delta"] = 100.0 * (accuracy - baseline)
    out["ok"] = ok
    out["outcome"] = ("killed at step %d: accuracy %.4f vs %.4f unfailed (%+.2f points), 4 ranks identical" %
                      (step, accuracy, baseline, out["accuracy_delta"])) if ok and "accuracy_delta" in out else "FAILED"
    if not ok:
        out["tail"] = text.splitlines()[-15:]
    return out


def fmt(x):
    return "-" if x is None else ("%.2f" % x if isinstance(x, float) else str(x))


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--repeat", type=int, default=10)
    a.add_argument("--churn-repeat", type=int, default=None)
    a.add_argument("--train-repeat", type=int, default=None)
    a.add_argument("--scenarios", default="kill,root,two,stop,churn,train")
    a.add_argument("--tls", default="tcp")
    a.add_argument("--link", default="")
    a.add_argument("--churn-every", type=float, default=5.0)
    a.add_argument("--churn-seconds", type=float, default=60.0)
    a.add_argument("--train-images", type=int, default=12800, help="train: images of the one epoch (batch 64)")
    a.add_argument("--gradwire", default=os.path.join(ROOT, "build/bin/gradwire"))
    a.add_argument("--rank", default=os.path.join(ROOT, "build/bin/elastic_rank"))
    args = a.parse_args()
    random.seed(1)
    load = os.getloadavg()
    print("4 ranks, int8 + error feedback, `[runtime] timeout_s = %d`, UCX %s%s; machine load average %.1f "
          "at the start (shared machine)\n" % (TIMEOUT_S, args.tls, " over --link " + args.link if args.link else
                                                " on loopback", load[0]))
    print("| scenario | runs | ok | kill → survivors' next step (s) | steps undone | kill → rejoined (s) | outcomes |")
    print("|---|---|---|---|---|---|---|")
    failures, train_notes = [], []
    for name in args.scenarios.split(","):
        n = args.churn_repeat if name == "churn" and args.churn_repeat else args.repeat
        if name == "train" and args.train_repeat:
            n = args.train_repeat
        if name == "train":
            code, baseline, members, text = train_run(args, None)
            if baseline is None:
                print("\nFAILED the unfailed train run: %s" % text.splitlines()[-15:], file=sys.stderr)
            rows = [train_scenario(args, baseline) for _ in range(n)]
            deltas = [r["accuracy_delta"] for r in rows if r.get("accuracy_delta") is not None]
            if deltas:
                train_notes.append("train: the unfailed run's final accuracy %.4f; with a kill %+.2f to %+.2f points "
                                   "(mean %+.2f) over %d runs" % (baseline, min(deltas), max(deltas),
                                                                  sum(deltas) / len(deltas), len(deltas)))
        else:
            rows = [scenario(args, name) for _ in range(n)]
        ok = sum(r["ok"] for r in rows)

        def span(key):
            v = [r[key] for r in rows if r.get(key) is not None]
            return "%.2f–%.2f (median %.2f)" % (min(v), max(v), sorted(v)[len(v) // 2]) if v else "-"

        lost = [r["lost"] for r in rows if r.get("lost") is not None]
        outcomes = "; ".join("%s%s" % (r["outcome"], "" if not r.get("victims") else " (victims %s)" %
                                       ",".join(map(str, r["victims"]))) for r in rows)
        print("| %s | %d | %d | %s | %s | %s | %s |" % (name, n, ok, span("resume_s"),
                                                      ("max %d" % max(lost)) if lost else "-", span("rejoin_s"),
                                                      outcomes))
        failures += [(name, r) for r in rows if not r["ok"]]
        sys.stdout.flush()
    for note in train_notes:
        print("\n" + note)
    print("\nmachine load average %.1f at the end" % os.getloadavg()[0])
    for name, r in failures:
        print("\nFAILED %s: %s" % (name, r), file=sys.stderr)


if __name__ == "__main__":
    main()
