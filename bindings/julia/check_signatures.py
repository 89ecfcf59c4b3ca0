#!/usr/bin/env python3
"""Checks the Julia wrappers (src/libgradwire.jl) against gradwire.h and types.h, without Julia.

Parses the C headers (functions, struct fields, enum values, numeric #defines) and the Julia file
(`@ccall libgradwire.NAME(arg::Type, ...)::Ret`, `struct NAME ... end`, `const NAME = value`), maps each C
type to the Julia type the binding must use, and fails listing every difference: a function missing on
either side, another argument count, name-independent argument types or return type, a struct field
added/removed/reordered/retyped, a constant missing or with another value.

Usage: check_signatures.py HEADER_DIR JULIA_FILE        (exit 0: identical, 1: differences)
       check_signatures.py --self-test HEADER_DIR JULIA_FILE   (the checker catches planted changes)
"""
import os
import re
import sys

C_BASE = {
    "void": "Cvoid", "char": "Cchar", "int": "Cint", "float": "Cfloat", "double": "Cdouble",
    "size_t": "Csize_t", "uint8_t": "UInt8", "uint16_t": "UInt16", "uint32_t": "UInt32", "uint64_t": "UInt64",
    "int8_t": "Int8", "int16_t": "Int16", "int32_t": "Int32", "int64_t": "Int64",
}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def c_to_julia(ctype):
    """'const gw_tensor*' -> 'Ptr{gw_tensor}'; 'const char*' -> 'Cstring'; 'gw_comm**' -> 'Ptr{Ptr{gw_comm}}'."""
    t = " ".join(ctype.replace("*", " * ").split())
    stars = t.count("*")
    words = [w for w in t.split() if w not in ("const", "*")]
    if len(words) != 1:
        raise ValueError(f"cannot map C type '{ctype}'")
    base = words[0]
    if base == "char" and stars == 1 and t.startswith("const"):
        return "Cstring"  # an input or returned NUL-terminated string
    jl = C_BASE.get(base, base)
    for _ in range(stars):
        jl = f"Ptr{{{jl}}}"
    return jl


def split_decl(decl):
    """'const gw_tensor* in' -> ('const gw_tensor*', 'in')."""
    decl = " ".join(decl.replace("*", "* ").split())
    m = re.match(r"(.*?)(\w+)$", decl)
    return m.group(1).strip(), m.group(2)


