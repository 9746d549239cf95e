use core::net::Ipv4Addr;

use wire::dhcpv4::{op, Dhcpv4Packet, Dhcpv4Repr, MessageType};
use wire::ethernet::MacAddr;
use wire::units::Nanos;

use super::server::emit;
use super::*;

const CLIENT: MacAddr = MacAddr([0x0e, 0x2a, 0x5f, 0x32, 0x0c, 0xaf]);
const OTHER: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0b]);
const SERVER: Ipv4Addr = defaults::GATEWAY;

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn sec(s: u64) -> Nanos {
    Nanos(s * 1_000_000_000)
}

fn server() -> Dhcpv4Server {
    let c = Dhcpv4Config::default();
    assert_eq!(c.check(), Ok(()));
    Dhcpv4Server::new(c)
}

/// A client message: `f` fills in what differs from a bare message of `kind`.
fn msg(kind: MessageType, mac: MacAddr, f: impl FnOnce(&mut Dhcpv4Repr<'_>)) -> Vec<u8> {
    let mut r = Dhcpv4Repr::new(op::REQUEST, 0x1234_5678, mac);
    r.message_type = Some(kind);
    r.parameter_request_list = Some(&[1, 3, 6, 51, 58, 59]);
    f(&mut r);
    emit(&r)
}

fn parse(reply: &Dhcpv4Reply) -> Dhcpv4Repr<'_> {
    Dhcpv4Repr::parse(&Dhcpv4Packet::new_checked(&reply.message[..]).unwrap()).unwrap()
}

/// dhcpcd 9.4.1's DISCOVER, captured on a veth (the vector of `wire::dhcpv4`'s tests).
const DHCPCD_DISCOVER: &str = concat!(
    "01010600a480ea7700000000000000000000000000000000000000000e2a5f320caf000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000000000000000000063825363",
    "35010137090103060c1c21333a3b390205c03c366468637063642d392e342e313a4c696e75782d36",
    "2e31382e34342d66632d763635373a7838365f36343a47656e75696e65496e74656c0c0677722d63",
    "7065910101ff",
);

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The OFFER for dhcpcd's DISCOVER, written out by hand (RFC 2131 §4.3.1, Table 3):
/// BOOTREPLY, xid 0xa480ea77, yiaddr 198.51.100.10, chaddr, cookie; 53 OFFER, 54
/// 198.51.100.1, 51 3600, 58 1800, 59 3150, 1 255.255.255.0, 3 198.51.100.1, 6
/// 203.0.113.53, END, padding to 300 bytes.
fn expected_offer() -> Vec<u8> {
    let mut b = vec![0u8; 300];
    b[..4].copy_from_slice(&[2, 1, 6, 0]);
    b[4..8].copy_from_slice(&[0xa4, 0x80, 0xea, 0x77]);
    b[16..20].copy_from_slice(&[198, 51, 100, 10]);
    b[28..34].copy_from_slice(&CLIENT.0);
    b[236..240].copy_from_slice(&[99, 130, 83, 99]);
    let o: &[u8] = &[
        53, 1, 2, 54, 4, 198, 51, 100, 1, 51, 4, 0, 0, 0x0e, 0x10, 58, 4, 0, 0, 0x07, 0x08, 59, 4,
        0, 0, 0x0c, 0x4e, 1, 4, 255, 255, 255, 0, 3, 4, 198, 51, 100, 1, 6, 4, 203, 0, 113, 53,
        255,
    ];
    b[240..240 + o.len()].copy_from_slice(o);
    b
}

