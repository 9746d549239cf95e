#!/usr/bin/env python3
"""Proves that the pure crates build and test without clang, from their dependency graph alone
(no second build). `scripts/test.sh` runs it after the suite; exit status 1 names what is wrong.

The pure crates (docs/architecture.md) are wire, emulate, lab-model, bench-model and report.
Cargo runs code of a package while building only in two ways: its build script (`build.rs`)
and, for a proc-macro package, the macro itself. clang can therefore only be started by one of
those. For each pure crate this script takes the packages `cargo test -p CRATE` builds (normal,
build and dev dependencies: `cargo tree -e normal,build,dev`) and checks that

1. none of them is one that compiles or loads BPF: `bpf-build` (runs clang), `aya`/`aya-obj`,
   `lab` (aya, and clang with its `fastpath` feature) or `engine` (clang);
2. every package among them with a build script or a proc macro (`cargo metadata`) is one whose
   build-time code has been read and starts nothing but rustc (`REVIEWED`, below). A package
   new to the graph with either fails the check, naming it: read its build.rs or macro, and if
   it compiles nothing add it to `REVIEWED` with what it does.

    scripts/dev/pure-crates.py [CRATE...]     (default: the pure crates; `bench` shows a failure)
"""
import json
import os
import subprocess
import sys

PURE = ["wire", "emulate", "lab-model", "bench-model", "report"]

FORBIDDEN = {
    "bpf-build": "compiles BPF programs with clang",
    "aya": "loads BPF programs",
    "aya-obj": "loads BPF programs",
    "lab": "links aya, and runs clang with its `fastpath` feature",
    "engine": "runs clang for its XDP programs",
}

# Build-time code read and found to start nothing but rustc (versions in Cargo.lock when read).
REVIEWED = {
    "libc": "build.rs: rustc --version and the target, to set cfgs",
    "getrandom": "build.rs: sets cfgs from the target, starts nothing",
    "num-traits": "build.rs: autocfg probes rustc for features",
    "proc-macro2": "build.rs: rustc --version and feature probes with rustc",
    "quote": "build.rs: rustc --version",
    "rustix": "build.rs: rustc feature probes; no C (its assembly is inline Rust)",
    "serde": "build.rs: rustc --version",
    "serde_core": "build.rs: rustc --version",
    "serde_json": "build.rs: sets cfgs from the target, starts nothing",
    "zmij": "build.rs: rustc --version",
    "serde_derive": "proc macro: derives Serialize/Deserialize, starts nothing",
}


def cargo(*args):
    out = subprocess.run(["cargo", *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"cargo {' '.join(args)} failed:\n{out.stderr}")
    return out.stdout


def build_time_code(metadata):
    """Package name -> what runs at build time ('build script', 'proc macro')."""
    found = {}
    for p in metadata["packages"]:
        kinds = {k for t in p["targets"] for k in t["kind"]}
        what = [w for k, w in (("custom-build", "build script"), ("proc-macro", "proc macro")) if k in kinds]
        if what:
            found[p["name"]] = " and ".join(what)
    return found


def graph(crate):
    """The package names `cargo test -p CRATE` builds."""
    text = cargo("tree", "-p", crate, "-e", "normal,build,dev", "--prefix", "none", "--format", "{p}")
    return {line.split()[0] for line in text.splitlines() if line.strip()}


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    runs_at_build = build_time_code(json.loads(cargo("metadata", "--format-version", "1")))
    problems = []
    for crate in sys.argv[1:] or PURE:
        packages = graph(crate)
        bad = sorted(packages & FORBIDDEN.keys())
        for b in bad:
            problems.append(f"{crate}: depends on {b}, which {FORBIDDEN[b]}")
        unreviewed = sorted(p for p in packages if p in runs_at_build and p not in REVIEWED)
        for u in unreviewed:
            problems.append(
                f"{crate}: {u} runs code at build time ({runs_at_build[u]}) that nobody has read "
                f"for what it starts: read it, and if it starts nothing but rustc add it to "
                f"REVIEWED in scripts/dev/pure-crates.py"
            )
        at_build = sorted(p for p in packages if p in runs_at_build)
        if bad or unreviewed:
            print(f"{crate}: {len(packages)} packages: NOT PURE (below)")
        else:
            print(
                f"{crate}: {len(packages)} packages; none of {', '.join(sorted(FORBIDDEN))}; "
                f"build-time code only in reviewed {', '.join(at_build) or '(none)'}"
            )
    for p in problems:
        print(f"not pure: {p}")
    if problems:
        print(f"{len(problems)} problem(s): the crates above would not build without clang, or "
              "might not", file=sys.stderr)
        sys.exit(1)
    print("pure crates: no BPF toolchain and no unreviewed build-time code in their graphs")


if __name__ == "__main__":
    main()
