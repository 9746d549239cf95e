#!/usr/bin/env python3
"""Lists two-module import circles inside each crate: module A names module B (through
`crate::B…` or `super::B…`) and B names A, neither being the other's parent. Issue 18 asks for
none; `scripts/test.sh` runs this and fails on any.

Comments and `#[cfg(test)]` modules are ignored (doc links and test helpers are not imports of
the code). Exit status 1 when a circle is found, with one line per circle.

    scripts/dev/import-circles.py [CRATES_DIR]
"""
import itertools
import os
import re
import sys


def module_name(src, path):
    rel = os.path.relpath(path, src)[:-3]
    if rel.endswith("/mod"):
        rel = rel[: -len("/mod")]
    return None if rel in ("lib", "main") else rel.replace("/", "::")


def references(name, text):
    code = text.split("#[cfg(test)]")[0]
    code = "\n".join(line.split("//")[0] for line in code.split("\n"))
    refs = set(m.group(1) for m in re.finditer(r"\bcrate::([a-z_0-9]+(?:::[a-z_0-9]+)*)", code))
    parent = "::".join(name.split("::")[:-1])
    for m in re.finditer(r"\bsuper::([a-z_0-9]+(?:::[a-z_0-9]+)*)", code):
        refs.add((parent + "::" if parent else "") + m.group(1))
    return refs


def resolve(ref, modules):
    """The module a path names: its longest prefix that is a module (`trial::config::X` names
    `trial::config`, not `trial`)."""
    parts = ref.split("::")
    for n in range(len(parts), 0, -1):
        m = "::".join(parts[:n])
        if m in modules:
            return m
    return None


def circles(crates):
    found = []
    for crate in sorted(os.listdir(crates)):
        src = os.path.join(crates, crate, "src")
        if not os.path.isdir(src):
            continue
        mods = {}
        for root, _, files in os.walk(src):
            for f in files:
                if f.endswith(".rs"):
                    p = os.path.join(root, f)
                    n = module_name(src, p)
                    if n:
                        with open(p, encoding="utf-8") as fh:
                            mods[n] = references(n, fh.read())
        edges = {m: {resolve(r, mods) for r in refs} for m, refs in mods.items()}
        for a, b in itertools.combinations(sorted(mods), 2):
            if a.startswith(b + "::") or b.startswith(a + "::"):
                continue
            if b in edges[a] and a in edges[b]:
                found.append(f"{crate}: {a} <-> {b}")
    return found


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    crates = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "crates")
    found = circles(crates)
    for c in found:
        print(f"import circle: {c}")
    if found:
        print(f"{len(found)} two-module import circle(s): move what both need to a module of its own",
              file=sys.stderr)
        sys.exit(1)
    print("no two-module import circles")
