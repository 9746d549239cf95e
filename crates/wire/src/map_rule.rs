//! The address and port arithmetic of MAP (RFC 7597 §5 and §6), shared by a MAP-E CE and BR:
//! a mapping rule, the EA bits of a delegated prefix, the PSID and its port set, and the MAP
//! node's IPv6 address.
//!
//! Vocabulary of RFC 7597 §5:
//! - the rule: Rule IPv6 prefix (`prefix6_len` bits), Rule IPv4 prefix (`prefix4_len` = r
//!   bits) and the EA-bits length o (`ea_len`);
//! - p = 32 − r, the IPv4 suffix bits; when o ≥ p the EA bits complete the IPv4 address and
//!   their last q = o − p bits are the PSID (k = q); when o < p they give only an IPv4 prefix
//!   of r + o bits and no port sharing;
//! - the PSID sits in each port after the offset's a bits; the m = 16 − a − k bits after it
//!   are free. A port belongs to PSID `psid` when its k bits after the first a are `psid`;
//!   with a > 0 the ports whose first a bits are 0 (0–1023 for a = 6) belong to no one.
//!
//! A rule whose EA bits carry no PSID may still share its address with a PSID provisioned
//! separately (RFC 7598's S46_PORTPARAMS; RFC 7597 Appendix A, "rule with no embedded
//! address bits and address sharing"): the `ports` of [`MapRule::new`].
//!
//! Port 0 is in no port set: it is not a port a NAPT can hand out (OpenWrt's mapcalc leaves it
//! out of its port sets too).

use core::net::{Ipv4Addr, Ipv6Addr};
use core::ops::RangeInclusive;

use crate::error::{Error, Result};

/// The PSID offset a rule without S46_PORTPARAMS uses (RFC 7597 §5.1: a = 6, which keeps
/// ports 0–1023 out of every port set).
pub const DEFAULT_PSID_OFFSET: u8 = 6;

/// The longest End-user IPv6 prefix a MAP-E CE can have: the interface identifier of §6 takes
/// the last 64 bits.
pub const MAX_END_USER_PREFIX_LEN: u8 = 64;

/// The port parameters of a rule (RFC 7598 §4.5, option S46_PORTPARAMS): the offset a, the
/// PSID length k and, when provisioned explicitly, the PSID (right-aligned here: a k-bit
/// number, not the option's left-aligned field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortParams {
    pub offset: u8,
    pub psid_len: u8,
    pub psid: u16,
}

/// One set of ports: those whose k bits after the first a are the PSID (RFC 7597 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortSet {
    offset: u8,
    psid_len: u8,
    psid: u16,
}

impl PortSet {
    /// Refuses a + k > 16, a > 15 and a PSID wider than k bits.
    pub fn new(offset: u8, psid_len: u8, psid: u16) -> Result<PortSet> {
        if offset > 15 {
            return Err(Error::Malformed("map psid offset above 15"));
        }
        if psid_len > 16 || offset + psid_len > 16 {
            return Err(Error::Malformed(
                "map psid offset plus psid length above 16 bits",
            ));
        }
        if u32::from(psid) >> psid_len != 0 {
            return Err(Error::Malformed("map psid wider than its psid length"));
        }
        Ok(PortSet {
            offset,
            psid_len,
            psid,
        })
    }

    /// Every port but 0: an address that is not shared.
    pub const fn all() -> PortSet {
        PortSet {
            offset: 0,
            psid_len: 0,
            psid: 0,
        }
    }

    /// The offset a.
    pub fn offset(&self) -> u8 {
        self.offset
    }

    /// The PSID length k (0: the address is not shared).
    pub fn psid_len(&self) -> u8 {
        self.psid_len
    }

    /// The PSID, right-aligned.
    pub fn psid(&self) -> u16 {
        self.psid
    }

    /// m = 16 − a − k: the bits of a port after its PSID.
    fn free_bits(&self) -> u8 {
        16 - self.offset - self.psid_len
    }

    /// The PSID a port carries under offset a and length k.
    pub fn psid_of(offset: u8, psid_len: u8, port: u16) -> u16 {
        if psid_len == 0 {
            return 0;
        }
        let shift = 16 - u32::from(offset) - u32::from(psid_len);
        ((u32::from(port) >> shift) & ((1u32 << psid_len) - 1)) as u16
    }

