//! The B4's lookup of its AFTR by name. A stock DS-Lite gateway is not told the AFTR's address:
//! DHCPv6 gives it the AFTR-Name (option 64) and DNS servers (option 23), and it resolves the
//! name's AAAA record through those servers before it can tunnel (RFC 6334 §4). This is that
//! stub resolver, sans-I/O, for [`crate::softwire::B4Port`]: one AAAA question over UDP from
//! the B4's own address to one server, repeated on a timer, and the answer read strictly:
//!
//! - only a response from the server's address and port 53 to our address and source port,
//!   with a valid UDP checksum, our transaction id (random per query, RFC 5452 §9.2) and our
//!   question echoed (name compared without regard to case) is taken; anything else is left
//!   for the port's other machines;
//! - NOERROR with AAAA records owned by the name: the first one is the AFTR (records for other
//!   owner names are ignored; we follow no CNAME);
//! - NOERROR without one, NXDOMAIN, REFUSED, any other code: the name does not resolve
//!   ([`LookupFailure::NotFound`] with the code); a truncated answer too (an AAAA answer for
//!   one name fits 512 bytes; we do not retry over TCP);
//! - no answer after `attempts` queries `interval` apart: [`LookupFailure::Timeout`].
//!
//! The server's MAC comes from the port's Neighbor Discovery (the caller resolves it first).

use core::net::{IpAddr, Ipv6Addr};

use wire::dns::{self, rcode, rtype, DnsPacket, DnsRepr, Flags, Name, Question, RData, Section};
use wire::ethernet::MacAddr;
use wire::udp::UdpPacket;
use wire::units::Nanos;

use crate::frames::{self, PROTO_UDP};
use crate::util::{add, Entropy, Rng};

/// Where to look the AFTR up: its name (from DHCPv6 option 64) and the DNS server to ask
/// (from option 23).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AftrName {
    pub name: Name,
    pub server: Ipv6Addr,
}

impl AftrName {
    /// `name` as dotted text (refused when it is not a DNS name, or is the root).
    pub fn new(name: &str, server: Ipv6Addr) -> Result<AftrName, AftrNameError> {
        let n = Name::from_dotted(name).map_err(|reason| AftrNameError::NotAName {
            name: name.to_string(),
            reason,
        })?;
        if n.is_root() {
            return Err(AftrNameError::Empty);
        }
        Ok(AftrName { name: n, server })
    }
}

/// Why [`AftrName::new`] refused a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AftrNameError {
    /// Not a dotted DNS name (`reason`: what `wire` found wrong with it).
    NotAName { name: String, reason: wire::Error },
    /// The root name: nothing to look up.
    Empty,
}

impl std::fmt::Display for AftrNameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AftrNameError::NotAName { name, reason } => {
                write!(f, "{name:?} is not a DNS name: {reason}")
            }
            AftrNameError::Empty => f.write_str("the AFTR name is empty"),
        }
    }
}

impl std::error::Error for AftrNameError {}

/// Why the AFTR's name gave no address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LookupFailure {
    /// No answer from the server after every query.
    Timeout,
    /// An answer without an AAAA record for the name: the response code (0 with no record,
    /// 3 NXDOMAIN, 5 REFUSED, …), or 0 with `truncated`.
    NotFound { rcode: u8, truncated: bool },
}

/// What the lookup counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LookupStats {
    pub queries_tx: u64,
    pub answers_rx: u64,
    /// Responses from the server that were not ours (other id, port or question) or broken.
    pub ignored: u64,
}

/// Where the lookup is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the server's MAC.
    Idle,
    Asking {
        sent: u32,
        due: Nanos,
        id: u16,
        port: u16,
        server_mac: MacAddr,
    },
    Done,
}

/// What a frame meant to the lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// Not a DNS response to our query's address and port.
    NotOurs,
    /// A response to our port that is not the answer (other id or question, bad checksum).
    Ignored,
    /// The answer: the AFTR's address.
    Resolved(Ipv6Addr),
    /// The answer: no address.
    Failed(LookupFailure),
}