#[test]
fn dhcpcd_discover_gets_a_byte_exact_offer_then_request_gets_the_ack() {
    let mut s = server();
    let offer = s
        .handle(sec(1), &unhex(DHCPCD_DISCOVER), Arrival::Broadcast)
        .unwrap();
    assert_eq!(offer.kind, MessageType::Offer);
    assert_eq!(offer.message, expected_offer());
    // The broadcast flag is clear: to the offered address at the client's MAC.
    assert_eq!(offer.to, Destination::Unicast(ip("198.51.100.10"), CLIENT));
    assert_eq!(s.bound().count(), 0, "an offer binds nothing");
    // SELECTING: REQUEST with our server id and the offered address.
    let req = msg(MessageType::Request, CLIENT, |r| {
        r.xid = 0xa480_ea77;
        r.server_id = Some(SERVER);
        r.requested_ip = Some(ip("198.51.100.10"));
    });
    let ack = s.handle(sec(2), &req, Arrival::Broadcast).unwrap();
    assert_eq!(ack.kind, MessageType::Ack);
    let a = parse(&ack);
    assert_eq!(
        (a.xid, a.yiaddr, a.lease_time),
        (0xa480_ea77, ip("198.51.100.10"), Some(3600))
    );
    assert_eq!(
        a.dns_servers.unwrap().iter().collect::<Vec<_>>(),
        [defaults::DNS]
    );
    assert_eq!(
        s.bound().collect::<Vec<_>>(),
        [(CLIENT, ip("198.51.100.10"))]
    );
    assert_eq!(s.bound_to(ip("198.51.100.10")), Some(CLIENT));
    let mut key = vec![1u8];
    key.extend(CLIENT.0);
    assert_eq!(
        s.take_events(),
        [Dhcpv4Event::Bound {
            mac: CLIENT,
            client: key,
            addr: ip("198.51.100.10"),
            lease: 3600
        }]
    );
    assert_eq!(s.stats.leases_now, 1);
    assert_eq!(s.stats.tx.get(MessageType::Offer), 1);
    assert_eq!(s.stats.tx.get(MessageType::Ack), 1);
}

fn bind(s: &mut Dhcpv4Server, now: Nanos, mac: MacAddr) -> Ipv4Addr {
    let offer = s
        .handle(
            now,
            &msg(MessageType::Discover, mac, |_| {}),
            Arrival::Broadcast,
        )
        .unwrap();
    let addr = parse(&offer).yiaddr;
    let req = msg(MessageType::Request, mac, |r| {
        r.server_id = Some(SERVER);
        r.requested_ip = Some(addr);
    });
    assert_eq!(
        s.handle(now, &req, Arrival::Broadcast).unwrap().kind,
        MessageType::Ack
    );
    s.take_events();
    addr
}

#[test]
fn renewing_and_rebinding_extend_the_lease_which_expires_on_the_clock() {
    let mut s = server();
    let a = bind(&mut s, sec(0), CLIENT);
    assert_eq!(s.next_deadline(), Some(sec(3600)));
    // RENEWING at T1: unicast, ciaddr set, no server id or requested address.
    let renew = msg(MessageType::Request, CLIENT, |r| r.ciaddr = a);
    let ack = s.handle(sec(1800), &renew, Arrival::Unicast).unwrap();
    assert_eq!(ack.kind, MessageType::Ack);
    assert_eq!(ack.to, Destination::Unicast(a, CLIENT), "to ciaddr");
    assert!(matches!(&s.take_events()[..], [Dhcpv4Event::Renewed { addr, .. }] if *addr == a));
    assert_eq!(s.next_deadline(), Some(sec(5400)));
    // REBINDING at T2 of that: the same, broadcast.
    let ack = s.handle(sec(4950), &renew, Arrival::Broadcast).unwrap();
    assert_eq!(ack.kind, MessageType::Ack);
    assert_eq!(s.stats.broadcast_rx, 3);
    s.take_events();
    let end = sec(4950 + 3600);
    s.poll(Nanos(end.0 - 1));
    assert_eq!(
        s.stats.leases_now, 1,
        "still bound a nanosecond before the end"
    );
    s.poll(end);
    assert_eq!(s.stats.leases_now, 0);
    assert!(
        matches!(&s.take_events()[..], [Dhcpv4Event::Expired { mac: CLIENT, addr, .. }] if *addr == a)
    );
    assert_eq!(s.next_deadline(), None);
    // The expired client comes back to the same address.
    assert_eq!(bind(&mut s, end, CLIENT), a);
}

