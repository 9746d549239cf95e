//! The test-frame signature (DESIGN.md §5): 16 bytes placed right after the UDP header.
//!
//! ```text
//!  offset  size  field
//!  0       2     magic      0x57 0x52 ("WR")
//!  2       2     stream id  big-endian u16; identifies the stream without trusting any
//!                           header a NAT or tunnel may rewrite
//!  4       4     sequence   big-endian low 32 bits of the 64-bit per-stream sequence number;
//!                           the receiver extends it to 64 bits ([`SeqExtender`])
//!  8       8     timestamp  big-endian u64, nanoseconds of CLOCK_MONOTONIC at send time
//!                           (the clock the kernel's bpf_ktime_get_ns reads, so an XDP sender
//!                           and a user-space receiver agree)
//! ```
//!
//! Why 16 bytes: the smallest IPv4/UDP Ethernet frame (64 B with FCS) leaves 18 payload bytes,
//! so the signature fits with 2 to spare; an IPv6/UDP frame needs 82 B (see
//! [`min_frame_len`](crate::template) in the template). The sequence and timestamp are 16-bit
//! aligned at an even offset of the UDP checksum range, so a sender can restamp them and patch
//! the UDP checksum incrementally (RFC 1624) from 6 changed words.

use crate::{Error, Result};

/// Bytes of payload the signature occupies.
pub const LEN: usize = 16;
/// The two magic bytes, ASCII "WR".
pub const MAGIC: [u8; 2] = [0x57, 0x52];

mod field {
    use core::ops::Range;
    pub const MAGIC: Range<usize> = 0..2;
    pub const STREAM: Range<usize> = 2..4;
    pub const SEQ: Range<usize> = 4..8;
    pub const TIMESTAMP: Range<usize> = 8..16;
}

/// Byte offset of the sequence field inside the signature (for in-place restamping).
pub const SEQ_OFFSET: usize = field::SEQ.start;
/// Byte offset of the timestamp field inside the signature.
pub const TIMESTAMP_OFFSET: usize = field::TIMESTAMP.start;

/// A zero-copy view of a signature at the start of a UDP payload.
#[derive(Debug, Clone)]
pub struct Signature<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Signature<T> {
    pub fn new_unchecked(buffer: T) -> Self {
        Signature { buffer }
    }

    /// Checks the length and the magic: anything else is not one of our frames.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let s = Signature { buffer };
        let b = s.buffer.as_ref();
        if b.len() < LEN {
            return Err(Error::Truncated);
        }
        if b[field::MAGIC] != MAGIC {
            return Err(Error::Malformed("signature magic"));
        }
        Ok(s)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn stream_id(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::STREAM];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// The low 32 bits of the sequence number, as carried.
    pub fn seq32(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::SEQ];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    pub fn timestamp_ns(&self) -> u64 {
        let b = &self.buffer.as_ref()[field::TIMESTAMP];
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        u64::from_be_bytes(a)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Signature<T> {
    pub fn set_magic(&mut self) {
        self.buffer.as_mut()[field::MAGIC].copy_from_slice(&MAGIC);
    }
    pub fn set_stream_id(&mut self, id: u16) {
        self.buffer.as_mut()[field::STREAM].copy_from_slice(&id.to_be_bytes());
    }
    /// Stores the low 32 bits of `seq`.
    pub fn set_seq(&mut self, seq: u64) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&(seq as u32).to_be_bytes());
    }
    pub fn set_timestamp_ns(&mut self, ns: u64) {
        self.buffer.as_mut()[field::TIMESTAMP].copy_from_slice(&ns.to_be_bytes());
    }
}

/// The owned form of a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureRepr {
    pub stream_id: u16,
    /// Only the low 32 bits travel; `parse` returns them zero-extended.
    pub seq: u64,
    pub timestamp_ns: u64,
}

