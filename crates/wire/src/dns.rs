//! DNS messages (RFC 1035 §4) as much as an authoritative responder for a few names needs:
//! the header with its flags, questions, resource records with A (RFC 1035 §3.4.1) and AAAA
//! (RFC 3596) data decoded and every other type kept as bytes (an EDNS OPT record, RFC 6891,
//! is one), and names with compression pointers followed on parse (§4.1.4).
//!
//! [`Name`] holds a name in uncompressed wire form in a fixed 255-byte array, so questions and
//! records are plain values and nothing allocates. [`DnsPacket`] is the view: header fields,
//! [`DnsPacket::questions`] and [`DnsPacket::records`] iterate the sections. [`DnsRepr`]
//! writes a message from slices of questions and records; a record's owner name equal to the
//! first question's is written as a pointer to it (offset 12), as servers do.
//!
//! Over TCP (RFC 1035 §4.2.2, RFC 7766) each message is preceded by its length as two bytes:
//! [`tcp_frame`] / [`tcp_message`].

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};

use crate::bytes::{be16, be32};
use crate::error::{Error, Result};

/// The server's port, UDP and TCP.
pub const PORT: u16 = 53;
pub const HEADER_LEN: usize = 12;
/// The largest message over UDP without EDNS (RFC 1035 §2.3.4).
pub const UDP_MAX: usize = 512;
/// The longest name in wire form (RFC 1035 §2.3.4), root label included.
pub const MAX_NAME_LEN: usize = 255;
/// The longest label.
pub const MAX_LABEL_LEN: usize = 63;

/// Resource record types (RFC 1035 §3.2.2, RFC 3596, RFC 6891).
pub mod rtype {
    pub const A: u16 = 1;
    pub const NS: u16 = 2;
    pub const CNAME: u16 = 5;
    pub const SOA: u16 = 6;
    pub const PTR: u16 = 12;
    pub const MX: u16 = 15;
    pub const TXT: u16 = 16;
    pub const AAAA: u16 = 28;
    pub const OPT: u16 = 41;
    pub const ANY: u16 = 255;
}

/// The Internet class.
pub const CLASS_IN: u16 = 1;

/// Response codes (RFC 1035 §4.1.1).
pub mod rcode {
    pub const NOERROR: u8 = 0;
    pub const FORMERR: u8 = 1;
    pub const SERVFAIL: u8 = 2;
    pub const NXDOMAIN: u8 = 3;
    pub const NOTIMP: u8 = 4;
    pub const REFUSED: u8 = 5;
}

/// The standard query opcode.
pub const OPCODE_QUERY: u8 = 0;

/// The second 16 bits of the header, field by field (RFC 1035 §4.1.1, RFC 4035 §3.2 for AD
/// and CD). Nothing is lost: `Flags::from_bits(f).bits() == f`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// A response (true) or a query.
    pub response: bool,
    /// Four bits; 0 is a standard query.
    pub opcode: u8,
    /// Authoritative answer.
    pub authoritative: bool,
    /// Truncated: the answer did not fit (retry over TCP).
    pub truncated: bool,
    /// Recursion desired (copied into the response).
    pub recursion_desired: bool,
    /// Recursion available.
    pub recursion_available: bool,
    /// The reserved bit, kept as it came.
    pub z: bool,
    pub authentic_data: bool,
    pub checking_disabled: bool,
    /// Four bits.
    pub rcode: u8,
}

impl Flags {
    pub fn from_bits(v: u16) -> Flags {
        let bit = |n: u16| v & (1 << n) != 0;
        Flags {
            response: bit(15),
            opcode: ((v >> 11) & 0xf) as u8,
            authoritative: bit(10),
            truncated: bit(9),
            recursion_desired: bit(8),
            recursion_available: bit(7),
            z: bit(6),
            authentic_data: bit(5),
            checking_disabled: bit(4),
            rcode: (v & 0xf) as u8,
        }
    }

