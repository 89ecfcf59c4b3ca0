#!/usr/bin/env python3
"""The layering of runtime/ (docs/architecture.md, "Layers"), checked against its one declaration.

runtime/layers.txt names every area of runtime/ (a folder) and the areas it depends on; CMake makes the
targets from the same table (runtime/CMakeLists.txt). This program fails, naming file and line:
  - when a file of an area includes "other/..." (or <other/...>) of an area its line does not name. The
    rule is direct: an area's line names every area its own files include, not only the nearest; what
    those areas include in turn comes along through their headers and is their line's business;
  - when a line names an area that none of the area's files include (the table says no more than is so);
  - on an include by relative path ("../comm/x.hpp"), which would hide an area's name from the check;
  - on a cycle among the declared dependencies, a dependency on an area without a line, a folder of
    runtime/ without a line or a line without a folder;
  - (--check-doc) when the block between <!-- layers begin --> and <!-- layers end --> in
    docs/architecture.md differs from what the table gives (--write-doc rewrites it).
Files are every C, C++ and CUDA source and header of the area's folder and its subfolders, and the
templates of generated sources (*.in, e.g. model/reference.cpp.in). The folders of an area's include/
(headers that code outside the runtime includes too) name it as well (runtime/kernels/include/gw_kernels:
<gw_kernels/...> is kernels).

  check_layers.py --root .                 the include and table checks
  check_layers.py --root . --check-doc     the same, and the document's block
  check_layers.py --root . --write-doc     rewrite the document's block
  check_layers.py --root . --graph         print the block
  check_layers.py --self-test              the checks fail on a planted back-edge, cycle and stale doc
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

TABLE = "runtime/layers.txt"
DOC = "docs/architecture.md"
KINDS = ("objects", "static", "header", "client")
SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s*["<]([^">]+)[">]')
LINE = re.compile(r"^([a-z_][a-z0-9_]*)(?: \[([a-z]+)\])?:(.*)$")
BLOCK = re.compile(r"(<!-- layers begin -->\n)(.*?)(<!-- layers end -->)", re.S)


class Table:
    def __init__(self):
        self.order = []   # areas in the table's order
        self.kind = {}
        self.deps = {}    # area -> list of areas, as written
        self.line = {}    # area -> line number in the table


def read_table(root, errors):
    table = Table()
    path = os.path.join(root, TABLE)
    try:
        text = open(path).read()
    except OSError as e:
        errors.append(f"{TABLE}: cannot read it ({e.strerror}): it declares the areas of runtime/")
        return table
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            errors.append(f"{TABLE}:{number}: cannot read '{line}': write `area [kind]: dependencies`")
            continue
        area, kind, deps = m.group(1), m.group(2) or "objects", m.group(3).split()
        if kind not in KINDS:
            errors.append(f"{TABLE}:{number}: {area} has the kind '{kind}'; kinds are {', '.join(KINDS)}")
        if area in table.kind:
            errors.append(f"{TABLE}:{number}: {area} has a second line (the first is line {table.line[area]})")
            continue
        table.order.append(area)
        table.kind[area], table.deps[area], table.line[area] = kind, deps, number
    for area in table.order:
        for dep in table.deps[area]:
            if dep not in table.kind:
                errors.append(f"{TABLE}:{table.line[area]}: {area} depends on '{dep}', which has no line "
                              "(add one, or remove the name)")
            elif dep == area:
                errors.append(f"{TABLE}:{table.line[area]}: {area} depends on itself")
            elif table.order.index(dep) > table.order.index(area) and table.kind[area] != "client":
                errors.append(f"{TABLE}:{table.line[area]}: {area} depends on {dep}, whose line comes later: "
                              "a line comes after the lines of its dependencies (CMake makes the targets in order)")
            elif table.kind[dep] == "client":
                errors.append(f"{TABLE}:{table.line[area]}: {area} depends on {dep}, a client of the C ABI "
                              "that nothing of the library may use")
    return table


def find_cycle(table):
    """A cycle among the declared dependencies as a list of areas (first == last), or None."""
    state = {}  # area -> 1 visiting, 2 done
    stack = []

    def visit(area):
        state[area] = 1
        stack.append(area)
        for dep in table.deps.get(area, []):
            if dep not in table.kind or dep == area:
                continue
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if state.get(dep) is None:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[area] = 2
        return None

    for area in table.order:
        if state.get(area) is None:
            found = visit(area)
            if found:
                return found
    return None


def include_names(root, table):
    """What an include's first folder names: an area (its folder) or a folder in an area's include/."""
    names = {area: area for area in table.order}
    for area in table.order:
        inc = os.path.join(root, "runtime", area, "include")
        if os.path.isdir(inc):
            for name in sorted(os.listdir(inc)):
                if os.path.isdir(os.path.join(inc, name)):
                    names[name] = area
    return names


def area_files(root, area):
    top = os.path.join(root, "runtime", area)
    for folder, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, root)


def check(root):
    errors = []
    table = read_table(root, errors)
    if not table.order:
        return errors or [f"{TABLE}: no area declared"], table
    runtime = os.path.join(root, "runtime")
    folders = sorted(d for d in os.listdir(runtime) if os.path.isdir(os.path.join(runtime, d)))
    for folder in folders:
        if folder not in table.kind:
            errors.append(f"runtime/{folder}/: a folder of runtime/ without a line in {TABLE} "
                          "(add `" + folder + ": the areas it includes`)")
    for area in table.order:
        if area not in folders:
            errors.append(f"{TABLE}:{table.line[area]}: {area} has no folder runtime/{area}/")
    cycle = find_cycle(table)
    if cycle:
        errors.append(f"{TABLE}: the declared dependencies have a cycle: {' -> '.join(cycle)} "
                      "(an area must not depend, even through others, on itself)")
    names = include_names(root, table)
    used = {area: set() for area in table.order}
    for area in table.order:
        if area not in folders:
            continue
        allowed = set(table.deps[area])
        for rel in area_files(root, area):
            try:
                lines = open(os.path.join(root, rel), errors="replace").read().splitlines()
            except OSError as e:
                errors.append(f"{rel}: cannot read it ({e.strerror})")
                continue
            for number, text in enumerate(lines, 1):
                m = INCLUDE.match(text)
                if m and (m.group(1).startswith("./") or "../" in m.group(1)):
                    errors.append(f"{rel}:{number}: \"{m.group(1)}\" is a relative path, which this check cannot "
                                  "follow: write \"area/name.hpp\" from runtime/")
                    continue
                if not m or "/" not in m.group(1):
                    continue
                target = names.get(m.group(1).split("/")[0])
                if target is None or target == area:
                    continue
                used[area].add(target)
                if target not in allowed:
                    errors.append(f"{rel}:{number}: {area} includes \"{m.group(1)}\" of {target}, which "
                                  f"{TABLE} does not declare for {area} (line {table.line[area]}: "
                                  f"{area}: {' '.join(table.deps[area]) or '(nothing)'}); declare it if "
                                  f"{area} belongs above {target}, or move the code to the area it needs")
    for area in table.order:
        for dep in table.deps[area]:
            if dep in table.kind and dep not in used[area] and area in folders:
                errors.append(f"{TABLE}:{table.line[area]}: {area} declares {dep}, but no file of "
                              f"runtime/{area}/ includes it: remove it from the line")
    return errors, table


def floors(table):
    """Each area's floor: 0 for an area without dependencies, else one above its highest dependency."""
    floor = {}

    def of(area, seen=()):
        if area in floor:
            return floor[area]
        deps = [d for d in table.deps[area] if d in table.kind and d not in seen]
        floor[area] = 1 + max((of(d, seen + (area,)) for d in deps), default=-1)
        return floor[area]

    for area in table.order:
        of(area)
    return floor


