//! IPv4 (RFC 791).
//!
//! Options are never generated, but a received header with IHL > 5 is accepted: its options
//! are skipped (and exposed by [`Ipv4Packet::options`]) because a DUT may legitimately add
//! them. Parsing is structural; the header checksum is checked by
//! [`Ipv4Packet::verify_checksum`] so that a receiver can count checksum errors separately
//! from frames that are not IPv4 at all.

use crate::bytes::Fields;
use core::net::Ipv4Addr;
use core::ops::Range;

use crate::checksum;
use crate::error::{Error, Result};

/// Header without options.
pub const HEADER_LEN: usize = 20;

pub const IPPROTO_ICMP: u8 = 1;
/// IPv4 carried in IPv4 or in IPv6 (DS-Lite uses it as IPv6 next header, RFC 6333).
pub const IPPROTO_IPIP: u8 = 4;
pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;

mod field {
    use super::*;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC_ADDR: Range<usize> = 12..16;
    pub const DST_ADDR: Range<usize> = 16..20;
}

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// After this succeeds no getter, `options()` or `payload()` can panic.
    ///
    /// The buffer may be longer than the total length (Ethernet padding of short frames); the
    /// payload ends at the total length.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed("ipv4 ihl below 5"));
        }
        if (self.total_len() as usize) < header_len {
            return Err(Error::Malformed("ipv4 total length below header length"));
        }
        if len < self.total_len() as usize {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The whole former ToS byte: DSCP (6 bits) and ECN (2 bits).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    pub fn ecn(&self) -> u8 {
        self.tos() & 3
    }

    pub fn total_len(&self) -> u16 {
        self.buffer.u16_at(field::LENGTH)
    }

    pub fn ident(&self) -> u16 {
        self.buffer.u16_at(field::IDENT)
    }

    pub fn dont_frag(&self) -> bool {
        self.buffer.u16_at(field::FLG_OFF) & FLAG_DF != 0
    }

    pub fn more_frags(&self) -> bool {
        self.buffer.u16_at(field::FLG_OFF) & FLAG_MF != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (self.buffer.u16_at(field::FLG_OFF) & 0x1fff) << 3
    }

    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    pub fn checksum(&self) -> u16 {
        self.buffer.u16_at(field::CHECKSUM)
    }

    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Whether the header checksum verifies. False (not a panic) if the header does not fit.
    pub fn verify_checksum(&self) -> bool {
        if self.buffer.as_ref().is_empty() {
            return false;
        }
        match self.buffer.as_ref().get(..self.header_len()) {
            Some(h) if h.len() >= HEADER_LEN => checksum::verifies(h),
            _ => false,
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv4Packet<&'a T> {
    /// The option bytes between the fixed header and the payload (empty when IHL = 5).
    pub fn options(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// From the end of the header to the total length (Ethernet padding excluded).
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    fn set_u16_at(&mut self, r: Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    /// Only the low 4 bits are used.
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// `len` in bytes; must be a multiple of 4 between 20 and 60.
    pub fn set_header_len(&mut self, len: usize) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) as u8 & 0x0f);
    }

    pub fn set_tos(&mut self, v: u8) {
        self.buffer.as_mut()[field::TOS] = v;
    }

    pub fn set_dscp(&mut self, v: u8) {
        let ecn = self.ecn();
        self.set_tos((v << 2) | ecn);
    }

    pub fn set_ecn(&mut self, v: u8) {
        let tos = self.tos();
        self.set_tos((tos & !3) | (v & 3));
    }

    pub fn set_total_len(&mut self, v: u16) {
        self.set_u16_at(field::LENGTH, v)
    }

    pub fn set_ident(&mut self, v: u16) {
        self.set_u16_at(field::IDENT, v)
    }

    /// Zeroes the reserved flag, DF, MF and the offset; set them afterwards.
    pub fn clear_flags(&mut self) {
        self.set_u16_at(field::FLG_OFF, 0)
    }

    pub fn set_dont_frag(&mut self, v: bool) {
        let f = self.buffer.u16_at(field::FLG_OFF);
        self.set_u16_at(field::FLG_OFF, if v { f | FLAG_DF } else { f & !FLAG_DF })
    }

    pub fn set_more_frags(&mut self, v: bool) {
        let f = self.buffer.u16_at(field::FLG_OFF);
        self.set_u16_at(field::FLG_OFF, if v { f | FLAG_MF } else { f & !FLAG_MF })
    }

    /// `offset` in bytes; the low 3 bits are dropped.
    pub fn set_frag_offset(&mut self, offset: u16) {
        let f = self.buffer.u16_at(field::FLG_OFF);
        self.set_u16_at(field::FLG_OFF, (f & 0xe000) | (offset >> 3))
    }

    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    pub fn set_protocol(&mut self, v: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = v;
    }

    pub fn set_checksum(&mut self, v: u16) {
        self.set_u16_at(field::CHECKSUM, v)
    }

    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets())
    }

    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets())
    }

    /// Computes the header checksum over `header_len()` bytes (options included).
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = self.header_len();
        let c = checksum::checksum(&self.buffer.as_ref()[..hl]);
        self.set_checksum(c);
    }

    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..hl]
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (hl, tl) = (self.header_len(), usize::from(self.total_len()));
        &mut self.buffer.as_mut()[hl..tl]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv4Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The owned contents of an IPv4 header (options are not kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    /// Bytes after the header (total length − header length).
    pub payload_len: usize,
    pub ttl: u8,
    /// DSCP << 2 | ECN.
    pub tos: u8,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// In bytes; a multiple of 8, at most 65528.
    pub frag_offset: u16,
}