#[test]
fn init_reboot_is_authoritative_and_naks_what_is_not_the_clients() {
    let mut s = server();
    let a = bind(&mut s, sec(0), CLIENT);
    let reboot = |mac, addr| {
        msg(MessageType::Request, mac, move |r| {
            r.requested_ip = Some(addr)
        })
    };
    let ack = s
        .handle(sec(1), &reboot(CLIENT, a), Arrival::Broadcast)
        .unwrap();
    assert_eq!(ack.kind, MessageType::Ack);
    assert!(matches!(&s.take_events()[..], [Dhcpv4Event::Bound { .. }]));
    // Another client asking for it: NAK, broadcast, with the reason in option 56.
    let nak = s
        .handle(sec(1), &reboot(OTHER, a), Arrival::Broadcast)
        .unwrap();
    assert_eq!(
        (nak.kind, nak.to),
        (MessageType::Nak, Destination::Broadcast)
    );
    let n = parse(&nak);
    assert_eq!(
        (n.yiaddr, n.server_id),
        (Ipv4Addr::UNSPECIFIED, Some(SERVER))
    );
    assert_eq!(n.message, Some(&b"address leased to another client"[..]));
    // An address of another network (a lease from another ISP).
    let nak = s
        .handle(sec(1), &reboot(OTHER, ip("192.0.2.77")), Arrival::Broadcast)
        .unwrap();
    assert_eq!(nak.kind, MessageType::Nak);
    // A free pool address for a client we never saw (our restart): granted.
    let ack = s
        .handle(
            sec(1),
            &reboot(OTHER, ip("198.51.100.20")),
            Arrival::Broadcast,
        )
        .unwrap();
    assert_eq!(
        (ack.kind, parse(&ack).yiaddr),
        (MessageType::Ack, ip("198.51.100.20"))
    );
    assert_eq!(s.stats.naks.get(NakReason::InUse), 1);
    assert_eq!(s.stats.naks.get(NakReason::NotInPool), 1);
    // SELECTING with the wrong address: NAK NotOffered.
    let wrong = msg(MessageType::Request, OTHER, |r| {
        r.server_id = Some(SERVER);
        r.requested_ip = Some(ip("198.51.100.99"));
    });
    assert_eq!(
        s.handle(sec(2), &wrong, Arrival::Broadcast).unwrap().kind,
        MessageType::Nak
    );
    assert_eq!(s.stats.naks.get(NakReason::NotOffered), 1);
    // RENEWING from an address that is another's.
    let renew = msg(MessageType::Request, OTHER, |r| r.ciaddr = a);
    assert_eq!(
        s.handle(sec(3), &renew, Arrival::Unicast).unwrap().kind,
        MessageType::Nak
    );
}

#[test]
fn another_servers_offer_chosen_frees_ours_and_an_unrequested_offer_runs_out() {
    let mut s = server();
    let d = msg(MessageType::Discover, CLIENT, |_| {});
    assert_eq!(
        parse(&s.handle(sec(0), &d, Arrival::Broadcast).unwrap()).yiaddr,
        ip("198.51.100.10")
    );
    // Another client meanwhile gets the next address: ours is held.
    let d2 = msg(MessageType::Discover, OTHER, |_| {});
    assert_eq!(
        parse(&s.handle(sec(0), &d2, Arrival::Broadcast).unwrap()).yiaddr,
        ip("198.51.100.11")
    );
    // The first client picks another server: its offer is freed, no reply.
    let elsewhere = msg(MessageType::Request, CLIENT, |r| {
        r.server_id = Some(ip("198.51.100.254"));
        r.requested_ip = Some(ip("198.51.100.200"));
    });
    assert_eq!(s.handle(sec(1), &elsewhere, Arrival::Broadcast), None);
    assert_eq!(s.stats.other_server, 1);
    let third = MacAddr([2, 0, 0, 0, 0, 0x0c]);
    let d3 = msg(MessageType::Discover, third, |_| {});
    assert_eq!(
        parse(&s.handle(sec(1), &d3, Arrival::Broadcast).unwrap()).yiaddr,
        ip("198.51.100.10")
    );
    // The offers to OTHER and `third` run out after offer_hold (30 s) unrequested.
    assert_eq!(s.next_deadline(), Some(sec(30)));
    s.poll(sec(31));
    let fourth = MacAddr([2, 0, 0, 0, 0, 0x0d]);
    let d4 = msg(MessageType::Discover, fourth, |_| {});
    assert_eq!(
        parse(&s.handle(sec(31), &d4, Arrival::Broadcast).unwrap()).yiaddr,
        ip("198.51.100.10")
    );
    assert!(s.take_events().is_empty(), "offers are not leases");
}