    pub fn bits(&self) -> u16 {
        let b = |on: bool, n: u16| u16::from(on) << n;
        b(self.response, 15)
            | (u16::from(self.opcode & 0xf) << 11)
            | b(self.authoritative, 10)
            | b(self.truncated, 9)
            | b(self.recursion_desired, 8)
            | b(self.recursion_available, 7)
            | b(self.z, 6)
            | b(self.authentic_data, 5)
            | b(self.checking_disabled, 4)
            | u16::from(self.rcode & 0xf)
    }
}

/// A domain name in uncompressed wire form: length-prefixed labels ending with the root
/// label. Labels are bytes (DNS allows any); [`Name::from_dotted`] takes printable ASCII.
/// Equality is exact; DNS compares names without regard to ASCII case
/// ([`Name::eq_ignore_case`], [`Name::is_within`]).
#[derive(Clone, Copy)]
pub struct Name {
    len: u8,
    bytes: [u8; MAX_NAME_LEN],
}

impl Name {
    /// The root, `.`.
    pub const fn root() -> Name {
        Name {
            len: 1,
            bytes: [0; MAX_NAME_LEN],
        }
    }

    /// `aftr.example.net` (a trailing dot is allowed). Refuses empty labels, labels above 63
    /// bytes, names above 255 bytes in wire form and bytes that are not printable ASCII.
    pub fn from_dotted(s: &str) -> Result<Name> {
        let s = s.strip_suffix('.').unwrap_or(s);
        let mut n = Name::root();
        if s.is_empty() {
            return Ok(n);
        }
        let mut at = 0usize;
        for label in s.split('.') {
            if label.is_empty() {
                return Err(Error::Malformed("empty label in a dns name"));
            }
            if label.len() > MAX_LABEL_LEN {
                return Err(Error::Malformed("dns label above 63 bytes"));
            }
            if !label.bytes().all(|c| c.is_ascii_graphic()) {
                return Err(Error::Malformed("dns label is not printable ascii"));
            }
            if at + 1 + label.len() + 1 > MAX_NAME_LEN {
                return Err(Error::Malformed("dns name above 255 bytes"));
            }
            n.bytes[at] = label.len() as u8;
            n.bytes[at + 1..at + 1 + label.len()].copy_from_slice(label.as_bytes());
            at += 1 + label.len();
        }
        n.bytes[at] = 0;
        n.len = (at + 1) as u8;
        Ok(n)
    }

    /// Reads the name at `at` in `message`, following compression pointers (each must point
    /// before the position it is read at, so a loop is impossible); the name and the offset
    /// just after it where it was written (after the first pointer, if any).
    pub fn parse(message: &[u8], at: usize) -> Result<(Name, usize)> {
        let mut n = Name::root();
        let mut len = 0usize;
        let mut pos = at;
        let mut end = None;
        // Each jump goes strictly backwards, so this ends; the bound is for the reader.
        loop {
            let l = *message.get(pos).ok_or(Error::Truncated)?;
            match l {
                0 => {
                    n.bytes[len] = 0;
                    n.len = (len + 1) as u8;
                    return Ok((n, end.unwrap_or(pos + 1)));
                }
                0xc0..=0xff => {
                    let lo = *message.get(pos + 1).ok_or(Error::Truncated)?;
                    let target = usize::from(u16::from_be_bytes([l & 0x3f, lo]));
                    if target >= pos {
                        return Err(Error::Malformed("dns compression pointer not backwards"));
                    }
                    end.get_or_insert(pos + 2);
                    pos = target;
                }
                1..=63 => {
                    let l = usize::from(l);
                    let label = message.get(pos + 1..pos + 1 + l).ok_or(Error::Truncated)?;
                    if len + 1 + l + 1 > MAX_NAME_LEN {
                        return Err(Error::Malformed("dns name above 255 bytes"));
                    }
                    n.bytes[len] = l as u8;
                    n.bytes[len + 1..len + 1 + l].copy_from_slice(label);
                    len += 1 + l;
                    pos += 1 + l;
                }
                _ => return Err(Error::Malformed("dns label type 01/10 (RFC 6891 §5)")),
            }
        }
    }

