#!/usr/bin/env bash
# The main job on the built-in lab: install what is missing, build, then show what wirerate
# does today — the line-rate table, a crafted capture decoded by tshark, the tester's own
# calibration, and plans/lab-demo.toml run unattended on the namespace lab (a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --quiet
# Where the demo's minutes go (docs/measurements.md quotes them): bash counts SECONDS from start.
took() { printf '%dm%02ds' $((SECONDS / 60)) $((SECONDS % 60)); }
echo "== Installed and built in $(took)"
W=./target/release/wirerate
out=$(mktemp -d /tmp/wirerate-demo.XXXXXX)

echo "== Theoretical rates at 1 Gb/s, PPPoE over VLAN, both directions"
$W linerate --speed 1G --encap pppoe+vlan --bidirectional

echo; echo "== Ten 64-byte PPPoE test frames, written to $out/pppoe.pcap and decoded by tshark"
$W craft --encap pppoe --size 64 --count 10 --pppoe-session=0x1234 -o "$out/pppoe.pcap"
tshark -r "$out/pppoe.pcap" 2>/dev/null | head -3

echo; echo "== The main job: plans/lab-demo.toml, the forwarding matrix of DESIGN.md §1 on the lab"
echo "   (6 DUT profiles × UDP 64/512/1518 B, NDR and PDR searched from line rate on the XDP engine,"
echo "    + TCP 1/2/4 sessions × IPv4/IPv6)"
$W plan check plans/lab-demo.toml --quiet
echo; echo "== The tester's own ceiling first (direct link, no DUT), so DUT figures near it are flagged"
$W calibrate --sizes 64,82,512,1518 --duration 1 --out "$out/calibration.json"
echo "   (calibrated by $(took))"
echo
# The run builds the lab, applies each profile, measures, removes the lab (also on Ctrl-C),
# and renders the report into the run directory.
$W run plans/lab-demo.toml --out "$out/run" --calibration "$out/calibration.json"
echo; echo "Results: $out/run (trials.jsonl, hooks.jsonl, iperf3/, report.html)"
echo "Demo finished in $(took)"
