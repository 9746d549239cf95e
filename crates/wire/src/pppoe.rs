//! PPP over Ethernet (RFC 2516), with the PPP-Max-Payload tag of RFC 4638.
//!
//! ```text
//!   0                   1                   2                   3
//!   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |  VER  | TYPE  |      CODE     |          SESSION_ID           |
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |            LENGTH             |           payload             ~
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The same 6-byte header serves both stages. Discovery frames (EtherType 0x8863: PADI, PADO,
//! PADR, PADS, PADT) carry a list of tags, read with [`TagIter`] and written with
//! [`TagWriter`]. Session frames (EtherType 0x8864, code 0) carry one PPP frame whose 2-byte
//! protocol field (see [`crate::ppp::Protocol`]) comes right after the header, so every
//! session frame costs [`SESSION_HEADER_LEN`] bytes of overhead (DESIGN.md §4).
//!
//! `LENGTH` counts the payload only. Bytes past it are Ethernet minimum-frame padding and are
//! ignored, never treated as tags.

use core::fmt;

use crate::ppp::{PppPacket, Protocol};
use crate::{Error, Result};

/// EtherType of the discovery stage.
pub const ETHERTYPE_DISCOVERY: u16 = 0x8863;
/// EtherType of the session stage.
pub const ETHERTYPE_SESSION: u16 = 0x8864;
/// Length of the PPPoE header.
pub const HEADER_LEN: usize = 6;
/// PPPoE header plus the uncompressed PPP protocol field: the per-frame cost of a session.
pub const SESSION_HEADER_LEN: usize = HEADER_LEN + 2;
/// The only version RFC 2516 defines.
pub const VERSION: u8 = 1;
/// The only type RFC 2516 defines.
pub const TYPE: u8 = 1;
/// Length of a tag's type and length fields.
pub const TAG_HEADER_LEN: usize = 4;

mod field {
    use core::ops::Range;
    pub const VER_TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const SESSION_ID: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const PAYLOAD: usize = 6;
}

/// The CODE field. Unknown values are kept rather than refused, so that a tester watching a
/// misbehaving peer can still see and count what it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PppoeCode {
    /// 0x00: a session-stage frame carrying PPP.
    Session,
    /// 0x07: PPPoE Active Discovery Offer.
    Pado,
    /// 0x09: PPPoE Active Discovery Initiation.
    Padi,
    /// 0x19: PPPoE Active Discovery Request.
    Padr,
    /// 0x65: PPPoE Active Discovery Session-confirmation.
    Pads,
    /// 0xa7: PPPoE Active Discovery Terminate.
    Padt,
    /// Any other value.
    Unknown(u8),
}

impl From<u8> for PppoeCode {
    fn from(v: u8) -> Self {
        match v {
            0x00 => PppoeCode::Session,
            0x07 => PppoeCode::Pado,
            0x09 => PppoeCode::Padi,
            0x19 => PppoeCode::Padr,
            0x65 => PppoeCode::Pads,
            0xa7 => PppoeCode::Padt,
            other => PppoeCode::Unknown(other),
        }
    }
}

impl From<PppoeCode> for u8 {
    fn from(c: PppoeCode) -> u8 {
        match c {
            PppoeCode::Session => 0x00,
            PppoeCode::Pado => 0x07,
            PppoeCode::Padi => 0x09,
            PppoeCode::Padr => 0x19,
            PppoeCode::Pads => 0x65,
            PppoeCode::Padt => 0xa7,
            PppoeCode::Unknown(v) => v,
        }
    }
}

impl PppoeCode {
    /// Whether frames with this code belong to the discovery stage (EtherType 0x8863).
    pub fn is_discovery(self) -> bool {
        self != PppoeCode::Session
    }

    /// The short name RFC 2516 uses, or `None` for an unknown code.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            PppoeCode::Session => "Session",
            PppoeCode::Pado => "PADO",
            PppoeCode::Padi => "PADI",
            PppoeCode::Padr => "PADR",
            PppoeCode::Pads => "PADS",
            PppoeCode::Padt => "PADT",
            PppoeCode::Unknown(_) => return None,
        })
    }
}

impl fmt::Display for PppoeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "code 0x{:02x}", u8::from(*self)),
        }
    }
}

