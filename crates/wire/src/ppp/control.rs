//! The control-packet format of RFC 1661 §5, shared by LCP, IPCP and IPv6CP, and (header
//! only) by PAP and CHAP.
//!
//! ```text
//!   0                   1                   2                   3
//!   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |     Code      |  Identifier   |            Length             |
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |    Data ...
//!  +-+-+-+-+
//! ```
//!
//! `Length` counts the whole packet including this header. Bytes past it are padding and are
//! ignored (RFC 1661 §5: "Octets outside the range of the Length field are treated as padding
//! and are ignored on reception"). Configure-Request, -Ack, -Nak and -Reject carry a list of
//! options, each `Type (1) | Length (1, including these two bytes) | value`:
//! [`OptionIter`] reads them and [`OptionWriter`] writes them.

use core::fmt;

use crate::{Error, Result};

/// Length of the Code, Identifier and Length fields.
pub const HEADER_LEN: usize = 4;
/// Length of an option's Type and Length fields.
pub const OPTION_HEADER_LEN: usize = 2;
/// The longest option value: the option's Length byte (at most 255) includes 2 header bytes.
pub const MAX_OPTION_VALUE_LEN: usize = 255 - OPTION_HEADER_LEN;

mod field {
    use core::ops::Range;
    pub const CODE: usize = 0;
    pub const IDENTIFIER: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const DATA: usize = 4;
}

/// The Code field of LCP and the NCPs. Codes 8–11 are LCP only (an NCP receiving them must
/// Code-Reject them); unknown codes are kept so that they can be Code-Rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    ConfigureRequest,
    ConfigureAck,
    ConfigureNak,
    ConfigureReject,
    TerminateRequest,
    TerminateAck,
    CodeReject,
    ProtocolReject,
    EchoRequest,
    EchoReply,
    DiscardRequest,
    Unknown(u8),
}

impl From<u8> for Code {
    fn from(v: u8) -> Self {
        match v {
            1 => Code::ConfigureRequest,
            2 => Code::ConfigureAck,
            3 => Code::ConfigureNak,
            4 => Code::ConfigureReject,
            5 => Code::TerminateRequest,
            6 => Code::TerminateAck,
            7 => Code::CodeReject,
            8 => Code::ProtocolReject,
            9 => Code::EchoRequest,
            10 => Code::EchoReply,
            11 => Code::DiscardRequest,
            other => Code::Unknown(other),
        }
    }
}

impl From<Code> for u8 {
    fn from(c: Code) -> u8 {
        match c {
            Code::ConfigureRequest => 1,
            Code::ConfigureAck => 2,
            Code::ConfigureNak => 3,
            Code::ConfigureReject => 4,
            Code::TerminateRequest => 5,
            Code::TerminateAck => 6,
            Code::CodeReject => 7,
            Code::ProtocolReject => 8,
            Code::EchoRequest => 9,
            Code::EchoReply => 10,
            Code::DiscardRequest => 11,
            Code::Unknown(v) => v,
        }
    }
}

impl Code {
    /// Protocol-Reject, Echo-Request, Echo-Reply and Discard-Request exist only in LCP.
    pub fn is_lcp_only(self) -> bool {
        matches!(
            self,
            Code::ProtocolReject | Code::EchoRequest | Code::EchoReply | Code::DiscardRequest
        )
    }

    /// Whether the data is an option list (the four Configure codes).
    pub fn has_options(self) -> bool {
        matches!(
            self,
            Code::ConfigureRequest
                | Code::ConfigureAck
                | Code::ConfigureNak
                | Code::ConfigureReject
        )
    }

    /// The RFC 1661 name, `None` for an unknown code.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Code::ConfigureRequest => "Configure-Request",
            Code::ConfigureAck => "Configure-Ack",
            Code::ConfigureNak => "Configure-Nak",
            Code::ConfigureReject => "Configure-Reject",
            Code::TerminateRequest => "Terminate-Request",
            Code::TerminateAck => "Terminate-Ack",
            Code::CodeReject => "Code-Reject",
            Code::ProtocolReject => "Protocol-Reject",
            Code::EchoRequest => "Echo-Request",
            Code::EchoReply => "Echo-Reply",
            Code::DiscardRequest => "Discard-Request",
            Code::Unknown(_) => return None,
        })
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "code {}", u8::from(*self)),
        }
    }
}

