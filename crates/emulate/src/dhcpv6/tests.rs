use core::net::Ipv6Addr;
use std::collections::BTreeSet;

use wire::dhcpv6::{self, msg, opt, status, Dhcpv6Packet, IaAddrRepr, IaRepr, OptionWriter};
use wire::ethernet::MacAddr;
use wire::map_rule::{MapRule, PortParams, DEFAULT_PSID_OFFSET};
use wire::s46;
use wire::units::Nanos;

use super::server::secs;
use super::*;
use crate::util::add;

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

const SERVER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0x0a]);
const CLIENT_DUID: [u8; 10] = [0, 3, 0, 1, 2, 0, 0, 0, 0, 0x0b];

fn config() -> Dhcpv6Config {
    let mut c = Dhcpv6Config::new(SERVER_MAC);
    c.addresses = Some(AddressPool {
        first: a("2001:db8:c::100"),
        size: 2,
    });
    c.prefixes = Some(PrefixPool {
        base: a("2001:db8:100::"),
        base_len: 48,
        delegated_len: 56,
        size: 2,
    });
    c.dns = vec![a("2001:db8:53::1")];
    c.aftr_name = Some("aftr.example.net".into());
    c
}

// Solicit (xid 0x0a0b0c) with Client ID, Rapid Commit, IA_NA iaid 1, IA_PD iaid 2,
// ORO (23, 64) and Elapsed Time 0, written out by hand from RFC 8415 §16.2.
static SOLICIT_RC: &[u8] = &[
    0x01, 0x0a, 0x0b, 0x0c, // Solicit, xid
    0x00, 0x01, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x0e,
    0x00, 0x00, // Rapid Commit
    0x00, 0x03, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, // IA_NA
    0x00, 0x19, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, // IA_PD
    0x00, 0x06, 0x00, 0x04, 0x00, 0x17, 0x00, 0x40, // ORO
    0x00, 0x08, 0x00, 0x02, 0x00, 0x00, // Elapsed Time
];

// The Reply it gets: Server ID (DUID-LL of 02:00:00:00:00:0a), Client ID, Rapid Commit,
// IA_NA with 2001:db8:c::100, IA_PD with 2001:db8:100::/56, DNS, AFTR-Name.
static REPLY_RC: &[u8] = &[
    0x07, 0x0a, 0x0b, 0x0c, // Reply, xid
    0x00, 0x02, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x01,
    0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x0e, 0x00,
    0x00, // Rapid Commit
    0x00, 0x03, 0x00, 0x28, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x07, 0x08, 0x00, 0x00, 0x0b, 0x40,
    0x00, 0x05, 0x00, 0x18, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x1c, 0x20, 0x00, 0x19, 0x00, 0x29,
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x07, 0x08, 0x00, 0x00, 0x0b, 0x40, 0x00, 0x1a, 0x00, 0x19,
    0x00, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x1c, 0x20, 0x38, 0x20, 0x01, 0x0d, 0xb8, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x17, 0x00, 0x10, 0x20, 0x01, 0x0d,
    0xb8, 0x00, 0x53, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // DNS
    0x00, 0x40, 0x00, 0x12, 0x04, b'a', b'f', b't', b'r', 0x07, b'e', b'x', b'a', b'm', b'p', b'l',
    b'e', 0x03, b'n', b'e', b't', 0x00,
];

#[test]
fn rapid_commit_solicit_gets_the_exact_reply() {
    let mut s = Dhcpv6Server::new(config());
    let r = s.handle(Nanos(0), SOLICIT_RC).unwrap();
    assert_eq!(&r[..], REPLY_RC);
    assert_eq!(
        s.binding(&CLIENT_DUID, IaKind::Pd, 2),
        Some(Leased::Prefix(a("2001:db8:100::"), 56))
    );
    assert_eq!(s.take_events().len(), 2);
    assert_eq!(s.stats.bindings_now, 2);
}

