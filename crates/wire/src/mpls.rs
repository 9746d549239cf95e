//! MPLS label stack entries (RFC 3032).
//!
//! ```text
//!  0                   1                   2                   3
//! +---------------------------------------+-----+-+---------------+
//! |                 Label                 | TC  |S|      TTL      |
//! +---------------------------------------+-----+-+---------------+
//! ```
//!
//! MPLS does not say what it carries; the payload after the bottom-of-stack entry is guessed
//! by the caller (first nibble 4 or 6), which is why [`parse_stack`] only returns where it is.

use core::ops::{Range, RangeFrom};

use crate::error::{Error, Result};

/// One label stack entry.
pub const HEADER_LEN: usize = 4;
/// Labels are 20 bits.
pub const MAX_LABEL: u32 = 0x000f_ffff;
pub const MAX_TC: u8 = 7;
/// Deepest stack [`parse_stack`] returns; deeper stacks are `Unsupported` (real networks
/// rarely exceed 3–4 labels, and a fixed array keeps parsing allocation-free).
pub const MAX_STACK_DEPTH: usize = 8;

mod field {
    use super::*;
    pub const ENTRY: Range<usize> = 0..4;
    pub const PAYLOAD: RangeFrom<usize> = 4..;
}

/// A read/write view of one label stack entry and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MplsLabel<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MplsLabel<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        MplsLabel { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let l = Self::new_unchecked(buffer);
        l.check_len()?;
        Ok(l)
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

    fn entry(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::ENTRY];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    pub fn label(&self) -> u32 {
        self.entry() >> 12
    }

    /// Traffic class (formerly EXP).
    pub fn tc(&self) -> u8 {
        ((self.entry() >> 9) & 7) as u8
    }

    /// Bottom-of-stack bit.
    pub fn bottom(&self) -> bool {
        self.entry() & 0x100 != 0
    }

    pub fn ttl(&self) -> u8 {
        self.entry() as u8
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> MplsLabel<&'a T> {
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MplsLabel<T> {
    fn set_entry(&mut self, v: u32) {
        self.buffer.as_mut()[field::ENTRY].copy_from_slice(&v.to_be_bytes());
    }

    /// Only the low 20 bits of `label` are used.
    pub fn set_label(&mut self, label: u32) {
        self.set_entry((self.entry() & 0xfff) | ((label & MAX_LABEL) << 12));
    }

    /// Only the low 3 bits of `tc` are used.
    pub fn set_tc(&mut self, tc: u8) {
        self.set_entry((self.entry() & !0xe00) | (u32::from(tc & 7) << 9));
    }

    pub fn set_bottom(&mut self, bottom: bool) {
        self.set_entry((self.entry() & !0x100) | if bottom { 0x100 } else { 0 });
    }

    pub fn set_ttl(&mut self, ttl: u8) {
        self.set_entry((self.entry() & !0xff) | u32::from(ttl));
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The owned contents of one label stack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MplsRepr {
    /// 20-bit label value.
    pub label: u32,
    pub tc: u8,
    pub bottom: bool,
    pub ttl: u8,
}

impl MplsRepr {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(entry: &MplsLabel<&T>) -> Result<MplsRepr> {
        entry.check_len()?;
        Ok(MplsRepr {
            label: entry.label(),
            tc: entry.tc(),
            bottom: entry.bottom(),
            ttl: entry.ttl(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 4 bytes; a label above 20 bits or TC above 7 is an error, not masked.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, entry: &mut MplsLabel<T>) -> Result<()> {
        if self.label > MAX_LABEL {
            return Err(Error::Malformed("mpls label above 20 bits"));
        }
        if self.tc > MAX_TC {
            return Err(Error::Malformed("mpls tc above 7"));
        }
        entry.check_len()?;
        entry.set_entry(
            (self.label << 12)
                | (u32::from(self.tc) << 9)
                | if self.bottom { 0x100 } else { 0 }
                | u32::from(self.ttl),
        );
        Ok(())
    }
}

/// A parsed label stack, top first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelStack {
    labels: [MplsRepr; MAX_STACK_DEPTH],
    len: usize,
}

impl LabelStack {
    /// The entries, top of stack first; the last one has `bottom` set.
    pub fn labels(&self) -> &[MplsRepr] {
        &self.labels[..self.len]
    }

    /// Offset of the payload from the start of the stack.
    pub fn payload_offset(&self) -> usize {
        self.len * HEADER_LEN
    }
}

/// Walks the stack at the start of `buffer` up to the bottom-of-stack entry.
///
/// `Truncated` if the buffer ends before a bottom-of-stack bit; `Unsupported` if the stack is
/// deeper than [`MAX_STACK_DEPTH`].
pub fn parse_stack(buffer: &[u8]) -> Result<LabelStack> {
    let mut stack = LabelStack {
        labels: [MplsRepr::default(); MAX_STACK_DEPTH],
        len: 0,
    };
    let mut rest = buffer;
    loop {
        let entry = MplsLabel::new_checked(rest)?;
        if stack.len == MAX_STACK_DEPTH {
            return Err(Error::Unsupported("mpls label stack deeper than 8"));
        }
        let repr = MplsRepr::parse(&entry)?;
        stack.labels[stack.len] = repr;
        stack.len += 1;
        if repr.bottom {
            return Ok(stack);
        }
        rest = entry.payload();
    }
}

/// Writes `labels` top first and returns the bytes written. The S bit is taken from the
/// position (set on the last entry only), not from each repr's `bottom`, so the written stack
/// is always well-formed.
pub fn emit_stack(labels: &[MplsRepr], buffer: &mut [u8]) -> Result<usize> {
    if labels.is_empty() {
        return Err(Error::Malformed("empty mpls label stack"));
    }
    let len = labels.len() * HEADER_LEN;
    let buffer = buffer.get_mut(..len).ok_or(Error::Truncated)?;
    let last = labels.len() - 1;
    for (i, (l, chunk)) in labels
        .iter()
        .zip(buffer.chunks_exact_mut(HEADER_LEN))
        .enumerate()
    {
        MplsRepr {
            bottom: i == last,
            ..*l
        }
        .emit(&mut MplsLabel::new_unchecked(chunk))?;
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Label 16 TC 0 TTL 64 (not bottom), then label 1000 TC 5 TTL 63 (bottom), then IPv4.
    static STACK_BYTES: [u8; 10] = [0x00, 0x01, 0x00, 0x40, 0x00, 0x3e, 0x8b, 0x3f, 0x45, 0x00];

    fn reprs() -> [MplsRepr; 2] {
        [
            MplsRepr {
                label: 16,
                tc: 0,
                bottom: false,
                ttl: 64,
            },
            MplsRepr {
                label: 1000,
                tc: 5,
                bottom: true,
                ttl: 63,
            },
        ]
    }

    #[test]
    fn test_deconstruct() {
        let e = MplsLabel::new_checked(&STACK_BYTES[4..]).unwrap();
        assert_eq!(e.label(), 1000);
        assert_eq!(e.tc(), 5);
        assert!(e.bottom());
        assert_eq!(e.ttl(), 63);
        assert_eq!(e.payload(), &[0x45, 0x00]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 6];
        let mut e = MplsLabel::new_unchecked(&mut bytes);
        e.set_label(1000);
        e.set_tc(5);
        e.set_bottom(true);
        e.set_ttl(63);
        e.payload_mut().copy_from_slice(&[0x45, 0x00]);
        assert_eq!(&bytes[..], &STACK_BYTES[4..]);
    }

    #[test]
    fn test_parse() {
        let e = MplsLabel::new_checked(&STACK_BYTES[..]).unwrap();
        assert_eq!(MplsRepr::parse(&e), Ok(reprs()[0]));
    }

    #[test]
    fn test_emit() {
        let mut bytes = vec![0xa5; 4];
        reprs()[1]
            .emit(&mut MplsLabel::new_unchecked(&mut bytes))
            .unwrap();
        assert_eq!(&bytes[..], &STACK_BYTES[4..8]);
        let bad = MplsRepr {
            label: 1 << 20,
            ..reprs()[0]
        };
        assert!(matches!(
            bad.emit(&mut MplsLabel::new_unchecked(&mut bytes)),
            Err(Error::Malformed(_))
        ));
        let bad = MplsRepr {
            tc: 8,
            ..reprs()[0]
        };
        assert!(matches!(
            bad.emit(&mut MplsLabel::new_unchecked(&mut bytes)),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn stack_walk() {
        let s = parse_stack(&STACK_BYTES).unwrap();
        assert_eq!(s.labels(), &reprs()[..]);
        assert_eq!(s.payload_offset(), 8);
        // No bottom-of-stack within the buffer.
        assert_eq!(parse_stack(&STACK_BYTES[..4]), Err(Error::Truncated));
        assert_eq!(parse_stack(&STACK_BYTES[..7]), Err(Error::Truncated));
        assert_eq!(parse_stack(&[]), Err(Error::Truncated));
        // Too deep.
        let deep = [0x00, 0x01, 0x00, 0x40].repeat(MAX_STACK_DEPTH + 1);
        assert!(matches!(parse_stack(&deep), Err(Error::Unsupported(_))));
    }

    #[test]
    fn stack_emit() {
        let mut bytes = vec![0xa5; 10];
        // `bottom` flags in the input are ignored in favour of position.
        let mut labels = reprs();
        labels[0].bottom = true;
        labels[1].bottom = false;
        assert_eq!(emit_stack(&labels, &mut bytes), Ok(8));
        assert_eq!(&bytes[..8], &STACK_BYTES[..8]);
        assert_eq!(emit_stack(&labels, &mut bytes[..7]), Err(Error::Truncated));
        assert!(matches!(
            emit_stack(&[], &mut bytes),
            Err(Error::Malformed(_))
        ));
    }
}