    /// The wire form (uncompressed, root label included).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The labels, root excluded.
    pub fn labels(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let b = self.as_bytes();
        let mut at = 0usize;
        core::iter::from_fn(move || {
            let l = usize::from(*b.get(at)?);
            if l == 0 {
                return None;
            }
            let label = b.get(at + 1..at + 1 + l)?;
            at += 1 + l;
            Some(label)
        })
    }

    pub fn is_root(&self) -> bool {
        self.len == 1
    }

    /// Equal, ignoring ASCII case.
    pub fn eq_ignore_case(&self, other: &Name) -> bool {
        self.as_bytes().eq_ignore_ascii_case(other.as_bytes())
    }

    /// Whether this name is `zone` or below it, ignoring ASCII case.
    pub fn is_within(&self, zone: &Name) -> bool {
        let mine: Vec<&[u8]> = self.labels().collect();
        let theirs: Vec<&[u8]> = zone.labels().collect();
        theirs.len() <= mine.len()
            && mine[mine.len() - theirs.len()..]
                .iter()
                .zip(&theirs)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    }

    /// The name without its first label (the root for a one-label name and for the root).
    pub fn parent(&self) -> Name {
        let b = self.as_bytes();
        let skip = if self.is_root() {
            0
        } else {
            1 + usize::from(b[0])
        };
        let mut n = Name::root();
        let rest = &b[skip..];
        n.bytes[..rest.len()].copy_from_slice(rest);
        n.len = rest.len() as u8;
        n
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Name {}

impl fmt::Display for Name {
    /// Dotted, without the trailing dot (`.` for the root); bytes that are not printable
    /// ASCII, and dots inside a label, as `\DDD` (RFC 1035 §5.1).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        for (i, label) in self.labels().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            for &c in label {
                if c.is_ascii_graphic() && c != b'.' && c != b'\\' {
                    write!(f, "{}", c as char)?;
                } else {
                    write!(f, "\\{c:03}")?;
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({self})")
    }
}

/// One entry of the question section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Question {
    pub name: Name,
    pub qtype: u16,
    pub qclass: u16,
}

/// The data of a record: addresses decoded, everything else as it is on the wire (names in
/// it may hold compression pointers into the message it came from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RData<'a> {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Other(&'a [u8]),
}

impl RData<'_> {
    fn len(&self) -> usize {
        match self {
            RData::A(_) => 4,
            RData::Aaaa(_) => 16,
            RData::Other(b) => b.len(),
        }
    }
}

/// A resource record (RFC 1035 §4.1.3). For an OPT pseudo-record (RFC 6891 §6.1.2) `class`
/// is the requester's UDP payload size and `ttl` the extended rcode, version and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub name: Name,
    pub rtype: u16,
    pub class: u16,
    pub ttl: u32,
    pub data: RData<'a>,
}

/// Which section a record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Answer,
    Authority,
    Additional,
}

