#!/usr/bin/env bash
# The whole test suite: installs missing system packages, then runs every test of every crate.
# Run as root: the lab and engine tests build network namespaces (without root they print
# "SKIP: <reason>" instead of passing silently, and this script lists those reasons at the end).
# With WIRERATE_REQUIRE_ROOT=1 (set by .ci/run) any skipped test fails the suite: CI runs as
# root with every dependency installed, so a skip there means a test that did not run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p target
log=target/test-suite.log
suite_start=$(date +%s)
# Release mode: the engine's rate tests measure a real sender, not a debug build.
# --show-output prints what passing tests printed, so their SKIP lines reach the log.
set +e
cargo test --workspace --release --no-fail-fast -- --show-output 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# The pure crates build and pass their tests without the BPF toolchain (issues 18, 34). Their
# tests ran above; that they need no clang is proven from their dependency graphs, without a
# second build: none of them depends on bpf-build, aya, lab or engine, and the only code that
# runs while they build (build scripts, proc macros) is code read to start nothing but rustc.
# (lab's vocabulary and its tests are lab-model's, a pure crate; what lab's `fastpath` feature
# switches, the embedded BPF objects, no pure crate reaches any more.)
echo "== pure crates without clang: wire, emulate, lab-model, bench-model, report" | tee -a "$log"
if ! python3 scripts/dev/pure-crates.py 2>&1 | tee -a "$log"; then
    echo "the pure crates would need the BPF toolchain (see above)" >&2
    rc=1
fi
# No two modules of a crate import each other (issue 18): a circle is a module that should be
# split or a type that lives in the wrong place; the script names the pair.
echo "== import circles" | tee -a "$log"
if ! python3 scripts/dev/import-circles.py 2>&1 | tee -a "$log"; then
    rc=1
fi
set -e
skips=$(grep -E '^[[:space:]]*SKIP' "$log" | sed 's/^[[:space:]]*//' | sort | uniq -c || true)
# N/A: a test whose subject does not exist here (e.g. a refusal a full-featured kernel never
# gives); listed, never a failure.
na=$(grep -E '^[[:space:]]*N/A:' "$log" | sed 's/^[[:space:]]*//' | sort | uniq -c || true)
if [ -n "$na" ]; then
    echo
    echo "Tests not applicable on this machine (reason, how many):"
    echo "$na"
fi
if [ -n "$skips" ]; then
    echo
    echo "Tests that did not run (reason, how many):"
    echo "$skips"
    if [ "${WIRERATE_REQUIRE_ROOT:-}" = 1 ]; then
        echo "WIRERATE_REQUIRE_ROOT=1: every test must run here; failing the suite for the skips above" >&2
        rc=1
    fi
fi
# Growth stays visible: the ten slowest test binaries (libtest's own "finished in" figure)
# and the suite's wall time, build included.
echo
echo "The ten slowest test binaries (seconds, as libtest timed them):"
awk -f scripts/dev/slowest-tests.awk "$log" | sort -rn | head -10
echo "suite wall time: $(( $(date +%s) - suite_start )) s (build included)"
echo "full output: $log"
exit "$rc"
