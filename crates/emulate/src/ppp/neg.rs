//! What LCP, IPCP and IPv6CP options mean to us: the [`Negotiator`]s plugged into [`Fsm`].
//!
//! [`Fsm`]: super::fsm::Fsm

use core::net::Ipv4Addr;

use wire::ppp::control::OptionIter;
use wire::ppp::ipcp::{option_type as ipcp_type, IpcpOption};
use wire::ppp::ipv6cp::{option_type as ipv6cp_type, Ipv6cpOption};
use wire::ppp::lcp::{option_type as lcp_type, AuthProtocol, LcpOption, CHAP_MD5};

use super::fsm::{push_option, Negotiator, Reply};
use crate::util::{Entropy, Rng};

/// The smallest MRU we accept from a peer (RFC 791's 68 rounded to what real peers use).
pub const MIN_MRU: u16 = 64;
/// Consecutive magic-number collisions after which a looped-back link is declared.
pub const LOOP_LIMIT: u32 = 5;

/// An authentication protocol both ends can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AuthMethod {
    Pap,
    ChapMd5,
}

impl AuthMethod {
    fn option(self) -> LcpOption<'static> {
        LcpOption::AuthProtocol(match self {
            AuthMethod::Pap => AuthProtocol::Pap,
            AuthMethod::ChapMd5 => AuthProtocol::Chap {
                algorithm: CHAP_MD5,
            },
        })
    }

    fn from_option(a: &AuthProtocol<'_>) -> Option<AuthMethod> {
        match a {
            AuthProtocol::Pap => Some(AuthMethod::Pap),
            AuthProtocol::Chap { algorithm } if *algorithm == CHAP_MD5 => Some(AuthMethod::ChapMd5),
            _ => None,
        }
    }
}

/// LCP policy and results.
#[derive(Debug, Clone)]
pub struct LcpNeg {
    /// The MRU we request (None once the peer rejected the option).
    pub our_mru: Option<u16>,
    /// The largest MRU we let the peer claim (RFC 2516: 1492, or RFC 4638's max payload).
    pub peer_mru_max: u16,
    /// Our magic number (0 once the peer rejected the option).
    pub magic: u32,
    /// The authentication we demand from the peer (server side), in preference order; the
    /// first is requested, the others are accepted from a Nak.
    pub auth_demand: Vec<AuthMethod>,
    /// What we are currently asking for (None if nothing, or the peer rejected it).
    pub auth_requested: Option<AuthMethod>,
    /// The peer rejected our Authentication-Protocol, or Nak'd it with nothing we accept.
    pub auth_refused: bool,
    /// The authentication we are willing to perform for the peer (client side), preferred first.
    pub auth_offer: Vec<AuthMethod>,
    // ---- results of the peer's last acceptable request ----
    pub peer_mru: u16,
    pub peer_magic: u32,
    /// The authentication the peer asked us to perform.
    pub auth_to_perform: Option<AuthMethod>,
    /// Magic-number collisions in a row.
    pub loop_count: u32,
    rng: Rng,
}

impl LcpNeg {
    pub fn new(
        mru: u16,
        peer_mru_max: u16,
        demand: Vec<AuthMethod>,
        offer: Vec<AuthMethod>,
        entropy: Entropy,
    ) -> Self {
        let mut rng = Rng::from_entropy(entropy);
        LcpNeg {
            our_mru: Some(mru),
            peer_mru_max,
            magic: rng.nonzero_u32(),
            auth_requested: demand.first().copied(),
            auth_demand: demand,
            auth_refused: false,
            auth_offer: offer,
            peer_mru: wire::ppp::lcp::DEFAULT_MRU,
            peer_magic: 0,
            auth_to_perform: None,
            loop_count: 0,
            rng,
        }
    }

    pub fn looped(&self) -> bool {
        self.loop_count >= LOOP_LIMIT
    }

    fn new_magic(&mut self, not: u32) -> u32 {
        loop {
            let m = self.rng.nonzero_u32();
            if m != not && m != self.magic {
                return m;
            }
        }
    }
}

