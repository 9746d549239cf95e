//! IPv6 (RFC 8200), its extension-header chain, and the two extension headers DS-Lite needs to
//! emit: the Destination Options header carrying a Tunnel Encapsulation Limit (RFC 2473 §5.1)
//! and the Fragment header.

use core::net::Ipv6Addr;
use core::ops::Range;

use crate::error::{Error, Result};

/// Fixed header.
pub const HEADER_LEN: usize = 40;

pub const NEXT_HEADER_HOP_BY_HOP: u8 = 0;
/// IPv4-in-IPv6 (DS-Lite, RFC 6333).
pub const NEXT_HEADER_IPV4: u8 = 4;
pub const NEXT_HEADER_TCP: u8 = 6;
pub const NEXT_HEADER_UDP: u8 = 17;
pub const NEXT_HEADER_ROUTING: u8 = 43;
pub const NEXT_HEADER_FRAGMENT: u8 = 44;
pub const NEXT_HEADER_AH: u8 = 51;
pub const NEXT_HEADER_ICMPV6: u8 = 58;
pub const NEXT_HEADER_NO_NEXT: u8 = 59;
pub const NEXT_HEADER_DEST_OPTS: u8 = 60;

/// Destination option type of the Tunnel Encapsulation Limit (RFC 2473 §5.1).
pub const OPT_TUNNEL_ENCAP_LIMIT: u8 = 4;
const OPT_PAD1: u8 = 0;
const OPT_PADN: u8 = 1;

mod field {
    use super::*;
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Range<usize> = 8..24;
    pub const DST_ADDR: Range<usize> = 24..40;
}

/// A read/write view of an IPv6 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// The buffer may extend past the payload length (Ethernet padding). Jumbograms
    /// (payload length 0 with a Jumbo Payload option) are not supported: their payload reads
    /// as empty.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < HEADER_LEN + usize::from(self.payload_len()) {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn first_word(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    pub fn version(&self) -> u8 {
        (self.first_word() >> 28) as u8
    }

    /// DSCP << 2 | ECN, like IPv4's ToS byte.
    pub fn traffic_class(&self) -> u8 {
        (self.first_word() >> 20) as u8
    }

    /// 20-bit flow label.
    pub fn flow_label(&self) -> u32 {
        self.first_word() & 0x000f_ffff
    }

    pub fn payload_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }

    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXT_HDR]
    }

    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    pub fn src_addr(&self) -> Ipv6Addr {
        addr(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    pub fn dst_addr(&self) -> Ipv6Addr {
        addr(&self.buffer.as_ref()[field::DST_ADDR])
    }
}

fn addr(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(b);
    Ipv6Addr::from(a)
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv6Packet<&'a T> {
    /// The payload-length bytes after the fixed header, extension headers included.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    fn set_first_word(&mut self, v: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&v.to_be_bytes());
    }

    /// Only the low 4 bits are used.
    pub fn set_version(&mut self, v: u8) {
        let w = self.first_word();
        self.set_first_word((w & 0x0fff_ffff) | (u32::from(v & 0x0f) << 28));
    }

    pub fn set_traffic_class(&mut self, v: u8) {
        let w = self.first_word();
        self.set_first_word((w & 0xf00f_ffff) | (u32::from(v) << 20));
    }

    /// Only the low 20 bits are used.
    pub fn set_flow_label(&mut self, v: u32) {
        let w = self.first_word();
        self.set_first_word((w & 0xfff0_0000) | (v & 0x000f_ffff));
    }

    pub fn set_payload_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::NXT_HDR] = v;
    }

    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets());
    }

    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv6Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The owned contents of the fixed IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    /// The header that follows: an extension header or the upper-layer protocol.
    pub next_header: u8,
    /// Bytes after the fixed header, extension headers included.
    pub payload_len: usize,
    pub hop_limit: u8,
    pub traffic_class: u8,
    /// 20 bits.
    pub flow_label: u32,
}

