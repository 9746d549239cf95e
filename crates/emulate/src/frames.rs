//! Building the IPv4, UDP and TCP frames the ISP port's services answer with (DHCPv4, DNS):
//! one place for the header arithmetic, checksums included. IPv6 packets come from
//! [`crate::provision::ipv6_packet`], which the RA and DHCPv6 paths already share.

use core::net::{IpAddr, Ipv4Addr};

use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wire::tcp::{TcpPacket, TcpRepr};
use wire::udp::{UdpPacket, UdpRepr};

/// IP protocol numbers.
pub const PROTO_ICMP: u8 = 1;
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

/// An IPv4 packet (identification `ident`) carrying an ICMP message of type `icmp_type`, code
/// 0, whose bytes after the checksum are `rest`; the ICMP checksum is computed here.
pub fn ipv4_icmp(src: Ipv4Addr, dst: Ipv4Addr, ident: u16, icmp_type: u8, rest: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 24 + rest.len()];
    let _ = Ipv4Repr {
        src,
        dst,
        protocol: PROTO_ICMP,
        payload_len: 4 + rest.len(),
        ttl: 64,
        tos: 0,
        ident,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut p[..]));
    p[20] = icmp_type;
    p[24..].copy_from_slice(rest);
    let c = wire::checksum::checksum(&p[20..]);
    p[22..24].copy_from_slice(&c.to_be_bytes());
    p
}

/// A 36-byte ICMP echo request inside IPv4 (20 + 8 + 8 bytes of "wirerate").
pub fn echo_request(src: Ipv4Addr, dst: Ipv4Addr, ident: u16, seq: u16) -> Vec<u8> {
    let mut rest = [0u8; 12];
    rest[..2].copy_from_slice(&ident.to_be_bytes());
    rest[2..4].copy_from_slice(&seq.to_be_bytes());
    rest[4..].copy_from_slice(b"wirerate");
    ipv4_icmp(src, dst, seq, 8, &rest)
}

/// (source, destination, is_reply, identifier, sequence, ICMP message) of an echo.
pub type Echo<'a> = (Ipv4Addr, Ipv4Addr, bool, u16, u16, &'a [u8]);

/// An unfragmented ICMP echo request/reply with a good checksum.
pub fn parse_echo(packet: &[u8]) -> Option<Echo<'_>> {
    let ip = Ipv4Packet::new_checked(packet).ok()?;
    let r = Ipv4Repr::parse(&ip).ok()?;
    if r.protocol != PROTO_ICMP || r.more_frags || r.frag_offset != 0 {
        return None;
    }
    let icmp = ip.payload();
    if icmp.len() < 8 || icmp[1] != 0 || !wire::checksum::verifies(icmp) {
        return None;
    }
    let reply = match icmp[0] {
        0 => true,
        8 => false,
        _ => return None,
    };
    let id = u16::from_be_bytes([icmp[4], icmp[5]]);
    let seq = u16::from_be_bytes([icmp[6], icmp[7]]);
    Some((r.src, r.dst, reply, id, seq, icmp))
}

/// The answer to an echo request: same identifier, sequence and data.
pub fn echo_reply(src: Ipv4Addr, dst: Ipv4Addr, request: &[u8]) -> Vec<u8> {
    ipv4_icmp(src, dst, 0, 0, request.get(4..).unwrap_or(&[]))
}