    /// Whether `port` is one of this set's.
    pub fn contains(&self, port: u16) -> bool {
        if port == 0 {
            return false;
        }
        if self.psid_len == 0 {
            return true;
        }
        let excluded = self.offset > 0 && port >> (16 - self.offset) == 0;
        !excluded && Self::psid_of(self.offset, self.psid_len, port) == self.psid
    }

    /// The set as contiguous ranges, lowest first: one per value of the a offset bits (from 1
    /// when a > 0), each 2^m ports long.
    pub fn ranges(&self) -> impl Iterator<Item = RangeInclusive<u16>> + '_ {
        let a = u32::from(self.offset);
        let m = u32::from(self.free_bits());
        let first_a = u32::from(a > 0);
        (first_a..(1u32 << a)).filter_map(move |high| {
            let start = (high << (16 - a)) | (u32::from(self.psid) << m);
            let end = start + (1u32 << m) - 1;
            let start = start.max(1);
            (start <= end).then_some(start as u16..=end as u16)
        })
    }

    /// How many ports the set holds.
    pub fn len(&self) -> u32 {
        self.ranges()
            .map(|r| u32::from(*r.end()) - u32::from(*r.start()) + 1)
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A mapping rule (RFC 7597 §5): a BMR on a CE, one of a BR's rules, or an FMR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MapRule {
    ipv6_prefix: Ipv6Addr,
    prefix6_len: u8,
    ipv4_prefix: Ipv4Addr,
    prefix4_len: u8,
    ea_len: u8,
    offset: u8,
    psid_len: u8,
    /// A PSID provisioned beside the rule, used when the EA bits carry none.
    explicit_psid: Option<u16>,
}

/// What a CE gets from a rule: its IPv4 address (or prefix), its ports and its End-user IPv6
/// prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CeMapping {
    /// The CE's IPv4 address; with `ipv4_len` below 32, an IPv4 prefix (host bits zero).
    pub ipv4: Ipv4Addr,
    pub ipv4_len: u8,
    pub ports: PortSet,
    /// The End-user IPv6 prefix, host bits zero: on the CE's side its delegated prefix,
    /// which may be longer than the rule prefix plus the EA bits; on the BR's side
    /// ([`MapRule::ce_for`]) exactly that long, since the BR knows no more of it.
    pub end_user_prefix: Ipv6Addr,
    pub end_user_len: u8,
}

impl CeMapping {
    /// The interface identifier of RFC 7597 §6: 16 zero bits, the IPv4 address (right-padded
    /// with zeros for a prefix), the PSID left-padded to 16 bits (0 when not shared).
    pub fn interface_id(&self) -> [u8; 8] {
        let mut iid = [0u8; 8];
        iid[2..6].copy_from_slice(&self.ipv4.octets());
        iid[6..].copy_from_slice(&self.ports.psid().to_be_bytes());
        iid
    }

    /// The MAP node's IPv6 address (RFC 7597 §6): the End-user prefix, a subnet ID of zero,
    /// the interface identifier. This is the CE's tunnel endpoint.
    pub fn ipv6_address(&self) -> Ipv6Addr {
        let mut a = self.end_user_prefix.octets();
        a[8..].copy_from_slice(&self.interface_id());
        Ipv6Addr::from(a)
    }
}

/// The `len` high bits of a 128-bit value (0 for `len == 0`).
fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

fn mask32(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    }
}