impl Ipv6Repr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Ipv6Packet<&T>) -> Result<Ipv6Repr> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::Malformed("ip version is not 6"));
        }
        Ok(Ipv6Repr {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 40 header bytes; the buffer needs room for the header only.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) -> Result<()> {
        let len = u16::try_from(self.payload_len).map_err(|_| {
            Error::Malformed("ipv6 payload length above 65535 (jumbograms unsupported)")
        })?;
        if self.flow_label > 0x000f_ffff {
            return Err(Error::Malformed("ipv6 flow label above 20 bits"));
        }
        if packet.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        packet.set_first_word((6 << 28) | (u32::from(self.traffic_class) << 20) | self.flow_label);
        packet.set_payload_len(len);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src);
        packet.set_dst_addr(self.dst);
        Ok(())
    }
}

/// What a Fragment header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentInfo {
    /// In bytes (a multiple of 8).
    pub offset: u16,
    pub more: bool,
    pub ident: u32,
}

/// The result of walking the extension-header chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtHeaders {
    /// The first header that is not an extension header walked here (59 = no next header).
    /// After a non-first fragment it is the Fragment header's next header, but what follows is
    /// fragment data, not that header.
    pub upper_protocol: u8,
    /// Offset of that header from the start of the IPv6 payload.
    pub offset: usize,
    /// The value of a Tunnel Encapsulation Limit destination option, if present.
    pub tunnel_encap_limit: Option<u8>,
    /// Present if a Fragment header was walked.
    pub fragment: Option<FragmentInfo>,
}

/// Walks Hop-by-Hop, Routing, Fragment, Destination Options and AH headers at the start of
/// `payload` (the IPv6 payload), starting from the fixed header's `next_header`.
///
/// Stops at the first other header, and right after a Fragment header whose offset is not zero
/// (the rest is a slice of the original payload). Every length is checked against the buffer:
/// an overrun is `Truncated`, a Hop-by-Hop header anywhere but first or a malformed option in a
/// Destination Options header is `Malformed`.
pub fn walk_extension_headers(next_header: u8, payload: &[u8]) -> Result<ExtHeaders> {
    let mut out = ExtHeaders {
        upper_protocol: next_header,
        offset: 0,
        tunnel_encap_limit: None,
        fragment: None,
    };
    loop {
        let rest = payload.get(out.offset..).ok_or(Error::Truncated)?;
        let len = match out.upper_protocol {
            NEXT_HEADER_HOP_BY_HOP | NEXT_HEADER_ROUTING | NEXT_HEADER_DEST_OPTS => {
                if out.upper_protocol == NEXT_HEADER_HOP_BY_HOP && out.offset != 0 {
                    return Err(Error::Malformed("ipv6 hop-by-hop header not first"));
                }
                let hdr_ext_len = *rest.get(1).ok_or(Error::Truncated)?;
                let len = (usize::from(hdr_ext_len) + 1) * 8;
                let hdr = rest.get(..len).ok_or(Error::Truncated)?;
                if out.upper_protocol == NEXT_HEADER_DEST_OPTS {
                    if let Some(limit) = find_tunnel_encap_limit(&hdr[2..])? {
                        out.tunnel_encap_limit = Some(limit);
                    }
                }
                len
            }
            NEXT_HEADER_FRAGMENT => {
                let frag = FragmentRepr::parse(rest)?;
                out.fragment = Some(FragmentInfo {
                    offset: frag.frag_offset,
                    more: frag.more_frags,
                    ident: frag.ident,
                });
                if frag.frag_offset != 0 {
                    out.upper_protocol = frag.next_header;
                    out.offset += FragmentRepr::HEADER_LEN;
                    return Ok(out);
                }
                FragmentRepr::HEADER_LEN
            }
            NEXT_HEADER_AH => {
                // RFC 4302 §2.2: length in 4-byte units, minus 2.
                let payload_len = *rest.get(1).ok_or(Error::Truncated)?;
                let len = (usize::from(payload_len) + 2) * 4;
                rest.get(..len).ok_or(Error::Truncated)?;
                len
            }
            _ => return Ok(out),
        };
        // Every walked header starts with its next header field, which exists: len >= 8.
        out.upper_protocol = rest[0];
        out.offset += len;
    }
}

