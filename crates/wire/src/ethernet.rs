//! Ethernet II (DIX) frames: the 14-byte header, MAC addresses and EtherTypes.
//!
//! The view covers the header and everything after it up to the end of the buffer; the FCS is
//! never part of the buffer (the NIC or the kernel adds and strips it), but it counts on the
//! wire, so [`FCS_LEN`] and [`MIN_FRAME_LEN`] are here for the line-rate arithmetic.

use core::fmt;
use core::ops::{Range, RangeFrom};
use core::str::FromStr;

use crate::error::{Error, Result};

/// Destination + source + EtherType.
pub const HEADER_LEN: usize = 14;
/// Frame check sequence, present on the wire but not in the buffers we handle.
pub const FCS_LEN: usize = 4;
/// Smallest legal frame on the wire, FCS included (IEEE 802.3 §4.4.2).
pub const MIN_FRAME_LEN: usize = 64;

/// A 48-bit IEEE 802 MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// 00:00:00:00:00:00, e.g. the unknown target of an ARP request.
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// The address in the first six bytes of `data`.
    pub fn from_slice(data: &[u8]) -> Result<MacAddr> {
        match data.get(..6) {
            Some(b) => {
                let mut a = [0u8; 6];
                a.copy_from_slice(b);
                Ok(MacAddr(a))
            }
            None => Err(Error::Truncated),
        }
    }

    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// Group bit (I/G) set; broadcast is a multicast address too.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    pub const fn is_broadcast(&self) -> bool {
        matches!(self.0, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
    }

    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Locally administered bit (U/L) set; the lab generates such addresses so that they can
    /// never collide with a real NIC's.
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a string is not a MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseMacAddrError {
    reason: &'static str,
}

impl fmt::Display for ParseMacAddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid MAC address: {} (expected six two-digit hex bytes separated by ':' or '-', \
             e.g. 02:00:5e:00:53:01)",
            self.reason
        )
    }
}

impl std::error::Error for ParseMacAddrError {}

impl FromStr for MacAddr {
    type Err = ParseMacAddrError;

    /// Accepts `aa:bb:cc:dd:ee:ff` or `aa-bb-cc-dd-ee-ff`, either case; nothing looser, so a
    /// typo in a plan file is reported instead of silently becoming another address.
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let err = |reason| ParseMacAddrError { reason };
        let sep = if s.contains(':') { ':' } else { '-' };
        let mut out = [0u8; 6];
        let mut n = 0;
        for part in s.split(sep) {
            if n == 6 {
                return Err(err("more than six bytes"));
            }
            if part.len() != 2 || !part.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(err("each byte must be exactly two hex digits"));
            }
            out[n] = u8::from_str_radix(part, 16).map_err(|_| err("not hexadecimal"))?;
            n += 1;
        }
        if n != 6 {
            return Err(err("fewer than six bytes"));
        }
        Ok(MacAddr(out))
    }
}

impl serde::Serialize for MacAddr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for MacAddr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The EtherType (or TPID) field. A newtype rather than an enum so that unknown values pass
/// through parsing untouched.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtherType(pub u16);

impl EtherType {
    pub const IPV4: EtherType = EtherType(0x0800);
    pub const ARP: EtherType = EtherType(0x0806);
    /// 802.1Q customer tag TPID.
    pub const VLAN: EtherType = EtherType(0x8100);
    /// 802.1ad service tag TPID.
    pub const QINQ: EtherType = EtherType(0x88a8);
    pub const IPV6: EtherType = EtherType(0x86dd);
    /// MPLS unicast.
    pub const MPLS: EtherType = EtherType(0x8847);
    pub const PPPOE_DISCOVERY: EtherType = EtherType(0x8863);
    pub const PPPOE_SESSION: EtherType = EtherType(0x8864);

    fn name(self) -> Option<&'static str> {
        Some(match self {
            EtherType::IPV4 => "IPv4",
            EtherType::ARP => "ARP",
            EtherType::VLAN => "802.1Q",
            EtherType::QINQ => "802.1ad",
            EtherType::IPV6 => "IPv6",
            EtherType::MPLS => "MPLS",
            EtherType::PPPOE_DISCOVERY => "PPPoE-Discovery",
            EtherType::PPPOE_SESSION => "PPPoE-Session",
            _ => return None,
        })
    }
}

impl From<u16> for EtherType {
    fn from(v: u16) -> Self {
        EtherType(v)
    }
}

impl From<EtherType> for u16 {
    fn from(v: EtherType) -> Self {
        v.0
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "0x{:04x}", self.0),
        }
    }
}

impl fmt::Debug for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "EtherType({n})"),
            None => write!(f, "EtherType(0x{:04x})", self.0),
        }
    }
}

mod field {
    use super::*;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const PAYLOAD: RangeFrom<usize> = 14..;
}