/// A client message of `kind` with Client ID `duid`, an optional Server ID, and IAs.
fn client_msg(
    kind: u8,
    duid: &[u8],
    server: Option<&[u8]>,
    ias: &[(u16, u32)],
    oro: &[u16],
) -> Vec<u8> {
    let mut b = vec![0u8; 500];
    b[0] = kind;
    b[1..4].copy_from_slice(&[1, 2, 3]);
    let mut w = OptionWriter::new(&mut b, 4);
    w.put(opt::CLIENTID, duid).unwrap();
    if let Some(s) = server {
        w.put(opt::SERVERID, s).unwrap();
    }
    for &(code, iaid) in ias {
        let o = w.begin_ia(code, iaid, 0, 0).unwrap();
        w.end(o).unwrap();
    }
    let mut o = Vec::new();
    for c in oro {
        o.extend(c.to_be_bytes());
    }
    w.put(opt::ORO, &o).unwrap();
    let n = w.len();
    b.truncate(n);
    b
}

/// (ia code, iaid, what it holds or its status code).
type IaSummary = (u16, u32, Result<Leased, u16>);

/// (type, its IAs, the option codes present) of a reply.
fn summary(r: &[u8]) -> (u8, Vec<IaSummary>, BTreeSet<u16>) {
    let p = Dhcpv6Packet::new_checked(r).unwrap();
    let mut ias = Vec::new();
    let mut codes = BTreeSet::new();
    for o in p.options() {
        let (code, v) = o.unwrap();
        codes.insert(code);
        if code == opt::IA_NA || code == opt::IA_PD {
            let ia = IaRepr::parse(v).unwrap();
            let mut got = Err(u16::MAX);
            for io in ia.options() {
                let (c, iv) = io.unwrap();
                got = match c {
                    opt::IAADDR => Ok(Leased::Address(IaAddrRepr::parse(iv).unwrap().addr)),
                    opt::IAPREFIX => {
                        let x = wire::dhcpv6::IaPrefixRepr::parse(iv).unwrap();
                        Ok(Leased::Prefix(x.prefix, x.prefix_len))
                    }
                    opt::STATUS_CODE => Err(dhcpv6::parse_status(iv).unwrap().0),
                    _ => got,
                };
            }
            ias.push((code, ia.iaid, got));
        }
    }
    (p.msg_type(), ias, codes)
}

#[test]
fn four_message_exchange_renew_rebind_release() {
    let mut s = Dhcpv6Server::new(config());
    let sid = s.config().server_duid.clone();
    let ias = [(opt::IA_NA, 7), (opt::IA_PD, 8)];
    let adv = s
        .handle(
            Nanos(0),
            &client_msg(msg::SOLICIT, &CLIENT_DUID, None, &ias, &[23]),
        )
        .unwrap();
    let (t, got, codes) = summary(&adv);
    assert_eq!(t, msg::ADVERTISE);
    assert!(codes.contains(&opt::PREFERENCE) && codes.contains(&opt::DNS_SERVERS));
    assert!(!codes.contains(&opt::AFTR_NAME), "not asked for");
    assert_eq!(got[0].2, Ok(Leased::Address(a("2001:db8:c::100"))));
    assert_eq!(s.stats.bindings_now, 0, "an Advertise binds nothing");
    let rep = s
        .handle(
            Nanos(1),
            &client_msg(msg::REQUEST, &CLIENT_DUID, Some(&sid), &ias, &[64]),
        )
        .unwrap();
    let (t, got, codes) = summary(&rep);
    assert_eq!(t, msg::REPLY);
    assert!(codes.contains(&opt::AFTR_NAME));
    assert_eq!(got[1].2, Ok(Leased::Prefix(a("2001:db8:100::"), 56)));
    assert_eq!(s.stats.bindings_now, 2);
    // Renew at T1 extends; the deadline moves.
    let renew_at = Nanos(1_800_000_000_000);
    let rep = s
        .handle(
            renew_at,
            &client_msg(msg::RENEW, &CLIENT_DUID, Some(&sid), &ias, &[]),
        )
        .unwrap();
    assert_eq!(
        summary(&rep).1[0].2,
        Ok(Leased::Address(a("2001:db8:c::100")))
    );
    assert_eq!(s.next_deadline(), Some(add(renew_at, secs(7200))));
    // Rebind (no Server ID) of an unknown IA: NoBinding.
    let rep = s
        .handle(
            renew_at,
            &client_msg(msg::REBIND, &CLIENT_DUID, None, &[(opt::IA_NA, 99)], &[]),
        )
        .unwrap();
    assert_eq!(summary(&rep).1[0].2, Err(status::NO_BINDING));
    // Release frees both.
    let rep = s
        .handle(
            renew_at,
            &client_msg(msg::RELEASE, &CLIENT_DUID, Some(&sid), &ias, &[]),
        )
        .unwrap();
    assert!(summary(&rep).2.contains(&opt::STATUS_CODE));
    assert_eq!(s.stats.bindings_now, 0);
    let ev = s.take_events();
    assert!(matches!(
        ev.last(),
        Some(Dhcpv6Event::Released { iaid: 8, .. })
    ));
    assert_eq!(ev.len(), 6, "2 bound, 2 renewed, 2 released: {ev:?}");
}

