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

echo; echo "== The built-in lab: tester A — Linux kernel DUT (own CPU) — tester B"
$W lab profiles
trap '$W lab down --name demo >/dev/null 2>&1 || true' EXIT
$W lab up --name demo --topology forward --profile forward
$W lab exec --name demo a -- ping -c 3 -i 0.2 203.0.113.2
$W lab exec --name demo a -- ping -c 3 -i 0.2 2001:db8:b::2

echo; echo "== A 3-second trial through the DUT: signed 64-byte UDP both ways at 20 kpps each"
$W trial --lab demo --direction both --rate 20kpps --duration 3

echo; echo "== TCP through the DUT with iperf3 (2 s), then the same with 100 stateful firewall rules"
for profile in forward filter-stateful-100; do
  $W lab profile --name demo "$profile"
  $W lab exec --name demo b -- iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
  server=$!
  # Wait for the server's port instead of sleeping a fixed time.
  for _ in $(seq 50); do
    $W lab exec --name demo b -- ss -ltn 2>/dev/null | grep -q ':5201 ' && break
    sleep 0.1
  done
  $W lab exec --name demo a -- iperf3 -c 203.0.113.2 -p 5201 -t 2 | grep -E 'sender|receiver' | sed "s/^/$profile: /"
  wait "$server" || true
done
$W lab stats --name demo | head -c 600; echo " …"

$W lab down --name demo
trap - EXIT