impl MapRule {
    /// A rule, with its port parameters (S46_PORTPARAMS) if any. Without them the offset is
    /// the default a = 6. When the EA bits carry a PSID, a non-zero `psid_len` in `ports` must
    /// equal theirs and its PSID is not used; when they carry none but complete the IPv4
    /// address, `psid_len` > 0 shares the address with the given PSID.
    ///
    /// Refuses lengths out of range, an End-user prefix (rule prefix + EA bits) longer than 64
    /// bits, a PSID longer than 16 bits and a + k above 16. Host bits of both prefixes are
    /// cleared.
    pub fn new(
        ipv6_prefix: Ipv6Addr,
        prefix6_len: u8,
        ipv4_prefix: Ipv4Addr,
        prefix4_len: u8,
        ea_len: u8,
        ports: Option<PortParams>,
    ) -> Result<MapRule> {
        if prefix4_len > 32 {
            return Err(Error::Malformed("map rule ipv4 prefix length above 32"));
        }
        if prefix6_len > 128 {
            return Err(Error::Malformed("map rule ipv6 prefix length above 128"));
        }
        if ea_len > 48 {
            return Err(Error::Malformed("map rule ea-bits length above 48"));
        }
        if u16::from(prefix6_len) + u16::from(ea_len) > u16::from(MAX_END_USER_PREFIX_LEN) {
            return Err(Error::Malformed(
                "map rule ipv6 prefix plus ea bits longer than 64 bits",
            ));
        }
        let p = 32 - prefix4_len;
        let mut psid_len = ea_len.saturating_sub(p);
        if psid_len > 16 {
            return Err(Error::Malformed(
                "map rule ea bits leave a psid longer than 16 bits",
            ));
        }
        let mut explicit_psid = None;
        let mut offset = DEFAULT_PSID_OFFSET;
        if let Some(params) = ports {
            if psid_len > 0 {
                if params.psid_len != 0 && params.psid_len != psid_len {
                    return Err(Error::Malformed(
                        "map psid length disagrees with the rule's ea bits",
                    ));
                }
            } else if params.psid_len > 0 {
                if ea_len < p {
                    return Err(Error::Malformed(
                        "map rule gives an ipv4 prefix, which cannot share ports",
                    ));
                }
                psid_len = params.psid_len;
                explicit_psid = Some(params.psid);
            }
            offset = params.offset;
        }
        if psid_len == 0 {
            offset = 0;
        }
        // Checks a, a + k and the PSID's width in one place.
        PortSet::new(offset, psid_len, explicit_psid.unwrap_or(0))?;
        Ok(MapRule {
            ipv6_prefix: Ipv6Addr::from(u128::from(ipv6_prefix) & mask128(prefix6_len)),
            prefix6_len,
            ipv4_prefix: Ipv4Addr::from(u32::from(ipv4_prefix) & mask32(prefix4_len)),
            prefix4_len,
            ea_len,
            offset,
            psid_len,
            explicit_psid,
        })
    }

    pub fn ipv6_prefix(&self) -> (Ipv6Addr, u8) {
        (self.ipv6_prefix, self.prefix6_len)
    }

    pub fn ipv4_prefix(&self) -> (Ipv4Addr, u8) {
        (self.ipv4_prefix, self.prefix4_len)
    }

    pub fn ea_len(&self) -> u8 {
        self.ea_len
    }

    /// The offset a.
    pub fn psid_offset(&self) -> u8 {
        self.offset
    }

    /// The PSID length k (from the EA bits, or provisioned).
    pub fn psid_len(&self) -> u8 {
        self.psid_len
    }

    /// The provisioned PSID of a rule whose EA bits carry none.
    pub fn explicit_psid(&self) -> Option<u16> {
        self.explicit_psid
    }

    /// p: the IPv4 address bits after the rule's IPv4 prefix.
    pub fn ipv4_suffix_len(&self) -> u8 {
        32 - self.prefix4_len
    }

    /// The length of the End-user IPv6 prefixes the rule maps: rule prefix + EA bits.
    pub fn end_user_len(&self) -> u8 {
        self.prefix6_len + self.ea_len
    }

    /// The IPv4 address bits the EA bits give (at most p).
    fn ea_ipv4_bits(&self) -> u8 {
        self.ea_len.min(self.ipv4_suffix_len())
    }

    /// Whether the rule's IPv4 prefix holds `a`.
    pub fn covers_ipv4(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & mask32(self.prefix4_len) == u32::from(self.ipv4_prefix)
    }

    /// Whether the rule's IPv6 prefix holds `a`.
    pub fn covers_ipv6(&self, a: Ipv6Addr) -> bool {
        u128::from(a) & mask128(self.prefix6_len) == u128::from(self.ipv6_prefix)
    }

