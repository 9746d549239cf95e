"""Shared helpers of the scapy peers (run with Debian's /usr/bin/python3, which has scapy).

The peers speak PPPoE through scapy's own dissectors and builders (scapy.layers.ppp), so
they are an implementation independent of wirerate's `wire` and `emulate` crates.
"""
import json
import os
import select
import struct
import sys
import time

from scapy.all import conf, get_if_hwaddr, Ether, Raw  # noqa: F401
from scapy.layers.ppp import (  # noqa: F401
    PPP, PPPoE, PPPoED, PPPoED_Tags, PPPoETag,
)

ETH_PPPOE_DISC = 0x8863
ETH_PPPOE_SESS = 0x8864
PADI, PADO, PADR, PADS, PADT = 0x09, 0x07, 0x19, 0x65, 0xA7
TAG_SERVICE_NAME, TAG_AC_NAME, TAG_HOST_UNIQ = 0x0101, 0x0102, 0x0103
TAG_AC_COOKIE, TAG_RELAY_SESSION_ID = 0x0104, 0x0110
PROTO_LCP, PROTO_PAP, PROTO_CHAP, PROTO_IPCP, PROTO_IPV6CP = 0xC021, 0xC023, 0xC223, 0x8021, 0x8057
PROTO_IPV6 = 0x0057
BROADCAST = "ff:ff:ff:ff:ff:ff"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def result(obj):
    """The one line the Rust test reads."""
    print("RESULT " + json.dumps(obj, sort_keys=True), flush=True)


class Port:
    """A raw L2 socket on one interface; recv() skips our own frames."""

    def __init__(self, iface):
        self.iface = iface
        self.mac = get_if_hwaddr(iface)
        self.sock = conf.L2socket(iface=iface)

    def send(self, pkt):
        self.sock.send(pkt)

    def recv(self, until):
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.sock], [], [], min(left, 0.2))
            if not r:
                continue
            p = self.sock.recv()
            if p is None or not p.haslayer(Ether) or p[Ether].src == self.mac:
                continue
            if p[Ether].type not in (ETH_PPPOE_DISC, ETH_PPPOE_SESS):
                continue
            return p


def tags_of(p):
    """Discovery tags as a list of (type, bytes), via scapy's dissector."""
    if not p.haslayer(PPPoED_Tags):
        return []
    return [(t.tag_type, bytes(t.tag_value or b"")) for t in p[PPPoED_Tags].tag_list]


def tag(t, v=b""):
    return PPPoETag(tag_type=t, tag_value=v)


def disc(src, dst, code, sid, tags):
    return Ether(src=src, dst=dst) / PPPoED(code=code, sessionid=sid) / PPPoED_Tags(tag_list=tags)


def sess(src, dst, sid, proto, payload):
    """A session frame: PPPoE (scapy computes LENGTH) + PPP protocol + raw control packet."""
    return Ether(src=src, dst=dst) / PPPoE(sessionid=sid) / PPP(proto=proto) / Raw(payload)


def ppp_of(p):
    """(protocol, control-packet bytes) of a session frame, from scapy's PPP layer."""
    if not p.haslayer(PPPoE) or not p.haslayer(PPP):
        return None, b""
    ppp = p[PPP]
    body = bytes(ppp.payload)
    # Trim Ethernet padding: the PPPoE LENGTH covers the PPP protocol field + the packet.
    n = p[PPPoE].len - 2
    return ppp.proto, body[:n]


def cp_packet(code, ident, data=b""):
    """An LCP/IPCP/PAP packet: code, identifier, length, data."""
    return struct.pack("!BBH", code, ident, 4 + len(data)) + data


def cp_parse(b):
    if len(b) < 4:
        return None
    code, ident, n = struct.unpack("!BBH", b[:4])
    if n < 4 or n > len(b):
        return None
    return code, ident, b[4:n]


def options(data):
    out, i = [], 0
    while i + 2 <= len(data):
        t, n = data[i], data[i + 1]
        if n < 2 or i + n > len(data):
            return None
        out.append((t, data[i + 2:i + n]))
        i += n
    return out


def opt(t, v):
    return bytes([t, 2 + len(v)]) + v


def ip4(s):
    return bytes(int(x) for x in s.split("."))


def ip4s(b):
    return ".".join(str(x) for x in b)