/// A read/write view of an Ethernet II frame (without FCS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps `buffer` after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// After this succeeds no getter can panic.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub const fn header_len() -> usize {
        HEADER_LEN
    }

    /// Buffer length needed for a frame with `payload_len` bytes of payload.
    pub const fn buffer_len(payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    pub fn dst_addr(&self) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        MacAddr(a)
    }

    pub fn src_addr(&self) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        MacAddr(a)
    }

    pub fn ethertype(&self) -> EtherType {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType(u16::from_be_bytes([b[0], b[1]]))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> EthernetFrame<&'a T> {
    /// Everything after the header, with the buffer's lifetime.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    pub fn set_dst_addr(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.0);
    }

    pub fn set_src_addr(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.0);
    }

    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.0.to_be_bytes());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for EthernetFrame<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The owned contents of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    pub src: MacAddr,
    pub dst: MacAddr,
    pub ethertype: EtherType,
}

impl EthernetRepr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &EthernetFrame<&T>) -> Result<EthernetRepr> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src: frame.src_addr(),
            dst: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 14 header bytes; `Truncated` if the buffer cannot hold them.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) -> Result<()> {
        frame.check_len()?;
        frame.set_dst_addr(self.dst);
        frame.set_src_addr(self.src);
        frame.set_ethertype(self.ethertype);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Broadcast ARP frame from 00:11:22:33:44:55, followed by four payload bytes.
    static FRAME_BYTES: [u8; 18] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06, 0xaa,
        0x00, 0x00, 0xff,
    ];

    static PAYLOAD: [u8; 4] = [0xaa, 0x00, 0x00, 0xff];

    fn repr() -> EthernetRepr {
        EthernetRepr {
            src: MacAddr([0x00, 0x11, 0x22, 0x33, 0x44, 0x55]),
            dst: MacAddr::BROADCAST,
            ethertype: EtherType::ARP,
        }
    }

    #[test]
    fn test_deconstruct() {
        let frame = EthernetFrame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(frame.dst_addr(), MacAddr::BROADCAST);
        assert_eq!(
            frame.src_addr(),
            MacAddr([0x00, 0x11, 0x22, 0x33, 0x44, 0x55])
        );
        assert_eq!(frame.ethertype(), EtherType::ARP);
        assert_eq!(frame.payload(), &PAYLOAD[..]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 18];
        let mut frame = EthernetFrame::new_unchecked(&mut bytes);
        frame.set_dst_addr(MacAddr::BROADCAST);
        frame.set_src_addr(MacAddr([0x00, 0x11, 0x22, 0x33, 0x44, 0x55]));
        frame.set_ethertype(EtherType::ARP);
        frame.payload_mut().copy_from_slice(&PAYLOAD);
        assert_eq!(&bytes[..], &FRAME_BYTES[..]);
    }

    #[test]
    fn test_parse() {
        let frame = EthernetFrame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(EthernetRepr::parse(&frame).unwrap(), repr());
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 18];
        let mut frame = EthernetFrame::new_unchecked(&mut bytes);
        repr().emit(&mut frame).unwrap();
        frame.payload_mut().copy_from_slice(&PAYLOAD);
        assert_eq!(&bytes[..], &FRAME_BYTES[..]);
    }

    #[test]
    fn short_buffers() {
        assert_eq!(
            EthernetFrame::new_checked(&FRAME_BYTES[..13]),
            Err(Error::Truncated)
        );
        let mut b = [0u8; 10];
        assert_eq!(
            repr().emit(&mut EthernetFrame::new_unchecked(&mut b[..])),
            Err(Error::Truncated)
        );
        let f = EthernetFrame::new_unchecked(&FRAME_BYTES[..5]);
        assert_eq!(EthernetRepr::parse(&f), Err(Error::Truncated));
    }

    #[test]
    fn mac_display_and_parse() {
        let m = MacAddr([0x02, 0x00, 0x5e, 0x00, 0x53, 0xab]);
        assert_eq!(m.to_string(), "02:00:5e:00:53:ab");
        assert_eq!("02:00:5E:00:53:AB".parse::<MacAddr>(), Ok(m));
        assert_eq!("02-00-5e-00-53-ab".parse::<MacAddr>(), Ok(m));
        for bad in [
            "",
            "02:00:5e:00:53",
            "02:00:5e:00:53:ab:cd",
            "2:00:5e:00:53:ab",
            "02:00:5e:00:53:zz",
            "02:00-5e:00:53:ab",
            "+2:00:5e:00:53:ab",
        ] {
            let e = bad.parse::<MacAddr>().unwrap_err();
            assert!(e.to_string().contains("invalid MAC address"), "{bad}: {e}");
        }
    }

    #[test]
    fn mac_classes() {
        assert!(MacAddr::BROADCAST.is_multicast());
        assert!(MacAddr::BROADCAST.is_broadcast());
        assert!(MacAddr([0x33, 0x33, 0, 0, 0, 1]).is_multicast());
        assert!(MacAddr([0x01, 0x00, 0x5e, 0, 0, 1]).is_multicast());
        let local = MacAddr([0x02, 0, 0, 0, 0, 1]);
        assert!(local.is_unicast() && local.is_local() && !local.is_broadcast());
        assert_eq!(MacAddr::from_slice(&[1, 2, 3, 4, 5]), Err(Error::Truncated));
    }

    #[test]
    fn ethertype_display() {
        assert_eq!(EtherType::IPV6.to_string(), "IPv6");
        assert_eq!(EtherType(0x1234).to_string(), "0x1234");
        assert_eq!(format!("{:?}", EtherType::VLAN), "EtherType(802.1Q)");
    }
}
