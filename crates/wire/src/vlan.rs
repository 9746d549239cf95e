//! IEEE 802.1Q / 802.1ad VLAN tags.
//!
//! A tag is read as the 4 bytes *after* the TPID: the TPID sits where an EtherType would be, so
//! it belongs to the preceding header (Ethernet, or the outer tag of a double-tagged frame).
//! That way a tag is parsed exactly like any other header selected by an EtherType.
//!
//! ```text
//!  0               1               2               3
//! +-----+-+-----------------------+-------------------------------+
//! | PCP |D|          VID          |       inner EtherType         |
//! +-----+-+-----------------------+-------------------------------+
//! ```

use core::ops::{Range, RangeFrom};

use crate::error::{Error, Result};
use crate::ethernet::EtherType;

/// TCI + inner EtherType.
pub const HEADER_LEN: usize = 4;
/// VID 4095 is reserved (802.1Q Table 9-2); 0 means "priority tag only".
pub const MAX_VID: u16 = 4094;
pub const MAX_PCP: u8 = 7;

/// Whether `t` is a TPID this crate treats as introducing a tag.
pub fn is_tpid(t: EtherType) -> bool {
    t == EtherType::VLAN || t == EtherType::QINQ
}

mod field {
    use super::*;
    pub const TCI: Range<usize> = 0..2;
    pub const ETHERTYPE: Range<usize> = 2..4;
    pub const PAYLOAD: RangeFrom<usize> = 4..;
}

/// A read/write view of one VLAN tag (TCI + inner EtherType) and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        VlanTag { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let t = Self::new_unchecked(buffer);
        t.check_len()?;
        Ok(t)
    }

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

    pub fn tci(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::TCI];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Priority code point (802.1p class), 0..=7.
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop-eligible indicator.
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }

    /// The EtherType of what follows the tag (another TPID for the outer tag of QinQ).
    pub fn ethertype(&self) -> EtherType {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType(u16::from_be_bytes([b[0], b[1]]))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> VlanTag<&'a T> {
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    pub fn set_tci(&mut self, tci: u16) {
        self.buffer.as_mut()[field::TCI].copy_from_slice(&tci.to_be_bytes());
    }

    /// Only the low 3 bits of `pcp` are used.
    pub fn set_pcp(&mut self, pcp: u8) {
        self.set_tci((self.tci() & 0x1fff) | (u16::from(pcp & 7) << 13));
    }

    pub fn set_dei(&mut self, dei: bool) {
        self.set_tci((self.tci() & !0x1000) | if dei { 0x1000 } else { 0 });
    }

    /// Only the low 12 bits of `vid` are used.
    pub fn set_vid(&mut self, vid: u16) {
        self.set_tci((self.tci() & 0xf000) | (vid & 0x0fff));
    }

    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.0.to_be_bytes());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The owned contents of one tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanRepr {
    pub pcp: u8,
    pub dei: bool,
    pub vid: u16,
    /// EtherType of the payload after this tag.
    pub ethertype: EtherType,
}

impl VlanRepr {
    /// Rejects the reserved VID 4095, so that every parsed repr can be emitted again.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(tag: &VlanTag<&T>) -> Result<VlanRepr> {
        tag.check_len()?;
        if tag.vid() > MAX_VID {
            return Err(Error::Malformed("vlan id 4095 is reserved"));
        }
        Ok(VlanRepr {
            pcp: tag.pcp(),
            dei: tag.dei(),
            vid: tag.vid(),
            ethertype: tag.ethertype(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    fn validate(&self) -> Result<()> {
        if self.vid > MAX_VID {
            return Err(Error::Malformed("vlan id above 4094"));
        }
        if self.pcp > MAX_PCP {
            return Err(Error::Malformed("vlan pcp above 7"));
        }
        Ok(())
    }

    /// Writes the 4 tag bytes. Out-of-range VID or PCP is an error rather than being masked,
    /// because a silently truncated VID would send test traffic into another VLAN.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut VlanTag<T>) -> Result<()> {
        self.validate()?;
        tag.check_len()?;
        let tci = (u16::from(self.pcp) << 13) | if self.dei { 0x1000 } else { 0 } | self.vid;
        tag.set_tci(tci);
        tag.set_ethertype(self.ethertype);
        Ok(())
    }
}

/// Two stacked tags (802.1ad "QinQ"): the preceding header's EtherType is `outer_tpid`, then
/// the service tag, whose EtherType is 0x8100, then the customer tag carrying the payload type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QinqRepr {
    /// 0x88a8 per 802.1ad; 0x8100 for the older "double 802.1Q" many switches still use.
    pub outer_tpid: EtherType,
    /// Service tag; its `ethertype` must be [`EtherType::VLAN`].
    pub outer: VlanRepr,
    /// Customer tag; its `ethertype` is that of the payload.
    pub inner: VlanRepr,
}

impl QinqRepr {
    pub const HEADER_LEN: usize = 2 * HEADER_LEN;

    /// `ethertype` is the EtherType of the preceding header, `buffer` starts at the outer TCI.
    pub fn parse(ethertype: EtherType, buffer: &[u8]) -> Result<QinqRepr> {
        if !is_tpid(ethertype) {
            return Err(Error::Malformed("outer tpid is neither 0x88a8 nor 0x8100"));
        }
        let outer_tag = VlanTag::new_checked(buffer)?;
        let outer = VlanRepr::parse(&outer_tag)?;
        if outer.ethertype != EtherType::VLAN {
            return Err(Error::Malformed("inner tpid of a double tag is not 0x8100"));
        }
        let inner = VlanRepr::parse(&VlanTag::new_checked(outer_tag.payload())?)?;
        Ok(QinqRepr {
            outer_tpid: ethertype,
            outer,
            inner,
        })
    }

