//! The IPoE port under a simulated clock, against a gateway written on `wire` alone: the
//! DHCPv4 exchange (DISCOVER/OFFER/REQUEST/ACK in frames), renewal at T1 and expiry at the
//! lease's end; ARP and ICMP echo at the gateway address; the DNS server at the address
//! handed out; the TUN relay both ways; and the IPv6 half (RA, DHCPv6 with IA_NA, IA_PD and
//! DNS, a DNS query over IPv6).

use core::net::{Ipv4Addr, Ipv6Addr};

use emulate::dhcpv4::Dhcpv4Event;
use emulate::ipoe::{IpoeConfig, IpoeEvent, IpoePort, LeaseInfo};
use emulate::provision::ProvisionEvent;
use emulate::util::Entropy;
use emulate::Nanos;
use wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use wire::dhcpv4::{op, Dhcpv4Packet, Dhcpv4Repr, MessageType};
use wire::dns::{self, DnsPacket, DnsRepr, Flags, Name, Question, RData, Section};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wire::ipv6::{Ipv6Packet, Ipv6Repr};
use wire::udp::{UdpPacket, UdpRepr};

const ISP: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0a]);
const CPE: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0b]);
const GATEWAY: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
const LEASED: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
const DNS4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 53);
const INTERNET: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

fn sec(s: u64) -> Nanos {
    Nanos(s * 1_000_000_000)
}

fn port() -> IpoePort {
    let mut c = IpoeConfig::new(ISP);
    c.entropy = Entropy::Seeded(7);
    let names = c.dns.as_mut().unwrap();
    names
        .add(
            "aftr.example.net",
            "2001:db8:d::1".parse::<Ipv6Addr>().unwrap().into(),
        )
        .unwrap();
    names.add("internet.example.net", INTERNET.into()).unwrap();
    assert_eq!(c.check(), Ok(()));
    IpoePort::new(c)
}

fn ethernet(dst: MacAddr, ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + payload.len()];
    EthernetRepr {
        src: CPE,
        dst,
        ethertype,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]))
    .unwrap();
    f[14..].copy_from_slice(payload);
    f
}

fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20 + payload.len()];
    Ipv4Repr {
        src,
        dst,
        protocol,
        payload_len: payload.len(),
        ttl: 64,
        tos: 0,
        ident: 0,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut p[..]))
    .unwrap();
    p[20..].copy_from_slice(payload);
    p
}

fn udp4(src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut seg = vec![0u8; 8 + payload.len()];
    let mut u = UdpPacket::new_unchecked(&mut seg[..]);
    UdpRepr {
        src_port: sport,
        dst_port: dport,
    }
    .emit(&mut u, payload.len())
    .unwrap();
    u.payload_mut().copy_from_slice(payload);
    u.fill_checksum_v4(src, dst);
    ipv4(src, dst, 17, &seg)
}

