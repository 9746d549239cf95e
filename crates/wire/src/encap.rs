//! The shape of a test frame's header stack: which encapsulations sit between Ethernet and the
//! UDP payload. Values (VLAN ids, labels, session ids, addresses) belong to the stream, not here.
//!
//! The canonical wire order is Ethernet → 802.1Q/802.1ad tags → MPLS labels → PPPoE+PPP →
//! outer IPv6 (DS-Lite or MAP-E) → inner IP → UDP, whatever order the user wrote the parts in.
//!
//! Spelled as `+`-joined parts: `ipv4` (default), `ipv6`, `vlan`, `qinq`, `mpls:N`, `pppoe`,
//! `dslite`, `mape`, e.g. `pppoe+vlan` or `dslite+pppoe`.

use core::fmt;
use core::str::FromStr;
use serde::{Deserialize, Serialize};

/// Ethernet header without FCS.
pub const ETHERNET_HEADER: usize = 14;
/// Frame check sequence, counted in every frame size (DESIGN.md §4).
pub const FCS: usize = 4;
/// One 802.1Q or 802.1ad tag.
pub const VLAN_TAG: usize = 4;
/// One MPLS label stack entry.
pub const MPLS_LABEL: usize = 4;
/// PPPoE session header (6) plus the PPP protocol field (2).
pub const PPPOE_SESSION: usize = 8;
pub const IPV4_HEADER: usize = 20;
pub const IPV6_HEADER: usize = 40;
pub const IPV6_FRAGMENT_HEADER: usize = 8;
pub const UDP_HEADER: usize = 8;
/// Smallest Ethernet frame including FCS; shorter frames are padded.
pub const MIN_FRAME: usize = 64;
/// The largest MPLS stack we build; deeper stacks are not a router-test scenario.
pub const MAX_MPLS_LABELS: u8 = 8;

/// IP version of the test traffic (the inner packet, for tunnels).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub enum IpVersion {
    #[default]
    V4,
    V6,
}

impl IpVersion {
    /// 4 or 6, as plans, case ids (`udp4`) and reports write it.
    pub const fn number(self) -> u8 {
        match self {
            IpVersion::V4 => 4,
            IpVersion::V6 => 6,
        }
    }

    pub const fn header_len(self) -> usize {
        match self {
            IpVersion::V4 => IPV4_HEADER,
            IpVersion::V6 => IPV6_HEADER,
        }
    }
}

impl fmt::Display for IpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IpVersion::V4 => "ipv4",
            IpVersion::V6 => "ipv6",
        })
    }
}

/// 802.1Q tagging of the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Tagging {
    #[default]
    Untagged,
    /// One 802.1Q tag.
    Vlan,
    /// Two tags (802.1ad outer, 802.1Q inner).
    QinQ,
}

impl Tagging {
    pub const fn tags(self) -> usize {
        match self {
            Tagging::Untagged => 0,
            Tagging::Vlan => 1,
            Tagging::QinQ => 2,
        }
    }
}

/// Which headers a test frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct EncapSpec {
    /// The test traffic's IP version (inner, for DS-Lite).
    pub ip: IpVersion,
    pub tagging: Tagging,
    pub mpls_labels: u8,
    pub pppoe: bool,
    /// IPv4-in-IPv6 (RFC 6333): an outer IPv6 header around the IPv4 test packet.
    pub dslite: bool,
    /// MAP-E (RFC 7597): the same IPv4-in-IPv6 frame as `dslite`, between a CE's MAP address
    /// and a Border Relay. Kept apart from `dslite` because plans tie each to its own port
    /// kind; the frame's shape is the same ([`EncapSpec::ipv4_in_ipv6`]).
    #[serde(default)]
    pub mape: bool,
}

/// Why an encapsulation string was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncapError(pub String);

impl fmt::Display for EncapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EncapError {}

const ENCAP_HELP: &str =
    "valid parts, joined with '+': ipv4, ipv6, vlan, qinq, mpls:N (N = 1..8), pppoe, dslite, mape";

impl EncapSpec {
    /// The same IP traffic with no encapsulation at all: the reference port's frame.
    pub const fn plain(ip: IpVersion) -> Self {
        EncapSpec {
            ip,
            tagging: Tagging::Untagged,
            mpls_labels: 0,
            pppoe: false,
            dslite: false,
            mape: false,
        }
    }

    /// Whether the test packet is IPv4 inside an outer IPv6 header (next header 4): DS-Lite
    /// and MAP-E frames, which differ only in their outer addresses.
    pub const fn ipv4_in_ipv6(&self) -> bool {
        self.dslite || self.mape
    }

