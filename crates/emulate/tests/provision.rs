//! A DS-Lite gateway provisions itself from our AFTR port, under a simulated clock: it sends
//! a Router Solicitation and gets an RA with M and O, solicits DHCPv6 (four-message exchange,
//! no Rapid Commit) for an address and a /56 and asks for DNS and the AFTR name, then brings
//! its B4 up from the leased address — the AFTR learns the softwire from that address. The
//! lease is renewed at T1 and, once the gateway goes silent, expires at its valid lifetime.
//!
//! The "gateway" here is a few lines of DHCPv6 client built on `wire` only; the independent
//! cross-check with Debian's dhcpcd and rdisc6 is `crates/cli/tests/provision_dhcpcd.rs`.

use core::net::Ipv6Addr;

use emulate::dhcpv6::{Dhcpv6Event, Leased};
use emulate::provision::{defaults, link_local, ProvisionEvent};
use emulate::softwire::{AftrConfig, AftrEvent, AftrPort, B4Config, B4Port};
use emulate::util::Entropy;
use emulate::Nanos;
use wire::dhcpv6::{
    decode_name, msg, opt, Dhcpv6Packet, IaAddrRepr, IaPrefixRepr, IaRepr, OptionWriter,
    ALL_SERVERS, CLIENT_PORT, SERVER_PORT,
};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::icmpv6::{self, Icmpv6Packet};
use wire::ipv6::{Ipv6Packet, Ipv6Repr, NEXT_HEADER_ICMPV6, NEXT_HEADER_UDP};
use wire::routerdisc::{NdOption, NdOptions, RouterAdvertHeader, RouterSolicitRepr, RA_LEN};
use wire::udp::{UdpPacket, UdpRepr};

const AFTR_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0xaf, 0x01]);
const GW_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0xb4, 0x01]);
const AFTR: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 1);
const DUID: [u8; 10] = [0, 3, 0, 1, 2, 0, 0, 0, 0xb4, 1];
const SEC: u64 = 1_000_000_000;

fn frame(
    dst_mac: MacAddr,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    nh: u8,
    hop: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = vec![0u8; 54 + payload.len()];
    EthernetRepr {
        src: GW_MAC,
        dst: dst_mac,
        ethertype: EtherType::IPV6,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]))
    .unwrap();
    Ipv6Repr {
        src,
        dst,
        next_header: nh,
        payload_len: payload.len(),
        hop_limit: hop,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut f[14..]))
    .unwrap();
    f[54..].copy_from_slice(payload);
    f
}

fn rs() -> Vec<u8> {
    let all_routers: Ipv6Addr = "ff02::2".parse().unwrap();
    let r = RouterSolicitRepr {
        source_lladdr: Some(GW_MAC),
    };
    let mut m = vec![0u8; r.buffer_len()];
    let mut p = Icmpv6Packet::new_unchecked(&mut m[..]);
    r.emit(&mut p).unwrap();
    p.fill_checksum(link_local(GW_MAC), all_routers);
    frame(
        icmpv6::multicast_mac(all_routers),
        link_local(GW_MAC),
        all_routers,
        NEXT_HEADER_ICMPV6,
        255,
        &m,
    )
}

