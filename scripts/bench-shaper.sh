#!/usr/bin/env bash
# Benchmark (not a test): does the lab's wire-like link hold its line rate? On the direct lab
# (A — B, no DUT), port A's egress is shaped (`wirerate lab links --speed S`: tbf with L1
# accounting, TSO/GSO off) and iperf3 sends UDP frames of one size through it at twice the
# line rate; port B's kernel counters count what arrives over the middle of the run. Prints
# frames/s offered (iperf3's own count: a sender the shaper holds back offers about the line
# rate) and received, the line rate's frames/s for that size and speed, and the ratios
# received/line rate (the shaper holds the line rate when it is 1.00 ± 0.01) and
# received/offered (where the sender cannot reach the line rate — iperf3 sends 0.2–0.35 Mpps
# here — the question is whether the shaper costs anything below it). Also prints the
# machine's load, since the figures depend on it.
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
tmp=$(mktemp)
cleanup() { $W lab down --name $lab >/dev/null 2>&1 || true; rm -f "$tmp"; }
trap cleanup EXIT INT TERM
$W lab up --topology direct --name $lab >/dev/null
A="ip netns exec wr-$lab-a"
B="ip netns exec wr-$lab-b"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); ${seconds} s per case, received counted over the middle $((seconds - 1)) s"
printf '%-6s %6s %13s %13s %13s %10s %10s  %s\n' speed frame offered_fps recv_fps line_fps recv/line recv/offer note
for c in "${cases[@]}"; do
  speed=${c%%:*} frame=${c##*:}
  $W lab links --name $lab --speed "$speed" >/dev/null
  payload=$((frame - 18 - 20 - 8))   # Ethernet+FCS, IPv4, UDP
  bps=$(python3 -c "
import re
m=re.fullmatch(r'([0-9.]+)([KMG]?)', '$speed'); print(int(float(m[1])*{'':1,'K':1e3,'M':1e6,'G':1e9}[m[2]]))")
  $B iperf3 -s -1 -D -p 5301 >/dev/null
  sleep 0.3
  $A iperf3 -c 198.51.100.3 -p 5301 -u -l "$payload" -b "$((2 * bps))" -t "$seconds" -J >"$tmp" 2>/dev/null &
  client=$!
  sleep 0.5
  read -r rx0 < <($B cat /sys/class/net/wr-b/statistics/rx_packets)
  t0=$(date +%s.%N)
  sleep $((seconds - 1))
  read -r rx1 < <($B cat /sys/class/net/wr-b/statistics/rx_packets)
  t1=$(date +%s.%N)
  wait $client || true
  python3 - "$speed" "$frame" "$bps" "$rx0" "$rx1" "$t0" "$t1" "$tmp" <<'EOF'
import json, sys
speed, frame, bps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rx0, rx1 = int(sys.argv[4]), int(sys.argv[5])
t = float(sys.argv[7]) - float(sys.argv[6])
end = json.load(open(sys.argv[8]))["end"]["sum"]
sent = end["packets"] / end["seconds"]   # what iperf3 handed to the shaper, whole run
line = bps / ((frame + 20) * 8)
recv = (rx1 - rx0) / t                   # what arrived at port B, middle of the run
# iperf3 asks for twice the line rate; a sender held back by the shaper (its socket waits
# for the qdisc) offers about the line rate, which is then what the shaper let through.
note = "shaper holds the line rate" if sent >= 0.95 * line else "sender below line rate (%.0f %%): shaper not the limit" % (100 * sent / line)
print("%-6s %6d %13.0f %13.0f %13.0f %10.4f %10.4f  %s" % (speed, frame, sent, recv, line, recv / line, recv / sent, note))
EOF
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
