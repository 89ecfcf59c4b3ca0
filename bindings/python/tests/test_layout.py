"""The binding's structs against the C headers: a C program compiled here prints sizeof and offsetof of every
struct the binding declares; each must equal ctypes' view, so the binding cannot drift from gradwire.h."""
import ctypes
import os
import shutil
import subprocess

import pytest

from conftest import REPO
from gradwire import _lib


def c_compiler():
    for c in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if c and shutil.which(c):
            return c
    pytest.skip("no C compiler (cc, gcc or clang) to build the layout probe")


def test_every_struct_matches_the_header(tmp_path):
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <gradwire/gradwire.h>", "int main(void) {"]
    for name, cls in _lib.STRUCTS.items():
        lines.append(f'  printf("{name} %zu %zu\\n", sizeof({name}), _Alignof({name}));')
        for field, _ in cls._fields_:
            lines.append(f'  printf("{name}.{field} %zu %zu\\n", offsetof({name}, {field}), '
                         f'sizeof((({name}*)0)->{field}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    include = os.path.join(REPO, "abi", "include")
    subprocess.run([c_compiler(), "-std=c11", "-Wall", "-Werror", "-I", include, str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    c = {}
    for line in filter(None, out):
        key, a, b = line.split()
        c[key] = (int(a), int(b))
    mismatches = []
    for name, cls in _lib.STRUCTS.items():
        if c[name] != (ctypes.sizeof(cls), ctypes.alignment(cls)):
            mismatches.append(f"{name}: C sizeof/alignof {c[name]}, binding {(ctypes.sizeof(cls), ctypes.alignment(cls))}")
        for field, ftype in cls._fields_:
            got = (getattr(cls, field).offset, ctypes.sizeof(ftype))
            if c[f"{name}.{field}"] != got:
                mismatches.append(f"{name}.{field}: C offset/size {c[f'{name}.{field}']}, binding {got}")
    assert not mismatches, "the binding's structs differ from gradwire.h:\n  " + "\n  ".join(mismatches)
    assert len(c) == len(_lib.STRUCTS) + sum(len(s._fields_) for s in _lib.STRUCTS.values())


def test_the_probe_sees_every_struct_of_the_header():
    """Every typedef'd struct of gradwire.h and types.h with a struct_size is declared by the binding."""
    import re
    names = set()
    for h in ("types.h", "gradwire.h"):
        text = open(os.path.join(REPO, "abi", "include", "gradwire", h)).read()
        names |= set(re.findall(r"typedef struct (gw_\w+) \{\s*uint32_t struct_size;", text))
    assert names, "no struct found in the headers"
    assert names <= set(_lib.STRUCTS), f"structs the binding does not declare: {sorted(names - set(_lib.STRUCTS))}"


def test_every_function_of_the_header_is_declared():
    import re
    text = open(os.path.join(REPO, "abi", "include", "gradwire", "gradwire.h")).read()
    names = set(re.findall(r"GW_API [^;(]*?\b(gw_\w+)\(", text))
    assert len(names) > 50
    assert names == set(_lib.FUNCTIONS), (f"missing in the binding: {sorted(names - set(_lib.FUNCTIONS))}; "
                                          f"not in the header: {sorted(set(_lib.FUNCTIONS) - names)}")
