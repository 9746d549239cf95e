#!/usr/bin/env bash
# Diagnostic (not a test): 30 malformed frames carrying stream 1's signature (bad UDP/IPv4
# checksum, UDP length, a VLAN tag, a fragment, foreign address and port, past and future
# timestamps, far sequence numbers) are sent from a raw socket in the lab DUT's namespace in
# the middle of an 8 s XDP trial, at 500 kpps and at 10 kpps; the trial's summary must account
# for all of them (invalid by reason, or received late/out of order for a forged sequence number
# inside the range sent). Needs root and Debian's python3-scapy (/usr/bin/python3).
#   sudo scripts/dev/rx-inject-check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
W=./target/release/wirerate
[ -x "$W" ] || cargo build --release --quiet
L=rxinj
trap '$W lab down --name $L >/dev/null 2>&1 || true' EXIT INT TERM
$W lab up --name $L --profile forward >/dev/null
for rate in 500kpps 10kpps; do
  ip netns exec wr-$L-dut /usr/bin/python3 scripts/dev/rx-inject-malformed.py 2 &
  inj=$!
  out=$($W trial --lab $L --size 128 --rate $rate --duration 8 --backend xdp 2>&1)
  wait $inj
  echo "== $rate"; grep -E "^ +1 |WARNING" <<<"$out"
done