/// A zero-copy view of a control packet (LCP, IPCP, IPv6CP; PAP and CHAP share the header).
///
/// Getters index fixed offsets: use [`new_checked`](Self::new_checked) on untrusted bytes.
#[derive(Debug, Clone)]
pub struct ControlPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ControlPacket<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        ControlPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// `Truncated` if the buffer is shorter than the header or than `Length`; `Malformed` if
    /// `Length` is below the header's 4 bytes (such a packet has no defined extent).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let declared = usize::from(self.length());
        if declared < HEADER_LEN {
            return Err(Error::Malformed("PPP control packet length below 4"));
        }
        if len < declared {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The code, as LCP and the NCPs number them. PAP and CHAP number theirs differently:
    /// use [`raw_code`](Self::raw_code) or their own Reprs.
    pub fn code(&self) -> Code {
        Code::from(self.raw_code())
    }

    pub fn raw_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Matches replies to requests; a retransmission keeps it, a new request changes it.
    pub fn identifier(&self) -> u8 {
        self.buffer.as_ref()[field::IDENTIFIER]
    }

    /// The Length field: the whole packet, header included.
    pub fn length(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> ControlPacket<&'a T> {
    /// The data after the header up to `Length`, clamped to the buffer; padding excluded.
    pub fn data(&self) -> &'a [u8] {
        let b = self.buffer.as_ref();
        let end = usize::from(self.length()).min(b.len());
        b.get(field::DATA..end).unwrap_or(&[])
    }

    /// The option list of a Configure-Request/-Ack/-Nak/-Reject.
    pub fn options(&self) -> OptionIter<'a> {
        OptionIter::new(self.data())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ControlPacket<T> {
    pub fn set_code(&mut self, code: Code) {
        self.set_raw_code(code.into());
    }

    pub fn set_raw_code(&mut self, code: u8) {
        self.buffer.as_mut()[field::CODE] = code;
    }

    pub fn set_identifier(&mut self, identifier: u8) {
        self.buffer.as_mut()[field::IDENTIFIER] = identifier;
    }

    pub fn set_length(&mut self, length: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&length.to_be_bytes());
    }

    /// The first `len` bytes of the buffer, `Truncated` if it is shorter; for the emitters
    /// of LCP, PAP and CHAP, which check the size before writing anything.
    pub(crate) fn buffer_mut_checked(&mut self, len: usize) -> Result<&mut [u8]> {
        self.buffer.as_mut().get_mut(..len).ok_or(Error::Truncated)
    }

    /// The data up to `Length`, clamped to the buffer. Set the length first.
    pub fn data_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.length()).min(self.buffer.as_ref().len());
        self.buffer
            .as_mut()
            .get_mut(field::DATA..end)
            .unwrap_or(&mut [])
    }
}

/// The owned form of any control packet: code, identifier and the data as bytes. The data's
/// meaning depends on code and protocol; see [`super::lcp`], [`super::ipcp`],
/// [`super::ipv6cp`] for typed readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ControlRepr<'a> {
    pub code: Code,
    pub identifier: u8,
    pub data: &'a [u8],
}