/// A DHCPv4 client message in a frame: broadcast from 0.0.0.0, or unicast from `ciaddr` to
/// the server when renewing.
fn dhcp_frame(kind: MessageType, f: impl FnOnce(&mut Dhcpv4Repr<'_>)) -> Vec<u8> {
    let mut r = Dhcpv4Repr::new(op::REQUEST, 0x0bad_cafe, CPE);
    r.message_type = Some(kind);
    r.parameter_request_list = Some(&[1, 3, 6, 51, 54, 58, 59]);
    f(&mut r);
    let mut m = vec![0u8; r.buffer_len()];
    r.emit(&mut Dhcpv4Packet::new_unchecked(&mut m[..]))
        .unwrap();
    let (src, dst, mac) = if r.ciaddr.is_unspecified() {
        (
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::BROADCAST,
            MacAddr::BROADCAST,
        )
    } else {
        (r.ciaddr, GATEWAY, ISP)
    };
    ethernet(mac, EtherType::IPV4, &udp4(src, 68, dst, 67, &m))
}

/// The one frame the port sent, as (Ethernet, IPv4 repr, transport bytes).
fn ipv4_out(p: &mut IpoePort) -> (EthernetRepr, Ipv4Repr, Vec<u8>) {
    let tx = p.take_transmit();
    assert_eq!(tx.len(), 1, "{tx:?}");
    let f = EthernetFrame::new_checked(&tx[0][..]).unwrap();
    let e = EthernetRepr::parse(&f).unwrap();
    let ip = Ipv4Packet::new_checked(f.payload()).unwrap();
    assert!(ip.verify_checksum());
    (e, Ipv4Repr::parse(&ip).unwrap(), ip.payload().to_vec())
}

/// The DHCPv4 message in a UDP 67 → 68 datagram (checksum verified).
fn dhcp_reply(ip: &Ipv4Repr, seg: &[u8]) -> (MessageType, Ipv4Addr, Vec<u8>) {
    let u = UdpPacket::new_checked(seg).unwrap();
    assert!(u.verify_checksum_v4(ip.src, ip.dst));
    assert_eq!((u.src_port(), u.dst_port()), (67, 68));
    let m = u.payload().to_vec();
    let r = Dhcpv4Repr::parse(&Dhcpv4Packet::new_checked(&m[..]).unwrap()).unwrap();
    (r.message_type.unwrap(), r.yiaddr, m)
}

fn lease_events(p: &mut IpoePort) -> Vec<Dhcpv4Event> {
    p.take_events()
        .into_iter()
        .filter_map(|e| match e {
            IpoeEvent::Lease(l) => Some(l),
            IpoeEvent::Provision(_) => None,
        })
        .collect()
}

/// DISCOVER, OFFER, REQUEST, ACK at `now`.
fn lease(p: &mut IpoePort, now: Nanos) {
    assert!(p.handle_frame(now, &dhcp_frame(MessageType::Discover, |_| {})));
    let (e, ip, seg) = ipv4_out(p);
    // Unicast to the offered address and our MAC (broadcast flag clear), from the gateway.
    assert_eq!((e.src, e.dst, ip.src, ip.dst), (ISP, CPE, GATEWAY, LEASED));
    let (kind, yiaddr, _) = dhcp_reply(&ip, &seg);
    assert_eq!((kind, yiaddr), (MessageType::Offer, LEASED));
    let req = dhcp_frame(MessageType::Request, |r| {
        r.server_id = Some(GATEWAY);
        r.requested_ip = Some(LEASED);
    });
    assert!(p.handle_frame(now, &req));
    let (_, ip, seg) = ipv4_out(p);
    let (kind, yiaddr, m) = dhcp_reply(&ip, &seg);
    assert_eq!((kind, yiaddr), (MessageType::Ack, LEASED));
    let a = Dhcpv4Repr::parse(&Dhcpv4Packet::new_checked(&m[..]).unwrap()).unwrap();
    assert_eq!(a.routers.unwrap().iter().collect::<Vec<_>>(), [GATEWAY]);
    assert_eq!(a.dns_servers.unwrap().iter().collect::<Vec<_>>(), [DNS4]);
    assert_eq!(a.subnet_mask, Some(Ipv4Addr::new(255, 255, 255, 0)));
    assert_eq!(a.lease_time, Some(3600));
}

#[test]
fn a_gateway_gets_its_wan_by_dhcpv4_renews_it_and_loses_it_at_the_end() {
    let mut p = port();
    assert!(p.lease_info().is_none());
    lease(&mut p, sec(0));
    assert!(matches!(
        &lease_events(&mut p)[..],
        [Dhcpv4Event::Bound {
            mac: CPE,
            addr: LEASED,
            lease: 3600,
            ..
        }]
    ));
    assert_eq!(
        p.lease_info(),
        Some(LeaseInfo {
            local_mac: ISP,
            local: GATEWAY,
            peer_mac: CPE,
            peer: LEASED
        })
    );
    // RENEWING at T1: unicast to the gateway from the leased address; the ACK back to it.
    let renew = dhcp_frame(MessageType::Request, |r| r.ciaddr = LEASED);
    assert!(p.handle_frame(sec(1800), &renew));
    let (e, ip, seg) = ipv4_out(&mut p);
    assert_eq!((e.dst, ip.dst), (CPE, LEASED));
    assert_eq!(dhcp_reply(&ip, &seg).0, MessageType::Ack);
    assert!(matches!(
        &lease_events(&mut p)[..],
        [Dhcpv4Event::Renewed { .. }]
    ));
    // Nothing more: the lease runs out an hour after the renewal, to the nanosecond.
    p.poll(Nanos(sec(5400).0 - 1));
    assert!(lease_events(&mut p).is_empty());
    assert_eq!(p.next_deadline().map(|d| d <= sec(5400)), Some(true));
    p.poll(sec(5400));
    assert!(matches!(
        &lease_events(&mut p)[..],
        [Dhcpv4Event::Expired {
            mac: CPE,
            addr: LEASED,
            ..
        }]
    ));
    assert!(p.lease_info().is_none());
    assert_eq!(p.stats.dhcp_rx, 3);
}

#[test]
fn arp_echo_dns_and_the_relay_at_the_gateway_address() {
    let mut p = port();
    lease(&mut p, sec(0));
    p.take_events();
    // ARP for the gateway and for the DNS server (the gateway may see it on-link).
    for target in [GATEWAY, DNS4] {
        let mut a = vec![0u8; 28];
        ArpRepr {
            operation: ArpOperation::Request,
            source_mac: CPE,
            source_ip: LEASED,
            target_mac: MacAddr::ZERO,
            target_ip: target,
        }
        .emit(&mut ArpPacket::new_unchecked(&mut a[..]))
        .unwrap();
        assert!(p.handle_frame(sec(1), &ethernet(MacAddr::BROADCAST, EtherType::ARP, &a)));
        let tx = p.take_transmit();
        assert_eq!(tx.len(), 1);
        let f = EthernetFrame::new_checked(&tx[0][..]).unwrap();
        let r = ArpRepr::parse(&ArpPacket::new_checked(f.payload()).unwrap()).unwrap();
        assert_eq!(
            (r.operation, r.source_mac, r.source_ip),
            (ArpOperation::Reply, ISP, target)
        );
    }
    // Echo to the gateway address: answered.
    let mut echo = vec![8u8, 0, 0, 0, 0x12, 0x34, 0, 1];
    echo.extend(b"ping");
    let c = wire::checksum::checksum(&echo);
    echo[2..4].copy_from_slice(&c.to_be_bytes());
    assert!(p.handle_frame(
        sec(1),
        &ethernet(ISP, EtherType::IPV4, &ipv4(LEASED, GATEWAY, 1, &echo))
    ));
    let (_, ip, icmp) = ipv4_out(&mut p);
    assert_eq!(
        (ip.src, ip.dst, icmp[0], &icmp[4..]),
        (GATEWAY, LEASED, 0, &echo[4..])
    );
    assert_eq!(p.stats.echo_replies, 1);
    // A DNS query for the Internet host at the DNS address handed out.
    let q = [Question {
        name: Name::from_dotted("internet.example.net").unwrap(),
        qtype: dns::rtype::A,
        qclass: dns::CLASS_IN,
    }];
    let repr = DnsRepr {
        id: 1,
        flags: Flags {
            recursion_desired: true,
            ..Flags::default()
        },
        questions: &q,
        answers: &[],
        authority: &[],
        additional: &[],
    };
    let mut m = vec![0u8; repr.buffer_len()];
    repr.emit(&mut m).unwrap();
    assert!(p.handle_frame(
        sec(1),
        &ethernet(ISP, EtherType::IPV4, &udp4(LEASED, 5353, DNS4, 53, &m))
    ));
    let (e, ip, seg) = ipv4_out(&mut p);
    assert_eq!((e.dst, ip.src, ip.dst), (CPE, DNS4, LEASED));
    let u = UdpPacket::new_checked(&seg[..]).unwrap();
    assert!(u.verify_checksum_v4(DNS4, LEASED));
    let d = DnsPacket::new_checked(u.payload()).unwrap();
    let a: Vec<_> = d.records().map(Result::unwrap).collect();
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].0, a[0].1.data), (Section::Answer, RData::A(INTERNET)));
    // Test frames to the gateway address are not ours to take; without a relay, neither is
    // traffic to the Internet.
    let test = ethernet(
        ISP,
        EtherType::IPV4,
        &udp4(LEASED, 1024, GATEWAY, 9, &[0; 18]),
    );
    assert!(!p.handle_frame(sec(1), &test));
    let to_internet = ethernet(
        ISP,
        EtherType::IPV4,
        &udp4(LEASED, 1024, INTERNET, 9, &[0; 18]),
    );
    assert!(!p.handle_frame(sec(1), &to_internet));
    // With the relay: up to the kernel, and back down to the lease's MAC.
    p.enable_ip_relay();
    assert!(p.handle_frame(sec(1), &to_internet));
    assert!(!p.handle_frame(sec(1), &test), "still the engine's");
    let mut up = Vec::new();
    p.take_ip(&mut up);
    assert_eq!(up.len(), 1);
    assert_eq!(
        Ipv4Packet::new_checked(&up[0][..]).unwrap().dst_addr(),
        INTERNET
    );
    let back = udp4(INTERNET, 9, LEASED, 1024, &[1; 18]);
    assert_eq!(p.send_ip(sec(1), &back), Ok(()));
    let tx = p.take_transmit();
    assert_eq!(tx.len(), 1);
    assert_eq!(
        (&tx[0][..6], &tx[0][6..12], &tx[0][14..]),
        (&CPE.0[..], &ISP.0[..], &back[..])
    );
    use emulate::control_plane::RelayDrop;
    let nobody = udp4(INTERNET, 9, Ipv4Addr::new(198, 51, 100, 77), 1024, &[]);
    assert_eq!(p.send_ip(sec(1), &nobody), Err(RelayDrop::NoRoute));
    assert_eq!(p.send_ip(sec(1), &[0x60; 40]), Err(RelayDrop::NoRoute));
    assert_eq!(p.send_ip(sec(1), &[0x45]), Err(RelayDrop::Malformed));
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// An IPv6 packet in a frame from the gateway's link-local address (or `src`).
fn ipv6_frame(
    dst_mac: MacAddr,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    nh: u8,
    hop: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut p = vec![0u8; 40 + payload.len()];
    Ipv6Repr {
        src,
        dst,
        next_header: nh,
        payload_len: payload.len(),
        hop_limit: hop,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut p[..]))
    .unwrap();
    p[40..].copy_from_slice(payload);
    ethernet(dst_mac, EtherType::IPV6, &p)
}