impl Negotiator for LcpNeg {
    fn request(&mut self, out: &mut Vec<u8>) {
        if let Some(mru) = self.our_mru {
            push_option(out, &LcpOption::Mru(mru));
        }
        if let Some(a) = self.auth_requested {
            push_option(out, &a.option());
        }
        if self.magic != 0 {
            push_option(out, &LcpOption::MagicNumber(self.magic));
        }
    }

    fn check(&mut self, options: &[u8], reply: &mut Reply) {
        let mut mru = wire::ppp::lcp::DEFAULT_MRU.min(self.peer_mru_max);
        let mut magic = 0;
        let mut auth = None;
        for (kind, value) in OptionIter::new(options).flatten() {
            let Ok(opt) = LcpOption::parse(kind, value) else {
                reply.reject(kind, value);
                continue;
            };
            match opt {
                LcpOption::Mru(v) if v > self.peer_mru_max => {
                    reply.nak(kind, value, &LcpOption::Mru(self.peer_mru_max))
                }
                LcpOption::Mru(v) if v < MIN_MRU => {
                    reply.nak(kind, value, &LcpOption::Mru(MIN_MRU))
                }
                LcpOption::Mru(v) => mru = v,
                LcpOption::MagicNumber(0) => {
                    let m = self.new_magic(0);
                    reply.nak(kind, value, &LcpOption::MagicNumber(m));
                }
                LcpOption::MagicNumber(m) if self.magic != 0 && m == self.magic => {
                    // Our own number came back: maybe a looped link (RFC 1661 §6.4).
                    self.loop_count += 1;
                    let suggestion = self.new_magic(m);
                    reply.nak(kind, value, &LcpOption::MagicNumber(suggestion));
                }
                LcpOption::MagicNumber(m) => magic = m,
                LcpOption::AuthProtocol(a) if !self.auth_offer.is_empty() => {
                    match AuthMethod::from_option(&a) {
                        Some(m) if self.auth_offer.contains(&m) => auth = Some(m),
                        _ => reply.nak(kind, value, &self.auth_offer[0].option()),
                    }
                }
                // ACCM and ACFC are meaningless over PPPoE (RFC 2516 §7); PFC we do not do;
                // we never authenticate ourselves to a peer that demands it of a server;
                // unknown options are rejected verbatim.
                _ => reply.reject(kind, value),
            }
        }
        if reply.is_ack() {
            self.peer_mru = mru;
            self.peer_magic = magic;
            self.auth_to_perform = auth;
            if magic != 0 {
                self.loop_count = 0;
            }
        }
    }

    fn nak_received(&mut self, options: &[u8]) {
        for (kind, value) in OptionIter::new(options).flatten() {
            match LcpOption::parse(kind, value) {
                Ok(LcpOption::Mru(v))
                    if self.our_mru.is_some()
                        && (MIN_MRU..=self.peer_mru_max.max(wire::ppp::lcp::PPPOE_MAX_MRU))
                            .contains(&v) =>
                {
                    self.our_mru = Some(v);
                }
                Ok(LcpOption::MagicNumber(v)) if self.magic != 0 => {
                    if v == self.magic {
                        self.loop_count += 1;
                    }
                    self.magic = self.new_magic(v);
                }
                Ok(LcpOption::AuthProtocol(a)) if self.auth_requested.is_some() => {
                    match AuthMethod::from_option(&a) {
                        Some(m) if self.auth_demand.contains(&m) => self.auth_requested = Some(m),
                        _ => self.auth_refused = true,
                    }
                }
                _ => {}
            }
        }
    }

    fn reject_received(&mut self, options: &[u8]) {
        for (kind, _) in OptionIter::new(options).flatten() {
            match kind {
                lcp_type::MRU => self.our_mru = None,
                lcp_type::MAGIC_NUMBER => self.magic = 0,
                lcp_type::AUTH_PROTOCOL => {
                    self.auth_requested = None;
                    self.auth_refused = true;
                }
                _ => {}
            }
        }
    }

    fn reset(&mut self) {
        self.auth_to_perform = None;
    }

    /// The peer refused every authentication we demand, or our magic number keeps coming
    /// back (a looped link): the link is going down, so no new Configure-Request.
    fn gave_up(&self) -> bool {
        self.auth_refused || self.looped()
    }
}

/// Which end of an NCP we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Assigns the peer's address and DNS servers.
    Server,
    /// Asks for them.
    Client,
}

