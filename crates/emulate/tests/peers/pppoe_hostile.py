#!/usr/bin/python3
"""Hostile input for a PPPoE access concentrator, sent by scapy: one frame of each malformed
kind (truncated tags, wrong lengths, bad version, unknown and misplaced codes, wrong
EtherType, non-zero session ids, missing or broken tags, multicast source, PADRs without or
with a wrong cookie, frames and a PADT for a session that does not exist), then a flood of
valid PADIs from random MACs. Prints `RESULT {json}` with what was sent, per kind.

usage: pppoe_hostile.py --iface IF [--flood 3000]
"""
import argparse
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pppoe_common import *  # noqa: E402,F401,F403


def raw(src, dst, ethertype, body):
    return Ether(src=src, dst=dst, type=ethertype) / Raw(body)


def hdr(code, sid, length, ver_type=0x11):
    return struct.pack("!BBHH", ver_type, code, sid, length)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--flood", type=int, default=3000)
    a = ap.parse_args()
    port = Port(a.iface)
    me = port.mac

    # Find the AC with one ordinary PADI.
    port.send(disc(me, BROADCAST, PADI, 0, [tag(TAG_SERVICE_NAME)]))
    ac, end = None, time.monotonic() + 5
    while ac is None:
        p = port.recv(end)
        if p is None:
            result({"ok": False, "error": "no PADO"})
            return 1
        if p.haslayer(PPPoED) and p[PPPoED].code == PADO:
            ac = p[Ether].src

    sn = struct.pack("!HH", TAG_SERVICE_NAME, 0)
    frames = {
        # A Service-Name tag claiming 10 bytes with 2 present.
        "truncated_tags": raw(me, BROADCAST, ETH_PPPOE_DISC,
                              hdr(PADI, 0, 6) + struct.pack("!HH", TAG_SERVICE_NAME, 10) + b"ab"),
        # LENGTH 200 with 4 bytes of payload.
        "length_past_frame": raw(me, BROADCAST, ETH_PPPOE_DISC, hdr(PADI, 0, 200) + sn),
        # Three bytes: not even a PPPoE header.
        "truncated_header": raw(me, BROADCAST, ETH_PPPOE_DISC, b"\x11\x09\x00"),
        "bad_version": raw(me, BROADCAST, ETH_PPPOE_DISC, hdr(PADI, 0, 4, ver_type=0x21) + sn),
        "unknown_code": raw(me, ac, ETH_PPPOE_DISC, hdr(0x42, 0, 4) + sn),
        "pado_to_ac": raw(me, ac, ETH_PPPOE_DISC, hdr(PADO, 0, 4) + sn),
        "padi_on_session_ethertype": raw(me, BROADCAST, ETH_PPPOE_SESS, hdr(PADI, 0, 4) + sn),
        "padi_nonzero_session": raw(me, BROADCAST, ETH_PPPOE_DISC, hdr(PADI, 0x0007, 4) + sn),
        "padi_no_service_name": disc(me, BROADCAST, PADI, 0, [tag(TAG_HOST_UNIQ, b"x")]),
        "padi_bad_max_payload": disc(me, BROADCAST, PADI, 0, [tag(TAG_SERVICE_NAME), tag(0x0120, b"\x05\xdc\x00")]),
        "multicast_source": raw("01:00:5e:00:00:01", BROADCAST, ETH_PPPOE_DISC, hdr(PADI, 0, 4) + sn),
        "padr_no_cookie": disc(me, ac, PADR, 0, [tag(TAG_SERVICE_NAME)]),
        "padr_wrong_cookie": disc(me, ac, PADR, 0, [tag(TAG_SERVICE_NAME), tag(TAG_AC_COOKIE, b"\0" * 8)]),
        "session_unknown_id": sess(me, ac, 0x4242, PROTO_LCP, cp_packet(9, 1, b"\0\0\0\0")),
        "padt_unknown_id": disc(me, ac, PADT, 0x4242, []),
    }
    sent = {}
    for name, f in frames.items():
        port.send(f)
        sent[name] = 1
        time.sleep(0.01)

    # The flood: valid PADIs from random locally administered unicast MACs, as fast as we can.
    flood = []
    for i in range(a.flood):
        m = bytearray(os.urandom(6))
        m[0] = (m[0] & 0xFC) | 0x02
        src = ":".join("%02x" % b for b in m)
        flood.append(bytes(disc(src, BROADCAST, PADI, 0, [tag(TAG_SERVICE_NAME)])))
    t0 = time.monotonic()
    for f in flood:
        port.sock.outs.send(f)
    dt = time.monotonic() - t0
    result({"ok": True, "ac_mac": ac, "sent": sent, "flood": a.flood, "flood_seconds": dt})
    return 0


if __name__ == "__main__":
    sys.exit(main())