/// Looks for option type 4 in the TLV area of a Destination Options header.
fn find_tunnel_encap_limit(mut opts: &[u8]) -> Result<Option<u8>> {
    let mut found = None;
    while let Some(&kind) = opts.first() {
        if kind == OPT_PAD1 {
            opts = &opts[1..];
            continue;
        }
        let len = usize::from(
            *opts
                .get(1)
                .ok_or(Error::Malformed("ipv6 option overruns its header"))?,
        );
        let data = opts
            .get(2..2 + len)
            .ok_or(Error::Malformed("ipv6 option overruns its header"))?;
        if kind == OPT_TUNNEL_ENCAP_LIMIT {
            match data {
                [limit] => found = Some(*limit),
                _ => {
                    return Err(Error::Malformed(
                        "tunnel encapsulation limit option length is not 1",
                    ))
                }
            }
        }
        opts = &opts[2 + len..];
    }
    Ok(found)
}

/// A Destination Options header holding only a Tunnel Encapsulation Limit, as an RFC 2473
/// tunnel entry point (a DS-Lite B4 or AFTR) inserts it.
///
/// ```text
/// | next header | 0 | 4 | 1 | limit | 1 | 1 | 0 |   (PadN pads to 8 bytes)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TunnelEncapLimitRepr {
    pub next_header: u8,
    pub limit: u8,
}

impl TunnelEncapLimitRepr {
    pub const HEADER_LEN: usize = 8;

    /// Accepts any well-formed Destination Options header that carries the option.
    pub fn parse(buffer: &[u8]) -> Result<TunnelEncapLimitRepr> {
        let next_header = *buffer.first().ok_or(Error::Truncated)?;
        let len = (usize::from(*buffer.get(1).ok_or(Error::Truncated)?) + 1) * 8;
        let hdr = buffer.get(..len).ok_or(Error::Truncated)?;
        match find_tunnel_encap_limit(&hdr[2..])? {
            Some(limit) => Ok(TunnelEncapLimitRepr { next_header, limit }),
            None => Err(Error::Malformed("no tunnel encapsulation limit option")),
        }
    }

    pub const fn buffer_len(&self) -> usize {
        Self::HEADER_LEN
    }

    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        let b = buffer.get_mut(..Self::HEADER_LEN).ok_or(Error::Truncated)?;
        b.copy_from_slice(&[
            self.next_header,
            0,
            OPT_TUNNEL_ENCAP_LIMIT,
            1,
            self.limit,
            OPT_PADN,
            1,
            0,
        ]);
        Ok(())
    }
}

/// The IPv6 Fragment header (RFC 8200 §4.5).
///
/// ```text
/// | next header | reserved | offset (13 bits) | res (2) | M | identification (32) |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentRepr {
    pub next_header: u8,
    /// In bytes; a multiple of 8, at most 65528.
    pub frag_offset: u16,
    pub more_frags: bool,
    pub ident: u32,
}

impl FragmentRepr {
    pub const HEADER_LEN: usize = 8;