    /// The softwire's name as plans spell it (`dslite`, `mape`), None without one.
    pub const fn softwire_name(&self) -> Option<&'static str> {
        if self.mape {
            Some("mape")
        } else if self.dslite {
            Some("dslite")
        } else {
            None
        }
    }

    pub fn is_plain(&self) -> bool {
        *self == Self::plain(self.ip)
    }

    /// The same headers around test traffic of IP version `ip` (`vlan+ipv6` → `vlan+ipv4`):
    /// a case's counterpart over the other IP version.
    pub const fn with_ip(self, ip: IpVersion) -> Self {
        EncapSpec { ip, ..self }
    }

    /// Bytes between the Ethernet header and the outermost IP header.
    pub fn l2_extra(&self) -> usize {
        self.tagging.tags() * VLAN_TAG
            + usize::from(self.mpls_labels) * MPLS_LABEL
            + if self.pppoe { PPPOE_SESSION } else { 0 }
    }

    /// Bytes of tunnel headers in front of the test IP packet (the DS-Lite or MAP-E outer IPv6).
    pub fn tunnel_extra(&self) -> usize {
        if self.ipv4_in_ipv6() {
            IPV6_HEADER
        } else {
            0
        }
    }

    /// Bytes this stack adds to the plain frame of the same IP packet (DESIGN.md §4).
    pub fn overhead(&self) -> usize {
        self.l2_extra() + self.tunnel_extra()
    }

    /// The headers from Ethernet up to and including UDP, without FCS.
    pub fn headers_len(&self) -> usize {
        ETHERNET_HEADER + self.overhead() + self.ip.header_len() + UDP_HEADER
    }

    /// The smallest reference frame (plain, with FCS; DESIGN.md §4) that carries a UDP test
    /// packet and its signature: 64 B for IPv4, 82 B for IPv6.
    pub fn min_frame_size(&self) -> usize {
        min_frame_size(self.ip)
    }
}

/// The smallest plain frame (with FCS) of `ip` version that carries UDP and the signature.
pub const fn min_frame_size(ip: IpVersion) -> usize {
    let needed = ETHERNET_HEADER + ip.header_len() + UDP_HEADER + crate::signature::LEN + FCS;
    if needed > MIN_FRAME {
        needed
    } else {
        MIN_FRAME
    }
}

impl FromStr for EncapSpec {
    type Err = EncapError;

    fn from_str(s: &str) -> Result<Self, EncapError> {
        let mut spec = EncapSpec::default();
        let mut ip_given: Option<IpVersion> = None;
        let mut seen: Vec<&str> = Vec::new();
        let text = s.trim();
        if text.is_empty() {
            return Err(EncapError(format!("empty encapsulation; {ENCAP_HELP}")));
        }
        for raw in text.split('+') {
            let part = raw.trim();
            let lower = part.to_ascii_lowercase();
            let (name, arg) = match lower.split_once(':') {
                Some((n, a)) => (n.to_string(), Some(a.to_string())),
                None => (lower.clone(), None),
            };
            let key: &str = match name.as_str() {
                "ipv4" | "ip4" | "plain" => "ip",
                "ipv6" | "ip6" => "ip",
                "vlan" | "dot1q" | "qinq" => "tag",
                other => match other {
                    "mpls" => "mpls",
                    "pppoe" => "pppoe",
                    "dslite" | "ds-lite" => "dslite",
                    "mape" | "map-e" => "mape",
                    _ => {
                        return Err(EncapError(format!(
                            "unknown encapsulation part '{part}' in '{text}'; {ENCAP_HELP}"
                        )))
                    }
                },
            };
            if seen.contains(&key) {
                return Err(EncapError(format!(
                    "'{text}' names the {key} layer twice; give each part once ({ENCAP_HELP})"
                )));
            }
            seen.push(key);
            if arg.is_some() && name != "mpls" {
                return Err(EncapError(format!(
                    "'{part}' takes no ':' argument; {ENCAP_HELP}"
                )));
            }
            match name.as_str() {
                "ipv4" | "ip4" | "plain" => ip_given = Some(IpVersion::V4),
                "ipv6" | "ip6" => ip_given = Some(IpVersion::V6),
                "vlan" | "dot1q" => spec.tagging = Tagging::Vlan,
                "qinq" => spec.tagging = Tagging::QinQ,
                "mpls" => {
                    let n = match arg.as_deref() {
                        None => 1,
                        Some(a) => a.parse::<u8>().map_err(|_| {
                            EncapError(format!("'{part}': the label count must be a number 1..8"))
                        })?,
                    };
                    if n == 0 || n > MAX_MPLS_LABELS {
                        return Err(EncapError(format!(
                            "'{part}': the label count must be 1..{MAX_MPLS_LABELS}"
                        )));
                    }
                    spec.mpls_labels = n;
                }
                "pppoe" => spec.pppoe = true,
                "mape" | "map-e" => spec.mape = true,
                _ => spec.dslite = true,
            }
        }
        if spec.dslite && spec.mape {
            return Err(EncapError(format!(
                "'{text}' names two softwires; a frame crosses either dslite or mape, give one"
            )));
        }
        if let (Some(name), Some(IpVersion::V6)) = (spec.softwire_name(), ip_given) {
            return Err(EncapError(format!(
                "{name} carries IPv4 inside IPv6; drop 'ipv6' (the outer IPv6 header is implied)"
            )));
        }
        if spec.mpls_labels > 0 && spec.pppoe {
            return Err(EncapError(
                "mpls+pppoe is not a frame format: PPPoE rides on Ethernet, MPLS carries IP directly; \
                 use one of them"
                    .into(),
            ));
        }
        spec.ip = ip_given.unwrap_or(IpVersion::V4);
        Ok(spec)
    }
}