fn udp6(src: Ipv6Addr, sport: u16, dst: Ipv6Addr, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut seg = vec![0u8; 8 + payload.len()];
    let mut u = UdpPacket::new_unchecked(&mut seg[..]);
    UdpRepr {
        src_port: sport,
        dst_port: dport,
    }
    .emit(&mut u, payload.len())
    .unwrap();
    u.payload_mut().copy_from_slice(payload);
    u.fill_checksum_v6(src, dst);
    seg
}

#[test]
fn the_ipv6_half_address_prefix_dns_and_a_query_over_ipv6() {
    use wire::dhcpv6::{self, msg, opt, Dhcpv6Packet, IaPrefixRepr, IaRepr, OptionWriter};
    let mut p = port();
    let ll = emulate::provision::link_local(CPE);
    // Solicit with Rapid Commit, IA_NA 1, IA_PD 2, asking for DNS.
    let mut b = vec![0u8; 200];
    b[..4].copy_from_slice(&[msg::SOLICIT, 0, 0, 1]);
    let mut w = OptionWriter::new(&mut b, 4);
    w.put(opt::CLIENTID, &[0, 3, 0, 1, 2, 0, 0, 0, 0, 0x0b])
        .unwrap();
    w.put(opt::RAPID_COMMIT, &[]).unwrap();
    let o = w.begin_ia(opt::IA_NA, 1, 0, 0).unwrap();
    w.end(o).unwrap();
    let o = w.begin_ia(opt::IA_PD, 2, 0, 0).unwrap();
    w.end(o).unwrap();
    w.put(opt::ORO, &[0, 23]).unwrap();
    let n = w.len();
    b.truncate(n);
    let seg = udp6(ll, 546, dhcpv6::ALL_SERVERS, 547, &b);
    let f = ipv6_frame(
        MacAddr([0x33, 0x33, 0, 1, 0, 2]),
        ll,
        dhcpv6::ALL_SERVERS,
        17,
        1,
        &seg,
    );
    assert!(p.handle_frame(sec(0), &f));
    let tx = p.take_transmit();
    assert_eq!(tx.len(), 1);
    let ip = Ipv6Packet::new_checked(&tx[0][14..]).unwrap();
    let u = UdpPacket::new_checked(ip.payload()).unwrap();
    let d = Dhcpv6Packet::new_checked(u.payload()).unwrap();
    assert_eq!(d.msg_type(), msg::REPLY);
    let pd = IaRepr::parse(d.options().find(opt::IA_PD).unwrap().unwrap()).unwrap();
    let px = IaPrefixRepr::parse(pd.options().find(opt::IAPREFIX).unwrap().unwrap()).unwrap();
    assert_eq!((px.prefix, px.prefix_len), (v6("2001:db8:100::"), 56));
    assert_eq!(
        d.options().find(opt::DNS_SERVERS).unwrap().unwrap(),
        v6("2001:db8:53::1").octets()
    );
    assert_eq!(
        d.options().find(opt::AFTR_NAME).unwrap(),
        None,
        "no AFTR name unless set"
    );
    let ev = p.take_events();
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(
                e,
                IpoeEvent::Provision(ProvisionEvent::Dhcp { mac: CPE, .. })
            ))
            .count(),
        2
    );
    // A DNS query over IPv6 to the DNS server handed out (through our MAC, the router).
    let q = [Question {
        name: Name::from_dotted("aftr.example.net").unwrap(),
        qtype: dns::rtype::AAAA,
        qclass: dns::CLASS_IN,
    }];
    let repr = DnsRepr {
        id: 2,
        flags: Flags::default(),
        questions: &q,
        answers: &[],
        authority: &[],
        additional: &[],
    };
    let mut m = vec![0u8; repr.buffer_len()];
    repr.emit(&mut m).unwrap();
    let me = v6("2001:db8:c::100");
    let dns6 = v6("2001:db8:53::1");
    let f = ipv6_frame(ISP, me, dns6, 17, 64, &udp6(me, 4000, dns6, 53, &m));
    assert!(p.handle_frame(sec(1), &f));
    let tx = p.take_transmit();
    assert_eq!(tx.len(), 1);
    let ip = Ipv6Packet::new_checked(&tx[0][14..]).unwrap();
    assert_eq!((ip.src_addr(), ip.dst_addr()), (dns6, me));
    let u = UdpPacket::new_checked(ip.payload()).unwrap();
    assert!(u.verify_checksum_v6(dns6, me));
    let d = DnsPacket::new_checked(u.payload()).unwrap();
    let a: Vec<_> = d.records().map(Result::unwrap).collect();
    assert_eq!(a[0].1.data, RData::Aaaa(v6("2001:db8:d::1")));
}
