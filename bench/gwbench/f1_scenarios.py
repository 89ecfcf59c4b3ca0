#!/usr/bin/env python3
"""F1: elastic membership under faults (docs/elastic.md).

4 ranks of tests/elastic/elastic_rank (a gw_sync_step loop, int8 with error feedback, [elastic] enabled)
under `gradwire run`, every scenario repeated REPEAT times, every outcome reported:

  kill    SIGKILL one of ranks 1..3 at a random step (--elastic=1: it is started again and joins)
  root    the same for rank 0
  two     SIGKILL two ranks at once: 2 of 4 is no majority, the survivors must end with the error
  stop    SIGSTOP one rank past the timeout, SIGCONT once the others moved on: it must be refused
  churn   SIGKILL a random rank every CHURN_EVERY seconds for CHURN_SECONDS (--elastic=50)

Figures: seconds from the kill to the survivors' first completed step after the change (the slowest
survivor), steps undone (the most any survivor had to redo), seconds from the kill to the restarted
process's admission, and whether all ranks ended with the same parameters (a hash).

    bench/run.py F1 [--repeat 10] [--tls tcp] [--link 1gbit]     (this program, its table saved as F1.json)
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
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


def fmt(x):
    return "-" if x is None else ("%.2f" % x if isinstance(x, float) else str(x))


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--repeat", type=int, default=10)
    a.add_argument("--churn-repeat", type=int, default=None)
    a.add_argument("--scenarios", default="kill,root,two,stop,churn")
    a.add_argument("--tls", default="tcp")
    a.add_argument("--link", default="")
    a.add_argument("--churn-every", type=float, default=5.0)
    a.add_argument("--churn-seconds", type=float, default=60.0)
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
    failures = []
    for name in args.scenarios.split(","):
        n = args.churn_repeat if name == "churn" and args.churn_repeat else args.repeat
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
    print("\nmachine load average %.1f at the end" % os.getloadavg()[0])
    for name, r in failures:
        print("\nFAILED %s: %s" % (name, r), file=sys.stderr)


if __name__ == "__main__":
    main()
