#!/usr/bin/python3
"""A PPPoE access concentrator played by scapy, for one subscriber: PADO (with an AC-Cookie
it checks on PADR), PADS, LCP (our MRU, PAP, magic), PAP against one user/password, IPCP
(Naks the subscriber to --address and the DNS servers), Protocol-Reject of IPv6CP, Echo
replies; then waits for the subscriber to end the session (LCP Terminate and/or PADT).
Prints one `RESULT {json}` line; exit 0 when the session came up and the subscriber's PADT
ended it.

usage: pppoe_server.py --iface IF [--user U --password P] [--address A] [--mru 1492]
"""
import argparse
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pppoe_common import *  # noqa: E402,F401,F403
from scapy.layers.ppp import PPP_LCP_Configure, PPP_LCP_MRU_Option  # noqa: E402
from scapy.layers.ppp import PPP_LCP_Magic_Number_Option, PPP_PAP_Request  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--user", default="wirerate")
    ap.add_argument("--password", default="wirerate")
    ap.add_argument("--address", default="203.0.113.77")
    ap.add_argument("--gateway", default="203.0.113.1")
    ap.add_argument("--dns", default="203.0.113.53")
    ap.add_argument("--mru", type=int, default=1492)
    ap.add_argument("--session-id", type=lambda s: int(s, 0), default=0x1234)
    ap.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args()

    port = Port(a.iface)
    me = port.mac
    out = {"ok": False, "up": False}
    end = time.monotonic() + a.timeout
    cookie = os.urandom(16)
    sid = a.session_id
    client = None

    def fail(msg):
        out["error"] = msg
        result(out)
        return 1

    # --- discovery -------------------------------------------------------------------------
    while client is None or "pads" not in out:
        p = port.recv(end)
        if p is None:
            return fail("timeout in discovery")
        if not p.haslayer(PPPoED):
            continue
        code, tags = p[PPPoED].code, tags_of(p)
        d = dict(tags)
        if code == PADI:
            out["padi_service"] = d.get(TAG_SERVICE_NAME, b"").decode()
            out["padi_host_uniq"] = TAG_HOST_UNIQ in d
            reply = [tag(TAG_AC_NAME, b"scapy-ac"), tag(TAG_SERVICE_NAME, d.get(TAG_SERVICE_NAME, b""))]
            if TAG_HOST_UNIQ in d:
                reply.append(tag(TAG_HOST_UNIQ, d[TAG_HOST_UNIQ]))
            reply.append(tag(TAG_AC_COOKIE, cookie))
            port.send(disc(me, p[Ether].src, PADO, 0, reply))
        elif code == PADR and p[Ether].dst == me:
            if d.get(TAG_AC_COOKIE) != cookie:
                out["padr_bad_cookie"] = out.get("padr_bad_cookie", 0) + 1
                continue
            client = p[Ether].src
            reply = [tag(TAG_SERVICE_NAME, d.get(TAG_SERVICE_NAME, b""))]
            if TAG_HOST_UNIQ in d:
                reply.append(tag(TAG_HOST_UNIQ, d[TAG_HOST_UNIQ]))
            port.send(disc(me, client, PADS, sid, reply))
            out["pads"] = True
    out["client_mac"] = client

    # --- PPP -----------------------------------------------------------------------------
    magic = struct.unpack("!I", os.urandom(4))[0] | 1
    lcp_req = opt(1, struct.pack("!H", a.mru)) + opt(3, struct.pack("!H", PROTO_PAP)) \
        + opt(5, struct.pack("!I", magic))
    ipcp_req = opt(3, ip4(a.gateway))
    lcp_id, ipcp_id = 1, 1
    lcp_ours = lcp_theirs = auth = ipcp_ours = ipcp_theirs = False
    last = {"lcp": 0.0, "ipcp": 0.0}
    up_at = None

    def tx(proto, pkt):
        port.send(sess(me, client, sid, proto, pkt))

    while True:
        now = time.monotonic()
        if now > end:
            return fail("timeout (lcp %s/%s auth %s ipcp %s/%s)" % (
                lcp_ours, lcp_theirs, auth, ipcp_ours, ipcp_theirs))
        if not lcp_ours and now - last["lcp"] > 1.0:
            tx(PROTO_LCP, cp_packet(1, lcp_id, lcp_req))
            last["lcp"] = now
        if auth and not ipcp_ours and now - last["ipcp"] > 1.0:
            tx(PROTO_IPCP, cp_packet(1, ipcp_id, ipcp_req))
            last["ipcp"] = now
        if up_at is None and ipcp_ours and ipcp_theirs:
            up_at = now
            out["up"] = True
            log("session up")
        p = port.recv(min(now + 0.2, end))
        if p is None:
            continue
        if p.haslayer(PPPoED) and p[PPPoED].code == PADT:
            if p[PPPoED].sessionid == sid and p[Ether].src == client:
                out["padt_from_client"] = True
                out["ok"] = out["up"]
                result(out)
                return 0 if out["ok"] else 1
            continue
        proto, body = ppp_of(p)
        if proto is None or p[PPPoE].sessionid != sid:
            continue
        c = cp_parse(body)
        if c is None:
            continue
        code, ident, data = c
        if proto == PROTO_LCP:
            if code == 1:
                req = PPP_LCP_Configure(body)
                for o in req.options:
                    if isinstance(o, PPP_LCP_MRU_Option):
                        out["client_mru"] = o.max_recv_unit
                    elif isinstance(o, PPP_LCP_Magic_Number_Option):
                        out["client_magic"] = o.magic_number
                tx(PROTO_LCP, cp_packet(2, ident, data))
                lcp_theirs = True
            elif code == 2 and ident == lcp_id:
                lcp_ours = True
            elif code in (3, 4) and ident == lcp_id:
                out.setdefault("lcp_nak_or_reject", []).append(code)
                lcp_id += 1
                last["lcp"] = 0.0
            elif code == 9:
                tx(PROTO_LCP, cp_packet(10, ident, struct.pack("!I", magic) + data[4:]))
                out["echo_answered"] = out.get("echo_answered", 0) + 1
            elif code == 5:
                tx(PROTO_LCP, cp_packet(6, ident))
                out["terminate_from_client"] = True
        elif proto == PROTO_PAP and code == 1:
            req = PPP_PAP_Request(body)
            user, pw = bytes(req.username).decode(), bytes(req.password).decode()
            out["pap_user"] = user
            if (user, pw) == (a.user, a.password):
                tx(PROTO_PAP, cp_packet(2, ident, b"\x00"))
                auth = True
            else:
                tx(PROTO_PAP, cp_packet(3, ident, b"\x00"))
                out["pap_nak"] = True
        elif proto == PROTO_IPCP:
            if code == 1:
                opts = options(data) or []
                want = {3: ip4(a.address), 129: ip4(a.dns), 131: ip4(a.dns)}
                nak = b"".join(opt(t, want[t]) for t, v in opts if t in want and v != want[t])
                rej = b"".join(opt(t, v) for t, v in opts if t not in want)
                out["ipcp_client_options"] = sorted(t for t, _ in opts)
                if rej:
                    tx(PROTO_IPCP, cp_packet(4, ident, rej))
                elif nak:
                    tx(PROTO_IPCP, cp_packet(3, ident, nak))
                    out["ipcp_naks"] = out.get("ipcp_naks", 0) + 1
                else:
                    tx(PROTO_IPCP, cp_packet(2, ident, data))
                    ipcp_theirs = True
            elif code == 2 and ident == ipcp_id:
                ipcp_ours = True
        elif proto == PROTO_IPV6CP and code == 1:
            tx(PROTO_LCP, cp_packet(8, 0x40, struct.pack("!H", proto) + body))
            out["ipv6cp_rejected"] = True


if __name__ == "__main__":
    sys.exit(main())