/// A fixed prefix is delegated instead of the pool's, extended by Renew, given up on
/// Release without touching the pool; a pool binding the client held is replaced by it;
/// a reserved pool prefix is skipped; IA_NA is unaffected.
#[test]
fn a_fixed_prefix_replaces_the_pool_and_the_pool_skips_it() {
    let mut s = Dhcpv6Server::new(config());
    let sid = s.config().server_duid.clone();
    let fixed = Some((a("2001:db8:300::"), 48));
    let ias = [(opt::IA_NA, 1), (opt::IA_PD, 2)];
    let solicit = |duid: &[u8]| {
        let mut m = client_msg(msg::SOLICIT, duid, None, &ias, &[]);
        m.extend([0, 14, 0, 0]); // Rapid Commit
        m
    };
    let r = s
        .handle_with_prefix(Nanos(0), &solicit(&CLIENT_DUID), fixed)
        .unwrap();
    let (t, got, _) = summary(&r);
    assert_eq!(t, msg::REPLY);
    assert_eq!(got[0].2, Ok(Leased::Address(a("2001:db8:c::100"))));
    assert_eq!(got[1].2, Ok(Leased::Prefix(a("2001:db8:300::"), 48)));
    // The pool still holds both its prefixes for others.
    for (i, want) in ["2001:db8:100::", "2001:db8:100:100::"].iter().enumerate() {
        let duid = [0, 3, 0, 1, 2, 0, 0, 0, 2, i as u8];
        let r = s.handle(Nanos(0), &solicit(&duid)).unwrap();
        assert_eq!(summary(&r).1[1].2, Ok(Leased::Prefix(a(want), 56)));
    }
    // Renew extends the fixed prefix.
    let r = s
        .handle_with_prefix(
            Nanos(5),
            &client_msg(msg::RENEW, &CLIENT_DUID, Some(&sid), &ias, &[]),
            fixed,
        )
        .unwrap();
    assert_eq!(
        summary(&r).1[1].2,
        Ok(Leased::Prefix(a("2001:db8:300::"), 48))
    );
    // Released: the pool's bindings are untouched.
    s.handle_with_prefix(
        Nanos(6),
        &client_msg(msg::RELEASE, &CLIENT_DUID, Some(&sid), &ias, &[]),
        fixed,
    )
    .unwrap();
    assert_eq!(s.binding(&CLIENT_DUID, IaKind::Pd, 2), None);
    // Left: the other two clients' prefixes and the one address the 2-address pool had
    // left for them.
    assert_eq!(s.stats.bindings_now, 3);

    // A client that held a pool prefix and is now fixed gives the pool's up.
    let mut s = Dhcpv6Server::new(config());
    s.handle(Nanos(0), &solicit(&CLIENT_DUID)).unwrap();
    assert_eq!(
        s.binding(&CLIENT_DUID, IaKind::Pd, 2),
        Some(Leased::Prefix(a("2001:db8:100::"), 56))
    );
    s.handle_with_prefix(Nanos(1), &solicit(&CLIENT_DUID), fixed)
        .unwrap();
    assert_eq!(
        s.binding(&CLIENT_DUID, IaKind::Pd, 2),
        Some(Leased::Prefix(a("2001:db8:300::"), 48))
    );
    let r = s.handle(Nanos(1), &solicit(&[0, 3, 0, 1, 9])).unwrap();
    assert_eq!(
        summary(&r).1[1].2,
        Ok(Leased::Prefix(a("2001:db8:100::"), 56)),
        "freed for the next"
    );
    // The same device, now without a fixed prefix (another subscriber logged in on it),
    // gives the fixed one up and gets the pool's next.
    s.handle(Nanos(2), &solicit(&CLIENT_DUID)).unwrap();
    assert_eq!(
        s.binding(&CLIENT_DUID, IaKind::Pd, 2),
        Some(Leased::Prefix(a("2001:db8:100:100::"), 56))
    );

    // Reserved: a fixed /56 equal to the pool's first is never delegated from the pool,
    // nor are the /56s under a fixed /55; one outside the pool changes nothing.
    let mut s = Dhcpv6Server::new(config());
    s.reserve_prefix(a("2001:db8:100::"), 56);
    s.reserve_prefix(a("2001:db8:9::"), 48);
    let r = s.handle(Nanos(0), &solicit(&CLIENT_DUID)).unwrap();
    assert_eq!(
        summary(&r).1[1].2,
        Ok(Leased::Prefix(a("2001:db8:100:100::"), 56))
    );
    let mut s = Dhcpv6Server::new(config());
    s.reserve_prefix(a("2001:db8:100::"), 55);
    let r = s.handle(Nanos(0), &solicit(&CLIENT_DUID)).unwrap();
    assert_eq!(summary(&r).1[1].2, Err(status::NO_PREFIX_AVAIL));
}

