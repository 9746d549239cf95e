//! The ISP side's DNS server: authoritative for the few names a home-gateway test needs — the
//! AFTR's name (RFC 6334: a DS-Lite gateway given `aftr.example.net` by DHCPv6 resolves it
//! through the DNS server it was given) and the `internet` host — and for nothing else.
//!
//! - A name we hold: its A / AAAA records (both for ANY), authoritative (AA). A type we hold
//!   no record of for it (an A query for the AFTR, which has only an IPv6 address): NOERROR
//!   with no answer (NODATA, RFC 2308 §2.2).
//! - A name that exists only as the parent of one we hold (the zone apex `example.net`, an
//!   empty non-terminal): NODATA too.
//! - Any other name below one of our zones (the parents of the names we hold, `example.net`
//!   for `aftr.example.net`): NXDOMAIN, authoritative.
//! - Any other name: REFUSED, whether recursion is desired or not. This server never
//!   recurses (RA is clear) and answers only for its zones, as an authoritative-only server
//!   does; a CPE that forwards its LAN's queries here gets REFUSED for the rest of the world,
//!   which is what a lab without the Internet should say.
//! - Questions are echoed as asked (case kept, for resolvers that randomise it); a query
//!   with an EDNS OPT record (RFC 6891) gets one back (version 0, our UDP size); over UDP an
//!   answer larger than the client accepts is sent empty with TC set (RFC 1035 §4.2.1), so
//!   the client retries over TCP. Negative answers carry no SOA (resolvers cache them for
//!   the default time instead).
//! - Not a query (QR set) or not parseable: no answer. Another opcode: NOTIMP. Not exactly
//!   one question: FORMERR. Another class than IN: REFUSED.
//!
//! [`DnsResponder`] works on messages. [`tcp`] is the TCP end for DNS over TCP (RFC 7766)
//! on a port without a kernel, and [`service`] puts both on an Ethernet port: UDP and TCP
//! port 53 at the server's IPv4 and IPv6 addresses.

use core::net::IpAddr;

use wire::dns::{self, rcode, DnsPacket, DnsRepr, Flags, Name, Question, RData, Record, Section};

use crate::util::Counter;

pub mod service;
pub mod tcp;

/// The names an ISP port answers for, by default (RFC 2606's example domain).
pub mod defaults {
    /// The Internet host behind the ISP port (A: the plan's `internet` address).
    pub const INTERNET_NAME: &str = "internet.example.net";
    /// How long answers may be cached, seconds.
    pub const TTL: u32 = 300;
}

/// Why [`DnsConfig::add`] refused a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostNameError {
    /// Not a dotted DNS name (`reason`: what `wire` found wrong with it).
    NotAName { name: String, reason: wire::Error },
    /// The root or a top-level name: no zone to answer for.
    NoDomain { name: String },
}

impl std::fmt::Display for HostNameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostNameError::NotAName { name, reason } => {
                write!(f, "{name:?} is not a DNS name: {reason}")
            }
            HostNameError::NoDomain { name } => write!(
                f,
                "{name:?} has no domain to be authoritative for (give e.g. aftr.example.net)"
            ),
        }
    }
}

impl std::error::Error for HostNameError {}

/// The records of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub name: Name,
    pub addrs: Vec<IpAddr>,
}

/// What the server answers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsConfig {
    pub hosts: Vec<Host>,
    /// TTL of every answer, seconds.
    pub ttl: u32,
}

impl DnsConfig {
    pub fn new() -> DnsConfig {
        DnsConfig {
            hosts: Vec::new(),
            ttl: defaults::TTL,
        }
    }

