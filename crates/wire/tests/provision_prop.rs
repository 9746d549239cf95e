//! Properties of the IPv6 provisioning formats (Router Discovery, DHCPv6): no parser panics
//! on any bytes or on mutations of a valid message, and what the emitters write parses back.

use core::net::Ipv6Addr;

use proptest::prelude::*;
use wire::dhcpv6::{
    self, decode_name, encode_name, parse_oro, parse_status, Dhcpv6Options, Dhcpv6Packet,
    IaAddrRepr, IaPrefixRepr, IaRepr, OptionWriter,
};
use wire::ethernet::MacAddr;
use wire::icmpv6::Icmpv6Packet;
use wire::map_rule::{MapRule, PortParams, PortSet};
use wire::routerdisc::{
    NdOption, NdOptions, PrefixInfo, RouterAdvertHeader, RouterAdvertRepr, RouterSolicitRepr,
    RA_LEN,
};
use wire::s46::{self, parse_br, parse_port_params, MapeContainer, S46Rule};

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..300)
}

fn v6() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(Ipv6Addr::from)
}

/// Parses every option, recursing into the containers, as the server does.
fn walk(opts: Dhcpv6Options<'_>, depth: u32) {
    for o in opts {
        let Ok((code, v)) = o else { return };
        match code {
            dhcpv6::opt::IA_NA | dhcpv6::opt::IA_PD if depth < 3 => {
                if let Ok(ia) = IaRepr::parse(v) {
                    walk(ia.options(), depth + 1);
                }
            }
            dhcpv6::opt::IAADDR => {
                let _ = IaAddrRepr::parse(v);
            }
            dhcpv6::opt::IAPREFIX => {
                let _ = IaPrefixRepr::parse(v);
            }
            dhcpv6::opt::STATUS_CODE => {
                let _ = parse_status(v);
            }
            dhcpv6::opt::ORO => {
                let _ = parse_oro(v).count();
            }
            dhcpv6::opt::AFTR_NAME => {
                let _ = decode_name(v);
            }
            s46::opt::S46_CONT_MAPE => {
                if let Ok(c) = MapeContainer::parse(v) {
                    for r in c.rules() {
                        let _ = r.map_rule();
                    }
                    let _ = c.brs().count();
                }
                walk(Dhcpv6Options::new(v), depth + 1);
            }
            s46::opt::S46_RULE => {
                if let Ok(r) = S46Rule::parse(v) {
                    let _ = r.map_rule();
                }
            }
            s46::opt::S46_BR => {
                let _ = parse_br(v);
            }
            s46::opt::S46_PORTPARAMS => {
                let _ = parse_port_params(v);
            }
            _ => {}
        }
    }
}

fn parse_all(b: &[u8]) {
    if let Ok(p) = Dhcpv6Packet::new_checked(b) {
        let _ = (p.msg_type(), p.transaction_id());
        walk(p.options(), 0);
    }
    let _ = decode_name(b);
    let p = Icmpv6Packet::new_unchecked(b);
    let _ = RouterSolicitRepr::parse(&p);
    let _ = RouterAdvertHeader::parse(&p);
    for o in NdOptions::new(b).flatten() {
        let _ = o.rdnss_servers().count();
    }
}