impl fmt::Display for EncapSpec {
    /// The canonical spelling, outermost first; parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        match self.tagging {
            Tagging::Untagged => {}
            Tagging::Vlan => parts.push("vlan".into()),
            Tagging::QinQ => parts.push("qinq".into()),
        }
        if self.mpls_labels > 0 {
            parts.push(format!("mpls:{}", self.mpls_labels));
        }
        if self.pppoe {
            parts.push("pppoe".into());
        }
        match self.softwire_name() {
            Some(name) => parts.push(name.into()),
            None => parts.push(self.ip.to_string()),
        }
        f.write_str(&parts.join("+"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> EncapSpec {
        s.parse().unwrap()
    }

    #[test]
    fn parses_parts_in_any_order() {
        assert_eq!(p("pppoe+vlan"), p("vlan+pppoe"));
        let s = p("vlan+pppoe");
        assert!(s.pppoe && s.tagging == Tagging::Vlan && s.ip == IpVersion::V4);
        assert_eq!(p("mpls:3").mpls_labels, 3);
        assert_eq!(p("mpls").mpls_labels, 1);
        assert_eq!(p("ipv6+qinq").tagging, Tagging::QinQ);
        assert!(p("dslite").dslite);
        let m = p("mape");
        assert!(m.mape && !m.dslite && m.ipv4_in_ipv6() && m.ip == IpVersion::V4);
        assert!(!p("pppoe").ipv4_in_ipv6());
        assert!(p("ipv4").is_plain());
    }

    #[test]
    fn overheads_follow_design_section_4() {
        assert_eq!(p("vlan").overhead(), 4);
        assert_eq!(p("qinq").overhead(), 8);
        assert_eq!(p("mpls:3").overhead(), 12);
        assert_eq!(p("pppoe").overhead(), 8);
        assert_eq!(p("dslite").overhead(), 40);
        assert_eq!(p("pppoe+vlan").overhead(), 12);
        assert_eq!(p("dslite+pppoe+qinq").overhead(), 56);
        // MAP-E's frame is DS-Lite's: the same 40-byte outer IPv6 header.
        assert_eq!(p("mape").overhead(), 40);
        assert_eq!(p("mape+pppoe+vlan").overhead(), 52);
        assert_eq!(p("mape").headers_len(), 14 + 40 + 20 + 8);
        assert_eq!(p("ipv6").headers_len(), 14 + 40 + 8);
    }

    #[test]
    fn smallest_frames_carry_the_signature() {
        assert_eq!(min_frame_size(IpVersion::V4), 64); // 14+20+8+16+4 = 62, padded to 64
        assert_eq!(min_frame_size(IpVersion::V6), 82); // 14+40+8+16+4
        assert_eq!(p("pppoe+vlan").min_frame_size(), 64); // the reference frame is plain
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "ipv4",
            "ipv6",
            "vlan+ipv4",
            "qinq+mpls:2+ipv6",
            "vlan+pppoe+ipv6",
            "pppoe+dslite",
            "mape",
            "vlan+pppoe+mape",
        ] {
            let spec = p(s);
            assert_eq!(p(&spec.to_string()), spec, "{s} -> {spec}");
        }
    }

    #[test]
    fn refuses_nonsense_with_a_hint() {
        for bad in [
            "",
            "gre",
            "vlan+qinq",
            "mpls:0",
            "mpls:9",
            "mpls:x",
            "dslite+ipv6",
            "mape+ipv6",
            "mape+dslite",
            "mape:1",
            "mpls+pppoe",
            "vlan:3",
            "ipv4+ipv6",
        ] {
            let e = bad.parse::<EncapSpec>().unwrap_err();
            assert!(!e.0.is_empty(), "{bad}");
        }
        assert!("gre"
            .parse::<EncapSpec>()
            .unwrap_err()
            .0
            .contains("valid parts"));
    }
}