impl Ipv4Repr {
    /// Structural parse: version, lengths, reserved flag. The checksum is not checked here
    /// (see the module doc).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Ipv4Packet<&T>) -> Result<Ipv4Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Malformed("ip version is not 4"));
        }
        if packet.u16_at(field::FLG_OFF) & 0x8000 != 0 {
            return Err(Error::Malformed("ipv4 reserved flag set"));
        }
        Ok(Ipv4Repr {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            ttl: packet.ttl(),
            tos: packet.tos(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
        })
    }

    /// The emitted header is always 20 bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 20 header bytes including the checksum. The buffer needs room for the header
    /// only; the payload can be written afterwards (it is not covered by the checksum).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) -> Result<()> {
        let total = HEADER_LEN + self.payload_len;
        let total =
            u16::try_from(total).map_err(|_| Error::Malformed("ipv4 total length above 65535"))?;
        if self.frag_offset & 7 != 0 {
            return Err(Error::Malformed("ipv4 fragment offset not a multiple of 8"));
        }
        if packet.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let b = packet.buffer.as_mut();
        b[field::VER_IHL] = 0x45;
        packet.set_tos(self.tos);
        packet.set_total_len(total);
        packet.set_ident(self.ident);
        packet.clear_flags();
        packet.set_dont_frag(self.dont_frag);
        packet.set_more_frags(self.more_frags);
        packet.set_frag_offset(self.frag_offset);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src);
        packet.set_dst_addr(self.dst);
        packet.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The well-known worked example (Wikipedia, "Internet checksum"): 192.168.0.1 →
    // 192.168.0.199, UDP, DF, TTL 64, total length 0x73 = 115, checksum b861.
    static HEADER_BYTES: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    fn packet_bytes() -> Vec<u8> {
        let mut v = HEADER_BYTES.to_vec();
        v.extend((0..95u8).map(|i| i.wrapping_mul(7)));
        v
    }

    fn repr() -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::new(192, 168, 0, 1),
            dst: Ipv4Addr::new(192, 168, 0, 199),
            protocol: IPPROTO_UDP,
            payload_len: 95,
            ttl: 64,
            tos: 0,
            ident: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        }
    }

    #[test]
    fn test_deconstruct() {
        let bytes = packet_bytes();
        let p = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.tos(), 0);
        assert_eq!(p.total_len(), 115);
        assert_eq!(p.ident(), 0);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), IPPROTO_UDP);
        assert_eq!(p.checksum(), 0xb861);
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert!(p.verify_checksum());
        assert_eq!(p.options(), &[] as &[u8]);
        assert_eq!(p.payload(), &bytes[20..]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 115];
        let mut p = Ipv4Packet::new_unchecked(&mut bytes);
        p.set_version(4);
        p.set_header_len(20);
        p.set_tos(0);
        p.set_total_len(115);
        p.set_ident(0);
        p.clear_flags();
        p.set_dont_frag(true);
        p.set_more_frags(false);
        p.set_frag_offset(0);
        p.set_ttl(64);
        p.set_protocol(IPPROTO_UDP);
        p.set_src_addr(Ipv4Addr::new(192, 168, 0, 1));
        p.set_dst_addr(Ipv4Addr::new(192, 168, 0, 199));
        p.fill_checksum();
        p.payload_mut().copy_from_slice(&packet_bytes()[20..]);
        assert_eq!(bytes, packet_bytes());
    }

    #[test]
    fn test_parse() {
        let bytes = packet_bytes();
        let p = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 20];
        repr()
            .emit(&mut Ipv4Packet::new_unchecked(&mut bytes))
            .unwrap();
        assert_eq!(&bytes[..], &HEADER_BYTES[..]);
    }

    #[test]
    fn fragments_and_dscp() {
        let r = Ipv4Repr {
            dont_frag: false,
            more_frags: true,
            frag_offset: 1480,
            tos: 0xb9,
            ident: 0xbeef,
            ..repr()
        };
        let mut bytes = vec![0xa5; 115];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut bytes)).unwrap();
        let p = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.dscp(), 46); // EF
        assert_eq!(p.ecn(), 1);
        assert_eq!(&bytes[6..8], &[0x20, 0xb9]); // MF | 1480/8 = 185
        assert!(p.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&p), Ok(r));
        let bad = Ipv4Repr {
            frag_offset: 3,
            ..repr()
        };
        assert!(matches!(
            bad.emit(&mut Ipv4Packet::new_unchecked(&mut bytes)),
            Err(Error::Malformed(_))
        ));
        let big = Ipv4Repr {
            payload_len: 65516,
            ..repr()
        };
        assert!(matches!(
            big.emit(&mut Ipv4Packet::new_unchecked(&mut bytes)),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            repr().emit(&mut Ipv4Packet::new_unchecked(&mut bytes[..19])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn options_are_skipped() {
        // IHL 6 with a 4-byte Router Alert option (RFC 2113), 4 bytes of payload.
        let mut bytes = vec![
            0x46, 0x00, 0x00, 0x1c, 0x12, 0x34, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0xc0, 0x00,
            0x02, 0x01, 0xe0, 0x00, 0x00, 0x16, 0x94, 0x04, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef,
        ];
        let mut p = Ipv4Packet::new_unchecked(&mut bytes);
        p.fill_checksum();
        let p = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert_eq!(p.payload(), &[0xde, 0xad, 0xbe, 0xef]);
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(r.payload_len, 4);
        assert_eq!(r.protocol, 2);
    }

    #[test]
    fn malformed_lengths() {
        let mut b = packet_bytes();
        b[0] = 0x44; // IHL 4
        assert!(matches!(
            Ipv4Packet::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
        let mut b = packet_bytes();
        b[2..4].copy_from_slice(&[0x00, 0x13]); // total length 19 < 20
        assert!(matches!(
            Ipv4Packet::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
        let mut b = packet_bytes();
        b[0] = 0x4f; // IHL 15 = 60 bytes, total length 115 is fine, payload 55
        assert_eq!(Ipv4Packet::new_checked(&b[..]).unwrap().payload().len(), 55);
        b[2..4].copy_from_slice(&[0x00, 0x30]); // total 48 < header 60
        assert!(matches!(
            Ipv4Packet::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            Ipv4Packet::new_checked(&packet_bytes()[..114]),
            Err(Error::Truncated)
        );
        assert_eq!(
            Ipv4Packet::new_checked(&packet_bytes()[..19]),
            Err(Error::Truncated)
        );
        let mut b = packet_bytes();
        b[0] = 0x65;
        assert!(matches!(
            Ipv4Repr::parse(&Ipv4Packet::new_unchecked(&b[..])),
            Err(Error::Malformed(_))
        ));
        // Ethernet padding after the total length is not payload.
        let mut b = packet_bytes();
        b.extend([0, 0, 0]);
        assert_eq!(Ipv4Packet::new_checked(&b[..]).unwrap().payload().len(), 95);
        // A bad checksum parses but does not verify.
        let mut b = packet_bytes();
        b[11] ^= 1;
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(!p.verify_checksum());
        assert!(Ipv4Repr::parse(&p).is_ok());
        // Unchecked short views do not panic.
        assert!(!Ipv4Packet::new_unchecked(&[][..]).verify_checksum());
        assert!(!Ipv4Packet::new_unchecked(&b[..10]).verify_checksum());
    }
}
