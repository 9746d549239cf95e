//! PPP (RFC 1661) as carried in PPPoE session frames: the protocol field, the control-packet
//! format shared by LCP, IPCP and IPv6CP, and the authentication protocols PAP and CHAP.
//!
//! In PPPoE there is no HDLC framing: no flag, no address/control bytes, no FCS and no byte
//! stuffing (RFC 2516 §7). A PPPoE session payload is just the protocol field followed by the
//! information field, which [`PppPacket`] views.
//!
//! Errors follow one rule across these modules: a buffer shorter than a length some field
//! declares (a packet's `Length`, an option's or a name's length byte) is `Truncated`; a value
//! the format forbids (an option length below 2, a fixed-size option of the wrong size) is
//! `Malformed`.
//!
//! Modules: [`control`] (the RFC 1661 §5 packet and option TLVs), [`lcp`], [`ipcp`],
//! [`ipv6cp`], [`pap`], [`chap`].

use core::fmt;

use crate::{Error, Result};

pub mod chap;
pub mod control;
pub mod ipcp;
pub mod ipv6cp;
pub mod lcp;
pub mod pap;

pub use control::{Code, ConfigOption, ControlPacket, ControlRepr, OptionIter, OptionWriter};

/// A PPP protocol number (the 2-byte field in front of every PPP information field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Protocol(pub u16);

impl Protocol {
    pub const IPV4: Protocol = Protocol(0x0021);
    pub const IPV6: Protocol = Protocol(0x0057);
    pub const IPCP: Protocol = Protocol(0x8021);
    pub const IPV6CP: Protocol = Protocol(0x8057);
    pub const LCP: Protocol = Protocol(0xc021);
    pub const PAP: Protocol = Protocol(0xc023);
    pub const CHAP: Protocol = Protocol(0xc223);

    /// 0x0000–0x3fff: network-layer datagrams (IPv4, IPv6, …).
    pub fn is_network_layer(self) -> bool {
        self.0 <= 0x3fff
    }

    /// 0x8000–0xbfff: Network Control Protocols (IPCP, IPv6CP, …), which only run once LCP
    /// has opened the link and authentication has passed.
    pub fn is_network_control(self) -> bool {
        (0x8000..=0xbfff).contains(&self.0)
    }

    /// 0xc000–0xffff: link-layer control protocols (LCP, PAP, CHAP, …).
    pub fn is_link_control(self) -> bool {
        self.0 >= 0xc000
    }

    /// Whether the value is a legal protocol number (RFC 1661 §2): the low byte odd, the high
    /// byte even. Illegal values must be answered with an LCP Protocol-Reject like unknown ones.
    pub fn is_valid(self) -> bool {
        self.0 & 0x0001 == 0x0001 && self.0 & 0x0100 == 0
    }

    /// The NCP that configures this network-layer protocol (by RFC 1661's convention of
    /// adding 0x8000), `None` outside the network-layer range.
    pub fn network_control(self) -> Option<Protocol> {
        self.is_network_layer().then_some(Protocol(self.0 | 0x8000))
    }

    /// A short name for display, `None` for numbers this crate does not know.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Protocol::IPV4 => "IPv4",
            Protocol::IPV6 => "IPv6",
            Protocol::IPCP => "IPCP",
            Protocol::IPV6CP => "IPv6CP",
            Protocol::LCP => "LCP",
            Protocol::PAP => "PAP",
            Protocol::CHAP => "CHAP",
            _ => return None,
        })
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "0x{:04x}", self.0),
        }
    }
}

impl From<u16> for Protocol {
    fn from(v: u16) -> Self {
        Protocol(v)
    }
}

impl From<Protocol> for u16 {
    fn from(p: Protocol) -> u16 {
        p.0
    }
}

/// Length of the uncompressed protocol field.
pub const PROTOCOL_LEN: usize = 2;

