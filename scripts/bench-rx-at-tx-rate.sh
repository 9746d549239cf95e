#!/usr/bin/env bash
# Benchmark (not a test), issue 16 item 4: is the XDP receiver exact at the XDP sender's top
# rate? Each round measures the sender's top rate the way `bench tx` does (one core, 64 B
# signed frames into a veth whose peer only drops, median of alternating rounds against
# xdp-trafficgen), then sends N numbered frames from CPU 0 at that rate with the receiver's
# poll on CPU 1 (a NAPI thread of its own, SCHED_FIFO), and prints whether every sequence number
# was counted exactly once and none was refused, and how long the receive thread waited for its
# CPU (runnable, not running: the veth's 256-frame ring fills meanwhile), in how many events
# the veth refused frames, the sender's largest catch-up after a hold-up, and the 99.9th
# percentile of the counted frames' wait (send stamp to count; the ring is 256 / rate deep).
# Then the floor: the same N frames at the same rate into xdp-tools' `xdp-bench drop -p
# no-touch` (a receiver that does no work; `bench rx --against xdp-bench`), in the same NAPI
# thread on the same CPU: the frames the veth refuses behind it are refused whatever the
# receiver costs. Prints the machine's load, since every rate here depends on it.
#
#   sudo scripts/bench-rx-at-tx-rate.sh [--rounds N] [--frames N]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 frames=20000000
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--frames N]" >&2; exit 2 ;;
  esac
done
W=./target/release/wirerate
[ -x "$W" ] || cargo build --release --quiet
ncpu=$(nproc)
if [ "$ncpu" -lt 2 ]; then
  echo "needs 2 CPUs (the sender on CPU 0, the receiver on CPU 1); this machine has $ncpu" >&2
  exit 2
fi
printf '%-5s %-16s %13s %13s %12s %10s %7s %9s %-9s %12s %11s %14s %s\n' round load tx-median rx-sent-at counted refused events catch-up verdict "rx-waited-ms" "wait-p99.9us" "xdp-trafficgen" "floor-refused"
for round in $(seq 1 "$rounds"); do
  load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)
  tx=$($W bench tx --backend xdp --against xdp-trafficgen --duration 2 --rounds 3 --json)
  pps=$(printf '%s' "$tx" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["wirerate_pps"]))')
  peer=$(printf '%s' "$tx" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["tool_pps"]))')
  rx=$($W bench rx --backend xdp --source xdp --rx-cpu 1 -n "$frames" --rate "${pps}pps" --json || true)
  floor=$($W bench rx --backend xdp --source xdp --rx-cpu 1 -n "$frames" --rate "${pps}pps" --against xdp-bench --rounds 1 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["rounds"][0]["tool"]["refused"])')
  printf '%s' "$rx" | python3 -c '
import json, sys
r = json.load(sys.stdin)
v = "EXACT" if r["exact"] else ("once" if r["counted_once"] else "WRONG")
t = r.get("napi_sched")
waited = "%.1f" % (t["wait_ns"] / 1e6) if t else "n/a"
src = r.get("source") or {}
w = r.get("wait")
p999 = "%.0f" % (w["p999_ns"] / 1e3) if w else "n/a"
print("%-5s %-16s %13d %13.0f %12d %10d %7s %9s %-9s %12s %11s %14d %s" % (sys.argv[1], sys.argv[2], int(sys.argv[3]), r["source_pps"] or 0, r["counted"], r["refused"], src.get("refusal_events", "n/a"), src.get("max_catch_up", "n/a"), v, waited, p999, int(sys.argv[4]), sys.argv[5]))
' "$round" "$load" "$pps" "$peer" "$floor"
done