def parse_c(header_dir):
    text = ""
    for name in ("types.h", "gradwire.h"):
        with open(os.path.join(header_dir, name)) as f:
            text += strip_comments(f.read()) + "\n"
    functions, structs, constants, aliases = {}, {}, {}, set()
    for m in re.finditer(r"GW_API\s+([\w\s\*]+?)\s*\b(gw_\w+)\s*\(([^)]*)\)\s*;", text):
        ret, name, args = m.group(1), m.group(2), m.group(3).strip()
        params = [] if args in ("", "void") else [c_to_julia(split_decl(a)[0]) for a in args.split(",")]
        functions[name] = (params, c_to_julia(ret))
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, flags=re.S):
        fields = []
        for decl in m.group(2).split(";"):
            if decl.strip():
                ctype, fname = split_decl(decl)
                fields.append((fname, c_to_julia(ctype)))
        structs[m.group(3)] = fields
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s+(\w+)\s*;", text):
        structs.setdefault(m.group(2), None)  # opaque
    for m in re.finditer(r"typedef\s+enum\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, flags=re.S):
        aliases.add(m.group(3))
        parse_enum(m.group(2), constants)
    for m in re.finditer(r"(?<!typedef )\benum\s*\{(.*?)\}\s*;", text, flags=re.S):
        parse_enum(m.group(1), constants)
    for m in re.finditer(r"typedef\s+[\w\s\*]+\(\s*\*\s*(\w+)\s*\)\s*\(", text):
        aliases.add(m.group(1))
    for m in re.finditer(r"#define\s+(GW_\w+)\s+\(?([0-9][0-9a-fA-Fx]*)u?\)?\s*$", text, flags=re.M):
        constants[m.group(1)] = int(m.group(2), 0)
    return functions, structs, constants, aliases


def parse_enum(body, constants):
    for item in body.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, value = item.partition("=")
        name = name.strip()
        if name.endswith("FORCE_32BIT"):
            continue
        value = value.strip().replace("u", "") if value else None
        if value is None:
            raise ValueError(f"enum member {name} has no explicit value; the checker needs one")
        m = re.fullmatch(r"1\s*<<\s*(\d+)", value)
        constants[name] = 1 << int(m.group(1)) if m else int(value, 0)


def parse_julia(text):
    text = re.sub(r"#=.*?=#", " ", text, flags=re.S)
    text = re.sub(r"#[^\n]*", " ", text)
    functions, structs, constants = {}, {}, {}
    for m in re.finditer(r"@ccall\s+libgradwire\.(\w+)\((.*?)\)::([\w{}]+)", text, flags=re.S):
        args = [a.strip() for a in m.group(2).split(",") if a.strip()]
        params = []
        for a in args:
            if "::" not in a:
                raise ValueError(f"{m.group(1)}: argument '{a}' has no ::Type")
            params.append(a.split("::", 1)[1].strip())
        if m.group(1) in functions:
            raise ValueError(f"{m.group(1)} is wrapped twice")
        functions[m.group(1)] = (params, m.group(3))
    for m in re.finditer(r"^\s*(?:mutable\s+)?struct\s+(\w+)\s*\n(.*?)^\s*end\b", text, flags=re.S | re.M):
        fields = []
        for line in m.group(2).splitlines():
            line = line.strip()
            if line and "::" in line:
                fname, ftype = line.split("::", 1)
                fields.append((fname.strip(), ftype.strip()))
        structs[m.group(1)] = fields
    for m in re.finditer(r"^\s*const\s+(GW_\w+)\s*=\s*(?:\w+\()?\s*(-?(?:0x[0-9a-fA-F]+|\d+))\s*\)?\s*$", text, flags=re.M):
        constants[m.group(1)] = int(m.group(2), 0)
    return functions, structs, constants


def compare(c, jl):
    cf, cs, cc, _ = c
    jf, js, jc = jl
    errors = []
    for name in sorted(set(cf) | set(jf)):
        if name not in jf:
            errors.append(f"function {name}: in gradwire.h, not wrapped in Julia")
        elif name not in cf:
            errors.append(f"function {name}: wrapped in Julia, not in gradwire.h")
        elif cf[name] != jf[name]:
            (cp, cr), (jp, jr) = cf[name], jf[name]
            if len(cp) != len(jp):
                errors.append(f"function {name}: C takes {len(cp)} arguments, Julia passes {len(jp)}")
            for i, (a, b) in enumerate(zip(cp, jp)):
                if a != b:
                    errors.append(f"function {name}: argument {i + 1} is {a} in C, {b} in Julia")
            if cr != jr:
                errors.append(f"function {name}: returns {cr} in C, {jr} in Julia")
    for name in sorted(set(s for s, f in cs.items() if f is not None) | set(js)):
        if name not in js:
            errors.append(f"struct {name}: in the C headers, no Julia struct")
        elif name not in cs or cs[name] is None:
            errors.append(f"struct {name}: a Julia struct, not a C struct")
        elif cs[name] != js[name]:
            errors.append(f"struct {name}: fields differ\n    C:     {cs[name]}\n    Julia: {js[name]}")
    for name in sorted(set(cc) | set(jc)):
        if name not in jc:
            errors.append(f"constant {name}: in the C headers, not in Julia")
        elif name not in cc:
            errors.append(f"constant {name}: in Julia, not in the C headers")
        elif cc[name] != jc[name]:
            errors.append(f"constant {name}: {cc[name]} in C, {jc[name]} in Julia")
    return errors


def self_test(header_dir, text):
    """Plants one difference of each kind and checks that it is reported."""
    c = parse_c(header_dir)
    assert not compare(c, parse_julia(text)), "the unmodified wrappers must match"
    plants = [
        ("an argument type", lambda t: t.replace("op::gw_reduce_op", "op::Int64", 1), "argument"),
        ("a return type", lambda t: t.replace("gw_version()::UInt32", "gw_version()::UInt64", 1), "returns"),
        ("a missing function", lambda t: re.sub(r"[^\n]*@ccall libgradwire\.gw_barrier\([^\n]*\n", "", t, 1), "not wrapped"),
        ("an extra argument", lambda t: t.replace("gw_barrier(comm::Ptr{gw_comm})", "gw_barrier(comm::Ptr{gw_comm}, x::Cint)", 1), "arguments"),
        ("a struct field type", lambda t: t.replace("count::UInt64", "count::UInt32", 1), "fields differ"),
        ("a removed field", lambda t: t.replace("    stream::Ptr{Cvoid}\n", "", 1), "fields differ"),
        ("a constant value", lambda t: t.replace("const GW_ERR_MISMATCH = gw_status(-9)", "const GW_ERR_MISMATCH = gw_status(-19)", 1), "constant GW_ERR_MISMATCH"),
    ]
    for what, plant, expect in plants:
        changed = plant(text)
        assert changed != text, f"self-test could not plant {what}: the wrapper text changed shape"
        errs = compare(c, parse_julia(changed))
        assert any(expect in e for e in errs), f"the checker missed {what}: {errs}"
        print(f"self-test: {what} is detected ({errs[0].splitlines()[0]})")


def main(argv):
    test = argv[1:2] == ["--self-test"]
    args = argv[2:] if test else argv[1:]
    if len(args) != 2:
        print(__doc__)
        return 2
    header_dir, jl_file = args
    with open(jl_file) as f:
        text = f.read()
    if test:
        self_test(header_dir, text)
        return 0
    c = parse_c(header_dir)
    errors = compare(c, parse_julia(text))
    if errors:
        print(f"{jl_file} differs from {header_dir}/gradwire.h ({len(errors)}):")
        for e in errors:
            print("  " + e)
        print("Update the Julia wrappers to match the header.")
        return 1
    print(f"OK: {len(c[0])} functions, {sum(1 for v in c[1].values() if v)} structs, {len(c[2])} constants match")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