/// A zero-copy view of a PPPoE header and its payload.
///
/// Getters index fixed offsets: call [`check_len`](Self::check_len) (or build the view with
/// [`new_checked`](Self::new_checked)) before using a view over untrusted bytes.
#[derive(Debug, Clone)]
pub struct PppoeHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> PppoeHeader<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        PppoeHeader { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    /// `Truncated` if the buffer is shorter than the header or than the payload `LENGTH`
    /// declares. A longer buffer is fine: the rest is Ethernet padding.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < HEADER_LEN + usize::from(self.length()) {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The VER field (high nibble of the first byte); 1 for RFC 2516.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_TYPE] >> 4
    }

    /// The TYPE field (low nibble of the first byte); 1 for RFC 2516.
    pub fn pppoe_type(&self) -> u8 {
        self.buffer.as_ref()[field::VER_TYPE] & 0x0f
    }

    pub fn code(&self) -> PppoeCode {
        PppoeCode::from(self.buffer.as_ref()[field::CODE])
    }

    /// 0 in PADI and PADO (no session yet); the session's id in PADS, PADT and session frames.
    pub fn session_id(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::SESSION_ID];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// The LENGTH field: payload bytes, excluding this header.
    pub fn length(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> PppoeHeader<&'a T> {
    /// The payload as `LENGTH` declares it, clamped to the buffer (so it never panics even on
    /// an unchecked view), without the Ethernet padding that may follow.
    pub fn payload(&self) -> &'a [u8] {
        let data = self.buffer.as_ref();
        let end = (HEADER_LEN + usize::from(self.length())).min(data.len());
        data.get(field::PAYLOAD..end).unwrap_or(&[])
    }

    /// The discovery tags of the payload. Meaningless for session frames.
    pub fn tags(&self) -> TagIter<'a> {
        TagIter::new(self.payload())
    }

    /// The PPP protocol of a session frame (the payload's first bytes). `Truncated` if the
    /// payload is too short to hold it.
    pub fn ppp_protocol(&self) -> Result<Protocol> {
        Ok(PppPacket::new_checked(self.payload())?.protocol())
    }

    /// The PPP information field of a session frame: the payload after the protocol field.
    pub fn ppp_payload(&self) -> Result<&'a [u8]> {
        Ok(PppPacket::new_checked(self.payload())?.payload())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PppoeHeader<T> {
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_TYPE];
        *b = (*b & 0x0f) | (version << 4);
    }

    pub fn set_pppoe_type(&mut self, pppoe_type: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_TYPE];
        *b = (*b & 0xf0) | (pppoe_type & 0x0f);
    }

    pub fn set_code(&mut self, code: PppoeCode) {
        self.buffer.as_mut()[field::CODE] = code.into();
    }

    pub fn set_session_id(&mut self, id: u16) {
        self.buffer.as_mut()[field::SESSION_ID].copy_from_slice(&id.to_be_bytes());
    }

    pub fn set_length(&mut self, length: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&length.to_be_bytes());
    }

    /// The payload as `LENGTH` declares it, clamped to the buffer. Set the length first.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = (HEADER_LEN + usize::from(self.length())).min(self.buffer.as_ref().len());
        self.buffer
            .as_mut()
            .get_mut(field::PAYLOAD..end)
            .unwrap_or(&mut [])
    }
}

/// The owned form of a PPPoE header. The payload (tags, or the PPP frame) is the caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PppoeRepr {
    pub code: PppoeCode,
    pub session_id: u16,
    /// Bytes of payload after the header (the LENGTH field).
    pub payload_len: u16,
}

