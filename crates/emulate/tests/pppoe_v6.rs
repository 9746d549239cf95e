//! IPv6 provisioning inside PPPoE sessions (issue 14 item 3, the PPPoE half): two subscribers
//! (our client) bring sessions up with IPv6CP against our AC under a simulated clock; the
//! provisioning beside the AC sends each an RA over its session from fe80:: + the AC's IPv6CP
//! identifier, answers a Router Solicitation, and delegates each a different /56 (and an
//! address) with DHCPv6 carried in the session.

mod common;

use core::net::Ipv6Addr;

use common::{client_cfg, server_cfg, Net};
use emulate::dhcpv6::{Dhcpv6Event, Leased};
use emulate::ppp::AuthMethod;
use emulate::pppoe::client::ClientEvent;
use emulate::pppoe::server::ServerEvent;
use emulate::pppoe_v6::{link_local_of, PppoeProvisioning};
use emulate::provision::{ProvisionConfig, ProvisionEvent};
use emulate::util::Entropy;
use wire::dhcpv6::{
    msg, opt, Dhcpv6Packet, IaPrefixRepr, IaRepr, OptionWriter, ALL_SERVERS, CLIENT_PORT,
    SERVER_PORT,
};
use wire::icmpv6::Icmpv6Packet;
use wire::ipv6::{Ipv6Packet, Ipv6Repr, NEXT_HEADER_ICMPV6, NEXT_HEADER_UDP};
use wire::ppp::Protocol;
use wire::routerdisc::{NdOption, NdOptions, RouterAdvertHeader, RouterSolicitRepr, RA_LEN};
use wire::udp::{UdpPacket, UdpRepr};

/// The RA over a session, ICMPv6 bytes: M and O, hop limit 64, router lifetime 1800, no
/// link-layer or prefix option, RDNSS 2001:db8:53::1 for 1800 s; checksum 0x74bf computed
/// independently (Python, RFC 8200 §8.1) for fe80::77:72ff:fe00:1 → ff02::1.
static RA_OVER_PPP: [u8; 40] = [
    0x86, 0x00, 0x74, 0xbf, 0x40, 0xc0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0x19, 0x03, 0, 0, 0x00,
    0x00, 0x07, 0x08, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x53, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
];

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, hop: u8, payload: &[u8]) -> Vec<u8> {
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
    p
}

fn rs(src: Ipv6Addr) -> Vec<u8> {
    let dst: Ipv6Addr = "ff02::2".parse().unwrap();
    let r = RouterSolicitRepr {
        source_lladdr: None,
    };
    let mut m = vec![0u8; r.buffer_len()];
    let mut p = Icmpv6Packet::new_unchecked(&mut m[..]);
    r.emit(&mut p).unwrap();
    p.fill_checksum(src, dst);
    ipv6(src, dst, NEXT_HEADER_ICMPV6, 255, &m)
}

fn solicit_pd(src: Ipv6Addr, duid_tail: u8) -> Vec<u8> {
    let mut b = vec![0u8; 200];
    b[..4].copy_from_slice(&[msg::SOLICIT, 0, 0, duid_tail]);
    let mut w = OptionWriter::new(&mut b, 4);
    w.put(opt::CLIENTID, &[0, 3, 0, 1, 2, 0, 0, 0, 0x10, duid_tail])
        .unwrap();
    w.put(opt::RAPID_COMMIT, &[]).unwrap();
    let o = w.begin_ia(opt::IA_PD, 1, 0, 0).unwrap();
    w.end(o).unwrap();
    let n = w.len();
    b.truncate(n);
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
    ipv6(src, ALL_SERVERS, NEXT_HEADER_UDP, 1, &seg)
}

/// Moves frames and hands the AC's events to the provisioning until all is quiet.
fn settle(net: &mut Net, prov: &mut PppoeProvisioning) {
    for _ in 0..20 {
        let moved = net.exchange();
        let evs: Vec<ServerEvent> = std::mem::take(&mut net.server_events);
        let any = !evs.is_empty();
        for e in &evs {
            prov.handle_event(net.now, e, &mut net.server);
        }
        if !moved && !any {
            return;
        }
        if !moved {
            // Events handled; one more pass moves what they queued.
            let _ = net.exchange();
            return;
        }
    }
}

/// IPv6 packets each client received, taken out of its events.
fn ipv6_to(net: &mut Net, i: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    net.client_events.retain(|(j, e)| match e {
        ClientEvent::Data { protocol, payload } if *j == i && *protocol == Protocol::IPV6 => {
            out.push(payload.clone());
            false
        }
        _ => true,
    });
    out
}