    /// Adds `addr` to `name` (a dotted name; refused when it is not a valid DNS name).
    pub fn add(&mut self, name: &str, addr: IpAddr) -> Result<(), HostNameError> {
        let n = Name::from_dotted(name).map_err(|reason| HostNameError::NotAName {
            name: name.to_string(),
            reason,
        })?;
        if n.is_root() || n.parent().is_root() {
            return Err(HostNameError::NoDomain {
                name: name.to_string(),
            });
        }
        match self.hosts.iter_mut().find(|h| h.name.eq_ignore_case(&n)) {
            Some(h) => {
                if !h.addrs.contains(&addr) {
                    h.addrs.push(addr);
                }
            }
            None => self.hosts.push(Host {
                name: n,
                addrs: vec![addr],
            }),
        }
        Ok(())
    }

    /// The zones: the parent of every name held, without repeats.
    pub fn zones(&self) -> Vec<Name> {
        let mut z: Vec<Name> = Vec::new();
        for h in &self.hosts {
            let p = h.name.parent();
            if !z.iter().any(|x| x.eq_ignore_case(&p)) {
                z.push(p);
            }
        }
        z
    }
}

impl Default for DnsConfig {
    fn default() -> DnsConfig {
        DnsConfig::new()
    }
}

/// How a query was answered (or why not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DnsOutcome {
    /// Records given.
    Answered,
    /// A name we hold, no record of that type.
    NoData,
    NxDomain,
    Refused,
    FormErr,
    NotImp,
    /// The answer did not fit: sent empty with TC.
    Truncated,
    /// Not answered: not parseable, or not a query.
    Dropped,
}

/// Counters of a [`DnsResponder`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsStats {
    pub queries: u64,
    pub outcomes: Counter<DnsOutcome>,
}

/// The answering part, message in, message out.
#[derive(Debug, Clone)]
pub struct DnsResponder {
    cfg: DnsConfig,
    zones: Vec<Name>,
    pub stats: DnsStats,
}

/// The UDP payload size we announce in our OPT record (the DNS flag day's 1232).
pub const EDNS_SIZE: u16 = 1232;

impl DnsResponder {
    pub fn new(cfg: DnsConfig) -> DnsResponder {
        DnsResponder {
            zones: cfg.zones(),
            cfg,
            stats: DnsStats::default(),
        }
    }

    pub fn config(&self) -> &DnsConfig {
        &self.cfg
    }

    /// The answer to `query` — over UDP (`udp`) at most what the client accepts (512 bytes,
    /// or its EDNS size up to ours), over TCP up to 65,535 — or `None` when it must not be
    /// answered.
    pub fn answer(&mut self, query: &[u8], udp: bool) -> Option<Vec<u8>> {
        self.stats.queries += 1;
        let (reply, outcome) = self.respond(query, udp);
        self.stats.outcomes.add(outcome);
        reply
    }