def reduced(table):
    """The declared edges no other path implies (what the drawing shows)."""
    def reaches(a, b, skip):
        todo, seen = [d for d in table.deps[a] if (a, d) != skip], set()
        while todo:
            x = todo.pop()
            if x == b:
                return True
            if x in seen or x not in table.deps:
                continue
            seen.add(x)
            todo.extend(table.deps[x])
        return False

    return {a: [d for d in table.deps[a] if not reaches(a, d, (a, d))] for a in table.order}


def render(table):
    floor = floors(table)
    edges = reduced(table)
    top = max(floor.values(), default=0)
    out = ["```text"]
    for f in range(top, -1, -1):
        row = [a for a in table.order if floor[a] == f]
        out.append(f"floor {f}   " + "   ".join(
            a + (" -> " + ", ".join(edges[a]) if edges[a] else "") for a in row))
    out.append("```")
    out.append("")
    out.append("| area | target | kind | depends on (its line in `runtime/layers.txt`) |")
    out.append("|---|---|---|---|")
    for f in range(top, -1, -1):
        for a in (a for a in table.order if floor[a] == f):
            target = "`gradwire_cli` and its libraries" if table.kind[a] == "client" else f"`gradwire_area_{a}`"
            out.append(f"| `{a}` | {target} | {table.kind[a]} | {', '.join(table.deps[a]) or '—'} |")
    return "\n".join(out) + "\n"


def doc_block(root, errors, write):
    path = os.path.join(root, DOC)
    text = open(path).read()
    m = BLOCK.search(text)
    if not m:
        errors.append(f"{DOC}: no <!-- layers begin --> ... <!-- layers end --> block to draw the layers in")
        return
    _, table = check(root)
    want = render(table)
    if m.group(2) == want:
        return
    if write:
        open(path, "w").write(text[:m.start(2)] + want + text[m.end(2):])
        print(f"{DOC}: the layers block rewritten from {TABLE}")
        return
    line = text[:m.start()].count("\n") + 1
    errors.append(f"{DOC}:{line}: the layers block differs from what {TABLE} gives: run "
                  "`python3 tests/layers/check_layers.py --root . --write-doc` and commit the result")