#[test]
fn ra_over_each_session_and_a_different_prefix_for_each_subscriber() {
    let mut net = Net::new(
        server_cfg(vec![AuthMethod::Pap]),
        vec![
            client_cfg(1, "alice", "secret-a"),
            client_cfg(2, "bob", "secret-b"),
        ],
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up), "sessions did not come up");
    let mut cfg = ProvisionConfig::pppoe(common::ac_mac());
    cfg.ra.entropy = Entropy::Seeded(5);
    let mut prov = PppoeProvisioning::new(cfg);
    let ups: Vec<ServerEvent> = net
        .server_events
        .iter()
        .filter(|e| matches!(e, ServerEvent::SessionUp { .. }))
        .cloned()
        .collect();
    assert_eq!(ups.len(), 2);
    net.server_events.clear();
    for e in &ups {
        prov.handle_event(net.now, e, &mut net.server);
    }
    while net.exchange() {}

    for i in 0..2 {
        // The unsolicited RA each session got at once.
        let ClientEvent::Up(info) = net
            .client_events
            .iter()
            .find(|(j, e)| *j == i && matches!(e, ClientEvent::Up(_)))
            .unwrap()
            .1
            .clone()
        else {
            unreachable!()
        };
        let ac_id = info
            .negotiated
            .peer_interface_id
            .expect("IPv6CP gave the AC an identifier");
        let my_ll = link_local_of(info.negotiated.local_interface_id.expect("and us"));
        let got = ipv6_to(&mut net, i);
        assert_eq!(got.len(), 1, "one RA at session start");
        let ip = Ipv6Packet::new_checked(&got[0][..]).unwrap();
        let r = Ipv6Repr::parse(&ip).unwrap();
        assert_eq!(
            (r.src, r.dst, r.hop_limit),
            (link_local_of(ac_id), "ff02::1".parse().unwrap(), 255)
        );
        let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert!(icmp.verify_checksum(r.src, r.dst));
        assert_eq!(r.src, "fe80::77:72ff:fe00:1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(ip.payload(), &RA_OVER_PPP[..]);
        let h = RouterAdvertHeader::parse(&icmp).unwrap();
        assert!(h.managed && h.other && h.router_lifetime == 1800);
        let opts: Vec<NdOption<'_>> = NdOptions::new(&ip.payload()[RA_LEN..])
            .map(Result::unwrap)
            .collect();
        assert!(
            opts.iter()
                .all(|o| !matches!(o, NdOption::SourceLladdr(_) | NdOption::Prefix(_))),
            "no link-layer address on PPP, no on-link prefix: {opts:?}"
        );

        // An RS over the session gets a unicast RA.
        assert!(net.clients[i].send(net.now, Protocol::IPV6, &rs(my_ll)));
        settle(&mut net, &mut prov);
        let got = ipv6_to(&mut net, i);
        assert_eq!(got.len(), 1);
        assert_eq!(
            Ipv6Packet::new_checked(&got[0][..]).unwrap().dst_addr(),
            my_ll
        );

        // DHCPv6-PD with Rapid Commit over the session.
        assert!(net.clients[i].send(net.now, Protocol::IPV6, &solicit_pd(my_ll, i as u8)));
        settle(&mut net, &mut prov);
        let got = ipv6_to(&mut net, i);
        assert_eq!(got.len(), 1, "one Reply");
        let ip = Ipv6Packet::new_checked(&got[0][..]).unwrap();
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(udp.verify_checksum_v6(ip.src_addr(), ip.dst_addr()));
        assert_eq!(ip.dst_addr(), my_ll);
        let d = Dhcpv6Packet::new_checked(udp.payload()).unwrap();
        assert_eq!(d.msg_type(), msg::REPLY);
        let ia = IaRepr::parse(d.options().find(opt::IA_PD).unwrap().unwrap()).unwrap();
        let px = IaPrefixRepr::parse(ia.options().find(opt::IAPREFIX).unwrap().unwrap()).unwrap();
        let want: Ipv6Addr = if i == 0 {
            "2001:db8:200::"
        } else {
            "2001:db8:200:100::"
        }
        .parse()
        .unwrap();
        assert_eq!((px.prefix, px.prefix_len), (want, 56));
    }
    let bound: Vec<_> = prov
        .take_events()
        .into_iter()
        .filter_map(|e| match e {
            ProvisionEvent::Dhcp {
                mac,
                event:
                    Dhcpv6Event::Bound {
                        leased: Leased::Prefix(p, 56),
                        ..
                    },
            } => Some((mac, p)),
            _ => None,
        })
        .collect();
    assert_eq!(bound.len(), 2);
    assert_ne!(
        bound[0].0, bound[1].0,
        "each binding names its subscriber's MAC"
    );
    assert_eq!(prov.dhcp().stats.bindings_now, 2);
    assert!(prov.ra_tx >= 4);
    // A session that ends is forgotten: its IPv6 is no longer claimed.
    let key = match &ups[0] {
        ServerEvent::SessionUp { key, .. } => *key,
        _ => unreachable!(),
    };
    prov.handle_event(
        net.now,
        &ServerEvent::SessionDown {
            key,
            reason: emulate::ppp::DownReason::PeerPadt,
        },
        &mut net.server,
    );
    assert!(prov.link_local(key).is_none());
    let data = ServerEvent::Data {
        key,
        protocol: Protocol::IPV6,
        payload: rs(link_local_of([0; 8])),
    };
    assert!(!prov.handle_event(net.now, &data, &mut net.server));
}

