#!/usr/bin/env python3
"""The documents describe the system as it is, and point only at files that exist.

    check_docs.py --root SRC [--self-test]

Checks README.md, docs/*.md and bindings/*/README.md:

  - no narrated history: ISO dates (2026-12-02), "run 3", ordinal runs ("the twenty-sixth run"),
    "this run", "this stop", "last run", "before the change", "earlier the same day", "this session",
    "yesterday" (what was tried belongs in a commit message or an issue, the figures in bench/results/);
  - every relative Markdown link, and every backticked or bare repository path (`docs/x.md`,
    `bench/suites/`, `examples/gradwire.toml`), names a file or folder that exists;
  - README.md lists every file in docs/.

Exit status 0 when all hold, 1 with one line per finding otherwise. --self-test plants bad text and
expects each kind of finding.
"""
import argparse
import glob
import os
import re
import sys
import tempfile

ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
            "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth").split()
HISTORY = [
    (re.compile(r"\b(19|20)\d\d-[01]\d-[0-3]\d\b"), "an ISO date"),
    (re.compile(r"\b[Rr]un (#\s*)?\d+\b"), "a numbered run"),
    (re.compile(r"\b(the )?((twenty|thirty|forty)-)?(" + "|".join(ORDINALS) + r") (run|stop|session|launch)\b", re.I),
     "an ordinal run"),
    (re.compile(r"\bthis (run|stop|session)\b", re.I), "'this run/stop/session'"),
    (re.compile(r"\b(last|previous|earlier) run\b", re.I), "'last run'"),
    (re.compile(r"\bbefore the (change|fix|rule)\b", re.I), "'before the change'"),
    (re.compile(r"\bearlier (the same|that) day\b", re.I), "'earlier the same day'"),
    (re.compile(r"\b(yesterday|this morning|this afternoon)\b", re.I), "a day in a narration"),
]
TOP = ("abi", "bench", "bindings", "cmake", "docs", "examples", "plugins", "runtime", "scripts", "tests",
       "transports")
# A repository path: starts with a top folder, then path characters; placeholders (<x>, NAME, *, ...)
# are not paths.
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP) + r")/[\w./+*-]*)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def documents(root):
    return ([os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md"))) +
            sorted(glob.glob(os.path.join(root, "bindings", "*", "README.md"))))


def strip_generated(text):
    """Generated result blocks (bench/results) are checked by bench-report.py --check, not here."""
    return re.sub(r"<!-- results:(\S+) begin -->.*?<!-- results:\1 end -->", "", text, flags=re.S)


def is_placeholder(p):
    return any(c in p for c in "*<>{}$") or "..." in p or re.search(r"/[A-Z_]+(\.|/|$)", p) is not None


def check_text(root, rel, text):
    findings = []
    doc_dir = os.path.dirname(os.path.join(root, rel))
    for n, line in enumerate(strip_generated(text).split("\n"), 1):
        for pattern, what in HISTORY:
            m = pattern.search(line)
            if m:
                findings.append(f"{rel}:{n}: narrated history ({what}): '{m.group(0)}'")
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#")[0]
            if path and not os.path.exists(os.path.normpath(os.path.join(doc_dir, path))):
                findings.append(f"{rel}:{n}: link to a file that does not exist: {target}")
        for p in PATH.findall(line):
            p = p.rstrip(".,:;")
            if is_placeholder(p) or p.endswith("/."):
                continue
            if not os.path.exists(os.path.join(root, p)) and not os.path.exists(os.path.join(doc_dir, p)):
                findings.append(f"{rel}:{n}: names a path that does not exist: {p}")
    return findings


def check_readme_lists_docs(root, readme_text):
    """Every file in docs/ has a row of its own in a README table: | `docs/name.md` | what |."""
    rows = set(re.findall(r"^\|\s*`?(docs/[^`|\s]+)`?\s*\|", readme_text, re.M))
    findings = []
    for f in sorted(glob.glob(os.path.join(root, "docs", "*"))):
        name = "docs/" + os.path.basename(f)
        if name not in rows:
            findings.append(f"README.md: no table row lists {name}")
    return findings


def check(root):
    findings = []
    for path in documents(root):
        rel = os.path.relpath(path, root)
        findings += check_text(root, rel, open(path).read())
    findings += check_readme_lists_docs(root, open(os.path.join(root, "README.md")).read())
    return findings


def self_test():
    ok = True
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        open(os.path.join(root, "docs", "a.md"), "w").write("# A\n")
        open(os.path.join(root, "docs", "unlisted.md"), "w").write("# B\n")
        planted = {
            "an ISO date": "Measured on 2026-12-02 on a quiet machine.",
            "a numbered run": "In run 3 the figure moved.",
            "an ordinal run": "The twenty-sixth run below shows it.",
            "'this run/stop/session'": "As measured in this run, it held.",
            "'last run'": "The last run was slower.",
            "'before the change'": "It took 4 s before the change.",
            "'earlier the same day'": "Earlier the same day it was faster.",
            "link to a file that does not exist": "See [the guide](docs/missing.md).",
            "names a path that does not exist": "The code is in `runtime/nowhere/file.cpp`.",
        }
        for what, line in planted.items():
            found = check_text(root, "README.md", line + "\n")
            if not any(what in f for f in found):
                print(f"self-test: planted {what} was not found: {line!r}")
                ok = False
        good = "See [a](docs/a.md), `docs/a.md` and docs/a.md; a run of 4 ranks; `runtime/NAME/`; <!-- results:X begin -->2026-01-01<!-- results:X end -->\n"
        found = check_text(root, "README.md", good)
        if found:
            print("self-test: good text was flagged:", found)
            ok = False
        found = check_readme_lists_docs(root, "| `docs/a.md` | a |\nsee docs/unlisted.md\n")
        if found != ["README.md: no table row lists docs/unlisted.md"]:
            print("self-test: the unlisted document was not found:", found)
            ok = False
    print("self-test", "passed" if ok else "FAILED")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args()
    if args.self_test:
        return self_test()
    findings = check(os.path.abspath(args.root))
    for f in findings:
        print(f)
    print(f"{len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