/// One AAAA lookup of the AFTR's name.
#[derive(Debug)]
pub struct AftrLookup {
    target: AftrName,
    local: Ipv6Addr,
    mac: MacAddr,
    attempts: u32,
    interval: Nanos,
    rng: Rng,
    state: State,
    tx: Vec<Vec<u8>>,
    pub stats: LookupStats,
}

impl AftrLookup {
    /// A lookup from `local` (our address) and `mac`: `attempts` queries `interval` apart.
    pub fn new(
        target: AftrName,
        local: Ipv6Addr,
        mac: MacAddr,
        attempts: u32,
        interval: Nanos,
        entropy: Entropy,
    ) -> AftrLookup {
        AftrLookup {
            target,
            local,
            mac,
            attempts: attempts.max(1),
            interval,
            rng: Rng::from_entropy(entropy),
            state: State::Idle,
            tx: Vec::new(),
            stats: LookupStats::default(),
        }
    }

    pub fn target(&self) -> &AftrName {
        &self.target
    }

    /// Sends the first query to the server at `server_mac` (its address resolved by ND).
    pub fn start(&mut self, now: Nanos, server_mac: MacAddr) {
        if self.state == State::Idle {
            self.ask(now, 0, server_mac);
        }
    }

    fn ask(&mut self, now: Nanos, sent: u32, server_mac: MacAddr) {
        let r = self.rng.next_u32();
        let (id, port) = (r as u16, 49152 + ((r >> 16) as u16 % 16384));
        let q = [Question {
            name: self.target.name,
            qtype: rtype::AAAA,
            qclass: dns::CLASS_IN,
        }];
        let repr = DnsRepr {
            id,
            flags: Flags {
                recursion_desired: true,
                ..Flags::default()
            },
            questions: &q,
            answers: &[],
            authority: &[],
            additional: &[],
        };
        let mut msg = vec![0u8; repr.buffer_len()];
        if repr.emit(&mut msg).is_ok() {
            let server = IpAddr::V6(self.target.server);
            if let Some(p) = frames::udp(self.local.into(), port, server, dns::PORT, &msg) {
                self.tx.push(frames::ethernet(
                    self.mac,
                    server_mac,
                    frames::ethertype_of(&p),
                    &p,
                ));
                self.stats.queries_tx += 1;
            }
        }
        self.state = State::Asking {
            sent: sent + 1,
            due: add(now, self.interval),
            id,
            port,
            server_mac,
        };
    }