    /// The mapping from the EA bits and the provisioned PSID.
    fn mapping_from_ea(&self, ea: u64) -> CeMapping {
        let q = u32::from(self.ea_len - self.ea_ipv4_bits());
        let (suffix, psid) = if q > 0 {
            (ea >> q, (ea & ((1u64 << q) - 1)) as u16)
        } else {
            (ea, self.explicit_psid.unwrap_or(0))
        };
        let v4_bits = self.ea_ipv4_bits();
        let ipv4_len = self.prefix4_len + v4_bits;
        let host_shift = 32 - u32::from(ipv4_len);
        let ipv4 =
            u32::from(self.ipv4_prefix) | ((suffix as u32).checked_shl(host_shift).unwrap_or(0));
        let end_user_len = self.end_user_len();
        let prefix =
            u128::from(self.ipv6_prefix) | (u128::from(ea) << (128 - u32::from(end_user_len)));
        CeMapping {
            ipv4: Ipv4Addr::from(ipv4),
            ipv4_len,
            ports: PortSet {
                offset: self.offset,
                psid_len: self.psid_len,
                psid,
            },
            end_user_prefix: Ipv6Addr::from(prefix & mask128(end_user_len)),
            end_user_len,
        }
    }

    /// The CE's side (RFC 7597 §5.2): its IPv4 address, PSID and port set from its delegated
    /// (End-user) prefix. The prefix must lie in the rule's IPv6 prefix and be at least as long
    /// as the rule prefix plus the EA bits, and at most 64 bits.
    pub fn ce_mapping(&self, delegated: Ipv6Addr, delegated_len: u8) -> Result<CeMapping> {
        if delegated_len > MAX_END_USER_PREFIX_LEN {
            return Err(Error::Malformed("map end-user prefix longer than 64 bits"));
        }
        if delegated_len < self.end_user_len() {
            return Err(Error::Malformed(
                "map end-user prefix shorter than the rule prefix plus its ea bits",
            ));
        }
        if !self.covers_ipv6(delegated) {
            return Err(Error::Malformed(
                "map end-user prefix outside the rule's ipv6 prefix",
            ));
        }
        let ea = if self.ea_len == 0 {
            0
        } else {
            let shift = 128 - u32::from(self.end_user_len());
            ((u128::from(delegated) >> shift) & ((1u128 << self.ea_len) - 1)) as u64
        };
        let mut m = self.mapping_from_ea(ea);
        // The CE keeps all of its delegated prefix (bits past the EA bits included): its MAP
        // address is that prefix, a subnet ID of zero and the interface identifier (§6).
        m.end_user_prefix = Ipv6Addr::from(u128::from(delegated) & mask128(delegated_len));
        m.end_user_len = delegated_len;
        Ok(m)
    }

