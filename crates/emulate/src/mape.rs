//! MAP-E (RFC 7597): the Border Relay, as a sans-I/O machine at the IP layer.
//!
//! A MAP-E CE shares an IPv4 address with other CEs and owns a set of ports of it, both
//! derived from its delegated IPv6 prefix by a mapping rule ([`wire::map_rule`]); it carries
//! IPv4 in IPv6 (next header 4) between its MAP address and the BR. The BR
//! - **decapsulates** ([`Br::decapsulate`]) only what passes RFC 7597 §8.1's check: the IPv6
//!   source must be the MAP address that the inner IPv4 source address and source port map to
//!   (the rule prefix, EA bits and interface identifier; bits of the CE's own prefix past the
//!   EA bits are the CE's business and not compared);
//! - **encapsulates** ([`Br::encapsulate`]) IPv4 from the Internet side to the MAP address
//!   computed from its destination address and destination port (RFC 7597 §5.3).
//!
//! What fails counts by reason and direction ([`BrStats`]): a tester playing the BR sees
//! exactly which packets a gateway sent outside its address or port set. For ICMP echo the
//! identifier stands in for the port (as a CE's NAPT maps it); a non-first IPv4 fragment or a
//! protocol without ports cannot be checked against a shared address and is dropped
//! ([`BrDrop::NoPort`]).
//!
//! Not done here (yet): outer IPv6 fragments (dropped, counted), reassembly of inner IPv4
//! fragments to check their ports, the ICMPv6 "source address failed ingress/egress policy"
//! answer to a failed check, hairpinning between two CEs, and Ethernet/ND on a port (the
//! DS-Lite AFTR's [`crate::softwire`] shows the shape).

use core::net::{Ipv4Addr, Ipv6Addr};

use wire::ipv4::Ipv4Packet;
use wire::ipv6::{walk_extension_headers, Ipv6Packet, Ipv6Repr, NEXT_HEADER_IPV4};
use wire::map_rule::{CeMapping, MapRule, PortSet};

use crate::util::Counter;

const PROTO_ICMP: u8 = 1;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const ICMP_ECHO_REPLY: u8 = 0;
const ICMP_ECHO_REQUEST: u8 = 8;

/// The BR.
#[derive(Debug, Clone)]
pub struct BrConfig {
    /// The BR's IPv6 address (RFC 7598's S46_BR): the tunnel endpoint CEs send to.
    pub local: Ipv6Addr,
    /// The rules of the MAP domain; an IPv4 address takes the rule with the longest IPv4
    /// prefix that holds it.
    pub rules: Vec<MapRule>,
    /// Largest outer IPv6 packet (default 1500); a bigger one is dropped, not fragmented.
    pub mtu: usize,
    pub hop_limit: u8,
}

impl BrConfig {
    pub fn new(local: Ipv6Addr, rules: Vec<MapRule>) -> BrConfig {
        BrConfig {
            local,
            rules,
            mtu: 1500,
            hop_limit: 64,
        }
    }
}

/// Why a packet was not decapsulated or not encapsulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BrDrop {
    /// IPv6 header broken or shorter than its payload length.
    BadIpv6,
    /// Addressed to another IPv6 address than the BR's.
    NotForUs,
    /// Broken extension headers.
    BadExtensionHeaders,
    /// An outer IPv6 fragment (not reassembled here).
    OuterFragment,
    /// The payload is not IPv4.
    NotIpv4,
    /// The inner IPv4 header is broken.
    BadInnerIpv4,
    /// The IPv4 address (source from a CE, destination towards one) is in no rule.
    NoRule,
    /// The address is shared but the packet carries no port to check: a non-first fragment,
    /// a protocol without ports, or a transport header cut short.
    NoPort,
    /// The port belongs to no CE: port 0, or in the range the offset keeps out of every port
    /// set (A = 0: 0–1023 with a = 6).
    ExcludedPort,
    /// The port belongs to another CE's port set than the one the IPv6 address names: for a
    /// packet from a CE, a source port outside its set.
    WrongPsid,
    /// From a CE: the IPv6 source is the MAP address of another IPv4 address than the inner
    /// source (a spoofed or wrongly translated IPv4 source).
    WrongIpv4,
    /// From a CE: the IPv6 source is outside the rule or its interface identifier is not the
    /// MAP one (RFC 7597 §6) for that address and port.
    WrongSource,
    /// Towards a CE: the outer packet would exceed the MTU.
    TooBig,
}

