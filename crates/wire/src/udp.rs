//! UDP (RFC 768) with IPv4 and IPv6 pseudo-header checksums.
//!
//! The repr holds only the ports: the length comes from the payload the caller writes, and
//! the checksum needs the IP addresses, so it is filled after the payload is in place
//! ([`UdpPacket::fill_checksum_v4`]/[`UdpPacket::fill_checksum_v6`]).

use crate::bytes::Fields;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::ops::Range;

use crate::checksum;
use crate::error::{Error, Result};

pub const HEADER_LEN: usize = 8;
const PROTOCOL: u8 = 17;

mod field {
    use super::*;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// A read/write view of a UDP datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// The length field must cover the header and fit in the buffer; bytes after it (padding)
    /// are not payload.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < HEADER_LEN {
            return Err(Error::Malformed("udp length below 8"));
        }
        if len < field_len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn src_port(&self) -> u16 {
        self.buffer.u16_at(field::SRC_PORT)
    }

    pub fn dst_port(&self) -> u16 {
        self.buffer.u16_at(field::DST_PORT)
    }

    /// Header + payload length as declared.
    pub fn len(&self) -> u16 {
        self.buffer.u16_at(field::LENGTH)
    }

    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    pub fn checksum(&self) -> u16 {
        self.buffer.u16_at(field::CHECKSUM)
    }

    /// The datagram as declared by the length field, clamped to the buffer so that checksum
    /// code cannot panic on an unchecked view.
    fn datagram(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let n = if b.len() >= HEADER_LEN {
            usize::from(self.len()).min(b.len())
        } else {
            b.len()
        };
        &b[..n]
    }

    /// Zero means "no checksum" over IPv4 and verifies.
    pub fn verify_checksum_v4(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return false;
        }
        if self.checksum() == 0 {
            return true;
        }
        let d = self.datagram();
        checksum::fold(
            checksum::pseudo_header_v4(src, dst, PROTOCOL, d.len() as u16) + checksum::sum(d),
        ) == 0xffff
    }

    /// The checksum is mandatory over IPv6 (RFC 8200 §8.1): zero never verifies.
    pub fn verify_checksum_v6(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        if self.buffer.as_ref().len() < HEADER_LEN || self.checksum() == 0 {
            return false;
        }
        let d = self.datagram();
        checksum::fold(
            checksum::pseudo_header_v6(src, dst, PROTOCOL, d.len() as u32) + checksum::sum(d),
        ) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> UdpPacket<&'a T> {
    /// From the end of the header to the length field.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    fn set_u16_at(&mut self, r: Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_src_port(&mut self, v: u16) {
        self.set_u16_at(field::SRC_PORT, v)
    }

    pub fn set_dst_port(&mut self, v: u16) {
        self.set_u16_at(field::DST_PORT, v)
    }

    pub fn set_len(&mut self, v: u16) {
        self.set_u16_at(field::LENGTH, v)
    }

    pub fn set_checksum(&mut self, v: u16) {
        self.set_u16_at(field::CHECKSUM, v)
    }

    /// Over the header and the payload up to the length field; a computed zero is sent as
    /// 0xffff because zero would mean "none".
    pub fn fill_checksum_v4(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let d = self.datagram();
        let c = !checksum::fold(
            checksum::pseudo_header_v4(src, dst, PROTOCOL, d.len() as u16) + checksum::sum(d),
        );
        self.set_checksum(checksum::udp_nonzero(c));
    }

    pub fn fill_checksum_v6(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let d = self.datagram();
        let c = !checksum::fold(
            checksum::pseudo_header_v6(src, dst, PROTOCOL, d.len() as u32) + checksum::sum(d),
        );
        self.set_checksum(checksum::udp_nonzero(c));
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for UdpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The owned contents of a UDP header: the ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
}

