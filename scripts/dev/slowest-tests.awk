# Reads the output of `cargo test` and prints one line per test binary: the seconds libtest
# reported for it ("finished in N s") and which binary it was, for scripts/test.sh's summary.
# cargo names each binary on a "Running" line before its tests ("Running tests/run_live.rs
# (target/release/deps/run_live-1a2b…)" or "Running unittests src/lib.rs (…/wire-…)"), and
# "Doc-tests CRATE" before a crate's doc tests.
/^ *Running / {
    bin = $NF
    gsub(/[()]/, "", bin)
    sub(/.*\//, "", bin)
    sub(/-[0-9a-f]+$/, "", bin)
    src = ($2 == "unittests") ? $3 : $2
    current = bin " (" src ")"
}
/^ *Doc-tests / { current = "doc tests of " $2 }
/^test result:/ {
    for (i = 1; i <= NF; i++) {
        if ($i == "in") {
            t = $(i + 1)
            sub(/s$/, "", t)
            printf "%8.1f s  %s\n", t, current
        }
    }
}
