#!/usr/bin/env python3
"""What opening and closing an AF_PACKET socket costs here (docs/measurements.md, "A trial's
fixed cost"): created for ETH_P_ALL and then bound, against created for no protocol and given
it by the bind (what engine::sys::PacketSocket::open does), each with and without an RX ring,
and the close of each. Ten sockets per kind on a veth pair in a namespace of its own
(wr-sockcost), removed at the end. Run as root: python3 scripts/dev/packet-socket-cost.py"""
import socket
import struct
import subprocess
import sys
import time

NS = "wr-sockcost"
ETH_P_ALL = 3
SOL_PACKET, PACKET_RX_RING, PACKET_VERSION, TPACKET_V3 = 263, 5, 10, 2


def ring(s):
    s.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V3)
    block, blocks, frame = 1 << 20, 4, 2048
    s.setsockopt(SOL_PACKET, PACKET_RX_RING,
                 struct.pack("IIIIIII", block, blocks, frame, block * blocks // frame, 60, 0, 0))


def opened(proto_at_socket, ring_at):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL) if proto_at_socket else 0)
    if ring_at == "before bind":
        ring(s)
    s.bind(("v0", ETH_P_ALL))
    if ring_at == "after bind":
        ring(s)
    return s


def main():
    kinds = [("socket(ETH_P_ALL) + bind", True, None), ("socket(0) + bind(ETH_P_ALL)", False, None),
             ("socket(ETH_P_ALL) + bind + ring", True, "after bind"),
             ("socket(0) + bind(ETH_P_ALL) + ring", False, "after bind"),
             ("socket(0) + ring + bind(ETH_P_ALL)", False, "before bind")]
    for name, proto, with_ring in kinds:
        opens, closes = [], []
        for _ in range(10):
            t = time.perf_counter()
            s = opened(proto, with_ring)
            opens.append(time.perf_counter() - t)
            t = time.perf_counter()
            s.close()
            closes.append(time.perf_counter() - t)
        med = lambda v: sorted(v)[len(v) // 2] * 1000
        print(f"{name:34s} open {med(opens):6.2f} ms   close {med(closes):6.2f} ms   (medians of 10)")


if __name__ == "__main__":
    if "--inside" in sys.argv:
        main()
        sys.exit(0)
    sh = lambda *a: subprocess.run(a, check=True)
    sh("ip", "netns", "add", NS)
    try:
        sh("ip", "-n", NS, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
        sh("ip", "-n", NS, "link", "set", "v0", "up")
        sh("ip", "-n", NS, "link", "set", "v1", "up")
        sh("ip", "netns", "exec", NS, sys.executable, __file__, "--inside")
    finally:
        subprocess.run(["ip", "netns", "del", NS])