#[test]
fn exhausted_pools_say_no_addrs_and_no_prefix_avail() {
    let mut s = Dhcpv6Server::new(config());
    let ias = [(opt::IA_NA, 1), (opt::IA_PD, 1)];
    for i in 0..3u8 {
        let duid = [0, 3, 0, 1, 2, 0, 0, 0, 1, i];
        let r = s
            .handle(Nanos(0), &client_msg(msg::SOLICIT, &duid, None, &ias, &[]))
            .unwrap();
        // No Rapid Commit in these Solicits: Advertise, then Request.
        assert_eq!(r[0], msg::ADVERTISE);
        let sid = s.config().server_duid.clone();
        let r = s
            .handle(
                Nanos(0),
                &client_msg(msg::REQUEST, &duid, Some(&sid), &ias, &[]),
            )
            .unwrap();
        let (_, got, _) = summary(&r);
        if i < 2 {
            assert_eq!(
                got[0].2,
                Ok(Leased::Address(a(&format!("2001:db8:c::10{i}"))))
            );
            assert_eq!(
                got[1].2,
                Ok(Leased::Prefix(a(&format!("2001:db8:100:{i}00::")), 56))
            );
        } else {
            assert_eq!(got[0].2, Err(status::NO_ADDRS_AVAIL));
            assert_eq!(got[1].2, Err(status::NO_PREFIX_AVAIL));
        }
    }
    assert_eq!(
        (s.stats.no_addrs, s.stats.no_prefix),
        (2, 2),
        "advertise + reply"
    );
    // Expiry frees them: a new client gets the lowest again.
    s.poll(secs(7200));
    assert_eq!(s.stats.expired, 4);
    assert_eq!(s.stats.bindings_now, 0);
}