    /// Queries already repeated (each after `interval` without an answer).
    pub fn retries(&self) -> u64 {
        self.stats.queries_tx.saturating_sub(1)
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.tx)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        match self.state {
            State::Asking { due, .. } => Some(due),
            _ => None,
        }
    }

    /// Repeats the query when its answer is overdue; `Some(Timeout)` after the last.
    pub fn poll(&mut self, now: Nanos) -> Option<LookupFailure> {
        let State::Asking {
            sent,
            due,
            server_mac,
            ..
        } = self.state
        else {
            return None;
        };
        if now < due {
            return None;
        }
        if sent >= self.attempts {
            self.state = State::Done;
            return Some(LookupFailure::Timeout);
        }
        self.ask(now, sent, server_mac);
        None
    }

    /// Takes the server's answer to our query. A frame that is not a response from the
    /// server's port 53 to our address and port is [`Heard::NotOurs`] (left for the port's
    /// other machines); one that is, but is not the answer to the query outstanding (another
    /// id or question, a bad checksum, broken), is claimed and changes nothing.
    pub fn handle_frame(&mut self, frame: &[u8]) -> Heard {
        let State::Asking { id, port, .. } = self.state else {
            return Heard::NotOurs;
        };
        let Some(ip) = frames::parse_ip(frame) else {
            return Heard::NotOurs;
        };
        let (IpAddr::V6(src), IpAddr::V6(dst)) = (ip.src, ip.dst) else {
            return Heard::NotOurs;
        };
        if src != self.target.server || dst != self.local || ip.protocol != PROTO_UDP {
            return Heard::NotOurs;
        }
        let Ok(u) = UdpPacket::new_checked(ip.segment) else {
            return Heard::NotOurs;
        };
        if u.src_port() != dns::PORT || u.dst_port() != port {
            return Heard::NotOurs;
        }
        let answer = if u.verify_checksum_v6(src, dst) {
            self.read_answer(u.payload(), id)
        } else {
            None
        };
        match answer {
            None => {
                self.stats.ignored += 1;
                Heard::Ignored
            }
            Some(r) => {
                self.stats.answers_rx += 1;
                self.state = State::Done;
                match r {
                    Ok(a) => Heard::Resolved(a),
                    Err(f) => Heard::Failed(f),
                }
            }
        }
    }

    /// Our answer's outcome, or `None` when the message is not the answer to query `id`.
    fn read_answer(&self, msg: &[u8], id: u16) -> Option<Result<Ipv6Addr, LookupFailure>> {
        let p = DnsPacket::new_checked(msg).ok()?;
        let flags = p.flags();
        if p.id() != id || !flags.response || p.question_count() != 1 {
            return None;
        }
        let q = p.questions().next()?.ok()?;
        if !q.name.eq_ignore_case(&self.target.name)
            || q.qtype != rtype::AAAA
            || q.qclass != dns::CLASS_IN
        {
            return None;
        }
        if flags.rcode == rcode::NOERROR && !flags.truncated {
            let aaaa = p
                .records()
                .filter_map(|r| r.ok())
                .find_map(|(s, r)| match r.data {
                    RData::Aaaa(a)
                        if s == Section::Answer && r.name.eq_ignore_case(&self.target.name) =>
                    {
                        Some(a)
                    }
                    _ => None,
                });
            if let Some(a) = aaaa {
                return Some(Ok(a));
            }
        }
        Some(Err(LookupFailure::NotFound {
            rcode: flags.rcode,
            truncated: flags.truncated,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::dns::Record;

    const US: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);
    const SRV: MacAddr = MacAddr([2, 0, 0, 0, 0, 3]);

    fn server() -> Ipv6Addr {
        "2001:db8:53::1".parse().unwrap()
    }

    fn local() -> Ipv6Addr {
        "2001:db8:c::100".parse().unwrap()
    }

    fn lookup() -> AftrLookup {
        let n = AftrName::new("aftr.example.net", server()).unwrap();
        AftrLookup::new(n, local(), US, 2, Nanos(1_000), Entropy::Seeded(3))
    }

    /// The query's (id, source port, DNS message), read back from its frame.
    fn query_of(frame: &[u8]) -> (u16, u16, Vec<u8>) {
        let ip = frames::parse_ip(frame).unwrap();
        assert_eq!((ip.src_mac, ip.dst_mac), (US, SRV));
        assert_eq!(
            (ip.src, ip.dst),
            (IpAddr::V6(local()), IpAddr::V6(server()))
        );
        let u = UdpPacket::new_checked(ip.segment).unwrap();
        assert!(u.verify_checksum_v6(local(), server()));
        assert_eq!(u.dst_port(), 53);
        let p = DnsPacket::new_checked(u.payload()).unwrap();
        (p.id(), u.src_port(), u.payload().to_vec())
    }

    /// The server's answer to `query`: `rcode` and `aaaa` records owned by `owner`.
    fn answer(id: u16, port: u16, owner: &str, rcode: u8, aaaa: &[Ipv6Addr]) -> Vec<u8> {
        let name = Name::from_dotted("aftr.example.net").unwrap();
        let owner = Name::from_dotted(owner).unwrap();
        let q = [Question {
            name,
            qtype: rtype::AAAA,
            qclass: dns::CLASS_IN,
        }];
        let recs: Vec<Record> = aaaa
            .iter()
            .map(|a| Record {
                name: owner,
                rtype: rtype::AAAA,
                class: dns::CLASS_IN,
                ttl: 300,
                data: RData::Aaaa(*a),
            })
            .collect();
        let repr = DnsRepr {
            id,
            flags: Flags {
                response: true,
                authoritative: true,
                recursion_desired: true,
                rcode,
                ..Flags::default()
            },
            questions: &q,
            answers: &recs,
            authority: &[],
            additional: &[],
        };
        let mut msg = vec![0u8; repr.buffer_len()];
        repr.emit(&mut msg).unwrap();
        let p = frames::udp(server().into(), 53, local().into(), port, &msg).unwrap();
        frames::ethernet(SRV, US, frames::ethertype_of(&p), &p)
    }

    #[test]
    fn the_query_asks_aaaa_with_recursion_desired_and_only_the_answer_to_it_counts() {
        let mut l = lookup();
        assert_eq!(
            l.handle_frame(&answer(1, 50000, "aftr.example.net", 0, &[])),
            Heard::NotOurs
        );
        l.start(Nanos(0), SRV);
        let tx = l.take_transmit();
        assert_eq!(tx.len(), 1);
        let (id, port, msg) = query_of(&tx[0]);
        assert!((49152..=65535).contains(&port));
        let p = DnsPacket::new_checked(&msg[..]).unwrap();
        let f = p.flags();
        assert!(!f.response && f.recursion_desired && f.opcode == 0);
        let qs: Vec<Question> = p.questions().map(|q| q.unwrap()).collect();
        assert_eq!(qs.len(), 1);
        assert_eq!(
            (qs[0].name.to_string(), qs[0].qtype, qs[0].qclass),
            ("aftr.example.net".into(), 28, 1)
        );
        let a: Ipv6Addr = "2001:db8:d::77".parse().unwrap();
        let b: Ipv6Addr = "2001:db8:d::78".parse().unwrap();
        // Another id, another port, a broken checksum: claimed or not, nothing changes.
        assert_eq!(
            l.handle_frame(&answer(id ^ 1, port, "aftr.example.net", 0, &[a])),
            Heard::Ignored
        );
        assert_eq!(
            l.handle_frame(&answer(id, port ^ 1, "aftr.example.net", 0, &[a])),
            Heard::NotOurs
        );
        let mut bad = answer(id, port, "aftr.example.net", 0, &[a]);
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert_eq!(l.handle_frame(&bad), Heard::Ignored);
        for n in 0..bad.len() {
            let _ = l.handle_frame(&bad[..n]);
        }
        assert_eq!(l.stats.ignored, 2);
        // Two records for the name: the first is the AFTR (another owner: see below).
        let recs = answer(id, port, "aftr.example.net", 0, &[a, b]);
        assert_eq!(l.handle_frame(&recs), Heard::Resolved(a));
        assert_eq!((l.stats.queries_tx, l.stats.answers_rx), (1, 1));
        // Done: a repeated answer is no longer ours.
        assert_eq!(l.handle_frame(&recs), Heard::NotOurs);
        assert_eq!(l.next_deadline(), None);
    }

    #[test]
    fn negative_answers_and_silence_fail_by_reason() {
        for (owner, rcode, want) in [
            (
                "other.example.net",
                0,
                LookupFailure::NotFound {
                    rcode: 0,
                    truncated: false,
                },
            ),
            (
                "aftr.example.net",
                3,
                LookupFailure::NotFound {
                    rcode: 3,
                    truncated: false,
                },
            ),
            (
                "aftr.example.net",
                5,
                LookupFailure::NotFound {
                    rcode: 5,
                    truncated: false,
                },
            ),
        ] {
            let mut l = lookup();
            l.start(Nanos(0), SRV);
            let (id, port, _) = query_of(&l.take_transmit()[0]);
            let a: Ipv6Addr = "2001:db8:d::77".parse().unwrap();
            let recs: &[Ipv6Addr] = if rcode == 0 { &[a] } else { &[] };
            assert_eq!(
                l.handle_frame(&answer(id, port, owner, rcode, recs)),
                Heard::Failed(want)
            );
        }
        let mut l = lookup();
        l.start(Nanos(0), SRV);
        assert_eq!(l.poll(Nanos(999)), None);
        assert_eq!(l.poll(Nanos(1_000)), None);
        let tx = l.take_transmit();
        assert_eq!(tx.len(), 2);
        // Each query its own id and port.
        let (q0, q1) = (query_of(&tx[0]), query_of(&tx[1]));
        assert_ne!((q0.0, q0.1), (q1.0, q1.1));
        assert_eq!(l.retries(), 1);
        assert_eq!(l.poll(Nanos(2_000)), Some(LookupFailure::Timeout));
        assert_eq!(l.next_deadline(), None);
    }
}