/// A view of a DNS message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> DnsPacket<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        DnsPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        if p.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    fn u16_at(&self, at: usize) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[at], b[at + 1]])
    }

    pub fn id(&self) -> u16 {
        self.u16_at(0)
    }

    pub fn flags(&self) -> Flags {
        Flags::from_bits(self.u16_at(2))
    }

    pub fn question_count(&self) -> u16 {
        self.u16_at(4)
    }

    pub fn answer_count(&self) -> u16 {
        self.u16_at(6)
    }

    pub fn authority_count(&self) -> u16 {
        self.u16_at(8)
    }

    pub fn additional_count(&self) -> u16 {
        self.u16_at(10)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> DnsPacket<&'a T> {
    /// The question section, as many entries as the header counts; a broken one yields an
    /// error and ends the iteration.
    pub fn questions(&self) -> Questions<'a> {
        Questions {
            msg: self.buffer.as_ref(),
            at: HEADER_LEN,
            left: self.question_count(),
        }
    }

    /// The answer, authority and additional sections in order, each record with its
    /// section; an error (a broken question section included) ends the iteration.
    pub fn records(&self) -> Records<'a> {
        let mut q = self.questions();
        let mut err = None;
        for x in q.by_ref() {
            if let Err(e) = x {
                err = Some(e);
            }
        }
        Records {
            msg: self.buffer.as_ref(),
            at: q.at,
            counts: [
                self.answer_count(),
                self.authority_count(),
                self.additional_count(),
            ],
            err,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DnsPacket<T> {
    fn put16(&mut self, at: usize, v: u16) {
        self.buffer.as_mut()[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_id(&mut self, v: u16) {
        self.put16(0, v);
    }

    pub fn set_flags(&mut self, f: Flags) {
        self.put16(2, f.bits());
    }

    pub fn set_counts(&mut self, questions: u16, answers: u16, authority: u16, additional: u16) {
        self.put16(4, questions);
        self.put16(6, answers);
        self.put16(8, authority);
        self.put16(10, additional);
    }
}

/// Iterator over the question section ([`DnsPacket::questions`]).
#[derive(Debug, Clone)]
pub struct Questions<'a> {
    msg: &'a [u8],
    at: usize,
    left: u16,
}

impl Iterator for Questions<'_> {
    type Item = Result<Question>;

    fn next(&mut self) -> Option<Result<Question>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let r = (|| {
            let (name, at) = Name::parse(self.msg, self.at)?;
            let qtype = be16(self.msg, at).ok_or(Error::Truncated)?;
            let qclass = be16(self.msg, at + 2).ok_or(Error::Truncated)?;
            self.at = at + 4;
            Ok(Question {
                name,
                qtype,
                qclass,
            })
        })();
        if r.is_err() {
            self.left = 0;
        }
        Some(r)
    }
}

/// Iterator over the record sections ([`DnsPacket::records`]).
#[derive(Debug, Clone)]
pub struct Records<'a> {
    msg: &'a [u8],
    at: usize,
    counts: [u16; 3],
    err: Option<Error>,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<(Section, Record<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.err.take() {
            self.counts = [0; 3];
            return Some(Err(e));
        }
        let i = self.counts.iter().position(|&c| c > 0)?;
        self.counts[i] -= 1;
        let section = [Section::Answer, Section::Authority, Section::Additional][i];
        let r = (|| {
            let (name, at) = Name::parse(self.msg, self.at)?;
            let rtype = be16(self.msg, at).ok_or(Error::Truncated)?;
            let class = be16(self.msg, at + 2).ok_or(Error::Truncated)?;
            let ttl = be32(self.msg, at + 4).ok_or(Error::Truncated)?;
            let len = usize::from(be16(self.msg, at + 8).ok_or(Error::Truncated)?);
            let data = self
                .msg
                .get(at + 10..at + 10 + len)
                .ok_or(Error::Truncated)?;
            let data = match (rtype, class, data) {
                (rtype::A, CLASS_IN, [a, b, c, d]) => RData::A(Ipv4Addr::new(*a, *b, *c, *d)),
                (rtype::A, CLASS_IN, _) => return Err(Error::Malformed("dns A record length")),
                (rtype::AAAA, CLASS_IN, d) => {
                    let a: [u8; 16] = d
                        .try_into()
                        .map_err(|_| Error::Malformed("dns AAAA record length"))?;
                    RData::Aaaa(Ipv6Addr::from(a))
                }
                (_, _, d) => RData::Other(d),
            };
            self.at = at + 10 + len;
            Ok((
                section,
                Record {
                    name,
                    rtype,
                    class,
                    ttl,
                    data,
                },
            ))
        })();
        if r.is_err() {
            self.counts = [0; 3];
        }
        Some(r)
    }
}