impl SignatureRepr {
    pub fn parse<T: AsRef<[u8]>>(sig: &Signature<T>) -> Result<Self> {
        Ok(SignatureRepr {
            stream_id: sig.stream_id(),
            seq: u64::from(sig.seq32()),
            timestamp_ns: sig.timestamp_ns(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, sig: &mut Signature<T>) {
        sig.set_magic();
        sig.set_stream_id(self.stream_id);
        sig.set_seq(self.seq);
        sig.set_timestamp_ns(self.timestamp_ns);
    }
}

/// Extends the 32-bit sequence numbers of one stream to 64 bits.
///
/// Each value is placed in the 2^32 window centred on the highest sequence seen so far, the way
/// RTP receivers extend their 16-bit sequence numbers (RFC 3550 A.1). Reordering or loss of up to
/// 2^31 frames is therefore unambiguous — about 24 minutes at 1.488 Mpps.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeqExtender {
    highest: Option<u64>,
}

impl SeqExtender {
    pub fn new() -> Self {
        Self::default()
    }

    /// The 64-bit sequence number for a received low-32-bit value.
    pub fn extend(&mut self, seq32: u32) -> u64 {
        let ext = self.peek(seq32);
        if self.highest.is_none_or(|h| ext > h) {
            self.highest = Some(ext);
        }
        ext
    }

    /// What [`extend`](Self::extend) would return for `seq32`, without remembering it (a
    /// receiver checks the value before it lets a frame move the highest sequence number).
    pub fn peek(&self, seq32: u32) -> u64 {
        let Some(highest) = self.highest else {
            return u64::from(seq32);
        };
        // Signed distance from the highest seen, in the 32-bit ring.
        let delta = seq32.wrapping_sub(highest as u32) as i32;
        if delta >= 0 {
            highest.wrapping_add(delta as u64)
        } else {
            // Behind the highest: only valid if it does not go below zero.
            highest
                .checked_sub(u64::from(delta.unsigned_abs()))
                .unwrap_or(u64::from(seq32))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Pins the byte layout: stream 0x0102, seq 0x0a0b0c0d, timestamp 0x1112131415161718.
    static BYTES: [u8; 16] = [
        0x57, 0x52, 0x01, 0x02, 0x0a, 0x0b, 0x0c, 0x0d, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
        0x18,
    ];

    #[test]
    fn test_deconstruct() {
        let s = Signature::new_checked(&BYTES[..]).unwrap();
        assert_eq!(s.stream_id(), 0x0102);
        assert_eq!(s.seq32(), 0x0a0b_0c0d);
        assert_eq!(s.timestamp_ns(), 0x1112_1314_1516_1718);
    }

    #[test]
    fn test_construct() {
        let mut buf = [0xa5u8; LEN];
        let mut s = Signature::new_unchecked(&mut buf[..]);
        s.set_magic();
        s.set_stream_id(0x0102);
        s.set_seq(0xffff_ffff_0a0b_0c0d); // only the low 32 bits travel
        s.set_timestamp_ns(0x1112_1314_1516_1718);
        assert_eq!(&buf[..], &BYTES[..]);
    }

    #[test]
    fn test_parse_emit() {
        let repr = SignatureRepr::parse(&Signature::new_checked(&BYTES[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            SignatureRepr {
                stream_id: 0x0102,
                seq: 0x0a0b_0c0d,
                timestamp_ns: 0x1112_1314_1516_1718
            }
        );
        let mut buf = [0xa5u8; LEN];
        repr.emit(&mut Signature::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..], &BYTES[..]);
    }

    #[test]
    fn offsets_are_even_for_incremental_checksums() {
        assert_eq!(SEQ_OFFSET % 2, 0);
        assert_eq!(TIMESTAMP_OFFSET % 2, 0);
        assert_eq!(SEQ_OFFSET, 4);
        assert_eq!(TIMESTAMP_OFFSET, 8);
    }

    #[test]
    fn rejects_foreign_payloads() {
        assert_eq!(
            Signature::new_checked(&BYTES[..15]).unwrap_err(),
            Error::Truncated
        );
        let mut other = BYTES;
        other[0] = 0x00;
        assert!(Signature::new_checked(&other[..]).is_err());
    }

    #[test]
    fn extender_handles_wrap_and_reordering() {
        let mut x = SeqExtender::new();
        assert_eq!(x.extend(0xffff_fffe), 0xffff_fffe);
        assert_eq!(x.extend(0xffff_ffff), 0xffff_ffff);
        assert_eq!(x.extend(0), 0x1_0000_0000);
        assert_eq!(x.extend(0xffff_ffff), 0xffff_ffff); // late frame from before the wrap
        assert_eq!(x.extend(1), 0x1_0000_0001);
        assert_eq!(x.extend(5), 0x1_0000_0005); // a gap (loss) moves forward
        assert_eq!(x.extend(3), 0x1_0000_0003); // reordered, behind the highest
    }

    #[test]
    fn peek_does_not_move_the_highest() {
        let mut x = SeqExtender::new();
        assert_eq!(x.peek(7), 7);
        assert_eq!(x.extend(0xffff_ffff), 0xffff_ffff);
        assert_eq!(x.peek(2), 0x1_0000_0002);
        assert_eq!(x.peek(2), 0x1_0000_0002);
        assert_eq!(x.extend(0xffff_fffe), 0xffff_fffe); // still behind the old highest
    }

    #[test]
    fn extender_first_value_behind_zero_stays_small() {
        let mut x = SeqExtender::new();
        assert_eq!(x.extend(2), 2);
        // 0xffff_fff0 is "16 behind 2" in the ring, but that would be negative: take it literally.
        assert_eq!(x.extend(0xffff_fff0), 0xffff_fff0);
    }
}
