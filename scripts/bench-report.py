#!/usr/bin/env python3
"""Benchmark figures in the documents come from the result files in bench/results/, never by hand.

    scripts/bench-report.py                  rewrite every generated block in the documents
    scripts/bench-report.py --check          exit 1, with a diff, where a block differs from what it would write
    scripts/bench-report.py save NAME [--command TEXT] < SUMMARY
                                             keep a script's summary (a Markdown table, or text) as
                                             bench/results/NAME.json (bench/run.py's harnesses do,
                                             through save_summary, unless SAVE_RESULT=0)
    scripts/bench-report.py record NAME [--tail N] -- COMMAND ARGS...
                                             run COMMAND and keep its output (its last N lines) likewise
    scripts/bench-report.py --self-test

A generated block sits between two markers in README.md, docs/*.md or bindings/*/README.md:

    <!-- results:P1 begin -->
    (written by this script from bench/results/P1.json)
    <!-- results:P1 end -->

A result file is one JSON object with the run's `machine` (cpu, cores, memory_bytes, kernel), `command`
(its argv), `commit` (the source tree's, "-dirty" when it had changes) and `time`, and one of:
`results` (a list of `gradwire bench` results: suite, case, ours, peer, unit, peer_name, ratio, ...; written
by `gradwire bench --out FILE`), `table` (Markdown written by a script, kept as it is) or `output` (a
command's output, shown as a code block). Each suite and configuration keeps only its newest file; git
history keeps the older ones. A block whose file is not committed says so and gives the command that
writes it.
"""
import argparse
import difflib
import glob
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULTS = os.path.join(ROOT, "bench", "results")
BLOCK = re.compile(r"(<!-- results:(\S+) begin -->\n)(.*?)(<!-- results:\2 end -->)", re.S)

# The command that writes each result file, for a block whose file is not committed yet.
PRODUCERS = {
    **{f"P{i}": f"build/bin/gradwire bench --suite P{i} --out bench/results/P{i}.json" for i in range(1, 8)},
    "T1": "bench/run.py T1 (as root: the emulated cluster)",
    "T2": "bench/run.py T2 (as root)",
    "T5": "bench/run.py T5 (as root)",
    "T3": "bench/run.py T3 (as root)",
    "C1": "bench/run.py C1",
    "P9": "bench/run.py P9",
    "F1": "bench/run.py F1",
    "validation": "scripts/validate-cost-model.sh (as root)",
    "train": ("scripts/bench-report.py record train-short --tail 12 -- build/bin/gradwire train --epochs 1 "
              "--train-images 6000 --test-images 1000 --configs none,int8"),
    "ctest": "scripts/bench-report.py record ctest-docs --tail 12 -- ctest --test-dir build -L docs",
    "simulate": "scripts/bench-report.py record simulate -- build/bin/gradwire simulate ...",
    "calibrate": "scripts/bench-report.py record calibrate --tail 30 -- build/bin/gradwire calibrate ...",
}


def documents(root):
    return ([os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md"))) +
            sorted(glob.glob(os.path.join(root, "bindings", "*", "README.md"))))


def machine():
    def field(path, key):
        try:
            for line in open(path):
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return ""
    mem = field("/proc/meminfo", "MemTotal")
    return {"cpu": field("/proc/cpuinfo", "model name"), "cores": os.cpu_count(),
            "memory_bytes": int(mem.split()[0]) * 1024 if mem else 0,
            "kernel": f"{platform.system()} {platform.release()}"}


def commit(root=ROOT):
    if os.environ.get("GRADWIRE_COMMIT"):
        return os.environ["GRADWIRE_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD", "--"]).returncode != 0
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_info(command):
    return {"machine": machine(), "command": command, "commit": commit(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def number(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if x == 0:
        return "0"
    return f"{x:.4g}" if abs(x) >= 1e-3 else f"{x:.3e}"


def shown_command(argv):
    if isinstance(argv, str):
        return argv
    words = list(argv)
    if words and os.path.isabs(words[0]):
        # The program by its place in the repository when it is inside it, else by its name.
        rel = os.path.relpath(words[0], ROOT)
        words[0] = rel if not rel.startswith("..") else os.path.basename(words[0])
    return " ".join(w if re.fullmatch(r"[\w./,:=+-]+", w) else "'" + w.replace("'", "'\\''") + "'" for w in words)


def short_commit(commit):
    """The commit's first 12 hex digits, keeping a "-dirty" mark."""
    commit = str(commit)
    return commit[:12] + ("-dirty" if commit.endswith("-dirty") and len(commit) > 18 else "")


def provenance(key, doc):
    m = doc.get("machine", {})
    gib = m.get("memory_bytes", 0) / 2**30
    where = f"{m.get('cpu') or 'unknown CPU'}, {m.get('cores', '?')} cores, {gib:.0f} GiB, {m.get('kernel', '?')}"
    return (f"From `bench/results/{key}.json`, written by `{shown_command(doc.get('command', '?'))}` at commit "
            f"`{short_commit(doc.get('commit', 'unknown'))}` on {where}.")


# Extras shown as columns where any result of a file has them: the noise, a selection's quality, where a
# point ran, the cost model's prediction.
EXTRA_COLUMNS = ["spread", "recall", "link", "ranks", "predicted_ms", "error", "target"]


def render_results(results):
    extras = [k for k in EXTRA_COLUMNS if any(k in r for r in results)]
    head = "| suite | case | ours | peer | unit | peer name | ratio |" + "".join(f" {k} |" for k in extras)
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        row = [r.get("suite", ""), r.get("case", ""), number(r.get("ours", "")), number(r.get("peer", "")),
               r.get("unit", ""), r.get("peer_name", ""), number(r.get("ratio", ""))]
        for k in extras:
            v = r.get(k, "")
            row.append(v if isinstance(v, str) else number(v) if isinstance(v, (int, float)) else json.dumps(v))
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines)


def render(key, results_dir=RESULTS):
    path = os.path.join(results_dir, key + ".json")
    if not os.path.exists(path):
        how = PRODUCERS.get(key.split("-")[0])
        return (f"No result is committed yet (`bench/results/{key}.json`)." +
                (f" It is written by `{how}`;" if how else "") +
                " then `python3 scripts/bench-report.py` puts it here.\n")
    doc = json.load(open(path))
    if "results" in doc:
        body = render_results(doc["results"])
    elif "table" in doc:
        body = doc["table"].strip()
    elif "output" in doc:
        # A program's own output may stamp when it measured: the result file keeps that, the document
        # describes the system and shows no dates.
        output = re.sub(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "(time in the result file)", doc["output"])
        body = "```text\n" + output.strip("\n") + "\n```"
    else:
        raise SystemExit(f"{path}: no results, table or output")
    return provenance(key, doc) + "\n\n" + body + "\n"


def regenerate(text, results_dir=RESULTS):
    return BLOCK.sub(lambda m: m.group(1) + render(m.group(2), results_dir) + m.group(4), text)


def update(check, results_dir=RESULTS, root=ROOT, paths=None):
    stale = 0
    for path in paths or documents(root):
        old = open(path).read()
        new = regenerate(old, results_dir)
        if new == old:
            continue
        rel = os.path.relpath(path, root)
        if check:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), rel,
                                                       rel + " (generated)"))
        else:
            open(path, "w").write(new)
            print("updated", rel)
    if check and stale:
        print(f"\n{stale} document(s) differ from bench/results/: run python3 scripts/bench-report.py")
    return 1 if stale else 0


