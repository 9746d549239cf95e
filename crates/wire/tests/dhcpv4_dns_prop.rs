//! Properties of the DHCPv4 and DNS formats: no parser panics on any bytes or on mutations of
//! a valid message, and what the emitters write parses back to what was written.

use core::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use wire::dhcpv4::{
    self, Dhcpv4Options, Dhcpv4Packet, Dhcpv4Repr, Ipv4List, MessageType, OtherOptions,
};
use wire::dns::{
    self, tcp_message, DnsPacket, DnsRepr, Flags, Name, Question, RData, Record, Section,
};
use wire::ethernet::MacAddr;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

fn dhcp_parse_all(b: &[u8]) {
    if let Ok(p) = Dhcpv4Packet::new_checked(b) {
        let _ = (p.xid(), p.ciaddr(), p.client_mac(), p.flags());
        if let Ok(r) = Dhcpv4Repr::parse(&p) {
            let _ = r.other.iter().count();
            let _ = r.routers.map(|l| l.iter().count());
            let _ = r.buffer_len();
        }
    }
    for o in Dhcpv4Options::new(b) {
        if o.is_err() {
            break;
        }
    }
}

fn dns_parse_all(b: &[u8]) {
    if let Ok(p) = DnsPacket::new_checked(b) {
        let _ = (p.id(), p.flags());
        for q in p.questions().flatten() {
            let _ = q.name.to_string();
        }
        for (_, r) in p.records().flatten() {
            let _ = r.name.labels().count();
        }
    }
    for at in 0..b.len().min(40) {
        let _ = Name::parse(b, at);
    }
    let _ = tcp_message(b);
}

/// A query as dig sends it (with an EDNS OPT record carrying a cookie).
fn sample_query() -> Vec<u8> {
    let s = "af66012000010000000000010461667472076578616d706c65036e657400001c000100002904d000000000000c000a0008d5b59f0782ed45d4";
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn sample_ack() -> Vec<u8> {
    let mut r = Dhcpv4Repr::new(dhcpv4::op::REPLY, 7, MacAddr([2, 0, 0, 0, 0, 1]));
    r.message_type = Some(MessageType::Ack);
    r.yiaddr = Ipv4Addr::new(198, 51, 100, 10);
    r.server_id = Some(Ipv4Addr::new(198, 51, 100, 1));
    r.lease_time = Some(3600);
    r.routers = Some(Ipv4List::new(&[198, 51, 100, 1]).unwrap());
    r.dns_servers = Some(Ipv4List::new(&[203, 0, 113, 53, 203, 0, 113, 54]).unwrap());
    r.client_id = Some(&[1, 2, 0, 0, 0, 0, 1]);
    r.other = OtherOptions::new(&[60, 3, b'a', b'b', b'c']);
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Dhcpv4Packet::new_unchecked(&mut b[..]))
        .unwrap();
    b
}

/// Options not decoded by the repr, as `code, len, value` runs (no PAD, END or known code).
fn other_options() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        (
            (2u8..=254).prop_filter("not decoded", |c| {
                ![3, 6, 12, 50, 51, 53, 54, 55, 56, 58, 59, 61].contains(c)
            }),
            bytes(20),
        ),
        0..4,
    )
    .prop_map(|opts| {
        let mut v = Vec::new();
        for (c, val) in opts {
            v.push(c);
            v.push(val.len() as u8);
            v.extend(val);
        }
        v
    })
}

fn nonempty(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 1..max)
}

fn addr_list() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<[u8; 4]>(), 1..5).prop_map(|v| v.concat())
}

fn label() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9-]{1,20}"
}

fn name() -> impl Strategy<Value = Name> {
    prop::collection::vec(label(), 0..5).prop_map(|l| Name::from_dotted(&l.join(".")).unwrap())
}