    fn respond(&self, query: &[u8], udp: bool) -> (Option<Vec<u8>>, DnsOutcome) {
        let Ok(p) = DnsPacket::new_checked(query) else {
            return (None, DnsOutcome::Dropped);
        };
        let f = p.flags();
        if f.response {
            return (None, DnsOutcome::Dropped);
        }
        // The requester's EDNS size, if it sent an OPT record.
        let edns = p.records().find_map(|r| match r {
            Ok((Section::Additional, r)) if r.rtype == dns::rtype::OPT => Some(r.class),
            _ => None,
        });
        let mut flags = Flags {
            response: true,
            opcode: f.opcode,
            recursion_desired: f.recursion_desired,
            checking_disabled: f.checking_disabled,
            ..Flags::default()
        };
        let opt = [Record {
            name: Name::root(),
            rtype: dns::rtype::OPT,
            class: EDNS_SIZE,
            ttl: 0,
            data: RData::Other(&[]),
        }];
        let additional: &[Record<'_>] = if edns.is_some() { &opt } else { &[] };
        // An answer without records.
        let header_only = |flags: Flags, questions: &[Question]| {
            emit(&DnsRepr {
                id: p.id(),
                flags,
                questions,
                answers: &[],
                authority: &[],
                additional,
            })
        };
        if f.opcode != dns::OPCODE_QUERY {
            flags.rcode = rcode::NOTIMP;
            return (Some(header_only(flags, &[])), DnsOutcome::NotImp);
        }
        let questions: Result<Vec<Question>, _> = p.questions().collect();
        let q = match questions.as_deref() {
            Ok([q]) => *q,
            _ => {
                flags.rcode = rcode::FORMERR;
                return (Some(header_only(flags, &[])), DnsOutcome::FormErr);
            }
        };
        let asked = [q];
        let in_zone = self.zones.iter().any(|z| q.name.is_within(z));
        if q.qclass != dns::CLASS_IN || !in_zone {
            flags.rcode = rcode::REFUSED;
            return (Some(header_only(flags, &asked)), DnsOutcome::Refused);
        }
        flags.authoritative = true;
        let Some(host) = self
            .cfg
            .hosts
            .iter()
            .find(|h| h.name.eq_ignore_case(&q.name))
        else {
            // A parent of a name we hold exists, with no records of its own.
            if self.cfg.hosts.iter().any(|h| h.name.is_within(&q.name)) {
                return (Some(header_only(flags, &asked)), DnsOutcome::NoData);
            }
            flags.rcode = rcode::NXDOMAIN;
            return (Some(header_only(flags, &asked)), DnsOutcome::NxDomain);
        };
        let answers: Vec<Record<'_>> = host
            .addrs
            .iter()
            .filter_map(|a| {
                let (rtype, data) = match a {
                    IpAddr::V4(v4) => (dns::rtype::A, RData::A(*v4)),
                    IpAddr::V6(v6) => (dns::rtype::AAAA, RData::Aaaa(*v6)),
                };
                (q.qtype == rtype || q.qtype == dns::rtype::ANY).then_some(Record {
                    // The owner as asked, so it compresses to the question.
                    name: q.name,
                    rtype,
                    class: dns::CLASS_IN,
                    ttl: self.cfg.ttl,
                    data,
                })
            })
            .collect();
        let outcome = if answers.is_empty() {
            DnsOutcome::NoData
        } else {
            DnsOutcome::Answered
        };
        let full = DnsRepr {
            id: p.id(),
            flags,
            questions: &asked,
            answers: &answers,
            authority: &[],
            additional,
        };
        let limit = match (udp, edns) {
            (false, _) => usize::from(u16::MAX),
            (true, Some(size)) => usize::from(size.clamp(dns::UDP_MAX as u16, EDNS_SIZE)),
            (true, None) => dns::UDP_MAX,
        };
        if full.buffer_len() > limit {
            flags.truncated = true;
            return (Some(header_only(flags, &asked)), DnsOutcome::Truncated);
        }
        (Some(emit(&full)), outcome)
    }
}

fn emit(r: &DnsRepr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    // Our own answers: sections of one or a few entries, never past the format's bounds.
    let _ = r.emit(&mut b);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn responder() -> DnsResponder {
        let mut c = DnsConfig::new();
        c.add(
            "aftr.example.net",
            "2001:db8:d::1".parse::<Ipv6Addr>().unwrap().into(),
        )
        .unwrap();
        c.add(
            defaults::INTERNET_NAME,
            Ipv4Addr::new(203, 0, 113, 1).into(),
        )
        .unwrap();
        DnsResponder::new(c)
    }

    /// dig 9.18's `aftr.example.net AAAA` with `+noedns +nocookie` (captured; the vector of
    /// `wire::dns`'s tests), and the same with EDNS and a cookie.
    const DIG_NOEDNS: &str = "a401012000010000000000000461667472076578616d706c65036e657400001c0001";
    const DIG_EDNS: &str = "af66012000010000000000010461667472076578616d706c65036e657400001c000100002904d000000000000c000a0008d5b59f0782ed45d4";

    /// Our answer to DIG_NOEDNS, written out by hand: id a401, QR AA RD (0x8500; RD copied,
    /// AD not: we do not validate), the question, one AAAA for the question's name (pointer
    /// c00c), TTL 300, 2001:db8:d::1.
    const ANSWER: &str = "a401850000010001000000000461667472076578616d706c65036e657400001c0001c00c001c00010000012c001020010db8000d00000000000000000001";

    fn query(name: &str, qtype: u16, f: impl FnOnce(&mut Flags)) -> Vec<u8> {
        let mut flags = Flags {
            recursion_desired: true,
            ..Flags::default()
        };
        f(&mut flags);
        let q = [Question {
            name: Name::from_dotted(name).unwrap(),
            qtype,
            qclass: dns::CLASS_IN,
        }];
        emit(&DnsRepr {
            id: 7,
            flags,
            questions: &q,
            answers: &[],
            authority: &[],
            additional: &[],
        })
    }

    fn parsed(b: &[u8]) -> (Flags, Vec<Record<'_>>, usize) {
        let p = DnsPacket::new_checked(b).unwrap();
        let recs: Vec<(Section, Record<'_>)> = p.records().collect::<Result<_, _>>().unwrap();
        let answers = recs
            .iter()
            .filter(|(s, _)| *s == Section::Answer)
            .map(|(_, r)| *r)
            .collect();
        (p.flags(), answers, recs.len())
    }

    #[test]
    fn digs_aaaa_query_gets_a_byte_exact_authoritative_answer() {
        let mut r = responder();
        assert_eq!(r.answer(&unhex(DIG_NOEDNS), true), Some(unhex(ANSWER)));
        // With EDNS: the same answer plus our OPT record (UDP size 1232), cookie not echoed.
        let b = r.answer(&unhex(DIG_EDNS), true).unwrap();
        let p = DnsPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.id(), 0xaf66);
        let recs: Vec<_> = p.records().collect::<Result<_, _>>().unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            recs[0].1.data,
            RData::Aaaa("2001:db8:d::1".parse().unwrap())
        );
        assert_eq!(
            (recs[1].0, recs[1].1.rtype, recs[1].1.class),
            (Section::Additional, dns::rtype::OPT, EDNS_SIZE)
        );
        assert_eq!(r.stats.outcomes.get(DnsOutcome::Answered), 2);
    }

