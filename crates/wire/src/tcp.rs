//! TCP headers (RFC 9293) as far as a throughput tester needs them: every header field, a safe
//! option walker, pseudo-header checksums, and an in-place MSS rewrite (MSS clamping, as a
//! PPPoE gateway does) that patches the checksum incrementally instead of re-summing the
//! segment.
//!
//! The view's buffer is the whole segment (the IP payload): TCP has no length field, so the
//! checksum covers exactly the buffer.

use crate::bytes::Fields;
use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::ops::{BitOr, BitOrAssign, Range};

use crate::checksum;
use crate::error::{Error, Result};

/// Header without options.
pub const HEADER_LEN: usize = 20;
/// Largest header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;
const PROTOCOL: u8 = 6;

pub const OPT_END: u8 = 0;
pub const OPT_NOP: u8 = 1;
pub const OPT_MSS: u8 = 2;
pub const OPT_WINDOW_SCALE: u8 = 3;
pub const OPT_SACK_PERMITTED: u8 = 4;
pub const OPT_TIMESTAMPS: u8 = 8;

mod field {
    use super::*;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;
}

/// The eight flag bits of byte 13.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x01);
    pub const SYN: TcpFlags = TcpFlags(0x02);
    pub const RST: TcpFlags = TcpFlags(0x04);
    pub const PSH: TcpFlags = TcpFlags(0x08);
    pub const ACK: TcpFlags = TcpFlags(0x10);
    pub const URG: TcpFlags = TcpFlags(0x20);
    pub const ECE: TcpFlags = TcpFlags(0x40);
    pub const CWR: TcpFlags = TcpFlags(0x80);

    pub const fn empty() -> TcpFlags {
        TcpFlags(0)
    }

    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

impl BitOrAssign for TcpFlags {
    fn bitor_assign(&mut self, rhs: TcpFlags) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 8] = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"];
        f.write_str("TcpFlags(")?;
        let mut first = true;
        for (i, n) in NAMES.iter().enumerate() {
            if self.0 & (1 << i) != 0 {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(n)?;
                first = false;
            }
        }
        f.write_str(")")
    }
}

/// One TCP option as found in a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    NoOperation,
    MaxSegmentSize(u16),
    WindowScale(u8),
    SackPermitted,
    Timestamps {
        tsval: u32,
        tsecr: u32,
    },
    /// Any other kind, with its data (without kind and length bytes).
    Unknown {
        kind: u8,
        data: &'a [u8],
    },
}

/// Reads the option at `pos` of `opts`: `Ok(None)` at the end of the list (End of Option
/// List or no bytes left), otherwise the option and the position after it.
fn read_option(opts: &[u8], pos: usize) -> Result<Option<(TcpOption<'_>, usize)>> {
    let kind = match opts.get(pos) {
        None | Some(&OPT_END) => return Ok(None),
        Some(&k) => k,
    };
    if kind == OPT_NOP {
        return Ok(Some((TcpOption::NoOperation, pos + 1)));
    }
    let len = usize::from(
        *opts
            .get(pos + 1)
            .ok_or(Error::Malformed("tcp option length missing"))?,
    );
    if len < 2 {
        return Err(Error::Malformed("tcp option length below 2"));
    }
    let data = opts
        .get(pos + 2..pos + len)
        .ok_or(Error::Malformed("tcp option overruns the header"))?;
    let opt = match (kind, data) {
        (OPT_MSS, [a, b]) => TcpOption::MaxSegmentSize(u16::from_be_bytes([*a, *b])),
        (OPT_MSS, _) => return Err(Error::Malformed("tcp mss option length is not 4")),
        (OPT_WINDOW_SCALE, [s]) => TcpOption::WindowScale(*s),
        (OPT_WINDOW_SCALE, _) => {
            return Err(Error::Malformed("tcp window scale option length is not 3"))
        }
        (OPT_SACK_PERMITTED, []) => TcpOption::SackPermitted,
        (OPT_SACK_PERMITTED, _) => {
            return Err(Error::Malformed(
                "tcp sack-permitted option length is not 2",
            ))
        }
        (OPT_TIMESTAMPS, [a, b, c, d, e, f, g, h]) => TcpOption::Timestamps {
            tsval: u32::from_be_bytes([*a, *b, *c, *d]),
            tsecr: u32::from_be_bytes([*e, *f, *g, *h]),
        },
        (OPT_TIMESTAMPS, _) => {
            return Err(Error::Malformed("tcp timestamps option length is not 10"))
        }
        (kind, data) => TcpOption::Unknown { kind, data },
    };
    Ok(Some((opt, pos + len)))
}

