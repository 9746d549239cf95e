//! A complete test frame built once from a [`StreamSpec`], then restamped per frame.
//!
//! [`FrameTemplate::new`] composes Ethernet → tags → MPLS → PPPoE → (DS-Lite/MAP-E IPv6) → IP → UDP →
//! signature → fill, sized so that the *plain* frame of the same IP packet on the reference link
//! has the requested size (DESIGN.md §4), with every length and checksum filled.
//!
//! [`FrameTemplate::stamp`] writes a frame's sequence number and send time into a copy of the
//! template and patches the checksums incrementally (RFC 1624): the template is built with
//! sequence, timestamp and IPv4 identification all zero, so the new checksum is the stored base
//! plus the one's-complement sum of the new words — no re-serialisation, no allocation, and no
//! dependence on what a reused buffer held before.

use core::fmt;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::checksum;
use crate::encap::{self, EncapSpec, IpVersion, Tagging};
use crate::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use crate::ipv4::{Ipv4Packet, Ipv4Repr};
use crate::ipv6::{Ipv6Packet, Ipv6Repr};
use crate::mpls::{self, MplsRepr};
use crate::ppp::Protocol;
use crate::pppoe::{PppoeCode, PppoeHeader, PppoeRepr};
use crate::signature::{self, Signature, SignatureRepr};
use crate::udp::UdpPacket;
use crate::vlan::{QinqRepr, VlanRepr, VlanTag};

const IPPROTO_UDP: u8 = 17;
const IPPROTO_IPIP: u8 = 4;
/// Largest reference frame a template builds (a 9000-byte jumbo IP packet).
pub const MAX_FRAME_SIZE: usize = 9000 + encap::ETHERNET_HEADER + encap::FCS;

/// One 802.1Q tag's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTagSpec {
    pub vid: u16,
    pub pcp: u8,
    pub dei: bool,
}

/// One MPLS label's values (bottom-of-stack is set by position).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MplsLabelSpec {
    pub label: u32,
    pub tc: u8,
    pub ttl: u8,
}

/// Everything that decides the bytes of a stream's frames, except sequence and send time.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSpec {
    pub encap: EncapSpec,
    /// Carried in the signature; identifies the stream even behind NAT or a tunnel.
    pub stream_id: u16,
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    /// Outermost first; one entry for `vlan`, two for `qinq`.
    pub vlans: Vec<VlanTagSpec>,
    /// TPID of the outer QinQ tag: 0x88a8 (802.1ad) or 0x8100.
    pub qinq_tpid: EtherType,
    /// Top of stack first; as many as `encap.mpls_labels`.
    pub mpls: Vec<MplsLabelSpec>,
    pub pppoe_session: u16,
    /// The test packet's addresses (the inner packet for DS-Lite).
    pub src_ip: IpAddr,
    pub dst_ip: IpAddr,
    /// Softwire endpoints of the outer IPv6 header: B4 and AFTR (DS-Lite), CE and BR (MAP-E).
    pub tunnel_src: Ipv6Addr,
    pub tunnel_dst: Ipv6Addr,
    pub src_port: u16,
    pub dst_port: u16,
    /// IPv4 TOS byte or IPv6 traffic class (DSCP << 2 | ECN).
    pub tos: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    pub flow_label: u32,
    /// IPv4 Don't Fragment. Off by default so that a link with a smaller MTU fragments the
    /// packet and the fragmentation shows in the results instead of silent loss.
    pub dont_fragment: bool,
}

