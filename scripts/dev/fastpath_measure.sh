#!/bin/sh
# The fast path's benchmark in docs/lab.md ("The fast path", "Measured"): on lab NAME, 64 B
# IPv4 UDP A->B from the XDP sender at 3 Mpps for 5 s, fast path off and on alternated, three
# rounds, with the load average before each trial. Not a test: the figures depend on the
# machine and on what else runs on it.
#
#   sudo wirerate lab up --name fpb --profile forward
#   sudo scripts/dev/fastpath_measure.sh fpb
#
# For napt, make the stream's flow established first (one-way UDP never takes the fast path):
# PRIME is run before every trial, e.g. one reply from B to the DUT's masqueraded address and
# the stream's source port (1024 for `wirerate trial`'s single stream):
#
#   sudo wirerate lab up --name fpn --profile napt
#   sudo PRIME="ip netns exec wr-fpn-b /usr/bin/python3 -c \"from scapy.all import *; conf.verb=0; \
#     sendp(Ether(dst='02:77:72:00:01:0b')/IP(src='203.0.113.2',dst='203.0.113.1')/UDP(sport=9,dport=1024)/Raw(b'x'*18), iface='wr-b')\"" \
#     scripts/dev/fastpath_measure.sh fpn
set -e
W=${WIRERATE:-wirerate}
L=${1:?usage: fastpath_measure.sh LAB}
for round in 1 2 3; do
  for fp in off on; do
    $W lab fastpath --name "$L" $fp >/dev/null
    if [ -n "$PRIME" ]; then sh -c "$PRIME"; fi
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    r=$($W trial --lab "$L" --size 64 --rate 3Mpps --duration 5 --backend xdp 2>&1 |
      grep "a->b:" | sed 's/.*rx \([0-9.]* [kM]pps\).*/\1/')
    echo "round $round fastpath $fp: rx $r (load $load)"
  done
done