#[test]
fn release_frees_and_decline_holds_the_address_out() {
    let mut s = server();
    let a = bind(&mut s, sec(0), CLIENT);
    let release = msg(MessageType::Release, CLIENT, |r| {
        r.ciaddr = a;
        r.server_id = Some(SERVER);
    });
    assert_eq!(s.handle(sec(5), &release, Arrival::Unicast), None);
    assert!(matches!(&s.take_events()[..], [Dhcpv4Event::Released { addr, .. }] if *addr == a));
    assert_eq!(s.stats.leases_now, 0);
    // Released, it goes to the next client that asks…
    assert_eq!(bind(&mut s, sec(6), OTHER), a);
    // …and the first gets the next one; it declines it (an address conflict).
    let b = bind(&mut s, sec(7), CLIENT);
    assert_eq!(b, ip("198.51.100.11"));
    let decline = msg(MessageType::Decline, CLIENT, |r| {
        r.requested_ip = Some(b);
        r.server_id = Some(SERVER);
    });
    assert_eq!(s.handle(sec(8), &decline, Arrival::Broadcast), None);
    assert!(matches!(&s.take_events()[..], [Dhcpv4Event::Declined { addr, .. }] if *addr == b));
    // Until decline_hold (600 s) passes nobody gets .11.
    assert_eq!(bind(&mut s, sec(9), CLIENT), ip("198.51.100.12"));
    let third = MacAddr([2, 0, 0, 0, 0, 0x0c]);
    assert_eq!(bind(&mut s, sec(607), third), ip("198.51.100.13"));
    let fourth = MacAddr([2, 0, 0, 0, 0, 0x0d]);
    assert_eq!(bind(&mut s, sec(609), fourth), ip("198.51.100.11"));
    // A RELEASE naming another server is not ours.
    let foreign = msg(MessageType::Release, fourth, |r| {
        r.server_id = Some(ip("192.0.2.1"))
    });
    assert_eq!(s.handle(sec(610), &foreign, Arrival::Unicast), None);
    assert_eq!(s.stats.dropped.get(Dhcpv4Drop::NotForUs), 1);
    assert_eq!(s.stats.leases_now, 4);
}

#[test]
fn client_identifier_keys_the_lease_and_broadcast_flag_and_inform() {
    let mut s = server();
    let id: &[u8] = &[0xff, 0, 0, 0, 1, 0, 1, 0x2a];
    let d = msg(MessageType::Discover, CLIENT, |r| {
        r.client_id = Some(id);
        r.broadcast = true;
    });
    let offer = s.handle(sec(0), &d, Arrival::Broadcast).unwrap();
    assert_eq!(
        offer.to,
        Destination::Broadcast,
        "the client asked for broadcast"
    );
    let o = parse(&offer);
    assert!(o.broadcast);
    assert_eq!(o.client_id, Some(id), "echoed (RFC 6842)");
    let req = msg(MessageType::Request, OTHER, |r| {
        r.client_id = Some(id);
        r.server_id = Some(SERVER);
        r.requested_ip = Some(o.yiaddr);
    });
    // Same identifier from another MAC (a moved gateway): the same lease.
    assert_eq!(
        s.handle(sec(1), &req, Arrival::Broadcast).unwrap().kind,
        MessageType::Ack
    );
    assert!(
        matches!(&s.take_events()[..], [Dhcpv4Event::Bound { client, mac: OTHER, .. }] if client == id)
    );
    let inform = msg(MessageType::Inform, OTHER, |r| {
        r.ciaddr = ip("198.51.100.10")
    });
    let ack = s.handle(sec(2), &inform, Arrival::Unicast).unwrap();
    let a = parse(&ack);
    assert_eq!(
        (a.message_type, a.yiaddr, a.lease_time),
        (Some(MessageType::Ack), Ipv4Addr::UNSPECIFIED, None)
    );
    assert_eq!(ack.to, Destination::Unicast(ip("198.51.100.10"), OTHER));
    assert!(a.routers.is_some() && a.subnet_mask.is_some());
}