/// A DHCPv6 message from the gateway: IA_NA 1 and IA_PD 1, ORO DNS + AFTR-Name.
fn dhcp(kind: u8, xid: u32, server: Option<&[u8]>) -> Vec<u8> {
    let mut b = vec![0u8; 300];
    b[0] = kind;
    b[1..4].copy_from_slice(&xid.to_be_bytes()[1..]);
    let mut w = OptionWriter::new(&mut b, 4);
    w.put(opt::CLIENTID, &DUID).unwrap();
    if let Some(s) = server {
        w.put(opt::SERVERID, s).unwrap();
    }
    w.put(opt::ELAPSED_TIME, &[0, 0]).unwrap();
    for code in [opt::IA_NA, opt::IA_PD] {
        let o = w.begin_ia(code, 1, 0, 0).unwrap();
        w.end(o).unwrap();
    }
    w.put(opt::ORO, &[0, 23, 0, 64]).unwrap();
    let n = w.len();
    b.truncate(n);
    let src = link_local(GW_MAC);
    let mut seg = vec![0u8; 8 + n];
    let mut u = UdpPacket::new_unchecked(&mut seg[..]);
    UdpRepr {
        src_port: CLIENT_PORT,
        dst_port: SERVER_PORT,
    }
    .emit(&mut u, n)
    .unwrap();
    u.payload_mut().copy_from_slice(&b);
    u.fill_checksum_v6(src, ALL_SERVERS);
    frame(
        icmpv6::multicast_mac(ALL_SERVERS),
        src,
        ALL_SERVERS,
        NEXT_HEADER_UDP,
        1,
        &seg,
    )
}

/// What a DHCPv6 answer gave: (type, xid, server id, address, prefix, DNS, AFTR name).
#[derive(Debug, Default)]
struct Got {
    kind: u8,
    xid: u32,
    server: Vec<u8>,
    addr: Option<Ipv6Addr>,
    prefix: Option<(Ipv6Addr, u8)>,
    dns: Vec<Ipv6Addr>,
    aftr_name: Option<String>,
}

fn read_dhcp(f: &[u8]) -> Option<Got> {
    let e = EthernetFrame::new_checked(f).ok()?;
    let ip = Ipv6Packet::new_checked(e.payload()).ok()?;
    let r = Ipv6Repr::parse(&ip).ok()?;
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    if r.next_header != NEXT_HEADER_UDP || udp.dst_port() != CLIENT_PORT {
        return None;
    }
    assert!(udp.verify_checksum_v6(r.src, r.dst));
    assert_eq!(r.dst, link_local(GW_MAC));
    let d = Dhcpv6Packet::new_checked(udp.payload()).ok()?;
    let mut g = Got {
        kind: d.msg_type(),
        xid: d.transaction_id(),
        ..Got::default()
    };
    for o in d.options() {
        let (c, v) = o.unwrap();
        match c {
            opt::SERVERID => g.server = v.to_vec(),
            opt::IA_NA => {
                let ia = IaRepr::parse(v).unwrap();
                if let Some(a) = ia.options().find(opt::IAADDR).unwrap() {
                    g.addr = Some(IaAddrRepr::parse(a).unwrap().addr);
                }
            }
            opt::IA_PD => {
                let ia = IaRepr::parse(v).unwrap();
                if let Some(p) = ia.options().find(opt::IAPREFIX).unwrap() {
                    let p = IaPrefixRepr::parse(p).unwrap();
                    g.prefix = Some((p.prefix, p.prefix_len));
                }
            }
            opt::DNS_SERVERS => {
                g.dns = v
                    .chunks_exact(16)
                    .map(|c| Ipv6Addr::from(<[u8; 16]>::try_from(c).unwrap()))
                    .collect()
            }
            opt::AFTR_NAME => g.aftr_name = Some(decode_name(v).unwrap().0),
            _ => {}
        }
    }
    Some(g)
}

fn ask(a: &mut AftrPort, now: Nanos, f: &[u8]) -> Got {
    assert!(a.handle_frame(now, f));
    let tx = a.take_transmit();
    let got: Vec<Got> = tx.iter().filter_map(|f| read_dhcp(f)).collect();
    assert_eq!(got.len(), 1, "one answer");
    got.into_iter().next().unwrap()
}

