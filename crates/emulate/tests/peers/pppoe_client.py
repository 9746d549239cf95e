#!/usr/bin/python3
"""A PPPoE subscriber played by scapy: PADI/PADO/PADR/PADS, LCP (MRU, Magic-Number), PAP,
IPCP (address from the AC's pool), then PADT. Prints one `RESULT {json}` line; exit 0 when
the session came up (IPCP Configure-Ack with an address) and was ended with a PADT.

With --dhcpv6-pd it also runs IPv6CP (RFC 5072, its own interface identifier) and then asks
for a delegated prefix the way a home gateway does: a DHCPv6 Solicit with Rapid Commit and an
IA_PD (built and dissected by scapy's dhcp6 layers, not ours) from its link-local address to
ff02::1:2 over the session; the prefix of the Reply is `delegated` in the result, and exit 0
needs one.

usage: pppoe_client.py --iface IF [--user U --password P] [--mru 1454] [--timeout 20]
                       [--dhcpv6-pd]
"""
import argparse
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pppoe_common import *  # noqa: E402,F401,F403
from scapy.layers.ppp import PPP_LCP_Configure, PPP_LCP_MRU_Option, PPP_IPCP  # noqa: E402
from scapy.layers.ppp import PPP_LCP_Magic_Number_Option, PPP_LCP_Auth_Protocol_Option  # noqa: E402
from scapy.layers.ppp import PPP_IPCP_Option_IPAddress  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--user", default="wirerate")
    ap.add_argument("--password", default="wirerate")
    ap.add_argument("--mru", type=int, default=1454)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--hold", type=float, default=0.0, help="seconds to stay up before PADT")
    ap.add_argument("--dhcpv6-pd", action="store_true", help="IPv6CP, then DHCPv6 IA_PD")
    a = ap.parse_args()

    port = Port(a.iface)
    me = port.mac
    out = {"ok": False}
    end = time.monotonic() + a.timeout
    host_uniq = os.urandom(8)

    # --- discovery -------------------------------------------------------------------------
    ac = cookie = relay = None
    for attempt in range(5):
        port.send(disc(me, BROADCAST, PADI, 0, [tag(TAG_SERVICE_NAME), tag(TAG_HOST_UNIQ, host_uniq)]))
        t = time.monotonic() + 1.0
        while ac is None:
            p = port.recv(min(t, end))
            if p is None:
                break
            if not p.haslayer(PPPoED) or p[PPPoED].code != PADO:
                continue
            tags = dict(tags_of(p))
            if tags.get(TAG_HOST_UNIQ) != host_uniq:
                continue
            ac, cookie, relay = p[Ether].src, tags.get(TAG_AC_COOKIE), tags.get(TAG_RELAY_SESSION_ID)
            out["ac_name"] = tags.get(TAG_AC_NAME, b"").decode(errors="replace")
            out["cookie_len"] = len(cookie or b"")
        if ac is not None:
            break
    if ac is None:
        out["error"] = "no PADO"
        result(out)
        return 1
    out["ac_mac"] = ac
    sid = None
    padr_tags = [tag(TAG_SERVICE_NAME), tag(TAG_HOST_UNIQ, host_uniq)]
    if cookie is not None:
        padr_tags.append(tag(TAG_AC_COOKIE, cookie))
    if relay is not None:
        padr_tags.append(tag(TAG_RELAY_SESSION_ID, relay))
    for attempt in range(5):
        port.send(disc(me, ac, PADR, 0, padr_tags))
        t = time.monotonic() + 1.0
        while sid is None:
            p = port.recv(min(t, end))
            if p is None:
                break
            if p.haslayer(PPPoED) and p[PPPoED].code == PADS and p[Ether].src == ac:
                if dict(tags_of(p)).get(TAG_HOST_UNIQ) == host_uniq and p[PPPoED].sessionid != 0:
                    sid = p[PPPoED].sessionid
        if sid is not None:
            break
    if sid is None:
        out["error"] = "no PADS"
        result(out)
        return 1
    out["session_id"] = sid
    log(f"PADS: session {sid:#06x} from {ac}")

    # --- PPP -----------------------------------------------------------------------------
    magic = struct.unpack("!I", os.urandom(4))[0] | 1
    lcp_req = opt(1, struct.pack("!H", a.mru)) + opt(5, struct.pack("!I", magic))
    lcp_id, pap_id, ipcp_id = 1, 1, 1
    lcp_ours = lcp_theirs = auth = ipcp_ours = ipcp_theirs = False
    want_addr = b"\0\0\0\0"
    last = {"lcp": 0.0, "pap": 0.0, "ipcp": 0.0}
    # IPv6CP only with --dhcpv6-pd; otherwise it counts as done (and is Protocol-Rejected).
    v6 = a.dhcpv6_pd
    ipv6cp_ours = ipv6cp_theirs = not v6
    ipv6cp_id = 1
    iid = bytes([0x02]) + os.urandom(7)
    last["ipv6cp"] = 0.0

    def tx(proto, pkt):
        port.send(sess(me, ac, sid, proto, pkt))

    while not (ipcp_ours and ipcp_theirs and ipv6cp_ours and ipv6cp_theirs):
        now = time.monotonic()
        if now > end:
            out["error"] = "timeout in PPP (lcp_ours=%s lcp_theirs=%s auth=%s ipcp=%s/%s)" % (
                lcp_ours, lcp_theirs, auth, ipcp_ours, ipcp_theirs)
            result(out)
            return 1
        if not lcp_ours and now - last["lcp"] > 1.0:
            tx(PROTO_LCP, cp_packet(1, lcp_id, lcp_req))
            last["lcp"] = now
        if lcp_ours and lcp_theirs and not auth and now - last["pap"] > 1.0:
            u, pw = a.user.encode(), a.password.encode()
            tx(PROTO_PAP, cp_packet(1, pap_id, bytes([len(u)]) + u + bytes([len(pw)]) + pw))
            last["pap"] = now
        if auth and not ipcp_ours and now - last["ipcp"] > 1.0:
            tx(PROTO_IPCP, cp_packet(1, ipcp_id, opt(3, want_addr)))
            last["ipcp"] = now
        if auth and not ipv6cp_ours and now - last["ipv6cp"] > 1.0:
            tx(PROTO_IPV6CP, cp_packet(1, ipv6cp_id, opt(1, iid)))
            last["ipv6cp"] = now
        p = port.recv(min(now + 0.2, end))
        if p is None:
            continue
        if p.haslayer(PPPoED) and p[PPPoED].code == PADT:
            out["error"] = "PADT from the AC during setup"
            result(out)
            return 1
        proto, body = ppp_of(p)
        if proto is None or p[PPPoE].sessionid != sid:
            continue
        c = cp_parse(body)
        if c is None:
            continue
        code, ident, data = c
        if proto == PROTO_LCP:
            if code == 1:
                # Dissect the AC's request with scapy's LCP classes.
                req = PPP_LCP_Configure(body)
                for o in req.options:
                    if isinstance(o, PPP_LCP_MRU_Option):
                        out["ac_mru"] = o.max_recv_unit
                    elif isinstance(o, PPP_LCP_Magic_Number_Option):
                        out["ac_magic"] = o.magic_number
                    elif isinstance(o, PPP_LCP_Auth_Protocol_Option):
                        out["ac_auth"] = o.auth_protocol
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
            elif code == 5:
                tx(PROTO_LCP, cp_packet(6, ident))
                out["error"] = "LCP Terminate-Request from the AC"
                result(out)
                return 1
        elif proto == PROTO_PAP:
            if code == 2:
                auth = True
                out["pap"] = "ack"
            elif code == 3:
                out["error"] = "PAP Nak"
                out["pap"] = "nak"
                result(out)
                return 1
        elif proto == PROTO_IPCP:
            if code == 1:
                for t, v in options(data) or []:
                    if t == 3:
                        out["ac_address"] = ip4s(v)
                tx(PROTO_IPCP, cp_packet(2, ident, data))
                ipcp_theirs = True
            elif code == 3 and ident == ipcp_id:
                for t, v in options(data) or []:
                    if t == 3:
                        want_addr = v
                        out["ipcp_nak_address"] = ip4s(v)
                ipcp_id += 1
                last["ipcp"] = 0.0
            elif code == 2 and ident == ipcp_id:
                ack = PPP_IPCP(body)
                for o in ack.options:
                    if isinstance(o, PPP_IPCP_Option_IPAddress):
                        out["address"] = o.data
                ipcp_ours = True
        elif proto == PROTO_IPV6CP and v6:
            if code == 1:
                tx(PROTO_IPV6CP, cp_packet(2, ident, data))
                ipv6cp_theirs = True
            elif code == 3 and ident == ipv6cp_id:
                for t, v in options(data) or []:
                    if t == 1:
                        iid = v
                ipv6cp_id += 1
                last["ipv6cp"] = 0.0
            elif code == 2 and ident == ipv6cp_id:
                ipv6cp_ours = True
        elif proto == PROTO_IPV6CP and code == 1:
            # We do not run IPv6CP: Protocol-Reject it (RFC 1661 §5.7).
            tx(PROTO_LCP, cp_packet(8, 0x40, struct.pack("!H", proto) + body))
            out["ipv6cp_rejected"] = True

    log(f"IPCP up: address {out.get('address')}")
    if v6:
        delegated = dhcpv6_pd(port, tx, me, ac, sid, iid, min(end, time.monotonic() + 10.0))
        if delegated is None:
            out["error"] = "no DHCPv6 Reply with a prefix"
            port.send(disc(me, ac, PADT, sid, []))
            result(out)
            return 1
        out["delegated"] = delegated
        out["interface_id"] = iid.hex()
    t = time.monotonic() + a.hold
    while time.monotonic() < t:
        p = port.recv(t)
        if p is not None:
            proto, body = ppp_of(p)
            c = cp_parse(body) if proto == PROTO_LCP else None
            if c and c[0] == 9:
                tx(PROTO_LCP, cp_packet(10, c[1], struct.pack("!I", magic) + c[2][4:]))
                out["echo_answered"] = out.get("echo_answered", 0) + 1
    port.send(disc(me, ac, PADT, sid, []))
    out["padt_sent"] = True
    out["ok"] = True
    result(out)
    return 0


