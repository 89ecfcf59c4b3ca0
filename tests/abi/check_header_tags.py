#!/usr/bin/env python3
"""Checks the notes the public headers promise (docs/abi.md), reading the headers as text:

- every function (GW_API, static inline) and every callback (a function-pointer member or typedef)
  carries exactly one thread tag, "thread: <tag>", from the list defined once at the top of gradwire.h,
  in the comment right above it (a declaration without a comment of its own, right below another one,
  shares that one's comment);
- every exported function is in the version node of abi/libgradwire.map for the minor it arrived in, and
  says "since 1.<minor>" when that minor is after 1.0 (and nothing when it is 1.0);
- every member appended to an extensible struct after its first version (runtime/core/abi_struct.hpp)
  says "since 1.<minor>"; no note names a minor later than GW_ABI_VERSION_MINOR.

check_header_tags.py INCLUDE_DIR MAP ABI_STRUCT_HPP     checks the headers; prints every problem
check_header_tags.py --self-test                        plants each kind of problem and expects it found
"""
import os
import re
import sys
import tempfile

TAG_RE = re.compile(r"\bthread:\s*([A-Za-z][\w-]*)")
SINCE_RE = re.compile(r"\bsince (\d+)\.(\d+)\b", re.IGNORECASE)
FUNCTION_RE = re.compile(r"(?:\bGW_API\b|\bstatic\s+inline\b)[^;{]*?\b(gw_\w+)\s*\(")
CALLBACK_RE = re.compile(r"\(\s*\*\s*(\w+)\s*\)\s*\(")


def elements(text):
    """The file as a list of comments and statements, in order: dicts with kind, first and last line
    (1-based), text, and for comments whether they stand alone (nothing but blanks before them)."""
    out, i, line, n = [], 0, 1, len(text)
    stmt, stmt_first = [], None
    line_start = True  # only blanks so far on this line
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.index("*/", i + 2) + 2
            body = text[i:end]
            out.append({"kind": "comment", "first": line, "last": line + body.count("\n"), "text": body,
                        "alone": line_start})
            line += body.count("\n")
            i = end
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append({"kind": "comment", "first": line, "last": line, "text": text[i:end], "alone": line_start})
            i = end
            continue
        if c == "#" and line_start and not stmt:
            end = i
            while True:  # a preprocessor line, with its continuations
                end = text.find("\n", end)
                if end < 0 or text[end - 1] != "\\":
                    break
                end += 1
            end = n if end < 0 else end
            body = text[i:end]
            out.append({"kind": "preprocessor", "first": line, "last": line + body.count("\n"), "text": body})
            line += body.count("\n")
            i = end
            continue
        if c == "\n":
            line += 1
            line_start = True
            if re.fullmatch(r"[A-Z][A-Z0-9_]*", "".join(stmt).strip()):
                stmt = []  # a macro on a line of its own (GW_EXTERN_C_BEGIN)
            if stmt:
                stmt.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
            if not stmt:
                stmt_first = line
        if stmt or not c.isspace():
            stmt.append(c)
        if c in ";{}":
            out.append({"kind": "statement", "first": stmt_first, "last": line, "text": "".join(stmt)})
            stmt = []
        i += 1
    return out


def attached_comments(elems):
    """For each statement index, the text of the comment that documents it, or None."""
    result = {}
    for k, e in enumerate(elems):
        if e["kind"] != "statement":
            continue
        prev = elems[k - 1] if k > 0 else None
        doc = None
        if prev and prev["kind"] == "comment" and prev["alone"] and prev["last"] == e["first"] - 1:
            doc = prev["text"]
        elif prev and prev["kind"] == "statement" and prev["last"] == e["first"] - 1 and \
                (FUNCTION_RE.search(prev["text"]) or CALLBACK_RE.search(prev["text"])):
            doc = result.get(k - 1)
        result[k] = doc
    return result


def vocabulary(gradwire_h):
    """The tags defined at the top of gradwire.h: lines ' *       thread: <tag>   <meaning>'."""
    head = gradwire_h.split("#ifndef", 1)[0]
    return re.findall(r"^ \*\s+thread: ([a-z][\w-]*) +\S", head, re.MULTILINE)


def map_nodes(map_text):
    """function -> (major, minor) of its version node."""
    nodes, node = {}, None
    for raw in map_text.splitlines():
        m = re.match(r"^GRADWIRE_(\d+)\.(\d+) \{", raw)
        if m:
            node = (int(m.group(1)), int(m.group(2)))
            continue
        m = re.match(r"^\s+(gw_\w+);", raw)
        if m and node:
            nodes[m.group(1)] = node
    return nodes