    /// Reserved bits are ignored, as RFC 8200 asks of receivers.
    pub fn parse(buffer: &[u8]) -> Result<FragmentRepr> {
        let b = buffer.get(..Self::HEADER_LEN).ok_or(Error::Truncated)?;
        let off = u16::from_be_bytes([b[2], b[3]]);
        Ok(FragmentRepr {
            next_header: b[0],
            frag_offset: off & 0xfff8,
            more_frags: off & 1 != 0,
            ident: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        Self::HEADER_LEN
    }

    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        if self.frag_offset & 7 != 0 {
            return Err(Error::Malformed("ipv6 fragment offset not a multiple of 8"));
        }
        let b = buffer.get_mut(..Self::HEADER_LEN).ok_or(Error::Truncated)?;
        let off = self.frag_offset | u16::from(self.more_frags);
        b[0] = self.next_header;
        b[1] = 0;
        b[2..4].copy_from_slice(&off.to_be_bytes());
        b[4..8].copy_from_slice(&self.ident.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2001:db8::1 → 2001:db8::2, TC 0xb8 (EF), flow 0x12345, UDP, hop limit 64, 4-byte payload.
    static PACKET_BYTES: [u8; 44] = [
        0x6b, 0x81, 0x23, 0x45, 0x00, 0x04, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xde, 0xad, 0xbe, 0xef,
    ];

    fn src() -> Ipv6Addr {
        "2001:db8::1".parse().unwrap()
    }

    fn dst() -> Ipv6Addr {
        "2001:db8::2".parse().unwrap()
    }

    fn repr() -> Ipv6Repr {
        Ipv6Repr {
            src: src(),
            dst: dst(),
            next_header: NEXT_HEADER_UDP,
            payload_len: 4,
            hop_limit: 64,
            traffic_class: 0xb8,
            flow_label: 0x12345,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Ipv6Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 4);
        assert_eq!(p.next_header(), NEXT_HEADER_UDP);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), src());
        assert_eq!(p.dst_addr(), dst());
        assert_eq!(p.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 44];
        let mut p = Ipv6Packet::new_unchecked(&mut bytes);
        p.set_version(6);
        p.set_traffic_class(0xb8);
        p.set_flow_label(0x12345);
        p.set_payload_len(4);
        p.set_next_header(NEXT_HEADER_UDP);
        p.set_hop_limit(64);
        p.set_src_addr(src());
        p.set_dst_addr(dst());
        p.payload_mut().copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(&bytes[..], &PACKET_BYTES[..]);
    }

    #[test]
    fn test_parse() {
        let p = Ipv6Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 44];
        repr()
            .emit(&mut Ipv6Packet::new_unchecked(&mut bytes))
            .unwrap();
        bytes[40..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(&bytes[..], &PACKET_BYTES[..]);
    }

    #[test]
    fn header_errors() {
        assert_eq!(
            Ipv6Packet::new_checked(&PACKET_BYTES[..43]),
            Err(Error::Truncated)
        );
        assert_eq!(
            Ipv6Packet::new_checked(&PACKET_BYTES[..39]),
            Err(Error::Truncated)
        );
        let mut b = PACKET_BYTES;
        b[0] = 0x4b;
        assert!(matches!(
            Ipv6Repr::parse(&Ipv6Packet::new_unchecked(&b[..])),
            Err(Error::Malformed(_))
        ));
        let mut out = [0u8; 40];
        let big = Ipv6Repr {
            payload_len: 70000,
            ..repr()
        };
        assert!(matches!(
            big.emit(&mut Ipv6Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed(_))
        ));
        let fl = Ipv6Repr {
            flow_label: 1 << 20,
            ..repr()
        };
        assert!(matches!(
            fl.emit(&mut Ipv6Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            repr().emit(&mut Ipv6Packet::new_unchecked(&mut out[..39])),
            Err(Error::Truncated)
        );
    }

    // A DS-Lite packet's extension part: Destination Options with the encapsulation limit,
    // then IPv4 (first byte of the inner header shown).
    static DEST_OPTS_BYTES: [u8; 9] = [0x04, 0x00, 0x04, 0x01, 0x04, 0x01, 0x01, 0x00, 0x45];

    #[test]
    fn tunnel_encap_limit_option() {
        let r = TunnelEncapLimitRepr {
            next_header: NEXT_HEADER_IPV4,
            limit: 4,
        };
        let mut b = vec![0xa5; 8];
        r.emit(&mut b).unwrap();
        assert_eq!(&b[..], &DEST_OPTS_BYTES[..8]);
        assert_eq!(TunnelEncapLimitRepr::parse(&DEST_OPTS_BYTES), Ok(r));
        assert_eq!(r.emit(&mut b[..7]), Err(Error::Truncated));
        let ext = walk_extension_headers(NEXT_HEADER_DEST_OPTS, &DEST_OPTS_BYTES).unwrap();
        assert_eq!(
            ext,
            ExtHeaders {
                upper_protocol: NEXT_HEADER_IPV4,
                offset: 8,
                tunnel_encap_limit: Some(4),
                fragment: None
            }
        );
        // Only padding: parses as a header but has no limit.
        let pad_only = [0x04, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00];
        assert!(matches!(
            TunnelEncapLimitRepr::parse(&pad_only),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            walk_extension_headers(NEXT_HEADER_DEST_OPTS, &pad_only)
                .unwrap()
                .tunnel_encap_limit,
            None
        );
    }

    static FRAG_BYTES: [u8; 8] = [0x11, 0x00, 0x05, 0xc9, 0x12, 0x34, 0x56, 0x78];

    #[test]
    fn fragment_header() {
        let r = FragmentRepr {
            next_header: NEXT_HEADER_UDP,
            frag_offset: 1480,
            more_frags: true,
            ident: 0x12345678,
        };
        assert_eq!(FragmentRepr::parse(&FRAG_BYTES), Ok(r));
        let mut b = vec![0xa5; 8];
        r.emit(&mut b).unwrap();
        assert_eq!(&b[..], &FRAG_BYTES[..]);
        assert_eq!(FragmentRepr::parse(&FRAG_BYTES[..7]), Err(Error::Truncated));
        let bad = FragmentRepr {
            frag_offset: 1,
            ..r
        };
        assert!(matches!(bad.emit(&mut b), Err(Error::Malformed(_))));
        // A non-first fragment stops the walk right after the fragment header.
        let ext = walk_extension_headers(NEXT_HEADER_FRAGMENT, &FRAG_BYTES).unwrap();
        assert_eq!(ext.upper_protocol, NEXT_HEADER_UDP);
        assert_eq!(ext.offset, 8);
        assert_eq!(
            ext.fragment,
            Some(FragmentInfo {
                offset: 1480,
                more: true,
                ident: 0x12345678
            })
        );
    }

    #[test]
    fn walk_chain() {
        // Hop-by-hop (PadN) → Routing (16 bytes) → Fragment (first) → AH (12 bytes) → Dest
        // opts with limit → UDP.
        let mut b = vec![];
        b.extend([NEXT_HEADER_ROUTING, 0, 1, 4, 0, 0, 0, 0]);
        b.extend([
            NEXT_HEADER_FRAGMENT,
            1,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ]);
        b.extend([NEXT_HEADER_AH, 0, 0x00, 0x01, 0, 0, 0, 9]);
        b.extend([NEXT_HEADER_DEST_OPTS, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        b.extend([NEXT_HEADER_UDP, 0, 0, 0, 0x04, 0x01, 0x07, 0x00]);
        b.extend([0xaa; 8]);
        let ext = walk_extension_headers(NEXT_HEADER_HOP_BY_HOP, &b).unwrap();
        assert_eq!(ext.upper_protocol, NEXT_HEADER_UDP);
        assert_eq!(ext.offset, 52);
        assert_eq!(ext.tunnel_encap_limit, Some(7));
        assert_eq!(
            ext.fragment,
            Some(FragmentInfo {
                offset: 0,
                more: true,
                ident: 9
            })
        );
        // Every truncation of the chain is an error, never a panic.
        for n in 0..52 {
            assert!(
                walk_extension_headers(NEXT_HEADER_HOP_BY_HOP, &b[..n]).is_err(),
                "{n}"
            );
        }
        // No extension headers at all.
        let ext = walk_extension_headers(NEXT_HEADER_TCP, &[]).unwrap();
        assert_eq!((ext.upper_protocol, ext.offset), (NEXT_HEADER_TCP, 0));
        // No next header.
        let ext = walk_extension_headers(
            NEXT_HEADER_DEST_OPTS,
            &[NEXT_HEADER_NO_NEXT, 0, 1, 4, 0, 0, 0, 0],
        )
        .unwrap();
        assert_eq!((ext.upper_protocol, ext.offset), (NEXT_HEADER_NO_NEXT, 8));
    }

    #[test]
    fn walk_errors() {
        // Hop-by-hop after another header.
        let b = [
            NEXT_HEADER_HOP_BY_HOP,
            0,
            1,
            4,
            0,
            0,
            0,
            0,
            NEXT_HEADER_UDP,
            0,
            1,
            4,
            0,
            0,
            0,
            0,
        ];
        assert!(matches!(
            walk_extension_headers(NEXT_HEADER_DEST_OPTS, &b),
            Err(Error::Malformed(_))
        ));
        // Option overrunning its header.
        let b = [NEXT_HEADER_UDP, 0, 0x1e, 0x08, 0, 0, 0, 0];
        assert!(matches!(
            walk_extension_headers(NEXT_HEADER_DEST_OPTS, &b),
            Err(Error::Malformed(_))
        ));
        // Encapsulation limit with the wrong length.
        let b = [NEXT_HEADER_UDP, 0, 0x04, 0x02, 0, 0, 0x01, 0];
        assert!(matches!(
            walk_extension_headers(NEXT_HEADER_DEST_OPTS, &b),
            Err(Error::Malformed(_))
        ));
    }
}