impl StreamSpec {
    /// A stream with documentation addresses (DESIGN.md §6) for `encap`; callers set the rest.
    pub fn new(encap: EncapSpec) -> StreamSpec {
        let (src_ip, dst_ip): (IpAddr, IpAddr) = match encap.ip {
            IpVersion::V4 => (
                Ipv4Addr::new(198, 51, 100, 2).into(),
                Ipv4Addr::new(203, 0, 113, 2).into(),
            ),
            IpVersion::V6 => (
                Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 2).into(),
                Ipv6Addr::new(0x2001, 0xdb8, 0xb, 0, 0, 0, 0, 2).into(),
            ),
        };
        let vlans = (0..encap.tagging.tags())
            .map(|i| VlanTagSpec {
                vid: if i == 0 && encap.tagging == Tagging::QinQ {
                    200
                } else {
                    100
                },
                pcp: 0,
                dei: false,
            })
            .collect();
        let mpls = (0..encap.mpls_labels)
            .map(|i| MplsLabelSpec {
                label: 16 + u32::from(i),
                tc: 0,
                ttl: 64,
            })
            .collect();
        StreamSpec {
            encap,
            stream_id: 0,
            src_mac: MacAddr([0x02, 0, 0, 0, 0, 0x01]),
            dst_mac: MacAddr([0x02, 0, 0, 0, 0, 0x02]),
            vlans,
            qinq_tpid: EtherType::QINQ,
            mpls,
            pppoe_session: 1,
            src_ip,
            dst_ip,
            tunnel_src: Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 2),
            tunnel_dst: Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 1),
            src_port: 1024,
            dst_port: 1024,
            tos: 0,
            ttl: 64,
            flow_label: 0,
            dont_fragment: false,
        }
    }
}

/// Why a template could not be built; every message says what would work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// The frame cannot carry UDP and the signature.
    TooSmall {
        size: usize,
        min: usize,
        ip: IpVersion,
    },
    TooLarge {
        size: usize,
        max: usize,
    },
    /// A field value the spec cannot hold (address family, tag count, VLAN id …).
    Invalid(String),
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::TooSmall { size, min, ip } => write!(
                f,
                "frame size {size} B is too small for {ip} UDP plus the {}-byte signature; the smallest that works is {min} B",
                signature::LEN
            ),
            TemplateError::TooLarge { size, max } => {
                write!(f, "frame size {size} B is above the largest supported, {max} B")
            }
            TemplateError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TemplateError {}

impl From<crate::Error> for TemplateError {
    fn from(e: crate::Error) -> Self {
        TemplateError::Invalid(format!("cannot emit header: {e}"))
    }
}

/// Whether a test frame of `reference_size` bytes (plain, with FCS) can carry `ip` UDP and
/// the signature: the bounds, and the texts, every front door reports (`wirerate trial`,
/// `craft`, plans' `frame-size`).
pub fn check_reference_size(reference_size: usize, ip: IpVersion) -> Result<(), TemplateError> {
    let min = encap::min_frame_size(ip);
    if reference_size < min {
        return Err(TemplateError::TooSmall {
            size: reference_size,
            min,
            ip,
        });
    }
    if reference_size > MAX_FRAME_SIZE {
        return Err(TemplateError::TooLarge {
            size: reference_size,
            max: MAX_FRAME_SIZE,
        });
    }
    Ok(())
}

/// A built test frame and what `stamp` needs to restamp it.
#[derive(Debug, Clone)]
pub struct FrameTemplate {
    /// The frame without FCS, sequence/timestamp/ident zero.
    bytes: Vec<u8>,
    signature_offset: usize,
    udp_checksum_offset: usize,
    udp_checksum_base: u16,
    /// (offset of the ident field, offset of the header checksum, base checksum) for IPv4.
    ipv4: Option<(usize, usize, u16)>,
    reference_size: usize,
}

/// Bytes that are not ours to choose: a repeating 0..=255 ramp, easy to spot in a dump.
fn fill_pattern(buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = i as u8;
    }
}

