//! ARP (RFC 826), Ethernet/IPv4 only.
//!
//! The view reads the generic layout (address lengths from the header), so that a request for
//! another hardware or protocol type is recognised and refused as `Unsupported` rather than
//! misread; the repr is Ethernet/IPv4 only because that is all the ARP responder answers.

use crate::bytes::Fields;
use core::net::Ipv4Addr;
use core::ops::Range;

use crate::error::{Error, Result};
use crate::ethernet::{EtherType, MacAddr};

/// Hardware type Ethernet (RFC 826 "ares_hrd$Ethernet").
pub const HTYPE_ETHERNET: u16 = 1;
/// Length of an Ethernet/IPv4 ARP packet.
pub const ETHERNET_IPV4_LEN: usize = 28;

mod field {
    use super::*;
    pub const HTYPE: Range<usize> = 0..2;
    pub const PTYPE: Range<usize> = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Range<usize> = 6..8;
    pub const FIXED_LEN: usize = 8;

    pub fn sha(hlen: u8, _plen: u8) -> Range<usize> {
        FIXED_LEN..FIXED_LEN + hlen as usize
    }
    pub fn spa(hlen: u8, plen: u8) -> Range<usize> {
        let s = sha(hlen, plen).end;
        s..s + plen as usize
    }
    pub fn tha(hlen: u8, plen: u8) -> Range<usize> {
        let s = spa(hlen, plen).end;
        s..s + hlen as usize
    }
    pub fn tpa(hlen: u8, plen: u8) -> Range<usize> {
        let s = tha(hlen, plen).end;
        s..s + plen as usize
    }
}