def run(root, check_doc=False, write_doc=False):
    errors, table = check(root)
    if (check_doc or write_doc) and not errors:
        doc_block(root, errors, write_doc)
    return errors


def self_test():
    """Plants each fault in a copy of the tree and expects the failure that names it."""
    here = os.path.dirname(os.path.abspath(__file__))
    source = os.path.abspath(os.path.join(here, "..", ".."))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def fresh():
            root = os.path.join(tmp, "tree")
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(os.path.join(source, "runtime"), os.path.join(root, "runtime"),
                            ignore=shutil.ignore_patterns("*.o", "build*"))
            os.makedirs(os.path.join(root, "docs"))
            shutil.copy(os.path.join(source, DOC), os.path.join(root, DOC))
            return root

        def expect(name, root, needles, check_doc=False):
            cmd = [sys.executable, os.path.abspath(__file__), "--root", root] + (["--check-doc"] if check_doc else [])
            p = subprocess.run(cmd, capture_output=True, text=True)
            said = p.stdout + p.stderr
            if p.returncode == 0:
                failures.append(f"{name}: the checker passed")
            for needle in needles:
                if needle not in said:
                    failures.append(f"{name}: the failure does not say '{needle}':\n{said}")

        root = fresh()
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--root", root, "--check-doc"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            failures.append("the unchanged copy fails:\n" + p.stdout + p.stderr)

        # A back-edge: the leaf includes the communicator.
        with open(os.path.join(root, "runtime/core/error.hpp"), "a") as f:
            f.write('#include "comm/communicator.hpp"\n')
        planted = len(open(os.path.join(root, "runtime/core/error.hpp")).read().splitlines())
        expect("back-edge", root, [f"runtime/core/error.hpp:{planted}: core includes \"comm/communicator.hpp\""])

        # A back-edge through a relative path.
        root = fresh()
        with open(os.path.join(root, "runtime/core/log.cpp"), "a") as f:
            f.write('#include "../comm/communicator.hpp"\n')
        expect("relative path", root, ["runtime/core/log.cpp:", "is a relative path"])

        # The same declared: now a cycle.
        root = fresh()
        table = os.path.join(root, TABLE)
        text = open(table).read()
        open(table, "w").write(re.sub(r"^core:.*$", "core: comm", text, flags=re.M))
        with open(os.path.join(root, "runtime/core/error.hpp"), "a") as f:
            f.write('#include "comm/communicator.hpp"\n')
        expect("cycle", root, ["a cycle: core -> comm -> ", " -> core"])

        # An area included through its include/ folder (<gw_kernels/...>), undeclared.
        root = fresh()
        with open(os.path.join(root, "runtime/config/config.cpp"), "a") as f:
            f.write("#include <gw_kernels/fp16.h>\n")
        expect("include/ folder", root, ["runtime/config/config.cpp:", "of kernels"])

        # A declared dependency that nothing includes, and a folder without a line.
        root = fresh()
        table = os.path.join(root, TABLE)
        text = open(table).read()
        open(table, "w").write(re.sub(r"^bootstrap: core$", "bootstrap: core config", text, flags=re.M))
        os.makedirs(os.path.join(root, "runtime/newarea"))
        expect("unused and undeclared", root, ["bootstrap declares config, but no file",
                                               "runtime/newarea/: a folder of runtime/ without a line"])

        # The document's drawing out of date.
        root = fresh()
        doc = os.path.join(root, DOC)
        text = open(doc).read()
        open(doc, "w").write(text.replace("floor 0", "floor zero", 1))
        expect("stale doc", root, ["the layers block differs"], check_doc=True)
    if failures:
        print("check_layers self-test failed:\n" + "\n".join(failures))
        return 1
    print("check_layers self-test: a back-edge, a relative include, a cycle, an undeclared <gw_kernels/...> include, an unused dependency, "
          "an undeclared folder and a stale drawing each fail")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=".", help="the source tree (holds runtime/ and docs/)")
    parser.add_argument("--check-doc", action="store_true", help=f"also compare {DOC}'s layers block")
    parser.add_argument("--write-doc", action="store_true", help=f"rewrite {DOC}'s layers block")
    parser.add_argument("--graph", action="store_true", help="print the layers block")
    parser.add_argument("--self-test", action="store_true", help="plant faults in a copy and expect failures")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    if args.graph:
        errors, table = check(root)
        sys.stdout.write(render(table))
        return 1 if errors else 0
    errors = run(root, args.check_doc, args.write_doc)
    if errors:
        print(f"runtime/ layering: {len(errors)} problem(s):")
        for e in errors:
            print("  " + e)
        return 1
    print(f"runtime/ layering: the includes of every area follow {TABLE}, which has no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