def first_versions(abi_struct_hpp):
    """struct -> the last member of its first version."""
    return dict(re.findall(r"^GW_ABI_FIRST_VERSION\((\w+), (\w+),", abi_struct_hpp, re.MULTILINE))


def member_name(stmt):
    m = CALLBACK_RE.search(stmt)
    if m:
        return m.group(1)
    m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*;\s*$", stmt)
    return m.group(1) if m else None


def check(include_dir, map_path, abi_struct_path):
    problems = []
    headers = sorted(f for f in os.listdir(include_dir) if f.endswith(".h"))
    texts = {h: open(os.path.join(include_dir, h)).read() for h in headers}
    tags = vocabulary(texts.get("gradwire.h", ""))
    if not tags:
        return ["gradwire.h: no thread tags defined at its top (lines ' *   thread: <tag>  <meaning>')"]
    nodes = map_nodes(open(map_path).read())
    firsts = first_versions(open(abi_struct_path).read())
    minor_m = re.search(r"#define GW_ABI_VERSION_MINOR (\d+)", texts.get("types.h", ""))
    current_minor = int(minor_m.group(1)) if minor_m else 0
    declared = set()
    counted = 0

    for h in headers:
        elems = elements(texts[h])
        docs = attached_comments(elems)
        for k, e in enumerate(elems):
            if e["kind"] == "comment":
                for m in SINCE_RE.finditer(e["text"]):
                    if int(m.group(1)) != 1 or int(m.group(2)) > current_minor:
                        problems.append(f"{h}:{e['first']}: '{m.group(0)}' names a version this ABI "
                                        f"(1.{current_minor}) does not have")
            if e["kind"] != "statement":
                continue
            fn = FUNCTION_RE.search(e["text"])
            cb = None if fn else CALLBACK_RE.search(e["text"])
            if not fn and not cb:
                continue
            name = fn.group(1) if fn else cb.group(1)
            where = f"{h}:{e['first']}: {name}"
            counted += 1
            doc = docs.get(k)
            found = TAG_RE.findall(doc or "")
            if not found:
                problems.append(f"{where}: no thread tag; its comment needs one of: thread: " + ", ".join(tags))
            elif len(found) > 1:
                problems.append(f"{where}: {len(found)} thread tags ({', '.join(found)}); exactly one")
            elif found[0] not in tags:
                problems.append(f"{where}: unknown thread tag '{found[0]}'; the tags (gradwire.h): " + ", ".join(tags))
            if fn and "GW_API" in e["text"]:
                declared.add(name)
                since = SINCE_RE.findall(doc or "")
                node = nodes.get(name)
                if node is None:
                    problems.append(f"{where}: not in a version node of {os.path.basename(map_path)}: "
                                    "the library would not export it (docs/abi.md, Adding a minor)")
                elif node[1] == 0 and since:
                    problems.append(f"{where}: says 'since {'.'.join(since[0])}' but is in GRADWIRE_1.0")
                elif node[1] > 0 and [tuple(map(int, s)) for s in since] != [node]:
                    problems.append(f"{where}: is in GRADWIRE_{node[0]}.{node[1]}; its comment must say "
                                    f"'since {node[0]}.{node[1]}' (once)")

        # Members appended after a struct's first version say since when.
        text = texts[h]
        for struct, last in firsts.items():
            m = re.search(r"typedef struct %s \{\n(.*?)\n\} %s;" % (struct, struct), text, re.DOTALL)
            if not m:
                continue
            body_first = text[: m.start(1)].count("\n") + 1
            body = elements(m.group(1))
            body_docs = attached_comments(body)
            after_last = False
            for k, e in enumerate(body):
                if e["kind"] != "statement":
                    continue
                name = member_name(e["text"])
                if after_last:
                    doc = body_docs.get(k) or ""
                    trailing = body[k + 1]["text"] if k + 1 < len(body) and body[k + 1]["kind"] == "comment" \
                        and not body[k + 1]["alone"] and body[k + 1]["first"] == e["last"] else ""
                    if not SINCE_RE.search(doc + trailing):
                        problems.append(f"{h}:{body_first + e['first'] - 1}: {struct}.{name}: appended after the "
                                        f"first version (ends at {last}) without a 'since 1.x' note")
                if name == last:
                    after_last = True

    for name in sorted(set(nodes) - declared):
        problems.append(f"{os.path.basename(map_path)}: {name} is exported but declared in no header")
    if counted == 0:
        problems.append(f"{include_dir}: no function or callback found")
    return problems