/// A read/write view of an ARP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the fixed part and the four addresses whose lengths it declares.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < field::FIXED_LEN || len < field::tpa(self.hardware_len(), self.protocol_len()).end
        {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn hardware_type(&self) -> u16 {
        self.buffer.u16_at(field::HTYPE)
    }

    pub fn protocol_type(&self) -> EtherType {
        EtherType(self.buffer.u16_at(field::PTYPE))
    }

    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    pub fn operation(&self) -> u16 {
        self.buffer.u16_at(field::OPER)
    }

    pub fn source_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::sha(self.hardware_len(), self.protocol_len())]
    }

    pub fn source_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::spa(self.hardware_len(), self.protocol_len())]
    }

    pub fn target_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::tha(self.hardware_len(), self.protocol_len())]
    }

    pub fn target_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::tpa(self.hardware_len(), self.protocol_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    fn set_u16_at(&mut self, r: Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_hardware_type(&mut self, v: u16) {
        self.set_u16_at(field::HTYPE, v)
    }

    pub fn set_protocol_type(&mut self, v: EtherType) {
        self.set_u16_at(field::PTYPE, v.0)
    }

    /// Set the lengths before the addresses: they decide where the addresses are.
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    pub fn set_operation(&mut self, v: u16) {
        self.set_u16_at(field::OPER, v)
    }

    /// `v` must be `hardware_len()` bytes long.
    pub fn set_source_hardware_addr(&mut self, v: &[u8]) {
        let r = field::sha(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[r].copy_from_slice(v)
    }

    /// `v` must be `protocol_len()` bytes long.
    pub fn set_source_protocol_addr(&mut self, v: &[u8]) {
        let r = field::spa(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[r].copy_from_slice(v)
    }

    pub fn set_target_hardware_addr(&mut self, v: &[u8]) {
        let r = field::tha(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[r].copy_from_slice(v)
    }

    pub fn set_target_protocol_addr(&mut self, v: &[u8]) {
        let r = field::tpa(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[r].copy_from_slice(v)
    }
}

/// ARP opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpOperation {
    Request,
    Reply,
}

impl ArpOperation {
    pub const fn code(self) -> u16 {
        match self {
            ArpOperation::Request => 1,
            ArpOperation::Reply => 2,
        }
    }
}

/// An Ethernet/IPv4 ARP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    pub operation: ArpOperation,
    pub source_mac: MacAddr,
    pub source_ip: Ipv4Addr,
    pub target_mac: MacAddr,
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// `Unsupported` for any hardware/protocol pair other than Ethernet/IPv4 and for opcodes
    /// other than request and reply (RARP, InARP); the responder ignores those.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ArpPacket<&T>) -> Result<ArpRepr> {
        packet.check_len()?;
        if packet.hardware_type() != HTYPE_ETHERNET || packet.hardware_len() != 6 {
            return Err(Error::Unsupported("arp hardware type other than ethernet"));
        }
        if packet.protocol_type() != EtherType::IPV4 || packet.protocol_len() != 4 {
            return Err(Error::Unsupported("arp protocol type other than ipv4"));
        }
        let operation = match packet.operation() {
            1 => ArpOperation::Request,
            2 => ArpOperation::Reply,
            _ => return Err(Error::Unsupported("arp operation other than request/reply")),
        };
        let ip = |b: &[u8]| Ipv4Addr::new(b[0], b[1], b[2], b[3]);
        Ok(ArpRepr {
            operation,
            source_mac: MacAddr::from_slice(packet.source_hardware_addr())?,
            source_ip: ip(packet.source_protocol_addr()),
            target_mac: MacAddr::from_slice(packet.target_hardware_addr())?,
            target_ip: ip(packet.target_protocol_addr()),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        ETHERNET_IPV4_LEN
    }

    /// Writes all 28 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) -> Result<()> {
        if packet.buffer.as_ref().len() < ETHERNET_IPV4_LEN {
            return Err(Error::Truncated);
        }
        packet.set_hardware_type(HTYPE_ETHERNET);
        packet.set_protocol_type(EtherType::IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation.code());
        packet.set_source_hardware_addr(&self.source_mac.0);
        packet.set_source_protocol_addr(&self.source_ip.octets());
        packet.set_target_hardware_addr(&self.target_mac.0);
        packet.set_target_protocol_addr(&self.target_ip.octets());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Who has 192.0.2.1? Tell 192.0.2.2 (02:00:00:00:00:02), laid out per RFC 826.
    static REQUEST_BYTES: [u8; 28] = [
        0x00, 0x01, // hrd: Ethernet
        0x08, 0x00, // pro: IPv4
        0x06, 0x04, // hln, pln
        0x00, 0x01, // op: request
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // sha
        0xc0, 0x00, 0x02, 0x02, // spa
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // tha
        0xc0, 0x00, 0x02, 0x01, // tpa
    ];

    fn repr() -> ArpRepr {
        ArpRepr {
            operation: ArpOperation::Request,
            source_mac: MacAddr([0x02, 0, 0, 0, 0, 0x02]),
            source_ip: Ipv4Addr::new(192, 0, 2, 2),
            target_mac: MacAddr::ZERO,
            target_ip: Ipv4Addr::new(192, 0, 2, 1),
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = ArpPacket::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert_eq!(p.hardware_type(), 1);
        assert_eq!(p.protocol_type(), EtherType::IPV4);
        assert_eq!(p.hardware_len(), 6);
        assert_eq!(p.protocol_len(), 4);
        assert_eq!(p.operation(), 1);
        assert_eq!(p.source_hardware_addr(), &[0x02, 0, 0, 0, 0, 0x02]);
        assert_eq!(p.source_protocol_addr(), &[192, 0, 2, 2]);
        assert_eq!(p.target_hardware_addr(), &[0; 6]);
        assert_eq!(p.target_protocol_addr(), &[192, 0, 2, 1]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 28];
        let mut p = ArpPacket::new_unchecked(&mut bytes);
        p.set_hardware_type(1);
        p.set_protocol_type(EtherType::IPV4);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(1);
        p.set_source_hardware_addr(&[0x02, 0, 0, 0, 0, 0x02]);
        p.set_source_protocol_addr(&[192, 0, 2, 2]);
        p.set_target_hardware_addr(&[0; 6]);
        p.set_target_protocol_addr(&[192, 0, 2, 1]);
        assert_eq!(&bytes[..], &REQUEST_BYTES[..]);
    }

    #[test]
    fn test_parse() {
        let p = ArpPacket::new_checked(&REQUEST_BYTES[..]).unwrap();
        assert_eq!(ArpRepr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 28];
        repr()
            .emit(&mut ArpPacket::new_unchecked(&mut bytes))
            .unwrap();
        assert_eq!(&bytes[..], &REQUEST_BYTES[..]);
        let mut short = [0u8; 27];
        assert_eq!(
            repr().emit(&mut ArpPacket::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn reply_and_unsupported() {
        let mut b = REQUEST_BYTES;
        b[7] = 2;
        let r = ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r.operation, ArpOperation::Reply);
        b[7] = 3; // RARP request
        assert!(matches!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])),
            Err(Error::Unsupported(_))
        ));
        let mut b = REQUEST_BYTES;
        b[1] = 6; // IEEE 802
        assert!(matches!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])),
            Err(Error::Unsupported(_))
        ));
        let mut b = REQUEST_BYTES;
        b[2..4].copy_from_slice(&[0x86, 0xdd]);
        assert!(matches!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&b[..])),
            Err(Error::Unsupported(_))
        ));
        // Declared lengths larger than the buffer.
        let mut b = REQUEST_BYTES;
        b[4] = 200;
        assert_eq!(ArpPacket::new_checked(&b[..]), Err(Error::Truncated));
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&REQUEST_BYTES[..27])),
            Err(Error::Truncated)
        );
        assert_eq!(
            ArpPacket::new_checked(&REQUEST_BYTES[..5]),
            Err(Error::Truncated)
        );
    }
}