/// A zero-copy view of a PPP frame inside PPPoE: protocol field, then information field.
///
/// Reading accepts Protocol-Field-Compression (RFC 1661 §6.5: a protocol below 0x100 sent as
/// one odd byte), because a peer that negotiated PFC may send it; writing never compresses.
#[derive(Debug, Clone)]
pub struct PppPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> PppPacket<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        PppPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Truncated` if the buffer cannot hold the protocol field.
    pub fn check_len(&self) -> Result<()> {
        match self.buffer.as_ref() {
            [] => Err(Error::Truncated),
            [b0, ..] if b0 & 1 == 1 => Ok(()),
            [_] => Err(Error::Truncated),
            _ => Ok(()),
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// 1 if the protocol field is compressed (first byte odd), else 2.
    pub fn header_len(&self) -> usize {
        if self.buffer.as_ref()[0] & 1 == 1 {
            1
        } else {
            PROTOCOL_LEN
        }
    }

    pub fn protocol(&self) -> Protocol {
        let b = self.buffer.as_ref();
        if b[0] & 1 == 1 {
            Protocol(u16::from(b[0]))
        } else {
            Protocol(u16::from_be_bytes([b[0], b[1]]))
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> PppPacket<&'a T> {
    /// The information field (for control protocols, a [`ControlPacket`]).
    pub fn payload(&self) -> &'a [u8] {
        let b = self.buffer.as_ref();
        b.get(self.header_len()..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PppPacket<T> {
    /// Writes the uncompressed 2-byte protocol field.
    pub fn set_protocol(&mut self, protocol: Protocol) {
        self.buffer.as_mut()[..PROTOCOL_LEN].copy_from_slice(&protocol.0.to_be_bytes());
    }

    /// The bytes after an uncompressed protocol field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(PROTOCOL_LEN..)
            .unwrap_or(&mut [])
    }
}

/// The owned form of a PPP frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PppRepr {
    pub protocol: Protocol,
}

impl PppRepr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &PppPacket<&T>) -> Result<Self> {
        packet.check_len()?;
        Ok(PppRepr {
            protocol: packet.protocol(),
        })
    }

    /// Always the uncompressed length: this crate never sends PFC frames.
    pub const fn buffer_len(&self) -> usize {
        PROTOCOL_LEN
    }

    /// Writes the 2-byte protocol field. `Malformed` if its high byte is odd: a reader would
    /// take that byte for a compressed 1-byte protocol field (RFC 1661 §2 forbids such values).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut PppPacket<T>) -> Result<()> {
        if self.protocol.0 & 0x0100 != 0 {
            return Err(Error::Malformed("PPP protocol with an odd high byte"));
        }
        if packet.buffer.as_ref().len() < PROTOCOL_LEN {
            return Err(Error::Truncated);
        }
        packet.set_protocol(self.protocol);
        Ok(())
    }
}

pub(crate) use crate::bytes::{be16, be32};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_ranges_and_names() {
        assert!(Protocol::IPCP.is_network_control());
        assert!(Protocol::IPV6CP.is_network_control());
        assert!(!Protocol::LCP.is_network_control());
        assert!(Protocol::LCP.is_link_control() && Protocol::CHAP.is_link_control());
        assert!(Protocol::IPV4.is_network_layer());
        assert_eq!(Protocol::IPV4.network_control(), Some(Protocol::IPCP));
        assert_eq!(Protocol::IPV6.network_control(), Some(Protocol::IPV6CP));
        assert_eq!(Protocol::LCP.network_control(), None);
        for p in [
            Protocol::IPV4,
            Protocol::IPV6,
            Protocol::IPCP,
            Protocol::IPV6CP,
            Protocol::LCP,
            Protocol::PAP,
            Protocol::CHAP,
        ] {
            assert!(p.is_valid(), "{p}");
            assert!(p.name().is_some());
        }
        assert!(!Protocol(0x0020).is_valid());
        assert!(!Protocol(0x0121).is_valid());
        assert_eq!(Protocol::CHAP.to_string(), "CHAP");
        assert_eq!(Protocol(0x8281).to_string(), "0x8281");
    }

    #[test]
    fn ppp_packet_plain_and_compressed() {
        let b = [0x00, 0x21, 0x45, 0x00];
        let p = PppPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.protocol(), Protocol::IPV4);
        assert_eq!(p.payload(), &[0x45, 0x00]);
        // PFC: 0x21 alone is IPv4.
        let b = [0x21, 0x45];
        let p = PppPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.protocol(), Protocol::IPV4);
        assert_eq!(p.header_len(), 1);
        assert_eq!(p.payload(), &[0x45]);
        assert_eq!(
            PppPacket::new_checked(&[0xc0][..]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            PppPacket::new_checked(&[][..]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn ppp_repr_emit() {
        let mut buf = vec![0xa5; 3];
        let repr = PppRepr {
            protocol: Protocol::LCP,
        };
        repr.emit(&mut PppPacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, [0xc0, 0x21, 0xa5]);
        let p = PppPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(PppRepr::parse(&p), Ok(repr));
        let mut two = [0u8; 2];
        assert!(matches!(
            PppRepr {
                protocol: Protocol(0x0121)
            }
            .emit(&mut PppPacket::new_unchecked(&mut two[..])),
            Err(Error::Malformed(_))
        ));
        let mut one = [0u8; 1];
        assert_eq!(
            repr.emit(&mut PppPacket::new_unchecked(&mut one[..])),
            Err(Error::Truncated)
        );
    }
}
