#!/usr/bin/env python3
"""The tools are clients of the C ABI (docs/architecture.md, "The command and its tools"): the `gradwire`
command (runtime/cli), its tools (tools/) and the benchmark suites (bench/suites) include nothing of the
runtime's inside but the cost model library's interface (model/model.hpp, model/measure.hpp), and their
CMake targets never link gradwire_core; runtime/cli holds main.cpp, commands.hpp and one cmd_*.cpp per
subcommand.

    check_clients.py --root DIR      exit 1, naming each offending line
    check_clients.py --self-test     the checker fails a planted include of runtime/core
"""
import argparse
import os
import re
import sys
import tempfile

CLIENT_DIRS = ["runtime/cli", "tools", "bench/suites"]
CMAKE_FILES = ["runtime/cli/CMakeLists.txt", "tools/CMakeLists.txt", "bench/CMakeLists.txt"]
MODEL_INTERFACE = {"model/model.hpp", "model/measure.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root):
    for d in CLIENT_DIRS:
        for base, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith((".cpp", ".hpp", ".h", ".c")):
                    yield os.path.join(base, f)


def resolves(root, path, name):
    """Where a quoted include of `path` is found among the clients' own folders, or None."""
    here = os.path.dirname(path)
    candidates = [os.path.join(here, name), os.path.join(root, "runtime", "cli", name), os.path.join(root, "tools", name),
                  os.path.join(root, "bench", name), os.path.join(root, "tools", "train", name)]
    return next((c for c in candidates if os.path.isfile(c)), None)


def check(root):
    problems = []
    for path in sources(root):
        rel = os.path.relpath(path, root)
        for n, line in enumerate(open(path, errors="replace"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(1)
            if name in MODEL_INTERFACE:
                continue
            if resolves(root, path, name) is None:
                problems.append(f"{rel}:{n}: includes \"{name}\", which is not the tools' own nor the cost model's "
                                f"interface ({', '.join(sorted(MODEL_INTERFACE))}); a tool is a client of the C ABI "
                                f"(<gradwire/...>)")
    for rel in CMAKE_FILES:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            problems.append(f"{rel}: missing")
            continue
        for n, line in enumerate(open(path), 1):
            if re.search(r"\bgradwire_core\b", line.split("#", 1)[0]):
                problems.append(f"{rel}:{n}: links gradwire_core; the command and its tools link libgradwire (gradwire)")
    cli = os.path.join(root, "runtime", "cli")
    for f in sorted(os.listdir(cli)):
        if f not in ("main.cpp", "commands.hpp", "CMakeLists.txt") and not re.fullmatch(r"cmd_\w+\.cpp", f):
            problems.append(f"runtime/cli/{f}: runtime/cli holds main.cpp, commands.hpp and the cmd_*.cpp of each "
                            f"subcommand's command line; put what it does under tools/ or bench/")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as d:
        for sub in ["runtime/cli", "tools/support", "bench/suites", "runtime/core"]:
            os.makedirs(os.path.join(d, sub))
        for rel in CMAKE_FILES:
            open(os.path.join(d, rel), "w").write("add_library(x STATIC x.cpp)\n")
        open(os.path.join(d, "runtime/cli/cmd_x.cpp"), "w").write('#include "support/tool.hpp"\n')
        open(os.path.join(d, "tools/support/tool.hpp"), "w").write("#pragma once\n")
        open(os.path.join(d, "runtime/core/errors.hpp"), "w").write("#pragma once\n")
        if check(d):
            print("self-test: a clean tree failed:", check(d))
            return 1
        open(os.path.join(d, "tools/support/bad.cpp"), "w").write('#include "core/errors.hpp"\n')
        open(os.path.join(d, "tools/CMakeLists.txt"), "a").write("target_link_libraries(x PRIVATE gradwire_core)\n")
        open(os.path.join(d, "runtime/cli/helpers.cpp"), "w").write("\n")
        found = check(d)
        if len(found) != 3:
            print("self-test: expected the planted include, link and file, got:", found)
            return 1
    print("self-test passed")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    problems = check(a.root)
    for x in problems:
        print(x)
    print(f"{len(problems)} problem(s)" if problems else "the command and its tools are clients of the C ABI")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