/// Iterator over the options area; yields an error once and then stops if an option is
/// malformed. Stops at End of Option List.
#[derive(Debug, Clone)]
pub struct TcpOptions<'a> {
    opts: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> TcpOptions<'a> {
    pub fn new(opts: &'a [u8]) -> Self {
        TcpOptions {
            opts,
            pos: 0,
            failed: false,
        }
    }
}

impl<'a> Iterator for TcpOptions<'a> {
    type Item = Result<TcpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match read_option(self.opts, self.pos) {
            Ok(Some((opt, next))) => {
                self.pos = next;
                Some(Ok(opt))
            }
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// A read/write view of a TCP segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// After this succeeds no getter, `options()` or `payload()` can panic.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let hl = self.header_len();
        if hl < HEADER_LEN {
            return Err(Error::Malformed("tcp data offset below 5"));
        }
        if len < hl {
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

    pub fn seq_number(&self) -> u32 {
        self.buffer.u32_at(field::SEQ_NUM)
    }

    pub fn ack_number(&self) -> u32 {
        self.buffer.u32_at(field::ACK_NUM)
    }

    /// Header length in bytes (data offset × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DATA_OFF] >> 4) * 4
    }

    /// The four bits between data offset and flags (reserved, the last one formerly NS).
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::DATA_OFF] & 0x0f
    }

    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field::FLAGS])
    }

    pub fn fin(&self) -> bool {
        self.flags().contains(TcpFlags::FIN)
    }

    pub fn syn(&self) -> bool {
        self.flags().contains(TcpFlags::SYN)
    }

    pub fn rst(&self) -> bool {
        self.flags().contains(TcpFlags::RST)
    }

    pub fn psh(&self) -> bool {
        self.flags().contains(TcpFlags::PSH)
    }

    pub fn ack(&self) -> bool {
        self.flags().contains(TcpFlags::ACK)
    }

    pub fn urg(&self) -> bool {
        self.flags().contains(TcpFlags::URG)
    }

    pub fn ece(&self) -> bool {
        self.flags().contains(TcpFlags::ECE)
    }

    pub fn cwr(&self) -> bool {
        self.flags().contains(TcpFlags::CWR)
    }

    pub fn window_len(&self) -> u16 {
        self.buffer.u16_at(field::WIN_SIZE)
    }

    pub fn checksum(&self) -> u16 {
        self.buffer.u16_at(field::CHECKSUM)
    }

    pub fn urgent_at(&self) -> u16 {
        self.buffer.u16_at(field::URGENT)
    }

    /// Offset of the MSS option's kind byte inside the segment, if there is one.
    fn mss_option_at(&self) -> Result<Option<usize>> {
        self.check_len()?;
        let opts = &self.buffer.as_ref()[HEADER_LEN..self.header_len()];
        let mut pos = 0;
        while let Some((opt, next)) = read_option(opts, pos)? {
            if let TcpOption::MaxSegmentSize(_) = opt {
                return Ok(Some(HEADER_LEN + pos));
            }
            pos = next;
        }
        Ok(None)
    }

    pub fn verify_checksum_v4(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let d = self.buffer.as_ref();
        checksum::fold(
            checksum::pseudo_header_v4(src, dst, PROTOCOL, d.len() as u16) + checksum::sum(d),
        ) == 0xffff
    }

    pub fn verify_checksum_v6(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let d = self.buffer.as_ref();
        checksum::fold(
            checksum::pseudo_header_v6(src, dst, PROTOCOL, d.len() as u32) + checksum::sum(d),
        ) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> TcpPacket<&'a T> {
    /// The options area (may end with EOL and padding).
    pub fn options(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    pub fn options_iter(&self) -> TcpOptions<'a> {
        TcpOptions::new(self.options())
    }

    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    fn set_u16_at(&mut self, r: Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    fn set_u32_at(&mut self, r: Range<usize>, v: u32) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_src_port(&mut self, v: u16) {
        self.set_u16_at(field::SRC_PORT, v)
    }

    pub fn set_dst_port(&mut self, v: u16) {
        self.set_u16_at(field::DST_PORT, v)
    }

    pub fn set_seq_number(&mut self, v: u32) {
        self.set_u32_at(field::SEQ_NUM, v)
    }

    pub fn set_ack_number(&mut self, v: u32) {
        self.set_u32_at(field::ACK_NUM, v)
    }

    /// `len` in bytes, a multiple of 4 from 20 to 60. Clears the reserved bits.
    pub fn set_header_len(&mut self, len: usize) {
        self.buffer.as_mut()[field::DATA_OFF] = ((len / 4) as u8) << 4;
    }

    pub fn set_flags(&mut self, f: TcpFlags) {
        self.buffer.as_mut()[field::FLAGS] = f.0;
    }

    pub fn set_window_len(&mut self, v: u16) {
        self.set_u16_at(field::WIN_SIZE, v)
    }

    pub fn set_checksum(&mut self, v: u16) {
        self.set_u16_at(field::CHECKSUM, v)
    }

    pub fn set_urgent_at(&mut self, v: u16) {
        self.set_u16_at(field::URGENT, v)
    }

    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..hl]
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[hl..]
    }

    pub fn fill_checksum_v4(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let d = self.buffer.as_ref();
        let c = !checksum::fold(
            checksum::pseudo_header_v4(src, dst, PROTOCOL, d.len() as u16) + checksum::sum(d),
        );
        self.set_checksum(c);
    }

    pub fn fill_checksum_v6(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let d = self.buffer.as_ref();
        let c = !checksum::fold(
            checksum::pseudo_header_v6(src, dst, PROTOCOL, d.len() as u32) + checksum::sum(d),
        );
        self.set_checksum(c);
    }

    /// Rewrites the value of an existing MSS option and patches the checksum incrementally
    /// (RFC 1624), returning the old value. `Unsupported` if the segment has no MSS option;
    /// adding one would move the payload, which is not an in-place rewrite.
    ///
    /// The option may sit at an odd offset (after a single NOP), so the patch covers the
    /// 16-bit words of the segment that the two value bytes fall into.
    pub fn set_mss(&mut self, mss: u16) -> Result<u16> {
        let at = self
            .mss_option_at()?
            .ok_or(Error::Unsupported("no tcp mss option to rewrite"))?;
        let value = at + 2;
        let start = value & !1;
        // Even-aligned end; inside the header because header_len is a multiple of 4.
        let end = (value + 3) & !1;
        let buf = self.buffer.as_mut();
        let old_mss = u16::from_be_bytes([buf[value], buf[value + 1]]);
        let mut old = [0u8; 4];
        old[..end - start].copy_from_slice(&buf[start..end]);
        buf[value..value + 2].copy_from_slice(&mss.to_be_bytes());
        let sum = self.checksum();
        let new = &self.buffer.as_ref()[start..end];
        let patched = checksum::update_bytes(sum, &old[..end - start], new);
        self.set_checksum(patched);
        Ok(old_mss)
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for TcpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The owned contents of a TCP header. Only MSS is kept among the options; others are
/// checked for well-formedness and skipped, so parse → emit drops them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub window: u16,
    pub urgent: u16,
    pub mss: Option<u16>,
}