fn sample_reply() -> Vec<u8> {
    let mut b = vec![0u8; 500];
    b[0] = dhcpv6::msg::REPLY;
    let mut w = OptionWriter::new(&mut b, dhcpv6::HEADER_LEN);
    w.put(dhcpv6::opt::SERVERID, &[0, 3, 0, 1, 2, 0, 0, 0, 0, 1])
        .unwrap();
    let ia = w.begin_ia(dhcpv6::opt::IA_NA, 1, 10, 20).unwrap();
    w.ia_addr("2001:db8::100".parse().unwrap(), 30, 40).unwrap();
    w.status(dhcpv6::status::SUCCESS, "ok").unwrap();
    w.end(ia).unwrap();
    let ia = w.begin_ia(dhcpv6::opt::IA_PD, 2, 10, 20).unwrap();
    w.ia_prefix("2001:db8:100::".parse().unwrap(), 56, 30, 40)
        .unwrap();
    w.end(ia).unwrap();
    w.name(dhcpv6::opt::AFTR_NAME, "aftr.example.net").unwrap();
    let rule = S46Rule {
        fmr: true,
        ea_len: 16,
        prefix4_len: 24,
        ipv4_prefix: "192.0.2.0".parse().unwrap(),
        prefix6_len: 40,
        ipv6_prefix: "2001:db8::".parse().unwrap(),
        port_params: Some(PortParams {
            offset: 6,
            psid_len: 8,
            psid: 0,
        }),
    };
    w.s46_cont_mape(&[rule], &["2001:db8:ffff::1".parse().unwrap()])
        .unwrap();
    let n = w.len();
    b.truncate(n);
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parsers_never_panic(b in bytes()) {
        parse_all(&b);
    }

    #[test]
    fn mutated_messages_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let mut b = sample_reply();
        for (i, v) in flips {
            let n = b.len();
            b[i % n] = v;
        }
        let n = b.len();
        b.truncate(cut % (n + 1));
        parse_all(&b);
    }

    #[test]
    fn ia_roundtrip(iaid in any::<u32>(), t1 in any::<u32>(), t2 in any::<u32>(), addr in v6(),
                    pref in any::<u32>(), valid in any::<u32>(), plen in 0u8..=128) {
        let mut b = vec![0xa5; 200];
        let mut w = OptionWriter::new(&mut b, 0);
        let ia = w.begin_ia(dhcpv6::opt::IA_PD, iaid, t1, t2).unwrap();
        w.ia_prefix(addr, plen, pref, valid).unwrap();
        w.end(ia).unwrap();
        let n = w.len();
        let (code, v) = Dhcpv6Options::new(&b[..n]).next().unwrap().unwrap();
        prop_assert_eq!(code, dhcpv6::opt::IA_PD);
        let r = IaRepr::parse(v).unwrap();
        prop_assert_eq!((r.iaid, r.t1, r.t2), (iaid, t1, t2));
        let p = IaPrefixRepr::parse(r.options().find(dhcpv6::opt::IAPREFIX).unwrap().unwrap()).unwrap();
        prop_assert_eq!((p.prefix, p.prefix_len, p.preferred, p.valid), (addr, plen, pref, valid));
    }

    #[test]
    fn name_roundtrip(labels in prop::collection::vec("[a-z0-9-]{1,20}", 0..6)) {
        let name = labels.join(".");
        let mut b = [0u8; 300];
        let n = encode_name(&name, &mut b).unwrap();
        prop_assert_eq!(decode_name(&b[..n]), Ok((name, n)));
    }

    #[test]
    fn ra_roundtrip(managed in any::<bool>(), other in any::<bool>(), lifetime in any::<u16>(),
                    mtu in proptest::option::of(any::<u32>()), prefixes in prop::collection::vec((v6(), 0u8..=128, any::<bool>(), any::<bool>(), any::<u32>(), any::<u32>()), 0..4),
                    dns in prop::collection::vec(v6(), 0..4), mac in any::<[u8; 6]>()) {
        let prefixes: Vec<PrefixInfo> = prefixes.into_iter().map(|(prefix, prefix_len, on_link, autonomous, valid_lifetime, preferred_lifetime)| PrefixInfo {
            prefix, prefix_len, on_link, autonomous, valid_lifetime, preferred_lifetime,
        }).collect();
        let header = RouterAdvertHeader { hop_limit: 64, managed, other, router_lifetime: lifetime, reachable_time: 0, retrans_timer: 0 };
        let r = RouterAdvertRepr { header, source_lladdr: Some(MacAddr(mac)), mtu, prefixes: &prefixes, rdnss_lifetime: 60, rdnss: &dns };
        let mut b = vec![0xa5; r.buffer_len()];
        r.emit(&mut Icmpv6Packet::new_unchecked(&mut b)).unwrap();
        prop_assert_eq!(RouterAdvertHeader::parse(&Icmpv6Packet::new_unchecked(&b[..])), Ok(header));
        let opts: Vec<NdOption<'_>> = NdOptions::new(&b[RA_LEN..]).collect::<Result<_, _>>().unwrap();
        let got: Vec<PrefixInfo> = opts.iter().filter_map(|o| match o { NdOption::Prefix(p) => Some(*p), _ => None }).collect();
        prop_assert_eq!(got, prefixes);
        let servers: Vec<Ipv6Addr> = opts.iter().flat_map(|o| o.rdnss_servers()).collect();
        prop_assert_eq!(servers, dns);
        prop_assert_eq!(opts.iter().find_map(|o| match o { NdOption::Mtu(m) => Some(*m), _ => None }), mtu);
    }

    #[test]
    fn s46_rule_roundtrip(fmr in any::<bool>(), ea_len in 0u8..=48, prefix4_len in 0u8..=32, v4 in any::<u32>(),
                          prefix6_len in 0u8..=128, v6 in v6(), params in proptest::option::of((0u8..=15, 0u8..=16, any::<u16>())),
                          br in v6()) {
        let port_params = params.map(|(offset, psid_len, psid)| PortParams {
            offset, psid_len, psid: if psid_len == 0 { 0 } else { psid >> (16 - psid_len) },
        });
        let rule = S46Rule { fmr, ea_len, prefix4_len, ipv4_prefix: v4.into(), prefix6_len, ipv6_prefix: v6, port_params };
        let mut b = vec![0xa5; 200];
        let mut w = OptionWriter::new(&mut b, 0);
        w.s46_cont_mape(&[rule], &[br]).unwrap();
        let n = w.len();
        let (code, v) = Dhcpv6Options::new(&b[..n]).next().unwrap().unwrap();
        prop_assert_eq!(code, s46::opt::S46_CONT_MAPE);
        let c = MapeContainer::parse(v).unwrap();
        let mask = if prefix6_len == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix6_len)) };
        let want = S46Rule { ipv6_prefix: Ipv6Addr::from(u128::from(v6) & mask), ..rule };
        prop_assert_eq!(c.rules().collect::<Vec<_>>(), vec![want]);
        prop_assert_eq!(c.brs().collect::<Vec<_>>(), vec![br]);
    }

    /// For any valid rule and delegated prefix, the BR's way back from the CE's IPv4 address
    /// and any port of its set finds the same CE, and a port is in the set exactly when it
    /// lies in one of the set's ranges.
    #[test]
    fn map_ce_and_br_agree(prefix6_len in 0u8..=64, ea_len in 0u8..=48, prefix4_len in 0u8..=32,
                           v4 in any::<u32>(), v6 in v6(), offset in proptest::option::of(0u8..=15),
                           delegated in v6(), extra in 0u8..=16, ports in prop::collection::vec(any::<u16>(), 8)) {
        let params = offset.map(|offset| PortParams { offset, psid_len: 0, psid: 0 });
        let Ok(rule) = MapRule::new(v6, prefix6_len, v4.into(), prefix4_len, ea_len, params) else {
            return Ok(());
        };
        let len = (rule.end_user_len() + extra).min(64);
        let (rp, rl) = rule.ipv6_prefix();
        let keep = if rl == 0 { 0 } else { u128::MAX << (128 - u32::from(rl)) };
        let delegated = Ipv6Addr::from((u128::from(rp) & keep) | (u128::from(delegated) & !keep));
        let m = rule.ce_mapping(delegated, len).unwrap();
        prop_assert!(m.ipv6_address().segments()[4] == 0);
        for port in ports {
            let in_set = m.ports.contains(port);
            prop_assert_eq!(in_set, m.ports.ranges().any(|r| r.contains(&port)));
            let b = rule.ce_for(m.ipv4, port).unwrap();
            if in_set {
                prop_assert_eq!((b.ipv4, b.ipv4_len, b.ports, b.interface_id()), (m.ipv4, m.ipv4_len, m.ports, m.interface_id()));
                let n = rule.end_user_len();
                let keep = if n == 0 { 0 } else { u128::MAX << (128 - u32::from(n)) };
                prop_assert_eq!((b.end_user_prefix, b.end_user_len), (Ipv6Addr::from(u128::from(m.end_user_prefix) & keep), n));
            }
            if m.ports.psid_len() > 0 && rule.explicit_psid().is_none() {
                prop_assert_eq!(b.ports.psid(), PortSet::psid_of(m.ports.offset(), m.ports.psid_len(), port));
            }
        }
    }
}