fn record() -> impl Strategy<Value = (Name, u32, u8, [u8; 16], Vec<u8>)> {
    (name(), any::<u32>(), 0u8..3, any::<[u8; 16]>(), bytes(30))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn dhcp_parsers_never_panic(b in bytes(600)) {
        dhcp_parse_all(&b);
        // With a valid header and cookie, so the options are reached.
        let mut m = sample_ack();
        m.truncate(dhcpv4::OPTIONS_AT);
        m.extend(&b);
        dhcp_parse_all(&m);
    }

    #[test]
    fn dhcp_mutations_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let mut b = sample_ack();
        for (i, v) in flips {
            let n = b.len();
            b[i % n] = v;
        }
        let n = b.len();
        b.truncate(cut % (n + 1));
        dhcp_parse_all(&b);
    }

    #[test]
    fn dns_parsers_never_panic(b in bytes(300)) {
        dns_parse_all(&b);
    }

    #[test]
    fn dns_mutations_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let mut b = sample_query();
        for (i, v) in flips {
            let n = b.len();
            b[i % n] = v;
        }
        let n = b.len();
        b.truncate(cut % (n + 1));
        dns_parse_all(&b);
    }

    #[test]
    fn dhcp_roundtrip(
        op in 1u8..=2, xid in any::<u32>(), secs in any::<u16>(), broadcast in any::<bool>(),
        addrs in any::<[[u8; 4]; 4]>(), mac in any::<[u8; 6]>(), mt in proptest::option::of(1u8..=8),
        mask in proptest::option::of(any::<[u8; 4]>()), routers in proptest::option::of(addr_list()),
        dns in proptest::option::of(addr_list()), host in proptest::option::of(nonempty(40)),
        req in proptest::option::of(any::<[u8; 4]>()), times in any::<[Option<u32>; 3]>(),
        sid in proptest::option::of(any::<[u8; 4]>()), prl in proptest::option::of(nonempty(20)),
        msg in proptest::option::of(nonempty(40)), cid in proptest::option::of(prop::collection::vec(any::<u8>(), 2..20)),
        other in other_options(),
    ) {
        let mut r = Dhcpv4Repr::new(op, xid, MacAddr(mac));
        r.secs = secs;
        r.broadcast = broadcast;
        [r.ciaddr, r.yiaddr, r.siaddr, r.giaddr] = addrs.map(Ipv4Addr::from);
        r.message_type = mt.and_then(MessageType::from_u8);
        r.subnet_mask = mask.map(Ipv4Addr::from);
        r.routers = routers.as_deref().map(|b| Ipv4List::new(b).unwrap());
        r.dns_servers = dns.as_deref().map(|b| Ipv4List::new(b).unwrap());
        r.host_name = host.as_deref();
        r.requested_ip = req.map(Ipv4Addr::from);
        [r.lease_time, r.renewal_time, r.rebinding_time] = times;
        r.server_id = sid.map(Ipv4Addr::from);
        r.parameter_request_list = prl.as_deref();
        r.message = msg.as_deref();
        r.client_id = cid.as_deref();
        r.other = OtherOptions::new(&other);
        let mut b = vec![0xa5; r.buffer_len()];
        r.emit(&mut Dhcpv4Packet::new_unchecked(&mut b[..])).unwrap();
        prop_assert!(b.len() >= dhcpv4::MIN_MESSAGE_LEN);
        let p = Dhcpv4Packet::new_checked(&b[..]).unwrap();
        prop_assert_eq!(Dhcpv4Repr::parse(&p).unwrap(), r);
    }

    #[test]
    fn dns_roundtrip(
        id in any::<u16>(), flags in any::<u16>(),
        questions in prop::collection::vec((name(), any::<u16>(), any::<u16>()), 0..3),
        records in prop::collection::vec(record(), 0..6),
    ) {
        let questions: Vec<Question> = questions
            .into_iter()
            .map(|(name, qtype, qclass)| Question { name, qtype, qclass })
            .collect();
        let built: Vec<Record<'_>> = records
            .iter()
            .enumerate()
            .map(|(i, (n, ttl, kind, a6, other))| {
                // Every other record is owned by the first question's name (compressed).
                let name = match questions.first() {
                    Some(q) if i % 2 == 0 => q.name,
                    _ => *n,
                };
                let (rtype, data) = match kind {
                    0 => (dns::rtype::A, RData::A(Ipv4Addr::new(a6[0], a6[1], a6[2], a6[3]))),
                    1 => (dns::rtype::AAAA, RData::Aaaa(Ipv6Addr::from(*a6))),
                    _ => (dns::rtype::TXT, RData::Other(&other[..])),
                };
                Record { name, rtype, class: dns::CLASS_IN, ttl: *ttl, data }
            })
            .collect();
        let (answers, rest) = built.split_at(built.len() / 2);
        let (authority, additional) = rest.split_at(rest.len() / 2);
        let r = DnsRepr {
            id,
            flags: Flags::from_bits(flags),
            questions: &questions,
            answers,
            authority,
            additional,
        };
        let mut b = vec![0xa5; r.buffer_len()];
        prop_assert_eq!(r.emit(&mut b), Ok(b.len()));
        let p = DnsPacket::new_checked(&b[..]).unwrap();
        prop_assert_eq!(p.id(), id);
        prop_assert_eq!(p.flags().bits(), flags);
        let q: Vec<Question> = p.questions().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(q, questions.clone());
        let got: Vec<(Section, Record<'_>)> = p.records().collect::<Result<_, _>>().unwrap();
        let want: Vec<(Section, Record<'_>)> = answers
            .iter()
            .map(|r| (Section::Answer, *r))
            .chain(authority.iter().map(|r| (Section::Authority, *r)))
            .chain(additional.iter().map(|r| (Section::Additional, *r)))
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn name_text_roundtrip(labels in prop::collection::vec(label(), 0..6)) {
        let dotted = labels.join(".");
        let n = Name::from_dotted(&dotted).unwrap();
        let shown = n.to_string();
        prop_assert_eq!(if dotted.is_empty() { ".".to_string() } else { dotted }, shown);
    }
}