impl UdpRepr {
    /// Structural parse; the checksum is verified separately because it needs the addresses.
    /// Port 0 is accepted: a NAT under test may produce it and the receiver must see it.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &UdpPacket<&T>) -> Result<UdpRepr> {
        packet.check_len()?;
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 8 header bytes with length `8 + payload_len` and checksum 0 (which means
    /// "none" until one of the `fill_checksum_*` methods runs after the payload is written).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut UdpPacket<T>,
        payload_len: usize,
    ) -> Result<()> {
        let len = u16::try_from(HEADER_LEN + payload_len)
            .map_err(|_| Error::Malformed("udp length above 65535"))?;
        if packet.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(len);
        packet.set_checksum(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 192.0.2.1:49152 → 198.51.100.7:7 with payload "wire". Checksum computed by hand:
    // pseudo header c000 + 0201 + c633 + 6407 + 0011 + 000c, header c000 + 0007 + 000c,
    // payload 7769 + 7265 → folded 0x963c, complemented 0x69c3.
    static PACKET_BYTES: [u8; 12] = [
        0xc0, 0x00, 0x00, 0x07, 0x00, 0x0c, 0x69, 0xc3, b'w', b'i', b'r', b'e',
    ];

    fn src() -> Ipv4Addr {
        Ipv4Addr::new(192, 0, 2, 1)
    }

    fn dst() -> Ipv4Addr {
        Ipv4Addr::new(198, 51, 100, 7)
    }

    fn repr() -> UdpRepr {
        UdpRepr {
            src_port: 49152,
            dst_port: 7,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = UdpPacket::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 49152);
        assert_eq!(p.dst_port(), 7);
        assert_eq!(p.len(), 12);
        assert_eq!(p.checksum(), 0x69c3);
        assert_eq!(p.payload(), b"wire");
        assert!(p.verify_checksum_v4(src(), dst()));
        assert!(!p.verify_checksum_v4(src(), Ipv4Addr::new(198, 51, 100, 8)));
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 12];
        let mut p = UdpPacket::new_unchecked(&mut bytes);
        p.set_src_port(49152);
        p.set_dst_port(7);
        p.set_len(12);
        p.set_checksum(0xffff);
        p.payload_mut().copy_from_slice(b"wire");
        p.fill_checksum_v4(src(), dst());
        assert_eq!(&bytes[..], &PACKET_BYTES[..]);
    }

    #[test]
    fn test_parse() {
        let p = UdpPacket::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 12];
        let mut p = UdpPacket::new_unchecked(&mut bytes);
        repr().emit(&mut p, 4).unwrap();
        assert_eq!(p.checksum(), 0);
        p.payload_mut().copy_from_slice(b"wire");
        p.fill_checksum_v4(src(), dst());
        assert_eq!(&bytes[..], &PACKET_BYTES[..]);
        let mut short = [0u8; 7];
        assert_eq!(
            repr().emit(&mut UdpPacket::new_unchecked(&mut short[..]), 0),
            Err(Error::Truncated)
        );
        assert!(matches!(
            repr().emit(&mut UdpPacket::new_unchecked(&mut bytes), 65528),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn zero_checksum_rules() {
        let mut b = PACKET_BYTES;
        b[6] = 0;
        b[7] = 0;
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum_v4(src(), dst()));
        let (s6, d6): (Ipv6Addr, Ipv6Addr) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        assert!(!p.verify_checksum_v6(s6, d6));
        let mut v = b.to_vec();
        let mut p = UdpPacket::new_unchecked(&mut v);
        p.fill_checksum_v6(s6, d6);
        assert!(p.verify_checksum_v6(s6, d6));
        assert!(!p.verify_checksum_v6(d6, d6));
    }

    #[test]
    fn computed_zero_is_sent_as_ffff() {
        // Find a payload word that makes the sum 0xffff, i.e. the checksum 0.
        let mut v = PACKET_BYTES.to_vec();
        let mut p = UdpPacket::new_unchecked(&mut v);
        p.set_checksum(0);
        let partial =
            checksum::pseudo_header_v4(src(), dst(), 17, 12) + checksum::sum(&p.as_ref()[..8]);
        // Payload word w1 such that fold(partial + w1 + w2) == 0xffff with w2 = 0.
        let w1 = 0xffff - checksum::fold(partial);
        p.payload_mut()
            .copy_from_slice(&[(w1 >> 8) as u8, w1 as u8, 0, 0]);
        p.fill_checksum_v4(src(), dst());
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum_v4(src(), dst()));
    }

    #[test]
    fn length_errors() {
        let mut b = PACKET_BYTES;
        b[5] = 7;
        assert!(matches!(
            UdpPacket::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
        b[5] = 13;
        assert_eq!(UdpPacket::new_checked(&b[..]), Err(Error::Truncated));
        assert_eq!(
            UdpPacket::new_checked(&PACKET_BYTES[..7]),
            Err(Error::Truncated)
        );
        // Padding after the declared length is not payload.
        let mut v = PACKET_BYTES.to_vec();
        v.extend([0; 6]);
        assert_eq!(UdpPacket::new_checked(&v[..]).unwrap().payload(), b"wire");
        // Checksums on an unchecked short view don't panic.
        assert!(!UdpPacket::new_unchecked(&PACKET_BYTES[..5]).verify_checksum_v4(src(), dst()));
    }
}