/// The BR's counters: per direction, what passed and what was dropped by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrStats {
    /// From CEs: decapsulated after the check.
    pub decapsulated: u64,
    /// Towards CEs: encapsulated.
    pub encapsulated: u64,
    /// From CEs, dropped.
    pub upstream_dropped: Counter<BrDrop>,
    /// Towards CEs, dropped.
    pub downstream_dropped: Counter<BrDrop>,
}

/// A packet that came out of the tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decapsulated<'a> {
    /// The CE it came from (its MAP address).
    pub ce: Ipv6Addr,
    /// The CE's address and ports as the rule gives them.
    pub mapping: CeMapping,
    /// The IPv4 packet (up to its total length).
    pub ipv4: &'a [u8],
}

/// Which port of a packet: the source port of what a CE sends, the destination port of what
/// goes to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Source,
    Destination,
}

/// The port of `end` a shared address is judged by: the UDP or TCP port, or the identifier of
/// an ICMP echo request or reply; `None` for a non-first fragment, another protocol, or a
/// transport header cut short (TCP or UDP below the 4 bytes of its ports, ICMP echo below 8).
fn port_of(ip: &Ipv4Packet<&[u8]>, end: End) -> Option<u16> {
    if ip.frag_offset() != 0 {
        return None;
    }
    let l4 = ip.payload();
    let (at, need) = match (ip.protocol(), end) {
        (PROTO_TCP | PROTO_UDP, End::Source) => (0, 4),
        (PROTO_TCP | PROTO_UDP, End::Destination) => (2, 4),
        (PROTO_ICMP, _) if matches!(l4.first(), Some(&(ICMP_ECHO_REQUEST | ICMP_ECHO_REPLY))) => {
            (4, 8)
        }
        _ => return None,
    };
    if l4.len() < need {
        return None;
    }
    wire::bytes::be16(l4, at)
}

/// The high `len` bits of a 128-bit value.
fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

/// Whether `src` is the MAP address of `m` on the bits the BR knows: the rule prefix and EA
/// bits (`m.end_user_len` on the BR's side) and the interface identifier.
fn is_map_address(src: Ipv6Addr, m: &CeMapping) -> bool {
    let want = u128::from(m.ipv6_address());
    let keep = mask128(m.end_user_len) | u128::from(u64::MAX);
    u128::from(src) & keep == want & keep
}

/// RFC 7597 §8.1: whether a packet from `src` with IPv4 source `src4` and source `port` may
/// come out of the tunnel under `rule`; the CE's mapping if so.
pub fn check_source(
    rule: &MapRule,
    src: Ipv6Addr,
    src4: Ipv4Addr,
    port: Option<u16>,
) -> Result<CeMapping, BrDrop> {
    let shared = rule.psid_len() > 0;
    let port = match port {
        Some(p) => p,
        None if shared => return Err(BrDrop::NoPort),
        // Without sharing any port is the CE's; the mapping does not depend on it.
        None => 1,
    };
    let m = rule.ce_for(src4, port).ok_or(BrDrop::NoRule)?;
    if !m.ports.contains(port) {
        return Err(out_of_set(&m.ports, port));
    }
    if is_map_address(src, &m) {
        return Ok(m);
    }
    // Which part of the source address disagrees: read it as a CE of the same rule.
    if !rule.covers_ipv6(src) {
        return Err(BrDrop::WrongSource);
    }
    let claimed = rule
        .ce_mapping(src, rule.end_user_len())
        .map_err(|_| BrDrop::WrongSource)?;
    // The claimed CE may own a whole IPv4 prefix (EA bits shorter than the suffix).
    let prefix_of =
        |a: Ipv4Addr, len: u8| u32::from(a) & !(u32::MAX.checked_shr(u32::from(len)).unwrap_or(0));
    if claimed.ipv4 != Ipv4Addr::from(prefix_of(src4, claimed.ipv4_len)) {
        Err(BrDrop::WrongIpv4)
    } else if claimed.ports.psid() != m.ports.psid() {
        Err(BrDrop::WrongPsid)
    } else {
        Err(BrDrop::WrongSource)
    }
}

