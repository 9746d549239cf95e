//! DHCPv6 (RFC 8415) messages between client and server, the options a stateful server for
//! a home gateway needs — identifiers, IA_NA with IA Address, IA_PD with IA Prefix, status
//! codes, Option Request, Rapid Commit, DNS servers (RFC 3646) — and AFTR-Name (RFC 6334),
//! whose value is a DNS name in wire format (RFC 1035 §3.1, no compression), handled by
//! [`encode_name`] / [`decode_name`].
//!
//! Options nest (an IA carries its addresses, an address its status), so parsing is an
//! iterator over `(code, value)` pairs ([`Dhcpv6Options`]) plus small reprs that read one
//! option's value; emitting goes through [`OptionWriter`], which writes into a caller's buffer
//! and fills in the length of a container option when it is closed. Nothing allocates.

use crate::bytes::Fields;
use core::net::Ipv6Addr;

use crate::error::{Error, Result};

/// Client and server UDP ports (RFC 8415 §7.2).
pub const CLIENT_PORT: u16 = 546;
pub const SERVER_PORT: u16 = 547;
/// All_DHCP_Relay_Agents_and_Servers (RFC 8415 §7.1): where clients send.
pub const ALL_SERVERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 1, 2);

/// Message type and 24-bit transaction id.
pub const HEADER_LEN: usize = 4;

/// Message types (RFC 8415 §7.3).
pub mod msg {
    pub const SOLICIT: u8 = 1;
    pub const ADVERTISE: u8 = 2;
    pub const REQUEST: u8 = 3;
    pub const CONFIRM: u8 = 4;
    pub const RENEW: u8 = 5;
    pub const REBIND: u8 = 6;
    pub const REPLY: u8 = 7;
    pub const RELEASE: u8 = 8;
    pub const DECLINE: u8 = 9;
    pub const RECONFIGURE: u8 = 10;
    pub const INFORMATION_REQUEST: u8 = 11;
    pub const RELAY_FORW: u8 = 12;
    pub const RELAY_REPL: u8 = 13;
}

/// Option codes (RFC 8415 §21, RFC 3646, RFC 6334).
pub mod opt {
    pub const CLIENTID: u16 = 1;
    pub const SERVERID: u16 = 2;
    pub const IA_NA: u16 = 3;
    pub const IA_TA: u16 = 4;
    pub const IAADDR: u16 = 5;
    pub const ORO: u16 = 6;
    pub const PREFERENCE: u16 = 7;
    pub const ELAPSED_TIME: u16 = 8;
    pub const STATUS_CODE: u16 = 13;
    pub const RAPID_COMMIT: u16 = 14;
    pub const DNS_SERVERS: u16 = 23;
    pub const DOMAIN_LIST: u16 = 24;
    pub const IA_PD: u16 = 25;
    pub const IAPREFIX: u16 = 26;
    pub const AFTR_NAME: u16 = 64;
}

/// Status codes (RFC 8415 §21.13).
pub mod status {
    pub const SUCCESS: u16 = 0;
    pub const UNSPEC_FAIL: u16 = 1;
    pub const NO_ADDRS_AVAIL: u16 = 2;
    pub const NO_BINDING: u16 = 3;
    pub const NOT_ON_LINK: u16 = 4;
    pub const USE_MULTICAST: u16 = 5;
    pub const NO_PREFIX_AVAIL: u16 = 6;
}