impl PppoeRepr {
    /// Parses a header, refusing versions and types other than 1 (`Unsupported`): RFC 2516
    /// defines no others and their layout would be unknown.
    ///
    /// The session id is not checked against the code (RFC 2516 wants 0 in PADI): the state
    /// machines decide what to do with a peer that gets it wrong.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(header: &PppoeHeader<&T>) -> Result<Self> {
        header.check_len()?;
        if header.version() != VERSION || header.pppoe_type() != TYPE {
            return Err(Error::Unsupported("PPPoE version or type other than 1"));
        }
        Ok(PppoeRepr {
            code: header.code(),
            session_id: header.session_id(),
            payload_len: header.length(),
        })
    }

    /// Length of the header alone.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the header and its payload.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + usize::from(self.payload_len)
    }

    /// Writes every header byte. `Truncated` if the buffer cannot also hold the declared
    /// payload: a header promising more than the buffer holds would make a broken frame.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut PppoeHeader<T>) -> Result<()> {
        if header.buffer.as_ref().len() < self.total_len() {
            return Err(Error::Truncated);
        }
        header.buffer.as_mut()[field::VER_TYPE] = (VERSION << 4) | TYPE;
        header.set_code(self.code);
        header.set_session_id(self.session_id);
        header.set_length(self.payload_len);
        Ok(())
    }
}

/// A discovery tag type. Unknown types are kept: RFC 2516 says to ignore them, not to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagType {
    /// 0x0000: no further tags (optional; length 0).
    EndOfList,
    /// 0x0101: the service requested or offered; empty means "any".
    ServiceName,
    /// 0x0102: the access concentrator's name.
    AcName,
    /// 0x0103: opaque client data the AC must echo, to match replies to requests.
    HostUniq,
    /// 0x0104: opaque AC data the client must echo in its PADR (DoS protection).
    AcCookie,
    /// 0x0105: first four bytes are the vendor's IANA enterprise number.
    VendorSpecific,
    /// 0x0110: added by a relay, must be echoed.
    RelaySessionId,
    /// 0x0120: RFC 4638, the PPP MRU above 1492 a client can carry (value: u16).
    PppMaxPayload,
    /// 0x0201: the requested service cannot be honoured.
    ServiceNameError,
    /// 0x0202: the AC had an error performing the request.
    AcSystemError,
    /// 0x0203: any other error.
    GenericError,
    /// Any other value.
    Unknown(u16),
}

impl From<u16> for TagType {
    fn from(v: u16) -> Self {
        match v {
            0x0000 => TagType::EndOfList,
            0x0101 => TagType::ServiceName,
            0x0102 => TagType::AcName,
            0x0103 => TagType::HostUniq,
            0x0104 => TagType::AcCookie,
            0x0105 => TagType::VendorSpecific,
            0x0110 => TagType::RelaySessionId,
            0x0120 => TagType::PppMaxPayload,
            0x0201 => TagType::ServiceNameError,
            0x0202 => TagType::AcSystemError,
            0x0203 => TagType::GenericError,
            other => TagType::Unknown(other),
        }
    }
}

impl From<TagType> for u16 {
    fn from(t: TagType) -> u16 {
        match t {
            TagType::EndOfList => 0x0000,
            TagType::ServiceName => 0x0101,
            TagType::AcName => 0x0102,
            TagType::HostUniq => 0x0103,
            TagType::AcCookie => 0x0104,
            TagType::VendorSpecific => 0x0105,
            TagType::RelaySessionId => 0x0110,
            TagType::PppMaxPayload => 0x0120,
            TagType::ServiceNameError => 0x0201,
            TagType::AcSystemError => 0x0202,
            TagType::GenericError => 0x0203,
            TagType::Unknown(v) => v,
        }
    }
}

impl TagType {
    /// Whether the tag reports an error (its value, if any, is a UTF-8 explanation).
    pub fn is_error(self) -> bool {
        matches!(
            self,
            TagType::ServiceNameError | TagType::AcSystemError | TagType::GenericError
        )
    }
}

/// Iterates over the tags of a discovery payload as `(type, value)` without allocating.
///
/// A tag whose length overruns the payload, or a fragment shorter than a tag header, yields
/// one `Err(Truncated)`; an End-Of-List with a non-zero length yields `Err(Malformed)`. After an
/// error, or after End-Of-List (which is yielded), the iterator stops: nothing behind a broken
/// length can be trusted to be a tag boundary.
#[derive(Debug, Clone)]
pub struct TagIter<'a> {
    rest: &'a [u8],
    done: bool,
}

impl<'a> TagIter<'a> {
    /// Iterates over `payload` (the bytes after the PPPoE header, LENGTH of them).
    pub fn new(payload: &'a [u8]) -> Self {
        TagIter {
            rest: payload,
            done: false,
        }
    }
}