#[test]
fn messages_a_server_must_not_answer_are_counted() {
    let mut s = Dhcpv6Server::new(config());
    let other = [0, 3, 0, 1, 2, 0, 0, 0, 0, 0x99];
    let sid = s.config().server_duid.clone();
    let cases: [(Vec<u8>, Dhcpv6Drop); 5] = [
        (
            client_msg(
                msg::REQUEST,
                &CLIENT_DUID,
                Some(&other),
                &[(opt::IA_NA, 1)],
                &[],
            ),
            Dhcpv6Drop::NotForUs,
        ),
        (
            client_msg(msg::REQUEST, &CLIENT_DUID, None, &[(opt::IA_NA, 1)], &[]),
            Dhcpv6Drop::NotForUs,
        ),
        (
            client_msg(msg::SOLICIT, &CLIENT_DUID, Some(&sid), &[], &[]),
            Dhcpv6Drop::UnexpectedServerId,
        ),
        (
            client_msg(msg::ADVERTISE, &CLIENT_DUID, Some(&sid), &[], &[]),
            Dhcpv6Drop::UnexpectedType,
        ),
        (vec![1, 0, 0], Dhcpv6Drop::Malformed),
    ];
    for (m, why) in cases {
        assert_eq!(s.handle(Nanos(0), &m), None);
        assert!(s.stats.dropped.get(why) > 0, "{why:?}");
    }
    let mut no_cid = client_msg(msg::SOLICIT, &CLIENT_DUID, None, &[], &[]);
    no_cid[5] = 0x63; // Client ID option code 1 → 0x63 (unknown)
    assert_eq!(s.handle(Nanos(0), &no_cid), None);
    assert_eq!(s.stats.dropped.get(Dhcpv6Drop::NoClientId), 1);
    // Information-Request: no Client ID needed, DNS and AFTR-Name when asked.
    let mut ir = vec![msg::INFORMATION_REQUEST, 0, 0, 1];
    ir.extend([0, 6, 0, 4, 0, 23, 0, 64]);
    let (t, _, codes) = summary(&s.handle(Nanos(0), &ir).unwrap());
    assert_eq!(t, msg::REPLY);
    assert!(codes.contains(&opt::DNS_SERVERS) && codes.contains(&opt::AFTR_NAME));
}

#[test]
fn config_check_refuses_what_cannot_work() {
    assert_eq!(config().check(), Ok(()));
    let mut c = config();
    c.addresses = Some(AddressPool {
        first: a("2001:db9::1"),
        size: 1,
    });
    assert!(c.check().unwrap_err().to_string().contains("2001:db8::/32"));
    let mut c = config();
    c.prefixes = Some(PrefixPool {
        base: a("2001:db8:100::"),
        base_len: 48,
        delegated_len: 48,
        size: 1,
    });
    assert!(c.check().is_err());
    let mut c = config();
    c.prefixes = Some(PrefixPool {
        base: a("2001:db8:100::1"),
        base_len: 48,
        delegated_len: 56,
        size: 1,
    });
    assert!(c.check().is_err());
    let mut c = config();
    c.aftr_name = Some("a..b".into());
    assert!(c.check().is_err());
    let p = PrefixPool {
        base: a("2001:db8:100::"),
        base_len: 48,
        delegated_len: 56,
        size: 1000,
    };
    assert_eq!(p.capacity(), 256);
}

/// The MAP-E rule of the lab: 2001:db8:100::/40 with 16 EA bits over 198.51.100.0/24, so
/// each delegated /56 of the test pool is one CE with an 8-bit PSID.
fn mape(offset: u8) -> MapeProvision {
    let params = (offset != DEFAULT_PSID_OFFSET).then_some(PortParams {
        offset,
        psid_len: 0,
        psid: 0,
    });
    let r = MapRule::new(
        a("2001:db8:100::"),
        40,
        "198.51.100.0".parse().unwrap(),
        24,
        16,
        params,
    )
    .unwrap();
    MapeProvision::new(&r, true, a("2001:db8:d::1"))
}

