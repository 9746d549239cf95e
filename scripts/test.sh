#!/usr/bin/env bash
# The whole test suite: installs missing system packages, then runs every test of every crate.
# Run as root: the lab and engine tests build network namespaces (without root they print
# "SKIP: <reason>" instead of passing silently).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
# Release mode: the engine's rate tests measure a real sender, not a debug build.
cargo test --workspace --release --no-fail-fast 2>&1
