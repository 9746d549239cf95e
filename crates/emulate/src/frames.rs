//! Building the IPv4, UDP and TCP frames the ISP port's services answer with (DHCPv4, DNS):
//! one place for the header arithmetic, checksums included. IPv6 packets come from
//! [`crate::provision::ipv6_packet`], which the RA and DHCPv6 paths already share.

use core::net::{IpAddr, Ipv4Addr};

use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wire::tcp::{TcpPacket, TcpRepr};
use wire::udp::{UdpPacket, UdpRepr};

/// IP protocol numbers.
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// An Ethernet frame around `payload`.
pub fn ethernet(src: MacAddr, dst: MacAddr, ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let l2 = wire::ethernet::HEADER_LEN;
    let mut f = vec![0u8; l2 + payload.len()];
    let _ = EthernetRepr {
        src,
        dst,
        ethertype,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    f[l2..].copy_from_slice(payload);
    f
}

/// An IPv4 packet (TTL 64, not fragmented, header checksum filled) around `payload`.
pub fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, payload: &[u8]) -> Vec<u8> {
    let l3 = wire::ipv4::HEADER_LEN;
    let mut p = vec![0u8; l3 + payload.len()];
    let _ = Ipv4Repr {
        src,
        dst,
        protocol,
        payload_len: payload.len(),
        ttl: 64,
        tos: 0,
        ident: 0,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut p[..]));
    p[l3..].copy_from_slice(payload);
    p
}

/// An IP packet (IPv4 or IPv6 after `src`/`dst`, which must be of one family) carrying
/// `segment`, whose checksum is already filled.
fn ip_packet(src: IpAddr, dst: IpAddr, protocol: u8, segment: &[u8]) -> Option<Vec<u8>> {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => Some(ipv4(s, d, protocol, segment)),
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            Some(crate::provision::ipv6_packet(s, d, protocol, 64, segment))
        }
        _ => None,
    }
}

/// A UDP datagram from `src:sport` to `dst:dport` in IPv4 or IPv6, checksummed.
pub fn udp(src: IpAddr, sport: u16, dst: IpAddr, dport: u16, payload: &[u8]) -> Option<Vec<u8>> {
    let mut seg = vec![0u8; wire::udp::HEADER_LEN + payload.len()];
    let mut u = UdpPacket::new_unchecked(&mut seg[..]);
    UdpRepr {
        src_port: sport,
        dst_port: dport,
    }
    .emit(&mut u, payload.len())
    .ok()?;
    u.payload_mut().copy_from_slice(payload);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => u.fill_checksum_v4(s, d),
        (IpAddr::V6(s), IpAddr::V6(d)) => u.fill_checksum_v6(s, d),
        _ => return None,
    }
    ip_packet(src, dst, PROTO_UDP, &seg)
}

/// A TCP segment with `header` and `payload` from `src` to `dst`, checksummed.
pub fn tcp(src: IpAddr, dst: IpAddr, header: &TcpRepr, payload: &[u8]) -> Option<Vec<u8>> {
    let hl = header.buffer_len();
    let mut seg = vec![0u8; hl + payload.len()];
    let mut t = TcpPacket::new_unchecked(&mut seg[..]);
    header.emit(&mut t).ok()?;
    t.payload_mut().copy_from_slice(payload);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => t.fill_checksum_v4(s, d),
        (IpAddr::V6(s), IpAddr::V6(d)) => t.fill_checksum_v6(s, d),
        _ => return None,
    }
    ip_packet(src, dst, PROTO_TCP, &seg)
}

/// The EtherType of an IP packet by its version nibble.
pub fn ethertype_of(packet: &[u8]) -> EtherType {
    if packet.first().is_some_and(|b| b >> 4 == 6) {
        EtherType::IPV6
    } else {
        EtherType::IPV4
    }
}

/// An IP packet in an Ethernet frame, as the services read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpFrame<'a> {
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// IPv4 protocol or IPv6 next header (no extension headers are walked).
    pub protocol: u8,
    /// A fragment (IPv4 MF or offset; IPv6 fragment header): not for the services.
    pub fragment: bool,
    /// The IP packet (header included), and the transport segment after its header.
    pub packet: &'a [u8],
    pub segment: &'a [u8],
}

/// Reads an Ethernet frame carrying IPv4 or IPv6 (`None` for anything else or broken
/// headers; never panics).
pub fn parse_ip(frame: &[u8]) -> Option<IpFrame<'_>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let e = EthernetRepr::parse(&eth).ok()?;
    let payload = eth.payload();
    match e.ethertype {
        EtherType::IPV4 => {
            let ip = Ipv4Packet::new_checked(payload).ok()?;
            let r = Ipv4Repr::parse(&ip).ok()?;
            if !ip.verify_checksum() {
                return None;
            }
            let total = usize::from(ip.total_len());
            Some(IpFrame {
                src_mac: e.src,
                dst_mac: e.dst,
                src: r.src.into(),
                dst: r.dst.into(),
                protocol: r.protocol,
                fragment: r.more_frags || r.frag_offset != 0,
                packet: &payload[..total],
                segment: ip.payload(),
            })
        }
        EtherType::IPV6 => {
            let ip = wire::ipv6::Ipv6Packet::new_checked(payload).ok()?;
            let r = wire::ipv6::Ipv6Repr::parse(&ip).ok()?;
            let total = wire::ipv6::HEADER_LEN + usize::from(ip.payload_len());
            Some(IpFrame {
                src_mac: e.src,
                dst_mac: e.dst,
                src: r.src.into(),
                dst: r.dst.into(),
                protocol: r.next_header,
                fragment: r.next_header == 44,
                packet: &payload[..total],
                segment: ip.payload(),
            })
        }
        _ => None,
    }
}