/// A message to write: header, questions and the three record sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DnsRepr<'a> {
    pub id: u16,
    pub flags: Flags,
    pub questions: &'a [Question],
    pub answers: &'a [Record<'a>],
    pub authority: &'a [Record<'a>],
    pub additional: &'a [Record<'a>],
}

/// The two bytes of a pointer to offset 12, where the first question's name is written.
const POINTER_TO_QUESTION: [u8; 2] = [0xc0, HEADER_LEN as u8];

impl DnsRepr<'_> {
    fn records(&self) -> impl Iterator<Item = &Record<'_>> {
        self.answers
            .iter()
            .chain(self.authority)
            .chain(self.additional)
    }

    /// Whether `name` is written as a pointer to the first question's.
    fn compressed(&self, name: &Name) -> bool {
        !name.is_root() && self.questions.first().is_some_and(|q| q.name == *name)
    }

    fn name_len(&self, name: &Name) -> usize {
        if self.compressed(name) {
            2
        } else {
            name.as_bytes().len()
        }
    }

    /// The message's length.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + self
                .questions
                .iter()
                .map(|q| q.name.as_bytes().len() + 4)
                .sum::<usize>()
            + self
                .records()
                .map(|r| self.name_len(&r.name) + 10 + r.data.len())
                .sum::<usize>()
    }

    /// Writes the message into `buf[..buffer_len()]`; the bytes written. Refuses more than
    /// 65,535 entries in a section or record data above 65,535 bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        let b = buf.get_mut(..len).ok_or(Error::Truncated)?;
        let count =
            |n: usize| u16::try_from(n).map_err(|_| Error::Malformed("dns section above 65535"));
        let mut p = DnsPacket::new_unchecked(&mut *b);
        p.set_id(self.id);
        p.set_flags(self.flags);
        p.set_counts(
            count(self.questions.len())?,
            count(self.answers.len())?,
            count(self.authority.len())?,
            count(self.additional.len())?,
        );
        let mut at = HEADER_LEN;
        let mut put = |b: &mut [u8], bytes: &[u8]| {
            b[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        for q in self.questions {
            put(b, q.name.as_bytes());
            put(b, &q.qtype.to_be_bytes());
            put(b, &q.qclass.to_be_bytes());
        }
        for r in self.records() {
            if self.compressed(&r.name) {
                put(b, &POINTER_TO_QUESTION);
            } else {
                put(b, r.name.as_bytes());
            }
            put(b, &r.rtype.to_be_bytes());
            put(b, &r.class.to_be_bytes());
            put(b, &r.ttl.to_be_bytes());
            let dlen = u16::try_from(r.data.len())
                .map_err(|_| Error::Malformed("dns record data above 65535"))?;
            put(b, &dlen.to_be_bytes());
            match r.data {
                RData::A(a) => put(b, &a.octets()),
                RData::Aaaa(a) => put(b, &a.octets()),
                RData::Other(d) => put(b, d),
            }
        }
        Ok(len)
    }
}

/// A message over TCP: its length as two bytes, then the message (RFC 1035 §4.2.2).
pub fn tcp_frame(message: &[u8], out: &mut [u8]) -> Result<usize> {
    let n =
        u16::try_from(message.len()).map_err(|_| Error::Malformed("dns message above 65535"))?;
    let dst = out.get_mut(..2 + message.len()).ok_or(Error::Truncated)?;
    dst[..2].copy_from_slice(&n.to_be_bytes());
    dst[2..].copy_from_slice(message);
    Ok(2 + message.len())
}