    pub const fn buffer_len(&self) -> usize {
        Self::HEADER_LEN
    }

    /// Writes both tags (8 bytes); the caller writes `outer_tpid` into the preceding header.
    pub fn emit(&self, buffer: &mut [u8]) -> Result<()> {
        if !is_tpid(self.outer_tpid) {
            return Err(Error::Malformed("outer tpid is neither 0x88a8 nor 0x8100"));
        }
        if self.outer.ethertype != EtherType::VLAN {
            return Err(Error::Malformed("inner tpid of a double tag is not 0x8100"));
        }
        let buffer = buffer.get_mut(..Self::HEADER_LEN).ok_or(Error::Truncated)?;
        let (o, i) = buffer.split_at_mut(HEADER_LEN);
        self.outer.emit(&mut VlanTag::new_unchecked(o))?;
        self.inner.emit(&mut VlanTag::new_unchecked(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // PCP 5, DEI 1, VID 0x123, followed by IPv4 and two payload bytes.
    static TAG_BYTES: [u8; 6] = [0xb1, 0x23, 0x08, 0x00, 0x45, 0x00];

    fn repr() -> VlanRepr {
        VlanRepr {
            pcp: 5,
            dei: true,
            vid: 0x123,
            ethertype: EtherType::IPV4,
        }
    }

    #[test]
    fn test_deconstruct() {
        let tag = VlanTag::new_checked(&TAG_BYTES[..]).unwrap();
        assert_eq!(tag.tci(), 0xb123);
        assert_eq!(tag.pcp(), 5);
        assert!(tag.dei());
        assert_eq!(tag.vid(), 0x123);
        assert_eq!(tag.ethertype(), EtherType::IPV4);
        assert_eq!(tag.payload(), &[0x45, 0x00]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 6];
        let mut tag = VlanTag::new_unchecked(&mut bytes);
        tag.set_tci(0);
        tag.set_pcp(5);
        tag.set_dei(true);
        tag.set_vid(0x123);
        tag.set_ethertype(EtherType::IPV4);
        tag.payload_mut().copy_from_slice(&[0x45, 0x00]);
        assert_eq!(&bytes[..], &TAG_BYTES[..]);
    }

    #[test]
    fn test_parse() {
        let tag = VlanTag::new_checked(&TAG_BYTES[..]).unwrap();
        assert_eq!(VlanRepr::parse(&tag), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 6];
        repr()
            .emit(&mut VlanTag::new_unchecked(&mut bytes))
            .unwrap();
        bytes[4..].copy_from_slice(&[0x45, 0x00]);
        assert_eq!(&bytes[..], &TAG_BYTES[..]);
    }

    #[test]
    fn emit_validates() {
        let mut b = [0u8; 4];
        let bad_vid = VlanRepr {
            vid: 4095,
            ..repr()
        };
        assert!(matches!(
            bad_vid.emit(&mut VlanTag::new_unchecked(&mut b[..])),
            Err(Error::Malformed(_))
        ));
        let bad_pcp = VlanRepr { pcp: 8, ..repr() };
        assert!(matches!(
            bad_pcp.emit(&mut VlanTag::new_unchecked(&mut b[..])),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            repr().emit(&mut VlanTag::new_unchecked(&mut b[..3])),
            Err(Error::Truncated)
        );
        assert!(matches!(
            VlanRepr::parse(&VlanTag::new_unchecked(&[0x0f, 0xff, 0x08, 0x00][..])),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            VlanRepr::parse(&VlanTag::new_unchecked(&[0x0f][..])),
            Err(Error::Truncated)
        );
    }

    // S-tag VID 100 PCP 3, C-tag VID 200, IPv6 inside.
    static QINQ_BYTES: [u8; 8] = [0x60, 0x64, 0x81, 0x00, 0x00, 0xc8, 0x86, 0xdd];

    fn qinq() -> QinqRepr {
        QinqRepr {
            outer_tpid: EtherType::QINQ,
            outer: VlanRepr {
                pcp: 3,
                dei: false,
                vid: 100,
                ethertype: EtherType::VLAN,
            },
            inner: VlanRepr {
                pcp: 0,
                dei: false,
                vid: 200,
                ethertype: EtherType::IPV6,
            },
        }
    }

    #[test]
    fn qinq_parse_emit() {
        assert_eq!(QinqRepr::parse(EtherType::QINQ, &QINQ_BYTES), Ok(qinq()));
        let mut bytes = vec![0xa5; 8];
        qinq().emit(&mut bytes).unwrap();
        assert_eq!(&bytes[..], &QINQ_BYTES[..]);
        // The older 0x8100/0x8100 form is accepted as configured.
        let q = QinqRepr {
            outer_tpid: EtherType::VLAN,
            ..qinq()
        };
        assert_eq!(QinqRepr::parse(EtherType::VLAN, &QINQ_BYTES), Ok(q));
    }

    #[test]
    fn qinq_errors() {
        assert!(matches!(
            QinqRepr::parse(EtherType::IPV4, &QINQ_BYTES),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            QinqRepr::parse(EtherType::QINQ, &QINQ_BYTES[..7]),
            Err(Error::Truncated)
        );
        let mut wrong_inner = QINQ_BYTES;
        wrong_inner[2..4].copy_from_slice(&[0x08, 0x00]);
        assert!(matches!(
            QinqRepr::parse(EtherType::QINQ, &wrong_inner),
            Err(Error::Malformed(_))
        ));
        let mut b = [0u8; 7];
        assert_eq!(qinq().emit(&mut b), Err(Error::Truncated));
        let bad = QinqRepr {
            outer_tpid: EtherType::IPV4,
            ..qinq()
        };
        assert!(matches!(bad.emit(&mut [0u8; 8]), Err(Error::Malformed(_))));
    }
}
