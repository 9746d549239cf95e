//! Reading big-endian header fields: the one helper every view and parser uses, instead of a
//! `u16_at` per header (smoltcp's `field` ranges read through one byte-order helper).
//!
//! Two kinds of read, for two kinds of caller:
//! - [`Fields::u16_at`] / [`Fields::u32_at`] take a field's byte range and panic when it is
//!   outside the buffer. For views (`Packet::new_checked` has checked the length) and for
//!   frames the caller built itself.
//! - [`be16`] / [`be32`] take an offset and return `None` outside the buffer. For parsers of
//!   bytes from the wire, which must never panic.

use core::ops::Range;

/// A header field: its byte range from the start of the header.
pub type Field = Range<usize>;

/// Big-endian reads of fields of a byte buffer.
pub trait Fields {
    /// The big-endian u16 in the first two bytes of `f`. Panics if they are not in the buffer.
    fn u16_at(&self, f: Field) -> u16;
    /// The big-endian u32 in the first four bytes of `f`. Panics if they are not in the buffer.
    fn u32_at(&self, f: Field) -> u32;
}

impl<T: AsRef<[u8]> + ?Sized> Fields for T {
    #[inline]
    fn u16_at(&self, f: Field) -> u16 {
        let b = &self.as_ref()[f.start..f.start + 2];
        u16::from_be_bytes([b[0], b[1]])
    }

    #[inline]
    fn u32_at(&self, f: Field) -> u32 {
        let b = &self.as_ref()[f.start..f.start + 4];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
}

/// The big-endian u16 at `at`, `None` if it is not all in `b`.
#[inline]
pub fn be16(b: &[u8], at: usize) -> Option<u16> {
    match b.get(at..at.checked_add(2)?)? {
        [x, y] => Some(u16::from_be_bytes([*x, *y])),
        _ => None,
    }
}

/// The big-endian u32 at `at`, `None` if it is not all in `b`.
#[inline]
pub fn be32(b: &[u8], at: usize) -> Option<u32> {
    match b.get(at..at.checked_add(4)?)? {
        [w, x, y, z] => Some(u32::from_be_bytes([*w, *x, *y, *z])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_big_endian_and_checked_reads_never_panic() {
        let b = [0x12u8, 0x34, 0x56, 0x78, 0x9a];
        assert_eq!(b.u16_at(1..3), 0x3456);
        assert_eq!(b[..].u32_at(0..4), 0x1234_5678);
        assert_eq!(be16(&b, 3), Some(0x789a));
        assert_eq!(be16(&b, 4), None);
        assert_eq!(be32(&b, 1), Some(0x3456_789a));
        assert_eq!(be32(&b, 2), None);
        assert_eq!(be16(&b, usize::MAX), None);
        assert_eq!(be32(&[], 0), None);
    }

    #[test]
    #[should_panic]
    fn a_field_outside_the_buffer_panics() {
        [0u8; 3].u32_at(0..4);
    }
}
