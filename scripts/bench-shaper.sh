#!/usr/bin/env bash
# Benchmark (not a test): does the lab's wire-like link hold its line rate? On the direct lab
# (A — B, no DUT), port A's egress is shaped (`wirerate lab links --speed S`: tbf with L1
# accounting, TSO/GSO off) and iperf3 sends UDP frames of one size through it at twice the
# line rate; port B's kernel counters count what arrives over the middle of the run. Prints
# frames/s received, the line rate's frames/s for that size and speed, and their ratio (the
# shaper holds the line rate when the ratio is 1.00 ± 0.01). Cases whose offer cannot reach
# the line rate on this machine (iperf3 sends about 0.2 Mpps here) show the ratio of what
# arrived to what was sent instead: there the question is whether the shaper costs anything
# below line rate. Also prints the machine's load, since the figures depend on it.
#
#   sudo scripts/bench-shaper.sh [--seconds N] [CASE...]     CASE = SPEED:FRAME, e.g. 1G:1518
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=4
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    *:*) cases+=("$1"); shift ;;
    *) echo "usage: $0 [--seconds N] [SPEED:FRAME ...]" >&2; exit 2 ;;
  esac
done
[ ${#cases[@]} -gt 0 ] || cases=(100M:64 100M:1518 1G:1518 1G:64)
W=./target/release/wirerate
[ -x "$W" ] || cargo build --release --quiet
lab=bsh
cleanup() { $W lab down --name $lab >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM
$W lab up --topology direct --name $lab >/dev/null
A="ip netns exec wr-$lab-a"
B="ip netns exec wr-$lab-b"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); ${seconds} s per case, counted over the middle $((seconds - 1)) s"
printf '%-6s %6s %13s %13s %13s %7s %s\n' speed frame shaped_fps recv_fps line_fps ratio note
for c in "${cases[@]}"; do
  speed=${c%%:*} frame=${c##*:}
  $W lab links --name $lab --speed "$speed" >/dev/null
  payload=$((frame - 18 - 20 - 8))   # Ethernet+FCS, IPv4, UDP
  bps=$(python3 -c "
import re,sys
m=re.fullmatch(r'([0-9.]+)([KMG]?)', '$speed'); v=float(m[1])*{'':1,'K':1e3,'M':1e6,'G':1e9}[m[2]]
print(int(v))")
  $B iperf3 -s -1 -D -p 5301 >/dev/null
  sleep 0.3
  $A iperf3 -c 198.51.100.3 -p 5301 -u -l "$payload" -b "$((2 * bps))" -t "$seconds" >/dev/null 2>&1 &
  client=$!
  sleep 0.5
  qdrops() { $A tc -s -j qdisc show dev wr-a | python3 -c 'import json,sys; print(sum(q.get("drops",0) for q in json.load(sys.stdin)))'; }
  d0=$(qdrops)
  read -r tx0 < <($A cat /sys/class/net/wr-a/statistics/tx_packets)
  read -r rx0 < <($B cat /sys/class/net/wr-b/statistics/rx_packets)
  t0=$(date +%s.%N)
  sleep $((seconds - 1))
  read -r tx1 < <($A cat /sys/class/net/wr-a/statistics/tx_packets)
  d1=$(qdrops)
  read -r rx1 < <($B cat /sys/class/net/wr-b/statistics/rx_packets)
  t1=$(date +%s.%N)
  wait $client || true
  drops=$((d1 - d0))
  python3 - "$speed" "$frame" "$bps" "$tx0" "$tx1" "$rx0" "$rx1" "$t0" "$t1" "$drops" <<'EOF'
import sys
speed, frame, bps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tx0, tx1, rx0, rx1 = map(int, sys.argv[4:8])
t = float(sys.argv[9]) - float(sys.argv[8])
drops = int(sys.argv[10])
line = bps / ((frame + 20) * 8)
sent, recv = (tx1 - tx0) / t, (rx1 - rx0) / t
# The shaper drops what exceeds the rate (its qdisc drops); tx_packets counts what left it.
offered = sent + drops / t
if offered >= 1.02 * line:
    ratio, note = recv / line, "offered %.2fx line rate; ratio = received / line rate" % (offered / line)
else:
    ratio, note = recv / max(sent, 1), "offer below line rate (%.0f %%); ratio = received / sent" % (100 * offered / line)
print("%-6s %6d %13.0f %13.0f %13.0f %7.4f %s" % (speed, frame, sent, recv, line, ratio, note))
EOF
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