impl FrameTemplate {
    /// Builds the frame whose plain equivalent on the reference link is `reference_size` bytes
    /// with FCS (the frame on this stream's link is larger by the encapsulation's overhead).
    pub fn new(spec: &StreamSpec, reference_size: usize) -> Result<FrameTemplate, TemplateError> {
        let e = spec.encap;
        check_reference_size(reference_size, e.ip)?;
        validate(spec)?;
        let ip_len = reference_size - encap::ETHERNET_HEADER - encap::FCS;
        let frame_len =
            (encap::ETHERNET_HEADER + e.overhead() + ip_len).max(encap::MIN_FRAME - encap::FCS);
        let mut bytes = vec![0u8; frame_len];

        // The EtherType (or next-protocol) of each layer is that of the layer below it.
        let ip_ethertype = match e.ip {
            IpVersion::V4 => EtherType::IPV4,
            IpVersion::V6 => EtherType::IPV6,
        };
        let after_pppoe = if e.ipv4_in_ipv6() {
            EtherType::IPV6
        } else {
            ip_ethertype
        };
        let after_mpls_tags = if e.pppoe {
            EtherType::PPPOE_SESSION
        } else {
            after_pppoe
        };
        let after_tags = if e.mpls_labels > 0 {
            EtherType::MPLS
        } else {
            after_mpls_tags
        };
        let first = match e.tagging {
            Tagging::Untagged => after_tags,
            Tagging::Vlan => EtherType::VLAN,
            Tagging::QinQ => spec.qinq_tpid,
        };
        EthernetRepr {
            src: spec.src_mac,
            dst: spec.dst_mac,
            ethertype: first,
        }
        .emit(&mut EthernetFrame::new_unchecked(&mut bytes[..]))?;
        let mut at = encap::ETHERNET_HEADER;

        let tag = |t: &VlanTagSpec, ethertype| VlanRepr {
            pcp: t.pcp,
            dei: t.dei,
            vid: t.vid,
            ethertype,
        };
        match e.tagging {
            Tagging::Untagged => {}
            Tagging::Vlan => {
                tag(&spec.vlans[0], after_tags)
                    .emit(&mut VlanTag::new_unchecked(&mut bytes[at..]))?;
                at += encap::VLAN_TAG;
            }
            Tagging::QinQ => {
                QinqRepr {
                    outer_tpid: spec.qinq_tpid,
                    outer: tag(&spec.vlans[0], EtherType::VLAN),
                    inner: tag(&spec.vlans[1], after_tags),
                }
                .emit(&mut bytes[at..])?;
                at += 2 * encap::VLAN_TAG;
            }
        }
        if e.mpls_labels > 0 {
            let labels: Vec<MplsRepr> = spec
                .mpls
                .iter()
                .map(|l| MplsRepr {
                    label: l.label,
                    tc: l.tc,
                    bottom: false,
                    ttl: l.ttl,
                })
                .collect();
            at += mpls::emit_stack(&labels, &mut bytes[at..])?;
        }
        if e.pppoe {
            let ppp_len = 2 + e.tunnel_extra() + ip_len;
            let repr = PppoeRepr {
                code: PppoeCode::Session,
                session_id: spec.pppoe_session,
                payload_len: u16::try_from(ppp_len)
                    .map_err(|_| TemplateError::Invalid("PPPoE payload above 65535 B".into()))?,
            };
            repr.emit(&mut PppoeHeader::new_unchecked(&mut bytes[at..]))?;
            let proto = if after_pppoe == EtherType::IPV6 {
                Protocol::IPV6
            } else {
                Protocol::IPV4
            };
            at += crate::pppoe::HEADER_LEN;
            bytes[at..at + 2].copy_from_slice(&proto.0.to_be_bytes());
            at += 2;
        }
        if e.ipv4_in_ipv6() {
            Ipv6Repr {
                src: spec.tunnel_src,
                dst: spec.tunnel_dst,
                next_header: IPPROTO_IPIP,
                payload_len: ip_len,
                hop_limit: 64,
                traffic_class: 0,
                flow_label: 0,
            }
            .emit(&mut Ipv6Packet::new_unchecked(&mut bytes[at..]))?;
            at += encap::IPV6_HEADER;
        }

        let ip_at = at;
        let udp_at = ip_at + e.ip.header_len();
        let udp_len = ip_len - e.ip.header_len();
        let sig_at = udp_at + encap::UDP_HEADER;
        let mut ipv4 = None;
        match (spec.src_ip, spec.dst_ip) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let repr = Ipv4Repr {
                    src,
                    dst,
                    protocol: IPPROTO_UDP,
                    payload_len: udp_len,
                    ttl: spec.ttl,
                    tos: spec.tos,
                    ident: 0,
                    dont_frag: spec.dont_fragment,
                    more_frags: false,
                    frag_offset: 0,
                };
                let mut pkt = Ipv4Packet::new_unchecked(&mut bytes[ip_at..]);
                repr.emit(&mut pkt)?;
                pkt.fill_checksum();
                let base = u16::from_be_bytes([bytes[ip_at + 10], bytes[ip_at + 11]]);
                ipv4 = Some((ip_at + 4, ip_at + 10, base));
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                Ipv6Repr {
                    src,
                    dst,
                    next_header: IPPROTO_UDP,
                    payload_len: udp_len,
                    hop_limit: spec.ttl,
                    traffic_class: spec.tos,
                    flow_label: spec.flow_label,
                }
                .emit(&mut Ipv6Packet::new_unchecked(&mut bytes[ip_at..]))?;
            }
            _ => unreachable!("validate() checked the address families"),
        }

        fill_pattern(&mut bytes[sig_at..ip_at + ip_len]);
        SignatureRepr {
            stream_id: spec.stream_id,
            seq: 0,
            timestamp_ns: 0,
        }
        .emit(&mut Signature::new_unchecked(
            &mut bytes[sig_at..sig_at + signature::LEN],
        ));
        let mut udp = UdpPacket::new_unchecked(&mut bytes[udp_at..ip_at + ip_len]);
        udp.set_src_port(spec.src_port);
        udp.set_dst_port(spec.dst_port);
        udp.set_len(udp_len as u16);
        match (spec.src_ip, spec.dst_ip) {
            (IpAddr::V4(s), IpAddr::V4(d)) => udp.fill_checksum_v4(s, d),
            (IpAddr::V6(s), IpAddr::V6(d)) => udp.fill_checksum_v6(s, d),
            _ => unreachable!("validate() checked the address families"),
        }
        let udp_checksum_base = u16::from_be_bytes([bytes[udp_at + 6], bytes[udp_at + 7]]);

        Ok(FrameTemplate {
            bytes,
            signature_offset: sig_at,
            udp_checksum_offset: udp_at + 6,
            udp_checksum_base,
            ipv4,
            reference_size,
        })
    }

    /// The frame to hand to the kernel (no FCS) with sequence 0 and timestamp 0.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Length of [`bytes`](Self::bytes).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Size of this frame on its own link, with FCS (what line-rate arithmetic counts).
    pub fn wire_size(&self) -> usize {
        self.bytes.len() + encap::FCS
    }

    /// The plain reference-frame size the template was built for.
    pub fn reference_size(&self) -> usize {
        self.reference_size
    }

    /// Offset of the signature from the start of the frame.
    pub fn signature_offset(&self) -> usize {
        self.signature_offset
    }

    /// Offset of the UDP checksum field and its value with sequence and timestamp zero.
    pub fn udp_checksum(&self) -> (usize, u16) {
        (self.udp_checksum_offset, self.udp_checksum_base)
    }

    /// Writes sequence number `seq`, send time `timestamp_ns` and (IPv4) identification
    /// `seq as u16` into `frame`, a copy of [`bytes`](Self::bytes) (only the stamped fields
    /// and checksums are written, so a buffer that held an earlier stamp of the same template
    /// is fine), and patches the UDP and IPv4 checksums incrementally.
    #[inline]
    pub fn stamp(&self, frame: &mut [u8], seq: u64, timestamp_ns: u64) {
        let sig = self.signature_offset;
        let seq32 = (seq as u32).to_be_bytes();
        let ts = timestamp_ns.to_be_bytes();
        frame[sig + signature::SEQ_OFFSET..sig + signature::SEQ_OFFSET + 4].copy_from_slice(&seq32);
        frame[sig + signature::TIMESTAMP_OFFSET..sig + signature::TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&ts);
        // Base had zeros in these words; RFC 1624 reduces to adding the new words.
        let added = checksum::sum(&seq32) + checksum::sum(&ts);
        let udp =
            checksum::udp_nonzero(!checksum::fold(u64::from(!self.udp_checksum_base) + added));
        frame[self.udp_checksum_offset..self.udp_checksum_offset + 2]
            .copy_from_slice(&udp.to_be_bytes());
        if let Some((ident_at, csum_at, base)) = self.ipv4 {
            let ident = seq as u16;
            frame[ident_at..ident_at + 2].copy_from_slice(&ident.to_be_bytes());
            let c = !checksum::fold(u64::from(!base) + u64::from(ident));
            frame[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
        }
    }
}