/// The first whole message at the start of a TCP stream's bytes and how many bytes it took
/// (length prefix included); `None` while it has not all arrived.
pub fn tcp_message(stream: &[u8]) -> Option<(&[u8], usize)> {
    let n = usize::from(be16(stream, 0)?);
    let m = stream.get(2..2 + n)?;
    Some((m, 2 + n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn name(s: &str) -> Name {
        Name::from_dotted(s).unwrap()
    }

    /// `dig @198.51.100.53 aftr.example.net AAAA` from Debian 12's dig 9.18 (captured with
    /// tcpdump): id 0xaf66, RD and AD set, one question, an OPT record (UDP size 1232, DO
    /// clear) carrying a client cookie.
    const DIG_QUERY: &str = "af66012000010000000000010461667472076578616d706c65036e657400001c000100002904d000000000000c000a0008d5b59f0782ed45d4";
    /// The same with `+noedns +nocookie`: id 0xa401, no additional record.
    const DIG_QUERY_NOEDNS: &str =
        "a401012000010000000000000461667472076578616d706c65036e657400001c0001";

    #[test]
    fn dig_queries_parse() {
        let b = unhex(DIG_QUERY);
        let p = DnsPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.id(), 0xaf66);
        let f = p.flags();
        assert!(!f.response && f.recursion_desired && f.authentic_data);
        assert_eq!((f.opcode, f.rcode), (OPCODE_QUERY, rcode::NOERROR));
        assert_eq!(f.bits(), 0x0120);
        let q: Vec<Question> = p.questions().collect::<Result<_>>().unwrap();
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].name, name("aftr.example.net"));
        assert_eq!(q[0].name.to_string(), "aftr.example.net");
        assert_eq!((q[0].qtype, q[0].qclass), (rtype::AAAA, CLASS_IN));
        let r: Vec<_> = p.records().collect::<Result<_>>().unwrap();
        assert_eq!(r.len(), 1);
        let (section, opt) = r[0];
        assert_eq!(section, Section::Additional);
        assert!(opt.name.is_root());
        assert_eq!((opt.rtype, opt.class, opt.ttl), (rtype::OPT, 1232, 0));
        // The cookie option (10) with an 8-byte client cookie.
        assert!(matches!(opt.data, RData::Other(d) if d.len() == 12 && d[..4] == [0, 10, 0, 8]));
        let b = unhex(DIG_QUERY_NOEDNS);
        let p = DnsPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.records().count(), 0);
        assert_eq!(p.questions().count(), 1);
    }

    // The answer an authoritative server gives the no-EDNS query, written out by hand from
    // RFC 1035 §4.1 and RFC 3596 §2.2: id 0xa401, QR AA RD, NOERROR, one question, one AAAA
    // answer 2001:db8:d::1 (TTL 300) whose owner is a pointer to the question (0xc00c).
    const ANSWER: &str = "a401850000010001000000000461667472076578616d706c65036e657400001c0001c00c001c00010000012c001020010db8000d00000000000000000001";

    #[test]
    fn an_aaaa_answer_is_byte_exact_with_the_owner_compressed() {
        let q = [Question {
            name: name("aftr.example.net"),
            qtype: rtype::AAAA,
            qclass: CLASS_IN,
        }];
        let a = [Record {
            name: name("aftr.example.net"),
            rtype: rtype::AAAA,
            class: CLASS_IN,
            ttl: 300,
            data: RData::Aaaa("2001:db8:d::1".parse().unwrap()),
        }];
        let r = DnsRepr {
            id: 0xa401,
            flags: Flags {
                response: true,
                authoritative: true,
                recursion_desired: true,
                ..Flags::default()
            },
            questions: &q,
            answers: &a,
            authority: &[],
            additional: &[],
        };
        let mut b = vec![0xa5; 200];
        let n = r.emit(&mut b).unwrap();
        assert_eq!(n, r.buffer_len());
        assert_eq!(b[..n], unhex(ANSWER)[..]);
        let p = DnsPacket::new_checked(&b[..n]).unwrap();
        let rec: Vec<_> = p.records().collect::<Result<_>>().unwrap();
        assert_eq!(rec, [(Section::Answer, a[0])], "the pointer is followed");
        assert_eq!(r.emit(&mut [0u8; 40]), Err(Error::Truncated));
    }

    #[test]
    fn names() {
        assert_eq!(name("").as_bytes(), [0]);
        assert_eq!(name("a.").as_bytes(), [1, b'a', 0]);
        assert!(Name::from_dotted("a..b").is_err());
        assert!(Name::from_dotted(&"x".repeat(64)).is_err());
        assert!(
            Name::from_dotted(&["abcdefgh"; 30].join(".")).is_err(),
            "270 bytes"
        );
        assert!(Name::from_dotted("a b").is_err());
        let n = name("Aftr.Example.NET");
        assert!(n.eq_ignore_case(&name("aftr.example.net")) && n != name("aftr.example.net"));
        assert!(n.is_within(&name("example.net")) && n.is_within(&name("NET")));
        assert!(n.is_within(&Name::root()) && !name("net").is_within(&name("example.net")));
        assert!(!name("badexample.net").is_within(&name("example.net")));
        assert_eq!(n.parent().to_string(), "Example.NET");
        assert!(name("net").parent().is_root() && Name::root().parent().is_root());
        assert_eq!(Name::root().to_string(), ".");
        // Pointers must go backwards: to itself, forwards, and label types 01/10 are refused.
        assert!(Name::parse(&[0xc0, 0x00], 0).is_err());
        assert!(Name::parse(&[0, 0xc0, 0x03, 0], 1).is_err());
        assert!(Name::parse(&[0x40], 0).is_err());
        assert_eq!(Name::parse(&[1, b'x', 0, 0xc0, 0], 3), Ok((name("x"), 5)));
        assert_eq!(Name::parse(&[3, b'a', b'b'], 0), Err(Error::Truncated));
        // A chain of pointers growing the name past 255 bytes is refused.
        let mut m = vec![63u8];
        m.extend([b'x'; 63]);
        m.push(0);
        for i in 0..5 {
            let back = if i == 0 { 0 } else { m.len() - 66 };
            m.push(63);
            m.extend([b'y'; 63]);
            m.extend([0xc0 | (back >> 8) as u8, back as u8]);
        }
        let last = m.len() - 66;
        assert!(matches!(Name::parse(&m, last), Err(Error::Malformed(_))));
        let odd = Name::parse(&[2, b'.', 0x01, 0], 0).unwrap().0;
        assert_eq!(odd.to_string(), "\\046\\001");
    }

    #[test]
    fn tcp_framing() {
        let mut out = [0u8; 8];
        assert_eq!(tcp_frame(&[1, 2, 3], &mut out), Ok(5));
        assert_eq!(&out[..5], &[0, 3, 1, 2, 3]);
        assert_eq!(tcp_message(&out[..4]), None);
        assert_eq!(tcp_message(&out[..5]), Some((&[1u8, 2, 3][..], 5)));
        assert_eq!(tcp_message(&[0]), None);
        assert_eq!(tcp_frame(&[1, 2, 3], &mut out[..4]), Err(Error::Truncated));
    }

    #[test]
    fn truncations_and_bad_records_are_errors() {
        let b = unhex(DIG_QUERY);
        for n in 0..b.len() {
            if let Ok(p) = DnsPacket::new_checked(&b[..n]) {
                let ok = p.questions().all(|q| q.is_ok()) && p.records().all(|r| r.is_ok());
                assert!(!ok, "{n}");
            }
        }
        // The answer's type turned into A, with its 16 bytes of data.
        let mut a = unhex(ANSWER);
        let at = a.len() - 26;
        a[at..at + 2].copy_from_slice(&rtype::A.to_be_bytes());
        let p = DnsPacket::new_checked(&a[..]).unwrap();
        assert!(matches!(p.records().next(), Some(Err(Error::Malformed(_)))));
    }
}
