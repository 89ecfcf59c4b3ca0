#!/usr/bin/env python3
"""Builds or runs every fenced code block of README.md, docs/*.md and bindings/*/README.md.

    check_snippets.py --root SRC [--gradwire BIN] [--library LIB] [--self-test] [FILE.md ...]

What each language tag gets:

  c        cc -std=c99 -Wall -Wextra -Werror -fsyntax-only -I abi/include
  cpp      c++ -std=c++20, the same flags
           (both with <stddef.h>, <stdint.h>, <gradwire/gradwire.h> and <gradwire/plugin.h> included first)
  python   byte-compiled; a block marked `run` is also run against the built library (GRADWIRE_LIBRARY,
           PYTHONPATH=bindings/python) by --python (skipped, and said, when it lacks numpy or torch)
  go       `go vet` in a module that requires bindings/go (a block is a whole file; a fragment becomes
           the body of func main)
  rust     every line must be in bindings/rust/gradwire/examples/readme.rs, in order (CTest runs that
           example as 3 ranks: rust.mp.readme)
  julia    every function called must be defined in bindings/julia/src or be one of Julia's own
  toml     `gradwire config check` (a block marked `toml-only`, e.g. a Cargo manifest: parsed only)
  sh       not checked, unless marked `run`: then run by bash -e from the repository root
  text, or no tag: program output, not checked

A marker is an HTML comment on the line just before the fence; readers of the rendered page do not see it:

  <!-- snippet: fragment -->        C/C++: the block is the body of a function; Go: the body of main;
                                    Python: compiled only (also the default)
  <!-- snippet: file -->            the block is a whole file (the default), marked to give a prelude
  <!-- snippet: run -->             Python, sh: run it as well
  <!-- snippet: toml-only -->       TOML that is not a gradwire configuration
  <!-- snippet: file excerpt=PATH --> also: every line of the block is a line of PATH, in order (a
                                    guide quoting an example that CTest builds cannot drift from it)
  <!-- snippet: fragment            lines after the first line of the comment are a prelude: put before
  gw_comm* comm;                    the block at file scope (C, C++, Go: imports or declarations;
  -->                               Python: before the block)

Exit status 0 when every block passes, 1 otherwise (each failure printed with file:line and the
compiler's words). A language whose tool is missing (go) is reported as skipped, not as passed.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

C_HEADERS = "#include <stddef.h>\n#include <stdint.h>\n#include <gradwire/gradwire.h>\n#include <gradwire/plugin.h>\n"
LANGS = {"c", "cpp", "python", "go", "rust", "julia", "toml", "sh", "text", ""}
JULIA_BASE = {
    "println", "print", "zeros", "ones", "close", "fill", "length", "sum", "Float32", "Float64", "Int32",
    "Int64", "UInt8", "Vector", "Array", "similar", "copy", "isapprox", "all", "any", "collect", "string",
    "error", "rand", "abs", "maximum", "minimum", "push!", "resize!", "fill!", "copyto!", "view", "eachindex",
}


class Block:
    def __init__(self, path, line, lang, text, marks, prelude):
        self.path, self.line, self.lang, self.text, self.marks, self.prelude = path, line, lang, text, marks, prelude

    def where(self):
        return f"{self.path}:{self.line}"


def blocks_of(path, text):
    """The fenced blocks of a Markdown text, each with the marker just above it."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = "\n".join(l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j])
        marks, prelude = set(), ""
        # The marker: the comment that ends on the line above the fence.
        k = i - 1
        if k >= 0 and lines[k].strip().endswith("-->"):
            start = k
            while start >= 0 and "<!--" not in lines[start]:
                start -= 1
            comment = "\n".join(lines[start:k + 1]).strip()
            mm = re.match(r"<!--\s*snippet:\s*([^\n]*?)\s*(?:-->)?\s*$", comment.split("\n")[0])
            if mm:
                marks = set(mm.group(1).replace("-->", "").split())
                rest = comment.split("\n")[1:]
                if rest and rest[-1].strip() == "-->":
                    rest = rest[:-1]
                prelude = "\n".join(rest)
        out.append(Block(path, i + 1, lang, body, marks, prelude))
        i = j + 1
    return out


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class Checker:
    def __init__(self, args):
        self.root = os.path.abspath(args.root)
        self.gradwire = args.gradwire
        self.library = args.library
        self.python = args.python or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
        self.tmp = tempfile.mkdtemp(prefix="gw-snippets-")
        self.failures, self.checked, self.skipped = [], 0, []

    def fail(self, block, why):
        self.failures.append(f"{block.where()}: {block.lang} block: {why.strip()}")

    def check_excerpt(self, block):
        """excerpt=PATH: every line of the block is a line of PATH, in order (spaces aside)."""
        for mark in block.marks:
            if not mark.startswith("excerpt="):
                continue
            path = os.path.join(self.root, mark[len("excerpt="):])
            if not os.path.exists(path):
                self.fail(block, f"excerpt of {path}, which does not exist")
                continue
            have = [re.sub(r"\s+", "", l) for l in open(path)]
            pos = 0
            for line in block.text.split("\n"):
                want = re.sub(r"\s+", "", line)
                if not want:
                    continue
                if want not in have[pos:]:
                    self.fail(block, f"'{line.strip()}' is not in {mark[len('excerpt='):]} (in this order)")
                    break
                pos = have.index(want, pos) + 1

    def check(self, block):
        self.check_excerpt(block)
        if block.lang not in LANGS:
            self.fail(block, f"unknown language tag '{block.lang}' (known: {', '.join(sorted(LANGS - {''}))})")
            return
        handler = getattr(self, "check_" + block.lang, None)
        if block.lang in ("sh",) and "run" not in block.marks:
            return
        if handler is None:
            return
        self.checked += 1
        handler(block)

    def source(self, block, suffix, text):
        path = os.path.join(self.tmp, f"snippet{self.checked}{suffix}")
        with open(path, "w") as f:
            f.write(text)
        return path

    def compile_c(self, block, compiler, std, suffix):
        body = f"#line {block.line + 1} \"{block.path}\"\n" + block.text
        if "fragment" in block.marks:
            body = "void gw_snippet(void);\nvoid gw_snippet(void) {\n" + body + "\n}\n"
        text = C_HEADERS + block.prelude + "\n" + body + "\n"
        path = self.source(block, suffix, text)
        # A block at file scope is often one of several declarations that use each other: an unused
        # static there is not the snippet's mistake.
        r = run([compiler, std, "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-Wno-unused-function",
                 "-Wno-unused-const-variable" if std == "-std=c99" else "-Wno-unused-variable",
                 "-I", os.path.join(self.root, "abi", "include"), path])
        if r.returncode != 0:
            self.fail(block, r.stderr)

    def check_c(self, block):
        self.compile_c(block, os.environ.get("CC", "cc"), "-std=c99", ".c")

    def check_cpp(self, block):
        self.compile_c(block, os.environ.get("CXX", "c++"), "-std=c++20", ".cpp")

    def check_python(self, block):
        text = block.prelude + "\n" + block.text + "\n"
        try:
            compile(text, block.where(), "exec")
        except SyntaxError as e:
            self.fail(block, f"{e.msg} (line {e.lineno} of the block)")
            return
        if "run" not in block.marks:
            return
        if not self.library:
            self.fail(block, "marked run, but no --library to run it against")
            return
        env = dict(os.environ, GRADWIRE_LIBRARY=self.library,
                   PYTHONPATH=os.path.join(self.root, "bindings", "python"), OMP_NUM_THREADS="1")
        if self.gradwire:
            env["GRADWIRE_CLI"] = self.gradwire
        env.pop("GRADWIRE_PLUGIN_PATH", None)
        r = run([self.python, self.source(block, ".py", text)], env=env, cwd=self.tmp, timeout=300)
        missing = re.search(r"ModuleNotFoundError: No module named '(numpy|torch)'", r.stderr)
        if r.returncode != 0 and missing:
            self.skipped.append(f"{block.where()}: python block ({self.python} has no {missing.group(1)})")
        elif r.returncode != 0:
            self.fail(block, r.stdout + r.stderr)

    def check_go(self, block):
        go = shutil.which("go")
        if not go:
            self.skipped.append(f"{block.where()}: go block (go not found)")
            return
        mod = os.path.join(self.tmp, f"go{self.checked}")
        os.makedirs(mod)
        with open(os.path.join(mod, "go.mod"), "w") as f:
            f.write("module snippet\n\ngo 1.19\n\nrequire gradwire.dev/gradwire v0.0.0\n\n"
                    f"replace gradwire.dev/gradwire => {os.path.join(self.root, 'bindings', 'go')}\n")
        text = block.text
        if "fragment" in block.marks:
            text = ("package main\n\nimport \"gradwire.dev/gradwire\"\n\n" + block.prelude +
                    "\nfunc main() {\n" + block.text + "\n}\n")
        with open(os.path.join(mod, "main.go"), "w") as f:
            f.write(text)
        env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=mod", GO111MODULE="on", CGO_ENABLED="1",
                   GOCACHE=os.environ.get("GOCACHE", os.path.join(self.tmp, "gocache")),
                   GOPATH=os.environ.get("GOPATH", os.path.join(self.tmp, "gopath")),
                   PKG_CONFIG_PATH=os.environ.get("GW_PKG_CONFIG_PATH", os.environ.get("PKG_CONFIG_PATH", "")))
        r = run([go, "vet", "."], cwd=mod, env=env, timeout=600)
        if r.returncode != 0:
            self.fail(block, r.stdout + r.stderr)

    def check_rust(self, block):
        example = os.path.join(self.root, "bindings", "rust", "gradwire", "examples", "readme.rs")

        def code(line):  # a line without its comment and spaces
            return re.sub(r"\s+", "", line.split("//")[0])

        have = [code(l) for l in open(example)]
        pos = 0
        for n, line in enumerate(block.text.split("\n")):
            want = code(line)
            if not want:
                continue
            try:
                pos = have.index(want, pos) + 1
            except ValueError:
                self.fail(block, f"line {n + 1} of the block ({line.strip()}) is not in {example} (in this order)")
                return

    def check_julia(self, block):
        src = ""
        for f in glob.glob(os.path.join(self.root, "bindings", "julia", "src", "*.jl")):
            src += open(f).read()
        defined = set(re.findall(r"^\s*function\s+(?:\w+\.)?([A-Za-z_]\w*!?)", src, re.M))
        defined |= set(re.findall(r"^\s*([A-Za-z_]\w*!?)\([^)]*\)\s*=", src, re.M))
        defined |= set(re.findall(r"^\s*(?:mutable\s+)?struct\s+(\w+)", src, re.M))
        code = re.sub(r"#.*", "", re.sub(r'"(?:\\.|[^"\\])*"', '""', block.text))
        for name in re.findall(r"(?<![\w.])([A-Za-z_]\w*!?)\(", code):
            if name not in defined and name not in JULIA_BASE:
                self.fail(block, f"calls {name}(), which bindings/julia/src does not define")

    def check_toml(self, block):
        try:
            tomllib.loads(block.text)
        except tomllib.TOMLDecodeError as e:
            self.fail(block, f"not TOML: {e}")
            return
        if "toml-only" in block.marks:
            return
        if not self.gradwire:
            self.fail(block, "a configuration, but no --gradwire to check it with")
            return
        path = self.source(block, ".toml", block.text + "\n")
        r = run([self.gradwire, "config", "check", path])
        if r.returncode != 0:
            self.fail(block, r.stdout + r.stderr)

    def check_sh(self, block):
        env = dict(os.environ)
        if self.gradwire:
            env["PATH"] = os.path.dirname(self.gradwire) + os.pathsep + env.get("PATH", "")
        r = run(["bash", "-e", "-c", block.text], cwd=self.root, env=env, timeout=300)
        if r.returncode != 0:
            self.fail(block, r.stdout + r.stderr)

    def files(self, given):
        if given:
            return given
        return ([os.path.join(self.root, "README.md")] + sorted(glob.glob(os.path.join(self.root, "docs", "*.md"))) +
                sorted(glob.glob(os.path.join(self.root, "bindings", "*", "README.md"))))

    def check_files(self, paths):
        for path in paths:
            rel = os.path.relpath(path, self.root)
            for block in blocks_of(rel, open(path).read()):
                self.check(block)