/// A view of a client/server DHCPv6 message (the UDP payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dhcpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Dhcpv6Packet<T> {
    /// Wraps `buffer` without checking its length; getters may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Dhcpv6Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        if p.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[0]
    }

    /// The 24-bit transaction id.
    pub fn transaction_id(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([0, b[1], b[2], b[3]])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Dhcpv6Packet<&'a T> {
    /// The option bytes after the header.
    pub fn options(&self) -> Dhcpv6Options<'a> {
        Dhcpv6Options::new(&self.buffer.as_ref()[HEADER_LEN..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Dhcpv6Packet<T> {
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[0] = v;
    }

    /// Only the low 24 bits are used.
    pub fn set_transaction_id(&mut self, v: u32) {
        self.buffer.as_mut()[1..4].copy_from_slice(&v.to_be_bytes()[1..]);
    }
}

/// `(code, value)` of each option in a run of options. Yields one error and stops at an option
/// whose header or value runs past the end.
#[derive(Debug, Clone)]
pub struct Dhcpv6Options<'a> {
    rest: &'a [u8],
}

impl<'a> Dhcpv6Options<'a> {
    pub fn new(bytes: &'a [u8]) -> Dhcpv6Options<'a> {
        Dhcpv6Options { rest: bytes }
    }

    /// The value of the first option with `code`; an error if the options are broken before it.
    pub fn find(self, code: u16) -> Result<Option<&'a [u8]>> {
        for o in self {
            let (c, v) = o?;
            if c == code {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    /// Whether every option is well framed.
    pub fn check(self) -> Result<()> {
        for o in self {
            o?;
        }
        Ok(())
    }
}

impl<'a> Iterator for Dhcpv6Options<'a> {
    type Item = Result<(u16, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.rest;
        if r.len() < 4 {
            self.rest = &[];
            return Some(Err(Error::Malformed("dhcpv6 option header truncated")));
        }
        let code = u16::from_be_bytes([r[0], r[1]]);
        let len = usize::from(u16::from_be_bytes([r[2], r[3]]));
        let Some(v) = r.get(4..4 + len) else {
            self.rest = &[];
            return Some(Err(Error::Malformed(
                "dhcpv6 option overruns its container",
            )));
        };
        self.rest = &r[4 + len..];
        Some(Ok((code, v)))
    }
}

fn addr(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(b);
    Ipv6Addr::from(a)
}

/// An IA_NA or IA_PD (RFC 8415 §21.4, §21.21): the same layout, IAID, T1, T2 and options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IaRepr<'a> {
    pub iaid: u32,
    pub t1: u32,
    pub t2: u32,
    /// IA Address / IA Prefix / Status Code options inside.
    pub options: &'a [u8],
}

impl<'a> IaRepr<'a> {
    pub fn parse(value: &'a [u8]) -> Result<IaRepr<'a>> {
        if value.len() < 12 {
            return Err(Error::Malformed("ia option shorter than 12 bytes"));
        }
        let options = &value[12..];
        Dhcpv6Options::new(options).check()?;
        Ok(IaRepr {
            iaid: value.u32_at(0..4),
            t1: value.u32_at(4..8),
            t2: value.u32_at(8..12),
            options,
        })
    }

    /// The IA's own options.
    pub fn options(&self) -> Dhcpv6Options<'a> {
        Dhcpv6Options::new(self.options)
    }
}

/// An IA Address (RFC 8415 §21.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IaAddrRepr<'a> {
    pub addr: Ipv6Addr,
    pub preferred: u32,
    pub valid: u32,
    pub options: &'a [u8],
}

impl<'a> IaAddrRepr<'a> {
    pub fn parse(value: &'a [u8]) -> Result<IaAddrRepr<'a>> {
        if value.len() < 24 {
            return Err(Error::Malformed("ia address option shorter than 24 bytes"));
        }
        let options = &value[24..];
        Dhcpv6Options::new(options).check()?;
        Ok(IaAddrRepr {
            addr: addr(&value[..16]),
            preferred: value.u32_at(16..20),
            valid: value.u32_at(20..24),
            options,
        })
    }
}

/// An IA Prefix (RFC 8415 §21.22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IaPrefixRepr<'a> {
    pub preferred: u32,
    pub valid: u32,
    pub prefix_len: u8,
    pub prefix: Ipv6Addr,
    pub options: &'a [u8],
}

impl<'a> IaPrefixRepr<'a> {
    pub fn parse(value: &'a [u8]) -> Result<IaPrefixRepr<'a>> {
        if value.len() < 25 {
            return Err(Error::Malformed("ia prefix option shorter than 25 bytes"));
        }
        if value[8] > 128 {
            return Err(Error::Malformed("ia prefix length above 128"));
        }
        let options = &value[25..];
        Dhcpv6Options::new(options).check()?;
        Ok(IaPrefixRepr {
            preferred: value.u32_at(0..4),
            valid: value.u32_at(4..8),
            prefix_len: value[8],
            prefix: addr(&value[9..25]),
            options,
        })
    }
}

/// A Status Code option's value: the code and its UTF-8 message bytes.
pub fn parse_status(value: &[u8]) -> Result<(u16, &[u8])> {
    if value.len() < 2 {
        return Err(Error::Malformed("status code option shorter than 2 bytes"));
    }
    Ok((u16::from_be_bytes([value[0], value[1]]), &value[2..]))
}

/// The option codes an Option Request option lists (a trailing odd byte is ignored).
pub fn parse_oro(value: &[u8]) -> impl Iterator<Item = u16> + '_ {
    value
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
}

/// Writes options into a buffer; container options (IA_NA, IA_PD, IA Address, …) are opened
/// with [`begin`](Self::begin) and their length filled in by [`end`](Self::end).
#[derive(Debug)]
pub struct OptionWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

/// A container option opened by [`OptionWriter::begin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "close the option with OptionWriter::end"]
pub struct Open(usize);

impl<'a> OptionWriter<'a> {
    /// Writes from `buf[at..]` (e.g. after the 4-byte message header).
    pub fn new(buf: &'a mut [u8], at: usize) -> OptionWriter<'a> {
        OptionWriter { buf, len: at }
    }

    /// Bytes written so far, counting the `at` of [`new`](Self::new).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn raw(&mut self, b: &[u8]) -> Result<()> {
        let end = self.len + b.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(Error::Truncated)?
            .copy_from_slice(b);
        self.len = end;
        Ok(())
    }

    /// One option with its whole value.
    pub fn put(&mut self, code: u16, value: &[u8]) -> Result<()> {
        let n = u16::try_from(value.len()).map_err(|_| Error::Malformed("option above 65535"))?;
        self.raw(&code.to_be_bytes())?;
        self.raw(&n.to_be_bytes())?;
        self.raw(value)
    }

    /// Opens a container option and writes the fixed part of its value.
    pub fn begin(&mut self, code: u16, fixed: &[u8]) -> Result<Open> {
        let at = self.len;
        self.raw(&code.to_be_bytes())?;
        self.raw(&[0, 0])?;
        self.raw(fixed)?;
        Ok(Open(at))
    }

    /// Closes a container: its length covers everything written since `begin`.
    pub fn end(&mut self, open: Open) -> Result<()> {
        let n = u16::try_from(self.len - open.0 - 4)
            .map_err(|_| Error::Malformed("option above 65535"))?;
        self.buf[open.0 + 2..open.0 + 4].copy_from_slice(&n.to_be_bytes());
        Ok(())
    }

    /// Opens an IA_NA or IA_PD.
    pub fn begin_ia(&mut self, code: u16, iaid: u32, t1: u32, t2: u32) -> Result<Open> {
        let mut f = [0u8; 12];
        f[..4].copy_from_slice(&iaid.to_be_bytes());
        f[4..8].copy_from_slice(&t1.to_be_bytes());
        f[8..].copy_from_slice(&t2.to_be_bytes());
        self.begin(code, &f)
    }

    /// An IA Address without options of its own.
    pub fn ia_addr(&mut self, a: Ipv6Addr, preferred: u32, valid: u32) -> Result<()> {
        let mut v = [0u8; 24];
        v[..16].copy_from_slice(&a.octets());
        v[16..20].copy_from_slice(&preferred.to_be_bytes());
        v[20..].copy_from_slice(&valid.to_be_bytes());
        self.put(opt::IAADDR, &v)
    }

    /// An IA Prefix without options of its own.
    pub fn ia_prefix(
        &mut self,
        prefix: Ipv6Addr,
        len: u8,
        preferred: u32,
        valid: u32,
    ) -> Result<()> {
        let mut v = [0u8; 25];
        v[..4].copy_from_slice(&preferred.to_be_bytes());
        v[4..8].copy_from_slice(&valid.to_be_bytes());
        v[8] = len;
        v[9..].copy_from_slice(&prefix.octets());
        self.put(opt::IAPREFIX, &v)
    }

    /// A Status Code with a message.
    pub fn status(&mut self, code: u16, message: &str) -> Result<()> {
        let o = self.begin(opt::STATUS_CODE, &code.to_be_bytes())?;
        self.raw(message.as_bytes())?;
        self.end(o)
    }

    /// A list of IPv6 addresses (DNS servers, option 23).
    pub fn addresses(&mut self, code: u16, list: &[Ipv6Addr]) -> Result<()> {
        let o = self.begin(code, &[])?;
        for a in list {
            self.raw(&a.octets())?;
        }
        self.end(o)
    }

    /// A DNS name in wire format (AFTR-Name, option 64).
    pub fn name(&mut self, code: u16, name: &str) -> Result<()> {
        let mut tmp = [0u8; MAX_NAME_LEN];
        let n = encode_name(name, &mut tmp)?;
        self.put(code, &tmp[..n])
    }
}

/// The longest DNS name in wire format (RFC 1035 §2.3.4).
pub const MAX_NAME_LEN: usize = 255;

/// Writes `name` ("aftr.example.net", a trailing dot allowed) as uncompressed labels ending
/// with the root label; the bytes written. Refuses empty labels, labels above 63 bytes and
/// names above 255 bytes.
pub fn encode_name(name: &str, out: &mut [u8]) -> Result<usize> {
    let name = name.strip_suffix('.').unwrap_or(name);
    let mut at = 0;
    if !name.is_empty() {
        for label in name.split('.') {
            let l = label.len();
            if l == 0 {
                return Err(Error::Malformed("empty label in a dns name"));
            }
            if l > 63 {
                return Err(Error::Malformed("dns label above 63 bytes"));
            }
            let dst = out.get_mut(at..at + 1 + l).ok_or(Error::Truncated)?;
            dst[0] = l as u8;
            dst[1..].copy_from_slice(label.as_bytes());
            at += 1 + l;
        }
    }
    *out.get_mut(at).ok_or(Error::Truncated)? = 0;
    at += 1;
    if at > MAX_NAME_LEN {
        return Err(Error::Malformed("dns name above 255 bytes"));
    }
    Ok(at)
}

/// Reads one uncompressed DNS name ("aftr.example.net", no trailing dot; "" for the root)
/// from the start of `b`; the name and the bytes it took. Refuses compression pointers,
/// labels that are not printable ASCII and names past the buffer or above 255 bytes.
pub fn decode_name(b: &[u8]) -> Result<(String, usize)> {
    let mut name = String::new();
    let mut at = 0;
    loop {
        let l = usize::from(*b.get(at).ok_or(Error::Truncated)?);
        if l == 0 {
            at += 1;
            break;
        }
        if l > 63 {
            return Err(Error::Malformed("dns label above 63 bytes or compressed"));
        }
        let label = b.get(at + 1..at + 1 + l).ok_or(Error::Truncated)?;
        if !label.iter().all(|c| c.is_ascii_graphic() && *c != b'.') {
            return Err(Error::Malformed("dns label is not printable ascii"));
        }
        if !name.is_empty() {
            name.push('.');
        }
        name.extend(label.iter().map(|&c| c as char));
        at += 1 + l;
        if at > MAX_NAME_LEN {
            return Err(Error::Malformed("dns name above 255 bytes"));
        }
    }
    Ok((name, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    // A Reply (transaction 0x0a0b0c) with Server ID (DUID-LL 02:00:00:00:00:0a), Client ID
    // (DUID-LL 02:00:00:00:00:0b), IA_NA iaid 1 T1 1800 T2 2880 with 2001:db8:c::100
    // (3600/7200), IA_PD iaid 2 with 2001:db8:100::/56 (3600/7200), DNS 2001:db8:53::1 and
    // AFTR-Name "aftr.example.net". Written out by hand from RFC 8415 §21 and RFC 6334 §3.
    static REPLY: &[u8] = &[
        0x07, 0x0a, 0x0b, 0x0c, // Reply, xid
        0x00, 0x02, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00,
        0x01, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x03,
        0x00, 0x28, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x07, 0x08, 0x00, 0x00, 0x0b,
        0x40, // IA_NA
        0x00, 0x05, 0x00, 0x18, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x1c,
        0x20, // IAADDR
        0x00, 0x19, 0x00, 0x29, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x07, 0x08, 0x00, 0x00, 0x0b,
        0x40, // IA_PD
        0x00, 0x1a, 0x00, 0x19, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x1c, 0x20, 0x38, 0x20, 0x01,
        0x0d, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, // IAPREFIX
        0x00, 0x17, 0x00, 0x10, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x53, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x01, // DNS
        0x00, 0x40, 0x00, 0x12, 0x04, b'a', b'f', b't', b'r', 0x07, b'e', b'x', b'a', b'm', b'p',
        b'l', b'e', 0x03, b'n', b'e', b't', 0x00, // AFTR-Name
    ];

    const SERVER_DUID: [u8; 10] = [0, 3, 0, 1, 2, 0, 0, 0, 0, 0x0a];
    const CLIENT_DUID: [u8; 10] = [0, 3, 0, 1, 2, 0, 0, 0, 0, 0x0b];

    fn write_reply(buf: &mut [u8]) -> Result<usize> {
        let mut p = Dhcpv6Packet::new_unchecked(&mut *buf);
        p.set_msg_type(msg::REPLY);
        p.set_transaction_id(0x0a0b0c);
        let mut w = OptionWriter::new(buf, HEADER_LEN);
        w.put(opt::SERVERID, &SERVER_DUID)?;
        w.put(opt::CLIENTID, &CLIENT_DUID)?;
        let ia = w.begin_ia(opt::IA_NA, 1, 1800, 2880)?;
        w.ia_addr(a("2001:db8:c::100"), 3600, 7200)?;
        w.end(ia)?;
        let ia = w.begin_ia(opt::IA_PD, 2, 1800, 2880)?;
        w.ia_prefix(a("2001:db8:100::"), 56, 3600, 7200)?;
        w.end(ia)?;
        w.addresses(opt::DNS_SERVERS, &[a("2001:db8:53::1")])?;
        w.name(opt::AFTR_NAME, "aftr.example.net")?;
        Ok(w.len())
    }

    #[test]
    fn test_emit() {
        let mut b = vec![0xa5; 300];
        let n = write_reply(&mut b).unwrap();
        assert_eq!(&b[..n], REPLY);
        let mut short = vec![0u8; REPLY.len() - 1];
        assert_eq!(write_reply(&mut short), Err(Error::Truncated));
    }

    #[test]
    fn test_parse() {
        let p = Dhcpv6Packet::new_checked(REPLY).unwrap();
        assert_eq!((p.msg_type(), p.transaction_id()), (msg::REPLY, 0x0a0b0c));
        let o: Vec<(u16, &[u8])> = p.options().collect::<Result<_>>().unwrap();
        let codes: Vec<u16> = o.iter().map(|x| x.0).collect();
        assert_eq!(codes, [2, 1, 3, 25, 23, 64]);
        assert_eq!(o[0].1, SERVER_DUID);
        let na = IaRepr::parse(o[2].1).unwrap();
        assert_eq!((na.iaid, na.t1, na.t2), (1, 1800, 2880));
        let ad = IaAddrRepr::parse(na.options().find(opt::IAADDR).unwrap().unwrap()).unwrap();
        assert_eq!(
            (ad.addr, ad.preferred, ad.valid),
            (a("2001:db8:c::100"), 3600, 7200)
        );
        let pd = IaRepr::parse(o[3].1).unwrap();
        assert_eq!(pd.iaid, 2);
        let px = IaPrefixRepr::parse(pd.options().find(opt::IAPREFIX).unwrap().unwrap()).unwrap();
        assert_eq!((px.prefix, px.prefix_len), (a("2001:db8:100::"), 56));
        assert_eq!(addr(o[4].1), a("2001:db8:53::1"));
        assert_eq!(
            decode_name(o[5].1),
            Ok(("aftr.example.net".to_string(), 18))
        );
    }

    #[test]
    fn names() {
        let mut b = [0u8; 300];
        assert_eq!(encode_name("", &mut b), Ok(1));
        assert_eq!(encode_name("a.", &mut b), Ok(3));
        assert_eq!(&b[..3], &[1, b'a', 0]);
        assert!(encode_name("a..b", &mut b).is_err());
        assert!(encode_name(&"x".repeat(64), &mut b).is_err());
        let long = vec!["abcdefgh"; 30].join(".");
        assert!(encode_name(&long, &mut b).is_err(), "270 bytes");
        assert_eq!(encode_name("abc", &mut b[..5]), Ok(5));
        assert_eq!(encode_name("abc", &mut b[..4]), Err(Error::Truncated));
        assert_eq!(decode_name(&[0]), Ok((String::new(), 1)));
        assert_eq!(decode_name(&[3, b'a', b'b']), Err(Error::Truncated));
        assert!(decode_name(&[0xc0, 0x0c]).is_err(), "compression pointer");
        assert!(decode_name(&[1, b'.', 0]).is_err());
        assert!(decode_name(&[1, 0x01, 0]).is_err());
    }

    #[test]
    fn parse_errors() {
        assert_eq!(
            Dhcpv6Packet::new_checked(&REPLY[..3]),
            Err(Error::Truncated)
        );
        // Every truncation of the options yields an error or fewer options, never a panic.
        for n in HEADER_LEN..REPLY.len() {
            let p = Dhcpv6Packet::new_checked(&REPLY[..n]).unwrap();
            let r: Result<Vec<_>> = p.options().collect();
            if let Ok(o) = r {
                for (c, v) in o {
                    match c {
                        opt::IA_NA | opt::IA_PD => {
                            let _ = IaRepr::parse(v);
                        }
                        opt::IAADDR => {
                            let _ = IaAddrRepr::parse(v);
                        }
                        _ => {}
                    }
                }
            }
        }
        assert!(IaRepr::parse(&[0; 11]).is_err());
        assert!(IaAddrRepr::parse(&[0; 23]).is_err());
        assert!(IaPrefixRepr::parse(&[0; 24]).is_err());
        let mut px = [0u8; 25];
        px[8] = 129;
        assert!(IaPrefixRepr::parse(&px).is_err());
        assert!(parse_status(&[0]).is_err());
        assert_eq!(parse_status(&[0, 2, b'n', b'o']), Ok((2, &b"no"[..])));
        assert_eq!(parse_oro(&[0, 23, 0, 64, 1]).collect::<Vec<_>>(), [23, 64]);
        // An IA whose inner option overruns is refused.
        let mut ia = vec![0u8; 12];
        ia.extend([0, 5, 0, 30, 1, 2]);
        assert!(IaRepr::parse(&ia).is_err());
    }
}