#[test]
fn a_gateway_provisions_itself_and_brings_its_b4_up_from_the_lease() {
    let mut cfg = AftrConfig::new(AFTR, AFTR_MAC).with_provisioning();
    cfg.provision.as_mut().unwrap().ra.entropy = Entropy::Seeded(3);
    let mut a = AftrPort::new(cfg);
    let mut now = Nanos(SEC);

    // RS → RA with M and O, a default route and the link prefix.
    assert!(a.handle_frame(now, &rs()));
    let tx = a.take_transmit();
    assert_eq!(tx.len(), 1);
    let ip = Ipv6Packet::new_checked(&tx[0][14..]).unwrap();
    let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
    let h = RouterAdvertHeader::parse(&icmp).unwrap();
    assert!(h.managed && h.other && h.router_lifetime == 1800);
    let prefixes: Vec<_> = NdOptions::new(&ip.payload()[RA_LEN..])
        .filter_map(|o| match o.unwrap() {
            NdOption::Prefix(p) => Some((p.prefix, p.prefix_len, p.on_link, p.autonomous)),
            _ => None,
        })
        .collect();
    assert_eq!(prefixes, [(defaults::LINK_PREFIX, 64, true, true)]);

    // Solicit → Advertise → Request → Reply.
    let adv = ask(&mut a, now, &dhcp(msg::SOLICIT, 0x11, None));
    assert_eq!((adv.kind, adv.xid), (msg::ADVERTISE, 0x11));
    now = Nanos(now.0 + SEC);
    let rep = ask(&mut a, now, &dhcp(msg::REQUEST, 0x12, Some(&adv.server)));
    assert_eq!((rep.kind, rep.xid), (msg::REPLY, 0x12));
    let addr = rep.addr.expect("an address");
    assert_eq!(addr, defaults::FIRST_ADDRESS);
    assert_eq!(rep.prefix, Some((defaults::PD_BASE, 56)));
    assert_eq!(rep.dns, [defaults::DNS]);
    assert_eq!(rep.aftr_name.as_deref(), Some("aftr.example.net"));
    let ev = a.take_events();
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(
                e,
                AftrEvent::Provision(ProvisionEvent::Dhcp {
                    mac: GW_MAC,
                    event: Dhcpv6Event::Bound { .. }
                })
            ))
            .count(),
        2
    );

    // The gateway's B4 takes the leased address and comes up; the AFTR learns it.
    let mut b = B4Port::new(B4Config::new(addr, GW_MAC, AFTR));
    b.start(now);
    for _ in 0..10 {
        let (fa, fb) = (a.take_transmit(), b.take_transmit());
        if fa.is_empty() && fb.is_empty() {
            break;
        }
        for f in fa {
            b.handle_frame(now, &f);
        }
        for f in fb {
            a.handle_frame(now, &f);
        }
    }
    assert!(b.is_up());
    assert!(a.softwires().any(|s| s == addr));

    // Renew at T1 (1800 s) keeps the binding; silence after that lets it expire at 7200 s.
    now = Nanos(now.0 + 1800 * SEC);
    let ren = ask(&mut a, now, &dhcp(msg::RENEW, 0x13, Some(&adv.server)));
    assert_eq!(
        (ren.addr, ren.prefix),
        (Some(addr), Some((defaults::PD_BASE, 56)))
    );
    let p = a.provisioner().unwrap();
    assert_eq!(p.dhcp().stats.bindings_now, 2);
    let expiry = Nanos(now.0 + 7200 * SEC);
    let _ = a.take_events();
    let mut t = now;
    while let Some(d) = a.next_deadline() {
        if d > expiry {
            break;
        }
        t = d;
        a.poll(t);
        let _ = a.take_transmit();
    }
    assert_eq!(t, expiry, "the binding ends exactly at its valid lifetime");
    let expired: Vec<_> = a
        .take_events()
        .into_iter()
        .filter_map(|e| match e {
            AftrEvent::Provision(ProvisionEvent::Dhcp {
                event: Dhcpv6Event::Expired { leased, .. },
                ..
            }) => Some(leased),
            _ => None,
        })
        .collect();
    assert_eq!(
        expired,
        [Leased::Address(addr), Leased::Prefix(defaults::PD_BASE, 56)]
    );
    assert!(
        a.provisioner().unwrap().advertiser().stats.unsolicited_tx > 3,
        "RAs went on meanwhile"
    );
}