/// Why `port` is not in `set`: in no set at all, or in another CE's.
fn out_of_set(set: &PortSet, port: u16) -> BrDrop {
    if PortSet::psid_of(set.offset(), set.psid_len(), port) == set.psid() {
        BrDrop::ExcludedPort
    } else {
        BrDrop::WrongPsid
    }
}

/// The Border Relay.
#[derive(Debug, Clone)]
pub struct Br {
    cfg: BrConfig,
    stats: BrStats,
}

impl Br {
    pub fn new(cfg: BrConfig) -> Br {
        Br {
            cfg,
            stats: BrStats::default(),
        }
    }

    pub fn config(&self) -> &BrConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &BrStats {
        &self.stats
    }

    /// The rule for IPv4 address `a`: the one with the longest IPv4 prefix that holds it.
    pub fn rule_for(&self, a: Ipv4Addr) -> Option<&MapRule> {
        self.cfg
            .rules
            .iter()
            .filter(|r| r.covers_ipv4(a))
            .max_by_key(|r| r.ipv4_prefix().1)
    }

    /// Takes one IPv6 packet from a CE; the IPv4 packet inside if it passes the checks. Every
    /// refusal is counted in `upstream_dropped`.
    pub fn decapsulate<'a>(&mut self, ipv6: &'a [u8]) -> Result<Decapsulated<'a>, BrDrop> {
        let r = self.decap(ipv6);
        match &r {
            Ok(_) => self.stats.decapsulated += 1,
            Err(d) => self.stats.upstream_dropped.add(*d),
        }
        r
    }

    fn decap<'a>(&self, ipv6: &'a [u8]) -> Result<Decapsulated<'a>, BrDrop> {
        let ip = Ipv6Packet::new_checked(ipv6).map_err(|_| BrDrop::BadIpv6)?;
        let repr = Ipv6Repr::parse(&ip).map_err(|_| BrDrop::BadIpv6)?;
        if repr.dst != self.cfg.local {
            return Err(BrDrop::NotForUs);
        }
        let payload = &ipv6[wire::ipv6::HEADER_LEN..wire::ipv6::HEADER_LEN + repr.payload_len];
        let ext = walk_extension_headers(repr.next_header, payload)
            .map_err(|_| BrDrop::BadExtensionHeaders)?;
        if ext.fragment.is_some() {
            return Err(BrDrop::OuterFragment);
        }
        if ext.upper_protocol != NEXT_HEADER_IPV4 {
            return Err(BrDrop::NotIpv4);
        }
        let inner = &payload[ext.offset..];
        let v4 = Ipv4Packet::new_checked(inner).map_err(|_| BrDrop::BadInnerIpv4)?;
        if v4.version() != 4 {
            return Err(BrDrop::BadInnerIpv4);
        }
        let inner = &inner[..usize::from(v4.total_len())];
        let v4 = Ipv4Packet::new_unchecked(inner);
        let src4 = v4.src_addr();
        let rule = self.rule_for(src4).ok_or(BrDrop::NoRule)?;
        let mapping = check_source(rule, repr.src, src4, port_of(&v4, End::Source))?;
        Ok(Decapsulated {
            ce: repr.src,
            mapping,
            ipv4: inner,
        })
    }

    /// Puts one IPv4 packet from the Internet side into IPv6 towards the CE that owns its
    /// destination address and port: the outer packet is written to `out` (replacing what was
    /// there) and the CE's MAP address returned. Every refusal is counted in
    /// `downstream_dropped`.
    pub fn encapsulate(&mut self, ipv4: &[u8], out: &mut Vec<u8>) -> Result<Ipv6Addr, BrDrop> {
        let r = self.encap(ipv4, out);
        match &r {
            Ok(_) => self.stats.encapsulated += 1,
            Err(d) => self.stats.downstream_dropped.add(*d),
        }
        r
    }

    fn encap(&self, ipv4: &[u8], out: &mut Vec<u8>) -> Result<Ipv6Addr, BrDrop> {
        let v4 = Ipv4Packet::new_checked(ipv4).map_err(|_| BrDrop::BadInnerIpv4)?;
        if v4.version() != 4 {
            return Err(BrDrop::BadInnerIpv4);
        }
        let inner = &ipv4[..usize::from(v4.total_len())];
        let v4 = Ipv4Packet::new_unchecked(inner);
        let dst4 = v4.dst_addr();
        let rule = self.rule_for(dst4).ok_or(BrDrop::NoRule)?;
        let port = match port_of(&v4, End::Destination) {
            Some(p) => p,
            None if rule.psid_len() > 0 => return Err(BrDrop::NoPort),
            None => 1,
        };
        let m = rule.ce_for(dst4, port).ok_or(BrDrop::NoRule)?;
        if !m.ports.contains(port) {
            return Err(out_of_set(&m.ports, port));
        }
        let hdr = wire::ipv6::HEADER_LEN;
        if hdr + inner.len() > self.cfg.mtu {
            return Err(BrDrop::TooBig);
        }
        let ce = m.ipv6_address();
        out.clear();
        out.resize(hdr + inner.len(), 0);
        Ipv6Repr {
            src: self.cfg.local,
            dst: ce,
            next_header: NEXT_HEADER_IPV4,
            payload_len: inner.len(),
            hop_limit: self.cfg.hop_limit,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut Ipv6Packet::new_unchecked(&mut out[..]))
        .map_err(|_| BrDrop::TooBig)?;
        out[hdr..].copy_from_slice(inner);
        Ok(ce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::ipv4::Ipv4Repr;
    use wire::map_rule::PortParams;

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn v4(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    const BR: &str = "2001:db8:ffff::1";
    /// The CE of RFC 7597 Appendix A Example 1: 192.0.2.18, PSID 0x34.
    const CE: &str = "2001:db8:12:3400:0:c000:212:34";
    const PEER: &str = "203.0.113.7";

    /// The RFC 7597 Appendix A rule: 2001:db8::/40, 192.0.2.0/24, 16 EA bits (k = 8, a = 6).
    fn appendix_a_rule() -> MapRule {
        MapRule::new(v6("2001:db8::"), 40, v4("192.0.2.0"), 24, 16, None).unwrap()
    }

    fn br() -> Br {
        Br::new(BrConfig::new(v6(BR), vec![appendix_a_rule()]))
    }

    /// An IPv4 packet of `protocol` whose payload starts with `l4` (ports or ICMP header).
    fn ipv4(src: &str, dst: &str, protocol: u8, l4: &[u8], frag_offset: u16) -> Vec<u8> {
        let mut b = vec![0u8; 20 + l4.len()];
        Ipv4Repr {
            src: v4(src),
            dst: v4(dst),
            protocol,
            payload_len: l4.len(),
            ttl: 64,
            tos: 0,
            ident: 7,
            dont_frag: false,
            more_frags: false,
            frag_offset,
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut b[..]))
        .unwrap();
        b[20..].copy_from_slice(l4);
        b
    }

    /// A UDP packet with an 8-byte header and 4 bytes of data (checksum 0: unused here).
    fn udp(src: &str, sport: u16, dst: &str, dport: u16) -> Vec<u8> {
        let mut l4 = Vec::new();
        l4.extend(sport.to_be_bytes());
        l4.extend(dport.to_be_bytes());
        l4.extend(12u16.to_be_bytes());
        l4.extend([0, 0, b'w', b'r', b'm', b'e']);
        ipv4(src, dst, PROTO_UDP, &l4, 0)
    }

    /// `inner` in IPv6 from `src` to `dst` with next header `nh`.
    fn ipv6(src: &str, dst: &str, nh: u8, inner: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 40 + inner.len()];
        Ipv6Repr {
            src: v6(src),
            dst: v6(dst),
            next_header: nh,
            payload_len: inner.len(),
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut Ipv6Packet::new_unchecked(&mut b[..]))
        .unwrap();
        b[40..].copy_from_slice(inner);
        b
    }

    fn from_ce(src6: &str, src4: &str, sport: u16) -> Vec<u8> {
        ipv6(src6, BR, NEXT_HEADER_IPV4, &udp(src4, sport, PEER, 53))
    }

    #[test]
    fn decapsulates_what_the_ce_may_send() {
        let mut br = br();
        for sport in [1232, 1235, 2256, 64723] {
            let pkt = from_ce(CE, "192.0.2.18", sport);
            let d = br.decapsulate(&pkt).unwrap();
            assert_eq!(d.ce, v6(CE));
            assert_eq!(d.ipv4, &pkt[40..]);
            assert_eq!(
                (d.mapping.ipv4, d.mapping.ports.psid()),
                (v4("192.0.2.18"), 0x34)
            );
        }
        assert_eq!(br.stats().decapsulated, 4);
        assert_eq!(br.stats().upstream_dropped.total(), 0);
        // Ethernet padding after the IPv6 payload is not part of the packet.
        let mut padded = from_ce(CE, "192.0.2.18", 1232);
        let n = padded.len();
        padded.extend([0; 6]);
        assert_eq!(br.decapsulate(&padded).unwrap().ipv4.len(), n - 40);
    }

    /// RFC 7597 §8.1: every way a CE's packet can disagree with its address, counted apart.
    #[test]
    fn refuses_packets_outside_the_ces_address_and_port_set_by_reason() {
        let mut br = br();
        let cases = [
            // Port 1236 is PSID 0x35's, not this CE's.
            (from_ce(CE, "192.0.2.18", 1236), BrDrop::WrongPsid),
            // Port 80 lies in the range a = 6 keeps out of every set; port 0 is no port.
            (from_ce(CE, "192.0.2.18", 80), BrDrop::ExcludedPort),
            (from_ce(CE, "192.0.2.18", 0), BrDrop::ExcludedPort),
            // The CE sends with its neighbour's address, from a port of its own PSID.
            (from_ce(CE, "192.0.2.19", 1232), BrDrop::WrongIpv4),
            // An IPv4 source in no rule.
            (from_ce(CE, "198.51.100.18", 1232), BrDrop::NoRule),
            // The right prefix, another interface identifier.
            (
                from_ce("2001:db8:12:3400::1", "192.0.2.18", 1232),
                BrDrop::WrongSource,
            ),
            // A source outside the rule's IPv6 prefix.
            (
                from_ce("2001:db8:ff00:3400:0:c000:212:34", "192.0.2.18", 1232),
                BrDrop::WrongSource,
            ),
        ];
        for (pkt, why) in &cases {
            assert_eq!(br.decapsulate(pkt).err(), Some(*why), "{why:?}");
        }
        let s = br.stats();
        assert_eq!(s.decapsulated, 0);
        assert_eq!(s.upstream_dropped.get(BrDrop::WrongPsid), 1);
        assert_eq!(s.upstream_dropped.get(BrDrop::ExcludedPort), 2);
        assert_eq!(s.upstream_dropped.get(BrDrop::WrongIpv4), 1);
        assert_eq!(s.upstream_dropped.get(BrDrop::NoRule), 1);
        assert_eq!(s.upstream_dropped.get(BrDrop::WrongSource), 2);
        assert_eq!(s.downstream_dropped.total(), 0);
    }

    #[test]
    fn judges_icmp_echo_by_its_identifier_and_refuses_what_has_no_port() {
        let mut br = br();
        let echo = |id: u16| {
            let mut l4 = vec![ICMP_ECHO_REQUEST, 0, 0, 0];
            l4.extend(id.to_be_bytes());
            l4.extend([0, 1]);
            ipv6(
                CE,
                BR,
                NEXT_HEADER_IPV4,
                &ipv4("192.0.2.18", PEER, PROTO_ICMP, &l4, 0),
            )
        };
        assert!(br.decapsulate(&echo(1233)).is_ok());
        assert_eq!(br.decapsulate(&echo(1300)).err(), Some(BrDrop::WrongPsid));
        // ICMP other than echo, GRE, a non-first fragment, a UDP header cut to 3 bytes.
        let unreachable = [3u8, 1, 0, 0, 0, 0, 0, 0];
        for inner in [
            ipv4("192.0.2.18", PEER, PROTO_ICMP, &unreachable, 0),
            ipv4("192.0.2.18", PEER, 47, &[0; 8], 0),
            ipv4(
                "192.0.2.18",
                PEER,
                PROTO_UDP,
                &[0x04, 0xd0, 0, 53, 0, 12, 0, 0],
                8,
            ),
            ipv4("192.0.2.18", PEER, PROTO_UDP, &[0x04, 0xd0, 0], 0),
        ] {
            let pkt = ipv6(CE, BR, NEXT_HEADER_IPV4, &inner);
            assert_eq!(br.decapsulate(&pkt).err(), Some(BrDrop::NoPort));
        }
        assert_eq!(br.stats().upstream_dropped.get(BrDrop::NoPort), 4);
    }

    #[test]
    fn accepts_a_tunnel_encapsulation_limit_in_front_of_the_ipv4_packet() {
        let mut br = br();
        let mut body = vec![0u8; wire::ipv6::TunnelEncapLimitRepr::HEADER_LEN];
        wire::ipv6::TunnelEncapLimitRepr {
            next_header: NEXT_HEADER_IPV4,
            limit: 4,
        }
        .emit(&mut body)
        .unwrap();
        let inner = udp("192.0.2.18", 1232, PEER, 53);
        body.extend(&inner);
        let pkt = ipv6(CE, BR, wire::ipv6::NEXT_HEADER_DEST_OPTS, &body);
        assert_eq!(br.decapsulate(&pkt).unwrap().ipv4, &inner[..]);
    }

    #[test]
    fn a_rule_without_sharing_needs_no_port() {
        // RFC 7597 Appendix A Example 4: 192.0.2.1/32 to 2001:db8:12:3400::/56, no EA bits.
        let rule =
            MapRule::new(v6("2001:db8:12:3400::"), 56, v4("192.0.2.1"), 32, 0, None).unwrap();
        let mut br = Br::new(BrConfig::new(v6(BR), vec![rule]));
        let ce = "2001:db8:12:3400:0:c000:201:0";
        let gre = ipv6(
            ce,
            BR,
            NEXT_HEADER_IPV4,
            &ipv4("192.0.2.1", PEER, 47, &[0; 8], 0),
        );
        assert!(br.decapsulate(&gre).is_ok());
        assert!(br.decapsulate(&from_ce(ce, "192.0.2.1", 80)).is_ok());
        let mut out = Vec::new();
        assert_eq!(
            br.encapsulate(&udp(PEER, 53, "192.0.2.1", 22), &mut out),
            Ok(v6(ce))
        );
    }

    #[test]
    fn a_ce_with_an_ipv4_prefix_may_send_from_any_address_of_it() {
        // 192.0.2.0/24 with 4 EA bits: each CE owns a /28 (2001:db8:a0::/44 owns .160/28).
        let rule = MapRule::new(v6("2001:db8::"), 40, v4("192.0.2.0"), 24, 4, None).unwrap();
        let mut br = Br::new(BrConfig::new(v6(BR), vec![rule]));
        let ce = "2001:db8:a0::c000:2a0:0";
        assert!(br.decapsulate(&from_ce(ce, "192.0.2.171", 80)).is_ok());
        assert_eq!(
            br.decapsulate(&from_ce(ce, "192.0.2.180", 80)).err(),
            Some(BrDrop::WrongIpv4)
        );
        let mut out = Vec::new();
        assert_eq!(
            br.encapsulate(&udp(PEER, 53, "192.0.2.175", 80), &mut out),
            Ok(v6(ce))
        );
    }

    #[test]
    fn a_provisioned_psid_is_checked_like_one_from_ea_bits() {
        // RFC 7597 Appendix A Example 5: no EA bits, PSID 0x34 provisioned (k = 8, a = 6).
        let ports = PortParams {
            offset: 6,
            psid_len: 8,
            psid: 0x34,
        };
        let rule = MapRule::new(
            v6("2001:db8:12:3400::"),
            56,
            v4("192.0.2.1"),
            32,
            0,
            Some(ports),
        )
        .unwrap();
        let mut br = Br::new(BrConfig::new(v6(BR), vec![rule]));
        let ce = "2001:db8:12:3400:0:c000:201:34";
        assert!(br.decapsulate(&from_ce(ce, "192.0.2.1", 1232)).is_ok());
        assert_eq!(
            br.decapsulate(&from_ce(ce, "192.0.2.1", 1236)).err(),
            Some(BrDrop::WrongPsid)
        );
        let mut out = Vec::new();
        assert_eq!(
            br.encapsulate(&udp(PEER, 53, "192.0.2.1", 64720), &mut out),
            Ok(v6(ce))
        );
        assert_eq!(
            br.encapsulate(&udp(PEER, 53, "192.0.2.1", 64724), &mut out),
            Err(BrDrop::WrongPsid)
        );
    }

    #[test]
    fn refuses_what_is_not_a_tunnel_packet_for_it() {
        let mut br = br();
        let inner = udp("192.0.2.18", 1232, PEER, 53);
        let not_for_us = ipv6(CE, "2001:db8:ffff::2", NEXT_HEADER_IPV4, &inner);
        let not_ipv4 = ipv6(CE, BR, 17, &inner);
        let mut frag = vec![NEXT_HEADER_IPV4, 0, 0, 0, 0, 0, 0, 1];
        frag.extend(&inner);
        let outer_fragment = ipv6(CE, BR, 44, &frag);
        let mut bad_inner = inner.clone();
        bad_inner[0] = 0x65;
        let bad_inner = ipv6(CE, BR, NEXT_HEADER_IPV4, &bad_inner);
        let good = from_ce(CE, "192.0.2.18", 1232);
        for (pkt, why) in [
            (&not_for_us[..], BrDrop::NotForUs),
            (&not_ipv4[..], BrDrop::NotIpv4),
            (&outer_fragment[..], BrDrop::OuterFragment),
            (&bad_inner[..], BrDrop::BadInnerIpv4),
            (&good[..39], BrDrop::BadIpv6),
            (&good[..good.len() - 1], BrDrop::BadIpv6),
            (&good[..48], BrDrop::BadIpv6),
        ] {
            assert_eq!(br.decapsulate(pkt).err(), Some(why), "{why:?}");
        }
        // A truncated inner header whose IPv6 payload length matches it.
        let short = ipv6(CE, BR, NEXT_HEADER_IPV4, &inner[..19]);
        assert_eq!(br.decapsulate(&short).err(), Some(BrDrop::BadInnerIpv4));
        assert_eq!(br.stats().upstream_dropped.total(), 8);
    }

    #[test]
    fn encapsulates_to_the_ce_of_the_destination_address_and_port() {
        let mut br = br();
        let mut out = vec![0xa5; 3];
        // RFC 7597 Appendix A Example 2: to 192.0.2.18 port 1232 → the CE's MAP address.
        let pkt = udp(PEER, 53, "192.0.2.18", 1232);
        assert_eq!(br.encapsulate(&pkt, &mut out), Ok(v6(CE)));
        let ip = Ipv6Packet::new_checked(&out[..]).unwrap();
        let r = Ipv6Repr::parse(&ip).unwrap();
        assert_eq!(
            (r.src, r.dst, r.next_header),
            (v6(BR), v6(CE), NEXT_HEADER_IPV4)
        );
        assert_eq!(r.payload_len, pkt.len());
        assert_eq!(&out[40..], &pkt[..]);
        // And what comes back from that CE passes the BR's own check.
        let reply = from_ce(CE, "192.0.2.18", 1232);
        assert!(br.decapsulate(&reply).is_ok());
        // Port 1236: PSID 0x35's CE, another address.
        assert_eq!(
            br.encapsulate(&udp(PEER, 53, "192.0.2.18", 1236), &mut out),
            Ok(v6("2001:db8:12:3500:0:c000:212:35"))
        );
        assert_eq!(br.stats().encapsulated, 2);
    }

    #[test]
    fn counts_what_it_cannot_send_towards_a_ce_by_reason() {
        let mut br = br();
        let mut out = Vec::new();
        let mut big = udp(PEER, 53, "192.0.2.18", 1232);
        big.resize(1461, 0);
        let len = big.len() as u16;
        big[2..4].copy_from_slice(&len.to_be_bytes());
        let gre = ipv4(PEER, "192.0.2.18", 47, &[0; 8], 0);
        for (pkt, why) in [
            (udp(PEER, 53, "192.0.2.18", 80), BrDrop::ExcludedPort),
            (udp(PEER, 53, "198.51.100.18", 1232), BrDrop::NoRule),
            (gre, BrDrop::NoPort),
            (big, BrDrop::TooBig),
            (vec![0x45, 0, 0], BrDrop::BadInnerIpv4),
        ] {
            assert_eq!(br.encapsulate(&pkt, &mut out), Err(why), "{why:?}");
        }
        let s = br.stats();
        assert_eq!((s.encapsulated, s.downstream_dropped.total()), (0, 5));
        assert_eq!(s.downstream_dropped.get(BrDrop::TooBig), 1);
        assert_eq!(s.upstream_dropped.total(), 0);
        // 1460 bytes fit a 1500-byte MTU with the 40-byte outer header.
        let mut fits = udp(PEER, 53, "192.0.2.18", 1232);
        fits.resize(1460, 0);
        fits[2..4].copy_from_slice(&1460u16.to_be_bytes());
        assert!(br.encapsulate(&fits, &mut out).is_ok());
        assert_eq!(out.len(), 1500);
    }

    #[test]
    fn the_longest_ipv4_prefix_picks_the_rule() {
        let wide = appendix_a_rule();
        let narrow =
            MapRule::new(v6("2001:db8:12:3400::"), 56, v4("192.0.2.18"), 32, 0, None).unwrap();
        let mut br = Br::new(BrConfig::new(v6(BR), vec![wide, narrow]));
        assert_eq!(br.rule_for(v4("192.0.2.18")), Some(&narrow));
        assert_eq!(br.rule_for(v4("192.0.2.17")), Some(&wide));
        let mut out = Vec::new();
        assert_eq!(
            br.encapsulate(&udp(PEER, 53, "192.0.2.18", 80), &mut out),
            Ok(v6("2001:db8:12:3400:0:c000:212:0"))
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Any bytes, and any mutation of a good packet, are refused or passed, never a panic,
        /// and every call is counted once.
        #[test]
        fn any_bytes_are_counted_once_and_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120),
            flips in proptest::collection::vec((0usize..80, proptest::prelude::any::<u8>()), 0..6),
            cut in 0usize..80,
        ) {
            let mut br = br();
            let mut out = Vec::new();
            let _ = br.decapsulate(&bytes);
            let _ = br.encapsulate(&bytes, &mut out);
            let mut good = from_ce(CE, "192.0.2.18", 1232);
            for (i, v) in flips {
                let n = good.len();
                good[i % n] = v;
            }
            good.truncate(cut.max(1).min(good.len()));
            let _ = br.decapsulate(&good);
            let _ = br.encapsulate(&good[good.len().min(40)..], &mut out);
            let s = br.stats();
            proptest::prop_assert_eq!(s.decapsulated + s.upstream_dropped.total(), 2);
            proptest::prop_assert_eq!(s.encapsulated + s.downstream_dropped.total(), 2);
        }

        /// Both directions agree: what the BR sends to a CE for an address and port, it
        /// accepts back from that CE with that address and port, and refuses from any other CE.
        #[test]
        fn the_two_directions_agree(host in 0u8..=255, port in 1024u16..=65535, other in 0u16..=255) {
            let mut br = br();
            let mut out = Vec::new();
            let addr = format!("192.0.2.{host}");
            let ce = br.encapsulate(&udp(PEER, 53, &addr, port), &mut out).unwrap();
            let back = ipv6(&ce.to_string(), BR, NEXT_HEADER_IPV4, &udp(&addr, port, PEER, 53));
            proptest::prop_assert!(br.decapsulate(&back).is_ok());
            let psid = PortSet::psid_of(6, 8, port);
            if other != psid {
                let mut o = ce.octets();
                o[6] = other as u8;
                o[15] = other as u8;
                let wrong = ipv6(&Ipv6Addr::from(o).to_string(), BR, NEXT_HEADER_IPV4, &udp(&addr, port, PEER, 53));
                proptest::prop_assert_eq!(br.decapsulate(&wrong).err(), Some(BrDrop::WrongPsid));
            }
        }
    }
}