impl<'a> Iterator for TagIter<'a> {
    type Item = Result<(TagType, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.rest.is_empty() {
            return None;
        }
        let (ty, len) = match self.rest {
            [t0, t1, l0, l1, ..] => (
                TagType::from(u16::from_be_bytes([*t0, *t1])),
                usize::from(u16::from_be_bytes([*l0, *l1])),
            ),
            _ => {
                self.done = true;
                return Some(Err(Error::Truncated));
            }
        };
        let Some(value) = self.rest.get(TAG_HEADER_LEN..TAG_HEADER_LEN + len) else {
            self.done = true;
            return Some(Err(Error::Truncated));
        };
        self.rest = &self.rest[TAG_HEADER_LEN + len..];
        if ty == TagType::EndOfList {
            self.done = true;
            if len != 0 {
                return Some(Err(Error::Malformed("PPPoE End-Of-List tag length")));
            }
        }
        Some(Ok((ty, value)))
    }
}

/// The value of the first tag of type `ty` in `payload`, `None` if absent. Errors if the tag
/// list breaks before such a tag is found.
pub fn find_tag(payload: &[u8], ty: TagType) -> Result<Option<&[u8]>> {
    for tag in TagIter::new(payload) {
        let (t, value) = tag?;
        if t == ty {
            return Ok(Some(value));
        }
    }
    Ok(None)
}

/// Decodes a PPP-Max-Payload value (RFC 4638): exactly two bytes, big-endian.
pub fn parse_max_payload(value: &[u8]) -> Result<u16> {
    match value {
        [a, b] => Ok(u16::from_be_bytes([*a, *b])),
        _ => Err(Error::Malformed("PPPoE PPP-Max-Payload tag length")),
    }
}

