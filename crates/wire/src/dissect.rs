//! Walks a received frame through any encapsulation wirerate builds (tags, MPLS, PPPoE,
//! DS-Lite, IPv4/IPv6 with options or extension headers) to its UDP payload, where the
//! signature sits. The receive path classifies frames with it; tests verify templates with it.
//!
//! It never panics and never allocates; anything it cannot follow is an error, which a
//! receiver counts as "not ours".

use core::net::{IpAddr, Ipv6Addr};

use crate::ethernet::{EtherType, EthernetFrame};
use crate::ipv4::Ipv4Packet;
use crate::ipv6::{walk_extension_headers, Ipv6Packet};
use crate::ppp::Protocol;
use crate::pppoe::{PppoeCode, PppoeHeader};
use crate::signature::Signature;
use crate::vlan::{is_tpid, VlanTag};
use crate::{Error, Result};

const IPPROTO_UDP: u8 = 17;
const IPPROTO_IPIP: u8 = 4;
const MAX_TAGS: usize = 2;

/// Where things are in a frame and what the outer layers said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dissection {
    /// VLAN ids, outermost first (0 = absent).
    pub vlan_ids: [u16; MAX_TAGS],
    pub vlan_count: u8,
    pub mpls_labels: u8,
    pub top_label: Option<u32>,
    pub pppoe_session: Option<u16>,
    /// DS-Lite: the outer IPv6 source and destination.
    pub tunnel: Option<(Ipv6Addr, Ipv6Addr)>,
    pub tunnel_encap_limit: Option<u8>,
    /// Offset of the test packet's IP header.
    pub ip_offset: usize,
    /// Offset of the first IP header of the frame: the outer IPv6 header for DS-Lite, else
    /// [`ip_offset`](Self::ip_offset).
    pub outer_ip_offset: usize,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// Upper-layer protocol of the test packet.
    pub protocol: u8,
    /// True for any IP fragment; only a first fragment has a transport header.
    pub fragment: bool,
    /// Offset of the UDP header, when the packet is UDP and not a non-first fragment.
    pub udp_offset: Option<usize>,
}

impl Dissection {
    /// Offset of the UDP payload (where the signature sits), if there is one.
    pub fn udp_payload_offset(&self) -> Option<usize> {
        self.udp_offset.map(|o| o + crate::encap::UDP_HEADER)
    }
}

/// Follows `frame` from Ethernet to the test packet's transport header.
pub fn dissect(frame: &[u8]) -> Result<Dissection> {
    let eth = EthernetFrame::new_checked(frame)?;
    let mut d = Dissection {
        vlan_ids: [0; MAX_TAGS],
        vlan_count: 0,
        mpls_labels: 0,
        top_label: None,
        pppoe_session: None,
        tunnel: None,
        tunnel_encap_limit: None,
        ip_offset: 0,
        outer_ip_offset: 0,
        src: IpAddr::V4(core::net::Ipv4Addr::UNSPECIFIED),
        dst: IpAddr::V4(core::net::Ipv4Addr::UNSPECIFIED),
        protocol: 0,
        fragment: false,
        udp_offset: None,
    };
    let mut ethertype = eth.ethertype();
    let mut at = crate::ethernet::HEADER_LEN;
    while is_tpid(ethertype) {
        if usize::from(d.vlan_count) == MAX_TAGS {
            return Err(Error::Unsupported("more than two VLAN tags"));
        }
        let tag = VlanTag::new_checked(frame.get(at..).ok_or(Error::Truncated)?)?;
        d.vlan_ids[usize::from(d.vlan_count)] = tag.vid();
        d.vlan_count += 1;
        ethertype = tag.ethertype();
        at += crate::vlan::HEADER_LEN;
    }
    // What the next bytes are: an IP version, or "look at the first nibble" after MPLS.
    let mut next = ethertype;
    if ethertype == EtherType::MPLS {
        let stack = crate::mpls::parse_stack(frame.get(at..).ok_or(Error::Truncated)?)?;
        d.mpls_labels = stack.labels().len() as u8;
        d.top_label = stack.labels().first().map(|l| l.label);
        at += stack.payload_offset();
        next = match frame.get(at).map(|b| b >> 4) {
            Some(4) => EtherType::IPV4,
            Some(6) => EtherType::IPV6,
            _ => return Err(Error::Unsupported("MPLS payload is neither IPv4 nor IPv6")),
        };
    } else if ethertype == EtherType::PPPOE_SESSION {
        let hdr = PppoeHeader::new_checked(frame.get(at..).ok_or(Error::Truncated)?)?;
        if hdr.code() != PppoeCode::Session {
            return Err(Error::Malformed(
                "PPPoE session frame with a discovery code",
            ));
        }
        d.pppoe_session = Some(hdr.session_id());
        next = match hdr.ppp_protocol()? {
            Protocol::IPV4 => EtherType::IPV4,
            Protocol::IPV6 => EtherType::IPV6,
            _ => return Err(Error::Unsupported("PPP protocol other than IPv4/IPv6")),
        };
        at += crate::pppoe::SESSION_HEADER_LEN;
    }
    d.outer_ip_offset = at;
    if next == EtherType::IPV6 {
        let pkt = Ipv6Packet::new_checked(frame.get(at..).ok_or(Error::Truncated)?)?;
        let ext = walk_extension_headers(pkt.next_header(), pkt.payload())?;
        let l4 = at + crate::encap::IPV6_HEADER + ext.offset;
        if ext.upper_protocol == IPPROTO_IPIP && ext.fragment.is_none() {
            // DS-Lite: the test packet is the IPv4 packet inside.
            d.tunnel = Some((pkt.src_addr(), pkt.dst_addr()));
            d.tunnel_encap_limit = ext.tunnel_encap_limit;
            return ipv4(frame, l4, d);
        }
        d.ip_offset = at;
        d.src = pkt.src_addr().into();
        d.dst = pkt.dst_addr().into();
        d.protocol = ext.upper_protocol;
        d.fragment = ext.fragment.is_some();
        let first_fragment = ext.fragment.is_none_or(|f| f.offset == 0);
        if ext.upper_protocol == IPPROTO_UDP && first_fragment {
            d.udp_offset = Some(l4);
        }
        return Ok(d);
    }
    if next == EtherType::IPV4 {
        return ipv4(frame, at, d);
    }
    Err(Error::Unsupported("not an IP frame"))
}

fn ipv4(frame: &[u8], at: usize, mut d: Dissection) -> Result<Dissection> {
    let pkt = Ipv4Packet::new_checked(frame.get(at..).ok_or(Error::Truncated)?)?;
    d.ip_offset = at;
    d.src = pkt.src_addr().into();
    d.dst = pkt.dst_addr().into();
    d.protocol = pkt.protocol();
    d.fragment = pkt.more_frags() || pkt.frag_offset() != 0;
    if d.protocol == IPPROTO_UDP && pkt.frag_offset() == 0 {
        d.udp_offset = Some(at + pkt.header_len());
    }
    Ok(d)
}

/// The signature of a test frame, if `frame` is one of ours.
pub fn signature(frame: &[u8]) -> Option<(Dissection, Signature<&[u8]>)> {
    let d = dissect(frame).ok()?;
    let sig = Signature::new_checked(frame.get(d.udp_payload_offset()?..)?).ok()?;
    Some((d, sig))
}