PLANTED_BAD = r"""
```c
int f(void) { int unused; return undeclared; }
```

<!-- snippet: fragment -->
```c
gw_status s = gw_no_such_function();
```

<!-- snippet: file
static const gw_plugin_descriptor d;
-->
```c
GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &d : NULL;
}
```

```python
def broken(:
```

```toml
[codec
name = "int8"
```

```rust
let x = this_line_is_not_in_the_example();
```

```julia
Gradwire.nonexistent_thing!(x)
no_such_julia_function(1)
```

```pascal
begin end.
```

<!-- snippet: file excerpt=examples/third_party_codec/minmax8.c -->
```c
static const int this_line_is_not_in_minmax8 = 1;
```
"""

PLANTED_GOOD = r"""
<!-- snippet: fragment
gw_runtime* rt;
-->
```c
const char* v = gw_version_string();
(void)v;
(void)rt;
```

```python
x = [1, 2, 3]
```

<!-- snippet: toml-only -->
```toml
[dependencies]
a = 1
```

```sh
this is not checked
```
"""


def self_test(args):
    """The checker must fail each planted bad block and pass the good ones."""
    ok = True
    with tempfile.TemporaryDirectory() as d:
        bad, good = os.path.join(d, "bad.md"), os.path.join(d, "good.md")
        open(bad, "w").write(PLANTED_BAD)
        open(good, "w").write(PLANTED_GOOD)
        c = Checker(args)
        c.check_files([bad])
        expected = {"c": 4, "python": 1, "toml": 1, "rust": 1, "julia": 1, "pascal": 1}
        for lang, n in expected.items():
            got = sum(f": {lang} block:" in f for f in c.failures)
            if got < n:
                print(f"self-test: a planted bad {lang} block passed ({got} of {n} failed)")
                ok = False
        c = Checker(args)
        c.check_files([good])
        if c.failures:
            print("self-test: planted good blocks failed:\n" + "\n".join(c.failures))
            ok = False
    print("self-test", "passed" if ok else "FAILED")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    p.add_argument("--gradwire", help="the gradwire command (config check)")
    p.add_argument("--library", help="libgradwire.so.0 (Python blocks marked run)")
    p.add_argument("--python", help="the interpreter that runs Python blocks (default /usr/bin/python3, "
                   "Debian's, with numpy and torch)")
    p.add_argument("--self-test", action="store_true")
    p.add_argument("files", nargs="*")
    args = p.parse_args()
    if args.self_test:
        return self_test(args)
    c = Checker(args)
    c.check_files(c.files(args.files))
    for s in c.skipped:
        print("skipped:", s)
    for f in c.failures:
        print("FAIL", f, "\n")
    print(f"{c.checked} blocks checked, {len(c.failures)} failed, {len(c.skipped)} skipped")
    shutil.rmtree(c.tmp, ignore_errors=True)
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