impl<'a> ControlRepr<'a> {
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ControlPacket<&'a T>) -> Result<Self> {
        packet.check_len()?;
        Ok(ControlRepr {
            code: packet.code(),
            identifier: packet.identifier(),
            data: packet.data(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data.len()
    }

    /// Writes the header and the data. `Truncated` if the buffer is too small, `Malformed` if
    /// the data does not fit the 16-bit Length field.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ControlPacket<T>) -> Result<()> {
        let len = self.buffer_len();
        let len16 =
            u16::try_from(len).map_err(|_| Error::Malformed("PPP control packet too long"))?;
        let out = packet.buffer_mut_checked(len)?;
        out[field::CODE] = self.code.into();
        out[field::IDENTIFIER] = self.identifier;
        out[field::LENGTH].copy_from_slice(&len16.to_be_bytes());
        out[field::DATA..].copy_from_slice(self.data);
        Ok(())
    }
}

/// Writes a whole Configure-type packet into `buf` in one go: the header, then whatever
/// options `fill` pushes, then the Length. Returns the packet length.
///
/// ```
/// use wire::ppp::{control, lcp::LcpOption, Code};
/// let mut buf = [0u8; 64];
/// let n = control::emit_options(&mut buf, Code::ConfigureRequest, 1, |w| {
///     w.push(&LcpOption::Mru(1454))?;
///     w.push(&LcpOption::MagicNumber(0x1234_5678))
/// })
/// .unwrap();
/// assert_eq!(n, 14);
/// ```
pub fn emit_options<F>(buf: &mut [u8], code: Code, identifier: u8, fill: F) -> Result<usize>
where
    F: FnOnce(&mut OptionWriter<'_>) -> Result<()>,
{
    if buf.len() < HEADER_LEN {
        return Err(Error::Truncated);
    }
    // Never let the options outgrow what the 16-bit Length can describe.
    let end = buf.len().min(usize::from(u16::MAX));
    let (header, data) = buf[..end].split_at_mut(HEADER_LEN);
    let mut writer = OptionWriter::new(data);
    fill(&mut writer)?;
    let len = HEADER_LEN + writer.finish();
    header[field::CODE] = code.into();
    header[field::IDENTIFIER] = identifier;
    // len <= u16::MAX by construction of `end`.
    header[field::LENGTH].copy_from_slice(&(len as u16).to_be_bytes());
    Ok(len)
}

/// Iterates over an option list as `(type, value)` without allocating.
///
/// An option Length below 2 yields `Err(Malformed)` (it would never advance); one that overruns
/// the list, or a single trailing byte, yields `Err(Truncated)`. After an error the iterator
/// stops, since no later byte can be trusted to start an option.
#[derive(Debug, Clone)]
pub struct OptionIter<'a> {
    rest: &'a [u8],
    done: bool,
}

impl<'a> OptionIter<'a> {
    pub fn new(options: &'a [u8]) -> Self {
        OptionIter {
            rest: options,
            done: false,
        }
    }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<(u8, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.rest.is_empty() {
            return None;
        }
        let (kind, len) = match self.rest {
            [k, l, ..] => (*k, usize::from(*l)),
            _ => {
                self.done = true;
                return Some(Err(Error::Truncated));
            }
        };
        if len < OPTION_HEADER_LEN {
            self.done = true;
            return Some(Err(Error::Malformed("PPP option length below 2")));
        }
        let Some(value) = self.rest.get(OPTION_HEADER_LEN..len) else {
            self.done = true;
            return Some(Err(Error::Truncated));
        };
        self.rest = &self.rest[len..];
        Some(Ok((kind, value)))
    }
}

/// A typed configuration option that can be written as a TLV.
///
/// Implemented by [`LcpOption`](super::lcp::LcpOption),
/// [`IpcpOption`](super::ipcp::IpcpOption) and [`Ipv6cpOption`](super::ipv6cp::Ipv6cpOption).
pub trait ConfigOption {
    /// The Type byte.
    fn option_type(&self) -> u8;
    /// Bytes of value, excluding the 2-byte option header.
    fn value_len(&self) -> usize;
    /// Writes the value into `out`, which is exactly `value_len()` bytes long.
    fn emit_value(&self, out: &mut [u8]);

    /// The whole TLV length.
    fn buffer_len(&self) -> usize {
        OPTION_HEADER_LEN + self.value_len()
    }

    /// Writes the whole TLV at the start of `buf`, returning its length. `Truncated` if `buf`
    /// is too short, `Malformed` if the value is longer than an option can be.
    fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let value_len = self.value_len();
        if value_len > MAX_OPTION_VALUE_LEN {
            return Err(Error::Malformed("PPP option value longer than 253 bytes"));
        }
        let len = OPTION_HEADER_LEN + value_len;
        let out = buf.get_mut(..len).ok_or(Error::Truncated)?;
        out[0] = self.option_type();
        // len <= 255 by the check above.
        out[1] = len as u8;
        self.emit_value(&mut out[OPTION_HEADER_LEN..]);
        Ok(len)
    }
}

/// Appends options to a buffer (a control packet's data area). Each push writes a whole
/// option or nothing.
#[derive(Debug)]
pub struct OptionWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> OptionWriter<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        OptionWriter { buf, len: 0 }
    }

    /// Appends an option given as raw type and value (e.g. one to echo back in a Reject).
    pub fn push_raw(&mut self, kind: u8, value: &[u8]) -> Result<()> {
        self.push(&RawOption { kind, value })
    }

    /// Appends a typed option.
    pub fn push<O: ConfigOption + ?Sized>(&mut self, option: &O) -> Result<()> {
        let rest = self.buf.get_mut(self.len..).ok_or(Error::Truncated)?;
        self.len += option.emit(rest)?;
        Ok(())
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Ends writing and returns the bytes written.
    pub fn finish(self) -> usize {
        self.len
    }
}

/// An option as type and value bytes, for echoing options back unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawOption<'a> {
    pub kind: u8,
    pub value: &'a [u8],
}