    #[test]
    fn a_nodata_nxdomain_refused_and_case() {
        let mut r = responder();
        // The Internet host's A, asked in mixed case: the question echoed as asked.
        let b = r
            .answer(&query("InterNet.Example.NET", dns::rtype::A, |_| {}), true)
            .unwrap();
        let (f, a, _) = parsed(&b);
        assert!(f.response && f.authoritative && f.recursion_desired && !f.recursion_available);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].data, RData::A(Ipv4Addr::new(203, 0, 113, 1)));
        assert_eq!(a[0].name.to_string(), "InterNet.Example.NET");
        // The AFTR has no IPv4 address: NOERROR, no answer.
        let b = r
            .answer(&query("aftr.example.net", dns::rtype::A, |_| {}), true)
            .unwrap();
        let (f, a, _) = parsed(&b);
        assert_eq!(
            (f.rcode, a.len(), f.authoritative),
            (rcode::NOERROR, 0, true)
        );
        // ANY: every record of the name.
        let b = r
            .answer(&query("aftr.example.net", dns::rtype::ANY, |_| {}), true)
            .unwrap();
        assert_eq!(parsed(&b).1.len(), 1);
        // In our zone, not ours: NXDOMAIN.
        let b = r
            .answer(&query("www.example.net", dns::rtype::A, |_| {}), true)
            .unwrap();
        let (f, a, _) = parsed(&b);
        assert_eq!(
            (f.rcode, a.len(), f.authoritative),
            (rcode::NXDOMAIN, 0, true)
        );
        // Outside every zone, with or without recursion desired: REFUSED, not authoritative.
        for rd in [true, false] {
            let b = r
                .answer(
                    &query("example.org", dns::rtype::A, |f| f.recursion_desired = rd),
                    true,
                )
                .unwrap();
            let (f, a, _) = parsed(&b);
            assert_eq!(
                (f.rcode, a.len(), f.authoritative, f.recursion_desired),
                (rcode::REFUSED, 0, false, rd)
            );
        }
        // The zone apex exists (the parent of our names), with no records: NODATA.
        let b = r
            .answer(&query("example.net", dns::rtype::A, |_| {}), true)
            .unwrap();
        let (f, a, _) = parsed(&b);
        assert_eq!(
            (f.rcode, a.len(), f.authoritative),
            (rcode::NOERROR, 0, true)
        );
        assert_eq!(r.stats.outcomes.get(DnsOutcome::Refused), 2);
        assert_eq!(r.stats.outcomes.get(DnsOutcome::NoData), 2);
        assert_eq!(r.stats.outcomes.get(DnsOutcome::NxDomain), 1);
    }

    #[test]
    fn broken_queries() {
        let mut r = responder();
        assert_eq!(r.answer(&[1, 2, 3], true), None);
        // A response is never answered.
        assert_eq!(
            r.answer(
                &query("aftr.example.net", dns::rtype::AAAA, |f| f.response = true),
                true
            ),
            None
        );
        // Opcode 2 (STATUS): NOTIMP.
        let b = r
            .answer(
                &query("aftr.example.net", dns::rtype::AAAA, |f| f.opcode = 2),
                true,
            )
            .unwrap();
        assert_eq!(parsed(&b).0.rcode, rcode::NOTIMP);
        // Two questions, and a question cut short: FORMERR.
        let mut two = unhex(DIG_NOEDNS);
        two[5] = 2;
        let b = r.answer(&two, true).unwrap();
        assert_eq!(parsed(&b).0.rcode, rcode::FORMERR);
        let d = unhex(DIG_NOEDNS);
        for n in 12..d.len() {
            let b = r.answer(&d[..n], true).unwrap();
            assert_eq!(parsed(&b).0.rcode, rcode::FORMERR, "{n}");
        }
        // Class CH: REFUSED.
        let mut ch = unhex(DIG_NOEDNS);
        let n = ch.len();
        ch[n - 1] = 3;
        assert_eq!(
            parsed(&r.answer(&ch, true).unwrap()).0.rcode,
            rcode::REFUSED
        );
    }

    #[test]
    fn too_big_for_udp_is_truncated_and_whole_over_tcp() {
        let mut c = DnsConfig::new();
        for i in 0..40u16 {
            c.add(
                "many.example.net",
                Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i).into(),
            )
            .unwrap();
        }
        let mut r = DnsResponder::new(c);
        let q = query("many.example.net", dns::rtype::AAAA, |_| {});
        let b = r.answer(&q, true).unwrap();
        let (f, a, _) = parsed(&b);
        assert!(f.truncated && a.is_empty());
        let b = r.answer(&q, false).unwrap();
        let (f, a, _) = parsed(&b);
        assert!(!f.truncated);
        assert_eq!(a.len(), 40);
    }

    #[test]
    fn names_without_a_zone_are_refused_by_the_config() {
        let mut c = DnsConfig::new();
        assert!(c.add("net", Ipv4Addr::LOCALHOST.into()).is_err());
        assert!(c.add("a..b", Ipv4Addr::LOCALHOST.into()).is_err());
        c.add("a.example.net", Ipv4Addr::LOCALHOST.into()).unwrap();
        c.add("A.example.net", Ipv4Addr::LOCALHOST.into()).unwrap();
        assert_eq!(c.hosts.len(), 1);
        assert_eq!(c.hosts[0].addrs.len(), 1);
        assert_eq!(c.zones(), [Name::from_dotted("example.net").unwrap()]);
    }
}
