#!/usr/bin/env bash
# The main job on the built-in lab: install what is missing, build, then show what wirerate
# does today — the line-rate table, a crafted capture decoded by tshark, and the namespace lab
# brought up, exercised and taken down.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --quiet
W=./target/release/wirerate
out=$(mktemp -d /tmp/wirerate-demo.XXXXXX)

echo "== Theoretical rates at 1 Gb/s, PPPoE over VLAN, both directions"
$W linerate --speed 1G --encap pppoe+vlan --bidirectional

echo; echo "== Ten 64-byte PPPoE test frames, written to $out/pppoe.pcap and decoded by tshark"
$W craft --encap pppoe --size 64 --count 10 --pppoe-session 0x1234 -o "$out/pppoe.pcap"
tshark -r "$out/pppoe.pcap" 2>/dev/null | head -3

if $W lab --help >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  echo; echo "== The built-in lab: tester A — Linux DUT — tester B"
  trap '$W lab down --name demo >/dev/null 2>&1 || true' EXIT
  $W lab up --name demo --topology forward --profile forward
  $W lab status --name demo
  $W lab exec --name demo a -- ping -c 3 -i 0.2 203.0.113.2 || true
  $W lab down --name demo
  trap - EXIT
fi