impl ConfigOption for RawOption<'_> {
    fn option_type(&self) -> u8 {
        self.kind
    }
    fn value_len(&self) -> usize {
        self.value.len()
    }
    fn emit_value(&self, out: &mut [u8]) {
        out.copy_from_slice(self.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // LCP Terminate-Request, id 3, data "bye", then 2 bytes of padding.
    static TERM: [u8; 9] = [0x05, 0x03, 0x00, 0x07, b'b', b'y', b'e', 0x00, 0x00];

    #[test]
    fn deconstruct_with_padding() {
        let p = ControlPacket::new_checked(&TERM[..]).unwrap();
        assert_eq!(p.code(), Code::TerminateRequest);
        assert_eq!(p.identifier(), 3);
        assert_eq!(p.length(), 7);
        assert_eq!(p.data(), b"bye");
        let r = ControlRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            ControlRepr {
                code: Code::TerminateRequest,
                identifier: 3,
                data: b"bye"
            }
        );
    }

    #[test]
    fn length_bounds() {
        assert_eq!(
            ControlPacket::new_checked(&TERM[..3]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            ControlPacket::new_checked(&TERM[..6]).err(),
            Some(Error::Truncated)
        );
        let bad = [0x05, 0x03, 0x00, 0x03];
        assert!(matches!(
            ControlPacket::new_checked(&bad[..]),
            Err(Error::Malformed(_))
        ));
        let unk = [0x42, 0x00, 0x00, 0x04];
        let p = ControlPacket::new_checked(&unk[..]).unwrap();
        assert_eq!(p.code(), Code::Unknown(0x42));
        assert_eq!(p.code().to_string(), "code 66");
    }

    #[test]
    fn construct_and_emit() {
        let mut buf = vec![0xa5; 7];
        let mut p = ControlPacket::new_unchecked(&mut buf[..]);
        p.set_code(Code::TerminateRequest);
        p.set_identifier(3);
        p.set_length(7);
        p.data_mut().copy_from_slice(b"bye");
        assert_eq!(buf, TERM[..7]);

        let r = ControlRepr {
            code: Code::TerminateRequest,
            identifier: 3,
            data: b"bye",
        };
        assert_eq!(r.buffer_len(), 7);
        let mut buf = vec![0xa5; 7];
        r.emit(&mut ControlPacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, TERM[..7]);
        let mut small = [0xa5u8; 6];
        assert_eq!(
            r.emit(&mut ControlPacket::new_unchecked(&mut small[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn option_iter_errors_then_stops() {
        let opts = [0x01, 0x04, 0x05, 0xae, 0x09, 0x00, 0x01, 0x02];
        let mut it = OptionIter::new(&opts);
        assert_eq!(it.next(), Some(Ok((1, &[0x05, 0xae][..]))));
        assert!(matches!(it.next(), Some(Err(Error::Malformed(_)))));
        assert_eq!(it.next(), None);

        let opts = [0x01, 0x02, 0x05, 0x06, 0x00];
        let mut it = OptionIter::new(&opts);
        assert_eq!(it.next(), Some(Ok((1, &[][..]))));
        assert_eq!(it.next(), Some(Err(Error::Truncated)));
        assert_eq!(it.next(), None);

        let mut it = OptionIter::new(&[0x07]);
        assert_eq!(it.next(), Some(Err(Error::Truncated)));
        assert_eq!(it.next(), None);
    }

    #[test]
    fn option_writer() {
        let mut buf = [0xa5u8; 6];
        let mut w = OptionWriter::new(&mut buf);
        w.push_raw(7, &[]).unwrap();
        w.push_raw(1, &[0x05, 0xae]).unwrap();
        assert_eq!(w.push_raw(8, &[]), Err(Error::Truncated));
        assert_eq!(w.finish(), 6);
        assert_eq!(buf, [0x07, 0x02, 0x01, 0x04, 0x05, 0xae]);

        let mut big = [0u8; 300];
        let mut w = OptionWriter::new(&mut big);
        assert!(matches!(
            w.push_raw(1, &[0u8; 254]),
            Err(Error::Malformed(_))
        ));
        w.push_raw(1, &[0u8; 253]).unwrap();
        assert_eq!(w.len(), 255);
    }

    #[test]
    fn emit_options_too_small() {
        let mut buf = [0xa5u8; 3];
        assert_eq!(
            emit_options(&mut buf, Code::ConfigureRequest, 1, |_| Ok(())),
            Err(Error::Truncated)
        );
        let mut buf = [0xa5u8; 4];
        assert_eq!(
            emit_options(&mut buf, Code::ConfigureAck, 9, |_| Ok(())),
            Ok(4)
        );
        assert_eq!(buf, [0x02, 0x09, 0x00, 0x04]);
        let mut buf = [0xa5u8; 5];
        assert_eq!(
            emit_options(&mut buf, Code::ConfigureAck, 9, |w| w.push_raw(7, &[])),
            Err(Error::Truncated)
        );
    }
}