/// Appends discovery tags to a buffer, typically the payload of a PPPoE header being built.
///
/// Each push either writes a whole tag or nothing, so after an error the bytes written so far
/// are still a valid tag list.
#[derive(Debug)]
pub struct TagWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> TagWriter<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        TagWriter { buf, len: 0 }
    }

    /// Appends one tag. `Truncated` if the buffer has no room for it, `Malformed` if the
    /// payload would exceed the 65,535 bytes the PPPoE LENGTH field can describe.
    pub fn push(&mut self, ty: TagType, value: &[u8]) -> Result<()> {
        let total = self.len + TAG_HEADER_LEN + value.len();
        if total > usize::from(u16::MAX) {
            return Err(Error::Malformed("PPPoE payload longer than 65535 bytes"));
        }
        let out = self.buf.get_mut(self.len..total).ok_or(Error::Truncated)?;
        // value.len() <= u16::MAX is implied by the total check above.
        let len = value.len() as u16;
        out[0..2].copy_from_slice(&u16::from(ty).to_be_bytes());
        out[2..4].copy_from_slice(&len.to_be_bytes());
        out[TAG_HEADER_LEN..].copy_from_slice(value);
        self.len = total;
        Ok(())
    }

    /// Appends a PPP-Max-Payload tag (RFC 4638).
    pub fn push_max_payload(&mut self, max_payload: u16) -> Result<()> {
        self.push(TagType::PppMaxPayload, &max_payload.to_be_bytes())
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Ends writing and returns the bytes written: the value for the PPPoE LENGTH field.
    pub fn finish(self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // PADI: ver/type 0x11, code 0x09, SESSION_ID 0x0000, length 12;
    // Service-Name (empty, "any service"), Host-Uniq de ad be ef; then Ethernet padding.
    static PADI: [u8; 22] = [
        0x11, 0x09, 0x00, 0x00, 0x00, 0x0c, //
        0x01, 0x01, 0x00, 0x00, //
        0x01, 0x03, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef, //
        0x00, 0x00, 0x00, 0x00, // padding past LENGTH
    ];

    // PADS: SESSION_ID 0x1234, Service-Name "isp", Host-Uniq 01 02.
    static PADS: [u8; 19] = [
        0x11, 0x65, 0x12, 0x34, 0x00, 0x0d, //
        0x01, 0x01, 0x00, 0x03, b'i', b's', b'p', //
        0x01, 0x03, 0x00, 0x02, 0x01, 0x02,
    ];

    // PADT: SESSION_ID 0x1234, no tags.
    static PADT: [u8; 6] = [0x11, 0xa7, 0x12, 0x34, 0x00, 0x00];

    // Session frame: SESSION_ID 0x1234, PPP protocol LCP, 4 bytes of LCP (Terminate-Ack).
    static SESSION: [u8; 12] = [
        0x11, 0x00, 0x12, 0x34, 0x00, 0x06, //
        0xc0, 0x21, 0x06, 0x02, 0x00, 0x04,
    ];

    #[test]
    fn deconstruct_padi() {
        let h = PppoeHeader::new_checked(&PADI[..]).unwrap();
        assert_eq!(h.version(), 1);
        assert_eq!(h.pppoe_type(), 1);
        assert_eq!(h.code(), PppoeCode::Padi);
        assert_eq!(h.session_id(), 0);
        assert_eq!(h.length(), 12);
        assert_eq!(h.payload().len(), 12);
        let tags: Vec<_> = h.tags().collect::<Result<_>>().unwrap();
        assert_eq!(
            tags,
            vec![
                (TagType::ServiceName, &[][..]),
                (TagType::HostUniq, &[0xde, 0xad, 0xbe, 0xef][..])
            ]
        );
        assert_eq!(
            find_tag(h.payload(), TagType::HostUniq),
            Ok(Some(&[0xde, 0xad, 0xbe, 0xef][..]))
        );
        assert_eq!(find_tag(h.payload(), TagType::AcCookie), Ok(None));
    }

    #[test]
    fn deconstruct_pads_padt_session() {
        let h = PppoeHeader::new_checked(&PADS[..]).unwrap();
        assert_eq!(h.code(), PppoeCode::Pads);
        assert_eq!(h.session_id(), 0x1234);
        let mut tags = h.tags();
        assert_eq!(tags.next(), Some(Ok((TagType::ServiceName, &b"isp"[..]))));
        assert_eq!(tags.next(), Some(Ok((TagType::HostUniq, &[1, 2][..]))));
        assert_eq!(tags.next(), None);

        let h = PppoeHeader::new_checked(&PADT[..]).unwrap();
        assert_eq!(h.code(), PppoeCode::Padt);
        assert_eq!(h.session_id(), 0x1234);
        assert_eq!(h.payload(), &[] as &[u8]);
        assert_eq!(h.tags().next(), None);

        let h = PppoeHeader::new_checked(&SESSION[..]).unwrap();
        assert_eq!(h.code(), PppoeCode::Session);
        assert!(!h.code().is_discovery());
        assert_eq!(h.ppp_protocol(), Ok(Protocol::LCP));
        assert_eq!(h.ppp_payload(), Ok(&[0x06, 0x02, 0x00, 0x04][..]));
    }

    #[test]
    fn check_len() {
        assert_eq!(
            PppoeHeader::new_checked(&PADI[..5]).err(),
            Some(Error::Truncated)
        );
        // LENGTH says 12, only 11 payload bytes present.
        assert_eq!(
            PppoeHeader::new_checked(&PADI[..17]).err(),
            Some(Error::Truncated)
        );
        // Version 2 is not ours.
        let mut v2 = PADT;
        v2[0] = 0x21;
        let h = PppoeHeader::new_checked(&v2[..]).unwrap();
        assert!(matches!(PppoeRepr::parse(&h), Err(Error::Unsupported(_))));
        // Unknown codes parse.
        let mut unk = PADT;
        unk[1] = 0x42;
        let h = PppoeHeader::new_checked(&unk[..]).unwrap();
        assert_eq!(PppoeRepr::parse(&h).unwrap().code, PppoeCode::Unknown(0x42));
        assert_eq!(PppoeCode::Unknown(0x42).to_string(), "code 0x42");
    }

    #[test]
    fn tag_iter_errors_then_stops() {
        // Second tag claims 8 bytes, 2 present.
        let p = [0x01, 0x01, 0x00, 0x00, 0x01, 0x03, 0x00, 0x08, 0xaa, 0xbb];
        let mut it = TagIter::new(&p);
        assert_eq!(it.next(), Some(Ok((TagType::ServiceName, &[][..]))));
        assert_eq!(it.next(), Some(Err(Error::Truncated)));
        assert_eq!(it.next(), None);
        // A fragment shorter than a tag header.
        let mut it = TagIter::new(&[0x01, 0x01, 0x00]);
        assert_eq!(it.next(), Some(Err(Error::Truncated)));
        assert_eq!(it.next(), None);
        // End-Of-List stops; what follows is not read.
        let p = [0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00];
        let mut it = TagIter::new(&p);
        assert_eq!(it.next(), Some(Ok((TagType::EndOfList, &[][..]))));
        assert_eq!(it.next(), None);
        // End-Of-List with a length.
        let p = [0x00, 0x00, 0x00, 0x01, 0x00];
        let mut it = TagIter::new(&p);
        assert!(matches!(it.next(), Some(Err(Error::Malformed(_)))));
        assert_eq!(it.next(), None);
        // Unknown type kept.
        let p = [0x7f, 0x01, 0x00, 0x01, 0x09];
        assert_eq!(
            TagIter::new(&p).next(),
            Some(Ok((TagType::Unknown(0x7f01), &[0x09][..])))
        );
    }

    #[test]
    fn construct_padi() {
        let mut buf = vec![0xa5; PADI.len()];
        let mut h = PppoeHeader::new_unchecked(&mut buf[..]);
        h.set_version(1);
        h.set_pppoe_type(1);
        h.set_code(PppoeCode::Padi);
        h.set_session_id(0);
        h.set_length(12);
        let n = {
            let mut w = TagWriter::new(h.payload_mut());
            w.push(TagType::ServiceName, &[]).unwrap();
            w.push(TagType::HostUniq, &[0xde, 0xad, 0xbe, 0xef])
                .unwrap();
            w.finish()
        };
        assert_eq!(n, 12);
        buf[18..].fill(0);
        assert_eq!(buf, PADI);
    }

    #[test]
    fn parse_and_emit_pads() {
        let h = PppoeHeader::new_checked(&PADS[..]).unwrap();
        let repr = PppoeRepr::parse(&h).unwrap();
        assert_eq!(
            repr,
            PppoeRepr {
                code: PppoeCode::Pads,
                session_id: 0x1234,
                payload_len: 13
            }
        );
        assert_eq!(repr.buffer_len(), HEADER_LEN);
        assert_eq!(repr.total_len(), PADS.len());

        let mut buf = vec![0xa5; PADS.len()];
        let mut h = PppoeHeader::new_unchecked(&mut buf[..]);
        repr.emit(&mut h).unwrap();
        let mut w = TagWriter::new(h.payload_mut());
        w.push(TagType::ServiceName, b"isp").unwrap();
        w.push(TagType::HostUniq, &[1, 2]).unwrap();
        assert_eq!(w.len(), 13);
        assert_eq!(buf, PADS);

        // Too small for the declared payload: an error, not a panic, and nothing written.
        let mut small = vec![0xa5; PADS.len() - 1];
        assert_eq!(
            repr.emit(&mut PppoeHeader::new_unchecked(&mut small[..])),
            Err(Error::Truncated)
        );
        assert!(small.iter().all(|&b| b == 0xa5));
    }

    #[test]
    fn emit_padt() {
        let repr = PppoeRepr {
            code: PppoeCode::Padt,
            session_id: 0x1234,
            payload_len: 0,
        };
        let mut buf = vec![0xa5; 6];
        repr.emit(&mut PppoeHeader::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, PADT);
    }

    #[test]
    fn tag_writer_room_and_max_payload() {
        let mut buf = [0xa5u8; 10];
        let mut w = TagWriter::new(&mut buf);
        w.push_max_payload(1500).unwrap();
        assert_eq!(w.push(TagType::AcName, b"ac"), Err(Error::Truncated));
        assert_eq!(w.finish(), 6);
        assert_eq!(&buf[..6], &[0x01, 0x20, 0x00, 0x02, 0x05, 0xdc]);
        assert_eq!(&buf[6..], &[0xa5; 4]);
        let (ty, v) = TagIter::new(&buf[..6]).next().unwrap().unwrap();
        assert_eq!(ty, TagType::PppMaxPayload);
        assert_eq!(parse_max_payload(v), Ok(1500));
        assert!(parse_max_payload(&[1]).is_err());
    }
}
