//! The DHCPv4 server and the DNS service on hostile input: random bytes, random messages
//! behind valid headers and mutated real messages never panic, and each still serves a
//! well-formed request afterwards.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use emulate::dhcpv4::{Arrival, Dhcpv4Config, Dhcpv4Server};
use emulate::dns::service::{DnsService, DnsServiceConfig};
use emulate::dns::DnsConfig;
use emulate::frames;
use emulate::util::Entropy;
use emulate::Nanos;
use proptest::prelude::*;
use wire::dhcpv4::{op, Dhcpv4Packet, Dhcpv4Repr, MessageType};
use wire::ethernet::MacAddr;

const US: MacAddr = MacAddr([2, 0, 0, 0, 0, 0x0a]);
const DNS4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 53);

fn discover() -> Vec<u8> {
    let mut r = Dhcpv4Repr::new(op::REQUEST, 9, MacAddr([2, 0, 0, 0, 0, 0x0b]));
    r.message_type = Some(MessageType::Discover);
    r.parameter_request_list = Some(&[1, 3, 6]);
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Dhcpv4Packet::new_unchecked(&mut b[..]))
        .unwrap();
    b
}

fn service() -> DnsService {
    let mut dns = DnsConfig::new();
    dns.add(
        "aftr.example.net",
        "2001:db8:d::1".parse::<Ipv6Addr>().unwrap().into(),
    )
    .unwrap();
    DnsService::new(DnsServiceConfig {
        mac: US,
        ipv4: Some(DNS4),
        ipv6: None,
        dns,
        entropy: Entropy::Seeded(1),
    })
}

/// A DNS query in a UDP/IPv4 frame to the service.
fn query_frame(payload: &[u8], tcp: bool) -> Vec<u8> {
    let src = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 10));
    let p = if tcp {
        let h = wire::tcp::TcpRepr {
            src_port: 4000,
            dst_port: 53,
            seq: 1,
            ack: 0,
            flags: wire::tcp::TcpFlags::SYN,
            window: 1000,
            urgent: 0,
            mss: Some(1400),
        };
        frames::tcp(src, DNS4.into(), &h, payload).unwrap()
    } else {
        frames::udp(src, 4000, DNS4.into(), 53, payload).unwrap()
    };
    frames::ethernet(
        MacAddr([2, 0, 0, 0, 0, 0x0b]),
        US,
        frames::ethertype_of(&p),
        &p,
    )
}

fn dig_query() -> Vec<u8> {
    let s = "af66012000010000000000010461667472076578616d706c65036e657400001c000100002904d000000000000c000a0008d5b59f0782ed45d4";
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn dhcp_server_survives_anything(msgs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..400), 1..8),
                                     flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8)) {
        let mut s = Dhcpv4Server::new(Dhcpv4Config::default());
        for (i, m) in msgs.iter().enumerate() {
            let _ = s.handle(Nanos(i as u64), m, Arrival::Broadcast);
            // Behind a valid header and cookie, so the options are read.
            let mut d = discover();
            d.truncate(wire::dhcpv4::OPTIONS_AT);
            d.extend(m);
            let _ = s.handle(Nanos(i as u64), &d, Arrival::Unicast);
        }
        let mut d = discover();
        for (i, v) in flips {
            let n = d.len();
            d[i % n] = v;
        }
        let _ = s.handle(Nanos(10), &d, Arrival::Broadcast);
        s.poll(Nanos(u64::MAX / 2));
        prop_assert!(s.handle(Nanos(u64::MAX / 2), &discover(), Arrival::Broadcast).is_some());
    }

    #[test]
    fn dns_service_survives_anything(payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 1..6),
                                     flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
                                     cut in any::<usize>()) {
        let mut s = service();
        for p in &payloads {
            let _ = s.handle_frame(Nanos(0), p);
            let _ = s.handle_frame(Nanos(0), &query_frame(p, false));
            let _ = s.handle_frame(Nanos(0), &query_frame(p, true));
        }
        let mut q = dig_query();
        for (i, v) in flips {
            let n = q.len();
            q[i % n] = v;
        }
        let n = q.len();
        q.truncate(cut % (n + 1));
        let _ = s.handle_frame(Nanos(1), &query_frame(&q, false));
        s.poll(Nanos(10_000_000_000));
        s.take_transmit();
        prop_assert!(s.handle_frame(Nanos(2), &query_frame(&dig_query(), false)));
        prop_assert_eq!(s.take_transmit().len(), 1);
    }
}