GOOD_HEADER = """/*
 * gradwire.h
 *   thread: any        any thread.
 *   thread: comm       the communicator's thread.
 */
#ifndef G
#define G
#define GW_ABI_VERSION_MINOR 2
/* One. thread: any. */
GW_API int gw_one(void);
GW_API int gw_one_b(int a,
                    int b);
/* Since 1.2. Two. thread: comm. */
GW_API int gw_two(void);
typedef struct gw_s {
  uint32_t struct_size;
  int a;
  /* since 1.1. B. */
  int b;
  int c; /* since 1.2 */
  /* Since 1.2. Called back. thread: any. */
  void (*cb)(void* user);
} gw_s;
#endif
"""
GOOD_MAP = "GRADWIRE_1.0 {\n  global:\n    gw_one;\n    gw_one_b;\n  local:\n    *;\n};\n" \
           "GRADWIRE_1.2 {\n  global:\n    gw_two;\n} GRADWIRE_1.0;\n"
GOOD_STRUCTS = "GW_ABI_FIRST_VERSION(gw_s, a, GW_S_INIT);\n"

# (what is planted, the replacement in the good header or map, a text the problem report must hold)
PLANTED = [
    ("function without a tag", ("/* One. thread: any. */", "/* One. */"), "gw_one: no thread tag"),
    ("unknown tag", ("Two. thread: comm.", "Two. thread: whoever."), "unknown thread tag 'whoever'"),
    ("two tags", ("/* One. thread: any. */", "/* One. thread: any. thread: comm. */"), "2 thread tags"),
    ("callback without a tag", ("Called back. thread: any. */", "Called back. */"), "cb: no thread tag"),
    ("grouped declaration cut off by a blank line", ("gw_one(void);\n", "gw_one(void);\n\n"),
     "gw_one_b: no thread tag"),
    ("later function without since", ("/* Since 1.2. Two.", "/* Two."), "must say 'since 1.2'"),
    ("1.0 function with since", ("/* One. thread: any. */", "/* Since 1.1. One. thread: any. */"),
     "in GRADWIRE_1.0"),
    ("function not in the map", ("    gw_two;\n", ""), "gw_two: not in a version node"),
    ("appended member without since", ("  int c; /* since 1.2 */", "  int c;"), "gw_s.c: appended"),
    ("since a future minor", ("/* since 1.1. B. */", "/* since 1.3. B. */"), "'since 1.3' names a version"),
    ("no vocabulary", (" *   thread: any        any thread.\n *   thread: comm       the communicator's thread.\n",
                       ""), "no thread tags defined"),
]


def self_test():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        inc = os.path.join(d, "include")
        os.mkdir(inc)

        def run(header, map_text):
            with open(os.path.join(inc, "gradwire.h"), "w") as f:
                f.write(header)
            with open(os.path.join(inc, "types.h"), "w") as f:
                f.write("#define GW_ABI_VERSION_MINOR 2\n")
            with open(os.path.join(d, "map"), "w") as f:
                f.write(map_text)
            with open(os.path.join(d, "abi_struct.hpp"), "w") as f:
                f.write(GOOD_STRUCTS)
            return check(inc, os.path.join(d, "map"), os.path.join(d, "abi_struct.hpp"))

        good = run(GOOD_HEADER, GOOD_MAP)
        if good:
            failures.append("the good snippet was refused: " + "; ".join(good))
        for what, (old, new), expected in PLANTED:
            header, map_text = GOOD_HEADER, GOOD_MAP
            if old in header:
                header = header.replace(old, new, 1)
            elif old in map_text:
                map_text = map_text.replace(old, new, 1)
            else:
                failures.append(f"{what}: the planted text is not in the snippet")
                continue
            found = run(header, map_text)
            if not any(expected in p for p in found):
                failures.append(f"{what}: not reported (expected '{expected}', got {found})")
            else:
                print(f"ok: planted {what}: reported")
    return failures


def main(argv):
    if argv[1:] == ["--self-test"]:
        failures = self_test()
    elif len(argv) == 4:
        failures = check(argv[1], argv[2], argv[3])
        if not failures:
            print(f"ok: every function and callback of {argv[1]} has one thread tag from gradwire.h's list, "
                  "and every later addition its 'since' note")
    else:
        print(__doc__)
        return 2
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