#[test]
fn an_exhausted_pool_drops_the_discover() {
    let mut s = Dhcpv4Server::new(Dhcpv4Config {
        pool_size: 2,
        ..Dhcpv4Config::default()
    });
    bind(&mut s, sec(0), CLIENT);
    bind(&mut s, sec(0), OTHER);
    let d = msg(MessageType::Discover, MacAddr([2, 0, 0, 0, 0, 9]), |_| {});
    assert_eq!(s.handle(sec(0), &d, Arrival::Broadcast), None);
    assert_eq!(s.stats.dropped.get(Dhcpv4Drop::PoolExhausted), 1);
}

#[test]
fn what_a_server_must_not_answer_is_counted_and_nothing_panics() {
    let mut s = server();
    let relayed = msg(MessageType::Discover, CLIENT, |r| {
        r.giaddr = ip("192.0.2.1")
    });
    let reply = msg(MessageType::Discover, CLIENT, |r| r.op = op::REPLY);
    let offer = msg(MessageType::Offer, CLIENT, |_| {});
    let bootp = msg(MessageType::Discover, CLIENT, |r| r.message_type = None);
    for m in [&relayed, &reply, &offer, &bootp] {
        assert_eq!(s.handle(sec(0), m, Arrival::Broadcast), None);
    }
    assert_eq!(s.handle(sec(0), b"not dhcp", Arrival::Broadcast), None);
    assert_eq!(s.stats.dropped.get(Dhcpv4Drop::Relayed), 1);
    assert_eq!(s.stats.dropped.get(Dhcpv4Drop::NotFromClient), 2);
    assert_eq!(s.stats.dropped.get(Dhcpv4Drop::NoMessageType), 1);
    assert_eq!(s.stats.dropped.get(Dhcpv4Drop::Malformed), 1);
    let d = unhex(DHCPCD_DISCOVER);
    for n in 0..d.len() {
        let _ = s.handle(sec(0), &d[..n], Arrival::Broadcast);
    }
    assert!(
        s.stats.tx.get(MessageType::Offer) == 0,
        "only the whole message is answered"
    );
    assert!(s.handle(sec(0), &d, Arrival::Broadcast).is_some());
}

#[test]
fn config_checks_name_what_is_wrong() {
    let base = Dhcpv4Config::default();
    let bad = |f: &dyn Fn(&mut Dhcpv4Config)| {
        let mut c = base.clone();
        f(&mut c);
        c.check().unwrap_err().to_string()
    };
    assert!(bad(&|c| c.pool_size = 0).contains("empty"));
    assert!(bad(&|c| c.pool_size = 300).contains("largest pool from there is 245"));
    assert!(bad(&|c| c.gateway = ip("10.0.0.1")).contains("198.18.0.0/15"));
    assert!(bad(&|c| c.pool_first = ip("198.51.100.0")).contains("above its network"));
    assert!(bad(&|c| c.pool_first = ip("198.51.100.1")).contains("gateway's own address"));
    assert!(bad(&|c| c.lease_time = 5).contains("too short"));
    let short = Dhcpv4Config {
        lease_time: 5,
        ..base.clone()
    };
    assert_eq!(
        short.check(),
        Err(Dhcpv4ConfigError::LeaseTooShort { seconds: 5 }),
        "the refusal carries the value a caller can match on"
    );
    assert!(bad(&|c| c.dns = vec![ip("8.8.8.8")]).contains("DNS server 8.8.8.8"));
    assert!(bad(&|c| c.prefix_len = 16).contains("not inside"));
    // The benchmarking range holds 100,000 subscribers behind one gateway.
    let big = Dhcpv4Config {
        gateway: ip("198.18.0.1"),
        prefix_len: 15,
        pool_first: ip("198.18.0.10"),
        pool_size: 100_000,
        ..base
    };
    assert_eq!(big.check(), Ok(()));
}