    /// The BR's and an FMR's side (RFC 7597 §5.3): the CE that owns IPv4 address `ipv4` and
    /// `port`, or `None` when the address is outside the rule's IPv4 prefix. The PSID is the
    /// port's; whether that port is in the CE's set (the offset's excluded range, a provisioned
    /// PSID) is `ports.contains(port)`. The End-user prefix is the rule prefix plus the EA
    /// bits: a CE delegated a longer prefix is reached here only when its bits past them are
    /// zero (deployments delegate exactly that length).
    pub fn ce_for(&self, ipv4: Ipv4Addr, port: u16) -> Option<CeMapping> {
        if !self.covers_ipv4(ipv4) {
            return None;
        }
        let p = self.ipv4_suffix_len();
        let v4_bits = self.ea_ipv4_bits();
        let suffix = if p == 0 {
            0
        } else {
            u64::from(u32::from(ipv4) & (u32::MAX >> (32 - u32::from(p))))
                >> (u32::from(p) - u32::from(v4_bits))
        };
        let q = self.ea_len - v4_bits;
        let port_psid = PortSet::psid_of(self.offset, self.psid_len, port);
        let ea = (suffix << q) | if q > 0 { u64::from(port_psid) } else { 0 };
        // With a provisioned PSID (q = 0) the mapping keeps it: the port may or may not be
        // in the CE's set.
        Some(self.mapping_from_ea(ea))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn v4(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    /// The rule of RFC 7597 Appendix A, Examples 1–3: 2001:db8::/40, 192.0.2.0/24, 16 EA bits.
    fn appendix_a_rule() -> MapRule {
        MapRule::new(v6("2001:db8::"), 40, v4("192.0.2.0"), 24, 16, None).unwrap()
    }

    /// RFC 7597 Appendix A, Example 1 (BMR): End-user prefix 2001:db8:0012:3400::/56 gives
    /// 192.0.2.18, PSID 0x34 (k = 8, a = 6), 63 port ranges 1232–1235, 2256–2259, …,
    /// 63696–63699, 64720–64723, and the CE address 2001:db8:12:3400:0:c000:212:34.
    #[test]
    fn rfc7597_appendix_a_example_1_bmr() {
        let r = appendix_a_rule();
        assert_eq!(
            (r.ipv4_suffix_len(), r.psid_len(), r.psid_offset()),
            (8, 8, 6)
        );
        let m = r.ce_mapping(v6("2001:db8:12:3400::"), 56).unwrap();
        assert_eq!((m.ipv4, m.ipv4_len), (v4("192.0.2.18"), 32));
        assert_eq!(m.ports.psid(), 0x34);
        let ranges: Vec<_> = m.ports.ranges().collect();
        assert_eq!(ranges.len(), 63);
        assert_eq!(ranges[0], 1232..=1235);
        assert_eq!(ranges[1], 2256..=2259);
        assert_eq!(ranges[61], 63696..=63699);
        assert_eq!(ranges[62], 64720..=64723);
        assert_eq!(m.ports.len(), 63 * 4);
        assert_eq!(m.ipv6_address(), v6("2001:db8:12:3400:0:c000:212:34"));
        assert_eq!(m.interface_id(), [0, 0, 0xc0, 0, 0x02, 0x12, 0, 0x34]);
        // A longer delegated prefix (a /60 inside the /56) maps the same.
        let m60 = r.ce_mapping(v6("2001:db8:12:3400::"), 60).unwrap();
        assert_eq!(m60.ipv6_address(), m.ipv6_address());
        // The CE keeps the bits of its delegated prefix past the EA bits.
        let m60 = r.ce_mapping(v6("2001:db8:12:3450::"), 60).unwrap();
        assert_eq!(m60.ipv6_address(), v6("2001:db8:12:3450:0:c000:212:34"));
        assert_eq!((m60.ipv4, m60.ports), (m.ipv4, m.ports));
    }

    /// RFC 7597 Appendix A, Example 2 (BR): a packet to 192.0.2.18 port 1232 goes to
    /// 2001:db8:12:3400:0:c000:212:34 (PSID 0x34 from port 1232).
    #[test]
    fn rfc7597_appendix_a_example_2_br() {
        let r = appendix_a_rule();
        let m = r.ce_for(v4("192.0.2.18"), 1232).unwrap();
        assert_eq!(m.ports.psid(), 0x34);
        assert!(m.ports.contains(1232));
        assert_eq!(m.ipv6_address(), v6("2001:db8:12:3400:0:c000:212:34"));
        assert_eq!(
            (m.end_user_prefix, m.end_user_len),
            (v6("2001:db8:12:3400::"), 56)
        );
        assert!(r.ce_for(v4("198.51.100.18"), 1232).is_none());
    }

    /// RFC 7597 Appendix A, Example 3 (FMR): the same rule used as an FMR from another CE
    /// sends to 192.0.2.18 port 1232 through 2001:db8:12:3400::/56 — the same arithmetic as
    /// the BR's, checked here from a port elsewhere in the range (64723, the last one).
    #[test]
    fn rfc7597_appendix_a_example_3_fmr() {
        let r = appendix_a_rule();
        let m = r.ce_for(v4("192.0.2.18"), 64723).unwrap();
        assert_eq!(m.end_user_prefix, v6("2001:db8:12:3400::"));
        assert_eq!(m.ipv6_address(), v6("2001:db8:12:3400:0:c000:212:34"));
        // Port 1236 carries PSID 0x35: another CE's prefix.
        let other = r.ce_for(v4("192.0.2.18"), 1236).unwrap();
        assert_eq!(other.end_user_prefix, v6("2001:db8:12:3500::"));
    }

    /// RFC 7597 Appendix A, Example 4: no EA bits, no sharing — rule 2001:db8:12:3400::/56,
    /// 192.0.2.1/32, EA length 0: the CE gets 192.0.2.1 and every port.
    #[test]
    fn rfc7597_appendix_a_example_4_no_ea_bits_no_sharing() {
        let r = MapRule::new(v6("2001:db8:12:3400::"), 56, v4("192.0.2.1"), 32, 0, None).unwrap();
        let m = r.ce_mapping(v6("2001:db8:12:3400::"), 56).unwrap();
        assert_eq!(
            (m.ipv4, m.ipv4_len, m.ports.psid_len()),
            (v4("192.0.2.1"), 32, 0)
        );
        assert!(m.ports.contains(1) && m.ports.contains(80) && m.ports.contains(65535));
        assert!(!m.ports.contains(0));
        assert_eq!(m.ports.len(), 65535);
        assert_eq!(m.ipv6_address(), v6("2001:db8:12:3400:0:c000:201:0"));
    }

    /// RFC 7597 Appendix A, Example 5: no EA bits, sharing with a PSID provisioned by DHCPv6
    /// (k = 8, a = 6; PSID 0x34 as the example's ranges and address show, RFC 7599 erratum
    /// 5324 for the same example): ports 1232–1235, …, 64720–64723 and address
    /// 2001:db8:12:3400:0:c000:201:34.
    #[test]
    fn rfc7597_appendix_a_example_5_no_ea_bits_with_sharing() {
        let ports = PortParams {
            offset: 6,
            psid_len: 8,
            psid: 0x34,
        };
        let r = MapRule::new(
            v6("2001:db8:12:3400::"),
            56,
            v4("192.0.2.1"),
            32,
            0,
            Some(ports),
        )
        .unwrap();
        let m = r.ce_mapping(v6("2001:db8:12:3400::"), 56).unwrap();
        assert_eq!((m.ipv4, m.ports.psid()), (v4("192.0.2.1"), 0x34));
        let ranges: Vec<_> = m.ports.ranges().collect();
        assert_eq!(
            (ranges[0].clone(), ranges[62].clone()),
            (1232..=1235, 64720..=64723)
        );
        assert_eq!(m.ipv6_address(), v6("2001:db8:12:3400:0:c000:201:34"));
        // The BR's view: the CE's PSID stays the provisioned one, whatever the port.
        let b = r.ce_for(v4("192.0.2.1"), 1236).unwrap();
        assert_eq!(b.ports.psid(), 0x34);
        assert!(!b.ports.contains(1236));
        assert!(b.ports.contains(1235));
    }

    #[test]
    fn ipv4_prefix_rule_gives_a_prefix_and_no_sharing() {
        // 192.0.2.0/24 with 4 EA bits: each CE gets a /28.
        let r = MapRule::new(v6("2001:db8::"), 40, v4("192.0.2.0"), 24, 4, None).unwrap();
        let m = r.ce_mapping(v6("2001:db8:00a0::"), 44).unwrap();
        assert_eq!(
            (m.ipv4, m.ipv4_len, m.ports.psid_len()),
            (v4("192.0.2.160"), 28, 0)
        );
        assert_eq!(m.ipv6_address(), v6("2001:db8:a0::c000:2a0:0"));
        let b = r.ce_for(v4("192.0.2.171"), 5000).unwrap();
        assert_eq!(
            (b.end_user_prefix, b.ipv4),
            (v6("2001:db8:a0::"), v4("192.0.2.160"))
        );
        let shared = PortParams {
            offset: 6,
            psid_len: 4,
            psid: 1,
        };
        let (p6, l6) = r.ipv6_prefix();
        let (p4, l4) = r.ipv4_prefix();
        assert!(MapRule::new(p6, l6, p4, l4, 4, Some(shared)).is_err());
    }

    #[test]
    fn port_sets() {
        // a = 0: one contiguous range.
        let s = PortSet::new(0, 4, 3).unwrap();
        assert_eq!(s.ranges().collect::<Vec<_>>(), [12288..=16383]);
        // a = 0, PSID 0: port 0 is left out.
        let s = PortSet::new(0, 4, 0).unwrap();
        assert_eq!(s.ranges().collect::<Vec<_>>(), [1..=4095]);
        assert!(!s.contains(0) && s.contains(1));
        // a + k = 16: one port per range.
        let s = PortSet::new(6, 10, 5).unwrap();
        assert_eq!(s.len(), 63);
        assert!(s.contains(1024 + 5) && !s.contains(5) && !s.contains(1024 + 6));
        // Every port of the ranges is in the set and nothing else is.
        let s = PortSet::new(4, 6, 0x2a).unwrap();
        let listed: std::collections::BTreeSet<u16> =
            s.ranges().flat_map(|r| r.collect::<Vec<_>>()).collect();
        for port in 0..=u16::MAX {
            assert_eq!(s.contains(port), listed.contains(&port), "port {port}");
        }
        assert!(PortSet::new(16, 0, 0).is_err());
        assert!(PortSet::new(8, 9, 0).is_err());
        assert!(PortSet::new(6, 4, 16).is_err());
        assert!(PortSet::all().contains(65535) && !PortSet::all().contains(0));
    }

    #[test]
    fn rule_errors() {
        let p = v6("2001:db8::");
        let a = v4("192.0.2.0");
        let params = |offset, psid_len| {
            Some(PortParams {
                offset,
                psid_len,
                psid: 0,
            })
        };
        assert!(MapRule::new(p, 40, a, 33, 0, None).is_err());
        assert!(MapRule::new(p, 40, a, 24, 49, None).is_err());
        assert!(
            MapRule::new(p, 56, a, 24, 16, None).is_err(),
            "56 + 16 > 64"
        );
        assert!(
            MapRule::new(p, 16, a, 8, 41, None).is_err(),
            "k = 41 - 24 = 17"
        );
        assert!(
            MapRule::new(p, 16, a, 8, 40, None).is_err(),
            "default a = 6, k = 16"
        );
        assert!(MapRule::new(p, 16, a, 8, 40, params(0, 16)).is_ok());
        assert!(
            MapRule::new(p, 16, a, 8, 40, params(1, 0)).is_err(),
            "a + k = 17"
        );
        assert!(
            MapRule::new(p, 40, a, 24, 16, params(6, 7)).is_err(),
            "k is 8"
        );
        assert!(
            MapRule::new(p, 40, a, 24, 16, params(9, 8)).is_err(),
            "a + k = 17"
        );
        let offset4 = MapRule::new(p, 40, a, 24, 16, params(4, 0)).unwrap();
        assert_eq!((offset4.psid_offset(), offset4.psid_len()), (4, 8));
        let wide = PortParams {
            offset: 6,
            psid_len: 4,
            psid: 16,
        };
        assert!(MapRule::new(p, 56, v4("192.0.2.1"), 32, 0, Some(wide)).is_err());
        let r = appendix_a_rule();
        assert!(r.ce_mapping(v6("2001:db8:12::"), 48).is_err(), "too short");
        assert!(
            r.ce_mapping(v6("2001:db8:12:3400::"), 72).is_err(),
            "above 64"
        );
        assert!(
            r.ce_mapping(v6("2001:db9:12:3400::"), 56).is_err(),
            "outside"
        );
    }

    #[test]
    fn host_bits_of_the_rule_are_cleared() {
        let r = MapRule::new(v6("2001:db8:ff::1"), 40, v4("192.0.2.77"), 24, 16, None).unwrap();
        assert_eq!(r, appendix_a_rule());
    }

    /// The BR and the CE agree: for every port of a CE's set, the BR maps the CE's address and
    /// that port back to the same CE.
    #[test]
    fn ce_and_br_agree() {
        let r = appendix_a_rule();
        for psid in [0u16, 1, 0x34, 0xff] {
            let prefix = Ipv6Addr::from(u128::from(v6("2001:db8:12::")) | (u128::from(psid) << 72));
            let m = r.ce_mapping(prefix, 56).unwrap();
            assert_eq!(m.ports.psid(), psid);
            for range in m.ports.ranges() {
                for port in [*range.start(), *range.end()] {
                    assert_eq!(r.ce_for(m.ipv4, port), Some(m), "psid {psid} port {port}");
                }
            }
        }
    }
}