/// The prefix a session's DHCPv6 Solicit (IA_PD, Rapid Commit) gets over the session.
fn delegated_over_session(
    net: &mut Net,
    prov: &mut PppoeProvisioning,
    i: usize,
    duid_tail: u8,
) -> (Ipv6Addr, u8) {
    let my_ll = net
        .client_events
        .iter()
        .find_map(|(j, e)| match e {
            ClientEvent::Up(info) if *j == i => info.negotiated.local_interface_id,
            _ => None,
        })
        .map(link_local_of)
        .expect("the session came up with IPv6CP");
    let _ = ipv6_to(net, i);
    assert!(net.clients[i].send(net.now, Protocol::IPV6, &solicit_pd(my_ll, duid_tail)));
    settle(net, prov);
    let got = ipv6_to(net, i);
    assert_eq!(got.len(), 1, "one Reply");
    let ip = Ipv6Packet::new_checked(&got[0][..]).unwrap();
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    let d = Dhcpv6Packet::new_checked(udp.payload()).unwrap();
    assert_eq!(d.msg_type(), msg::REPLY);
    let ia = IaRepr::parse(d.options().find(opt::IA_PD).unwrap().unwrap()).unwrap();
    let px = IaPrefixRepr::parse(ia.options().find(opt::IAPREFIX).unwrap().unwrap()).unwrap();
    (px.prefix, px.prefix_len)
}

/// A subscriber table's `prefix=` is what that subscriber's session delegates: alice's fixed
/// 2001:db8:200::/52 (the pool's first 16 /56s, so the pool skips them), carol's
/// fixed /60 outside the pool, and bob, without one, the pool's first /56 past alice's.
/// Again after a Solicit with the same DUID (the binding holds), and bob's stays the pool's.
#[test]
fn a_subscribers_fixed_prefix_is_what_its_session_delegates() {
    use std::sync::Arc;

    use emulate::pppoe::subscribers::SubscriberTable;
    let table = "alice secret-a prefix=2001:db8:200::/52\n\
                 bob secret-b\n\
                 carol secret-c prefix=2001:db8:300:10::/60\n";
    let mut server = server_cfg(vec![AuthMethod::Pap]);
    server.subscribers = Some(Arc::new(SubscriberTable::parse(table.as_bytes()).unwrap()));
    let mut net = Net::new(
        server,
        vec![
            client_cfg(1, "alice", "secret-a"),
            client_cfg(2, "bob", "secret-b"),
            client_cfg(3, "carol", "secret-c"),
        ],
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up), "sessions did not come up");
    let mut cfg = ProvisionConfig::pppoe(common::ac_mac());
    cfg.ra.entropy = Entropy::Seeded(5);
    let mut prov = PppoeProvisioning::for_server(cfg, &net.server);
    let ups: Vec<ServerEvent> = std::mem::take(&mut net.server_events)
        .into_iter()
        .filter(|e| matches!(e, ServerEvent::SessionUp { .. }))
        .collect();
    assert_eq!(ups.len(), 3);
    for e in &ups {
        prov.handle_event(net.now, e, &mut net.server);
    }
    while net.exchange() {}

    let p = |s: &str, l: u8| (s.parse::<Ipv6Addr>().unwrap(), l);
    assert_eq!(
        delegated_over_session(&mut net, &mut prov, 0, 1),
        p("2001:db8:200::", 52)
    );
    assert_eq!(
        delegated_over_session(&mut net, &mut prov, 1, 2),
        p("2001:db8:200:1000::", 56),
        "the pool skips every /56 inside alice's /52"
    );
    assert_eq!(
        delegated_over_session(&mut net, &mut prov, 2, 3),
        p("2001:db8:300:10::", 60)
    );
    // Asked again, each keeps what it has.
    assert_eq!(
        delegated_over_session(&mut net, &mut prov, 0, 1),
        p("2001:db8:200::", 52)
    );
    assert_eq!(
        delegated_over_session(&mut net, &mut prov, 1, 2),
        p("2001:db8:200:1000::", 56)
    );
    assert_eq!(prov.dhcp().stats.bindings_now, 3);
}