impl TcpRepr {
    /// Structural parse (lengths and options); the checksum needs the addresses and is
    /// verified separately.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &TcpPacket<&T>) -> Result<TcpRepr> {
        packet.check_len()?;
        let mut mss = None;
        for opt in packet.options_iter() {
            if let TcpOption::MaxSegmentSize(v) = opt? {
                mss = Some(v);
            }
        }
        Ok(TcpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq: packet.seq_number(),
            ack: packet.ack_number(),
            flags: packet.flags(),
            window: packet.window_len(),
            urgent: packet.urgent_at(),
            mss,
        })
    }

    /// Header length including the emitted options.
    pub const fn buffer_len(&self) -> usize {
        if self.mss.is_some() {
            HEADER_LEN + 4
        } else {
            HEADER_LEN
        }
    }

    /// Writes the header (20 bytes, 24 with MSS) with checksum 0; fill the checksum after
    /// the payload is written.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut TcpPacket<T>) -> Result<()> {
        let hl = self.buffer_len();
        if packet.buffer.as_ref().len() < hl {
            return Err(Error::Truncated);
        }
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq);
        packet.set_ack_number(self.ack);
        packet.set_header_len(hl);
        packet.set_flags(self.flags);
        packet.set_window_len(self.window);
        packet.set_checksum(0);
        packet.set_urgent_at(self.urgent);
        if let Some(mss) = self.mss {
            let [a, b] = mss.to_be_bytes();
            packet.options_mut().copy_from_slice(&[OPT_MSS, 4, a, b]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src() -> Ipv4Addr {
        Ipv4Addr::new(192, 0, 2, 1)
    }

    fn dst() -> Ipv4Addr {
        Ipv4Addr::new(198, 51, 100, 7)
    }

    // SYN 192.0.2.1:49152 → 198.51.100.7:5201, seq 0x01020304, window 64240, MSS 1460,
    // no payload; checksum computed by hand (see `known_checksum`).
    static SYN_BYTES: [u8; 24] = [
        0xc0, 0x00, 0x14, 0x51, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x00, 0x60, 0x02, 0xfa,
        0xf0, 0xd8, 0xa1, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4,
    ];

    fn repr() -> TcpRepr {
        TcpRepr {
            src_port: 49152,
            dst_port: 5201,
            seq: 0x01020304,
            ack: 0,
            flags: TcpFlags::SYN,
            window: 64240,
            urgent: 0,
            mss: Some(1460),
        }
    }

    #[test]
    fn known_checksum() {
        // Pseudo: c000 0201 c633 6407 0006 0018; header words with checksum 0.
        let words: [u32; 18] = [
            0xc000, 0x0201, 0xc633, 0x6407, 0x0006, 0x0018, 0xc000, 0x1451, 0x0102, 0x0304, 0x0000,
            0x0000, 0x6002, 0xfaf0, 0x0000, 0x0000, 0x0204, 0x05b4,
        ];
        let mut s: u32 = words.iter().sum();
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        assert_eq!(!(s as u16), 0xd8a1);
    }

    #[test]
    fn test_deconstruct() {
        let p = TcpPacket::new_checked(&SYN_BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 49152);
        assert_eq!(p.dst_port(), 5201);
        assert_eq!(p.seq_number(), 0x01020304);
        assert_eq!(p.ack_number(), 0);
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.reserved(), 0);
        assert_eq!(p.flags(), TcpFlags::SYN);
        assert!(
            p.syn()
                && !p.ack()
                && !p.fin()
                && !p.rst()
                && !p.psh()
                && !p.urg()
                && !p.ece()
                && !p.cwr()
        );
        assert_eq!(p.window_len(), 64240);
        assert_eq!(p.checksum(), 0xd8a1);
        assert_eq!(p.urgent_at(), 0);
        assert_eq!(p.options(), &[2, 4, 0x05, 0xb4]);
        assert_eq!(
            p.options_iter().collect::<Vec<_>>(),
            vec![Ok(TcpOption::MaxSegmentSize(1460))]
        );
        assert_eq!(p.payload(), &[] as &[u8]);
        assert!(p.verify_checksum_v4(src(), dst()));
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 24];
        let mut p = TcpPacket::new_unchecked(&mut bytes);
        p.set_src_port(49152);
        p.set_dst_port(5201);
        p.set_seq_number(0x01020304);
        p.set_ack_number(0);
        p.set_header_len(24);
        p.set_flags(TcpFlags::SYN);
        p.set_window_len(64240);
        p.set_urgent_at(0);
        p.options_mut().copy_from_slice(&[2, 4, 0x05, 0xb4]);
        p.fill_checksum_v4(src(), dst());
        assert_eq!(&bytes[..], &SYN_BYTES[..]);
    }

    #[test]
    fn test_parse() {
        let p = TcpPacket::new_checked(&SYN_BYTES[..]).unwrap();
        assert_eq!(TcpRepr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 24];
        let mut p = TcpPacket::new_unchecked(&mut bytes);
        repr().emit(&mut p).unwrap();
        p.fill_checksum_v4(src(), dst());
        assert_eq!(&bytes[..], &SYN_BYTES[..]);
        let mut short = [0u8; 23];
        assert_eq!(
            repr().emit(&mut TcpPacket::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
        let no_mss = TcpRepr {
            mss: None,
            ..repr()
        };
        assert_eq!(no_mss.buffer_len(), 20);
        no_mss
            .emit(&mut TcpPacket::new_unchecked(&mut short[..]))
            .unwrap();
        assert_eq!(short[12], 0x50);
    }

    #[test]
    fn options_walk() {
        let opts = [
            1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 3, 3, 7, 4, 2, 0xfe, 3, 0xaa, 0, 0xff,
        ];
        let v: Vec<_> = TcpOptions::new(&opts).collect::<Result<_>>().unwrap();
        assert_eq!(
            v,
            vec![
                TcpOption::NoOperation,
                TcpOption::NoOperation,
                TcpOption::Timestamps { tsval: 1, tsecr: 2 },
                TcpOption::WindowScale(7),
                TcpOption::SackPermitted,
                TcpOption::Unknown {
                    kind: 0xfe,
                    data: &[0xaa]
                },
            ]
        );
        for bad in [
            &[2u8, 1][..],
            &[2, 4, 5],
            &[5, 0],
            &[2, 3, 5],
            &[3, 4, 1, 1],
            &[8, 9, 0, 0, 0, 0, 0, 0, 0],
            &[2],
        ] {
            let r: Result<Vec<_>> = TcpOptions::new(bad).collect();
            assert!(matches!(r, Err(Error::Malformed(_))), "{bad:?}");
        }
    }

    #[test]
    fn header_errors() {
        let mut b = SYN_BYTES;
        b[12] = 0x40;
        assert!(matches!(
            TcpPacket::new_checked(&b[..]),
            Err(Error::Malformed(_))
        ));
        b[12] = 0x70;
        assert_eq!(TcpPacket::new_checked(&b[..]), Err(Error::Truncated));
        assert_eq!(
            TcpPacket::new_checked(&SYN_BYTES[..19]),
            Err(Error::Truncated)
        );
        let mut b = SYN_BYTES;
        b[21] = 9; // MSS length overruns the header
        assert!(matches!(
            TcpRepr::parse(&TcpPacket::new_unchecked(&b[..])),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn set_mss_patches_checksum() {
        let mut bytes = SYN_BYTES.to_vec();
        let mut p = TcpPacket::new_unchecked(&mut bytes);
        assert_eq!(p.set_mss(1414), Ok(1460));
        assert!(p.verify_checksum_v4(src(), dst()));
        let incremental = p.checksum();
        p.fill_checksum_v4(src(), dst());
        assert_eq!(p.checksum(), incremental);

        // MSS at an odd offset, after one NOP, with payload.
        let mut seg = vec![0u8; 28 + 5];
        let mut p = TcpPacket::new_unchecked(&mut seg);
        TcpRepr {
            mss: None,
            ..repr()
        }
        .emit(&mut p)
        .unwrap();
        p.set_header_len(28);
        p.options_mut()
            .copy_from_slice(&[1, 2, 4, 0x05, 0xb4, 1, 1, 0]);
        p.payload_mut().copy_from_slice(b"hello");
        p.fill_checksum_v4(src(), dst());
        assert_eq!(p.set_mss(800), Ok(1460));
        assert_eq!(&p.options_mut()[..5], &[1, 2, 4, 0x03, 0x20]);
        assert!(p.verify_checksum_v4(src(), dst()));

        let mut no_mss = SYN_BYTES[..20].to_vec();
        no_mss[12] = 0x50;
        assert!(matches!(
            TcpPacket::new_unchecked(&mut no_mss).set_mss(1),
            Err(Error::Unsupported(_))
        ));
        assert_eq!(
            TcpPacket::new_unchecked(&mut [0u8; 4][..]).set_mss(1),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn checksum_v6() {
        let (s, d): (Ipv6Addr, Ipv6Addr) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        let mut bytes = SYN_BYTES.to_vec();
        let mut p = TcpPacket::new_unchecked(&mut bytes);
        p.fill_checksum_v6(s, d);
        assert!(p.verify_checksum_v6(s, d));
        assert!(!p.verify_checksum_v6(s, "2001:db8::3".parse().unwrap()));
        p.set_mss(1200).unwrap();
        assert!(p.verify_checksum_v6(s, d));
    }

    #[test]
    fn flags_debug() {
        assert_eq!(
            format!("{:?}", TcpFlags::SYN | TcpFlags::ACK),
            "TcpFlags(SYN|ACK)"
        );
    }
}