/// IPCP policy and results (RFC 1332, DNS options of RFC 1877).
#[derive(Debug, Clone)]
pub struct IpcpNeg {
    pub side: Side,
    /// Our address (client: 0.0.0.0 = "assign me one"; None once rejected).
    pub local: Option<Ipv4Addr>,
    /// Server: the address to give the peer (None: pool exhausted, the option is rejected).
    /// Client: the peer's address once acked.
    pub peer: Option<Ipv4Addr>,
    /// Server: the DNS servers to hand out. Client: the ones asked for / learned
    /// (Some(0.0.0.0) = ask; None = don't or rejected).
    pub dns: [Option<Ipv4Addr>; 2],
}

impl IpcpNeg {
    pub fn server(local: Ipv4Addr, peer: Option<Ipv4Addr>, dns: [Option<Ipv4Addr>; 2]) -> Self {
        IpcpNeg {
            side: Side::Server,
            local: Some(local),
            peer,
            dns,
        }
    }

    pub fn client(request_dns: bool) -> Self {
        let ask = request_dns.then_some(Ipv4Addr::UNSPECIFIED);
        IpcpNeg {
            side: Side::Client,
            local: Some(Ipv4Addr::UNSPECIFIED),
            peer: None,
            dns: [ask, ask],
        }
    }
}

impl Negotiator for IpcpNeg {
    fn request(&mut self, out: &mut Vec<u8>) {
        if let Some(a) = self.local {
            push_option(out, &IpcpOption::IpAddress(a));
        }
        if self.side == Side::Client {
            if let Some(d) = self.dns[0] {
                push_option(out, &IpcpOption::PrimaryDns(d));
            }
            if let Some(d) = self.dns[1] {
                push_option(out, &IpcpOption::SecondaryDns(d));
            }
        }
    }

    fn check(&mut self, options: &[u8], reply: &mut Reply) {
        let mut peer = None;
        for (kind, value) in OptionIter::new(options).flatten() {
            let Ok(opt) = IpcpOption::parse(kind, value) else {
                reply.reject(kind, value);
                continue;
            };
            match (self.side, opt) {
                (Side::Server, IpcpOption::IpAddress(a)) => match self.peer {
                    Some(x) if x == a => {}
                    Some(x) => reply.nak(kind, value, &IpcpOption::IpAddress(x)),
                    None => reply.reject(kind, value),
                },
                (Side::Server, IpcpOption::PrimaryDns(a) | IpcpOption::SecondaryDns(a)) => {
                    let i = usize::from(kind == ipcp_type::SECONDARY_DNS);
                    match self.dns[i] {
                        Some(d) if d == a => {}
                        Some(d) => {
                            let s = if i == 0 {
                                IpcpOption::PrimaryDns(d)
                            } else {
                                IpcpOption::SecondaryDns(d)
                            };
                            reply.nak(kind, value, &s)
                        }
                        None => reply.reject(kind, value),
                    }
                }
                (Side::Client, IpcpOption::IpAddress(a)) if !a.is_unspecified() => peer = Some(a),
                _ => reply.reject(kind, value),
            }
        }
        if reply.is_ack() && self.side == Side::Client {
            self.peer = peer;
        }
    }

    fn nak_received(&mut self, options: &[u8]) {
        for (kind, value) in OptionIter::new(options).flatten() {
            match IpcpOption::parse(kind, value) {
                Ok(IpcpOption::IpAddress(a))
                    if !a.is_unspecified() && self.local.is_some() && self.side == Side::Client =>
                {
                    self.local = Some(a)
                }
                Ok(IpcpOption::PrimaryDns(a)) if self.dns[0].is_some() => self.dns[0] = Some(a),
                Ok(IpcpOption::SecondaryDns(a)) if self.dns[1].is_some() => self.dns[1] = Some(a),
                _ => {}
            }
        }
    }

    fn reject_received(&mut self, options: &[u8]) {
        for (kind, _) in OptionIter::new(options).flatten() {
            match kind {
                ipcp_type::IP_ADDRESS => self.local = None,
                ipcp_type::PRIMARY_DNS => self.dns[0] = None,
                ipcp_type::SECONDARY_DNS => self.dns[1] = None,
                _ => {}
            }
        }
    }
}