#[test]
fn option_94_goes_out_when_asked_for_and_reads_back_as_the_rule() {
    let mut c = config();
    c.mape = Some(mape(DEFAULT_PSID_OFFSET));
    c.check().unwrap();
    let mut s = Dhcpv6Server::new(c);
    let ias = [(opt::IA_PD, 8)];
    let plain = s
        .handle(
            Nanos(0),
            &client_msg(msg::SOLICIT, &CLIENT_DUID, None, &ias, &[23]),
        )
        .unwrap();
    assert!(
        !summary(&plain).2.contains(&s46::opt::S46_CONT_MAPE),
        "not asked for"
    );
    let rep = s
        .handle(
            Nanos(0),
            &client_msg(msg::SOLICIT, &CLIENT_DUID, None, &ias, &[94]),
        )
        .unwrap();
    let p = Dhcpv6Packet::new_checked(&rep[..]).unwrap();
    let v = p
        .options()
        .map(|o| o.unwrap())
        .find(|(c, _)| *c == s46::opt::S46_CONT_MAPE)
        .expect("option 94")
        .1;
    let cont = wire::s46::MapeContainer::parse(v).unwrap();
    let rules: Vec<_> = cont.rules().collect();
    assert_eq!(rules.len(), 1);
    assert!(rules[0].fmr);
    assert_eq!(
        rules[0].port_params, None,
        "offset 6 needs no S46_PORTPARAMS"
    );
    assert_eq!(
        (rules[0].ea_len, rules[0].prefix4_len, rules[0].prefix6_len),
        (16, 24, 40)
    );
    assert_eq!(cont.brs().collect::<Vec<_>>(), vec![a("2001:db8:d::1")]);
    // The CE's side: the delegated prefix maps through the rule it was given.
    let m = rules[0]
        .map_rule()
        .unwrap()
        .ce_mapping(a("2001:db8:100::"), 56)
        .unwrap();
    assert_eq!(
        m.ipv4,
        "198.51.100.0".parse::<core::net::Ipv4Addr>().unwrap()
    );
    assert_eq!(m.ports.psid_len(), 8);
}

#[test]
fn option_94_carries_portparams_when_the_offset_is_not_the_default() {
    let m = mape(4);
    let pp = m.rule.port_params.expect("S46_PORTPARAMS");
    assert_eq!((pp.offset, pp.psid_len), (4, 8));
    assert_eq!(m.rule.map_rule().unwrap().psid_offset(), 4);
}

#[test]
fn a_rule_that_cannot_map_the_pool_is_refused() {
    let mut c = config();
    c.mape = Some(mape(DEFAULT_PSID_OFFSET));
    // 2001:db8:100::/48 pool, delegated /56: inside the /40 rule, long enough.
    c.check().unwrap();
    let mut short = c.clone();
    short.prefixes.as_mut().unwrap().delegated_len = 52;
    let e = short.check().unwrap_err().to_string();
    assert!(e.contains("/56"), "{e}");
    let mut outside = c.clone();
    outside.prefixes.as_mut().unwrap().base = a("2001:db8:200::");
    let e = outside.check().unwrap_err();
    assert!(matches!(e, Dhcpv6ConfigError::Mape(_)), "{e:?}");
    assert!(e.to_string().contains("not inside the MAP-E rule"), "{e}");
    let mut none = c;
    none.prefixes = None;
    assert!(none
        .check()
        .unwrap_err()
        .to_string()
        .contains("no prefix pool"));
}

#[test]
fn random_and_truncated_input_never_panics() {
    let mut s = Dhcpv6Server::new(config());
    for n in 0..SOLICIT_RC.len() {
        let _ = s.handle(Nanos(0), &SOLICIT_RC[..n]);
    }
    let mut x = 0x1234_5678u32;
    for _ in 0..2000 {
        let mut m = SOLICIT_RC.to_vec();
        for _ in 0..4 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let i = (x >> 8) as usize % m.len();
            m[i] = (x >> 16) as u8;
        }
        let _ = s.handle(Nanos(0), &m);
    }
}