/// Checks that the spec's values fit its encapsulation before any byte is written.
fn validate(spec: &StreamSpec) -> Result<(), TemplateError> {
    let e = spec.encap;
    let bad = |m: String| Err(TemplateError::Invalid(m));
    match (e.ip, spec.src_ip, spec.dst_ip) {
        (IpVersion::V4, IpAddr::V4(_), IpAddr::V4(_))
        | (IpVersion::V6, IpAddr::V6(_), IpAddr::V6(_)) => {}
        _ => {
            return bad(format!(
                "source {} and destination {} must both be {} addresses for encapsulation {e}",
                spec.src_ip, spec.dst_ip, e.ip
            ))
        }
    }
    if spec.vlans.len() != e.tagging.tags() {
        return bad(format!(
            "encapsulation {e} needs {} VLAN tag(s), {} given",
            e.tagging.tags(),
            spec.vlans.len()
        ));
    }
    for v in &spec.vlans {
        if v.vid == 0 || v.vid > crate::vlan::MAX_VID || v.pcp > crate::vlan::MAX_PCP {
            return bad(format!(
                "VLAN id {} / priority {} invalid: ids are 1..4094, priorities 0..7",
                v.vid, v.pcp
            ));
        }
    }
    if spec.mpls.len() != usize::from(e.mpls_labels) {
        return bad(format!(
            "encapsulation {e} needs {} MPLS label(s), {} given",
            e.mpls_labels,
            spec.mpls.len()
        ));
    }
    for l in &spec.mpls {
        if l.label > crate::mpls::MAX_LABEL || l.tc > crate::mpls::MAX_TC {
            return bad(format!(
                "MPLS label {} / TC {} invalid: labels are 0..1048575, TC 0..7",
                l.label, l.tc
            ));
        }
    }
    if e.pppoe && (spec.pppoe_session == 0 || spec.pppoe_session == 0xffff) {
        return bad(format!(
            "PPPoE session id {:#06x} is reserved; use 1..0xfffe",
            spec.pppoe_session
        ));
    }
    if spec.flow_label > 0xf_ffff {
        return bad(format!(
            "IPv6 flow label {:#x} is above 20 bits",
            spec.flow_label
        ));
    }
    if e.tagging == Tagging::QinQ && !crate::vlan::is_tpid(spec.qinq_tpid) {
        return bad(format!(
            "QinQ outer TPID {} must be 0x88a8 or 0x8100",
            spec.qinq_tpid
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    /// A MAP-E frame is DS-Lite's IPv4-in-IPv6 with the CE's and BR's addresses outside: the
    /// same bytes for the same addresses, and the dissector finds the inner IPv4 packet.
    #[test]
    fn mape_builds_dslites_frame_with_its_own_outer_addresses() {
        let ce: Ipv6Addr = "2001:db8:12:3400:0:c612:3400:0".parse().unwrap();
        let br: Ipv6Addr = "2001:db8:ffff::1".parse().unwrap();
        let build = |encap: &str| {
            let mut spec = StreamSpec::new(encap.parse().unwrap());
            spec.src_ip = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 18));
            spec.dst_ip = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 2));
            spec.tunnel_src = ce;
            spec.tunnel_dst = br;
            FrameTemplate::new(&spec, 128).unwrap()
        };
        let (mape, dslite) = (build("mape"), build("dslite"));
        assert_eq!(mape.bytes(), dslite.bytes());
        assert_eq!(mape.bytes().len(), 128 - 4 + 40);
        let d = crate::dissect::dissect(mape.bytes()).unwrap();
        assert_eq!(d.tunnel, Some((ce, br)));
        assert_eq!(d.src, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 18)));
    }
}
