#!/usr/bin/env bash
# Benchmark (not a test): does the sender keep its schedule? One 64 B IPv4 stream per trial,
# on the direct lab (no DUT) and through the kernel DUT (forward lab), at 1 kpps, 10 kpps,
# 100 kpps, 1 Mpps and line rate (1,488,095 fps at 1 Gb/s). Prints intended and offered rate,
# frames sent and slipped (dropped from the schedule after a stall), and frames lost (by the DUT
# on the forward lab; on the direct lab any loss is the tester's). Also prints the machine's
# load, since the figures depend on it.
#
#   sudo scripts/bench-pacing.sh [--backend xdp|af_packet] [--duration SECONDS] [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
backend=xdp duration=2 rounds=1
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--backend xdp|af_packet] [--duration SECONDS] [--rounds N]" >&2; exit 2 ;;
  esac
done
W=./target/release/wirerate
[ -x "$W" ] || cargo build --release --quiet
cleanup() { $W lab down --name bpd >/dev/null 2>&1 || true; $W lab down --name bpf >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM
$W lab up --topology direct --name bpd >/dev/null
$W lab up --topology forward --name bpf >/dev/null
echo "backend $backend, ${duration} s per trial, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %10s %14s %14s %10s %8s %9s %8s %9s\n' lab rate intended offered sent slipped slipped% lost lost%
for round in $(seq 1 "$rounds"); do
  for lab in bpd bpf; do
    for rate in 1kpps 10kpps 100kpps 1Mpps 100%; do
      $W trial --lab "$lab" --backend "$backend" --rate "$rate" --duration "$duration" --size 64 --json \
        | python3 -c '
import json, sys
lab, rate = sys.argv[1], sys.argv[2]
r = json.load(sys.stdin)
s = r["streams"][0]
tx, rx = s["tx"], s["rx"]
sent, slipped = tx["sent"], tx["slipped"]
lost = rx.get("lost") or 0
planned = sent + slipped
print("%-8s %10s %14.0f %14.0f %10d %8d %8.3f%% %8d %8.3f%%" % (
    {"bpd": "direct", "bpf": "forward"}[lab], rate, tx["intended_pps"], tx["achieved_pps"],
    sent, slipped, 100.0 * slipped / max(planned, 1), lost, 100.0 * lost / max(sent, 1)))
' "$lab" "$rate"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