/// IPv6CP policy and results (RFC 5072).
#[derive(Debug, Clone)]
pub struct Ipv6cpNeg {
    /// Our interface identifier (None once rejected).
    pub local: Option<[u8; 8]>,
    /// The peer's, once acked.
    pub peer: Option<[u8; 8]>,
    rng: Rng,
}

impl Ipv6cpNeg {
    pub fn new(local: [u8; 8], entropy: Entropy) -> Self {
        Ipv6cpNeg {
            local: Some(local),
            peer: None,
            rng: Rng::from_entropy(entropy),
        }
    }

    fn suggest(&mut self, not: [u8; 8]) -> [u8; 8] {
        loop {
            let mut id = [0u8; 8];
            self.rng.fill(&mut id);
            id[0] &= !0x02; // locally generated: universal/local bit cleared (RFC 5072 §4.1)
            if id != [0; 8] && id != not && Some(id) != self.local {
                return id;
            }
        }
    }
}

/// The modified EUI-64 interface identifier of a MAC address (RFC 4291 App. A).
pub fn eui64(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

impl Negotiator for Ipv6cpNeg {
    fn request(&mut self, out: &mut Vec<u8>) {
        if let Some(id) = self.local {
            push_option(out, &Ipv6cpOption::InterfaceIdentifier(id));
        }
    }

    fn check(&mut self, options: &[u8], reply: &mut Reply) {
        let mut peer = None;
        for (kind, value) in OptionIter::new(options).flatten() {
            match Ipv6cpOption::parse(kind, value) {
                Ok(Ipv6cpOption::InterfaceIdentifier(id)) => {
                    if id == [0; 8] || Some(id) == self.local {
                        let s = self.suggest(id);
                        reply.nak(kind, value, &Ipv6cpOption::InterfaceIdentifier(s));
                    } else {
                        peer = Some(id);
                    }
                }
                _ => reply.reject(kind, value),
            }
        }
        if reply.is_ack() {
            self.peer = peer;
        }
    }

    fn nak_received(&mut self, options: &[u8]) {
        for (kind, value) in OptionIter::new(options).flatten() {
            if let Ok(Ipv6cpOption::InterfaceIdentifier(id)) = Ipv6cpOption::parse(kind, value) {
                if self.local.is_some() && id != [0; 8] && Some(id) != self.peer {
                    self.local = Some(id);
                }
            }
        }
    }

    fn reject_received(&mut self, options: &[u8]) {
        if OptionIter::new(options)
            .flatten()
            .any(|(k, _)| k == ipv6cp_type::INTERFACE_IDENTIFIER)
        {
            self.local = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::ppp::control::RawOption;

    fn opts(list: &[&dyn wire::ppp::ConfigOption]) -> Vec<u8> {
        let mut v = Vec::new();
        for o in list {
            push_option(&mut v, *o);
        }
        v
    }

    type Options = Vec<(u8, Vec<u8>)>;

    fn judge<N: Negotiator>(n: &mut N, options: &[u8]) -> (Options, Options) {
        let mut r = Reply::default();
        n.check(options, &mut r);
        let mut naks = Vec::new();
        let mut rejs = Vec::new();
        let (nak_bytes, rej_bytes) = r.into_parts();
        for (k, v) in OptionIter::new(&nak_bytes).flatten() {
            naks.push((k, v.to_vec()));
        }
        for (k, v) in OptionIter::new(&rej_bytes).flatten() {
            rejs.push((k, v.to_vec()));
        }
        (naks, rejs)
    }

    #[test]
    fn lcp_rejects_accm_acfc_pfc_and_unknown() {
        let mut n = LcpNeg::new(
            1454,
            1492,
            vec![AuthMethod::Pap],
            vec![],
            Entropy::Seeded(1),
        );
        let req = opts(&[
            &LcpOption::Mru(1492),
            &LcpOption::Accm(0),
            &LcpOption::ProtocolFieldCompression,
            &LcpOption::AddressControlFieldCompression,
            &RawOption {
                kind: 13,
                value: &[6],
            },
            &LcpOption::MagicNumber(42),
        ]);
        let (naks, rejs) = judge(&mut n, &req);
        assert!(naks.is_empty());
        let kinds: Vec<u8> = rejs.iter().map(|r| r.0).collect();
        assert_eq!(
            kinds,
            vec![lcp_type::ACCM, lcp_type::PFC, lcp_type::ACFC, 13]
        );
    }

    #[test]
    fn lcp_mru_naks_and_ack() {
        let mut n = LcpNeg::new(1454, 1492, vec![], vec![], Entropy::Seeded(1));
        let (naks, _) = judge(&mut n, &opts(&[&LcpOption::Mru(1500)]));
        assert_eq!(naks, vec![(lcp_type::MRU, 1492u16.to_be_bytes().to_vec())]);
        let (naks, _) = judge(&mut n, &opts(&[&LcpOption::Mru(20)]));
        assert_eq!(naks, vec![(lcp_type::MRU, 64u16.to_be_bytes().to_vec())]);
        let (naks, rejs) = judge(
            &mut n,
            &opts(&[&LcpOption::Mru(1400), &LcpOption::MagicNumber(9)]),
        );
        assert!(naks.is_empty() && rejs.is_empty());
        assert_eq!((n.peer_mru, n.peer_magic), (1400, 9));
        // A Nak of our MRU within bounds is adopted; one above it is not.
        n.nak_received(&opts(&[&LcpOption::Mru(1400)]));
        assert_eq!(n.our_mru, Some(1400));
        n.nak_received(&opts(&[&LcpOption::Mru(9000)]));
        assert_eq!(n.our_mru, Some(1400));
        n.reject_received(&opts(&[&LcpOption::Mru(1400)]));
        assert_eq!(n.our_mru, None);
    }

    #[test]
    fn lcp_magic_loop_detection() {
        let mut n = LcpNeg::new(1454, 1492, vec![], vec![], Entropy::Seeded(1));
        let mine = n.magic;
        for i in 1..=LOOP_LIMIT {
            let req = opts(&[&LcpOption::MagicNumber(n.magic)]);
            let (naks, _) = judge(&mut n, &req);
            assert_eq!(naks.len(), 1);
            assert_ne!(naks[0].1, n.magic.to_be_bytes().to_vec());
            assert_eq!(n.loop_count, i);
        }
        assert!(n.looped());
        assert_eq!(n.magic, mine);
        // Zero is Nak'd too.
        let (naks, _) = judge(&mut n, &opts(&[&LcpOption::MagicNumber(0)]));
        assert_eq!(naks.len(), 1);
        // Our magic Nak'd back to us with the same value counts, and we pick a new one.
        let mut m = LcpNeg::new(1454, 1492, vec![], vec![], Entropy::Seeded(2));
        let old = m.magic;
        m.nak_received(&opts(&[&LcpOption::MagicNumber(old)]));
        assert_eq!(m.loop_count, 1);
        assert_ne!(m.magic, old);
    }

    #[test]
    fn lcp_auth_negotiation_both_sides() {
        // Client offering CHAP only: PAP is Nak'd with CHAP-MD5, CHAP-MD5 acked.
        let mut c = LcpNeg::new(
            1492,
            1492,
            vec![],
            vec![AuthMethod::ChapMd5],
            Entropy::Seeded(1),
        );
        let (naks, _) = judge(&mut c, &opts(&[&AuthMethod::Pap.option()]));
        assert_eq!(naks, vec![(lcp_type::AUTH_PROTOCOL, vec![0xc2, 0x23, 5])]);
        let chap81 = LcpOption::AuthProtocol(AuthProtocol::Chap { algorithm: 0x81 });
        let (naks, _) = judge(&mut c, &opts(&[&chap81]));
        assert_eq!(naks.len(), 1);
        let (naks, rejs) = judge(&mut c, &opts(&[&AuthMethod::ChapMd5.option()]));
        assert!(naks.is_empty() && rejs.is_empty());
        assert_eq!(c.auth_to_perform, Some(AuthMethod::ChapMd5));
        // A server is never asked to authenticate itself: rejected.
        let mut s = LcpNeg::new(
            1454,
            1492,
            vec![AuthMethod::ChapMd5, AuthMethod::Pap],
            vec![],
            Entropy::Seeded(1),
        );
        let (_, rejs) = judge(&mut s, &opts(&[&AuthMethod::Pap.option()]));
        assert_eq!(rejs.len(), 1);
        // Server Nak'd to PAP, which it accepts as a second choice.
        s.nak_received(&opts(&[&AuthMethod::Pap.option()]));
        assert_eq!(s.auth_requested, Some(AuthMethod::Pap));
        assert!(!s.auth_refused);
        let mut only_chap = LcpNeg::new(
            1454,
            1492,
            vec![AuthMethod::ChapMd5],
            vec![],
            Entropy::Seeded(1),
        );
        only_chap.nak_received(&opts(&[&AuthMethod::Pap.option()]));
        assert!(only_chap.auth_refused);
        let mut rej = LcpNeg::new(
            1454,
            1492,
            vec![AuthMethod::Pap],
            vec![],
            Entropy::Seeded(1),
        );
        rej.reject_received(&opts(&[&AuthMethod::Pap.option()]));
        assert!(rej.auth_refused && rej.auth_requested.is_none());
    }

    #[test]
    fn ipcp_server_naks_with_the_right_address_and_dns() {
        let peer = Ipv4Addr::new(198, 51, 100, 10);
        let dns1 = Ipv4Addr::new(198, 51, 100, 53);
        let mut s = IpcpNeg::server(
            Ipv4Addr::new(198, 51, 100, 1),
            Some(peer),
            [Some(dns1), None],
        );
        let zero = Ipv4Addr::UNSPECIFIED;
        let req = opts(&[
            &IpcpOption::IpAddress(zero),
            &IpcpOption::PrimaryDns(zero),
            &IpcpOption::SecondaryDns(zero),
        ]);
        let (naks, rejs) = judge(&mut s, &req);
        assert_eq!(
            naks,
            vec![
                (ipcp_type::IP_ADDRESS, peer.octets().to_vec()),
                (ipcp_type::PRIMARY_DNS, dns1.octets().to_vec())
            ]
        );
        assert_eq!(rejs, vec![(ipcp_type::SECONDARY_DNS, vec![0; 4])]);
        // Client side follows: adopts the Nak, drops the rejected option.
        let mut c = IpcpNeg::client(true);
        c.nak_received(&opts(&[
            &IpcpOption::IpAddress(peer),
            &IpcpOption::PrimaryDns(dns1),
        ]));
        c.reject_received(&opts(&[&IpcpOption::SecondaryDns(zero)]));
        let mut again = Vec::new();
        c.request(&mut again);
        assert_eq!(
            again,
            opts(&[&IpcpOption::IpAddress(peer), &IpcpOption::PrimaryDns(dns1)])
        );
        let (naks, rejs) = judge(&mut s, &again);
        assert!(naks.is_empty() && rejs.is_empty());
        // Pool exhausted: the address option is rejected.
        let mut full = IpcpNeg::server(Ipv4Addr::new(198, 51, 100, 1), None, [None, None]);
        let (_, rejs) = judge(&mut full, &opts(&[&IpcpOption::IpAddress(zero)]));
        assert_eq!(rejs.len(), 1);
    }

    #[test]
    fn ipv6cp_naks_collisions_and_zero() {
        let mine = eui64([0x02, 0, 0, 0, 0, 1]);
        let mut n = Ipv6cpNeg::new(mine, Entropy::Seeded(3));
        let (naks, _) = judge(&mut n, &opts(&[&Ipv6cpOption::InterfaceIdentifier(mine)]));
        assert_eq!(naks.len(), 1);
        assert_ne!(naks[0].1, mine.to_vec());
        let (naks, _) = judge(&mut n, &opts(&[&Ipv6cpOption::InterfaceIdentifier([0; 8])]));
        assert_eq!(naks.len(), 1);
        let other = eui64([0x02, 0, 0, 0, 0, 2]);
        let (naks, rejs) = judge(&mut n, &opts(&[&Ipv6cpOption::InterfaceIdentifier(other)]));
        assert!(naks.is_empty() && rejs.is_empty());
        assert_eq!(n.peer, Some(other));
        let s = [9u8; 8];
        n.nak_received(&opts(&[&Ipv6cpOption::InterfaceIdentifier(s)]));
        assert_eq!(n.local, Some(s));
        assert_eq!(
            eui64([0x00, 0x11, 0x22, 0x33, 0x44, 0x55]),
            [0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55]
        );
    }
}