def dhcpv6_pd(port, tx, me, ac, sid, iid, until):
    """Solicit (Rapid Commit, IA_PD) from fe80::IID to ff02::1:2 over the session, again every
    second until a Reply with an IA Prefix comes: "PREFIX/LEN", or None."""
    from scapy.layers.inet6 import IPv6, UDP
    from scapy.layers.dhcp6 import (DHCP6_Solicit, DHCP6_Reply, DHCP6OptClientId,
                                    DHCP6OptRapidCommit, DHCP6OptIA_PD, DHCP6OptIAPrefix,
                                    DHCP6OptElapsedTime, DUID_LL)
    ll = "fe80::" + ":".join(iid[i:i + 2].hex() for i in range(0, 8, 2))
    trid = struct.unpack("!I", b"\0" + os.urandom(3))[0]
    solicit = (IPv6(src=ll, dst="ff02::1:2", hlim=1) / UDP(sport=546, dport=547)
               / DHCP6_Solicit(trid=trid) / DHCP6OptClientId(duid=DUID_LL(lladdr=me))
               / DHCP6OptRapidCommit() / DHCP6OptElapsedTime() / DHCP6OptIA_PD(iaid=1))
    sent = 0.0
    while time.monotonic() < until:
        if time.monotonic() - sent > 1.0:
            tx(PROTO_IPV6, bytes(solicit))
            sent = time.monotonic()
        p = port.recv(min(until, time.monotonic() + 0.2))
        if p is None:
            continue
        proto, body = ppp_of(p)
        if proto != PROTO_IPV6 or p[PPPoE].sessionid != sid:
            continue
        ip = IPv6(body)
        if not ip.haslayer(DHCP6_Reply) or ip[DHCP6_Reply].trid != trid:
            continue
        if ip.haslayer(DHCP6OptIAPrefix):
            x = ip[DHCP6OptIAPrefix]
            log(f"DHCPv6 Reply: {x.prefix}/{x.plen}")
            return f"{x.prefix}/{x.plen}"
        return None
    return None


if __name__ == "__main__":
    sys.exit(main())