def save(name, doc):
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print("wrote", os.path.relpath(path, ROOT))


def save_summary(name, command, text, **extra):
    """A harness's summary as bench/results/NAME.json, with the run's machine, command and commit: a
    Markdown table is kept as one (`table`), anything else shown as its text (`output`); `extra` keys
    (a harness's raw rows) are kept beside. bench/gwbench's harnesses call it, as `save` does."""
    doc = run_info(command.strip() or "?")
    doc["table" if text.lstrip().startswith("|") or "\n|" in text[:200] else "output"] = text
    doc.update(extra)
    save(name, doc)


def self_test():
    ok = True
    with tempfile.TemporaryDirectory() as d:
        json.dump({"machine": {"cpu": "CPU", "cores": 2, "memory_bytes": 2**33, "kernel": "Linux 6"},
                   "command": ["/x/gradwire", "bench", "--suite", "P1"], "commit": "abc", "time": "t",
                   "results": [{"suite": "P1", "case": "int8", "ours": 1.23456, "peer": 2, "unit": "GB/s",
                                "peer_name": "sum", "ratio": 0.6172}]}, open(os.path.join(d, "P1.json"), "w"))
        doc = os.path.join(d, "doc.md")
        open(doc, "w").write("x\n<!-- results:P1 begin -->\n| P1 | int8 | 9.99 |\n<!-- results:P1 end -->\n"
                             "<!-- results:P5 begin -->\n<!-- results:P5 end -->\n")
        if update(True, d, d, [doc]) != 1:
            print("self-test: a hand-edited block passed the check")
            ok = False
        update(False, d, d, [doc])
        text = open(doc).read()
        if "1.235" not in text or "No result is committed yet" not in text or "bench --suite P5" not in text:
            print("self-test: the generated blocks are not as expected:\n" + text)
            ok = False
        if update(True, d, d, [doc]) != 0:
            print("self-test: a freshly generated block failed the check")
            ok = False
    print("self-test", "passed" if ok else "FAILED")
    return 0 if ok else 1


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["record"]:
        p = argparse.ArgumentParser(prog="bench-report.py record", usage="%(prog)s NAME [--tail N] -- COMMAND...")
        p.add_argument("name")
        p.add_argument("--tail", type=int, default=0)
        if "--" not in argv:
            p.error("the command follows --")
        split = argv.index("--")
        a = p.parse_args(argv[1:split])
        command = argv[split + 1:]
        r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = r.stdout
        if a.tail:
            out = "\n".join(out.rstrip("\n").split("\n")[-a.tail:]) + "\n"
        sys.stdout.write(out)
        doc = run_info(command)
        doc["exit_status"] = r.returncode
        doc["output"] = out
        save(a.name, doc)
        return r.returncode
    if argv[:1] == ["save"]:
        p = argparse.ArgumentParser(prog="bench-report.py save")
        p.add_argument("name")
        p.add_argument("--command", default="")
        a = p.parse_args(argv[1:])
        save_summary(a.name, a.command, sys.stdin.read())
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args(argv)
    if a.self_test:
        return self_test()
    return update(a.check)


if __name__ == "__main__":
    sys.exit(main())
